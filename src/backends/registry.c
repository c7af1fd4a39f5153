/* The backends built in: one STRB_BACKEND(name) line per
 * strobe_add_backend() call in the top-level CMakeLists.txt, each naming
 * its vtable strb_<name>_backend. */
#include "backends/backend.h"

#define STRB_BACKEND(name) extern const struct strb_backend strb_##name##_backend;
#include "backends/registered.h"
#undef STRB_BACKEND

const struct strb_backend *const strb_backends[] = {
#define STRB_BACKEND(name) &strb_##name##_backend,
#include "backends/registered.h"
#undef STRB_BACKEND
    NULL,
};

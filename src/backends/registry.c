/* The backends built in: one STRB_BACKEND(name) line per
 * strobe_add_backend() call in the top-level CMakeLists.txt, each naming
 * its vtable strb_<name>_backend. */
#include "backends/backend.h"

#define STRB_BACKEND(name) extern const struct strb_backend strb_##name##_backend;
#include "backends/registered.h"
#undef STRB_BACKEND

enum {
	STRB_NBACKENDS = 0
#define STRB_BACKEND(name) +1
#include "backends/registered.h"
#undef STRB_BACKEND
};
_Static_assert(STRB_NBACKENDS <= STRB_BACKENDS_MAX, "raise STRB_BACKENDS_MAX in backends/backend.h");

const struct strb_backend *const strb_backends[STRB_BACKENDS_MAX + 1] = {
#define STRB_BACKEND(name) &strb_##name##_backend,
#include "backends/registered.h"
#undef STRB_BACKEND
    NULL,
};

#include "backends/backend.h"

#ifdef STROBE_HAVE_CUPTI
extern const struct strb_backend strb_cupti_backend;
#endif

const struct strb_backend *const strb_backends[] = {
#ifdef STROBE_HAVE_CUPTI
    &strb_cupti_backend,
#endif
    NULL,
};

/* Thread-local error messages behind strobe_last_error(). */
#ifndef STROBE_COMMON_ERROR_H
#define STROBE_COMMON_ERROR_H

#include "strobe/strobe.h"

/* Sets the calling thread's message and returns status, so callers can
 * write `return strb_error(-EINVAL, "bad %s", x);`. */
int strb_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Clears the message (successful calls do not need to). */
void strb_error_clear(void);

#endif

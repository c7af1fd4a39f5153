#include "common/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static __thread char last_error[512];

int strb_error(int status, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return status;
}

void strb_error_clear(void)
{
	last_error[0] = 0;
}

const char *strobe_last_error(void)
{
	return last_error;
}

const char *strobe_status_string(int status)
{
	switch (status) {
	case STROBE_OK:
		return "OK";
	case STROBE_E_CONFIG:
		return "config refused";
	case STROBE_E_STATE:
		return "not valid in the current trace state";
	case STROBE_E_NOT_INIT:
		return "strobe_init() has not been called";
	case STROBE_E_NO_WRITER:
		return "no output writer for this URL";
	case STROBE_E_BAD_JSON:
		return "invalid JSON";
	case STROBE_E_IO:
		return "I/O error writing the trace";
	case -EINVAL:
		return "invalid argument";
	case -EBUSY:
		return "busy";
	case -EALREADY:
		return "already in progress";
	case -ENOSPC:
		return "no space left (buffer or disk)";
	case -ENOTSUP:
		return "not supported";
	case -EPERM:
		return "not permitted";
	case -ENOMEM:
		return "out of memory";
	case -ENOENT:
		return "not found";
	case -EEXIST:
		return "already exists";
	default:
		break;
	}
	if (status < 0 && status > -4000) {
		/* strerror's table is static; strerrordesc_np avoids its locale buffer. */
		const char *d = strerrordesc_np(-status);
		if (d)
			return d;
	}
	return "unknown status";
}

/* CLOCK_MONOTONIC in ns: for timeouts and elapsed time, in the library and
 * the CLI alike. Capture timestamps come from core/clock.h instead. */
#ifndef STROBE_COMMON_MONOTONIC_H
#define STROBE_COMMON_MONOTONIC_H

#include <stdint.h>
#include <time.h>

static inline int64_t strb_mono_ns_raw(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif

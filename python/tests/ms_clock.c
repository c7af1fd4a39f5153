/* For test_pytrace.py, preloaded (LD_PRELOAD): CLOCK_MONOTONIC in whole
 * milliseconds, so that any two times read from it are whole milliseconds
 * apart. Other clocks are left as they are. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int clock_gettime(clockid_t id, struct timespec *ts)
{
	if (syscall(SYS_clock_gettime, id, ts) < 0)
		return -1;
	if (id == CLOCK_MONOTONIC)
		ts->tv_nsec -= ts->tv_nsec % 1000000;
	return 0;
}

/* The flight recorder's fatal-signal dump without a signal, for the GPU
 * backends' tests: what the handler writes (strb_flight_crash_write, as a
 * SIGSEGV on this thread would), converted as `strobe convert` does. The
 * GPU snapshot thread runs on its own schedule, so tu_crash_dump_until
 * dumps until the trace has what the test waits for. */
#ifndef STROBE_TEST_CRASHDUMP_H
#define STROBE_TEST_CRASHDUMP_H

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "control/flight_crash.h"
#include "testutil.h"

/* A crash dump now, converted: the trace, loaded. */
static inline yajl_val tu_crash_dump_now(void)
{
	char raw[1200], out[1200], err[1024];
	snprintf(raw, sizeof(raw), "%s/now.crash.raw", tu_dir);
	snprintf(out, sizeof(out), "%s/now.crash.json", tu_dir);
	int fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGSEGV;
	si.si_code = SEGV_MAPERR;
	assert_int_equal(strb_flight_crash_write(fd, SIGSEGV, &si, (pid_t)syscall(SYS_gettid)), 0);
	close(fd);
	if (strb_flight_raw_convert(raw, out, err, sizeof(err)))
		fail_msg("convert: %s", err);
	return tu_load_trace(out);
}

/* Crash dumps every 20 ms until done(trace) says yes, at most 3000 times
 * (a snapshot that took long waits up to 10 s for the next, longer under
 * a sanitizer): that trace. */
static inline yajl_val tu_crash_dump_until(bool (*done)(yajl_val root))
{
	for (int i = 0; i < 3000; i++) {
		yajl_val root = tu_crash_dump_now();
		if (done(root))
			return root;
		yajl_tree_free(root);
		usleep(20000);
	}
	fail_msg("no crash dump had what the test waited for in 3000 tries, 20 ms apart");
	return NULL;
}

#endif

/* The flight recorder's fatal-signal path (flight_crash.c): while it runs,
 * SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT write every thread's ring
 * into a file opened at start, DIR/STEM.crash-PID.raw beside the output,
 * with async-signal-safe calls only; the original disposition then runs,
 * so core dumps and the exit status are what they would have been.
 * flight_raw.c turns such a file into a normal trace (strobe convert). */
#ifndef STROBE_CONTROL_FLIGHT_CRASH_H
#define STROBE_CONTROL_FLIGHT_CRASH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/clock.h"
#include "core/tbuf.h"
#include "strobe/strobe.h"

/* The raw dump: this header, a block per thread (core/tbuf.h:
 * struct strb_raw_thread, its bytes, struct strb_raw_thread_end), the
 * annotation domains' names (core/names.h: struct strb_raw_domains and the
 * names), the GPU records decoded last (struct strb_raw_gpu, a packed trace
 * of process/packed.h padded to 8 bytes, struct strb_raw_gpu_end), then
 * struct strb_crash_end. Native byte order (byte_order tells). Version 4
 * records rings in the layout of core/tbuf.h (8-byte pops, 12-byte range
 * push headers); versions 1 to 3 (16-byte headers throughout) are refused
 * with their version named. */
#define STRB_CRASH_MAGIC      "STRBCRSH"
#define STRB_CRASH_VERSION    4
#define STRB_CRASH_BYTE_ORDER 0x01020304u
#define STRB_CRASH_POINTS     8
#define STRB_CRASH_END_MAGIC  0x454e4f44u /* "DONE" */

struct strb_crash_header {
	char magic[8];
	uint32_t version;
	uint32_t size; /* sizeof(struct strb_crash_header) */
	uint32_t byte_order;
	int32_t pid;
	int32_t signo, code; /* the siginfo's si_code */
	uint64_t fault_addr; /* si_addr, for a fault (code > 0) */
	int32_t sender_pid;  /* si_pid, for a signal sent (code <= 0: kill, raise, abort) */
	int32_t tid;         /* the thread the signal hit */
	uint32_t session;
	uint32_t reserved;
	uint64_t window_ns;
	uint64_t now_ticks;    /* when it hit */
	uint64_t window_ticks; /* the recorder's window */
	uint64_t start_ticks;  /* the recorder's start */
	uint64_t activity_mask;
	int64_t real_minus_mono; /* the session's epoch anchor */
	uint32_t clock_kind;
	uint32_t npoints;
	/* Ticks -> monotonic ns: a sample taken at start, one at the signal. */
	struct strb_clock_point points[STRB_CRASH_POINTS];
	char process_name[256];
	char host_name[256];
};

#define STRB_RAW_GPU_MAGIC     0x55504753u /* "SGPU" */
#define STRB_RAW_GPU_END_MAGIC 0x444e4547u /* "GEND" */

/* The GPU records: the block the flight recorder packed last, taken at
 * `ticks`. seq is odd while a new block replaces it, and grows by 2 each
 * time: a block whose end's seq differs was replaced while it was written
 * and is left out, as is one with bytes that could not be read. */
struct strb_raw_gpu {
	uint32_t magic;
	uint32_t size; /* sizeof(struct strb_raw_gpu) */
	uint64_t seq;
	uint64_t len; /* the packed trace's bytes (0: none yet) */
	uint64_t ticks;
};

struct strb_raw_gpu_end {
	uint32_t magic;
	uint32_t reserved;
	uint64_t seq;
	uint64_t unreadable; /* bytes written as zeros */
};

struct strb_crash_end {
	uint32_t magic;
	uint32_t threads;
};

/* At flight start (output: the recorder's output path): opens the raw
 * file empty and installs the handlers. Returns 0 or a negative errno
 * (strobe_last_error says why); the recorder runs without it then. */
int strb_flight_crash_arm(const char *output, uint64_t window_ns, uint64_t activity_mask);
/* At flight stop: restores the dispositions that were there (where they
 * are still ours) and removes the raw file when nothing was written. */
void strb_flight_crash_disarm(void);
/* The raw file's path while armed ("" when not). */
const char *strb_flight_crash_path(void);
/* The flight recorder's GPU records, packed (process/packed.h) at `ticks`,
 * for the handler to write: takes the malloc'd block, frees the one it
 * replaces. Not while a handler writes (the block is freed then). */
void strb_flight_crash_set_gpu(void *block, size_t len, uint64_t ticks);
/* What the handler writes, to fd, outside a handler (tests call it
 * without a signal): not async-signal-safe, it holds off the GPU
 * snapshot's replacement meanwhile. Returns 0 or -1 when fd fails. */
int strb_flight_crash_write(int fd, int sig, const siginfo_t *si, pid_t tid);

/* flight_raw.c: the raw dump at `raw` as a trace saved to `out` (any
 * strobe_trace_save path). Every length and record is checked; a
 * truncated or corrupt file gives an error in err naming what is wrong.
 * Returns 0 or a negative errno / STROBE_E_*. */
int strb_flight_raw_convert(const char *raw, const char *out, char *err, size_t len);
/* Not API: the entry point `strobe convert` calls (STROBE_PRIVATE). */
STROBE_API int strobe_internal_flight_convert(const char *raw, const char *out, char *err, size_t len);

#endif

/* The flight recorder's fatal-signal path.
 *
 * At start: the raw file is created empty beside the output and stays
 * open; the header's fixed part (pid, window, activity mask, process and
 * host names, the epoch anchor and a clock sample) is filled into a static
 * struct then, so the handler reads nothing that may be reallocated (the
 * controller's clock map grows with realloc). The handler adds the signal,
 * the thread and a second clock sample, the two samples giving the
 * ticks -> ns line for the whole run; it then writes every ring
 * (strb_tbuf_write_raw) with write() alone, restores the disposition that
 * was there and lets it run: a fault returns to the faulting instruction,
 * which faults again; a signal sent by kill/raise/abort is sent again.
 * Only the first fatal signal writes; another thread's waits for it (at
 * most 10 s), one raised inside the handler goes straight on. */
#define LOG_TAG "flight"
#include "control/flight_crash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "core/capture.h"
#include "core/names.h"
#include "process/process.h"

_Static_assert(sizeof(struct strb_crash_header) % 8 == 0, "the thread blocks stay 8-byte aligned");
_Static_assert(sizeof(struct strb_raw_thread) % 8 == 0, "the thread blocks stay 8-byte aligned");
_Static_assert(sizeof(struct strb_raw_thread_end) % 8 == 0, "the thread blocks stay 8-byte aligned");

static const int fatal_sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
#define NFATAL (sizeof(fatal_sigs) / sizeof(fatal_sigs[0]))

static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction old_act[NFATAL];
static struct strb_crash_header hdr; /* the fixed part, filled at arm */
static char raw_path[4200];
static int raw_fd = -1;
static atomic_int armed_pid; /* 0: not armed; else the process that armed (a fork child is not) */
static atomic_int writer;    /* the thread writing the dump, 0 before */
static atomic_bool written;

/* An alternate stack for the thread that first starts the recorder when
 * it has none, so that its stack overflowing is caught too (every thread
 * that records gets its own in core/tbuf.c). Never unmapped: the thread
 * may keep it registered. */
static void *alt_stack;

/* The GPU records packed last (strb_flight_crash_set_gpu). A handler reads
 * them with atomics alone (set_gpu leaves the block to it once `writer` is
 * set); a dump written outside a handler holds gpu_lock instead, which
 * set_gpu takes too. */
static pthread_mutex_t gpu_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(void *) gpu_block;
static _Atomic size_t gpu_len;
static _Atomic uint64_t gpu_ticks, gpu_seq;

void strb_flight_crash_set_gpu(void *block, size_t len, uint64_t ticks)
{
	pthread_mutex_lock(&gpu_lock);
	if (atomic_load(&writer)) {
		pthread_mutex_unlock(&gpu_lock);
		free(block); /* a handler is writing the one there */
		return;
	}
	atomic_fetch_add(&gpu_seq, 1);
	void *old = atomic_exchange(&gpu_block, block);
	atomic_store(&gpu_len, block ? len : 0);
	atomic_store(&gpu_ticks, ticks);
	atomic_fetch_add(&gpu_seq, 1);
	/* A handler that began before may still be writing it. */
	if (!atomic_load(&writer))
		free(old);
	pthread_mutex_unlock(&gpu_lock);
}

/* The GPU block, async-signal-safe: unreadable bytes go out as zeros. */
static int write_gpu(int fd)
{
	static struct strb_raw_gpu g;
	static struct strb_raw_gpu_end e;
	static const uint8_t pad[8];
	g = (struct strb_raw_gpu){.magic = STRB_RAW_GPU_MAGIC, .size = sizeof(g)};
	g.seq = atomic_load(&gpu_seq);
	const void *block = atomic_load(&gpu_block);
	g.len = block ? atomic_load(&gpu_len) : 0;
	g.ticks = atomic_load(&gpu_ticks);
	int64_t zeroed = 0;
	if (strb_raw_write(fd, &g, sizeof(g)) < 0 || (zeroed = strb_raw_write(fd, block, g.len)) < 0 ||
	    strb_raw_write(fd, pad, (8 - g.len % 8) % 8) < 0)
		return -1;
	e = (struct strb_raw_gpu_end){.magic = STRB_RAW_GPU_END_MAGIC, .unreadable = (uint64_t)zeroed};
	e.seq = atomic_load(&gpu_seq);
	return strb_raw_write(fd, &e, sizeof(e)) < 0 ? -1 : 0;
}

static void drop_gpu(void)
{
	strb_flight_crash_set_gpu(NULL, 0, 0);
}

static int sig_index(int sig)
{
	for (size_t i = 0; i < NFATAL; i++)
		if (fatal_sigs[i] == sig)
			return (int)i;
	return -1;
}

static void sample_point(struct strb_clock_point *p)
{
	uint64_t best = UINT64_MAX;
	p->ticks = 0;
	p->mono_ns = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t t0 = strb_clock_ticks();
		int64_t m = strb_clock_mono_ns();
		uint64_t t1 = strb_clock_ticks();
		if (t1 - t0 < best) {
			best = t1 - t0;
			p->ticks = t0 + (t1 - t0) / 2;
			p->mono_ns = m;
		}
	}
}

/* What the handler writes; async-signal-safe. */
static int write_dump(int fd, int sig, const siginfo_t *si, pid_t tid)
{
	static struct strb_crash_header h;
	memcpy(&h, &hdr, sizeof(h));
	h.pid = getpid();
	h.signo = sig;
	h.code = si ? si->si_code : 0;
	h.fault_addr = si && si->si_code > 0 ? (uint64_t)(uintptr_t)si->si_addr : 0;
	h.sender_pid = si && si->si_code <= 0 ? si->si_pid : 0;
	h.tid = tid;
	struct strb_clock_point now;
	sample_point(&now);
	h.now_ticks = now.ticks;
	if (h.npoints < STRB_CRASH_POINTS && (!h.npoints || now.ticks > h.points[h.npoints - 1].ticks))
		h.points[h.npoints++] = now;
	if (strb_raw_write(fd, &h, sizeof(h)) < 0)
		return -1;
	int64_t threads = strb_tbuf_write_raw(fd, h.session);
	if (threads < 0 || strb_domains_write_raw(fd) < 0 || write_gpu(fd) < 0)
		return -1;
	struct strb_crash_end end = {.magic = STRB_CRASH_END_MAGIC, .threads = (uint32_t)threads};
	return strb_raw_write(fd, &end, sizeof(end)) < 0 ? -1 : 0;
}

int strb_flight_crash_write(int fd, int sig, const siginfo_t *si, pid_t tid)
{
	/* Outside a handler the snapshot thread may replace the GPU block
	 * meanwhile: it waits. */
	pthread_mutex_lock(&gpu_lock);
	int rc = write_dump(fd, sig, si, tid);
	pthread_mutex_unlock(&gpu_lock);
	return rc;
}

/* The disposition that was there runs: restored, and for a signal that
 * was sent (not a fault, which comes back when the instruction runs
 * again) sent again, pending until this handler returns. */
static void chain(int sig, const siginfo_t *si, pid_t tid)
{
	int i = sig_index(sig);
	if (i >= 0)
		sigaction(sig, &old_act[i], NULL);
	if (!si || si->si_code <= 0)
		syscall(SYS_tgkill, getpid(), tid, sig);
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	pid_t me = (pid_t)syscall(SYS_gettid);
	if (atomic_load(&armed_pid) == getpid()) {
		int none = 0;
		if (atomic_compare_exchange_strong(&writer, &none, me)) {
			write_dump(raw_fd, sig, si, me);
			atomic_store(&written, true);
		} else if (none != me) {
			struct timespec ms = {0, 1000000};
			for (int n = 0; n < 10000 && !atomic_load(&written); n++)
				nanosleep(&ms, NULL);
		}
	}
	chain(sig, si, me);
	errno = saved;
}

static void give_alt_stack(void)
{
	/* One thread only, the first to start the recorder: two threads must
	 * never share one. */
	if (!alt_stack)
		alt_stack = strb_alt_stack_give();
}

static bool unwritten_locked(void)
{
	struct stat st;
	return !atomic_load(&writer) && raw_fd >= 0 && fstat(raw_fd, &st) == 0 && st.st_size == 0;
}

static void disarm_locked(void)
{
	int pid = atomic_load(&armed_pid);
	if (!pid)
		return;
	atomic_store(&armed_pid, 0);
	for (size_t i = 0; i < NFATAL; i++) {
		struct sigaction cur;
		/* A handler the program installed since stays. */
		if (sigaction(fatal_sigs[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_sigaction == on_fatal)
			sigaction(fatal_sigs[i], &old_act[i], NULL);
	}
	if (atomic_load(&writer))
		return; /* a handler is writing: the process is on its way out */
	drop_gpu();
	if (pid != (int)getpid()) {
		/* A fork child: the file is its parent's. */
		close(raw_fd);
		raw_fd = -1;
		raw_path[0] = 0;
		return;
	}
	if (unwritten_locked())
		unlink(raw_path);
	close(raw_fd);
	raw_fd = -1;
	raw_path[0] = 0;
}

static void at_exit(void)
{
	pthread_mutex_lock(&arm_lock);
	disarm_locked();
	pthread_mutex_unlock(&arm_lock);
}

static void register_exit(void)
{
	atexit(at_exit);
}

/* dir/STEM.crash-PID.raw for output dir/STEM.SUFFIX (the suffix from the
 * name's first dot, as dumps name theirs). */
static int make_path(const char *output, char *out, size_t len)
{
	const char *slash = strrchr(output, '/');
	const char *name = slash ? slash + 1 : output;
	const char *dot = strchr(name, '.');
	size_t stem = dot ? (size_t)(dot - output) : strlen(output);
	int w = snprintf(out, len, "%.*s.crash-%d.raw", (int)stem, output, (int)getpid());
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

int strb_flight_crash_arm(const char *output, uint64_t window_ns, uint64_t activity_mask)
{
	static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
	pthread_mutex_lock(&arm_lock);
	disarm_locked();
	int rc = make_path(output, raw_path, sizeof(raw_path));
	if (rc) {
		rc = strb_error(rc, "flight recorder: the crash dump's path beside %.200s is too long",
		                output);
		goto out;
	}
	raw_fd = open(raw_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (raw_fd < 0) {
		rc = strb_error(-errno, "flight recorder: cannot create the crash dump %s: %s", raw_path,
		                strerror(errno));
		raw_path[0] = 0;
		goto out;
	}
	memset(&hdr, 0, sizeof(hdr));
	memcpy(hdr.magic, STRB_CRASH_MAGIC, sizeof(hdr.magic));
	hdr.version = STRB_CRASH_VERSION;
	hdr.size = sizeof(hdr);
	hdr.byte_order = STRB_CRASH_BYTE_ORDER;
	hdr.session = __atomic_load_n(&strobe_internal_session, __ATOMIC_ACQUIRE);
	hdr.window_ns = window_ns;
	hdr.window_ticks = strb_clock_ns_to_ticks(window_ns) - strb_clock_ns_to_ticks(0);
	hdr.start_ticks = strb_clock_ticks();
	hdr.activity_mask = activity_mask;
	hdr.real_minus_mono = atomic_load(&strb_epoch_anchor);
	hdr.clock_kind = (uint32_t)strb_clock_kind_in_use;
	sample_point(&hdr.points[0]);
	hdr.npoints = 1;
	strb_process_name(hdr.process_name, sizeof(hdr.process_name));
	if (gethostname(hdr.host_name, sizeof(hdr.host_name)) != 0)
		hdr.host_name[0] = 0;
	hdr.host_name[sizeof(hdr.host_name) - 1] = 0;
	atomic_store(&writer, 0);
	atomic_store(&written, false);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fatal;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	atomic_store(&armed_pid, (int)getpid());
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_sigs[i], &sa, &old_act[i]);
	give_alt_stack();
	LOGI("flight recorder: a fatal signal writes %s", raw_path);
out:
	pthread_mutex_unlock(&arm_lock);
	if (!rc)
		pthread_once(&exit_once, register_exit);
	return rc;
}

void strb_flight_crash_disarm(void)
{
	pthread_mutex_lock(&arm_lock);
	disarm_locked();
	pthread_mutex_unlock(&arm_lock);
}

const char *strb_flight_crash_path(void)
{
	return raw_path;
}

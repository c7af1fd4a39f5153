#define LOG_TAG "record"
#include "control/recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/error.h"
#include "common/fdguard.h"
#include "common/log.h"
#include "common/record_path.h"
#include "control/controller.h"
#include "control/flight.h"
#include "core/clock.h"
#include "nvtx/nvtx.h"

/* How long an exiting process waits for a trace another thread of strobe's
 * is writing: bounded, so exit never hangs on it. */
#define EXIT_WAIT_NS (60 * 1000000000LL)

enum window {
	W_OFF,      /* not recording (no settings, or a child with --no-follow) */
	W_WAITING,  /* before the delay */
	W_STARTING, /* being prepared and started */
	W_RUNNING,
	W_WRITING,
	W_DONE,
};

static struct {
	char out[PATH_MAX];
	int64_t delay_ns, duration_ns;
	const char *config;
	struct strb_fd_id chan; /* the channel to strobe record (fd -1: none) */
	pid_t root;
	bool follow;
	/* Flight mode (strobe record --flight): the window is the flight
	 * recorder's life, and dumps are what gets written. */
	int64_t flight_ns, flight_mem, hang_after_ns, dump_on_exit;
} rs = {.chan.fd = -1};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static enum window window;
static int64_t boot_ns, start_ns; /* CLOCK_MONOTONIC */
/* The thread's wake-up pipe (strb_fd_wake_pipe). */
static struct strb_fd_id wake_rd = {.fd = -1}, wake_wr = {.fd = -1};
static volatile sig_atomic_t pending_signal;
static bool thread_running;

/* The program closed the channel (a daemon closing what it inherited,
 * closefrom): the number may be one of the program's own files by now, so
 * it is never used again. Traces are still written; strobe record finds
 * them where it expects them. */
static bool channel_ok(void)
{
	if (rs.chan.fd < 0)
		return false;
	if (strb_fd_id_ok(&rs.chan))
		return true;
	LOGI(
	    "strobe record: the program closed strobe's channel (fd %d); traces are written but not reported",
	    rs.chan.fd);
	rs.chan.fd = -1;
	return false;
}

static void tell(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void tell(const char *fmt, ...)
{
	if (!channel_ok())
		return;
	char msg[PATH_MAX + 512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	size_t len = (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1;
	/* Never block or die on a strobe record that went away. */
	if (send(rs.chan.fd, msg, len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		if (errno != EPIPE && errno != ECONNREFUSED)
			LOGI("cannot reach strobe record: %s", strerror(errno));
		if (errno != EAGAIN)
			rs.chan.fd = -1; /* gone: stop talking to it */
	}
}

static bool env_i64(const char *name, int64_t *out)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return true;
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	if (errno || *end || x < 0) {
		LOGE("strobe record: %s='%s' is not a non-negative integer; not recording", name, v);
		return false;
	}
	*out = x;
	return true;
}

static char path[PATH_MAX];

/* Each dump is reported as it is written: "dump PID PATH\nREASON", or
 * "dumpfail PID WHY". */
static void on_dump(const char *file, const char *reason, const char *error)
{
	if (file)
		tell("dump %d %s\n%s", (int)getpid(), file, reason);
	else
		tell("dumpfail %d %s: %s", (int)getpid(), reason, error ? error : "unknown error");
}

/* Flight mode: the flight recorder with strobe record's settings; its
 * dumps go beside this process's trace path (run.json.gz -> run.1.json.gz). */
static int start_flight(const struct strb_config *cfg)
{
	struct strobe_flight_opts o = {
	    .size = sizeof(o),
	    .output = path,
	    .window_ns = (uint64_t)rs.flight_ns,
	    .memory_bytes = (uint64_t)rs.flight_mem,
	    .hang_after_ns = (uint64_t)rs.hang_after_ns,
	    .dump_on_exit = rs.dump_on_exit != 0,
	    .activity_mask = cfg->activity_mask,
	};
	if (strb_flight_snapshot_env(&o.gpu_snapshot_ns))
		return strb_error(-EINVAL, "STROBE_FLIGHT_GPU_SNAPSHOT is not a duration");
	strb_flight_set_dump_hook(on_dump);
	return strb_flight_start(&o);
}

static void begin_window(void)
{
	pthread_mutex_lock(&lock);
	if (window != W_WAITING) {
		pthread_mutex_unlock(&lock);
		return;
	}
	window = W_STARTING;
	pthread_mutex_unlock(&lock);

	struct strb_config cfg;
	char err[512] = "";
	int rc = strb_config_build(&cfg, NULL, rs.config, 0, err, sizeof(err));
	if (rc == STROBE_E_CONFIG && !err[0])
		snprintf(err, sizeof(err), "bad config");
	else if (rc && rc != STROBE_E_CONFIG)
		snprintf(err, sizeof(err), "out of memory");
	if (!rc && rs.flight_ns)
		rc = start_flight(&cfg);
	else if (!rc && (rc = strb_control_prepare(&cfg, STRB_OWNER_RECORD)) == 0)
		rc = strb_control_start(STRB_OWNER_RECORD);
	if (rc && !err[0])
		snprintf(err, sizeof(err), "%s", strobe_last_error());

	pthread_mutex_lock(&lock);
	if (rc) {
		LOGE("strobe record: cannot start tracing: %s", err);
		tell("failed %d cannot start tracing: %s", (int)getpid(), err);
		window = W_DONE;
	} else {
		start_ns = strb_mono_ns_raw();
		window = W_RUNNING;
	}
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void window_done(void)
{
	pthread_mutex_lock(&lock);
	window = W_DONE;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* Flight mode's end: the last window dumped when --dump-on-exit asked for
 * it (reported by on_dump), then "done PID WHY". */
static void finish_flight(const char *why)
{
	char reason[128];
	snprintf(reason, sizeof(reason), "the program ended (%s)", why);
	int rc = strb_flight_stop(true, reason);
	tell("done %d %s", (int)getpid(), rc ? strobe_last_error() : "flight recorder stopped");
	window_done();
}

/* Writes the trace exactly once, whoever asks first: the end of the
 * window, strobe record, a signal, or exit. Later callers wait for it (at
 * most `wait_ns`) and return. */
static void finish(const char *why, int64_t wait_ns)
{
	pthread_mutex_lock(&lock);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(wait_ns / 1000000000LL);
	until.tv_nsec += (long)(wait_ns % 1000000000LL);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	while (window == W_STARTING || window == W_WRITING)
		if (pthread_cond_timedwait(&cond, &lock, &until) == ETIMEDOUT) {
			LOGW("strobe record: gave up waiting for the trace being written to %s", path);
			pthread_mutex_unlock(&lock);
			return;
		}
	enum window was = window;
	if (was == W_WAITING)
		window = W_DONE;
	else if (was == W_RUNNING)
		window = W_WRITING;
	pthread_mutex_unlock(&lock);
	if (was == W_WAITING) {
		tell("nothing %d the program ended (%s) before the window opened", (int)getpid(), why);
		return;
	}
	if (was != W_RUNNING)
		return;
	if (rs.flight_ns) {
		finish_flight(why);
		return;
	}

	strobe_trace *t = NULL;
	int rc = strb_control_end_capture(STRB_OWNER_RECORD);
	if (!rc)
		rc = strb_control_finish(STRB_OWNER_RECORD, &t);
	/* Shells and launchers fork and exec plenty of helpers that record
	 * nothing: only the first process writes a file regardless. */
	bool empty = !rc && getpid() != rs.root && strobe_trace_activity_count(t) == 0;
	if (!rc && !empty)
		rc = strobe_trace_save(t, path);
	if (empty) {
		tell("nothing %d it recorded no activity", (int)getpid());
	} else if (rc) {
		LOGE("strobe record: trace not written (%s): %s", why, strobe_last_error());
		tell("failed %d %s", (int)getpid(), strobe_last_error());
	} else {
		LOGI("trace written to %s (%s)", path, why);
		tell("wrote %d %s", (int)getpid(), path);
	}
	strobe_trace_destroy(t);
	window_done();
}

static void at_exit(void)
{
	finish("exit", EXIT_WAIT_NS);
}

/* SIGINT and SIGTERM, when the program left them at their default: the
 * trace is written before the signal does what it would have done. */
static const int finishing_signals[] = {SIGINT, SIGTERM};

static void on_signal(int sig)
{
	int saved = errno;
	if (!thread_running) {
		signal(sig, SIG_DFL);
		raise(sig);
	} else {
		pending_signal = sig;
		/* A wake-up lost with a closed pipe costs the thread's next
		 * periodic look at pending_signal, no more. */
		char one = 1;
		if (strb_fd_id_ok(&wake_wr) && write(wake_wr.fd, &one, 1) < 0) {
			/* full: the thread is awake already */
		}
	}
	errno = saved;
}

static void install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(finishing_signals) / sizeof(finishing_signals[0]); i++) {
		struct sigaction old, sa = {.sa_handler = on_signal};
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		if (sigaction(finishing_signals[i], NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			sigaction(finishing_signals[i], &sa, NULL);
	}
}

/* Once the trace is written, the signals do what they always did; one
 * that came in meanwhile is delivered now. */
static void uninstall_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(finishing_signals) / sizeof(finishing_signals[0]); i++) {
		struct sigaction cur;
		if (sigaction(finishing_signals[i], NULL, &cur) == 0 && !(cur.sa_flags & SA_SIGINFO) &&
		    cur.sa_handler == on_signal)
			signal(finishing_signals[i], SIG_DFL);
	}
	thread_running = false;
	int sig = pending_signal;
	if (sig)
		kill(getpid(), sig);
}

/* How long the thread sleeps at most: the bound on noticing a signal whose
 * wake-up the program took away (it closed the pipe). */
#define RECHECK_MS 500

static void *recorder_main(void *arg)
{
	(void)arg;
	bool reading = channel_ok();
	for (;;) {
		pthread_mutex_lock(&lock);
		enum window w = window;
		pthread_mutex_unlock(&lock);
		if (w == W_DONE || w == W_OFF)
			break;
		int sig = pending_signal;
		if (sig) {
			finish(sig == SIGINT ? "SIGINT" : "SIGTERM", EXIT_WAIT_NS);
			break;
		}
		int64_t now = strb_mono_ns_raw(), deadline = -1;
		if (w == W_WAITING)
			deadline = boot_ns + rs.delay_ns;
		else if (w == W_RUNNING && rs.duration_ns > 0)
			deadline = start_ns + rs.duration_ns;
		if (deadline >= 0 && now >= deadline) {
			if (w == W_WAITING)
				begin_window();
			else
				finish("end of the window", EXIT_WAIT_NS);
			continue;
		}
		bool waking = strb_fd_id_ok(&wake_rd);
		reading = reading && channel_ok();
		struct pollfd p[2] = {{.fd = waking ? wake_rd.fd : -1, .events = POLLIN},
		                      {.fd = reading ? rs.chan.fd : -1, .events = POLLIN}};
		int64_t left_ms = deadline < 0 ? RECHECK_MS : (deadline - now + 999999) / 1000000;
		int timeout = left_ms > RECHECK_MS ? RECHECK_MS : (int)left_ms;
		if (poll(p, 2, timeout) < 0 && errno != EINTR)
			break;
		if ((p[0].revents & POLLIN) && strb_fd_id_ok(&wake_rd)) {
			char buf[64];
			if (read(wake_rd.fd, buf, sizeof(buf)) < 0) {
				/* nothing: the signal, if any, is in pending_signal */
			}
		}
		if (p[1].revents & POLLNVAL) {
			reading = channel_ok(); /* closed under us: channel_ok says so and drops it */
		} else if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && channel_ok()) {
			char msg[64];
			ssize_t n = recv(rs.chan.fd, msg, sizeof(msg) - 1, MSG_DONTWAIT);
			if (n > 0) {
				msg[n] = 0;
				if (!strcmp(msg, "finish")) {
					reading = false;
					finish("asked by strobe record", EXIT_WAIT_NS);
				}
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				reading = false; /* strobe record is gone */
			}
		}
	}
	/* Re-raised to the process (kill, not raise): this thread blocks it. */
	uninstall_signal_handlers();
	return NULL;
}

static void start_thread(void)
{
	thread_running = false;
	int rc = strb_fd_wake_pipe(&wake_rd, &wake_wr);
	if (rc < 0) {
		LOGW("strobe record: no pipe (%s); the window and signals are not watched", strerror(-rc));
		return;
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t th;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	thread_running = pthread_create(&th, &attr, recorder_main, NULL) == 0;
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (thread_running)
		pthread_setname_np(th, "strobe-record");
	else
		LOGW("strobe record: cannot start its thread; the trace is written at exit only");
}

/* The window of this process: now (or after the delay). */
static void open_window(void)
{
	strb_record_path(rs.out, getpid(), rs.root, path, sizeof(path));
	boot_ns = strb_mono_ns_raw();
	window = W_WAITING;
	tell("hello %d", (int)getpid());
	if (rs.delay_ns == 0)
		begin_window();
	start_thread();
}

/* The fd number was inherited, but a process in between may have closed
 * it and the number been reused for one of the program's own files: use it
 * only when it is still strobe record's socket. */
static bool is_channel(int fd, pid_t recorder)
{
	int type = 0, domain = 0;
	struct ucred cred;
	socklen_t len = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) || type != SOCK_SEQPACKET)
		return false;
	len = sizeof(domain);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) || domain != AF_UNIX)
		return false;
	len = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || cred.pid != recorder) {
		LOGW("strobe record: fd %d is not its channel any more; traces are written, but not reported",
		     fd);
		return false;
	}
	return true;
}

static void cond_init(void)
{
	pthread_cond_init(&cond, NULL);
}

/* strobe record is the one that talks to the user: the same warning (no
 * GPU driver, say) from every image of every process a shell or launcher
 * starts would bury the program's output. The program's strobe says only
 * errors unless a level was asked for; the traces keep the reasons, and
 * strobe record's summary shows the first process's. */
static void quiet_logs(void)
{
	if (!getenv("STROBE_LOG_LEVEL") && !getenv("KINETO_LOG_LEVEL"))
		strobe_log_set_level(STROBE_LOG_ERROR);
}

static void boot(void)
{
	const char *out = getenv("STROBE_RECORD_OUTPUT");
	if (!out || !*out)
		return;
	if (strlen(out) >= sizeof(rs.out) - 16) {
		LOGE("strobe record: the output path is too long; not recording");
		return;
	}
	snprintf(rs.out, sizeof(rs.out), "%s", out);
	int64_t fd = -1, root = 0, follow = 1, recorder = 0;
	if (!env_i64("STROBE_RECORD_DELAY_NS", &rs.delay_ns) ||
	    !env_i64("STROBE_RECORD_DURATION_NS", &rs.duration_ns) || !env_i64("STROBE_RECORD_FD", &fd) ||
	    !env_i64("STROBE_RECORD_ROOT_PID", &root) || !env_i64("STROBE_RECORD_FOLLOW", &follow) ||
	    !env_i64("STROBE_RECORD_PID", &recorder) || !env_i64("STROBE_RECORD_FLIGHT_NS", &rs.flight_ns) ||
	    !env_i64("STROBE_RECORD_FLIGHT_MEM", &rs.flight_mem) ||
	    !env_i64("STROBE_RECORD_HANG_AFTER_NS", &rs.hang_after_ns) ||
	    !env_i64("STROBE_RECORD_DUMP_ON_EXIT", &rs.dump_on_exit))
		return;
	rs.config = getenv("STROBE_RECORD_CONFIG");
	rs.root = (pid_t)root;
	rs.follow = follow != 0;
	if (fd >= 0 && fd <= INT_MAX && is_channel((int)fd, (pid_t)recorder))
		strb_fd_id_set(&rs.chan, (int)fd);
	if (!rs.follow && rs.root && getpid() != rs.root)
		return; /* a child, and children are not traced */
	if (!rs.follow && rs.chan.fd >= 0)
		fcntl(rs.chan.fd, F_SETFD, FD_CLOEXEC);
	strobe_init(NULL);
	quiet_logs();
	cond_init();
	install_signal_handlers();
	open_window();
	atexit(at_exit);
}

void strobe_internal_record_boot(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, boot);
}

int strobe_internal_inject_cuda(void)
{
	strobe_internal_record_boot();
	strobe_init(NULL);
	LOGI("loaded by the CUDA driver (CUDA_INJECTION64_PATH)");
	return 1;
}

int strobe_internal_inject_nvtx(const void *get_export_table)
{
	strobe_internal_record_boot();
	strobe_init(NULL);
	return strb_nvtx_inject(get_export_table);
}

void strb_recorder_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	cond_init();
	thread_running = false;
	pending_signal = 0;
	if (window == W_OFF)
		return;
	/* A child that forked without exec is not traced: starting a window
	 * means threads and allocation in the fork handler, which deadlocks
	 * with allocators that reset their locks in a later handler. The
	 * inherited exit handler finds nothing to write; if the child execs,
	 * its new image starts its own trace from the environment. */
	window = W_DONE;
	rs.chan.fd = -1;
}

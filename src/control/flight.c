/* The flight recorder: capture always on into per-thread rings
 * (core/tbuf.c), the last seconds written as a normal trace when asked,
 * when the program stops stepping (a watchdog thread), or at exit.
 *
 * Dumps are serialised by dump_lock, so two triggers close together give
 * two files, one after the other; the program's threads never wait for a
 * dump (the rings are copied while they record). */
#define LOG_TAG "flight"
#include "control/flight.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/opts.h"
#include "control/controller.h"
#include "control/flight_crash.h"
#include "core/clock.h"
#include "process/packed.h"
#include "process/process.h"
#include "process/trace.h"

#define DEFAULT_WINDOW_NS (30ull * 1000000000ull)
#define DEFAULT_SNAPSHOT  1000000000ull
#define SNAPSHOT_SHARE    20             /* a GPU snapshot takes at most 1/20 of its thread's time... */
#define SNAPSHOT_MAX_WAIT 10000000000ull /* ...but waits at most 10 s for the next */
#define DEFAULT_MEMORY    (256ull << 20)
#define MIN_MEMORY        (1ull << 20)

/* What a start set; under flight_lock (dump_lock for the dump's use). */
static pthread_mutex_t flight_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool running;
static char output[4096];
static uint64_t window_ns;
static uint64_t hang_after_ns;
static bool dump_on_exit;
static unsigned next_seq = 1;

/* A thread of the recorder's that wakes every so often until stopped,
 * with every signal blocked but the faults (no signal of the program's is
 * ever handled on it; a fault of its own is, as on any thread, so that it
 * writes the crash dump: the kernel kills the process at once, with no
 * handler run, on a fault whose signal is blocked). */
struct ticker {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	bool inited, stop, running;
	pthread_t th;
};

/* The watchdog. */
static struct ticker dog = {.lock = PTHREAD_MUTEX_INITIALIZER};
static _Atomic int64_t last_step_ns; /* monotonic */
static atomic_bool hang_dumped;

/* The GPU snapshots: decoded every snapshot_ns (0: never) into blocks of
 * at most snapshot_bytes for the fatal-signal handler. */
static struct ticker snap = {.lock = PTHREAD_MUTEX_INITIALIZER};
static uint64_t snapshot_ns;
static size_t snapshot_bytes;

/* Told of every dump (strobe record's channel). */
static _Atomic(strb_flight_dump_hook) dump_hook;

void strb_flight_set_dump_hook(strb_flight_dump_hook hook)
{
	atomic_store(&dump_hook, hook);
}

/* ---- dumps ------------------------------------------------------------ */

/* out = dir/STEM.N.SUFFIX for output dir/STEM.SUFFIX (the suffix from the
 * name's first dot), the first N from next_seq whose file does not exist. */
static int dump_path(char *out, size_t len)
{
	const char *slash = strrchr(output, '/');
	const char *name = slash ? slash + 1 : output;
	const char *dot = strchr(name, '.');
	size_t stem = dot ? (size_t)(dot - output) : strlen(output);
	for (unsigned tries = 0; tries < 100000; tries++) {
		unsigned n = next_seq++;
		int w = snprintf(out, len, "%.*s.%u%s", (int)stem, output, n, dot ? dot : "");
		if (w < 0 || (size_t)w >= len)
			return -ENAMETOOLONG;
		if (access(out, F_OK) != 0)
			return 0;
	}
	return -EEXIST;
}

static int add_meta(strobe_trace *t, const char *reason, const struct strb_flight_counts *fc)
{
	char json[1024], why[512];
	/* The reason as a JSON string: printable ASCII, quotes and backslashes
	 * replaced. */
	size_t n = 0;
	for (const char *p = reason ? reason : "requested"; *p && n + 1 < sizeof(why); p++)
		why[n++] = (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
		               ? '_'
		               : *p;
	why[n] = 0;
	snprintf(json, sizeof(json),
	         "{\"reason\": \"%s\", \"window_s\": %.3f, \"aged_out\": %" PRIu64 ", \"kept_lost\": %" PRIu64
	         ", \"torn_threads\": %" PRIu64 "}",
	         why, (double)window_ns / 1e9, fc->aged_out, fc->kept_lost, fc->torn_threads);
	struct strobe_arg meta[] = {
	    {.key = "flight_recorder", .kind = STROBE_ARG_JSON, .value.str = json},
	    {.key = "aged_out", .kind = STROBE_ARG_U64, .value.u64 = fc->aged_out},
	};
	for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
		if (strb_trace_set_meta(t, &meta[i]))
			return -ENOMEM;
	return 0;
}

static int dump(const char *reason, char *path, size_t path_len)
{
	char file[4200];
	/* The window ends here, at the trigger, however long this waits for
	 * the dump before it or for a GPU snapshot. */
	uint64_t asked = strb_clock_ticks();
	pthread_mutex_lock(&dump_lock);
	strobe_trace *t = NULL;
	struct strb_flight_counts fc = {0};
	int rc = strb_control_flight_dump(window_ns, asked, &t, &fc);
	if (!rc && add_meta(t, reason, &fc))
		rc = strb_error(-ENOMEM, "flight recorder dump: out of memory");
	if (!rc) {
		rc = dump_path(file, sizeof(file));
		if (rc)
			rc = strb_error(rc, "flight recorder dump: no free file name beside %s", output);
	}
	if (!rc)
		rc = strobe_trace_save(t, file);
	if (!rc) {
		LOGW("flight recorder: wrote the last %.0f s to %s (%s)", (double)window_ns / 1e9, file,
		     reason ? reason : "requested");
		if (path && path_len)
			snprintf(path, path_len, "%s", file);
	} else {
		LOGE("flight recorder: no dump written (%s): %s", reason ? reason : "requested",
		     strobe_last_error());
	}
	strb_flight_dump_hook hook = atomic_load(&dump_hook);
	if (hook)
		hook(rc ? NULL : file, reason ? reason : "requested", rc ? strobe_last_error() : NULL);
	strobe_trace_destroy(t);
	pthread_mutex_unlock(&dump_lock);
	return rc;
}

/* ---- the watchdog ------------------------------------------------------- */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Under t->lock: waits ns or until stopped; false once stopped. */
static bool ticker_wait(struct ticker *t, uint64_t ns)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)(ns / 1000000000ull);
	until.tv_nsec += (long)(ns % 1000000000ull);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (!t->stop)
		pthread_cond_timedwait(&t->cond, &t->lock, &until);
	return !t->stop;
}

/* From the thread that starts the recorder (under flight_lock). */
static bool ticker_start(struct ticker *t, void *(*fn)(void *), const char *name)
{
	if (!t->inited) {
		pthread_condattr_t attr;
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&t->cond, &attr);
		pthread_condattr_destroy(&attr);
		t->inited = true;
	}
	t->stop = false;
	static const int faults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
	sigset_t all, old;
	sigfillset(&all);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&all, faults[i]);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	t->running = pthread_create(&t->th, NULL, fn, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (t->running)
		pthread_setname_np(t->th, name);
	return t->running;
}

static void ticker_stop(struct ticker *t)
{
	if (!t->running)
		return;
	pthread_mutex_lock(&t->lock);
	t->stop = true;
	pthread_cond_signal(&t->cond);
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->th, NULL);
	t->running = false;
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	uint64_t period = hang_after_ns / 4;
	if (period > 1000000000ull)
		period = 1000000000ull;
	if (period < 10000000ull)
		period = 10000000ull;
	pthread_mutex_lock(&dog.lock);
	while (ticker_wait(&dog, period)) {
		/* Armed by the first strobe_step(): a process that never steps
		 * (a launcher, a helper child) is not hanging. */
		int64_t last = atomic_load(&last_step_ns);
		int64_t idle = mono_ns() - last;
		if (!last || idle < (int64_t)hang_after_ns || atomic_load(&hang_dumped))
			continue;
		/* Once per hang: stepping again re-arms it. */
		atomic_store(&hang_dumped, true);
		char reason[128];
		snprintf(reason, sizeof(reason), "hang: strobe_step() not called for %.1f s",
		         (double)idle / 1e9);
		pthread_mutex_unlock(&dog.lock);
		dump(reason, NULL, 0);
		pthread_mutex_lock(&dog.lock);
	}
	pthread_mutex_unlock(&dog.lock);
	return NULL;
}

static void watchdog_start(void)
{
	atomic_store(&last_step_ns, 0);
	atomic_store(&hang_dumped, false);
	if (!ticker_start(&dog, watchdog_main, "strobe-watchdog"))
		LOGW("flight recorder: cannot start the watchdog thread; hangs are not dumped");
}

/* ---- GPU snapshots for the fatal-signal handler ------------------------- */

/* GPU records cannot be decoded in a signal handler (the vendor library
 * walks its own buffers, and kernel names point into its memory), so
 * they are decoded here, every snapshot_ns, into a packed block with no
 * pointers that the handler writes as it is. A crash dump then holds the
 * GPU work of the last snapshot's window. */
static bool snapshot(bool *warned)
{
	strobe_trace *t = NULL;
	uint64_t ticks = 0;
	void *block = NULL;
	size_t len = 0;
	int rc = strb_control_flight_gpu(window_ns, &t, &ticks);
	if (!rc && strb_pack_trace(t, snapshot_bytes, &block, &len))
		rc = strb_error(-ENOMEM, "flight recorder: packing the GPU records: out of memory");
	strobe_trace_destroy(t);
	if (rc) {
		if (!*warned)
			LOGW("%s; a crash dump holds the GPU records of the last snapshot that worked",
			     strobe_last_error());
		*warned = true;
		return false;
	}
	strb_flight_crash_set_gpu(block, len, ticks);
	return true;
}

static void *snapshot_main(void *arg)
{
	(void)arg;
	bool warned = false;
	uint64_t wait = snapshot_ns;
	pthread_mutex_lock(&snap.lock);
	while (ticker_wait(&snap, wait)) {
		pthread_mutex_unlock(&snap.lock);
		int64_t t0 = mono_ns();
		if (strb_control_flight_has_gpu())
			snapshot(&warned);
		/* A long decode waits longer: the thread stays mostly idle. */
		uint64_t took = (uint64_t)(mono_ns() - t0);
		wait = took * SNAPSHOT_SHARE > snapshot_ns ? took * SNAPSHOT_SHARE : snapshot_ns;
		if (wait > SNAPSHOT_MAX_WAIT && snapshot_ns < SNAPSHOT_MAX_WAIT)
			wait = SNAPSHOT_MAX_WAIT;
		pthread_mutex_lock(&snap.lock);
	}
	pthread_mutex_unlock(&snap.lock);
	return NULL;
}

/* ---- the API ------------------------------------------------------------ */

static void at_exit(void)
{
	if (atomic_load(&running) && dump_on_exit)
		strb_flight_stop(true, "the program exited");
}

static void register_exit(void)
{
	atexit(at_exit);
}

int strb_flight_start(const struct strobe_flight_opts *opts)
{
	static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
	uint64_t mask = STRB_OPTS_GET(opts, activity_mask, 0);
	uint64_t mem = STRB_OPTS_GET(opts, memory_bytes, 0);
	const char *out = STRB_OPTS_GET(opts, output, NULL);
	if (mem && mem < MIN_MEMORY)
		return strb_error(
		    -EINVAL, "strobe_flight_start: memory_bytes %" PRIu64 " is below the 1 MiB minimum", mem);
	if (out && !*out)
		return strb_error(-EINVAL, "strobe_flight_start: output is empty");
	if (out && strlen(out) >= sizeof(output) - 32)
		return strb_error(-ENAMETOOLONG, "strobe_flight_start: output path too long");
	struct strb_config cfg;
	char err[512];
	int rc = strb_config_build(&cfg, NULL, NULL, mask, err, sizeof(err));
	if (rc)
		return strb_error(rc == -ENOMEM ? -ENOMEM : STROBE_E_CONFIG, "strobe_flight_start: %s", err);
	uint64_t snap_ns = STRB_OPTS_GET(opts, gpu_snapshot_ns, 0);
	snap_ns = snap_ns ? snap_ns : DEFAULT_SNAPSHOT;
	if (snap_ns == UINT64_MAX)
		snap_ns = 0;
	/* One budget for the process: three quarters for the CPU rings, one
	 * for the GPU records: their buffers (which rotate the same way) and,
	 * with snapshots on, half of it for two packed snapshots (the one the
	 * handler would write and the one being made). */
	uint64_t total = mem ? mem : DEFAULT_MEMORY;
	cfg.max_cpu_buffer_bytes = (int64_t)(total / 4 * 3);
	cfg.max_gpu_buffer_bytes = (int64_t)(snap_ns ? total / 8 : total / 4);
	pthread_mutex_lock(&flight_lock);
	if (atomic_load(&running)) {
		pthread_mutex_unlock(&flight_lock);
		return strb_error(-EBUSY, "strobe_flight_start: the flight recorder is already running");
	}
	rc = strb_control_flight_start(&cfg);
	if (!rc) {
		pthread_mutex_lock(&dump_lock);
		if (out)
			snprintf(output, sizeof(output), "%s", out);
		else
			snprintf(output, sizeof(output), "strobe-flight-%d.json.gz", (int)getpid());
		uint64_t win = STRB_OPTS_GET(opts, window_ns, 0);
		window_ns = win ? win : DEFAULT_WINDOW_NS;
		next_seq = 1;
		pthread_mutex_unlock(&dump_lock);
		hang_after_ns = STRB_OPTS_GET(opts, hang_after_ns, 0);
		dump_on_exit = STRB_OPTS_GET(opts, dump_on_exit, false);
		atomic_store(&running, true);
		bool armed = strb_flight_crash_arm(output, window_ns, cfg.activity_mask) == 0;
		if (!armed)
			LOGW("flight recorder: fatal signals are not dumped: %s", strobe_last_error());
		snapshot_ns = snap_ns;
		snapshot_bytes = (size_t)(total / 16);
		/* A GPU backend may come up later (CUDA's injection calls in
		 * when the program first uses CUDA): each round looks. */
		if (armed && snap_ns && !ticker_start(&snap, snapshot_main, "strobe-gpu-snap"))
			LOGW("flight recorder: cannot start the GPU snapshot thread; crash dumps hold CPU "
			     "work "
			     "only");
		if (hang_after_ns)
			watchdog_start();
	}
	pthread_mutex_unlock(&flight_lock);
	if (!rc)
		pthread_once(&exit_once, register_exit);
	return rc;
}

int strb_flight_dump(const char *reason, char *path, size_t path_len)
{
	if (!atomic_load(&running))
		return strb_error(STROBE_E_STATE, "strobe_flight_dump: the flight recorder is not running");
	return dump(reason, path, path_len);
}

int strb_flight_stop(bool final_dump, const char *reason)
{
	pthread_mutex_lock(&flight_lock);
	if (!atomic_load(&running)) {
		pthread_mutex_unlock(&flight_lock);
		return strb_error(STROBE_E_STATE, "strobe_flight_stop: the flight recorder is not running");
	}
	ticker_stop(&dog);
	ticker_stop(&snap);
	if (final_dump && dump_on_exit)
		dump(reason, NULL, 0);
	atomic_store(&running, false);
	strb_flight_crash_disarm();
	int rc = strb_control_flight_stop();
	pthread_mutex_unlock(&flight_lock);
	return rc;
}

bool strb_flight_running(void)
{
	return atomic_load_explicit(&running, memory_order_relaxed);
}

void strb_flight_step(void)
{
	if (!atomic_load_explicit(&running, memory_order_relaxed))
		return;
	atomic_store_explicit(&last_step_ns, mono_ns(), memory_order_relaxed);
	if (atomic_load_explicit(&hang_dumped, memory_order_relaxed))
		atomic_store_explicit(&hang_dumped, false, memory_order_relaxed);
}

/* ---- the environment ---------------------------------------------------- */

/* "30s", "500ms", "2m", a bare number is seconds. */
static int parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"", 1e9}};
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v > 0) || v > 1e7)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].unit)) {
			*ns = (uint64_t)(v * units[i].ns);
			return *ns ? 0 : -EINVAL;
		}
	}
	return -EINVAL;
}

/* "256M", "1G", "512MB", "64MiB", "4096B"; a bare number is MiB. */
static int parse_size(const char *s, uint64_t *bytes)
{
	static const struct {
		const char *unit;
		double bytes;
	} units[] = {{"", 1 << 20},    {"B", 1},        {"K", 1 << 10},  {"KB", 1 << 10},
	             {"KiB", 1 << 10}, {"M", 1 << 20},  {"MB", 1 << 20}, {"MiB", 1 << 20},
	             {"G", 1 << 30},   {"GB", 1 << 30}, {"GiB", 1 << 30}};
	char *end;
	double v = strtod(s, &end);
	if (end == s || !(v > 0) || v > 1e6)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcasecmp(end, units[i].unit)) {
			*bytes = (uint64_t)(v * units[i].bytes);
			return 0;
		}
	}
	return -EINVAL;
}

int strb_flight_snapshot_env(uint64_t *ns)
{
	const char *v = getenv("STROBE_FLIGHT_GPU_SNAPSHOT");
	*ns = 0;
	if (!v || !*v)
		return 0;
	if (!strcmp(v, "0")) {
		*ns = UINT64_MAX;
		return 0;
	}
	if (!parse_duration(v, ns))
		return 0;
	LOGW("STROBE_FLIGHT_GPU_SNAPSHOT=%.100s is not a duration (e.g. 1s, 200ms) or 0; the flight "
	     "recorder is off",
	     v);
	return -EINVAL;
}

void strb_flight_init_from_env(void)
{
	const char *flight = getenv("STROBE_FLIGHT");
	if (!flight || !*flight || !strcmp(flight, "0"))
		return;
	struct strobe_flight_opts o = {.size = sizeof(o)};
	const char *v;
	if (parse_duration(flight, &o.window_ns)) {
		LOGW("STROBE_FLIGHT=%.100s is not a duration (e.g. 30s, 500ms, 2m); the flight recorder is "
		     "off",
		     flight);
		return;
	}
	if ((v = getenv("STROBE_FLIGHT_MEM")) && *v && parse_size(v, &o.memory_bytes)) {
		LOGW("STROBE_FLIGHT_MEM=%.100s is not a size (e.g. 256M, 1G); the flight recorder is off", v);
		return;
	}
	if ((v = getenv("STROBE_HANG_AFTER")) && *v && parse_duration(v, &o.hang_after_ns)) {
		LOGW("STROBE_HANG_AFTER=%.100s is not a duration (e.g. 10m); the flight recorder is off", v);
		return;
	}
	if (strb_flight_snapshot_env(&o.gpu_snapshot_ns))
		return;
	v = getenv("STROBE_DUMP_ON_EXIT");
	o.dump_on_exit = v && *v && strcmp(v, "0");
	v = getenv("STROBE_FLIGHT_OUTPUT");
	o.output = v && *v ? v : NULL;
	if (strb_flight_start(&o))
		LOGW("the flight recorder asked for by STROBE_FLIGHT did not start: %s", strobe_last_error());
}

void strb_flight_atfork_child(void)
{
	/* The rings and the watchdog are the parent's. */
	pthread_mutex_init(&flight_lock, NULL);
	pthread_mutex_init(&dump_lock, NULL);
	pthread_mutex_init(&dog.lock, NULL);
	pthread_mutex_init(&snap.lock, NULL);
	dog.running = snap.running = false;
	atomic_store(&running, false);
}

int strobe_flight_start(const struct strobe_flight_opts *opts)
{
	return strb_flight_start(opts);
}

int strobe_flight_dump(const char *reason, char *path, size_t path_len)
{
	return strb_flight_dump(reason, path, path_len);
}

int strobe_flight_stop(void)
{
	return strb_flight_stop(true, "strobe_flight_stop() was called");
}

#define LOG_TAG "control"
#include "control/controller.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "common/error.h"
#include "common/log.h"
#include "control/profilers.h"
#include "core/capture.h"
#include "core/clock.h"
#include "core/tbuf.h"
#include "process/gpu_buffers.h"
#include "process/process.h"

/* Everything below is guarded by `lock`, except what the sampler thread
 * touches, which is guarded by `map_lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static enum strb_state state;
static enum strb_owner owner;
/* Who owns a trace, for readers that must not wait for the lock (the
 * on-demand paths, strobe_step): NONE when idle. */
static _Atomic int public_owner;
static uint64_t stop_ticks;
static struct strb_config config;
static uint32_t last_session;
static uint32_t session;
static uint64_t start_ticks;
static struct strb_profiler_set profilers;
/* Backends taking part in the current trace, and why the others are off. */
static bool backend_on[STRB_BACKENDS_MAX];
static char backend_off_reason[STRB_BACKENDS_MAX][512];

#define FOR_EACH_ACTIVE_BACKEND(i)                                                                           \
	for (int i = 0; strb_backends[i]; i++)                                                               \
		if (backend_on[i])

static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t map_cond;
static struct strb_clock_map clock_map;
static bool sampler_stop;
static bool sampler_running;
static pthread_t sampler;

/* Samples the clock about once a second so the tick -> ns map follows the
 * TSC's real rate over long traces. */
static void *sampler_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&map_lock);
	while (!sampler_stop) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&map_cond, &map_lock, &until);
		if (!sampler_stop)
			strb_clock_map_sample(&clock_map);
	}
	pthread_mutex_unlock(&map_lock);
	return NULL;
}

static void sampler_init_cond(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&map_cond, &attr);
	pthread_condattr_destroy(&attr);
}

static void sampler_start(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, sampler_init_cond);
	sampler_stop = false;
	/* Block every signal in the sampler so the host's handlers never run on it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	sampler_running = pthread_create(&sampler, NULL, sampler_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (sampler_running)
		pthread_setname_np(sampler, "strobe-clock");
	else
		LOGW("cannot start the clock sampler thread; long traces may drift");
}

static void sampler_join(void)
{
	if (!sampler_running)
		return;
	pthread_mutex_lock(&map_lock);
	sampler_stop = true;
	pthread_cond_signal(&map_cond);
	pthread_mutex_unlock(&map_lock);
	pthread_join(sampler, NULL);
	sampler_running = false;
}

/* Ends capture of the current session: after this no thread starts a new
 * record for it. Cheap, so strobe_step() may do it. */
static void close_window(void)
{
	__atomic_store_n(&strobe_internal_session, 0, __ATOMIC_SEQ_CST);
	atomic_store(&strb_epoch_anchor, 0);
}

static void stop_collectors(void)
{
	FOR_EACH_ACTIVE_BACKEND(i)
	strb_backends[i]->stop();
	strb_profilers_stop(&profilers);
}

static void discard_locked(void)
{
	if (state == STRB_RUNNING)
		close_window();
	sampler_join();
	if (state == STRB_RUNNING || state == STRB_CAPTURED)
		stop_collectors();
	if (state != STRB_IDLE) {
		FOR_EACH_ACTIVE_BACKEND(i)
		strb_backends[i]->release();
		memset(backend_on, 0, sizeof(backend_on));
		strb_profilers_release(&profilers);
		strb_tbuf_release_all();
		strb_clock_map_free(&clock_map);
	}
	state = STRB_IDLE;
	owner = STRB_OWNER_NONE;
	atomic_store(&public_owner, STRB_OWNER_NONE);
}

/* Says once per distinct reason, in the log, why a backend is off; every
 * trace carries the reason in its metadata. */
static void prepare_backends(const struct strb_config *cfg)
{
	static char last_logged[STRB_BACKENDS_MAX][512];
	for (int i = 0; strb_backends[i]; i++) {
		char why[256] = "", *reason = backend_off_reason[i];
		int rc = strb_backends[i]->prepare(cfg, cfg->activity_mask, why, sizeof(why));
		backend_on[i] = rc == 0;
		reason[0] = 0;
		if (rc < 0) {
			snprintf(reason, sizeof(backend_off_reason[i]), "%s capture is off: %s",
			         strb_backends[i]->name, why);
			if (strcmp(last_logged[i], reason)) {
				LOGW("%s", reason);
				memcpy(last_logged[i], reason, sizeof(last_logged[i])); /* both 512 bytes */
			}
		}
	}
}

static const char *state_name(enum strb_state s)
{
	static const char *const names[] = {"idle", "prepared", "running", "being processed"};
	return names[s];
}

static const char *owner_name(enum strb_owner o)
{
	return o == STRB_OWNER_ASYNC    ? "on-demand"
	       : o == STRB_OWNER_RECORD ? "strobe record"
	       : o == STRB_OWNER_FLIGHT ? "flight recorder"
	                                : "synchronous";
}

/* The next session number and a fresh clock map (0 or -ENOMEM). */
static int new_session(void)
{
	if (++last_session == 0)
		last_session = 1;
	session = last_session;
	pthread_mutex_lock(&map_lock);
	int rc = strb_clock_map_begin(&clock_map);
	pthread_mutex_unlock(&map_lock);
	return rc;
}

int strb_control_prepare(const struct strb_config *cfg, enum strb_owner who)
{
	pthread_mutex_lock(&lock);
	if ((who != STRB_OWNER_SYNC || owner == STRB_OWNER_RECORD || owner == STRB_OWNER_FLIGHT) &&
	    state != STRB_IDLE) {
		/* Only a synchronous request pre-empts, and not the window of
		 * strobe record (the whole run is being recorded) nor the flight
		 * recorder (its past is what it is for). */
		int rc = strb_error(-EBUSY, "a %s trace is %s", owner_name(owner), state_name(state));
		pthread_mutex_unlock(&lock);
		return rc;
	}
	if (state != STRB_IDLE)
		LOGW("a new trace replaces the %s one that was %s; its data is discarded", owner_name(owner),
		     state_name(state));
	discard_locked();
	strb_tbuf_set_ring(false);
	owner = who;
	atomic_store(&public_owner, who);
	config = *cfg;
	if (cfg->verbose_log_modules[0])
		strb_log_set_verbose_modules(cfg->verbose_log_modules);
	strb_tbuf_set_budget(cfg->max_cpu_buffer_bytes);
	char *text = strb_config_format(cfg);
	strb_profilers_prepare(&profilers, cfg->activity_mask, text ? text : "");
	free(text);
	prepare_backends(cfg);
	state = STRB_PREPARED;
	pthread_mutex_unlock(&lock);
	return 0;
}

int strb_control_start(enum strb_owner who)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	if (owner != who && state != STRB_IDLE) {
		rc =
		    strb_error(STROBE_E_STATE, "strobe_start: the prepared trace belongs to another request");
		goto out;
	}
	if (state == STRB_RUNNING) {
		rc = strb_error(-EALREADY, "strobe_start: the trace is already running");
		goto out;
	}
	if (state != STRB_PREPARED) {
		rc = strb_error(STROBE_E_STATE,
		                "strobe_start: no trace is prepared (call strobe_prepare first)");
		goto out;
	}
	rc = new_session();
	if (rc) {
		rc = strb_error(-ENOMEM, "strobe_start: out of memory");
		goto out;
	}
	atomic_store(&strb_epoch_anchor, clock_map.real_minus_mono);
	start_ticks = strb_clock_ticks();
	strb_profilers_start(&profilers);
	FOR_EACH_ACTIVE_BACKEND(i)
	strb_backends[i]->start();
	sampler_start();
	__atomic_store_n(&strobe_internal_session, session, __ATOMIC_RELEASE);
	state = STRB_RUNNING;
	LOGI("trace started (session %u)", session);
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

/* The window [from, to] of the current session, through the clock map. */
static struct strb_window window_of(uint64_t from, uint64_t to)
{
	struct strb_window w = {
	    .session = session,
	    .start_ticks = from,
	    .stop_ticks = to,
	    /* Both ends through the latest map: converting the start at start
	     * time, from a single sample, could put it after the first events. */
	    .start_ns = strb_clock_map_to_epoch(&clock_map, from),
	    .stop_ns = strb_clock_map_to_epoch(&clock_map, to),
	    .map = &clock_map,
	    .mask = config.activity_mask,
	};
	return w;
}

/* An empty trace for window w. */
static struct strobe_trace *trace_for(const struct strb_window *w)
{
	struct strobe_trace *t = strb_trace_new();
	if (t) {
		t->start_ns = w->start_ns;
		t->end_ns = w->stop_ns;
		t->pid = getpid();
		t->activity_mask = w->mask;
	}
	return t;
}

/* One key per vendor, written when its backend is off, and each
 * backend's own metadata. */
static int backend_metadata(struct strobe_trace *t)
{
	int rc = 0;
	for (int i = 0; strb_backends[i] && !rc; i++) {
		struct strobe_arg e = {.key = strb_backends[i]->capture_key,
		                       .kind = STROBE_ARG_STRING,
		                       .value.str = backend_off_reason[i]};
		if (backend_off_reason[i][0])
			rc = strb_trace_set_meta(t, &e);
		if (!rc && strb_backends[i]->metadata)
			rc = strb_backends[i]->metadata(t);
	}
	return rc;
}

struct child_emit {
	struct strobe_trace *t;
	const struct strb_window *w;
};

static int child_emit(const struct strobe_activity *a, void *arg)
{
	struct child_emit *ce = arg;
	return strb_process_child_activity(ce->t, ce->w, a);
}

int strb_control_end_capture(enum strb_owner who)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	if (state != STRB_RUNNING || owner != who) {
		rc = strb_error(STROBE_E_STATE, "strobe_stop: no trace is running");
	} else {
		stop_ticks = strb_clock_ticks();
		close_window(); /* the rest happens in finish, off the caller's thread */
		state = STRB_CAPTURED;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int strb_control_stop(strobe_trace **out)
{
	int rc = strb_control_end_capture(STRB_OWNER_SYNC);
	if (rc) {
		if (out)
			*out = NULL;
		return rc;
	}
	return strb_control_finish(STRB_OWNER_SYNC, out);
}

int strb_control_finish(enum strb_owner who, strobe_trace **out)
{
	int rc = 0;
	if (out)
		*out = NULL;
	pthread_mutex_lock(&lock);
	if (state != STRB_CAPTURED || owner != who) {
		rc = strb_error(STROBE_E_STATE, "no captured trace to process");
		pthread_mutex_unlock(&lock);
		return rc;
	}
	sampler_join();
	stop_collectors();
	strb_clock_map_sample(&clock_map);

	struct strb_window w = window_of(start_ticks, stop_ticks);
	struct strobe_trace *t = trace_for(&w);
	if (!t) {
		rc = strb_error(-ENOMEM, "strobe_stop: out of memory");
		goto out;
	}
	rc = strb_process_cpu(t, &w);
	/* The CPU part is done: from here on activities are only appended, and
	 * the trace encodes them as they come. */
	strb_trace_roll(t);
	FOR_EACH_ACTIVE_BACKEND(i)
	if (!rc)
		rc = strb_backends[i]->process(t, &w);
	if (!rc)
		rc = backend_metadata(t);
	struct child_emit ce = {t, &w};
	if (!rc)
		rc = strb_profilers_collect(&profilers, child_emit, &ce);
	if (!rc)
		rc = strb_process_finish(t, &w, &config);
	if (rc) {
		strobe_trace_destroy(t);
		rc = strb_error(-ENOMEM, "strobe_stop: out of memory while processing the trace");
		goto out;
	}
	LOGI("trace stopped: %zu activities", t->count);
	if (out)
		*out = t;
	else
		strobe_trace_destroy(t);
out:
	state = STRB_PREPARED; /* collectors are stopped: release without stopping twice */
	discard_locked();
	pthread_mutex_unlock(&lock);
	return rc;
}

void strb_control_cancel(enum strb_owner who)
{
	pthread_mutex_lock(&lock);
	if (who == STRB_OWNER_NONE || owner == who)
		discard_locked();
	pthread_mutex_unlock(&lock);
}

enum strb_owner strb_control_owner(void)
{
	return (enum strb_owner)atomic_load(&public_owner);
}

enum strb_state strb_control_state(void)
{
	pthread_mutex_lock(&lock);
	enum strb_state s = state;
	pthread_mutex_unlock(&lock);
	return s;
}

int strb_control_toggle(bool enable)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	if (state != STRB_RUNNING)
		rc = strb_error(STROBE_E_STATE, "strobe_toggle_collection: no trace is running");
	else {
		FOR_EACH_ACTIVE_BACKEND(i)
		strb_backends[i]->toggle(enable);
		strb_profilers_toggle(&profilers, enable);
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

/* ---- the flight recorder ------------------------------------------------ */

int strb_control_flight_start(const struct strb_config *cfg)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	if (state != STRB_IDLE) {
		rc = strb_error(-EBUSY, "the flight recorder cannot start: a %s trace is %s",
		                owner_name(owner), state_name(state));
		goto out;
	}
	config = *cfg;
	strb_tbuf_set_budget(cfg->max_cpu_buffer_bytes);
	strb_tbuf_set_ring(true);
	/* GPU records rotate in their pools the same way. */
	strb_gpu_pool_set_rotate_next(true);
	prepare_backends(cfg);
	strb_gpu_pool_set_rotate_next(false);
	rc = new_session();
	if (rc) {
		strb_tbuf_set_ring(false);
		FOR_EACH_ACTIVE_BACKEND(i)
		strb_backends[i]->release();
		memset(backend_on, 0, sizeof(backend_on));
		rc = strb_error(-ENOMEM, "the flight recorder cannot start: out of memory");
		goto out;
	}
	owner = STRB_OWNER_FLIGHT;
	atomic_store(&public_owner, STRB_OWNER_FLIGHT);
	atomic_store(&strb_epoch_anchor, clock_map.real_minus_mono);
	start_ticks = strb_clock_ticks();
	FOR_EACH_ACTIVE_BACKEND(i)
	strb_backends[i]->start();
	sampler_start();
	__atomic_store_n(&strobe_internal_session, session, __ATOMIC_RELEASE);
	state = STRB_RUNNING;
	LOGI("flight recorder started (session %u, %lld MB of rings)", session,
	     (long long)(cfg->max_cpu_buffer_bytes >> 20));
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

/* The flight window ending now; under map_lock. */
/* The window_ns up to `now` (a tick of this session's). */
static struct strb_window flight_window(uint64_t window_ns, uint64_t now)
{
	if (now < start_ticks)
		now = start_ticks;
	uint64_t span = strb_clock_ns_to_ticks(window_ns) - strb_clock_ns_to_ticks(0);
	uint64_t from = now - start_ticks > span ? now - span : start_ticks;
	strb_clock_map_sample(&clock_map);
	return window_of(from, now);
}

/* The GPU records of window w, from copies of the backends' buffers, and
 * the backends' metadata. */
static int flight_gpu(struct strobe_trace *t, const struct strb_window *w)
{
	int rc = 0;
	FOR_EACH_ACTIVE_BACKEND(i)
	if (!rc && strb_backends[i]->flight_dump)
		rc = strb_backends[i]->flight_dump(t, w);
	return rc ? rc : backend_metadata(t);
}

bool strb_control_flight_has_gpu(void)
{
	bool any = false;
	pthread_mutex_lock(&lock);
	if (state == STRB_RUNNING && owner == STRB_OWNER_FLIGHT)
		FOR_EACH_ACTIVE_BACKEND(i)
	any |= strb_backends[i]->flight_dump != NULL;
	pthread_mutex_unlock(&lock);
	return any;
}

int strb_control_flight_gpu(uint64_t window_ns, strobe_trace **out, uint64_t *ticks)
{
	*out = NULL;
	pthread_mutex_lock(&lock);
	if (state != STRB_RUNNING || owner != STRB_OWNER_FLIGHT) {
		pthread_mutex_unlock(&lock);
		return strb_error(STROBE_E_STATE, "no flight recorder is running");
	}
	pthread_mutex_lock(&map_lock);
	struct strb_window w = flight_window(window_ns, strb_clock_ticks());
	*ticks = w.stop_ticks;
	struct strobe_trace *t = trace_for(&w);
	int rc = t ? flight_gpu(t, &w) : -ENOMEM;
	/* Rows as a dump would give them: the CPU work it is added to later
	 * is none of the overlap pass's business. */
	if (!rc)
		rc = strb_process_overlap(t);
	pthread_mutex_unlock(&map_lock);
	pthread_mutex_unlock(&lock);
	if (rc) {
		strobe_trace_destroy(t);
		return strb_error(-ENOMEM, "flight recorder: decoding the GPU records: out of memory");
	}
	*out = t;
	return 0;
}

int strb_control_flight_dump(uint64_t window_ns, uint64_t asked, strobe_trace **out,
                             struct strb_flight_counts *fc)
{
	int rc = 0;
	*out = NULL;
	pthread_mutex_lock(&lock);
	if (state != STRB_RUNNING || owner != STRB_OWNER_FLIGHT) {
		rc = strb_error(STROBE_E_STATE, "no flight recorder is running");
		pthread_mutex_unlock(&lock);
		return rc;
	}
	/* The sampler adds to the map meanwhile: processing holds its lock
	 * (the sampler waits; no capture thread takes it). */
	pthread_mutex_lock(&map_lock);
	struct strb_window w = flight_window(window_ns, asked);
	struct strobe_trace *t = trace_for(&w);
	rc = t ? strb_process_cpu_flight(t, &w, fc) : -ENOMEM;
	if (!rc)
		rc = flight_gpu(t, &w);
	if (!rc) {
		/* Ranges open since before the window start where they began. */
		for (size_t i = 0; i < t->count; i++)
			if (t->acts[i].start_ns < t->start_ns)
				t->start_ns = t->acts[i].start_ns;
		rc = strb_process_finish(t, &w, &config);
	}
	pthread_mutex_unlock(&map_lock);
	if (rc) {
		strobe_trace_destroy(t);
		rc = strb_error(-ENOMEM, "flight recorder dump: out of memory");
	} else {
		*out = t;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

int strb_control_flight_stop(void)
{
	int rc = 0;
	pthread_mutex_lock(&lock);
	if (owner != STRB_OWNER_FLIGHT)
		rc = strb_error(STROBE_E_STATE, "no flight recorder is running");
	else
		discard_locked();
	strb_tbuf_set_ring(false);
	pthread_mutex_unlock(&lock);
	return rc;
}

void strb_control_atfork_child(void)
{
	/* The child has none of the parent's other threads: start clean. */
	pthread_mutex_init(&lock, NULL);
	pthread_mutex_init(&map_lock, NULL);
	sampler_running = false;
	atomic_store(&strb_epoch_anchor, 0);
	strb_profilers_release(&profilers);
	for (int i = 0; strb_backends[i]; i++)
		strb_backends[i]->atfork_child();
	memset(backend_on, 0, sizeof(backend_on));
	strb_clock_map_free(&clock_map);
	state = STRB_IDLE;
	owner = STRB_OWNER_NONE;
	atomic_store(&public_owner, STRB_OWNER_NONE);
}

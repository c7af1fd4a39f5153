#define LOG_TAG "ondemand"
#include "control/ondemand.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/log.h"
#include "common/monotonic.h"
#include "common/sink.h"
#include "control/controller.h"
#include "output/output.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static enum strb_async_state state;
static bool has_pending;
static struct strb_config pending;
static enum strb_request_source pending_source;
static struct strb_config active;
static enum strb_request_source active_source;
static int64_t iteration = -1; /* strobe_step pre-increments: the first step is 0 */
static int64_t start_ms, end_ms, start_iter, end_iter;
static bool iter_mode;

/* An exit handler is writing the active trace: the service thread keeps
 * its hands off it. */
static bool writing_at_exit;

static strobe_trace_written_cb written_cb;
static void *written_arg;

static void no_wake(void)
{
}

void (*strb_ondemand_wake)(void) = no_wake;

static bool iteration_based(const struct strb_config *c)
{
	return c->profile_start_iteration >= 0 && c->iterations > 0;
}

/* Refusals are logged REFUSAL_BURST times per REFUSAL_WINDOW_MS at most:
 * a peer that sends request after request (all refused) must not fill the
 * program's stderr. The rest are counted, and the count is logged with the
 * next refusal that is. */
#define REFUSAL_WINDOW_MS 10000
#define REFUSAL_BURST     5

int strb_ratelimit_take(struct strb_ratelimit *rl, int64_t now_ms, uint64_t *suppressed)
{
	*suppressed = 0;
	if (!rl->started || now_ms - rl->window_start_ms >= rl->window_ms) {
		rl->started = true;
		rl->window_start_ms = now_ms;
		rl->taken = 0;
	}
	if (rl->taken >= rl->burst) {
		rl->suppressed++;
		return 0;
	}
	rl->taken++;
	*suppressed = rl->suppressed;
	rl->suppressed = 0;
	return rl->taken == rl->burst ? 2 : 1;
}

static pthread_mutex_t refusal_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strb_ratelimit refusals = {.window_ms = REFUSAL_WINDOW_MS, .burst = REFUSAL_BURST};

void strb_ondemand_log_refusal(const char *fmt, ...)
{
	uint64_t before;
	pthread_mutex_lock(&refusal_lock);
	int take = strb_ratelimit_take(&refusals, strb_mono_ns_raw() / 1000000, &before);
	pthread_mutex_unlock(&refusal_lock);
	if (!take)
		return; /* suppressed: not even formatted */
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (before)
		LOGW("on-demand request refused: %s (and %llu more refusals before it, not logged)", msg,
		     (unsigned long long)before);
	else if (take == 2)
		LOGW("on-demand request refused: %s (further refusals in the next %d s are counted, not "
		     "logged)",
		     msg, REFUSAL_WINDOW_MS / 1000);
	else
		LOGW("on-demand request refused: %s", msg);
}

static int refuse(int status, const char *reason)
{
	strb_ondemand_log_refusal("%s", reason);
	return strb_error(status, "on-demand request refused: %s", reason);
}

int strb_ondemand_submit(const struct strb_config *cfg, enum strb_request_source source)
{
	if (cfg->profile_memory)
		return refuse(-ENOTSUP,
		              "memory snapshot requests (PROFILE_MEMORY) are not supported by strobe");
	if (!cfg->activities_enabled && !cfg->on_demand_key_seen)
		return refuse(-EINVAL, "the request has ACTIVITIES_ENABLED=false and no trigger");
	struct strb_config c = *cfg;
	int rc = 0;
	pthread_mutex_lock(&lock);
	if (strb_control_owner() == STRB_OWNER_SYNC) {
		rc = refuse(-EBUSY, "profiler busy: a synchronous trace is in progress");
	} else if (state != STRB_ASYNC_IDLE) {
		rc = refuse(-EBUSY, "profiler busy: an on-demand trace is in progress");
	} else if (has_pending) {
		rc = refuse(-EBUSY, "another request is pending");
	} else if (iteration_based(&c) && iteration < 0) {
		/* The application never called strobe_step(): an iteration
		 * trigger would never fire. */
		if (c.duration_ms > 0) {
			LOGI("the application does not call strobe_step(); tracing for %d ms instead of %d "
			     "iterations",
			     c.duration_ms, c.iterations);
			c.profile_start_iteration = -1;
		} else {
			rc = refuse(
			    -EINVAL,
			    "iteration-based request, but the application does not call strobe_step()");
		}
	}
	if (!rc) {
		pending = c;
		pending_source = source;
		has_pending = true;
		LOGI("on-demand request accepted (%s)",
		     iteration_based(&c) ? "iteration-based" : "time-based");
	}
	pthread_mutex_unlock(&lock);
	if (!rc)
		strb_ondemand_wake();
	return rc;
}

static bool time_trigger(int64_t now)
{
	const struct strb_config *c = &pending;
	return !iteration_based(c) && now + 1000 >= c->profile_start_time_ms - (int64_t)c->warmup_secs * 1000;
}

/* libkineto's rule: start at the requested iteration, or if it has passed,
 * at the next one (rounded up to a multiple of the round-up). */
static bool iteration_trigger(int64_t iter)
{
	struct strb_config *c = &pending;
	if (!iteration_based(c))
		return false;
	int64_t root = c->profile_start_iteration - c->warmup_iterations;
	if (iter < root)
		return false;
	if (iter > root) {
		int64_t start = iter + c->warmup_iterations;
		int64_t r = c->profile_start_iteration_roundup;
		if (r > 0)
			start = (start + r - 1) / r * r;
		if (start > INT32_MAX)
			return false;
		c->profile_start_iteration = (int32_t)start;
		return iter == start - c->warmup_iterations;
	}
	return true;
}

static void go_idle(void)
{
	state = STRB_ASYNC_IDLE;
}

/* Pending -> warm-up: configures the trace (collectors enabled, warm-up
 * records discarded at start). */
static void activate(int64_t now)
{
	struct strb_config c = pending;
	enum strb_request_source src = pending_source;
	has_pending = false;
	bool iter = iteration_based(&c);
	if (!iter) {
		if (c.profile_start_time_ms < now) {
			refuse(-EINVAL, "its start time is in the past");
			return;
		}
		if (c.profile_start_time_ms - now < (int64_t)c.warmup_secs * 1000 - 1000)
			LOGW("on-demand trace: less time than the %d s warm-up before its start",
			     c.warmup_secs);
	}
	/* Checked first without waiting: activation may run on strobe_step(),
	 * which must not queue behind a synchronous trace's processing. */
	if (strb_control_owner() != STRB_OWNER_NONE) {
		refuse(-EBUSY, "profiler busy: a synchronous trace is in progress");
		return;
	}
	int rc = strb_control_prepare(&c, STRB_OWNER_ASYNC);
	if (rc) {
		refuse(rc, strobe_last_error());
		return;
	}
	active = c;
	active_source = src;
	iter_mode = iter;
	start_iter = c.profile_start_iteration;
	end_iter = start_iter + c.iterations;
	start_ms = c.profile_start_time_ms;
	end_ms = start_ms + c.duration_ms;
	state = STRB_ASYNC_WARMUP;
	if (iter)
		LOGI("on-demand trace: warm-up until iteration %lld, %d iterations", (long long)start_iter,
		     c.iterations);
	else
		LOGI("on-demand trace: warm-up until %lld ms, %d ms long", (long long)start_ms,
		     c.duration_ms);
}

/* One transition at most, as libkineto's run loop. iter < 0: a time tick. */
static void advance(int64_t now, int64_t iter)
{
	if (state == STRB_ASYNC_WARMUP) {
		bool due = iter_mode ? iter >= 0 && iter >= start_iter : iter < 0 && now >= start_ms;
		if (!due)
			return;
		if (strb_control_start(STRB_OWNER_ASYNC)) {
			LOGW("on-demand trace abandoned: %s", strobe_last_error());
			go_idle();
			return;
		}
		if (!iter_mode && now - start_ms > 10)
			LOGI("on-demand tracing started %lld ms late", (long long)(now - start_ms));
		state = STRB_ASYNC_COLLECTING;
	} else if (state == STRB_ASYNC_COLLECTING) {
		bool done = iter_mode ? iter >= 0 && iter >= end_iter : iter < 0 && now >= end_ms;
		if (!done)
			return;
		if (strb_control_end_capture(STRB_OWNER_ASYNC)) {
			LOGW("on-demand trace abandoned: %s", strobe_last_error());
			go_idle();
			return;
		}
		state = STRB_ASYNC_PROCESSING;
		strb_ondemand_wake();
	}
}

const char *strb_ondemand_allowed_dir(void)
{
	const char *d = getenv("STROBE_ONDEMAND_TRACE_DIR");
	if (!d || !*d)
		d = getenv("KINETO_ONDEMAND_TRACE_DIR");
	return d && *d ? d : "/tmp/";
}

/* Writes beneath the allowed directory without following a symlink in any
 * component, creating the file exclusively with mode 0600: a request from
 * outside cannot make strobe write, or overwrite, anything elsewhere. */
static int write_restricted(const strobe_trace *t, const char *path)
{
	const char *dir = strb_ondemand_allowed_dir();
	size_t dlen = strlen(dir);
	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	if (strncmp(path, dir, dlen) || (path[dlen] != '/' && dlen > 1))
		return strb_error(-EPERM, "%s is not beneath %s", path, dir);
	int dfd = open(dir, O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return strb_error(STROBE_E_IO, "cannot open %s: %s", dir, strerror(errno));
	char *rest = strdup(path + dlen);
	if (!rest) {
		close(dfd);
		return -ENOMEM;
	}
	char *save = NULL, *comp = strtok_r(rest, "/", &save);
	int rc = 0;
	while (comp) {
		char *next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, ".") || !strcmp(comp, "..")) {
			rc = strb_error(-EPERM, "%s: \".\" and \"..\" are not allowed", path);
			break;
		}
		if (!next) {
			struct strb_sink *sink;
			rc = strb_sink_open_at(&sink, dfd, comp, path, strb_compress_for_path(path), -1, 0600,
			                       true);
			dfd = -1; /* the sink owns it now */
			if (!rc)
				rc = strb_file_write_sink(t, sink, path);
			break;
		}
		int sub = openat(dfd, comp, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0) {
			rc = strb_error(-EPERM, "%s: component \"%s\" is %s", path, comp,
			                errno == ELOOP || errno == ENOTDIR ? "a symlink or not a directory"
			                                                   : strerror(errno));
			break;
		}
		close(dfd);
		dfd = sub;
		comp = next;
	}
	if (!comp && !rc)
		rc = strb_error(-EINVAL, "%s names no file", path);
	if (dfd >= 0)
		close(dfd);
	free(rest);
	return rc;
}

/* On the service thread, without the lock: strobe_step() stays free. */
static void process_and_write(void)
{
	strobe_trace *t = NULL;
	int rc = strb_control_finish(STRB_OWNER_ASYNC, &t);
	const char *url = active.log_url;
	const char *path = strncmp(url, "file://", 7) ? url : url + 7;
	if (!rc)
		rc = active_source == STRB_SOURCE_API ? strobe_trace_save(t, url) : write_restricted(t, path);
	if (rc)
		LOGE("on-demand trace not written to %s: %s", path, strobe_last_error());
	else
		LOGI("on-demand trace written to %s (%zu activities)", path, strobe_trace_activity_count(t));
	strobe_trace_destroy(t);
	pthread_mutex_lock(&lock);
	strobe_trace_written_cb cb = written_cb;
	void *arg = written_arg;
	pthread_mutex_unlock(&lock);
	if (cb)
		cb(path, rc, arg);
}

int64_t strb_ondemand_tick(int64_t now)
{
	pthread_mutex_lock(&lock);
	if (has_pending && state == STRB_ASYNC_IDLE && time_trigger(now))
		activate(now);
	if (state != STRB_ASYNC_IDLE && !iter_mode)
		advance(now, -1);
	bool process = state == STRB_ASYNC_PROCESSING && !writing_at_exit;
	pthread_mutex_unlock(&lock);
	if (process) {
		process_and_write();
		pthread_mutex_lock(&lock);
		if (state == STRB_ASYNC_PROCESSING)
			go_idle();
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	/* Idle: nothing to time; the service thread sleeps until its next poll
	 * or a wake-up (a request, a step that ends collection, a signal). */
	int64_t next = has_pending || state != STRB_ASYNC_IDLE ? now + 1000 : INT64_MAX;
	if (has_pending && !iteration_based(&pending)) {
		int64_t fire = pending.profile_start_time_ms - (int64_t)pending.warmup_secs * 1000 - 1000;
		if (fire < next)
			next = fire > now ? fire : now;
	}
	if (!iter_mode && state == STRB_ASYNC_WARMUP && start_ms < next)
		next = start_ms;
	if (!iter_mode && state == STRB_ASYNC_COLLECTING && end_ms < next)
		next = end_ms;
	pthread_mutex_unlock(&lock);
	return next;
}

void strb_ondemand_step(int64_t now)
{
	pthread_mutex_lock(&lock);
	iteration++;
	if (has_pending && state == STRB_ASYNC_IDLE && iteration_trigger(iteration))
		activate(now);
	if (state != STRB_ASYNC_IDLE && iter_mode)
		advance(now, iteration);
	pthread_mutex_unlock(&lock);
}

void strb_ondemand_cancel(const char *reason)
{
	pthread_mutex_lock(&lock);
	if (has_pending || (state != STRB_ASYNC_IDLE && state != STRB_ASYNC_PROCESSING))
		LOGW("on-demand trace cancelled: %s", reason);
	has_pending = false;
	if (state != STRB_ASYNC_IDLE && state != STRB_ASYNC_PROCESSING) {
		strb_control_cancel(STRB_OWNER_ASYNC);
		go_idle();
	}
	pthread_mutex_unlock(&lock);
}

#define EXIT_WAIT_MS 30000

void strb_ondemand_at_exit(void)
{
	strb_ondemand_finish_now("the process is exiting");
}

void strb_ondemand_finish_now(const char *why)
{
	pthread_mutex_lock(&lock);
	has_pending = false;
	bool write = false;
	if (state == STRB_ASYNC_WARMUP) {
		strb_control_cancel(STRB_OWNER_ASYNC);
		go_idle();
	} else if (state == STRB_ASYNC_COLLECTING) {
		if (strb_control_end_capture(STRB_OWNER_ASYNC) == 0) {
			state = STRB_ASYNC_PROCESSING;
			writing_at_exit = write = true;
		} else {
			go_idle();
		}
	}
	pthread_mutex_unlock(&lock);
	if (write) {
		LOGW("on-demand trace cut short: %s; writing what it captured", why);
		process_and_write();
		pthread_mutex_lock(&lock);
		writing_at_exit = false;
		go_idle();
		pthread_mutex_unlock(&lock);
		return;
	}
	/* The service thread may be writing it: let it finish, within reason. */
	for (int i = 0; i < EXIT_WAIT_MS / 10 && strb_ondemand_state() == STRB_ASYNC_PROCESSING; i++)
		usleep(10000);
}

bool strb_ondemand_accepting(void)
{
	pthread_mutex_lock(&lock);
	bool ok = !has_pending && state == STRB_ASYNC_IDLE;
	pthread_mutex_unlock(&lock);
	return ok && strb_control_owner() == STRB_OWNER_NONE;
}

void strb_ondemand_reset_refusals(void)
{
	pthread_mutex_lock(&refusal_lock);
	refusals = (struct strb_ratelimit){.window_ms = REFUSAL_WINDOW_MS, .burst = REFUSAL_BURST};
	pthread_mutex_unlock(&refusal_lock);
}

enum strb_async_state strb_ondemand_state(void)
{
	pthread_mutex_lock(&lock);
	enum strb_async_state s = state;
	pthread_mutex_unlock(&lock);
	return s;
}

void strb_ondemand_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	pthread_mutex_init(&refusal_lock, NULL);
	has_pending = false;
	state = STRB_ASYNC_IDLE;
	writing_at_exit = false;
	iteration = -1;
}

int strobe_set_trace_callback(strobe_trace_written_cb cb, void *user_arg)
{
	pthread_mutex_lock(&lock);
	written_cb = cb;
	written_arg = user_arg;
	pthread_mutex_unlock(&lock);
	return 0;
}

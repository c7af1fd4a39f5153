/* The device-counter sampler, a backend beside the GPU ones: while a trace
 * runs, a thread of its own samples every device of the first counter
 * source that opens (process/counters.h; NVML today) at
 * GPU_COUNTERS_SAMPLE_RATE_HZ into a buffer of its own, so capture never
 * waits for it; at processing the samples become counter tracks on each
 * device's process row ("SM clock (MHz)", ...), devices matched to the GPU
 * backend's ids by UUID. With gpu_memory selected it also notes each
 * device's memory in use when the trace starts, the level the memory
 * timeline starts from. */
#define LOG_TAG "counters"
#include "backends/counters/sampler.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_tree.h>

#include "backends/backend.h"
#include "common/config.h"
#include "common/log.h"
#include "core/clock.h"
#include "process/gpu.h"
#include "process/process.h"
#include "process/trace.h"

#define MAX_DEVICES  STRB_COUNTERS_MAX_DEVICES
#define BUDGET_BYTES (64u << 20) /* samples kept per trace */

static const struct strb_counter_source *const sources[] = {&strb_nvml_source};

struct rec {
	uint64_t ticks;
	uint32_t dev, valid;
	double value[STRB_CTR_COUNT];
};

static struct {
	const struct strb_counter_source *src;
	struct strb_counter_device dev[MAX_DEVICES];
	int ndev;
	bool gone[MAX_DEVICES];
	bool counters, memory; /* gpu_counters, gpu_memory selected */
	int hz;
	bool in_fork_child;

	/* The thread; its wait, under mu. */
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool cv_ready, stop;
	bool paused; /* atomic */
	/* The samples: a ring of at most BUDGET_BYTES (the oldest are
	 * overwritten, counted as dropped), written by the thread and read by
	 * a flight dump, both under buf_mu (which capture never takes); after
	 * the join, by the processing alone. gone[] is atomic. */
	pthread_mutex_t buf_mu;
	struct rec *recs;
	size_t n, cap, head; /* head: the oldest when the ring is full */
	struct strb_counters_stats st;
} S = {.mu = PTHREAD_MUTEX_INITIALIZER, .buf_mu = PTHREAD_MUTEX_INITIALIZER};

void strb_counters_stats(struct strb_counters_stats *out)
{
	*out = S.st;
}

static int64_t ts_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Under buf_mu. */
static void keep(const struct rec *r)
{
	if (S.n == S.cap) {
		size_t cap = S.cap ? S.cap * 2 : 1024;
		if (cap * sizeof(*S.recs) > BUDGET_BYTES)
			cap = BUDGET_BYTES / sizeof(*S.recs);
		struct rec *p = cap > S.cap ? realloc(S.recs, cap * sizeof(*p)) : NULL;
		if (!p && !S.cap) {
			S.st.dropped++;
			return;
		}
		if (!p) {
			/* Full: the newest replaces the oldest. */
			S.recs[S.head] = *r;
			S.head = (S.head + 1) % S.cap;
			S.st.dropped++;
			S.st.samples++;
			return;
		}
		S.recs = p;
		S.cap = cap;
	}
	S.recs[S.n++] = *r;
	S.st.samples++;
}

/* The i-th oldest sample kept. */
static const struct rec *rec_at(size_t i)
{
	return &S.recs[(S.head + i) % S.cap];
}

static void sample_round(void)
{
	for (int i = 0; i < S.ndev; i++) {
		if (__atomic_load_n(&S.gone[i], __ATOMIC_RELAXED))
			continue;
		struct rec r = {.ticks = strb_clock_ticks(), .dev = (uint32_t)i};
		struct strb_counter_sample s = {0};
		if (S.src->sample(i, (int64_t)strb_clock_ticks_to_ns(r.ticks), &s) < 0) {
			__atomic_store_n(&S.gone[i], true, __ATOMIC_RELAXED);
			continue;
		}
		if (!s.valid)
			continue;
		r.valid = s.valid;
		memcpy(r.value, s.value, sizeof(r.value));
		pthread_mutex_lock(&S.buf_mu);
		keep(&r);
		pthread_mutex_unlock(&S.buf_mu);
	}
}

static void *run(void *arg)
{
	(void)arg;
	int64_t cpu0 = ts_ns(CLOCK_THREAD_CPUTIME_ID), wall0 = ts_ns(CLOCK_MONOTONIC);
	int64_t period = 1000000000ll / S.hz, next = wall0;
	pthread_mutex_lock(&S.mu);
	while (!S.stop) {
		pthread_mutex_unlock(&S.mu);
		if (!__atomic_load_n(&S.paused, __ATOMIC_RELAXED))
			sample_round();
		next += period;
		int64_t now = ts_ns(CLOCK_MONOTONIC), missed = 0;
		if (next < now) {
			/* Ran over (a slow call): skip the rounds missed, no burst. */
			missed = (now - next) / period + 1;
			next += missed * period;
		}
		pthread_mutex_lock(&S.buf_mu);
		S.st.ticks++;
		S.st.late += (uint64_t)missed;
		pthread_mutex_unlock(&S.buf_mu);
		struct timespec until = {(time_t)(next / 1000000000), (long)(next % 1000000000)};
		pthread_mutex_lock(&S.mu);
		while (!S.stop && pthread_cond_timedwait(&S.cv, &S.mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&S.mu);
	pthread_mutex_lock(&S.buf_mu);
	S.st.cpu_ns = ts_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	S.st.wall_ns = ts_ns(CLOCK_MONOTONIC) - wall0;
	pthread_mutex_unlock(&S.buf_mu);
	return NULL;
}

static void stop_thread(void)
{
	if (!S.running)
		return;
	pthread_mutex_lock(&S.mu);
	S.stop = true;
	pthread_cond_signal(&S.cv);
	pthread_mutex_unlock(&S.mu);
	pthread_join(S.thread, NULL);
	S.running = false;
}

static void release(void)
{
	stop_thread();
	free(S.recs);
	S.recs = NULL;
	S.n = S.cap = S.head = 0;
	if (S.src)
		S.src->close();
	S.src = NULL;
	S.ndev = 0;
}

static int prepare(const struct strb_config *cfg, uint64_t mask, char *why, size_t len)
{
	release();
	S.counters = mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_COUNTERS);
	S.memory = mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY);
	if (!S.counters && !S.memory)
		return 1; /* not selected: not an error */
	S.hz = cfg->gpu_counters_hz >= 1 && cfg->gpu_counters_hz <= 1000 ? cfg->gpu_counters_hz : 10;
	if (S.in_fork_child) {
		snprintf(why, len, "device counters do not follow a fork");
		strb_gpu_memory_start_reset(why);
		return -ENOTSUP;
	}
	int rc = -ENOENT;
	for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]) && !S.src; i++) {
		rc = sources[i]->open(why, len);
		if (!rc)
			S.src = sources[i];
	}
	if (!S.src) {
		strb_gpu_memory_start_reset(why);
		return rc;
	}
	S.ndev = S.src->devices(S.dev, MAX_DEVICES);
	memset(S.gone, 0, sizeof(S.gone));
	strb_gpu_memory_start_reset("the counter source lists no device with this UUID");
	return 0;
}

static void start(void)
{
	if (S.memory && S.src->memory_used) {
		for (int i = 0; i < S.ndev; i++) {
			uint64_t used;
			if (S.dev[i].uuid_known && !S.src->memory_used(i, &used))
				strb_gpu_memory_start_note(S.dev[i].uuid, used, S.src->name);
		}
	}
	if (!S.counters)
		return;
	if (!S.cv_ready) {
		pthread_condattr_t a;
		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&S.cv, &a);
		pthread_condattr_destroy(&a);
		S.cv_ready = true;
	}
	memset(&S.st, 0, sizeof(S.st));
	S.stop = false;
	S.n = S.head = 0;
	/* The thread takes no signal of the host program's. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	S.running = pthread_create(&S.thread, NULL, run, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!S.running)
		LOGW("device counters are off: cannot start the sampler thread");
	else
		pthread_setname_np(S.thread, "strobe-counters");
}

static void stop(void)
{
	stop_thread();
}

static void toggle(bool enable)
{
	__atomic_store_n(&S.paused, !enable, __ATOMIC_RELAXED);
}

bool strb_counters_parse_uuid(const char *s, unsigned char out[16])
{
	if (strncmp(s, "GPU-", 4))
		return false;
	s += 4;
	int n = 0;
	for (; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		int v = *s >= '0' && *s <= '9'   ? *s - '0'
		        : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
		        : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
		                                 : -1;
		if (v < 0)
			return false;
		if (n % 2 == 0)
			out[n / 2] = (unsigned char)(v << 4);
		else
			out[n / 2] |= (unsigned char)v;
		n++;
	}
	return n == 32;
}

void strb_counters_match(const char *device_properties, const struct strb_counter_device *dev, int ndev,
                         int64_t *id, bool *by_uuid)
{
	for (int i = 0; i < ndev; i++) {
		id[i] = i;
		by_uuid[i] = false;
	}
	if (!device_properties || !*device_properties)
		return;
	yajl_val props = NULL;
	char *list = NULL, err[128] = "no memory";
	if (asprintf(&list, "[%s]", device_properties) >= 0)
		props = yajl_tree_parse(list, err, sizeof(err));
	free(list);
	if (!YAJL_IS_ARRAY(props)) {
		LOGW("deviceProperties do not parse (%s); device counters are matched by index",
		     props ? "not a list" : err);
		yajl_tree_free(props);
		return;
	}
	const char *id_path[] = {"id", NULL}, *uuid_path[] = {"uuid", NULL};
	for (size_t k = 0; k < props->u.array.len; k++) {
		yajl_val o = props->u.array.values[k];
		yajl_val v = yajl_tree_get(o, id_path, yajl_t_number);
		const char *u = YAJL_GET_STRING(yajl_tree_get(o, uuid_path, yajl_t_string));
		unsigned char b[16];
		if (!v || !YAJL_IS_INTEGER(v) || !u || !strb_counters_parse_uuid(u, b))
			continue;
		for (int i = 0; i < ndev; i++) {
			if (dev[i].uuid_known && !memcmp(dev[i].uuid, b, 16)) {
				id[i] = YAJL_GET_INTEGER(v);
				by_uuid[i] = true;
			}
		}
	}
	yajl_tree_free(props);
}

static int emit(struct strobe_trace *t, const struct rec *r, int64_t ts, int64_t device)
{
	for (int c = 0; c < STRB_CTR_COUNT; c++) {
		if (!(r->valid & (1u << c)))
			continue;
		struct strobe_arg *arg = strb_arena_alloc(&t->arena, sizeof(*arg));
		struct strobe_activity *a = arg ? strb_trace_push(t) : NULL;
		if (!a)
			return -ENOMEM;
		*arg = (struct strobe_arg){
		    .key = strb_counter_name(c), .kind = STROBE_ARG_F64, .value.f64 = r->value[c]};
		a->type = STROBE_ACTIVITY_HARDWARE_COUNTERS;
		a->name = arg->key;
		a->start_ns = a->end_ns = ts;
		a->device = device;
		a->resource = 0;
		a->args = arg;
		a->arg_count = 1;
	}
	return 0;
}

/* "GPU N" for a device no GPU backend named. */
static int name_device(struct strobe_trace *t, int64_t device)
{
	for (size_t i = 0; i < t->res_count; i++)
		if (t->res[i].kind == STROBE_RESOURCE_PROCESS && t->res[i].device == device)
			return 0;
	char pname[256], label[32];
	strb_process_name(pname, sizeof(pname));
	snprintf(label, sizeof(label), "GPU %lld", (long long)device);
	struct strobe_resource p = {sizeof(p), STROBE_RESOURCE_PROCESS,      device, 0, pname,
	                            label,     STRB_GPU_SORT_OFFSET + device};
	return strb_trace_add_resource(t, &p);
}

static int metadata(struct strobe_trace *t, const int64_t *id, const bool *by_uuid)
{
	size_t cap = 512 + (size_t)S.ndev * 256, at = 0;
	char *text = malloc(cap);
	if (!text)
		return -ENOMEM;
	at += (size_t)snprintf(text + at, cap - at, "{\"source\": \"%s\", \"rate_hz\": %d, \"devices\": [",
	                       S.src->name, S.hz);
	for (int i = 0; i < S.ndev; i++) {
		char name[96];
		size_t j = 0;
		for (const char *p = S.dev[i].name; *p && j < sizeof(name) - 1; p++)
			name[j++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
		name[j] = 0;
		at += (size_t)snprintf(
		    text + at, cap - at,
		    "%s{\"device\": %lld, \"index\": %d, \"name\": \"%s\", \"matched_by\": \"%s\", "
		    "\"lost\": %s}",
		    i ? ", " : "", (long long)id[i], i, name, by_uuid[i] ? "uuid" : "index",
		    __atomic_load_n(&S.gone[i], __ATOMIC_RELAXED) ? "true" : "false");
	}
	snprintf(text + at, cap - at,
	         "], \"samples\": %llu, \"rounds\": %llu, \"late_rounds\": %llu, \"dropped\": %llu}",
	         (unsigned long long)S.st.samples, (unsigned long long)S.st.ticks,
	         (unsigned long long)S.st.late, (unsigned long long)S.st.dropped);
	struct strobe_arg m = {.key = "gpu_counters", .kind = STROBE_ARG_JSON, .value.str = text};
	int rc = strb_trace_set_meta(t, &m);
	free(text);
	return rc;
}

/* The samples inside w as counter tracks, each device named, and the
 * metadata: at processing (after the join) and in a flight dump (under
 * buf_mu, the thread going on). */
static int write_window(struct strobe_trace *t, const struct strb_window *w)
{
	int64_t id[MAX_DEVICES] = {0};
	bool by_uuid[MAX_DEVICES] = {false}, seen[MAX_DEVICES] = {false};
	strb_counters_match(t->device_properties, S.dev, S.ndev, id, by_uuid);
	int rc = 0;
	for (size_t i = 0; i < S.n && !rc; i++) {
		const struct rec *r = rec_at(i);
		int64_t ts = strb_clock_map_to_epoch(w->map, r->ticks);
		if (ts < w->start_ns || ts > w->stop_ns)
			continue;
		rc = emit(t, r, ts, id[r->dev]);
		seen[r->dev] = true;
	}
	for (int i = 0; i < S.ndev && !rc; i++)
		if (seen[i])
			rc = name_device(t, id[i]);
	if (!rc)
		rc = metadata(t, id, by_uuid);
	return rc;
}

static int process(struct strobe_trace *t, const struct strb_window *w)
{
	if (!S.counters || !S.src)
		return 0;
	stop_thread();
	int rc = write_window(t, w);
	for (int i = 0; i < S.ndev; i++)
		if (S.gone[i])
			LOGW("%s: device %d (%s) stopped answering during the trace; its counters end there",
			     S.src->name, i, S.dev[i].name);
	return rc;
}

/* Flight mode: the samples of the window so far; sampling goes on. */
static int flight_dump(struct strobe_trace *t, const struct strb_window *w)
{
	if (!S.counters || !S.src)
		return 0;
	pthread_mutex_lock(&S.buf_mu);
	int rc = write_window(t, w);
	pthread_mutex_unlock(&S.buf_mu);
	return rc;
}

static void atfork_child(void)
{
	/* The thread is not in the child; the parent's buffer is dropped. */
	S.running = false;
	S.recs = NULL;
	S.n = S.cap = S.head = 0;
	S.buf_mu = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
	if (S.src && S.src->forget)
		S.src->forget();
	S.src = NULL;
	S.in_fork_child = true;
}

const struct strb_backend strb_counters_backend = {
    .name = "GPU counters",
    .capture_key = "gpu_counters_capture",
    .prepare = prepare,
    .start = start,
    .stop = stop,
    .toggle = toggle,
    .process = process,
    .flight_dump = flight_dump,
    .release = release,
    .atfork_child = atfork_child,
};

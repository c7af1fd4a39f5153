/* Chrome-trace JSON in libkineto's layout (docs/output-format.md), with
 * every string escaped so the file is always valid JSON. */
#define LOG_TAG "json"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/jbuf.h"
#include "common/log.h"
#include "common/sink.h"
#include "core/tbuf.h"
#include "output/output.h"
#include "process/trace.h"

/* libkineto floors its base time to a multiple of this period, so traces
 * from many hosts share it. */
#define BASE_PERIOD_NS  (7889238ll * 1000000000ll)
#define SPAN_SORT_INDEX 536870912
#define SPAN_NAME       "strobe"

/* Time differences of any two int64_t ns fit 65 bits. */
__extension__ typedef __int128 strb_i128;

/* ns as µs with exactly three decimals, negative ones with a minus
 * (|ns| <= 2^64 + 1 here). */
static void us(struct strb_jbuf *b, strb_i128 ns)
{
	if (ns < 0)
		strb_jbuf_raw(b, "-", 1);
	strb_i128 m = ns < 0 ? -ns : ns;
	/* 64-bit division when it fits (always, but for times centuries
	 * apart): 128-bit division is a library call. */
	uint64_t q, f;
	if (m <= (strb_i128)UINT64_MAX) {
		q = (uint64_t)m / 1000;
		f = (uint64_t)m % 1000;
	} else {
		q = (uint64_t)(m / 1000);
		f = (uint64_t)(m % 1000);
	}
	strb_jbuf_u64(b, q);
	char frac[4] = {'.', (char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10)};
	strb_jbuf_raw(b, frac, sizeof(frac));
}

/* `to - from` in µs, however far apart. */
static void us_since(struct strb_jbuf *b, int64_t to, int64_t from)
{
	us(b, (strb_i128)to - from);
}

/* An activity's text from its `{"ph"` to its `"ts": ` depends only on its
 * type, name, category and row, which repeat: each thread keeps the last
 * one it wrote for each of HEAD_SLOTS hashes of those, and copies it when
 * they match. Names and categories are compared by address (a trace's
 * strings are interned, and two copies of one only cost a slot each). */
#define HEAD_SLOTS 1024
#define HEAD_TEXT  200

struct head_slot {
	const char *name, *category;
	int64_t device, resource;
	uint32_t type;
	uint32_t len; /* 0 while empty */
	char text[HEAD_TEXT];
};

struct writer {
	struct strb_jbuf *b;
	const struct strobe_trace *t;
	int64_t base;
	struct head_slot *heads;         /* HEAD_SLOTS of them, this thread's; NULL: none */
	struct strb_arg_scratch scratch; /* rendered args of the activity being written */
};

static void arg_value(struct strb_jbuf *b, const struct strobe_arg *a)
{
	switch (a->kind) {
	case STROBE_ARG_I64:
		strb_jbuf_i64(b, a->value.i64);
		break;
	case STROBE_ARG_U64:
		strb_jbuf_u64(b, a->value.u64);
		break;
	case STROBE_ARG_F64:
		strb_jbuf_f64(b, a->value.f64);
		break;
	case STROBE_ARG_BOOL:
		strb_jbuf_lit(b, a->value.b ? "true" : "false");
		break;
	case STROBE_ARG_JSON:
		strb_jbuf_lit(b, a->value.str);
		break;
	default:
		strb_jbuf_str(b, a->value.str);
		break;
	}
}

static void key(struct strb_jbuf *b, const char *k)
{
	strb_jbuf_str(b, k);
	strb_jbuf_raw(b, ": ", 2);
}

/* libkineto gives GPU work and API calls no External id of their own: only
 * the op they are linked to. */
static bool own_id_hidden(enum strobe_activity_type type)
{
	switch (type) {
	case STROBE_ACTIVITY_GPU_MEMCPY:
	case STROBE_ACTIVITY_GPU_MEMSET:
	case STROBE_ACTIVITY_CONCURRENT_KERNEL:
	case STROBE_ACTIVITY_CUDA_RUNTIME:
	case STROBE_ACTIVITY_CUDA_DRIVER:
	case STROBE_ACTIVITY_XPU_RUNTIME:
	case STROBE_ACTIVITY_XPU_DRIVER:
	case STROBE_ACTIVITY_PRIVATEUSE1_RUNTIME:
	case STROBE_ACTIVITY_PRIVATEUSE1_DRIVER:
		return true;
	default:
		return false;
	}
}

bool strb_output_is_counter(enum strobe_activity_type type)
{
	return type == STROBE_ACTIVITY_CPU_COUNTER || type == STROBE_ACTIVITY_MTIA_COUNTERS ||
	       type == STROBE_ACTIVITY_XPU_SCOPE_PROFILER || type == STROBE_ACTIVITY_HARDWARE_COUNTERS;
}

/* The event's common head: {"ph": "X", "cat": ..., "name": ..., "pid": ..., "tid": ..., "ts": ... */
static struct head_slot *head_slot(const struct writer *w, const struct strobe_activity *a)
{
	uint64_t h = (uint64_t)(uintptr_t)a->name * 0x9e3779b97f4a7c15ull;
	h ^= (uint64_t)(uintptr_t)a->category + (h << 6) + (h >> 2);
	h ^= (uint64_t)a->device * 0xff51afd7ed558ccdull + (uint64_t)a->resource * 0xc4ceb9fe1a85ec53ull;
	h ^= (uint64_t)a->type << 17;
	h ^= h >> 29;
	return &w->heads[(h * 0x9e3779b97f4a7c15ull >> 40) % HEAD_SLOTS];
}

static void head(struct writer *w, const char *ph, const struct strobe_activity *a, strb_i128 ts)
{
	struct strb_jbuf *b = w->b;
	struct head_slot *hs = w->heads ? head_slot(w, a) : NULL;
	if (hs && hs->len && hs->name == a->name && hs->category == a->category && hs->device == a->device &&
	    hs->resource == a->resource && hs->type == (uint32_t)a->type) {
		strb_jbuf_raw(b, hs->text, hs->len);
		us(b, ts - w->base);
		return;
	}
	size_t at = b->n, flushes = b->flushes;
	strb_jbuf_lit(b, "{\"ph\": \"");
	strb_jbuf_lit(b, ph);
	strb_jbuf_lit(b, "\", \"cat\": ");
	if (a->category) {
		strb_jbuf_str(b, a->category);
	} else {
		strb_jbuf_lit(b, "\"");
		strb_jbuf_lit(b, strobe_activity_type_name(a->type));
		strb_jbuf_lit(b, "\"");
	}
	if (ph[0] == 'i')
		strb_jbuf_lit(b, ", \"s\": \"t\"");
	strb_jbuf_lit(b, ", \"name\": ");
	strb_jbuf_str(b, a->name);
	strb_jbuf_lit(b, ", \"pid\": ");
	strb_jbuf_i64(b, a->device);
	strb_jbuf_lit(b, ", \"tid\": ");
	strb_jbuf_i64(b, a->resource < 0 ? (a->resource == INT64_MIN ? 0 : -a->resource) : a->resource);
	strb_jbuf_lit(b, ", \"ts\": ");
	size_t len = b->n - at;
	if (hs && b->flushes == flushes && len <= HEAD_TEXT) {
		*hs = (struct head_slot){.name = a->name,
		                         .category = a->category,
		                         .device = a->device,
		                         .resource = a->resource,
		                         .type = (uint32_t)a->type,
		                         .len = (uint32_t)len};
		memcpy(hs->text, b->data + at, len);
	}
	us(b, ts - w->base);
}

uint64_t strb_output_external_id(const struct strobe_activity *a)
{
	return a->linked_id ? a->linked_id : own_id_hidden(a->type) ? 0 : a->id;
}

static void args(struct writer *w, const struct strobe_activity *a, const struct strobe_arg *av, size_t an,
                 bool with_ids)
{
	struct strb_jbuf *b = w->b;
	uint64_t ext = with_ids ? strb_output_external_id(a) : 0;
	bool unfinished = a->flags & STROBE_ACTIVITY_UNFINISHED;
	if (!ext && !an && !unfinished)
		return;
	strb_jbuf_lit(b, ", \"args\": {");
	bool first = true;
	if (ext) {
		strb_jbuf_lit(b, "\"External id\": ");
		strb_jbuf_u64(b, ext);
		first = false;
	}
	for (size_t i = 0; i < an; i++) {
		if (!first)
			strb_jbuf_raw(b, ", ", 2);
		key(b, av[i].key);
		arg_value(b, &av[i]);
		first = false;
	}
	if (unfinished)
		strb_jbuf_lit(b, first ? "\"finished\": false" : ", \"finished\": false");
	strb_jbuf_raw(b, "}", 1);
}

static void flow(struct writer *w, const struct strobe_activity *a)
{
	if (!a->flow_id)
		return;
	const char *cat = a->flow_kind == STROBE_FLOW_FWDBWD          ? "fwdbwd"
	                  : a->flow_kind == STROBE_FLOW_ASYNC_CPU_GPU ? "ac2g"
	                                                              : NULL;
	if (!cat)
		return;
	struct strb_jbuf *b = w->b;
	bool start = a->flags & STROBE_ACTIVITY_FLOW_START;
	strb_jbuf_lit(b, start ? "{\"ph\": \"s\", \"id\": " : "{\"ph\": \"f\", \"id\": ");
	strb_jbuf_u64(b, a->flow_id);
	strb_jbuf_lit(b, ", \"pid\": ");
	strb_jbuf_i64(b, a->device);
	strb_jbuf_lit(b, ", \"tid\": ");
	strb_jbuf_i64(b, a->resource < 0 ? (a->resource == INT64_MIN ? 0 : -a->resource) : a->resource);
	strb_jbuf_lit(b, ", \"ts\": ");
	us_since(b, a->start_ns, w->base);
	strb_jbuf_lit(b, ", \"cat\": \"");
	strb_jbuf_lit(b, cat);
	strb_jbuf_lit(b, "\", \"name\": \"");
	strb_jbuf_lit(b, cat);
	strb_jbuf_lit(b, start ? "\"},\n" : "\", \"bp\": \"e\"},\n");
}

static void activity(struct writer *w, size_t idx)
{
	struct strb_jbuf *b = w->b;
	struct strb_act_ref r;
	const struct strobe_arg *av;
	size_t an = strb_trace_get_args(w->t, idx, &r, &w->scratch, &av);
	const struct strobe_activity *a = r.a;
	if (a->type == STROBE_ACTIVITY_CPU_INSTANT_EVENT) {
		head(w, "i", a, a->start_ns);
		args(w, a, av, an, false);
	} else if (strb_output_is_counter(a->type)) {
		head(w, "C", a, a->start_ns);
		strb_jbuf_lit(b, ", \"args\": {");
		for (size_t i = 0; i < an; i++) {
			if (i)
				strb_jbuf_raw(b, ", ", 2);
			key(b, av[i].key);
			arg_value(b, &av[i]);
		}
		strb_jbuf_raw(b, "}", 1);
	} else {
		strb_i128 start = a->start_ns, dur = (strb_i128)a->end_ns - a->start_ns;
		if (a->type == STROBE_ACTIVITY_GPU_USER_ANNOTATION) {
			/* Widened by 1 ns each side so viewers show it enclosing its GPU work. */
			start -= 1;
			dur += 2;
		}
		head(w, "X", a, start);
		strb_jbuf_lit(b, ", \"dur\": ");
		us(b, dur);
		args(w, a, av, an, true);
	}
	strb_jbuf_raw(b, "},\n", 3);
	flow(w, a);
}

/* ---- the activities, formatted in parallel -------------------------------
 *
 * A large trace's activities are cut into chunks of CHUNK_ACTS that worker
 * threads format, each into memory of its own, while the saving thread
 * writes the chunks out in order: the file is byte for byte what one
 * thread writes. While the chunk it is to write next is not ready, the
 * saving thread formats the next free one itself, so n threads in all
 * format (n - 1 workers). Chunks are taken in order, never more than
 * `nslots` ahead of the writer, so memory stays at a few chunks. */
#define CHUNK_ACTS 4096

struct chunk_slot {
	struct strb_jbuf *b; /* the chunk's text in b->mem */
	size_t chunk;
	bool ready;
};

struct pool {
	const struct writer *proto;
	size_t nchunks, next, written, nslots;
	struct chunk_slot *slots; /* chunk c goes in slots[c % nslots] */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
};

static void format_chunk(struct writer *w, size_t c)
{
	size_t to = (c + 1) * CHUNK_ACTS < w->t->count ? (c + 1) * CHUNK_ACTS : w->t->count;
	for (size_t i = c * CHUNK_ACTS; i < to; i++)
		activity(w, i);
	strb_jbuf_flush(w->b);
}

/* Whether a chunk is free to take: one is left and its slot is written. */
static bool can_take(const struct pool *p)
{
	return !p->stop && p->next < p->nchunks && p->next < p->written + p->nslots;
}

/* Takes the next chunk and formats it into its slot with a copy of the
 * writer (p->lock held; dropped while formatting). */
static void take_chunk(struct pool *p, struct head_slot *heads)
{
	size_t c = p->next++;
	struct chunk_slot *s = &p->slots[c % p->nslots];
	pthread_mutex_unlock(&p->lock);
	struct writer w = *p->proto;
	w.heads = heads;
	w.b = s->b;
	w.b->n = w.b->mem_len = 0;
	w.b->err = 0;
	format_chunk(&w, c);
	pthread_mutex_lock(&p->lock);
	s->chunk = c;
	s->ready = true;
	pthread_cond_broadcast(&p->cond);
}

static void *format_main(void *arg)
{
	struct pool *p = arg;
	struct head_slot *heads = calloc(HEAD_SLOTS, sizeof(*heads)); /* none: written each time */
	pthread_mutex_lock(&p->lock);
	for (;;) {
		while (!p->stop && p->next < p->nchunks && !can_take(p))
			pthread_cond_wait(&p->cond, &p->lock);
		if (!can_take(p))
			break;
		take_chunk(p, heads);
	}
	pthread_mutex_unlock(&p->lock);
	free(heads);
	return NULL;
}

/* Writes the chunks in order as workers finish them; false when no worker
 * could be started (the caller writes them itself). */
static bool activities_parallel(struct writer *w, int nworkers)
{
	struct pool p = {.proto = w, .nchunks = (w->t->count + CHUNK_ACTS - 1) / CHUNK_ACTS};
	p.nslots = (size_t)(nworkers + 1) * 4;
	p.slots = calloc(p.nslots, sizeof(*p.slots));
	pthread_t tids[STRB_EXPORT_THREADS_MAX];
	int started = 0;
	bool ok = p.slots != NULL;
	for (size_t i = 0; ok && i < p.nslots; i++)
		ok = (p.slots[i].b = strb_jbuf_new(NULL)) != NULL;
	pthread_mutex_init(&p.lock, NULL);
	pthread_cond_init(&p.cond, NULL);
	if (ok) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		while (started < nworkers && pthread_create(&tids[started], NULL, format_main, &p) == 0)
			started++;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	struct strb_jbuf *b = w->b;
	for (size_t c = 0; started && c < p.nchunks; c++) {
		struct chunk_slot *s = &p.slots[c % p.nslots];
		pthread_mutex_lock(&p.lock);
		while (!(s->ready && s->chunk == c)) {
			if (can_take(&p))
				take_chunk(&p, w->heads);
			else
				pthread_cond_wait(&p.cond, &p.lock);
		}
		pthread_mutex_unlock(&p.lock);
		strb_jbuf_flush(b);
		if (!b->err)
			b->err = s->b->err ? s->b->err : strb_sink_write(b->sink, s->b->mem, s->b->mem_len);
		pthread_mutex_lock(&p.lock);
		s->ready = false;
		p.written = c + 1;
		p.stop = b->err != 0;
		pthread_cond_broadcast(&p.cond);
		pthread_mutex_unlock(&p.lock);
		if (b->err)
			break;
	}
	pthread_mutex_lock(&p.lock);
	p.stop = true;
	pthread_cond_broadcast(&p.cond);
	pthread_mutex_unlock(&p.lock);
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	for (size_t i = 0; p.slots && i < p.nslots; i++) {
		if (p.slots[i].b)
			free(p.slots[i].b->mem);
		free(p.slots[i].b);
	}
	free(p.slots);
	pthread_mutex_destroy(&p.lock);
	pthread_cond_destroy(&p.cond);
	return started > 0;
}

static void activities(struct writer *w)
{
	int n = w->t->count >= 2 * CHUNK_ACTS ? strb_export_threads() : 1;
	if (n > 1 && activities_parallel(w, n - 1))
		return;
	for (size_t i = 0; i < w->t->count; i++)
		activity(w, i);
}

/* {"ph": "M", "name": <what>, "ts": <start>, "pid": <pid>, "tid": <tid>, "args": {<key>: */
static void meta_head(struct writer *w, const char *what, int64_t pid, int64_t tid, const char *arg_key)
{
	struct strb_jbuf *b = w->b;
	strb_jbuf_lit(b, "{\"ph\": \"M\", \"name\": \"");
	strb_jbuf_lit(b, what);
	strb_jbuf_lit(b, "\", \"ts\": ");
	us_since(b, w->t->start_ns, w->base);
	strb_jbuf_lit(b, ", \"pid\": ");
	strb_jbuf_i64(b, pid);
	strb_jbuf_lit(b, ", \"tid\": ");
	strb_jbuf_i64(b, tid);
	strb_jbuf_lit(b, ", \"args\": {\"");
	strb_jbuf_lit(b, arg_key);
	strb_jbuf_lit(b, "\": ");
}

static void meta_str(struct writer *w, const char *what, int64_t pid, int64_t tid, const char *arg_key,
                     const char *value)
{
	meta_head(w, what, pid, tid, arg_key);
	strb_jbuf_str(w->b, value);
	strb_jbuf_lit(w->b, "}},\n");
}

static void meta_int(struct writer *w, const char *what, int64_t pid, int64_t tid, const char *arg_key,
                     int64_t value)
{
	meta_head(w, what, pid, tid, arg_key);
	strb_jbuf_i64(w->b, value);
	strb_jbuf_lit(w->b, "}},\n");
}

static void resource(struct writer *w, const struct strobe_resource *r)
{
	int64_t tid = r->resource < 0 ? -r->resource : r->resource;
	switch (r->kind) {
	case STROBE_RESOURCE_PROCESS:
		meta_str(w, "process_name", r->device, 0, "name", r->name);
		if (r->label)
			meta_str(w, "process_labels", r->device, 0, "labels", r->label);
		meta_int(w, "process_sort_index", r->device, 0, "sort_index", r->sort_index);
		return;
	case STROBE_RESOURCE_THREAD: {
		/* libkineto's row title: "thread <tid> (<name>)". */
		char title[STRB_THREAD_NAME_MAX + 64];
		snprintf(title, sizeof(title), "thread %lld (%s)", (long long)r->resource, r->name);
		meta_str(w, "thread_name", r->device, tid, "name", title);
		break;
	}
	default:
		meta_str(w, "thread_name", r->device, tid, "name", r->name);
		break;
	}
	meta_int(w, "thread_sort_index", r->device, tid, "sort_index", r->sort_index);
}

/* One span covering the window, as libkineto writes one per CPU trace
 * buffer, so tools that group by span find one. */
static void span(struct writer *w)
{
	struct strb_jbuf *b = w->b;
	const struct strobe_trace *t = w->t;
	size_t ops = strb_trace_count_type(t, STROBE_ACTIVITY_CPU_OP);
	strb_jbuf_lit(b, "{\"ph\": \"X\", \"cat\": \"Trace\", \"name\": \"" SPAN_NAME
	                 " (0)\", \"pid\": \"Spans\", "
	                 "\"tid\": \"" SPAN_NAME "\", \"ts\": ");
	us_since(b, t->start_ns, w->base);
	strb_jbuf_lit(b, ", \"dur\": ");
	us_since(b, t->end_ns, t->start_ns);
	strb_jbuf_lit(b, ", \"args\": {\"Op count\": ");
	strb_jbuf_u64(b, ops);
	strb_jbuf_lit(b, "}},\n{\"ph\": \"M\", \"name\": \"process_sort_index\", \"ts\": ");
	us_since(b, t->start_ns, w->base);
	strb_jbuf_lit(b, ", \"pid\": \"Spans\", \"tid\": 0, \"args\": {\"sort_index\": ");
	strb_jbuf_i64(b, SPAN_SORT_INDEX);
	strb_jbuf_lit(b, "}},\n{\"ph\": \"i\", \"s\": \"g\", \"name\": \"Iteration Start: " SPAN_NAME
	                 "\", \"pid\": \"Traces\", \"tid\": \"Trace " SPAN_NAME "\", \"ts\": ");
	us_since(b, t->start_ns, w->base);
	strb_jbuf_lit(b, "},\n");
}

/* A top-level JSON value (already checked to parse) in the layout libkineto
 * and Python's json.dumps give it: ": " after each key and ", " between
 * members. Tools read some of it with regular expressions: HTA finds the
 * rank with "rank":\s+(\d+). */
static void json_spaced(struct strb_jbuf *b, const char *json)
{
	const char *run = json;
	bool in_str = false;
	for (const char *p = json; *p; p++) {
		if (in_str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_str = false;
		} else if (*p == '"') {
			in_str = true;
		} else if ((*p == ':' || *p == ',') && p[1] != ' ' && p[1] != '\n') {
			strb_jbuf_raw(b, run, (size_t)(p + 1 - run));
			strb_jbuf_raw(b, " ", 1);
			run = p + 1;
		}
	}
	strb_jbuf_lit(b, run);
}

static void document(struct writer *w, const char *path)
{
	struct strb_jbuf *b = w->b;
	const struct strobe_trace *t = w->t;
	strb_jbuf_lit(b, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [");
	strb_jbuf_lit(b, t->device_properties);
	strb_jbuf_lit(b, "],\n");
	for (size_t i = 0; i < t->meta_count; i++) {
		strb_jbuf_lit(b, "  ");
		key(b, t->meta[i].key);
		if (t->meta[i].kind == STROBE_ARG_JSON)
			json_spaced(b, t->meta[i].value.str);
		else
			arg_value(b, &t->meta[i]);
		strb_jbuf_lit(b, ",\n");
	}
	strb_jbuf_lit(b, "  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": ");
	strb_jbuf_i64(b, w->base);
	strb_jbuf_lit(b, ",\n  \"traceEvents\": [\n");
	for (size_t i = 0; i < t->res_count; i++)
		resource(w, &t->res[i]);
	activities(w);
	span(w);
	strb_jbuf_lit(
	    b, "{\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", "
	       "\"ts\": ");
	us_since(b, t->end_ns, w->base);
	strb_jbuf_lit(b, "}\n  ],\n  \"traceName\": ");
	strb_jbuf_str(b, path);
	strb_jbuf_lit(b, "\n}\n");
}

int strb_json_write(const strobe_trace *t, const char *path, void *user_arg)
{
	(void)user_arg;
	struct strb_sink *sink;
	int rc = strb_sink_open(&sink, path, strb_compress_for_path(path), -1);
	return rc ? rc : strb_json_write_sink(t, sink, path);
}

int strb_json_write_sink(const strobe_trace *t, struct strb_sink *sink, const char *path)
{
	struct strb_jbuf *b = strb_jbuf_new(sink);
	if (!b) {
		strb_sink_abort(sink);
		return strb_error(-ENOMEM, "out of memory writing %s", path);
	}
	int rc;
	int64_t base = t->start_ns > 0 ? t->start_ns / BASE_PERIOD_NS * BASE_PERIOD_NS : 0;
	struct writer w = {
	    .b = b, .t = t, .base = base, .heads = calloc(HEAD_SLOTS, sizeof(struct head_slot))};
	document(&w, path);
	free(w.heads);
	strb_jbuf_flush(b);
	if (b->err) {
		rc = b->err;
		strb_sink_abort(b->sink);
	} else {
		rc = strb_sink_commit(b->sink);
	}
	free(b);
	if (!rc)
		LOGI("trace written to %s", path);
	return rc;
}

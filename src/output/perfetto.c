/* A strobe trace as a Perfetto protobuf trace (docs/output-format.md):
 * one track per process, thread, stream and named row, as the JSON names
 * them; slices as begin/end pairs, instants, counters on counter tracks,
 * flows, and the trace metadata as annotations of one instant. */
#define LOG_TAG "perfetto"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/pfenc.h"
#include "common/sink.h"
#include "core/tbuf.h"
#include "output/output.h"
#include "process/trace.h"

#define SPAN_NAME "strobe"

/* Items past the activities: the metadata instant (written first, not
 * sorted), the window's end, and the window's span. */
enum { SPECIAL_METADATA, SPECIAL_WINDOW_END, SPECIAL_SPAN, SPECIALS };

struct pwriter {
	struct strb_pfenc *e;
	const struct strobe_trace *t;
	struct strb_pfmap procs, rows, counters;
	struct strobe_arg *args; /* scratch: an activity's annotations */
	size_t args_cap;
	struct strb_arg_scratch rendered; /* rendered args of the activity being written */
	uint64_t meta, spans;             /* the "Trace metadata" and "Spans" tracks */
	unsigned ibits;                   /* bits of an item's index in a packed item */
	/* Per item index: a slice's begin and end as written (item_span), an
	 * instant's or counter's time twice; and whether it is a slice. Once
	 * the items are sorted and a slice's begin is written, its begin
	 * time is not read again: span[i][0] holds its track then, for the
	 * end (which need not decode the activity again). */
	int64_t (*span)[2];
	bool *is_slice;
	size_t ops;                 /* CPU ops, for the window's span */
	int64_t last_pid, last_tid; /* the last row looked up, and its track */
	uint64_t last_row;
	uint64_t last_counter; /* the last counter track looked up, and what it is for */
	int64_t last_counter_device;
	const char *last_counter_name, *last_counter_key;
	int err;
};

static void note(struct pwriter *w, int rc)
{
	if (rc && !w->err)
		w->err = rc;
}

static uint64_t process_track(struct pwriter *w, int64_t pid)
{
	uint64_t key = strb_pfmap_key(0, (uint64_t)pid);
	uint64_t uuid = strb_pfmap_get(&w->procs, key);
	if (!uuid) {
		uuid = strb_pfenc_uuid(w->e);
		note(w, strb_pfmap_put(&w->procs, key, uuid));
		strb_pfenc_process(w->e, uuid, pid, NULL, NULL, pid);
	}
	return uuid;
}

/* The track of a JSON (pid, tid) row; rows nobody named get one: a thread
 * of this process, or a row under its device. */
static uint64_t row_track(struct pwriter *w, int64_t pid, int64_t tid)
{
	if (w->last_row && pid == w->last_pid && tid == w->last_tid)
		return w->last_row;
	uint64_t key = strb_pfmap_key((uint64_t)pid, (uint64_t)tid);
	uint64_t uuid = strb_pfmap_get(&w->rows, key);
	if (uuid) {
		w->last_pid = pid;
		w->last_tid = tid;
		w->last_row = uuid;
		return uuid;
	}
	uuid = strb_pfenc_uuid(w->e);
	note(w, strb_pfmap_put(&w->rows, key, uuid));
	if (pid == w->t->pid) {
		strb_pfenc_thread(w->e, uuid, pid, tid, NULL, tid);
	} else {
		char name[48];
		snprintf(name, sizeof(name), "row %lld", (long long)tid);
		strb_pfenc_track(w->e, uuid, process_track(w, pid), name);
	}
	return uuid;
}

/* A row's tid: libkineto's GPU rows are negative resources. */
static int64_t row_tid(int64_t resource)
{
	return resource >= 0 ? resource : resource == INT64_MIN ? INT64_MAX : -resource;
}

/* Each track is described once, the first time it is named or used:
 * processes before the rows under them (the caller's order), so no row
 * makes a nameless process that its name would have to describe again. */
static void resource(struct pwriter *w, const struct strobe_resource *r)
{
	int64_t tid = row_tid(r->resource);
	if (r->kind == STROBE_RESOURCE_PROCESS) {
		uint64_t key = strb_pfmap_key(0, (uint64_t)r->device);
		if (strb_pfmap_get(&w->procs, key))
			return;
		uint64_t uuid = strb_pfenc_uuid(w->e);
		note(w, strb_pfmap_put(&w->procs, key, uuid));
		strb_pfenc_process(w->e, uuid, r->device, r->name, r->label, r->sort_index);
		return;
	}
	uint64_t key = strb_pfmap_key((uint64_t)r->device, (uint64_t)tid);
	if (strb_pfmap_get(&w->rows, key))
		return;
	uint64_t uuid = strb_pfenc_uuid(w->e);
	note(w, strb_pfmap_put(&w->rows, key, uuid));
	if (r->kind == STROBE_RESOURCE_THREAD)
		strb_pfenc_thread(w->e, uuid, r->device, tid, r->name, r->sort_index);
	else
		strb_pfenc_track(w->e, uuid, process_track(w, r->device), r->name);
}

static struct strobe_arg *scratch_args(struct pwriter *w, size_t n)
{
	if (n > w->args_cap) {
		struct strobe_arg *na = realloc(w->args, n * sizeof(*na));
		if (!na) {
			note(w, -ENOMEM);
			return NULL;
		}
		w->args = na;
		w->args_cap = n;
	}
	return w->args;
}

static bool arg_number(const struct strobe_arg *a, double *v)
{
	switch (a->kind) {
	case STROBE_ARG_I64:
		*v = (double)a->value.i64;
		return true;
	case STROBE_ARG_U64:
		*v = (double)a->value.u64;
		return true;
	case STROBE_ARG_F64:
		*v = a->value.f64;
		return true;
	case STROBE_ARG_BOOL:
		*v = a->value.b;
		return true;
	default:
		return false;
	}
}

/* One counter track per (process, counter, series); a series named like
 * its counter (strobe_counter's) is just the counter's name. */
static uint64_t counter_track(struct pwriter *w, const struct strobe_activity *a,
                              const struct strobe_arg *arg)
{
	/* The trace's names and keys are interned: equal pointers, equal
	 * strings, so the last counter's track is found without hashing. */
	if (w->last_counter && a->device == w->last_counter_device && a->name == w->last_counter_name &&
	    arg->key == w->last_counter_key)
		return w->last_counter;
	const char *key = arg->key ? arg->key : "";
	uint64_t ck =
	    strb_pfmap_key(strb_pfmap_key((uint64_t)a->device, strb_pfmap_str(a->name)), strb_pfmap_str(key));
	uint64_t uuid = strb_pfmap_get(&w->counters, ck);
	if (!uuid) {
		uuid = strb_pfenc_uuid(w->e);
		note(w, strb_pfmap_put(&w->counters, ck, uuid));
		char name[STRB_NAME_MAX * 2 + 4];
		if (!*key || !strcmp(key, a->name))
			snprintf(name, sizeof(name), "%s", a->name);
		else
			snprintf(name, sizeof(name), "%s %s", a->name, key);
		strb_pfenc_counter_track(w->e, uuid, process_track(w, a->device), name,
		                         strobe_activity_type_name(a->type));
	}
	w->last_counter = uuid;
	w->last_counter_device = a->device;
	w->last_counter_name = a->name;
	w->last_counter_key = arg->key;
	return uuid;
}

static void counter(struct pwriter *w, const struct strobe_activity *a, const struct strobe_arg *av,
                    size_t an)
{
	for (size_t i = 0; i < an; i++) {
		const struct strobe_arg *arg = &av[i];
		double v;
		if (!arg_number(arg, &v))
			continue;
		uint64_t uuid = counter_track(w, a, arg);
		struct strb_pf_event ev = {
		    .type = STRB_PF_COUNTER, .track = uuid, .ts_ns = a->start_ns, .value = v};
		strb_pfenc_event(w->e, &ev);
	}
}

/* An item's times: a slice's begin and end as written (a GPU user
 * annotation widened as in the JSON, so it encloses its GPU work; an end
 * before the begin held at it), an instant's or counter's time twice.
 * True for a slice. Counts the CPU ops in w->ops. */
static bool item_span(struct pwriter *w, size_t idx, int64_t *b, int64_t *e)
{
	const struct strobe_trace *t = w->t;
	if (idx == t->count + SPECIAL_SPAN) {
		*b = t->start_ns;
		*e = t->end_ns < t->start_ns ? t->start_ns : t->end_ns;
		return true;
	}
	if (idx >= t->count) {
		*b = *e = idx == t->count + SPECIAL_WINDOW_END ? t->end_ns : t->start_ns;
		return false;
	}
	struct strb_act_ref r;
	strb_trace_get(t, idx, &r);
	const struct strobe_activity *a = r.a;
	w->ops += a->type == STROBE_ACTIVITY_CPU_OP;
	if (strb_output_is_counter(a->type) || a->type == STROBE_ACTIVITY_CPU_INSTANT_EVENT) {
		*b = *e = a->start_ns;
		return false;
	}
	*b = a->start_ns;
	*e = a->end_ns;
	if (a->type == STROBE_ACTIVITY_GPU_USER_ANNOTATION) {
		*b -= 1;
		*e += 1;
	}
	if (*e < *b)
		*e = *b;
	return true;
}

/* A slice's begin packet. */
static void begin_packet(struct pwriter *w, size_t idx)
{
	const struct strobe_trace *t = w->t;
	if (idx == t->count + SPECIAL_SPAN) {
		struct strobe_arg op_count = {.key = "Op count", .kind = STROBE_ARG_U64, .value.u64 = w->ops};
		struct strb_pf_event ev = {.type = STRB_PF_BEGIN,
		                           .track = w->spans,
		                           .ts_ns = t->start_ns,
		                           .name = SPAN_NAME " (0)",
		                           .category = "Trace",
		                           .args = &op_count,
		                           .nargs = 1};
		strb_pfenc_event(w->e, &ev);
		return;
	}
	struct strb_act_ref r;
	const struct strobe_arg *av;
	size_t an = strb_trace_get_args(t, idx, &r, &w->rendered, &av);
	const struct strobe_activity *a = r.a;
	uint64_t track = row_track(w, a->device, row_tid(a->resource));
	struct strb_pf_event ev = {
	    .type = STRB_PF_BEGIN,
	    .track = track,
	    .ts_ns = w->span[idx][0],
	    .name = a->name,
	    .category = a->category ? a->category : strobe_activity_type_name(a->type),
	    .args = av,
	    .nargs = an,
	};
	w->span[idx][0] = (int64_t)track; /* the begin time is read; the end wants the track */
	uint64_t ext = strb_output_external_id(a);
	bool unfinished = a->flags & STROBE_ACTIVITY_UNFINISHED;
	if (ext || unfinished) {
		struct strobe_arg *all = scratch_args(w, an + 2);
		if (!all)
			return;
		size_t n = 0;
		if (ext)
			all[n++] = (struct strobe_arg){
			    .key = "External id", .kind = STROBE_ARG_U64, .value.u64 = ext};
		if (an)
			memcpy(all + n, av, an * sizeof(*all));
		n += an;
		if (unfinished)
			all[n++] =
			    (struct strobe_arg){.key = "finished", .kind = STROBE_ARG_BOOL, .value.b = false};
		ev.args = all;
		ev.nargs = n;
	}
	if (a->flow_id && (a->flow_kind == STROBE_FLOW_FWDBWD || a->flow_kind == STROBE_FLOW_ASYNC_CPU_GPU)) {
		uint64_t id = strb_output_flow_uuid(a->flow_id, a->flow_kind);
		if (a->flags & STROBE_ACTIVITY_FLOW_START)
			ev.flow_out = id;
		else
			ev.flow_in = id;
	}
	strb_pfenc_event(w->e, &ev);
}

static void end_packet(struct pwriter *w, size_t idx)
{
	const struct strobe_trace *t = w->t;
	/* The track its begin left in span[idx][0]. */
	uint64_t track = idx < t->count ? (uint64_t)w->span[idx][0] : w->spans;
	struct strb_pf_event done = {.type = STRB_PF_END, .track = track, .ts_ns = w->span[idx][1]};
	strb_pfenc_event(w->e, &done);
}

/* The metadata (strobe's accounting, host, job keys, what programs set)
 * and the device properties, as annotations of one instant at the start
 * of the "Trace metadata" track. */
static void metadata_packet(struct pwriter *w)
{
	const struct strobe_trace *t = w->t;
	size_t n = t->meta_count + 1;
	struct strobe_arg *args = scratch_args(w, n);
	if (!args)
		return;
	if (t->meta_count)
		memcpy(args, t->meta, t->meta_count * sizeof(*args));
	n = t->meta_count;
	char *props = NULL;
	if (t->device_properties && *t->device_properties) {
		size_t len = strlen(t->device_properties);
		props = malloc(len + 3);
		if (props) {
			props[0] = '[';
			memcpy(props + 1, t->device_properties, len);
			memcpy(props + 1 + len, "]", 2);
			args[n++] = (struct strobe_arg){
			    .key = "deviceProperties", .kind = STROBE_ARG_JSON, .value.str = props};
		}
	}
	struct strb_pf_event ev = {.type = STRB_PF_INSTANT,
	                           .track = w->meta,
	                           .ts_ns = t->start_ns,
	                           .name = STRB_PERFETTO_METADATA_EVENT,
	                           .args = args,
	                           .nargs = n};
	strb_pfenc_event(w->e, &ev);
	free(props);
}

/* An instant, a counter's samples, or a zero-length slice (its begin and
 * end together). */
static void point_packets(struct pwriter *w, size_t idx)
{
	const struct strobe_trace *t = w->t;
	if (idx == t->count + SPECIAL_WINDOW_END) {
		struct strb_pf_event ev = {.type = STRB_PF_INSTANT,
		                           .track = w->meta,
		                           .ts_ns = t->end_ns,
		                           .name = "Record Window End"};
		strb_pfenc_event(w->e, &ev);
		return;
	}
	if (w->is_slice[idx]) {
		begin_packet(w, idx);
		end_packet(w, idx);
		return;
	}
	struct strb_act_ref r;
	const struct strobe_arg *av;
	size_t an = strb_trace_get_args(t, idx, &r, &w->rendered, &av);
	const struct strobe_activity *a = r.a;
	if (strb_output_is_counter(a->type)) {
		counter(w, a, av, an);
		return;
	}
	struct strb_pf_event ev = {
	    .type = STRB_PF_INSTANT,
	    .track = row_track(w, a->device, row_tid(a->resource)),
	    .ts_ns = a->start_ns,
	    .name = a->name,
	    .category = a->category ? a->category : strobe_activity_type_name(a->type),
	    .args = av,
	    .nargs = an,
	};
	strb_pfenc_event(w->e, &ev);
}

/* ---- time order -------------------------------------------------------- */

/* Packets go out in time order: the sequence's clock is incremental, each
 * timestamp a delta from the one before (pfenc.h). An item is a packet to
 * write (or a group: an instant, a counter's samples, a zero-length
 * slice's begin and end), keyed by its time and, at equal times, by what
 * keeps slices nested on their tracks: first the ends of slices begun
 * earlier (inner ones first), then the instants and zero-length slices
 * (inside what is open there), then the begins (outer ones first). */
enum { ITEM_END, ITEM_POINT, ITEM_BEGIN };

/* The items in order. Packed: time since the first << 2 | class, then the
 * item's index (an activity's, or SPECIAL_* past them) in the low ibits,
 * one 64-bit word to radix-sort. Wide, when that does not fit (a trace
 * that spans hours with millions of events): sorted by comparison. */
struct item {
	uint64_t ts;   /* since the first */
	uint64_t what; /* index << 2 | class */
};

struct order {
	uint64_t *packed;
	struct item *wide;
	unsigned ibits;
	size_t n;
};

static void order_at(const struct order *o, size_t i, size_t *idx, unsigned *cls)
{
	if (o->packed) {
		*idx = (size_t)(o->packed[i] & ((1ull << o->ibits) - 1));
		*cls = (unsigned)(o->packed[i] >> o->ibits) & 3;
	} else {
		*idx = (size_t)(o->wide[i].what >> 2);
		*cls = (unsigned)o->wide[i].what & 3;
	}
}

/* Items of one time and class: ends of slices that began later first (the
 * inner one), begins of slices that end later first (the outer one);
 * among equal slices the later one is the inner one. */
static int cmp_same_time(const struct pwriter *w, unsigned cls, size_t i, size_t j)
{
	int64_t xb = w->span[i][0], xe = w->span[i][1], yb = w->span[j][0], ye = w->span[j][1];
	if (cls == ITEM_END) {
		if (xb != yb)
			return xb > yb ? -1 : 1;
		return i > j ? -1 : i < j;
	}
	if (cls == ITEM_BEGIN && xe != ye)
		return xe > ye ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int cmp_packed(const void *pa, const void *pb, void *arg)
{
	const struct pwriter *w = arg;
	uint64_t x = *(const uint64_t *)pa, y = *(const uint64_t *)pb, mask = (1ull << w->ibits) - 1;
	return cmp_same_time(w, (unsigned)(x >> w->ibits) & 3, (size_t)(x & mask), (size_t)(y & mask));
}

static int cmp_wide(const void *pa, const void *pb, void *arg)
{
	const struct item *x = pa, *y = pb;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if ((x->what & 3) != (y->what & 3))
		return (x->what & 3) < (y->what & 3) ? -1 : 1;
	return cmp_same_time(arg, (unsigned)x->what & 3, (size_t)(x->what >> 2), (size_t)(y->what >> 2));
}

/* A stable LSD radix sort on the bits from low up, 8 at a time, up to
 * the highest bit set (the bits below low are in order already). */
static bool radix_sort(uint64_t *v, size_t n, unsigned low, uint64_t max)
{
	enum { DIGIT = 8, BUCKETS = 1 << DIGIT };
	uint64_t *tmp = malloc(n * sizeof(*tmp));
	size_t *count = malloc(8 * BUCKETS * sizeof(*count));
	if (!tmp || !count) {
		free(tmp);
		free(count);
		return false;
	}
	unsigned passes = 0;
	while (passes < 8 && low + DIGIT * passes < 64 && max >> (low + DIGIT * passes))
		passes++;
	/* Every pass's counts in one read of the items. */
	memset(count, 0, passes * BUCKETS * sizeof(*count));
	for (size_t i = 0; i < n; i++)
		for (unsigned p = 0; p < passes; p++)
			count[p * BUCKETS + ((v[i] >> (low + DIGIT * p)) & (BUCKETS - 1))]++;
	uint64_t *src = v, *dst = tmp;
	for (unsigned p = 0; p < passes; p++) {
		unsigned shift = low + DIGIT * p;
		size_t pos = 0, *c = count + p * BUCKETS;
		for (size_t d = 0; d < BUCKETS; d++) {
			size_t k = c[d];
			c[d] = pos;
			pos += k;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[(src[i] >> shift) & (BUCKETS - 1)]++] = src[i];
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
	free(tmp);
	free(count);
	return true;
}

static unsigned bits_of(uint64_t v)
{
	return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

/* The trace's items in time order; *first gets the earliest time. */
static bool sort_items(struct pwriter *w, struct order *o, int64_t *first)
{
	const struct strobe_trace *t = w->t;
	size_t total = t->count + SPECIALS;
	int64_t lo = t->end_ns < t->start_ns ? t->end_ns : t->start_ns;
	int64_t hi = t->end_ns > t->start_ns ? t->end_ns : t->start_ns;
	/* One pass over the activities; the rest reads these. */
	w->span = malloc(total * sizeof(*w->span));
	w->is_slice = malloc(total * sizeof(*w->is_slice));
	if (!w->span || !w->is_slice)
		return false;
	for (size_t i = 0; i < total; i++) {
		int64_t b, e;
		w->is_slice[i] = item_span(w, i, &b, &e);
		w->span[i][0] = b;
		w->span[i][1] = e;
		lo = b < lo ? b : lo;
		hi = e > hi ? e : hi;
	}
	*first = lo;
	uint64_t range = (uint64_t)hi - (uint64_t)lo;
	w->ibits = bits_of(total);
	bool packed = range < (1ull << 61) && bits_of(range << 2 | 3) + w->ibits <= 64;
	*o = (struct order){.ibits = w->ibits};
	if (packed)
		o->packed = malloc(2 * total * sizeof(*o->packed));
	else
		o->wide = malloc(2 * total * sizeof(*o->wide));
	if (!o->packed && !o->wide)
		return false;
	size_t n = 0;
	for (size_t i = 0; i < total; i++) {
		int64_t b = w->span[i][0], e = w->span[i][1];
		uint64_t at[2];
		unsigned cls[2], k = 0;
		if (w->is_slice[i] && e > b) {
			at[k] = (uint64_t)b - (uint64_t)lo, cls[k++] = ITEM_BEGIN;
			at[k] = (uint64_t)e - (uint64_t)lo, cls[k++] = ITEM_END;
		} else if (i != t->count + SPECIAL_METADATA) {
			at[k] = (uint64_t)b - (uint64_t)lo, cls[k++] = ITEM_POINT;
		}
		for (unsigned j = 0; j < k; j++) {
			if (packed)
				o->packed[n++] = (at[j] << 2 | cls[j]) << w->ibits | i;
			else
				o->wide[n++] = (struct item){at[j], (uint64_t)i << 2 | cls[j]};
		}
	}
	o->n = n;
	if (!packed) {
		qsort_r(o->wide, n, sizeof(*o->wide), cmp_wide, w);
		return true;
	}
	/* Items are made in index order, so the index bits are sorted. */
	if (!radix_sort(o->packed, n, w->ibits, (range << 2 | 3) << w->ibits | ((1ull << w->ibits) - 1))) {
		free(o->packed);
		o->packed = NULL;
		return false;
	}
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t key = o->packed[i] >> w->ibits;
		for (j = i + 1; j < n && o->packed[j] >> w->ibits == key; j++)
			;
		if (j - i > 1 && (key & 3) != ITEM_POINT)
			qsort_r(o->packed + i, j - i, sizeof(*o->packed), cmp_packed, w);
	}
	return true;
}

static void free_order(struct pwriter *w, struct order *o)
{
	free(o->packed);
	free(o->wide);
	free(w->span);
	free(w->is_slice);
}

/* The track most events are on, written without its uuid, and the
 * counter track most samples are on, whose samples go on a sequence of
 * their own to be written without it too (from a sample of the trace). */
static void pick_default_tracks(struct pwriter *w)
{
	const struct strobe_trace *t = w->t;
	struct strb_pfmap seen = {0};
	size_t step = t->count / 4096 + 1, best[2] = {0, 0}, at[2] = {0, 0};
	for (size_t i = 0; i < t->count; i += step) {
		struct strb_act_ref r;
		strb_trace_get(t, i, &r);
		const struct strobe_activity *a = r.a;
		bool is_counter = strb_output_is_counter(a->type);
		uint64_t key = is_counter
		                   ? strb_pfmap_key((uint64_t)a->device, strb_pfmap_str(a->name))
		                   : strb_pfmap_key((uint64_t)a->device, (uint64_t)row_tid(a->resource));
		uint64_t c = strb_pfmap_get(&seen, key) + 1;
		if (strb_pfmap_put(&seen, key, c))
			break;
		if (c > best[is_counter]) {
			best[is_counter] = c;
			at[is_counter] = i;
		}
	}
	strb_pfmap_free(&seen);
	if (best[0]) {
		struct strb_act_ref r;
		strb_trace_get(t, at[0], &r);
		const struct strobe_activity *a = r.a;
		strb_pfenc_default_track(w->e, row_track(w, a->device, row_tid(a->resource)));
	}
	if (best[1]) {
		struct strb_act_ref r;
		strb_trace_get(t, at[1], &r);
		const struct strobe_arg *av;
		size_t an = strb_trace_args(t, &r, &w->rendered, &av);
		double v;
		for (size_t i = 0; i < an; i++)
			if (arg_number(&av[i], &v)) {
				strb_pfenc_counter_sequence(w->e, counter_track(w, r.a, &av[i]));
				break;
			}
	}
}

int strb_perfetto_write(const strobe_trace *t, const char *path, void *user_arg)
{
	(void)user_arg;
	struct strb_sink *sink;
	int rc = strb_sink_open(&sink, path, STRB_COMPRESS_NONE, -1);
	return rc ? rc : strb_perfetto_write_sink(t, sink, path);
}

int strb_perfetto_write_sink(const strobe_trace *t, struct strb_sink *sink, const char *path)
{
	struct pwriter w = {.t = t};
	struct order o = {0};
	int64_t first = 0;
	if (!sort_items(&w, &o, &first)) {
		free_order(&w, &o);
		strb_sink_abort(sink);
		return strb_error(-ENOMEM, "out of memory writing %s", path);
	}
	if (strb_pfenc_open(&w.e, sink, first, STRB_PFENC_STABLE_STRINGS | STRB_PFENC_INCREMENTAL)) {
		free_order(&w, &o);
		return strb_error(-ENOMEM, "out of memory writing %s", path);
	}
	/* The metadata first, as readers that write JSON want it (its
	 * members go before the events); events before the window's start
	 * come after it in time order, so go out in CLOCK_REALTIME. */
	w.meta = strb_pfenc_uuid(w.e);
	strb_pfenc_track(w.e, w.meta, 0, STRB_PERFETTO_METADATA_TRACK);
	metadata_packet(&w);
	w.spans = strb_pfenc_uuid(w.e);
	strb_pfenc_track(w.e, w.spans, 0, "Spans");
	for (int procs = 1; procs >= 0; procs--)
		for (size_t i = 0; i < t->res_count; i++)
			if ((t->res[i].kind == STROBE_RESOURCE_PROCESS) == procs)
				resource(&w, &t->res[i]);
	pick_default_tracks(&w);
	for (size_t i = 0; i < o.n && !w.err; i++) {
		size_t idx;
		unsigned cls;
		order_at(&o, i, &idx, &cls);
		switch (cls) {
		case ITEM_BEGIN:
			begin_packet(&w, idx);
			break;
		case ITEM_END:
			end_packet(&w, idx);
			break;
		default:
			point_packets(&w, idx);
			break;
		}
	}
	free_order(&w, &o);
	int rc = w.err;
	if (!rc)
		rc = strb_pfenc_error(w.e);
	if (rc) {
		strb_pfenc_abort(w.e);
		if (rc == -ENOMEM)
			rc = strb_error(rc, "out of memory writing %s", path);
	} else {
		rc = strb_pfenc_finish(w.e);
	}
	strb_pfmap_free(&w.procs);
	strb_pfmap_free(&w.rows);
	strb_pfmap_free(&w.counters);
	free(w.args);
	if (!rc)
		LOGI("trace written to %s", path);
	return rc;
}

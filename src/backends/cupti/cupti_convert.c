/* CUPTI records -> strobe activities. Two passes over the buffers, as
 * records arrive out of order within and across buffers: the first builds
 * the correlation tables, the second writes activities. Kernels, copies,
 * memsets and calls keep their record, and its buffer, with the trace,
 * which renders their args from it when written (cupti_args.c); a buffer
 * with none of those becomes arena memory for the args of later records.
 * GPU work is linked to strobe's ops and ranges through the call that
 * launched it: the innermost op (and range) open on that thread when the
 * call started. */
#define LOG_TAG "cupti"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti_args.h"
#include "backends/cupti/cupti_cuda.h"
#include "backends/cupti/cupti_names.h"
#include "backends/cupti/cupti_state.h"
#include "common/log.h"
#include "core/clock.h"
#include "process/process.h"

#define STREAM_SYNC_ROW_OFFSET  1000000 /* libkineto's virtual rows for "Stream Sync" */
#define GPU_SORT_OFFSET         5000000 /* GPU rows sort below every CPU pid */
#define OVERHEAD_PID            (-1)
#define OVERHEAD_SORT           1048576
#define MAX_DEVICES             STRB_CUPTI_MAX_DEVICES
#define STRB_CUPTI_VERSION_13_1 130100u /* kernel records carry the launch priority */

/* A runtime or driver call. */
struct api_call {
	uint32_t corr, cbid;
	CUpti_ActivityKind kind;
	pid_t tid;
	int64_t start, end;       /* epoch ns */
	uint64_t op_id, range_id; /* innermost strobe op / range around the call */
	bool emitted;             /* written to the trace (selected, in window, not filtered) */
	bool got_kernel;
};

/* What is known about one correlation id. */
struct corr_slot {
	uint32_t corr;       /* 0 = empty */
	int32_t call;        /* index in calls, or -1 */
	uint64_t ext0, ext1; /* CUPTI external ids: CUSTOM0 (ops), CUSTOM1 (ranges) */
};

struct cuda_event {
	uint32_t ctx, event, corr, stream;
};

/* An external correlation record, applied once the id table exists. */
struct ext_rec {
	uint32_t corr;
	CUpti_ExternalCorrelationKind kind;
	uint64_t id;
};

struct gpu_span {
	int64_t device, stream;
	uint64_t range_id;
	int64_t start, end;
};

struct conv {
	struct strobe_trace *t;
	const struct strb_window *w;
	const struct strb_cupti_lib *lib;
	struct strb_cupti_buffer *buffers;

	struct api_call *calls;
	size_t ncalls, calls_cap;
	struct ext_rec *exts;
	size_t nexts, exts_cap;
	struct corr_slot *slots;
	size_t slots_cap, slots_used;
	/* CUPTI numbers calls 1, 2, 3...: when the ids seen are dense, index
	 * them directly (sequential, cache-friendly) instead of hashing: the
	 * call (index + 1, 0 for none) and, only when there are external
	 * correlation records, the external ids. */
	int32_t *dense_call;
	struct ext_pair {
		uint64_t ext0, ext1;
	} * dense_ext;
	uint32_t dense_base, dense_len;
	/* Names of runtime and driver calls, per cbid, made once. */
	const char *api_names[2][1024];

	uint32_t ctx_device[2 * MAX_DEVICES][2]; /* (context, device) pairs */
	int nctx;
	struct cuda_event *events;
	size_t nevents, events_cap;
	/* Device limits and launch shapes, kept for rendering args. */
	struct strb_cupti_args *x;
	struct strb_cuda_device dev[MAX_DEVICES]; /* from DEVICE records, then the driver */
	bool device_seen[MAX_DEVICES];
	bool rendered; /* the buffer being walked has records the trace renders */

	/* (device, stream) rows that saw work, with the latest end on each
	 * (whether work overlapped on a row is known as it is written), and
	 * sync rows named so far. */
	uint64_t *rows;
	int64_t *row_end;
	size_t nrows, rows_cap, last_row;
	bool overlap;
	uint64_t *sync_rows;
	size_t nsync_rows, sync_rows_cap;

	struct gpu_span *spans;
	size_t nspans, spans_cap;

	/* Kernel names demangled once per CUPTI string. */
	const char **name_keys, **name_values;
	size_t names_cap, names_used;

	/* Deferred "Stream Wait Event" records (emitted only for busy streams),
	 * copied: their buffers are reused as trace memory before the end. */
	CUpti_ActivitySynchronization *waits;
	size_t nwaits, waits_cap;

	/* Records of a buffer lie close in time: most share a clock segment. */
	struct strb_clock_cursor clock;

	struct strb_trace_stats *st;
	int rc;
};

static bool grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 256;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

#define PUSH(c, arr, count, cap, value)                                                                      \
	do {                                                                                                 \
		if (!grow((void **)&(c)->arr, &(c)->cap, (c)->count + 1, sizeof(*(c)->arr)))                 \
			(c)->rc = -ENOMEM;                                                                   \
		else                                                                                         \
			(c)->arr[(c)->count++] = (value);                                                    \
	} while (0)

/* The hash table's entry for corr (sparse ids), created when asked. */
static struct corr_slot *slot(struct conv *c, uint32_t corr, bool create)
{
	if (create && (c->slots_used + 1) * 2 > c->slots_cap) {
		size_t cap = c->slots_cap ? c->slots_cap * 2 : 4096;
		struct corr_slot *n = calloc(cap, sizeof(*n));
		if (!n) {
			c->rc = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < c->slots_cap; i++) {
			if (!c->slots[i].corr)
				continue;
			size_t j = strb_cupti_hash32(c->slots[i].corr) & (cap - 1);
			while (n[j].corr)
				j = (j + 1) & (cap - 1);
			n[j] = c->slots[i];
		}
		free(c->slots);
		c->slots = n;
		c->slots_cap = cap;
	}
	if (!c->slots_cap)
		return NULL;
	size_t j = strb_cupti_hash32(corr) & (c->slots_cap - 1);
	while (c->slots[j].corr && c->slots[j].corr != corr)
		j = (j + 1) & (c->slots_cap - 1);
	if (c->slots[j].corr == corr)
		return &c->slots[j];
	if (!create)
		return NULL;
	c->slots[j] = (struct corr_slot){.corr = corr, .call = -1};
	c->slots_used++;
	return &c->slots[j];
}

/* What is known about a correlation id: its call (-1 for none) and
 * external ids (0 for none). */
struct corr_ref {
	int32_t call;
	uint64_t ext0, ext1;
};

static struct corr_ref corr_find(struct conv *c, uint32_t corr)
{
	struct corr_ref r = {-1, 0, 0};
	if (!corr)
		return r;
	if (c->dense_call) {
		uint32_t i = corr - c->dense_base;
		if (corr < c->dense_base || i >= c->dense_len)
			return r;
		r.call = c->dense_call[i] - 1;
		if (c->dense_ext)
			r.ext0 = c->dense_ext[i].ext0, r.ext1 = c->dense_ext[i].ext1;
		return r;
	}
	const struct corr_slot *s = slot(c, corr, false);
	if (s)
		r = (struct corr_ref){s->call, s->ext0, s->ext1};
	return r;
}

static void corr_set_call(struct conv *c, uint32_t corr, int32_t call)
{
	if (!corr)
		return;
	if (c->dense_call) {
		c->dense_call[corr - c->dense_base] = call + 1;
		return;
	}
	struct corr_slot *s = slot(c, corr, true);
	if (s)
		s->call = call;
}

/* Where an external id of corr goes, or NULL. */
static uint64_t *corr_ext(struct conv *c, uint32_t corr, bool custom1)
{
	if (!corr)
		return NULL;
	if (c->dense_call) {
		struct ext_pair *p = &c->dense_ext[corr - c->dense_base];
		return custom1 ? &p->ext1 : &p->ext0;
	}
	struct corr_slot *s = slot(c, corr, true);
	return !s ? NULL : custom1 ? &s->ext1 : &s->ext0;
}

static int64_t epoch(struct conv *c, uint64_t cupti_ns)
{
	return strb_clock_cursor_ns_epoch(&c->clock, cupti_ns);
}

static bool selected(const struct conv *c, enum strobe_activity_type type)
{
	return c->w->mask & STROBE_ACTIVITY_BIT(type);
}

static void note_context(struct conv *c, uint32_t ctx, uint32_t device)
{
	for (int i = 0; i < c->nctx; i++)
		if (c->ctx_device[i][0] == ctx)
			return;
	if (c->nctx < 2 * MAX_DEVICES) {
		c->ctx_device[c->nctx][0] = ctx;
		c->ctx_device[c->nctx][1] = device;
		c->nctx++;
	}
}

static uint32_t context_device(const struct conv *c, uint32_t ctx)
{
	for (int i = 0; i < c->nctx; i++)
		if (c->ctx_device[i][0] == ctx)
			return c->ctx_device[i][1];
	return 0;
}

/* Walks every record of every buffer. The first pass counts buffers whose
 * walk stopped on an invalid record; the last hands each buffer, once
 * walked, to the trace's arena. */
static void walk(struct conv *c, void (*fn)(struct conv *, const CUpti_Activity *), bool last)
{
	for (struct strb_cupti_buffer *b = c->buffers; b && !c->rc; b = b->next) {
		CUpti_Activity *rec = NULL;
		CUptiResult r;
		while ((r = c->lib->cuptiActivityGetNextRecord(b->data, b->valid, &rec)) == CUPTI_SUCCESS &&
		       !c->rc)
			fn(c, rec);
		/* An invalid kind ends the walk of that buffer: count it once. */
		if (!c->rc && r != CUPTI_ERROR_MAX_LIMIT_REACHED && !last)
			c->st->gpu_bad_buffers++;
		if (!last)
			continue;
		/* Records rendered later keep their buffer alive (even after an
		 * error: the trace points into it); the others' memory holds the
		 * args of later records. Room to keep every buffer was made
		 * before the walk. */
		if (c->rendered)
			strb_cupti_args_keep(c->x, b->data);
		else
			strb_arena_give(&c->t->arena, b->data, b->size);
		b->data = NULL;
		c->rendered = false;
	}
}

/* ---- the correlation table, once pass 1 has seen every id ------------------------ */

static void id_range(uint32_t id, uint32_t *lo, uint32_t *hi, size_t *n)
{
	if (!id)
		return;
	*lo = *n && *lo < id ? *lo : id;
	*hi = *n && *hi > id ? *hi : id;
	(*n)++;
}

static void build_table(struct conv *c)
{
	uint32_t lo = 0, hi = 0;
	size_t n = 0;
	for (size_t i = 0; i < c->ncalls; i++)
		id_range(c->calls[i].corr, &lo, &hi, &n);
	for (size_t i = 0; i < c->nexts; i++)
		id_range(c->exts[i].corr, &lo, &hi, &n);
	/* One allocation for every activity instead of doublings and copies. */
	if (strb_trace_reserve(c->t, c->st->gpu_records + 64)) {
		c->rc = -ENOMEM;
		return;
	}
	uint64_t span = n ? (uint64_t)hi - lo + 1 : 0;
	if (n && span <= 4 * (uint64_t)n + 4096) {
		c->dense_call = calloc(span, sizeof(*c->dense_call));
		c->dense_ext = c->nexts ? calloc(span, sizeof(*c->dense_ext)) : NULL;
		if (c->dense_call && (c->dense_ext || !c->nexts)) {
			c->dense_base = lo;
			c->dense_len = (uint32_t)span;
		} else {
			free(c->dense_call);
			free(c->dense_ext);
			c->dense_call = NULL;
			c->dense_ext = NULL;
		}
	} /* else sparse: hash */
	for (size_t i = 0; i < c->ncalls && !c->rc; i++)
		corr_set_call(c, c->calls[i].corr, (int32_t)i);
	for (size_t i = 0; i < c->nexts && !c->rc; i++) {
		const struct ext_rec *e = &c->exts[i];
		bool known = e->kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 ||
		             e->kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
		uint64_t *ext =
		    known ? corr_ext(c, e->corr, e->kind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1) : NULL;
		if (ext)
			*ext = e->id;
		else if (!known)
			c->st->gpu_invalid_external_correlations++;
	}
}

/* ---- pass 1: tables --------------------------------------------------------- */

static void add_device(struct conv *c, const CUpti_ActivityDevice5 *d);

static void pass1(struct conv *c, const CUpti_Activity *rec)
{
	c->st->gpu_records++;
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
		const CUpti_ActivityExternalCorrelation *e = (const void *)rec;
		struct ext_rec x = {e->correlationId, e->externalKind, e->externalId};
		PUSH(c, exts, nexts, exts_cap, x);
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const void *)rec;
		struct api_call call = {
		    .corr = a->correlationId,
		    .cbid = a->cbid,
		    .kind = a->kind,
		    .tid = (pid_t)a->threadId,
		    .start = epoch(c, a->start),
		    .end = epoch(c, a->end),
		};
		PUSH(c, calls, ncalls, calls_cap, call);
		break;
	}
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL: {
		const CUpti_ActivityKernel9 *k = (const void *)rec;
		note_context(c, k->contextId, k->deviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy5 *m = (const void *)rec;
		note_context(c, m->contextId, m->deviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
		note_context(c, m->srcContextId, m->srcDeviceId);
		note_context(c, m->dstContextId, m->dstDeviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)rec;
		note_context(c, m->contextId, m->deviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
		const CUpti_ActivityCudaEvent *e = (const void *)rec;
		struct cuda_event ev = {e->contextId, e->eventId, e->correlationId, e->streamId};
		PUSH(c, events, nevents, events_cap, ev);
		break;
	}
	case CUPTI_ACTIVITY_KIND_DEVICE:
		add_device(c, (const void *)rec);
		break;
	default:
		break;
	}
}

/* ---- linking calls to strobe's ops and ranges -------------------------------- */

struct interval {
	pid_t tid;
	int64_t start, end;
	uint64_t id;
	bool op;
};

static int cmp_interval(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return (x->end < y->end) - (x->end > y->end); /* the enclosing one first */
}

static const struct api_call *sort_base;

static int cmp_call(const void *a, const void *b)
{
	const struct api_call *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* A sweep per thread in time order with a stack of open intervals: ranges
 * nest, so the top of the stack is the innermost one around a call. */
static void link_calls(struct conv *c)
{
	struct strobe_trace *t = c->t;
	size_t n = 0;
	for (size_t i = 0; i < t->count; i++)
		n += t->acts[i].type == STROBE_ACTIVITY_CPU_OP ||
		     t->acts[i].type == STROBE_ACTIVITY_USER_ANNOTATION;
	if (!n || !c->ncalls)
		return;
	struct interval *iv = malloc(n * sizeof(*iv));
	size_t *order = malloc(c->ncalls * sizeof(*order));
	struct interval **stack = malloc(2 * n * sizeof(*stack));
	if (!iv || !order || !stack) {
		c->rc = -ENOMEM;
		goto out;
	}
	n = 0;
	for (size_t i = 0; i < t->count; i++) {
		const struct strobe_activity *a = &t->acts[i];
		if (a->type != STROBE_ACTIVITY_CPU_OP && a->type != STROBE_ACTIVITY_USER_ANNOTATION)
			continue;
		if (a->device != t->pid)
			continue;
		iv[n++] = (struct interval){(pid_t)a->resource, a->start_ns, a->end_ns, a->id,
		                            a->type == STROBE_ACTIVITY_CPU_OP};
	}
	qsort(iv, n, sizeof(*iv), cmp_interval);
	for (size_t i = 0; i < c->ncalls; i++)
		order[i] = i;
	sort_base = c->calls;
	qsort(order, c->ncalls, sizeof(*order), cmp_call);

	/* Two stacks share one array: ops from the bottom, ranges from n up. */
	struct interval **ops = stack, **ranges = stack + n;
	size_t nops = 0, nranges = 0, next = 0;
	pid_t tid = -1;
	for (size_t k = 0; k < c->ncalls; k++) {
		struct api_call *call = &c->calls[order[k]];
		if (call->tid != tid) {
			tid = call->tid;
			nops = nranges = 0;
			while (next < n && iv[next].tid < tid)
				next++;
		}
		while (next < n && iv[next].tid == tid && iv[next].start <= call->start) {
			struct interval *in = &iv[next++];
			struct interval **s = in->op ? ops : ranges;
			size_t *ns = in->op ? &nops : &nranges;
			while (*ns && s[*ns - 1]->end < in->start)
				(*ns)--;
			s[(*ns)++] = in;
		}
		while (nops && ops[nops - 1]->end < call->start)
			nops--;
		while (nranges && ranges[nranges - 1]->end < call->start)
			nranges--;
		call->op_id = nops ? ops[nops - 1]->id : 0;
		call->range_id = nranges ? ranges[nranges - 1]->id : 0;
	}
out:
	free(iv);
	free(order);
	free(stack);
}

/* ---- pass 2: activities ------------------------------------------------------ */

/* A string that lives as long as the trace, for names and string args. */
static const char *keep(struct conv *c, const char *s)
{
	const char *k = strb_trace_intern(c->t, s, strlen(s));
	if (!k)
		c->rc = -ENOMEM;
	return k;
}

/* Args built here are copied into the trace's arena as they are: keys are
 * static strings, string values already live in the trace (keep). */
static struct strobe_activity *emit(struct conv *c, enum strobe_activity_type type, const char *name,
                                    int64_t start, int64_t end, int64_t device, int64_t resource,
                                    const struct strb_cupti_argv *g)
{
	struct strobe_trace *t = c->t;
	struct strobe_arg *args = NULL;
	if (c->rc || !name)
		return NULL;
	if (g && g->n) {
		args = strb_arena_alloc(&t->arena, g->n * sizeof(*args));
		if (!args) {
			c->rc = -ENOMEM;
			return NULL;
		}
		memcpy(args, g->s->args, g->n * sizeof(*args));
	}
	struct strobe_activity *a = strb_trace_push(t);
	if (!a) {
		c->rc = -ENOMEM;
		return NULL;
	}
	a->type = type;
	a->name = name;
	a->start_ns = start;
	a->end_ns = end;
	a->device = device;
	a->resource = resource;
	a->args = args;
	a->arg_count = g ? g->n : 0;
	return a;
}

/* The activity just emitted renders its args from rec, which its buffer
 * keeps alive. */
static void render_from(struct conv *c, const void *rec)
{
	if (strb_trace_render_args(c->t, rec))
		c->rc = -ENOMEM;
	c->rendered = true;
}

static bool paused(uint64_t start)
{
	for (int i = 0; i < strb_cupti.pauses + (strb_cupti.paused ? 1 : 0) && i < STRB_CUPTI_MAX_PAUSES; i++)
		if (start >= strb_cupti.pause_from[i] && start < strb_cupti.pause_to[i])
			return true;
	return false;
}

/* Common checks for a GPU record: complete, not paused, inside the window.
 * Converts its times to epoch ns. */
static bool gpu_record_ok(struct conv *c, uint64_t start, uint64_t end, int64_t *s, int64_t *e)
{
	if (!start || !end || end < start) {
		c->st->gpu_incomplete_records++;
		return false;
	}
	if (paused(start)) {
		c->st->gpu_paused_records++;
		return false;
	}
	*s = epoch(c, start);
	*e = epoch(c, end);
	if (*s < c->w->start_ns || *e > c->w->stop_ns) {
		c->st->gpu_out_of_window++;
		return false;
	}
	return true;
}

static void note_row(struct conv *c, uint32_t device, uint32_t stream, int64_t start, int64_t end)
{
	uint64_t key = (uint64_t)device << 32 | stream;
	size_t i = c->last_row;
	/* Most records repeat the last row. */
	if (i >= c->nrows || c->rows[i] != key) {
		for (i = 0; i < c->nrows && c->rows[i] != key; i++)
			;
		if (i == c->nrows) {
			size_t cap = c->rows_cap;
			if (!grow((void **)&c->rows, &c->rows_cap, i + 1, sizeof(*c->rows)) ||
			    !grow((void **)&c->row_end, &cap, i + 1, sizeof(*c->row_end))) {
				c->rc = -ENOMEM;
				return;
			}
			c->rows[i] = key;
			c->row_end[i] = INT64_MIN;
			c->nrows++;
			if (device < MAX_DEVICES)
				c->device_seen[device] = true;
		}
		c->last_row = i;
	}
	if (start < c->row_end[i])
		c->overlap = true;
	if (end > c->row_end[i])
		c->row_end[i] = end;
}

static bool row_busy(const struct conv *c, uint32_t device, uint32_t stream)
{
	uint64_t key = (uint64_t)device << 32 | stream;
	for (size_t i = 0; i < c->nrows; i++)
		if (c->rows[i] == key)
			return true;
	return false;
}

/* The call that launched GPU work, and the ids it links to. Returns the
 * call, or NULL. Only work (kernels, copies, fills) widens its range's GPU
 * span: a synchronisation is the host waiting, not the GPU working. */
static struct api_call *link_gpu(struct conv *c, struct strobe_activity *a, uint32_t corr, int64_t gpu_start,
                                 bool work)
{
	struct corr_ref s = corr_find(c, corr);
	a->id = corr;
	struct api_call *call = s.call >= 0 ? &c->calls[s.call] : NULL;
	a->linked_id = s.ext0 ? s.ext0 : call ? call->op_id : 0;
	if (call) {
		if (call->emitted && strb_cupti_flow_start(call->kind, call->cbid)) {
			a->flow_id = corr;
			a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
		}
		if (call->start > gpu_start)
			c->st->gpu_out_of_order++;
	} else if (corr &&
	           (selected(c, STROBE_ACTIVITY_CUDA_RUNTIME) || selected(c, STROBE_ACTIVITY_CUDA_DRIVER))) {
		c->st->gpu_unmatched_correlations++;
	}
	uint64_t range = s.ext1 ? s.ext1 : call ? call->range_id : 0;
	if (work && range && selected(c, STROBE_ACTIVITY_GPU_USER_ANNOTATION)) {
		for (size_t i = c->nspans; i-- > 0;) {
			struct gpu_span *sp = &c->spans[i];
			if (sp->range_id == range && sp->device == a->device && sp->stream == a->resource) {
				if (a->start_ns < sp->start)
					sp->start = a->start_ns;
				if (a->end_ns > sp->end)
					sp->end = a->end_ns;
				return call;
			}
		}
		struct gpu_span sp = {a->device, a->resource, range, a->start_ns, a->end_ns};
		PUSH(c, spans, nspans, spans_cap, sp);
	}
	return call;
}

static const char *kernel_name(struct conv *c, const char *raw)
{
	if (!raw)
		return strb_trace_intern(c->t, "<unknown kernel>", 16);
	if ((c->names_used + 1) * 2 > c->names_cap) {
		size_t cap = c->names_cap ? c->names_cap * 2 : 1024;
		const char **k = calloc(cap, sizeof(*k)), **v = calloc(cap, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			c->rc = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < c->names_cap; i++) {
			if (!c->name_keys[i])
				continue;
			size_t j = ((uintptr_t)c->name_keys[i] >> 3) & (cap - 1);
			while (k[j])
				j = (j + 1) & (cap - 1);
			k[j] = c->name_keys[i];
			v[j] = c->name_values[i];
		}
		free(c->name_keys);
		free(c->name_values);
		c->name_keys = k;
		c->name_values = v;
		c->names_cap = cap;
	}
	/* CUPTI's name strings live as long as the library: key by pointer. */
	size_t j = ((uintptr_t)raw >> 3) & (c->names_cap - 1);
	while (c->name_keys[j] && c->name_keys[j] != raw)
		j = (j + 1) & (c->names_cap - 1);
	if (c->name_keys[j])
		return c->name_values[j];
	char *dem = strb_cupti_demangle(raw);
	const char *name = dem ? dem : raw;
	const char *v = strb_trace_intern(c->t, name, strlen(name));
	free(dem);
	if (!v) {
		c->rc = -ENOMEM;
		return NULL;
	}
	c->name_keys[j] = raw;
	c->name_values[j] = v;
	c->names_used++;
	return v;
}

static void kernel(struct conv *c, const CUpti_ActivityKernel9 *k)
{
	int64_t s, e;
	if (!selected(c, STROBE_ACTIVITY_CONCURRENT_KERNEL) || !gpu_record_ok(c, k->start, k->end, &s, &e))
		return;
	const char *name = kernel_name(c, k->name);
	if (!name)
		return;
	/* The shape's occupancy, for rendering. */
	if (k->deviceId < MAX_DEVICES && c->x->sm_count[k->deviceId])
		strb_cupti_occupancy(c->x, c->t, k);
	struct strobe_activity *a =
	    emit(c, STROBE_ACTIVITY_CONCURRENT_KERNEL, name, s, e, k->deviceId, k->streamId, NULL);
	if (!a)
		return;
	render_from(c, k);
	struct api_call *call = link_gpu(c, a, k->correlationId, s, true);
	if (call)
		call->got_kernel = true;
	note_row(c, k->deviceId, k->streamId, s, e);
}

static const char *copy_name(char *buf, size_t len, uint8_t copy, uint8_t src, uint8_t dst)
{
	snprintf(buf, len, "Memcpy %s (%s -> %s)", strb_cupti_memcpy_kind(copy), strb_cupti_memory_kind(src),
	         strb_cupti_memory_kind(dst));
	return buf;
}

/* Writes GPU work on its device/stream row and links it to its launch. */
static struct strobe_activity *emit_gpu(struct conv *c, enum strobe_activity_type type, const char *name,
                                        int64_t s, int64_t e, uint32_t device, uint32_t stream, uint32_t corr,
                                        const void *rec)
{
	struct strobe_activity *a = emit(c, type, keep(c, name), s, e, device, stream, NULL);
	if (!a)
		return NULL;
	render_from(c, rec);
	link_gpu(c, a, corr, s, true);
	note_row(c, device, stream, s, e);
	return a;
}

static void memcpy1(struct conv *c, const CUpti_ActivityMemcpy5 *m)
{
	int64_t s, e;
	if (!selected(c, STROBE_ACTIVITY_GPU_MEMCPY) || !gpu_record_ok(c, m->start, m->end, &s, &e))
		return;
	char nb[96];
	const char *name = copy_name(nb, sizeof(nb), m->copyKind, m->srcKind, m->dstKind);
	emit_gpu(c, STROBE_ACTIVITY_GPU_MEMCPY, name, s, e, m->deviceId, m->streamId, m->correlationId, m);
}

static void memcpy2(struct conv *c, const CUpti_ActivityMemcpyPtoP4 *m)
{
	int64_t s, e;
	if (!selected(c, STROBE_ACTIVITY_GPU_MEMCPY) || !gpu_record_ok(c, m->start, m->end, &s, &e))
		return;
	char nb[96];
	const char *name = copy_name(nb, sizeof(nb), m->copyKind, m->srcKind, m->dstKind);
	emit_gpu(c, STROBE_ACTIVITY_GPU_MEMCPY, name, s, e, m->deviceId, m->streamId, m->correlationId, m);
}

static void memset1(struct conv *c, const CUpti_ActivityMemset4 *m)
{
	int64_t s, e;
	if (!selected(c, STROBE_ACTIVITY_GPU_MEMSET) || !gpu_record_ok(c, m->start, m->end, &s, &e))
		return;
	char nb[64];
	snprintf(nb, sizeof(nb), "Memset (%s)", strb_cupti_memory_kind(m->memoryKind));
	emit_gpu(c, STROBE_ACTIVITY_GPU_MEMSET, nb, s, e, m->deviceId, m->streamId, m->correlationId, m);
}

static const char *api_name(struct conv *c, bool runtime, uint32_t cbid)
{
	const char **slot_name = cbid < 1024 ? &c->api_names[runtime][cbid] : NULL;
	if (slot_name && *slot_name)
		return *slot_name;
	char nb[128];
	strb_cupti_api_name(c->lib, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid,
	                    nb, sizeof(nb));
	const char *name = strb_trace_intern(c->t, nb, strlen(nb));
	if (!name)
		c->rc = -ENOMEM;
	else if (slot_name)
		*slot_name = name;
	return name;
}

static void api(struct conv *c, const CUpti_ActivityAPI *r)
{
	bool runtime = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
	enum strobe_activity_type type = runtime ? STROBE_ACTIVITY_CUDA_RUNTIME : STROBE_ACTIVITY_CUDA_DRIVER;
	struct corr_ref s = corr_find(c, r->correlationId);
	struct api_call *call = s.call >= 0 ? &c->calls[s.call] : NULL;
	if (!selected(c, type) || !call)
		return;
	if (runtime && strb_cupti_runtime_blocklisted(r->cbid)) {
		c->st->gpu_blocklisted++;
		return;
	}
	if (!runtime && !strb_cupti_driver_kept(r->cbid))
		return;
	if (call->start < c->w->start_ns || call->end > c->w->stop_ns || call->end < call->start) {
		c->st->gpu_out_of_window++;
		return;
	}
	const char *name = api_name(c, runtime, r->cbid);
	struct strobe_activity *a =
	    name ? emit(c, type, name, call->start, call->end, c->t->pid, r->threadId, NULL) : NULL;
	if (!a)
		return;
	render_from(c, r);
	a->id = r->correlationId;
	a->linked_id = s.ext0 ? s.ext0 : call->op_id;
	if (strb_cupti_flow_start(r->kind, r->cbid)) {
		a->flow_id = r->correlationId;
		a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
		a->flags |= STROBE_ACTIVITY_FLOW_START;
	}
}

static int cmp_event(const void *a, const void *b)
{
	const struct cuda_event *x = a, *y = b;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	return (x->corr > y->corr) - (x->corr < y->corr);
}

/* The cudaEventRecord a sync waited on: the newest record of the same
 * event issued before the sync (lower correlation id). */
static const struct cuda_event *waited_event(const struct conv *c, uint32_t ctx, uint32_t event,
                                             uint32_t corr)
{
	size_t lo = 0, hi = c->nevents;
	struct cuda_event key = {ctx, event, corr, 0};
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_event(&c->events[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct cuda_event *e = &c->events[lo - 1];
	return e->ctx == ctx && e->event == event ? e : NULL;
}

static void sync_record(struct conv *c, const CUpti_ActivitySynchronization *r, bool deferred)
{
	if (!selected(c, STROBE_ACTIVITY_CUDA_SYNC))
		return;
	bool wait = r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
	if (wait && !deferred) {
		/* Only for streams that did work in the window, once all is known. */
		if (strb_cupti.show_wait_events)
			PUSH(c, waits, nwaits, waits_cap, *r);
		return;
	}
	int64_t s, e;
	if (!gpu_record_ok(c, r->start, r->end, &s, &e))
		return;
	uint32_t device = context_device(c, r->contextId);
	int64_t stream = r->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : (int64_t)r->streamId;
	const char *kind = strb_cupti_sync_kind(r->type);
	struct strb_arg_scratch scratch;
	struct strb_cupti_argv g = {&scratch, 0, 0};
	strb_cupti_arg_s(&g, "cuda_sync_kind", keep(c, kind));
	if (r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE || wait) {
		const struct cuda_event *ev = waited_event(c, r->contextId, r->cudaEventId, r->correlationId);
		strb_cupti_arg_i(&g, "wait_on_stream", ev ? (int64_t)ev->stream : -1);
		strb_cupti_arg_i(&g, "wait_on_cuda_event_record_corr_id", ev ? (int64_t)ev->corr : -1);
		strb_cupti_arg_u(&g, "wait_on_cuda_event_id", r->cudaEventId);
	}
	strb_cupti_arg_i(&g, "stream", stream);
	strb_cupti_arg_u(&g, "correlation", r->correlationId);
	strb_cupti_arg_u(&g, "device", device);
	strb_cupti_arg_u(&g, "context", r->contextId);
	int64_t row = stream;
	if (r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE && stream >= 0) {
		/* Its own row, so it does not hide the kernels it waits for. */
		row = stream + STREAM_SYNC_ROW_OFFSET;
		uint64_t key = (uint64_t)device << 32 | (uint32_t)stream;
		bool named = false;
		for (size_t i = 0; i < c->nsync_rows && !named; i++)
			named = c->sync_rows[i] == key;
		if (!named) {
			PUSH(c, sync_rows, nsync_rows, sync_rows_cap, key);
			char title[64];
			snprintf(title, sizeof(title), "stream %lld (sync)", (long long)stream);
			struct strobe_resource res = {
			    sizeof(res), STROBE_RESOURCE_ROW, device, row, title, NULL, stream};
			if (strb_trace_add_resource(c->t, &res))
				c->rc = -ENOMEM;
		}
	}
	struct strobe_activity *a = emit(c, STROBE_ACTIVITY_CUDA_SYNC, keep(c, kind), s, e, device, row, &g);
	if (a)
		link_gpu(c, a, r->correlationId, s, false);
}

static void cuda_event(struct conv *c, const CUpti_ActivityCudaEvent2 *r)
{
	/* Device timestamps exist only in CUDA 13's record. */
	if (!selected(c, STROBE_ACTIVITY_CUDA_EVENT) || c->lib->version < STRB_CUPTI_VERSION_13 ||
	    !r->deviceTimestamp)
		return;
	int64_t s, e;
	if (!gpu_record_ok(c, r->deviceTimestamp, r->deviceTimestamp + 1, &s, &e))
		return;
	e = s + 1; /* libkineto's fixed 1 ns, whatever the conversion rounds to */
	struct strb_arg_scratch scratch;
	struct strb_cupti_argv g = {&scratch, 0, 0};
	strb_cupti_arg_u(&g, "event_id", r->eventId);
	strb_cupti_arg_u(&g, "stream", r->streamId);
	strb_cupti_arg_u(&g, "correlation", r->correlationId);
	strb_cupti_arg_u(&g, "device", r->deviceId);
	strb_cupti_arg_u(&g, "context", r->contextId);
	struct strobe_activity *a =
	    emit(c, STROBE_ACTIVITY_CUDA_EVENT, keep(c, "cudaEvent"), s, e, r->deviceId, r->streamId, &g);
	if (a)
		a->id = r->correlationId;
}

static void overhead(struct conv *c, const CUpti_ActivityOverhead *r)
{
	int64_t s, e;
	if (!selected(c, STROBE_ACTIVITY_OVERHEAD) || !gpu_record_ok(c, r->start, r->end, &s, &e))
		return;
	const char *name = strb_cupti_overhead_kind(r->overheadKind);
	emit(c, STROBE_ACTIVITY_OVERHEAD, keep(c, name), s, e, OVERHEAD_PID, 0, NULL);
}

static void pass2(struct conv *c, const CUpti_Activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		kernel(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		memcpy1(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		memcpy2(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		memset1(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		api(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		sync_record(c, (const void *)rec, false);
		break;
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
		cuda_event(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		overhead(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
	case CUPTI_ACTIVITY_KIND_DEVICE:
		break;
	default:
		c->st->gpu_unexpected_records++;
		break;
	}
}

/* ---- device properties, rows --------------------------------------------------- */

/* A DEVICE record: CUPTI writes one per device when CUDA initialises, if
 * the kind is enabled by then. */
static void add_device(struct conv *c, const CUpti_ActivityDevice5 *d)
{
	if (d->id >= MAX_DEVICES)
		return;
	struct strb_cuda_device *v = &c->dev[d->id];
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", d->name ? d->name : "");
	v->total_mem = d->globalMemorySize;
	v->major = (int)d->computeCapabilityMajor;
	v->minor = (int)d->computeCapabilityMinor;
	v->threads_per_block = (int)d->maxThreadsPerBlock;
	v->threads_per_sm = (int)(d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp);
	v->regs_per_block = (int)d->maxRegistersPerBlock;
	v->warp_size = (int)d->numThreadsPerWarp;
	v->shared_per_block = (int)d->maxSharedMemoryPerBlock;
	v->sm_count = (int)d->numMultiprocessors;
	v->regs_per_sm = (int)d->maxRegistersPerMultiprocessor;
	v->shared_per_sm = (int)d->maxSharedMemoryPerMultiprocessor;
	memcpy(v->uuid, d->uuid.bytes, sizeof(v->uuid));
	v->known = v->uuid_known = true;
}

/* One deviceProperties object, in libkineto's key order, then strobe's
 * "uuid". */
static int device_json(char *obj, size_t len, int id, const struct strb_cuda_device *v)
{
	char name[256];
	size_t j = 0;
	/* Device names are plain ASCII; keep them so and the fragment valid. */
	for (const char *p = v->name; *p && j < sizeof(name) - 1; p++)
		name[j++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	name[j] = 0;
	int n =
	    snprintf(obj, len,
	             "{\"id\": %d, \"name\": \"%s\", \"totalGlobalMem\": %llu, \"computeMajor\": %d, "
	             "\"computeMinor\": %d, \"maxThreadsPerBlock\": %d, \"maxThreadsPerMultiprocessor\": %d, "
	             "\"regsPerBlock\": %d, \"warpSize\": %d, \"sharedMemPerBlock\": %d, \"numSms\": %d, "
	             "\"regsPerMultiprocessor\": %d",
	             id, name, (unsigned long long)v->total_mem, v->major, v->minor, v->threads_per_block,
	             v->threads_per_sm, v->regs_per_block, v->warp_size, v->shared_per_block, v->sm_count,
	             v->regs_per_sm);
	if (v->optin_known)
		n += snprintf(obj + n, len - (size_t)n, ", \"sharedMemPerBlockOptin\": %d",
		              v->shared_per_block_optin);
	n += snprintf(obj + n, len - (size_t)n, ", \"sharedMemPerMultiprocessor\": %d", v->shared_per_sm);
	if (v->uuid_known) {
		const unsigned char *u = v->uuid;
		n += snprintf(obj + n, len - (size_t)n,
		              ", \"uuid\": "
		              "\"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\"",
		              u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		              u[13], u[14], u[15]);
	}
	n += snprintf(obj + n, len - (size_t)n, "}");
	return n;
}

/* Every device the driver reports (as libkineto lists every visible
 * device), else those CUPTI's DEVICE records described: the limits for
 * blocks per SM and occupancy, and the trace's deviceProperties. */
static void add_devices(struct conv *c)
{
	struct strb_cuda_device drv[MAX_DEVICES];
	int n = strb_cuda_devices(drv, MAX_DEVICES);
	for (int d = 0; d < n && d < MAX_DEVICES; d++) {
		if (!drv[d].known)
			continue;
		if (!drv[d].uuid_known && c->dev[d].uuid_known) {
			memcpy(drv[d].uuid, c->dev[d].uuid, sizeof(drv[d].uuid));
			drv[d].uuid_known = true;
		}
		c->dev[d] = drv[d];
	}
	struct strobe_trace *t = c->t;
	for (int d = 0; d < MAX_DEVICES; d++) {
		const struct strb_cuda_device *v = &c->dev[d];
		if (!v->known)
			continue;
		c->x->sm_count[d] = (uint32_t)v->sm_count;
		c->x->occ_prop[d] = (struct cudaOccDeviceProp){
		    .computeMajor = v->major,
		    .computeMinor = v->minor,
		    .maxThreadsPerBlock = v->threads_per_block,
		    .maxThreadsPerMultiprocessor = v->threads_per_sm,
		    .regsPerBlock = v->regs_per_block,
		    .regsPerMultiprocessor = v->regs_per_sm,
		    .warpSize = v->warp_size,
		    .sharedMemPerBlock = (size_t)v->shared_per_block,
		    .sharedMemPerMultiprocessor = (size_t)v->shared_per_sm,
		    .numSms = v->sm_count,
		    .sharedMemPerBlockOptin =
		        (size_t)(v->optin_known ? v->shared_per_block_optin : v->shared_per_block),
		    .reservedSharedMemPerBlock = (size_t)v->reserved_shared_per_block,
		};
		c->x->occ_known[d] = v->warp_size > 0 && v->threads_per_sm > 0;
		char obj[1024];
		int add = device_json(obj, sizeof(obj), d, v);
		size_t old = strlen(t->device_properties);
		char *joined = strb_arena_alloc(&t->arena, old + (size_t)add + 3);
		if (!joined) {
			c->rc = -ENOMEM;
			return;
		}
		memcpy(joined, t->device_properties, old);
		size_t at = old;
		if (old) {
			memcpy(joined + at, ", ", 2);
			at += 2;
		}
		memcpy(joined + at, obj, (size_t)add + 1);
		t->device_properties = joined;
	}
}

static void add_rows(struct conv *c)
{
	char pname[256];
	strb_process_name(pname, sizeof(pname));
	for (uint32_t d = 0; d < MAX_DEVICES; d++) {
		if (!c->device_seen[d])
			continue;
		char label[32];
		snprintf(label, sizeof(label), "GPU %u", d);
		struct strobe_resource p = {sizeof(p), STROBE_RESOURCE_PROCESS, d, 0, pname,
		                            label,     GPU_SORT_OFFSET + d};
		if (strb_trace_add_resource(c->t, &p))
			c->rc = -ENOMEM;
	}
	for (size_t i = 0; i < c->nrows; i++) {
		uint32_t device = (uint32_t)(c->rows[i] >> 32), stream = (uint32_t)c->rows[i];
		char title[48];
		/* libkineto's stream rows end with a space. */
		snprintf(title, sizeof(title), "stream %u ", stream);
		struct strobe_resource r = {sizeof(r), STROBE_RESOURCE_STREAM, device, stream, title, NULL,
		                            stream};
		if (strb_trace_add_resource(c->t, &r))
			c->rc = -ENOMEM;
	}
	if (selected(c, STROBE_ACTIVITY_OVERHEAD)) {
		struct strobe_resource o = {
		    sizeof(o),    STROBE_RESOURCE_PROCESS, OVERHEAD_PID, 0, "CUPTI Overhead", NULL,
		    OVERHEAD_SORT};
		if (strb_trace_add_resource(c->t, &o))
			c->rc = -ENOMEM;
	}
}

struct named_id {
	uint64_t id;
	const char *name;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named_id *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* GPU spans of strobe ranges (and of ops named through CUSTOM1 ids): one
 * per (device, stream, range), named after the range. */
static void emit_gpu_spans(struct conv *c)
{
	const struct strobe_trace *t = c->t;
	size_t n = 0;
	struct named_id *ids = malloc((t->count + 1) * sizeof(*ids));
	if (!ids) {
		c->rc = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < t->count; i++)
		if (t->acts[i].type == STROBE_ACTIVITY_USER_ANNOTATION ||
		    t->acts[i].type == STROBE_ACTIVITY_CPU_OP)
			ids[n++] = (struct named_id){t->acts[i].id, t->acts[i].name};
	qsort(ids, n, sizeof(*ids), cmp_named);
	for (size_t i = 0; i < c->nspans && !c->rc; i++) {
		const struct gpu_span *sp = &c->spans[i];
		struct named_id key = {sp->range_id, NULL};
		const struct named_id *hit = bsearch(&key, ids, n, sizeof(*ids), cmp_named);
		if (!hit)
			continue;
		struct strobe_activity *a = emit(c, STROBE_ACTIVITY_GPU_USER_ANNOTATION, hit->name, sp->start,
		                                 sp->end, sp->device, sp->stream, NULL);
		if (a)
			a->id = sp->range_id;
	}
	free(ids);
}

static void finish(struct conv *c)
{
	/* Deferred waits, for streams that were busy. */
	for (size_t i = 0; i < c->nwaits && !c->rc; i++) {
		const CUpti_ActivitySynchronization *r = &c->waits[i];
		if (row_busy(c, context_device(c, r->contextId), r->streamId))
			sync_record(c, r, true);
	}
	if (c->nspans && !c->rc)
		emit_gpu_spans(c);
	uint64_t missing = 0;
	for (size_t i = 0; i < c->ncalls; i++) {
		const struct api_call *call = &c->calls[i];
		if (!call->emitted || !strb_cupti_is_kernel_launch(call->kind, call->cbid))
			continue;
		c->st->gpu_launches++;
		missing += !call->got_kernel;
	}
	c->st->gpu_launches_without_kernel = missing;
	if (missing && selected(c, STROBE_ACTIVITY_CONCURRENT_KERNEL))
		LOGW(
		    "%llu of %llu kernel launches in the window have no kernel record: GPU records were lost "
		    "(dropped, rejected or still in flight at stop)",
		    (unsigned long long)missing, (unsigned long long)c->st->gpu_launches);
	add_rows(c);
}

/* Which calls will be written, known before pass 2 so GPU records can tell
 * whether their arrow has a start. */
static void mark_emitted(struct conv *c)
{
	for (size_t i = 0; i < c->ncalls; i++) {
		struct api_call *call = &c->calls[i];
		bool runtime = call->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
		bool wanted =
		    runtime ? selected(c, STROBE_ACTIVITY_CUDA_RUNTIME) &&
		                  !strb_cupti_runtime_blocklisted(call->cbid)
		            : selected(c, STROBE_ACTIVITY_CUDA_DRIVER) && strb_cupti_driver_kept(call->cbid);
		call->emitted = wanted && call->start >= c->w->start_ns && call->end <= c->w->stop_ns &&
		                call->end >= call->start;
	}
}

/* libkineto's version keys, as numbers: those of the loaded libcupti and of
 * the CUDA driver and runtime the program loaded (absent when it has not). */
static void add_versions(struct conv *c)
{
	int driver, runtime;
	strb_cuda_versions(&driver, &runtime);
	const struct {
		const char *key;
		int64_t value;
	} v[] = {{"cuda_driver_version", driver},
	         {"cuda_runtime_version", runtime},
	         {"cupti_version", c->lib->version}};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct strobe_arg e = {.key = v[i].key, .kind = STROBE_ARG_I64, .value.i64 = v[i].value};
		if (v[i].value > 0 && strb_trace_set_meta(c->t, &e))
			c->rc = -ENOMEM;
	}
}

int strb_cupti_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_cupti_buffer *buffers)
{
	struct conv c = {.t = t, .w = w, .lib = strb_cupti.lib, .buffers = buffers, .st = &t->stats};
	t->stats.gpu = true;
	pthread_mutex_lock(&strb_cupti.lock);
	t->stats.gpu_rejected_buffers = strb_cupti.counts.rejected_buffers;
	t->stats.gpu_discarded_buffers = strb_cupti.counts.discarded_buffers;
	t->stats.gpu_dropped_records = strb_cupti.counts.dropped_records;
	t->stats.gpu_warmup_records = strb_cupti.counts.warmup_records;
	pthread_mutex_unlock(&strb_cupti.lock);

	/* The trace owns the args context from here, whatever happens next. */
	c.x = strb_cupti_args_new(c.lib->version >= STRB_CUPTI_VERSION_13_1);
	struct strb_arg_source src = {strb_cupti_render_args, c.x, strb_cupti_args_release};
	if (!c.x)
		return -ENOMEM;
	if (strb_trace_set_arg_source(t, &src)) {
		strb_cupti_args_release(c.x);
		return -EBUSY;
	}
	strb_clock_cursor_init(&c.clock, w->map);
	walk(&c, pass1, false);
	add_versions(&c);
	if (!c.rc)
		add_devices(&c);
	if (!c.rc)
		build_table(&c);
	if (!c.rc && c.nevents)
		qsort(c.events, c.nevents, sizeof(*c.events), cmp_event);
	if (!c.rc)
		link_calls(&c);
	if (!c.rc)
		mark_emitted(&c);
	size_t nbuffers = 0;
	for (struct strb_cupti_buffer *b = buffers; b; b = b->next)
		nbuffers++;
	if (!c.rc && strb_cupti_args_reserve(c.x, nbuffers))
		c.rc = -ENOMEM;
	size_t first = t->count;
	if (!c.rc)
		walk(&c, pass2, true);
	if (!c.rc && !c.overlap) {
		t->in_order_from = first;
		t->in_order_to = t->count;
	}
	if (!c.rc)
		finish(&c);
	/* Buffers the args did not need would stay with the trace until it is
	 * destroyed: a trace of mostly filtered records would keep them all. */
	strb_arena_drop_spare(&t->arena);
	if (t->stats.gpu_rejected_buffers || t->stats.gpu_dropped_records)
		LOGW("GPU records lost: %llu buffer requests refused, %llu records dropped by CUPTI",
		     (unsigned long long)t->stats.gpu_rejected_buffers,
		     (unsigned long long)t->stats.gpu_dropped_records);
	free(c.calls);
	free(c.exts);
	free(c.slots);
	free(c.dense_call);
	free(c.dense_ext);
	free(c.events);
	free(c.rows);
	free(c.row_end);
	free(c.sync_rows);
	free(c.spans);
	free(c.name_keys);
	free(c.name_values);
	free(c.waits);
	return c.rc;
}

/* The GPU layer shared by the device backends: the correlation table,
 * linking GPU work to the calls that launched it and to strobe's ops and
 * ranges, device/stream rows, GPU spans of ranges and the accounting. See
 * gpu.h for the order of calls. */
#include "process/gpu.h"
#include "process/gpu_demangle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct strb_gpu_ext {
	uint64_t corr;
	int which;
	uint64_t id;
};

/* What is known about one correlation id (sparse ids). */
struct strb_gpu_slot {
	uint64_t corr; /* 0 = empty */
	int32_t call;  /* index in calls, or -1 */
	uint64_t ext0, ext1;
};

struct strb_gpu_span {
	int64_t device, stream;
	uint64_t range_id;
	int64_t start, end;
};

void strb_gpu_pause(struct strb_gpu_pauses *p, bool enable, uint64_t now)
{
	if (enable == !p->paused)
		return;
	if (!enable) {
		if (p->n < STRB_GPU_MAX_PAUSES)
			p->from[p->n] = now, p->to[p->n] = UINT64_MAX;
		p->paused = true;
	} else {
		if (p->n < STRB_GPU_MAX_PAUSES)
			p->to[p->n++] = now;
		p->paused = false;
	}
}

bool strb_gpu_paused(const struct strb_gpu_pauses *p, uint64_t t)
{
	for (int i = 0; i < p->n + (p->paused ? 1 : 0) && i < STRB_GPU_MAX_PAUSES; i++)
		if (t >= p->from[i] && t < p->to[i])
			return true;
	return false;
}

void strb_gpu_init(struct strb_gpu *g, struct strobe_trace *t, const struct strb_window *w)
{
	memset(g, 0, sizeof(*g));
	g->t = t;
	g->w = w;
	g->st = &t->stats;
	t->stats.gpu = true;
	strb_clock_cursor_init(&g->clock, w->map);
}

void strb_gpu_free(struct strb_gpu *g)
{
	free(g->calls);
	free(g->exts);
	free(g->slots);
	free(g->dense_call);
	free(g->dense_ext);
	free(g->rows);
	free(g->row_end);
	free(g->spans);
	free(g->name_keys);
	free(g->name_values);
	memset(g, 0, sizeof(*g));
}

bool strb_gpu_grow(struct strb_gpu *g, void **p, size_t *cap, size_t need, size_t elem)
{
	if (strb_grow_array(p, cap, need, elem))
		return true;
	g->rc = -ENOMEM;
	return false;
}

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* ---- the correlation table ----------------------------------------------------- */

void strb_gpu_add_call(struct strb_gpu *g, const struct strb_gpu_call *call)
{
	if (strb_gpu_grow(g, (void **)&g->calls, &g->calls_cap, g->ncalls + 1, sizeof(*g->calls)))
		g->calls[g->ncalls++] = *call;
}

void strb_gpu_add_external(struct strb_gpu *g, uint64_t corr, int which, uint64_t id)
{
	if (strb_gpu_grow(g, (void **)&g->exts, &g->exts_cap, g->nexts + 1, sizeof(*g->exts)))
		g->exts[g->nexts++] = (struct strb_gpu_ext){corr, which, id};
}

/* The hash table's entry for corr, created when asked. */
static struct strb_gpu_slot *slot(struct strb_gpu *g, uint64_t corr, bool create)
{
	if (create && (g->slots_used + 1) * 2 > g->slots_cap) {
		size_t cap = g->slots_cap ? g->slots_cap * 2 : 4096;
		struct strb_gpu_slot *n = calloc(cap, sizeof(*n));
		if (!n) {
			g->rc = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < g->slots_cap; i++) {
			if (!g->slots[i].corr)
				continue;
			size_t j = hash64(g->slots[i].corr) & (cap - 1);
			while (n[j].corr)
				j = (j + 1) & (cap - 1);
			n[j] = g->slots[i];
		}
		free(g->slots);
		g->slots = n;
		g->slots_cap = cap;
	}
	if (!g->slots_cap)
		return NULL;
	size_t j = hash64(corr) & (g->slots_cap - 1);
	while (g->slots[j].corr && g->slots[j].corr != corr)
		j = (j + 1) & (g->slots_cap - 1);
	if (g->slots[j].corr == corr)
		return &g->slots[j];
	if (!create)
		return NULL;
	g->slots[j] = (struct strb_gpu_slot){.corr = corr, .call = -1};
	g->slots_used++;
	return &g->slots[j];
}

struct strb_gpu_ref strb_gpu_find_sparse(struct strb_gpu *g, uint64_t corr)
{
	struct strb_gpu_ref r = {NULL, 0, 0};
	const struct strb_gpu_slot *s = slot(g, corr, false);
	if (s) {
		r.call = s->call >= 0 ? &g->calls[s->call] : NULL;
		r.ext0 = s->ext0;
		r.ext1 = s->ext1;
	}
	return r;
}

static void set_call(struct strb_gpu *g, uint64_t corr, int32_t call)
{
	if (!corr)
		return;
	if (g->dense_call) {
		g->dense_call[corr - g->dense_base] = call + 1;
		return;
	}
	struct strb_gpu_slot *s = slot(g, corr, true);
	if (s)
		s->call = call;
}

/* Where an external id of corr goes, or NULL. */
static uint64_t *ext_of(struct strb_gpu *g, uint64_t corr, bool range)
{
	if (!corr)
		return NULL;
	if (g->dense_call) {
		struct strb_gpu_ext_pair *p = &g->dense_ext[corr - g->dense_base];
		return range ? &p->ext1 : &p->ext0;
	}
	struct strb_gpu_slot *s = slot(g, corr, true);
	return !s ? NULL : range ? &s->ext1 : &s->ext0;
}

static void id_range(uint64_t id, uint64_t *lo, uint64_t *hi, size_t *n)
{
	if (!id)
		return;
	*lo = *n && *lo < id ? *lo : id;
	*hi = *n && *hi > id ? *hi : id;
	(*n)++;
}

void strb_gpu_build_table(struct strb_gpu *g)
{
	uint64_t lo = 0, hi = 0;
	size_t n = 0;
	if (g->rc)
		return;
	for (size_t i = 0; i < g->ncalls; i++)
		id_range(g->calls[i].corr, &lo, &hi, &n);
	for (size_t i = 0; i < g->nexts; i++)
		id_range(g->exts[i].corr, &lo, &hi, &n);
	/* One allocation for every activity instead of doublings and copies
	 * (a rolling trace, which keeps only a window, needs none). */
	if (strb_trace_reserve(g->t, g->st->gpu_records + 64)) {
		g->rc = -ENOMEM;
		return;
	}
	/* Vendors number calls 1, 2, 3...: when the ids seen are dense, index
	 * them directly (sequential, cache-friendly) instead of hashing. */
	uint64_t span = n ? hi - lo + 1 : 0;
	if (n && span >= 1 && span <= 4 * (uint64_t)n + 4096) {
		g->dense_call = calloc(span, sizeof(*g->dense_call));
		g->dense_ext = g->nexts ? calloc(span, sizeof(*g->dense_ext)) : NULL;
		if (g->dense_call && (g->dense_ext || !g->nexts)) {
			g->dense_base = lo;
			g->dense_len = (uint32_t)span;
		} else {
			free(g->dense_call);
			free(g->dense_ext);
			g->dense_call = NULL;
			g->dense_ext = NULL;
		}
	} /* else sparse: hash */
	for (size_t i = 0; i < g->ncalls && !g->rc; i++)
		set_call(g, g->calls[i].corr, (int32_t)i);
	for (size_t i = 0; i < g->nexts && !g->rc; i++) {
		uint64_t *ext = ext_of(g, g->exts[i].corr, g->exts[i].which == 1);
		if (ext)
			*ext = g->exts[i].id;
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

static const struct strb_gpu_call *sort_base;

static int cmp_call(const void *a, const void *b)
{
	const struct strb_gpu_call *x = &sort_base[*(const size_t *)a], *y = &sort_base[*(const size_t *)b];
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* Whether activity i is a strobe op or range, which GPU work links to. */
static bool op_or_range(const struct strobe_trace *t, size_t i)
{
	enum strobe_activity_type type = strb_trace_type(t, i);
	return type == STROBE_ACTIVITY_CPU_OP || type == STROBE_ACTIVITY_USER_ANNOTATION;
}

static size_t ops_and_ranges(const struct strobe_trace *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->count; i++)
		n += op_or_range(t, i);
	return n;
}

/* A sweep per thread in time order with a stack of open intervals: ranges
 * nest, so the top of the stack is the innermost one around a call. */
void strb_gpu_link_calls(struct strb_gpu *g)
{
	struct strobe_trace *t = g->t;
	if (g->rc)
		return;
	size_t n = ops_and_ranges(t);
	if (!n || !g->ncalls)
		return;
	struct interval *iv = malloc(n * sizeof(*iv));
	size_t *order = malloc(g->ncalls * sizeof(*order));
	struct interval **stack = malloc(2 * n * sizeof(*stack));
	if (!iv || !order || !stack) {
		g->rc = -ENOMEM;
		goto out;
	}
	n = 0;
	struct strb_act_ref r;
	for (size_t i = 0; i < t->count; i++) {
		if (!op_or_range(t, i))
			continue;
		strb_trace_get(t, i, &r);
		const struct strobe_activity *a = r.a;
		if (a->device != t->pid)
			continue;
		iv[n++] = (struct interval){(pid_t)a->resource, a->start_ns, a->end_ns, a->id,
		                            a->type == STROBE_ACTIVITY_CPU_OP};
	}
	qsort(iv, n, sizeof(*iv), cmp_interval);
	for (size_t i = 0; i < g->ncalls; i++)
		order[i] = i;
	sort_base = g->calls;
	qsort(order, g->ncalls, sizeof(*order), cmp_call);

	/* Two stacks share one array: ops from the bottom, ranges from n up. */
	struct interval **ops = stack, **ranges = stack + n;
	size_t nops = 0, nranges = 0, next = 0;
	pid_t tid = -1;
	for (size_t k = 0; k < g->ncalls; k++) {
		struct strb_gpu_call *call = &g->calls[order[k]];
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

static int cmp_call_corr(const void *a, const void *b)
{
	const struct strb_gpu_call *x = a, *y = b;
	return (x->corr > y->corr) - (x->corr < y->corr);
}

int strb_gpu_relink(struct strobe_trace *t, const struct strb_window *w, size_t from, size_t to)
{
	struct strb_gpu g;
	if (strb_trace_unroll(t)) /* it changes activities in place */
		return -ENOMEM;
	strb_gpu_init(&g, t, w);
	for (size_t i = from; i < to; i++) {
		const struct strobe_activity *a = &t->acts[i];
		if (a->device == t->pid && a->id && !a->linked_id)
			strb_gpu_add_call(&g, &(struct strb_gpu_call){.corr = a->id,
			                                              .tid = (pid_t)a->resource,
			                                              .start = a->start_ns,
			                                              .end = a->end_ns});
	}
	strb_gpu_link_calls(&g);
	if (!g.rc && g.ncalls) {
		qsort(g.calls, g.ncalls, sizeof(*g.calls), cmp_call_corr);
		for (size_t i = from; i < to; i++) {
			struct strobe_activity *a = &t->acts[i];
			struct strb_gpu_call key = {.corr = a->id};
			const struct strb_gpu_call *c =
			    a->id && !a->linked_id
			        ? bsearch(&key, g.calls, g.ncalls, sizeof(key), cmp_call_corr)
			        : NULL;
			if (c)
				a->linked_id = c->op_id;
		}
	}
	int rc = g.rc;
	strb_gpu_free(&g);
	return rc;
}

/* ---- pass 2: activities ------------------------------------------------------ */

const char *strb_gpu_keep(struct strb_gpu *g, const char *s)
{
	const char *k = strb_trace_intern(g->t, s, strlen(s));
	if (!k)
		g->rc = -ENOMEM;
	return k;
}

void strb_gpu_note_new_row(struct strb_gpu *g, uint32_t device, uint32_t stream, int64_t start, int64_t end)
{
	uint64_t key = (uint64_t)device << 32 | stream;
	size_t i;
	for (i = 0; i < g->nrows && g->rows[i] != key; i++)
		;
	if (i == g->nrows) {
		size_t cap = g->rows_cap;
		if (!strb_grow_array((void **)&g->rows, &g->rows_cap, i + 1, sizeof(*g->rows)) ||
		    !strb_grow_array((void **)&g->row_end, &cap, i + 1, sizeof(*g->row_end))) {
			g->rc = -ENOMEM;
			return;
		}
		g->rows[i] = key;
		g->row_end[i] = INT64_MIN;
		g->nrows++;
		if (device < STRB_GPU_MAX_DEVICES)
			g->device_seen[device] = true;
	}
	g->last_row = i;
	if (start < g->row_end[i])
		g->overlap = true;
	if (end > g->row_end[i])
		g->row_end[i] = end;
}

bool strb_gpu_row_busy(const struct strb_gpu *g, uint32_t device, uint32_t stream)
{
	uint64_t key = (uint64_t)device << 32 | stream;
	for (size_t i = 0; i < g->nrows; i++)
		if (g->rows[i] == key)
			return true;
	return false;
}

void strb_gpu_widen_span(struct strb_gpu *g, const struct strobe_activity *a, uint64_t range)
{
	for (size_t i = g->nspans; i-- > 0;) {
		struct strb_gpu_span *sp = &g->spans[i];
		if (sp->range_id == range && sp->device == a->device && sp->stream == a->resource) {
			if (a->start_ns < sp->start)
				sp->start = a->start_ns;
			if (a->end_ns > sp->end)
				sp->end = a->end_ns;
			return;
		}
	}
	if (strb_gpu_grow(g, (void **)&g->spans, &g->spans_cap, g->nspans + 1, sizeof(*g->spans)))
		g->spans[g->nspans++] =
		    (struct strb_gpu_span){a->device, a->resource, range, a->start_ns, a->end_ns};
}

const char *strb_gpu_kernel_name_slow(struct strb_gpu *g, const char *raw)
{
	if (!raw)
		return strb_trace_intern(g->t, "<unknown kernel>", 16);
	if ((g->names_used + 1) * 2 > g->names_cap) {
		size_t cap = g->names_cap ? g->names_cap * 2 : 1024;
		const char **k = calloc(cap, sizeof(*k)), **v = calloc(cap, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			g->rc = -ENOMEM;
			return NULL;
		}
		for (size_t i = 0; i < g->names_cap; i++) {
			if (!g->name_keys[i])
				continue;
			size_t j = ((uintptr_t)g->name_keys[i] >> 3) & (cap - 1);
			while (k[j])
				j = (j + 1) & (cap - 1);
			k[j] = g->name_keys[i];
			v[j] = g->name_values[i];
		}
		free(g->name_keys);
		free(g->name_values);
		g->name_keys = k;
		g->name_values = v;
		g->names_cap = cap;
	}
	/* Keyed by pointer: the vendor's strings outlive the pass. */
	size_t j = ((uintptr_t)raw >> 3) & (g->names_cap - 1);
	while (g->name_keys[j] && g->name_keys[j] != raw)
		j = (j + 1) & (g->names_cap - 1);
	if (g->name_keys[j])
		return g->name_values[j];
	char *dem = strb_gpu_demangle(raw);
	const char *name = dem ? dem : raw;
	const char *v = strb_trace_intern(g->t, name, strlen(name));
	free(dem);
	if (!v) {
		g->rc = -ENOMEM;
		return NULL;
	}
	g->name_keys[j] = raw;
	g->name_values[j] = v;
	g->names_used++;
	return v;
}

/* ---- after pass 2 -------------------------------------------------------------- */

struct named_id {
	uint64_t id;
	const char *name;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named_id *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* GPU spans of strobe ranges (and of ops named through range ids): one per
 * (device, stream, range), named after the range. */
void strb_gpu_emit_spans(struct strb_gpu *g)
{
	const struct strobe_trace *t = g->t;
	if (!g->nspans || g->rc)
		return;
	size_t n = ops_and_ranges(t);
	struct named_id *ids = malloc((n + 1) * sizeof(*ids));
	if (!ids) {
		g->rc = -ENOMEM;
		return;
	}
	n = 0;
	struct strb_act_ref r;
	for (size_t i = 0; i < t->count; i++) {
		if (!op_or_range(t, i))
			continue;
		strb_trace_get(t, i, &r);
		ids[n++] = (struct named_id){r.a->id, r.a->name};
	}
	qsort(ids, n, sizeof(*ids), cmp_named);
	for (size_t i = 0; i < g->nspans && !g->rc; i++) {
		const struct strb_gpu_span *sp = &g->spans[i];
		struct named_id key = {sp->range_id, NULL};
		const struct named_id *hit = bsearch(&key, ids, n, sizeof(*ids), cmp_named);
		if (!hit)
			continue;
		struct strobe_activity *a =
		    strb_gpu_emit(g, STROBE_ACTIVITY_GPU_USER_ANNOTATION, hit->name, sp->start, sp->end,
		                  sp->device, sp->stream, NULL, 0);
		if (a)
			a->id = sp->range_id;
	}
	free(ids);
}

uint64_t strb_gpu_count_launches(struct strb_gpu *g)
{
	uint64_t missing = 0;
	for (size_t i = 0; i < g->ncalls; i++) {
		const struct strb_gpu_call *call = &g->calls[i];
		if (!call->emitted || !call->launch)
			continue;
		g->st->gpu_launches++;
		missing += !call->got_kernel;
	}
	g->st->gpu_launches_without_kernel += missing;
	return missing;
}

void strb_gpu_add_rows(struct strb_gpu *g)
{
	char pname[256];
	strb_process_name(pname, sizeof(pname));
	for (uint32_t d = 0; d < STRB_GPU_MAX_DEVICES; d++) {
		if (!g->device_seen[d])
			continue;
		char label[32];
		snprintf(label, sizeof(label), "GPU %u", d);
		struct strobe_resource p = {sizeof(p), STROBE_RESOURCE_PROCESS, d, 0, pname,
		                            label,     STRB_GPU_SORT_OFFSET + d};
		if (strb_trace_add_resource(g->t, &p))
			g->rc = -ENOMEM;
	}
	for (size_t i = 0; i < g->nrows; i++) {
		uint32_t device = (uint32_t)(g->rows[i] >> 32), stream = (uint32_t)g->rows[i];
		char title[48];
		if (g->row_title)
			g->row_title(stream, title, sizeof(title));
		else /* libkineto's stream rows end with a space. */
			snprintf(title, sizeof(title), "stream %u ", stream);
		struct strobe_resource r = {sizeof(r), STROBE_RESOURCE_STREAM, device, stream, title, NULL,
		                            stream};
		if (strb_trace_add_resource(g->t, &r))
			g->rc = -ENOMEM;
	}
}

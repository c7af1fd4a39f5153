/* HTA's get_frequent_cuda_kernel_sequences: for each root op, the GPU
 * events its subtree launched, in start order; identical (op, sequence)
 * pairs counted per rank. See docs/analysis.md.
 *
 * HTA builds each thread's call stack and reads an op's kernels off its
 * subtree; here a launch is in an op's subtree when it runs on the op's
 * pid/tid row inside the op's time span, which is what nesting on one
 * thread means. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sort.h"

/* A GPU event (h, in hrecs) and the start and row of the CPU call that
 * launched it (an_launch). */
struct link {
	int64_t lts;
	uint32_t row, h;
} AN_PACKED;

/* An op that roots a sequence. */
struct root {
	int64_t rank;
	uint32_t row, name, depth;
	int64_t ts, dur;
};

struct pattern {
	int64_t rank;
	uint32_t op, kernels;
	uint64_t count;
	int64_t gpu, cpu;
};

static bool gpu_cat(const char *cat)
{
	static const char *const cats[] = {"kernel",    "gpu_memcpy",          "gpu_memset",
	                                   "cuda_sync", "gpu_user_annotation", NULL};
	return an_name_in(cat, cats);
}

static const struct an_trace *sort_trace; /* for link_less */

static bool link_less(const struct link *x, const struct link *y)
{
	if (x->row != y->row)
		return x->row < y->row;
	if (x->lts != y->lts)
		return x->lts < y->lts;
	return sort_trace->hrecs[x->h].seq < sort_trace->hrecs[y->h].seq;
}

AN_SORT_DEFINE(sort_links, struct link, link_less)

static int cmp_kernel_ts(const void *pa, const void *pb)
{
	const struct an_hrec *x = *(const struct an_hrec *const *)pa, *y = *(const struct an_hrec *const *)pb;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The GPU events (stream > 0) with a launch in their own rank, as their
 * indexes in hrecs in link order: sorted as links, then kept as the
 * indexes alone (the launch's row and start are looked up again), a
 * third of the room, the rest handed back. */
static int collect_links(const struct an_trace *a, uint32_t **out, size_t *n)
{
	*n = 0;
	struct link *v = malloc((a->nhrecs ? a->nhrecs : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < a->nhrecs; i++) {
		const struct an_hrec *r = &a->hrecs[i];
		if (an_hrec_stream(a, r) <= 0)
			continue;
		struct an_hcpu l;
		if (an_launch(a, r, &l))
			v[(*n)++] = (struct link){l.ts, l.row, (uint32_t)i};
	}
	sort_trace = a;
	sort_links(v, *n);
	uint32_t *h = (uint32_t *)(void *)v;
	for (size_t i = 0; i < *n; i++) /* never past link i's own bytes */
		memmove(&h[i], &v[i].h, sizeof(*h));
	uint32_t *cut = realloc(h, (*n ? *n : 1) * sizeof(*cut));
	*out = cut ? cut : h;
	return 0;
}

/* What each root is counted with. */
struct count_ctx {
	const uint32_t *l; /* GPU events (hrecs) in link order */
	size_t nl;
	size_t
	    at; /* the last root's first link: roots come by row and start, so the next one's is not before */
	const struct an_hrec **k; /* room for kcap */
	size_t kcap;
	char *key;
	size_t cap;
	struct an_table *by;
};

static int count_root(const struct an_trace *a, struct count_ctx *c, const struct root *r);

/* Per name: 1 for GPU categories (skipped), 2 for cpu_op, 4 for a
 * candidate under seq_op. */
static uint8_t *name_flags(const struct an_trace *a)
{
	uint8_t *f = calloc(a->names.n ? a->names.n : 1, 1);
	for (size_t i = 0; f && i < a->names.n; i++) {
		const char *cat = an_name_cat(a, (uint32_t)i);
		f[i] = (uint8_t)((gpu_cat(cat) ? 1 : 0) | (!strcmp(cat, "cpu_op") ? 2 : 0) |
		                 (a->seq_op && strstr(an_name(a, (uint32_t)i), a->seq_op) ? 4 : 0));
	}
	return f;
}

/* The least depth of a candidate in each rank. */
struct min_depth {
	int64_t rank;
	uint32_t depth;
};

struct min_depths {
	struct min_depth *v;
	size_t n, cap;
};

/* The candidate ops (by row, start, longest first, as the layout leaves
 * them): with seq_op, CPU events whose name holds it, at the
 * shallowest depth of their rank's candidates (min, from a first walk with
 * c NULL); else cpu_ops with no cpu_op around them. Each is counted as it
 * is found. */
static int walk_roots(const struct an_trace *a, const uint8_t *flags, struct min_depths *min,
                      struct count_ctx *c)
{
	struct open_op {
		int64_t end;
		bool cpu_op;
	} *stack = NULL;
	size_t depth = 0, scap = 0, ops = 0;
	int rc = 0;
	struct an_xall it;
	struct an_xrec ev, *e = &ev;
	uint32_t row = 0;
	for (an_xall(a, &it); !rc && an_xall_next(&it, e);) {
		uint8_t f = flags[e->name];
		if (f & 1)
			continue;
		if (depth && e->row != row)
			depth = ops = 0;
		row = e->row;
		while (depth && stack[depth - 1].end <= e->ts)
			ops -= stack[--depth].cpu_op;
		bool cpu_op = f & 2;
		bool cand = a->seq_op ? (f & 4) != 0 : cpu_op && !ops;
		if (cand) {
			struct root r = {an_row_rank(a, e->row), e->row, e->name,
			                 (uint32_t)depth,        e->ts,  e->dur};
			size_t k = 0;
			while (k < min->n && min->v[k].rank != r.rank)
				k++;
			if (!c && k == min->n)
				rc = AN_PUSH(min->v, min->n, min->cap, (struct min_depth){r.rank, r.depth});
			else if (!c && r.depth < min->v[k].depth)
				min->v[k].depth = r.depth;
			else if (c && (!a->seq_op || min->v[k].depth == r.depth))
				rc = count_root(a, c, &r);
		}
		if (!rc && !an_grow((void **)&stack, depth, &scap, sizeof(*stack)))
			rc = -ENOMEM;
		if (!rc) {
			stack[depth++] = (struct open_op){an_sat_add(e->ts, e->dur), cpu_op};
			ops += cpu_op;
		}
	}
	free(stack);
	return rc;
}

/* Appends text to the growable string *s (length *n). */
static int append(char **s, size_t *n, size_t *cap, const char *text)
{
	size_t len = strlen(text);
	if (!an_grow((void **)s, *n + len + 1, cap, 1))
		return -ENOMEM;
	memcpy(*s + *n, text, len + 1);
	*n += len;
	return 0;
}

/* Whether link i's launch comes before root r (row, then start). */
static bool link_before(const struct an_trace *a, const struct count_ctx *c, size_t i, const struct root *r)
{
	struct an_hcpu call = {0}; /* the links' GPU events all have launches */
	an_launch(a, &a->hrecs[c->l[i]], &call);
	return call.row < r->row || (call.row == r->row && call.ts < r->ts);
}

/* The GPU events of root r (launched inside it on its row), in start
 * order, into c->k: how many, or -ENOMEM. */
static ptrdiff_t kernels_of(const struct an_trace *a, struct count_ctx *c, const struct root *r)
{
	const uint32_t *l = c->l;
	int64_t end = an_sat_add(r->ts, r->dur);
	size_t lo = c->at, hi = c->at, nl = c->nl, n = 0;
	/* the first link of the row starting at or after the op: galloped to
	 * from the last root's, then searched */
	for (size_t step = 1; hi < nl && link_before(a, c, hi, r); step *= 2) {
		lo = hi + 1;
		hi = nl - lo > step ? lo + step : nl;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (link_before(a, c, mid, r))
			lo = mid + 1;
		else
			hi = mid;
	}
	c->at = lo;
	struct an_hcpu call = {0}; /* as above */
	for (size_t i = lo; i < nl; i++) {
		const struct an_hrec *h = &a->hrecs[l[i]];
		an_launch(a, h, &call);
		if (call.row != r->row || call.ts > end)
			break;
		if (an_sat_add(call.ts, an_hcpu_dur(a, &call)) > end)
			continue;
		if (!an_grow((void **)&c->k, n, &c->kcap, sizeof(*c->k)))
			return -ENOMEM;
		c->k[n++] = h;
	}
	an_sort(c->k, n, sizeof(*c->k), cmp_kernel_ts);
	return (ptrdiff_t)n;
}

static int cmp_kseq(const void *pa, const void *pb)
{
	const struct an_kseq *x = pa, *y = pb;
	if (x->rank != y->rank)
		return (uint64_t)x->rank < (uint64_t)y->rank ? -1 : 1; /* -1 (no rank) last */
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->pattern, y->pattern);
}

/* Root r's sequence, interned by rank, op and kernel names. */
static int count_root(const struct an_trace *a, struct count_ctx *c, const struct root *r)
{
	ptrdiff_t got = kernels_of(a, c, r);
	if (got < 0)
		return (int)got;
	size_t nk = (size_t)got, n = 0;
	if (nk < AN_SEQ_MIN_LEN)
		return 0;
	char num[48];
	snprintf(num, sizeof(num), "%" PRId64 ",%" PRIu32, r->rank, r->name);
	int rc = append(&c->key, &n, &c->cap, num);
	int64_t gpu = 0;
	for (size_t j = 0; j < nk && !rc; j++) {
		snprintf(num, sizeof(num), ",%" PRIu32, c->k[j]->name);
		rc = append(&c->key, &n, &c->cap, num);
		gpu = an_sat_add(gpu, an_hrec_dur(a, c->k[j]));
	}
	struct pattern *p = rc ? NULL : an_table_get(c->by, c->key);
	if (!p)
		return -ENOMEM;
	*p = (struct pattern){r->rank,
	                      r->name,
	                      (uint32_t)nk,
	                      p->count + 1,
	                      an_sat_add(p->gpu, gpu),
	                      an_sat_add(p->cpu, r->dur)};
	return 0;
}

/* The "op|kernel|..." text of an interned key ("rank,op,k1,k2,..."), and
 * the kernels' name ids. */
static int pattern_of(const struct an_trace *a, const char *key, struct an_kseq *k)
{
	char *end;
	size_t n = 0, cap = 0;
	const char *p = strchr(key, ',') + 1;
	if (!(k->names = malloc(k->kernels * sizeof(*k->names))))
		return -ENOMEM;
	for (size_t i = 0; *p; i++) {
		unsigned long id = strtoul(p, &end, 10);
		if ((i && append(&k->pattern, &n, &cap, "|")) ||
		    append(&k->pattern, &n, &cap, an_name(a, (uint32_t)id)))
			return -ENOMEM;
		if (i)
			k->names[i - 1] = (uint32_t)id;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int an_kseq_compute(struct an_trace *a)
{
	struct an_table by = {.item_size = sizeof(struct pattern)};
	struct count_ctx c = {.by = &by};
	struct min_depths min = {0};
	uint32_t *l = NULL;
	uint8_t *flags = name_flags(a);
	int rc = flags ? collect_links(a, &l, &c.nl) : -ENOMEM;
	c.l = l;
	if (!rc && a->seq_op)
		rc = walk_roots(a, flags, &min, NULL);
	if (!rc)
		rc = walk_roots(a, flags, &min, &c);
	free(l);
	free(c.k);
	free(c.key);
	free(flags);
	free(min.v);
	if (!rc && by.n && !(a->kseqs = calloc(by.n, sizeof(*a->kseqs))))
		rc = -ENOMEM;
	for (size_t i = 0; i < by.n && !rc; i++) {
		const struct pattern *p = an_table_item(&by, i);
		struct an_kseq *k = &a->kseqs[a->nkseqs++];
		*k = (struct an_kseq){p->rank, p->op, p->kernels, p->count, p->gpu, p->cpu, NULL, NULL};
		rc = pattern_of(a, by.keys[i], k);
	}
	an_table_free(&by);
	if (!rc)
		an_sort(a->kseqs, a->nkseqs, sizeof(*a->kseqs), cmp_kseq);
	return rc;
}

void an_kseq_free(struct an_trace *a)
{
	for (size_t i = 0; i < a->nkseqs; i++) {
		free(a->kseqs[i].names);
		free(a->kseqs[i].pattern);
	}
	free(a->kseqs);
}

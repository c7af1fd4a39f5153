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

/* A GPU event and the CPU call that launched it. */
struct link {
	uint32_t row, name, seq;
	int64_t lts, lend; /* the call */
	int64_t ts, dur;   /* the GPU event */
};

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

static int cmp_link(const void *pa, const void *pb)
{
	const struct link *x = pa, *y = pb;
	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->lts != y->lts)
		return x->lts < y->lts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_kernel_ts(const void *pa, const void *pb)
{
	const struct link *x = *(const struct link *const *)pa, *y = *(const struct link *const *)pb;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The GPU events (stream > 0) with a launch in their own rank. */
static int collect_links(const struct an_trace *a, struct link **out, size_t *n)
{
	*n = 0;
	*out = malloc((a->nhrecs ? a->nhrecs : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (size_t i = 0; i < a->nhrecs; i++) {
		const struct an_hrec *r = &a->hrecs[i];
		if (r->stream <= 0)
			continue;
		const struct an_process *p = an_table_item(&a->pids, r->pid);
		const struct an_hcpu *l = an_launch_of(a, r->corr, p->rank);
		if (l)
			(*out)[(*n)++] = (struct link){
			    l->row, r->name, r->seq, l->ts, an_sat_add(l->ts, l->dur), r->ts, r->dur};
	}
	an_sort(*out, *n, sizeof(**out), cmp_link);
	return 0;
}

/* The candidate ops (x sorted by row, start, longest first, as self time
 * leaves it): with seq_op, CPU events whose name holds it, at the
 * shallowest depth of their rank's candidates; else cpu_ops with no cpu_op
 * around them. */
static int collect_roots(const struct an_trace *a, struct root **out, size_t *n)
{
	size_t cap = 0, *stack = NULL, depth = 0, scap = 0, ops = 0;
	*out = NULL;
	*n = 0;
	int rc = 0;
	for (size_t i = 0; i < a->nx && !rc; i++) {
		const struct an_xrec *e = &a->x[i];
		const char *cat = an_name_cat(a, e->name);
		if (gpu_cat(cat))
			continue;
		if (depth && e->row != a->x[stack[0]].row)
			depth = ops = 0;
		while (depth && an_sat_add(a->x[stack[depth - 1]].ts, a->x[stack[depth - 1]].dur) <= e->ts)
			ops -= !strcmp(an_name_cat(a, a->x[stack[--depth]].name), "cpu_op");
		bool cpu_op = !strcmp(cat, "cpu_op");
		bool cand = a->seq_op ? strstr(an_name(a, e->name), a->seq_op) != NULL : cpu_op && !ops;
		if (cand && AN_PUSH(*out, *n, cap,
		                    (struct root){an_row_rank(a, e->row), e->row, e->name, (uint32_t)depth,
		                                  e->ts, e->dur}))
			rc = -ENOMEM;
		if (!rc && !an_grow((void **)&stack, depth, &scap, sizeof(*stack)))
			rc = -ENOMEM;
		if (!rc) {
			stack[depth++] = i;
			ops += cpu_op;
		}
	}
	free(stack);
	if (rc || !a->seq_op)
		return rc;
	/* HTA starts only from the shallowest candidates (per rank here). */
	struct root *min = NULL; /* one per rank: its least depth */
	size_t nmin = 0, mcap = 0, kept = 0;
	for (size_t i = 0; i < *n && !rc; i++) {
		size_t k = 0;
		while (k < nmin && min[k].rank != (*out)[i].rank)
			k++;
		if (k == nmin)
			rc = AN_PUSH(min, nmin, mcap, (*out)[i]);
		else if ((*out)[i].depth < min[k].depth)
			min[k].depth = (*out)[i].depth;
	}
	for (size_t i = 0; i < *n && !rc; i++) {
		size_t k = 0;
		while (min[k].rank != (*out)[i].rank)
			k++;
		if ((*out)[i].depth == min[k].depth)
			(*out)[kept++] = (*out)[i];
	}
	free(min);
	*n = kept;
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

/* The GPU events of root r (launched inside it on its row), in start order. */
static size_t kernels_of(const struct link *l, size_t nl, const struct root *r, const struct link **out)
{
	int64_t end = an_sat_add(r->ts, r->dur);
	size_t lo = 0, hi = nl, n = 0;
	while (lo < hi) { /* the first link of the row starting at or after the op */
		size_t mid = (lo + hi) / 2;
		if (l[mid].row < r->row || (l[mid].row == r->row && l[mid].lts < r->ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < nl && l[i].row == r->row && l[i].lts <= end; i++)
		if (l[i].lend <= end)
			out[n++] = &l[i];
	an_sort(out, n, sizeof(*out), cmp_kernel_ts);
	return n;
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

/* Each root's sequence, interned by rank, op and kernel names. */
static int count_patterns(const struct link *l, size_t nl, const struct root *r, size_t nr,
                          struct an_table *by)
{
	const struct link **k = malloc((nl ? nl : 1) * sizeof(*k));
	char *key = NULL;
	size_t cap = 0;
	int rc = k ? 0 : -ENOMEM;
	for (size_t i = 0; i < nr && !rc; i++) {
		size_t nk = kernels_of(l, nl, &r[i], k), n = 0;
		if (nk < AN_SEQ_MIN_LEN)
			continue;
		char num[48];
		snprintf(num, sizeof(num), "%" PRId64 ",%" PRIu32, r[i].rank, r[i].name);
		rc = append(&key, &n, &cap, num);
		int64_t gpu = 0;
		for (size_t j = 0; j < nk && !rc; j++) {
			snprintf(num, sizeof(num), ",%" PRIu32, k[j]->name);
			rc = append(&key, &n, &cap, num);
			gpu = an_sat_add(gpu, k[j]->dur);
		}
		struct pattern *p = rc ? NULL : an_table_get(by, key);
		if (!p) {
			rc = -ENOMEM;
			break;
		}
		*p = (struct pattern){r[i].rank,
		                      r[i].name,
		                      (uint32_t)nk,
		                      p->count + 1,
		                      an_sat_add(p->gpu, gpu),
		                      an_sat_add(p->cpu, r[i].dur)};
	}
	free(k);
	free(key);
	return rc;
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
	struct link *l = NULL;
	struct root *r = NULL;
	size_t nl = 0, nr = 0;
	struct an_table by = {.item_size = sizeof(struct pattern)};
	int rc = collect_links(a, &l, &nl);
	if (!rc)
		rc = collect_roots(a, &r, &nr);
	if (!rc)
		rc = count_patterns(l, nl, r, nr, &by);
	free(l);
	free(r);
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

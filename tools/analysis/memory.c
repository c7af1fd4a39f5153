/* The GPU memory timeline of a trace: each device's "GPU memory allocated
 * (bytes)" track (what strobe writes with the gpu_memory type), its peak,
 * when, and the op that was running then. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

int an_memory_add(struct an_trace *a, uint32_t pid, int64_t ts, double bytes)
{
	if (a->nmemsamples == a->capmemsamples) {
		size_t cap = a->capmemsamples ? a->capmemsamples * 2 : 256;
		struct an_memsample *p = realloc(a->memsamples, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		a->memsamples = p;
		a->capmemsamples = cap;
	}
	a->memsamples[a->nmemsamples++] = (struct an_memsample){pid, ts, bytes};
	return 0;
}

static int cmp_sample(const void *pa, const void *pb)
{
	const struct an_memsample *x = pa, *y = pb;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

static bool category_is(const struct an_trace *a, uint32_t name, const char *cat)
{
	const struct an_name *sn = an_table_item(&a->names, name);
	return !strcmp(a->xcats.keys[sn->cat], cat);
}

/* The innermost (shortest) cpu_op or user_annotation around ts, on any row;
 * else a kernel running on device pid at ts; UINT32_MAX for none. */
static uint32_t op_at(const struct an_trace *a, uint32_t pid, int64_t ts)
{
	uint32_t best = UINT32_MAX;
	int64_t best_dur = INT64_MAX;
	struct an_xall it;
	struct an_xrec ev, *x = &ev;
	for (an_xall(a, &it); an_xall_next(&it, x);) {
		if (x->ts > ts || ts - x->ts > x->dur || x->dur >= best_dur)
			continue;
		if (category_is(a, x->name, "cpu_op") || category_is(a, x->name, "user_annotation")) {
			best = x->name;
			best_dur = x->dur;
		}
	}
	for (size_t i = 0; i < a->ngpu && best == UINT32_MAX; i++) {
		const struct an_gpurec *g = &a->gpu[i];
		if (g->pid == pid && g->kind == AN_KERNEL && g->ts <= ts && ts - g->ts <= g->dur)
			best = g->name;
	}
	return best;
}

int an_memory_compute(struct an_trace *a)
{
	if (!a->nmemsamples)
		return 0;
	qsort(a->memsamples, a->nmemsamples, sizeof(*a->memsamples), cmp_sample);
	size_t ndev = 0;
	for (size_t i = 0; i < a->nmemsamples; i++)
		ndev += !i || a->memsamples[i].pid != a->memsamples[i - 1].pid;
	a->memory = calloc(ndev, sizeof(*a->memory));
	if (!a->memory)
		return -ENOMEM;
	int64_t window = an_window(a);
	struct an_memory *m = NULL;
	for (size_t i = 0; i < a->nmemsamples; i++) {
		const struct an_memsample *s = &a->memsamples[i];
		if (!m || s->pid != m->pid) {
			m = &a->memory[a->nmemory++];
			m->pid = s->pid;
			m->rank = ((const struct an_process *)an_table_item(&a->pids, s->pid))->rank;
			m->start = m->peak = s->bytes;
			m->peak_ts = s->ts;
			for (size_t b = 0; b < AN_BUCKETS; b++)
				m->buckets[b] = -1;
		}
		if (s->bytes > m->peak) {
			m->peak = s->bytes;
			m->peak_ts = s->ts;
		}
		m->last = s->bytes;
		m->samples++;
		size_t b = window > 0 && s->ts > a->first_ts
		               ? (size_t)((double)(s->ts - a->first_ts) / (double)window * AN_BUCKETS)
		               : 0;
		b = b >= AN_BUCKETS ? AN_BUCKETS - 1 : b;
		if (s->bytes > m->buckets[b])
			m->buckets[b] = s->bytes;
	}
	for (size_t d = 0; d < a->nmemory; d++)
		a->memory[d].op = op_at(a, a->memory[d].pid, a->memory[d].peak_ts);
	return 0;
}

void an_memory_free(struct an_trace *a)
{
	free(a->memsamples);
	free(a->memory);
}

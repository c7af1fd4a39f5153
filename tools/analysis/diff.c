/* strobe diff's comparison of two read traces: see diff.h. */
#include "analysis/diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One op or kernel: its rank, step position (SIZE_MAX: none), name, and
 * occurrence of that name in the step. */
struct item {
	int64_t rank;
	size_t step, k;
	const char *name;
	int64_t ts, dur;
};

/* One step of a trace: the first row of it in the steps table, with the
 * GPU busy time of all the rank's devices. */
struct tstep {
	int64_t rank, number, ts, dur, busy;
};

/* By rank, step and name; then by start (place) or occurrence (key). */
static int cmp_item_name(const struct item *x, const struct item *y)
{
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_item_place(const void *pa, const void *pb)
{
	const struct item *x = pa, *y = pb;
	int c = cmp_item_name(x, y);
	return c ? c : x->ts < y->ts ? -1 : x->ts > y->ts;
}

static int cmp_item_key(const struct item *x, const struct item *y)
{
	int c = cmp_item_name(x, y);
	return c ? c : x->k < y->k ? -1 : x->k > y->k;
}

/* The steps of t, one per (rank, start), in rank then time order. */
static int steps_of(const struct an_trace *t, struct tstep **out, size_t *n)
{
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	for (size_t i = 0; i < t->nsteps; i++) {
		const struct an_step *s = &t->steps[i];
		int64_t busy = s->pid == UINT32_MAX ? -1 : s->busy;
		struct tstep *last = *n ? &(*out)[*n - 1] : NULL;
		if (last && last->rank == s->rank && last->ts == s->ts) {
			if (busy >= 0)
				last->busy = last->busy < 0 ? busy : an_sat_add(last->busy, busy);
			continue;
		}
		if (AN_PUSH(*out, *n, cap, (struct tstep){s->rank, s->number, s->ts, s->dur, busy}))
			return -ENOMEM;
	}
	return 0;
}

/* Ranks in the steps' order: 0, 1, ..., then -1 (no rank). */
static bool rank_before(int64_t x, int64_t y)
{
	return (uint64_t)x < (uint64_t)y;
}

/* The position among its rank's steps of the step of rank holding ts, or
 * SIZE_MAX. s is sorted by rank, then start. */
static size_t step_at(const struct tstep *s, size_t n, int64_t rank, int64_t ts)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the rank's first step */
		size_t mid = (lo + hi) / 2;
		if (rank_before(s[mid].rank, rank))
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = lo;
	hi = n;
	while (lo < hi) { /* the first of the rank's steps starting after ts */
		size_t mid = (lo + hi) / 2;
		if (s[mid].rank == rank && s[mid].ts <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == first || ts >= an_sat_add(s[lo - 1].ts, s[lo - 1].dur))
		return SIZE_MAX;
	return lo - 1 - first;
}

static bool is_op(const struct an_trace *t, uint32_t name)
{
	const struct an_name *sn = an_table_item(&t->names, name);
	const char *cat = t->xcats.keys[sn->cat];
	return !strcmp(cat, "cpu_op") || !strcmp(cat, "user_annotation");
}

static bool is_step_name(const struct an_trace *t, uint32_t name)
{
	for (size_t i = 0; i < t->nsteps; i++)
		if (t->steps[i].name == name)
			return true;
	return false;
}

/* The ops (kernels when kernels) of t with their places. */
static int items_of(const struct an_trace *t, const struct tstep *steps, size_t nsteps, bool kernels,
                    struct item **out, size_t *n)
{
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	struct an_xall all;
	struct an_xrec ev, *x = &ev;
	an_xall(t, &all);
	for (size_t i = 0;; i++) {
		uint32_t name, pid;
		int64_t ts, dur;
		if (kernels) {
			if (i >= t->ngpu)
				break;
			const struct an_gpurec *g = &t->gpu[i];
			if (g->kind != AN_KERNEL && g->kind != AN_NCCL)
				continue;
			name = g->name, pid = g->pid, ts = g->ts, dur = g->dur;
		} else {
			if (!an_xall_next(&all, x))
				break;
			if (!is_op(t, x->name) || is_step_name(t, x->name))
				continue;
			name = x->name, ts = x->ts, dur = x->dur;
			pid = ((const struct an_row *)an_table_item(&t->rows, x->row))->pid;
		}
		int64_t rank = ((const struct an_process *)an_table_item(&t->pids, pid))->rank;
		struct item it = {rank, step_at(steps, nsteps, rank, ts), 0, an_name(t, name), ts, dur};
		if (AN_PUSH(*out, *n, cap, it))
			return -ENOMEM;
	}
	an_sort(*out, *n, sizeof(**out), cmp_item_place);
	for (size_t i = 1; i < *n; i++) {
		struct item *p = &(*out)[i - 1], *c = &(*out)[i];
		if (p->rank == c->rank && p->step == c->step && !strcmp(p->name, c->name))
			c->k = p->k + 1;
	}
	return 0;
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct an_diff_row *x = pa, *y = pb;
	int64_t cx = abs64(x->b_total - x->a_total), cy = abs64(y->b_total - y->a_total);
	if (cx != cy)
		return cx > cy ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Matches x (A) and y (B), both in key order, into rows per rank and name. */
static int match(const struct item *x, size_t nx, const struct item *y, size_t ny, struct an_diff_row **rows,
                 size_t *nrows)
{
	size_t cap = 0, i = 0, j = 0;
	struct an_table index = {.item_size = sizeof(size_t)};
	int rc = 0;
	while (!rc && (i < nx || j < ny)) {
		int c = i >= nx ? 1 : j >= ny ? -1 : cmp_item_key(&x[i], &y[j]);
		const struct item *it = c <= 0 ? &x[i] : &y[j];
		char key[40 + TR_NAME_MAX];
		snprintf(key, sizeof(key), "%lld" AN_SEP "%s", (long long)it->rank, it->name);
		size_t *slot = an_table_get(&index, key);
		if (!slot) {
			rc = -ENOMEM;
			break;
		}
		if (!*slot) {
			if (AN_PUSH(*rows, *nrows, cap,
			            (struct an_diff_row){.rank = it->rank, .name = it->name})) {
				rc = -ENOMEM;
				break;
			}
			*slot = *nrows;
		}
		struct an_diff_row *r = &(*rows)[*slot - 1];
		if (c <= 0) {
			r->a_count++;
			r->a_total = an_sat_add(r->a_total, x[i].dur);
		}
		if (c >= 0) {
			r->b_count++;
			r->b_total = an_sat_add(r->b_total, y[j].dur);
		}
		if (!c) {
			r->matched++;
			r->matched_change = an_sat_add(r->matched_change, y[j].dur - x[i].dur);
		} else if (c < 0) {
			r->gone_total = an_sat_add(r->gone_total, x[i].dur);
		} else {
			r->new_total = an_sat_add(r->new_total, y[j].dur);
		}
		i += c <= 0;
		j += c >= 0;
	}
	an_table_free(&index);
	an_sort(*rows, *nrows, sizeof(**rows), cmp_row);
	return rc;
}

static int compare_steps(const struct tstep *x, size_t nx, const struct tstep *y, size_t ny,
                         struct an_diff *d)
{
	size_t cap = 0, i = 0, j = 0;
	while (i < nx || j < ny) {
		int64_t rank = i >= nx                                        ? y[j].rank
		               : j >= ny || rank_before(x[i].rank, y[j].rank) ? x[i].rank
		                                                              : y[j].rank;
		size_t k = 0;
		for (; (i < nx && x[i].rank == rank) || (j < ny && y[j].rank == rank); k++) {
			const struct tstep *p = i < nx && x[i].rank == rank ? &x[i++] : NULL;
			const struct tstep *q = j < ny && y[j].rank == rank ? &y[j++] : NULL;
			struct an_diff_step s = {rank,
			                         k,
			                         p ? p->number : -1,
			                         q ? q->number : -1,
			                         p ? p->dur : 0,
			                         q ? q->dur : 0,
			                         p ? p->busy : -1,
			                         q ? q->busy : -1};
			if (AN_PUSH(d->steps, d->nsteps, cap, s))
				return -ENOMEM;
		}
	}
	return 0;
}

int an_diff(const struct an_trace *a, const struct an_trace *b, struct an_diff *d)
{
	struct tstep *sa = NULL, *sb = NULL;
	struct item *xa = NULL, *xb = NULL;
	size_t nsa = 0, nsb = 0, nxa = 0, nxb = 0;
	*d = (struct an_diff){0};
	int rc = steps_of(a, &sa, &nsa);
	if (!rc)
		rc = steps_of(b, &sb, &nsb);
	if (!rc)
		rc = compare_steps(sa, nsa, sb, nsb, d);
	for (int kernels = 0; kernels < 2 && !rc; kernels++) {
		rc = items_of(a, sa, nsa, kernels, &xa, &nxa);
		if (!rc)
			rc = items_of(b, sb, nsb, kernels, &xb, &nxb);
		if (!rc)
			rc = kernels ? match(xa, nxa, xb, nxb, &d->kernels, &d->nkernels)
			             : match(xa, nxa, xb, nxb, &d->ops, &d->nops);
		free(xa);
		free(xb);
		xa = xb = NULL;
	}
	free(sa);
	free(sb);
	return rc;
}

void an_diff_free(struct an_diff *d)
{
	free(d->ops);
	free(d->kernels);
	free(d->steps);
}

const char *an_diff_status(const struct an_diff_row *r)
{
	if (!r->a_count)
		return "new";
	if (!r->b_count)
		return "gone";
	int64_t change = r->b_total - r->a_total;
	return change > 0 ? "slower" : change < 0 ? "faster" : "same";
}

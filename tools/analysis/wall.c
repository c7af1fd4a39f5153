/* Times no longer than the window they are measured in: start/end (async)
 * ranges moved into categories of their own, and each name's, category's
 * and cpu_op's wall time (the union of its events' ranges over every row)
 * and self wall time (the union of their self stretches). A plain sum
 * counts a range nested in one of the same name, or running on several
 * threads at once, more than once. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sort.h"

/* A stretch of time [s, e). */
struct iv {
	int64_t s, e;
};

static bool async_row(const struct an_trace *a, uint32_t row)
{
	const struct an_tname *t = a->tnames.n ? an_table_find(&a->tnames, a->rows.keys[row]) : NULL;
	return t && strstr(t->name, AN_ASYNC_ROW);
}

/* Sums each name's and category's events again (after events changed
 * names): counts, total, self (before compute_self: the whole dur), max. */
static void recount(struct an_trace *a)
{
	for (size_t i = 0; i < a->xcats.n; i++) {
		struct an_category *c = an_table_item(&a->xcats, i);
		c->events = 0;
		c->total = c->self = 0;
		c->names = 0;
	}
	for (size_t i = 0; i < a->names.n; i++) {
		struct an_name *sn = an_table_item(&a->names, i);
		sn->count = 0;
		sn->total = sn->self = sn->max = 0;
	}
	for (size_t i = 0; i < a->nx; i++) {
		const struct an_xrec *x = &a->x[i];
		struct an_name *sn = an_table_item(&a->names, x->name);
		struct an_category *c = an_table_item(&a->xcats, sn->cat);
		c->names += !sn->count;
		c->events++;
		c->total = an_sat_add(c->total, x->dur);
		sn->count++;
		sn->total = an_sat_add(sn->total, x->dur);
		if (x->dur > sn->max)
			sn->max = x->dur;
	}
	for (size_t i = 0; i < a->names.n; i++) {
		struct an_name *sn = an_table_item(&a->names, i);
		sn->self = sn->total;
	}
}

int an_split_async(struct an_trace *a)
{
	bool moved = false;
	char key[TR_NAME_MAX + TR_SHORT_MAX + 64], cat[TR_SHORT_MAX + 32];
	for (size_t i = 0; i < a->nx; i++) {
		struct an_xrec *x = &a->x[i];
		if (!async_row(a, x->row))
			continue;
		const struct an_name *old = an_table_item(&a->names, x->name);
		const char *oldcat = a->xcats.keys[old->cat];
		if (strstr(oldcat, AN_ASYNC_CAT))
			continue;
		snprintf(cat, sizeof(cat), "%s%s", oldcat, AN_ASYNC_CAT);
		snprintf(key, sizeof(key), "%s" AN_SEP "%s", cat, an_name(a, x->name));
		struct an_category *c = an_table_get(&a->xcats, cat);
		struct an_name *sn = c ? an_table_get(&a->names, key) : NULL;
		if (!sn)
			return -ENOMEM;
		sn->cat = (uint32_t)an_table_index(&a->xcats, c);
		sn->cat_len = (uint32_t)strlen(cat);
		x->name = (uint32_t)an_table_index(&a->names, sn);
		moved = true;
	}
	if (moved)
		recount(a);
	return 0;
}

/* By start only: stretches that start together merge into one union
 * whichever comes first, so the in-place sort's order among them cannot
 * show. */
static bool iv_less(const struct iv *x, const struct iv *y)
{
	return x->s < y->s;
}

AN_SORT_DEFINE(sort_ivs, struct iv, iv_less)

/* What an event counts towards: its name, its category, its cpu_op row. */
enum group { BY_NAME, BY_CAT, BY_OP };

/* The stretches of one pass, bucketed by key: a counting walk sizes each
 * key's bucket, a second fills them. No key is stored and each bucket is
 * sorted alone, in place, so the memory is 16 bytes a stretch. */
struct walk {
	struct an_trace *a;
	enum group by;
	uint32_t *op; /* per event: its cpu_ops index, UINT32_MAX for none */
	bool fill;    /* false: count into at[key]; true: put at v[at[key]++] */
	size_t *at;   /* per key */
	size_t nkeys;
	struct iv *v;
	size_t cap;
};

static bool key_of(const struct walk *w, size_t i, uint64_t *key)
{
	const struct an_xrec *x = &w->a->x[i];
	if (w->by == BY_NAME)
		*key = x->name;
	else if (w->by == BY_CAT)
		*key = ((const struct an_name *)an_table_item(&w->a->names, x->name))->cat;
	else if (w->op[i] == UINT32_MAX)
		return false;
	else
		*key = w->op[i];
	return true;
}

static int emit(struct walk *w, size_t i, int64_t from, int64_t to)
{
	uint64_t key;
	if (to <= from || !key_of(w, i, &key))
		return 0;
	if (w->fill)
		w->v[w->at[key]++] = (struct iv){from, to};
	else
		w->at[key]++;
	return 0;
}

/* Each event's self stretches: its range less its direct children's (x is
 * sorted by row, then start, parents first). cursor: how far the open
 * event's stretches have been given. */
struct open_ev {
	size_t i;
	int64_t cursor, end;
};

static int self_stretches(struct walk *w)
{
	const struct an_trace *a = w->a;
	struct open_ev *stack = NULL;
	size_t depth = 0, cap = 0;
	int rc = 0;
	for (size_t i = 0; i <= a->nx && !rc; i++) {
		bool new_row = i == a->nx || (i && a->x[i].row != a->x[i - 1].row);
		while (depth && !rc && (new_row || stack[depth - 1].end <= a->x[i].ts)) {
			depth--;
			rc = emit(w, stack[depth].i, stack[depth].cursor, stack[depth].end);
		}
		if (i == a->nx || rc)
			break;
		const struct an_xrec *e = &a->x[i];
		int64_t end = an_sat_add(e->ts, e->dur);
		if (depth) {
			struct open_ev *p = &stack[depth - 1];
			rc = emit(w, p->i, p->cursor, e->ts);
			int64_t upto = end < p->end ? end : p->end;
			if (upto > p->cursor)
				p->cursor = upto;
		}
		if (!rc)
			rc = AN_PUSH(stack, depth, cap, (struct open_ev){i, e->ts, end});
	}
	free(stack);
	return rc;
}

static int whole_ranges(struct walk *w)
{
	int rc = 0;
	for (size_t i = 0; i < w->a->nx && !rc; i++)
		rc = emit(w, i, w->a->x[i].ts, an_sat_add(w->a->x[i].ts, w->a->x[i].dur));
	return rc;
}

#define ADDER(fn, T, table_expr, field)                                                                      \
	static void fn(struct an_trace *a, uint64_t key, int64_t len)                                        \
	{                                                                                                    \
		T *t = table_expr;                                                                           \
		t->field = an_sat_add(t->field, len);                                                        \
	}
ADDER(name_wall, struct an_name, an_table_item(&a->names, key), wall)
ADDER(name_self, struct an_name, an_table_item(&a->names, key), self_wall)
ADDER(cat_wall, struct an_category, an_table_item(&a->xcats, key), wall)
ADDER(cat_self, struct an_category, an_table_item(&a->xcats, key), self_wall)
ADDER(op_wall, struct an_cpu_op, &a->cpu_ops[key], wall)
ADDER(op_self, struct an_cpu_op, &a->cpu_ops[key], self_wall)

/* Each cpu_op event's row in a->cpu_ops (by rank and name). */
static int op_index(struct an_trace *a, uint32_t **out)
{
	struct an_table by = {.item_size = sizeof(uint32_t)};
	uint32_t *op = malloc((a->nx ? a->nx : 1) * sizeof(*op));
	bool *is_op = calloc(a->names.n ? a->names.n : 1, sizeof(*is_op));
	struct an_op_memo *memo = calloc(a->names.n ? a->names.n : 1, sizeof(*memo));
	int rc = op && is_op && memo ? 0 : -ENOMEM;
	for (uint32_t i = 0; !rc && i < a->names.n; i++)
		is_op[i] = !strcmp(an_name_cat(a, i), "cpu_op");
	for (size_t i = 0; i < a->ncpu_ops && !rc; i++) {
		uint32_t *slot = an_op_item(&by, memo, a->cpu_ops[i].rank, a->cpu_ops[i].name, true);
		if (!slot)
			rc = -ENOMEM;
		else
			*slot = (uint32_t)i + 1;
	}
	for (size_t i = 0; i < a->nx && !rc; i++) {
		op[i] = UINT32_MAX;
		if (!is_op[a->x[i].name])
			continue; /* only cpu_ops have a row there */
		const struct an_row *row = an_table_item(&a->rows, a->x[i].row);
		const struct an_process *p = an_table_item(&a->pids, row->pid);
		const uint32_t *slot = an_op_item(&by, memo, p->rank, a->x[i].name, false);
		op[i] = slot ? *slot - 1 : UINT32_MAX;
	}
	an_table_free(&by);
	free(is_op);
	free(memo);
	if (rc)
		free(op);
	else
		*out = op;
	return rc;
}

/* One pass: the stretches walk(w) gives, bucketed by key, each bucket's
 * union handed to add. */
static int pass(struct walk *w, int (*walk)(struct walk *w),
                void (*add)(struct an_trace *, uint64_t, int64_t))
{
	memset(w->at, 0, w->nkeys * sizeof(*w->at));
	w->fill = false;
	int rc = walk(w);
	size_t total = 0;
	for (size_t k = 0; !rc && k < w->nkeys; k++) {
		size_t n = w->at[k];
		w->at[k] = total; /* where key k's bucket starts */
		total += n;
	}
	if (!rc && total > w->cap) {
		free(w->v);
		w->cap = total;
		w->v = malloc(total * sizeof(*w->v));
		rc = w->v ? 0 : -ENOMEM;
	}
	w->fill = true;
	if (!rc)
		rc = walk(w); /* at[k] ends where bucket k + 1 starts */
	for (size_t k = 0, from = 0; !rc && k < w->nkeys; from = w->at[k++]) {
		struct iv *b = w->v + from;
		size_t n = w->at[k] - from;
		sort_ivs(b, n);
		for (size_t i = 0; i < n;) {
			int64_t s = b[i].s, e = b[i].e;
			for (i++; i < n && b[i].s <= e; i++)
				if (b[i].e > e)
					e = b[i].e;
			add(w->a, k, e - s);
		}
	}
	return rc;
}

int an_wall_compute(struct an_trace *a)
{
	static void (*const adders[3][2])(struct an_trace *, uint64_t, int64_t) = {
	    {name_wall, name_self}, {cat_wall, cat_self}, {op_wall, op_self}};
	size_t nkeys[3] = {a->names.n, a->xcats.n, a->ncpu_ops}, most = 1;
	for (int i = 0; i < 3; i++)
		most = nkeys[i] > most ? nkeys[i] : most;
	struct walk w = {.a = a, .at = calloc(most, sizeof(size_t))};
	int rc = w.at ? op_index(a, &w.op) : -ENOMEM;
	for (int by = BY_NAME; by <= BY_OP && !rc; by++) {
		w.by = (enum group)by;
		w.nkeys = nkeys[by];
		rc = pass(&w, whole_ranges, adders[by][0]);
		if (!rc)
			rc = pass(&w, self_stretches, adders[by][1]);
	}
	free(w.op);
	free(w.v);
	free(w.at);
	if (!rc)
		an_sort_cpu_ops(a);
	return rc;
}

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

static int count_event(struct an_trace *a, struct an_xrec *x, void *arg)
{
	(void)arg;
	struct an_name *sn = an_table_item(&a->names, x->name);
	struct an_category *c = an_table_item(&a->xcats, sn->cat);
	c->names += !sn->count;
	c->events++;
	c->total = an_sat_add(c->total, x->dur);
	sn->count++;
	sn->total = an_sat_add(sn->total, x->dur);
	if (x->dur > sn->max)
		sn->max = x->dur;
	return 0;
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
	for (uint32_t r = 0; r < a->rows.n; r++)
		an_xrow_each(a, r, count_event, NULL, false);
	for (size_t i = 0; i < a->names.n; i++) {
		struct an_name *sn = an_table_item(&a->names, i);
		sn->self = sn->total;
	}
}

/* Where names move to (each one's new index + 1), and whether any did. */
struct moves {
	uint32_t *to;
	bool moved;
	char key[TR_NAME_MAX + TR_SHORT_MAX + 64], cat[TR_SHORT_MAX + 32];
};

/* Moves x (on an async row) into its category's start/end-range twin. */
static int move_async(struct an_trace *a, struct an_xrec *x, void *arg)
{
	struct moves *mv = arg;
	uint32_t *to = mv->to;
	char *key = mv->key, *cat = mv->cat;
	size_t keylen = sizeof(mv->key), catlen = sizeof(mv->cat);
	bool *moved = &mv->moved;
	if (to[x->name]) {
		x->name = to[x->name] - 1;
		*moved = true;
		return 0;
	}
	const struct an_name *old = an_table_item(&a->names, x->name);
	const char *oldcat = a->xcats.keys[old->cat];
	if (strstr(oldcat, AN_ASYNC_CAT))
		return 0;
	snprintf(cat, catlen, "%s%s", oldcat, AN_ASYNC_CAT);
	snprintf(key, keylen, "%s" AN_SEP "%s", cat, an_name(a, x->name));
	struct an_category *c = an_table_get(&a->xcats, cat);
	struct an_name *sn = c ? an_table_get(&a->names, key) : NULL;
	if (!sn)
		return -ENOMEM;
	sn->cat = (uint32_t)an_table_index(&a->xcats, c);
	sn->cat_len = (uint32_t)strlen(cat);
	uint32_t name = (uint32_t)an_table_index(&a->names, sn);
	to[x->name] = name + 1;
	x->name = name;
	*moved = true;
	return 0;
}

int an_split_async(struct an_trace *a)
{
	/* Only the async rows' events are visited, and where each name moves
	 * to (its new index + 1) is worked out once. */
	size_t nnames = a->names.n;
	struct moves mv = {0};
	int rc = 0;
	for (uint32_t r = 0; !rc && r < a->rows.n && r < a->nxrows; r++) {
		if (!a->xrows[r].head || !async_row(a, r))
			continue;
		if (!mv.to && !(mv.to = calloc(nnames ? nnames : 1, sizeof(*mv.to))))
			rc = -ENOMEM;
		if (!rc)
			rc = an_xrow_each(a, r, move_async, &mv, true);
	}
	free(mv.to);
	if (!rc && mv.moved)
		recount(a);
	return rc;
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

/* Each cpu_op event's row in a->cpu_ops (by rank and name), found as the
 * events come: by keys rank and name to the row's index + 1, memo
 * remembers each name's last, is_op which names are cpu_ops. */
struct op_rows {
	struct an_table by;
	struct an_op_memo *memo;
	bool *is_op;
};

/* The unions are grown as the stretches come, in start order (unions());
 * where a grouping's stretches do not come in order (a child that outlives
 * its parent), a pass over that grouping keeps them instead, bucketed by
 * key: a counting walk sizes each key's bucket, a second fills them. No key
 * is stored and each bucket is sorted alone, in place, so the memory is 16
 * bytes a stretch. */
struct walk {
	struct an_trace *a;
	enum group by;
	struct op_rows op;
	bool fill;  /* false: count into at[key]; true: put at v[at[key]++] */
	size_t *at; /* per key */
	size_t nkeys;
	struct iv *v;
	size_t cap;
};

/* A cpu_op event's cpu_ops index (name, on row), UINT32_MAX for none. */
static uint32_t op_of(struct walk *w, uint32_t name, uint32_t row)
{
	const struct an_trace *a = w->a;
	if (!w->op.is_op[name])
		return UINT32_MAX; /* only cpu_ops have a row there */
	const struct an_row *r = an_table_item(&a->rows, row);
	const struct an_process *p = an_table_item(&a->pids, r->pid);
	const uint32_t *slot = an_op_item(&w->op.by, w->op.memo, p->rank, name, false);
	return slot ? *slot - 1 : UINT32_MAX;
}

/* One row's stretches, an event at a time (the layout sorted each row by
 * start, parents first): each event's range (whole), or its self
 * stretches, its range less its direct children's, given as the stack of
 * open events shows them (cursor: how far an open event's stretches have
 * been given). On a row of nested events the stretches come in start
 * order; where a child outlives its parent they may not. */
struct open_ev {
	uint32_t name;
	int64_t cursor, end;
};

/* A stretch of an event (name, on row). */
struct stretch {
	uint32_t name, row;
	int64_t from, to;
};

static bool key_of(struct walk *w, const struct stretch *s, uint64_t *key)
{
	uint32_t op;
	if (w->by == BY_NAME)
		*key = s->name;
	else if (w->by == BY_CAT)
		*key = ((const struct an_name *)an_table_item(&w->a->names, s->name))->cat;
	else if ((op = op_of(w, s->name, s->row)) == UINT32_MAX)
		return false;
	else
		*key = op;
	return true;
}

static int emit(struct walk *w, const struct stretch *s)
{
	uint64_t key;
	if (s->to <= s->from || !key_of(w, s, &key))
		return 0;
	if (w->fill)
		w->v[w->at[key]++] = (struct iv){s->from, s->to};
	else
		w->at[key]++;
	return 0;
}

struct row_walk {
	bool whole;
	struct an_xcur c;
	struct an_xrec x; /* the row's next event, when has */
	bool has;
	struct open_ev *stack;
	size_t depth, cap;
	struct stretch *q; /* given, not yet taken: q[head, n) */
	size_t head, n, qcap;
};

static void rw_start(struct row_walk *r, const struct an_trace *a, uint32_t row, bool whole)
{
	*r = (struct row_walk){.whole = whole};
	an_xrow(a, row, &r->c);
	r->has = an_xnext(&r->c, &r->x);
}

static int give(struct row_walk *r, uint32_t name, int64_t from, int64_t to)
{
	if (to <= from)
		return 0;
	if (r->head == r->n)
		r->head = r->n = 0;
	return AN_PUSH(r->q, r->n, r->qcap, (struct stretch){name, r->c.row, from, to});
}

/* Takes the row's next event, or its end (which closes every open event). */
static int rw_step(struct row_walk *r)
{
	const struct an_xrec *e = &r->x;
	int rc = 0;
	if (r->whole) {
		rc = give(r, e->name, e->ts, an_sat_add(e->ts, e->dur));
		r->has = an_xnext(&r->c, &r->x);
		return rc;
	}
	while (r->depth && !rc && (!r->has || r->stack[r->depth - 1].end <= e->ts)) {
		r->depth--;
		rc = give(r, r->stack[r->depth].name, r->stack[r->depth].cursor, r->stack[r->depth].end);
	}
	if (!r->has || rc)
		return rc;
	int64_t end = an_sat_add(e->ts, e->dur);
	if (r->depth) {
		struct open_ev *p = &r->stack[r->depth - 1];
		rc = give(r, p->name, p->cursor, e->ts);
		int64_t upto = end < p->end ? end : p->end;
		if (upto > p->cursor)
			p->cursor = upto;
	}
	if (!rc)
		rc = AN_PUSH(r->stack, r->depth, r->cap, (struct open_ev){e->name, e->ts, end});
	r->has = an_xnext(&r->c, &r->x);
	return rc;
}

/* The row's next stretch in *s: 1, 0 when the row has no more, or -ENOMEM. */
static int rw_next(struct row_walk *r, struct stretch *s)
{
	while (r->head == r->n && (r->has || r->depth)) {
		int rc = rw_step(r);
		if (rc)
			return rc;
	}
	if (r->head == r->n)
		return 0;
	*s = r->q[r->head++];
	return 1;
}

static void rw_free(struct row_walk *r)
{
	free(r->stack);
	free(r->q);
}

static int stretches(struct walk *w, bool whole)
{
	int rc = 0;
	for (uint32_t k = 0; k < w->a->rows.n && !rc; k++) {
		struct row_walk r;
		struct stretch s;
		rw_start(&r, w->a, k, whole);
		while ((rc = rw_next(&r, &s)) == 1 && !(rc = emit(w, &s)))
			;
		rw_free(&r);
	}
	return rc;
}

static int self_stretches(struct walk *w)
{
	return stretches(w, false);
}

static int whole_ranges(struct walk *w)
{
	return stretches(w, true);
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

/* The table op_of looks cpu_op rows up in. */
static int op_rows(struct an_trace *a, struct op_rows *o)
{
	*o = (struct op_rows){.by = {.item_size = sizeof(uint32_t)}};
	o->is_op = calloc(a->names.n ? a->names.n : 1, sizeof(*o->is_op));
	o->memo = calloc(a->names.n ? a->names.n : 1, sizeof(*o->memo));
	int rc = o->is_op && o->memo ? 0 : -ENOMEM;
	for (uint32_t i = 0; !rc && i < a->names.n; i++)
		o->is_op[i] = !strcmp(an_name_cat(a, i), "cpu_op");
	for (size_t i = 0; i < a->ncpu_ops && !rc; i++) {
		uint32_t *slot = an_op_item(&o->by, o->memo, a->cpu_ops[i].rank, a->cpu_ops[i].name, true);
		if (!slot)
			rc = -ENOMEM;
		else
			*slot = (uint32_t)i + 1;
	}
	return rc;
}

static void op_rows_free(struct op_rows *o)
{
	an_table_free(&o->by);
	free(o->memo);
	free(o->is_op);
}

/* One pass (for a grouping unions() could not do): the stretches walk(w)
 * gives, bucketed by key, each bucket's union handed to add. */
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
			add(w->a, k, an_span(s, e));
		}
	}
	return rc;
}

/* A key's union so far: the stretch still growing, [s, e), and the length
 * of those done. */
struct acc {
	int64_t s, e, done;
	bool on;
};

/* Adds [s, e) to k's union. Stretches must come in start order only as
 * far as the one still growing: one that starts before it is refused
 * (false), as it might join a stretch already done. */
static bool grow(struct acc *k, int64_t s, int64_t e)
{
	if (!k->on) {
		*k = (struct acc){s, e, 0, true};
	} else if (s < k->s) {
		return false;
	} else if (s <= k->e) {
		k->e = e > k->e ? e : k->e;
	} else {
		k->done = an_sat_add(k->done, an_span(k->s, k->e));
		k->s = s;
		k->e = e;
	}
	return true;
}

/* A min-heap of rows by the start of their next stretch (head). */
static bool row_less(const struct stretch *head, size_t x, size_t y)
{
	return head[x].from < head[y].from;
}

static void heap_down(size_t *heap, size_t n, const struct stretch *head)
{
	for (size_t at = 0;;) {
		size_t c = 2 * at + 1;
		if (c >= n)
			return;
		if (c + 1 < n && row_less(head, heap[c + 1], heap[c]))
			c++;
		if (!row_less(head, heap[c], heap[at]))
			return;
		size_t t = heap[at];
		heap[at] = heap[c];
		heap[c] = t;
		at = c;
	}
}

static void heap_up(size_t *heap, size_t at, const struct stretch *head)
{
	while (at && row_less(head, heap[at], heap[(at - 1) / 2])) {
		size_t t = heap[at];
		heap[at] = heap[(at - 1) / 2];
		heap[(at - 1) / 2] = t;
		at = (at - 1) / 2;
	}
}

/* Every row's stretches at once, merged in start order across the rows
 * (each row gives its own in start order where its events nest), each
 * grown into the unions of its keys as it comes, so that none is kept.
 * ok[by] turns false when a key of that grouping met a stretch out of
 * order; its unions are then to be made by pass(). */
static int unions(struct walk *w, bool whole, struct acc *acc[3], bool ok[3])
{
	const struct an_trace *a = w->a;
	size_t nrows = a->rows.n;
	struct row_walk *rows = calloc(nrows ? nrows : 1, sizeof(*rows));
	struct stretch *head = malloc((nrows ? nrows : 1) * sizeof(*head));
	size_t *heap = malloc((nrows ? nrows : 1) * sizeof(*heap)), nheap = 0;
	int rc = rows && head && heap ? 0 : -ENOMEM;
	for (size_t k = 0; k < nrows && !rc; k++) {
		rw_start(&rows[k], a, (uint32_t)k, whole);
		rc = rw_next(&rows[k], &head[k]);
		if (rc == 1) {
			heap[nheap++] = k;
			heap_up(heap, nheap - 1, head);
			rc = 0;
		}
	}
	while (nheap && !rc) {
		size_t k = heap[0];
		const struct stretch *s = &head[k];
		uint32_t keys[3] = {s->name, ((const struct an_name *)an_table_item(&a->names, s->name))->cat,
		                    op_of(w, s->name, s->row)};
		for (int by = BY_NAME; by <= BY_OP; by++)
			if (ok[by] && keys[by] != UINT32_MAX)
				ok[by] = grow(&acc[by][keys[by]], s->from, s->to);
		rc = rw_next(&rows[k], &head[k]);
		if (rc == 0)
			heap[0] = heap[--nheap];
		rc = rc < 0 ? rc : 0;
		heap_down(heap, nheap, head);
	}
	for (size_t k = 0; rows && k < nrows; k++)
		rw_free(&rows[k]);
	free(rows);
	free(head);
	free(heap);
	return rc;
}

int an_wall_compute(struct an_trace *a)
{
	static void (*const adders[3][2])(struct an_trace *, uint64_t, int64_t) = {
	    {name_wall, name_self}, {cat_wall, cat_self}, {op_wall, op_self}};
	size_t nkeys[3] = {a->names.n, a->xcats.n, a->ncpu_ops}, most = 1;
	for (int i = 0; i < 3; i++)
		most = nkeys[i] > most ? nkeys[i] : most;
	struct walk w = {.a = a};
	struct acc *acc[3] = {NULL};
	int rc = op_rows(a, &w.op);
	for (int by = BY_NAME; by <= BY_OP && !rc; by++)
		if (!(acc[by] = calloc(nkeys[by] ? nkeys[by] : 1, sizeof(*acc[by]))))
			rc = -ENOMEM;
	/* Wall time, then self wall time: all three groupings in one walk each. */
	for (int self = 0; self < 2 && !rc; self++) {
		bool ok[3] = {true, true, true};
		for (int by = BY_NAME; by <= BY_OP; by++)
			memset(acc[by], 0, nkeys[by] * sizeof(*acc[by]));
		rc = unions(&w, !self, acc, ok);
		for (int by = BY_NAME; by <= BY_OP && !rc; by++) {
			if (ok[by]) {
				for (size_t k = 0; k < nkeys[by]; k++)
					if (acc[by][k].on)
						adders[by][self](
						    a, k,
						    an_sat_add(acc[by][k].done,
						               an_span(acc[by][k].s, acc[by][k].e)));
				continue;
			}
			if (!w.at && !(w.at = calloc(most, sizeof(size_t)))) {
				rc = -ENOMEM;
				break;
			}
			w.by = (enum group)by;
			w.nkeys = nkeys[by];
			rc = pass(&w, self ? self_stretches : whole_ranges, adders[by][self]);
		}
	}
	for (int by = BY_NAME; by <= BY_OP; by++)
		free(acc[by]);
	op_rows_free(&w.op);
	free(w.v);
	free(w.at);
	if (!rc)
		an_sort_cpu_ops(a);
	return rc;
}

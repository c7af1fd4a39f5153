/* The packed complete events (tools/analysis/xstore.c), against a plain
 * array of struct an_xrec kept alongside: what an_xadd appends, interleaved
 * across rows as a trace file has them, comes back from the layout (an_xrow
 * and an_xnext, an_xrow_count, an_xall) as each row's events in xrec order
 * (start, the enclosing event first, then name), with starts and durations
 * at int64's ends and jumps whose deltas wrap, over chunks grown to
 * AN_XCHUNK_MAX; a row in order keeps its file order and one out of order
 * comes out sorted; an_xrow_from starts at most AN_XMARK events before the
 * first event at or after a time and never past it; an_xrow_each walks a
 * row in file order, keeps the names a rewrite leaves and stops at the
 * callback's first nonzero result; an_xmerge hands another half's events on
 * after a row's own, names mapped; and traces with no events or no rows. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "testutil.h"

static uint64_t rng;

static uint64_t next(void)
{
	return tu_xorshift(&rng);
}

#define COUNT(v) (sizeof(v) / sizeof((v)[0]))
#define PICK(v)  ((v)[next() % COUNT(v)])

static const int64_t ext_ts[] = {INT64_MIN, INT64_MIN + 1,       -4000000000000000000, -1,       0,
                                 1,         4000000000000000000, INT64_MAX - 1,        INT64_MAX};
static const int64_t ext_dur[] = {0, 1, 127, 128, INT64_MAX - 1, INT64_MAX};
static const uint32_t ext_name[] = {0, 1, 127, 128, UINT32_MAX - 1, UINT32_MAX};

#define XFMT           "{ts %lld, dur %lld, name %u, row %u}"
#define XARGS(x)       (long long)(x).ts, (long long)(x).dur, (unsigned)(x).name, (unsigned)(x).row
#define XREC(...)      ((struct an_xrec){__VA_ARGS__})
#define EV(r, t, d, n) XREC(.row = (r), .name = (n), .ts = (t), .dur = (d))

/* The reference: one row's events, as the file has them. */
struct evs {
	struct an_xrec *v;
	size_t n, cap;
};

static void push(struct evs *e, struct an_xrec x)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 64;
		e->v = realloc(e->v, e->cap * sizeof(*e->v));
		assert_non_null(e->v);
	}
	e->v[e->n++] = x;
}

static void free_evs(struct evs *e, size_t nrows)
{
	for (size_t r = 0; r < nrows; r++)
		free(e[r].v);
}

/* A trace with nrows rows (keys "<prefix> <i>") and no events. */
static struct an_trace *new_trace(size_t nrows, const char *prefix)
{
	struct an_trace *a = calloc(1, sizeof(*a));
	assert_non_null(a);
	a->rows.item_size = sizeof(struct an_row);
	for (size_t i = 0; i < nrows; i++) {
		char key[64];
		TU_FORMAT(key, "%s %zu", prefix, i);
		assert_non_null(an_table_get(&a->rows, key));
	}
	assert_int_equal(a->rows.n, nrows);
	return a;
}

static void free_trace(struct an_trace *a)
{
	an_xfree(a);
	an_table_free(&a->rows);
	free(a);
}

static void xadd(struct an_trace *a, struct an_xrec x)
{
	int rc = an_xadd(a, x.row, x.ts, x.dur, x.name);
	if (rc)
		fail_msg("an_xadd of " XFMT ": %d", XARGS(x), rc);
}

/* Appends every planned event, each row's in its order, the rows
 * interleaved at random as a trace file has them. */
static void add_interleaved(struct an_trace *a, const struct evs *plan, size_t nrows)
{
	size_t left = 0, pos[64] = {0};
	assert_true(nrows <= COUNT(pos));
	for (size_t r = 0; r < nrows; r++)
		left += plan[r].n;
	while (left) {
		size_t r = next() % nrows;
		if (pos[r] == plan[r].n)
			continue;
		xadd(a, plan[r].v[pos[r]++]);
		left--;
	}
}

static bool xrec_less(const struct an_xrec *x, const struct an_xrec *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	if (x->dur != y->dur)
		return x->dur > y->dur; /* the enclosing event first */
	return x->name < y->name;
}

static int cmp_xrec(const void *pa, const void *pb)
{
	const struct an_xrec *x = pa, *y = pb;
	return xrec_less(x, y) ? -1 : xrec_less(y, x);
}

/* A row's events in the order the layout must give them. */
static struct an_xrec *sorted(const struct evs *e)
{
	struct an_xrec *v = malloc((e->n ? e->n : 1) * sizeof(*v));
	assert_non_null(v);
	if (e->n)
		memcpy(v, e->v, e->n * sizeof(*v));
	qsort(v, e->n, sizeof(*v), cmp_xrec);
	return v;
}

static bool same(const struct an_xrec *x, const struct an_xrec *y)
{
	return x->row == y->row && x->name == y->name && x->ts == y->ts && x->dur == y->dur;
}

/* Row r, laid out, holds exactly want[0..n), in that order. */
static void check_row(const struct an_trace *a, uint32_t r, const struct an_xrec *want, size_t n,
                      const char *what)
{
	if (an_xrow_count(a, r) != n)
		fail_msg("%s: an_xrow_count of row %u is %zu, want %zu", what, r, an_xrow_count(a, r), n);
	struct an_xcur c;
	struct an_xrec x;
	size_t k = 0;
	an_xrow(a, r, &c);
	for (; an_xnext(&c, &x); k++) {
		if (k >= n)
			fail_msg("%s: row %u has an event past its %zu: " XFMT, what, r, n, XARGS(x));
		if (!same(&x, &want[k]))
			fail_msg("%s: row %u, event %zu of %zu: " XFMT ", want " XFMT, what, r, k, n,
			         XARGS(x), XARGS(want[k]));
	}
	if (k != n)
		fail_msg("%s: row %u gave %zu events, want %zu", what, r, k, n);
}

/* The laid-out trace holds each row's planned events sorted (nx of them
 * in all), and an_xall gives them row after row. */
static void check_layout(const struct an_trace *a, const struct evs *plan, size_t nrows, const char *what)
{
	struct an_xrec *want[64];
	size_t total = 0;
	assert_true(nrows <= COUNT(want));
	for (size_t r = 0; r < nrows; r++) {
		want[r] = sorted(&plan[r]);
		total += plan[r].n;
	}
	if (a->nx != total)
		fail_msg("%s: nx is %zu, %zu events were added", what, a->nx, total);
	for (uint32_t r = 0; r < nrows; r++)
		check_row(a, r, want[r], plan[r].n, what);
	struct an_xall it;
	struct an_xrec x;
	size_t r = 0, k = 0, got = 0;
	an_xall(a, &it);
	while (an_xall_next(&it, &x)) {
		while (r < nrows && k == plan[r].n) {
			r++;
			k = 0;
		}
		if (r == nrows)
			fail_msg("%s: an_xall gives more than the %zu events: " XFMT, what, total, XARGS(x));
		if (!same(&x, &want[r][k]))
			fail_msg("%s: an_xall's event %zu is " XFMT ", want row %zu's event %zu " XFMT, what,
			         got, XARGS(x), r, k, XARGS(want[r][k]));
		k++;
		got++;
	}
	if (got != total)
		fail_msg("%s: an_xall gave %zu events, want %zu", what, got, total);
	for (size_t i = 0; i < nrows; i++)
		free(want[i]);
}

/* ---- an_xrow_from ------------------------------------------------------- */

/* Row r's layout: its events sorted (want[0..n)) and where each one's
 * bytes start (at[0..n], at[n] the row's end). */
struct row_at {
	uint32_t r;
	const struct an_xrec *want;
	size_t n;
	const uint8_t **at;
};

static void row_at(const struct an_trace *a, uint32_t r, const struct an_xrec *want, size_t n,
                   struct row_at *ra)
{
	*ra = (struct row_at){r, want, n, malloc((n + 1) * sizeof(*ra->at))};
	assert_non_null(ra->at);
	struct an_xcur c;
	struct an_xrec x;
	an_xrow(a, r, &c);
	for (size_t k = 0; k < n; k++) {
		ra->at[k] = c.p;
		assert_true(an_xnext(&c, &x));
	}
	ra->at[n] = c.p;
	assert_ptr_equal(c.p, c.end);
}

/* an_xrow_from(a, r, ts): decoding from it skips at most AN_XMARK events,
 * all starting before ts, then reaches the first that starts at ts or
 * later (the row's end when none does). */
static void check_from(const struct an_trace *a, const struct row_at *ra, int64_t ts)
{
	size_t lo = 0, hi = ra->n;
	while (lo < hi) { /* the first event that starts at ts or later */
		size_t mid = lo + (hi - lo) / 2;
		if (ra->want[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = lo;
	struct an_xcur c;
	struct an_xrec x;
	an_xrow_from(a, ra->r, ts, &c);
	if (!ra->n) {
		if (an_xnext(&c, &x))
			fail_msg("row %u is empty, yet from ts %lld it gives " XFMT, ra->r, (long long)ts,
			         XARGS(x));
		return;
	}
	if (c.row != ra->r || c.end != ra->at[ra->n])
		fail_msg("row %u, from ts %lld: the cursor is on row %u, ending %td bytes past the row's end",
		         ra->r, (long long)ts, c.row, c.end - ra->at[ra->n]);
	lo = 0; /* which event the cursor starts at */
	hi = ra->n + 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (ra->at[mid] < c.p)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t s = lo;
	if (s > ra->n || ra->at[s] != c.p)
		fail_msg(
		    "row %u, from ts %lld: the cursor starts %td bytes into the row, not where an event does",
		    ra->r, (long long)ts, c.p - ra->at[0]);
	if (s > first)
		fail_msg(
		    "row %u, from ts %lld: the cursor starts at event %zu, past event %zu (ts %lld), the "
		    "first that starts at ts or later",
		    ra->r, (long long)ts, s, first, (long long)ra->want[first].ts);
	if (first - s > AN_XMARK)
		fail_msg("row %u, from ts %lld: the cursor starts at event %zu, %zu events before event %zu, "
		         "the first that starts at ts or later: more than AN_XMARK (%d)",
		         ra->r, (long long)ts, s, first - s, first, AN_XMARK);
	for (size_t k = s; k <= first && k < ra->n; k++) {
		if (!an_xnext(&c, &x))
			fail_msg("row %u, from ts %lld: decoding from event %zu ends before event %zu of %zu",
			         ra->r, (long long)ts, s, k, ra->n);
		if (!same(&x, &ra->want[k]))
			fail_msg("row %u, from ts %lld: decoding from event %zu, event %zu is " XFMT
			         ", want " XFMT,
			         ra->r, (long long)ts, s, k, XARGS(x), XARGS(ra->want[k]));
	}
	if (first == ra->n && an_xnext(&c, &x))
		fail_msg("row %u, from ts %lld: an event past the row's last: " XFMT, ra->r, (long long)ts,
		         XARGS(x));
}

/* an_xrow_from on every row of the laid-out trace, from ts at int64's
 * ends and, for every step-th event of a row, its start, one less and one
 * more (below the first event, above the last, on marks, between). */
static void check_from_all(const struct an_trace *a, const struct evs *plan, size_t nrows, size_t step)
{
	for (uint32_t r = 0; r < nrows; r++) {
		struct an_xrec *want = sorted(&plan[r]);
		struct row_at ra;
		row_at(a, r, want, plan[r].n, &ra);
		for (size_t i = 0; i < COUNT(ext_ts); i++)
			check_from(a, &ra, ext_ts[i]);
		/* every step-th event and the last */
		for (size_t k = 0; k < ra.n; k = k + 1 == ra.n || k + step < ra.n ? k + step : ra.n - 1) {
			int64_t ts = want[k].ts;
			check_from(a, &ra, ts);
			if (ts > INT64_MIN)
				check_from(a, &ra, ts - 1);
			if (ts < INT64_MAX)
				check_from(a, &ra, ts + 1);
		}
		free(ra.at);
		free(want);
	}
}

/* ---- the tests ---------------------------------------------------------- */

/* Row 0's chunks, before the layout, grow as analysis.h says: the first
 * AN_XCHUNK_FIRST bytes, each next eight times larger, up to
 * AN_XCHUNK_MAX (which this test means to reach). */
static void check_chunks(const struct an_trace *a, uint32_t r)
{
	assert_true(r < a->nxrows);
	uint32_t want = AN_XCHUNK_FIRST;
	size_t i = 0, at_max = 0;
	for (const struct an_xchunk *c = a->xrows[r].head; c; c = c->next, i++) {
		if (c->cap != want)
			fail_msg("row %u, chunk %zu: %u bytes of room, want %u", r, i, c->cap, want);
		at_max += c->cap == AN_XCHUNK_MAX;
		want = want >= AN_XCHUNK_MAX / 8 ? AN_XCHUNK_MAX : want * 8;
	}
	if (at_max < 1)
		fail_msg("row %u: %zu chunks, none of AN_XCHUNK_MAX bytes: the test means to reach them", r,
		         i);
}

/* a's rows laid out, or the test fails. */
static void lay_out(struct an_trace *a)
{
	int rc = an_xlayout(a);
	if (rc)
		fail_msg("an_xlayout: %d", rc);
}

static void test_round_trip_in_xrec_order(void **state)
{
	(void)state;
	rng = 88172645463325252ull;
	enum { NROWS = 7 };
	struct evs plan[NROWS] = {{0}};
	/* row 0: many, at random, some at the extremes, many equal starts */
	for (size_t i = 0; i < 70000; i++) {
		uint64_t k = next();
		int64_t ts = k % 64 == 0  ? PICK(ext_ts)
		             : k % 4 == 0 ? (int64_t)(next() % 1000)
		                          : (int64_t)(next() % 2000000000000) - 1000000000000;
		int64_t dur = next() % 32 == 0 ? PICK(ext_dur) : (int64_t)(next() % 1000000);
		uint32_t name = next() % 32 == 0 ? PICK(ext_name) : (uint32_t)(next() % 100);
		push(&plan[0], EV(0, ts, dur, name));
	}
	/* row 1: in order from INT64_MIN to INT64_MAX, equal starts with the
	 * enclosing event first, then by name */
	push(&plan[1], EV(1, INT64_MIN, INT64_MAX, UINT32_MAX));
	push(&plan[1], EV(1, INT64_MIN, 5, 3));
	push(&plan[1], EV(1, INT64_MIN, 0, 0));
	push(&plan[1], EV(1, INT64_MIN, 0, UINT32_MAX));
	push(&plan[1], EV(1, INT64_MIN + 1, 0, 0));
	for (int64_t i = 0; i < 3000; i++)
		push(&plan[1], EV(1, -1500000 + 1000 * (i / 3), 100 - i % 3, (uint32_t)i));
	push(&plan[1], EV(1, 4000000000000000000, 1, 1));
	push(&plan[1], EV(1, INT64_MAX - 1, 0, 0));
	push(&plan[1], EV(1, INT64_MAX, INT64_MAX, 0));
	push(&plan[1], EV(1, INT64_MAX, 0, 0));
	push(&plan[1], EV(1, INT64_MAX, 0, UINT32_MAX));
	/* row 2: none; row 3: back and forth across the whole range, every
	 * delta wrapping */
	for (int64_t i = 0; i < 300; i++) {
		int64_t ts = i % 3 == 0 ? INT64_MAX - i : i % 3 == 1 ? INT64_MIN + i : -i;
		push(&plan[3], EV(3, ts, i % 2 ? INT64_MAX : 0, i % 4 < 2 ? UINT32_MAX : 0));
	}
	/* row 4: one event, every field at its largest */
	push(&plan[4], EV(4, INT64_MAX, INT64_MAX, UINT32_MAX));
	/* row 5: few values, so many equal starts and whole duplicates */
	for (size_t i = 0; i < 500; i++) {
		int64_t dur = next() % 8 == 0 ? INT64_MAX : (int64_t)(next() % 4);
		uint32_t name = next() % 8 == 0 ? UINT32_MAX : (uint32_t)(next() % 5);
		push(&plan[5], EV(5, (int64_t)(next() % 3) - 1, dur, name));
	}
	/* row 6: all at INT64_MIN */
	for (size_t i = 0; i < 100; i++)
		push(&plan[6], EV(6, INT64_MIN, PICK(ext_dur), PICK(ext_name)));

	struct an_trace *a = new_trace(NROWS, "row");
	add_interleaved(a, plan, NROWS);
	check_chunks(a, 0);
	lay_out(a);
	check_layout(a, plan, NROWS, "round trip");
	check_from_all(a, plan, NROWS, 97);
	free_trace(a);
	free_evs(plan, NROWS);
}

static void test_rows_in_order_and_out_of_order(void **state)
{
	(void)state;
	rng = 0x9e3779b97f4a7c15ull;
	enum { NROWS = 5 };
	struct evs plan[NROWS] = {{0}};
	/* row 0: in xrec order already, equal starts and durations included */
	for (int64_t i = 0; i < 3000; i++)
		push(&plan[0], EV(0, i / 6 * 10, 50 - i % 6 / 2, (uint32_t)(i % 2)));
	/* row 1: at random */
	for (size_t i = 0; i < 3000; i++)
		push(&plan[1],
		     EV(1, (int64_t)(next() % 500) - 250, (int64_t)(next() % 4), (uint32_t)(next() % 3)));
	/* row 2: starts in order, equal ones the shorter first */
	for (int64_t i = 0; i < 1000; i++)
		push(&plan[2], EV(2, i / 3, i % 3, 0));
	/* row 3: in order but for its last event, in a later chunk */
	for (int64_t i = 0; i < 2000; i++)
		push(&plan[3], EV(3, 1000 + i, 1, 1));
	push(&plan[3], EV(3, 999, 1, 1));
	/* row 4: starts and durations equal in fives, names falling */
	for (int64_t i = 0; i < 1000; i++)
		push(&plan[4], EV(4, i / 5, 7, (uint32_t)(4 - i % 5)));

	struct an_trace *a = new_trace(NROWS, "row");
	add_interleaved(a, plan, NROWS);
	lay_out(a);
	/* in order: exactly the file's order */
	check_row(a, 0, plan[0].v, plan[0].n, "a row in order");
	/* out of order: sorted, and in xrec order event after event */
	check_layout(a, plan, NROWS, "rows out of order");
	for (uint32_t r = 1; r < NROWS; r++) {
		struct an_xcur c;
		struct an_xrec x, prev = {0};
		an_xrow(a, r, &c);
		for (size_t k = 0; an_xnext(&c, &x); prev = x, k++)
			if (k && xrec_less(&x, &prev))
				fail_msg("row %u, event %zu: " XFMT " after " XFMT, r, k, XARGS(x),
				         XARGS(prev));
	}
	free_trace(a);
	free_evs(plan, NROWS);
}

static void test_row_from_at_most_a_mark_before(void **state)
{
	(void)state;
	rng = 0x2545f4914f6cdd1dull;
	enum { NROWS = 7 };
	struct evs plan[NROWS] = {{0}};
	/* row 0: in order, gaps of 1 to 3 */
	int64_t ts = 5;
	for (size_t i = 0; i < 1000; i++, ts += 1 + (int64_t)(next() % 3))
		push(&plan[0], EV(0, ts, (int64_t)(next() % 10), 0));
	/* row 1: half the starts equal to the one before, a run of 200 equal
	 * ones across marks; the file has them shuffled */
	ts = -2000;
	for (size_t i = 0; i < 5000; i++) {
		if (next() % 2 && (i < 1000 || i >= 1200))
			ts += 1 + (int64_t)(next() % 3);
		push(&plan[1], EV(1, ts, (int64_t)(next() % 5), (uint32_t)(next() % 3)));
	}
	for (size_t i = plan[1].n - 1; i > 0; i--) {
		size_t j = next() % (i + 1);
		struct an_xrec t = plan[1].v[i];
		plan[1].v[i] = plan[1].v[j];
		plan[1].v[j] = t;
	}
	/* rows 2 and 3: AN_XMARK events (one mark), and one more */
	for (int64_t i = 0; i < AN_XMARK; i++)
		push(&plan[2], EV(2, 2 * i, 0, 0));
	for (int64_t i = 0; i <= AN_XMARK; i++)
		push(&plan[3], EV(3, 2 * i, 0, 0));
	/* row 4: none; row 5: runs longer than a mark at int64's ends and 0 */
	for (size_t i = 0; i < 3 * 70; i++)
		push(&plan[5], EV(5, i < 70 ? INT64_MIN : i < 140 ? 0 : INT64_MAX, 0, (uint32_t)i));
	/* row 6: every start equal */
	for (size_t i = 0; i < 2 * AN_XMARK + 3; i++)
		push(&plan[6], EV(6, 7, (int64_t)(next() % 3), 0));

	struct an_trace *a = new_trace(NROWS, "row");
	add_interleaved(a, plan, NROWS);
	lay_out(a);
	check_layout(a, plan, NROWS, "an_xrow_from's rows");
	check_from_all(a, plan, NROWS, 1);
	free_trace(a);
	free_evs(plan, NROWS);
}

/* an_xrow_each's callbacks: collect what they see, rename (with rename
 * set), stop (returning stop_rc) at the stop_at-th event. */
struct walk {
	struct evs seen;
	uint32_t rename; /* xor'd into each name */
	size_t stop_at;  /* 0: never */
	int stop_rc;
};

static int on_event(struct an_trace *a, struct an_xrec *x, void *arg)
{
	(void)a;
	struct walk *w = arg;
	push(&w->seen, *x);
	x->name ^= w->rename;
	return w->seen.n == w->stop_at ? w->stop_rc : 0;
}

/* an_xrow_each(a, r, ..., rewrite) with w, returning what it returns. */
static int walk(struct an_trace *a, uint32_t r, struct walk *w, bool rewrite)
{
	w->seen.n = 0;
	return an_xrow_each(a, r, on_event, w, rewrite);
}

/* What the walk saw is want[0..n) in that order. */
static void check_seen(const struct walk *w, const struct an_xrec *want, size_t n, const char *what)
{
	for (size_t k = 0; k < w->seen.n && k < n; k++)
		if (!same(&w->seen.v[k], &want[k]))
			fail_msg("%s: event %zu is " XFMT ", want " XFMT, what, k, XARGS(w->seen.v[k]),
			         XARGS(want[k]));
	if (w->seen.n != n)
		fail_msg("%s: %zu events, want %zu", what, w->seen.n, n);
}

static void test_row_each_order_rewrite_stop(void **state)
{
	(void)state;
	rng = 0x853c49e6748fea9bull;
	enum { NROWS = 4 };
	struct evs plan[NROWS] = {{0}};
	for (size_t i = 0; i < 100; i++)
		push(&plan[0],
		     EV(0, (int64_t)(next() % 1000), (int64_t)(next() % 100), (uint32_t)(next() % 50)));
	for (size_t i = 0; i < 3000; i++) /* row 1: over several chunks */
		push(&plan[1], EV(1, (int64_t)(next() % 100000) - 50000, (int64_t)(next() % 1000),
		                  (uint32_t)(next() % 100)));
	for (size_t i = 0; i < 10; i++) /* row 2: none; row 3: a few */
		push(&plan[3], EV(3, PICK(ext_ts), PICK(ext_dur), PICK(ext_name)));
	struct an_trace *a = new_trace(NROWS, "row");
	add_interleaved(a, plan, NROWS);
	struct walk w = {.stop_at = 0};
	int rc;

	/* in file order, each row's own */
	for (uint32_t r = 0; r < NROWS; r++) {
		char what[64];
		TU_FORMAT(what, "an_xrow_each of row %u", r);
		if ((rc = walk(a, r, &w, false)))
			fail_msg("%s: %d, want 0", what, rc);
		check_seen(&w, plan[r].v, plan[r].n, what);
	}
	if ((rc = walk(a, 1000, &w, false)) || w.seen.n)
		fail_msg("an_xrow_each of a row with no events added: %d after %zu events", rc, w.seen.n);

	/* stopping at the first, a middle and the last event */
	const size_t stops[] = {1, 1500, 3000};
	for (size_t i = 0; i < COUNT(stops); i++) {
		w = (struct walk){w.seen, 0, stops[i], i % 2 ? -7 : 42};
		if ((rc = walk(a, 1, &w, false)) != w.stop_rc)
			fail_msg("an_xrow_each stopped at event %zu: %d, want the callback's %d", stops[i],
			         rc, w.stop_rc);
		if (w.seen.n != stops[i])
			fail_msg("an_xrow_each stopped at event %zu: the callback saw %zu", stops[i],
			         w.seen.n);
		check_seen(&w, plan[1].v, stops[i], "an_xrow_each until it stops");
	}

	/* without rewrite, what the callback leaves in x is not kept */
	w = (struct walk){w.seen, 0x80000001u, 0, 0};
	if ((rc = walk(a, 3, &w, false)))
		fail_msg("an_xrow_each renaming without rewrite: %d", rc);
	w.rename = 0;
	walk(a, 3, &w, false);
	check_seen(&w, plan[3].v, plan[3].n, "row 3 after a walk without rewrite");

	/* with rewrite it is: names a byte long become five and the other
	 * way, over every chunk of row 1 */
	w.rename = 0x80000001u;
	if ((rc = walk(a, 1, &w, true)))
		fail_msg("an_xrow_each with rewrite: %d", rc);
	check_seen(&w, plan[1].v, plan[1].n, "an_xrow_each with rewrite, as it renames");
	for (size_t k = 0; k < plan[1].n; k++)
		plan[1].v[k].name ^= 0x80000001u;
	w.rename = 0;
	walk(a, 1, &w, false);
	check_seen(&w, plan[1].v, plan[1].n, "row 1 after the rewrite");
	/* and events appended after a rewrite follow on */
	for (size_t i = 0; i < 50; i++) {
		struct an_xrec x = EV(1, (int64_t)(next() % 1000), (int64_t)(next() % 10), (uint32_t)i);
		xadd(a, x);
		push(&plan[1], x);
	}
	walk(a, 1, &w, false);
	check_seen(&w, plan[1].v, plan[1].n, "row 1 after the rewrite and 50 more events");

	/* a rewrite stopped half way leaves every event, each with its old
	 * name or its new one, the events it never reached untouched */
	w = (struct walk){w.seen, 0x55u, 50, 3};
	if ((rc = walk(a, 0, &w, true)) != 3)
		fail_msg("an_xrow_each with rewrite stopped at event 50: %d, want 3", rc);
	w = (struct walk){w.seen, 0, 0, 0};
	walk(a, 0, &w, false);
	if (w.seen.n != plan[0].n)
		fail_msg("row 0 after a rewrite that stopped: %zu events, want %zu", w.seen.n, plan[0].n);
	for (size_t k = 0; k < plan[0].n; k++) {
		struct an_xrec x = w.seen.v[k], p = plan[0].v[k];
		if (x.row != p.row || x.ts != p.ts || x.dur != p.dur ||
		    (x.name != p.name && (k >= 50 || x.name != (p.name ^ 0x55u))))
			fail_msg("row 0 after a rewrite that stopped at event 50: event %zu is " XFMT
			         ", was " XFMT,
			         k, XARGS(x), XARGS(p));
		plan[0].v[k].name = x.name;
	}

	lay_out(a);
	check_layout(a, plan, NROWS, "after an_xrow_each's rewrites");
	free(w.seen.v);
	free_trace(a);
	free_evs(plan, NROWS);
}

/* A half (b) with its own rows and names, merged into a. */
struct half {
	struct an_trace *t;
	const uint32_t *rows; /* b's row i is a's rows[i] */
	size_t nnames;
	uint32_t base, step; /* b's name i is a's base + step * i */
};

static void test_merge_after_own_names_mapped(void **state)
{
	(void)state;
	rng = 0xda942042e4dd58b5ull;
	enum { NA = 20 };
	struct evs plan[NA] = {{0}};
	for (int64_t i = 0; i < 500; i++) /* a's row 0 in order, row 1 not, row 2 a few */
		push(&plan[0], EV(0, 10 * i, 5, (uint32_t)(i % 7)));
	for (size_t i = 0; i < 300; i++)
		push(&plan[1],
		     EV(1, (int64_t)(next() % 3000), (int64_t)(next() % 9), (uint32_t)(next() % 7)));
	for (size_t i = 0; i < 10; i++)
		push(&plan[2], EV(2, PICK(ext_ts), PICK(ext_dur), 3));
	struct an_trace *a = new_trace(NA, "a");
	add_interleaved(a, plan, NA);
	size_t want_nx = plan[0].n + plan[1].n + plan[2].n;

	/* b: its row 0 to a's 2, 1 to a's 0 (starts among a's), 2 to a's 19
	 * (past the rows a has events on), 3 (no events) to a's 1; c: its
	 * row 0 to a's 0 again, 1 to a's 5 */
	static const uint32_t b_rows[] = {2, 0, 19, 1}, c_rows[] = {0, 5};
	static const size_t b_n[] = {200, 400, 50, 0}, c_n[] = {100, 30};
	struct half halves[] = {
	    {new_trace(COUNT(b_rows), "b"), b_rows, 64, 100000, 7},
	    {new_trace(COUNT(c_rows), "c"), c_rows, 16, UINT32_MAX - 15, 1},
	};
	for (size_t h = 0; h < COUNT(halves); h++) {
		struct half *b = &halves[h];
		const size_t *counts = h ? c_n : b_n;
		struct evs rows[4] = {{0}};
		for (uint32_t r = 0; r < b->t->rows.n; r++)
			for (size_t i = 0; i < counts[r]; i++)
				push(&rows[r], EV(r, (int64_t)(next() % 6000), (int64_t)(next() % 9),
				                  (uint32_t)(next() % b->nnames)));
		add_interleaved(b->t, rows, b->t->rows.n);
		for (uint32_t r = 0; r < b->t->rows.n; r++) {
			want_nx += rows[r].n;
			for (size_t i = 0; i < rows[r].n; i++) {
				struct an_xrec x = rows[r].v[i];
				push(&plan[b->rows[r]],
				     EV(b->rows[r], x.ts, x.dur, b->base + b->step * x.name));
			}
		}
		free_evs(rows, COUNT(rows));

		uint32_t *names = malloc(b->nnames * sizeof(*names));
		assert_non_null(names);
		for (size_t i = 0; i < b->nnames; i++)
			names[i] = b->base + b->step * (uint32_t)i;
		int rc = an_xmerge(a, b->t, b->rows, names);
		if (rc)
			fail_msg("an_xmerge of half %zu: %d", h, rc);
		if (b->t->nx)
			fail_msg("an_xmerge of half %zu: it still counts %zu events, want 0", h, b->t->nx);
		if (a->nx != want_nx)
			fail_msg("an_xmerge of half %zu: nx is %zu, want %zu", h, a->nx, want_nx);
	}

	/* before the layout, a row's own events, then each half's in turn */
	struct walk w = {.stop_at = 0};
	for (uint32_t r = 0; r < NA; r++) {
		char what[64];
		TU_FORMAT(what, "row %u merged, in file order", r);
		int rc = walk(a, r, &w, false);
		if (rc)
			fail_msg("%s: an_xrow_each: %d", what, rc);
		check_seen(&w, plan[r].v, plan[r].n, what);
	}
	free(w.seen.v);

	lay_out(a);
	check_layout(a, plan, NA, "merged");
	for (size_t h = 0; h < COUNT(halves); h++) {
		struct an_trace *b = halves[h].t;
		assert_int_equal(b->nx, 0);
		free_trace(b);
	}
	free_trace(a);
	free_evs(plan, NA);
}

/* Nothing comes from trace t: an_xall, and an_xrow and an_xrow_from on
 * each of its rows and the one past them. */
static void check_nothing(const struct an_trace *t, const char *what)
{
	struct an_xall it;
	struct an_xrec x;
	an_xall(t, &it);
	if (an_xall_next(&it, &x))
		fail_msg("%s: an_xall gives " XFMT, what, XARGS(x));
	for (uint32_t r = 0; r <= t->rows.n; r++) {
		struct an_xcur c;
		if (r < t->rows.n && an_xrow_count(t, r))
			fail_msg("%s: an_xrow_count of row %u is %zu", what, r, an_xrow_count(t, r));
		an_xrow(t, r, &c);
		if (an_xnext(&c, &x))
			fail_msg("%s: an_xrow of row %u gives " XFMT, what, r, XARGS(x));
		for (size_t i = 0; i < COUNT(ext_ts); i++) {
			an_xrow_from(t, r, ext_ts[i], &c);
			if (an_xnext(&c, &x))
				fail_msg("%s: an_xrow_from of row %u, ts %lld, gives " XFMT, what, r,
				         (long long)ext_ts[i], XARGS(x));
		}
	}
}

static void test_empty_traces(void **state)
{
	(void)state;
	struct walk w = {.stop_at = 0};
	for (size_t nrows = 0; nrows <= 3; nrows += 3) {
		char what[64];
		TU_FORMAT(what, "%zu rows, no events", nrows);
		struct an_trace *a = new_trace(nrows, "row");
		check_nothing(a, what); /* not laid out yet */
		for (uint32_t r = 0; r <= nrows; r++)
			if (walk(a, r, &w, true) || w.seen.n)
				fail_msg("%s: an_xrow_each of row %u calls back %zu times", what, r,
				         w.seen.n);
		int rc = an_xlayout(a);
		if (rc)
			fail_msg("%s: an_xlayout: %d, want 0", what, rc);
		if (a->nx)
			fail_msg("%s: nx is %zu", what, a->nx);
		check_nothing(a, what);
		free_trace(a);
	}
	free(w.seen.v);

	/* rows with none around one that has some: an_xall skips them */
	enum { NROWS = 5 };
	struct evs plan[NROWS] = {{0}};
	for (int64_t i = 0; i < 3; i++)
		push(&plan[2], EV(2, 3 - i, 1, 1));
	struct an_trace *a = new_trace(NROWS, "row");
	add_interleaved(a, plan, NROWS);
	lay_out(a);
	check_layout(a, plan, NROWS, "one row of five with events");
	check_from_all(a, plan, NROWS, 1);
	free_trace(a);
	free_evs(plan, NROWS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip_in_xrec_order),
	    cmocka_unit_test(test_rows_in_order_and_out_of_order),
	    cmocka_unit_test(test_row_from_at_most_a_mark_before),
	    cmocka_unit_test(test_row_each_order_rewrite_stop),
	    cmocka_unit_test(test_merge_after_own_names_mapped),
	    cmocka_unit_test(test_empty_traces),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

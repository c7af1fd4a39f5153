/* The complete events, packed: see "the complete events, packed" in
 * analysis.h. Nothing here is read from the trace file: the bytes are
 * only ever ones this file wrote. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sort.h"

/* x coded against *last (the previous start), which becomes x's. */
static uint8_t *put_xrec(uint8_t *p, int64_t *last, const struct an_xrec *x)
{
	uint64_t d = (uint64_t)x->ts - (uint64_t)*last;
	*last = x->ts;
	p = strb_varint_put(p, strb_zigzag(d));
	p = strb_varint_put(p, (uint64_t)x->dur);
	return strb_varint_put(p, x->name);
}

/* ---- while the file is read ------------------------------------------------ */

/* Room in a->xrows for n rows (new ones empty). */
static bool reserve_rows(struct an_trace *a, size_t n)
{
	if (n <= a->nxrows)
		return true;
	size_t cap = a->nxrows ? a->nxrows : 16;
	while (cap < n)
		cap *= 2;
	struct an_xrow *v = realloc(a->xrows, cap * sizeof(*v));
	if (!v)
		return false;
	memset(v + a->nxrows, 0, (cap - a->nxrows) * sizeof(*v));
	a->xrows = v;
	a->nxrows = cap;
	return true;
}

static struct an_xchunk *new_chunk(uint32_t cap)
{
	struct an_xchunk *c = malloc(sizeof(*c) + cap);
	if (c)
		*c = (struct an_xchunk){.cap = cap};
	return c;
}

int an_xadd(struct an_trace *a, uint32_t r, int64_t ts, int64_t dur, uint32_t name)
{
	if (!reserve_rows(a, (size_t)r + 1))
		return -ENOMEM;
	struct an_xrow *w = &a->xrows[r];
	struct an_xchunk *c = w->tail;
	if (!c || c->cap - c->len < AN_XREC_MAX) {
		uint32_t cap = !c                            ? AN_XCHUNK_FIRST
		               : c->cap >= AN_XCHUNK_MAX / 8 ? AN_XCHUNK_MAX
		                                             : c->cap * 8;
		if (!(c = new_chunk(cap)))
			return -ENOMEM;
		*(w->tail ? &w->tail->next : &w->head) = c;
		w->tail = c;
	}
	struct an_xrec x = {r, name, ts, dur};
	c->len = (uint32_t)(put_xrec(c->bytes + c->len, &c->last, &x) - c->bytes);
	c->n++;
	a->nx++;
	return 0;
}

/* A chunk's events in order, through its names map. */
struct chunk_cur {
	struct an_xcur c;
	const uint32_t *names;
};

static void chunk_cur(const struct an_xchunk *ch, uint32_t row, struct chunk_cur *cc)
{
	*cc = (struct chunk_cur){{ch->bytes, ch->bytes + ch->len, 0, row}, ch->names};
}

static bool chunk_next(struct chunk_cur *cc, struct an_xrec *x)
{
	if (!an_xnext(&cc->c, x))
		return false;
	if (cc->names)
		x->name = cc->names[x->name];
	return true;
}

int an_xrow_each(struct an_trace *a, uint32_t r, int (*fn)(struct an_trace *a, struct an_xrec *x, void *arg),
                 void *arg, bool rewrite)
{
	if (r >= a->nxrows)
		return 0;
	int rc = 0;
	for (struct an_xchunk **at = &a->xrows[r].head, *ch; !rc && (ch = *at); at = &(*at)->next) {
		struct an_xchunk *out = rewrite ? new_chunk(ch->n * AN_XREC_MAX) : NULL;
		if (rewrite && !out)
			return -ENOMEM;
		struct chunk_cur cc;
		struct an_xrec x;
		chunk_cur(ch, r, &cc);
		while (!rc && chunk_next(&cc, &x)) {
			rc = fn(a, &x, arg);
			if (out) {
				out->len =
				    (uint32_t)(put_xrec(out->bytes + out->len, &out->last, &x) - out->bytes);
				out->n++;
			}
		}
		if (!out)
			continue;
		if (rc) {
			free(out);
			break;
		}
		/* The chunk keeps its room for every event at its longest, so
		 * an append after it still finds AN_XREC_MAX bytes in the next. */
		out->next = ch->next;
		if (a->xrows[r].tail == ch)
			a->xrows[r].tail = out;
		*at = out;
		free(ch);
	}
	return rc;
}

int an_xmerge(struct an_trace *a, struct an_trace *b, const uint32_t *rows, uint32_t *names)
{
	uint32_t **maps = realloc(a->xmaps, (a->nxmaps + 1) * sizeof(*maps));
	if (!maps) {
		free(names);
		return -ENOMEM;
	}
	a->xmaps = maps;
	a->xmaps[a->nxmaps++] = names;
	size_t most = 0;
	for (size_t i = 0; i < b->nxrows; i++)
		if (b->xrows[i].head && rows[i] + (size_t)1 > most)
			most = rows[i] + (size_t)1;
	if (!reserve_rows(a, most))
		return -ENOMEM;
	for (size_t i = 0; i < b->nxrows; i++) {
		struct an_xrow *from = &b->xrows[i];
		if (!from->head)
			continue;
		for (struct an_xchunk *c = from->head; c; c = c->next)
			c->names = names;
		struct an_xrow *to = &a->xrows[rows[i]];
		*(to->tail ? &to->tail->next : &to->head) = from->head;
		to->tail = from->tail;
		*from = (struct an_xrow){NULL, NULL};
	}
	a->nx += b->nx;
	b->nx = 0;
	return 0;
}

/* ---- the layout -------------------------------------------------------------- */

static bool xrec_less(const struct an_xrec *x, const struct an_xrec *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	if (x->dur != y->dur)
		return x->dur > y->dur; /* the enclosing event first */
	return x->name < y->name;
}

AN_SORT_DEFINE(sort_xrecs, struct an_xrec, xrec_less)

/* The array being laid out: bytes and marks, grown as needed. */
struct out {
	uint8_t *b;
	size_t len, cap;
	struct an_xmark *m;
	size_t nm, capm;
};

static bool out_room(struct out *o, size_t more)
{
	if (o->len + more <= o->cap)
		return true;
	size_t cap = o->cap + o->cap / 4 + more + 4096;
	uint8_t *b = realloc(o->b, cap);
	if (!b)
		return false;
	o->b = b;
	o->cap = cap;
	return true;
}

/* x as row r's event number k, coded against *last. */
static bool out_put(struct out *o, size_t k, int64_t *last, const struct an_xrec *x)
{
	if (!out_room(o, AN_XREC_MAX))
		return false;
	if (k % AN_XMARK == 0 && AN_PUSH(o->m, o->nm, o->capm, (struct an_xmark){k ? *last : 0, o->len}))
		return false;
	o->len = (size_t)(put_xrec(o->b + o->len, last, x) - o->b);
	return true;
}

/* Row r, laid out already from span->off, in file order: sorted, then
 * laid out again in its place. */
static int sort_row(struct out *o, uint32_t r, const struct an_xspan *span)
{
	struct an_xrec *v = malloc(span->n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	struct an_xcur c = {o->b + span->off, o->b + o->len, 0, r};
	for (size_t k = 0; k < span->n; k++)
		an_xnext(&c, &v[k]);
	sort_xrecs(v, span->n);
	o->len = span->off;
	o->nm = span->mark;
	int64_t last = 0;
	int rc = 0;
	for (size_t k = 0; k < span->n && !rc; k++)
		rc = out_put(o, k, &last, &v[k]) ? 0 : -ENOMEM;
	free(v);
	return rc;
}

/* What the read kept: the rows' chunks left, the names maps. */
static void free_reading(struct an_trace *a)
{
	for (size_t r = 0; r < a->nxrows; r++)
		for (struct an_xchunk *c = a->xrows[r].head, *next; c; c = next) {
			next = c->next;
			free(c);
		}
	free(a->xrows);
	for (size_t i = 0; i < a->nxmaps; i++)
		free(a->xmaps[i]);
	free(a->xmaps);
	a->xrows = NULL;
	a->xmaps = NULL;
	a->nxrows = a->nxmaps = 0;
}

int an_xlayout(struct an_trace *a)
{
	size_t total = 0;
	for (size_t r = 0; r < a->nxrows; r++)
		for (const struct an_xchunk *c = a->xrows[r].head; c; c = c->next)
			total += c->len;
	struct out o = {.b = malloc(total + AN_XREC_MAX), .cap = total + AN_XREC_MAX};
	a->xspan = calloc(a->rows.n + 1, sizeof(*a->xspan));
	int rc = o.b && a->xspan ? 0 : -ENOMEM;
	for (uint32_t r = 0; r < a->rows.n && !rc; r++) {
		struct an_xspan *span = &a->xspan[r];
		*span = (struct an_xspan){o.len, 0, o.nm};
		struct an_xrec prev = {0}, x;
		bool sorted = true;
		int64_t last = 0;
		for (struct an_xchunk *c; !rc && r < a->nxrows && (c = a->xrows[r].head);) {
			struct chunk_cur cc;
			chunk_cur(c, r, &cc);
			while (!rc && chunk_next(&cc, &x)) {
				if (span->n && xrec_less(&x, &prev))
					sorted = false;
				prev = x;
				rc = out_put(&o, span->n++, &last, &x) ? 0 : -ENOMEM;
			}
			a->xrows[r].head = c->next;
			free(c);
		}
		if (!rc && !sorted)
			rc = sort_row(&o, r, span);
	}
	if (a->xspan)
		a->xspan[a->rows.n] = (struct an_xspan){o.len, 0, o.nm};
	/* Hand back the room the layout did not use. */
	uint8_t *b = o.b ? realloc(o.b, o.len ? o.len : 1) : NULL;
	a->xbytes = b ? b : o.b;
	a->xmarks = o.m;
	free_reading(a);
	return rc;
}

void an_xfree(struct an_trace *a)
{
	free_reading(a);
	free(a->xbytes);
	free(a->xspan);
	free(a->xmarks);
	a->xbytes = NULL;
	a->xspan = NULL;
	a->xmarks = NULL;
}

/* ---- once laid out -------------------------------------------------------------- */

void an_xrow(const struct an_trace *a, uint32_t r, struct an_xcur *c)
{
	if (!a->xspan || r >= a->rows.n) {
		*c = (struct an_xcur){NULL, NULL, 0, r};
		return;
	}
	*c = (struct an_xcur){a->xbytes + a->xspan[r].off, a->xbytes + a->xspan[r + 1].off, 0, r};
}

void an_xrow_from(const struct an_trace *a, uint32_t r, int64_t ts, struct an_xcur *c)
{
	an_xrow(a, r, c);
	if (!c->p)
		return;
	/* The last mark past the row's first whose previous event starts
	 * before ts: every event before it starts before ts too. */
	size_t lo = a->xspan[r].mark + 1, hi = a->xspan[r + 1].mark;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->xmarks[mid].ts < ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo - 1 > a->xspan[r].mark) {
		c->p = a->xbytes + a->xmarks[lo - 1].off;
		c->ts = a->xmarks[lo - 1].ts;
	}
}

void an_xall(const struct an_trace *a, struct an_xall *it)
{
	it->a = a;
	an_xrow(a, 0, &it->c);
}

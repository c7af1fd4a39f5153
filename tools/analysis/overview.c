/* The report's timeline overview: per thread and per stream row, the union
 * of its events' ranges, coalesced so the page stays small whatever the
 * trace's size (overview.h). */
#include "analysis/overview.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_i64(const void *pa, const void *pb)
{
	int64_t x = *(const int64_t *)pa, y = *(const int64_t *)pb;
	return x < y ? -1 : x > y;
}

/* Closes the n - cap shortest gaps between spans[0..n) (of equal ones, the
 * first), leaving cap spans; returns the new count. gaps: room for n. */
static size_t coalesce(struct an_ov_span *s, size_t n, size_t cap, int64_t *gaps)
{
	if (n <= cap)
		return n;
	for (size_t i = 0; i + 1 < n; i++)
		gaps[i] = s[i + 1].start - (s[i].start + s[i].dur);
	an_sort(gaps, n - 1, sizeof(*gaps), cmp_i64);
	int64_t limit = gaps[n - cap - 1]; /* merging these n - cap gaps leaves cap spans */
	size_t ties = n - cap;             /* of them, those as long as limit */
	for (size_t i = 0; i + 1 < n && gaps[i] < limit; i++)
		ties--;
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t gap = m ? s[i].start - (s[m - 1].start + s[m - 1].dur) : 0;
		if (m && (gap < limit || (gap == limit && ties && ties--))) {
			struct an_ov_span *t = &s[m - 1];
			t->dur = s[i].start + s[i].dur - t->start;
			t->events += s[i].events;
			if (s[i].longest > t->longest) {
				t->longest = s[i].longest;
				t->name = s[i].name;
			}
		} else {
			s[m++] = s[i];
		}
	}
	return m;
}

static void row_label(const struct an_trace *a, uint32_t row, enum an_ov_kind kind, char *buf, size_t len)
{
	const struct an_row *r = an_table_item(&a->rows, row);
	const struct an_process *p = an_table_item(&a->pids, r->pid);
	char proc[TR_SHORT_MAX + 32];
	if (kind == AN_OV_STREAM || !*p->name)
		an_device_label(a, r->pid, proc, sizeof(proc));
	else
		snprintf(proc, sizeof(proc), "%s", p->name);
	const char *name = an_row_label(a, row);
	bool bare = name == an_row_tid(a, row) && strspn(name, "0123456789") == strlen(name);
	snprintf(buf, len, "%s \xc2\xb7 %s%s", proc,
	         !bare                  ? ""
	         : kind == AN_OV_STREAM ? "stream "
	                                : "thread ",
	         name);
}

static int64_t tid_number(const char *tid)
{
	char *end;
	errno = 0;
	long long v = strtoll(tid, &end, 10);
	return *tid && !*end && !errno && v >= 0 ? v : -1;
}

/* Whether a row's events are all the profiler's span over the trace
 * (category "Trace": libkineto's "PyTorch Profiler (0)", strobe's). */
static bool profiler_span(const struct an_trace *a, uint32_t row)
{
	struct an_xcur c;
	struct an_xrec x;
	for (an_xrow(a, row, &c); an_xnext(&c, &x);) {
		const struct an_name *sn = an_table_item(&a->names, x.name);
		if (strcmp(a->xcats.keys[sn->cat], "Trace"))
			return false;
	}
	return true;
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct an_ov_row *x = pa, *y = pb;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->tid != y->tid)
		return (uint64_t)x->tid < (uint64_t)y->tid ? -1 : 1; /* -1: last */
	return x->row < y->row ? -1 : x->row > y->row;
}

/* Room reused from row to row. */
struct scratch {
	struct an_ov_span *s;
	size_t ns, caps;
	int64_t *gaps, *ends; /* ends: of the open events, outermost first */
	size_t capgaps, capends;
};

/* The union of one row's events (sorted by start, parents first) at
 * depth level (0: all of them; 1: those directly inside a
 * top-level one), each stretch with its count and its longest event's
 * name. Events that only touch stay apart: one step ending as the next
 * starts is two stretches. */
static int row_union(const struct an_trace *a, uint32_t row, int level, struct scratch *m)
{
	size_t depth = 0;
	m->ns = 0;
	struct an_xcur c;
	struct an_xrec ev, *x = &ev;
	for (an_xrow(a, row, &c); an_xnext(&c, x);) {
		int64_t ts = an_span(a->first_ts, x->ts), end = an_sat_add(ts, x->dur);
		while (depth && m->ends[depth - 1] <= ts)
			depth--;
		if (AN_PUSH(m->ends, depth, m->capends, end))
			return -ENOMEM;
		if (level && depth - 1 != (size_t)level)
			continue;
		struct an_ov_span *last = m->ns ? &m->s[m->ns - 1] : NULL;
		int64_t last_end = last ? an_sat_add(last->start, last->dur) : 0;
		if (last && ts < last_end) {
			if (end > last_end)
				last->dur = end - last->start;
			last->events++;
			if (x->dur > last->longest) {
				last->longest = x->dur;
				last->name = x->name;
			}
		} else if (AN_PUSH(m->s, m->ns, m->caps,
		                   (struct an_ov_span){ts, x->dur, x->dur, 1, x->name})) {
			return -ENOMEM;
		}
	}
	return 0;
}

/* A row's stretches at depth level, at most cap of them, into *out; their
 * length before any gap is closed into *busy. */
static int row_spans(const struct an_trace *a, const struct an_ov_row *o, int level, size_t cap,
                     struct scratch *m, struct an_ov_span **out, size_t *nout, int64_t *busy)
{
	int rc = row_union(a, o->row, level, m);
	for (size_t i = 0; !rc && i < m->ns; i++)
		*busy = an_sat_add(*busy, m->s[i].dur);
	if (!rc && m->ns > m->capgaps) {
		free(m->gaps);
		m->capgaps = m->ns;
		m->gaps = malloc(m->capgaps * sizeof(*m->gaps));
		rc = m->gaps ? 0 : -ENOMEM;
	}
	if (rc)
		return rc;
	*nout = coalesce(m->s, m->ns, cap, m->gaps);
	*out = malloc((*nout ? *nout : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, m->s, *nout * sizeof(**out));
	return 0;
}

int an_overview(const struct an_trace *a, size_t max_rows, size_t max_spans, struct an_overview *ov)
{
	*ov = (struct an_overview){0};
	bool *gpu = calloc(a->rows.n ? a->rows.n : 1, sizeof(*gpu));
	struct scratch m = {0};
	size_t caprows = 0;
	int rc = gpu ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < a->ngpu; i++)
		gpu[a->gpu[i].row] = true;
	/* The rows with events, in order. */
	for (uint32_t row = 0; !rc && row < a->rows.n; row++) {
		if (!an_xrow_count(a, row))
			continue;
		const char *tname = an_row_label(a, row);
		enum an_ov_kind kind = gpu[row]                      ? AN_OV_STREAM
		                       : strstr(tname, AN_ASYNC_ROW) ? AN_OV_ASYNC
		                       : profiler_span(a, row)       ? AN_OV_SPAN
		                                                     : AN_OV_THREAD;
		const struct an_row *r = an_table_item(&a->rows, row);
		rc = AN_PUSH(
		    ov->rows, ov->nrows, caprows,
		    (struct an_ov_row){
		        .row = row, .pid = r->pid, .kind = kind, .tid = tid_number(an_row_tid(a, row))});
	}
	an_sort(ov->rows, ov->nrows, sizeof(*ov->rows), cmp_row);
	if (ov->nrows > max_rows) {
		ov->not_shown = ov->nrows - max_rows;
		ov->nrows = max_rows;
	}
	/* Half the budget for the rows' stretches, half for what is inside. */
	size_t per_row = ov->nrows ? max_spans / 2 / ov->nrows : 0;
	if (per_row > AN_OV_ROW_SPANS)
		per_row = AN_OV_ROW_SPANS;
	if (per_row < 1)
		per_row = 1;
	for (size_t k = 0; !rc && k < ov->nrows; k++) {
		struct an_ov_row *o = &ov->rows[k];
		row_label(a, o->row, o->kind, o->label, sizeof(o->label));
		int64_t inner_busy = 0;
		rc = row_spans(a, o, 0, per_row, &m, &o->spans, &o->nspans, &o->busy);
		if (!rc)
			rc = row_spans(a, o, 1, per_row, &m, &o->inner, &o->ninner, &inner_busy);
	}
	free(m.s);
	free(m.gaps);
	free(m.ends);
	free(gpu);
	if (rc)
		an_overview_free(ov);
	return rc;
}

void an_overview_free(struct an_overview *ov)
{
	for (size_t i = 0; ov->rows && i < ov->nrows; i++) {
		free(ov->rows[i].spans);
		free(ov->rows[i].inner);
	}
	free(ov->rows);
	*ov = (struct an_overview){0};
}

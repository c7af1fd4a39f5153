/* The report's timeline overview (overview.c): each CPU thread, GPU stream
 * and start/end row of the trace as the union of its events' ranges, and
 * of the ranges directly inside its top-level ones, in ns from the
 * window's start. A row with more stretches than its share of
 * max_spans has its shortest gaps closed until it fits, so the page stays
 * a few MB for any trace; a stretch keeps its event count and the name of
 * its longest event. */
#ifndef STROBE_TOOLS_OVERVIEW_H
#define STROBE_TOOLS_OVERVIEW_H

#include "analysis/analysis.h"

#define AN_OV_ROW_SPANS 20000 /* the most stretches of one lane (a row has two) */

/* SPAN: a row holding only the profiler's span over the trace. */
enum an_ov_kind { AN_OV_THREAD, AN_OV_STREAM, AN_OV_ASYNC, AN_OV_SPAN };

struct an_ov_span {
	int64_t start, dur, longest;
	uint64_t events;
	uint32_t name; /* names-table index of the longest event */
};

struct an_ov_row {
	uint32_t row, pid;
	enum an_ov_kind kind;
	int64_t tid; /* the tid as a number, -1 when it is text (sorted after) */
	char label[2 * TR_SHORT_MAX + 48];
	int64_t busy; /* the union's length */
	struct an_ov_span *spans;
	size_t nspans;
	struct an_ov_span *inner; /* the ranges directly inside those, likewise */
	size_t ninner;
};

struct an_overview {
	struct an_ov_row *rows; /* by pid, then kind, then row */
	size_t nrows, not_shown;
};

/* 0 or -ENOMEM (ov empty then). At most max_rows rows (the rest counted in
 * not_shown) and about max_spans stretches in all, half of them inner. */
int an_overview(const struct an_trace *a, size_t max_rows, size_t max_spans, struct an_overview *ov);
void an_overview_free(struct an_overview *ov);

#endif

/* Two read traces compared (strobe diff): steps by position in each rank,
 * ops and kernels by name and position in their step.
 *
 * An op (a cpu_op or user_annotation range that is not a step) or a kernel
 * is placed in the step of its rank whose window holds its start (none:
 * outside every step), and numbered among the same name in that step in
 * start order. The k-th "aten::mm" of the third step in A is matched with
 * the k-th "aten::mm" of the third step in B; what has no partner is new
 * (only in B) or gone (only in A). Rows are per rank and name, ranked by
 * the change in total time (largest change first, either way). */
#ifndef STROBE_TOOLS_DIFF_H
#define STROBE_TOOLS_DIFF_H

#include "analysis/analysis.h"

struct an_diff_row {
	int64_t rank;
	const char *name; /* in trace A's or B's names */
	uint64_t a_count, b_count, matched;
	int64_t a_total, b_total;
	int64_t matched_change; /* sum of B - A over matched pairs */
	int64_t new_total, gone_total;
};

struct an_diff_step {
	int64_t rank;
	size_t index;               /* position among the rank's steps */
	int64_t a_number, b_number; /* N of ProfilerStep#N (-1: no such step in that trace) */
	int64_t a_dur, b_dur;
	int64_t a_busy, b_busy; /* summed over the rank's devices; -1 when none */
};

struct an_diff {
	struct an_diff_row *ops, *kernels;
	size_t nops, nkernels;
	struct an_diff_step *steps;
	size_t nsteps;
};

/* 0 or -ENOMEM; free d with an_diff_free either way. */
int an_diff(const struct an_trace *a, const struct an_trace *b, struct an_diff *d);
void an_diff_free(struct an_diff *d);
/* "slower", "faster", "new", "gone" or "same". */
const char *an_diff_status(const struct an_diff_row *r);

#endif

/* The device-counter sampler: a backend (strb_counters_backend) that drives
 * the counter sources of process/counters.h. */
#ifndef STROBE_BACKENDS_COUNTERS_SAMPLER_H
#define STROBE_BACKENDS_COUNTERS_SAMPLER_H

#include "process/counters.h"

/* The sources, tried in order; the first that opens is used. */
extern const struct strb_counter_source strb_nvml_source;

/* What the sampler costs and collected in the last trace, for tests and the
 * benchmark. */
struct strb_counters_stats {
	uint64_t ticks;   /* sampling rounds */
	uint64_t late;    /* rounds skipped because the previous one ran over */
	uint64_t samples; /* device samples kept */
	uint64_t dropped; /* device samples over the budget */
	int64_t cpu_ns;   /* the sampler thread's CPU time */
	int64_t wall_ns;  /* from its start to its end */
};
void strb_counters_stats(struct strb_counters_stats *out);

#endif

/* The processing pass: turns what was captured in a window into a trace. */
#ifndef STROBE_PROCESS_PROCESS_H
#define STROBE_PROCESS_PROCESS_H

#include <stdint.h>

#include "core/clock.h"
#include "process/trace.h"

struct strb_config;

struct strb_window {
	uint32_t session;
	uint64_t start_ticks, stop_ticks;
	int64_t start_ns, stop_ns; /* epoch */
	const struct strb_clock_map *map;
	uint64_t mask; /* selected activity types */
};

/* Decodes every thread buffer of the window's session into activities,
 * thread rows and accounting. Returns 0 or -ENOMEM. */
int strb_process_cpu(struct strobe_trace *t, const struct strb_window *w);

/* The same for a flight dump, from copies of the session's rings taken
 * while it goes on recording: ranges that ended before the window are
 * left out, those still open are kept from where they began. */
struct strb_flight_counts {
	uint64_t aged_out;     /* records recycled before the dump */
	uint64_t kept_lost;    /* open pushes too many to keep */
	uint64_t torn_threads; /* threads whose ring could not be copied whole */
};
int strb_process_cpu_flight(struct strobe_trace *t, const struct strb_window *w,
                            struct strb_flight_counts *fc);
/* The same from copies taken elsewhere (a raw crash dump's rings), whose
 * records the caller has checked; domains: the names of the annotation
 * domains where they were recorded (STRB_DOMAINS_MAX entries, NULL or ""
 * for none), or NULL for this process's. */
struct strb_tbuf_view;
int strb_process_cpu_views(struct strobe_trace *t, const struct strb_window *w,
                           const struct strb_tbuf_view *views, size_t n, const char *const *domains,
                           struct strb_flight_counts *fc);

/* Checks and copies an activity handed back by a child profiler: device 0
 * becomes this process; types outside the mask are skipped. */
int strb_process_child_activity(struct strobe_trace *t, const struct strb_window *w,
                                const struct strobe_activity *a);

/* Extra rows for GPU work that overlaps on one stream: a kernel, memcpy
 * or memset that starts before an earlier one on its (device, stream) row
 * has ended moves to lane k >= 1 of that stream, tid
 * k * STRB_OVERLAP_LANE_STEP + stream, named "stream S (overlap k)". Stream
 * ids are below 2^32 (CUPTI's are 32-bit), so lane tids never meet a real
 * stream or libkineto's "Stream Sync" rows (stream + 1000000); lanes stop
 * at STRB_OVERLAP_MAX_LANES, which keeps tids exact in JSON doubles. Counts
 * moved activities in stats.gpu_overlap_moved. O(n) when nothing overlaps
 * or rows arrive in start order, else a sort of each row that does not;
 * activities a backend checked itself (t->in_order_from..to) are not read
 * again when all other GPU work is absent. Returns 0 or -ENOMEM. */
#define STRB_OVERLAP_LANE_STEP (INT64_C(1) << 40)
#define STRB_OVERLAP_MAX_LANES 1023
int strb_process_overlap(struct strobe_trace *t);

/* Adds the process row, the process-wide metadata, host and job keys, the
 * request's trace id and strobe's own accounting. */
int strb_process_finish(struct strobe_trace *t, const struct strb_window *w, const struct strb_config *cfg);

/* libkineto's name for this process: argv[0]'s basename. */
void strb_process_name(char *out, size_t len);

#endif

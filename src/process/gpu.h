/* The GPU layer every device backend shares: what turns a vendor's records
 * into strobe's GPU rows once the vendor specifics are decoded.
 *
 * A backend's process() (the thread driving the trace, under the
 * controller's lock, after strb_process_cpu) owns one struct strb_gpu for
 * the length of the call and drives it in this order:
 *
 *   strb_gpu_init                      once, before anything else
 *   strb_gpu_add_call / _add_external  pass 1: every launching host call
 *                                      (runtime/driver/HIP/L0 call) and
 *                                      every external-correlation record
 *   strb_gpu_build_table               once all ids are known
 *   strb_gpu_link_calls                each call gets the innermost strobe
 *                                      op and range open around it
 *   (the backend marks calls emitted / flow / launch)
 *   strb_gpu_record_ok, strb_gpu_emit, pass 2: GPU work and calls, linked
 *   strb_gpu_link, strb_gpu_note_row   (External id, ac2g flow, spans)
 *   strb_gpu_emit_spans                gpu_user_annotation spans
 *   strb_gpu_count_launches            the launches-vs-kernels self-check
 *   strb_gpu_add_rows                  "GPU N" processes and stream rows
 *   strb_gpu_free                      always, also after an error
 *
 * None of it is thread-safe, none of it is called on a vendor thread:
 * vendor threads only fill buffers (process/gpu_buffers.h). Errors are
 * sticky: the first sets g->rc (-ENOMEM) and later calls do nothing. */
#ifndef STROBE_PROCESS_GPU_H
#define STROBE_PROCESS_GPU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/clock.h"
#include "process/process.h"
#include "process/trace.h"

/* GPU rows sort below every CPU pid, one process per device: "GPU N". */
#define STRB_GPU_SORT_OFFSET 5000000
#define STRB_GPU_MAX_DEVICES 64

/* A host call that may launch GPU work. The backend fills corr, tid,
 * start, end (epoch ns) and its own kind/op; link_calls fills op_id and
 * range_id; the backend then sets emitted (the call is written to the
 * trace), flow (it starts an ac2g arrow) and launch (a kernel launch, for
 * the self-check) before pass 2. */
struct strb_gpu_call {
	uint64_t corr;
	uint32_t kind, op; /* the backend's own classification */
	pid_t tid;
	int64_t start, end;
	uint64_t op_id, range_id; /* innermost strobe op / range around the call */
	bool emitted, flow, launch;
	bool got_kernel; /* set by the backend when a kernel linked to it */
};

/* What is known about a correlation id: its call (NULL for none) and the
 * external ids pushed around it (0 for none): ext0 = strobe op
 * (strobe_correlation_push), ext1 = user range (strobe_user_correlation_push). */
struct strb_gpu_ref {
	struct strb_gpu_call *call;
	uint64_t ext0, ext1;
};

/* Paused intervals (strobe_toggle_collection) in the backend's record
 * clock: GPU work starting inside one is dropped and counted. The backend
 * writes them on the controller's thread (toggle); the GPU layer reads them
 * at processing, after stop. */
#define STRB_GPU_MAX_PAUSES 256
struct strb_gpu_pauses {
	uint64_t from[STRB_GPU_MAX_PAUSES], to[STRB_GPU_MAX_PAUSES];
	int n;
	bool paused; /* from[n] is open */
};
/* Opens (enable false) or closes a pause at now; no-op when already so. */
void strb_gpu_pause(struct strb_gpu_pauses *p, bool enable, uint64_t now);
bool strb_gpu_paused(const struct strb_gpu_pauses *p, uint64_t t);

struct strb_gpu_ext;
struct strb_gpu_slot;
struct strb_gpu_span;

struct strb_gpu {
	struct strobe_trace *t;
	const struct strb_window *w;
	struct strb_trace_stats *st;
	const struct strb_gpu_pauses *pauses; /* or NULL */
	/* Count GPU work whose launching call is missing (the backend sets it
	 * when calls were selected, so their absence means something). */
	bool count_unmatched;
	bool overlap; /* work overlapped on some row (known as rows are noted) */
	int rc;

	struct strb_gpu_call *calls;
	size_t ncalls, calls_cap;

	/* Private to gpu.c. */
	struct strb_gpu_ext *exts;
	size_t nexts, exts_cap;
	struct strb_gpu_slot *slots;
	size_t slots_cap, slots_used;
	int32_t *dense_call;
	struct strb_gpu_ext_pair *dense_ext;
	uint64_t dense_base;
	uint32_t dense_len;
	uint64_t *rows;
	int64_t *row_end;
	size_t nrows, rows_cap, last_row;
	bool device_seen[STRB_GPU_MAX_DEVICES];
	struct strb_gpu_span *spans;
	size_t nspans, spans_cap;
	const char **name_keys, **name_values;
	size_t names_cap, names_used;
	struct strb_clock_cursor clock;
};

void strb_gpu_init(struct strb_gpu *g, struct strobe_trace *t, const struct strb_window *w);
/* Frees what g holds (not the trace); g is zeroed. */
void strb_gpu_free(struct strb_gpu *g);

/* Grows *p (of *cap elements of elem bytes) to hold need; false (and
 * g->rc = -ENOMEM) when memory is short. For the backend's own arrays. */
bool strb_gpu_grow(struct strb_gpu *g, void **p, size_t *cap, size_t need, size_t elem);

static inline bool strb_gpu_selected(const struct strb_gpu *g, enum strobe_activity_type type)
{
	return g->w->mask & STROBE_ACTIVITY_BIT(type);
}

/* Strobe clock ns (what every backend asks its vendor library to stamp
 * records with, or converts them to) to epoch ns. */
static inline int64_t strb_gpu_epoch(struct strb_gpu *g, uint64_t ns)
{
	return strb_clock_cursor_ns_epoch(&g->clock, ns);
}

/* Pass 1. */
void strb_gpu_add_call(struct strb_gpu *g, const struct strb_gpu_call *call);
/* An external id (which: 0 = op, 1 = range) pushed around corr. */
void strb_gpu_add_external(struct strb_gpu *g, uint64_t corr, int which, uint64_t id);
/* Indexes calls and external ids by correlation id (directly when ids are
 * dense, else hashed) and reserves room for every record read
 * (st->gpu_records, counted by the backend in pass 1). */
void strb_gpu_build_table(struct strb_gpu *g);
struct strb_gpu_ref strb_gpu_find(struct strb_gpu *g, uint64_t corr);
/* Fills each call's op_id / range_id from the trace's CPU ops and user
 * annotations on the same thread. */
void strb_gpu_link_calls(struct strb_gpu *g);

/* Pass 2. */
/* A string that lives as long as the trace. */
const char *strb_gpu_keep(struct strb_gpu *g, const char *s);
/* Appends an activity; args (keys static, string values in the trace) are
 * copied into the trace's arena. NULL after an error or for a NULL name. */
struct strobe_activity *strb_gpu_emit(struct strb_gpu *g, enum strobe_activity_type type, const char *name,
                                      int64_t start, int64_t end, int64_t device, int64_t resource,
                                      const struct strobe_arg *args, size_t nargs);
/* Common checks for GPU work: complete (both times, end >= start), not
 * paused, inside the window; counts what it drops and converts the times
 * to epoch ns. */
bool strb_gpu_record_ok(struct strb_gpu *g, uint64_t start, uint64_t end, int64_t *s, int64_t *e);
/* Links GPU work a (already on its device/stream row) to the call with
 * correlation id corr: a->id = corr, a->linked_id = the enclosing op's id
 * (External id), an ac2g flow when the call starts one; work (kernels,
 * copies, fills, not syncs) widens its range's gpu_user_annotation span on
 * that row. Returns the call, or NULL. */
struct strb_gpu_call *strb_gpu_link(struct strb_gpu *g, struct strobe_activity *a, uint64_t corr,
                                    int64_t gpu_start, bool work);
/* (device, stream) saw work from start to end: a row to name, and whether
 * work overlaps on it (g->overlap). Devices 0..STRB_GPU_MAX_DEVICES-1. */
void strb_gpu_note_row(struct strb_gpu *g, uint32_t device, uint32_t stream, int64_t start, int64_t end);
bool strb_gpu_row_busy(const struct strb_gpu *g, uint32_t device, uint32_t stream);
/* A kernel's display name, once per distinct raw pointer (the vendor's
 * string must stay valid and unchanged for the whole pass): demangle(raw)
 * (malloc'ed, or NULL to keep raw) interned in the trace; "<unknown
 * kernel>" for NULL. */
const char *strb_gpu_kernel_name(struct strb_gpu *g, const char *raw, char *(*demangle)(const char *));

/* After pass 2. */
void strb_gpu_emit_spans(struct strb_gpu *g);
/* Counts emitted launch calls (st->gpu_launches) and those no kernel was
 * linked to (st->gpu_launches_without_kernel, returned). */
uint64_t strb_gpu_count_launches(struct strb_gpu *g);
/* A "GPU N" process per device that saw work, a "stream S " row per
 * (device, stream). */
void strb_gpu_add_rows(struct strb_gpu *g);

#endif

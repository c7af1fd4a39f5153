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

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
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
	bool got_work;   /* set by the backend when any GPU work linked to it */
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
struct strb_gpu_ext_pair {
	uint64_t ext0, ext1;
};

struct strb_gpu {
	struct strobe_trace *t;
	const struct strb_window *w;
	struct strb_trace_stats *st;
	const struct strb_gpu_pauses *pauses; /* or NULL */
	/* Count GPU work whose launching call is missing (the backend sets it
	 * when calls were selected, so their absence means something). */
	bool count_unmatched;
	bool overlap; /* work overlapped on some row (known as rows are noted) */
	/* A stream row's title; NULL for libkineto's CUDA/ROCm "stream S ". */
	void (*row_title)(uint32_t stream, char *buf, size_t len);
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
/* What is known about corr once the table is built. The calls made once
 * per record (find, emit, record_ok, link, note_row) are inline: a
 * backend's decoding loop pays no call for them. */
struct strb_gpu_ref strb_gpu_find_sparse(struct strb_gpu *g, uint64_t corr);
static inline struct strb_gpu_ref strb_gpu_find(struct strb_gpu *g, uint64_t corr)
{
	struct strb_gpu_ref r = {NULL, 0, 0};
	if (!corr)
		return r;
	if (!g->dense_call)
		return strb_gpu_find_sparse(g, corr);
	/* Dense ids (vendors number calls 1, 2, 3...): direct index. */
	uint64_t i = corr - g->dense_base;
	if (corr < g->dense_base || i >= g->dense_len)
		return r;
	int32_t call = g->dense_call[i] - 1;
	if (g->dense_ext)
		r.ext0 = g->dense_ext[i].ext0, r.ext1 = g->dense_ext[i].ext1;
	r.call = call >= 0 ? &g->calls[call] : NULL;
	return r;
}

/* Fills each call's op_id / range_id from the trace's CPU ops and user
 * annotations on the same thread. */
void strb_gpu_link_calls(struct strb_gpu *g);
/* Links GPU work decoded before the CPU ops around its launches were
 * (t->acts[from, to): a flight recorder's GPU snapshot, added to the CPU
 * work of a crash dump) as link_calls would have: each call (an activity
 * on a CPU row, id = its correlation id) and the GPU work with its id get
 * the innermost op around the call as linked_id (External id), where they
 * have none yet. gpu_user_annotation spans are not made. Returns 0 or
 * -ENOMEM. */
int strb_gpu_relink(struct strobe_trace *t, const struct strb_window *w, size_t from, size_t to);

/* Pass 2. */
/* A string that lives as long as the trace. */
const char *strb_gpu_keep(struct strb_gpu *g, const char *s);
/* Appends an activity; args (keys static, string values in the trace) are
 * copied into the trace's arena. NULL after an error or for a NULL name. */
static inline struct strobe_activity *strb_gpu_emit(struct strb_gpu *g, enum strobe_activity_type type,
                                                    const char *name, int64_t start, int64_t end,
                                                    int64_t device, int64_t resource,
                                                    const struct strobe_arg *args, size_t nargs)
{
	struct strobe_arg *copy = NULL;
	if (g->rc || !name)
		return NULL;
	if (nargs) {
		copy = strb_arena_alloc(&g->t->arena, nargs * sizeof(*copy));
		if (!copy) {
			g->rc = -ENOMEM;
			return NULL;
		}
		memcpy(copy, args, nargs * sizeof(*copy));
	}
	struct strobe_activity *a = strb_trace_push(g->t);
	if (!a) {
		g->rc = -ENOMEM;
		return NULL;
	}
	a->type = type;
	a->name = name;
	a->start_ns = start;
	a->end_ns = end;
	a->device = device;
	a->resource = resource;
	a->args = copy;
	a->arg_count = nargs;
	return a;
}

/* Common checks for GPU work: complete (both times, end >= start), not
 * paused, inside the window; counts what it drops and converts the times
 * to epoch ns. */
static inline bool strb_gpu_record_ok(struct strb_gpu *g, uint64_t start, uint64_t end, int64_t *s,
                                      int64_t *e)
{
	if (!start || !end || end < start) {
		g->st->gpu_incomplete_records++;
		return false;
	}
	if (g->pauses && (g->pauses->n || g->pauses->paused) && strb_gpu_paused(g->pauses, start)) {
		g->st->gpu_paused_records++;
		return false;
	}
	*s = strb_gpu_epoch(g, start);
	*e = strb_gpu_epoch(g, end);
	if (*s < g->w->start_ns || *e > g->w->stop_ns) {
		g->st->gpu_out_of_window++;
		return false;
	}
	return true;
}

/* Range `range`'s gpu_user_annotation span on a's row covers a. */
void strb_gpu_widen_span(struct strb_gpu *g, const struct strobe_activity *a, uint64_t range);
/* Links GPU work a (already on its device/stream row) to the call with
 * correlation id corr: a->id = corr, a->linked_id = the enclosing op's id
 * (External id), an ac2g flow when the call starts one; work (kernels,
 * copies, fills, not syncs) widens its range's gpu_user_annotation span on
 * that row. Returns the call, or NULL. */
static inline struct strb_gpu_call *strb_gpu_link(struct strb_gpu *g, struct strobe_activity *a,
                                                  uint64_t corr, int64_t gpu_start, bool work)
{
	struct strb_gpu_ref s = strb_gpu_find(g, corr);
	struct strb_gpu_call *call = s.call;
	a->id = corr;
	a->linked_id = s.ext0 ? s.ext0 : call ? call->op_id : 0;
	if (call) {
		if (call->emitted && call->flow) {
			a->flow_id = corr;
			a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
		}
		if (call->start > gpu_start)
			g->st->gpu_out_of_order++;
	} else if (corr && g->count_unmatched) {
		g->st->gpu_unmatched_correlations++;
	}
	uint64_t range = s.ext1 ? s.ext1 : call ? call->range_id : 0;
	if (work && range && strb_gpu_selected(g, STROBE_ACTIVITY_GPU_USER_ANNOTATION))
		strb_gpu_widen_span(g, a, range);
	return call;
}

/* (device, stream) saw work from start to end: a row to name, and whether
 * work overlaps on it (g->overlap). Devices 0..STRB_GPU_MAX_DEVICES-1. */
void strb_gpu_note_new_row(struct strb_gpu *g, uint32_t device, uint32_t stream, int64_t start, int64_t end);
static inline void strb_gpu_note_row(struct strb_gpu *g, uint32_t device, uint32_t stream, int64_t start,
                                     int64_t end)
{
	uint64_t key = (uint64_t)device << 32 | stream;
	size_t i = g->last_row;
	/* Most records repeat the last row. */
	if (i >= g->nrows || g->rows[i] != key) {
		strb_gpu_note_new_row(g, device, stream, start, end);
		return;
	}
	if (start < g->row_end[i])
		g->overlap = true;
	if (end > g->row_end[i])
		g->row_end[i] = end;
}

bool strb_gpu_row_busy(const struct strb_gpu *g, uint32_t device, uint32_t stream);
/* A kernel's display name, once per distinct raw pointer (the vendor's
 * string must stay valid and unchanged for the whole pass): raw demangled
 * by strb_gpu_demangle (or kept when not mangled) interned in the trace;
 * "<unknown kernel>" for NULL. */
const char *strb_gpu_kernel_name_slow(struct strb_gpu *g, const char *raw);
static inline const char *strb_gpu_kernel_name(struct strb_gpu *g, const char *raw)
{
	/* Most kernels repeat a name already seen, found at the first probe. */
	if (raw && g->names_cap) {
		size_t j = ((uintptr_t)raw >> 3) & (g->names_cap - 1);
		if (g->name_keys[j] == raw)
			return g->name_values[j];
	}
	return strb_gpu_kernel_name_slow(g, raw);
}

/* After pass 2. */
void strb_gpu_emit_spans(struct strb_gpu *g);
/* Counts emitted launch calls (st->gpu_launches) and those no kernel was
 * linked to (st->gpu_launches_without_kernel; returns this backend's).
 * Every count of the trace's accounting adds to what other backends
 * counted in the same trace. */
uint64_t strb_gpu_count_launches(struct strb_gpu *g);
/* A "GPU N" process per device that saw work, a "stream S " row (or
 * g->row_title's) per (device, stream). */
void strb_gpu_add_rows(struct strb_gpu *g);

#endif

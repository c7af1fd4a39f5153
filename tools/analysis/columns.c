/* The column specs of every table strobe summary and strobe report show
 * (columns.h), and the walk over their rows. */
#include "analysis/columns.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COLS(x) .cols = x, .ncols = sizeof(x) / sizeof(x[0])
#define F(T, f) .off = offsetof(T, f), .size = sizeof(((T *)0)->f)
/* An accessor fn computing v from row r of type T (a: the trace). */
#define GET(fn, T, ...)                                                                                      \
	static void fn(const struct an_trace *a, const void *row, struct an_value *v)                        \
	{                                                                                                    \
		const T *r = row;                                                                            \
		(void)a;                                                                                     \
		__VA_ARGS__;                                                                                 \
	}
/* The rows of a table, from the view v. */
#define ROWS(fn, base, count)                                                                                \
	static struct an_rows fn(const struct an_view *v)                                                    \
	{                                                                                                    \
		return (struct an_rows){base, count, sizeof(*(base))};                                       \
	}

/* ---- names and categories ------------------------------------------------ */

#define NAME(r) ((const struct an_name *)an_table_item(&a->names, (r)->id))
GET(ref_name, struct an_ref, v->s = r->name)
GET(name_count, struct an_ref, v->i = (int64_t)NAME(r)->count)
GET(name_total, struct an_ref, v->i = NAME(r)->total)
GET(name_self, struct an_ref, v->i = NAME(r)->self)
GET(name_wall, struct an_ref, v->i = NAME(r)->wall)
GET(name_self_wall, struct an_ref, v->i = NAME(r)->self_wall)
GET(name_mean, struct an_ref, v->i = NAME(r)->total / (int64_t)NAME(r)->count)
GET(name_max, struct an_ref, v->i = NAME(r)->max)

static const struct an_column names_cols[] = {
    {"name", "name", AN_TEXT, 44, AN_NAME, .get = ref_name},
    {"count", "count", AN_COUNT, 8, 0, .get = name_count},
    {"total", "wall_ns", AN_NS, 11, 0, .get = name_wall},
    {"self", "self_wall_ns", AN_NS, 11, 0, .get = name_self_wall},
    {"sum", "total_ns", AN_NS, 0, AN_JSON, .get = name_total},
    {"self sum", "self_ns", AN_NS, 0, AN_JSON, .get = name_self},
    {"mean", "mean_ns", AN_NS, 11, 0, .get = name_mean},
    {"max", "max_ns", AN_NS, 11, 0, .get = name_max},
};
const struct an_spec an_names = {.key = "top_by_total", .id = "names", COLS(names_cols), .flags = AN_T_TOP};

#define CAT(r) ((const struct an_category *)an_table_item(&a->xcats, (r)->id))
GET(cat_events, struct an_ref, v->i = (int64_t)CAT(r)->events)
GET(cat_names, struct an_ref, v->i = CAT(r)->names)
GET(cat_total, struct an_ref, v->i = CAT(r)->total)
GET(cat_self, struct an_ref, v->i = CAT(r)->self)
GET(cat_wall, struct an_ref, v->i = CAT(r)->wall)
GET(cat_self_wall, struct an_ref, v->i = CAT(r)->self_wall)

static const struct an_column categories_cols[] = {
    {"category", "cat", AN_TEXT, 44, 0, .get = ref_name},
    {"events", "events", AN_COUNT, 8, 0, .get = cat_events},
    {"names", "names", AN_COUNT, 8, 0, .get = cat_names},
    {"total", "wall_ns", AN_NS, 11, 0, .get = cat_wall},
    {"self", "self_wall_ns", AN_NS, 11, 0, .get = cat_self_wall},
    {"sum", "total_ns", AN_NS, 0, AN_JSON, .get = cat_total},
    {"self sum", "self_ns", AN_NS, 0, AN_JSON, .get = cat_self},
};
ROWS(categories_rows, v->xcats, v->nxcats)
const struct an_spec an_categories = {.key = "categories",
                                      .id = "categories",
                                      .title = "complete events by category",
                                      .heading = "Time by category",
                                      COLS(categories_cols),
                                      .rows = categories_rows};

/* ---- GPU devices, their streams, idle gaps and overlap ---------------------- */

#define GAP(f) F(struct an_gap, f)
static const struct an_column gaps_cols[] = {
    {"duration", "duration_ns", AN_NS, GAP(dur)},
    {"start", "start_ns", AN_TS, GAP(start)},
};
static const struct an_spec gaps = {.key = "longest", .line = "{0} at {1}", COLS(gaps_cols)};

GET(stream_tid, struct an_stream,
    v->s = a->rows.keys[r->row] + ((const struct an_row *)an_table_item(&a->rows, r->row))->tid_off - 1)
GET(stream_pct, struct an_stream, v->d = an_pct(r->busy, an_window(a)))

#define STREAM(f) F(struct an_stream, f)
GET(stream_label, struct an_stream, v->s = an_row_label(a, r->row))

static const struct an_column streams_cols[] = {
    {"stream", "tid", AN_IDENT, 0, 0, .get = stream_tid},
    {"name", "name", AN_TEXT, 0, 0, .get = stream_label},
    {"busy %", "busy_pct", AN_PCT, 0, 0, .get = stream_pct},
    {"busy", "busy_ns", AN_NS, STREAM(busy)},
    {"events", "events", AN_COUNT, STREAM(events)},
};
static const struct an_spec streams = {
    .key = "streams", .line = "{1} {2} ({3}, events {4})", COLS(streams_cols)};

GET(hidden_pct, struct an_device, v->d = an_pct(r->both, r->comm))

#define DEV(f) F(struct an_device, f)
static const struct an_column overlap_cols[] = {
    {"NCCL", "comm_ns", AN_NS, DEV(comm)},
    {"compute", "compute_ns", AN_NS, DEV(compute)},
    {"both", "both_ns", AN_NS, DEV(both)},
    {"hidden", "hidden_pct", AN_PCT, 0, 0, .get = hidden_pct},
};
static const struct an_spec overlap = {
    .key = "comm_compute",
    .id = "overlap",
    .heading = "Communication and compute",
    .note = "NCCL kernels against the other kernels on the same device: time both ran at once, and the "
            "share of communication it hid.",
    .line = "NCCL {0}, compute {1}, both at once {2}: {3} of communication hidden",
    COLS(overlap_cols),
    .flags = AN_T_ONE};

GET(dev_name, struct an_device, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(dev_pct, struct an_device, v->d = an_pct(r->busy, an_window(a)))
GET(dev_top, struct an_device, v->rows = (struct an_rows){r->top, r->ntop, sizeof(r->top[0])})
GET(dev_pid, struct an_device, v->s = a->pids.keys[r->pid])
GET(dev_streams, struct an_device, v->rows = (struct an_rows){r->streams, r->nstreams, sizeof(*r->streams)})
GET(dev_comm, struct an_device, v->rows = (struct an_rows){r, r->has_comm, sizeof(*r)})

static const struct an_column devices_cols[] = {
    {"rank", "rank", AN_RANK, DEV(rank)},
    {"device", "name", AN_TEXT, 38, 0, .get = dev_name},
    {"events", "events", AN_COUNT, 8, DEV(events)},
    {"busy", "busy_ns", AN_NS, 11, DEV(busy)},
    {"busy %", "busy_pct", AN_PCT, 8, 0, .get = dev_pct},
    {"gaps", "idle_gaps.count", AN_COUNT, 8, DEV(gaps)},
    {"idle", "idle_gaps.total_ns", AN_NS, 11, DEV(gap_total)},
    {"longest gap", "idle_gaps.longest_ns", AN_NS, 12, DEV(gap_max)},
    {"longest gaps", "idle_gaps.longest", AN_ROWS, 0, AN_LINE, .get = dev_top, .sub = &gaps},
    {"pid", "pid", AN_IDENT, 0, AN_LINE, .get = dev_pid},
    {"first work", "first_ts_ns", AN_TS, 0, AN_LINE, DEV(first)},
    {"last work end", "last_end_ns", AN_TS, 0, AN_LINE, DEV(last)},
    {"streams (busy % of the window)", "streams", AN_ROWS, 0, AN_LINE, .get = dev_streams, .sub = &streams},
    {"", "comm_compute", AN_ROWS, 0, AN_LINE, .get = dev_comm, .sub = &overlap},
};
ROWS(devices_rows, v->a->devices, v->a->ndevices)
const struct an_spec an_devices = {
    .key = "gpu_devices",
    .id = "devices",
    .title = "GPU devices: busy = union of kernels, copies and memsets (overlapping streams once)",
    .heading = "GPU devices",
    COLS(devices_cols),
    .flags = AN_T_RANKED,
    .rows = devices_rows};

/* ---- kernels, copies, launch latency, CPU ops ------------------------------- */

GET(k_name, struct an_kernel, v->s = an_name(a, r->name))
GET(k_mean, struct an_kernel, v->i = r->total / (int64_t)r->count)

#define KERNEL(f) F(struct an_kernel, f)
static const struct an_column kernels_cols[] = {
    {"rank", "rank", AN_RANK, KERNEL(rank)},          {"name", "name", AN_TEXT, 35, AN_NAME, .get = k_name},
    {"count", "count", AN_COUNT, 8, KERNEL(count)},   {"total", "total_ns", AN_NS, 11, KERNEL(total)},
    {"mean", "mean_ns", AN_NS, 11, 0, .get = k_mean}, {"p50", "p50_ns", AN_NS, 11, KERNEL(p50)},
    {"p99", "p99_ns", AN_NS, 11, KERNEL(p99)},        {"max", "max_ns", AN_NS, 11, KERNEL(max)},
};
ROWS(kernels_rows, v->a->kernels, v->a->nkernel_stats)
const struct an_spec an_kernels = {.key = "kernels",
                                   .id = "kernels",
                                   .title = "kernels by total time",
                                   .heading = "Kernels",
                                   COLS(kernels_cols),
                                   .flags = AN_T_TOP | AN_T_RANKED,
                                   .rows = kernels_rows};

GET(copy_rate, struct an_copy_stat, v->d = r->total > 0 ? (double)r->bytes / (double)r->total : 0)

#define COPY(f) F(struct an_copy_stat, f)
static const struct an_column memcpy_cols[] = {
    {"rank", "rank", AN_RANK, COPY(rank)},         {"kind", "kind", AN_TEXT, 36, COPY(dir)},
    {"count", "count", AN_COUNT, 8, COPY(count)},  {"bytes", "bytes", AN_COUNT, 16, COPY(bytes)},
    {"total", "total_ns", AN_NS, 11, COPY(total)}, {"GB/s", "gb_per_s", AN_RATE, 10, 0, .get = copy_rate},
};
ROWS(memcpy_rows, v->a->copy_stats, v->a->ncopy_stats)
const struct an_spec an_memcpy = {.key = "memcpy",
                                  .id = "memcpy",
                                  .title = "memcpy by direction",
                                  .heading = "Memory copies",
                                  COLS(memcpy_cols),
                                  .flags = AN_T_RANKED,
                                  .rows = memcpy_rows};

/* Percentiles of no matched launch are no value, not 0. */
GET(l_unmatched, struct an_latency, v->i = (int64_t)(r->kernels - r->matched))
GET(l_p50, struct an_latency, v->i = r->p50; v->none = !r->matched)
GET(l_p90, struct an_latency, v->i = r->p90; v->none = !r->matched)
GET(l_p99, struct an_latency, v->i = r->p99; v->none = !r->matched)
GET(l_max, struct an_latency, v->i = r->max; v->none = !r->matched)

#define LAT(f) F(struct an_latency, f)
static const struct an_column latency_cols[] = {
    {"rank", "rank", AN_RANK, 12, LAT(rank)},
    {"kernels", "kernels", AN_COUNT, 8, LAT(kernels)},
    {"matched", "matched", AN_COUNT, 8, LAT(matched)},
    {"unmatched", "unmatched", AN_COUNT, 10, 0, .get = l_unmatched},
    {"p50", "p50_ns", AN_NS, 11, 0, .get = l_p50},
    {"p90", "p90_ns", AN_NS, 11, 0, .get = l_p90},
    {"p99", "p99_ns", AN_NS, 11, 0, .get = l_p99},
    {"max", "max_ns", AN_NS, 11, 0, .get = l_max},
};
ROWS(latency_rows, v->a->latency, v->a->nlatency)
const struct an_spec an_latency = {
    .key = "launch_latency",
    .id = "latency",
    .title = "launch latency: kernel start - start of the runtime call that launched it",
    .heading = "Launch latency",
    .note = "Kernel start minus the start of the runtime or driver call that launched it (same "
            "correlation id).",
    COLS(latency_cols),
    .rows = latency_rows};

GET(op_name, struct an_cpu_op, v->s = an_name(a, r->name))

#define OP(f) F(struct an_cpu_op, f)
static const struct an_column cpu_ops_cols[] = {
    {"rank", "rank", AN_RANK, OP(rank)},
    {"name", "name", AN_TEXT, 44, AN_NAME, .get = op_name},
    {"count", "count", AN_COUNT, 8, OP(count)},
    {"total", "wall_ns", AN_NS, 11, OP(wall)},
    {"self", "self_wall_ns", AN_NS, 11, OP(self_wall)},
    {"sum", "total_ns", AN_NS, 0, AN_JSON, OP(total)},
    {"self sum", "self_ns", AN_NS, 0, AN_JSON, OP(self)},
};
ROWS(cpu_ops_rows, v->a->cpu_ops, v->a->ncpu_ops)
const struct an_spec an_cpu_ops = {.key = "cpu_ops_by_self",
                                   .id = "cpu-ops",
                                   .title = "cpu_op by self time, per rank",
                                   .heading = "CPU ops by self time",
                                   COLS(cpu_ops_cols),
                                   .flags = AN_T_TOP | AN_T_RANKED,
                                   .rows = cpu_ops_rows};

/* ---- GPU memory ----------------------------------------------------------- */

GET(mem_name, struct an_memory, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(mem_peak, struct an_memory, v->i = (int64_t)r->peak)
GET(mem_start, struct an_memory, v->i = (int64_t)r->start)
GET(mem_last, struct an_memory, v->i = (int64_t)r->last)
GET(mem_op, struct an_memory, v->s = r->op == UINT32_MAX ? "" : an_name(a, r->op))

#define MEM(f) F(struct an_memory, f)
static const struct an_column memory_cols[] = {
    {"rank", "rank", AN_RANK, MEM(rank)},
    {"device", "name", AN_TEXT, 30, 0, .get = mem_name},
    {"peak bytes", "peak_bytes", AN_COUNT, 14, 0, .get = mem_peak},
    {"at", "peak_ts_ns", AN_TS, 14, MEM(peak_ts)},
    {"start bytes", "start_bytes", AN_COUNT, 14, 0, .get = mem_start},
    {"end bytes", "end_bytes", AN_COUNT, 14, 0, .get = mem_last},
    {"op running at the peak", "peak_op", AN_TEXT, 0, AN_NAME, .get = mem_op},
};
ROWS(memory_rows, v->a->memory, v->a->nmemory)
const struct an_spec an_gpu_memory = {
    .key = "gpu_memory",
    .id = "gpu-memory",
    .title = "GPU memory: peak of each device's \"" AN_MEMORY_TRACK "\" track",
    .heading = "GPU memory",
    .note = "Each device's allocated memory (the level at trace start plus allocations minus frees), "
            "its peak, when it was first reached, and the innermost CPU op (else the kernel) running "
            "then.",
    COLS(memory_cols),
    .rows = memory_rows};

/* ---- steps and HTA's analyses (hta.c) --------------------------------------- */

GET(step_name, struct an_step, v->s = an_name(a, r->name))
GET(step_dev, struct an_step,
    v->s = r->pid == UINT32_MAX ? "" : an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(step_outlier, struct an_step, v->s = "outlier"; v->none = !r->outlier)
#define STEP(f)         F(struct an_step, f)
#define STEP_GPU(fn, f) GET(fn, struct an_step, v->i = r->f; v->none = r->pid == UINT32_MAX)
STEP_GPU(step_busy, busy)
STEP_GPU(step_compute, compute)
STEP_GPU(step_comm, comm)
STEP_GPU(step_memory, memory)
STEP_GPU(step_idle, idle)

static const struct an_column steps_cols[] = {
    {"rank", "rank", AN_RANK, STEP(rank)},
    {"step", "step", AN_COUNT, 6, STEP(number)},
    {"device", "device", AN_TEXT, 13, 0, .get = step_dev},
    {"start", "start_ns", AN_TS, 12, STEP(ts)},
    {"duration", "duration_ns", AN_NS, 11, STEP(dur)},
    {"GPU busy", "busy_ns", AN_NS, 11, 0, .get = step_busy},
    {"compute", "compute_ns", AN_NS, 11, 0, .get = step_compute},
    {"comm", "comm_ns", AN_NS, 10, 0, .get = step_comm},
    {"idle", "idle_ns", AN_NS, 11, 0, .get = step_idle},
    {"", "outlier", AN_TEXT, 0, 0, .get = step_outlier},
    {"step name", "name", AN_TEXT, 0, AN_LINE, .get = step_name},
    {"step memory time", "memory_ns", AN_NS, 0, AN_LINE, .get = step_memory},
};
ROWS(steps_rows, v->a->steps, v->a->nsteps)
static bool step_warn(const void *row)
{
	return ((const struct an_step *)row)->outlier;
}
const struct an_spec an_steps = {
    .key = "steps",
    .id = "steps",
    .title = "steps: GPU work of each device inside each step's window (compute, then comm, then memory)",
    .heading = "Steps",
    .note = "One row per step (ProfilerStep#N or --step-name ranges) and GPU device of its rank: the "
            "device's work inside the step's CPU window. Compute is the union of COMPUTATION kernels, "
            "comm the communication not under compute, memory the copies and memsets under neither; "
            "outlier: longer than the median step + 3 MAD (and 10% over the median).",
    COLS(steps_cols),
    .flags = AN_T_TOP | AN_T_RANKED,
    .rows = steps_rows,
    .warn = step_warn};

GET(bd_dev, struct an_breakdown, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
#define BD_PCT(fn, f) GET(fn, struct an_breakdown, v->d = an_pct(r->f, r->kernel_time))
BD_PCT(bd_idle_pct, idle)
BD_PCT(bd_compute_pct, compute)
BD_PCT(bd_non_compute_pct, non_compute)
GET(bd_overlap, struct an_breakdown, v->d = an_pct(r->both, r->comm_union); v->none = !r->comm_union)

#define BD(f) F(struct an_breakdown, f)
static const struct an_column breakdown_cols[] = {
    {"rank", "rank", AN_RANK, BD(rank)},
    {"device", "device", AN_TEXT, 13, 0, .get = bd_dev},
    {"kernel time", "kernel_time_ns", AN_NS, 12, BD(kernel_time)},
    {"idle", "idle_ns", AN_NS, 11, BD(idle)},
    {"idle %", "idle_pct", AN_PCT, 7, 0, .get = bd_idle_pct},
    {"compute", "compute_ns", AN_NS, 11, BD(compute)},
    {"compute %", "compute_pct", AN_PCT, 10, 0, .get = bd_compute_pct},
    {"non-compute", "non_compute_ns", AN_NS, 12, BD(non_compute)},
    {"non-compute %", "non_compute_pct", AN_PCT, 14, 0, .get = bd_non_compute_pct},
    {"communication", "comm_ns", AN_NS, 0, AN_LINE, BD(comm)},
    {"memory copies", "memory_ns", AN_NS, 0, AN_LINE, BD(memory)},
    {"other work", "other_ns", AN_NS, 0, AN_LINE, BD(other)},
    {"comm-compute overlap", "comm_comp_overlap_pct", AN_PCT, 0, AN_LINE, .get = bd_overlap},
    {"GPU events", "events", AN_COUNT, 0, AN_LINE, BD(events)},
};
ROWS(breakdown_rows, v->a->breakdown, v->a->nbreakdown)
const struct an_spec an_breakdown = {
    .key = "temporal_breakdown",
    .id = "temporal",
    .title = "temporal breakdown (HTA get_temporal_breakdown, get_comm_comp_overlap)",
    .heading = "Temporal breakdown",
    .note = "HTA's definitions: kernel time from the device's first GPU event start to its last end; idle "
            "the part no event covers; compute the union of COMPUTATION kernels; non-compute the rest "
            "(split into communication not under compute, memory under neither, and other); overlap: "
            "communication time under compute, as a % of communication time.",
    COLS(breakdown_cols),
    .flags = AN_T_RANKED,
    .rows = breakdown_rows};

GET(lc_dev, struct an_breakdown, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(lc_p50, struct an_breakdown, v->i = r->delay_p50; v->none = !r->launches)
GET(lc_p99, struct an_breakdown, v->i = r->delay_p99; v->none = !r->launches)
GET(lc_max, struct an_breakdown, v->i = r->delay_max; v->none = !r->launches)
static const struct an_column launch_cols[] = {
    {"rank", "rank", AN_RANK, BD(rank)},
    {"device", "device", AN_TEXT, 13, 0, .get = lc_dev},
    {"launches", "launches", AN_COUNT, 9, BD(launches)},
    {"short", "short_kernels", AN_COUNT, 7, BD(short_kernels)},
    {"slow calls", "runtime_outliers", AN_COUNT, 11, BD(runtime_outliers)},
    {"late", "delay_outliers", AN_COUNT, 8, BD(delay_outliers)},
    {"delay p50", "delay_p50_ns", AN_NS, 11, 0, .get = lc_p50},
    {"delay p99", "delay_p99_ns", AN_NS, 11, 0, .get = lc_p99},
    {"delay max", "delay_max_ns", AN_NS, 11, 0, .get = lc_max},
    {"launch calls", "cpu_ns", AN_NS, 0, AN_LINE, BD(cpu_total)},
    {"their GPU time", "gpu_ns", AN_NS, 0, AN_LINE, BD(gpu_total)},
};
static struct an_rows launch_rows(const struct an_view *v)
{
	size_t n = 0;
	for (size_t i = 0; i < v->a->nbreakdown; i++)
		n += v->a->breakdown[i].launches > 0;
	return (struct an_rows){v->a->breakdown, n ? v->a->nbreakdown : 0, sizeof(*v->a->breakdown)};
}
const struct an_spec an_launch_stats = {
    .key = "launch_stats",
    .id = "launch-stats",
    .title = "kernel launches (HTA get_cuda_kernel_launch_stats): delay = GPU start - end of the launch call",
    .heading = "Kernel launches",
    .note = "cudaLaunchKernel(ExC), cudaMemcpyAsync and cudaMemsetAsync calls and the GPU event with "
            "their correlation: short = the GPU event took less time than the call; slow calls = over 50 µs; "
            "late = delay over 100 µs (HTA's defaults).",
    COLS(launch_cols),
    .flags = AN_T_RANKED,
    .rows = launch_rows};

GET(kt_dev, struct an_ktype_time, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(kt_name, struct an_ktype_time, {
	size_t n = 0;
	v->buf[0] = 0;
	for (unsigned t = 0; t < 3; t++)
		if (r->mask & 1u << t)
			n += (size_t)snprintf(v->buf + n, sizeof(v->buf) - n, "%s%s",
			                      n ? " overlapping " : "", an_ktype_name(t));
	v->s = v->buf;
})
GET(kt_pct, struct an_ktype_time, v->d = r->pct)
#define KT(f) F(struct an_ktype_time, f)
static const struct an_column ktypes_cols[] = {
    {"rank", "rank", AN_RANK, KT(rank)},
    {"device", "device", AN_TEXT, 13, 0, .get = kt_dev},
    {"kernel type", "kernel_type", AN_TEXT, 48, 0, .get = kt_name},
    {"time", "time_ns", AN_NS, 11, KT(time)},
    {"%", "pct", AN_PCT, 7, 0, .get = kt_pct},
};
ROWS(ktypes_rows, v->a->ktypes, v->a->nktypes)
const struct an_spec an_ktypes = {.key = "kernel_type_time",
                                  .id = "kernel-types",
                                  .title =
                                      "time by kernel type (HTA get_gpu_kernel_breakdown, memory included)",
                                  .heading = "Kernel types",
                                  COLS(ktypes_cols),
                                  .flags = AN_T_RANKED,
                                  .rows = ktypes_rows};

GET(kn_dev, struct an_kname, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(kn_type, struct an_kname, v->s = an_ktype_name(r->type))
GET(kn_name, struct an_kname, v->s = an_name(a, r->name))
GET(kn_mean, struct an_kname, v->i = llround(r->mean))
GET(kn_std, struct an_kname, v->i = llround(r->std))
#define KN(f) F(struct an_kname, f)
static const struct an_column knames_cols[] = {
    {"rank", "rank", AN_RANK, KN(rank)},
    {"device", "device", AN_TEXT, 13, 0, .get = kn_dev},
    {"type", "kernel_type", AN_TEXT, 13, 0, .get = kn_type},
    {"name", "name", AN_TEXT, 18, AN_NAME, .get = kn_name},
    {"count", "count", AN_COUNT, 6, KN(count)},
    {"sum", "sum_ns", AN_NS, 11, KN(sum)},
    {"mean", "mean_ns", AN_NS, 11, 0, .get = kn_mean},
    {"min", "min_ns", AN_NS, 11, KN(min)},
    {"max", "max_ns", AN_NS, 11, KN(max)},
    {"stddev", "std_ns", AN_NS, 0, AN_LINE, .get = kn_std},
};
ROWS(knames_rows, v->a->knames, v->a->nknames)
const struct an_spec an_knames = {.key = "kernels_by_type",
                                  .id = "kernels-by-type",
                                  .title = "kernels by type and name (HTA get_gpu_kernel_breakdown)",
                                  .heading = "Kernels by type",
                                  COLS(knames_cols),
                                  .flags = AN_T_TOP | AN_T_RANKED,
                                  .rows = knames_rows};

GET(idle_dev, struct an_idle, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(idle_total, struct an_idle, v->i = an_sat_add(an_sat_add(r->host_wait, r->kernel_wait), r->other))
#define IDLE(f) F(struct an_idle, f)
static const struct an_column idle_cols[] = {
    {"rank", "rank", AN_RANK, IDLE(rank)},
    {"device", "device", AN_TEXT, 13, 0, .get = idle_dev},
    {"stream", "stream", AN_COUNT, 8, IDLE(stream)},
    {"host wait", "host_wait_ns", AN_NS, 11, IDLE(host_wait)},
    {"kernel wait", "kernel_wait_ns", AN_NS, 12, IDLE(kernel_wait)},
    {"other", "other_ns", AN_NS, 11, IDLE(other)},
    {"idle", "idle_ns", AN_NS, 11, 0, .get = idle_total},
};
ROWS(idle_rows, v->a->idle, v->a->nidle)
const struct an_spec an_idle_streams = {
    .key = "idle_time",
    .id = "idle-time",
    .title =
        "idle time per stream (HTA get_idle_time_breakdown): host wait, kernel wait (gap < 30 µs), other",
    .heading = "Idle time per stream",
    .note = "Gaps between consecutive kernels, copies and memsets of a stream: host wait when the next one's "
            "launch call started after the previous ended; else kernel wait when the gap is under 30 µs; "
            "else other.",
    COLS(idle_cols),
    .flags = AN_T_RANKED,
    .rows = idle_rows};

GET(q_dev, struct an_queue, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(q_mean, struct an_queue, v->d = r->mean)
GET(q_p50, struct an_queue, v->d = r->p50)
#define QL(f) F(struct an_queue, f)
static const struct an_column queue_cols[] = {
    {"rank", "rank", AN_RANK, QL(rank)},
    {"device", "device", AN_TEXT, 13, 0, .get = q_dev},
    {"stream", "stream", AN_COUNT, 8, QL(stream)},
    {"changes", "count", AN_COUNT, 8, QL(count)},
    {"mean", "mean", AN_REAL, 10, 0, .get = q_mean},
    {"p50", "p50", AN_REAL, 8, 0, .get = q_p50},
    {"max", "max", AN_COUNT, 8, QL(max)},
};
ROWS(queue_rows, v->a->queues, v->a->nqueues)
const struct an_spec an_queues = {
    .key = "queue_length",
    .id = "queue-length",
    .title = "queue length per stream (HTA get_queue_length_summary): launched, not yet started",
    .heading = "Queue length per stream",
    .note = "Operations launched on a stream and not yet started: +1 at each launch call, -1 when its GPU "
            "event starts; statistics over the values after each change.",
    COLS(queue_cols),
    .flags = AN_T_RANKED,
    .rows = queue_rows};

GET(bw_dev, struct an_membw, v->s = an_device_label(a, r->pid, v->buf, sizeof(v->buf)))
GET(bw_kind, struct an_membw, v->s = r->kind)
GET(bw_mean, struct an_membw, v->d = r->mean)
GET(bw_min, struct an_membw, v->d = r->min)
GET(bw_max, struct an_membw, v->d = r->max)
GET(bw_p50, struct an_membw, v->d = r->p50)
#define MBW(f) F(struct an_membw, f)
static const struct an_column membw_cols[] = {
    {"rank", "rank", AN_RANK, MBW(rank)},
    {"device", "device", AN_TEXT, 13, 0, .get = bw_dev},
    {"kind", "kind", AN_TEXT, 14, 0, .get = bw_kind},
    {"changes", "count", AN_COUNT, 8, MBW(count)},
    {"mean GB/s", "mean_gb_per_s", AN_RATE, 11, 0, .get = bw_mean},
    {"p50 GB/s", "p50_gb_per_s", AN_RATE, 11, 0, .get = bw_p50},
    {"min GB/s", "min_gb_per_s", AN_RATE, 11, 0, .get = bw_min},
    {"max GB/s", "max_gb_per_s", AN_RATE, 11, 0, .get = bw_max},
};
ROWS(membw_rows, v->a->membw, v->a->nmembw)
const struct an_spec an_membw = {
    .key = "memory_bandwidth",
    .id = "memory-bandwidth",
    .title = "memory bandwidth per copy kind (HTA get_memory_bw_summary): GB/s of the copies running at once",
    .heading = "Memory bandwidth",
    .note = "Per copy kind, the sum of the \"memory bandwidth (GB/s)\" of the copies running at once, "
            "after each copy's start and end, where it is above 0.",
    COLS(membw_cols),
    .flags = AN_T_RANKED,
    .rows = membw_rows};

GET(ks_op, struct an_kseq, v->s = an_name(a, r->op))
GET(ks_seq, struct an_kseq, v->rows = (struct an_rows){r->names, r->kernels, sizeof(*r->names)})
GET(ks_name, uint32_t, v->s = an_name(a, *r))
static const struct an_column kseq_names_cols[] = {{"name", "name", AN_TEXT, 0, 0, .get = ks_name}};
static const struct an_spec kseq_names = {.key = "sequence", .line = "{0}", COLS(kseq_names_cols)};
#define KS(f) F(struct an_kseq, f)
static const struct an_column kseq_cols[] = {
    {"rank", "rank", AN_RANK, KS(rank)},
    {"op", "op", AN_TEXT, 30, AN_NAME, .get = ks_op},
    {"kernels", "kernels", AN_COUNT, 8, KS(kernels)},
    {"count", "count", AN_COUNT, 7, KS(count)},
    {"GPU time", "gpu_ns", AN_NS, 11, KS(gpu)},
    {"CPU time", "cpu_ns", AN_NS, 11, KS(cpu)},
    {"sequence", "sequence", AN_ROWS, 0, AN_NAME | AN_LINE, .get = ks_seq, .sub = &kseq_names},
};
ROWS(kseq_rows, v->a->kseqs, v->a->nkseqs)
const struct an_spec an_kseqs = {
    .key = "kernel_sequences",
    .id = "kernel-sequences",
    .title = "frequent kernel sequences (HTA get_frequent_cuda_kernel_sequences): GPU events an op launched",
    .heading = "Frequent kernel sequences",
    .note =
        "Per op that launched 3 or more GPU events (the outermost cpu_ops, or the shallowest ops whose name "
        "holds --seq-op): its name and the GPU events its calls launched, in start order; ops with the "
        "same sequence counted, most frequent first. GPU time sums the events' durations, CPU time the "
        "ops'.",
    COLS(kseq_cols),
    .flags = AN_T_TOP | AN_T_RANKED,
    .rows = kseq_rows};

GET(cp_op_name, struct an_cp_op, v->s = an_name(a, r->name))
GET(cp_op_where, struct an_cp_op, v->s = r->gpu ? "GPU" : "CPU")
#define CPO(f) F(struct an_cp_op, f)
static const struct an_column cp_ops_cols[] = {
    {"name", "name", AN_TEXT, 0, 0, .get = cp_op_name},
    {"on", "on", AN_TEXT, 0, 0, .get = cp_op_where},
    {"time", "time_ns", AN_NS, CPO(time)},
};
static const struct an_spec cp_ops = {.key = "ops", .line = "{0} ({1}) {2}", COLS(cp_ops_cols)};

GET(cp_step, struct an_cpath, v->i = r->number)
GET(cp_name, struct an_cpath, v->s = an_name(a, r->name))
GET(cp_bound, struct an_cpath, v->s = r->gpu_bound ? "GPU" : "CPU")
GET(cp_ops_rows, struct an_cpath, v->rows = (struct an_rows){r->ops, r->nops, sizeof(*r->ops)})
#define CP(f) F(struct an_cpath, f)
static const struct an_column cpath_cols[] = {
    {"rank", "rank", AN_RANK, CP(rank)},
    {"step", "step", AN_COUNT, 6, 0, .get = cp_step},
    {"duration", "duration_ns", AN_NS, 11, CP(dur)},
    {"path", "length_ns", AN_NS, 11, CP(length)},
    {"bound", "bound", AN_TEXT, 5, 0, .get = cp_bound},
    {"CPU", "cpu_ns", AN_NS, 11, CP(cpu)},
    {"GPU compute", "gpu_compute_ns", AN_NS, 12, CP(compute)},
    {"GPU comm", "gpu_comm_ns", AN_NS, 11, CP(comm)},
    {"kernel gaps", "kernel_gap_ns", AN_NS, 13, CP(kk)},
    {"launch delay", "launch_delay_ns", AN_NS, 13, CP(launch)},
    {"step name", "name", AN_TEXT, 0, AN_LINE, .get = cp_name},
    {"on the path", "ops", AN_ROWS, 0, AN_NAME | AN_LINE, .get = cp_ops_rows, .sub = &cp_ops},
};
ROWS(cpath_rows, v->a->cpaths, v->a->ncpaths)
const struct an_spec an_cpaths = {
    .key = "critical_path",
    .id = "critical-path",
    .title = "critical path per step (HTA critical_path_analysis): CPU ops, GPU work and the waits between",
    .heading = "Critical path per step",
    .note = "The longest path through the step's CPU ops and runtime calls (in order per thread), the GPU "
            "events they launched (with the launch delay or the gap after the stream's previous event) and "
            "syncs. GPU-bound when GPU compute, communication and kernel gaps outweigh CPU time and launch "
            "delays. Under each step, the ops and GPU events with the most time on the path.",
    COLS(cpath_cols),
    .flags = AN_T_TOP | AN_T_RANKED,
    .rows = cpath_rows};

/* ---- instants, counters, accounting --------------------------------------- */

#define INSTANT(r) ((const struct an_instant *)an_table_item(&a->instants, (r)->id))
GET(instant_count, struct an_ref, v->i = (int64_t)INSTANT(r)->count)
GET(instant_cat, struct an_ref,
    snprintf(v->buf, sizeof(v->buf), "%.*s", (int)INSTANT(r)->cat_len, a->instants.keys[r->id]);
    v->s = v->buf)

static const struct an_column instants_cols[] = {
    {"name", "name", AN_TEXT, 44, AN_NAME, .get = ref_name},
    {"count", "count", AN_COUNT, 8, 0, .get = instant_count},
    {"category", "cat", AN_TEXT, 0, 0, .get = instant_cat},
};
ROWS(instants_rows, v->instants, v->a->instants.n)
const struct an_spec an_instants = {.key = "instants",
                                    .id = "instants",
                                    .title = "instants",
                                    .heading = "Instant events",
                                    COLS(instants_cols),
                                    .flags = AN_T_TOP,
                                    .rows = instants_rows};

#define SERIES(r) ((const struct an_series *)an_table_item(&a->counters, (r)->id))
GET(series_name, struct an_ref,
    snprintf(v->buf, sizeof(v->buf), "%.*s", (int)SERIES(r)->name_len, a->counters.keys[r->id]);
    v->s = v->buf)
GET(series_count, struct an_ref, v->i = (int64_t)SERIES(r)->count)
GET(series_min, struct an_ref, v->d = SERIES(r)->min)
GET(series_max, struct an_ref, v->d = SERIES(r)->max)
GET(series_last, struct an_ref, v->d = SERIES(r)->last)

static const struct an_column counters_cols[] = {
    {"name", "name", AN_TEXT, 44, AN_NAME, .get = series_name},
    {"arg", "key", AN_TEXT, 0, AN_PAREN, .get = ref_name},
    {"count", "count", AN_COUNT, 8, 0, .get = series_count},
    {"min", "min", AN_REAL, 13, 0, .get = series_min},
    {"max", "max", AN_REAL, 13, 0, .get = series_max},
    {"last", "last", AN_REAL, 13, 0, .get = series_last},
};
ROWS(counters_rows, v->counters, v->a->counters.n)
const struct an_spec an_counters = {.key = "counters",
                                    .id = "counters",
                                    .title = "counters",
                                    .heading = "Counters",
                                    COLS(counters_cols),
                                    .flags = AN_T_TOP,
                                    .rows = counters_rows};

/* JSON: {"strobe": {KEY: count, ...} or null, KEY: count, ...} (json.c). */
#define ACCT(f) F(struct an_acct, f)
static const struct an_column accounting_cols[] = {
    {"what", "what", AN_TEXT, 44, ACCT(what)},
    {"count", "count", AN_RAW, 8, ACCT(raw)},
};
ROWS(accounting_rows, v->acct, v->nacct)
static bool acct_warn(const void *row)
{
	return ((const struct an_acct *)row)->warn;
}
const struct an_spec an_accounting = {.key = "accounting",
                                      .id = "accounting",
                                      .title = "accounting",
                                      .heading = "Drops and warnings",
                                      COLS(accounting_cols),
                                      .flags = AN_T_MAP,
                                      .rows = accounting_rows,
                                      .warn = acct_warn};

const struct an_spec *const an_tables[] = {
    &an_categories, &an_names,        &an_devices,  &an_kernels,  &an_memcpy,       &an_latency,
    &an_gpu_memory, &an_cpu_ops,      &an_instants, &an_counters, &an_accounting,   &an_steps,
    &an_breakdown,  &an_launch_stats, &an_ktypes,   &an_knames,   &an_idle_streams, &an_queues,
    &an_membw,      &an_kseqs,        &an_cpaths};
const size_t an_ntables = sizeof(an_tables) / sizeof(an_tables[0]);

/* ---- the view --------------------------------------------------------------- */

/* The sort key of a table's items: field f of T. */
#define KEY(fn, T, f)                                                                                        \
	static int64_t fn(const void *item)                                                                  \
	{                                                                                                    \
		return (int64_t)((const T *)item)->f;                                                        \
	}
KEY(key_count, struct an_count, n)
KEY(key_instant, struct an_instant, count)
KEY(key_series, struct an_series, count)
/* Categories with events first (by wall time), then those whose events
 * all moved to a start/end category (an_split_async). */
static int64_t key_category(const void *item)
{
	const struct an_category *c = item;
	return c->events ? c->wall : -1;
}

/* A nonzero count in the "strobe" object that means something was lost;
 * sizes and versions do not stand out. */
static bool meta_loss(const struct an_meta_num *m)
{
	static const char *const words[] = {"drop",       "unfinished", "truncated", "unmatched",
	                                    "non_finite", "out_of",     "rejected"};
	for (size_t i = 0; strcmp(m->raw, "0") && i < sizeof(words) / sizeof(words[0]); i++)
		if (strstr(m->key, words[i]))
			return true;
	return false;
}

int an_view_init(struct an_view *v, const struct an_trace *a, const struct tr_stats *st, const char *file,
                 size_t top)
{
	*v = (struct an_view){.a = a, .st = st, .file = file, .top = top};
	v->phs = an_refs_of(&a->phs, UINT32_MAX, key_count);
	v->cats = an_refs_of(&a->cats, UINT32_MAX, key_count);
	v->xcats = an_refs_of(&a->xcats, UINT32_MAX, key_category);
	v->instants = an_refs_of(&a->instants, offsetof(struct an_instant, cat_len), key_instant);
	v->counters = an_refs_of(&a->counters, offsetof(struct an_series, name_len), key_series);
	v->names = calloc(a->xcats.n + 1, sizeof(*v->names));
	v->acct = calloc(a->nmeta + AN_LOSSES, sizeof(*v->acct));
	if (!v->phs || !v->cats || !v->xcats || !v->instants || !v->counters || !v->names || !v->acct)
		return -ENOMEM;
	for (size_t i = 0; i < a->xcats.n; i++)
		for (int self = 0; self < 2; self++) {
			size_t n = 0;
			const struct an_ref *r = an_names_of(a, v->xcats[i].id, self, &n);
			if (!r)
				return -ENOMEM;
			v->names[i][self] = (struct an_rows){r, n, sizeof(*r)};
		}
	for (size_t i = 0; i < a->xcats.n; i++)
		v->nxcats += ((const struct an_category *)an_table_item(&a->xcats, i))->events > 0;
	for (size_t i = 0; i < a->nmeta; i++)
		v->acct[v->nacct++] = (struct an_acct){.what = a->meta[i].key,
		                                       .key = a->meta[i].key,
		                                       .raw = a->meta[i].raw,
		                                       .meta = true,
		                                       .warn = meta_loss(&a->meta[i])};
	struct an_loss losses[AN_LOSSES];
	an_losses(a, st, losses);
	for (size_t i = 0; i < AN_LOSSES; i++) {
		struct an_acct *r = &v->acct[v->nacct++];
		*r = (struct an_acct){
		    .what = losses[i].what, .key = losses[i].key, .raw = r->num, .warn = losses[i].n > 0};
		snprintf(r->num, sizeof(r->num), "%" PRIu64, losses[i].n);
	}
	return 0;
}

void an_view_free(struct an_view *v)
{
	for (size_t i = 0; v->names && i < v->a->xcats.n; i++) {
		free((void *)v->names[i][0].base);
		free((void *)v->names[i][1].base);
	}
	free(v->names);
	free(v->phs);
	free(v->cats);
	free(v->xcats);
	free(v->instants);
	free(v->counters);
	free(v->acct);
}

bool an_self_same(const struct an_view *v, size_t i)
{
	const struct an_ref *x = v->names[i][0].base, *y = v->names[i][1].base;
	for (size_t k = 0; k < an_shown(v->names[i][0].n, v->top); k++)
		if (x[k].id != y[k].id)
			return false;
	return true;
}

/* ---- walking and showing rows ----------------------------------------------- */

bool an_cell_shown(const struct an_view *v, const struct an_spec *t, const struct an_column *c, bool text)
{
	if (c->flags & (AN_PAREN | AN_JSON) || (text && c->flags & AN_LINE))
		return false;
	if (c->unit != AN_RANK)
		return true;
	return text ? !(t->flags & AN_T_RANKED) : v->a->ranked;
}

struct an_iter an_iter(const struct an_view *v, const struct an_spec *t, struct an_rows rows)
{
	return (struct an_iter){.v = v, .t = t, .rows = rows, .prev = INT64_MIN};
}

const void *an_next(struct an_iter *it)
{
	const struct an_column *rc = it->t->cols;
	while (rc < it->t->cols + it->t->ncols && rc->unit != AN_RANK)
		rc++;
	size_t top = it->t->flags & AN_T_TOP ? it->v->top : 0;
	while (it->i < it->rows.n) {
		const void *row = (const unsigned char *)it->rows.base + it->i++ * it->rows.stride;
		struct an_value rank = {.i = -1};
		if (rc < it->t->cols + it->t->ncols)
			an_get(it->v->a, rc, row, &rank);
		if (!an_past_top(top, rank.i, &it->prev, &it->in_rank)) {
			it->shown++;
			it->rank = rank.i;
			return row;
		}
	}
	return NULL;
}

void an_get(const struct an_trace *a, const struct an_column *c, const void *row, struct an_value *v)
{
	const unsigned char *field = (const unsigned char *)row + c->off;
	uint32_t u32;
	v->none = false;
	v->s = "";
	if (c->get) {
		c->get(a, row, v);
	} else if (c->unit == AN_TEXT || c->unit == AN_RAW) {
		memcpy(&v->s, field, sizeof(v->s));
	} else if (c->size == sizeof(u32)) {
		memcpy(&u32, field, sizeof(u32));
		v->i = u32;
	} else {
		memcpy(&v->i, field, sizeof(v->i));
	}
}

const char *an_text(const struct an_trace *a, const struct an_column *c, const struct an_value *v, char *buf,
                    size_t len)
{
	char dur[40];
	switch (v->none ? AN_ROWS : c->unit) {
	case AN_TEXT:
		return *v->s ? v->s : "(none)";
	case AN_IDENT:
		return v->s + 1;
	case AN_RAW:
		return v->s;
	case AN_COUNT:
		snprintf(buf, len, "%" PRId64, v->i);
		return buf;
	case AN_NS:
		return an_fmt_dur(v->i, buf, len);
	case AN_TS:
		snprintf(buf, len, "+%s", an_fmt_dur(an_span(a->first_ts, v->i), dur, sizeof(dur)));
		return buf;
	case AN_RANK:
		return a->ranked ? an_rank_label(v->i, buf, len) : "all";
	case AN_ROWS:
		return "";
	}
	snprintf(buf, len, c->unit == AN_PCT ? "%.1f%%" : c->unit == AN_RATE ? "%.3f" : "%.6g", v->d);
	return buf;
}

const char *an_cell(const struct an_trace *a, const struct an_spec *t, size_t i, const void *row, char *buf,
                    size_t len)
{
	struct an_value val;
	char tmp[64];
	const struct an_column *c = &t->cols[i];
	bool paren = i + 1 < t->ncols && c[1].flags & AN_PAREN;
	if (!row) {
		snprintf(buf, len, "%s%s%s%s", c->head, paren ? " (" : "", paren ? c[1].head : "",
		         paren ? ")" : "");
		return buf;
	}
	an_get(a, c, row, &val);
	size_t n = (size_t)snprintf(buf, len, "%s", an_text(a, c, &val, tmp, sizeof(tmp)));
	if (paren && n < len) {
		an_get(a, c + 1, row, &val);
		if (*val.s)
			snprintf(buf + n, len - n, " (%s)", val.s);
	}
	return buf;
}

const char *an_phrase(const struct an_trace *a, const struct an_spec *t, const void *row, char *buf,
                      size_t len)
{
	size_t n = 0;
	for (const char *p = t->line; *p && n + 1 < len; p++) {
		char *end = (char *)p, tmp[64];
		unsigned long k = *p == '{' ? strtoul(p + 1, &end, 10) : t->ncols;
		struct an_value v;
		if (k >= t->ncols || *end != '}') {
			buf[n++] = *p;
			continue;
		}
		an_get(a, &t->cols[k], row, &v);
		n += (size_t)snprintf(buf + n, len - n, "%s", an_text(a, &t->cols[k], &v, tmp, sizeof(tmp)));
		n = n < len ? n : len - 1;
		p = end;
	}
	buf[n] = 0;
	return buf;
}

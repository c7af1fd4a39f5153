/* The AMD backend's records into strobe activities, libkineto's AMD layout:
 * HIP calls as cuda_runtime events on the calling thread, kernels `kernel`
 * with grid (blocks) and block arrays, copies gpu_memcpy named by
 * direction, GPU rows per device and stream, ac2g arrows, External id. */
#define LOG_TAG "rocprof"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/rocprof/rocprof_state.h"
#include "common/log.h"

#define MAX_STREAMS 4096
#define DIMS_CACHE  8

struct conv {
	struct strb_gpu g;
	struct strb_gpu_buffer *buffers;
	uint64_t sdk0, strobe0;
	double rate; /* strobe ns per SDK ns */
	/* (device, HSA queue) -> per-device stream index, by first appearance */
	uint64_t queues[MAX_STREAMS];
	int32_t queue_device[MAX_STREAMS];
	uint32_t queue_index[MAX_STREAMS];
	uint32_t next_index[STRB_GPU_MAX_DEVICES];
	size_t nqueues;
	/* The HIP call record of each g.calls[i], for its arguments. */
	const struct strb_rocprof_rec **call_rec;
	size_t call_rec_cap;
	struct {
		uint32_t d[3];
		const char *text;
	} dims[DIMS_CACHE];
	size_t dims_next;
	/* The process's kernel names, by id. */
	struct strb_rocprof_kernel *kernels;
	size_t nkernels, last_kernel;
	/* Open roctx ranges, all threads, innermost last. */
	const struct strb_rocprof_rec **open;
	size_t nopen, open_cap;
};

/* SDK ns to strobe's clock: the line through the start and stop brackets
 * (strobe's nominal scale need not tick at exactly 1 GHz), or the start
 * offset alone when there is no stop bracket. */
static uint64_t sdk_to_strobe(const struct conv *c, uint64_t t)
{
	if (!t || !c->sdk0)
		return 0;
	double d = (double)((int64_t)t - (int64_t)c->sdk0) * c->rate;
	int64_t v = (int64_t)c->strobe0 + (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
	return v > 0 ? (uint64_t)v : 0;
}

static uint32_t stream_of(struct conv *c, int32_t device, uint64_t queue)
{
	for (size_t i = 0; i < c->nqueues; i++)
		if (c->queues[i] == queue && c->queue_device[i] == device)
			return c->queue_index[i];
	if (c->nqueues == MAX_STREAMS || device < 0 || device >= STRB_GPU_MAX_DEVICES)
		return 0;
	c->queues[c->nqueues] = queue;
	c->queue_device[c->nqueues] = device;
	c->queue_index[c->nqueues] = c->next_index[device]++;
	return c->queue_index[c->nqueues++];
}

static const char *op_name(int32_t op)
{
	return op >= 0 && op < STRB_ROCPROF_MAX_OPS ? strb_rocprof.op_names[op] : NULL;
}

static bool name_in(const char *name, const char *const *list)
{
	for (; name && *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

/* The calls libkineto starts an ac2g arrow from. */
static const char *const flow_calls[] = {"hipLaunchKernel",
                                         "hipExtLaunchKernel",
                                         "hipLaunchCooperativeKernel",
                                         "hipHccModuleLaunchKernel",
                                         "hipModuleLaunchKernel",
                                         "hipExtModuleLaunchKernel",
                                         "hipMalloc",
                                         "hipFree",
                                         "hipMemcpy",
                                         "hipMemcpyAsync",
                                         "hipMemcpyWithStream",
                                         "hipGraphLaunch",
                                         NULL};
static const char *const launch_calls[] = {"hipLaunchKernel",
                                           "hipExtLaunchKernel",
                                           "hipLaunchCooperativeKernel",
                                           "hipHccModuleLaunchKernel",
                                           "hipModuleLaunchKernel",
                                           "hipExtModuleLaunchKernel",
                                           "hipLaunchKernel_spt",
                                           "hipLaunchCooperativeKernel_spt",
                                           NULL};
/* Noisy calls libkineto leaves out. */
static const char *const deny_calls_[] = {"hipGetDevice",
                                          "hipSetDevice",
                                          "hipGetLastError",
                                          "__hipPushCallConfiguration",
                                          "__hipPopCallConfiguration",
                                          "hipCtxSetCurrent",
                                          "hipGetDevicePropertiesR0600",
                                          "hipGetDeviceCount",
                                          "hipDeviceGetAttribute",
                                          "hipRuntimeGetVersion",
                                          "hipPeekAtLastError",
                                          "hipModuleGetFunction",
                                          NULL};

bool strb_rocprof_denied(const char *name)
{
	return name_in(name, deny_calls_);
}

static void walk(struct conv *c, void (*fn)(struct conv *, const struct strb_rocprof_rec *))
{
	for (struct strb_gpu_buffer *b = c->buffers; b && !c->g.rc; b = b->next) {
		for (size_t at = 0; at + sizeof(struct strb_rocprof_rec) <= b->valid && !c->g.rc;) {
			const struct strb_rocprof_rec *r = (const void *)(b->data + at);
			if (r->len < sizeof(*r) || at + r->len > b->valid) {
				c->g.st->gpu_bad_buffers++;
				break;
			}
			fn(c, r);
			at += r->len;
		}
	}
}

static void pass1(struct conv *c, const struct strb_rocprof_rec *r)
{
	c->g.st->gpu_records++;
	if (r->type != STRB_ROCPROF_HIP)
		return;
	struct strb_gpu_call call = {
	    .corr = r->corr,
	    .kind = STRB_ROCPROF_HIP,
	    .op = (uint32_t)r->op,
	    .tid = (pid_t)r->tid,
	    .start = strb_gpu_epoch(&c->g, r->start), /* strobe's clock, stamped in the callback */
	    .end = strb_gpu_epoch(&c->g, r->end),
	};
	size_t i = c->g.ncalls;
	strb_gpu_add_call(&c->g, &call);
	/* The strobe_correlation_push id the SDK carried: External id of
	 * the call and of its GPU work. */
	if (r->ext)
		strb_gpu_add_external(&c->g, r->corr, 0, r->ext);
	if (c->g.ncalls == i + 1 &&
	    strb_gpu_grow(&c->g, (void **)&c->call_rec, &c->call_rec_cap, i + 1, sizeof(*c->call_rec)))
		c->call_rec[i] = r;
}

static void mark_calls(struct conv *c)
{
	for (size_t i = 0; i < c->g.ncalls; i++) {
		struct strb_gpu_call *call = &c->g.calls[i];
		const char *name = op_name((int32_t)call->op);
		call->emitted = strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME) && name &&
		                !strb_rocprof_denied(name) && call->start >= c->g.w->start_ns &&
		                call->end <= c->g.w->stop_ns && call->end >= call->start;
		call->flow = name_in(name, flow_calls);
		call->launch = name_in(name, launch_calls);
	}
}

#define ARG_I(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_I64, .value.i64 = (int64_t)(v)})
#define ARG_S(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_STRING, .value.str = (v)})
#define ARG_J(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_JSON, .value.str = (v)})

/* "[x, y, z]", kept in the trace; the last few shapes are remembered
 * (kernels repeat them). */
static const char *dims(struct conv *c, const uint32_t *d)
{
	for (size_t i = 0; i < DIMS_CACHE; i++)
		if (c->dims[i].text && !memcmp(c->dims[i].d, d, sizeof(c->dims[i].d)))
			return c->dims[i].text;
	char buf[64];
	snprintf(buf, sizeof(buf), "[%u, %u, %u]", d[0], d[1], d[2]);
	size_t slot = c->dims_next++ % DIMS_CACHE;
	memcpy(c->dims[slot].d, d, sizeof(c->dims[slot].d));
	c->dims[slot].text = strb_gpu_keep(&c->g, buf);
	return c->dims[slot].text;
}

static const char *pointer(struct conv *c, uint64_t p)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)p);
	return strb_gpu_keep(&c->g, buf);
}

static void hip_call(struct conv *c, const struct strb_rocprof_rec *r)
{
	struct strb_gpu_ref s = strb_gpu_find(&c->g, r->corr);
	struct strb_gpu_call *call = s.call;
	if (!call || !call->emitted)
		return;
	struct strobe_arg args[7] = {ARG_I("cid", r->op), ARG_I("correlation", r->corr),
	                             ARG_S("stream", pointer(c, r->stream))};
	size_t n = 3;
	if (call->launch) {
		args[n++] = ARG_J("grid", dims(c, r->grid));
		args[n++] = ARG_J("block", dims(c, r->block));
		args[n++] = ARG_I("shared memory", r->lds);
	} else if (r->bytes) {
		args[n++] = ARG_I("bytes", r->bytes);
	}
	struct strobe_activity *a =
	    strb_gpu_emit(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME, op_name(r->op), call->start, call->end,
	                  c->g.t->pid, (int64_t)r->tid, args, n);
	if (!a)
		return;
	a->id = r->corr;
	a->linked_id = s.ext0 ? s.ext0 : call->op_id;
	if (call->flow) {
		a->flow_id = r->corr;
		a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
		a->flags |= STROBE_ACTIVITY_FLOW_START;
	}
}

/* The row of GPU work: its device's index of the launching call's HIP
 * stream (libkineto's rows), else of its HSA queue. */
static uint32_t row_of(struct conv *c, const struct strb_rocprof_rec *r)
{
	struct strb_gpu_ref s = strb_gpu_find(&c->g, r->corr);
	if (s.call && c->call_rec)
		return stream_of(c, r->device, c->call_rec[s.call - c->g.calls]->stream);
	return stream_of(c, r->device, r->queue | 1ull << 63);
}

static void roctx_range(struct conv *c, const struct strb_rocprof_rec *r, int64_t end, bool unfinished)
{
	int64_t start = strb_gpu_epoch(&c->g, r->start);
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_USER_ANNOTATION) || start < c->g.w->start_ns)
		return;
	const char *name = strb_gpu_keep(&c->g, (const char *)(r + 1));
	struct strobe_activity *a = strb_gpu_emit(&c->g, STROBE_ACTIVITY_USER_ANNOTATION, name, start, end,
	                                          c->g.t->pid, (int64_t)r->tid, NULL, 0);
	if (a && unfinished)
		a->flags |= STROBE_ACTIVITY_UNFINISHED;
}

static void roctx(struct conv *c, const struct strb_rocprof_rec *r)
{
	if (r->type == STRB_ROCPROF_PUSH || r->type == STRB_ROCPROF_START) {
		if (strb_gpu_grow(&c->g, (void **)&c->open, &c->open_cap, c->nopen + 1, sizeof(*c->open)))
			c->open[c->nopen++] = r;
		return;
	}
	/* A pop closes its thread's innermost push; a stop closes the start of
	 * its range id, from whichever thread, on the starting thread's row. */
	if (r->type == STRB_ROCPROF_POP || r->type == STRB_ROCPROF_STOP) {
		for (size_t i = c->nopen; i-- > 0;) {
			const struct strb_rocprof_rec *o = c->open[i];
			if (r->type == STRB_ROCPROF_POP
			        ? o->type != STRB_ROCPROF_PUSH || o->tid != r->tid
			        : o->type != STRB_ROCPROF_START || o->queue != r->queue)
				continue;
			roctx_range(c, c->open[i], strb_gpu_epoch(&c->g, r->start), false);
			memmove(&c->open[i], &c->open[i + 1], (c->nopen - i - 1) * sizeof(*c->open));
			c->nopen--;
			break;
		}
		return;
	}
	int64_t t = strb_gpu_epoch(&c->g, r->start);
	if (strb_gpu_selected(&c->g, STROBE_ACTIVITY_CPU_INSTANT_EVENT) && t >= c->g.w->start_ns &&
	    t <= c->g.w->stop_ns)
		strb_gpu_emit(&c->g, STROBE_ACTIVITY_CPU_INSTANT_EVENT,
		              strb_gpu_keep(&c->g, (const char *)(r + 1)), t, t, c->g.t->pid, (int64_t)r->tid,
		              NULL, 0);
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct strb_rocprof_kernel *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The mangled name of a kernel id, from the names kept since the process
 * started (a copy, sorted once per trace; the names are never freed). */
static const char *kernel_name(struct conv *c, uint64_t id)
{
	const char *raw = NULL;
	if (c->nkernels && c->kernels[c->last_kernel].id == id) {
		raw = c->kernels[c->last_kernel].name;
	} else {
		size_t lo = 0, hi = c->nkernels;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (c->kernels[mid].id <= id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && c->kernels[lo - 1].id == id) {
			c->last_kernel = lo - 1;
			raw = c->kernels[lo - 1].name;
		}
	}
	return strb_gpu_kernel_name(&c->g, raw);
}

static void kernel(struct conv *c, const struct strb_rocprof_rec *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL) || r->device < 0 ||
	    !strb_gpu_record_ok(&c->g, sdk_to_strobe(c, r->start), sdk_to_strobe(c, r->end), &s, &e))
		return;
	uint32_t stream = row_of(c, r);
	struct strobe_arg args[] = {
	    ARG_I("device", r->device),        ARG_I("stream", stream),
	    ARG_I("hsa_queue", r->queue),      ARG_I("correlation", r->corr),
	    ARG_S("kind", "Dispatch Kernel"),  ARG_J("grid", dims(c, r->grid)),
	    ARG_J("block", dims(c, r->block)), ARG_I("shared memory", r->lds),
	};
	struct strobe_activity *a =
	    strb_gpu_emit(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL, kernel_name(c, r->kernel_id), s, e,
	                  r->device, stream, args, sizeof(args) / sizeof(args[0]));
	if (!a)
		return;
	struct strb_gpu_call *call = strb_gpu_link(&c->g, a, r->corr, s, true);
	if (call)
		call->got_kernel = true;
	strb_gpu_note_row(&c->g, (uint32_t)r->device, stream, s, e);
}

static void copy(struct conv *c, const struct strb_rocprof_rec *r)
{
	static const char *const kinds[] = {"Unknown", "HtoH", "HtoD", "DtoH", "DtoD"};
	static const char *const names[] = {"Memcpy Unknown", "Memcpy HtoH (Host -> Host)",
	                                    "Memcpy HtoD (Host -> Device)", "Memcpy DtoH (Device -> Host)",
	                                    "Memcpy DtoD (Device -> Device)"};
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) || r->device < 0 ||
	    !strb_gpu_record_ok(&c->g, sdk_to_strobe(c, r->start), sdk_to_strobe(c, r->end), &s, &e))
		return;
	int k = r->op >= 0 && r->op <= ROCP_MEMORY_COPY_DEVICE_TO_DEVICE ? r->op : 0;
	uint32_t stream = row_of(c, r);
	struct strobe_arg args[] = {
	    ARG_I("device", r->device), ARG_I("stream", stream),  ARG_I("correlation", r->corr),
	    ARG_S("kind", kinds[k]),    ARG_I("bytes", r->bytes),
	};
	struct strobe_activity *a = strb_gpu_emit(&c->g, STROBE_ACTIVITY_GPU_MEMCPY, names[k], s, e,
	                                          r->device, stream, args, sizeof(args) / sizeof(args[0]));
	if (!a)
		return;
	strb_gpu_link(&c->g, a, r->corr, s, true);
	strb_gpu_note_row(&c->g, (uint32_t)r->device, stream, s, e);
}

static void pass2(struct conv *c, const struct strb_rocprof_rec *r)
{
	switch (r->type) {
	case STRB_ROCPROF_HIP:
		hip_call(c, r);
		break;
	case STRB_ROCPROF_KERNEL:
		kernel(c, r);
		break;
	case STRB_ROCPROF_COPY:
		copy(c, r);
		break;
	case STRB_ROCPROF_MARK:
	case STRB_ROCPROF_PUSH:
	case STRB_ROCPROF_POP:
	case STRB_ROCPROF_START:
	case STRB_ROCPROF_STOP:
		roctx(c, r);
		break;
	default:
		break;
	}
}

/* The trace's deviceProperties: {"id", "name"} per GPU agent in ordinal
 * order, id its logical_node_type_id (the pid of its rows), name the
 * agent's (its gfx target, such as "gfx90a"). libkineto takes more from
 * HIP; strobe reads the SDK's agent struct only through name, type and
 * logical_node_type_id, whose offsets every version shares. */
static void add_devices(struct conv *c)
{
	const struct strb_rocprof_state *s = &strb_rocprof;
	char text[STRB_ROCPROF_MAX_AGENTS * 112]; /* 63-byte names, 2-digit ids */
	size_t n = 0;
	for (int32_t id = 0; id < STRB_ROCPROF_MAX_AGENTS; id++)
		for (int i = 0; i < s->nagents; i++)
			if (s->agent_ordinal[i] == id)
				n += (size_t)snprintf(text + n, sizeof(text) - n,
				                      "%s{\"id\": %d, \"name\": \"%s\"}", n ? ", " : "",
				                      (int)id, s->agent_name[i]);
	if (!n)
		return;
	struct strobe_trace *t = c->g.t;
	size_t old = strlen(t->device_properties);
	char *joined = strb_arena_alloc(&t->arena, old + n + 3);
	if (!joined) {
		c->g.rc = -ENOMEM;
		return;
	}
	snprintf(joined, old + n + 3, "%s%s%s", t->device_properties, old ? ", " : "", text);
	t->device_properties = joined;
}

int strb_rocprof_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *b)
{
	struct conv *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buffers = b;
	const struct strb_rocprof_state *st = &strb_rocprof;
	c->sdk0 = st->sdk_at[0];
	c->strobe0 = st->strobe_at[0];
	c->rate = 1.0;
	if (st->sdk_at[1] > st->sdk_at[0] + 1000000 && st->strobe_at[1] > st->strobe_at[0])
		c->rate =
		    (double)(st->strobe_at[1] - st->strobe_at[0]) / (double)(st->sdk_at[1] - st->sdk_at[0]);
	strb_gpu_init(&c->g, t, w);
	c->g.pauses = &strb_rocprof.pauses;
	c->g.count_unmatched = strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME);
	strb_gpu_pool_account(&strb_rocprof.pool, &t->stats);
	pthread_mutex_lock(&strb_rocprof.lock);
	c->nkernels = strb_rocprof.nkernels;
	c->kernels = c->nkernels ? malloc(c->nkernels * sizeof(*c->kernels)) : NULL;
	if (c->kernels) {
		memcpy(c->kernels, strb_rocprof.kernels, c->nkernels * sizeof(*c->kernels));
	} else {
		c->nkernels = 0;
	}
	pthread_mutex_unlock(&strb_rocprof.lock);
	if (c->nkernels)
		qsort(c->kernels, c->nkernels, sizeof(*c->kernels), cmp_kernel);
	walk(c, pass1);
	strb_gpu_build_table(&c->g);
	strb_gpu_link_calls(&c->g);
	if (!c->g.rc)
		mark_calls(c);
	walk(c, pass2);
	/* roctx ranges still open at stop end there. */
	for (size_t i = 0; i < c->nopen && !c->g.rc; i++)
		roctx_range(c, c->open[i], w->stop_ns, true);
	if (!c->g.rc) {
		strb_gpu_emit_spans(&c->g);
		strb_gpu_count_launches(&c->g);
		strb_gpu_add_rows(&c->g);
		add_devices(c);
	}
	if (t->stats.gpu_dropped_records)
		LOGW("AMD GPU records lost: rocprofiler-sdk dropped %llu",
		     (unsigned long long)t->stats.gpu_dropped_records);
	int rc = c->g.rc;
	strb_gpu_free(&c->g);
	free(c->call_rec);
	free(c->open);
	free(c->kernels);
	free(c);
	return rc;
}

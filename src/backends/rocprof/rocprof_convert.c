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
#include "process/gpu_demangle.h"

#define MAX_STREAMS 4096

struct conv {
	struct strb_gpu g;
	struct strb_gpu_buffer *buffers;
	int64_t offset;
	/* (device, HSA queue) -> per-device stream index, by first appearance */
	uint64_t queues[MAX_STREAMS];
	int32_t queue_device[MAX_STREAMS];
	uint32_t queue_index[MAX_STREAMS];
	uint32_t next_index[STRB_GPU_MAX_DEVICES];
	size_t nqueues;
};

static uint64_t sdk_to_strobe(const struct conv *c, uint64_t t)
{
	return t ? (uint64_t)((int64_t)t + c->offset) : 0;
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
static const char *const deny_calls[] = {"hipGetDevice",
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

static void walk(struct conv *c, void (*fn)(struct conv *, const struct strb_rocprof_rec *))
{
	for (struct strb_gpu_buffer *b = c->buffers; b && !c->g.rc; b = b->next) {
		size_t n = b->valid / sizeof(struct strb_rocprof_rec);
		const struct strb_rocprof_rec *r = (const void *)b->data;
		for (size_t i = 0; i < n && !c->g.rc; i++)
			fn(c, &r[i]);
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
	    .start = strb_gpu_epoch(&c->g, sdk_to_strobe(c, r->start)),
	    .end = strb_gpu_epoch(&c->g, sdk_to_strobe(c, r->end)),
	};
	strb_gpu_add_call(&c->g, &call);
}

static void mark_calls(struct conv *c)
{
	for (size_t i = 0; i < c->g.ncalls; i++) {
		struct strb_gpu_call *call = &c->g.calls[i];
		const char *name = op_name((int32_t)call->op);
		call->emitted = strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME) && name &&
		                !name_in(name, deny_calls) && call->start >= c->g.w->start_ns &&
		                call->end <= c->g.w->stop_ns && call->end >= call->start;
		call->flow = name_in(name, flow_calls);
		call->launch = name_in(name, launch_calls);
	}
}

#define ARG_I(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_I64, .value.i64 = (int64_t)(v)})
#define ARG_S(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_STRING, .value.str = (v)})
#define ARG_J(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_JSON, .value.str = (v)})

static void hip_call(struct conv *c, const struct strb_rocprof_rec *r)
{
	struct strb_gpu_ref s = strb_gpu_find(&c->g, r->corr);
	struct strb_gpu_call *call = s.call;
	if (!call || !call->emitted)
		return;
	struct strobe_arg args[] = {ARG_I("cid", r->op), ARG_I("correlation", r->corr)};
	struct strobe_activity *a =
	    strb_gpu_emit(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME, op_name(r->op), call->start, call->end,
	                  c->g.t->pid, (int64_t)r->tid, args, 2);
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

static const char *kernel_name(struct conv *c, uint64_t id)
{
	const struct strb_rocprof_state *s = &strb_rocprof;
	const char *raw = NULL;
	for (size_t i = 0; i < s->nkernels && !raw; i++)
		if (s->kernels[i].id == id)
			raw = s->kernels[i].name;
	return strb_gpu_kernel_name(&c->g, raw, strb_gpu_demangle);
}

static const char *dims(struct conv *c, const uint32_t *d)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "[%u, %u, %u]", d[0], d[1], d[2]);
	return strb_gpu_keep(&c->g, buf);
}

static void kernel(struct conv *c, const struct strb_rocprof_rec *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL) || r->device < 0 ||
	    !strb_gpu_record_ok(&c->g, sdk_to_strobe(c, r->start), sdk_to_strobe(c, r->end), &s, &e))
		return;
	uint32_t stream = stream_of(c, r->device, r->queue);
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
	uint32_t stream = 0;
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
	default:
		break;
	}
}

int strb_rocprof_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *b)
{
	struct conv *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buffers = b;
	c->offset = strb_rocprof.offset;
	strb_gpu_init(&c->g, t, w);
	c->g.pauses = &strb_rocprof.pauses;
	c->g.count_unmatched = strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME);
	strb_gpu_pool_account(&strb_rocprof.pool, &t->stats);
	pthread_mutex_lock(&strb_rocprof.lock);
	walk(c, pass1);
	strb_gpu_build_table(&c->g);
	strb_gpu_link_calls(&c->g);
	if (!c->g.rc)
		mark_calls(c);
	walk(c, pass2);
	pthread_mutex_unlock(&strb_rocprof.lock);
	if (!c->g.rc) {
		strb_gpu_emit_spans(&c->g);
		strb_gpu_count_launches(&c->g);
		strb_gpu_add_rows(&c->g);
	}
	if (t->stats.gpu_dropped_records)
		LOGW("AMD GPU records lost: rocprofiler-sdk dropped %llu",
		     (unsigned long long)t->stats.gpu_dropped_records);
	int rc = c->g.rc;
	strb_gpu_free(&c->g);
	free(c);
	return rc;
}

/* CUPTI records -> strobe activities. Two passes over the buffers, as
 * records arrive out of order within and across buffers: the first builds
 * the correlation tables, the second writes activities. Kernels, copies,
 * memsets and calls keep a compact record of their args with the trace,
 * which renders the args from it when written (cupti_args.c); each buffer,
 * once walked, becomes arena memory for the trace.
 * GPU work is linked to strobe's ops and ranges through the call that
 * launched it: the innermost op (and range) open on that thread when the
 * call started. What is not CUPTI's (the correlation table, linking, rows,
 * GPU spans, accounting) is the shared GPU layer, process/gpu.c: this file
 * only decodes CUPTI records into it. */
#define LOG_TAG "cupti"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti_args.h"
#include "backends/cupti/cupti_cuda.h"
#include "backends/cupti/cupti_memory.h"
#include "backends/cupti/cupti_names.h"
#include "backends/cupti/cupti_state.h"
#include "common/log.h"
#include "core/clock.h"
#include "process/gpu.h"
#include "process/process.h"

#define STREAM_SYNC_ROW_OFFSET  1000000 /* libkineto's virtual rows for "Stream Sync" */
#define OVERHEAD_PID            (-1)
#define OVERHEAD_SORT           1048576
#define MAX_DEVICES             STRB_CUPTI_MAX_DEVICES
#define STRB_CUPTI_VERSION_13_1 130100u /* kernel records carry the launch priority */

/* CUDA 13.1's kernel record (CUpti_ActivityKernel11) appends the launch
 * priority to Kernel10; headers before 13.1 do not declare it. */
#if CUPTI_API_VERSION >= 130100
#define KERNEL_PRIORITY_OFFSET offsetof(CUpti_ActivityKernel11, priority)
#else
#define KERNEL_PRIORITY_OFFSET 216
#endif

#define SHAPE_CACHE 8

struct cuda_event {
	uint32_t ctx, event, corr, stream;
};

struct conv {
	struct strb_gpu g; /* the shared GPU layer: calls, correlation, rows, spans */
	const struct strb_cupti_lib *lib;
	struct strb_gpu_buffer *buffers;

	/* Names of runtime and driver calls, per cbid, made once. */
	const char *api_names[2][STRB_CUPTI_API_CBIDS];

	uint32_t ctx_device[2 * MAX_DEVICES][2]; /* (context, device) pairs */
	int nctx;
	struct cuda_event *events;
	size_t nevents, events_cap;
	/* Device limits and launch shapes, kept for rendering args. */
	struct strb_cupti_args *x;
	struct strb_cuda_device dev[MAX_DEVICES]; /* from DEVICE records, then the driver */
	/* The last kernel shape looked up on a few streams (by the stream's
	 * low bits), as each stream's kernels repeat. */
	struct strb_cupti_shape last_shape[SHAPE_CACHE];
	uint32_t last_index[SHAPE_CACHE];

	/* Sync rows named so far. */
	uint64_t *sync_rows;
	size_t nsync_rows, sync_rows_cap;

	/* Deferred "Stream Wait Event" records (emitted only for busy streams),
	 * copied: their buffers are reused as trace memory before the end. */
	CUpti_ActivitySynchronization *waits;
	size_t nwaits, waits_cap;

	struct strb_cupti_mem mem; /* allocations, frees, pool events */
};

#define PUSH(c, arr, count, cap, value)                                                                      \
	do {                                                                                                 \
		if (strb_gpu_grow(&(c)->g, (void **)&(c)->arr, &(c)->cap, (c)->count + 1,                    \
		                  sizeof(*(c)->arr)))                                                        \
			(c)->arr[(c)->count++] = (value);                                                    \
	} while (0)

static void note_context(struct conv *c, uint32_t ctx, uint32_t device)
{
	for (int i = 0; i < c->nctx; i++)
		if (c->ctx_device[i][0] == ctx)
			return;
	if (c->nctx < 2 * MAX_DEVICES) {
		c->ctx_device[c->nctx][0] = ctx;
		c->ctx_device[c->nctx][1] = device;
		c->nctx++;
	}
}

static uint32_t context_device(const struct conv *c, uint32_t ctx)
{
	for (int i = 0; i < c->nctx; i++)
		if (c->ctx_device[i][0] == ctx)
			return c->ctx_device[i][1];
	return 0;
}

/* Walks every record of every buffer. The first pass counts buffers whose
 * walk stopped on an invalid record; the last hands each buffer, once
 * walked, to the trace's arena: what the trace keeps of its records was
 * copied out into compact records. */
static void walk(struct conv *c, void (*fn)(struct conv *, const CUpti_Activity *), bool last)
{
	for (struct strb_gpu_buffer *b = c->buffers; b && !c->g.rc; b = b->next) {
		CUpti_Activity *rec = NULL;
		CUptiResult r;
		while ((r = c->lib->cuptiActivityGetNextRecord(b->data, b->valid, &rec)) == CUPTI_SUCCESS &&
		       !c->g.rc)
			fn(c, rec);
		/* An invalid kind ends the walk of that buffer: count it once. */
		if (!c->g.rc && r != CUPTI_ERROR_MAX_LIMIT_REACHED && !last)
			c->g.st->gpu_bad_buffers++;
		if (!last)
			continue;
		strb_arena_give(&c->g.t->arena, b->data, b->size);
		b->data = NULL;
	}
}

/* ---- pass 1: tables --------------------------------------------------------- */

static void add_device(struct conv *c, const CUpti_ActivityDevice5 *d);

static void pass1(struct conv *c, const CUpti_Activity *rec)
{
	c->g.st->gpu_records++;
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
		const CUpti_ActivityExternalCorrelation *e = (const void *)rec;
		/* Strobe pushes CUSTOM0 (ops) and CUSTOM1 (ranges). */
		if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 ||
		    e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1)
			strb_gpu_add_external(&c->g, e->correlationId,
			                      e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
			                      e->externalId);
		else
			c->g.st->gpu_invalid_external_correlations++;
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *a = (const void *)rec;
		struct strb_gpu_call call = {
		    .corr = a->correlationId,
		    .kind = a->kind,
		    .op = a->cbid,
		    .tid = (pid_t)a->threadId,
		    .start = strb_gpu_epoch(&c->g, a->start),
		    .end = strb_gpu_epoch(&c->g, a->end),
		};
		strb_gpu_add_call(&c->g, &call);
		break;
	}
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL: {
		const CUpti_ActivityKernel9 *k = (const void *)rec;
		note_context(c, k->contextId, k->deviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy5 *m = (const void *)rec;
		note_context(c, m->contextId, m->deviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = (const void *)rec;
		note_context(c, m->srcContextId, m->srcDeviceId);
		note_context(c, m->dstContextId, m->dstDeviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)rec;
		note_context(c, m->contextId, m->deviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMORY2: {
		const CUpti_ActivityMemory4 *m = (const void *)rec;
		note_context(c, m->contextId, m->deviceId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {
		const CUpti_ActivityCudaEvent *e = (const void *)rec;
		struct cuda_event ev = {e->contextId, e->eventId, e->correlationId, e->streamId};
		PUSH(c, events, nevents, events_cap, ev);
		break;
	}
	case CUPTI_ACTIVITY_KIND_DEVICE:
		add_device(c, (const void *)rec);
		break;
	default:
		break;
	}
}

/* ---- pass 2: activities ------------------------------------------------------ */

/* Args built here are copied into the trace's arena as they are: keys are
 * static strings, string values already live in the trace (keep). */
static struct strobe_activity *emit(struct conv *c, enum strobe_activity_type type, const char *name,
                                    int64_t start, int64_t end, int64_t device, int64_t resource,
                                    const struct strb_cupti_argv *g)
{
	return strb_gpu_emit(&c->g, type, name, start, end, device, resource, g ? g->s->args : NULL,
	                     g ? g->n : 0);
}

/* The activity just emitted renders its args from rec, a compact record
 * that lives as long as the trace. */
static void render_from(struct conv *c, const void *rec)
{
	if (!rec || strb_trace_render_args(c->g.t, rec))
		c->g.rc = -ENOMEM;
}

static const struct strb_cupti_kernel *kernel_record(struct conv *c, const CUpti_ActivityKernel9 *k)
{
	struct strb_cupti_shape s;
	memset(&s, 0, sizeof(s));
	s.device = k->deviceId;
	s.context = k->contextId;
	s.stream = k->streamId;
	s.graph_id = k->graphId;
	s.grid[0] = k->gridX;
	s.grid[1] = k->gridY;
	s.grid[2] = k->gridZ;
	s.block[0] = k->blockX;
	s.block[1] = k->blockY;
	s.block[2] = k->blockZ;
	s.static_smem = k->staticSharedMemory;
	s.dynamic_smem = k->dynamicSharedMemory;
	if (c->x->has_priority)
		memcpy(&s.priority, (const unsigned char *)k + KERNEL_PRIORITY_OFFSET, sizeof(s.priority));
	s.regs = k->registersPerThread;
	s.channel = k->channelID;
	s.channel_type = (uint32_t)k->channelType;
	s.graph_node = k->graphNodeId;
	unsigned slot = s.stream % SHAPE_CACHE;
	uint32_t shape = c->last_index[slot];
	if (shape == UINT32_MAX || !strb_cupti_shape_eq(&s, &c->last_shape[slot])) {
		shape = strb_cupti_shape_index(c->x, &s);
		if (shape == UINT32_MAX)
			return NULL;
		c->last_shape[slot] = s;
		c->last_index[slot] = shape;
		/* The shape's occupancy, for rendering. */
		if (s.device < MAX_DEVICES && c->x->sm_count[s.device])
			strb_cupti_occupancy(c->x, c->g.t, &s);
	}
	struct strb_cupti_kernel *r = strb_cupti_kernel_slot(c->x);
	if (!r)
		return NULL;
	*r = (struct strb_cupti_kernel){STRB_CUPTI_REC_KERNEL, shape, k->queued};
	return r;
}

static void kernel(struct conv *c, const CUpti_ActivityKernel9 *k)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL) ||
	    !strb_gpu_record_ok(&c->g, k->start, k->end, &s, &e))
		return;
	const char *name = strb_gpu_kernel_name(&c->g, k->name);
	if (!name)
		return;
	struct strobe_activity *a =
	    emit(c, STROBE_ACTIVITY_CONCURRENT_KERNEL, name, s, e, k->deviceId, k->streamId, NULL);
	if (!a)
		return;
	render_from(c, kernel_record(c, k));
	struct strb_gpu_call *call = strb_gpu_link(&c->g, a, k->correlationId, s, true);
	if (call)
		call->got_kernel = true;
	strb_gpu_note_row(&c->g, k->deviceId, k->streamId, s, e);
}

static const char *copy_name(char *buf, size_t len, uint8_t copy, uint8_t src, uint8_t dst)
{
	snprintf(buf, len, "Memcpy %s (%s -> %s)", strb_cupti_memcpy_kind(copy), strb_cupti_memory_kind(src),
	         strb_cupti_memory_kind(dst));
	return buf;
}

/* Writes a copy or fill on its device/stream row, its args rendered from a
 * copy of f, and links it to its launch. */
static void emit_xfer(struct conv *c, enum strobe_activity_type type, const char *name, int64_t s, int64_t e,
                      const struct strb_cupti_xfer *f)
{
	struct strobe_activity *a =
	    emit(c, type, strb_gpu_keep(&c->g, name), s, e, f->device, f->stream, NULL);
	if (!a)
		return;
	struct strb_cupti_xfer *rec = strb_arena_alloc(&c->g.t->arena, sizeof(*rec));
	if (rec)
		*rec = *f;
	render_from(c, rec);
	strb_gpu_link(&c->g, a, f->corr, s, true);
	strb_gpu_note_row(&c->g, f->device, f->stream, s, e);
}

/* The fields copy and fill records name alike. */
#define XFER(rec_tag, m)                                                                                     \
	((struct strb_cupti_xfer){.tag = (rec_tag),                                                          \
	                          .device = (m)->deviceId,                                                   \
	                          .context = (m)->contextId,                                                 \
	                          .stream = (m)->streamId,                                                   \
	                          .corr = (m)->correlationId,                                                \
	                          .graph_id = (m)->graphId,                                                  \
	                          .channel = (m)->channelID,                                                 \
	                          .channel_type = (uint32_t)(m)->channelType,                                \
	                          .bytes = (m)->bytes,                                                       \
	                          .graph_node = (m)->graphNodeId})

static void memcpy1(struct conv *c, const CUpti_ActivityMemcpy5 *m)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) ||
	    !strb_gpu_record_ok(&c->g, m->start, m->end, &s, &e))
		return;
	char nb[96];
	const char *name = copy_name(nb, sizeof(nb), m->copyKind, m->srcKind, m->dstKind);
	struct strb_cupti_xfer f = XFER(STRB_CUPTI_REC_MEMCPY, m);
	emit_xfer(c, STROBE_ACTIVITY_GPU_MEMCPY, name, s, e, &f);
}

static void memcpy2(struct conv *c, const CUpti_ActivityMemcpyPtoP4 *m)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) ||
	    !strb_gpu_record_ok(&c->g, m->start, m->end, &s, &e))
		return;
	char nb[96];
	const char *name = copy_name(nb, sizeof(nb), m->copyKind, m->srcKind, m->dstKind);
	struct strb_cupti_xfer f = XFER(STRB_CUPTI_REC_MEMCPY2, m);
	f.src_device = m->srcDeviceId;
	f.dst_device = m->dstDeviceId;
	f.src_context = m->srcContextId;
	f.dst_context = m->dstContextId;
	emit_xfer(c, STROBE_ACTIVITY_GPU_MEMCPY, name, s, e, &f);
}

static void memset1(struct conv *c, const CUpti_ActivityMemset4 *m)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMSET) ||
	    !strb_gpu_record_ok(&c->g, m->start, m->end, &s, &e))
		return;
	char nb[64];
	snprintf(nb, sizeof(nb), "Memset (%s)", strb_cupti_memory_kind(m->memoryKind));
	struct strb_cupti_xfer f = XFER(STRB_CUPTI_REC_MEMSET, m);
	emit_xfer(c, STROBE_ACTIVITY_GPU_MEMSET, nb, s, e, &f);
}

/* The shared record of a call's args: its cbid (the correlation id is the
 * activity's id). */
static const struct strb_cupti_api *api_record(struct conv *c, bool runtime, uint32_t cbid)
{
	struct strb_cupti_api *r = cbid < STRB_CUPTI_API_CBIDS ? &c->x->api[runtime][cbid]
	                                                       : strb_arena_alloc(&c->g.t->arena, sizeof(*r));
	if (r)
		*r = (struct strb_cupti_api){STRB_CUPTI_REC_API, cbid};
	return r;
}

static const char *api_name(struct conv *c, bool runtime, uint32_t cbid)
{
	const char **slot_name = cbid < STRB_CUPTI_API_CBIDS ? &c->api_names[runtime][cbid] : NULL;
	if (slot_name && *slot_name)
		return *slot_name;
	char nb[128];
	strb_cupti_api_name(c->lib, runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid,
	                    nb, sizeof(nb));
	const char *name = strb_trace_intern(c->g.t, nb, strlen(nb));
	if (!name)
		c->g.rc = -ENOMEM;
	else if (slot_name)
		*slot_name = name;
	return name;
}

static void api(struct conv *c, const CUpti_ActivityAPI *r)
{
	bool runtime = r->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
	enum strobe_activity_type type = runtime ? STROBE_ACTIVITY_CUDA_RUNTIME : STROBE_ACTIVITY_CUDA_DRIVER;
	struct strb_gpu_ref s = strb_gpu_find(&c->g, r->correlationId);
	struct strb_gpu_call *call = s.call;
	if (!strb_gpu_selected(&c->g, type) || !call)
		return;
	if (runtime && strb_cupti_runtime_blocklisted(r->cbid)) {
		c->g.st->gpu_blocklisted++;
		return;
	}
	if (!runtime && !strb_cupti_driver_kept(r->cbid))
		return;
	if (call->start < c->g.w->start_ns || call->end > c->g.w->stop_ns || call->end < call->start) {
		c->g.st->gpu_out_of_window++;
		return;
	}
	const char *name = api_name(c, runtime, r->cbid);
	struct strobe_activity *a =
	    name ? emit(c, type, name, call->start, call->end, c->g.t->pid, r->threadId, NULL) : NULL;
	if (!a)
		return;
	render_from(c, api_record(c, runtime, r->cbid));
	a->id = r->correlationId;
	a->linked_id = s.ext0 ? s.ext0 : call->op_id;
	if (strb_cupti_flow_start(r->kind, r->cbid)) {
		a->flow_id = r->correlationId;
		a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
		a->flags |= STROBE_ACTIVITY_FLOW_START;
	}
}

static int cmp_event(const void *a, const void *b)
{
	const struct cuda_event *x = a, *y = b;
	if (x->ctx != y->ctx)
		return x->ctx < y->ctx ? -1 : 1;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	return (x->corr > y->corr) - (x->corr < y->corr);
}

/* The cudaEventRecord a sync waited on: the newest record of the same
 * event issued before the sync (lower correlation id). */
static const struct cuda_event *waited_event(const struct conv *c, uint32_t ctx, uint32_t event,
                                             uint32_t corr)
{
	size_t lo = 0, hi = c->nevents;
	struct cuda_event key = {ctx, event, corr, 0};
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cmp_event(&c->events[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct cuda_event *e = &c->events[lo - 1];
	return e->ctx == ctx && e->event == event ? e : NULL;
}

static void sync_record(struct conv *c, const CUpti_ActivitySynchronization *r, bool deferred)
{
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_SYNC))
		return;
	bool wait = r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
	if (wait && !deferred) {
		/* Only for streams that did work in the window, once all is known. */
		if (strb_cupti.show_wait_events)
			PUSH(c, waits, nwaits, waits_cap, *r);
		return;
	}
	int64_t s, e;
	if (!strb_gpu_record_ok(&c->g, r->start, r->end, &s, &e))
		return;
	uint32_t device = context_device(c, r->contextId);
	int64_t stream = r->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? -1 : (int64_t)r->streamId;
	const char *kind = strb_cupti_sync_kind(r->type);
	struct strb_arg_scratch scratch;
	struct strb_cupti_argv g = {&scratch, 0, 0};
	strb_cupti_arg_s(&g, "cuda_sync_kind", strb_gpu_keep(&c->g, kind));
	if (r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE || wait) {
		const struct cuda_event *ev = waited_event(c, r->contextId, r->cudaEventId, r->correlationId);
		strb_cupti_arg_i(&g, "wait_on_stream", ev ? (int64_t)ev->stream : -1);
		strb_cupti_arg_i(&g, "wait_on_cuda_event_record_corr_id", ev ? (int64_t)ev->corr : -1);
		strb_cupti_arg_u(&g, "wait_on_cuda_event_id", r->cudaEventId);
	}
	strb_cupti_arg_i(&g, "stream", stream);
	strb_cupti_arg_u(&g, "correlation", r->correlationId);
	strb_cupti_arg_u(&g, "device", device);
	strb_cupti_arg_u(&g, "context", r->contextId);
	int64_t row = stream;
	if (r->type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE && stream >= 0) {
		/* Its own row, so it does not hide the kernels it waits for. */
		row = stream + STREAM_SYNC_ROW_OFFSET;
		uint64_t key = (uint64_t)device << 32 | (uint32_t)stream;
		bool named = false;
		for (size_t i = 0; i < c->nsync_rows && !named; i++)
			named = c->sync_rows[i] == key;
		if (!named) {
			PUSH(c, sync_rows, nsync_rows, sync_rows_cap, key);
			char title[64];
			snprintf(title, sizeof(title), "stream %lld (sync)", (long long)stream);
			struct strobe_resource res = {
			    sizeof(res), STROBE_RESOURCE_ROW, device, row, title, NULL, stream};
			if (strb_trace_add_resource(c->g.t, &res))
				c->g.rc = -ENOMEM;
		}
	}
	struct strobe_activity *a =
	    emit(c, STROBE_ACTIVITY_CUDA_SYNC, strb_gpu_keep(&c->g, kind), s, e, device, row, &g);
	if (a)
		strb_gpu_link(&c->g, a, r->correlationId, s, false);
}

static void cuda_event(struct conv *c, const CUpti_ActivityCudaEvent2 *r)
{
	/* Device timestamps exist only in CUDA 13's record. */
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_EVENT) ||
	    c->lib->version < STRB_CUPTI_VERSION_13 || !r->deviceTimestamp)
		return;
	int64_t s, e;
	if (!strb_gpu_record_ok(&c->g, r->deviceTimestamp, r->deviceTimestamp + 1, &s, &e))
		return;
	e = s + 1; /* libkineto's fixed 1 ns, whatever the conversion rounds to */
	struct strb_arg_scratch scratch;
	struct strb_cupti_argv g = {&scratch, 0, 0};
	strb_cupti_arg_u(&g, "event_id", r->eventId);
	strb_cupti_arg_u(&g, "stream", r->streamId);
	strb_cupti_arg_u(&g, "correlation", r->correlationId);
	strb_cupti_arg_u(&g, "device", r->deviceId);
	strb_cupti_arg_u(&g, "context", r->contextId);
	struct strobe_activity *a = emit(c, STROBE_ACTIVITY_CUDA_EVENT, strb_gpu_keep(&c->g, "cudaEvent"), s,
	                                 e, r->deviceId, r->streamId, &g);
	if (a)
		a->id = r->correlationId;
}

static void overhead(struct conv *c, const CUpti_ActivityOverhead *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_OVERHEAD) ||
	    !strb_gpu_record_ok(&c->g, r->start, r->end, &s, &e))
		return;
	const char *name = strb_cupti_overhead_kind(r->overheadKind);
	emit(c, STROBE_ACTIVITY_OVERHEAD, strb_gpu_keep(&c->g, name), s, e, OVERHEAD_PID, 0, NULL);
}

static void pass2(struct conv *c, const CUpti_Activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		kernel(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		memcpy1(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		memcpy2(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		memset1(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		api(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		sync_record(c, (const void *)rec, false);
		break;
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
		cuda_event(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		overhead(c, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		strb_cupti_mem_add(&c->mem, &c->g, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY_POOL:
		strb_cupti_mem_add_pool(&c->mem, &c->g, (const void *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
	case CUPTI_ACTIVITY_KIND_DEVICE:
		break;
	default:
		c->g.st->gpu_unexpected_records++;
		break;
	}
}

/* ---- device properties, rows --------------------------------------------------- */

/* A DEVICE record: CUPTI writes one per device when CUDA initialises, if
 * the kind is enabled by then. */
static void add_device(struct conv *c, const CUpti_ActivityDevice5 *d)
{
	if (d->id >= MAX_DEVICES)
		return;
	struct strb_cuda_device *v = &c->dev[d->id];
	memset(v, 0, sizeof(*v));
	snprintf(v->name, sizeof(v->name), "%s", d->name ? d->name : "");
	v->total_mem = d->globalMemorySize;
	v->major = (int)d->computeCapabilityMajor;
	v->minor = (int)d->computeCapabilityMinor;
	v->threads_per_block = (int)d->maxThreadsPerBlock;
	v->threads_per_sm = (int)(d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp);
	v->regs_per_block = (int)d->maxRegistersPerBlock;
	v->warp_size = (int)d->numThreadsPerWarp;
	v->shared_per_block = (int)d->maxSharedMemoryPerBlock;
	v->sm_count = (int)d->numMultiprocessors;
	v->regs_per_sm = (int)d->maxRegistersPerMultiprocessor;
	v->shared_per_sm = (int)d->maxSharedMemoryPerMultiprocessor;
	memcpy(v->uuid, d->uuid.bytes, sizeof(v->uuid));
	v->known = v->uuid_known = true;
}

/* One deviceProperties object, in libkineto's key order, then strobe's
 * "uuid". */
static int device_json(char *obj, size_t len, int id, const struct strb_cuda_device *v)
{
	char name[256];
	size_t j = 0;
	/* Device names are plain ASCII; keep them so and the fragment valid. */
	for (const char *p = v->name; *p && j < sizeof(name) - 1; p++)
		name[j++] = (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') ? *p : '?';
	name[j] = 0;
	int n =
	    snprintf(obj, len,
	             "{\"id\": %d, \"name\": \"%s\", \"totalGlobalMem\": %llu, \"computeMajor\": %d, "
	             "\"computeMinor\": %d, \"maxThreadsPerBlock\": %d, \"maxThreadsPerMultiprocessor\": %d, "
	             "\"regsPerBlock\": %d, \"warpSize\": %d, \"sharedMemPerBlock\": %d, \"numSms\": %d, "
	             "\"regsPerMultiprocessor\": %d",
	             id, name, (unsigned long long)v->total_mem, v->major, v->minor, v->threads_per_block,
	             v->threads_per_sm, v->regs_per_block, v->warp_size, v->shared_per_block, v->sm_count,
	             v->regs_per_sm);
	if (v->optin_known)
		n += snprintf(obj + n, len - (size_t)n, ", \"sharedMemPerBlockOptin\": %d",
		              v->shared_per_block_optin);
	n += snprintf(obj + n, len - (size_t)n, ", \"sharedMemPerMultiprocessor\": %d", v->shared_per_sm);
	if (v->uuid_known) {
		const unsigned char *u = v->uuid;
		n += snprintf(obj + n, len - (size_t)n,
		              ", \"uuid\": "
		              "\"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x\"",
		              u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		              u[13], u[14], u[15]);
	}
	n += snprintf(obj + n, len - (size_t)n, "}");
	return n;
}

/* Every device the driver reports (as libkineto lists every visible
 * device), else those CUPTI's DEVICE records described: the limits for
 * blocks per SM and occupancy, and the trace's deviceProperties. */
static void add_devices(struct conv *c)
{
	struct strb_cuda_device drv[MAX_DEVICES];
	int n = strb_cuda_devices(drv, MAX_DEVICES);
	for (int d = 0; d < n && d < MAX_DEVICES; d++) {
		if (!drv[d].known)
			continue;
		if (!drv[d].uuid_known && c->dev[d].uuid_known) {
			memcpy(drv[d].uuid, c->dev[d].uuid, sizeof(drv[d].uuid));
			drv[d].uuid_known = true;
		}
		c->dev[d] = drv[d];
	}
	struct strobe_trace *t = c->g.t;
	for (int d = 0; d < MAX_DEVICES; d++) {
		const struct strb_cuda_device *v = &c->dev[d];
		if (!v->known)
			continue;
		c->x->sm_count[d] = (uint32_t)v->sm_count;
		c->x->occ_prop[d] = (struct cudaOccDeviceProp){
		    .computeMajor = v->major,
		    .computeMinor = v->minor,
		    .maxThreadsPerBlock = v->threads_per_block,
		    .maxThreadsPerMultiprocessor = v->threads_per_sm,
		    .regsPerBlock = v->regs_per_block,
		    .regsPerMultiprocessor = v->regs_per_sm,
		    .warpSize = v->warp_size,
		    .sharedMemPerBlock = (size_t)v->shared_per_block,
		    .sharedMemPerMultiprocessor = (size_t)v->shared_per_sm,
		    .numSms = v->sm_count,
		    .sharedMemPerBlockOptin =
		        (size_t)(v->optin_known ? v->shared_per_block_optin : v->shared_per_block),
		    .reservedSharedMemPerBlock = (size_t)v->reserved_shared_per_block,
		};
		c->x->occ_known[d] = v->warp_size > 0 && v->threads_per_sm > 0;
		char obj[1024];
		int add = device_json(obj, sizeof(obj), d, v);
		size_t old = strlen(t->device_properties);
		char *joined = strb_arena_alloc(&t->arena, old + (size_t)add + 3);
		if (!joined) {
			c->g.rc = -ENOMEM;
			return;
		}
		memcpy(joined, t->device_properties, old);
		size_t at = old;
		if (old) {
			memcpy(joined + at, ", ", 2);
			at += 2;
		}
		memcpy(joined + at, obj, (size_t)add + 1);
		t->device_properties = joined;
	}
}

static void add_rows(struct conv *c)
{
	strb_gpu_add_rows(&c->g);
	if (strb_gpu_selected(&c->g, STROBE_ACTIVITY_OVERHEAD)) {
		struct strobe_resource o = {
		    sizeof(o),    STROBE_RESOURCE_PROCESS, OVERHEAD_PID, 0, "CUPTI Overhead", NULL,
		    OVERHEAD_SORT};
		if (strb_trace_add_resource(c->g.t, &o))
			c->g.rc = -ENOMEM;
	}
}

static void finish(struct conv *c)
{
	/* Deferred waits, for streams that were busy. */
	for (size_t i = 0; i < c->nwaits && !c->g.rc; i++) {
		const CUpti_ActivitySynchronization *r = &c->waits[i];
		if (strb_gpu_row_busy(&c->g, context_device(c, r->contextId), r->streamId))
			sync_record(c, r, true);
	}
	unsigned char uuid[MAX_DEVICES][16];
	bool uuid_known[MAX_DEVICES];
	for (int d = 0; d < MAX_DEVICES; d++) {
		memcpy(uuid[d], c->dev[d].uuid, 16);
		uuid_known[d] = c->dev[d].uuid_known;
	}
	/* A flight dump's window starts long after the level was measured,
	 * with the allocations in between gone with their buffers. */
	strb_cupti_mem_emit(&c->mem, &c->g, (const unsigned char(*)[16])uuid, uuid_known, MAX_DEVICES,
	                    strb_cupti.dumping ? "a flight dump holds only its window's allocations" : NULL);
	strb_gpu_emit_spans(&c->g);
	uint64_t missing = strb_gpu_count_launches(&c->g);
	if (missing && strb_gpu_selected(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL))
		LOGW(
		    "%llu of %llu kernel launches in the window have no kernel record: GPU records were lost "
		    "(dropped, rejected or still in flight at stop)",
		    (unsigned long long)missing, (unsigned long long)c->g.st->gpu_launches);
	add_rows(c);
}

/* Which calls will be written, known before pass 2 so GPU records can tell
 * whether their arrow has a start. */
static void mark_emitted(struct conv *c)
{
	for (size_t i = 0; i < c->g.ncalls; i++) {
		struct strb_gpu_call *call = &c->g.calls[i];
		bool runtime = call->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
		bool wanted = runtime ? strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME) &&
		                            !strb_cupti_runtime_blocklisted(call->op)
		                      : strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_DRIVER) &&
		                            strb_cupti_driver_kept(call->op);
		call->emitted = wanted && call->start >= c->g.w->start_ns && call->end <= c->g.w->stop_ns &&
		                call->end >= call->start;
		call->flow = strb_cupti_flow_start(call->kind, call->op);
		call->launch = strb_cupti_is_kernel_launch(call->kind, call->op);
	}
}

/* libkineto's version keys, as numbers: those of the loaded libcupti and of
 * the CUDA driver and runtime the program loaded (absent when it has not). */
static void add_versions(struct conv *c)
{
	int driver, runtime;
	strb_cuda_versions(&driver, &runtime);
	const struct {
		const char *key;
		int64_t value;
	} v[] = {{"cuda_driver_version", driver},
	         {"cuda_runtime_version", runtime},
	         {"cupti_version", c->lib->version}};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct strobe_arg e = {.key = v[i].key, .kind = STROBE_ARG_I64, .value.i64 = v[i].value};
		if (v[i].value > 0 && strb_trace_set_meta(c->g.t, &e))
			c->g.rc = -ENOMEM;
	}
}

int strb_cupti_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *buffers)
{
	struct conv c = {.lib = strb_cupti.lib, .buffers = buffers};
	memset(c.last_index, 0xff, sizeof(c.last_index)); /* UINT32_MAX: none yet */
	strb_gpu_init(&c.g, t, w);
	c.g.pauses = &strb_cupti.pauses;
	c.g.count_unmatched = strb_gpu_selected(&c.g, STROBE_ACTIVITY_CUDA_RUNTIME) ||
	                      strb_gpu_selected(&c.g, STROBE_ACTIVITY_CUDA_DRIVER);
	strb_gpu_pool_account(&strb_cupti.pool, &t->stats);

	/* The trace owns the args context from here, whatever happens next. */
	c.x = strb_cupti_args_new(c.lib->version >= STRB_CUPTI_VERSION_13_1);
	struct strb_arg_source src = {strb_cupti_render_args, c.x, strb_cupti_args_release};
	if (!c.x)
		return -ENOMEM;
	if (strb_trace_set_arg_source(t, &src)) {
		strb_cupti_args_release(c.x);
		return -EBUSY;
	}
	walk(&c, pass1, false);
	add_versions(&c);
	if (!c.g.rc)
		add_devices(&c);
	strb_gpu_build_table(&c.g);
	if (!c.g.rc && c.nevents)
		qsort(c.events, c.nevents, sizeof(*c.events), cmp_event);
	strb_gpu_link_calls(&c.g);
	if (!c.g.rc)
		mark_emitted(&c);
	size_t first = t->count;
	if (!c.g.rc)
		walk(&c, pass2, true);
	if (!c.g.rc && !c.g.overlap) {
		t->in_order_from = first;
		t->in_order_to = t->count;
	}
	if (!c.g.rc)
		finish(&c);
	/* Buffers the trace's memory did not need would stay with it until it
	 * is destroyed: a trace of mostly filtered records would keep them all. */
	strb_arena_drop_spare(&t->arena);
	if (t->stats.gpu_rejected_buffers || t->stats.gpu_dropped_records)
		LOGW("GPU records lost: %llu buffer requests refused, %llu records dropped by CUPTI",
		     (unsigned long long)t->stats.gpu_rejected_buffers,
		     (unsigned long long)t->stats.gpu_dropped_records);
	int rc = c.g.rc;
	strb_gpu_free(&c.g);
	free(c.events);
	free(c.sync_rows);
	free(c.waits);
	strb_cupti_mem_free(&c.mem);
	return rc;
}

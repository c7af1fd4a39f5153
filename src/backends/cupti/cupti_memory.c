/* CUPTI memory records -> the GPU memory timeline. Allocations and frees
 * (CUpti_ActivityMemory4) become libkineto's "[memory]" instants, with
 * PyTorch's arg names (Device Type, Device Id, Addr, Bytes, Total Allocated,
 * Total Reserved: what TensorBoard's and HTA's memory views read) and
 * CUPTI's own (kind, operation, stream, correlation, pool); pool events
 * (CUpti_ActivityMemoryPool3) become "Memory pool ..." instants. Records
 * arrive out of order, so they are kept and written sorted by time, with a
 * "GPU memory allocated (bytes)" counter sample per device at each change:
 * the level at trace start (from the counter source, else 0) plus what the
 * trace allocated minus what it freed. */
#include "backends/cupti/cupti_memory.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/cupti/cupti_names.h"
#include "process/counters.h"

#define DEVICE_TYPE_CPU  0 /* PyTorch's c10::DeviceType */
#define DEVICE_TYPE_CUDA 1
#define MAX_POOLS        256

/* The CUDA 13 layouts read here (cupti-notes §2.3; the fake's oracle test
 * checks the sizes against the real library). */
_Static_assert(sizeof(CUpti_ActivityMemory4) == 128, "CUpti_ActivityMemory4 size");
_Static_assert(offsetof(CUpti_ActivityMemory4, memoryKind) == 8, "Memory4.memoryKind");
_Static_assert(offsetof(CUpti_ActivityMemory4, address) == 16, "Memory4.address");
_Static_assert(offsetof(CUpti_ActivityMemory4, bytes) == 24, "Memory4.bytes");
_Static_assert(offsetof(CUpti_ActivityMemory4, timestamp) == 32, "Memory4.timestamp");
_Static_assert(offsetof(CUpti_ActivityMemory4, deviceId) == 52, "Memory4.deviceId");
_Static_assert(offsetof(CUpti_ActivityMemory4, streamId) == 60, "Memory4.streamId");
_Static_assert(offsetof(CUpti_ActivityMemory4, isAsync) == 72, "Memory4.isAsync");
_Static_assert(offsetof(CUpti_ActivityMemory4, memoryPoolConfig) == 80, "Memory4.memoryPoolConfig");
_Static_assert(offsetof(CUpti_ActivityMemory4, memoryPoolConfig.address) == 88, "Memory4 pool address");
_Static_assert(offsetof(CUpti_ActivityMemory4, source) == 120, "Memory4.source");
_Static_assert(sizeof(CUpti_ActivityMemoryPool3) == 80, "CUpti_ActivityMemoryPool3 size");
_Static_assert(offsetof(CUpti_ActivityMemoryPool3, deviceId) == 20, "MemoryPool3.deviceId");
_Static_assert(offsetof(CUpti_ActivityMemoryPool3, address) == 32, "MemoryPool3.address");
_Static_assert(offsetof(CUpti_ActivityMemoryPool3, timestamp) == 56, "MemoryPool3.timestamp");
_Static_assert(offsetof(CUpti_ActivityMemoryPool3, utilizedSize) == 64, "MemoryPool3.utilizedSize");

enum mem_op { OP_ALLOC, OP_FREE, OP_POOL_CREATED, OP_POOL_DESTROYED, OP_POOL_TRIMMED };

struct strb_cupti_mem_ev {
	int64_t ts;
	uint64_t addr, bytes;
	uint64_t pool_addr, pool_size, pool_used, release_threshold;
	uint32_t corr, device, stream, mem_kind, pool_type;
	uint32_t seq; /* arrival order, for a stable sort */
	uint8_t op;
	bool is_async;
};

static void push(struct strb_cupti_mem *m, struct strb_gpu *g, const struct strb_cupti_mem_ev *e)
{
	if (!strb_gpu_grow(g, (void **)&m->ev, &m->cap, m->n + 1, sizeof(*m->ev)))
		return;
	m->ev[m->n] = *e;
	m->ev[m->n].seq = (uint32_t)m->n;
	m->n++;
}

/* The record's time, as epoch ns, if the record is kept. */
static bool kept(struct strb_gpu *g, uint64_t ts, int64_t *at)
{
	int64_t end;
	return strb_gpu_selected(g, STROBE_ACTIVITY_GPU_MEMORY) && strb_gpu_record_ok(g, ts, ts, at, &end);
}

void strb_cupti_mem_add(struct strb_cupti_mem *m, struct strb_gpu *g, const CUpti_ActivityMemory4 *r)
{
	struct strb_cupti_mem_ev e = {0};
	if (r->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
	    r->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
		g->st->gpu_incomplete_records++;
		return;
	}
	if (!kept(g, r->timestamp, &e.ts))
		return;
	e.op = r->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? OP_ALLOC : OP_FREE;
	e.addr = r->address;
	e.bytes = r->bytes;
	e.corr = r->correlationId;
	e.device = r->deviceId;
	e.stream = r->streamId;
	e.mem_kind = r->memoryKind;
	e.is_async = r->isAsync;
	e.pool_type = r->memoryPoolConfig.memoryPoolType;
	if (e.pool_type != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID) {
		e.pool_addr = r->memoryPoolConfig.address;
		e.release_threshold = r->memoryPoolConfig.releaseThreshold;
		/* The union holds the pool's size for a local pool, the owning
		 * process for an imported one. */
		if (e.pool_type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL)
			e.pool_size = r->memoryPoolConfig.pool.size;
		e.pool_used = r->memoryPoolConfig.utilizedSize;
	}
	push(m, g, &e);
}

void strb_cupti_mem_add_pool(struct strb_cupti_mem *m, struct strb_gpu *g, const CUpti_ActivityMemoryPool3 *r)
{
	struct strb_cupti_mem_ev e = {0};
	switch (r->memoryPoolOperationType) {
	case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED:
		e.op = OP_POOL_CREATED;
		break;
	case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED:
		e.op = OP_POOL_DESTROYED;
		break;
	case CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED:
		e.op = OP_POOL_TRIMMED;
		break;
	default:
		g->st->gpu_incomplete_records++;
		return;
	}
	if (!kept(g, r->timestamp, &e.ts))
		return;
	e.pool_addr = r->address;
	e.pool_size = r->size;
	e.pool_used = r->utilizedSize;
	e.release_threshold = r->releaseThreshold;
	e.pool_type = r->memoryPoolType;
	e.corr = r->correlationId;
	e.device = r->deviceId;
	push(m, g, &e);
}

static int cmp_ev(const void *a, const void *b)
{
	const struct strb_cupti_mem_ev *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Host memory (pageable, pinned) is not the device's. */
static bool on_device(uint32_t kind)
{
	return kind != CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE && kind != CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
}

struct level {
	bool used;
	int64_t allocated; /* start level + allocations - frees */
	int64_t outside_pools;
};

struct pool {
	uint64_t addr;
	uint32_t device;
	uint64_t size;
};

struct state {
	struct strb_gpu *g;
	struct level dev[STRB_GPU_MAX_DEVICES];
	struct pool pools[MAX_POOLS];
	int npools;
};

static struct pool *find_pool(struct state *s, uint32_t device, uint64_t addr, bool add)
{
	for (int i = 0; i < s->npools; i++)
		if (s->pools[i].addr == addr && s->pools[i].device == device)
			return &s->pools[i];
	if (!add || s->npools >= MAX_POOLS)
		return NULL;
	s->pools[s->npools] = (struct pool){addr, device, 0};
	return &s->pools[s->npools++];
}

/* Allocations outside pools, plus every pool's size: what the device holds
 * for this process. */
static int64_t reserved(const struct state *s, uint32_t device)
{
	int64_t r = s->dev[device].outside_pools;
	for (int i = 0; i < s->npools; i++)
		if (s->pools[i].device == device)
			r += (int64_t)s->pools[i].size;
	return r;
}

static void counter(struct state *s, uint32_t device, int64_t ts)
{
	struct strobe_arg v = {
	    .key = STRB_GPU_MEMORY_TRACK, .kind = STROBE_ARG_I64, .value.i64 = s->dev[device].allocated};
	strb_gpu_emit(s->g, STROBE_ACTIVITY_HARDWARE_COUNTERS, STRB_GPU_MEMORY_TRACK, ts, ts, device, 0, &v,
	              1);
}

static void allocation(struct state *s, const struct strb_cupti_mem_ev *e)
{
	struct strb_gpu *g = s->g;
	bool dev = on_device(e->mem_kind);
	int64_t delta = e->op == OP_ALLOC ? (int64_t)e->bytes : -(int64_t)e->bytes;
	struct level *l = &s->dev[e->device];
	if (dev) {
		l->allocated += delta;
		if (e->pool_type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID)
			l->outside_pools += delta;
		struct pool *p = e->pool_type == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL
		                     ? find_pool(s, e->device, e->pool_addr, true)
		                     : NULL;
		if (p && e->pool_size)
			p->size = e->pool_size;
	}
	struct strb_arg_scratch scratch;
	struct strobe_arg *a = scratch.args;
	size_t n = 0;
	a[n++] = (struct strobe_arg){.key = "Device Type",
	                             .kind = STROBE_ARG_I64,
	                             .value.i64 = dev ? DEVICE_TYPE_CUDA : DEVICE_TYPE_CPU};
	a[n++] = (struct strobe_arg){
	    .key = "Device Id", .kind = STROBE_ARG_I64, .value.i64 = dev ? (int64_t)e->device : -1};
	a[n++] = (struct strobe_arg){.key = "Addr", .kind = STROBE_ARG_U64, .value.u64 = e->addr};
	a[n++] = (struct strobe_arg){.key = "Bytes", .kind = STROBE_ARG_I64, .value.i64 = delta};
	if (dev) {
		a[n++] = (struct strobe_arg){
		    .key = "Total Allocated", .kind = STROBE_ARG_I64, .value.i64 = l->allocated};
		a[n++] = (struct strobe_arg){
		    .key = "Total Reserved", .kind = STROBE_ARG_I64, .value.i64 = reserved(s, e->device)};
	}
	a[n++] = (struct strobe_arg){.key = "kind",
	                             .kind = STROBE_ARG_STRING,
	                             .value.str = strb_gpu_keep(g, strb_cupti_memory_kind(e->mem_kind))};
	a[n++] = (struct strobe_arg){.key = "operation",
	                             .kind = STROBE_ARG_STRING,
	                             .value.str = e->op == OP_ALLOC ? "allocation" : "release"};
	a[n++] = (struct strobe_arg){.key = "stream", .kind = STROBE_ARG_U64, .value.u64 = e->stream};
	a[n++] = (struct strobe_arg){.key = "correlation", .kind = STROBE_ARG_U64, .value.u64 = e->corr};
	a[n++] = (struct strobe_arg){.key = "async", .kind = STROBE_ARG_BOOL, .value.b = e->is_async};
	if (e->pool_type != CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID)
		a[n++] =
		    (struct strobe_arg){.key = "pool", .kind = STROBE_ARG_U64, .value.u64 = e->pool_addr};
	struct strobe_activity *act = strb_gpu_emit(g, STROBE_ACTIVITY_CPU_INSTANT_EVENT, "[memory]", e->ts,
	                                            e->ts, e->device, e->stream, a, n);
	if (act) {
		strb_gpu_link(g, act, e->corr, e->ts, false);
		act->flow_id = 0; /* an instant ends no arrow */
		/* Its stream row is named even when no work ran on it. */
		strb_gpu_note_row(g, e->device, e->stream, e->ts, e->ts);
	}
	if (dev)
		counter(s, e->device, e->ts);
}

static void pool_event(struct state *s, const struct strb_cupti_mem_ev *e)
{
	static const char *const names[] = {
	    [OP_POOL_CREATED] = "Memory pool created",
	    [OP_POOL_DESTROYED] = "Memory pool destroyed",
	    [OP_POOL_TRIMMED] = "Memory pool trimmed",
	};
	struct pool *p = find_pool(s, e->device, e->pool_addr, e->op != OP_POOL_DESTROYED);
	if (p)
		p->size = e->op == OP_POOL_DESTROYED ? 0 : e->pool_size;
	struct strb_arg_scratch scratch;
	struct strobe_arg *a = scratch.args;
	size_t n = 0;
	a[n++] = (struct strobe_arg){.key = "Device Id", .kind = STROBE_ARG_I64, .value.i64 = e->device};
	a[n++] = (struct strobe_arg){.key = "pool", .kind = STROBE_ARG_U64, .value.u64 = e->pool_addr};
	a[n++] = (struct strobe_arg){.key = "size", .kind = STROBE_ARG_U64, .value.u64 = e->pool_size};
	a[n++] = (struct strobe_arg){.key = "utilized", .kind = STROBE_ARG_U64, .value.u64 = e->pool_used};
	a[n++] = (struct strobe_arg){
	    .key = "release threshold", .kind = STROBE_ARG_U64, .value.u64 = e->release_threshold};
	a[n++] = (struct strobe_arg){
	    .key = "Total Reserved", .kind = STROBE_ARG_I64, .value.i64 = reserved(s, e->device)};
	a[n++] = (struct strobe_arg){.key = "correlation", .kind = STROBE_ARG_U64, .value.u64 = e->corr};
	struct strobe_activity *act = strb_gpu_emit(s->g, STROBE_ACTIVITY_CPU_INSTANT_EVENT, names[e->op],
	                                            e->ts, e->ts, e->device, 0, a, n);
	if (act) {
		strb_gpu_link(s->g, act, e->corr, e->ts, false);
		act->flow_id = 0;
	}
}

/* "gpu_memory_start": where each device's level at trace start came from. */
static void start_meta(struct state *s, const unsigned char (*uuid)[16], const bool *uuid_known, int ndev,
                       const char *unknown)
{
	char text[STRB_GPU_MAX_DEVICES * 128]; /* an entry is under 100 bytes */
	size_t at = (size_t)snprintf(text, sizeof(text), "{");
	const char *why = NULL;
	bool first = true;
	for (int d = 0; d < STRB_GPU_MAX_DEVICES && at < sizeof(text); d++) {
		struct level *l = &s->dev[d];
		if (!l->used)
			continue;
		uint64_t bytes = 0;
		const char *source = NULL, *reason = unknown ? unknown : "the device's UUID is not known";
		if (!unknown && d < ndev && uuid_known[d] &&
		    !strb_gpu_memory_start_find(uuid[d], &bytes, &source, &reason)) {
			l->allocated = (int64_t)bytes;
			at += (size_t)snprintf(
			    text + at, sizeof(text) - at,
			    "%s\"%d\": {\"bytes\": %llu, \"source\": \"%s device memory used\"}",
			    first ? "" : ", ", d, (unsigned long long)bytes, source);
		} else {
			why = reason;
			at += (size_t)snprintf(
			    text + at, sizeof(text) - at,
			    "%s\"%d\": {\"bytes\": null, \"source\": \"unknown: the track starts at "
			    "0 (relative)\"}",
			    first ? "" : ", ", d);
		}
		first = false;
	}
	if (first || at >= sizeof(text) - 2)
		return;
	snprintf(text + at, sizeof(text) - at, "}");
	struct strobe_arg m = {.key = "gpu_memory_start", .kind = STROBE_ARG_JSON, .value.str = text};
	if (strb_trace_set_meta(s->g->t, &m))
		s->g->rc = -ENOMEM;
	if (why) {
		char line[512];
		snprintf(line, sizeof(line), "start level unknown: %s", why);
		struct strobe_arg r = {
		    .key = "gpu_memory_start_unknown", .kind = STROBE_ARG_STRING, .value.str = line};
		if (strb_trace_set_meta(s->g->t, &r))
			s->g->rc = -ENOMEM;
	}
}

void strb_cupti_mem_emit(struct strb_cupti_mem *m, struct strb_gpu *g, const unsigned char (*uuid)[16],
                         const bool *uuid_known, int ndev, const char *unknown)
{
	if (!m->n || g->rc)
		return;
	struct state *s = calloc(1, sizeof(*s));
	if (!s) {
		g->rc = -ENOMEM;
		return;
	}
	s->g = g;
	qsort(m->ev, m->n, sizeof(*m->ev), cmp_ev);
	for (size_t i = 0; i < m->n; i++) {
		if (m->ev[i].device >= STRB_GPU_MAX_DEVICES) {
			m->ev[i].op = 0xff;
			g->st->gpu_unexpected_records++;
			continue;
		}
		s->dev[m->ev[i].device].used = true;
		g->device_seen[m->ev[i].device] = true; /* its "GPU N" process is named */
	}
	start_meta(s, uuid, uuid_known, ndev, unknown);
	/* The level at the window's start, so the track starts there. */
	for (uint32_t d = 0; d < STRB_GPU_MAX_DEVICES; d++)
		if (s->dev[d].used)
			counter(s, d, g->w->start_ns);
	for (size_t i = 0; i < m->n && !g->rc; i++) {
		const struct strb_cupti_mem_ev *e = &m->ev[i];
		if (e->op == OP_ALLOC || e->op == OP_FREE)
			allocation(s, e);
		else if (e->op != 0xff)
			pool_event(s, e);
	}
	/* ... and ends at the window's end. */
	for (uint32_t d = 0; d < STRB_GPU_MAX_DEVICES; d++)
		if (s->dev[d].used)
			counter(s, d, g->w->stop_ns);
	free(s);
}

void strb_cupti_mem_free(struct strb_cupti_mem *m)
{
	free(m->ev);
	m->ev = NULL;
	m->n = m->cap = 0;
}

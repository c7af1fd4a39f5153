/* Args of CUPTI activities, rendered from the records the trace keeps. */
#include "backends/cupti/cupti_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* CUDA 13.1's kernel record (CUpti_ActivityKernel11) appends the launch
 * priority to Kernel10; headers before 13.1 do not declare it. */
#if CUPTI_API_VERSION >= 130100
#define KERNEL_PRIORITY_OFFSET offsetof(CUpti_ActivityKernel11, priority)
#else
#define KERNEL_PRIORITY_OFFSET 216
#endif

struct strb_cupti_args *strb_cupti_args_new(bool has_priority)
{
	struct strb_cupti_args *x = calloc(1, sizeof(*x));
	if (x)
		x->has_priority = has_priority;
	return x;
}

void strb_cupti_args_release(void *p)
{
	struct strb_cupti_args *x = p;
	if (!x)
		return;
	for (size_t i = 0; i < x->nkept; i++)
		free(x->kept[i]);
	free(x->kept);
	free(x->occ);
	free(x);
}

int strb_cupti_args_reserve(struct strb_cupti_args *x, size_t n)
{
	if (x->nkept + n <= x->kept_cap)
		return 0;
	void **k = realloc(x->kept, (x->nkept + n) * sizeof(*k));
	if (!k)
		return -ENOMEM;
	x->kept = k;
	x->kept_cap = x->nkept + n;
	return 0;
}

void strb_cupti_args_keep(struct strb_cupti_args *x, void *buffer)
{
	if (x->nkept < x->kept_cap)
		x->kept[x->nkept++] = buffer;
}

/* ---- occupancy ---------------------------------------------------------------- */

/* Threads per block; 0 for a shape no GPU runs (a dimension not positive,
 * or more threads than an int holds), which gets no occupancy. */
static uint32_t block_size(const CUpti_ActivityKernel9 *k)
{
	if (k->blockX <= 0 || k->blockY <= 0 || k->blockZ <= 0)
		return 0;
	uint64_t n = (uint64_t)k->blockX * (uint64_t)k->blockY;
	if (n > INT32_MAX)
		return 0;
	n *= (uint64_t)k->blockZ;
	return n > INT32_MAX ? 0 : (uint32_t)n;
}

static bool same_shape(const struct strb_cupti_occ *e, const CUpti_ActivityKernel9 *k)
{
	return e->used && e->device == k->deviceId && e->regs == k->registersPerThread &&
	       e->block == block_size(k) && e->static_smem == k->staticSharedMemory &&
	       e->dynamic_smem == k->dynamicSharedMemory;
}

static uint32_t shape_hash(uint32_t device, uint32_t regs, uint32_t block, int32_t static_smem,
                           int32_t dynamic_smem)
{
	return strb_cupti_hash32(device * 31u + regs * 7919u + block * 104729u + (uint32_t)static_smem * 13u +
	                         (uint32_t)dynamic_smem);
}

/* The slot of k's shape in the table: its entry, or the empty slot where
 * it goes. The table is never full (grown at half). */
static struct strb_cupti_occ *occ_slot(const struct strb_cupti_args *x, const CUpti_ActivityKernel9 *k)
{
	size_t j = shape_hash(k->deviceId, k->registersPerThread, block_size(k), k->staticSharedMemory,
	                      k->dynamicSharedMemory) &
	           (x->occ_cap - 1);
	while (x->occ[j].used && !same_shape(&x->occ[j], k))
		j = (j + 1) & (x->occ_cap - 1);
	return &x->occ[j];
}

static bool occ_grow(struct strb_cupti_args *x)
{
	if ((x->occ_used + 1) * 2 <= x->occ_cap)
		return true;
	size_t cap = x->occ_cap ? x->occ_cap * 2 : 256;
	struct strb_cupti_occ *n = calloc(cap, sizeof(*n));
	if (!n)
		return false;
	for (size_t i = 0; i < x->occ_cap; i++) {
		const struct strb_cupti_occ *e = &x->occ[i];
		if (!e->used)
			continue;
		size_t j =
		    shape_hash(e->device, e->regs, e->block, e->static_smem, e->dynamic_smem) & (cap - 1);
		while (n[j].used)
			j = (j + 1) & (cap - 1);
		n[j] = *e;
	}
	free(x->occ);
	x->occ = n;
	x->occ_cap = cap;
	return true;
}

static void limiting_factors(char *out, size_t len, unsigned f)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {{OCC_LIMIT_WARPS, "WARPS"},
	             {OCC_LIMIT_REGISTERS, "REGS"},
	             {OCC_LIMIT_SHARED_MEMORY, "SMEM"},
	             {OCC_LIMIT_BLOCKS, "BLOCKS"},
	             {OCC_LIMIT_BARRIERS, "BARRIERS"}};
	size_t n = 0;
	out[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & names[i].bit)
			n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "|" : "", names[i].name);
	if (!n)
		snprintf(out, len, "none");
}

/* CUDA's own occupancy calculator (header-only) on the device's limits. */
const struct strb_cupti_occ *strb_cupti_occupancy(struct strb_cupti_args *x, struct strobe_trace *t,
                                                  const CUpti_ActivityKernel9 *k)
{
	uint32_t dev = k->deviceId, block = block_size(k);
	if (dev >= STRB_CUPTI_MAX_DEVICES || !x->occ_known[dev] || !block)
		return NULL;
	if (x->occ_cap) {
		struct strb_cupti_occ *e = occ_slot(x, k);
		if (e->used)
			return e;
	}
	const struct cudaOccDeviceProp *prop = &x->occ_prop[dev];
	struct cudaOccFuncAttributes attr = {
	    .maxThreadsPerBlock = prop->maxThreadsPerBlock,
	    .numRegs = k->registersPerThread,
	    .sharedSizeBytes = k->staticSharedMemory,
	    .partitionedGCConfig = PARTITIONED_GC_OFF,
	    .shmemLimitConfig = FUNC_SHMEM_LIMIT_DEFAULT,
	    .maxDynamicSharedSizeBytes = prop->sharedMemPerBlockOptin,
	    .numBlockBarriers = 0, /* as libkineto's (C++ default) attributes: no barrier limit */
	};
	/* C++'s default state; zero would be carveout 0, the least shared memory. */
	struct cudaOccDeviceState state = {.cacheConfig = CACHE_PREFER_NONE,
	                                   .carveoutConfig = SHAREDMEM_CARVEOUT_DEFAULT};
	struct cudaOccResult r;
	memset(&r, 0, sizeof(r));
	if (cudaOccMaxActiveBlocksPerMultiprocessor(&r, prop, &attr, &state, (int)block,
	                                            k->dynamicSharedMemory) != CUDA_OCC_SUCCESS)
		return NULL;
	char factors[64], json[512];
	limiting_factors(factors, sizeof(factors), r.limitingFactors);
	snprintf(
	    json, sizeof(json),
	    "{\"activeBlocksPerMultiprocessor\": %d, \"limitingFactors\": \"%s\", \"blockLimitRegs\": %d, "
	    "\"blockLimitSharedMem\": %d, \"blockLimitWarps\": %d, \"blockLimitBlocks\": %d, "
	    "\"blockLimitBarriers\": %d, \"allocatedRegistersPerBlock\": %d, "
	    "\"allocatedSharedMemPerBlock\": %zu}",
	    r.activeBlocksPerMultiprocessor, factors, r.blockLimitRegs, r.blockLimitSharedMem,
	    r.blockLimitWarps, r.blockLimitBlocks, r.blockLimitBarriers, r.allocatedRegistersPerBlock,
	    r.allocatedSharedMemPerBlock);
	const char *interned = strb_trace_intern(t, json, strlen(json));
	if (!interned || !occ_grow(x))
		return NULL;
	struct strb_cupti_occ *e = occ_slot(x, k);
	*e = (struct strb_cupti_occ){true,
	                             dev,
	                             k->registersPerThread,
	                             block,
	                             k->staticSharedMemory,
	                             k->dynamicSharedMemory,
	                             r.activeBlocksPerMultiprocessor,
	                             interned};
	x->occ_used++;
	return e;
}

/* ---- rendering -------------------------------------------------------------------- */

static char *put_int(char *p, int64_t v)
{
	char tmp[24];
	int n = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*p++ = '-';
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* "[x, y, z]" as a JSON value, in the scratch text (3 x 11 characters + 7
 * each: the text holds far more than the two a kernel has). */
static void arg_dims(struct strb_cupti_argv *g, const char *key, int32_t x, int32_t y, int32_t z)
{
	char *start = g->s->text + g->text_used, *p = start;
	*p++ = '[';
	p = put_int(p, x);
	memcpy(p, ", ", 2);
	p = put_int(p + 2, y);
	memcpy(p, ", ", 2);
	p = put_int(p + 2, z);
	*p++ = ']';
	*p++ = 0;
	g->text_used += (size_t)(p - start);
	g->s->args[g->n++] = (struct strobe_arg){.key = key, .kind = STROBE_ARG_JSON, .value.str = start};
}

/* The priority arg sits between them, as libkineto writes it (CUDA 13.1
 * kernels only: NULL elsewhere). */
static void graph_and_channel(struct strb_cupti_argv *g, uint32_t graph, uint64_t node,
                              const int32_t *priority, uint32_t channel, uint32_t channel_type)
{
	strb_cupti_arg_u(g, "graph id", graph);
	strb_cupti_arg_u(g, "graph node id", node);
	if (priority)
		strb_cupti_arg_i(g, "priority", *priority);
	strb_cupti_arg_u(g, "channel", channel); /* libkineto: 4294967295 for none */
	strb_cupti_arg_u(g, "channel_type", channel_type);
}

void strb_cupti_placement(struct strb_cupti_argv *g, uint32_t device, uint32_t context, uint32_t stream,
                          uint32_t corr)
{
	strb_cupti_arg_u(g, "device", device);
	strb_cupti_arg_u(g, "context", context);
	strb_cupti_arg_u(g, "stream", stream);
	strb_cupti_arg_u(g, "correlation", corr);
}

static void bandwidth(struct strb_cupti_argv *g, uint64_t bytes, int64_t dur)
{
	strb_cupti_arg_u(g, "bytes", bytes);
	if (dur > 0)
		strb_cupti_arg_f(g, "memory bandwidth (GB/s)", (double)bytes / (double)dur);
}

static void kernel(const struct strb_cupti_args *x, const CUpti_ActivityKernel9 *k, struct strb_cupti_argv *g)
{
	strb_cupti_arg_u(g, "queued", k->queued);
	strb_cupti_placement(g, k->deviceId, k->contextId, k->streamId, k->correlationId);
	strb_cupti_arg_i(g, "registers per thread", k->registersPerThread);
	strb_cupti_arg_i(g, "shared memory", (int64_t)k->staticSharedMemory + k->dynamicSharedMemory);
	uint32_t dev = k->deviceId, sms = dev < STRB_CUPTI_MAX_DEVICES ? x->sm_count[dev] : 0;
	/* In float, as libkineto computes them: the same scenario writes the
	 * same numbers (128 blocks on 132 SMs: 0.9696969985961914). */
	float blocks = sms ? (float)((uint64_t)k->gridX * k->gridY * k->gridZ) / (float)sms : 0;
	if (sms) {
		strb_cupti_arg_f(g, "blocks per SM", blocks);
		strb_cupti_arg_f(g, "warps per SM",
		                 blocks * (float)((uint64_t)k->blockX * k->blockY * k->blockZ) / 32.0f);
	}
	arg_dims(g, "grid", k->gridX, k->gridY, k->gridZ);
	arg_dims(g, "block", k->blockX, k->blockY, k->blockZ);
	const struct strb_cupti_occ *occ = NULL;
	if (sms && x->occ_cap) {
		occ = occ_slot(x, k);
		occ = occ->used ? occ : NULL;
	}
	if (occ) {
		/* Resident warps over the SM's maximum, with the grid's own limit. */
		const struct cudaOccDeviceProp *prop = &x->occ_prop[dev];
		double resident = blocks < occ->active ? blocks : occ->active;
		double warps = ((double)occ->block + prop->warpSize - 1) / prop->warpSize;
		double max_warps = (double)prop->maxThreadsPerMultiprocessor / prop->warpSize;
		int64_t pct =
		    max_warps > 0 ? (int64_t)(resident * (int64_t)warps / max_warps * 100 + 0.5) : 0;
		strb_cupti_arg_i(g, "est. achieved occupancy %", pct);
		g->s->args[g->n++] =
		    (struct strobe_arg){.key = "occupancy", .kind = STROBE_ARG_JSON, .value.str = occ->json};
	}
	int32_t priority = 0;
	if (x->has_priority)
		memcpy(&priority, (const unsigned char *)k + KERNEL_PRIORITY_OFFSET, sizeof(priority));
	graph_and_channel(g, k->graphId, k->graphNodeId, x->has_priority ? &priority : NULL, k->channelID,
	                  k->channelType);
}

size_t strb_cupti_render_args(const void *ctx, const void *rec, const struct strobe_activity *a,
                              struct strb_arg_scratch *s)
{
	const struct strb_cupti_args *x = ctx;
	struct strb_cupti_argv g = {s, 0, 0};
	int64_t dur = a->end_ns - a->start_ns;
	switch (((const CUpti_Activity *)rec)->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		kernel(x, rec, &g);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy5 *m = rec;
		strb_cupti_placement(&g, m->deviceId, m->contextId, m->streamId, m->correlationId);
		bandwidth(&g, m->bytes, dur);
		graph_and_channel(&g, m->graphId, m->graphNodeId, NULL, m->channelID, m->channelType);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = rec;
		strb_cupti_arg_u(&g, "fromDevice", m->srcDeviceId);
		strb_cupti_arg_u(&g, "inDevice", m->deviceId);
		strb_cupti_arg_u(&g, "toDevice", m->dstDeviceId);
		strb_cupti_arg_u(&g, "fromContext", m->srcContextId);
		strb_cupti_arg_u(&g, "inContext", m->contextId);
		strb_cupti_arg_u(&g, "toContext", m->dstContextId);
		strb_cupti_arg_u(&g, "stream", m->streamId);
		strb_cupti_arg_u(&g, "correlation", m->correlationId);
		bandwidth(&g, m->bytes, dur);
		graph_and_channel(&g, m->graphId, m->graphNodeId, NULL, m->channelID, m->channelType);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = rec;
		strb_cupti_placement(&g, m->deviceId, m->contextId, m->streamId, m->correlationId);
		bandwidth(&g, m->bytes, dur);
		graph_and_channel(&g, m->graphId, m->graphNodeId, NULL, m->channelID, m->channelType);
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER: {
		const CUpti_ActivityAPI *r = rec;
		strb_cupti_arg_u(&g, "cbid", r->cbid);
		strb_cupti_arg_u(&g, "correlation", r->correlationId);
		break;
	}
	default:
		break;
	}
	return g.n;
}

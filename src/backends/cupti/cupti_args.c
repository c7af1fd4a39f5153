/* Args of CUPTI activities, rendered from the records the trace keeps. */
#include "backends/cupti/cupti_args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	free(x->occ);
	free(x->shapes);
	free(x->shape_slots);
	for (size_t i = 0; i < x->nkblocks; i++)
		free(x->kblocks[i]);
	free(x->kblocks);
	free(x);
}

/* Blocks of their own rather than the trace's arena: the last block's
 * unused room is at most 32 KiB. */
struct strb_cupti_kernel *strb_cupti_kernel_slot(struct strb_cupti_args *x)
{
	if (!x->kleft) {
		if (!strb_grow_array((void **)&x->kblocks, &x->kblocks_cap, x->nkblocks + 1,
		                     sizeof(*x->kblocks)))
			return NULL;
		struct strb_cupti_kernel *b = malloc(STRB_CUPTI_KERNEL_BLOCK * sizeof(*b));
		if (!b)
			return NULL;
		x->kblocks[x->nkblocks++] = b;
		x->kleft = STRB_CUPTI_KERNEL_BLOCK;
	}
	return &x->kblocks[x->nkblocks - 1][STRB_CUPTI_KERNEL_BLOCK - x->kleft--];
}

/* ---- kernel shapes ------------------------------------------------------------ */

static size_t shape_hash(const struct strb_cupti_shape *s)
{
	uint64_t w[sizeof(*s) / sizeof(uint64_t)], h = 0x9e3779b97f4a7c15ull;
	memcpy(w, s, sizeof(w));
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (size_t)h;
}

static bool shapes_grow(struct strb_cupti_args *x)
{
	if (!strb_grow_array((void **)&x->shapes, &x->shapes_cap, x->nshapes + 1, sizeof(*x->shapes)))
		return false;
	if ((x->nshapes + 1) * 2 <= x->slots_cap)
		return true;
	size_t cap = x->slots_cap ? x->slots_cap * 2 : 128;
	uint32_t *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < x->nshapes; i++) {
		size_t j = shape_hash(&x->shapes[i]) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(x->shape_slots);
	x->shape_slots = slots;
	x->slots_cap = cap;
	return true;
}

uint32_t strb_cupti_shape_index(struct strb_cupti_args *x, const struct strb_cupti_shape *s)
{
	if (x->nshapes >= UINT32_MAX - 1 || !shapes_grow(x))
		return UINT32_MAX;
	size_t j = shape_hash(s) & (x->slots_cap - 1);
	for (uint32_t at; (at = x->shape_slots[j]); j = (j + 1) & (x->slots_cap - 1))
		if (strb_cupti_shape_eq(&x->shapes[at - 1], s))
			return at - 1;
	x->shapes[x->nshapes] = *s;
	x->shape_slots[j] = (uint32_t)++x->nshapes;
	return (uint32_t)x->nshapes - 1;
}

/* ---- occupancy ---------------------------------------------------------------- */

/* Threads per block; 0 for a shape no GPU runs (a dimension not positive,
 * or more threads than an int holds), which gets no occupancy. */
static uint32_t block_size(const struct strb_cupti_shape *k)
{
	if (k->block[0] <= 0 || k->block[1] <= 0 || k->block[2] <= 0)
		return 0;
	uint64_t n = (uint64_t)k->block[0] * (uint64_t)k->block[1];
	if (n > INT32_MAX)
		return 0;
	n *= (uint64_t)k->block[2];
	return n > INT32_MAX ? 0 : (uint32_t)n;
}

static bool same_shape(const struct strb_cupti_occ *e, const struct strb_cupti_shape *k)
{
	return e->used && e->device == k->device && e->regs == k->regs && e->block == block_size(k) &&
	       e->static_smem == k->static_smem && e->dynamic_smem == k->dynamic_smem;
}

static uint32_t occ_hash(uint32_t device, uint32_t regs, uint32_t block, int32_t static_smem,
                         int32_t dynamic_smem)
{
	return strb_cupti_hash32(device * 31u + regs * 7919u + block * 104729u + (uint32_t)static_smem * 13u +
	                         (uint32_t)dynamic_smem);
}

/* The slot of k's shape in the table: its entry, or the empty slot where
 * it goes. The table is never full (grown at half). */
static struct strb_cupti_occ *occ_slot(const struct strb_cupti_args *x, const struct strb_cupti_shape *k)
{
	size_t j =
	    occ_hash(k->device, k->regs, block_size(k), k->static_smem, k->dynamic_smem) & (x->occ_cap - 1);
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
		    occ_hash(e->device, e->regs, e->block, e->static_smem, e->dynamic_smem) & (cap - 1);
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
                                                  const struct strb_cupti_shape *k)
{
	uint32_t dev = k->device, block = block_size(k);
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
	    .numRegs = (int)k->regs,
	    .sharedSizeBytes = (size_t)k->static_smem,
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
	                                            (size_t)k->dynamic_smem) != CUDA_OCC_SUCCESS)
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
	*e = (struct strb_cupti_occ){
	    true,    dev, k->regs, block, k->static_smem, k->dynamic_smem, r.activeBlocksPerMultiprocessor,
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

static void kernel(const struct strb_cupti_args *x, const struct strb_cupti_kernel *r, uint64_t corr,
                   struct strb_cupti_argv *g)
{
	const struct strb_cupti_shape *k = &x->shapes[r->shape];
	strb_cupti_arg_u(g, "queued", r->queued);
	strb_cupti_placement(g, k->device, k->context, k->stream, (uint32_t)corr);
	strb_cupti_arg_i(g, "registers per thread", k->regs);
	strb_cupti_arg_i(g, "shared memory", (int64_t)k->static_smem + k->dynamic_smem);
	uint32_t dev = k->device, sms = dev < STRB_CUPTI_MAX_DEVICES ? x->sm_count[dev] : 0;
	/* In float, as libkineto computes them: the same scenario writes the
	 * same numbers (128 blocks on 132 SMs: 0.9696969985961914). */
	float blocks =
	    sms ? (float)((uint64_t)k->grid[0] * (uint64_t)k->grid[1] * (uint64_t)k->grid[2]) / (float)sms
	        : 0;
	if (sms) {
		strb_cupti_arg_f(g, "blocks per SM", blocks);
		strb_cupti_arg_f(
		    g, "warps per SM",
		    blocks * (float)((uint64_t)k->block[0] * (uint64_t)k->block[1] * (uint64_t)k->block[2]) /
		        32.0f);
	}
	arg_dims(g, "grid", k->grid[0], k->grid[1], k->grid[2]);
	arg_dims(g, "block", k->block[0], k->block[1], k->block[2]);
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
	graph_and_channel(g, k->graph_id, k->graph_node, x->has_priority ? &k->priority : NULL, k->channel,
	                  k->channel_type);
}

size_t strb_cupti_render_args(const void *ctx, const void *rec, const struct strobe_activity *a,
                              struct strb_arg_scratch *s)
{
	const struct strb_cupti_args *x = ctx;
	struct strb_cupti_argv g = {s, 0, 0};
	int64_t dur = a->end_ns - a->start_ns;
	switch (*(const uint32_t *)rec) {
	case STRB_CUPTI_REC_KERNEL:
		kernel(x, rec, a->id, &g);
		break;
	case STRB_CUPTI_REC_MEMCPY:
	case STRB_CUPTI_REC_MEMSET: {
		const struct strb_cupti_xfer *m = rec;
		strb_cupti_placement(&g, m->device, m->context, m->stream, m->corr);
		bandwidth(&g, m->bytes, dur);
		graph_and_channel(&g, m->graph_id, m->graph_node, NULL, m->channel, m->channel_type);
		break;
	}
	case STRB_CUPTI_REC_MEMCPY2: {
		const struct strb_cupti_xfer *m = rec;
		strb_cupti_arg_u(&g, "fromDevice", m->src_device);
		strb_cupti_arg_u(&g, "inDevice", m->device);
		strb_cupti_arg_u(&g, "toDevice", m->dst_device);
		strb_cupti_arg_u(&g, "fromContext", m->src_context);
		strb_cupti_arg_u(&g, "inContext", m->context);
		strb_cupti_arg_u(&g, "toContext", m->dst_context);
		strb_cupti_arg_u(&g, "stream", m->stream);
		strb_cupti_arg_u(&g, "correlation", m->corr);
		bandwidth(&g, m->bytes, dur);
		graph_and_channel(&g, m->graph_id, m->graph_node, NULL, m->channel, m->channel_type);
		break;
	}
	case STRB_CUPTI_REC_API: {
		const struct strb_cupti_api *r = rec;
		strb_cupti_arg_u(&g, "cbid", r->cbid);
		strb_cupti_arg_u(&g, "correlation", a->id);
		break;
	}
	default:
		break;
	}
	return g.n;
}

/* The args of CUPTI activities, as libkineto writes them (reference
 * §7.7). Kernels, copies, memsets and runtime/driver calls keep a compact
 * record of what their args need with the trace, and have their args
 * rendered from it when a writer reads them (trace.h, "Args rendered when
 * they are read"); the CUPTI buffers themselves become trace memory once
 * walked. The rarer records build their args at conversion with the same
 * helpers. */
#ifndef STROBE_BACKENDS_CUPTI_ARGS_H
#define STROBE_BACKENDS_CUPTI_ARGS_H

#include <cuda_occupancy.h>
#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "process/trace.h"

#define STRB_CUPTI_MAX_DEVICES 64

/* A 32-bit integer hash for the converter's tables. */
static inline uint32_t strb_cupti_hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352d;
	x ^= x >> 15;
	x *= 0x846ca68b;
	return x ^ (x >> 16);
}

/* Args being built: into a scratch array, string values into its text. */
struct strb_cupti_argv {
	struct strb_arg_scratch *s;
	size_t n, text_used;
};

static inline void strb_cupti_arg_i(struct strb_cupti_argv *g, const char *key, int64_t v)
{
	g->s->args[g->n++] = (struct strobe_arg){.key = key, .kind = STROBE_ARG_I64, .value.i64 = v};
}

static inline void strb_cupti_arg_u(struct strb_cupti_argv *g, const char *key, uint64_t v)
{
	g->s->args[g->n++] = (struct strobe_arg){.key = key, .kind = STROBE_ARG_U64, .value.u64 = v};
}

static inline void strb_cupti_arg_f(struct strb_cupti_argv *g, const char *key, double v)
{
	g->s->args[g->n++] = (struct strobe_arg){.key = key, .kind = STROBE_ARG_F64, .value.f64 = v};
}

/* A string value that outlives the scratch (a static or interned string). */
static inline void strb_cupti_arg_s(struct strb_cupti_argv *g, const char *key, const char *v)
{
	g->s->args[g->n++] = (struct strobe_arg){.key = key, .kind = STROBE_ARG_STRING, .value.str = v};
}

/* Launch shapes repeat: each one's occupancy is worked out once. */
struct strb_cupti_occ {
	bool used;
	uint32_t device, regs, block;
	int32_t static_smem, dynamic_smem;
	int active;       /* resident blocks per SM */
	const char *json; /* the "occupancy" object, interned in the trace */
};

/* The compact records an activity's args are rendered from. Each starts
 * with its tag. */
enum strb_cupti_tag {
	STRB_CUPTI_REC_KERNEL = 1,
	STRB_CUPTI_REC_API,     /* one per (runtime or driver, cbid), shared by every call */
	STRB_CUPTI_REC_MEMCPY,  /* host <-> device or within a device */
	STRB_CUPTI_REC_MEMCPY2, /* peer to peer */
	STRB_CUPTI_REC_MEMSET,
};

/* What launches of a kernel share, kept once per distinct value: in a
 * training step the same kernels run again and again with the same
 * placement and shape. Zero-filled before it is set (compared as bytes). */
struct strb_cupti_shape {
	uint32_t device, context, stream, graph_id;
	int32_t grid[3], block[3];
	int32_t static_smem, dynamic_smem, priority;
	uint32_t regs, channel, channel_type;
	uint64_t graph_node;
};
_Static_assert(sizeof(struct strb_cupti_shape) % sizeof(uint64_t) == 0, "shapes hash as whole words");

/* Whether two shapes are the same, word by word: inline, as every kernel
 * is compared at least once. */
static inline bool strb_cupti_shape_eq(const struct strb_cupti_shape *a, const struct strb_cupti_shape *b)
{
	uint64_t x[sizeof(*a) / sizeof(uint64_t)], y[sizeof(*b) / sizeof(uint64_t)], d = 0;
	memcpy(x, a, sizeof(x));
	memcpy(y, b, sizeof(y));
	for (size_t i = 0; i < sizeof(x) / sizeof(x[0]); i++)
		d |= x[i] ^ y[i];
	return !d;
}

/* A kernel: 16 bytes, against CUPTI's 208-byte record (its correlation id
 * is the activity's id). */
struct strb_cupti_kernel {
	uint32_t tag;
	uint32_t shape; /* index into strb_cupti_args.shapes */
	uint64_t queued;
};

/* A runtime or driver call: its correlation id is the activity's id. */
struct strb_cupti_api {
	uint32_t tag, cbid;
};

/* A copy or a fill. */
struct strb_cupti_xfer {
	uint32_t tag, device, context, stream, corr;
	uint32_t src_device, dst_device, src_context, dst_context; /* peer to peer */
	uint32_t graph_id, channel, channel_type;
	uint64_t bytes, graph_node;
};

#define STRB_CUPTI_API_CBIDS 1024

/* What rendering needs besides the record: read-only once conversion ends,
 * so concurrent saves can render. Owned by the trace (its arg source). */
struct strb_cupti_args {
	bool has_priority; /* kernel records carry CUDA 13.1's priority */
	uint32_t sm_count[STRB_CUPTI_MAX_DEVICES];
	struct cudaOccDeviceProp occ_prop[STRB_CUPTI_MAX_DEVICES];
	bool occ_known[STRB_CUPTI_MAX_DEVICES];
	/* Every launch shape seen, open addressing. */
	struct strb_cupti_occ *occ;
	size_t occ_cap, occ_used;
	/* Every kernel shape seen, and an open-addressing index over them
	 * (slot = shape + 1, 0 = empty). */
	struct strb_cupti_shape *shapes;
	size_t nshapes, shapes_cap;
	uint32_t *shape_slots;
	size_t slots_cap;
	/* The shared records of runtime and driver calls, by cbid. */
	struct strb_cupti_api api[2][STRB_CUPTI_API_CBIDS];
	/* Kernel records, in blocks of STRB_CUPTI_KERNEL_BLOCK. */
	struct strb_cupti_kernel **kblocks;
	size_t nkblocks, kblocks_cap, kleft;
};

#define STRB_CUPTI_KERNEL_BLOCK 2048

struct strb_cupti_args *strb_cupti_args_new(bool has_priority);
/* Frees x and its tables (an arg source's release). */
void strb_cupti_args_release(void *x);
/* Room for one more kernel record; NULL when out of memory. */
struct strb_cupti_kernel *strb_cupti_kernel_slot(struct strb_cupti_args *x);
/* The index of shape s in x's table, added when new; UINT32_MAX when out of
 * memory. */
uint32_t strb_cupti_shape_index(struct strb_cupti_args *x, const struct strb_cupti_shape *s);
/* The kernel's occupancy, worked out and noted for rendering on its
 * shape's first launch; NULL when the device's limits are unknown or on
 * allocation failure. */
const struct strb_cupti_occ *strb_cupti_occupancy(struct strb_cupti_args *x, struct strobe_trace *t,
                                                  const struct strb_cupti_shape *k);

/* Renders a kernel, copy, memset or runtime/driver call from its compact
 * record (an arg source's render). */
size_t strb_cupti_render_args(const void *x, const void *rec, const struct strobe_activity *a,
                              struct strb_arg_scratch *s);

/* The args every stream-bound record starts with. */
void strb_cupti_placement(struct strb_cupti_argv *g, uint32_t device, uint32_t context, uint32_t stream,
                          uint32_t corr);

#endif

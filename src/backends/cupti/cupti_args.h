/* The args of CUPTI activities, as libkineto writes them (reference
 * §7.7). Kernels, copies, memsets and runtime/driver calls keep their CUPTI
 * record with the trace and have their args rendered from it when a writer
 * reads them (trace.h, "Args rendered when they are read"); the rarer
 * records build theirs at conversion with the same helpers. */
#ifndef STROBE_BACKENDS_CUPTI_ARGS_H
#define STROBE_BACKENDS_CUPTI_ARGS_H

#include <cuda_occupancy.h>
#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

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
	/* The activity buffers the records live in. */
	void **kept;
	size_t nkept, kept_cap;
};

struct strb_cupti_args *strb_cupti_args_new(bool has_priority);
/* Frees x, its tables and the buffers it keeps (an arg source's release). */
void strb_cupti_args_release(void *x);
/* Room to keep n more buffers. 0 or -ENOMEM. */
int strb_cupti_args_reserve(struct strb_cupti_args *x, size_t n);
/* Keeps a buffer (malloc'd) whose records are rendered, in room reserved
 * before. */
void strb_cupti_args_keep(struct strb_cupti_args *x, void *buffer);
/* The kernel's occupancy, worked out and noted for rendering on its
 * shape's first launch; NULL when the device's limits are unknown or on
 * allocation failure. */
const struct strb_cupti_occ *strb_cupti_occupancy(struct strb_cupti_args *x, struct strobe_trace *t,
                                                  const CUpti_ActivityKernel9 *k);

/* Renders a kernel, copy, memset or runtime/driver record (an arg source's
 * render). */
size_t strb_cupti_render_args(const void *x, const void *rec, const struct strobe_activity *a,
                              struct strb_arg_scratch *s);

/* The args every stream-bound record starts with. */
void strb_cupti_placement(struct strb_cupti_argv *g, uint32_t device, uint32_t context, uint32_t stream,
                          uint32_t corr);

#endif

/* The AMD backend's process-wide state (rocprof.c) and its decoder
 * (rocprof_convert.c). */
#ifndef STROBE_BACKENDS_ROCPROF_STATE_H
#define STROBE_BACKENDS_ROCPROF_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/rocprof/rocprof_lib.h"
#include "process/gpu.h"
#include "process/gpu_buffers.h"
#include "strobe/strobe.h"

#define STRB_ROCPROF_MAX_AGENTS 64
#define STRB_ROCPROF_MAX_OPS    4096

/* What the buffer callback keeps of an SDK record (its payload is gone
 * after the callback). Times are the SDK's clock. */
enum { STRB_ROCPROF_KERNEL = 1, STRB_ROCPROF_COPY, STRB_ROCPROF_HIP };
struct strb_rocprof_rec {
	uint32_t type;
	int32_t op;
	uint64_t corr, tid, start, end;
	int32_t device, src_device, dst_device;
	uint32_t lds;
	uint64_t queue, kernel_id, bytes;
	uint32_t grid[3], block[3]; /* grid in blocks */
};

struct strb_rocprof_kernel {
	uint64_t id;
	char *name; /* mangled, as the SDK gave it */
};

struct strb_rocprof_state {
	const struct strb_rocprof_lib *lib;
	struct strb_gpu_pool pool;
	struct strb_gpu_pauses pauses;
	pthread_mutex_t lock; /* kernels */
	struct strb_rocprof_kernel *kernels;
	size_t nkernels, kernels_cap;
	pthread_mutex_t buf_lock; /* cur */
	uint8_t *cur;
	size_t cur_valid, cur_size;
	uint64_t bad_records;
	bool configured, initialized, ready, finalized, running;
	char init_why[256];
	rocp_context_id_t util, main;
	rocp_buffer_id_t buf;
	int nagents;
	uint64_t agent_handle[STRB_ROCPROF_MAX_AGENTS];
	int32_t agent_ordinal[STRB_ROCPROF_MAX_AGENTS];
	char *op_names[STRB_ROCPROF_MAX_OPS];
	uint64_t mask;
	int64_t offset; /* strobe clock ns - SDK ns */
};

extern struct strb_rocprof_state strb_rocprof;

/* What rocprofiler_configure answers (libstrobe_inject.so forwards to it). */
rocp_configure_result_t *strb_rocprof_configure(uint32_t version, const char *runtime_version,
                                                uint32_t priority, rocp_client_id_t *id);

/* The same, for libstrobe_inject.so's rocprofiler_configure (STROBE_PRIVATE
 * in src/libstrobe.map; src/inject/inject.c declares it too). */
STROBE_API void *strobe_internal_inject_rocprof(uint32_t version, const char *runtime_version,
                                                uint32_t priority, void *client_id);

/* Decodes the kept records into the trace. */
int strb_rocprof_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *b);

#endif

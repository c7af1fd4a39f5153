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

/* What the callbacks keep of an SDK record (its payload is gone after the
 * callback). Kernel and copy times are the SDK's clock; HIP calls and roctx
 * are stamped with strobe's clock in their callbacks. A roctx message
 * follows its record; len is the whole, 8-byte aligned. */
enum {
	STRB_ROCPROF_KERNEL = 1,
	STRB_ROCPROF_COPY,
	STRB_ROCPROF_HIP,
	STRB_ROCPROF_MARK,
	STRB_ROCPROF_PUSH,
	STRB_ROCPROF_POP,
	STRB_ROCPROF_START, /* roctxRangeStartA: the range id in queue */
	STRB_ROCPROF_STOP,  /* roctxRangeStop: the range id in queue */
};
struct strb_rocprof_rec {
	uint16_t type, len;
	int32_t op;
	uint64_t corr, tid, start, end;
	int32_t device, src_device, dst_device;
	uint32_t lds;
	uint64_t queue, kernel_id, bytes;
	uint64_t stream;            /* HIP calls: the hipStream_t argument; GPU work: its row */
	uint64_t ext;               /* HIP calls: the SDK's external id (strobe_correlation_push) */
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
	/* The main context exists and the SDK has external correlation:
	 * strobe_correlation_push ids go onto its stacks (atomic). */
	bool ext_on;
	/* A trace waits for the SDK (strobe record: the program's HIP runtime
	 * loads it later and calls rocprofiler_configure); wanted: the trace
	 * runs, so initialize starts the main context. Under ctl_lock. */
	bool pending, wanted;
	pthread_mutex_t ctl_lock;
	char init_why[256];
	rocp_context_id_t util, main;
	rocp_buffer_id_t buf;
	int nagents;
	uint64_t agent_handle[STRB_ROCPROF_MAX_AGENTS];
	int32_t agent_ordinal[STRB_ROCPROF_MAX_AGENTS];
	char agent_name[STRB_ROCPROF_MAX_AGENTS][64]; /* e.g. "gfx90a" */
	char *op_names[STRB_ROCPROF_MAX_OPS];
	uint8_t op_flags[STRB_ROCPROF_MAX_OPS]; /* STRB_ROCPROF_OP_*, by name, once */
	int32_t hip_ops[STRB_ROCPROF_MAX_OPS];  /* traced: all but the deny list */
	size_t nhip_ops;
	uint64_t mask;
	/* SDK clock (BOOTTIME) against strobe's at start and stop: a reading of
	 * rocprofiler_get_timestamp bracketed by two of strobe's clock. */
	uint64_t sdk_at[2], strobe_at[2];
};

extern struct strb_rocprof_state strb_rocprof;

/* What rocprofiler_configure answers (libstrobe_inject.so forwards to it). */
rocp_configure_result_t *strb_rocprof_configure(uint32_t version, const char *runtime_version,
                                                uint32_t priority, rocp_client_id_t *id);

/* The same, for libstrobe_inject.so's rocprofiler_configure (STROBE_PRIVATE
 * in src/libstrobe.map; src/inject/inject.c declares it too). */
STROBE_API void *strobe_internal_inject_rocprof(uint32_t version, const char *runtime_version,
                                                uint32_t priority, void *client_id);

/* What a HIP call is, by its name: one libkineto leaves out (hipGetDevice
 * and the like), one that starts an ac2g arrow, a kernel launch. */
enum {
	STRB_ROCPROF_OP_DENIED = 1,
	STRB_ROCPROF_OP_FLOW = 2,
	STRB_ROCPROF_OP_LAUNCH = 4,
};
uint8_t strb_rocprof_classify(const char *name);

/* Decodes the kept records into the trace. */
int strb_rocprof_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *b);

#endif

/* The budgeted record buffers every GPU backend shares: a vendor library
 * asks for a buffer, fills it on its own thread and hands it back; the
 * backend takes the completed ones at processing.
 *
 * Threads: strb_gpu_pool_request and strb_gpu_pool_complete run on the
 * vendor's threads (its buffer callbacks) at any time; every other call
 * comes from the thread driving the trace (the backend's prepare, start,
 * stop, process, release). The pool's lock guards the lists and counts;
 * `active` is read without it. */
#ifndef STROBE_PROCESS_GPU_BUFFERS_H
#define STROBE_PROCESS_GPU_BUFFERS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/capture.h"
#include "process/trace.h"

/* A completed buffer: data is malloc'ed (16-byte aligned, so reusable as
 * trace memory); NULL once processing handed it to the trace. */
struct strb_gpu_buffer {
	uint8_t *data;
	size_t valid, size;
	struct strb_gpu_buffer *next;
};

/* Counts that end up in the trace's "strobe" accounting. */
struct strb_gpu_pool_counts {
	uint64_t rejected_buffers;  /* requests refused: budget exhausted */
	uint64_t discarded_buffers; /* completed after the budget ran out, or after release */
	uint64_t dropped_records;   /* the vendor library's own drops */
	uint64_t warmup_records;    /* collected before the window, discarded */
	uint64_t aged_buffers;      /* flight mode: the oldest completed buffers, recycled */
};

struct strb_gpu_pool {
	pthread_mutex_t lock;
	struct strb_gpu_buffer *ready, **ready_tail;
	size_t outstanding, buffer_bytes;
	size_t used, cap; /* bytes of the buffers requested and kept, and their budget */
	bool can_reject, stopped_early;
	bool rotate; /* flight mode: at the budget, recycle the oldest completed buffers, and keep a
	              * buffer that comes back partly filled in memory of its size */
	bool active; /* taking part in the current trace (atomic) */
	struct strb_gpu_pool_counts counts;
};

#define STRB_GPU_POOL_INIT(pool)                                                                             \
	{                                                                                                    \
		.lock = PTHREAD_MUTEX_INITIALIZER, .ready_tail = &(pool).ready                               \
	}

/* A trace is prepared: buffers of buffer_bytes (in flight mode at most a
 * quarter of the budget, and not below 256 KiB: callers take the size
 * strb_gpu_pool_request gives) from a budget of budget_bytes (at least one
 * buffer); can_reject says whether the vendor survives a refused request
 * (else it gets memory and the records are discarded when the buffer comes
 * back). Zeroes the counts; active. */
void strb_gpu_pool_begin(struct strb_gpu_pool *p, uint64_t budget_bytes, size_t buffer_bytes,
                         bool can_reject);
void strb_gpu_pool_set_active(struct strb_gpu_pool *p, bool active);
/* Flight mode for the pools begun next (the controller sets it before the
 * backends prepare): a pool at its budget frees its oldest completed
 * buffer for a new one, so GPU records rotate like the CPU rings. */
void strb_gpu_pool_set_rotate_next(bool rotate);
/* A deep copy of the completed buffers, left in the pool (a flight dump
 * decodes the copy); free it with strb_gpu_pool_free_copy. NULL when there
 * are none or memory is short (*failed set then). */
struct strb_gpu_buffer *strb_gpu_pool_copy(struct strb_gpu_pool *p, bool *failed);
void strb_gpu_pool_free_copy(struct strb_gpu_buffer *b);
struct strb_window;
/* A flight dump's decoding: convert (the backend's own, as its process
 * uses) over a copy of the completed buffers, which stay in the pool.
 * Returns convert's result, or -ENOMEM. */
typedef int (*strb_gpu_convert_fn)(struct strobe_trace *t, const struct strb_window *w,
                                   struct strb_gpu_buffer *b);
int strb_gpu_pool_decode_copy(struct strb_gpu_pool *p, strb_gpu_convert_fn convert, struct strobe_trace *t,
                              const struct strb_window *w);
bool strb_gpu_pool_active(const struct strb_gpu_pool *p);

/* Vendor thread: a buffer of *size bytes, or NULL (*size 0) when refused
 * or out of memory. Warns once per trace when the budget runs out. */
uint8_t *strb_gpu_pool_request(struct strb_gpu_pool *p, size_t *size);
/* Vendor thread: a requested buffer comes back with valid bytes filled.
 * Kept when the pool is active and within budget, else freed. */
void strb_gpu_pool_complete(struct strb_gpu_pool *p, uint8_t *data, size_t valid);

/* Buffers requested and not yet back. */
size_t strb_gpu_pool_outstanding(struct strb_gpu_pool *p);
/* Every completed buffer, in completion order; free with
 * strb_gpu_pool_free (which returns them to the budget). */
struct strb_gpu_buffer *strb_gpu_pool_take(struct strb_gpu_pool *p);
void strb_gpu_pool_free(struct strb_gpu_pool *p, struct strb_gpu_buffer *b);
void strb_gpu_pool_add_dropped(struct strb_gpu_pool *p, uint64_t records);
void strb_gpu_pool_add_warmup(struct strb_gpu_pool *p, uint64_t records);
/* Adds the counts to the trace's accounting (which sums every backend's). */
void strb_gpu_pool_account(struct strb_gpu_pool *p, struct strb_trace_stats *st);
/* In a fork child: forget every buffer (the vendor's threads are gone). */
void strb_gpu_pool_atfork_child(struct strb_gpu_pool *p);

/* Correlation hooks: each backend forwards strobe_correlation_push / pop
 * ids to its own vendor's external-correlation API through a hook of its
 * own (see strb_correlation_hook in core/capture.h), set in its slot from
 * the thread driving the trace (prepare; NULL in a fork child). Capture
 * calls one hook, which calls every backend's on the pushing thread; a
 * push is taken when any backend takes it, and its pop goes to exactly the
 * backends that took it (remembered per thread, 256 levels deep: a deeper
 * push is handed back and not taken). */
enum strb_gpu_vendor {
	STRB_GPU_CUDA,
	STRB_GPU_ROCM,
	STRB_GPU_XPU,
	STRB_GPU_VENDORS,
};
void strb_gpu_set_correlation_hook(enum strb_gpu_vendor vendor, strb_correlation_hook hook);

#endif

/* State shared by the CUPTI collector and the record converter. */
#ifndef STROBE_BACKENDS_CUPTI_STATE_H
#define STROBE_BACKENDS_CUPTI_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/cupti/cupti_lib.h"
#include "process/gpu.h"
#include "process/gpu_buffers.h"

struct strb_cupti_state {
	const struct strb_cupti_lib *lib;
	/* CUPTI's buffers, from the shared budget; pool.active: taking part
	 * in the current trace. */
	struct strb_gpu_pool pool;

	bool subscribed;
	CUpti_SubscriberHandle subscriber;
	uint64_t mask; /* selected strobe activity types */
	bool show_wait_events;
	CUpti_ActivityKind kinds[16];
	int kind_count;

	bool dumping; /* converting for a flight dump */

	/* Paused intervals (strobe_toggle_collection), in CUPTI ns. */
	struct strb_gpu_pauses pauses;
};

extern struct strb_cupti_state strb_cupti;

struct strobe_trace;
struct strb_window;
/* Pass over the buffers: activities, rows, accounting. Buffers it is done
 * with become trace memory (their data pointer is cleared); the caller still
 * frees the list. */
int strb_cupti_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *buffers);

#endif

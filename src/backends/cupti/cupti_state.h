/* State shared by the CUPTI collector and the record converter. */
#ifndef STROBE_BACKENDS_CUPTI_STATE_H
#define STROBE_BACKENDS_CUPTI_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backends/cupti/cupti_lib.h"
#include "process/gpu.h"

/* A completed activity buffer. */
struct strb_cupti_buffer {
	uint8_t *data; /* malloc'd; NULL once conversion handed it to the trace */
	size_t valid, size;
	struct strb_cupti_buffer *next;
};

/* Counts that end up in the trace's "strobe" accounting. */
struct strb_cupti_counts {
	uint64_t rejected_buffers;  /* requests refused: budget exhausted */
	uint64_t discarded_buffers; /* completed after the budget ran out (old CUPTI) */
	uint64_t dropped_records;   /* cuptiActivityGetNumDroppedRecords */
	uint64_t warmup_records;    /* collected before the window, discarded */
	uint64_t bad_records;       /* a buffer walk stopped on an invalid kind */
};

struct strb_cupti_state {
	const struct strb_cupti_lib *lib;
	pthread_mutex_t lock; /* the buffer lists and counts below */
	struct strb_cupti_buffer *ready, **ready_tail;
	size_t outstanding, in_use, max_buffers;
	bool can_reject, stopped_early;
	struct strb_cupti_counts counts;

	bool active; /* taking part in the current trace */
	bool subscribed;
	CUpti_SubscriberHandle subscriber;
	uint64_t mask; /* selected strobe activity types */
	bool show_wait_events;
	CUpti_ActivityKind kinds[16];
	int kind_count;

	/* Paused intervals (strobe_toggle_collection), in CUPTI ns. */
	struct strb_gpu_pauses pauses;
};

extern struct strb_cupti_state strb_cupti;

/* Takes every completed buffer (the caller frees them with
 * strb_cupti_free_buffers). */
struct strb_cupti_buffer *strb_cupti_take_buffers(void);
void strb_cupti_free_buffers(struct strb_cupti_buffer *b);

struct strobe_trace;
struct strb_window;
/* Pass over the buffers: activities, rows, accounting. Buffers it is done
 * with become trace memory (their data pointer is cleared); the caller still
 * frees the list. */
int strb_cupti_convert(struct strobe_trace *t, const struct strb_window *w,
                       struct strb_cupti_buffer *buffers);

#endif

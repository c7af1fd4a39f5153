/* The Intel XPU backend's process-wide state (pti.c) and its decoder
 * (pti_convert.c). */
#ifndef STROBE_BACKENDS_PTI_STATE_H
#define STROBE_BACKENDS_PTI_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/pti/pti_lib.h"
#include "process/gpu.h"
#include "process/gpu_buffers.h"

#define STRB_PTI_MAX_VIEWS 16

struct strb_pti_state {
	const struct strb_pti_lib *lib;
	/* PTI's buffers, from the shared budget; pool.active: taking part in
	 * the current trace. */
	struct strb_gpu_pool pool;
	/* Paused intervals (strobe_toggle_collection), in strobe's clock. */
	struct strb_gpu_pauses pauses;
	uint64_t mask; /* selected strobe activity types */
	pti_view_kind_t views[STRB_PTI_MAX_VIEWS];
	int nviews;
	bool enabled;   /* views[] are enabled in PTI */
	bool attempted; /* this trace selected XPU types and found the library */
	/* Names of the copy types (PTI_VIEW_MEMCPY_TYPE) and memory types, from
	 * the library when it has them ("M2D", "DEVICE"). */
	char memcpy_type[16][8];
	char memory_type[4][16];
	/* Intel display-class PCI devices on this machine (sysfs), sorted:
	 * device indexes follow this order (pti_convert.c). */
	char pci[STRB_GPU_MAX_DEVICES][PTI_MAX_PCI_ADDRESS_SIZE];
	int npci;
};

extern struct strb_pti_state strb_pti;

/* Decodes the completed buffers into the trace (pass 1 and 2 of the GPU
 * layer). */
int strb_pti_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *b);

#endif

/* CUPTI's memory records (MEMORY2 allocations and frees, MEMORY_POOL pool
 * events) -> "[memory]" instants and a per-device "GPU memory allocated
 * (bytes)" counter, in time order, starting from the device's level at
 * trace start. */
#ifndef STROBE_BACKENDS_CUPTI_MEMORY_H
#define STROBE_BACKENDS_CUPTI_MEMORY_H

#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

#include "process/gpu.h"

/* The counter track's name (and its one series). */
#define STRB_GPU_MEMORY_TRACK "GPU memory allocated (bytes)"

struct strb_cupti_mem_ev;
struct strb_cupti_mem {
	struct strb_cupti_mem_ev *ev;
	size_t n, cap;
};

/* Pass 2: a record inside the window (and not paused) is kept for emit. */
void strb_cupti_mem_add(struct strb_cupti_mem *m, struct strb_gpu *g, const CUpti_ActivityMemory4 *r);
void strb_cupti_mem_add_pool(struct strb_cupti_mem *m, struct strb_gpu *g,
                             const CUpti_ActivityMemoryPool3 *r);

/* Writes what was kept, in time order; uuid[d] (uuid_known[d]) names
 * device d for its start level, unless unknown says why no level applies
 * (a flight dump). Adds the "gpu_memory_start" metadata. */
void strb_cupti_mem_emit(struct strb_cupti_mem *m, struct strb_gpu *g, const unsigned char (*uuid)[16],
                         const bool *uuid_known, int ndev, const char *unknown);
void strb_cupti_mem_free(struct strb_cupti_mem *m);

#endif

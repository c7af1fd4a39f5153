/* The CUDA driver and runtime of the process, as libkineto reads them for a
 * trace's "cuda_driver_version", "cuda_runtime_version" and
 * "deviceProperties". strobe never loads or initialises CUDA: it uses what
 * the program has loaded (the driver's libcuda.so.1, the runtime's
 * libcudart.so.N), and nothing when the program has not. */
#ifndef STROBE_BACKENDS_CUPTI_CUDA_H
#define STROBE_BACKENDS_CUPTI_CUDA_H

#include <stdbool.h>
#include <stdint.h>

/* One device's limits, named as in libkineto's deviceProperties (from
 * cudaDeviceProp there, from CUPTI's DEVICE record or the driver's device
 * attributes here). */
struct strb_cuda_device {
	bool known;       /* filled from either source */
	bool optin_known; /* shared_per_block_optin: the driver's attribute only */
	bool uuid_known;
	char name[256];
	uint64_t total_mem;
	int major, minor;
	int threads_per_block, threads_per_sm, regs_per_block, warp_size;
	int shared_per_block, sm_count, regs_per_sm, shared_per_block_optin, shared_per_sm;
	int reserved_shared_per_block; /* the driver's only; 0 when unknown */
	unsigned char uuid[16];
};

/* cuDriverGetVersion and cudaRuntimeGetVersion (e.g. 13000), each 0 when the
 * program has not loaded that library or the call fails. Neither call
 * initialises CUDA. */
void strb_cuda_versions(int *driver, int *runtime);

/* Fills out[0..max) with the driver's devices (ordinal = index) and returns
 * how many it reports, or -1 when the driver is not loaded or not
 * initialised (the program has not used CUDA yet; strobe does not call
 * cuInit for it). */
int strb_cuda_devices(struct strb_cuda_device *out, int max);

#endif

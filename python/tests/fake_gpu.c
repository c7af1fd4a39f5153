/* A "GPU" for test_cupti.py: a cudaLaunchKernel call and the kernel it ran,
 * produced through the fake libcupti (tests/fakes/fake_cupti.h) that
 * strobe's CUPTI backend loads from STROBE_CUPTI_PATH, with the C tests'
 * record builders. */
#include <stdint.h>

#include "test_cupti_common.h"

uint32_t fake_gpu_launch(const char *kernel_name);

/* The call on the calling thread, then its kernel on device 0, stream 7;
 * kernel_name must outlive the trace's stop. Returns the correlation id. */
uint32_t fake_gpu_launch(const char *kernel_name)
{
	uint64_t s = fake_cupti_now();
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME,
	                               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, s, s + 1000);
	CUpti_ActivityKernel10 k = ct_kernel(corr, 0, 7, s + 2000, s + 9000, kernel_name);
	fake_cupti_queue(&k, sizeof(k));
	return corr;
}

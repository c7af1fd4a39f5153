/* Plays the CUDA driver for `strobe record` tests without a GPU: loads
 * CUDA_INJECTION64_PATH and calls its InitializeInjection as cuInit does
 * (twice: a second cuInit must be harmless), then "runs" a kernel through
 * the fake libcupti: a cudaLaunchKernel API record and the kernel record
 * with the same correlation id.
 *
 * With the argument "crash" the launch happens inside an op "train_step"
 * (strobe_op_push from the injected library), and the program then waits
 * 500 ms (the flight recorder's GPU snapshots run meanwhile) and dies of
 * SIGSEGV inside the op. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cupti.h"

/* Unmapped, but not null: UBSan would stop a null store itself. */
static int *volatile nowhere = (int *)16;

int main(int argc, char **argv)
{
	int crash = argc > 1 && !strcmp(argv[1], "crash");
	const char *path = getenv("CUDA_INJECTION64_PATH");
	void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (!init) {
		fprintf(stderr, "cuda_driver: no InitializeInjection in '%s': %s\n", path ? path : "(unset)",
		        dlerror());
		return 3;
	}
	int first = init(), second = init();
	uint64_t (*op_push)(const char *) = (uint64_t(*)(const char *))dlsym(h, "strobe_op_push");
	if (crash && !op_push) {
		fprintf(stderr, "cuda_driver: no strobe_op_push in '%s'\n", path);
		return 3;
	}
	if (crash)
		op_push("train_step");
	uint64_t s = fake_cupti_now();
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME,
	                               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, s, s + 2000);
	CUpti_ActivityKernel10 k = {
	    .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	    .start = s + 5000,
	    .end = s + 25000,
	    .deviceId = 0,
	    .contextId = 1,
	    .streamId = 7,
	    .gridX = 1,
	    .gridY = 1,
	    .gridZ = 1,
	    .blockX = 128,
	    .blockY = 1,
	    .blockZ = 1,
	    .correlationId = corr,
	    .name = "_Z12injected_addPfS_",
	    .channelID = 0xffffffffu,
	};
	fake_cupti_queue(&k, fake_cupti_record_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	/* cudaDeviceSynchronize: the kernel has ended before the program goes on. */
	while (fake_cupti_now() < k.end)
		;
	printf("InitializeInjection returned %d and %d\n", first, second);
	if (crash) {
		fflush(stdout);
		usleep(500000);
		*nowhere = 1;
	}
	return 0;
}

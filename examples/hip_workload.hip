// A small HIP workload traced through strobe's C API: two streams, kernels,
// copies both ways, a memset and an event wait across streams, inside
// strobe ops and ranges (so the GPU work links back to them) and roctx
// ranges and marks (so they show as user annotations).
//
//   hip_workload [-o OUTPUT] [-i ITERATIONS] [-l LAUNCHES] [--no-trace]
//
// With -l it also runs a launch-bound loop of LAUNCHES empty kernels and
// prints its time per launch (for overhead measurements). Prints the
// number of kernel launches and copies it made, for checks
// (tests/gpu/amd/run.sh). Built by examples/CMakeLists.txt when hipcc is
// found; roctx when librocprofiler-sdk-roctx is (HIP_WORKLOAD_ROCTX).
#include <hip/hip_runtime.h>
#ifndef HIP_WORKLOAD_ROCTX
#define HIP_WORKLOAD_ROCTX 0
#endif
#if HIP_WORKLOAD_ROCTX
#include <rocprofiler-sdk-roctx/roctx.h>
#else
#define roctxRangePushA(message) 0
#define roctxRangePop()          0
#define roctxMarkA(message)      ((void)0)
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <strobe/strobe.h>

#define CHECK(call)                                                                                          \
	do {                                                                                                 \
		hipError_t e_ = (call);                                                                      \
		if (e_ != hipSuccess) {                                                                      \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                        \
			        hipGetErrorString(e_));                                                      \
			exit(1);                                                                             \
		}                                                                                            \
	} while (0)

__global__ void scale(float *x, float a, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= a;
}

__global__ void add(float *y, const float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		y[i] += x[i];
}

__global__ void empty_kernel(void)
{
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *out = "hip_workload.json.gz";
	int iterations = 10, launches = 0, trace = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-i") && i + 1 < argc)
			iterations = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-l") && i + 1 < argc)
			launches = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-trace"))
			trace = 0;
		else {
			fprintf(stderr, "usage: %s [-o OUTPUT] [-i ITERATIONS] [-l LAUNCHES] [--no-trace]\n",
			        argv[0]);
			return 2;
		}
	}
	// The first HIP call starts the runtime, which loads rocprofiler-sdk
	// and initialises the tools that export rocprofiler_configure (strobe).
	const int n = 1 << 20;
	float *h, *d0, *d1;
	CHECK(hipHostMalloc((void **)&h, n * sizeof(float), hipHostMallocDefault));
	CHECK(hipMalloc((void **)&d0, n * sizeof(float)));
	CHECK(hipMalloc((void **)&d1, n * sizeof(float)));
	for (int i = 0; i < n; i++)
		h[i] = 1.0f;
	hipStream_t s0, s1;
	CHECK(hipStreamCreate(&s0));
	CHECK(hipStreamCreate(&s1));
	hipEvent_t ready;
	CHECK(hipEventCreate(&ready));
	CHECK(hipDeviceSynchronize());

	if (trace && (strobe_init(NULL) || strobe_prepare(0, NULL) || strobe_start())) {
		fprintf(stderr, "strobe: %s\n", strobe_last_error());
		return 1;
	}
	int kernels = 0, copies = 0;
	for (int it = 0; it < iterations; it++) {
		strobe_range_push("iteration");
		(void)roctxRangePushA("roctx iteration");
		strobe_op_push("upload");
		CHECK(hipMemcpyAsync(d0, h, n * sizeof(float), hipMemcpyHostToDevice, s0));
		copies++;
		CHECK(hipMemsetAsync(d1, 0, n * sizeof(float), s1));
		strobe_op_pop();
		strobe_op_push("compute");
		hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, s0, d0, 2.0f, n);
		kernels++;
		CHECK(hipEventRecord(ready, s0));
		CHECK(hipStreamWaitEvent(s1, ready, 0));
		hipLaunchKernelGGL(add, dim3(n / 256), dim3(256), 0, s1, d1, d0, n);
		kernels++;
		hipLaunchKernelGGL(scale, dim3(n / 256), dim3(256), 0, s1, d1, 0.5f, n);
		kernels++;
		CHECK(hipGetLastError());
		strobe_op_pop();
		roctxMarkA("compute launched");
		strobe_op_push("download");
		CHECK(hipMemcpyAsync(h, d1, n * sizeof(float), hipMemcpyDeviceToHost, s1));
		copies++;
		CHECK(hipStreamSynchronize(s1));
		strobe_op_pop();
		(void)roctxRangePop();
		strobe_range_pop();
	}
	double per_launch_us = 0;
	if (launches > 0) {
		strobe_op_push("launch_loop");
		CHECK(hipDeviceSynchronize());
		double t0 = now_s();
		for (int i = 0; i < launches; i++)
			hipLaunchKernelGGL(empty_kernel, dim3(1), dim3(1), 0, s0);
		CHECK(hipStreamSynchronize(s0));
		per_launch_us = (now_s() - t0) / launches * 1e6;
		kernels += launches;
		strobe_op_pop();
	}
	CHECK(hipDeviceSynchronize());
	if (trace) {
		strobe_trace *t = NULL;
		if (strobe_stop(&t) || strobe_trace_save(t, out)) {
			fprintf(stderr, "strobe: %s\n", strobe_last_error());
			return 1;
		}
		strobe_trace_destroy(t);
	}
	printf("kernels %d\n", kernels);
	printf("copies %d\n", copies);
	printf("roctx_ranges %d\n", HIP_WORKLOAD_ROCTX ? iterations : 0);
	if (launches > 0)
		printf("launch_us %.3f\n", per_launch_us);
	CHECK(hipEventDestroy(ready));
	CHECK(hipStreamDestroy(s0));
	CHECK(hipStreamDestroy(s1));
	CHECK(hipFree(d0));
	CHECK(hipFree(d1));
	CHECK(hipHostFree(h));
	return 0;
}

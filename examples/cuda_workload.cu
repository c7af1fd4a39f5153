// A small CUDA workload traced through strobe's C API: several streams,
// kernels, copies both ways, a memset, an event wait across streams and a
// CUDA graph, inside strobe ops and ranges so the GPU work links back.
//
//   cuda_workload [-o OUTPUT] [-i ITERATIONS] [-l LAUNCHES] [--no-trace]
//
// With -l it also runs a launch-bound loop of LAUNCHES empty kernels and
// prints its time per launch (for overhead measurements). Prints the
// number of kernel launches it made, for checks.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <strobe/strobe.h>

#define CHECK(call)                                                                              \
	do {                                                                                     \
		cudaError_t e_ = (call);                                                         \
		if (e_ != cudaSuccess) {                                                         \
			fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
				cudaGetErrorString(e_));                                         \
			exit(1);                                                                 \
		}                                                                                \
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
	const char *out = "cuda_workload.json.gz";
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
			fprintf(stderr, "usage: %s [-o OUTPUT] [-i ITERATIONS] [-l LAUNCHES] [--no-trace]\n", argv[0]);
			return 2;
		}
	}
	const int n = 1 << 20;
	float *h, *d0, *d1;
	CHECK(cudaMallocHost(&h, n * sizeof(float)));
	CHECK(cudaMalloc(&d0, n * sizeof(float)));
	CHECK(cudaMalloc(&d1, n * sizeof(float)));
	for (int i = 0; i < n; i++)
		h[i] = 1.0f;
	cudaStream_t s0, s1;
	CHECK(cudaStreamCreate(&s0));
	CHECK(cudaStreamCreate(&s1));
	cudaEvent_t ready;
	CHECK(cudaEventCreate(&ready));

	// A graph of two kernels, captured once.
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	scale<<<n / 256, 256, 0, s1>>>(d1, 0.5f, n);
	add<<<n / 256, 256, 0, s1>>>(d1, d0, n);
	CHECK(cudaStreamEndCapture(s1, &graph));
	CHECK(cudaGraphInstantiate(&exec, graph, 0));
	CHECK(cudaDeviceSynchronize());

	if (trace && (strobe_init(NULL) || strobe_prepare(0, NULL) || strobe_start())) {
		fprintf(stderr, "strobe: %s\n", strobe_last_error());
		return 1;
	}
	int kernels = 0;
	for (int it = 0; it < iterations; it++) {
		strobe_range_push("iteration");
		strobe_op_push("upload");
		CHECK(cudaMemcpyAsync(d0, h, n * sizeof(float), cudaMemcpyHostToDevice, s0));
		CHECK(cudaMemsetAsync(d1, 0, n * sizeof(float), s1));
		strobe_op_pop();
		strobe_op_push("compute");
		scale<<<n / 256, 256, 0, s0>>>(d0, 2.0f, n);
		kernels++;
		CHECK(cudaEventRecord(ready, s0));
		CHECK(cudaStreamWaitEvent(s1, ready, 0));
		add<<<n / 256, 256, 0, s1>>>(d1, d0, n);
		kernels++;
		CHECK(cudaGraphLaunch(exec, s1));
		kernels += 2;
		strobe_op_pop();
		strobe_op_push("download");
		CHECK(cudaMemcpyAsync(h, d1, n * sizeof(float), cudaMemcpyDeviceToHost, s1));
		CHECK(cudaStreamSynchronize(s1));
		strobe_op_pop();
		strobe_range_pop();
	}
	double per_launch_us = 0;
	if (launches > 0) {
		strobe_op_push("launch_loop");
		CHECK(cudaDeviceSynchronize());
		double t0 = now_s();
		for (int i = 0; i < launches; i++)
			empty_kernel<<<1, 1, 0, s0>>>();
		CHECK(cudaStreamSynchronize(s0));
		per_launch_us = (now_s() - t0) / launches * 1e6;
		kernels += launches;
		strobe_op_pop();
	}
	CHECK(cudaDeviceSynchronize());
	if (trace) {
		strobe_trace *t = NULL;
		if (strobe_stop(&t) || strobe_trace_save(t, out)) {
			fprintf(stderr, "strobe: %s\n", strobe_last_error());
			return 1;
		}
		strobe_trace_destroy(t);
	}
	printf("kernels %d\n", kernels);
	if (launches > 0)
		printf("launch_us %.3f\n", per_launch_us);
	return 0;
}

// A small SYCL workload traced through strobe's C API: two in-order queues
// on one Intel GPU, kernels on both, USM copies both ways and a memset, and
// a kernel on the second queue that waits for one on the first, inside
// strobe ops and ranges (so the GPU work links back to them).
//
//   sycl_workload [-o OUTPUT] [-i ITERATIONS] [-l LAUNCHES] [--no-trace]
//
// With -l it also runs a launch-bound loop of LAUNCHES empty kernels and
// prints its time per launch (for overhead measurements). Prints the
// device, and the number of kernels, copies and fills it submitted, for
// checks (tests/gpu/xpu/run.sh). Built by examples/CMakeLists.txt when
// icpx (oneAPI DPC++) is found.
#include <sycl/sycl.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include <strobe/strobe.h>

// Kernels as named function objects: the kernel's name in the trace is
// the type's, and scale runs twice per iteration, as in the HIP example.
struct scale {
	float *x;
	float a;
	void operator()(sycl::id<1> i) const
	{
		x[i] *= a;
	}
};

struct add {
	float *y;
	const float *x;
	void operator()(sycl::id<1> i) const
	{
		y[i] += x[i];
	}
};

class empty_kernel;

static int run(const char *out, int iterations, int launches, bool trace)
{
	// Tracing starts before the first queue, so PTI is set up before the
	// SYCL runtime initialises Level Zero.
	if (trace && (strobe_init(NULL) || strobe_prepare(0, NULL) || strobe_start())) {
		std::fprintf(stderr, "strobe: %s\n", strobe_last_error());
		return 1;
	}
	auto on_async_error = [](sycl::exception_list errors) {
		for (const std::exception_ptr &e : errors)
			std::rethrow_exception(e);
	};
	const sycl::property_list in_order{sycl::property::queue::in_order{}};
	sycl::queue q0{sycl::gpu_selector_v, on_async_error, in_order};
	sycl::queue q1{q0.get_context(), q0.get_device(), on_async_error, in_order};
	sycl::device dev = q0.get_device();
	std::printf("device %s (driver %s)\n", dev.get_info<sycl::info::device::name>().c_str(),
	            dev.get_info<sycl::info::device::driver_version>().c_str());

	const size_t n = 1 << 20, bytes = n * sizeof(float);
	float *h = sycl::malloc_host<float>(n, q0);
	float *d0 = sycl::malloc_device<float>(n, q0);
	float *d1 = sycl::malloc_device<float>(n, q0);
	if (!h || !d0 || !d1) {
		std::fprintf(stderr, "sycl_workload: USM allocation failed\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		h[i] = 1.0f;
	q0.wait();

	int kernels = 0, copies = 0, fills = 0;
	for (int it = 0; it < iterations; it++) {
		strobe_range_push("iteration");
		strobe_op_push("upload");
		q0.memcpy(d0, h, bytes);
		copies++;
		q1.memset(d1, 0, bytes);
		fills++;
		strobe_op_pop();

		strobe_op_push("compute");
		sycl::event scaled = q0.parallel_for(sycl::range<1>(n), scale{d0, 2.0f});
		kernels++;
		// On the other queue, after the kernel on the first.
		q1.parallel_for(sycl::range<1>(n), scaled, add{d1, d0});
		kernels++;
		q1.parallel_for(sycl::range<1>(n), scale{d1, 0.5f});
		kernels++;
		strobe_op_pop();

		strobe_op_push("download");
		q1.memcpy(h, d1, bytes);
		copies++;
		q1.wait_and_throw();
		strobe_op_pop();
		strobe_range_pop();
	}
	double per_launch_us = 0;
	if (launches > 0) {
		strobe_op_push("launch_loop");
		q0.wait_and_throw();
		auto t0 = std::chrono::steady_clock::now();
		for (int i = 0; i < launches; i++)
			q0.single_task<empty_kernel>([]() {});
		q0.wait_and_throw();
		std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - t0;
		per_launch_us = took.count() / launches;
		kernels += launches;
		strobe_op_pop();
	}
	q0.wait_and_throw();
	q1.wait_and_throw();
	if (trace) {
		strobe_trace *t = NULL;
		if (strobe_stop(&t) || strobe_trace_save(t, out)) {
			std::fprintf(stderr, "strobe: %s\n", strobe_last_error());
			return 1;
		}
		strobe_trace_destroy(t);
	}
	std::printf("kernels %d\n", kernels);
	std::printf("copies %d\n", copies);
	std::printf("fills %d\n", fills);
	if (launches > 0)
		std::printf("launch_us %.3f\n", per_launch_us);
	int wrong = 0; // each iteration leaves (0 + 1 * 2) * 0.5 = 1 in h
	for (size_t i = 0; i < n && iterations > 0; i++)
		wrong += h[i] != 1.0f;
	sycl::free(h, q0);
	sycl::free(d0, q0);
	sycl::free(d1, q0);
	if (wrong) {
		std::fprintf(stderr, "sycl_workload: %d wrong results\n", wrong);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *out = "sycl_workload.json.gz";
	int iterations = 10, launches = 0;
	bool trace = true;
	for (int i = 1; i < argc; i++) {
		if (!std::strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!std::strcmp(argv[i], "-i") && i + 1 < argc)
			iterations = std::atoi(argv[++i]);
		else if (!std::strcmp(argv[i], "-l") && i + 1 < argc)
			launches = std::atoi(argv[++i]);
		else if (!std::strcmp(argv[i], "--no-trace"))
			trace = false;
		else {
			std::fprintf(stderr,
			             "usage: %s [-o OUTPUT] [-i ITERATIONS] [-l LAUNCHES] [--no-trace]\n",
			             argv[0]);
			return 2;
		}
	}
	try {
		return run(out, iterations, launches, trace);
	} catch (const sycl::exception &e) {
		std::fprintf(stderr, "sycl_workload: SYCL error: %s\n", e.what());
		return 1;
	}
}

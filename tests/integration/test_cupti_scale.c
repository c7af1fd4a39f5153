/* One million synthetic kernels with their cudaLaunchKernel calls through
 * the fake libcupti: every one arrives in the trace, correlated (one ac2g
 * arrow each), with its own args intact (conversion reuses the CUPTI buffers
 * it has read as memory for args), in a few seconds. */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define N_KERNELS 1000000u
#define CORR_BASE 10u

struct tally {
	size_t kernels, launches, kernel_flows, launch_flows;
	uint64_t corr_sum;
	size_t bad_args; /* "correlation" arg missing or not the activity's own id */
};

static bool corr_arg_is(const struct strobe_activity *a, uint64_t corr)
{
	for (size_t i = 0; i < a->arg_count; i++)
		if (!strcmp(a->args[i].key, "correlation"))
			return a->args[i].kind == STROBE_ARG_U64 && a->args[i].value.u64 == corr;
	return false;
}

static int count_cb(const struct strobe_activity *a, void *arg)
{
	struct tally *t = arg;
	if (a->type == STROBE_ACTIVITY_CONCURRENT_KERNEL || a->type == STROBE_ACTIVITY_CUDA_RUNTIME)
		t->bad_args += !corr_arg_is(a, a->id);
	if (a->type == STROBE_ACTIVITY_CONCURRENT_KERNEL) {
		t->kernels++;
		t->corr_sum += a->id;
		t->kernel_flows += a->flow_id == a->id && a->flow_kind == STROBE_FLOW_ASYNC_CPU_GPU &&
		                   !(a->flags & STROBE_ACTIVITY_FLOW_START);
	} else if (a->type == STROBE_ACTIVITY_CUDA_RUNTIME) {
		t->launches++;
		t->launch_flows += a->flow_id == a->id && (a->flags & STROBE_ACTIVITY_FLOW_START);
	}
	return 0;
}

static double secs(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_million_kernels(void **state)
{
	(void)state;
	assert_int_equal(strobe_init(NULL), 0);
	fake_cupti_reset();
	uint64_t mask = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	                STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_RUNTIME);
	assert_int_equal(strobe_prepare(mask, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=512"), 0);
	assert_int_equal(strobe_start(), 0);
	double t0 = secs();
	/* 2 ns per launch/kernel pair, all inside the window. */
	uint64_t base = ct_stamp_after(0, 0);
	for (uint32_t i = 0; i < N_KERNELS; i++) {
		uint64_t s = base + 2ull * i;
		CT_QUEUE(ct_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		                CORR_BASE + i, s, s + 1));
		CT_QUEUE(ct_kernel(CORR_BASE + i, 0, 7 + i % 4, s + 1, s + 2, "_Z6kernelPf"));
	}
	ct_stamp_after(base, 2ull * N_KERNELS + 1000);
	double t1 = secs();
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	double t2 = secs();
	assert_non_null(t);

	struct tally n = {0};
	assert_int_equal(strobe_trace_foreach(t, count_cb, &n), 0);
	assert_int_equal(n.kernels, N_KERNELS);
	assert_int_equal(n.launches, N_KERNELS);
	assert_int_equal(n.kernel_flows, N_KERNELS);
	assert_int_equal(n.launch_flows, N_KERNELS);
	uint64_t expect = (uint64_t)N_KERNELS * CORR_BASE + (uint64_t)N_KERNELS * (N_KERNELS - 1) / 2;
	assert_true(n.corr_sum == expect);
	assert_int_equal(n.bad_args, 0);
	assert_true(strobe_trace_activity_count(t) >= 2 * N_KERNELS);
	print_message("queue %.2f s, stop (flush + convert) %.2f s for %u kernels + %u launches\n", t1 - t0,
	              t2 - t1, N_KERNELS, N_KERNELS);
	strobe_trace_destroy(t);
	strobe_shutdown();
}

int main(void)
{
	ct_use_fake();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_million_kernels),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

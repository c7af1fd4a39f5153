/* 1 M kernels through the fake rocprofiler-sdk 1.x: every one reaches the
 * trace, named, on its stream row, linked to its launch; delivered in
 * many buffers (the SDK's buffer fills at its watermark). Prints the time
 * strobe_stop took to decode them. Checked through the trace API: the JSON
 * of a million events is too big to parse here.
 * STROBE_TEST_LABELS: concurrency (deliveries at the watermark from the
 * SDK's thread while the launches go on) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fake_rocprofiler_load.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "strobe/strobe.h"
#include "testutil.h"

#define KERNELS 1000000

static struct fake_rocp_control F;
static uint64_t kernel_ids[4];

static void launch_many(uint64_t corr, void *arg)
{
	(void)arg;
	uint64_t t = F.now();
	struct fake_rocp_dispatch d = {.correlation_id = corr, .grid = {256, 1, 1}, .workgroup = {64, 1, 1}};
	for (uint32_t i = 0; i < KERNELS; i++) {
		d.gpu = (int)(i & 1);
		d.queue = 0x100 + (i & 3);
		d.kernel_id = kernel_ids[i & 1 ? 2 + (i >> 1 & 1) : (i >> 1 & 1)];
		d.start = t + i;
		d.end = t + i + 1;
		if (F.dispatch(&d))
			fail_msg("dispatch %u refused", i);
	}
}

struct counts {
	size_t kernels, axpy, linked, calls;
};

static int count(const struct strobe_activity *a, void *arg)
{
	struct counts *n = arg;
	if (a->type == STROBE_ACTIVITY_CUDA_RUNTIME)
		n->calls++;
	if (a->type != STROBE_ACTIVITY_CONCURRENT_KERNEL)
		return 0;
	n->kernels++;
	n->axpy += !strcmp(a->name, "axpy(float*, float*, float)");
	n->linked += a->flow_kind == STROBE_FLOW_ASYNC_CPU_GPU && a->flow_id == a->id;
	return 0;
}

static void test_million_kernels(void **state)
{
	(void)state;
	char why[512];
	if (fake_rocp_control_load(&F, FAKE_ROCPROFILER_V1_PATH, why, sizeof(why)))
		fail_msg("%s", why);

	assert_int_equal(strobe_prepare(0, NULL), 0);
	static const char *const names[] = {"_Z4axpyPfS_f", "_Z4gemmPKfS0_Pf"};
	F.load_code_object(0, names, 2, kernel_ids);
	F.load_code_object(1, names, 2, kernel_ids + 2);
	assert_int_equal(strobe_start(), 0);
	uint64_t corr = F.hip_call("hipLaunchKernel", NULL, 0, launch_many, NULL);
	struct timespec pause = {0, 2000000};
	nanosleep(&pause, NULL); /* the last kernel's end is in the fake's future */
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	print_message("decoded %d kernels in %.3f s (%.1f M records/s)\n", KERNELS, s, KERNELS / s / 1e6);

	struct counts n = {0, 0, 0, 0};
	assert_int_equal(strobe_trace_foreach(t, count, &n), 0);
	assert_int_equal(n.kernels, KERNELS);
	assert_int_equal(n.axpy, KERNELS / 2);
	assert_int_equal(n.linked, KERNELS);
	assert_int_equal(n.calls, 1);
	strobe_trace_destroy(t);
	(void)corr;
}

int main(void)
{
	setenv("STROBE_ROCPROFILER_PATH", FAKE_ROCPROFILER_V1_PATH, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_million_kernels),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

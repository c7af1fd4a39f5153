/* The flight recorder with CUDA: CUPTI's buffers rotate within the GPU
 * share of the budget, a dump decodes a copy of what CUPTI completed (the
 * newest kernels, linked to the op open around their launch) and capture
 * goes on; a later dump has later work. Driven through the fake libcupti. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "test_cupti_common.h"

#define LAUNCH CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000

static uint64_t last;

static uint64_t stamp(void)
{
	last = ct_stamp_after(last, 200);
	return last;
}

static uint32_t launch(uint32_t stream, const char *name)
{
	uint64_t s = stamp();
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, LAUNCH, s, stamp());
	assert_true(corr > 0);
	uint64_t k = stamp();
	CT_QUEUE(ct_kernel(corr, 0, stream, k, stamp(), name));
	return corr;
}

static yajl_val dump(const char *reason)
{
	char path[1300];
	fake_cupti_complete_all();
	assert_int_equal(strobe_flight_dump(reason, path, sizeof(path)), 0);
	return tu_load_trace(path);
}

/* The newest kernel, and a dump. */
struct newest {
	const char *kernel;
	uint32_t stream;
	uint32_t corr;
};

static yajl_val record_newest(void *p)
{
	struct newest *n = p;
	n->corr = launch(n->stream, n->kernel);
	return dump("test");
}

static bool has_newest(yajl_val root, void *p)
{
	const struct newest *n = p;
	return tu_find(root, "X", "kernel", n->kernel) != NULL;
}

static void test_flight_rotates_cupti_buffers(void **state)
{
	(void)state;
	fake_cupti_reset();
	char out[1200];
	snprintf(out, sizeof(out), "%s/cuda.json", tu_dir);
	/* 16 MiB: 2 MiB of GPU buffers (GPU snapshots take as much again),
	 * in buffers of 512 KiB; a 200 ms window. */
	const uint64_t window = 200ull * 1000000ull;
	struct strobe_flight_opts o =
	    STROBE_OPTS(strobe_flight_opts, .output = out, .memory_bytes = 16ull << 20, .window_ns = window);
	assert_int_equal(strobe_flight_start(&o), 0);
	assert_true(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	enum { OLD = 50000 }; /* about 12 MB of records */
	for (int i = 0; i < OLD; i++) {
		launch(7, "old_kernel");
		if (i == OLD / 2) /* a dump along the way leaves the buffers in place */
			assert_int_equal(strobe_flight_dump(NULL, NULL, 0), 0);
	}
	usleep(300000); /* the old kernels leave the window */
	struct newest n = {.kernel = "newest_kernel", .stream = 8};
	uint64_t op = 0;
	yajl_val root = tu_flight_newest(window, "still running", &op, record_newest, has_newest, &n);
	assert_null(tu_get(root, "gpu_capture"));
	yajl_val k = tu_find(root, "X", "kernel", "newest_kernel");
	assert_non_null(k);
	assert_int_equal((int64_t)tu_get_num(tu_get(k, "args"), "correlation"), n.corr);
	assert_int_equal((int64_t)tu_get_num(tu_get(k, "args"), "External id"), (int64_t)op);
	assert_int_equal(tu_count(root, "X", "kernel", "old_kernel"), 0);
	assert_true(ct_stat(root, "gpu_aged_buffers") > 0);
	assert_true(ct_stat(root, "gpu_out_of_window") > 1000); /* still kept, older than the window */
	yajl_tree_free(root);
	strobe_op_pop();
	struct newest later = {.kernel = "after_the_dump", .stream = 9};
	root = tu_flight_newest(window, NULL, NULL, record_newest, has_newest, &later);
	assert_int_equal(tu_count(root, "X", "kernel", "after_the_dump"), 1);
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

int main(void)
{
	ct_use_fake();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_flight_rotates_cupti_buffers, tu_flight_off),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

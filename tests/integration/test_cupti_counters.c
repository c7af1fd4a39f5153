/* Device counters and the memory timeline together, through the fake
 * libcupti and the fake NVML: NVML's devices are matched to CUDA's by UUID
 * (NVML lists them in another order), and the memory track starts from the
 * memory NVML says was in use when the trace started. */
#include "fake_nvml.h"
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MALLOC CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020
#define TRACK  "GPU memory allocated (bytes)"
#define GIB    (1ull << 30)

static char path_buf[1200];
static bool cuda_up;

static int setup(void **state)
{
	(void)state;
	setenv("STROBE_NVML_PATH", FAKE_NVML_PATH, 1);
	fake_nvml_reset();
	fake_nvml_set_devices(2);
	if (!cuda_up) {
		/* CUDA's device d has NVML's device 1 - d's UUID. */
		struct fake_cuda_device d[2];
		for (int i = 0; i < 2; i++) {
			d[i] = (struct fake_cuda_device){
			    .name = "Fake GPU", .warp_size = 32, .sm_count = 132, .max_threads_per_sm = 2048};
			for (int k = 0; k < 16; k++)
				d[i].uuid[k] = (unsigned char)((1 - i) * 16 + k);
		}
		fake_cupti_cuda_init(d, 2);
		cuda_up = true;
	}
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {0, (long)ms * 1000000};
	nanosleep(&ts, NULL);
}

static void test_counters_matched_by_uuid(void **state)
{
	(void)state;
	const double nv0[] = {1111}, nv1[] = {2222};
	fake_nvml_script(0, FAKE_NVML_SM_CLOCK, nv0, 1);
	fake_nvml_script(1, FAKE_NVML_SM_CLOCK, nv1, 1);
	assert_int_equal(
	    strobe_prepare(
	        0, "ACTIVITY_TYPES=kernel,cuda_runtime,gpu_counters\nGPU_COUNTERS_SAMPLE_RATE_HZ=200"),
	    0);
	assert_int_equal(strobe_start(), 0);
	uint64_t base = ct_stamp_after(0, 0);
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME,
	                               CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, base, base + 10);
	CT_QUEUE(ct_kernel(corr, 0, 7, base + 100, base + 200, "k"));
	sleep_ms(30);
	yajl_val root = ct_stop_and_load(base, 1000, "uuid", path_buf, sizeof(path_buf));
	/* CUDA device 0 is NVML's device 1. */
	yajl_val c0 = NULL, c1 = NULL;
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *name = tu_get_str(e, "name");
		if (!name || strcmp(name, "SM clock (MHz)"))
			continue;
		if (tu_get_num(e, "pid") == 0)
			c0 = e;
		else if (tu_get_num(e, "pid") == 1)
			c1 = e;
	}
	assert_non_null(c0);
	assert_non_null(c1);
	assert_int_equal(tu_get_num(tu_get(c0, "args"), "SM clock (MHz)"), 2222);
	assert_int_equal(tu_get_num(tu_get(c1, "args"), "SM clock (MHz)"), 1111);
	yajl_val devs = tu_get(tu_get(root, "gpu_counters"), "devices");
	yajl_val d0 = YAJL_GET_ARRAY(devs)->values[0];
	assert_int_equal(tu_get_num(d0, "device"), 1);
	assert_string_equal(tu_get_str(d0, "matched_by"), "uuid");
	yajl_tree_free(root);
}

static void test_memory_starts_at_nvml_level(void **state)
{
	(void)state;
	const double used[] = {5.0 * GIB};
	fake_nvml_script(1, FAKE_NVML_MEM_USED, used, 1);
	/* gpu_memory alone: NVML is opened for the start level, no sampling. */
	assert_int_equal(strobe_prepare(0, "ACTIVITY_TYPES=kernel,cuda_runtime,gpu_memory"), 0);
	assert_int_equal(strobe_start(), 0);
	uint64_t base = ct_stamp_after(0, 0);
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, MALLOC, base, base + 10);
	CUpti_ActivityMemory4 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY2,
	    .memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
	    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .correlationId = corr,
	    .address = 0x7f0000000000,
	    .bytes = 1 << 20,
	    .timestamp = base + 5,
	    .deviceId = 0,
	    .streamId = 7,
	};
	CT_QUEUE(m);
	yajl_val root = ct_stop_and_load(base, 1000, "start_level", path_buf, sizeof(path_buf));
	yajl_val mem = tu_find(root, "i", NULL, "[memory]");
	assert_non_null(mem);
	assert_true(tu_get_num(tu_get(mem, "args"), "Total Allocated") == 5.0 * GIB + (1 << 20));
	yajl_val c = tu_find(root, "C", NULL, TRACK);
	assert_true(tu_get_num(tu_get(c, "args"), TRACK) == 5.0 * GIB);
	yajl_val start = tu_get(tu_get(root, "gpu_memory_start"), "0");
	assert_true(tu_get_num(start, "bytes") == 5.0 * GIB);
	assert_string_equal(tu_get_str(start, "source"), "NVML device memory used");
	assert_null(tu_get(root, "gpu_memory_start_unknown"));
	assert_int_equal(tu_count(root, "C", NULL, "SM clock (MHz)"), 0);
	assert_int_equal(fake_nvml_calls("nvmlDeviceGetClockInfo", -1), 0);
	yajl_tree_free(root);

	/* Without NVML the trace says the level is unknown, and why. */
	setenv("STROBE_NVML_PATH", "/nonexistent/libnvidia-ml.so.1", 1);
	assert_int_equal(strobe_prepare(0, "ACTIVITY_TYPES=kernel,cuda_runtime,gpu_memory"), 0);
	assert_int_equal(strobe_start(), 0);
	base = ct_stamp_after(0, 0);
	m.timestamp = base + 5;
	m.correlationId = 0;
	CT_QUEUE(m);
	root = ct_stop_and_load(base, 1000, "no_nvml", path_buf, sizeof(path_buf));
	tu_assert_contains(tu_get_str(root, "gpu_memory_start_unknown"),
	                   "start level unknown: NVML: cannot load /nonexistent/libnvidia-ml.so.1");
	assert_true(tu_get_num(tu_get(tu_find(root, "i", NULL, "[memory]"), "args"), "Total Allocated") ==
	            1 << 20);
	yajl_tree_free(root);
}

int main(void)
{
	ct_use_fake();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_counters_matched_by_uuid, setup),
	    cmocka_unit_test_setup(test_memory_starts_at_nvml_level, setup),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

/* strobe record --gpu-counters[=HZ] and --gpu-memory: the program's trace
 * samples the (fake) NVML's devices at the rate asked, and a bad rate stops
 * before the program runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define APP STROBE_TEST_PROGRAMS_DIR "/nvtx_app"

static char dir[1024];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[512];
	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", asan ? asan : "",
	         asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	setenv("STROBE_NVML_PATH", FAKE_NVML_PATH, 1);
	setenv("FAKE_NVML_DEVICES", "2", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	return 0;
}

static yajl_val record(const char *opts, const char *name)
{
	char cmd[4096], *out = NULL, path[1200];
	TU_FORMAT(cmd, "cd %s && %s record %s -o %s -- %s nested", dir, STROBE_CLI_PATH, opts, name, APP);
	int rc = tu_run(cmd, 1, &out);
	if (rc != 0)
		fail_msg("strobe record exited %d: %s", rc, out ? out : "");
	free(out);
	TU_FORMAT(path, "%s/%s", dir, name);
	return tu_load_trace(path);
}

static void test_gpu_counters_rate(void **state)
{
	(void)state;
	yajl_val root = record("--gpu-counters=50", "c.json");
	yajl_val meta = tu_get(root, "gpu_counters");
	assert_non_null(meta);
	assert_int_equal(tu_get_num(meta, "rate_hz"), 50);
	assert_int_equal(YAJL_GET_ARRAY(tu_get(meta, "devices"))->len, 2);
	/* The program's own ranges are still there. */
	assert_true(tu_count(root, "X", "user_annotation", NULL) > 0);
	yajl_tree_free(root);

	root = record("--gpu-counters", "d.json");
	assert_int_equal(tu_get_num(tu_get(root, "gpu_counters"), "rate_hz"), 10);
	yajl_tree_free(root);
}

static void test_gpu_memory_opens_nvml(void **state)
{
	(void)state;
	/* gpu_memory alone reads the start level through NVML, samples nothing;
	 * with no device there the trace says so. */
	setenv("FAKE_NVML_DEVICES", "0", 1);
	yajl_val root = record("--gpu-memory", "m.json");
	tu_assert_contains(tu_get_str(root, "gpu_counters_capture"),
	                   "GPU counters capture is off: NVML: no devices");
	assert_null(tu_get(root, "gpu_counters"));
	yajl_tree_free(root);
	/* Without the option NVML is never opened. */
	root = record("", "n.json");
	assert_null(tu_get(root, "gpu_counters_capture"));
	yajl_tree_free(root);
	setenv("FAKE_NVML_DEVICES", "2", 1);
}

static void test_bad_rate(void **state)
{
	(void)state;
	const char *bad[] = {"--gpu-counters=0", "--gpu-counters=1001",
	                     "--gpu-counters=", "--gpu-counters=5x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char cmd[4096], *out = NULL;
		TU_FORMAT(cmd, "cd %s && %s record %s -o x.json -- %s nested", dir, STROBE_CLI_PATH, bad[i],
		          APP);
		assert_int_equal(tu_run(cmd, 1, &out), 2);
		tu_assert_contains(out, "a sampling rate in Hz, 1..1000");
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gpu_counters_rate),
	    cmocka_unit_test(test_gpu_memory_opens_nvml),
	    cmocka_unit_test(test_bad_rate),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* The CUDA injection entry point, called the way the CUDA driver calls it
 * (tests/programs/cuda_driver.c dlopens CUDA_INJECTION64_PATH and calls
 * InitializeInjection), under strobe record, with the fake libcupti in
 * place of the real one: the kernel the "driver" reports reaches the trace,
 * linked to its launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static void injected_kernel_reaches_the_trace(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp(), cmd[4096], trace[1200];
	snprintf(trace, sizeof(trace), "%s/cuda.json", dir);
	const char *asan = getenv("ASAN_OPTIONS");
	snprintf(cmd, sizeof(cmd),
	         "ASAN_OPTIONS=%s%sverify_asan_link_order=0 STROBE_CUPTI_PATH=%s %s record -o %s -- "
	         "%s/cuda_driver",
	         asan ? asan : "", asan && *asan ? ":" : "", FAKE_CUPTI_PATH, STROBE_CLI_PATH, trace,
	         STROBE_TEST_PROGRAMS_DIR);
	char *out = NULL;
	int rc = tu_run(cmd, 1, &out);
	if (rc != 0)
		fail_msg("%s: status %d:\n%s", cmd, rc, out);
	/* The driver may call it more than once: it returns 1 every time. */
	assert_non_null(strstr(out, "InitializeInjection returned 1 and 1"));

	yajl_val t = tu_load_trace(trace);
	yajl_val k = tu_find(t, "X", "kernel", "injected_add(float*, float*)");
	assert_non_null(k);
	yajl_val launch = tu_find(t, "X", "cuda_runtime", "cudaLaunchKernel");
	assert_non_null(launch);
	assert_true(tu_get_num(tu_get(k, "args"), "correlation") ==
	            tu_get_num(tu_get(launch, "args"), "correlation"));
	assert_int_equal(tu_count(t, "s", "ac2g", NULL), 1);
	assert_int_equal(tu_count(t, "f", "ac2g", NULL), 1);
	/* GPU capture was on: no reason for it being off. */
	assert_null(tu_get(t, "gpu_capture"));
	yajl_tree_free(t);
	free(out);
	tu_rmrf(dir);
}

/* `strobe record --flight` of a shell that runs a CUDA program that dies
 * of SIGSEGV: the crash dump holds the GPU work decoded before the signal
 * (the kernel, its launch and the op it ran under, linked), not only the
 * CPU side; the shell, which leaves without its exit handlers, leaves no
 * raw file behind. */
static void crash_dump_holds_gpu_work(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp(), cmd[4096], trace[1300];
	const char *asan = getenv("ASAN_OPTIONS");
	snprintf(cmd, sizeof(cmd),
	         "ASAN_OPTIONS=%s%sverify_asan_link_order=0:handle_segv=0 STROBE_CUPTI_PATH=%s "
	         "STROBE_FLIGHT_GPU_SNAPSHOT=50ms %s record --flight 10s -o %s/run.json -- sh -c "
	         "'\"$0\" crash & wait $!' %s/cuda_driver",
	         asan ? asan : "", asan && *asan ? ":" : "", FAKE_CUPTI_PATH, STROBE_CLI_PATH, dir,
	         STROBE_TEST_PROGRAMS_DIR);
	char *out = NULL;
	int rc = tu_run(cmd, 1, &out);
	if (rc != 139)
		fail_msg("%s: status %d, not SIGSEGV's 139:\n%s", cmd, rc, out);
	char *line = tu_line_with(out, ".crash-");
	assert_non_null(line);
	char *start = strstr(line, dir), *end = start ? strstr(start, ".json") : NULL;
	assert_non_null(end);
	snprintf(trace, sizeof(trace), "%.*s.json", (int)(end - start), start);
	free(line);
	char ls[1400], *left = NULL;
	snprintf(ls, sizeof(ls), "ls %s", dir);
	assert_int_equal(tu_run(ls, 0, &left), 0);
	assert_null(strstr(left, ".raw"));
	free(left);

	yajl_val t = tu_load_trace(trace);
	yajl_val op = tu_find(t, "X", "cpu_op", "train_step");
	yajl_val k = tu_find(t, "X", "kernel", "injected_add(float*, float*)");
	yajl_val launch = tu_find(t, "X", "cuda_runtime", "cudaLaunchKernel");
	assert_non_null(op);
	assert_non_null(k);
	assert_non_null(launch);
	/* The op was open at the signal; the kernel is linked to it and to
	 * its launch, as in a dump written any other way. */
	yajl_val fin = tu_get(tu_get(op, "args"), "finished");
	assert_true(fin && YAJL_IS_FALSE(fin));
	double ext = tu_get_num(tu_get(op, "args"), "External id");
	assert_true(ext > 0);
	assert_true(tu_get_num(tu_get(k, "args"), "External id") == ext);
	assert_true(tu_get_num(tu_get(k, "args"), "correlation") ==
	            tu_get_num(tu_get(launch, "args"), "correlation"));
	assert_int_equal(tu_count(t, "s", "ac2g", NULL), 1);
	assert_non_null(tu_get(t, "cupti_version"));
	yajl_val snap = tu_get(tu_get(t, "flight_recorder"), "gpu_snapshot");
	assert_string_equal(tu_get_str(snap, "state"), "written");
	/* Taken within the last 50 ms snapshot period or so, before the signal. */
	assert_true(tu_get_num(snap, "age_s") >= 0 && tu_get_num(snap, "age_s") < 0.5);
	assert_true(tu_get_num(tu_get(t, "strobe"), "gpu_records") >= 2);
	yajl_tree_free(t);
	free(out);
	tu_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(injected_kernel_reaches_the_trace),
	    cmocka_unit_test(crash_dump_holds_gpu_work),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

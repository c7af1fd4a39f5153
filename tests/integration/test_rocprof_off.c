/* AMD capture off: rocprofiler-sdk missing, locked (configured before
 * strobe registered) or failing inside strobe's initialize. Each case runs
 * in a child process (the SDK is opened and configured once per process);
 * the child writes a trace, the parent checks it is a valid CPU trace whose
 * "rocm_capture" names the reason. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backends/rocprof/rocprof_abi.h"
#include "fake_rocprofiler_load.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "strobe/strobe.h"
#include "testutil.h"

/* In the child: one trace with a CPU op, saved to path. Returns the exit
 * status (0 when the trace was written). */
static int child_trace(const char *path)
{
	if (strobe_init(NULL) || strobe_prepare(0, NULL) || strobe_start())
		return 2;
	uint64_t op = strobe_op_push("cpu_work");
	strobe_op_pop();
	strobe_trace *t = NULL;
	if (!op || strobe_stop(&t) || strobe_trace_save(t, path))
		return 3;
	strobe_trace_destroy(t);
	return 0;
}

/* Arms `fn` of the fake at path to fail with the status that has 0.x
 * number v0_status. */
static void arm(const char *fake, const char *fn, int32_t v0_status)
{
	struct fake_rocp_control f;
	char why[512];
	if (fake_rocp_control_load(&f, fake, why, sizeof(why)))
		_exit(4);
	(f.fail)(fn, rocp_status_code((uint32_t)f.abi_major(), v0_status));
}

/* strobe starts in each child only: a forked child of a traced process
 * has GPU capture off by design. */
static char *dir;

/* Runs a case in a child and returns the trace's rocm_capture (malloc'ed). */
static char *run_case(const char *sdk_path, const char *fake_to_arm, const char *fn, int32_t status)
{
	char path[1200];
	static int n;
	snprintf(path, sizeof(path), "%s/off%d.json", dir, n++);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("STROBE_ROCPROFILER_PATH", sdk_path, 1);
		if (fake_to_arm)
			arm(fake_to_arm, fn, status);
		_exit(child_trace(path));
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	yajl_val root = tu_load_trace(path);
	assert_non_null(tu_find(root, "X", "cpu_op", "cpu_work"));
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 0);
	const char *why = tu_get_str(root, "rocm_capture");
	char *copy = why ? strdup(why) : NULL;
	yajl_tree_free(root);
	assert_non_null(copy);
	return copy;
}

static void test_sdk_missing(void **state)
{
	(void)state;
	char *why = run_case("/nonexistent/strobe-test/librocprofiler-sdk.so.1", NULL, NULL, 0);
	tu_assert_contains(why, "AMD (rocprofiler-sdk) capture is off");
	tu_assert_contains(why, "/nonexistent/strobe-test/librocprofiler-sdk.so.1");
	free(why);
}

static void test_sdk_locked(void **state)
{
	(void)state;
	static const char *const fakes[] = {FAKE_ROCPROFILER_V0_PATH, FAKE_ROCPROFILER_V1_PATH};
	for (int i = 0; i < 2; i++) {
		char *why = run_case(fakes[i], fakes[i], "rocprofiler_force_configure",
		                     ROCP_STATUS_V0_ERROR_CONFIGURATION_LOCKED);
		tu_assert_contains(why, "rocprofiler-sdk is locked");
		free(why);
	}
}

static void test_sdk_failing(void **state)
{
	(void)state;
	static const char *const fakes[] = {FAKE_ROCPROFILER_V0_PATH, FAKE_ROCPROFILER_V1_PATH};
	for (int i = 0; i < 2; i++) {
		char *why = run_case(fakes[i], fakes[i], "rocprofiler_create_buffer", ROCP_STATUS_ERROR);
		tu_assert_contains(why, "rocprofiler_create_buffer failed: status 1");
		free(why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sdk_missing),
	    cmocka_unit_test(test_sdk_locked),
	    cmocka_unit_test(test_sdk_failing),
	};
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

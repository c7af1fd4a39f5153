/* XPU capture off: PTI missing, not implemented (the real shim without
 * Level Zero), or failing. Each case runs in a child process (PTI is opened
 * once per process) whose stderr goes to a file; the parent checks the
 * child's trace is a valid CPU trace whose "xpu_capture" names the reason,
 * that the AMD backend's own reason is untouched, and that the child
 * warned once. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backends/pti/pti_abi.h"

#include <dlfcn.h>
#include <fcntl.h>
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

#define KERNEL_TYPES (STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_RUNTIME))

/* In the child: two traces with a CPU op each (the warning is written
 * once), the second saved to path. Returns the exit status. */
static int child_trace(const char *path)
{
	strobe_trace *t = NULL;
	if (strobe_init(NULL))
		return 2;
	for (int i = 0; i < 2; i++) {
		if (strobe_prepare(KERNEL_TYPES, NULL) || strobe_start())
			return 2;
		uint64_t op = strobe_op_push("cpu_work");
		strobe_op_pop();
		if (!op || strobe_stop(&t))
			return 3;
		if (i == 1 && strobe_trace_save(t, path))
			return 3;
		strobe_trace_destroy(t);
	}
	return 0;
}

/* Arms the fake at path: NOT_IMPLEMENTED mode, or fn failing with result. */
static void arm(const char *fake, const char *fn, uint32_t result)
{
	void *h = dlopen(fake, RTLD_NOW | RTLD_LOCAL);
	void (*not_impl)(int) = h ? (void (*)(int))dlsym(h, "fake_pti_set_not_implemented") : NULL;
	void (*arm_fail)(const char *, uint32_t, int) =
	    h ? (void (*)(const char *, uint32_t, int))dlsym(h, "fake_pti_fail") : NULL;
	if (!not_impl || !arm_fail)
		_exit(4);
	if (fn)
		arm_fail(fn, result, 1000);
	else
		not_impl(1);
}

static char *dir;

struct outcome {
	char *why, *rocm, *err;
};

/* Runs a case in a child: its xpu_capture, rocm_capture and stderr. */
static struct outcome run_case(const char *pti_path, const char *fake_to_arm, const char *fn, uint32_t result)
{
	char path[1200], err_path[1200];
	static int n;
	snprintf(path, sizeof(path), "%s/off%d.json", dir, n);
	snprintf(err_path, sizeof(err_path), "%s/off%d.err", dir, n++);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(5);
		setenv("STROBE_PTI_PATH", pti_path, 1);
		setenv("STROBE_LOG_LEVEL", "2", 1); /* warnings */
		setenv("STROBE_ROCPROFILER_PATH", "/nonexistent/strobe-test/librocprofiler-sdk.so.1", 1);
		if (fake_to_arm)
			arm(fake_to_arm, fn, result);
		_exit(child_trace(path));
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	yajl_val root = tu_load_trace(path);
	assert_non_null(tu_find(root, "X", "cpu_op", "cpu_work"));
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 0);
	struct outcome o = {0};
	const char *why = tu_get_str(root, "xpu_capture"), *rocm = tu_get_str(root, "rocm_capture");
	assert_non_null(why);
	assert_non_null(rocm);
	o.why = strdup(why);
	o.rocm = strdup(rocm);
	o.err = tu_read_file(err_path, NULL);
	assert_non_null(o.err);
	yajl_tree_free(root);
	/* The other vendor keeps its own reason. */
	tu_assert_contains(o.rocm, "AMD");
	assert_null(strstr(o.rocm, "PTI"));
	return o;
}

/* Lines of text that contain needle. */
static int lines_with(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void free_outcome(struct outcome *o)
{
	free(o->why);
	free(o->rocm);
	free(o->err);
}

static void test_pti_missing(void **state)
{
	(void)state;
	struct outcome o = run_case("/nonexistent/strobe-test/libpti_view.so.1", NULL, NULL, 0);
	tu_assert_contains(o.why, "XPU (Intel PTI) capture is off");
	tu_assert_contains(o.why, "/nonexistent/strobe-test/libpti_view.so.1");
	assert_int_equal(lines_with(o.err, "XPU (Intel PTI) capture is off"), 1);
	free_outcome(&o);
}

/* What the real libpti_view does where its Level Zero backend cannot load. */
static void test_pti_not_implemented(void **state)
{
	(void)state;
	static const char *const fakes[] = {FAKE_PTI_V1_PATH, FAKE_PTI_V2_PATH};
	for (int i = 0; i < 2; i++) {
		struct outcome o = run_case(fakes[i], fakes[i], NULL, 0);
		tu_assert_contains(o.why, "XPU (Intel PTI) capture is off");
		tu_assert_contains(o.why, "PTI_ERROR_NOT_IMPLEMENTED");
		tu_assert_contains(o.why, "Level Zero");
		assert_int_equal(lines_with(o.err, "PTI_ERROR_NOT_IMPLEMENTED"), 1);
		tu_assert_contains(o.err, "WARN");
		free_outcome(&o);
	}
}

static void test_pti_failing(void **state)
{
	(void)state;
	struct outcome o = run_case(FAKE_PTI_V2_PATH, FAKE_PTI_V2_PATH, "ptiViewEnable", PTI_ERROR_DRIVER);
	tu_assert_contains(o.why, "ptiViewEnable(1) failed: PTI_ERROR_DRIVER");
	free_outcome(&o);
	o = run_case(FAKE_PTI_V1_PATH, FAKE_PTI_V1_PATH, "ptiViewSetCallbacks", PTI_ERROR_INTERNAL);
	tu_assert_contains(o.why, "ptiViewSetCallbacks failed: PTI_ERROR_INTERNAL");
	free_outcome(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pti_missing),
	    cmocka_unit_test(test_pti_not_implemented),
	    cmocka_unit_test(test_pti_failing),
	};
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

/* The real libpti_view.so.1 from PyPI's intel-pti wheel (fetched into the
 * build folder by tests/pti/fetch_pti.sh, the pti_fetch fixture), on a
 * machine without Level Zero: every PTI call but the version ones answers
 * PTI_ERROR_NOT_IMPLEMENTED. strobe reads the library's version, turns XPU
 * capture off with the reason in the trace's "xpu_capture" and one warning,
 * and writes the CPU trace, through the API and through `strobe record`.
 * The library is also found without STROBE_PTI_PATH where pip, conda or
 * oneAPI put it. Each case runs in a child process: PTI is loaded once per
 * process, and the child's stderr holds its warnings. Skipped, saying why,
 * when the wheel could not be fetched (exit status 77, which ctest shows as
 * a skip). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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

#define SKIP_STATUS 77
#define RESULT_NAME "PTI_ERROR_NOT_IMPLEMENTED"

static char *dir;
static char wheel_lib[1200]; /* PTI_WHEEL_DIR/lib/libpti_view.so.1 */
static char version[64];     /* the wheel's own version (its METADATA) */
static const char *skip_why; /* why the wheel is not there, or NULL */

/* The traces each child writes, in this order. */
#define CPU_ONLY                                                                                             \
	(STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP) | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_USER_ANNOTATION))
static const uint64_t masks[] = {
    CPU_ONLY,                                                    /* no GPU type: PTI takes no part */
    STROBE_ACTIVITY_DEFAULT_MASK,                                /* kernels, copies, fills, ... */
    CPU_ONLY | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_RUNTIME), /* an optional XPU type alone */
};
#define N_TRACES (sizeof(masks) / sizeof(masks[0]))

/* In the child: stderr to DIR/TAG.err, the environment PTI is looked for
 * in reset, then one trace per mask with a range around an op, saved to
 * DIR/TAG-N.json. Returns the exit status. */
static int child(const char *tag, const char *pti_path, const char *env_key, const char *env_value)
{
	char path[1400];
	snprintf(path, sizeof(path), "%s/%s.err", dir, tag);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
		return 2;
	static const char *const lookup[] = {"STROBE_PTI_PATH", "ONEAPI_ROOT", "VIRTUAL_ENV", "CONDA_PREFIX"};
	for (size_t i = 0; i < sizeof(lookup) / sizeof(lookup[0]); i++)
		unsetenv(lookup[i]);
	if (pti_path)
		setenv("STROBE_PTI_PATH", pti_path, 1);
	if (env_key)
		setenv(env_key, env_value, 1);
	if (strobe_init(NULL))
		return 3;
	strobe_log_set_level(STROBE_LOG_WARNING); /* ctest runs tests at the error level */
	for (size_t i = 0; i < N_TRACES; i++) {
		if (strobe_prepare(masks[i], NULL) || strobe_start())
			return 4;
		strobe_range_push("pti_range");
		uint64_t op = strobe_op_push("cpu_work");
		strobe_op_pop();
		strobe_range_pop();
		strobe_trace *t = NULL;
		snprintf(path, sizeof(path), "%s/%s-%zu.json", dir, tag, i);
		if (!op || strobe_stop(&t) || strobe_trace_save(t, path))
			return 5;
		strobe_trace_destroy(t);
	}
	strobe_shutdown();
	return 0;
}

/* Runs child() in a child process, which must exit 0 (nothing aborts). */
static void run_child(const char *tag, const char *pti_path, const char *env_key, const char *env_value)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child(tag, pti_path, env_key, env_value));
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st))
		fail_msg("the child tracing with the real PTI (%s) died of signal %d", tag, WTERMSIG(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Trace N of child TAG, after checking it is a valid CPU trace. */
static yajl_val cpu_trace(const char *tag, size_t n)
{
	char path[1400];
	snprintf(path, sizeof(path), "%s/%s-%zu.json", dir, tag, n);
	yajl_val root = tu_load_trace(path);
	assert_int_equal(tu_count(root, "X", "cpu_op", "cpu_work"), 1);
	assert_int_equal(tu_count(root, "X", "user_annotation", "pti_range"), 1);
	static const char *const gpu_cats[] = {"kernel",      "gpu_memcpy", "gpu_memset",
	                                       "xpu_runtime", "xpu_driver", "gpu_user_annotation"};
	for (size_t i = 0; i < sizeof(gpu_cats) / sizeof(gpu_cats[0]); i++)
		assert_int_equal(tu_count(root, NULL, gpu_cats[i], NULL), 0);
	return root;
}

/* "names PTI": PTI is named apart from the result name (which holds it). */
static void assert_names_pti(const char *text)
{
	char *copy = strdup(text);
	char *at;
	while ((at = strstr(copy, RESULT_NAME)))
		memset(at, '-', strlen(RESULT_NAME));
	if (!strstr(copy, "PTI") && !strstr(copy, "XPU"))
		fail_msg("names neither PTI nor XPU besides the result name: %s", text);
	free(copy);
}

/* The trace of a GPU-selecting mask, PTI loaded and failing: the wheel's
 * version and the reason, which names PTI and the result. */
static void assert_pti_off(yajl_val root)
{
	const char *why = tu_get_str(root, "xpu_capture");
	if (!why)
		fail_msg("the trace has no \"xpu_capture\" though PTI answered %s", RESULT_NAME);
	tu_assert_contains(why, RESULT_NAME);
	assert_names_pti(why);
	const char *v = tu_get_str(root, "xpupti_version");
	if (!v)
		fail_msg("the trace has no \"xpupti_version\" though the library loaded");
	assert_string_equal(v, version);
}

static void test_not_implemented_handled(void **state)
{
	(void)state;
	if (skip_why)
		skip();
	run_child("api", wheel_lib, NULL, NULL);

	/* CPU types only: PTI takes no part, the trace says nothing of it. */
	yajl_val root = cpu_trace("api", 0);
	assert_null(tu_get(root, "xpu_capture"));
	assert_null(tu_get(root, "xpupti_version"));
	yajl_tree_free(root);
	for (size_t i = 1; i < N_TRACES; i++) {
		root = cpu_trace("api", i);
		assert_pti_off(root);
		yajl_tree_free(root);
	}

	/* One warning for the three traces, naming XPU/PTI and the result. */
	char path[1400];
	snprintf(path, sizeof(path), "%s/api.err", dir);
	char *err = tu_read_file(path, NULL);
	assert_non_null(err);
	int lines = 0;
	for (const char *at = err; (at = strstr(at, RESULT_NAME)); at += strlen(RESULT_NAME))
		lines++;
	if (lines != 1)
		fail_msg("stderr names %s %d times, not once:\n%s", RESULT_NAME, lines, err);
	char *line = tu_line_with(err, RESULT_NAME);
	tu_assert_contains(line, "WARNING");
	assert_names_pti(line);
	free(line);
	free(err);
}

/* Without STROBE_PTI_PATH, the library where `pip install intel-pti` (a
 * virtualenv or conda prefix) or oneAPI put it. */
static void test_found_where_installed(void **state)
{
	(void)state;
	if (skip_why)
		skip();
	char prefix[1200];
	TU_FORMAT(prefix, "%s", PTI_WHEEL_DIR);
	static const char *const keys[] = {"VIRTUAL_ENV", "CONDA_PREFIX", "ONEAPI_ROOT"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		run_child(keys[i], NULL, keys[i], prefix);
		yajl_val root = cpu_trace(keys[i], 1);
		assert_pti_off(root);
		yajl_tree_free(root);
	}
}

/* STROBE_PTI_PATH names exactly the file loaded: a missing one is the
 * reason, even with the wheel in the virtualenv. */
static void test_pti_path_is_exact(void **state)
{
	(void)state;
	if (skip_why)
		skip();
	char missing[1400];
	TU_FORMAT(missing, "%s/no-such-dir/libpti_view.so.1", dir);
	run_child("exact", missing, "VIRTUAL_ENV", PTI_WHEEL_DIR);
	yajl_val root = cpu_trace("exact", 1);
	const char *why = tu_get_str(root, "xpu_capture");
	assert_non_null(why);
	tu_assert_contains(why, missing);
	assert_null(tu_get(root, "xpupti_version"));
	yajl_tree_free(root);
}

/* strobe record of a program that knows nothing of strobe or PTI. */
static void test_record_writes_reason(void **state)
{
	(void)state;
	if (skip_why)
		skip();
	char out[1400], args[3000];
	TU_FORMAT(out, "%s/record.json", dir);
	TU_FORMAT(args, "-q -o '%s' -- /bin/true", out);
	/* Sanitizer builds: the injected library comes before the runtime. */
	const char *asan = getenv("ASAN_OPTIONS");
	char *opts = NULL;
	assert_true(asprintf(&opts, "%s:verify_asan_link_order=0", asan ? asan : "") > 0);
	setenv("ASAN_OPTIONS", opts, 1);
	free(opts);
	setenv("STROBE_PTI_PATH", wheel_lib, 1);
	char *log = NULL;
	int rc = tu_strobe("record", args, 1, &log);
	unsetenv("STROBE_PTI_PATH");
	if (rc != 0)
		fail_msg("strobe record exited %d:\n%s", rc, log ? log : "");
	free(log);
	yajl_val root = tu_load_trace(out);
	assert_pti_off(root);
	yajl_tree_free(root);
}

/* Where the fixture left the library, or why it is not there. */
static void find_wheel(void)
{
	static char why[1400];
	char path[1200];
	TU_FORMAT(wheel_lib, "%s/lib/libpti_view.so.1", PTI_WHEEL_DIR);
	TU_FORMAT(path, "%s/version", PTI_WHEEL_DIR);
	char *v = tu_read_file(path, NULL);
	if (v && access(wheel_lib, R_OK) == 0) {
		snprintf(version, sizeof(version), "%.*s", (int)strcspn(v, "\n"), v);
		free(v);
		return;
	}
	free(v);
	TU_FORMAT(path, "%s/skip-reason", PTI_WHEEL_DIR);
	char *reason = tu_read_file(path, NULL);
	snprintf(why, sizeof(why), "%.*s", (int)strcspn(reason ? reason : "", "\n"),
	         reason ? reason
	                : "no libpti_view.so.1 in " PTI_WHEEL_DIR
	                  "/lib: run tests/pti/fetch_pti.sh " PTI_WHEEL_DIR
	                  " (ctest runs it first, as the test pti_fetch)");
	free(reason);
	skip_why = why;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_implemented_handled),
	    cmocka_unit_test(test_found_where_installed),
	    cmocka_unit_test(test_pti_path_is_exact),
	    cmocka_unit_test(test_record_writes_reason),
	};
	find_wheel();
	if (skip_why)
		printf("SKIPPED: the real libpti_view is not here: %s\n", skip_why);
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc ? rc : skip_why ? SKIP_STATUS : 0;
}

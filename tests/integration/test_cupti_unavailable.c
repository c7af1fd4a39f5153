/* CUPTI missing: STROBE_CUPTI_PATH names a file that does not exist. The
 * library is resolved once per process, so this case has its own program.
 * Traces are CPU-only, carry the reason (with the path) in "gpu_capture",
 * and nothing crashes, trace after trace. */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>

#define MISSING "/nonexistent/strobe-test/libcupti.so.13"

static void one_trace(int i)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	uint64_t op = strobe_op_push("cpu_op");
	assert_true(op > 0);
	strobe_correlation_push(op); /* no CUPTI to forward to: harmless */
	strobe_correlation_pop();
	strobe_op_pop();
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	char path[1200];
	snprintf(path, sizeof(path), "%s/t%d.json", tu_dir, i);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	yajl_val root = tu_load_trace(path);
	assert_non_null(tu_find(root, "X", "cpu_op", "cpu_op"));
	const char *why = tu_get_str(root, "gpu_capture");
	if (!why || !strstr(why, MISSING))
		fail_msg("gpu_capture is \"%s\", expected the missing path", why ? why : "(none)");
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 0);
	assert_null(tu_get(tu_get(root, "strobe"), "gpu_records"));
	yajl_tree_free(root);
}

static void test_missing_library_gives_cpu_trace(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++)
		one_trace(i);
	/* The fake linked into this program was never touched. */
	assert_false(fake_cupti_subscribed());
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

int main(void)
{
	setenv("STROBE_CUPTI_PATH", MISSING, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_missing_library_gives_cpu_trace),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

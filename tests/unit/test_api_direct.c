/* The exported capture functions called directly, as dlsym or ctypes
 * callers reach them (the header's inline fast path is off here): before
 * init and while idle they record nothing and return 0; while tracing they
 * record. */
#define STROBE_NO_INLINE_FAST_PATH
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "strobe/strobe.h"

static int count_named(const struct strobe_activity *a, void *arg)
{
	size_t *n = arg;
	*n += !strncmp(a->name, "direct.", 7);
	return 0;
}

static void call_everything(void)
{
	strobe_range_push("direct.range");
	strobe_range_pop();
	assert_int_equal(strobe_op_push("direct.op"), 0);
	strobe_op_pop();
	strobe_instant("direct.instant");
	strobe_counter("direct.counter", 1.0);
	strobe_correlation_push(7);
	strobe_correlation_pop();
	strobe_user_correlation_push(8);
	strobe_user_correlation_pop();
}

static size_t trace_count(strobe_trace *t)
{
	size_t n = 0;
	assert_int_equal(strobe_trace_foreach(t, count_named, &n), 0);
	return n;
}

static void test_idle_calls_record_nothing(void **state)
{
	(void)state;
	call_everything(); /* before strobe_init */
	assert_int_equal(strobe_init(NULL), 0);
	call_everything(); /* initialised, idle */
	assert_int_equal(strobe_prepare(0, NULL), 0);
	call_everything(); /* prepared, not started */
	assert_int_equal(strobe_start(), 0);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(trace_count(t), 0);
	strobe_trace_destroy(t);
}

static void test_traced_calls_record(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_range_push("direct.range");
	uint64_t id = strobe_op_push("direct.op");
	assert_true(id > 0);
	strobe_op_pop();
	strobe_range_pop();
	strobe_instant("direct.instant");
	strobe_counter("direct.counter", 2.0);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(trace_count(t), 4);
	strobe_trace_destroy(t);
	/* After the trace, idle again. */
	call_everything();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_idle_calls_record_nothing),
	    cmocka_unit_test(test_traced_calls_record),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	strobe_shutdown();
	return rc;
}

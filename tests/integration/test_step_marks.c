/* strobe_step() marks define steps: the stretch between two calls on the
 * thread that makes them is written as PyTorch's profiler writes a step, a
 * user_annotation range "ProfilerStep#N", and strobe summary's steps table
 * lists them; a program that writes ProfilerStep ranges of its own gets no
 * second set; the stretch before the first mark and after the last one
 * are no steps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strobe/strobe.h"
#include "testutil.h"

/* The user_annotation events named ProfilerStep#*, in file order. */
static size_t steps_of(yajl_val root, yajl_val *out, size_t max)
{
	yajl_val evs = tu_events(root);
	size_t n = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *name = tu_get_str(e, "name"), *cat = tu_get_str(e, "cat");
		if (name && cat && !strcmp(cat, "user_annotation") && !strncmp(name, "ProfilerStep#", 13)) {
			assert_true(n < max);
			out[n++] = e;
		}
	}
	return n;
}

/* strobe record of a program that runs 6 steps, each a "train_step" range
 * and then strobe_step(): 5 stretches between the 6 marks. */
static void test_recorded_program_steps(void **state)
{
	(void)state;
	char trace[1200], cmd[4096], *out = NULL;
	snprintf(trace, sizeof(trace), "%s/steps.json", tu_dir);
	/* Sanitizer builds: the injected library first is fine here. */
	const char *asan = getenv("ASAN_OPTIONS");
	snprintf(cmd, sizeof(cmd),
	         "ASAN_OPTIONS=%s%sverify_asan_link_order=0 %s record -q -o %s -- %s/flight_app steps 6",
	         asan ? asan : "", asan && *asan ? ":" : "", STROBE_CLI_PATH, trace,
	         STROBE_TEST_PROGRAMS_DIR);
	int rc = tu_run(cmd, 1, &out);
	if (rc)
		fail_msg("%s: status %d\n%s", cmd, rc, out);
	free(out);
	yajl_val root = tu_load_trace(trace), steps[16];
	size_t n = steps_of(root, steps, 16);
	assert_int_equal(n, 5);
	int64_t tid = (int64_t)tu_get_num(tu_find(root, "X", "user_annotation", "train_step"), "tid");
	for (size_t i = 0; i < n; i++) {
		char want[48];
		snprintf(want, sizeof(want), "ProfilerStep#%zu", i + 1);
		assert_string_equal(tu_get_str(steps[i], "name"), want);
		assert_int_equal((int64_t)tu_get_num(steps[i], "tid"), tid);
		/* Each step ends where the next begins: at the mark. */
		if (i)
			assert_int_equal(tu_get_ns(steps[i - 1], "ts") + tu_get_ns(steps[i - 1], "dur"),
			                 tu_get_ns(steps[i], "ts"));
		/* A step holds one iteration: 10 ms of naps and more. */
		assert_true(tu_get_ns(steps[i], "dur") >= 10000000);
	}
	yajl_tree_free(root);

	char *json = NULL;
	assert_int_equal(tu_strobe("summary", trace, 0, &out), 0);
	tu_assert_contains(out, "step name ProfilerStep#5");
	free(out);
	char args[1300];
	snprintf(args, sizeof(args), "--json %s", trace);
	assert_int_equal(tu_strobe("summary", args, 0, &json), 0);
	yajl_val s = tu_parse_json(json);
	yajl_val rows = tu_get(s, "steps");
	assert_true(YAJL_IS_ARRAY(rows));
	assert_int_equal(YAJL_GET_ARRAY(rows)->len, 5);
	yajl_tree_free(s);
	free(json);
}

/* A trace through the API: marks on this thread make steps; the program's
 * own ProfilerStep ranges win over them. */
static void test_api_marks_and_own_steps(void **state)
{
	(void)state;
	uint64_t mask = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_USER_ANNOTATION);
	char path[1200];
	snprintf(path, sizeof(path), "%s/api.json", tu_dir);
	yajl_val steps[16];

	assert_int_equal(strobe_prepare(mask, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	for (int i = 0; i < 4; i++) {
		strobe_range_push("work");
		strobe_range_pop();
		strobe_step();
	}
	strobe_range_push("after the last mark");
	strobe_range_pop();
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	yajl_val root = tu_load_trace(path);
	/* Four marks, three stretches between them. */
	assert_int_equal(steps_of(root, steps, 16), 3);
	yajl_tree_free(root);

	assert_int_equal(strobe_prepare(mask, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	for (int i = 0; i < 4; i++) {
		strobe_range_push(i == 1 ? "ProfilerStep#41" : "work");
		strobe_range_pop();
		strobe_step();
	}
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	root = tu_load_trace(path);
	assert_int_equal(steps_of(root, steps, 16), 1);
	assert_string_equal(tu_get_str(steps[0], "name"), "ProfilerStep#41");
	yajl_tree_free(root);

	/* Without user_annotation selected, no steps either. */
	assert_int_equal(strobe_prepare(STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP), NULL), 0);
	assert_int_equal(strobe_start(), 0);
	for (int i = 0; i < 3; i++)
		strobe_step();
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(strobe_trace_activity_count(t), 0);
	strobe_trace_destroy(t);
}

/* An iteration-based on-demand trace of 3 iterations has 3 steps: the
 * mark that starts it begins the first, the one that ends it ends the
 * last. */
static void test_on_demand_iterations_are_steps(void **state)
{
	(void)state;
	char cfg[1500], path[1300];
	snprintf(cfg, sizeof(cfg),
	         "PROFILE_START_ITERATION=0\nACTIVITIES_WARMUP_ITERATIONS=0\nACTIVITIES_ITERATIONS=3\n"
	         "ACTIVITY_TYPES=user_annotation\nACTIVITIES_LOG_FILE=%s/od.json",
	         tu_dir);
	snprintf(path, sizeof(path), "%s/od_%d.json", tu_dir, (int)getpid());
	strobe_step();
	assert_int_equal(strobe_schedule(cfg), 0);
	for (int i = 0; i < 6; i++) {
		strobe_range_push("iter");
		strobe_range_pop();
		strobe_step();
	}
	for (int i = 0; i < 1000 && access(path, F_OK) != 0; i++)
		usleep(10000);
	usleep(200000); /* written to a temporary name and renamed: complete once seen */
	yajl_val root = tu_load_trace(path), steps[16];
	assert_int_equal(tu_count(root, "X", "user_annotation", "iter"), 3);
	assert_int_equal(steps_of(root, steps, 16), 3);
	yajl_tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_recorded_program_steps),
	    cmocka_unit_test(test_api_marks_and_own_steps),
	    cmocka_unit_test(test_on_demand_iterations_are_steps),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

/* Sized structs from an older, smaller header: the library reads only the
 * fields the caller's size covers and defaults the rest, even when the bytes
 * past that size hold something else. Each struct here is the current one
 * filled with STROBE_OPTS, with later fields set to values that would show
 * if they were read, and its size cut back to what an older header had. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/strobe.h"

struct type_count {
	enum strobe_activity_type type;
	size_t n;
};

static int count_one(const struct strobe_activity *a, void *arg)
{
	struct type_count *c = arg;
	c->n += a->type == c->type;
	return 0;
}

static size_t count_type(strobe_trace *t, enum strobe_activity_type type)
{
	struct type_count c = {type, 0};
	assert_int_equal(strobe_trace_foreach(t, count_one, &c), 0);
	return c.n;
}

struct found {
	const char *name;
	char category[64]; /* "" when the activity has none */
	size_t arg_count;
	size_t n;
};

static int find_named(const struct strobe_activity *a, void *arg)
{
	struct found *f = arg;
	if (a->name && !strcmp(a->name, f->name)) {
		snprintf(f->category, sizeof(f->category), "%s", a->category ? a->category : "");
		f->arg_count = a->arg_count;
		f->n++;
	}
	return 0;
}

/* Runs a trace around fn and returns what it holds of the activity name. */
static struct found traced(void (*fn)(void *), void *arg, const char *name)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	fn(arg);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	struct found f = {.name = name};
	assert_int_equal(strobe_trace_foreach(t, find_named, &f), 0);
	strobe_trace_destroy(t);
	return f;
}

/* ---- strobe_init_opts --------------------------------------------------- */

static int info_messages;

static void count_info(enum strobe_log_level level, const char *message, void *user_arg)
{
	(void)user_arg;
	if (level == STROBE_LOG_INFO && strstr(message, "initialised"))
		info_messages++;
}

/* Initialises afresh with opts and says whether strobe's "initialised"
 * message (INFO) reached an observer. */
static bool init_logs_info(const struct strobe_init_opts *opts)
{
	strobe_shutdown();
	setenv("STROBE_LOG_LEVEL", "4", 1); /* the environment's threshold: ERROR */
	info_messages = 0;
	assert_int_equal(strobe_log_add_observer(count_info, NULL), 0);
	assert_int_equal(strobe_init(opts), 0);
	assert_int_equal(strobe_log_remove_observer(count_info, NULL), 0);
	return info_messages > 0;
}

static void test_init_log_threshold(void **state)
{
	(void)state;
	struct strobe_init_opts opts =
	    STROBE_OPTS(strobe_init_opts, .log_threshold = STROBE_INIT_LOG_LEVEL(STROBE_LOG_INFO));
	assert_true(init_logs_info(&opts));
	/* An older struct without the field: the environment's threshold. */
	opts.size = offsetof(struct strobe_init_opts, log_threshold);
	assert_false(init_logs_info(&opts));
	/* STROBE_OPTS leaves it 0: the environment's threshold too. */
	struct strobe_init_opts plain = STROBE_OPTS(strobe_init_opts);
	assert_int_equal(plain.size, sizeof(struct strobe_init_opts));
	assert_false(init_logs_info(&plain));
	strobe_log_set_level(STROBE_LOG_ERROR);
}

/* A base config that selects user annotations only: whether a cpu_op is
 * recorded says whether the config file was read. */
static bool init_reads_config(const struct strobe_init_opts *opts)
{
	strobe_shutdown();
	assert_int_equal(strobe_init(opts), 0);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_op_push("op");
	strobe_op_pop();
	strobe_range_push("range");
	strobe_range_pop();
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(count_type(t, STROBE_ACTIVITY_USER_ANNOTATION), 1);
	bool read = count_type(t, STROBE_ACTIVITY_CPU_OP) == 0;
	strobe_trace_destroy(t);
	return read;
}

static void test_init_config_path(void **state)
{
	(void)state;
	char path[1100];
	snprintf(path, sizeof(path), "%s/base.conf", tu_dir);
	assert_int_equal(tu_write_file(path, "ACTIVITY_TYPES=user_annotation\n"), 0);
	struct strobe_init_opts opts = STROBE_OPTS(strobe_init_opts, .config_path = path);
	assert_true(init_reads_config(&opts));
	opts.size = offsetof(struct strobe_init_opts, config_path);
	assert_false(init_reads_config(&opts));
}

/* ---- strobe_activity ---------------------------------------------------- */

static const struct strobe_arg one_arg = {.key = "k", .kind = STROBE_ARG_I64, .value.i64 = 1};

static struct strobe_activity full_activity(const char *name)
{
	int64_t now = (int64_t)strobe_now_ns();
	struct strobe_activity a = STROBE_OPTS(strobe_activity, .type = STROBE_ACTIVITY_USER_ANNOTATION,
	                                       .name = name, .start_ns = now, .end_ns = now + 1000,
	                                       .args = &one_arg, .arg_count = 1, .category = "mycat");
	return a;
}

static void record(void *arg)
{
	assert_int_equal(strobe_record(arg), 0);
}

static void test_activity_sizes(void **state)
{
	(void)state;
	struct strobe_activity a = full_activity("full");
	struct found f = traced(record, &a, "full");
	assert_int_equal(f.n, 1);
	assert_string_equal(f.category, "mycat");
	assert_int_equal(f.arg_count, 1);

	/* A header from before categories: the type's own category. */
	a = full_activity("no_category");
	a.size = offsetof(struct strobe_activity, category);
	f = traced(record, &a, "no_category");
	assert_int_equal(f.n, 1);
	assert_true(!strcmp(f.category, "") || !strcmp(f.category, "user_annotation"));
	assert_int_equal(f.arg_count, 1);

	/* A header from before args: none, whatever args and arg_count hold. */
	a = full_activity("no_args");
	a.size = offsetof(struct strobe_activity, args);
	a.args = NULL; /* would be refused as malformed if arg_count were read */
	f = traced(record, &a, "no_args");
	assert_int_equal(f.n, 1);
	assert_int_equal(f.arg_count, 0);

	/* Too small to hold what every version has: refused, by name. */
	a = full_activity("tiny");
	a.size = offsetof(struct strobe_activity, flow_kind);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	assert_int_equal(strobe_record(&a), -EINVAL);
	tu_assert_contains(strobe_last_error(), "size field is too small");
	assert_int_equal(strobe_stop(NULL), 0);
}

/* ---- strobe_profiler_ops ------------------------------------------------ */

static int toggles, collects;

static int prof_toggle(bool enable, void *user_arg)
{
	(void)enable;
	(void)user_arg;
	toggles++;
	return 0;
}

static int prof_collect(strobe_activity_cb emit, void *emit_arg, void *user_arg)
{
	(void)user_arg;
	collects++;
	struct strobe_activity a = full_activity("collected");
	return emit(&a, emit_arg);
}

static void toggle_twice(void *arg)
{
	(void)arg;
	assert_int_equal(strobe_toggle_collection(false), 0);
	assert_int_equal(strobe_toggle_collection(true), 0);
}

static void test_profiler_sizes(void **state)
{
	(void)state;
	struct strobe_profiler_ops ops =
	    STROBE_OPTS(strobe_profiler_ops, .name = "sized", .collect = prof_collect, .toggle = prof_toggle);
	assert_int_equal(strobe_register_profiler(&ops, NULL), 0);
	toggles = collects = 0;
	struct found f = traced(toggle_twice, NULL, "collected");
	assert_int_equal(toggles, 2);
	assert_int_equal(collects, 1);
	assert_int_equal(f.n, 1);

	/* Before toggle existed: never called. Before collect: nothing collected. */
	ops.size = offsetof(struct strobe_profiler_ops, toggle);
	toggles = collects = 0;
	f = traced(toggle_twice, NULL, "collected");
	assert_int_equal(toggles, 0);
	assert_int_equal(collects, 1);
	ops.size = offsetof(struct strobe_profiler_ops, collect);
	toggles = collects = 0;
	f = traced(toggle_twice, NULL, "collected");
	assert_int_equal(toggles + collects, 0);
	assert_int_equal(f.n, 0);
	assert_int_equal(strobe_unregister_profiler(&ops, NULL), 0);

	ops.size = offsetof(struct strobe_profiler_ops, activity_mask);
	assert_int_equal(strobe_register_profiler(&ops, NULL), -EINVAL);
}

/* ---- strobe_output_ops -------------------------------------------------- */

static int writes;

static int count_write(const strobe_trace *trace, const char *location, void *user_arg)
{
	(void)trace;
	(void)location;
	(void)user_arg;
	writes++;
	return 0;
}

static void test_output_sizes(void **state)
{
	(void)state;
	static struct strobe_output_ops ops = STROBE_OPTS(strobe_output_ops, .write = count_write);
	assert_int_equal(strobe_register_output("sized", &ops, NULL), 0);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	writes = 0;
	assert_int_equal(strobe_trace_save(t, "sized://x"), 0);
	assert_int_equal(writes, 1);
	strobe_trace_destroy(t);
	assert_int_equal(strobe_unregister_output("sized"), 0);

	/* A struct that ends before write has no writer. */
	static struct strobe_output_ops small = STROBE_OPTS(strobe_output_ops, .write = count_write);
	small.size = offsetof(struct strobe_output_ops, write);
	assert_int_equal(strobe_register_output("small", &small, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_activity_sizes),   cmocka_unit_test(test_profiler_sizes),
	    cmocka_unit_test(test_output_sizes),     cmocka_unit_test(test_init_log_threshold),
	    cmocka_unit_test(test_init_config_path),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

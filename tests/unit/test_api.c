/* The public API's contract for bad arguments and bad states: the status a
 * caller gets, the message it can show, and that nothing is recorded when
 * it should not be. The first tests run before strobe_init. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/wait.h>
#include <unistd.h>

#include "common/log.h"
#include "strobe/strobe.h"

/* ---- helpers ------------------------------------------------------------ */

static void trace_now(uint64_t mask, const char *config)
{
	assert_int_equal(strobe_prepare(mask, config), 0);
	assert_int_equal(strobe_start(), 0);
}

static strobe_trace *stop_trace(void)
{
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_non_null(t);
	return t;
}

struct name_hunt {
	const char *prefix;
	size_t found;
};

static int hunt(const struct strobe_activity *a, void *arg)
{
	struct name_hunt *h = arg;
	if (a->name && !strncmp(a->name, h->prefix, strlen(h->prefix)))
		h->found++;
	return 0;
}

/* Number of activities in t whose name starts with prefix. */
static size_t count_named(const strobe_trace *t, const char *prefix)
{
	struct name_hunt h = {prefix, 0};
	assert_int_equal(strobe_trace_foreach(t, hunt, &h), 0);
	return h.found;
}

/* Records one of each CPU event kind, all named with prefix. */
static void record_everything(const char *prefix)
{
	char name[64];
	snprintf(name, sizeof(name), "%s.op", prefix);
	strobe_op_push(name);
	snprintf(name, sizeof(name), "%s.range", prefix);
	strobe_range_push(name);
	strobe_range_pop();
	strobe_op_pop();
	snprintf(name, sizeof(name), "%s.instant", prefix);
	strobe_instant(name);
	snprintf(name, sizeof(name), "%s.counter", prefix);
	strobe_counter(name, 1.0);
}

/* ---- before strobe_init ------------------------------------------------- */

static void test_not_initialised(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), STROBE_E_NOT_INIT);
	assert_true(strobe_last_error()[0] != 0);
	assert_int_equal(strobe_start(), STROBE_E_NOT_INIT);
	strobe_trace *t = (strobe_trace *)&t; /* must be reset */
	assert_int_equal(strobe_stop(&t), STROBE_E_NOT_INIT);
	assert_null(t);
	assert_int_equal(strobe_stop(NULL), STROBE_E_NOT_INIT);
	assert_false(strobe_is_tracing());
	/* Capture calls are ignored. */
	assert_int_equal(strobe_op_push("before.init"), 0);
	strobe_op_pop();
	record_everything("before.init");
}

/* ---- lifecycle ---------------------------------------------------------- */

static void test_init_idempotent(void **state)
{
	(void)state;
	struct strobe_init_opts opts = STROBE_OPTS(strobe_init_opts, .config_path = NULL);
	assert_int_equal(strobe_init(&opts), 0);
	assert_int_equal(strobe_init(NULL), 0);
	assert_int_equal(strobe_init(&opts), 0);
	assert_string_equal(strobe_version(), STROBE_VERSION_STRING);
}

static void test_state_errors(void **state)
{
	(void)state;
	assert_int_equal(strobe_stop(NULL), STROBE_E_STATE);
	tu_assert_contains(strobe_last_error(), "strobe_stop");
	assert_int_equal(strobe_start(), STROBE_E_STATE); /* nothing prepared */
	assert_int_equal(strobe_toggle_collection(true), STROBE_E_STATE);

	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_false(strobe_is_tracing());
	assert_int_equal(strobe_stop(NULL), STROBE_E_STATE); /* prepared, not started */
	assert_int_equal(strobe_start(), 0);
	assert_true(strobe_is_tracing());
	assert_int_equal(strobe_start(), -EALREADY);
	assert_true(strobe_is_tracing());
	assert_int_equal(strobe_toggle_collection(false), 0);
	assert_int_equal(strobe_toggle_collection(true), 0);
	assert_int_equal(strobe_stop(NULL), 0);
	assert_false(strobe_is_tracing());
	/* A stopped trace is over: it needs a new prepare. */
	assert_int_equal(strobe_stop(NULL), STROBE_E_STATE);
	assert_int_equal(strobe_start(), STROBE_E_STATE);
}

static void test_bad_config_refused(void **state)
{
	(void)state;
	static const char *const bad[] = {
	    "ACTIVITIES_WARMUP_PERIOD_SECS=5\nACTIVITY_TYPES=no_such_type\n",
	    "ACTIVITIES_WARMUP_PERIOD_SECS=5\nACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=lots\n",
	    "# comment\nPROFILE_START_ITERATION=1\n=oops=\n",
	};
	static const char *const line[] = {"line 2", "line 2", "line 3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(strobe_prepare(0, bad[i]), STROBE_E_CONFIG);
		tu_assert_contains(strobe_last_error(), line[i]);
		/* Refused as a whole: nothing was prepared. */
		assert_int_equal(strobe_start(), STROBE_E_STATE);
	}
}

/* A program that exits while its on-demand trace is collecting still
 * leaves the trace, with what was captured up to the exit. */
static void test_exit_writes_on_demand_trace(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp(), path[1200], text[1400];
	snprintf(path, sizeof(path), "%s/atexit.json", dir);
	snprintf(text, sizeof(text),
	         "ACTIVITIES_LOG_FILE=%s\nPROFILE_START_ITERATION=0\nACTIVITIES_WARMUP_ITERATIONS=0\n"
	         "ACTIVITIES_ITERATIONS=100000\n",
	         path);
	/* No strobe threads in the parent while it forks: the child allocates
	 * freely, which is only safe when no other thread held a lock then. */
	strobe_shutdown();
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* A step first: a program that steps gets an iteration-based trace. */
		if (strobe_init(NULL) || (strobe_step(), strobe_schedule(text)))
			_exit(3);
		for (int i = 0; i < 5; i++) {
			strobe_step();
			strobe_range_push("before-exit");
			strobe_range_pop();
		}
		exit(strobe_is_tracing() ? 0 : 4);
	}
	assert_int_equal(strobe_init(NULL), 0);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	char written[1300];
	/* The pid is inserted into on-demand file names, as libkineto does. */
	snprintf(written, sizeof(written), "%s/atexit_%d.json", dir, (int)pid);
	yajl_val t = tu_load_trace(written);
	assert_true(tu_count(t, "X", "user_annotation", "before-exit") >= 4);
	yajl_tree_free(t);
	tu_rmrf(dir);
}

static void count_verbose(enum strobe_log_level level, const char *message, void *user_arg)
{
	(void)message;
	int *n = user_arg;
	n[level == STROBE_LOG_VERBOSE ? 0 : 1]++;
}

/* VERBOSE_LOG_MODULES picks the modules whose verbose messages show; other
 * levels are not filtered. */
static void test_verbose_log_modules(void **state)
{
	(void)state;
	int seen[2] = {0, 0};
	strobe_log_set_level(STROBE_LOG_VERBOSE);
	assert_int_equal(strobe_log_add_observer(count_verbose, seen), 0);
	strb_log_set_verbose_modules("ipc, cupti.c");
	strb_log(STROBE_LOG_VERBOSE, "ipc", "shown");
	strb_log(STROBE_LOG_VERBOSE, "cupti", "shown");
	strb_log(STROBE_LOG_VERBOSE, "control", "hidden");
	strb_log(STROBE_LOG_VERBOSE, "ip", "hidden: a prefix is not a module");
	strb_log(STROBE_LOG_WARNING, "control", "shown: not verbose");
	assert_int_equal(seen[0], 2);
	assert_int_equal(seen[1], 1);
	/* From a trace's config. */
	assert_int_equal(strobe_prepare(0, "VERBOSE_LOG_MODULES=control\n"), 0);
	strb_log(STROBE_LOG_VERBOSE, "control", "shown");
	strb_log(STROBE_LOG_VERBOSE, "ipc", "hidden");
	assert_int_equal(seen[0], 3);
	strb_log_set_verbose_modules("");
	strb_log(STROBE_LOG_VERBOSE, "anything", "shown");
	assert_int_equal(seen[0], 4);
	assert_int_equal(strobe_start(), 0);
	assert_int_equal(strobe_stop(NULL), 0);
	assert_int_equal(strobe_log_remove_observer(count_verbose, seen), 0);
	strobe_log_set_level(STROBE_LOG_ERROR);
}

static void test_shutdown_then_init(void **state)
{
	(void)state;
	trace_now(0, NULL);
	record_everything("discarded");
	strobe_shutdown();
	assert_false(strobe_is_tracing());
	assert_int_equal(strobe_prepare(0, NULL), STROBE_E_NOT_INIT);
	strobe_shutdown(); /* twice is harmless */

	assert_int_equal(strobe_init(NULL), 0);
	trace_now(0, NULL);
	record_everything("again");
	strobe_trace *t = stop_trace();
	assert_int_equal(count_named(t, "again."), 4);
	assert_int_equal(count_named(t, "discarded."), 0);
	strobe_trace_destroy(t);
}

static void test_nothing_recorded_when_not_tracing(void **state)
{
	(void)state;
	record_everything("idle");
	assert_int_equal(strobe_op_push("idle.op2"), 0);
	strobe_op_pop();
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = STROBE_ACTIVITY_CPU_OP,
	                            .name = "idle.rec",
	                            .start_ns = 1,
	                            .end_ns = 2};
	assert_int_equal(strobe_record(&a), STROBE_E_STATE);

	assert_int_equal(strobe_prepare(0, NULL), 0);
	/* Prepared is not tracing yet. */
	record_everything("prepared");
	assert_int_equal(strobe_record(&a), STROBE_E_STATE);
	assert_int_equal(strobe_start(), 0);
	record_everything("live");
	strobe_trace *t = stop_trace();
	record_everything("after");
	assert_int_equal(count_named(t, "live."), 4);
	assert_int_equal(count_named(t, "idle."), 0);
	assert_int_equal(count_named(t, "prepared."), 0);
	assert_int_equal(count_named(t, "after."), 0);
	strobe_trace_destroy(t);

	/* The next trace does not see them either. */
	trace_now(0, NULL);
	t = stop_trace();
	assert_int_equal(count_named(t, "after."), 0);
	assert_int_equal(count_named(t, "live."), 0);
	strobe_trace_destroy(t);
}

/* ---- statuses and type names --------------------------------------------- */

static void test_status_strings(void **state)
{
	(void)state;
	static const int known[] = {STROBE_OK,
	                            STROBE_E_CONFIG,
	                            STROBE_E_STATE,
	                            STROBE_E_NOT_INIT,
	                            STROBE_E_NO_WRITER,
	                            STROBE_E_BAD_JSON,
	                            STROBE_E_IO,
	                            -EINVAL,
	                            -EBUSY,
	                            -EALREADY,
	                            -ENOSPC,
	                            -ENOTSUP,
	                            -EPERM,
	                            -ENOMEM,
	                            -ENOENT,
	                            -EEXIST};
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		const char *s = strobe_status_string(known[i]);
		assert_non_null(s);
		assert_true(strlen(s) > 0);
		assert_string_not_equal(s, "unknown status");
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(s, strobe_status_string(known[j]));
	}
	assert_string_equal(strobe_status_string(0), "OK");
	static const int odd[] = {1, 42, INT_MAX, INT_MIN, -4000, -4007, -4099, -99999, -3999, -100000000};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++)
		assert_non_null(strobe_status_string(odd[i]));
	for (int e = -5000; e < 50; e++)
		assert_non_null(strobe_status_string(e));
}

static void test_activity_type_names(void **state)
{
	(void)state;
	/* libkineto's ActivityType.h, in order (reference §3). */
	static const char *const names[] = {
	    "cpu_op",
	    "user_annotation",
	    "gpu_user_annotation",
	    "gpu_memcpy",
	    "gpu_memset",
	    "kernel",
	    "external_correlation",
	    "cuda_runtime",
	    "cuda_driver",
	    "cpu_instant_event",
	    "python_function",
	    "overhead",
	    "mtia_runtime",
	    "mtia_ccp_events",
	    "mtia_insight",
	    "cuda_sync",
	    "cuda_event",
	    "mtia_counters",
	    "glow_runtime",
	    "cuda_profiler_range",
	    "hpu_op",
	    "xpu_runtime",
	    "xpu_driver",
	    "collective_comm",
	    "privateuse1_runtime",
	    "privateuse1_driver",
	    "xpu_scope_profiler",
	    "xpu_sync",
	    "hardware_counters",
	};
	assert_int_equal(sizeof(names) / sizeof(names[0]), STROBE_ACTIVITY_KINETO_COUNT);
	for (int i = 0; i < STROBE_ACTIVITY_KINETO_COUNT; i++) {
		const char *n = strobe_activity_type_name((enum strobe_activity_type)i);
		assert_non_null(n);
		assert_string_equal(n, names[i]);
		enum strobe_activity_type parsed = STROBE_ACTIVITY_TYPE_MAX;
		assert_int_equal(strobe_activity_type_parse(names[i], &parsed), 0);
		assert_int_equal(parsed, i);
	}
	assert_string_equal(strobe_activity_type_name(STROBE_ACTIVITY_CPU_COUNTER), "cpu_counter");
	enum strobe_activity_type parsed;
	assert_int_equal(strobe_activity_type_parse("cpu_counter", &parsed), 0);
	assert_int_equal(parsed, 48);

	assert_int_equal(strobe_activity_type_parse("gpu_memory", &parsed), 0);
	assert_int_equal(parsed, 49);
	assert_int_equal(strobe_activity_type_parse("gpu_counters", &parsed), 0);
	assert_int_equal(parsed, 50);

	/* 29..47 stay free for libkineto; nothing else above 50 exists yet. */
	for (int i = STROBE_ACTIVITY_KINETO_COUNT; i <= STROBE_ACTIVITY_TYPE_MAX; i++)
		if (i < STROBE_ACTIVITY_CPU_COUNTER || i > STROBE_ACTIVITY_GPU_COUNTERS)
			assert_null(strobe_activity_type_name((enum strobe_activity_type)i));
	assert_null(strobe_activity_type_name((enum strobe_activity_type)64));
	assert_null(strobe_activity_type_name((enum strobe_activity_type) - 1));
	assert_null(strobe_activity_type_name((enum strobe_activity_type)1000000));

	/* Exact and case-sensitive, as libkineto's toActivityType. */
	static const char *const not_types[] = {"Kernel", "CPU_OP",     "cpu_op ", " cpu_op",
	                                        "",       "ENUM_COUNT", "cpu",     "kernel\n"};
	for (size_t i = 0; i < sizeof(not_types) / sizeof(not_types[0]); i++)
		assert_int_equal(strobe_activity_type_parse(not_types[i], &parsed), -EINVAL);
	assert_int_equal(strobe_activity_type_parse(NULL, &parsed), -EINVAL);
	assert_int_equal(strobe_activity_type_parse("cpu_op", NULL), -EINVAL);
}

/* ---- metadata -------------------------------------------------------------- */

static void test_metadata_json_validated(void **state)
{
	(void)state;
	static const char *const bad[] = {"{",
	                                  "",
	                                  "1 2",
	                                  "nan",
	                                  "NaN",
	                                  "{\"a\": }",
	                                  "[1, 2",
	                                  "'x'",
	                                  "abc",
	                                  "{\"a\": 1} {}",
	                                  "\"unterminated",
	                                  "   "};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = strobe_metadata_set_json("bad_json_key", bad[i]);
		if (rc != STROBE_E_BAD_JSON)
			fail_msg("\"%s\" gave %d, not STROBE_E_BAD_JSON", bad[i], rc);
	}
	/* Never stored: removing it finds nothing. */
	assert_int_equal(strobe_metadata_remove("bad_json_key"), -ENOENT);

	static const char *const good[] = {
	    "1",    "-2.5e3",  "\"s\"", "true",
	    "null", "[]",      "{}",    "{\"a\": [1, {\"b\": null}], \"c\": \"d\"}",
	    " 7 ",  "[1, 2]\n"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int rc = strobe_metadata_set_json("good_json_key", good[i]);
		if (rc != 0)
			fail_msg("\"%s\" refused with %d", good[i], rc);
	}
	assert_int_equal(strobe_metadata_remove("good_json_key"), 0);
	assert_int_equal(strobe_metadata_remove("good_json_key"), -ENOENT);
}

static void test_metadata_bad_arguments(void **state)
{
	(void)state;
	assert_int_equal(strobe_metadata_set_string(NULL, "v"), -EINVAL);
	assert_int_equal(strobe_metadata_set_string("", "v"), -EINVAL);
	assert_int_equal(strobe_metadata_set_string("k", NULL), -EINVAL);
	assert_int_equal(strobe_metadata_set_int(NULL, 1), -EINVAL);
	assert_int_equal(strobe_metadata_set_int("", 1), -EINVAL);
	assert_int_equal(strobe_metadata_set_double(NULL, 1.0), -EINVAL);
	assert_int_equal(strobe_metadata_set_json(NULL, "1"), -EINVAL);
	assert_int_equal(strobe_metadata_set_json("", "1"), -EINVAL);
	assert_int_equal(strobe_metadata_set_json("k", NULL), -EINVAL);
	assert_int_equal(strobe_metadata_remove(NULL), -EINVAL);
	assert_int_equal(strobe_metadata_remove("never_set"), -ENOENT);
	assert_int_equal(strobe_thread_set_name(NULL), -EINVAL);
}

/* The trace's own top-level keys cannot be set twice; distributedInfo may
 * be replaced, as in libkineto. */
static void test_metadata_reserved_keys(void **state)
{
	(void)state;
	static const char *const own[] = {
	    "traceEvents",   "displayTimeUnit", "baseTimeNanoseconds", "deviceProperties", "traceName",
	    "schemaVersion", "strobe"};
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		assert_int_equal(strobe_metadata_set_string(own[i], "x"), -EINVAL);
		tu_assert_contains(strobe_last_error(), own[i]);
		tu_assert_contains(strobe_last_error(), "the trace writes itself");
		assert_int_equal(strobe_metadata_set_int(own[i], 1), -EINVAL);
		assert_int_equal(strobe_metadata_set_double(own[i], 1.0), -EINVAL);
		assert_int_equal(strobe_metadata_set_json(own[i], "[]"), -EINVAL);
		assert_int_equal(strobe_metadata_remove(own[i]), -ENOENT);
	}
	/* Each key appears once in the file, with strobe's value. */
	trace_now(0, NULL);
	strobe_trace *t = stop_trace();
	char dir[1024], path[1100];
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	snprintf(path, sizeof(path), "%s/reserved.json", dir);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	char *text = tu_read_file(path, NULL);
	assert_non_null(text);
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		char quoted[64];
		snprintf(quoted, sizeof(quoted), "\n  \"%s\": ", own[i]);
		const char *at = strstr(text, quoted);
		if (!at || strstr(at + 1, quoted))
			fail_msg("%s is not in the trace exactly once", own[i]);
	}
	free(text);
	tu_rmrf(dir);

	assert_int_equal(strobe_metadata_set_json("distributedInfo", "{\"rank\": 2}"), 0);
	assert_int_equal(strobe_metadata_remove("distributedInfo"), 0);
	assert_int_equal(strobe_metadata_set_string("TraceEvents", "x"), 0); /* keys are case-sensitive */
	assert_int_equal(strobe_metadata_remove("TraceEvents"), 0);
}

/* ---- strobe_record ----------------------------------------------------------- */

static struct strobe_activity valid_activity(void)
{
	int64_t now = (int64_t)strobe_now_ns();
	return (struct strobe_activity){.size = sizeof(struct strobe_activity),
	                                .type = STROBE_ACTIVITY_CPU_OP,
	                                .name = "rec.valid",
	                                .start_ns = now,
	                                .end_ns = now + 1000};
}

static void assert_record_refused(const struct strobe_activity *a, int want, const char *why)
{
	int rc = strobe_record(a);
	if (rc != want)
		fail_msg("%s: strobe_record gave %d (%s), want %d", why, rc, strobe_status_string(rc), want);
	assert_true(strobe_last_error()[0] != 0);
}

static void test_record_validation(void **state)
{
	(void)state;
	trace_now(0, NULL);
	struct strobe_activity a = valid_activity();
	assert_int_equal(strobe_record(&a), 0);

	assert_record_refused(NULL, -EINVAL, "NULL");
	a = valid_activity();
	a.end_ns = a.start_ns - 1;
	assert_record_refused(&a, -EINVAL, "end before start");
	a = valid_activity();
	a.type = (enum strobe_activity_type)40;
	assert_record_refused(&a, -EINVAL, "type 40");
	a.type = (enum strobe_activity_type)STROBE_ACTIVITY_KINETO_COUNT;
	assert_record_refused(&a, -EINVAL, "type ENUM_COUNT");
	a.type = (enum strobe_activity_type) - 3;
	assert_record_refused(&a, -EINVAL, "negative type");
	a.type = (enum strobe_activity_type)64;
	assert_record_refused(&a, -EINVAL, "type 64");

	struct strobe_arg args[2] = {{.key = "ok", .kind = STROBE_ARG_I64, .value.i64 = 1},
	                             {.key = NULL, .kind = STROBE_ARG_I64, .value.i64 = 2}};
	a = valid_activity();
	a.args = args;
	a.arg_count = 2;
	assert_record_refused(&a, -EINVAL, "NULL arg key");
	args[1] = (struct strobe_arg){.key = "j", .kind = STROBE_ARG_JSON, .value.str = "{\"unclosed\": 1"};
	assert_record_refused(&a, STROBE_E_BAD_JSON, "JSON arg that does not parse");
	args[1].value.str = "1 2";
	assert_record_refused(&a, STROBE_E_BAD_JSON, "JSON arg with two values");
	args[1] = (struct strobe_arg){.key = "s", .kind = STROBE_ARG_STRING, .value.str = NULL};
	assert_record_refused(&a, -EINVAL, "NULL string arg");
	args[1] = (struct strobe_arg){.key = "k", .kind = (enum strobe_arg_kind)99};
	assert_record_refused(&a, -EINVAL, "unknown arg kind");
	a.args = NULL;
	assert_record_refused(&a, -EINVAL, "args NULL with a count");

	strobe_trace *t = stop_trace();
	/* Only the valid one made it. */
	assert_int_equal(count_named(t, "rec."), 1);
	strobe_trace_destroy(t);

	a = valid_activity();
	assert_record_refused(&a, STROBE_E_STATE, "not tracing");
}

/* ---- traces ------------------------------------------------------------------ */

static int stop_at_first(const struct strobe_activity *a, void *arg)
{
	(void)a;
	(void)arg;
	return 1;
}

static size_t dir_entries(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", dir);
	char *out = NULL;
	assert_int_equal(tu_run(cmd, 0, &out), 0);
	size_t n = (size_t)strtoul(out, NULL, 10);
	free(out);
	return n;
}

static void test_trace_errors(void **state)
{
	(void)state;
	strobe_trace_destroy(NULL);
	assert_int_equal(strobe_trace_activity_count(NULL), 0);
	assert_int_equal(strobe_trace_foreach(NULL, stop_at_first, NULL), -EINVAL);
	assert_int_equal(strobe_trace_save(NULL, "/tmp/x.json"), -EINVAL);

	trace_now(0, NULL);
	strobe_instant("one");
	strobe_trace *t = stop_trace();
	assert_int_equal(strobe_trace_foreach(t, NULL, NULL), -EINVAL);
	assert_int_equal(strobe_trace_save(t, NULL), -EINVAL);
	assert_int_equal(strobe_trace_save(t, ""), -EINVAL);
	assert_int_equal(strobe_trace_save(t, "file://"), -EINVAL);
	assert_int_equal(strobe_trace_save(t, "nosuchproto://somewhere"), STROBE_E_NO_WRITER);
	tu_assert_contains(strobe_last_error(), "nosuchproto");

	char *dir = strdup(tu_mkdtemp());
	char path[4200];
	snprintf(path, sizeof(path), "%s/missing/sub/trace.json", dir);
	assert_int_equal(strobe_trace_save(t, path), STROBE_E_IO);
	tu_assert_contains(strobe_last_error(), "missing");
	assert_int_equal(dir_entries(dir), 0);
	snprintf(path, sizeof(path), "file://%s/missing/trace.json.gz", dir);
	assert_int_equal(strobe_trace_save(t, path), STROBE_E_IO);
	assert_int_equal(dir_entries(dir), 0);

	/* The same trace still saves fine afterwards. */
	snprintf(path, sizeof(path), "%s/ok.json", dir);
	assert_int_equal(strobe_trace_save(t, path), 0);
	assert_int_equal(dir_entries(dir), 1);
	yajl_val root = tu_load_trace(path);
	assert_int_equal(tu_count(root, "i", "cpu_instant_event", "one"), 1);
	yajl_tree_free(root);
	strobe_trace_destroy(t);
	tu_rmrf(dir);
	free(dir);
}

/* ---- log observers --------------------------------------------------------------- */

struct log_seen {
	int warnings;
	int total;
	char last[1024];
};

static void on_log(enum strobe_log_level level, const char *message, void *user_arg)
{
	struct log_seen *s = user_arg;
	s->total++;
	if (level == STROBE_LOG_WARNING) {
		s->warnings++;
		snprintf(s->last, sizeof(s->last), "%s", message);
	}
}

static void on_log_other(enum strobe_log_level level, const char *message, void *user_arg)
{
	on_log(level, message, user_arg);
}

/* Something that logs a warning: replacing a prepared trace. */
static void provoke_warning(void)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	assert_int_equal(strobe_stop(NULL), 0);
}

static void test_log_observers(void **state)
{
	(void)state;
	struct log_seen a = {0}, b = {0};
	strobe_log_set_level(STROBE_LOG_WARNING);
	assert_int_equal(strobe_log_add_observer(NULL, &a), -EINVAL);
	assert_int_equal(strobe_log_add_observer(on_log, &a), 0);
	assert_int_equal(strobe_log_add_observer(on_log, &a), -EEXIST);
	/* Same callback, other user_arg, and another callback: distinct observers. */
	assert_int_equal(strobe_log_add_observer(on_log, &b), 0);
	assert_int_equal(strobe_log_add_observer(on_log_other, &a), 0);

	provoke_warning();
	assert_int_equal(a.warnings, 2 * b.warnings);
	assert_true(b.warnings >= 1);
	tu_assert_contains(b.last, "replace");
	assert_true(strchr(b.last, '\n') == NULL);

	assert_int_equal(strobe_log_remove_observer(on_log, &a), 0);
	assert_int_equal(strobe_log_remove_observer(on_log, &a), -ENOENT);
	assert_int_equal(strobe_log_remove_observer(on_log_other, &a), 0);
	int before_a = a.total, before_b = b.total;
	provoke_warning();
	assert_int_equal(a.total, before_a);
	assert_true(b.total > before_b);

	/* Below the threshold nothing arrives. */
	strobe_log_set_level(STROBE_LOG_ERROR);
	before_b = b.total;
	provoke_warning();
	assert_int_equal(b.total, before_b);
	assert_int_equal(strobe_log_remove_observer(on_log, &b), 0);
	assert_int_equal(strobe_log_remove_observer(on_log, &b), -ENOENT);
}

static void test_log_observer_limit(void **state)
{
	(void)state;
	static struct log_seen seen[17];
	for (int i = 0; i < 16; i++)
		assert_int_equal(strobe_log_add_observer(on_log, &seen[i]), 0);
	assert_int_equal(strobe_log_add_observer(on_log, &seen[16]), -ENOSPC);
	for (int i = 0; i < 16; i++)
		assert_int_equal(strobe_log_remove_observer(on_log, &seen[i]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_not_initialised), /* must run first */
	    cmocka_unit_test(test_status_strings),
	    cmocka_unit_test(test_activity_type_names),
	    cmocka_unit_test(test_init_idempotent),
	    cmocka_unit_test(test_state_errors),
	    cmocka_unit_test(test_bad_config_refused),
	    cmocka_unit_test(test_nothing_recorded_when_not_tracing),
	    cmocka_unit_test(test_metadata_json_validated),
	    cmocka_unit_test(test_metadata_bad_arguments),
	    cmocka_unit_test(test_metadata_reserved_keys),
	    cmocka_unit_test(test_record_validation),
	    cmocka_unit_test(test_trace_errors),
	    cmocka_unit_test(test_log_observers),
	    cmocka_unit_test(test_log_observer_limit),
	    cmocka_unit_test(test_shutdown_then_init),
	    cmocka_unit_test(test_exit_writes_on_demand_trace),
	    cmocka_unit_test(test_verbose_log_modules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

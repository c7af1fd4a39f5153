/* The on-demand state machine driven by hand, without strobe_init (so no
 * service thread races the test): requests go in through
 * strb_ondemand_submit, time advances only through the now_ms given to
 * strb_ondemand_tick, iterations only through strb_ondemand_step. The cases
 * follow libkineto's AsyncActivityProfilerHandlerTest and
 * ActivityProfilerControllerTest where they apply to strobe. */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "control/controller.h"
#include "control/ondemand.h"
#include "core/clock.h"
#include "strobe/strobe.h"

static char dir[256];
static int64_t now0;

static struct {
	int calls;
	int status;
	char path[PATH_MAX];
	enum strb_async_state state_in_cb;
} heard;

static void on_written(const char *path, int status, void *arg)
{
	(void)arg;
	heard.calls++;
	heard.status = status;
	snprintf(heard.path, sizeof(heard.path), "%s", path);
	heard.state_in_cb = strb_ondemand_state();
}

static int64_t wall_ms(void)
{
	return strb_clock_real_ns() / 1000000;
}

/* Parses text as strobe_schedule would (not on demand), at now0. */
static struct strb_config parse(const char *text)
{
	struct strb_config c;
	strb_config_init(&c);
	struct strb_config_parse_opts o = {.now_ms = now0};
	char err[512] = "";
	int rc = strb_config_parse(&c, text, &o, err, sizeof(err));
	if (rc)
		fail_msg("config refused: %s\n%s", err, text);
	return c;
}

static int submit_text(const char *text, enum strb_request_source src)
{
	struct strb_config c = parse(text);
	return strb_ondemand_submit(&c, src);
}

/* "<dir>/<name>" with the pid inserted before ".json". */
static void out_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s_%d.json", dir, name, (int)getpid());
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static void step_n(int n)
{
	for (int i = 0; i < n; i++) {
		strb_ondemand_step(wall_ms());
		strobe_op_push("work");
		strobe_op_pop();
	}
}

/* Back to a fresh machine: nothing pending or active, the iteration count
 * at -1 (the library's own fork-child reset, used here between tests). */
static int setup(void **state)
{
	(void)state;
	strb_ondemand_cancel("test setup");
	strb_control_cancel(STRB_OWNER_NONE);
	strb_ondemand_atfork_child();
	strobe_set_trace_callback(on_written, NULL);
	memset(&heard, 0, sizeof(heard));
	now0 = wall_ms();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	strb_ondemand_cancel("test teardown");
	strb_control_cancel(STRB_OWNER_NONE);
	return 0;
}

static size_t count_work(const char *path)
{
	yajl_val root = tu_load_trace(path);
	size_t n = tu_count(root, "X", "cpu_op", "work");
	yajl_tree_free(root);
	return n;
}

/* ---- time-based ---------------------------------------------------------- */

static void test_time_based_lifecycle(void **state)
{
	(void)state;
	char text[2048], path[PATH_MAX];
	snprintf(text, sizeof(text),
	         "ACTIVITIES_LOG_FILE=%s/time.json\nPROFILE_START_TIME=%lld\nACTIVITIES_DURATION_MSECS=500\n"
	         "ACTIVITIES_WARMUP_PERIOD_SECS=1\nREQUEST_TRACE_ID=424242\n",
	         dir, (long long)(now0 + 3000));
	out_path(path, sizeof(path), "time");
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	assert_false(strb_ondemand_accepting());
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);

	/* Not yet: the trigger fires 1 s before warm-up begins. */
	strb_ondemand_tick(now0);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	strb_ondemand_tick(now0 + 1000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_WARMUP);
	/* Steps do nothing in time mode. */
	step_n(20);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_WARMUP);
	strb_ondemand_tick(now0 + 2999);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_WARMUP);
	strb_ondemand_tick(now0 + 3000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	step_n(20);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	strb_ondemand_tick(now0 + 3499);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	assert_false(exists(path));
	/* Collect -> process (seen from the callback) -> idle, in one tick. */
	strb_ondemand_tick(now0 + 3500);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	assert_true(strb_ondemand_accepting());
	assert_int_equal(heard.calls, 1);
	assert_int_equal(heard.status, 0);
	assert_int_equal(heard.state_in_cb, STRB_ASYNC_PROCESSING);
	assert_string_equal(heard.path, path);

	size_t len = 0;
	char *body = tu_read_file(path, &len);
	assert_non_null(body);
	assert_true(len > 100);
	free(body);
	yajl_val root = tu_load_trace(path);
	assert_string_equal(tu_get_str(root, "trace_id"), "424242");
	assert_int_equal(tu_count(root, "X", "cpu_op", "work"), 20);
	yajl_tree_free(root);
}

/* A time-based request into NAME.json starting 3 s after now0 with a 1 s
 * warm-up, ticked into warm-up; path gets the file it will write. */
static void submit_starting_at_3s(const char *name, int duration_ms, char *path, size_t len)
{
	char text[2048];
	snprintf(text, sizeof(text),
	         "ACTIVITIES_LOG_FILE=%s/%s.json\nPROFILE_START_TIME=%lld\nACTIVITIES_DURATION_MSECS=%d\n"
	         "ACTIVITIES_WARMUP_PERIOD_SECS=1\n",
	         dir, name, (long long)(now0 + 3000), duration_ms);
	out_path(path, len, name);
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	strb_ondemand_tick(now0 + 1000);
}

/* The program exits in the middle of the window: what was captured is
 * written at once (the exit handler's path); in warm-up nothing is. */
static void test_exit_writes_collecting_trace(void **state)
{
	(void)state;
	char path[PATH_MAX];
	submit_starting_at_3s("exit", 60000, path, sizeof(path));
	strb_ondemand_tick(now0 + 3000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	step_n(7);
	strb_ondemand_at_exit();
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	assert_int_equal(heard.calls, 1);
	assert_int_equal(heard.status, 0);
	assert_int_equal(count_work(path), 7);
	/* A later tick (the service thread) finds nothing left to write. */
	strb_ondemand_tick(now0 + 4000);
	assert_int_equal(heard.calls, 1);
}

static void test_exit_in_warmup_writes_nothing(void **state)
{
	(void)state;
	char path[PATH_MAX];
	submit_starting_at_3s("warm", 500, path, sizeof(path));
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_WARMUP);
	strb_ondemand_at_exit();
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	assert_false(exists(path));
	assert_int_equal(heard.calls, 0);
	assert_int_equal(strb_control_owner(), STRB_OWNER_NONE);
}

static void test_past_start_time_refused(void **state)
{
	(void)state;
	char text[2048];
	snprintf(
	    text, sizeof(text),
	    "ACTIVITIES_LOG_FILE=%s/past.json\nPROFILE_START_TIME=%lld\nACTIVITIES_WARMUP_PERIOD_SECS=0\n",
	    dir, (long long)(now0 + 1000));
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	/* The service thread was late: at activation the start has passed. */
	strb_ondemand_tick(now0 + 5000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	assert_true(strb_ondemand_accepting());
	assert_int_equal(strb_control_state(), STRB_IDLE);
	strb_ondemand_tick(now0 + 6000);
	assert_int_equal(heard.calls, 0);
	char path[PATH_MAX];
	out_path(path, sizeof(path), "past");
	assert_false(exists(path));
}

/* ---- iteration-based ------------------------------------------------------ */

/* Steps once (iteration 0), submits (start, warmup, iters[, roundup]) and
 * checks the iterations at which warm-up and collection begin and end. */
static void run_iterations(const char *name, int start, int warmup, int iters, int roundup, int pre_steps,
                           int warm_at, int collect_at)
{
	char text[2048], path[PATH_MAX];
	int n = snprintf(
	    text, sizeof(text),
	    "ACTIVITIES_LOG_FILE=%s/%s.json\nPROFILE_START_ITERATION=%d\nACTIVITIES_WARMUP_ITERATIONS=%d\n"
	    "ACTIVITIES_ITERATIONS=%d\n",
	    dir, name, start, warmup, iters);
	if (roundup > 0)
		snprintf(text + n, sizeof(text) - (size_t)n, "PROFILE_START_ITERATION_ROUNDUP=%d\n", roundup);
	out_path(path, sizeof(path), name);
	step_n(pre_steps); /* iterations 0 .. pre_steps-1 */
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	int iter = pre_steps;
	for (; iter < warm_at; iter++) {
		step_n(1);
		assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	}
	/* Ticks never move an iteration-based trace. */
	strb_ondemand_tick(now0 + 60000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	for (; iter < collect_at; iter++) {
		step_n(1);
		assert_int_equal(strb_ondemand_state(), STRB_ASYNC_WARMUP);
	}
	strb_ondemand_tick(now0 + 70000);
	for (; iter < collect_at + iters; iter++) {
		step_n(1);
		assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	}
	/* The step that ends collection does not process: no file yet. */
	strb_ondemand_step(wall_ms());
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_PROCESSING);
	step_n(3);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_PROCESSING);
	assert_false(exists(path));
	assert_int_equal(heard.calls, 0);
	strb_ondemand_tick(wall_ms());
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	assert_int_equal(heard.calls, 1);
	assert_int_equal(heard.status, 0);
	assert_true(exists(path));
	assert_int_equal(count_work(path), (size_t)iters);
}

static void test_iterations_50_5_10(void **state)
{
	(void)state;
	run_iterations("it50", 50, 5, 10, 0, 1, 45, 50);
}

static void test_iterations_0_0_2(void **state)
{
	(void)state;
	/* Iteration 0 has passed when the request arrives: it starts at 1. */
	run_iterations("it0", 0, 0, 2, 0, 1, 1, 1);
}

static void test_iterations_0_5_5(void **state)
{
	(void)state;
	run_iterations("it05", 0, 5, 5, 0, 1, 1, 6);
}

static void test_iterations_roundup(void **state)
{
	(void)state;
	/* At iteration 9, start 8 has passed: 9 + 5 rounds up to 100, so warm-up
	 * begins at 95. */
	run_iterations("round", 8, 5, 3, 100, 9, 95, 100);
}

/* Must run first after a reset: the iteration count is still -1. */
static void test_iterations_without_step(void **state)
{
	(void)state;
	char text[2048];
	snprintf(text, sizeof(text),
	         "ACTIVITIES_LOG_FILE=%s/nostep.json\nPROFILE_START_ITERATION=0\nACTIVITIES_ITERATIONS=3\n"
	         "ACTIVITIES_DURATION_MSECS=0\n",
	         dir);
	struct strb_config c;
	strb_config_init(&c);
	struct strb_config_parse_opts o = {.now_ms = now0};
	if (strb_config_parse(&c, text, &o, NULL, 0) == 0) {
		assert_int_equal(strb_ondemand_submit(&c, STRB_SOURCE_API), -EINVAL);
	} else {
		/* Duration 0 cannot be written: build it by hand. */
		snprintf(text, sizeof(text),
		         "ACTIVITIES_LOG_FILE=%s/"
		         "nostep.json\nPROFILE_START_ITERATION=0\nACTIVITIES_ITERATIONS=3\n",
		         dir);
		c = parse(text);
		c.duration_ms = 0;
		assert_int_equal(strb_ondemand_submit(&c, STRB_SOURCE_API), -EINVAL);
	}
	assert_true(strb_ondemand_accepting());
	assert_string_not_equal(strobe_last_error(), "");

	/* With a duration it becomes a time-based trace. */
	snprintf(text, sizeof(text),
	         "ACTIVITIES_LOG_FILE=%s/nostep.json\nPROFILE_START_ITERATION=0\nACTIVITIES_ITERATIONS=3\n"
	         "ACTIVITIES_DURATION_MSECS=200\nACTIVITIES_WARMUP_PERIOD_SECS=0\n",
	         dir);
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	/* Validation chose start = now0 + 0 s warm-up + 2 s. */
	strb_ondemand_tick(now0 + 1000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_WARMUP);
	strb_ondemand_tick(now0 + 2000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	strb_ondemand_tick(now0 + 2200);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	char path[PATH_MAX];
	out_path(path, sizeof(path), "nostep");
	assert_int_equal(heard.calls, 1);
	assert_true(exists(path));
}

/* ---- refusals --------------------------------------------------------------- */

static void test_second_request_refused(void **state)
{
	(void)state;
	char text[2048];
	snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s/one.json\nACTIVITIES_DURATION_MSECS=100\n", dir);
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	/* Pending. */
	assert_int_equal(submit_text(text, STRB_SOURCE_DAEMON), -EBUSY);
	/* Running. */
	strb_ondemand_tick(now0 + 6000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_WARMUP);
	assert_false(strb_ondemand_accepting());
	assert_int_equal(submit_text(text, STRB_SOURCE_API), -EBUSY);
	strb_ondemand_tick(now0 + 7000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	assert_int_equal(submit_text(text, STRB_SOURCE_API), -EBUSY);
	strb_ondemand_tick(now0 + 7100);
	assert_int_equal(heard.calls, 1);
	/* Idle again: accepted. */
	assert_true(strb_ondemand_accepting());
	snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s/two.json\nACTIVITIES_DURATION_MSECS=100\n", dir);
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
}

static void test_sync_preempts_pending(void **state)
{
	(void)state;
	char text[2048], path[PATH_MAX];
	snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s/pre1.json\nACTIVITIES_DURATION_MSECS=100\n",
	         dir);
	out_path(path, sizeof(path), "pre1");
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	struct strb_config sync = parse("ACTIVITY_TYPES=cpu_op\n");
	strb_ondemand_cancel("a synchronous trace");
	assert_int_equal(strb_control_prepare(&sync, STRB_OWNER_SYNC), 0);
	assert_int_equal(strb_control_owner(), STRB_OWNER_SYNC);
	for (int t = 0; t <= 10; t++)
		strb_ondemand_tick(now0 + t * 1000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	/* While the sync trace exists, on-demand requests are refused. */
	assert_false(strb_ondemand_accepting());
	assert_int_equal(submit_text(text, STRB_SOURCE_DAEMON), -EBUSY);
	strb_control_cancel(STRB_OWNER_SYNC);
	assert_int_equal(heard.calls, 0);
	assert_false(exists(path));
}

static void test_sync_preempts_active(void **state)
{
	(void)state;
	char text[2048], path[PATH_MAX];
	snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s/pre2.json\nACTIVITIES_DURATION_MSECS=1000\n",
	         dir);
	out_path(path, sizeof(path), "pre2");
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	strb_ondemand_tick(now0 + 6000);
	strb_ondemand_tick(now0 + 7000);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_COLLECTING);
	assert_int_equal(strb_control_owner(), STRB_OWNER_ASYNC);
	struct strb_config sync = parse("ACTIVITY_TYPES=cpu_op\n");
	strb_ondemand_cancel("a synchronous trace");
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	assert_int_equal(strb_control_prepare(&sync, STRB_OWNER_SYNC), 0);
	for (int t = 7; t <= 12; t++)
		strb_ondemand_tick(now0 + t * 1000);
	assert_int_equal(strb_control_owner(), STRB_OWNER_SYNC);
	assert_int_equal(strb_control_state(), STRB_PREPARED);
	strb_control_cancel(STRB_OWNER_SYNC);
	assert_int_equal(heard.calls, 0);
	assert_false(exists(path));
}

static void test_async_prepare_refused_while_sync(void **state)
{
	(void)state;
	struct strb_config sync = parse("ACTIVITY_TYPES=cpu_op\n");
	assert_int_equal(strb_control_prepare(&sync, STRB_OWNER_SYNC), 0);
	struct strb_config c = parse("ACTIVITIES_DURATION_MSECS=100\n");
	assert_int_equal(strb_control_prepare(&c, STRB_OWNER_ASYNC), -EBUSY);
	strb_control_cancel(STRB_OWNER_SYNC);
	assert_int_equal(strb_control_owner(), STRB_OWNER_NONE);
}

static void test_disabled_and_memory_refused(void **state)
{
	(void)state;
	assert_int_equal(submit_text("ACTIVITIES_ENABLED=false\n", STRB_SOURCE_DAEMON), -EINVAL);
	assert_true(strb_ondemand_accepting());
	assert_int_equal(
	    submit_text("PROFILE_MEMORY=true\nACTIVITIES_DURATION_MSECS=100\n", STRB_SOURCE_DAEMON),
	    -ENOTSUP);
	assert_non_null(strstr(strobe_last_error(), "PROFILE_MEMORY"));
	assert_true(strb_ondemand_accepting());
	/* Enabled (explicitly) is accepted. */
	char text[2048];
	snprintf(text, sizeof(text), "ACTIVITIES_ENABLED=true\nACTIVITIES_LOG_FILE=%s/en.json\n", dir);
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
}

/* ---- restricted writes (daemon and signal requests) ------------------------ */

/* Submits a daemon request for `file` (absolute) and runs it to the end;
 * returns the status the callback heard. */
static int run_daemon_request(const char *file)
{
	char text[PATH_MAX + 256];
	snprintf(text, sizeof(text),
	         "ACTIVITIES_LOG_FILE=%s\nACTIVITIES_DURATION_MSECS=100\n"
	         "ACTIVITIES_WARMUP_PERIOD_SECS=0\n",
	         file);
	struct strb_config c;
	strb_config_init(&c);
	/* Parsed without the on-demand check so that the writer's own check
	 * is what is tested. */
	struct strb_config_parse_opts o = {.now_ms = now0};
	assert_int_equal(strb_config_parse(&c, text, &o, NULL, 0), 0);
	assert_int_equal(strb_ondemand_submit(&c, STRB_SOURCE_DAEMON), 0);
	strb_ondemand_tick(now0 + 1000);
	strb_ondemand_tick(now0 + 2000);
	strb_ondemand_tick(now0 + 2100);
	assert_int_equal(heard.calls, 1);
	assert_int_equal(strb_ondemand_state(), STRB_ASYNC_IDLE);
	heard.calls = 0;
	return heard.status;
}

static int refusal_lines;
static char last_refusal[1200];

static void count_refusals(enum strobe_log_level level, const char *message, void *arg)
{
	(void)level;
	(void)arg;
	if (strstr(message, "on-demand request refused")) {
		refusal_lines++;
		snprintf(last_refusal, sizeof(last_refusal), "%s", message);
	}
}

/* A flood of refused requests (a peer of the same user sending one after
 * another) is logged a few times, not once per request. */
static void test_refusals_rate_limited(void **state)
{
	(void)state;
	strobe_log_set_level(STROBE_LOG_WARNING);
	assert_int_equal(strobe_log_add_observer(count_refusals, NULL), 0);
	/* Earlier refusals in this process may have used the window already. */
	strb_ondemand_reset_refusals();
	refusal_lines = 0;
	last_refusal[0] = 0;
	for (int i = 0; i < 1000; i++)
		assert_int_equal(
		    submit_text("PROFILE_MEMORY=true\nACTIVITIES_DURATION_MSECS=100\n", STRB_SOURCE_DAEMON),
		    -ENOTSUP);
	strobe_log_remove_observer(count_refusals, NULL);
	strobe_log_set_level(STROBE_LOG_ERROR);
	/* The first 5 of the window, the last of them saying what comes next. */
	assert_int_equal(refusal_lines, 5);
	assert_non_null(strstr(last_refusal, "PROFILE_MEMORY"));
	assert_non_null(strstr(last_refusal, "further refusals in the next 10 s are counted, not logged"));
	/* Every refusal still sets the error the caller sees. */
	assert_non_null(strstr(strobe_last_error(), "PROFILE_MEMORY"));
}

/* The limiter: 5 per window, the rest counted and handed to the next. */
static void test_ratelimit_counts(void **state)
{
	(void)state;
	struct strb_ratelimit rl = {.window_ms = 10000, .burst = 5};
	uint64_t before;
	for (int i = 0; i < 4; i++)
		assert_int_equal(strb_ratelimit_take(&rl, 1000 + i, &before), 1);
	assert_int_equal(strb_ratelimit_take(&rl, 1005, &before), 2); /* the last of the window */
	for (int i = 0; i < 995; i++)
		assert_int_equal(strb_ratelimit_take(&rl, 2000 + i, &before), 0);
	assert_int_equal(strb_ratelimit_take(&rl, 10999, &before), 0);
	assert_int_equal(strb_ratelimit_take(&rl, 11000, &before), 1);
	assert_int_equal(before, 996);
	assert_int_equal(strb_ratelimit_take(&rl, 11001, &before), 1);
	assert_int_equal(before, 0);
}

static void test_restricted_writes(void **state)
{
	(void)state;
	char allowed[512], outside[512], path[PATH_MAX], file[PATH_MAX];
	snprintf(allowed, sizeof(allowed), "%s/allowed", dir);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkdir(allowed, 0700), 0);
	assert_int_equal(mkdir(outside, 0700), 0);
	setenv("STROBE_ONDEMAND_TRACE_DIR", allowed, 1);

	/* Beneath: written, mode 0600. */
	snprintf(file, sizeof(file), "%s/ok.json", allowed);
	assert_int_equal(run_daemon_request(file), 0);
	snprintf(path, sizeof(path), "%s/ok_%d.json", allowed, (int)getpid());
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	/* The same file again: never overwritten. */
	assert_int_equal(truncate(path, 7), 0);
	assert_int_not_equal(run_daemon_request(file), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 7);

	/* Outside the allowed directory (a sibling with the same prefix too). */
	snprintf(file, sizeof(file), "%s/no.json", outside);
	assert_int_not_equal(run_daemon_request(file), 0);
	snprintf(file, sizeof(file), "%s-x/no.json", allowed);
	assert_int_not_equal(run_daemon_request(file), 0);

	/* A symlink inside pointing out: not followed. */
	char link[600];
	snprintf(link, sizeof(link), "%s/link", allowed);
	assert_int_equal(symlink(outside, link), 0);
	snprintf(file, sizeof(file), "%s/link/t.json", allowed);
	assert_int_not_equal(run_daemon_request(file), 0);
	snprintf(path, sizeof(path), "%s/t_%d.json", outside, (int)getpid());
	assert_false(exists(path));

	/* A symlink as the final component: not followed either. */
	char target[600];
	snprintf(target, sizeof(target), "%s/victim", outside);
	snprintf(link, sizeof(link), "%s/s_%d.json", allowed, (int)getpid());
	assert_int_equal(symlink(target, link), 0);
	snprintf(file, sizeof(file), "%s/s.json", allowed);
	assert_int_not_equal(run_daemon_request(file), 0);
	assert_false(exists(target));
	unsetenv("STROBE_ONDEMAND_TRACE_DIR");
}

/* The pid goes before ".pt.trace.json", else before ".json". */
static void test_pid_in_file_name(void **state)
{
	(void)state;
	char text[2048], want[PATH_MAX];
	snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s/a.json.d/r.pt.trace.json\n", dir);
	struct strb_config c = parse(text);
	snprintf(want, sizeof(want), "file://%s/a.json.d/r_%d.pt.trace.json", dir, (int)getpid());
	assert_string_equal(c.log_url, want);
	snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s/r.json.gz\n", dir);
	c = parse(text);
	snprintf(want, sizeof(want), "file://%s/r_%d.json.gz", dir, (int)getpid());
	assert_string_equal(c.log_url, want);
}

static void test_callback_removed(void **state)
{
	(void)state;
	strobe_set_trace_callback(NULL, NULL);
	char text[2048];
	snprintf(text, sizeof(text),
	         "ACTIVITIES_LOG_FILE=%s/nocb.json\nACTIVITIES_DURATION_MSECS=100\n"
	         "ACTIVITIES_WARMUP_PERIOD_SECS=0\n",
	         dir);
	assert_int_equal(submit_text(text, STRB_SOURCE_API), 0);
	strb_ondemand_tick(now0 + 1000);
	strb_ondemand_tick(now0 + 2000);
	strb_ondemand_tick(now0 + 2100);
	assert_int_equal(heard.calls, 0);
	char path[PATH_MAX];
	out_path(path, sizeof(path), "nocb");
	assert_true(exists(path));
}

int main(void)
{
	strb_clock_init();
	char *d = tu_mkdtemp();
	snprintf(dir, sizeof(dir), "%s", d);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_iterations_without_step, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_time_based_lifecycle, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_past_start_time_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_writes_collecting_trace, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_exit_in_warmup_writes_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_iterations_50_5_10, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_iterations_0_0_2, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_iterations_0_5_5, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_iterations_roundup, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_second_request_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sync_preempts_pending, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sync_preempts_active, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_async_prepare_refused_while_sync, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_disabled_and_memory_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_restricted_writes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_refusals_rate_limited, setup, teardown),
	    cmocka_unit_test(test_ratelimit_counts),
	    cmocka_unit_test_setup_teardown(test_pid_in_file_name, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_callback_removed, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

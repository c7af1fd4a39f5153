/* The config module as a user meets it: libkineto's KEY=VALUE text, the
 * errors a bad text gets, the effective options strobe prints, and the
 * `strobe config` command. */
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "strobe/strobe.h"

#define NOW_MS       1700000000000LL
#define PID          4242
#define I64_MAX_TEXT "9223372036854775807"

static char err[2048];
static int warnings;
static char last_warning[1024];

static void on_log(enum strobe_log_level level, const char *message, void *user_arg)
{
	(void)user_arg;
	if (level == STROBE_LOG_WARNING) {
		warnings++;
		snprintf(last_warning, sizeof(last_warning), "%s", message);
	}
}

static int setup(void **state)
{
	(void)state;
	strobe_log_set_level(STROBE_LOG_WARNING);
	return strobe_log_add_observer(on_log, NULL);
}

static int teardown(void **state)
{
	(void)state;
	return strobe_log_remove_observer(on_log, NULL);
}

static int parse_with(struct strb_config *cfg, const char *text, bool on_demand, const char *dir)
{
	struct strb_config_parse_opts opts = {
	    .on_demand = on_demand, .now_ms = NOW_MS, .pid = PID, .ondemand_dir = dir};
	err[0] = 0;
	return strb_config_parse(cfg, text, &opts, err, sizeof(err));
}

/* Parses text on top of fresh defaults, as a request is. */
static int parse_new(struct strb_config *cfg, const char *text)
{
	strb_config_init(cfg);
	return parse_with(cfg, text, false, NULL);
}

static void assert_parses(struct strb_config *cfg, const char *text)
{
	int rc = parse_new(cfg, text);
	if (rc)
		fail_msg("refused %s: %s", text, err);
}

static void assert_has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (len == n && !memcmp(p, line, n))
			return;
		p = nl ? nl + 1 : NULL;
	}
	fail_msg("line \"%s\" missing from:\n%s", line, text);
}

/* The printed config of text parsed on top of defaults. */
static char *effective(const char *text)
{
	struct strb_config cfg;
	assert_parses(&cfg, text);
	char *out = strb_config_format(&cfg);
	assert_non_null(out);
	return out;
}

static void assert_effective_has(const char *text, const char *line)
{
	char *out = effective(text);
	assert_has_line(out, line);
	free(out);
}

#define EQ(f)  assert_true(a->f == b->f)
#define EQS(f) assert_string_equal(a->f, b->f)

static void assert_cfg_equal(const struct strb_config *a, const struct strb_config *b, bool start_time)
{
	EQ(activities_enabled);
	EQ(on_demand_key_seen);
	EQ(activity_mask);
	EQ(activity_types_given);
	EQ(duration_ms);
	EQ(iterations);
	EQ(warmup_secs);
	EQ(warmup_iterations);
	EQS(log_file);
	EQS(log_url);
	EQS(log_file_arg);
	EQ(log_file_from_memory);
	EQ(max_gpu_buffer_bytes);
	EQ(max_cpu_buffer_bytes);
	EQ(display_cuda_sync_wait_events);
	EQ(cupti_per_thread_buffer);
	EQS(pm_sampling_metrics);
	EQ(pm_sampling_device);
	EQ(roctracer_max_events);
	if (start_time)
		EQ(profile_start_time_ms);
	EQ(profile_start_time_given);
	EQ(profile_start_iteration);
	EQ(profile_start_iteration_roundup);
	EQS(request_trace_id);
	EQS(request_group_trace_id);
	EQ(enable_ipc_fabric);
	EQ(on_demand_interval_secs);
	EQ(verbose_log_level);
	EQS(verbose_log_modules);
	EQ(report_input_shapes);
	EQ(profile_memory_client);
	EQ(with_stack);
	EQ(with_flops);
	EQ(with_modules);
	EQ(profile_memory);
	EQ(profile_memory_duration_ms);
	EQS(custom_config);
	EQS(xpu_metrics);
	EQ(xpu_per_kernel);
	EQ(xpu_max_scopes);
}

/* The text is refused as a whole: the error names the line and contains
 * reason, and the config is exactly what it was before. */
static void assert_refused(const char *text, bool on_demand, const char *dir, int line, const char *reason)
{
	struct strb_config before, cfg;
	strb_config_init(&before);
	assert_int_equal(parse_with(&before, "ACTIVITIES_ITERATIONS=2\nREQUEST_TRACE_ID=keep", false, NULL),
	                 0);
	cfg = before;
	int rc = parse_with(&cfg, text, on_demand, dir);
	if (rc != STROBE_E_CONFIG)
		fail_msg("accepted (rc %d): %s", rc, text);
	char prefix[32];
	snprintf(prefix, sizeof(prefix), "line %d: \"", line);
	if (strncmp(err, prefix, strlen(prefix)) != 0)
		fail_msg("error \"%s\" does not start with \"%s\"", err, prefix);
	if (reason && !strstr(err, reason))
		fail_msg("error \"%s\" lacks \"%s\"", err, reason);
	assert_cfg_equal(&before, &cfg, true);
}

/* --- text format --------------------------------------------------------- */

static void test_defaults(void **state)
{
	(void)state;
	struct strb_config cfg;
	strb_config_init(&cfg);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/libkineto_activities_%d.json", (int)getpid());
	assert_string_equal(cfg.log_file, path);
	assert_true(!strncmp(cfg.log_url, "file://", 7) && !strcmp(cfg.log_url + 7, path));
	assert_true(cfg.activities_enabled);
	assert_int_equal(cfg.duration_ms, 500);
	assert_int_equal(cfg.warmup_secs, 5);
	assert_int_equal(cfg.max_gpu_buffer_bytes, 128 << 20);
	assert_int_equal(cfg.max_cpu_buffer_bytes, 256 << 20);
	assert_int_equal(cfg.pm_sampling_device, -1);
	assert_int_equal(cfg.roctracer_max_events, 5000000);
	assert_int_equal(cfg.profile_start_iteration, -1);
	assert_int_equal(cfg.profile_start_iteration_roundup, -1);
	assert_int_equal(cfg.on_demand_interval_secs, 5);
	assert_int_equal(cfg.verbose_log_level, -1);
	assert_int_equal(cfg.profile_memory_duration_ms, 1000);
	assert_true(cfg.display_cuda_sync_wait_events);
	assert_false(cfg.on_demand_key_seen);

	/* An empty text selects libkineto's 18 default types (+ strobe's
	 * cpu_counter) and a start time of parse time + warmup + 2 s. */
	assert_int_equal(parse_with(&cfg, "", false, NULL), 0);
	assert_true(cfg.activity_mask == STROBE_ACTIVITY_DEFAULT_MASK);
	for (unsigned t = 0; t < 18; t++)
		assert_true(cfg.activity_mask & STROBE_ACTIVITY_BIT(t));
	for (unsigned t = 18; t < STROBE_ACTIVITY_KINETO_COUNT; t++)
		assert_false(cfg.activity_mask & STROBE_ACTIVITY_BIT(t));
	assert_false(cfg.activity_types_given);
	assert_true(cfg.profile_start_time_ms == NOW_MS + 7000);
	assert_false(cfg.profile_start_time_given);
}

static void test_whitespace_and_crlf(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "");
	assert_parses(&cfg, " \t\n\n   \n\t");
	/* libkineto fails CRLF; strobe accepts it. */
	assert_parses(&cfg,
	              "ACTIVITIES_ITERATIONS=5\r\nREQUEST_TRACE_ID=abc\r\n\r\nACTIVITY_TYPES=kernel\r\n");
	assert_int_equal(cfg.iterations, 5);
	assert_string_equal(cfg.request_trace_id, "abc");
	assert_true(cfg.activity_mask == STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL));
	assert_parses(&cfg, "\r");
	assert_parses(&cfg, "  ACTIVITIES_WARMUP_ITERATIONS \t=\t 3  \n");
	assert_int_equal(cfg.warmup_iterations, 3);
}

static void test_comments(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "# a comment\n"
	                    "ACTIVITIES_ITERATIONS=3 # after a value\n"
	                    "   # indented comment\n"
	                    "#ACTIVITIES_WARMUP_ITERATIONS=9\n"
	                    "REQUEST_TRACE_ID=a#b\n"
	                    "# foo\n"
	                    "#=foo=bar=\n");
	assert_int_equal(cfg.iterations, 3);
	assert_int_equal(cfg.warmup_iterations, 0);
	assert_string_equal(cfg.request_trace_id, "a");
}

static void test_line_format(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_refused("foo", false, NULL, 1, "expected KEY=VALUE");
	assert_refused("ACTIVITIES_ITERATIONS=1\n=foo=", false, NULL, 2, "one setting per line");
	assert_refused("ACTIVITIES_ITERATIONS=1 ; ACTIVITIES_WARMUP_ITERATIONS=2", false, NULL, 1,
	               "more than one");
	assert_refused("=foo", false, NULL, 1, "missing key");

	/* An unknown key, even with an empty value, only warns. */
	warnings = 0;
	assert_parses(&cfg, "foo=\nACTIVITIES_ITERATIONS=4");
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "line 1"));
	assert_non_null(strstr(last_warning, "foo"));
	assert_int_equal(cfg.iterations, 4);

	/* Keys are case-sensitive, as in libkineto. */
	warnings = 0;
	assert_parses(&cfg, "activities_iterations=5");
	assert_int_equal(warnings, 1);
	assert_int_equal(cfg.iterations, 0);

	/* A key given twice: the last one wins. */
	assert_parses(&cfg, "ACTIVITIES_ITERATIONS=4\nACTIVITIES_ITERATIONS=6");
	assert_int_equal(cfg.iterations, 6);

	/* An empty string value is a value. */
	assert_parses(&cfg, "REQUEST_TRACE_ID=x\nREQUEST_TRACE_ID=");
	assert_string_equal(cfg.request_trace_id, "");

	assert_int_equal(strb_config_parse(&cfg, NULL, NULL, err, sizeof(err)), -EINVAL);
}

static void test_error_message_names_line(void **state)
{
	(void)state;
	struct strb_config cfg;
	strb_config_init(&cfg);
	assert_int_equal(parse_with(&cfg, "ACTIVITIES_ITERATIONS=-1", false, NULL), STROBE_E_CONFIG);
	assert_string_equal(err,
	                    "line 1: \"ACTIVITIES_ITERATIONS=-1\": invalid argument -1, expected range [0, "
	                    "2147483647]");
	assert_int_equal(parse_with(&cfg, "# header\n\n  ACTIVITIES_ITERATIONS = x1  # why\n", false, NULL),
	                 STROBE_E_CONFIG);
	assert_string_equal(err, "line 3: \"ACTIVITIES_ITERATIONS = x1\": invalid integer \"x1\"");

	/* A tiny error buffer is still terminated. */
	char small[8];
	memset(small, 'z', sizeof(small));
	assert_int_equal(strb_config_parse(&cfg, "foo", NULL, small, sizeof(small)), STROBE_E_CONFIG);
	assert_string_equal(small, "line 1:");
}

static void test_all_or_nothing(void **state)
{
	(void)state;
	assert_refused("ACTIVITIES_ITERATIONS=7\n"
	               "REQUEST_TRACE_ID=changed\n"
	               "ACTIVITIES_WARMUP_ITERATIONS=-1\n"
	               "ACTIVITY_TYPES=kernel\n",
	               false, NULL, 3, "expected range");
	assert_refused("ACTIVITY_TYPES=kernel\nACTIVITIES_LOG_FILE=/tmp/x.json\nfoo\n", false, NULL, 3, NULL);
	assert_refused("PROFILE_MEMORY=true\nACTIVITIES_ENABLED=maybe", false, NULL, 2, "invalid bool");
}

static void test_layered_parses(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "ACTIVITIES_ITERATIONS=3\nACTIVITY_TYPES=kernel");
	assert_int_equal(parse_with(&cfg, "REQUEST_TRACE_ID=x\nACTIVITY_TYPES=gpu_memcpy", false, NULL), 0);
	assert_int_equal(cfg.iterations, 3);
	assert_string_equal(cfg.request_trace_id, "x");
	/* ACTIVITY_TYPES replaces the set rather than adding to it. */
	assert_true(cfg.activity_mask == STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMCPY));
	assert_parses(&cfg, "ACTIVITY_TYPES=kernel\nACTIVITY_TYPES=cpu_op");
	assert_true(cfg.activity_mask == STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP));
}

/* --- activity types -------------------------------------------------------- */

static void test_activity_types(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "ACTIVITY_TYPES= Kernel, GPU_MEMCPY ,cpu_OP,");
	assert_true(cfg.activity_mask == (STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMCPY) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP)));
	assert_true(cfg.activity_types_given);
	assert_effective_has("ACTIVITY_TYPES=kernel,gpu_memcpy,cpu_op",
	                     "ACTIVITY_TYPES=cpu_op,gpu_memcpy,kernel");

	assert_parses(&cfg,
	              "ACTIVITY_TYPES=privateuse1_runtime,privateuse1_driver,xpu_runtime,xpu_driver,"
	              "xpu_sync,xpu_scope_profiler,hpu_op,collective_comm,hardware_counters,cpu_counter");
	assert_true(cfg.activity_mask == (STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_PRIVATEUSE1_RUNTIME) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_PRIVATEUSE1_DRIVER) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_RUNTIME) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_DRIVER) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_SYNC) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_SCOPE_PROFILER) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_HPU_OP) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_COLLECTIVE_COMM) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_HARDWARE_COUNTERS) |
	                                  STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_COUNTER)));

	/* Nothing named means the default set. */
	assert_parses(&cfg, "ACTIVITY_TYPES=");
	assert_true(cfg.activity_mask == STROBE_ACTIVITY_DEFAULT_MASK);
	assert_false(cfg.activity_types_given);
	assert_parses(&cfg, "ACTIVITY_TYPES= , ,,");
	assert_true(cfg.activity_mask == STROBE_ACTIVITY_DEFAULT_MASK);

	assert_refused("ACTIVITY_TYPES=kernel,bogus", false, NULL, 1, "unknown activity type \"bogus\"");
	assert_refused("ACTIVITY_TYPES=ENUM_COUNT", false, NULL, 1, "unknown activity type");
	assert_refused("ACTIVITY_TYPES=kernel;cpu_op", false, NULL, 1, "unknown activity type");
	assert_refused("ACTIVITY_TYPES=ker nel", false, NULL, 1, "unknown activity type");
}

/* --- value conversions ----------------------------------------------------- */

struct int_key {
	const char *key;
	long long max;
	const char *shown; /* effective line after KEY=+7 */
};

static const struct int_key int32_keys[] = {
    /* ms are kept in 32 bits, so whole seconds stop at 2147483 (a strobe limit) */
    {"ACTIVITIES_DURATION_SECS", 2147483, "ACTIVITIES_DURATION_MSECS=7000"},
    {"ACTIVITIES_DURATION_MSECS", 2147483647, "ACTIVITIES_DURATION_MSECS=7"},
    {"ACTIVITIES_ITERATIONS", 2147483647, "ACTIVITIES_ITERATIONS=7"},
    {"ACTIVITIES_WARMUP_PERIOD_SECS", 2147483647, "ACTIVITIES_WARMUP_PERIOD_SECS=7"},
    {"ACTIVITIES_WARMUP_ITERATIONS", 2147483647, "ACTIVITIES_WARMUP_ITERATIONS=7"},
    {"ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB", 2147483647, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=7"},
    {"ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB", 2147483647, "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=7"},
    {"CUPTI_PM_SAMPLING_DEVICE_ID", 2147483647, "CUPTI_PM_SAMPLING_DEVICE_ID=7"},
    {"ROCTRACER_MAX_EVENTS", 2147483647, "ROCTRACER_MAX_EVENTS=7"},
    {"PROFILE_START_ITERATION", 2147483647, "PROFILE_START_ITERATION=7"},
    {"PROFILE_START_ITERATION_ROUNDUP", 2147483647, "PROFILE_START_ITERATION_ROUNDUP=7"},
    {"ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS", 2147483647, "ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=7"},
    {"VERBOSE_LOG_LEVEL", 2147483647, "VERBOSE_LOG_LEVEL=7"},
    {"PROFILE_MEMORY_DURATION_MSECS", 2147483647, "PROFILE_MEMORY_DURATION_MSECS=7"},
    {"XPUPTI_PROFILER_MAX_SCOPES", 9223372036854775807LL, "XPUPTI_PROFILER_MAX_SCOPES=7"},
};

static void test_integers(void **state)
{
	(void)state;
	char text[256], range[64];
	for (size_t i = 0; i < sizeof(int32_keys) / sizeof(int32_keys[0]); i++) {
		const struct int_key *k = &int32_keys[i];
		struct strb_config cfg;
		snprintf(range, sizeof(range), "expected range [0, %lld]", k->max);

		snprintf(text, sizeof(text), "%s=+7", k->key);
		assert_effective_has(text, k->shown);
		snprintf(text, sizeof(text), "%s=%lld", k->key, k->max);
		assert_parses(&cfg, text);
		snprintf(text, sizeof(text), "%s=0", k->key);
		assert_parses(&cfg, text);

		/* Every integer key refuses negatives, even where -1 is the default. */
		snprintf(text, sizeof(text), "%s=-1", k->key);
		assert_refused(text, false, NULL, 1, range);
		if (k->max < 9223372036854775807LL) {
			snprintf(text, sizeof(text), "%s=%lld", k->key, k->max + 1);
			assert_refused(text, false, NULL, 1, range);
			snprintf(text, sizeof(text), "%s=99999999999999999999999", k->key);
			assert_refused(text, false, NULL, 1, range);
		}
		static const char *const junk[] = {"",    "+",   "-",   "7x",  "0x10",
		                                   "1e3", "1.5", "7 7", "++7", "\v7"};
		for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
			snprintf(text, sizeof(text), "%s=%s", k->key, junk[j]);
			assert_refused(text, false, NULL, 1, "invalid integer");
		}
	}
}

static void test_int64_saturates(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "XPUPTI_PROFILER_MAX_SCOPES=99999999999999999999999");
	assert_true(cfg.xpu_max_scopes == INT64_MAX);
	assert_parses(&cfg, "PROFILE_START_TIME=99999999999999999999999");
	assert_true(cfg.profile_start_time_ms == INT64_MAX);
	assert_refused("XPUPTI_PROFILER_MAX_SCOPES=-99999999999999999999999", false, NULL, 1,
	               "expected range [0, " I64_MAX_TEXT "]");
	assert_parses(&cfg, "XPUPTI_PROFILER_MAX_SCOPES=-0");
	assert_true(cfg.xpu_max_scopes == 0);
}

struct bool_key {
	const char *key;
	const char *shown_as; /* legacy aliases print under the current name */
};

static const struct bool_key bool_keys[] = {
    {"ACTIVITIES_ENABLED", NULL},
    {"ACTIVITIES_DISPLAY_CUDA_SYNC_WAIT_EVENTS", NULL},
    {"CUPTI_PER_THREAD_BUFFER_ENABLED", NULL},
    {"ENABLE_IPC_FABRIC", NULL},
    {"PROFILE_REPORT_INPUT_SHAPES", NULL},
    {"CLIENT_INTERFACE_ENABLE_OP_INPUTS_COLLECTION", "PROFILE_REPORT_INPUT_SHAPES"},
    {"PROFILE_PROFILE_MEMORY", NULL},
    {"PROFILE_WITH_STACK", NULL},
    {"PYTHON_STACK_TRACE", "PROFILE_WITH_STACK"},
    {"PROFILE_WITH_FLOPS", NULL},
    {"PROFILE_WITH_MODULES", NULL},
    {"PROFILE_MEMORY", NULL},
    {"XPUPTI_PROFILER_ENABLE_PER_KERNEL", NULL},
};

static void test_bools(void **state)
{
	(void)state;
	static const char *const no[] = {"n", "no", "f", "false", "0", "N", "No", "FALSE", "F", "fAlSe"};
	static const char *const yes[] = {"y", "yes", "t", "true", "1", "Y", "YES", "True", "T", "yEs"};
	static const char *const junk[] = {"", "2", "on", "off", "maybe", "truee", "-1", "yes please"};
	char text[256], line[128];
	for (size_t i = 0; i < sizeof(bool_keys) / sizeof(bool_keys[0]); i++) {
		const char *key = bool_keys[i].key;
		const char *shown = bool_keys[i].shown_as ? bool_keys[i].shown_as : key;
		for (size_t j = 0; j < 10; j++) {
			snprintf(text, sizeof(text), "%s=%s", key, yes[j]);
			snprintf(line, sizeof(line), "%s=true", shown);
			assert_effective_has(text, line);
			snprintf(text, sizeof(text), "%s=%s", key, no[j]);
			snprintf(line, sizeof(line), "%s=false", shown);
			assert_effective_has(text, line);
		}
		for (size_t j = 0; j < sizeof(junk) / sizeof(junk[0]); j++) {
			snprintf(text, sizeof(text), "%s=%s", key, junk[j]);
			assert_refused(text, false, NULL, 1, "invalid bool");
		}
	}
}

static void test_lists_and_strings(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "VERBOSE_LOG_MODULES= a.c , b.c,,c.c\n"
	                    "CUPTI_PM_SAMPLING_METRICS=sm__cycles_active.avg, dram__bytes.sum\n"
	                    "XPUPTI_PROFILER_METRICS=x\n"
	                    "CUSTOM_CONFIG= {\"k\": [1, 2]} \n"
	                    "REQUEST_TRACE_ID=  id with spaces \n"
	                    "REQUEST_GROUP_TRACE_ID=group-7\n");
	assert_string_equal(cfg.verbose_log_modules, "a.c,b.c,,c.c");
	assert_string_equal(cfg.pm_sampling_metrics, "sm__cycles_active.avg,dram__bytes.sum");
	assert_string_equal(cfg.xpu_metrics, "x");
	assert_string_equal(cfg.custom_config, "{\"k\": [1, 2]}");
	assert_string_equal(cfg.request_trace_id, "id with spaces");
	assert_string_equal(cfg.request_group_trace_id, "group-7");

	char text[512] = "VERBOSE_LOG_MODULES=";
	for (int i = 0; i < STRB_CONFIG_LIST_MAX; i++)
		strcat(text, "m,");
	text[strlen(text) - 1] = 0;
	assert_parses(&cfg, text);
	strcat(text, ",m");
	assert_refused(text, false, NULL, 1, "list items");
}

/* Long values are refused with the line named, never cut short. */
static void test_long_values(void **state)
{
	(void)state;
	struct strb_config cfg;
	size_t big = 1 << 20;
	char *text = malloc(big + 64);
	assert_non_null(text);
	strcpy(text, "ACTIVITIES_ITERATIONS=1\nREQUEST_TRACE_ID=");
	size_t head = strlen(text);
	memset(text + head, 'x', STRB_CONFIG_STR_MAX - 1);
	text[head + STRB_CONFIG_STR_MAX - 1] = 0;
	assert_parses(&cfg, text);
	assert_int_equal(strlen(cfg.request_trace_id), STRB_CONFIG_STR_MAX - 1);

	memset(text + head, 'x', STRB_CONFIG_STR_MAX);
	text[head + STRB_CONFIG_STR_MAX] = 0;
	assert_refused(text, false, NULL, 2, "limit is 1023");

	memset(text + head, 'y', big);
	text[head + big] = 0;
	assert_refused(text, false, NULL, 2, "limit is 1023");
	assert_true(strlen(err) < 600);

	/* A huge junk line is quoted in part, not whole. */
	memset(text, 'z', big);
	text[big] = 0;
	assert_refused(text, false, NULL, 1, "expected KEY=VALUE");
	assert_non_null(strstr(err, "..."));
	free(text);

	char list[STRB_CONFIG_STR_MAX + 64] = "CUPTI_PM_SAMPLING_METRICS=";
	size_t n = strlen(list);
	memset(list + n, 'm', STRB_CONFIG_STR_MAX);
	list[n + STRB_CONFIG_STR_MAX] = 0;
	assert_refused(list, false, NULL, 1, "longer than 1023");

	/* The pid makes the URL longer than the path. */
	char path[STRB_CONFIG_STR_MAX + 64] = "ACTIVITIES_LOG_FILE=/";
	n = strlen(path);
	memset(path + n, 'p', STRB_CONFIG_STR_MAX - 1 - 1 - 5);
	strcpy(path + n + STRB_CONFIG_STR_MAX - 7, ".json");
	assert_parses(&cfg, path);
	assert_int_equal(strlen(cfg.log_file), STRB_CONFIG_STR_MAX - 1);
	assert_non_null(strstr(cfg.log_url, "_4242.json"));
	struct strb_config_parse_opts big_pid = {.now_ms = NOW_MS, .pid = 2147483647};
	assert_int_equal(strb_config_parse(&cfg, path, &big_pid, err, sizeof(err)), STROBE_E_CONFIG);
	assert_non_null(strstr(err, "too long once the pid is inserted"));
}

/* Text can be any bytes: they are kept as given and escaped in messages. */
static void test_arbitrary_bytes(void **state)
{
	(void)state;
	struct strb_config cfg;
	char text[512] = "REQUEST_TRACE_ID=";
	size_t n = strlen(text);
	for (int c = 1; c < 256; c++)
		if (c != '\n' && c != '#' && c != '=' && c != ' ' && c != '\t' && c != '\r')
			text[n++] = (char)c;
	text[n] = 0;
	assert_parses(&cfg, text);
	assert_string_equal(cfg.request_trace_id, text + strlen("REQUEST_TRACE_ID="));

	assert_refused("ACTIVITY_TYPES=k\x01\xff\"", false, NULL, 1, "\"k\\x01\\xff\\\"\"");
	warnings = 0;
	assert_parses(&cfg, "\x80\x81=1");
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "\\x80\\x81"));

	/* Random texts: never a crash; whatever is accepted prints and reparses. */
	static const char *const pieces[] = {
	    "ACTIVITY_TYPES",
	    "ACTIVITIES_LOG_FILE",
	    "PROFILE_MEMORY",
	    "ACTIVITIES_ITERATIONS",
	    "=",
	    "=",
	    "\n",
	    "\r\n",
	    "#",
	    ",",
	    " ",
	    "kernel",
	    "CPU_OP",
	    "/tmp/a.json",
	    "..",
	    "1",
	    "-1",
	    "true",
	    "99999999999",
	    "PROFILE_START_TIME",
	    "\xff",
	    "\x01",
	    "ACTIVITIES_DURATION_SECS",
	    "PROFILE_START_ITERATION_ROUNDUP",
	    "0",
	    "XPUPTI_PROFILER_METRICS",
	    "a,b",
	};
	unsigned seed = 12345;
	char rnd[256];
	int accepted = 0;
	strobe_log_set_level(STROBE_LOG_ERROR); /* the unknown keys would flood the output */
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = 0;
		int count = (int)(rand_r(&seed) % 12);
		rnd[0] = 0;
		for (int i = 0; i < count; i++) {
			const char *p = pieces[rand_r(&seed) % (sizeof(pieces) / sizeof(pieces[0]))];
			if (len + strlen(p) + 1 >= sizeof(rnd))
				break;
			strcpy(rnd + len, p);
			len += strlen(p);
		}
		struct strb_config a, b;
		strb_config_init(&a);
		bool od = rand_r(&seed) & 1;
		if (parse_with(&a, rnd, od, NULL))
			continue;
		char *out = strb_config_format(&a);
		assert_non_null(out);
		strb_config_init(&b);
		if (parse_with(&b, out, false, NULL))
			fail_msg("output of \"%s\" does not reparse: %s\n%s", rnd, err, out);
		assert_cfg_equal(&a, &b, a.profile_start_time_given);
		free(out);
		accepted++;
	}
	strobe_log_set_level(STROBE_LOG_WARNING);
	assert_true(accepted > 300);
}

/* --- start triggers -------------------------------------------------------- */

static void test_start_time(void **state)
{
	(void)state;
	struct strb_config cfg;
	char text[128];
	snprintf(text, sizeof(text), "PROFILE_START_TIME=%lld", NOW_MS);
	assert_parses(&cfg, text);
	assert_true(cfg.profile_start_time_ms == NOW_MS);
	assert_true(cfg.profile_start_time_given);

	snprintf(text, sizeof(text), "PROFILE_START_TIME=%lld", NOW_MS - 9000);
	assert_parses(&cfg, text);
	snprintf(text, sizeof(text), "PROFILE_START_TIME=%lld", NOW_MS + 60000);
	assert_parses(&cfg, text);
	assert_true(cfg.profile_start_time_ms == NOW_MS + 60000);

	/* 0 means "choose": parse time + warmup + 2 s. */
	assert_parses(&cfg, "PROFILE_START_TIME=0\nACTIVITIES_WARMUP_PERIOD_SECS=10");
	assert_true(cfg.profile_start_time_ms == NOW_MS + 12000);
	assert_false(cfg.profile_start_time_given);

	snprintf(text, sizeof(text), "ACTIVITIES_ITERATIONS=1\nPROFILE_START_TIME=%lld", NOW_MS - 15000);
	assert_refused(text, false, NULL, 2, "more than 10 s in the past");

	/* With the real clock. */
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	long long now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	strb_config_init(&cfg);
	snprintf(text, sizeof(text), "PROFILE_START_TIME=%lld", now);
	assert_int_equal(strb_config_parse(&cfg, text, NULL, err, sizeof(err)), 0);
	snprintf(text, sizeof(text), "PROFILE_START_TIME=%lld", now - 15000);
	assert_int_equal(strb_config_parse(&cfg, text, NULL, err, sizeof(err)), STROBE_E_CONFIG);
	assert_int_equal(strb_config_parse(&cfg, "PROFILE_START_TIME=0", NULL, err, sizeof(err)), 0);
	assert_true(cfg.profile_start_time_ms >= now + 7000 && cfg.profile_start_time_ms < now + 67000);
}

static void test_round_up(void **state)
{
	(void)state;
	struct strb_config cfg;
	warnings = 0;
	assert_parses(&cfg, "PROFILE_START_ITERATION_ROUNDUP=0");
	assert_int_equal(cfg.profile_start_iteration_roundup, -1);
	assert_int_equal(warnings, 1);
	assert_non_null(strstr(last_warning, "PROFILE_START_ITERATION_ROUNDUP"));

	/* A round-up without a usable start iteration starts from iteration 0. */
	assert_parses(&cfg, "PROFILE_START_ITERATION_ROUNDUP=10");
	assert_int_equal(cfg.profile_start_iteration, 0);
	assert_parses(&cfg, "PROFILE_START_ITERATION=7\nPROFILE_START_ITERATION_ROUNDUP=10");
	assert_int_equal(cfg.profile_start_iteration, 0);
	assert_parses(
	    &cfg, "ACTIVITIES_ITERATIONS=5\nPROFILE_START_ITERATION=7\nPROFILE_START_ITERATION_ROUNDUP=10");
	assert_int_equal(cfg.profile_start_iteration, 7);
	assert_int_equal(cfg.profile_start_iteration_roundup, 10);
	assert_parses(&cfg, "ACTIVITIES_ITERATIONS=5\nPROFILE_START_ITERATION=7");
	assert_int_equal(cfg.profile_start_iteration, 7);
	assert_int_equal(cfg.profile_start_iteration_roundup, -1);
}

/* --- trace window, files and buffers --------------------------------------- */

static void test_durations_and_triggers(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "ACTIVITIES_DURATION_SECS=3");
	assert_int_equal(cfg.duration_ms, 3000);
	assert_true(cfg.on_demand_key_seen);
	assert_parses(&cfg, "ACTIVITIES_DURATION_SECS=3\nACTIVITIES_DURATION_MSECS=250");
	assert_int_equal(cfg.duration_ms, 250);
	static const char *const triggers[] = {"ACTIVITIES_DURATION_SECS=1", "ACTIVITIES_DURATION_MSECS=1",
	                                       "ACTIVITIES_ITERATIONS=1", "ACTIVITIES_LOG_FILE=/tmp/t.json"};
	for (size_t i = 0; i < 4; i++) {
		assert_parses(&cfg, triggers[i]);
		assert_true(cfg.on_demand_key_seen);
	}
	assert_parses(&cfg, "ACTIVITIES_ENABLED=false\nACTIVITIES_WARMUP_PERIOD_SECS=1\nREQUEST_TRACE_ID=r");
	assert_false(cfg.on_demand_key_seen);
	assert_false(cfg.activities_enabled);
}

static void test_buffers(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg,
	              "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=64\nACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=2147483647");
	assert_true(cfg.max_gpu_buffer_bytes == 64LL << 20);
	assert_true(cfg.max_cpu_buffer_bytes == 2147483647LL << 20);
	assert_effective_has("", "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=128");
	assert_effective_has("", "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=256");
}

static void test_log_file_pid(void **state)
{
	(void)state;
	static const char *const cases[][2] = {
	    {"/tmp/a.json.gz", "file:///tmp/a_4242.json.gz"},
	    {"/tmp/trace", "file:///tmp/trace"},
	    {"/tmp/a.json", "file:///tmp/a_4242.json"},
	    {"/tmp/b.pt.trace.json", "file:///tmp/b_4242.pt.trace.json"},
	    {"/tmp/c.pt.trace.json.gz", "file:///tmp/c_4242.pt.trace.json.gz"},
	    {"/tmp/d.json/e.json", "file:///tmp/d_4242.json/e.json"},
	    {"/tmp/x.pftrace", "file:///tmp/x.pftrace"},
	    {"relative.json", "file://relative_4242.json"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct strb_config cfg;
		char text[128];
		snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s", cases[i][0]);
		assert_parses(&cfg, text);
		assert_string_equal(cfg.log_file, cases[i][0]);
		assert_string_equal(cfg.log_url, cases[i][1]);
	}
	assert_refused("ACTIVITIES_LOG_FILE=", false, NULL, 1, "needs a path");
}

static void test_profile_memory_resets_log_file(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "ACTIVITIES_LOG_FILE=/tmp/a.json\nPROFILE_MEMORY=true");
	assert_string_equal(cfg.log_file, "/tmp/memory_snapshot_4242.pickle");
	assert_string_equal(cfg.log_url, "file:///tmp/a_4242.json");
	assert_true(cfg.profile_memory);

	assert_parses(&cfg, "PROFILE_MEMORY=true\nACTIVITIES_LOG_FILE=/tmp/a.json");
	assert_string_equal(cfg.log_file, "/tmp/a.json");

	assert_parses(&cfg, "ACTIVITIES_LOG_FILE=/tmp/a.json\nPROFILE_MEMORY=false");
	assert_string_equal(cfg.log_file, "/tmp/a.json");
	assert_false(cfg.profile_memory);
}

static void test_base_config_any_log_path(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "ACTIVITIES_LOG_FILE=/var/log/../x/trace.json");
	assert_string_equal(cfg.log_url, "file:///var/log/../x/trace_4242.json");
}

static void test_on_demand_log_path(void **state)
{
	(void)state;
	struct strb_config cfg;
	const char *saved_s = getenv("STROBE_ONDEMAND_TRACE_DIR");
	const char *saved_k = getenv("KINETO_ONDEMAND_TRACE_DIR");
	char *keep_s = saved_s ? strdup(saved_s) : NULL, *keep_k = saved_k ? strdup(saved_k) : NULL;
	unsetenv("STROBE_ONDEMAND_TRACE_DIR");
	unsetenv("KINETO_ONDEMAND_TRACE_DIR");

	strb_config_init(&cfg);
	assert_int_equal(parse_with(&cfg, "ACTIVITIES_LOG_FILE=/tmp/od.json", true, NULL), 0);
	assert_string_equal(cfg.log_url, "file:///tmp/od_4242.json");
	assert_refused("ACTIVITIES_DURATION_MSECS=100\nACTIVITIES_LOG_FILE=/var/od.json", true, NULL, 2,
	               "beneath /tmp/");
	assert_refused("ACTIVITIES_LOG_FILE=/tmp/../etc/od.json", true, NULL, 1, "\"..\"");
	assert_refused("ACTIVITIES_LOG_FILE=/tmp/", true, NULL, 1, "beneath /tmp/");
	assert_refused("ACTIVITIES_LOG_FILE=/tmpfoo/x.json", true, NULL, 1, "beneath /tmp/");
	assert_refused("ACTIVITIES_LOG_FILE=od.json", true, NULL, 1, "beneath /tmp/");

	/* The directory may be given without a trailing slash. */
	strb_config_init(&cfg);
	assert_int_equal(parse_with(&cfg, "ACTIVITIES_LOG_FILE=/data/traces/a.json", true, "/data/traces"),
	                 0);
	assert_refused("ACTIVITIES_LOG_FILE=/data/tracesX/a.json", true, "/data/traces", 1, "/data/traces/");
	assert_refused("ACTIVITIES_LOG_FILE=/tmp/a.json", true, "/data/traces", 1, "/data/traces/");

	/* STROBE_ONDEMAND_TRACE_DIR beats KINETO_ONDEMAND_TRACE_DIR. */
	setenv("KINETO_ONDEMAND_TRACE_DIR", "/srv/kineto", 1);
	strb_config_init(&cfg);
	assert_int_equal(parse_with(&cfg, "ACTIVITIES_LOG_FILE=/srv/kineto/a.json", true, NULL), 0);
	setenv("STROBE_ONDEMAND_TRACE_DIR", "/srv/strobe/", 1);
	assert_int_equal(parse_with(&cfg, "ACTIVITIES_LOG_FILE=/srv/strobe/a.json", true, NULL), 0);
	assert_refused("ACTIVITIES_LOG_FILE=/srv/kineto/a.json", true, NULL, 1, "/srv/strobe/");

	if (keep_s)
		setenv("STROBE_ONDEMAND_TRACE_DIR", keep_s, 1);
	else
		unsetenv("STROBE_ONDEMAND_TRACE_DIR");
	if (keep_k)
		setenv("KINETO_ONDEMAND_TRACE_DIR", keep_k, 1);
	else
		unsetenv("KINETO_ONDEMAND_TRACE_DIR");
	free(keep_s);
	free(keep_k);
}

static void test_request_ids_and_xpu(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "REQUEST_TRACE_ID=123456789\nREQUEST_GROUP_TRACE_ID=group");
	assert_string_equal(cfg.request_trace_id, "123456789");
	assert_string_equal(cfg.request_group_trace_id, "group");

	/* XPU scopes default once metrics are set: 10 user scopes, 1500 per kernel. */
	assert_parses(&cfg, "XPUPTI_PROFILER_METRICS=a,b");
	assert_true(cfg.xpu_max_scopes == 10);
	assert_parses(&cfg, "XPUPTI_PROFILER_METRICS=a\nXPUPTI_PROFILER_ENABLE_PER_KERNEL=true");
	assert_true(cfg.xpu_max_scopes == 1500);
	assert_parses(&cfg, "XPUPTI_PROFILER_METRICS=a\nXPUPTI_PROFILER_MAX_SCOPES=20");
	assert_true(cfg.xpu_max_scopes == 20);
	assert_parses(&cfg, "XPUPTI_PROFILER_ENABLE_PER_KERNEL=true");
	assert_true(cfg.xpu_max_scopes == 0);
}

static void restore_env(const char *name, char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	free(value);
}

static char *save_env(const char *name)
{
	const char *v = getenv(name);
	return v ? strdup(v) : NULL;
}

static void test_ipc_fabric_default(void **state)
{
	(void)state;
	char *s = save_env("STROBE_USE_DAEMON"), *k = save_env("KINETO_USE_DAEMON");
	struct strb_config cfg;
	unsetenv("STROBE_USE_DAEMON");
	unsetenv("KINETO_USE_DAEMON");
	strb_config_init(&cfg);
	assert_false(cfg.enable_ipc_fabric);
	setenv("KINETO_USE_DAEMON", "1", 1);
	strb_config_init(&cfg);
	assert_true(cfg.enable_ipc_fabric);
	setenv("STROBE_USE_DAEMON", "0", 1);
	strb_config_init(&cfg);
	assert_false(cfg.enable_ipc_fabric);
	unsetenv("KINETO_USE_DAEMON");
	setenv("STROBE_USE_DAEMON", "yes", 1);
	strb_config_init(&cfg);
	assert_true(cfg.enable_ipc_fabric);
	assert_int_equal(parse_with(&cfg, "ENABLE_IPC_FABRIC=false", false, NULL), 0);
	assert_false(cfg.enable_ipc_fabric);
	restore_env("STROBE_USE_DAEMON", s);
	restore_env("KINETO_USE_DAEMON", k);
}

/* --- printing ---------------------------------------------------------------- */

static const char *const round_trip_texts[] = {
    "",
    "ACTIVITIES_ENABLED=false\nACTIVITY_TYPES=kernel,CPU_OP, cuda_runtime\n",
    "ACTIVITIES_DURATION_SECS=3\nACTIVITIES_LOG_FILE=/tmp/t.pt.trace.json\nREQUEST_TRACE_ID=abc\n",
    "ACTIVITIES_ITERATIONS=10\nACTIVITIES_WARMUP_ITERATIONS=2\nPROFILE_START_ITERATION=50\n"
    "PROFILE_START_ITERATION_ROUNDUP=5\n",
    "PROFILE_START_ITERATION_ROUNDUP=4\n",
    "PROFILE_START_TIME=1700000060000\nACTIVITIES_WARMUP_PERIOD_SECS=30\n",
    "ACTIVITIES_LOG_FILE=/tmp/a.json\nPROFILE_MEMORY=true\n",
    "PROFILE_MEMORY=true\nACTIVITIES_LOG_FILE=/tmp/b.json\n",
    "PROFILE_MEMORY=true\nPROFILE_MEMORY=false\n",
    "PROFILE_MEMORY=true\nPROFILE_MEMORY_DURATION_MSECS=5\n",
    "ACTIVITIES_LOG_FILE=/tmp/c.json\nPROFILE_MEMORY=true\nPROFILE_MEMORY=false\n",
    "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=1\nACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=0\n"
    "ACTIVITIES_DISPLAY_CUDA_SYNC_WAIT_EVENTS=no\nCUPTI_PER_THREAD_BUFFER_ENABLED=yes\n"
    "CUPTI_PM_SAMPLING_METRICS= a , b,, c\nCUPTI_PM_SAMPLING_DEVICE_ID=0\nROCTRACER_MAX_EVENTS=7\n"
    "REQUEST_GROUP_TRACE_ID=g\nENABLE_IPC_FABRIC=true\nON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=60\n"
    "VERBOSE_LOG_LEVEL=2\nVERBOSE_LOG_MODULES=a.c,b.c\nCLIENT_INTERFACE_ENABLE_OP_INPUTS_COLLECTION=1\n"
    "PROFILE_PROFILE_MEMORY=1\nPYTHON_STACK_TRACE=1\nPROFILE_WITH_FLOPS=1\nPROFILE_WITH_MODULES=1\n"
    "CUSTOM_CONFIG=x y z\nXPUPTI_PROFILER_METRICS=m1,m2\nXPUPTI_PROFILER_ENABLE_PER_KERNEL=1\n",
    "REQUEST_TRACE_ID=\x01\xfe weird \"bytes\"\\\n",
    "ACTIVITY_TYPES=cpu_counter,hardware_counters\nXPUPTI_PROFILER_MAX_SCOPES=99999999999999999999\n",
};

/* Printing and parsing again gives the same config (the same pid); a start
 * time chosen by validation is chosen afresh. */
static void test_format_round_trip(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(round_trip_texts) / sizeof(round_trip_texts[0]); i++) {
		struct strb_config a, b;
		assert_parses(&a, round_trip_texts[i]);
		char *out = strb_config_format(&a);
		assert_non_null(out);
		strb_config_init(&b);
		struct strb_config_parse_opts later = {.now_ms = NOW_MS + 5000, .pid = PID};
		if (strb_config_parse(&b, out, &later, err, sizeof(err)))
			fail_msg("case %zu: output does not parse again: %s\n%s", i, err, out);
		assert_cfg_equal(&a, &b, a.profile_start_time_given);
		if (!a.profile_start_time_given)
			assert_true(b.profile_start_time_ms == a.profile_start_time_ms + 5000);
		char *again = strb_config_format(&b);
		if (a.profile_start_time_given)
			assert_string_equal(out, again);
		free(out);
		free(again);
	}
}

/* Random texts: known keys with values of every shape, misspelt keys and
 * junk lines. Each is accepted or refused with a message naming a line;
 * what is accepted prints and parses back to the same config. */
static uint64_t fuzz_seed = 0x2545f4914f6cdd1dull;

static uint64_t fuzz_next(void)
{
	return tu_xorshift(&fuzz_seed);
}

static const char *const fuzz_keys[] = {"ACTIVITIES_ENABLED",
                                        "ACTIVITY_TYPES",
                                        "ACTIVITIES_DURATION_SECS",
                                        "ACTIVITIES_DURATION_MSECS",
                                        "ACTIVITIES_ITERATIONS",
                                        "ACTIVITIES_WARMUP_PERIOD_SECS",
                                        "ACTIVITIES_WARMUP_ITERATIONS",
                                        "ACTIVITIES_LOG_FILE",
                                        "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB",
                                        "ACTIVITIES_DISPLAY_CUDA_SYNC_WAIT_EVENTS",
                                        "PROFILE_START_TIME",
                                        "PROFILE_START_ITERATION",
                                        "PROFILE_START_ITERATION_ROUNDUP",
                                        "REQUEST_TRACE_ID",
                                        "VERBOSE_LOG_LEVEL",
                                        "VERBOSE_LOG_MODULES",
                                        "CUPTI_PM_SAMPLING_METRICS",
                                        "PROFILE_MEMORY",
                                        "activities_enabled",
                                        "ACTIVITIES_ENABLE",
                                        "",
                                        " ACTIVITIES_ITERATIONS "};

static const char *const fuzz_values[] = {"0",
                                          "1",
                                          "-1",
                                          "true",
                                          "false",
                                          "yes",
                                          "maybe",
                                          "9223372036854775807",
                                          "9223372036854775808",
                                          "-9223372036854775808",
                                          "99999999999999999999",
                                          "1e3",
                                          "0x10",
                                          " 7 ",
                                          "",
                                          "kernel,cpu_op",
                                          "kernel,,gpu_memcpy",
                                          "nope_type",
                                          "/tmp/x.json",
                                          "file:///tmp/y.json.gz",
                                          "a=b=c",
                                          "\xff\xfe",
                                          "2147483648"};

static void fuzz_text(char *buf, size_t len)
{
	size_t n = 0;
	int lines = 1 + (int)(fuzz_next() % 6);
	for (int i = 0; i < lines && n + 300 < len; i++) {
		uint64_t r = fuzz_next();
		if (r % 10 == 0) { /* a junk line of random bytes (no NUL) */
			for (int k = (int)(fuzz_next() % 40); k > 0; k--)
				buf[n++] = (char)(1 + fuzz_next() % 255);
		} else {
			n += (size_t)snprintf(
			    buf + n, len - n, "%s%s%s",
			    fuzz_keys[fuzz_next() % (sizeof(fuzz_keys) / sizeof(fuzz_keys[0]))],
			    r % 17 ? "=" : " ",
			    fuzz_values[fuzz_next() % (sizeof(fuzz_values) / sizeof(fuzz_values[0]))]);
		}
		buf[n++] = r % 7 ? '\n' : '\r';
	}
	buf[n] = 0;
}

static void test_random_texts(void **state)
{
	(void)state;
	size_t accepted = 0, refused = 0;
	strobe_log_set_level(STROBE_LOG_ERROR); /* thousands of unknown keys */
	for (int i = 0; i < 3000; i++) {
		char text[4096];
		fuzz_text(text, sizeof(text));
		struct strb_config a, b;
		err[0] = 0;
		if (parse_new(&a, text)) {
			if (!strstr(err, "line "))
				fail_msg("refused without naming a line: \"%s\" for:\n%s", err, text);
			refused++;
			continue;
		}
		accepted++;
		char *out = strb_config_format(&a);
		assert_non_null(out);
		strb_config_init(&b);
		struct strb_config_parse_opts same = {.now_ms = NOW_MS, .pid = PID};
		if (strb_config_parse(&b, out, &same, err, sizeof(err)))
			fail_msg("printed config does not parse again: %s\n--- input:\n%s\n--- printed:\n%s",
			         err, text, out);
		assert_cfg_equal(&a, &b, true);
		free(out);
	}
	strobe_log_set_level(STROBE_LOG_WARNING);
	/* Both outcomes were exercised. */
	assert_true(accepted > 100);
	assert_true(refused > 100);
}

static void test_format_lines(void **state)
{
	(void)state;
	char *out = effective("ACTIVITIES_DURATION_SECS=2\nACTIVITY_TYPES=kernel,cpu_op\n"
	                      "ACTIVITIES_LOG_FILE=/tmp/x.json\nACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=64\n");
	assert_has_line(out, "ACTIVITIES_ENABLED=true");
	assert_has_line(out, "ACTIVITY_TYPES=cpu_op,kernel");
	assert_has_line(out, "ACTIVITIES_DURATION_MSECS=2000");
	assert_has_line(out, "ACTIVITIES_ITERATIONS=0");
	assert_has_line(out, "ACTIVITIES_LOG_FILE=/tmp/x.json");
	assert_has_line(out, "# trace file: file:///tmp/x_4242.json");
	assert_has_line(out, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=64");
	assert_has_line(out, "# PROFILE_START_ITERATION=-1 (unset)");
	assert_has_line(out, "# VERBOSE_LOG_LEVEL=-1 (unset)");
	assert_has_line(out, "# CUPTI_PM_SAMPLING_DEVICE_ID=-1 (unset)");
	assert_null(strstr(out, "ACTIVITIES_DURATION_SECS"));
	assert_null(strstr(out, "PYTHON_STACK_TRACE"));
	/* Every line is KEY=VALUE or a comment, and each key shows up. */
	for (const char *p = out; *p;) {
		const char *nl = strchr(p, '\n');
		assert_non_null(nl);
		if (*p != '#') {
			const char *eq = memchr(p, '=', (size_t)(nl - p));
			assert_non_null(eq);
			assert_null(memchr(eq + 1, '=', (size_t)(nl - eq - 1)));
		}
		p = nl + 1;
	}
	static const char *const keys[] = {
	    "ACTIVITIES_WARMUP_PERIOD_SECS",
	    "ACTIVITIES_WARMUP_ITERATIONS",
	    "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB",
	    "ACTIVITIES_DISPLAY_CUDA_SYNC_WAIT_EVENTS",
	    "CUPTI_PER_THREAD_BUFFER_ENABLED",
	    "CUPTI_PM_SAMPLING_METRICS",
	    "ROCTRACER_MAX_EVENTS",
	    "PROFILE_START_TIME",
	    "PROFILE_START_ITERATION_ROUNDUP",
	    "REQUEST_TRACE_ID",
	    "REQUEST_GROUP_TRACE_ID",
	    "ENABLE_IPC_FABRIC",
	    "ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS",
	    "VERBOSE_LOG_MODULES",
	    "PROFILE_REPORT_INPUT_SHAPES",
	    "PROFILE_PROFILE_MEMORY",
	    "PROFILE_WITH_STACK",
	    "PROFILE_WITH_FLOPS",
	    "PROFILE_WITH_MODULES",
	    "PROFILE_MEMORY",
	    "PROFILE_MEMORY_DURATION_MSECS",
	    "CUSTOM_CONFIG",
	    "XPUPTI_PROFILER_METRICS",
	    "XPUPTI_PROFILER_ENABLE_PER_KERNEL",
	    "XPUPTI_PROFILER_MAX_SCOPES",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char needle[96];
		snprintf(needle, sizeof(needle), "%s=", keys[i]);
		if (!strstr(out, needle))
			fail_msg("%s missing from\n%s", keys[i], out);
	}
	free(out);

	/* Without a trigger key the window keys stay comments: printing them
	 * would turn a base config into an on-demand request. */
	out = effective("");
	assert_has_line(out, "# ACTIVITIES_DURATION_MSECS=500 (default)");
	assert_has_line(out, "# ACTIVITIES_ITERATIONS=0 (default)");
	assert_non_null(strstr(out, "# ACTIVITY_TYPES=cpu_op,user_annotation,"));
	assert_non_null(strstr(out, ",mtia_counters,cpu_counter (default set)\n"));
	assert_non_null(strstr(out, "\n# PROFILE_START_TIME=1700000007000 "));
	free(out);
}

/* --- base config file ---------------------------------------------------------- */

static void test_read_base(void **state)
{
	(void)state;
	char dir[512], a[600], b[600], missing[600];
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	snprintf(a, sizeof(a), "%s/a.conf", dir);
	snprintf(b, sizeof(b), "%s/b.conf", dir);
	snprintf(missing, sizeof(missing), "%s/missing.conf", dir);
	assert_int_equal(tu_write_file(a, "REQUEST_TRACE_ID=a\n"), 0);
	assert_int_equal(tu_write_file(b, "REQUEST_TRACE_ID=b\n"), 0);
	char *s = save_env("STROBE_CONFIG"), *k = save_env("KINETO_CONFIG");
	const char *used = NULL;

	char *text = strb_config_read_base(b, &used);
	assert_string_equal(text, "REQUEST_TRACE_ID=b\n");
	assert_string_equal(used, b);
	free(text);

	setenv("STROBE_CONFIG", a, 1);
	setenv("KINETO_CONFIG", b, 1);
	text = strb_config_read_base(NULL, &used);
	assert_string_equal(text, "REQUEST_TRACE_ID=a\n");
	assert_string_equal(used, a);
	free(text);

	unsetenv("STROBE_CONFIG");
	text = strb_config_read_base(NULL, &used);
	assert_string_equal(text, "REQUEST_TRACE_ID=b\n");
	free(text);

	unsetenv("KINETO_CONFIG");
	text = strb_config_read_base(NULL, &used);
	assert_non_null(text);
	assert_string_equal(used, "/etc/libkineto.conf");
	free(text);

	/* Missing, a directory: empty text, never an error. */
	text = strb_config_read_base(missing, &used);
	assert_string_equal(text, "");
	free(text);
	text = strb_config_read_base(dir, NULL);
	assert_string_equal(text, "");
	free(text);

	restore_env("STROBE_CONFIG", s);
	restore_env("KINETO_CONFIG", k);
	tu_rmrf(dir);
}

/* --- strobe config ------------------------------------------------------------- */

static int cli(const char *args, char **out, char **errout)
{
	char cmd[1024], errpath[600];
	static int n;
	snprintf(errpath, sizeof(errpath), "%s/stderr-%d-%d", tu_mkdtemp(), (int)getpid(), n++);
	/* The redirection goes first so that args may end in a here-document. */
	snprintf(cmd, sizeof(cmd), "%s 2>%s %s", STROBE_CLI_PATH, errpath, args);
	int rc = tu_run(cmd, 0, out);
	*errout = tu_read_file(errpath, NULL);
	assert_non_null(*errout);
	char *slash = strrchr(errpath, '/');
	unlink(errpath);
	*slash = 0;
	rmdir(errpath);
	return rc;
}

static void test_cli_check(void **state)
{
	(void)state;
	char dir[512], good[600], bad[600], args[1400];
	char *out, *errout;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	snprintf(good, sizeof(good), "%s/good.conf", dir);
	snprintf(bad, sizeof(bad), "%s/bad.conf", dir);
	assert_int_equal(tu_write_file(good, "# on-demand request\r\n"
	                                     "ACTIVITIES_DURATION_MSECS=2000\r\n"
	                                     "ACTIVITY_TYPES=CPU_OP,kernel,\r\n"
	                                     "ACTIVITIES_LOG_FILE=/tmp/strobe-check.json\r\n"),
	                 0);
	assert_int_equal(tu_write_file(bad, "ACTIVITIES_DURATION_MSECS=2000\nACTIVITIES_ITERATIONS=-1\n"), 0);

	snprintf(args, sizeof(args), "config check %s", good);
	assert_int_equal(cli(args, &out, &errout), 0);
	assert_has_line(out, "ACTIVITIES_DURATION_MSECS=2000");
	assert_has_line(out, "ACTIVITY_TYPES=cpu_op,kernel");
	assert_has_line(out, "ACTIVITIES_LOG_FILE=/tmp/strobe-check.json");
	assert_non_null(strstr(out, "# trace file: file:///tmp/strobe-check_"));
	assert_string_equal(errout, "");
	free(errout);

	/* The output is itself a valid config. */
	char again[600];
	snprintf(again, sizeof(again), "%s/again.conf", dir);
	assert_int_equal(tu_write_file(again, out), 0);
	free(out);
	snprintf(args, sizeof(args), "config check --on-demand - < %s", again);
	assert_int_equal(cli(args, &out, &errout), 0);
	assert_has_line(out, "ACTIVITIES_DURATION_MSECS=2000");
	free(out);
	free(errout);

	snprintf(args, sizeof(args), "config check %s", bad);
	assert_int_equal(cli(args, &out, &errout), 1);
	assert_string_equal(out, "");
	char expect[1400];
	snprintf(expect, sizeof(expect),
	         "strobe: %s: line 2: \"ACTIVITIES_ITERATIONS=-1\": invalid argument -1, expected range [0, "
	         "2147483647]\n",
	         bad);
	assert_string_equal(errout, expect);
	free(out);
	free(errout);

	/* stdin, with no FILE. */
	assert_int_equal(cli("config check < /dev/null", &out, &errout), 0);
	assert_has_line(out, "ACTIVITIES_ENABLED=true");
	free(out);
	free(errout);
	assert_int_equal(cli("config check <<'EOF'\nfoo\nEOF", &out, &errout), 1);
	assert_string_equal(errout, "strobe: <stdin>: line 1: \"foo\": expected KEY=VALUE\n");
	free(out);
	free(errout);

	/* On demand, a log file outside the allowed directory is refused. */
	assert_int_equal(
	    cli("config check --on-demand <<'EOF'\nACTIVITIES_LOG_FILE=/var/x.json\nEOF", &out, &errout), 1);
	assert_non_null(strstr(errout, "line 1: \"ACTIVITIES_LOG_FILE=/var/x.json\": "));
	assert_non_null(strstr(errout, "beneath"));
	free(out);
	free(errout);

	snprintf(args, sizeof(args), "config check %s/missing.conf", dir);
	assert_int_equal(cli(args, &out, &errout), 1);
	assert_non_null(strstr(errout, "missing.conf: No such file or directory"));
	free(out);
	free(errout);

	/* A NUL byte would silently end the text: refused, naming its line. */
	char nul[600];
	snprintf(nul, sizeof(nul), "%s/nul.conf", dir);
	FILE *f = fopen(nul, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite("A=1\nB=2\0C=3\n", 1, 12, f), 12);
	assert_int_equal(fclose(f), 0);
	snprintf(args, sizeof(args), "config check %s", nul);
	assert_int_equal(cli(args, &out, &errout), 1);
	assert_non_null(strstr(errout, "line 2: contains a NUL byte"));
	free(out);
	free(errout);
	tu_rmrf(dir);
}

/* A file saved with a UTF-8 byte order mark keeps its first key. */
static void test_bom_skipped(void **state)
{
	(void)state;
	struct strb_config cfg;
	assert_parses(&cfg, "\xEF\xBB\xBF"
	                    "ACTIVITIES_DURATION_MSECS=1234\nACTIVITIES_WARMUP_PERIOD_SECS=3\n");
	assert_int_equal(cfg.duration_ms, 1234);
	assert_int_equal(cfg.warmup_secs, 3);
	/* Only at the start: inside the text it is still an unknown byte. */
	warnings = 0;
	assert_parses(&cfg, "ACTIVITIES_WARMUP_PERIOD_SECS=3\n\xEF\xBB\xBF"
	                    "ACTIVITIES_DURATION_MSECS=77\n");
	assert_int_equal(cfg.duration_ms, 500);
	assert_true(warnings >= 1);
}

static void test_cli_usage(void **state)
{
	(void)state;
	char *out, *errout;
	assert_int_equal(cli("config --help", &out, &errout), 0);
	assert_non_null(strstr(out, "strobe config check"));
	assert_non_null(strstr(out, "Examples"));
	free(out);
	free(errout);
	assert_int_equal(cli("config check --help", &out, &errout), 0);
	assert_non_null(strstr(out, "--on-demand"));
	free(out);
	free(errout);
	assert_int_equal(cli("config check --bogus", &out, &errout), 2);
	assert_non_null(strstr(errout, "unknown option '--bogus'"));
	free(out);
	free(errout);
	assert_int_equal(cli("config check a b", &out, &errout), 2);
	free(out);
	free(errout);
	assert_int_equal(cli("config", &out, &errout), 2);
	assert_non_null(strstr(errout, "usage"));
	free(out);
	free(errout);
	assert_int_equal(cli("config frobnicate", &out, &errout), 2);
	assert_non_null(strstr(errout, "unknown subcommand 'frobnicate'"));
	free(out);
	free(errout);
	assert_int_equal(cli("config defaults", &out, &errout), 0);
	assert_has_line(out, "ACTIVITIES_ENABLED=true");
	assert_has_line(out, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=128");
	assert_has_line(out, "# ACTIVITIES_DURATION_MSECS=500 (default)");
	free(out);
	free(errout);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_random_texts),
	    cmocka_unit_test(test_whitespace_and_crlf),
	    cmocka_unit_test(test_comments),
	    cmocka_unit_test(test_line_format),
	    cmocka_unit_test(test_error_message_names_line),
	    cmocka_unit_test(test_all_or_nothing),
	    cmocka_unit_test(test_layered_parses),
	    cmocka_unit_test(test_activity_types),
	    cmocka_unit_test(test_integers),
	    cmocka_unit_test(test_int64_saturates),
	    cmocka_unit_test(test_bools),
	    cmocka_unit_test(test_lists_and_strings),
	    cmocka_unit_test(test_long_values),
	    cmocka_unit_test(test_arbitrary_bytes),
	    cmocka_unit_test(test_start_time),
	    cmocka_unit_test(test_round_up),
	    cmocka_unit_test(test_durations_and_triggers),
	    cmocka_unit_test(test_buffers),
	    cmocka_unit_test(test_log_file_pid),
	    cmocka_unit_test(test_profile_memory_resets_log_file),
	    cmocka_unit_test(test_base_config_any_log_path),
	    cmocka_unit_test(test_on_demand_log_path),
	    cmocka_unit_test(test_request_ids_and_xpu),
	    cmocka_unit_test(test_ipc_fabric_default),
	    cmocka_unit_test(test_format_round_trip),
	    cmocka_unit_test(test_format_lines),
	    cmocka_unit_test(test_read_base),
	    cmocka_unit_test(test_cli_check),
	    cmocka_unit_test(test_cli_usage),
	    cmocka_unit_test(test_bom_skipped),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

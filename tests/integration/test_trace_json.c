/* Traces as a user gets them: recorded through the public API, saved, and
 * parsed back. Checks libkineto's layout (reference/kineto-behaviour.md §7,
 * §8.3), strobe's accounting, escaping, compression, output writers and
 * child profilers. */
/* STROBE_TEST_LABELS: concurrency */
#include "testutil.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strobe/strobe.h"

#define BASE_PERIOD_NS (7889238LL * 1000000000LL)
#define NAME_MAX_BYTES 1023
#define PATH_LEN       4096

static char path_buf[PATH_LEN];

/* ---- helpers ------------------------------------------------------------ */

static const char *out_path(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", tu_dir, name);
	return path_buf;
}

static int64_t my_tid(void)
{
	return (int64_t)syscall(SYS_gettid);
}

static void begin(uint64_t mask, const char *config)
{
	assert_int_equal(strobe_prepare(mask, config), 0);
	assert_int_equal(strobe_start(), 0);
}

static strobe_trace *end(void)
{
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_non_null(t);
	return t;
}

static yajl_val save_load(const strobe_trace *t, const char *name)
{
	const char *path = out_path(name);
	int rc = strobe_trace_save(t, path);
	if (rc)
		fail_msg("saving %s: %s: %s", path, strobe_status_string(rc), strobe_last_error());
	return tu_load_trace(path);
}

/* Stops the trace, saves it as `name` and parses it back. */
static yajl_val end_load(const char *name)
{
	strobe_trace *t = end();
	yajl_val root = save_load(t, name);
	strobe_trace_destroy(t);
	return root;
}

static int64_t stat_of(yajl_val root, const char *key)
{
	yajl_val s = tu_get(root, "strobe");
	if (!s || !YAJL_IS_OBJECT(s))
		fail_msg("trace has no \"strobe\" object");
	return (int64_t)tu_get_num(s, key);
}

static yajl_val args_of(yajl_val ev)
{
	yajl_val a = tu_get(ev, "args");
	if (!a || !YAJL_IS_OBJECT(a))
		fail_msg("event \"%s\" has no args object", tu_get_str(ev, "name"));
	return a;
}

static yajl_val must_find(yajl_val root, const char *ph, const char *cat, const char *name)
{
	yajl_val e = tu_find(root, ph, cat, name);
	if (!e)
		fail_msg("no event ph=%s cat=%s name=%s", ph ? ph : "*", cat ? cat : "*", name ? name : "*");
	return e;
}

static int64_t int_of(yajl_val obj, const char *key)
{
	yajl_val v = tu_get(obj, key);
	if (!v || !YAJL_IS_INTEGER(v))
		fail_msg("member \"%s\" is missing or not an integer", key);
	return YAJL_GET_INTEGER(v);
}

static void assert_str_member(yajl_val obj, const char *key, const char *want)
{
	const char *got = tu_get_str(obj, key);
	if (!got)
		fail_msg("member \"%s\" is missing or not a string", key);
	assert_string_equal(got, want);
}

/* inner lies inside outer on the same row. */
static void assert_inside(yajl_val inner, yajl_val outer)
{
	assert_int_equal(int_of(inner, "pid"), int_of(outer, "pid"));
	assert_int_equal(int_of(inner, "tid"), int_of(outer, "tid"));
	int64_t is = tu_get_ns(inner, "ts"), ie = is + tu_get_ns(inner, "dur");
	int64_t os = tu_get_ns(outer, "ts"), oe = os + tu_get_ns(outer, "dur");
	assert_true(is >= os);
	assert_true(ie <= oe);
}

/* Index of event e in traceEvents. */
static size_t index_of(yajl_val root, yajl_val e)
{
	yajl_val ev = tu_events(root);
	for (size_t i = 0; i < ev->u.array.len; i++)
		if (ev->u.array.values[i] == e)
			return i;
	fail_msg("event not in traceEvents");
	return 0;
}

static yajl_val event_at(yajl_val root, size_t i)
{
	yajl_val ev = tu_events(root);
	assert_true(i < ev->u.array.len);
	return ev->u.array.values[i];
}

/* The libkineto base time a trace started now will have. */
static int64_t base_for_now(void)
{
	return (int64_t)strobe_now_ns() / BASE_PERIOD_NS * BASE_PERIOD_NS;
}

/* ---- the README snippet ---------------------------------------------------- */

static void test_snippet(void **state)
{
	(void)state;
	begin(0, NULL);
	int64_t before = (int64_t)strobe_now_ns();
	uint64_t id = strobe_op_push("forward");
	strobe_range_push("attention");
	strobe_range_pop();
	strobe_op_pop();
	int64_t after = (int64_t)strobe_now_ns();
	strobe_instant("checkpoint");
	strobe_counter("queue_depth", 3.0);
	yajl_val root = end_load("snippet.json");

	assert_true(id > 0 && id < (1ull << 53));
	assert_int_equal(tu_count(root, "X", "cpu_op", NULL), 1);
	assert_int_equal(tu_count(root, "X", "user_annotation", NULL), 1);
	yajl_val fwd = must_find(root, "X", "cpu_op", "forward");
	assert_int_equal(int_of(args_of(fwd), "External id"), id);
	assert_int_equal(int_of(fwd, "pid"), getpid());
	assert_int_equal(int_of(fwd, "tid"), my_tid());
	yajl_val att = must_find(root, "X", "user_annotation", "attention");
	assert_inside(att, fwd);
	/* strobe_now_ns is in the trace's time base (2 us for clock-map error). */
	int64_t base = int_of(root, "baseTimeNanoseconds");
	assert_true(base + tu_get_ns(fwd, "ts") >= before - 2000);
	assert_true(base + tu_get_ns(fwd, "ts") + tu_get_ns(fwd, "dur") <= after + 2000);

	yajl_val inst = must_find(root, "i", "cpu_instant_event", "checkpoint");
	assert_str_member(inst, "s", "t");
	assert_int_equal(int_of(inst, "pid"), getpid());
	assert_int_equal(int_of(inst, "tid"), my_tid());
	assert_true(tu_get_ns(inst, "ts") >= tu_get_ns(fwd, "ts") + tu_get_ns(fwd, "dur"));

	yajl_val ctr = must_find(root, "C", "cpu_counter", "queue_depth");
	yajl_val cargs = args_of(ctr);
	assert_int_equal(cargs->u.object.len, 1);
	assert_int_equal(tu_get_num(cargs, "queue_depth"), 3);
	assert_true(tu_get_ns(ctr, "ts") >= tu_get_ns(inst, "ts"));
	yajl_tree_free(root);
}

/* ---- layout ------------------------------------------------------------------ */

static size_t key_index(yajl_val root, const char *key)
{
	for (size_t i = 0; i < root->u.object.len; i++)
		if (!strcmp(root->u.object.keys[i], key))
			return i;
	fail_msg("top-level key \"%s\" missing", key);
	return 0;
}

static void test_top_level(void **state)
{
	(void)state;
	begin(0, NULL);
	strobe_instant("x");
	strobe_trace *t = end();
	int64_t win_start, win_end;
	assert_int_equal(strobe_trace_window(t, &win_start, &win_end), 0);
	assert_true(win_start <= win_end);
	yajl_val root = save_load(t, "top.json");
	strobe_trace_destroy(t);

	assert_true(YAJL_IS_OBJECT(root));
	assert_int_equal(key_index(root, "schemaVersion"), 0);
	assert_int_equal(key_index(root, "deviceProperties"), 1);
	assert_true(key_index(root, "host_name") < key_index(root, "displayTimeUnit"));
	assert_true(key_index(root, "strobe") < key_index(root, "displayTimeUnit"));
	assert_true(key_index(root, "displayTimeUnit") < key_index(root, "baseTimeNanoseconds"));
	assert_true(key_index(root, "baseTimeNanoseconds") < key_index(root, "traceEvents"));
	assert_int_equal(key_index(root, "traceName"), root->u.object.len - 1);

	assert_int_equal(int_of(root, "schemaVersion"), 1);
	assert_true(YAJL_IS_ARRAY(tu_get(root, "deviceProperties")));
	assert_str_member(root, "displayTimeUnit", "ms");
	int64_t base = int_of(root, "baseTimeNanoseconds");
	assert_int_equal(base % BASE_PERIOD_NS, 0);
	assert_true(base <= win_start && win_start - base < BASE_PERIOD_NS);
	assert_str_member(root, "traceName", out_path("top.json"));
	char host[256] = "";
	gethostname(host, sizeof(host));
	assert_str_member(root, "host_name", host);

	yajl_val s = tu_get(root, "strobe");
	assert_true(YAJL_IS_OBJECT(s));
	assert_str_member(s, "version", strobe_version());
	const char *clock = tu_get_str(s, "clock");
	assert_true(clock && (!strcmp(clock, "tsc") || !strcmp(clock, "monotonic")));
	static const char *const zero[] = {"dropped_events",     "truncated_names",     "unfinished_ranges",
	                                   "unmatched_pops",     "non_finite_counters", "out_of_window",
	                                   "rejected_activities"};
	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		assert_int_equal(stat_of(root, zero[i]), 0);
	assert_int_equal(stat_of(root, "threads"), 1);

	/* Times are relative to the base and inside the window. */
	yajl_val x = must_find(root, "i", "cpu_instant_event", "x");
	int64_t at = base + tu_get_ns(x, "ts");
	assert_true(at >= win_start && at <= win_end);
	/* The last event closes the window. */
	yajl_val ev = tu_events(root);
	yajl_val last = ev->u.array.values[ev->u.array.len - 1];
	assert_str_member(last, "name", "Record Window End");
	assert_str_member(last, "ph", "i");
	assert_str_member(last, "s", "g");
	assert_int_equal(base + tu_get_ns(last, "ts"), win_end);
	yajl_tree_free(root);
}

/* Every "ts" and "dur" in the raw text: digits, a point, exactly three digits. */
static size_t check_three_decimals(const char *text, const char *member)
{
	size_t seen = 0;
	for (const char *p = strstr(text, member); p; p = strstr(p + 1, member)) {
		const char *q = p + strlen(member);
		while (*q == ' ')
			q++;
		const char *digits = q;
		while (*q >= '0' && *q <= '9')
			q++;
		bool ok = q > digits && q[0] == '.';
		for (int i = 1; ok && i <= 3; i++)
			ok = q[i] >= '0' && q[i] <= '9';
		ok = ok && (q[4] == ',' || q[4] == '}' || q[4] == ' ' || q[4] == '\n');
		if (!ok)
			fail_msg("%s not written as microseconds with three decimals: %.40s", member, p);
		seen++;
	}
	return seen;
}

static void test_time_format(void **state)
{
	(void)state;
	begin(0, NULL);
	int64_t base = base_for_now();
	int64_t now = (int64_t)strobe_now_ns();
	/* Whole microseconds plus 5 ns, lasting 7 ns and then exactly 1 ms. */
	int64_t s = (now - base) / 1000 * 1000 + base + 5;
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = STROBE_ACTIVITY_CPU_OP,
	                            .name = "short",
	                            .start_ns = s,
	                            .end_ns = s + 7};
	assert_int_equal(strobe_record(&a), 0);
	a.name = "one_ms";
	a.end_ns = s + 1000000;
	assert_int_equal(strobe_record(&a), 0);
	strobe_range_push("live");
	strobe_range_pop();
	yajl_val root = end_load("time.json");
	char *text = tu_read_file(out_path("time.json"), NULL);
	assert_non_null(text);
	assert_true(check_three_decimals(text, "\"ts\":") >= tu_events(root)->u.array.len);
	assert_true(check_three_decimals(text, "\"dur\":") >= 3);
	assert_non_null(strstr(text, "\"dur\": 0.007"));
	assert_non_null(strstr(text, "\"dur\": 1000.000"));

	yajl_val e = must_find(root, "X", "cpu_op", "short");
	assert_int_equal(tu_get_ns(e, "ts"), s - base);
	assert_int_equal(tu_get_ns(e, "ts") % 1000, 5);
	assert_int_equal(tu_get_ns(e, "dur"), 7);
	free(text);
	yajl_tree_free(root);
}

/* The text of member key of the event named name (its number as written). */
static const char *number_text(yajl_val root, const char *name, const char *key)
{
	yajl_val v = tu_get(must_find(root, NULL, NULL, name), key);
	assert_true(v && YAJL_IS_NUMBER(v));
	return YAJL_GET_NUMBER(v);
}

/* Times before the trace's base are negative, and no time overflows the
 * writer however far apart (strobe_record takes any int64_t). */
static void test_extreme_times(void **state)
{
	(void)state;
	begin(0, NULL);
	int64_t base = base_for_now();
	tu_record_at("before_base", STROBE_ACTIVITY_CPU_OP, base - 5250, 2000, (struct strobe_activity){0});
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = STROBE_ACTIVITY_CPU_OP,
	                            .name = "all_of_time",
	                            .start_ns = INT64_MIN,
	                            .end_ns = INT64_MAX};
	assert_int_equal(strobe_record(&a), 0);
	a.type = STROBE_ACTIVITY_GPU_USER_ANNOTATION; /* widened by 1 ns each side */
	a.name = "gpu_all_of_time";
	assert_int_equal(strobe_record(&a), 0);
	a.type = STROBE_ACTIVITY_CPU_INSTANT_EVENT;
	a.name = "the_end";
	a.start_ns = a.end_ns = INT64_MAX;
	assert_int_equal(strobe_record(&a), 0);
	yajl_val root = end_load("extreme.json");

	assert_string_equal(number_text(root, "before_base", "ts"), "-5.250");
	assert_int_equal(tu_get_ns(must_find(root, "X", NULL, "before_base"), "dur"), 2000);
	/* 2^64 - 1 ns, exactly. */
	assert_string_equal(number_text(root, "all_of_time", "dur"), "18446744073709551.615");
	assert_string_equal(number_text(root, "gpu_all_of_time", "dur"), "18446744073709551.617");
	char want[64];
	__extension__ __int128 from = (__int128)INT64_MIN - base, gpu_from = from - 1,
	                       to = (__int128)INT64_MAX - base;
	snprintf(want, sizeof(want), "-%llu.%03llu", (unsigned long long)(-from / 1000),
	         (unsigned long long)(-from % 1000));
	assert_string_equal(number_text(root, "all_of_time", "ts"), want);
	snprintf(want, sizeof(want), "-%llu.%03llu", (unsigned long long)(-gpu_from / 1000),
	         (unsigned long long)(-gpu_from % 1000));
	assert_string_equal(number_text(root, "gpu_all_of_time", "ts"), want);
	snprintf(want, sizeof(want), "%llu.%03llu", (unsigned long long)(to / 1000),
	         (unsigned long long)(to % 1000));
	assert_string_equal(number_text(root, "the_end", "ts"), want);
	yajl_tree_free(root);
}

/* ---- process and thread rows ------------------------------------------------- */

/* The "M" event `what` for (pid, tid), or NULL. */
static yajl_val find_meta(yajl_val root, const char *what, int64_t pid, int64_t tid)
{
	yajl_val ev = tu_events(root);
	for (size_t i = 0; i < ev->u.array.len; i++) {
		yajl_val e = ev->u.array.values[i];
		const char *ph = tu_get_str(e, "ph"), *name = tu_get_str(e, "name");
		yajl_val p = tu_get(e, "pid"), t = tu_get(e, "tid");
		if (ph && !strcmp(ph, "M") && name && !strcmp(name, what) && YAJL_IS_INTEGER(p) &&
		    YAJL_GET_INTEGER(p) == pid && YAJL_IS_INTEGER(t) && YAJL_GET_INTEGER(t) == tid)
			return e;
	}
	fail_msg("no \"%s\" metadata event for pid %lld tid %lld", what, (long long)pid, (long long)tid);
	return NULL;
}

static void assert_thread_row(yajl_val root, int64_t tid, const char *name)
{
	char want[512];
	snprintf(want, sizeof(want), "thread %lld (%s)", (long long)tid, name);
	assert_str_member(args_of(find_meta(root, "thread_name", getpid(), tid)), "name", want);
	assert_int_equal(int_of(args_of(find_meta(root, "thread_sort_index", getpid(), tid)), "sort_index"),
	                 tid);
}

static void test_process_and_thread_rows(void **state)
{
	(void)state;
	char comm[17] = "";
	prctl(PR_GET_NAME, comm, 0, 0, 0);
	begin(0, NULL);
	strobe_instant("row");
	yajl_val root = end_load("rows.json");
	int64_t pid = getpid();
	assert_str_member(args_of(find_meta(root, "process_name", pid, 0)), "name", "test_trace_json");
	assert_str_member(args_of(find_meta(root, "process_labels", pid, 0)), "labels", "CPU");
	assert_int_equal(int_of(args_of(find_meta(root, "process_sort_index", pid, 0)), "sort_index"), pid);
	assert_thread_row(root, my_tid(), comm);
	yajl_tree_free(root);

	/* strobe_thread_set_name names the row, set before or during a trace,
	 * and leaves the kernel's name alone. */
	assert_int_equal(strobe_thread_set_name("main loop \"é✓\" longer than fifteen bytes"), 0);
	begin(0, NULL);
	strobe_instant("row");
	root = end_load("rows2.json");
	assert_thread_row(root, my_tid(), "main loop \"é✓\" longer than fifteen bytes");
	yajl_tree_free(root);
	begin(0, NULL);
	strobe_instant("row");
	assert_int_equal(strobe_thread_set_name("renamed mid-trace"), 0);
	root = end_load("rows3.json");
	assert_thread_row(root, my_tid(), "renamed mid-trace");
	yajl_tree_free(root);
	char after[17] = "";
	prctl(PR_GET_NAME, after, 0, 0, 0);
	assert_string_equal(after, comm);
}

/* The row title of the calling thread after a trace taken with its name set
 * to `name`, malloc'ed. */
static char *row_title_with_name(const char *name)
{
	assert_int_equal(strobe_thread_set_name(name), 0);
	begin(0, NULL);
	strobe_instant("row");
	yajl_val root = end_load("longname.json");
	char *got = strdup(tu_get_str(args_of(find_meta(root, "thread_name", getpid(), my_tid())), "name"));
	yajl_tree_free(root);
	return got;
}

/* strobe.h: thread names up to 1023 bytes, longer ones truncated. */
static void test_long_thread_name(void **state)
{
	(void)state;
	char name[2001], want[2100];
	for (int i = 0; i < 2000; i++)
		name[i] = (char)('a' + i % 26);
	static const size_t lengths[] = {300, NAME_MAX_BYTES, 2000};
	for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]); k++) {
		size_t len = lengths[k];
		name[len] = 0;
		char *got = row_title_with_name(name);
		size_t keep = len < NAME_MAX_BYTES ? len : NAME_MAX_BYTES;
		snprintf(want, sizeof(want), "thread %lld (%.*s)", (long long)my_tid(), (int)keep, name);
		bool same = !strcmp(got, want);
		free(got);
		if (!same)
			fail_msg("a %zu-byte thread name does not come back as its first %zu bytes", len,
			         keep);
		name[len] = (char)('a' + len % 26);
	}
}

/* ---- metadata ------------------------------------------------------------------ */

static void test_metadata_types(void **state)
{
	(void)state;
	assert_int_equal(strobe_metadata_set_string("m_str", "hello"), 0);
	assert_int_equal(strobe_metadata_set_int("m_int", -42), 0);
	assert_int_equal(strobe_metadata_set_int("m_max", INT64_MAX), 0);
	assert_int_equal(strobe_metadata_set_double("m_dbl", 0.125), 0);
	assert_int_equal(strobe_metadata_set_json("m_obj", "{\"a\": [1, 2], \"b\": {\"c\": null}}"), 0);
	assert_int_equal(strobe_metadata_set_string("m_twice", "first"), 0);
	assert_int_equal(strobe_metadata_set_int("m_twice", 7), 0);
	assert_int_equal(strobe_metadata_set_string("host_name", "program-says"), 0);

	for (int round = 0; round < 2; round++) {
		/* The second trace sets nothing new: metadata is kept across traces. */
		begin(0, NULL);
		yajl_val root = end_load(round ? "meta2.json" : "meta1.json");
		assert_str_member(root, "m_str", "hello");
		assert_int_equal(int_of(root, "m_int"), -42);
		assert_string_equal(YAJL_GET_NUMBER(tu_get(root, "m_max")), "9223372036854775807");
		yajl_val d = tu_get(root, "m_dbl");
		assert_true(YAJL_IS_DOUBLE(d) && YAJL_GET_DOUBLE(d) == 0.125);
		yajl_val o = tu_get(root, "m_obj");
		assert_true(YAJL_IS_OBJECT(o));
		yajl_val arr = tu_get(o, "a");
		assert_true(YAJL_IS_ARRAY(arr) && arr->u.array.len == 2);
		assert_true(YAJL_IS_NULL(tu_get(tu_get(o, "b"), "c")));
		assert_int_equal(int_of(root, "m_twice"), 7);
		/* The program's key wins over strobe's own, and appears once. */
		assert_str_member(root, "host_name", "program-says");
		char *text = tu_read_file(out_path(round ? "meta2.json" : "meta1.json"), NULL);
		assert_null(strstr(strstr(text, "\"host_name\"") + 1, "\"host_name\""));
		assert_null(strstr(strstr(text, "\"m_twice\"") + 1, "\"m_twice\""));
		free(text);
		yajl_tree_free(root);
	}

	assert_int_equal(strobe_metadata_remove("m_obj"), 0);
	assert_int_equal(strobe_metadata_remove("host_name"), 0);
	begin(0, NULL);
	yajl_val root = end_load("meta3.json");
	assert_null(tu_get(root, "m_obj"));
	char host[256] = "";
	gethostname(host, sizeof(host));
	assert_str_member(root, "host_name", host);
	yajl_tree_free(root);
	static const char *const keys[] = {"m_str", "m_int", "m_max", "m_dbl", "m_twice"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		assert_int_equal(strobe_metadata_remove(keys[i]), 0);
}

static void test_job_env_and_trace_id(void **state)
{
	(void)state;
	setenv("PT_PROFILER_JOB_NAME", "train \"big\" job", 1);
	setenv("PT_PROFILER_JOB_VERSION", "3", 1);
	begin(0, "REQUEST_TRACE_ID=abc\n");
	yajl_val root = end_load("env.json");
	unsetenv("PT_PROFILER_JOB_NAME");
	unsetenv("PT_PROFILER_JOB_VERSION");
	assert_str_member(root, "PT_PROFILER_JOB_NAME", "train \"big\" job");
	assert_str_member(root, "PT_PROFILER_JOB_VERSION", "3");
	assert_null(tu_get(root, "PT_PROFILER_JOB_ATTEMPT_INDEX"));
	assert_str_member(root, "trace_id", "abc");
	yajl_tree_free(root);

	begin(0, NULL);
	root = end_load("env2.json");
	assert_null(tu_get(root, "PT_PROFILER_JOB_NAME"));
	assert_null(tu_get(root, "trace_id"));
	yajl_tree_free(root);
}

/* ---- escaping ----------------------------------------------------------------------- */

struct nasty {
	const char *in;
	const char *out; /* what a JSON parser must read back */
};

static const struct nasty nasties[] = {
    {"quote\"inside\"", "quote\"inside\""},
    {"back\\slash\\\\", "back\\slash\\\\"},
    {"new\nline\r\n", "new\nline\r\n"},
    {"tab\there", "tab\there"},
    {"\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19"
     "\x1a\x1b\x1c\x1d\x1e\x1f",
     "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19"
     "\x1a\x1b\x1c\x1d\x1e\x1f"},
    {"\xc3\xa9\xe2\x9c\x93\xf0\x9f\x9a\x80", "\xc3\xa9\xe2\x9c\x93\xf0\x9f\x9a\x80"}, /* é✓🚀 */
    {"</script>\"}]{[\x7f", "</script>\"}]{[\x7f"},
    /* Bytes that are not UTF-8: each becomes U+FFFD. */
    {"bad\xff\xfe end", "bad\xef\xbf\xbd\xef\xbf\xbd end"},
    {"stray\x80", "stray\xef\xbf\xbd"},
    {"\xc0"
     "A",
     "\xef\xbf\xbd"
     "A"},
};

#define NASTY_COUNT (sizeof(nasties) / sizeof(nasties[0]))

static void record_nasty(size_t i)
{
	const char *s = nasties[i].in;
	strobe_range_push(s);
	strobe_range_pop();
	strobe_instant(s);
	char key[32], name[32];
	snprintf(key, sizeof(key), "nasty_%zu", i);
	snprintf(name, sizeof(name), "rec_%zu", i);
	assert_int_equal(strobe_metadata_set_string(key, s), 0);
	assert_int_equal(strobe_metadata_set_int(s, (int64_t)i), 0);
	struct strobe_arg args[2] = {{.key = "v", .kind = STROBE_ARG_STRING, .value.str = s},
	                             {.key = s, .kind = STROBE_ARG_I64, .value.i64 = (int64_t)i}};
	int64_t now = (int64_t)strobe_now_ns();
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = STROBE_ACTIVITY_CPU_OP,
	                            .name = name,
	                            .start_ns = now,
	                            .end_ns = now + 10,
	                            .args = args,
	                            .arg_count = 2};
	assert_int_equal(strobe_record(&a), 0);
}

static void check_nasty(yajl_val root, size_t i)
{
	const char *want = nasties[i].out;
	assert_int_equal(tu_count(root, "X", "user_annotation", want), 1);
	assert_int_equal(tu_count(root, "i", "cpu_instant_event", want), 1);
	char key[32], name[32];
	snprintf(key, sizeof(key), "nasty_%zu", i);
	snprintf(name, sizeof(name), "rec_%zu", i);
	assert_str_member(root, key, want);
	assert_int_equal(int_of(root, want), (int64_t)i);
	yajl_val args = args_of(must_find(root, "X", "cpu_op", name));
	assert_str_member(args, "v", want);
	assert_int_equal(int_of(args, want), (int64_t)i);
}

static void test_nasty_strings(void **state)
{
	(void)state;
	char *long_name = malloc(5001);
	memset(long_name, 'n', 5000);
	long_name[5000] = 0;
	begin(0, NULL);
	for (size_t i = 0; i < NASTY_COUNT; i++)
		record_nasty(i);
	strobe_range_push(long_name);
	strobe_range_pop();
	strobe_instant(long_name);
	long_name[NAME_MAX_BYTES] = 0; /* exactly at the limit: kept whole, not counted */
	strobe_instant(long_name);
	long_name[NAME_MAX_BYTES] = 'n';
	assert_int_equal(strobe_metadata_set_string("nasty_long", long_name), 0);
	struct strobe_arg arg = {.key = "long", .kind = STROBE_ARG_STRING, .value.str = long_name};
	int64_t now = (int64_t)strobe_now_ns();
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = STROBE_ACTIVITY_CPU_OP,
	                            .name = long_name,
	                            .start_ns = now,
	                            .end_ns = now,
	                            .args = &arg,
	                            .arg_count = 1};
	assert_int_equal(strobe_record(&a), 0);
	yajl_val root = end_load("nasty.json");

	for (size_t i = 0; i < NASTY_COUNT; i++)
		check_nasty(root, i);
	/* Names are cut at 1023 bytes and counted; values are not cut. */
	long_name[NAME_MAX_BYTES] = 0;
	assert_int_equal(tu_count(root, "X", "user_annotation", long_name), 1);
	assert_int_equal(tu_count(root, "i", "cpu_instant_event", long_name), 2);
	yajl_val rec = must_find(root, "X", "cpu_op", long_name);
	long_name[NAME_MAX_BYTES] = 'n';
	assert_str_member(args_of(rec), "long", long_name);
	assert_str_member(root, "nasty_long", long_name);
	assert_int_equal(stat_of(root, "truncated_names"), 3);
	yajl_tree_free(root);

	for (size_t i = 0; i < NASTY_COUNT; i++) {
		char key[32];
		snprintf(key, sizeof(key), "nasty_%zu", i);
		assert_int_equal(strobe_metadata_remove(key), 0);
		assert_int_equal(strobe_metadata_remove(nasties[i].in), 0);
	}
	assert_int_equal(strobe_metadata_remove("nasty_long"), 0);
	free(long_name);
}

/* ---- compression ---------------------------------------------------------------------- */

static void test_compressed_outputs(void **state)
{
	(void)state;
	begin(0, NULL);
	char name[64];
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "step %d", i);
		strobe_range_push(name);
		strobe_counter("loss", 1.0 / (i + 1));
		strobe_range_pop();
	}
	strobe_trace *t = end();
	static const char *const names[] = {"c.json", "c.json.gz", "c.json.zst", "c.gz", "c.zst"};
	char *text[5];
	size_t len[5];
	for (int i = 0; i < 5; i++) {
		char url[PATH_LEN + 16];
		/* With and without the file:// protocol. */
		snprintf(url, sizeof(url), i % 2 ? "file://%s" : "%s", out_path(names[i]));
		assert_int_equal(strobe_trace_save(t, url), 0);
		text[i] = tu_read_file(out_path(names[i]), &len[i]);
		assert_non_null(text[i]);
		yajl_val root = tu_load_trace(out_path(names[i]));
		assert_str_member(root, "traceName", out_path(names[i]));
		assert_int_equal(tu_count(root, "X", "user_annotation", NULL), 3000);
		assert_int_equal(tu_count(root, "C", "cpu_counter", "loss"), 3000);
		yajl_tree_free(root);
	}
	strobe_trace_destroy(t);
	/* Identical up to the traceName, the only member that names the file. */
	const char *cut0 = strstr(text[0], "\"traceName\"");
	assert_non_null(cut0);
	for (int i = 1; i < 5; i++) {
		const char *cut = strstr(text[i], "\"traceName\"");
		assert_non_null(cut);
		assert_int_equal(cut - text[i], cut0 - text[0]);
		assert_memory_equal(text[i], text[0], (size_t)(cut0 - text[0]));
	}
	/* Really compressed, in the format the suffix names. */
	static const unsigned char gz_magic[] = {0x1f, 0x8b}, zst_magic[] = {0x28, 0xb5, 0x2f, 0xfd};
	for (int i = 1; i < 5; i++) {
		FILE *f = fopen(out_path(names[i]), "rb");
		unsigned char head[4];
		assert_int_equal(fread(head, 1, 4, f), 4);
		fseek(f, 0, SEEK_END);
		long size = ftell(f);
		fclose(f);
		bool gz = strstr(names[i], ".gz") != NULL;
		assert_memory_equal(head, gz ? gz_magic : zst_magic, gz ? 2 : 4);
		assert_true((size_t)size * 4 < len[0]);
	}
	for (int i = 0; i < 5; i++)
		free(text[i]);
}

/* A trace of several chunks is formatted by worker threads: the file is
 * the same bytes whatever their number, plain or zstd (compressed by
 * zstd's threads too). */
static void test_parallel_export(void **state)
{
	(void)state;
	begin(0, NULL);
	char name[64];
	for (int i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), "step %d", i % 977);
		strobe_range_push(name);
		strobe_counter("loss", 1.0 / (i + 1));
		strobe_range_pop();
	}
	strobe_trace *t = end();
	static const char *const threads[] = {"1", "2", "3", "junk"};
	static const char *const names[] = {"p1.json", "p2.json", "p3.json.zst", "pjunk.json"};
	char *text[4];
	size_t len[4];
	for (int i = 0; i < 4; i++) {
		setenv("STROBE_EXPORT_THREADS", threads[i], 1);
		assert_int_equal(strobe_trace_save(t, out_path(names[i])), 0);
		text[i] = tu_read_file(out_path(names[i]), &len[i]);
		assert_non_null(text[i]);
	}
	unsetenv("STROBE_EXPORT_THREADS");
	strobe_trace_destroy(t);
	const char *cut0 = strstr(text[0], "\"traceName\"");
	assert_non_null(cut0);
	assert_true(cut0 - text[0] > 20000 * 60); /* several chunks of 4096 activities */
	for (int i = 1; i < 4; i++) {
		const char *cut = strstr(text[i], "\"traceName\"");
		assert_non_null(cut);
		assert_int_equal(cut - text[i], cut0 - text[0]);
		assert_memory_equal(text[i], text[0], (size_t)(cut0 - text[0]));
	}
	for (int i = 0; i < 4; i++)
		free(text[i]);
}

/* Each thread keeps the text it wrote for an activity's type, name,
 * category and row, and copies it for the next one alike: with far more
 * of them than it keeps, on two threads of their own, every event still
 * has its own name, category and row. */
static void test_heads_reused(void **state)
{
	(void)state;
	begin(0, NULL);
	enum { NAMES = 5000, ROUNDS = 4 };
	char name[64];
	for (int i = 0; i < NAMES * ROUNDS; i++) {
		snprintf(name, sizeof(name), "h%d", i % NAMES);
		strobe_range_push(name); /* the same name as an op's: another type, another text */
		strobe_op_push(name);
		strobe_instant(name);
		strobe_op_pop();
		strobe_range_pop();
	}
	strobe_trace *t = end();
	for (int threads = 1; threads <= 2; threads++) {
		setenv("STROBE_EXPORT_THREADS", threads == 1 ? "1" : "2", 1);
		yajl_val root = save_load(t, threads == 1 ? "heads1.json" : "heads2.json");
		unsetenv("STROBE_EXPORT_THREADS");
		int counts[3][NAMES] = {{0}}; /* range, op, instant */
		yajl_val ev = tu_events(root);
		int64_t tid = my_tid();
		for (size_t i = 0; i < YAJL_GET_ARRAY(ev)->len; i++) {
			yajl_val e = YAJL_GET_ARRAY(ev)->values[i];
			const char *ph = tu_get_str(e, "ph"), *cat = tu_get_str(e, "cat"),
			           *n = tu_get_str(e, "name");
			if (!n || n[0] != 'h' || !strcmp(ph, "M"))
				continue;
			int k = atoi(n + 1), kind = !strcmp(ph, "i") ? 2 : !strcmp(cat, "cpu_op") ? 1 : 0;
			assert_true(k >= 0 && k < NAMES);
			assert_int_equal((int64_t)tu_get_num(e, "tid"), tid);
			assert_int_equal((int64_t)tu_get_num(e, "pid"), (int64_t)getpid());
			if (kind == 2)
				assert_string_equal(tu_get_str(e, "s"), "t");
			else
				assert_string_equal(ph, "X");
			counts[kind][k]++;
		}
		for (int kind = 0; kind < 3; kind++)
			for (int k = 0; k < NAMES; k++)
				assert_int_equal(counts[kind][k], ROUNDS);
		yajl_tree_free(root);
	}
	strobe_trace_destroy(t);
}

/* ---- strobe_record, flows and ids -------------------------------------------------------- */

#define FLOW_FWDBWD 77
#define CORR        500
#define OP_ID       1001

/* The flow event right after `x`, checked against it. */
static yajl_val flow_after(yajl_val root, yajl_val x, const char *ph, const char *cat, uint64_t id)
{
	yajl_val f = event_at(root, index_of(root, x) + 1);
	assert_str_member(f, "ph", ph);
	assert_str_member(f, "cat", cat);
	assert_str_member(f, "name", cat);
	assert_int_equal(int_of(f, "id"), id);
	assert_int_equal(int_of(f, "pid"), int_of(x, "pid"));
	assert_int_equal(int_of(f, "tid"), int_of(x, "tid"));
	assert_int_equal(tu_get_ns(f, "ts"), tu_get_ns(x, "ts"));
	if (ph[0] == 'f')
		assert_str_member(f, "bp", "e");
	else
		assert_null(tu_get(f, "bp"));
	return f;
}

static void test_record_args_flows_ids(void **state)
{
	(void)state;
	begin(0, NULL);
	int64_t base = base_for_now();
	int64_t s = (int64_t)strobe_now_ns();
	const struct strobe_arg all_kinds[] = {
	    {.key = "i", .kind = STROBE_ARG_I64, .value.i64 = -5},
	    {.key = "u", .kind = STROBE_ARG_U64, .value.u64 = UINT64_MAX},
	    {.key = "f", .kind = STROBE_ARG_F64, .value.f64 = 0.25},
	    {.key = "yes", .kind = STROBE_ARG_BOOL, .value.b = true},
	    {.key = "no", .kind = STROBE_ARG_BOOL, .value.b = false},
	    {.key = "s", .kind = STROBE_ARG_STRING, .value.str = "text"},
	    {.key = "j", .kind = STROBE_ARG_JSON, .value.str = "[1, {\"a\": null}]"},
	};
	tu_record_at("rec.fwd", STROBE_ACTIVITY_CPU_OP, s, 5000,
	             (struct strobe_activity){.id = OP_ID,
	                                      .flow_id = FLOW_FWDBWD,
	                                      .flow_kind = STROBE_FLOW_FWDBWD,
	                                      .flags = STROBE_ACTIVITY_FLOW_START,
	                                      .args = all_kinds,
	                                      .arg_count = sizeof(all_kinds) / sizeof(all_kinds[0])});
	const struct strobe_arg launch_args[] = {
	    {.key = "correlation", .kind = STROBE_ARG_U64, .value.u64 = CORR},
	    {.key = "cbid", .kind = STROBE_ARG_I64, .value.i64 = 211}};
	tu_record_at("cudaLaunchKernel", STROBE_ACTIVITY_CUDA_RUNTIME, s + 1000, 1000,
	             (struct strobe_activity){.id = CORR,
	                                      .linked_id = OP_ID,
	                                      .flow_id = CORR,
	                                      .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU,
	                                      .flags = STROBE_ACTIVITY_FLOW_START,
	                                      .args = launch_args,
	                                      .arg_count = 2});
	tu_record_at("my_kernel", STROBE_ACTIVITY_CONCURRENT_KERNEL, s + 3000, 1000,
	             (struct strobe_activity){.device = 1,
	                                      .resource = 7,
	                                      .id = CORR,
	                                      .linked_id = OP_ID,
	                                      .flow_id = CORR,
	                                      .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU});
	tu_record_at("orphan_kernel", STROBE_ACTIVITY_CONCURRENT_KERNEL, s + 4500, 100,
	             (struct strobe_activity){.device = 1, .resource = 7, .id = 600});
	tu_record_at("orphan_memcpy", STROBE_ACTIVITY_GPU_MEMCPY, s + 4700, 100,
	             (struct strobe_activity){.device = 1, .resource = 8, .id = 700});
	tu_record_at("gpu_ann", STROBE_ACTIVITY_GPU_USER_ANNOTATION, s + 3000, 1000,
	             (struct strobe_activity){.device = 1, .resource = 7, .id = 800});
	tu_record_at(
	    "rec.bwd", STROBE_ACTIVITY_CPU_OP, s + 10000, 2000,
	    (struct strobe_activity){.id = 1002, .flow_id = FLOW_FWDBWD, .flow_kind = STROBE_FLOW_FWDBWD});
	tu_record_at("linked_op", STROBE_ACTIVITY_CPU_OP, s + 20000, 10,
	             (struct strobe_activity){.id = 1003, .linked_id = OP_ID});
	tu_record_at("elsewhere", STROBE_ACTIVITY_USER_ANNOTATION, s + 30000, 10,
	             (struct strobe_activity){.device = 5, .resource = -9, .id = 900});
	yajl_val root = end_load("record.json");

	yajl_val fwd = must_find(root, "X", "cpu_op", "rec.fwd");
	assert_int_equal(int_of(fwd, "pid"), getpid()); /* device 0: this process */
	assert_int_equal(int_of(fwd, "tid"), my_tid()); /* resource 0: this thread */
	assert_int_equal(tu_get_ns(fwd, "ts"), s - base);
	assert_int_equal(tu_get_ns(fwd, "dur"), 5000);
	yajl_val a = args_of(fwd);
	assert_string_equal(a->u.object.keys[0], "External id");
	assert_int_equal(int_of(a, "External id"), OP_ID);
	assert_int_equal(int_of(a, "i"), -5);
	assert_string_equal(YAJL_GET_NUMBER(tu_get(a, "u")), "18446744073709551615");
	assert_true(tu_get_num(a, "f") == 0.25);
	assert_true(YAJL_IS_TRUE(tu_get(a, "yes")));
	assert_true(YAJL_IS_FALSE(tu_get(a, "no")));
	assert_str_member(a, "s", "text");
	yajl_val j = tu_get(a, "j");
	assert_true(YAJL_IS_ARRAY(j) && j->u.array.len == 2 &&
	            YAJL_IS_NULL(tu_get(j->u.array.values[1], "a")));
	assert_int_equal(a->u.object.len, 8);
	flow_after(root, fwd, "s", "fwdbwd", FLOW_FWDBWD);
	flow_after(root, must_find(root, "X", "cpu_op", "rec.bwd"), "f", "fwdbwd", FLOW_FWDBWD);

	/* Launch and kernel carry the op's External id, not their own; ac2g joins them. */
	yajl_val launch = must_find(root, "X", "cuda_runtime", "cudaLaunchKernel");
	yajl_val la = args_of(launch);
	assert_string_equal(la->u.object.keys[0], "External id");
	assert_int_equal(int_of(la, "External id"), OP_ID);
	assert_int_equal(int_of(la, "correlation"), CORR);
	assert_int_equal(int_of(la, "cbid"), 211);
	flow_after(root, launch, "s", "ac2g", CORR);
	yajl_val kernel = must_find(root, "X", "kernel", "my_kernel");
	assert_int_equal(int_of(kernel, "pid"), 1);
	assert_int_equal(int_of(kernel, "tid"), 7);
	assert_int_equal(int_of(args_of(kernel), "External id"), OP_ID);
	flow_after(root, kernel, "f", "ac2g", CORR);
	assert_int_equal(tu_count(root, "s", "ac2g", NULL), 1);
	assert_int_equal(tu_count(root, "f", "ac2g", NULL), 1);
	assert_int_equal(tu_count(root, "s", "fwdbwd", NULL), 1);
	assert_int_equal(tu_count(root, "f", "fwdbwd", NULL), 1);

	/* GPU work shows no id of its own. */
	assert_null(tu_get(must_find(root, "X", "kernel", "orphan_kernel"), "args"));
	assert_null(tu_get(must_find(root, "X", "gpu_memcpy", "orphan_memcpy"), "args"));
	/* A linked op shows the id it is linked to. */
	assert_int_equal(int_of(args_of(must_find(root, "X", "cpu_op", "linked_op")), "External id"), OP_ID);
	/* GPU user annotations are widened by 1 ns each side. */
	yajl_val ann = must_find(root, "X", "gpu_user_annotation", "gpu_ann");
	assert_int_equal(tu_get_ns(ann, "ts"), s + 3000 - 1 - base);
	assert_int_equal(tu_get_ns(ann, "dur"), 1002);
	assert_int_equal(int_of(args_of(ann), "External id"), 800);
	/* pid is the device as given; a negative resource is written as its absolute value. */
	yajl_val far = must_find(root, "X", "user_annotation", "elsewhere");
	assert_int_equal(int_of(far, "pid"), 5);
	assert_int_equal(int_of(far, "tid"), 9);
	assert_int_equal(int_of(args_of(far), "External id"), 900);
	yajl_tree_free(root);
}

/* ---- selection and accounting -------------------------------------------------------------- */

static void record_mixed(void)
{
	strobe_range_push("sel.range");
	strobe_op_push("sel.op");
	strobe_op_pop();
	strobe_range_pop();
	strobe_instant("sel.instant");
	strobe_counter("sel.counter", 1);
	int64_t now = (int64_t)strobe_now_ns();
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = STROBE_ACTIVITY_USER_ANNOTATION,
	                            .name = "sel.rec",
	                            .start_ns = now,
	                            .end_ns = now + 5};
	assert_int_equal(strobe_record(&a), 0);
}

/* Counts of the mixed events in a trace taken with mask and config. */
static void check_selection(uint64_t mask, const char *config, bool ranges, bool ops, bool instants,
                            bool counters)
{
	begin(mask, config);
	record_mixed();
	yajl_val root = end_load("select.json");
	assert_int_equal(tu_count(root, "X", "user_annotation", "sel.range"), ranges);
	assert_int_equal(tu_count(root, "X", "user_annotation", "sel.rec"), ranges);
	assert_int_equal(tu_count(root, "X", "cpu_op", "sel.op"), ops);
	assert_int_equal(tu_count(root, "i", "cpu_instant_event", "sel.instant"), instants);
	assert_int_equal(tu_count(root, "C", NULL, "sel.counter"), counters);
	assert_int_equal(stat_of(root, "unmatched_pops"), 0);
	assert_int_equal(stat_of(root, "unfinished_ranges"), 0);
	yajl_tree_free(root);
}

/* An activity's own category replaces its type's name in "cat" (escaped),
 * from strobe_record and from a struct without the field alike. */
static void test_record_category(void **state)
{
	(void)state;
	begin(0, NULL);
	int64_t s = (int64_t)strobe_now_ns();
	tu_record_at("in-a-category", STROBE_ACTIVITY_USER_ANNOTATION, s, 100,
	             (struct strobe_activity){.category = "my \"cat\""});
	tu_record_at("no-category", STROBE_ACTIVITY_USER_ANNOTATION, s + 200, 100,
	             (struct strobe_activity){0});
	char longcat[300];
	memset(longcat, 'c', sizeof(longcat) - 1);
	longcat[sizeof(longcat) - 1] = 0;
	struct strobe_activity bad = {.size = sizeof(bad),
	                              .type = STROBE_ACTIVITY_USER_ANNOTATION,
	                              .name = "x",
	                              .start_ns = s,
	                              .end_ns = s + 1,
	                              .category = longcat};
	assert_int_equal(strobe_record(&bad), -EINVAL);
	bad.category = "";
	assert_int_equal(strobe_record(&bad), -EINVAL);
	/* A caller built against a header without the field. */
	bad.size = offsetof(struct strobe_activity, category);
	bad.category = longcat;
	bad.name = "older-struct";
	assert_int_equal(strobe_record(&bad), 0);
	yajl_val root = end_load("category.json");
	must_find(root, "X", "my \"cat\"", "in-a-category");
	must_find(root, "X", "user_annotation", "no-category");
	must_find(root, "X", "user_annotation", "older-struct");
	yajl_tree_free(root);
}

static void test_activity_selection(void **state)
{
	(void)state;
	uint64_t op = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP);
	uint64_t inst = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_INSTANT_EVENT);
	uint64_t ann = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_USER_ANNOTATION);
	check_selection(0, NULL, true, true, true, true);
	check_selection(op | inst, NULL, false, true, true, false);
	check_selection(0, "ACTIVITY_TYPES=cpu_op", false, true, false, false);
	/* An explicit mask beats ACTIVITY_TYPES. */
	check_selection(ann, "ACTIVITY_TYPES=cpu_op", true, false, false, false);
}

static void test_unfinished_and_unmatched(void **state)
{
	(void)state;
	begin(0, NULL);
	strobe_range_pop(); /* nothing open: counted */
	strobe_op_pop();
	strobe_range_push("open.range");
	strobe_op_push("open.op");
	strobe_range_push("closed");
	strobe_range_pop();
	strobe_trace *t = end();
	strobe_op_pop(); /* after stop: not part of any trace */
	strobe_range_pop();
	int64_t win_start, win_end;
	assert_int_equal(strobe_trace_window(t, &win_start, &win_end), 0);
	yajl_val root = save_load(t, "open.json");
	strobe_trace_destroy(t);
	int64_t base = int_of(root, "baseTimeNanoseconds");
	static const char *const open_ones[][2] = {{"user_annotation", "open.range"}, {"cpu_op", "open.op"}};
	for (int i = 0; i < 2; i++) {
		yajl_val e = must_find(root, "X", open_ones[i][0], open_ones[i][1]);
		yajl_val fin = tu_get(args_of(e), "finished");
		assert_true(YAJL_IS_FALSE(fin));
		assert_int_equal(base + tu_get_ns(e, "ts") + tu_get_ns(e, "dur"), win_end);
	}
	assert_null(tu_get(tu_get(must_find(root, "X", "user_annotation", "closed"), "args"), "finished"));
	assert_int_equal(stat_of(root, "unfinished_ranges"), 2);
	assert_int_equal(stat_of(root, "unmatched_pops"), 2);
	yajl_tree_free(root);

	/* Those pops after stop leave the next trace clean. */
	begin(0, NULL);
	root = end_load("open2.json");
	assert_int_equal(stat_of(root, "unmatched_pops"), 0);
	assert_int_equal(stat_of(root, "unfinished_ranges"), 0);
	yajl_tree_free(root);
}

static void test_non_finite_counters(void **state)
{
	(void)state;
	begin(0, NULL);
	strobe_counter("c.nan", NAN);
	strobe_counter("c.inf", INFINITY);
	strobe_counter("c.ninf", -INFINITY);
	strobe_counter("c.ok", 2.5);
	strobe_counter("c.zero", -0.0);
	yajl_val root = end_load("counters.json");
	assert_int_equal(tu_count(root, "C", NULL, NULL), 2);
	assert_true(tu_get_num(args_of(must_find(root, "C", "cpu_counter", "c.ok")), "c.ok") == 2.5);
	assert_true(tu_get_num(args_of(must_find(root, "C", "cpu_counter", "c.zero")), "c.zero") == 0);
	assert_int_equal(stat_of(root, "non_finite_counters"), 3);
	yajl_tree_free(root);
}

/* ---- output writers ----------------------------------------------------------------------- */

struct mem_out {
	int calls;
	char location[PATH_LEN];
	size_t activities;
	int rc;
};

static int mem_write(const strobe_trace *t, const char *location, void *user_arg)
{
	struct mem_out *m = user_arg;
	m->calls++;
	snprintf(m->location, sizeof(m->location), "%s", location);
	m->activities = strobe_trace_activity_count(t);
	return m->rc;
}

static const struct strobe_output_ops mem_ops = {.size = sizeof(mem_ops), .write = mem_write};

static strobe_trace *small_trace(void)
{
	begin(0, NULL);
	strobe_instant("a");
	strobe_instant("b");
	return end();
}

static void test_output_writer(void **state)
{
	(void)state;
	strobe_trace *t = small_trace();
	struct mem_out m = {0}, m2 = {0};
	assert_int_equal(strobe_trace_save(t, "mem://x"), STROBE_E_NO_WRITER);
	assert_int_equal(strobe_register_output("MeM", &mem_ops, &m), 0);
	assert_int_equal(strobe_trace_save(t, "mem://x"), 0);
	assert_int_equal(m.calls, 1);
	assert_string_equal(m.location, "x");
	assert_int_equal(m.activities, 2);
	assert_int_equal(strobe_trace_save(t, "MEM://y/z.json"), 0);
	assert_string_equal(m.location, "y/z.json");
	/* The writer's status is the caller's. */
	m.rc = -EPERM;
	assert_int_equal(strobe_trace_save(t, "mem://x"), -EPERM);
	/* Registering again replaces. */
	assert_int_equal(strobe_register_output("mem", &mem_ops, &m2), 0);
	assert_int_equal(strobe_trace_save(t, "mem://w"), 0);
	assert_int_equal(m.calls, 3);
	assert_int_equal(m2.calls, 1);
	assert_string_equal(m2.location, "w");

	assert_int_equal(strobe_unregister_output("mEm"), 0);
	assert_int_equal(strobe_trace_save(t, "mem://x"), STROBE_E_NO_WRITER);
	assert_int_equal(strobe_unregister_output("mem"), -ENOENT);
	assert_int_equal(m2.calls, 1);

	static const char *const bad_names[] = {"", "9p", "a b", "x:", "a/b", "mem://"};
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++)
		assert_int_equal(strobe_register_output(bad_names[i], &mem_ops, &m), -EINVAL);
	assert_int_equal(strobe_register_output(NULL, &mem_ops, &m), -EINVAL);
	assert_int_equal(strobe_register_output("ok", NULL, &m), -EINVAL);
	struct strobe_output_ops no_write = {.size = sizeof(no_write), .write = NULL};
	assert_int_equal(strobe_register_output("ok", &no_write, &m), -EINVAL);
	struct strobe_output_ops too_small = {.size = 1, .write = mem_write};
	assert_int_equal(strobe_register_output("ok", &too_small, &m), -EINVAL);
	assert_int_equal(strobe_trace_save(t, "ok://x"), STROBE_E_NO_WRITER);
	strobe_trace_destroy(t);
}

static void test_replace_file_writer(void **state)
{
	(void)state;
	strobe_trace *t = small_trace();
	struct mem_out m = {0};
	const char *path = out_path("replaced.json");
	char url[PATH_LEN + 16];
	snprintf(url, sizeof(url), "FILE://%s", path);
	assert_int_equal(strobe_register_output("file", &mem_ops, &m), 0);
	assert_int_equal(strobe_trace_save(t, path), 0);
	assert_int_equal(m.calls, 1);
	assert_string_equal(m.location, path);
	assert_int_equal(strobe_trace_save(t, url), 0);
	assert_int_equal(m.calls, 2);
	assert_string_equal(m.location, path);
	assert_int_equal(access(path, F_OK), -1);

	assert_int_equal(strobe_unregister_output("file"), 0);
	assert_int_equal(strobe_unregister_output("file"), -ENOENT); /* the built-in stays */
	assert_int_equal(strobe_trace_save(t, url), 0);
	assert_int_equal(m.calls, 2);
	yajl_val root = tu_load_trace(path);
	assert_int_equal(tu_count(root, "i", "cpu_instant_event", NULL), 2);
	yajl_tree_free(root);
	strobe_trace_destroy(t);
}

/* ---- child profilers ------------------------------------------------------------------------ */

struct child {
	char calls[64];
	int prepare_rc;
	uint64_t seen_mask;
	bool saw_config;
	bool emit_bad;
};

static void child_log(struct child *c, char what)
{
	size_t n = strlen(c->calls);
	if (n + 1 < sizeof(c->calls))
		c->calls[n] = what, c->calls[n + 1] = 0;
}

static int child_prepare(uint64_t mask, const char *config, void *user_arg)
{
	struct child *c = user_arg;
	child_log(c, 'P');
	c->seen_mask = mask;
	c->saw_config = config != NULL;
	return c->prepare_rc;
}

static int child_start(void *user_arg)
{
	child_log(user_arg, 'S');
	return 0;
}

static int child_stop(void *user_arg)
{
	child_log(user_arg, 'T');
	return 0;
}

static int child_toggle(bool enable, void *user_arg)
{
	child_log(user_arg, enable ? 'G' : 'g');
	return 0;
}

static int emit_one(strobe_activity_cb emit, void *emit_arg, const char *name, enum strobe_activity_type type,
                    int64_t device, int64_t resource, int64_t dur)
{
	int64_t now = (int64_t)strobe_now_ns();
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = type,
	                            .name = name,
	                            .start_ns = now,
	                            .end_ns = now + dur,
	                            .device = device,
	                            .resource = resource};
	return emit(&a, emit_arg);
}

static int child_collect(strobe_activity_cb emit, void *emit_arg, void *user_arg)
{
	struct child *c = user_arg;
	child_log(c, 'C');
	emit_one(emit, emit_arg, "child.py", STROBE_ACTIVITY_PYTHON_FUNCTION, 0, 5, 100);
	emit_one(emit, emit_arg, "child.kernel", STROBE_ACTIVITY_CONCURRENT_KERNEL, 3, 2, 100);
	emit_one(emit, emit_arg, "child.glow", STROBE_ACTIVITY_GLOW_RUNTIME, 0, 0, 100); /* not selected */
	if (!c->emit_bad)
		return 0;
	emit_one(emit, emit_arg, "bad.backwards", STROBE_ACTIVITY_PYTHON_FUNCTION, 0, 5, -1);
	emit_one(emit, emit_arg, "bad.type", (enum strobe_activity_type)40, 0, 5, 1);
	struct strobe_arg arg = {.key = NULL, .kind = STROBE_ARG_I64};
	struct strobe_activity a = {.size = sizeof(a),
	                            .type = STROBE_ACTIVITY_PYTHON_FUNCTION,
	                            .name = "bad.arg",
	                            .start_ns = 1,
	                            .end_ns = 2,
	                            .args = &arg,
	                            .arg_count = 1};
	emit(&a, emit_arg);
	a = (struct strobe_activity){.size = 8, .type = STROBE_ACTIVITY_PYTHON_FUNCTION, .name = "bad.size"};
	emit(&a, emit_arg);
	emit(NULL, emit_arg);
	return 0;
}

static const struct strobe_profiler_ops child_ops = {
    .size = sizeof(child_ops),
    .name = "test-child",
    .activity_mask = 0,
    .prepare = child_prepare,
    .start = child_start,
    .stop = child_stop,
    .collect = child_collect,
    .toggle = child_toggle,
};

static const struct strobe_profiler_ops hpu_ops = {
    .size = sizeof(hpu_ops),
    .name = "hpu-only",
    .activity_mask = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_HPU_OP),
    .prepare = child_prepare,
    .start = child_start,
    .stop = child_stop,
    .collect = child_collect,
};

/* A plug-in built against an older header: it ends before collect. */
static const struct strobe_profiler_ops old_ops = {
    .size = offsetof(struct strobe_profiler_ops, collect),
    .name = "old",
    .prepare = child_prepare,
    .start = child_start,
    .stop = child_stop,
    .collect = child_collect, /* beyond size: must be ignored */
};

static void test_child_profilers(void **state)
{
	(void)state;
	struct child good = {.emit_bad = true}, shy = {.prepare_rc = 1}, failing = {.prepare_rc = -EIO};
	struct child hpu = {0}, old = {0};
	assert_int_equal(strobe_register_profiler(&child_ops, &good), 0);
	assert_int_equal(strobe_register_profiler(&child_ops, &good), -EEXIST);
	assert_int_equal(strobe_register_profiler(&child_ops, &shy), 0);
	assert_int_equal(strobe_register_profiler(&child_ops, &failing), 0);
	assert_int_equal(strobe_register_profiler(&hpu_ops, &hpu), 0);
	assert_int_equal(strobe_register_profiler(&old_ops, &old), 0);
	assert_int_equal(strobe_register_profiler(NULL, &good), -EINVAL);

	begin(0, NULL);
	assert_int_equal(strobe_toggle_collection(false), 0);
	assert_int_equal(strobe_toggle_collection(true), 0);
	yajl_val root = end_load("child.json");
	assert_string_equal(good.calls, "PSgGTC");
	assert_int_equal(good.seen_mask, STROBE_ACTIVITY_DEFAULT_MASK);
	assert_true(good.saw_config);
	assert_string_equal(shy.calls, "P");
	assert_string_equal(failing.calls, "P");
	assert_string_equal(hpu.calls, ""); /* its type is not selected */
	assert_string_equal(old.calls, "PST");

	/* One profiler took part with its activities: device 0 is this process. */
	assert_int_equal(tu_count(root, "X", "python_function", "child.py"), 1);
	yajl_val py = must_find(root, "X", "python_function", "child.py");
	assert_int_equal(int_of(py, "pid"), getpid());
	assert_int_equal(int_of(py, "tid"), 5);
	yajl_val k = must_find(root, "X", "kernel", "child.kernel");
	assert_int_equal(int_of(k, "pid"), 3);
	assert_int_equal(int_of(k, "tid"), 2);
	assert_int_equal(tu_count(root, NULL, "glow_runtime", NULL), 0);
	assert_int_equal(tu_count(root, NULL, NULL, "bad.backwards"), 0);
	assert_int_equal(tu_count(root, NULL, NULL, "bad.arg"), 0);
	assert_int_equal(stat_of(root, "rejected_activities"), 5);
	yajl_tree_free(root);

	/* With its type selected, the HPU profiler takes part. */
	good.calls[0] = 0;
	begin(STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_HPU_OP), NULL);
	strobe_trace_destroy(end());
	assert_string_equal(hpu.calls, "PSTC");
	assert_string_equal(good.calls, "PSTC");

	assert_int_equal(strobe_unregister_profiler(&child_ops, &shy), 0);
	assert_int_equal(strobe_unregister_profiler(&child_ops, &shy), -ENOENT);
	assert_int_equal(strobe_unregister_profiler(&child_ops, &failing), 0);
	assert_int_equal(strobe_unregister_profiler(&hpu_ops, &hpu), 0);
	assert_int_equal(strobe_unregister_profiler(&old_ops, &old), 0);

	/* Unregistered during a trace: the trace keeps using it to the end. */
	good.calls[0] = 0;
	begin(0, NULL);
	assert_int_equal(strobe_unregister_profiler(&child_ops, &good), 0);
	root = end_load("child2.json");
	assert_string_equal(good.calls, "PSTC");
	assert_int_equal(tu_count(root, "X", "python_function", "child.py"), 1);
	yajl_tree_free(root);
	good.calls[0] = 0;
	begin(0, NULL);
	root = end_load("child3.json");
	assert_string_equal(good.calls, "");
	assert_int_equal(tu_count(root, "X", "python_function", "child.py"), 0);
	assert_int_equal(stat_of(root, "rejected_activities"), 0);
	yajl_tree_free(root);
}

/* ---- walking a trace -------------------------------------------------------------------------- */

struct walk_count {
	size_t seen, ops, stop_at;
	bool ids_ok;
};

static int count_cb(const struct strobe_activity *a, void *arg)
{
	struct walk_count *w = arg;
	w->seen++;
	if (a->type == STROBE_ACTIVITY_CPU_OP) {
		w->ops++;
		w->ids_ok =
		    w->ids_ok && a->id > 0 && a->end_ns >= a->start_ns && a->name && a->name[0] == 'o';
	}
	return w->seen == w->stop_at ? 7 : 0;
}

static void test_foreach(void **state)
{
	(void)state;
	begin(0, NULL);
	for (int i = 0; i < 50; i++) {
		strobe_op_push("op");
		strobe_instant("i");
		strobe_op_pop();
	}
	strobe_trace *t = end();
	assert_int_equal(strobe_trace_activity_count(t), 100);
	struct walk_count w = {.ids_ok = true};
	assert_int_equal(strobe_trace_foreach(t, count_cb, &w), 0);
	assert_int_equal(w.seen, 100);
	assert_int_equal(w.ops, 50);
	assert_true(w.ids_ok);
	w = (struct walk_count){.stop_at = 3, .ids_ok = true};
	assert_int_equal(strobe_trace_foreach(t, count_cb, &w), 7);
	assert_int_equal(w.seen, 3);
	strobe_trace_destroy(t);
}

/* ---- a full disk ------------------------------------------------------------------------------ */

/* Saves t in a child whose file size limit is 4 KiB, so writes fail with
 * EFBIG as on a full disk, formatting and compressing with `threads`.
 * Returns the child's verdict: 0 when the save failed with STROBE_E_IO
 * and a message naming the reason. */
static int save_with_small_fsize(const strobe_trace *t, const char *path, const char *threads)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("STROBE_EXPORT_THREADS", threads, 1);
		signal(SIGXFSZ, SIG_IGN);
		struct rlimit rl = {.rlim_cur = 4096, .rlim_max = 4096};
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(10);
		int rc = strobe_trace_save(t, path);
		if (rc == 0)
			_exit(11);
		if (rc != STROBE_E_IO)
			_exit(12);
		_exit(strstr(strobe_last_error(), strerror(EFBIG)) ? 0 : 13);
	}
	assert_true(pid > 0);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_unwritable_output(void **state)
{
	(void)state;
	begin(0, NULL);
	char name[64];
	/* Enough for several chunks of the parallel writer. */
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof(name), "event %d %x", i, i * 2654435761u);
		strobe_instant(name);
	}
	strobe_trace *t = end();
	char sub[PATH_LEN];
	snprintf(sub, sizeof(sub), "%s/full", tu_dir);
	static const char *const names[] = {"full.json", "full.json.gz", "full.json.zst"};
	for (size_t i = 0; i < 2 * sizeof(names) / sizeof(names[0]); i++) {
		const char *threads = i % 2 ? "2" : "1", *file = names[i / 2];
		if (TU_UNDER_TSAN && i % 2)
			continue;
		assert_int_equal(mkdir(sub, 0700), 0);
		char path[PATH_LEN + 32];
		snprintf(path, sizeof(path), "%s/%s", sub, file);
		int verdict = save_with_small_fsize(t, path, threads);
		if (verdict)
			fail_msg("saving %s with %s threads under a 4 KiB file size limit: child verdict %d",
			         file, threads, verdict);
		/* Neither the target nor a temporary file is left. */
		assert_int_equal(rmdir(sub), 0);
	}
	strobe_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_snippet),
	    cmocka_unit_test(test_top_level),
	    cmocka_unit_test(test_time_format),
	    cmocka_unit_test(test_extreme_times),
	    cmocka_unit_test(test_process_and_thread_rows),
	    cmocka_unit_test(test_long_thread_name),
	    cmocka_unit_test(test_metadata_types),
	    cmocka_unit_test(test_job_env_and_trace_id),
	    cmocka_unit_test(test_nasty_strings),
	    cmocka_unit_test(test_compressed_outputs),
	    cmocka_unit_test(test_parallel_export),
	    cmocka_unit_test(test_heads_reused),
	    cmocka_unit_test(test_record_args_flows_ids),
	    cmocka_unit_test(test_record_category),
	    cmocka_unit_test(test_activity_selection),
	    cmocka_unit_test(test_unfinished_and_unmatched),
	    cmocka_unit_test(test_non_finite_counters),
	    cmocka_unit_test(test_output_writer),
	    cmocka_unit_test(test_replace_file_writer),
	    cmocka_unit_test(test_child_profilers),
	    cmocka_unit_test(test_foreach),
	    cmocka_unit_test(test_unwritable_output),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

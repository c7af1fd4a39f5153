/* strobe merge, run as a user runs it: on traces this test records through
 * the library as three ranks, on hand-written traces with different time
 * bases and ranks in their file names, on libkineto's own trace, and on
 * inputs and outputs that cannot work. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "strobe/strobe.h"
#include "testutil.h"

#define FIXTURE    STROBE_TEST_DATA_DIR "/libkineto-sample.json"
#define PID_STRIDE 10000
#define CORR       500
#define SEP        " \xc2\xb7 "

static char buf[3][1200];

static const char *in_dir(int slot, const char *name)
{
	snprintf(buf[slot], sizeof(buf[slot]), "%s/%s", tu_dir, name);
	return buf[slot];
}

/* Runs "strobe merge ARGS" (stderr kept with stdout); returns the status. */
static int merge(const char *args, char **out)
{
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s' merge %s", tu_dir, STROBE_CLI_PATH, args);
	return tu_run(cmd, 1, out);
}

static void merge_ok(const char *args)
{
	char *out = NULL;
	int rc = merge(args, &out);
	if (rc)
		fail_msg("strobe merge %s: exit %d:\n%s", args, rc, out);
	free(out);
}

/* Runs a merge that must fail with status 1, and checks what it says. */
static void merge_fails(const char *args, const char *const *says)
{
	char *out = NULL;
	int rc = merge(args, &out);
	if (rc != 1)
		fail_msg("strobe merge %s: exit %d, expected 1:\n%s", args, rc, out);
	for (; *says; says++)
		if (!strstr(out, *says))
			fail_msg("strobe merge %s: the message does not mention \"%s\":\n%s", args, *says,
			         out);
	free(out);
}

static bool str_is(yajl_val obj, const char *key, const char *v)
{
	const char *s = tu_get_str(obj, key);
	return s && !strcmp(s, v);
}

static long long int_of(yajl_val obj, const char *key)
{
	yajl_val v = tu_get(obj, key);
	if (!v || !YAJL_IS_INTEGER(v))
		fail_msg("member %s is missing or not an integer", key);
	return YAJL_GET_INTEGER(v);
}

static size_t nevents(yajl_val root)
{
	return YAJL_GET_ARRAY(tu_events(root))->len;
}

static yajl_val event(yajl_val root, size_t i)
{
	return YAJL_GET_ARRAY(tu_events(root))->values[i];
}

/* The process_name of pid in a merged trace, or NULL. */
static const char *process_name(yajl_val root, long long pid)
{
	for (size_t i = 0; i < nevents(root); i++) {
		yajl_val e = event(root, i);
		if (str_is(e, "ph", "M") && str_is(e, "name", "process_name") && int_of(e, "pid") == pid)
			return tu_get_str(tu_get(e, "args"), "name");
	}
	return NULL;
}

/* The contract other tools rely on: every pid of every event has a
 * process_name starting "rank <N> · ", with N = pid / 10000. */
static void assert_every_process_named(yajl_val root)
{
	for (size_t i = 0; i < nevents(root); i++) {
		yajl_val e = event(root, i);
		yajl_val pid = tu_get(e, "pid");
		if (!pid || !YAJL_IS_INTEGER(pid))
			fail_msg("event %zu has no integer pid", i);
		const char *name = process_name(root, YAJL_GET_INTEGER(pid));
		char want[64];
		snprintf(want, sizeof(want), "rank %lld" SEP, YAJL_GET_INTEGER(pid) / PID_STRIDE);
		if (!name || strncmp(name, want, strlen(want)))
			fail_msg("pid %lld is named \"%s\", not \"%s...\"", YAJL_GET_INTEGER(pid),
			         name ? name : "(none)", want);
	}
}

/* A trace recorded as rank `rank` (through RANK): a launch on this thread
 * with an ac2g arrow to a kernel on GPU 0, stream 7, correlation CORR in
 * every rank, so the arrows would join if ids were not renumbered. */
static void record_rank(int rank, const char *path)
{
	char v[16];
	snprintf(v, sizeof(v), "%d", rank);
	setenv("RANK", v, 1);
	setenv("WORLD_SIZE", "3", 1);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	int64_t s = (int64_t)strobe_now_ns();
	struct strobe_activity launch = {
	    .size = sizeof(launch),
	    .type = STROBE_ACTIVITY_CUDA_RUNTIME,
	    .name = "cudaLaunchKernel",
	    .start_ns = s,
	    .end_ns = s + 1000,
	    .id = CORR,
	    .flow_id = CORR,
	    .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU,
	    .flags = STROBE_ACTIVITY_FLOW_START,
	};
	assert_int_equal(strobe_record(&launch), 0);
	struct strobe_activity kernel = launch;
	kernel.type = STROBE_ACTIVITY_CONCURRENT_KERNEL;
	kernel.name = "k";
	kernel.start_ns = s + 2000;
	kernel.end_ns = s + 3000;
	kernel.resource = 7;
	kernel.flags = 0;
	kernel.device = 0;
	assert_int_equal(strobe_record(&kernel), 0);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	unsetenv("RANK");
	unsetenv("WORLD_SIZE");
}

static void test_three_library_ranks(void **state)
{
	(void)state;
	/* Given out of order: ranks come from distributedInfo. */
	record_rank(2, in_dir(0, "a.json"));
	record_rank(0, in_dir(0, "b.json.gz"));
	record_rank(1, in_dir(0, "c.json.zst"));
	merge_ok("-o all.json a.json b.json.gz c.json.zst");
	yajl_val root = tu_load_trace(in_dir(0, "all.json"));
	assert_every_process_named(root);

	char host[256];
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	yajl_val ranks = tu_get(tu_get(root, "distributedInfo"), "ranks");
	assert_true(ranks && YAJL_IS_ARRAY(ranks) && YAJL_GET_ARRAY(ranks)->len == 3);
	assert_int_equal(int_of(tu_get(root, "distributedInfo"), "world_size"), 3);
	static const char *const files[] = {"b.json.gz", "c.json.zst", "a.json"};
	for (int r = 0; r < 3; r++) {
		yajl_val rec = YAJL_GET_ARRAY(ranks)->values[r];
		assert_int_equal(int_of(rec, "rank"), r);
		assert_string_equal(tu_get_str(rec, "rank_from"), "distributedInfo");
		assert_string_equal(tu_get_str(rec, "file"), files[r]);
		assert_string_equal(tu_get_str(rec, "host"), host);
		/* Each rank's own accounting and identity are kept. */
		assert_non_null(tu_get(tu_get(rec, "strobe"), "dropped_events"));
		assert_int_equal(int_of(tu_get(rec, "distributedInfo"), "rank"), r);
		/* The CPU process is the first of the rank, named after rank and host. */
		char want[512];
		snprintf(want, sizeof(want), "rank %d" SEP "%s", r, host);
		assert_string_equal(process_name(root, r * PID_STRIDE + 1), want);
	}

	/* One arrow per rank, each with its own id, both ends in that rank. */
	long long ids[3] = {-1, -1, -1};
	size_t starts = 0, ends = 0;
	for (size_t i = 0; i < nevents(root); i++) {
		yajl_val e = event(root, i);
		bool s = str_is(e, "ph", "s"), f = str_is(e, "ph", "f");
		if (!(s || f) || !str_is(e, "cat", "ac2g"))
			continue;
		long long rank = int_of(e, "pid") / PID_STRIDE;
		assert_true(rank >= 0 && rank < 3);
		if (ids[rank] < 0)
			ids[rank] = int_of(e, "id");
		assert_int_equal(int_of(e, "id"), ids[rank]);
		starts += s;
		ends += f;
	}
	assert_int_equal(starts, 3);
	assert_int_equal(ends, 3);
	assert_true(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
	assert_int_equal(tu_count(root, NULL, NULL, "k"), 3);
	yajl_tree_free(root);
}

/* ts 5166410272838.951 µs against two bases 123 ns apart. */
static const char timed_trace[] =
    "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": %s, \"host_name\": \"%s\",\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 42, \"tid\": 42,"
    "   \"ts\": 5166410272838.951, \"dur\": 1.500, \"args\": {\"External id\": 1}},\n"
    "  {\"ph\": \"s\", \"id\": 9, \"pid\": 42, \"tid\": 42, \"ts\": 5166410272838.951, \"cat\": \"ac2g\","
    "   \"name\": \"ac2g\"},\n"
    "  {\"ph\": \"f\", \"id\": 9, \"pid\": 0, \"tid\": 7, \"ts\": 5166410272839.000, \"cat\": \"ac2g\","
    "   \"name\": \"ac2g\", \"bp\": \"e\"},\n"
    "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"tid\": 0, \"args\": {\"name\": "
    "\"python\"}},\n"
    "  {\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, \"tid\": 0, \"args\": {\"labels\": \"GPU "
    "0\"}},\n"
    "  {\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 42, \"tid\": 0, \"args\": {\"labels\": "
    "\"CPU\"}}\n"
    " ]}\n";

static void write_timed(const char *path, const char *base, const char *host, const char *name)
{
	char text[4096];
	snprintf(text, sizeof(text), timed_trace, base, host, name);
	assert_int_equal(tu_write_file(path, text), 0);
}

static yajl_val only_named(yajl_val root, const char *name)
{
	yajl_val hit = NULL;
	for (size_t i = 0; i < nevents(root); i++)
		if (str_is(event(root, i), "name", name)) {
			if (hit)
				fail_msg("two events named %s", name);
			hit = event(root, i);
		}
	if (!hit)
		fail_msg("no event named %s", name);
	return hit;
}

static void test_times_aligned_and_ranks_from_names(void **state)
{
	(void)state;
	write_timed(in_dir(0, "job_rank2.json"), "1790857026000000000", "hostA", "late_base");
	write_timed(in_dir(0, "job_RANK-0.json"), "1790857026000000123", "hostB", "later_base");
	write_timed(in_dir(0, "trace_r1.json"), "1790857025999999000", "hostC", "early_base");
	merge_ok("-q -o m.json job_rank2.json job_RANK-0.json trace_r1.json");
	yajl_val root = tu_load_trace(in_dir(0, "m.json"));
	assert_every_process_named(root);
	/* One base, the smallest; every ts rewritten to the nanosecond. */
	yajl_val base = tu_get(root, "baseTimeNanoseconds");
	assert_true(base && YAJL_IS_INTEGER(base));
	assert_int_equal(YAJL_GET_INTEGER(base), 1790857025999999000LL);
	int64_t ts = 5166410272838951LL;
	assert_int_equal(tu_get_ns(only_named(root, "early_base"), "ts"), ts);
	assert_int_equal(tu_get_ns(only_named(root, "late_base"), "ts"), ts + 1000);
	assert_int_equal(tu_get_ns(only_named(root, "later_base"), "ts"), ts + 1123);
	assert_int_equal(tu_get_ns(only_named(root, "later_base"), "dur"), 1500);
	/* Ranks from the names: rank-0 is hostB, r1 hostC, rank2 hostA. */
	assert_int_equal(int_of(only_named(root, "later_base"), "pid") / PID_STRIDE, 0);
	assert_int_equal(int_of(only_named(root, "early_base"), "pid") / PID_STRIDE, 1);
	assert_int_equal(int_of(only_named(root, "late_base"), "pid") / PID_STRIDE, 2);
	/* The CPU process (label "CPU", sort by pid 42) comes after GPU 0 (pid 0). */
	assert_string_equal(process_name(root, 1), "rank 0" SEP "hostB" SEP "GPU 0");
	assert_string_equal(process_name(root, 2), "rank 0" SEP "hostB");
	assert_string_equal(process_name(root, 10002), "rank 1" SEP "hostC");
	yajl_val rec = YAJL_GET_ARRAY(tu_get(tu_get(root, "distributedInfo"), "ranks"))->values[1];
	assert_string_equal(tu_get_str(rec, "rank_from"), "file name");
	assert_int_equal(int_of(rec, "baseTimeNanoseconds"), 1790857025999999000LL);
	/* Process sort order follows ranks. */
	long long last = -1;
	for (size_t i = 0; i < nevents(root); i++) {
		yajl_val e = event(root, i);
		if (!str_is(e, "name", "process_sort_index"))
			continue;
		long long s = int_of(tu_get(e, "args"), "sort_index");
		assert_true(s > last);
		last = s;
	}
	/* Flow ids 9 of three ranks: three ids, each joining its own pair. */
	long long ids[3];
	size_t n = 0;
	for (size_t i = 0; i < nevents(root) && n < 3; i++)
		if (str_is(event(root, i), "ph", "s"))
			ids[n++] = int_of(event(root, i), "id");
	assert_int_equal(n, 3);
	assert_true(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
	yajl_tree_free(root);
}

static void test_duplicate_rank_is_an_error(void **state)
{
	(void)state;
	write_timed(in_dir(0, "rank1.json"), "0", "h", "x");
	write_timed(in_dir(0, "other_rank_1.json"), "0", "h", "y");
	merge_fails("-o dup.json rank1.json other_rank_1.json",
	            (const char *const[]){"rank1.json", "other_rank_1.json", "both rank 1", NULL});
	struct stat st;
	assert_int_equal(stat(in_dir(0, "dup.json"), &st), -1);
}

static void test_libkineto_input(void **state)
{
	(void)state;
	write_timed(in_dir(0, "rank_1.json"), "1790857026000000000", "other", "strobe_side");
	merge_ok("-o kineto.json.gz '" FIXTURE "' rank_1.json");
	yajl_val root = tu_load_trace(in_dir(0, "kineto.json.gz"));
	assert_every_process_named(root);
	/* libkineto's CPU process 15670 (label CPU) is rank 0 on its host "vm". */
	yajl_val mm = only_named(root, "aten::mm");
	assert_string_equal(process_name(root, int_of(mm, "pid")), "rank 0" SEP "vm");
	yajl_val args = tu_get(mm, "args");
	assert_int_equal(int_of(args, "External id"), 7);
	assert_non_null(tu_get(args, "Input Dims")); /* args copied as they were */
	assert_int_equal(tu_get_ns(mm, "ts"), 5166410272838951LL);
	/* Its kernel keeps its GPU row name after the rank. */
	yajl_val k = tu_find(root, NULL, "kernel", NULL);
	assert_non_null(k);
	assert_string_equal(process_name(root, int_of(k, "pid")), "rank 0" SEP "vm" SEP "GPU 0");
	yajl_val rec = YAJL_GET_ARRAY(tu_get(tu_get(root, "distributedInfo"), "ranks"))->values[0];
	assert_string_equal(tu_get_str(rec, "rank_from"), "position");
	assert_string_equal(tu_get_str(tu_get(rec, "metadata"), "trace_id"), "abc123");
	yajl_tree_free(root);
}

static void test_bad_inputs_and_outputs(void **state)
{
	(void)state;
	write_timed(in_dir(0, "good_r0.json"), "0", "h", "x");
	assert_int_equal(tu_write_file(in_dir(0, "bad_r1.json"), "{\"traceEvents\": [{\"ph\": \"X\",, }]}"),
	                 0);
	merge_fails("-o out.json good_r0.json missing.json",
	            (const char *const[]){"missing.json", "No such file", NULL});
	merge_fails("-o out.json good_r0.json bad_r1.json",
	            (const char *const[]){"bad_r1.json", "byte", NULL});
	merge_fails("-o /nonexistent-dir/out.json good_r0.json",
	            (const char *const[]){"/nonexistent-dir/out.json", NULL});
	/* Nothing partial is left: no output, no temporary file. */
	char *out = NULL;
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "ls -a '%s'", tu_dir);
	assert_int_equal(tu_run(cmd, 0, &out), 0);
	assert_null(strstr(out, "out.json"));
	free(out);

	assert_int_equal(merge("good_r0.json", &out), 2); /* no -o */
	assert_non_null(strstr(out, "-o OUT"));
	free(out);
	assert_int_equal(merge("-o x.json", &out), 2);
	assert_non_null(strstr(out, "no input"));
	free(out);
	assert_int_equal(merge("--bogus -o x.json good_r0.json", &out), 2);
	tu_assert_contains(out, "strobe: merge: unknown option '--bogus'\nusage: strobe merge ");
	free(out);
	/* A Perfetto name would hold JSON: refused, nothing written. */
	assert_int_equal(merge("-o merged.pftrace good_r0.json", &out), 2);
	tu_assert_contains(out, "strobe: merge: 'merged.pftrace': merge writes Chrome-trace JSON");
	free(out);
	assert_int_equal(access(in_dir(0, "merged.pftrace"), F_OK), -1);
	assert_int_equal(merge("good_r0.json -o", &out), 2);
	tu_assert_contains(out, "strobe: merge: -o needs a file name");
	free(out);
	/* Inputs are read twice: stdin cannot be one. */
	assert_int_equal(merge("-o x.json good_r0.json - < good_r0.json", &out), 2);
	assert_non_null(strstr(out, "'-' (stdin) cannot be an input"));
	free(out);
	assert_int_equal(merge("--help", &out), 0);
	assert_non_null(strstr(out, "examples:"));
	free(out);
	/* One input is allowed: relabelled the same way. */
	merge_ok("--output=single.json good_r0.json");
	yajl_val root = tu_load_trace(in_dir(0, "single.json"));
	assert_every_process_named(root);
	yajl_tree_free(root);
}

/* An input with no events (a rank that recorded nothing) merges: its
 * record says so, and the other rank is there as usual. */
static void test_input_without_events(void **state)
{
	(void)state;
	assert_int_equal(
	    tu_write_file(in_dir(0, "empty_r0.json"), "{\"baseTimeNanoseconds\": 5, \"traceEvents\": []}"),
	    0);
	write_timed(in_dir(0, "full_r1.json"), "0", "h", "x");
	merge_ok("-q -o with_empty.json empty_r0.json full_r1.json");
	yajl_val root = tu_load_trace(in_dir(0, "with_empty.json"));
	yajl_val ranks = tu_get(tu_get(root, "distributedInfo"), "ranks");
	assert_int_equal(YAJL_GET_ARRAY(ranks)->len, 2);
	assert_int_equal(int_of(YAJL_GET_ARRAY(ranks)->values[0], "events"), 0);
	assert_true(tu_count(root, "X", NULL, "x") > 0);
	assert_every_process_named(root);
	yajl_tree_free(root);
	/* Alone, too. */
	merge_ok("-q -o only_empty.json empty_r0.json");
	root = tu_load_trace(in_dir(0, "only_empty.json"));
	assert_int_equal(nevents(root), 0);
	yajl_tree_free(root);
}

static void test_progress_on_request(void **state)
{
	(void)state;
	/* The first line shows as each input starts, however small. */
	char *text = malloc(1u << 20);
	assert_non_null(text);
	size_t n = (size_t)sprintf(text, "{\"baseTimeNanoseconds\": 0, \"traceEvents\": [");
	for (int i = 0; i < 5000; i++)
		n += (size_t)sprintf(
		    text + n,
		    "%s{\"ph\": \"X\", \"name\": \"op%d\", \"pid\": 1, \"tid\": 1, \"ts\": %d.000, "
		    "\"dur\": 1.000, \"args\": {\"i\": %d}}",
		    i ? ",\n" : "", i % 100, i, i);
	strcpy(text + n, "]}");
	assert_int_equal(tu_write_file(in_dir(0, "big_r0.json"), text), 0);
	free(text);
	char *out = NULL;
	assert_int_equal(merge("--progress -o big.json big_r0.json", &out), 0);
	assert_non_null(strstr(out, "\rstrobe: merge: rank 0 (1 of 1):   0%"));
	assert_non_null(strstr(out, "merged 1 ranks into big.json"));
	free(out);
	assert_int_equal(merge("--quiet -o big2.json big_r0.json", &out), 0);
	assert_string_equal(out, "");
	free(out);
	yajl_val root = tu_load_trace(in_dir(0, "big2.json"));
	assert_int_equal(nevents(root), 5000 + 2); /* and the process's two M events */
	yajl_tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_three_library_ranks),
	    cmocka_unit_test(test_times_aligned_and_ranks_from_names),
	    cmocka_unit_test(test_duplicate_rank_is_an_error),
	    cmocka_unit_test(test_libkineto_input),
	    cmocka_unit_test(test_bad_inputs_and_outputs),
	    cmocka_unit_test(test_input_without_events),
	    cmocka_unit_test(test_progress_on_request),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

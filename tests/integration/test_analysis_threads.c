/* an_read with a second thread (STROBE_TOOL_THREADS=2: the read in
 * halves, HTA's launch matching beside self time, HTA's critical paths
 * beside wall times and GPU busy time, then its per-device analyses beside
 * its kernel sequences and kernel statistics)
 * gives what it gives on one: the same summary text, --json and report
 * page, byte for byte, on the libkineto fixtures and on a generated
 * two-rank trace that fills every table. Run under ThreadSanitizer too,
 * which sees the two threads inside this process.
 * STROBE_TEST_LABELS: concurrency */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/present.h"
#include "testutil.h"

/* Two ranks (host pid 100 + r, GPU pid r), each with STEPS ProfilerSteps;
 * per step OPS cpu_ops, each launching a kernel on stream 7 or 8 (some
 * pairs at the same start and length on both, so sorts meet ties), with an
 * ac2g flow, four at a time inside an aten::block op; an NCCL kernel on stream 9, a copy with its bandwidth,
 * and a stream sync per step; a thread-level annotation and a counter. */
#define STEPS 6
#define OPS   40

static void event(FILE *f, const char *cat, const char *name, int pid, int tid, long ts, long dur,
                  const char *args)
{
	fprintf(
	    f,
	    "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": %ld.%03ld, "
	    "\"dur\": %ld.%03ld, \"args\": {%s}},\n",
	    cat, name, pid, tid, ts / 1000, ts % 1000, dur / 1000, dur % 1000, args);
}

static char *generated_trace(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	unsigned seed = 12345;
#define RND(n) ((seed = seed * 1103515245u + 12345u) >> 16) % (n)
	fputs("{\"traceEvents\": [\n", f);
	long corr = 1;
	for (int r = 0; r < 2; r++) {
		int host = 100 + r;
		fprintf(f,
		        "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": "
		        "{\"name\": "
		        "\"rank %d \xc2\xb7 host\"}},\n"
		        "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": "
		        "{\"name\": "
		        "\"rank %d \xc2\xb7 gpu\"}},\n"
		        "{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": %d, \"tid\": 0, \"args\": "
		        "{\"labels\": \"GPU %d\"}},\n",
		        host, r, r, r, r, r);
		long t = 1000000;
		for (int s = 1; s <= STEPS; s++) {
			long step0 = t;
			char name[64], args[160];
			long block = 0;
			for (int k = 0; k < OPS; k++) {
				long op = t + 1000 + (long)RND(3000), dur = 4000 + (long)RND(20000);
				if (k % 4 == 0)
					block = op - 100;
				snprintf(name, sizeof(name), "aten::op%d", k % 7);
				event(f, "cpu_op", name, host, host, op, dur, "\"External id\": 1");
				long call = op + 500;
				snprintf(args, sizeof(args), "\"correlation\": %ld, \"cbid\": 211", corr);
				event(f, "cuda_runtime", "cudaLaunchKernel", host, host, call, 2000, args);
				fprintf(f,
				        "{\"ph\": \"s\", \"id\": %ld, \"pid\": %d, \"tid\": %d, \"ts\": "
				        "%ld.%03ld, \"cat\": "
				        "\"ac2g\", \"name\": \"ac2g\"},\n",
				        corr, host, host, call / 1000, call % 1000);
				long kts = call + 3000 + (k % 5 == 0 ? 0 : (long)RND(9000));
				long kdur = k % 5 == 0 ? 7000 : 1000 + (long)RND(30000);
				snprintf(args, sizeof(args),
				         "\"correlation\": %ld, \"stream\": %d, \"device\": %d", corr,
				         7 + k % 2, r);
				snprintf(name, sizeof(name), "void kernel_%d<float>(float*)", k % 5);
				event(f, "kernel", name, r, 7 + k % 2, kts, kdur, args);
				fprintf(f,
				        "{\"ph\": \"f\", \"id\": %ld, \"pid\": %d, \"tid\": %d, \"ts\": "
				        "%ld.%03ld, \"cat\": "
				        "\"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n",
				        corr, r, 7 + k % 2, kts / 1000, kts % 1000);
				corr++;
				t = op + dur;
				if (k % 4 == 3) /* around the last four ops: one kernel sequence */
					event(f, "cpu_op", "aten::block", host, host, block, t + 100 - block,
					      "");
			}
			snprintf(args, sizeof(args), "\"correlation\": %ld", corr);
			event(f, "cuda_runtime", "cudaLaunchKernel", host, host, t + 100, 1500, args);
			snprintf(args, sizeof(args), "\"correlation\": %ld, \"stream\": 9", corr++);
			event(f, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", r, 9, t + 2000, 40000,
			      args);
			snprintf(args, sizeof(args), "\"correlation\": %ld", corr);
			event(f, "cuda_runtime", "cudaMemcpyAsync", host, host, t + 3000, 1500, args);
			snprintf(args, sizeof(args),
			         "\"correlation\": %ld, \"stream\": 7, \"bytes\": 1048576, \"memory "
			         "bandwidth (GB/s)\": "
			         "%d.5",
			         corr++, 10 + s);
			event(f, "gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", r, 7, t + 5000, 90000,
			      args);
			snprintf(args, sizeof(args), "\"correlation\": %ld", corr);
			event(f, "cuda_runtime", "cudaStreamSynchronize", host, host, t + 6000, 100000, args);
			snprintf(args, sizeof(args), "\"correlation\": %ld, \"stream\": 7", corr++);
			event(f, "cuda_sync", "Stream Sync", r, 7, t + 95000, 11000, args);
			t += 110000;
			snprintf(name, sizeof(name), "ProfilerStep#%d", s);
			event(f, "user_annotation", name, host, host, step0, t - step0, "");
			event(f, "user_annotation", "forward", host, host, step0 + 500, (t - step0) / 2, "");
			fprintf(f,
			        "{\"ph\": \"C\", \"name\": \"GPU memory allocated (bytes)\", \"pid\": %d, "
			        "\"tid\": 0, "
			        "\"ts\": %ld, \"args\": {\"GPU memory allocated (bytes)\": %d}},\n",
			        r, step0 / 1000, 1000 * s);
			t += 5000;
		}
	}
	fputs("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 7, \"args\": {\"name\": "
	      "\"stream 7 "
	      "\"}}\n]}\n",
	      f);
	fclose(f);
	return text;
#undef RND
}

/* What strobe summary and strobe report show for path, read with
 * STROBE_TOOL_THREADS=threads. */
struct shown {
	char *text, *json, *html;
	bool halves; /* read in two halves at once */
};

static char *print(int (*fn)(const struct an_view *, FILE *), const struct an_view *v)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	assert_non_null(f);
	assert_int_equal(fn(v, f), 0);
	fclose(f);
	return out;
}

static struct shown presented(const char *path, const char *threads)
{
	assert_int_equal(setenv("STROBE_TOOL_THREADS", threads, 1), 0);
	assert_int_equal((int)an_threads().read, atoi(threads));
	assert_int_equal((int)an_threads().analyses, atoi(threads));
	an_split_min = 1024; /* small files are split too */
	struct an_trace a = {0};
	struct tr_stats st;
	char err[512];
	if (an_read(&a, path, &st, err, sizeof(err)))
		fail_msg("an_read: %s", err);
	struct an_view v;
	assert_int_equal(an_view_init(&v, &a, &st, path, 0), 0);
	struct shown s = {print(an_print_text, &v), print(an_print_json, &v), NULL, a.halves};
	size_t len;
	assert_int_equal(an_html_page(&v, &s.html, &len), 0);
	an_view_free(&v);
	an_free(&a);
	unsetenv("STROBE_TOOL_THREADS");
	return s;
}

static void same(const char *path, const char *what, const char *one, const char *two)
{
	if (!strcmp(one, two))
		return;
	size_t at = 0;
	while (one[at] == two[at])
		at++;
	fail_msg("%s: the %s of one thread and of two differ at byte %zu:\n%.200s\n---\n%.200s", path, what,
	         at, one + (at > 80 ? at - 80 : 0), two + (at > 80 ? at - 80 : 0));
}

/* expect: keys of the --json object that must be arrays with rows, so the
 * comparison covers those analyses. */
static void same_on_both(const char *path, const char *const *expect, bool split)
{
	struct shown one = presented(path, "1"), two = presented(path, "2");
	assert_false(one.halves);
	if (two.halves != split)
		fail_msg("%s: %s in two halves", path, two.halves ? "read" : "not read");
	yajl_val v = tu_parse_json(one.json);
	assert_non_null(v);
	for (size_t i = 0; expect && expect[i]; i++) {
		yajl_val rows = tu_get(v, expect[i]);
		if (!rows || !YAJL_IS_ARRAY(rows) || !rows->u.array.len)
			fail_msg("%s: --json has no rows of %s", path, expect[i]);
	}
	yajl_tree_free(v);
	same(path, "text", one.text, two.text);
	same(path, "--json", one.json, two.json);
	same(path, "report page", one.html, two.html);
	free(one.text), free(one.json), free(one.html);
	free(two.text), free(two.json), free(two.html);
}

static void test_fixtures(void **state)
{
	(void)state;
	static const char *const kernels[] = {"kernels", "launch_latency", NULL};
	same_on_both(STROBE_TEST_DATA_DIR "/libkineto-sample.json", NULL, true);
	same_on_both(STROBE_TEST_DATA_DIR "/libkineto-cuda-fake.json", kernels, true);
}

static void test_two_ranks(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4200];
	snprintf(path, sizeof(path), "%s/ranks.json", dir);
	char *text = generated_trace();
	assert_int_equal(tu_write_file(path, text), 0);
	free(text);
	/* every analysis the second thread runs, and every one beside it, has rows */
	static const char *const filled[] = {"critical_path",
	                                     "temporal_breakdown",
	                                     "kernels_by_type",
	                                     "idle_time",
	                                     "launch_stats",
	                                     "queue_length",
	                                     "memory_bandwidth",
	                                     "kernel_sequences",
	                                     "steps",
	                                     "gpu_devices",
	                                     "kernels",
	                                     "memcpy",
	                                     "launch_latency",
	                                     "cpu_ops_by_self",
	                                     "ranks",
	                                     NULL};
	same_on_both(path, filled, true);
	tu_rmrf(dir);
	free(dir);
}

/* Places that look like a split but are not between two events of
 * traceEvents: the read in halves finds out and reads the file whole. */
static void test_split_refused(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4200];
	snprintf(path, sizeof(path), "%s/refused.json", dir);
	/* "ph" is never first in these events: the only candidates are in a
	 * string of the middle event, and in a member after traceEvents. */
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	fputs("{\"traceEvents\": [\n", f);
	for (int i = 0; i < 60; i++)
		fprintf(f,
		        "{\"name\": \"op%d\", \"ph\": \"X\", \"cat\": \"cpu_op\", \"pid\": 1, \"tid\": 1, "
		        "\"ts\": %d, "
		        "\"dur\": 5, \"args\": {\"note\": \"%s\"}},\n",
		        i % 4, i * 10, i == 30 ? "x},{\\\"ph\\\": \\\"X\\\"" : "plain");
	fputs("{\"name\": \"last\", \"ph\": \"X\", \"cat\": \"cpu_op\", \"pid\": 1, \"tid\": 1, \"ts\": 900, "
	      "\"dur\": 5}\n],\n\"extra\": [{\"a\": 1},{\"ph\": \"X\", \"b\": 2},{\"ph\": \"X\"}]}\n",
	      f);
	fclose(f);
	assert_int_equal(tu_write_file(path, text), 0);
	free(text);
	same_on_both(path, NULL, false);
	/* the same with the string's quotes unescaped (as libkineto writes
	 * them): the repairing read, whole */
	tu_rmrf(dir);
	free(dir);
}

static void test_thread_count(void **state)
{
	(void)state;
	assert_int_equal(setenv("STROBE_TOOL_THREADS", "1", 1), 0);
	assert_int_equal((int)an_threads().read, 1);
	assert_int_equal((int)an_threads().analyses, 1);
	assert_int_equal(setenv("STROBE_TOOL_THREADS", "2", 1), 0);
	assert_int_equal((int)an_threads().read, 2);
	assert_int_equal((int)an_threads().analyses, 2);
	/* no variable, or not 1 or 2: as many threads as CPUs allow (up to
	 * two), for the read and the analyses alike */
	unsetenv("STROBE_TOOL_THREADS");
	struct an_threads dflt = an_threads();
	cpu_set_t set;
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	assert_int_equal((int)dflt.read, CPU_COUNT(&set) > 1 ? 2 : 1);
	assert_int_equal((int)dflt.analyses, (int)dflt.read);
	static const char *const junk[] = {"two", "-2", "0", "2x", "", "64"};
	for (size_t i = 0; i < sizeof(junk) / sizeof(*junk); i++) {
		assert_int_equal(setenv("STROBE_TOOL_THREADS", junk[i], 1), 0);
		assert_int_equal((int)an_threads().read, (int)dflt.read);
		assert_int_equal((int)an_threads().analyses, (int)dflt.analyses);
	}
	unsetenv("STROBE_TOOL_THREADS");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_fixtures),
	    cmocka_unit_test(test_two_ranks),
	    cmocka_unit_test(test_split_refused),
	    cmocka_unit_test(test_thread_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

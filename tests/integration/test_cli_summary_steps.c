/* strobe summary's steps and HTA analyses on a hand-written trace whose
 * every number is worked out below (tests/hta/check_hta.sh compares the
 * same analyses with HTA itself on generated and libkineto traces). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_cli_json_common.h"
#include "testutil.h"

#define X(cat, name, pid, tid, ts, dur, args)                                                                \
	"{\"ph\": \"X\", \"cat\": \"" cat "\", \"name\": \"" name "\", \"pid\": " #pid ", \"tid\": " #tid    \
	", \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {" args "}},\n"
#define STEP(n, ts, dur)          X("user_annotation", "ProfilerStep#" #n, 100, 100, ts, dur, "")
#define CALL(name, corr, ts, dur) X("cuda_runtime", name, 100, 100, ts, dur, "\"correlation\": " #corr)
#define LAUNCH(corr, ts)          CALL("cudaLaunchKernel", corr, ts, 5)
#define GPU(cat, name, stream, ts, dur, corr)                                                                \
	X(cat, name, 0, stream, ts, dur, "\"stream\": " #stream ", \"correlation\": " #corr)
#define KERNEL(name, stream, ts, dur, corr) GPU("kernel", name, stream, ts, dur, corr)
#define NCCL                                "ncclDevKernel_AllReduce_Sum_f32"

/* GPU 0 (pid 0), streams 7 and 9; launches on 100/100; times in µs.
 *   ProfilerStep#1 [0,100], #2 [100,200], #3 [200,300], #4 [300,700]
 *   corr 1 launch [10,15]    gemm   s7 [20,60]
 *   corr 2 launch [30,35]    nccl   s9 [50,90]
 *   corr 8 launch [60,65]    nccl   s9 [140,150]
 *   corr 3 memcpy [100,120]  Memcpy s7 [120,130] at 100 GB/s (the call takes 20: a short kernel)
 *   corr 4 launch [125,130]  gemm   s7 [135,180]
 *   corr 5 launch [210,215]  gemm   s7 [250,290]
 *   corr 6 launch [320,325]  gemm   s7 [330,600]
 *   corr 7 launch [650,655]  relu   s7 [660,680]
 *
 * Steps (all GPU work, clipped to the step):
 *   1: busy [20,90] 70, compute 40, comm [60,90] 30, memory 0, idle 30
 *   2: busy [120,130]+[135,180] 55, compute 45, comm 0 (under gemm), memory 10, idle 45
 *   3: busy 40, compute 40, idle 60
 *   4: busy 270+20 = 290, compute 290, idle 110; 400 > median 100 + 3 MAD (0): outlier
 *
 * HTA's analyses leave out what was launched at or after the last step's
 * start (300): corr 6 and 7. Then kernel time 290-20 = 270; busy 70+10+45+40
 * = 165, idle 105; compute 40+45+40 = 125; non-compute 40 = comm 30 + memory
 * 10; overlap: comm 50 of which 20 under compute: 40%.
 * Kernel types: COMPUTATION 105, COMMUNICATION 30, both 20, MEMORY 10.
 * Idle, stream 7: Memcpy: gap 60, launched at 100 > 60: host wait; gemm
 * [135]: gap 5, launched at 125 < 130: kernel wait; gemm [250]: gap 70,
 * launched at 210 > 180: host wait. Host 130, kernel 5, other 0. Stream 9:
 * nccl [140]: gap 50, launched at 60 < 90, not under 30: other 50.
 * Launch delays (start - call end): 5, 15, 75, 0, 5, 35: p50 (rank 3 of 6) 5,
 * max 75; one short kernel (the copy).
 * Memory bandwidth: "Memcpy HtoD" at 100 GB/s after its start, 0 after its
 * end (left out): one value, 100. */
static const char trace[] = "{\"traceEvents\": [\n" STEP(1, 0, 100) STEP(2, 100, 100) STEP(3, 200, 100)
    STEP(4, 300, 400) LAUNCH(1, 10) KERNEL("gemm", 7, 20, 40, 1) LAUNCH(2, 30) KERNEL(NCCL, 9, 50, 40, 2)
        LAUNCH(8, 60) KERNEL(NCCL, 9, 140, 10, 8) CALL("cudaMemcpyAsync", 3, 100, 20)
            X("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 0, 7, 120, 10,
              "\"stream\": 7, \"correlation\": 3, \"memory bandwidth (GB/s)\": 100") LAUNCH(4, 125)
                KERNEL("gemm", 7, 135, 45, 4) LAUNCH(5, 210) KERNEL("gemm", 7, 250, 40, 5) LAUNCH(6, 320)
                    KERNEL("gemm", 7, 330, 270, 6) LAUNCH(7, 650) KERNEL(
                        "relu", 7, 660, 20, 7) "{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, "
                                               "\"tid\": 0, \"args\": {\"labels\": \"GPU 0\"}}\n"
                                               "]}\n";

/* A CPU-only trace whose steps are "train" ranges: 10, 12, 11 and 50 µs. */
static const char cpu_trace[] = "{\"traceEvents\": [\n" X("user_annotation", "train", 1, 1, 0, 10, "")
    X("user_annotation", "train", 1, 1, 10, 12, "") X("user_annotation", "train", 1, 1, 22, 11,
                                                      "") X("user_annotation", "train", 1, 1, 33, 50, "")
        X("cpu_op", "aten::add", 1, 1, 40, 5, "") "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, "
                                                  "\"args\": {\"name\": \"python\"}}\n]}\n";

static char *dir;

static char *write_trace(const char *text, const char *name)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(tu_write_file(path, text), 0);
	return path;
}

static yajl_val summary_json(const char *args)
{
	return cli_json("summary", args);
}

static void test_steps(void **state)
{
	(void)state;
	char args[4200];
	snprintf(args, sizeof(args), "--json '%s'", write_trace(trace, "steps.json"));
	yajl_val v = summary_json(args);
	yajl_val steps = tu_get(v, "steps");
	assert_int_equal(steps->u.array.len, 4);
	static const long long want[4][7] = {
	    /* step, duration, busy, compute, comm, memory, idle (µs) */
	    {1, 100, 70, 40, 30, 0, 30},
	    {2, 100, 55, 45, 0, 10, 45},
	    {3, 100, 40, 40, 0, 0, 60},
	    {4, 400, 290, 290, 0, 0, 110},
	};
	static const char *const keys[] = {"duration_ns", "busy_ns",   "compute_ns",
	                                   "comm_ns",     "memory_ns", "idle_ns"};
	for (size_t i = 0; i < 4; i++) {
		yajl_val s = at(steps, i);
		assert_int_equal(num(s, "step"), want[i][0]);
		for (size_t k = 0; k < 6; k++)
			assert_int_equal(num(s, keys[k]), want[i][k + 1] * 1000);
		assert_string_equal(tu_get_str(s, "device"), "GPU 0 (pid 0)");
		if (i == 3)
			assert_string_equal(tu_get_str(s, "outlier"), "outlier");
		else
			assert_true(YAJL_IS_NULL(tu_get(s, "outlier")));
	}
	assert_int_equal(num(at(steps, 1), "start_ns"), 100000);
	yajl_tree_free(v);

	/* --top cuts the table, in time order */
	snprintf(args, sizeof(args), "--json --top 2 '%s/steps.json'", dir);
	v = summary_json(args);
	assert_int_equal(tu_get(v, "steps")->u.array.len, 2);
	assert_int_equal(num(at(tu_get(v, "steps"), 1), "step"), 2);
	yajl_tree_free(v);

	char *out = NULL;
	snprintf(args, sizeof(args), "'%s/steps.json'", dir);
	assert_int_equal(tu_strobe("summary", args, 0, &out), 0);
	tu_assert_contains(out, "\nsteps: ");
	char *line = tu_line_with(out, "+300.000 µs");
	tu_assert_contains(line, "290.000 µs");
	tu_assert_contains(line, "110.000 µs");
	tu_assert_contains(line, "outlier");
	free(line);
	free(out);
}

static void test_hta_analyses(void **state)
{
	(void)state;
	char args[4200];
	snprintf(args, sizeof(args), "--json --top 0 '%s'", write_trace(trace, "hta.json"));
	yajl_val v = summary_json(args);
	yajl_val b = at(tu_get(v, "temporal_breakdown"), 0);
	assert_int_equal(num(b, "events"), 6);
	assert_int_equal(num(b, "kernel_time_ns"), 270000);
	assert_int_equal(num(b, "idle_ns"), 105000);
	assert_int_equal(num(b, "compute_ns"), 125000);
	assert_int_equal(num(b, "non_compute_ns"), 40000);
	assert_int_equal(num(b, "comm_ns"), 30000);
	assert_int_equal(num(b, "memory_ns"), 10000);
	assert_int_equal(num(b, "other_ns"), 0);
	assert_true(tu_get_num(b, "comm_comp_overlap_pct") == 40.0);

	yajl_val types = tu_get(v, "kernel_type_time");
	static const char *const tnames[] = {"COMPUTATION", "COMMUNICATION",
	                                     "COMPUTATION overlapping COMMUNICATION", "MEMORY"};
	static const long long ttimes[] = {105000, 30000, 20000, 10000};
	assert_int_equal(types->u.array.len, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_string_equal(tu_get_str(at(types, i), "kernel_type"), tnames[i]);
		assert_int_equal(num(at(types, i), "time_ns"), ttimes[i]);
	}

	yajl_val kn = tu_get(v, "kernels_by_type");
	yajl_val gemm = at(kn, 0);
	assert_string_equal(tu_get_str(gemm, "name"), "gemm");
	assert_string_equal(tu_get_str(gemm, "kernel_type"), "COMPUTATION");
	assert_int_equal(num(gemm, "count"), 3);
	assert_int_equal(num(gemm, "sum_ns"), 125000);
	assert_int_equal(num(gemm, "min_ns"), 40000);
	assert_int_equal(num(gemm, "max_ns"), 45000);
	/* 40, 45, 40: mean 41.667, sample std 2.887 */
	assert_int_equal(num(gemm, "mean_ns"), 41667);
	assert_int_equal(num(gemm, "std_ns"), 2887);

	yajl_val idle = tu_get(v, "idle_time");
	assert_int_equal(idle->u.array.len, 2);
	assert_int_equal(num(at(idle, 0), "stream"), 7);
	assert_int_equal(num(at(idle, 0), "host_wait_ns"), 130000);
	assert_int_equal(num(at(idle, 0), "kernel_wait_ns"), 5000);
	assert_int_equal(num(at(idle, 0), "other_ns"), 0);
	assert_int_equal(num(at(idle, 1), "stream"), 9);
	assert_int_equal(num(at(idle, 1), "other_ns"), 50000);

	yajl_val bw = tu_get(v, "memory_bandwidth");
	assert_int_equal(bw->u.array.len, 1);
	assert_string_equal(tu_get_str(at(bw, 0), "kind"), "Memcpy HtoD");
	assert_int_equal(num(at(bw, 0), "count"), 1);
	assert_true(tu_get_num(at(bw, 0), "max_gb_per_s") == 100.0);

	yajl_val l = at(tu_get(v, "launch_stats"), 0);
	assert_int_equal(num(l, "launches"), 6);
	assert_int_equal(num(l, "short_kernels"), 1);
	assert_int_equal(num(l, "runtime_outliers"), 0);
	assert_int_equal(num(l, "delay_outliers"), 0);
	assert_int_equal(num(l, "delay_p50_ns"), 5000);
	assert_int_equal(num(l, "delay_max_ns"), 75000);
	yajl_tree_free(v);
}

static void test_step_name_cpu_only(void **state)
{
	(void)state;
	char args[4200];
	snprintf(args, sizeof(args), "--json --step-name train '%s'", write_trace(cpu_trace, "cpu.json"));
	yajl_val v = summary_json(args);
	yajl_val steps = tu_get(v, "steps");
	assert_int_equal(steps->u.array.len, 4);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(num(at(steps, i), "step"), (long long)i);
		assert_true(YAJL_IS_NULL(tu_get(at(steps, i), "busy_ns")));
		assert_string_equal(tu_get_str(at(steps, i), "device"), "");
	}
	/* 10, 12, 11, 50: median 11.5, MAD 1; 50 is the outlier */
	assert_string_equal(tu_get_str(at(steps, 3), "outlier"), "outlier");
	assert_true(YAJL_IS_NULL(tu_get(at(steps, 1), "outlier")));
	assert_int_equal(tu_get(v, "temporal_breakdown")->u.array.len, 0);
	yajl_tree_free(v);

	/* Without --step-name the trace has no steps. */
	snprintf(args, sizeof(args), "--json '%s/cpu.json'", dir);
	v = summary_json(args);
	assert_int_equal(tu_get(v, "steps")->u.array.len, 0);
	yajl_tree_free(v);

	char *out = NULL;
	snprintf(args, sizeof(args), "--step-name '%s/cpu.json'", dir);
	assert_int_equal(tu_strobe("summary", args, 1, &out), 2);
	tu_assert_contains(out, "no trace file given");
	free(out);
}

/* The report: the window in UTC, the step chart's data (the outlier
 * marked), the steps table with the outlier's row in the warning class,
 * and HTA's tables. */
static void test_report_steps(void **state)
{
	(void)state;
	char args[8400], path[4200];
	snprintf(path, sizeof(path), "%s/report.html", dir);
	/* with ts 0 at 2023-11-14 22:13:20 UTC */
	char *based = malloc(sizeof(trace) + 64);
	assert_non_null(based);
	snprintf(based, sizeof(trace) + 64, "{\"baseTimeNanoseconds\": 1700000000000000000, %s", trace + 1);
	snprintf(args, sizeof(args), "-o '%s' '%s' 2>&1", path, write_trace(based, "report.json"));
	free(based);
	assert_int_equal(tu_strobe("report", args, 0, NULL), 0);
	char *html = tu_read_file(path, NULL);
	assert_non_null(html);
	tu_assert_contains(html,
	                   "<td>window</td><td>700.000 µs, 2023-11-14 22:13:20.000 to 22:13:20.000 UTC</td>");
	tu_assert_contains(html, "<svg id=\"step-bars\"");
	tu_assert_contains(html,
	                   "{\"name\":\"step "
	                   "4\",\"start_ns\":300000,\"dur_ns\":400000,\"busy_ns\":290000,\"outlier\":true}");
	tu_assert_contains(
	    html,
	    "{\"name\":\"step 1\",\"start_ns\":0,\"dur_ns\":100000,\"busy_ns\":70000,\"outlier\":false}");
	const char *steps = strstr(html, "<table id=\"steps\">");
	assert_non_null(steps);
	const char *warn = strstr(steps, "<tr class=\"warn\">");
	assert_non_null(warn);
	assert_true(warn < strstr(steps, "</table>"));
	tu_assert_contains(warn, "400.000 µs");
	static const char *const ids[] = {"temporal",     "kernel-types", "kernels-by-type", "idle-time",
	                                  "launch-stats", "queue-length", "memory-bandwidth"};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char want[64];
		snprintf(want, sizeof(want), "<table id=\"%s\">", ids[i]);
		tu_assert_contains(html, want);
	}
	free(html);
}

/* libkineto's own GPU trace: no NCCL, so no overlap to state (JSON null,
 * nothing in the text rather than a blank). */
static void test_no_communication(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(tu_strobe("summary", "'" STROBE_TEST_DATA_DIR "/libkineto-cuda-fake.json'", 0, &out),
	                 0);
	char *line = tu_line_with(out, "communication 0 ns");
	tu_assert_contains(line, "other work 0 ns, GPU events 11");
	assert_null(strstr(line, "overlap"));
	free(line);
	free(out);
	yajl_val v = summary_json("--json '" STROBE_TEST_DATA_DIR "/libkineto-cuda-fake.json'");
	assert_true(YAJL_IS_NULL(tu_get(at(tu_get(v, "temporal_breakdown"), 0), "comm_comp_overlap_pct")));
	yajl_tree_free(v);
}

/* Streams as the trace names them: strobe's overlap rows have 13-digit
 * tids and names such as "stream 7 (overlap 1)"; libkineto's "stream 7 "
 * loses its trailing blank; a row without a name shows its tid. */
static void test_stream_names(void **state)
{
	(void)state;
	static const char named[] = "{\"traceEvents\": [\n" X("kernel", "a", 0, 7, 0, 10, "")
	    X("kernel", "b", 0, 1000000000007, 5, 10, "")
	        X("kernel", "c", 0, 9, 30, 10,
	          "") "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, "
	              "\"tid\": 1000000000007, \"args\": {\"name\": \"stream 7 (overlap 1)\"}},\n"
	              "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 0, \"tid\": 7, "
	              "\"args\": {\"name\": \"stream 7 \"}}\n]}\n";
	char args[8400], *out = NULL;
	snprintf(args, sizeof(args), "'%s'", write_trace(named, "names.json"));
	assert_int_equal(tu_strobe("summary", args, 0, &out), 0);
	char *line = tu_line_with(out, "streams (busy % of the window):");
	tu_assert_contains(line, ": stream 7 ");
	assert_null(strstr(line, "1000000000007"));
	free(line);
	tu_assert_contains(out, "stream 7 (overlap 1) ");
	tu_assert_contains(out, " 9 ");
	free(out);
	snprintf(args, sizeof(args), "--json '%s/names.json'", dir);
	yajl_val v = summary_json(args);
	yajl_val streams = tu_get(at(tu_get(v, "gpu_devices"), 0), "streams");
	assert_int_equal(streams->u.array.len, 3);
	assert_string_equal(tu_get_str(at(streams, 0), "name"), "stream 7");
	assert_string_equal(tu_get_str(at(streams, 1), "name"), "stream 7 (overlap 1)");
	assert_int_equal(num(at(streams, 1), "tid"), 1000000000007);
	assert_string_equal(tu_get_str(at(streams, 2), "name"), "9");
	yajl_tree_free(v);
}

/* A trace written as it is built: trace_open gives the stream, after
 * whose events trace_summary adds GPU 0's label, writes it as name and
 * returns its summary's JSON. */
struct built {
	char *text;
	size_t len;
	FILE *f;
};

static FILE *trace_open(struct built *b)
{
	*b = (struct built){0};
	b->f = open_memstream(&b->text, &b->len);
	assert_non_null(b->f);
	fputs("{\"traceEvents\": [\n", b->f);
	return b->f;
}

static yajl_val trace_summary(struct built *b, const char *name)
{
	fprintf(b->f, "{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, \"tid\": 0, "
	              "\"args\": {\"labels\": \"GPU 0\"}}\n]}\n");
	assert_int_equal(fclose(b->f), 0);
	char args[4200];
	snprintf(args, sizeof(args), "--json --top 0 '%s'", write_trace(b->text, name));
	free(b->text);
	return summary_json(args);
}

/* A step over 1100 streams of one device, more than the per-stream
 * buckets start with and more than the per-device analyses count streams
 * for (they sort past 1024): stream s has two launches and kernels, at
 * 100 s µs: launch [0,5], kernel [10,20], launch [30,35], kernel [40,50].
 * Each stream waits 20 µs for its second launch (host wait) and its queue
 * goes 1, 0, 1, 0. */
#define MANY_STREAMS 1100
static void test_many_streams(void **state)
{
	(void)state;
	struct built b;
	FILE *f = trace_open(&b);
	fprintf(f, STEP(1, 0, 200000));
	for (long s = 1; s <= MANY_STREAMS; s++)
		for (long k = 0; k < 2; k++) {
			long t = 100 * s + 30 * k, corr = 2 * s + k;
			fprintf(
			    f,
			    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
			    "\"pid\": 100, \"tid\": 100, \"ts\": %ld, \"dur\": 5, \"args\": "
			    "{\"correlation\": "
			    "%ld}},\n"
			    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": "
			    "%ld, \"ts\": %ld, \"dur\": 10, \"args\": {\"stream\": %ld, \"correlation\": "
			    "%ld}},\n",
			    t, corr, s, t + 10, s, corr);
		}
	yajl_val v = trace_summary(&b, "streams.json");
	yajl_val idle = tu_get(v, "idle_time"), queues = tu_get(v, "queue_length");
	assert_int_equal(idle->u.array.len, MANY_STREAMS);
	assert_int_equal(queues->u.array.len, MANY_STREAMS);
	for (size_t i = 0; i < MANY_STREAMS; i++) {
		assert_int_equal(num(at(idle, i), "stream"), (long long)i + 1);
		assert_int_equal(num(at(idle, i), "host_wait_ns"), 20000);
		assert_int_equal(num(at(idle, i), "kernel_wait_ns"), 0);
		assert_int_equal(num(at(queues, i), "stream"), (long long)i + 1);
		assert_int_equal(num(at(queues, i), "max"), 1);
		assert_true(tu_get_num(at(queues, i), "mean") == 0.5);
	}
	assert_int_equal(tu_get(v, "critical_path")->u.array.len, 1);
	yajl_tree_free(v);
}

/* Kernel statistics by name, past the size where durations are sorted
 * by their bytes: 3 000 gemm kernels lasting 1 to 3 000 µs and 1 100 relu
 * kernels lasting 1 to 1 100 times 65 537 µs (up to 72 s, so that five of
 * their bytes differ), each name's in a shuffled order (k * 7919 mod n is
 * a permutation). gemm: sum n(n+1)/2 = 4 501 500 µs, mean 1 500.5 µs,
 * sample std sqrt(n(n+1)/12) = 866.1697 µs; relu: 65 537 times its
 * 1..1 100's, sum 39 685 930 350 µs, mean 36 078 118.5 µs, std 20 820 249.828 µs. */
static void test_kernel_stats_many(void **state)
{
	(void)state;
	struct built b;
	FILE *f = trace_open(&b);
	fprintf(f, STEP(1, 0, 100000000000));
	static const struct {
		const char *name;
		long n, scale, stream;
	} kinds[] = {{"gemm", 3000, 1, 7}, {"relu", 1100, 65537, 9}};
	for (size_t i = 0; i < 2; i++)
		for (long k = 0, t = 10; k < kinds[i].n; k++) {
			long dur = ((k * 7919) % kinds[i].n + 1) * kinds[i].scale;
			fprintf(f,
			        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, "
			        "\"tid\": %ld, \"ts\": %ld, \"dur\": %ld, \"args\": {\"stream\": %ld, "
			        "\"correlation\": %ld}},\n",
			        kinds[i].name, kinds[i].stream, t, dur, kinds[i].stream,
			        10000 * (long)i + k + 1);
			t += dur + 1;
		}
	yajl_val v = trace_summary(&b, "kernels.json");
	yajl_val kn = tu_get(v, "kernels_by_type");
	assert_int_equal(kn->u.array.len, 2);
	yajl_val relu = at(kn, 0), gemm = at(kn, 1); /* the most time first */
	assert_string_equal(tu_get_str(gemm, "name"), "gemm");
	assert_int_equal(num(gemm, "count"), 3000);
	assert_int_equal(num(gemm, "sum_ns"), 4501500000LL);
	assert_int_equal(num(gemm, "min_ns"), 1000);
	assert_int_equal(num(gemm, "max_ns"), 3000000);
	assert_int_equal(num(gemm, "mean_ns"), 1500500);
	assert_int_equal(num(gemm, "std_ns"), 866170);
	assert_string_equal(tu_get_str(relu, "name"), "relu");
	assert_int_equal(num(relu, "count"), 1100);
	assert_int_equal(num(relu, "sum_ns"), 39685930350000LL);
	assert_int_equal(num(relu, "min_ns"), 65537000);
	assert_int_equal(num(relu, "max_ns"), 72090700000LL);
	assert_int_equal(num(relu, "mean_ns"), 36078118500LL);
	assert_int_equal(num(relu, "std_ns"), 20820249828LL);
	yajl_tree_free(v);
}

/* GPU events whose duration (past 2^32 ns) or stream (outside 32 bits),
 * and a runtime call whose duration, HTA's records keep apart: the
 * analyses see them whole. */
static void test_wide_gpu_events(void **state)
{
	(void)state;
	struct built b;
	FILE *f = trace_open(&b);
	fputs("{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, "
	      "\"tid\": 1, \"ts\": 0, \"dur\": 5000000, \"args\": {\"correlation\": 1}},\n",
	      f);
	static const struct {
		const char *name;
		long long ts, dur, stream;
	} k[] = {{"gemm", 10, 5000000, 1099511627776LL},
	         {"gemm", 6000010, 1, 1099511627776LL},
	         {"relu", 20, 4294968, -2147483648LL}};
	for (size_t i = 0; i < 3; i++)
		fprintf(f,
		        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %zu, "
		        "\"ts\": %lld, \"dur\": %lld, \"args\": {\"stream\": %lld, \"correlation\": %zu}},\n",
		        k[i].name, i / 2 + 1, k[i].ts, k[i].dur, k[i].stream, i + 1);
	yajl_val v = trace_summary(&b, "wide.json");
	yajl_val idle = tu_get(v, "idle_time");
	assert_int_equal(idle->u.array.len, 2);
	assert_int_equal(num(at(idle, 0), "stream"), -2147483648LL);
	assert_int_equal(num(at(idle, 1), "stream"), 1099511627776LL);
	assert_int_equal(num(at(idle, 1), "other_ns"), 1000000000LL); /* 6 000 010 - 5 000 010 us */
	yajl_val tb = at(tu_get(v, "temporal_breakdown"), 0);
	assert_int_equal(num(tb, "kernel_time_ns"), 6000001000LL);
	assert_int_equal(num(tb, "compute_ns"), 5000001000LL);
	assert_int_equal(num(tb, "idle_ns"), 1000000000LL);
	yajl_val kn = tu_get(v, "kernels_by_type");
	assert_string_equal(tu_get_str(at(kn, 0), "name"), "gemm");
	assert_int_equal(num(at(kn, 0), "max_ns"), 5000000000LL);
	assert_int_equal(num(at(kn, 1), "sum_ns"), 4294968000LL);
	yajl_val ls = at(tu_get(v, "launch_stats"), 0); /* the 5 s launch of the first gemm */
	assert_int_equal(num(ls, "launches"), 1);
	assert_int_equal(num(ls, "cpu_ns"), 5000000000LL);
	assert_int_equal(num(ls, "runtime_outliers"), 1);
	yajl_tree_free(v);
}

static int setup(void **state)
{
	(void)state;
	dir = tu_mkdtemp();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_steps),
	    cmocka_unit_test(test_hta_analyses),
	    cmocka_unit_test(test_step_name_cpu_only),
	    cmocka_unit_test(test_report_steps),
	    cmocka_unit_test(test_no_communication),
	    cmocka_unit_test(test_stream_names),
	    cmocka_unit_test(test_many_streams),
	    cmocka_unit_test(test_kernel_stats_many),
	    cmocka_unit_test(test_wide_gpu_events),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

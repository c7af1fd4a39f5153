/* strobe summary's GPU analysis on hand-written traces whose every number
 * is worked out below: busy time and idle gaps per device, kernel
 * percentiles, copy bandwidth, launch latency, NCCL overlap, and the same
 * per rank in a merged trace. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define FIXTURE STROBE_TEST_DATA_DIR "/libkineto-sample.json"

#define X(cat, name, pid, tid, ts, dur, args)                                                                \
	"{\"ph\": \"X\", \"cat\": \"" cat "\", \"name\": \"" name "\", \"pid\": " #pid ", \"tid\": " #tid    \
	", \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {" args "}},\n"
#define LAUNCH(corr, ts) X("cuda_runtime", "cudaLaunchKernel", 100, 100, ts, 5, "\"correlation\": " #corr)
#define KERNEL(name, stream, ts, dur, corr)                                                                  \
	X("kernel", name, 0, stream, ts, dur, "\"stream\": " #stream ", \"correlation\": " #corr)

/* One device (pid 0) with streams 7, 8 and 9, launches on thread 100/100;
 * times in µs. The window is the "step" range, 0 to 500.
 *
 *   gemm       K1 stream 7 [100,150] corr 1, launched at  90: latency 10
 *   relu       K3 stream 8 [140,160] corr 3, launched at 100: latency 40 (launch after it in the file)
 *   gemm       K2 stream 7 [200,230] corr 2, launched at 180: latency 20
 *   nccl       N1 stream 9 [210,250] corr 4, launched at 205: latency 5
 *   fill       K6 stream 8 [260,270] no correlation arg; ac2g flow 7 from a launch at 250: latency 10
 *   HtoD copy     stream 7 [300,310] 1,000,000 bytes: 100 GB/s
 *   DtoH copy     stream 8 [320,324]   200,000 bytes, kind only in "copy kind": 50 GB/s
 *   gemm       K5 stream 7 [400,410] corr 99, never launched: unmatched
 *
 * Busy: [100,160] 60 + [200,250] 50 + [260,270] 10 + [300,310] 10 + [320,324] 4 + [400,410] 10
 *       = 144 µs, 28.8% of 500.
 * Gaps: 160-200 40, 250-260 10, 270-300 30, 310-320 10, 324-400 76: 5 gaps, 166 µs, longest 76 at 324.
 * Streams: 7 = 50+30+10+10 = 100 (20%), 8 = 20+10+4 = 34 (6.8%), 9 = 40 (8%).
 * NCCL 40; compute = [100,160] + [200,230] + [260,270] + [400,410] = 110; both = [210,230] = 20: 50% hidden.
 * gemm: 10, 30, 50: total 90, mean 30, p50 (nearest rank 2 of 3) 30, p99 (rank 3) 50.
 * Latency: 5, 10, 10, 20, 40: p50 (rank 3 of 5) 10, p90 and p99 (rank 5) 40, max 40; 6 kernels, 1 unmatched.
 * aten::mm [85,120] holds the launches [90,95] and [100,105]: self 25. */
static const char gpu_trace[] = "{\"baseTimeNanoseconds\": 1790857026000000000, \"traceEvents\": [\n" X(
    "user_annotation", "step", 100, 100, 0, 500, "") X("cpu_op", "aten::mm", 100, 100, 85, 35, "")
    LAUNCH(1, 90) KERNEL("gemm", 7, 100, 50, 1) KERNEL("relu<float>&bias", 8, 140, 20, 3) LAUNCH(3, 100)
        LAUNCH(2, 180) KERNEL("gemm", 7, 200, 30, 2) LAUNCH(4, 205) KERNEL("ncclDevKernel_AllReduce_Sum_f32",
                                                                           9, 210, 40, 4)
            X("cuda_runtime", "cudaLaunchKernel", 100, 100, 250, 5,
              "") "{\"ph\": \"s\", \"id\": 7, \"pid\": 100, \"tid\": 100, \"ts\": 250, \"cat\": \"ac2g\", "
                  "\"name\": \"ac2g\"},\n" X(
                      "kernel", "fill", 0, 8, 260, 10,
                      "\"stream\": 8") "{\"ph\": \"f\", \"id\": 7, \"pid\": 0, \"tid\": 8, "
                                       "\"ts\": 260, \"cat\": \"ac2g\", \"name\": \"ac2g\","
                                       " \"bp\": \"e\"},\n" X("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)",
                                                              0, 7, 300, 10,
                                                              "\"bytes\": 1000000, \"correlation\": 5")
                                           X("gpu_memcpy", "Memcpy (Device -> Pinned)", 0, 8, 320, 4,
                                             "\"copy kind\": \"DtoH\", \"bytes\": 200000")
                                               KERNEL("gemm", 7, 400, 10,
                                                      99) "{\"ph\": \"M\", \"name\": "
                                                          "\"process_labels\", \"pid\": 0, "
                                                          "\"tid\": 0, \"args\": "
                                                          "{\"labels\": \"GPU 0\"}}\n"
                                                          "]}\n";

/* Two ranks merged: host pids 1000 and 2000, GPUs 1001 and 2001, and both
 * ranks' launches use correlation 1. The names that give the ranks come
 * last. Window 0 to 100 µs.
 *   rank 0: aten::mm [0,40] holds a launch [10,12]: self 38; gemm [15,25]: latency 5, busy 10 (10%)
 *   rank 1: aten::mm [0,100] holds a launch [20,25]: self 95; gemm [50,80]: latency 30, busy 30 (30%)
 * Matching by correlation alone would also pair rank 0's kernel with rank 1's launch (-5). */
static const char merged_trace[] = "{\"traceEvents\": [\n" X("cpu_op", "aten::mm", 1000, 1000, 0, 40, "")
    X("cpu_op", "aten::mm", 2000, 2000, 0, 100, "") X("cuda_runtime", "cudaLaunchKernel", 1000, 1000, 10, 2,
                                                      "\"correlation\": 1")
        X("cuda_runtime", "cudaLaunchKernel", 2000, 2000, 20, 5,
          "\"correlation\": 1") X("kernel", "gemm", 1001, 7, 15, 10, "\"correlation\": 1")
            X("kernel", "gemm", 2001, 7, 50, 30,
              "\"correlation\": 1") "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1000, \"tid\": 0,"
                                    " \"args\": {\"name\": \"rank 0 \\u00b7 hostA \\u00b7 pid 77\"}},\n"
                                    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1001, \"tid\": 0,"
                                    " \"args\": {\"name\": \"rank 0 · hostA · GPU 0\"}},\n"
                                    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 2000, \"tid\": 0,"
                                    " \"args\": {\"name\": \"rank 1 · hostB · pid 78\"}},\n"
                                    "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 2001, \"tid\": 0,"
                                    " \"args\": {\"name\": \"rank 1 · hostB · GPU 0\"}}\n"
                                    "]}\n";

static int summary(const char *args, int merge_stderr, char **out)
{
	return tu_strobe("summary", args, merge_stderr, out);
}

static yajl_val summary_json(const char *path)
{
	char *out = NULL, args[4200];
	snprintf(args, sizeof(args), "--json '%s'", path);
	assert_int_equal(summary(args, 0, &out), 0);
	yajl_val v = tu_parse_json(out);
	if (!v)
		fail_msg("--json output does not parse:\n%s", out);
	free(out);
	return v;
}

static char *write_trace(const char *text, const char *name)
{
	static char path[4096];
	snprintf(path, sizeof(path), "%s/%s", tu_mkdtemp(), name);
	assert_int_equal(tu_write_file(path, text), 0);
	return path;
}

/* Removes the directory write_trace made for path. */
static void remove_trace(char *path)
{
	*strrchr(path, '/') = 0;
	tu_rmrf(path);
	free(path);
}

static long long num(yajl_val obj, const char *key)
{
	return (long long)tu_get_num(obj, key);
}

static yajl_val at(yajl_val arr, size_t i)
{
	assert_non_null(arr);
	assert_true(YAJL_IS_ARRAY(arr));
	assert_true(i < arr->u.array.len);
	return arr->u.array.values[i];
}

static size_t len(yajl_val arr)
{
	assert_non_null(arr);
	return arr->u.array.len;
}

/* The element of arr whose key is str. */
static yajl_val with(yajl_val arr, const char *key, const char *str)
{
	for (size_t i = 0; i < len(arr); i++)
		if (tu_get_str(at(arr, i), key) && !strcmp(tu_get_str(at(arr, i), key), str))
			return at(arr, i);
	fail_msg("no element with %s = %s", key, str);
	return NULL;
}

/* Device d's streams: n of them, with these tids and busy times, in order. */
static void assert_streams(yajl_val d, size_t n, const long long *tids, const long long *busy)
{
	yajl_val streams = tu_get(d, "streams");
	assert_int_equal(len(streams), n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(num(at(streams, i), "tid"), tids[i]);
		assert_int_equal(num(at(streams, i), "busy_ns"), busy[i]);
	}
}

static void test_device_busy_and_gaps(void **state)
{
	(void)state;
	char *path = strdup(write_trace(gpu_trace, "gpu.json"));
	yajl_val v = summary_json(path);
	yajl_val devs = tu_get(v, "gpu_devices");
	assert_int_equal(len(devs), 1);
	yajl_val d = at(devs, 0);
	assert_string_equal(tu_get_str(d, "name"), "GPU 0 (pid 0)");
	assert_true(YAJL_IS_NULL(tu_get(d, "rank")));
	assert_int_equal(num(d, "events"), 8);
	assert_int_equal(num(d, "busy_ns"), 144000);
	assert_true(tu_get_num(d, "busy_pct") == 28.8);
	yajl_val gaps = tu_get(d, "idle_gaps");
	assert_int_equal(num(gaps, "count"), 5);
	assert_int_equal(num(gaps, "total_ns"), 166000);
	assert_int_equal(num(gaps, "longest_ns"), 76000);
	yajl_val top = tu_get(gaps, "longest");
	assert_int_equal(len(top), 5);
	long long starts[] = {324000, 160000, 270000, 250000, 310000},
	          durs[] = {76000, 40000, 30000, 10000, 10000};
	for (size_t i = 0; i < 5; i++) {
		assert_int_equal(num(at(top, i), "start_ns"), starts[i]);
		assert_int_equal(num(at(top, i), "duration_ns"), durs[i]);
	}
	yajl_val streams = tu_get(d, "streams");
	assert_streams(d, 3, (const long long[]){7, 8, 9}, (const long long[]){100000, 34000, 40000});
	assert_true(tu_get_num(at(streams, 0), "busy_pct") == 20.0);
	assert_true(tu_get_num(at(streams, 1), "busy_pct") == 6.8);

	yajl_val cc = tu_get(d, "comm_compute");
	assert_int_equal(num(cc, "comm_ns"), 40000);
	assert_int_equal(num(cc, "compute_ns"), 110000);
	assert_int_equal(num(cc, "both_ns"), 20000);
	assert_true(tu_get_num(cc, "hidden_pct") == 50.0);
	yajl_tree_free(v);

	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	char *line = tu_line_with(out, "GPU 0 (pid 0)");
	tu_assert_contains(line, "144.000 µs");
	tu_assert_contains(line, "28.8%");
	tu_assert_contains(line, "166.000 µs");
	tu_assert_contains(line, "76.000 µs");
	free(line);
	tu_assert_line(out, "longest gaps:", "76.000 µs at +324.000 µs, 40.000 µs at +160.000 µs");
	tu_assert_line(out, "NCCL", "50.0% of communication hidden");
	free(out);
	remove_trace(path);
}

/* Communication against computation on one device, in shapes where one
 * span meets several of the other; the events are written out of time
 * order, and each union is made of kernels on two streams (times in µs):
 *
 *   NCCL    N1 [0,10]; N2 = [100,300] on 9 and [250,400] on 10; N3 [500,510];
 *           N4 [520,530]; N5 [540,550]; N6 [710,720]            comm 350
 *   compute C1 [5,20]; C2 [150,160]; C3 [200,210] on 8; C4 = [390,410] on 7
 *           and [400,420] on 8; C5 [505,545]; C6 [600,610]; C7 [700,710]
 *                                                                compute 125
 *   both: C1 5, C2 10, C3 10, C4 10 (to 400), C5 5 + 10 + 5; C7 only
 *         touches N6: 55, 15.7% of communication hidden.
 *   busy: [0,20] + [100,420] + [500,550] + [600,610] + [700,720] = 420;
 *   streams 7: 105, 8: 30, 9: 240, 10: 160. */
#define NCCL(stream, ts, dur)                                                                                \
	X("kernel", "ncclDevKernel_AllGather", 0, stream, ts, dur, "\"stream\": " #stream)
#define GEMM(stream, ts, dur) X("kernel", "gemm", 0, stream, ts, dur, "\"stream\": " #stream)
static const char overlap_trace[] = "{\"traceEvents\": [\n" GEMM(7, 700, 10) NCCL(9, 710, 10) NCCL(9, 540, 10)
    GEMM(7, 505, 40) NCCL(9, 500, 10) NCCL(10, 520, 10) GEMM(8, 400, 20) GEMM(7, 390, 20) NCCL(10, 250, 150)
        NCCL(9, 100, 200) GEMM(8, 200, 10) GEMM(7, 150, 10) GEMM(7, 5, 15) NCCL(9, 0, 10)
            GEMM(7, 600, 10) "{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, \"tid\": 0, "
                             "\"args\": {\"labels\": \"GPU 0\"}}\n]}\n";

static void test_comm_overlap_shapes(void **state)
{
	(void)state;
	char *path = strdup(write_trace(overlap_trace, "overlap.json"));
	yajl_val v = summary_json(path);
	yajl_val d = at(tu_get(v, "gpu_devices"), 0);
	assert_int_equal(num(d, "events"), 15);
	assert_int_equal(num(d, "busy_ns"), 420000);
	yajl_val cc = tu_get(d, "comm_compute");
	assert_int_equal(num(cc, "comm_ns"), 350000);
	assert_int_equal(num(cc, "compute_ns"), 125000);
	assert_int_equal(num(cc, "both_ns"), 55000);
	/* streams in the order the trace first shows them */
	assert_streams(d, 4, (const long long[]){7, 9, 10, 8},
	               (const long long[]){105000, 240000, 160000, 30000});
	yajl_tree_free(v);

	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	tu_assert_line(out, "NCCL", "15.7% of communication hidden");
	free(out);
	remove_trace(path);
}

static void test_kernels_copies_latency(void **state)
{
	(void)state;
	char *path = strdup(write_trace(gpu_trace, "gpu.json"));
	yajl_val v = summary_json(path);
	yajl_val k = tu_get(v, "kernels");
	assert_int_equal(len(k), 4);
	const char *order[] = {"gemm", "ncclDevKernel_AllReduce_Sum_f32", "relu<float>&bias", "fill"};
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(tu_get_str(at(k, i), "name"), order[i]);
	yajl_val gemm = at(k, 0);
	assert_int_equal(num(gemm, "count"), 3);
	assert_int_equal(num(gemm, "total_ns"), 90000);
	assert_int_equal(num(gemm, "mean_ns"), 30000);
	assert_int_equal(num(gemm, "p50_ns"), 30000);
	assert_int_equal(num(gemm, "p99_ns"), 50000);
	assert_int_equal(num(gemm, "max_ns"), 50000);

	yajl_val copies = tu_get(v, "memcpy");
	assert_int_equal(len(copies), 2);
	yajl_val h2d = with(copies, "kind", "HtoD"), d2h = with(copies, "kind", "DtoH");
	assert_int_equal(num(h2d, "count"), 1);
	assert_int_equal(num(h2d, "bytes"), 1000000);
	assert_int_equal(num(h2d, "total_ns"), 10000);
	assert_true(tu_get_num(h2d, "gb_per_s") == 100.0);
	assert_int_equal(num(d2h, "bytes"), 200000);
	assert_true(tu_get_num(d2h, "gb_per_s") == 50.0);

	yajl_val lat = tu_get(v, "launch_latency");
	assert_int_equal(len(lat), 1);
	yajl_val l = at(lat, 0);
	assert_int_equal(num(l, "kernels"), 6);
	assert_int_equal(num(l, "matched"), 5);
	assert_int_equal(num(l, "unmatched"), 1);
	assert_int_equal(num(l, "p50_ns"), 10000);
	assert_int_equal(num(l, "p90_ns"), 40000);
	assert_int_equal(num(l, "p99_ns"), 40000);
	assert_int_equal(num(l, "max_ns"), 40000);

	yajl_val ops = tu_get(v, "cpu_ops_by_self");
	assert_int_equal(num(with(ops, "name", "aten::mm"), "self_ns"), 25000);
	assert_int_equal(len(tu_get(v, "ranks")), 0);
	yajl_tree_free(v);

	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	char *line = tu_line_with(strstr(out, "kernels by total time"), "  gemm ");
	tu_assert_contains(line, "90.000 µs");
	tu_assert_contains(line, "50.000 µs");
	free(line);
	line = tu_line_with(out, "  HtoD");
	tu_assert_contains(line, "1000000");
	tu_assert_contains(line, "100.000");
	free(line);
	line = tu_line_with(out, "  all ");
	tu_assert_contains(line, "10.000 µs");
	tu_assert_contains(line, "40.000 µs");
	free(line);
	/* Readable in 100 columns. */
	for (char *p = out, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break;
		size_t cols = 0;
		for (char *c = p; c < nl; c++)
			cols += ((unsigned char)*c & 0xc0) != 0x80;
		if (cols > 100)
			fail_msg("line wider than 100 columns: %.*s", (int)(nl - p), p);
	}
	free(out);
	remove_trace(path);
}

static void test_merged_ranks(void **state)
{
	(void)state;
	char *path = strdup(write_trace(merged_trace, "merged.json"));
	yajl_val v = summary_json(path);
	yajl_val ranks = tu_get(v, "ranks");
	assert_int_equal(len(ranks), 2);
	assert_int_equal((int)at(ranks, 0)->u.number.i, 0);
	assert_int_equal((int)at(ranks, 1)->u.number.i, 1);

	yajl_val devs = tu_get(v, "gpu_devices");
	assert_int_equal(len(devs), 2);
	assert_int_equal(num(at(devs, 0), "rank"), 0);
	assert_string_equal(tu_get_str(at(devs, 0), "name"), "rank 0 · hostA · GPU 0");
	assert_int_equal(num(at(devs, 0), "busy_ns"), 10000);
	assert_true(tu_get_num(at(devs, 0), "busy_pct") == 10.0);
	assert_int_equal(num(at(devs, 1), "rank"), 1);
	assert_int_equal(num(at(devs, 1), "busy_ns"), 30000);

	yajl_val k = tu_get(v, "kernels");
	assert_int_equal(len(k), 2);
	assert_int_equal(num(at(k, 0), "rank"), 0);
	assert_int_equal(num(at(k, 0), "total_ns"), 10000);
	assert_int_equal(num(at(k, 1), "rank"), 1);
	assert_int_equal(num(at(k, 1), "total_ns"), 30000);

	yajl_val lat = tu_get(v, "launch_latency");
	assert_int_equal(len(lat), 2);
	assert_int_equal(num(at(lat, 0), "rank"), 0);
	assert_int_equal(num(at(lat, 0), "matched"), 1);
	assert_int_equal(num(at(lat, 0), "p50_ns"), 5000);
	assert_int_equal(num(at(lat, 1), "rank"), 1);
	assert_int_equal(num(at(lat, 1), "p50_ns"), 30000);

	yajl_val ops = tu_get(v, "cpu_ops_by_self");
	assert_int_equal(len(ops), 2);
	assert_int_equal(num(at(ops, 0), "rank"), 0);
	assert_int_equal(num(at(ops, 0), "self_ns"), 38000);
	assert_int_equal(num(at(ops, 1), "rank"), 1);
	assert_int_equal(num(at(ops, 1), "self_ns"), 95000);
	yajl_tree_free(v);

	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	tu_assert_contains(out, "ranks: 0, 1 (from process names");
	tu_assert_contains(out, "cpu_op by self time, per rank");
	tu_assert_line(out, "rank 1 · hostB · GPU 0", "30.0%");
	free(out);
	remove_trace(path);
}

/* libkineto's own trace: one kernel on stream 7 (10.5 µs) launched 7 µs
 * after its cudaLaunchKernel (840.951 -> 847.951) in a 1 ms window. */
static void test_libkineto_fixture(void **state)
{
	(void)state;
	yajl_val v = summary_json(FIXTURE);
	yajl_val d = at(tu_get(v, "gpu_devices"), 0);
	assert_int_equal(num(d, "busy_ns"), 10500);
	assert_int_equal(num(at(tu_get(d, "streams"), 0), "tid"), 7);
	yajl_val l = at(tu_get(v, "launch_latency"), 0);
	assert_int_equal(num(l, "matched"), 1);
	assert_int_equal(num(l, "p50_ns"), 7000);
	assert_int_equal(len(tu_get(v, "memcpy")), 0);
	yajl_tree_free(v);
}

/* A CPU-only trace gets no GPU sections in the text output. */
static void test_cpu_only_has_no_gpu_sections(void **state)
{
	(void)state;
	char *path = strdup(
	    write_trace("{\"traceEvents\": [" X("cpu_op", "aten::add", 1, 1, 0, 10, "") "{}]}", "cpu.json"));
	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	assert_null(strstr(out, "GPU devices"));
	assert_null(strstr(out, "launch latency"));
	assert_null(strstr(out, "kernels by total time"));
	free(out);
	yajl_val v = summary_json(path);
	assert_int_equal(len(tu_get(v, "gpu_devices")), 0);
	assert_int_equal(len(tu_get(v, "launch_latency")), 0);
	yajl_tree_free(v);
	remove_trace(path);
}

/* GPU events with args of the wrong type or out of range are counted as
 * far as they make sense, never trusted: a string correlation matches
 * nothing, negative bytes add none, a missing dur is 0. */
static void test_odd_args(void **state)
{
	(void)state;
	char *path = strdup(write_trace(
	    "{\"traceEvents\": [\n" X("cuda_runtime", "cudaLaunchKernel", 1, 1, 0, 1,
	                              "\"correlation\": \"7\"")
	        X("kernel", "k", "GPU 0", 7, 10, 5, "\"correlation\": \"7\"")
	            X("kernel", "k", "GPU 0", 7, 20, -3, "\"correlation\": -1")
	                X("gpu_memcpy", "Memcpy", "GPU 0", 7, 30, 10,
	                  "\"bytes\": -5, \"copy kind\": 4") "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": "
	                                                     "\"k\", \"pid\": \"GPU 0\", "
	                                                     "\"tid\": 7, \"ts\": 50}]}",
	    "odd.json"));
	yajl_val v = summary_json(path);
	yajl_val d = at(tu_get(v, "gpu_devices"), 0);
	assert_string_equal(tu_get_str(d, "pid"), "GPU 0");
	assert_int_equal(num(d, "events"), 4);
	assert_int_equal(num(d, "busy_ns"), 15000); /* [10,15] and [30,40]; the others last 0 */
	yajl_val l = at(tu_get(v, "launch_latency"), 0);
	assert_int_equal(num(l, "kernels"), 3);
	assert_int_equal(num(l, "unmatched"), 3);
	yajl_val c = at(tu_get(v, "memcpy"), 0);
	assert_string_equal(tu_get_str(c, "kind"), "4");
	assert_int_equal(num(c, "bytes"), 0);
	yajl_tree_free(v);
	remove_trace(path);
}

/* One launch runs two kernels (a graph), and a later launch with the same
 * correlation comes after both: a kernel pairs with the launches before it
 * in the file (only when there are none, with those after it), so the
 * latencies are 10 and 30 µs, not 10 and 5 (or -15) from the later one.
 * A third kernel with another correlation comes before its launch (its
 * only one): 20. */
static void test_graph_launch_and_later_launch(void **state)
{
	(void)state;
	char *path =
	    strdup(write_trace("{\"traceEvents\": [\n" LAUNCH(1, 90) KERNEL("a", 7, 100, 10, 1)
	                           KERNEL("b", 7, 120, 10, 1) LAUNCH(1, 115) KERNEL("c", 7, 140, 5, 2)
	                               LAUNCH(2, 120) "{\"ph\": \"i\", \"name\": \"end\", \"pid\": 100, "
	                                              "\"tid\": 100, \"ts\": 200, \"s\": \"t\"}]}",
	                       "graph.json"));
	yajl_val v = summary_json(path);
	yajl_val l = at(tu_get(v, "launch_latency"), 0);
	assert_int_equal(num(l, "kernels"), 3);
	assert_int_equal(num(l, "matched"), 3);
	assert_int_equal(num(l, "p50_ns"), 20000);
	assert_int_equal(num(l, "max_ns"), 30000);
	assert_int_equal(num(l, "p90_ns"), 30000);
	yajl_tree_free(v);
	remove_trace(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_device_busy_and_gaps),
	    cmocka_unit_test(test_comm_overlap_shapes),
	    cmocka_unit_test(test_kernels_copies_latency),
	    cmocka_unit_test(test_graph_launch_and_later_launch),
	    cmocka_unit_test(test_merged_ranks),
	    cmocka_unit_test(test_libkineto_fixture),
	    cmocka_unit_test(test_cpu_only_has_no_gpu_sections),
	    cmocka_unit_test(test_odd_args),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* strobe summary's critical path per step (HTA's critical_path_analysis)
 * on a hand-written trace whose paths are worked out below
 * (tests/hta/check_hta.sh compares them with HTA itself on generated
 * traces). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_cli_json_common.h"
#include "testutil.h"

#define X(cat, name, pid, tid, ts, dur, args)                                                                \
	"{\"ph\": \"X\", \"cat\": \"" cat "\", \"name\": \"" name "\", \"pid\": " #pid ", \"tid\": " #tid    \
	", \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {" args "}},\n"
#define CPU(cat, name, ts, dur)    X(cat, name, 100, 100, ts, dur, "")
#define CALL(name, corr, ts, dur)  X("cuda_runtime", name, 100, 100, ts, dur, "\"correlation\": " #corr)
#define GPU(cat, name, ts, dur, c) X(cat, name, 0, 7, ts, dur, "\"stream\": 7, \"correlation\": " #c)

/* One thread (100/100), GPU 0 stream 7; µs.
 * ProfilerStep#1 [0,200]: aten::mm [10,30] holds cudaLaunchKernel (corr 1)
 *   [15,20]; gemm [25,125]; cudaStreamSynchronize (corr 2) [40,130] waits
 *   for it (Stream Sync [125,126]). The launch found an empty queue, so
 *   its delay counts: mm start -> launch start 5 (CPU) -> gemm start 10
 *   (launch delay) -> gemm end 100 (compute) -> the sync's end (0): 115.
 *   The CPU's own way (mm, call, mm, the sync's zero-weight wait) is 20.
 *   GPU-bound.
 * ProfilerStep#2 [200,400]: aten::slow [210,310] launches (corr 3) at
 *   [300,305]; relu [306,316]. slow start -> launch start 90 (CPU) -> relu
 *   start 6 (launch delay) -> relu end 10: 106, against 100 on the CPU.
 *   CPU-bound.
 * ProfilerStep#3 [400,500]: nothing in it, no path. */
static const char trace[] = "{\"traceEvents\": [\n" CPU("user_annotation", "ProfilerStep#1", 0, 200)
    CPU("cpu_op", "aten::mm", 10, 20) CALL("cudaLaunchKernel", 1, 15, 5) GPU("kernel", "gemm", 25, 100, 1)
        CALL("cudaStreamSynchronize", 2, 40, 90) GPU("cuda_sync", "Stream Sync", 125, 1, 2)
            CPU("user_annotation", "ProfilerStep#2", 200, 200) CPU("cpu_op", "aten::slow", 210, 100)
                CALL("cudaLaunchKernel", 3, 300, 5) GPU("kernel", "relu", 306, 10, 3)
                    CPU("user_annotation", "ProfilerStep#3", 400,
                        100) "{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, \"tid\": 0, "
                             "\"args\": {\"labels\": \"GPU 0\"}}\n]}\n";

static char *dir;

static const char *write_trace(void)
{
	static char path[4200];
	snprintf(path, sizeof(path), "%s/cp.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);
	return path;
}

static void expect_op(yajl_val op, const char *name, const char *on, long long us)
{
	assert_string_equal(tu_get_str(op, "name"), name);
	assert_string_equal(tu_get_str(op, "on"), on);
	assert_int_equal(num(op, "time_ns"), us * 1000);
}

static void test_paths(void **state)
{
	(void)state;
	char args[4400];
	snprintf(args, sizeof(args), "--json '%s'", write_trace());
	yajl_val v = cli_json("summary", args);
	yajl_val rows = tu_get(v, "critical_path");
	assert_int_equal(rows->u.array.len, 2);
	static const long long want[2][9] = {
	    /* step, duration, length, cpu, compute, comm, kernel gaps, launch delay (µs), GPU-bound */
	    {1, 200, 115, 5, 100, 0, 0, 10, 1},
	    {2, 200, 106, 90, 10, 0, 0, 6, 0},
	};
	static const char *const keys[] = {"duration_ns", "length_ns",     "cpu_ns",         "gpu_compute_ns",
	                                   "gpu_comm_ns", "kernel_gap_ns", "launch_delay_ns"};
	for (size_t i = 0; i < 2; i++) {
		yajl_val r = at(rows, i);
		assert_int_equal(num(r, "step"), want[i][0]);
		for (size_t k = 0; k < 7; k++)
			assert_int_equal(num(r, keys[k]), want[i][k + 1] * 1000);
		assert_string_equal(tu_get_str(r, "bound"), want[i][8] ? "GPU" : "CPU");
	}
	yajl_val ops = tu_get(at(rows, 0), "ops");
	assert_int_equal(ops->u.array.len, 2);
	expect_op(at(ops, 0), "gemm", "GPU", 100);
	expect_op(at(ops, 1), "aten::mm", "CPU", 5);
	ops = tu_get(at(rows, 1), "ops");
	assert_int_equal(ops->u.array.len, 2);
	expect_op(at(ops, 0), "aten::slow", "CPU", 90);
	expect_op(at(ops, 1), "relu", "GPU", 10);
	assert_string_equal(tu_get_str(at(rows, 1), "name"), "ProfilerStep#2");
	yajl_tree_free(v);
}

/* Text: a row per step, the ops on the path under it; the report's table. */
static void test_text_and_report(void **state)
{
	(void)state;
	char args[8800], path[4300], *out = NULL;
	const char *file = write_trace();
	snprintf(args, sizeof(args), "'%s'", file);
	assert_int_equal(tu_strobe("summary", args, 0, &out), 0);
	const char *sec = strstr(out, "\ncritical path per step");
	assert_non_null(sec);
	char *line = tu_line_with(sec, "     2 200.000 µs");
	tu_assert_contains(line,
	                   "106.000 µs  CPU    90.000 µs   10.000 µs       0 ns         0 ns     6.000 µs");
	free(line);
	tu_assert_contains(sec, "    on the path: aten::slow (CPU) 90.000 µs, relu (GPU) 10.000 µs\n");
	free(out);

	snprintf(path, sizeof(path), "%s/cp.html", dir);
	snprintf(args, sizeof(args), "-o '%s' '%s'", path, file);
	assert_int_equal(tu_strobe("report", args, 0, NULL), 0);
	char *html = tu_read_file(path, NULL);
	assert_non_null(html);
	const char *t = strstr(html, "<table id=\"critical-path\">");
	assert_non_null(t);
	tu_assert_contains(t, "gemm (GPU) 100.000 µs<br>aten::mm (CPU) 5.000 µs");
	free(html);
}

/* Two ranks merged (the same trace as rank 0 and rank 1, sharing
 * correlation ids): each rank's steps get the paths above, launches
 * matched within the rank. */
static void test_merged_ranks(void **state)
{
	(void)state;
	char path[2][4300], args[9000];
	for (int r = 0; r < 2; r++) {
		snprintf(path[r], sizeof(path[r]), "%s/rank%d.json", dir, r);
		char *text = malloc(sizeof(trace) + 64);
		assert_non_null(text);
		snprintf(text, sizeof(trace) + 64, "{\"distributedInfo\": {\"rank\": %d}, %s", r, trace + 1);
		assert_int_equal(tu_write_file(path[r], text), 0);
		free(text);
	}
	snprintf(args, sizeof(args), "--quiet -o '%s/merged.json' '%s' '%s'", dir, path[0], path[1]);
	assert_int_equal(tu_strobe("merge", args, 0, NULL), 0);
	snprintf(args, sizeof(args), "--json '%s/merged.json'", dir);
	yajl_val v = cli_json("summary", args);
	yajl_val rows = tu_get(v, "critical_path");
	assert_int_equal(rows->u.array.len, 4);
	for (size_t i = 0; i < 4; i++) {
		yajl_val r = at(rows, i);
		assert_int_equal(num(r, "rank"), i / 2);
		assert_int_equal(num(r, "step"), 1 + i % 2);
		assert_int_equal(num(r, "length_ns"), i % 2 ? 106000 : 115000);
		assert_int_equal(num(r, "launch_delay_ns"), i % 2 ? 6000 : 10000);
	}
	yajl_tree_free(v);
}

/* The only critical path of trace text (written to name): the row of
 * summary --json, with *v the whole output to free. */
static yajl_val one_path(const char *name, const char *text, yajl_val *v)
{
	char path[4200], args[4400];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(tu_write_file(path, text), 0);
	snprintf(args, sizeof(args), "--json '%s'", path);
	*v = cli_json("summary", args);
	yajl_val rows = tu_get(*v, "critical_path");
	assert_int_equal(rows->u.array.len, 1);
	return at(rows, 0);
}

/* Two ways of the same length: a1 [0,5] then a2 [5,10] on thread 2, b
 * [0,10] on thread 3. The path ends where networkx's dag_longest_path
 * ends it, at the first node with the longest way in, in the order of
 * networkx's topological sort (generation by generation, each in the
 * order its nodes became ready). b's end comes before a2's in that order,
 * so the path is b alone; a last-in first-out order would end it at a2. */
static void test_tie_ends_first_in_topological_order(void **state)
{
	(void)state;
	static const char tie[] =
	    "{\"traceEvents\": [\n" X("user_annotation", "ProfilerStep#1", 1, 1, 0, 10,
	                              "") X("cpu_op", "a1", 1, 2, 0, 5, "") X("cpu_op", "a2", 1, 2, 5, 5, "")
	        X("cpu_op", "b", 1, 3, 0, 10, "") "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, "
	                                          "\"tid\": 3, \"args\": {\"name\": \"worker\"}}\n]}\n";
	yajl_val v, row = one_path("tie.json", tie, &v);
	assert_int_equal(num(row, "length_ns"), 10000);
	yajl_val ops = tu_get(row, "ops");
	assert_int_equal(ops->u.array.len, 1);
	expect_op(at(ops, 0), "b", "CPU", 10);
	yajl_tree_free(v);
}

/* A sync call's end with two ways in of the same length (9 us): its call
 * stack's, added first, and the stream sync's from kernel k1's end. As in
 * networkx, the first added wins, so the path stays on the CPU: aten::mm
 * 6 us, the launch 2 us and the sync call 1 us. Taking the sync's way
 * would make the step GPU-bound, k1 5 us on the path. */
static void test_sync_tie_keeps_the_call_stack(void **state)
{
	(void)state;
	static const char tie[] =
	    "{\"traceEvents\": [\n" X("user_annotation", "ProfilerStep#0", 1, 1, 0, 52, "")
	        X("cuda_runtime", "cudaStreamSynchronize", 1, 1, 37, 5, "\"correlation\": 109")
	            X("cuda_sync", "Stream Sync", 0, 8, 40, 2, "\"correlation\": 109, \"stream\": 8")
	                X("cpu_op", "aten::mm", 1, 1, 38, 7, "")
	                    X("cuda_runtime", "cudaLaunchKernel", 1, 1, 40, 1, "\"correlation\": 110")
	                        X("kernel", "k1", 0, 8, 40, 5, "\"correlation\": 110, \"stream\": 8")
	                            X("cuda_runtime", "cudaLaunchKernel", 1, 1, 48, 1,
	                              "\"correlation\": 111") "{\"ph\": \"M\", \"name\": \"thread_name\", "
	                                                      "\"pid\": 1, \"tid\": 1, \"args\": "
	                                                      "{\"name\": \"main\"}}\n]}\n";
	yajl_val v, row = one_path("sync-tie.json", tie, &v);
	assert_int_equal(num(row, "length_ns"), 9000);
	assert_string_equal(tu_get_str(row, "bound"), "CPU");
	assert_int_equal(num(row, "gpu_compute_ns"), 0);
	yajl_val ops = tu_get(row, "ops");
	assert_int_equal(ops->u.array.len, 3);
	expect_op(at(ops, 0), "aten::mm", "CPU", 6);
	expect_op(at(ops, 1), "cudaLaunchKernel", "CPU", 2);
	expect_op(at(ops, 2), "cudaStreamSynchronize", "CPU", 1);
	yajl_tree_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_text_and_report),
	    cmocka_unit_test(test_merged_ranks),
	    cmocka_unit_test(test_tie_ends_first_in_topological_order),
	    cmocka_unit_test(test_sync_tie_keeps_the_call_stack),
	};
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

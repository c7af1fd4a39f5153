/* strobe summary's frequent kernel sequences (HTA's
 * get_frequent_cuda_kernel_sequences) on a hand-written trace whose every
 * number is worked out below (tests/hta/check_hta.sh compares them with HTA
 * itself on generated traces). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_cli_json_common.h"
#include "testutil.h"

#define X(cat, name, ts, dur, args)                                                                          \
	"{\"ph\": \"X\", \"cat\": \"" cat "\", \"name\": \"" name                                            \
	"\", \"pid\": 100, \"tid\": 100, \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {" args "}},\n"
#define OP(name, ts, dur) X("cpu_op", name, ts, dur, "")
#define LAUNCH(corr, ts)  X("cuda_runtime", "cudaLaunchKernel", ts, 5, "\"correlation\": " #corr)
#define KERNEL(name, stream, ts, dur, corr)                                                                  \
	"{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"" name "\", \"pid\": 0, \"tid\": " #stream         \
	", \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {\"stream\": " #stream ", \"correlation\": " #corr  \
	"}},\n"

/* One thread (100/100), GPU 0 stream 7; µs.
 *   aten::linear [0,100]: aten::addmm [5,35] launches 1, 2, 3 at 10, 20, 30;
 *       gemm [40,50], bias [50,55], relu [60,65]
 *   aten::linear [200,300]: launches 4, 5, 6 at 210, 220, 230: gemm [240,250],
 *       bias [250,255], relu [255,260] (same sequence)
 *   aten::linear [400,500]: launches 7, 8: two kernels, under HTA's 3: none
 *   aten::conv [600,700]: launches 9, 10, 11: relu [650,651] starts first,
 *       then conv [652,662], conv [662,672] (kernel order is GPU start order)
 * Default roots (outermost cpu_ops): linear gemm|bias|relu twice (GPU
 * 10+5+5 = 20 each: 40; CPU 200), conv relu|conv|conv once (GPU 21, CPU 100).
 * --seq-op aten::addmm: the addmm at depth 1, once (GPU 20, CPU 30).
 * --seq-op aten:: : every op matches; the shallowest (depth 0) are the
 * default's roots. */
static const char trace[] = "{\"traceEvents\": [\n" OP("aten::linear", 0, 100) OP("aten::addmm", 5, 30)
    LAUNCH(1, 10) LAUNCH(2, 20) LAUNCH(3, 30) KERNEL("gemm", 7, 40, 10, 1) KERNEL("bias", 7, 50, 5, 2)
        KERNEL("relu", 7, 60, 5, 3) OP("aten::linear", 200, 100) LAUNCH(4, 210) LAUNCH(5, 220) LAUNCH(6, 230)
            KERNEL("gemm", 7, 240, 10, 4) KERNEL("bias", 7, 250, 5, 5) KERNEL("relu", 7, 255, 5, 6)
                OP("aten::linear", 400, 100) LAUNCH(7, 410) LAUNCH(8, 420) KERNEL("gemm", 7, 430, 10, 7)
                    KERNEL("bias", 7, 440, 5, 8) OP("aten::conv", 600, 100) LAUNCH(9, 610) LAUNCH(10, 620)
                        LAUNCH(11, 630) KERNEL("conv", 7, 652, 10, 9) KERNEL("conv", 7, 662, 10, 10)
                            KERNEL("relu", 7, 650, 1,
                                   11) "{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 0, "
                                       "\"tid\": 0, \"args\": {\"labels\": \"GPU 0\"}}\n]}\n";

static char *dir;

static yajl_val seqs(const char *opts)
{
	char args[4400], path[4200];
	snprintf(path, sizeof(path), "%s/seq.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);
	snprintf(args, sizeof(args), "--json --top 0 %s '%s'", opts, path);
	return cli_json("summary", args);
}

static void expect(yajl_val row, const char *op, const char *const *names, size_t n, long long count,
                   long long gpu_us, long long cpu_us)
{
	assert_string_equal(tu_get_str(row, "op"), op);
	assert_int_equal(num(row, "kernels"), n);
	assert_int_equal(num(row, "count"), count);
	assert_int_equal(num(row, "gpu_ns"), gpu_us * 1000);
	assert_int_equal(num(row, "cpu_ns"), cpu_us * 1000);
	yajl_val seq = tu_get(row, "sequence");
	assert_int_equal(seq->u.array.len, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(tu_get_str(at(seq, i), "name"), names[i]);
}

static const char *const linear[] = {"gemm", "bias", "relu"};
static const char *const conv[] = {"relu", "conv", "conv"};

static void test_outermost_ops(void **state)
{
	(void)state;
	yajl_val v = seqs("");
	yajl_val rows = tu_get(v, "kernel_sequences");
	assert_int_equal(rows->u.array.len, 2);
	expect(at(rows, 0), "aten::linear", linear, 3, 2, 40, 200);
	expect(at(rows, 1), "aten::conv", conv, 3, 1, 21, 100);
	assert_true(YAJL_IS_NULL(tu_get(at(rows, 0), "rank")));
	yajl_tree_free(v);

	/* --seq-op: the shallowest matching ops, here the addmm inside a linear */
	v = seqs("--seq-op aten::addmm");
	rows = tu_get(v, "kernel_sequences");
	assert_int_equal(rows->u.array.len, 1);
	expect(at(rows, 0), "aten::addmm", linear, 3, 1, 20, 30);
	yajl_tree_free(v);

	/* every op holds "aten::": only depth 0 counts, as by default */
	v = seqs("--seq-op aten::");
	rows = tu_get(v, "kernel_sequences");
	assert_int_equal(rows->u.array.len, 2);
	expect(at(rows, 0), "aten::linear", linear, 3, 2, 40, 200);
	yajl_tree_free(v);

	v = seqs("--seq-op no_such_op");
	assert_int_equal(tu_get(v, "kernel_sequences")->u.array.len, 0);
	yajl_tree_free(v);
}

/* The text lists each sequence under its row; the report has the table. */
static void test_text_and_report(void **state)
{
	(void)state;
	char args[8400], path[4200], *out = NULL;
	snprintf(path, sizeof(path), "%s/seq.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);
	snprintf(args, sizeof(args), "'%s'", path);
	assert_int_equal(tu_strobe("summary", args, 0, &out), 0);
	const char *sec = strstr(out, "\nfrequent kernel sequences");
	assert_non_null(sec);
	tu_assert_line(sec, "aten::linear ",
	               "aten::linear                         3      2  40.000 µs 200.000 µs");
	tu_assert_contains(sec, "    sequence: gemm, bias, relu\n");
	tu_assert_contains(sec, "    sequence: relu, conv, conv\n");
	free(out);

	snprintf(args, sizeof(args), "-o '%s/seq.html' '%s'", dir, path);
	assert_int_equal(tu_strobe("report", args, 0, NULL), 0);
	snprintf(path, sizeof(path), "%s/seq.html", dir);
	char *html = tu_read_file(path, NULL);
	assert_non_null(html);
	const char *t = strstr(html, "<table id=\"kernel-sequences\">");
	assert_non_null(t);
	tu_assert_contains(t, "gemm<br>bias<br>relu");
	free(html);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_outermost_ops),
	    cmocka_unit_test(test_text_and_report),
	};
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

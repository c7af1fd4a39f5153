/* strobe diff on two hand-written traces whose every number is worked out
 * below: steps by position, ops and kernels by name and position in their
 * step, new and gone, ranked by the change in total time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_cli_json_common.h"
#include "testutil.h"

#define X(cat, name, pid, tid, ts, dur)                                                                      \
	"{\"ph\": \"X\", \"cat\": \"" cat "\", \"name\": \"" name "\", \"pid\": " #pid ", \"tid\": " #tid    \
	", \"ts\": " #ts ", \"dur\": " #dur "},\n"
#define OP(name, ts, dur)     X("cpu_op", name, 1, 1, ts, dur)
#define STEP(n, ts, dur)      X("user_annotation", "ProfilerStep#" #n, 1, 1, ts, dur)
#define KERNEL(name, ts, dur) X("kernel", name, 0, 7, ts, dur)
#define END                   "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"p\"}}\n]}\n"

/* Times in µs. A: steps 1 [0,100] and 2 [100,200]; B: steps 5 [0,120] and
 * 6 [120,200].
 *   step 0: aten::mm 10 and 10 in A; 15, 10 and 2 in B: the first two
 *           match (+5, 0), the third is new (+2)
 *   step 1: aten::mm 10 in both; aten::relu 5 only in A (gone); aten::add
 *           10 only in B (new)
 *   aten::mm: A 3 / 30, B 4 / 37: +7 (matched +5, new 2): slower
 *   ranked by |change|: aten::add +10, aten::mm +7, aten::relu -5
 *   kernels: gemm 20 -> 30 (+10, slower); fill<float>& 5 new */
static const char trace_a[] = "{\"traceEvents\": [\n" STEP(1, 0, 100) STEP(2, 100, 100) OP("aten::mm", 10, 10)
    OP("aten::mm", 30, 10) OP("aten::mm", 110, 10) OP("aten::relu", 130, 5) KERNEL("gemm", 10, 20) END;
static const char trace_b[] = "{\"traceEvents\": [\n" STEP(5, 0, 120) STEP(6, 120, 80) OP("aten::mm", 10, 15)
    OP("aten::mm", 30, 10) OP("aten::mm", 50, 2) OP("aten::mm", 130, 10) OP("aten::add", 150, 10)
        KERNEL("gemm", 10, 30) KERNEL("fill<float>&", 50, 5) END;

static char *dir, pa[4096], pb[4096];

static yajl_val diff_json(void)
{
	char args[8400];
	snprintf(args, sizeof(args), "--json '%s' '%s'", pa, pb);
	return cli_json("diff", args);
}

static void test_steps_by_position(void **state)
{
	(void)state;
	yajl_val v = diff_json();
	yajl_val steps = tu_get(v, "steps");
	assert_int_equal(steps->u.array.len, 2);
	assert_int_equal(num(at(steps, 0), "a_step"), 1);
	assert_int_equal(num(at(steps, 0), "b_step"), 5);
	assert_int_equal(num(at(steps, 0), "a_duration_ns"), 100000);
	assert_int_equal(num(at(steps, 0), "b_duration_ns"), 120000);
	assert_int_equal(num(at(steps, 0), "change_ns"), 20000);
	assert_int_equal(num(at(steps, 1), "change_ns"), -20000);
	assert_true(YAJL_IS_NULL(tu_get(at(steps, 0), "rank")));
	yajl_tree_free(v);
}

static void test_ops_by_name_and_position(void **state)
{
	(void)state;
	yajl_val v = diff_json();
	yajl_val ops = tu_get(v, "ops");
	assert_int_equal(ops->u.array.len, 3);
	static const char *const names[] = {"aten::add", "aten::mm", "aten::relu"};
	static const char *const status[] = {"new", "slower", "gone"};
	static const long long change[] = {10000, 7000, -5000};
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(tu_get_str(at(ops, i), "name"), names[i]);
		assert_string_equal(tu_get_str(at(ops, i), "status"), status[i]);
		assert_int_equal(num(at(ops, i), "change_ns"), change[i]);
	}
	yajl_val mm = at(ops, 1);
	assert_int_equal(num(mm, "a_count"), 3);
	assert_int_equal(num(mm, "b_count"), 4);
	assert_int_equal(num(mm, "matched"), 3);
	assert_int_equal(num(mm, "a_total_ns"), 30000);
	assert_int_equal(num(mm, "b_total_ns"), 37000);
	assert_int_equal(num(mm, "matched_change_ns"), 5000);
	assert_int_equal(num(mm, "new_ns"), 2000);
	assert_int_equal(num(mm, "gone_ns"), 0);

	yajl_val k = tu_get(v, "kernels");
	assert_int_equal(k->u.array.len, 2);
	assert_string_equal(tu_get_str(at(k, 0), "name"), "gemm");
	assert_string_equal(tu_get_str(at(k, 0), "status"), "slower");
	assert_int_equal(num(at(k, 0), "change_ns"), 10000);
	assert_string_equal(tu_get_str(at(k, 1), "name"), "fill<float>&");
	assert_string_equal(tu_get_str(at(k, 1), "status"), "new");
	yajl_tree_free(v);
}

static void test_text_and_usage(void **state)
{
	(void)state;
	char args[8400], *out = NULL;
	snprintf(args, sizeof(args), "'%s' '%s'", pa, pb);
	assert_int_equal(tu_strobe("diff", args, 0, &out), 0);
	char *line = tu_line_with(out, "aten::mm ");
	tu_assert_contains(line, "30.000 µs");
	tu_assert_contains(line, "37.000 µs");
	tu_assert_contains(line, "+7.000 µs");
	tu_assert_contains(line, "slower");
	free(line);
	tu_assert_line(out, "3 matched", "+5.000 µs, new 2.000 µs, gone 0 ns");
	tu_assert_line(out, "100.000 µs 120.000 µs", "+20.000 µs");
	free(out);

	snprintf(args, sizeof(args), "'%s'", pa);
	assert_int_equal(tu_strobe("diff", args, 1, &out), 2);
	tu_assert_contains(out, "only one trace given");
	free(out);
	snprintf(args, sizeof(args), "'%s' '%s/missing.json'", pa, dir);
	assert_int_equal(tu_strobe("diff", args, 1, &out), 1);
	tu_assert_contains(out, "missing.json");
	free(out);
	assert_int_equal(tu_strobe("diff", "--help", 0, &out), 0);
	tu_assert_contains(out, "k-th aten::mm");
	free(out);
}

/* -o: the same tables as one HTML page, names escaped, rows classed by
 * status; --json and -o together are a usage error. */
static void test_html(void **state)
{
	(void)state;
	char args[12600], page[4200], *out = NULL;
	snprintf(page, sizeof(page), "%s/diff.html", dir);
	snprintf(args, sizeof(args), "-o '%s' '%s' '%s'", page, pa, pb);
	assert_int_equal(tu_strobe("diff", args, 1, &out), 0);
	tu_assert_contains(out, "wrote");
	free(out);
	char *html = tu_read_file(page, NULL);
	assert_non_null(html);
	tu_assert_contains(html, "<tr class=\"slower\"><td class=\"name\">aten::mm</td><td class=\"n\">3</td>"
	                         "<td class=\"n\">4</td><td class=\"n\">30.000 µs</td><td class=\"n\">37.000 "
	                         "µs</td><td class=\"n\">+7.000 µs</td><td>slower</td>");
	tu_assert_contains(html, "<tr class=\"new\"><td class=\"name\">fill&lt;float&gt;&amp;</td>");
	tu_assert_contains(html, "<tr class=\"gone\"><td class=\"name\">aten::relu</td>");
	tu_assert_contains(html, "<td class=\"n\">100.000 µs</td><td class=\"n\">120.000 µs</td><td "
	                         "class=\"n\">+20.000 µs</td>");
	assert_null(strstr(html, "fill<float>"));
	free(html);
	snprintf(args, sizeof(args), "--json -o '%s' '%s' '%s'", page, pa, pb);
	assert_int_equal(tu_strobe("diff", args, 1, &out), 2);
	tu_assert_contains(out, "choose one");
	free(out);
}

static int setup(void **state)
{
	(void)state;
	dir = tu_mkdtemp();
	snprintf(pa, sizeof(pa), "%s/a.json", dir);
	snprintf(pb, sizeof(pb), "%s/b.json", dir);
	return tu_write_file(pa, trace_a) || tu_write_file(pb, trace_b);
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
	    cmocka_unit_test(test_steps_by_position),
	    cmocka_unit_test(test_ops_by_name_and_position),
	    cmocka_unit_test(test_text_and_usage),
	    cmocka_unit_test(test_html),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

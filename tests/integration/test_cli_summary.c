/* strobe summary, run as a user runs it: on libkineto's own trace, on small
 * hand-written traces (plain, gzip, zstd), and on files that are not traces. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "testutil.h"

#define FIXTURE STROBE_TEST_DATA_DIR "/libkineto-sample.json"

/* A parent range of 100 µs holding two ops of 30 and 20 µs on one thread,
 * plus one more op on another thread, counters, an instant named "unknown",
 * an unfinished op and the drop counts strobe writes. */
static const char nested_trace[] =
    "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1790857026000000000,\n"
    " \"strobe\": {\"dropped_events\": 3, \"unfinished_ranges\": 1, \"truncated_names\": 2},\n"
    " \"traceEvents\": [\n"
    "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"step\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 1000.000, \"dur\": 100.000},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::add\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 1010.000, \"dur\": 30.000},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mul\", \"pid\": 10, \"tid\": 11,"
    "   \"ts\": 1050.000, \"dur\": 20.000, \"args\": {\"finished\": false}},\n"
    "  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mul\", \"pid\": 10, \"tid\": 12,"
    "   \"ts\": 1000.000, \"dur\": 5.500},\n"
    "  {\"ph\": \"C\", \"cat\": \"cpu_counter\", \"name\": \"mem\", \"pid\": 10, \"tid\": 11, \"ts\": 1000,"
    "   \"args\": {\"bytes\": 100}},\n"
    "  {\"ph\": \"C\", \"cat\": \"cpu_counter\", \"name\": \"mem\", \"pid\": 10, \"tid\": 11, \"ts\": 1090,"
    "   \"args\": {\"bytes\": 50}},\n"
    "  {\"ph\": \"C\", \"cat\": \"cpu_counter\", \"name\": \"mem\", \"pid\": 10, \"tid\": 11, \"ts\": 1050,"
    "   \"args\": {\"bytes\": 300}},\n"
    "  {\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": \"unknown\", \"pid\": 10,"
    "   \"tid\": 11, \"ts\": 1200}\n"
    " ]}\n";

/* Runs "strobe summary ARGS"; returns the exit status and the output. */
static int summary(const char *args, int merge_stderr, char **out)
{
	return tu_strobe("summary", args, merge_stderr, out);
}

static yajl_val summary_json(const char *args)
{
	char *out = NULL;
	char full[4096];
	snprintf(full, sizeof(full), "--json %s", args);
	assert_int_equal(summary(full, 0, &out), 0);
	yajl_val v = tu_parse_json(out);
	if (!v)
		fail_msg("--json output does not parse:\n%s", out);
	free(out);
	return v;
}

/* A row of a category's top list, or NULL. */
static yajl_val name_row(yajl_val root, const char *cat, const char *list, const char *name)
{
	yajl_val cats = tu_get(root, "categories");
	assert_non_null(cats);
	for (size_t i = 0; i < cats->u.array.len; i++) {
		yajl_val c = cats->u.array.values[i];
		if (strcmp(tu_get_str(c, "cat"), cat))
			continue;
		yajl_val rows = tu_get(c, list);
		for (size_t j = 0; rows && j < rows->u.array.len; j++)
			if (!strcmp(tu_get_str(rows->u.array.values[j], "name"), name))
				return rows->u.array.values[j];
	}
	return NULL;
}

/* The line of text that mentions needle first, as a new string. */
static void write_nested(const char *dir, char *path, size_t len)
{
	snprintf(path, len, "%s/nested.json", dir);
	assert_int_equal(tu_write_file(path, nested_trace), 0);
}

/* The numbers below are worked out by hand from the fixture: aten::mm runs
 * 50.234 µs (838.951 to 889.185) and holds cudaLaunchKernel (840.951,
 * 5 µs) on the same row 15670/15670, so its self time is 45.234 µs; the
 * kernel runs 10.5 µs on stream 7; the first event (the profiler span) starts
 * at 837.951 and "Record Window End" is at 1837.951, a 1 ms span. */
static void test_libkineto_fixture(void **state)
{
	(void)state;
	yajl_val v = summary_json(FIXTURE);
	assert_int_equal((int)tu_get_num(v, "events"), 73);
	assert_int_equal((int)tu_get_num(tu_get(v, "by_ph"), "X"), 7);
	assert_int_equal((int)tu_get_num(tu_get(v, "by_ph"), "M"), 59);
	assert_int_equal((int)tu_get_num(tu_get(v, "by_ph"), "i"), 4);
	assert_int_equal((long long)tu_get_num(tu_get(v, "span"), "duration_ns"), 1000000);
	assert_string_equal(tu_get_str(v, "compression"), "none");

	yajl_val mm = name_row(v, "cpu_op", "top_by_total", "aten::mm");
	assert_non_null(mm);
	assert_int_equal((int)tu_get_num(mm, "count"), 1);
	assert_int_equal((long long)tu_get_num(mm, "total_ns"), 50234);
	assert_int_equal((long long)tu_get_num(mm, "self_ns"), 45234);
	yajl_val k = name_row(v, "kernel", "top_by_total", "Kernel");
	assert_non_null(k);
	assert_int_equal((long long)tu_get_num(k, "total_ns"), 10500);
	assert_int_equal((long long)tu_get_num(k, "self_ns"), 10500);
	yajl_val rt = name_row(v, "cuda_runtime", "top_by_total", "cudaLaunchKernel");
	assert_non_null(rt);
	assert_int_equal((long long)tu_get_num(rt, "total_ns"), 5000);
	/* my_region (89.5 µs) holds aten::mm, which holds the launch. */
	yajl_val reg = name_row(v, "user_annotation", "top_by_self", "my_region");
	assert_non_null(reg);
	assert_int_equal((long long)tu_get_num(reg, "self_ns"), 89500 - 50234);
	yajl_val acc = tu_get(v, "accounting");
	assert_true(YAJL_IS_NULL(tu_get(acc, "strobe")));
	yajl_tree_free(v);

	char *out = NULL;
	assert_int_equal(summary(FIXTURE, 0, &out), 0);
	char *line = tu_line_with(out, "aten::mm");
	tu_assert_contains(line, "50.234 µs");
	tu_assert_contains(line, "45.234 µs");
	free(line);
	tu_assert_line(out, "cudaLaunchKernel", "5.000 µs");
	tu_assert_line(out, "span", "1.000 ms");
	free(out);
}

static void test_self_time_nested(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4096];
	write_nested(dir, path, sizeof(path));

	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	char *line = tu_line_with(out, "  step");
	tu_assert_contains(line, "100.000 µs");
	tu_assert_contains(line, "50.000 µs");
	free(line);
	/* The op still open when the trace was written comes first, with
	 * its thread and how long it had been open. */
	assert_true(!strncmp(out, "Open at the dump (still running when it was written)", 52));
	const char *table = strstr(out, "\nfile ");
	assert_non_null(table);
	tu_assert_contains(out, "\n  pid 10, tid 11\n    aten::mul ");
	line = tu_line_with(out, "open for ");
	tu_assert_contains(line, "aten::mul");
	tu_assert_contains(line, "open for 20.000 µs");
	assert_true(strstr(out, line) < table);
	free(line);
	/* aten::mul: 20 µs on one thread plus 5.5 µs on another. */
	line = tu_line_with(table, "  aten::mul");
	tu_assert_contains(line, "25.500 µs");
	tu_assert_contains(line, "12.750 µs");
	free(line);
	free(out);

	yajl_val v = summary_json(path);
	yajl_val step = name_row(v, "user_annotation", "top_by_self", "step");
	assert_non_null(step);
	assert_int_equal((long long)tu_get_num(step, "total_ns"), 100000);
	assert_int_equal((long long)tu_get_num(step, "self_ns"), 50000);
	yajl_val add = name_row(v, "cpu_op", "top_by_self", "aten::add");
	assert_int_equal((long long)tu_get_num(add, "self_ns"), 30000);
	yajl_tree_free(v);
	tu_rmrf(dir);
	free(dir);
}

/* Times never longer than the 150 µs window: "outer" nests in itself on
 * thread 1 (0-100 holding 10-60 holding leaf 20-30) and runs again on
 * thread 2 (50-150); two start/end ranges overlap on strobe's async rows.
 * Summed, outer is 250 µs and batch in flight 170 µs; shown, each is the
 * union of its ranges (150 µs), outer's self the union of its self
 * stretches [0,20) and [30,150): 140 µs. The sums stay in the JSON. */
static void test_times_within_the_window(void **state)
{
	(void)state;
	static const char trace[] =
	    "{\"traceEvents\": [\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"outer\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 0, \"dur\": 100},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"outer\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 10, \"dur\": 50},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"leaf\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 20, \"dur\": 10},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"outer\", \"pid\": 1, \"tid\": 2,"
	    " \"ts\": 50, \"dur\": 100},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"batch in flight\", \"pid\": 1,"
	    " \"tid\": 281474976710656, \"ts\": 0, \"dur\": 120},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"batch in flight\", \"pid\": 1,"
	    " \"tid\": 281474976710657, \"ts\": 100, \"dur\": 50},\n"
	    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 281474976710656,"
	    " \"args\": {\"name\": \"start/end ranges\"}},\n"
	    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 281474976710657,"
	    " \"args\": {\"name\": \"start/end ranges (2)\"}}\n"
	    "]}\n";
	char *dir = strdup(tu_mkdtemp()), path[4096];
	snprintf(path, sizeof(path), "%s/wall.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);

	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	tu_assert_line(out, "  outer ", "150.000 µs 140.000 µs");
	tu_assert_line(out, "  user_annotation (start/end ranges) ", "2       1 150.000 µs 150.000 µs");
	tu_assert_line(out, "  batch in flight ", "2 150.000 µs 150.000 µs  85.000 µs 120.000 µs");
	tu_assert_line(out, "  user_annotation  ", "4       2 150.000 µs 150.000 µs");
	const char *sums[] = {"250.000 µs", "190.000 µs", "260.000 µs", "170.000 µs"};
	for (size_t i = 0; i < sizeof(sums) / sizeof(sums[0]); i++)
		if (strstr(out, sums[i]))
			fail_msg("a sum (%s) is shown:\n%s", sums[i], out);
	free(out);

	yajl_val v = summary_json(path);
	yajl_val outer = name_row(v, "user_annotation", "top_by_total", "outer");
	assert_non_null(outer);
	assert_int_equal((long long)tu_get_num(outer, "wall_ns"), 150000);
	assert_int_equal((long long)tu_get_num(outer, "self_wall_ns"), 140000);
	assert_int_equal((long long)tu_get_num(outer, "total_ns"), 250000);
	assert_int_equal((long long)tu_get_num(outer, "self_ns"), 190000);
	assert_null(name_row(v, "user_annotation", "top_by_total", "batch in flight"));
	yajl_val batch = name_row(v, "user_annotation (start/end ranges)", "top_by_total", "batch in flight");
	assert_non_null(batch);
	assert_int_equal((long long)tu_get_num(batch, "wall_ns"), 150000);
	assert_int_equal((long long)tu_get_num(batch, "total_ns"), 170000);
	yajl_tree_free(v);
	tu_rmrf(dir);
	free(dir);
}

/* Self stretches out of start order. On thread 1, K (0-10) holds C (2-4);
 * D, also named K (3-8), starts inside C and outlives it, and holds E
 * (5-6); F (9-9.5) follows. K's self stretches come as [0,2), [3,5),
 * [6,8), then the outer K's [4,9) once D is done, then [9.5,10); thread
 * 2 adds a K at 1-2.5. Merged in start order, K's self wall time is
 * [0,2.5) + [3,9) + [9.5,10) = 9 µs and its wall time 10 µs; the
 * category's self stretches cover the whole 10 µs. */
static void test_self_stretches_out_of_order(void **state)
{
	(void)state;
	static const char trace[] =
	    "{\"traceEvents\": [\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"K\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 0, \"dur\": 10},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"C\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 2, \"dur\": 2},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"K\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 3, \"dur\": 5},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"E\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 5, \"dur\": 1},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"F\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 9, \"dur\": 0.5},\n"
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"K\", \"pid\": 1, \"tid\": 2,"
	    " \"ts\": 1, \"dur\": 1.5}\n"
	    "]}\n";
	char *dir = strdup(tu_mkdtemp()), path[4096];
	snprintf(path, sizeof(path), "%s/order.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);
	yajl_val v = summary_json(path);
	yajl_val k = name_row(v, "user_annotation", "top_by_total", "K");
	assert_non_null(k);
	assert_int_equal((long long)tu_get_num(k, "wall_ns"), 10000);
	assert_int_equal((long long)tu_get_num(k, "self_wall_ns"), 9000);
	yajl_val d = name_row(v, "user_annotation", "top_by_total", "C");
	assert_int_equal((long long)tu_get_num(d, "self_wall_ns"), 1000); /* [2,3) */
	yajl_val cats = tu_get(v, "categories");
	yajl_val cat = NULL;
	for (size_t i = 0; i < cats->u.array.len && !cat; i++)
		if (!strcmp(tu_get_str(cats->u.array.values[i], "cat"), "user_annotation"))
			cat = cats->u.array.values[i];
	assert_non_null(cat);
	assert_int_equal((long long)tu_get_num(cat, "wall_ns"), 10000);
	assert_int_equal((long long)tu_get_num(cat, "self_wall_ns"), 10000);
	yajl_tree_free(v);
	tu_rmrf(dir);
	free(dir);
}

static void test_instants_counters_and_accounting(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4096];
	write_nested(dir, path, sizeof(path));

	yajl_val v = summary_json(path);
	yajl_val counters = tu_get(v, "counters");
	assert_int_equal(counters->u.array.len, 1);
	yajl_val mem = counters->u.array.values[0];
	assert_string_equal(tu_get_str(mem, "name"), "mem");
	assert_string_equal(tu_get_str(mem, "key"), "bytes");
	assert_int_equal((int)tu_get_num(mem, "count"), 3);
	assert_int_equal((int)tu_get_num(mem, "min"), 50);
	assert_int_equal((int)tu_get_num(mem, "max"), 300);
	assert_int_equal((int)tu_get_num(mem, "last"), 50); /* the latest ts, not the last line */
	yajl_val inst = tu_get(v, "instants")->u.array.values[0];
	assert_string_equal(tu_get_str(inst, "name"), "unknown");
	assert_int_equal((int)tu_get_num(inst, "count"), 1);

	yajl_val acc = tu_get(v, "accounting");
	yajl_val meta = tu_get(acc, "strobe");
	assert_int_equal((int)tu_get_num(meta, "dropped_events"), 3);
	assert_int_equal((int)tu_get_num(meta, "unfinished_ranges"), 1);
	assert_int_equal((int)tu_get_num(meta, "truncated_names"), 2);
	assert_int_equal((int)tu_get_num(acc, "unfinished_events"), 1);
	assert_int_equal((int)tu_get_num(acc, "unknown_names"), 1);
	yajl_tree_free(v);

	char *out = NULL;
	assert_int_equal(summary(path, 0, &out), 0);
	tu_assert_line(out, "dropped_events", "3");
	tu_assert_line(out, "mem (bytes)", "300");
	free(out);
	tu_rmrf(dir);
	free(dir);
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

/* Output past the first line, which names the file and its compression. */
/* After the "file" line (the open ranges, when any, come before it). */
static const char *body(const char *out)
{
	const char *file = strncmp(out, "file ", 5) ? strstr(out, "\nfile ") : out;
	assert_non_null(file);
	const char *nl = strchr(file + 1, '\n');
	assert_non_null(nl);
	return nl + 1;
}

static void test_compressed_same_output(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), plain[4096], gz[4096], zst[4096];
	write_nested(dir, plain, sizeof(plain));
	/* Names that do not say .gz or .zst: the reader goes by content. */
	snprintf(gz, sizeof(gz), "%s/nested-gzip.json", dir);
	snprintf(zst, sizeof(zst), "%s/nested-zstd.json", dir);

	gzFile g = gzopen(gz, "wb");
	assert_non_null(g);
	assert_int_equal(gzwrite(g, nested_trace, sizeof(nested_trace) - 1), (int)sizeof(nested_trace) - 1);
	assert_int_equal(gzclose(g), Z_OK);
	size_t cap = ZSTD_compressBound(sizeof(nested_trace));
	char *z = malloc(cap);
	size_t zn = ZSTD_compress(z, cap, nested_trace, sizeof(nested_trace) - 1, 3);
	assert_false(ZSTD_isError(zn));
	write_bytes(zst, z, zn);
	free(z);

	char *o_plain = NULL, *o_gz = NULL, *o_zst = NULL;
	assert_int_equal(summary(plain, 0, &o_plain), 0);
	assert_int_equal(summary(gz, 0, &o_gz), 0);
	assert_int_equal(summary(zst, 0, &o_zst), 0);
	tu_assert_contains(o_gz, "gzip");
	tu_assert_contains(o_zst, "zstd");
	assert_string_equal(body(o_plain), body(o_gz));
	assert_string_equal(body(o_plain), body(o_zst));
	free(o_plain);
	free(o_gz);
	free(o_zst);

	yajl_val v = summary_json(zst);
	assert_string_equal(tu_get_str(v, "compression"), "zstd");
	assert_int_equal(
	    (long long)tu_get_num(name_row(v, "user_annotation", "top_by_self", "step"), "self_ns"), 50000);
	yajl_tree_free(v);
	tu_rmrf(dir);
	free(dir);
}

/* Exit 1, nothing on stdout, and a message on stderr that says what is wrong. */
static void expect_failure(const char *args, const char *msg1, const char *msg2)
{
	char *out = NULL, cmd[4096];
	snprintf(cmd, sizeof(cmd), "%s 2>/dev/null", args);
	assert_int_equal(summary(cmd, 0, &out), 1);
	assert_string_equal(out, "");
	free(out);
	assert_int_equal(summary(args, 1, &out), 1);
	tu_assert_contains(out, "strobe: ");
	tu_assert_contains(out, msg1);
	if (msg2)
		tu_assert_contains(out, msg2);
	free(out);
}

static void test_bad_files(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4096];

	snprintf(path, sizeof(path), "%s/missing.json", dir);
	expect_failure(path, "missing.json", "No such file");

	/* The fixture cut at 5000 bytes, in the middle of its events. */
	size_t len;
	char *text = tu_read_file(FIXTURE, &len);
	assert_non_null(text);
	assert_true(len > 5000);
	text[5000] = 0;
	snprintf(path, sizeof(path), "%s/cut.json", dir);
	assert_int_equal(tu_write_file(path, text), 0);
	free(text);
	expect_failure(path, "truncated", "byte 5000");

	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	assert_int_equal(tu_write_file(path, "these are my notes, not a trace\n"), 0);
	expect_failure(path, "notes.txt", "not JSON");

	snprintf(path, sizeof(path), "%s/other.json", dir);
	assert_int_equal(tu_write_file(path, "{\"name\": \"package\", \"version\": 1}\n"), 0);
	expect_failure(path, "not a trace", "traceEvents");

	/* A gzip header followed by garbage. */
	snprintf(path, sizeof(path), "%s/bad.json.gz", dir);
	write_bytes(path, "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03garbage-garbage", 24);
	expect_failure(path, "gzip", NULL);

	expect_failure(dir, "Is a directory", NULL);
	tu_rmrf(dir);
	free(dir);
}

/* Deeper nesting than the reader's repair pass tracks: valid JSON is read
 * as written, and a file of brackets alone is an error, not a crash. */
static void test_deep_nesting(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp(), path[1200];
	snprintf(path, sizeof(path), "%s/deep.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"deep\", \"pid\": 1, "
	           "\"tid\": 1, \"ts\": 1, \"dur\": 2, \"args\": {\"nest\": ");
	for (int i = 0; i < 5000; i++)
		fputc('[', f);
	fputs("\"a, \\\"b\\\"\"", f);
	for (int i = 0; i < 5000; i++)
		fputc(']', f);
	fputs("}}]}\n", f);
	fclose(f);
	char args[1400], *out = NULL;
	snprintf(args, sizeof(args), "--json '%s'", path);
	assert_int_equal(summary(args, 1, &out), 0);
	tu_assert_contains(out, "\"deep\"");
	free(out);

	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 200000; i++)
		fputc('[', f);
	fputs("\"a\"", f);
	fclose(f);
	snprintf(args, sizeof(args), "'%s'", path);
	assert_int_equal(summary(args, 1, &out), 1);
	tu_assert_contains(out, "strobe: ");
	free(out);
	tu_rmrf(dir);
}

static void test_usage_errors(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(summary("", 1, &out), 2);
	tu_assert_contains(out, "usage: strobe summary");
	free(out);
	assert_int_equal(summary("--frobnicate " FIXTURE, 1, &out), 2);
	tu_assert_contains(out, "--frobnicate");
	free(out);
	assert_int_equal(summary("--top lots " FIXTURE, 1, &out), 2);
	tu_assert_contains(out, "lots");
	free(out);
	assert_int_equal(summary(FIXTURE " " FIXTURE, 1, &out), 2);
	free(out);

	assert_int_equal(summary("--help", 0, &out), 0);
	tu_assert_contains(out, "--top N");
	tu_assert_contains(out, "--json");
	tu_assert_contains(out, "examples:");
	free(out);
}

static void test_top_limits_rows(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4096];
	/* Five kernels on five streams, 50 down to 10 µs. */
	char text[4096];
	int n = snprintf(text, sizeof(text), "{\"traceEvents\": [");
	for (int i = 0; i < 5; i++)
		n += snprintf(
		    text + n, sizeof(text) - (size_t)n,
		    "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_%d\", \"pid\": 0, \"tid\": %d,"
		    " \"ts\": 100.0, \"dur\": %d.0}",
		    i ? "," : "", i, i + 7, 50 - 10 * i);
	snprintf(text + n, sizeof(text) - (size_t)n, "]}");
	snprintf(path, sizeof(path), "%s/kernels.json", dir);
	assert_int_equal(tu_write_file(path, text), 0);

	char args[4200], *out = NULL;
	snprintf(args, sizeof(args), "--top 2 %s", path);
	assert_int_equal(summary(args, 0, &out), 0);
	tu_assert_contains(out, "gemm_0");
	tu_assert_contains(out, "gemm_1");
	assert_null(strstr(out, "gemm_2"));
	tu_assert_contains(out, "3 more");
	free(out);

	assert_int_equal(summary(path, 0, &out), 0);
	tu_assert_contains(out, "gemm_4");
	free(out);

	yajl_val v = summary_json(args);
	yajl_val cat = tu_get(v, "categories")->u.array.values[0];
	assert_int_equal(tu_get(cat, "top_by_total")->u.array.len, 2);
	assert_int_equal((int)tu_get_num(cat, "names"), 5);
	assert_int_equal((long long)tu_get_num(cat, "total_ns"), 150000);
	yajl_tree_free(v);
	tu_rmrf(dir);
	free(dir);
}

/* An empty event list is a trace with nothing in it, not an error; "-"
 * reads the trace from stdin. */
static void test_empty_trace_and_stdin(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(summary("- <<'EOF'\n{\"traceEvents\": []}\nEOF", 0, &out), 0);
	tu_assert_contains(out, "events    0");
	tu_assert_contains(out, "span      none");
	free(out);

	char cmd[4096];
	snprintf(cmd, sizeof(cmd), "--json - < '%s'", FIXTURE);
	assert_int_equal(summary(cmd, 0, &out), 0);
	yajl_val v = tu_parse_json(out);
	assert_non_null(v);
	assert_int_equal((long long)tu_get_num(name_row(v, "cpu_op", "top_by_total", "aten::mm"), "total_ns"),
	                 50234);
	yajl_tree_free(v);
	free(out);
}

/* Times at the ends of int64 (as strobe_record accepts them): the span,
 * busy time, gaps and offsets are held at the largest duration, never
 * wrapped to a negative one. */
/* Progress goes to stderr, only when asked for (or on a terminal), and
 * leaves the report as it is; --quiet silences it. A trace of 200 000
 * events crosses the reader's first progress point. */
static void test_progress(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp(), path[4096], args[4200];
	snprintf(path, sizeof(path), "%s/many.json", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"traceEvents\": [\n", f);
	for (int i = 0; i < 200000; i++)
		fprintf(f,
		        "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op%d\", \"pid\": 1, \"tid\": 1, "
		        "\"ts\": %d, \"dur\": 1}",
		        i ? ",\n" : "", i % 7, i * 2);
	fputs("]}\n", f);
	fclose(f);
	char *plain = NULL, *loud = NULL, *quiet = NULL;
	snprintf(args, sizeof(args), "--json '%s' 2>/dev/null", path);
	assert_int_equal(summary(args, 0, &plain), 0);
	snprintf(args, sizeof(args), "--progress --json '%s'", path);
	assert_int_equal(summary(args, 1, &loud), 0);
	tu_assert_contains(loud, "strobe: summary: reading ");
	tu_assert_contains(loud, " MB (");
	tu_assert_contains(loud, "strobe: summary: read ");
	tu_assert_contains(loud, "0.20 M events; analysing...");
	/* stdout is the report alone: the same bytes after the progress line */
	const char *report = strstr(loud, "analysing...");
	report = report ? strchr(report, '\n') : NULL;
	assert_non_null(report);
	assert_string_equal(report + 1, plain);
	snprintf(args, sizeof(args), "--progress -q --json '%s'", path);
	assert_int_equal(summary(args, 1, &quiet), 0);
	assert_string_equal(quiet, plain);
	free(plain);
	free(loud);
	free(quiet);
	tu_rmrf(dir);
}

static void test_extreme_times(void **state)
{
	(void)state;
	static const char trace[] =
	    "{\"traceEvents\": [\n"
	    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 7,"
	    " \"ts\": -9000000000000000, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7}},\n"
	    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k2\", \"pid\": 0, \"tid\": 7,"
	    " \"ts\": 9000000000000000, \"dur\": 9000000000000000, \"args\": {\"device\": 0, \"stream\": "
	    "7}},\n"
	    "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD\", \"pid\": 0, \"tid\": 7,"
	    " \"ts\": -9223372036854775, \"dur\": 1, \"args\": {\"device\": 0, \"stream\": 7}},\n"
	    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 1, \"tid\": 1,"
	    " \"ts\": 9223372036854775, \"dur\": 5}]}\n";
	char *dir = tu_mkdtemp(), path[4096], args[4200];
	snprintf(path, sizeof(path), "%s/extreme.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);
	snprintf(args, sizeof(args), "'%s'", path);
	char *out = NULL;
	assert_int_equal(summary(args, 0, &out), 0);
	tu_assert_contains(out, "span      9223372036.855 s");
	tu_assert_contains(out, "longest gaps: 9223372036.855 s");
	tu_assert_contains(out, "last work end +9223372036.855 s");
	assert_null(strstr(out, "+-"));
	free(out);

	/* A launch 18e18 ns before its kernel; two ops whose self times add
	 * past int64. */
	static const char far[] =
	    "{\"traceEvents\": [\n"
	    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7,"
	    " \"ts\": 9000000000000000, \"dur\": 5, \"args\": {\"device\": 0, \"stream\": 7, "
	    "\"correlation\": 1}},\n"
	    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1, \"tid\": "
	    "1,"
	    " \"ts\": -9000000000000000, \"dur\": 5, \"args\": {\"correlation\": 1}},\n"
	    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op1\", \"pid\": 1, \"tid\": 2,"
	    " \"ts\": -9000000000000000, \"dur\": 9000000000000000},\n"
	    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op2\", \"pid\": 1, \"tid\": 3,"
	    " \"ts\": -9000000000000000, \"dur\": 9000000000000000}]}\n";
	assert_int_equal(tu_write_file(path, far), 0);
	yajl_val v = summary_json(args);
	yajl_val lat = tu_get(v, "launch_latency");
	assert_true(lat && YAJL_IS_ARRAY(lat) && lat->u.array.len == 1);
	assert_true(tu_get_num(lat->u.array.values[0], "p50_ns") > 9e18);
	yajl_val cats = tu_get(v, "categories");
	bool seen = false;
	for (size_t i = 0; cats && i < cats->u.array.len; i++)
		if (!strcmp(tu_get_str(cats->u.array.values[i], "cat"), "cpu_op")) {
			assert_true(tu_get_num(cats->u.array.values[i], "self_ns") > 9e18);
			seen = true;
		}
	assert_true(seen);
	yajl_tree_free(v);
	tu_rmrf(dir);
}

/* Traces whose sums and spans leave int64 (found with UBSan over random
 * traces of times and durations near its ends): every command runs to the
 * end, the times held at int64's ends. The ASan + UBSan build aborts on
 * an overflow, which fails the test there. */
static void test_sums_at_int64_ends(void **state)
{
	(void)state;
	static const char *const traces[] = {
	    /* self time: a parent covered past int64 */
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", "
	    "\"name\": \"nccl:all_reduce\", \"pid\": 0, \"tid\": 7, \"ts\": -4611686018427387, "
	    "\"dur\": 9223372036854775.807, \"args\": {\"correlation\": 5, \"stream\": 7, "
	    "\"device\": 1}}, {\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset\", "
	    "\"pid\": 0, \"tid\": 7, \"ts\": 0, \"dur\": 9223372036854775.807, "
	    "\"args\": {\"correlation\": 5, \"stream\": 9223372036854775807, \"device\": 0}}, "
	    "{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset\", \"pid\": 0, "
	    "\"tid\": 7, \"ts\": -9223372036854775, \"dur\": 9223372036854775.807, "
	    "\"args\": {\"correlation\": 6, \"stream\": 9223372036854775807, \"device\": 0}}, "
	    "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ann\", \"pid\": 0, "
	    "\"tid\": 8, \"ts\": -4611686018427387, \"dur\": 1000, \"args\": {\"stream\": 7, "
	    "\"device\": 0}}, {\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Stream Sync\", "
	    "\"pid\": 0, \"tid\": 8, \"ts\": 200, \"dur\": 4611686018427387, "
	    "\"args\": {\"correlation\": 6, \"stream\": 7, \"device\": 0, \"wait_on_stream\": 8, "
	    "\"event\": 1}}, {\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset\", "
	    "\"pid\": 0, \"tid\": 8, \"ts\": -4611686018427387, \"dur\": 9223372036854775, "
	    "\"args\": {\"correlation\": 5, \"stream\": -9223372036854775808, \"device\": 0}}, "
	    "{\"ph\": \"X\", \"cat\": \"gpu_user_annotation\", \"name\": \"ann\", \"pid\": 0, "
	    "\"tid\": 7, \"ts\": 200, \"dur\": 9223372036854775, \"args\": {\"stream\": 7, "
	    "\"device\": 0}}]}",
	    /* idle time: host, kernel and other waits added */
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"gpu_memset\", \"name\": \"Memset\", "
	    "\"pid\": 0, \"tid\": 7, \"ts\": 9223372036854775.807, \"dur\": -9223372036854775, "
	    "\"args\": {\"correlation\": 7, \"stream\": -9223372036854775808, \"device\": 0}}, "
	    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", "
	    "\"pid\": 1, \"tid\": 3, \"ts\": 9223372036854775, \"dur\": 9223372036854775.807, "
	    "\"args\": {\"correlation\": 7}}, {\"ph\": \"X\", \"cat\": \"gpu_memset\", "
	    "\"name\": \"Memset\", \"pid\": 0, \"tid\": 8, \"ts\": -4611686018427387, "
	    "\"dur\": -1, \"args\": {\"correlation\": 4294967296, "
	    "\"stream\": -9223372036854775808, \"device\": 0}}, {\"ph\": \"X\", "
	    "\"cat\": \"kernel\", \"name\": \"nccl:all_reduce\", \"pid\": 0, \"tid\": 8, "
	    "\"ts\": -9223372036854775, \"dur\": -1, "
	    "\"args\": {\"correlation\": 18446744073709551615, \"stream\": -9223372036854775808, "
	    "\"device\": 0}}]}",
	    /* the critical path: its time by class */
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", "
	    "\"pid\": 1, \"tid\": 3, \"ts\": -1, \"dur\": 4611686018427387, \"args\": {}}, "
	    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#0\", "
	    "\"pid\": 1, \"tid\": 1, \"ts\": -1, \"dur\": 9223372036854775.807, \"args\": {}}, "
	    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, "
	    "\"tid\": 3, \"ts\": 1, \"dur\": 9223372036854775.807, \"args\": {}}]}",
	    /* the report overview: a row's stretches */
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cuda_driver\", "
	    "\"name\": \"cuLaunchKernel\", \"pid\": 2, \"tid\": 1, \"ts\": 9223372036854775.807, "
	    "\"dur\": -9223372036854775, \"args\": {\"correlation\": 7}}, {\"ph\": \"X\", "
	    "\"cat\": \"kernel\", \"name\": \"k1\", \"pid\": 0, \"tid\": 7, "
	    "\"ts\": -4611686018427387, \"dur\": -1, \"args\": {\"correlation\": -1, "
	    "\"stream\": 2147483648, \"device\": 0}}, {\"ph\": \"X\", \"cat\": \"cuda_runtime\", "
	    "\"name\": \"cudaStreamSynchronize\", \"pid\": 2, \"tid\": 1, \"ts\": 0, "
	    "\"dur\": 9223372036854775.807, \"args\": {\"correlation\": 6}}]}",
	    /* wall time: a name's stretches */
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cuda_driver\", "
	    "\"name\": \"cuLaunchKernel\", \"pid\": 1, \"tid\": 1, \"ts\": -1, "
	    "\"dur\": 9223372036854775.807, \"args\": {\"correlation\": 6}}, {\"ph\": \"X\", "
	    "\"cat\": \"cuda_driver\", \"name\": \"cuLaunchKernel\", \"pid\": 2, \"tid\": 3, "
	    "\"ts\": -9223372036854775, \"dur\": 9223372036854775, "
	    "\"args\": {\"correlation\": -1}}, {\"ph\": \"X\", \"cat\": \"cuda_driver\", "
	    "\"name\": \"cuLaunchKernel\", \"pid\": 2, \"tid\": 1, \"ts\": 9223372036854775, "
	    "\"dur\": 4611686018427387, \"args\": {\"correlation\": 4294967296}}]}",
	    /* wall time: a union's last stretch */
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cuda_sync\", "
	    "\"name\": \"Stream Sync\", \"pid\": 0, \"tid\": 8, \"ts\": -1, \"dur\": 1000, "
	    "\"args\": {\"correlation\": 6, \"stream\": -9223372036854775808, \"device\": 0, "
	    "\"wait_on_stream\": 7, \"event\": -1}}, {\"ph\": \"X\", \"cat\": \"cuda_sync\", "
	    "\"name\": \"Stream Sync\", \"pid\": 0, \"tid\": 8, \"ts\": 0, "
	    "\"dur\": 9223372036854775.807, \"args\": {\"correlation\": 6, \"stream\": 7, "
	    "\"device\": 0, \"wait_on_stream\": 7, \"event\": -1}}]}",
	    /* strobe diff: a step's busy time on two devices added */
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cuda_sync\", "
	    "\"name\": \"Stream Sync\", \"pid\": 3, \"tid\": 7, \"ts\": 4611686018427387, "
	    "\"dur\": 9223372036854775.807, \"args\": {\"correlation\": 5, "
	    "\"stream\": 9223372036854775807, \"device\": 0, \"wait_on_stream\": 8, "
	    "\"event\": 1}}, {\"ph\": \"X\", \"cat\": \"cuda_sync\", \"name\": \"Event Sync\", "
	    "\"pid\": 0, \"tid\": 7, \"ts\": 4611686018427387, \"dur\": 9223372036854775, "
	    "\"args\": {\"correlation\": 4294967296, \"stream\": 2147483648, \"device\": 0, "
	    "\"wait_on_stream\": 8, \"event\": 1}}, {\"ph\": \"X\", "
	    "\"cat\": \"user_annotation\", \"name\": \"ProfilerStep#2\", \"pid\": 1, \"tid\": 3, "
	    "\"ts\": 1, \"dur\": 9223372036854775.807, \"args\": {}}]}",
	};
	enum { N = sizeof(traces) / sizeof(traces[0]) };
	char *dir = tu_mkdtemp(), path[N][4096], args[8400];
	for (size_t i = 0; i < N; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/ends%zu.json", dir, i);
		assert_int_equal(tu_write_file(path[i], traces[i]), 0);
	}
	for (size_t i = 0; i < N; i++) {
		snprintf(args, sizeof(args), "'%s'", path[i]);
		yajl_val v = summary_json(args);
		assert_true(tu_get_num(v, "events") > 0);
		yajl_tree_free(v);
		char *out = NULL;
		assert_int_equal(summary(args, 0, &out), 0);
		tu_assert_contains(out, "events");
		free(out);
		snprintf(args, sizeof(args), "-q -o '%s/ends%zu.html' '%s'", dir, i, path[i]);
		assert_int_equal(tu_strobe("report", args, 0, NULL), 0);
		snprintf(args, sizeof(args), "'%s' '%s'", path[i], path[(i + 1) % N]);
		out = NULL;
		assert_int_equal(tu_strobe("diff", args, 0, &out), 0);
		assert_true(out && *out);
		free(out);
	}
	tu_rmrf(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_libkineto_fixture),
	    cmocka_unit_test(test_self_time_nested),
	    cmocka_unit_test(test_times_within_the_window),
	    cmocka_unit_test(test_self_stretches_out_of_order),
	    cmocka_unit_test(test_instants_counters_and_accounting),
	    cmocka_unit_test(test_compressed_same_output),
	    cmocka_unit_test(test_bad_files),
	    cmocka_unit_test(test_deep_nesting),
	    cmocka_unit_test(test_usage_errors),
	    cmocka_unit_test(test_top_limits_rows),
	    cmocka_unit_test(test_empty_trace_and_stdin),
	    cmocka_unit_test(test_extreme_times),
	    cmocka_unit_test(test_sums_at_int64_ends),
	    cmocka_unit_test(test_progress),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

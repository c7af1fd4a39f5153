/* The strobe commands that read traces (summary, report, convert, merge)
 * read Perfetto files too. One GPU trace (ops, ranges, kernels on two
 * streams with their launches, a copy, counters), saved by the library as
 * JSON and as Perfetto: `strobe summary --json` finds the same kernels,
 * copies, launch latencies, CPU self times, device busy time and idle gaps
 * in both; convert turns the Perfetto file back into JSON with the same
 * events; merge and report take it; a damaged file gets an error naming the
 * byte. */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>

#define LAUNCH  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define MEMCPY  CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020
#define KERNELS 60

static char json_path[1200], pf_path[1200];

static void make_trace(void)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	uint64_t t = ct_stamp_after(0, 1000);
	strobe_range_push("step");
	for (int i = 0; i < KERNELS; i++) {
		strobe_op_push(i % 2 ? "aten::mm" : "aten::relu");
		uint64_t a0 = ct_stamp_after(t, 500), a1 = ct_stamp_after(a0, 300);
		uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, LAUNCH, a0, a1);
		strobe_op_pop();
		uint64_t k0 = ct_stamp_after(a1, 200 + 100 * (i % 3));
		t = ct_stamp_after(k0, 1000 + 500 * (i % 4));
		CT_QUEUE(ct_kernel(corr, 0, 7 + (i % 2), k0, t, i % 2 ? "gemm_kernel" : "relu_kernel"));
		strobe_counter("queue depth", (double)(i % 5));
	}
	uint64_t m0 = ct_stamp_after(t, 500), m1 = ct_stamp_after(m0, 300);
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, MEMCPY, m0, m1);
	uint64_t c0 = ct_stamp_after(m1, 200), c1 = ct_stamp_after(c0, 4000);
	CUpti_ActivityMemcpy6 m = {.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	                           .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
	                           .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
	                           .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	                           .bytes = 8 << 20,
	                           .start = c0,
	                           .end = c1,
	                           .streamId = 7,
	                           .contextId = 100,
	                           .correlationId = corr};
	CT_QUEUE(m);
	strobe_range_pop();
	ct_stamp_after(c1, 1000);
	strobe_trace *tr = NULL;
	assert_int_equal(strobe_stop(&tr), 0);
	snprintf(json_path, sizeof(json_path), "%s/gpu.json", tu_dir);
	snprintf(pf_path, sizeof(pf_path), "%s/gpu.pftrace", tu_dir);
	assert_int_equal(strobe_trace_save(tr, json_path), 0);
	assert_int_equal(strobe_trace_save(tr, pf_path), 0);
	strobe_trace_destroy(tr);
}

static void copy_file(const char *from, const char *to)
{
	size_t len = 0;
	char *d = tu_read_file(from, &len);
	assert_non_null(d);
	FILE *f = fopen(to, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(d, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(d);
}

/* Runs "strobe cmd args", which must succeed. */
static void strobe_ok(const char *cmd, const char *args)
{
	char *msg = NULL;
	int rc = tu_strobe(cmd, args, 1, &msg);
	if (rc)
		fail_msg("strobe %s %s: %d: %s", cmd, args, rc, msg ? msg : "");
	free(msg);
}

static yajl_val summary_of(const char *path)
{
	char args[1400], *out = NULL;
	snprintf(args, sizeof(args), "--json --top 0 '%s'", path);
	int rc = tu_strobe("summary", args, 0, &out);
	if (rc)
		fail_msg("strobe summary %s: %d\n%s", path, rc, out ? out : "");
	yajl_val v = tu_parse_json(out);
	if (!v)
		fail_msg("summary of %s is not JSON:\n%s", path, out);
	free(out);
	return v;
}

/* Members that differ by nature: the file itself, and absolute times
 * (Perfetto's count from 0, strobe's JSON from baseTimeNanoseconds). The
 * Perfetto file also names each of its rows, so its "M" count is higher,
 * and has no "Iteration Start" instant (the JSON's libkineto marker). */
static bool skipped(const char *key)
{
	static const char *const keys[] = {"file",    "format",   "file_bytes",   "json_bytes",  "events",
	                                   "by_ph",   "by_cat",   "first_ts_ns",  "last_end_ns", "at_ns",
	                                   "longest", "instants", "instant_names"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

static void same_tree(yajl_val a, yajl_val b, const char *path)
{
	if (a->type != b->type)
		fail_msg("%s: JSON has type %d, Perfetto %d", path, a->type, b->type);
	char sub[512];
	switch (a->type) {
	case yajl_t_object:
		if (YAJL_GET_OBJECT(a)->len != YAJL_GET_OBJECT(b)->len)
			fail_msg("%s: %zu members in JSON's summary, %zu in Perfetto's", path,
			         YAJL_GET_OBJECT(a)->len, YAJL_GET_OBJECT(b)->len);
		for (size_t i = 0; i < YAJL_GET_OBJECT(a)->len; i++) {
			const char *k = YAJL_GET_OBJECT(a)->keys[i];
			if (skipped(k))
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, k);
			yajl_val bv = tu_get(b, k);
			if (!bv)
				fail_msg("%s: missing from Perfetto's summary", sub);
			same_tree(YAJL_GET_OBJECT(a)->values[i], bv, sub);
		}
		break;
	case yajl_t_array:
		if (YAJL_GET_ARRAY(a)->len != YAJL_GET_ARRAY(b)->len)
			fail_msg("%s: %zu items in JSON's summary, %zu in Perfetto's", path,
			         YAJL_GET_ARRAY(a)->len, YAJL_GET_ARRAY(b)->len);
		for (size_t i = 0; i < YAJL_GET_ARRAY(a)->len; i++) {
			snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
			same_tree(YAJL_GET_ARRAY(a)->values[i], YAJL_GET_ARRAY(b)->values[i], sub);
		}
		break;
	case yajl_t_string: {
		const char *x = a->u.string, *y = b->u.string;
		if (strcmp(x, y))
			fail_msg("%s: \"%s\" in JSON's summary, \"%s\" in Perfetto's", path, x, y);
		break;
	}
	case yajl_t_number:
		if (YAJL_GET_DOUBLE(a) != YAJL_GET_DOUBLE(b))
			fail_msg("%s: %.17g in JSON's summary, %.17g in Perfetto's", path, YAJL_GET_DOUBLE(a),
			         YAJL_GET_DOUBLE(b));
		break;
	default:
		break;
	}
}

static void test_summary_same_as_json(void **state)
{
	(void)state;
	make_trace();
	yajl_val a = summary_of(json_path), b = summary_of(pf_path);
	/* What the trace holds, to know the comparison is not of nothing. */
	yajl_val kernels = tu_get(a, "kernels");
	assert_true(kernels && YAJL_IS_ARRAY(kernels) && YAJL_GET_ARRAY(kernels)->len == 2);
	assert_true(tu_get_num(YAJL_GET_ARRAY(kernels)->values[0], "count") == KERNELS / 2);
	yajl_val lat = YAJL_GET_ARRAY(tu_get(a, "launch_latency"))->values[0];
	assert_true(tu_get_num(lat, "matched") == KERNELS);
	assert_true(YAJL_GET_ARRAY(tu_get(a, "memcpy"))->len == 1);
	same_tree(a, b, "");
	assert_string_equal(tu_get_str(a, "format"), "json");
	assert_string_equal(tu_get_str(b, "format"), "perfetto");
	yajl_tree_free(a);
	yajl_tree_free(b);
}

static void test_convert_back_to_json(void **state)
{
	(void)state;
	make_trace();
	char out[1300], args[2800];
	snprintf(out, sizeof(out), "%s/back.json", tu_dir);
	snprintf(args, sizeof(args), "'%s' '%s'", pf_path, out);
	strobe_ok("convert", args);
	yajl_val orig = tu_load_trace(json_path), back = tu_load_trace(out);
	static const char *const cats[] = {"kernel", "gpu_memcpy",      "cuda_runtime",
	                                   "cpu_op", "user_annotation", "gpu_user_annotation"};
	for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++) {
		size_t n = tu_count(orig, "X", cats[i], NULL);
		assert_true(n > 0);
		if (tu_count(back, "X", cats[i], NULL) != n)
			fail_msg("%s: %zu events in the JSON, %zu after Perfetto and back", cats[i], n,
			         tu_count(back, "X", cats[i], NULL));
	}
	assert_int_equal(tu_count(back, "s", "ac2g", NULL), tu_count(orig, "s", "ac2g", NULL));
	assert_int_equal(tu_count(back, "f", "ac2g", NULL), tu_count(orig, "f", "ac2g", NULL));
	assert_int_equal(tu_count(back, "C", NULL, NULL), tu_count(orig, "C", NULL, NULL));
	/* A kernel keeps its name, row and args. */
	yajl_val k = tu_find(back, "X", "kernel", "gemm_kernel");
	assert_non_null(k);
	assert_true(tu_get_num(k, "pid") == 0);
	assert_true(tu_get_num(k, "tid") == 8);
	assert_true(tu_get_num(tu_get(k, "args"), "stream") == 8);
	/* Rows keep their order: the GPU process sorts below the CPU ones. */
	yajl_val evs = tu_events(back);
	bool gpu_sort = false;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *name = tu_get_str(e, "name");
		if (name && !strcmp(name, "process_sort_index") && tu_get_num(e, "pid") == 0)
			gpu_sort = tu_get_num(tu_get(e, "args"), "sort_index") == 5000000;
	}
	assert_true(gpu_sort);
	/* The trace's metadata comes back as top-level members. */
	assert_non_null(tu_get(back, "distributedInfo"));
	assert_non_null(tu_get(tu_get(back, "strobe"), "gpu_records"));
	yajl_tree_free(orig);
	yajl_tree_free(back);
}

static void test_merge_and_report(void **state)
{
	(void)state;
	make_trace();
	char out[1300], args[4000];
	snprintf(out, sizeof(out), "%s/report.html", tu_dir);
	snprintf(args, sizeof(args), "-o '%s' '%s'", out, pf_path);
	strobe_ok("report", args);
	char *html = tu_read_file(out, NULL);
	assert_non_null(html);
	assert_non_null(strstr(html, "gemm_kernel"));
	free(html);

	/* A Perfetto rank and a JSON rank, ranks from their file names. */
	char r0[1300], r1[1300];
	snprintf(r0, sizeof(r0), "%s/job_rank0.pftrace", tu_dir);
	snprintf(r1, sizeof(r1), "%s/job_rank1.json", tu_dir);
	copy_file(pf_path, r0);
	copy_file(json_path, r1);
	snprintf(out, sizeof(out), "%s/merged.json", tu_dir);
	snprintf(args, sizeof(args), "-q -o '%s' '%s' '%s'", out, r0, r1);
	strobe_ok("merge", args);
	yajl_val m = tu_load_trace(out);
	assert_int_equal(tu_count(m, "X", "kernel", NULL), 2 * KERNELS);
	yajl_val ranks = tu_get(tu_get(m, "distributedInfo"), "ranks");
	assert_true(ranks && YAJL_IS_ARRAY(ranks) && YAJL_GET_ARRAY(ranks)->len == 2);
	yajl_tree_free(m);
}

static void test_damaged_files(void **state)
{
	(void)state;
	make_trace();
	size_t len = 0;
	char *data = tu_read_file(pf_path, &len);
	assert_non_null(data);
	assert_true(len > 1000);
	char bad[1300], out[1300], args[2800], *msg = NULL;
	snprintf(bad, sizeof(bad), "%s/cut.pftrace", tu_dir);
	snprintf(out, sizeof(out), "%s/cut.json", tu_dir);
	/* Cut in the middle of a packet. */
	FILE *f = fopen(bad, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len - 3, f), len - 3);
	fclose(f);
	snprintf(args, sizeof(args), "'%s' '%s'", bad, out);
	assert_int_equal(tu_strobe("convert", args, 1, &msg), 1);
	assert_non_null(strstr(msg, "truncated"));
	free(msg);
	/* A packet's inside overwritten: a bad length or a bad field, named
	 * with the packet's byte; never a crash. */
	for (size_t at = 40; at < len && at < 4000; at += 97) {
		char *copy = malloc(len);
		memcpy(copy, data, len);
		memset(copy + at, 0xff, 12 < len - at ? 12 : len - at);
		f = fopen(bad, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(copy, 1, len, f), len);
		fclose(f);
		free(copy);
		int rc = tu_strobe("convert", args, 1, &msg);
		if (rc && !strstr(msg, "byte"))
			fail_msg("damage at byte %zu: exit %d without a byte offset: %s", at, rc, msg);
		assert_true(rc == 0 || rc == 1);
		free(msg);
	}
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_summary_same_as_json),
	    cmocka_unit_test(test_convert_back_to_json),
	    cmocka_unit_test(test_merge_and_report),
	    cmocka_unit_test(test_damaged_files),
	};
	ct_use_fake();
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

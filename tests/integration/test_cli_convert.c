/* strobe convert, run as a user runs it: libkineto's own trace and a trace
 * in libkineto's exact layout with its defects, to Perfetto and to JSON
 * (plain, gzip, zstd); the filters; the errors; and bounded memory on a
 * 200 MB input streamed through a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pftext.h"
#include "testutil.h"

#define FIXTURE     STROBE_TEST_DATA_DIR "/libkineto-sample.json"
#define SAMPLE_BASE 1790857026000000000LL
#define SEP         " \xc2\xb7 "

static char dir[1024];
static char path_buf[2][1400];

static const char *in_dir(int slot, const char *name)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, name);
	return path_buf[slot];
}

/* Runs "strobe convert ARGS" with stderr merged; returns the exit status. */
static int convert(const char *args, char **out)
{
	return tu_strobe("convert", args, 1, out);
}

static void convert_ok(const char *in, const char *out)
{
	char args[4096], *msg = NULL;
	snprintf(args, sizeof(args), "'%s' '%s'", in, out);
	int rc = convert(args, &msg);
	if (rc)
		fail_msg("convert %s -> %s: %d: %s", in, out, rc, msg ? msg : "");
	assert_non_null(strstr(msg, "strobe: wrote"));
	free(msg);
}

/* ---- libkineto's sample ---------------------------------------------------- */

static void test_sample_to_perfetto(void **state)
{
	(void)state;
	const char *out = in_dir(0, "sample.pftrace");
	convert_ok(FIXTURE, out);
	yajl_val in = tu_load_trace(FIXTURE);
	struct pf_trace t;
	pf_load(&t, out);
	/* The sample's fwdbwd arrow has no end: only ac2g ones are paired. */
	pf_check_structure(&t, false);

	/* Every complete event is one slice, with its name and category. */
	size_t xs = tu_count(in, "X", NULL, NULL);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", NULL), xs);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_END", NULL), xs);
	yajl_val evs = tu_events(in);
	for (size_t i = 0; i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i];
		if (strcmp(tu_get_str(e, "ph"), "X"))
			continue;
		const char *name = tu_get_str(e, "name");
		assert_true(pf_count(&t, "TYPE_SLICE_BEGIN", name) > 0);
	}
	/* Instants: the sample's three, one more for the metadata. */
	assert_int_equal(pf_count(&t, "TYPE_INSTANT", NULL), tu_count(in, "i", NULL, NULL) + 1);

	/* Absolute times: baseTimeNanoseconds + ts. */
	const struct pf_packet *mm = NULL, *launch = NULL, *kernel = NULL;
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (!p->has_te || strcmp(p->type, "TYPE_SLICE_BEGIN"))
			continue;
		if (!strcmp(p->name, "aten::mm"))
			mm = p;
		else if (!strcmp(p->name, "cudaLaunchKernel"))
			launch = p;
		else if (!strcmp(p->name, "Kernel"))
			kernel = p;
	}
	assert_non_null(mm);
	assert_non_null(launch);
	assert_non_null(kernel);
	assert_int_equal(mm->ts + t.p[0].realtime, (uint64_t)(SAMPLE_BASE + 5166410272838951LL));
	assert_string_equal(mm->cat, "cpu_op");
	assert_string_equal(pf_ann(mm, "Input type")->value, "float");
	assert_string_equal(pf_ann(mm, "External id")->value, "7");
	assert_string_equal(pf_ann(mm, "Input Dims")->kind, "legacy_json_value");
	/* The ac2g arrow from the launch to the kernel. */
	assert_true(launch->flow_out != 0);
	assert_int_equal(launch->flow_out, kernel->flow_in);

	/* Rows: the thread with its name, the stream under "GPU 0", the process names. */
	const struct pf_packet *row = pf_track(&t, mm->track);
	assert_true(row->is_thread);
	assert_int_equal(row->tid, 15670);
	assert_string_equal(row->tname, "thread 15670 (main-thread)");
	const struct pf_packet *stream = pf_track(&t, kernel->track);
	assert_string_equal(stream->tname, "stream 7 ");
	bool gpu0 = false, cpu = false;
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (!p->is_process)
			continue;
		const struct pf_packet *last = pf_track(&t, p->uuid);
		gpu0 |= last == p && p->pid == 0 && !strcmp(p->label, "GPU 0") && !strcmp(p->pname, "driver");
		cpu |= last == p && p->pid == 15670 && !strcmp(p->label, "CPU") && p->sort == 15670;
	}
	assert_true(gpu0);
	assert_true(cpu);

	/* The top-level members survive as metadata annotations. */
	const struct pf_packet *meta = NULL;
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i].has_te && !strcmp(t.p[i].name, "metadata"))
			meta = &t.p[i];
	assert_non_null(meta);
	assert_string_equal(pf_ann(meta, "trace_id")->value, "abc123");
	assert_string_equal(pf_ann(meta, "num_key")->value, "42");
	assert_string_equal(pf_ann(meta, "baseTimeNanoseconds")->value, "1790857026000000000");
	assert_non_null(pf_ann(meta, "deviceProperties"));
	pf_free(&t);
	yajl_tree_free(in);
}

/* JSON out: the same events, members and times, in every compression. */
static void test_sample_to_json(void **state)
{
	(void)state;
	yajl_val in = tu_load_trace(FIXTURE);
	const char *names[] = {"s.json", "s.json.gz", "s.json.zst"};
	for (size_t k = 0; k < 3; k++) {
		const char *out = in_dir(0, names[k]);
		convert_ok(FIXTURE, out);
		yajl_val o = tu_load_trace(out);
		assert_int_equal(tu_events(o)->u.array.len, tu_events(in)->u.array.len);
		const char *members[] = {"schemaVersion",       "trace_id",         "host_name",
		                         "baseTimeNanoseconds", "deviceProperties", "traceName"};
		for (size_t m = 0; m < sizeof(members) / sizeof(members[0]); m++)
			assert_non_null(tu_get(o, members[m]));
		assert_string_equal(tu_get_str(o, "trace_id"), "abc123");
		const char *phs[] = {"X", "i", "s", "f", "M"};
		for (size_t p = 0; p < 5; p++)
			assert_int_equal(tu_count(o, phs[p], NULL, NULL), tu_count(in, phs[p], NULL, NULL));
		yajl_val a = tu_find(in, "X", "kernel", "Kernel"), b = tu_find(o, "X", "kernel", "Kernel");
		assert_int_equal(tu_get_ns(a, "ts"), tu_get_ns(b, "ts"));
		assert_int_equal(tu_get_ns(a, "dur"), tu_get_ns(b, "dur"));
		assert_int_equal((long long)tu_get_num(tu_get(b, "args"), "stream"), 7);
		yajl_tree_free(o);
	}
	yajl_tree_free(in);
}

static void expect_error(const char *args, int status, const char *needle)
{
	char *msg = NULL;
	int rc = convert(args, &msg);
	if (rc != status || !strstr(msg ? msg : "", needle))
		fail_msg("convert %s: status %d (want %d), output:\n%s\n(wanted \"%s\")", args, rc, status,
		         msg ? msg : "", needle);
	free(msg);
}

/* ---- libkineto's exact layout, defects included (kineto-behaviour.md §7.12) */

static const char kineto_trace[] =
    "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": \"NVIDIA H100\"}\n  "
    "],\n"
    "  \"trace_id\": \"t1\",\n  \"host_name\": \"node7\",\n  \"displayTimeUnit\": \"ms\",\n"
    "  \"baseTimeNanoseconds\": 1790857026000000000,\n  \"traceEvents\": [\n"
    "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::to\", \"pid\": 100, \"tid\": 100,\n"
    "    \"ts\": 5166410272838.951, \"dur\": 80.000,\n"
    "    \"args\": {\n      \"External id\": 3,\"Call stack\": \"train.py(12): step \"main\", \"x\"\", "
    "\"Input type\": \"vector<\"float\">\"\n    }\n  },\n"
    "  {\n    \"ph\": \"s\", \"id\": 9, \"pid\": 100, \"tid\": 100, \"ts\": 5166410272838.951,\n"
    "    \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\"\n  },\n"
    "  {\n    \"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
    "\"tid\": 100,\n"
    "    \"ts\": 5166410272850.000, \"dur\": 5.000,\n    \"args\": {\n      \"External id\": 3, \"cbid\": "
    "211, "
    "\"correlation\": 41\n    }\n  },\n"
    "  {\n    \"ph\": \"s\", \"id\": 41, \"pid\": 100, \"tid\": 100, \"ts\": 5166410272850.000,\n"
    "    \"cat\": \"ac2g\", \"name\": \"ac2g\"\n  },\n"
    "  {\n    \"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm_kernel\", \"pid\": 0, \"tid\": 7,\n"
    "    \"ts\": 5166410272860.000, \"dur\": 30.000,\n    \"args\": {\n      \"External id\": 3, "
    "\"blocks per SM\": inf, \"stream\": 7, \"correlation\": 41\n    }\n  },\n"
    "  {\n    \"ph\": \"f\", \"id\": 41, \"pid\": 0, \"tid\": 7, \"ts\": 5166410272860.000,\n"
    "    \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n  },\n"
    "  {\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::to_backward\", \"pid\": 100, \"tid\": "
    "100,\n"
    "    \"ts\": 5166410272950.000, \"dur\": 40.000,\n    \"args\": {\n      \"External id\": 4\n    }\n  "
    "},\n"
    "  {\n    \"ph\": \"f\", \"id\": 9, \"pid\": 100, \"tid\": 100, \"ts\": 5166410272950.000,\n"
    "    \"cat\": \"fwdbwd\", \"name\": \"fwdbwd\", \"bp\": \"e\"\n  },\n"
    "  {\n    \"ph\": \"C\", \"cat\": \"hardware_counters\", \"name\": \"sm_util\", \"pid\": \"GPU 0 "
    "Counters\",\n"
    "    \"tid\": 0, \"ts\": 5166410272860.000, \"args\": {\"\": nan}\n  },\n"
    "  {\n    \"ph\": \"C\", \"cat\": \"hardware_counters\", \"name\": \"sm_util\", \"pid\": \"GPU 0 "
    "Counters\",\n"
    "    \"tid\": 0, \"ts\": 5166410272870.000, \"args\": {\"\": 0.75}\n  },\n"
    "  {\n    \"ph\": \"M\", \"name\": \"thread_name\", \"ts\": 5166410272838.000, \"pid\": 0, \"tid\": 7,\n"
    "    \"args\": {\n      \"name\": \"stream 7 \"\n    }\n  },\n"
    "  {\n    \"ph\": \"M\", \"name\": \"process_name\", \"ts\": 5166410272838.000, \"pid\": 100, \"tid\": "
    "0,\n"
    "    \"args\": {\n      \"name\": \"python\"\n    }\n  },\n"
    "  {\n    \"ph\": \"M\", \"name\": \"process_labels\", \"ts\": 5166410272838.000, \"pid\": 100, \"tid\": "
    "0,\n"
    "    \"args\": {\n      \"labels\": \"CPU\"\n    }\n  },\n"
    "  {\n    \"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\",\n"
    "    \"ts\": 5166410273837.951\n  }\n  ],\n"
    "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8},\n"
    "  \"traceName\": \"/tmp/libkineto_activities_100.json\"\n}\n";

static const char *write_kineto(void)
{
	const char *p = in_dir(1, "kineto.json");
	assert_int_equal(tu_write_file(p, kineto_trace), 0);
	return p;
}

static void test_kineto_defects_to_json(void **state)
{
	(void)state;
	const char *in = write_kineto();
	const char *out = in_dir(0, "kineto-fixed.json");
	char args[4096], *msg = NULL;
	snprintf(args, sizeof(args), "'%s' '%s'", in, out);
	assert_int_equal(convert(args, &msg), 0);
	assert_non_null(strstr(msg, "repaired"));
	free(msg);
	/* Valid JSON now, with the text of the broken strings as libkineto meant it. */
	yajl_val o = tu_load_trace(out);
	yajl_val to = tu_find(o, "X", "cpu_op", "aten::to");
	assert_string_equal(tu_get_str(tu_get(to, "args"), "Call stack"),
	                    "train.py(12): step \"main\", \"x\"");
	assert_string_equal(tu_get_str(tu_get(to, "args"), "Input type"), "vector<\"float\">");
	yajl_val k = tu_find(o, "X", "kernel", "gemm_kernel");
	assert_string_equal(tu_get_str(tu_get(k, "args"), "blocks per SM"), "inf");
	yajl_val c = tu_find(o, "C", "hardware_counters", "sm_util");
	assert_string_equal(tu_get_str(tu_get(c, "args"), ""), "nan");
	assert_int_equal(tu_count(o, NULL, NULL, NULL), 14);
	assert_non_null(tu_get(o, "distributedInfo"));
	assert_int_equal((long long)tu_get_num(tu_get(o, "distributedInfo"), "world_size"), 8);
	yajl_tree_free(o);
}

static void test_kineto_defects_to_perfetto(void **state)
{
	(void)state;
	const char *in = write_kineto();
	const char *out = in_dir(0, "kineto.perfetto-trace");
	convert_ok(in, out);
	struct pf_trace t;
	pf_load(&t, out);
	pf_check_structure(&t, true); /* both arrows have their two ends here */
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", NULL), 4);
	const struct pf_packet *to = NULL, *bwd = NULL;
	size_t counters = 0;
	bool nan_seen = false;
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (p->has_te && !strcmp(p->name, "aten::to"))
			to = p;
		if (p->has_te && !strcmp(p->name, "aten::to_backward"))
			bwd = p;
		if (p->has_te && !strcmp(p->type, "TYPE_COUNTER")) {
			counters++;
			nan_seen |= p->counter != p->counter;
			const struct pf_packet *ct = pf_track(&t, p->track);
			assert_true(ct->is_counter);
			assert_string_equal(ct->td_name, "sm_util");
			assert_string_equal(pf_track(&t, ct->parent)->td_name, "GPU 0 Counters");
		}
	}
	assert_non_null(to);
	assert_non_null(bwd);
	assert_string_equal(pf_ann(to, "Call stack")->value, "train.py(12): step \"main\", \"x\"");
	assert_true(to->flow_out && to->flow_out == bwd->flow_in);
	assert_int_equal(counters, 2);
	assert_true(nan_seen);
	/* Names given after the events that use the rows: each track is still
	 * described once, before its first event (pf_check_structure), with its
	 * final name. */
	bool named = false;
	for (size_t i = 0; i < t.n; i++)
		named |= t.p[i].is_process && t.p[i].pid == 100 && !strcmp(t.p[i].pname, "python") &&
		         !strcmp(t.p[i].label, "CPU");
	assert_true(named);
	const struct pf_packet *meta = NULL;
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i].has_te && !strcmp(t.p[i].name, "metadata"))
			meta = &t.p[i];
	assert_non_null(meta);
	assert_non_null(strstr(pf_ann(meta, "distributedInfo")->value, "\"world_size\":8"));
	assert_string_equal(pf_ann(meta, "host_name")->value, "node7");
	pf_free(&t);
}

/* A merged trace (process names up front, labels and thread names where
 * each rank had them, "Record Window End" on pid N, tid "") and the same
 * trace through a pipe: every track described once, before its events,
 * with its final name, never a bare pid. */
static void test_merged_trace_to_perfetto(void **state)
{
	(void)state;
	const char *merged = in_dir(0, "merged.json"), *out = in_dir(1, "merged.pftrace");
	char args[4096], *msg = NULL;
	/* The sample twice, by another path: ranks 0 and 1 by position. */
	snprintf(args, sizeof(args), "-q -o '%s' '%s' '%s'", merged, FIXTURE,
	         STROBE_TEST_DATA_DIR "/../data/libkineto-sample.json");
	assert_int_equal(tu_strobe("merge", args, 1, &msg), 0);
	free(msg);
	convert_ok(merged, out);
	struct pf_trace t;
	pf_load(&t, out);
	pf_check_structure(&t, false);
	size_t processes = 0, globals = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (!p->has_td)
			continue;
		const char *name = p->is_process ? p->pname : p->is_thread ? p->tname : p->td_name;
		if (!*name || strspn(name, "0123456789") == strlen(name))
			fail_msg("track %llu is named \"%s\"", (unsigned long long)p->uuid, name);
		if (p->is_process) {
			processes++;
			assert_true(!strncmp(p->pname, "rank ", 5));
		}
		if (!strcmp(name, "Global")) {
			globals++;
			const struct pf_packet *parent = pf_track(&t, p->parent);
			assert_non_null(parent);
			assert_non_null(strstr(parent->pname, SEP "global"));
		}
	}
	assert_true(processes >= 4);
	assert_int_equal(globals, 2); /* the Record Window End row of each rank */

	/* Through a pipe, read twice from a saved copy: the same file. */
	const char *piped = in_dir(1, "piped.pftrace");
	char cmd[8192];
	TU_FORMAT(cmd, "cat '%s' | '%s' convert -q - '%s' && cmp '%s' '%s'", merged, STROBE_CLI_PATH, piped,
	          piped, out);
	if (tu_run(cmd, 1, &msg))
		fail_msg("%s: %s", cmd, msg);
	free(msg);
	pf_free(&t);
}

/* Valid JSON passes the repair unchanged, however much it looks like a
 * defect; an error after a repair is placed in the file's own bytes. */
static void test_repair_leaves_valid_json(void **state)
{
	(void)state;
	static const char tricky[] =
	    "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"q\\\", \\\"r\", \"pid\": 1, \"tid\": 1, \"ts\": "
	    "1, "
	    "\"dur\": 1, \"args\": {\"a\": \"x\\\": y\", \"nan\": \"inf\", \"list\": [\"p\", \"q\"], "
	    "\"n\": -12, \"e\": 1.5e3, \"t\": true, \"z\": null}}]}";
	const char *in = in_dir(1, "tricky.json");
	assert_int_equal(tu_write_file(in, tricky), 0);
	const char *out = in_dir(0, "tricky-out.json");
	char args[4096], *msg = NULL;
	snprintf(args, sizeof(args), "'%s' '%s'", in, out);
	assert_int_equal(convert(args, &msg), 0);
	assert_null(strstr(msg, "repaired"));
	free(msg);
	yajl_val o = tu_load_trace(out);
	yajl_val x = tu_find(o, "X", NULL, "q\", \"r");
	assert_non_null(x);
	yajl_val a = tu_get(x, "args");
	assert_string_equal(tu_get_str(a, "a"), "x\": y");
	assert_string_equal(tu_get_str(a, "nan"), "inf");
	assert_int_equal(tu_get(a, "list")->u.array.len, 2);
	assert_true(tu_get_num(a, "e") == 1500);
	assert_true(YAJL_IS_NULL(tu_get(a, "z")));
	yajl_tree_free(o);

	/* Two repaired quotes, then a real error just after the file's byte 56. */
	assert_int_equal(
	    tu_write_file(in, "{\"traceEvents\": [{\"ph\": \"X\", \"args\": {\"s\": \"a \"b\" c\"}}, "
	                      "nope]}"),
	    0);
	snprintf(args, sizeof(args), "'%s' '%s'", in, out);
	expect_error(args, 1, "byte 57");
}

/* PyTorch's long args: an op with 100 args and a 10 KB "Input Dims" comes
 * through whole, with nothing reported cut. */
static void test_long_args_kept(void **state)
{
	(void)state;
	size_t cap = 64 * 1024, n = 0;
	char *text = malloc(cap);
	assert_non_null(text);
	n += (size_t)snprintf(
	    text + n, cap - n,
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::cat\", "
	    "\"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 5, \"args\": {\"Input Dims\": [");
	for (int i = 0; i < 1000; i++) /* [[1024, 768], ...]: 11-12 bytes each */
		n += (size_t)snprintf(text + n, cap - n, "%s[1024, %d]", i ? ", " : "", 700 + i % 100);
	n += (size_t)snprintf(text + n, cap - n, "]");
	for (int i = 0; i < 99; i++)
		n += (size_t)snprintf(text + n, cap - n, ", \"arg%d\": %d", i, i * 3);
	n += (size_t)snprintf(text + n, cap - n, "}}]}");
	const char *in = in_dir(1, "long-args.json");
	assert_int_equal(tu_write_file(in, text), 0);
	free(text);

	const char *out = in_dir(0, "long-args-out.json");
	char args[4096], *msg = NULL;
	snprintf(args, sizeof(args), "'%s' '%s'", in, out);
	assert_int_equal(convert(args, &msg), 0);
	if (strstr(msg, "cut") || strstr(msg, "dropped"))
		fail_msg("convert reported lost data: %s", msg);
	free(msg);
	yajl_val o = tu_load_trace(out);
	yajl_val x = tu_find(o, "X", "cpu_op", "aten::cat");
	assert_non_null(x);
	yajl_val a = tu_get(x, "args");
	assert_int_equal(YAJL_GET_OBJECT(a)->len, 100);
	yajl_val dims = tu_get(a, "Input Dims");
	assert_true(dims && YAJL_IS_ARRAY(dims));
	assert_int_equal(YAJL_GET_ARRAY(dims)->len, 1000);
	assert_true(tu_get_num(a, "arg98") == 294);
	yajl_tree_free(o);
}

/* ---- filters ------------------------------------------------------------- */

static void test_filters(void **state)
{
	(void)state;
	const char *in = write_kineto();
	char args[4096];
	/* 30 µs and longer: aten::to (80), the kernel (30), the backward (40); the
	 * launch (5) goes, and its ac2g start with it. */
	const char *out = in_dir(0, "long.json");
	snprintf(args, sizeof(args), "--min-dur 30us -q '%s' '%s'", in, out);
	char *msg = NULL;
	assert_int_equal(convert(args, &msg), 0);
	assert_string_equal(msg, ""); /* --quiet */
	free(msg);
	yajl_val o = tu_load_trace(out);
	assert_int_equal(tu_count(o, "X", NULL, NULL), 3);
	assert_null(tu_find(o, "X", NULL, "cudaLaunchKernel"));
	assert_int_equal(tu_count(o, "s", "ac2g", NULL), 0);
	assert_int_equal(tu_count(o, "f", "ac2g", NULL), 1);
	assert_int_equal(tu_count(o, "s", "fwdbwd", NULL), 1);
	assert_int_equal(tu_count(o, "M", NULL, NULL), 3);
	yajl_tree_free(o);

	/* Categories: kernels and launches, their arrows, and the names. */
	out = in_dir(0, "cats.json");
	snprintf(args, sizeof(args), "--categories kernel,cuda_runtime -q '%s' '%s'", in, out);
	assert_int_equal(convert(args, NULL), 0);
	o = tu_load_trace(out);
	assert_int_equal(tu_count(o, "X", NULL, NULL), 2);
	assert_int_equal(tu_count(o, "X", "kernel", NULL), 1);
	assert_int_equal(tu_count(o, "X", "cuda_runtime", NULL), 1);
	assert_int_equal(tu_count(o, "s", "ac2g", NULL), 1);
	assert_int_equal(tu_count(o, "f", "ac2g", NULL), 1);
	assert_int_equal(tu_count(o, NULL, "fwdbwd", NULL), 0);
	assert_int_equal(tu_count(o, "C", NULL, NULL), 0);
	assert_int_equal(tu_count(o, "M", NULL, NULL), 3);
	yajl_tree_free(o);

	/* The same to Perfetto: one slice of 1 ms or more, none shorter. */
	out = in_dir(0, "cats.pftrace");
	snprintf(args, sizeof(args), "--min-dur=0.05ms -q '%s' '%s'", in, out);
	assert_int_equal(convert(args, NULL), 0);
	struct pf_trace t;
	pf_load(&t, out);
	pf_check_structure(&t, false);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", NULL), 1);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", "aten::to"), 1);
	pf_free(&t);
}

/* A Perfetto file as input: libkineto's sample to Perfetto and back to
 * JSON keeps every complete event, flow and counter. */
static void test_perfetto_input(void **state)
{
	(void)state;
	const char *pf = in_dir(1, "sample.pftrace"), *out = in_dir(0, "sample-back.json");
	convert_ok(FIXTURE, pf);
	convert_ok(pf, out);
	yajl_val in = tu_load_trace(FIXTURE), back = tu_load_trace(out);
	static const char *const phs[] = {"X", "s", "f", "C"};
	for (size_t i = 0; i < sizeof(phs) / sizeof(phs[0]); i++)
		if (tu_count(in, phs[i], NULL, NULL) != tu_count(back, phs[i], NULL, NULL))
			fail_msg("%s events: %zu in the sample, %zu after Perfetto and back", phs[i],
			         tu_count(in, phs[i], NULL, NULL), tu_count(back, phs[i], NULL, NULL));
	assert_true(tu_count(back, "X", "kernel", NULL) > 0);
	yajl_tree_free(back);

	/* Compressed, it is recognised after decompression. */
	char cmd[3000];
	snprintf(cmd, sizeof(cmd), "gzip -c '%s' > '%s.gz'", pf, pf);
	assert_int_equal(tu_run(cmd, 1, NULL), 0);
	char gz[1500];
	snprintf(gz, sizeof(gz), "%s.gz", pf);
	convert_ok(gz, out);
	back = tu_load_trace(out);
	assert_int_equal(tu_count(back, "X", NULL, NULL), tu_count(in, "X", NULL, NULL));
	yajl_tree_free(in);
	yajl_tree_free(back);
}

/* A Perfetto file whose interning ids would need huge tables (one id of 4
 * million per sequence) is refused once they pass the reader's budget,
 * not obeyed. */
static void test_perfetto_intern_budget(void **state)
{
	(void)state;
	const char *in = in_dir(1, "huge-iids.pftrace");
	FILE *f = fopen(in, "wb");
	assert_non_null(f);
	for (unsigned seq = 1; seq <= 12; seq++) {
		/* packet { trusted_packet_sequence_id: seq, interned_data { event_names
		 * { iid: 4194303, name: "x" } } } */
		const unsigned char pkt[] = {0x0a, 0x0e, 0x50, (unsigned char)seq,
		                             0x62, 0x0a, 0x12, 0x08,
		                             0x08, 0xff, 0xff, 0xff,
		                             0x01, 0x12, 0x01, 'x'};
		assert_int_equal(fwrite(pkt, 1, sizeof(pkt), f), sizeof(pkt));
	}
	fclose(f);
	char args[4096];
	snprintf(args, sizeof(args), "'%s' '%s'", in, in_dir(0, "huge-iids.json"));
	expect_error(args, 1, "interned strings past 128 MiB");
}

/* ---- errors ----------------------------------------------------------------- */

static size_t files_in(const char *d)
{
	char cmd[2048], *out = NULL;
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | wc -l", d);
	assert_int_equal(tu_run(cmd, 0, &out), 0);
	size_t n = (size_t)atol(out);
	free(out);
	return n;
}

static void test_errors(void **state)
{
	(void)state;
	char args[4096];
	const char *out = in_dir(0, "x.pftrace");
	snprintf(args, sizeof(args), "'%s/none.json' '%s'", dir, out);
	expect_error(args, 1, "none.json: No such file");
	assert_int_equal(access(out, F_OK), -1);

	const char *bad = in_dir(1, "bad.json");
	assert_int_equal(tu_write_file(bad, "{\"traceEvents\": [{\"ph\": \"X\"}, oops]}"), 0);
	snprintf(args, sizeof(args), "'%s' '%s'", bad, out);
	expect_error(args, 1, "byte 31");
	assert_int_equal(access(out, F_OK), -1);

	assert_int_equal(tu_write_file(bad, "{\"schemaVersion\": 1}"), 0);
	expect_error(args, 1, "no traceEvents");

	assert_int_equal(tu_write_file(bad, "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\"}, {\"ph\""),
	                 0);
	expect_error(args, 1, "truncated");
	assert_int_equal(access(out, F_OK), -1);

	/* A JSON text that starts with a newline is still JSON, and junk
	 * after one is not taken for Perfetto. */
	assert_int_equal(tu_write_file(bad, "\n\n{\"traceEvents\": []}"), 0);
	const char *nl_out = in_dir(0, "nl.json");
	snprintf(args, sizeof(args), "-q '%s' '%s'", bad, nl_out);
	assert_int_equal(convert(args, NULL), 0);
	assert_int_equal(tu_write_file(bad, "\nhello"), 0);
	snprintf(args, sizeof(args), "'%s' '%s'", bad, out);
	expect_error(args, 1, "not JSON");

	snprintf(args, sizeof(args), "'%s' '%s/out.csv'", FIXTURE, dir);
	expect_error(args, 2, "unknown output format");

	snprintf(args, sizeof(args), "'%s' '%s/missing/out.json'", FIXTURE, dir);
	expect_error(args, 1, "missing/out.json");

	snprintf(args, sizeof(args), "--min-dur 10x '%s' '%s'", FIXTURE, out);
	expect_error(args, 2, "strobe: convert: --min-dur: '10x' is not a duration");
	snprintf(args, sizeof(args), "'%s' '%s' --min-dur", FIXTURE, out);
	expect_error(args, 2, "strobe: convert: --min-dur needs a duration");
	snprintf(args, sizeof(args), "--bogus '%s' '%s'", FIXTURE, out);
	expect_error(args, 2, "unknown option");
	expect_error("only-one.json", 2, "no output file");

	/* A read-only directory (not for root, who may write anyway). */
	char ro[1200];
	snprintf(ro, sizeof(ro), "%s/ro", dir);
	assert_int_equal(mkdir(ro, 0500), 0);
	if (geteuid() != 0) {
		snprintf(args, sizeof(args), "'%s' '%s/t.pftrace'", FIXTURE, ro);
		expect_error(args, 1, "t.pftrace");
	}
	assert_int_equal(files_in(ro), 0); /* no temporary file left */
	rmdir(ro);

	/* --progress shows bytes read of the total even when stderr is not a terminal. */
	snprintf(args, sizeof(args), "--progress '%s' '%s'", FIXTURE, out);
	char *msg = NULL;
	assert_int_equal(convert(args, &msg), 0);
	assert_non_null(strstr(msg, "MB read (100%)"));
	free(msg);
	/* Without it (and not on a terminal) only the closing line. */
	snprintf(args, sizeof(args), "'%s' '%s'", FIXTURE, out);
	assert_int_equal(convert(args, &msg), 0);
	assert_null(strstr(msg, "MB read"));
	free(msg);

	char *help = NULL;
	assert_int_equal(convert("--help", &help), 0);
	assert_non_null(strstr(help, "usage: strobe convert"));
	assert_non_null(strstr(help, ".pftrace"));
	free(help);
}

/* Past 16 MiB of interned names the encoder clears the sequence's state
 * and starts over: a second clock packet, ids from 1 again, every name
 * still resolving to the right text. */
static void test_interning_starts_over(void **state)
{
	(void)state;
	const char *in = in_dir(1, "names.json");
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fprintf(f, "{\"traceEvents\": [\n");
	char name[4001];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	const int n = 5000; /* 5000 names of 4 KB: 20 MB */
	for (int i = 0; i < n; i++) {
		snprintf(name, 16, "%08d", i);
		name[8] = 'n';
		fprintf(
		    f,
		    "%s{\"ph\": \"X\", \"name\": \"%s\", \"pid\": 1, \"tid\": 1, \"ts\": %d, \"dur\": 1}\n",
		    i ? "," : "", name, i * 2);
	}
	fprintf(f, "]}\n");
	fclose(f);
	const char *out = in_dir(0, "names.pftrace");
	convert_ok(in, out);
	struct pf_trace t;
	pf_load(&t, out);
	pf_check_structure(&t, true);
	size_t clocks = 0, begins = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		clocks += p->has_clock;
		if (p->has_te && !strcmp(p->type, "TYPE_SLICE_BEGIN")) {
			char want[16];
			snprintf(want, sizeof(want), "%08zu", begins++);
			assert_memory_equal(p->name, want, 8);
		}
	}
	assert_int_equal(begins, (size_t)n);
	assert_int_equal(clocks, 2);
	pf_free(&t);
	unlink(in);
}

/* Each event brings a new name, category and arg key at once, so the
 * interning arena grows while one packet is being built: every string must
 * still come out right. */
static void test_several_new_strings_per_event(void **state)
{
	(void)state;
	const char *in = in_dir(1, "fresh.json");
	FILE *f = fopen(in, "w");
	assert_non_null(f);
	fprintf(f, "{\"traceEvents\": [\n");
	char pad[201];
	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = 0;
	const int n = 3000; /* 3 new strings of ~210 bytes each: the 64 KiB arena grows often */
	for (int i = 0; i < n; i++)
		fprintf(f,
		        "%s{\"ph\": \"X\", \"name\": \"N%05d%s\", \"cat\": \"C%05d%s\", \"pid\": 1, "
		        "\"tid\": 1, \"ts\": %d, \"dur\": 1, \"args\": {\"K%05d%s\": %d}}\n",
		        i ? "," : "", i, pad, i, pad, i * 2, i, pad, i);
	fprintf(f, "]}\n");
	fclose(f);
	const char *out = in_dir(0, "fresh.pftrace");
	convert_ok(in, out);
	struct pf_trace t;
	pf_load(&t, out);
	pf_check_structure(&t, true);
	size_t begins = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (!p->has_te || strcmp(p->type, "TYPE_SLICE_BEGIN"))
			continue;
		char want[16];
		snprintf(want, sizeof(want), "N%05zu", begins);
		assert_memory_equal(p->name, want, 6);
		want[0] = 'C';
		assert_memory_equal(p->cat, want, 6);
		assert_int_equal(p->nann, 1);
		want[0] = 'K';
		assert_memory_equal(p->ann[0].key, want, 6);
		begins++;
	}
	assert_int_equal(begins, (size_t)n);
	pf_free(&t);
	unlink(in);
}

/* ---- bounded memory -------------------------------------------------------------- */

/* Writes about `bytes` of libkineto-style JSON to fd, then closes it. */
static void generate(int fd, size_t bytes)
{
	FILE *f = fdopen(fd, "w");
	if (!f)
		_exit(1);
	fprintf(f,
	        "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1790857026000000000, \"traceEvents\": [\n");
	size_t written = 0;
	for (unsigned long i = 0; written < bytes; i++) {
		int n = fprintf(
		    f,
		    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::op_%lu\", \"pid\": 1, "
		    "\"tid\": %lu, \"ts\": %lu.%03lu, \"dur\": 1.500, \"args\": {\"External id\": %lu}},\n"
		    "{\"ph\": \"s\", \"id\": %lu, \"pid\": 1, \"tid\": %lu, \"ts\": %lu.%03lu, \"cat\": "
		    "\"ac2g\", "
		    "\"name\": \"ac2g\"},\n",
		    i % 100000, i % 64, 5166410272838ul + i, i % 1000, i, i, i % 64, 5166410272838ul + i,
		    i % 1000);
		if (n < 0)
			_exit(1);
		written += (size_t)n;
	}
	fprintf(f, "{\"ph\": \"i\", \"s\": \"g\", \"name\": \"end\", \"pid\": \"\", \"tid\": \"\", \"ts\": "
	           "1}\n]}\n");
	fclose(f);
	_exit(0);
}

/* This process's resident memory in KiB. */
static long rss_kib(void)
{
	char *st = tu_read_file("/proc/self/status", NULL);
	const char *p = st ? strstr(st, "VmRSS:") : NULL;
	long v = p ? atol(p + 6) : -1;
	free(st);
	return v;
}

static void test_bounded_memory(void **state)
{
	(void)state;
	/* A forked child's peak counts what it shared with this process before
	 * its exec, so the measure means something only while this one is small. */
	long mine = rss_kib();
	if (mine < 0 || mine > 24 * 1024)
		fail_msg("the test process holds %ld KiB: too much to measure the child's peak", mine);
	/* Perfetto keeps the most state (tracks, interned names, a pending
	 * slice): 200 MB; JSON out a quarter of that, to keep the test short. */
	const char *outs[] = {"big.pftrace", "big.json.zst"};
	const size_t sizes[] = {200u << 20, 50u << 20};
	for (size_t k = 0; k < 2; k++) {
		int fds[2];
		assert_int_equal(pipe(fds), 0);
		pid_t gen = fork();
		assert_true(gen >= 0);
		if (gen == 0) {
			close(fds[0]);
			generate(fds[1], sizes[k]);
		}
		close(fds[1]);
		const char *out = in_dir(0, outs[k]);
		pid_t conv = fork();
		assert_true(conv >= 0);
		if (conv == 0) {
			dup2(fds[0], 0);
			close(fds[0]);
			int null = open("/dev/null", O_WRONLY);
			dup2(null, 2);
			execl(STROBE_CLI_PATH, "strobe", "convert", "-", out, (char *)NULL);
			_exit(127);
		}
		close(fds[0]);
		int st;
		struct rusage ru;
		assert_int_equal(wait4(conv, &st, 0, &ru), conv);
		int gst;
		assert_int_equal(waitpid(gen, &gst, 0), gen);
		assert_true(WIFEXITED(gst) && WEXITSTATUS(gst) == 0);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
		/* ru_maxrss is in KiB: 64 MiB whatever the input's size. */
		if (ru.ru_maxrss > 64 * 1024)
			fail_msg("%s: peak RSS %ld KiB", outs[k], ru.ru_maxrss);
		struct stat sb;
		assert_int_equal(stat(out, &sb), 0);
		assert_true(sb.st_size > (1 << 20));
		unlink(out);
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
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
	    cmocka_unit_test(test_bounded_memory), /* first: while this process is small */
	    cmocka_unit_test(test_sample_to_perfetto),
	    cmocka_unit_test(test_sample_to_json),
	    cmocka_unit_test(test_kineto_defects_to_json),
	    cmocka_unit_test(test_kineto_defects_to_perfetto),
	    cmocka_unit_test(test_merged_trace_to_perfetto),
	    cmocka_unit_test(test_repair_leaves_valid_json),
	    cmocka_unit_test(test_long_args_kept),
	    cmocka_unit_test(test_perfetto_input),
	    cmocka_unit_test(test_perfetto_intern_budget),
	    cmocka_unit_test(test_filters),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_interning_starts_over),
	    cmocka_unit_test(test_several_new_strings_per_event),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/* Perfetto protobuf traces as a user gets them: recorded through the public
 * API, saved as .pftrace / .perfetto-trace / perfetto://, decoded with
 * protoc and proto/strobe_perfetto.proto, and checked: descriptors with
 * names, slices paired, flows, interned names, clock, metadata. */
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pftext.h"
#include "strobe/strobe.h"

static char path_buf[4096];

static const char *out_path(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", tu_dir, name);
	return path_buf;
}

#define OP_ID 1001
#define CORR  500
#define FWD   77

static int64_t rec_start;

/* A trace with every kind of event strobe writes. */
static strobe_trace *make_trace(void)
{
	assert_int_equal(strobe_metadata_set_string("job", "training \"run\" 7"), 0);
	assert_int_equal(strobe_thread_set_name("main-thread"), 0);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	for (int i = 0; i < 3; i++) {
		strobe_op_push("aten::linear");
		strobe_range_push("encoder.layer");
		strobe_range_pop();
		strobe_op_pop();
		strobe_instant("step");
		strobe_counter("queue", i + 0.5);
	}
	int64_t s = rec_start = (int64_t)strobe_now_ns();
	const struct strobe_arg kinds[] = {
	    {.key = "i", .kind = STROBE_ARG_I64, .value.i64 = -5},
	    {.key = "u", .kind = STROBE_ARG_U64, .value.u64 = UINT64_MAX},
	    {.key = "f", .kind = STROBE_ARG_F64, .value.f64 = 0.25},
	    {.key = "yes", .kind = STROBE_ARG_BOOL, .value.b = true},
	    {.key = "s", .kind = STROBE_ARG_STRING, .value.str = "text"},
	    {.key = "j", .kind = STROBE_ARG_JSON, .value.str = "[1, {\"a\": null}]"},
	};
	tu_record_at("rec.fwd", STROBE_ACTIVITY_CPU_OP, s, 5000,
	             (struct strobe_activity){.id = OP_ID,
	                                      .flow_id = FWD,
	                                      .flow_kind = STROBE_FLOW_FWDBWD,
	                                      .flags = STROBE_ACTIVITY_FLOW_START,
	                                      .args = kinds,
	                                      .arg_count = 6});
	tu_record_at("cudaLaunchKernel", STROBE_ACTIVITY_CUDA_RUNTIME, s + 1000, 1000,
	             (struct strobe_activity){.id = CORR,
	                                      .linked_id = OP_ID,
	                                      .flow_id = CORR,
	                                      .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU,
	                                      .flags = STROBE_ACTIVITY_FLOW_START});
	tu_record_at("my_kernel", STROBE_ACTIVITY_CONCURRENT_KERNEL, s + 3000, 1000,
	             (struct strobe_activity){.device = 1,
	                                      .resource = 7,
	                                      .id = CORR,
	                                      .linked_id = OP_ID,
	                                      .flow_id = CORR,
	                                      .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU});
	/* Same id, other kind: a different arrow. */
	tu_record_at("rec.bwd", STROBE_ACTIVITY_CPU_OP, s + 10000, 2000,
	             (struct strobe_activity){.id = 1002, .flow_id = FWD, .flow_kind = STROBE_FLOW_FWDBWD});
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_non_null(t);
	return t;
}

struct counts {
	size_t slices, instants, counters;
};

static int count_cb(const struct strobe_activity *a, void *arg)
{
	struct counts *c = arg;
	if (a->type == STROBE_ACTIVITY_CPU_INSTANT_EVENT)
		c->instants++;
	else if (a->type == STROBE_ACTIVITY_CPU_COUNTER)
		c->counters++;
	else
		c->slices++;
	return 0;
}

static const struct pf_packet *find_event(const struct pf_trace *t, const char *type, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].has_te && !strcmp(t->p[i].type, type) && !strcmp(t->p[i].name, name))
			return &t->p[i];
	fail_msg("no %s event named %s", type, name);
	return NULL;
}

static void check_trace(const strobe_trace *trace, const char *path)
{
	struct pf_trace t;
	pf_load(&t, path);
	pf_check_structure(&t, true);

	struct counts c = {0};
	strobe_trace_foreach(trace, count_cb, &c);
	/* One more slice (the window's span) and two more instants (metadata, window end). */
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", NULL), c.slices + 1);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_END", NULL), c.slices + 1);
	assert_int_equal(pf_count(&t, "TYPE_INSTANT", NULL), c.instants + 2);
	assert_int_equal(pf_count(&t, "TYPE_COUNTER", NULL), c.counters);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", "aten::linear"), 3);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", "encoder.layer"), 3);
	assert_int_equal(pf_count(&t, "TYPE_INSTANT", "step"), 3);

	/* Absolute time: the snapshot anchors the sequence clock at the window start. */
	int64_t win_start, win_end;
	assert_int_equal(strobe_trace_window(trace, &win_start, &win_end), 0);
	assert_int_equal(t.p[0].realtime, (uint64_t)win_start);
	assert_int_equal(t.p[0].seq_clock, 0);
	const struct pf_packet *fwd = find_event(&t, "TYPE_SLICE_BEGIN", "rec.fwd");
	assert_int_equal(fwd->ts + t.p[0].realtime, (uint64_t)rec_start);
	assert_string_equal(fwd->cat, "cpu_op");
	assert_string_equal(pf_ann(fwd, "External id")->value, "1001");
	assert_string_equal(pf_ann(fwd, "i")->kind, "int_value");
	assert_string_equal(pf_ann(fwd, "i")->value, "-5");
	assert_string_equal(pf_ann(fwd, "u")->value, "18446744073709551615");
	assert_string_equal(pf_ann(fwd, "f")->kind, "double_value");
	assert_string_equal(pf_ann(fwd, "yes")->value, "true");
	assert_string_equal(pf_ann(fwd, "s")->value, "text");
	assert_string_equal(pf_ann(fwd, "j")->kind, "legacy_json_value");
	assert_string_equal(pf_ann(fwd, "j")->value, "[1, {\"a\": null}]");
	/* fwdbwd 77 starts at rec.fwd and ends at rec.bwd. */
	const struct pf_packet *bwd = find_event(&t, "TYPE_SLICE_BEGIN", "rec.bwd");
	assert_true(fwd->flow_out && fwd->flow_out == bwd->flow_in);
	const struct pf_packet *launch = find_event(&t, "TYPE_SLICE_BEGIN", "cudaLaunchKernel");
	const struct pf_packet *kernel = find_event(&t, "TYPE_SLICE_BEGIN", "my_kernel");
	assert_true(launch->flow_out && launch->flow_out == kernel->flow_in);
	assert_true(launch->flow_out != fwd->flow_out);
	assert_string_equal(kernel->cat, "kernel");

	/* Rows: this process with its label, this thread with its name, the stream under device 1. */
	const struct pf_packet *row = pf_track(&t, fwd->track);
	assert_true(row->is_thread);
	assert_int_equal(row->pid, getpid());
	assert_int_equal(row->tid, syscall(SYS_gettid));
	assert_string_equal(row->tname, "main-thread");
	bool cpu_process = false;
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i].is_process && t.p[i].pid == getpid() && *t.p[i].pname &&
		    !strcmp(t.p[i].label, "CPU"))
			cpu_process = true;
	assert_true(cpu_process);
	const struct pf_packet *stream = pf_track(&t, kernel->track);
	assert_false(stream->is_thread);
	const struct pf_packet *gpu = pf_track(&t, stream->parent);
	assert_non_null(gpu);
	assert_true(gpu->is_process);
	assert_int_equal(gpu->pid, 1);

	/* Counters on a counter track named for the counter. */
	bool seen = false;
	for (size_t i = 0; i < t.n; i++) {
		if (!t.p[i].has_te || strcmp(t.p[i].type, "TYPE_COUNTER"))
			continue;
		const struct pf_packet *ct = pf_track(&t, t.p[i].track);
		assert_true(ct->is_counter);
		assert_string_equal(ct->td_name, "queue");
		if (t.p[i].counter == 1.5)
			seen = true;
	}
	assert_true(seen);

	/* Metadata: strobe's accounting and what the program set. */
	const struct pf_packet *meta = find_event(&t, "TYPE_INSTANT", "metadata");
	assert_string_equal(pf_track(&t, meta->track)->td_name, "Trace metadata");
	assert_string_equal(pf_ann(meta, "job")->value, "training \"run\" 7");
	const struct pf_ann *acct = pf_ann(meta, "strobe");
	assert_non_null(acct);
	assert_non_null(strstr(acct->value, "dropped_events"));
	pf_free(&t);
}

static void test_pftrace_suffixes_and_protocol(void **state)
{
	(void)state;
	strobe_trace *t = make_trace();
	const char *names[] = {"t.pftrace", "t.perfetto-trace"};
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(strobe_trace_save(t, out_path(names[i])), 0);
		check_trace(t, path_buf);
	}
	/* perfetto:// writes Perfetto whatever the name says. */
	char url[4200];
	snprintf(url, sizeof(url), "perfetto://%s", out_path("named.json"));
	assert_int_equal(strobe_trace_save(t, url), 0);
	check_trace(t, path_buf);
	/* And file:// picks by suffix as a bare path does. */
	snprintf(url, sizeof(url), "file://%s", out_path("f.pftrace"));
	assert_int_equal(strobe_trace_save(t, url), 0);
	check_trace(t, path_buf);
	strobe_trace_destroy(t);
}

/* Perfetto is smaller than the JSON of the same trace. */
static void test_smaller_than_json(void **state)
{
	(void)state;
	strobe_trace *t = make_trace();
	struct stat js, ps;
	assert_int_equal(strobe_trace_save(t, out_path("size.json")), 0);
	assert_int_equal(stat(path_buf, &js), 0);
	assert_int_equal(strobe_trace_save(t, out_path("size.pftrace")), 0);
	assert_int_equal(stat(path_buf, &ps), 0);
	assert_true(ps.st_size * 2 < js.st_size);
	strobe_trace_destroy(t);
}

static void test_unwritable_output(void **state)
{
	(void)state;
	strobe_trace *t = make_trace();
	char sub[2048];
	snprintf(sub, sizeof(sub), "%.1900s/ro", tu_dir);
	assert_int_equal(mkdir(sub, 0500), 0);
	snprintf(path_buf, sizeof(path_buf), "%s/x.pftrace", sub);
	if (geteuid() != 0) {
		assert_int_equal(strobe_trace_save(t, path_buf), STROBE_E_IO);
		assert_non_null(strstr(strobe_last_error(), "x.pftrace"));
	}
	/* A missing directory fails for everyone, root included. */
	snprintf(path_buf, sizeof(path_buf), "%s/missing/x.pftrace", tu_dir);
	assert_int_equal(strobe_trace_save(t, path_buf), STROBE_E_IO);
	assert_non_null(strstr(strobe_last_error(), "missing"));
	assert_int_equal(rmdir(sub), 0); /* nothing, not even a temporary file, left */
	strobe_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pftrace_suffixes_and_protocol),
	    cmocka_unit_test(test_smaller_than_json),
	    cmocka_unit_test(test_unwritable_output),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

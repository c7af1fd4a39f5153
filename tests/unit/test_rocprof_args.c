/* The AMD decoder's args, built two ways: rendered from its records when the
 * trace is written (the trace keeps the buffers; what the decoder does when
 * it is the trace's only source of rendered args), or built at decode time
 * (when another backend's records already render theirs). Both give the
 * same args and the same trace bytes. The decoder runs here on records laid
 * out as the backend's callbacks write them, with no SDK loaded. */
#include "testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/rocprof/rocprof_state.h"
#include "core/clock.h"
#include "process/process.h"
#include "strobe/strobe.h"

#define PID       4242
#define TID       77
#define OP_LAUNCH 214
#define OP_MEMCPY 259

static size_t other_render(const void *ctx, const void *rec, const struct strobe_activity *a,
                           struct strb_arg_scratch *s)
{
	(void)ctx, (void)rec, (void)a, (void)s;
	return 0;
}

/* One buffer: a hipLaunchKernel and its kernel, a hipMemcpy and its DtoH
 * copy, and a second kernel of the launch that overlaps the first on its
 * row, as the callbacks keep them. */
static struct strb_gpu_buffer *records(uint64_t t0)
{
	struct strb_rocprof_rec r[5] = {
	    {.type = STRB_ROCPROF_HIP,
	     .op = OP_LAUNCH,
	     .corr = 1,
	     .tid = TID,
	     .start = t0,
	     .end = t0 + 1000,
	     .stream = 0x5a0,
	     .lds = 512,
	     .grid = {4, 2, 1},
	     .block = {256, 1, 1}},
	    {.type = STRB_ROCPROF_KERNEL,
	     .corr = 1,
	     .start = t0 + 2000,
	     .end = t0 + 3000,
	     .device = 1,
	     .queue = 0x1000,
	     .kernel_id = 9,
	     .lds = 512,
	     .grid = {4, 2, 1},
	     .block = {256, 1, 1}},
	    {.type = STRB_ROCPROF_HIP,
	     .op = OP_MEMCPY,
	     .corr = 2,
	     .tid = TID,
	     .start = t0 + 4000,
	     .end = t0 + 5000,
	     .bytes = 4096},
	    {.type = STRB_ROCPROF_COPY,
	     .op = ROCP_MEMORY_COPY_DEVICE_TO_HOST,
	     .corr = 2,
	     .start = t0 + 6000,
	     .end = t0 + 7000,
	     .device = 0,
	     .src_device = 0,
	     .dst_device = -1,
	     .bytes = 4096},
	    {.type = STRB_ROCPROF_KERNEL,
	     .corr = 1,
	     .start = t0 + 2500,
	     .end = t0 + 3500,
	     .device = 1,
	     .queue = 0x1000,
	     .kernel_id = 9,
	     .grid = {1, 1, 1},
	     .block = {64, 1, 1}},
	};
	struct strb_gpu_buffer *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	b->size = b->valid = sizeof(r);
	b->data = malloc(sizeof(r));
	assert_non_null(b->data);
	for (size_t i = 0; i < 5; i++)
		r[i].len = sizeof(r[i]);
	memcpy(b->data, r, sizeof(r));
	return b;
}

/* A trace decoded from the records; another backend's args source first
 * when `other`. */
static struct strobe_trace *decode(const struct strb_window *w, uint64_t t0, bool other)
{
	struct strobe_trace *t = strb_trace_new();
	assert_non_null(t);
	t->pid = PID;
	if (other) {
		struct strb_arg_source src = {other_render, NULL, NULL};
		assert_int_equal(strb_trace_set_arg_source(t, &src), 0);
	}
	struct strb_gpu_buffer *b = records(t0);
	assert_int_equal(strb_rocprof_convert(t, w, b), 0);
	/* The overlapping kernel moves to an overlap row, as at stop. */
	assert_int_equal(strb_process_overlap(t), 0);
	/* A buffer the trace renders from is its own now. */
	assert_true((b->data == NULL) == !other);
	free(b->data);
	free(b);
	return t;
}

/* The trace's JSON, saved under one name (the name is in the file). */
static char *saved(struct strobe_trace *t)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s/trace.json", tu_dir);
	assert_int_equal(strobe_trace_save(t, path), 0);
	return tu_read_file(path, NULL);
}

static void test_rendered_and_built_args_agree(void **state)
{
	(void)state;
	struct strb_rocprof_state *s = &strb_rocprof;
	s->op_names[OP_LAUNCH] = "hipLaunchKernel";
	s->op_flags[OP_LAUNCH] = strb_rocprof_classify("hipLaunchKernel");
	s->op_names[OP_MEMCPY] = "hipMemcpy";
	s->op_flags[OP_MEMCPY] = strb_rocprof_classify("hipMemcpy");
	assert_int_equal(s->op_flags[OP_LAUNCH], STRB_ROCPROF_OP_FLOW | STRB_ROCPROF_OP_LAUNCH);
	assert_int_equal(s->op_flags[OP_MEMCPY], STRB_ROCPROF_OP_FLOW);
	assert_int_equal(strb_rocprof_classify("hipGetDevice"), STRB_ROCPROF_OP_DENIED);
	uint64_t t0 = strb_clock_ticks_to_ns(strb_clock_ticks());
	/* SDK time is strobe's time here: one bracket, offset 0. */
	s->sdk_at[0] = s->strobe_at[0] = t0;
	s->sdk_at[1] = s->strobe_at[1] = 0;
	struct strb_clock_map map = {0};
	assert_int_equal(strb_clock_map_begin(&map), 0);
	struct strb_window w = {.start_ns = 0, .stop_ns = INT64_MAX, .map = &map, .mask = ~UINT64_C(0)};

	struct strobe_trace *lazy = decode(&w, t0, false), *built = decode(&w, t0, true);
	assert_int_equal(lazy->count, 5);
	assert_int_equal(built->count, lazy->count);
	size_t kernels = 0, moved = 0, launched = 0;
	for (size_t i = 0; i < lazy->count; i++) {
		struct strb_arg_scratch sl, sb;
		const struct strobe_arg *al, *ab;
		struct strb_act_ref rl, rb;
		strb_trace_get(lazy, i, &rl);
		strb_trace_get(built, i, &rb);
		size_t nl = strb_trace_args(lazy, &rl, &sl, &al), nb = strb_trace_args(built, &rb, &sb, &ab);
		/* Rendered in one, the activity's own in the other. */
		assert_true(lazy->recs && lazy->recs[i]);
		assert_int_equal(lazy->acts[i].arg_count, 0);
		assert_int_equal(built->acts[i].arg_count, nb);
		assert_int_equal(nl, nb);
		assert_true(nl >= 4);
		for (size_t j = 0; j < nl; j++) {
			assert_string_equal(al[j].key, ab[j].key);
			assert_int_equal(al[j].kind, ab[j].kind);
			if (al[j].kind == STROBE_ARG_STRING || al[j].kind == STROBE_ARG_JSON)
				assert_string_equal(al[j].value.str, ab[j].value.str);
			else
				assert_int_equal(al[j].value.i64, ab[j].value.i64);
		}
		if (lazy->acts[i].type != STROBE_ACTIVITY_CONCURRENT_KERNEL)
			continue;
		kernels++;
		assert_int_equal(nl, 8);
		/* The row it was decoded on, not the overlap row it moved to. */
		assert_string_equal(al[1].key, "stream");
		assert_int_equal(al[1].value.i64, 0);
		moved += lazy->acts[i].resource != 0;
		assert_string_equal(al[4].value.str, "Dispatch Kernel");
		assert_string_equal(al[5].key, "grid");
		launched += !strcmp(al[5].value.str, "[4, 2, 1]");
	}
	assert_int_equal(kernels, 2);
	assert_int_equal(launched, 1);
	assert_int_equal(moved, 1);
	char *a = saved(lazy), *b = saved(built);
	tu_assert_contains(a, "\"grid\": [4, 2, 1]");
	tu_assert_contains(a, "\"stream\": \"0x5a0\"");
	tu_assert_contains(a, "\"kind\": \"DtoH\"");
	assert_string_equal(a, b);
	free(a);
	free(b);
	strobe_trace_destroy(lazy);
	strobe_trace_destroy(built);
	strb_clock_map_free(&map);
	s->op_names[OP_LAUNCH] = s->op_names[OP_MEMCPY] = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rendered_and_built_args_agree),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

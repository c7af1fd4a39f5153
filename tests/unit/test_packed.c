/* A trace packed into one block with no pointers and unpacked again (what
 * the flight recorder's fatal-signal dump carries its GPU records in):
 * the same trace file comes out, rendered args included; a size limit
 * keeps the newest activities; a damaged block is refused with a message
 * that names the damage, and nothing is added. */
#include "testutil.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "process/packed.h"
#include "process/trace.h"
#include "strobe/strobe.h"

#define PID 4242

/* Rendered args: a kernel's grid from the record it points at. */
struct rec {
	int64_t grid;
	const char *stream;
};

static size_t render(const void *ctx, const void *r, const struct strobe_activity *a,
                     struct strb_arg_scratch *s)
{
	(void)ctx;
	(void)a;
	const struct rec *rec = r;
	s->args[0] = (struct strobe_arg){.key = "grid", .kind = STROBE_ARG_I64, .value.i64 = rec->grid};
	snprintf(s->text, sizeof(s->text), "%s", rec->stream);
	s->args[1] =
	    (struct strobe_arg){.key = "stream name", .kind = STROBE_ARG_STRING, .value.str = s->text};
	return 2;
}

static struct rec recs[3] = {{1, "compute"}, {64, "copy \"h2d\""}, {4096, "compute"}};

/* A GPU-like trace: launches with plain args of every kind, kernels with
 * rendered args, rows and metadata. */
static struct strobe_trace *sample(size_t kernels)
{
	struct strobe_trace *t = strb_trace_new();
	assert_non_null(t);
	t->pid = PID;
	t->start_ns = 1000;
	t->end_ns = 1000000;
	t->stats.gpu = true;
	t->stats.gpu_records = 2 * kernels;
	t->stats.gpu_aged_buffers = 3;
	struct strb_arg_source src = {.render = render};
	assert_int_equal(strb_trace_set_arg_source(t, &src), 0);
	for (size_t i = 0; i < kernels; i++) {
		int64_t at = 2000 + (int64_t)i * 1000;
		struct strobe_arg args[] = {
		    {.key = "correlation", .kind = STROBE_ARG_U64, .value.u64 = 100 + i},
		    {.key = "External id", .kind = STROBE_ARG_I64, .value.i64 = -(int64_t)i},
		    {.key = "ratio", .kind = STROBE_ARG_F64, .value.f64 = 0.25 * (double)i},
		    {.key = "sync", .kind = STROBE_ARG_BOOL, .value.b = i % 2},
		    {.key = "shape", .kind = STROBE_ARG_JSON, .value.str = "[[2, 3], {\"k\": null}]"},
		    {.key = "note", .kind = STROBE_ARG_STRING, .value.str = "line\nbreak \"quoted\""},
		};
		struct strobe_activity launch = {
		    .size = sizeof(launch),
		    .type = STROBE_ACTIVITY_CUDA_RUNTIME,
		    .name = "cudaLaunchKernel",
		    .start_ns = at,
		    .end_ns = at + 300,
		    .device = PID,
		    .resource = 77,
		    .id = 100 + i,
		    .flow_id = 100 + i,
		    .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU,
		    .args = args,
		    .arg_count = sizeof(args) / sizeof(args[0]),
		};
		assert_int_equal(strb_trace_add_copy(t, &launch), 0);
		struct strobe_activity *k = strb_trace_push(t);
		assert_non_null(k);
		const char *name = i % 2 ? "gemm_kernel<float, 128>" : "elementwise";
		*k = (struct strobe_activity){
		    .size = sizeof(*k),
		    .type = STROBE_ACTIVITY_CONCURRENT_KERNEL,
		    .name = strb_trace_intern(t, name, strlen(name)),
		    .start_ns = at + 500,
		    .end_ns = at + 900,
		    .device = 0,
		    .resource = 7,
		    .linked_id = 100 + i,
		    .flow_id = 100 + i,
		    .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU,
		    .category = strb_trace_intern(t, "kernel", 6),
		};
		assert_int_equal(strb_trace_render_args(t, &recs[i % 3]), 0);
	}
	struct strobe_resource rows[] = {
	    {.size = sizeof(rows[0]),
	     .kind = STROBE_RESOURCE_PROCESS,
	     .device = 0,
	     .name = "GPU 0",
	     .label = "GPU 0 (H200)",
	     .sort_index = 5000},
	    {.size = sizeof(rows[0]),
	     .kind = STROBE_RESOURCE_STREAM,
	     .device = 0,
	     .resource = 7,
	     .name = "stream 7"},
	};
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(strb_trace_add_resource(t, &rows[i]), 0);
	struct strobe_arg meta[] = {
	    {.key = "cupti_version", .kind = STROBE_ARG_I64, .value.i64 = 130100},
	    {.key = "cuda_driver", .kind = STROBE_ARG_STRING, .value.str = "13.1"},
	};
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(strb_trace_set_meta(t, &meta[i]), 0);
	t->device_properties = "{\"id\": 0, \"name\": \"H200\"}";
	return t;
}

static struct strobe_trace *empty_like(const struct strobe_trace *t)
{
	struct strobe_trace *u = strb_trace_new();
	assert_non_null(u);
	u->pid = t->pid;
	u->start_ns = t->start_ns;
	u->end_ns = t->end_ns;
	return u;
}

/* The trace as a file, saved to the same path each time. */
static char *saved(struct strobe_trace *t)
{
	static char path[1200];
	if (!path[0])
		snprintf(path, sizeof(path), "%s/trace.json", tu_mkdtemp());
	assert_int_equal(strobe_trace_save(t, path), 0);
	size_t len;
	char *text = tu_read_file(path, &len);
	assert_non_null(text);
	return text;
}

static void test_round_trip_writes_the_same_trace(void **state)
{
	(void)state;
	struct strobe_trace *t = sample(9);
	void *block;
	size_t len;
	assert_int_equal(strb_pack_trace(t, SIZE_MAX, &block, &len), 0);
	assert_int_equal(((struct strb_pack_header *)block)->left_out, 0);
	/* Each name, key and string is there once. */
	assert_int_equal(((struct strb_pack_header *)block)->nacts, 18);
	struct strobe_trace *u = empty_like(t);
	uint64_t old = 0;
	char err[256];
	assert_int_equal(strb_unpack_trace(u, block, len, 0, &old, err, sizeof(err)), 0);
	assert_int_equal(old, 0);
	assert_int_equal(u->count, t->count);
	assert_int_equal(u->stats.gpu_records, 18);
	assert_int_equal(u->stats.gpu_aged_buffers, 3);
	char *a = saved(t), *b = saved(u);
	assert_string_equal(a, b);
	tu_assert_contains(b, "\"stream name\": \"copy \\\"h2d\\\"\"");
	tu_assert_contains(b, "\"grid\": 4096");
	tu_assert_contains(b, "\"name\": \"H200\"");
	free(a);
	free(b);
	free(block);
	strobe_trace_destroy(t);
	strobe_trace_destroy(u);
}

static void test_a_limit_keeps_the_newest(void **state)
{
	(void)state;
	struct strobe_trace *t = sample(100);
	void *all, *some;
	size_t all_len, some_len;
	assert_int_equal(strb_pack_trace(t, SIZE_MAX, &all, &all_len), 0);
	assert_int_equal(strb_pack_trace(t, all_len / 2, &some, &some_len), 0);
	assert_true(some_len <= all_len / 2);
	const struct strb_pack_header *h = some;
	assert_true(h->nacts > 50 && h->nacts < 200);
	assert_int_equal(h->left_out + h->nacts, 200);
	struct strobe_trace *u = empty_like(t);
	uint64_t old = 0;
	char err[256];
	assert_int_equal(strb_unpack_trace(u, some, some_len, 0, &old, err, sizeof(err)), 0);
	/* The newest ones, in the trace's order, and the rows and metadata. */
	assert_int_equal(u->count, h->nacts);
	assert_int_equal(u->acts[u->count - 1].end_ns, t->acts[t->count - 1].end_ns);
	assert_int_equal(u->acts[0].start_ns, t->acts[h->left_out].start_ns);
	assert_int_equal(u->res_count, 2);
	assert_int_equal(u->meta_count, 2);
	/* Activities ending before from_ns are counted, not added. */
	struct strobe_trace *v = empty_like(t);
	int64_t from = t->acts[150].end_ns;
	assert_int_equal(strb_unpack_trace(v, all, all_len, from, &old, err, sizeof(err)), 0);
	assert_int_equal(old, 150);
	assert_int_equal(v->count, 50);
	free(all);
	free(some);
	strobe_trace_destroy(t);
	strobe_trace_destroy(u);
	strobe_trace_destroy(v);
}

/* Unpacks a copy of block with one change; returns the error text. */
static int unpack_changed(const void *block, size_t len, size_t at, const void *bytes, size_t n, char *err,
                          size_t errlen)
{
	uint64_t *copy = malloc((len + 7) & ~(size_t)7);
	assert_non_null(copy);
	memcpy(copy, block, len);
	memcpy((char *)copy + at, bytes, n);
	struct strobe_trace *u = strb_trace_new();
	uint64_t old = 0;
	int rc = strb_unpack_trace(u, copy, len, 0, &old, err, errlen);
	if (rc)
		assert_int_equal(u->count + u->res_count + u->meta_count, 0);
	strobe_trace_destroy(u);
	free(copy);
	return rc;
}

static void test_damage_is_named(void **state)
{
	(void)state;
	struct strobe_trace *t = sample(4);
	void *block;
	size_t len;
	assert_int_equal(strb_pack_trace(t, SIZE_MAX, &block, &len), 0);
	const struct strb_pack_header *h = block;
	char err[256];
	assert_int_equal(unpack_changed(block, len, 0, "STRBPAC!", 8, err, sizeof(err)), -EINVAL);
	tu_assert_contains(err, "does not begin with STRBPACK");
	/* Cut short. */
	struct strobe_trace *u = strb_trace_new();
	uint64_t old = 0;
	assert_int_equal(strb_unpack_trace(u, block, len - 8, 0, &old, err, sizeof(err)), -EINVAL);
	tu_assert_contains(err, "bytes, but");
	strobe_trace_destroy(u);
	/* An activity's name beyond the strings. */
	size_t acts =
	    sizeof(*h) + ((((size_t)h->nstrings + 1) * 4 + 7) & ~(size_t)7) + ((h->blob + 7) & ~7ull);
	uint32_t big = h->nstrings + 5;
	assert_int_equal(unpack_changed(block, len, acts + offsetof(struct strb_pack_act, name), &big,
	                                sizeof(big), err, sizeof(err)),
	                 -EINVAL);
	tu_assert_contains(err, "activity 0 names string");
	/* A type that is none. */
	uint32_t type = 999;
	assert_int_equal(unpack_changed(block, len, acts + offsetof(struct strb_pack_act, type), &type,
	                                sizeof(type), err, sizeof(err)),
	                 -EINVAL);
	tu_assert_contains(err, "activity 0 has type 999");
	/* Args past the end. */
	uint32_t many = 1000;
	assert_int_equal(unpack_changed(block, len, acts + offsetof(struct strb_pack_act, arg_count), &many,
	                                sizeof(many), err, sizeof(err)),
	                 -EINVAL);
	tu_assert_contains(err, "args run past");
	/* Every byte flipped in turn, and random bytes: an error or a trace,
	 * never a crash (AddressSanitizer watches the reads). */
	uint64_t rng = 42;
	for (size_t at = 0; at < len; at++) {
		uint8_t v = (uint8_t)(((const uint8_t *)block)[at] ^ (1u << (tu_xorshift(&rng) % 8)));
		int rc = unpack_changed(block, len, at, &v, 1, err, sizeof(err));
		assert_true(rc == 0 || (rc == -EINVAL && err[0]));
	}
	free(block);
	strobe_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip_writes_the_same_trace),
	    cmocka_unit_test(test_a_limit_keeps_the_newest),
	    cmocka_unit_test(test_damage_is_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

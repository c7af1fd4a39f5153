/* The vendor-neutral GPU layer every backend decodes into: linking GPU work
 * to the launching call and strobe's ops and ranges with 64-bit
 * correlation ids (ROCm's are), spans, rows and accounting; the budgeted
 * buffer pool; and the correlation hooks of several backends at once. */
#include "testutil.h"

#include <stdint.h>
#include <string.h>

#include "core/capture.h"
#include "core/clock.h"
#include "process/gpu.h"
#include "process/gpu_buffers.h"
#include "strobe/strobe.h"

#define PID 4242
#define TID 7

static void push_cpu(struct strobe_trace *t, enum strobe_activity_type type, const char *name, int64_t s,
                     int64_t e, uint64_t id)
{
	struct strobe_activity *a = strb_trace_push(t);
	assert_non_null(a);
	a->type = type;
	a->name = strb_trace_intern(t, name, strlen(name));
	a->start_ns = s;
	a->end_ns = e;
	a->device = PID;
	a->resource = TID;
	a->id = id;
}

static const struct strobe_resource *find_res(const struct strobe_trace *t, enum strobe_resource_kind kind,
                                              int64_t device, int64_t resource)
{
	for (size_t i = 0; i < t->res_count; i++)
		if (t->res[i].kind == kind && t->res[i].device == device && t->res[i].resource == resource)
			return &t->res[i];
	return NULL;
}

static void test_links_work_with_64bit_ids(void **state)
{
	(void)state;
	struct strb_clock_map map = {0};
	assert_int_equal(strb_clock_map_begin(&map), 0);
	struct strobe_trace *t = strb_trace_new();
	assert_non_null(t);
	t->pid = PID;
	push_cpu(t, STROBE_ACTIVITY_CPU_OP, "step", 100, 1000, 42);
	push_cpu(t, STROBE_ACTIVITY_USER_ANNOTATION, "forward", 200, 900, 43);
	struct strb_window w = {.start_ns = 0, .stop_ns = INT64_MAX, .map = &map, .mask = ~UINT64_C(0)};

	struct strb_gpu g;
	strb_gpu_init(&g, t, &w);
	g.count_unmatched = true;
	const uint64_t corr = (UINT64_C(1) << 40) + 5, lost = UINT64_C(1) << 41;
	struct strb_gpu_call call = {.corr = corr, .tid = TID, .start = 300, .end = 400};
	strb_gpu_add_call(&g, &call);
	g.st->gpu_records = 3;
	strb_gpu_build_table(&g);
	strb_gpu_link_calls(&g);
	assert_int_equal(g.rc, 0);
	assert_int_equal(g.calls[0].op_id, 42);
	assert_int_equal(g.calls[0].range_id, 43);
	g.calls[0].emitted = g.calls[0].flow = g.calls[0].launch = true;

	struct strobe_activity *k =
	    strb_gpu_emit(&g, STROBE_ACTIVITY_CONCURRENT_KERNEL, "k", 500, 600, 1, 3, NULL, 0);
	assert_non_null(k);
	struct strb_gpu_call *c = strb_gpu_link(&g, k, corr, 500, true);
	assert_ptr_equal(c, &g.calls[0]);
	c->got_kernel = true;
	strb_gpu_note_row(&g, 1, 3, 500, 600);
	assert_int_equal(k->id, corr);
	assert_int_equal(k->linked_id, 42); /* External id: the enclosing op */
	assert_int_equal(k->flow_id, corr);
	assert_int_equal(k->flow_kind, STROBE_FLOW_ASYNC_CPU_GPU);

	/* Work whose call is missing is counted, not linked. */
	struct strobe_activity *m =
	    strb_gpu_emit(&g, STROBE_ACTIVITY_GPU_MEMCPY, "m", 650, 700, 1, 3, NULL, 0);
	assert_null(strb_gpu_link(&g, m, lost, 650, true));
	assert_int_equal(m->linked_id, 0);
	assert_int_equal(m->flow_id, 0);
	strb_gpu_note_row(&g, 1, 3, 650, 700);
	assert_int_equal(t->stats.gpu_unmatched_correlations, 1);
	assert_false(g.overlap);

	/* Incomplete and paused work is dropped and counted. */
	struct strb_gpu_pauses p = {0};
	strb_gpu_pause(&p, false, 1000);
	strb_gpu_pause(&p, true, 2000);
	g.pauses = &p;
	int64_t s, e;
	assert_false(strb_gpu_record_ok(&g, 0, 10, &s, &e));
	assert_false(strb_gpu_record_ok(&g, 1500, 1600, &s, &e));
	assert_int_equal(t->stats.gpu_incomplete_records, 1);
	assert_int_equal(t->stats.gpu_paused_records, 1);

	size_t before = t->count;
	strb_gpu_emit_spans(&g);
	assert_int_equal(strb_gpu_count_launches(&g), 0);
	assert_int_equal(t->stats.gpu_launches, 1);
	strb_gpu_add_rows(&g);
	assert_int_equal(g.rc, 0);
	strb_gpu_free(&g);

	/* One span for the range, on the row of the work it launched. */
	assert_int_equal(t->count, before + 1);
	const struct strobe_activity *sp = &t->acts[before];
	assert_int_equal(sp->type, STROBE_ACTIVITY_GPU_USER_ANNOTATION);
	assert_string_equal(sp->name, "forward");
	assert_int_equal(sp->start_ns, 500);
	assert_int_equal(sp->end_ns, 600); /* the unlinked copy does not widen it */
	assert_int_equal(sp->device, 1);
	assert_int_equal(sp->resource, 3);
	const struct strobe_resource *gpu = find_res(t, STROBE_RESOURCE_PROCESS, 1, 0);
	assert_non_null(gpu);
	assert_string_equal(gpu->label, "GPU 1");
	const struct strobe_resource *row = find_res(t, STROBE_RESOURCE_STREAM, 1, 3);
	assert_non_null(row);
	assert_string_equal(row->name, "stream 3 ");
	strobe_trace_destroy(t);
	strb_clock_map_free(&map);
}

/* The buffers a completed list holds, and their valid bytes in order. */
static size_t ready_list(struct strb_gpu_pool *pool, size_t *valid, size_t max)
{
	struct strb_gpu_buffer *copy;
	bool failed;
	copy = strb_gpu_pool_copy(pool, &failed);
	assert_false(failed);
	size_t n = 0;
	for (const struct strb_gpu_buffer *b = copy; b; b = b->next) {
		assert_true(n < max);
		valid[n++] = b->valid;
	}
	strb_gpu_pool_free_copy(copy);
	return n;
}

/* Flight mode: the budget counts bytes; a buffer handed back mostly empty
 * (as a flush leaves them) is kept at its size, so several fit where one
 * full one would; at the budget the oldest make room, a full one's memory
 * used again; when the budget is all out with the vendor, a request is
 * refused; none is lost or leaked on the way (ASan watches). */
static void test_pool_rotation_in_bytes(void **state)
{
	(void)state;
	static struct strb_gpu_pool pool = STRB_GPU_POOL_INIT(pool);
	strb_gpu_pool_set_rotate_next(true);
	strb_gpu_pool_begin(&pool, 4096, 4096, true); /* room for two 4096-byte buffers */
	strb_gpu_pool_set_rotate_next(false);
	size_t size, valid[16];
	/* Five small flushes: 5 x 64 bytes kept, where counting buffers would
	 * have kept two. */
	for (int i = 0; i < 5; i++) {
		uint8_t *b = strb_gpu_pool_request(&pool, &size);
		assert_non_null(b);
		assert_int_equal(size, 4096);
		memset(b, i, 64);
		strb_gpu_pool_complete(&pool, b, 64);
	}
	assert_int_equal(ready_list(&pool, valid, 16), 5);
	/* One full buffer out fits beside them; a second needs their room. */
	uint8_t *f1 = strb_gpu_pool_request(&pool, &size);
	assert_non_null(f1);
	assert_int_equal(ready_list(&pool, valid, 16), 5);
	uint8_t *f2 = strb_gpu_pool_request(&pool, &size);
	assert_non_null(f2);
	assert_int_equal(ready_list(&pool, valid, 16), 0);
	/* Everything is out with the vendor: refused. */
	assert_null(strb_gpu_pool_request(&pool, &size));
	strb_gpu_pool_complete(&pool, f1, 4096);
	/* The full one ages and its memory is used again. */
	uint8_t *f3 = strb_gpu_pool_request(&pool, &size);
	assert_ptr_equal(f3, f1);
	assert_int_equal(ready_list(&pool, valid, 16), 0);
	strb_gpu_pool_complete(&pool, f2, 100);
	strb_gpu_pool_complete(&pool, f3, 200);
	assert_int_equal(ready_list(&pool, valid, 16), 2);
	assert_int_equal(valid[0], 100);
	assert_int_equal(valid[1], 200);
	struct strb_trace_stats st = {0};
	strb_gpu_pool_account(&pool, &st);
	assert_int_equal(st.gpu_aged_buffers, 6);
	assert_int_equal(st.gpu_rejected_buffers, 1);
	strb_gpu_pool_free(&pool, strb_gpu_pool_take(&pool));
	strb_gpu_pool_set_active(&pool, false);
}

static void test_pool_budget(void **state)
{
	(void)state;
	static struct strb_gpu_pool pool = STRB_GPU_POOL_INIT(pool);
	strb_gpu_pool_begin(&pool, 0, 64, true); /* room for one buffer */
	size_t size1 = 0, size2 = 1;
	uint8_t *b1 = strb_gpu_pool_request(&pool, &size1);
	assert_non_null(b1);
	assert_int_equal(size1, 64);
	assert_null(strb_gpu_pool_request(&pool, &size2));
	assert_int_equal(size2, 0);
	assert_int_equal(strb_gpu_pool_outstanding(&pool), 1);
	strb_gpu_pool_complete(&pool, b1, 10);
	assert_int_equal(strb_gpu_pool_outstanding(&pool), 0);
	struct strb_gpu_buffer *got = strb_gpu_pool_take(&pool);
	assert_non_null(got);
	assert_ptr_equal(got->data, b1);
	assert_int_equal(got->valid, 10);
	assert_null(got->next);
	strb_gpu_pool_free(&pool, got);
	/* Back in the budget. */
	uint8_t *b3 = strb_gpu_pool_request(&pool, &size1);
	assert_non_null(b3);
	strb_gpu_pool_set_active(&pool, false);
	strb_gpu_pool_complete(&pool, b3, 1); /* after release: freed */
	assert_null(strb_gpu_pool_take(&pool));
	struct strb_trace_stats st = {0};
	strb_gpu_pool_add_dropped(&pool, 5);
	strb_gpu_pool_account(&pool, &st);
	assert_int_equal(st.gpu_rejected_buffers, 1);
	assert_int_equal(st.gpu_dropped_records, 5);
	assert_int_equal(st.gpu_discarded_buffers, 0);
	/* A second backend's counts add up in the same trace. */
	strb_gpu_pool_account(&pool, &st);
	assert_int_equal(st.gpu_rejected_buffers, 2);
	assert_int_equal(st.gpu_dropped_records, 10);
}

static int pushes[2], pops[2];

static bool hook_takes(uint32_t which, const uint64_t *id)
{
	(void)which;
	if (id)
		pushes[0]++;
	else
		pops[0]++;
	return true;
}

static bool hook_refuses(uint32_t which, const uint64_t *id)
{
	(void)which;
	if (id)
		pushes[1]++;
	else
		pops[1]++;
	return false;
}

static void test_hooks_of_two_backends(void **state)
{
	(void)state;
	memset(pushes, 0, sizeof(pushes));
	memset(pops, 0, sizeof(pops));
	strb_gpu_set_correlation_hook(STRB_GPU_CUDA, hook_refuses);
	uint64_t id = 9;
	assert_false(strb_capture_notify_correlation(0, &id)); /* nobody took it */
	strb_gpu_set_correlation_hook(STRB_GPU_ROCM, hook_takes);
	assert_true(strb_capture_notify_correlation(0, &id));
	assert_true(strb_capture_notify_correlation(1, &id));
	strb_capture_notify_correlation(1, NULL);
	strb_capture_notify_correlation(0, NULL);
	/* Pops go only to the backend that took the push. */
	assert_int_equal(pushes[0], 2);
	assert_int_equal(pops[0], 2);
	assert_int_equal(pushes[1], 3);
	assert_int_equal(pops[1], 0);

	/* Deeper than remembered: handed back at once, not taken. */
	strb_gpu_set_correlation_hook(STRB_GPU_CUDA, NULL);
	int taken = 0;
	for (int i = 0; i < 300; i++)
		taken += strb_capture_notify_correlation(0, &id);
	assert_int_equal(taken, 256);
	assert_int_equal(pops[0] - 2, 300 - 256);
	for (int i = 0; i < taken; i++)
		strb_capture_notify_correlation(0, NULL);
	assert_int_equal(pops[0] - 2, 300);
	strb_gpu_set_correlation_hook(STRB_GPU_ROCM, NULL);
	assert_false(strb_capture_notify_correlation(0, &id));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_links_work_with_64bit_ids),
	    cmocka_unit_test(test_pool_budget),
	    cmocka_unit_test(test_pool_rotation_in_bytes),
	    cmocka_unit_test(test_hooks_of_two_backends),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

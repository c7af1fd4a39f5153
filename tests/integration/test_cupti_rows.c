/* GPU rows as a viewer gets them, driven through the fake libcupti: work
 * that overlaps on one stream moves to "stream S (overlap k)" rows with its
 * arrow, touching or separate work stays where it is, and the devices'
 * UUIDs reach the trace's distributedInfo. */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>

#define LAUNCH    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define LANE_STEP 1099511627776.0 /* 2^40: lane k of stream S has tid k * 2^40 + S */
#define US        1000

static char path_buf[1200];
static uint64_t base;

static int setup(void **state)
{
	(void)state;
	fake_cupti_reset();
	return 0;
}

static void begin(void)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	base = ct_stamp_after(0, 0);
}

/* A launch call, then its kernel on (device, stream) from base + from_us
 * to base + to_us. Returns the correlation id. */
static uint32_t kernel_at(uint32_t device, uint32_t stream, uint64_t from_us, uint64_t to_us,
                          const char *name)
{
	uint64_t s = ct_stamp_after(0, 0);
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, LAUNCH, s, s + 10);
	assert_true(corr > 0);
	CT_QUEUE(ct_kernel(corr, device, stream, base + from_us * US, base + to_us * US, name));
	return corr;
}

static yajl_val finish(const char *name, uint64_t last_us)
{
	return ct_stop_and_load(base, (last_us + 5) * US, name, path_buf, sizeof(path_buf));
}

static bool num_is(yajl_val obj, const char *key, double v)
{
	yajl_val x = tu_get(obj, key);
	return x && YAJL_IS_NUMBER(x) && YAJL_GET_DOUBLE(x) == v;
}

/* The one event with ph and name. */
static yajl_val only(yajl_val root, const char *ph, const char *name)
{
	if (tu_count(root, ph, NULL, name) != 1)
		fail_msg("%zu \"%s\" events named %s; expected 1", tu_count(root, ph, NULL, name), ph, name);
	return tu_find(root, ph, NULL, name);
}

/* The row (tid) of kernel `name`; its arrow's end must be on the same row. */
static double row_of(yajl_val root, const char *name, uint32_t corr)
{
	yajl_val k = only(root, "X", name);
	double tid = YAJL_GET_DOUBLE(tu_get(k, "tid"));
	yajl_val evs = tu_events(root);
	size_t ends = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *ph = tu_get_str(e, "ph");
		if (ph && !strcmp(ph, "f") && num_is(e, "id", corr)) {
			assert_true(num_is(e, "tid", tid));
			assert_true(num_is(e, "pid", YAJL_GET_DOUBLE(tu_get(k, "pid"))));
			ends++;
		}
	}
	assert_int_equal(ends, 1);
	return tid;
}

/* thread_name and thread_sort_index of (pid, tid); NULL name if absent. */
static const char *row_name(yajl_val root, double pid, double tid, double *sort)
{
	yajl_val evs = tu_events(root);
	const char *name = NULL;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *what = tu_get_str(e, "name");
		if (!what || !num_is(e, "pid", pid) || !num_is(e, "tid", tid) ||
		    strcmp(tu_get_str(e, "ph"), "M"))
			continue;
		if (!strcmp(what, "thread_name"))
			name = tu_get_str(tu_get(e, "args"), "name");
		else if (!strcmp(what, "thread_sort_index") && sort)
			*sort = tu_get_num(tu_get(e, "args"), "sort_index");
	}
	return name;
}

static size_t overlap_rows(yajl_val root)
{
	size_t n = 0;
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *what = tu_get_str(e, "name");
		const char *title = tu_get_str(tu_get(e, "args"), "name");
		n += what && !strcmp(what, "thread_name") && title && strstr(title, "(overlap ");
	}
	return n;
}

static void test_overlapping_kernels_get_two_rows(void **state)
{
	(void)state;
	begin();
	uint32_t a = kernel_at(0, 7, 10, 30, "first");
	uint32_t b = kernel_at(0, 7, 20, 40, "second"); /* starts while "first" runs */
	yajl_val root = finish("overlap", 40);
	assert_true(row_of(root, "first", a) == 7);
	assert_true(row_of(root, "second", b) == LANE_STEP + 7);
	double sort = -1;
	assert_string_equal(row_name(root, 0, LANE_STEP + 7, &sort), "stream 7 (overlap 1)");
	assert_true(sort == 7); /* sorts with its stream, right after "stream 7 " by name */
	assert_string_equal(row_name(root, 0, 7, NULL), "stream 7 ");
	/* It keeps its full time span: the same as "first", which spans as long
	 * and did not move (both go through the same clock map; its slope,
	 * measured over this short trace, may differ from the nominal rate). */
	int64_t moved = tu_get_ns(only(root, "X", "second"), "dur");
	int64_t stayed = tu_get_ns(only(root, "X", "first"), "dur");
	assert_true(llabs(moved - stayed) <= 2);
	assert_true(llabs(moved - 20 * US) <= 20 * US / 100);
	assert_true(ct_stat(root, "gpu_overlap_moved") == 1);
	yajl_tree_free(root);
}

/* Overlap found after thousands of kernels, which the trace had already
 * encoded while it decoded them: the overlap pass still moves the late
 * kernel, leaves the early ones as they were, and the range around them all
 * still gets its GPU span. */
static void test_overlap_after_many_kernels(void **state)
{
	(void)state;
	enum { MANY = 6000 };
	begin();
	strobe_range_push("phase");
	for (uint64_t i = 0; i < MANY; i++)
		kernel_at(0, 3, 10 + 2 * i, 11 + 2 * i, "many");
	uint64_t at = 20 + 2 * MANY;
	uint32_t a = kernel_at(0, 7, at, at + 20, "first");
	uint32_t b = kernel_at(0, 7, at + 10, at + 30, "second");
	strobe_range_pop();
	yajl_val root = finish("overlap_late", at + 30);
	assert_true(row_of(root, "first", a) == 7);
	assert_true(row_of(root, "second", b) == LANE_STEP + 7);
	assert_true(ct_stat(root, "gpu_overlap_moved") == 1);
	assert_int_equal(tu_count(root, "X", "kernel", "many"), MANY);
	/* Every early kernel on its own stream, where it was. */
	yajl_val evs = tu_events(root);
	size_t on_3 = 0;
	int64_t first_ts = INT64_MAX, last_end = INT64_MIN;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *name = tu_get_str(e, "name");
		if (!name || strcmp(name, "many"))
			continue;
		on_3 += num_is(e, "tid", 3);
		int64_t ts = tu_get_ns(e, "ts");
		first_ts = ts < first_ts ? ts : first_ts;
		last_end = ts + tu_get_ns(e, "dur") > last_end ? ts + tu_get_ns(e, "dur") : last_end;
	}
	assert_int_equal(on_3, MANY);
	yajl_val span = NULL;
	yajl_val evs2 = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs2)->len && !span; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs2)->values[i];
		const char *cat = tu_get_str(e, "cat"), *name = tu_get_str(e, "name");
		if (cat && name && !strcmp(cat, "gpu_user_annotation") && !strcmp(name, "phase") &&
		    num_is(e, "tid", 3))
			span = e;
	}
	if (!span)
		fail_msg("no gpu_user_annotation \"phase\" on stream 3");
	assert_int_equal(tu_get_ns(span, "ts"), first_ts - 1);
	assert_int_equal(tu_get_ns(span, "ts") + tu_get_ns(span, "dur"), last_end + 1);
	yajl_tree_free(root);
}

/* Kernels wholly inside another one would be drawn as its children. */
static void test_nested_kernels_move(void **state)
{
	(void)state;
	begin();
	uint32_t outer = kernel_at(0, 3, 10, 100, "outer");
	uint32_t in1 = kernel_at(0, 3, 20, 40, "inner1");
	uint32_t in2 = kernel_at(0, 3, 40, 60, "inner2");      /* touches inner1: same lane */
	uint32_t in3 = kernel_at(0, 3, 50, 55, "inner3");      /* inside inner2: a third row */
	uint32_t same = kernel_at(0, 3, 10, 20, "same_start"); /* starts with outer, shorter */
	uint32_t after = kernel_at(0, 3, 100, 110, "after");   /* touches outer's end */
	yajl_val root = finish("nested", 110);
	assert_true(row_of(root, "outer", outer) == 3);
	assert_true(row_of(root, "same_start", same) == LANE_STEP + 3);
	assert_true(row_of(root, "inner1", in1) == LANE_STEP + 3);
	assert_true(row_of(root, "inner2", in2) == LANE_STEP + 3);
	assert_true(row_of(root, "inner3", in3) == 2 * LANE_STEP + 3);
	assert_true(row_of(root, "after", after) == 3);
	assert_string_equal(row_name(root, 0, 2 * LANE_STEP + 3, NULL), "stream 3 (overlap 2)");
	assert_int_equal(overlap_rows(root), 2);
	assert_true(ct_stat(root, "gpu_overlap_moved") == 4);
	yajl_tree_free(root);
}

static void test_touching_and_separate_work_unchanged(void **state)
{
	(void)state;
	begin();
	uint32_t a = kernel_at(0, 7, 10, 20, "a");
	uint32_t b = kernel_at(0, 7, 20, 30, "b"); /* end == start: not an overlap */
	uint32_t c = kernel_at(0, 9, 15, 25, "c"); /* overlaps a and b, on another stream */
	uint32_t d = kernel_at(1, 7, 12, 22, "d"); /* same stream number, another device */
	uint32_t e = kernel_at(0, 7, 50, 60, "e");
	uint32_t f = kernel_at(0, 7, 35, 45, "f"); /* delivered out of order, no overlap */
	yajl_val root = finish("touching", 60);
	assert_true(row_of(root, "a", a) == 7);
	assert_true(row_of(root, "b", b) == 7);
	assert_true(row_of(root, "c", c) == 9);
	assert_true(row_of(root, "d", d) == 7);
	assert_true(row_of(root, "e", e) == 7);
	assert_true(row_of(root, "f", f) == 7);
	assert_int_equal(overlap_rows(root), 0);
	assert_true(ct_stat(root, "gpu_overlap_moved") == 0);
	yajl_tree_free(root);
}

/* CUPTI's kernels on a row are in order, but work recorded through the API
 * lands on the same row across them: the row still gets its lanes. */
static void test_recorded_work_overlapping_cupti_row(void **state)
{
	(void)state;
	begin();
	struct strobe_activity k = {.size = sizeof(k),
	                            .type = STROBE_ACTIVITY_CONCURRENT_KERNEL,
	                            .name = "recorded",
	                            .start_ns = (int64_t)strobe_now_ns(),
	                            .device = 1,
	                            .resource = 7};
	uint32_t a = kernel_at(1, 7, 10, 20, "a");
	uint32_t b = kernel_at(1, 7, 30, 40, "b");
	ct_stamp_after(base, 45 * US);
	k.end_ns = (int64_t)strobe_now_ns();
	assert_int_equal(strobe_record(&k), 0);
	yajl_val root = finish("recorded_overlap", 45);
	/* The recorded kernel starts first and keeps the row; a and b, each
	 * inside it, move to the first overlap row. */
	assert_true(row_of(root, "a", a) == LANE_STEP + 7);
	assert_true(row_of(root, "b", b) == LANE_STEP + 7);
	assert_true(num_is(only(root, "X", "recorded"), "tid", 7));
	assert_true(ct_stat(root, "gpu_overlap_moved") == 2);
	yajl_tree_free(root);
}

/* A memcpy running under a kernel on its stream moves too. */
static void test_memcpy_overlapping_kernel(void **state)
{
	(void)state;
	begin();
	uint32_t k = kernel_at(0, 5, 10, 50, "k");
	uint64_t s = ct_stamp_after(0, 0);
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME,
	                               CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, s, s + 10);
	CUpti_ActivityMemcpy6 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
	    .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
	    .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .bytes = 4096,
	    .start = base + 20 * US,
	    .end = base + 30 * US,
	    .deviceId = 0,
	    .contextId = 100,
	    .streamId = 5,
	    .correlationId = corr,
	    .channelID = 0xffffffffu,
	};
	CT_QUEUE(m);
	yajl_val root = finish("memcpy", 50);
	assert_true(row_of(root, "k", k) == 5);
	assert_true(row_of(root, "Memcpy HtoD (Pinned -> Device)", corr) == LANE_STEP + 5);
	assert_true(ct_stat(root, "gpu_overlap_moved") == 1);
	yajl_tree_free(root);
}

/* The DEVICE records' UUIDs, in device order, with CUDA_VISIBLE_DEVICES. */
static void test_gpu_uuids_in_distributed_info(void **state)
{
	(void)state;
	setenv("CUDA_VISIBLE_DEVICES", "GPU-0a", 1);
	begin();
	for (uint32_t id = 0; id < 2; id++) {
		CUpti_ActivityDevice5 d = {
		    .kind = CUPTI_ACTIVITY_KIND_DEVICE,
		    .numThreadsPerWarp = 32,
		    .numMultiprocessors = 132,
		    .maxWarpsPerMultiprocessor = 64,
		    .id = id,
		    .name = "Test GPU",
		};
		for (int i = 0; i < 16; i++)
			d.uuid.bytes[i] = (char)(id * 16 + i);
		CT_QUEUE(d);
	}
	kernel_at(0, 7, 10, 20, "k");
	yajl_val root = finish("uuids", 20);
	unsetenv("CUDA_VISIBLE_DEVICES");
	yajl_val dist = tu_get(root, "distributedInfo");
	assert_non_null(dist);
	assert_string_equal(tu_get_str(dist, "cuda_visible_devices"), "GPU-0a");
	yajl_val u = tu_get(dist, "gpu_uuids");
	assert_true(u && YAJL_IS_ARRAY(u) && YAJL_GET_ARRAY(u)->len == 2);
	assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(u)->values[0]),
	                    "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
	assert_string_equal(YAJL_GET_STRING(YAJL_GET_ARRAY(u)->values[1]),
	                    "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
	yajl_tree_free(root);
}

int main(void)
{
	ct_use_fake();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_overlapping_kernels_get_two_rows, setup),
	    cmocka_unit_test_setup(test_nested_kernels_move, setup),
	    cmocka_unit_test_setup(test_overlap_after_many_kernels, setup),
	    cmocka_unit_test_setup(test_touching_and_separate_work_unchanged, setup),
	    cmocka_unit_test_setup(test_memcpy_overlapping_kernel, setup),
	    cmocka_unit_test_setup(test_recorded_work_overlapping_cupti_row, setup),
	    cmocka_unit_test_setup(test_gpu_uuids_in_distributed_info, setup),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

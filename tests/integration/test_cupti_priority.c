/* Kernel launch priority from CUDA 13.1 kernel records (CUpti_ActivityKernel11,
 * 224 bytes), through the fake libcupti reporting CUPTI 13.1: each kernel
 * gets libkineto's "priority" arg between "graph node id" and "channel", and
 * the longer records are walked correctly (the records after them decode).
 * Its own process: strobe reads the CUPTI version once, when it loads the
 * library. Records without the field (CUDA 13.0) are checked in
 * test_cupti_backend.c. */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>

#define LAUNCH CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define SYNC   CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020

static uint64_t last;

static uint64_t stamp(void)
{
	last = ct_stamp_after(last, 2000);
	return last;
}

static uint32_t queue_kernel(int32_t priority, uint32_t stream, const char *name)
{
	uint64_t s = stamp();
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, LAUNCH, s, stamp());
	assert_true(corr > 0);
	s = stamp();
	struct fake_cupti_kernel11 k = {.k = ct_kernel(corr, 0, stream, s, stamp(), name),
	                                .priority = priority};
	k.k.graphNodeId = 9;
	k.k.channelID = 2;
	assert_int_equal(fake_cupti_record_size(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), sizeof(k));
	CT_QUEUE(k);
	return corr;
}

static yajl_val kernel_event(yajl_val root, uint32_t corr)
{
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *cat = tu_get_str(e, "cat");
		yajl_val args = tu_get(e, "args");
		if (cat && !strcmp(cat, "kernel") && args && tu_get(args, "correlation") &&
		    tu_get_num(args, "correlation") == corr)
			return e;
	}
	fail_msg("no kernel with correlation %u", corr);
	return NULL;
}

/* Position of key among the event's args, or -1. */
static int arg_index(yajl_val ev, const char *key)
{
	yajl_val args = tu_get(ev, "args");
	for (size_t i = 0; args && i < YAJL_GET_OBJECT(args)->len; i++)
		if (!strcmp(YAJL_GET_OBJECT(args)->keys[i], key))
			return (int)i;
	return -1;
}

static void test_priority_arg(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	last = stamp();
	uint32_t high = queue_kernel(-5, 7, "_Z4highv");
	uint32_t normal = queue_kernel(0, 8, "_Z6normalv");
	/* A call after the longer records: it decodes only if they were walked
	 * with their own size. */
	uint64_t s = stamp();
	uint32_t sync = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, SYNC, s, stamp());
	stamp();
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	char path[1200];
	snprintf(path, sizeof(path), "%s/priority.json", tu_dir);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	yajl_val root = tu_load_trace(path);
	assert_non_null(root);

	yajl_val hi = kernel_event(root, high), lo = kernel_event(root, normal);
	assert_string_equal(tu_get_str(hi, "name"), "high()");
	assert_true(tu_get_num(tu_get(hi, "args"), "priority") == -5);
	assert_true(tu_get_num(tu_get(lo, "args"), "priority") == 0);
	assert_true(tu_get_num(tu_get(hi, "args"), "stream") == 7);
	assert_true(tu_get_num(tu_get(lo, "args"), "stream") == 8);
	/* libkineto's order: graph id, graph node id, priority, channel. */
	int node = arg_index(hi, "graph node id"), prio = arg_index(hi, "priority"),
	    chan = arg_index(hi, "channel");
	assert_true(node >= 0 && prio == node + 1 && chan == prio + 1);
	assert_true(tu_get_num(tu_get(hi, "args"), "graph node id") == 9);
	assert_true(tu_get_num(tu_get(hi, "args"), "channel") == 2);

	yajl_val rt = tu_find(root, "X", "cuda_runtime", "cudaDeviceSynchronize");
	assert_non_null(rt);
	assert_true(tu_get_num(tu_get(rt, "args"), "correlation") == sync);
	assert_true(ct_stat(root, "gpu_bad_buffers") == 0);
	assert_true(ct_stat(root, "gpu_launches_without_kernel") == 0);
	yajl_tree_free(root);
}

int main(void)
{
	ct_use_fake();
	fake_cupti_reset();
	fake_cupti_set_version(FAKE_CUPTI_VERSION_13_1 + 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_priority_arg),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

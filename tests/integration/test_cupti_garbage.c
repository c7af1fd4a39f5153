/* CUPTI records with random contents: every field of every record kind strobe
 * reads is filled with random bytes (pointers aside: CUPTI's names are
 * always valid strings), half of them with timestamps inside the window so
 * they reach the trace. Stopping, saving as JSON and Perfetto, and walking
 * the trace must all work, under the sanitizers too, and every record must
 * be counted. Device records with random limits go through the occupancy
 * calculator; kernels with random shapes through rendering.
 */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>

#define RECORDS 4000

static uint64_t seed = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	return tu_xorshift(&seed);
}

static const char *const names[] = {"_Z9vectorAddPKfS0_Pfi", "", "plain_kernel", "_Z", "_ZN2at6native", NULL};

static const CUpti_ActivityKind kinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    CUPTI_ACTIVITY_KIND_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_CUDA_EVENT,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_DEVICE,
};

union any {
	CUpti_ActivityKernel10 kernel;
	CUpti_ActivityMemcpy6 memcpy;
	CUpti_ActivityMemcpyPtoP4 p2p;
	CUpti_ActivityMemset4 memset;
	CUpti_ActivityAPI api;
	CUpti_ActivitySynchronization2 sync;
	CUpti_ActivityCudaEvent2 event;
	CUpti_ActivityOverhead3 overhead;
	CUpti_ActivityExternalCorrelation ext;
	CUpti_ActivityDevice5 device;
};

/* A time inside the window half the time, else anything at all. */
static uint64_t when(uint64_t lo, uint64_t hi)
{
	return next() & 1 ? lo + next() % (hi - lo) : next() >> (next() % 64);
}

static void randomize(union any *r, CUpti_ActivityKind kind, uint64_t lo, uint64_t hi)
{
	unsigned char *p = (unsigned char *)r;
	for (size_t i = 0; i < sizeof(*r); i++)
		p[i] = (unsigned char)next();
	uint64_t a = when(lo, hi), b = next() & 3 ? a + next() % 100000 : when(lo, hi);
	switch (kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		r->kernel.name = names[next() % (sizeof(names) / sizeof(names[0]))];
		r->kernel.start = a, r->kernel.end = b;
		r->kernel.deviceId = (uint32_t)(next() % 80); /* some past strobe's 64 devices */
		r->kernel.correlationId = (uint32_t)(next() & 7 ? next() % 64 : next());
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		r->memcpy.start = a, r->memcpy.end = b;
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		r->p2p.start = a, r->p2p.end = b;
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		r->memset.start = a, r->memset.end = b;
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		r->api.start = a, r->api.end = b;
		r->api.correlationId = (uint32_t)(next() & 7 ? next() % 64 : next());
		if (next() & 1)
			r->api.cbid = (CUpti_CallbackId)(next() % 400);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		r->sync.start = a, r->sync.end = b;
		r->sync.type = (CUpti_ActivitySynchronizationType)(next() % 8);
		break;
	case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
		r->event.deviceTimestamp = a;
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		r->overhead.start = a, r->overhead.end = b;
		break;
	case CUPTI_ACTIVITY_KIND_DEVICE:
		r->device.name = names[next() % (sizeof(names) / sizeof(names[0]))];
		r->device.id = (uint32_t)(next() % 80);
		if (next() & 1) /* sometimes limits the occupancy calculator accepts */
			r->device.numThreadsPerWarp = 32, r->device.maxWarpsPerMultiprocessor = 64;
		break;
	default:
		break;
	}
	r->kernel.kind = kind; /* every record starts with its kind */
}

static int count_cb(const struct strobe_activity *a, void *arg)
{
	size_t *n = arg;
	for (size_t i = 0; i < a->arg_count; i++)
		if (!a->args[i].key)
			return -1;
	(*n)++;
	return 0;
}

static void test_random_records(void **state)
{
	(void)state;
	/* Every GPU type, and waits on idle streams shown too. */
	uint64_t mask = 0;
	for (int t = 0; t < 64; t++)
		if (strobe_activity_type_name((enum strobe_activity_type)t))
			mask |= STROBE_ACTIVITY_BIT(t);
	assert_int_equal(strobe_prepare(mask, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=64"), 0);
	assert_int_equal(strobe_start(), 0);
	uint64_t lo = ct_stamp_after(0, 0);
	uint64_t hi = ct_stamp_after(lo, 20000000); /* a 20 ms window's worth */
	int queued = 0;
	for (int i = 0; i < RECORDS; i++) {
		union any r;
		CUpti_ActivityKind kind = kinds[next() % (sizeof(kinds) / sizeof(kinds[0]))];
		randomize(&r, kind, lo, hi);
		/* 0: a kind strobe did not enable, which CUPTI would not produce. */
		int taken = fake_cupti_queue(&r, fake_cupti_record_size(kind));
		assert_true(taken == 0 || taken == 1);
		queued += taken;
	}
	assert_true(queued > RECORDS / 2);
	ct_stamp_after(hi, 1000000);
	strobe_trace *t = NULL;
	int rc = strobe_stop(&t);
	if (rc)
		fail_msg("strobe_stop: %s: %s", strobe_status_string(rc), strobe_last_error());
	assert_non_null(t);

	char json[1200], pf[1200];
	snprintf(json, sizeof(json), "%s/garbage.json", tu_dir);
	snprintf(pf, sizeof(pf), "%s/garbage.pftrace", tu_dir);
	assert_int_equal(strobe_trace_save(t, json), 0);
	assert_int_equal(strobe_trace_save(t, pf), 0);
	size_t walked = 0;
	assert_int_equal(strobe_trace_foreach(t, count_cb, &walked), 0);
	assert_int_equal(walked, strobe_trace_activity_count(t));
	strobe_trace_destroy(t);

	yajl_val root = tu_load_trace(json);
	assert_non_null(root);
	assert_true(ct_stat(root, "gpu_records") == queued);
	/* Half the records were timed inside the window: some reached it. */
	assert_true(tu_count(root, "X", "kernel", NULL) > 0);
	yajl_tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_random_records),
	};
	ct_use_fake();
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

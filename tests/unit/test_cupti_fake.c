/* The fake libcupti (tests/fakes), exercised as the CUPTI backend sees it:
 * record sizes, flush and buffers, record walking, dropped records, external
 * correlation per thread, callback names, armed failures, the subscriber
 * slot. When the real libcupti.so.13 is installed, an oracle test walks the
 * same synthetic buffers through both libraries and compares.
 *
 * STROBE_TEST_LABELS: concurrency
 */
#include "testutil.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cupti.h"

#define MAX_GOT    512
#define MAX_RECORD 256

/* --- a consumer: buffer callbacks that collect what they are handed -------- */

struct got {
	uint32_t kind;
	union {
		unsigned char bytes[MAX_RECORD];
		CUpti_Activity activity;
		CUpti_ActivityAPI api;
		CUpti_ActivityKernel10 kernel;
		CUpti_ActivityMemcpy6 memcpy;
		CUpti_ActivityExternalCorrelation ext;
	} u;
};

static struct consumer {
	size_t buf_size;    /* what the request callback offers */
	size_t max_records; /* what it sets *maxNumRecords to */
	bool reject;        /* hand out NULL */
	struct got got[MAX_GOT];
	size_t n_got;
	size_t buffers;       /* completed */
	CUptiResult walk_end; /* how the last walk ended */
} c;

static void CUPTIAPI on_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	if (c.reject) {
		*buffer = NULL;
		*size = 0;
		return;
	}
	*buffer = aligned_alloc(8, c.buf_size);
	assert_non_null(*buffer);
	*size = c.buf_size;
	*max_records = c.max_records;
}

static void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	assert_null(ctx);
	assert_int_equal(stream, 0);
	assert_int_equal(size, c.buf_size);
	assert_true(valid <= size);
	/* The fake's lock is not held here: calling back in must not deadlock. */
	uint32_t version;
	assert_int_equal(cuptiGetVersion(&version), CUPTI_SUCCESS);
	(void)fake_cupti_pending();

	CUpti_Activity *rec = NULL;
	CUptiResult r;
	while ((r = cuptiActivityGetNextRecord(buffer, valid, &rec)) == CUPTI_SUCCESS) {
		assert_true(c.n_got < MAX_GOT);
		size_t n = fake_cupti_record_size(rec->kind);
		assert_true(n > 0 && n <= MAX_RECORD);
		struct got *g = &c.got[c.n_got++];
		g->kind = rec->kind;
		memcpy(g->u.bytes, rec, n);
	}
	c.walk_end = r;
	free(buffer);
	c.buffers++;
}

static int setup(void **state)
{
	(void)state;
	fake_cupti_reset();
	memset(&c, 0, sizeof(c));
	c.buf_size = 64 * 1024;
	return 0;
}

static void register_consumer(void)
{
	assert_int_equal(cuptiActivityRegisterCallbacks(on_request, on_complete), CUPTI_SUCCESS);
}

static void enable(CUpti_ActivityKind kind)
{
	assert_int_equal(cuptiActivityEnable(kind), CUPTI_SUCCESS);
}

static CUpti_ActivityKernel10 kernel(uint32_t correlation, uint64_t start, const char *name)
{
	CUpti_ActivityKernel10 k = {
	    .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	    .start = start,
	    .end = start + 1000,
	    .deviceId = 0,
	    .streamId = 7,
	    .correlationId = correlation,
	    .name = name,
	};
	return k;
}

static CUpti_ActivityMemcpy6 memcpy_rec(uint32_t correlation, uint64_t bytes)
{
	CUpti_ActivityMemcpy6 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
	    .bytes = bytes,
	    .start = 10,
	    .end = 20,
	    .correlationId = correlation,
	};
	return m;
}

/* --- the CUDA driver and runtime ---------------------------------------------- */

/* Versions answer before CUDA initialises; device calls wait for it; the
 * DEVICE record comes at initialisation only, and only if its kind is on
 * then, with the device's limits in CUPTI's layout. */
static void test_cuda_driver_and_device_records(void **state)
{
	(void)state;
	int v = 0;
	assert_int_equal(cuDriverGetVersion(&v), CUDA_SUCCESS);
	assert_int_equal(v, FAKE_CUDA_DEFAULT_VERSION);
	assert_int_equal(cudaRuntimeGetVersion(&v), cudaSuccess);
	assert_int_equal(v, FAKE_CUDA_DEFAULT_VERSION);
	fake_cupti_set_cuda_versions(12080, 0);
	assert_int_equal(cuDriverGetVersion(&v), CUDA_SUCCESS);
	assert_int_equal(v, 12080);
	assert_int_equal(cudaRuntimeGetVersion(&v), cudaErrorStubLibrary);
	int n = -1;
	CUdevice dev;
	assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuDeviceGet(&dev, 0), CUDA_ERROR_NOT_INITIALIZED);

	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_DEVICE);
	struct fake_cuda_device d = {
	    .name = "Fake GPU",
	    .total_global_mem = 80ull << 30,
	    .compute_major = 9,
	    .max_threads_per_sm = 2048,
	    .warp_size = 32,
	    .shared_mem_per_block = 49152,
	    .sm_count = 132,
	    .shared_mem_per_block_optin = 232448,
	    .uuid = {1, 2, 3},
	};
	assert_int_equal(fake_cupti_cuda_init(&d, 1), 1);
	assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
	assert_int_equal(n, 1);
	assert_int_equal(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
	assert_int_equal(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
	assert_int_equal(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
	                 CUDA_SUCCESS);
	assert_int_equal(n, 232448);
	assert_int_equal(cuDeviceGetAttribute(&n, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev),
	                 CUDA_ERROR_INVALID_VALUE);
	char name[4];
	assert_int_equal(cuDeviceGetName(name, sizeof(name), dev), CUDA_SUCCESS);
	assert_string_equal(name, "Fak"); /* cut to the buffer */
	size_t mem = 0;
	assert_int_equal(cuDeviceTotalMem(&mem, dev), CUDA_SUCCESS);
	assert_int_equal(mem, 80ull << 30);
	CUuuid u;
	assert_int_equal(cuDeviceGetUuid(&u, dev), CUDA_SUCCESS);
	assert_int_equal(u.bytes[2], 3);

	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);
	assert_int_equal(c.got[0].kind, CUPTI_ACTIVITY_KIND_DEVICE);
	CUpti_ActivityDevice5 r;
	memcpy(&r, c.got[0].u.bytes, sizeof(r));
	assert_int_equal(r.id, 0);
	assert_int_equal(r.numMultiprocessors, 132);
	assert_int_equal(r.maxWarpsPerMultiprocessor, 64);
	assert_int_equal(r.globalMemorySize, 80ull << 30);
	assert_string_equal(r.name, "Fake GPU");
	assert_int_equal(r.uuid.bytes[1], 2);

	/* The kind turned on after CUDA initialised: no record, ever. */
	fake_cupti_reset();
	assert_int_equal(fake_cupti_cuda_init(&d, 1), 0);
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_DEVICE);
	assert_int_equal(fake_cupti_pending(), 0);
	assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS); /* the driver still answers */
}

/* --- sizes, kinds, version, strings ------------------------------------------ */

static void test_record_sizes_are_the_cuda13_structs(void **state)
{
	(void)state;
	static const struct {
		CUpti_ActivityKind kind;
		size_t size;    /* the real libcupti.so.13's record size (notes §2.3) */
		size_t sizeof_; /* the header's latest struct */
	} kinds[] = {
	    {CUPTI_ACTIVITY_KIND_MEMCPY, 96, sizeof(CUpti_ActivityMemcpy6)},
	    {CUPTI_ACTIVITY_KIND_MEMSET, 88, sizeof(CUpti_ActivityMemset4)},
	    {CUPTI_ACTIVITY_KIND_KERNEL, 216, sizeof(CUpti_ActivityKernel10)},
	    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 216, sizeof(CUpti_ActivityKernel10)},
	    {CUPTI_ACTIVITY_KIND_DRIVER, 40, sizeof(CUpti_ActivityAPI)},
	    {CUPTI_ACTIVITY_KIND_RUNTIME, 40, sizeof(CUpti_ActivityAPI)},
	    {CUPTI_ACTIVITY_KIND_DEVICE, 184, sizeof(CUpti_ActivityDevice5)},
	    {CUPTI_ACTIVITY_KIND_CONTEXT, 32, sizeof(CUpti_ActivityContext3)},
	    {CUPTI_ACTIVITY_KIND_NAME, 32, sizeof(CUpti_ActivityName)},
	    {CUPTI_ACTIVITY_KIND_MARKER, 56, sizeof(CUpti_ActivityMarker2)},
	    {CUPTI_ACTIVITY_KIND_MARKER_DATA, 40, sizeof(CUpti_ActivityMarkerData2)},
	    {CUPTI_ACTIVITY_KIND_OVERHEAD, 56, sizeof(CUpti_ActivityOverhead3)},
	    {CUPTI_ACTIVITY_KIND_CDP_KERNEL, 144, sizeof(CUpti_ActivityCdpKernel)},
	    {CUPTI_ACTIVITY_KIND_MEMCPY2, 96, sizeof(CUpti_ActivityMemcpyPtoP4)},
	    {CUPTI_ACTIVITY_KIND_CUDA_EVENT, 56, sizeof(CUpti_ActivityCudaEvent2)},
	    {CUPTI_ACTIVITY_KIND_STREAM, 24, sizeof(CUpti_ActivityStream)},
	    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 56, sizeof(CUpti_ActivitySynchronization2)},
	    {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, 24, sizeof(CUpti_ActivityExternalCorrelation)},
	    {CUPTI_ACTIVITY_KIND_MEMORY, 80, sizeof(CUpti_ActivityMemory)},
	    {CUPTI_ACTIVITY_KIND_MEMORY2, 128, sizeof(CUpti_ActivityMemory4)},
	    {CUPTI_ACTIVITY_KIND_MEMORY_POOL, 80, sizeof(CUpti_ActivityMemoryPool3)},
	    {CUPTI_ACTIVITY_KIND_GRAPH_TRACE, 56, sizeof(CUpti_ActivityGraphTrace2)},
	    {CUPTI_ACTIVITY_KIND_JIT, 72, sizeof(CUpti_ActivityJit2)},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		assert_int_equal(kinds[i].sizeof_, kinds[i].size);
		assert_int_equal(fake_cupti_record_size(kinds[i].kind), kinds[i].size);
	}
	/* Kinds the real library refuses to walk. */
	static const CUpti_ActivityKind none[] = {0, 6, 7, 14, 15, 16, 21, 23, 24, 29, 32, 41, 44, 56, 9999};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		assert_int_equal(fake_cupti_record_size(none[i]), 0);

	/* A record built with an older struct is a test bug the fake reports. */
	enable(CUPTI_ACTIVITY_KIND_KERNEL);
	CUpti_ActivityKernel9 old = {.kind = CUPTI_ACTIVITY_KIND_KERNEL};
	assert_int_equal(fake_cupti_queue(&old, sizeof(old)), -1);
	CUpti_ActivityKernel10 cur = {.kind = CUPTI_ACTIVITY_KIND_KERNEL};
	assert_int_equal(fake_cupti_queue(&cur, sizeof(cur)), 1);
	CUpti_ActivityKernel10 bad = {.kind = (CUpti_ActivityKind)9999};
	assert_int_equal(fake_cupti_queue(&bad, sizeof(bad)), -1);
	assert_int_equal(fake_cupti_queue(NULL, 8), -1);
}

static void test_version(void **state)
{
	(void)state;
	uint32_t v = 0;
	assert_int_equal(cuptiGetVersion(&v), CUPTI_SUCCESS);
	assert_int_equal(v, 130001);
	fake_cupti_set_version(27);
	assert_int_equal(cuptiGetVersion(&v), CUPTI_SUCCESS);
	assert_int_equal(v, 27);
	assert_int_equal(cuptiGetVersion(NULL), CUPTI_ERROR_INVALID_PARAMETER);
	fake_cupti_reset();
	assert_int_equal(cuptiGetVersion(&v), CUPTI_SUCCESS);
	assert_int_equal(v, 130001);
}

static void test_result_strings(void **state)
{
	(void)state;
	const char *s = NULL;
	assert_int_equal(cuptiGetResultString(CUPTI_SUCCESS, &s), CUPTI_SUCCESS);
	assert_string_equal(s, "CUPTI_SUCCESS");
	assert_int_equal(cuptiGetResultString(CUPTI_ERROR_MAX_LIMIT_REACHED, &s), CUPTI_SUCCESS);
	assert_string_equal(s, "CUPTI_ERROR_MAX_LIMIT_REACHED");
	assert_int_equal(cuptiGetResultString(CUPTI_ERROR_UNKNOWN, &s), CUPTI_SUCCESS);
	assert_string_equal(s, "CUPTI_ERROR_UNKNOWN");
	assert_int_equal(cuptiGetResultString((CUptiResult)555, &s), CUPTI_ERROR_INVALID_PARAMETER);
	assert_string_equal(s, "<unknown>");
	assert_int_equal(cuptiGetResultString(CUPTI_SUCCESS, NULL), CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiGetErrorMessage(CUPTI_ERROR_INVALID_KIND, &s), CUPTI_SUCCESS);
	assert_string_equal(s, "CUPTI_ERROR_INVALID_KIND");
}

static void test_enable_and_disable_kinds(void **state)
{
	(void)state;
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
	enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	assert_true(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
	assert_true(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_KERNEL));
	assert_int_equal(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));

	assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_INVALID), CUPTI_ERROR_INVALID_KIND);
	assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EVENT), CUPTI_ERROR_INVALID_KIND);
	assert_int_equal(cuptiActivityEnable((CUpti_ActivityKind)9999), CUPTI_ERROR_INVALID_KIND);
	assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR),
	                 CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
	assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_PC_SAMPLING),
	                 CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED);
	assert_false(fake_cupti_kind_enabled((CUpti_ActivityKind)9999));

	assert_int_equal(cuptiActivityEnableCudaEventDeviceTimestamps(1), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnableLatencyTimestamps(1), CUPTI_SUCCESS);
}

/* --- flush ----------------------------------------------------------------------- */

static void test_flush_delivers_enabled_kinds_in_order(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	enable(CUPTI_ACTIVITY_KIND_MEMCPY);

	CUpti_ActivityKernel10 k1 = kernel(1, 100, "k1");
	CUpti_ActivityMemcpy6 m2 = memcpy_rec(2, 4096);
	CUpti_ActivityMemset4 s3 = {.kind = CUPTI_ACTIVITY_KIND_MEMSET, .correlationId = 3};
	CUpti_ActivityKernel10 k4 = kernel(4, 200, "k4");
	assert_int_equal(fake_cupti_queue(&k1, sizeof(k1)), 1);
	assert_int_equal(fake_cupti_queue(&m2, sizeof(m2)), 1);
	assert_int_equal(fake_cupti_queue(&s3, sizeof(s3)), 0); /* MEMSET is off: never produced */
	assert_int_equal(fake_cupti_queue(&k4, sizeof(k4)), 1);
	assert_int_equal(fake_cupti_pending(), 3);
	assert_int_equal(c.buffers, 0); /* nothing before a flush */

	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(fake_cupti_pending(), 0);
	assert_int_equal(fake_cupti_buffers_requested(), 1);
	assert_int_equal(fake_cupti_buffers_completed(), 1);
	assert_int_equal(c.buffers, 1);
	assert_int_equal(c.walk_end, CUPTI_ERROR_MAX_LIMIT_REACHED);
	assert_int_equal(c.n_got, 3);
	assert_int_equal(c.got[0].kind, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	assert_int_equal(c.got[0].u.kernel.correlationId, 1);
	assert_int_equal(c.got[0].u.kernel.start, 100);
	assert_ptr_equal(c.got[0].u.kernel.name, k1.name); /* pointers are passed through */
	assert_int_equal(c.got[1].kind, CUPTI_ACTIVITY_KIND_MEMCPY);
	assert_int_equal(c.got[1].u.memcpy.bytes, 4096);
	assert_int_equal(c.got[2].kind, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	assert_string_equal(c.got[2].u.kernel.name, "k4");
	size_t dropped = 99;
	assert_int_equal(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	assert_int_equal(dropped, 0);

	/* Nothing pending: no buffer is asked for. */
	assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	assert_int_equal(fake_cupti_buffers_requested(), 1);
}

/* Records produced while a kind was on survive disabling it before the flush
 * (the usual stop sequence: disable, then flush). */
static void test_disable_keeps_records_already_produced(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	CUpti_ActivityMemcpy6 m = memcpy_rec(1, 8);
	assert_int_equal(fake_cupti_queue(&m, sizeof(m)), 1);
	assert_int_equal(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);
	assert_int_equal(fake_cupti_queue(&m, sizeof(m)), 0);
	assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);
}

static void test_flush_respects_buffer_size_and_max_records(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	for (uint32_t i = 1; i <= 5; i++) {
		CUpti_ActivityKernel10 k = kernel(i, i * 10, "k");
		assert_int_equal(fake_cupti_queue(&k, sizeof(k)), 1);
	}
	c.buf_size = 2 * sizeof(CUpti_ActivityKernel10) + 8; /* room for two */
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.buffers, 3);
	assert_int_equal(fake_cupti_buffers_requested(), 3);
	assert_int_equal(c.n_got, 5);
	for (uint32_t i = 0; i < 5; i++)
		assert_int_equal(c.got[i].u.kernel.correlationId, i + 1);

	c.buf_size = 64 * 1024;
	c.max_records = 2;
	for (uint32_t i = 6; i <= 10; i++) {
		CUpti_ActivityKernel10 k = kernel(i, i * 10, "k");
		assert_int_equal(fake_cupti_queue(&k, sizeof(k)), 1);
	}
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.buffers, 6);
	assert_int_equal(c.n_got, 10);
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(c.got[i].u.kernel.correlationId, i + 1);

	/* A buffer too small for a record loses that record. */
	c.max_records = 0;
	c.buf_size = 64;
	CUpti_ActivityKernel10 k = kernel(11, 0, "k");
	assert_int_equal(fake_cupti_queue(&k, sizeof(k)), 1);
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 10);
	assert_int_equal(fake_cupti_dropped(), 1);
}

static void test_rejected_buffer_drops_and_counts(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	for (uint32_t i = 1; i <= 4; i++) {
		CUpti_ActivityMemcpy6 m = memcpy_rec(i, i);
		assert_int_equal(fake_cupti_queue(&m, sizeof(m)), 1);
	}
	c.reject = true;
	assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	assert_int_equal(fake_cupti_buffers_requested(), 1);
	assert_int_equal(fake_cupti_buffers_completed(), 0);
	assert_int_equal(fake_cupti_pending(), 0);
	assert_int_equal(c.n_got, 0);
	size_t dropped = 0;
	assert_int_equal(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	assert_int_equal(dropped, 4);
	/* Returned and reset. */
	assert_int_equal(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	assert_int_equal(dropped, 0);
	assert_int_equal(cuptiActivityGetNumDroppedRecords(NULL, 0, NULL), CUPTI_ERROR_INVALID_PARAMETER);

	/* Accepting again delivers new records. */
	c.reject = false;
	CUpti_ActivityMemcpy6 m = memcpy_rec(5, 5);
	assert_int_equal(fake_cupti_queue(&m, sizeof(m)), 1);
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);
	assert_int_equal(c.got[0].u.memcpy.correlationId, 5);
}

static void test_drop_next(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	fake_cupti_drop_next(2);
	for (uint32_t i = 1; i <= 3; i++) {
		CUpti_ActivityMemcpy6 m = memcpy_rec(i, i);
		assert_int_equal(fake_cupti_queue(&m, sizeof(m)), i <= 2 ? 0 : 1);
	}
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);
	assert_int_equal(c.got[0].u.memcpy.correlationId, 3);
	size_t dropped = 0;
	assert_int_equal(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped), CUPTI_SUCCESS);
	assert_int_equal(dropped, 2);
}

static void test_incomplete_records_wait_for_forced_flush(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	CUpti_ActivityKernel10 k1 = kernel(1, 0, "done");
	CUpti_ActivityKernel10 k2 = kernel(2, 0, "running");
	CUpti_ActivityKernel10 k3 = kernel(3, 0, "after");
	assert_int_equal(fake_cupti_queue(&k1, sizeof(k1)), 1);
	assert_int_equal(fake_cupti_queue_incomplete(&k2, sizeof(k2)), 1);
	assert_int_equal(fake_cupti_queue(&k3, sizeof(k3)), 1);

	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);
	assert_int_equal(fake_cupti_pending(), 2);
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);

	assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 3);
	assert_int_equal(c.got[1].u.kernel.correlationId, 2);
	assert_int_equal(c.got[2].u.kernel.correlationId, 3);

	/* Or the GPU catches up. */
	assert_int_equal(fake_cupti_queue_incomplete(&k1, sizeof(k1)), 1);
	fake_cupti_complete_all();
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 4);
}

static void test_flush_without_callbacks_keeps_records(void **state)
{
	(void)state;
	enable(CUPTI_ACTIVITY_KIND_MEMCPY);
	CUpti_ActivityMemcpy6 m = memcpy_rec(1, 1);
	assert_int_equal(fake_cupti_queue(&m, sizeof(m)), 1);
	assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	assert_int_equal(fake_cupti_pending(), 1);
	assert_int_equal(cuptiActivityRegisterCallbacks(NULL, on_complete), CUPTI_ERROR_INVALID_PARAMETER);
	register_consumer();
	assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);
}

/* --- walking records ------------------------------------------------------------- */

/* One MEMCPY, one RUNTIME, one KERNEL record back to back. */
static size_t three_records(uint8_t *buf)
{
	CUpti_ActivityMemcpy6 m = memcpy_rec(1, 1);
	CUpti_ActivityAPI a = {.kind = CUPTI_ACTIVITY_KIND_RUNTIME, .correlationId = 1};
	CUpti_ActivityKernel10 k = kernel(1, 0, "k");
	memcpy(buf, &m, sizeof(m));
	memcpy(buf + 96, &a, sizeof(a));
	memcpy(buf + 136, &k, sizeof(k));
	return 96 + 40 + 216;
}

static ptrdiff_t offset_of(const uint8_t *buf, const CUpti_Activity *rec)
{
	return rec ? (const uint8_t *)rec - buf : -1;
}

static void test_get_next_record_rules(void **state)
{
	(void)state;
	_Alignas(8) uint8_t buf[1024] = {0};
	size_t len = three_records(buf);
	CUpti_Activity *rec = NULL;

	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_SUCCESS);
	assert_int_equal(offset_of(buf, rec), 0);
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_SUCCESS);
	assert_int_equal(offset_of(buf, rec), 96);
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_SUCCESS);
	assert_int_equal(offset_of(buf, rec), 136);
	/* The end leaves *record at the last record. */
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
	assert_int_equal(offset_of(buf, rec), 136);
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);

	/* Empty buffer. */
	rec = NULL;
	assert_int_equal(cuptiActivityGetNextRecord(buf, 0, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
	assert_null(rec);
	/* A truncated last record ends the walk at the one before. */
	rec = NULL;
	assert_int_equal(cuptiActivityGetNextRecord(buf, len - 8, &rec), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityGetNextRecord(buf, len - 8, &rec), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityGetNextRecord(buf, len - 8, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
	assert_int_equal(offset_of(buf, rec), 96);
	/* A truncated first record. */
	rec = NULL;
	assert_int_equal(cuptiActivityGetNextRecord(buf, 40, &rec), CUPTI_ERROR_MAX_LIMIT_REACHED);
	assert_null(rec);

	/* An unknown kind stops the walk where it is. */
	uint32_t bad = 9999;
	memcpy(buf + 96, &bad, sizeof(bad));
	rec = NULL;
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_ERROR_INVALID_KIND);
	assert_int_equal(offset_of(buf, rec), 0);
	memcpy(buf, &bad, sizeof(bad));
	rec = NULL;
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, &rec), CUPTI_ERROR_INVALID_KIND);
	assert_null(rec);

	assert_int_equal(cuptiActivityGetNextRecord(NULL, len, &rec), CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiActivityGetNextRecord(buf, len, NULL), CUPTI_ERROR_INVALID_PARAMETER);
}

/* --- API records and external correlation ------------------------------------ */

static void test_external_correlation_precedes_api_records(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_RUNTIME);
	enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
	assert_int_equal(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), CUPTI_SUCCESS);

	const CUpti_ExternalCorrelationKind c0 = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	const CUpti_ExternalCorrelationKind c1 = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;
	assert_int_equal(cuptiActivityPushExternalCorrelationId(c0, 10), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityPushExternalCorrelationId(c1, 20), CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityPushExternalCorrelationId(c0, 11), CUPTI_SUCCESS);
	assert_int_equal(fake_cupti_stack_depth(c0), 2);
	assert_int_equal(fake_cupti_stack_depth(c1), 1);

	uint32_t id1 = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME,
	                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1000, 2000);
	assert_int_equal(id1, 1);
	uint64_t last = 0;
	assert_int_equal(cuptiActivityPopExternalCorrelationId(c0, &last), CUPTI_SUCCESS);
	assert_int_equal(last, 11);
	assert_int_equal(cuptiActivityPopExternalCorrelationId(c1, &last), CUPTI_SUCCESS);
	assert_int_equal(last, 20);
	assert_int_equal(cuptiActivityPopExternalCorrelationId(c1, &last), CUPTI_ERROR_QUEUE_EMPTY);
	uint32_t id2 = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
	                              3000, 4000);
	assert_int_equal(id2, 2);
	assert_int_equal(cuptiActivityPopExternalCorrelationId(c0, NULL), CUPTI_SUCCESS);
	assert_int_equal(fake_cupti_stack_depth(c0), 0);
	uint32_t id3 = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
	                              5000, 6000);
	assert_int_equal(id3, 3);

	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 6);
	/* id1: CUSTOM0 (top 11), CUSTOM1 (20), then the API record. */
	assert_int_equal(c.got[0].kind, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
	assert_int_equal(c.got[0].u.ext.externalKind, c0);
	assert_int_equal(c.got[0].u.ext.externalId, 11);
	assert_int_equal(c.got[0].u.ext.correlationId, id1);
	assert_int_equal(c.got[1].u.ext.externalKind, c1);
	assert_int_equal(c.got[1].u.ext.externalId, 20);
	assert_int_equal(c.got[1].u.ext.correlationId, id1);
	const CUpti_ActivityAPI *a = &c.got[2].u.api;
	assert_int_equal(a->kind, CUPTI_ACTIVITY_KIND_RUNTIME);
	assert_int_equal(a->cbid, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
	assert_int_equal(a->correlationId, id1);
	assert_int_equal(a->start, 1000);
	assert_int_equal(a->end, 2000);
	assert_int_equal(a->processId, (uint32_t)getpid());
	assert_int_equal(a->threadId, (uint32_t)gettid());
	assert_int_equal(a->returnValue, 0);
	/* id2: only CUSTOM0 (10) is left. */
	assert_int_equal(c.got[3].u.ext.externalKind, c0);
	assert_int_equal(c.got[3].u.ext.externalId, 10);
	assert_int_equal(c.got[3].u.ext.correlationId, id2);
	assert_int_equal(c.got[4].u.api.correlationId, id2);
	/* id3: no stack, no external record. */
	assert_int_equal(c.got[5].kind, CUPTI_ACTIVITY_KIND_RUNTIME);
	assert_int_equal(c.got[5].u.api.correlationId, id3);

	assert_int_equal(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_INVALID, 1),
	                 CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_SIZE, NULL),
	                 CUPTI_ERROR_INVALID_PARAMETER);
}

static void test_api_records_follow_enables(void **state)
{
	(void)state;
	register_consumer();
	/* RUNTIME off: the call still takes a correlation id, and produces nothing. */
	assert_int_equal(fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, 1, 0, 1), 1);
	enable(CUPTI_ACTIVITY_KIND_RUNTIME);
	enable(CUPTI_ACTIVITY_KIND_DRIVER);
	/* A stack without EXTERNAL_CORRELATION enabled adds nothing. */
	assert_int_equal(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 5),
	                 CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0),
	                 CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 0),
	                 CUPTI_SUCCESS);
	assert_int_equal(cuptiActivityEnableRuntimeApi(100000, 0), CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(
	    fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0, 1),
	    2);
	assert_int_equal(
	    fake_cupti_api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 0, 1), 3);
	assert_int_equal(
	    fake_cupti_api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 0, 1), 4);
	assert_int_equal(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 1),
	                 CUPTI_SUCCESS);
	assert_int_equal(
	    fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0, 1),
	    5);
	assert_int_equal(fake_cupti_api(CUPTI_ACTIVITY_KIND_KERNEL, 1, 0, 1), 0);
	assert_int_equal(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL),
	                 CUPTI_SUCCESS);

	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 2);
	assert_int_equal(c.got[0].kind, CUPTI_ACTIVITY_KIND_DRIVER);
	assert_int_equal(c.got[0].u.api.correlationId, 4);
	assert_int_equal(c.got[1].kind, CUPTI_ACTIVITY_KIND_RUNTIME);
	assert_int_equal(c.got[1].u.api.correlationId, 5);
	/* Default thread id type: the low 32 bits of pthread_self(). */
	CUpti_ActivityThreadIdType type;
	assert_int_equal(cuptiGetThreadIdType(&type), CUPTI_SUCCESS);
	assert_int_equal(type, CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
	assert_int_equal(c.got[0].u.api.threadId, (uint32_t)(uintptr_t)pthread_self());
	assert_int_equal(cuptiSetThreadIdType((CUpti_ActivityThreadIdType)7), CUPTI_ERROR_INVALID_PARAMETER);
}

#define CALLS_PER_THREAD 50

struct worker {
	uint64_t external_id;
	pid_t tid;
	int depth_after_push;
	pthread_barrier_t *barrier;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->tid = gettid();
	cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, w->external_id);
	w->depth_after_push = fake_cupti_stack_depth(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
	pthread_barrier_wait(w->barrier); /* both stacks are set before either calls */
	for (int i = 0; i < CALLS_PER_THREAD; i++)
		fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
		               i, i + 1);
	cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, NULL);
	return NULL;
}

static void test_external_correlation_is_per_thread(void **state)
{
	(void)state;
	register_consumer();
	enable(CUPTI_ACTIVITY_KIND_RUNTIME);
	enable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
	assert_int_equal(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), CUPTI_SUCCESS);

	pthread_barrier_t barrier;
	pthread_barrier_init(&barrier, NULL, 2);
	struct worker w[2] = {{.external_id = 100, .barrier = &barrier},
	                      {.external_id = 200, .barrier = &barrier}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	pthread_barrier_destroy(&barrier);
	/* The main thread's stack is its own: empty. */
	assert_int_equal(fake_cupti_stack_depth(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0), 0);
	uint32_t main_id = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, 1, 0, 1);

	assert_int_equal(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 4 * CALLS_PER_THREAD + 1);
	int seen[2] = {0, 0};
	uint32_t last_id = 0;
	for (size_t i = 0; i < c.n_got; i++) {
		if (c.got[i].kind != CUPTI_ACTIVITY_KIND_RUNTIME)
			continue;
		const CUpti_ActivityAPI *a = &c.got[i].u.api;
		assert_true(a->correlationId > last_id); /* ids increase across threads */
		last_id = a->correlationId;
		if (a->correlationId == main_id) {
			assert_int_equal(a->threadId, (uint32_t)gettid());
			assert_true(i == 0 || c.got[i - 1].kind != CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION ||
			            c.got[i - 1].u.ext.correlationId != main_id);
			continue;
		}
		int who = a->threadId == (uint32_t)w[0].tid ? 0 : 1;
		assert_int_equal(a->threadId, (uint32_t)w[who].tid);
		assert_true(i > 0);
		const CUpti_ActivityExternalCorrelation *e = &c.got[i - 1].u.ext;
		assert_int_equal(c.got[i - 1].kind, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
		assert_int_equal(e->externalKind, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0);
		assert_int_equal(e->externalId, w[who].external_id);
		assert_int_equal(e->correlationId, a->correlationId);
		seen[who]++;
	}
	assert_int_equal(seen[0], CALLS_PER_THREAD);
	assert_int_equal(seen[1], CALLS_PER_THREAD);
	assert_int_equal(w[0].depth_after_push, 1);
	assert_int_equal(w[1].depth_after_push, 1);
}

/* --- names, failures, subscriber, time, attributes ------------------------------- */

static void test_callback_names(void **state)
{
	(void)state;
	const char *name = NULL;
	assert_int_equal(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 211);
	assert_int_equal(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 211, &name), CUPTI_SUCCESS);
	assert_string_equal(name, "cudaLaunchKernel_v7000");
	assert_int_equal(
	    cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, &name),
	    CUPTI_SUCCESS);
	assert_string_equal(name, "cuLaunchKernel");
	assert_int_equal(
	    cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuInit, &name),
	    CUPTI_SUCCESS);
	assert_string_equal(name, "cuInit");
	assert_int_equal(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 0, &name), CUPTI_SUCCESS);
	assert_string_equal(name, "INVALID");

	assert_int_equal(
	    cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, &name),
	    CUPTI_ERROR_INVALID_PARAMETER);
	assert_null(name);
	assert_int_equal(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, 1u << 20, &name),
	                 CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RESOURCE, 1, &name),
	                 CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, 211, NULL),
	                 CUPTI_ERROR_INVALID_PARAMETER);
}

static void test_armed_failures(void **state)
{
	(void)state;
	fake_cupti_fail("cuptiActivityEnable", CUPTI_ERROR_NOT_INITIALIZED, 2);
	assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_ERROR_NOT_INITIALIZED);
	assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_ERROR_NOT_INITIALIZED);
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMCPY));
	assert_int_equal(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), CUPTI_SUCCESS);

	/* Forever, until disarmed; records wait meanwhile. */
	register_consumer();
	CUpti_ActivityMemcpy6 m = memcpy_rec(1, 1);
	assert_int_equal(fake_cupti_queue(&m, sizeof(m)), 1);
	fake_cupti_fail("cuptiActivityFlushAll", CUPTI_ERROR_UNKNOWN, -1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(cuptiActivityFlushAll(0), CUPTI_ERROR_UNKNOWN);
	assert_int_equal(fake_cupti_pending(), 1);
	fake_cupti_fail("cuptiActivityFlushAll", CUPTI_SUCCESS, 0);
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	assert_int_equal(c.n_got, 1);

	/* Other functions are not affected; reset disarms everything. */
	fake_cupti_fail("cuptiSubscribe", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, -1);
	fake_cupti_fail("cuptiActivityGetNextRecord", CUPTI_ERROR_UNKNOWN, 1);
	uint32_t v;
	assert_int_equal(cuptiGetVersion(&v), CUPTI_SUCCESS);
	CUpti_SubscriberHandle h = NULL;
	assert_int_equal(cuptiSubscribe(&h, NULL, NULL), CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
	CUpti_Activity *rec = NULL;
	_Alignas(8) uint8_t buf[96] = {1};
	assert_int_equal(cuptiActivityGetNextRecord(buf, sizeof(buf), &rec), CUPTI_ERROR_UNKNOWN);
	assert_int_equal(cuptiActivityGetNextRecord(buf, sizeof(buf), &rec), CUPTI_SUCCESS);
	fake_cupti_reset();
	assert_int_equal(cuptiSubscribe(&h, NULL, NULL), CUPTI_SUCCESS);
	assert_int_equal(cuptiUnsubscribe(h), CUPTI_SUCCESS);
}

struct cb_seen {
	int calls;
	CUpti_CallbackDomain domain;
	CUpti_CallbackId cbid;
	const void *data;
};

static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                 const void *cbdata)
{
	struct cb_seen *s = userdata;
	s->calls++;
	s->domain = domain;
	s->cbid = cbid;
	s->data = cbdata;
}

static void test_subscriber_slot(void **state)
{
	(void)state;
	struct cb_seen seen = {0};
	CUpti_SubscriberHandle h = NULL, h2 = NULL;
	assert_int_equal(cuptiSubscribe(NULL, on_callback, &seen), CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiSubscribe(&h, on_callback, &seen), CUPTI_SUCCESS);
	assert_non_null(h);
	assert_true(fake_cupti_subscribed());
	assert_int_equal(cuptiSubscribe(&h2, on_callback, &seen),
	                 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);

	/* Callbacks: off until enabled, one by one or per domain. */
	CUpti_CallbackData data = {.callbackSite = CUPTI_API_ENTER, .functionName = "cudaLaunchKernel"};
	const CUpti_CallbackId launch = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
	assert_false(fake_cupti_fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, launch, &data));
	assert_int_equal(cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API, launch), CUPTI_SUCCESS);
	assert_true(fake_cupti_callback_enabled(CUPTI_CB_DOMAIN_RUNTIME_API, launch));
	uint32_t on = 0;
	assert_int_equal(cuptiGetCallbackState(&on, h, CUPTI_CB_DOMAIN_RUNTIME_API, launch), CUPTI_SUCCESS);
	assert_int_equal(on, 1);
	assert_true(fake_cupti_fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, launch, &data));
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.domain, CUPTI_CB_DOMAIN_RUNTIME_API);
	assert_int_equal(seen.cbid, launch);
	assert_ptr_equal(seen.data, &data);
	assert_false(fake_cupti_fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, launch + 1, &data));
	assert_int_equal(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_RESOURCE), CUPTI_SUCCESS);
	CUpti_ResourceData res = {0};
	assert_true(
	    fake_cupti_fire_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &res));
	assert_int_equal(seen.calls, 2);
	assert_int_equal(cuptiEnableCallback(0, h, CUPTI_CB_DOMAIN_RUNTIME_API, launch), CUPTI_SUCCESS);
	assert_false(fake_cupti_fire_callback(CUPTI_CB_DOMAIN_RUNTIME_API, launch, &data));
	assert_int_equal(
	    cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE),
	    CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_INVALID), CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(
	    cuptiEnableCallback(1, (CUpti_SubscriberHandle)&seen, CUPTI_CB_DOMAIN_RUNTIME_API, launch),
	    CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiUnsubscribe((CUpti_SubscriberHandle)&seen), CUPTI_ERROR_INVALID_PARAMETER);

	/* _v2 reports who holds the slot. */
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
	CUpti_SubscriberParams p = {
	    .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
	    .subscriberName = "second",
	    .oldSubscriberName = old,
	    .oldSubscriberSize = sizeof(old),
	};
	assert_int_equal(cuptiSubscribe_v2(&h2, on_callback, &seen, &p),
	                 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	assert_string_equal(old, "CUPTI");
	assert_int_equal(cuptiUnsubscribe(h), CUPTI_SUCCESS);
	assert_false(fake_cupti_subscribed());
	assert_false(
	    fake_cupti_fire_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &res));

	p.subscriberName = "strobe";
	assert_int_equal(cuptiSubscribe_v2(&h, on_callback, &seen, &p), CUPTI_SUCCESS);
	p.subscriberName = "other";
	assert_int_equal(cuptiSubscribe_v2(&h2, on_callback, &seen, &p),
	                 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	assert_string_equal(old, "CUPTI for strobe");
	/* cuptiFinalize frees the slot. */
	assert_int_equal(cuptiFinalize(), CUPTI_SUCCESS);
	assert_false(fake_cupti_subscribed());

	/* Another tool holds it. */
	fake_cupti_hold_subscriber("Nsight Systems");
	assert_int_equal(cuptiSubscribe(&h, on_callback, &seen),
	                 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	memset(old, 0, sizeof(old));
	assert_int_equal(cuptiSubscribe_v2(&h, on_callback, &seen, &p),
	                 CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	assert_string_equal(old, "Nsight Systems");
	assert_false(fake_cupti_subscribed());
	fake_cupti_hold_subscriber(NULL);
	p.structSize = 0;
	assert_int_equal(cuptiSubscribe_v2(&h, on_callback, &seen, &p), CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiSubscribe_v2(&h, on_callback, &seen, NULL), CUPTI_SUCCESS);
	assert_int_equal(cuptiUnsubscribe(h), CUPTI_SUCCESS);
}

static uint64_t fake_clock_ns;

static uint64_t CUPTIAPI test_clock(void)
{
	return ++fake_clock_ns;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_timestamps(void **state)
{
	(void)state;
	uint64_t before = realtime_ns(), t = 0;
	assert_int_equal(cuptiGetTimestamp(&t), CUPTI_SUCCESS);
	uint64_t mid = fake_cupti_now();
	uint64_t after = realtime_ns();
	assert_true(before <= t && t <= mid && mid <= after);
	assert_int_equal(cuptiGetTimestamp(NULL), CUPTI_ERROR_INVALID_PARAMETER);

	assert_int_equal(cuptiActivityRegisterTimestampCallback(NULL), CUPTI_ERROR_INVALID_PARAMETER);
	fake_clock_ns = 5000;
	assert_int_equal(cuptiActivityRegisterTimestampCallback(test_clock), CUPTI_SUCCESS);
	assert_int_equal(cuptiGetTimestamp(&t), CUPTI_SUCCESS);
	assert_int_equal(t, 5001);
	assert_int_equal(fake_cupti_now(), 5002);
}

static void test_attributes(void **state)
{
	(void)state;
	size_t size = sizeof(size_t), value = 0;
	assert_int_equal(cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value),
	                 CUPTI_SUCCESS);
	assert_int_equal(size, sizeof(size_t));
	assert_int_equal(value, 8 << 20);
	value = 32 << 20;
	assert_int_equal(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value),
	                 CUPTI_SUCCESS);
	value = 0;
	assert_int_equal(cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &value),
	                 CUPTI_SUCCESS);
	assert_int_equal(value, 32 << 20);

	uint8_t flag = 0;
	size = sizeof(flag);
	assert_int_equal(
	    cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &flag),
	    CUPTI_SUCCESS);
	assert_int_equal(flag, 1);
	flag = 0;
	assert_int_equal(
	    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &flag),
	    CUPTI_SUCCESS);
	flag = 7;
	assert_int_equal(
	    cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER, &size, &flag),
	    CUPTI_SUCCESS);
	assert_int_equal(flag, 0);

	size = 1;
	assert_int_equal(
	    cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &size, &value),
	    CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT);
	assert_int_equal(cuptiActivitySetAttribute((CUpti_ActivityAttribute)999, &size, &value),
	                 CUPTI_ERROR_INVALID_PARAMETER);
	assert_int_equal(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, NULL, &value),
	                 CUPTI_ERROR_INVALID_PARAMETER);
}

/* The backend dlopens the fake by path while the test links it: both must be
 * the same instance, or the control API would drive a different copy. */
static void test_dlopen_by_path_is_the_same_instance(void **state)
{
	(void)state;
	void *h = dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	CUptiResult (*get_version)(uint32_t *) = (CUptiResult(*)(uint32_t *))dlsym(h, "cuptiGetVersion");
	assert_non_null(get_version);
	fake_cupti_set_version(424242);
	uint32_t v = 0;
	assert_int_equal(get_version(&v), CUPTI_SUCCESS);
	assert_int_equal(v, 424242);
	/* The control API is exported too; internals are not. */
	assert_non_null(dlsym(h, "fake_cupti_queue"));
	assert_null(dlsym(h, "reset_locked"));
	assert_null(dlsym(h, "cuptiProfilerInitialize")); /* not faked: a missing optional symbol */
	dlclose(h);
}

/* --- the oracle: the real libcupti.so.13 ------------------------------------------ */

typedef CUptiResult (*next_record_fn)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*callback_name_fn)(CUpti_CallbackDomain, uint32_t, const char **);
typedef CUptiResult (*result_string_fn)(CUptiResult, const char **);

/* Loaded once, by absolute path and RTLD_LOCAL so its cupti* names do not
 * mix with the fake's; never closed (libcupti must not be unloaded). */
static void *real_cupti(void)
{
	static void *handle;
	static bool tried;
	if (tried)
		return handle;
	tried = true;
	char paths[4][4096];
	size_t n = 0;
	snprintf(paths[n++], sizeof(paths[0]), "libcupti.so.13");
	const char *home = getenv("CUDA_HOME");
	if (home && home[0])
		snprintf(paths[n++], sizeof(paths[0]), "%s/lib64/libcupti.so.13", home);
	snprintf(paths[n++], sizeof(paths[0]), "/usr/local/cuda/lib64/libcupti.so.13");
	snprintf(paths[n++], sizeof(paths[0]), "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
	for (size_t i = 0; i < n && !handle; i++) {
		handle = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
		if (handle)
			print_message("oracle: real CUPTI from %s\n", paths[i]);
	}
	if (!handle)
		print_message("oracle: no real libcupti.so.13 (%s); skipped\n", dlerror());
	return handle;
}

struct step {
	CUptiResult r;
	ptrdiff_t offset; /* of *record after the call; -1 for NULL */
};

/* Walks buf[0, valid) from a NULL record until a call fails (at most max). */
static size_t walk(next_record_fn next, uint8_t *buf, size_t valid, struct step *steps, size_t max)
{
	CUpti_Activity *rec = NULL;
	for (size_t n = 0; n < max; n++) {
		steps[n].r = next(buf, valid, &rec);
		steps[n].offset = offset_of(buf, rec);
		if (steps[n].r != CUPTI_SUCCESS)
			return n + 1;
	}
	return max;
}

static void assert_same_walk(next_record_fn real, uint8_t *buf, size_t valid, const char *what)
{
	enum { MAX_STEPS = 128 };
	struct step a[MAX_STEPS], b[MAX_STEPS];
	size_t na = walk(real, buf, valid, a, MAX_STEPS);
	size_t nb = walk(cuptiActivityGetNextRecord, buf, valid, b, MAX_STEPS);
	for (size_t i = 0; i < na && i < nb; i++) {
		if (a[i].r != b[i].r || a[i].offset != b[i].offset)
			fail_msg("%s (valid %zu), step %zu: real %d at %td, fake %d at %td", what, valid, i,
			         a[i].r, a[i].offset, b[i].r, b[i].offset);
	}
	assert_int_equal(na, nb);
}

/* Kinds 0..63 and 9999, each alone and followed by a MEMCPY record: the real
 * library walks exactly the kinds the fake walks, with the same sizes. */
static void test_oracle_record_sizes(void **state)
{
	(void)state;
	void *h = real_cupti();
	if (!h)
		skip();
	next_record_fn real = (next_record_fn)dlsym(h, "cuptiActivityGetNextRecord");
	assert_non_null(real);
	static _Alignas(8) uint8_t buf[1024];
	uint32_t kinds[65];
	for (uint32_t k = 0; k < 64; k++)
		kinds[k] = k;
	kinds[64] = 9999;
	for (size_t i = 0; i < 65; i++) {
		/* Every 8-byte slot says MEMCPY, so whatever size the library
		 * steps by lands on a valid record. */
		memset(buf, 0, sizeof(buf));
		for (size_t off = 0; off < sizeof(buf); off += 8) {
			uint32_t memcpy_kind = CUPTI_ACTIVITY_KIND_MEMCPY;
			memcpy(buf + off, &memcpy_kind, sizeof(memcpy_kind));
		}
		memcpy(buf, &kinds[i], sizeof(kinds[i]));
		CUpti_Activity *ra = NULL, *rb = NULL;
		CUptiResult a = real(buf, sizeof(buf), &ra);
		CUptiResult b = cuptiActivityGetNextRecord(buf, sizeof(buf), &rb);
		if (a != b)
			fail_msg("kind %u: first record: real %d, fake %d", kinds[i], a, b);
		if (a != CUPTI_SUCCESS)
			continue;
		a = real(buf, sizeof(buf), &ra);
		b = cuptiActivityGetNextRecord(buf, sizeof(buf), &rb);
		if (a != b || offset_of(buf, ra) != offset_of(buf, rb))
			fail_msg("kind %u: real %d steps %td, fake %d steps %td", kinds[i], a,
			         offset_of(buf, ra), b, offset_of(buf, rb));
		assert_int_equal(offset_of(buf, rb), fake_cupti_record_size(kinds[i]));
	}
}

/* One record of every walkable kind back to back, walked whole, cut at
 * every 8 bytes, and with an unknown kind in the middle. */
static void test_oracle_walks_match(void **state)
{
	(void)state;
	void *h = real_cupti();
	if (!h)
		skip();
	next_record_fn real = (next_record_fn)dlsym(h, "cuptiActivityGetNextRecord");
	assert_non_null(real);

	static _Alignas(8) uint8_t buf[8192];
	memset(buf, 0, sizeof(buf));
	size_t len = 0, n_records = 0, middle = 0;
	for (uint32_t k = 0; k < 64; k++) {
		size_t size = fake_cupti_record_size(k);
		if (!size)
			continue;
		assert_true(len + size <= sizeof(buf));
		memcpy(buf + len, &k, sizeof(k));
		if (n_records == 10)
			middle = len;
		len += size;
		n_records++;
	}
	assert_true(n_records >= 38);
	assert_same_walk(real, buf, len, "all kinds");
	struct step steps[128];
	size_t n = walk(cuptiActivityGetNextRecord, buf, len, steps, 128);
	assert_int_equal(n, n_records + 1);
	assert_int_equal(steps[n - 1].r, CUPTI_ERROR_MAX_LIMIT_REACHED);

	for (size_t valid = 0; valid <= len + 16; valid += 8)
		assert_same_walk(real, buf, valid, "cut");

	uint32_t bad = 9999;
	memcpy(buf + middle, &bad, sizeof(bad));
	assert_same_walk(real, buf, len, "unknown kind in the middle");
	n = walk(cuptiActivityGetNextRecord, buf, len, steps, 128);
	assert_int_equal(steps[n - 1].r, CUPTI_ERROR_INVALID_KIND);

	CUpti_Activity *rec = NULL;
	assert_int_equal(real(NULL, len, &rec), cuptiActivityGetNextRecord(NULL, len, &rec));
}

/* Every runtime and driver callback id, and one past the end, has the same
 * name (or the same error) in both; result strings agree where the real
 * library knows the code (up to 999: it also names an undeclared 1000). */
static void test_oracle_names_match(void **state)
{
	(void)state;
	void *h = real_cupti();
	if (!h)
		skip();
	callback_name_fn real_name = (callback_name_fn)dlsym(h, "cuptiGetCallbackName");
	result_string_fn real_result = (result_string_fn)dlsym(h, "cuptiGetResultString");
	assert_non_null(real_name);
	assert_non_null(real_result);
	static const struct {
		CUpti_CallbackDomain domain;
		uint32_t end;
	} domains[] = {
	    {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE + 2},
	    {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE + 2},
	};
	for (size_t d = 0; d < 2; d++) {
		for (uint32_t cbid = 0; cbid < domains[d].end; cbid++) {
			const char *a = NULL, *b = NULL;
			CUptiResult ra = real_name(domains[d].domain, cbid, &a);
			CUptiResult rb = cuptiGetCallbackName(domains[d].domain, cbid, &b);
			if (ra != rb || (ra == CUPTI_SUCCESS && strcmp(a, b) != 0))
				fail_msg("domain %d cbid %u: real %d '%s', fake %d '%s'", domains[d].domain,
				         cbid, ra, a ? a : "(null)", rb, b ? b : "(null)");
		}
	}
	for (int r = 0; r <= CUPTI_ERROR_UNKNOWN; r++) {
		const char *a = NULL, *b = NULL;
		if (real_result((CUptiResult)r, &a) != CUPTI_SUCCESS)
			continue;
		assert_int_equal(cuptiGetResultString((CUptiResult)r, &b), CUPTI_SUCCESS);
		assert_string_equal(a, b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_record_sizes_are_the_cuda13_structs, setup),
	    cmocka_unit_test_setup(test_version, setup),
	    cmocka_unit_test_setup(test_cuda_driver_and_device_records, setup),
	    cmocka_unit_test_setup(test_result_strings, setup),
	    cmocka_unit_test_setup(test_enable_and_disable_kinds, setup),
	    cmocka_unit_test_setup(test_flush_delivers_enabled_kinds_in_order, setup),
	    cmocka_unit_test_setup(test_disable_keeps_records_already_produced, setup),
	    cmocka_unit_test_setup(test_flush_respects_buffer_size_and_max_records, setup),
	    cmocka_unit_test_setup(test_rejected_buffer_drops_and_counts, setup),
	    cmocka_unit_test_setup(test_drop_next, setup),
	    cmocka_unit_test_setup(test_incomplete_records_wait_for_forced_flush, setup),
	    cmocka_unit_test_setup(test_flush_without_callbacks_keeps_records, setup),
	    cmocka_unit_test_setup(test_get_next_record_rules, setup),
	    cmocka_unit_test_setup(test_external_correlation_precedes_api_records, setup),
	    cmocka_unit_test_setup(test_api_records_follow_enables, setup),
	    cmocka_unit_test_setup(test_external_correlation_is_per_thread, setup),
	    cmocka_unit_test_setup(test_callback_names, setup),
	    cmocka_unit_test_setup(test_armed_failures, setup),
	    cmocka_unit_test_setup(test_subscriber_slot, setup),
	    cmocka_unit_test_setup(test_timestamps, setup),
	    cmocka_unit_test_setup(test_attributes, setup),
	    cmocka_unit_test_setup(test_dlopen_by_path_is_the_same_instance, setup),
	    cmocka_unit_test_setup(test_oracle_record_sizes, setup),
	    cmocka_unit_test_setup(test_oracle_walks_match, setup),
	    cmocka_unit_test_setup(test_oracle_names_match, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

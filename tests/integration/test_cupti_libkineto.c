/* A GPU trace against libkineto's own, on the scenario of
 * tests/data/libkineto-cuda-fake.json (libkineto against a fake libcupti and
 * a fake CUDA runtime with one device): the same deviceProperties object,
 * key by key and value by value, the version keys cuda_driver_version,
 * cuda_runtime_version and cupti_version, a kernel's occupancy args, and
 * "channel" 4294967295 for work without a channel. The device is the
 * fixture's, handed to the fake CUDA driver; the trace starts before CUDA
 * initialises (CUPTI's DEVICE records and the driver both answer) or after
 * (no DEVICE record ever comes: the driver alone). */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>

#define FIXTURE STROBE_TEST_DATA_DIR "/libkineto-cuda-fake.json"
#define LAUNCH  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define MEMCPY  CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020

static yajl_val fixture;
static struct fake_cuda_device device;
static uint64_t last;

static uint64_t stamp(void)
{
	last = ct_stamp_after(last, 2000);
	return last;
}

static int fixture_int(yajl_val obj, const char *key)
{
	return (int)tu_get_num(obj, key);
}

/* The fixture's device, as the fake driver's. */
static int group_setup(void **state)
{
	ct_use_fake();
	fixture = tu_load_trace(FIXTURE);
	yajl_val props = tu_get(fixture, "deviceProperties");
	if (!props || !YAJL_IS_ARRAY(props) || YAJL_GET_ARRAY(props)->len != 1)
		return -1;
	yajl_val p = YAJL_GET_ARRAY(props)->values[0];
	yajl_val kargs = tu_get(tu_find(fixture, "X", "kernel", NULL), "args"),
	         occ = tu_get(kargs, "occupancy");
	device = (struct fake_cuda_device){
	    .name = tu_get_str(p, "name"),
	    .total_global_mem = (uint64_t)tu_get_num(p, "totalGlobalMem"),
	    .compute_major = fixture_int(p, "computeMajor"),
	    .compute_minor = fixture_int(p, "computeMinor"),
	    .max_threads_per_block = fixture_int(p, "maxThreadsPerBlock"),
	    .max_threads_per_sm = fixture_int(p, "maxThreadsPerMultiprocessor"),
	    .regs_per_block = fixture_int(p, "regsPerBlock"),
	    .warp_size = fixture_int(p, "warpSize"),
	    .shared_mem_per_block = fixture_int(p, "sharedMemPerBlock"),
	    .sm_count = fixture_int(p, "numSms"),
	    .regs_per_sm = fixture_int(p, "regsPerMultiprocessor"),
	    .shared_mem_per_block_optin = fixture_int(p, "sharedMemPerBlockOptin"),
	    .shared_mem_per_sm = fixture_int(p, "sharedMemPerMultiprocessor"),
	    .max_blocks_per_sm = 32,
	    /* Not in deviceProperties: what the fixture's occupancy shows, the
	     * shared memory allocated per block beyond the kernel's own. */
	    .reserved_shared_mem_per_block =
	        (int)(tu_get_num(occ, "allocatedSharedMemPerBlock") - tu_get_num(kargs, "shared memory")),
	    .uuid = {0x5a, 0x1c, 0x0e, 0x2f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
	};
	return tu_strobe_group_setup(state);
}

static int group_teardown(void **state)
{
	yajl_tree_free(fixture);
	return tu_strobe_group_teardown(state);
}

static int setup(void **state)
{
	(void)state;
	fake_cupti_reset();
	last = 0;
	return 0;
}

/* A fixture event of this category (its first). */
static yajl_val fixture_event(const char *cat)
{
	yajl_val e = tu_find(fixture, "X", cat, NULL);
	if (!e)
		fail_msg("the fixture has no %s event", cat);
	return e;
}

/* The fixture's kernel launch shape (gemm_kernel) and a copy without a
 * channel, launched from this thread; then stop, save, parse. */
static yajl_val run_scenario(const char *name)
{
	yajl_val fk = tu_get(fixture_event("kernel"), "args");
	uint32_t kc = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, LAUNCH, stamp(), stamp());
	uint64_t s = stamp();
	CUpti_ActivityKernel10 k = ct_kernel(kc, 0, 7, s, stamp(), "gemm_kernel");
	k.registersPerThread = (uint16_t)tu_get_num(fk, "registers per thread");
	k.staticSharedMemory = (int32_t)tu_get_num(fk, "shared memory");
	k.gridX = (int32_t)YAJL_GET_INTEGER(YAJL_GET_ARRAY(tu_get(fk, "grid"))->values[0]);
	k.blockX = (int32_t)YAJL_GET_INTEGER(YAJL_GET_ARRAY(tu_get(fk, "block"))->values[0]);
	CT_QUEUE(k);
	uint32_t mc = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, MEMCPY, stamp(), stamp());
	CUpti_ActivityMemcpy6 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
	    .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
	    .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .bytes = 65536,
	    .contextId = 1,
	    .streamId = 7,
	    .correlationId = mc,
	    .channelID = 0xffffffffu,
	};
	m.start = stamp();
	m.end = stamp();
	CT_QUEUE(m);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	char path[1200];
	snprintf(path, sizeof(path), "%s/%s.json", tu_dir, name);
	if (strobe_trace_save(t, path))
		fail_msg("saving %s: %s", path, strobe_last_error());
	strobe_trace_destroy(t);
	return tu_load_trace(path);
}

static void begin(void)
{
	if (strobe_prepare(0, NULL) || strobe_start())
		fail_msg("starting: %s", strobe_last_error());
	last = stamp();
}

/* Every member of the fixture's object is in strobe's, with the same value
 * (numbers as numbers, strings as strings). */
static void assert_same_members(yajl_val want, yajl_val got, const char *what)
{
	if (!got || !YAJL_IS_OBJECT(got))
		fail_msg("%s: strobe wrote no object", what);
	for (size_t i = 0; i < YAJL_GET_OBJECT(want)->len; i++) {
		const char *key = YAJL_GET_OBJECT(want)->keys[i];
		yajl_val w = YAJL_GET_OBJECT(want)->values[i], g = tu_get(got, key);
		if (!g)
			fail_msg("%s: \"%s\" is missing", what, key);
		if (YAJL_IS_STRING(w)) {
			const char *ws = YAJL_GET_STRING(w), *gs = YAJL_GET_STRING(g);
			if (!ws || !gs || strcmp(ws, gs))
				fail_msg("%s: \"%s\" is \"%s\", libkineto wrote \"%s\"", what, key,
				         gs ? gs : "?", ws);
		} else if (YAJL_IS_NUMBER(w)) {
			if (!YAJL_IS_NUMBER(g) || YAJL_GET_DOUBLE(w) != YAJL_GET_DOUBLE(g))
				fail_msg("%s: \"%s\" is %g, libkineto wrote %g", what, key,
				         YAJL_IS_NUMBER(g) ? YAJL_GET_DOUBLE(g) : -1.0, YAJL_GET_DOUBLE(w));
		} else if (YAJL_IS_OBJECT(w)) {
			assert_same_members(w, g, key);
		}
	}
}

static void assert_like_fixture(yajl_val root)
{
	yajl_val props = tu_get(root, "deviceProperties");
	if (!props || !YAJL_IS_ARRAY(props) || YAJL_GET_ARRAY(props)->len != 1)
		fail_msg("deviceProperties does not list the one device");
	yajl_val p = YAJL_GET_ARRAY(props)->values[0];
	assert_same_members(YAJL_GET_ARRAY(tu_get(fixture, "deviceProperties"))->values[0], p,
	                    "deviceProperties[0]");
	assert_string_equal(tu_get_str(p, "uuid"), "GPU-5a1c0e2f-0102-0304-0506-0708090a0b0c");

	static const char *const versions[] = {"cuda_driver_version", "cuda_runtime_version",
	                                       "cupti_version"};
	for (size_t i = 0; i < 3; i++) {
		yajl_val v = tu_get(root, versions[i]);
		if (!v || !YAJL_IS_INTEGER(v))
			fail_msg("\"%s\" is missing or not an integer", versions[i]);
		assert_int_equal(YAJL_GET_INTEGER(v), YAJL_GET_INTEGER(tu_get(fixture, versions[i])));
	}

	/* The kernel's SM-dependent args, from the same limits and shape. */
	yajl_val fk = tu_get(fixture_event("kernel"), "args"),
	         k = tu_get(tu_find(root, "X", "kernel", NULL), "args");
	static const char *const sm_args[] = {"blocks per SM", "warps per SM", "est. achieved occupancy %",
	                                      "channel", "channel_type"};
	for (size_t i = 0; i < sizeof(sm_args) / sizeof(sm_args[0]); i++) {
		yajl_val want = tu_get(fk, sm_args[i]), got = tu_get(k, sm_args[i]);
		if (!got || YAJL_GET_DOUBLE(got) != YAJL_GET_DOUBLE(want))
			fail_msg("kernel \"%s\" is %g, libkineto wrote %g", sm_args[i],
			         got ? YAJL_GET_DOUBLE(got) : -1.0, YAJL_GET_DOUBLE(want));
	}
	assert_same_members(tu_get(fk, "occupancy"), tu_get(k, "occupancy"), "kernel occupancy");

	yajl_val fm = tu_get(fixture_event("gpu_memcpy"), "args"),
	         m = tu_get(tu_find(root, "X", "gpu_memcpy", NULL), "args");
	assert_non_null(m);
	assert_int_equal(YAJL_GET_INTEGER(tu_get(m, "channel")), YAJL_GET_INTEGER(tu_get(fm, "channel")));
	assert_int_equal(YAJL_GET_INTEGER(tu_get(m, "channel_type")),
	                 YAJL_GET_INTEGER(tu_get(fm, "channel_type")));
}

/* The trace is on when CUDA initialises: CUPTI writes a DEVICE record. */
static void test_started_before_cuda(void **state)
{
	(void)state;
	begin();
	assert_int_equal(fake_cupti_cuda_init(&device, 1), 1);
	yajl_val root = run_scenario("before_cuda");
	assert_like_fixture(root);
	yajl_tree_free(root);
}

/* CUDA was up before the trace (an on-demand trace, a late strobe_start):
 * no DEVICE record comes, the driver gives the same. */
static void test_started_after_cuda(void **state)
{
	(void)state;
	assert_int_equal(fake_cupti_cuda_init(&device, 1), 0);
	begin();
	yajl_val root = run_scenario("after_cuda");
	assert_like_fixture(root);
	yajl_tree_free(root);
}

/* No driver or runtime to ask: their keys are absent, not 0; CUPTI's is
 * still there. */
static void test_versions_unknown_left_out(void **state)
{
	(void)state;
	fake_cupti_set_cuda_versions(0, 0);
	begin();
	yajl_val root = run_scenario("no_versions");
	assert_null(tu_get(root, "cuda_driver_version"));
	assert_null(tu_get(root, "cuda_runtime_version"));
	assert_int_equal(YAJL_GET_INTEGER(tu_get(root, "cupti_version")), FAKE_CUPTI_DEFAULT_VERSION);
	yajl_val props = tu_get(root, "deviceProperties");
	assert_true(props && YAJL_IS_ARRAY(props) &&
	            YAJL_GET_ARRAY(props)->len == 0); /* CUDA never initialised */
	yajl_tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_started_before_cuda, setup),
	    cmocka_unit_test_setup(test_started_after_cuda, setup),
	    cmocka_unit_test_setup(test_versions_unknown_left_out, setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

/* The Intel XPU backend against the fake libpti_view of one record family
 * (PTI_FAKE_PATH, set by the including test file). strobe loads the fake
 * through STROBE_PTI_PATH when the first trace is prepared; the tests drive
 * the same library through its control API and read the trace strobe
 * writes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backends/pti/pti_abi.h"
#include "fake_pti.h"

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "crashdump.h"
#include "strobe/strobe.h"
#include "testutil.h"

static struct {
	void *h;
	int (*family)(void);
	uint64_t (*now)(void);
	void (*set_devices)(int);
	uint32_t (*api)(uint32_t, uint32_t, uint32_t, uint64_t, uint64_t);
	const char *(*api_name)(uint32_t, uint32_t);
	uint32_t (*next_corr)(void);
	void (*kernel)(int, uint64_t, uint32_t, const char *, uint64_t, uint64_t);
	void (*copy)(int, uint64_t, uint32_t, uint32_t, uint64_t, uint64_t, uint64_t);
	void (*copy_p2p)(int, int, uint64_t, uint32_t, uint64_t, uint64_t, uint64_t);
	void (*fill)(int, uint64_t, uint32_t, uint32_t, uint64_t, uint64_t, uint64_t, uint64_t);
	void (*sync)(uint32_t, uint32_t, uint32_t, uint64_t, uint64_t);
	void (*overhead)(uint32_t, uint64_t, uint64_t, uint64_t);
	void (*comms)(const char *, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
	void (*repeat_external)(int);
	void (*fail)(const char *, uint32_t, int);
	void (*drop_buffers)(int);
	int (*enabled)(uint32_t);
	int (*external_depth)(uint32_t);
	int (*clock_set_before_enable)(void);
	uint64_t (*completions)(void);
} F;

#define FSYM(field, name) (*(void **)&F.field = dlsym(F.h, name), assert_non_null(*(void **)&F.field))

static void load_fake(void)
{
	if (F.h)
		return;
	F.h = dlopen(PTI_FAKE_PATH, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(F.h);
	FSYM(family, "fake_pti_family");
	FSYM(now, "fake_pti_now");
	FSYM(set_devices, "fake_pti_set_devices");
	FSYM(api, "fake_pti_api");
	FSYM(api_name, "fake_pti_api_name");
	FSYM(next_corr, "fake_pti_next_corr");
	FSYM(kernel, "fake_pti_kernel");
	FSYM(copy, "fake_pti_copy");
	FSYM(copy_p2p, "fake_pti_copy_p2p");
	FSYM(fill, "fake_pti_fill");
	FSYM(sync, "fake_pti_sync");
	FSYM(overhead, "fake_pti_overhead");
	FSYM(comms, "fake_pti_comms");
	FSYM(repeat_external, "fake_pti_repeat_external");
	FSYM(fail, "fake_pti_fail");
	FSYM(drop_buffers, "fake_pti_drop_buffers");
	FSYM(enabled, "fake_pti_enabled");
	FSYM(external_depth, "fake_pti_external_depth");
	FSYM(clock_set_before_enable, "fake_pti_clock_set_before_enable");
	FSYM(completions, "fake_pti_completions");
}

/* Every XPU type libkineto knows, on top of its default set. */
#define XPU_ALL                                                                                              \
	(STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_RUNTIME) |                   \
	 STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_DRIVER) | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_SYNC) |   \
	 STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_COLLECTIVE_COMM))

static char trace_path[1200];
static int trace_no;

/* Stops the trace, saves it and parses it. */
static yajl_val stop_and_load(void)
{
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	snprintf(trace_path, sizeof(trace_path), "%s/t%d.json", tu_dir, trace_no++);
	assert_int_equal(strobe_trace_save(t, trace_path), 0);
	strobe_trace_destroy(t);
	return tu_load_trace(trace_path);
}

static yajl_val arg(yajl_val ev, const char *key)
{
	return tu_get(tu_get(ev, "args"), key);
}

static int64_t num(yajl_val v)
{
	assert_non_null(v);
	assert_true(YAJL_IS_NUMBER(v));
	return YAJL_GET_INTEGER(v);
}

static int64_t stat_of(yajl_val root, const char *key)
{
	return num(tu_get(tu_get(root, "strobe"), key));
}

/* ---- one SYCL program's work, driven through the fake ------------------ */

/* Work of a launch: from `after` ns from now for dur ns, in the installed
 * clock (strobe's). */
struct span {
	uint64_t start, end;
};

static struct span later(uint64_t after, uint64_t dur)
{
	struct span s;
	s.start = F.now() + after;
	s.end = s.start + dur;
	return s;
}

/* SYCL and Level Zero API ids of the fake's tables, by name. */
static uint32_t api_id(uint32_t group, const char *name)
{
	for (uint32_t id = 1; id < 64; id++) {
		const char *n = F.api_name(group, id);
		if (n && !strcmp(n, name))
			return id;
	}
	fail_msg("the fake has no %s API in group %u", name, (unsigned)group);
	return 0;
}

/* A SYCL kernel launch as PTI reports it: the runtime call, the Level Zero
 * call it makes (same correlation id), and the kernel on (dev, queue). */
static uint32_t launch(int dev, uint64_t queue, const char *kernel)
{
	uint32_t corr = F.next_corr();
	uint64_t t0 = F.now();
	struct span k = later(2000, 500);
	F.kernel(dev, queue, corr, kernel, k.start, k.end);
	uint64_t t1 = F.now();
	F.api(PTI_API_GROUP_LEVELZERO, api_id(PTI_API_GROUP_LEVELZERO, "zeCommandListAppendLaunchKernel"),
	      corr, t0 + 1, t1);
	F.api(PTI_API_GROUP_SYCL, api_id(PTI_API_GROUP_SYCL, "urEnqueueKernelLaunch"), corr, t0, F.now());
	return corr;
}

/* Lets the fake's future work times pass, then stops. */
static yajl_val finish(void)
{
	usleep(3000);
	return stop_and_load();
}

static void setup_program(void)
{
	load_fake();
	F.set_devices(2);
}

static void test_kernels_copies_fills_and_calls(void **state)
{
	(void)state;
	setup_program();
	assert_int_equal(strobe_prepare(XPU_ALL, NULL), 0);
	/* strobe's clock went in before the first view, and the views are on
	 * by the time start returns. */
	assert_true(F.clock_set_before_enable());
	assert_int_equal(strobe_start(), 0);
	assert_true(F.enabled(PTI_VIEW_DEVICE_GPU_KERNEL));
	assert_true(F.enabled(PTI_VIEW_RUNTIME_API));
	assert_true(F.enabled(PTI_VIEW_EXTERNAL_CORRELATION));

	uint64_t op = strobe_op_push("train_step");
	strobe_range_push("phase");
	uint32_t c0 = launch(0, 3, "gemm_kernel<float>");
	strobe_range_pop();
	uint32_t c1 = launch(0, 4, "relu_kernel");
	uint32_t c2 = launch(1, PTI_INVALID_QUEUE_ID, "reduce_kernel");
	/* A copy host to device and a fill, each from its runtime call. */
	uint32_t cc = F.next_corr();
	uint64_t t0 = F.now();
	struct span cs = later(2000, 1000);
	F.copy(0, 3, cc, PTI_VIEW_MEMCPY_TYPE(PTI_VIEW_MEMORY_TYPE_HOST, PTI_VIEW_MEMORY_TYPE_DEVICE), 4096,
	       cs.start, cs.end);
	F.api(PTI_API_GROUP_SYCL, api_id(PTI_API_GROUP_SYCL, "urEnqueueUSMMemcpy"), cc, t0, F.now());
	uint32_t fc = F.next_corr();
	t0 = F.now();
	struct span fs = later(2000, 1000);
	F.fill(1, 7, fc, PTI_VIEW_MEMORY_TYPE_DEVICE, 1 << 20, 0, fs.start, fs.end);
	F.api(PTI_API_GROUP_SYCL, api_id(PTI_API_GROUP_SYCL, "urEnqueueUSMFill"), fc, t0, F.now());
	strobe_op_pop();
	/* Peer to peer, a sync, overhead (outside the op). */
	struct span ps = later(2000, 800);
	F.copy_p2p(0, 1, 5, F.next_corr(), 8192, ps.start, ps.end);
	t0 = F.now();
	F.sync(PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_EVENT,
	       api_id(PTI_API_GROUP_LEVELZERO, "zeEventHostSynchronize"), F.next_corr(), t0, t0 + 300);
	t0 = F.now();
	F.overhead(PTI_VIEW_OVERHEAD_KIND_BUFFER_FLUSH, 3, t0, t0 + 1000);
	yajl_val root = finish();

	assert_null(tu_get(root, "xpu_capture"));
	const char *version = tu_get_str(root, "xpupti_version");
	assert_non_null(version);
	assert_string_equal(version, F.family() == 1 ? "0.16.0" : "1.2.0");
	/* Kernels by their names verbatim, pid = device, tid = SYCL queue. */
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 3);
	yajl_val k0 = tu_find(root, "X", "kernel", "gemm_kernel<float>");
	assert_non_null(k0);
	assert_int_equal(num(tu_get(k0, "pid")), 0);
	assert_int_equal(num(tu_get(k0, "tid")), 3);
	assert_int_equal(num(arg(k0, "correlation")), c0);
	assert_int_equal(num(arg(k0, "External id")), (int64_t)op);
	yajl_val k1 = tu_find(root, "X", "kernel", "relu_kernel");
	assert_int_equal(num(tu_get(k1, "tid")), 4);
	assert_int_equal(num(arg(k1, "correlation")), c1);
	/* The invalid queue id: a row of its own. */
	yajl_val k2 = tu_find(root, "X", "kernel", "reduce_kernel");
	assert_int_equal(num(tu_get(k2, "pid")), 1);
	assert_int_equal(num(arg(k2, "correlation")), c2);
	assert_int_not_equal(num(tu_get(k2, "tid")), 3);
	assert_int_not_equal(num(tu_get(k2, "tid")), 4);

	/* The range around the first launch: a span on its kernel's row. */
	yajl_val span = tu_find(root, "X", "gpu_user_annotation", "phase");
	assert_non_null(span);
	assert_int_equal(num(tu_get(span, "pid")), 0);
	assert_int_equal(num(tu_get(span, "tid")), 3);
	assert_true(tu_get_ns(span, "ts") <= tu_get_ns(k0, "ts"));

	/* Copies and fills, named as libkineto names them. */
	yajl_val cp = tu_find(root, "X", "gpu_memcpy", "Memcpy H2D (HOST -> DEVICE)");
	assert_non_null(cp);
	assert_int_equal(num(arg(cp, "bytes")), 4096);
	assert_int_equal(num(arg(cp, "External id")), (int64_t)op);
	yajl_val fl = tu_find(root, "X", "gpu_memset", NULL);
	assert_non_null(fl);
	tu_assert_contains(tu_get_str(fl, "name"), "Memset (0 -> DEVICE)");
	assert_int_equal(num(tu_get(fl, "pid")), 1);
	assert_int_equal(num(tu_get(fl, "tid")), 7);
	yajl_val p2p = tu_find(root, "X", "gpu_memcpy", "Memcpy D2D (DEVICE -> DEVICE)");
	assert_non_null(p2p);
	assert_int_equal(num(tu_get(p2p, "pid")), 0);
	assert_int_equal(num(arg(p2p, "dst device")), 1);
	assert_null(arg(p2p, "External id")); /* launched outside the op */

	/* Runtime and driver calls on the calling thread, named by group. */
	int64_t me = (int64_t)syscall(SYS_gettid);
	assert_int_equal(tu_count(root, "X", "xpu_runtime", "urEnqueueKernelLaunch"), 3);
	assert_int_equal(tu_count(root, "X", "xpu_driver", "zeCommandListAppendLaunchKernel"), 3);
	yajl_val rt = tu_find(root, "X", "xpu_runtime", "urEnqueueKernelLaunch");
	assert_int_equal(num(tu_get(rt, "tid")), me);
	assert_int_equal(num(arg(rt, "External id")), (int64_t)op);
	/* One arrow per runtime call that launched work: 3 kernels, a copy, a
	 * fill; the driver calls start none. */
	assert_int_equal(tu_count(root, "s", "ac2g", NULL), 5);
	assert_int_equal(tu_count(root, "f", "ac2g", NULL), 5);
	/* Sync and overhead on the thread, once each. */
	yajl_val sy = tu_find(root, "X", "xpu_sync", "zeEventHostSynchronize");
	assert_non_null(sy);
	assert_int_equal(num(tu_get(sy, "tid")), me);
	assert_int_equal(tu_count(root, "X", "xpu_sync", NULL), 1);
	yajl_val ov = tu_find(root, "X", "overhead", "Buffer Flush");
	assert_non_null(ov);
	assert_int_equal(num(arg(ov, "overhead count")), 3);

	/* Rows as libkineto's XPU layout labels them. */
	char *text = tu_read_file(trace_path, NULL);
	tu_assert_contains(text, "\"GPU 0\"");
	tu_assert_contains(text, "\"GPU 1\"");
	tu_assert_contains(text, "\"Stream 3\"");
	tu_assert_contains(text, "\"Stream 7\"");
	free(text);
	assert_int_equal(stat_of(root, "gpu_unmatched_correlations"), 0);
	assert_int_equal(stat_of(root, "gpu_launches"), 3);
	assert_int_equal(stat_of(root, "gpu_launches_without_kernel"), 0);
	yajl_tree_free(root);
	/* Pushes happen only while tracing: nothing is left on PTI's stacks. */
	assert_int_equal(F.external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0), 0);
	assert_int_equal(F.external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_1), 0);
}

/* strobe_correlation_push / strobe_user_correlation_push reach PTI as
 * CUSTOM_0 and CUSTOM_1: External id and the range span follow them, also
 * when the same pair arrives twice. Without any API view, work still links
 * to the op around it through its thread and time. */
static void test_external_ids(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0); /* libkineto's default: no API views */
	assert_int_equal(strobe_start(), 0);
	assert_false(F.enabled(PTI_VIEW_RUNTIME_API));
	/* The user pair names an annotation by id: here an op's. */
	uint64_t named = strobe_op_push("outer annotation");
	strobe_op_pop();
	strobe_correlation_push(4242);
	strobe_user_correlation_push(named);
	assert_int_equal(F.external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0), 1);
	assert_int_equal(F.external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_1), 1);
	F.repeat_external(2);
	uint32_t pushed = launch(0, 2, "pushed_kernel");
	strobe_user_correlation_pop();
	strobe_correlation_pop();
	assert_int_equal(F.external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0), 0);
	uint64_t op = strobe_op_push("enclosing op");
	launch(1, 1, "plain_kernel");
	strobe_op_pop();
	yajl_val root = finish();
	yajl_val k = tu_find(root, "X", "kernel", "pushed_kernel");
	assert_non_null(k);
	assert_int_equal(num(arg(k, "correlation")), pushed);
	assert_int_equal(num(arg(k, "External id")), 4242);
	yajl_val span = tu_find(root, "X", "gpu_user_annotation", "outer annotation");
	assert_non_null(span);
	assert_int_equal(num(tu_get(span, "tid")), 2);
	yajl_val p = tu_find(root, "X", "kernel", "plain_kernel");
	assert_int_equal(num(arg(p, "External id")), (int64_t)op);
	assert_int_equal(tu_count(root, "X", "xpu_runtime", NULL), 0);
	assert_int_equal(tu_count(root, "s", "ac2g", NULL), 0);
	yajl_tree_free(root);
	/* Outside a trace nothing is pushed. */
	strobe_correlation_push(7);
	assert_int_equal(F.external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0), 0);
	strobe_correlation_pop();
}

/* Buffers fill up and complete on PTI's thread while the program goes on;
 * records split over many buffers each appear once; paused work is
 * dropped; what came before start is warm-up. */
static void test_many_buffers_pause_and_warmup(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(XPU_ALL, NULL), 0);
	launch(0, 1, "before_start"); /* enabled in prepare: warm-up */
	assert_int_equal(strobe_start(), 0);
	uint64_t done0 = F.completions();
	enum { N = 20000 }; /* 3 records each, 5.6 MB: 4 MiB buffers fill and complete */
	for (int i = 0; i < N; i++)
		launch(i & 1, (uint64_t)(i % 3), "many");
	assert_true(F.completions() > done0); /* completed while the program ran */
	/* The last kernel starts 2 us after its launch: paused before that,
	 * it would be paused work. */
	usleep(3000);
	strobe_toggle_collection(false);
	launch(0, 1, "paused");
	usleep(3000);
	strobe_toggle_collection(true);
	launch(0, 1, "after_pause");
	yajl_val root = finish();
	assert_int_equal(tu_count(root, "X", "kernel", "many"), N);
	assert_int_equal(tu_count(root, "X", "xpu_runtime", "urEnqueueKernelLaunch"), N + 1);
	assert_int_equal(tu_count(root, "X", "kernel", "before_start"), 0);
	assert_int_equal(tu_count(root, "X", "kernel", "paused"), 0);
	assert_int_equal(tu_count(root, "X", "kernel", "after_pause"), 1);
	assert_true(stat_of(root, "gpu_warmup_records") >= 3);
	assert_int_equal(stat_of(root, "gpu_bad_buffers"), 0);
	assert_int_equal(stat_of(root, "gpu_launches_without_kernel"), 0);
	yajl_tree_free(root);

	/* The next trace holds only its own work. */
	assert_int_equal(strobe_prepare(XPU_ALL, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	root = finish();
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 0);
	assert_int_equal(tu_count(root, "X", "xpu_runtime", NULL), 0);
	yajl_tree_free(root);
}

/* Collectives: PTI 0.17 and later; an older PTI refuses the view, the rest
 * of the trace is unaffected. */
static void test_collectives(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(XPU_ALL, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	uint64_t t0 = F.now();
	F.comms("allreduce", 11, 1 << 20, 1 << 20, t0, t0 + 5000);
	launch(0, 1, "after_comms");
	yajl_val root = finish();
	assert_null(tu_get(root, "xpu_capture"));
	assert_int_equal(tu_count(root, "X", "kernel", "after_comms"), 1);
	if (F.family() >= 2) {
		yajl_val c = tu_find(root, "X", "collective_comm", "xccl::allreduce");
		assert_non_null(c);
		assert_int_equal(num(arg(c, "Communicator_id")), 11);
	} else {
		assert_int_equal(tu_count(root, "X", "collective_comm", NULL), 0);
	}
	yajl_tree_free(root);
}

/* test_flight_recorder's newest kernel, and a dump. */
struct newest {
	const char *kernel;
	char path[1300];
};

static yajl_val record_newest(void *p)
{
	struct newest *n = p;
	launch(0, 2, n->kernel);
	usleep(3000);
	assert_int_equal(strobe_flight_dump("test", n->path, sizeof(n->path)), 0);
	return tu_load_trace(n->path);
}

static bool has_newest(yajl_val root, void *p)
{
	const struct newest *n = p;
	return tu_find(root, "X", "kernel", n->kernel) != NULL;
}

/* The flight recorder keeps XPU work too: its buffers rotate at the GPU
 * share of the budget (32 MiB: 4 MiB, in buffers of 1 MiB, while GPU
 * snapshots take as much again), a dump holds the newest work of its
 * window linked to the op open around it (older work still in the buffers
 * is outside the window and counted so), and the recording goes on. */
static void test_flight_recorder(void **state)
{
	(void)state;
	char out[1200];
	snprintf(out, sizeof(out), "%s/flight.json", tu_dir);
	const uint64_t window = 200ull * 1000000ull;
	struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .output = out, .activity_mask = XPU_ALL,
	                                          .memory_bytes = 32ull << 20, .window_ns = window,
	                                          .gpu_snapshot_ns = 20ull * 1000000ull);
	assert_int_equal(strobe_flight_start(&o), 0);
	assert_true(F.enabled(PTI_VIEW_DEVICE_GPU_KERNEL));
	enum { OLD = 50000 }; /* 14 MB of records: more than the GPU share holds */
	for (int i = 0; i < OLD; i++)
		launch(i & 1, 1, "old");
	usleep(300000); /* the old work leaves the 200 ms window */
	struct newest n = {.kernel = "newest"};
	uint64_t op = 0;
	yajl_val root = tu_flight_newest(window, "still running", &op, record_newest, has_newest, &n);
	yajl_val k = tu_find(root, "X", "kernel", "newest");
	assert_non_null(k);
	assert_int_equal(num(arg(k, "External id")), (int64_t)op);
	assert_int_equal(tu_count(root, "X", "kernel", "old"), 0);
	assert_true(stat_of(root, "gpu_aged_buffers") > 0);
	assert_true(stat_of(root, "gpu_out_of_window") > 1000); /* still kept, older than the window */
	assert_non_null(tu_find(root, "X", "cpu_op", "still running"));
	yajl_tree_free(root);
	/* Still recording: a later dump has later work. */
	strobe_op_pop();
	struct newest later = {.kernel = "after the dump"};
	root = tu_flight_newest(window, NULL, NULL, record_newest, has_newest, &later);
	assert_int_equal(tu_count(root, "X", "kernel", "after the dump"), 1);
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
	assert_false(F.enabled(PTI_VIEW_DEVICE_GPU_KERNEL));
}

static bool has_crash_kernel(yajl_val root)
{
	return tu_find(root, "X", "kernel", "crash_kernel") != NULL;
}

/* A fatal signal in flight mode: the dump holds the XPU work decoded by
 * the last GPU snapshot, linked to the op still open around its launch. */
static void test_crash_dump(void **state)
{
	(void)state;
	char out[1200];
	snprintf(out, sizeof(out), "%s/crash.json", tu_dir);
	struct strobe_flight_opts o =
	    STROBE_OPTS(strobe_flight_opts, .output = out, .activity_mask = XPU_ALL,
	                .memory_bytes = 32ull << 20, .gpu_snapshot_ns = 20ull * 1000000ull);
	assert_int_equal(strobe_flight_start(&o), 0);
	uint64_t op = strobe_op_push("crash_op");
	launch(0, 2, "crash_kernel");
	yajl_val root = tu_crash_dump_until(has_crash_kernel);
	yajl_val k = tu_find(root, "X", "kernel", "crash_kernel");
	assert_int_equal(num(arg(k, "External id")), (int64_t)op);
	assert_true(
	    YAJL_IS_FALSE(tu_get(tu_get(tu_find(root, "X", "cpu_op", "crash_op"), "args"), "finished")));
	assert_string_equal(tu_get_str(tu_get(tu_get(root, "flight_recorder"), "gpu_snapshot"), "state"),
	                    "written");
	assert_true(stat_of(root, "gpu_records") >= 2);
	yajl_tree_free(root);
	strobe_op_pop();
	assert_int_equal(strobe_flight_stop(), 0);
}

static int run_pti_tests(void)
{
	setenv("STROBE_PTI_PATH", PTI_FAKE_PATH, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernels_copies_fills_and_calls),
	    cmocka_unit_test(test_external_ids),
	    cmocka_unit_test(test_many_buffers_pause_and_warmup),
	    cmocka_unit_test(test_collectives),
	    cmocka_unit_test_teardown(test_flight_recorder, tu_flight_off),
	    cmocka_unit_test_teardown(test_crash_dump, tu_flight_off),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

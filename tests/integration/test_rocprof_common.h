/* The AMD backend against the fake rocprofiler-sdk of one ABI family
 * (ROCPROF_FAKE_PATH, set by the including test file). strobe registers
 * itself with rocprofiler_force_configure when the first trace is
 * prepared; the tests drive the fake through its control API (the same
 * dlopened library strobe uses) and read the trace strobe writes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backends/rocprof/rocprof_abi.h"
#include "fake_rocprofiler_load.h"

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

static struct fake_rocp_control F;

static void load_fake(void)
{
	char why[512];
	if (!F.handle && fake_rocp_control_load(&F, ROCPROF_FAKE_PATH, why, sizeof(why)))
		fail_msg("%s", why);
}

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

/* The first event of cat whose name contains needle. */
static yajl_val find_named(yajl_val root, const char *cat, const char *needle)
{
	yajl_val evs = tu_events(root);
	for (size_t i = 0; evs && i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i];
		const char *c = tu_get_str(e, "cat"), *n = tu_get_str(e, "name");
		if (c && n && !strcmp(c, cat) && strstr(n, needle))
			return e;
	}
	return NULL;
}

/* How many complete events of cat have a name containing needle. */
static size_t count_named(yajl_val root, const char *cat, const char *needle)
{
	yajl_val evs = tu_events(root);
	size_t n = 0;
	for (size_t i = 0; evs && i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i];
		const char *c = tu_get_str(e, "cat"), *nm = tu_get_str(e, "name"), *ph = tu_get_str(e, "ph");
		n += c && nm && ph && !strcmp(ph, "X") && !strcmp(c, cat) && strstr(nm, needle);
	}
	return n;
}

static int64_t num(yajl_val v)
{
	assert_non_null(v);
	assert_true(YAJL_IS_NUMBER(v));
	return YAJL_GET_INTEGER(v);
}

/* ---- one HIP program's work, driven through the fake -------------------- */

static uint64_t kernel_ids[2][2];

struct launch {
	int gpu;
	uint64_t queue;
	uint64_t kernel;
	uint64_t start, end;
};

/* A KERNEL_DISPATCH record of l's kernel for call corr, running from 100 ns
 * from now for 500 ns; the fake's answer (-1 when no context traces it). */
static int dispatch_for(uint64_t corr, struct launch *l)
{
	l->start = F.now() + 100;
	l->end = l->start + 500;
	struct fake_rocp_dispatch d = {
	    .correlation_id = corr,
	    .gpu = l->gpu,
	    .queue = l->queue,
	    .kernel_id = l->kernel,
	    .grid = {1024, 2, 1},
	    .workgroup = {256, 1, 1},
	    .lds_bytes = 512,
	    .start = l->start,
	    .end = l->end,
	};
	return F.dispatch(&d);
}

static void launch_body(uint64_t corr, void *p)
{
	assert_int_equal(dispatch_for(corr, p), 0);
}

struct copy_arg {
	int32_t direction;
	int src, dst;
};

static void copy_body(uint64_t corr, void *p)
{
	struct copy_arg *a = p;
	uint64_t s = F.now() + 500;
	struct fake_rocp_copy c = {
	    .correlation_id = corr,
	    .direction = a->direction,
	    .src_gpu = a->src,
	    .dst_gpu = a->dst,
	    .bytes = 4096,
	    .start = s,
	    .end = s + 2000,
	};
	assert_int_equal(F.copy(&c), 0);
}

static void setup_program(void)
{
	load_fake();
	F.set_gpus(2);
	/* A host that was suspended for an hour: the SDK's clock (BOOTTIME)
	 * runs that far ahead of MONOTONIC. */
	F.set_suspend_ns(3600ull * 1000000000ull);
}

/* The first trace registers strobe and loads the code objects (the
 * kernel-symbol context runs from initialize on, before any trace). */
static void test_kernels_copies_and_calls(void **state)
{
	(void)state;
	setup_program();
	assert_int_equal(strobe_prepare(0, NULL), 0);
	static const char *const k0[] = {"_Z5scalePfi", "_Z4fillPfm"};
	static const char *const k1[] = {"_Z6reduceILi256EEvPKfPf"};
	F.load_code_object(0, k0, 2, kernel_ids[0]);
	uint64_t co1 = F.load_code_object(1, k1, 1, kernel_ids[1]);
	assert_int_equal(strobe_start(), 0);
	uint64_t op = strobe_op_push("train_step");
	strobe_correlation_push(op);
	/* Two HIP streams on GPU 0 that share one HSA queue. */
	struct launch l0 = {0, 0x1000, kernel_ids[0][0], 0, 0};
	struct launch l1 = {0, 0x1000, kernel_ids[0][1], 0, 0};
	struct launch l2 = {1, 0x3000, kernel_ids[1][0], 0, 0};
	const struct fake_rocp_arg a0[] = {{"stream", "hipStream_t", "0x5a0"},
	                                   {"numBlocks", "dim3", "{4, 2, 1}"},
	                                   {"dimBlocks", "dim3", "{256, 1, 1}"},
	                                   {"sharedMemBytes", "unsigned int", "512"}};
	const struct fake_rocp_arg a1[] = {{"stream", "hipStream_t", "0x5b0"}};
	F.roctx_push("forward");
	F.roctx_mark("checkpoint");
	strobe_range_push("phase");
	uint64_t c0 = F.hip_call("hipLaunchKernel", a0, 4, launch_body, &l0);
	strobe_range_pop();
	F.hip_call("hipLaunchKernel", a1, 1, launch_body, &l1);
	F.hip_call("hipLaunchKernel", a1, 1, launch_body, &l2);
	F.roctx_pop();
	F.roctx_push("never closed");
	struct copy_arg dtoh = {ROCP_MEMORY_COPY_DEVICE_TO_HOST, 1, -1};
	struct copy_arg htod = {ROCP_MEMORY_COPY_HOST_TO_DEVICE, -1, 0};
	const struct fake_rocp_arg size_arg[] = {{"sizeBytes", "size_t", "4096"}};
	F.hip_call("hipMemcpy", size_arg, 1, copy_body, &dtoh);
	F.hip_call("hipMemcpyAsync", NULL, 0, copy_body, &htod);
	strobe_correlation_pop();
	strobe_op_pop();
	/* The code object goes before the records are read: names survive. */
	F.unload_code_object(co1);
	F.drop(7);
	usleep(2000); /* the fake's work ends in its future: let it pass */
	F.hip_call("hipDeviceSynchronize", NULL, 0, NULL, NULL);
	yajl_val root = stop_and_load();

	assert_null(tu_get(root, "rocm_capture"));
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 3);
	yajl_val k = find_named(root, "kernel", "scale(float*, int)");
	assert_non_null(k);
	assert_int_equal(num(tu_get(k, "pid")), 0);
	assert_int_equal(num(arg(k, "correlation")), (int64_t)c0);
	assert_int_equal(num(arg(k, "External id")), (int64_t)op);
	assert_int_equal(num(arg(k, "shared memory")), 512);
	yajl_val grid = arg(k, "grid"), block = arg(k, "block");
	assert_true(YAJL_IS_ARRAY(grid) && grid->u.array.len == 3);
	assert_int_equal(num(grid->u.array.values[0]), 4); /* 1024 work-items / 256 per block */
	assert_int_equal(num(grid->u.array.values[1]), 2);
	assert_int_equal(num(block->u.array.values[0]), 256);
	/* Two HIP streams on GPU 0: two stream rows there, one queue. */
	yajl_val k1e = find_named(root, "kernel", "fill(float*, unsigned long)");
	assert_non_null(k1e);
	assert_int_not_equal(num(tu_get(k1e, "tid")), num(tu_get(k, "tid")));
	yajl_val r = find_named(root, "kernel", "reduce<256>");
	assert_non_null(r); /* named although its code object was unloaded */
	assert_int_equal(num(tu_get(r, "pid")), 1);

	/* The strobe range around the first launch: a span on its kernel's row. */
	yajl_val span = tu_find(root, "X", "gpu_user_annotation", "phase");
	assert_non_null(span);
	assert_int_equal(num(tu_get(span, "pid")), 0);
	assert_int_equal(num(tu_get(span, "tid")), num(tu_get(k, "tid")));
	assert_true(tu_get_ns(span, "ts") <= tu_get_ns(k, "ts"));
	assert_true(tu_get_ns(span, "ts") + tu_get_ns(span, "dur") >=
	            tu_get_ns(k, "ts") + tu_get_ns(k, "dur"));
	assert_int_equal(tu_count(root, "X", "gpu_user_annotation", "phase"), 1);
	/* Copies by direction, a DtoH on its source GPU's row. */
	yajl_val d = tu_find(root, "X", "gpu_memcpy", "Memcpy DtoH (Device -> Host)");
	assert_non_null(d);
	assert_int_equal(num(tu_get(d, "pid")), 1);
	assert_int_equal(num(arg(d, "bytes")), 4096);
	assert_string_equal(tu_get_str(tu_get(d, "args"), "kind"), "DtoH");
	assert_int_equal(num(arg(tu_find(root, "X", "cuda_runtime", "hipMemcpy"), "bytes")), 4096);
	yajl_val h = tu_find(root, "X", "gpu_memcpy", "Memcpy HtoD (Host -> Device)");
	assert_non_null(h);
	assert_int_equal(num(tu_get(h, "pid")), 0);

	/* HIP calls as cuda_runtime on the calling thread, arrows to their work. */
	yajl_val call = tu_find(root, "X", "cuda_runtime", "hipLaunchKernel");
	assert_non_null(call);
	assert_string_equal(tu_get_str(tu_get(call, "args"), "stream"), "0x5a0");
	assert_int_equal(num(arg(call, "shared memory")), 512);
	assert_int_equal(num(arg(call, "grid")->u.array.values[0]), 4);
	assert_int_equal(num(arg(call, "block")->u.array.values[0]), 256);
	assert_int_equal(num(arg(call, "External id")), (int64_t)op);
	/* roctx: one user_annotation per range on the calling thread, marks as
	 * instants, a range open at stop ends there. */
	yajl_val fw = tu_find(root, "X", "user_annotation", "forward");
	assert_non_null(fw);
	assert_int_equal(num(tu_get(fw, "tid")), (int64_t)syscall(SYS_gettid));
	assert_true(tu_get_ns(fw, "ts") <= tu_get_ns(call, "ts"));
	assert_true(tu_get_ns(fw, "ts") + tu_get_ns(fw, "dur") >=
	            tu_get_ns(call, "ts") + tu_get_ns(call, "dur"));
	assert_non_null(tu_find(root, "X", "user_annotation", "never closed"));
	assert_int_equal(tu_count(root, "i", NULL, "checkpoint"), 1);
	assert_int_equal(num(tu_get(call, "tid")), (int64_t)syscall(SYS_gettid));
	assert_int_equal(tu_count(root, "X", "cuda_runtime", "hipLaunchKernel"), 3);
	assert_int_equal(tu_count(root, "X", "cuda_runtime", "hipDeviceSynchronize"), 1);
	assert_int_equal(tu_count(root, "s", "ac2g", NULL), 5);
	assert_int_equal(tu_count(root, "f", "ac2g", NULL), 5);
	/* GPU rows labelled as libkineto labels them. */
	char *text = tu_read_file(trace_path, NULL);
	tu_assert_contains(text, "\"GPU 1\"");
	free(text);
	/* deviceProperties: each GPU agent by ordinal (the pid of its rows),
	 * named by the SDK's agent name. */
	yajl_val props = tu_get(root, "deviceProperties");
	assert_true(props && YAJL_IS_ARRAY(props));
	assert_int_equal(props->u.array.len, 2);
	static const char *const gfx[] = {"gfx90a", "gfx942"};
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(num(tu_get(props->u.array.values[i], "id")), (int64_t)i);
		assert_string_equal(tu_get_str(props->u.array.values[i], "name"), gfx[i]);
	}

	/* The SDK's clock converted by bracketing, not assumed MONOTONIC: the
	 * kernel starts within its launching call's time (to 1 ms, against the
	 * hour of suspend a MONOTONIC assumption would be off by). */
	int64_t ks = tu_get_ns(k, "ts"), cs = tu_get_ns(call, "ts");
	assert_true(ks > cs - 1000000 && ks < cs + tu_get_ns(call, "dur") + 1000000);
	/* drop_count reaches the trace's accounting. */
	assert_int_equal(num(tu_get(tu_get(root, "strobe"), "gpu_dropped_records")), 7);
	yajl_tree_free(root);
}

/* roctxRangeStartA / roctxRangeStop on another thread. */
struct start_stop {
	uint64_t stop_id, started_id;
	int64_t tid;
};

static void *stop_elsewhere(void *p)
{
	struct start_stop *a = p;
	a->tid = (int64_t)syscall(SYS_gettid);
	F.roctx_stop(a->stop_id);
	a->started_id = F.roctx_start("started elsewhere");
	return NULL;
}

/* roctx start/stop ranges may cross threads: one user_annotation per range
 * on the thread that started it, from start to stop; one still open at stop
 * ends there. */
static void test_roctx_start_stop(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	struct start_stop a = {0};
	a.stop_id = F.roctx_start("load batch");
	F.hip_call("hipDeviceSynchronize", NULL, 0, NULL, NULL);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stop_elsewhere, &a), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	F.hip_call("hipStreamSynchronize", NULL, 0, NULL, NULL);
	F.roctx_stop(a.started_id);
	F.roctx_start("still open");
	yajl_val root = stop_and_load();
	int64_t me = (int64_t)syscall(SYS_gettid);
	yajl_val lb = tu_find(root, "X", "user_annotation", "load batch");
	assert_non_null(lb);
	assert_int_equal(tu_count(root, "X", "user_annotation", "load batch"), 1);
	assert_int_equal(num(tu_get(lb, "tid")), me);
	yajl_val sync = tu_find(root, "X", "cuda_runtime", "hipDeviceSynchronize");
	yajl_val ssync = tu_find(root, "X", "cuda_runtime", "hipStreamSynchronize");
	assert_non_null(sync);
	assert_non_null(ssync);
	/* From before the first call to the other thread's stop, before the
	 * second call. */
	assert_true(tu_get_ns(lb, "ts") <= tu_get_ns(sync, "ts"));
	assert_true(tu_get_ns(lb, "ts") + tu_get_ns(lb, "dur") >=
	            tu_get_ns(sync, "ts") + tu_get_ns(sync, "dur"));
	assert_true(tu_get_ns(lb, "ts") + tu_get_ns(lb, "dur") <= tu_get_ns(ssync, "ts"));
	/* Started on the other thread, stopped here: on the other thread's row. */
	yajl_val se = tu_find(root, "X", "user_annotation", "started elsewhere");
	assert_non_null(se);
	assert_int_equal(num(tu_get(se, "tid")), a.tid);
	assert_true(tu_get_ns(se, "ts") + tu_get_ns(se, "dur") >=
	            tu_get_ns(ssync, "ts") + tu_get_ns(ssync, "dur"));
	assert_non_null(tu_find(root, "X", "user_annotation", "still open"));
	yajl_tree_free(root);
}

/* Program threads launch kernels and open roctx ranges while the SDK's
 * thread delivers the kernels at its watermark: everything arrives once, on
 * its own thread's row (under TSan, with no race reported). */
#define BUSY_THREADS  4
#define BUSY_LAUNCHES 1000

struct busy {
	int64_t tid;
	int gpu;
};

static void *busy_thread(void *p)
{
	struct busy *b = p;
	b->tid = (int64_t)syscall(SYS_gettid);
	struct launch l = {b->gpu, 0x1000 + (uint64_t)b->gpu, kernel_ids[b->gpu][0], 0, 0};
	uint64_t id = F.roctx_start("busy");
	for (int i = 0; i < BUSY_LAUNCHES; i++) {
		F.roctx_push("launch");
		F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
		F.roctx_pop();
	}
	F.roctx_stop(id);
	return NULL;
}

static void test_threads_during_delivery(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	struct busy b[BUSY_THREADS];
	pthread_t th[BUSY_THREADS];
	for (int i = 0; i < BUSY_THREADS; i++) {
		b[i] = (struct busy){0, i % 2};
		assert_int_equal(pthread_create(&th[i], NULL, busy_thread, &b[i]), 0);
	}
	for (int i = 0; i < BUSY_THREADS; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	usleep(2000);
	yajl_val root = stop_and_load();
	assert_int_equal(tu_count(root, "X", "kernel", NULL), BUSY_THREADS * BUSY_LAUNCHES);
	assert_int_equal(tu_count(root, "X", "cuda_runtime", "hipLaunchKernel"),
	                 BUSY_THREADS * BUSY_LAUNCHES);
	assert_int_equal(tu_count(root, "X", "user_annotation", "launch"), BUSY_THREADS * BUSY_LAUNCHES);
	assert_int_equal(tu_count(root, "X", "user_annotation", "busy"), BUSY_THREADS);
	assert_int_equal(tu_count(root, "s", "ac2g", NULL), BUSY_THREADS * BUSY_LAUNCHES);
	yajl_val evs = tu_events(root);
	int on_own_row = 0;
	for (size_t i = 0; i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i];
		const char *n = tu_get_str(e, "name");
		if (!n || strcmp(n, "busy"))
			continue;
		for (int j = 0; j < BUSY_THREADS; j++)
			on_own_row += num(tu_get(e, "tid")) == b[j].tid;
	}
	assert_int_equal(on_own_row, BUSY_THREADS);
	yajl_tree_free(root);
}

/* GPU work that starts while collection is paused is dropped and counted. */
static void test_paused_work_dropped(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	struct launch l = {0, 0x1000, kernel_ids[0][0], 0, 0};
	strobe_toggle_collection(false);
	F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	usleep(1000);
	strobe_toggle_collection(true);
	F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	usleep(1000);
	yajl_val root = stop_and_load();
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 1);
	assert_int_equal(num(tu_get(tu_get(root, "strobe"), "gpu_paused_records")), 1);
	yajl_tree_free(root);
}

/* Waits until the SDK has made no delivery for 20 ms (at most 2 s): what
 * reached a watermark is delivered, what is left waits for a flush. */
static uint64_t deliveries_settled(void)
{
	uint64_t n = F.deliveries();
	for (int quiet = 0, i = 0; quiet < 20 && i < 2000; i++) {
		usleep(1000);
		uint64_t m = F.deliveries();
		quiet = m == n ? quiet + 1 : 0;
		n = m;
	}
	return n;
}

/* A launch after stop: the SDK's context is stopped, so it may produce no
 * record at all; if it did, strobe must not show it. */
static void launch_after_stop_body(uint64_t corr, void *p)
{
	(void)dispatch_for(corr, p);
}

#define SPLIT_LAUNCHES 12
#define LATE_LAUNCHES  5
#define SPLIT_CALLS    (2 * SPLIT_LAUNCHES + 1 + 2 * LATE_LAUNCHES)

/* Records of one window split across many SDK deliveries (the watermark
 * forced low), a kernel whose launching call came deliveries earlier, and
 * work of the window the SDK delivers only at the flush inside strobe_stop:
 * each appears once, linked to its call (ac2g) and op (External id), with
 * nothing dropped or unmatched; work launched after stop appears nowhere. */
static void test_split_and_late_buffers(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	uint64_t op = strobe_op_push("split step");
	strobe_correlation_push(op);
	uint64_t calls[SPLIT_CALLS];
	size_t ncalls = 0;
	uint64_t d0 = deliveries_settled();
	F.set_watermark(1); /* every record due as soon as it is produced */
	/* A launch whose kernel the GPU reports only after later work. */
	const struct fake_rocp_arg early_args[] = {{"stream", "hipStream_t", "0x7e0"}};
	uint64_t early = F.hip_call("hipLaunchKernel", early_args, 1, NULL, NULL);
	calls[ncalls++] = early;
	struct launch ls = {0, 0x1000, kernel_ids[0][0], 0, 0};
	struct copy_arg htod = {ROCP_MEMORY_COPY_HOST_TO_DEVICE, -1, 0};
	for (int i = 0; i < SPLIT_LAUNCHES; i++) {
		uint64_t before = F.deliveries();
		calls[ncalls++] = F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &ls);
		calls[ncalls++] = F.hip_call("hipMemcpyAsync", NULL, 0, copy_body, &htod);
		/* Let the SDK's thread deliver between launches (however slowly
		 * a loaded or sanitized build schedules it). */
		for (int w = 0; w < 1000 && F.deliveries() == before; w++)
			usleep(1000);
	}
	uint64_t d1 = deliveries_settled();
	/* Split: the records went out in several deliveries, not one. */
	assert_true(d1 - d0 >= 4);
	struct launch le = {1, 0x3000, kernel_ids[1][0], 0, 0};
	assert_int_equal(dispatch_for(early, &le), 0);
	uint64_t d2 = deliveries_settled();
	assert_true(d2 > d1); /* the kernel came in a delivery of its own */

	/* Late: the tool's own watermark again; this work is delivered only by
	 * the flush in strobe_stop. */
	F.set_watermark(0);
	struct launch ll = {0, 0x2000, kernel_ids[0][1], 0, 0};
	struct copy_arg dtoh = {ROCP_MEMORY_COPY_DEVICE_TO_HOST, 1, -1};
	for (int i = 0; i < LATE_LAUNCHES; i++) {
		calls[ncalls++] = F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &ll);
		calls[ncalls++] = F.hip_call("hipMemcpy", NULL, 0, copy_body, &dtoh);
	}
	strobe_correlation_pop();
	strobe_op_pop();
	usleep(3000); /* the late work ends before stop */
	assert_int_equal(F.deliveries(), d2);
	assert_int_equal(ncalls, SPLIT_CALLS);

	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_true(F.deliveries() > d2);
	/* After stop: neither this trace nor the next shows it. */
	struct launch la = {1, 0x3000, kernel_ids[1][0], 0, 0};
	F.hip_call("hipLaunchKernel", NULL, 0, launch_after_stop_body, &la);
	F.hip_call("hipMemcpyAsync", NULL, 0, NULL, NULL);
	snprintf(trace_path, sizeof(trace_path), "%s/t%d.json", tu_dir, trace_no++);
	assert_int_equal(strobe_trace_save(t, trace_path), 0);
	strobe_trace_destroy(t);
	yajl_val root = tu_load_trace(trace_path);

	assert_int_equal(tu_count(root, "X", "kernel", NULL), SPLIT_LAUNCHES + 1 + LATE_LAUNCHES);
	assert_int_equal(count_named(root, "kernel", "scale(float*, int)"), SPLIT_LAUNCHES);
	assert_int_equal(count_named(root, "kernel", "fill(float*, unsigned long)"), LATE_LAUNCHES);
	assert_int_equal(count_named(root, "kernel", "reduce<256>"), 1);
	assert_int_equal(tu_count(root, "X", "gpu_memcpy", "Memcpy HtoD (Host -> Device)"), SPLIT_LAUNCHES);
	assert_int_equal(tu_count(root, "X", "gpu_memcpy", "Memcpy DtoH (Device -> Host)"), LATE_LAUNCHES);
	assert_int_equal(tu_count(root, "X", "cuda_runtime", "hipLaunchKernel"),
	                 SPLIT_LAUNCHES + 1 + LATE_LAUNCHES);
	assert_int_equal(tu_count(root, "s", "ac2g", NULL), SPLIT_CALLS);
	assert_int_equal(tu_count(root, "f", "ac2g", NULL), SPLIT_CALLS);
	/* Each call's work exactly once, carrying the call's correlation and
	 * flow id and the op's External id; each call starts the same flow. */
	int seen[SPLIT_CALLS] = {0}, starts[SPLIT_CALLS] = {0}, ends[SPLIT_CALLS] = {0};
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i];
		const char *c = tu_get_str(e, "cat"), *ph = tu_get_str(e, "ph");
		if (!c || !ph)
			continue;
		size_t j;
		if (!strcmp(c, "ac2g")) {
			int64_t id = num(tu_get(e, "id"));
			for (j = 0; j < ncalls && (int64_t)calls[j] != id; j++)
				;
			assert_true(j < ncalls);
			(*ph == 's' ? starts : ends)[j]++;
			continue;
		}
		if (strcmp(ph, "X") || (strcmp(c, "kernel") && strcmp(c, "gpu_memcpy")))
			continue;
		int64_t corr = num(arg(e, "correlation"));
		for (j = 0; j < ncalls && (int64_t)calls[j] != corr; j++)
			;
		assert_true(j < ncalls);
		seen[j]++;
		assert_int_equal(num(arg(e, "External id")), (int64_t)op);
	}
	for (size_t j = 0; j < ncalls; j++) {
		assert_int_equal(seen[j], 1);
		assert_int_equal(starts[j], 1);
		assert_int_equal(ends[j], 1);
	}
	/* The early call's kernel is on GPU 1, named. */
	yajl_val ek = find_named(root, "kernel", "reduce<256>");
	assert_int_equal(num(tu_get(ek, "pid")), 1);
	assert_int_equal(num(arg(ek, "correlation")), (int64_t)early);
	yajl_val st = tu_get(root, "strobe");
	assert_int_equal(num(tu_get(st, "gpu_dropped_records")), 0);
	assert_int_equal(num(tu_get(st, "gpu_unmatched_correlations")), 0);
	assert_int_equal(num(tu_get(st, "gpu_rejected_buffers")), 0);
	assert_int_equal(num(tu_get(st, "gpu_bad_buffers")), 0);
	yajl_tree_free(root);

	/* The next trace holds only its own work. */
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	root = stop_and_load();
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 0);
	assert_int_equal(tu_count(root, "X", "gpu_memcpy", NULL), 0);
	assert_int_equal(tu_count(root, "X", "cuda_runtime", NULL), 0);
	yajl_tree_free(root);
}

/* The event of cat with args.correlation == corr. */
static yajl_val find_corr(yajl_val root, const char *cat, uint64_t corr)
{
	yajl_val evs = tu_events(root);
	for (size_t i = 0; evs && i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i], c = arg(e, "correlation");
		const char *ec = tu_get_str(e, "cat");
		if (ec && !strcmp(ec, cat) && c && YAJL_IS_NUMBER(c) && YAJL_GET_INTEGER(c) == (int64_t)corr)
			return e;
	}
	return NULL;
}

static void *launch_elsewhere(void *p)
{
	F.hip_call("hipLaunchKernel", NULL, 0, launch_body, p);
	return NULL;
}

/* strobe_correlation_push ids go onto the SDK's external-correlation stack
 * of the pushing thread during a trace: the id is the External id of the
 * HIP calls made under it and of their kernels and copies, with no strobe op
 * around them. The user pair is not forwarded (one external slot per
 * record); a thread that pushed nothing gets no id, although the SDK hands
 * it the pushing thread's; a push outside a trace reaches no stack, and
 * every push taken is popped, also after stop. */
static void test_external_correlation(void **state)
{
	(void)state;
	uint64_t me = (uint64_t)syscall(SYS_gettid);
	strobe_correlation_push(5); /* not tracing */
	assert_int_equal(F.external_depth(me), 0);
	strobe_correlation_pop();
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_correlation_push(77);
	assert_int_equal(F.external_depth(me), 1);
	strobe_user_correlation_push(99);
	assert_int_equal(F.external_depth(me), 1);
	struct launch l = {0, 0x1000, kernel_ids[0][0], 0, 0};
	uint64_t c = F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	struct copy_arg htod = {ROCP_MEMORY_COPY_HOST_TO_DEVICE, -1, 0};
	uint64_t cc = F.hip_call("hipMemcpyAsync", NULL, 0, copy_body, &htod);
	struct launch lw = {1, 0x3000, kernel_ids[1][0], 0, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, launch_elsewhere, &lw), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	strobe_user_correlation_pop();
	strobe_correlation_push(88);
	assert_int_equal(F.external_depth(me), 2);
	usleep(2000);
	yajl_val root = stop_and_load();
	strobe_correlation_pop();
	assert_int_equal(F.external_depth(me), 1);
	strobe_correlation_pop();
	assert_int_equal(F.external_depth(me), 0);

	yajl_val k = find_corr(root, "kernel", c);
	assert_non_null(k);
	assert_int_equal(num(arg(k, "External id")), 77);
	yajl_val call = find_corr(root, "cuda_runtime", c);
	assert_non_null(call);
	assert_int_equal(num(arg(call, "External id")), 77);
	yajl_val m = find_corr(root, "gpu_memcpy", cc);
	assert_non_null(m);
	assert_int_equal(num(arg(m, "External id")), 77);
	assert_int_equal(num(arg(find_corr(root, "cuda_runtime", cc), "External id")), 77);
	yajl_val kw = find_named(root, "kernel", "reduce<256>");
	assert_non_null(kw);
	assert_null(arg(kw, "External id"));
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 2);
	yajl_tree_free(root);

	/* A push the SDK refuses is not taken: its pop reaches no stack. */
	(F.fail)("rocprofiler_push_external_correlation_id", ROCP_STATUS_ERROR);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_correlation_push(66);
	F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	strobe_correlation_pop();
	(F.fail)("rocprofiler_push_external_correlation_id", 0);
	usleep(2000);
	root = stop_and_load();
	assert_int_equal(F.external_depth(me), 0);
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 1);
	assert_null(arg(find_named(root, "kernel", "scale"), "External id"));
	yajl_tree_free(root);
}

/* test_flight_recorder's newest launch, and a dump. */
struct newest {
	uint64_t corr;
	char path[1300];
};

static yajl_val record_newest(void *p)
{
	struct newest *n = p;
	struct launch l = {1, 0x3000, kernel_ids[1][0], 0, 0};
	n->corr = F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	usleep(2000);
	assert_int_equal(strobe_flight_dump("test", n->path, sizeof(n->path)), 0);
	return tu_load_trace(n->path);
}

/* The kernel of the newest launch. */
static yajl_val newest_kernel(yajl_val root, const struct newest *n)
{
	for (size_t i = 0; i < tu_events(root)->u.array.len; i++) {
		yajl_val e = tu_events(root)->u.array.values[i];
		const char *cat = tu_get_str(e, "cat");
		if (cat && !strcmp(cat, "kernel") && num(arg(e, "correlation")) == (int64_t)n->corr)
			return e;
	}
	return NULL;
}

static bool has_newest(yajl_val root, void *p)
{
	return newest_kernel(root, p) != NULL;
}

/* The flight recorder keeps AMD work too: strobe's copies of the SDK's
 * records rotate within the GPU share of the budget (32 MiB: 4 MiB, in
 * buffers of 1 MiB, while GPU snapshots take as much again), a dump holds
 * the newest kernels of its window linked to the op around their launch
 * (older ones still kept are outside the window and counted so), and the
 * recording goes on. */
static void test_flight_recorder(void **state)
{
	(void)state;
	char out[1200];
	snprintf(out, sizeof(out), "%s/flight.json", tu_dir);
	const uint64_t window = 200ull * 1000000ull;
	struct strobe_flight_opts o =
	    STROBE_OPTS(strobe_flight_opts, .output = out, .memory_bytes = 32ull << 20, .window_ns = window);
	assert_int_equal(strobe_flight_start(&o), 0);
	enum { OLD = 50000 }; /* 100 000 records, 12 MB: more than the GPU share holds */
	struct launch l = {0, 0x1000, kernel_ids[0][0], 0, 0};
	for (int i = 0; i < OLD; i++)
		F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	usleep(300000); /* the old work leaves the 200 ms window */
	struct newest n = {0};
	uint64_t op = 0;
	yajl_val root = tu_flight_newest(window, "still running", &op, record_newest, has_newest, &n);
	assert_null(tu_get(root, "rocm_capture"));
	yajl_val k = newest_kernel(root, &n);
	if (!k) {
		yajl_val st = tu_get(root, "strobe");
		char acc[2048] = "";
		for (size_t i = 0; st && YAJL_IS_OBJECT(st) && i < st->u.object.len; i++)
			if (YAJL_IS_NUMBER(st->u.object.values[i]))
				snprintf(acc + strlen(acc), sizeof(acc) - strlen(acc), " %s=%lld",
				         st->u.object.keys[i],
				         (long long)YAJL_GET_INTEGER(st->u.object.values[i]));
		fail_msg("no reduce<256> kernel in the dump (%zu kernels); accounting:%s",
		         tu_count(root, "X", "kernel", NULL), acc);
	}
	assert_non_null(strstr(tu_get_str(k, "name"), "reduce<256>"));
	assert_int_equal(num(arg(k, "External id")), (int64_t)op);
	assert_int_equal(count_named(root, "kernel", "scale(float*, int)"), 0);
	yajl_val st = tu_get(root, "strobe");
	assert_true(num(tu_get(st, "gpu_aged_buffers")) > 0);
	assert_true(num(tu_get(st, "gpu_out_of_window")) > 1000); /* still kept, older than the window */
	yajl_tree_free(root);
	strobe_op_pop();
	/* Still recording: a later dump has a later launch's kernel. */
	struct newest later = {0};
	root = tu_flight_newest(window, NULL, NULL, record_newest, has_newest, &later);
	assert_non_null(newest_kernel(root, &later));
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
}

static bool has_crash_kernel(yajl_val root)
{
	return find_named(root, "kernel", "reduce<256>") != NULL;
}

/* A fatal signal in flight mode: the dump holds the AMD work decoded by
 * the last GPU snapshot, linked to the op still open around its launch. */
static void test_crash_dump(void **state)
{
	(void)state;
	char out[1200];
	snprintf(out, sizeof(out), "%s/crash.json", tu_dir);
	struct strobe_flight_opts o =
	    STROBE_OPTS(strobe_flight_opts, .output = out, .memory_bytes = 32ull << 20,
	                .gpu_snapshot_ns = 20ull * 1000000ull);
	assert_int_equal(strobe_flight_start(&o), 0);
	uint64_t op = strobe_op_push("crash_op");
	struct launch n = {1, 0x3000, kernel_ids[1][0], 0, 0};
	uint64_t corr = F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &n);
	yajl_val root = tu_crash_dump_until(has_crash_kernel);
	yajl_val k = find_named(root, "kernel", "reduce<256>");
	assert_int_equal(num(arg(k, "correlation")), (int64_t)corr);
	assert_int_equal(num(arg(k, "External id")), (int64_t)op);
	assert_string_equal(tu_get_str(tu_get(tu_get(root, "flight_recorder"), "gpu_snapshot"), "state"),
	                    "written");
	yajl_tree_free(root);
	strobe_op_pop();
	assert_int_equal(strobe_flight_stop(), 0);
}

/* A second trace sees only its own window's records. */
static void test_second_trace(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	struct launch l = {1, 0x3000, kernel_ids[1][0], 0, 0};
	F.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	yajl_val root = stop_and_load();
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 1);
	assert_int_equal(tu_count(root, "X", "gpu_memcpy", NULL), 0);
	yajl_tree_free(root);
	/* What the SDK does at exit: finalize; the next trace is CPU-only. */
	F.shutdown();
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	root = stop_and_load();
	const char *why = tu_get_str(root, "rocm_capture");
	assert_non_null(why);
	tu_assert_contains(why, "finalized");
	yajl_tree_free(root);
}

static int run_rocprof_tests(void)
{
	setenv("STROBE_ROCPROFILER_PATH", ROCPROF_FAKE_PATH, 1);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernels_copies_and_calls),
	    cmocka_unit_test(test_paused_work_dropped),
	    cmocka_unit_test(test_roctx_start_stop),
	    cmocka_unit_test(test_threads_during_delivery),
	    cmocka_unit_test(test_split_and_late_buffers),
	    cmocka_unit_test(test_external_correlation),
	    cmocka_unit_test_teardown(test_flight_recorder, tu_flight_off),
	    cmocka_unit_test_teardown(test_crash_dump, tu_flight_off),
	    cmocka_unit_test(test_second_trace),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

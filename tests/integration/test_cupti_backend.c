/* The CUPTI backend as a user sees it, driven through the fake libcupti
 * (tests/fakes): records of every kind become libkineto-shaped events in the
 * saved JSON (reference/kineto-behaviour.md §7.6-§7.8, §8), GPU work links to
 * strobe's ops, ranges and correlation ids, and every way of losing records
 * is counted in the trace's "strobe" object. Ways CUPTI can be unusable
 * (enable failing, another subscriber, a fork, a CPU-only mask) leave a
 * CPU trace with the reason in "gpu_capture". The library itself missing is
 * test_cupti_unavailable.c (it is resolved once per process).
 */
#include "test_cupti_common.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#define KERNEL_MANGLED   "_Z9vectorAddPKfS0_Pfi"
#define KERNEL_DEMANGLED "vectorAdd(float const*, float const*, float*, int)"
#define GAP_NS           2000 /* between stamps, well above clock rounding */
#define LAUNCH           CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define RUNTIME          CUPTI_ACTIVITY_KIND_RUNTIME
#define DRIVER           CUPTI_ACTIVITY_KIND_DRIVER
#define GPU_SORT_OFFSET  5000000
#define STREAM_SYNC_ROW  1000000
#define KERNELS_PER_BUF  ((4u << 20) / sizeof(CUpti_ActivityKernel10))

static char path_buf[1200];
static uint64_t last_stamp;

/* ---- helpers ------------------------------------------------------------ */

/* Every test starts with a fresh fake; no trace is prepared between tests. */
static int setup(void **state)
{
	(void)state;
	fake_cupti_reset();
	last_stamp = 0;
	return 0;
}

static uint64_t stamp(void)
{
	last_stamp = ct_stamp_after(last_stamp, GAP_NS);
	return last_stamp;
}

static void begin(uint64_t mask, const char *config)
{
	int rc = strobe_prepare(mask, config);
	if (rc)
		fail_msg("strobe_prepare: %s: %s", strobe_status_string(rc), strobe_last_error());
	assert_int_equal(strobe_start(), 0);
	/* Another trace may have left the fake on its own clock. */
	last_stamp = 0;
	last_stamp = stamp();
}

static strobe_trace *end_trace(void)
{
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_non_null(t);
	return t;
}

static yajl_val save_load(const strobe_trace *t, const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s.json", tu_dir, name);
	int rc = strobe_trace_save(t, path_buf);
	if (rc)
		fail_msg("saving %s: %s: %s", path_buf, strobe_status_string(rc), strobe_last_error());
	return tu_load_trace(path_buf);
}

/* Stops, saves, parses. */
static yajl_val finish(const char *name)
{
	strobe_trace *t = end_trace();
	yajl_val root = save_load(t, name);
	strobe_trace_destroy(t);
	return root;
}

/* For traces too big to parse whole under sanitizers: saves the trace and
 * parses only its "strobe" accounting object (it has no nested objects). */
static yajl_val save_stats(const strobe_trace *t, const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s.json", tu_dir, name);
	assert_int_equal(strobe_trace_save(t, path_buf), 0);
	char *text = tu_read_file(path_buf, NULL);
	assert_non_null(text);
	char *obj = strstr(text, "\"strobe\": {");
	assert_non_null(obj);
	obj = strchr(obj, '{');
	char *close = strchr(obj, '}');
	assert_non_null(close);
	close[1] = 0;
	char wrapped[4096];
	snprintf(wrapped, sizeof(wrapped), "{\"strobe\": %s}", obj);
	free(text);
	yajl_val root = tu_parse_json(wrapped);
	assert_non_null(root);
	return root;
}

struct tally {
	const char *name; /* kernels counted by name; NULL = all */
	size_t kernels, starts, ends;
};

static int tally_cb(const struct strobe_activity *a, void *arg)
{
	struct tally *n = arg;
	if (a->type == STROBE_ACTIVITY_CONCURRENT_KERNEL && (!n->name || !strcmp(a->name, n->name)))
		n->kernels++;
	if (a->flow_id && a->flow_kind == STROBE_FLOW_ASYNC_CPU_GPU) {
		if (a->flags & STROBE_ACTIVITY_FLOW_START)
			n->starts++;
		else
			n->ends++;
	}
	return 0;
}

static struct tally tally(const strobe_trace *t, const char *kernel_name)
{
	struct tally n = {.name = kernel_name};
	assert_int_equal(strobe_trace_foreach(t, tally_cb, &n), 0);
	return n;
}

/* A runtime call on this thread (the fake takes the next correlation id),
 * stamped now. */
static uint32_t api_call(CUpti_ActivityKind kind, CUpti_CallbackId cbid)
{
	uint64_t s = stamp();
	return fake_cupti_api(kind, cbid, s, stamp());
}

static CUpti_ActivityKernel10 kernel_now(uint32_t corr, uint32_t device, uint32_t stream, const char *name)
{
	uint64_t s = stamp();
	return ct_kernel(corr, device, stream, s, stamp(), name);
}

/* cudaLaunchKernel and the kernel it ran; returns the correlation id. */
static uint32_t launch(uint32_t device, uint32_t stream, const char *name)
{
	uint32_t corr = api_call(RUNTIME, LAUNCH);
	assert_true(corr > 0);
	CT_QUEUE(kernel_now(corr, device, stream, name));
	return corr;
}

/* A synchronisation record as CUPTI writes it for the call `corr`. */
static CUpti_ActivitySynchronization2 sync_rec(CUpti_ActivitySynchronizationType type, uint32_t corr,
                                               uint32_t ctx, uint32_t stream, uint64_t start, uint64_t end)
{
	CUpti_ActivitySynchronization2 r = {.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, .type = type};
	r.correlationId = corr, r.contextId = ctx, r.streamId = stream;
	r.start = start, r.end = end;
	return r;
}

static bool num_is(yajl_val obj, const char *key, double v)
{
	yajl_val x = tu_get(obj, key);
	return x && YAJL_IS_NUMBER(x) && YAJL_GET_DOUBLE(x) == v;
}

static bool str_is(yajl_val obj, const char *key, const char *v)
{
	const char *s = tu_get_str(obj, key);
	return s && v && !strcmp(s, v);
}

static yajl_val args_of(yajl_val ev)
{
	yajl_val a = tu_get(ev, "args");
	if (!a)
		fail_msg("event %s has no args", tu_get_str(ev, "name"));
	return a;
}

static double arg_num(yajl_val ev, const char *key)
{
	return tu_get_num(args_of(ev), key);
}

static bool has_arg(yajl_val ev, const char *key)
{
	yajl_val a = tu_get(ev, "args");
	return a && tu_get(a, key);
}

/* Events with ph (NULL = any), cat (NULL = any), and, when set, numeric
 * member `key` equal to v. */
static size_t count_where(yajl_val root, const char *ph, const char *cat, const char *key, double v,
                          yajl_val *first)
{
	yajl_val evs = tu_events(root);
	size_t n = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		if ((ph && !str_is(e, "ph", ph)) || (cat && !str_is(e, "cat", cat)) ||
		    (key && !num_is(e, key, v)))
			continue;
		if (!n && first)
			*first = e;
		n++;
	}
	return n;
}

/* The flow event (ph "s" or "f") with this id, and how many there are. */
static size_t flows(yajl_val root, const char *ph, uint64_t id, yajl_val *first)
{
	return count_where(root, ph, "ac2g", "id", (double)id, first);
}

/* The event of cat with args.correlation == corr. */
static yajl_val by_corr(yajl_val root, const char *cat, uint32_t corr)
{
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		yajl_val a = tu_get(e, "args");
		if (str_is(e, "cat", cat) && a && num_is(a, "correlation", corr))
			return e;
	}
	fail_msg("no %s event with correlation %u", cat, corr);
	return NULL;
}

/* The "M" event `what` for (pid, tid). */
static yajl_val meta(yajl_val root, const char *what, double pid, double tid)
{
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		if (str_is(e, "ph", "M") && str_is(e, "name", what) && num_is(e, "pid", pid) &&
		    num_is(e, "tid", tid))
			return e;
	}
	return NULL;
}

static void assert_row(yajl_val root, double pid, double tid, const char *title, double sort)
{
	yajl_val name = meta(root, "thread_name", pid, tid);
	yajl_val idx = meta(root, "thread_sort_index", pid, tid);
	if (!name || !idx)
		fail_msg("no thread_name/thread_sort_index for pid %g tid %g", pid, tid);
	assert_string_equal(tu_get_str(tu_get(name, "args"), "name"), title);
	assert_true(num_is(tu_get(idx, "args"), "sort_index", sort));
}

static void assert_gpu_process(yajl_val root, int n)
{
	char label[32];
	snprintf(label, sizeof(label), "GPU %d", n);
	yajl_val l = meta(root, "process_labels", n, 0), s = meta(root, "process_sort_index", n, 0);
	if (!l || !s)
		fail_msg("no process_labels/process_sort_index for GPU %d", n);
	assert_string_equal(tu_get_str(tu_get(l, "args"), "labels"), label);
	assert_true(num_is(tu_get(s, "args"), "sort_index", GPU_SORT_OFFSET + n));
}

static void assert_same_flow(yajl_val root, uint32_t corr)
{
	size_t s = flows(root, "s", corr, NULL), f = flows(root, "f", corr, NULL);
	if (s != 1 || f < 1)
		fail_msg("ac2g flow %u: %zu starts, %zu ends", corr, s, f);
}

static void assert_triple(yajl_val ev, const char *key, long long x, long long y, long long z)
{
	yajl_val a = tu_get(args_of(ev), key);
	assert_non_null(a);
	assert_true(YAJL_IS_ARRAY(a));
	assert_int_equal(YAJL_GET_ARRAY(a)->len, 3);
	assert_int_equal(YAJL_GET_INTEGER(YAJL_GET_ARRAY(a)->values[0]), x);
	assert_int_equal(YAJL_GET_INTEGER(YAJL_GET_ARRAY(a)->values[1]), y);
	assert_int_equal(YAJL_GET_INTEGER(YAJL_GET_ARRAY(a)->values[2]), z);
}

static int64_t dur_ns(yajl_val ev)
{
	return tu_get_ns(ev, "dur");
}

/* ---- record kinds ---------------------------------------------------------- */

/* A DEVICE record (an H100-like device) gives deviceProperties, blocks and
 * warps per SM, and CUDA's occupancy for each kernel's launch shape. */
#define SHAPES 300

static void test_device_and_occupancy(void **state)
{
	(void)state;
	begin(0, NULL);
	CUpti_ActivityDevice5 d = {
	    .kind = CUPTI_ACTIVITY_KIND_DEVICE,
	    .globalMemorySize = 80ull << 30,
	    .numThreadsPerWarp = 32,
	    .numMultiprocessors = 132,
	    .maxWarpsPerMultiprocessor = 64,
	    .maxBlocksPerMultiprocessor = 32,
	    .maxSharedMemoryPerMultiprocessor = 233472,
	    .maxRegistersPerMultiprocessor = 65536,
	    .maxRegistersPerBlock = 65536,
	    .maxSharedMemoryPerBlock = 232448,
	    .maxThreadsPerBlock = 1024,
	    .computeCapabilityMajor = 9,
	    .computeCapabilityMinor = 0,
	    .id = 0,
	    .name = "Test GPU \"H\"",
	};
	CT_QUEUE(d);
	uint32_t corr = api_call(RUNTIME, LAUNCH);
	CUpti_ActivityKernel10 k = kernel_now(corr, 0, 7, "occupancy_kernel");
	k.registersPerThread = 32;
	k.gridX = 264, k.gridY = 1, k.gridZ = 1;
	k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	CT_QUEUE(k);
	/* More launch shapes than the first table holds: each keeps its own
	 * occupancy when the table grows. */
	static char names[SHAPES][16];
	for (int i = 0; i < SHAPES; i++) {
		snprintf(names[i], sizeof(names[i]), "shape_%d", i);
		uint32_t c = api_call(RUNTIME, LAUNCH);
		CUpti_ActivityKernel10 x = kernel_now(c, 0, 7, names[i]);
		x.registersPerThread = 32;
		x.gridX = 264;
		x.blockX = 256;
		x.dynamicSharedMemory = i * 512;
		CT_QUEUE(x);
	}
	yajl_val root = finish("occupancy");

	yajl_val props = tu_get(root, "deviceProperties");
	assert_true(props && YAJL_IS_ARRAY(props) && props->u.array.len == 1);
	yajl_val p0 = props->u.array.values[0];
	assert_string_equal(tu_get_str(p0, "name"), "Test GPU ?H?"); /* quotes replaced, file stays valid */
	assert_true(tu_get_num(p0, "numSms") == 132);
	assert_true(tu_get_num(p0, "computeMajor") == 9);
	assert_true(tu_get_num(p0, "maxThreadsPerMultiprocessor") == 2048);

	yajl_val ev = tu_find(root, "X", "kernel", "occupancy_kernel");
	assert_non_null(ev);
	assert_true(arg_num(ev, "blocks per SM") == 2.0); /* 264 blocks / 132 SMs */
	assert_true(arg_num(ev, "warps per SM") == 16.0); /* 2 x 256 / 32 */
	/* 32 registers x 256 threads: 8 blocks fit (64 warps / 8 per block);
	 * the grid only gives 2 per SM: 2 x 8 warps of 64 = 25 %. */
	assert_true(arg_num(ev, "est. achieved occupancy %") == 25);
	yajl_val occ = tu_get(tu_get(ev, "args"), "occupancy");
	assert_true(occ && YAJL_IS_OBJECT(occ));
	assert_true(tu_get_num(occ, "activeBlocksPerMultiprocessor") == 8);
	assert_string_equal(tu_get_str(occ, "limitingFactors"), "WARPS|REGS");
	/* Shared memory per block rises with i: resident blocks never do. */
	double last = 1e9;
	for (int i = 0; i < SHAPES; i++) {
		yajl_val e = tu_find(root, "X", "kernel", names[i]);
		assert_non_null(e);
		yajl_val o = tu_get(tu_get(e, "args"), "occupancy");
		if (!o || !YAJL_IS_OBJECT(o))
			fail_msg("%s has no occupancy", names[i]);
		double active = tu_get_num(o, "activeBlocksPerMultiprocessor");
		assert_true(active >= 1 && active <= last);
		last = active;
	}
	assert_true(last < 8); /* 152 KiB per block at the end: shared memory limits */
	yajl_tree_free(root);
}

/* What strobe_trace_foreach shows of a GPU activity's args. */
struct seen_args {
	const struct strobe_activity *kernel, *copy, *launch;
};

static int seen_cb(const struct strobe_activity *a, void *arg)
{
	struct seen_args *s = arg;
	if (a->type == STROBE_ACTIVITY_CONCURRENT_KERNEL)
		s->kernel = a;
	else if (a->type == STROBE_ACTIVITY_GPU_MEMCPY)
		s->copy = a;
	else if (a->type == STROBE_ACTIVITY_CUDA_RUNTIME && !s->launch)
		s->launch = a;
	return 0;
}

static const struct strobe_arg *find_arg(const struct strobe_activity *a, const char *key)
{
	for (size_t i = 0; i < a->arg_count; i++)
		if (!strcmp(a->args[i].key, key))
			return &a->args[i];
	fail_msg("%s has no arg \"%s\" (%zu args)", a->name, key, a->arg_count);
	return NULL;
}

/* Runtime calls, in trace order: their cbid and correlation args. */
struct call_args {
	uint64_t cbid[8], corr[8];
	size_t n;
};

static int call_args_cb(const struct strobe_activity *a, void *arg)
{
	struct call_args *c = arg;
	if (a->type == STROBE_ACTIVITY_CUDA_RUNTIME && c->n < 8) {
		c->cbid[c->n] = find_arg(a, "cbid")->value.u64;
		c->corr[c->n++] = find_arg(a, "correlation")->value.u64;
	}
	return 0;
}

/* Calls share one record per cbid below the table's 1024; those past it
 * (none in CUDA 13) get one each: every call shows its own cbid and
 * correlation either way. */
static void test_calls_past_the_cbid_table(void **state)
{
	(void)state;
	begin(STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_RUNTIME), NULL);
	const uint32_t cbids[4] = {LAUNCH, 1500, 1500, 40000};
	uint32_t corr[4];
	for (int i = 0; i < 4; i++)
		corr[i] = api_call(RUNTIME, cbids[i]);
	strobe_trace *t = end_trace();
	struct call_args c = {0};
	assert_int_equal(strobe_trace_foreach(t, call_args_cb, &c), 0);
	assert_int_equal(c.n, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(c.cbid[i], cbids[i]);
		assert_int_equal(c.corr[i], corr[i]);
	}
	strobe_trace_destroy(t);
}

/* GPU args are rendered from the kept CUPTI records when written; the
 * in-memory walk still shows them as ordinary args, equal to the file's,
 * that stay put until the trace is destroyed. */
static void test_foreach_shows_gpu_args(void **state)
{
	(void)state;
	begin(0, NULL);
	uint32_t corr = api_call(RUNTIME, LAUNCH);
	CUpti_ActivityKernel10 k = kernel_now(corr, 0, 7, KERNEL_MANGLED);
	k.gridX = 4, k.gridY = 2, k.gridZ = 1;
	k.blockX = 128, k.blockY = 2, k.blockZ = 1;
	k.registersPerThread = 32;
	CT_QUEUE(k);
	uint32_t c2 = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
	uint64_t s = stamp();
	CUpti_ActivityMemcpy6 m = {.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	                           .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH,
	                           .bytes = 65536,
	                           .start = s,
	                           .end = stamp(),
	                           .streamId = 7,
	                           .correlationId = c2};
	CT_QUEUE(m);
	strobe_trace *t = end_trace();
	/* Written first: publishing for the walk must not change the file. */
	yajl_val root = save_load(t, "foreach_args");
	char *a = tu_read_file(path_buf, NULL);
	assert_non_null(a);

	struct seen_args seen = {0};
	assert_int_equal(strobe_trace_foreach(t, seen_cb, &seen), 0);
	assert_non_null(seen.kernel);
	assert_non_null(seen.copy);
	assert_non_null(seen.launch);
	const struct strobe_arg *grid = find_arg(seen.kernel, "grid");
	assert_int_equal(grid->kind, STROBE_ARG_JSON);
	assert_string_equal(grid->value.str, "[4, 2, 1]");
	assert_string_equal(find_arg(seen.kernel, "block")->value.str, "[128, 2, 1]");
	assert_int_equal(find_arg(seen.kernel, "registers per thread")->value.i64, 32);
	assert_int_equal(find_arg(seen.kernel, "correlation")->value.u64, corr);
	assert_int_equal(find_arg(seen.copy, "bytes")->value.u64, 65536);
	assert_int_equal(find_arg(seen.launch, "cbid")->value.u64, LAUNCH);

	/* Same args as the file, in the same order. */
	yajl_val ev = tu_find(root, "X", "kernel", KERNEL_DEMANGLED);
	assert_non_null(ev);
	yajl_val args = yajl_tree_get(ev, (const char *[]){"args", NULL}, yajl_t_object);
	assert_non_null(args);
	size_t n = YAJL_GET_OBJECT(args)->len;
	assert_int_equal(n, seen.kernel->arg_count); /* not linked to an op: no "External id" */
	for (size_t i = 0; i < n; i++)
		assert_string_equal(YAJL_GET_OBJECT(args)->keys[i], seen.kernel->args[i].key);
	yajl_tree_free(root);

	/* A second walk and a second save see the same memory and bytes. */
	const struct strobe_arg *first = seen.kernel->args;
	struct seen_args again = {0};
	assert_int_equal(strobe_trace_foreach(t, seen_cb, &again), 0);
	assert_ptr_equal(again.kernel, seen.kernel);
	assert_ptr_equal(again.kernel->args, first);
	root = save_load(t, "foreach_args");
	yajl_tree_free(root);
	char *b = tu_read_file(path_buf, NULL);
	assert_non_null(b);
	if (strcmp(a, b)) {
		size_t i = 0;
		while (a[i] == b[i])
			i++;
		fail_msg("the second save differs at byte %zu: \"%.80s\" against \"%.80s\"", i,
		         a + (i > 40 ? i - 40 : 0), b + (i > 40 ? i - 40 : 0));
	}
	free(a);
	free(b);
	strobe_trace_destroy(t);
}

static void test_kernel_and_runtime_records(void **state)
{
	(void)state;
	begin(0, NULL);
	uint32_t corr = api_call(RUNTIME, LAUNCH);
	CUpti_ActivityKernel10 k = kernel_now(corr, 0, 7, KERNEL_MANGLED);
	k.queued = 123456;
	k.registersPerThread = 40;
	k.staticSharedMemory = 1024;
	k.dynamicSharedMemory = 2048;
	k.gridX = 4, k.gridY = 2, k.gridZ = 1;
	k.blockX = 256, k.blockY = 1, k.blockZ = 1;
	k.graphId = 0;
	k.channelID = 3;
	k.channelType = CUPTI_CHANNEL_TYPE_COMPUTE;
	uint64_t kdur = k.end - k.start;
	CT_QUEUE(k);
	yajl_val root = finish("kernel");

	yajl_val ev = tu_find(root, "X", "kernel", KERNEL_DEMANGLED);
	if (!ev)
		fail_msg("no kernel named \"%s\"", KERNEL_DEMANGLED);
	assert_true(num_is(ev, "pid", 0));
	assert_true(num_is(ev, "tid", 7));
	assert_true(llabs(dur_ns(ev) - (int64_t)kdur) <= 2);
	assert_true(arg_num(ev, "queued") == 123456);
	assert_true(arg_num(ev, "device") == 0);
	assert_true(arg_num(ev, "context") == 100);
	assert_true(arg_num(ev, "stream") == 7);
	assert_true(arg_num(ev, "correlation") == corr);
	assert_true(arg_num(ev, "registers per thread") == 40);
	assert_true(arg_num(ev, "shared memory") == 3072);
	assert_triple(ev, "grid", 4, 2, 1);
	assert_triple(ev, "block", 256, 1, 1);
	assert_true(arg_num(ev, "graph id") == 0);
	assert_true(has_arg(ev, "graph node id"));
	assert_true(arg_num(ev, "channel") == 3);
	assert_false(has_arg(ev, "priority"));    /* CUDA 13.0 records have none */
	assert_false(has_arg(ev, "External id")); /* not linked to any op */

	yajl_val rt = tu_find(root, "X", "cuda_runtime", "cudaLaunchKernel");
	if (!rt)
		fail_msg("no cuda_runtime event named cudaLaunchKernel (version suffix kept?)");
	assert_true(num_is(rt, "pid", getpid()));
	assert_true(num_is(rt, "tid", ct_tid()));
	assert_true(arg_num(rt, "cbid") == LAUNCH);
	assert_true(arg_num(rt, "correlation") == corr);
	assert_false(has_arg(rt, "External id"));

	/* The arrow: "s" on the calling thread, "f" on the stream, same id. */
	yajl_val s = NULL, f = NULL;
	assert_int_equal(flows(root, "s", corr, &s), 1);
	assert_int_equal(flows(root, "f", corr, &f), 1);
	assert_true(num_is(s, "pid", getpid()) && num_is(s, "tid", ct_tid()));
	assert_true(num_is(f, "pid", 0) && num_is(f, "tid", 7));
	assert_string_equal(tu_get_str(f, "bp"), "e");

	assert_row(root, 0, 7, "stream 7 ", 7);
	assert_gpu_process(root, 0);
	assert_true(ct_stat(root, "gpu_launches") == 1);
	assert_true(ct_stat(root, "gpu_launches_without_kernel") == 0);
	assert_null(tu_get(root, "gpu_capture"));
	yajl_tree_free(root);
}

static void test_memcpy_memset_records(void **state)
{
	(void)state;
	begin(0, NULL);
	uint32_t c1 = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
	uint64_t s = stamp();
	CUpti_ActivityMemcpy6 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY,
	    .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
	    .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
	    .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .bytes = 1 << 20,
	    .start = s,
	    .end = stamp(),
	    .deviceId = 1,
	    .contextId = 11,
	    .streamId = 3,
	    .correlationId = c1,
	    .graphId = 5,
	    .graphNodeId = 6,
	};
	CT_QUEUE(m);
	uint32_t c2 = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
	s = stamp();
	CUpti_ActivityMemcpyPtoP4 p = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMCPY2,
	    .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
	    .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	    .bytes = 4096,
	    .start = s,
	    .end = stamp(),
	    .deviceId = 1,
	    .contextId = 11,
	    .streamId = 3,
	    .srcDeviceId = 1,
	    .srcContextId = 11,
	    .dstDeviceId = 2,
	    .dstContextId = 12,
	    .correlationId = c2,
	};
	CT_QUEUE(p);
	uint32_t c3 = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020);
	s = stamp();
	CUpti_ActivityMemset4 z = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMSET,
	    .bytes = 512,
	    .start = s,
	    .end = stamp(),
	    .deviceId = 1,
	    .contextId = 11,
	    .streamId = 4,
	    .correlationId = c3,
	    .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
	};
	CT_QUEUE(z);
	yajl_val root = finish("memcpy");

	yajl_val ev = tu_find(root, "X", "gpu_memcpy", "Memcpy HtoD (Pinned -> Device)");
	assert_non_null(ev);
	assert_true(num_is(ev, "pid", 1) && num_is(ev, "tid", 3));
	assert_true(arg_num(ev, "device") == 1);
	assert_true(arg_num(ev, "context") == 11);
	assert_true(arg_num(ev, "stream") == 3);
	assert_true(arg_num(ev, "correlation") == c1);
	assert_true(arg_num(ev, "bytes") == 1 << 20);
	double bw = arg_num(ev, "memory bandwidth (GB/s)");
	double expect = (double)(1 << 20) / (double)dur_ns(ev);
	assert_true(bw > expect * 0.99 && bw < expect * 1.01);
	assert_true(arg_num(ev, "graph id") == 5);
	assert_true(arg_num(ev, "graph node id") == 6);
	assert_same_flow(root, c1);

	ev = tu_find(root, "X", "gpu_memcpy", "Memcpy PtoP (Device -> Device)");
	assert_non_null(ev);
	assert_true(arg_num(ev, "fromDevice") == 1);
	assert_true(arg_num(ev, "inDevice") == 1);
	assert_true(arg_num(ev, "toDevice") == 2);
	assert_true(arg_num(ev, "fromContext") == 11);
	assert_true(arg_num(ev, "toContext") == 12);
	assert_true(arg_num(ev, "bytes") == 4096);
	assert_true(arg_num(ev, "correlation") == c2);
	assert_same_flow(root, c2);

	ev = tu_find(root, "X", "gpu_memset", "Memset (Device)");
	assert_non_null(ev);
	assert_true(num_is(ev, "pid", 1) && num_is(ev, "tid", 4));
	assert_true(arg_num(ev, "bytes") == 512);
	assert_true(arg_num(ev, "correlation") == c3);
	assert_same_flow(root, c3);
	assert_row(root, 1, 3, "stream 3 ", 3);
	assert_row(root, 1, 4, "stream 4 ", 4);
	assert_gpu_process(root, 1);
	yajl_tree_free(root);
}

static void test_driver_api_filtering(void **state)
{
	(void)state;
	begin(0, NULL);
	uint32_t kept = api_call(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
	CT_QUEUE(kernel_now(kept, 0, 2, "triton_kernel"));
	uint32_t dropped = api_call(DRIVER, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2);
	yajl_val root = finish("driver");

	yajl_val ev = tu_find(root, "X", "cuda_driver", "cuLaunchKernel");
	assert_non_null(ev);
	assert_true(num_is(ev, "pid", getpid()) && num_is(ev, "tid", ct_tid()));
	assert_true(arg_num(ev, "correlation") == kept);
	assert_same_flow(root, kept);
	assert_int_equal(tu_count(root, "X", "cuda_driver", NULL), 1);
	assert_int_equal(count_where(root, NULL, NULL, "id", dropped, NULL), 0);
	yajl_tree_free(root);
}

static void test_sync_and_event_records(void **state)
{
	(void)state;
	begin(0, NULL);
	/* Context 21 lives on device 2 (known from its kernel). */
	uint32_t kc = launch(2, 9, "k");
	(void)kc;
	uint32_t rec_corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020);
	CUpti_ActivityCudaEvent2 ev = {
	    .kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT,
	    .correlationId = rec_corr,
	    .contextId = 102,
	    .streamId = 9,
	    .eventId = 42,
	    .deviceId = 2,
	    .deviceTimestamp = stamp(),
	};
	CT_QUEUE(ev);
	uint32_t sync_corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020);
	uint64_t s = stamp();
	CUpti_ActivitySynchronization2 es =
	    sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, sync_corr, 102,
	             CUPTI_SYNCHRONIZATION_INVALID_VALUE, s, stamp());
	es.cudaEventId = 42;
	CT_QUEUE(es);
	uint32_t wait_corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020);
	CUpti_ActivitySynchronization2 we = es;
	we.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
	we.correlationId = wait_corr;
	we.streamId = 9;
	we.start = stamp();
	we.end = stamp();
	CT_QUEUE(we);
	uint32_t ss_corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020);
	CUpti_ActivitySynchronization2 ss = es;
	ss.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	ss.correlationId = ss_corr;
	ss.streamId = 9;
	ss.cudaEventId = 0;
	ss.start = stamp();
	ss.end = stamp();
	CT_QUEUE(ss);
	yajl_val root = finish("sync");

	yajl_val e = tu_find(root, "X", "cuda_sync", "Event Sync");
	assert_non_null(e);
	assert_true(num_is(e, "pid", 2));
	assert_string_equal(tu_get_str(args_of(e), "cuda_sync_kind"), "Event Sync");
	assert_true(arg_num(e, "wait_on_stream") == 9);
	assert_true(arg_num(e, "wait_on_cuda_event_record_corr_id") == rec_corr);
	assert_true(arg_num(e, "wait_on_cuda_event_id") == 42);
	assert_true(arg_num(e, "correlation") == sync_corr);
	assert_true(arg_num(e, "device") == 2);
	assert_true(arg_num(e, "context") == 102);

	e = tu_find(root, "X", "cuda_sync", "Stream Wait Event");
	assert_non_null(e); /* stream 9 had a kernel */
	assert_true(num_is(e, "pid", 2) && num_is(e, "tid", 9));
	assert_true(arg_num(e, "wait_on_cuda_event_record_corr_id") == rec_corr);

	e = tu_find(root, "X", "cuda_sync", "Stream Sync");
	assert_non_null(e);
	assert_true(num_is(e, "pid", 2) && num_is(e, "tid", 9 + STREAM_SYNC_ROW));
	assert_row(root, 2, 9 + STREAM_SYNC_ROW, "stream 9 (sync)", 9);

	e = tu_find(root, "X", "cuda_event", "cudaEvent");
	assert_non_null(e);
	assert_true(num_is(e, "pid", 2) && num_is(e, "tid", 9));
	if (dur_ns(e) != 1)
		fail_msg("cudaEvent dur is %lld ns, libkineto writes 1 ns", (long long)dur_ns(e));
	assert_true(arg_num(e, "event_id") == 42);
	assert_true(arg_num(e, "correlation") == rec_corr);
	yajl_tree_free(root);
}

static void test_wait_event_on_idle_stream_hidden(void **state)
{
	(void)state;
	begin(0, NULL);
	uint32_t corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020);
	uint64_t s = stamp();
	CUpti_ActivitySynchronization2 we = {
	    .kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
	    .type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT,
	    .start = s,
	    .end = stamp(),
	    .correlationId = corr,
	    .contextId = 100,
	    .streamId = 33,
	    .cudaEventId = 1,
	};
	CT_QUEUE(we);
	yajl_val root = finish("wait_idle");
	assert_int_equal(tu_count(root, "X", "cuda_sync", NULL), 0);
	yajl_tree_free(root);
}

static void test_overhead_record(void **state)
{
	(void)state;
	begin(0, NULL);
	uint64_t s = stamp();
	CUpti_ActivityOverhead3 o = {
	    .kind = CUPTI_ACTIVITY_KIND_OVERHEAD,
	    .overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH,
	    .objectKind = CUPTI_ACTIVITY_OBJECT_THREAD,
	    .start = s,
	    .end = stamp(),
	};
	CT_QUEUE(o);
	yajl_val root = finish("overhead");
	yajl_val e = tu_find(root, "X", "overhead", "Buffer Flush");
	assert_non_null(e);
	assert_true(num_is(e, "pid", -1) && num_is(e, "tid", 0));
	yajl_val pn = meta(root, "process_name", -1, 0), ps = meta(root, "process_sort_index", -1, 0);
	assert_non_null(pn);
	assert_non_null(ps);
	assert_string_equal(tu_get_str(tu_get(pn, "args"), "name"), "CUPTI Overhead");
	assert_true(num_is(tu_get(ps, "args"), "sort_index", 1048576));
	yajl_tree_free(root);
}

static void test_external_correlation(void **state)
{
	(void)state;
	begin(0, NULL);
	strobe_correlation_push(1234);
	assert_int_equal(fake_cupti_stack_depth(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0), 1);
	uint32_t corr = launch(0, 7, "k");
	strobe_correlation_pop();
	assert_int_equal(fake_cupti_stack_depth(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0), 0);
	uint32_t plain = launch(0, 7, "k");
	/* A record of a kind strobe does not use. */
	CUpti_ActivityExternalCorrelation bad = {
	    .kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
	    .externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_OPENACC,
	    .externalId = 99,
	    .correlationId = plain,
	};
	CT_QUEUE(bad);
	yajl_val root = finish("extcorr");
	assert_true(arg_num(by_corr(root, "kernel", corr), "External id") == 1234);
	assert_true(arg_num(by_corr(root, "cuda_runtime", corr), "External id") == 1234);
	assert_false(has_arg(by_corr(root, "kernel", plain), "External id"));
	assert_true(ct_stat(root, "gpu_invalid_external_correlations") == 1);
	yajl_tree_free(root);
}

/* A correlation id pushed inside a trace and popped after it stopped must not
 * stay on CUPTI's stack and tag the next trace's GPU work. */
/* Correlation ids far apart (another CUPTI client, a wrapped counter) are
 * looked up by hashing instead of by index: kernels still find their
 * launches and external ids. */
static void test_sparse_correlation_ids(void **state)
{
	(void)state;
	begin(0, NULL);
	static const uint32_t ids[] = {7, 1000003, 3000000019u, 4294967295u};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		uint64_t s = stamp();
		CT_QUEUE(ct_api(RUNTIME, LAUNCH, ids[i], s, stamp()));
		CT_QUEUE(kernel_now(ids[i], 0, 7, "sparse"));
	}
	CUpti_ActivityExternalCorrelation ext = {
	    .kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
	    .externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
	    .externalId = 77,
	    .correlationId = 3000000019u,
	};
	CT_QUEUE(ext);
	yajl_val root = finish("sparse_ids");
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		yajl_val k = by_corr(root, "kernel", ids[i]);
		assert_non_null(k);
		assert_non_null(by_corr(root, "cuda_runtime", ids[i]));
		if (ids[i] == 3000000019u)
			assert_true(arg_num(k, "External id") == 77);
		else
			assert_false(has_arg(k, "External id"));
	}
	assert_int_equal(tu_count(root, "s", "ac2g", NULL), 4);
	assert_int_equal(tu_count(root, "f", "ac2g", NULL), 4);
	assert_true(ct_stat(root, "gpu_unmatched_correlations") == 0);
	yajl_tree_free(root);
}

static void test_correlation_pop_after_stop_does_not_leak(void **state)
{
	(void)state;
	begin(0, NULL);
	strobe_correlation_push(555);
	launch(0, 7, "k");
	yajl_val root = finish("leak1");
	yajl_tree_free(root);
	strobe_correlation_pop(); /* the op ends after the trace */

	begin(0, NULL);
	uint32_t corr = launch(0, 7, "k");
	root = finish("leak2");
	yajl_val k = by_corr(root, "kernel", corr);
	double stale = has_arg(k, "External id") ? arg_num(k, "External id") : 0;
	yajl_tree_free(root);
	if (stale)
		fail_msg("kernel of the second trace linked to External id %g, pushed in the first trace and "
		         "popped after it stopped (CUPTI CUSTOM0 stack depth now %d)",
		         stale, fake_cupti_stack_depth(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0));
}

/* ---- rows, devices, flows ------------------------------------------------- */

static void test_devices_and_streams(void **state)
{
	(void)state;
	begin(0, NULL);
	static const uint32_t where[][2] = {{0, 7}, {0, 13}, {1, 7}, {3, 20}, {0, 7}};
	uint32_t corr[5];
	for (int i = 0; i < 5; i++)
		corr[i] = launch(where[i][0], where[i][1], "k");
	yajl_val root = finish("devices");
	for (int i = 0; i < 5; i++) {
		yajl_val k = by_corr(root, "kernel", corr[i]);
		assert_true(num_is(k, "pid", where[i][0]) && num_is(k, "tid", where[i][1]));
		assert_same_flow(root, corr[i]);
	}
	assert_row(root, 0, 7, "stream 7 ", 7);
	assert_row(root, 0, 13, "stream 13 ", 13);
	assert_row(root, 1, 7, "stream 7 ", 7);
	assert_row(root, 3, 20, "stream 20 ", 20);
	assert_gpu_process(root, 0);
	assert_gpu_process(root, 1);
	assert_gpu_process(root, 3);
	assert_int_equal(count_where(root, "M", NULL, "tid", 7, NULL) >= 4, 1);
	assert_true(ct_stat(root, "gpu_launches") == 5);
	yajl_tree_free(root);
}

static void test_graph_launch_flows(void **state)
{
	(void)state;
	begin(0, NULL);
	uint32_t corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000);
	CUpti_ActivityKernel10 a = kernel_now(corr, 0, 5, "node_a");
	CUpti_ActivityKernel10 b = kernel_now(corr, 0, 5, "node_b");
	a.graphId = b.graphId = 9;
	a.graphNodeId = 1;
	b.graphNodeId = 2;
	CT_QUEUE(a);
	CT_QUEUE(b);
	yajl_val root = finish("graph");
	yajl_val ka = tu_find(root, "X", "kernel", "node_a"), kb = tu_find(root, "X", "kernel", "node_b");
	assert_non_null(ka);
	assert_non_null(kb);
	assert_true(arg_num(ka, "graph id") == 9 && arg_num(kb, "graph id") == 9);
	assert_true(arg_num(ka, "graph node id") == 1 && arg_num(kb, "graph node id") == 2);
	assert_non_null(tu_find(root, "X", "cuda_runtime", "cudaGraphLaunch"));
	assert_int_equal(flows(root, "s", corr, NULL), 1);
	assert_int_equal(flows(root, "f", corr, NULL), 2);
	/* One call, many kernels: not a plain launch for the self-check. */
	assert_true(ct_stat(root, "gpu_launches_without_kernel") == 0);
	yajl_tree_free(root);
}

/* ---- linking to ops and ranges -------------------------------------------- */

static void test_kernel_links_to_enclosing_op(void **state)
{
	(void)state;
	begin(0, NULL);
	uint64_t fwd = strobe_op_push("forward");
	stamp();
	uint32_t c_outer = launch(0, 7, "k_outer");
	uint64_t inner = strobe_op_push("linear");
	stamp();
	uint32_t c_inner = launch(0, 7, "k_inner");
	stamp();
	strobe_op_pop();
	stamp();
	uint32_t c_after = launch(0, 7, "k_after");
	stamp();
	strobe_op_pop();
	stamp();
	uint32_t c_none = launch(0, 7, "k_none");
	assert_true(fwd && inner && fwd != inner);
	yajl_val root = finish("ops");

	yajl_val op = tu_find(root, "X", "cpu_op", "forward");
	assert_non_null(op);
	assert_true(arg_num(op, "External id") == fwd);
	assert_true(arg_num(by_corr(root, "kernel", c_outer), "External id") == fwd);
	assert_true(arg_num(by_corr(root, "cuda_runtime", c_outer), "External id") == fwd);
	assert_true(arg_num(by_corr(root, "kernel", c_inner), "External id") == inner);
	assert_true(arg_num(by_corr(root, "cuda_runtime", c_inner), "External id") == inner);
	assert_true(arg_num(by_corr(root, "kernel", c_after), "External id") == fwd);
	assert_false(has_arg(by_corr(root, "kernel", c_none), "External id"));
	assert_false(has_arg(by_corr(root, "cuda_runtime", c_none), "External id"));
	yajl_tree_free(root);
}

static void test_range_gives_gpu_user_annotation(void **state)
{
	(void)state;
	begin(0, NULL);
	strobe_range_push("phase");
	stamp();
	uint32_t c1 = launch(1, 4, "k1");
	uint32_t c2 = launch(1, 4, "k2");
	stamp();
	strobe_range_pop();
	yajl_val root = finish("range");
	yajl_val g = tu_find(root, "X", "gpu_user_annotation", "phase");
	if (!g)
		fail_msg("no gpu_user_annotation named \"phase\"");
	assert_true(num_is(g, "pid", 1) && num_is(g, "tid", 4));
	yajl_val k1 = by_corr(root, "kernel", c1), k2 = by_corr(root, "kernel", c2);
	int64_t k1_ts = tu_get_ns(k1, "ts"), k2_end = tu_get_ns(k2, "ts") + dur_ns(k2);
	assert_int_equal(tu_get_ns(g, "ts"), k1_ts - 1);
	assert_int_equal(tu_get_ns(g, "ts") + dur_ns(g), k2_end + 1);
	assert_int_equal(tu_count(root, "X", "gpu_user_annotation", NULL), 1);
	yajl_tree_free(root);
}

/* A range around a stream synchronisation and a kernel: its GPU span covers
 * the kernel only, on the kernel's row, and the "stream N (sync)" row gets
 * none; a range around waits alone gets no span. The waits stay on their
 * rows. */
static void test_gpu_span_leaves_out_syncs(void **state)
{
	(void)state;
	begin(0, NULL);
	strobe_range_push("step");
	stamp();
	const CUpti_ActivitySynchronizationType stream_sync =
	    CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
	uint32_t ss_corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020);
	uint64_t ss_start = stamp();
	uint32_t kc = launch(1, 4, "work");
	CT_QUEUE(sync_rec(stream_sync, ss_corr, 101, 4, ss_start, stamp()));
	uint32_t ws_corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020);
	uint64_t ws_start = stamp();
	CT_QUEUE(sync_rec(CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, ws_corr, 101, 4, ws_start,
	                  stamp()));
	stamp();
	strobe_range_pop();
	strobe_range_push("waits only");
	uint32_t cs_corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020);
	uint64_t cs_start = stamp();
	CT_QUEUE(sync_rec(stream_sync, cs_corr, 101, 4, cs_start, stamp()));
	stamp();
	strobe_range_pop();
	yajl_val root = finish("span_syncs");

	assert_int_equal(tu_count(root, "X", "cuda_sync", "Stream Sync"), 2);
	assert_int_equal(tu_count(root, "X", "cuda_sync", "Stream Wait Event"), 1);
	yajl_val g = NULL;
	assert_int_equal(count_where(root, "X", "gpu_user_annotation", NULL, 0, &g), 1);
	assert_string_equal(tu_get_str(g, "name"), "step");
	assert_true(num_is(g, "pid", 1) && num_is(g, "tid", 4));
	yajl_val k = by_corr(root, "kernel", kc);
	assert_int_equal(tu_get_ns(g, "ts"), tu_get_ns(k, "ts") - 1);
	assert_int_equal(dur_ns(g), dur_ns(k) + 2);
	assert_int_equal(count_where(root, "X", "gpu_user_annotation", "tid", 4 + STREAM_SYNC_ROW, NULL), 0);
	yajl_tree_free(root);
}

/* ---- ordering and buffers ---------------------------------------------------- */

static void test_out_of_order_and_split_buffers(void **state)
{
	(void)state;
	begin(0, NULL);
	/* A kernel delivered in an earlier buffer than the call that launched it. */
	uint64_t a0 = stamp();
	uint64_t a1 = stamp();
	CT_QUEUE(kernel_now(900001, 0, 7, "early"));
	assert_int_equal(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
	CT_QUEUE(ct_api(RUNTIME, LAUNCH, 900001, a0, a1));

	/* More kernels than one 4 MiB buffer holds, then their calls. */
	size_t n = KERNELS_PER_BUF + KERNELS_PER_BUF / 2;
	uint64_t base = stamp();
	for (size_t i = 0; i < n; i++)
		CT_QUEUE(
		    ct_kernel((uint32_t)(1000000 + i), 0, 8, base + 10 * i + 5, base + 10 * i + 9, "bulk"));
	for (size_t i = 0; i < n; i++)
		CT_QUEUE(ct_api(RUNTIME, LAUNCH, (uint32_t)(1000000 + i), base + 10 * i, base + 10 * i + 2));
	last_stamp = base + 10 * n;
	stamp();
	size_t before = fake_cupti_buffers_completed();
	strobe_trace *t = end_trace();
	assert_true(fake_cupti_buffers_completed() - before >= 2);
	struct tally n_bulk = tally(t, "bulk"), n_all = tally(t, NULL);
	yajl_val root = save_stats(t, "split");
	strobe_trace_destroy(t);
	assert_int_equal(n_bulk.kernels, n);
	assert_int_equal(n_all.kernels, n + 1);
	assert_int_equal(n_all.starts, n + 1);
	assert_int_equal(n_all.ends, n + 1);
	assert_true(ct_stat(root, "gpu_launches") == n + 1);
	assert_true(ct_stat(root, "gpu_launches_without_kernel") == 0);
	assert_true(ct_stat(root, "gpu_unmatched_correlations") == 0);
	assert_true(ct_stat(root, "gpu_records") == 2 * (n + 1));
	yajl_tree_free(root);
}

static void test_budget_exhaustion(void **state)
{
	(void)state;
	/* 1 MiB allows one 4 MiB buffer. */
	begin(0, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=1");
	size_t n = 20000;
	uint64_t base = stamp();
	for (size_t i = 0; i < n; i++)
		CT_QUEUE(ct_api(RUNTIME, LAUNCH, (uint32_t)(1 + i), base + 10 * i, base + 10 * i + 2));
	for (size_t i = 0; i < n; i++)
		CT_QUEUE(ct_kernel((uint32_t)(1 + i), 0, 7, base + 10 * i + 5, base + 10 * i + 9, "k"));
	last_stamp = base + 10 * n;
	stamp();
	strobe_trace *t = end_trace();
	double kernels = (double)tally(t, "k").kernels;
	yajl_val root = save_stats(t, "budget");
	strobe_trace_destroy(t);
	assert_true(kernels > 0 && kernels < n);
	assert_true(ct_stat(root, "gpu_rejected_buffers") > 0);
	assert_true(ct_stat(root, "gpu_dropped_records") > 0);
	assert_true(ct_stat(root, "gpu_records") + ct_stat(root, "gpu_dropped_records") == 2 * n);
	assert_true(ct_stat(root, "gpu_launches") == n);
	assert_true(ct_stat(root, "gpu_launches_without_kernel") == n - kernels);
	yajl_tree_free(root);
}

static void test_dropped_records_counted(void **state)
{
	(void)state;
	begin(0, NULL);
	fake_cupti_drop_next(3);
	for (int i = 0; i < 3; i++) {
		CUpti_ActivityKernel10 k = kernel_now(0, 0, 7, "lost");
		assert_int_equal(fake_cupti_queue(&k, sizeof(k)), 0);
	}
	launch(0, 7, "kept");
	yajl_val root = finish("dropped");
	assert_true(ct_stat(root, "gpu_dropped_records") == 3);
	assert_int_equal(tu_count(root, "X", "kernel", "lost"), 0);
	assert_int_equal(tu_count(root, "X", "kernel", "kept"), 1);
	yajl_tree_free(root);
}

/* ---- the window ------------------------------------------------------------ */

static void test_window_warmup_and_incomplete(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	/* Warm-up: produced between prepare and start. */
	uint64_t early = stamp();
	launch(0, 7, "warmup");
	assert_int_equal(strobe_start(), 0);
	stamp();
	/* Produced in the window but stamped before it. */
	CT_QUEUE(ct_kernel(0, 0, 7, early, early + 100, "before"));
	/* Still running at stop: no timestamps yet. */
	CUpti_ActivityKernel10 inc = ct_kernel(0, 0, 7, 0, 0, "incomplete");
	assert_int_equal(fake_cupti_queue_incomplete(&inc, sizeof(inc)), 1);
	launch(0, 7, "inside");
	yajl_val root = finish("window");
	assert_true(ct_stat(root, "gpu_warmup_records") == 2);
	assert_true(ct_stat(root, "gpu_out_of_window") == 1);
	assert_true(ct_stat(root, "gpu_incomplete_records") == 1);
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 1);
	assert_non_null(tu_find(root, "X", "kernel", "inside"));
	yajl_tree_free(root);
}

static void test_blocklisted_runtime_calls(void **state)
{
	(void)state;
	begin(0, NULL);
	uint32_t corr = api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020);
	api_call(RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020);
	launch(0, 7, "k");
	yajl_val root = finish("blocklist");
	assert_null(tu_find(root, "X", "cuda_runtime", "cudaGetLastError"));
	assert_null(tu_find(root, "X", "cuda_runtime", "cudaEventDestroy"));
	assert_int_equal(count_where(root, "X", "cuda_runtime", NULL, 0, NULL), 1);
	assert_int_equal(flows(root, "f", corr, NULL), 0);
	assert_true(ct_stat(root, "gpu_blocklisted") == 2);
	yajl_tree_free(root);
}

static void test_toggle_collection(void **state)
{
	(void)state;
	begin(0, NULL);
	launch(0, 7, "before_pause");
	/* Work already produced whose GPU time falls inside the pause. */
	uint64_t t = stamp();
	CT_QUEUE(ct_kernel(0, 0, 7, t + 3000000, t + 3001000, "in_pause"));
	assert_int_equal(strobe_toggle_collection(false), 0);
	strobe_range_push("cpu_while_paused");
	CUpti_ActivityKernel10 k = kernel_now(0, 0, 7, "produced_in_pause");
	assert_int_equal(fake_cupti_queue(&k, sizeof(k)), 0); /* kinds are off */
	ct_stamp_after(t, 6000000);
	strobe_range_pop();
	last_stamp = fake_cupti_now();
	assert_int_equal(strobe_toggle_collection(true), 0);
	launch(0, 7, "after_resume");
	yajl_val root = finish("toggle");
	assert_non_null(tu_find(root, "X", "kernel", "before_pause"));
	assert_non_null(tu_find(root, "X", "kernel", "after_resume"));
	assert_null(tu_find(root, "X", "kernel", "in_pause"));
	assert_non_null(tu_find(root, "X", "user_annotation", "cpu_while_paused"));
	assert_true(ct_stat(root, "gpu_paused_records") == 1);
	yajl_tree_free(root);
}

/* ---- CUPTI unusable ---------------------------------------------------------- */

/* A CPU-only trace with gpu_capture containing `needle`. */
static void assert_cpu_only(const char *name, const char *needle)
{
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
	strobe_range_push("cpu");
	strobe_range_pop();
	yajl_val root = finish(name);
	assert_non_null(tu_find(root, "X", "user_annotation", "cpu"));
	const char *why = tu_get_str(root, "gpu_capture");
	if (!why || !strstr(why, needle))
		fail_msg("gpu_capture is \"%s\", expected it to mention \"%s\"", why ? why : "(none)",
		         needle);
	assert_int_equal(tu_count(root, "X", "kernel", NULL), 0);
	yajl_tree_free(root);
}

static void test_enable_failure(void **state)
{
	(void)state;
	fake_cupti_fail("cuptiActivityEnable", CUPTI_ERROR_NOT_INITIALIZED, 1);
	begin(0, NULL);
	assert_cpu_only("enable_fail", "cuptiActivityEnable");
	/* Not sticky: the next trace has the GPU again. */
	begin(0, NULL);
	launch(0, 7, "k");
	yajl_val root = finish("enable_again");
	assert_null(tu_get(root, "gpu_capture"));
	assert_non_null(tu_find(root, "X", "kernel", "k"));
	yajl_tree_free(root);
}

static void test_subscriber_held(void **state)
{
	(void)state;
	fake_cupti_hold_subscriber("Nsight Systems");
	begin(0, NULL);
	assert_cpu_only("subscriber", "Nsight Systems");
	fake_cupti_hold_subscriber(NULL);
	begin(0, NULL);
	assert_true(fake_cupti_subscribed());
	launch(0, 7, "k");
	yajl_val root = finish("subscriber_again");
	assert_null(tu_get(root, "gpu_capture"));
	assert_non_null(tu_find(root, "X", "kernel", "k"));
	yajl_tree_free(root);
	assert_false(fake_cupti_subscribed()); /* released with the trace */
}

static void test_cpu_only_mask(void **state)
{
	(void)state;
	begin(STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP) |
	          STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_USER_ANNOTATION),
	      NULL);
	for (int k = 1; k < CUPTI_ACTIVITY_KIND_COUNT; k++)
		if (fake_cupti_kind_enabled((CUpti_ActivityKind)k))
			fail_msg("CUPTI kind %d enabled for a CPU-only trace", k);
	assert_false(fake_cupti_subscribed());
	strobe_range_push("cpu");
	strobe_range_pop();
	yajl_val root = finish("cpu_only");
	assert_null(tu_get(root, "gpu_capture"));
	assert_non_null(tu_find(root, "X", "user_annotation", "cpu"));
	assert_null(tu_get(tu_get(root, "strobe"), "gpu_records"));
	yajl_tree_free(root);
}

/* In a forked child: a trace with GPU capture off for the fork; exit code 0
 * when so. No cmocka assertions here (they would unwind into the child's copy
 * of the runner). */
static int forked_child(void)
{
	char path[1300];
	snprintf(path, sizeof(path), "%s/child.json", tu_dir);
	if (strobe_prepare(0, NULL) || strobe_start())
		return 1;
	strobe_range_push("child");
	strobe_range_pop();
	strobe_trace *t = NULL;
	if (strobe_stop(&t) || !t)
		return 2;
	int rc = strobe_trace_save(t, path);
	strobe_trace_destroy(t);
	if (rc)
		return 3;
	char *text = tu_read_file(path, NULL);
	if (!text)
		return 4;
	yajl_val root = tu_parse_json(text);
	free(text);
	if (!root)
		return 5;
	const char *why = tu_get_str(root, "gpu_capture");
	int ok = why && strstr(why, "fork") ? 0 : 6;
	yajl_tree_free(root);
	return ok;
}

static void test_fork_child_has_no_gpu(void **state)
{
	(void)state;
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(forked_child());
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		fail_msg("forked child: step %d failed (6: gpu_capture does not mention the fork)",
		         WEXITSTATUS(status));
	/* The parent keeps its GPU. */
	begin(0, NULL);
	launch(0, 7, "parent");
	yajl_val root = finish("fork_parent");
	assert_null(tu_get(root, "gpu_capture"));
	assert_non_null(tu_find(root, "X", "kernel", "parent"));
	yajl_tree_free(root);
}

/* Heap bytes in use; 0 under sanitizers, whose allocators do not report to
 * mallinfo2. */
static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

/* n launches of a few kernel shapes, traced; with check, each kernel's args
 * are checked to come out as its own record had them (shapes are shared,
 * the queued time and correlation are each kernel's). Returns the heap
 * bytes the trace held. */
static size_t few_shapes(uint32_t n, bool check)
{
	begin(STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	          STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_RUNTIME),
	      "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=128");
	uint32_t first = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t corr = api_call(RUNTIME, LAUNCH);
		if (!i)
			first = corr;
		assert_int_equal(corr, first + i);
		CUpti_ActivityKernel10 k = kernel_now(corr, 0, 1 + i % 3, KERNEL_MANGLED);
		k.gridX = (int32_t)(1 + i % 5);
		k.blockX = 128;
		k.queued = 1000 + i;
		CT_QUEUE(k);
	}
	strobe_trace *t = end_trace();
	if (check) {
		yajl_val root = save_load(t, "few_shapes");
		yajl_val evs = tu_events(root);
		size_t kernels = 0;
		for (size_t j = 0; j < YAJL_GET_ARRAY(evs)->len; j++) {
			yajl_val ev = YAJL_GET_ARRAY(evs)->values[j];
			const char *cat = tu_get_str(ev, "cat");
			if (!cat || strcmp(cat, "kernel"))
				continue;
			uint32_t i = (uint32_t)arg_num(ev, "correlation") - first;
			assert_true(i < n);
			assert_true(arg_num(ev, "stream") == 1 + i % 3);
			assert_true(arg_num(ev, "queued") == 1000 + i);
			assert_triple(ev, "grid", 1 + i % 5, 1, 1);
			assert_triple(ev, "block", 128, 1, 1);
			kernels++;
		}
		assert_int_equal(kernels, n);
		yajl_tree_free(root);
	}
	size_t before = heap_in_use();
	strobe_trace_destroy(t);
	return before - heap_in_use();
}

/* The trace of many launches holds at most 64 bytes a pair more for each
 * pair, where the CUPTI records alone take 248 (a 208-byte kernel, a
 * 40-byte call): the difference between a trace of N pairs and one of 2N
 * leaves out what any trace holds once (tables, the arena's last chunk). */
static void test_many_kernels_few_shapes(void **state)
{
	(void)state;
	enum { N = 50000 };
	if (!heap_in_use()) {
		/* The args alone, on fewer pairs: sanitizers are slow. */
		few_shapes(2000, true);
		print_message("heap use not reported by this allocator: memory not checked\n");
		return;
	}
	size_t one = few_shapes(N, true);
	size_t two = few_shapes(2 * N, false);
	double per_pair = ((double)two - (double)one) / N;
	print_message("the trace held %zu bytes for %d pairs, %zu for %d: %.1f bytes per pair more\n", one, N,
	              two, 2 * N, per_pair);
	assert_true(per_pair <= 64);
}

int main(void)
{
	ct_use_fake();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_kernel_and_runtime_records, setup),
	    cmocka_unit_test_setup(test_many_kernels_few_shapes, setup),
	    cmocka_unit_test_setup(test_device_and_occupancy, setup),
	    cmocka_unit_test_setup(test_foreach_shows_gpu_args, setup),
	    cmocka_unit_test_setup(test_calls_past_the_cbid_table, setup),
	    cmocka_unit_test_setup(test_memcpy_memset_records, setup),
	    cmocka_unit_test_setup(test_driver_api_filtering, setup),
	    cmocka_unit_test_setup(test_sync_and_event_records, setup),
	    cmocka_unit_test_setup(test_wait_event_on_idle_stream_hidden, setup),
	    cmocka_unit_test_setup(test_overhead_record, setup),
	    cmocka_unit_test_setup(test_external_correlation, setup),
	    cmocka_unit_test_setup(test_sparse_correlation_ids, setup),
	    cmocka_unit_test_setup(test_correlation_pop_after_stop_does_not_leak, setup),
	    cmocka_unit_test_setup(test_devices_and_streams, setup),
	    cmocka_unit_test_setup(test_graph_launch_flows, setup),
	    cmocka_unit_test_setup(test_kernel_links_to_enclosing_op, setup),
	    cmocka_unit_test_setup(test_range_gives_gpu_user_annotation, setup),
	    cmocka_unit_test_setup(test_gpu_span_leaves_out_syncs, setup),
	    cmocka_unit_test_setup(test_out_of_order_and_split_buffers, setup),
	    cmocka_unit_test_setup(test_budget_exhaustion, setup),
	    cmocka_unit_test_setup(test_dropped_records_counted, setup),
	    cmocka_unit_test_setup(test_window_warmup_and_incomplete, setup),
	    cmocka_unit_test_setup(test_blocklisted_runtime_calls, setup),
	    cmocka_unit_test_setup(test_toggle_collection, setup),
	    cmocka_unit_test_setup(test_enable_failure, setup),
	    cmocka_unit_test_setup(test_subscriber_held, setup),
	    cmocka_unit_test_setup(test_cpu_only_mask, setup),
	    cmocka_unit_test_setup(test_fork_child_has_no_gpu, setup),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

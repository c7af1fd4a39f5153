/* The GPU memory timeline through the fake libcupti: MEMORY2 allocations and
 * frees become "[memory]" instants with PyTorch's arg names, pool events
 * their own instants, and each device gets a "GPU memory allocated (bytes)"
 * counter that runs in time order from the level at trace start, even when
 * the records arrive out of order. */
#include "test_cupti_common.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#define MALLOC CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020
#define FREE   CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020
#define US     1000
#define TRACK  "GPU memory allocated (bytes)"

static char path_buf[1200];
static uint64_t base;

static int setup(void **state)
{
	(void)state;
	fake_cupti_reset();
	return 0;
}

static void begin(uint64_t mask)
{
	assert_int_equal(strobe_prepare(mask, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	base = ct_stamp_after(0, 0);
}

static CUpti_ActivityMemory4 mem(bool alloc, uint32_t corr, uint32_t device, uint32_t stream, uint64_t addr,
                                 uint64_t bytes, uint64_t at_us, CUpti_ActivityMemoryKind kind)
{
	CUpti_ActivityMemory4 m = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY2,
	    .memoryOperationType = alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
	                                 : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
	    .memoryKind = kind,
	    .correlationId = corr,
	    .address = addr,
	    .bytes = bytes,
	    .timestamp = base + at_us * US,
	    .processId = (uint32_t)getpid(),
	    .deviceId = device,
	    .contextId = 100 + device,
	    .streamId = stream,
	};
	return m;
}

static yajl_val finish(const char *name, uint64_t last_us)
{
	return ct_stop_and_load(base, (last_us + 5) * US, name, path_buf, sizeof(path_buf));
}

/* The ph events named name on pid, in file order (at most max); for
 * "[memory]", those of device memory only. */
static size_t events_of(yajl_val root, const char *ph, const char *name, double pid, yajl_val *out,
                        size_t max)
{
	yajl_val evs = tu_events(root);
	size_t n = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *p = tu_get_str(e, "ph"), *what = tu_get_str(e, "name");
		if (!p || !what || strcmp(p, ph) || strcmp(what, name) || tu_get_num(e, "pid") != pid)
			continue;
		if (!strcmp(name, "[memory]") && tu_get_num(tu_get(e, "args"), "Device Type") != 1)
			continue;
		if (n < max)
			out[n++] = e;
	}
	return n;
}

static void test_allocations_and_frees(void **state)
{
	(void)state;
	begin(STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY));
	assert_true(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
	assert_true(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY_POOL));
	uint64_t s = ct_stamp_after(0, 0);
	uint32_t c1 = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, MALLOC, s, s + 10);
	uint32_t c2 = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, MALLOC, s + 20, s + 30);
	uint32_t c3 = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, FREE, s + 40, s + 50);
	/* Out of order: the free first, then the second allocation. */
	CT_QUEUE(mem(false, c3, 0, 7, 0x1000, 4096, 30, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
	CT_QUEUE(mem(true, c2, 0, 7, 0x9000, 1 << 20, 20, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
	CT_QUEUE(mem(true, c1, 0, 7, 0x1000, 4096, 10, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
	/* Pinned host memory: an instant, not the device's level. */
	CT_QUEUE(mem(true, c1, 0, 7, 0x5000, 999, 15, CUPTI_ACTIVITY_MEMORY_KIND_PINNED));
	yajl_val root = finish("allocs", 30);

	yajl_val ev[8];
	assert_int_equal(events_of(root, "i", "[memory]", 0, ev, 8), 3);
	/* In time order: +4096, +1 MiB, -4096. */
	const double bytes[] = {4096, 1 << 20, -4096};
	const double total[] = {4096, 4096 + (1 << 20), 1 << 20};
	for (int i = 0; i < 3; i++) {
		yajl_val a = tu_get(ev[i], "args");
		assert_string_equal(tu_get_str(ev[i], "cat"), "cpu_instant_event");
		assert_int_equal(tu_get_num(ev[i], "tid"), 7);
		assert_int_equal(tu_get_num(a, "Device Type"), 1);
		assert_int_equal(tu_get_num(a, "Device Id"), 0);
		assert_true(tu_get_num(a, "Bytes") == bytes[i]);
		assert_true(tu_get_num(a, "Total Allocated") == total[i]);
		assert_true(tu_get_num(a, "Total Reserved") == total[i]);
		assert_string_equal(tu_get_str(a, "kind"), "Device");
		assert_string_equal(tu_get_str(a, "operation"), i == 2 ? "release" : "allocation");
		assert_int_equal(tu_get_num(a, "stream"), 7);
	}
	assert_int_equal(tu_get_num(tu_get(ev[0], "args"), "Addr"), 0x1000);
	assert_int_equal(tu_get_num(tu_get(ev[0], "args"), "correlation"), c1);
	assert_int_equal(tu_get_num(tu_get(ev[2], "args"), "correlation"), c3);
	assert_true(tu_get_ns(ev[0], "ts") < tu_get_ns(ev[1], "ts"));
	assert_true(tu_get_ns(ev[1], "ts") < tu_get_ns(ev[2], "ts"));

	/* The host allocation: CPU memory, no device totals. */
	size_t nhost = 0;
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val a = tu_get(YAJL_GET_ARRAY(evs)->values[i], "args");
		const char *k = a ? tu_get_str(a, "kind") : NULL;
		if (k && !strcmp(k, "Pinned")) {
			assert_int_equal(tu_get_num(a, "Device Type"), 0);
			assert_null(tu_get(a, "Total Allocated"));
			nhost++;
		}
	}
	assert_int_equal(nhost, 1);

	/* The counter: window start, three changes, window end. */
	yajl_val c[8];
	assert_int_equal(events_of(root, "C", TRACK, 0, c, 8), 5);
	const double level[] = {0, 4096, 4096 + (1 << 20), 1 << 20, 1 << 20};
	for (int i = 0; i < 5; i++) {
		assert_string_equal(tu_get_str(c[i], "cat"), "hardware_counters");
		assert_true(tu_get_num(tu_get(c[i], "args"), TRACK) == level[i]);
	}
	/* No counter source measured the start level: the trace says so. */
	yajl_val start = tu_get(tu_get(root, "gpu_memory_start"), "0");
	assert_non_null(start);
	assert_true(YAJL_IS_NULL(tu_get(start, "bytes")));
	tu_assert_contains(tu_get_str(root, "gpu_memory_start_unknown"), "start level unknown: ");
	yajl_tree_free(root);
}

static void test_pools_and_async(void **state)
{
	(void)state;
	begin(STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY));
	CUpti_ActivityMemoryPool3 p = {
	    .kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL,
	    .memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED,
	    .memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL,
	    .deviceId = 1,
	    .address = 0xa0000,
	    .size = 32 << 20,
	    .timestamp = base + 5 * US,
	};
	CT_QUEUE(p);
	CUpti_ActivityMemory4 m =
	    mem(true, 0, 1, 13, 0xa0000, 2 << 20, 10, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	m.isAsync = 1;
	m.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
	m.memoryPoolConfig.address = 0xa0000;
	m.memoryPoolConfig.pool.size = 64 << 20;
	m.memoryPoolConfig.utilizedSize = 2 << 20;
	CT_QUEUE(m);
	p.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
	p.size = 8 << 20;
	p.timestamp = base + 20 * US;
	CT_QUEUE(p);
	yajl_val root = finish("pools", 20);

	yajl_val ev[4];
	assert_int_equal(events_of(root, "i", "Memory pool created", 1, ev, 4), 1);
	assert_int_equal(tu_get_num(tu_get(ev[0], "args"), "size"), 32 << 20);
	assert_int_equal(events_of(root, "i", "[memory]", 1, ev, 4), 1);
	yajl_val a = tu_get(ev[0], "args");
	assert_int_equal(tu_get_num(a, "Total Allocated"), 2 << 20);
	/* Reserved: the pool's size as the allocation reported it. */
	assert_int_equal(tu_get_num(a, "Total Reserved"), 64 << 20);
	assert_true(YAJL_IS_TRUE(tu_get(a, "async")));
	assert_int_equal(tu_get_num(a, "pool"), 0xa0000);
	assert_int_equal(tu_get_num(a, "stream"), 13);
	assert_int_equal(events_of(root, "i", "Memory pool trimmed", 1, ev, 4), 1);
	assert_int_equal(tu_get_num(tu_get(ev[0], "args"), "Total Reserved"), 8 << 20);
	/* Device 1's process is named, and the stream row of its allocation. */
	yajl_val names[8];
	assert_int_equal(events_of(root, "M", "process_name", 1, names, 8), 1);
	size_t rows = events_of(root, "M", "thread_name", 1, names, 8);
	bool named = false;
	for (size_t i = 0; i < rows && i < 8; i++)
		named |= tu_get_num(names[i], "tid") == 13 &&
		         !strcmp(tu_get_str(tu_get(names[i], "args"), "name"), "stream 13 ");
	assert_true(named);
	yajl_tree_free(root);
}

/* Perfetto: the instants with their args on the device's stream row, and
 * the level as a counter track of the device. */
static void test_perfetto(void **state)
{
	(void)state;
	begin(STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY));
	CT_QUEUE(mem(true, 0, 1, 9, 0x1000, 12345, 10, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
	CT_QUEUE(mem(false, 0, 1, 9, 0x1000, 12345, 20, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
	ct_stamp_after(base, 30 * US);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	char pf[1300], json[1300], args[2700];
	TU_FORMAT(pf, "%s/memory.pftrace", tu_dir);
	TU_FORMAT(json, "%s/memory_pf.json", tu_dir);
	assert_int_equal(strobe_trace_save(t, pf), 0);
	strobe_trace_destroy(t);
	TU_FORMAT(args, "'%s' '%s'", pf, json);
	assert_int_equal(tu_strobe("convert", args, 0, NULL), 0);
	yajl_val root = tu_load_trace(json);
	yajl_val ev[4];
	assert_int_equal(events_of(root, "i", "[memory]", 1, ev, 4), 2);
	assert_int_equal(tu_get_num(ev[0], "tid"), 9);
	assert_int_equal(tu_get_num(tu_get(ev[0], "args"), "Bytes"), 12345);
	assert_int_equal(tu_get_num(tu_get(ev[1], "args"), "Bytes"), -12345);
	assert_int_equal(tu_get_num(tu_get(ev[1], "args"), "Total Allocated"), 0);
	/* Window start, the allocation, the free, window end. */
	yajl_val c[8];
	assert_int_equal(events_of(root, "C", TRACK, 1, c, 8), 4);
	assert_int_equal(tu_get_num(tu_get(c[1], "args"), TRACK), 12345);
	assert_int_equal(tu_get_num(tu_get(c[2], "args"), TRACK), 0);
	yajl_tree_free(root);
}

static void test_not_selected(void **state)
{
	(void)state;
	begin(STROBE_ACTIVITY_DEFAULT_MASK);
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
	/* Not enabled: the fake refuses to queue it, as the GPU produces none. */
	CUpti_ActivityMemory4 m = mem(true, 0, 0, 7, 0x1000, 4096, 10, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	assert_int_equal(fake_cupti_queue(&m, sizeof(m)), 0);
	yajl_val root = finish("off", 10);
	assert_int_equal(tu_count(root, "i", NULL, "[memory]"), 0);
	assert_int_equal(tu_count(root, "C", NULL, TRACK), 0);
	assert_null(tu_get(root, "gpu_memory_start"));
	yajl_tree_free(root);
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

/* An allocation (bytes > 0) or free inside op `name`, stamped now. */
static void in_op(const char *name, bool alloc, uint64_t addr, uint64_t bytes)
{
	assert_true(strobe_op_push(name) > 0);
	sleep_us(200);
	uint64_t s = fake_cupti_now();
	uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, alloc ? MALLOC : FREE, s, s + 10);
	CUpti_ActivityMemory4 m = mem(alloc, corr, 0, 7, addr, bytes, 0, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
	m.timestamp = s + 5;
	CT_QUEUE(m);
	sleep_us(200);
	strobe_op_pop();
}

/* strobe summary and strobe report show each device's peak, when it was
 * reached and the op running then. */
static void test_peak_in_summary_and_report(void **state)
{
	(void)state;
	begin(STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY));
	in_op("small_alloc", true, 0x1000, 1 << 20);
	in_op("big_alloc", true, 0x200000, 8 << 20);
	in_op("cleanup", false, 0x200000, 8 << 20);
	yajl_val root = finish("peak", 0);
	yajl_val evs = tu_events(root);
	int64_t peak_ts = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *n = tu_get_str(e, "name");
		if (n && !strcmp(n, "[memory]") &&
		    tu_get_num(tu_get(e, "args"), "Total Allocated") == 9 << 20)
			peak_ts = tu_get_ns(e, "ts");
	}
	assert_true(peak_ts > 0);
	yajl_tree_free(root);

	char args[2600], *out = NULL;
	TU_FORMAT(args, "--json '%s'", path_buf);
	assert_int_equal(tu_strobe("summary", args, 0, &out), 0);
	yajl_val sum = tu_parse_json(out);
	free(out);
	yajl_val rows = tu_get(sum, "gpu_memory");
	assert_true(rows && YAJL_IS_ARRAY(rows) && YAJL_GET_ARRAY(rows)->len == 1);
	yajl_val r = YAJL_GET_ARRAY(rows)->values[0];
	assert_true(tu_get_num(r, "peak_bytes") == 9 << 20);
	assert_true(tu_get_num(r, "start_bytes") == 0);
	assert_true(tu_get_num(r, "end_bytes") == 1 << 20);
	assert_true(tu_get_num(r, "peak_ts_ns") == (double)peak_ts);
	assert_string_equal(tu_get_str(r, "peak_op"), "big_alloc");
	tu_assert_contains(tu_get_str(r, "name"), "GPU 0");
	yajl_tree_free(sum);

	TU_FORMAT(args, "'%s'", path_buf);
	assert_int_equal(tu_strobe("summary", args, 0, &out), 0);
	char *line = tu_line_with(out, "9437184");
	tu_assert_contains(line, "GPU 0 (pid 0)");
	tu_assert_contains(line, "big_alloc");
	free(line);
	free(out);

	char html_path[1300];
	TU_FORMAT(html_path, "%s/peak.html", tu_dir);
	TU_FORMAT(args, "-o '%s' '%s' 2>&1", html_path, path_buf);
	assert_int_equal(tu_strobe("report", args, 0, NULL), 0);
	char *html = tu_read_file(html_path, NULL);
	tu_assert_contains(html, "<h2>GPU memory</h2>");
	tu_assert_contains(html, "<svg id=\"mem-0\"");
	tu_assert_contains(html, "<table id=\"gpu-memory\">");
	tu_assert_contains(strstr(html, "<table id=\"gpu-memory\">"), "big_alloc");
	/* The chart's data: the peak and the level per slice of the window. */
	tu_assert_contains(html, "\"memory\":[{\"peak\":9437184,");
	free(html);
}

/* A flight dump: allocations of its window, and a start level it cannot
 * know (those between the recorder's start and the window are gone). */
static void test_flight_dump_is_relative(void **state)
{
	(void)state;
	char out[1300], path[1300];
	TU_FORMAT(out, "%s/flight.json", tu_dir);
	struct strobe_flight_opts o = STROBE_OPTS(
	    strobe_flight_opts, .output = out,
	    .activity_mask = STROBE_ACTIVITY_DEFAULT_MASK | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY));
	assert_int_equal(strobe_flight_start(&o), 0);
	base = ct_stamp_after(0, 0);
	CT_QUEUE(mem(true, 0, 0, 7, 0x1000, 4096, 1, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE));
	ct_stamp_after(base, 10 * US);
	fake_cupti_complete_all();
	assert_int_equal(strobe_flight_dump("test", path, sizeof(path)), 0);
	assert_int_equal(strobe_flight_stop(), 0);
	yajl_val root = tu_load_trace(path);
	yajl_val ev[2];
	assert_int_equal(events_of(root, "i", "[memory]", 0, ev, 2), 1);
	assert_int_equal(tu_get_num(tu_get(ev[0], "args"), "Total Allocated"), 4096);
	tu_assert_contains(tu_get_str(root, "gpu_memory_start_unknown"),
	                   "start level unknown: a flight dump holds only its window's allocations");
	yajl_tree_free(root);
}

static void test_type_names(void **state)
{
	(void)state;
	enum strobe_activity_type t;
	assert_int_equal(strobe_activity_type_parse("gpu_memory", &t), 0);
	assert_int_equal(t, STROBE_ACTIVITY_GPU_MEMORY);
	assert_int_equal(strobe_activity_type_parse("gpu_counters", &t), 0);
	assert_int_equal(t, STROBE_ACTIVITY_GPU_COUNTERS);
	assert_false(STROBE_ACTIVITY_DEFAULT_MASK & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY));
	/* Selected by name in the config, the allocations are traced. */
	assert_int_equal(strobe_prepare(0, "ACTIVITY_TYPES=kernel,cuda_runtime,gpu_memory"), 0);
	assert_true(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
	assert_int_equal(strobe_prepare(0, "ACTIVITY_TYPES=kernel"), 0);
	assert_false(fake_cupti_kind_enabled(CUPTI_ACTIVITY_KIND_MEMORY2));
	assert_int_equal(strobe_stop(NULL), STROBE_E_STATE);
}

int main(void)
{
	ct_use_fake();
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_allocations_and_frees, setup),
	    cmocka_unit_test_setup(test_pools_and_async, setup),
	    cmocka_unit_test_setup(test_perfetto, setup),
	    cmocka_unit_test_setup(test_not_selected, setup),
	    cmocka_unit_test_setup(test_peak_in_summary_and_report, setup),
	    cmocka_unit_test_setup(test_flight_dump_is_relative, setup),
	    cmocka_unit_test_setup(test_type_names, setup),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

/* The Intel XPU decoder's args, built two ways: rendered from its records
 * when the trace is written (the trace keeps the buffers; what the decoder
 * does when it is the trace's only source of rendered args), or built at
 * decode time (when another backend's records already render theirs). Both
 * give the same args and the same trace bytes, and neither needs PTI's
 * strings after decoding. The decoder runs here on v2 records laid out as
 * PTI writes them, walked by a stand-in for ptiViewGetNextRecord. */
#include "testutil.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pti/pti_state.h"
#include "core/clock.h"
#include "process/process.h"
#include "strobe/strobe.h"

#define PID       4242
#define TID       77
#define LAUNCH_ID 7
#define DEV0      "0000:0a:00.0"
#define DEV1      "0000:0b:00.0"

static size_t record_size(pti_view_kind_t k)
{
	switch (k) {
	case PTI_VIEW_DEVICE_GPU_KERNEL:
		return sizeof(pti_record_kernel_t);
	case PTI_VIEW_DEVICE_GPU_MEM_COPY:
		return sizeof(pti_record_copy_t);
	case PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P:
		return sizeof(pti_record_copy_p2p_t);
	case PTI_VIEW_DEVICE_GPU_MEM_FILL:
		return sizeof(pti_record_fill_t);
	default:
		return sizeof(pti_record_api_t);
	}
}

static pti_result_t next_record(uint8_t *buf, size_t valid, pti_record_base_t **rec)
{
	size_t at = *rec ? (size_t)((uint8_t *)*rec - buf) + record_size((*rec)->kind) : 0;
	if (at >= valid)
		return PTI_STATUS_END_OF_BUFFER;
	*rec = (pti_record_base_t *)(buf + at);
	return PTI_SUCCESS;
}

static pti_result_t api_name(pti_api_group_t group, uint32_t id, const char **name)
{
	*name = group == PTI_API_GROUP_SYCL && id == LAUNCH_ID ? "urEnqueueKernelLaunch" : NULL;
	return *name ? PTI_SUCCESS : PTI_ERROR_BAD_API_ID;
}

static const struct strb_pti_lib lib = {.v2 = true, .next_record = next_record, .api_name = api_name};

/* PTI's strings: the decoder must not need them once it returns. */
static char kernel_file[32], copy_call[64], fill_call[64];

static size_t other_render(const void *ctx, const void *rec, const struct strobe_activity *a,
                           struct strb_arg_scratch *s)
{
	(void)ctx, (void)rec, (void)a, (void)s;
	return 0;
}

#define PUT(buf, at, rec) (memcpy((buf) + (at), &(rec), sizeof(rec)), (at) += sizeof(rec))

/* One buffer: a SYCL kernel launch and its kernel, a device-to-host copy
 * with no call recorded, a peer-to-peer copy and a fill. */
static struct strb_gpu_buffer *records(uint64_t t0)
{
	pti_record_api_t call = {.base.kind = PTI_VIEW_RUNTIME_API,
	                         .start_timestamp = t0,
	                         .end_timestamp = t0 + 1000,
	                         .api_group = PTI_API_GROUP_SYCL,
	                         .api_id = LAUNCH_ID,
	                         .correlation_id = 1,
	                         .thread_id = TID};
	pti_record_kernel_t k = {.base.kind = PTI_VIEW_DEVICE_GPU_KERNEL,
	                         .queue_handle = 0xa1,
	                         .context_handle = 0xdeadbeefcafe,
	                         .name = "vector_add",
	                         .source_file_name = kernel_file,
	                         .source_line_number = 42,
	                         .kernel_id = 9,
	                         .correlation_id = 1,
	                         .thread_id = TID,
	                         .pci_address = DEV1,
	                         .append_timestamp = t0 + 500,
	                         .start_timestamp = t0 + 2000,
	                         .end_timestamp = t0 + 3000,
	                         .sycl_node_id = 5,
	                         .sycl_queue_id = 3,
	                         .sycl_invocation_id = 6};
	pti_record_copy_t c = {.base.kind = PTI_VIEW_DEVICE_GPU_MEM_COPY,
	                       .memcpy_type = 8, /* D2M */
	                       .mem_src = 2,
	                       .mem_dst = 0,
	                       .queue_handle = 0xa2,
	                       .context_handle = 0xdeadbeefcafe,
	                       .name = copy_call,
	                       .pci_address = DEV0,
	                       .mem_op_id = 11,
	                       .correlation_id = 2,
	                       .thread_id = TID,
	                       .append_timestamp = t0 + 3500,
	                       .start_timestamp = t0 + 4000,
	                       .end_timestamp = t0 + 6000,
	                       .bytes = 4096,
	                       .sycl_queue_id = 1};
	pti_record_copy_p2p_t p = {.base.kind = PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P,
	                           .memcpy_type = 10, /* D2D */
	                           .mem_src = 2,
	                           .mem_dst = 2,
	                           .queue_handle = 0xa2,
	                           .context_handle = 0xdeadbeefcafe,
	                           .name = copy_call,
	                           .src_pci_address = DEV0,
	                           .dst_pci_address = DEV1,
	                           .mem_op_id = 12,
	                           .correlation_id = 3,
	                           .thread_id = TID,
	                           .start_timestamp = t0 + 7000,
	                           .end_timestamp = t0 + 8000,
	                           .bytes = 1 << 20,
	                           .sycl_queue_id = 1};
	pti_record_fill_t f = {.base.kind = PTI_VIEW_DEVICE_GPU_MEM_FILL,
	                       .mem_type = 2,
	                       .queue_handle = 0xa3,
	                       .context_handle = 0xdeadbeefcafe,
	                       .name = fill_call,
	                       .pci_address = DEV0,
	                       .mem_op_id = 13,
	                       .correlation_id = 4,
	                       .thread_id = TID,
	                       .start_timestamp = t0 + 9000,
	                       .end_timestamp = t0 + 9000, /* no time: no bandwidth */
	                       .bytes = 256,
	                       .value_for_set = 7,
	                       .sycl_queue_id = 2};
	struct strb_gpu_buffer *b = calloc(1, sizeof(*b));
	assert_non_null(b);
	b->size = sizeof(call) + sizeof(k) + sizeof(c) + sizeof(p) + sizeof(f);
	b->data = malloc(b->size);
	assert_non_null(b->data);
	size_t at = 0;
	PUT(b->data, at, call);
	PUT(b->data, at, k);
	PUT(b->data, at, c);
	PUT(b->data, at, p);
	PUT(b->data, at, f);
	b->valid = at;
	return b;
}

/* A trace decoded from the records; another backend's args source first
 * when `other`. */
static struct strobe_trace *decode(const struct strb_window *w, uint64_t t0, bool other)
{
	snprintf(kernel_file, sizeof(kernel_file), "vadd.cpp");
	snprintf(copy_call, sizeof(copy_call), "zeCommandListAppendMemoryCopy");
	snprintf(fill_call, sizeof(fill_call), "zeCommandListAppendMemoryFill");
	struct strb_gpu_buffer *b = records(t0);
	struct strobe_trace *t = strb_trace_new();
	struct strb_arg_source src = {other_render, NULL, NULL};
	assert_non_null(t);
	t->pid = PID;
	assert_int_equal(other ? strb_trace_set_arg_source(t, &src) : 0, 0);
	assert_int_equal(strb_pti_convert(t, w, b), 0);
	/* A buffer the trace renders from is its own now. */
	assert_true((b->data == NULL) == !other);
	free(b->data);
	free(b);
	/* PTI's strings may go: the trace has its own. */
	memset(kernel_file, 'x', sizeof(kernel_file) - 1);
	memset(copy_call, 'x', sizeof(copy_call) - 1);
	memset(fill_call, 'x', sizeof(fill_call) - 1);
	return t;
}

/* The trace's JSON, saved under one name (the name is in the file). */
static char *saved(struct strobe_trace *t)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s/trace.json", tu_dir);
	assert_int_equal(strobe_trace_save(t, path), 0);
	return tu_read_file(path, NULL);
}

static const struct strobe_arg *find_arg(const struct strobe_arg *a, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(a[i].key, key))
			return &a[i];
	return NULL;
}

static void test_rendered_and_built_args_agree(void **state)
{
	(void)state;
	struct strb_pti_state *s = &strb_pti;
	static const char *const mem[] = {"MEMORY", "HOST", "DEVICE", "SHARED"};
	s->lib = &lib;
	s->npci = 0;
	for (int i = 0; i < 4; i++)
		snprintf(s->memory_type[i], sizeof(s->memory_type[i]), "%s", mem[i]);
	for (int i = 0; i < 16; i++)
		snprintf(s->memcpy_type[i], sizeof(s->memcpy_type[i]), "%c2%c", "MHDS"[i / 4], "MHDS"[i % 4]);
	uint64_t t0 = strb_clock_ticks_to_ns(strb_clock_ticks());
	struct strb_clock_map map = {0};
	assert_int_equal(strb_clock_map_begin(&map), 0);
	struct strb_window w = {.start_ns = 0, .stop_ns = INT64_MAX, .map = &map, .mask = ~UINT64_C(0)};

	struct strobe_trace *lazy = decode(&w, t0, false), *built = decode(&w, t0, true);
	assert_int_equal(lazy->count, 5);
	assert_int_equal(built->count, lazy->count);
	size_t calls = 0, p2p = 0;
	for (size_t i = 0; i < lazy->count; i++) {
		struct strb_arg_scratch sl, sb;
		const struct strobe_arg *al, *ab;
		struct strb_act_ref rl, rb;
		strb_trace_get(lazy, i, &rl);
		strb_trace_get(built, i, &rb);
		size_t nl = strb_trace_args(lazy, &rl, &sl, &al), nb = strb_trace_args(built, &rb, &sb, &ab);
		/* Rendered in one, the activity's own in the other. */
		assert_true(lazy->recs && lazy->recs[i]);
		assert_int_equal(lazy->acts[i].arg_count, 0);
		assert_int_equal(built->acts[i].arg_count, nb);
		assert_int_equal(nl, nb);
		for (size_t j = 0; j < nl; j++) {
			assert_string_equal(al[j].key, ab[j].key);
			assert_int_equal(al[j].kind, ab[j].kind);
			if (al[j].kind == STROBE_ARG_STRING)
				assert_string_equal(al[j].value.str, ab[j].value.str);
			else
				assert_int_equal(al[j].value.i64, ab[j].value.i64);
		}
		if (lazy->acts[i].type == STROBE_ACTIVITY_XPU_RUNTIME) {
			calls++;
			assert_int_equal(nl, 1);
			assert_int_equal(al[0].value.u64, 1);
		}
		const struct strobe_arg *dst = find_arg(al, nl, "dst device");
		if (dst) {
			p2p++;
			assert_int_equal(dst->value.i64, 1);
			assert_int_equal(find_arg(al, nl, "device")->value.i64, 0);
		}
	}
	assert_int_equal(calls, 1);
	assert_int_equal(p2p, 1);
	char *a = saved(lazy), *b = saved(built);
	tu_assert_contains(a, "\"l0 queue\": \"0x00000000000000a1\"");
	tu_assert_contains(a, "\"context\": \"0x0000deadbeefcafe\"");
	tu_assert_contains(a, "\"source_file_name\": \"vadd.cpp\"");
	tu_assert_contains(a, "\"l0 call\": \"zeCommandListAppendMemoryCopy\"");
	tu_assert_contains(a, "\"l0 call\": \"zeCommandListAppendMemoryFill\"");
	tu_assert_contains(a, "\"memory bandwidth (GB/s)\": "); /* bytes / ns of strobe time */
	tu_assert_contains(a, "\"value\": 7");
	tu_assert_contains(a, "\"name\": \"Memcpy D2M (DEVICE -> MEMORY)\"");
	assert_string_equal(a, b);
	free(a);
	free(b);
	strobe_trace_destroy(lazy);
	strobe_trace_destroy(built);
	strb_clock_map_free(&map);
	s->lib = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rendered_and_built_args_agree),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

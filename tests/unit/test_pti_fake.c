/* The fake Intel PTI (tests/fakes/fake_pti.c) against its documented model
 * (tests/fakes/fake_pti.h) and the layouts strobe declares
 * (src/backends/pti/pti_abi.h), in both record families. A small tool
 * written here (not strobe) hands out buffers and keeps what PTI completes;
 * every test runs once against the v1 build and once against v2, each
 * loaded with dlopen as strobe loads libpti_view.so.1.
 *
 * STROBE_TEST_LABELS: concurrency (PTI completes buffers on its own thread) */
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ---- the library as a tool sees it: dlopen + dlsym ---------------------- */

struct lib {
	const char *path;
	int family;
	void *h;
	pti_version_fn version;
	pti_version_string_fn version_string;
	pti_result_string_fn result_string;
	pti_type_string_fn memcpy_string, memory_string, overhead_string;
	pti_set_callbacks_fn set_callbacks;
	pti_view_kind_fn enable, disable;
	pti_void_fn flush, local_available;
	pti_next_record_fn next_record;
	pti_push_external_fn push;
	pti_pop_external_fn pop;
	pti_get_timestamp_fn get_timestamp;
	pti_set_timestamp_fn set_timestamp;
	pti_api_name_fn api_id_name;
	pti_api_class_fn runtime_class, driver_class;
	/* control API */
	int (*fam)(void);
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
	void (*set_not_implemented)(int);
	void (*arm_fail)(const char *, uint32_t, int);
	void (*drop_buffers)(int);
	uint64_t (*refused)(void), (*lost)(void), (*dropped)(void), (*completions)(void);
	int (*enabled)(uint32_t);
	int (*external_depth)(uint32_t);
	int (*clock_before_enable)(void);
	void (*reset)(void);
};

static struct lib libs[2] = {{.path = FAKE_PTI_V1_PATH, .family = 1},
                             {.path = FAKE_PTI_V2_PATH, .family = 2}};

#define SYM(l, field, name) (*(void **)&(l)->field = dlsym((l)->h, name))

static void load_lib(struct lib *l)
{
	if (l->h)
		return;
	l->h = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(l->h);
	void *const syms[] = {
	    SYM(l, version, "ptiVersion"),
	    SYM(l, version_string, "ptiVersionString"),
	    SYM(l, result_string, "ptiResultTypeToString"),
	    SYM(l, memcpy_string, "ptiViewMemcpyTypeToString"),
	    SYM(l, memory_string, "ptiViewMemoryTypeToString"),
	    SYM(l, overhead_string, "ptiViewOverheadKindToString"),
	    SYM(l, set_callbacks, "ptiViewSetCallbacks"),
	    SYM(l, enable, "ptiViewEnable"),
	    SYM(l, disable, "ptiViewDisable"),
	    SYM(l, flush, "ptiFlushAllViews"),
	    SYM(l, local_available, "ptiViewGPULocalAvailable"),
	    SYM(l, next_record, "ptiViewGetNextRecord"),
	    SYM(l, push, "ptiViewPushExternalCorrelationId"),
	    SYM(l, pop, "ptiViewPopExternalCorrelationId"),
	    SYM(l, get_timestamp, "ptiViewGetTimestamp"),
	    SYM(l, set_timestamp, "ptiViewSetTimestampCallback"),
	    SYM(l, api_id_name, "ptiViewGetApiIdName"),
	    SYM(l, runtime_class, "ptiViewEnableRuntimeApiClass"),
	    SYM(l, driver_class, "ptiViewEnableDriverApiClass"),
	    SYM(l, fam, "fake_pti_family"),
	    SYM(l, now, "fake_pti_now"),
	    SYM(l, set_devices, "fake_pti_set_devices"),
	    SYM(l, api, "fake_pti_api"),
	    SYM(l, api_name, "fake_pti_api_name"),
	    SYM(l, next_corr, "fake_pti_next_corr"),
	    SYM(l, kernel, "fake_pti_kernel"),
	    SYM(l, copy, "fake_pti_copy"),
	    SYM(l, copy_p2p, "fake_pti_copy_p2p"),
	    SYM(l, fill, "fake_pti_fill"),
	    SYM(l, sync, "fake_pti_sync"),
	    SYM(l, overhead, "fake_pti_overhead"),
	    SYM(l, comms, "fake_pti_comms"),
	    SYM(l, repeat_external, "fake_pti_repeat_external"),
	    SYM(l, set_not_implemented, "fake_pti_set_not_implemented"),
	    SYM(l, arm_fail, "fake_pti_fail"),
	    SYM(l, drop_buffers, "fake_pti_drop_buffers"),
	    SYM(l, refused, "fake_pti_refused_buffers"),
	    SYM(l, lost, "fake_pti_lost_records"),
	    SYM(l, dropped, "fake_pti_dropped_records"),
	    SYM(l, completions, "fake_pti_completions"),
	    SYM(l, enabled, "fake_pti_enabled"),
	    SYM(l, external_depth, "fake_pti_external_depth"),
	    SYM(l, clock_before_enable, "fake_pti_clock_set_before_enable"),
	    SYM(l, reset, "fake_pti_reset"),
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		assert_non_null(syms[i]);
	assert_int_equal(l->fam(), l->family);
}

/* ---- the tool ----------------------------------------------------------- */

enum { MAX_DONE = 64, MAX_ALLOC = 256 };

struct done {
	unsigned char *buf;
	size_t size, used;
	int records; /* walked inside the callback */
	uint32_t tid;
	int on_caller_thread;
};

static struct {
	struct lib *l;
	pthread_mutex_t mu;
	size_t req_size;
	int req_null;
	int requests;
	int sleep_ms;
	pthread_t caller;
	struct done done[MAX_DONE];
	int ndone;
	unsigned char *alloc[MAX_ALLOC]; /* every buffer handed out, the tool's to free */
	int nalloc;
} T = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint32_t gettid_u32(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static void on_request(unsigned char **buf, size_t *size)
{
	pthread_mutex_lock(&T.mu);
	T.requests++;
	size_t n = T.req_size;
	int null = T.req_null;
	*buf = NULL;
	if (!null && T.nalloc < MAX_ALLOC)
		*buf = T.alloc[T.nalloc++] = malloc(n);
	*size = n;
	pthread_mutex_unlock(&T.mu);
}

static void on_complete(unsigned char *buf, size_t size, size_t used)
{
	if (T.sleep_ms)
		nanosleep(&(struct timespec){0, T.sleep_ms * 1000000L}, NULL);
	/* A pti function inside the callback: the fake holds no lock now. */
	int n = 0;
	pti_record_base_t *r = NULL;
	while (T.l->next_record(buf, used, &r) == PTI_SUCCESS)
		n++;
	pthread_mutex_lock(&T.mu);
	if (T.ndone < MAX_DONE)
		T.done[T.ndone++] =
		    (struct done){buf, size, used, n, gettid_u32(), pthread_equal(pthread_self(), T.caller)};
	pthread_mutex_unlock(&T.mu);
}

static int ndone(void)
{
	pthread_mutex_lock(&T.mu);
	int n = T.ndone;
	pthread_mutex_unlock(&T.mu);
	return n;
}

static void forget_buffers(void)
{
	pthread_mutex_lock(&T.mu);
	for (int i = 0; i < T.nalloc; i++)
		free(T.alloc[i]);
	T.nalloc = 0;
	T.ndone = 0;
	T.requests = 0;
	pthread_mutex_unlock(&T.mu);
}

static int setup(void **state)
{
	struct lib *l = *state;
	load_lib(l);
	l->reset();
	forget_buffers();
	T.l = l;
	T.req_size = 64 * 1024;
	T.req_null = 0;
	T.sleep_ms = 0;
	T.caller = pthread_self();
	return 0;
}

static int teardown(void **state)
{
	struct lib *l = *state;
	l->reset(); /* hands back the buffer being filled */
	forget_buffers();
	return 0;
}

static void start(struct lib *l, const uint32_t *kinds, size_t n)
{
	assert_int_equal(l->set_callbacks(on_request, on_complete), PTI_SUCCESS);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(l->enable(kinds[i]), PTI_SUCCESS);
}

/* The records of every completed buffer, in order, walked with
 * ptiViewGetNextRecord. */
struct walked {
	pti_record_base_t *rec;
	int buffer;
	size_t offset;
};

static int walk(struct lib *l, struct walked *out, int max)
{
	int n = 0;
	for (int b = 0; b < ndone(); b++) {
		pti_record_base_t *r = NULL;
		pti_result_t st;
		while ((st = l->next_record(T.done[b].buf, T.done[b].used, &r)) == PTI_SUCCESS) {
			assert_true(n < max);
			out[n++] = (struct walked){r, b, (size_t)((unsigned char *)r - T.done[b].buf)};
		}
		assert_int_equal(st, PTI_STATUS_END_OF_BUFFER);
	}
	return n;
}

/* The stride of each kind as the family documents it. */
static size_t expected_stride(int family, uint32_t kind)
{
	switch (kind) {
	case PTI_VIEW_DEVICE_GPU_KERNEL:
		return family == 1 ? PTI_KERNEL_V1_SIZE : sizeof(pti_record_kernel_t);
	case PTI_VIEW_DEVICE_GPU_MEM_COPY:
		return family == 1 ? PTI_COPY_V1_SIZE : sizeof(pti_record_copy_t);
	case PTI_VIEW_DEVICE_GPU_MEM_FILL:
		return family == 1 ? PTI_FILL_V1_SIZE : sizeof(pti_record_fill_t);
	case PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P:
		return family == 1 ? PTI_COPY_P2P_V1_SIZE : sizeof(pti_record_copy_p2p_t);
	case PTI_VIEW_RUNTIME_API:
	case PTI_VIEW_DRIVER_API:
		return sizeof(pti_record_api_t);
	case PTI_VIEW_EXTERNAL_CORRELATION:
		return sizeof(pti_record_external_t);
	case PTI_VIEW_COLLECTION_OVERHEAD:
		return sizeof(pti_record_overhead_t);
	case PTI_VIEW_DEVICE_SYNCHRONIZATION:
		return sizeof(pti_record_sync_t);
	case PTI_VIEW_COMMUNICATION:
		return sizeof(pti_record_comms_t);
	default:
		fail_msg("no stride for kind %u", kind);
		return 0;
	}
}

static size_t largest(int family)
{
	return family == 1 ? PTI_LARGEST_RECORD_V1 : PTI_LARGEST_RECORD_V2;
}

/* ---- tests -------------------------------------------------------------- */

static void test_version_and_strings(void **state)
{
	struct lib *l = *state;
	pti_version_t v = l->version();
	if (l->family == 1) {
		assert_int_equal(v.major, 0);
		assert_int_equal(v.minor, 16);
		assert_string_equal(l->version_string(), "0.16.0");
		assert_false(strb_pti_v2(v));
	} else {
		assert_int_equal(v.major, 1);
		assert_int_equal(v.minor, 2);
		assert_string_equal(l->version_string(), "1.2.0");
		assert_true(strb_pti_v2(v));
	}
	assert_int_equal(v.patch, 0);
	/* The names the real 1.2.0 library gives. */
	assert_string_equal(l->result_string(0), "PTI_SUCCESS");
	assert_string_equal(l->result_string(1), "PTI_STATUS_END_OF_BUFFER");
	assert_string_equal(l->result_string(2), "PTI_ERROR_NOT_IMPLEMENTED");
	assert_string_equal(l->result_string(3), "PTI_ERROR_BAD_ARGUMENT");
	assert_string_equal(l->result_string(50), "PTI_ERROR_DRIVER");
	assert_string_equal(l->result_string(200), "PTI_ERROR_INTERNAL");
	assert_string_equal(
	    l->memcpy_string(PTI_VIEW_MEMCPY_TYPE(PTI_VIEW_MEMORY_TYPE_HOST, PTI_VIEW_MEMORY_TYPE_DEVICE)),
	    "H2D");
	assert_string_equal(l->memcpy_string(9), "D2H");
	assert_string_equal(l->memory_string(PTI_VIEW_MEMORY_TYPE_SHARED), "SHARED");
	assert_string_equal(l->memory_string(PTI_VIEW_MEMORY_TYPE_MEMORY), "MEMORY(Unknown)");
	assert_string_equal(l->memory_string(9), "INVALID");
	assert_string_equal(l->overhead_string(PTI_VIEW_OVERHEAD_KIND_TIME), "BUFFER_TIME");
	assert_string_equal(l->overhead_string(PTI_VIEW_OVERHEAD_KIND_DRIVER), "BUFFER_DRIVER");
	assert_int_equal(l->local_available(), PTI_SUCCESS);
}

static void test_strides_and_fields(void **state)
{
	struct lib *l = *state;
	const uint32_t kinds[] = {PTI_VIEW_RUNTIME_API,
	                          PTI_VIEW_DRIVER_API,
	                          PTI_VIEW_DEVICE_GPU_KERNEL,
	                          PTI_VIEW_DEVICE_GPU_MEM_COPY,
	                          PTI_VIEW_DEVICE_GPU_MEM_FILL,
	                          PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P,
	                          PTI_VIEW_DEVICE_SYNCHRONIZATION,
	                          PTI_VIEW_COLLECTION_OVERHEAD};
	start(l, kinds, sizeof(kinds) / sizeof(kinds[0]));
	if (l->family == 2)
		assert_int_equal(l->enable(PTI_VIEW_COMMUNICATION), PTI_SUCCESS);
	uint32_t c = l->next_corr();
	assert_int_equal(l->api(PTI_API_GROUP_SYCL, 1, c, 1000, 2000), c);
	l->api(PTI_API_GROUP_LEVELZERO, 1, c, 1100, 1900);
	l->kernel(0, 7, c, "gemm", 5000, 6000);
	l->copy(1, PTI_INVALID_QUEUE_ID, c, PTI_VIEW_MEMCPY_TYPE(1, 2), 4096, 7000, 8000);
	l->fill(0, 7, c, PTI_VIEW_MEMORY_TYPE_DEVICE, 256, 0xab, 9000, 9500);
	l->copy_p2p(0, 1, 7, c, 1 << 20, 10000, 11000);
	l->sync(PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_EVENT, 4, c, 12000, 12500);
	l->overhead(PTI_VIEW_OVERHEAD_KIND_BUFFER_FLUSH, 3, 13000, 13300);
	const uint32_t want[] = {PTI_VIEW_RUNTIME_API,
	                         PTI_VIEW_DRIVER_API,
	                         PTI_VIEW_DEVICE_GPU_KERNEL,
	                         PTI_VIEW_DEVICE_GPU_MEM_COPY,
	                         PTI_VIEW_DEVICE_GPU_MEM_FILL,
	                         PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P,
	                         PTI_VIEW_DEVICE_SYNCHRONIZATION,
	                         PTI_VIEW_COLLECTION_OVERHEAD,
	                         PTI_VIEW_COMMUNICATION};
	size_t nwant = sizeof(want) / sizeof(want[0]) - (l->family == 1);
	l->comms("allreduce", 0x77, 100, 200, 14000, 15000); /* no such view in v1: nothing */
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 1);
	struct walked w[16];
	int n = walk(l, w, 16);
	assert_int_equal(n, (int)nwant);
	assert_int_equal(T.done[0].records, n);
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		assert_int_equal(w[i].rec->kind, want[i]);
		assert_int_equal(w[i].offset, off);
		off += expected_stride(l->family, want[i]);
	}
	assert_int_equal(T.done[0].used, off);
	assert_int_equal(T.done[0].size, 64 * 1024);

	const pti_record_api_t *a = (const void *)w[0].rec;
	assert_int_equal(a->api_group, PTI_API_GROUP_SYCL);
	assert_int_equal(a->api_id, 1);
	assert_int_equal(a->correlation_id, c);
	assert_int_equal(a->start_timestamp, 1000);
	assert_int_equal(a->end_timestamp, 2000);
	assert_int_equal(a->process_id, (uint32_t)getpid());
	assert_int_equal(a->thread_id, gettid_u32());
	a = (const void *)w[1].rec;
	assert_int_equal(a->api_group, PTI_API_GROUP_LEVELZERO);

	const pti_record_kernel_t *k = (const void *)w[2].rec;
	assert_string_equal(k->name, "gemm");
	assert_null(k->source_file_name);
	assert_int_equal(k->correlation_id, c);
	assert_string_equal(k->pci_address, "0000:10:00.0");
	const uint8_t uuid0[PTI_MAX_DEVICE_UUID_SIZE] = {0x86, 0x80, 0};
	assert_memory_equal(k->device_uuid, uuid0, sizeof(uuid0));
	assert_int_equal(k->start_timestamp, 5000);
	assert_int_equal(k->end_timestamp, 6000);
	assert_int_equal(k->append_timestamp, 3000);
	assert_int_equal(k->submit_timestamp, 4000);
	assert_int_equal(k->sycl_queue_id, 7);
	if (l->family == 2)
		assert_int_equal(k->device_handle, 0xde000000u);

	const pti_record_copy_t *cp = (const void *)w[3].rec;
	assert_int_equal(cp->memcpy_type, 6);
	assert_int_equal(cp->mem_src, PTI_VIEW_MEMORY_TYPE_HOST);
	assert_int_equal(cp->mem_dst, PTI_VIEW_MEMORY_TYPE_DEVICE);
	assert_string_equal(cp->name, "zeCommandListAppendMemoryCopy");
	assert_string_equal(cp->pci_address, "0000:20:00.0");
	assert_int_equal(cp->device_uuid[2], 1);
	assert_int_equal(cp->bytes, 4096);
	assert_int_equal(cp->sycl_queue_id, PTI_INVALID_QUEUE_ID);
	if (l->family == 2)
		assert_int_equal(cp->device_handle, 0xde000001u);

	const pti_record_fill_t *f = (const void *)w[4].rec;
	assert_int_equal(f->mem_type, PTI_VIEW_MEMORY_TYPE_DEVICE);
	assert_string_equal(f->name, "zeCommandListAppendMemoryFill");
	assert_int_equal(f->value_for_set, 0xab);
	assert_int_equal(f->bytes, 256);
	assert_int_equal(f->correlation_id, c);

	const pti_record_copy_p2p_t *p = (const void *)w[5].rec;
	assert_string_equal(p->src_pci_address, "0000:10:00.0");
	assert_string_equal(p->dst_pci_address, "0000:20:00.0");
	assert_int_equal(p->dst_uuid[2], 1);
	assert_int_equal(p->bytes, 1 << 20);
	assert_int_equal(p->sycl_queue_id, 7);
	assert_int_equal(p->correlation_id, c);
	if (l->family == 2)
		assert_int_equal(p->dst_device_handle, 0xde000001u);

	const pti_record_sync_t *s = (const void *)w[6].rec;
	assert_int_equal(s->synch_type, PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_EVENT);
	assert_int_equal(s->api_id, 4);
	assert_int_equal(s->api_group, PTI_API_GROUP_LEVELZERO);
	assert_int_equal(s->start_timestamp, 12000);

	const pti_record_overhead_t *o = (const void *)w[7].rec;
	assert_int_equal(o->kind, PTI_VIEW_OVERHEAD_KIND_BUFFER_FLUSH);
	assert_int_equal(o->count, 3);
	assert_int_equal(o->duration_ns, 300);

	if (l->family == 2) {
		const pti_record_comms_t *cm = (const void *)w[8].rec;
		assert_string_equal(cm->name, "allreduce");
		assert_int_equal(cm->communicator_id, 0x77);
		assert_int_equal(cm->send_size, 100);
		assert_int_equal(cm->recv_size, 200);
	}
}

static void test_next_record_errors(void **state)
{
	struct lib *l = *state;
	uint8_t buf[256] = {0};
	pti_record_base_t *r = NULL;
	assert_int_equal(l->next_record(buf, sizeof(buf), NULL), PTI_ERROR_BAD_ARGUMENT);
	assert_int_equal(l->next_record(buf, 0, &r), PTI_STATUS_END_OF_BUFFER);
	((pti_record_base_t *)buf)->kind = PTI_VIEW_RESERVED;
	assert_int_equal(l->next_record(buf, sizeof(buf), &r), PTI_ERROR_BAD_ARGUMENT);
	/* One external record, then a record of unknown kind after it. */
	((pti_record_base_t *)buf)->kind = PTI_VIEW_EXTERNAL_CORRELATION;
	((pti_record_base_t *)(buf + sizeof(pti_record_external_t)))->kind = 99;
	assert_int_equal(l->next_record(buf, sizeof(buf), &r), PTI_SUCCESS);
	assert_ptr_equal(r, buf);
	assert_int_equal(l->next_record(buf, sizeof(pti_record_external_t), &r), PTI_STATUS_END_OF_BUFFER);
	assert_int_equal(l->next_record(buf, sizeof(buf), &r), PTI_ERROR_BAD_ARGUMENT);
}

static void test_small_buffer_refused(void **state)
{
	struct lib *l = *state;
	const uint32_t kinds[] = {PTI_VIEW_DEVICE_GPU_KERNEL};
	start(l, kinds, 1);
	T.req_size = largest(l->family) - 1;
	l->kernel(0, 1, 1, "k", 10, 20);
	assert_int_equal(l->refused(), 1);
	assert_int_equal(l->dropped(), 1);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 0);
	T.req_null = 1;
	l->kernel(0, 1, 2, "k", 30, 40);
	assert_int_equal(l->refused(), 1);
	assert_int_equal(l->dropped(), 2);
	T.req_null = 0;
	T.req_size = largest(l->family);
	l->kernel(0, 1, 3, "k", 50, 60);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 1);
	assert_int_equal(T.done[0].records, 1);
	assert_int_equal(T.done[0].used, expected_stride(l->family, PTI_VIEW_DEVICE_GPU_KERNEL));
	assert_int_equal(((pti_record_kernel_t *)T.done[0].buf)->correlation_id, 3);
	assert_int_equal(l->refused(), 1);
}

static void test_completion_on_fake_thread(void **state)
{
	struct lib *l = *state;
	const uint32_t kinds[] = {PTI_VIEW_DEVICE_GPU_KERNEL};
	start(l, kinds, 1);
	size_t ks = expected_stride(l->family, PTI_VIEW_DEVICE_GPU_KERNEL);
	T.req_size = 2 * ks + 8 > largest(l->family) ? 2 * ks + 8 : largest(l->family);
	for (uint32_t i = 1; i <= 3; i++)
		l->kernel(0, 1, i, "k", i * 100, i * 100 + 50);
	/* The first buffer is full: completed without a flush. */
	for (int i = 0; i < 2000 && ndone() < 1; i++)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	assert_int_equal(ndone(), 1);
	assert_int_equal(T.done[0].records, 2);
	assert_int_equal(T.done[0].used, 2 * ks);
	assert_false(T.done[0].on_caller_thread);
	assert_int_not_equal(T.done[0].tid, gettid_u32());
	assert_int_equal(T.requests, 2);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 2);
	assert_int_equal(T.done[1].records, 1);
	assert_false(T.done[1].on_caller_thread);
	assert_int_equal(T.done[1].tid, T.done[0].tid);
	assert_int_equal(((pti_record_kernel_t *)T.done[1].buf)->correlation_id, 3);
	/* A flush with nothing recorded completes nothing. */
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 2);
}

static void test_flush_waits(void **state)
{
	struct lib *l = *state;
	const uint32_t kinds[] = {PTI_VIEW_DEVICE_GPU_MEM_FILL};
	start(l, kinds, 1);
	T.sleep_ms = 100;
	l->fill(0, 1, 1, PTI_VIEW_MEMORY_TYPE_DEVICE, 8, 0, 10, 20);
	assert_int_equal(l->completions(), 0);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	/* The callback slept before it recorded the buffer: flush waited. */
	assert_int_equal(ndone(), 1);
	assert_int_equal(l->completions(), 1);
	assert_int_equal(T.done[0].records, 1);
}

struct other_thread {
	struct lib *l;
	uint32_t corr;
};

static void *api_on_other_thread(void *arg)
{
	struct other_thread *o = arg;
	o->l->api(PTI_API_GROUP_SYCL, 1, o->corr, 1, 2);
	return NULL;
}

static void test_external_correlation(void **state)
{
	struct lib *l = *state;
	const uint32_t kinds[] = {PTI_VIEW_EXTERNAL_CORRELATION, PTI_VIEW_RUNTIME_API, PTI_VIEW_DRIVER_API};
	start(l, kinds, 3);
	assert_int_equal(l->push(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0, 10), PTI_SUCCESS);
	assert_int_equal(l->push(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0, 11), PTI_SUCCESS);
	assert_int_equal(l->push(PTI_VIEW_EXTERNAL_KIND_CUSTOM_1, 20), PTI_SUCCESS);
	assert_int_equal(l->push(PTI_VIEW_EXTERNAL_KIND_INVALID, 1), PTI_ERROR_BAD_ARGUMENT);
	assert_int_equal(l->external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0), 2);
	uint32_t c1 = l->next_corr();
	l->api(PTI_API_GROUP_SYCL, 1, c1, 100, 200);
	l->api(PTI_API_GROUP_LEVELZERO, 1, c1, 110, 190); /* same call: no new externals */
	uint64_t id = 0;
	assert_int_equal(l->pop(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0, &id), PTI_SUCCESS);
	assert_int_equal(id, 11);
	assert_int_equal(l->external_depth(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0), 1);
	uint32_t c2 = l->next_corr();
	assert_int_not_equal(c2, c1);
	l->repeat_external(1);
	l->api(PTI_API_GROUP_SYCL, 2, c2, 300, 400);
	/* Another thread's stacks are its own (empty). */
	struct other_thread o = {l, l->next_corr()};
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, api_on_other_thread, &o), 0);
	pthread_join(t, NULL);
	assert_int_equal(l->pop(PTI_VIEW_EXTERNAL_KIND_CUSTOM_1, NULL), PTI_SUCCESS);
	assert_int_equal(l->pop(PTI_VIEW_EXTERNAL_KIND_CUSTOM_1, &id), PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY);
	assert_int_equal(l->disable(PTI_VIEW_EXTERNAL_CORRELATION), PTI_SUCCESS);
	uint32_t c4 = l->next_corr();
	l->api(PTI_API_GROUP_SYCL, 3, c4, 500, 600); /* CUSTOM_0 holds 10, but the view is off */
	assert_int_equal(l->flush(), PTI_SUCCESS);

	struct walked w[16];
	int n = walk(l, w, 16);
	const struct {
		uint32_t kind, corr;
		uint64_t ext;
		uint32_t ext_kind;
	} want[] = {
	    {PTI_VIEW_EXTERNAL_CORRELATION, c1, 11, PTI_VIEW_EXTERNAL_KIND_CUSTOM_0},
	    {PTI_VIEW_EXTERNAL_CORRELATION, c1, 20, PTI_VIEW_EXTERNAL_KIND_CUSTOM_1},
	    {PTI_VIEW_RUNTIME_API, c1, 0, 0},
	    {PTI_VIEW_DRIVER_API, c1, 0, 0},
	    {PTI_VIEW_EXTERNAL_CORRELATION, c2, 10, PTI_VIEW_EXTERNAL_KIND_CUSTOM_0},
	    {PTI_VIEW_EXTERNAL_CORRELATION, c2, 10, PTI_VIEW_EXTERNAL_KIND_CUSTOM_0}, /* repeated */
	    {PTI_VIEW_EXTERNAL_CORRELATION, c2, 20, PTI_VIEW_EXTERNAL_KIND_CUSTOM_1},
	    {PTI_VIEW_RUNTIME_API, c2, 0, 0},
	    {PTI_VIEW_RUNTIME_API, o.corr, 0, 0},
	    {PTI_VIEW_RUNTIME_API, c4, 0, 0},
	};
	assert_int_equal(n, (int)(sizeof(want) / sizeof(want[0])));
	for (int i = 0; i < n; i++) {
		assert_int_equal(w[i].rec->kind, want[i].kind);
		if (want[i].kind == PTI_VIEW_EXTERNAL_CORRELATION) {
			const pti_record_external_t *e = (const void *)w[i].rec;
			assert_int_equal(e->correlation_id, want[i].corr);
			assert_int_equal(e->external_id, want[i].ext);
			assert_int_equal(e->external_kind, want[i].ext_kind);
		} else {
			assert_int_equal(((const pti_record_api_t *)w[i].rec)->correlation_id, want[i].corr);
		}
	}
}

static void test_not_implemented(void **state)
{
	struct lib *l = *state;
	l->set_not_implemented(1);
	assert_int_equal(l->set_callbacks(on_request, on_complete), PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->enable(PTI_VIEW_DEVICE_GPU_KERNEL), PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->disable(PTI_VIEW_DEVICE_GPU_KERNEL), PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->flush(), PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->local_available(), PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->push(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0, 1), PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->pop(PTI_VIEW_EXTERNAL_KIND_CUSTOM_0, NULL), PTI_ERROR_NOT_IMPLEMENTED);
	const char *name = NULL;
	assert_int_equal(l->api_id_name(PTI_API_GROUP_SYCL, 1, &name), PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->runtime_class(1, PTI_API_CLASS_GPU_OPERATION_CORE, PTI_API_GROUP_ALL),
	                 PTI_ERROR_NOT_IMPLEMENTED);
	assert_int_equal(l->get_timestamp(), 0);
	pti_record_base_t *r = NULL;
	uint8_t buf[64] = {PTI_VIEW_EXTERNAL_CORRELATION};
	assert_int_equal(l->next_record(buf, sizeof(buf), &r), PTI_ERROR_NOT_IMPLEMENTED);
	/* Version and strings still work. */
	assert_int_equal(l->version().major, l->family == 1 ? 0 : 1);
	assert_string_equal(l->version_string(), l->family == 1 ? "0.16.0" : "1.2.0");
	assert_string_equal(l->result_string(PTI_ERROR_NOT_IMPLEMENTED), "PTI_ERROR_NOT_IMPLEMENTED");
	assert_string_equal(l->memcpy_string(10), "D2D");
	/* Back on: the library works. */
	l->set_not_implemented(0);
	assert_int_not_equal(l->get_timestamp(), 0);
	const uint32_t kinds[] = {PTI_VIEW_DEVICE_GPU_KERNEL};
	start(l, kinds, 1);
}

static uint64_t test_clock_value = 123456789;
static uint64_t test_clock(void)
{
	return test_clock_value;
}

static void test_fail_injection(void **state)
{
	struct lib *l = *state;
	l->arm_fail("ptiViewEnable", PTI_ERROR_DRIVER, 2);
	assert_int_equal(l->set_callbacks(on_request, on_complete), PTI_SUCCESS);
	assert_int_equal(l->enable(PTI_VIEW_DEVICE_GPU_KERNEL), PTI_ERROR_DRIVER);
	assert_int_equal(l->enable(PTI_VIEW_DEVICE_GPU_KERNEL), PTI_ERROR_DRIVER);
	assert_false(l->enabled(PTI_VIEW_DEVICE_GPU_KERNEL));
	assert_int_equal(l->enable(PTI_VIEW_DEVICE_GPU_KERNEL), PTI_SUCCESS);
	assert_true(l->enabled(PTI_VIEW_DEVICE_GPU_KERNEL));
	l->arm_fail("ptiFlushAllViews", PTI_ERROR_INTERNAL, 1);
	l->kernel(0, 1, 1, "k", 1, 2);
	assert_int_equal(l->flush(), PTI_ERROR_INTERNAL);
	assert_int_equal(ndone(), 0);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 1);
	/* count 0 clears an armed failure. */
	l->arm_fail("ptiViewSetTimestampCallback", PTI_ERROR_BAD_TIMESTAMP, 5);
	l->arm_fail("ptiViewSetTimestampCallback", PTI_ERROR_BAD_TIMESTAMP, 0);
	assert_int_equal(l->set_timestamp(test_clock), PTI_SUCCESS);
	l->arm_fail("ptiViewGetApiIdName", PTI_ERROR_BAD_API_ID, 1);
	const char *name = NULL;
	assert_int_equal(l->api_id_name(PTI_API_GROUP_SYCL, 1, &name), PTI_ERROR_BAD_API_ID);
	assert_int_equal(l->api_id_name(PTI_API_GROUP_SYCL, 1, &name), PTI_SUCCESS);
}

static void test_communication_view(void **state)
{
	struct lib *l = *state;
	assert_int_equal(l->enable(PTI_VIEW_DEVICE_GPU_KERNEL), PTI_ERROR_NO_CALLBACKS_SET);
	assert_int_equal(l->set_callbacks(on_request, on_complete), PTI_SUCCESS);
	assert_int_equal(l->set_callbacks(NULL, on_complete), PTI_ERROR_BAD_ARGUMENT);
	assert_int_equal(l->enable(PTI_VIEW_DEVICE_SYNCHRONIZATION), PTI_SUCCESS);
	assert_int_equal(l->enable(PTI_VIEW_RESERVED), PTI_ERROR_BAD_ARGUMENT);
	assert_int_equal(l->enable(PTI_VIEW_COMMUNICATION + 1), PTI_ERROR_BAD_ARGUMENT);
	pti_result_t want = l->family == 1 ? PTI_ERROR_BAD_ARGUMENT : PTI_SUCCESS;
	assert_int_equal(l->enable(PTI_VIEW_COMMUNICATION), want);
	assert_int_equal(l->enabled(PTI_VIEW_COMMUNICATION), l->family == 2);
	l->comms("broadcast", 5, 1, 2, 10, 20);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), l->family == 2);
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void test_timestamps(void **state)
{
	struct lib *l = *state;
	uint64_t t0 = realtime_ns();
	uint64_t t = l->get_timestamp();
	uint64_t t1 = realtime_ns();
	assert_true(t >= t0 && t <= t1);
	assert_int_equal(l->set_timestamp(NULL), PTI_ERROR_BAD_ARGUMENT);
	test_clock_value = 123456789;
	assert_int_equal(l->set_timestamp(test_clock), PTI_SUCCESS);
	assert_int_equal(l->get_timestamp(), 123456789);
	test_clock_value = 987654321;
	assert_int_equal(l->now(), 987654321);
	assert_false(l->clock_before_enable()); /* nothing enabled yet */
	const uint32_t kinds[] = {PTI_VIEW_DEVICE_GPU_KERNEL};
	start(l, kinds, 1);
	assert_true(l->clock_before_enable());
	/* A clock installed after the first enable does not count. */
	l->reset();
	forget_buffers();
	start(l, kinds, 1);
	assert_int_equal(l->set_timestamp(test_clock), PTI_SUCCESS);
	assert_false(l->clock_before_enable());
}

static void test_api_names(void **state)
{
	struct lib *l = *state;
	const char *name = NULL;
	assert_int_equal(l->api_id_name(PTI_API_GROUP_SYCL, 1, &name), PTI_SUCCESS);
	assert_string_equal(name, "urEnqueueKernelLaunch");
	assert_ptr_equal(name, l->api_name(PTI_API_GROUP_SYCL, 1));
	assert_int_equal(l->api_id_name(PTI_API_GROUP_SYCL, 4, &name), PTI_SUCCESS);
	assert_string_equal(name, "urQueueFinish");
	assert_int_equal(l->api_id_name(PTI_API_GROUP_LEVELZERO, 1, &name), PTI_SUCCESS);
	assert_string_equal(name, "zeCommandListAppendLaunchKernel");
	assert_int_equal(l->api_id_name(PTI_API_GROUP_LEVELZERO, 5, &name), PTI_SUCCESS);
	assert_string_equal(name, "zeCommandQueueExecuteCommandLists");
	assert_int_equal(l->api_id_name(PTI_API_GROUP_SYCL, 0, &name), PTI_ERROR_BAD_API_ID);
	assert_int_equal(l->api_id_name(PTI_API_GROUP_LEVELZERO, 9999, &name), PTI_ERROR_BAD_API_ID);
	assert_int_equal(l->api_id_name(PTI_API_GROUP_OPENCL, 1, &name), PTI_ERROR_BAD_API_ID);
	assert_int_equal(l->api_id_name(PTI_API_GROUP_SYCL, 1, NULL), PTI_ERROR_BAD_ARGUMENT);
	assert_null(l->api_name(PTI_API_GROUP_SYCL, 9999));
	assert_int_equal(l->runtime_class(1, PTI_API_CLASS_GPU_OPERATION_CORE, PTI_API_GROUP_ALL),
	                 PTI_SUCCESS);
	assert_int_equal(l->driver_class(1, PTI_API_CLASS_ALL, PTI_API_GROUP_LEVELZERO), PTI_SUCCESS);
	assert_int_equal(l->runtime_class(1, 77, PTI_API_GROUP_ALL), PTI_ERROR_BAD_ARGUMENT);
}

static void test_drop_buffers_and_devices(void **state)
{
	struct lib *l = *state;
	const uint32_t kinds[] = {PTI_VIEW_DEVICE_GPU_KERNEL};
	start(l, kinds, 1);
	l->drop_buffers(1);
	for (uint32_t i = 1; i <= 3; i++)
		l->kernel(0, 1, i, "k", 1, 2);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 0);
	assert_int_equal(l->lost(), 3);
	l->set_devices(1);
	l->kernel(1, 1, 4, "k", 1, 2); /* no device 1 now */
	l->kernel(0, 1, 5, "k", 1, 2);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	assert_int_equal(ndone(), 1);
	assert_int_equal(l->lost(), 3);
	const pti_record_kernel_t *k = (const void *)T.done[0].buf;
	assert_string_equal(k->pci_address, "");
	k = (const void *)(T.done[0].buf + expected_stride(l->family, PTI_VIEW_DEVICE_GPU_KERNEL));
	assert_string_equal(k->pci_address, "0000:10:00.0");
}

static void test_names_interned(void **state)
{
	struct lib *l = *state;
	const uint32_t kinds[] = {PTI_VIEW_DEVICE_GPU_KERNEL};
	start(l, kinds, 1);
	char *name = strdup("vector_add<float>");
	assert_non_null(name);
	l->kernel(0, 1, 1, name, 1, 2);
	l->kernel(0, 1, 2, "vector_add<float>", 3, 4);
	memset(name, 'x', strlen(name));
	free(name);
	assert_int_equal(l->flush(), PTI_SUCCESS);
	struct walked w[4];
	assert_int_equal(walk(l, w, 4), 2);
	const pti_record_kernel_t *a = (const void *)w[0].rec, *b = (const void *)w[1].rec;
	assert_string_equal(a->name, "vector_add<float>");
	assert_ptr_equal(a->name, b->name);
}

#define FAMILY_TESTS(i)                                                                                      \
	cmocka_unit_test_prestate_setup_teardown(test_version_and_strings, setup, teardown, &libs[i]),       \
	    cmocka_unit_test_prestate_setup_teardown(test_strides_and_fields, setup, teardown, &libs[i]),    \
	    cmocka_unit_test_prestate_setup_teardown(test_next_record_errors, setup, teardown, &libs[i]),    \
	    cmocka_unit_test_prestate_setup_teardown(test_small_buffer_refused, setup, teardown, &libs[i]),  \
	    cmocka_unit_test_prestate_setup_teardown(test_completion_on_fake_thread, setup, teardown,        \
	                                             &libs[i]),                                              \
	    cmocka_unit_test_prestate_setup_teardown(test_flush_waits, setup, teardown, &libs[i]),           \
	    cmocka_unit_test_prestate_setup_teardown(test_external_correlation, setup, teardown, &libs[i]),  \
	    cmocka_unit_test_prestate_setup_teardown(test_not_implemented, setup, teardown, &libs[i]),       \
	    cmocka_unit_test_prestate_setup_teardown(test_fail_injection, setup, teardown, &libs[i]),        \
	    cmocka_unit_test_prestate_setup_teardown(test_communication_view, setup, teardown, &libs[i]),    \
	    cmocka_unit_test_prestate_setup_teardown(test_timestamps, setup, teardown, &libs[i]),            \
	    cmocka_unit_test_prestate_setup_teardown(test_api_names, setup, teardown, &libs[i]),             \
	    cmocka_unit_test_prestate_setup_teardown(test_drop_buffers_and_devices, setup, teardown,         \
	                                             &libs[i]),                                              \
	    cmocka_unit_test_prestate_setup_teardown(test_names_interned, setup, teardown, &libs[i])

int main(void)
{
	const struct CMUnitTest v1[] = {FAMILY_TESTS(0)};
	const struct CMUnitTest v2[] = {FAMILY_TESTS(1)};
	int failed = cmocka_run_group_tests_name("pti_fake_v1", v1, NULL, NULL);
	failed += cmocka_run_group_tests_name("pti_fake_v2", v2, NULL, NULL);
	return failed;
}

/* A fake Intel PTI (libpti_view.so.1): see fake_pti.h for the model. Built
 * once per record family with FAKE_PTI_FAMILY=1 (PTI 0.16.0) or 2 (1.2.0). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fake_pti.h"
#include "pti_abi.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if FAKE_PTI_FAMILY == 1
#define FAKE_VERSION_MAJOR  0u
#define FAKE_VERSION_MINOR  16u
#define FAKE_VERSION_PATCH  0u
#define FAKE_VERSION_STRING "0.16.0"
#define LARGEST_RECORD      PTI_LARGEST_RECORD_V1
#elif FAKE_PTI_FAMILY == 2
#define FAKE_VERSION_MAJOR  1u
#define FAKE_VERSION_MINOR  2u
#define FAKE_VERSION_PATCH  0u
#define FAKE_VERSION_STRING "1.2.0"
#define LARGEST_RECORD      PTI_LARGEST_RECORD_V2
#else
#error "FAKE_PTI_FAMILY must be 1 or 2"
#endif

#define PTI_EXPORT __attribute__((visibility("default")))

enum {
	MAX_KIND = PTI_VIEW_COMMUNICATION,
	MAX_DEVICES = 8,
	EXT_KINDS = PTI_VIEW_EXTERNAL_KIND_CUSTOM_3, /* UNKNOWN (1) .. CUSTOM_3 (5) */
	EXT_DEPTH = 128,
	MAX_FAIL = 8,
	RECENT_CORRS = 256,
};

/* The family's stride of each record kind (0: no such kind). */
static const uint32_t stride_of[MAX_KIND + 1] = {
#if FAKE_PTI_FAMILY == 1
    [PTI_VIEW_DEVICE_GPU_KERNEL] = PTI_KERNEL_V1_SIZE,
    [PTI_VIEW_DEVICE_GPU_MEM_COPY] = PTI_COPY_V1_SIZE,
    [PTI_VIEW_DEVICE_GPU_MEM_FILL] = PTI_FILL_V1_SIZE,
    [PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P] = PTI_COPY_P2P_V1_SIZE,
#else
    [PTI_VIEW_DEVICE_GPU_KERNEL] = sizeof(pti_record_kernel_t),
    [PTI_VIEW_DEVICE_GPU_MEM_COPY] = sizeof(pti_record_copy_t),
    [PTI_VIEW_DEVICE_GPU_MEM_FILL] = sizeof(pti_record_fill_t),
    [PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P] = sizeof(pti_record_copy_p2p_t),
    [PTI_VIEW_COMMUNICATION] = sizeof(pti_record_comms_t),
#endif
    [PTI_VIEW_DRIVER_API] = sizeof(pti_record_api_t),
    [PTI_VIEW_COLLECTION_OVERHEAD] = sizeof(pti_record_overhead_t),
    [PTI_VIEW_RUNTIME_API] = sizeof(pti_record_api_t),
    [PTI_VIEW_EXTERNAL_CORRELATION] = sizeof(pti_record_external_t),
    [PTI_VIEW_DEVICE_SYNCHRONIZATION] = sizeof(pti_record_sync_t),
};

static const char *const sycl_names[] = {
    NULL,
    "urEnqueueKernelLaunch",
    "urEnqueueUSMMemcpy",
    "urEnqueueUSMFill",
    "urQueueFinish",
    "urEnqueueEventsWaitWithBarrier",
};
static const char *const l0_names[] = {
    NULL,
    "zeCommandListAppendLaunchKernel",
    "zeCommandListAppendMemoryCopy",
    "zeCommandListAppendMemoryFill",
    "zeEventHostSynchronize",
    "zeCommandQueueExecuteCommandLists",
    "zeCommandQueueSynchronize",
    "zeFenceHostSynchronize",
};

/* A buffer handed back (or lost) on the fake's thread. */
struct done_buf {
	unsigned char *buf;
	size_t size, used;
	struct done_buf *next;
};

struct interned {
	struct interned *next;
	char s[];
};

/* Lock order: prod (producers, flush) before mu. The delivery thread takes
 * only mu, and never holds it while a callback runs. */
static struct {
	pthread_mutex_t prod;
	pthread_mutex_t mu;
	pthread_cond_t work, drained;
	pti_buffer_request_fn request;
	pti_buffer_complete_fn complete;
	pti_timestamp_fn clock;
	bool enabled[MAX_KIND + 1];
	bool any_enable, clock_before_enable;
	bool not_implemented;
	int devices;
	struct {
		char fn[64];
		pti_result_t result;
		int count;
	} fail[MAX_FAIL];
	/* the buffer being filled (under prod) */
	unsigned char *cur;
	size_t cur_size, cur_used;
	uint64_t cur_records;
	/* completed, waiting for the thread (under mu) */
	struct done_buf *head, **tail;
	int in_callback;
	int drop_buffers;
	int repeat_external;
	uint64_t refused, lost, dropped, completions;
	uint32_t recent_corr[RECENT_CORRS];
	unsigned recent_next;
	uint32_t next_corr;
	uint64_t next_kernel_id, next_mem_op;
	struct interned *strings;
	pthread_t thread;
	bool thread_started, stop;
} S = {
    .prod = PTHREAD_MUTEX_INITIALIZER,
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .drained = PTHREAD_COND_INITIALIZER,
    .devices = 2,
    .tail = &S.head,
};

static _Thread_local uint64_t tl_ext[EXT_KINDS][EXT_DEPTH];
static _Thread_local int tl_ext_depth[EXT_KINDS];
static _Thread_local bool tl_delivery_thread;

static uint32_t thread_id(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static bool not_implemented(void)
{
	pthread_mutex_lock(&S.mu);
	bool ni = S.not_implemented;
	pthread_mutex_unlock(&S.mu);
	return ni;
}

/* The injected result of this call of fn, or PTI_SUCCESS. */
static pti_result_t injected(const char *fn)
{
	pti_result_t r = PTI_SUCCESS;
	pthread_mutex_lock(&S.mu);
	if (S.not_implemented) {
		r = PTI_ERROR_NOT_IMPLEMENTED;
	} else {
		for (int i = 0; i < MAX_FAIL; i++) {
			if (S.fail[i].count > 0 && !strcmp(S.fail[i].fn, fn)) {
				r = S.fail[i].result;
				S.fail[i].count--;
				break;
			}
		}
	}
	pthread_mutex_unlock(&S.mu);
	return r;
}
#define RETURN_IF_INJECTED()                                                                                 \
	do {                                                                                                 \
		pti_result_t r_ = injected(__func__);                                                        \
		if (r_ != PTI_SUCCESS)                                                                       \
			return r_;                                                                           \
	} while (0)

/* A copy of s that lives as long as the library (PTI's names do). */
static const char *intern(const char *s)
{
	if (!s)
		return NULL;
	pthread_mutex_lock(&S.mu);
	struct interned *it;
	for (it = S.strings; it; it = it->next)
		if (!strcmp(it->s, s))
			break;
	if (!it) {
		size_t n = strlen(s) + 1;
		it = malloc(sizeof(*it) + n);
		if (it) {
			memcpy(it->s, s, n);
			it->next = S.strings;
			S.strings = it;
		}
	}
	pthread_mutex_unlock(&S.mu);
	return it ? it->s : NULL;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now(void)
{
	pthread_mutex_lock(&S.mu);
	pti_timestamp_fn fn = S.clock;
	pthread_mutex_unlock(&S.mu);
	return fn ? fn() : realtime_ns();
}

static bool view_on(pti_view_kind_t kind)
{
	pthread_mutex_lock(&S.mu);
	bool on = !S.not_implemented && kind <= MAX_KIND && S.enabled[kind];
	pthread_mutex_unlock(&S.mu);
	return on;
}

/* ---- delivery ----------------------------------------------------------- */

static void *delivery_main(void *arg)
{
	(void)arg;
	tl_delivery_thread = true;
	pthread_mutex_lock(&S.mu);
	for (;;) {
		struct done_buf *d = S.head;
		if (!d) {
			if (S.stop)
				break;
			pthread_cond_wait(&S.work, &S.mu);
			continue;
		}
		S.head = d->next;
		if (!S.head)
			S.tail = &S.head;
		pti_buffer_complete_fn fn = S.complete;
		S.in_callback++;
		pthread_mutex_unlock(&S.mu);
		if (fn)
			fn(d->buf, d->size, d->used);
		free(d);
		pthread_mutex_lock(&S.mu);
		S.in_callback--;
		S.completions++;
		pthread_cond_broadcast(&S.drained);
	}
	pthread_mutex_unlock(&S.mu);
	return NULL;
}

/* Under prod: hands the current buffer to the thread (or loses it). */
static void complete_current(void)
{
	if (!S.cur)
		return;
	struct done_buf *d = calloc(1, sizeof(*d));
	pthread_mutex_lock(&S.mu);
	if (S.drop_buffers > 0 || !d) {
		if (S.drop_buffers > 0)
			S.drop_buffers--;
		S.lost += S.cur_records;
		free(d);
	} else {
		d->buf = S.cur;
		d->size = S.cur_size;
		d->used = S.cur_used;
		*S.tail = d;
		S.tail = &d->next;
		pthread_cond_signal(&S.work);
	}
	pthread_mutex_unlock(&S.mu);
	S.cur = NULL;
	S.cur_size = S.cur_used = 0;
	S.cur_records = 0;
}

static void start_thread_locked(void)
{
	if (S.thread_started)
		return;
	S.stop = false;
	if (pthread_create(&S.thread, NULL, delivery_main, NULL) == 0)
		S.thread_started = true;
}

__attribute__((destructor)) static void fake_pti_fini(void)
{
	pthread_mutex_lock(&S.mu);
	bool started = S.thread_started;
	S.stop = true;
	pthread_cond_signal(&S.work);
	pthread_mutex_unlock(&S.mu);
	if (started && !pthread_equal(pthread_self(), S.thread))
		pthread_join(S.thread, NULL);
}

/* Writes a record of kind (its stride's worth of rec) into the current
 * buffer, asking the tool for one when needed. */
static void emit(pti_view_kind_t kind, const void *rec)
{
	uint32_t stride = stride_of[kind];
	pthread_mutex_lock(&S.prod);
	if (S.cur && S.cur_used + stride > S.cur_size)
		complete_current();
	if (!S.cur) {
		pthread_mutex_lock(&S.mu);
		pti_buffer_request_fn req = S.request;
		pthread_mutex_unlock(&S.mu);
		unsigned char *buf = NULL;
		size_t size = 0;
		if (req)
			req(&buf, &size);
		pthread_mutex_lock(&S.mu);
		if (buf && size < LARGEST_RECORD)
			S.refused++;
		if (!buf || size < LARGEST_RECORD) {
			S.dropped++;
			pthread_mutex_unlock(&S.mu);
			pthread_mutex_unlock(&S.prod);
			return;
		}
		pthread_mutex_unlock(&S.mu);
		S.cur = buf;
		S.cur_size = size;
		S.cur_used = 0;
		S.cur_records = 0;
	}
	memcpy(S.cur + S.cur_used, rec, stride);
	S.cur_used += stride;
	S.cur_records++;
	pthread_mutex_unlock(&S.prod);
}

/* ---- devices ------------------------------------------------------------ */

static void device_ids(int dev, char pci[PTI_MAX_PCI_ADDRESS_SIZE], uint8_t uuid[PTI_MAX_DEVICE_UUID_SIZE])
{
	memset(pci, 0, PTI_MAX_PCI_ADDRESS_SIZE);
	memset(uuid, 0, PTI_MAX_DEVICE_UUID_SIZE);
	pthread_mutex_lock(&S.mu);
	int n = S.devices;
	pthread_mutex_unlock(&S.mu);
	if (dev < 0 || dev >= n)
		return;
	snprintf(pci, PTI_MAX_PCI_ADDRESS_SIZE, "0000:%02x:00.0", (unsigned)(uint8_t)(0x10 * (dev + 1)));
	uuid[0] = 0x86;
	uuid[1] = 0x80;
	uuid[2] = (uint8_t)dev;
}

static uint64_t device_handle(int dev)
{
	return 0xde000000u + (uint64_t)dev;
}
static uint64_t context_handle(int dev)
{
	return 0xc0000000u + (uint64_t)dev;
}
static uint64_t l0_queue_handle(int dev, uint64_t queue)
{
	return 0x9000000000ull + ((uint64_t)dev << 16) + (queue & 0xffff);
}

/* append <= submit <= start, as the driver reports them. */
static uint64_t before(uint64_t t, uint64_t d)
{
	return t > d ? t - d : 0;
}

static uint64_t next_mem_op(void)
{
	pthread_mutex_lock(&S.mu);
	uint64_t id = ++S.next_mem_op;
	pthread_mutex_unlock(&S.mu);
	return id;
}

/* The fields copy, copy P2P and fill records share (same names, each at its
 * own offset). */
#define SET_MEM_OP(r, dev, queue, corr, call, nbytes, start, end)                                            \
	do {                                                                                                 \
		(r).queue_handle = l0_queue_handle(dev, queue);                                              \
		(r).context_handle = context_handle(dev);                                                    \
		(r).name = (call);                                                                           \
		(r).mem_op_id = next_mem_op();                                                               \
		(r).correlation_id = (corr);                                                                 \
		(r).thread_id = thread_id();                                                                 \
		(r).append_timestamp = before(start, 2000);                                                  \
		(r).start_timestamp = (start);                                                               \
		(r).end_timestamp = (end);                                                                   \
		(r).submit_timestamp = before(start, 1000);                                                  \
		(r).bytes = (nbytes);                                                                        \
		(r).sycl_queue_id = (queue);                                                                 \
	} while (0)

/* ---- the PTI API -------------------------------------------------------- */

/* pti_view.h's declarations, in pti_abi.h's types. */
PTI_EXPORT pti_version_t ptiVersion(void);
PTI_EXPORT const char *ptiVersionString(void);
PTI_EXPORT const char *ptiResultTypeToString(pti_result_t r);
PTI_EXPORT const char *ptiViewMemoryTypeToString(uint32_t t);
PTI_EXPORT const char *ptiViewMemcpyTypeToString(uint32_t t);
PTI_EXPORT const char *ptiViewOverheadKindToString(uint32_t k);
PTI_EXPORT pti_result_t ptiViewSetCallbacks(pti_buffer_request_fn req, pti_buffer_complete_fn done);
PTI_EXPORT pti_result_t ptiViewEnable(pti_view_kind_t kind);
PTI_EXPORT pti_result_t ptiViewDisable(pti_view_kind_t kind);
PTI_EXPORT pti_result_t ptiViewGPULocalAvailable(void);
PTI_EXPORT pti_result_t ptiFlushAllViews(void);
PTI_EXPORT pti_result_t ptiViewGetNextRecord(uint8_t *buf, size_t valid, pti_record_base_t **rec);
PTI_EXPORT pti_result_t ptiViewPushExternalCorrelationId(uint32_t kind, uint64_t id);
PTI_EXPORT pti_result_t ptiViewPopExternalCorrelationId(uint32_t kind, uint64_t *id);
PTI_EXPORT uint64_t ptiViewGetTimestamp(void);
PTI_EXPORT pti_result_t ptiViewSetTimestampCallback(pti_timestamp_fn fn);
PTI_EXPORT pti_result_t ptiViewGetApiIdName(pti_api_group_t group, uint32_t id, const char **name);
PTI_EXPORT pti_result_t ptiViewEnableRuntimeApiClass(uint32_t enable, pti_api_class_t cls,
                                                     pti_api_group_t group);
PTI_EXPORT pti_result_t ptiViewEnableDriverApiClass(uint32_t enable, pti_api_class_t cls,
                                                    pti_api_group_t group);

PTI_EXPORT pti_version_t ptiVersion(void)
{
	return (pti_version_t){FAKE_VERSION_MAJOR, FAKE_VERSION_MINOR, FAKE_VERSION_PATCH};
}

PTI_EXPORT const char *ptiVersionString(void)
{
	return FAKE_VERSION_STRING;
}

PTI_EXPORT const char *ptiResultTypeToString(pti_result_t r)
{
	switch (r) {
	case PTI_SUCCESS:
		return "PTI_SUCCESS";
	case PTI_STATUS_END_OF_BUFFER:
		return "PTI_STATUS_END_OF_BUFFER";
	case PTI_ERROR_NOT_IMPLEMENTED:
		return "PTI_ERROR_NOT_IMPLEMENTED";
	case PTI_ERROR_BAD_ARGUMENT:
		return "PTI_ERROR_BAD_ARGUMENT";
	case PTI_ERROR_NO_CALLBACKS_SET:
		return "PTI_ERROR_NO_CALLBACKS_SET";
	case PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY:
		return "PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY";
	case PTI_ERROR_BAD_TIMESTAMP:
		return "PTI_ERROR_BAD_TIMESTAMP";
	case PTI_ERROR_BAD_API_ID:
		return "PTI_ERROR_BAD_API_ID";
	case PTI_ERROR_NO_GPU_VIEWS_ENABLED:
		return "PTI_ERROR_NO_GPU_VIEWS_ENABLED";
	case PTI_ERROR_DRIVER:
		return "PTI_ERROR_DRIVER";
	case PTI_ERROR_TRACING_NOT_INITIALIZED:
		return "PTI_ERROR_TRACING_NOT_INITIALIZED";
	case PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED:
		return "PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED";
	case PTI_ERROR_INTERNAL:
		return "PTI_ERROR_INTERNAL";
	default:
		return "INVALID";
	}
}

PTI_EXPORT const char *ptiViewMemoryTypeToString(uint32_t t)
{
	/* The strings of pti-gpu's sdk/src/pti_view.cc. */
	static const char *const names[] = {"MEMORY(Unknown)", "HOST", "DEVICE", "SHARED"};
	return t < 4 ? names[t] : "INVALID";
}

PTI_EXPORT const char *ptiViewMemcpyTypeToString(uint32_t t)
{
	static const char *const names[] = {"M2M", "M2H", "M2D", "M2S", "H2M", "H2H", "H2D", "H2S",
	                                    "D2M", "D2H", "D2D", "D2S", "S2M", "S2H", "S2D", "S2S"};
	return t < 16 ? names[t] : "INVALID";
}

PTI_EXPORT const char *ptiViewOverheadKindToString(uint32_t k)
{
	static const char *const names[] = {"INVALID",      "UNKNOWN",       "RESOURCE",
	                                    "BUFFER_FLUSH", "BUFFER_DRIVER", "BUFFER_TIME"};
	return k < 6 ? names[k] : "INVALID";
}

PTI_EXPORT pti_result_t ptiViewSetCallbacks(pti_buffer_request_fn req, pti_buffer_complete_fn done)
{
	RETURN_IF_INJECTED();
	if (!req || !done)
		return PTI_ERROR_BAD_ARGUMENT;
	pthread_mutex_lock(&S.mu);
	S.request = req;
	S.complete = done;
	start_thread_locked();
	bool ok = S.thread_started;
	pthread_mutex_unlock(&S.mu);
	return ok ? PTI_SUCCESS : PTI_ERROR_INTERNAL;
}

static bool known_view(pti_view_kind_t kind)
{
	return kind <= MAX_KIND && stride_of[kind] != 0;
}

PTI_EXPORT pti_result_t ptiViewEnable(pti_view_kind_t kind)
{
	RETURN_IF_INJECTED();
	if (!known_view(kind))
		return PTI_ERROR_BAD_ARGUMENT; /* v1: COMMUNICATION too (PTI < 0.17) */
	pthread_mutex_lock(&S.mu);
	pti_result_t r = PTI_ERROR_NO_CALLBACKS_SET;
	if (S.request && S.complete) {
		if (!S.any_enable)
			S.clock_before_enable = S.clock != NULL;
		S.any_enable = true;
		S.enabled[kind] = true;
		r = PTI_SUCCESS;
	}
	pthread_mutex_unlock(&S.mu);
	return r;
}

PTI_EXPORT pti_result_t ptiViewDisable(pti_view_kind_t kind)
{
	RETURN_IF_INJECTED();
	if (!known_view(kind))
		return PTI_ERROR_BAD_ARGUMENT;
	pthread_mutex_lock(&S.mu);
	S.enabled[kind] = false;
	pthread_mutex_unlock(&S.mu);
	return PTI_SUCCESS;
}

PTI_EXPORT pti_result_t ptiViewGPULocalAvailable(void)
{
	RETURN_IF_INJECTED();
	return PTI_SUCCESS;
}

/* Completes the current buffer; waits for every completion unless called
 * from a completion callback (which would wait for itself). */
static void flush_all(void)
{
	pthread_mutex_lock(&S.prod);
	if (S.cur && S.cur_records)
		complete_current();
	pthread_mutex_unlock(&S.prod);
	pthread_mutex_lock(&S.mu);
	while (!tl_delivery_thread && S.thread_started && (S.head || S.in_callback))
		pthread_cond_wait(&S.drained, &S.mu);
	pthread_mutex_unlock(&S.mu);
}

PTI_EXPORT pti_result_t ptiFlushAllViews(void)
{
	RETURN_IF_INJECTED();
	flush_all();
	return PTI_SUCCESS;
}

PTI_EXPORT pti_result_t ptiViewGetNextRecord(uint8_t *buf, size_t valid, pti_record_base_t **rec)
{
	RETURN_IF_INJECTED();
	if (!rec || !buf)
		return PTI_ERROR_BAD_ARGUMENT;
	size_t pos = 0;
	if (*rec) {
		pti_view_kind_t k = (*rec)->kind;
		if ((uint8_t *)*rec < buf || !known_view(k))
			return PTI_ERROR_BAD_ARGUMENT;
		pos = (size_t)((uint8_t *)*rec - buf) + stride_of[k];
	}
	if (pos + sizeof(pti_record_base_t) > valid)
		return PTI_STATUS_END_OF_BUFFER;
	pti_record_base_t *next = (pti_record_base_t *)(buf + pos);
	if (!known_view(next->kind))
		return PTI_ERROR_BAD_ARGUMENT;
	if (pos + stride_of[next->kind] > valid)
		return PTI_STATUS_END_OF_BUFFER;
	*rec = next;
	return PTI_SUCCESS;
}

static int ext_index(uint32_t kind)
{
	if (kind < PTI_VIEW_EXTERNAL_KIND_UNKNOWN || kind > PTI_VIEW_EXTERNAL_KIND_CUSTOM_3)
		return -1;
	return (int)kind - PTI_VIEW_EXTERNAL_KIND_UNKNOWN;
}

PTI_EXPORT pti_result_t ptiViewPushExternalCorrelationId(uint32_t kind, uint64_t id)
{
	RETURN_IF_INJECTED();
	int i = ext_index(kind);
	if (i < 0)
		return PTI_ERROR_BAD_ARGUMENT;
	if (tl_ext_depth[i] >= EXT_DEPTH)
		return PTI_ERROR_INTERNAL;
	tl_ext[i][tl_ext_depth[i]++] = id;
	return PTI_SUCCESS;
}

PTI_EXPORT pti_result_t ptiViewPopExternalCorrelationId(uint32_t kind, uint64_t *id)
{
	RETURN_IF_INJECTED();
	int i = ext_index(kind);
	if (i < 0)
		return PTI_ERROR_BAD_ARGUMENT;
	if (!tl_ext_depth[i])
		return PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY;
	uint64_t v = tl_ext[i][--tl_ext_depth[i]];
	if (id)
		*id = v;
	return PTI_SUCCESS;
}

PTI_EXPORT uint64_t ptiViewGetTimestamp(void)
{
	if (not_implemented())
		return 0;
	return now();
}

PTI_EXPORT pti_result_t ptiViewSetTimestampCallback(pti_timestamp_fn fn)
{
	RETURN_IF_INJECTED();
	if (!fn)
		return PTI_ERROR_BAD_ARGUMENT;
	pthread_mutex_lock(&S.mu);
	S.clock = fn;
	pthread_mutex_unlock(&S.mu);
	return PTI_SUCCESS;
}

static const char *api_name(uint32_t group, uint32_t id)
{
	if (group == PTI_API_GROUP_SYCL && id > 0 && id < sizeof(sycl_names) / sizeof(sycl_names[0]))
		return sycl_names[id];
	if (group == PTI_API_GROUP_LEVELZERO && id > 0 && id < sizeof(l0_names) / sizeof(l0_names[0]))
		return l0_names[id];
	return NULL;
}

PTI_EXPORT pti_result_t ptiViewGetApiIdName(pti_api_group_t group, uint32_t id, const char **name)
{
	RETURN_IF_INJECTED();
	if (!name)
		return PTI_ERROR_BAD_ARGUMENT;
	const char *n = api_name(group, id);
	if (!n)
		return PTI_ERROR_BAD_API_ID;
	*name = n;
	return PTI_SUCCESS;
}

static pti_result_t api_class(uint32_t enable, pti_api_class_t cls, pti_api_group_t group)
{
	if (enable > 1)
		return PTI_ERROR_BAD_ARGUMENT;
	if (cls != PTI_API_CLASS_GPU_OPERATION_CORE && cls != PTI_API_CLASS_HOST_OPERATION_SYNCHRONIZATION &&
	    cls != PTI_API_CLASS_ALL)
		return PTI_ERROR_BAD_ARGUMENT;
	if (group != PTI_API_GROUP_LEVELZERO && group != PTI_API_GROUP_SYCL && group != PTI_API_GROUP_ALL)
		return PTI_ERROR_BAD_ARGUMENT;
	return PTI_SUCCESS;
}

PTI_EXPORT pti_result_t ptiViewEnableRuntimeApiClass(uint32_t enable, pti_api_class_t cls,
                                                     pti_api_group_t group)
{
	RETURN_IF_INJECTED();
	return api_class(enable, cls, group);
}

PTI_EXPORT pti_result_t ptiViewEnableDriverApiClass(uint32_t enable, pti_api_class_t cls,
                                                    pti_api_group_t group)
{
	RETURN_IF_INJECTED();
	return api_class(enable, cls, group);
}

/* ---- control ------------------------------------------------------------ */

FAKE_PTI_EXPORT int fake_pti_family(void)
{
	return FAKE_PTI_FAMILY;
}

FAKE_PTI_EXPORT uint64_t fake_pti_now(void)
{
	return now();
}

FAKE_PTI_EXPORT void fake_pti_set_devices(int n)
{
	pthread_mutex_lock(&S.mu);
	S.devices = n < 1 ? 1 : n > MAX_DEVICES ? MAX_DEVICES : n;
	pthread_mutex_unlock(&S.mu);
}

FAKE_PTI_EXPORT const char *fake_pti_api_name(uint32_t group, uint32_t api_id)
{
	return api_name(group, api_id);
}

FAKE_PTI_EXPORT uint32_t fake_pti_next_corr(void)
{
	pthread_mutex_lock(&S.mu);
	uint32_t c = ++S.next_corr;
	pthread_mutex_unlock(&S.mu);
	return c;
}

/* Whether corr is seen for the first time (remembered in a ring). */
static bool fresh_corr(uint32_t corr)
{
	bool fresh = true;
	pthread_mutex_lock(&S.mu);
	for (unsigned i = 0; i < RECENT_CORRS && fresh; i++)
		if (S.recent_corr[i] == corr)
			fresh = false;
	if (fresh)
		S.recent_corr[S.recent_next++ % RECENT_CORRS] = corr;
	pthread_mutex_unlock(&S.mu);
	return fresh;
}

static void write_externals(uint32_t corr)
{
	for (int i = 0; i < EXT_KINDS; i++) {
		if (!tl_ext_depth[i])
			continue;
		pti_record_external_t r = {
		    .base.kind = PTI_VIEW_EXTERNAL_CORRELATION,
		    .correlation_id = corr,
		    .external_id = tl_ext[i][tl_ext_depth[i] - 1],
		    .external_kind = (uint32_t)i + PTI_VIEW_EXTERNAL_KIND_UNKNOWN,
		};
		pthread_mutex_lock(&S.mu);
		int times = 1;
		if (S.repeat_external > 0) {
			S.repeat_external--;
			times = 2;
		}
		pthread_mutex_unlock(&S.mu);
		while (times--)
			emit(PTI_VIEW_EXTERNAL_CORRELATION, &r);
	}
}

FAKE_PTI_EXPORT uint32_t fake_pti_api(uint32_t group, uint32_t api_id, uint32_t corr, uint64_t start,
                                      uint64_t end)
{
	if (corr && view_on(PTI_VIEW_EXTERNAL_CORRELATION) && fresh_corr(corr))
		write_externals(corr);
	pti_view_kind_t kind = group == PTI_API_GROUP_SYCL ? PTI_VIEW_RUNTIME_API : PTI_VIEW_DRIVER_API;
	if (!view_on(kind))
		return corr;
	pti_record_api_t r = {
	    .base.kind = kind,
	    .start_timestamp = start,
	    .end_timestamp = end,
	    .api_group = group,
	    .api_id = api_id,
	    .process_id = (uint32_t)getpid(),
	    .thread_id = thread_id(),
	    .correlation_id = corr,
	};
	emit(kind, &r);
	return corr;
}

FAKE_PTI_EXPORT void fake_pti_kernel(int dev, uint64_t queue, uint32_t corr, const char *name, uint64_t start,
                                     uint64_t end)
{
	if (!view_on(PTI_VIEW_DEVICE_GPU_KERNEL))
		return;
	pti_record_kernel_t r = {
	    .base.kind = PTI_VIEW_DEVICE_GPU_KERNEL,
	    .queue_handle = l0_queue_handle(dev, queue),
	    .context_handle = context_handle(dev),
	    .name = intern(name),
	    .correlation_id = corr,
	    .thread_id = thread_id(),
	    .append_timestamp = before(start, 2000),
	    .start_timestamp = start,
	    .end_timestamp = end,
	    .submit_timestamp = before(start, 1000),
	    .sycl_task_begin_timestamp = before(start, 3000),
	    .sycl_enqk_begin_timestamp = before(start, 2500),
	    .sycl_queue_id = queue,
	    .sycl_invocation_id = corr,
	    .device_handle = device_handle(dev),
	};
	pthread_mutex_lock(&S.mu);
	r.kernel_id = ++S.next_kernel_id;
	r.sycl_node_id = r.kernel_id;
	pthread_mutex_unlock(&S.mu);
	device_ids(dev, r.pci_address, r.device_uuid);
	emit(PTI_VIEW_DEVICE_GPU_KERNEL, &r);
}

FAKE_PTI_EXPORT void fake_pti_copy(int dev, uint64_t queue, uint32_t corr, uint32_t memcpy_type,
                                   uint64_t bytes, uint64_t start, uint64_t end)
{
	if (!view_on(PTI_VIEW_DEVICE_GPU_MEM_COPY))
		return;
	pti_record_copy_t r = {
	    .base.kind = PTI_VIEW_DEVICE_GPU_MEM_COPY,
	    .memcpy_type = memcpy_type,
	    .mem_src = memcpy_type / 4,
	    .mem_dst = memcpy_type % 4,
	};
	SET_MEM_OP(r, dev, queue, corr, l0_names[2], bytes, start, end);
	r.device_handle = device_handle(dev);
	device_ids(dev, r.pci_address, r.device_uuid);
	emit(PTI_VIEW_DEVICE_GPU_MEM_COPY, &r);
}

FAKE_PTI_EXPORT void fake_pti_copy_p2p(int src_dev, int dst_dev, uint64_t queue, uint32_t corr,
                                       uint64_t bytes, uint64_t start, uint64_t end)
{
	if (!view_on(PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P))
		return;
	uint32_t type = PTI_VIEW_MEMCPY_TYPE(PTI_VIEW_MEMORY_TYPE_DEVICE, PTI_VIEW_MEMORY_TYPE_DEVICE);
	pti_record_copy_p2p_t r = {
	    .base.kind = PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P,
	    .memcpy_type = type,
	    .mem_src = PTI_VIEW_MEMORY_TYPE_DEVICE,
	    .mem_dst = PTI_VIEW_MEMORY_TYPE_DEVICE,
	    .src_device_handle = device_handle(src_dev),
	    .dst_device_handle = device_handle(dst_dev),
	};
	SET_MEM_OP(r, src_dev, queue, corr, l0_names[2], bytes, start, end);
	device_ids(src_dev, r.src_pci_address, r.src_uuid);
	device_ids(dst_dev, r.dst_pci_address, r.dst_uuid);
	emit(PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P, &r);
}

FAKE_PTI_EXPORT void fake_pti_fill(int dev, uint64_t queue, uint32_t corr, uint32_t mem_type, uint64_t bytes,
                                   uint64_t value, uint64_t start, uint64_t end)
{
	if (!view_on(PTI_VIEW_DEVICE_GPU_MEM_FILL))
		return;
	pti_record_fill_t r = {
	    .base.kind = PTI_VIEW_DEVICE_GPU_MEM_FILL,
	    .mem_type = mem_type,
	    .value_for_set = value,
	};
	SET_MEM_OP(r, dev, queue, corr, l0_names[3], bytes, start, end);
	r.device_handle = device_handle(dev);
	device_ids(dev, r.pci_address, r.device_uuid);
	emit(PTI_VIEW_DEVICE_GPU_MEM_FILL, &r);
}

FAKE_PTI_EXPORT void fake_pti_sync(uint32_t type, uint32_t api_id, uint32_t corr, uint64_t start,
                                   uint64_t end)
{
	if (!view_on(PTI_VIEW_DEVICE_SYNCHRONIZATION))
		return;
	pti_record_sync_t r = {
	    .base.kind = PTI_VIEW_DEVICE_SYNCHRONIZATION,
	    .synch_type = type,
	    .context_handle = context_handle(0),
	    .queue_handle = l0_queue_handle(0, 0),
	    .event_handle = 0xe0000000u + corr,
	    .start_timestamp = start,
	    .end_timestamp = end,
	    .thread_id = thread_id(),
	    .correlation_id = corr,
	    .number_wait_events = 1,
	    .api_id = api_id,
	    .api_group = PTI_API_GROUP_LEVELZERO,
	};
	emit(PTI_VIEW_DEVICE_SYNCHRONIZATION, &r);
}

FAKE_PTI_EXPORT void fake_pti_overhead(uint32_t kind, uint64_t count, uint64_t start, uint64_t end)
{
	if (!view_on(PTI_VIEW_COLLECTION_OVERHEAD))
		return;
	pti_record_overhead_t r = {
	    .base.kind = PTI_VIEW_COLLECTION_OVERHEAD,
	    .start_ns = start,
	    .end_ns = end,
	    .thread_id = thread_id(),
	    .count = count,
	    .duration_ns = end > start ? end - start : 0,
	    .kind = kind,
	};
	emit(PTI_VIEW_COLLECTION_OVERHEAD, &r);
}

FAKE_PTI_EXPORT void fake_pti_comms(const char *name, uint64_t communicator, uint64_t send, uint64_t recv,
                                    uint64_t start, uint64_t end)
{
	if (!known_view(PTI_VIEW_COMMUNICATION) || !view_on(PTI_VIEW_COMMUNICATION))
		return;
	pti_record_comms_t r = {
	    .base.kind = PTI_VIEW_COMMUNICATION,
	    .start_timestamp = start,
	    .end_timestamp = end,
	    .process_id = (uint32_t)getpid(),
	    .thread_id = thread_id(),
	    .send_size = send,
	    .recv_size = recv,
	    .communicator_id = communicator,
	    .name = intern(name),
	};
	emit(PTI_VIEW_COMMUNICATION, &r);
}

FAKE_PTI_EXPORT void fake_pti_repeat_external(int n)
{
	pthread_mutex_lock(&S.mu);
	S.repeat_external = n > 0 ? n : 0;
	pthread_mutex_unlock(&S.mu);
}

FAKE_PTI_EXPORT void fake_pti_set_not_implemented(int on)
{
	pthread_mutex_lock(&S.mu);
	S.not_implemented = on != 0;
	pthread_mutex_unlock(&S.mu);
}

FAKE_PTI_EXPORT void fake_pti_fail(const char *fn, uint32_t result, int count)
{
	if (!fn)
		return;
	pthread_mutex_lock(&S.mu);
	int slot = -1;
	for (int i = 0; i < MAX_FAIL; i++) {
		if (!strcmp(S.fail[i].fn, fn)) {
			slot = i;
			break;
		}
		if (slot < 0 && S.fail[i].count <= 0)
			slot = i;
	}
	if (slot >= 0) {
		snprintf(S.fail[slot].fn, sizeof(S.fail[slot].fn), "%s", fn);
		S.fail[slot].result = result;
		S.fail[slot].count = count > 0 && result != PTI_SUCCESS ? count : 0;
	}
	pthread_mutex_unlock(&S.mu);
}

FAKE_PTI_EXPORT void fake_pti_drop_buffers(int n)
{
	pthread_mutex_lock(&S.mu);
	S.drop_buffers = n > 0 ? n : 0;
	pthread_mutex_unlock(&S.mu);
}

#define COUNTER(name, field)                                                                                 \
	FAKE_PTI_EXPORT uint64_t name(void)                                                                  \
	{                                                                                                    \
		pthread_mutex_lock(&S.mu);                                                                   \
		uint64_t v_ = S.field;                                                                       \
		pthread_mutex_unlock(&S.mu);                                                                 \
		return v_;                                                                                   \
	}
COUNTER(fake_pti_refused_buffers, refused)
COUNTER(fake_pti_lost_records, lost)
COUNTER(fake_pti_dropped_records, dropped)
COUNTER(fake_pti_completions, completions)

FAKE_PTI_EXPORT int fake_pti_enabled(uint32_t kind)
{
	return view_on(kind);
}

FAKE_PTI_EXPORT int fake_pti_external_depth(uint32_t kind)
{
	int i = ext_index(kind);
	return i < 0 ? 0 : tl_ext_depth[i];
}

FAKE_PTI_EXPORT int fake_pti_clock_set_before_enable(void)
{
	pthread_mutex_lock(&S.mu);
	int r = S.clock != NULL && S.clock_before_enable;
	pthread_mutex_unlock(&S.mu);
	return r;
}

FAKE_PTI_EXPORT void fake_pti_reset(void)
{
	pthread_mutex_lock(&S.prod);
	if (S.cur) /* even an empty one goes back to the tool */
		complete_current();
	pthread_mutex_unlock(&S.prod);
	flush_all();
	pthread_mutex_lock(&S.prod);
	pthread_mutex_lock(&S.mu);
	S.request = NULL;
	S.complete = NULL;
	S.clock = NULL;
	memset(S.enabled, 0, sizeof(S.enabled));
	S.any_enable = S.clock_before_enable = false;
	S.not_implemented = false;
	S.devices = 2;
	memset(S.fail, 0, sizeof(S.fail));
	S.drop_buffers = S.repeat_external = 0;
	S.refused = S.lost = S.dropped = S.completions = 0;
	memset(S.recent_corr, 0, sizeof(S.recent_corr));
	S.recent_next = 0;
	S.next_corr = 0;
	pthread_mutex_unlock(&S.mu);
	pthread_mutex_unlock(&S.prod);
	memset(tl_ext_depth, 0, sizeof(tl_ext_depth));
}

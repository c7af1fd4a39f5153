/* The CUPTI backend: loading, enabling, buffers, flushing, external
 * correlation, and the backend vtable. Record conversion is in
 * cupti_convert.c. */
#define LOG_TAG "cupti"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "backends/cupti/cupti_state.h"
#include "common/config.h"
#include "common/log.h"
#include "core/capture.h"
#include "core/clock.h"

#define BUFFER_BYTES       (4u << 20)
#define STOP_FLUSH_WAIT_NS (100 * 1000000ll) /* normal flushes before the forced one */

/* CUPTI does not follow a fork; neither does GPU capture. */
static bool in_fork_child;

struct strb_cupti_state strb_cupti = {
    .pool = STRB_GPU_POOL_INIT(strb_cupti.pool),
};

/* CUPTI asks for ns: strobe's clock, scaled by its fixed nominal rate, so
 * GPU and CPU times share one time base and one map to epoch. */
static uint64_t timestamp_cb(void)
{
	return strb_clock_ticks_to_ns(strb_clock_ticks());
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*max_records = 0; /* as many as fit */
	/* Old CUPTI may crash on a refused request: the pool then gives it
	 * memory and drops the records when the buffer comes back. */
	*buffer = strb_gpu_pool_request(&strb_cupti.pool, size);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
	(void)ctx;
	(void)stream;
	(void)size;
	strb_gpu_pool_complete(&strb_cupti.pool, buffer, valid);
}

/* strobe_correlation_push/pop, forwarded to CUPTI's per-thread stacks:
 * the plain pair as CUSTOM0, the user pair as CUSTOM1. */
static bool correlation_hook(uint32_t which, const uint64_t *id)
{
	/* The library stays loaded for good, so pops may come at any time. */
	const struct strb_cupti_lib *lib = strb_cupti_load(NULL, 0);
	CUpti_ExternalCorrelationKind kind =
	    which ? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1 : CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
	if (!lib)
		return false;
	if (id)
		return strb_gpu_pool_active(&strb_cupti.pool) &&
		       lib->cuptiActivityPushExternalCorrelationId(kind, *id) == CUPTI_SUCCESS;
	uint64_t last;
	lib->cuptiActivityPopExternalCorrelationId(kind, &last);
	return true;
}

static void CUPTIAPI subscriber_cb(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void *data)
{
	/* No domain is enabled: the subscription only holds CUPTI's one slot. */
	(void)user;
	(void)domain;
	(void)cbid;
	(void)data;
}

/* CUPTI allows one subscriber per process. Holding it while collecting
 * makes another tool's presence visible, and keeps that tool from
 * silently breaking our trace (or us, its). */
static int take_subscriber_slot(char *why, size_t len)
{
	const struct strb_cupti_lib *lib = strb_cupti.lib;
	CUptiResult r;
	char holder[256] = "";
	if (lib->cuptiSubscribe_v2) {
		CUpti_SubscriberParams p = {
		    .structSize = CUpti_SubscriberParams_STRUCT_SIZE,
		    .subscriberName = "strobe",
		    .oldSubscriberName = holder,
		    .oldSubscriberSize = sizeof(holder),
		};
		r = lib->cuptiSubscribe_v2(&strb_cupti.subscriber, subscriber_cb, NULL, &p);
	} else {
		r = lib->cuptiSubscribe(&strb_cupti.subscriber, subscriber_cb, NULL);
	}
	if (r == CUPTI_SUCCESS) {
		strb_cupti.subscribed = true;
		return 0;
	}
	holder[sizeof(holder) - 1] = 0;
	if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
		snprintf(why, len, "CUPTI is in use by %s",
		         holder[0] ? holder
		                   : "another tool (Nsight Systems, Nsight Compute, a debugger or profiler)");
	else
		snprintf(why, len, "cuptiSubscribe failed: %s (no usable GPU or driver?)",
		         strb_cupti_result(r));
	return -EBUSY;
}

static void enable_kind(CUpti_ActivityKind kind)
{
	strb_cupti.kinds[strb_cupti.kind_count++] = kind;
}

/* Kinds per selected type, as libkineto enables them. */
static void choose_kinds(uint64_t mask)
{
	strb_cupti.kind_count = 0;
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMCPY)) {
		enable_kind(CUPTI_ACTIVITY_KIND_MEMCPY);
		enable_kind(CUPTI_ACTIVITY_KIND_MEMCPY2);
	}
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMSET))
		enable_kind(CUPTI_ACTIVITY_KIND_MEMSET);
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL)) {
		enable_kind(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
		/* Device limits: deviceProperties, blocks per SM, occupancy. */
		enable_kind(CUPTI_ACTIVITY_KIND_DEVICE);
	}
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_EXTERNAL_CORRELATION))
		enable_kind(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_SYNC))
		enable_kind(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
	if (mask & (STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_EVENT) |
	            STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_SYNC)))
		enable_kind(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_RUNTIME))
		enable_kind(CUPTI_ACTIVITY_KIND_RUNTIME);
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_DRIVER))
		enable_kind(CUPTI_ACTIVITY_KIND_DRIVER);
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_OVERHEAD))
		enable_kind(CUPTI_ACTIVITY_KIND_OVERHEAD);
	if (mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY)) {
		/* Allocations and frees as events (MEMORY is their lifetimes). */
		enable_kind(CUPTI_ACTIVITY_KIND_MEMORY2);
		enable_kind(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
	}
}

static uint64_t gpu_types(void)
{
	static const enum strobe_activity_type types[] = {
	    STROBE_ACTIVITY_GPU_MEMCPY,           STROBE_ACTIVITY_GPU_MEMSET,
	    STROBE_ACTIVITY_CONCURRENT_KERNEL,    STROBE_ACTIVITY_CUDA_RUNTIME,
	    STROBE_ACTIVITY_CUDA_DRIVER,          STROBE_ACTIVITY_CUDA_SYNC,
	    STROBE_ACTIVITY_CUDA_EVENT,           STROBE_ACTIVITY_OVERHEAD,
	    STROBE_ACTIVITY_EXTERNAL_CORRELATION, STROBE_ACTIVITY_GPU_USER_ANNOTATION,
	    STROBE_ACTIVITY_GPU_MEMORY,
	};
	uint64_t m = 0;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		m |= STROBE_ACTIVITY_BIT(types[i]);
	return m;
}

static void set_kinds(bool on)
{
	const struct strb_cupti_lib *lib = strb_cupti.lib;
	for (int i = 0; i < strb_cupti.kind_count; i++) {
		CUptiResult r = on ? lib->cuptiActivityEnable(strb_cupti.kinds[i])
		                   : lib->cuptiActivityDisable(strb_cupti.kinds[i]);
		if (r != CUPTI_SUCCESS && on)
			LOGW("cuptiActivityEnable(kind %d) failed: %s", (int)strb_cupti.kinds[i],
			     strb_cupti_result(r));
	}
}

/* Noisy calls switched off at the source, as libkineto does. */
static void filter_noisy_apis(void)
{
	const struct strb_cupti_lib *lib = strb_cupti.lib;
	if (lib->cuptiActivityEnableRuntimeApi)
		lib->cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, 0);
	if (lib->cuptiActivityEnableDriverApi) {
		lib->cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute, 0);
		lib->cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState, 0);
		lib->cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, 0);
	}
}

static void release(void)
{
	struct strb_cupti_state *s = &strb_cupti;
	if (!s->lib)
		return;
	if (strb_gpu_pool_active(&s->pool)) {
		set_kinds(false);
		/* Hand back what CUPTI still holds so its buffers are not leaked. */
		strb_gpu_pool_set_active(&s->pool, false);
		s->lib->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	}
	strb_gpu_pool_free(&s->pool, strb_gpu_pool_take(&s->pool));
	if (s->subscribed) {
		s->lib->cuptiUnsubscribe(s->subscriber);
		s->subscribed = false;
	}
	s->pauses.n = 0;
	s->pauses.paused = false;
}

static int prepare(const struct strb_config *cfg, uint64_t mask, char *why, size_t len)
{
	struct strb_cupti_state *s = &strb_cupti;
	release();
	if (!(mask & gpu_types()))
		return 1; /* nothing for us to collect: not an error */
	if (in_fork_child) {
		snprintf(why, len, "CUPTI does not work in a forked child process");
		return -ENOTSUP;
	}
	if (dlsym(RTLD_DEFAULT, "libkineto_init")) {
		snprintf(why, len, "libkineto is loaded in this process and owns CUPTI");
		return -EBUSY;
	}
	s->lib = strb_cupti_load(why, len);
	if (!s->lib)
		return -ENOENT;
	if (take_subscriber_slot(why, len))
		return -EBUSY;
	const struct strb_cupti_lib *lib = s->lib;
	lib->cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
	lib->cuptiActivityRegisterTimestampCallback(timestamp_cb);
	CUptiResult r = lib->cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS) {
		snprintf(why, len, "cuptiActivityRegisterCallbacks failed: %s", strb_cupti_result(r));
		release();
		return -EIO;
	}
	/* Refusing a buffer crashed CUPTI before API version 27 (CUDA 12.9). */
	strb_gpu_pool_begin(&s->pool, cfg->max_gpu_buffer_bytes, BUFFER_BYTES, lib->version >= 27);
	s->mask = mask;
	s->show_wait_events = cfg->display_cuda_sync_wait_events;

	choose_kinds(mask);
	/* The first enable decides whether CUPTI works here at all (with no
	 * driver it fails); enabling now, before the window, also keeps its
	 * large first-enable cost out of the trace. */
	r = s->kind_count ? lib->cuptiActivityEnable(s->kinds[0]) : CUPTI_SUCCESS;
	if (r != CUPTI_SUCCESS) {
		snprintf(why, len, "cuptiActivityEnable failed: %s (no usable GPU or driver?)",
		         strb_cupti_result(r));
		s->kind_count = 0;
		strb_gpu_pool_set_active(&s->pool, false);
		release();
		return -EIO;
	}
	set_kinds(true);
	if ((mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_SYNC)) &&
	    lib->cuptiActivityEnableCudaEventDeviceTimestamps)
		lib->cuptiActivityEnableCudaEventDeviceTimestamps(1);
	filter_noisy_apis();
	strb_gpu_set_correlation_hook(STRB_GPU_CUDA, correlation_hook);
	return 0;
}

static size_t count_records(struct strb_gpu_buffer *b)
{
	size_t n = 0;
	for (; b; b = b->next) {
		CUpti_Activity *rec = NULL;
		while (strb_cupti.lib->cuptiActivityGetNextRecord(b->data, b->valid, &rec) == CUPTI_SUCCESS)
			n++;
	}
	return n;
}

static void start(void)
{
	/* What arrived before the window is warm-up: count it, drop it. */
	strb_cupti.lib->cuptiActivityFlushAll(0);
	struct strb_gpu_buffer *warm = strb_gpu_pool_take(&strb_cupti.pool);
	strb_gpu_pool_add_warmup(&strb_cupti.pool, count_records(warm));
	strb_gpu_pool_free(&strb_cupti.pool, warm);
}

static void stop(void)
{
	struct strb_cupti_state *s = &strb_cupti;
	const struct strb_cupti_lib *lib = s->lib;
	/* Normal flushes first, for a bounded time, so that records of work
	 * that is about to finish arrive complete; then a forced one. */
	struct timespec pause = {0, 5 * 1000000};
	int64_t until = strb_mono_ns_raw() + STOP_FLUSH_WAIT_NS;
	for (;;) {
		lib->cuptiActivityFlushAll(0);
		size_t left = strb_gpu_pool_outstanding(&s->pool);
		if (!left || strb_mono_ns_raw() >= until)
			break;
		nanosleep(&pause, NULL);
	}
	lib->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	set_kinds(false);
	size_t dropped = 0;
	/* Outside our lock: CUPTI takes its own, and its callbacks take ours. */
	if (lib->cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS)
		strb_gpu_pool_add_dropped(&s->pool, dropped);
}

static void toggle(bool enable)
{
	struct strb_cupti_state *s = &strb_cupti;
	if (enable == !s->pauses.paused)
		return;
	uint64_t now = timestamp_cb();
	if (!enable) {
		/* No device synchronisation: stop new records, flush what is done,
		 * and filter what still lands inside the pause at processing. */
		set_kinds(false);
		s->lib->cuptiActivityFlushAll(0);
		strb_gpu_pause(&s->pauses, false, now);
	} else {
		strb_gpu_pause(&s->pauses, true, now);
		set_kinds(true);
	}
}

static int process(struct strobe_trace *t, const struct strb_window *w)
{
	struct strb_gpu_buffer *b = strb_gpu_pool_take(&strb_cupti.pool);
	int rc = strb_cupti_convert(t, w, b);
	strb_gpu_pool_free(&strb_cupti.pool, b);
	return rc;
}

/* Flight mode: what CUPTI completed so far, decoded from a copy; its
 * buffers stay for later dumps (and rotate at the budget). */
static int flight_dump(struct strobe_trace *t, const struct strb_window *w)
{
	strb_cupti.lib->cuptiActivityFlushAll(0);
	strb_cupti.dumping = true;
	int rc = strb_gpu_pool_decode_copy(&strb_cupti.pool, strb_cupti_convert, t, w);
	strb_cupti.dumping = false;
	return rc;
}

static void atfork_child(void)
{
	/* CUPTI does not follow a fork: forget it all; capture stays off. */
	strb_gpu_pool_atfork_child(&strb_cupti.pool);
	strb_cupti.subscribed = false;
	strb_cupti.lib = NULL;
	in_fork_child = true;
	strb_gpu_set_correlation_hook(STRB_GPU_CUDA, NULL);
}

const struct strb_backend strb_cupti_backend = {
    .name = "CUDA (CUPTI)",
    .capture_key = "gpu_capture",
    .prepare = prepare,
    .start = start,
    .stop = stop,
    .toggle = toggle,
    .process = process,
    .flight_dump = flight_dump,
    .release = release,
    .atfork_child = atfork_child,
};

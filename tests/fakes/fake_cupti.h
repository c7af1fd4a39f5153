/* A fake libcupti for tests: the control API.
 *
 * libfake_cupti.so is a real shared library built from the CUDA 13 headers.
 * It exports the CUPTI functions strobe's backend calls (the activity API,
 * external correlation, callback names, the subscriber slot), with the real
 * library's semantics and return codes, so a test can load it the way the real
 * one is loaded (STROBE_CUPTI_PATH=FAKE_CUPTI_PATH) and drive it from here:
 * queue the records "the GPU" produced, make "API calls", arm failures.
 *
 * One instance per process: a test that links this library and also has the
 * backend dlopen it by its absolute path gets the same object, so the control
 * functions below act on what the backend sees.
 *
 * Model of the real library the fake follows:
 *  - A record is produced (queued) only if its kind is enabled at the time, as
 *    on a GPU; records queued while their kind is off are discarded, and
 *    disabling a kind later does not take back records already produced.
 *  - cuptiActivityFlushAll hands pending records to the consumer: request a
 *    buffer (request callback), copy records back to back, each taking
 *    fake_cupti_record_size(kind) bytes (sizeof the CUDA 13 struct, the same
 *    sizes the real libcupti.so.13 uses), respecting the buffer's size and
 *    maxNumRecords (0 = fill), then the completion callback with validSize;
 *    repeat until nothing deliverable is left. Both callbacks run on the
 *    flushing thread with no lock of the fake held.
 *  - A request callback that returns a NULL buffer rejects: every record that
 *    was waiting for a buffer is dropped and counted
 *    (cuptiActivityGetNumDroppedRecords).
 *  - A non-forced flush stops at the first incomplete record
 *    (fake_cupti_queue_incomplete); CUPTI_ACTIVITY_FLAG_FLUSH_FORCED delivers
 *    incomplete records too.
 *  - cuptiActivityGetNextRecord is a pure function of its arguments with the
 *    real return codes (MAX_LIMIT_REACHED at the end or on a truncated
 *    record, leaving *record at the last record; INVALID_KIND for a kind the
 *    real library does not walk; INVALID_PARAMETER for NULL arguments).
 *  - External correlation ids live on per-thread, per-kind stacks. An API
 *    record produced while stacks are non-empty and EXTERNAL_CORRELATION is
 *    enabled is preceded by one CUpti_ActivityExternalCorrelation record per
 *    non-empty kind, in increasing kind order (fake_cupti_api).
 *  - Every cupti* function returns CUPTI_SUCCESS unless its parameters are
 *    invalid or a failure was armed with fake_cupti_fail.
 *
 * All functions here are thread-safe; none of them calls back into the
 * consumer except fake_cupti_now and fake_cupti_fire_callback (without a lock
 * held).
 */
#ifndef STROBE_FAKE_CUPTI_H
#define STROBE_FAKE_CUPTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

#if defined(__GNUC__)
#define FAKE_CUPTI_EXPORT __attribute__((visibility("default")))
#else
#define FAKE_CUPTI_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version cuptiGetVersion reports by default (CUDA 13.0 update 1). */
#define FAKE_CUPTI_DEFAULT_VERSION 130001u

/* From CUDA 13.1 (CUPTI_API_VERSION 130100) kernel records are
 * CUpti_ActivityKernel11: Kernel10 followed by the kernel's launch priority.
 * The CUDA 13.0 headers the fake is built with do not declare it; this is its
 * layout (224 bytes, priority at byte 216). */
#define FAKE_CUPTI_VERSION_13_1 130100u
struct fake_cupti_kernel11 {
	CUpti_ActivityKernel10 k;
	int32_t priority;
	uint32_t padding;
};

/* The CUDA driver and runtime around the library.
 *
 * libkineto reads trace metadata from the CUDA runtime (cudaDriverGetVersion,
 * cudaRuntimeGetVersion, cudaGetDeviceProperties); a consumer that does not
 * link CUDA reads the same through the driver API of the libcuda.so.1 the
 * program loaded. So the fake also exports the CUDA calls of that kind, with
 * the prototypes of the toolkit's cuda.h and cuda_runtime_api.h:
 * cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet, cuDeviceGetAttribute
 * (the attributes below), cuDeviceGetName, cuDeviceTotalMem (_v2),
 * cuDeviceGetUuid (_v2) and cudaRuntimeGetVersion. A test that links the
 * fake has them in the global symbol scope, as a program linked with -lcuda
 * and -lcudart has the real ones.
 *
 * Model: the versions answer at any time (CUDA_ERROR_STUB_LIBRARY /
 * cudaErrorStubLibrary when set to 0: no driver installed). The device calls
 * return CUDA_ERROR_NOT_INITIALIZED until fake_cupti_cuda_init, which is the
 * program's first CUDA call (cuInit): it makes the devices visible and, as the
 * real CUPTI does at that moment, produces one CUpti_ActivityDevice5 record
 * per device if CUPTI_ACTIVITY_KIND_DEVICE is enabled then (never later: a
 * consumer that enables the kind after CUDA initialised gets none). */
#define FAKE_CUDA_DEFAULT_VERSION 13000 /* CUDA 13.0: driver and runtime */
#define FAKE_CUDA_MAX_DEVICES     16

/* One device, with the cudaDeviceProp names libkineto writes. */
struct fake_cuda_device {
	const char *name;          /* copied; at most 255 bytes are kept */
	uint64_t total_global_mem; /* cuDeviceTotalMem */
	int compute_major, compute_minor;
	int max_threads_per_block;         /* CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
	int max_threads_per_sm;            /* ..._MAX_THREADS_PER_MULTIPROCESSOR */
	int regs_per_block;                /* ..._MAX_REGISTERS_PER_BLOCK */
	int warp_size;                     /* ..._WARP_SIZE */
	int shared_mem_per_block;          /* ..._MAX_SHARED_MEMORY_PER_BLOCK */
	int sm_count;                      /* ..._MULTIPROCESSOR_COUNT */
	int regs_per_sm;                   /* ..._MAX_REGISTERS_PER_MULTIPROCESSOR */
	int shared_mem_per_block_optin;    /* ..._MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
	int shared_mem_per_sm;             /* ..._MAX_SHARED_MEMORY_PER_MULTIPROCESSOR */
	int max_blocks_per_sm;             /* ..._MAX_BLOCKS_PER_MULTIPROCESSOR */
	int reserved_shared_mem_per_block; /* ..._RESERVED_SHARED_MEMORY_PER_BLOCK */
	unsigned char uuid[16];            /* cuDeviceGetUuid */
};

/* What cuDriverGetVersion and cudaRuntimeGetVersion report (default
 * FAKE_CUDA_DEFAULT_VERSION each; 0: that call fails). */
FAKE_CUPTI_EXPORT void fake_cupti_set_cuda_versions(int driver, int runtime);

/* CUDA initialises with these n devices (ordinals 0..n-1, n at most
 * FAKE_CUDA_MAX_DEVICES; copied): the device calls answer from now on, and a
 * DEVICE record per device is produced if that kind is enabled. Returns the
 * number of DEVICE records produced. */
FAKE_CUPTI_EXPORT size_t fake_cupti_cuda_init(const struct fake_cuda_device *devices, size_t n);

/* Back to a freshly loaded library (and CUDA not initialised, no devices,
 * versions FAKE_CUDA_DEFAULT_VERSION): no kind enabled, all runtime/driver cbids
 * on, nothing pending, dropped count and buffer counters zero, correlation ids
 * restart at 1, version FAKE_CUPTI_DEFAULT_VERSION, no buffer or timestamp
 * callbacks, thread id type DEFAULT, attributes at their defaults, subscriber
 * slot free, nothing armed. External correlation stacks of every thread are
 * emptied. Call it between tests, with no flush in progress. */
FAKE_CUPTI_EXPORT void fake_cupti_reset(void);

/* What cuptiGetVersion reports from now on (e.g. 27 for CUDA 12.9, which
 * decides whether a consumer may reject buffers). From
 * FAKE_CUPTI_VERSION_13_1 on, kernel records are struct fake_cupti_kernel11
 * (224 bytes) in queues and buffers alike. */
FAKE_CUPTI_EXPORT void fake_cupti_set_version(uint32_t version);

/* The number of bytes a record of `kind` occupies in a buffer, i.e. sizeof
 * the CUDA 13 struct for the kind (MEMCPY 96, KERNEL 216 or 224 from 13.1,
 * RUNTIME 40, ...);
 * 0 for kinds the real library does not walk (0, legacy and unknown kinds). */
FAKE_CUPTI_EXPORT size_t fake_cupti_record_size(CUpti_ActivityKind kind);

/* Produces one activity record: `record` is a CUPTI struct built by the test
 * (kind at offset 0) and `size` must equal fake_cupti_record_size(kind), i.e.
 * pass sizeof the CUDA 13 struct (catches a test using an old struct). The
 * bytes are copied; pointers inside (kernel name, ...) stay the test's and
 * must outlive the flush that delivers the record.
 * Returns 1 if queued, 0 if not (its kind is not enabled, or it was dropped by
 * fake_cupti_drop_next), -1 if size is wrong or record is NULL. */
FAKE_CUPTI_EXPORT int fake_cupti_queue(const void *record, size_t size);

/* Same as fake_cupti_queue, but the record is "not yet complete" (its GPU work
 * is still running): a non-forced flush stops before it, a forced flush
 * delivers it. */
FAKE_CUPTI_EXPORT int fake_cupti_queue_incomplete(const void *record, size_t size);

/* Marks every pending record complete (the GPU caught up). */
FAKE_CUPTI_EXPORT void fake_cupti_complete_all(void);

/* What a CUDA runtime (kind CUPTI_ACTIVITY_KIND_RUNTIME) or driver
 * (CUPTI_ACTIVITY_KIND_DRIVER) call does on the calling thread: takes the
 * next correlation id (1, 2, ... across all threads); if `kind` is enabled and
 * `cbid` is not switched off (cuptiActivityEnable{Runtime,Driver}Api):
 * queues, when EXTERNAL_CORRELATION is enabled, one external correlation
 * record {externalKind, top of that kind's stack, correlationId} per
 * non-empty stack of this thread, then the CUpti_ActivityAPI record {cbid,
 * start, end, processId = getpid(), threadId = gettid() under
 * CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM else the low 32 bits of
 * pthread_self(), correlationId, returnValue 0}. Returns the correlation id
 * either way (0 if kind is neither RUNTIME nor DRIVER), so the test can give
 * the kernel or memcpy it launched the same id. */
FAKE_CUPTI_EXPORT uint32_t fake_cupti_api(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint64_t start,
                                          uint64_t end);

/* A timestamp in the consumer's clock: the callback registered with
 * cuptiActivityRegisterTimestampCallback (called without a lock held), else
 * CLOCK_REALTIME in ns, as cuptiGetTimestamp. Use it to stamp records. */
FAKE_CUPTI_EXPORT uint64_t fake_cupti_now(void);

/* The next n records produced (fake_cupti_queue*, and the records of
 * fake_cupti_api, of enabled kinds) are lost and counted as dropped, as when
 * CUPTI runs out of buffer space. */
FAKE_CUPTI_EXPORT void fake_cupti_drop_next(size_t n);

/* Makes the exported CUPTI function named `function_name` (e.g.
 * "cuptiActivityEnable", "cuptiActivityFlushAll", "cuptiSubscribe") return
 * `result` without doing anything on its next `times` calls (-1: until
 * fake_cupti_reset; 0: disarm). Up to 32 functions may be armed at once. */
FAKE_CUPTI_EXPORT void fake_cupti_fail(const char *function_name, CUptiResult result, int times);

/* Simulates another tool (Nsight Systems, a second profiler) holding the
 * single subscriber slot: cuptiSubscribe and cuptiSubscribe_v2 then fail with
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, and _v2 writes holder_name
 * to pParams->oldSubscriberName. NULL releases the slot (if the simulated
 * tool holds it). */
FAKE_CUPTI_EXPORT void fake_cupti_hold_subscriber(const char *holder_name);

/* Calls the subscriber's callback (cuptiSubscribe) with (userdata, domain,
 * cbid, cbdata) on the calling thread, without a lock held, if there is one
 * and that callback is enabled (cuptiEnableCallback / cuptiEnableDomain /
 * cuptiEnableAllDomains). cbdata is what CUPTI would pass: a
 * CUpti_CallbackData for the runtime and driver domains, a
 * CUpti_ResourceData for the resource domain, ... Returns whether it was
 * called. */
FAKE_CUPTI_EXPORT bool fake_cupti_fire_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                                const void *cbdata);

/* Whether the subscriber has the callback for (domain, cbid) enabled. */
FAKE_CUPTI_EXPORT bool fake_cupti_callback_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid);

/* Whether the subscriber slot is taken by a cuptiSubscribe* caller. */
FAKE_CUPTI_EXPORT bool fake_cupti_subscribed(void);

/* Whether cuptiActivityEnable(kind) is in effect. */
FAKE_CUPTI_EXPORT bool fake_cupti_kind_enabled(CUpti_ActivityKind kind);

/* Records produced and not yet delivered or dropped. */
FAKE_CUPTI_EXPORT size_t fake_cupti_pending(void);

/* Calls of the request callback so far (rejections included), and of the
 * completion callback. */
FAKE_CUPTI_EXPORT size_t fake_cupti_buffers_requested(void);
FAKE_CUPTI_EXPORT size_t fake_cupti_buffers_completed(void);

/* Records dropped and not yet collected by cuptiActivityGetNumDroppedRecords
 * (which resets the count; this does not). */
FAKE_CUPTI_EXPORT size_t fake_cupti_dropped(void);

/* Depth of the calling thread's external correlation stack for kind (0 for
 * an invalid kind). */
FAKE_CUPTI_EXPORT int fake_cupti_stack_depth(CUpti_ExternalCorrelationKind kind);

#ifdef __cplusplus
}
#endif

#endif

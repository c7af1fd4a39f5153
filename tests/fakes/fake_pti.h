/* A fake Intel PTI (libpti_view.so.1) for tests: the control API.
 *
 * The library is built twice from fake_pti.c: as the v1 record family
 * (fake_pti_v1, ptiVersion 0.16.0) and as v2 (fake_pti_v2, ptiVersion
 * 1.2.0), each a real libpti_view.so.1 in its own folder that tests load
 * through STROBE_PTI_PATH. Each exports the pti* functions strobe calls
 * (src/backends/pti/pti_abi.h has the layouts) and the fake_pti_* control
 * functions below, reached through dlsym.
 *
 * Model of the real library the fake follows:
 *  - ptiViewSetCallbacks must come before ptiViewEnable (else
 *    NO_CALLBACKS_SET). A view produces records only while enabled; an
 *    operation's records are made when it is produced (fake_pti_* call).
 *    ptiViewEnable/Disable of a kind the family has no record for (0, 2, 4,
 *    > 12, and 12 in family 1) answer BAD_ARGUMENT.
 *  - ptiViewGetNextRecord walks with the family's stride table: *rec NULL
 *    gives the first record, else it advances by the stride of (*rec)'s
 *    kind; END_OF_BUFFER past valid_bytes; BAD_ARGUMENT for a NULL rec or
 *    buffer, or a record of unknown kind.
 *  - Records are written into buffers the tool hands out from its request
 *    callback, in the loaded family's layout and stride. A buffer smaller
 *    than the family's largest record is refused: the record is dropped and
 *    counted (fake_pti_refused_buffers). A request callback that gives no
 *    buffer drops the record too. Every record dropped for want of a usable
 *    buffer counts in fake_pti_dropped_records. A refused buffer stays the
 *    tool's (PTI never hands it back).
 *  - A buffer is completed when the next record does not fit, and on
 *    ptiFlushAllViews; completion callbacks run on the fake's own thread.
 *    ptiFlushAllViews completes every buffer that holds records (partly
 *    filled) and returns only when every completion callback has returned
 *    (called from a completion callback it does not wait, which would wait
 *    for itself). Callbacks run without the fake's locks held: they may
 *    call any pti function.
 *  - Timestamps come from the callback set by ptiViewSetTimestampCallback,
 *    else from CLOCK_REALTIME (the real default). The time of an operation
 *    is given by the test in ns of whatever clock is installed; a test that
 *    wants records in the window reads the current time through
 *    fake_pti_now() (the installed clock).
 *  - External ids: per thread, per kind (CUSTOM_0..3) stacks. When a
 *    launching API call is made (fake_pti_api with a fresh correlation id)
 *    and EXTERNAL_CORRELATION is enabled, one external_correlation record per
 *    non-empty stack is written before the API record, carrying the top id.
 *    The same pair may be written again (fake_pti_repeat_external).
 *  - Records carry what the test passed; the rest is derived: device dev
 *    (0-based) gives the PCI address and UUID below (all zero for a device
 *    outside 0..n-1), context handle 0xc0000000 + dev, device handle
 *    (v2) 0xde000000 + dev, L0 queue handle 0x9000000000 + (dev << 16) +
 *    (queue & 0xffff); append = start - 2000, submit = start - 1000; copies
 *    and fills are named by their L0 call (zeCommandListAppendMemoryCopy /
 *    ...MemoryFill); thread ids are gettid(). Names (kernels, comms) are
 *    interned: the pointer in a record stays valid as long as the library.
 *  - fake_pti_set_not_implemented(1) makes every forwarded call return
 *    PTI_ERROR_NOT_IMPLEMENTED, ptiViewGetTimestamp return 0 (as the real
 *    shim does without Level Zero); ptiVersion and the *ToString functions
 *    keep working.
 *
 * All control functions are thread-safe.
 */
#ifndef STROBE_FAKE_PTI_H
#define STROBE_FAKE_PTI_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FAKE_PTI_EXPORT __attribute__((visibility("default")))
#else
#define FAKE_PTI_EXPORT
#endif

/* 1 or 2: the record family this build writes. */
FAKE_PTI_EXPORT int fake_pti_family(void);

/* Now, in the installed timestamp clock (strobe's once strobe set it). */
FAKE_PTI_EXPORT uint64_t fake_pti_now(void);

/* Devices (1..8, default 2): device d has PCI address "0000:%02x:00.0" with
 * bus 0x10 * (d + 1) and UUID bytes {0x86, 0x80, d, 0, ...}. */
FAKE_PTI_EXPORT void fake_pti_set_devices(int n);

/* A runtime (group SYCL) or driver (group LEVELZERO) call on the calling
 * thread, from start to end, with correlation id corr (0: none). api_id
 * names it through ptiViewGetApiIdName: SYCL ids 1.. and Level Zero ids
 * 1.. each have their own name table (fake_pti_api_name). Written as a
 * RUNTIME_API or DRIVER_API record when that view is enabled, preceded by
 * its external_correlation records. Returns corr. */
FAKE_PTI_EXPORT uint32_t fake_pti_api(uint32_t group, uint32_t api_id, uint32_t corr, uint64_t start,
                                      uint64_t end);
/* The name ptiViewGetApiIdName gives (NULL for an unknown id). */
FAKE_PTI_EXPORT const char *fake_pti_api_name(uint32_t group, uint32_t api_id);
/* A fresh correlation id (1, 2, ...). */
FAKE_PTI_EXPORT uint32_t fake_pti_next_corr(void);

/* GPU work on device dev, SYCL queue queue (PTI_INVALID_QUEUE_ID allowed),
 * launched by the call with correlation id corr from the calling thread. */
FAKE_PTI_EXPORT void fake_pti_kernel(int dev, uint64_t queue, uint32_t corr, const char *name, uint64_t start,
                                     uint64_t end);
/* memcpy_type: PTI_VIEW_MEMCPY_TYPE(src, dst); the name is the L0 call. */
FAKE_PTI_EXPORT void fake_pti_copy(int dev, uint64_t queue, uint32_t corr, uint32_t memcpy_type,
                                   uint64_t bytes, uint64_t start, uint64_t end);
FAKE_PTI_EXPORT void fake_pti_copy_p2p(int src_dev, int dst_dev, uint64_t queue, uint32_t corr,
                                       uint64_t bytes, uint64_t start, uint64_t end);
FAKE_PTI_EXPORT void fake_pti_fill(int dev, uint64_t queue, uint32_t corr, uint32_t mem_type, uint64_t bytes,
                                   uint64_t value, uint64_t start, uint64_t end);
/* A synchronisation (DEVICE_SYNCHRONIZATION view) on the calling thread;
 * api_id names it in group LEVELZERO. */
FAKE_PTI_EXPORT void fake_pti_sync(uint32_t type, uint32_t api_id, uint32_t corr, uint64_t start,
                                   uint64_t end);
/* Collection overhead on the calling thread. */
FAKE_PTI_EXPORT void fake_pti_overhead(uint32_t kind, uint64_t count, uint64_t start, uint64_t end);
/* A collective (COMMUNICATION view, family 2 only; v1 answers
 * BAD_ARGUMENT to its ptiViewEnable, as PTI before 0.17 does). */
FAKE_PTI_EXPORT void fake_pti_comms(const char *name, uint64_t communicator, uint64_t send, uint64_t recv,
                                    uint64_t start, uint64_t end);

/* The next n external_correlation records are each written twice. */
FAKE_PTI_EXPORT void fake_pti_repeat_external(int n);

/* Failure injection. */
FAKE_PTI_EXPORT void fake_pti_set_not_implemented(int on);
/* The next call of the pti function `fn` (e.g. "ptiViewEnable") returns
 * result; count calls in a row (0 clears). */
FAKE_PTI_EXPORT void fake_pti_fail(const char *fn, uint32_t result, int count);
/* The next n completed buffers are lost (never handed back): the records in
 * them count in fake_pti_lost_records. */
FAKE_PTI_EXPORT void fake_pti_drop_buffers(int n);

/* What the fake saw. */
FAKE_PTI_EXPORT uint64_t fake_pti_refused_buffers(void);
FAKE_PTI_EXPORT uint64_t fake_pti_lost_records(void);
/* Records dropped because the tool gave no buffer or one too small. */
FAKE_PTI_EXPORT uint64_t fake_pti_dropped_records(void);
FAKE_PTI_EXPORT int fake_pti_enabled(uint32_t kind);
/* Depth of the calling thread's external-id stack of kind (CUSTOM_0 ...). */
FAKE_PTI_EXPORT int fake_pti_external_depth(uint32_t kind);
/* Whether a timestamp callback is installed, and whether it was installed
 * before the first ptiViewEnable. */
FAKE_PTI_EXPORT int fake_pti_clock_set_before_enable(void);
/* Completion callbacks that have returned so far. */
FAKE_PTI_EXPORT uint64_t fake_pti_completions(void);

/* Back to the state of a fresh load, for tests that share one process: the
 * buffer being filled (even empty) is completed and every completion waited
 * for, then callbacks, clock, views, failures, counters, devices and the
 * calling thread's external-id stacks are cleared. Interned names stay. */
FAKE_PTI_EXPORT void fake_pti_reset(void);

#endif

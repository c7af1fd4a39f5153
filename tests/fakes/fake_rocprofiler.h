/* A fake rocprofiler-sdk for tests: the control API.
 *
 * librocprofiler-sdk.so is built twice from fake_rocprofiler.c: as ABI 0.x
 * (fake_rocprofiler_v0, version 0.5.0, SONAME librocprofiler-sdk.so.0) and as
 * 1.x (fake_rocprofiler_v1, version 1.1.0, .so.1). Each exports the
 * rocprofiler_* functions strobe calls, with that family's record layouts
 * (src/backends/rocprof/rocprof_abi.h), status numbers and buffer kinds, plus
 * the fake_rocp_* control functions below. A test dlopens one of them by path
 * and reaches both sets through dlsym, the way the backend loads the SDK.
 *
 * Model of the real SDK the fake follows:
 *  - Tool discovery happens when the runtimes start (fake_rocp_runtime_init)
 *    or on rocprofiler_force_configure: each path in ROCP_TOOL_LIBRARIES
 *    (':'-separated) is dlopened RTLD_LOCAL|RTLD_LAZY and searched for
 *    rocprofiler_configure, then the process (dlsym RTLD_DEFAULT); each
 *    distinct function is called as configure(version, runtime_version,
 *    priority, &client_id), and each non-NULL result's initialize runs.
 *    Contexts, buffers and services can be created only while an initialize
 *    runs; before and after that the SDK answers CONFIGURATION_LOCKED (15 in
 *    0.x, 16 in 1.x). A second force_configure, or one after the runtimes
 *    started, is CONFIGURATION_LOCKED too. At exit (fake_rocp_shutdown) the
 *    buffers are delivered, then each tool's finalize is called once.
 *  - A record is produced only if a context with a service for its kind and
 *    operation is active at the time it is produced (enqueue time); stopping
 *    later does not take it back.
 *  - Buffer records are delivered from the fake's own thread: when a buffer's
 *    pending bytes reach its watermark, and on rocprofiler_flush_buffer,
 *    which waits until delivery is done (from inside a buffer callback it
 *    answers BUFFER_BUSY). A record that does not fit a full buffer makes a
 *    LOSSLESS producer wait for delivery; other policies drop it. Drops are
 *    reported as drop_count of the next delivery.
 *  - Headers, payloads, kernel names and roctx messages are scribbled (0xA5)
 *    as soon as the callback that received them returns, then kept in a
 *    quarantine of the last 4096 blocks before they are freed, so a test may
 *    look at a pointer it kept and see 0xA5 where its data was.
 *  - Only DEVICE_KERNEL_SYMBOL_REGISTER callbacks are made for code objects
 *    (no CODE_OBJECT_LOAD payloads); kernel-dispatch and memory-copy kinds are
 *    buffer-only. HIP payloads hold no argument union: a tool reads arguments
 *    with rocprofiler_iterate_callback_tracing_kind_operation_args, which
 *    works only inside the callback that got the record.
 *  - Each HIP call gets a fresh internal correlation id (1, 2, ...); in 1.x,
 *    `ancestor` is the id of the enclosing HIP call on the same thread.
 *    Dispatches and copies carry the id given to them (the launching call's).
 *  - External correlation (rocprofiler_push/pop_external_correlation_id,
 *    both families): a stack per context and thread id (gettid; an id below
 *    getpid() is INVALID_ARGUMENT, an unknown context CONTEXT_NOT_FOUND);
 *    pop of an empty stack gives 0 and SUCCESS. A record's
 *    correlation_id.external is the top of its context's stack for the
 *    thread that made it: taken at ENTER for a HIP or roctx call (its
 *    callbacks and its buffer record), at production for a dispatch or a
 *    copy. A thread with an empty stack gets the top of the thread that
 *    loaded the library, as the SDK gives its threads the loading thread's.
 *  - rocprofiler_get_timestamp is CLOCK_BOOTTIME plus an offset a test sets
 *    (fake_rocp_set_suspend_ns) to model time the host spent suspended,
 *    which CLOCK_MONOTONIC does not count.
 *
 * All control functions are thread-safe. Callbacks run without the fake's
 * lock held.
 */
#ifndef STROBE_FAKE_ROCPROFILER_H
#define STROBE_FAKE_ROCPROFILER_H

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define FAKE_ROCP_EXPORT __attribute__((visibility("default")))
#else
#define FAKE_ROCP_EXPORT
#endif

/* The major version this build models (0 or 1). */
FAKE_ROCP_EXPORT int fake_rocp_abi_major(void);

/* Sets the GPU count (1..8, default 2) before the runtimes start. Agents are
 * one CPU (logical_node_type_id 0) then the GPUs, in node order. */
FAKE_ROCP_EXPORT void fake_rocp_set_gpus(int n);
/* The agent handle of GPU `ordinal`, or of the CPU when ordinal < 0. */
FAKE_ROCP_EXPORT uint64_t fake_rocp_agent(int ordinal);

/* What HIP/HSA initialisation does: discovers and initialises the tools.
 * Returns how many tools initialised (0 when already configured). */
FAKE_ROCP_EXPORT int fake_rocp_runtime_init(void);
/* What the SDK does at exit (and this library's destructor does): deliver
 * what the buffers hold, call each tool's finalize once, stop the delivery
 * thread. Later calls do nothing. */
FAKE_ROCP_EXPORT void fake_rocp_shutdown(void);

/* Makes every later call of the rocprofiler_* function `fn` return
 * `status` (0 clears it). */
FAKE_ROCP_EXPORT void fake_rocp_fail(const char *fn, int32_t status);

/* The host spent `ns` suspended: the SDK's clock runs that far ahead of
 * CLOCK_MONOTONIC. */
FAKE_ROCP_EXPORT void fake_rocp_set_suspend_ns(uint64_t ns);
/* rocprofiler_get_timestamp's clock, for record times. */
FAKE_ROCP_EXPORT uint64_t fake_rocp_now(void);

/* Loads a code object on GPU `ordinal` with these kernel symbols: one
 * CODE_OBJECT / DEVICE_KERNEL_SYMBOL_REGISTER LOAD callback per symbol on the
 * calling thread. Kernel ids are written to ids[i]. Returns the code object
 * id. */
FAKE_ROCP_EXPORT uint64_t fake_rocp_load_code_object(int ordinal, const char *const *names, size_t n,
                                                     uint64_t *ids);
/* UNLOAD callbacks for its symbols; afterwards the names are gone. */
FAKE_ROCP_EXPORT void fake_rocp_unload_code_object(uint64_t code_object_id);

/* One argument of a HIP call, as iterate_callback_tracing_kind_operation_args
 * reports it. */
struct fake_rocp_arg {
	const char *name;
	const char *type;
	const char *value;
};

/* Body of a HIP call: runs between ENTER and EXIT with the call's id. */
typedef void (*fake_rocp_body_fn)(uint64_t correlation_id, void *arg);

/* A HIP runtime call named `op` (must be in the fake's HIP table): ENTER
 * callbacks, body, EXIT callbacks, and a HIP_RUNTIME_API buffer record.
 * Returns the call's correlation id, 0 for an unknown name. */
FAKE_ROCP_EXPORT uint64_t fake_rocp_hip_call(const char *op, const struct fake_rocp_arg *args, size_t nargs,
                                             fake_rocp_body_fn body, void *body_arg);
/* The operation id of a HIP call in this build's table, -1 if unknown. */
FAKE_ROCP_EXPORT int32_t fake_rocp_hip_op(const char *name);

struct fake_rocp_dispatch {
	uint64_t correlation_id; /* the launching call's */
	int gpu;                 /* ordinal */
	uint64_t queue;          /* HSA queue handle; streams may share one */
	uint64_t kernel_id;
	uint32_t grid[3];      /* total work-items */
	uint32_t workgroup[3]; /* threads per workgroup */
	uint32_t lds_bytes;
	uint32_t scratch_bytes;
	uint64_t start, end; /* SDK clock */
};
/* Produces a KERNEL_DISPATCH record. Returns 0, or -1 if no active context
 * traces dispatches. */
FAKE_ROCP_EXPORT int fake_rocp_dispatch(const struct fake_rocp_dispatch *d);

struct fake_rocp_copy {
	uint64_t correlation_id;
	int32_t direction;    /* ROCP_MEMORY_COPY_* */
	int src_gpu, dst_gpu; /* ordinals; < 0 = the CPU */
	uint64_t bytes;
	uint64_t src_address, dst_address;
	uint64_t start, end;
};
/* Produces a MEMORY_COPY record. Returns 0 or -1 as fake_rocp_dispatch. */
FAKE_ROCP_EXPORT int fake_rocp_copy(const struct fake_rocp_copy *c);

/* roctx on the calling thread: MARKER_CORE_API callbacks (ENTER/EXIT, the
 * message in the payload) and buffer records. push returns the new depth,
 * pop the depth before popping (-1 when empty, as roctx does). */
FAKE_ROCP_EXPORT void fake_rocp_roctx_mark(const char *message);
FAKE_ROCP_EXPORT int fake_rocp_roctx_push(const char *message);
FAKE_ROCP_EXPORT int fake_rocp_roctx_pop(void);
/* roctxRangeStartA / roctxRangeStop: a range any thread may stop. start
 * returns the range id (1, 2, ...; the payload's retval in the EXIT
 * callback, 0 in ENTER as for every roctx call); stop passes it as the
 * payload's argument. */
FAKE_ROCP_EXPORT uint64_t fake_rocp_roctx_start(const char *message);
FAKE_ROCP_EXPORT void fake_rocp_roctx_stop(uint64_t id);

/* `n` records were lost: every buffer reports them in its next delivery's
 * drop_count. */
FAKE_ROCP_EXPORT void fake_rocp_drop(uint64_t n);

/* Every buffer delivers when its pending bytes reach `bytes` (1: each
 * record as soon as it is produced); 0 restores the watermark the tool
 * asked for. Flushes deliver as before. */
FAKE_ROCP_EXPORT void fake_rocp_set_watermark(size_t bytes);

/* External ids on thread tid's stacks, all contexts together. */
FAKE_ROCP_EXPORT size_t fake_rocp_external_depth(uint64_t tid);

/* Buffer deliveries so far (all buffers). */
FAKE_ROCP_EXPORT uint64_t fake_rocp_deliveries(void);

#endif

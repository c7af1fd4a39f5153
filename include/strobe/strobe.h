/*
 * strobe: a low-overhead GPU and CPU timeline profiler.
 *
 * This header is the reference manual of the C API. The rules that hold for
 * every function are stated once here:
 *
 *  - Status: functions that can fail return int: 0 is success, a negative
 *    errno value (-EINVAL, -EBUSY, -EALREADY, -ENOSPC, -ENOTSUP, -EPERM, ...)
 *    or one of strobe's own codes (below -4000, enum strobe_status) is an
 *    error. strobe_status_string() names any status; strobe_last_error()
 *    says in words what went wrong on the calling thread.
 *  - Ownership: strings passed in are copied before the call returns, so
 *    callers may pass stack buffers. Pointers handed out are borrowed from
 *    the object they came from and live as long as it does.
 *  - Threads: every function may be called from any thread unless its
 *    comment says otherwise. Control functions (prepare/start/stop, init,
 *    shutdown, registrations) are serialised internally.
 *  - Sized structs: strobe_init_opts, strobe_activity, strobe_resource,
 *    strobe_output_ops and strobe_profiler_ops start with `size_t size` and
 *    may grow at their end in later versions. Fill one with STROBE_OPTS
 *    (below), which sets size to sizeof(struct ...) and zeroes every field
 *    not named; zero is each field's default. The library reads only the
 *    fields the caller's size covers and takes the default for the rest, so
 *    a program built against an older header keeps working; structs the
 *    library hands out carry its own size, to check before reading a field
 *    newer than the program's header. Structs without a size field cannot
 *    grow and are fixed for this major version: struct strobe_arg (and its
 *    value union). strobe_trace is opaque.
 *  - Callbacks (types ending in _cb) take a user_arg passed back unchanged;
 *    each one's comment says on which thread it runs and whether it may
 *    block.
 *  - The library never exits, aborts, or writes to stdout. Diagnostics go to
 *    stderr at the level set by STROBE_LOG_LEVEL (or KINETO_LOG_LEVEL) and
 *    to log observers.
 *
 * Timestamps crossing the API are nanoseconds since the Unix epoch.
 */
#ifndef STROBE_STROBE_H
#define STROBE_STROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(STROBE_BUILDING_LIBRARY) && defined(__GNUC__)
#define STROBE_API __attribute__((visibility("default")))
#else
#define STROBE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Initialises a sized struct: size = sizeof(struct type), the fields named
 * by the designated initialisers that follow, every other field zero (its
 * default). For a variable or a compound literal, in C and C++ (C++ needs
 * the designators in declaration order, as C++20 does):
 *
 *	struct strobe_init_opts opts = STROBE_OPTS(strobe_init_opts, .config_path = "my.conf");
 *	strobe_init(&opts);
 *	static const struct strobe_output_ops ops = STROBE_OPTS(strobe_output_ops, .write = my_write);
 *
 * (g++ 12 warns under -Wextra, in C++ only, that the fields left out
 * are not initialised; they are, to zero.) */
#define STROBE_OPTS(type, ...)                                                                               \
	{                                                                                                    \
		.size = sizeof(struct type), __VA_ARGS__                                                     \
	}

#define STROBE_VERSION_MAJOR  0
#define STROBE_VERSION_MINOR  1
#define STROBE_VERSION_PATCH  0
#define STROBE_VERSION_STRING "0.1.0"

/* Version of the library actually loaded, as "MAJOR.MINOR.PATCH". */
STROBE_API const char *strobe_version(void);

/* ------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------ */

/* strobe's own status codes; everything else is a negative errno. */
enum strobe_status {
	STROBE_OK = 0,
	STROBE_E_CONFIG = -4001,    /* config text refused (see strobe_last_error) */
	STROBE_E_STATE = -4002,     /* call not valid in the current trace state */
	STROBE_E_NOT_INIT = -4003,  /* strobe_init() has not been called */
	STROBE_E_NO_WRITER = -4004, /* no output registered for the URL */
	STROBE_E_BAD_JSON = -4005,  /* text given as JSON does not parse */
	STROBE_E_IO = -4006,        /* writing a trace file failed */
};

/* Name of a status: "OK", "Invalid argument", "config refused", ...
 * Never NULL; unknown values give "unknown status". */
STROBE_API const char *strobe_status_string(int status);

/* The message of the last error on the calling thread, or "" when none.
 * Valid until the next failing call on the same thread. */
STROBE_API const char *strobe_last_error(void);

/* ------------------------------------------------------------------------
 * Lifecycle
 * ------------------------------------------------------------------------ */

/* strobe_init_opts.log_threshold for a fixed threshold (an enum
 * strobe_log_level): the level plus one, so that 0 stays the default. */
#define STROBE_INIT_LOG_LEVEL(level) ((int)(level) + 1)

struct strobe_init_opts {
	size_t size; /* sizeof(struct strobe_init_opts); STROBE_OPTS sets it */
	/* 0 (default): the log threshold comes from the environment
	 * (STROBE_LOG_LEVEL, else KINETO_LOG_LEVEL, else WARNING);
	 * STROBE_INIT_LOG_LEVEL(STROBE_LOG_INFO) sets it instead. */
	int log_threshold;
	/* Base config file; NULL (default) = $STROBE_CONFIG, $KINETO_CONFIG,
	 * then /etc/libkineto.conf. */
	const char *config_path;
};

/* Initialises the library. NULL opts means defaults and environment.
 * Idempotent: later calls return 0 and change nothing. Capture calls made
 * before init are ignored at the cost of one relaxed load. */
STROBE_API int strobe_init(const struct strobe_init_opts *opts);

/* Stops any trace in progress, unregisters nothing, and releases capture
 * buffers. A synchronous trace's data is discarded; an on-demand trace that
 * is collecting is written to its file first, as at exit (see
 * docs/on-demand.md). strobe_init() may be called again. Must not race with
 * capture calls that expect to be recorded. */
STROBE_API void strobe_shutdown(void);

/* ------------------------------------------------------------------------
 * Activity types: libkineto's integers and names (ActivityType.h); strobe's
 * own types start at 48 so 29..47 stay free for libkineto.
 * ------------------------------------------------------------------------ */

enum strobe_activity_type {
	STROBE_ACTIVITY_CPU_OP = 0,               /* "cpu_op" */
	STROBE_ACTIVITY_USER_ANNOTATION = 1,      /* "user_annotation" */
	STROBE_ACTIVITY_GPU_USER_ANNOTATION = 2,  /* "gpu_user_annotation" */
	STROBE_ACTIVITY_GPU_MEMCPY = 3,           /* "gpu_memcpy" */
	STROBE_ACTIVITY_GPU_MEMSET = 4,           /* "gpu_memset" */
	STROBE_ACTIVITY_CONCURRENT_KERNEL = 5,    /* "kernel" */
	STROBE_ACTIVITY_EXTERNAL_CORRELATION = 6, /* "external_correlation" */
	STROBE_ACTIVITY_CUDA_RUNTIME = 7,         /* "cuda_runtime" */
	STROBE_ACTIVITY_CUDA_DRIVER = 8,          /* "cuda_driver" */
	STROBE_ACTIVITY_CPU_INSTANT_EVENT = 9,    /* "cpu_instant_event" */
	STROBE_ACTIVITY_PYTHON_FUNCTION = 10,     /* "python_function" */
	STROBE_ACTIVITY_OVERHEAD = 11,            /* "overhead" */
	STROBE_ACTIVITY_MTIA_RUNTIME = 12,        /* "mtia_runtime" */
	STROBE_ACTIVITY_MTIA_CCP_EVENTS = 13,     /* "mtia_ccp_events" */
	STROBE_ACTIVITY_MTIA_INSIGHT = 14,        /* "mtia_insight" */
	STROBE_ACTIVITY_CUDA_SYNC = 15,           /* "cuda_sync" */
	STROBE_ACTIVITY_CUDA_EVENT = 16,          /* "cuda_event" */
	STROBE_ACTIVITY_MTIA_COUNTERS = 17,       /* "mtia_counters" */
	STROBE_ACTIVITY_GLOW_RUNTIME = 18,        /* "glow_runtime"; first optional type */
	STROBE_ACTIVITY_CUDA_PROFILER_RANGE = 19, /* "cuda_profiler_range" */
	STROBE_ACTIVITY_HPU_OP = 20,              /* "hpu_op" */
	STROBE_ACTIVITY_XPU_RUNTIME = 21,         /* "xpu_runtime" */
	STROBE_ACTIVITY_XPU_DRIVER = 22,          /* "xpu_driver" */
	STROBE_ACTIVITY_COLLECTIVE_COMM = 23,     /* "collective_comm" */
	STROBE_ACTIVITY_PRIVATEUSE1_RUNTIME = 24, /* "privateuse1_runtime" */
	STROBE_ACTIVITY_PRIVATEUSE1_DRIVER = 25,  /* "privateuse1_driver" */
	STROBE_ACTIVITY_XPU_SCOPE_PROFILER = 26,  /* "xpu_scope_profiler" */
	STROBE_ACTIVITY_XPU_SYNC = 27,            /* "xpu_sync" */
	STROBE_ACTIVITY_HARDWARE_COUNTERS = 28,   /* "hardware_counters" */
	STROBE_ACTIVITY_KINETO_COUNT = 29,        /* libkineto's ENUM_COUNT */

	STROBE_ACTIVITY_CPU_COUNTER = 48, /* "cpu_counter": strobe_counter() */
	/* Selection-only types (not in the default mask): GPU allocations and
	 * frees ("[memory]" instants and a "GPU memory allocated (bytes)"
	 * counter per device), and sampled device counters (NVML). Their
	 * events are written as cpu_instant_event / hardware_counters, as
	 * libkineto writes memory events and counters. */
	STROBE_ACTIVITY_GPU_MEMORY = 49,   /* "gpu_memory" */
	STROBE_ACTIVITY_GPU_COUNTERS = 50, /* "gpu_counters" */
	STROBE_ACTIVITY_TYPE_MAX = 63,     /* types fit in a 64-bit mask */
};

/* Bit of a type in an activity mask. */
#define STROBE_ACTIVITY_BIT(type) (1ull << (unsigned)(type))

/* libkineto's default set: types 0..17. strobe_prepare(0, ...) selects it,
 * plus strobe's CPU counters. */
#define STROBE_ACTIVITY_DEFAULT_MASK (((1ull << 18) - 1) | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_COUNTER))

/* The type's name ("cpu_op", "kernel", ...) or NULL if the value is not a
 * known type. */
STROBE_API const char *strobe_activity_type_name(enum strobe_activity_type type);

/* Parses a type name (exact, case-sensitive, as libkineto). Returns 0 and
 * sets *out, or -EINVAL for an unknown name. */
STROBE_API int strobe_activity_type_parse(const char *name, enum strobe_activity_type *out);

/* ------------------------------------------------------------------------
 * Activities
 * ------------------------------------------------------------------------ */

enum strobe_arg_kind {
	STROBE_ARG_I64 = 0,
	STROBE_ARG_U64 = 1,
	STROBE_ARG_F64 = 2,
	STROBE_ARG_BOOL = 3,
	STROBE_ARG_STRING = 4, /* written as a JSON string, escaped */
	STROBE_ARG_JSON = 5,   /* written verbatim; must be valid JSON */
};

/* One typed key/value pair. Has no size field: it cannot grow. */
struct strobe_arg {
	const char *key;
	enum strobe_arg_kind kind;
	union {
		int64_t i64;
		uint64_t u64;
		double f64;
		bool b;
		const char *str; /* STROBE_ARG_STRING and STROBE_ARG_JSON */
	} value;
};

/* Activity flags. */
#define STROBE_ACTIVITY_UNFINISHED 0x1u /* range still open at stop; end = stop time */
#define STROBE_ACTIVITY_FLOW_START 0x2u /* this activity starts its flow (else ends it) */

/* Flow kinds (arrows between activities), libkineto's values. */
enum strobe_flow_kind {
	STROBE_FLOW_NONE = 0,
	STROBE_FLOW_FWDBWD = 1,        /* "fwdbwd": forward op to its backward op */
	STROBE_FLOW_ASYNC_CPU_GPU = 2, /* "ac2g": launching call to GPU work */
};

/* A finished activity. In a trace, device is the JSON pid (a process id for
 * CPU work, a GPU index for GPU work) and resource the JSON tid (a system
 * thread id or a stream). id is the activity's own correlation id (for ops:
 * its External id); linked_id is the id of the op it belongs to (GPU work
 * and launch calls), 0 when none. */
struct strobe_activity {
	size_t size; /* sizeof(struct strobe_activity) */
	enum strobe_activity_type type;
	uint32_t flags; /* STROBE_ACTIVITY_* flags */
	const char *name;
	int64_t start_ns; /* epoch ns */
	int64_t end_ns;   /* epoch ns; == start_ns for instants and counters */
	int64_t device;
	int64_t resource;
	uint64_t id;
	uint64_t linked_id;
	uint64_t flow_id; /* 0 = no flow */
	enum strobe_flow_kind flow_kind;
	const struct strobe_arg *args;
	size_t arg_count;
	/* The category shown in the trace (JSON "cat"); NULL = the type's name.
	 * strobe sets it for NVTX domains; at most 255 bytes. */
	const char *category;
};

/* Called once per activity. Return 0 to go on, anything else to stop the
 * walk (the value is returned by the walking function). Runs on the thread
 * that called strobe_trace_foreach (or, as a profiler's emit, on the thread
 * that called collect); it may block, and may call any strobe function but
 * strobe_trace_destroy on the trace being walked. */
typedef int (*strobe_activity_cb)(const struct strobe_activity *activity, void *user_arg);

/* ------------------------------------------------------------------------
 * Synchronous tracing
 * ------------------------------------------------------------------------ */

/* Configures a trace. activity_mask selects types (STROBE_ACTIVITY_BIT);
 * 0 means ACTIVITY_TYPES from the config, else libkineto's default set. An
 * explicit mask beats ACTIVITY_TYPES. config is libkineto config text
 * (KEY=VALUE lines, see docs/config.md) layered over the base config file;
 * NULL or "" uses the base config alone. Any bad line refuses the whole
 * request with STROBE_E_CONFIG and a message naming the line; nothing is
 * half-applied. A prepared or running trace is replaced (its data is
 * discarded). Errors: STROBE_E_NOT_INIT, STROBE_E_CONFIG. */
STROBE_API int strobe_prepare(uint64_t activity_mask, const char *config);

/* Opens the capture window. Errors: STROBE_E_STATE when no trace is
 * prepared (-EALREADY when it is already running). */
STROBE_API int strobe_start(void);

/* Closes the window, processes what was captured on the calling thread and
 * hands the trace to *out (the caller owns it: strobe_trace_destroy). out
 * may be NULL to discard the trace. Ranges still open are closed at stop
 * time and flagged STROBE_ACTIVITY_UNFINISHED. Errors: STROBE_E_STATE when
 * no trace is running, -ENOMEM. */
typedef struct strobe_trace strobe_trace;
STROBE_API int strobe_stop(strobe_trace **out);

/* Pauses (false) or resumes (true) collection of device activity and of
 * child profilers in the running trace. CPU events keep being recorded, as
 * in libkineto. Errors: STROBE_E_STATE when no trace is running. */
STROBE_API int strobe_toggle_collection(bool enable);

/* True while a capture window is open. */
STROBE_API bool strobe_is_tracing(void);

/* ------------------------------------------------------------------------
 * On-demand (asynchronous) tracing
 *
 * A process that called strobe_init can be traced while it runs: by config
 * text from strobe_schedule(), by the dynolog daemon or `strobe trigger`
 * (polled by strobe's service thread), or by a signal (STROBE_TRIGGER_SIGNAL,
 * default SIGUSR2). Requests are time-based (PROFILE_START_TIME, warm-up,
 * ACTIVITIES_DURATION_MSECS) or iteration-based (PROFILE_START_ITERATION,
 * ACTIVITIES_WARMUP_ITERATIONS, ACTIVITIES_ITERATIONS, round-up), counted by
 * strobe_step(). One request may be pending; others are refused while one
 * is pending or running, and a strobe_prepare() pre-empts them. The trace
 * is processed and written (to ACTIVITIES_LOG_FILE with "_<pid>" inserted)
 * on strobe's service thread. See docs/on-demand.md.
 * ------------------------------------------------------------------------ */

/* Schedules an on-demand trace from libkineto config text. Errors:
 * STROBE_E_NOT_INIT, STROBE_E_CONFIG (bad text, message names the line),
 * -EBUSY (a trace is pending or running), -ENOTSUP (PROFILE_MEMORY),
 * -EINVAL (nothing to trigger, or iterations without strobe_step). */
STROBE_API int strobe_schedule(const char *config);

/* Marks one iteration of the application's main loop, for iteration-based
 * requests and the flight recorder's hang watchdog. While tracing, the
 * stretch between two calls is written as a user_annotation range
 * "ProfilerStep#N" (N counts the calls), which strobe summary and report
 * read as a step, unless the trace has ProfilerStep ranges of the
 * program's own. Cheap (a lock and a compare when nothing is scheduled);
 * never waits for trace processing. Call it from one thread. */
STROBE_API void strobe_step(void);

/* Hears where each finished on-demand trace was written (path; status 0
 * or the error), e.g. to upload it. Called on strobe's service thread; it
 * may block briefly (the service thread does nothing else meanwhile) and
 * must not call strobe_shutdown, which waits for that thread. NULL removes
 * it. Returns 0. */
typedef void (*strobe_trace_written_cb)(const char *path, int status, void *user_arg);
STROBE_API int strobe_set_trace_callback(strobe_trace_written_cb cb, void *user_arg);

/* ------------------------------------------------------------------------
 * Traces
 * ------------------------------------------------------------------------ */

/* Writes the trace. url's protocol picks the writer ("file://",
 * "perfetto://" for Perfetto protobuf whatever the name, or one registered
 * with strobe_register_output); a plain path (and "file://") picks by
 * suffix: ".json" Chrome-trace JSON, ".json.gz" gzip (level from
 * STROBE_GZIP_LEVEL, default 1), ".json.zst" zstd, ".pftrace" or
 * ".perfetto-trace" Perfetto protobuf (docs/output-format.md); other
 * suffixes write plain JSON. Files are written to a temporary name and renamed, so a
 * failure (unwritable directory, full disk) leaves no partial file and
 * returns STROBE_E_IO with the reason; a replaced file keeps its owner and
 * mode, symlinks are followed, and devices, FIFOs, /dev/stdout and hard-linked
 * files are written in place (docs/output-format.md). Errors: -EINVAL, STROBE_E_NO_WRITER,
 * STROBE_E_IO. Thread-safe for concurrent saves of the same trace. */
STROBE_API int strobe_trace_save(const strobe_trace *trace, const char *url);

/* Number of activities in the trace (0 for NULL). */
STROBE_API size_t strobe_trace_activity_count(const strobe_trace *trace);

/* Calls cb for every activity, per thread in start order. Activities and
 * their strings are borrowed until the trace is destroyed. Returns 0, the
 * callback's non-zero value, or -EINVAL. */
STROBE_API int strobe_trace_foreach(const strobe_trace *trace, strobe_activity_cb cb, void *user_arg);

/* Frees the trace. NULL is allowed. */
STROBE_API void strobe_trace_destroy(strobe_trace *trace);

/* ------------------------------------------------------------------------
 * CPU events: the hot path
 *
 * When no trace is running each call costs one relaxed atomic load. While
 * tracing, a call writes only to the calling thread's buffer: no lock, no
 * shared atomic, no system call, no allocation after the thread's first
 * event. Names are copied (up to 1023 bytes; longer names are truncated
 * and counted). Events beyond ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB are dropped
 * and counted in the trace metadata.
 * ------------------------------------------------------------------------ */

/* Opens a user_annotation range on the calling thread. */
STROBE_API void strobe_range_push(const char *name);
/* Closes the innermost range opened by strobe_range_push on the calling
 * thread. Ranges and ops nest separately: strobe_op_pop closes ops. */
STROBE_API void strobe_range_pop(void);

/* Opens a cpu_op range and returns its id (its "External id"; unique in
 * the process, below 2^53), or 0 when no trace is running. GPU work
 * launched inside the op links to it. */
STROBE_API uint64_t strobe_op_push(const char *name);
/* Closes the innermost op. */
STROBE_API void strobe_op_pop(void);

/* A cpu_instant_event at the current time. */
STROBE_API void strobe_instant(const char *name);

/* A sample of the counter `name` (a "C" event in the JSON). Non-finite
 * values are dropped and counted. */
STROBE_API void strobe_counter(const char *name, double value);

/* Records a complete activity with the caller's own timestamps (epoch ns,
 * e.g. from strobe_now_ns) and args; everything is copied. device 0 means
 * this process; resource 0 means the calling thread. Recorded only while a
 * trace is running and its type is selected. Errors: -EINVAL for a NULL or
 * malformed activity (end before start, args with NULL keys, an unknown
 * type), STROBE_E_BAD_JSON for a JSON arg that does not parse, STROBE_E_STATE when no trace is
 * running, -ENOSPC when the buffer budget is exhausted (counted). */
STROBE_API int strobe_record(const struct strobe_activity *activity);

/* The current time in epoch ns, in the same time base as the trace. */
STROBE_API uint64_t strobe_now_ns(void);

/* ------------------------------------------------------------------------
 * Flight recorder: capture always on, into per-thread rings bounded by a
 * memory budget (each thread recycles its own oldest events), and the last
 * seconds written as a normal trace when asked (strobe_flight_dump,
 * `strobe trigger --dump`), when the program stops calling strobe_step()
 * for hang_after_ns, or at exit. Ranges still open at a dump are written
 * from where they began, with "finished": false, however old they are.
 * GPU records are kept too, their buffers rotating within a quarter of the
 * budget. While it runs, other traces are refused (-EBUSY).
 * STROBE_FLIGHT=<duration> in the environment starts it at strobe_init
 * (docs/flight.md).
 * ------------------------------------------------------------------------ */

struct strobe_flight_opts {
	size_t size;            /* sizeof(struct strobe_flight_opts) */
	const char *output;     /* dumps go beside it: run.json.gz -> run.1.json.gz, run.2.json.gz, ...
	                         * (NULL: strobe-flight-PID.json.gz in the working directory) */
	uint64_t window_ns;     /* a dump holds the last window_ns (0: 30 s) */
	uint64_t memory_bytes;  /* CPU rings and GPU buffers of the whole process (0: 256 MiB) */
	uint64_t hang_after_ns; /* dump once when strobe_step() is not called for this long, counted from
	                         * the first strobe_step() (0: never) */
	bool dump_on_exit;      /* dump at exit() and at strobe_shutdown() */
	uint64_t activity_mask; /* 0: the default set */
	/* With a GPU backend on: how often its records are decoded for a
	 * fatal-signal dump to hold them (0: every second; UINT64_MAX: never,
	 * and a crash dump holds CPU work only). */
	uint64_t gpu_snapshot_ns;
};

/* Starts the flight recorder. -EBUSY when a trace or a flight recorder is
 * running; STROBE_E_NOT_INIT before strobe_init. */
STROBE_API int strobe_flight_start(const struct strobe_flight_opts *opts);
/* Writes the window that ends now, with reason in its metadata (it ends at
 * the call, however long the dump waits for one before it); the recording
 * goes on. The file's path goes to path (when not NULL). Thread-safe. */
STROBE_API int strobe_flight_dump(const char *reason, char *path, size_t path_len);
/* Stops the flight recorder (dumping first when dump_on_exit was set). */
STROBE_API int strobe_flight_stop(void);

/* ------------------------------------------------------------------------
 * Correlation: per-thread stacks of external ids, for frameworks that have
 * their own op ids. GPU work launched while an id is on top of the stack is
 * linked to it (CUPTI external correlation, kind CUSTOM0 for the plain pair
 * and CUSTOM1 for the user pair). Cost: as the hot path above.
 * ------------------------------------------------------------------------ */

STROBE_API void strobe_correlation_push(uint64_t id);
STROBE_API void strobe_correlation_pop(void);
STROBE_API void strobe_user_correlation_push(uint64_t id);
STROBE_API void strobe_user_correlation_pop(void);

/* ------------------------------------------------------------------------
 * Inline fast path. The capture calls above are real exported functions
 * (take their address or call them through dlsym as usual); these macros
 * of the same names skip the call entirely while no trace runs, so the
 * cost when off is one relaxed load with no call. The arguments are not
 * evaluated then. Define STROBE_NO_INLINE_FAST_PATH before including this
 * header to call the functions always.
 * ------------------------------------------------------------------------ */

/* Implementation detail of the fast path: the running session, 0 when
 * idle. Read only with relaxed atomic loads; never write it. Programs built
 * with the macros below reference it, so it is part of the ABI (in the
 * public version node of libstrobe.map) despite its name. */
extern STROBE_API uint32_t strobe_internal_session;

#if !defined(STROBE_NO_INLINE_FAST_PATH) && !defined(STROBE_BUILDING_LIBRARY) && defined(__GNUC__)
#define STROBE_TRACING_()                                                                                    \
	__builtin_expect(__atomic_load_n(&strobe_internal_session, __ATOMIC_RELAXED) != 0, 0)
#define strobe_range_push(name)          (STROBE_TRACING_() ? strobe_range_push(name) : (void)0)
#define strobe_range_pop()               (STROBE_TRACING_() ? strobe_range_pop() : (void)0)
#define strobe_op_push(name)             (STROBE_TRACING_() ? strobe_op_push(name) : (uint64_t)0)
#define strobe_op_pop()                  (STROBE_TRACING_() ? strobe_op_pop() : (void)0)
#define strobe_instant(name)             (STROBE_TRACING_() ? strobe_instant(name) : (void)0)
#define strobe_counter(name, value)      (STROBE_TRACING_() ? strobe_counter(name, value) : (void)0)
#define strobe_correlation_push(id)      (STROBE_TRACING_() ? strobe_correlation_push(id) : (void)0)
#define strobe_user_correlation_push(id) (STROBE_TRACING_() ? strobe_user_correlation_push(id) : (void)0)
/* The pops are always called: a push made during a trace must be popped
 * from the GPU library's stack even when the trace has ended since. */
#endif

/* ------------------------------------------------------------------------
 * Metadata: process-wide, typed, kept across traces; every trace written
 * afterwards carries it as a top-level key. Setting a key again replaces
 * it. Errors: -EINVAL (NULL or empty key, NULL value), STROBE_E_BAD_JSON,
 * -ENOMEM. Thread-safe.
 * ------------------------------------------------------------------------ */

STROBE_API int strobe_metadata_set_string(const char *key, const char *value);
STROBE_API int strobe_metadata_set_int(const char *key, int64_t value);
STROBE_API int strobe_metadata_set_double(const char *key, double value);
/* value must be one valid JSON value; it is written verbatim. */
STROBE_API int strobe_metadata_set_json(const char *key, const char *json);
/* Removes a key; -ENOENT when it was not set. */
STROBE_API int strobe_metadata_remove(const char *key);

/* Says which rank of a distributed job this process is, for every trace
 * written afterwards (the "distributedInfo" object, docs/output-format.md).
 * -1 leaves a value unknown; a known value beats what the launcher's
 * environment says (RANK, LOCAL_RANK, WORLD_SIZE, SLURM_PROCID, ...), an
 * unknown one leaves the environment's. strobe_set_rank(-1, -1, -1) goes
 * back to the environment alone. Process-wide, kept across traces;
 * thread-safe (a trace processed while another thread sets the rank may
 * carry some old and some new values). Errors: -EINVAL for values below -1,
 * a world size of 0, or a rank not below the world size. */
STROBE_API int strobe_set_rank(int64_t rank, int64_t local_rank, int64_t world_size);

/* Names the calling thread's row in traces (up to 1023 bytes, longer
 * names are truncated; the kernel's 15-byte thread name is not touched).
 * Errors: -EINVAL for NULL. */
STROBE_API int strobe_thread_set_name(const char *name);

/* ------------------------------------------------------------------------
 * Logging
 * ------------------------------------------------------------------------ */

/* libkineto's severities. */
enum strobe_log_level {
	STROBE_LOG_VERBOSE = 0,
	STROBE_LOG_INFO = 1,
	STROBE_LOG_WARNING = 2,
	STROBE_LOG_STAGE = 3,
	STROBE_LOG_ERROR = 4,
};

/* Receives every message at or above the threshold, formatted without a
 * trailing newline. Called on the thread that logs, under the logging
 * lock: it must not block or call back into strobe's logging. */
typedef void (*strobe_log_cb)(enum strobe_log_level level, const char *message, void *user_arg);

/* Adds an observer. Errors: -EINVAL, -EEXIST (same cb and user_arg),
 * -ENOSPC (16 observers at most). */
STROBE_API int strobe_log_add_observer(strobe_log_cb cb, void *user_arg);
/* Removes it; -ENOENT if it was not added. */
STROBE_API int strobe_log_remove_observer(strobe_log_cb cb, void *user_arg);
/* Sets the stderr and observer threshold. */
STROBE_API void strobe_log_set_level(enum strobe_log_level level);

#ifdef __cplusplus
}
#endif

#include "strobe/plugin.h"

#endif /* STROBE_STROBE_H */

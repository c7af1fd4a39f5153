/* The subset of rocprofiler-sdk's C ABI that strobe uses, declared in
 * strobe's own names because the SDK's headers cannot be installed where
 * strobe builds. Layouts are x86-64.
 *
 * Two ABI families exist and are chosen at run time from
 * rocprofiler_get_version():
 *  - 0.x (ROCm 6.2 .. 6.4, librocprofiler-sdk.so.0): the correlation id is
 *    {internal, external}, 16 bytes;
 *  - 1.x (ROCm 7.0 and later, librocprofiler-sdk.so.1): the correlation id of
 *    callback records and of API buffer records gains `ancestor` (24 bytes);
 *    kernel-dispatch and memory-copy records keep a 16-byte one.
 * So the callback record (passed BY VALUE to the tool's callback, hence two
 * callback pointer types) and the HIP/marker API buffer records change
 * layout; dispatch and copy records keep theirs and only grow at the end.
 *
 * Every record and payload starts with a uint64_t `size` (the SDK's sizeof),
 * which a reader compares with the size it needs before reading a field.
 * Status codes from 13 on and buffer-tracing kinds from 12 on were renumbered
 * between the families; the helpers below map them by major version. HIP
 * operation ids change with the HIP table version: look them up by name
 * (rocprofiler_iterate_callback_tracing_kind_operations +
 * rocprofiler_query_callback_tracing_kind_operation_name), never hard-code.
 *
 * Sources of the numbers (each static assert names one):
 *  [N2]  shared/reference/rocm-xpu-notes.md section 2 (the SDK's headers at
 *        VERSION 0.5.0 and at rocm-systems 1.1.0), offsets stated there;
 *  [AG]  the SDK's agent.h at 0.5/0.6 and at 1.1, which agree on the prefix
 *        up to logical_node_type_id (HSA_ENGINE_VERSION, HSA_ENGINE_ID and
 *        HSA_CAPABILITY are 32-bit unions in hsakmttypes.h);
 *  [MK]  the SDK's marker/api_args.h: the args union (16 bytes) follows size;
 *  [SV]  x86-64 SysV layout rules applied to the fields listed in [N2].
 */
#ifndef STROBE_BACKENDS_ROCPROF_ABI_H
#define STROBE_BACKENDS_ROCPROF_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ---- versions ----------------------------------------------------------- */

/* ROCPROFILER_VERSION as passed to rocprofiler_configure. */
#define ROCP_VERSION_NUMBER(major, minor, patch) ((major)*10000u + (minor)*100u + (patch))

/* ---- status codes ------------------------------------------------------- */

/* Codes 0..12 are the same in both families. */
enum {
	ROCP_STATUS_SUCCESS = 0,
	ROCP_STATUS_ERROR = 1,
	ROCP_STATUS_ERROR_CONTEXT_NOT_FOUND = 2,
	ROCP_STATUS_ERROR_BUFFER_NOT_FOUND = 3,
	ROCP_STATUS_ERROR_KIND_NOT_FOUND = 4,
	ROCP_STATUS_ERROR_OPERATION_NOT_FOUND = 5,
	ROCP_STATUS_ERROR_THREAD_NOT_FOUND = 6,
	ROCP_STATUS_ERROR_AGENT_NOT_FOUND = 7,
	ROCP_STATUS_ERROR_COUNTER_NOT_FOUND = 8,
	ROCP_STATUS_ERROR_CONTEXT_ERROR = 9,
	ROCP_STATUS_ERROR_CONTEXT_INVALID = 10,
	ROCP_STATUS_ERROR_CONTEXT_NOT_STARTED = 11,
	ROCP_STATUS_ERROR_CONTEXT_CONFLICT = 12,
};

/* Codes from 13 on, in 0.x numbering. 1.x inserted CONTEXT_ID_NOT_ZERO at 13
 * and shifted the rest by one: use rocp_status_code(). */
enum rocp_status_v0 {
	ROCP_STATUS_V0_ERROR_BUFFER_BUSY = 13,
	ROCP_STATUS_V0_ERROR_SERVICE_ALREADY_CONFIGURED = 14,
	ROCP_STATUS_V0_ERROR_CONFIGURATION_LOCKED = 15,
	ROCP_STATUS_V0_ERROR_NOT_IMPLEMENTED = 16,
	ROCP_STATUS_V0_ERROR_INCOMPATIBLE_ABI = 17,
	ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT = 18,
};
#define ROCP_STATUS_V1_ERROR_CONTEXT_ID_NOT_ZERO 13

/* The value the SDK of this major version uses for a status named by its 0.x
 * number. */
static inline int32_t rocp_status_code(uint32_t major, int32_t v0_code)
{
	return major >= 1 && v0_code >= 13 ? v0_code + 1 : v0_code;
}

/* ---- kinds and operations ---------------------------------------------- */

/* Callback-tracing kinds: the same values in 0.5 and 1.1 up to 14 [N2]. */
enum {
	ROCP_CALLBACK_NONE = 0,
	ROCP_CALLBACK_HSA_CORE_API = 1,
	ROCP_CALLBACK_HIP_RUNTIME_API = 5,
	ROCP_CALLBACK_HIP_COMPILER_API = 6,
	ROCP_CALLBACK_MARKER_CORE_API = 7,
	ROCP_CALLBACK_MARKER_CONTROL_API = 8,
	ROCP_CALLBACK_MARKER_NAME_API = 9,
	ROCP_CALLBACK_CODE_OBJECT = 10,
	ROCP_CALLBACK_SCRATCH_MEMORY = 11,
	ROCP_CALLBACK_KERNEL_DISPATCH = 12,
	ROCP_CALLBACK_MEMORY_COPY = 13,
	ROCP_CALLBACK_RCCL_API = 14,
};

/* Buffer-tracing kinds: the same values in both families up to 11 [N2]. */
enum {
	ROCP_BUFFER_NONE = 0,
	ROCP_BUFFER_HSA_CORE_API = 1,
	ROCP_BUFFER_HIP_RUNTIME_API = 5,
	ROCP_BUFFER_HIP_COMPILER_API = 6,
	ROCP_BUFFER_MARKER_CORE_API = 7,
	ROCP_BUFFER_MARKER_CONTROL_API = 8,
	ROCP_BUFFER_MARKER_NAME_API = 9,
	ROCP_BUFFER_MEMORY_COPY = 10,
	ROCP_BUFFER_KERNEL_DISPATCH = 11,
};
/* From 12 on they differ: 0.x has PAGE_MIGRATION at 12, 1.x removed it. */
#define ROCP_BUFFER_V0_PAGE_MIGRATION            12
#define ROCP_BUFFER_V0_SCRATCH_MEMORY            13
#define ROCP_BUFFER_V0_CORRELATION_ID_RETIREMENT 14
#define ROCP_BUFFER_V1_SCRATCH_MEMORY            12
#define ROCP_BUFFER_V1_CORRELATION_ID_RETIREMENT 13

/* Record-header categories. */
enum {
	ROCP_CATEGORY_NONE = 0,
	ROCP_CATEGORY_TRACING = 1,
	ROCP_CATEGORY_PC_SAMPLING = 2,
	ROCP_CATEGORY_COUNTERS = 3
};

/* Callback phases (LOAD/UNLOAD share ENTER/EXIT's values). */
enum {
	ROCP_PHASE_NONE = 0,
	ROCP_PHASE_ENTER = 1,
	ROCP_PHASE_EXIT = 2,
	ROCP_PHASE_LOAD = 1,
	ROCP_PHASE_UNLOAD = 2,
};

/* Code-object operations (1.1 adds HOST_KERNEL_SYMBOL_REGISTER 3). */
enum {
	ROCP_CODE_OBJECT_NONE = 0,
	ROCP_CODE_OBJECT_LOAD = 1,
	ROCP_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER = 2,
};

/* Memory-copy operations: the copy's direction. */
enum {
	ROCP_MEMORY_COPY_NONE = 0,
	ROCP_MEMORY_COPY_HOST_TO_HOST = 1,
	ROCP_MEMORY_COPY_HOST_TO_DEVICE = 2,
	ROCP_MEMORY_COPY_DEVICE_TO_HOST = 3,
	ROCP_MEMORY_COPY_DEVICE_TO_DEVICE = 4,
};

/* Kernel-dispatch operations (buffer records report COMPLETE). */
enum { ROCP_KERNEL_DISPATCH_NONE = 0, ROCP_KERNEL_DISPATCH_ENQUEUE = 1, ROCP_KERNEL_DISPATCH_COMPLETE = 2 };

/* roctx core operations (the MARKER_CORE_API kind). */
enum {
	ROCP_MARKER_roctxMarkA = 0,
	ROCP_MARKER_roctxRangePushA = 1,
	ROCP_MARKER_roctxRangePop = 2,
	ROCP_MARKER_roctxRangeStartA = 3,
	ROCP_MARKER_roctxRangeStop = 4,
	ROCP_MARKER_roctxGetThreadId = 5,
};

/* Buffer policies. */
enum { ROCP_BUFFER_POLICY_NONE = 0, ROCP_BUFFER_POLICY_DISCARD = 1, ROCP_BUFFER_POLICY_LOSSLESS = 2 };

/* Agent types and the version of the agent struct query_available_agents
 * hands out. */
enum { ROCP_AGENT_TYPE_NONE = 0, ROCP_AGENT_TYPE_CPU = 1, ROCP_AGENT_TYPE_GPU = 2 };
enum { ROCP_AGENT_INFO_VERSION_NONE = 0, ROCP_AGENT_INFO_VERSION_0 = 1 };

/* ---- plain types --------------------------------------------------------- */

typedef struct {
	uint64_t handle;
} rocp_context_id_t;
typedef struct {
	uint64_t handle;
} rocp_buffer_id_t;
typedef struct {
	uint64_t handle;
} rocp_agent_id_t;
typedef struct {
	uint64_t handle;
} rocp_queue_id_t;

typedef union {
	uint64_t value;
	void *ptr;
} rocp_user_data_t;

typedef struct {
	uint32_t x, y, z;
} rocp_dim3_t;

/* 0.x correlation id, also 1.x's "async" one in dispatch and copy records. */
typedef struct {
	uint64_t internal;
	rocp_user_data_t external;
} rocp_corr_v0_t;

/* 1.x correlation id of callback and API records. */
typedef struct {
	uint64_t internal;
	rocp_user_data_t external;
	uint64_t ancestor; /* internal id of the enclosing API call, 0 if none */
} rocp_corr_v1_t;

_Static_assert(sizeof(rocp_corr_v0_t) == 16, "0.x correlation id is 16 bytes [N2]");
_Static_assert(sizeof(rocp_corr_v1_t) == 24, "1.x correlation id is 24 bytes [N2]");

/* The SDK's client id; `handle` is const there (the SDK fills it). */
typedef struct {
	const char *name; /* the tool sets it in rocprofiler_configure */
	uint32_t handle;
} rocp_client_id_t;

typedef void (*rocp_client_finalize_t)(rocp_client_id_t id);

/* What rocprofiler_configure returns; versioned by size. */
typedef struct {
	size_t size;
	int (*initialize)(rocp_client_finalize_t finalize, void *tool_data);
	void (*finalize)(void *tool_data);
	void *tool_data;
} rocp_configure_result_t;

_Static_assert(sizeof(rocp_configure_result_t) == 32, "size, initialize, finalize, tool_data [N2][SV]");

/* The symbol a tool exports and the SDK looks up. */
typedef rocp_configure_result_t *(*rocp_configure_fn)(uint32_t version, const char *runtime_version,
                                                      uint32_t priority, rocp_client_id_t *id);

/* ---- callback tracing ---------------------------------------------------- */

/* The record handed BY VALUE to a callback-tracing callback, one layout per
 * correlation-id type. */
#define ROCP_CALLBACK_RECORD(corr_type)                                                                      \
	struct {                                                                                             \
		rocp_context_id_t context_id;                                                                \
		uint64_t thread_id;                                                                          \
		corr_type correlation_id;                                                                    \
		int32_t kind;                                                                                \
		int32_t operation;                                                                           \
		int32_t phase;                                                                               \
		void *payload;                                                                               \
	}
typedef ROCP_CALLBACK_RECORD(rocp_corr_v0_t) rocp_callback_record_v0_t;
typedef ROCP_CALLBACK_RECORD(rocp_corr_v1_t) rocp_callback_record_v1_t;

_Static_assert(offsetof(rocp_callback_record_v0_t, kind) == 32, "ctx 8 + tid 8 + corr 16 [N2][SV]");
_Static_assert(offsetof(rocp_callback_record_v0_t, payload) == 48, "kind, op, phase, pad [N2][SV]");
_Static_assert(sizeof(rocp_callback_record_v0_t) == 56, "0.x callback record [N2][SV]");
_Static_assert(offsetof(rocp_callback_record_v1_t, kind) == 40, "ctx 8 + tid 8 + corr 24 [N2][SV]");
_Static_assert(sizeof(rocp_callback_record_v1_t) == 64, "1.x callback record [N2][SV]");

/* user_data is per invocation: what ENTER stores, EXIT reads. */
typedef void (*rocp_callback_cb_v0_t)(rocp_callback_record_v0_t record, rocp_user_data_t *user_data,
                                      void *cb_data);
typedef void (*rocp_callback_cb_v1_t)(rocp_callback_record_v1_t record, rocp_user_data_t *user_data,
                                      void *cb_data);

/* CODE_OBJECT / DEVICE_KERNEL_SYMBOL_REGISTER payload (LOAD and UNLOAD).
 * kernel_name is the mangled symbol, valid only during the callback. */
typedef struct {
	uint64_t size;
	uint64_t kernel_id;
	uint64_t code_object_id;
	const char *kernel_name;
	uint64_t kernel_object;
	uint32_t kernarg_segment_size;
	uint32_t kernarg_segment_alignment;
	uint32_t group_segment_size;
	uint32_t private_segment_size;
	uint32_t sgpr_count;
	uint32_t arch_vgpr_count;
	uint32_t accum_vgpr_count;
} rocp_kernel_symbol_data_t;

_Static_assert(offsetof(rocp_kernel_symbol_data_t, kernel_name) == 24, "[N2][SV]");
_Static_assert(offsetof(rocp_kernel_symbol_data_t, accum_vgpr_count) == 64, "[N2][SV]");
_Static_assert(sizeof(rocp_kernel_symbol_data_t) == 72, "[N2][SV]");

/* MARKER_CORE_API payload: the message of roctxMarkA / roctxRangePushA /
 * roctxRangeStartA, or roctxRangeStop's range id, is the first member of the
 * args union, right after size; the union is 16 bytes and a retval union of 8
 * follows (roctxRangeStartA's range id, set for EXIT). The message is valid
 * only during the callback. */
typedef struct {
	uint64_t size;
	union { /* args union, first member */
		const char *message;
		uint64_t range_id; /* roctxRangeStop */
	};
	uint64_t args_rest;
	int64_t retval;
} rocp_marker_api_data_t;

_Static_assert(offsetof(rocp_marker_api_data_t, message) == 8, "args union follows size [MK]");
_Static_assert(offsetof(rocp_marker_api_data_t, retval) == 24, "16-byte args union [MK]");

/* One argument of an API call, as rocprofiler_iterate_callback_tracing_
 * kind_operation_args reports it (valid only during that call). Return 0 to
 * continue. */
typedef int (*rocp_operation_args_cb_t)(int32_t kind, int32_t operation, uint32_t arg_number,
                                        const void *arg_value_addr, int32_t arg_indirection_count,
                                        const char *arg_type, const char *arg_name, const char *arg_value_str,
                                        int32_t arg_dereference_count, void *data);

/* Kind / operation iteration callbacks: return 0 to continue. */
typedef int (*rocp_kind_cb_t)(int32_t kind, void *data);
typedef int (*rocp_kind_operation_cb_t)(int32_t kind, int32_t operation, void *data);

/* ---- buffer tracing ------------------------------------------------------ */

typedef struct {
	union {
		struct {
			uint32_t category;
			uint32_t kind;
		};
		uint64_t hash; /* category | kind << 32 */
	};
	void *payload;
} rocp_record_header_t;

_Static_assert(sizeof(rocp_record_header_t) == 16, "record header [N2]");

/* Called on an SDK thread; headers and payloads are valid only during the
 * call. drop_count: records lost since the previous delivery. */
typedef void (*rocp_buffer_cb_t)(rocp_context_id_t context, rocp_buffer_id_t buffer,
                                 rocp_record_header_t **headers, size_t num_headers, void *data,
                                 uint64_t drop_count);

typedef struct {
	uint64_t size;
	rocp_agent_id_t agent_id;
	rocp_queue_id_t queue_id;
	uint64_t kernel_id;
	uint64_t dispatch_id;
	uint32_t private_segment_size; /* scratch bytes per work-item */
	uint32_t group_segment_size;   /* LDS bytes per workgroup */
	rocp_dim3_t workgroup_size;    /* threads per workgroup */
	rocp_dim3_t grid_size;         /* TOTAL work-items: blocks = grid / workgroup */
	uint8_t reserved_padding[56];
} rocp_kernel_dispatch_info_t;

_Static_assert(sizeof(rocp_kernel_dispatch_info_t) == 128, "static_assert in the SDK [N2]");
_Static_assert(offsetof(rocp_kernel_dispatch_info_t, group_segment_size) == 44, "[N2]");
_Static_assert(offsetof(rocp_kernel_dispatch_info_t, workgroup_size) == 48, "[N2]");
_Static_assert(offsetof(rocp_kernel_dispatch_info_t, grid_size) == 60, "[N2]");

/* The head of KERNEL_DISPATCH and MEMORY_COPY buffer records, the same in
 * both families (1.x calls the correlation id "async", still 16 bytes). */
typedef struct {
	uint64_t size;
	int32_t kind;
	int32_t operation;
	rocp_corr_v0_t correlation_id;
	uint64_t thread_id;
	uint64_t start_timestamp;
	uint64_t end_timestamp;
} rocp_async_head_t;

_Static_assert(offsetof(rocp_async_head_t, correlation_id) == 16, "[N2]");
_Static_assert(offsetof(rocp_async_head_t, thread_id) == 32, "[N2]");
_Static_assert(offsetof(rocp_async_head_t, start_timestamp) == 40, "[N2]");
_Static_assert(offsetof(rocp_async_head_t, end_timestamp) == 48, "[N2]");
_Static_assert(sizeof(rocp_async_head_t) == 56, "[N2][SV]");

/* KERNEL_DISPATCH buffer record (operation COMPLETE). */
typedef struct {
	rocp_async_head_t head;
	rocp_kernel_dispatch_info_t dispatch_info;
} rocp_kernel_dispatch_record_t;

/* 1.x appends pipe_id. */
typedef struct {
	rocp_kernel_dispatch_record_t base;
	int32_t pipe_id;
} rocp_kernel_dispatch_record_v1_t;

_Static_assert(offsetof(rocp_kernel_dispatch_record_t, dispatch_info) == 56, "[N2]");
_Static_assert(sizeof(rocp_kernel_dispatch_record_t) == 184, "0.x size [N2][SV]");
_Static_assert(sizeof(rocp_kernel_dispatch_record_v1_t) == 192, "1.x size with pipe_id [N2][SV]");

/* MEMORY_COPY buffer record; the operation is the direction. */
typedef struct {
	rocp_async_head_t head;
	rocp_agent_id_t dst_agent_id;
	rocp_agent_id_t src_agent_id;
	uint64_t bytes;
} rocp_memory_copy_record_t;

/* 1.x appends the addresses. */
typedef struct {
	rocp_memory_copy_record_t base;
	uint64_t dst_address;
	uint64_t src_address;
} rocp_memory_copy_record_v1_t;

_Static_assert(offsetof(rocp_memory_copy_record_t, dst_agent_id) == 56, "[N2][SV]");
_Static_assert(offsetof(rocp_memory_copy_record_t, bytes) == 72, "[N2][SV]");
_Static_assert(sizeof(rocp_memory_copy_record_t) == 80, "0.x size [N2][SV]");
_Static_assert(sizeof(rocp_memory_copy_record_v1_t) == 96, "1.x size with addresses [N2][SV]");

/* HIP_RUNTIME_API / MARKER_CORE_API buffer records, one layout per
 * correlation-id type: thread_id comes AFTER the timestamps here. */
#define ROCP_API_RECORD(corr_type)                                                                           \
	struct {                                                                                             \
		uint64_t size;                                                                               \
		int32_t kind;                                                                                \
		int32_t operation;                                                                           \
		corr_type correlation_id;                                                                    \
		uint64_t start_timestamp;                                                                    \
		uint64_t end_timestamp;                                                                      \
		uint64_t thread_id;                                                                          \
	}
typedef ROCP_API_RECORD(rocp_corr_v0_t) rocp_api_record_v0_t;
typedef ROCP_API_RECORD(rocp_corr_v1_t) rocp_api_record_v1_t;

_Static_assert(offsetof(rocp_api_record_v0_t, start_timestamp) == 32, "[N2][SV]");
_Static_assert(sizeof(rocp_api_record_v0_t) == 56, "[N2][SV]");
_Static_assert(offsetof(rocp_api_record_v1_t, start_timestamp) == 40, "[N2][SV]");
_Static_assert(sizeof(rocp_api_record_v1_t) == 64, "[N2][SV]");

/* ---- agents -------------------------------------------------------------- */

/* The prefix of rocprofiler_agent_v0_t that strobe reads: name, type and
 * logical_node_type_id (the GPU ordinal). Pass sizeof(rocp_agent_prefix_t)
 * as agent_size: it is no larger than any released SDK's struct (the SDK
 * refuses a larger one with INCOMPATIBLE_ABI). The fields in between are
 * opaque here. */
typedef struct {
	uint64_t size;
	rocp_agent_id_t id;
	int32_t type;
	uint8_t opaque_topology[228]; /* u32 counts .. io_links pointer */
	const char *name;
	const char *vendor_name;
	const char *product_name;
	const char *model_name;
	uint32_t node_id;
	int32_t logical_node_id;
	int32_t logical_node_type_id;
	int32_t pad_;
} rocp_agent_prefix_t;

_Static_assert(offsetof(rocp_agent_prefix_t, type) == 16, "[AG]");
_Static_assert(offsetof(rocp_agent_prefix_t, name) == 248, "after mem_banks, caches, io_links [AG][SV]");
_Static_assert(offsetof(rocp_agent_prefix_t, node_id) == 280, "[AG][SV]");
_Static_assert(offsetof(rocp_agent_prefix_t, logical_node_type_id) == 288, "[AG][SV]");
_Static_assert(sizeof(rocp_agent_prefix_t) == 296, "runtime_visibility follows in the SDK [AG]");

typedef int32_t (*rocp_agents_cb_t)(int32_t version, const void **agents, size_t num_agents, void *data);

/* ---- the functions strobe dlsyms (all return a status; 0 = success) ----- */

typedef int32_t (*rocp_get_version_fn)(uint32_t *major, uint32_t *minor, uint32_t *patch);
typedef int32_t (*rocp_is_initialized_fn)(int *status);
typedef int32_t (*rocp_is_finalized_fn)(int *status);
typedef int32_t (*rocp_force_configure_fn)(rocp_configure_fn configure);
typedef int32_t (*rocp_get_timestamp_fn)(uint64_t *ns); /* CLOCK_BOOTTIME ns */
typedef int32_t (*rocp_get_thread_id_fn)(uint64_t *tid);
typedef int32_t (*rocp_create_context_fn)(rocp_context_id_t *ctx);
typedef int32_t (*rocp_context_fn)(rocp_context_id_t ctx); /* start_context, stop_context */
typedef int32_t (*rocp_context_query_fn)(rocp_context_id_t ctx, int *status); /* is_valid, is_active */
typedef int32_t (*rocp_create_buffer_fn)(rocp_context_id_t ctx, size_t size, size_t watermark, int32_t policy,
                                         rocp_buffer_cb_t cb, void *cb_data, rocp_buffer_id_t *out);
typedef int32_t (*rocp_buffer_fn)(rocp_buffer_id_t buf); /* flush_buffer, destroy_buffer */
typedef int32_t (*rocp_configure_buffer_tracing_fn)(rocp_context_id_t ctx, int32_t kind, const int32_t *ops,
                                                    size_t num_ops, rocp_buffer_id_t buf);
/* cb is a rocp_callback_cb_v0_t or _v1_t by ABI family. */
typedef int32_t (*rocp_configure_callback_tracing_fn)(rocp_context_id_t ctx, int32_t kind, const int32_t *ops,
                                                      size_t num_ops, void (*cb)(void), void *cb_data);
typedef int32_t (*rocp_query_available_agents_fn)(int32_t version, rocp_agents_cb_t cb, size_t agent_size,
                                                  void *data);
typedef int32_t (*rocp_query_kind_name_fn)(int32_t kind, const char **name, uint64_t *len);
typedef int32_t (*rocp_query_operation_name_fn)(int32_t kind, int32_t op, const char **name, uint64_t *len);
typedef int32_t (*rocp_iterate_kinds_fn)(rocp_kind_cb_t cb, void *data);
typedef int32_t (*rocp_iterate_operations_fn)(int32_t kind, rocp_kind_operation_cb_t cb, void *data);
/* record is the callback record BY VALUE: declare the v0 or v1 variant. */
typedef int32_t (*rocp_iterate_args_v0_fn)(rocp_callback_record_v0_t record, rocp_operation_args_cb_t cb,
                                           int32_t max_dereference_count, void *data);
typedef int32_t (*rocp_iterate_args_v1_fn)(rocp_callback_record_v1_t record, rocp_operation_args_cb_t cb,
                                           int32_t max_dereference_count, void *data);
typedef const char *(*rocp_get_status_string_fn)(int32_t status); /* 1.x only */
/* External correlation: a stack per context and thread (tid as
 * rocprofiler_get_thread_id gives it: gettid); a record made on that thread
 * carries the top in correlation_id.external (a thread with an empty stack
 * gets the top of the thread that loaded the SDK). Both families; push
 * refuses tid < getpid() with INVALID_ARGUMENT, pop of an empty stack gives
 * 0 and SUCCESS. */
typedef int32_t (*rocp_push_external_fn)(rocp_context_id_t ctx, uint64_t tid, rocp_user_data_t id);
typedef int32_t (*rocp_pop_external_fn)(rocp_context_id_t ctx, uint64_t tid, rocp_user_data_t *out);

#endif

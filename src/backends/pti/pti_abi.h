/* The subset of Intel PTI's C ABI (pti/pti_view.h, libpti_view.so.1) that
 * strobe uses, declared in strobe's own names: PTI's headers include Level
 * Zero's and are not installed where strobe builds. Layouts are x86-64.
 *
 * Two record families exist, chosen at run time from ptiVersion():
 *  - v1 (PTI 0.x up to 0.17): kernel 168 bytes, copy and fill 136, copy P2P
 *    168;
 *  - v2 (PTI 0.18 and 1.x): the same records grown at the end (device
 *    handle, engine ordinal and index): kernel 184, copy and fill 152, copy
 *    P2P 192.
 * The other records have one layout. Records are walked only with
 * ptiViewGetNextRecord, which knows the loaded library's strides; a v2
 * field is read only from a library that writes it (strb_pti_v2).
 *
 * Sources of the numbers (each static assert names one):
 *  [N3]  shared/reference/rocm-xpu-notes.md section 3: offsets and sizes
 *        checked with offsetof against pti-gpu's master pti_view.h;
 *  [H09] pti-gpu's sdk/include/pti/pti_view.h of PTI 0.9 (the v1 layouts of
 *        kernel, copy, copy P2P and fill, read through the search tool);
 *  [SV]  x86-64 SysV layout rules applied to the fields of [N3];
 *  [LIB] the real libpti_view.so.1 1.2.0 from PyPI's intel-pti: result
 *        names checked by tests/integration/test_pti_real.c.
 */
#ifndef STROBE_BACKENDS_PTI_ABI_H
#define STROBE_BACKENDS_PTI_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ---- results ------------------------------------------------------------ */

typedef uint32_t pti_result_t;
enum {
	PTI_SUCCESS = 0,
	PTI_STATUS_END_OF_BUFFER = 1,
	PTI_ERROR_NOT_IMPLEMENTED = 2,
	PTI_ERROR_BAD_ARGUMENT = 3,
	PTI_ERROR_NO_CALLBACKS_SET = 4,
	PTI_ERROR_EXTERNAL_ID_QUEUE_EMPTY = 5,
	PTI_ERROR_BAD_TIMESTAMP = 6,
	PTI_ERROR_BAD_API_ID = 7,
	PTI_ERROR_NO_GPU_VIEWS_ENABLED = 8,
	PTI_ERROR_DRIVER = 50,
	PTI_ERROR_TRACING_NOT_INITIALIZED = 51,
	PTI_ERROR_L0_LOCAL_PROFILING_NOT_SUPPORTED = 52,
	PTI_ERROR_INTERNAL = 200,
};

/* ---- kinds and enumerations [N3] ---------------------------------------- */

typedef uint32_t pti_view_kind_t;
enum {
	PTI_VIEW_INVALID = 0,
	PTI_VIEW_DEVICE_GPU_KERNEL = 1,
	PTI_VIEW_DEVICE_CPU_KERNEL = 2,
	PTI_VIEW_DRIVER_API = 3, /* LEVEL_ZERO_CALLS before 0.11 */
	PTI_VIEW_RESERVED = 4,
	PTI_VIEW_COLLECTION_OVERHEAD = 5,
	PTI_VIEW_RUNTIME_API = 6, /* SYCL_RUNTIME_CALLS before 0.11 */
	PTI_VIEW_EXTERNAL_CORRELATION = 7,
	PTI_VIEW_DEVICE_GPU_MEM_COPY = 8,
	PTI_VIEW_DEVICE_GPU_MEM_FILL = 9,
	PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P = 10,
	PTI_VIEW_DEVICE_SYNCHRONIZATION = 11, /* 0.12 */
	PTI_VIEW_COMMUNICATION = 12,          /* 0.17 */
};

/* Memory type: M(emory, unknown), H(ost), D(evice), S(hared). */
enum {
	PTI_VIEW_MEMORY_TYPE_MEMORY = 0,
	PTI_VIEW_MEMORY_TYPE_HOST = 1,
	PTI_VIEW_MEMORY_TYPE_DEVICE = 2,
	PTI_VIEW_MEMORY_TYPE_SHARED = 3,
};
/* Copy type: source-major, 4 * src + dst over the memory types above
 * (M2M 0 ... H2D 6, D2H 9, D2D 10 ... S2S 15). */
#define PTI_VIEW_MEMCPY_TYPE(src, dst) ((src)*4u + (dst))

enum {
	PTI_VIEW_EXTERNAL_KIND_INVALID = 0,
	PTI_VIEW_EXTERNAL_KIND_UNKNOWN = 1,
	PTI_VIEW_EXTERNAL_KIND_CUSTOM_0 = 2, /* strobe ops (strobe_correlation_push) */
	PTI_VIEW_EXTERNAL_KIND_CUSTOM_1 = 3, /* strobe ranges (strobe_user_correlation_push) */
	PTI_VIEW_EXTERNAL_KIND_CUSTOM_2 = 4,
	PTI_VIEW_EXTERNAL_KIND_CUSTOM_3 = 5,
};

enum {
	PTI_VIEW_OVERHEAD_KIND_INVALID = 0,
	PTI_VIEW_OVERHEAD_KIND_UNKNOWN = 1,
	PTI_VIEW_OVERHEAD_KIND_RESOURCE = 2,
	PTI_VIEW_OVERHEAD_KIND_BUFFER_FLUSH = 3,
	PTI_VIEW_OVERHEAD_KIND_DRIVER = 4,
	PTI_VIEW_OVERHEAD_KIND_TIME = 5,
};

typedef uint32_t pti_api_group_t;
enum {
	PTI_API_GROUP_RESERVED = 0,
	PTI_API_GROUP_LEVELZERO = 1,
	PTI_API_GROUP_OPENCL = 2,
	PTI_API_GROUP_SYCL = 3,
	PTI_API_GROUP_HYBRID_SYCL_LEVELZERO = 4,
	PTI_API_GROUP_HYBRID_SYCL_OPENCL = 5,
	PTI_API_GROUP_ALL = 0x7fffffff,
};

typedef uint32_t pti_api_class_t;
enum {
	PTI_API_CLASS_GPU_OPERATION_CORE = 1,
	PTI_API_CLASS_HOST_OPERATION_SYNCHRONIZATION = 2,
	PTI_API_CLASS_ALL = 0x7fffffff,
};

enum {
	PTI_VIEW_SYNCHRONIZATION_TYPE_UNKNOWN = 0,
	PTI_VIEW_SYNCHRONIZATION_TYPE_GPU_BARRIER_EXECUTION = 1,
	PTI_VIEW_SYNCHRONIZATION_TYPE_GPU_BARRIER_MEMORY = 2,
	PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_FENCE = 3,
	PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_EVENT = 4,
	PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_COMMAND_LIST = 5,
	PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_COMMAND_QUEUE = 6,
	PTI_VIEW_SYNCHRONIZATION_TYPE_HOST_DEVICE = 7, /* 1.0 */
};

#define PTI_MAX_DEVICE_UUID_SIZE 16
#define PTI_MAX_PCI_ADDRESS_SIZE 16
/* A record whose SYCL queue is not known (oneAPI 2024.1.1 and later). */
#define PTI_INVALID_QUEUE_ID (UINT64_MAX - 1)

/* ---- records [N3] ------------------------------------------------------- */

typedef struct {
	pti_view_kind_t kind;
} pti_record_base_t;

typedef struct {
	pti_record_base_t base;
	uint64_t queue_handle; /* ze_command_queue_handle_t */
	uint64_t context_handle;
	const char *name;
	const char *source_file_name; /* NULL when unknown */
	uint64_t source_line_number;
	uint64_t kernel_id;
	uint32_t correlation_id;
	uint32_t thread_id;
	char pci_address[PTI_MAX_PCI_ADDRESS_SIZE];
	uint8_t device_uuid[PTI_MAX_DEVICE_UUID_SIZE];
	uint64_t append_timestamp;
	uint64_t start_timestamp;
	uint64_t end_timestamp;
	uint64_t submit_timestamp;
	uint64_t sycl_task_begin_timestamp;
	uint64_t sycl_enqk_begin_timestamp;
	uint64_t sycl_node_id;
	uint64_t sycl_queue_id;
	uint32_t sycl_invocation_id;
	/* v2 only: */
	uint64_t device_handle;
	uint32_t engine_ordinal;
	uint32_t engine_index;
} pti_record_kernel_t;
#define PTI_KERNEL_V1_SIZE 168u
_Static_assert(offsetof(pti_record_kernel_t, name) == 24, "kernel _name @24 [N3][H09]");
_Static_assert(offsetof(pti_record_kernel_t, correlation_id) == 56, "kernel _correlation_id @56 [N3]");
_Static_assert(offsetof(pti_record_kernel_t, pci_address) == 64, "kernel _pci_address @64 [N3]");
_Static_assert(offsetof(pti_record_kernel_t, device_uuid) == 80, "kernel _device_uuid @80 [N3]");
_Static_assert(offsetof(pti_record_kernel_t, start_timestamp) == 104, "kernel _start @104 [N3]");
_Static_assert(offsetof(pti_record_kernel_t, sycl_queue_id) == 152, "kernel _sycl_queue_id @152 [N3]");
_Static_assert(offsetof(pti_record_kernel_t, sycl_invocation_id) == 160, "kernel invocation @160 [N3]");
_Static_assert(offsetof(pti_record_kernel_t, device_handle) == PTI_KERNEL_V1_SIZE,
               "v2 grows at the end [N3]");
_Static_assert(sizeof(pti_record_kernel_t) == 184, "kernel_v2 is 184 bytes [N3]");

typedef struct {
	pti_record_base_t base;
	uint32_t memcpy_type;
	uint32_t mem_src, mem_dst;
	uint64_t queue_handle;
	uint64_t context_handle;
	const char *name; /* the Level Zero call that made the copy */
	char pci_address[PTI_MAX_PCI_ADDRESS_SIZE];
	uint8_t device_uuid[PTI_MAX_DEVICE_UUID_SIZE];
	uint64_t mem_op_id;
	uint32_t correlation_id;
	uint32_t thread_id;
	uint64_t append_timestamp;
	uint64_t start_timestamp;
	uint64_t end_timestamp;
	uint64_t submit_timestamp;
	uint64_t bytes;
	uint64_t sycl_queue_id;
	/* v2 only: */
	uint64_t device_handle;
	uint32_t engine_ordinal;
	uint32_t engine_index;
} pti_record_copy_t;
#define PTI_COPY_V1_SIZE 136u
_Static_assert(offsetof(pti_record_copy_t, name) == 32, "copy _name @32 [N3][H09]");
_Static_assert(offsetof(pti_record_copy_t, mem_op_id) == 72, "copy _mem_op_id @72 [N3]");
_Static_assert(offsetof(pti_record_copy_t, correlation_id) == 80, "copy _correlation_id @80 [N3]");
_Static_assert(offsetof(pti_record_copy_t, start_timestamp) == 96, "copy _start @96 [N3]");
_Static_assert(offsetof(pti_record_copy_t, bytes) == 120, "copy _bytes @120 [N3]");
_Static_assert(offsetof(pti_record_copy_t, sycl_queue_id) == 128, "copy _sycl_queue_id @128 [N3]");
_Static_assert(offsetof(pti_record_copy_t, device_handle) == PTI_COPY_V1_SIZE, "v2 grows at the end [N3]");
_Static_assert(sizeof(pti_record_copy_t) == 152, "memory_copy_v2 is 152 bytes [N3]");

typedef struct {
	pti_record_base_t base;
	uint32_t memcpy_type;
	uint32_t mem_src, mem_dst;
	uint64_t queue_handle;
	uint64_t context_handle;
	const char *name;
	char src_pci_address[PTI_MAX_PCI_ADDRESS_SIZE];
	char dst_pci_address[PTI_MAX_PCI_ADDRESS_SIZE];
	uint8_t src_uuid[PTI_MAX_DEVICE_UUID_SIZE];
	uint8_t dst_uuid[PTI_MAX_DEVICE_UUID_SIZE];
	uint64_t mem_op_id;
	uint32_t correlation_id;
	uint32_t thread_id;
	uint64_t append_timestamp;
	uint64_t start_timestamp;
	uint64_t end_timestamp;
	uint64_t submit_timestamp;
	uint64_t bytes;
	uint64_t sycl_queue_id;
	/* v2 only: */
	uint64_t src_device_handle, dst_device_handle;
	uint32_t engine_ordinal;
	uint32_t engine_index;
} pti_record_copy_p2p_t;
#define PTI_COPY_P2P_V1_SIZE 168u
_Static_assert(offsetof(pti_record_copy_p2p_t, src_uuid) == 72, "p2p _src_uuid @72 [H09][SV]");
_Static_assert(offsetof(pti_record_copy_p2p_t, correlation_id) == 112, "p2p _correlation_id @112 [H09][SV]");
_Static_assert(offsetof(pti_record_copy_p2p_t, sycl_queue_id) == 160, "p2p _sycl_queue_id @160 [H09][SV]");
_Static_assert(offsetof(pti_record_copy_p2p_t, src_device_handle) == PTI_COPY_P2P_V1_SIZE,
               "v2 grows at the end [N3]");
_Static_assert(sizeof(pti_record_copy_p2p_t) == 192, "memory_copy_p2p_v2 is 192 bytes [N3]");

typedef struct {
	pti_record_base_t base;
	uint32_t mem_type;
	uint64_t queue_handle;
	uint64_t context_handle;
	const char *name;
	char pci_address[PTI_MAX_PCI_ADDRESS_SIZE];
	uint8_t device_uuid[PTI_MAX_DEVICE_UUID_SIZE];
	uint64_t mem_op_id;
	uint32_t correlation_id;
	uint32_t thread_id;
	uint64_t append_timestamp;
	uint64_t start_timestamp;
	uint64_t end_timestamp;
	uint64_t submit_timestamp;
	uint64_t bytes;
	uint64_t value_for_set;
	uint64_t sycl_queue_id;
	/* v2 only: */
	uint64_t device_handle;
	uint32_t engine_ordinal;
	uint32_t engine_index;
} pti_record_fill_t;
#define PTI_FILL_V1_SIZE 136u
_Static_assert(offsetof(pti_record_fill_t, pci_address) == 32, "fill _pci @32 [N3]");
_Static_assert(offsetof(pti_record_fill_t, correlation_id) == 72, "fill _correlation_id @72 [N3]");
_Static_assert(offsetof(pti_record_fill_t, start_timestamp) == 88, "fill _start @88 [N3]");
_Static_assert(offsetof(pti_record_fill_t, value_for_set) == 120, "fill _value_for_set @120 [N3]");
_Static_assert(offsetof(pti_record_fill_t, sycl_queue_id) == 128, "fill _sycl_queue_id @128 [N3]");
_Static_assert(offsetof(pti_record_fill_t, device_handle) == PTI_FILL_V1_SIZE, "v2 grows at the end [N3]");
_Static_assert(sizeof(pti_record_fill_t) == 152, "memory_fill_v2 is 152 bytes [N3]");

typedef struct {
	pti_record_base_t base;
	uint32_t correlation_id;
	uint64_t external_id;
	uint32_t external_kind;
} pti_record_external_t;
_Static_assert(offsetof(pti_record_external_t, external_kind) == 16, "external kind @16 [N3]");
_Static_assert(sizeof(pti_record_external_t) == 24, "external_correlation is 24 bytes [N3]");

typedef struct {
	pti_record_base_t base;
	uint64_t start_ns, end_ns;
	uint32_t thread_id;
	uint32_t api_id;
	uint64_t count;
	uint64_t duration_ns;
	uint32_t kind;
} pti_record_overhead_t;
_Static_assert(offsetof(pti_record_overhead_t, count) == 32, "overhead _overhead_count @32 [N3]");
_Static_assert(offsetof(pti_record_overhead_t, kind) == 48, "overhead _overhead_kind @48 [N3]");
_Static_assert(sizeof(pti_record_overhead_t) == 56, "overhead is 56 bytes [N3]");

/* Runtime (SYCL) and driver (Level Zero) calls. */
typedef struct {
	pti_record_base_t base;
	uint64_t start_timestamp, end_timestamp;
	pti_api_group_t api_group;
	uint32_t api_id;
	uint32_t process_id, thread_id;
	uint32_t correlation_id;
	uint32_t return_code;
} pti_record_api_t;
_Static_assert(offsetof(pti_record_api_t, api_group) == 24, "api _api_group @24 [N3]");
_Static_assert(offsetof(pti_record_api_t, correlation_id) == 40, "api _correlation_id @40 [N3]");
_Static_assert(sizeof(pti_record_api_t) == 48, "api is 48 bytes [N3]");

typedef struct {
	pti_record_base_t base;
	uint32_t synch_type;
	uint64_t context_handle, queue_handle, event_handle;
	uint64_t start_timestamp, end_timestamp;
	uint32_t thread_id;
	uint32_t correlation_id;
	uint32_t number_wait_events;
	uint32_t return_code;
	uint32_t api_id;
	pti_api_group_t api_group;
} pti_record_sync_t;
_Static_assert(offsetof(pti_record_sync_t, start_timestamp) == 32, "sync _start @32 [N3]");
_Static_assert(offsetof(pti_record_sync_t, correlation_id) == 52, "sync _correlation_id @52 [N3]");
_Static_assert(offsetof(pti_record_sync_t, api_group) == 68, "sync _api_group @68 [N3]");
_Static_assert(sizeof(pti_record_sync_t) == 72, "synchronization is 72 bytes [N3]");

typedef struct {
	pti_record_base_t base;
	uint64_t start_timestamp, end_timestamp;
	uint32_t process_id, thread_id;
	uint64_t send_size, recv_size;
	uint64_t communicator_id;
	const char *name;
} pti_record_comms_t;
_Static_assert(offsetof(pti_record_comms_t, communicator_id) == 48, "comms _communicator_id @48 [N3]");
_Static_assert(sizeof(pti_record_comms_t) == 64, "comms is 64 bytes [N3]");

/* The largest record of each family: PTI refuses a smaller buffer. */
#define PTI_LARGEST_RECORD_V1 PTI_COPY_P2P_V1_SIZE
#define PTI_LARGEST_RECORD_V2 ((uint32_t)sizeof(pti_record_copy_p2p_t))

/* ---- functions [N3] ----------------------------------------------------- */

typedef struct {
	uint32_t major, minor, patch;
} pti_version_t;

typedef void (*pti_buffer_request_fn)(unsigned char **buf, size_t *size);
typedef void (*pti_buffer_complete_fn)(unsigned char *buf, size_t size, size_t used);
typedef uint64_t (*pti_timestamp_fn)(void);

typedef pti_version_t (*pti_version_fn)(void);
typedef const char *(*pti_version_string_fn)(void);
typedef const char *(*pti_result_string_fn)(pti_result_t);
typedef pti_result_t (*pti_set_callbacks_fn)(pti_buffer_request_fn, pti_buffer_complete_fn);
typedef pti_result_t (*pti_view_kind_fn)(pti_view_kind_t);
typedef pti_result_t (*pti_void_fn)(void);
typedef pti_result_t (*pti_next_record_fn)(uint8_t *buf, size_t valid, pti_record_base_t **rec);
typedef pti_result_t (*pti_push_external_fn)(uint32_t kind, uint64_t id);
typedef pti_result_t (*pti_pop_external_fn)(uint32_t kind, uint64_t *id);
typedef uint64_t (*pti_get_timestamp_fn)(void);
typedef pti_result_t (*pti_set_timestamp_fn)(pti_timestamp_fn);
typedef pti_result_t (*pti_api_name_fn)(pti_api_group_t group, uint32_t id, const char **name);
typedef pti_result_t (*pti_api_class_fn)(uint32_t enable, pti_api_class_t cls, pti_api_group_t group);
typedef const char *(*pti_type_string_fn)(uint32_t);

/* v2 layouts: PTI 0.18 and later, and every 1.x. */
static inline int strb_pti_v2(pti_version_t v)
{
	return v.major >= 1 || (v.major == 0 && v.minor >= 18);
}

#endif

/* A fake rocprofiler-sdk: see fake_rocprofiler.h for the model. Built once
 * per ABI family with FAKE_ROCP_ABI=0 or 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fake_rocprofiler.h"
#include "rocprof_abi.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if FAKE_ROCP_ABI == 1
#define MAJOR 1u
#define MINOR 1u
typedef rocp_callback_record_v1_t cb_record_t;
typedef rocp_callback_cb_v1_t cb_fn_t;
typedef rocp_api_record_v1_t api_record_t;
typedef rocp_kernel_dispatch_record_v1_t kd_record_t;
typedef rocp_memory_copy_record_v1_t mc_record_t;
#define KD_BASE(r) (&(r)->base)
#define MC_BASE(r) (&(r)->base)
#elif FAKE_ROCP_ABI == 0
#define MAJOR      0u
#define MINOR      5u
typedef rocp_callback_record_v0_t cb_record_t;
typedef rocp_callback_cb_v0_t cb_fn_t;
typedef rocp_api_record_v0_t api_record_t;
typedef rocp_kernel_dispatch_record_t kd_record_t;
typedef rocp_memory_copy_record_t mc_record_t;
#define KD_BASE(r) (r)
#define MC_BASE(r) (r)
#else
#error "FAKE_ROCP_ABI must be 0 or 1"
#endif

#define API FAKE_ROCP_EXPORT

/* The SDK's functions, declared with the pointer types of rocprof_abi.h: a
 * definition below that does not match the ABI header does not compile. */
#define DECLARE(name, fn_type) API __typeof__(*(fn_type)0) name;
DECLARE(rocprofiler_get_version, rocp_get_version_fn)
DECLARE(rocprofiler_is_initialized, rocp_is_initialized_fn)
DECLARE(rocprofiler_is_finalized, rocp_is_finalized_fn)
DECLARE(rocprofiler_force_configure, rocp_force_configure_fn)
DECLARE(rocprofiler_get_timestamp, rocp_get_timestamp_fn)
DECLARE(rocprofiler_get_thread_id, rocp_get_thread_id_fn)
DECLARE(rocprofiler_create_context, rocp_create_context_fn)
DECLARE(rocprofiler_start_context, rocp_context_fn)
DECLARE(rocprofiler_stop_context, rocp_context_fn)
DECLARE(rocprofiler_context_is_valid, rocp_context_query_fn)
DECLARE(rocprofiler_context_is_active, rocp_context_query_fn)
DECLARE(rocprofiler_create_buffer, rocp_create_buffer_fn)
DECLARE(rocprofiler_flush_buffer, rocp_buffer_fn)
DECLARE(rocprofiler_destroy_buffer, rocp_buffer_fn)
DECLARE(rocprofiler_configure_buffer_tracing_service, rocp_configure_buffer_tracing_fn)
DECLARE(rocprofiler_query_available_agents, rocp_query_available_agents_fn)
DECLARE(rocprofiler_query_callback_tracing_kind_name, rocp_query_kind_name_fn)
DECLARE(rocprofiler_query_buffer_tracing_kind_name, rocp_query_kind_name_fn)
DECLARE(rocprofiler_query_callback_tracing_kind_operation_name, rocp_query_operation_name_fn)
DECLARE(rocprofiler_query_buffer_tracing_kind_operation_name, rocp_query_operation_name_fn)
DECLARE(rocprofiler_iterate_callback_tracing_kinds, rocp_iterate_kinds_fn)
DECLARE(rocprofiler_iterate_buffer_tracing_kinds, rocp_iterate_kinds_fn)
DECLARE(rocprofiler_iterate_callback_tracing_kind_operations, rocp_iterate_operations_fn)
DECLARE(rocprofiler_iterate_buffer_tracing_kind_operations, rocp_iterate_operations_fn)
DECLARE(rocprofiler_push_external_correlation_id, rocp_push_external_fn)
DECLARE(rocprofiler_pop_external_correlation_id, rocp_pop_external_fn)
#if FAKE_ROCP_ABI == 1
DECLARE(rocprofiler_iterate_callback_tracing_kind_operation_args, rocp_iterate_args_v1_fn)
DECLARE(rocprofiler_get_status_string, rocp_get_status_string_fn)
#else
DECLARE(rocprofiler_iterate_callback_tracing_kind_operation_args, rocp_iterate_args_v0_fn)
#endif
/* The header types the callback as void (*)(void); this family's is cb_fn_t. */
API int32_t rocprofiler_configure_callback_tracing_service(rocp_context_id_t c, int32_t kind,
                                                           const int32_t *ops, size_t nops, cb_fn_t cb,
                                                           void *cb_data);
#define STATUS(v0) rocp_status_code(MAJOR, (v0))
#define SCRIBBLE   0xA5

enum { MAX_TOOLS = 4, MAX_CTX = 16, MAX_BUF = 16, MAX_SVC = 32, MAX_GPUS = 8, MAX_FAIL = 8, MAX_CB = 16 };
enum { PHASE_IDLE, PHASE_CONFIGURING, PHASE_CONFIGURED, PHASE_FINALIZED };

struct op_name {
	int32_t op;
	const char *name;
};

/* HIP runtime ops: 0.5's numbers where known; 1.x's differ (the HIP table
 * grew), so a tool must look them up by name. */
#define HIP_SHIFT ((int32_t)MAJOR * 7)
static const struct op_name hip_ops[] = {
    {84 + HIP_SHIFT, "hipExtLaunchKernel"},
    {90 + HIP_SHIFT, "hipFree"},
    {120 + HIP_SHIFT, "hipGetDevice"},
    {166 + HIP_SHIFT, "hipGraphLaunch"},
    {214 + HIP_SHIFT, "hipLaunchKernel"},
    {215 + HIP_SHIFT, "hipMalloc"},
    {259 + HIP_SHIFT, "hipMemcpy"},
    {268 + HIP_SHIFT, "hipMemcpyAsync"},
    {283 + HIP_SHIFT, "hipMemcpyWithStream"},
    {308 + HIP_SHIFT, "hipModuleLaunchKernel"},
    {346 + HIP_SHIFT, "hipStreamSynchronize"},
    {101 + HIP_SHIFT, "hipDeviceSynchronize"},
};
static const struct op_name marker_ops[] = {
    {ROCP_MARKER_roctxMarkA, "roctxMarkA"},         {ROCP_MARKER_roctxRangePushA, "roctxRangePushA"},
    {ROCP_MARKER_roctxRangePop, "roctxRangePop"},   {ROCP_MARKER_roctxRangeStartA, "roctxRangeStartA"},
    {ROCP_MARKER_roctxRangeStop, "roctxRangeStop"}, {ROCP_MARKER_roctxGetThreadId, "roctxGetThreadId"},
};
static const struct op_name code_object_ops[] = {
    {ROCP_CODE_OBJECT_LOAD, "CODE_OBJECT_LOAD"},
    {ROCP_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, "CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER"},
};
static const struct op_name copy_ops[] = {
    {ROCP_MEMORY_COPY_HOST_TO_HOST, "MEMORY_COPY_HOST_TO_HOST"},
    {ROCP_MEMORY_COPY_HOST_TO_DEVICE, "MEMORY_COPY_HOST_TO_DEVICE"},
    {ROCP_MEMORY_COPY_DEVICE_TO_HOST, "MEMORY_COPY_DEVICE_TO_HOST"},
    {ROCP_MEMORY_COPY_DEVICE_TO_DEVICE, "MEMORY_COPY_DEVICE_TO_DEVICE"},
};
static const struct op_name dispatch_ops[] = {
    {ROCP_KERNEL_DISPATCH_ENQUEUE, "KERNEL_DISPATCH_ENQUEUE"},
    {ROCP_KERNEL_DISPATCH_COMPLETE, "KERNEL_DISPATCH_COMPLETE"},
};

struct kind_desc {
	int32_t kind;
	const char *name;
	const struct op_name *ops;
	size_t nops;
};
#define KIND(k, n, t)                                                                                        \
	{                                                                                                    \
		k, n, t, sizeof(t) / sizeof(t[0])                                                            \
	}
static const struct kind_desc callback_kinds[] = {
    KIND(ROCP_CALLBACK_HIP_RUNTIME_API, "HIP_RUNTIME_API", hip_ops),
    KIND(ROCP_CALLBACK_MARKER_CORE_API, "MARKER_CORE_API", marker_ops),
    KIND(ROCP_CALLBACK_CODE_OBJECT, "CODE_OBJECT", code_object_ops),
    KIND(ROCP_CALLBACK_KERNEL_DISPATCH, "KERNEL_DISPATCH", dispatch_ops),
    KIND(ROCP_CALLBACK_MEMORY_COPY, "MEMORY_COPY", copy_ops),
};
static const struct kind_desc buffer_kinds[] = {
    KIND(ROCP_BUFFER_HIP_RUNTIME_API, "HIP_RUNTIME_API", hip_ops),
    KIND(ROCP_BUFFER_MARKER_CORE_API, "MARKER_CORE_API", marker_ops),
    KIND(ROCP_BUFFER_MEMORY_COPY, "MEMORY_COPY", copy_ops),
    KIND(ROCP_BUFFER_KERNEL_DISPATCH, "KERNEL_DISPATCH", dispatch_ops),
};

static const struct kind_desc *find_kind(bool buffer_side, int32_t kind)
{
	const struct kind_desc *t = buffer_side ? buffer_kinds : callback_kinds;
	size_t n = buffer_side ? sizeof(buffer_kinds) / sizeof(buffer_kinds[0])
	                       : sizeof(callback_kinds) / sizeof(callback_kinds[0]);
	for (size_t i = 0; i < n; i++)
		if (t[i].kind == kind)
			return &t[i];
	return NULL;
}

static const char *op_name(const struct kind_desc *k, int32_t op)
{
	for (size_t i = 0; k && i < k->nops; i++)
		if (k->ops[i].op == op)
			return k->ops[i].name;
	return NULL;
}

/* The agent struct the fake hands out: the prefix strobe reads plus the
 * fields that follow it in the SDK (runtime_visibility, uuid, ...). */
struct fake_agent {
	rocp_agent_prefix_t p;
	uint8_t tail[40];
};

struct tool {
	rocp_configure_result_t *result;
	rocp_client_id_t id;
	bool initialized, finalized;
};

struct service {
	bool used, buffer_side;
	int ctx;
	int32_t kind;
	int32_t *ops;
	size_t nops; /* 0 = all */
	cb_fn_t cb;
	void *cb_data;
	int buf;
};

struct rec {
	uint32_t kind;
	size_t size;
	void *payload;
};

struct buffer {
	bool used;
	int ctx;
	size_t size, watermark, own_watermark;
	int32_t policy;
	rocp_buffer_cb_t cb;
	void *data;
	struct rec *recs;
	size_t n, cap, bytes;
	uint64_t drops;
	uint64_t want, done; /* flush generations */
};

struct code_object {
	uint64_t id;
	int gpu;
	size_t n;
	char **names;
	uint64_t *kernel_ids;
	struct code_object *next;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t work, delivered;
	int phase;
	int ngpus;
	struct fake_agent agents[1 + MAX_GPUS];
	struct tool tools[MAX_TOOLS];
	int ntools;
	struct {
		bool used, active;
	} ctx[MAX_CTX];
	struct service svc[MAX_SVC];
	struct buffer buf[MAX_BUF];
	struct code_object *code_objects;
	uint64_t next_code_object, next_kernel;
	struct {
		char fn[64];
		int32_t status;
	} fail[MAX_FAIL];
	pthread_t thread;
	bool thread_started, stop;
	uint64_t deliveries;
} S = {
    .mu = PTHREAD_MUTEX_INITIALIZER,
    .work = PTHREAD_COND_INITIALIZER,
    .delivered = PTHREAD_COND_INITIALIZER,
    .ngpus = 2,
};

static _Atomic uint64_t next_cid = 1;
static _Atomic uint64_t suspend_ns;
static _Thread_local uint64_t tl_current_cid; /* enclosing HIP call, for ancestor */
static _Thread_local const void *tl_args_payload;
static _Thread_local int tl_roctx_depth;
static _Thread_local bool tl_delivery_thread;

static uint64_t thread_id(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

static int32_t failed(const char *fn)
{
	int32_t st = 0;
	pthread_mutex_lock(&S.mu);
	for (int i = 0; i < MAX_FAIL; i++)
		if (S.fail[i].status && !strcmp(S.fail[i].fn, fn))
			st = S.fail[i].status;
	pthread_mutex_unlock(&S.mu);
	return st;
}
#define FAIL_IF_ARMED()                                                                                      \
	do {                                                                                                 \
		int32_t f_ = failed(__func__);                                                               \
		if (f_)                                                                                      \
			return f_;                                                                           \
	} while (0)

/* Memory the SDK took back: scribbled, then kept in a quarantine ring for a
 * while before it is freed, so a test can see that a pointer kept past its
 * callback now points at 0xA5 bytes (instead of reading freed memory). */
enum { QUARANTINE = 4096 };
static pthread_mutex_t quarantine_mu = PTHREAD_MUTEX_INITIALIZER;
static void *quarantine[QUARANTINE];
static size_t quarantine_next;

static void scribble_free(void *p, size_t n)
{
	if (!p)
		return;
	memset(p, SCRIBBLE, n);
	pthread_mutex_lock(&quarantine_mu);
	void *old = quarantine[quarantine_next];
	quarantine[quarantine_next] = p;
	quarantine_next = (quarantine_next + 1) % QUARANTINE;
	pthread_mutex_unlock(&quarantine_mu);
	free(old);
}

static void quarantine_release(void)
{
	pthread_mutex_lock(&quarantine_mu);
	for (size_t i = 0; i < QUARANTINE; i++) {
		free(quarantine[i]);
		quarantine[i] = NULL;
	}
	pthread_mutex_unlock(&quarantine_mu);
}

/* ---- clock, version, threads ------------------------------------------- */

API uint64_t fake_rocp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + atomic_load(&suspend_ns);
}

API void fake_rocp_set_suspend_ns(uint64_t ns)
{
	atomic_store(&suspend_ns, ns);
}

API int fake_rocp_abi_major(void)
{
	return (int)MAJOR;
}

API int32_t rocprofiler_get_timestamp(uint64_t *ns)
{
	FAIL_IF_ARMED();
	if (!ns)
		return STATUS(ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT);
	*ns = fake_rocp_now();
	return ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_get_thread_id(uint64_t *tid)
{
	FAIL_IF_ARMED();
	*tid = thread_id();
	return ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_get_version(uint32_t *major, uint32_t *minor, uint32_t *patch)
{
	FAIL_IF_ARMED();
	if (major)
		*major = MAJOR;
	if (minor)
		*minor = MINOR;
	if (patch)
		*patch = 0;
	return ROCP_STATUS_SUCCESS;
}

#if FAKE_ROCP_ABI == 1
API const char *rocprofiler_get_status_string(int32_t status)
{
	return status == 0 ? "Success" : "Error (fake rocprofiler-sdk)";
}
#endif

API void fake_rocp_fail(const char *fn, int32_t status)
{
	pthread_mutex_lock(&S.mu);
	int slot = -1;
	for (int i = 0; i < MAX_FAIL; i++) {
		if (!strcmp(S.fail[i].fn, fn)) {
			slot = i;
			break;
		}
		if (slot < 0 && !S.fail[i].fn[0])
			slot = i;
	}
	if (slot >= 0) {
		snprintf(S.fail[slot].fn, sizeof(S.fail[slot].fn), "%s", status ? fn : "");
		S.fail[slot].status = status;
	}
	pthread_mutex_unlock(&S.mu);
}

/* ---- agents ------------------------------------------------------------- */

static void build_agents(void)
{
	static const char *const gpu_names[] = {"gfx90a", "gfx942"};
	memset(S.agents, 0, sizeof(S.agents));
	for (int i = 0; i <= S.ngpus; i++) {
		rocp_agent_prefix_t *a = &S.agents[i].p;
		a->size = sizeof(struct fake_agent);
		a->id.handle = 0x1000u + (uint64_t)i;
		a->type = i == 0 ? ROCP_AGENT_TYPE_CPU : ROCP_AGENT_TYPE_GPU;
		a->name = i == 0 ? "AMD EPYC 7763 (fake)" : gpu_names[(i - 1) % 2];
		a->vendor_name = i == 0 ? "CPU" : "AMD";
		a->product_name = i == 0 ? "AMD EPYC 7763 (fake)" : "AMD Instinct MI250X (fake)";
		a->model_name = i == 0 ? "" : "aldebaran";
		a->node_id = (uint32_t)i;
		a->logical_node_id = i;
		a->logical_node_type_id = i == 0 ? 0 : i - 1;
	}
}

API void fake_rocp_set_gpus(int n)
{
	pthread_mutex_lock(&S.mu);
	S.ngpus = n < 1 ? 1 : n > MAX_GPUS ? MAX_GPUS : n;
	build_agents();
	pthread_mutex_unlock(&S.mu);
}

API uint64_t fake_rocp_agent(int ordinal)
{
	if (ordinal >= S.ngpus)
		return 0;
	return 0x1000u + (uint64_t)(ordinal < 0 ? 0 : ordinal + 1);
}

API int32_t rocprofiler_query_available_agents(int32_t version, rocp_agents_cb_t cb, size_t agent_size,
                                               void *data)
{
	FAIL_IF_ARMED();
	if (version != ROCP_AGENT_INFO_VERSION_0 || !cb)
		return STATUS(ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT);
	if (agent_size > sizeof(struct fake_agent))
		return STATUS(ROCP_STATUS_V0_ERROR_INCOMPATIBLE_ABI);
	const void *ptrs[1 + MAX_GPUS];
	pthread_mutex_lock(&S.mu);
	if (!S.agents[0].p.size)
		build_agents();
	size_t n = (size_t)S.ngpus + 1;
	pthread_mutex_unlock(&S.mu);
	for (size_t i = 0; i < n; i++)
		ptrs[i] = &S.agents[i];
	return cb(version, ptrs, n, data);
}

/* ---- names -------------------------------------------------------------- */

static int32_t query_name(bool buffer_side, int32_t kind, int32_t op, bool want_op, const char **name,
                          uint64_t *len)
{
	const struct kind_desc *k = find_kind(buffer_side, kind);
	if (!k)
		return ROCP_STATUS_ERROR_KIND_NOT_FOUND;
	const char *s = want_op ? op_name(k, op) : k->name;
	if (!s)
		return ROCP_STATUS_ERROR_OPERATION_NOT_FOUND;
	if (name)
		*name = s;
	if (len)
		*len = strlen(s);
	return ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_query_callback_tracing_kind_name(int32_t kind, const char **name, uint64_t *len)
{
	FAIL_IF_ARMED();
	return query_name(false, kind, 0, false, name, len);
}

API int32_t rocprofiler_query_callback_tracing_kind_operation_name(int32_t kind, int32_t op,
                                                                   const char **name, uint64_t *len)
{
	FAIL_IF_ARMED();
	return query_name(false, kind, op, true, name, len);
}

API int32_t rocprofiler_query_buffer_tracing_kind_name(int32_t kind, const char **name, uint64_t *len)
{
	FAIL_IF_ARMED();
	return query_name(true, kind, 0, false, name, len);
}

API int32_t rocprofiler_query_buffer_tracing_kind_operation_name(int32_t kind, int32_t op, const char **name,
                                                                 uint64_t *len)
{
	FAIL_IF_ARMED();
	return query_name(true, kind, op, true, name, len);
}

static int32_t iterate_kinds(bool buffer_side, rocp_kind_cb_t cb, void *data)
{
	const struct kind_desc *t = buffer_side ? buffer_kinds : callback_kinds;
	size_t n = buffer_side ? sizeof(buffer_kinds) / sizeof(buffer_kinds[0])
	                       : sizeof(callback_kinds) / sizeof(callback_kinds[0]);
	for (size_t i = 0; i < n; i++)
		if (cb(t[i].kind, data) != 0)
			break;
	return ROCP_STATUS_SUCCESS;
}

static int32_t iterate_ops(bool buffer_side, int32_t kind, rocp_kind_operation_cb_t cb, void *data)
{
	const struct kind_desc *k = find_kind(buffer_side, kind);
	if (!k)
		return ROCP_STATUS_ERROR_KIND_NOT_FOUND;
	for (size_t i = 0; i < k->nops; i++)
		if (cb(kind, k->ops[i].op, data) != 0)
			break;
	return ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_iterate_callback_tracing_kinds(rocp_kind_cb_t cb, void *data)
{
	FAIL_IF_ARMED();
	return iterate_kinds(false, cb, data);
}

API int32_t rocprofiler_iterate_buffer_tracing_kinds(rocp_kind_cb_t cb, void *data)
{
	FAIL_IF_ARMED();
	return iterate_kinds(true, cb, data);
}

API int32_t rocprofiler_iterate_callback_tracing_kind_operations(int32_t kind, rocp_kind_operation_cb_t cb,
                                                                 void *data)
{
	FAIL_IF_ARMED();
	return iterate_ops(false, kind, cb, data);
}

API int32_t rocprofiler_iterate_buffer_tracing_kind_operations(int32_t kind, rocp_kind_operation_cb_t cb,
                                                               void *data)
{
	FAIL_IF_ARMED();
	return iterate_ops(true, kind, cb, data);
}

API int32_t fake_rocp_hip_op(const char *name)
{
	for (size_t i = 0; i < sizeof(hip_ops) / sizeof(hip_ops[0]); i++)
		if (!strcmp(hip_ops[i].name, name))
			return hip_ops[i].op;
	return -1;
}

/* The HIP payload: the SDK's is {size; args union; retval}; a tool reads
 * the arguments through iterate_..._operation_args, which finds them here. */
struct hip_payload {
	uint64_t size;
	const struct fake_rocp_arg *args;
	size_t nargs;
	uint64_t retval;
};

API int32_t rocprofiler_iterate_callback_tracing_kind_operation_args(cb_record_t record,
                                                                     rocp_operation_args_cb_t cb,
                                                                     int32_t max_deref, void *data)
{
	(void)max_deref;
	FAIL_IF_ARMED();
	if (record.kind != ROCP_CALLBACK_HIP_RUNTIME_API)
		return STATUS(ROCP_STATUS_V0_ERROR_NOT_IMPLEMENTED);
	/* Only the payload of the callback now running on this thread exists. */
	if (!record.payload || record.payload != tl_args_payload)
		return STATUS(ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT);
	const struct hip_payload *p = record.payload;
	for (size_t i = 0; i < p->nargs; i++) {
		const struct fake_rocp_arg *a = &p->args[i];
		if (cb(record.kind, record.operation, (uint32_t)i, a->value, 0, a->type, a->name, a->value, 0,
		       data) != 0)
			break;
	}
	return ROCP_STATUS_SUCCESS;
}

/* ---- configuration ------------------------------------------------------ */

static bool unlocked(void)
{
	return S.phase == PHASE_CONFIGURING;
}

static int ctx_index(rocp_context_id_t c)
{
	if (c.handle == 0 || c.handle > MAX_CTX || !S.ctx[c.handle - 1].used)
		return -1;
	return (int)c.handle - 1;
}

API int32_t rocprofiler_is_initialized(int *status)
{
	FAIL_IF_ARMED();
	pthread_mutex_lock(&S.mu);
	*status = S.phase >= PHASE_CONFIGURED;
	pthread_mutex_unlock(&S.mu);
	return ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_is_finalized(int *status)
{
	FAIL_IF_ARMED();
	pthread_mutex_lock(&S.mu);
	*status = S.phase == PHASE_FINALIZED;
	pthread_mutex_unlock(&S.mu);
	return ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_create_context(rocp_context_id_t *out)
{
	FAIL_IF_ARMED();
	int32_t st = STATUS(ROCP_STATUS_V0_ERROR_CONFIGURATION_LOCKED);
	pthread_mutex_lock(&S.mu);
	if (unlocked()) {
		st = ROCP_STATUS_ERROR_CONTEXT_ERROR;
		for (int i = 0; i < MAX_CTX; i++) {
			if (!S.ctx[i].used) {
				S.ctx[i].used = true;
				out->handle = (uint64_t)i + 1;
				st = ROCP_STATUS_SUCCESS;
				break;
			}
		}
	}
	pthread_mutex_unlock(&S.mu);
	return st;
}

static int32_t set_active(rocp_context_id_t c, bool on)
{
	pthread_mutex_lock(&S.mu);
	int i = ctx_index(c);
	if (i >= 0)
		S.ctx[i].active = on;
	pthread_mutex_unlock(&S.mu);
	return i < 0 ? ROCP_STATUS_ERROR_CONTEXT_NOT_FOUND : ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_start_context(rocp_context_id_t c)
{
	FAIL_IF_ARMED();
	return set_active(c, true);
}

API int32_t rocprofiler_stop_context(rocp_context_id_t c)
{
	FAIL_IF_ARMED();
	return set_active(c, false);
}

static int32_t context_query(rocp_context_id_t c, int *status, bool active)
{
	pthread_mutex_lock(&S.mu);
	int i = ctx_index(c);
	*status = i >= 0 && (!active || S.ctx[i].active);
	pthread_mutex_unlock(&S.mu);
	return ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_context_is_valid(rocp_context_id_t c, int *status)
{
	FAIL_IF_ARMED();
	return context_query(c, status, false);
}

API int32_t rocprofiler_context_is_active(rocp_context_id_t c, int *status)
{
	FAIL_IF_ARMED();
	return context_query(c, status, true);
}

static void *delivery_main(void *arg);

API int32_t rocprofiler_create_buffer(rocp_context_id_t c, size_t size, size_t watermark, int32_t policy,
                                      rocp_buffer_cb_t cb, void *cb_data, rocp_buffer_id_t *out)
{
	FAIL_IF_ARMED();
	int32_t st = STATUS(ROCP_STATUS_V0_ERROR_CONFIGURATION_LOCKED);
	pthread_mutex_lock(&S.mu);
	if (!unlocked())
		goto out;
	st = ROCP_STATUS_ERROR_CONTEXT_NOT_FOUND;
	if (ctx_index(c) < 0)
		goto out;
	st = STATUS(ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT);
	if (!cb || !out || size == 0 || watermark > size || policy < 0 ||
	    policy > ROCP_BUFFER_POLICY_LOSSLESS)
		goto out;
	st = ROCP_STATUS_ERROR_BUFFER_NOT_FOUND;
	for (int i = 0; i < MAX_BUF; i++) {
		if (S.buf[i].used)
			continue;
		S.buf[i] = (struct buffer){.used = true,
		                           .ctx = ctx_index(c),
		                           .size = size,
		                           .watermark = watermark ? watermark : size,
		                           .own_watermark = watermark ? watermark : size,
		                           .policy = policy,
		                           .cb = cb,
		                           .data = cb_data};
		out->handle = (uint64_t)i + 1;
		st = ROCP_STATUS_SUCCESS;
		break;
	}
	if (st == ROCP_STATUS_SUCCESS && !S.thread_started) {
		S.stop = false;
		if (pthread_create(&S.thread, NULL, delivery_main, NULL) == 0)
			S.thread_started = true;
		else
			st = ROCP_STATUS_ERROR;
	}
out:
	pthread_mutex_unlock(&S.mu);
	return st;
}

static int32_t add_service(rocp_context_id_t c, bool buffer_side, int32_t kind, const int32_t *ops,
                           size_t nops, cb_fn_t cb, void *cb_data, int buf)
{
	int32_t st = STATUS(ROCP_STATUS_V0_ERROR_CONFIGURATION_LOCKED);
	pthread_mutex_lock(&S.mu);
	if (!unlocked())
		goto out;
	st = ROCP_STATUS_ERROR_CONTEXT_NOT_FOUND;
	int ci = ctx_index(c);
	if (ci < 0)
		goto out;
	const struct kind_desc *k = find_kind(buffer_side, kind);
	st = ROCP_STATUS_ERROR_KIND_NOT_FOUND;
	if (!k)
		goto out;
	st = ROCP_STATUS_ERROR_OPERATION_NOT_FOUND;
	for (size_t i = 0; i < nops; i++)
		if (!op_name(k, ops[i]))
			goto out;
	st = STATUS(ROCP_STATUS_V0_ERROR_SERVICE_ALREADY_CONFIGURED);
	for (int i = 0; i < MAX_SVC; i++)
		if (S.svc[i].used && S.svc[i].ctx == ci && S.svc[i].buffer_side == buffer_side &&
		    S.svc[i].kind == kind)
			goto out;
	st = ROCP_STATUS_ERROR;
	for (int i = 0; i < MAX_SVC; i++) {
		if (S.svc[i].used)
			continue;
		int32_t *copy = NULL;
		if (nops) {
			copy = malloc(nops * sizeof(*copy));
			if (!copy)
				goto out;
			memcpy(copy, ops, nops * sizeof(*copy));
		}
		S.svc[i] = (struct service){.used = true,
		                            .buffer_side = buffer_side,
		                            .ctx = ci,
		                            .kind = kind,
		                            .ops = copy,
		                            .nops = nops,
		                            .cb = cb,
		                            .cb_data = cb_data,
		                            .buf = buf};
		st = ROCP_STATUS_SUCCESS;
		break;
	}
out:
	pthread_mutex_unlock(&S.mu);
	return st;
}

API int32_t rocprofiler_configure_buffer_tracing_service(rocp_context_id_t c, int32_t kind,
                                                         const int32_t *ops, size_t nops, rocp_buffer_id_t b)
{
	FAIL_IF_ARMED();
	if (b.handle == 0 || b.handle > MAX_BUF || !S.buf[b.handle - 1].used)
		return ROCP_STATUS_ERROR_BUFFER_NOT_FOUND;
	return add_service(c, true, kind, ops, nops, NULL, NULL, (int)b.handle - 1);
}

API int32_t rocprofiler_configure_callback_tracing_service(rocp_context_id_t c, int32_t kind,
                                                           const int32_t *ops, size_t nops, cb_fn_t cb,
                                                           void *cb_data)
{
	FAIL_IF_ARMED();
	if (!cb)
		return STATUS(ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT);
	return add_service(c, false, kind, ops, nops, cb, cb_data, -1);
}

static bool svc_wants(const struct service *s, bool buffer_side, int32_t kind, int32_t op)
{
	if (!s->used || s->buffer_side != buffer_side || s->kind != kind || !S.ctx[s->ctx].active)
		return false;
	if (!s->nops)
		return true;
	for (size_t i = 0; i < s->nops; i++)
		if (s->ops[i] == op)
			return true;
	return false;
}

/* ---- external correlation ---------------------------------------------- */

/* One stack per (context, thread), as the SDK keeps them. A thread whose
 * stack is empty (or that never pushed) gets the top of the thread that
 * loaded the SDK, whichever context that top is on: the SDK keeps that one
 * value process-wide for threads it has not seen. */
struct ext_stack {
	int ctx;
	uint64_t tid;
	uint64_t *v;
	size_t n, cap;
};
static pthread_mutex_t ext_mu = PTHREAD_MUTEX_INITIALIZER;
static struct ext_stack *ext_stacks;
static size_t ext_nstacks;
static _Atomic size_t ext_entries; /* over all stacks: 0 = every top is 0 */
static uint64_t ext_default_tid, ext_default;

__attribute__((constructor)) static void ext_loaded(void)
{
	ext_default_tid = (uint64_t)syscall(SYS_gettid);
}

/* Under ext_mu. */
static struct ext_stack *ext_find(int ctx, uint64_t tid, bool create)
{
	for (size_t i = 0; i < ext_nstacks; i++)
		if (ext_stacks[i].ctx == ctx && ext_stacks[i].tid == tid)
			return &ext_stacks[i];
	if (!create)
		return NULL;
	struct ext_stack *n = realloc(ext_stacks, (ext_nstacks + 1) * sizeof(*n));
	if (!n)
		return NULL;
	ext_stacks = n;
	ext_stacks[ext_nstacks] = (struct ext_stack){.ctx = ctx, .tid = tid};
	return &ext_stacks[ext_nstacks++];
}

/* correlation_id.external of a record made now on thread tid for context
 * index ctx. */
static uint64_t ext_top(int ctx, uint64_t tid)
{
	if (!atomic_load(&ext_entries))
		return 0;
	pthread_mutex_lock(&ext_mu);
	const struct ext_stack *st = ext_find(ctx, tid, false);
	uint64_t v = st && st->n ? st->v[st->n - 1] : ext_default;
	pthread_mutex_unlock(&ext_mu);
	return v;
}

static int32_t ext_check(rocp_context_id_t c, uint64_t tid, int *ctx)
{
	if (tid < (uint64_t)getpid())
		return STATUS(ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT);
	pthread_mutex_lock(&S.mu);
	*ctx = ctx_index(c);
	pthread_mutex_unlock(&S.mu);
	return *ctx < 0 ? ROCP_STATUS_ERROR_CONTEXT_NOT_FOUND : ROCP_STATUS_SUCCESS;
}

API int32_t rocprofiler_push_external_correlation_id(rocp_context_id_t c, uint64_t tid, rocp_user_data_t id)
{
	FAIL_IF_ARMED();
	int ctx;
	int32_t st = ext_check(c, tid, &ctx);
	if (st != ROCP_STATUS_SUCCESS)
		return st;
	pthread_mutex_lock(&ext_mu);
	struct ext_stack *e = ext_find(ctx, tid, true);
	if (e && e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 8;
		uint64_t *v = realloc(e->v, cap * sizeof(*v));
		if (v)
			e->v = v, e->cap = cap;
	}
	if (e && e->n < e->cap) {
		e->v[e->n++] = id.value;
		atomic_fetch_add(&ext_entries, 1);
		if (tid == ext_default_tid)
			ext_default = id.value;
	} else {
		st = ROCP_STATUS_ERROR;
	}
	pthread_mutex_unlock(&ext_mu);
	return st;
}

API int32_t rocprofiler_pop_external_correlation_id(rocp_context_id_t c, uint64_t tid, rocp_user_data_t *out)
{
	FAIL_IF_ARMED();
	int ctx;
	int32_t st = ext_check(c, tid, &ctx);
	if (st != ROCP_STATUS_SUCCESS)
		return st;
	uint64_t v = 0;
	pthread_mutex_lock(&ext_mu);
	struct ext_stack *e = ext_find(ctx, tid, false);
	if (e && e->n) {
		v = e->v[--e->n];
		atomic_fetch_sub(&ext_entries, 1);
		if (tid == ext_default_tid)
			ext_default = e->n ? e->v[e->n - 1] : 0;
	}
	pthread_mutex_unlock(&ext_mu);
	if (out)
		out->value = v; /* 0 from an empty stack, as the SDK answers */
	return ROCP_STATUS_SUCCESS;
}

API size_t fake_rocp_external_depth(uint64_t tid)
{
	size_t n = 0;
	pthread_mutex_lock(&ext_mu);
	for (size_t i = 0; i < ext_nstacks; i++)
		if (ext_stacks[i].tid == tid)
			n += ext_stacks[i].n;
	pthread_mutex_unlock(&ext_mu);
	return n;
}

/* The externals of a record made now on this thread, per context index. */
static void ext_snapshot(uint64_t *ext)
{
	uint64_t tid = thread_id();
	for (int i = 0; i < MAX_CTX; i++)
		ext[i] = ext_top(i, tid);
}

/* ---- buffers and delivery ---------------------------------------------- */

static bool buffer_due(const struct buffer *b)
{
	return b->used && (b->want > b->done || (b->n && b->bytes >= b->watermark));
}

static void deliver(int bi, struct rec *recs, size_t n, uint64_t drops)
{
	struct buffer *b = &S.buf[bi];
	rocp_record_header_t *hdr = calloc(n ? n : 1, sizeof(*hdr));
	rocp_record_header_t **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (hdr && ptrs) {
		for (size_t i = 0; i < n; i++) {
			hdr[i].category = ROCP_CATEGORY_TRACING;
			hdr[i].kind = recs[i].kind;
			hdr[i].payload = recs[i].payload;
			ptrs[i] = &hdr[i];
		}
		b->cb((rocp_context_id_t){(uint64_t)b->ctx + 1}, (rocp_buffer_id_t){(uint64_t)bi + 1}, ptrs,
		      n, b->data, drops);
	}
	for (size_t i = 0; i < n; i++)
		scribble_free(recs[i].payload, recs[i].size);
	scribble_free(hdr, (n ? n : 1) * sizeof(*hdr));
	scribble_free(ptrs, (n ? n : 1) * sizeof(*ptrs));
	free(recs);
}

static void *delivery_main(void *arg)
{
	(void)arg;
	tl_delivery_thread = true;
	pthread_mutex_lock(&S.mu);
	for (;;) {
		int due = -1;
		for (int i = 0; i < MAX_BUF && due < 0; i++)
			if (buffer_due(&S.buf[i]))
				due = i;
		if (due < 0) {
			if (S.stop)
				break;
			pthread_cond_wait(&S.work, &S.mu);
			continue;
		}
		struct buffer *b = &S.buf[due];
		uint64_t gen = b->want;
		struct rec *recs = b->recs;
		size_t n = b->n;
		uint64_t drops = b->drops;
		b->recs = NULL;
		b->n = b->cap = b->bytes = 0;
		b->drops = 0;
		/* A producer waiting for room may go on while this is delivered. */
		pthread_cond_broadcast(&S.delivered);
		if (n || drops) {
			S.deliveries++;
			pthread_mutex_unlock(&S.mu);
			deliver(due, recs, n, drops);
			pthread_mutex_lock(&S.mu);
		} else {
			free(recs);
		}
		if (gen > b->done)
			b->done = gen;
		pthread_cond_broadcast(&S.delivered);
	}
	pthread_mutex_unlock(&S.mu);
	return NULL;
}

/* Every buffer record has its correlation id at offset 16. */
_Static_assert(offsetof(rocp_async_head_t, correlation_id) == 16, "async records");
_Static_assert(offsetof(api_record_t, correlation_id) == 16, "API records");

/* Under the lock: appends a copy of the record to every buffer whose
 * service wants it, its correlation_id.external that of the service's
 * context: ext[context index] (taken when the call began), or when ext is
 * NULL the top of this thread's stack now. Returns how many buffers took
 * it. */
static int produce_locked(int32_t kind, int32_t op, const void *rec, size_t size, const uint64_t *ext)
{
	size_t need = size + sizeof(rocp_record_header_t);
	uint64_t tid = ext ? 0 : thread_id();
	int taken = 0;
	for (int si = 0; si < MAX_SVC; si++) {
		if (!svc_wants(&S.svc[si], true, kind, op))
			continue;
		struct buffer *b = &S.buf[S.svc[si].buf];
		if (!b->used)
			continue;
		while (b->bytes + need > b->size && b->policy == ROCP_BUFFER_POLICY_LOSSLESS && b->n &&
		       !tl_delivery_thread && S.thread_started) {
			b->want++;
			pthread_cond_signal(&S.work);
			pthread_cond_wait(&S.delivered, &S.mu);
		}
		if (b->bytes + need > b->size) {
			b->drops++;
			continue;
		}
		if (b->n == b->cap) {
			size_t cap = b->cap ? b->cap * 2 : 64;
			struct rec *r = realloc(b->recs, cap * sizeof(*r));
			if (!r) {
				b->drops++;
				continue;
			}
			b->recs = r;
			b->cap = cap;
		}
		void *copy = malloc(size);
		if (!copy) {
			b->drops++;
			continue;
		}
		memcpy(copy, rec, size);
		int ctx = S.svc[si].ctx;
		((rocp_corr_v0_t *)((char *)copy + 16))->external.value = ext ? ext[ctx] : ext_top(ctx, tid);
		b->recs[b->n++] = (struct rec){.kind = (uint32_t)kind, .size = size, .payload = copy};
		b->bytes += need;
		if (b->bytes >= b->watermark)
			pthread_cond_signal(&S.work);
		taken++;
	}
	return taken;
}

static int produce(int32_t kind, int32_t op, const void *rec, size_t size, const uint64_t *ext)
{
	pthread_mutex_lock(&S.mu);
	int n = produce_locked(kind, op, rec, size, ext);
	pthread_mutex_unlock(&S.mu);
	return n;
}

API int32_t rocprofiler_flush_buffer(rocp_buffer_id_t id)
{
	FAIL_IF_ARMED();
	if (tl_delivery_thread)
		return STATUS(ROCP_STATUS_V0_ERROR_BUFFER_BUSY);
	int32_t st = ROCP_STATUS_SUCCESS;
	pthread_mutex_lock(&S.mu);
	if (id.handle == 0 || id.handle > MAX_BUF || !S.buf[id.handle - 1].used) {
		st = ROCP_STATUS_ERROR_BUFFER_NOT_FOUND;
	} else if (S.thread_started) {
		struct buffer *b = &S.buf[id.handle - 1];
		uint64_t gen = ++b->want;
		pthread_cond_signal(&S.work);
		while (b->done < gen && b->used)
			pthread_cond_wait(&S.delivered, &S.mu);
	}
	pthread_mutex_unlock(&S.mu);
	return st;
}

API int32_t rocprofiler_destroy_buffer(rocp_buffer_id_t id)
{
	FAIL_IF_ARMED();
	int32_t st = rocprofiler_flush_buffer(id);
	if (st != ROCP_STATUS_SUCCESS)
		return st;
	pthread_mutex_lock(&S.mu);
	struct buffer *b = &S.buf[id.handle - 1];
	for (int i = 0; i < MAX_SVC; i++)
		if (S.svc[i].used && S.svc[i].buf == (int)id.handle - 1)
			S.svc[i].buf = -1, S.svc[i].used = false;
	b->used = false;
	pthread_cond_broadcast(&S.delivered);
	pthread_mutex_unlock(&S.mu);
	return ROCP_STATUS_SUCCESS;
}

API void fake_rocp_drop(uint64_t n)
{
	pthread_mutex_lock(&S.mu);
	for (int i = 0; i < MAX_BUF; i++)
		if (S.buf[i].used)
			S.buf[i].drops += n;
	pthread_mutex_unlock(&S.mu);
}

API void fake_rocp_set_watermark(size_t bytes)
{
	pthread_mutex_lock(&S.mu);
	for (int i = 0; i < MAX_BUF; i++) {
		struct buffer *b = &S.buf[i];
		if (!b->used)
			continue;
		b->watermark = bytes ? bytes : b->own_watermark;
		if (b->n && b->bytes >= b->watermark)
			pthread_cond_signal(&S.work);
	}
	pthread_mutex_unlock(&S.mu);
}

API uint64_t fake_rocp_deliveries(void)
{
	pthread_mutex_lock(&S.mu);
	uint64_t n = S.deliveries;
	pthread_mutex_unlock(&S.mu);
	return n;
}

/* ---- callbacks ---------------------------------------------------------- */

struct cb_target {
	cb_fn_t cb;
	void *data;
	uint64_t ctx;
	rocp_user_data_t user;
};

static size_t callback_targets(int32_t kind, int32_t op, struct cb_target *out)
{
	size_t n = 0;
	pthread_mutex_lock(&S.mu);
	for (int i = 0; i < MAX_SVC && n < MAX_CB; i++)
		if (svc_wants(&S.svc[i], false, kind, op))
			out[n++] = (struct cb_target){
			    S.svc[i].cb, S.svc[i].cb_data, (uint64_t)S.svc[i].ctx + 1, {0}};
	pthread_mutex_unlock(&S.mu);
	return n;
}

/* Calls each target with a fresh copy of the payload, scribbled afterwards;
 * the record's correlation_id.external is ext[context index] (0 when ext
 * is NULL). */
static void fire(struct cb_target *t, size_t n, int32_t kind, int32_t op, int32_t phase, uint64_t cid,
                 uint64_t ancestor, const uint64_t *ext, const void *payload, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		void *copy = malloc(size);
		if (!copy)
			continue;
		memcpy(copy, payload, size);
		/* A roctx call's return value exists only once it returned. */
		if (kind == ROCP_CALLBACK_MARKER_CORE_API && phase == ROCP_PHASE_ENTER)
			((rocp_marker_api_data_t *)copy)->retval = 0;
		cb_record_t r;
		memset(&r, 0, sizeof(r));
		r.context_id.handle = t[i].ctx;
		r.thread_id = thread_id();
		r.correlation_id.internal = cid;
		r.correlation_id.external.value = ext ? ext[t[i].ctx - 1] : 0;
#if FAKE_ROCP_ABI == 1
		r.correlation_id.ancestor = ancestor;
#else
		(void)ancestor;
#endif
		r.kind = kind;
		r.operation = op;
		r.phase = phase;
		r.payload = copy;
		tl_args_payload = copy;
		t[i].cb(r, &t[i].user, t[i].data);
		tl_args_payload = NULL;
		scribble_free(copy, size);
	}
}

/* An API call of `kind`: ENTER, body, EXIT, then its buffer record. The
 * payload's strings are copied for each callback and scribbled after. */
static uint64_t api_call(int32_t cb_kind, int32_t buf_kind, int32_t op, const void *payload, size_t size,
                         fake_rocp_body_fn body, void *body_arg)
{
	uint64_t cid = atomic_fetch_add(&next_cid, 1);
	uint64_t ancestor = tl_current_cid;
	struct cb_target t[MAX_CB];
	size_t n = callback_targets(cb_kind, op, t);
	api_record_t rec;
	memset(&rec, 0, sizeof(rec));
	rec.size = sizeof(rec);
	rec.kind = buf_kind;
	rec.operation = op;
	rec.correlation_id.internal = cid;
#if FAKE_ROCP_ABI == 1
	rec.correlation_id.ancestor = ancestor;
#endif
	rec.thread_id = thread_id();
	rec.start_timestamp = fake_rocp_now();
	/* The call's correlation id, external included, is made at ENTER. */
	uint64_t ext[MAX_CTX];
	ext_snapshot(ext);
	fire(t, n, cb_kind, op, ROCP_PHASE_ENTER, cid, ancestor, ext, payload, size);
	tl_current_cid = cid;
	if (body)
		body(cid, body_arg);
	tl_current_cid = ancestor;
	fire(t, n, cb_kind, op, ROCP_PHASE_EXIT, cid, ancestor, ext, payload, size);
	rec.end_timestamp = fake_rocp_now();
	produce(buf_kind, op, &rec, sizeof(rec), ext);
	return cid;
}

API uint64_t fake_rocp_hip_call(const char *op, const struct fake_rocp_arg *args, size_t nargs,
                                fake_rocp_body_fn body, void *body_arg)
{
	int32_t id = fake_rocp_hip_op(op);
	if (id < 0)
		return 0;
	struct hip_payload p = {.size = sizeof(p), .args = args, .nargs = nargs};
	return api_call(ROCP_CALLBACK_HIP_RUNTIME_API, ROCP_BUFFER_HIP_RUNTIME_API, id, &p, sizeof(p), body,
	                body_arg);
}

static void marker_call(int32_t op, const char *message, int64_t retval)
{
	/* The message lives in a copy that is gone after the call, as roctx's
	 * argument is gone after roctx returns. */
	char *msg = message ? strdup(message) : NULL;
	rocp_marker_api_data_t p = {.size = sizeof(p), .message = msg, .retval = retval};
	api_call(ROCP_CALLBACK_MARKER_CORE_API, ROCP_BUFFER_MARKER_CORE_API, op, &p, sizeof(p), NULL, NULL);
	if (msg)
		scribble_free(msg, strlen(msg) + 1);
}

API void fake_rocp_roctx_mark(const char *message)
{
	marker_call(ROCP_MARKER_roctxMarkA, message, 0);
}

API int fake_rocp_roctx_push(const char *message)
{
	int depth = ++tl_roctx_depth;
	marker_call(ROCP_MARKER_roctxRangePushA, message, depth - 1);
	return depth - 1;
}

API int fake_rocp_roctx_pop(void)
{
	int depth = tl_roctx_depth > 0 ? tl_roctx_depth-- : -1;
	marker_call(ROCP_MARKER_roctxRangePop, NULL, depth);
	return depth;
}

/* roctx range ids, process-wide as roctx's are (1, 2, ...). */
static _Atomic uint64_t next_range_id = 1;

API uint64_t fake_rocp_roctx_start(const char *message)
{
	uint64_t id = atomic_fetch_add(&next_range_id, 1);
	marker_call(ROCP_MARKER_roctxRangeStartA, message, (int64_t)id);
	return id;
}

API void fake_rocp_roctx_stop(uint64_t id)
{
	rocp_marker_api_data_t p = {.size = sizeof(p), .range_id = id};
	api_call(ROCP_CALLBACK_MARKER_CORE_API, ROCP_BUFFER_MARKER_CORE_API, ROCP_MARKER_roctxRangeStop, &p,
	         sizeof(p), NULL, NULL);
}

/* ---- code objects, dispatches, copies ---------------------------------- */

static void symbol_callbacks(const struct code_object *co, int32_t phase)
{
	struct cb_target t[MAX_CB];
	size_t n =
	    callback_targets(ROCP_CALLBACK_CODE_OBJECT, ROCP_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, t);
	for (size_t i = 0; i < co->n; i++) {
		char *name = strdup(co->names[i]);
		rocp_kernel_symbol_data_t p = {.size = sizeof(p),
		                               .kernel_id = co->kernel_ids[i],
		                               .code_object_id = co->id,
		                               .kernel_name = name,
		                               .kernel_object = 0x7f0000000000u + co->kernel_ids[i] * 0x100u,
		                               .kernarg_segment_size = 64,
		                               .kernarg_segment_alignment = 8};
		fire(t, n, ROCP_CALLBACK_CODE_OBJECT, ROCP_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER, phase,
		     0, 0, NULL, &p, sizeof(p));
		if (name)
			scribble_free(name, strlen(name) + 1);
	}
}

API uint64_t fake_rocp_load_code_object(int ordinal, const char *const *names, size_t n, uint64_t *ids)
{
	struct code_object *co = calloc(1, sizeof(*co));
	if (!co)
		return 0;
	co->names = calloc(n ? n : 1, sizeof(*co->names));
	co->kernel_ids = calloc(n ? n : 1, sizeof(*co->kernel_ids));
	pthread_mutex_lock(&S.mu);
	co->id = ++S.next_code_object;
	co->gpu = ordinal;
	for (size_t i = 0; i < n && co->names && co->kernel_ids; i++) {
		co->names[i] = strdup(names[i]);
		co->kernel_ids[i] = ++S.next_kernel;
		if (ids)
			ids[i] = co->kernel_ids[i];
		co->n = i + 1;
	}
	co->next = S.code_objects;
	S.code_objects = co;
	pthread_mutex_unlock(&S.mu);
	symbol_callbacks(co, ROCP_PHASE_LOAD);
	return co->id;
}

API void fake_rocp_unload_code_object(uint64_t id)
{
	pthread_mutex_lock(&S.mu);
	struct code_object **pp = &S.code_objects, *co = NULL;
	for (; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			co = *pp;
			*pp = co->next;
			break;
		}
	}
	pthread_mutex_unlock(&S.mu);
	if (!co)
		return;
	symbol_callbacks(co, ROCP_PHASE_UNLOAD);
	for (size_t i = 0; i < co->n; i++)
		scribble_free(co->names[i], strlen(co->names[i]) + 1);
	free(co->names);
	free(co->kernel_ids);
	free(co);
}

static void fill_head(rocp_async_head_t *h, size_t size, int32_t kind, int32_t op, uint64_t cid,
                      uint64_t start, uint64_t end)
{
	h->size = size;
	h->kind = kind;
	h->operation = op;
	h->correlation_id.internal = cid;
	h->thread_id = thread_id();
	h->start_timestamp = start;
	h->end_timestamp = end;
}

API int fake_rocp_dispatch(const struct fake_rocp_dispatch *d)
{
	static _Atomic uint64_t next_dispatch = 1;
	kd_record_t rec;
	memset(&rec, 0, sizeof(rec));
	rocp_kernel_dispatch_record_t *r = KD_BASE(&rec);
	fill_head(&r->head, sizeof(rec), ROCP_BUFFER_KERNEL_DISPATCH, ROCP_KERNEL_DISPATCH_COMPLETE,
	          d->correlation_id, d->start, d->end);
	rocp_kernel_dispatch_info_t *di = &r->dispatch_info;
	di->size = sizeof(*di);
	di->agent_id.handle = fake_rocp_agent(d->gpu);
	di->queue_id.handle = d->queue;
	di->kernel_id = d->kernel_id;
	di->dispatch_id = atomic_fetch_add(&next_dispatch, 1);
	di->private_segment_size = d->scratch_bytes;
	di->group_segment_size = d->lds_bytes;
	di->workgroup_size = (rocp_dim3_t){d->workgroup[0], d->workgroup[1], d->workgroup[2]};
	di->grid_size = (rocp_dim3_t){d->grid[0], d->grid[1], d->grid[2]};
	return produce(ROCP_BUFFER_KERNEL_DISPATCH, ROCP_KERNEL_DISPATCH_COMPLETE, &rec, sizeof(rec), NULL)
	           ? 0
	           : -1;
}

API int fake_rocp_copy(const struct fake_rocp_copy *c)
{
	mc_record_t rec;
	memset(&rec, 0, sizeof(rec));
	rocp_memory_copy_record_t *r = MC_BASE(&rec);
	fill_head(&r->head, sizeof(rec), ROCP_BUFFER_MEMORY_COPY, c->direction, c->correlation_id, c->start,
	          c->end);
	r->dst_agent_id.handle = fake_rocp_agent(c->dst_gpu);
	r->src_agent_id.handle = fake_rocp_agent(c->src_gpu);
	r->bytes = c->bytes;
#if FAKE_ROCP_ABI == 1
	rec.dst_address = c->dst_address;
	rec.src_address = c->src_address;
#endif
	return produce(ROCP_BUFFER_MEMORY_COPY, c->direction, &rec, sizeof(rec), NULL) ? 0 : -1;
}

/* ---- discovery, registration, finalization ------------------------------ */

static void client_finalize(rocp_client_id_t id);

static void finalize_tool(int i)
{
	pthread_mutex_lock(&S.mu);
	struct tool *t = i >= 0 && i < S.ntools ? &S.tools[i] : NULL;
	bool run = t && t->initialized && !t->finalized;
	if (run)
		t->finalized = true;
	pthread_mutex_unlock(&S.mu);
	if (run && t->result->finalize)
		t->result->finalize(t->result->tool_data);
}

static void client_finalize(rocp_client_id_t id)
{
	finalize_tool((int)id.handle);
}

static void add_tool(rocp_configure_fn *fns, int *count, rocp_configure_fn fn)
{
	for (int i = 0; i < *count; i++)
		if (fns[i] == fn)
			return;
	if (*count < MAX_TOOLS)
		fns[(*count)++] = fn;
}

/* Runs with S.phase == PHASE_CONFIGURING, without the lock. */
static int configure_tools(rocp_configure_fn forced)
{
	rocp_configure_fn fns[MAX_TOOLS];
	int count = 0;
	if (forced)
		add_tool(fns, &count, forced);
	const char *env = getenv("ROCP_TOOL_LIBRARIES");
	char *paths = env ? strdup(env) : NULL;
	char *save = NULL;
	for (char *p = paths ? strtok_r(paths, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save)) {
		void *h = dlopen(p, RTLD_LOCAL | RTLD_LAZY);
		void *sym = h ? dlsym(h, "rocprofiler_configure") : NULL;
		if (sym)
			add_tool(fns, &count, (rocp_configure_fn)sym);
	}
	free(paths);
	void *sym = dlsym(RTLD_DEFAULT, "rocprofiler_configure");
	if (sym)
		add_tool(fns, &count, (rocp_configure_fn)sym);

	char runtime_version[32];
	snprintf(runtime_version, sizeof(runtime_version), "%u.%u.0", MAJOR, MINOR);
	S.ntools = count;
	for (int i = 0; i < count; i++) {
		S.tools[i].id.handle = (uint32_t)i;
		S.tools[i].result = fns[i](ROCP_VERSION_NUMBER(MAJOR, MINOR, 0), runtime_version, (uint32_t)i,
		                           &S.tools[i].id);
	}
	int initialized = 0;
	for (int i = 0; i < count; i++) {
		rocp_configure_result_t *r = S.tools[i].result;
		if (!r || r->size < offsetof(rocp_configure_result_t, tool_data) || !r->initialize)
			continue;
		if (r->initialize(client_finalize, r->tool_data) == 0) {
			S.tools[i].initialized = true;
			initialized++;
		}
	}
	return initialized;
}

static int start_configuration(rocp_configure_fn forced, int32_t *st)
{
	pthread_mutex_lock(&S.mu);
	if (S.phase != PHASE_IDLE) {
		pthread_mutex_unlock(&S.mu);
		*st = STATUS(ROCP_STATUS_V0_ERROR_CONFIGURATION_LOCKED);
		return 0;
	}
	S.phase = PHASE_CONFIGURING;
	if (!S.agents[0].p.size)
		build_agents();
	pthread_mutex_unlock(&S.mu);
	int n = configure_tools(forced);
	pthread_mutex_lock(&S.mu);
	S.phase = PHASE_CONFIGURED;
	pthread_mutex_unlock(&S.mu);
	*st = ROCP_STATUS_SUCCESS;
	return n;
}

API int32_t rocprofiler_force_configure(rocp_configure_fn configure)
{
	FAIL_IF_ARMED();
	if (!configure)
		return STATUS(ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT);
	int32_t st;
	start_configuration(configure, &st);
	return st;
}

API int fake_rocp_runtime_init(void)
{
	int32_t st;
	return start_configuration(NULL, &st);
}

API void fake_rocp_shutdown(void)
{
	pthread_mutex_lock(&S.mu);
	bool was_configured = S.phase == PHASE_CONFIGURED;
	if (was_configured)
		S.phase = PHASE_FINALIZED;
	pthread_mutex_unlock(&S.mu);
	if (!was_configured)
		return;
	for (int i = 0; i < MAX_BUF; i++) {
		if (S.buf[i].used)
			rocprofiler_flush_buffer((rocp_buffer_id_t){(uint64_t)i + 1});
	}
	for (int i = 0; i < S.ntools; i++)
		finalize_tool(i);
	pthread_mutex_lock(&S.mu);
	bool join = S.thread_started;
	S.stop = true;
	S.thread_started = false;
	pthread_cond_signal(&S.work);
	pthread_mutex_unlock(&S.mu);
	if (join)
		pthread_join(S.thread, NULL);
	pthread_mutex_lock(&S.mu);
	for (int i = 0; i < MAX_SVC; i++) {
		free(S.svc[i].ops);
		S.svc[i].ops = NULL;
	}
	for (int i = 0; i < MAX_BUF; i++) {
		for (size_t j = 0; j < S.buf[i].n; j++)
			free(S.buf[i].recs[j].payload);
		free(S.buf[i].recs);
		S.buf[i].recs = NULL;
		S.buf[i].n = 0;
	}
	while (S.code_objects) {
		struct code_object *co = S.code_objects;
		S.code_objects = co->next;
		for (size_t i = 0; i < co->n; i++)
			free(co->names[i]);
		free(co->names);
		free(co->kernel_ids);
		free(co);
	}
	pthread_mutex_unlock(&S.mu);
	quarantine_release();
}

/* The SDK finalizes its tools when the process exits. */
__attribute__((destructor)) static void fake_rocp_at_exit(void)
{
	fake_rocp_shutdown();
}

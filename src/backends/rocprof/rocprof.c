/* The AMD backend (rocprofiler-sdk): registration, contexts, buffers and the
 * backend vtable.
 *
 * The SDK finds strobe through rocprofiler_configure (exported by the
 * program or libstrobe_inject.so), or strobe registers itself with
 * rocprofiler_force_configure when the SDK is loaded and not yet
 * initialised. Every context, buffer and service is created inside
 * initialize (the SDK refuses them afterwards); a trace only starts and
 * stops the main context. The kernel-symbol context starts in initialize
 * and stays running: code objects load before any trace.
 *
 * Buffer records are copied, in strobe's own compact form, inside the
 * SDK's buffer callback (headers and payloads are gone after it). */
#define LOG_TAG "rocprof"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/rocprof/rocprof_lib.h"
#include "backends/rocprof/rocprof_state.h"
#include "common/config.h"
#include "common/log.h"
#include "core/clock.h"

#define BUFFER_BYTES  (4u << 20)
#define SDK_BUFFER    (1u << 20)
#define SDK_WATERMARK (SDK_BUFFER / 2)

struct strb_rocprof_state strb_rocprof = {
    .pool = STRB_GPU_POOL_INIT(strb_rocprof.pool),
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .buf_lock = PTHREAD_MUTEX_INITIALIZER,
    .ctl_lock = PTHREAD_MUTEX_INITIALIZER,
};

static bool in_fork_child;

static void bracket(int which);
static void start_main(void);

/* ---- kernel names (kept for the process: records outlive unloads) ---- */

static void keep_kernel_name(uint64_t id, const char *name)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	pthread_mutex_lock(&s->lock);
	if (s->nkernels == s->kernels_cap) {
		size_t cap = s->kernels_cap ? s->kernels_cap * 2 : 64;
		void *p = realloc(s->kernels, cap * sizeof(*s->kernels));
		if (!p) {
			pthread_mutex_unlock(&s->lock);
			return;
		}
		s->kernels = p;
		s->kernels_cap = cap;
	}
	char *copy = strdup(name ? name : "");
	if (copy)
		s->kernels[s->nkernels++] = (struct strb_rocprof_kernel){id, copy};
	pthread_mutex_unlock(&s->lock);
}

static void on_code_object(int32_t kind, int32_t op, int32_t phase, const void *payload)
{
	const rocp_kernel_symbol_data_t *p = payload;
	if (kind != ROCP_CALLBACK_CODE_OBJECT || op != ROCP_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER ||
	    phase != ROCP_PHASE_LOAD || !p || p->size < offsetof(rocp_kernel_symbol_data_t, kernel_object))
		return;
	/* The name is valid only now; UNLOAD is ignored so that records that
	 * arrive later still find it. */
	keep_kernel_name(p->kernel_id, p->kernel_name);
}

static void code_object_v0(rocp_callback_record_v0_t r, rocp_user_data_t *ud, void *data)
{
	(void)ud, (void)data;
	on_code_object(r.kind, r.operation, r.phase, r.payload);
}

static void code_object_v1(rocp_callback_record_v1_t r, rocp_user_data_t *ud, void *data)
{
	(void)ud, (void)data;
	on_code_object(r.kind, r.operation, r.phase, r.payload);
}

/* ---- buffer records: copied inside the callback ---------------------- */

/* Appends one compact record with `extra` bytes after it to the current
 * pool buffer (under s->buf_lock). */
static struct strb_rocprof_rec *append(size_t extra)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	size_t len = (sizeof(struct strb_rocprof_rec) + extra + 7) & ~(size_t)7;
	if (s->cur && s->cur_valid + len > s->cur_size) {
		strb_gpu_pool_complete(&s->pool, s->cur, s->cur_valid);
		s->cur = NULL;
	}
	if (!s->cur) {
		size_t size = BUFFER_BYTES;
		s->cur = strb_gpu_pool_request(&s->pool, &size);
		s->cur_size = size;
		s->cur_valid = 0;
		if (!s->cur)
			return NULL;
	}
	struct strb_rocprof_rec *r = (void *)(s->cur + s->cur_valid);
	s->cur_valid += len;
	memset(r, 0, len);
	r->len = (uint16_t)len;
	return r;
}

/* Hands the partly filled buffer to the pool (under s->buf_lock). */
static void complete_current(void)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	if (s->cur)
		strb_gpu_pool_complete(&s->pool, s->cur, s->cur_valid);
	s->cur = NULL;
}

static int agent_ordinal(uint64_t handle)
{
	const struct strb_rocprof_state *s = &strb_rocprof;
	for (int i = 0; i < s->nagents; i++)
		if (s->agent_handle[i] == handle)
			return s->agent_ordinal[i];
	return -1;
}

static void copy_async_head(struct strb_rocprof_rec *r, const rocp_async_head_t *h)
{
	r->op = h->operation;
	r->corr = h->correlation_id.internal;
	r->tid = h->thread_id;
	r->start = h->start_timestamp;
	r->end = h->end_timestamp;
}

static void copy_record(const rocp_record_header_t *h)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	const uint64_t *size = h->payload;
	if (h->category != ROCP_CATEGORY_TRACING || !size) {
		s->bad_records++;
		return;
	}
	if (h->kind == ROCP_BUFFER_KERNEL_DISPATCH) {
		const rocp_kernel_dispatch_record_t *k = h->payload;
		if (*size < sizeof(*k)) {
			s->bad_records++;
			return;
		}
		struct strb_rocprof_rec *r = append(0);
		if (!r)
			return;
		const rocp_kernel_dispatch_info_t *d = &k->dispatch_info;
		r->type = STRB_ROCPROF_KERNEL;
		copy_async_head(r, &k->head);
		r->device = agent_ordinal(d->agent_id.handle);
		r->queue = d->queue_id.handle;
		r->kernel_id = d->kernel_id;
		r->lds = d->group_segment_size;
		r->block[0] = d->workgroup_size.x, r->block[1] = d->workgroup_size.y,
		r->block[2] = d->workgroup_size.z;
		r->grid[0] = d->workgroup_size.x ? d->grid_size.x / d->workgroup_size.x : 0;
		r->grid[1] = d->workgroup_size.y ? d->grid_size.y / d->workgroup_size.y : 0;
		r->grid[2] = d->workgroup_size.z ? d->grid_size.z / d->workgroup_size.z : 0;
	} else if (h->kind == ROCP_BUFFER_MEMORY_COPY) {
		const rocp_memory_copy_record_t *c = h->payload;
		if (*size < sizeof(*c)) {
			s->bad_records++;
			return;
		}
		struct strb_rocprof_rec *r = append(0);
		if (!r)
			return;
		r->type = STRB_ROCPROF_COPY;
		copy_async_head(r, &c->head);
		r->src_device = agent_ordinal(c->src_agent_id.handle);
		r->dst_device = agent_ordinal(c->dst_agent_id.handle);
		/* A copy's row is its GPU's: the source GPU for DtoH (the
		 * destination is the CPU), else the destination. */
		r->device = r->dst_device >= 0 ? r->dst_device : r->src_device;
		if (r->src_device >= 0 && r->op == ROCP_MEMORY_COPY_DEVICE_TO_HOST)
			r->device = r->src_device;
		r->bytes = c->bytes;
	}
}

static void buffer_cb(rocp_context_id_t ctx, rocp_buffer_id_t buf, rocp_record_header_t **headers, size_t n,
                      void *data, uint64_t drop_count)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	(void)ctx, (void)buf, (void)data;
	pthread_mutex_lock(&s->buf_lock);
	if (drop_count)
		strb_gpu_pool_add_dropped(&s->pool, drop_count);
	if (strb_gpu_pool_active(&s->pool)) {
		/* Into the current buffer, which goes to the pool when full or at
		 * stop: a delivery is smaller than a pool buffer. */
		for (size_t i = 0; i < n; i++)
			copy_record(headers[i]);
	}
	pthread_mutex_unlock(&s->buf_lock);
}

/* ---- external correlation (strobe_correlation_push) ------------------- */

/* This thread's pushes onto the main context's stack, and its id as the
 * SDK knows it. */
static _Thread_local unsigned tl_pushed;
static _Thread_local uint64_t tl_tid;

/* strobe_correlation_push ids onto the SDK's stack of this thread in the
 * main context, so records made on it carry the id in
 * correlation_id.external. The SDK has one external slot per record: the
 * user pair (strobe_user_correlation_push) is not taken. */
static bool correlation_hook(uint32_t which, const uint64_t *id)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	if (which || !__atomic_load_n(&s->ext_on, __ATOMIC_ACQUIRE))
		return false;
	if (!tl_tid)
		tl_tid = (uint64_t)syscall(SYS_gettid);
	if (id) {
		rocp_user_data_t u = {.value = *id};
		if (!strb_gpu_pool_active(&s->pool) ||
		    s->lib->push_external(s->main, tl_tid, u) != ROCP_STATUS_SUCCESS)
			return false;
		tl_pushed++;
		return true;
	}
	/* The pop of a push taken, whenever it comes (also after stop). */
	rocp_user_data_t last;
	s->lib->pop_external(s->main, tl_tid, &last);
	if (tl_pushed)
		tl_pushed--;
	return true;
}

/* ---- HIP and roctx callbacks (on the calling thread) ------------------ */

static uint64_t strobe_now(void)
{
	return strb_clock_ticks_to_ns(strb_clock_ticks());
}

/* Three numbers of a dim3 argument's text: "{x, y, z}", or named x=, y=,
 * z= in any order. */
static void parse_dim3(const char *v, uint32_t *d)
{
	const char *names[] = {"x=", "y=", "z="};
	bool named = false;
	for (int i = 0; i < 3; i++) {
		const char *p = strstr(v, names[i]);
		if (p) {
			d[i] = (uint32_t)strtoul(p + 2, NULL, 0);
			named = true;
		}
	}
	for (int i = 0; i < 3 && !named && *v; i++) {
		while (*v && (*v < '0' || *v > '9'))
			v++;
		char *end;
		d[i] = (uint32_t)strtoul(v, &end, 10);
		v = end;
	}
}

static int hip_arg(int32_t kind, int32_t op, uint32_t n, const void *addr, int32_t ind, const char *type,
                   const char *name, const char *value, int32_t deref, void *data)
{
	struct strb_rocprof_rec *r = data;
	(void)kind, (void)op, (void)n, (void)addr, (void)ind, (void)type, (void)deref;
	if (!name || !value)
		return 0;
	if (!strcmp(name, "stream"))
		r->stream = strtoull(value, NULL, 0);
	else if (!strcmp(name, "numBlocks"))
		parse_dim3(value, r->grid);
	else if (!strcmp(name, "dimBlocks"))
		parse_dim3(value, r->block);
	else if (!strcmp(name, "gridDimX") || !strcmp(name, "gridDimY") || !strcmp(name, "gridDimZ"))
		r->grid[name[7] - 'X'] = (uint32_t)strtoul(value, NULL, 0);
	else if (!strcmp(name, "blockDimX") || !strcmp(name, "blockDimY") || !strcmp(name, "blockDimZ"))
		r->block[name[8] - 'X'] = (uint32_t)strtoul(value, NULL, 0);
	else if (!strcmp(name, "sharedMemBytes"))
		r->lds = (uint32_t)strtoul(value, NULL, 0);
	else if (!strcmp(name, "sizeBytes"))
		r->bytes = strtoull(value, NULL, 0);
	return 0;
}

/* The part of both callback-record layouts strobe reads; record is the
 * by-value record in its family's layout, for iterate_args. */
struct cb_view {
	uint64_t corr, tid, ext;
	int32_t kind, op, phase;
	const void *payload, *record;
	/* Reads a HIP call's arguments from record, in its family's layout. */
	void (*read_args)(const void *record, struct strb_rocprof_rec *into);
};

static void on_api(const struct cb_view *v, rocp_user_data_t *ud)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	if (!strb_gpu_pool_active(&s->pool))
		return;
	/* roctxRangeStartA's range id is its return value, known at EXIT. */
	bool at_exit = v->kind == ROCP_CALLBACK_HIP_RUNTIME_API || v->op == ROCP_MARKER_roctxRangeStartA;
	if (v->phase == ROCP_PHASE_ENTER) {
		/* Paired with EXIT through the SDK's per-call user data. */
		ud->value = strobe_now();
		if (at_exit)
			return;
	} else if (!at_exit || !ud->value) {
		return;
	}
	struct strb_rocprof_rec tmp = {.op = v->op, .corr = v->corr, .tid = v->tid, .start = ud->value};
	const char *msg = NULL;
	if (v->kind == ROCP_CALLBACK_HIP_RUNTIME_API) {
		tmp.type = STRB_ROCPROF_HIP;
		tmp.end = strobe_now();
		/* The SDK gives a thread with an empty stack the top of the
		 * thread that loaded it: an id counts only when this thread
		 * pushed one. */
		tmp.ext = tl_pushed ? v->ext : 0;
		/* Arguments exist only inside this callback. */
		v->read_args(v->record, &tmp);
	} else {
		const rocp_marker_api_data_t *p = v->payload;
		if (v->op == ROCP_MARKER_roctxMarkA)
			tmp.type = STRB_ROCPROF_MARK;
		else if (v->op == ROCP_MARKER_roctxRangePushA)
			tmp.type = STRB_ROCPROF_PUSH;
		else if (v->op == ROCP_MARKER_roctxRangePop)
			tmp.type = STRB_ROCPROF_POP;
		else if (v->op == ROCP_MARKER_roctxRangeStartA)
			tmp.type = STRB_ROCPROF_START;
		else if (v->op == ROCP_MARKER_roctxRangeStop)
			tmp.type = STRB_ROCPROF_STOP;
		else
			return;
		if (!p || p->size < offsetof(rocp_marker_api_data_t, args_rest))
			p = NULL;
		if (p && tmp.type == STRB_ROCPROF_STOP)
			tmp.queue = p->range_id;
		else if (p && tmp.type != STRB_ROCPROF_POP)
			msg = p->message; /* valid only now: copied below */
		if (tmp.type == STRB_ROCPROF_START) {
			if (!p || p->size < sizeof(*p))
				return;
			tmp.queue = (uint64_t)p->retval;
		}
		tmp.end = tmp.start;
	}
	size_t mlen = msg ? strnlen(msg, 4096) : 0;
	pthread_mutex_lock(&s->buf_lock);
	struct strb_rocprof_rec *r = append(mlen + 1);
	if (r) {
		uint16_t len = r->len;
		*r = tmp;
		r->len = len;
		memcpy(r + 1, msg ? msg : "", mlen);
		((char *)(r + 1))[mlen] = 0;
	}
	pthread_mutex_unlock(&s->buf_lock);
}

static void read_args_v0(const void *record, struct strb_rocprof_rec *into)
{
	rocp_iterate_args_v0_fn iterate = (rocp_iterate_args_v0_fn)strb_rocprof.lib->iterate_args;
	iterate(*(const rocp_callback_record_v0_t *)record, hip_arg, 1, into);
}

static void read_args_v1(const void *record, struct strb_rocprof_rec *into)
{
	rocp_iterate_args_v1_fn iterate = (rocp_iterate_args_v1_fn)strb_rocprof.lib->iterate_args;
	iterate(*(const rocp_callback_record_v1_t *)record, hip_arg, 1, into);
}

#define VIEW(r, reader)                                                                                      \
	{                                                                                                    \
		.corr = (r).correlation_id.internal, .tid = (r).thread_id,                                   \
		.ext = (r).correlation_id.external.value, .kind = (r).kind, .op = (r).operation,             \
		.phase = (r).phase, .payload = (r).payload, .record = &(r), .read_args = (reader)            \
	}

static void api_v0(rocp_callback_record_v0_t r, rocp_user_data_t *ud, void *data)
{
	(void)data;
	struct cb_view v = VIEW(r, read_args_v0);
	on_api(&v, ud);
}

static void api_v1(rocp_callback_record_v1_t r, rocp_user_data_t *ud, void *data)
{
	(void)data;
	struct cb_view v = VIEW(r, read_args_v1);
	on_api(&v, ud);
}

/* ---- registration ------------------------------------------------------ */

static int32_t agents_cb(int32_t version, const void **agents, size_t n, void *data)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	(void)data;
	if (version != ROCP_AGENT_INFO_VERSION_0)
		return ROCP_STATUS_ERROR;
	for (size_t i = 0; i < n && s->nagents < STRB_ROCPROF_MAX_AGENTS; i++) {
		const rocp_agent_prefix_t *a = agents[i];
		if (!a || a->size < sizeof(*a) || a->type != ROCP_AGENT_TYPE_GPU)
			continue;
		s->agent_handle[s->nagents] = a->id.handle;
		/* The name is the SDK's: copied (kept ASCII and JSON-safe). */
		char *name = s->agent_name[s->nagents];
		size_t j = 0;
		for (const char *p = a->name; p && *p && j < sizeof(s->agent_name[0]) - 1; p++)
			name[j++] = *p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\' ? *p : '?';
		name[j] = 0;
		s->agent_ordinal[s->nagents++] = a->logical_node_type_id;
	}
	return ROCP_STATUS_SUCCESS;
}

/* HIP operation names, by id, looked up through the SDK (ids change with
 * the HIP table version). */
static int collect_op(int32_t kind, int32_t op, void *data)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	(void)data;
	const char *name = NULL;
	if (op < 0 || op >= STRB_ROCPROF_MAX_OPS || s->lib->op_name(kind, op, &name, NULL) != 0 || !name)
		return 0;
	if (!s->op_names[op])
		s->op_names[op] = strdup(name);
	s->op_flags[op] = strb_rocprof_classify(name);
	/* libkineto's deny list of noisy calls is left out at the source. */
	if (!(s->op_flags[op] & STRB_ROCPROF_OP_DENIED) && s->nhip_ops < STRB_ROCPROF_MAX_OPS)
		s->hip_ops[s->nhip_ops++] = op;
	return 0;
}

#define CHECK_SDK(call, what)                                                                                \
	do {                                                                                                 \
		int32_t st_ = (call);                                                                        \
		if (st_ != ROCP_STATUS_SUCCESS) {                                                            \
			snprintf(s->init_why, sizeof(s->init_why), "%s failed: status %d", what, (int)st_);  \
			return -1;                                                                           \
		}                                                                                            \
	} while (0)

static int tool_initialize(rocp_client_finalize_t fini, void *tool_data)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	(void)fini, (void)tool_data;
	s->initialized = true;
	s->lib = strb_rocprof_load(s->init_why, sizeof(s->init_why));
	if (!s->lib)
		return -1;
	const struct strb_rocprof_lib *lib = s->lib;
	void (*cb)(void) = lib->major >= 1 ? (void (*)(void))code_object_v1 : (void (*)(void))code_object_v0;
	CHECK_SDK(lib->query_agents(ROCP_AGENT_INFO_VERSION_0, agents_cb, sizeof(rocp_agent_prefix_t), NULL),
	          "rocprofiler_query_available_agents");
	CHECK_SDK(lib->create_context(&s->util), "rocprofiler_create_context");
	int32_t sym_op = ROCP_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER;
	CHECK_SDK(lib->configure_callback_tracing(s->util, ROCP_CALLBACK_CODE_OBJECT, &sym_op, 1, cb, NULL),
	          "rocprofiler_configure_callback_tracing_service");
	CHECK_SDK(lib->start_context(s->util), "rocprofiler_start_context");
	CHECK_SDK(lib->iterate_ops(ROCP_CALLBACK_HIP_RUNTIME_API, collect_op, NULL),
	          "rocprofiler_iterate_callback_tracing_kind_operations");
	CHECK_SDK(lib->create_context(&s->main), "rocprofiler_create_context");
	void (*api)(void) = lib->major >= 1 ? (void (*)(void))api_v1 : (void (*)(void))api_v0;
	CHECK_SDK(lib->configure_callback_tracing(s->main, ROCP_CALLBACK_HIP_RUNTIME_API, s->hip_ops,
	                                          s->nhip_ops, api, NULL),
	          "rocprofiler_configure_callback_tracing_service");
	CHECK_SDK(lib->configure_callback_tracing(s->main, ROCP_CALLBACK_MARKER_CORE_API, NULL, 0, api, NULL),
	          "rocprofiler_configure_callback_tracing_service");
	CHECK_SDK(lib->create_buffer(s->main, SDK_BUFFER, SDK_WATERMARK, ROCP_BUFFER_POLICY_LOSSLESS,
	                             buffer_cb, NULL, &s->buf),
	          "rocprofiler_create_buffer");
	static const int32_t kinds[] = {ROCP_BUFFER_KERNEL_DISPATCH, ROCP_BUFFER_MEMORY_COPY};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		CHECK_SDK(lib->configure_buffer_tracing(s->main, kinds[i], NULL, 0, s->buf),
		          "rocprofiler_configure_buffer_tracing_service");
	/* Set once: the main context stays for the process. */
	__atomic_store_n(&s->ext_on, lib->push_external != NULL, __ATOMIC_RELEASE);
	pthread_mutex_lock(&s->ctl_lock);
	s->ready = true;
	/* A trace that waited for the SDK runs from here. */
	if (s->wanted)
		start_main();
	pthread_mutex_unlock(&s->ctl_lock);
	return 0;
}

static void tool_finalize(void *tool_data)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	(void)tool_data;
	/* The SDK has delivered its buffers; the trace keeps what it got. */
	pthread_mutex_lock(&s->ctl_lock);
	if (s->running)
		bracket(1);
	s->running = false;
	s->finalized = true;
	pthread_mutex_lock(&s->buf_lock);
	complete_current();
	pthread_mutex_unlock(&s->buf_lock);
	s->ready = false;
	pthread_mutex_unlock(&s->ctl_lock);
}

static rocp_configure_result_t configure_result = {
    sizeof(rocp_configure_result_t),
    tool_initialize,
    tool_finalize,
    NULL,
};

rocp_configure_result_t *strb_rocprof_configure(uint32_t version, const char *runtime_version,
                                                uint32_t priority, rocp_client_id_t *id)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	(void)version, (void)runtime_version, (void)priority;
	/* One registration per process, however many symbols the SDK found. */
	if (__atomic_exchange_n(&s->configured, true, __ATOMIC_ACQ_REL) || in_fork_child)
		return NULL;
	if (id)
		id->name = "strobe";
	return &configure_result;
}

/* The symbol the SDK looks up in the process (and in ROCP_TOOL_LIBRARIES).
 * Weak: a program that is a rocprofiler tool itself and links strobe
 * statically keeps its own (strobe then registers with force_configure). */
__attribute__((visibility("default"), weak)) rocp_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority, rocp_client_id_t *id);
__attribute__((visibility("default"), weak)) rocp_configure_result_t *
rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority, rocp_client_id_t *id)
{
	return strb_rocprof_configure(version, runtime_version, priority, id);
}

void *strobe_internal_inject_rocprof(uint32_t version, const char *runtime_version, uint32_t priority,
                                     void *client_id)
{
	return strb_rocprof_configure(version, runtime_version, priority, client_id);
}

/* Registers strobe with an SDK that is loaded and not yet initialised. */
static int register_tool(char *why, size_t len)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	const struct strb_rocprof_lib *lib = s->lib;
	if (s->initialized)
		return 0;
	int on = 0;
	int32_t st = lib->is_initialized(&on);
	if (st != ROCP_STATUS_SUCCESS) {
		snprintf(why, len, "rocprofiler_is_initialized failed: status %d", (int)st);
		return -EIO;
	}
	if (on) {
		snprintf(why, len,
		         "rocprofiler-sdk was configured before strobe registered (link libstrobe into the "
		         "program or run it under `strobe record`)");
		return -EBUSY;
	}
	st = lib->force_configure(strb_rocprof_configure);
	if (st == strb_rocprof_status(lib, ROCP_STATUS_V0_ERROR_CONFIGURATION_LOCKED)) {
		snprintf(
		    why, len,
		    "rocprofiler-sdk is locked: it was configured before strobe registered (link libstrobe "
		    "into the program or run it under `strobe record`)");
		return -EBUSY;
	}
	if (st != ROCP_STATUS_SUCCESS) {
		snprintf(why, len, "rocprofiler_force_configure failed: status %d", (int)st);
		return -EIO;
	}
	if (!s->initialized) {
		snprintf(why, len, "rocprofiler-sdk did not initialise strobe (another tool has priority?)");
		return -EBUSY;
	}
	return 0;
}

/* ---- the backend ------------------------------------------------------- */

static uint64_t gpu_types(void)
{
	return STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMCPY) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_RUNTIME) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_USER_ANNOTATION);
}

/* SDK time (CLOCK_BOOTTIME, so ahead of MONOTONIC by the host's suspend
 * time) against strobe's clock: one SDK reading bracketed by two of
 * strobe's, at start (which = 0) and stop (1); the narrowest of a few
 * tries (the first call may be slow). */
static void bracket(int which)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	uint64_t best = UINT64_MAX;
	s->sdk_at[which] = 0;
	for (int i = 0; i < 8; i++) {
		uint64_t sdk = 0;
		uint64_t a = strobe_now();
		int32_t st = s->lib->get_timestamp(&sdk);
		uint64_t b = strobe_now();
		if (st != ROCP_STATUS_SUCCESS || !sdk || b - a >= best)
			continue;
		best = b - a;
		s->sdk_at[which] = sdk;
		s->strobe_at[which] = a + (b - a) / 2;
	}
}

static void release(void)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	pthread_mutex_lock(&s->ctl_lock);
	if (s->running)
		s->lib->stop_context(s->main);
	s->running = s->wanted = false;
	pthread_mutex_unlock(&s->ctl_lock);
	strb_gpu_pool_set_active(&s->pool, false);
	/* A partly filled buffer goes back (and, inactive, is freed). */
	pthread_mutex_lock(&s->buf_lock);
	complete_current();
	pthread_mutex_unlock(&s->buf_lock);
	strb_gpu_pool_free(&s->pool, strb_gpu_pool_take(&s->pool));
}

static int prepare(const struct strb_config *cfg, uint64_t mask, char *why, size_t len)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	release();
	if (!(mask & gpu_types()))
		return 1;
	if (in_fork_child) {
		snprintf(why, len, "rocprofiler-sdk does not follow a fork into a child process");
		return -ENOTSUP;
	}
	s->lib = strb_rocprof_load(why, len);
	const char *tools = getenv("ROCP_TOOL_LIBRARIES");
	s->pending = false;
	s->sdk_at[0] = s->sdk_at[1] = 0;
	if (!s->lib && !s->finalized && tools && strstr(tools, "libstrobe_inject")) {
		/* strobe record: the program's HIP runtime loads the SDK later. */
		s->pending = true;
		s->mask = mask;
		strb_gpu_pool_begin(&s->pool, cfg->max_gpu_buffer_bytes, BUFFER_BYTES, true);
		strb_gpu_set_correlation_hook(STRB_GPU_ROCM, correlation_hook);
		return 0;
	}
	if (!s->lib)
		return -ENOENT;
	int rc = register_tool(why, len);
	if (rc)
		return rc;
	/* initialize and finalize may run on a program thread. */
	pthread_mutex_lock(&s->ctl_lock);
	bool ready = s->ready;
	if (!ready)
		snprintf(why, len, "%s", s->finalized ? "rocprofiler-sdk has finalized" : s->init_why);
	pthread_mutex_unlock(&s->ctl_lock);
	if (!ready)
		return -EIO;
	s->mask = mask;
	strb_gpu_pool_begin(&s->pool, cfg->max_gpu_buffer_bytes, BUFFER_BYTES, true);
	strb_gpu_set_correlation_hook(STRB_GPU_ROCM, correlation_hook);
	return 0;
}

/* Under ctl_lock, with the SDK ready. */
static void start_main(void)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	bracket(0);
	s->sdk_at[1] = 0;
	int32_t st = s->lib->start_context(s->main);
	if (st != ROCP_STATUS_SUCCESS)
		LOGW("rocprofiler_start_context failed: status %d: no AMD GPU records in this trace",
		     (int)st);
	s->running = st == ROCP_STATUS_SUCCESS;
}

static void start(void)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	pthread_mutex_lock(&s->ctl_lock);
	s->wanted = true;
	if (s->ready)
		start_main();
	pthread_mutex_unlock(&s->ctl_lock);
}

static void stop(void)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	pthread_mutex_lock(&s->ctl_lock);
	s->wanted = false;
	bool running = s->running;
	if (running)
		bracket(1);
	s->running = false;
	pthread_mutex_unlock(&s->ctl_lock);
	/* Outside the lock: the SDK delivers on its thread and waits. */
	if (running) {
		s->lib->flush_buffer(s->buf);
		s->lib->stop_context(s->main);
		s->lib->flush_buffer(s->buf);
	}
	/* What the HIP and roctx callbacks wrote since the last delivery. */
	pthread_mutex_lock(&s->buf_lock);
	complete_current();
	pthread_mutex_unlock(&s->buf_lock);
}

static void toggle(bool enable)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	if (enable == !s->pauses.paused)
		return;
	uint64_t now = strb_clock_ticks_to_ns(strb_clock_ticks());
	strb_gpu_pause(&s->pauses, enable, now);
}

static int process(struct strobe_trace *t, const struct strb_window *w)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	if (s->pending && !s->sdk_at[0]) {
		/* Waited for an SDK that never came (or came after stop). */
		struct strobe_arg why = {
		    .key = "rocm_capture",
		    .kind = STROBE_ARG_STRING,
		    .value.str =
		        "AMD (rocprofiler-sdk) capture is off: the program loaded no rocprofiler-sdk during "
		        "the trace (no HIP runtime started)",
		};
		if (strb_trace_set_meta(t, &why))
			return -ENOMEM;
	}
	struct strb_gpu_buffer *b = strb_gpu_pool_take(&strb_rocprof.pool);
	int rc = strb_rocprof_convert(t, w, b);
	strb_gpu_pool_free(&strb_rocprof.pool, b);
	return rc;
}

/* Flight mode: what the SDK delivered so far, decoded from a copy; the
 * buffers stay for later dumps (and rotate at the budget). The SDK's clock
 * is bracketed again now, for the line through start and now. */
static int flight_dump(struct strobe_trace *t, const struct strb_window *w)
{
	struct strb_rocprof_state *s = &strb_rocprof;
	pthread_mutex_lock(&s->ctl_lock);
	bool running = s->running;
	if (running)
		bracket(1);
	pthread_mutex_unlock(&s->ctl_lock);
	if (running)
		s->lib->flush_buffer(s->buf);
	pthread_mutex_lock(&s->buf_lock);
	complete_current();
	pthread_mutex_unlock(&s->buf_lock);
	return strb_gpu_pool_decode_copy(&s->pool, strb_rocprof_convert, t, w);
}

static void atfork_child(void)
{
	/* The SDK's threads are gone; a lock one of them held stays held. */
	pthread_mutex_init(&strb_rocprof.buf_lock, NULL);
	pthread_mutex_init(&strb_rocprof.ctl_lock, NULL);
	pthread_mutex_init(&strb_rocprof.lock, NULL);
	strb_rocprof.cur = NULL;
	strb_rocprof.wanted = strb_rocprof.pending = false;
	strb_gpu_pool_atfork_child(&strb_rocprof.pool);
	strb_rocprof.running = false;
	strb_rocprof.ready = false;
	strb_rocprof.ext_on = false;
	in_fork_child = true;
	strb_gpu_set_correlation_hook(STRB_GPU_ROCM, NULL);
}

const struct strb_backend strb_rocprof_backend = {
    .name = "AMD (rocprofiler-sdk)",
    .capture_key = "rocm_capture",
    .prepare = prepare,
    .start = start,
    .stop = stop,
    .toggle = toggle,
    .process = process,
    .flight_dump = flight_dump,
    .release = release,
    .atfork_child = atfork_child,
};

/* The fake rocprofiler-sdk (tests/fakes/fake_rocprofiler.c) against the ABI
 * strobe declares (src/backends/rocprof/rocprof_abi.h), in both families. A
 * small tool written here (not strobe) registers through
 * rocprofiler_configure, sets up its contexts, buffer and services in
 * initialize, and records what the SDK hands it; the tests drive the fake and
 * check those records. Each fake is configured once per process, so the
 * tests of one ABI run in order: registration first, shutdown last.
 *
 * STROBE_TEST_LABELS: concurrency (the SDK delivers buffers from its thread) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "backends/rocprof/rocprof_abi.h"
#include "fake_rocprofiler_load.h"

#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

/* ---- the SDK as a tool sees it: dlopen + dlsym -------------------------- */

struct sdk {
	const char *path;
	void *h;
	uint32_t major;
	rocp_get_version_fn get_version;
	rocp_is_initialized_fn is_initialized;
	rocp_is_finalized_fn is_finalized;
	rocp_force_configure_fn force_configure;
	rocp_get_timestamp_fn get_timestamp;
	rocp_create_context_fn create_context;
	rocp_context_fn start_context, stop_context;
	rocp_create_buffer_fn create_buffer;
	rocp_buffer_fn flush_buffer;
	rocp_configure_buffer_tracing_fn configure_buffer_tracing;
	rocp_configure_callback_tracing_fn configure_callback_tracing;
	rocp_query_available_agents_fn query_agents;
	rocp_query_operation_name_fn op_name;
	rocp_iterate_operations_fn iterate_ops;
	void *iterate_args; /* rocp_iterate_args_v0_fn or _v1_fn */
	rocp_push_external_fn push_external;
	rocp_pop_external_fn pop_external;
	struct fake_rocp_control ctl; /* the control API */
};

static struct sdk sdks[2] = {{.path = FAKE_ROCPROFILER_V0_PATH}, {.path = FAKE_ROCPROFILER_V1_PATH}};
static struct sdk *cur; /* the SDK being driven */

#define SYM(s, field, name) (*(void **)&(s)->field = dlsym((s)->h, name))

static void load_sdk(struct sdk *s)
{
	if (s->h)
		return;
	s->h = dlopen(s->path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(s->h);
	void *const syms[] = {
	    SYM(s, get_version, "rocprofiler_get_version"),
	    SYM(s, is_initialized, "rocprofiler_is_initialized"),
	    SYM(s, is_finalized, "rocprofiler_is_finalized"),
	    SYM(s, force_configure, "rocprofiler_force_configure"),
	    SYM(s, get_timestamp, "rocprofiler_get_timestamp"),
	    SYM(s, create_context, "rocprofiler_create_context"),
	    SYM(s, start_context, "rocprofiler_start_context"),
	    SYM(s, stop_context, "rocprofiler_stop_context"),
	    SYM(s, create_buffer, "rocprofiler_create_buffer"),
	    SYM(s, flush_buffer, "rocprofiler_flush_buffer"),
	    SYM(s, configure_buffer_tracing, "rocprofiler_configure_buffer_tracing_service"),
	    SYM(s, configure_callback_tracing, "rocprofiler_configure_callback_tracing_service"),
	    SYM(s, query_agents, "rocprofiler_query_available_agents"),
	    SYM(s, op_name, "rocprofiler_query_callback_tracing_kind_operation_name"),
	    SYM(s, iterate_ops, "rocprofiler_iterate_callback_tracing_kind_operations"),
	    SYM(s, iterate_args, "rocprofiler_iterate_callback_tracing_kind_operation_args"),
	    SYM(s, push_external, "rocprofiler_push_external_correlation_id"),
	    SYM(s, pop_external, "rocprofiler_pop_external_correlation_id"),
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		assert_non_null(syms[i]);
	char why[512];
	if (fake_rocp_control_load(&s->ctl, s->path, why, sizeof(why)))
		fail_msg("%s", why);
	uint32_t minor, patch;
	assert_int_equal(s->get_version(&s->major, &minor, &patch), ROCP_STATUS_SUCCESS);
	/* 1.x has get_status_string; 0.x does not. */
	assert_true((dlsym(s->h, "rocprofiler_get_status_string") != NULL) == (s->major == 1));
}

/* ---- the tool ----------------------------------------------------------- */

enum { MAX_EV = 4096 };

struct api_ev { /* one HIP or roctx call seen by callbacks */
	int32_t kind, op;
	uint64_t ctx;
	uint64_t cid, ancestor, thread, ext;
	int paired; /* EXIT saw what ENTER stored in user_data */
	char stream[32];
	char message[64];
};

struct buf_ev { /* one buffer record, decoded */
	uint32_t kind;
	uint64_t size, cid, ancestor, start, end, thread, ext;
	int32_t op;
	uint64_t agent, queue, kernel_id, bytes, src_agent, dst_agent, dst_address;
	uint32_t lds;
	rocp_dim3_t grid, wg;
};

static struct {
	pthread_mutex_t mu;
	int configure_calls, init_calls, fini_calls;
	uint32_t configure_version;
	char runtime_version[32];
	int32_t st_inside[8]; /* statuses of set-up calls made inside initialize */
	rocp_context_id_t util, main;
	rocp_buffer_id_t buf;
	int ngpus, ncpus;
	char gpu_name[4][32];
	int gpu_ordinal[4];
	uint64_t gpu_handle[4];
	struct api_ev api[MAX_EV];
	size_t napi;
	struct buf_ev rec[MAX_EV];
	size_t nrec;
	uint64_t drops, deliveries, deliveries_off_thread, bad;
	_Atomic int slow; /* the buffer callback takes 20 ms */
	char symbols[8][64];
	uint64_t symbol_ids[8];
	int32_t symbol_phase[8];
	size_t nsym;
	const char *kept_name;    /* a kernel_name pointer kept past its callback */
	const char *kept_message; /* a roctx message kept past its callback */
	const void *kept_payload; /* a buffer payload kept past its callback */
	unsigned char kept_record[sizeof(rocp_callback_record_v1_t)]; /* a HIP callback record, kept */
} T = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t gettid_(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

static int args_cb(int32_t kind, int32_t op, uint32_t n, const void *addr, int32_t ind, const char *type,
                   const char *name, const char *value, int32_t deref, void *data)
{
	(void)kind, (void)op, (void)n, (void)addr, (void)ind, (void)type, (void)deref;
	if (!strcmp(name, "stream"))
		snprintf(data, 32, "%s", value);
	return 0;
}

/* The part of both callback-record layouts this tool reads. */
struct cb_view {
	uint64_t ctx, cid, ancestor, thread, ext;
	int32_t kind, op, phase;
	void *payload;
	/* For iterate_args: the record in its own ABI's type, the other NULL
	 * (typed pointers, so no record is ever read as the larger type). */
	const rocp_callback_record_v0_t *record_v0;
	const rocp_callback_record_v1_t *record_v1;
};

static void on_callback(const struct cb_view *r, rocp_user_data_t *ud)
{
	if (r->kind == ROCP_CALLBACK_CODE_OBJECT) {
		const rocp_kernel_symbol_data_t *p = r->payload;
		assert_int_equal(r->ctx, T.util.handle);
		assert_true(p->size >= sizeof(*p));
		pthread_mutex_lock(&T.mu);
		if (T.nsym < 8) {
			snprintf(T.symbols[T.nsym], 64, "%s", p->kernel_name);
			T.symbol_ids[T.nsym] = p->kernel_id;
			T.symbol_phase[T.nsym++] = r->phase;
		}
		T.kept_name = p->kernel_name;
		pthread_mutex_unlock(&T.mu);
		return;
	}
	if (r->phase == ROCP_PHASE_ENTER) {
		pthread_mutex_lock(&T.mu);
		size_t i = T.napi < MAX_EV ? T.napi++ : MAX_EV - 1;
		struct api_ev *e = &T.api[i];
		memset(e, 0, sizeof(*e));
		e->kind = r->kind, e->op = r->op, e->cid = r->cid, e->ancestor = r->ancestor, e->ctx = r->ctx;
		e->thread = r->thread, e->ext = r->ext;
		pthread_mutex_unlock(&T.mu);
		ud->value = 1000000 + i; /* what EXIT must find again */
		if (r->kind == ROCP_CALLBACK_HIP_RUNTIME_API) {
			int32_t st;
			if (r->record_v1) {
				st = ((rocp_iterate_args_v1_fn)cur->iterate_args)(*r->record_v1, args_cb, 1,
				                                                  e->stream);
				memcpy(T.kept_record, r->record_v1, sizeof(*r->record_v1));
			} else {
				st = ((rocp_iterate_args_v0_fn)cur->iterate_args)(*r->record_v0, args_cb, 1,
				                                                  e->stream);
				memcpy(T.kept_record, r->record_v0, sizeof(*r->record_v0));
			}
			assert_int_equal(st, ROCP_STATUS_SUCCESS);
		} else {
			const rocp_marker_api_data_t *p = r->payload;
			assert_true(p->size >= offsetof(rocp_marker_api_data_t, args_rest));
			if (r->op != ROCP_MARKER_roctxRangePop) {
				snprintf(e->message, sizeof(e->message), "%s", p->message);
				T.kept_message = p->message;
			}
		}
	} else if (r->phase == ROCP_PHASE_EXIT) {
		assert_true(ud->value >= 1000000 && ud->value - 1000000 < MAX_EV);
		struct api_ev *e = &T.api[ud->value - 1000000];
		assert_int_equal(e->cid, r->cid);
		assert_int_equal(e->ext, r->ext);
		e->paired = 1;
	}
}

/* One callback per ABI family (the record comes by value, in its layout). */
#define NO_ANCESTOR(r) 0
#define ANCESTOR(r)    (r).correlation_id.ancestor
#define DEFINE_CALLBACK(name, record_type, abi, abi_tag, ancestor_of)                                        \
	static void name(record_type r, rocp_user_data_t *ud, void *data)                                    \
	{                                                                                                    \
		(void)data;                                                                                  \
		assert_int_equal(cur->major, abi);                                                           \
		struct cb_view v = {.ctx = r.context_id.handle,                                              \
		                    .cid = r.correlation_id.internal,                                        \
		                    .ancestor = ancestor_of(r),                                              \
		                    .thread = r.thread_id,                                                   \
		                    .ext = r.correlation_id.external.value,                                  \
		                    .kind = r.kind,                                                          \
		                    .op = r.operation,                                                       \
		                    .phase = r.phase,                                                        \
		                    .payload = r.payload,                                                    \
		                    .record_##abi_tag = &r};                                                 \
		on_callback(&v, ud);                                                                         \
	}
DEFINE_CALLBACK(callback_v0, rocp_callback_record_v0_t, 0, v0, NO_ANCESTOR)
DEFINE_CALLBACK(callback_v1, rocp_callback_record_v1_t, 1, v1, ANCESTOR)

static void decode_head(struct buf_ev *e, const rocp_async_head_t *h)
{
	e->size = h->size, e->op = h->operation, e->cid = h->correlation_id.internal;
	e->start = h->start_timestamp, e->end = h->end_timestamp, e->thread = h->thread_id;
	e->ext = h->correlation_id.external.value;
}

static void decode_api(struct buf_ev *e, const void *payload)
{
	if (cur->major == 1) {
		const rocp_api_record_v1_t *a = payload;
		e->size = a->size, e->op = a->operation, e->cid = a->correlation_id.internal;
		e->ancestor = a->correlation_id.ancestor, e->start = a->start_timestamp,
		e->end = a->end_timestamp;
		e->thread = a->thread_id, e->ext = a->correlation_id.external.value;
	} else {
		const rocp_api_record_v0_t *a = payload;
		e->size = a->size, e->op = a->operation, e->cid = a->correlation_id.internal;
		e->start = a->start_timestamp, e->end = a->end_timestamp, e->thread = a->thread_id;
		e->ext = a->correlation_id.external.value;
	}
}

/* Runs on the SDK's thread, where cmocka's asserts cannot jump: failed
 * checks are counted and the tests assert the count is 0. */
#define CHECK(cond) (T.bad += !(cond))

static void buffer_cb(rocp_context_id_t ctx, rocp_buffer_id_t buf, rocp_record_header_t **h, size_t n,
                      void *data, uint64_t drops)
{
	(void)data;
	if (T.slow)
		usleep(20000);
	pthread_mutex_lock(&T.mu);
	CHECK(ctx.handle == T.main.handle);
	CHECK(buf.handle == T.buf.handle);
	T.drops += drops;
	T.deliveries++;
	for (size_t i = 0; i < n && T.nrec < MAX_EV; i++) {
		CHECK(h[i]->category == ROCP_CATEGORY_TRACING);
		CHECK(h[i]->hash == ((uint64_t)ROCP_CATEGORY_TRACING | (uint64_t)h[i]->kind << 32));
		struct buf_ev *e = &T.rec[T.nrec++];
		memset(e, 0, sizeof(*e));
		e->kind = h[i]->kind;
		if (e->kind == ROCP_BUFFER_KERNEL_DISPATCH) {
			const rocp_kernel_dispatch_record_t *k = h[i]->payload;
			const rocp_kernel_dispatch_info_t *d = &k->dispatch_info;
			decode_head(e, &k->head);
			CHECK(d->size == sizeof(*d));
			e->agent = d->agent_id.handle, e->queue = d->queue_id.handle,
			e->kernel_id = d->kernel_id;
			e->lds = d->group_segment_size, e->grid = d->grid_size, e->wg = d->workgroup_size;
		} else if (e->kind == ROCP_BUFFER_MEMORY_COPY) {
			const rocp_memory_copy_record_t *c = h[i]->payload;
			decode_head(e, &c->head);
			e->bytes = c->bytes;
			e->src_agent = c->src_agent_id.handle, e->dst_agent = c->dst_agent_id.handle;
			if (c->head.size >= sizeof(rocp_memory_copy_record_v1_t))
				e->dst_address = ((const rocp_memory_copy_record_v1_t *)c)->dst_address;
		} else {
			decode_api(e, h[i]->payload);
		}
		T.kept_payload = h[i]->payload;
	}
	if (gettid_() != (uint64_t)getpid())
		T.deliveries_off_thread++;
	pthread_mutex_unlock(&T.mu);
}

static int agents_cb(int32_t version, const void **agents, size_t n, void *data)
{
	(void)data;
	assert_int_equal(version, ROCP_AGENT_INFO_VERSION_0);
	for (size_t i = 0; i < n; i++) {
		const rocp_agent_prefix_t *a = agents[i];
		assert_true(a->size >= sizeof(*a));
		if (a->type == ROCP_AGENT_TYPE_CPU) {
			T.ncpus++;
		} else if (a->type == ROCP_AGENT_TYPE_GPU && T.ngpus < 4) {
			snprintf(T.gpu_name[T.ngpus], 32, "%s", a->name);
			T.gpu_ordinal[T.ngpus] = a->logical_node_type_id;
			T.gpu_handle[T.ngpus++] = a->id.handle;
		}
	}
	return ROCP_STATUS_SUCCESS;
}

struct op_lookup {
	int32_t ops[64];
	size_t n;
};

/* Every HIP op but hipGetDevice, found by name as a tool must. */
static int collect_ops(int32_t kind, int32_t op, void *data)
{
	struct op_lookup *l = data;
	const char *name = NULL;
	assert_int_equal(cur->op_name(kind, op, &name, NULL), ROCP_STATUS_SUCCESS);
	if (strcmp(name, "hipGetDevice") != 0 && l->n < 64)
		l->ops[l->n++] = op;
	return 0;
}

static int tool_init(rocp_client_finalize_t fini, void *tool_data)
{
	(void)fini, (void)tool_data;
	struct sdk *s = cur;
	void (*cb)(void) = s->major == 1 ? (void (*)(void))callback_v1 : (void (*)(void))callback_v0;
	T.init_calls++;
	T.ngpus = T.ncpus = 0;
	T.st_inside[0] =
	    s->query_agents(ROCP_AGENT_INFO_VERSION_0, agents_cb, sizeof(rocp_agent_prefix_t), NULL);
	T.st_inside[1] = s->create_context(&T.util);
	int32_t sym_op = ROCP_CODE_OBJECT_DEVICE_KERNEL_SYMBOL_REGISTER;
	T.st_inside[2] =
	    s->configure_callback_tracing(T.util, ROCP_CALLBACK_CODE_OBJECT, &sym_op, 1, cb, NULL);
	T.st_inside[3] = s->start_context(T.util);
	T.st_inside[4] = s->create_context(&T.main);
	struct op_lookup l = {.n = 0};
	assert_int_equal(s->iterate_ops(ROCP_CALLBACK_HIP_RUNTIME_API, collect_ops, &l), ROCP_STATUS_SUCCESS);
	int32_t st =
	    s->configure_callback_tracing(T.main, ROCP_CALLBACK_HIP_RUNTIME_API, l.ops, l.n, cb, NULL);
	st |= s->configure_callback_tracing(T.main, ROCP_CALLBACK_MARKER_CORE_API, NULL, 0, cb, NULL);
	T.st_inside[5] = st;
	T.st_inside[6] = s->create_buffer(T.main, 64 * 1024, 8 * 1024, ROCP_BUFFER_POLICY_LOSSLESS, buffer_cb,
	                                  NULL, &T.buf);
	st = 0;
	static const int32_t kinds[] = {ROCP_BUFFER_KERNEL_DISPATCH, ROCP_BUFFER_MEMORY_COPY,
	                                ROCP_BUFFER_HIP_RUNTIME_API, ROCP_BUFFER_MARKER_CORE_API};
	for (size_t i = 0; i < 4; i++)
		st |= s->configure_buffer_tracing(T.main, kinds[i], NULL, 0, T.buf);
	T.st_inside[7] = st;
	return 0;
}

static int exit_child; /* this process is the child of test_finalize_at_exit */

static void tool_fini(void *tool_data)
{
	(void)tool_data;
	T.fini_calls++;
	if (exit_child) { /* the test program's own report, read by the parent */
		size_t kernels = 0;
		pthread_mutex_lock(&T.mu);
		for (size_t i = 0; i < T.nrec; i++)
			kernels += T.rec[i].kind == ROCP_BUFFER_KERNEL_DISPATCH;
		printf("finalized records=%zu kernels=%zu\n", T.nrec, kernels);
		pthread_mutex_unlock(&T.mu);
		fflush(stdout);
	}
}

static rocp_configure_result_t tool_result = {sizeof(rocp_configure_result_t), tool_init, tool_fini, NULL};

/* The tool's entry point, exported from this executable for the SDK to find. */
__attribute__((visibility("default"))) __typeof__(*(rocp_configure_fn)0) rocprofiler_configure;

rocp_configure_result_t *rocprofiler_configure(uint32_t version, const char *runtime_version,
                                               uint32_t priority, rocp_client_id_t *id)
{
	(void)priority;
	T.configure_calls++;
	T.configure_version = version;
	snprintf(T.runtime_version, sizeof(T.runtime_version), "%s", runtime_version);
	id->name = "rocprof-fake-test";
	return &tool_result;
}

/* ---- helpers ------------------------------------------------------------ */

static int setup_v0(void **state)
{
	(void)state;
	load_sdk(&sdks[0]);
	cur = &sdks[0];
	return 0;
}

static int setup_v1(void **state)
{
	(void)state;
	load_sdk(&sdks[1]);
	cur = &sdks[1];
	return 0;
}

static void reset(void)
{
	pthread_mutex_lock(&T.mu);
	T.napi = T.nrec = T.nsym = 0;
	T.drops = T.deliveries = T.deliveries_off_thread = 0;
	pthread_mutex_unlock(&T.mu);
}

static int32_t locked_status(void)
{
	return cur->major == 1 ? 16 : 15; /* notes section 2: 1.x inserted a code at 13 */
}

static size_t count_kind(uint32_t kind)
{
	assert_int_equal(T.bad, 0);
	size_t n = 0;
	for (size_t i = 0; i < T.nrec; i++)
		n += T.rec[i].kind == kind;
	return n;
}

static const struct buf_ev *find_rec(uint32_t kind, uint64_t cid)
{
	for (size_t i = 0; i < T.nrec; i++)
		if (T.rec[i].kind == kind && T.rec[i].cid == cid)
			return &T.rec[i];
	return NULL;
}

static const struct api_ev *find_api(uint64_t cid)
{
	for (size_t i = 0; i < T.napi; i++)
		if (T.api[i].cid == cid)
			return &T.api[i];
	return NULL;
}

/* ---- tests -------------------------------------------------------------- */

static void test_registration(void **state)
{
	(void)state;
	struct sdk *s = cur;
	rocp_context_id_t c;
	rocp_buffer_id_t b;
	int init = -1;
	T.configure_calls = T.init_calls = T.fini_calls = 0;
	assert_int_equal(s->is_initialized(&init), 0);
	assert_int_equal(init, 0);
	/* Before the runtimes start: nothing can be set up. */
	assert_int_equal(s->create_context(&c), locked_status());
	assert_int_equal(s->create_buffer(c, 4096, 0, ROCP_BUFFER_POLICY_LOSSLESS, buffer_cb, NULL, &b),
	                 locked_status());

	if (s->major == 0) {
		/* Discovery: ROCP_TOOL_LIBRARIES entries without the symbol (a
		 * missing file, a library lacking it) are skipped; the
		 * process's own symbol is found. */
		char env[512];
		snprintf(env, sizeof(env), "/nonexistent/libtool.so:%s", sdks[1].path);
		setenv("ROCP_TOOL_LIBRARIES", env, 1);
		assert_int_equal(s->ctl.runtime_init(), 1);
		unsetenv("ROCP_TOOL_LIBRARIES");
		assert_int_equal(s->force_configure(rocprofiler_configure), locked_status());
	} else {
		/* Explicit registration before the runtimes start; the same
		 * function found again in the process is configured once. */
		assert_int_equal(s->force_configure(rocprofiler_configure), ROCP_STATUS_SUCCESS);
		assert_int_equal(s->force_configure(rocprofiler_configure), locked_status());
		assert_int_equal(s->ctl.runtime_init(), 0);
	}
	assert_int_equal(T.configure_calls, 1);
	assert_int_equal(T.init_calls, 1);
	assert_int_equal(T.configure_version, s->major == 1 ? 10100 : 500);
	assert_string_equal(T.runtime_version, s->major == 1 ? "1.1.0" : "0.5.0");
	for (int i = 0; i < 8; i++)
		assert_int_equal(T.st_inside[i], ROCP_STATUS_SUCCESS);
	assert_int_equal(s->is_initialized(&init), 0);
	assert_int_equal(init, 1);

	/* After initialize: locked again. */
	assert_int_equal(s->create_context(&c), locked_status());
	assert_int_equal(s->configure_buffer_tracing(T.main, ROCP_BUFFER_MEMORY_COPY, NULL, 0, T.buf),
	                 locked_status());
	assert_int_equal(s->configure_callback_tracing(T.main, ROCP_CALLBACK_MARKER_CORE_API, NULL, 0,
	                                               (void (*)(void))callback_v0, NULL),
	                 locked_status());

	/* Agents: one CPU and two GPUs with their ordinals; a struct larger
	 * than the SDK's is refused. */
	assert_int_equal(T.ncpus, 1);
	assert_int_equal(T.ngpus, 2);
	assert_int_equal(T.gpu_ordinal[0], 0);
	assert_int_equal(T.gpu_ordinal[1], 1);
	assert_string_equal(T.gpu_name[0], "gfx90a");
	assert_int_equal(T.gpu_handle[1], s->ctl.agent(1));
	assert_int_equal(s->query_agents(ROCP_AGENT_INFO_VERSION_0, agents_cb, 4096, NULL),
	                 rocp_status_code(s->major, ROCP_STATUS_V0_ERROR_INCOMPATIBLE_ABI));
}

struct launch {
	uint64_t kernel_id, queue, t0;
	int gpu;
	uint64_t nested_cid;
};

static void launch_body(uint64_t cid, void *arg)
{
	struct launch *l = arg;
	struct fake_rocp_dispatch d = {.correlation_id = cid,
	                               .gpu = l->gpu,
	                               .queue = l->queue,
	                               .kernel_id = l->kernel_id,
	                               .grid = {256, 4, 1},
	                               .workgroup = {64, 2, 1},
	                               .lds_bytes = 1024,
	                               .start = l->t0,
	                               .end = l->t0 + 500};
	assert_int_equal(cur->ctl.dispatch(&d), 0);
	/* A runtime call nested inside the launch. */
	l->nested_cid = cur->ctl.hip_call("hipMalloc", NULL, 0, NULL, NULL);
}

static void test_kernels(void **state)
{
	(void)state;
	struct sdk *s = cur;
	reset();
	static const char *const names[] = {"_Z6vecaddPfS_S_i", "_Z4gemmv"};
	uint64_t ids[2];
	uint64_t co = s->ctl.load_code_object(1, names, 2, ids);
	/* Symbols arrive at load time through the always-running context. */
	assert_int_equal(T.nsym, 2);
	assert_string_equal(T.symbols[0], names[0]);
	assert_int_equal(T.symbol_ids[1], ids[1]);
	assert_int_equal(T.symbol_phase[0], ROCP_PHASE_LOAD);
	assert_int_equal((unsigned char)T.kept_name[0], 0xA5); /* the name is gone after the callback */

	assert_int_equal(s->start_context(T.main), ROCP_STATUS_SUCCESS);
	/* Two streams sharing HSA queue 7 on GPU 1. */
	struct fake_rocp_arg a1[] = {{"stream", "hipStream_t", "0x1000"}, {"numBlocks", "dim3", "{4, 2, 1}"}};
	struct fake_rocp_arg a2[] = {{"stream", "hipStream_t", "0x2000"}};
	struct launch l1 = {.kernel_id = ids[0], .queue = 7, .gpu = 1, .t0 = s->ctl.now()};
	struct launch l2 = {.kernel_id = ids[1], .queue = 7, .gpu = 1, .t0 = s->ctl.now() + 1000};
	uint64_t c1 = s->ctl.hip_call("hipLaunchKernel", a1, 2, launch_body, &l1);
	uint64_t c2 = s->ctl.hip_call("hipLaunchKernel", a2, 1, launch_body, &l2);
	assert_int_equal(s->ctl.hip_call("hipNoSuchCall", NULL, 0, NULL, NULL), 0);
	/* Fresh ids per call, nested calls included. */
	assert_true(c1 > 0 && l1.nested_cid == c1 + 1 && c2 == c1 + 2 && l2.nested_cid == c2 + 1);
	/* hipGetDevice was left out of the service: no callback, but its
	 * buffer record is still produced (all HIP ops are buffered). */
	uint64_t c3 = s->ctl.hip_call("hipGetDevice", NULL, 0, NULL, NULL);
	assert_int_equal(s->stop_context(T.main), ROCP_STATUS_SUCCESS);
	struct fake_rocp_dispatch late = {.correlation_id = c2, .gpu = 0, .kernel_id = ids[0]};
	assert_int_equal(s->ctl.dispatch(&late), -1); /* context stopped at enqueue */
	assert_int_equal(s->flush_buffer(T.buf), ROCP_STATUS_SUCCESS);

	/* Callbacks: both launches and the nested mallocs, paired through
	 * user_data, each launch with its stream read from the arguments. */
	assert_int_equal(T.napi, 4);
	const struct api_ev *e1 = find_api(c1), *e2 = find_api(c2), *en = find_api(l1.nested_cid);
	assert_non_null(e1);
	assert_non_null(e2);
	assert_non_null(en);
	assert_null(find_api(c3));
	assert_true(e1->paired && e2->paired && en->paired);
	assert_int_equal(e1->ctx, T.main.handle);
	/* The arguments of a call can be read only inside its callback. */
	int32_t st;
	char stream[32];
	if (s->major == 1) {
		rocp_callback_record_v1_t r;
		memcpy(&r, T.kept_record, sizeof(r));
		st = ((rocp_iterate_args_v1_fn)s->iterate_args)(r, args_cb, 1, stream);
	} else {
		rocp_callback_record_v0_t r;
		memcpy(&r, T.kept_record, sizeof(r));
		st = ((rocp_iterate_args_v0_fn)s->iterate_args)(r, args_cb, 1, stream);
	}
	assert_int_equal(st, rocp_status_code(s->major, ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT));
	assert_string_equal(e1->stream, "0x1000");
	assert_string_equal(e2->stream, "0x2000");
	assert_int_equal(e1->thread, gettid_());
	int32_t launch_op = -1;
	struct op_lookup l = {.n = 0};
	s->iterate_ops(ROCP_CALLBACK_HIP_RUNTIME_API, collect_ops, &l);
	for (size_t i = 0; i < l.n; i++) {
		const char *name;
		s->op_name(ROCP_CALLBACK_HIP_RUNTIME_API, l.ops[i], &name, NULL);
		if (!strcmp(name, "hipLaunchKernel"))
			launch_op = l.ops[i];
	}
	assert_int_equal(e1->op, launch_op);
	/* 1.x: ancestor is the enclosing call; 0.x has none. */
	assert_int_equal(en->ancestor, s->major == 1 ? c1 : 0);
	assert_int_equal(e1->ancestor, 0);

	/* Buffer: two dispatches with the launch's id, kernel, dims, LDS, the
	 * shared queue and GPU 1's agent; 5 HIP records. */
	assert_int_equal(count_kind(ROCP_BUFFER_KERNEL_DISPATCH), 2);
	assert_int_equal(count_kind(ROCP_BUFFER_HIP_RUNTIME_API), 5);
	const struct buf_ev *k1 = find_rec(ROCP_BUFFER_KERNEL_DISPATCH, c1);
	const struct buf_ev *k2 = find_rec(ROCP_BUFFER_KERNEL_DISPATCH, c2);
	assert_non_null(k1);
	assert_non_null(k2);
	assert_int_equal(k1->size, s->major == 1 ? sizeof(rocp_kernel_dispatch_record_v1_t)
	                                         : sizeof(rocp_kernel_dispatch_record_t));
	assert_int_equal(k1->op, ROCP_KERNEL_DISPATCH_COMPLETE);
	assert_int_equal(k1->kernel_id, ids[0]);
	assert_int_equal(k2->kernel_id, ids[1]);
	assert_int_equal(k1->queue, 7);
	assert_int_equal(k2->queue, 7);
	assert_int_equal(k1->agent, T.gpu_handle[1]);
	assert_int_equal(k1->grid.x, 256);
	assert_int_equal(k1->wg.x, 64);
	assert_int_equal(k1->grid.y / k1->wg.y, 2);
	assert_int_equal(k1->lds, 1024);
	assert_int_equal(k1->start, l1.t0);
	assert_int_equal(k1->end, l1.t0 + 500);
	const struct buf_ev *h3 = find_rec(ROCP_BUFFER_HIP_RUNTIME_API, c3);
	assert_non_null(h3);
	assert_int_equal(h3->size,
	                 s->major == 1 ? sizeof(rocp_api_record_v1_t) : sizeof(rocp_api_record_v0_t));
	assert_int_equal(h3->thread, gettid_());
	assert_true(h3->start <= h3->end);
	const struct buf_ev *hn = find_rec(ROCP_BUFFER_HIP_RUNTIME_API, l1.nested_cid);
	assert_non_null(hn);
	assert_int_equal(hn->ancestor, s->major == 1 ? c1 : 0);
	/* Delivered from the SDK's thread; the payloads are gone after it. */
	assert_true(T.deliveries_off_thread >= 1);
	assert_int_equal(*(const uint64_t *)T.kept_payload, 0xA5A5A5A5A5A5A5A5u);

	/* Unload: UNLOAD callbacks name the kernels one last time. */
	s->ctl.unload_code_object(co);
	assert_int_equal(T.nsym, 4);
	assert_int_equal(T.symbol_phase[2], ROCP_PHASE_UNLOAD);
	assert_string_equal(T.symbols[3], names[1]);
}

static void test_copies(void **state)
{
	(void)state;
	struct sdk *s = cur;
	reset();
	assert_int_equal(s->start_context(T.main), ROCP_STATUS_SUCCESS);
	uint64_t cid = s->ctl.hip_call("hipMemcpyAsync", NULL, 0, NULL, NULL);
	uint64_t t = s->ctl.now();
	struct fake_rocp_copy h2d = {cid,    ROCP_MEMORY_COPY_HOST_TO_DEVICE, -1, 0, 4096, 0x10, 0x20, t,
	                             t + 100};
	struct fake_rocp_copy d2h = {cid + 100, ROCP_MEMORY_COPY_DEVICE_TO_HOST, 1, -1, 512, 0x30, 0x40, t,
	                             t + 50};
	assert_int_equal(s->ctl.copy(&h2d), 0);
	assert_int_equal(s->ctl.copy(&d2h), 0);
	s->stop_context(T.main);
	s->flush_buffer(T.buf);
	assert_int_equal(count_kind(ROCP_BUFFER_MEMORY_COPY), 2);
	const struct buf_ev *a = find_rec(ROCP_BUFFER_MEMORY_COPY, cid);
	const struct buf_ev *b = find_rec(ROCP_BUFFER_MEMORY_COPY, cid + 100);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->size, s->major == 1 ? sizeof(rocp_memory_copy_record_v1_t)
	                                        : sizeof(rocp_memory_copy_record_t));
	assert_int_equal(a->op, ROCP_MEMORY_COPY_HOST_TO_DEVICE);
	assert_int_equal(a->bytes, 4096);
	assert_int_equal(a->src_agent, s->ctl.agent(-1));
	assert_int_equal(a->dst_agent, T.gpu_handle[0]);
	assert_int_equal(a->dst_address, s->major == 1 ? 0x20 : 0);
	/* Device to host: the destination is the CPU, the GPU is the source. */
	assert_int_equal(b->op, ROCP_MEMORY_COPY_DEVICE_TO_HOST);
	assert_int_equal(b->src_agent, T.gpu_handle[1]);
	assert_int_equal(b->dst_agent, s->ctl.agent(-1));
	assert_int_equal(b->end - b->start, 50);
}

static void test_roctx(void **state)
{
	(void)state;
	struct sdk *s = cur;
	reset();
	s->start_context(T.main);
	char msg[16] = "outer";
	assert_int_equal(s->ctl.roctx_push(msg), 0);
	assert_int_equal((unsigned char)T.kept_message[0], 0xA5); /* gone after the callback */
	strcpy(msg, "changed");
	s->ctl.roctx_mark("tick");
	assert_int_equal(s->ctl.roctx_pop(), 1);
	assert_int_equal(s->ctl.roctx_pop(), -1);
	s->stop_context(T.main);
	s->flush_buffer(T.buf);
	assert_int_equal(T.napi, 4);
	assert_int_equal(T.api[0].op, ROCP_MARKER_roctxRangePushA);
	assert_string_equal(T.api[0].message, "outer");
	assert_int_equal(T.api[1].op, ROCP_MARKER_roctxMarkA);
	assert_string_equal(T.api[1].message, "tick");
	assert_int_equal(T.api[2].op, ROCP_MARKER_roctxRangePop);
	assert_true(T.api[0].paired && T.api[2].paired);
	assert_int_equal(count_kind(ROCP_BUFFER_MARKER_CORE_API), 4);
	const struct buf_ev *r = find_rec(ROCP_BUFFER_MARKER_CORE_API, T.api[1].cid);
	assert_non_null(r);
	assert_int_equal(r->op, ROCP_MARKER_roctxMarkA);
	assert_int_equal(r->size,
	                 s->major == 1 ? sizeof(rocp_api_record_v1_t) : sizeof(rocp_api_record_v0_t));
}

static void *call_elsewhere(void *p)
{
	*(uint64_t *)p = cur->ctl.hip_call("hipFree", NULL, 0, NULL, NULL);
	return NULL;
}

/* External correlation: a stack per context and thread; records made on
 * the thread carry the top of their context's stack (callbacks and buffer
 * records of a call as at its ENTER, a dispatch as at its production); a
 * thread with none gets the loading thread's; pop of an empty stack is 0. */
static void test_external(void **state)
{
	(void)state;
	struct sdk *s = cur;
	reset();
	uint64_t me = gettid_();
	rocp_user_data_t u = {.value = 11}, out = {.value = 1};
	assert_int_equal(s->push_external(T.main, me, u), ROCP_STATUS_SUCCESS);
	u.value = 22;
	assert_int_equal(s->push_external(T.util, me, u), ROCP_STATUS_SUCCESS);
	assert_int_equal(s->push_external(T.main, 1, u),
	                 rocp_status_code(s->major, ROCP_STATUS_V0_ERROR_INVALID_ARGUMENT));
	assert_int_equal(s->push_external((rocp_context_id_t){999}, me, u),
	                 ROCP_STATUS_ERROR_CONTEXT_NOT_FOUND);
	assert_int_equal(s->start_context(T.main), ROCP_STATUS_SUCCESS);
	struct launch l = {.kernel_id = 1, .queue = 3, .gpu = 0, .t0 = s->ctl.now()};
	uint64_t c = s->ctl.hip_call("hipLaunchKernel", NULL, 0, launch_body, &l);
	uint64_t other = 0;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, call_elsewhere, &other), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(s->pop_external(T.main, me, &out), ROCP_STATUS_SUCCESS);
	assert_int_equal(out.value, 11);
	uint64_t after = s->ctl.hip_call("hipMalloc", NULL, 0, NULL, NULL);
	assert_int_equal(s->pop_external(T.main, me, &out), ROCP_STATUS_SUCCESS);
	assert_int_equal(out.value, 0);
	assert_int_equal(s->pop_external(T.util, me, &out), ROCP_STATUS_SUCCESS);
	assert_int_equal(out.value, 22);
	s->stop_context(T.main);
	s->flush_buffer(T.buf);
	/* The main context's top, not the utility context's. */
	assert_int_equal(find_api(c)->ext, 11);
	assert_int_equal(find_rec(ROCP_BUFFER_HIP_RUNTIME_API, c)->ext, 11);
	assert_int_equal(find_rec(ROCP_BUFFER_KERNEL_DISPATCH, c)->ext, 11);
	assert_int_equal(find_api(l.nested_cid)->ext, 11);
	/* Another thread, no stack of its own: the loading thread's latest
	 * push, whichever context it went to (the SDK keeps one such value). */
	assert_int_equal(find_api(other)->ext, 22);
	assert_int_equal(find_rec(ROCP_BUFFER_HIP_RUNTIME_API, other)->ext, 22);
	assert_int_equal(find_api(after)->ext, 0);
	assert_int_equal(find_rec(ROCP_BUFFER_HIP_RUNTIME_API, after)->ext, 0);
	assert_true(find_api(c)->paired);
}

static void test_watermark_and_drops(void **state)
{
	(void)state;
	struct sdk *s = cur;
	reset();
	s->start_context(T.main);
	/* 8 KiB watermark: ~40 dispatch records. No flush: the SDK's thread
	 * delivers on its own. */
	for (int i = 0; i < 100; i++) {
		struct fake_rocp_dispatch d = {
		    .correlation_id = 5000 + (uint64_t)i, .gpu = 0, .kernel_id = 1};
		assert_int_equal(s->ctl.dispatch(&d), 0);
	}
	for (int i = 0; i < 200; i++) {
		pthread_mutex_lock(&T.mu);
		uint64_t n = T.deliveries;
		pthread_mutex_unlock(&T.mu);
		if (n >= 1)
			break;
		usleep(10000);
	}
	pthread_mutex_lock(&T.mu);
	assert_true(T.deliveries >= 1);
	assert_true(T.nrec >=
	            (8 * 1024) / (sizeof(rocp_kernel_dispatch_record_t) + sizeof(rocp_record_header_t)));
	pthread_mutex_unlock(&T.mu);
	s->ctl.drop(7);
	struct fake_rocp_dispatch d = {.correlation_id = 6000, .gpu = 0, .kernel_id = 1};
	s->ctl.dispatch(&d);
	s->stop_context(T.main);
	assert_int_equal(s->flush_buffer(T.buf), ROCP_STATUS_SUCCESS);
	assert_int_equal(count_kind(ROCP_BUFFER_KERNEL_DISPATCH), 101);
	assert_int_equal(T.drops, 7);

	/* LOSSLESS: 1000 records (~200 KB) through the 64 KiB buffer, with a
	 * slow consumer and no flush in between: producers wait for room,
	 * nothing is lost. */
	reset();
	T.slow = 1;
	s->start_context(T.main);
	for (int i = 0; i < 1000; i++) {
		struct fake_rocp_dispatch k = {
		    .correlation_id = 7000 + (uint64_t)i, .gpu = 1, .kernel_id = 2};
		assert_int_equal(s->ctl.dispatch(&k), 0);
	}
	s->stop_context(T.main);
	s->flush_buffer(T.buf);
	T.slow = 0;
	assert_int_equal(count_kind(ROCP_BUFFER_KERNEL_DISPATCH), 1000);
	assert_int_equal(T.drops, 0);
	assert_true(T.deliveries >= 1000 * sizeof(rocp_kernel_dispatch_record_t) / (64 * 1024));
	for (size_t i = 0; i < T.nrec; i++) /* in order */
		assert_int_equal(T.rec[i].cid, 7000 + i);
}

static void test_failures_and_clock(void **state)
{
	(void)state;
	struct sdk *s = cur;
	(s->ctl.fail)("rocprofiler_flush_buffer", ROCP_STATUS_ERROR);
	assert_int_equal(s->flush_buffer(T.buf), ROCP_STATUS_ERROR);
	(s->ctl.fail)("rocprofiler_flush_buffer", 0);
	assert_int_equal(s->flush_buffer(T.buf), ROCP_STATUS_SUCCESS);
	(s->ctl.fail)("rocprofiler_get_timestamp", ROCP_STATUS_ERROR_CONTEXT_ERROR);
	uint64_t ts;
	assert_int_equal(s->get_timestamp(&ts), ROCP_STATUS_ERROR_CONTEXT_ERROR);
	(s->ctl.fail)("rocprofiler_get_timestamp", 0);

	/* The SDK's clock is BOOTTIME: after 5 s of suspend it runs 5 s plus
	 * the host's earlier suspend time ahead of MONOTONIC. */
	s->ctl.set_suspend_ns(5000000000u);
	struct timespec m0, m1, b;
	clock_gettime(CLOCK_MONOTONIC, &m0);
	assert_int_equal(s->get_timestamp(&ts), ROCP_STATUS_SUCCESS);
	clock_gettime(CLOCK_MONOTONIC, &m1);
	clock_gettime(CLOCK_BOOTTIME, &b);
	int64_t mono = (int64_t)((m0.tv_sec + m1.tv_sec) * 500000000ll + (m0.tv_nsec + m1.tv_nsec) / 2);
	int64_t boot_minus_mono =
	    (int64_t)(b.tv_sec * 1000000000ll + b.tv_nsec) - (int64_t)(m1.tv_sec * 1000000000ll + m1.tv_nsec);
	int64_t off = (int64_t)ts - mono - 5000000000ll - boot_minus_mono;
	assert_true(off > -2000000 && off < 2000000);
	s->ctl.set_suspend_ns(0);
}

static void test_shutdown(void **state)
{
	(void)state;
	struct sdk *s = cur;
	int fin = -1;
	assert_int_equal(s->is_finalized(&fin), 0);
	assert_int_equal(fin, 0);
	s->ctl.shutdown();
	s->ctl.shutdown();
	assert_int_equal(T.fini_calls, 1);
	assert_int_equal(s->is_finalized(&fin), 0);
	assert_int_equal(fin, 1);
}

#define ABI_TESTS                                                                                            \
	cmocka_unit_test(test_registration), cmocka_unit_test(test_kernels), cmocka_unit_test(test_copies),  \
	    cmocka_unit_test(test_roctx), cmocka_unit_test(test_external),                                   \
	    cmocka_unit_test(test_watermark_and_drops), cmocka_unit_test(test_failures_and_clock),           \
	    cmocka_unit_test(test_shutdown)

/* The child: registers, produces a kernel record and a HIP call, and
 * returns from main without flushing or shutting the SDK down. */
static int run_exit_child(int abi)
{
	exit_child = 1;
	struct sdk *s = &sdks[abi];
	load_sdk(s);
	cur = s;
	if (s->ctl.runtime_init() != 1 || s->start_context(T.main) != ROCP_STATUS_SUCCESS)
		return 2;
	s->ctl.hip_call("hipLaunchKernel", NULL, 0, NULL, NULL);
	struct fake_rocp_dispatch d = {.correlation_id = 1, .gpu = 0, .kernel_id = 1};
	return s->ctl.dispatch(&d) == 0 ? 0 : 3;
}

/* At process exit the SDK delivers what is pending, then calls the tool's
 * finalize, in both ABI families. */
static void test_finalize_at_exit(void **state)
{
	(void)state;
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;
	for (int abi = 0; abi < 2; abi++) {
		char cmd[4200], *out = NULL;
		TU_FORMAT(cmd, "'%s' --exit-child %d", exe, abi);
		assert_int_equal(tu_run(cmd, 0, &out), 0);
		assert_non_null(strstr(out, "finalized records=2 kernels=1\n"));
		free(out);
	}
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--exit-child"))
		return run_exit_child(atoi(argv[2]) == 1);
	const struct CMUnitTest exit_tests[] = {cmocka_unit_test(test_finalize_at_exit)};
	if (cmocka_run_group_tests_name("rocprofiler-sdk exit", exit_tests, NULL, NULL))
		return 1;
	const struct CMUnitTest tests[] = {ABI_TESTS};
	int rc = cmocka_run_group_tests_name("rocprofiler-sdk 0.x", tests, setup_v0, NULL);
	rc |= cmocka_run_group_tests_name("rocprofiler-sdk 1.x", tests, setup_v1, NULL);
	return rc;
}

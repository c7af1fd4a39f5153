/* The AMD backend's records into strobe activities, libkineto's AMD layout:
 * HIP calls as cuda_runtime events on the calling thread, kernels `kernel`
 * with grid (blocks) and block arrays, copies gpu_memcpy named by
 * direction, GPU rows per device and stream, ac2g arrows, External id. */
#define LOG_TAG "rocprof"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/rocprof/rocprof_state.h"
#include "common/log.h"

#define MAX_STREAMS 4096

/* The buffers whose records the trace renders args from, kept with it. */
struct kept {
	uint8_t **data;
	size_t n, cap;
};

struct conv {
	struct strb_gpu g;
	struct strb_gpu_buffer *buffers;
	uint64_t sdk0, strobe0;
	double rate; /* strobe ns per SDK ns */
	/* (device, HSA queue) -> per-device stream index, by first appearance */
	uint64_t queues[MAX_STREAMS];
	int32_t queue_device[MAX_STREAMS];
	uint32_t queue_index[MAX_STREAMS];
	uint32_t next_index[STRB_GPU_MAX_DEVICES];
	size_t nqueues;
	/* The HIP call record of each g.calls[i], for its arguments. */
	const struct strb_rocprof_rec **call_rec;
	size_t call_rec_cap;
	/* Args rendered from the records when the trace is written (rendered:
	 * the current buffer has such a record), or built now when the trace
	 * already renders another backend's. */
	bool lazy, rendered;
	struct kept *kept;
	/* The process's kernel names, by id. */
	struct strb_rocprof_kernel *kernels;
	size_t nkernels, last_kernel;
	/* Open roctx ranges, all threads, innermost last. */
	const struct strb_rocprof_rec **open;
	size_t nopen, open_cap;
};

/* SDK ns to strobe's clock: the line through the start and stop brackets
 * (strobe's nominal scale need not tick at exactly 1 GHz), or the start
 * offset alone when there is no stop bracket. */
static uint64_t sdk_to_strobe(const struct conv *c, uint64_t t)
{
	if (!t || !c->sdk0)
		return 0;
	double d = (double)((int64_t)t - (int64_t)c->sdk0) * c->rate;
	int64_t v = (int64_t)c->strobe0 + (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
	return v > 0 ? (uint64_t)v : 0;
}

static uint32_t stream_of(struct conv *c, int32_t device, uint64_t queue)
{
	for (size_t i = 0; i < c->nqueues; i++)
		if (c->queues[i] == queue && c->queue_device[i] == device)
			return c->queue_index[i];
	if (c->nqueues == MAX_STREAMS || device < 0 || device >= STRB_GPU_MAX_DEVICES)
		return 0;
	c->queues[c->nqueues] = queue;
	c->queue_device[c->nqueues] = device;
	c->queue_index[c->nqueues] = c->next_index[device]++;
	return c->queue_index[c->nqueues++];
}

static const char *op_name(int32_t op)
{
	return op >= 0 && op < STRB_ROCPROF_MAX_OPS ? strb_rocprof.op_names[op] : NULL;
}

static bool name_in(const char *name, const char *const *list)
{
	for (; name && *list; list++)
		if (!strcmp(name, *list))
			return true;
	return false;
}

/* The calls libkineto starts an ac2g arrow from. */
static const char *const flow_calls[] = {"hipLaunchKernel",
                                         "hipExtLaunchKernel",
                                         "hipLaunchCooperativeKernel",
                                         "hipHccModuleLaunchKernel",
                                         "hipModuleLaunchKernel",
                                         "hipExtModuleLaunchKernel",
                                         "hipMalloc",
                                         "hipFree",
                                         "hipMemcpy",
                                         "hipMemcpyAsync",
                                         "hipMemcpyWithStream",
                                         "hipGraphLaunch",
                                         NULL};
static const char *const launch_calls[] = {"hipLaunchKernel",
                                           "hipExtLaunchKernel",
                                           "hipLaunchCooperativeKernel",
                                           "hipHccModuleLaunchKernel",
                                           "hipModuleLaunchKernel",
                                           "hipExtModuleLaunchKernel",
                                           "hipLaunchKernel_spt",
                                           "hipLaunchCooperativeKernel_spt",
                                           NULL};
/* Noisy calls libkineto leaves out. */
static const char *const deny_calls_[] = {"hipGetDevice",
                                          "hipSetDevice",
                                          "hipGetLastError",
                                          "__hipPushCallConfiguration",
                                          "__hipPopCallConfiguration",
                                          "hipCtxSetCurrent",
                                          "hipGetDevicePropertiesR0600",
                                          "hipGetDeviceCount",
                                          "hipDeviceGetAttribute",
                                          "hipRuntimeGetVersion",
                                          "hipPeekAtLastError",
                                          "hipModuleGetFunction",
                                          NULL};

uint8_t strb_rocprof_classify(const char *name)
{
	return (uint8_t)((name_in(name, deny_calls_) ? STRB_ROCPROF_OP_DENIED : 0) |
	                 (name_in(name, flow_calls) ? STRB_ROCPROF_OP_FLOW : 0) |
	                 (name_in(name, launch_calls) ? STRB_ROCPROF_OP_LAUNCH : 0));
}

/* The classification made once when the SDK named the op. */
static uint8_t op_flags(int32_t op)
{
	return op >= 0 && op < STRB_ROCPROF_MAX_OPS ? strb_rocprof.op_flags[op] : 0;
}

static void walk(struct conv *c, void (*fn)(struct conv *, const struct strb_rocprof_rec *))
{
	for (struct strb_gpu_buffer *b = c->buffers; b && !c->g.rc; b = b->next) {
		for (size_t at = 0; at + sizeof(struct strb_rocprof_rec) <= b->valid && !c->g.rc;) {
			const struct strb_rocprof_rec *r = (const void *)(b->data + at);
			if (r->len < sizeof(*r) || at + r->len > b->valid) {
				c->g.st->gpu_bad_buffers++;
				break;
			}
			fn(c, r);
			at += r->len;
		}
		/* A buffer whose records render args goes with the trace (also
		 * after an error: the trace points into it); room was made. */
		if (c->rendered && c->kept->n < c->kept->cap) {
			c->kept->data[c->kept->n++] = b->data;
			b->data = NULL;
		}
		c->rendered = false;
	}
}

static void pass1(struct conv *c, const struct strb_rocprof_rec *r)
{
	c->g.st->gpu_records++;
	if (r->type != STRB_ROCPROF_HIP)
		return;
	struct strb_gpu_call call = {
	    .corr = r->corr,
	    .kind = STRB_ROCPROF_HIP,
	    .op = (uint32_t)r->op,
	    .tid = (pid_t)r->tid,
	    .start = strb_gpu_epoch(&c->g, r->start), /* strobe's clock, stamped in the callback */
	    .end = strb_gpu_epoch(&c->g, r->end),
	};
	size_t i = c->g.ncalls;
	strb_gpu_add_call(&c->g, &call);
	/* The strobe_correlation_push id the SDK carried: External id of
	 * the call and of its GPU work. */
	if (r->ext)
		strb_gpu_add_external(&c->g, r->corr, 0, r->ext);
	if (c->g.ncalls == i + 1 &&
	    strb_gpu_grow(&c->g, (void **)&c->call_rec, &c->call_rec_cap, i + 1, sizeof(*c->call_rec)))
		c->call_rec[i] = r;
}

static void mark_calls(struct conv *c)
{
	for (size_t i = 0; i < c->g.ncalls; i++) {
		struct strb_gpu_call *call = &c->g.calls[i];
		uint8_t f = op_flags((int32_t)call->op);
		call->emitted = strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME) &&
		                op_name((int32_t)call->op) && !(f & STRB_ROCPROF_OP_DENIED) &&
		                call->start >= c->g.w->start_ns && call->end <= c->g.w->stop_ns &&
		                call->end >= call->start;
		call->flow = f & STRB_ROCPROF_OP_FLOW;
		call->launch = f & STRB_ROCPROF_OP_LAUNCH;
	}
}

#define ARG_I(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_I64, .value.i64 = (int64_t)(v)})
#define ARG_S(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_STRING, .value.str = (v)})
#define ARG_J(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_JSON, .value.str = (v)})

static const char *const copy_kinds[] = {"Unknown", "HtoH", "HtoD", "DtoH", "DtoD"};

/* String values of rendered args go in s->text; they are formatted by
 * hand, as writing a trace renders them once per activity. */
static char *digits(char *p, uint64_t v, unsigned base)
{
	char tmp[20];
	size_t n = 0;
	do
		tmp[n++] = "0123456789abcdef"[v % base];
	while ((v /= base));
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* "[x, y, z]" */
static const char *dims(struct strb_arg_scratch *s, size_t *used, const uint32_t *d)
{
	char *at = s->text + *used, *p = at;
	*p++ = '[';
	for (int i = 0; i < 3; i++) {
		p = digits(p, d[i], 10);
		if (i < 2)
			*p++ = ',', *p++ = ' ';
	}
	*p++ = ']';
	*p++ = 0;
	*used += (size_t)(p - at);
	return at;
}

/* "0x..." */
static const char *pointer(struct strb_arg_scratch *s, size_t *used, uint64_t v)
{
	char *at = s->text + *used, *p = at;
	*p++ = '0', *p++ = 'x';
	p = digits(p, v, 16);
	*p++ = 0;
	*used += (size_t)(p - at);
	return at;
}

/* The args of a kernel, copy or HIP call, from its record (a kernel's or
 * copy's stream is its row's index, written into its record at decode: the
 * activity may move to an overlap row later). At most 8 args; strings of
 * at most 38 bytes, 3 at most (s->text holds 256). */
static size_t render(const void *ctx, const void *rec, const struct strobe_activity *a,
                     struct strb_arg_scratch *s)
{
	const struct strb_rocprof_rec *r = rec;
	struct strobe_arg *v = s->args;
	size_t n = 0, used = 0;
	(void)ctx, (void)a;
	switch (r->type) {
	case STRB_ROCPROF_KERNEL:
		v[n++] = ARG_I("device", r->device);
		v[n++] = ARG_I("stream", r->stream);
		v[n++] = ARG_I("hsa_queue", r->queue);
		v[n++] = ARG_I("correlation", r->corr);
		v[n++] = ARG_S("kind", "Dispatch Kernel");
		v[n++] = ARG_J("grid", dims(s, &used, r->grid));
		v[n++] = ARG_J("block", dims(s, &used, r->block));
		v[n++] = ARG_I("shared memory", r->lds);
		break;
	case STRB_ROCPROF_COPY:
		v[n++] = ARG_I("device", r->device);
		v[n++] = ARG_I("stream", r->stream);
		v[n++] = ARG_I("correlation", r->corr);
		v[n++] = ARG_S(
		    "kind", copy_kinds[r->op >= 0 && r->op <= ROCP_MEMORY_COPY_DEVICE_TO_DEVICE ? r->op : 0]);
		v[n++] = ARG_I("bytes", r->bytes);
		break;
	case STRB_ROCPROF_HIP:
		v[n++] = ARG_I("cid", r->op);
		v[n++] = ARG_I("correlation", r->corr);
		v[n++] = ARG_S("stream", pointer(s, &used, r->stream));
		if (op_flags(r->op) & STRB_ROCPROF_OP_LAUNCH) {
			v[n++] = ARG_J("grid", dims(s, &used, r->grid));
			v[n++] = ARG_J("block", dims(s, &used, r->block));
			v[n++] = ARG_I("shared memory", r->lds);
		} else if (r->bytes) {
			v[n++] = ARG_I("bytes", r->bytes);
		}
		break;
	default:
		break;
	}
	return n;
}

static void release_kept(void *ctx)
{
	struct kept *k = ctx;
	for (size_t i = 0; k && i < k->n; i++)
		free(k->data[i]);
	if (k)
		free(k->data);
	free(k);
}

/* The activity just emitted for r gets r's args: rendered from r when the
 * trace is written (r's buffer then stays with the trace), or, when the
 * trace renders another backend's records, copied now. */
static void args_of(struct conv *c, struct strobe_activity *a, const struct strb_rocprof_rec *r)
{
	if (c->lazy) {
		if (strb_trace_render_args(c->g.t, r))
			c->g.rc = -ENOMEM;
		c->rendered = true;
		return;
	}
	struct strb_arg_scratch s;
	size_t n = render(NULL, r, a, &s);
	for (size_t i = 0; i < n; i++)
		if (s.args[i].kind == STROBE_ARG_STRING || s.args[i].kind == STROBE_ARG_JSON)
			s.args[i].value.str = strb_gpu_keep(&c->g, s.args[i].value.str);
	a->args = strb_trace_copy_args(c->g.t, s.args, n);
	a->arg_count = a->args ? n : 0;
	if (!a->args)
		c->g.rc = -ENOMEM;
}

static void hip_call(struct conv *c, const struct strb_rocprof_rec *r)
{
	struct strb_gpu_ref s = strb_gpu_find(&c->g, r->corr);
	struct strb_gpu_call *call = s.call;
	if (!call || !call->emitted)
		return;
	struct strobe_activity *a =
	    strb_gpu_emit(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME, op_name(r->op), call->start, call->end,
	                  c->g.t->pid, (int64_t)r->tid, NULL, 0);
	if (!a)
		return;
	args_of(c, a, r);
	a->id = r->corr;
	a->linked_id = s.ext0 ? s.ext0 : call->op_id;
	if (call->flow) {
		a->flow_id = r->corr;
		a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
		a->flags |= STROBE_ACTIVITY_FLOW_START;
	}
}

/* The row of GPU work: its device's index of the launching call's HIP
 * stream (libkineto's rows), else of its HSA queue. */
static uint32_t row_of(struct conv *c, const struct strb_rocprof_rec *r)
{
	struct strb_gpu_ref s = strb_gpu_find(&c->g, r->corr);
	if (s.call && c->call_rec)
		return stream_of(c, r->device, c->call_rec[s.call - c->g.calls]->stream);
	return stream_of(c, r->device, r->queue | 1ull << 63);
}

/* GPU work's row, kept in its record for its args (the records are
 * strobe's own copies; a kernel's or copy's stream field is free). */
static uint32_t set_row(struct conv *c, const struct strb_rocprof_rec *r)
{
	uint32_t stream = row_of(c, r);
	((struct strb_rocprof_rec *)r)->stream = stream;
	return stream;
}

static void roctx_range(struct conv *c, const struct strb_rocprof_rec *r, int64_t end, bool unfinished)
{
	int64_t start = strb_gpu_epoch(&c->g, r->start);
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_USER_ANNOTATION) || start < c->g.w->start_ns)
		return;
	const char *name = strb_gpu_keep(&c->g, (const char *)(r + 1));
	struct strobe_activity *a = strb_gpu_emit(&c->g, STROBE_ACTIVITY_USER_ANNOTATION, name, start, end,
	                                          c->g.t->pid, (int64_t)r->tid, NULL, 0);
	if (a && unfinished)
		a->flags |= STROBE_ACTIVITY_UNFINISHED;
}

static void roctx(struct conv *c, const struct strb_rocprof_rec *r)
{
	if (r->type == STRB_ROCPROF_PUSH || r->type == STRB_ROCPROF_START) {
		if (strb_gpu_grow(&c->g, (void **)&c->open, &c->open_cap, c->nopen + 1, sizeof(*c->open)))
			c->open[c->nopen++] = r;
		return;
	}
	/* A pop closes its thread's innermost push; a stop closes the start of
	 * its range id, from whichever thread, on the starting thread's row. */
	if (r->type == STRB_ROCPROF_POP || r->type == STRB_ROCPROF_STOP) {
		for (size_t i = c->nopen; i-- > 0;) {
			const struct strb_rocprof_rec *o = c->open[i];
			if (r->type == STRB_ROCPROF_POP
			        ? o->type != STRB_ROCPROF_PUSH || o->tid != r->tid
			        : o->type != STRB_ROCPROF_START || o->queue != r->queue)
				continue;
			roctx_range(c, c->open[i], strb_gpu_epoch(&c->g, r->start), false);
			memmove(&c->open[i], &c->open[i + 1], (c->nopen - i - 1) * sizeof(*c->open));
			c->nopen--;
			break;
		}
		return;
	}
	int64_t t = strb_gpu_epoch(&c->g, r->start);
	if (strb_gpu_selected(&c->g, STROBE_ACTIVITY_CPU_INSTANT_EVENT) && t >= c->g.w->start_ns &&
	    t <= c->g.w->stop_ns)
		strb_gpu_emit(&c->g, STROBE_ACTIVITY_CPU_INSTANT_EVENT,
		              strb_gpu_keep(&c->g, (const char *)(r + 1)), t, t, c->g.t->pid, (int64_t)r->tid,
		              NULL, 0);
}

static int cmp_kernel(const void *a, const void *b)
{
	const struct strb_rocprof_kernel *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The mangled name of a kernel id, from the names kept since the process
 * started (a copy, sorted once per trace; the names are never freed). */
static const char *kernel_name(struct conv *c, uint64_t id)
{
	const char *raw = NULL;
	if (c->nkernels && c->kernels[c->last_kernel].id == id) {
		raw = c->kernels[c->last_kernel].name;
	} else {
		size_t lo = 0, hi = c->nkernels;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (c->kernels[mid].id <= id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo && c->kernels[lo - 1].id == id) {
			c->last_kernel = lo - 1;
			raw = c->kernels[lo - 1].name;
		}
	}
	return strb_gpu_kernel_name(&c->g, raw);
}

static void kernel(struct conv *c, const struct strb_rocprof_rec *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL) || r->device < 0 ||
	    !strb_gpu_record_ok(&c->g, sdk_to_strobe(c, r->start), sdk_to_strobe(c, r->end), &s, &e))
		return;
	uint32_t stream = set_row(c, r);
	struct strobe_activity *a =
	    strb_gpu_emit(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL, kernel_name(c, r->kernel_id), s, e,
	                  r->device, stream, NULL, 0);
	if (!a)
		return;
	args_of(c, a, r);
	struct strb_gpu_call *call = strb_gpu_link(&c->g, a, r->corr, s, true);
	if (call)
		call->got_kernel = true;
	strb_gpu_note_row(&c->g, (uint32_t)r->device, stream, s, e);
}

static void copy(struct conv *c, const struct strb_rocprof_rec *r)
{
	static const char *const names[] = {"Memcpy Unknown", "Memcpy HtoH (Host -> Host)",
	                                    "Memcpy HtoD (Host -> Device)", "Memcpy DtoH (Device -> Host)",
	                                    "Memcpy DtoD (Device -> Device)"};
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) || r->device < 0 ||
	    !strb_gpu_record_ok(&c->g, sdk_to_strobe(c, r->start), sdk_to_strobe(c, r->end), &s, &e))
		return;
	int k = r->op >= 0 && r->op <= ROCP_MEMORY_COPY_DEVICE_TO_DEVICE ? r->op : 0;
	uint32_t stream = set_row(c, r);
	struct strobe_activity *a =
	    strb_gpu_emit(&c->g, STROBE_ACTIVITY_GPU_MEMCPY, names[k], s, e, r->device, stream, NULL, 0);
	if (!a)
		return;
	args_of(c, a, r);
	strb_gpu_link(&c->g, a, r->corr, s, true);
	strb_gpu_note_row(&c->g, (uint32_t)r->device, stream, s, e);
}

static void pass2(struct conv *c, const struct strb_rocprof_rec *r)
{
	switch (r->type) {
	case STRB_ROCPROF_HIP:
		hip_call(c, r);
		break;
	case STRB_ROCPROF_KERNEL:
		kernel(c, r);
		break;
	case STRB_ROCPROF_COPY:
		copy(c, r);
		break;
	case STRB_ROCPROF_MARK:
	case STRB_ROCPROF_PUSH:
	case STRB_ROCPROF_POP:
	case STRB_ROCPROF_START:
	case STRB_ROCPROF_STOP:
		roctx(c, r);
		break;
	default:
		break;
	}
}

/* The trace's deviceProperties: {"id", "name"} per GPU agent in ordinal
 * order, id its logical_node_type_id (the pid of its rows), name the
 * agent's (its gfx target, such as "gfx90a"). libkineto takes more from
 * HIP; strobe reads the SDK's agent struct only through name, type and
 * logical_node_type_id, whose offsets every version shares. */
static void add_devices(struct conv *c)
{
	const struct strb_rocprof_state *s = &strb_rocprof;
	char text[STRB_ROCPROF_MAX_AGENTS * 112]; /* 63-byte names, 2-digit ids */
	size_t n = 0;
	for (int32_t id = 0; id < STRB_ROCPROF_MAX_AGENTS; id++)
		for (int i = 0; i < s->nagents; i++)
			if (s->agent_ordinal[i] == id)
				n += (size_t)snprintf(text + n, sizeof(text) - n,
				                      "%s{\"id\": %d, \"name\": \"%s\"}", n ? ", " : "",
				                      (int)id, s->agent_name[i]);
	if (!n)
		return;
	struct strobe_trace *t = c->g.t;
	size_t old = strlen(t->device_properties);
	char *joined = strb_arena_alloc(&t->arena, old + n + 3);
	if (!joined) {
		c->g.rc = -ENOMEM;
		return;
	}
	snprintf(joined, old + n + 3, "%s%s%s", t->device_properties, old ? ", " : "", text);
	t->device_properties = joined;
}

int strb_rocprof_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *b)
{
	struct conv *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buffers = b;
	const struct strb_rocprof_state *st = &strb_rocprof;
	c->sdk0 = st->sdk_at[0];
	c->strobe0 = st->strobe_at[0];
	c->rate = 1.0;
	if (st->sdk_at[1] > st->sdk_at[0] + 1000000 && st->strobe_at[1] > st->strobe_at[0])
		c->rate =
		    (double)(st->strobe_at[1] - st->strobe_at[0]) / (double)(st->sdk_at[1] - st->sdk_at[0]);
	strb_gpu_init(&c->g, t, w);
	c->g.pauses = &strb_rocprof.pauses;
	c->g.count_unmatched = strb_gpu_selected(&c->g, STROBE_ACTIVITY_CUDA_RUNTIME);
	strb_gpu_pool_account(&strb_rocprof.pool, &t->stats);
	pthread_mutex_lock(&strb_rocprof.lock);
	c->nkernels = strb_rocprof.nkernels;
	c->kernels = c->nkernels ? malloc(c->nkernels * sizeof(*c->kernels)) : NULL;
	if (c->kernels) {
		memcpy(c->kernels, strb_rocprof.kernels, c->nkernels * sizeof(*c->kernels));
	} else {
		c->nkernels = 0;
	}
	pthread_mutex_unlock(&strb_rocprof.lock);
	if (c->nkernels)
		qsort(c->kernels, c->nkernels, sizeof(*c->kernels), cmp_kernel);
	/* The trace renders the args of kernels, copies and HIP calls from
	 * the records when it is written (no args built here, which cost more
	 * than the rest of decoding), keeping their buffers; when it already
	 * renders another backend's records, they are built now. */
	size_t nbuffers = 0;
	for (struct strb_gpu_buffer *i = b; i; i = i->next)
		nbuffers++;
	c->kept = calloc(1, sizeof(*c->kept));
	if (c->kept && nbuffers && !(c->kept->data = calloc(nbuffers, sizeof(*c->kept->data)))) {
		free(c->kept);
		c->kept = NULL;
	}
	if (!c->kept) {
		c->g.rc = -ENOMEM;
	} else {
		c->kept->cap = nbuffers;
		struct strb_arg_source src = {render, c->kept, release_kept};
		c->lazy = strb_trace_set_arg_source(t, &src) == 0;
	}
	walk(c, pass1);
	strb_gpu_build_table(&c->g);
	strb_gpu_link_calls(&c->g);
	if (!c->g.rc)
		mark_calls(c);
	walk(c, pass2);
	/* roctx ranges still open at stop end there. */
	for (size_t i = 0; i < c->nopen && !c->g.rc; i++)
		roctx_range(c, c->open[i], w->stop_ns, true);
	if (!c->g.rc) {
		strb_gpu_emit_spans(&c->g);
		strb_gpu_count_launches(&c->g);
		strb_gpu_add_rows(&c->g);
		add_devices(c);
	}
	if (t->stats.gpu_dropped_records)
		LOGW("AMD GPU records lost: rocprofiler-sdk dropped %llu",
		     (unsigned long long)t->stats.gpu_dropped_records);
	int rc = c->g.rc;
	strb_gpu_free(&c->g);
	free(c->call_rec);
	free(c->open);
	free(c->kernels);
	if (!c->lazy)
		release_kept(c->kept);
	free(c);
	return rc;
}

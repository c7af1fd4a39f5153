/* The Intel XPU backend's records into strobe activities, libkineto's XPU
 * layout: kernels `kernel` (the record's name verbatim), copies gpu_memcpy
 * ("Memcpy M2D (MEMORY -> DEVICE)", PTI's type names), fills gpu_memset, runtime (SYCL) calls
 * xpu_runtime and driver (Level Zero) calls xpu_driver named through
 * ptiViewGetApiIdName, xpu_sync, overhead and collective_comm on the calling
 * thread; GPU work on pid = device index, tid = SYCL queue id; one ac2g
 * arrow per runtime call that launched GPU work.
 *
 * Records are walked only with ptiViewGetNextRecord, which knows the loaded
 * library's record sizes; only fields both families share are read.
 *
 * Kernels, copies, fills and runtime/driver calls have their args rendered
 * when the trace is written (trace.h, "Args rendered when they are read"):
 * the buffers holding their records go with the trace, and a record's PTI
 * strings (call and source file names) are replaced in the record by the
 * trace's copies. When the trace already renders another backend's records,
 * the same args are built at decode.
 *
 * A runtime call and the driver calls it makes share one correlation id:
 * GPU work is linked to the runtime call when there is one, else to the
 * driver call, else to the launching thread at the time the work was
 * appended (every GPU record names its thread), so External id and range
 * spans work even when no API view is selected. */
#define LOG_TAG "pti"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/pti/pti_state.h"
#include "common/log.h"

/* strb_gpu_call.kind: the type in the low bits, the API group above. */
enum { CALL_WORK = 0, CALL_DRIVER = 1, CALL_RUNTIME = 2 };
#define CALL_TYPE(kind)  ((kind)&3u)
#define CALL_GROUP(kind) ((kind) >> 2)

#define MAX_API_ID    8192
#define API_GROUPS    6
#define NAME_CACHE    1024 /* a power of two */
#define UNKNOWN_QUEUE UINT32_MAX
#define DEV_KEY       (2 * PTI_MAX_DEVICE_UUID_SIZE + 1)
#define SEEN_CACHE    8

/* What rendering needs besides the records, owned by the trace: the
 * buffers the records live in, and the device keys (a peer-to-peer copy's
 * destination index). */
struct kept {
	uint8_t **data;
	size_t n, cap;
	char dev[STRB_GPU_MAX_DEVICES][DEV_KEY];
	int ndev;
};

/* The record of a runtime or driver call's activity: its one arg is its
 * correlation id, the activity's id. */
static const char call_rec;

struct work_call {
	uint32_t corr, tid;
	uint64_t t; /* PTI's clock */
};

struct conv {
	struct strb_gpu g;
	const struct strb_pti_lib *lib;
	struct strb_gpu_buffer *buffers;
	/* Device keys (PCI address, else UUID in hex), sorted: the index is
	 * the device's pid. */
	char dev[STRB_GPU_MAX_DEVICES][DEV_KEY];
	int ndev;
	/* Devices by their records' own bytes, the last few seen (records
	 * of one device repeat them): no key is made per record. */
	struct seen {
		char pci[PTI_MAX_PCI_ADDRESS_SIZE];
		uint8_t uuid[PTI_MAX_DEVICE_UUID_SIZE];
		int index;
	} seen[SEEN_CACHE];
	int nseen, seen_next;
	bool dev_overflow;
	/* Names by API group and id, looked up once, and whether each is a
	 * kernel launch. */
	const char **api[API_GROUPS];
	bool *launch[API_GROUPS];
	/* PTI's strings (kernel names, Level Zero call names) kept in the
	 * trace, by pointer. */
	const char *name_key[NAME_CACHE], *name_val[NAME_CACHE];
	const char *copy_names[16][4][4];
	/* Args rendered when the trace is written (rendered: the current
	 * buffer has such a record), or built now when the trace already
	 * renders another backend's. */
	bool lazy, rendered;
	struct kept *kept;
	/* GPU work's launching thread and time (pass 1), for work whose id
	 * has no runtime or driver call. */
	struct work_call *work;
	size_t nwork, work_cap;
};

#define ARG_I(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_I64, .value.i64 = (int64_t)(v)})
#define ARG_U(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_U64, .value.u64 = (uint64_t)(v)})
#define ARG_S(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_STRING, .value.str = (v)})
#define ARG_F(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_F64, .value.f64 = (v)})

/* ---- names ------------------------------------------------------------- */

static bool is_launch(const char *name)
{
	return name && (strstr(name, "LaunchKernel") || strstr(name, "KernelLaunch"));
}

static const char *api_name(struct conv *c, uint32_t group, uint32_t id)
{
	if (group >= API_GROUPS || id >= MAX_API_ID)
		return NULL;
	if (!c->api[group])
		c->api[group] = calloc(MAX_API_ID, sizeof(*c->api[group]));
	if (!c->launch[group])
		c->launch[group] = calloc(MAX_API_ID, sizeof(*c->launch[group]));
	if (!c->api[group] || !c->launch[group]) {
		c->g.rc = -ENOMEM;
		return NULL;
	}
	const char **slot = &c->api[group][id];
	if (!*slot) {
		const char *name = NULL;
		char buf[48];
		if (c->lib->api_name(group, id, &name) != PTI_SUCCESS || !name || !*name) {
			snprintf(buf, sizeof(buf), "api %u.%u", (unsigned)group, (unsigned)id);
			name = buf;
		}
		*slot = strb_gpu_keep(&c->g, name);
		c->launch[group][id] = is_launch(*slot);
	}
	return *slot;
}

/* Whether the call is a kernel launch, by its name, classified once. */
static bool launch_call(struct conv *c, uint32_t group, uint32_t id)
{
	return api_name(c, group, id) && c->launch[group][id];
}

/* A string of PTI's, kept in the trace (PTI's strings live as long as the
 * library; the same pointer is the same string for the whole pass). */
static const char *pti_string(struct conv *c, const char *s, const char *fallback)
{
	if (!s)
		return fallback;
	size_t j = ((uintptr_t)s >> 3) & (NAME_CACHE - 1);
	if (c->name_key[j] != s) {
		const char *kept = strb_gpu_keep(&c->g, s);
		if (!kept)
			return NULL;
		c->name_key[j] = s;
		c->name_val[j] = kept;
	}
	return c->name_val[j];
}

static const char *copy_name(struct conv *c, uint32_t type, uint32_t src, uint32_t dst)
{
	const struct strb_pti_state *s = &strb_pti;
	type &= 15, src &= 3, dst &= 3;
	const char **slot = &c->copy_names[type][src][dst];
	if (!*slot) {
		char buf[96];
		snprintf(buf, sizeof(buf), "Memcpy %s (%s -> %s)", s->memcpy_type[type], s->memory_type[src],
		         s->memory_type[dst]);
		*slot = strb_gpu_keep(&c->g, buf);
	}
	return *slot;
}

/* ---- devices and rows --------------------------------------------------- */

static void device_key(char *key, const char *pci, const uint8_t *uuid)
{
	size_t n = strnlen(pci, PTI_MAX_PCI_ADDRESS_SIZE);
	if (n) {
		memcpy(key, pci, n);
		key[n] = 0;
		return;
	}
	for (int i = 0; i < PTI_MAX_DEVICE_UUID_SIZE; i++)
		snprintf(key + 2 * i, 3, "%02x", uuid[i]);
}

/* The device's index in k, or -1. */
static int key_index(const struct kept *k, const char *pci, const uint8_t *uuid)
{
	char key[DEV_KEY];
	device_key(key, pci, uuid);
	for (int i = 0; i < k->ndev; i++)
		if (!strcmp(k->dev[i], key))
			return i;
	return -1;
}

static int find_device(const struct conv *c, const char *key)
{
	for (int i = 0; i < c->ndev; i++)
		if (!strcmp(c->dev[i], key))
			return i;
	return -1;
}

/* The index noted for a record's device bytes, or -2 when none is. */
static int cached_device(const struct conv *c, const char *pci, const uint8_t *uuid)
{
	for (int i = 0; i < c->nseen; i++)
		if (!memcmp(c->seen[i].pci, pci, sizeof(c->seen[i].pci)) &&
		    !memcmp(c->seen[i].uuid, uuid, sizeof(c->seen[i].uuid)))
			return c->seen[i].index;
	return -2;
}

static void cache_device(struct conv *c, const char *pci, const uint8_t *uuid, int index)
{
	struct seen *s = &c->seen[c->nseen < SEEN_CACHE ? c->nseen++ : c->seen_next++ % SEEN_CACHE];
	memcpy(s->pci, pci, sizeof(s->pci));
	memcpy(s->uuid, uuid, sizeof(s->uuid));
	s->index = index;
}

/* Pass 1: a device seen. */
static void see_device(struct conv *c, const char *pci, const uint8_t *uuid)
{
	char key[sizeof(c->dev[0])];
	if (cached_device(c, pci, uuid) != -2)
		return;
	device_key(key, pci, uuid);
	int i = find_device(c, key);
	if (i < 0 && c->ndev == STRB_GPU_MAX_DEVICES) {
		c->dev_overflow = true;
	} else if (i < 0) {
		memcpy(c->dev[c->ndev], key, sizeof(key));
		i = c->ndev++;
	}
	cache_device(c, pci, uuid, i);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Pass 2: the device's index, or -1 (more devices than rows). */
static int device_of(struct conv *c, const char *pci, const uint8_t *uuid)
{
	char key[sizeof(c->dev[0])];
	int i = cached_device(c, pci, uuid);
	if (i != -2)
		return i;
	device_key(key, pci, uuid);
	i = find_device(c, key);
	cache_device(c, pci, uuid, i);
	return i;
}

static uint32_t row_of(uint64_t sycl_queue)
{
	return sycl_queue >= UNKNOWN_QUEUE ? UNKNOWN_QUEUE : (uint32_t)sycl_queue;
}

/* libkineto's XPU rows: "Stream <SYCL queue id>". */
static void row_title(uint32_t stream, char *buf, size_t len)
{
	if (stream == UNKNOWN_QUEUE)
		snprintf(buf, len, "Stream unknown");
	else
		snprintf(buf, len, "Stream %u", stream);
}

/* ---- pass 1 ------------------------------------------------------------- */

static void walk(struct conv *c, void (*fn)(struct conv *, const pti_record_base_t *))
{
	for (struct strb_gpu_buffer *b = c->buffers; b && !c->g.rc; b = b->next) {
		pti_record_base_t *rec = NULL;
		pti_result_t r = PTI_SUCCESS;
		while (!c->g.rc && (r = c->lib->next_record(b->data, b->valid, &rec)) == PTI_SUCCESS && rec)
			fn(c, rec);
		if (r != PTI_SUCCESS && r != PTI_STATUS_END_OF_BUFFER)
			c->g.st->gpu_bad_buffers++;
		/* A buffer whose records render args goes with the trace (also
		 * after an error: the trace points into it); room was made. */
		if (c->rendered && c->kept->n < c->kept->cap) {
			c->kept->data[c->kept->n++] = b->data;
			b->data = NULL;
		}
		c->rendered = false;
	}
}

static void add_work_call(struct conv *c, uint32_t corr, uint32_t tid, uint64_t append, uint64_t start)
{
	uint64_t t = append ? append : start;
	if (!corr || !t ||
	    !strb_gpu_grow(&c->g, (void **)&c->work, &c->work_cap, c->nwork + 1, sizeof(*c->work)))
		return;
	c->work[c->nwork++] = (struct work_call){corr, tid, t};
}

static void pass1(struct conv *c, const pti_record_base_t *rec)
{
	c->g.st->gpu_records++;
	switch (rec->kind) {
	case PTI_VIEW_RUNTIME_API:
	case PTI_VIEW_DRIVER_API: {
		const pti_record_api_t *r = (const void *)rec;
		uint32_t type = rec->kind == PTI_VIEW_RUNTIME_API ? CALL_RUNTIME : CALL_DRIVER;
		struct strb_gpu_call call = {
		    .corr = r->correlation_id,
		    .kind = r->api_group << 2 | type,
		    .op = r->api_id,
		    .tid = (pid_t)r->thread_id,
		    .start = strb_gpu_epoch(&c->g, r->start_timestamp),
		    .end = strb_gpu_epoch(&c->g, r->end_timestamp),
		};
		strb_gpu_add_call(&c->g, &call);
		break;
	}
	case PTI_VIEW_EXTERNAL_CORRELATION: {
		const pti_record_external_t *r = (const void *)rec;
		if (r->external_kind == PTI_VIEW_EXTERNAL_KIND_CUSTOM_0 ||
		    r->external_kind == PTI_VIEW_EXTERNAL_KIND_CUSTOM_1)
			strb_gpu_add_external(&c->g, r->correlation_id,
			                      r->external_kind == PTI_VIEW_EXTERNAL_KIND_CUSTOM_1,
			                      r->external_id);
		else
			c->g.st->gpu_invalid_external_correlations++;
		break;
	}
	case PTI_VIEW_DEVICE_GPU_KERNEL: {
		const pti_record_kernel_t *r = (const void *)rec;
		see_device(c, r->pci_address, r->device_uuid);
		add_work_call(c, r->correlation_id, r->thread_id, r->append_timestamp, r->start_timestamp);
		break;
	}
	case PTI_VIEW_DEVICE_GPU_MEM_COPY: {
		const pti_record_copy_t *r = (const void *)rec;
		see_device(c, r->pci_address, r->device_uuid);
		add_work_call(c, r->correlation_id, r->thread_id, r->append_timestamp, r->start_timestamp);
		break;
	}
	case PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P: {
		const pti_record_copy_p2p_t *r = (const void *)rec;
		see_device(c, r->src_pci_address, r->src_uuid);
		see_device(c, r->dst_pci_address, r->dst_uuid);
		add_work_call(c, r->correlation_id, r->thread_id, r->append_timestamp, r->start_timestamp);
		break;
	}
	case PTI_VIEW_DEVICE_GPU_MEM_FILL: {
		const pti_record_fill_t *r = (const void *)rec;
		see_device(c, r->pci_address, r->device_uuid);
		add_work_call(c, r->correlation_id, r->thread_id, r->append_timestamp, r->start_timestamp);
		break;
	}
	default:
		break;
	}
}

/* Driver calls before runtime calls, each in record order: the table keeps
 * the last call of an id, so a runtime call wins over the driver calls it
 * made. */
static void order_api_calls(struct strb_gpu *g)
{
	size_t nrt = 0;
	for (size_t i = 0; i < g->ncalls; i++)
		nrt += CALL_TYPE(g->calls[i].kind) == CALL_RUNTIME;
	if (!nrt || nrt == g->ncalls)
		return;
	struct strb_gpu_call *rt = malloc(nrt * sizeof(*rt));
	if (!rt) {
		g->rc = -ENOMEM;
		return;
	}
	size_t ndrv = 0, k = 0;
	for (size_t i = 0; i < g->ncalls; i++) {
		if (CALL_TYPE(g->calls[i].kind) == CALL_RUNTIME)
			rt[k++] = g->calls[i];
		else
			g->calls[ndrv++] = g->calls[i];
	}
	memcpy(g->calls + ndrv, rt, nrt * sizeof(*rt));
	free(rt);
}

/* Which ids have a runtime or driver call, when they are dense enough for
 * a bitmap (NULL: not known, every work call is kept). */
static uint8_t *api_ids(const struct strb_gpu *g, uint64_t *base, uint64_t *span)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < g->ncalls; i++) {
		uint64_t id = g->calls[i].corr;
		lo = id < lo ? id : lo;
		hi = id > hi ? id : hi;
	}
	if (!g->ncalls || hi - lo >= 64 * (uint64_t)g->ncalls + 65536)
		return NULL;
	uint8_t *bits = calloc((hi - lo) / 8 + 1, 1);
	for (size_t i = 0; bits && i < g->ncalls; i++) {
		uint64_t d = g->calls[i].corr - lo;
		bits[d / 8] |= (uint8_t)(1u << (d % 8));
	}
	*base = lo, *span = hi - lo + 1;
	return bits;
}

/* Work calls before the runtime and driver calls: they stand for GPU work
 * whose id no call was recorded for (one that was is never found through
 * its work, and is left out). */
static void order_calls(struct conv *c)
{
	struct strb_gpu *g = &c->g;
	order_api_calls(g);
	if (g->rc || !c->nwork)
		return;
	uint64_t base = 0, span = 0;
	uint8_t *bits = api_ids(g, &base, &span);
	size_t keep = 0;
	for (size_t i = 0; i < c->nwork; i++) {
		uint64_t d = c->work[i].corr - base;
		bool called = bits && c->work[i].corr >= base && d < span && (bits[d / 8] >> (d % 8) & 1);
		if (!called)
			c->work[keep++] = c->work[i];
	}
	free(bits);
	if (!keep ||
	    !strb_gpu_grow(g, (void **)&g->calls, &g->calls_cap, g->ncalls + keep, sizeof(*g->calls)))
		return;
	memmove(g->calls + keep, g->calls, g->ncalls * sizeof(*g->calls));
	for (size_t i = 0; i < keep; i++) {
		int64_t t = strb_gpu_epoch(g, c->work[i].t);
		g->calls[i] = (struct strb_gpu_call){.corr = c->work[i].corr,
		                                     .kind = CALL_WORK,
		                                     .tid = (pid_t)c->work[i].tid,
		                                     .start = t,
		                                     .end = t};
	}
	g->ncalls += keep;
}

/* Device indexes: Intel GPUs of this machine and devices seen, by PCI
 * address (keys without one, UUIDs, after them). */
static void order_devices(struct conv *c)
{
	const struct strb_pti_state *s = &strb_pti;
	for (int i = 0; i < s->npci; i++) {
		char key[sizeof(c->dev[0])];
		snprintf(key, sizeof(key), "%s", s->pci[i]);
		if (find_device(c, key) < 0 && c->ndev < STRB_GPU_MAX_DEVICES)
			memcpy(c->dev[c->ndev++], key, sizeof(key));
	}
	qsort(c->dev, (size_t)c->ndev, sizeof(c->dev[0]), cmp_key);
	c->nseen = c->seen_next = 0; /* indexes change */
}

static void mark_calls(struct conv *c)
{
	struct strb_gpu *g = &c->g;
	for (size_t i = 0; i < g->ncalls; i++) {
		struct strb_gpu_call *call = &g->calls[i];
		uint32_t type = CALL_TYPE(call->kind);
		if (type == CALL_WORK)
			continue;
		enum strobe_activity_type at =
		    type == CALL_RUNTIME ? STROBE_ACTIVITY_XPU_RUNTIME : STROBE_ACTIVITY_XPU_DRIVER;
		call->emitted = strb_gpu_selected(g, at) && call->start >= g->w->start_ns &&
		                call->end <= g->w->stop_ns && call->end >= call->start;
		/* Arrows start at runtime calls only (driver calls share their
		 * ids); the launch self-check counts the call work links to. */
		call->flow = call->emitted && type == CALL_RUNTIME;
		call->launch = call->emitted && strb_gpu_find(g, call->corr).call == call &&
		               launch_call(c, CALL_GROUP(call->kind), call->op);
	}
}

/* ---- args ---------------------------------------------------------------- */

/* Frees the kept buffers with the trace (its arg source's release). */
static void release_kept(void *ctx)
{
	struct kept *k = ctx;
	if (!k)
		return;
	while (k->n)
		free(k->data[--k->n]);
	free(k->data);
	free(k);
}

/* String values of rendered args go in s->text, formatted by hand: writing
 * a trace renders them once per activity. "0x" and 16 hex digits. */
static const char *handle(struct strb_arg_scratch *s, size_t *used, uint64_t v)
{
	char *p = s->text + *used;
	p[0] = '0', p[1] = 'x';
	for (int i = 0; i < 16; i++)
		p[2 + i] = "0123456789abcdef"[(v >> (60 - 4 * i)) & 15];
	p[18] = 0;
	*used += 19;
	return p;
}

/* A copy's or fill's common args, after those of its kind; returns how
 * many. */
static size_t mem_args(struct strobe_arg *v, size_t n, struct strb_arg_scratch *s, size_t *used,
                       const struct strobe_activity *a, uint64_t queue, uint64_t l0q, uint64_t ctx,
                       uint32_t corr, const char *call, uint64_t op_id, uint64_t bytes)
{
	int64_t dur = a->end_ns - a->start_ns;
	v[n++] = ARG_I("device", a->device);
	v[n++] = ARG_U("sycl queue", queue);
	v[n++] = ARG_S("l0 queue", handle(s, used, l0q));
	v[n++] = ARG_S("context", handle(s, used, ctx));
	v[n++] = ARG_U("correlation", corr);
	v[n++] = ARG_S("l0 call", call);
	v[n++] = ARG_U("memory opration id", op_id); /* libkineto's spelling */
	v[n++] = ARG_U("bytes", bytes);
	if (dur > 0)
		v[n++] = ARG_F("memory bandwidth (GB/s)", (double)bytes / (double)dur);
	return n;
}

/* The args of a kernel, copy, fill or runtime/driver call, from its record
 * (whose PTI strings are the trace's copies by then) and its activity (its
 * device index, times, and a call's correlation id). At most 11 args, 2
 * strings of 19 bytes in s->text. */
static size_t render(const void *ctx, const void *rec, const struct strobe_activity *a,
                     struct strb_arg_scratch *s)
{
	struct strobe_arg *v = s->args;
	size_t n = 0, used = 0;
	if (rec == &call_rec) {
		v[n++] = ARG_U("correlation", a->id);
		return n;
	}
	switch (((const pti_record_base_t *)rec)->kind) {
	case PTI_VIEW_DEVICE_GPU_KERNEL: {
		const pti_record_kernel_t *r = rec;
		v[n++] = ARG_I("device", a->device);
		v[n++] = ARG_U("sycl queue", r->sycl_queue_id);
		v[n++] = ARG_S("l0 queue", handle(s, &used, r->queue_handle));
		v[n++] = ARG_S("context", handle(s, &used, r->context_handle));
		v[n++] = ARG_U("correlation", r->correlation_id);
		v[n++] = ARG_U("kernel_id", r->kernel_id);
		v[n++] = ARG_U("sycl_node_id", r->sycl_node_id);
		v[n++] = ARG_U("sycl_invocation_id", r->sycl_invocation_id);
		if (r->source_file_name) {
			v[n++] = ARG_S("source_file_name", r->source_file_name);
			v[n++] = ARG_U("source_line_number", r->source_line_number);
		}
		break;
	}
	case PTI_VIEW_DEVICE_GPU_MEM_COPY: {
		const pti_record_copy_t *r = rec;
		n = mem_args(v, n, s, &used, a, r->sycl_queue_id, r->queue_handle, r->context_handle,
		             r->correlation_id, r->name, r->mem_op_id, r->bytes);
		break;
	}
	case PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P: {
		const pti_record_copy_p2p_t *r = rec;
		n = mem_args(v, n, s, &used, a, r->sycl_queue_id, r->queue_handle, r->context_handle,
		             r->correlation_id, r->name, r->mem_op_id, r->bytes);
		v[n++] = ARG_I("dst device", key_index(ctx, r->dst_pci_address, r->dst_uuid));
		break;
	}
	case PTI_VIEW_DEVICE_GPU_MEM_FILL: {
		const pti_record_fill_t *r = rec;
		n = mem_args(v, n, s, &used, a, r->sycl_queue_id, r->queue_handle, r->context_handle,
		             r->correlation_id, r->name, r->mem_op_id, r->bytes);
		v[n++] = ARG_U("value", r->value_for_set);
		break;
	}
	default:
		break;
	}
	return n;
}

/* The activity just emitted for rec gets its args: rendered from rec when
 * the trace is written (rec's buffer then stays with the trace), or, when
 * the trace renders another backend's records, built now. */
static void args_of(struct conv *c, struct strobe_activity *a, const void *rec)
{
	if (c->lazy) {
		if (strb_trace_render_args(c->g.t, rec))
			c->g.rc = -ENOMEM;
		c->rendered |= rec != &call_rec;
		return;
	}
	struct strb_arg_scratch s;
	size_t n = render(c->kept, rec, a, &s);
	for (size_t i = 0; i < n; i++)
		if (s.args[i].kind == STROBE_ARG_STRING)
			s.args[i].value.str = strb_gpu_keep(&c->g, s.args[i].value.str);
	a->args = n ? strb_trace_copy_args(c->g.t, s.args, n) : NULL;
	a->arg_count = a->args ? n : 0;
	if (n && !a->args)
		c->g.rc = -ENOMEM;
}

/* ---- pass 2 ------------------------------------------------------------- */

/* Links GPU work to its call; an arrow never ends before its start. */
static void link_work(struct conv *c, struct strobe_activity *a, uint32_t corr, int64_t start, bool kernel)
{
	struct strb_gpu_call *call = strb_gpu_link(&c->g, a, corr, start, true);
	if (!call)
		return;
	if (call->start > start) {
		a->flow_id = 0;
		return;
	}
	call->got_work = true;
	call->got_kernel |= kernel;
}

/* GPU work on its device's row, args from its record. */
static void work(struct conv *c, enum strobe_activity_type type, const char *name, int dev, uint64_t queue,
                 uint32_t corr, const void *rec, int64_t s, int64_t e)
{
	uint32_t stream = row_of(queue);
	struct strobe_activity *a = strb_gpu_emit(&c->g, type, name, s, e, dev, stream, NULL, 0);
	if (!a)
		return;
	args_of(c, a, rec);
	link_work(c, a, corr, s, type == STROBE_ACTIVITY_CONCURRENT_KERNEL);
	strb_gpu_note_row(&c->g, (uint32_t)dev, stream, s, e);
}

/* PTI's strings in a record become the trace's copies (the records are
 * strobe's; their args are rendered from them). */
static const char *own_string(struct conv *c, const char **field)
{
	return *field = pti_string(c, *field, "");
}

static void kernel(struct conv *c, pti_record_kernel_t *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->pci_address, r->device_uuid);
	if (dev < 0)
		return;
	if (r->source_file_name)
		own_string(c, &r->source_file_name);
	work(c, STROBE_ACTIVITY_CONCURRENT_KERNEL, pti_string(c, r->name, "<unknown kernel>"), dev,
	     r->sycl_queue_id, r->correlation_id, r, s, e);
}

static void copy(struct conv *c, pti_record_copy_t *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->pci_address, r->device_uuid);
	if (dev < 0)
		return;
	own_string(c, &r->name);
	work(c, STROBE_ACTIVITY_GPU_MEMCPY, copy_name(c, r->memcpy_type, r->mem_src, r->mem_dst), dev,
	     r->sycl_queue_id, r->correlation_id, r, s, e);
}

/* Peer to peer: on the source device's row. */
static void copy_p2p(struct conv *c, pti_record_copy_p2p_t *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->src_pci_address, r->src_uuid);
	if (dev < 0)
		return;
	own_string(c, &r->name);
	work(c, STROBE_ACTIVITY_GPU_MEMCPY, copy_name(c, r->memcpy_type, r->mem_src, r->mem_dst), dev,
	     r->sycl_queue_id, r->correlation_id, r, s, e);
}

static void fill(struct conv *c, pti_record_fill_t *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMSET) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->pci_address, r->device_uuid);
	if (dev < 0)
		return;
	char buf[96];
	snprintf(buf, sizeof(buf), "Memset (%llu -> %s)", (unsigned long long)r->value_for_set,
	         strb_pti.memory_type[r->mem_type & 3]);
	own_string(c, &r->name);
	work(c, STROBE_ACTIVITY_GPU_MEMSET, strb_gpu_keep(&c->g, buf), dev, r->sycl_queue_id,
	     r->correlation_id, r, s, e);
}

/* A host-side event (sync, overhead, collective) on its thread's row. */
static struct strobe_activity *host_event(struct conv *c, enum strobe_activity_type type, const char *name,
                                          uint64_t start, uint64_t end, uint32_t tid,
                                          const struct strobe_arg *args, size_t n)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, type) || !strb_gpu_record_ok(&c->g, start, end, &s, &e))
		return NULL;
	return strb_gpu_emit(&c->g, type, name, s, e, c->g.t->pid, (int64_t)tid, args, n);
}

static void sync_event(struct conv *c, const pti_record_sync_t *r)
{
	struct strb_arg_scratch h;
	size_t used = 0;
	static const char *const types[] = {
	    "Unknown",    "GPU Barrier Execution", "GPU Barrier Memory", "Host Fence",
	    "Host Event", "Host Command List",     "Host Command Queue", "Host Device"};
	struct strobe_arg args[] = {
	    ARG_S("Type", types[r->synch_type < 8 ? r->synch_type : 0]),
	    ARG_S("Context_handle", strb_gpu_keep(&c->g, handle(&h, &used, r->context_handle))),
	    ARG_S("Queue_handle", strb_gpu_keep(&c->g, handle(&h, &used, r->queue_handle))),
	    ARG_U("Event_handle", r->event_handle),
	    ARG_U("Number_wait_events", r->number_wait_events),
	    ARG_U("Return_code", r->return_code),
	    ARG_U("correlation", r->correlation_id),
	};
	struct strobe_activity *a =
	    host_event(c, STROBE_ACTIVITY_XPU_SYNC, api_name(c, r->api_group, r->api_id), r->start_timestamp,
	               r->end_timestamp, r->thread_id, args, sizeof(args) / sizeof(args[0]));
	if (!a)
		return;
	struct strb_gpu_ref ref = strb_gpu_find(&c->g, r->correlation_id);
	a->linked_id = ref.ext0 ? ref.ext0 : ref.call ? ref.call->op_id : 0;
}

static void overhead(struct conv *c, const pti_record_overhead_t *r)
{
	static const char *const kinds[] = {"Unknown",      "Unknown", "Resource",
	                                    "Buffer Flush", "Driver",  "Instrumentation"};
	uint64_t span = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
	char pct[32];
	snprintf(pct, sizeof(pct), "%.0f%%", span ? 100.0 * (double)r->duration_ns / (double)span : 0.0);
	struct strobe_arg args[] = {
	    ARG_U("overhead cost", r->duration_ns),
	    ARG_S("overhead occupancy", strb_gpu_keep(&c->g, pct)),
	    ARG_U("overhead count", r->count),
	};
	host_event(c, STROBE_ACTIVITY_OVERHEAD, kinds[r->kind < 6 ? r->kind : 0], r->start_ns, r->end_ns,
	           r->thread_id, args, sizeof(args) / sizeof(args[0]));
}

static void comms(struct conv *c, const pti_record_comms_t *r)
{
	char buf[160];
	snprintf(buf, sizeof(buf), "xccl::%.140s", r->name ? r->name : "unknown");
	struct strobe_arg args[] = {
	    ARG_U("Communicator_id", r->communicator_id),
	    ARG_U("send bytes", r->send_size),
	    ARG_U("recv bytes", r->recv_size),
	};
	host_event(c, STROBE_ACTIVITY_COLLECTIVE_COMM, strb_gpu_keep(&c->g, buf), r->start_timestamp,
	           r->end_timestamp, r->thread_id, args, sizeof(args) / sizeof(args[0]));
}

static void pass2(struct conv *c, const pti_record_base_t *rec)
{
	switch (rec->kind) {
	/* GPU work's records are strobe's to change (own_string). */
	case PTI_VIEW_DEVICE_GPU_KERNEL:
		kernel(c, (void *)(uintptr_t)rec);
		break;
	case PTI_VIEW_DEVICE_GPU_MEM_COPY:
		copy(c, (void *)(uintptr_t)rec);
		break;
	case PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P:
		copy_p2p(c, (void *)(uintptr_t)rec);
		break;
	case PTI_VIEW_DEVICE_GPU_MEM_FILL:
		fill(c, (void *)(uintptr_t)rec);
		break;
	case PTI_VIEW_DEVICE_SYNCHRONIZATION:
		sync_event(c, (const void *)rec);
		break;
	case PTI_VIEW_COLLECTION_OVERHEAD:
		overhead(c, (const void *)rec);
		break;
	case PTI_VIEW_COMMUNICATION:
		comms(c, (const void *)rec);
		break;
	case PTI_VIEW_RUNTIME_API:
	case PTI_VIEW_DRIVER_API:
	case PTI_VIEW_EXTERNAL_CORRELATION:
		break; /* calls are written from the table, below */
	default:
		c->g.st->gpu_unexpected_records++;
		break;
	}
}

/* Runtime and driver calls, once pass 2 knows which launched work. */
static void emit_calls(struct conv *c)
{
	struct strb_gpu *g = &c->g;
	for (size_t i = 0; i < g->ncalls && !g->rc; i++) {
		struct strb_gpu_call *call = &g->calls[i];
		if (!call->emitted)
			continue;
		bool runtime = CALL_TYPE(call->kind) == CALL_RUNTIME;
		struct strobe_activity *a =
		    strb_gpu_emit(g, runtime ? STROBE_ACTIVITY_XPU_RUNTIME : STROBE_ACTIVITY_XPU_DRIVER,
		                  api_name(c, CALL_GROUP(call->kind), call->op), call->start, call->end,
		                  g->t->pid, (int64_t)call->tid, NULL, 0);
		if (!a)
			return;
		struct strb_gpu_ref ref = strb_gpu_find(g, call->corr);
		a->id = call->corr;
		args_of(c, a, &call_rec);
		a->linked_id = ref.ext0 ? ref.ext0 : call->op_id;
		if (runtime && call->flow && call->got_work) {
			a->flow_id = call->corr;
			a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
			a->flags |= STROBE_ACTIVITY_FLOW_START;
		}
	}
}

/* The trace renders the args of kernels, copies, fills and calls from the
 * records when it is written (building them cost more than the rest of
 * decoding), keeping their buffers; when it already renders another
 * backend's records, they are built now. False on allocation failure. */
static bool setup_args(struct conv *c)
{
	size_t nbuffers = 0;
	for (struct strb_gpu_buffer *i = c->buffers; i; i = i->next)
		nbuffers++;
	c->kept = calloc(1, sizeof(*c->kept));
	if (!c->kept || (nbuffers && !(c->kept->data = calloc(nbuffers, sizeof(*c->kept->data))))) {
		free(c->kept);
		c->kept = NULL;
		return false;
	}
	c->kept->cap = nbuffers;
	struct strb_arg_source src = {render, c->kept, release_kept};
	c->lazy = strb_trace_set_arg_source(c->g.t, &src) == 0;
	return true;
}

int strb_pti_convert(struct strobe_trace *t, const struct strb_window *w, struct strb_gpu_buffer *b)
{
	struct conv *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->buffers = b;
	c->lib = strb_pti.lib;
	strb_gpu_init(&c->g, t, w);
	c->g.pauses = &strb_pti.pauses;
	c->g.row_title = row_title;
	c->g.count_unmatched = strb_gpu_selected(&c->g, STROBE_ACTIVITY_XPU_RUNTIME) ||
	                       strb_gpu_selected(&c->g, STROBE_ACTIVITY_XPU_DRIVER);
	strb_gpu_pool_account(&strb_pti.pool, &t->stats);
	if (c->lib && !setup_args(c))
		c->g.rc = -ENOMEM;
	if (c->lib) {
		walk(c, pass1);
		order_calls(c);
		order_devices(c);
		if (c->kept) {
			memcpy(c->kept->dev, c->dev, sizeof(c->dev));
			c->kept->ndev = c->ndev;
		}
		strb_gpu_build_table(&c->g);
		strb_gpu_link_calls(&c->g);
		if (!c->g.rc)
			mark_calls(c);
		walk(c, pass2);
		emit_calls(c);
	}
	if (!c->g.rc) {
		strb_gpu_emit_spans(&c->g);
		strb_gpu_count_launches(&c->g);
		strb_gpu_add_rows(&c->g);
	}
	if (c->dev_overflow)
		LOGW("XPU: more than %d devices; work on the others is left out", STRB_GPU_MAX_DEVICES);
	if (t->stats.gpu_dropped_records)
		LOGW("XPU records lost: PTI dropped %llu", (unsigned long long)t->stats.gpu_dropped_records);
	int rc = c->g.rc;
	strb_gpu_free(&c->g);
	for (int i = 0; i < API_GROUPS; i++)
		free(c->api[i]), free(c->launch[i]);
	if (!c->lazy)
		release_kept(c->kept);
	free(c->work);
	free(c);
	return rc;
}

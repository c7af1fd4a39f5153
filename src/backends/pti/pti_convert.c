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

struct conv {
	struct strb_gpu g;
	const struct strb_pti_lib *lib;
	struct strb_gpu_buffer *buffers;
	/* Device keys (PCI address, else UUID in hex), sorted: the index is
	 * the device's pid. */
	char dev[STRB_GPU_MAX_DEVICES][2 * PTI_MAX_DEVICE_UUID_SIZE + 1];
	int ndev, last_dev;
	bool dev_overflow;
	/* Names by API group and id, looked up once. */
	const char **api[API_GROUPS];
	/* PTI's strings (kernel names, Level Zero call names) kept in the
	 * trace, by pointer. */
	const char *name_key[NAME_CACHE], *name_val[NAME_CACHE];
	const char *copy_names[16][4][4];
	uint64_t last_ctx, last_queue;
	const char *last_ctx_s, *last_queue_s;
};

#define ARG_I(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_I64, .value.i64 = (int64_t)(v)})
#define ARG_U(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_U64, .value.u64 = (uint64_t)(v)})
#define ARG_S(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_STRING, .value.str = (v)})
#define ARG_F(k, v) ((struct strobe_arg){.key = (k), .kind = STROBE_ARG_F64, .value.f64 = (v)})

/* ---- names ------------------------------------------------------------- */

static const char *api_name(struct conv *c, uint32_t group, uint32_t id)
{
	if (group >= API_GROUPS || id >= MAX_API_ID)
		return NULL;
	if (!c->api[group] && !(c->api[group] = calloc(MAX_API_ID, sizeof(*c->api[group])))) {
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
	}
	return *slot;
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

static const char *hex(struct conv *c, uint64_t v, uint64_t *last, const char **last_s)
{
	if (*last_s && *last == v)
		return *last_s;
	char buf[24];
	snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)v);
	*last = v;
	*last_s = strb_gpu_keep(&c->g, buf);
	return *last_s;
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

static int find_device(const struct conv *c, const char *key)
{
	if (c->ndev && !strcmp(c->dev[c->last_dev], key))
		return c->last_dev;
	for (int i = 0; i < c->ndev; i++)
		if (!strcmp(c->dev[i], key))
			return i;
	return -1;
}

/* Pass 1: a device seen. */
static void see_device(struct conv *c, const char *pci, const uint8_t *uuid)
{
	char key[sizeof(c->dev[0])];
	device_key(key, pci, uuid);
	int i = find_device(c, key);
	if (i >= 0) {
		c->last_dev = i;
		return;
	}
	if (c->ndev == STRB_GPU_MAX_DEVICES) {
		c->dev_overflow = true;
		return;
	}
	memcpy(c->dev[c->ndev], key, sizeof(key));
	c->last_dev = c->ndev++;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Pass 2: the device's index, or -1 (more devices than rows). */
static int device_of(struct conv *c, const char *pci, const uint8_t *uuid)
{
	char key[sizeof(c->dev[0])];
	device_key(key, pci, uuid);
	int i = find_device(c, key);
	if (i >= 0)
		c->last_dev = i;
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
	}
}

static void add_work_call(struct conv *c, uint32_t corr, uint32_t tid, uint64_t append, uint64_t start)
{
	uint64_t t = append ? append : start;
	struct strb_gpu_call call = {
	    .corr = corr,
	    .kind = CALL_WORK,
	    .tid = (pid_t)tid,
	    .start = strb_gpu_epoch(&c->g, t),
	    .end = strb_gpu_epoch(&c->g, t),
	};
	if (corr && t)
		strb_gpu_add_call(&c->g, &call);
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

/* Work calls first, then driver, then runtime calls: the table keeps the
 * last call of an id, so a runtime call wins over the driver calls it made
 * and both over the work's own thread and time. */
static void order_calls(struct conv *c)
{
	struct strb_gpu *g = &c->g;
	if (g->rc || !g->ncalls)
		return;
	struct strb_gpu_call *sorted = malloc(g->ncalls * sizeof(*sorted));
	if (!sorted) {
		g->rc = -ENOMEM;
		return;
	}
	size_t n = 0;
	for (uint32_t type = CALL_WORK; type <= CALL_RUNTIME; type++)
		for (size_t i = 0; i < g->ncalls; i++)
			if (CALL_TYPE(g->calls[i].kind) == type)
				sorted[n++] = g->calls[i];
	free(g->calls);
	g->calls = sorted;
	g->calls_cap = g->ncalls;
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
	c->last_dev = 0;
}

static bool is_launch(const char *name)
{
	return name && (strstr(name, "LaunchKernel") || strstr(name, "KernelLaunch"));
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
		               is_launch(api_name(c, CALL_GROUP(call->kind), call->op));
	}
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

static const char *handle_arg(struct conv *c, uint64_t v, bool queue)
{
	return queue ? hex(c, v, &c->last_queue, &c->last_queue_s) : hex(c, v, &c->last_ctx, &c->last_ctx_s);
}

static void kernel(struct conv *c, const pti_record_kernel_t *r)
{
	int64_t s, e;
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->pci_address, r->device_uuid);
	if (dev < 0)
		return;
	uint32_t stream = row_of(r->sycl_queue_id);
	struct strobe_arg args[10] = {
	    ARG_I("device", dev),
	    ARG_U("sycl queue", r->sycl_queue_id),
	    ARG_S("l0 queue", handle_arg(c, r->queue_handle, true)),
	    ARG_S("context", handle_arg(c, r->context_handle, false)),
	    ARG_U("correlation", r->correlation_id),
	    ARG_U("kernel_id", r->kernel_id),
	    ARG_U("sycl_node_id", r->sycl_node_id),
	    ARG_U("sycl_invocation_id", r->sycl_invocation_id),
	};
	size_t n = 8;
	if (r->source_file_name) {
		args[n++] = ARG_S("source_file_name", pti_string(c, r->source_file_name, ""));
		args[n++] = ARG_U("source_line_number", r->source_line_number);
	}
	struct strobe_activity *a =
	    strb_gpu_emit(&c->g, STROBE_ACTIVITY_CONCURRENT_KERNEL,
	                  pti_string(c, r->name, "<unknown kernel>"), s, e, dev, stream, args, n);
	if (!a)
		return;
	link_work(c, a, r->correlation_id, s, true);
	strb_gpu_note_row(&c->g, (uint32_t)dev, stream, s, e);
}

/* A copy's or fill's common args; returns how many. */
static size_t mem_args(struct conv *c, struct strobe_arg *args, int dev, uint64_t queue, uint64_t l0q,
                       uint64_t ctx, uint32_t corr, const char *call, uint64_t op_id, uint64_t bytes,
                       int64_t dur)
{
	size_t n = 0;
	args[n++] = ARG_I("device", dev);
	args[n++] = ARG_U("sycl queue", queue);
	args[n++] = ARG_S("l0 queue", handle_arg(c, l0q, true));
	args[n++] = ARG_S("context", handle_arg(c, ctx, false));
	args[n++] = ARG_U("correlation", corr);
	args[n++] = ARG_S("l0 call", pti_string(c, call, ""));
	args[n++] = ARG_U("memory opration id", op_id); /* libkineto's spelling */
	args[n++] = ARG_U("bytes", bytes);
	if (dur > 0)
		args[n++] = ARG_F("memory bandwidth (GB/s)", (double)bytes / (double)dur);
	return n;
}

static void mem_op(struct conv *c, enum strobe_activity_type type, const char *name, int dev, uint64_t queue,
                   uint32_t corr, const struct strobe_arg *args, size_t n, int64_t s, int64_t e)
{
	uint32_t stream = row_of(queue);
	struct strobe_activity *a = strb_gpu_emit(&c->g, type, name, s, e, dev, stream, args, n);
	if (!a)
		return;
	link_work(c, a, corr, s, false);
	strb_gpu_note_row(&c->g, (uint32_t)dev, stream, s, e);
}

static void copy(struct conv *c, const pti_record_copy_t *r)
{
	int64_t s, e;
	struct strobe_arg args[9];
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->pci_address, r->device_uuid);
	if (dev < 0)
		return;
	size_t n = mem_args(c, args, dev, r->sycl_queue_id, r->queue_handle, r->context_handle,
	                    r->correlation_id, r->name, r->mem_op_id, r->bytes, e - s);
	mem_op(c, STROBE_ACTIVITY_GPU_MEMCPY, copy_name(c, r->memcpy_type, r->mem_src, r->mem_dst), dev,
	       r->sycl_queue_id, r->correlation_id, args, n, s, e);
}

/* Peer to peer: on the source device's row. */
static void copy_p2p(struct conv *c, const pti_record_copy_p2p_t *r)
{
	int64_t s, e;
	struct strobe_arg args[10];
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMCPY) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->src_pci_address, r->src_uuid);
	int dst = device_of(c, r->dst_pci_address, r->dst_uuid);
	if (dev < 0)
		return;
	size_t n = mem_args(c, args, dev, r->sycl_queue_id, r->queue_handle, r->context_handle,
	                    r->correlation_id, r->name, r->mem_op_id, r->bytes, e - s);
	args[n++] = ARG_I("dst device", dst);
	mem_op(c, STROBE_ACTIVITY_GPU_MEMCPY, copy_name(c, r->memcpy_type, r->mem_src, r->mem_dst), dev,
	       r->sycl_queue_id, r->correlation_id, args, n, s, e);
}

static void fill(struct conv *c, const pti_record_fill_t *r)
{
	int64_t s, e;
	struct strobe_arg args[10];
	if (!strb_gpu_selected(&c->g, STROBE_ACTIVITY_GPU_MEMSET) ||
	    !strb_gpu_record_ok(&c->g, r->start_timestamp, r->end_timestamp, &s, &e))
		return;
	int dev = device_of(c, r->pci_address, r->device_uuid);
	if (dev < 0)
		return;
	char buf[96];
	snprintf(buf, sizeof(buf), "Memset (%llu -> %s)", (unsigned long long)r->value_for_set,
	         strb_pti.memory_type[r->mem_type & 3]);
	size_t n = mem_args(c, args, dev, r->sycl_queue_id, r->queue_handle, r->context_handle,
	                    r->correlation_id, r->name, r->mem_op_id, r->bytes, e - s);
	args[n++] = ARG_U("value", r->value_for_set);
	mem_op(c, STROBE_ACTIVITY_GPU_MEMSET, strb_gpu_keep(&c->g, buf), dev, r->sycl_queue_id,
	       r->correlation_id, args, n, s, e);
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
	static const char *const types[] = {
	    "Unknown",    "GPU Barrier Execution", "GPU Barrier Memory", "Host Fence",
	    "Host Event", "Host Command List",     "Host Command Queue", "Host Device"};
	struct strobe_arg args[] = {
	    ARG_S("Type", types[r->synch_type < 8 ? r->synch_type : 0]),
	    ARG_S("Context_handle", handle_arg(c, r->context_handle, false)),
	    ARG_S("Queue_handle", handle_arg(c, r->queue_handle, true)),
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
	case PTI_VIEW_DEVICE_GPU_KERNEL:
		kernel(c, (const void *)rec);
		break;
	case PTI_VIEW_DEVICE_GPU_MEM_COPY:
		copy(c, (const void *)rec);
		break;
	case PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P:
		copy_p2p(c, (const void *)rec);
		break;
	case PTI_VIEW_DEVICE_GPU_MEM_FILL:
		fill(c, (const void *)rec);
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
		struct strobe_arg args[] = {ARG_U("correlation", call->corr)};
		struct strobe_activity *a =
		    strb_gpu_emit(g, runtime ? STROBE_ACTIVITY_XPU_RUNTIME : STROBE_ACTIVITY_XPU_DRIVER,
		                  api_name(c, CALL_GROUP(call->kind), call->op), call->start, call->end,
		                  g->t->pid, (int64_t)call->tid, args, 1);
		if (!a)
			return;
		struct strb_gpu_ref ref = strb_gpu_find(g, call->corr);
		a->id = call->corr;
		a->linked_id = ref.ext0 ? ref.ext0 : call->op_id;
		if (runtime && call->flow && call->got_work) {
			a->flow_id = call->corr;
			a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
			a->flags |= STROBE_ACTIVITY_FLOW_START;
		}
	}
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
	if (c->lib) {
		walk(c, pass1);
		order_calls(c);
		order_devices(c);
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
		free(c->api[i]);
	free(c);
	return rc;
}

#define LOG_TAG "process"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/capture.h"
#include "core/log.h"
#include "core/tbuf.h"
#include "process/process.h"

struct open_range {
	size_t act; /* index in t->acts, or SIZE_MAX when the type is not selected */
};

struct stack {
	struct open_range *items;
	size_t n, cap;
};

struct walk {
	struct strobe_trace *t;
	const struct strb_window *w;
	struct stack ranges, ops;
	uint64_t next_id, id_end;
	int rc;
};

static int stack_push(struct stack *s, size_t act)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct open_range *n = realloc(s->items, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		s->items = n;
		s->cap = cap;
	}
	s->items[s->n++].act = act;
	return 0;
}

static bool selected(const struct strb_window *w, uint32_t type)
{
	return type <= STROBE_ACTIVITY_TYPE_MAX && (w->mask & STROBE_ACTIVITY_BIT(type));
}

static uint64_t next_id(struct walk *k)
{
	if (k->next_id == k->id_end) {
		k->next_id = strb_ids_take_block(1024);
		k->id_end = k->next_id + 1024;
	}
	return k->next_id++;
}

static struct strobe_activity *emit(struct walk *k, uint32_t type, const struct strb_rec *r, size_t payload,
				    pid_t tid)
{
	const char *name = strb_trace_intern(k->t, (const char *)(r + 1) + payload, r->name_len);
	struct strobe_activity *a = name ? strb_trace_push(k->t) : NULL;
	if (!a) {
		k->rc = -ENOMEM;
		return NULL;
	}
	a->type = (enum strobe_activity_type)type;
	a->name = name;
	a->start_ns = a->end_ns = strb_clock_map_to_epoch(k->w->map, r->ticks);
	a->device = k->t->pid;
	a->resource = tid;
	return a;
}

static void begin_range(struct walk *k, struct stack *s, uint32_t type, const struct strb_rec *r, pid_t tid)
{
	size_t idx = SIZE_MAX;
	if (selected(k->w, type)) {
		bool is_op = type == STROBE_ACTIVITY_CPU_OP;
		struct strobe_activity *a = emit(k, type, r, is_op ? sizeof(uint64_t) : 0, tid);
		if (!a)
			return;
		a->id = is_op ? *(const uint64_t *)(r + 1) : next_id(k);
		a->flags = STROBE_ACTIVITY_UNFINISHED; /* until its pop is seen */
		idx = k->t->count - 1;
	}
	if (stack_push(s, idx))
		k->rc = -ENOMEM;
}

static void end_range(struct walk *k, struct stack *s, const struct strb_rec *r)
{
	if (!s->n) {
		/* Opened before the window (or popped once too often). */
		k->t->stats.unmatched_pops++;
		return;
	}
	size_t idx = s->items[--s->n].act;
	if (idx == SIZE_MAX)
		return;
	struct strobe_activity *a = &k->t->acts[idx];
	if (r->ticks > k->w->stop_ticks) {
		/* Popped after stop: it was still open when the window closed. */
		a->end_ns = k->w->stop_ns > a->start_ns ? k->w->stop_ns : a->start_ns;
		k->t->stats.unfinished_ranges++;
		return;
	}
	a->end_ns = strb_clock_map_to_epoch(k->w->map, r->ticks);
	a->flags &= ~STROBE_ACTIVITY_UNFINISHED;
}

static void counter(struct walk *k, const struct strb_rec *r, pid_t tid)
{
	double v = *(const double *)(r + 1);
	if (!isfinite(v)) {
		k->t->stats.non_finite_counters++;
		return;
	}
	struct strobe_activity *a = emit(k, STROBE_ACTIVITY_CPU_COUNTER, r, sizeof(double), tid);
	if (!a)
		return;
	struct strobe_arg arg = {.key = a->name, .kind = STROBE_ARG_F64, .value.f64 = v};
	a->args = strb_trace_copy_args(k->t, &arg, 1);
	a->arg_count = 1;
	if (!a->args)
		k->rc = -ENOMEM;
}

/* Rebuilds the strobe_record activity from its serialised form. */
static void recorded(struct walk *k, const struct strb_rec *r, pid_t tid)
{
	const struct strb_rec_activity *ra = (const void *)(r + 1);
	if (!selected(k->w, ra->type))
		return;
	struct strobe_arg stack_args[16];
	struct strobe_arg *args = ra->arg_count <= 16 ? stack_args : malloc(ra->arg_count * sizeof(*args));
	if (!args) {
		k->rc = -ENOMEM;
		return;
	}
	/* Keys and strings are not NUL-terminated in the buffer: intern them. */
	const uint8_t *p = (const uint8_t *)(ra + 1);
	for (uint32_t i = 0; i < ra->arg_count; i++) {
		const struct strb_rec_arg *ia = (const void *)p;
		p += sizeof(*ia);
		args[i].key = strb_trace_intern(k->t, (const char *)p, ia->key_len);
		p += (ia->key_len + 7u) & ~7u;
		args[i].kind = (enum strobe_arg_kind)ia->kind;
		memcpy(&args[i].value, &ia->v, sizeof(ia->v));
		if (ia->kind == STROBE_ARG_BOOL)
			args[i].value.b = ia->v.b != 0;
		if (ia->kind == STROBE_ARG_STRING || ia->kind == STROBE_ARG_JSON) {
			args[i].value.str = strb_trace_intern(k->t, (const char *)p, ia->str_len);
			p += (ia->str_len + 7u) & ~7u;
		}
	}
	struct strobe_activity a = {
		.size = sizeof(a),
		.type = (enum strobe_activity_type)ra->type,
		.flags = ra->flags,
		.name = strb_trace_intern(k->t, (const char *)p, r->name_len),
		.start_ns = ra->start_ns,
		.end_ns = ra->end_ns,
		.device = ra->device ? ra->device : k->t->pid,
		.resource = ra->resource ? ra->resource : tid,
		.id = ra->id,
		.linked_id = ra->linked_id,
		.flow_id = ra->flow_id,
		.flow_kind = (enum strobe_flow_kind)ra->flow_kind,
		.args = args,
		.arg_count = ra->arg_count,
	};
	if (strb_trace_add_copy(k->t, &a))
		k->rc = -ENOMEM;
	if (args != stack_args)
		free(args);
}

static size_t record_size(const struct strb_rec *r)
{
	size_t payload;
	switch (r->kind) {
	case STRB_REC_OP_PUSH:
	case STRB_REC_COUNTER:
	case STRB_REC_CORR_PUSH:
		payload = 8; /* id or value */
		break;
	case STRB_REC_ACTIVITY:
		payload = r->aux;
		break;
	default:
		payload = 0;
		break;
	}
	return sizeof(*r) + payload + ((r->name_len + 7u) & ~7u);
}

static void close_open(struct walk *k, struct stack *s)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->items[i].act == SIZE_MAX)
			continue;
		struct strobe_activity *a = &k->t->acts[s->items[i].act];
		a->end_ns = k->w->stop_ns > a->start_ns ? k->w->stop_ns : a->start_ns;
		k->t->stats.unfinished_ranges++;
	}
	s->n = 0;
}

static void walk_buffer(struct strb_tbuf *b, size_t published, void *arg)
{
	struct walk *k = arg;
	struct strobe_trace *t = k->t;
	const struct strb_window *w = k->w;
	k->ranges.n = k->ops.n = 0;
	size_t off = 0;
	while (off + sizeof(struct strb_rec) <= published && !k->rc) {
		const struct strb_rec *r = (const void *)(b->base + off);
		off += record_size(r);
		bool timed = r->kind != STRB_REC_ACTIVITY;
		if (timed && r->ticks > w->stop_ticks && r->kind != STRB_REC_RANGE_POP && r->kind != STRB_REC_OP_POP) {
			t->stats.out_of_window++;
			continue;
		}
		switch (r->kind) {
		case STRB_REC_RANGE_PUSH:
			begin_range(k, &k->ranges, STROBE_ACTIVITY_USER_ANNOTATION, r, b->tid);
			break;
		case STRB_REC_OP_PUSH:
			begin_range(k, &k->ops, STROBE_ACTIVITY_CPU_OP, r, b->tid);
			break;
		case STRB_REC_RANGE_POP:
			end_range(k, &k->ranges, r);
			break;
		case STRB_REC_OP_POP:
			end_range(k, &k->ops, r);
			break;
		case STRB_REC_INSTANT:
			if (selected(w, STROBE_ACTIVITY_CPU_INSTANT_EVENT))
				emit(k, STROBE_ACTIVITY_CPU_INSTANT_EVENT, r, 0, b->tid);
			break;
		case STRB_REC_COUNTER:
			if (selected(w, STROBE_ACTIVITY_CPU_COUNTER))
				counter(k, r, b->tid);
			break;
		case STRB_REC_ACTIVITY:
			recorded(k, r, b->tid);
			break;
		default:
			/* Correlation records matter to device backends only. */
			break;
		}
	}
	/* Ranges still open at stop end at stop. */
	close_open(k, &k->ranges);
	close_open(k, &k->ops);
	t->stats.dropped_events += atomic_load_explicit(&b->dropped, memory_order_relaxed);
	t->stats.truncated_names += atomic_load_explicit(&b->truncated, memory_order_relaxed);
	t->stats.buffer_bytes += published;
	t->stats.threads++;

	char label[STRB_THREAD_NAME_MAX];
	memcpy(label, b->name, sizeof(label));
	label[sizeof(label) - 1] = 0;
	struct strobe_resource res = {
		.size = sizeof(res),
		.kind = STROBE_RESOURCE_THREAD,
		.device = t->pid,
		.resource = b->tid,
		.name = label,
		.sort_index = b->tid,
	};
	if (strb_trace_add_resource(t, &res))
		k->rc = -ENOMEM;
}

int strb_process_cpu(struct strobe_trace *t, const struct strb_window *w)
{
	struct walk k = {.t = t, .w = w};
	strb_tbuf_foreach(w->session, walk_buffer, &k);
	free(k.ranges.items);
	free(k.ops.items);
	return k.rc;
}

#define LOG_TAG "process"
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "core/capture.h"
#include "core/names.h"
#include "core/tbuf.h"
#include "process/process.h"

#define CONSUMED_STEP (8u << 20)

struct open_range {
	size_t act; /* index in t->acts, or SIZE_MAX when the type is not selected */
};

struct stack {
	struct open_range *items;
	size_t n, cap;
};

/* Ranges that may end on another thread: paired by id once every buffer
 * has been read. */
struct async_mark {
	uint64_t id;
	uint64_t pos; /* start: index in t->acts; end: ticks */
	uint32_t domain;
};

struct async_list {
	struct async_mark *items;
	size_t n, cap;
};

struct walk {
	struct strobe_trace *t;
	const struct strb_window *w;
	struct stack ranges, ops;
	struct stack *domains; /* per domain, [0] unused: ranges is the default domain */
	uint64_t domains_used[STRB_DOMAINS_MAX / 64]; /* by the buffer being read */
	/* Each domain's registered name, interned on first use ("" for none):
	 * looked up once per trace, not once per event. */
	const char *domain_names[STRB_DOMAINS_MAX];
	struct async_list starts, ends;
	uint64_t next_id, id_end;
	/* A flight dump: records before the window are context (pushes still
	 * open), not events. */
	bool flight;
	uint64_t aged_out, kept_lost, torn;
	/* strobe_step() marks: the thread's last one, and the steps between
	 * consecutive ones, added at the end unless the program wrote its own
	 * ProfilerStep ranges. */
	bool mark_seen;
	uint64_t mark_n;
	int64_t mark_ns;
	struct step {
		uint64_t n;
		int64_t start, end;
		pid_t tid;
	} * steps;
	size_t nsteps, steps_cap;
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

static int async_add(struct async_list *l, uint64_t id, uint64_t pos, uint32_t domain)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct async_mark *n = realloc(l->items, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		l->items = n;
		l->cap = cap;
	}
	l->items[l->n++] = (struct async_mark){id, pos, domain};
	return 0;
}

/* Rows of domain d on thread tid: the thread's id in the low 32 bits
 * (system tids are below 2^22), the domain above. */
static int64_t domain_row(pid_t tid, uint32_t d)
{
	return d ? (int64_t)d << 32 | (uint32_t)tid : tid;
}

/* Rows of ranges that may end elsewhere: per domain, one per lane of
 * overlapping ranges. Bit 48 keeps them apart from every thread row. */
static int64_t async_row(uint32_t d, uint32_t lane)
{
	return (int64_t)1 << 48 | (int64_t)d << 16 | lane;
}

static size_t attrs_size(const struct strb_rec_view *r)
{
	return r->aux & STRB_AUX_ATTRS ? sizeof(struct strb_rec_attrs) : 0;
}

/* Domain d's name ("" when it has none, NULL when out of memory). */
static const char *domain_name(struct walk *k, uint32_t d)
{
	if (d >= STRB_DOMAINS_MAX)
		return "";
	if (!k->domain_names[d]) {
		char buf[256];
		k->domain_names[d] =
		    strb_domain_name(d, buf, sizeof(buf)) ? strb_trace_intern(k->t, buf, strlen(buf)) : "";
	}
	return k->domain_names[d];
}

/* Domain d as rows name it: its name, else "domain D". */
static void domain_label(struct walk *k, uint32_t d, char *buf, size_t len)
{
	const char *name = domain_name(k, d);
	if (name && *name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "domain %u", d);
}

/* The domain and the annotation's attributes as args. */
static void attr_args(struct walk *k, struct strobe_activity *a, uint32_t d, const struct strb_rec_attrs *at)
{
	struct strobe_arg args[4];
	size_t n = 0;
	char buf[256];
	const char *dn = d ? domain_name(k, d) : NULL;
	if (dn && *dn) {
		/* Each domain is a category of its own, as NVTX tools show it. */
		a->category = dn;
		args[n++] =
		    (struct strobe_arg){.key = "domain", .kind = STROBE_ARG_STRING, .value.str = a->category};
	}
	if (at && (at->has & STRB_ATTR_COLOR)) {
		snprintf(buf, sizeof(buf), "#%06x", at->color & 0xffffffu);
		args[n++] = (struct strobe_arg){.key = "color",
		                                .kind = STROBE_ARG_STRING,
		                                .value.str = strb_trace_intern(k->t, buf, strlen(buf))};
	}
	if (at && (at->has & STRB_ATTR_CATEGORY)) {
		if (strb_category_name(d, at->category, buf, sizeof(buf)))
			args[n++] =
			    (struct strobe_arg){.key = "category",
			                        .kind = STROBE_ARG_STRING,
			                        .value.str = strb_trace_intern(k->t, buf, strlen(buf))};
		else
			args[n++] = (struct strobe_arg){
			    .key = "category", .kind = STROBE_ARG_U64, .value.u64 = at->category};
	}
	if (at && at->payload_kind != STRB_PAYLOAD_NONE) {
		struct strobe_arg *p = &args[n++];
		p->key = "payload";
		if (at->payload_kind == STRB_PAYLOAD_F64) {
			p->kind = isfinite(at->payload.f64) ? STROBE_ARG_F64 : STROBE_ARG_STRING;
			if (p->kind == STROBE_ARG_F64)
				p->value.f64 = at->payload.f64;
			else
				p->value.str = isnan(at->payload.f64) ? "nan"
				               : at->payload.f64 > 0  ? "inf"
				                                      : "-inf";
		} else if (at->payload_kind == STRB_PAYLOAD_I64) {
			p->kind = STROBE_ARG_I64;
			p->value.i64 = at->payload.i64;
		} else {
			p->kind = STROBE_ARG_U64;
			p->value.u64 = at->payload.u64;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (args[i].kind == STROBE_ARG_STRING && !args[i].value.str)
			k->rc = -ENOMEM;
	if (!n || k->rc)
		return;
	a->args = strb_trace_copy_args(k->t, args, n);
	a->arg_count = n;
	if (!a->args)
		k->rc = -ENOMEM;
}

static struct strobe_activity *emit(struct walk *k, uint32_t type, const struct strb_rec_view *r, pid_t tid)
{
	const char *name = strb_trace_intern(k->t, r->name, r->name_len);
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

/* The stack ranges of the record's domain nest on; NULL on no memory. */
static struct stack *range_stack(struct walk *k, const struct strb_rec_view *r)
{
	uint32_t d = STRB_AUX_DOMAIN(r->aux);
	if (!d || d >= STRB_DOMAINS_MAX)
		return &k->ranges;
	if (!k->domains && !(k->domains = calloc(STRB_DOMAINS_MAX, sizeof(*k->domains)))) {
		k->rc = -ENOMEM;
		return NULL;
	}
	k->domains_used[d / 64] |= 1ull << (d % 64);
	return &k->domains[d];
}

static void begin_range(struct walk *k, struct stack *s, uint32_t type, const struct strb_rec_view *r,
                        pid_t tid)
{
	size_t idx = SIZE_MAX;
	if (selected(k->w, type)) {
		bool is_op = type == STROBE_ACTIVITY_CPU_OP;
		size_t at = is_op ? 0 : attrs_size(r);
		struct strobe_activity *a = emit(k, type, r, tid);
		if (!a)
			return;
		if (is_op)
			memcpy(&a->id, r->payload, sizeof(a->id));
		else
			a->id = next_id(k);
		a->flags = STROBE_ACTIVITY_UNFINISHED; /* until its pop is seen */
		idx = k->t->count - 1;
		if (!is_op) {
			uint32_t d = STRB_AUX_DOMAIN(r->aux);
			a->resource = domain_row(tid, d);
			attr_args(k, a, d, at ? (const void *)r->payload : NULL);
		}
	}
	if (stack_push(s, idx))
		k->rc = -ENOMEM;
}

/* A strobe_step() mark: the stretch from the thread's previous mark, when
 * that was the call before, is a step. */
static void step_mark(struct walk *k, const struct strb_rec_view *r, pid_t tid)
{
	uint64_t n;
	memcpy(&n, r->payload, sizeof(n));
	int64_t at = strb_clock_map_to_epoch(k->w->map, r->ticks);
	if (k->mark_seen && n == k->mark_n + 1 && selected(k->w, STROBE_ACTIVITY_USER_ANNOTATION)) {
		if (k->nsteps == k->steps_cap) {
			size_t cap = k->steps_cap ? k->steps_cap * 2 : 64;
			struct step *s = realloc(k->steps, cap * sizeof(*s));
			if (!s) {
				k->rc = -ENOMEM;
				return;
			}
			k->steps = s;
			k->steps_cap = cap;
		}
		k->steps[k->nsteps++] = (struct step){k->mark_n, k->mark_ns, at, tid};
	}
	k->mark_seen = true;
	k->mark_n = n;
	k->mark_ns = at;
}

/* The steps of the marks, as PyTorch's profiler writes them: complete
 * user_annotation ranges named ProfilerStep#N on the marking thread; none
 * when the trace has ProfilerStep ranges of the program's own. */
static void add_steps(struct walk *k)
{
	struct strobe_trace *t = k->t;
	static const char prefix[] = "ProfilerStep#";
	for (size_t i = 0; i < t->count; i++)
		if (!strncmp(t->acts[i].name, prefix, sizeof(prefix) - 1))
			return;
	for (size_t i = 0; i < k->nsteps && !k->rc; i++) {
		char name[64];
		snprintf(name, sizeof(name), "%s%" PRIu64, prefix, k->steps[i].n);
		struct strobe_activity *a = strb_trace_push(t);
		const char *n = a ? strb_trace_intern(t, name, strlen(name)) : NULL;
		if (!n) {
			k->rc = -ENOMEM;
			return;
		}
		a->type = STROBE_ACTIVITY_USER_ANNOTATION;
		a->name = n;
		a->start_ns = k->steps[i].start;
		a->end_ns = k->steps[i].end;
		a->device = t->pid;
		a->resource = k->steps[i].tid;
		a->id = next_id(k);
	}
}

static void instant(struct walk *k, const struct strb_rec_view *r, pid_t tid)
{
	size_t at = attrs_size(r);
	struct strobe_activity *a = emit(k, STROBE_ACTIVITY_CPU_INSTANT_EVENT, r, tid);
	if (!a)
		return;
	uint32_t d = STRB_AUX_DOMAIN(r->aux);
	a->resource = domain_row(tid, d);
	attr_args(k, a, d, at ? (const void *)r->payload : NULL);
	if (d && d < STRB_DOMAINS_MAX) /* a damaged raw dump may say any */
		k->domains_used[d / 64] |= 1ull << (d % 64);
}

static void async_start(struct walk *k, const struct strb_rec_view *r, pid_t tid)
{
	if (!selected(k->w, STROBE_ACTIVITY_USER_ANNOTATION))
		return;
	size_t at = attrs_size(r);
	struct strobe_activity *a = emit(k, STROBE_ACTIVITY_USER_ANNOTATION, r, tid);
	if (!a)
		return;
	uint64_t id;
	memcpy(&id, r->payload, sizeof(id));
	uint32_t d = STRB_AUX_DOMAIN(r->aux);
	a->id = next_id(k);
	a->flags = STROBE_ACTIVITY_UNFINISHED;
	attr_args(k, a, d, at ? (const void *)(r->payload + sizeof(uint64_t)) : NULL);
	if (async_add(&k->starts, id, k->t->count - 1, d))
		k->rc = -ENOMEM;
}

static void end_range(struct walk *k, struct stack *s, const struct strb_rec_view *r)
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

static void counter(struct walk *k, const struct strb_rec_view *r, pid_t tid)
{
	double v;
	memcpy(&v, r->payload, sizeof(v));
	if (!isfinite(v)) {
		k->t->stats.non_finite_counters++;
		return;
	}
	struct strobe_activity *a = emit(k, STROBE_ACTIVITY_CPU_COUNTER, r, tid);
	if (!a)
		return;
	struct strobe_arg arg = {.key = a->name, .kind = STROBE_ARG_F64, .value.f64 = v};
	a->args = strb_trace_copy_args(k->t, &arg, 1);
	a->arg_count = 1;
	if (!a->args)
		k->rc = -ENOMEM;
}

/* Rebuilds the strobe_record activity from its serialised form. */
static void recorded(struct walk *k, const struct strb_rec_view *r, pid_t tid)
{
	const struct strb_rec_activity *ra = (const void *)r->payload;
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
	const char *category = NULL;
	if (ra->category_len) {
		category = strb_trace_intern(k->t, (const char *)p, ra->category_len);
		p += (ra->category_len + 7u) & ~7u;
	}
	struct strobe_activity a = {
	    .size = sizeof(a),
	    .category = category,
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

/* One row per domain the thread used, named after both. */
static void domain_rows(struct walk *k, pid_t tid, const char *thread)
{
	for (uint32_t d = 1; d < STRB_DOMAINS_MAX; d++) {
		if (!(k->domains_used[d / 64] & 1ull << (d % 64)))
			continue;
		char dom[256], name[STRB_THREAD_NAME_MAX + 300];
		domain_label(k, d, dom, sizeof(dom));
		if (thread[0])
			snprintf(name, sizeof(name), "%s (%s)", dom, thread);
		else
			snprintf(name, sizeof(name), "%s (thread %d)", dom, (int)tid);
		struct strobe_resource res = {
		    .size = sizeof(res),
		    .kind = STROBE_RESOURCE_ROW,
		    .device = k->t->pid,
		    .resource = domain_row(tid, d),
		    .name = name,
		    .sort_index = tid,
		};
		if (strb_trace_add_resource(k->t, &res))
			k->rc = -ENOMEM;
	}
	memset(k->domains_used, 0, sizeof(k->domains_used));
}

/* The records of [base, base + len): linear, or in flight-ring chunks
 * (a record never crosses a chunk; PAD or a short tail ends one). consume:
 * the live buffer whose pages may be given back as they are read. */
static void walk_records(struct walk *k, const uint8_t *base, size_t len, bool chunked, pid_t tid,
                         struct strb_tbuf *consume)
{
	struct strobe_trace *t = k->t;
	const struct strb_window *w = k->w;
	size_t off = 0, given_back = 0;
	while (off + STRB_REC_WORD_BYTES <= len && !k->rc) {
		if (consume && off - given_back >= CONSUMED_STEP) {
			/* Read for good: the buffer shrinks while the trace grows. */
			strb_tbuf_consumed(consume, off);
			given_back = off;
		}
		size_t in = chunked ? off % STRB_TBUF_CHUNK : 0, next = off - in + STRB_TBUF_CHUNK;
		size_t room = chunked && next < len ? next - off : len - off;
		struct strb_rec_view rv, *r = &rv;
		bool whole =
		    strb_rec_decode(base + off, room, w->start_ticks, sizeof(struct strb_rec_attrs), r);
		if (chunked && (r->kind == STRB_REC_PAD || !r->kind)) {
			off = next;
			continue;
		}
		if (!whole || r->size > room) {
			/* cannot happen: the owner never writes one */
			t->stats.out_of_window++;
			if (!chunked)
				break;
			off = next;
			continue;
		}
		off += r->size;
		bool timed = r->kind != STRB_REC_ACTIVITY;
		/* A flight dump copies rings their threads go on writing: what a
		 * thread recorded after the dump's instant is not in it (ranges it
		 * closed since were open at that instant). */
		if (k->flight && timed && r->ticks > w->stop_ticks)
			break;
		if (timed && r->ticks > w->stop_ticks && r->kind != STRB_REC_RANGE_POP &&
		    r->kind != STRB_REC_OP_POP && r->kind != STRB_REC_ASYNC_END) {
			t->stats.out_of_window++;
			continue;
		}
		/* Before a flight dump's window only pushes and pops count: they
		 * say what was open when the window began. */
		if (k->flight && timed && r->ticks < w->start_ticks && r->kind != STRB_REC_RANGE_PUSH &&
		    r->kind != STRB_REC_OP_PUSH && r->kind != STRB_REC_RANGE_POP &&
		    r->kind != STRB_REC_OP_POP)
			continue;
		switch (r->kind) {
		case STRB_REC_RANGE_PUSH: {
			struct stack *s = range_stack(k, r);
			if (s)
				begin_range(k, s, STROBE_ACTIVITY_USER_ANNOTATION, r, tid);
			break;
		}
		case STRB_REC_OP_PUSH:
			begin_range(k, &k->ops, STROBE_ACTIVITY_CPU_OP, r, tid);
			break;
		case STRB_REC_RANGE_POP: {
			struct stack *s = range_stack(k, r);
			if (s)
				end_range(k, s, r);
			break;
		}
		case STRB_REC_OP_POP:
			end_range(k, &k->ops, r);
			break;
		case STRB_REC_INSTANT:
			if (selected(w, STROBE_ACTIVITY_CPU_INSTANT_EVENT))
				instant(k, r, tid);
			break;
		case STRB_REC_COUNTER:
			if (selected(w, STROBE_ACTIVITY_CPU_COUNTER))
				counter(k, r, tid);
			break;
		case STRB_REC_ACTIVITY:
			recorded(k, r, tid);
			break;
		case STRB_REC_ASYNC_START:
			async_start(k, r, tid);
			break;
		case STRB_REC_STEP:
			step_mark(k, r, tid);
			break;
		case STRB_REC_ASYNC_END: {
			uint64_t id;
			memcpy(&id, r->payload, sizeof(id));
			if (async_add(&k->ends, id, r->ticks, 0))
				k->rc = -ENOMEM;
			break;
		}
		default:
			/* Correlation records matter to device backends only. */
			break;
		}
	}
}

/* After a thread's records: what is still open ends at the window's end;
 * the thread's accounting and rows. */
static void finish_thread(struct walk *k, pid_t tid, const char *name, uint64_t dropped, uint64_t truncated,
                          uint64_t bytes)
{
	struct strobe_trace *t = k->t;
	close_open(k, &k->ranges);
	close_open(k, &k->ops);
	for (uint32_t d = 1; k->domains && d < STRB_DOMAINS_MAX; d++)
		close_open(k, &k->domains[d]);
	t->stats.dropped_events += dropped;
	t->stats.truncated_names += truncated;
	t->stats.buffer_bytes += bytes;
	t->stats.threads++;

	/* A name given to the thread by another thread (NVTX) beats none. */
	char label[STRB_THREAD_NAME_MAX];
	memcpy(label, name, sizeof(label));
	label[sizeof(label) - 1] = 0;
	if (!label[0])
		strb_thread_name_lookup(tid, label, sizeof(label));
	struct strobe_resource res = {
	    .size = sizeof(res),
	    .kind = STROBE_RESOURCE_THREAD,
	    .device = t->pid,
	    .resource = tid,
	    .name = label,
	    .sort_index = tid,
	};
	if (strb_trace_add_resource(t, &res))
		k->rc = -ENOMEM;
	domain_rows(k, tid, label);
}

static void walk_buffer(struct strb_tbuf *b, size_t published, void *arg)
{
	struct walk *k = arg;
	k->ranges.n = k->ops.n = 0;
	k->mark_seen = false;
	walk_records(k, b->base, published, false, b->tid, b);
	finish_thread(k, b->tid, b->name, atomic_load_explicit(&b->dropped, memory_order_relaxed),
	              atomic_load_explicit(&b->truncated, memory_order_relaxed), published);
}

static void walk_view(const struct strb_tbuf_view *v, void *arg)
{
	struct walk *k = arg;
	k->ranges.n = k->ops.n = 0;
	k->mark_seen = false;
	walk_records(k, v->kept, v->kept_len, false, v->tid, NULL);
	walk_records(k, v->ring, v->ring_len, true, v->tid, NULL);
	finish_thread(k, v->tid, v->name, v->dropped, v->truncated, v->kept_len + v->ring_len);
	k->aged_out += v->aged_out;
	k->kept_lost += v->kept_lost;
	k->torn += v->torn;
}

/* A flight dump keeps what ended inside its window, and what was still
 * open at its end however long ago it began. */
static void drop_before_window(struct strobe_trace *t, const struct strb_window *w)
{
	size_t n = 0;
	for (size_t i = 0; i < t->count; i++) {
		const struct strobe_activity *a = &t->acts[i];
		if (!(a->flags & STROBE_ACTIVITY_UNFINISHED) && a->end_ns < w->start_ns)
			continue;
		if (n != i)
			t->acts[n] = *a;
		n++;
	}
	t->count = n;
}

static int cmp_mark(const void *pa, const void *pb)
{
	const struct async_mark *a = pa, *b = pb;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Ends each start/end range at its end, whichever thread ended it; ranges
 * still open end at stop. */
static void pair_async(struct walk *k)
{
	struct strobe_trace *t = k->t;
	if (k->starts.n)
		qsort(k->starts.items, k->starts.n, sizeof(struct async_mark), cmp_mark);
	if (k->ends.n)
		qsort(k->ends.items, k->ends.n, sizeof(struct async_mark), cmp_mark);
	size_t e = 0;
	for (size_t i = 0; i < k->starts.n; i++) {
		const struct async_mark *s = &k->starts.items[i];
		while (e < k->ends.n && k->ends.items[e].id < s->id) {
			t->stats.unmatched_pops++; /* began before the window */
			e++;
		}
		struct strobe_activity *a = &t->acts[s->pos];
		if (e < k->ends.n && k->ends.items[e].id == s->id &&
		    k->ends.items[e].pos <= k->w->stop_ticks) {
			int64_t end = strb_clock_map_to_epoch(k->w->map, k->ends.items[e].pos);
			a->end_ns = end > a->start_ns ? end : a->start_ns;
			a->flags &= ~STROBE_ACTIVITY_UNFINISHED;
		} else {
			a->end_ns = k->w->stop_ns > a->start_ns ? k->w->stop_ns : a->start_ns;
			t->stats.unfinished_ranges++;
		}
		while (e < k->ends.n && k->ends.items[e].id == s->id)
			e++;
	}
	t->stats.unmatched_pops += k->ends.n - e;
}

static int cmp_start(const void *pa, const void *pb, void *arg)
{
	const struct strobe_trace *t = arg;
	const struct async_mark *a = pa, *b = pb;
	if (a->domain != b->domain)
		return a->domain < b->domain ? -1 : 1;
	int64_t sa = t->acts[a->pos].start_ns, sb = t->acts[b->pos].start_ns;
	return sa < sb ? -1 : sa > sb;
}

#define ASYNC_LANES 64

/* Start/end ranges need not nest, so each domain gets as many rows as it
 * has ranges open at once (greedy, by start time); the rest share the
 * last. */
static void async_lanes(struct walk *k)
{
	struct strobe_trace *t = k->t;
	if (!k->starts.n)
		return;
	qsort_r(k->starts.items, k->starts.n, sizeof(struct async_mark), cmp_start, t);
	size_t i = 0;
	while (i < k->starts.n && !k->rc) {
		uint32_t d = k->starts.items[i].domain;
		int64_t lane_end[ASYNC_LANES];
		uint32_t lanes = 0;
		for (; i < k->starts.n && k->starts.items[i].domain == d; i++) {
			struct strobe_activity *a = &t->acts[k->starts.items[i].pos];
			uint32_t l = 0;
			while (l < lanes && lane_end[l] > a->start_ns)
				l++;
			if (l == ASYNC_LANES)
				l = ASYNC_LANES - 1;
			if (l == lanes)
				lanes++;
			lane_end[l] = a->end_ns;
			a->resource = async_row(d, l);
		}
		char dom[256] = "", name[300];
		if (d)
			domain_label(k, d, dom, sizeof(dom));
		for (uint32_t l = 0; l < lanes; l++) {
			int n = snprintf(name, sizeof(name), "%s%sstart/end ranges", dom, d ? " " : "");
			if (l && n > 0 && (size_t)n < sizeof(name))
				snprintf(name + n, sizeof(name) - (size_t)n, " (%u)", l + 1);
			struct strobe_resource res = {
			    .size = sizeof(res),
			    .kind = STROBE_RESOURCE_ROW,
			    .device = t->pid,
			    .resource = async_row(d, l),
			    .name = name,
			    .sort_index = async_row(d, l),
			};
			if (strb_trace_add_resource(t, &res))
				k->rc = -ENOMEM;
		}
	}
}

/* views: copies already taken (a raw crash dump's), else the session's
 * rings are copied now. */
static int process_cpu(struct strobe_trace *t, const struct strb_window *w, struct strb_flight_counts *fc,
                       const struct strb_tbuf_view *views, size_t nviews, const char *const *domains)
{
	struct walk k = {.t = t, .w = w, .flight = fc != NULL};
	for (uint32_t d = 0; domains && d < STRB_DOMAINS_MAX; d++) {
		const char *name = domains[d] ? domains[d] : "";
		k.domain_names[d] = *name ? strb_trace_intern(t, name, strlen(name)) : "";
	}
	for (size_t i = 0; fc && i < nviews && !k.rc; i++)
		walk_view(&views[i], &k);
	if (fc) {
		int rc = views ? 0 : strb_tbuf_foreach_snapshot(w->session, walk_view, &k);
		if (rc && !k.rc)
			k.rc = rc;
		fc->aged_out = k.aged_out;
		fc->kept_lost = k.kept_lost;
		fc->torn_threads = k.torn;
	} else {
		strb_tbuf_foreach(w->session, walk_buffer, &k);
	}
	if (!k.rc && (k.starts.n || k.ends.n)) {
		pair_async(&k);
		async_lanes(&k);
	}
	if (!k.rc && k.nsteps)
		add_steps(&k);
	free(k.steps);
	if (k.domains)
		for (uint32_t d = 0; d < STRB_DOMAINS_MAX; d++)
			free(k.domains[d].items);
	free(k.domains);
	free(k.starts.items);
	free(k.ends.items);
	free(k.ranges.items);
	free(k.ops.items);
	if (fc && !k.rc)
		drop_before_window(t, w);
	return k.rc;
}

int strb_process_cpu(struct strobe_trace *t, const struct strb_window *w)
{
	return process_cpu(t, w, NULL, NULL, 0, NULL);
}

int strb_process_cpu_flight(struct strobe_trace *t, const struct strb_window *w,
                            struct strb_flight_counts *fc)
{
	return process_cpu(t, w, fc, NULL, 0, NULL);
}

int strb_process_cpu_views(struct strobe_trace *t, const struct strb_window *w,
                           const struct strb_tbuf_view *views, size_t n, const char *const *domains,
                           struct strb_flight_counts *fc)
{
	return process_cpu(t, w, fc, views, n, domains);
}

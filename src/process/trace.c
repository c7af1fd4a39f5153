#include "process/trace.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "process/store.h"

struct strb_arena_chunk {
	struct strb_arena_chunk *next;
	size_t size;
	_Alignas(16) unsigned char data[];
};

void *strb_arena_alloc(struct strb_arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if ((!a->head || a->used + n > a->size) && a->spare && a->spare->size >= n) {
		struct strb_arena_chunk *c = a->spare;
		a->spare = c->next;
		c->next = a->head;
		a->head = c;
		a->used = 0;
		a->size = c->size;
	}
	if (!a->head || a->used + n > a->size) {
		/* Chunks grow with the arena (1 MiB up to 64 MiB): big traces
		 * take fewer, larger allocations. */
		size_t size = a->head ? a->size * 2 : (1 << 20);
		size_t max = a->max_chunk ? a->max_chunk : 64u << 20;
		if (size > max)
			size = max;
		if (size < n)
			size = n;
		struct strb_arena_chunk *c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->next = a->head;
		c->size = size;
		a->head = c;
		a->used = 0;
		a->size = size;
	}
	void *p = a->head->data + a->used;
	a->used += n;
	return p;
}

void *strb_arena_alloc_held(struct strb_arena *a, size_t n)
{
	size_t need = (n + 15) & ~(size_t)15;
	bool room = a->head && a->used + need <= a->size;
	if (!room && !(a->spare && a->spare->size >= need))
		return NULL;
	return strb_arena_alloc(a, n);
}

void strb_arena_give(struct strb_arena *a, void *mem, size_t size)
{
	if (!mem)
		return;
	if (size < sizeof(struct strb_arena_chunk) + 4096 ||
	    (uintptr_t)mem % _Alignof(struct strb_arena_chunk)) {
		free(mem);
		return;
	}
	struct strb_arena_chunk *c = mem;
	c->size = size - sizeof(*c);
	c->next = a->spare;
	a->spare = c;
}

static void free_chunks(struct strb_arena_chunk *c)
{
	while (c) {
		struct strb_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
}

void strb_arena_drop_spare(struct strb_arena *a)
{
	free_chunks(a->spare);
	a->spare = NULL;
}

void strb_arena_free(struct strb_arena *a)
{
	free_chunks(a->head);
	strb_arena_drop_spare(a);
	a->head = NULL;
	a->used = a->size = 0;
}

bool strb_grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 256;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return false;
	*p = q;
	*cap = n;
	return true;
}

struct strobe_trace *strb_trace_new(void)
{
	struct strobe_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->device_properties = "";
	if (pthread_mutex_init(&t->publish_lock, NULL)) {
		free(t);
		return NULL;
	}
	return t;
}

uint64_t strb_hash_bytes(const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static int strings_grow(struct strobe_trace *t)
{
	size_t cap = t->string_cap ? t->string_cap * 2 : 1024;
	const char **n = calloc(cap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < t->string_cap; i++) {
		const char *s = t->strings[i];
		if (!s)
			continue;
		size_t j = strb_hash_bytes(s, strlen(s)) & (cap - 1);
		while (n[j])
			j = (j + 1) & (cap - 1);
		n[j] = s;
	}
	free(t->strings);
	t->strings = n;
	t->string_cap = cap;
	return 0;
}

const char *strb_trace_intern(struct strobe_trace *t, const char *s, size_t len)
{
	if (!s)
		s = "", len = 0;
	if ((t->string_count + 1) * 2 > t->string_cap && strings_grow(t))
		return NULL;
	size_t j = strb_hash_bytes(s, len) & (t->string_cap - 1);
	for (; t->strings[j]; j = (j + 1) & (t->string_cap - 1)) {
		const char *c = t->strings[j];
		if (!strncmp(c, s, len) && c[len] == 0)
			return c;
	}
	char *copy = strb_arena_alloc(&t->arena, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = 0;
	t->strings[j] = copy;
	t->string_count++;
	return copy;
}

/* Moves the activity array (and the record pointers beside it) to cap. */
static int resize(struct strobe_trace *t, size_t cap)
{
	if (t->recs) {
		const void **r = realloc(t->recs, cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		memset(r + t->cap, 0, (cap - t->cap) * sizeof(*r));
		t->recs = r;
	}
	struct strobe_activity *n = realloc(t->acts, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	t->acts = n;
	t->cap = cap;
	return 0;
}

int strb_trace_reserve(struct strobe_trace *t, size_t more)
{
	if (t->rolling || t->count - t->sealed + more <= t->cap)
		return 0;
	return resize(t, t->count - t->sealed + more);
}

/* Encodes the whole blocks of the working array (every activity in it is
 * final once another is pushed) and moves what is left to its start. 0, or
 * -ENOMEM with nothing changed. */
static int roll(struct strobe_trace *t)
{
	size_t n = ((t->count - t->sealed) / STRB_STORE_BLOCK) * STRB_STORE_BLOCK;
	if (!n)
		return 0;
	if (!t->rolled && strb_store_begin(&t->rolled, 0, &t->arena))
		return -ENOMEM;
	int rc = strb_store_add(t->rolled, t->acts, t->recs, n);
	if (rc)
		return rc;
	size_t left = t->count - t->sealed - n;
	memmove(t->acts, t->acts + n, left * sizeof(*t->acts));
	if (t->recs) {
		memmove(t->recs, t->recs + n, left * sizeof(*t->recs));
		memset(t->recs + left, 0, n * sizeof(*t->recs));
	}
	t->sealed += n;
	return 0;
}

void strb_trace_roll(struct strobe_trace *t)
{
	if (t->store)
		return;
	t->rolling = true;
	/* What is there is final: its whole blocks are encoded now, and the
	 * array keeps a window's room, not the CPU part's. Without the memory
	 * for that, the trace goes on as it is and rolls once its array is
	 * full. */
	if (roll(t) || t->cap <= STRB_TRACE_WINDOW)
		return;
	struct strobe_activity *acts = realloc(t->acts, STRB_TRACE_WINDOW * sizeof(*acts));
	if (!acts)
		return;
	t->acts = acts;
	t->cap = STRB_TRACE_WINDOW;
	const void **recs = t->recs ? realloc(t->recs, STRB_TRACE_WINDOW * sizeof(*recs)) : NULL;
	if (recs) /* else the larger one stays, which is as good */
		t->recs = recs;
}

struct strobe_activity *strb_trace_push(struct strobe_trace *t)
{
	if (t->store) /* sealed: read-only */
		return NULL;
	size_t used = t->count - t->sealed;
	if (used == t->cap) {
		/* A rolling trace's array stops growing at the window: every
		 * activity in it is final once another is pushed. */
		if (t->rolling && t->cap >= STRB_TRACE_WINDOW) {
			if (roll(t))
				return NULL;
		} else if (resize(t, t->cap ? t->cap * 2 : 4096)) {
			return NULL;
		}
		used = t->count - t->sealed;
	}
	struct strobe_activity *a = &t->acts[used];
	t->count++;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	return a;
}

int strb_trace_unroll(struct strobe_trace *t)
{
	if (!t->sealed)
		return 0;
	const struct strb_store *so_far = strb_store_so_far(t->rolled);
	size_t cap = t->count ? t->count : 1, left = t->count - t->sealed;
	struct strobe_activity *acts = malloc(cap * sizeof(*acts));
	const void **recs = t->src.render ? calloc(cap, sizeof(*recs)) : NULL;
	if (!acts || (t->src.render && !recs)) {
		free(acts);
		free(recs);
		return -ENOMEM;
	}
	const void *rec;
	for (size_t i = 0; i < t->sealed; i++) {
		strb_store_get(so_far, i, &acts[i], &rec);
		if (recs)
			recs[i] = rec;
	}
	memcpy(acts + t->sealed, t->acts, left * sizeof(*acts));
	if (recs && t->recs)
		memcpy(recs + t->sealed, t->recs, left * sizeof(*recs));
	strb_store_abandon(t->rolled);
	free(t->acts);
	free(t->recs);
	t->rolled = NULL;
	t->acts = acts;
	t->recs = recs;
	t->cap = cap;
	t->sealed = 0;
	t->rolling = false;
	return 0;
}

struct strobe_arg *strb_trace_copy_args(struct strobe_trace *t, const struct strobe_arg *args, size_t n)
{
	if (!n)
		return NULL;
	struct strobe_arg *out = strb_arena_alloc(&t->arena, n * sizeof(*out));
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		out[i] = args[i];
		out[i].key = strb_trace_intern(t, args[i].key, strlen(args[i].key));
		if (args[i].kind == STROBE_ARG_STRING || args[i].kind == STROBE_ARG_JSON) {
			size_t len = strlen(args[i].value.str);
			char *s = strb_arena_alloc(&t->arena, len + 1);
			if (!s)
				return NULL;
			memcpy(s, args[i].value.str, len + 1);
			out[i].value.str = s;
		}
		if (!out[i].key)
			return NULL;
	}
	return out;
}

int strb_trace_add_copy(struct strobe_trace *t, const struct strobe_activity *a)
{
	struct strobe_arg *args = strb_trace_copy_args(t, a->args, a->arg_count);
	const char *name = strb_trace_intern(t, a->name, a->name ? strlen(a->name) : 0);
	const char *cat = a->category ? strb_trace_intern(t, a->category, strlen(a->category)) : NULL;
	if ((a->arg_count && !args) || !name || (a->category && !cat))
		return -ENOMEM;
	struct strobe_activity *slot = strb_trace_push(t);
	if (!slot)
		return -ENOMEM;
	*slot = *a;
	slot->size = sizeof(*slot);
	slot->name = name;
	slot->args = args;
	slot->category = cat;
	return 0;
}

int strb_trace_set_arg_source(struct strobe_trace *t, const struct strb_arg_source *src)
{
	if (t->src.render)
		return -EBUSY;
	t->src = *src;
	return 0;
}

int strb_trace_render_args(struct strobe_trace *t, const void *rec)
{
	if (!t->src.render || !t->count)
		return -EINVAL;
	if (!t->recs && !(t->recs = calloc(t->cap, sizeof(*t->recs))))
		return -ENOMEM;
	t->recs[t->count - 1 - t->sealed] = rec;
	return 0;
}

int strb_trace_seal(struct strobe_trace *t)
{
	if (t->store)
		return 0;
	struct strb_store *s;
	if (t->rolled) {
		int rc = strb_store_add(t->rolled, t->acts, t->recs, t->count - t->sealed);
		if (rc)
			return rc;
		s = strb_store_finish(t->rolled);
		t->rolled = NULL;
		t->sealed = 0;
	} else {
		int rc = strb_store_build(&s, t->acts, t->recs, t->count, &t->arena);
		if (rc)
			return rc;
	}
	t->rolling = false;
	t->store = s;
	free(t->acts);
	free(t->recs);
	t->acts = NULL;
	t->recs = NULL;
	t->cap = 0;
	return 0;
}

void strb_trace_get_stored(const struct strobe_trace *t, size_t i, struct strb_act_ref *r)
{
	strb_store_get(t->store ? t->store : strb_store_so_far(t->rolled), i, &r->tmp, &r->rec);
	r->a = &r->tmp;
}

enum strobe_activity_type strb_trace_type_stored(const struct strobe_trace *t, size_t i)
{
	return strb_store_type(t->store ? t->store : strb_store_so_far(t->rolled), i);
}

size_t strb_trace_args(const struct strobe_trace *t, const struct strb_act_ref *r, struct strb_arg_scratch *s,
                       const struct strobe_arg **out)
{
	if (r->rec) {
		*out = s->args;
		return t->src.render(t->src.ctx, r->rec, r->a, s);
	}
	*out = r->a->args;
	return r->a->arg_count;
}

size_t strb_trace_count_type(const struct strobe_trace *t, enum strobe_activity_type type)
{
	size_t n = 0;
	struct strb_act_ref r;
	for (size_t i = 0; i < t->count; i++) {
		strb_trace_get(t, i, &r);
		n += r.a->type == type;
	}
	return n;
}

size_t strb_trace_activity_bytes(const struct strobe_trace *t)
{
	size_t n = strb_store_bytes(t->store) + t->cap * sizeof(*t->acts);
	if (t->rolled)
		n += strb_store_bytes(strb_store_so_far(t->rolled));
	if (t->recs) /* a sealed trace's, while a walk has not published it all */
		n += (t->store ? t->count : t->cap) * sizeof(*t->recs);
	if (t->pub)
		n += t->count * sizeof(*t->pub);
	return n;
}

/* Rendered args become ordinary ones, for callers of strobe_trace_foreach,
 * who may keep the activities until the trace is destroyed. Writers go on
 * rendering (they never read these fields of such activities), so a save
 * running meanwhile is not disturbed. A sealed trace's activities are
 * decoded into a public array first, once. */
static int publish_args(struct strobe_trace *t)
{
	/* t->store first: it never changes once the trace is sealed, while
	 * t->recs of a sealed trace is set by the walk publishing it. */
	if (!t->store && !t->recs)
		return 0;
	int rc = 0;
	pthread_mutex_lock(&t->publish_lock);
	if (t->store && !t->pub) {
		struct strobe_activity *pub = malloc((t->count ? t->count : 1) * sizeof(*pub));
		const void **recs = malloc((t->count ? t->count : 1) * sizeof(*recs));
		if (!pub || !recs) {
			free(pub);
			free(recs);
			pthread_mutex_unlock(&t->publish_lock);
			return -ENOMEM;
		}
		for (size_t i = 0; i < t->count; i++)
			strb_store_get(t->store, i, &pub[i], &recs[i]);
		t->pub = pub;
		t->recs = recs;
		t->published = false;
	}
	struct strobe_activity *acts = t->store ? t->pub : t->acts;
	for (size_t i = 0; i < t->count && t->recs && !t->published && !rc; i++) {
		if (!t->recs[i])
			continue;
		struct strb_arg_scratch s;
		size_t n = t->src.render(t->src.ctx, t->recs[i], &acts[i], &s);
		struct strobe_arg *args = n ? strb_arena_alloc(&t->arena, n * sizeof(*args)) : NULL;
		if (n && !args) {
			rc = -ENOMEM;
			break;
		}
		for (size_t k = 0; k < n; k++) {
			args[k] = s.args[k];
			const char *v = s.args[k].value.str;
			bool text =
			    (s.args[k].kind == STROBE_ARG_STRING || s.args[k].kind == STROBE_ARG_JSON) &&
			    v >= s.text && v < s.text + sizeof(s.text);
			if (text && !(args[k].value.str = strb_trace_intern(t, v, strlen(v)))) {
				rc = -ENOMEM;
				break;
			}
		}
		acts[i].args = args;
		acts[i].arg_count = rc ? 0 : n;
	}
	if (!rc) {
		t->published = true;
		/* A sealed trace's writers decode the records from the store:
		 * the pointers were only needed to publish. */
		if (t->store) {
			free(t->recs);
			t->recs = NULL;
		}
	}
	pthread_mutex_unlock(&t->publish_lock);
	return rc;
}

int strb_trace_add_resource(struct strobe_trace *t, const struct strobe_resource *r)
{
	if (t->res_count == t->res_cap) {
		size_t cap = t->res_cap ? t->res_cap * 2 : 64;
		struct strobe_resource *n = realloc(t->res, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->res = n;
		t->res_cap = cap;
	}
	struct strobe_resource c = *r;
	c.size = sizeof(c);
	c.name = strb_trace_intern(t, r->name ? r->name : "", r->name ? strlen(r->name) : 0);
	c.label = r->label ? strb_trace_intern(t, r->label, strlen(r->label)) : NULL;
	if (!c.name || (r->label && !c.label))
		return -ENOMEM;
	t->res[t->res_count++] = c;
	return 0;
}

int strb_trace_set_meta(struct strobe_trace *t, const struct strobe_arg *entry)
{
	struct strobe_arg *copy = strb_trace_copy_args(t, entry, 1);
	if (!copy)
		return -ENOMEM;
	for (size_t i = 0; i < t->meta_count; i++) {
		if (!strcmp(t->meta[i].key, entry->key)) {
			t->meta[i] = *copy;
			return 0;
		}
	}
	if (t->meta_count == t->meta_cap) {
		size_t cap = t->meta_cap ? t->meta_cap * 2 : 16;
		struct strobe_arg *n = realloc(t->meta, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->meta = n;
		t->meta_cap = cap;
	}
	t->meta[t->meta_count++] = *copy;
	return 0;
}

void strobe_trace_destroy(strobe_trace *t)
{
	if (!t)
		return;
	if (t->src.release)
		t->src.release(t->src.ctx);
	free(t->recs);
	free(t->pub);
	strb_store_free(t->store);
	strb_store_abandon(t->rolled);
	pthread_mutex_destroy(&t->publish_lock);
	strb_arena_free(&t->arena);
	free(t->acts);
	free(t->res);
	free(t->meta);
	free(t->strings);
	free(t);
}

size_t strobe_trace_activity_count(const strobe_trace *t)
{
	return t ? t->count : 0;
}

int strobe_trace_foreach(const strobe_trace *t, strobe_activity_cb cb, void *user_arg)
{
	if (!t || !cb)
		return strb_error(-EINVAL, "strobe_trace_foreach: trace or callback is NULL");
	/* The trace is the caller's; publishing fills in fields writers skip. */
	int prc = publish_args((struct strobe_trace *)t);
	if (prc)
		return strb_error(prc, "strobe_trace_foreach: out of memory for the activities' args");
	const struct strobe_activity *acts = t->store ? t->pub : t->acts;
	for (size_t i = 0; i < t->count; i++) {
		int rc = cb(&acts[i], user_arg);
		if (rc)
			return rc;
	}
	return 0;
}

int strobe_trace_foreach_resource(const strobe_trace *t, strobe_resource_cb cb, void *user_arg)
{
	if (!t || !cb)
		return strb_error(-EINVAL, "strobe_trace_foreach_resource: trace or callback is NULL");
	for (size_t i = 0; i < t->res_count; i++) {
		int rc = cb(&t->res[i], user_arg);
		if (rc)
			return rc;
	}
	return 0;
}

int strobe_trace_foreach_metadata(const strobe_trace *t, strobe_metadata_cb cb, void *user_arg)
{
	if (!t || !cb)
		return strb_error(-EINVAL, "strobe_trace_foreach_metadata: trace or callback is NULL");
	for (size_t i = 0; i < t->meta_count; i++) {
		int rc = cb(&t->meta[i], user_arg);
		if (rc)
			return rc;
	}
	return 0;
}

int strobe_trace_window(const strobe_trace *t, int64_t *start_ns, int64_t *end_ns)
{
	if (!t)
		return strb_error(-EINVAL, "strobe_trace_window: trace is NULL");
	if (start_ns)
		*start_ns = t->start_ns;
	if (end_ns)
		*end_ns = t->end_ns;
	return 0;
}

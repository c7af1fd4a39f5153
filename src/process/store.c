/* The compact store of a finished trace's activities (store.h). */
#include "process/store.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/varint.h"
#include "process/trace.h"

/* A record: a 16-bit head (the type, and which fields follow), then the
 * fields in this order, each only when its bit says so:
 *   type            varint, when the head's type is TYPE_WIDE
 *   flags           varint                              (H_FLAGS)
 *   name            varint index into names
 *   row             varint index into rows
 *   start           zigzag varint, from the block's start
 *   end             zigzag varint, from start           (H_END)
 *   id              zigzag varint, from the block's id  (H_ID)
 *   linked_id       zigzag varint, from the block's     (H_LINKED)
 *   flow_id         varint, unless it equals id         (H_FLOW, H_FLOW_ID)
 *   flow_kind       zigzag varint                       (H_FLOW)
 *   category        varint index into names             (H_CAT)
 *   arg_count, args varint, 8 bytes                     (H_ARGS)
 *   record          zigzag varint, from the block's first or second
 *                   record base                         (H_REC, H_REC2)
 * Differences are taken modulo 2^64, so every value comes back exactly. */
#define TYPE_BITS 6
#define TYPE_WIDE ((1u << TYPE_BITS) - 1)
enum {
	H_FLAGS = 1u << 6,
	H_END = 1u << 7,
	H_ID = 1u << 8,
	H_LINKED = 1u << 9,
	H_FLOW = 1u << 10,
	H_FLOW_ID = 1u << 11,
	H_CAT = 1u << 12,
	H_ARGS = 1u << 13,
	H_REC = 1u << 14,
	H_REC2 = 1u << 15,
};

#define MAX_RECORD 128        /* bytes one record can take, at most */
#define REC_NEAR   (1u << 20) /* a record this close to the first base uses it */

/* ---- encoding --------------------------------------------------------------------- */

/* Open addressing from a key to an index (slot = index + 1, 0 = empty). */
struct map {
	uint32_t *slots;
	size_t cap;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* Names and rows recently looked up, by a few bits of their key: a
 * kernel's name, its stream and its launch's row repeat in turn. */
#define CACHE 64
struct name_hit {
	const char *name;
	uint32_t at; /* index + 1; 0 = empty */
};
struct row_hit {
	int64_t device, resource;
	uint32_t at;
};

struct enc {
	struct strb_store *s;
	size_t names_cap, rows_cap;
	struct map names, rows;
	struct name_hit name_hits[CACHE];
	struct row_hit row_hits[CACHE];
};

static bool map_grow(struct map *m, size_t used, uint64_t (*key)(const struct enc *, uint32_t),
                     const struct enc *e)
{
	if ((used + 1) * 2 <= m->cap)
		return true;
	size_t cap = m->cap ? m->cap * 2 : 1024;
	uint32_t *n = calloc(cap, sizeof(*n));
	if (!n)
		return false;
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->slots[i])
			continue;
		size_t j = mix(key(e, m->slots[i] - 1)) & (cap - 1);
		while (n[j])
			j = (j + 1) & (cap - 1);
		n[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = n;
	m->cap = cap;
	return true;
}

static uint64_t name_key(const struct enc *e, uint32_t i)
{
	return (uint64_t)(uintptr_t)e->s->names[i];
}

static uint64_t row_key(const struct enc *e, uint32_t i)
{
	return (uint64_t)e->s->rows[i][0] * 0x9e3779b97f4a7c15ull ^ (uint64_t)e->s->rows[i][1];
}

/* The index of name n (NULL included), added when new; UINT32_MAX when out
 * of memory. Names are compared as pointers: each keeps its own. */
static __attribute__((noinline)) uint32_t name_index_slow(struct enc *e, const char *n, struct name_hit *hit)
{
	struct strb_store *s = e->s;
	if (!map_grow(&e->names, s->nnames, name_key, e))
		return UINT32_MAX;
	size_t j = mix((uint64_t)(uintptr_t)n) & (e->names.cap - 1);
	for (uint32_t at; (at = e->names.slots[j]); j = (j + 1) & (e->names.cap - 1)) {
		if (s->names[at - 1] == n) {
			*hit = (struct name_hit){n, at};
			return at - 1;
		}
	}
	if (s->nnames >= UINT32_MAX - 1 ||
	    !strb_grow_array((void **)&s->names, &e->names_cap, s->nnames + 1, sizeof(*s->names)))
		return UINT32_MAX;
	s->names[s->nnames] = n;
	e->names.slots[j] = (uint32_t)++s->nnames;
	*hit = (struct name_hit){n, (uint32_t)s->nnames};
	return (uint32_t)s->nnames - 1;
}

static inline uint32_t name_index(struct enc *e, const char *n)
{
	struct name_hit *hit = &e->name_hits[((uintptr_t)n >> 4) & (CACHE - 1)];
	if (hit->at && hit->name == n)
		return hit->at - 1;
	return name_index_slow(e, n, hit);
}

static __attribute__((noinline)) uint32_t row_index_slow(struct enc *e, int64_t device, int64_t resource,
                                                         struct row_hit *hit)
{
	struct strb_store *s = e->s;
	if (!map_grow(&e->rows, s->nrows, row_key, e))
		return UINT32_MAX;
	uint64_t k = (uint64_t)device * 0x9e3779b97f4a7c15ull ^ (uint64_t)resource;
	size_t j = mix(k) & (e->rows.cap - 1);
	uint32_t at;
	for (; (at = e->rows.slots[j]); j = (j + 1) & (e->rows.cap - 1))
		if (s->rows[at - 1][0] == device && s->rows[at - 1][1] == resource)
			break;
	if (!at) {
		if (s->nrows >= UINT32_MAX - 1 ||
		    !strb_grow_array((void **)&s->rows, &e->rows_cap, s->nrows + 1, sizeof(*s->rows)))
			return UINT32_MAX;
		s->rows[s->nrows][0] = device;
		s->rows[s->nrows][1] = resource;
		e->rows.slots[j] = at = (uint32_t)++s->nrows;
	}
	*hit = (struct row_hit){device, resource, at};
	return at - 1;
}

static inline uint32_t row_index(struct enc *e, int64_t device, int64_t resource)
{
	struct row_hit *hit = &e->row_hits[((uint64_t)device * 31 + (uint64_t)resource) & (CACHE - 1)];
	if (hit->at && hit->device == device && hit->resource == resource)
		return hit->at - 1;
	return row_index_slow(e, device, resource, hit);
}

/* The bases of the block of activities [from, to). */
static void block_bases(struct strb_store_block *b, const struct strobe_activity *acts,
                        const void *const *recs, size_t from, size_t to)
{
	b->start = acts[from].start_ns;
	b->id = b->linked = 0;
	b->rec[0] = b->rec[1] = 0;
	for (size_t i = from; i < to; i++) {
		if (!b->id)
			b->id = acts[i].id;
		if (!b->linked)
			b->linked = acts[i].linked_id;
		uintptr_t r = recs ? (uintptr_t)recs[i] : 0;
		if (!r)
			continue;
		if (!b->rec[0])
			b->rec[0] = r;
		else if (!b->rec[1] && r - b->rec[0] + REC_NEAR > 2 * (uintptr_t)REC_NEAR)
			b->rec[1] = r;
	}
}

/* One activity at p (MAX_RECORD bytes at most); the end of what it wrote,
 * or NULL when out of memory for the tables. */
static uint8_t *encode(struct enc *e, const struct strb_store_block *b, const struct strobe_activity *a,
                       const void *rec, uint8_t *p)
{
	uint32_t name = name_index(e, a->name), row = row_index(e, a->device, a->resource);
	uint32_t cat = a->category ? name_index(e, a->category) : 0;
	if (name == UINT32_MAX || row == UINT32_MAX || cat == UINT32_MAX)
		return NULL;
	uint32_t type = (uint32_t)a->type;
	unsigned head = type < TYPE_WIDE ? type : TYPE_WIDE;
	head |= a->flags ? H_FLAGS : 0;
	head |= a->end_ns != a->start_ns ? H_END : 0;
	head |= a->id ? H_ID : 0;
	head |= a->linked_id ? H_LINKED : 0;
	if (a->flow_id || a->flow_kind)
		head |= H_FLOW | (a->flow_id && a->flow_id == a->id ? H_FLOW_ID : 0);
	head |= a->category ? H_CAT : 0;
	head |= a->args || a->arg_count ? H_ARGS : 0;
	uintptr_t r = (uintptr_t)rec, base = b->rec[0];
	if (r) {
		head |= H_REC;
		if (b->rec[1] && r - b->rec[0] + REC_NEAR > 2 * (uintptr_t)REC_NEAR) {
			head |= H_REC2;
			base = b->rec[1];
		}
	}
	*p++ = (uint8_t)head;
	*p++ = (uint8_t)(head >> 8);
	if ((head & TYPE_WIDE) == TYPE_WIDE)
		p = strb_varint_put(p, type);
	if (head & H_FLAGS)
		p = strb_varint_put(p, a->flags);
	p = strb_varint_put(p, name);
	p = strb_varint_put(p, row);
	p = strb_varint_put(p, strb_zigzag((uint64_t)a->start_ns - (uint64_t)b->start));
	if (head & H_END)
		p = strb_varint_put(p, strb_zigzag((uint64_t)a->end_ns - (uint64_t)a->start_ns));
	if (head & H_ID)
		p = strb_varint_put(p, strb_zigzag(a->id - b->id));
	if (head & H_LINKED)
		p = strb_varint_put(p, strb_zigzag(a->linked_id - b->linked));
	if (head & H_FLOW) {
		if (!(head & H_FLOW_ID))
			p = strb_varint_put(p, a->flow_id);
		p = strb_varint_put(p, strb_zigzag((uint64_t)(int64_t)a->flow_kind));
	}
	if (head & H_CAT)
		p = strb_varint_put(p, cat);
	if (head & H_ARGS) {
		p = strb_varint_put(p, a->arg_count);
		memcpy(p, &a->args, sizeof(a->args));
		p += sizeof(a->args);
	}
	if (head & H_REC)
		p = strb_varint_put(p, strb_zigzag(r - base));
	return p;
}

struct strb_store_builder {
	struct enc e;
	struct strb_arena *arena; /* where blocks' bytes go while it has room, or NULL */
	size_t blocks_cap;
	bool done; /* a block shorter than STRB_STORE_BLOCK was added: no more */
	/* A block is encoded here, then copied to the arena at its size. */
	uint8_t scratch[STRB_STORE_BLOCK * (sizeof(uint16_t) + MAX_RECORD)];
};

int strb_store_begin(struct strb_store_builder **out, size_t hint, struct strb_arena *arena)
{
	struct strb_store_builder *b = malloc(sizeof(*b));
	struct strb_store *s = b ? calloc(1, sizeof(*s)) : NULL;
	if (!s) {
		free(b);
		return -ENOMEM;
	}
	memset(b, 0, offsetof(struct strb_store_builder, scratch));
	b->e.s = s;
	b->arena = arena;
	s->own.max_chunk = 1 << 20;
	size_t nblocks = (hint + STRB_STORE_BLOCK - 1) / STRB_STORE_BLOCK;
	if (hint && !strb_grow_array((void **)&s->blocks, &b->blocks_cap, nblocks, sizeof(*s->blocks))) {
		strb_store_abandon(b);
		return -ENOMEM;
	}
	*out = b;
	return 0;
}

/* Encodes acts[from, to) as block b: the activities' offsets from the
 * block's start, then their records. False when out of memory. */
static bool encode_block(struct strb_store_builder *sb, struct strb_store_block *b,
                         const struct strobe_activity *acts, const void *const *recs, size_t from, size_t to)
{
	block_bases(b, acts, recs, from, to);
	uint8_t *p = sb->scratch + (to - from) * sizeof(uint16_t);
	for (size_t i = from; i < to; i++) {
		/* A block is at most STRB_STORE_BLOCK * (2 + MAX_RECORD) bytes: offsets fit. */
		uint16_t off = (uint16_t)(p - sb->scratch);
		memcpy(sb->scratch + (i - from) * sizeof(off), &off, sizeof(off));
		if (!(p = encode(&sb->e, b, &acts[i], recs ? recs[i] : NULL, p)))
			return false;
	}
	size_t len = (size_t)(p - sb->scratch);
	/* The trace's memory first (vendor buffers already walked), then the
	 * store's own, in chunks small enough that little is left unused. */
	uint8_t *bytes = sb->arena ? strb_arena_alloc_held(sb->arena, len) : NULL;
	if (!bytes && !(bytes = strb_arena_alloc(&sb->e.s->own, len)))
		return false;
	memcpy(bytes, sb->scratch, len);
	b->p = bytes;
	b->len = (uint32_t)len;
	sb->e.s->len += len;
	return true;
}

int strb_store_add(struct strb_store_builder *sb, const struct strobe_activity *acts, const void *const *recs,
                   size_t count)
{
	struct strb_store *s = sb->e.s;
	if (!count)
		return 0;
	if (sb->done)
		return -EINVAL;
	size_t nblocks = (count + STRB_STORE_BLOCK - 1) / STRB_STORE_BLOCK;
	size_t first_block = (s->count + STRB_STORE_BLOCK - 1) / STRB_STORE_BLOCK;
	if (!strb_grow_array((void **)&s->blocks, &sb->blocks_cap, first_block + nblocks, sizeof(*s->blocks)))
		return -ENOMEM;
	bool ok = true;
	size_t len = s->len;
	for (size_t k = 0; ok && k < nblocks; k++) {
		size_t from = k * STRB_STORE_BLOCK,
		       to = from + STRB_STORE_BLOCK < count ? from + STRB_STORE_BLOCK : count;
		ok = encode_block(sb, &s->blocks[first_block + k], acts, recs, from, to);
	}
	if (!ok) { /* the blocks added are left out: the store is as it was */
		s->len = len;
		return -ENOMEM;
	}
	s->count += count;
	sb->done = count % STRB_STORE_BLOCK != 0;
	return 0;
}

const struct strb_store *strb_store_so_far(const struct strb_store_builder *b)
{
	return b->e.s;
}

void strb_store_abandon(struct strb_store_builder *b)
{
	if (!b)
		return;
	free(b->e.names.slots);
	free(b->e.rows.slots);
	strb_store_free(b->e.s);
	free(b);
}

struct strb_store *strb_store_finish(struct strb_store_builder *b)
{
	struct strb_store *s = b->e.s;
	free(b->e.names.slots);
	free(b->e.rows.slots);
	free(b);
	/* Give back what the estimates left over. */
	const char **n = realloc(s->names, (s->nnames ? s->nnames : 1) * sizeof(*n));
	if (n)
		s->names = n;
	size_t nblocks = (s->count + STRB_STORE_BLOCK - 1) / STRB_STORE_BLOCK;
	struct strb_store_block *blocks = realloc(s->blocks, (nblocks ? nblocks : 1) * sizeof(*blocks));
	if (blocks)
		s->blocks = blocks;
	return s;
}

int strb_store_build(struct strb_store **out, const struct strobe_activity *acts, const void *const *recs,
                     size_t count, struct strb_arena *arena)
{
	struct strb_store_builder *b = NULL;
	int rc = strb_store_begin(&b, count, arena);
	if (!rc)
		rc = strb_store_add(b, acts, recs, count);
	if (rc) {
		strb_store_abandon(b);
		return rc;
	}
	*out = strb_store_finish(b);
	return 0;
}

/* ---- decoding --------------------------------------------------------------------- */

/* Activity i's record in its block b. */
static inline const uint8_t *record_of(const struct strb_store_block *b, size_t i)
{
	uint16_t off;
	memcpy(&off, b->p + (i % STRB_STORE_BLOCK) * sizeof(off), sizeof(off));
	return b->p + off;
}

void strb_store_get(const struct strb_store *s, size_t i, struct strobe_activity *a, const void **rec)
{
	const struct strb_store_block *b = &s->blocks[i / STRB_STORE_BLOCK];
	const uint8_t *p = record_of(b, i);
	unsigned head = p[0] | (unsigned)p[1] << 8;
	p += 2;
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	uint32_t type = head & TYPE_WIDE;
	if (type == TYPE_WIDE)
		type = (uint32_t)strb_varint_get(&p);
	a->type = (enum strobe_activity_type)type;
	if (head & H_FLAGS)
		a->flags = (uint32_t)strb_varint_get(&p);
	a->name = s->names[strb_varint_get(&p)];
	const int64_t *row = s->rows[strb_varint_get(&p)];
	a->device = row[0];
	a->resource = row[1];
	a->start_ns = (int64_t)((uint64_t)b->start + strb_unzigzag(strb_varint_get(&p)));
	a->end_ns = a->start_ns;
	if (head & H_END)
		a->end_ns = (int64_t)((uint64_t)a->start_ns + strb_unzigzag(strb_varint_get(&p)));
	if (head & H_ID)
		a->id = b->id + strb_unzigzag(strb_varint_get(&p));
	if (head & H_LINKED)
		a->linked_id = b->linked + strb_unzigzag(strb_varint_get(&p));
	if (head & H_FLOW) {
		a->flow_id = head & H_FLOW_ID ? a->id : strb_varint_get(&p);
		a->flow_kind = (enum strobe_flow_kind)(int64_t)strb_unzigzag(strb_varint_get(&p));
	}
	if (head & H_CAT)
		a->category = s->names[strb_varint_get(&p)];
	if (head & H_ARGS) {
		a->arg_count = (size_t)strb_varint_get(&p);
		memcpy(&a->args, p, sizeof(a->args));
		p += sizeof(a->args);
	}
	*rec = NULL;
	if (head & H_REC)
		*rec = (const void *)(b->rec[head & H_REC2 ? 1 : 0] +
		                      (uintptr_t)strb_unzigzag(strb_varint_get(&p)));
}

enum strobe_activity_type strb_store_type(const struct strb_store *s, size_t i)
{
	const uint8_t *p = record_of(&s->blocks[i / STRB_STORE_BLOCK], i);
	uint32_t type = p[0] & TYPE_WIDE;
	if (type == TYPE_WIDE) {
		p += 2;
		type = (uint32_t)strb_varint_get(&p);
	}
	return (enum strobe_activity_type)type;
}

size_t strb_store_bytes(const struct strb_store *s)
{
	if (!s)
		return 0;
	size_t nblocks = (s->count + STRB_STORE_BLOCK - 1) / STRB_STORE_BLOCK;
	return sizeof(*s) + s->len + nblocks * sizeof(*s->blocks) + s->nnames * sizeof(*s->names) +
	       s->nrows * sizeof(*s->rows);
}

void strb_store_free(struct strb_store *s)
{
	if (!s)
		return;
	strb_arena_free(&s->own);
	free(s->blocks);
	free(s->names);
	free(s->rows);
	free(s);
}

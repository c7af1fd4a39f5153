/* Per-thread capture buffers.
 *
 * Each thread that records gets one buffer: a private virtual reservation
 * (mmap, MAP_NORESERVE) that only the owner writes, filled with
 * variable-length records. The owner publishes how far it has written with
 * a release store the processing pass reads with an acquire load, so
 * capture needs no lock. Memory is charged against the trace's budget
 * (ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB) in 64 KiB claims: one shared atomic
 * per claim, none per event. A buffer belongs to the registry, not the
 * thread, so events survive the thread's exit.
 *
 * The session number doubles as the on/off switch: 0 = not tracing. A
 * thread that sees a session newer than its buffer's resets its own buffer,
 * so nobody else ever writes to it. */
#ifndef STROBE_CORE_TBUF_H
#define STROBE_CORE_TBUF_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "core/names.h"
#include "strobe/strobe.h"

#define STRB_NAME_MAX        1023 /* longer names are truncated and counted */
#define STRB_THREAD_NAME_MAX 1024 /* with the NUL */

enum strb_rec_kind {
	STRB_REC_RANGE_PUSH = 1, /* user_annotation: struct strb_rec_push */
	STRB_REC_OP_PUSH,        /* cpu_op; u64 id follows the header */
	STRB_REC_RANGE_POP,      /* stack 0 (domain 0 and past STRB_DOMAINS_MAX): the word alone */
	STRB_REC_OP_POP,         /* the word alone */
	STRB_REC_INSTANT,
	STRB_REC_COUNTER,     /* double follows the header */
	STRB_REC_CORR_PUSH,   /* aux = 0 plain / 1 user; u64 id follows */
	STRB_REC_CORR_POP,    /* aux = 0 plain / 1 user */
	STRB_REC_ACTIVITY,    /* a serialised strobe_activity; aux = total size */
	STRB_REC_ASYNC_START, /* a range that may end on another thread; u64 id follows */
	STRB_REC_ASYNC_END,   /* its end; u64 id follows */
	STRB_REC_PAD,         /* flight rings: the rest of the chunk is unused (the word alone) */
	STRB_REC_STEP,        /* strobe_step(): u64 count of the calls so far follows */
	STRB_REC_DOMAIN_POP,  /* the pop of a domain's own stack: aux = the domain */
	STRB_REC_KINDS,       /* one past the last */
};

/* aux of RANGE_PUSH, RANGE_POP, INSTANT and the ASYNC kinds: the domain
 * (core/names.h) in the low bits, and STRB_AUX_ATTRS when a struct
 * strb_rec_attrs follows the fixed payload. */
#define STRB_AUX_DOMAIN(aux) ((aux)&0xffffu)
#define STRB_AUX_ATTRS       0x80000000u

/* Every record begins with one 64-bit word: its kind in the low 4 bits,
 * the clock's ticks above them, their top 4 bits dropped (processing
 * widens them again from a reference near them: 2^59 ticks either way is
 * years at any TSC rate). A shift and an OR of a small constant make it.
 * A word of 0 or of kind PAD ends a flight ring's chunk. Records are
 * multiples of 8 bytes:
 * - RANGE_POP, OP_POP, PAD: the word alone (8 bytes);
 * - RANGE_PUSH: struct strb_rec_push, the name, padding to 8, then a
 *   struct strb_rec_attrs when STRB_PUSH_ATTRS is set (12 + 12 bytes of
 *   name: 24 bytes, so a range of such a name takes 32 in all);
 * - the others: struct strb_rec (16 bytes), the fixed payload, the name
 *   (not NUL-terminated), padded to 8 bytes. */
#define STRB_REC_KIND_BITS 4
_Static_assert(STRB_REC_KINDS <= 1 << STRB_REC_KIND_BITS, "a kind fits the word's low bits");
#define STRB_TICKS_BITS     (64 - STRB_REC_KIND_BITS)
#define STRB_TICKS_MASK     ((UINT64_C(1) << STRB_TICKS_BITS) - 1)
#define STRB_REC_WORD_BYTES 8u

struct strb_rec {
	uint64_t word;
	uint16_t name_len;
	uint16_t reserved;
	uint32_t aux;
};

#define STRB_PUSH_ATTRS    0x8000u /* in strb_rec_push.name_len: attributes follow */
#define STRB_PUSH_LEN_MASK 0x7fffu
struct strb_rec_push {
	uint64_t word;
	uint16_t name_len; /* | STRB_PUSH_ATTRS */
	uint16_t domain;
	/* the name starts here, at byte 12 */
};
#define STRB_PUSH_HEAD 12u

static inline uint64_t strb_rec_word(unsigned kind, uint64_t ticks)
{
	return ticks << STRB_REC_KIND_BITS | kind;
}

/* The kind of the record at p (8 bytes readable). */
static inline unsigned strb_rec_kind(const void *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	return (unsigned)(w & ((1u << STRB_REC_KIND_BITS) - 1));
}

/* Marks the record at p (8 bytes writable) as the end of its chunk. */
static inline void strb_rec_set_pad(void *p)
{
	uint64_t w = strb_rec_word(STRB_REC_PAD, 0);
	memcpy(p, &w, sizeof(w));
}

/* The full ticks of the low 60 bits `low`: the value nearest ref. */
static inline uint64_t strb_ticks_widen(uint64_t low, uint64_t ref)
{
	uint64_t d = (low - ref) & STRB_TICKS_MASK;
	if (d & (UINT64_C(1) << (STRB_TICKS_BITS - 1)))
		return ref - ((STRB_TICKS_MASK + 1) - d);
	return ref + d;
}

/* One record as its readers see it, whatever its layout: pops of domain
 * stacks come as RANGE_POP with their domain in aux, pushes with theirs
 * (and STRB_AUX_ATTRS) in aux. payload: the fixed payload (for RANGE_PUSH
 * the attributes), name: the name, size: the record's bytes. */
struct strb_rec_view {
	uint64_t ticks;
	unsigned kind;
	uint32_t aux;
	uint16_t name_len;
	size_t size;
	const uint8_t *payload;
	const char *name;
};

/* The fixed payload of a record with a 16-byte header. */
static inline size_t strb_rec_payload(unsigned kind, uint32_t aux, size_t attrs_bytes)
{
	size_t attrs = aux & STRB_AUX_ATTRS ? attrs_bytes : 0;
	switch (kind) {
	case STRB_REC_OP_PUSH:
	case STRB_REC_COUNTER:
	case STRB_REC_CORR_PUSH:
	case STRB_REC_ASYNC_END:
	case STRB_REC_STEP:
		return 8; /* id, value or count */
	case STRB_REC_ACTIVITY:
		return aux;
	case STRB_REC_INSTANT:
		return attrs;
	case STRB_REC_ASYNC_START:
		return 8 + attrs;
	default:
		return 0;
	}
}

/* Decodes the record at p, with room bytes readable there (a multiple of
 * 8, at least 8), its ticks widened from ref. Returns false when its
 * header does not fit in room (v->size is then the header's); v->size may
 * exceed room (the caller checks). attrs_bytes: sizeof(struct strb_rec_attrs). */
static inline bool strb_rec_decode(const uint8_t *p, size_t room, uint64_t ref, size_t attrs_bytes,
                                   struct strb_rec_view *v)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	v->kind = strb_rec_kind(p);
	v->ticks = strb_ticks_widen(w >> STRB_REC_KIND_BITS, ref);
	v->aux = 0;
	v->name_len = 0;
	v->size = sizeof(struct strb_rec);
	v->payload = NULL;
	v->name = NULL;
	switch (v->kind) {
	case STRB_REC_RANGE_POP:
	case STRB_REC_OP_POP:
	case STRB_REC_PAD:
	case 0:
		v->size = STRB_REC_WORD_BYTES;
		return true;
	case STRB_REC_RANGE_PUSH: {
		if (room < 16)
			return false;
		struct strb_rec_push h;
		memcpy(&h, p, sizeof(h));
		size_t head = (STRB_PUSH_HEAD + (h.name_len & STRB_PUSH_LEN_MASK) + 7u) & ~(size_t)7;
		v->name_len = h.name_len & STRB_PUSH_LEN_MASK;
		v->aux = h.domain | (h.name_len & STRB_PUSH_ATTRS ? STRB_AUX_ATTRS : 0);
		v->name = (const char *)p + STRB_PUSH_HEAD;
		v->payload = p + head;
		v->size = head + (h.name_len & STRB_PUSH_ATTRS ? attrs_bytes : 0);
		return true;
	}
	default: {
		if (room < sizeof(struct strb_rec))
			return false;
		struct strb_rec h;
		memcpy(&h, p, sizeof(h));
		size_t payload = strb_rec_payload(v->kind, h.aux, attrs_bytes);
		v->name_len = h.name_len;
		v->aux = h.aux;
		v->payload = p + sizeof(h);
		v->name = (const char *)v->payload + payload;
		v->size = sizeof(h) + payload + ((h.name_len + 7u) & ~(size_t)7);
		if (v->kind == STRB_REC_DOMAIN_POP)
			v->kind = STRB_REC_RANGE_POP;
		return true;
	}
	}
}

/* Pushes and pops pair on stacks, as processing pairs them: one per range
 * domain (domain 0 and numbers past STRB_DOMAINS_MAX share the first) and
 * one for ops. A pop of the first stack or of ops is the word alone; a
 * domain's carries the domain in a 16-byte header. */
#define STRB_STACK_OPS           STRB_DOMAINS_MAX
#define STRB_STACKS              (STRB_DOMAINS_MAX + 1)
#define STRB_POP_BYTES(k)        ((k) == 0 || (k) == STRB_STACK_OPS ? STRB_REC_WORD_BYTES : sizeof(struct strb_rec))
#define STRB_POP_BYTES_MIN       STRB_REC_WORD_BYTES
#define STRB_TBUF_CHUNK          (64 * 1024) /* flight rings: records never cross one */
#define STRB_RANGE_STACK(domain) (STRB_AUX_DOMAIN(domain) < STRB_DOMAINS_MAX ? STRB_AUX_DOMAIN(domain) : 0u)

struct strb_tbuf {
	/* Written by the owner only. */
	uint8_t *base;
	size_t head;    /* bytes written */
	size_t limit;   /* bytes claimed from the budget */
	size_t reserve; /* bytes of address space mapped */
	uint32_t session;
	bool exhausted; /* the budget ran out this session: drop without asking again */
	bool ring;      /* a flight ring (below) */
	uint64_t next_op_id, op_id_end;
	/* A pop must close its own push: every recorded push keeps room for its
	 * pop within the claimed budget (pop_room), and a dropped push drops
	 * its pop too (skip), per stack. */
	size_t pop_room;
	/* Flight rings, owner-only and on the hot path: the recorded pushes
	 * still open, in push order, each as its monotonic position << 16 |
	 * its stack (at most STRB_SHADOW_MAX: every one keeps its pop's room in
	 * the current chunk); where the current chunk starts; the records
	 * written in it. */
	uint64_t *shadow;
	uint32_t shadow_n;
	uint32_t chunk_nrec;
	uint64_t chunk_pos;
	size_t pos_off;             /* ring laps so far * cap */
	uint32_t open[STRB_STACKS]; /* recorded pushes whose pop is to come */
	uint32_t skip[STRB_STACKS]; /* dropped pushes whose pop is to come */
	/* Written by the owner only, read by processing while the owner may
	 * still record: atomics, bumped with strb_tbuf_count (no RMW). */
	_Atomic uint64_t dropped;   /* events that did not fit the budget */
	_Atomic uint64_t truncated; /* names cut at STRB_NAME_MAX */

	/* Flight rings (strb_tbuf_set_ring): records never cross a chunk of
	 * STRB_TBUF_CHUNK bytes; when the budget is out the owner recycles its
	 * own oldest chunk. Positions are monotonic: physical offset + pos_off.
	 * Owner-only: */
	struct strb_kept *kept; /* pushes of recycled chunks still open, and what recycling needs */
	/* Read by snapshots while the owner records: */
	_Atomic size_t cap;        /* ring size once it wraps, else 0 */
	_Atomic uint64_t tail;     /* monotonic position of the oldest chunk */
	_Atomic uint32_t seq;      /* odd while the owner recycles a chunk */
	_Atomic uint64_t aged_out; /* records in recycled chunks */

	/* Pre-faulting (tbuf.c's pager thread): the owner asks for its pages
	 * up to ahead_to to be made resident; the pager has done so up to
	 * ahead_done. */
	_Atomic size_t ahead_to, ahead_done;

	_Atomic size_t published; /* head (+ pos_off in rings), as the reader may see it */
	size_t released;          /* processing gave back the pages below this */
	atomic_bool dead;         /* the thread exited */
	pid_t tid;
	char name[STRB_THREAD_NAME_MAX]; /* empty = ask the kernel at processing */
	struct strb_tbuf *next;          /* registry list, under the registry lock */
	bool registered;                 /* on the registry list */
	void *alt_stack;                 /* flight rings: the thread's alternate signal stack, ours */
};

/* The active session (strobe_internal_session, exported for the header's
 * inline fast path) is 0 when not tracing; read with relaxed __atomic loads. */
/* The default (global-dynamic) TLS model, not initial-exec: one
 * initial-exec access anywhere puts the library's whole TLS block in the
 * static TLS surplus glibc keeps for libraries loaded with dlopen, which
 * it does not fit (Python extensions, CUDA's injection hook, PyTorch load
 * libstrobe that way). */
extern __thread struct strb_tbuf *strb_tls_buf;

/* Slow path: attach or reset the calling thread's buffer for session s.
 * NULL when memory cannot be had (the event is then dropped). */
struct strb_tbuf *strb_tbuf_attach(uint32_t session);
/* Slow path: claims more budget; returns where n bytes may be written with
 * keep bytes (and the pops' room) still free after them, or NULL (a drop,
 * counted). */
void *strb_tbuf_grow(struct strb_tbuf *b, size_t n, size_t keep);

/* Sets the budget for the next session, in bytes. */
void strb_tbuf_set_budget(int64_t bytes);
/* Bytes of budget claimed so far in this session (for accounting). */
int64_t strb_tbuf_budget_used(void);

/* Returns the buffer in which the calling thread records for the active
 * session, or NULL when not tracing. The one relaxed load when off. */
static inline struct strb_tbuf *strb_tbuf_current(void)
{
	uint32_t s = __atomic_load_n(&strobe_internal_session, __ATOMIC_RELAXED);
	if (__builtin_expect(!s, 1))
		return NULL;
	struct strb_tbuf *b = strb_tls_buf;
	if (__builtin_expect(!b || b->session != s, 0))
		b = strb_tbuf_attach(s);
	return b;
}

/* Where n bytes may be written, keeping `keep` more and the room of the
 * pops to come free; NULL when the budget does not allow (counted). */
static inline void *strb_tbuf_reserve_keep(struct strb_tbuf *b, size_t n, size_t keep)
{
	if (__builtin_expect(b->head + n + keep + b->pop_room > b->limit, 0))
		return strb_tbuf_grow(b, n, keep);
	void *p = b->base + b->head;
	b->head += n;
	b->chunk_nrec++;
	return p;
}

/* Flight rings: a push at p on stack k goes on the shadow stack; its pop
 * takes it off again, in the common case the last one and in this chunk
 * (else the slow path notes where a kept push ends). */
#define STRB_SHADOW_MAX (STRB_TBUF_CHUNK / STRB_POP_BYTES_MIN)
static inline void strb_tbuf_shadow_push(struct strb_tbuf *b, const void *p, unsigned k)
{
	uint64_t pos = (uint64_t)((const uint8_t *)p - b->base) + b->pos_off;
	b->shadow[b->shadow_n++] = pos << 16 | k;
}
void strb_tbuf_shadow_pop_slow(struct strb_tbuf *b, const void *p, unsigned k);
static inline void strb_tbuf_shadow_pop(struct strb_tbuf *b, const void *p, unsigned k)
{
	uint64_t top = b->shadow[b->shadow_n - 1];
	if (__builtin_expect((top & 0xffffu) == k && top >> 16 >= b->chunk_pos, 1))
		b->shadow_n--;
	else
		strb_tbuf_shadow_pop_slow(b, p, k);
}

static inline void *strb_tbuf_reserve(struct strb_tbuf *b, size_t n)
{
	return strb_tbuf_reserve_keep(b, n, 0);
}

/* Owner-only counter bump: a relaxed load and store, no locked instruction. */
static inline void strb_tbuf_count(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1, memory_order_relaxed);
}

/* A push of n bytes on stack k: its pop's room is kept with it. NULL when
 * dropped; its pop is then dropped too. */
static inline void *strb_tbuf_reserve_push(struct strb_tbuf *b, size_t n, unsigned k)
{
	void *p = strb_tbuf_reserve_keep(b, n, STRB_POP_BYTES(k));
	if (__builtin_expect(!p, 0)) {
		b->skip[k]++;
		return NULL;
	}
	b->open[k]++;
	b->pop_room += STRB_POP_BYTES(k);
	if (b->ring)
		strb_tbuf_shadow_push(b, p, k);
	return p;
}

/* A pop on stack k: always room when it closes a recorded push; NULL when
 * its push was dropped (counted) or, closing nothing recorded, it does
 * not fit. */
static inline void *strb_tbuf_reserve_pop(struct strb_tbuf *b, unsigned k)
{
	if (__builtin_expect(b->skip[k] != 0, 0)) {
		b->skip[k]--;
		strb_tbuf_count(&b->dropped);
		return NULL;
	}
	if (__builtin_expect(!b->open[k], 0))
		return strb_tbuf_reserve(b, STRB_POP_BYTES(k));
	b->open[k]--;
	b->pop_room -= STRB_POP_BYTES(k);
	void *p = b->base + b->head;
	if (b->ring)
		strb_tbuf_shadow_pop(b, p, k);
	b->head += STRB_POP_BYTES(k);
	b->chunk_nrec++;
	return p;
}

static inline void strb_tbuf_publish(struct strb_tbuf *b)
{
	atomic_store_explicit(&b->published, b->head + b->pos_off, memory_order_release);
}

/* Flight rings: the choice for the next session (set with no session
 * active). */
void strb_tbuf_set_ring(bool on);

/* A copy of one thread's flight ring, taken while it may record: the
 * pushes of recycled chunks that are still open (linear records), then the
 * ring's records from the oldest chunk on (chunked: a record never crosses
 * a multiple of STRB_TBUF_CHUNK from ring's start; a PAD record, or fewer
 * bytes than a word, ends a chunk). */
struct strb_tbuf_view {
	const uint8_t *kept;
	size_t kept_len;
	const uint8_t *ring;
	size_t ring_len;
	pid_t tid;
	const char *name;
	uint64_t aged_out, dropped, truncated;
	uint64_t kept_lost; /* open pushes too many to keep: their pops pair with nothing */
	bool torn;          /* the owner recycled while it was copied: its oldest chunks are left out */
};
typedef void (*strb_tbuf_view_fn)(const struct strb_tbuf_view *v, void *arg);
/* Copies each ring of `session` in turn (one thread's at a time) and hands
 * the copy to fn. Never makes a recording thread wait. Returns 0 or
 * -ENOMEM. */
int strb_tbuf_foreach_snapshot(uint32_t session, strb_tbuf_view_fn fn, void *arg);

/* Walks every buffer of `session` (live and dead) under the registry lock. */
typedef void (*strb_tbuf_visit_fn)(struct strb_tbuf *b, size_t published, void *arg);
void strb_tbuf_foreach(uint32_t session, strb_tbuf_visit_fn fn, void *arg);
/* Processing has read [0, upto) of b for good: gives those pages back to
 * the kernel as it goes (all but the first ones, kept between traces), so
 * the buffers shrink while the trace grows. From a strb_tbuf_foreach visit,
 * with no session active. */
void strb_tbuf_consumed(struct strb_tbuf *b, size_t upto);
/* After processing: frees buffers of dead threads and returns the pages of
 * the others to the kernel. Only call when no session is active. */
void strb_tbuf_release_all(void);
/* fork child: forget every buffer but the calling thread's. */
void strb_tbuf_atfork_child(void);
/* Frees everything (strobe_shutdown). */
void strb_tbuf_shutdown(void);

/* ---- the fatal-signal path ------------------------------------------- */

/* One thread's ring in a raw crash dump (control/flight_crash.c writes
 * the file): this block, kept_len bytes of kept pushes (linear records),
 * ring_len bytes of the ring from its oldest chunk (chunked, as in a
 * strb_tbuf_view), then a struct strb_raw_thread_end. Native byte order;
 * every length is a multiple of 8. */
#define STRB_RAW_THREAD_MAGIC 0x44524854u /* "THRD" */
#define STRB_RAW_END_MAGIC    0x444e4554u /* "TEND" */
struct strb_raw_thread {
	uint32_t magic;
	uint32_t size; /* sizeof(struct strb_raw_thread) */
	int32_t tid;
	uint32_t seq; /* the ring's seq before the copy: odd = being recycled */
	uint64_t cap, tail, published;
	uint64_t aged_out, dropped, truncated, kept_lost;
	uint64_t kept_len, ring_len;
	char name[STRB_THREAD_NAME_MAX];
};
struct strb_raw_thread_end {
	uint32_t magic;
	uint32_t seq;        /* after the copy: differs from the block's = torn */
	uint64_t unreadable; /* bytes that could not be read, written as zeros */
};

/* An alternate signal stack for the calling thread when it has none, so
 * that the fatal-signal handler has a stack to run on when the thread's
 * own is used up: STRB_ALT_STACK_BYTES mapped and installed. Returns it,
 * or NULL (the thread has one already, or no memory). */
#define STRB_ALT_STACK_BYTES (128 * 1024)
void *strb_alt_stack_give(void);
/* Copies n bytes at src into dst, or returns false where src is not
 * readable (process_vm_readv on ourselves). Async-signal-safe. */
bool strb_raw_peek(void *dst, const void *src, size_t n);
/* Writes all of [p, p + n) to fd with write() alone: retries short writes
 * and EINTR; bytes that cannot be read (EFAULT) go out as zeros so the
 * file's lengths hold. Async-signal-safe. Returns the bytes that had to be
 * zeroed, or -1 when fd fails. */
int64_t strb_raw_write(int fd, const void *p, size_t n);
/* Writes the ring of every thread of `session` to fd (a block each, as
 * above), walking the registry without its lock: async-signal-safe, no
 * memory allocated, every structure read through a copy that cannot fault,
 * at most STRB_RAW_THREADS_MAX threads. Returns the threads written, or -1
 * when fd fails. */
#define STRB_RAW_THREADS_MAX 65536
int64_t strb_tbuf_write_raw(int fd, uint32_t session);

#endif

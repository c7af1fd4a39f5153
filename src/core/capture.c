/* The public capture calls: the hot path. Each one is a relaxed load when
 * not tracing; when tracing, a clock read and a write into the calling
 * thread's own buffer. */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "common/error.h"
#include "core/capture.h"
#include "core/clock.h"
#include "core/tbuf.h"

static _Atomic uint64_t next_op_block = 1;
#define OP_BLOCK 4096

/* Names are short: 8-byte words then a tail. A variable-length memcpy here
 * becomes `rep movs`, whose start-up cost was most of a push. */
static inline __attribute__((always_inline)) void copy_name(uint8_t *dst, const char *src, size_t len)
{
	for (; len >= 8; len -= 8, src += 8, dst += 8) {
		uint64_t w;
		memcpy(&w, src, 8);
		memcpy(dst, &w, 8);
	}
	for (size_t i = 0; i < len; i++)
		dst[i] = (uint8_t)src[i];
}

/* Pushes go on stack k (STRB_STACKS: not a push). */
#define NOT_A_PUSH STRB_STACKS

/* The length of name as recorded (truncated and counted past STRB_NAME_MAX). */
static inline __attribute__((always_inline)) size_t name_length(struct strb_tbuf *b, const char *name)
{
	if (!name)
		return 0;
	size_t len = strnlen(name, STRB_NAME_MAX + 1);
	if (__builtin_expect(len > STRB_NAME_MAX, 0)) {
		len = STRB_NAME_MAX;
		strb_tbuf_count(&b->truncated);
	}
	return len;
}

/* A record with the 16-byte header; returns its payload. */
static inline __attribute__((always_inline)) void *put(struct strb_tbuf *b, uint8_t kind, uint32_t aux,
                                                       const char *name, size_t payload, unsigned k)
{
	uint64_t now = strb_clock_ticks();
	size_t len = name_length(b, name);
	size_t total = sizeof(struct strb_rec) + payload + ((len + 7) & ~(size_t)7);
	struct strb_rec *r =
	    k == NOT_A_PUSH ? strb_tbuf_reserve(b, total) : strb_tbuf_reserve_push(b, total, k);
	if (__builtin_expect(!r, 0))
		return NULL;
	r->word = strb_rec_word(kind, now);
	r->name_len = (uint16_t)len;
	r->reserved = 0;
	r->aux = aux;
	copy_name((uint8_t *)(r + 1) + payload, name, len);
	return r + 1;
}

/* A range push (struct strb_rec_push) on stack k; returns where its
 * attributes go, or NULL when dropped. */
static inline __attribute__((always_inline)) void *put_push(struct strb_tbuf *b, uint32_t domain,
                                                            const char *name, bool attrs, unsigned k)
{
	uint64_t now = strb_clock_ticks();
	size_t len = name_length(b, name);
	size_t head = (STRB_PUSH_HEAD + len + 7) & ~(size_t)7;
	uint8_t *r = strb_tbuf_reserve_push(b, head + (attrs ? sizeof(struct strb_rec_attrs) : 0), k);
	if (__builtin_expect(!r, 0))
		return NULL;
	/* Field by field: a struct built on the stack and copied would read
	 * back its halves as one word (a store-forwarding stall). */
	uint64_t w = strb_rec_word(STRB_REC_RANGE_PUSH, now);
	uint16_t nl = (uint16_t)(len | (attrs ? STRB_PUSH_ATTRS : 0)),
	         dom = (uint16_t)STRB_AUX_DOMAIN(domain);
	memcpy(r, &w, sizeof(w));
	memcpy(r + offsetof(struct strb_rec_push, name_len), &nl, sizeof(nl));
	memcpy(r + offsetof(struct strb_rec_push, domain), &dom, sizeof(dom));
	copy_name(r + STRB_PUSH_HEAD, name, len);
	return r + head;
}

static inline __attribute__((always_inline)) void put_simple(uint8_t kind, const char *name, unsigned k)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return;
	if (put(b, kind, 0, name, 0, k))
		strb_tbuf_publish(b);
}

/* The pop of stack k: dropped with its push, so it never closes another.
 * The word alone for the first stack and ops; a domain's names it. */
static inline __attribute__((always_inline)) void put_pop(uint8_t kind, uint32_t domain, unsigned k)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return;
	uint64_t now = strb_clock_ticks();
	void *r = strb_tbuf_reserve_pop(b, k);
	if (!r)
		return;
	if (STRB_POP_BYTES(k) == STRB_REC_WORD_BYTES) {
		uint64_t w = strb_rec_word(kind, now);
		memcpy(r, &w, sizeof(w));
	} else {
		struct strb_rec h = {.word = strb_rec_word(STRB_REC_DOMAIN_POP, now), .aux = domain};
		memcpy(r, &h, sizeof(h));
	}
	strb_tbuf_publish(b);
}

void strobe_range_push(const char *name)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return;
	if (put_push(b, 0, name, false, 0))
		strb_tbuf_publish(b);
}

void strobe_range_pop(void)
{
	put_pop(STRB_REC_RANGE_POP, 0, 0);
}

void strobe_instant(const char *name)
{
	put_simple(STRB_REC_INSTANT, name, NOT_A_PUSH);
}

void strb_capture_step(uint64_t n)
{
	struct strb_tbuf *b = strb_tbuf_current();
	uint64_t *p = b ? put(b, STRB_REC_STEP, 0, NULL, sizeof(n), NOT_A_PUSH) : NULL;
	if (p) {
		*p = n;
		strb_tbuf_publish(b);
	}
}

void strobe_op_pop(void)
{
	put_pop(STRB_REC_OP_POP, 0, STRB_STACK_OPS);
}

uint64_t strb_ids_take_block(uint64_t n)
{
	return atomic_fetch_add_explicit(&next_op_block, n, memory_order_relaxed);
}

/* The next id of a per-thread block [*next, *end), taking a new block when
 * it is used up. */
static inline uint64_t next_in_block(uint64_t *next, uint64_t *end)
{
	if (__builtin_expect(*next == *end, 0)) {
		*next = strb_ids_take_block(OP_BLOCK);
		*end = *next + OP_BLOCK;
	}
	return (*next)++;
}

static uint64_t take_op_id(struct strb_tbuf *b)
{
	return next_in_block(&b->next_op_id, &b->op_id_end);
}

uint64_t strobe_op_push(const char *name)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return 0;
	uint64_t *id = put(b, STRB_REC_OP_PUSH, 0, name, sizeof(uint64_t), STRB_STACK_OPS);
	if (!id)
		return 0;
	*id = take_op_id(b);
	strb_tbuf_publish(b);
	return *id;
}

static inline void put_attrs(uint8_t kind, uint32_t domain, const char *name,
                             const struct strb_rec_attrs *attrs, unsigned k)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return;
	uint32_t aux = domain | (attrs ? STRB_AUX_ATTRS : 0);
	struct strb_rec_attrs *p = put(b, kind, aux, name, attrs ? sizeof(*attrs) : 0, k);
	if (!p)
		return;
	if (attrs)
		*p = *attrs;
	strb_tbuf_publish(b);
}

void strb_capture_push(uint32_t domain, const char *name, const struct strb_rec_attrs *attrs)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return;
	struct strb_rec_attrs *p = put_push(b, domain, name, attrs != NULL, STRB_RANGE_STACK(domain));
	if (!p)
		return;
	if (attrs)
		memcpy(p, attrs, sizeof(*attrs));
	strb_tbuf_publish(b);
}

void strb_capture_pop(uint32_t domain)
{
	put_pop(STRB_REC_RANGE_POP, domain, STRB_RANGE_STACK(domain));
}

void strb_capture_mark(uint32_t domain, const char *name, const struct strb_rec_attrs *attrs)
{
	put_attrs(STRB_REC_INSTANT, domain, name, attrs, NOT_A_PUSH);
}

/* Ids of ranges that may end elsewhere come in per-thread blocks, so
 * handing one out touches no shared cache line. */
static __thread uint64_t async_next, async_end;

uint64_t strb_capture_async_start(uint32_t domain, const char *name, const struct strb_rec_attrs *attrs)
{
	uint64_t id = next_in_block(&async_next, &async_end);
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return id;
	uint32_t aux = domain | (attrs ? STRB_AUX_ATTRS : 0);
	uint64_t *p = put(b, STRB_REC_ASYNC_START, aux, name, sizeof(uint64_t) + (attrs ? sizeof(*attrs) : 0),
	                  NOT_A_PUSH);
	if (!p)
		return id;
	*p = id;
	if (attrs)
		memcpy(p + 1, attrs, sizeof(*attrs));
	strb_tbuf_publish(b);
	return id;
}

void strb_capture_async_end(uint64_t id)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return;
	uint64_t *p = put(b, STRB_REC_ASYNC_END, 0, NULL, sizeof(uint64_t), NOT_A_PUSH);
	if (!p)
		return;
	*p = id;
	strb_tbuf_publish(b);
}

void strobe_counter(const char *name, double value)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (!b)
		return;
	double *v = put(b, STRB_REC_COUNTER, 0, name, sizeof(double), NOT_A_PUSH);
	if (!v)
		return;
	*v = value;
	strb_tbuf_publish(b);
}

/* Pushes a backend took over on this thread, per kind: their pops must
 * reach it too, also after the trace ended, or its stack keeps a stale id. */
static __thread uint32_t forwarded[2];

static void corr(uint8_t kind, uint32_t which, const uint64_t *id)
{
	struct strb_tbuf *b = strb_tbuf_current();
	if (b) {
		uint64_t *p = put(b, kind, which, NULL, id ? sizeof(uint64_t) : 0, NOT_A_PUSH);
		if (p) {
			if (id)
				*p = *id;
			strb_tbuf_publish(b);
		}
	}
	if (id) {
		if (b && strb_capture_notify_correlation(which, id))
			forwarded[which]++;
	} else if (forwarded[which]) {
		forwarded[which]--;
		strb_capture_notify_correlation(which, NULL);
	}
}

void strobe_correlation_push(uint64_t id)
{
	corr(STRB_REC_CORR_PUSH, 0, &id);
}

void strobe_correlation_pop(void)
{
	corr(STRB_REC_CORR_POP, 0, NULL);
}

void strobe_user_correlation_push(uint64_t id)
{
	corr(STRB_REC_CORR_PUSH, 1, &id);
}

void strobe_user_correlation_pop(void)
{
	corr(STRB_REC_CORR_POP, 1, NULL);
}

_Atomic int64_t strb_epoch_anchor;
static _Atomic(strb_correlation_hook) correlation_hook;

void strb_capture_set_correlation_hook(strb_correlation_hook hook)
{
	atomic_store(&correlation_hook, hook);
}

bool strb_capture_notify_correlation(uint32_t which, const uint64_t *id)
{
	strb_correlation_hook hook = atomic_load_explicit(&correlation_hook, memory_order_acquire);
	return hook && hook(which, id);
}

uint64_t strobe_now_ns(void)
{
	int64_t anchor = atomic_load_explicit(&strb_epoch_anchor, memory_order_relaxed);
	if (anchor)
		return (uint64_t)(strb_clock_mono_ns() + anchor);
	return (uint64_t)strb_clock_real_ns();
}

int strobe_thread_set_name(const char *name)
{
	if (!name)
		return strb_error(-EINVAL, "strobe_thread_set_name: name is NULL");
	return strb_thread_name_set(name);
}

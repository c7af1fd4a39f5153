/* A byte buffer for writing JSON text quickly: integers, exact
 * microsecond timestamps, shortest round-trip doubles and fully escaped
 * strings, flushed to a sink in large chunks. */
#ifndef STROBE_COMMON_JBUF_H
#define STROBE_COMMON_JBUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/sink.h"

#define STRB_JBUF_SIZE (1 << 20)

struct strb_jbuf {
	struct strb_sink *sink;
	size_t n;
	int err;
	size_t flushes; /* how many times data was written out: text from before one has moved */
	/* With no sink, flushes append here instead (grown as needed; -ENOMEM
	 * in err when it cannot be); the owner frees mem. */
	char *mem;
	size_t mem_len, mem_cap;
	char data[STRB_JBUF_SIZE];
};

/* A new, empty buffer writing to sink, or to memory when sink is NULL
 * (freed with free(), mem too), or NULL. */
struct strb_jbuf *strb_jbuf_new(struct strb_sink *sink);
/* Writes out what is buffered; keeps the first error. */
void strb_jbuf_flush(struct strb_jbuf *b);

/* Makes room for n more bytes (n <= STRB_JBUF_SIZE / 2). */
static inline char *strb_jbuf_room(struct strb_jbuf *b, size_t n)
{
	if (b->n + n > STRB_JBUF_SIZE)
		strb_jbuf_flush(b);
	return b->data + b->n;
}

void strb_jbuf_raw_slow(struct strb_jbuf *b, const char *s, size_t n);

static inline void strb_jbuf_raw(struct strb_jbuf *b, const char *s, size_t n)
{
	if (__builtin_expect(b->n + n <= STRB_JBUF_SIZE, 1)) {
		memcpy(b->data + b->n, s, n);
		b->n += n;
		return;
	}
	strb_jbuf_raw_slow(b, s, n);
}

/* strlen of a literal folds at compile time once this is inlined. */
static inline void strb_jbuf_lit(struct strb_jbuf *b, const char *s)
{
	strb_jbuf_raw(b, s, strlen(s));
}

void strb_jbuf_i64(struct strb_jbuf *b, int64_t v);
void strb_jbuf_u64(struct strb_jbuf *b, uint64_t v);
/* Shortest text that reads back as the same double; non-finite values are
 * written as the strings "inf", "-inf", "nan" (JSON has no such numbers). */
void strb_jbuf_f64(struct strb_jbuf *b, double v);
/* ns as µs with exactly three decimals ("12.345"); negative clamps to 0. */
void strb_jbuf_us(struct strb_jbuf *b, int64_t ns);
/* A JSON string: quotes, escapes for '"', '\\' and control bytes, and
 * U+FFFD for each byte that is not part of valid UTF-8. */
void strb_jbuf_str(struct strb_jbuf *b, const char *s);

#endif

#include "common/jbuf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct strb_jbuf *strb_jbuf_new(struct strb_sink *sink)
{
	struct strb_jbuf *b = malloc(sizeof(*b));
	if (b) {
		b->sink = sink;
		b->n = 0;
		b->err = 0;
		b->mem = NULL;
		b->mem_len = b->mem_cap = 0;
	}
	return b;
}

static int to_mem(struct strb_jbuf *b)
{
	if (b->mem_len + b->n > b->mem_cap) {
		size_t cap = b->mem_cap ? b->mem_cap : STRB_JBUF_SIZE;
		while (cap < b->mem_len + b->n)
			cap *= 2;
		char *m = realloc(b->mem, cap);
		if (!m)
			return -ENOMEM;
		b->mem = m;
		b->mem_cap = cap;
	}
	memcpy(b->mem + b->mem_len, b->data, b->n);
	b->mem_len += b->n;
	return 0;
}

void strb_jbuf_flush(struct strb_jbuf *b)
{
	if (b->n && !b->err)
		b->err = b->sink ? strb_sink_write(b->sink, b->data, b->n) : to_mem(b);
	b->n = 0;
	b->flushes++;
}

void strb_jbuf_raw_slow(struct strb_jbuf *b, const char *s, size_t n)
{
	while (n) {
		size_t room = STRB_JBUF_SIZE - b->n;
		if (!room) {
			strb_jbuf_flush(b);
			room = STRB_JBUF_SIZE;
		}
		size_t part = n < room ? n : room;
		memcpy(b->data + b->n, s, part);
		b->n += part;
		s += part;
		n -= part;
	}
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* Digits of v: from its bit length (1233 / 4096 is just under log10 2),
 * then one compare. */
static size_t digits10(uint64_t v)
{
	static const uint64_t pow10[20] = {1ull,
	                                   10ull,
	                                   100ull,
	                                   1000ull,
	                                   10000ull,
	                                   100000ull,
	                                   1000000ull,
	                                   10000000ull,
	                                   100000000ull,
	                                   1000000000ull,
	                                   10000000000ull,
	                                   100000000000ull,
	                                   1000000000000ull,
	                                   10000000000000ull,
	                                   100000000000000ull,
	                                   1000000000000000ull,
	                                   10000000000000000ull,
	                                   100000000000000000ull,
	                                   1000000000000000000ull,
	                                   10000000000000000000ull};
	unsigned t = ((unsigned)(64 - __builtin_clzll(v | 1)) * 1233) >> 12;
	size_t n = t + (v >= pow10[t]);
	return n ? n : 1;
}

/* Writes v's digits straight into place, two per division from the end
 * (timestamps have 13 or more). */
static size_t fmt_u64(char *out, uint64_t v)
{
	size_t n = digits10(v);
	char *p = out + n;
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100);
		v /= 100;
		p -= 2;
		memcpy(p, digit_pairs + 2 * d, 2);
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, digit_pairs + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
	return n;
}

void strb_jbuf_u64(struct strb_jbuf *b, uint64_t v)
{
	char *p = strb_jbuf_room(b, 24);
	b->n += fmt_u64(p, v);
}

void strb_jbuf_i64(struct strb_jbuf *b, int64_t v)
{
	char *p = strb_jbuf_room(b, 24);
	if (v < 0) {
		*p++ = '-';
		b->n++;
		b->n += fmt_u64(p, (uint64_t)0 - (uint64_t)v);
	} else {
		b->n += fmt_u64(p, (uint64_t)v);
	}
}

void strb_jbuf_us(struct strb_jbuf *b, int64_t ns)
{
	if (ns < 0)
		ns = 0;
	char *p = strb_jbuf_room(b, 32);
	size_t n = fmt_u64(p, (uint64_t)ns / 1000);
	unsigned frac = (unsigned)((uint64_t)ns % 1000);
	p[n++] = '.';
	p[n++] = (char)('0' + frac / 100);
	p[n++] = (char)('0' + frac / 10 % 10);
	p[n++] = (char)('0' + frac % 10);
	b->n += n;
}

void strb_jbuf_f64(struct strb_jbuf *b, double v)
{
	if (!isfinite(v)) {
		strb_jbuf_lit(b, isnan(v) ? "\"nan\"" : v > 0 ? "\"inf\"" : "\"-inf\"");
		return;
	}
	if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
		strb_jbuf_i64(b, (int64_t)v);
		return;
	}
	char *p = strb_jbuf_room(b, 32);
	int n = 0;
	for (int prec = 15; prec <= 17; prec++) {
		n = snprintf(p, 32, "%.*g", prec, v);
		if (strtod(p, NULL) == v)
			break;
	}
	b->n += (size_t)n;
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned c = s[0];
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f)) /* overlong, surrogate */
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f))
			return 0;
		return 4;
	}
	return 0;
}

void strb_jbuf_str(struct strb_jbuf *b, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	/* Fast path: short plain ASCII (most names and every key) goes in one
	 * pass straight into the buffer. */
	char *d = strb_jbuf_room(b, 258);
	char *start = d;
	*d++ = '"';
	const unsigned char *q = s;
	while (*q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\' && d - start < 256)
		*d++ = (char)*q++;
	if (!*q) {
		*d++ = '"';
		b->n += (size_t)(d - start);
		return;
	}
	strb_jbuf_raw(b, "\"", 1);
	for (;;) {
		/* Copy the run of bytes that need nothing. */
		const unsigned char *run = s;
		while (*s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\')
			s++;
		if (s > run)
			strb_jbuf_raw(b, (const char *)run, (size_t)(s - run));
		if (!*s)
			break;
		char *p = strb_jbuf_room(b, 8);
		unsigned c = *s;
		if (c == '"' || c == '\\') {
			p[0] = '\\';
			p[1] = (char)c;
			b->n += 2;
			s++;
		} else if (c < 0x20) {
			const char *esc = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
			if (esc) {
				memcpy(p, esc, 2);
				b->n += 2;
			} else {
				memcpy(p, "\\u00", 4);
				p[4] = hex[c >> 4];
				p[5] = hex[c & 15];
				b->n += 6;
			}
			s++;
		} else {
			size_t len = utf8_len(s);
			if (len) {
				memcpy(p, s, len);
				b->n += len;
				s += len;
			} else {
				memcpy(p, "\\ufffd", 6);
				b->n += 6;
				s++;
			}
		}
	}
	strb_jbuf_raw(b, "\"", 1);
}

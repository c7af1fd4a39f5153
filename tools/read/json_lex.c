#include "read/json_lex.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* What the grammar allows next. */
enum need { N_VALUE, N_VALUE_OR_CLOSE, N_KEY, N_KEY_OR_CLOSE, N_COLON, N_COMMA_OR_CLOSE, N_END };

/* A token's scan: complete, or it runs past the text in hand. */
enum scan { S_OK, S_MORE, S_BAD };

struct jl {
	const unsigned char *e; /* end of the window */
	uint64_t base;          /* offset of the window's first byte */
	const unsigned char *w; /* the window's first byte */
	bool eof;
	const unsigned char *rest; /* what the window has not taken of the last piece */
	size_t rest_n;
	unsigned char *own; /* a window made of a carried token and the next piece */
	size_t own_cap;
	char *dec; /* a string with escapes, decoded */
	size_t dec_cap;
	jl_next_cb next;
	jl_token_cb token;
	jl_object_cb object;
	void *arg;
	int depth;
	unsigned char stack[JL_DEPTH_MAX];
};

static bool grow(unsigned char **buf, size_t *cap, size_t want)
{
	if (want <= *cap)
		return true;
	size_t c = *cap ? *cap : 4096;
	while (c < want)
		c *= 2;
	unsigned char *n = realloc(*buf, c);
	if (!n)
		return false;
	*buf = n;
	*cap = c;
	return true;
}

/* Keeps [p, e) and goes on with the next piece: the window becomes the
 * piece itself when nothing is kept, else the kept bytes and as much of the
 * piece again (the rest of it follows once they are read). *pp moves with
 * the kept bytes. */
static int more(struct jl *j, const unsigned char **pp)
{
	const unsigned char *p = *pp;
	size_t keep = (size_t)(j->e - p);
	uint64_t at = j->base + (uint64_t)(p - j->w);
	if (keep >= JL_TOKEN_MAX)
		return JL_GIVE_UP; /* a token that long is the second pass's to judge */
	if (keep && p != j->own) {
		if (!grow(&j->own, &j->own_cap, keep))
			return -ENOMEM;
		memmove(j->own, p, keep);
	}
	if (!j->rest_n) {
		int rc = j->next(j->arg, &j->rest, &j->rest_n);
		if (rc)
			return rc;
		j->eof = !j->rest_n;
	}
	static const unsigned char none[1];
	if (!keep && !j->rest_n) {
		j->w = j->e = none; /* the end */
	} else if (!keep) {
		j->w = j->rest;
		j->e = j->rest + j->rest_n;
		j->rest_n = 0;
	} else {
		size_t take = keep > 4096 ? keep : 4096;
		take = take < j->rest_n ? take : j->rest_n;
		if (!grow(&j->own, &j->own_cap, keep + take))
			return -ENOMEM;
		if (take) {
			memcpy(j->own + keep, j->rest, take);
			j->rest += take;
			j->rest_n -= take;
		}
		j->w = j->own;
		j->e = j->own + keep + take;
	}
	j->base = at;
	*pp = j->w;
	return 0;
}

static int hex(unsigned char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
	                              : -1;
}

/* A multibyte character of well-formed UTF-8 (RFC 3629) at p: its length,
 * 0 when malformed, -1 when it runs past e. */
static int utf8_len(const unsigned char *p, const unsigned char *e)
{
	unsigned c = p[0];
	int n;
	unsigned lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (e - p < n)
		return -1;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* A string from the quote at p: *end at its closing quote, *esc whether it
 * holds escapes. */
static enum scan scan_string(const unsigned char *p, const unsigned char *e, const unsigned char **end,
                             bool *esc)
{
	const unsigned char *q = p + 1;
	*esc = false;
	for (;;) {
		q = jl_plain_run(q, e);
		if (q - p >= JL_TOKEN_MAX)
			return S_BAD;
		if (q == e)
			return S_MORE;
		if (*q == '"')
			break;
		if (*q == '\\') {
			*esc = true;
			if (e - q < 2)
				return S_MORE;
			if (q[1] == 'u') {
				if (e - q < 6)
					return S_MORE;
				int v = 0;
				for (int i = 2; i < 6; i++) {
					int h = hex(q[i]);
					if (h < 0)
						return S_BAD;
					v = v << 4 | h;
				}
				if (v >= 0xd800 && v <= 0xdfff)
					return S_BAD; /* surrogates: yajl's own rules, in the second pass */
				q += 6;
			} else if (q[1] && strchr("\"\\/bfnrt", q[1])) {
				q += 2;
			} else {
				return S_BAD;
			}
		} else if (*q < 0x20) {
			return S_BAD;
		} else {
			int n = utf8_len(q, e);
			if (n < 0)
				return S_MORE;
			if (!n)
				return S_BAD;
			q += n;
		}
	}
	*end = q;
	return S_OK;
}

/* The string between s and its closing quote e, escapes decoded as yajl
 * decodes them (\u0000 gives a NUL byte), into j->dec. */
static int decode(struct jl *j, const unsigned char *s, const unsigned char *e, size_t *len)
{
	if (!grow((unsigned char **)&j->dec, &j->dec_cap, (size_t)(e - s)))
		return -ENOMEM;
	char *o = j->dec;
	while (s < e) {
		if (*s != '\\') {
			*o++ = (char)*s++;
			continue;
		}
		char c = (char)s[1];
		s += 2;
		switch (c) {
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u': {
			unsigned v =
			    (unsigned)(hex(s[0]) << 12 | hex(s[1]) << 8 | hex(s[2]) << 4 | hex(s[3]));
			s += 4;
			if (v < 0x80) {
				*o++ = (char)v;
			} else if (v < 0x800) {
				*o++ = (char)(0xc0 | v >> 6);
				*o++ = (char)(0x80 | (v & 0x3f));
			} else {
				*o++ = (char)(0xe0 | v >> 12);
				*o++ = (char)(0x80 | ((v >> 6) & 0x3f));
				*o++ = (char)(0x80 | (v & 0x3f));
			}
			break;
		}
		default: /* " \ / */
			*o++ = c;
			break;
		}
	}
	*len = (size_t)(o - j->dec);
	return 0;
}

static bool digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* Moves *p past one digit or more; false when there is none. */
static bool digits(const unsigned char **p, const unsigned char *e)
{
	const unsigned char *q = *p;
	while (q < e && digit(*q))
		q++;
	bool any = q > *p;
	*p = q;
	return any;
}

static bool number_byte(unsigned char c)
{
	return digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* A number from p: the run of bytes a number may hold must be one JSON
 * number (a run that is not gives up, where yajl would take its start as
 * a number and fail after it). One pass: the grammar as far as it goes,
 * then the rest of the run. *end just past it. */
static enum scan scan_number(const unsigned char *p, const unsigned char *e, bool eof,
                             const unsigned char **end)
{
	const unsigned char *q = p + (*p == '-');
	bool ok = true;
	if (q < e && *q == '0')
		q++;
	else
		ok = digits(&q, e);
	if (ok && q < e && *q == '.')
		q++, ok = digits(&q, e);
	if (ok && q < e && (*q == 'e' || *q == 'E')) {
		q++;
		q += q < e && (*q == '+' || *q == '-');
		ok = digits(&q, e);
	}
	const unsigned char *grammar = q;
	while (q < e && number_byte(*q))
		q++;
	if (q - p > JL_NUMBER_MAX)
		return S_BAD;
	if (q == e && !eof)
		return S_MORE;
	*end = q;
	return ok && grammar == q ? S_OK : S_BAD;
}

static bool blank(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static int run(struct jl *j)
{
	const unsigned char *p = j->w;
	enum need need = N_VALUE;
	int rc = 0;
	for (;;) {
		while (p < j->e && blank(*p))
			p++;
		if (p == j->e) {
			if (j->eof)
				return need == N_END ? 0 : JL_GIVE_UP;
			if ((rc = more(j, &p)))
				return rc;
			continue;
		}
		unsigned char c = *p;
		const unsigned char *end = p + 1;
		enum jl_tok t;
		const char *s = NULL;
		size_t len = 0;
		bool value = true, close = false;
		switch (c) {
		case '{':
			if (j->object && (need == N_VALUE || need == N_VALUE_OR_CLOSE) &&
			    j->depth < JL_DEPTH_MAX) {
				int stop = 0;
				size_t took =
				    j->object(j->arg, p, j->e, j->base + (uint64_t)(p - j->w), &stop);
				if (took) {
					p += took;
					need = j->depth ? N_COMMA_OR_CLOSE : N_END;
					if (stop)
						return stop;
					continue;
				}
			}
			/* fall through */
		case '[':
			if ((need != N_VALUE && need != N_VALUE_OR_CLOSE) || j->depth == JL_DEPTH_MAX)
				return JL_GIVE_UP;
			j->stack[j->depth++] = c;
			t = c == '{' ? JL_START_MAP : JL_START_ARRAY;
			value = false;
			break;
		case '}':
		case ']':
			if (!j->depth || j->stack[j->depth - 1] != (c == '}' ? '{' : '['))
				return JL_GIVE_UP;
			if (need != N_COMMA_OR_CLOSE &&
			    need != (c == '}' ? N_KEY_OR_CLOSE : N_VALUE_OR_CLOSE))
				return JL_GIVE_UP;
			j->depth--;
			t = c == '}' ? JL_END_MAP : JL_END_ARRAY;
			close = true;
			break;
		case ',':
			if (need != N_COMMA_OR_CLOSE)
				return JL_GIVE_UP;
			need = j->stack[j->depth - 1] == '{' ? N_KEY : N_VALUE;
			p++;
			continue;
		case ':':
			if (need != N_COLON)
				return JL_GIVE_UP;
			need = N_VALUE;
			p++;
			continue;
		case '"': {
			bool key = need == N_KEY || need == N_KEY_OR_CLOSE;
			if (!key && need != N_VALUE && need != N_VALUE_OR_CLOSE)
				return JL_GIVE_UP;
			bool esc;
			const unsigned char *q;
			enum scan sc = scan_string(p, j->e, &q, &esc);
			if (sc == S_BAD || (sc == S_MORE && j->eof))
				return JL_GIVE_UP;
			if (sc == S_MORE) {
				if ((rc = more(j, &p)))
					return rc;
				continue;
			}
			if (esc) {
				if ((rc = decode(j, p + 1, q, &len)))
					return rc;
				s = j->dec;
			} else {
				s = (const char *)p + 1;
				len = (size_t)(q - p - 1);
			}
			end = q + 1;
			t = key ? JL_KEY : JL_STRING;
			value = !key;
			if (key)
				need = N_COLON;
			break;
		}
		case 't':
		case 'f':
		case 'n': {
			if (need != N_VALUE && need != N_VALUE_OR_CLOSE)
				return JL_GIVE_UP;
			const char *word = c == 't' ? "true" : c == 'f' ? "false" : "null";
			size_t wl = strlen(word);
			if ((size_t)(j->e - p) < wl && !j->eof) {
				if ((rc = more(j, &p)))
					return rc;
				continue;
			}
			if ((size_t)(j->e - p) < wl || memcmp(p, word, wl))
				return JL_GIVE_UP;
			end = p + wl;
			t = c == 'n' ? JL_NULL : JL_BOOL;
			len = c == 't';
			break;
		}
		default: {
			if (c != '-' && !(c >= '0' && c <= '9'))
				return JL_GIVE_UP;
			if (need != N_VALUE && need != N_VALUE_OR_CLOSE)
				return JL_GIVE_UP;
			enum scan sc = scan_number(p, j->e, j->eof, &end);
			if (sc == S_BAD)
				return JL_GIVE_UP;
			if (sc == S_MORE) {
				if ((rc = more(j, &p)))
					return rc;
				continue;
			}
			t = JL_NUMBER;
			s = (const char *)p;
			len = (size_t)(end - p);
			break;
		}
		}
		if (t == JL_START_MAP)
			need = N_KEY_OR_CLOSE;
		else if (t == JL_START_ARRAY)
			need = N_VALUE_OR_CLOSE;
		else if (value || close)
			need = j->depth ? N_COMMA_OR_CLOSE : N_END;
		if ((rc = j->token(j->arg, t, s, len, s && s == j->dec, j->base + (uint64_t)(end - j->w))))
			return rc;
		p = end;
	}
}

const unsigned char *jl_number_end(const unsigned char *p, const unsigned char *e)
{
	const unsigned char *end;
	return scan_number(p, e, false, &end) == S_OK ? end : NULL;
}

int jl_run(const unsigned char *first, size_t n, uint64_t base, jl_next_cb next, jl_token_cb token,
           jl_object_cb object, void *user_arg)
{
	struct jl *j = malloc(sizeof(*j));
	if (!j)
		return -ENOMEM;
	*j = (struct jl){.w = first,
	                 .e = first + n,
	                 .base = base,
	                 .next = next,
	                 .token = token,
	                 .object = object,
	                 .arg = user_arg};
	int rc = run(j);
	free(j->own);
	free(j->dec);
	free(j);
	return rc;
}

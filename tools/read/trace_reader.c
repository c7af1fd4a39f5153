#include "read/trace_reader.h"
#include "read/json_lex.h"
#include "read/perfetto_reader.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>
#include <zstd.h>

/* What the fast tokenizer takes, the repair pass takes unchanged. */
_Static_assert(JL_TOKEN_MAX <= TR_STRING_MAX && JL_NUMBER_MAX <= TR_WORD_MAX, "json_lex.h's limits");

/* Both the raw read size and the decompressed chunk handed to yajl. */
#define CHUNK (256u * 1024u)

enum field { F_OTHER, F_PH, F_CAT, F_NAME, F_PID, F_TID, F_ID, F_TS, F_DUR, F_ARGS };

/* The longest look past a quote or into a bare word before deciding. */
#define LOOKAHEAD 1024
#define FIX_DEPTH 1024

/* How the repair pass maps its output back to the input's bytes: from
 * output byte `at` of the chunk on, input offset = output offset - shift
 * (bytes inserted minus bytes left out before it). */
struct fix_adj {
	uint32_t at;
	int64_t shift;
};

/* The repair pass between decompression and yajl: libkineto writes args
 * strings with their inner quotes unescaped, and non-finite numbers bare
 * (nan, inf). Valid JSON passes through unchanged. */
struct fix {
	char *out; /* repaired text of one chunk */
	size_t out_cap;
	char *work; /* the carry plus the next chunk */
	size_t work_cap;
	char *carry; /* input not yet decided, at most LOOKAHEAD + 64 bytes */
	size_t ncarry;
	struct fix_adj *adj; /* where the repair inserted or left out bytes, in order */
	size_t nadj, adj_cap;
	int64_t shift; /* the chunk's bytes inserted minus bytes left out so far */
	bool in_str, esc, str_is_key, expect_key;
	bool skip;      /* past TR_STRING_MAX: the rest of the string is left out */
	unsigned uhex;  /* hex digits of a \u escape still to come */
	uint64_t slen;  /* bytes of the current string written so far */
	char key[8];    /* the first bytes of the current key, to spot "args" */
	bool key_args;  /* the last key was "args" and its value is next */
	int args_depth; /* depth of the innermost "args" object, 0 outside one */
	uint64_t word;  /* bytes of the current number or bare word */
	int depth;
	char stack[FIX_DEPTH]; /* '{' or '[' per open container */
};

/* Where a value that the reader keeps as JSON text is going. */
enum cap_target { CAP_NONE, CAP_DISCARD, CAP_PAIR, CAP_MEMBER };

struct capture {
	enum cap_target target;
	int depth; /* containers open inside the captured value */
	char *buf;
	size_t len, cap, limit;
	bool cut;
	struct tr_pair *pair;
};

struct reader {
	const char *label;
	const struct tr_handler *h;
	struct tr_stats *stats;
	char *err;
	size_t errlen;
	int status;  /* our own failure, set with the message */
	int user_rc; /* a callback's request to stop */

	/* input */
	FILE *f;
	unsigned char *in;
	const unsigned char *next;
	size_t avail;
	bool eof;
	bool rewindable;               /* a regular file or memory: the text can be read again */
	off_t f_start;                 /* where the stream stood when the read began */
	const struct tr_piece *pieces; /* tr_read_memory's buffer, or tr_read_pieces' */
	size_t npieces, piece;         /* pieces, and the next one to read from */
	size_t piece_done;             /* bytes of that piece read, when it is in a file */
	bool file_pieces;              /* some are: they are read through in */
	uint64_t mem_bytes;            /* the bytes of the pieces in memory (those in a file count as read) */
	z_stream zs;
	bool zs_live, gz_member_done;
	ZSTD_DStream *zd;
	size_t zret;
	unsigned char *out;

	/* JSON */
	yajl_handle yh;
	yajl_gen gen;
	uint64_t json_base; /* JSON bytes before the chunk being parsed */
	struct fix fix;
	size_t chunk_len; /* bytes of repaired text handed to yajl in this chunk */
	int root;         /* 0 until the top-level value opens, then '{' or '[' */
	int depth;        /* containers open, not counting captured values */
	int events_depth; /* depth inside traceEvents, 0 when outside */
	bool seen_events;
	char key[TR_SHORT_MAX];
	size_t key_len; /* strlen(key) */
	bool no_nul;    /* the token being handled holds no NUL (it had no escape) */
	enum field field;
	struct tr_event *ev;
	bool in_event;
	struct capture cap;
	char *mbuf; /* grows up to TR_MEMBER_MAX for top-level members */
	size_t mbuf_cap;

	/* The fast tokenizer (json_lex.h), tried first. A top-level member is
	 * handed over only once the next member's key and colon (or the
	 * closing brace) are read, as the repair pass would decide its closing
	 * quote there; until then it waits here. */
	bool fast;
	uint64_t fast_end; /* the JSON offset just past the token being handled */
	bool pending;
	char pending_key[TR_SHORT_MAX];
	size_t pending_len;
	bool pending_cut;
	uint64_t members;    /* top-level members handed over */
	bool member_stopped; /* a member callback stopped the fast read */
	bool input_failed;   /* reading or decompressing failed during the fast read */
	/* After the fast tokenizer gave up: what it handed over already, which
	 * the second read does not hand over again; and when a member
	 * callback stopped the first read, its value: the second read stops
	 * at that member with it (handing the member over later, the first
	 * read had read further, so only the second one's statistics are
	 * those of a read stopped there). */
	uint64_t skip_events, skip_members;
	int replay_rc;
};

static int fail(struct reader *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(struct reader *r, int status, const char *fmt, ...)
{
	if (!r->status) {
		r->status = status;
		if (r->errlen) {
			int n = snprintf(r->err, r->errlen, "%s: ", r->label);
			if (n >= 0 && (size_t)n < r->errlen) {
				va_list ap;
				va_start(ap, fmt);
				vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
				va_end(ap);
			}
		}
	}
	return r->status;
}

/* ---- input ----------------------------------------------------------- */

/* refill for text in pieces: the next bytes of the current piece, or of
 * the next one that holds any. */
static int next_piece(struct reader *r)
{
	while (r->piece < r->npieces) {
		const struct tr_piece *pc = &r->pieces[r->piece];
		if (pc->data) {
			r->next = pc->data;
			r->avail = pc->len;
			r->piece++;
		} else {
			size_t want = pc->len - r->piece_done;
			want = want < CHUNK ? want : CHUNK;
			ssize_t got =
			    want ? pread(pc->fd, r->in, want, (off_t)(pc->offset + r->piece_done)) : 0;
			if (got < 0 && errno == EINTR)
				continue;
			if (got < 0 || (want && !got)) {
				int e = got < 0 ? errno : EIO;
				return fail(r, -e, "cannot read: %s",
				            got < 0 ? strerror(e) : "the file is shorter than it was");
			}
			r->piece_done += (size_t)got;
			r->stats->file_bytes += (size_t)got;
			if (r->piece_done == pc->len) {
				r->piece++;
				r->piece_done = 0;
			}
			r->next = r->in;
			r->avail = (size_t)got;
		}
		if (r->avail)
			break;
	}
	r->eof = r->piece == r->npieces;
	return 0;
}

static int refill(struct reader *r)
{
	if (r->avail || r->eof)
		return 0;
	if (!r->f)
		return next_piece(r);
	size_t n = fread(r->in, 1, CHUNK, r->f);
	if (n < CHUNK) {
		if (ferror(r->f)) {
			int e = errno ? errno : EIO;
			return fail(r, -e, "cannot read: %s", strerror(e));
		}
		r->eof = true;
	}
	r->next = r->in;
	r->avail = n;
	r->stats->file_bytes += n;
	return 0;
}

static uint64_t raw_offset(const struct reader *r)
{
	return r->stats->file_bytes - r->avail;
}

static int truncated_stream(struct reader *r, const char *what)
{
	return fail(r, -EBADMSG, "the %s stream ends early, at compressed byte %llu (truncated file?)", what,
	            (unsigned long long)r->stats->file_bytes);
}

static int next_gzip(struct reader *r, const unsigned char **p, size_t *n)
{
	for (;;) {
		int rc = refill(r);
		if (rc)
			return rc;
		if (r->gz_member_done) {
			if (!r->avail)
				return 0;
			/* gzip allows concatenated members; each one is a new stream. */
			inflateReset(&r->zs);
			r->gz_member_done = false;
		}
		r->zs.next_in = (Bytef *)r->next;
		r->zs.avail_in = (uInt)r->avail;
		r->zs.next_out = r->out;
		r->zs.avail_out = CHUNK;
		rc = inflate(&r->zs, Z_NO_FLUSH);
		r->next += r->avail - r->zs.avail_in;
		r->avail = r->zs.avail_in;
		*n = CHUNK - r->zs.avail_out;
		*p = r->out;
		if (rc == Z_STREAM_END)
			r->gz_member_done = true;
		else if (rc != Z_OK && rc != Z_BUF_ERROR)
			return fail(r, -EBADMSG, "corrupt gzip data near compressed byte %llu: %s",
			            (unsigned long long)raw_offset(r),
			            r->zs.msg ? r->zs.msg : "inflate failed");
		if (*n)
			return 0;
		if (!r->avail && r->eof)
			return r->gz_member_done ? 0 : truncated_stream(r, "gzip");
	}
}

static int next_zstd(struct reader *r, const unsigned char **p, size_t *n)
{
	for (;;) {
		int rc = refill(r);
		if (rc)
			return rc;
		/* Past a finished frame, another call would start waiting for a new one. */
		if (!r->avail && r->eof && r->zret == 0)
			return 0;
		ZSTD_inBuffer ib = {r->next, r->avail, 0};
		ZSTD_outBuffer ob = {r->out, CHUNK, 0};
		size_t zr = ZSTD_decompressStream(r->zd, &ob, &ib);
		if (ZSTD_isError(zr))
			return fail(r, -EBADMSG, "corrupt zstd data near compressed byte %llu: %s",
			            (unsigned long long)raw_offset(r), ZSTD_getErrorName(zr));
		r->next += ib.pos;
		r->avail -= ib.pos;
		r->zret = zr;
		*p = r->out;
		*n = ob.pos;
		if (*n)
			return 0;
		if (!r->avail && r->eof)
			return zr == 0 ? 0 : truncated_stream(r, "zstd");
	}
}

/* The next piece of JSON text; *n == 0 at the end. */
static int next_text(struct reader *r, const unsigned char **p, size_t *n)
{
	*n = 0;
	switch (r->stats->compression) {
	case TR_GZIP:
		return next_gzip(r, p, n);
	case TR_ZSTD:
		return next_zstd(r, p, n);
	case TR_PLAIN:
		break;
	}
	int rc = refill(r);
	if (rc)
		return rc;
	*p = r->next;
	*n = r->avail;
	r->next += r->avail;
	r->avail = 0;
	return 0;
}

static int detect_compression(struct reader *r)
{
	int rc = refill(r);
	if (rc)
		return rc;
	const unsigned char *m = r->next;
	if (r->avail >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
		r->stats->compression = TR_GZIP;
		if (inflateInit2(&r->zs, 15 + 16) != Z_OK)
			return fail(r, -ENOMEM, "cannot start gzip decompression");
		r->zs_live = true;
	} else if (r->avail >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
		r->stats->compression = TR_ZSTD;
		r->zd = ZSTD_createDStream();
		if (!r->zd)
			return fail(r, -ENOMEM, "cannot start zstd decompression");
		r->zret = 1;
	} else {
		return 0;
	}
	r->out = malloc(CHUNK);
	return r->out ? 0 : fail(r, -ENOMEM, "out of memory");
}

/* ---- values kept as JSON text ------------------------------------------ */

static void note_cut(struct reader *r)
{
	r->stats->truncated++;
	if (r->in_event)
		r->ev->truncated++;
}

/* Copies a string, cutting it at a character boundary if it does not fit.
 * Returns whether it was cut. */
bool tr_copy_text(char *dst, size_t cap, const char *s, size_t len)
{
	bool cut = len >= cap;
	if (cut) {
		len = cap - 1;
		while (len && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	memcpy(dst, s, len);
	dst[len] = 0;
	return cut;
}

/* A decoded JSON string into dst (cap bytes with the NUL), cut like
 * tr_copy_text. A NUL in it (from \u0000) becomes U+FFFD, so the C string
 * keeps the whole text and whatever is written from it stays valid. */
static bool copy_json_str(char *dst, size_t cap, const char *s, size_t len)
{
	if (!memchr(s, 0, len))
		return tr_copy_text(dst, cap, s, len);
	size_t o = 0, i = 0;
	for (; i < len; i++) {
		size_t k = s[i] ? 1 : 3;
		if (o + k > cap - 1)
			break;
		if (s[i])
			dst[o] = s[i];
		else
			memcpy(dst + o, "\xef\xbf\xbd", 3);
		o += k;
	}
	/* Cut inside a character: back to where it starts (its bytes were copied one for one). */
	for (; i < len && i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80; i--)
		o--;
	dst[o] = 0;
	return i < len;
}

/* Returns the length copied. */
static size_t copy_str(struct reader *r, char *dst, size_t cap, const char *s, size_t len)
{
	if (r->no_nul && len < cap) {
		memcpy(dst, s, len); /* the common case: nothing to cut or replace */
		dst[len] = 0;
		return len;
	}
	if (r->no_nul ? tr_copy_text(dst, cap, s, len) : copy_json_str(dst, cap, s, len))
		note_cut(r);
	return strlen(dst);
}

static void cap_print(void *ctx, const char *s, size_t len)
{
	struct reader *r = ctx;
	struct capture *c = &r->cap;
	if (c->cut)
		return;
	if (c->target == CAP_MEMBER && c->len + len >= c->cap && c->cap < c->limit) {
		size_t want = c->cap ? c->cap : 4096;
		while (want <= c->len + len && want < c->limit)
			want *= 2;
		if (want > c->limit)
			want = c->limit;
		char *nb = realloc(r->mbuf, want);
		if (nb) {
			r->mbuf = c->buf = nb;
			r->mbuf_cap = c->cap = want;
		}
	}
	size_t room = c->cap - 1 - c->len;
	if (len > room) {
		len = room;
		c->cut = true;
	}
	memcpy(c->buf + c->len, s, len);
	c->len += len;
}

static int cap_begin(struct reader *r, enum cap_target target, struct tr_pair *pair)
{
	struct capture *c = &r->cap;
	*c = (struct capture){.target = target, .pair = pair};
	if (target == CAP_PAIR) {
		c->buf = pair->value;
		c->cap = c->limit = sizeof(pair->value);
	} else if (target == CAP_MEMBER) {
		if (!r->mbuf) {
			r->mbuf = malloc(4096);
			if (!r->mbuf)
				return fail(r, -ENOMEM, "out of memory");
			r->mbuf_cap = 4096;
		}
		c->buf = r->mbuf;
		c->cap = r->mbuf_cap;
		c->limit = TR_MEMBER_MAX;
	}
	yajl_gen_reset(r->gen, NULL);
	return 0;
}

/* A top-level member's JSON text to the caller. */
static int hand_member(struct reader *r, const char *key, const char *json, size_t len, bool cut)
{
	r->members++;
	if (r->skip_members) {
		if (!--r->skip_members && r->replay_rc) {
			r->user_rc = r->replay_rc;
			return 0;
		}
		return 1;
	}
	if (r->h->member_cb) {
		int rc = r->h->member_cb(key, json, len, cut, r->h->user_arg);
		if (rc) {
			r->user_rc = rc;
			return 0;
		}
	}
	return 1;
}

static int cap_end(struct reader *r)
{
	struct capture *c = &r->cap;
	enum cap_target target = c->target;
	c->target = CAP_NONE;
	if (target == CAP_DISCARD)
		return 1;
	c->buf[c->len] = 0;
	if (c->cut)
		note_cut(r);
	if (target == CAP_PAIR) {
		c->pair->truncated = c->cut;
		return 1;
	}
	if (r->fast) {
		memcpy(r->pending_key, r->key, r->key_len + 1);
		r->pending_len = c->len;
		r->pending_cut = c->cut;
		r->pending = true;
		return 1;
	}
	return hand_member(r, r->key, c->buf, c->len, c->cut);
}

static int cap_token(struct reader *r, enum jl_tok t, const char *s, size_t len)
{
	struct capture *c = &r->cap;
	if (c->target != CAP_DISCARD && !c->cut) {
		yajl_gen g = r->gen;
		yajl_gen_status st = yajl_gen_status_ok;
		switch (t) {
		case JL_NULL:
			st = yajl_gen_null(g);
			break;
		case JL_BOOL:
			st = yajl_gen_bool(g, (int)len);
			break;
		case JL_NUMBER:
			st = yajl_gen_number(g, s, len);
			break;
		case JL_STRING:
		case JL_KEY:
			st = yajl_gen_string(g, (const unsigned char *)s, len);
			break;
		case JL_START_MAP:
			st = yajl_gen_map_open(g);
			break;
		case JL_END_MAP:
			st = yajl_gen_map_close(g);
			break;
		case JL_START_ARRAY:
			st = yajl_gen_array_open(g);
			break;
		case JL_END_ARRAY:
			st = yajl_gen_array_close(g);
			break;
		}
		/* yajl_gen refuses nesting deeper than it supports; keep the prefix. */
		if (st != yajl_gen_status_ok)
			c->cut = true;
	}
	if (t == JL_START_MAP || t == JL_START_ARRAY)
		c->depth++;
	else if (t == JL_END_MAP || t == JL_END_ARRAY)
		c->depth--;
	return c->depth == 0 ? cap_end(r) : 1;
}

/* A string as yajl_gen_string writes it (yajl 2.1's yajl_string_encode,
 * without escaping '/'): quoted, with \r \n \\ \" \f \b \t and other
 * bytes below 0x20 as \u00XX. */
static void cap_string(struct reader *r, const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t beg = 0;
	cap_print(r, "\"", 1);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch != '\\' && ch != '"')
			continue;
		char esc[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
		const char *named = ch ? strchr("\r\n\\\"\f\b\t", ch) : NULL;
		if (named)
			esc[1] = "rn\\\"fbt"[named - "\r\n\\\"\f\b\t"];
		cap_print(r, s + beg, i - beg);
		cap_print(r, esc, esc[1] == 'u' ? 6 : 2);
		beg = i + 1;
	}
	cap_print(r, s + beg, len - beg);
	cap_print(r, "\"", 1);
}

/* Starts keeping the current value (whose key is r->key) in the next free
 * pair of arr, or drops it when arr is full. */
static int pair_value(struct reader *r, struct tr_pair *arr, unsigned *n, unsigned max, enum jl_tok t,
                      const char *s, size_t len)
{
	int rc;
	if (*n < max && t != JL_START_MAP && t != JL_START_ARRAY) {
		/* A scalar: written as yajl_gen writes one, without its state. */
		struct tr_pair *p = &arr[(*n)++];
		memcpy(p->key, r->key, r->key_len + 1);
		r->cap =
		    (struct capture){.target = CAP_PAIR, .buf = p->value, .cap = sizeof(p->value), .pair = p};
		if (t == JL_STRING)
			cap_string(r, s, len);
		else if (t == JL_NUMBER)
			cap_print(r, s, len);
		else if (t == JL_BOOL)
			cap_print(r, len ? "true" : "false", len ? 4 : 5);
		else
			cap_print(r, "null", 4);
		return cap_end(r);
	}
	if (*n < max) {
		struct tr_pair *p = &arr[(*n)++];
		memcpy(p->key, r->key, r->key_len + 1);
		rc = cap_begin(r, CAP_PAIR, p);
	} else {
		r->stats->dropped++;
		r->ev->dropped++;
		rc = cap_begin(r, CAP_DISCARD, NULL);
	}
	return rc ? 0 : cap_token(r, t, s, len);
}

/* ---- events ------------------------------------------------------------ */

int tr_parse_us(const char *s, size_t len, int64_t *ns)
{
	/* What traces hold: up to 15 digits with up to three decimals, exact in
	 * int64 ns as they stand. */
	uint64_t whole = 0;
	size_t w = 0;
	for (; w < len && w < 15 && s[w] >= '0' && s[w] <= '9'; w++)
		whole = whole * 10 + (uint64_t)(s[w] - '0');
	if (w && w == len) {
		*ns = (int64_t)(whole * 1000);
		return 0;
	}
	if (w && s[w] == '.' && len - w - 1 >= 1 && len - w - 1 <= 3) {
		uint64_t frac = 0;
		size_t f = w + 1;
		for (; f < len && s[f] >= '0' && s[f] <= '9'; f++)
			frac = frac * 10 + (uint64_t)(s[f] - '0');
		if (f == len) {
			static const uint64_t scale[4] = {1000, 100, 10, 1};
			*ns = (int64_t)(whole * 1000 + frac * scale[len - w - 1]);
			return 0;
		}
	}

	size_t i = 0;
	bool neg = i < len && s[i] == '-';
	i += neg;
	size_t int_start = i;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	size_t int_len = i - int_start, frac_start = i, frac_len = 0;
	if (!int_len)
		return -EINVAL;
	if (i < len && s[i] == '.') {
		frac_start = ++i;
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
		frac_len = i - frac_start;
		if (!frac_len)
			return -EINVAL;
	}
	long exp = 0;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		bool eneg = i < len && s[i] == '-';
		if (i < len && (s[i] == '-' || s[i] == '+'))
			i++;
		size_t exp_start = i;
		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			if (exp < 1000000)
				exp = exp * 10 + (s[i] - '0');
		if (i == exp_start)
			return -EINVAL;
		if (eneg)
			exp = -exp;
	}
	if (i != len)
		return -EINVAL;

	/* The value is digits (integer then fraction) × 10^(exp + 3 - frac_len)
	 * ns; keep is how many of those digits lie before the ns point. */
	size_t ndigits = int_len + frac_len;
	long keep = (long)ndigits + exp + 3 - (long)frac_len;
	uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	uint64_t v = 0;
	int round = 0;
	for (long k = 0; k < (long)ndigits && k <= keep; k++) {
		size_t at = (size_t)k < int_len ? int_start + (size_t)k : frac_start + ((size_t)k - int_len);
		int d = s[at] - '0';
		if (k == keep) {
			round = d >= 5;
			break;
		}
		if (v > (limit - (uint64_t)d) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)d;
	}
	for (long k = (long)ndigits; k < keep && v; k++) {
		if (v > limit / 10)
			return -ERANGE;
		v *= 10;
	}
	if (round && v++ == limit)
		return -ERANGE;
	*ns = !neg ? (int64_t)v : v == limit ? INT64_MIN : -(int64_t)v;
	return 0;
}

static void set_ident(struct reader *r, struct tr_ident *id, enum jl_tok t, const char *s, size_t len)
{
	id->kind = t == JL_NUMBER ? TR_NUMBER : TR_STRING;
	id->is_int = false;
	id->num = 0;
	copy_str(r, id->text, sizeof(id->text), s, len);
	if (t != JL_NUMBER)
		return;
	/* Up to 18 digits cannot overflow: the common case, without strtoll. */
	size_t i = s[0] == '-';
	if (len - i <= 18) {
		int64_t v = 0;
		for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
			v = v * 10 + (s[i] - '0');
		if (i == len) {
			id->is_int = true;
			id->num = s[0] == '-' ? -v : v;
		}
		return;
	}
	if (!strpbrk(id->text, ".eE")) {
		char *end;
		errno = 0;
		long long v = strtoll(id->text, &end, 10);
		if (!errno && !*end) {
			id->is_int = true;
			id->num = v;
		}
	}
}

void tr_event_reset(struct tr_event *ev, uint64_t offset)
{
	ev->ph[0] = ev->cat[0] = ev->name[0] = 0;
	ev->pid.kind = ev->tid.kind = ev->id.kind = TR_ABSENT;
	ev->pid.text[0] = ev->tid.text[0] = ev->id.text[0] = 0;
	ev->pid.is_int = ev->tid.is_int = ev->id.is_int = false;
	ev->pid.num = ev->tid.num = ev->id.num = 0;
	ev->has_ts = ev->has_dur = false;
	ev->ts_ns = ev->dur_ns = 0;
	ev->nargs = ev->nextra = 0;
	ev->truncated = ev->dropped = 0;
	ev->offset = offset;
}

/* Called for every member of every event: by length, then the bytes (a
 * key with a NUL in it is none of these). */
static enum field field_of(const char *key, size_t len)
{
#define IS(lit) (!memcmp(key, lit, sizeof(lit) - 1))
	switch (len) {
	case 2:
		return IS("ph") ? F_PH : IS("id") ? F_ID : IS("ts") ? F_TS : F_OTHER;
	case 3:
		return IS("cat")   ? F_CAT
		       : IS("pid") ? F_PID
		       : IS("tid") ? F_TID
		       : IS("dur") ? F_DUR
		                   : F_OTHER;
	case 4:
		return IS("name") ? F_NAME : IS("args") ? F_ARGS : F_OTHER;
	default:
		return F_OTHER;
	}
#undef IS
}

static int event_member(struct reader *r, enum jl_tok t, const char *s, size_t len)
{
	struct tr_event *ev = r->ev;
	char *str = NULL;
	size_t str_cap = 0;
	struct tr_ident *id = NULL;
	int64_t *time = NULL;
	bool *has_time = NULL;

	switch (r->field) {
	case F_PH:
		str = ev->ph, str_cap = sizeof(ev->ph);
		break;
	case F_CAT:
		str = ev->cat, str_cap = sizeof(ev->cat);
		break;
	case F_NAME:
		str = ev->name, str_cap = sizeof(ev->name);
		break;
	case F_PID:
		id = &ev->pid;
		break;
	case F_TID:
		id = &ev->tid;
		break;
	case F_ID:
		id = &ev->id;
		break;
	case F_TS:
		time = &ev->ts_ns, has_time = &ev->has_ts;
		break;
	case F_DUR:
		time = &ev->dur_ns, has_time = &ev->has_dur;
		break;
	case F_ARGS:
		if (t == JL_START_MAP) {
			r->depth++;
			return 1;
		}
		break;
	case F_OTHER:
		break;
	}
	if (str && t == JL_STRING) {
		copy_str(r, str, str_cap, s, len);
		return 1;
	}
	if (id && (t == JL_STRING || t == JL_NUMBER)) {
		set_ident(r, id, t, s, len);
		return 1;
	}
	if (time && t == JL_NUMBER) {
		*has_time = tr_parse_us(s, len, time) == 0;
		r->stats->bad_times += !*has_time;
		r->stats->negative_durs += *has_time && time == &ev->dur_ns && *time < 0;
		return 1;
	}
	return pair_value(r, ev->extra, &ev->nextra, TR_EXTRA_MAX, t, s, len);
}

/* A byte offset in the input's JSON text: what the repair inserted in the
 * chunk being parsed does not count, and what it left out does. */
static uint64_t json_offset(const struct reader *r)
{
	if (r->fast)
		return r->fast_end;
	size_t at = yajl_get_bytes_consumed(r->yh);
	if (at > r->chunk_len)
		at = r->chunk_len;
	size_t lo = 0, hi = r->fix.nadj;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->fix.adj[mid].at <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t shift = lo ? r->fix.adj[lo - 1].shift : 0;
	return r->json_base + (uint64_t)((int64_t)at - shift);
}

/* The kind of a value, with its article. */
static const char *tok_kind(enum jl_tok t)
{
	switch (t) {
	case JL_NULL:
		return "null";
	case JL_BOOL:
		return "a boolean";
	case JL_NUMBER:
		return "a number";
	case JL_STRING:
		return "a string";
	case JL_START_MAP:
		return "an object";
	default:
		return "an array";
	}
}

static int on_value(struct reader *r, enum jl_tok t, const char *s, size_t len)
{
	int ed = r->events_depth;
	if (!r->root) {
		if (t != JL_START_MAP && t != JL_START_ARRAY) {
			fail(r, -EBADMSG, "not a trace: the top-level JSON value is %s, not an object",
			     tok_kind(t));
			return 0;
		}
		r->root = t == JL_START_MAP ? '{' : '[';
		r->depth = 1;
		if (r->root == '[') {
			/* Chrome's "JSON Array Format": the whole file is the event list. */
			r->events_depth = 1;
			r->seen_events = true;
		}
		return 1;
	}
	if (ed && r->depth == ed) {
		if (t != JL_START_MAP) {
			r->stats->skipped++;
			return cap_begin(r, CAP_DISCARD, NULL) ? 0 : cap_token(r, t, s, len);
		}
		tr_event_reset(r->ev, json_offset(r) - 1);
		r->in_event = true;
		r->depth++;
		return 1;
	}
	if (ed && r->depth == ed + 1)
		return event_member(r, t, s, len);
	if (ed && r->depth == ed + 2)
		return pair_value(r, r->ev->args, &r->ev->nargs, TR_ARGS_MAX, t, s, len);
	if (r->root == '{' && r->depth == 1) {
		if (strcmp(r->key, "traceEvents"))
			return cap_begin(r, CAP_MEMBER, NULL) ? 0 : cap_token(r, t, s, len);
		if (t != JL_START_ARRAY) {
			fail(r, -EBADMSG, "not a trace: traceEvents is %s, not an array (byte %llu)",
			     tok_kind(t), (unsigned long long)json_offset(r));
			return 0;
		}
		r->depth = r->events_depth = 2;
		r->seen_events = true;
		return 1;
	}
	fail(r, -EBADMSG, "unexpected JSON value at byte %llu", (unsigned long long)json_offset(r));
	return 0;
}

/* The event in r->ev is whole: to the caller. Returns 0 when the caller
 * asks to stop (r->user_rc holds its value), else 1. */
static int event_done(struct reader *r)
{
	r->in_event = false;
	r->stats->events++;
	if (r->skip_events) {
		r->skip_events--;
	} else if (r->h->event_cb) {
		int rc = r->h->event_cb(r->ev, r->h->user_arg);
		if (rc) {
			r->user_rc = rc;
			return 0;
		}
	}
	return 1;
}

static int on_end(struct reader *r)
{
	int ed = r->events_depth;
	r->depth--;
	if (ed && r->depth == ed) {
		if (!event_done(r))
			return 0;
	} else if (ed && r->depth == ed - 1) {
		r->events_depth = 0;
		r->stats->events_end = json_offset(r);
	}
	return 1;
}

static int on_token(void *ctx, enum jl_tok t, const char *s, size_t len)
{
	struct reader *r = ctx;
	if (r->cap.target != CAP_NONE)
		return cap_token(r, t, s, len);
	switch (t) {
	case JL_KEY:
		r->key_len = copy_str(r, r->key, sizeof(r->key), s, len);
		if (r->events_depth && r->depth == r->events_depth + 1)
			r->field = field_of(s, len);
		return 1;
	case JL_END_MAP:
	case JL_END_ARRAY:
		return on_end(r);
	default:
		return on_value(r, t, s, len);
	}
}

static int cb_null(void *ctx)
{
	return on_token(ctx, JL_NULL, NULL, 0);
}

static int cb_bool(void *ctx, int b)
{
	return on_token(ctx, JL_BOOL, NULL, (size_t)(b != 0));
}

static int cb_number(void *ctx, const char *s, size_t len)
{
	return on_token(ctx, JL_NUMBER, s, len);
}

static int cb_string(void *ctx, const unsigned char *s, size_t len)
{
	return on_token(ctx, JL_STRING, (const char *)s, len);
}

static int cb_key(void *ctx, const unsigned char *s, size_t len)
{
	return on_token(ctx, JL_KEY, (const char *)s, len);
}

static int cb_start_map(void *ctx)
{
	return on_token(ctx, JL_START_MAP, NULL, 0);
}

static int cb_end_map(void *ctx)
{
	return on_token(ctx, JL_END_MAP, NULL, 0);
}

static int cb_start_array(void *ctx)
{
	return on_token(ctx, JL_START_ARRAY, NULL, 0);
}

static int cb_end_array(void *ctx)
{
	return on_token(ctx, JL_END_ARRAY, NULL, 0);
}

static const yajl_callbacks callbacks = {
    .yajl_null = cb_null,
    .yajl_boolean = cb_bool,
    .yajl_number = cb_number,
    .yajl_string = cb_string,
    .yajl_start_map = cb_start_map,
    .yajl_map_key = cb_key,
    .yajl_end_map = cb_end_map,
    .yajl_start_array = cb_start_array,
    .yajl_end_array = cb_end_array,
};

/* Turns a failed yajl_parse or yajl_complete_parse into our status. */
static int parse_failure(struct reader *r, yajl_status st, const unsigned char *text, size_t n, bool at_end)
{
	if (st == yajl_status_client_canceled)
		return r->user_rc ? r->user_rc : r->status ? r->status : fail(r, -EBADMSG, "parse stopped");
	unsigned long long off = at_end ? r->json_base : json_offset(r);
	unsigned char *raw = yajl_get_error(r->yh, 0, text, n);
	char msg[256];
	tr_copy_text(msg, sizeof(msg), raw ? (const char *)raw : "parse error",
	             raw ? strlen((char *)raw) : 11);
	if (raw)
		yajl_free_error(r->yh, raw);
	size_t ml = strlen(msg);
	while (ml && (msg[ml - 1] == '\n' || msg[ml - 1] == ' ' || msg[ml - 1] == '.'))
		msg[--ml] = 0;

	if (strstr(msg, "premature EOF")) {
		if (!r->root)
			return fail(r, -EBADMSG, "not a trace: the file holds no JSON text");
		if (r->events_depth)
			return fail(
			    r, -EBADMSG,
			    "truncated: the JSON text ends at byte %llu inside traceEvents, after %llu "
			    "events",
			    off, (unsigned long long)r->stats->events);
		return fail(r, -EBADMSG,
		            "truncated: the JSON text ends at byte %llu before the top-level %s closes", off,
		            r->root == '{' ? "object" : "array");
	}
	if (!r->root)
		return fail(r, -EBADMSG, "not JSON: %s at byte %llu", msg, off);
	return fail(r, -EBADMSG, "malformed JSON at byte %llu: %s", off, msg);
}

/* ---- repairing libkineto's defects ------------------------------------ */

/* Notes that from output byte at on, shift more bytes were inserted (or,
 * negative, left out). Entries stay in order of at. */
static bool fix_adjust(struct reader *r, size_t at, int64_t more)
{
	struct fix *f = &r->fix;
	f->shift += more;
	if (f->nadj && f->adj[f->nadj - 1].at == at) {
		f->adj[f->nadj - 1].shift = f->shift;
		return true;
	}
	if (f->nadj == f->adj_cap) {
		size_t cap = f->adj_cap ? f->adj_cap * 2 : 1024;
		struct fix_adj *n = realloc(f->adj, cap * sizeof(*n));
		if (!n)
			return false;
		f->adj = n;
		f->adj_cap = cap;
	}
	f->adj[f->nadj++] = (struct fix_adj){(uint32_t)at, f->shift};
	return true;
}

/* Writes a byte the input does not have. */
static bool fix_insert(struct reader *r, size_t *o, char ch)
{
	r->fix.out[(*o)++] = ch;
	return fix_adjust(r, *o, 1);
}

static bool is_ws(char ch)
{
	return ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t';
}

/* The innermost open container ('{' or '['), 0 at the top level or when
 * nesting is deeper than the stack keeps (then nothing is repaired). */
static char fix_top(const struct fix *f)
{
	return f->depth > 0 && f->depth <= FIX_DEPTH ? f->stack[f->depth - 1] : 0;
}

/* Where libkineto writes strings without escaping their quotes: inside an
 * "args" object, and the top-level members (metadata values, traceName).
 * Elsewhere a quote ends a string as written, so garbled JSON is an error
 * rather than a string made of its neighbours. */
static bool fix_may_repair(const struct fix *f)
{
	if (f->depth > FIX_DEPTH)
		return false;
	return (f->depth == 1 && f->stack[0] == '{') || (f->args_depth && f->depth >= f->args_depth);
}

/* Whether the quote at p[0] ends the string being read. Returns 1 yes, 0
 * no, -1 when the text in hand (up to e) does not tell yet. */
static int closes_string(const struct fix *f, const char *p, const char *e, bool eof)
{
	if (!fix_may_repair(f))
		return 1; /* take the JSON as written */
	const char *q = p + 1;
	const char *lim = e - p > LOOKAHEAD ? p + LOOKAHEAD : e;
	while (q < lim && is_ws(*q))
		q++;
	if (q == lim)
		return lim == e && !eof ? -1 : 1;
	char c2 = *q;
	if (f->str_is_key)
		return c2 == ':';
	bool in_array = fix_top(f) == '[';
	if (in_array)
		return c2 == ',' || c2 == ']';
	if (c2 == '}')
		return 1;
	if (c2 != ',')
		return 0;
	/* In an object a value ends where the next member's key begins: a
	 * string followed by a colon. */
	q++;
	while (q < lim && is_ws(*q))
		q++;
	if (q == lim)
		return lim == e && !eof ? -1 : 1;
	if (*q != '"')
		return 0;
	for (q++; q < lim && *q != '"'; q++)
		if (*q == '\\' && q + 1 < lim)
			q++;
	if (q == lim)
		return lim == e && !eof ? -1 : 1;
	for (q++; q < lim && is_ws(*q); q++)
		;
	if (q == lim)
		return lim == e && !eof ? -1 : 1;
	return *q == ':';
}

static bool word_char(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '-' || ch == '+' || ch == '.';
}

static bool non_finite(const char *w, size_t n)
{
	static const char *const words[] = {"nan", "-nan", "NaN",      "-NaN",
	                                    "inf", "-inf", "Infinity", "-Infinity"};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strlen(words[i]) == n && !memcmp(words[i], w, n))
			return true;
	return false;
}

/* Bytes outside strings that the repair must look at: structure, quotes
 * and the letters that start a bare word. */
static const bool fix_special[256] = {
    ['"'] = true, ['{'] = true, ['}'] = true, ['['] = true,         [']'] = true,         [','] = true,
    [':'] = true, ['-'] = true, ['+'] = true, ['a' ... 'z'] = true, ['A' ... 'Z'] = true,
};

/* Bytes inside a string that need a decision: its end, an escape, and
 * control bytes JSON does not allow there. */
static const bool str_special[256] = {
    [0 ... 0x1f] = true,
    ['"'] = true,
    ['\\'] = true,
};

/* The first byte of [p, lim) that str_special marks, or lim: eight bytes
 * at a time while none of them is a quote, a backslash or below 0x20 (the
 * bit tricks are exact for these), then byte by byte. */
static const char *string_run_end(const char *p, const char *lim)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	while (lim - p >= 8) {
		uint64_t w;
		memcpy(&w, p, sizeof(w));
		uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
		if ((((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs)
			break;
		p += 8;
	}
	while (p < lim && !str_special[(unsigned char)*p])
		p++;
	return p;
}

/* The quote that ends the current string has been written. */
static void fix_end_string(struct fix *f)
{
	f->in_str = false;
	if (!f->str_is_key)
		f->expect_key = false;
	else
		f->key_args = f->slen == 4 && !memcmp(f->key, "args", 4);
}

/* Counts the string bytes just written; keeps a key's first bytes. */
static void fix_string_bytes(struct fix *f, const char *s, size_t n)
{
	if (f->str_is_key && f->slen < sizeof(f->key)) {
		size_t k = sizeof(f->key) - f->slen < n ? sizeof(f->key) - f->slen : n;
		memcpy(f->key + f->slen, s, k);
	}
	f->slen += n;
	f->uhex = f->uhex > n ? f->uhex - (unsigned)n : 0;
}

/* Past TR_STRING_MAX: leaves the string's bytes out up to its closing quote
 * (found as the repair would find it). Returns 1 at that quote, 0 at the
 * end of the text in hand, -1 when the text in hand does not tell. */
static int fix_skip(struct reader *r, const char **pp, const char *e, bool eof, size_t o)
{
	struct fix *f = &r->fix;
	const char *p = *pp, *start = p;
	int found = 0;
	while (p < e) {
		if (f->esc) {
			f->esc = false;
			p++;
			continue;
		}
		while (p < e && *p != '"' && *p != '\\')
			p++;
		if (p == e)
			break;
		if (*p == '\\') {
			f->esc = true;
			p++;
			continue;
		}
		int d = closes_string(f, p, e, eof);
		if (d) {
			found = d;
			break;
		}
		p++; /* a quote inside the string: left out with it */
	}
	*pp = p;
	if (p > start && !fix_adjust(r, o, -(int64_t)(p - start))) {
		fail(r, -ENOMEM, "out of memory");
		return -2;
	}
	return found;
}

/* Repairs the carry plus in[0..n) into fix.out; what cannot be decided yet
 * becomes the new carry. *out_n is the repaired length. */
static int fix_chunk(struct reader *r, const unsigned char *in, size_t n, bool eof, size_t *out_n)
{
	struct fix *f = &r->fix;
	size_t total = f->ncarry + n;
	*out_n = 0;
	f->nadj = 0;
	f->shift = 0;
	if (!total)
		return 0;
	if (total > f->work_cap) {
		char *w = realloc(f->work, total);
		if (!w)
			return fail(r, -ENOMEM, "out of memory");
		f->work = w;
		f->work_cap = total;
	}
	/* Each byte grows to at most 6 (a control byte as \u00XX). */
	if (total * 6 > f->out_cap) {
		char *o = realloc(f->out, total * 6);
		if (!o)
			return fail(r, -ENOMEM, "out of memory");
		f->out = o;
		f->out_cap = total * 6;
	}
	memcpy(f->work, f->carry, f->ncarry);
	if (n)
		memcpy(f->work + f->ncarry, in, n);
	f->ncarry = 0;
	const char *p = f->work, *e = f->work + total;
	size_t o = 0;
	while (p < e) {
		char ch = *p;
		if (f->in_str) {
			if (!f->skip && f->slen >= TR_STRING_MAX && !f->esc && !f->uhex &&
			    ((unsigned char)ch & 0xc0) != 0x80)
				f->skip = true; /* at a character boundary, outside an escape */
			if (f->skip) {
				int d = fix_skip(r, &p, e, eof, o);
				if (d < -1)
					return r->status;
				if (d < 0)
					break;
				if (d) {
					f->out[o++] = '"';
					p++;
					fix_end_string(f);
				}
				continue;
			}
			/* Copy the run that needs no decision, up to the limit. */
			const char *run = p;
			if (!f->esc) {
				const char *lim = e;
				uint64_t room = f->slen < TR_STRING_MAX ? TR_STRING_MAX - f->slen : 0;
				if ((uint64_t)(e - p) > room)
					lim = p + room;
				p = string_run_end(p, lim);
			}
			memcpy(f->out + o, run, (size_t)(p - run));
			o += (size_t)(p - run);
			fix_string_bytes(f, run, (size_t)(p - run));
			if (p == e)
				break;
			ch = *p;
			if (f->esc) {
				f->esc = false;
				f->out[o++] = ch;
				fix_string_bytes(f, p, 1);
				if (ch == 'u')
					f->uhex = 4;
				p++;
			} else if (ch == '\\') {
				f->esc = true;
				f->out[o++] = ch;
				fix_string_bytes(f, p, 1);
				p++;
			} else if ((unsigned char)ch < 0x20) {
				static const char hex[] = "0123456789abcdef";
				const char esc[6] = {'\\',        'u', '0', '0', hex[(unsigned char)ch >> 4],
				                     hex[ch & 15]};
				f->out[o++] = '\\';
				for (int i = 1; i < 6; i++)
					if (!fix_insert(r, &o, esc[i]))
						return fail(r, -ENOMEM, "out of memory");
				fix_string_bytes(f, esc, 6);
				r->stats->repaired++;
				p++;
			} else if (ch == '"') {
				int d = closes_string(f, p, e, eof);
				if (d < 0)
					break;
				if (d) {
					f->out[o++] = '"';
					fix_end_string(f);
				} else {
					if (!fix_insert(r, &o, '\\'))
						return fail(r, -ENOMEM, "out of memory");
					f->out[o++] = '"';
					fix_string_bytes(f, "\\\"", 2);
					r->stats->repaired++;
				}
				p++;
			} else {
				/* At the limit, inside a character or an escape: one more byte. */
				f->out[o++] = ch;
				fix_string_bytes(f, p, 1);
				p++;
			}
			continue;
		}
		if (!fix_special[(unsigned char)ch]) {
			/* Digits, blanks and the like: copy the run. */
			const char *run = p;
			for (; p < e && !fix_special[(unsigned char)*p]; p++)
				f->word = (*p >= '0' && *p <= '9') || *p == '.' ? f->word + 1 : 0;
			memcpy(f->out + o, run, (size_t)(p - run));
			o += (size_t)(p - run);
			if (f->word > TR_WORD_MAX)
				goto long_word;
			continue;
		}
		if (!word_char(ch))
			f->word = 0;
		switch (ch) {
		case '"':
			f->in_str = true;
			f->str_is_key = fix_top(f) == '{' && f->expect_key;
			f->skip = false;
			f->uhex = 0;
			f->slen = 0;
			if (!f->str_is_key)
				f->key_args = false;
			break;
		case '{':
		case '[':
			if (f->depth < FIX_DEPTH)
				f->stack[f->depth] = ch;
			f->depth++;
			f->expect_key = ch == '{';
			if (f->key_args && ch == '{' && !f->args_depth)
				f->args_depth = f->depth;
			f->key_args = false;
			break;
		case '}':
		case ']':
			if (f->depth == f->args_depth)
				f->args_depth = 0;
			if (f->depth > 0)
				f->depth--;
			f->expect_key = false;
			f->key_args = false;
			break;
		case ',':
			f->expect_key = fix_top(f) == '{';
			f->key_args = false;
			break;
		case ':':
			f->expect_key = false;
			break;
		default:
			if (word_char(ch) && !(ch >= '0' && ch <= '9')) {
				const char *w = p;
				f->key_args = false;
				while (p < e && p - w < 64 && word_char(*p))
					p++;
				if (p == e && !eof && p - w < 64) {
					p = w;
					goto carry;
				}
				size_t wl = (size_t)(p - w);
				f->word += wl;
				if (non_finite(w, wl) && f->word == wl) {
					/* No JSON number says it: keep it as the string "nan". */
					if (!fix_insert(r, &o, '"'))
						return fail(r, -ENOMEM, "out of memory");
					memcpy(f->out + o, w, wl);
					o += wl;
					if (!fix_insert(r, &o, '"'))
						return fail(r, -ENOMEM, "out of memory");
					r->stats->repaired++;
				} else {
					memcpy(f->out + o, w, wl);
					o += wl;
				}
				if (f->word > TR_WORD_MAX)
					goto long_word;
				continue;
			}
			break;
		}
		f->out[o++] = ch;
		p++;
	}
carry:
	f->ncarry = (size_t)(e - p);
	if (f->ncarry > LOOKAHEAD + 64) {
		/* Cannot happen: decisions look at most LOOKAHEAD ahead. */
		return fail(r, -EBADMSG, "internal error repairing the JSON text");
	}
	memcpy(f->carry, p, f->ncarry);
	*out_n = o;
	return 0;
long_word:
	/* yajl would buffer it whole, reading it again for every chunk. */
	return fail(r, -EBADMSG, "malformed JSON at byte %llu: a number or bare word longer than %u bytes",
	            (unsigned long long)(r->json_base + (uint64_t)(p - f->work) - f->word), TR_WORD_MAX);
}

static int parse_repaired(struct reader *r, const unsigned char *p, size_t n, bool eof)
{
	size_t m = 0;
	int rc = fix_chunk(r, p, n, eof, &m);
	if (rc)
		return rc;
	if (!m)
		return 0;
	r->chunk_len = m;
	yajl_status st = yajl_parse(r->yh, (const unsigned char *)r->fix.out, m);
	if (st != yajl_status_ok)
		return parse_failure(r, st, (const unsigned char *)r->fix.out, m, false);
	r->json_base += (uint64_t)((int64_t)m - r->fix.shift);
	r->fix.nadj = 0;
	r->fix.shift = 0;
	r->chunk_len = 0;
	return 0;
}

/* A Perfetto protobuf file, through perfetto_reader.c. */
static int parse_perfetto(struct reader *r, const unsigned char *p, size_t n)
{
	struct tr_pf *pf = tr_pf_new(r->h, r->ev, r->stats, r->label, r->err, r->errlen);
	if (!pf)
		return fail(r, -ENOMEM, "out of memory");
	int rc = 0;
	while (n) {
		r->stats->json_bytes += n;
		rc = tr_pf_feed(pf, p, n);
		if (!rc)
			rc = next_text(r, &p, &n);
		if (rc)
			break;
	}
	if (!rc)
		rc = tr_pf_finish(pf);
	tr_pf_free(pf);
	if (rc && !r->status)
		r->status = rc; /* the message, if any, is already in err */
	return rc;
}

/* A UTF-8 byte order mark, which yajl rejects and editors add; when it was
 * the whole piece, the next one. */
static int skip_bom(struct reader *r, const unsigned char **p, size_t *n)
{
	if (*n < 3 || memcmp(*p, "\xef\xbb\xbf", 3))
		return 0;
	r->stats->json_bytes += 3;
	*p += 3;
	*n -= 3;
	r->json_base += 3;
	return *n ? 0 : next_text(r, p, n);
}

/* jl_run's return when the reader stops it: a callback asked, or the
 * reader failed. */
#define FAST_STOP 2

static int fast_next(void *arg, const unsigned char **p, size_t *n)
{
	struct reader *r = arg;
	int rc = next_text(r, p, n);
	if (!rc)
		r->stats->json_bytes += *n;
	else
		r->input_failed = true;
	return rc;
}

static int fast_token(void *arg, enum jl_tok t, const char *s, size_t len, bool decoded, uint64_t end)
{
	struct reader *r = arg;
	r->fast_end = end;
	r->no_nul = !decoded;
	if (r->pending && t != JL_KEY) {
		r->pending = false;
		if (!hand_member(r, r->pending_key, r->mbuf, r->pending_len, r->pending_cut)) {
			r->member_stopped = true;
			return FAST_STOP;
		}
	}
	return on_token(r, t, s, len) ? 0 : FAST_STOP;
}

/* ---- events taken whole by the fast read ---------------------------- */

static const unsigned char *skip_blank(const unsigned char *p, const unsigned char *e)
{
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
		p++;
	return p;
}

/* A scalar of an event, as its tokens would give it: t, and s (len
 * bytes) its text (a string's without its quotes). */
struct scalar {
	enum jl_tok t;
	const char *s;
	size_t len;
};

/* The words a scalar may be: JL_BOOL's len indexes the first two. */
static const char *const scalar_words[] = {"false", "true", "null"};

/* The scalar at *p (before e): false when it is none, or not one that
 * needs no decoding: a string with an escape or a byte from 0x80, an
 * object or array, anything malformed or past e. *p moves past it. */
static bool scan_scalar(const unsigned char **p, const unsigned char *e, struct scalar *v)
{
	const unsigned char *q = *p;
	if (*q == '"') {
		const unsigned char *end = jl_plain_run(q + 1, e);
		if (end == e || *end != '"')
			return false;
		*v = (struct scalar){JL_STRING, (const char *)q + 1, (size_t)(end - q - 1)};
		*p = end + 1;
		return true;
	}
	if (*q == 'f' || *q == 't' || *q == 'n') {
		int w = *q == 'f' ? 0 : *q == 't' ? 1 : 2;
		size_t wl = strlen(scalar_words[w]);
		if ((size_t)(e - q) <= wl || memcmp(q, scalar_words[w], wl))
			return false;
		*v = (struct scalar){w == 2 ? JL_NULL : JL_BOOL, NULL, (size_t)(w == 1)};
		*p = q + wl;
		return true;
	}
	const unsigned char *end = jl_number_end(q, e);
	if (!end)
		return false;
	*v = (struct scalar){JL_NUMBER, (const char *)q, (size_t)(end - q)};
	*p = end;
	return true;
}

/* v as a pair of arr (key k, klen bytes), as pair_value keeps a scalar;
 * false when it would not be kept whole (arr full, or cut). */
static bool scalar_pair(struct tr_pair *arr, unsigned *n, unsigned max, const char *k, size_t klen,
                        const struct scalar *v)
{
	if (*n == max)
		return false;
	struct tr_pair *p = &arr[*n];
	const char *text = v->t == JL_NULL ? scalar_words[2] : v->t == JL_BOOL ? scalar_words[v->len] : v->s;
	size_t len = v->t == JL_NULL || v->t == JL_BOOL ? strlen(text) : v->len;
	size_t quotes = v->t == JL_STRING ? 2 : 0;
	if (len + quotes >= sizeof(p->value))
		return false;
	memcpy(p->key, k, klen);
	p->key[klen] = 0;
	char *o = p->value;
	if (quotes)
		*o++ = '"';
	memcpy(o, text, len);
	o += len;
	if (quotes)
		*o++ = '"';
	*o = 0;
	p->truncated = false;
	(*n)++;
	return true;
}

/* An event taken whole from the text (jl_object_cb): one whose keys and
 * strings are plain ASCII without escapes, whose members are scalars but
 * for an "args" object of scalars, and whose strings all fit, so that it
 * is exactly what its tokens would make of it, without them. Anything
 * else is left to the tokens, which start the event again. */
static size_t fast_event(void *arg, const unsigned char *p, const unsigned char *e, uint64_t offset,
                         int *stop)
{
	struct reader *r = arg;
	if (!r->events_depth || r->depth != r->events_depth || r->cap.target != CAP_NONE || r->pending)
		return 0;
	struct tr_event *ev = r->ev;
	tr_event_reset(ev, offset);
	r->no_nul = true;
	uint64_t bad_times = 0, negative = 0;
	bool args = false; /* inside the args object */
	const unsigned char *q = skip_blank(p + 1, e);
	if (q < e && *q == '}')
		goto whole;
	for (;;) {
		if (q == e || *q != '"')
			return 0;
		const unsigned char *k = q + 1, *ke = jl_plain_run(k, e);
		if (ke == e || *ke != '"' || (size_t)(ke - k) >= TR_SHORT_MAX)
			return 0;
		size_t klen = (size_t)(ke - k);
		q = skip_blank(ke + 1, e);
		if (q == e || *q != ':')
			return 0;
		q = skip_blank(q + 1, e);
		if (q == e)
			return 0;
		enum field f = args ? F_OTHER : field_of((const char *)k, klen);
		struct scalar v;
		if (f == F_ARGS && *q == '{') {
			args = true;
			q = skip_blank(q + 1, e);
			if (q < e && *q == '}') {
				args = false;
				q++;
			} else {
				continue;
			}
		} else if (!scan_scalar(&q, e, &v)) {
			return 0;
		} else if (args) {
			if (!scalar_pair(ev->args, &ev->nargs, TR_ARGS_MAX, (const char *)k, klen, &v))
				return 0;
		} else if ((f == F_PH || f == F_CAT || f == F_NAME) && v.t == JL_STRING) {
			char *dst = f == F_PH ? ev->ph : f == F_CAT ? ev->cat : ev->name;
			size_t cap = f == F_PH    ? sizeof(ev->ph)
			             : f == F_CAT ? sizeof(ev->cat)
			                          : sizeof(ev->name);
			if (v.len >= cap)
				return 0;
			memcpy(dst, v.s, v.len);
			dst[v.len] = 0;
		} else if ((f == F_PID || f == F_TID || f == F_ID) &&
		           (v.t == JL_STRING || v.t == JL_NUMBER)) {
			if (v.len >= TR_SHORT_MAX)
				return 0;
			set_ident(r,
			          f == F_PID   ? &ev->pid
			          : f == F_TID ? &ev->tid
			                       : &ev->id,
			          v.t, v.s, v.len);
		} else if ((f == F_TS || f == F_DUR) && v.t == JL_NUMBER) {
			int64_t *time = f == F_TS ? &ev->ts_ns : &ev->dur_ns;
			bool *has = f == F_TS ? &ev->has_ts : &ev->has_dur;
			*has = tr_parse_us(v.s, v.len, time) == 0;
			bad_times += !*has;
			negative += *has && f == F_DUR && *time < 0;
		} else if (!scalar_pair(ev->extra, &ev->nextra, TR_EXTRA_MAX, (const char *)k, klen, &v)) {
			return 0;
		}
		q = skip_blank(q, e);
		if (q < e && *q == '}' && args) {
			args = false;
			q = skip_blank(q + 1, e);
		}
		if (q < e && *q == ',') {
			q = skip_blank(q + 1, e);
			continue;
		}
		if (q < e && *q == '}' && !args)
			break;
		return 0;
	}
whole:
	r->stats->bad_times += bad_times;
	r->stats->negative_durs += negative;
	r->fast_end = offset + (uint64_t)(q + 1 - p);
	if (!event_done(r))
		*stop = FAST_STOP;
	return (size_t)(q + 1 - p);
}

/* The whole text through the fast tokenizer. Returns 0, an event
 * callback's stop or -ENOMEM; or sets *again when the text must be read
 * again by the repairing parser: the tokenizer gave up, the reader failed
 * (the second read words every error about the JSON), the input failed
 * (the second read meets it, or the JSON's error first, where yajl does),
 * or a member callback stopped the read (see replay_rc). */
static int parse_fast(struct reader *r, const unsigned char *p, size_t n, bool *again)
{
	r->fast = true;
	r->stats->json_bytes += n;
	int rc = jl_run(p, n, r->json_base, fast_next, fast_token, fast_event, r);
	r->fast = r->no_nul = false;
	*again = r->input_failed || rc == JL_GIVE_UP ||
	         (rc == FAST_STOP && (!r->user_rc || r->member_stopped)) || (!rc && !r->seen_events);
	if (*again) {
		r->replay_rc = r->member_stopped ? r->user_rc : 0;
		r->user_rc = 0;
		return 0;
	}
	if (rc == FAST_STOP)
		return r->user_rc;
	return rc == -ENOMEM ? fail(r, -ENOMEM, "out of memory") : rc;
}

/* Back to the start of the text, for the repairing parser: what was handed
 * over stays handed over, and the statistics start again. */
static int reread(struct reader *r)
{
	if (r->f) {
		if (fseeko(r->f, r->f_start, SEEK_SET)) {
			int e = errno ? errno : EIO;
			return fail(r, -e, "cannot read again: %s", strerror(e));
		}
		clearerr(r->f);
		r->next = NULL;
		r->avail = 0;
		r->eof = false;
	} else {
		r->next = NULL;
		r->avail = r->piece = r->piece_done = 0;
		r->eof = false;
		int rc = refill(r);
		if (rc)
			return rc;
	}
	if (r->zs_live) {
		inflateReset(&r->zs);
		r->gz_member_done = false;
	}
	if (r->zd) {
		ZSTD_DCtx_reset(r->zd, ZSTD_reset_session_only);
		r->zret = 1;
	}
	r->skip_events = r->stats->events;
	r->skip_members = r->members;
	enum tr_compression c = r->stats->compression;
	memset(r->stats, 0, sizeof(*r->stats));
	r->stats->compression = c;
	r->stats->file_bytes = r->mem_bytes;
	r->stats->reread = true;
	r->status = 0;
	if (r->errlen)
		r->err[0] = 0;
	r->json_base = 0;
	r->root = r->depth = r->events_depth = 0;
	r->seen_events = r->in_event = r->pending = false;
	r->key[0] = 0;
	r->field = F_OTHER;
	r->cap = (struct capture){0};
	r->members = 0;
	r->member_stopped = r->input_failed = false;
	return 0;
}

static int parse(struct reader *r)
{
	int rc = detect_compression(r);
	if (rc)
		return rc;
	const unsigned char *p;
	size_t n;
	rc = next_text(r, &p, &n);
	if (rc)
		return rc;
	/* After decompression: a .pftrace.gz is a Perfetto trace too. */
	if (tr_pf_detect(p, n)) {
		r->stats->perfetto = true;
		return parse_perfetto(r, p, n);
	}
	if ((rc = skip_bom(r, &p, &n)))
		return rc;
	if (r->rewindable && !r->h->slow_only) {
		bool again;
		rc = parse_fast(r, p, n, &again);
		if (!again)
			return rc;
		if (r->h->fast_only)
			return fail(r, -EAGAIN, "the text needs the repairing read");
		if ((rc = reread(r)) || (rc = next_text(r, &p, &n)) || (rc = skip_bom(r, &p, &n)))
			return rc;
	}
	while (n) {
		r->stats->json_bytes += n;
		rc = parse_repaired(r, p, n, false);
		if (!rc)
			rc = next_text(r, &p, &n);
		if (rc)
			return rc;
	}
	rc = parse_repaired(r, NULL, 0, true);
	if (rc)
		return rc;
	yajl_status st = yajl_complete_parse(r->yh);
	if (st != yajl_status_ok)
		return parse_failure(r, st, NULL, 0, true);
	if (!r->seen_events)
		return fail(r, -EBADMSG, "not a trace: the top-level object has no traceEvents array");
	return 0;
}

static int read_with(struct reader *r, const char *label, const struct tr_handler *h, struct tr_stats *stats,
                     char *err, size_t errlen)
{
	static const struct tr_handler none;
	struct tr_stats scratch;
	r->label = label ? label : "trace";
	r->h = h ? h : &none;
	r->stats = stats ? stats : &scratch;
	memset(r->stats, 0, sizeof(*r->stats));
	r->stats->file_bytes = r->mem_bytes; /* a buffer in memory counts as read up front */
	r->err = err;
	r->errlen = err ? errlen : 0;
	if (r->errlen)
		err[0] = 0;

	int rc;
	r->ev = malloc(sizeof(*r->ev));
	r->fix.carry = malloc(LOOKAHEAD + 64 + CHUNK);
	r->yh = yajl_alloc(&callbacks, NULL, r);
	r->gen = yajl_gen_alloc(NULL);
	if (r->f || r->file_pieces)
		r->in = malloc(CHUNK);
	if (!r->ev || !r->yh || !r->gen || ((r->f || r->file_pieces) && !r->in) || !r->fix.carry) {
		rc = fail(r, -ENOMEM, "out of memory");
	} else {
		rc = r->f ? 0 : refill(r); /* in pieces: the first that holds something */
		yajl_gen_config(r->gen, yajl_gen_print_callback, cap_print, r);
		if (!rc)
			rc = parse(r);
	}
	if (r->user_rc && rc == r->user_rc && r->errlen)
		err[0] = 0;

	if (r->yh)
		yajl_free(r->yh);
	if (r->gen)
		yajl_gen_free(r->gen);
	if (r->zs_live)
		inflateEnd(&r->zs);
	ZSTD_freeDStream(r->zd);
	free(r->out);
	free(r->in);
	free(r->mbuf);
	free(r->ev);
	free(r->fix.carry);
	free(r->fix.work);
	free(r->fix.out);
	free(r->fix.adj);
	return rc;
}

int tr_read_stream(FILE *f, const char *label, const struct tr_handler *h, struct tr_stats *stats, char *err,
                   size_t errlen)
{
	struct reader r = {.f = f};
	struct stat sb;
	r.f_start = ftello(f);
	r.rewindable = r.f_start >= 0 && !fstat(fileno(f), &sb) && S_ISREG(sb.st_mode);
	return read_with(&r, label, h, stats, err, errlen);
}

int tr_read_memory(const void *data, size_t len, const char *label, const struct tr_handler *h,
                   struct tr_stats *stats, char *err, size_t errlen)
{
	const struct tr_piece piece = {.data = data, .len = len};
	return tr_read_pieces(&piece, 1, label, h, stats, err, errlen);
}

int tr_read_pieces(const struct tr_piece *pieces, size_t n, const char *label, const struct tr_handler *h,
                   struct tr_stats *stats, char *err, size_t errlen)
{
	struct reader r = {.pieces = pieces, .npieces = n, .rewindable = true};
	for (size_t i = 0; i < n; i++) {
		r.mem_bytes += pieces[i].data ? pieces[i].len : 0;
		r.file_pieces |= !pieces[i].data;
	}
	return read_with(&r, label, h, stats, err, errlen);
}

int tr_read_file(const char *path, const struct tr_handler *h, struct tr_stats *stats, char *err,
                 size_t errlen)
{
	if (!strcmp(path, "-"))
		return tr_read_stream(stdin, "<stdin>", h, stats, err, errlen);
	FILE *f = fopen(path, "rb");
	if (!f) {
		int e = errno;
		if (stats)
			memset(stats, 0, sizeof(*stats));
		if (err && errlen)
			snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	int rc = tr_read_stream(f, path, h, stats, err, errlen);
	fclose(f);
	return rc;
}

const struct tr_pair *tr_event_arg(const struct tr_event *ev, const char *key)
{
	for (unsigned i = 0; i < ev->nargs; i++)
		if (ev->args[i].key[0] == key[0] && !strcmp(ev->args[i].key, key))
			return &ev->args[i];
	return NULL;
}

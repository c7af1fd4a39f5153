/* Perfetto protobuf traces -> Chrome-trace events (perfetto_reader.h).
 * Field numbers are those of perfetto's trace protos, named in
 * common/pf_fields.h, which the encoder shares. */
#include "read/perfetto_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yajl/yajl_tree.h>

#include "common/pf_fields.h"

#define MAX_PACKET     (256u << 20)       /* a longer packet is taken for a corrupt file */
#define MAX_IID        (1u << 22)         /* interned ids are small and dense */
#define MAX_SEQ        64                 /* packet sequences with their own state */
#define STREAM_LANE    (INT64_C(1) << 40) /* strobe's overlap rows: lane k of stream s is k * 2^40 + s */
#define CUSTOM_TID     (INT64_C(1) << 50) /* tids given to tracks that have none */
#define METADATA_TRACK "Trace metadata"
#define PACKET_TAG     (PF_TRACE_PACKET << 3 | PF_WT_LEN) /* 0x0a */

/* ---- protobuf --------------------------------------------------------- */

struct pb {
	const unsigned char *p, *end;
};

struct field {
	uint32_t num, wt;
	uint64_t v;              /* varint and fixed values */
	const unsigned char *at; /* length-delimited bytes */
	size_t len;
};

static bool varint(struct pb *b, uint64_t *v)
{
	*v = 0;
	for (int shift = 0; shift < 64 && b->p < b->end; shift += 7) {
		unsigned char c = *b->p++;
		*v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return true;
	}
	return false;
}

/* The next field; false at the end (*bad set when the bytes are malformed). */
static bool next_field(struct pb *b, struct field *f, bool *bad)
{
	*f = (struct field){0}; /* a field of one wire type leaves the others zero */
	if (b->p >= b->end)
		return false;
	uint64_t tag;
	if (!varint(b, &tag) || tag >> 3 == 0 || tag >> 3 > UINT32_MAX) {
		*bad = true;
		return false;
	}
	f->num = (uint32_t)(tag >> 3);
	f->wt = (uint32_t)(tag & 7);
	switch (f->wt) {
	case PF_WT_VARINT:
		if (varint(b, &f->v))
			return true;
		break;
	case PF_WT_I64:
		if (b->end - b->p >= 8) {
			memcpy(&f->v, b->p, 8);
			b->p += 8;
			return true;
		}
		break;
	case PF_WT_I32:
		if (b->end - b->p >= 4) {
			uint32_t v;
			memcpy(&v, b->p, 4);
			f->v = v;
			b->p += 4;
			return true;
		}
		break;
	case PF_WT_LEN: {
		uint64_t len;
		if (varint(b, &len) && len <= (uint64_t)(b->end - b->p)) {
			f->at = b->p;
			f->len = (size_t)len;
			b->p += len;
			return true;
		}
		break;
	}
	default:
		break;
	}
	*bad = true;
	return false;
}

static struct pb sub(const struct field *f)
{
	return (struct pb){f->at, f->at + f->len};
}

/* ---- state ------------------------------------------------------------ */

/* One interning table: iid -> string. */
struct table {
	char **s;
	size_t cap;
	size_t bytes; /* held, counted against INTERN_BUDGET */
};

struct seq {
	uint32_t id;
	bool used;
	struct table names, cats, keys, values;
	uint64_t default_clock; /* 0: none given */
	uint64_t default_track; /* TrackEventDefaults.track_uuid, 0: none */
	/* The sequence's own clocks (ids 64-127): CLOCK_REALTIME - clock; an
	 * incremental one's packets give deltas from its last time. */
	int64_t seq_offset[64];
	bool seq_known[64], seq_incremental[64];
	uint64_t seq_last[64];
};

/* A slice begun and not yet ended. */
struct open_slice {
	int64_t ts;
	char *name, *cat;
	char *args; /* key NUL value NUL ..., nargs pairs */
	size_t args_len;
	unsigned nargs;
	uint64_t *flows_out, *flows_in;
	size_t nout, nin;
	uint64_t offset;
	size_t bytes; /* counted against TR_PF_OPEN_BYTES */
};

struct track {
	uint64_t uuid, parent;
	bool used, process, thread, counter, metadata, named;
	int64_t pid, tid;
	char *name;
	struct open_slice *open;
	size_t nopen, open_cap;
	/* Begins past the open-slice limits, above the kept ones: the next
	 * ends are theirs, so they pair as written. */
	uint64_t cut;
};

struct tr_pf {
	const struct tr_handler *h;
	struct tr_event *ev;
	struct tr_stats *st;
	const char *label;
	char *err;
	size_t errlen;
	int status;

	/* Framing: tag, length, then the packet's bytes. */
	unsigned char *pkt;
	size_t pkt_len, pkt_have, pkt_cap;
	int stage; /* 0 tag, 1 length, 2 payload */
	uint64_t len_acc;
	int len_shift;
	uint64_t offset;     /* file bytes taken so far */
	uint64_t pkt_offset; /* where the current packet starts */

	struct seq seqs[MAX_SEQ];
	size_t interned;           /* bytes the interning tables hold (INTERN_BUDGET) */
	int64_t global_offset[16]; /* builtin clocks: CLOCK_REALTIME - clock */
	bool global_known[16];

	struct track *tracks;
	size_t tracks_cap, ntracks;
	size_t open_all, open_bytes; /* slices held open on all tracks, and their bytes */
	int64_t next_tid;

	bool have_base;
	int64_t base; /* baseTimeNanoseconds: 0, Perfetto's times are absolute */
};

static int fail(struct tr_pf *p, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct tr_pf *p, int status, const char *fmt, ...)
{
	if (!p->status) {
		p->status = status;
		if (p->errlen) {
			int n = snprintf(p->err, p->errlen, "%s: ", p->label);
			if (n >= 0 && (size_t)n < p->errlen) {
				va_list ap;
				va_start(ap, fmt);
				vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
				va_end(ap);
			}
		}
	}
	return p->status;
}

/* A growable text: JSON values, and key NUL value NUL lists. */
struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const void *d, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *g = realloc(b->s, cap);
		if (!g) {
			b->oom = true;
			return;
		}
		b->s = g;
		b->cap = cap;
	}
	memcpy(b->s + b->len, d, n);
	b->len += n;
	b->s[b->len] = 0;
}

static void sb_str(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

/* Length of the valid UTF-8 character at s (n bytes left), or 0 for an
 * invalid byte or a NUL. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return c ? 1 : 0;
	size_t len;
	uint32_t cp;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2, cp = c & 0x1fu;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, cp = c & 0x0fu;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, cp = c & 0x07u;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3fu);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* s as text: strings in a trace are UTF-8, and what is not (or a NUL)
 * becomes '?', so what is written from it stays valid. */
static void sb_text(struct sbuf *b, const unsigned char *s, size_t n)
{
	size_t i = 0, run = 0;
	while (i < n) {
		size_t l = utf8_len(s + i, n - i);
		if (l) {
			i += l;
			continue;
		}
		sb_add(b, s + run, i - run);
		sb_add(b, "?", 1);
		run = ++i;
	}
	sb_add(b, s + run, n - run);
}

/* s as a JSON string. */
static void sb_json(struct sbuf *b, const unsigned char *s, size_t n)
{
	sb_add(b, "\"", 1);
	size_t i = 0, run = 0;
	while (i < n) {
		unsigned char c = s[i];
		size_t l = utf8_len(s + i, n - i);
		if (l && c != '"' && c != '\\' && c >= 0x20 && c != 0x7f) {
			i += l;
			continue;
		}
		sb_add(b, s + run, i - run);
		char esc[8];
		if (!l)
			snprintf(esc, sizeof(esc), "?");
		else if (c == '"' || c == '\\')
			snprintf(esc, sizeof(esc), "\\%c", c);
		else
			snprintf(esc, sizeof(esc), "\\u%04x", c);
		sb_str(b, esc);
		run = ++i;
	}
	sb_add(b, s + run, n - run);
	sb_add(b, "\"", 1);
}

/* A JSON value given as text (legacy_json_value): kept when it parses,
 * else written as a string, so the output stays JSON. */
static void sb_json_value(struct sbuf *b, const unsigned char *s, size_t n)
{
	char *t = malloc(n + 1);
	if (!t) {
		b->oom = true;
		return;
	}
	memcpy(t, s, n);
	t[n] = 0;
	yajl_val v = strlen(t) == n ? yajl_tree_parse(t, NULL, 0) : NULL;
	if (v)
		sb_add(b, s, n);
	else
		sb_json(b, s, n);
	yajl_tree_free(v);
	free(t);
}

/* A NUL-terminated copy of n bytes of text (see sb_text). */
static char *dup_n(const unsigned char *s, size_t n)
{
	struct sbuf b = {0};
	sb_text(&b, s, n);
	if (!b.oom && !b.s)
		sb_add(&b, "", 0);
	if (b.oom) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

/* Frees t's strings; returns the bytes it held. */
static size_t table_clear(struct table *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->s[i]);
	free(t->s);
	size_t held = t->bytes;
	*t = (struct table){0};
	return held;
}

/* Interned strings and their tables may take this much in all: a file
 * whose ids or strings would need more is refused, not obeyed. */
#define INTERN_BUDGET ((size_t)128 << 20)

static int table_put(struct table *t, uint64_t iid, const unsigned char *s, size_t n, size_t *used)
{
	if (iid == 0 || iid >= MAX_IID)
		return 0; /* not kept: events naming it get no name */
	size_t grow = 0, cap = t->cap;
	if (iid >= t->cap) {
		cap = t->cap ? t->cap : 256;
		while (cap <= iid)
			cap *= 2;
		grow = (cap - t->cap) * sizeof(char *);
	}
	if (*used + grow + n + 1 > INTERN_BUDGET)
		return -E2BIG;
	*used += grow + n + 1;
	t->bytes += grow + n + 1;
	if (iid >= t->cap) {
		char **g = realloc(t->s, cap * sizeof(*g));
		if (!g)
			return -ENOMEM;
		memset(g + t->cap, 0, (cap - t->cap) * sizeof(*g));
		t->s = g;
		t->cap = cap;
	}
	char *d = dup_n(s, n);
	if (!d)
		return -ENOMEM;
	free(t->s[iid]);
	t->s[iid] = d;
	return 0;
}

static const char *table_get(const struct table *t, uint64_t iid)
{
	return iid < t->cap && t->s[iid] ? t->s[iid] : NULL;
}

static struct seq *seq_for(struct tr_pf *p, uint32_t id)
{
	for (int i = 0; i < MAX_SEQ; i++)
		if (p->seqs[i].used && p->seqs[i].id == id)
			return &p->seqs[i];
	for (int i = 0; i < MAX_SEQ; i++)
		if (!p->seqs[i].used) {
			p->seqs[i] = (struct seq){.id = id, .used = true};
			return &p->seqs[i];
		}
	return &p->seqs[MAX_SEQ - 1]; /* more sequences than kept: they share the last */
}

/* Returns the bytes the sequence's tables held. */
static size_t seq_clear(struct seq *s)
{
	return table_clear(&s->names) + table_clear(&s->cats) + table_clear(&s->keys) +
	       table_clear(&s->values);
}

static size_t track_home(uint64_t uuid, size_t cap)
{
	return (size_t)(uuid * 0x9e3779b97f4a7c15ull >> 17) & (cap - 1);
}

static struct track *track_find(struct tr_pf *p, uint64_t uuid)
{
	if (!p->tracks_cap)
		return NULL;
	size_t i = track_home(uuid, p->tracks_cap);
	while (p->tracks[i].used && p->tracks[i].uuid != uuid)
		i = (i + 1) & (p->tracks_cap - 1);
	return p->tracks[i].used ? &p->tracks[i] : NULL;
}

static struct track *track_add(struct tr_pf *p, uint64_t uuid)
{
	struct track *t = track_find(p, uuid);
	if (t)
		return t;
	if ((p->ntracks + 1) * 2 > p->tracks_cap) {
		size_t cap = p->tracks_cap ? p->tracks_cap * 2 : 256;
		struct track *n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < p->tracks_cap; i++) {
			if (!p->tracks[i].used)
				continue;
			size_t j = track_home(p->tracks[i].uuid, cap);
			while (n[j].used)
				j = (j + 1) & (cap - 1);
			n[j] = p->tracks[i];
		}
		free(p->tracks);
		p->tracks = n;
		p->tracks_cap = cap;
	}
	size_t i = track_home(uuid, p->tracks_cap);
	while (p->tracks[i].used)
		i = (i + 1) & (p->tracks_cap - 1);
	p->tracks[i] = (struct track){.uuid = uuid, .used = true, .tid = -1};
	p->ntracks++;
	return &p->tracks[i];
}

/* ---- events ------------------------------------------------------------- */

static void put_text(struct tr_pf *p, char *dst, size_t cap, const char *s)
{
	if (tr_copy_text(dst, cap, s, strlen(s))) {
		p->st->truncated++;
		p->ev->truncated++;
	}
}

static void put_ident(struct tr_ident *id, int64_t v)
{
	id->kind = TR_NUMBER;
	id->is_int = true;
	id->num = v;
	snprintf(id->text, sizeof(id->text), "%" PRId64, v);
}

static void add_pair(struct tr_pf *p, struct tr_pair *arr, unsigned *n, unsigned max, const char *key,
                     const char *value)
{
	if (*n >= max) {
		p->st->dropped++;
		p->ev->dropped++;
		return;
	}
	struct tr_pair *x = &arr[(*n)++];
	put_text(p, x->key, sizeof(x->key), key);
	size_t len = strlen(value);
	x->truncated = len >= sizeof(x->value);
	put_text(p, x->value, sizeof(x->value), value);
}

static int emit(struct tr_pf *p)
{
	p->st->events++;
	int rc = p->h->event_cb ? p->h->event_cb(p->ev, p->h->user_arg) : 0;
	return rc ? (p->status = rc) : 0;
}

static int member(struct tr_pf *p, const char *key, const char *json)
{
	int rc = p->h->member_cb ? p->h->member_cb(key, json, strlen(json), false, p->h->user_arg) : 0;
	return rc ? (p->status = rc) : 0;
}

/* The pid of a track: its own, or its nearest ancestor's. */
static int64_t track_pid(struct tr_pf *p, const struct track *t)
{
	for (int depth = 0; t && depth < 64; depth++) {
		if (t->process || t->thread)
			return t->pid;
		t = t->parent ? track_find(p, t->parent) : NULL;
	}
	return 0;
}

static void place(struct tr_pf *p, const struct track *t)
{
	put_ident(&p->ev->pid, track_pid(p, t));
	put_ident(&p->ev->tid, t->process ? 0 : t->tid);
}

/* An "M" event, as strobe's JSON has them: what (process_name, ...) for
 * (pid, tid), with one arg whose value is JSON text. */
static int meta_event(struct tr_pf *p, const char *what, int64_t pid, int64_t tid, const char *arg_key,
                      const char *json)
{
	tr_event_reset(p->ev, p->pkt_offset);
	strcpy(p->ev->ph, "M");
	put_text(p, p->ev->name, sizeof(p->ev->name), what);
	put_ident(&p->ev->pid, pid);
	put_ident(&p->ev->tid, tid);
	add_pair(p, p->ev->args, &p->ev->nargs, TR_ARGS_MAX, arg_key, json);
	return emit(p);
}

/* A name event: the value as a JSON string. */
static int name_event(struct tr_pf *p, const char *what, int64_t pid, int64_t tid, const char *arg_key,
                      const char *value)
{
	struct sbuf j = {0};
	sb_json(&j, (const unsigned char *)value, strlen(value));
	int rc = j.oom ? fail(p, -ENOMEM, "out of memory") : meta_event(p, what, pid, tid, arg_key, j.s);
	free(j.s);
	return rc;
}

/* A double as JSON: non-finite values as the strings the JSON reader
 * makes of libkineto's bare nan and inf. */
static void json_double(char *buf, size_t n, double d)
{
	if (isfinite(d))
		snprintf(buf, n, "%.17g", d);
	else
		snprintf(buf, n, "\"%s\"", isnan(d) ? "nan" : d > 0 ? "inf" : "-inf");
}

/* One debug annotation appended to kv as key NUL value NUL. Returns false
 * for a malformed one. */
static bool annotation(const struct seq *sq, const struct field *f, struct sbuf *kv, unsigned *n)
{
	struct pb b = sub(f);
	struct field x;
	bool bad = false;
	const char *key = NULL;
	const unsigned char *inline_key = NULL;
	size_t inline_len = 0;
	struct sbuf v = {0};
	char num[64];
	while (next_field(&b, &x, &bad)) {
		switch (x.num) {
		case PF_DA_NAME_IID:
			key = table_get(&sq->keys, x.v);
			break;
		case PF_DA_NAME:
			if (x.wt == PF_WT_LEN)
				inline_key = x.at, inline_len = x.len;
			break;
		case PF_DA_BOOL:
			v.len = 0;
			sb_str(&v, x.v ? "true" : "false");
			break;
		case PF_DA_UINT:
			v.len = 0;
			snprintf(num, sizeof(num), "%" PRIu64, x.v);
			sb_str(&v, num);
			break;
		case PF_DA_INT:
			v.len = 0;
			snprintf(num, sizeof(num), "%" PRId64, (int64_t)x.v);
			sb_str(&v, num);
			break;
		case PF_DA_DOUBLE: {
			double d;
			memcpy(&d, &x.v, 8);
			v.len = 0;
			json_double(num, sizeof(num), d);
			sb_str(&v, num);
			break;
		}
		case PF_DA_STRING:
			if (x.wt == PF_WT_LEN) {
				v.len = 0;
				sb_json(&v, x.at, x.len);
			}
			break;
		case PF_DA_STRING_IID: {
			const char *str = table_get(&sq->values, x.v);
			if (str) {
				v.len = 0;
				sb_json(&v, (const unsigned char *)str, strlen(str));
			}
			break;
		}
		case PF_DA_POINTER:
			v.len = 0;
			snprintf(num, sizeof(num), "\"0x%" PRIx64 "\"", x.v);
			sb_str(&v, num);
			break;
		case PF_DA_JSON:
			if (x.wt == PF_WT_LEN) {
				v.len = 0;
				sb_json_value(&v, x.at, x.len);
			}
			break;
		default: /* nested values and interned strings: not shown */
			break;
		}
	}
	if (bad) {
		free(v.s);
		return false;
	}
	if (v.len && (key || inline_key)) {
		if (key)
			sb_str(kv, key);
		else
			sb_text(kv, inline_key, inline_len);
		sb_add(kv, "", 1);
		sb_add(kv, v.s, v.len);
		sb_add(kv, "", 1);
		(*n)++;
	}
	free(v.s);
	return true;
}

/* ---- packets ------------------------------------------------------------ */

/* ts of clock in CLOCK_REALTIME ns. A time that does not fit in int64
 * (a corrupt clock or timestamp) is held at the end of the range and
 * counted in bad_times. */
static int64_t to_realtime(struct tr_pf *p, const struct seq *sq, uint64_t clock, uint64_t ts)
{
	int64_t off = 0, t;
	if (clock >= 64 && clock < 128 && sq->seq_known[clock - 64])
		off = sq->seq_offset[clock - 64];
	else if (clock < 16 && p->global_known[clock])
		off = p->global_offset[clock];
	if (ts > INT64_MAX || __builtin_add_overflow((int64_t)ts, off, &t)) {
		p->st->bad_times++;
		return ts > INT64_MAX || off > 0 ? INT64_MAX : INT64_MIN;
	}
	return t;
}

/* A timestamp on a clock of the sequence (ids 64-127) as that clock's
 * time: an incremental clock's is a delta from its last time (as Perfetto's
 * trace_processor reads it: ClockSynchronizer's ClockDomain::ToNs). A clock
 * no snapshot defined, a negative delta or one past the clock's range is
 * an error: every later time of the sequence would be wrong. */
static int sequence_time(struct tr_pf *p, struct seq *sq, uint64_t clock, uint64_t *ts)
{
	if (clock < 64 || clock >= 128)
		return 0;
	unsigned i = (unsigned)clock - 64;
	if (!sq->seq_known[i])
		return fail(p, -EBADMSG,
		            "timestamp at byte %" PRIu64
		            " on clock %u of sequence %u, which no clock snapshot defines",
		            p->pkt_offset, (unsigned)clock, (unsigned)sq->id);
	if (!sq->seq_incremental[i])
		return 0;
	if (*ts > INT64_MAX)
		return fail(p, -EBADMSG, "negative timestamp delta (%" PRId64 " ns) at byte %" PRIu64,
		            (int64_t)*ts, p->pkt_offset);
	if (sq->seq_last[i] > INT64_MAX || *ts > INT64_MAX - sq->seq_last[i])
		return fail(p, -EBADMSG,
		            "timestamp delta at byte %" PRIu64 " takes clock %u past 2^63 ns (%" PRIu64
		            " + %" PRIu64 ")",
		            p->pkt_offset, (unsigned)clock, sq->seq_last[i], *ts);
	sq->seq_last[i] += *ts;
	*ts = sq->seq_last[i];
	return 0;
}

static void clock_snapshot(struct tr_pf *p, struct seq *sq, const struct field *f, bool *bad)
{
	uint64_t ids[32], tss[32];
	bool incremental[32];
	int n = 0;
	bool realtime = false;
	uint64_t rt = 0;
	struct pb b = sub(f);
	struct field x;
	while (next_field(&b, &x, bad)) {
		if (x.num != PF_SNAP_CLOCKS || x.wt != PF_WT_LEN || n == 32)
			continue;
		struct pb c = sub(&x);
		struct field y;
		uint64_t id = 0, ts = 0;
		bool inc = false;
		while (next_field(&c, &y, bad)) {
			if (y.num == PF_CLOCK_ID)
				id = y.v;
			else if (y.num == PF_CLOCK_TS)
				ts = y.v;
			else if (y.num == PF_CLOCK_INCREMENTAL)
				inc = y.v != 0;
		}
		incremental[n] = inc;
		ids[n] = id;
		tss[n++] = ts;
		if (id == PF_CLOCK_REALTIME)
			realtime = true, rt = ts;
	}
	if (!realtime)
		return;
	for (int i = 0; i < n; i++) {
		int64_t off = (int64_t)(rt - tss[i]);
		if (ids[i] >= 64 && ids[i] < 128) {
			/* An incremental clock's next delta counts from here. */
			sq->seq_offset[ids[i] - 64] = off;
			sq->seq_known[ids[i] - 64] = true;
			sq->seq_incremental[ids[i] - 64] = incremental[i];
			sq->seq_last[ids[i] - 64] = tss[i];
		} else if (ids[i] < 16) {
			p->global_offset[ids[i]] = off;
			p->global_known[ids[i]] = true;
		}
	}
}

static int interned(struct tr_pf *p, struct seq *sq, const struct field *f, bool *bad)
{
	struct pb b = sub(f);
	struct field x;
	while (next_field(&b, &x, bad)) {
		struct table *t = x.num == PF_ID_CATEGORIES          ? &sq->cats
		                  : x.num == PF_ID_NAMES             ? &sq->names
		                  : x.num == PF_ID_ANNOTATION_NAMES  ? &sq->keys
		                  : x.num == PF_ID_ANNOTATION_VALUES ? &sq->values
		                                                     : NULL;
		if (!t || x.wt != PF_WT_LEN)
			continue;
		struct pb e = sub(&x);
		struct field y;
		uint64_t iid = 0;
		const unsigned char *name = NULL;
		size_t len = 0;
		while (next_field(&e, &y, bad)) {
			if (y.num == PF_INTERNED_IID)
				iid = y.v;
			else if (y.num == PF_INTERNED_NAME && y.wt == PF_WT_LEN)
				name = y.at, len = y.len;
		}
		int rc = name ? table_put(t, iid, name, len, &p->interned) : 0;
		if (rc == -E2BIG)
			return fail(p, -EBADMSG,
			            "interned strings past %zu MiB at byte %" PRIu64 " (corrupt file?)",
			            INTERN_BUDGET >> 20, p->pkt_offset);
		if (rc)
			return fail(p, -ENOMEM, "out of memory");
	}
	return 0;
}

/* The tid of a track without a thread: strobe's "stream S" and "stream S
 * (overlap K)" rows keep S (K * 2^40 + S), as in its JSON; others get one of
 * their own. */
static int64_t custom_tid(struct tr_pf *p, const char *name)
{
	long long s, k;
	char tail[4];
	if (name && sscanf(name, "stream %lld (overlap %lld%1[)]", &s, &k, tail) == 3 && s >= 0 && k > 0 &&
	    k < 1024 && s < STREAM_LANE)
		return k * STREAM_LANE + s;
	int used = 0;
	if (name && sscanf(name, "stream %lld %n", &s, &used) == 1 && s >= 0 && s < STREAM_LANE &&
	    !name[used])
		return s;
	return CUSTOM_TID + p->next_tid++;
}

static int descriptor(struct tr_pf *p, const struct field *f, bool *bad)
{
	struct pb b = sub(f);
	struct field x;
	uint64_t uuid = 0, parent = 0;
	const unsigned char *name = NULL, *pname = NULL, *tname = NULL;
	size_t name_len = 0, pname_len = 0, tname_len = 0;
	bool process = false, thread = false, counter = false, has_sort = false;
	int64_t pid = 0, tid = 0, sort = 0;
	struct sbuf labels = {0};
	while (next_field(&b, &x, bad)) {
		switch (x.num) {
		case PF_TD_UUID:
			uuid = x.v;
			break;
		case PF_TD_PARENT:
			parent = x.v;
			break;
		case PF_TD_NAME:
			if (x.wt == PF_WT_LEN)
				name = x.at, name_len = x.len;
			break;
		case PF_TD_PROCESS:
		case PF_TD_THREAD:
			if (x.wt != PF_WT_LEN)
				break;
			if (x.num == PF_TD_PROCESS)
				process = true;
			else
				thread = true;
			struct pb d = sub(&x);
			struct field y;
			while (next_field(&d, &y, bad)) {
				if (y.num == PF_PD_PID /* == PF_THD_PID */)
					pid = (int64_t)(int32_t)y.v;
				else if (x.num == PF_TD_THREAD && y.num == PF_THD_TID)
					tid = (int64_t)(int32_t)y.v;
				else if (y.num == PF_PD_SORT /* == PF_THD_SORT */ && y.wt == PF_WT_VARINT)
					sort = (int64_t)(int32_t)y.v, has_sort = true;
				else if (x.num == PF_TD_PROCESS && y.num == PF_PD_NAME && y.wt == PF_WT_LEN)
					pname = y.at, pname_len = y.len;
				else if (x.num == PF_TD_THREAD && y.num == PF_THD_NAME && y.wt == PF_WT_LEN)
					tname = y.at, tname_len = y.len;
				else if (x.num == PF_TD_PROCESS && y.num == PF_PD_LABELS &&
				         y.wt == PF_WT_LEN) {
					if (labels.len)
						sb_add(&labels, ",", 1);
					sb_text(&labels, y.at, y.len);
				}
			}
			break;
		case PF_TD_COUNTER:
			counter = true;
			break;
		default:
			break;
		}
	}
	if (*bad || !uuid) {
		free(labels.s);
		return 0;
	}
	if (p->ntracks >= TR_PF_TRACKS_MAX && !track_find(p, uuid)) {
		p->st->cut_tracks++;
		free(labels.s);
		return 0;
	}
	struct track *t = track_add(p, uuid);
	if (!t) {
		free(labels.s);
		return fail(p, -ENOMEM, "out of memory");
	}
	bool fresh = !t->named;
	t->parent = parent;
	t->process = process;
	t->thread = thread;
	t->counter = counter;
	free(t->name);
	t->name = name    ? dup_n(name, name_len)
	          : pname ? dup_n(pname, pname_len)
	          : tname ? dup_n(tname, tname_len)
	                  : dup_n((const unsigned char *)"", 0);
	t->named = true;
	t->metadata = !parent && !process && !thread && t->name && !strcmp(t->name, METADATA_TRACK);
	if (process || thread)
		t->pid = pid;
	if (thread)
		t->tid = tid;
	else if (!process && fresh)
		t->tid = custom_tid(p, t->name);
	int rc = t->name ? 0 : fail(p, -ENOMEM, "out of memory");
	if (!rc && process && pname) {
		char *s = dup_n(pname, pname_len);
		rc = s ? name_event(p, "process_name", pid, 0, "name", s) : fail(p, -ENOMEM, "out of memory");
		free(s);
	}
	if (!rc && process && labels.len)
		rc = name_event(p, "process_labels", pid, 0, "labels", labels.s);
	if (!rc && has_sort && (process || thread)) {
		char num[32];
		snprintf(num, sizeof(num), "%" PRId64, sort);
		rc = meta_event(p, process ? "process_sort_index" : "thread_sort_index", pid,
		                process ? 0 : tid, "sort_index", num);
	}
	if (!rc && !process && !counter && !t->metadata)
		rc = name_event(p, "thread_name", track_pid(p, t), t->tid, "name", t->name);
	free(labels.s);
	return rc;
}

static void fill_args(struct tr_pf *p, const char *kv, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		const char *key = kv, *value = kv + strlen(kv) + 1;
		add_pair(p, p->ev->args, &p->ev->nargs, TR_ARGS_MAX, key, value);
		kv = value + strlen(value) + 1;
	}
}

static int flow_event(struct tr_pf *p, const struct track *t, int64_t ts, uint64_t uuid, bool start)
{
	tr_event_reset(p->ev, p->pkt_offset);
	strcpy(p->ev->ph, start ? "s" : "f");
	/* strobe writes id << 2 | kind: 1 fwdbwd, 2 ac2g. */
	unsigned kind = (unsigned)(uuid & 3);
	const char *cat = kind == 1 ? "fwdbwd" : kind == 2 ? "ac2g" : "flow";
	strcpy(p->ev->cat, cat);
	strcpy(p->ev->name, cat);
	place(p, t);
	put_ident(&p->ev->id, (int64_t)(kind == 1 || kind == 2 ? uuid >> 2 : uuid));
	p->ev->has_ts = true;
	p->ev->ts_ns = ts - p->base;
	if (!start)
		add_pair(p, p->ev->extra, &p->ev->nextra, TR_EXTRA_MAX, "bp", "\"e\"");
	return emit(p);
}

/* Perfetto's timestamps are absolute: every ts counts from 0, said once
 * before the first event. */
/* The flows that start (out) and end (in) on an event of t at ts. */
static int flows(struct tr_pf *p, const struct track *t, int64_t ts, const uint64_t *out, size_t nout,
                 const uint64_t *in, size_t nin)
{
	int rc = 0;
	for (size_t i = 0; i < nout && !rc; i++)
		rc = flow_event(p, t, ts, out[i], true);
	for (size_t i = 0; i < nin && !rc; i++)
		rc = flow_event(p, t, ts, in[i], false);
	return rc;
}

static int base_time(struct tr_pf *p)
{
	if (p->have_base)
		return 0;
	p->have_base = true;
	return member(p, "baseTimeNanoseconds", "0");
}

static void free_slice(struct open_slice *s)
{
	free(s->name);
	free(s->cat);
	free(s->args);
	free(s->flows_out);
	free(s->flows_in);
}

/* The slice on top of t's stack ends at ts: its "X" event and flows. */
static int end_slice(struct tr_pf *p, struct track *t, int64_t ts)
{
	if (t->cut) {
		t->cut--; /* the end of a begin past the limits, counted then */
		return 0;
	}
	if (!t->nopen) {
		p->st->skipped++; /* an end without a begin */
		return 0;
	}
	struct open_slice s = t->open[--t->nopen];
	p->open_all--;
	p->open_bytes -= s.bytes;
	p->st->negative_durs += ts < s.ts;
	tr_event_reset(p->ev, s.offset);
	strcpy(p->ev->ph, "X");
	put_text(p, p->ev->cat, sizeof(p->ev->cat), s.cat ? s.cat : "");
	put_text(p, p->ev->name, sizeof(p->ev->name), s.name ? s.name : "");
	place(p, t);
	p->ev->has_ts = p->ev->has_dur = true;
	p->ev->ts_ns = s.ts - p->base;
	if (ts < s.ts)
		p->ev->dur_ns = 0;
	else if (__builtin_sub_overflow(ts, s.ts, &p->ev->dur_ns)) {
		p->ev->dur_ns = INT64_MAX;
		p->st->bad_times++;
	}
	fill_args(p, s.args ? s.args : "", s.nargs);
	int rc = emit(p);
	if (!rc)
		rc = flows(p, t, s.ts, s.flows_out, s.nout, s.flows_in, s.nin);
	free_slice(&s);
	return rc;
}

static int track_event(struct tr_pf *p, struct seq *sq, const struct field *f, bool has_ts, int64_t ts,
                       bool *bad)
{
	struct pb b = sub(f);
	struct field x;
	uint64_t type = 0, track_uuid = 0;
	const char *name = NULL;
	const unsigned char *inline_name = NULL;
	size_t inline_len = 0;
	struct sbuf cats = {0}, kv = {0};
	unsigned nargs = 0;
	bool have_value = false;
	double value = 0;
	uint64_t out[16], in[16];
	size_t nout = 0, nin = 0;
	while (next_field(&b, &x, bad)) {
		switch (x.num) {
		case PF_TE_TYPE:
			type = x.v;
			break;
		case PF_TE_TRACK:
			track_uuid = x.v;
			break;
		case PF_TE_NAME_IID:
			name = table_get(&sq->names, x.v);
			break;
		case PF_TE_NAME:
			if (x.wt == PF_WT_LEN)
				inline_name = x.at, inline_len = x.len;
			break;
		case PF_TE_CATEGORY_IIDS: /* one or packed */
		case PF_TE_CATEGORIES: {
			if (x.num == PF_TE_CATEGORIES && x.wt == PF_WT_LEN) {
				if (cats.len)
					sb_add(&cats, ",", 1);
				sb_text(&cats, x.at, x.len);
			} else if (x.num == PF_TE_CATEGORY_IIDS) {
				struct pb q = x.wt == PF_WT_LEN ? sub(&x) : (struct pb){0};
				uint64_t iid = x.v;
				do {
					if (x.wt == PF_WT_LEN && !varint(&q, &iid))
						break;
					const char *c = table_get(&sq->cats, iid);
					if (c) {
						if (cats.len)
							sb_add(&cats, ",", 1);
						sb_str(&cats, c);
					}
				} while (x.wt == PF_WT_LEN && q.p < q.end);
			}
			break;
		}
		case PF_TE_ANNOTATIONS:
			if (x.wt == PF_WT_LEN && !annotation(sq, &x, &kv, &nargs))
				*bad = true;
			break;
		case PF_TE_COUNTER_INT:
			have_value = true;
			value = (double)(int64_t)x.v;
			break;
		case PF_TE_COUNTER_DOUBLE:
			have_value = true;
			memcpy(&value, &x.v, 8);
			break;
		case PF_TE_FLOW_IDS:
		case PF_TE_FLOW_IDS_OLD:
			if (nout < 16)
				out[nout++] = x.v;
			break;
		case PF_TE_TERMINATING_FLOW_IDS:
		case PF_TE_TERMINATING_FLOW_IDS_OLD:
			if (nin < 16)
				in[nin++] = x.v;
			break;
		default:
			break;
		}
	}
	int rc = 0;
	if (!track_uuid)
		track_uuid = sq->default_track;
	struct track *t = track_uuid ? track_find(p, track_uuid) : NULL;
	if (*bad || cats.oom || kv.oom || !t || !has_ts) {
		if (cats.oom || kv.oom)
			rc = fail(p, -ENOMEM, "out of memory");
		else if (!*bad)
			p->st->skipped++; /* on a track never described, or untimed */
		goto out;
	}
	char *own_name = inline_name ? dup_n(inline_name, inline_len) : NULL;
	const char *nm = own_name ? own_name : name ? name : "";
	switch (type) {
	case PF_TYPE_SLICE_BEGIN: {
		size_t bytes = sizeof(struct open_slice) + strlen(nm) + 1 + cats.len + 1 + kv.len +
		               (nout + nin) * sizeof(uint64_t);
		if (t->cut || t->nopen >= TR_PF_OPEN_DEPTH || p->open_all >= TR_PF_OPEN_MAX ||
		    p->open_bytes + bytes > TR_PF_OPEN_BYTES) {
			/* Held no more: neither this begin nor, once it comes, its end. */
			t->cut++;
			p->st->open_cut++;
			break;
		}
		if (t->nopen == t->open_cap) {
			size_t cap = t->open_cap ? t->open_cap * 2 : 4;
			struct open_slice *g = realloc(t->open, cap * sizeof(*g));
			if (!g) {
				rc = fail(p, -ENOMEM, "out of memory");
				break;
			}
			t->open = g;
			t->open_cap = cap;
		}
		struct open_slice *s = &t->open[t->nopen++];
		*s = (struct open_slice){.ts = ts,
		                         .offset = p->pkt_offset,
		                         .nargs = nargs,
		                         .nout = nout,
		                         .nin = nin,
		                         .bytes = bytes};
		s->name = strdup(nm);
		s->cat = strdup(cats.len ? cats.s : "");
		s->args = kv.s;
		kv.s = NULL;
		s->flows_out = nout ? malloc(nout * sizeof(uint64_t)) : NULL;
		s->flows_in = nin ? malloc(nin * sizeof(uint64_t)) : NULL;
		if (!s->name || !s->cat || (nout && !s->flows_out) || (nin && !s->flows_in)) {
			free_slice(s);
			t->nopen--;
			rc = fail(p, -ENOMEM, "out of memory");
			break;
		}
		if (nout)
			memcpy(s->flows_out, out, nout * sizeof(uint64_t));
		if (nin)
			memcpy(s->flows_in, in, nin * sizeof(uint64_t));
		p->open_all++;
		p->open_bytes += bytes;
		break;
	}
	case PF_TYPE_SLICE_END:
		rc = end_slice(p, t, ts);
		break;
	case PF_TYPE_INSTANT:
		if (t->metadata && !strcmp(nm, "metadata")) {
			/* strobe's metadata: the file's top-level members. */
			const char *k = kv.s;
			for (unsigned i = 0; k && i < nargs && !rc; i++) {
				const char *v = k + strlen(k) + 1;
				/* A base kept by a conversion from JSON is already in the times. */
				if (strcmp(k, "baseTimeNanoseconds"))
					rc = member(p, k, v);
				k = v + strlen(v) + 1;
			}
			break;
		}
		tr_event_reset(p->ev, p->pkt_offset);
		strcpy(p->ev->ph, "i");
		put_text(p, p->ev->cat, sizeof(p->ev->cat), cats.len ? cats.s : "");
		put_text(p, p->ev->name, sizeof(p->ev->name), nm);
		place(p, t);
		p->ev->has_ts = true;
		p->ev->ts_ns = ts - p->base;
		add_pair(p, p->ev->extra, &p->ev->nextra, TR_EXTRA_MAX, "s", "\"t\"");
		fill_args(p, kv.s ? kv.s : "", nargs);
		rc = emit(p);
		if (!rc)
			rc = flows(p, t, ts, out, nout, in, nin);
		break;
	case PF_TYPE_COUNTER: {
		if (!have_value)
			break;
		tr_event_reset(p->ev, p->pkt_offset);
		strcpy(p->ev->ph, "C");
		put_text(p, p->ev->name, sizeof(p->ev->name), t->name ? t->name : "");
		put_ident(&p->ev->pid, track_pid(p, t));
		p->ev->has_ts = true;
		p->ev->ts_ns = ts - p->base;
		char num[64];
		json_double(num, sizeof(num), value);
		add_pair(p, p->ev->args, &p->ev->nargs, TR_ARGS_MAX, t->name ? t->name : "value", num);
		rc = emit(p);
		break;
	}
	default:
		p->st->skipped++;
		break;
	}
	free(own_name);
out:
	free(cats.s);
	free(kv.s);
	return rc;
}

static int packet(struct tr_pf *p, const unsigned char *d, size_t n)
{
	struct pb b = {d, d + n};
	struct field x, te = {0}, defaults = {0};
	bool bad = false, has_te = false, has_defaults = false, has_ts = false, has_snapshot = false;
	uint64_t seq_id = 0, flags = 0, ts = 0, clock = 0;
	/* First the packet's scalars, so its other parts read with them. */
	while (next_field(&b, &x, &bad)) {
		if (x.num == PF_PKT_SEQ_ID)
			seq_id = x.v;
		else if (x.num == PF_PKT_SEQ_FLAGS)
			flags = x.v;
		else if (x.num == PF_PKT_TIMESTAMP)
			ts = x.v, has_ts = true;
		else if (x.num == PF_PKT_CLOCK_ID)
			clock = x.v;
		else if (x.num == PF_PKT_TRACK_EVENT && x.wt == PF_WT_LEN)
			te = x, has_te = true;
		else if (x.num == PF_PKT_CLOCK_SNAPSHOT)
			has_snapshot = true;
		else if (x.num == PF_PKT_DEFAULTS && x.wt == PF_WT_LEN)
			defaults = x, has_defaults = true;
	}
	if (bad)
		return fail(p, -EBADMSG, "malformed packet at byte %" PRIu64, p->pkt_offset);
	int rc = base_time(p); /* before any event */
	if (rc)
		return rc;
	struct seq *sq = seq_for(p, (uint32_t)seq_id);
	if (flags & PF_SEQ_CLEARED) {
		p->interned -= seq_clear(sq);
		sq->default_clock = 0;
		sq->default_track = 0;
	}
	if (has_defaults) {
		/* New defaults replace the old ones whole. */
		sq->default_clock = 0;
		sq->default_track = 0;
		struct pb q = sub(&defaults);
		struct field y;
		while (next_field(&q, &y, &bad)) {
			if (y.num == PF_DEFAULTS_CLOCK_ID) {
				sq->default_clock = y.v;
			} else if (y.num == PF_DEFAULTS_TRACK_EVENT && y.wt == PF_WT_LEN) {
				struct pb r = sub(&y);
				struct field z;
				while (next_field(&r, &z, &bad))
					if (z.num == PF_TED_TRACK)
						sq->default_track = z.v;
			}
		}
	}
	b = (struct pb){d, d + n};
	while (!rc && next_field(&b, &x, &bad)) {
		if (x.wt != PF_WT_LEN)
			continue;
		if (x.num == PF_PKT_CLOCK_SNAPSHOT)
			clock_snapshot(p, sq, &x, &bad);
		else if (x.num == PF_PKT_INTERNED)
			rc = interned(p, sq, &x, &bad);
		else if (x.num == PF_PKT_TRACK_DESCRIPTOR)
			rc = descriptor(p, &x, &bad);
	}
	uint64_t c = clock ? clock : sq->default_clock ? sq->default_clock : PF_CLOCK_BOOTTIME;
	if (!rc && has_ts && !has_snapshot && !bad)
		rc = sequence_time(p, sq, c, &ts);
	if (!rc && has_te && !bad)
		rc = track_event(p, sq, &te, has_ts, to_realtime(p, sq, c, ts), &bad);
	if (!rc && bad)
		rc = fail(p, -EBADMSG, "malformed packet at byte %" PRIu64, p->pkt_offset);
	return rc;
}

/* ---- framing ------------------------------------------------------------ */

/* A Perfetto trace is a sequence of Trace.packet fields: tag 0x0a, a varint
 * length, then a TracePacket whose first byte is a field tag. JSON text
 * starts with '{' or '[' after any whitespace (a JSON file may start with a
 * newline, 0x0a, too). Only a first packet that lies whole in the bytes
 * read, followed by another packet or the end, counts. */
bool tr_pf_detect(const unsigned char *m, size_t n)
{
	size_t i = 0;
	while (i < n && (m[i] == ' ' || m[i] == '\t' || m[i] == '\r' || m[i] == '\n'))
		i++;
	if (i < n && (m[i] == '{' || m[i] == '['))
		return false;
	if (n < 3 || m[0] != PACKET_TAG)
		return false;
	size_t k = 1;
	uint64_t len = 0;
	for (int shift = 0; k < n && k < 6; shift += 7) {
		len |= (uint64_t)(m[k] & 0x7f) << shift;
		if (!(m[k++] & 0x80))
			break;
	}
	if (!len || k >= n || len > n - k)
		return false; /* the first packet must lie in what was read */
	unsigned wire = m[k] & 7u;
	bool tag = m[k] >= 8 && (wire == 0 || wire == 1 || wire == 2 || wire == 5);
	/* ...and be followed by the end or by the next packet. */
	return tag && (k + len == n || m[k + len] == PACKET_TAG);
}

struct tr_pf *tr_pf_new(const struct tr_handler *h, struct tr_event *ev, struct tr_stats *stats,
                        const char *label, char *err, size_t errlen)
{
	struct tr_pf *p = calloc(1, sizeof(*p));
	if (p)
		*p = (struct tr_pf){
		    .h = h, .ev = ev, .st = stats, .label = label, .err = err, .errlen = errlen};
	return p;
}

int tr_pf_feed(struct tr_pf *p, const unsigned char *data, size_t n)
{
	size_t i = 0;
	while (i < n && !p->status) {
		switch (p->stage) {
		case 0:
			p->pkt_offset = p->offset + i;
			if (data[i] != PACKET_TAG)
				return fail(p, -EBADMSG, "not a Perfetto trace packet at byte %" PRIu64,
				            p->pkt_offset);
			i++;
			p->stage = 1;
			p->len_acc = 0;
			p->len_shift = 0;
			break;
		case 1: {
			unsigned char c = data[i++];
			p->len_acc |= (uint64_t)(c & 0x7f) << p->len_shift;
			p->len_shift += 7;
			if (c & 0x80) {
				if (p->len_shift >= 63)
					return fail(p, -EBADMSG, "bad packet length at byte %" PRIu64,
					            p->pkt_offset);
				break;
			}
			if (p->len_acc > MAX_PACKET)
				return fail(p, -EBADMSG,
				            "a packet of %" PRIu64 " bytes at byte %" PRIu64
				            " (corrupt file?)",
				            p->len_acc, p->pkt_offset);
			p->pkt_len = (size_t)p->len_acc;
			p->pkt_have = 0;
			if (p->pkt_len > p->pkt_cap) {
				unsigned char *g = realloc(p->pkt, p->pkt_len);
				if (!g)
					return fail(p, -ENOMEM, "out of memory");
				p->pkt = g;
				p->pkt_cap = p->pkt_len;
			}
			p->stage = 2;
			if (p->pkt_len)
				break;
			__attribute__((fallthrough)); /* an empty packet is complete */
		}
		case 2: {
			size_t take = p->pkt_len - p->pkt_have < n - i ? p->pkt_len - p->pkt_have : n - i;
			if (take)
				memcpy(p->pkt + p->pkt_have, data + i, take);
			p->pkt_have += take;
			i += take;
			if (p->pkt_have == p->pkt_len) {
				p->stage = 0;
				/* An empty packet before any other has no buffer yet. */
				int rc = packet(p, p->pkt ? p->pkt : (const unsigned char *)"", p->pkt_len);
				if (rc)
					return rc;
			}
			break;
		}
		default:
			break;
		}
	}
	p->offset += n;
	return p->status;
}

int tr_pf_finish(struct tr_pf *p)
{
	if (p->status)
		return p->status;
	if (p->stage)
		return fail(p, -EBADMSG, "truncated: the file ends inside the packet at byte %" PRIu64,
		            p->pkt_offset);
	/* Slices never ended are not written, and counted (those past the
	 * limits were counted when they began). */
	for (size_t i = 0; i < p->tracks_cap; i++)
		p->st->unended += p->tracks[i].nopen;
	return 0;
}

void tr_pf_free(struct tr_pf *p)
{
	if (!p)
		return;
	for (int i = 0; i < MAX_SEQ; i++)
		seq_clear(&p->seqs[i]);
	for (size_t i = 0; i < p->tracks_cap; i++) {
		struct track *t = &p->tracks[i];
		for (size_t k = 0; k < t->nopen; k++)
			free_slice(&t->open[k]);
		free(t->open);
		free(t->name);
	}
	free(p->tracks);
	free(p->pkt);
	free(p);
}

/* Perfetto protobuf encoding by hand: varints, and nested messages whose
 * length is written once their end is known (in the byte reserved for it,
 * or, for a message of 128 bytes or more, the content moved up to make
 * room for a longer one). */
#include "common/pfenc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/pf_fields.h"
#include "common/sink.h"
#include "common/varint.h"

#define BUF_SIZE         (1u << 20)
#define LEN_RESERVE      5           /* the most bytes a message length takes (below 2^35) */
#define SEQ_ID           1           /* every packet but the default counter track's samples */
#define SEQ_COUNTERS     2           /* those samples: their own default track and clock */
#define SEQ_CLOCK        64          /* the sequence's own clock: ns since the origin */
#define INTERN_MAX_LEN   8192        /* longer strings are written inline */
#define INTERN_MAX_BYTES (16u << 20) /* then incremental state starts over */
#define PTR_CACHE        16384       /* 10 000 distinct names still mostly hit */
/* String annotation values up to this long are interned: the short ones
 * repeat (memcpy kinds, NVTX domains and colours, stream names); a long
 * one is mostly unique, and costs a few bytes more interned. */
#define VALUE_INTERN_MAX 64

enum { T_CATEGORY, T_NAME, T_KEY, T_VALUE, TABLES };

struct slot {
	uint64_t hash;
	uint64_t iid; /* 0 = empty */
	size_t off;   /* in the arena */
	size_t len;
};

struct ptr_slot {
	const char *p;
	uint64_t iid;
	uint32_t gen;
};

struct table {
	struct slot *slots;
	size_t count, cap;
	uint64_t next_iid;
	struct ptr_slot *cache;
};

/* An interned string first used by the packet being built. */
struct fresh {
	int table;
	uint64_t iid;
	size_t off; /* in the arena, which may move while a packet is built */
	size_t len;
};

struct strb_pfenc {
	struct strb_sink *sink;
	int err;
	uint64_t bytes;
	int64_t origin;
	bool stable, incremental;
	/* Per sequence (SEQ_ID, SEQ_COUNTERS): incremental, the previous
	 * event's time since the origin; TrackEventDefaults.track_uuid (0 for
	 * none, and no SEQ_COUNTERS sequence). */
	uint64_t last[2], default_track[2];
	uint64_t next_uuid;
	uint32_t gen;
	struct table tables[TABLES];
	char *arena;
	size_t arena_len, arena_cap;
	struct fresh *fresh;
	size_t nfresh, fresh_cap;
	unsigned char *buf;
	size_t n, cap;
};

/* ---- bytes ---------------------------------------------------------- */

static void flush(struct strb_pfenc *e)
{
	if (e->n && !e->err)
		e->err = strb_sink_write(e->sink, e->buf, e->n);
	e->bytes += e->n;
	e->n = 0;
}

/* Room for a packet of at most `bound` bytes, contiguous in the buffer. */
static bool room(struct strb_pfenc *e, size_t bound)
{
	if (e->n + bound <= e->cap)
		return true;
	flush(e);
	if (bound <= e->cap)
		return true;
	unsigned char *nb = realloc(e->buf, bound);
	if (!nb) {
		if (!e->err)
			e->err = -ENOMEM;
		return false;
	}
	e->buf = nb;
	e->cap = bound;
	return true;
}

static inline void varint(struct strb_pfenc *e, uint64_t v)
{
	e->n = (size_t)(strb_varint_put(e->buf + e->n, v) - e->buf);
}

static inline void tag(struct strb_pfenc *e, unsigned field, unsigned wt)
{
	varint(e, (uint64_t)field << 3 | wt);
}

static inline void put_varint(struct strb_pfenc *e, unsigned field, uint64_t v)
{
	tag(e, field, PF_WT_VARINT);
	varint(e, v);
}

static inline void put_fixed64(struct strb_pfenc *e, unsigned field, uint64_t v)
{
	tag(e, field, PF_WT_I64);
	for (int i = 0; i < 8; i++)
		e->buf[e->n++] = (unsigned char)(v >> (8 * i));
}

static inline void put_bytes(struct strb_pfenc *e, unsigned field, const char *s, size_t len)
{
	tag(e, field, PF_WT_LEN);
	varint(e, len);
	memcpy(e->buf + e->n, s, len);
	e->n += len;
}

static inline void put_str(struct strb_pfenc *e, unsigned field, const char *s)
{
	put_bytes(e, field, s, strlen(s));
}

/* A nested message's length goes in one byte reserved before its content;
 * most are shorter than 128 bytes, so its end writes that byte. A longer
 * one moves its content up over the bytes its length needs: the buffer
 * then holds what a reservation of LEN_RESERVE bytes and a move down would
 * have left, never more, so the callers' bounds (room()) still hold. */
static inline size_t begin(struct strb_pfenc *e, unsigned field)
{
	tag(e, field, PF_WT_LEN);
	size_t at = e->n;
	e->n += 1;
	return at;
}

static inline void end(struct strb_pfenc *e, size_t at)
{
	size_t len = e->n - at - 1;
	if (len < 0x80) {
		e->buf[at] = (unsigned char)len;
		return;
	}
	/* A nested message never reaches 2^(7 * LEN_RESERVE) bytes (packets are
	 * bounded far below that), so its length fits LEN_RESERVE bytes; the
	 * loop's bound says so to the compiler as well. */
	unsigned char tmp[LEN_RESERVE];
	size_t k = 0;
	uint64_t v = len;
	while (v >= 0x80 && k < LEN_RESERVE - 1) {
		tmp[k++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	tmp[k++] = (unsigned char)(v & 0x7f);
	memmove(e->buf + at + k, e->buf + at + 1, len);
	memcpy(e->buf + at, tmp, k);
	e->n += k - 1;
}

/* Every packet is on the sequence; only the ones that clear its state
 * say so. The others do not set SEQ_NEEDS_INCREMENTAL_STATE: Perfetto's
 * trace_processor reads a packet without sequence_flags with the
 * sequence's interned data, defaults and clocks as one with them (the flag
 * only makes it skip packets while the state is invalid, after data loss;
 * src/trace_processor/importers/proto/proto_trace_reader.cc, ParsePacket),
 * and its track event tokenizer asks for trusted_packet_sequence_id alone
 * (track_event_tokenizer.cc, TokenizeTrackEventPacket). 2 bytes a packet. */
static void seq_tail(struct strb_pfenc *e, unsigned seq, unsigned flags)
{
	put_varint(e, PF_PKT_SEQ_ID, seq + 1);
	if (flags)
		put_varint(e, PF_PKT_SEQ_FLAGS, flags);
}

static void packet_tail(struct strb_pfenc *e, unsigned flags)
{
	seq_tail(e, SEQ_ID - 1, flags);
}

/* ---- interning ------------------------------------------------------- */

static uint64_t hash_str(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h ^ (h >> 29);
}

static void reset_tables(struct strb_pfenc *e)
{
	for (int t = 0; t < TABLES; t++) {
		struct table *tb = &e->tables[t];
		if (tb->cap)
			memset(tb->slots, 0, tb->cap * sizeof(*tb->slots));
		tb->count = 0;
		tb->next_iid = 1;
	}
	e->arena_len = 0;
	e->gen++;
}

static bool grow_table(struct table *tb)
{
	size_t cap = tb->cap ? tb->cap * 2 : 1024;
	struct slot *ns = calloc(cap, sizeof(*ns));
	if (!ns)
		return false;
	for (size_t i = 0; i < tb->cap; i++) {
		if (!tb->slots[i].iid)
			continue;
		size_t j = tb->slots[i].hash & (cap - 1);
		while (ns[j].iid)
			j = (j + 1) & (cap - 1);
		ns[j] = tb->slots[i];
	}
	free(tb->slots);
	tb->slots = ns;
	tb->cap = cap;
	return true;
}

static void clock_packet(struct strb_pfenc *e, unsigned seq, bool first);

/* The iid of s in table t, interning it (and noting it for this packet's
 * InternedData) if it is new; 0 when it is written inline instead. */
static uint64_t intern_len(struct strb_pfenc *e, int t, const char *s, size_t len);

static uint64_t intern(struct strb_pfenc *e, int t, const char *s)
{
	struct table *tb = &e->tables[t];
	struct ptr_slot *ps = NULL;
	if (e->stable && tb->cache) {
		ps = &tb->cache[((uintptr_t)s >> 3 ^ (uintptr_t)s >> 15) & (PTR_CACHE - 1)];
		if (ps->p == s && ps->gen == e->gen)
			return ps->iid;
	}
	size_t len = strlen(s);
	if (len > INTERN_MAX_LEN)
		return 0;
	uint64_t iid = intern_len(e, t, s, len);
	if (ps && iid)
		*ps = (struct ptr_slot){s, iid, e->gen};
	return iid;
}

/* The iid of s (len bytes) in table t, found by hashing, or interned. */
static uint64_t intern_len(struct strb_pfenc *e, int t, const char *s, size_t len)
{
	struct table *tb = &e->tables[t];
	uint64_t h = hash_str(s, len);
	if (tb->cap) {
		for (size_t j = h & (tb->cap - 1); tb->slots[j].iid; j = (j + 1) & (tb->cap - 1)) {
			struct slot *sl = &tb->slots[j];
			if (sl->hash == h && sl->len == len && !memcmp(e->arena + sl->off, s, len))
				return sl->iid;
		}
	}
	if ((tb->count + 1) * 2 > tb->cap && !grow_table(tb))
		return 0;
	if (!e->arena || e->arena_len + len > e->arena_cap) {
		size_t cap = e->arena_cap ? e->arena_cap : 65536;
		while (cap < e->arena_len + len)
			cap *= 2;
		char *na = realloc(e->arena, cap);
		if (!na)
			return 0;
		e->arena = na;
		e->arena_cap = cap;
	}
	if (e->nfresh == e->fresh_cap) {
		size_t cap = e->fresh_cap ? e->fresh_cap * 2 : 64;
		struct fresh *nf = realloc(e->fresh, cap * sizeof(*nf));
		if (!nf)
			return 0;
		e->fresh = nf;
		e->fresh_cap = cap;
	}
	size_t j = h & (tb->cap - 1);
	while (tb->slots[j].iid)
		j = (j + 1) & (tb->cap - 1);
	struct slot *sl = &tb->slots[j];
	sl->hash = h;
	sl->iid = tb->next_iid++;
	sl->off = e->arena_len;
	sl->len = len;
	memcpy(e->arena + e->arena_len, s, len);
	e->arena_len += len;
	tb->count++;
	e->fresh[e->nfresh++] = (struct fresh){t, sl->iid, sl->off, len};
	return sl->iid;
}

static void interned_data(struct strb_pfenc *e)
{
	static const unsigned field[TABLES] = {PF_ID_CATEGORIES, PF_ID_NAMES, PF_ID_ANNOTATION_NAMES,
	                                       PF_ID_ANNOTATION_VALUES};
	if (!e->nfresh)
		return;
	size_t id = begin(e, PF_PKT_INTERNED);
	for (size_t i = 0; i < e->nfresh; i++) {
		size_t m = begin(e, field[e->fresh[i].table]);
		put_varint(e, PF_INTERNED_IID, e->fresh[i].iid);
		put_bytes(e, PF_INTERNED_NAME, e->arena + e->fresh[i].off, e->fresh[i].len);
		end(e, m);
	}
	end(e, id);
	e->nfresh = 0;
}

/* ---- packets ----------------------------------------------------------- */

/* The clock snapshot that anchors the sequence's clock to CLOCK_REALTIME,
 * and the default clock (and track) of later packets. The first packet of
 * the file, and again whenever incremental state starts over: then the
 * sequence's clock goes on from the previous event's time (an incremental
 * clock's next delta counts from the snapshot's value: trace_processor's
 * ClockSynchronizer::AddSnapshot sets last_timestamp_ns to it). */
#define CLOCK_PACKET_BOUND 160

static void defaults(struct strb_pfenc *e, unsigned seq)
{
	size_t d = begin(e, PF_PKT_DEFAULTS);
	put_varint(e, PF_DEFAULTS_CLOCK_ID, SEQ_CLOCK);
	if (e->default_track[seq]) {
		size_t ted = begin(e, PF_DEFAULTS_TRACK_EVENT);
		put_varint(e, PF_TED_TRACK, e->default_track[seq]);
		end(e, ted);
	}
	end(e, d);
}

/* The caller has made room for CLOCK_PACKET_BOUND bytes. seq: 0 for
 * SEQ_ID, 1 for SEQ_COUNTERS (whose clock is the same: ns since the
 * origin). first: the sequence's first packet; the trace's is SEQ_ID's. */
static void clock_packet(struct strb_pfenc *e, unsigned seq, bool first)
{
	size_t pkt = begin(e, PF_TRACE_PACKET);
	size_t snap = begin(e, PF_PKT_CLOCK_SNAPSHOT);
	size_t c = begin(e, PF_SNAP_CLOCKS);
	put_varint(e, PF_CLOCK_ID, SEQ_CLOCK);
	put_varint(e, PF_CLOCK_TS, e->last[seq]);
	if (e->incremental)
		put_varint(e, PF_CLOCK_INCREMENTAL, 1);
	end(e, c);
	c = begin(e, PF_SNAP_CLOCKS);
	put_varint(e, PF_CLOCK_ID, PF_CLOCK_REALTIME);
	put_varint(e, PF_CLOCK_TS, (uint64_t)e->origin + e->last[seq]);
	end(e, c);
	/* Readers refuse a change of trace clock once they have converted
	 * timestamps: say it once, before any. */
	if (first && !seq)
		put_varint(e, PF_SNAP_PRIMARY, PF_CLOCK_REALTIME);
	end(e, snap);
	defaults(e, seq);
	if (first)
		put_varint(e, PF_PKT_FIRST_ON_SEQ, 1);
	seq_tail(e, seq, PF_SEQ_CLEARED);
	end(e, pkt);
}

int strb_pfenc_open(struct strb_pfenc **out, struct strb_sink *sink, int64_t origin_ns, unsigned flags)
{
	bool strings_stable = flags & STRB_PFENC_STABLE_STRINGS;
	*out = NULL;
	struct strb_pfenc *e = calloc(1, sizeof(*e));
	if (e) {
		e->buf = malloc(BUF_SIZE);
		for (int t = 0; t < TABLES; t++) {
			e->tables[t].next_iid = 1;
			/* Values may live in the caller's scratch: never cached by pointer. */
			if (strings_stable && t != T_VALUE)
				e->tables[t].cache = calloc(PTR_CACHE, sizeof(struct ptr_slot));
		}
	}
	bool ok = e && e->buf;
	for (int t = 0; ok && t < TABLES; t++)
		ok = !strings_stable || t == T_VALUE || e->tables[t].cache;
	if (!ok) {
		if (e)
			e->sink = sink;
		strb_pfenc_abort(e);
		if (!e)
			strb_sink_abort(sink);
		return -ENOMEM;
	}
	e->sink = sink;
	e->cap = BUF_SIZE;
	e->origin = origin_ns > 0 ? origin_ns : 0;
	e->stable = strings_stable;
	e->incremental = flags & STRB_PFENC_INCREMENTAL;
	e->gen = 1;
	/* The buffer is empty and larger than the packet: no room() needed. */
	_Static_assert(BUF_SIZE >= CLOCK_PACKET_BOUND, "the first packet fits the buffer");
	clock_packet(e, 0, true);
	*out = e;
	return 0;
}

/* A packet of new defaults: trace_processor starts a new generation of
 * the sequence's state with them, its interned data kept
 * (PacketSequenceStateBuilder::UpdateTracePacketDefaults). */
void strb_pfenc_default_track(struct strb_pfenc *e, uint64_t uuid)
{
	if (!room(e, 64))
		return;
	e->default_track[0] = uuid;
	size_t pkt = begin(e, PF_TRACE_PACKET);
	defaults(e, 0);
	packet_tail(e, 0);
	end(e, pkt);
}

/* The sequence starts at the time of the last event so far, as a new
 * sequence's clock may (its snapshot's CLOCK_REALTIME is then no earlier
 * than any before it, which trace_processor asks of the trace's clock). */
void strb_pfenc_counter_sequence(struct strb_pfenc *e, uint64_t uuid)
{
	if (!e->incremental || e->default_track[1] || !uuid || !room(e, CLOCK_PACKET_BOUND))
		return;
	e->default_track[1] = uuid;
	e->last[1] = e->last[0];
	clock_packet(e, 1, true);
}

uint64_t strb_pfenc_uuid(struct strb_pfenc *e)
{
	return ++e->next_uuid;
}

static size_t slen(const char *s)
{
	return s ? strlen(s) : 0;
}

/* TracePacket { track_descriptor { uuid, parent, name, ... */
static size_t descriptor_begin(struct strb_pfenc *e, size_t bound, uint64_t uuid, uint64_t parent,
                               const char *name, size_t *td)
{
	if (!room(e, bound + 96))
		return SIZE_MAX;
	size_t pkt = begin(e, PF_TRACE_PACKET);
	*td = begin(e, PF_PKT_TRACK_DESCRIPTOR);
	put_varint(e, PF_TD_UUID, uuid);
	if (parent)
		put_varint(e, PF_TD_PARENT, parent);
	if (name)
		put_str(e, PF_TD_NAME, name);
	return pkt;
}

static void descriptor_end(struct strb_pfenc *e, size_t pkt, size_t td)
{
	end(e, td);
	packet_tail(e, 0);
	end(e, pkt);
}

void strb_pfenc_process(struct strb_pfenc *e, uint64_t uuid, int64_t pid, const char *name, const char *label,
                        int64_t sort_index)
{
	size_t td, pkt = descriptor_begin(e, 2 * slen(name) + slen(label), uuid, 0, NULL, &td);
	if (pkt == SIZE_MAX)
		return;
	size_t pd = begin(e, PF_TD_PROCESS);
	put_varint(e, PF_PD_PID, (uint64_t)pid);
	if (name)
		put_str(e, PF_PD_NAME, name);
	put_varint(e, PF_PD_SORT, (uint64_t)sort_index);
	if (label)
		put_str(e, PF_PD_LABELS, label);
	end(e, pd);
	descriptor_end(e, pkt, td);
}

void strb_pfenc_thread(struct strb_pfenc *e, uint64_t uuid, int64_t pid, int64_t tid, const char *name,
                       int64_t sort_index)
{
	size_t td, pkt = descriptor_begin(e, slen(name), uuid, 0, NULL, &td);
	if (pkt == SIZE_MAX)
		return;
	size_t thd = begin(e, PF_TD_THREAD);
	put_varint(e, PF_THD_PID, (uint64_t)pid);
	put_varint(e, PF_THD_TID, (uint64_t)tid);
	put_varint(e, PF_THD_SORT, (uint64_t)sort_index);
	if (name)
		put_str(e, PF_THD_NAME, name);
	end(e, thd);
	descriptor_end(e, pkt, td);
}

void strb_pfenc_track(struct strb_pfenc *e, uint64_t uuid, uint64_t parent, const char *name)
{
	size_t td, pkt = descriptor_begin(e, slen(name), uuid, parent, name, &td);
	if (pkt != SIZE_MAX)
		descriptor_end(e, pkt, td);
}

void strb_pfenc_counter_track(struct strb_pfenc *e, uint64_t uuid, uint64_t parent, const char *name,
                              const char *category)
{
	size_t td, pkt = descriptor_begin(e, slen(name) + slen(category), uuid, parent, name, &td);
	if (pkt == SIZE_MAX)
		return;
	size_t cd = begin(e, PF_TD_COUNTER);
	if (category)
		put_str(e, PF_CD_CATEGORIES, category);
	end(e, cd);
	descriptor_end(e, pkt, td);
}

static size_t arg_bound(const struct strobe_arg *a)
{
	size_t n = 2 * slen(a->key) + 48;
	if (a->kind == STROBE_ARG_JSON)
		n += slen(a->value.str);
	else if (a->kind == STROBE_ARG_STRING)
		n += 2 * slen(a->value.str) + 16; /* inline, or interned: its iid and its InternedData */
	return n;
}

static void annotation(struct strb_pfenc *e, const struct strobe_arg *a)
{
	size_t da = begin(e, PF_TE_ANNOTATIONS);
	const char *key = a->key ? a->key : "";
	uint64_t iid = intern(e, T_KEY, key);
	if (iid)
		put_varint(e, PF_DA_NAME_IID, iid);
	else
		put_str(e, PF_DA_NAME, key);
	switch (a->kind) {
	case STROBE_ARG_I64:
		put_varint(e, PF_DA_INT, (uint64_t)a->value.i64);
		break;
	case STROBE_ARG_U64:
		put_varint(e, PF_DA_UINT, a->value.u64);
		break;
	case STROBE_ARG_F64: {
		uint64_t bits;
		memcpy(&bits, &a->value.f64, 8);
		put_fixed64(e, PF_DA_DOUBLE, bits);
		break;
	}
	case STROBE_ARG_BOOL:
		put_varint(e, PF_DA_BOOL, a->value.b);
		break;
	case STROBE_ARG_JSON:
		put_str(e, PF_DA_JSON, a->value.str ? a->value.str : "null");
		break;
	default: {
		const char *v = a->value.str ? a->value.str : "";
		size_t len = strlen(v);
		uint64_t vid = len <= VALUE_INTERN_MAX ? intern_len(e, T_VALUE, v, len) : 0;
		if (vid)
			put_varint(e, PF_DA_STRING_IID, vid);
		else
			put_bytes(e, PF_DA_STRING, v, len);
		break;
	}
	}
	end(e, da);
}

static void name_field(struct strb_pfenc *e, int table, unsigned iid_field, unsigned str_field, const char *s)
{
	uint64_t iid = intern(e, table, s);
	if (iid)
		put_varint(e, iid_field, iid);
	else
		put_str(e, str_field, s);
}

void strb_pfenc_event(struct strb_pfenc *e, const struct strb_pf_event *ev)
{
	if (e->arena_len > INTERN_MAX_BYTES) {
		/* Bounded memory: forget every interned string and say so. */
		reset_tables(e);
		if (room(e, CLOCK_PACKET_BOUND))
			clock_packet(e, 0, false);
	}
	size_t bound = 96;
	if (ev->type == STRB_PF_BEGIN || ev->type == STRB_PF_INSTANT)
		bound += 2 * (slen(ev->name) + slen(ev->category)) + 32;
	for (size_t i = 0; i < ev->nargs; i++)
		bound += arg_bound(&ev->args[i]);
	if (!room(e, bound))
		return;
	size_t pkt = begin(e, PF_TRACE_PACKET);
	/* The default counter track's samples go on their own sequence. */
	unsigned seq = ev->type == STRB_PF_COUNTER && !ev->nargs && e->default_track[1] &&
	               ev->track == e->default_track[1];
	uint64_t rel = (uint64_t)ev->ts_ns - (uint64_t)e->origin;
	if (ev->ts_ns >= e->origin && !e->incremental) {
		put_varint(e, PF_PKT_TIMESTAMP, rel);
	} else if (ev->ts_ns >= e->origin && rel >= e->last[seq]) {
		put_varint(e, PF_PKT_TIMESTAMP, rel - e->last[seq]);
		e->last[seq] = rel;
	} else {
		put_varint(e, PF_PKT_CLOCK_ID, PF_CLOCK_REALTIME);
		put_varint(e, PF_PKT_TIMESTAMP, ev->ts_ns > 0 ? (uint64_t)ev->ts_ns : 0);
	}
	size_t te = begin(e, PF_PKT_TRACK_EVENT);
	put_varint(e, PF_TE_TYPE, ev->type);
	if (!e->default_track[seq] || ev->track != e->default_track[seq])
		put_varint(e, PF_TE_TRACK, ev->track);
	if (ev->type == STRB_PF_BEGIN || ev->type == STRB_PF_INSTANT) {
		name_field(e, T_NAME, PF_TE_NAME_IID, PF_TE_NAME, ev->name ? ev->name : "");
		if (ev->category && *ev->category)
			name_field(e, T_CATEGORY, PF_TE_CATEGORY_IIDS, PF_TE_CATEGORIES, ev->category);
	} else if (ev->type == STRB_PF_COUNTER) {
		double v = ev->value;
		if (v > -9e15 && v < 9e15 && v == (double)(int64_t)v) {
			put_varint(e, PF_TE_COUNTER_INT, (uint64_t)(int64_t)v);
		} else {
			uint64_t bits;
			memcpy(&bits, &v, 8);
			put_fixed64(e, PF_TE_COUNTER_DOUBLE, bits);
		}
	}
	for (size_t i = 0; i < ev->nargs; i++)
		annotation(e, &ev->args[i]);
	if (ev->flow_out)
		put_fixed64(e, PF_TE_FLOW_IDS, ev->flow_out);
	if (ev->flow_in)
		put_fixed64(e, PF_TE_TERMINATING_FLOW_IDS, ev->flow_in);
	end(e, te);
	interned_data(e);
	seq_tail(e, seq, 0);
	end(e, pkt);
}

uint64_t strb_pfenc_metadata(struct strb_pfenc *e, int64_t ts, const struct strobe_arg *args, size_t nargs)
{
	uint64_t track = strb_pfenc_uuid(e);
	strb_pfenc_track(e, track, 0, STRB_PERFETTO_METADATA_TRACK);
	struct strb_pf_event ev = {.type = STRB_PF_INSTANT,
	                           .track = track,
	                           .ts_ns = ts,
	                           .name = STRB_PERFETTO_METADATA_EVENT,
	                           .args = args,
	                           .nargs = nargs};
	strb_pfenc_event(e, &ev);
	return track;
}

int strb_pfenc_error(const struct strb_pfenc *e)
{
	return e->err;
}

uint64_t strb_pfenc_bytes(const struct strb_pfenc *e)
{
	return e->bytes + e->n;
}

static void free_enc(struct strb_pfenc *e)
{
	for (int t = 0; t < TABLES; t++) {
		free(e->tables[t].slots);
		free(e->tables[t].cache);
	}
	free(e->arena);
	free(e->fresh);
	free(e->buf);
	free(e);
}

int strb_pfenc_finish(struct strb_pfenc *e)
{
	flush(e);
	int rc = e->err;
	if (rc)
		strb_sink_abort(e->sink);
	else
		rc = strb_sink_commit(e->sink);
	free_enc(e);
	return rc;
}

void strb_pfenc_abort(struct strb_pfenc *e)
{
	if (!e)
		return;
	strb_sink_abort(e->sink);
	free_enc(e);
}

/* ---- track map --------------------------------------------------------- */

uint64_t strb_pfmap_key(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull + (a << 6) + (a >> 2));
	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	return x ^ (x >> 29);
}

uint64_t strb_pfmap_str(const char *s)
{
	return hash_str(s, strlen(s)) | 1ull << 63;
}

uint64_t strb_pfmap_get(const struct strb_pfmap *m, uint64_t key)
{
	if (!m->cap)
		return 0;
	for (size_t j = key & (m->cap - 1); m->vals[j]; j = (j + 1) & (m->cap - 1))
		if (m->keys[j] == key)
			return m->vals[j];
	return 0;
}

int strb_pfmap_put(struct strb_pfmap *m, uint64_t key, uint64_t val)
{
	if ((m->count + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		uint64_t *nk = calloc(cap, sizeof(*nk)), *nv = calloc(cap, sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -ENOMEM;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->vals[i])
				continue;
			size_t j = m->keys[i] & (cap - 1);
			while (nv[j])
				j = (j + 1) & (cap - 1);
			nk[j] = m->keys[i];
			nv[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = cap;
	}
	size_t j = key & (m->cap - 1);
	while (m->vals[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	m->count += !m->vals[j];
	m->keys[j] = key;
	m->vals[j] = val;
	return 0;
}

void strb_pfmap_free(struct strb_pfmap *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct strb_pfmap){0};
}

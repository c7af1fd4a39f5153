/* The Perfetto reader (tools/read/perfetto_reader.h) on its own, through
 * tr_read_memory, with traces encoded here from common/pf_fields.h: slices
 * open at once are bounded per track and in all, what is cut is counted,
 * ends still pair with their own begins, and slices that end before they
 * begin are counted. */
#include "read_summary.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/pf_fields.h"
#include "read/trace_reader.h"

/* A growable buffer of protobuf bytes. */
struct pbuf {
	unsigned char *b;
	size_t n, cap;
};

static void put(struct pbuf *p, const void *d, size_t n)
{
	if (p->n + n > p->cap) {
		p->cap = (p->n + n) * 2 + 4096;
		p->b = realloc(p->b, p->cap);
		assert_non_null(p->b);
	}
	memcpy(p->b + p->n, d, n);
	p->n += n;
}

static void varint(struct pbuf *p, uint64_t v)
{
	unsigned char c[10];
	size_t k = 0;
	for (; v >= 0x80; v >>= 7)
		c[k++] = (unsigned char)(v | 0x80);
	c[k++] = (unsigned char)v;
	put(p, c, k);
}

static void field_varint(struct pbuf *p, unsigned num, uint64_t v)
{
	varint(p, (uint64_t)num << 3 | PF_WT_VARINT);
	varint(p, v);
}

static void field_bytes(struct pbuf *p, unsigned num, const void *d, size_t n)
{
	varint(p, (uint64_t)num << 3 | PF_WT_LEN);
	varint(p, n);
	put(p, d, n);
}

static void field_msg(struct pbuf *p, unsigned num, struct pbuf *m)
{
	field_bytes(p, num, m->b, m->n);
	free(m->b);
	*m = (struct pbuf){0};
}

/* A thread track: uuid, pid and tid. */
static void thread_track(struct pbuf *out, uint64_t uuid, int pid, int tid)
{
	struct pbuf pkt = {0}, td = {0}, thd = {0};
	field_varint(&thd, PF_THD_PID, (uint64_t)pid);
	field_varint(&thd, PF_THD_TID, (uint64_t)tid);
	field_varint(&td, PF_TD_UUID, uuid);
	field_msg(&td, PF_TD_THREAD, &thd);
	field_msg(&pkt, PF_PKT_TRACK_DESCRIPTOR, &td);
	field_msg(out, PF_TRACE_PACKET, &pkt);
}

/* A slice begin (name given) or end (name NULL) on track at ts of clock. */
static void slice_at(struct pbuf *out, uint64_t track, uint64_t clock, uint64_t ts, const char *name)
{
	struct pbuf pkt = {0}, te = {0};
	field_varint(&te, PF_TE_TYPE, name ? PF_TYPE_SLICE_BEGIN : PF_TYPE_SLICE_END);
	field_varint(&te, PF_TE_TRACK, track);
	if (name)
		field_bytes(&te, PF_TE_NAME, name, strlen(name));
	field_varint(&pkt, PF_PKT_TIMESTAMP, ts);
	field_varint(&pkt, PF_PKT_CLOCK_ID, clock);
	field_msg(&pkt, PF_PKT_TRACK_EVENT, &te);
	field_msg(out, PF_TRACE_PACKET, &pkt);
}

/* The same in CLOCK_REALTIME. */
static void slice(struct pbuf *out, uint64_t track, uint64_t ts, const char *name)
{
	slice_at(out, track, PF_CLOCK_REALTIME, ts, name);
}

/* A clock snapshot: CLOCK_REALTIME at realtime when CLOCK_BOOTTIME was at
 * boottime. */
static void clock_snapshot(struct pbuf *out, uint64_t realtime, uint64_t boottime)
{
	struct pbuf pkt = {0}, snap = {0}, clock = {0};
	field_varint(&clock, PF_CLOCK_ID, PF_CLOCK_REALTIME);
	field_varint(&clock, PF_CLOCK_TS, realtime);
	field_msg(&snap, PF_SNAP_CLOCKS, &clock);
	field_varint(&clock, PF_CLOCK_ID, PF_CLOCK_BOOTTIME);
	field_varint(&clock, PF_CLOCK_TS, boottime);
	field_msg(&snap, PF_SNAP_CLOCKS, &clock);
	field_msg(&pkt, PF_PKT_CLOCK_SNAPSHOT, &snap);
	field_msg(out, PF_TRACE_PACKET, &pkt);
}

/* The X events read back. */
struct slices {
	size_t n;
	char name[64][32];
	int64_t ts[64], dur[64];
	size_t meta;
};

static int on_event(const struct tr_event *ev, void *arg)
{
	struct slices *s = arg;
	if (!strcmp(ev->ph, "M")) {
		s->meta++;
		return 0;
	}
	assert_string_equal(ev->ph, "X");
	if (s->n < 64) {
		assert_true(strlen(ev->name) < sizeof(s->name[0]));
		strcpy(s->name[s->n], ev->name);
		s->ts[s->n] = ev->ts_ns;
		s->dur[s->n] = ev->dur_ns;
	}
	s->n++;
	return 0;
}

static int read_pf(const struct pbuf *p, struct slices *s, struct tr_stats *st)
{
	memset(s, 0, sizeof(*s));
	struct tr_handler h = {.event_cb = on_event, .member_cb = NULL, .user_arg = s};
	char err[256];
	int rc = tr_read_memory(p->b, p->n, "t.pftrace", &h, st, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_true(st->perfetto);
	return rc;
}

/* Begins past the per-track depth are cut, and so are their ends: the ends
 * that follow close what they opened, so every slice written has its own
 * begin and end. */
static void test_depth_limit_pairs_ends(void **state)
{
	(void)state;
	const size_t extra = 10, n = TR_PF_OPEN_DEPTH + extra;
	struct pbuf p = {0};
	thread_track(&p, 1, 7, 8);
	char name[32];
	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "k%zu", i);
		slice(&p, 1, 1000 + i, name);
	}
	for (size_t i = 0; i < n; i++)
		slice(&p, 1, 1000000 + i, NULL); /* the i-th end closes begin n-1-i */
	struct slices s;
	struct tr_stats st;
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(st.open_cut, extra);
	assert_int_equal(st.unended, 0);
	assert_int_equal(s.n, TR_PF_OPEN_DEPTH);
	/* The first written is the deepest kept one, closed by the end that
	 * follows the cut ones' ends. */
	snprintf(name, sizeof(name), "k%u", TR_PF_OPEN_DEPTH - 1);
	assert_string_equal(s.name[0], name);
	assert_int_equal(s.ts[0], 1000 + TR_PF_OPEN_DEPTH - 1);
	assert_int_equal(s.dur[0], 1000000 + extra - (1000 + TR_PF_OPEN_DEPTH - 1));
	free(p.b);
}

/* 20 M begins with no end used to be held until the end (2.97 GB for an
 * 824 KB .pftrace.gz); now what is held is bounded, and counted. */
static void test_unended_bounded(void **state)
{
	(void)state;
	const size_t n = 200000;
	struct pbuf p = {0};
	thread_track(&p, 1, 7, 8);
	for (size_t i = 0; i < n; i++)
		slice(&p, 1, 1000 + i, "never ended");
	struct slices s;
	struct tr_stats st;
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(st.unended, TR_PF_OPEN_DEPTH);
	assert_int_equal(st.open_cut, n - TR_PF_OPEN_DEPTH);
	assert_int_equal(st.dropped, 0);
	free(p.b);
}

/* The limit in all, over many tracks: a track that reaches it cuts its
 * later begins; the tracks before it keep theirs. */
static void test_total_limit(void **state)
{
	(void)state;
	const size_t per = TR_PF_OPEN_DEPTH, tracks = TR_PF_OPEN_MAX / TR_PF_OPEN_DEPTH + 2;
	struct pbuf p = {0};
	for (size_t t = 1; t <= tracks; t++)
		thread_track(&p, t, 7, (int)t);
	for (size_t t = 1; t <= tracks; t++)
		for (size_t i = 0; i < per; i++)
			slice(&p, t, 1000 + i, "s");
	/* One slice on the first track, now ended: written. */
	slice(&p, 1, 5000000, NULL);
	struct slices s;
	struct tr_stats st;
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(st.open_cut, tracks * per - TR_PF_OPEN_MAX);
	assert_int_equal(st.unended, TR_PF_OPEN_MAX - 1);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ts[0], 1000 + per - 1);
	free(p.b);
}

/* Tracks past the track limit are not kept: their descriptors are counted
 * and their events skipped; the kept tracks read as before. */
static void test_track_limit(void **state)
{
	(void)state;
	const size_t extra = 3;
	struct pbuf p = {0};
	for (size_t t = 1; t <= TR_PF_TRACKS_MAX + extra; t++)
		thread_track(&p, t, 7, (int)t);
	thread_track(&p, 1, 7, 1); /* a kept track described again: still kept */
	slice(&p, 1, 1000, "kept");
	slice(&p, 1, 2000, NULL);
	slice(&p, TR_PF_TRACKS_MAX + extra, 1000, "cut");
	slice(&p, TR_PF_TRACKS_MAX + extra, 2000, NULL);
	struct slices s;
	struct tr_stats st;
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(st.cut_tracks, extra);
	assert_int_equal(st.skipped, 2);
	assert_int_equal(s.n, 1);
	assert_string_equal(s.name[0], "kept");
	assert_int_equal(s.meta, TR_PF_TRACKS_MAX + 1);
	const struct rs_count want[] = {{"Perfetto tracks past the track limit", "cut_tracks", extra}};
	free(rs_summary(p.b, p.n, "t.pftrace", want, 1));
	free(p.b);
}

/* An end before its begin: a zero-length slice, counted. */
static void test_end_before_begin_counted(void **state)
{
	(void)state;
	struct pbuf p = {0};
	thread_track(&p, 1, 7, 8);
	slice(&p, 1, 5000, "backwards");
	slice(&p, 1, 4000, NULL);
	slice(&p, 1, 6000, "forwards");
	slice(&p, 1, 6500, NULL);
	struct slices s;
	struct tr_stats st;
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.dur[0], 0);
	assert_int_equal(s.dur[1], 500);
	assert_int_equal(st.negative_durs, 1);
	free(p.b);
}

/* Times that leave int64 through a clock's offset, or a duration that
 * does not fit, are held at the end of the range and counted, never
 * wrapped (they were signed overflows). */
static void test_time_overflow_counted(void **state)
{
	(void)state;
	const uint64_t big = UINT64_C(1000000000000000000);
	struct pbuf p = {0};
	thread_track(&p, 1, 7, 8);
	clock_snapshot(&p, big, 0); /* boot time 0 is realtime 1e18 */
	slice_at(&p, 1, PF_CLOCK_BOOTTIME, (uint64_t)INT64_MAX - 5, "late");
	slice_at(&p, 1, PF_CLOCK_BOOTTIME, (uint64_t)INT64_MAX - 4, NULL);
	struct slices s;
	struct tr_stats st;
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ts[0], INT64_MAX);
	assert_int_equal(s.dur[0], 0);
	assert_int_equal(st.bad_times, 2);
	free(p.b);

	p = (struct pbuf){0};
	thread_track(&p, 1, 7, 8);
	clock_snapshot(&p, 0, big); /* boot time 1e18 is realtime 0 */
	slice_at(&p, 1, PF_CLOCK_BOOTTIME, 0, "long");
	slice_at(&p, 1, PF_CLOCK_REALTIME, (uint64_t)INT64_MAX, NULL);
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.ts[0], -(int64_t)big);
	assert_int_equal(s.dur[0], INT64_MAX);
	assert_int_equal(st.bad_times, 1);
	free(p.b);
}

/* The first packet of an incremental sequence: sequence clock 64 at
 * seq_ts is realtime, incremental, and the default clock; track (0: none)
 * the default track. */
static void incremental_start(struct pbuf *out, uint64_t realtime, uint64_t seq_ts, uint64_t track)
{
	struct pbuf pkt = {0}, snap = {0}, clock = {0}, defaults = {0}, ted = {0};
	field_varint(&clock, PF_CLOCK_ID, 64);
	field_varint(&clock, PF_CLOCK_TS, seq_ts);
	field_varint(&clock, PF_CLOCK_INCREMENTAL, 1);
	field_msg(&snap, PF_SNAP_CLOCKS, &clock);
	field_varint(&clock, PF_CLOCK_ID, PF_CLOCK_REALTIME);
	field_varint(&clock, PF_CLOCK_TS, realtime);
	field_msg(&snap, PF_SNAP_CLOCKS, &clock);
	field_msg(&pkt, PF_PKT_CLOCK_SNAPSHOT, &snap);
	field_varint(&defaults, PF_DEFAULTS_CLOCK_ID, 64);
	if (track) {
		field_varint(&ted, PF_TED_TRACK, track);
		field_msg(&defaults, PF_DEFAULTS_TRACK_EVENT, &ted);
	}
	field_msg(&pkt, PF_PKT_DEFAULTS, &defaults);
	field_varint(&pkt, PF_PKT_SEQ_ID, 1);
	field_varint(&pkt, PF_PKT_SEQ_FLAGS, PF_SEQ_CLEARED);
	field_msg(out, PF_TRACE_PACKET, &pkt);
}

/* A slice begin (name given) or end on the default clock and track, with
 * the timestamp a delta; the begin has a string annotation "k" whose
 * value is interned as iid 1 with value (when not NULL). */
static void delta_slice(struct pbuf *out, uint64_t delta, const char *name, const char *value)
{
	struct pbuf pkt = {0}, te = {0}, da = {0}, id = {0}, str = {0};
	field_varint(&te, PF_TE_TYPE, name ? PF_TYPE_SLICE_BEGIN : PF_TYPE_SLICE_END);
	if (name)
		field_bytes(&te, PF_TE_NAME, name, strlen(name));
	if (value) {
		field_bytes(&da, PF_DA_NAME, "k", 1);
		field_varint(&da, PF_DA_STRING_IID, 1);
		field_msg(&te, PF_TE_ANNOTATIONS, &da);
		field_varint(&str, PF_INTERNED_IID, 1);
		field_bytes(&str, PF_INTERNED_NAME, value, strlen(value));
		field_msg(&id, PF_ID_ANNOTATION_VALUES, &str);
		field_msg(&pkt, PF_PKT_INTERNED, &id);
	}
	field_varint(&pkt, PF_PKT_TIMESTAMP, delta);
	field_varint(&pkt, PF_PKT_SEQ_ID, 1);
	field_msg(&pkt, PF_PKT_TRACK_EVENT, &te);
	field_msg(out, PF_TRACE_PACKET, &pkt);
}

static int on_arg_event(const struct tr_event *ev, void *arg)
{
	char *out = arg;
	if (!strcmp(ev->ph, "X") && ev->nargs && strlen(ev->args[0].key) + strlen(ev->args[0].value) < 62)
		sprintf(out, "%s=%s", ev->args[0].key, ev->args[0].value);
	return 0;
}

/* Deltas on an incremental sequence clock add up from the snapshot's
 * time (a zero delta is an equal time); events without a track are on the
 * default one; an interned string value reads as its string. */
static void test_incremental_clock(void **state)
{
	(void)state;
	const uint64_t origin = UINT64_C(1700000000000000000);
	struct pbuf p = {0};
	thread_track(&p, 3, 7, 8);
	incremental_start(&p, origin, 100, 3);
	delta_slice(&p, 5, "outer", NULL); /* 105 */
	delta_slice(&p, 0, "inner", NULL); /* 105 */
	delta_slice(&p, 20, NULL, NULL);   /* 125 */
	delta_slice(&p, 0, "zero", NULL);  /* 125 */
	delta_slice(&p, 0, NULL, NULL);    /* 125 */
	delta_slice(&p, 1000, NULL, NULL); /* 1125 */
	struct slices s;
	struct tr_stats st;
	assert_int_equal(read_pf(&p, &s, &st), 0);
	assert_int_equal(s.n, 3);
	const int64_t base = (int64_t)origin - 100;
	assert_string_equal(s.name[0], "inner");
	assert_int_equal(s.ts[0], base + 105);
	assert_int_equal(s.dur[0], 20);
	assert_string_equal(s.name[1], "zero");
	assert_int_equal(s.ts[1], base + 125);
	assert_int_equal(s.dur[1], 0);
	assert_string_equal(s.name[2], "outer");
	assert_int_equal(s.ts[2], base + 105);
	assert_int_equal(s.dur[2], 1020);
	assert_int_equal(st.bad_times, 0);
	free(p.b);

	p = (struct pbuf){0};
	thread_track(&p, 3, 7, 8);
	incremental_start(&p, origin, 0, 3);
	delta_slice(&p, 5, "kernel", "stream 7");
	delta_slice(&p, 5, NULL, NULL);
	char arg[64] = "";
	struct tr_handler h = {.event_cb = on_arg_event, .member_cb = NULL, .user_arg = arg};
	char err[256];
	assert_int_equal(tr_read_memory(p.b, p.n, "t.pftrace", &h, &st, err, sizeof(err)), 0);
	assert_string_equal(arg, "k=\"stream 7\"");
	free(p.b);
}

/* Reads p, which must fail with an error that says want. */
static void read_fails(const struct pbuf *p, const char *want)
{
	struct slices s = {0};
	struct tr_handler h = {.event_cb = on_event, .member_cb = NULL, .user_arg = &s};
	struct tr_stats st;
	char err[256] = "";
	assert_int_equal(tr_read_memory(p->b, p->n, "t.pftrace", &h, &st, err, sizeof(err)), -EBADMSG);
	tu_assert_contains(err, want);
}

/* A delta that is negative, one that takes the clock past int64, and a
 * time on a sequence clock no snapshot defined are errors: every later
 * time of the sequence would be wrong. */
static void test_bad_deltas_refused(void **state)
{
	(void)state;
	struct pbuf p = {0};
	thread_track(&p, 3, 7, 8);
	incremental_start(&p, 1000, 0, 3);
	delta_slice(&p, 5, "a", NULL);
	delta_slice(&p, (uint64_t)-3, NULL, NULL);
	read_fails(&p, "negative timestamp delta (-3 ns)");
	free(p.b);

	p = (struct pbuf){0};
	thread_track(&p, 3, 7, 8);
	incremental_start(&p, 1000, (uint64_t)INT64_MAX - 10, 3);
	delta_slice(&p, 5, "a", NULL);
	delta_slice(&p, 6, NULL, NULL);
	read_fails(&p, "past 2^63 ns");
	free(p.b);

	/* Defaults name clock 64, but no snapshot defined it. */
	p = (struct pbuf){0};
	thread_track(&p, 3, 7, 8);
	struct pbuf pkt = {0}, defaults = {0};
	field_varint(&defaults, PF_DEFAULTS_CLOCK_ID, 64);
	field_msg(&pkt, PF_PKT_DEFAULTS, &defaults);
	field_varint(&pkt, PF_PKT_SEQ_ID, 1);
	field_msg(&p, PF_TRACE_PACKET, &pkt);
	free(pkt.b);
	free(defaults.b);
	delta_slice(&p, 5, "a", NULL);
	read_fails(&p, "on clock 64 of sequence 1, which no clock snapshot defines");
	free(p.b);
}

/* What strobe summary says of a file with both kinds of cut slices. */
static void test_summary_says_so(void **state)
{
	(void)state;
	struct pbuf p = {0};
	thread_track(&p, 1, 7, 8);
	for (size_t i = 0; i < TR_PF_OPEN_DEPTH + 5; i++)
		slice(&p, 1, 1000 + i, "open");
	const struct rs_count want[] = {
	    {"Perfetto slices never ended", "unended_slices", TR_PF_OPEN_DEPTH},
	    {"Perfetto slices past the open-slice limit", "cut_open_slices", 5},
	};
	free(rs_summary(p.b, p.n, "t.pftrace", want, 2));
	free(p.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_depth_limit_pairs_ends),
	    cmocka_unit_test(test_unended_bounded),
	    cmocka_unit_test(test_total_limit),
	    cmocka_unit_test(test_track_limit),
	    cmocka_unit_test(test_end_before_begin_counted),
	    cmocka_unit_test(test_time_overflow_counted),
	    cmocka_unit_test(test_summary_says_so),
	    cmocka_unit_test(test_incremental_clock),
	    cmocka_unit_test(test_bad_deltas_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

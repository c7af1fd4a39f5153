/* Perfetto output in time order: packets go out sorted, their timestamps
 * deltas on an incremental clock of the sequence; decoded (with protoc and
 * by strobe's own reader) every slice gets back its exact epoch ns and its
 * own begin and end, at equal times and with zero-length slices too; and
 * the file is at most 1/6 of the JSON on a realistic mix, with 10 000
 * distinct names as well; short string arg values are interned. */
#include "testutil.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pftext.h"
#include "strobe/strobe.h"

static char path_buf[4096];

static const char *out_path(const char *name)
{
	snprintf(path_buf, sizeof(path_buf), "%s/%s", tu_dir, name);
	return path_buf;
}

struct want {
	const char *name;
	int64_t b, e; /* from the start of the recording */
	int64_t resource;
};

/* Two rows of one device: nested slices with equal begins and ends, slices
 * that start where others end, zero-length slices at either edge and
 * inside, recorded out of time order. */
static const struct want wants[] = {
    {"parent", 1000, 5000, 5}, {"same", 1000, 5000, 5}, {"edge0", 1000, 1000, 5},  {"q1", 2000, 3000, 5},
    {"q2", 3000, 4000, 5},     {"end0", 5000, 5000, 5}, {"next", 5000, 9000, 5},   {"mid0", 7000, 7000, 5},
    {"mid1", 7000, 7000, 5},   {"other", 500, 9500, 6}, {"other0", 3000, 3000, 6}, {"last", 9500, 9600, 6},
};
#define NWANT (sizeof(wants) / sizeof(wants[0]))

static int64_t rec_at;

static strobe_trace *record_wants(void)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	rec_at = (int64_t)strobe_now_ns() + 1000;
	static const size_t order[NWANT] = {11, 6, 0, 3, 10, 5, 1, 8, 2, 9, 4, 7};
	for (size_t k = 0; k < NWANT; k++) {
		const struct want *x = &wants[order[k]];
		tu_record_at(x->name, STROBE_ACTIVITY_CPU_OP, rec_at + x->b, x->e - x->b,
		             (struct strobe_activity){.device = 1, .resource = x->resource});
	}
	tu_record_at("tick", STROBE_ACTIVITY_CPU_INSTANT_EVENT, rec_at + 5000, 0,
	             (struct strobe_activity){.device = 1, .resource = 5});
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	return t;
}

/* A slice as a reader that pairs each end with the last open begin of its
 * track, in file order, sees it. */
struct got {
	char name[PF_STR];
	int64_t b, e;
};

static void test_sorted_deltas_pair_exactly(void **state)
{
	(void)state;
	strobe_trace *tr = record_wants();
	assert_int_equal(strobe_trace_save(tr, out_path("order.pftrace")), 0);
	struct pf_trace t;
	pf_load(&t, path_buf);
	pf_check_structure(&t, true);
	assert_true(t.p[0].seq_incremental);
	int64_t origin = (int64_t)t.p[0].realtime - (int64_t)t.p[0].seq_clock;

	struct got stack[2][16], got[64];
	size_t depth[2] = {0, 0}, ngot = 0, zero_deltas = 0;
	uint64_t prev = 0, row[2] = {0, 0};
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (!p->has_te)
			continue;
		assert_int_equal(p->clock_id, 0); /* nothing here needs CLOCK_REALTIME */
		assert_true(p->ts >= prev);       /* time order */
		prev = p->ts;
		zero_deltas += p->raw_ts == 0;
		int64_t at = origin + (int64_t)p->ts - rec_at;
		bool begin = !strcmp(p->type, "TYPE_SLICE_BEGIN"), end = !strcmp(p->type, "TYPE_SLICE_END");
		if (!begin && !end)
			continue;
		const struct pf_packet *td = pf_track(&t, p->track);
		if (!td || strncmp(td->td_name, "row ", 4))
			continue;
		size_t r = !strcmp(td->td_name, "row 5") ? 0 : 1;
		if (row[r])
			assert_int_equal(row[r], p->track);
		row[r] = p->track;
		if (begin) {
			assert_true(depth[r] < 16);
			struct got *g = &stack[r][depth[r]++];
			snprintf(g->name, sizeof(g->name), "%s", p->name);
			g->b = at;
		} else {
			assert_true(depth[r] > 0);
			assert_true(ngot < 64);
			got[ngot] = stack[r][--depth[r]];
			got[ngot++].e = at;
		}
	}
	assert_true(zero_deltas > 0); /* equal times are written as 0 */
	assert_int_equal(pf_count(&t, "TYPE_INSTANT", "tick"), 1);
	/* The window's span, with what it counts, begins at the window's start. */
	int64_t win_start, win_end;
	assert_int_equal(strobe_trace_window(tr, &win_start, &win_end), 0);
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i].has_te && !strcmp(t.p[i].name, "strobe (0)")) {
			assert_string_equal(pf_ann(&t.p[i], "Op count")->value, "12");
			assert_int_equal(origin + (int64_t)t.p[i].ts, win_start);
		}
	assert_int_equal(depth[0] + depth[1], 0);
	assert_int_equal(ngot, NWANT);
	for (size_t k = 0; k < NWANT; k++) {
		size_t found = 0;
		for (size_t i = 0; i < ngot; i++)
			if (!strcmp(got[i].name, wants[k].name)) {
				found++;
				if (got[i].b != wants[k].b || got[i].e != wants[k].e)
					fail_msg("%s: [%lld, %lld] read back, [%lld, %lld] recorded",
					         wants[k].name, (long long)got[i].b, (long long)got[i].e,
					         (long long)wants[k].b, (long long)wants[k].e);
			}
		assert_int_equal(found, 1);
	}
	pf_free(&t);
	strobe_trace_destroy(tr);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "cat|name|absolute ns|dur ns" of every X event, sorted. */
static char **x_events(yajl_val root, size_t *n)
{
	yajl_val base = tu_get(root, "baseTimeNanoseconds");
	int64_t b0 = base && YAJL_IS_INTEGER(base) ? YAJL_GET_INTEGER(base) : 0;
	yajl_val ev = tu_events(root);
	char **v = calloc(ev->u.array.len + 1, sizeof(*v));
	assert_non_null(v);
	*n = 0;
	for (size_t i = 0; i < ev->u.array.len; i++) {
		yajl_val e = ev->u.array.values[i];
		const char *ph = tu_get_str(e, "ph");
		if (!ph || strcmp(ph, "X"))
			continue;
		char line[600];
		snprintf(line, sizeof(line), "%s|%s|%lld|%lld", tu_get_str(e, "cat"), tu_get_str(e, "name"),
		         (long long)(b0 + tu_get_ns(e, "ts")), (long long)tu_get_ns(e, "dur"));
		v[(*n)++] = strdup(line);
	}
	qsort(v, *n, sizeof(*v), cmp_str);
	return v;
}

/* strobe convert of the .pftrace at pf into the JSON at back, loaded. */
static yajl_val convert_back(const char *pf, const char *back)
{
	char args[8400];
	snprintf(args, sizeof(args), "'%s' '%s'", pf, back);
	char *msg = NULL;
	if (tu_strobe("convert", args, 1, &msg))
		fail_msg("strobe convert %s: %s", args, msg ? msg : "");
	free(msg);
	return tu_load_trace(back);
}

/* The trace's .json, and its .pftrace converted back to JSON by strobe's
 * reader, hold the same slices: names, epoch ns and durations. */
static void same_slices(strobe_trace *tr, const char *stem)
{
	char json[4096], pf[4096], back[4096];
	snprintf(json, sizeof(json), "%s/%s.json", tu_dir, stem);
	snprintf(pf, sizeof(pf), "%s/%s.pftrace", tu_dir, stem);
	snprintf(back, sizeof(back), "%s/%s-back.json", tu_dir, stem);
	assert_int_equal(strobe_trace_save(tr, json), 0);
	assert_int_equal(strobe_trace_save(tr, pf), 0);
	yajl_val a = tu_load_trace(json), b = convert_back(pf, back);
	size_t na, nb;
	char **xa = x_events(a, &na), **xb = x_events(b, &nb);
	assert_true(na > 0);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		if (strcmp(xa[i], xb[i]))
			fail_msg("JSON has %s, Perfetto and back %s", xa[i], xb[i]);
		free(xa[i]);
		free(xb[i]);
	}
	free(xa);
	free(xb);
	yajl_tree_free(a);
	yajl_tree_free(b);
}

static void test_round_trip_exact(void **state)
{
	(void)state;
	strobe_trace *tr = record_wants();
	same_slices(tr, "wants");
	strobe_trace_destroy(tr);
}

/* Activities before the window's start: the metadata goes out first, at
 * the window's start, so these come after it in the file but earlier in
 * time. Each is written in CLOCK_REALTIME at full width, and decoded (by
 * protoc, and by strobe convert back to JSON) at its exact epoch ns. */
static void test_before_window_in_realtime(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	int64_t now = (int64_t)strobe_now_ns();
	int64_t early = now - 5000000 + 123, early2 = now - 4000000 + 7;
	tu_record_at("early", STROBE_ACTIVITY_CPU_OP, early, 2000,
	             (struct strobe_activity){.device = 1, .resource = 5});
	tu_record_at("early_tick", STROBE_ACTIVITY_CPU_INSTANT_EVENT, early2, 0,
	             (struct strobe_activity){.device = 1, .resource = 5});
	tu_record_at("late", STROBE_ACTIVITY_CPU_OP, now + 1000, 500,
	             (struct strobe_activity){.device = 1, .resource = 5});
	strobe_trace *tr = NULL;
	assert_int_equal(strobe_stop(&tr), 0);
	int64_t win_start, win_end;
	assert_int_equal(strobe_trace_window(tr, &win_start, &win_end), 0);
	assert_true(early < win_start);

	assert_int_equal(strobe_trace_save(tr, out_path("early.pftrace")), 0);
	struct pf_trace t;
	pf_load(&t, path_buf);
	pf_check_structure(&t, true);
	int64_t origin = (int64_t)t.p[0].realtime - (int64_t)t.p[0].seq_clock;
	/* The time each event decodes to: absolute in CLOCK_REALTIME (1), or
	 * from the origin on the sequence's clock. */
	int64_t at[4] = {0, 0, 0, 0};
	unsigned clock[4] = {0, 0, 0, 0};
	static const char *const what[4] = {"early", "early_tick", "late", "metadata"};
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (!p->has_te || strcmp(p->type, "TYPE_SLICE_END") == 0)
			continue;
		for (int k = 0; k < 4; k++)
			if (!strcmp(p->name, what[k])) {
				clock[k] = p->clock_id;
				at[k] = p->clock_id ? (int64_t)p->ts : origin + (int64_t)p->ts;
			}
	}
	assert_int_equal(clock[0], 1);
	assert_int_equal(clock[1], 1);
	assert_int_equal(at[0], early);
	assert_int_equal(at[1], early2);
	assert_int_equal(clock[2], 0);
	assert_int_equal(at[2], now + 1000);
	assert_int_equal(at[3], win_start);
	/* The end of the early slice is in CLOCK_REALTIME as well. */
	size_t ends = 0;
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i].has_te && !strcmp(t.p[i].type, "TYPE_SLICE_END") && t.p[i].clock_id == 1) {
			assert_int_equal((int64_t)t.p[i].ts, early + 2000);
			ends++;
		}
	assert_int_equal(ends, 1);
	pf_free(&t);
	/* strobe convert gives back the JSON's slices at the same epoch ns. */
	same_slices(tr, "early");
	strobe_trace_destroy(tr);
}

/* How many times needle's bytes occur in the file at path. */
static size_t occurrences(const char *path, const char *needle)
{
	size_t len, n = 0, nl = strlen(needle);
	char *data = tu_read_file(path, &len);
	assert_non_null(data);
	for (const char *at = data; (at = memmem(at, len - (size_t)(at - data), needle, nl)); at += nl)
		n++;
	free(data);
	return n;
}

#define LONG_NOTE "a note longer than 64 bytes, which is written inline in every annotation that has it"

/* Short string arg values are interned: each is in the file once however
 * many events have it, the annotations name it by string_value_iid, and
 * both readers give back the exact strings; a long value stays inline. */
static void test_string_values_interned(void **state)
{
	(void)state;
	enum { OPS = 500 };
	static const char *const colors[] = {"#ff0000", "#00ff00", "#0000ff"};
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	int64_t t0 = (int64_t)strobe_now_ns() + 1000;
	for (int i = 0; i < OPS; i++) {
		char id[32];
		snprintf(id, sizeof(id), "op-%d", i);
		struct strobe_arg args[] = {
		    {.key = "kind", .kind = STROBE_ARG_STRING, .value.str = "Memcpy HtoD (Pinned -> Device)"},
		    {.key = "color", .kind = STROBE_ARG_STRING, .value.str = colors[i % 3]},
		    {.key = "id", .kind = STROBE_ARG_STRING, .value.str = id},
		    {.key = "note", .kind = STROBE_ARG_STRING, .value.str = LONG_NOTE},
		};
		tu_record_at(
		    "copy", STROBE_ACTIVITY_CPU_OP, t0 + i * 1000, 600,
		    (struct strobe_activity){.device = 1, .resource = 5, .args = args, .arg_count = 4});
	}
	strobe_trace *tr = NULL;
	assert_int_equal(strobe_stop(&tr), 0);
	assert_int_equal(strobe_trace_save(tr, out_path("values.pftrace")), 0);
	char pf[4096];
	snprintf(pf, sizeof(pf), "%s", path_buf);
	assert_int_equal(occurrences(pf, "Memcpy HtoD (Pinned -> Device)"), 1);
	assert_int_equal(occurrences(pf, "#00ff00"), 1);
	assert_int_equal(occurrences(pf, LONG_NOTE), OPS);

	struct pf_trace t;
	pf_load(&t, pf);
	pf_check_structure(&t, true);
	assert_int_equal(t.unresolved, 0);
	size_t seen = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct pf_packet *p = &t.p[i];
		if (!p->has_te || strcmp(p->name, "copy") || strcmp(p->type, "TYPE_SLICE_BEGIN"))
			continue;
		const struct pf_ann *kind = pf_ann(p, "kind"), *color = pf_ann(p, "color");
		const struct pf_ann *id = pf_ann(p, "id"), *note = pf_ann(p, "note");
		assert_true(kind->value_iid && color->value_iid && id->value_iid);
		assert_int_equal(note->value_iid, 0);
		assert_string_equal(kind->value, "Memcpy HtoD (Pinned -> Device)");
		/* In time order, so the i-th op is the i-th begin. */
		char want[32];
		snprintf(want, sizeof(want), "op-%zu", seen);
		assert_string_equal(id->value, want);
		assert_string_equal(color->value, colors[seen % 3]);
		assert_string_equal(note->value, LONG_NOTE);
		seen++;
	}
	assert_int_equal(seen, OPS);
	pf_free(&t);

	char back[4096];
	snprintf(back, sizeof(back), "%s/values-back.json", tu_dir);
	yajl_val root = convert_back(pf, back), ev = tu_events(root);
	seen = 0;
	for (size_t i = 0; i < ev->u.array.len; i++) {
		yajl_val e = ev->u.array.values[i], a = tu_get(e, "args");
		const char *name = tu_get_str(e, "name");
		if (!name || strcmp(name, "copy"))
			continue;
		assert_string_equal(tu_get_str(a, "kind"), "Memcpy HtoD (Pinned -> Device)");
		assert_string_equal(tu_get_str(a, "note"), LONG_NOTE);
		const char *id = tu_get_str(a, "id");
		assert_non_null(id);
		int k = atoi(id + 3);
		assert_string_equal(tu_get_str(a, "color"), colors[k % 3]);
		seen++;
	}
	assert_int_equal(seen, OPS);
	yajl_tree_free(root);
	strobe_trace_destroy(tr);
}

#define PID 43210

/* bench_export's mix: ops with a nested range, an instant and a counter,
 * at fixed times (an op each microsecond) on a fixed 5-digit pid and tid,
 * so the sizes depend neither on how fast this build records nor on the
 * test's pid (every JSON event spells both); with names > 0 the ops cycle
 * through that many names. */
static strobe_trace *record_mix(long events, long names)
{
	char cfg[96];
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=%ld", events * 128 / (1 << 20) + 32);
	assert_int_equal(strobe_prepare(0, cfg), 0);
	assert_int_equal(strobe_start(), 0);
	int64_t t0 = (int64_t)strobe_now_ns() + 1000;
	char name[64] = "aten::linear";
	for (long i = 0; i < events; i += 4) {
		int64_t t = t0 + i / 4 * 1000;
		uint64_t id = (uint64_t)i / 4 + 1;
		if (names)
			snprintf(name, sizeof(name), "aten::op_%ld", (i / 4) % names);
		tu_record_at(name, STROBE_ACTIVITY_CPU_OP, t, 700,
		             (struct strobe_activity){.device = PID, .resource = PID, .id = id});
		tu_record_at("encoder.layer.attention", STROBE_ACTIVITY_USER_ANNOTATION, t + 100, 500,
		             (struct strobe_activity){.device = PID, .resource = PID, .linked_id = id});
		tu_record_at("step", STROBE_ACTIVITY_CPU_INSTANT_EVENT, t + 750, 0,
		             (struct strobe_activity){.device = PID, .resource = PID});
		struct strobe_arg v = {
		    .key = "queue_depth", .kind = STROBE_ARG_F64, .value.f64 = (double)(i & 7)};
		tu_record_at(
		    "queue_depth", STROBE_ACTIVITY_CPU_COUNTER, t + 800, 0,
		    (struct strobe_activity){.device = PID, .resource = PID, .args = &v, .arg_count = 1});
	}
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(strobe_trace_activity_count(t), (size_t)events);
	return t;
}

static double size_ratio(strobe_trace *t, const char *stem)
{
	char json[4096], pf[4096];
	snprintf(json, sizeof(json), "%s/%s.json", tu_dir, stem);
	snprintf(pf, sizeof(pf), "%s/%s.pftrace", tu_dir, stem);
	assert_int_equal(strobe_trace_save(t, json), 0);
	assert_int_equal(strobe_trace_save(t, pf), 0);
	struct stat js, ps;
	assert_int_equal(stat(json, &js), 0);
	assert_int_equal(stat(pf, &ps), 0);
	unlink(json);
	unlink(pf);
	return (double)ps.st_size / (double)js.st_size;
}

/* At most 1/6 of the JSON, on the mix and with 10 000 distinct names
 * (bench_export's: each used 25 times); a trace with 10 000 ops, each
 * named differently, round-trips exactly. */
static void test_size_and_many_names(void **state)
{
	(void)state;
	strobe_trace *t = record_mix(40000, 0);
	double r = size_ratio(t, "mix");
	if (r > 1.0 / 6)
		fail_msg("mix: .pftrace is %.3f of the JSON", r);
	strobe_trace_destroy(t);

	/* A million events take minutes under a sanitizer (shadow memory for
	 * every buffer), and the sizes are the same without one. */
	if (!TU_UNDER_SANITIZER) {
		t = record_mix(1000000, 10000);
		r = size_ratio(t, "names");
		if (r > 1.0 / 6)
			fail_msg("10 000 names: .pftrace is %.3f of the JSON", r);
		strobe_trace_destroy(t);
	}

	t = record_mix(40000, 10000);
	same_slices(t, "names");
	strobe_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sorted_deltas_pair_exactly), cmocka_unit_test(test_round_trip_exact),
	    cmocka_unit_test(test_before_window_in_realtime),  cmocka_unit_test(test_string_values_interned),
	    cmocka_unit_test(test_size_and_many_names),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

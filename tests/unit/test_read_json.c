/* The JSON trace reader (tools/read/trace_reader.h) on its own: hostile and
 * garbled input. One long string reads in linear time and comes back cut
 * and counted; byte offsets after a cut or a repair still count the file's
 * own bytes; a NUL in a string keeps the rest of it; garbled JSON outside
 * the places libkineto leaves unescaped is an error naming its byte; a
 * negative dur is counted. */
#include "read_summary.h"
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "read/trace_reader.h"

/* What a read handed over: the events' names, ph, offsets and durations,
 * and the members. */
struct got {
	size_t n;
	char name[8][TR_NAME_MAX];
	char ph[8][TR_SHORT_MAX];
	char pid[8][TR_SHORT_MAX];
	char arg[8][256]; /* the first arg's key=value */
	uint64_t offset[8];
	int64_t dur[8];
	size_t nmembers;
	char member_key[4][TR_SHORT_MAX];
	size_t member_len[4];
	bool member_cut[4];
};

static int on_event(const struct tr_event *ev, void *arg)
{
	struct got *g = arg;
	if (g->n < 8) {
		strcpy(g->name[g->n], ev->name);
		strcpy(g->ph[g->n], ev->ph);
		strcpy(g->pid[g->n], ev->pid.text);
		if (ev->nargs) {
			/* key=value, cut to fit */
			size_t k = strlen(ev->args[0].key), v = strlen(ev->args[0].value),
			       room = sizeof(g->arg[0]) - 1;
			k = k < room ? k : room;
			v = v < room - k - (k < room) ? v : room - k - (k < room);
			memcpy(g->arg[g->n], ev->args[0].key, k);
			if (k < room)
				g->arg[g->n][k++] = '=';
			memcpy(g->arg[g->n] + k, ev->args[0].value, v);
			g->arg[g->n][k + v] = 0;
		}
		g->offset[g->n] = ev->offset;
		g->dur[g->n] = ev->has_dur ? ev->dur_ns : INT64_MIN;
	}
	g->n++;
	return 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct got *g = arg;
	(void)json;
	if (g->nmembers < 4) {
		strcpy(g->member_key[g->nmembers], key);
		g->member_len[g->nmembers] = len;
		g->member_cut[g->nmembers] = truncated;
	}
	g->nmembers++;
	return 0;
}

static int read_text(const char *text, size_t len, struct got *g, struct tr_stats *st, char *err,
                     size_t errlen)
{
	memset(g, 0, sizeof(*g));
	struct tr_handler h = {.event_cb = on_event, .member_cb = on_member, .user_arg = g};
	return tr_read_memory(text, len, "t.json", &h, st, err, errlen);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define SECOND_EVENT                                                                                         \
	"{\"ph\": \"X\", \"name\": \"next\", \"ts\": 5, \"dur\": 1, \"pid\": 2, \"tid\": 2, \"args\": "      \
	"{\"k\": \"v\"}}"

/* A trace whose first event's name is n bytes of 'a' (with, past the
 * string limit, escapes and a quote that must not end it), then the event
 * second. The caller frees it. */
static char *long_name_trace(size_t n, const char *second, size_t *len, size_t *second_at)
{
	static const char head[] = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"";
	char tail[512];
	snprintf(tail, sizeof(tail), "\", \"ts\": 1, \"dur\": 2, \"pid\": 1, \"tid\": 1},\n %s]}", second);
	char *t = malloc(sizeof(head) + n + sizeof(tail));
	assert_non_null(t);
	size_t o = 0;
	memcpy(t, head, sizeof(head) - 1);
	o += sizeof(head) - 1;
	memset(t + o, 'a', n);
	/* Escapes and a multi-byte character across the cut, and an escaped
	 * quote well past it. */
	memcpy(t + o + TR_STRING_MAX - 3, "\\u00e9\xc3\xa9\\\"", 10);
	memcpy(t + o + n - 100, "\\\"\\\\", 4);
	o += n;
	memcpy(t + o, tail, strlen(tail) + 1);
	*len = o + strlen(tail);
	*second_at = (size_t)(strstr(t + o, "{\"ph\"") - t);
	return t;
}

static void test_long_string_linear_and_cut(void **state)
{
	(void)state;
	size_t len, second;
	char *t = long_name_trace((size_t)128 << 20, SECOND_EVENT, &len, &second);
	struct got *g = malloc(sizeof(*g));
	assert_non_null(g);
	struct tr_stats st;
	char err[256];
	double t0 = now_s();
	assert_int_equal(read_text(t, len, g, &st, err, sizeof(err)), 0);
	double took = now_s() - t0;
	/* Was 13 s at -O2 and quadratic (yajl buffers a string whole and reads it
	 * again for every chunk); linear, it is a fraction of a second. */
	fprintf(stderr, "128 MiB name: %.3f s\n", took);
	assert_true(took < 3.0);
	assert_int_equal(g->n, 2);
	assert_int_equal(strlen(g->name[0]), TR_NAME_MAX - 1);
	assert_int_equal(strspn(g->name[0], "a"), TR_NAME_MAX - 1);
	assert_int_equal(st.truncated, 1); /* counted once, though cut twice */
	assert_int_equal(g->dur[0], 2000);
	/* Everything after it intact, at its own byte in the file. */
	assert_string_equal(g->name[1], "next");
	assert_string_equal(g->arg[1], "k=\"v\"");
	assert_int_equal(g->offset[1], second);
	assert_int_equal(st.json_bytes, len);
	free(t);
	free(g);
}

/* A top-level member just under the limit is kept whole; one over it is
 * cut at a character boundary and counted once. An error after a cut
 * string names the file's own byte. */
static void test_long_member_and_error_offset(void **state)
{
	(void)state;
	size_t n = TR_STRING_MAX - 16, big = TR_STRING_MAX + 4096;
	char *t = malloc(2 * big + 256);
	assert_non_null(t);
	size_t o = (size_t)sprintf(t, "{\"short\": \"");
	memset(t + o, 'x', n);
	o += n;
	o += (size_t)sprintf(t + o, "\", \"long\": \"");
	/* Three-byte characters all through: the cut must fall between two. */
	for (size_t i = 0; i + 3 <= big; i += 3, o += 3)
		memcpy(t + o, "\xe2\x82\xac", 3);
	o += (size_t)sprintf(t + o, "\", \"traceEvents\": []}");
	struct got *g = malloc(sizeof(*g));
	assert_non_null(g);
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_text(t, o, g, &st, err, sizeof(err)), 0);
	assert_int_equal(g->nmembers, 2);
	assert_string_equal(g->member_key[0], "short");
	assert_int_equal(g->member_len[0], n + 2);
	assert_false(g->member_cut[0]);
	assert_string_equal(g->member_key[1], "long");
	assert_true(g->member_cut[1]);
	assert_int_equal(st.truncated, 1);

	/* The same long string, then garbage: the error is at its byte, as it
	 * is after a short string. */
	size_t end = o - strlen(", \"traceEvents\": []}");
	memcpy(t + end, "} x", 4);
	assert_int_equal(read_text(t, end + 3, g, &st, err, sizeof(err)), -EBADMSG);
	unsigned long long at_long = 0, at_short = 0;
	assert_non_null(strstr(err, "at byte "));
	sscanf(strstr(err, "at byte ") + 8, "%llu", &at_long);
	static const char short_text[] = "{\"short\": \"x\", \"long\": \"\xe2\x82\xac\"} x";
	assert_int_equal(read_text(short_text, sizeof(short_text) - 1, g, &st, err, sizeof(err)), -EBADMSG);
	sscanf(strstr(err, "at byte ") + 8, "%llu", &at_short);
	assert_true(at_short > 0);
	assert_int_equal(at_long - at_short, end - (sizeof(short_text) - 1 - 3));
	free(t);
	free(g);
}

/* A number (or bare word) of megabytes would be buffered whole by yajl too:
 * refused, at the byte where it starts. */
static void test_long_number_refused(void **state)
{
	(void)state;
	size_t n = (size_t)8 << 20;
	char *t = malloc(n + 128);
	assert_non_null(t);
	size_t o = (size_t)sprintf(t, "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1");
	size_t start = o - 1;
	memset(t + o, '0', n);
	o += n;
	o += (size_t)sprintf(t + o, "}]}");
	struct got g;
	struct tr_stats st;
	char err[256];
	double t0 = now_s();
	assert_int_equal(read_text(t, o, &g, &st, err, sizeof(err)), -EBADMSG);
	assert_true(now_s() - t0 < 3.0);
	char want[128];
	snprintf(want, sizeof(want),
	         "malformed JSON at byte %zu: a number or bare word longer than 4096 bytes", start);
	tu_assert_contains(err, want);
	/* One just under the limit is a number like any other. */
	o = (size_t)sprintf(t, "{\"traceEvents\": [{\"ph\": \"X\", \"ts\": 1.");
	memset(t + o, '0', TR_WORD_MAX - 6); /* 4095 bytes in all */
	o += TR_WORD_MAX - 6;
	o += (size_t)sprintf(t + o, "5e3, \"dur\": 1}]}");
	assert_int_equal(read_text(t, o, &g, &st, err, sizeof(err)), 0);
	assert_int_equal(g.n, 1);
	free(t);
}

/* \u0000 used to end the name there; now the whole name comes back, the
 * NUL as U+FFFD, in names, categories, string pids and keys. */
static void test_nul_in_strings(void **state)
{
	(void)state;
	static const char text[] =
	    "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\\u0000b\\u0000\", "
	    "\"pid\": \"p\\u0000q\", \"ts\": 1, \"dur\": 1, \"args\": {\"k\\u0000\": \"v\\u0000w\"}}]}";
	struct got g;
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_text(text, sizeof(text) - 1, &g, &st, err, sizeof(err)), 0);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.name[0], "a\xef\xbf\xbd"
	                               "b\xef\xbf\xbd");
	assert_string_equal(g.pid[0], "p\xef\xbf\xbdq");
	/* An arg value is JSON text: the NUL stays an escape there. */
	assert_string_equal(g.arg[0], "k\xef\xbf\xbd=\"v\\u0000w\"");
	assert_int_equal(st.truncated, 0);
}

/* An arg's value comes back as compact JSON text, as yajl_gen writes it:
 * strings re-escaped (control bytes as \u00XX, '/' as is), numbers as
 * written, true, false, null, and containers compact. */
static void test_arg_values_as_json(void **state)
{
	(void)state;
	static const char text[] =
	    "{\"traceEvents\": ["
	    "{\"ph\": \"X\", \"name\": \"a\", \"args\": {\"s\": "
	    "\"q\\\"b\\\\c\\n\\t\\r\\f\\b\\u001f/\\u00e9\"}},"
	    "{\"ph\": \"X\", \"name\": \"b\", \"args\": {\"n\": -1.50e+3}},"
	    "{\"ph\": \"X\", \"name\": \"c\", \"args\": {\"t\": true}},"
	    "{\"ph\": \"X\", \"name\": \"d\", \"args\": {\"f\": false}},"
	    "{\"ph\": \"X\", \"name\": \"e\", \"args\": {\"z\": null}},"
	    "{\"ph\": \"X\", \"name\": \"f\", \"args\": {\"a\": [1, \"x\\ty\", {\"k\": false}]}}]}";
	struct got g;
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_text(text, sizeof(text) - 1, &g, &st, err, sizeof(err)), 0);
	assert_int_equal(g.n, 6);
	assert_string_equal(g.arg[0], "s=\"q\\\"b\\\\c\\n\\t\\r\\f\\b\\u001F/\xc3\xa9\"");
	assert_string_equal(g.arg[1], "n=-1.50e+3");
	assert_string_equal(g.arg[2], "t=true");
	assert_string_equal(g.arg[3], "f=false");
	assert_string_equal(g.arg[4], "z=null");
	assert_string_equal(g.arg[5], "a=[1,\"x\\ty\",{\"k\":false}]");
}

/* convert writes such a name whole, as valid JSON. */
static void test_convert_keeps_nul_names(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp();
	char in[1100], out[1100], args[2300];
	snprintf(in, sizeof(in), "%s/in.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	assert_int_equal(
	    tu_write_file(in, "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\\u0000b\", \"pid\": 1, "
	                      "\"tid\": 1, \"ts\": 1, \"dur\": 1}]}"),
	    0);
	snprintf(args, sizeof(args), "'%s' '%s'", in, out);
	assert_int_equal(tu_strobe("convert", args, 1, NULL), 0);
	yajl_val o = tu_load_trace(out);
	assert_non_null(tu_find(o, "X", NULL,
	                        "a\xef\xbf\xbd"
	                        "b"));
	yajl_tree_free(o);
	tu_rmrf(dir);
}

/* A NUL replacement that would not fit is cut before it, never inside. */
static void test_nul_at_the_limit(void **state)
{
	(void)state;
	char *t = malloc(TR_NAME_MAX + 256);
	assert_non_null(t);
	size_t o = (size_t)sprintf(t, "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"");
	memset(t + o, 'n', TR_NAME_MAX - 3);
	o += TR_NAME_MAX - 3;
	o += (size_t)sprintf(t + o, "\\u0000\"}]}");
	struct got *g = malloc(sizeof(*g));
	assert_non_null(g);
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_text(t, o, g, &st, err, sizeof(err)), 0);
	assert_int_equal(strlen(g->name[0]), TR_NAME_MAX - 3);
	assert_int_equal(st.truncated, 1);
	free(t);
	free(g);
}

/* Garbled JSON is an error naming its byte, not a phase made of its
 * neighbours; the repair of libkineto's unescaped quotes stays where
 * libkineto writes them (args, top-level members). */
static void test_garbled_refused(void **state)
{
	(void)state;
	static const char garbled[] = "{\"traceEvents\": [{\"ph\":\"X\",,,\"name\":\"a\"}]}";
	struct got g;
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_text(garbled, sizeof(garbled) - 1, &g, &st, err, sizeof(err)), -EBADMSG);
	assert_int_equal(g.n, 0);
	assert_int_equal(st.repaired, 0);
	char want[64];
	/* The second comma, counting from 1. */
	snprintf(want, sizeof(want), "t.json: malformed JSON at byte %zu",
	         (size_t)(strstr(garbled, ",,,") - garbled) + 2);
	tu_assert_contains(err, want);

	/* The same inside args, and in a top-level member: repaired, counted. */
	static const char kineto[] =
	    "{\"traceName\": \"/tmp/a \"b\".json\", \"traceEvents\": [{\"ph\": \"X\", "
	    "\"name\": \"op\", \"args\": {\"Call stack\": \"f(\"x\"), g\"}}, "
	    "{\"ph\": \"i\", \"name\": \"after\"}]}";
	assert_int_equal(read_text(kineto, sizeof(kineto) - 1, &g, &st, err, sizeof(err)), 0);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.arg[0], "Call stack=\"f(\\\"x\\\"), g\"");
	assert_int_equal(st.repaired, 4);
	assert_int_equal(g.offset[1], (size_t)(strstr(kineto, "{\"ph\": \"i\"") - kineto));
	assert_int_equal(g.nmembers, 1);
	assert_int_equal(g.member_len[0], strlen("\"/tmp/a \\\"b\\\".json\""));
}

static void test_negative_dur_counted(void **state)
{
	(void)state;
	static const char text[] =
	    "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"neg\", \"ts\": 10, \"dur\": -5}, "
	    "{\"ph\": \"X\", \"name\": \"zero\", \"ts\": 10, \"dur\": 0}, "
	    "{\"ph\": \"X\", \"name\": \"tiny\", \"ts\": 10, \"dur\": -0.0001}]}";
	struct got g;
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_text(text, sizeof(text) - 1, &g, &st, err, sizeof(err)), 0);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.dur[0], -5000); /* kept as read */
	assert_int_equal(g.dur[1], 0);
	assert_int_equal(st.negative_durs, 1); /* -0.1 ns rounds to 0 */
}

/* What strobe summary says of the same input: the counts in its
 * accounting, the whole name. */
static void test_summary_says_so(void **state)
{
	(void)state;
	size_t len, second;
	/* The second event: a NUL in its name, a negative dur. */
	char *t =
	    long_name_trace((size_t)4 << 20,
	                    "{\"ph\": \"X\", \"name\": \"n\\u0000\", \"ts\": 5, \"dur\": -1}", &len, &second);
	const struct rs_count want[] = {
	    {"strings cut short by this reader", "truncated_strings", 1},
	    {"dur values below 0 (taken as 0)", "negative_durs", 1},
	};
	char *out = rs_summary(t, len, "t.json", want, 2);
	tu_assert_contains(out, "n\xef\xbf\xbd");
	free(out);
	free(t);

	/* An unescaped quote in args (as libkineto writes one) and a bare nan:
	 * read, and said to be repaired. */
	static const char repaired[] = "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, "
	                               "\"dur\": 1, \"args\": {\"k\": \"v\"w\", \"x\": nan}}]}";
	const struct rs_count fixed[] = {
	    {"libkineto defects repaired by this reader", "repaired_defects", 2}};
	free(rs_summary(repaired, sizeof(repaired) - 1, "r.json", fixed, 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_long_string_linear_and_cut),
	    cmocka_unit_test(test_long_member_and_error_offset),
	    cmocka_unit_test(test_long_number_refused),
	    cmocka_unit_test(test_nul_in_strings),
	    cmocka_unit_test(test_arg_values_as_json),
	    cmocka_unit_test(test_convert_keeps_nul_names),
	    cmocka_unit_test(test_nul_at_the_limit),
	    cmocka_unit_test(test_garbled_refused),
	    cmocka_unit_test(test_negative_dur_counted),
	    cmocka_unit_test(test_summary_says_so),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

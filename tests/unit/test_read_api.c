/* The trace-reading layer's API (tools/read/trace_reader.h) on its own:
 * exact microsecond parsing, compression told by content, the JSON Array
 * and Object forms, members and args, how a read stops and fails, and what
 * its messages say. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "read/trace_reader.h"

static void test_parse_us_exact(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		int rc;
		int64_t ns;
	} cases[] = {
	    {"5166410272838.951", 0, INT64_C(5166410272838951)},
	    {"0.0005", 0, 1}, /* half a ns rounds away from zero */
	    {"-0.0005", 0, -1},
	    {"0.00049", 0, 0},
	    {"1e3", 0, 1000000},
	    {"1.5E-3", 0, 2}, /* 1.5 ns */
	    {"-12", 0, -12000},
	    {"9223372036854775.807", 0, INT64_MAX},
	    {"-9223372036854775.808", 0, INT64_MIN},
	    {"9223372036854775.808", -ERANGE, 0},
	    {"1e400", -ERANGE, 0},
	    {"1e-400", 0, 0},
	    {"", -EINVAL, 0},
	    {"1.", -EINVAL, 0},
	    {".5", -EINVAL, 0},
	    {"1e", -EINVAL, 0},
	    {"12x", -EINVAL, 0},
	    {"nan", -EINVAL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int64_t ns = 0;
		int rc = tr_parse_us(cases[i].text, strlen(cases[i].text), &ns);
		if (rc != cases[i].rc || (!rc && ns != cases[i].ns))
			fail_msg("%s: rc %d ns %lld, expected rc %d ns %lld", cases[i].text, rc,
			         (long long)ns, cases[i].rc, (long long)cases[i].ns);
	}
	/* Every length of whole part and decimals, either side of what the
	 * common case takes (15 digits, 3 decimals), exact. */
	uint64_t x = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		int digits = 1 + (int)(x % 18), decimals = (int)((x >> 8) % 6);
		uint64_t whole = (x >> 16) % 1000000000000000000ull, frac = (x >> 3) % 100000;
		char text[64], all[32];
		int m = snprintf(all, sizeof(all), "%018llu", (unsigned long long)whole);
		int n = digits;
		memcpy(text, all + m - digits, (size_t)digits); /* leading zeros too */
		text[n] = 0;
		uint64_t w = strtoull(text, NULL, 10);
		char fr[8] = "";
		snprintf(fr, sizeof(fr), "%05llu", (unsigned long long)frac);
		fr[decimals] = 0;
		if (decimals)
			snprintf(text + n, sizeof(text) - (size_t)n, ".%s", fr);
		/* ns = whole * 1000 + the decimals to three places, the fourth rounding */
		uint64_t f3 = 0;
		for (int k = 0; k < 3; k++)
			f3 = f3 * 10 + (uint64_t)(k < decimals ? fr[k] - '0' : 0);
		bool up = decimals > 3 && fr[3] >= '5';
		uint64_t want = w * 1000 + f3 + up;
		int64_t ns = 0;
		int rc = tr_parse_us(text, strlen(text), &ns);
		if (w > (uint64_t)INT64_MAX / 1000 - 1)
			continue; /* near the range's end: the table above */
		if (rc || (uint64_t)ns != want)
			fail_msg("%s: rc %d ns %lld, expected %llu", text, rc, (long long)ns,
			         (unsigned long long)want);
	}
}

static void test_copy_text_cuts_at_characters(void **state)
{
	(void)state;
	char dst[6];
	assert_false(tr_copy_text(dst, sizeof(dst), "abc", 3));
	assert_string_equal(dst, "abc");
	/* "ab€d": the euro sign (3 bytes) does not fit after "ab" and 2 more. */
	assert_true(tr_copy_text(dst, sizeof(dst), "abc\xe2\x82\xac", 6));
	assert_string_equal(dst, "abc");
	assert_true(tr_copy_text(dst, sizeof(dst), "abcdefg", 7));
	assert_string_equal(dst, "abcde");
}

/* What a read handed over, as text: one line per event and member. */
struct log {
	char text[4096];
	size_t len;
	int stop_after; /* events, 0 for never */
	unsigned events;
};

static int on_event(const struct tr_event *ev, void *arg)
{
	struct log *l = arg;
	const struct tr_pair *id = tr_event_arg(ev, "External id");
	l->len +=
	    (size_t)snprintf(l->text + l->len, sizeof(l->text) - l->len, "%s %s pid=%s%s ts=%lld%s%s\n",
	                     ev->ph, ev->name, ev->pid.kind == TR_STRING ? "\"" : "", ev->pid.text,
	                     ev->has_ts ? (long long)ev->ts_ns : -1, id ? " " : "", id ? id->value : "");
	return ++l->events == (unsigned)l->stop_after ? 42 : 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct log *l = arg;
	l->len += (size_t)snprintf(l->text + l->len, sizeof(l->text) - l->len, "member %s=%.*s%s\n", key,
	                           (int)len, json, truncated ? " (cut)" : "");
	return 0;
}

static int read_mem(const void *data, size_t len, struct log *l, struct tr_stats *st, char *err,
                    size_t errlen)
{
	struct tr_handler h = {.event_cb = on_event, .member_cb = on_member, .user_arg = l};
	return tr_read_memory(data, len, "t", &h, st, err, errlen);
}

static const char object_form[] = "{\"schemaVersion\": 1, \"traceEvents\": [\n"
                                  "  {\"ph\": \"X\", \"name\": \"mm\", \"pid\": 7, \"ts\": 1.5, \"dur\": 2, "
                                  "\"args\": {\"External id\": 9}},\n"
                                  "  {\"ph\": \"i\", \"name\": \"mark\", \"pid\": \"Spans\", \"ts\": 3},\n"
                                  "  42\n"
                                  "], \"distributedInfo\": {\"rank\": 1}}";

static void test_object_and_array_forms(void **state)
{
	(void)state;
	struct log l = {0};
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_mem(object_form, strlen(object_form), &l, &st, err, sizeof(err)), 0);
	assert_string_equal(l.text, "member schemaVersion=1\n"
	                            "X mm pid=7 ts=1500 9\n"
	                            "i mark pid=\"Spans ts=3000\n"
	                            "member distributedInfo={\"rank\":1}\n");
	assert_int_equal(st.events, 2);
	assert_int_equal(st.skipped, 1); /* the 42 */
	assert_int_equal(st.compression, TR_PLAIN);
	assert_false(st.perfetto);

	static const char array_form[] = "[{\"ph\": \"B\", \"name\": \"b\", \"pid\": 1, \"ts\": 1}]";
	memset(&l, 0, sizeof(l));
	assert_int_equal(read_mem(array_form, strlen(array_form), &l, &st, err, sizeof(err)), 0);
	assert_string_equal(l.text, "B b pid=1 ts=1000\n");
}

/* gzip (also as concatenated members) and zstd, told by their magic bytes;
 * the events are those of the plain text. */
static void test_compression_by_content(void **state)
{
	(void)state;
	size_t n = strlen(object_form);
	struct log plain = {0}, l;
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_mem(object_form, n, &plain, &st, err, sizeof(err)), 0);

	unsigned char z[4096];
	size_t zn = ZSTD_compress(z, sizeof(z), object_form, n, 3);
	assert_false(ZSTD_isError(zn));
	memset(&l, 0, sizeof(l));
	assert_int_equal(read_mem(z, zn, &l, &st, err, sizeof(err)), 0);
	assert_int_equal(st.compression, TR_ZSTD);
	assert_int_equal(st.json_bytes, n);
	assert_string_equal(l.text, plain.text);

	/* Two gzip members: the text cut in two, compressed apart. */
	unsigned char g[8192];
	size_t gn = 0;
	for (int part = 0; part < 2; part++) {
		z_stream s = {0};
		assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
		s.next_in = (Bytef *)(object_form + (part ? n / 2 : 0));
		s.avail_in = (uInt)(part ? n - n / 2 : n / 2);
		s.next_out = g + gn;
		s.avail_out = (uInt)(sizeof(g) - gn);
		assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
		gn = sizeof(g) - s.avail_out;
		deflateEnd(&s);
	}
	memset(&l, 0, sizeof(l));
	assert_int_equal(read_mem(g, gn, &l, &st, err, sizeof(err)), 0);
	assert_int_equal(st.compression, TR_GZIP);
	assert_int_equal(st.file_bytes, gn);
	assert_string_equal(l.text, plain.text);

	/* Cut short: an error that says so, with the compressed byte. */
	memset(&l, 0, sizeof(l));
	assert_int_equal(read_mem(g, gn / 3, &l, &st, err, sizeof(err)), -EBADMSG);
	tu_assert_contains(err, "t: the gzip stream ends early, at compressed byte");
}

/* A callback's nonzero value stops the read and is returned, with no
 * message; the reader's own failures name the file and the problem. */
static void test_stop_and_failures(void **state)
{
	(void)state;
	struct log l = {.stop_after = 1};
	struct tr_stats st;
	char err[256];
	assert_int_equal(read_mem(object_form, strlen(object_form), &l, &st, err, sizeof(err)), 42);
	assert_string_equal(err, "");
	assert_int_equal(l.events, 1);

	static const struct {
		const char *text, *message;
	} bad[] = {
	    {"", "t: not a trace: the file holds no JSON text"},
	    {"\"x\"", "t: not a trace: the top-level JSON value is a string, not an object"},
	    {"{\"a\": 1}", "t: not a trace: the top-level object has no traceEvents array"},
	    {"{\"traceEvents\": {}}", "t: not a trace: traceEvents is an object, not an array (byte 17)"},
	    {"{\"traceEvents\": [{\"ph\": \"X\"}, ",
	     "t: truncated: the JSON text ends at byte 30 inside traceEvents, "
	     "after 1 events"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&l, 0, sizeof(l));
		assert_int_equal(read_mem(bad[i].text, strlen(bad[i].text), &l, &st, err, sizeof(err)),
		                 -EBADMSG);
		tu_assert_contains(err, bad[i].message);
	}

	struct tr_handler h = {.event_cb = on_event, .member_cb = on_member, .user_arg = &l};
	assert_int_equal(tr_read_file("/nonexistent/trace.json", &h, &st, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "cannot open /nonexistent/trace.json: No such file or directory");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_us_exact),
	    cmocka_unit_test(test_copy_text_cuts_at_characters),
	    cmocka_unit_test(test_object_and_array_forms),
	    cmocka_unit_test(test_compression_by_content),
	    cmocka_unit_test(test_stop_and_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

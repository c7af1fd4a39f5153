/* The reader's fast tokenizer (tools/read/json_lex.h) against yajl with the
 * repair pass (the handler's slow_only): on every text, valid or not, the
 * two reads hand over the same events and members in the same order, with
 * the same statistics, return value and message. Valid JSON never needs
 * the second read; each of libkineto's defects does, and the events before
 * it are not handed over twice. Texts are read from memory and from a file
 * in chunks, so tokens fall across the chunks' ends. */
#include "testutil.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "read/trace_reader.h"

/* Where the callbacks stop a read: at this event or member (1-based; 0
 * never), returning rc. */
struct stops {
	unsigned event, member;
	int rc;
};

/* Everything a read handed over, as text. */
struct transcript {
	char *s;
	size_t n, cap;
	struct stops stop;
	unsigned events, members;
};

static void put(struct transcript *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct transcript *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	assert_true(k >= 0);
	if (t->n + (size_t)k + 1 > t->cap) {
		t->cap = (t->n + (size_t)k + 1) * 2;
		t->s = realloc(t->s, t->cap);
		assert_non_null(t->s);
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	t->n += (size_t)k;
}

static void put_ident(struct transcript *t, const char *what, const struct tr_ident *id)
{
	put(t, " %s=%d/%d/%lld/%s", what, (int)id->kind, id->is_int, (long long)id->num, id->text);
}

static int on_event(const struct tr_event *ev, void *arg)
{
	struct transcript *t = arg;
	put(t, "E @%llu ph=%s cat=%s name=%s", (unsigned long long)ev->offset, ev->ph, ev->cat, ev->name);
	put_ident(t, "pid", &ev->pid);
	put_ident(t, "tid", &ev->tid);
	put_ident(t, "id", &ev->id);
	put(t, " ts=%d/%lld dur=%d/%lld cut=%u dropped=%u\n", ev->has_ts, (long long)ev->ts_ns, ev->has_dur,
	    (long long)ev->dur_ns, ev->truncated, ev->dropped);
	for (unsigned i = 0; i < ev->nargs; i++)
		put(t, "  a %s=%s%s\n", ev->args[i].key, ev->args[i].value,
		    ev->args[i].truncated ? " (cut)" : "");
	for (unsigned i = 0; i < ev->nextra; i++)
		put(t, "  x %s=%s%s\n", ev->extra[i].key, ev->extra[i].value,
		    ev->extra[i].truncated ? " (cut)" : "");
	return ++t->events == t->stop.event ? t->stop.rc : 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct transcript *t = arg;
	put(t, "M %s %zu%s %s\n", key, len, truncated ? " (cut)" : "", json);
	return ++t->members == t->stop.member ? t->stop.rc : 0;
}

/* One read, with everything it gave: the transcript, then the return
 * value, the message and the statistics. Returns whether it read twice. */
static bool read_one(const char *text, size_t len, const char *file, bool slow, struct stops stop,
                     struct transcript *t)
{
	*t = (struct transcript){.stop = stop};
	struct tr_handler h = {
	    .event_cb = on_event, .member_cb = on_member, .user_arg = t, .slow_only = slow};
	struct tr_stats st;
	char err[512];
	int rc = file ? tr_read_file(file, &h, &st, err, sizeof(err))
	              : tr_read_memory(text, len, "t.json", &h, &st, err, sizeof(err));
	if (file && rc && err[0]) {
		/* The same message but for the name. */
		size_t fl = strlen(file);
		assert_memory_equal(err, file, fl);
		memmove(err, "t.json", 6);
		memmove(err + 6, err + fl, strlen(err + fl) + 1);
	}
	put(t, "rc=%d err=%s\n", rc, err);
	put(t,
	    "stats: c=%d pf=%d json=%llu events=%llu skipped=%llu truncated=%llu dropped=%llu bad_times=%llu "
	    "repaired=%llu negative=%llu\n",
	    (int)st.compression, st.perfetto, (unsigned long long)st.json_bytes,
	    (unsigned long long)st.events, (unsigned long long)st.skipped, (unsigned long long)st.truncated,
	    (unsigned long long)st.dropped, (unsigned long long)st.bad_times, (unsigned long long)st.repaired,
	    (unsigned long long)st.negative_durs);
	return st.reread;
}

/* Reads text both ways, from memory and from a file, and checks that they
 * agree. Returns whether the fast read had to read again. */
static bool agree_with(const char *text, size_t len, struct stops stop_at)
{
	struct transcript fast, slow, ffast, fslow;
	bool again = read_one(text, len, NULL, false, stop_at, &fast);
	assert_false(read_one(text, len, NULL, true, stop_at, &slow));
	if (strcmp(fast.s, slow.s)) {
		fprintf(stderr, "fast:\n%s\nslow:\n%s\n", fast.s, slow.s);
		fail_msg("the two reads differ on %.*s", (int)(len < 200 ? len : 200), text);
	}
	char path[] = "/tmp/strobe-read-fast-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	bool fagain = read_one(NULL, 0, path, false, stop_at, &ffast);
	assert_false(read_one(NULL, 0, path, true, stop_at, &fslow));
	unlink(path);
	if (strcmp(ffast.s, fslow.s)) {
		fprintf(stderr, "fast:\n%s\nslow:\n%s\n", ffast.s, fslow.s);
		fail_msg("the two reads of a file differ on %.*s", (int)(len < 200 ? len : 200), text);
	}
	assert_int_equal(fagain, again);
	free(fast.s);
	free(slow.s);
	free(ffast.s);
	free(fslow.s);
	return again;
}

static bool agree_stop(const char *text, size_t len, unsigned stop_at)
{
	return agree_with(text, len, (struct stops){.event = stop_at, .rc = 42});
}

static bool agree(const char *text)
{
	return agree_stop(text, strlen(text), 0);
}

#define EV(name, args)                                                                                       \
	"{\"ph\":\"X\",\"name\":" name ",\"pid\":1,\"tid\":2,\"ts\":1.5,\"dur\":2,\"args\":" args "}"

/* Valid JSON of every shape the reader keeps: read once, the same both ways. */
static void test_valid_json_read_once(void **state)
{
	(void)state;
	static const char *const texts[] = {
	    "{\"traceEvents\":[]}",
	    " \n{ \"traceEvents\" : [ ] } \n",
	    "\xef\xbb\xbf{\"traceEvents\":[" EV("\"bom\"", "{}") "]}",
	    "[" EV("\"array form\"", "{\"a\":1}") "," EV("\"b\"", "{}") "]",
	    "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"GPU\",\"x\":[1,2.5e3,-0,true,"
	    "false,"
	    "null,{}]}],\"traceEvents\":[" EV(
	        "\"k\"", "{\"External id\":7}") "],\"displayTimeUnit\":\"ms\","
	                                        "\"baseTimeNanoseconds\":1700000000000000000}",
	    /* escapes everywhere: names, keys, values, ids */
	    "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\\\"b\\\\c\\/"
	    "d\\b\\f\\n\\r\\t\\u00e9\\u20ac\\u0041\","
	    "\"cat\":\"c\\u0000d\",\"pid\":\"p\\u0000\",\"tid\":\"t\\\"\",\"ts\":1,\"args\":{"
	    "\"k\\u0000\\\"ey\":"
	    "\"v\\u0000\\\"\\n\\u001f\",\"\\u00e9\":[\"\\u0000\",{\"\\n\":\"\\/\"}]}}]}",
	    /* UTF-8 of every length, raw */
	    "{\"traceEvents\":[" EV("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"",
	                            "{\"\xc3\xa9\":\"\xf4\x8f\xbf\xbf\"}") "]}",
	    /* numbers of every form, as ids and times */
	    "{\"traceEvents\":[{\"ph\":\"i\",\"pid\":-0,\"tid\":12345678901234567890,\"id\":-"
	    "9223372036854775808,"
	    "\"ts\":1e3,\"dur\":-2.5E-1,\"args\":{\"a\":0.000001,\"b\":-123456789012345678901234567890}},"
	    "{\"ph\":\"i\",\"pid\":1.0,\"tid\":-12,\"id\":\"0x1f\",\"ts\":99999999999999999999999,\"dur\":"
	    "\"3\"}]}",
	    /* duplicate keys, extras, non-objects among the events, nested args */
	    "{\"traceEvents\":[1,\"s\",[1,{\"a\":2}],null,{\"ph\":\"s\",\"ph\":\"f\",\"bp\":\"e\",\"id2\":{"
	    "\"local\":"
	    "\"0x1\"},\"s\":\"g\",\"args\":{\"a\":1},\"args\":{\"b\":2},\"name\":7,\"ts\":\"x\",\"args\":[1]}"
	    ",{}]}",
	    /* whitespace of every kind inside captured values */
	    "{\"m\" :\t[ 1 ,\r\n{ \"a\" : [ ] , \"b\" : { } } ] , \"traceEvents\" : [ { \"args\" : { \"v\" : "
	    "[ "
	    "1 , 2 ] } } ] }",
	    /* members before, between and after; strings as members */
	    "{\"a\":\"x\",\"traceEvents\":[],\"b\":{\"c\":\"d\"},\"e\":null,\"f\":true}",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		assert_false(agree(texts[i]));
}

/* Strings, arg values, keys and counts past the reader's limits: cut and
 * counted the same way, without a second read. */
static void test_limits_read_once(void **state)
{
	(void)state;
	size_t cap = (size_t)4 << 20;
	char *t = malloc(cap);
	assert_non_null(t);
	size_t o = (size_t)sprintf(t, "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"");
	for (size_t i = 0; i < TR_NAME_MAX + 10; i += 3, o += 3)
		memcpy(t + o, "\xe2\x82\xac", 3); /* cut between two characters */
	o += (size_t)sprintf(t + o, "\",\"cat\":\"");
	memset(t + o, 'c', 300);
	o += 300;
	o += (size_t)sprintf(t + o, "\",\"");
	memset(t + o, 'k', 300); /* a key past TR_SHORT_MAX */
	o += 300;
	o += (size_t)sprintf(t + o, "\":1,\"args\":{\"long\":\"");
	memset(t + o, 'v', TR_VALUE_MAX + 5);
	o += TR_VALUE_MAX + 5;
	o += (size_t)sprintf(t + o, "\",\"deep\":");
	for (int i = 0; i < 200; i++) /* deeper than yajl_gen writes */
		t[o++] = '[';
	for (int i = 0; i < 200; i++)
		t[o++] = ']';
	for (int i = 0; i < TR_ARGS_MAX + 3; i++)
		o += (size_t)sprintf(t + o, ",\"a%d\":%d", i, i);
	o += (size_t)sprintf(t + o, "}");
	for (int i = 0; i < TR_EXTRA_MAX + 3; i++)
		o += (size_t)sprintf(t + o, ",\"x%d\":[%d]", i, i);
	o += (size_t)sprintf(t + o, "}],\"big\":\"");
	memset(t + o, 'm', TR_MEMBER_MAX - 100); /* a member just under its limit, then one over */
	o += TR_MEMBER_MAX - 100;
	o += (size_t)sprintf(t + o, "\",\"bigger\":[\"");
	memset(t + o, 'n', TR_MEMBER_MAX - 100);
	o += TR_MEMBER_MAX - 100;
	o += (size_t)sprintf(t + o, "\",\"");
	memset(t + o, 'n', 200);
	o += 200;
	o += (size_t)sprintf(t + o, "\"]}");
	assert_true(o < cap);
	assert_false(agree_stop(t, o, 0));
	free(t);
}

/* libkineto's defects and every kind of error: the fast read gives up and
 * the second read hands over the rest; nothing is handed over twice. */
static void test_defects_read_again(void **state)
{
	(void)state;
	static const char *const texts[] = {
	    /* unescaped quotes in args (libkineto), after events already handed over */
	    "{\"traceEvents\":[" EV("\"a\"", "{}") "," EV("\"b\"", "{\"s\":\"say \"hi\", ok\"}") "]}",
	    /* bare non-finite numbers */
	    "{\"traceEvents\":[" EV("\"a\"", "{\"v\":nan,\"w\":-inf,\"x\":Infinity}") "]}",
	    /* a control byte in a string */
	    "{\"traceEvents\":[" EV("\"a\tb\"", "{}") "]}",
	    /* a top-level string whose quote the repair reads as inner: the member waits */
	    "{\"traceName\":\"abc\",\"x\" 5, \"y\": \"q\", \"traceEvents\":[]}",
	    "{\"traceName\":\"abc\",\"traceEvents\":[" EV("\"a\"", "{}") "],\"z\":\"say \"hi\"\"}",
	    /* what the fast read leaves to yajl: lone surrogates, overlong UTF-8, \v */
	    "{\"traceEvents\":[" EV("\"\\ud83d\\ude00\"", "{}") "," EV("\"\\udc00\"", "{}") "]}",
	    "{\"traceEvents\":[" EV("\"\xc0\xaf\"", "{}") "]}",
	    "{\"traceEvents\":[" EV("\"\xed\xa0\x80\"", "{}") "]}",
	    "{\"traceEvents\":[\v]}",
	    /* errors */
	    "",
	    "   ",
	    "5",
	    "\"x\"",
	    "{}",
	    "{\"traceEvents\":{}}",
	    "{\"traceEvents\":[" EV("\"a\"", "{}"),
	    "{\"traceEvents\":[" EV("\"a\"", "{}") "]} x",
	    "{\"traceEvents\":[" EV("\"a\"", "{}") ",]}",
	    "{\"traceEvents\":[" EV("\"a\"", "{\"v\":01}") "]}",
	    "{\"traceEvents\":[" EV("\"a\"", "{\"v\":1.}") "]}",
	    "{\"traceEvents\":[" EV("\"a\"", "{\"v\":tru}") "]}",
	    "{\"traceEvents\":[" EV("\"a\\x\"", "{}") "]}",
	    "{\"traceEvents\":[" EV("\"a\\u12\"", "{}") "]}",
	    "{\"traceEvents\":[" EV("\"\xff\"", "{}") "]}",
	    "{\"traceEvents\":[/* c */]}",
	    "{\"traceEvents\":[" EV("\"a\"", "{}") "]",
	    "{\"traceEvents\":[{\"name\":\"x\" \"ph\":\"X\"}]}",
	};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		assert_true(agree(texts[i]));

	/* A number of 4096 digits is read once; one more digit, or nesting
	 * deeper than the fast read keeps, is left to the second read. */
	char *t = malloc(8192);
	assert_non_null(t);
	for (size_t digits = 4095; digits <= 4096; digits++) {
		size_t o = (size_t)sprintf(t, "{\"traceEvents\":[{\"args\":{\"n\":-");
		memset(t + o, '7', digits);
		o += digits;
		o += (size_t)sprintf(t + o, "}}]}");
		assert_int_equal(agree_stop(t, o, 0), digits == 4096);
	}
	size_t o = (size_t)sprintf(t, "{\"traceEvents\":[{\"args\":{\"n\":");
	for (int i = 0; i < 1100; i++)
		t[o++] = '[';
	for (int i = 0; i < 1100; i++)
		t[o++] = ']';
	o += (size_t)sprintf(t + o, "}}]}");
	assert_true(agree_stop(t, o, 0));
	free(t);
}

/* A callback's stop ends both reads at the same event or member, with its
 * value, 1 too (the tokenizer's own give-up code), with the same
 * statistics: a member that the fast read hands over late, after reading
 * a long key or the next piece of a file, is stopped at by a second read. */
static void test_stop_the_same(void **state)
{
	(void)state;
	static const char text[] = "{\"a\":1,\"traceEvents\":[" EV("\"a\"", "{}") "," EV(
	    "\"b\"", "{}") "," EV("\"c\"", "{}") "],\"z\":\"q\"}";
	for (int rc = 1; rc <= 42; rc += 41) {
		for (unsigned stop = 1; stop <= 3; stop++)
			assert_false(
			    agree_with(text, sizeof(text) - 1, (struct stops){.event = stop, .rc = rc}));
		for (unsigned stop = 1; stop <= 2; stop++)
			assert_true(
			    agree_with(text, sizeof(text) - 1, (struct stops){.member = stop, .rc = rc}));
	}
	char *t = malloc(300000);
	assert_non_null(t);
	int o = sprintf(t, "{\"traceEvents\":[],\"m\":1,\"");
	memset(t + o, 'x', 300);
	o += 300;
	o += sprintf(t + o, "\":2}");
	assert_true(agree_with(t, (size_t)o, (struct stops){.member = 1, .rc = 5}));
	/* The file's first read (256 KiB) ends after the next key's colon. */
	static const char head[] = "{\"traceEvents\":[],", tail[] = "\"m\":1,\"k\":";
	size_t first = 262144, pad = first - strlen(head) - strlen(tail);
	o = sprintf(t, "%s", head);
	memset(t + o, ' ', pad);
	o += (int)pad;
	o += sprintf(t + o, "%s2}", tail);
	assert_true(agree_with(t, (size_t)o, (struct stops){.member = 1, .rc = 5}));
	free(t);
}

/* gzip of text (n bytes) into out: its size. */
static size_t gzip(const char *text, size_t n, unsigned char *out, size_t cap)
{
	z_stream z = {0};
	assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	z.next_in = (Bytef *)(uintptr_t)text;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
	size_t got = z.total_out;
	deflateEnd(&z);
	return got;
}

/* Compressed text cut short, or a byte order mark in a gzip member of its
 * own: both reads say the same, whichever of the JSON and the compressed
 * stream fails first. */
static void test_compressed_edges(void **state)
{
	(void)state;
	static const char *const texts[] = {
	    "{\"traceEvents\":[t}",
	    "{\"traceEvents\":[{\"name\":\"\\u1x",
	    "{\"traceEvents\":[{\"name\":\"\xc3",
	    "{\"traceEvents\":[{\"ts\":12",
	};
	unsigned char z[4096];
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		size_t n = gzip(texts[i], strlen(texts[i]), z, sizeof(z));
		agree_stop((const char *)z, n - 8, 0); /* without its trailer */
		size_t zn = ZSTD_compress(z, sizeof(z), texts[i], strlen(texts[i]), 3);
		assert_false(ZSTD_isError(zn));
		agree_stop((const char *)z, zn - 3, 0);
	}
	static const char *const after[] = {"{\"traceEvents\":[{\"ph\":\"A\"}]}",
	                                    "{\"traceEvents\":[{\"ph\":\"A\"}],\"m\":\"v\"w\"}"};
	for (size_t i = 0; i < 2; i++) {
		size_t n = gzip("\xef\xbb\xbf", 3, z, sizeof(z));
		n += gzip(after[i], strlen(after[i]), z + n, sizeof(z) - n);
		assert_int_equal(agree_stop((const char *)z, n, 0), i == 1);
	}
}

/* Megabytes of varied events, read from a file in chunks: every kind of
 * token falls across a chunk's end somewhere. Then a defect at the very
 * end, after all of them were handed over. */
static void test_chunks(void **state)
{
	(void)state;
	size_t cap = (size_t)8 << 20;
	char *t = malloc(cap);
	assert_non_null(t);
	size_t o = (size_t)sprintf(t, "{\"traceEvents\":[");
	for (unsigned i = 0; o < cap - (1 << 20); i++) {
		o += (size_t)sprintf(
		    t + o,
		    "%s{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k%u\\u00e9\\n%.*s\xe2\x82\xac\","
		    "\"pid\":%u,\"tid\":\"s%u\",\"ts\":%u.%03u,\"dur\":%ue-%u,\"args\":{\"External "
		    "id\":%u,\"grid\":[%u,1,1],\"v\":%s,\"s\":\"%.*s\"}}",
		    i ? ",\n " : "", i, (int)(i % 37), "abcdefghijklmnopqrstuvwxyz0123456789x", i % 7, i % 3,
		    i * 7, i % 1000, i % 100, i % 4, i, i % 512, i % 2 ? "true" : "null", (int)(i % 5) * 2,
		    "\\\"\\\\\\/\\t  ");
	}
	size_t end = o;
	o += (size_t)sprintf(t + o, "]}");
	assert_false(agree_stop(t, o, 0));
	/* The same with a bare nan as the very last value. */
	o = end;
	o += (size_t)sprintf(t + o, ",{\"ph\":\"C\",\"args\":{\"v\":nan}}]}");
	assert_true(agree_stop(t, o, 0));
	free(t);
}

/* Events plain enough for the fast read to take whole, without their
 * tokens (trace_reader.c, fast_event): every kind of member and scalar,
 * and each limit just kept and just passed (then the tokens take the event
 * and cut or drop as they do), in a text read in chunks so that events
 * fall across their ends. Both reads must agree on all of it. */
static void test_events_taken_whole(void **state)
{
	(void)state;
	size_t cap = (size_t)4 << 20;
	char *t = malloc(cap);
	assert_non_null(t);
	size_t o = (size_t)sprintf(t, "{\"traceEvents\":[");
	/* members of every kind, in every order, blanks between tokens */
	static const char *const plain[] = {
	    "{}",
	    "{ }",
	    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":1.5,\"dur\":2,"
	    "\"args\":{\"External "
	    "id\":1,\"stream\":7,\"correlation\":99,\"ok\":true,\"no\":false,\"none\":null,"
	    "\"s\":\"v\",\"neg\":-0.25,\"big\":12345678901234567890123}}",
	    " {\n\"name\" : \"n\" ,\t\"ph\" :\"i\", \"args\" : { } , \"s\" : \"g\", \"ts\" : 0 } ",
	    "{\"ph\":\"f\",\"id\":\"0x1f\",\"pid\":\"Spans\",\"tid\":-3,\"ts\":10,\"cat\":\"ac2g\",\"bp\":"
	    "\"e\"}",
	    "{\"ph\":\"X\",\"pid\":1.5,\"tid\":1e3,\"id\":9223372036854775808,\"ts\":\"7\",\"dur\":true,"
	    "\"name\":3,\"cat\":null,\"args\":5}",
	    "{\"ph\":\"X\",\"ts\":1,\"dur\":-4,\"args\":{\"a\":1},\"args\":{\"b\":2},\"ph\":\"B\",\"name\":"
	    "\"x\","
	    "\"name\":\"y\"}",
	    "{\"ph\":\"X\",\"ts\":99999999999999999999999,\"dur\":1e400,\"args\":{\"e\":1E+2,\"f\":0.5e-3}}",
	    "{\"ph\":\"X\",\"ts\":-0,\"dur\":0.0005,\"args\":{\"\":\"\",\"k\\u0041\":1}}",
	    "{\"ph\":\"X\",\"name\":\"\x7f\",\"args\":{\"u\":\"\xc3\xa9\"}}",
	    "{\"ph\":\"X\",\"args\":{\"x\":[1]},\"name\":\"array in args\"}",
	    "{\"ph\":\"X\",\"extra\":{\"x\":1},\"name\":\"object member\"}",
	};
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		o += (size_t)sprintf(t + o, "%s%s", i ? "," : "", plain[i]);
	/* strings at their limits, one byte under (kept) and at (cut), each
	 * in an event of its own: a cat, a pid, a member's key, an arg's key,
	 * a name */
	static const char *const forms[] = {"\"cat\":\"%s\"", "\"pid\":\"%s\"", "\"%s\":1",
	                                    "\"args\":{\"%s\":1}", "\"name\":\"%s\""};
	char *str = malloc(TR_NAME_MAX + 1);
	assert_non_null(str);
	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++)
		for (size_t len = (f < 4 ? TR_SHORT_MAX : TR_NAME_MAX) - 1;
		     len <= (f < 4 ? TR_SHORT_MAX : TR_NAME_MAX); len++) {
			memset(str, 'a' + (int)f, len);
			str[len] = 0;
			o += (size_t)sprintf(t + o, ",{\"ph\":\"X\",");
			o += (size_t)sprintf(t + o, forms[f], str);
			o += (size_t)sprintf(t + o, "}");
		}
	free(str);
	/* an arg value that just fits with its quotes, and one that does not */
	for (size_t v = TR_VALUE_MAX - 3; v <= TR_VALUE_MAX - 2; v++) {
		o += (size_t)sprintf(t + o, ",{\"ph\":\"X\",\"args\":{\"v\":\"");
		memset(t + o, 'v', v);
		o += v;
		o += (size_t)sprintf(t + o, "\",\"n\":");
		memset(t + o, '7', TR_WORD_MAX); /* the longest number */
		o += TR_WORD_MAX;
		o += (size_t)sprintf(t + o, "}}");
	}
	/* as many args and extra members as are kept, and one more of each */
	for (int over = 0; over < 3; over++) {
		o += (size_t)sprintf(t + o, ",{\"ph\":\"X\",\"args\":{");
		for (int i = 0; i < TR_ARGS_MAX + (over == 1); i++)
			o += (size_t)sprintf(t + o, "%s\"a%d\":%d", i ? "," : "", i, i);
		o += (size_t)sprintf(t + o, "}");
		for (int i = 0; i < TR_EXTRA_MAX + (over == 2); i++)
			o += (size_t)sprintf(t + o, ",\"x%d\":\"%d\"", i, i);
		o += (size_t)sprintf(t + o, "}");
	}
	/* many small events, so that the chunks' ends fall inside some */
	for (unsigned i = 0; o < cap - 4096; i++)
		o += (size_t)sprintf(
		    t + o,
		    ",{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::op%u\",\"pid\":%u,\"tid\":%u,"
		    "\"ts\":%u.%03u,\"dur\":%u,\"args\":{\"External id\":%u,\"s\":\"%.*s\"}}",
		    i % 97, i % 3, i % 5, i, i % 1000, i % 50, i, (int)(i % 23),
		    "abcdefghijklmnopqrstuvwxyz");
	o += (size_t)sprintf(t + o, "]}");
	assert_true(o < cap);
	assert_false(agree_stop(t, o, 0));
	/* a callback that stops at an event the fast read took whole */
	assert_false(agree_stop(t, o, 3));
	assert_false(agree_stop(t, o, 5000));
	free(t);
}

/* The libkineto traces in tests/data, as written. */
static void test_libkineto_files(void **state)
{
	(void)state;
	static const char *const names[] = {"libkineto-sample.json", "libkineto-cuda-fake.json"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", STROBE_TEST_DATA_DIR, names[i]);
		FILE *f = fopen(path, "rb");
		assert_non_null(f);
		fseek(f, 0, SEEK_END);
		long n = ftell(f);
		rewind(f);
		char *t = malloc((size_t)n);
		assert_non_null(t);
		assert_int_equal(fread(t, 1, (size_t)n, f), (size_t)n);
		fclose(f);
		assert_false(agree_stop(t, (size_t)n, 0));
		free(t);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_valid_json_read_once),
	    cmocka_unit_test(test_limits_read_once),
	    cmocka_unit_test(test_defects_read_again),
	    cmocka_unit_test(test_stop_the_same),
	    cmocka_unit_test(test_chunks),
	    cmocka_unit_test(test_events_taken_whole),
	    cmocka_unit_test(test_libkineto_files),
	    cmocka_unit_test(test_compressed_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

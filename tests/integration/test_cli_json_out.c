/* strobe convert and strobe merge write Chrome JSON with one writer, so the
 * same input event comes out the same from both, as the library writes it:
 * an empty name is kept, "C" and "M" events always have args, a value cut at
 * the reader's limit keeps what is left as a string, and negative times stay
 * negative, exactly, to the int64 limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define BIG 20000 /* an arg value over the reader's 16 KiB */

static char paths[4][1200];

static const char *in_dir(int slot, const char *name)
{
	snprintf(paths[slot], sizeof(paths[slot]), "%s/%s", tu_dir, name);
	return paths[slot];
}

static void write_input(const char *path, long long base, const char *events)
{
	size_t n = strlen(events) + BIG + 512;
	char *text = malloc(n), *big = malloc(BIG + 1);
	assert_non_null(text);
	assert_non_null(big);
	memset(big, 'x', BIG);
	big[BIG] = 0;
	snprintf(text, n,
	         "{\"baseTimeNanoseconds\": %lld, \"traceEvents\": [%s,\n"
	         "{\"ph\": \"X\", \"name\": \"long\", \"pid\": 1, \"tid\": 1, \"ts\": 3, \"dur\": 1, "
	         "\"args\": {\"big\": \"%s\"}}]}",
	         base, events, big);
	assert_int_equal(tu_write_file(path, text), 0);
	free(text);
	free(big);
}

static const char events[] =
    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"\", \"pid\": 1, \"tid\": 1, \"ts\": -1.5, \"dur\": "
    "2},\n"
    "{\"ph\": \"X\", \"name\": \"negdur\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": -3.25},\n"
    "{\"ph\": \"i\", \"name\": \"min\", \"pid\": 1, \"tid\": 1, \"ts\": -9223372036854775.808},\n"
    "{\"ph\": \"i\", \"name\": \"max\", \"pid\": 1, \"tid\": 1, \"ts\": 9223372036854775.807},\n"
    "{\"ph\": \"C\", \"name\": \"ctr\", \"pid\": 1, \"tid\": 0, \"ts\": 1, \"args\": {}},\n"
    "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, \"args\": {}},\n"
    "{\"ph\": \"i\", \"name\": \"bare\", \"pid\": 1, \"tid\": 1, \"ts\": 2, \"args\": {}}";

static yajl_val find_named(yajl_val root, const char *ph, const char *name)
{
	yajl_val e = tu_find(root, ph, NULL, name);
	if (!e)
		fail_msg("no \"%s\" event named \"%s\"", ph, name);
	return e;
}

/* What both commands must write for the events above. */
static void check(const char *what, const char *path)
{
	char *text = tu_read_file(path, NULL);
	assert_non_null(text);
	yajl_val root = tu_load_trace(path);

	/* An empty name is written, as the library writes every name. */
	yajl_val unnamed = find_named(root, "X", "");
	assert_int_equal(tu_get_ns(unnamed, "ts"), -1500);
	assert_int_equal(tu_get_ns(unnamed, "dur"), 2000);
	/* Negative times print negative, exactly, out to the int64 limits. */
	assert_int_equal(tu_get_ns(find_named(root, "X", "negdur"), "dur"), -3250);
	if (!strstr(text, "\"name\": \"min\", \"pid\": 1, \"tid\": 1, \"ts\": -9223372036854775.808}") ||
	    !strstr(text, "\"name\": \"max\", \"pid\": 1, \"tid\": 1, \"ts\": 9223372036854775.807}"))
		fail_msg("%s: the int64 limits did not come out exactly:\n%.3000s", what, text);

	/* "C" and "M" always have args, as the library writes them; others only
	 * when they have some. */
	yajl_val ctr = find_named(root, "C", "ctr");
	assert_non_null(tu_get(ctr, "args"));
	assert_true(YAJL_IS_OBJECT(tu_get(ctr, "args")) && YAJL_GET_OBJECT(tu_get(ctr, "args"))->len == 0);
	yajl_val meta = find_named(root, "M", "thread_name");
	assert_true(YAJL_IS_OBJECT(tu_get(meta, "args")));
	assert_null(tu_get(find_named(root, "i", "bare"), "args"));

	/* A string cut at the reader's limit is kept shortened. */
	const char *big = tu_get_str(tu_get(find_named(root, "X", "long"), "args"), "big");
	if (!big || strlen(big) < 16000 || strlen(big) >= BIG || strspn(big, "x") != strlen(big))
		fail_msg("%s: the cut value is %.60s...", what, big ? big : "(none)");
	yajl_tree_free(root);
	free(text);
}

static void test_convert_and_merge_agree(void **state)
{
	(void)state;
	const char *in = in_dir(0, "rank0.json");
	write_input(in, 1000000000, events);
	const char *conv = in_dir(1, "converted.json");
	char args[4096], *out = NULL;
	snprintf(args, sizeof(args), "'%s' '%s'", in, conv);
	assert_int_equal(tu_strobe("convert", args, 1, &out), 0);
	free(out);
	check("convert", conv);

	/* Rank 1 starts a second later: its times move by +1 s, and the
	 * largest saturates rather than wrapping round. */
	const char *in1 = in_dir(2, "rank1.json");
	write_input(
	    in1, 2000000000,
	    "{\"ph\": \"i\", \"name\": \"later\", \"pid\": 1, \"tid\": 1, \"ts\": 9223372036854775.807}");
	const char *merged = in_dir(3, "merged.json");
	snprintf(args, sizeof(args), "-q -o '%s' '%s' '%s'", merged, in, in1);
	assert_int_equal(tu_strobe("merge", args, 1, &out), 0);
	free(out);
	check("merge", merged);
	char *text = tu_read_file(merged, NULL);
	tu_assert_contains(text,
	                   "\"name\": \"later\", \"pid\": 10001, \"tid\": 1, \"ts\": 9223372036854775.807}");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_convert_and_merge_agree),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

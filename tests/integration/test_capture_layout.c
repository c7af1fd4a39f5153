/* The capture records' layout as a user meets it: a range of a 12-byte
 * name takes 32 bytes of buffer (an 8-byte pop, a 12-byte push header),
 * names of other lengths as the layout says; flight rings whose chunks end
 * at every offset a pop or a push leaves decode to the ranges recorded,
 * recycled pushes still open keep their attributes, domain and id; and a
 * raw crash dump of such rings converts to the ranges a live dump holds. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/flight_crash.h"
#include "core/capture.h"
#include "core/names.h"
#include "crashdump.h"
#include "strobe/strobe.h"
#include "testutil.h"

static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define NAME_MAX_LEN 47

/* The name of length len (1 to NAME_MAX_LEN): a prefix of letters. */
static const char *name_of(size_t len)
{
	static char names[NAME_MAX_LEN + 1][NAME_MAX_LEN + 1];
	if (!names[len][0])
		memcpy(names[len], letters, len);
	return names[len];
}

static int64_t stat_of(yajl_val root, const char *key)
{
	yajl_val v = tu_get(tu_get(root, "strobe"), key);
	assert_non_null(v);
	return (int64_t)YAJL_GET_INTEGER(v);
}

/* Stops the trace and loads it as saved. */
static yajl_val stop_and_load(void)
{
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	char path[1200];
	TU_FORMAT(path, "%s/layout.json", tu_dir);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	return tu_load_trace(path);
}

#define PAIRS 1000

static void test_a_range_takes_32_bytes(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	for (int i = 0; i < PAIRS; i++) {
		strobe_range_push("bench::range");
		strobe_range_pop();
	}
	yajl_val root = stop_and_load();
	assert_int_equal(tu_count(root, "X", "user_annotation", "bench::range"), PAIRS);
	int64_t bytes = stat_of(root, "cpu_buffer_bytes");
	print_message("%d ranges of a 12-byte name: %lld bytes\n", PAIRS, (long long)bytes);
	assert_true(bytes > 0);
	assert_true(bytes <= 32 * PAIRS);
	yajl_tree_free(root);
}

/* A push is its 12-byte header and the name, padded to 8 bytes; a pop of
 * the default domain or an op's, 8 bytes; a pop of a domain of its own,
 * 16. */
static void test_bytes_follow_the_name(void **state)
{
	(void)state;
	uint32_t dom = strb_domain_register("layout domain");
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	int64_t want = 0;
	for (size_t len = 1; len <= NAME_MAX_LEN; len++) {
		strobe_range_push(name_of(len));
		strobe_range_pop();
		want += (int64_t)((12 + len + 7) / 8 * 8) + 8;
	}
	strb_capture_push(dom, "in domain", NULL);
	strb_capture_pop(dom);
	want += 24 + 16;
	yajl_val root = stop_and_load();
	for (size_t len = 1; len <= NAME_MAX_LEN; len++) {
		yajl_val e = tu_find(root, "X", "user_annotation", name_of(len));
		assert_non_null(e);
		assert_null(tu_get(tu_get(e, "args"), "finished"));
	}
	yajl_val e = tu_find(root, "X", "layout domain", "in domain");
	assert_non_null(e);
	assert_null(tu_get(tu_get(e, "args"), "finished"));
	assert_int_equal(stat_of(root, "cpu_buffer_bytes"), want);
	assert_int_equal(stat_of(root, "unmatched_pops"), 0);
	yajl_tree_free(root);
}

static void flight_start(void)
{
	char out[1200];
	TU_FORMAT(out, "%s/flight.json", tu_dir);
	/* 1 MiB: 12 chunks of CPU rings. */
	struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .output = out, .memory_bytes = 1 << 20,
	                                          .window_ns = 600000000000ull);
	assert_int_equal(strobe_flight_start(&o), 0);
}

static yajl_val flight_dump(const char *reason)
{
	char path[1300];
	assert_int_equal(strobe_flight_dump(reason, path, sizeof(path)), 0);
	return tu_load_trace(path);
}

/* Pairs of every name length in turn, each fifth with a range nested in
 * it: records of 16 to 56 bytes, so that over many chunks each one ends
 * at every offset, an 8-byte tail included, over what an older lap left
 * there. Returns the pairs' count; *last: the last one's name. */
static int cycle_pairs(int n, const char **last)
{
	for (int i = 0; i < n; i++) {
		*last = name_of(1 + (size_t)(i * 7) % NAME_MAX_LEN);
		strobe_range_push(*last);
		if (i % 5 == 0) {
			strobe_range_push("in");
			strobe_range_pop();
		}
		strobe_range_pop();
	}
	return n;
}

/* Categories of the ranges these tests record. */
static bool recorded_cat(const char *cat)
{
	static const char *const cats[] = {"user_annotation", "cpu_op", "kept domain", "raw domain"};
	for (size_t i = 0; cat && i < sizeof(cats) / sizeof(cats[0]); i++)
		if (!strcmp(cat, cats[i]))
			return true;
	return false;
}

/* Every range of the dump is one recorded (a prefix of letters, or one of
 * the names the tests give their other ranges): complete, but for those in open[] (still open at the dump,
 * "finished": false); no pop unmatched, nothing out of the window. */
static void assert_ranges_recorded(yajl_val root, const char *const *open, size_t nopen)
{
	yajl_val evs = tu_events(root);
	size_t seen_open = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *ph = tu_get_str(e, "ph"), *name = tu_get_str(e, "name");
		if (!ph || !strcmp(ph, "M"))
			continue;
		const char *cat = tu_get_str(e, "cat");
		if (!strcmp(ph, "C") || (cat && !strcmp(cat, "cpu_instant_event")))
			fail_msg("a \"%s\" event (%s) that nobody recorded", ph, name ? name : "?");
		if (strcmp(ph, "X"))
			continue;
		assert_non_null(name);
		if (!recorded_cat(cat))
			continue;
		yajl_val fin = tu_get(tu_get(e, "args"), "finished");
		bool is_open = false;
		for (size_t j = 0; j < nopen; j++)
			is_open |= !strcmp(name, open[j]);
		if (is_open) {
			assert_non_null(fin);
			assert_true(YAJL_IS_FALSE(fin));
			seen_open++;
			continue;
		}
		if (fin)
			fail_msg("range \"%s\" is unfinished", name);
		size_t len = strlen(name);
		static const char *const others[] = {"in",
		                                     "x",
		                                     "chunk start",
		                                     "dom_tick",
		                                     "kept_colour",
		                                     "kept op",
		                                     "kept plain range with a longer name",
		                                     "raw_open",
		                                     "raw op",
		                                     "open at the crash"};
		bool known = false;
		for (size_t j = 0; j < sizeof(others) / sizeof(others[0]); j++)
			known |= !strcmp(name, others[j]);
		if (!known && (len > NAME_MAX_LEN || memcmp(name, letters, len)))
			fail_msg("range \"%s\" was never recorded", name);
	}
	assert_int_equal(seen_open, nopen);
	assert_int_equal(stat_of(root, "unmatched_pops"), 0);
	assert_int_equal(stat_of(root, "out_of_window"), 0);
}

/* The newest range of the dump named `name` and none after it. */
static void assert_last_is(yajl_val root, const char *name)
{
	yajl_val evs = tu_events(root);
	int64_t newest = INT64_MIN;
	const char *newest_name = NULL;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *ph = tu_get_str(e, "ph"), *n = tu_get_str(e, "name");
		if (!ph || strcmp(ph, "X") || !recorded_cat(tu_get_str(e, "cat")) || !strcmp(n, "in") ||
		    tu_get(tu_get(e, "args"), "finished"))
			continue;
		int64_t ts = tu_get_ns(e, "ts");
		if (ts >= newest) {
			newest = ts;
			newest_name = n;
		}
	}
	assert_non_null(newest_name);
	assert_string_equal(newest_name, name);
}

static void test_ring_chunks_end_anywhere(void **state)
{
	(void)state;
	flight_start();
	strobe_range_push("outer");
	const char *last = NULL;
	cycle_pairs(60000, &last); /* about 40 chunks: the ring goes round thrice */
	yajl_val root = flight_dump("chunk ends");
	const char *open[] = {"outer"};
	assert_ranges_recorded(root, open, 1);
	assert_last_is(root, last);
	assert_true(tu_get_num(tu_get(root, "flight_recorder"), "aged_out") > 0);
	yajl_tree_free(root);
	strobe_range_pop();
	assert_int_equal(strobe_flight_stop(), 0);
}

/* On a thread's own ring (it starts at a chunk's start): first chunks that
 * end with a pop in their last 8 bytes (2048 pairs of 32 bytes), then, in
 * the same chunks a lap later, records that leave exactly those 8 bytes
 * unused (a 32-byte pair and 2729 of 24 bytes): the old pop there must
 * not be read as one. */
static void *chunk_end_pairs(void *arg)
{
	(void)arg;
	for (int c = 0; c < 14; c++)
		for (int i = 0; i < 2048; i++) {
			strobe_range_push("bench::range");
			strobe_range_pop();
		}
	for (int c = 0; c < 14; c++) {
		strobe_range_push("chunk start");
		strobe_range_pop();
		for (int i = 0; i < 2729; i++) {
			strobe_range_push("x");
			strobe_range_pop();
		}
	}
	return NULL;
}

static void test_pops_at_chunk_ends(void **state)
{
	(void)state;
	flight_start();
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, chunk_end_pairs, NULL), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
	yajl_val root = flight_dump("pops at chunk ends");
	assert_ranges_recorded(root, NULL, 0);
	assert_last_is(root, "x");
	/* The ring held 12 chunks at most: the first pairs aged out. */
	assert_null(tu_find(root, "X", "user_annotation", "bench::range"));
	size_t starts = tu_count(root, "X", "user_annotation", "chunk start");
	assert_true(starts >= 10 && starts <= 12);
	assert_int_equal(tu_count(root, "X", "user_annotation", "x"), starts * 2729);
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
}

/* Starts the flight recorder with a range of domain dom, coloured, and an
 * op open in it; returns the op's id. */
static uint64_t start_with_open(uint32_t dom, const char *range, uint32_t argb, const char *op)
{
	flight_start();
	struct strb_rec_attrs at = {.has = STRB_ATTR_COLOR, .color = argb};
	strb_capture_push(dom, range, &at);
	return strobe_op_push(op);
}

/* Pushes still open when their chunk is recycled are kept as recorded: a
 * domain range with a colour, an op with its id, a plain range. */
static void test_kept_pushes_keep_what_they_carry(void **state)
{
	(void)state;
	uint32_t dom = strb_domain_register("kept domain");
	uint64_t op = start_with_open(dom, "kept_colour", 0xff12ab34u, "kept op");
	strobe_range_push("kept plain range with a longer name");
	const char *last = NULL;
	cycle_pairs(60000, &last);
	yajl_val root = flight_dump("kept");
	const char *open[] = {"kept_colour", "kept op", "kept plain range with a longer name"};
	assert_ranges_recorded(root, open, 3);
	yajl_val e = tu_find(root, "X", "kept domain", "kept_colour");
	assert_non_null(e);
	assert_string_equal(tu_get_str(tu_get(e, "args"), "color"), "#12ab34");
	assert_string_equal(tu_get_str(tu_get(e, "args"), "domain"), "kept domain");
	e = tu_find(root, "X", "cpu_op", "kept op");
	assert_non_null(e);
	assert_int_equal((int64_t)tu_get_num(tu_get(e, "args"), "External id"), (int64_t)op);
	assert_int_equal((int64_t)tu_get_num(tu_get(root, "flight_recorder"), "kept_lost"), 0);
	assert_true(tu_get_num(tu_get(root, "flight_recorder"), "aged_out") > 0);
	yajl_tree_free(root);

	/* Closed now: whole, however long ago they began. */
	strobe_range_pop();
	strobe_op_pop();
	strb_capture_pop(dom);
	root = flight_dump("closed");
	assert_ranges_recorded(root, NULL, 0);
	e = tu_find(root, "X", "kept domain", "kept_colour");
	assert_non_null(e);
	assert_string_equal(tu_get_str(tu_get(e, "args"), "color"), "#12ab34");
	assert_non_null(tu_find(root, "X", "cpu_op", "kept op"));
	assert_non_null(tu_find(root, "X", "user_annotation", "kept plain range with a longer name"));
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The trace's ranges as sorted "name|finished" lines. */
static char **ranges_of(yajl_val root, size_t *n)
{
	yajl_val evs = tu_events(root);
	char **out = calloc(YAJL_GET_ARRAY(evs)->len + 1, sizeof(*out));
	assert_non_null(out);
	*n = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *ph = tu_get_str(e, "ph"), *name = tu_get_str(e, "name");
		if (!ph || strcmp(ph, "X") || !recorded_cat(tu_get_str(e, "cat")))
			continue;
		bool open = tu_get(tu_get(e, "args"), "finished") != NULL;
		assert_true(
		    asprintf(&out[(*n)++], "%s|%s|%s", tu_get_str(e, "cat"), name, open ? "open" : "") > 0);
	}
	qsort(out, *n, sizeof(*out), cmp_str);
	return out;
}

/* A raw crash dump of recycled rings (8-byte pops at chunk ends, kept
 * pushes, a domain's pops) converts to the ranges a live dump of the same
 * moment holds. */
static void test_raw_dump_round_trip(void **state)
{
	(void)state;
	uint32_t dom = strb_domain_register("raw domain");
	start_with_open(dom, "raw_open", 0xff00ff00u, "raw op");
	const char *last = NULL;
	cycle_pairs(50000, &last);
	for (int i = 0; i < 100; i++) {
		strb_capture_push(dom, "dom_tick", NULL);
		strb_capture_pop(dom);
	}
	strobe_range_push("open at the crash");

	yajl_val conv_root = tu_crash_dump_now();
	yajl_val live = flight_dump("round trip");

	const char *open[] = {"raw_open", "raw op", "open at the crash"};
	assert_ranges_recorded(live, open, 3);
	assert_last_is(conv_root, "dom_tick");
	assert_int_equal(tu_count(conv_root, "X", "raw domain", "dom_tick"), 100);
	assert_string_equal(
	    tu_get_str(tu_get(tu_find(conv_root, "X", "raw domain", "raw_open"), "args"), "color"),
	    "#00ff00");
	size_t na, nb;
	char **a = ranges_of(live, &na), **b = ranges_of(conv_root, &nb);
	assert_true(na > 1000);
	assert_int_equal(na, nb);
	for (size_t i = 0; i < na; i++) {
		assert_string_equal(a[i], b[i]);
		free(a[i]);
		free(b[i]);
	}
	free(a);
	free(b);
	yajl_tree_free(live);
	yajl_tree_free(conv_root);
	strobe_range_pop();
	strobe_op_pop();
	strb_capture_pop(dom);
	assert_int_equal(strobe_flight_stop(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_a_range_takes_32_bytes),
	    cmocka_unit_test(test_bytes_follow_the_name),
	    cmocka_unit_test(test_ring_chunks_end_anywhere),
	    cmocka_unit_test(test_pops_at_chunk_ends),
	    cmocka_unit_test(test_kept_pushes_keep_what_they_carry),
	    cmocka_unit_test(test_raw_dump_round_trip),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

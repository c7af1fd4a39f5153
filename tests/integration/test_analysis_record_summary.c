/* The summary strobe record prints at the end: its top annotation ranges
 * show the time a range was running (the union of its ranges over the
 * threads), never more than the window, as strobe summary does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/record_summary.h"
#include "testutil.h"

/* "work" runs 0-100 µs on thread 1 (holding another "work" 10-60) and
 * 50-150 µs on thread 2: 250 µs summed, 150 µs running, in a 150 µs
 * window. */
static const char trace[] =
    "{\"traceEvents\": [\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"work\", \"pid\": 1, \"tid\": 1, \"ts\": 0, "
    "\"dur\": 100},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"work\", \"pid\": 1, \"tid\": 1, \"ts\": 10, "
    "\"dur\": 50},\n"
    "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"work\", \"pid\": 1, \"tid\": 2, \"ts\": 50, "
    "\"dur\": 100}\n"
    "]}\n";

static void test_ranges_within_the_window(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4096];
	snprintf(path, sizeof(path), "%s/work.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(out);
	assert_int_equal(record_summary(path, 1000000, out), 0);
	fclose(out);
	tu_assert_line(text, "x  work", "150.000 µs        3 x  work");
	assert_null(strstr(text, "250.000 µs"));
	free(text);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranges_within_the_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

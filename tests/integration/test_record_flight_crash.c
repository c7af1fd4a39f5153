/* `strobe record --flight` of a program that dies of a fatal signal: the
 * raw dump its flight recorder wrote from the signal handler is turned
 * into a trace beside the output when the run ends (and the raw file
 * removed), and the exit status is the signal's, as without strobe. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "strobe/strobe.h"
#include "testutil.h"

static char *dir;

static size_t matches(const char *pattern, char *first, size_t len)
{
	glob_t g;
	if (glob(pattern, 0, NULL, &g) != 0)
		return 0;
	size_t n = g.gl_pathc;
	if (n && first)
		snprintf(first, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return n;
}

static void test_crash_becomes_a_trace(void **state)
{
	(void)state;
	/* Sanitizer builds: the injected library first, and the signals left to
	 * strobe's handler. */
	const char *old = getenv("ASAN_OPTIONS");
	char asan[1024];
	snprintf(asan, sizeof(asan),
	         "%s%sverify_asan_link_order=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:"
	         "handle_abort=0",
	         old ? old : "", old && *old ? ":" : "");
	setenv("ASAN_OPTIONS", asan, 1);
	char args[4096], pattern[1300], trace[1300], *err = NULL;
	snprintf(args, sizeof(args), "--flight 10s -o '%s/run.json.gz' -- '%s/flight_crash' segv", dir,
	         STROBE_TEST_PROGRAMS_DIR);
	int rc = tu_strobe("record", args, 1, &err);
	assert_non_null(err);
	/* The program's own fate: SIGSEGV, 128 + 11. */
	assert_int_equal(rc, 139);
	tu_assert_contains(err, "died by a fatal signal");
	snprintf(pattern, sizeof(pattern), "%s/run.crash-*.raw", dir);
	assert_int_equal(matches(pattern, NULL, 0), 0);
	snprintf(pattern, sizeof(pattern), "%s/run.crash-*.json.gz", dir);
	assert_int_equal(matches(pattern, trace, sizeof(trace)), 1);
	tu_assert_contains(err, trace);
	free(err);
	yajl_val root = tu_load_trace(trace);
	yajl_val step = tu_find(root, "X", "user_annotation", "fatal_step");
	assert_non_null(step);
	yajl_val fin = tu_get(tu_get(step, "args"), "finished");
	assert_true(fin && YAJL_IS_FALSE(fin));
	assert_non_null(tu_find(root, "X", "user_annotation", "main_wait"));
	assert_true(tu_count(root, "X", "user_annotation", "tick") >= 200);
	tu_assert_contains(tu_get_str(tu_get(root, "flight_recorder"), "signal"), "SIGSEGV");
	yajl_tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crash_becomes_a_trace),
	};
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

/* The command line every command shares: help for one command from the
 * top level, one usage-error format (exit status 2, naming the option and
 * its bad value) and one duration grammar. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *const commands[] = {"config", "convert", "merge",  "record",
                                       "report", "summary", "trigger"};

static void test_help_of_one_command(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		static const char *const forms[] = {"help", "-h", "--help"};
		for (size_t f = 0; f < 3; f++) {
			char *out = NULL, want[64];
			assert_int_equal(tu_strobe(forms[f], commands[i], 0, &out), 0);
			snprintf(want, sizeof(want), "usage: strobe %s", commands[i]);
			if (strncmp(out, want, strlen(want)))
				fail_msg("strobe %s %s printed: %.300s", forms[f], commands[i], out);
			free(out);
		}
	}
	char *out = NULL;
	assert_int_equal(tu_strobe("help", "", 0, &out), 0);
	tu_assert_contains(out, "strobe help [<command>]");
	tu_assert_contains(out, "summary    summarise a trace file");
	free(out);
	assert_int_equal(tu_strobe("help", "nosuch", 1, &out), 2);
	tu_assert_contains(out, "unknown command 'nosuch'");
	free(out);
}

/* One duration grammar for every option: a bare number is seconds (as
 * record's --delay documents), units ns, us, ms, s, m, h. */
static void test_duration_grammar(void **state)
{
	(void)state;
	char *dir = tu_mkdtemp(), in[1200], out[1200], args[4096];
	snprintf(in, sizeof(in), "%s/in.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	assert_int_equal(
	    tu_write_file(
	        in,
	        "{\"traceEvents\": ["
	        "{\"ph\": \"X\", \"name\": \"four\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 4000000},"
	        "{\"ph\": \"X\", \"name\": \"six\", \"pid\": 1, \"tid\": 1, \"ts\": 0, \"dur\": 6000000}]}"),
	    0);
	static const struct {
		const char *dur;
		size_t kept; /* of the 4 s and 6 s events */
	} kept[] = {{"5", 1},   {"5s", 1},  {"=5", 1}, {"5000ms", 1}, {"5000000us", 1}, {"5000000000ns", 1},
	            {"4.5", 1}, {"5ms", 2}, {"0", 2},  {".2m", 0},    {"1h", 0}};
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		snprintf(args, sizeof(args), "-q --min-dur%s%s '%s' '%s'", kept[i].dur[0] == '=' ? "" : " ",
		         kept[i].dur, in, out);
		char *msg = NULL;
		if (tu_strobe("convert", args, 1, &msg))
			fail_msg("--min-dur %s: %s", kept[i].dur, msg);
		free(msg);
		yajl_val root = tu_load_trace(out);
		if (tu_count(root, "X", NULL, NULL) != kept[i].kept)
			fail_msg("--min-dur %s kept %zu events, not %zu", kept[i].dur,
			         tu_count(root, "X", NULL, NULL), kept[i].kept);
		yajl_tree_free(root);
	}
	static const char *const bad[] = {"5x", "-5", "1e3", "5 s", "s", ".", "0x10", "inf", "99999999999h"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[128], *msg = NULL;
		snprintf(args, sizeof(args), "--min-dur '%s' '%s' '%s'", bad[i], in, out);
		assert_int_equal(tu_strobe("convert", args, 1, &msg), 2);
		snprintf(want, sizeof(want), "strobe: convert: --min-dur: '%s' is ", bad[i]);
		tu_assert_contains(msg, want);
		tu_assert_contains(msg,
		                   "\nusage: strobe convert [options] IN OUT (see strobe convert --help)\n");
		free(msg);
	}
	tu_rmrf(dir);
}

/* Every usage error: exit status 2, what was wrong naming the option and
 * its value, then the command's usage line. */
static void test_usage_errors(void **state)
{
	(void)state;
	static const struct {
		const char *cmd, *args, *says, *usage;
	} cases[] = {
	    {"summary", "--top x t.json",
	     "strobe: summary: --top: 'x' is not a whole number from 0 to 1000000\n",
	     "strobe summary [--top N] [--json] FILE"},
	    {"summary", "t.json --top", "strobe: summary: --top needs a whole number from 0 to 1000000\n",
	     "strobe summary [--top N] [--json] FILE"},
	    {"summary", "--top=1000001 t.json", "--top: '1000001' is not a whole number", "strobe summary"},
	    {"summary", "a.json b.json", "strobe: summary: one trace file at a time ('b.json' is a second)\n",
	     "strobe summary"},
	    {"report", "t.json -o", "strobe: report: -o needs a file name\n",
	     "strobe report [--top N] [-o OUT.html] FILE"},
	    {"report", "--output= t.json", "strobe: report: --output needs a file name\n", "strobe report"},
	    {"report", "--bogus t.json", "strobe: report: unknown option '--bogus'\n", "strobe report"},
	    {"config", "check --bogus", "strobe: config check: unknown option '--bogus'\n",
	     "strobe config check [--on-demand] [FILE|-]"},
	    {"config", "check a b", "strobe: config check: one FILE at most ('b' is a second)\n",
	     "strobe config check"},
	    {"config", "frobnicate", "strobe: config: unknown subcommand 'frobnicate'\n", "strobe config"},
	    {"merge", "x.json -o", "strobe: merge: -o needs a file name\n",
	     "strobe merge [--quiet] [--progress] -o OUT IN..."},
	    {"convert", "--categories= a.json b.json",
	     "strobe: convert: --categories needs a comma-separated list", "strobe convert [options] IN OUT"},
	    {"convert", "--categories , a.json b.json",
	     "strobe: convert: --categories: ',' is not a comma-separated list of categories\n",
	     "strobe convert"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL, usage[256];
		int rc = tu_strobe(cases[i].cmd, cases[i].args, 1, &out);
		if (rc != 2 || !strstr(out, cases[i].says))
			fail_msg("strobe %s %s: exit %d, said:\n%s\n(wanted \"%s\")", cases[i].cmd,
			         cases[i].args, rc, out, cases[i].says);
		snprintf(usage, sizeof(usage), "\nusage: %s", cases[i].usage);
		tu_assert_contains(out, usage);
		tu_assert_contains(out, " --help)\n");
		free(out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help_of_one_command),
	    cmocka_unit_test(test_duration_grammar),
	    cmocka_unit_test(test_usage_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The command line every command shares: help for one command from the
 * top level, one usage-error format (exit status 2, naming the option and
 * its bad value) and one duration grammar. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static const char *const commands[] = {"config", "convert", "merge", "record", "report", "summary", "trigger"};

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help_of_one_command),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

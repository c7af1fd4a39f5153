/* The log threshold from the environment: an integer sets it, anything else
 * leaves it as it was and says which value was refused. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static char seen[512];

static void observe(enum strobe_log_level level, const char *message, void *user_arg)
{
	(void)user_arg;
	if (level == STROBE_LOG_WARNING)
		snprintf(seen, sizeof(seen), "%s", message);
}

static void test_integer_sets_the_threshold(void **state)
{
	(void)state;
	strobe_log_set_level(STROBE_LOG_WARNING);
	setenv("STROBE_LOG_LEVEL", "1", 1);
	strb_log_init_from_env();
	assert_true(strb_log_enabled(STROBE_LOG_INFO));
	assert_false(strb_log_enabled(STROBE_LOG_VERBOSE));
	strobe_log_set_level(STROBE_LOG_WARNING);
}

static void test_word_is_refused_and_said(void **state)
{
	(void)state;
	strobe_log_set_level(STROBE_LOG_WARNING);
	assert_int_equal(strobe_log_add_observer(observe, NULL), 0);
	const char *bad[] = {"verbose", "1x", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		seen[0] = 0;
		setenv("STROBE_LOG_LEVEL", bad[i], 1);
		strb_log_init_from_env();
		/* atoi made "verbose" 0 (everything) and "1x" 1: now the level stays. */
		assert_false(strb_log_enabled(STROBE_LOG_INFO));
		assert_true(strb_log_enabled(STROBE_LOG_WARNING));
		tu_assert_contains(seen, bad[i]);
		tu_assert_contains(seen, "not an integer");
	}
	assert_int_equal(strobe_log_remove_observer(observe, NULL), 0);
	unsetenv("STROBE_LOG_LEVEL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_integer_sets_the_threshold),
	    cmocka_unit_test(test_word_is_refused_and_said),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The analyses' integer args (an_parse_int: "correlation", "stream", a
 * GPU row's tid) read as strtoll reads a whole decimal integer, on the
 * digits its fast path takes and on everything it hands to strtoll. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/analysis.h"
#include "testutil.h"

/* What the analyses took before: strtoll over the whole text. */
static bool by_strtoll(const char *s, int64_t *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*v = x;
	return true;
}

static void check(const char *s)
{
	int64_t want = 12345, got = 12345;
	bool ok = by_strtoll(s, &want);
	if (an_parse_int(s, &got) != ok)
		fail_msg("\"%s\": an_parse_int says %s, strtoll %s", s, ok ? "no" : "yes", ok ? "yes" : "no");
	if (ok && got != want)
		fail_msg("\"%s\": %lld, strtoll %lld", s, (long long)got, (long long)want);
	if (!ok && got != 12345)
		fail_msg("\"%s\": not an integer, yet the value was written", s);
}

static void test_same_as_strtoll(void **state)
{
	(void)state;
	static const char *const texts[] = {"0",
	                                    "7",
	                                    "-1",
	                                    "-0",
	                                    "007",
	                                    "1002",
	                                    "123456789012345678",
	                                    "-123456789012345678",
	                                    "1234567890123456789",  /* 19 digits: past the fast path */
	                                    "9223372036854775807",  /* INT64_MAX */
	                                    "9223372036854775808",  /* one past it */
	                                    "-9223372036854775808", /* INT64_MIN */
	                                    "-9223372036854775809",
	                                    "99999999999999999999999",
	                                    "",
	                                    "-",
	                                    "--1",
	                                    "+7",
	                                    " 7",
	                                    "7 ",
	                                    "1.5",
	                                    "1e3",
	                                    "12a",
	                                    "\"7\"",
	                                    "0x10",
	                                    "null",
	                                    "true"};
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		check(texts[i]);
	/* every length of digits across the fast path's limit, both signs */
	char buf[32];
	for (int len = 1; len <= 20; len++) {
		int n = 0;
		for (int k = 0; k < len; k++)
			buf[n++] = (char)('1' + k % 9);
		buf[n] = 0;
		check(buf);
		snprintf(buf + n, sizeof(buf) - (size_t)n, "x");
		check(buf);
		char neg[40];
		snprintf(neg, sizeof(neg), "-%.*s", len, buf);
		check(neg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_as_strtoll),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

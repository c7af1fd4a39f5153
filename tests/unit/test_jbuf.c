/* The JSON buffer's numbers (src/common/jbuf.h): every integer, at each
 * digit count's edges and at random, reads back as printf writes it, and
 * microseconds keep exactly three decimals. */
#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jbuf.h"

/* The text b holds, NUL-terminated, then b emptied. */
static const char *take(struct strb_jbuf *b)
{
	static char text[64];
	assert_true(b->n < sizeof(text));
	memcpy(text, b->data, b->n);
	text[b->n] = 0;
	b->n = 0;
	return text;
}

static void check_u64(struct strb_jbuf *b, uint64_t v)
{
	char want[32];
	snprintf(want, sizeof(want), "%" PRIu64, v);
	strb_jbuf_u64(b, v);
	assert_string_equal(take(b), want);
	int64_t s = (int64_t)v;
	snprintf(want, sizeof(want), "%" PRId64, s);
	strb_jbuf_i64(b, s);
	assert_string_equal(take(b), want);
	if (s >= 0) {
		snprintf(want, sizeof(want), "%" PRId64 ".%03d", s / 1000, (int)(s % 1000));
		strb_jbuf_us(b, s);
		assert_string_equal(take(b), want);
	}
}

static void test_integers(void **state)
{
	(void)state;
	struct strb_jbuf *b = strb_jbuf_new(NULL);
	assert_non_null(b);
	check_u64(b, 0);
	check_u64(b, UINT64_MAX);
	check_u64(b, (uint64_t)INT64_MAX + 1); /* INT64_MIN as signed */
	for (uint64_t p = 1, k = 0; k < 20; k++, p *= 10) {
		check_u64(b, p - 1);
		check_u64(b, p);
		check_u64(b, p + 1);
		check_u64(b, p * 9 + (p - 1)); /* all nines, one digit longer */
	}
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 100000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		check_u64(b, x >> (x % 64)); /* every length */
	}
	strb_jbuf_us(b, -5);
	assert_string_equal(take(b), "0.000");
	free(b->mem);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_integers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Records packed for random access (tools/analysis/pack.c), against the
 * plain values kept alongside: every record of 1 to AN_PACK_FIELDS fields
 * comes back whole, at and across block boundaries, for values at
 * uint64's ends, equal values (no bits) and fields as wide as 64 bits;
 * records near each other in value take a few bytes, not 8 per field;
 * signed values keep their order; and a set freed can be filled again. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/pack.h"
#include "testutil.h"

static uint64_t rng;

static uint64_t next(void)
{
	return tu_xorshift(&rng);
}

static const uint64_t ends[] = {
    0, 1, 2, 63, 64, UINT32_MAX, (uint64_t)UINT32_MAX + 1, UINT64_C(1) << 63, UINT64_MAX - 1, UINT64_MAX};

/* A value of one of several kinds: near base, anywhere, or at an end. */
static uint64_t value(uint64_t base, unsigned kind)
{
	switch (kind % 4) {
	case 0:
		return base + next() % 1000;
	case 1:
		return next();
	case 2:
		return ends[next() % (sizeof(ends) / sizeof(ends[0]))];
	default:
		return base;
	}
}

/* n records of nf fields, of kinds mixed per field: packed, then each
 * one read back, in order and at random. */
static void round_trip(size_t n, unsigned nf, unsigned kinds)
{
	uint64_t *v = malloc((n ? n : 1) * nf * sizeof(*v));
	assert_non_null(v);
	struct an_packed p;
	an_pack_init(&p, nf);
	uint64_t base = next();
	for (size_t i = 0; i < n; i++) {
		for (unsigned f = 0; f < nf; f++)
			v[i * nf + f] = value(base + i * 1000, kinds >> (2 * f));
		assert_int_equal(an_pack_push(&p, &v[i * nf]), 0);
	}
	assert_int_equal(an_pack_end(&p), 0);
	assert_int_equal(p.n, n);
	uint64_t got[AN_PACK_FIELDS];
	for (size_t k = 0; k < 2 * n; k++) {
		size_t i = k < n ? k : (size_t)(next() % n);
		an_pack_get(&p, i, got);
		for (unsigned f = 0; f < nf; f++)
			if (got[f] != v[i * nf + f])
				fail_msg("n %zu, %u fields, kinds %#x: record %zu field %u is %llu, not %llu",
				         n, nf, kinds, i, f, (unsigned long long)got[f],
				         (unsigned long long)v[i * nf + f]);
	}
	an_pack_free(&p);
	free(v);
}

static void test_round_trip(void **state)
{
	(void)state;
	rng = 0x9e3779b97f4a7c15u;
	static const size_t counts[] = {0, 1, 2, 63, 64, 65, 127, 128, 129, 1000, 4097};
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
		for (unsigned nf = 1; nf <= AN_PACK_FIELDS; nf++)
			for (unsigned t = 0; t < 8; t++)
				round_trip(counts[c], nf, (unsigned)next());
}

/* Every field 64 bits wide in every block: the widest records there are. */
static void test_widest_records(void **state)
{
	(void)state;
	rng = 7;
	struct an_packed p;
	an_pack_init(&p, AN_PACK_FIELDS);
	uint64_t v[300][AN_PACK_FIELDS];
	for (size_t i = 0; i < 300; i++) {
		for (unsigned f = 0; f < AN_PACK_FIELDS; f++)
			v[i][f] = i % 2 ? UINT64_MAX - next() % 3 : next() % 3;
		assert_int_equal(an_pack_push(&p, v[i]), 0);
	}
	assert_int_equal(an_pack_end(&p), 0);
	assert_int_equal(p.blocks[0].width[0], 64);
	for (size_t i = 0; i < 300; i++) {
		uint64_t got[AN_PACK_FIELDS];
		an_pack_get(&p, i, got);
		assert_memory_equal(got, v[i], sizeof(got));
	}
	an_pack_free(&p);
}

/* A million runtime calls as a trace has them: times 1 to 3 us apart,
 * short durations, a few rows and names, file order climbing. They take
 * under 8 bytes each, where the fields are 40 bytes unpacked; a block of
 * equal values takes no bits for them. */
static void test_near_values_pack_small(void **state)
{
	(void)state;
	rng = 11;
	struct an_packed p;
	an_pack_init(&p, 5);
	int64_t ts = 1700000000000000000;
	uint64_t seq = 0;
	for (size_t i = 0; i < 1000000; i++) {
		ts += 1000 + (int64_t)(next() % 2000);
		seq += 1 + next() % 4;
		uint64_t f[5] = {an_pack_s64(ts), 2000 + next() % 6000, next() % 4, next() % 16, seq};
		assert_int_equal(an_pack_push(&p, f), 0);
	}
	assert_int_equal(an_pack_end(&p), 0);
	size_t bytes = an_pack_bytes(&p);
	printf("a million records: %zu bytes, %.2f a record\n", bytes, (double)bytes / 1e6);
	assert_true(bytes < 8 * 1000000);
	an_pack_free(&p);

	an_pack_init(&p, 3);
	for (size_t i = 0; i < 640; i++)
		assert_int_equal(an_pack_push(&p, (const uint64_t[]){5, UINT64_MAX, 0}), 0);
	assert_int_equal(an_pack_end(&p), 0);
	for (size_t b = 0; b < p.nblocks; b++)
		assert_int_equal(p.blocks[b].bits, 0);
	uint64_t got[3];
	an_pack_get(&p, 639, got);
	assert_true(got[0] == 5 && got[1] == UINT64_MAX && got[2] == 0);
	an_pack_free(&p);
}

static void test_signed_order(void **state)
{
	(void)state;
	static const int64_t v[] = {INT64_MIN, INT64_MIN + 1, -1000,         -1,       0,
	                            1,         1000,          INT64_MAX - 1, INT64_MAX};
	size_t n = sizeof(v) / sizeof(v[0]);
	for (size_t i = 0; i < n; i++) {
		assert_true(an_unpack_s64(an_pack_s64(v[i])) == v[i]);
		if (i)
			assert_true(an_pack_s64(v[i - 1]) < an_pack_s64(v[i]));
	}
	/* times either side of 0 pack as small offsets */
	struct an_packed p;
	an_pack_init(&p, 1);
	for (int64_t t = -32; t < 32; t++)
		assert_int_equal(an_pack_push(&p, (const uint64_t[]){an_pack_s64(t)}), 0);
	assert_int_equal(an_pack_end(&p), 0);
	assert_int_equal(p.blocks[0].width[0], 6);
	uint64_t got;
	an_pack_get(&p, 0, &got);
	assert_true(an_unpack_s64(got) == -32);
	an_pack_free(&p);
}

static void test_refill_after_free(void **state)
{
	(void)state;
	struct an_packed p;
	an_pack_init(&p, 2);
	for (uint64_t i = 0; i < 100; i++)
		assert_int_equal(an_pack_push(&p, (const uint64_t[]){i, 2 * i}), 0);
	assert_int_equal(an_pack_end(&p), 0);
	an_pack_free(&p);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.nf, 2);
	for (uint64_t i = 0; i < 70; i++)
		assert_int_equal(an_pack_push(&p, (const uint64_t[]){3 * i, i}), 0);
	assert_int_equal(an_pack_end(&p), 0);
	uint64_t got[2];
	an_pack_get(&p, 69, got);
	assert_true(got[0] == 207 && got[1] == 69);
	an_pack_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_widest_records),
	    cmocka_unit_test(test_near_values_pack_small),
	    cmocka_unit_test(test_signed_order),
	    cmocka_unit_test(test_refill_after_free),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The in-place sort of the per-event arrays (tools/analysis/sort.h): the
 * same order as qsort for a total order, on the shapes that make quicksorts
 * go wrong (sorted, reversed, all equal, few values, sawtooth), on sizes
 * around its insertion-sort cutoff, and past its depth limit (heapsort);
 * and its selection (name_nth) against the sorted order. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sort.h"
#include "testutil.h"

struct rec {
	int64_t key;
	uint32_t id; /* unique: makes the order total */
};

static bool rec_less(const struct rec *x, const struct rec *y)
{
	return x->key != y->key ? x->key < y->key : x->id < y->id;
}

AN_SORT_DEFINE(sort_recs, struct rec, rec_less)

static int cmp_rec(const void *pa, const void *pb)
{
	const struct rec *x = pa, *y = pb;
	return rec_less(x, y) ? -1 : rec_less(y, x);
}

/* Field by field: struct copies need not keep padding bytes. */
static void assert_same(const struct rec *v, const struct rec *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(v[i].key, w[i].key);
		assert_int_equal(v[i].id, w[i].id);
	}
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The key of element i in shape 0 random (among range values), 1 sorted,
 * 2 reversed, 3 all equal, 4 three values, 5 sawtooth. */
static int64_t shape_key(int shape, size_t i, uint64_t range)
{
	return shape == 0   ? (int64_t)(next() % range) - (int64_t)(range / 2)
	       : shape == 1 ? (int64_t)i
	       : shape == 2 ? -(int64_t)i
	       : shape == 3 ? 7
	       : shape == 4 ? (int64_t)(next() % 3)
	                    : (int64_t)(i % 97);
}

static void check(size_t n, int shape)
{
	struct rec *v = malloc((n ? n : 1) * sizeof(*v)), *w = malloc((n ? n : 1) * sizeof(*w));
	assert_non_null(v);
	assert_non_null(w);
	for (size_t i = 0; i < n; i++) {
		int64_t k = shape_key(shape, i, 1000000);
		v[i] = (struct rec){k, (uint32_t)(next() % 4 == 0 ? n - i : i + n)};
	}
	memcpy(w, v, n * sizeof(*v));
	sort_recs(v, n);
	if (n)
		qsort(w, n, sizeof(*w), cmp_rec);
	assert_same(v, w, n);
	free(v);
	free(w);
}

static void test_same_order_as_qsort(void **state)
{
	(void)state;
	static const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 18, 33, 100, 1000, 100000};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int shape = 0; shape < 6; shape++)
			check(sizes[s], shape);
}

/* Median-of-three killers need the heapsort fallback: a depth limit of 0
 * heapsorts from the start. */
static void test_heapsort_fallback(void **state)
{
	(void)state;
	size_t n = 5000;
	struct rec *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));
	assert_non_null(v);
	assert_non_null(w);
	for (size_t i = 0; i < n; i++)
		v[i] = (struct rec){(int64_t)(next() % 50), (uint32_t)i};
	memcpy(w, v, n * sizeof(*v));
	sort_recs_intro(v, n, 0);
	qsort(w, n, sizeof(*w), cmp_rec);
	assert_same(v, w, n);
	free(v);
	free(w);
}

/* shape as in shape_key: after sort_recs_nth(v, n, k), v[k] is the sorted
 * order's k-th, nothing after it is less and nothing before it greater. */
static void check_nth(size_t n, int shape, size_t k)
{
	struct rec *v = malloc(n * sizeof(*v)), *w = malloc(n * sizeof(*w));
	assert_non_null(v);
	assert_non_null(w);
	for (size_t i = 0; i < n; i++)
		v[i] = (struct rec){shape_key(shape, i, 1000), (uint32_t)i};
	memcpy(w, v, n * sizeof(*v));
	qsort(w, n, sizeof(*w), cmp_rec);
	sort_recs_nth(v, n, k);
	assert_int_equal(v[k].key, w[k].key);
	assert_int_equal(v[k].id, w[k].id);
	for (size_t i = 0; i < n; i++)
		assert_true(i < k ? !rec_less(&v[k], &v[i]) : i == k || !rec_less(&v[i], &v[k]));
	free(v);
	free(w);
}

static void test_nth(void **state)
{
	(void)state;
	static const size_t sizes[] = {1, 2, 16, 17, 100, 5000, 100000};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		for (int shape = 0; shape < 6; shape++) {
			size_t n = sizes[s];
			check_nth(n, shape, 0);
			check_nth(n, shape, n - 1);
			check_nth(n, shape, n / 2);
			check_nth(n, shape, (size_t)(next() % n));
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_same_order_as_qsort),
	    cmocka_unit_test(test_heapsort_fallback),
	    cmocka_unit_test(test_nth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* An in-place sort for the per-event arrays, which run to millions of
 * elements: glibc's qsort merges through a buffer as large as the array
 * (or, for elements over 32 bytes, an array of pointers), which set the
 * peak memory of a large trace's analysis; and its comparator is a call per
 * comparison. AN_SORT_DEFINE(name, type, less) defines
 *
 *     static void name(type *v, size_t n)
 *
 * an introsort (quicksort, median of three; heapsort past 2 log2 n levels;
 * insertion sort below 16 elements) by less(const type *x, const type *y),
 * a macro or inline function. An array already in order (a trace written
 * in time order often gives one) is left after one pass over it. It is not
 * stable: use it only where less is a total order, or where the order of
 * equal elements cannot show. It also defines
 *
 *     static void name_nth(type *v, size_t n, size_t k)
 *
 * which puts the k-th smallest element at v[k] (quickselect, sorting what
 * is left past 2 log2 n rounds): percentiles without a whole sort. */
#ifndef STROBE_TOOLS_SORT_H
#define STROBE_TOOLS_SORT_H

#include <stddef.h>

#define AN_SORT_DEFINE(name, type, less)                                                                     \
	static void name##_sift(type *v, size_t root, size_t n)                                              \
	{                                                                                                    \
		for (;;) {                                                                                   \
			size_t c = 2 * root + 1;                                                             \
			if (c >= n)                                                                          \
				return;                                                                      \
			if (c + 1 < n && less(&v[c], &v[c + 1]))                                             \
				c++;                                                                         \
			if (!less(&v[root], &v[c]))                                                          \
				return;                                                                      \
			type t_ = v[root];                                                                   \
			v[root] = v[c];                                                                      \
			v[c] = t_;                                                                           \
			root = c;                                                                            \
		}                                                                                            \
	}                                                                                                    \
	/* Partitions v[0, n) (n > 2) about the median of three: returns left,                               \
	 * with nothing in v[0, left) greater than anything in v[left, n). */                                \
	static size_t name##_part(type *v, size_t n)                                                         \
	{                                                                                                    \
		size_t m = n / 2;                                                                            \
		type t_;                                                                                     \
		if (less(&v[m], &v[0]))                                                                      \
			t_ = v[m], v[m] = v[0], v[0] = t_;                                                   \
		if (less(&v[n - 1], &v[m])) {                                                                \
			t_ = v[m], v[m] = v[n - 1], v[n - 1] = t_;                                           \
			if (less(&v[m], &v[0]))                                                              \
				t_ = v[m], v[m] = v[0], v[0] = t_;                                           \
		}                                                                                            \
		const type p_ = v[m];                                                                        \
		size_t i = 0, j = n - 1;                                                                     \
		for (;;) { /* Hoare's partition: v[0, j] <= p_ <= v[j + 1, n) */                             \
			while (less(&v[i], &p_))                                                             \
				i++;                                                                         \
			while (less(&p_, &v[j]))                                                             \
				j--;                                                                         \
			if (i >= j)                                                                          \
				break;                                                                       \
			t_ = v[i], v[i] = v[j], v[j] = t_;                                                   \
			i++;                                                                                 \
			j--;                                                                                 \
		}                                                                                            \
		return j + 1;                                                                                \
	}                                                                                                    \
	static void name##_intro(type *v, size_t n, unsigned depth)                                          \
	{                                                                                                    \
		while (n > 16) {                                                                             \
			if (!depth--) {                                                                      \
				for (size_t i = n / 2; i-- > 0;)                                             \
					name##_sift(v, i, n);                                                \
				for (size_t i = n; i-- > 1;) {                                               \
					type t_ = v[0];                                                      \
					v[0] = v[i];                                                         \
					v[i] = t_;                                                           \
					name##_sift(v, 0, i);                                                \
				}                                                                            \
				return;                                                                      \
			}                                                                                    \
			size_t left = name##_part(v, n);                                                     \
			if (left < n - left) {                                                               \
				name##_intro(v, left, depth);                                                \
				v += left;                                                                   \
				n -= left;                                                                   \
			} else {                                                                             \
				name##_intro(v + left, n - left, depth);                                     \
				n = left;                                                                    \
			}                                                                                    \
		}                                                                                            \
		for (size_t i = 1; i < n; i++) {                                                             \
			type t_ = v[i];                                                                      \
			size_t k = i;                                                                        \
			for (; k > 0 && less(&t_, &v[k - 1]); k--)                                           \
				v[k] = v[k - 1];                                                             \
			v[k] = t_;                                                                           \
		}                                                                                            \
	}                                                                                                    \
	static inline unsigned name##_depth(size_t n)                                                        \
	{                                                                                                    \
		unsigned depth = 0;                                                                          \
		for (size_t k = n; k > 1; k >>= 1)                                                           \
			depth += 2;                                                                          \
		return depth;                                                                                \
	}                                                                                                    \
	/* Puts the k-th smallest of v[0, n) (k < n) at v[k], nothing greater                                \
	 * before it and nothing less after it. */                                                           \
	__attribute__((unused)) static inline void name##_nth(type *v, size_t n, size_t k)                   \
	{                                                                                                    \
		unsigned depth = name##_depth(n);                                                            \
		while (n > 16 && depth--) {                                                                  \
			size_t left = name##_part(v, n);                                                     \
			if (k < left) {                                                                      \
				n = left;                                                                    \
			} else {                                                                             \
				v += left;                                                                   \
				n -= left;                                                                   \
				k -= left;                                                                   \
			}                                                                                    \
		}                                                                                            \
		name##_intro(v, n, name##_depth(n));                                                         \
	}                                                                                                    \
	__attribute__((unused)) static inline void name(type *v, size_t n)                                   \
	{                                                                                                    \
		size_t s_ = 1;                                                                               \
		while (s_ < n && !less(&v[s_], &v[s_ - 1]))                                                  \
			s_++;                                                                                \
		if (s_ < n)                                                                                  \
			name##_intro(v, n, name##_depth(n));                                                 \
	}

#endif

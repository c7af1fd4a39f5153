/* The compact store of a sealed trace: every field of every activity comes
 * back exactly (extreme values, wide types, flows, categories, own args,
 * records far apart), in any order of access, and a sealed trace writes the
 * same JSON as the array it was built from while holding a fraction of its
 * memory. */
#include "testutil.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/process.h"
#include "process/store.h"
#include "process/trace.h"
#include "strobe/strobe.h"

static void assert_same(const struct strobe_activity *x, const struct strobe_activity *y)
{
	assert_int_equal(y->size, sizeof(*y));
	assert_int_equal(x->type, y->type);
	assert_int_equal(x->flags, y->flags);
	assert_ptr_equal(x->name, y->name);
	assert_int_equal(x->start_ns, y->start_ns);
	assert_int_equal(x->end_ns, y->end_ns);
	assert_int_equal(x->device, y->device);
	assert_int_equal(x->resource, y->resource);
	assert_int_equal(x->id, y->id);
	assert_int_equal(x->linked_id, y->linked_id);
	assert_int_equal(x->flow_id, y->flow_id);
	assert_int_equal(x->flow_kind, y->flow_kind);
	assert_ptr_equal(x->args, y->args);
	assert_int_equal(x->arg_count, y->arg_count);
	assert_ptr_equal(x->category, y->category);
}

/* Heap bytes in use, as glibc's mallinfo2 counts them; 0 where they are not
 * reported (sanitizers' allocators). */
static size_t heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();
	return m.uordblks + m.hblkhd;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A value that is often small, sometimes extreme. */
static int64_t any(void)
{
	static const int64_t edge[] = {0,        1, -1, INT64_MIN, INT64_MAX, INT32_MAX, -(int64_t)INT32_MAX,
	                               1ll << 40};
	uint64_t r = next();
	if (r % 4 == 0)
		return edge[(r >> 8) % (sizeof(edge) / sizeof(edge[0]))];
	return (int64_t)(next() % 100000) - 50000;
}

static void test_every_field_round_trips(void **state)
{
	(void)state;
	enum { N = 3 * STRB_STORE_BLOCK + 17 };
	static struct strobe_activity acts[N];
	static const void *recs[N];
	static const char *names[] = {"aten::mm", "cudaLaunchKernel", "", NULL, "k"};
	static char near_recs[64], far_recs[64];
	static const struct strobe_arg arg = {.key = "x", .kind = STROBE_ARG_I64, .value.i64 = 3};
	for (size_t i = 0; i < N; i++) {
		struct strobe_activity *a = &acts[i];
		*a = (struct strobe_activity){.size = sizeof(*a)};
		uint64_t r = next();
		/* Types past the 6 bits the head holds, and every flow kind. */
		a->type = (enum strobe_activity_type)(r % 5 == 0 ? 48 + r % 3 : r % 70);
		a->flags = r % 3 == 0 ? (uint32_t)(next() >> 20) : 0;
		a->name = names[next() % 5];
		a->start_ns = i % 7 == 0 ? any() : 1700000000000000000ll + (int64_t)(next() % 1000000000);
		a->end_ns =
		    next() % 4 == 0 ? a->start_ns : (int64_t)((uint64_t)a->start_ns + (uint64_t)any());
		a->device = any();
		a->resource = any();
		a->id = next() % 3 ? (uint64_t)any() : 0;
		a->linked_id = next() % 3 ? (uint64_t)any() : 0;
		switch (next() % 4) {
		case 0:
			break;
		case 1:
			a->flow_id = a->id;
			a->flow_kind = STROBE_FLOW_ASYNC_CPU_GPU;
			break;
		case 2:
			a->flow_id = (uint64_t)any();
			a->flow_kind = STROBE_FLOW_FWDBWD;
			break;
		default:
			a->flow_kind = (enum strobe_flow_kind)7; /* kind without id */
			break;
		}
		a->category = next() % 5 == 0 ? "nvtx domain" : NULL;
		if (next() % 6 == 0) {
			a->args = &arg;
			a->arg_count = 1;
		}
		/* Records close together and far apart in one block. */
		uint64_t k = next() % 4;
		recs[i] = k == 0   ? NULL
		          : k == 1 ? &near_recs[i % 64]
		          : k == 2 ? &far_recs[i % 64]
		                   : (const void *)&arg;
	}
	struct strb_store *s = NULL;
	assert_int_equal(strb_store_build(&s, acts, recs, N, NULL), 0);
	assert_int_equal(s->count, N);
	/* Backwards, so nothing depends on the activity before. */
	for (size_t i = N; i-- > 0;) {
		struct strobe_activity got;
		const void *rec = (const void *)1;
		strb_store_get(s, i, &got, &rec);
		assert_same(&acts[i], &got);
		assert_ptr_equal(rec, recs[i]);
	}
	assert_true(strb_store_bytes(s) < N * sizeof(struct strobe_activity) / 2);
	strb_store_free(s);

	/* Without records, and empty. */
	assert_int_equal(strb_store_build(&s, acts, NULL, 5, NULL), 0);
	struct strobe_activity got;
	const void *rec;
	strb_store_get(s, 4, &got, &rec);
	assert_same(&acts[4], &got);
	assert_null(rec);
	strb_store_free(s);
	assert_int_equal(strb_store_build(&s, acts, NULL, 0, NULL), 0);
	assert_int_equal(s->count, 0);
	strb_store_free(s);
}

struct walk {
	size_t n;
	const struct strobe_activity *first;
};

static int walk_cb(const struct strobe_activity *a, void *arg)
{
	struct walk *w = arg;
	if (!w->n)
		w->first = a;
	/* In order: launch, kernel, launch, ... with ids 1, 1, 2, 2, ... */
	assert_int_equal(a->type,
	                 w->n % 2 ? STROBE_ACTIVITY_CONCURRENT_KERNEL : STROBE_ACTIVITY_CUDA_RUNTIME);
	assert_int_equal(a->id, w->n / 2 + 1);
	assert_int_equal(a->size, sizeof(*a));
	w->n++;
	return 0;
}

/* A trace of GPU-like pairs: sealed, it writes byte-identical JSON and its
 * activities take a few bytes each. */
static void test_sealed_trace_writes_the_same(void **state)
{
	(void)state;
	enum { PAIRS = 20000 };
	struct strobe_trace *t = strb_trace_new();
	assert_non_null(t);
	t->pid = 4242;
	t->start_ns = 1700000000000000000ll;
	t->end_ns = t->start_ns + 10 * PAIRS * 1000ll;
	const char *launch = strb_trace_intern(t, "cudaLaunchKernel", 16);
	const char *kernel = strb_trace_intern(t, "gemm", 4);
	for (int i = 0; i < PAIRS; i++) {
		int64_t at = t->start_ns + i * 5000ll;
		struct strobe_activity *a = strb_trace_push(t);
		*a = (struct strobe_activity){.size = sizeof(*a),
		                              .type = STROBE_ACTIVITY_CUDA_RUNTIME,
		                              .name = launch,
		                              .start_ns = at,
		                              .end_ns = at + 1200,
		                              .device = t->pid,
		                              .resource = 77,
		                              .id = (uint64_t)i + 1,
		                              .linked_id = (uint64_t)i / 4 + 1,
		                              .flow_id = (uint64_t)i + 1,
		                              .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU,
		                              .flags = STROBE_ACTIVITY_FLOW_START};
		a = strb_trace_push(t);
		*a = (struct strobe_activity){.size = sizeof(*a),
		                              .type = STROBE_ACTIVITY_CONCURRENT_KERNEL,
		                              .name = kernel,
		                              .start_ns = at + 3000,
		                              .end_ns = at + 4500,
		                              .device = 0,
		                              .resource = 7 + i % 4,
		                              .id = (uint64_t)i + 1,
		                              .linked_id = (uint64_t)i / 4 + 1,
		                              .flow_id = (uint64_t)i + 1,
		                              .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU};
	}
	/* One file name: the trace names its file in its metadata. */
	char path[1200], pf[1200];
	snprintf(path, sizeof(path), "%s/store.json", tu_dir);
	snprintf(pf, sizeof(pf), "%s/store.pftrace", tu_dir);
	assert_int_equal(strobe_trace_save(t, path), 0);
	assert_int_equal(strobe_trace_save(t, pf), 0);
	size_t nb, na, npb, npa;
	char *b = tu_read_file(path, &nb), *pb = tu_read_file(pf, &npb);
	assert_non_null(b);
	assert_non_null(pb);
	size_t array_bytes = strb_trace_activity_bytes(t);
	assert_int_equal(strb_trace_seal(t), 0);
	assert_null(t->acts);
	assert_null(strb_trace_push(t)); /* sealed: read-only */
	size_t sealed_bytes = strb_trace_activity_bytes(t);
	print_message("activities: %zu bytes as an array, %zu sealed (%.1f per pair)\n", array_bytes,
	              sealed_bytes, (double)sealed_bytes / PAIRS);
	assert_true(sealed_bytes * 10 < array_bytes);
	assert_int_equal(strobe_trace_save(t, path), 0);
	char *a = tu_read_file(path, &na);
	assert_non_null(a);
	size_t at = 0;
	while (at < nb && at < na && a[at] == b[at])
		at++;
	if (at < nb || at < na)
		fail_msg("sealed JSON differs at byte %zu: before \"%.80s\", after \"%.80s\"", at,
		         b + (at > 40 ? at - 40 : 0), a + (at > 40 ? at - 40 : 0));
	free(b);
	free(a);
	assert_int_equal(strobe_trace_save(t, pf), 0);
	char *pa = tu_read_file(pf, &npa);
	assert_non_null(pa);
	assert_int_equal(npa, npb);
	assert_memory_equal(pa, pb, npb);
	free(pa);
	free(pb);

	/* strobe_trace_foreach sees every activity, in order, and a second
	 * walk the same activities at the same addresses (valid until the
	 * trace is destroyed). */
	assert_int_equal(strobe_trace_activity_count(t), 2 * PAIRS);
	struct walk w1 = {0}, w2 = {0};
	size_t heap = heap_in_use();
	assert_int_equal(strobe_trace_foreach(t, walk_cb, &w1), 0);
	/* The walk costs the public array, as docs/api.md says (112 bytes an
	 * activity), and nothing more is kept once it is built. */
	if (heap) {
		size_t walked = heap_in_use() - heap;
		print_message("first walk: %zu heap bytes for %d activities\n", walked, 2 * PAIRS);
		assert_true(walked <= 2 * PAIRS * sizeof(struct strobe_activity) + 8192);
	}
	assert_int_equal(strb_trace_activity_bytes(t),
	                 sealed_bytes + 2 * PAIRS * sizeof(struct strobe_activity));
	assert_int_equal(strobe_trace_foreach(t, walk_cb, &w2), 0);
	assert_int_equal(w1.n, 2 * PAIRS);
	assert_ptr_equal(w1.first, w2.first);
	assert_string_equal(w1.first->name, "cudaLaunchKernel");
	strobe_trace_destroy(t);
}

/* Args rendered from a record: none, for these tests. */
static size_t no_args(const void *ctx, const void *rec, const struct strobe_activity *a,
                      struct strb_arg_scratch *s)
{
	(void)ctx, (void)rec, (void)a, (void)s;
	return 0;
}

static struct strobe_trace *trace_with_records(void)
{
	struct strobe_trace *t = strb_trace_new();
	assert_non_null(t);
	struct strb_arg_source src = {no_args, NULL, NULL};
	assert_int_equal(strb_trace_set_arg_source(t, &src), 0);
	return t;
}

/* Activity i of the rolling tests: launches, kernels and a few ranges, with
 * records every third one. */
static void fill(struct strobe_activity *a, size_t i, const char *const *names)
{
	a->type = i % 3 == 0   ? STROBE_ACTIVITY_CUDA_RUNTIME
	          : i % 3 == 1 ? STROBE_ACTIVITY_CONCURRENT_KERNEL
	                       : (enum strobe_activity_type)(i % 11 == 0 ? 50 : STROBE_ACTIVITY_CPU_OP);
	a->name = names[i % 4];
	a->start_ns = 1700000000000000000ll + (int64_t)i * 1000;
	a->end_ns = a->start_ns + (int64_t)(i % 7) * 100;
	a->device = i % 3 == 1 ? 0 : 4242;
	a->resource = (int64_t)(i % 5);
	a->id = i / 3 + 1;
	a->linked_id = i % 2 ? i / 9 : 0;
}

static void push_one(struct strobe_trace *t, size_t i, const char *const *names, const char *recs)
{
	struct strobe_activity *a = strb_trace_push(t);
	assert_non_null(a);
	fill(a, i, names);
	if (i % 3 == 0)
		assert_int_equal(strb_trace_render_args(t, recs + i % 512), 0);
}

static void assert_same_trace(const struct strobe_trace *x, const struct strobe_trace *y)
{
	assert_int_equal(x->count, y->count);
	struct strb_act_ref rx, ry;
	for (size_t i = 0; i < x->count; i++) {
		strb_trace_get(x, i, &rx);
		strb_trace_get(y, i, &ry);
		assert_same(rx.a, ry.a);
		assert_ptr_equal(rx.rec, ry.rec);
		assert_int_equal(strb_trace_type(x, i), rx.a->type);
		assert_int_equal(strb_trace_type(y, i), ry.a->type);
	}
}

/* Two stores hold the same bytes, block by block, and the same tables. */
static void assert_same_store(const struct strb_store *a, const struct strb_store *b)
{
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->len, b->len);
	size_t nblocks = (a->count + STRB_STORE_BLOCK - 1) / STRB_STORE_BLOCK;
	for (size_t k = 0; k < nblocks; k++) {
		const struct strb_store_block *x = &a->blocks[k], *y = &b->blocks[k];
		assert_int_equal(x->len, y->len);
		assert_memory_equal(x->p, y->p, x->len);
		assert_int_equal(x->start, y->start);
		assert_int_equal(x->id, y->id);
		assert_int_equal(x->linked, y->linked);
		assert_memory_equal(x->rec, y->rec, sizeof(x->rec));
	}
	assert_int_equal(a->nnames, b->nnames);
	assert_memory_equal(a->names, b->names, a->nnames * sizeof(*a->names));
	assert_int_equal(a->nrows, b->nrows);
	assert_memory_equal(a->rows, b->rows, a->nrows * sizeof(*a->rows));
}

/* A rolling trace encodes its activities a window at a time while they are
 * pushed: it holds a window of them in the working form, reads back every
 * one meanwhile, and seals into the very store the whole array gives. */
static void test_rolling_trace_seals_the_same(void **state)
{
	(void)state;
	enum { N = 5 * STRB_TRACE_WINDOW + 3 * STRB_STORE_BLOCK + 41 };
	static char recs[512];
	struct strobe_trace *whole = trace_with_records(), *rolling = trace_with_records();
	const char *names[4];
	for (int k = 0; k < 4; k++) {
		char n[16];
		snprintf(n, sizeof(n), "name%d", k);
		/* One copy of each name, shared: names are compared as pointers. */
		names[k] = strb_trace_intern(whole, n, strlen(n));
	}
	/* The CPU part is done in the working form, then the trace rolls: its
	 * whole blocks are encoded at once, and the array keeps a window. */
	enum { CPU = 2 * STRB_TRACE_WINDOW + 300 };
	for (size_t i = 0; i < CPU; i++) {
		push_one(whole, i, names, recs);
		push_one(rolling, i, names, recs);
	}
	assert_true(rolling->cap > STRB_TRACE_WINDOW);
	strb_trace_roll(rolling);
	assert_int_equal(rolling->sealed, CPU / STRB_STORE_BLOCK * STRB_STORE_BLOCK);
	assert_int_equal(rolling->cap, STRB_TRACE_WINDOW);
	assert_same_trace(whole, rolling);
	for (size_t i = CPU; i < N; i++) {
		push_one(whole, i, names, recs);
		push_one(rolling, i, names, recs);
	}
	assert_int_equal(rolling->sealed % STRB_STORE_BLOCK, 0);
	assert_true(rolling->sealed >= N - STRB_TRACE_WINDOW);
	assert_true(rolling->cap <= STRB_TRACE_WINDOW);
	/* While it is built: every activity reads back, and the working form
	 * is a window, not the whole. */
	assert_same_trace(whole, rolling);
	size_t whole_bytes = strb_trace_activity_bytes(whole),
	       rolling_bytes = strb_trace_activity_bytes(rolling);
	print_message("while built: %zu bytes whole, %zu rolling\n", whole_bytes, rolling_bytes);
	assert_true(rolling_bytes * 4 < whole_bytes);

	assert_int_equal(strb_trace_seal(whole), 0);
	assert_int_equal(strb_trace_seal(rolling), 0);
	assert_null(rolling->acts);
	assert_int_equal(rolling->sealed, 0);
	assert_false(rolling->rolling);
	assert_null(strb_trace_push(rolling));
	assert_same_store(whole->store, rolling->store);
	assert_int_equal(strb_trace_activity_bytes(whole), strb_trace_activity_bytes(rolling));
	assert_same_trace(whole, rolling);
	strobe_trace_destroy(whole);
	strobe_trace_destroy(rolling);
}

/* A pass that changes encoded activities takes the trace back to its
 * working form, whole; it then seals as if it had never rolled. */
static void test_unrolled_trace_is_whole_again(void **state)
{
	(void)state;
	enum { N = 3 * STRB_TRACE_WINDOW + 77 };
	static char recs[512];
	struct strobe_trace *whole = trace_with_records(), *t = trace_with_records();
	const char *names[4] = {"a", "b", "c", "d"};
	strb_trace_roll(t);
	for (size_t i = 0; i < N; i++) {
		push_one(whole, i, names, recs);
		push_one(t, i, names, recs);
	}
	assert_true(t->sealed > 0);
	assert_int_equal(strb_trace_unroll(t), 0);
	assert_int_equal(t->sealed, 0);
	assert_null(t->rolled);
	assert_false(t->rolling);
	for (size_t i = 0; i < N; i++) {
		assert_same(&whole->acts[i], &t->acts[i]);
		assert_ptr_equal(whole->recs[i], t->recs[i]);
	}
	/* Changed in place, as the overlap pass does, and more pushed. */
	whole->acts[5].resource = t->acts[5].resource = 1ll << 41;
	for (size_t i = N; i < N + 300; i++) {
		push_one(whole, i, names, recs);
		push_one(t, i, names, recs);
	}
	assert_int_equal(t->sealed, 0); /* no longer rolling */
	assert_int_equal(strb_trace_seal(whole), 0);
	assert_int_equal(strb_trace_seal(t), 0);
	assert_same_store(whole->store, t->store);
	assert_same_trace(whole, t);
	/* Unrolling a trace that encoded nothing yet changes nothing. */
	struct strobe_trace *u = trace_with_records();
	strb_trace_roll(u);
	push_one(u, 0, names, recs);
	struct strobe_activity *first = u->acts;
	assert_int_equal(strb_trace_unroll(u), 0);
	assert_ptr_equal(u->acts, first);
	strobe_trace_destroy(u);
	strobe_trace_destroy(whole);
	strobe_trace_destroy(t);
}

/* A store is written into memory its trace already holds (here a block
 * handed to the arena, as walked vendor buffers are) while there is room,
 * and into its own small chunks after: it takes no large allocation of its
 * own. */
static void test_store_uses_the_trace_memory(void **state)
{
	(void)state;
	enum { N = 4 * STRB_TRACE_WINDOW };
	static char recs[512];
	const char *names[4] = {"a", "b", "c", "d"};
	struct strobe_trace *t = trace_with_records();
	size_t given = 256 << 10;
	char *mem = malloc(given);
	assert_non_null(mem);
	strb_arena_give(&t->arena, mem, given);
	strb_trace_roll(t);
	for (size_t i = 0; i < N; i++)
		push_one(t, i, names, recs);
	assert_int_equal(strb_trace_seal(t), 0);
	const struct strb_store *s = t->store;
	size_t nblocks = (s->count + STRB_STORE_BLOCK - 1) / STRB_STORE_BLOCK, inside = 0;
	for (size_t k = 0; k < nblocks; k++) {
		const uint8_t *p = s->blocks[k].p;
		inside += p >= (const uint8_t *)mem && p + s->blocks[k].len <= (const uint8_t *)mem + given;
	}
	/* The given block filled first, in order, then the store's own
	 * chunks of 1 MiB took the rest. */
	assert_true(s->blocks[0].p >= (const uint8_t *)mem && s->blocks[0].p < (const uint8_t *)mem + given);
	assert_true(inside > 0 && inside < nblocks);
	assert_true(s->len > given);
	assert_non_null(s->own.head);
	assert_int_equal(s->own.max_chunk, 1 << 20);
	print_message("%zu of %zu blocks in the given memory, %zu bytes in all\n", inside, nblocks, s->len);
	/* Every activity still reads back. */
	struct strobe_trace *whole = trace_with_records();
	for (size_t i = 0; i < N; i++)
		push_one(whole, i, names, recs);
	assert_same_trace(whole, t);
	strobe_trace_destroy(whole);
	strobe_trace_destroy(t);
}

/* Kernels on one row, one after another, or one of them overlapping the
 * one before (at index late) when late is set. */
static void push_kernels(struct strobe_trace *t, size_t n, size_t late, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		struct strobe_activity *a = strb_trace_push(t);
		assert_non_null(a);
		a->type = STROBE_ACTIVITY_CONCURRENT_KERNEL;
		a->name = name;
		a->start_ns = 1000000 + (int64_t)i * 100;
		a->end_ns = a->start_ns + (i + 1 == late ? 95 : 90);
		if (i == late)
			a->start_ns -= 20; /* starts before the one before ends */
		a->device = 0;
		a->resource = 7;
		a->id = i + 1;
	}
}

/* The overlap pass reads a rolled trace where it is, and takes it back to
 * its working form only when work has to move: a backend that does not
 * say its work is in order (no in_order range) costs no decode and
 * re-encode when nothing overlaps. */
static void test_overlap_pass_unrolls_only_to_move(void **state)
{
	(void)state;
	enum { N = 3 * STRB_TRACE_WINDOW };
	struct strobe_trace *t = strb_trace_new();
	assert_non_null(t);
	strb_trace_roll(t);
	push_kernels(t, N, SIZE_MAX, "k");
	size_t sealed = t->sealed;
	assert_true(sealed > 0);
	assert_int_equal(strb_process_overlap(t), 0);
	assert_int_equal(t->sealed, sealed); /* left encoded */
	assert_int_equal(t->stats.gpu_overlap_moved, 0);
	strobe_trace_destroy(t);

	t = strb_trace_new();
	assert_non_null(t);
	strb_trace_roll(t);
	push_kernels(t, N, N - 10, "k");
	assert_true(t->sealed > 0);
	assert_int_equal(strb_process_overlap(t), 0);
	assert_int_equal(t->sealed, 0); /* unrolled to move one */
	assert_int_equal(t->stats.gpu_overlap_moved, 1);
	assert_int_equal(t->acts[N - 10].resource, 7 + STRB_OVERLAP_LANE_STEP);
	assert_int_equal(t->acts[N - 11].resource, 7);
	assert_int_equal(t->acts[0].resource, 7);
	assert_int_equal(strb_trace_seal(t), 0);
	struct strb_act_ref r;
	strb_trace_get(t, N - 10, &r);
	assert_int_equal(r.a->resource, 7 + STRB_OVERLAP_LANE_STEP);
	strobe_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_field_round_trips),
	    cmocka_unit_test(test_sealed_trace_writes_the_same),
	    cmocka_unit_test(test_rolling_trace_seals_the_same),
	    cmocka_unit_test(test_unrolled_trace_is_whole_again),
	    cmocka_unit_test(test_store_uses_the_trace_memory),
	    cmocka_unit_test(test_overlap_pass_unrolls_only_to_move),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

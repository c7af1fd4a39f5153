/* A GPU trace read from several threads at once: its kernel, copy and call
 * args are rendered from the CUPTI records it keeps each time it is written,
 * and published as ordinary args the first time strobe_trace_foreach walks
 * it. Saves in JSON and Perfetto running meanwhile, on other threads, write
 * the same bytes as a save on its own, and every walker sees the same args.
 * STROBE_TEST_LABELS: concurrency
 */
#include "test_cupti_common.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define LAUNCH  CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
#define KERNELS 2000
#define ROUNDS  3

struct job {
	const strobe_trace *t;
	int id;
	int rc;
	size_t args_seen; /* foreach jobs: args of the kernels */
};

static void *save_job(void *arg)
{
	struct job *j = arg;
	char path[1200];
	for (int r = 0; r < ROUNDS && !j->rc; r++) {
		snprintf(path, sizeof(path), "%s/s%d-%d.%s", tu_dir, j->id, r,
		         j->id & 1 ? "pftrace" : "json");
		j->rc = strobe_trace_save(j->t, path);
	}
	return NULL;
}

static int count_args(const struct strobe_activity *a, void *arg)
{
	size_t *n = arg;
	if (a->type != STROBE_ACTIVITY_CONCURRENT_KERNEL)
		return 0;
	for (size_t i = 0; i < a->arg_count; i++)
		if (!strcmp(a->args[i].key, "grid") && strcmp(a->args[i].value.str, "[1, 1, 1]"))
			return -1; /* every kernel here has a 1x1x1 grid */
	*n += a->arg_count;
	return 0;
}

static void *walk_job(void *arg)
{
	struct job *j = arg;
	j->rc = strobe_trace_foreach(j->t, count_args, &j->args_seen);
	return NULL;
}

static strobe_trace *gpu_trace(void)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	uint64_t s = ct_stamp_after(0, 1000);
	for (uint32_t i = 0; i < KERNELS; i++) {
		uint64_t a0 = ct_stamp_after(s, 100), a1 = ct_stamp_after(a0, 100);
		uint32_t corr = fake_cupti_api(CUPTI_ACTIVITY_KIND_RUNTIME, LAUNCH, a0, a1);
		uint64_t k0 = ct_stamp_after(a1, 100);
		s = ct_stamp_after(k0, 100);
		CT_QUEUE(ct_kernel(corr, 0, 7 + (i & 1), k0, s, "k"));
	}
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_non_null(t);
	return t;
}

static char *read_all(const char *path, size_t *len)
{
	char *text = tu_read_file(path, len);
	if (!text)
		fail_msg("cannot read %s", path);
	return text;
}

/* a's bytes equal b's, up to `until` when given (the JSON ends with its
 * own path). */
static void same_bytes(const char *a, const char *b, const char *until)
{
	size_t la, lb;
	char *x = read_all(a, &la), *y = read_all(b, &lb);
	if (until) {
		char *ex = strstr(x, until), *ey = strstr(y, until);
		assert_non_null(ex);
		assert_non_null(ey);
		la = (size_t)(ex - x);
		lb = (size_t)(ey - y);
	}
	if (la != lb || memcmp(x, y, la))
		fail_msg("%s (%zu bytes) differs from %s (%zu bytes)", a, la, b, lb);
	free(x);
	free(y);
}

static void test_saves_and_walks_at_once(void **state)
{
	(void)state;
	strobe_trace *t = gpu_trace();
	/* Four saves (JSON and Perfetto, three each) and two walks at once;
	 * the walks publish the args while the saves render them. */
	pthread_t th[6];
	struct job jobs[6];
	for (int i = 0; i < 6; i++) {
		jobs[i] = (struct job){.t = t, .id = i};
		assert_int_equal(pthread_create(&th[i], NULL, i < 4 ? save_job : walk_job, &jobs[i]), 0);
	}
	for (int i = 0; i < 6; i++)
		assert_int_equal(pthread_join(th[i], NULL), 0);
	for (int i = 0; i < 6; i++)
		if (jobs[i].rc)
			fail_msg("job %d: %s: %s", i, strobe_status_string(jobs[i].rc), strobe_last_error());
	/* Both walks saw every kernel's args (grid, block, ...), alike. */
	assert_true(jobs[4].args_seen >= (size_t)KERNELS * 10);
	assert_int_equal(jobs[4].args_seen, jobs[5].args_seen);

	/* A save on its own now writes what each concurrent one wrote. */
	char ref_json[1200], ref_pf[1200], path[1200];
	snprintf(ref_json, sizeof(ref_json), "%s/ref.json", tu_dir);
	snprintf(ref_pf, sizeof(ref_pf), "%s/ref.pftrace", tu_dir);
	assert_int_equal(strobe_trace_save(t, ref_json), 0);
	assert_int_equal(strobe_trace_save(t, ref_pf), 0);
	for (int i = 0; i < 4; i++) {
		for (int r = 0; r < ROUNDS; r++) {
			snprintf(path, sizeof(path), "%s/s%d-%d.%s", tu_dir, i, r,
			         i & 1 ? "pftrace" : "json");
			if (i & 1)
				same_bytes(ref_pf, path, NULL);
			else
				same_bytes(ref_json, path, "\"traceName\"");
		}
	}
	strobe_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_saves_and_walks_at_once),
	};
	ct_use_fake();
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

/* Rank identity in every trace: the top-level "distributedInfo" object
 * (docs/output-format.md) from strobe_set_rank, the launchers' environment
 * variables, or the program's own "distributedInfo" metadata, read when
 * each trace is processed. */
#include "testutil.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strobe/plugin.h"
#include "strobe/strobe.h"

static const char *const launcher_vars[] = {
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NTASKS",
    "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK",
    "PMI_SIZE",
    "MPI_LOCALRANKID",
    "MV2_COMM_WORLD_RANK",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_SIZE",
    "PMIX_RANK",
    "CUDA_VISIBLE_DEVICES",
};

static char warnings[8192];

static void on_log(enum strobe_log_level level, const char *message, void *user_arg)
{
	(void)user_arg;
	if (level == STROBE_LOG_WARNING && strlen(warnings) + strlen(message) + 2 < sizeof(warnings)) {
		strcat(warnings, message);
		strcat(warnings, "\n");
	}
}

/* A clean slate: no launcher variables, no rank from the API, no user key. */
static int setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(launcher_vars[0]); i++)
		unsetenv(launcher_vars[i]);
	assert_int_equal(strobe_set_rank(-1, -1, -1), 0);
	strobe_metadata_remove("distributedInfo");
	warnings[0] = 0;
	return 0;
}

static int group_setup(void **state)
{
	int rc = tu_strobe_group_setup(state);
	strobe_log_set_level(STROBE_LOG_WARNING);
	return rc ? rc : strobe_log_add_observer(on_log, NULL);
}

static int group_teardown(void **state)
{
	strobe_log_remove_observer(on_log, NULL);
	return tu_strobe_group_teardown(state);
}

/* Sets NAME, VALUE pairs; the list ends with NULL. */
static void set_vars(const char *const *kv)
{
	for (; *kv; kv += 2)
		setenv(kv[0], kv[1], 1);
}

static void set_torchrun(const char *rank, const char *local, const char *world)
{
	set_vars((const char *const[]){"RANK", rank, "LOCAL_RANK", local, "WORLD_SIZE", world, NULL});
}

/* Records one range, saves the trace and parses it back. */
static yajl_val trace(const char *name)
{
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_range_push("work");
	strobe_range_pop();
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	char path[1200];
	snprintf(path, sizeof(path), "%s/%s.json", tu_dir, name);
	int rc = strobe_trace_save(t, path);
	if (rc)
		fail_msg("saving %s: %s", path, strobe_last_error());
	strobe_trace_destroy(t);
	return tu_load_trace(path);
}

static yajl_val dist(yajl_val root)
{
	yajl_val d = tu_get(root, "distributedInfo");
	if (!d || !YAJL_IS_OBJECT(d))
		fail_msg("the trace has no top-level distributedInfo object");
	return d;
}

static void assert_identity(yajl_val root, long long rank, long long local, long long world,
                            const char *source)
{
	yajl_val d = dist(root);
	struct {
		const char *key;
		long long want;
	} v[] = {{"rank", rank}, {"local_rank", local}, {"world_size", world}};
	for (size_t i = 0; i < 3; i++) {
		yajl_val x = tu_get(d, v[i].key);
		if (v[i].want < 0) {
			if (x)
				fail_msg("distributedInfo.%s is present; expected it absent", v[i].key);
			continue;
		}
		if (!x || !YAJL_IS_INTEGER(x))
			fail_msg("distributedInfo.%s is missing or not an integer", v[i].key);
		if (YAJL_GET_INTEGER(x) != v[i].want)
			fail_msg("distributedInfo.%s is %lld, expected %lld", v[i].key, YAJL_GET_INTEGER(x),
			         v[i].want);
	}
	if (source)
		assert_string_equal(tu_get_str(d, "rank_source"), source);
	else
		assert_null(tu_get(d, "rank_source"));
}

static void test_no_rank_still_names_host(void **state)
{
	(void)state;
	yajl_val root = trace("none");
	assert_identity(root, -1, -1, -1, NULL);
	char host[256];
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	assert_string_equal(tu_get_str(dist(root), "host"), host);
	assert_string_equal(tu_get_str(root, "host_name"), host);
	assert_null(tu_get(dist(root), "gpu_uuids")); /* no GPU took part */
	assert_null(tu_get(dist(root), "cuda_visible_devices"));
	yajl_tree_free(root);
}

static void test_torchrun(void **state)
{
	(void)state;
	set_torchrun("3", "1", "8");
	yajl_val root = trace("torchrun");
	assert_identity(root, 3, 1, 8, "RANK");
	yajl_tree_free(root);
}

/* Each launcher alone, and the first one wins when several are set. */
static void test_launchers(void **state)
{
	(void)state;
	static const struct {
		const char *rank, *local, *world;
	} l[] = {
	    {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
	    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
	    {"PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
	    {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_SIZE"},
	};
	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++) {
		setup(NULL);
		char v[16];
		snprintf(v, sizeof(v), "%zu", 10 + i);
		setenv(l[i].rank, v, 1);
		setenv(l[i].local, "2", 1);
		setenv(l[i].world, "64", 1);
		yajl_val root = trace("launcher");
		assert_identity(root, 10 + (long long)i, 2, 64, l[i].rank);
		yajl_tree_free(root);
	}
	/* torchrun under Slurm: torchrun's RANK, and none of Slurm's values. */
	setup(NULL);
	set_vars((const char *const[]){"SLURM_PROCID", "1", "SLURM_LOCALID", "0", "SLURM_NTASKS", "2", "RANK",
	                               "5", NULL});
	yajl_val root = trace("both");
	assert_identity(root, 5, -1, -1, "RANK");
	yajl_tree_free(root);
}

static void test_malformed_env_ignored_with_warning(void **state)
{
	(void)state;
	set_vars((const char *const[]){"RANK", "three", "SLURM_PROCID", "2", "SLURM_LOCALID", "-1",
	                               "SLURM_NTASKS", "4x", NULL});
	yajl_val root = trace("malformed");
	assert_identity(root, 2, -1, -1, "SLURM_PROCID");
	yajl_tree_free(root);
	for (const char *const *v =
	         (const char *const[]){"RANK=\"three\"", "SLURM_LOCALID=\"-1\"", "SLURM_NTASKS=\"4x\"", NULL};
	     *v; v++)
		if (!strstr(warnings, *v))
			fail_msg("no warning naming %s; warnings:\n%s", *v, warnings);
	/* One warning per variable per trace. */
	const char *first = strstr(warnings, "RANK=\"three\"");
	assert_null(strstr(first + 1, "RANK=\"three\""));
}

static void test_api_beats_env(void **state)
{
	(void)state;
	set_torchrun("3", "1", "8");
	assert_int_equal(strobe_set_rank(5, -1, 16), 0);
	yajl_val root = trace("api");
	assert_identity(root, 5, 1, 16, "api"); /* the unknown local rank comes from the environment */
	yajl_tree_free(root);

	assert_int_equal(strobe_set_rank(-1, -1, -1), 0);
	root = trace("api_cleared");
	assert_identity(root, 3, 1, 8, "RANK");
	yajl_tree_free(root);

	unsetenv("RANK");
	unsetenv("LOCAL_RANK");
	unsetenv("WORLD_SIZE");
	assert_int_equal(strobe_set_rank(0, 0, 1), 0);
	root = trace("api_only");
	assert_identity(root, 0, 0, 1, "api");
	yajl_tree_free(root);
}

static void test_set_rank_rejects_bad_values(void **state)
{
	(void)state;
	assert_int_equal(strobe_set_rank(-2, 0, 4), -EINVAL);
	assert_int_equal(strobe_set_rank(0, -7, 4), -EINVAL);
	assert_int_equal(strobe_set_rank(0, 0, 0), -EINVAL);
	assert_int_equal(strobe_set_rank(4, 0, 4), -EINVAL);
	assert_non_null(strstr(strobe_last_error(), "not below world size 4"));
	/* A refused call changes nothing. */
	yajl_val root = trace("refused");
	assert_identity(root, -1, -1, -1, NULL);
	yajl_tree_free(root);
}

static void test_user_metadata_replaces(void **state)
{
	(void)state;
	setenv("RANK", "3", 1);
	assert_int_equal(strobe_metadata_set_json("distributedInfo",
	                                          "{\"backend\": \"nccl\", \"rank\": 7, \"world_size\": 8}"),
	                 0);
	yajl_val root = trace("user");
	yajl_val d = dist(root);
	assert_string_equal(tu_get_str(d, "backend"), "nccl");
	assert_true(tu_get_num(d, "rank") == 7);
	assert_null(tu_get(d, "rank_source")); /* the whole object is the program's */
	assert_null(tu_get(d, "host"));
	yajl_tree_free(root);
	assert_int_equal(strobe_metadata_remove("distributedInfo"), 0);
	root = trace("user_removed");
	assert_identity(root, 3, -1, -1, "RANK");
	yajl_tree_free(root);
}

static void test_cuda_visible_devices(void **state)
{
	(void)state;
	setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
	yajl_val root = trace("cvd");
	assert_string_equal(tu_get_str(dist(root), "cuda_visible_devices"), "2,3");
	yajl_tree_free(root);
	/* Bytes that are not UTF-8 are left out; the file stays valid JSON. */
	setenv("CUDA_VISIBLE_DEVICES", "\xff\xfe", 1);
	root = trace("cvd_bad");
	assert_null(tu_get(dist(root), "cuda_visible_devices"));
	assert_non_null(strstr(warnings, "cuda_visible_devices"));
	yajl_tree_free(root);
}

struct found {
	const char *json;
	int kind;
};

static int find_dist(const struct strobe_arg *e, void *arg)
{
	struct found *f = arg;
	if (strcmp(e->key, "distributedInfo"))
		return 0;
	f->kind = e->kind;
	f->json = e->value.str;
	return 1;
}

/* Other writers get it through the metadata walk. */
static void test_metadata_walk(void **state)
{
	(void)state;
	setenv("OMPI_COMM_WORLD_RANK", "6", 1);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	struct found f = {NULL, -1};
	assert_int_equal(strobe_trace_foreach_metadata(t, find_dist, &f), 1);
	assert_int_equal(f.kind, STROBE_ARG_JSON);
	yajl_val d = tu_parse_json(f.json);
	assert_non_null(d);
	assert_true(tu_get_num(d, "rank") == 6);
	assert_string_equal(tu_get_str(d, "rank_source"), "OMPI_COMM_WORLD_RANK");
	yajl_tree_free(d);
	strobe_trace_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_no_rank_still_names_host, setup),
	    cmocka_unit_test_setup(test_torchrun, setup),
	    cmocka_unit_test_setup(test_launchers, setup),
	    cmocka_unit_test_setup(test_malformed_env_ignored_with_warning, setup),
	    cmocka_unit_test_setup(test_api_beats_env, setup),
	    cmocka_unit_test_setup(test_set_rank_rejects_bad_values, setup),
	    cmocka_unit_test_setup(test_user_metadata_replaces, setup),
	    cmocka_unit_test_setup(test_cuda_visible_devices, setup),
	    cmocka_unit_test_setup(test_metadata_walk, setup),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

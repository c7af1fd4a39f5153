/* Tools that read the rank of a saved trace with a regular expression find
 * it: HTA (Holistic Trace Analysis) matches "rank":\s+(\d+), which needs
 * libkineto's layout, a space after the colon. Top-level JSON metadata is
 * written in that layout (": " after keys, ", " between members) whether
 * strobe built it or the program handed it over compact, and its strings are
 * left as they were. */
#include "testutil.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/strobe.h"

static char path[1200];

/* The environment holds rank 1 of 2, set before strobe_init starts the
 * library's thread: setenv and unsetenv are not safe while another
 * thread may read the environment (glibc frees the old array under a
 * getenv in progress). */
static int group_setup(void **state)
{
	static const char *const vars[] = {
	    "RANK",     "LOCAL_RANK",          "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
	    "PMI_RANK", "MV2_COMM_WORLD_RANK", "PMIX_RANK"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("RANK", "1", 1);
	setenv("WORLD_SIZE", "2", 1);
	return tu_strobe_group_setup(state);
}

static int setup(void **state)
{
	(void)state;
	strobe_metadata_remove("distributedInfo");
	strobe_metadata_remove("compact");
	return 0;
}

/* Saves an empty CPU trace (the metadata is all it needs); returns the
 * file's text. */
static char *saved_trace(const char *name)
{
	strobe_trace *t = NULL;
	if (strobe_prepare(STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP), NULL) || strobe_start() ||
	    strobe_stop(&t))
		fail_msg("recording: %s", strobe_last_error());
	snprintf(path, sizeof(path), "%s/%s.json", tu_dir, name);
	if (strobe_trace_save(t, path))
		fail_msg("saving %s: %s", path, strobe_last_error());
	strobe_trace_destroy(t);
	char *text = tu_read_file(path, NULL);
	assert_non_null(text);
	return text;
}

/* HTA's expression, in POSIX ERE: the first rank it finds, or -1. */
static long hta_rank(const char *text)
{
	regex_t re;
	assert_int_equal(regcomp(&re, "\"rank\":[[:space:]]+([0-9]+)", REG_EXTENDED), 0);
	regmatch_t m[2];
	long rank = -1;
	if (regexec(&re, text, 2, m, 0) == 0)
		rank = strtol(text + m[1].rm_so, NULL, 10);
	regfree(&re);
	return rank;
}

static void test_strobe_rank_found(void **state)
{
	(void)state;
	char *text = saved_trace("rank1"); /* RANK=1, WORLD_SIZE=2 (group_setup) */
	if (hta_rank(text) != 1)
		fail_msg("HTA's \"rank\":\\s+(\\d+) finds rank %ld in %s, expected 1", hta_rank(text), path);
	assert_non_null(strstr(text, "\"distributedInfo\": {\"rank\": 1, \"world_size\": 2, "));
	free(text);
	yajl_val root = tu_load_trace(path);
	assert_true(tu_get_num(tu_get(root, "distributedInfo"), "world_size") == 2);
	yajl_tree_free(root);
}

/* The program's own compact object gets the same layout, and wins over
 * the environment's rank; separators inside its strings stay as they
 * were. */
static void test_program_json_spaced(void **state)
{
	(void)state;
	assert_int_equal(strobe_metadata_set_json(
	                     "distributedInfo", "{\"backend\":\"nccl\",\"rank\":7,\"pg\":\"a:b,c\\\",d:\"}"),
	                 0);
	assert_int_equal(strobe_metadata_set_json("compact", "[1,{\"k\":[2,3]},\"x,y:z\"]"), 0);
	char *text = saved_trace("program");
	assert_int_equal(hta_rank(text), 7);
	assert_non_null(strstr(text, "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 7, "
	                             "\"pg\": \"a:b,c\\\",d:\"}"));
	assert_non_null(strstr(text, "\"compact\": [1, {\"k\": [2, 3]}, \"x,y:z\"]"));
	free(text);
	yajl_val root = tu_load_trace(path);
	assert_string_equal(tu_get_str(tu_get(root, "distributedInfo"), "pg"), "a:b,c\",d:");
	yajl_tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_strobe_rank_found, setup),
	    cmocka_unit_test_setup(test_program_json_spaced, setup),
	};
	return cmocka_run_group_tests(tests, group_setup, tu_strobe_group_teardown);
}

/* Reading a command's --json output in the analysis commands' tests. */
#ifndef STROBE_TEST_CLI_JSON_COMMON_H
#define STROBE_TEST_CLI_JSON_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

/* strobe COMMAND ARGS, which must succeed and print one JSON value. */
static inline yajl_val cli_json(const char *command, const char *args)
{
	char *out = NULL;
	assert_int_equal(tu_strobe(command, args, 0, &out), 0);
	yajl_val v = tu_parse_json(out);
	if (!v)
		fail_msg("--json output does not parse:\n%s", out);
	free(out);
	return v;
}

static inline yajl_val at(yajl_val arr, size_t i)
{
	assert_non_null(arr);
	assert_true(YAJL_IS_ARRAY(arr));
	assert_true(i < arr->u.array.len);
	return arr->u.array.values[i];
}

/* Member key of obj, which must be a number. */
static inline long long num(yajl_val obj, const char *key)
{
	yajl_val v = tu_get(obj, key);
	if (!v || !YAJL_IS_NUMBER(v))
		fail_msg("%s is not a number", key);
	return (long long)tu_get_num(obj, key);
}

#endif

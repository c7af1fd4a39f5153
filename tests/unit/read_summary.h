/* For the read layer's tests (test_read_*.c): what `strobe summary` says
 * of an input, in its text and its --json accounting. */
#ifndef STROBE_TEST_READ_SUMMARY_H
#define STROBE_TEST_READ_SUMMARY_H

#include "testutil.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A count the summary must show: the text line that holds what ends in n,
 * and its --json "accounting" has key: n. */
struct rs_count {
	const char *what, *key;
	uint64_t n;
};

/* Writes len bytes of data to a fresh file called name, runs strobe
 * summary on it, as text and with --json, and checks each count. Returns
 * the text output (the caller frees it). */
static inline char *rs_summary(const void *data, size_t len, const char *name, const struct rs_count *want,
                               size_t nwant)
{
	char *dir = tu_mkdtemp();
	char path[1100], args[1200], num[32];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);

	char *text = NULL, *json = NULL;
	snprintf(args, sizeof(args), "'%s'", path);
	assert_int_equal(tu_strobe("summary", args, 1, &text), 0);
	snprintf(args, sizeof(args), "--json '%s'", path);
	assert_int_equal(tu_strobe("summary", args, 0, &json), 0);
	yajl_val root = tu_parse_json(json);
	assert_non_null(root);
	yajl_val acct = tu_get(root, "accounting");
	for (size_t i = 0; i < nwant; i++) {
		char *line = tu_line_with(text, want[i].what);
		snprintf(num, sizeof(num), " %" PRIu64, want[i].n);
		size_t ll = strlen(line), nl = strlen(num);
		if (ll < nl || strcmp(line + ll - nl, num))
			fail_msg("summary says \"%s\", not %" PRIu64, line, want[i].n);
		free(line);
		assert_true(tu_get_num(acct, want[i].key) == (double)want[i].n);
	}
	yajl_tree_free(root);
	free(json);
	tu_rmrf(dir);
	return text;
}

#endif

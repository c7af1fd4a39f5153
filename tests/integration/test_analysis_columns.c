/* One column spec per table (tools/analysis/columns.h), three
 * presentations: for a trace that fills every table, each column of each
 * spec shows in strobe summary's text (its header, or its line under the
 * row), as a key of every row in strobe summary --json, and as a header
 * cell of the table in strobe report's HTML, with the first row's value in
 * the text and the HTML. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/columns.h"
#include "testutil.h"

#define X(cat, name, pid, tid, ts, dur, args)                                                                \
	"{\"ph\": \"X\", \"cat\": \"" cat "\", \"name\": \"" name "\", \"pid\": " #pid ", \"tid\": " #tid    \
	", \"ts\": " #ts ", \"dur\": " #dur ", \"args\": {" args "}},\n"

/* Rank 0: host pid 1000, GPU pid 1001 with a compute (7), an NCCL (8) and
 * a copy stream (9), all three launched inside aten::mm (a kernel sequence);
 * an idle gap 35-50 µs; a step; an instant, a counter,
 * a GPU memory level and the accounting object. */
static const char trace[] = "{\"strobe\": {\"dropped_events\": 1, \"threads\": 2}, \"traceEvents\": [\n" X(
    "cpu_op", "aten::mm", 1000, 1000, 0, 40, "") X("user_annotation", "ProfilerStep#1", 1000, 1000, 0, 60, "")
    X("cuda_runtime", "cudaLaunchKernel", 1000, 1000, 10, 2,
      "\"correlation\": 1") X("cuda_runtime", "cudaLaunchKernel", 1000, 1000, 12, 2, "\"correlation\": 2")
        X("cuda_runtime", "cudaMemcpyAsync", 1000, 1000, 14, 2, "\"correlation\": 3")
            X("kernel", "gemm", 1001, 7, 15, 10, "\"correlation\": 1")
                X("kernel", "ncclDevKernel_AllReduce", 1001, 8, 20, 10, "\"correlation\": 2")
                    X("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 1001, 9, 30, 5,
                      "\"bytes\": 1000, \"memory bandwidth (GB/s)\": 0.2, \"correlation\": 3")
                        X("kernel", "gemm", 1001, 7, 50, 10,
                          "") "{\"ph\": \"C\", \"cat\": \"hardware_counters\", \"name\": \"GPU memory "
                              "allocated (bytes)\", \"pid\": 1001, \"tid\": 0, \"ts\": 11, \"args\": {\"GPU "
                              "memory allocated (bytes)\": 4096}},\n"
                              "{\"ph\": \"C\", \"cat\": \"cpu_counter\", \"name\": \"mem\", \"pid\": 1000, "
                              "\"tid\": 1000, \"ts\": 5,"
                              " \"args\": {\"bytes\": 10}},\n"
                              "{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"cpu_instant_event\", \"name\": "
                              "\"marker\", \"pid\": 1000,"
                              " \"tid\": 1000, \"ts\": 7},\n"
                              "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1000, \"tid\": 0,"
                              " \"args\": {\"name\": \"rank 0 · hostA · pid 1\"}},\n"
                              "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1001, \"tid\": 0,"
                              " \"args\": {\"name\": \"rank 0 · hostA · GPU 0\"}}\n"
                              "]}\n";

struct outputs {
	struct an_trace a;
	struct tr_stats st;
	struct an_view v;
	char *text, *html;
	yajl_val json;
};

/* s as the page writes text: & < > " ' as entities. */
static char *html_escaped(const char *s)
{
	static const char special[] = "&<>\"'";
	static const char *const entity[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
	char *out = malloc(strlen(s) * 6 + 1), *o = out;
	assert_non_null(out);
	for (; *s; s++) {
		const char *k = strchr(special, *s);
		if (k)
			o = stpcpy(o, entity[k - special]);
		else
			*o++ = *s;
	}
	*o = 0;
	return out;
}

/* The element of html that starts <table id="ID"> up to its </table>. */
static char *html_table(const char *html, const char *id)
{
	char open[128];
	snprintf(open, sizeof(open), "<table id=\"%s\">", id);
	const char *s = strstr(html, open);
	if (!s)
		fail_msg("the report has no %s", open);
	return strndup(s, (size_t)(strstr(s, "</table>") - s));
}

/* A line of text that holds every needle, in order. */
static void assert_line_with_all(const char *text, const char *const *needles, size_t n, const char *table)
{
	for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
		const char *end = strchr(line, '\n'), *at = line;
		size_t k = 0;
		for (; k < n && (at = strstr(at, needles[k])) && at < end; k++)
			at += strlen(needles[k]);
		if (k == n)
			return;
	}
	fail_msg("no line of the text shows the columns of %s in order (first: '%s')", table, needles[0]);
}

/* The JSON rows of table t: a list, or the object of a sub table. */
static yajl_val json_rows(const struct outputs *o, const struct an_spec *t)
{
	if (t == &an_names)
		return tu_get(tu_get(o->json, "categories")->u.array.values[0], "top_by_total");
	return tu_get(o->json, t->key);
}

/* A JSON member by a column key "a" or "a.b". */
static yajl_val json_member(yajl_val row, const char *key)
{
	const char *dot = strchr(key, '.');
	if (!dot)
		return tu_get(row, key);
	char group[64];
	snprintf(group, sizeof(group), "%.*s", (int)(dot - key), key);
	return tu_get(tu_get(row, group), dot + 1);
}

static void check_json(yajl_val rows, const struct an_spec *t)
{
	assert_non_null(rows);
	size_t n = YAJL_IS_ARRAY(rows) ? rows->u.array.len : 1;
	if (!n)
		fail_msg("--json has no rows of %s", t->key);
	for (size_t r = 0; r < n; r++) {
		yajl_val row = YAJL_IS_ARRAY(rows) ? rows->u.array.values[r] : rows;
		for (size_t i = 0; i < t->ncols; i++) {
			yajl_val m = json_member(row, t->cols[i].key);
			if (!m)
				fail_msg("--json row %zu of %s has no \"%s\"", r, t->key, t->cols[i].key);
			if (t->cols[i].unit == AN_ROWS && !YAJL_IS_NULL(m))
				check_json(m, t->cols[i].sub);
		}
	}
}

/* The columns of t: JSON keys, text header (or lines), HTML header cells
 * and the first row's cells. */
static void check_table(const struct outputs *o, const struct an_spec *t, struct an_rows rows)
{
	const struct an_view *v = &o->v;
	const struct an_trace *a = &o->a;
	assert_true(rows.n > 0);
	const void *first = rows.base;
	char buf[TR_NAME_MAX + 600], *table = html_table(o->html, t == &an_names ? "names-0" : t->id);
	char *heads[16];
	size_t nheads = 0;
	for (size_t i = 0; i < t->ncols; i++) {
		const struct an_column *c = &t->cols[i];
		if (an_cell_shown(v, t, c, true)) /* with an AN_PAREN column's head after it */
			heads[nheads++] = strdup(i == 0 && t == &an_names ? "names by total time"
			                                                  : an_cell(a, t, i, NULL, buf, 64));
		if (c->flags & AN_LINE && c->unit != AN_ROWS) {
			snprintf(buf, sizeof(buf), "%s ", c->head);
			tu_assert_line(o->text, buf, an_cell(a, t, i, first, buf, sizeof(buf)));
		}
		if (c->unit == AN_RANK && t->flags & AN_T_RANKED)
			tu_assert_contains(o->text, "  rank 0:\n");
		struct an_value val;
		an_get(a, c, first, &val);
		if (c->unit == AN_ROWS && val.rows.n) {
			/* the first line with the phrase from the table's title on */
			const char *from = t->title ? strstr(o->text, t->title) : NULL;
			char *line = tu_line_with(from ? from : o->text,
			                          an_phrase(a, c->sub, val.rows.base, buf, sizeof(buf)));
			if (*c->head)
				tu_assert_contains(line, c->head);
			free(line);
		}
		if (c->flags & AN_JSON) { /* JSON only: no header in text or HTML */
			snprintf(buf, sizeof(buf), ">%s</th>", c->head);
			assert_null(strstr(table, buf));
			continue;
		}
		if (c->flags & AN_PAREN)
			continue;
		/* HTML: the header cell, and the cell of the first row. */
		if (c->unit == AN_ROWS && c->sub->flags & AN_T_ONE) {
			char *sub = html_table(o->html, c->sub->id);
			for (size_t k = 0; k < c->sub->ncols; k++) {
				snprintf(buf, sizeof(buf), ">%s</th>", c->sub->cols[k].head);
				tu_assert_contains(sub, buf);
				char *e =
				    html_escaped(an_cell(a, c->sub, k, val.rows.base, buf, sizeof(buf)));
				tu_assert_contains(sub, e);
				free(e);
			}
			free(sub);
			continue;
		}
		char *h = html_escaped(an_cell(a, t, i, NULL, buf, sizeof(buf)));
		snprintf(buf, sizeof(buf), ">%s</th>", h);
		free(h);
		tu_assert_contains(table, buf);
		if (c->unit != AN_ROWS) {
			char *e = html_escaped(an_cell(a, t, i, first, buf, sizeof(buf)));
			tu_assert_contains(table, e);
			free(e);
		}
	}
	assert_line_with_all(o->text, (const char *const *)heads, nheads, t->key);
	for (size_t i = 0; i < nheads; i++)
		free(heads[i]);
	free(table);
	if (t->flags & AN_T_MAP) { /* accounting: each row's key, with its count */
		yajl_val map = tu_get(o->json, t->key);
		for (size_t r = 0; r < rows.n; r++) {
			const struct an_acct *row = (const struct an_acct *)rows.base + r;
			yajl_val m = tu_get(row->meta ? tu_get(map, "strobe") : map, row->key);
			if (!m || !YAJL_IS_NUMBER(m) || strcmp(YAJL_GET_NUMBER(m), row->raw))
				fail_msg("--json accounting has no %s: %s", row->key, row->raw);
		}
	} else {
		check_json(json_rows(o, t), t);
	}
}

static void test_every_column_in_every_presentation(void **state)
{
	(void)state;
	char *dir = strdup(tu_mkdtemp()), path[4096], args[8400], err[512];
	snprintf(path, sizeof(path), "%s/trace.json", dir);
	assert_int_equal(tu_write_file(path, trace), 0);

	struct outputs o = {0};
	char *json = NULL;
	snprintf(args, sizeof(args), "--top 0 '%s'", path);
	assert_int_equal(tu_strobe("summary", args, 0, &o.text), 0);
	snprintf(args, sizeof(args), "--json --top 0 '%s'", path);
	assert_int_equal(tu_strobe("summary", args, 0, &json), 0);
	o.json = tu_parse_json(json);
	assert_non_null(o.json);
	free(json);
	snprintf(args, sizeof(args), "--top 0 -o '%s/trace.html' '%s' 2>&1", dir, path);
	assert_int_equal(tu_strobe("report", args, 0, NULL), 0);
	snprintf(path, sizeof(path), "%s/trace.html", dir);
	o.html = tu_read_file(path, NULL);
	assert_non_null(o.html);

	snprintf(path, sizeof(path), "%s/trace.json", dir);
	if (an_read(&o.a, path, &o.st, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(an_view_init(&o.v, &o.a, &o.st, path, 0), 0);
	assert_true(o.a.ranked);
	for (size_t i = 0; i < an_ntables; i++) {
		const struct an_spec *t = an_tables[i];
		check_table(&o, t, t == &an_names ? o.v.names[0][0] : t->rows(&o.v));
	}
	an_view_free(&o.v);
	an_free(&o.a);
	yajl_tree_free(o.json);
	free(o.text);
	free(o.html);
	tu_rmrf(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_column_in_every_presentation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

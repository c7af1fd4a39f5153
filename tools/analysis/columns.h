/* The tables strobe summary (text and --json) and strobe report (HTML)
 * show, each defined once: its columns with header, JSON key, unit and
 * accessor. The three presentations render every column from here, so a
 * column added to a spec shows in all three. */
#ifndef STROBE_TOOLS_COLUMNS_H
#define STROBE_TOOLS_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"

/* What a value is, and so how text/HTML and JSON show it. */
enum an_unit {
	AN_TEXT,  /* a string; empty shows as "(none)", JSON "" */
	AN_IDENT, /* a pid or tid key (kind byte, then text): JSON a number when the trace wrote one */
	AN_COUNT, /* an integer */
	AN_NS,    /* a duration: "12.345 ms"; JSON integer ns */
	AN_TS,    /* a time: "+12.345 ms" into the window; JSON the integer ts in ns */
	AN_PCT,   /* "28.8%"; JSON the number */
	AN_RATE,  /* "100.000"; JSON the number */
	AN_REAL,  /* "%.6g"; JSON the number */
	AN_RAW,   /* a JSON number as the trace wrote it */
	AN_RANK,  /* "rank 3", "no rank", "all" without ranks; JSON the rank or null */
	AN_ROWS,  /* rows of the sub table col->sub */
};

#define AN_NAME  1u /* column: a long name (HTML class "name") */
#define AN_PAREN 2u /* column: shown after the previous column's value, in () */
#define AN_LINE  4u /* column: text shows it on a line under its row */
#define AN_JSON  8u /* column: JSON only (a sum that can exceed the window) */

#define AN_T_TOP    1u /* table: cut at --top rows (per rank, with a rank column) */
#define AN_T_RANKED 2u /* table: text heads each rank's rows instead of a rank column */
#define AN_T_ONE    4u /* sub table of at most one row: JSON object or null, its own HTML table */
#define AN_T_MAP    8u /* table: JSON is an object of each row's key and count (accounting) */

struct an_rows {
	const void *base;
	size_t n, stride;
};

struct an_value {
	int64_t i;
	double d;
	const char *s;
	bool none; /* nothing to show: a blank cell, JSON null */
	struct an_rows rows;
	char buf[TR_NAME_MAX + 64];
};

struct an_spec;
struct an_view;

/* A column: a field of the row (off, size) or, when get is set, computed. */
struct an_column {
	const char *head, *key;     /* header; JSON key ("a.b": b in object a) */
	uint8_t unit, width, flags; /* width: text columns (0: as long as it is) */
	void (*get)(const struct an_trace *a, const void *row, struct an_value *v);
	const struct an_spec *sub;
	uint16_t off, size;
};

struct an_spec {
	const char *key, *id;        /* JSON key of its rows; HTML table id */
	const char *title, *heading; /* text heading; HTML heading */
	const char *note;            /* HTML note under the heading, or NULL */
	const char *line;            /* sub table: a row as a phrase, "{0} at {1}" */
	const struct an_column *cols;
	size_t ncols;
	unsigned flags;
	struct an_rows (*rows)(const struct an_view *v);
	bool (*warn)(const void *row); /* rows that stand out (HTML class "warn") */
};

/* an_names has no rows of its own: a category's are in an_view.names. */
extern const struct an_spec an_categories, an_names, an_devices, an_kernels, an_memcpy, an_latency,
    an_gpu_memory, an_cpu_ops, an_instants, an_counters, an_accounting, an_steps, an_breakdown,
    an_launch_stats, an_ktypes, an_knames, an_idle_streams, an_queues, an_membw, an_kseqs, an_cpaths;
/* Every table above, for tests. */
extern const struct an_spec *const an_tables[];
extern const size_t an_ntables;

/* An accounting row: a numeric member of the trace's "strobe" object
 * (meta) or one of an_losses. */
struct an_acct {
	const char *what, *key, *raw;
	bool meta, warn;
	char num[24];
};

/* A read trace sorted for showing, with the --top limit. names[i] are the
 * names of category xcats[i] by total ([0]) and self time ([1]). */
struct an_view {
	const struct an_trace *a;
	const struct tr_stats *st;
	const char *file;
	size_t top;
	struct an_ref *phs, *cats, *xcats, *instants, *counters;
	size_t nxcats; /* categories with events (xcats lists them first) */
	struct an_rows (*names)[2];
	struct an_acct *acct;
	size_t nacct;
};

/* 0 or -ENOMEM; free v with an_view_free either way. */
int an_view_init(struct an_view *v, const struct an_trace *a, const struct tr_stats *st, const char *file,
                 size_t top);
void an_view_free(struct an_view *v);
/* Whether category i's by-self list shows the same names in the same
 * order as its by-total list (and so adds nothing). */
bool an_self_same(const struct an_view *v, size_t i);

/* The rows of t that --top keeps, one at a time. */
struct an_iter {
	const struct an_view *v;
	const struct an_spec *t;
	struct an_rows rows;
	size_t i, shown, in_rank;
	int64_t prev, rank; /* rank: of the row an_next returned */
};
struct an_iter an_iter(const struct an_view *v, const struct an_spec *t, struct an_rows rows);
const void *an_next(struct an_iter *it);

/* Column c of row; as text and HTML show it; a sub table's row as its phrase. */
void an_get(const struct an_trace *a, const struct an_column *c, const void *row, struct an_value *v);
const char *an_text(const struct an_trace *a, const struct an_column *c, const struct an_value *v, char *buf,
                    size_t len);
const char *an_phrase(const struct an_trace *a, const struct an_spec *t, const void *row, char *buf,
                      size_t len);
/* Column i of row as a cell shows it, with an AN_PAREN column after it in
 * parentheses; the header when row is NULL. */
const char *an_cell(const struct an_trace *a, const struct an_spec *t, size_t i, const void *row, char *buf,
                    size_t len);
/* Whether column c gets a cell of its own: not AN_PAREN, not AN_LINE in
 * text, not AN_JSON, and no rank column in text where ranks are headings, nor in HTML
 * without ranks. */
bool an_cell_shown(const struct an_view *v, const struct an_spec *t, const struct an_column *c, bool text);

#endif

/* strobe summary's text: every table from its column spec (columns.h),
 * readable in 100 columns. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "analysis/present.h"

/* Columns on a terminal, counting a UTF-8 sequence as one. */
static size_t columns(const char *s, size_t bytes)
{
	size_t n = 0;
	for (size_t i = 0; i < bytes; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

/* The byte length of the first cols columns of s. */
static size_t prefix_bytes(const char *s, size_t cols)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && cols-- == 0)
			break;
	return i;
}

/* Prints s in a cell of width columns (0: as it is), right-aligned or
 * left-aligned. A name too long for it loses its middle: C++ kernel names
 * differ at both ends. */
static void cell(FILE *f, const char *s, size_t width, bool right)
{
	size_t bytes = strlen(s), cols = columns(s, bytes);
	if (!width) {
		fputs(s, f);
	} else if (cols > width) {
		size_t head = (width - 1) * 2 / 3, tail = width - 1 - head;
		size_t hb = prefix_bytes(s, head), tb = prefix_bytes(s, cols - tail);
		fprintf(f, "%.*s…%s", (int)hb, s, s + tb);
	} else {
		fprintf(f, "%s%*s%s", right ? "" : s, (int)(width - cols), "", right ? s : "");
	}
}

/* Prints " item" on the current line, or on a new indented one when it
 * would pass column 100. */
static void list_item(FILE *f, size_t *col, const char *item)
{
	size_t w = columns(item, strlen(item)) + 1;
	if (*col + w > 100) {
		fprintf(f, "\n     ");
		*col = 5;
	}
	fprintf(f, " %s", item);
	*col += w;
}

static bool left(const struct an_column *c)
{
	return c->unit == AN_TEXT || c->unit == AN_RANK || c->unit == AN_IDENT;
}

/* One row (or the header): its cells, then its AN_LINE columns on lines of
 * their own: the scalar ones together, each list on one line. */
static void text_row(FILE *f, const struct an_view *v, const struct an_spec *t, const void *row)
{
	char buf[TR_NAME_MAX + 2 * TR_SHORT_MAX];
	fputs("  ", f);
	bool first = true;
	for (size_t i = 0; i < t->ncols; i++) {
		const struct an_column *c = &t->cols[i];
		if (!an_cell_shown(v, t, c, true))
			continue;
		if (left(c) && !first)
			fputs("  ", f);
		cell(f, an_cell(v->a, t, i, row, buf, sizeof(buf)), c->width, !left(c));
		first = false;
	}
	fputc('\n', f);
	size_t col = 0;
	for (size_t i = 0; row && i < t->ncols; i++) {
		const struct an_column *c = &t->cols[i];
		struct an_value val;
		if (!(c->flags & AN_LINE))
			continue;
		an_get(v->a, c, row, &val);
		if (c->unit != AN_ROWS && val.none)
			continue; /* nothing to say: no "overlap " with a blank */
		if (c->unit != AN_ROWS) {
			char tmp[64], item[TR_SHORT_MAX + 96];
			snprintf(item, sizeof(item), "%s %s", c->head,
			         an_text(v->a, c, &val, tmp, sizeof(tmp)));
			col = col ? col + (size_t)fprintf(f, ",") : (size_t)fprintf(f, "   ");
			list_item(f, &col, item);
			continue;
		}
		if (col) {
			fputc('\n', f);
			col = 0;
		}
		if (!val.rows.n)
			continue;
		col = (size_t)fprintf(f, *c->head ? "    %s:" : "   ", c->head);
		for (size_t k = 0; k < val.rows.n; k++) {
			const void *sub = (const unsigned char *)val.rows.base + k * val.rows.stride;
			an_phrase(v->a, c->sub, sub, buf, TR_SHORT_MAX);
			if (k + 1 < val.rows.n)
				strcat(buf, ",");
			list_item(f, &col, buf);
		}
		fputc('\n', f);
		col = 0;
	}
	if (col)
		fputc('\n', f);
}

static void more_line(FILE *f, size_t total, size_t shown_n)
{
	if (total > shown_n)
		fprintf(f, "  … %zu more (--top 0 shows all)\n", total - shown_n);
}

/* A table: its header row (first_head names its first column, when not
 * NULL), its rows under --top, with rank headings where the spec asks. */
static void text_table(FILE *f, const struct an_view *v, const struct an_spec *t, struct an_rows rows,
                       const char *first_head)
{
	if (!rows.n)
		return;
	struct an_column cols[16];
	struct an_spec head = *t;
	if (first_head && t->ncols <= 16) {
		memcpy(cols, t->cols, t->ncols * sizeof(*cols));
		cols[0].head = first_head;
		head.cols = cols;
	}
	text_row(f, v, &head, NULL);
	bool headings = v->a->ranked && t->flags & AN_T_RANKED;
	int64_t prev = INT64_MIN;
	struct an_iter it = an_iter(v, t, rows);
	for (const void *row; (row = an_next(&it)); prev = it.rank) {
		char buf[32];
		if (headings && it.rank != prev)
			fprintf(f, "  %s:\n", an_rank_label(it.rank, buf, sizeof(buf)));
		text_row(f, v, t, row);
	}
	more_line(f, rows.n, it.shown);
}

static void titled(FILE *f, const struct an_view *v, const struct an_spec *t)
{
	struct an_rows rows = t->rows(v);
	if (!rows.n)
		return;
	fprintf(f, "\n%s\n", t->title);
	text_table(f, v, t, rows, NULL);
}

/* A category's names by total time, and by self time when that lists
 * other names or in another order (the self column is in both). */
static void category_names(FILE *f, const struct an_view *v, size_t i)
{
	char title[64];
	fprintf(f, "\n%s\n", *v->xcats[i].name ? v->xcats[i].name : "(none)");
	for (int self = 0; self < 2 && !(self && an_self_same(v, i)); self++) {
		snprintf(title, sizeof(title), "top %zu %ss by %s time", an_shown(v->names[i][0].n, v->top),
		         an_names.cols[0].head, self ? "self" : "total");
		text_table(f, v, &an_names, v->names[i][self], title);
	}
}

static const char *compression_name(enum tr_compression c)
{
	return c == TR_GZIP ? "gzip" : c == TR_ZSTD ? "zstd" : "plain JSON";
}

/* Ranges open when the trace was written (a flight recorder dump): what
 * each thread was inside, outermost first, and for how long. */
static void open_ranges(FILE *f, const struct an_trace *s)
{
	char buf[40];
	fprintf(f, "Open at the dump (still running when it was written), per thread, outermost first:\n");
	for (size_t i = 0, depth = 0; i < s->nopen; i++) {
		const struct an_xrec *x = &s->open[i];
		if (!i || x->row != s->open[i - 1].row) {
			fprintf(f, "  pid %s, tid %s\n", an_row_pid(s, x->row), an_row_tid(s, x->row));
			depth = 0;
		}
		int pad = 2 * (int)(depth < 20 ? depth : 20);
		fprintf(f, "    %*s%-*s  open for %s\n", pad, "", 48 - pad, an_name(s, x->name),
		        an_fmt_dur(x->dur, buf, sizeof(buf)));
		depth++;
	}
	fprintf(f, "\n");
}

int an_print_text(const struct an_view *v, FILE *f)
{
	const struct an_trace *s = v->a;
	const struct tr_stats *st = v->st;
	char buf[40];

	if (s->nopen)
		open_ranges(f, s);

	if (st->perfetto)
		fprintf(f, "file      %s (Perfetto protobuf, %" PRIu64 " bytes)\n", v->file, st->json_bytes);
	else
		fprintf(f, "file      %s (%s, %" PRIu64 " bytes of JSON)\n", v->file,
		        compression_name(st->compression), st->json_bytes);
	fprintf(f, "events    %" PRIu64 " (", st->events);
	for (size_t i = 0; i < s->phs.n; i++) {
		const struct an_count *c = an_table_item(&s->phs, v->phs[i].id);
		fprintf(f, "%s%s %" PRIu64, i ? ", " : "", *v->phs[i].name ? v->phs[i].name : "(no ph)",
		        c->n);
	}
	fprintf(f, ")\n");
	if (s->timed)
		fprintf(f, "span      %s, from the first event's start to the last event's end\n",
		        an_fmt_dur(an_window(s), buf, sizeof(buf)));
	else
		fprintf(f, "span      none: no event has a timestamp\n");

	titled(f, v, &an_categories);
	for (size_t i = 0; i < v->nxcats; i++)
		category_names(f, v, i);

	if (s->ranked) {
		fprintf(f, "\nranks:");
		for (size_t i = 0; i < s->nranks; i++)
			fprintf(f, "%s %s", i ? "," : "",
			        s->ranks[i] >= 0 ? an_rank_label(s->ranks[i], buf, sizeof(buf)) + 5
			                         : "(pids without a rank)");
		fprintf(f, " (from process names \"rank N · ...\")\n");
	}
	titled(f, v, &an_devices);
	titled(f, v, &an_kernels);
	titled(f, v, &an_memcpy);
	titled(f, v, &an_latency);
	titled(f, v, &an_gpu_memory);
	titled(f, v, &an_steps);
	titled(f, v, &an_breakdown);
	titled(f, v, &an_ktypes);
	titled(f, v, &an_knames);
	titled(f, v, &an_idle_streams);
	titled(f, v, &an_launch_stats);
	titled(f, v, &an_queues);
	titled(f, v, &an_membw);
	titled(f, v, &an_kseqs);
	titled(f, v, &an_cpaths);
	/* Without ranks, each category's tables above have the cpu_op self times. */
	if (s->ranked)
		titled(f, v, &an_cpu_ops);

	fprintf(f, "\ninstants: %zu name%s\n", s->instants.n, s->instants.n == 1 ? "" : "s");
	text_table(f, v, &an_instants, an_instants.rows(v), NULL);
	fprintf(f, "\ncounters: %zu series\n", s->counters.n);
	text_table(f, v, &an_counters, an_counters.rows(v), NULL);
	fprintf(f, "\naccounting\n");
	if (!s->strobe_meta)
		fprintf(f, "  (the trace has no \"strobe\" metadata with drop counts)\n");
	text_table(f, v, &an_accounting, an_accounting.rows(v), NULL);
	return 0;
}

/* strobe diff: two traces (two runs, two commits, two ranks) compared by
 * step, op and kernel, from one streaming pass over each. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "analysis/diff.h"
#include "analysis/present.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "common/sink.h"
#include "strobe/strobe.h"

#define DEFAULT_TOP 20

static const char usage_text[] =
    "usage: strobe diff [--top N] [--json | -o OUT.html] [--step-name NAME] A B\n"
    "\n"
    "Compares two trace files (anything strobe summary reads): what got slower or faster\n"
    "from A to B, and what is new or gone.\n"
    "\n"
    "  steps    matched by position in each rank (the third step of A with the third of B):\n"
    "           duration and GPU busy time in each, and the change.\n"
    "  ops      cpu_op and user_annotation ranges (not the steps themselves), per rank and\n"
    "           name: count and total time in A and B, the change, and new/gone/slower/faster.\n"
    "  kernels  the same for GPU kernels.\n"
    "\n"
    "An op or kernel is placed in the step whose window holds its start and numbered among\n"
    "the same name in that step: the k-th aten::mm of a step in A is matched with the k-th\n"
    "aten::mm of the same step in B, so a loop that runs an op once more shows that one as\n"
    "new rather than shifting every match after it. What has no partner is new (only in B)\n"
    "or gone (only in A). Rows are ranked by the change in total time, largest first either\n"
    "way; each row's line says how much came from matched ranges (B - A) and how much from\n"
    "new and gone ones. Steps are ProfilerStep#N ranges, or the ranges --step-name names;\n"
    "without steps every op is matched by its occurrence in the whole trace.\n"
    "\n"
    "options:\n"
    "  --top N           rows per table (default 20; 0 shows all)\n"
    "  --json            print one JSON object instead of tables\n"
    "  -o, --output OUT  write the tables as one self-contained HTML page instead (slower\n"
    "                    rows red, faster green; written under a temporary name, then renamed)\n"
    "  --step-name NAME  complete events named NAME are the steps (in both traces)\n"
    "  -h, --help        show this text\n"
    "\n"
    "--json prints (times are integer nanoseconds; change = B - A):\n"
    "  {\"a\", \"b\": the files,\n"
    "   \"steps\": [{\"rank\", \"index\", \"a_step\", \"b_step\", \"a_duration_ns\", \"b_duration_ns\",\n"
    "              \"change_ns\", \"a_gpu_busy_ns\", \"b_gpu_busy_ns\"}, ...],\n"
    "   \"ops\": [ROW, ...], \"kernels\": [ROW, ...]}\n"
    "  ROW = {\"rank\", \"name\", \"status\", \"a_count\", \"b_count\", \"matched\", \"a_total_ns\",\n"
    "         \"b_total_ns\", \"change_ns\", \"matched_change_ns\", \"new_ns\", \"gone_ns\"}\n"
    "  A step missing from one trace has null there; \"rank\" is null outside merged traces.\n"
    "\n" CLI_THREADS_HELP "\n"
    "exit status: 0 compared, 1 a file cannot be read or is not a trace, 2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe diff before.json.gz after.json.gz\n"
    "  strobe diff --json rank0.json rank1.json | jq '.kernels[:5]'\n"
    "  strobe diff -o diff.html before.json after.json\n";

static const struct cli cli = {"diff", "strobe diff [--top N] [--json | -o OUT.html] [--step-name NAME] A B"};

/* "+12.345 µs", "-1.000 ms", "0 ns". */
static const char *signed_dur(int64_t ns, char *buf, size_t len)
{
	char tmp[40];
	snprintf(buf, len, "%s%s", ns > 0 ? "+" : "", an_fmt_dur(ns, tmp, sizeof(tmp)));
	return buf;
}

/* Prints name in width columns (bytes; a cut lands on a UTF-8 character
 * boundary), its middle cut when longer: kernel names differ at both ends. */
static void name_cell(FILE *f, const char *name, int width)
{
	int len = (int)strlen(name), head = width * 2 / 3, tail = len - (width - 1 - head);
	if (len <= width) {
		fprintf(f, "%-*s", width, name);
		return;
	}
	while (head > 0 && ((unsigned char)name[head] & 0xc0) == 0x80)
		head--;
	while (tail < len && ((unsigned char)name[tail] & 0xc0) == 0x80)
		tail++;
	fprintf(f, "%.*s…%s%*s", head, name, name + tail, width - 1 - head - (len - tail), "");
}

static void text_rows(FILE *f, const char *title, const struct an_diff_row *rows, size_t n, size_t top,
                      bool ranked)
{
	char b1[40], b2[40], b3[40], b4[40], b5[40];
	fprintf(f, "\n%s\n", title);
	if (!n) {
		fprintf(f, "  (none in either trace)\n");
		return;
	}
	fprintf(f, "  %-40s %7s %7s %11s %11s %12s  %s\n", "name", "A count", "B count", "A total", "B total",
	        "change", "status");
	size_t shown = an_shown(n, top);
	for (size_t i = 0; i < shown; i++) {
		const struct an_diff_row *r = &rows[i];
		char label[TR_NAME_MAX + 32];
		snprintf(label, sizeof(label), "%s%s%s", ranked ? an_rank_label(r->rank, b1, sizeof(b1)) : "",
		         ranked ? ": " : "", r->name);
		fputs("  ", f);
		name_cell(f, label, 40);
		fprintf(f, " %7" PRIu64 " %7" PRIu64 " %11s %11s %12s  %s\n", r->a_count, r->b_count,
		        an_fmt_dur(r->a_total, b2, sizeof(b2)), an_fmt_dur(r->b_total, b3, sizeof(b3)),
		        signed_dur(r->b_total - r->a_total, b4, sizeof(b4)), an_diff_status(r));
		if (r->matched && (r->new_total || r->gone_total))
			fprintf(f, "    %" PRIu64 " matched %s, new %s, gone %s\n", r->matched,
			        signed_dur(r->matched_change, b4, sizeof(b4)),
			        an_fmt_dur(r->new_total, b5, sizeof(b5)),
			        an_fmt_dur(r->gone_total, b1, sizeof(b1)));
	}
	if (n > shown)
		fprintf(f, "  … %zu more (--top 0 shows all)\n", n - shown);
}

static void print_text(FILE *f, const char *fa, const char *fb, const struct an_trace *a,
                       const struct an_trace *b, const struct an_diff *d, size_t top)
{
	char b1[40], b2[40], b3[40], b4[40], b5[40];
	bool ranked = a->ranked || b->ranked;
	fprintf(f, "A  %s (%s)\nB  %s (%s)\n", fa, an_fmt_dur(an_window(a), b1, sizeof(b1)), fb,
	        an_fmt_dur(an_window(b), b2, sizeof(b2)));
	fprintf(f, "\nsteps, matched by position in each rank\n");
	if (!d->nsteps)
		fprintf(f, "  (no steps: ProfilerStep#N ranges, or --step-name NAME)\n");
	else
		fprintf(f, "  %-8s %6s %6s %11s %11s %12s %11s %11s\n", "rank", "A step", "B step",
		        "A duration", "B duration", "change", "A GPU busy", "B GPU busy");
	for (size_t i = 0; i < an_shown(d->nsteps, top); i++) {
		const struct an_diff_step *s = &d->steps[i];
		char an[24] = "-", bn[24] = "-";
		if (s->a_number >= 0)
			snprintf(an, sizeof(an), "%" PRId64, s->a_number);
		if (s->b_number >= 0)
			snprintf(bn, sizeof(bn), "%" PRId64, s->b_number);
		bool both = s->a_number >= 0 && s->b_number >= 0;
		fprintf(f, "  %-8s %6s %6s %11s %11s %12s %11s %11s\n",
		        ranked ? an_rank_label(s->rank, b5, sizeof(b5)) : "all", an, bn,
		        s->a_number >= 0 ? an_fmt_dur(s->a_dur, b1, sizeof(b1)) : "-",
		        s->b_number >= 0 ? an_fmt_dur(s->b_dur, b2, sizeof(b2)) : "-",
		        both ? signed_dur(s->b_dur - s->a_dur, b3, sizeof(b3)) : "-",
		        s->a_busy >= 0 ? an_fmt_dur(s->a_busy, b4, sizeof(b4)) : "-",
		        s->b_busy >= 0 ? an_fmt_dur(s->b_busy, b5, sizeof(b5)) : "-");
	}
	if (d->nsteps > an_shown(d->nsteps, top))
		fprintf(f, "  … %zu more (--top 0 shows all)\n", d->nsteps - an_shown(d->nsteps, top));
	text_rows(f, "ops (cpu_op, user_annotation) by change in total time", d->ops, d->nops, top, ranked);
	text_rows(f, "kernels by change in total time", d->kernels, d->nkernels, top, ranked);
}

/* ---- JSON ------------------------------------------------------------------- */

static void gs(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void gi(yajl_gen g, const char *key, int64_t v)
{
	gs(g, key);
	yajl_gen_integer(g, v);
}

/* key: v, or null when absent. */
static void gopt(yajl_gen g, const char *key, bool present, int64_t v)
{
	gs(g, key);
	if (present)
		yajl_gen_integer(g, v);
	else
		yajl_gen_null(g);
}

static void json_rows(yajl_gen g, const char *key, const struct an_diff_row *rows, size_t n, size_t top)
{
	gs(g, key);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < an_shown(n, top); i++) {
		const struct an_diff_row *r = &rows[i];
		yajl_gen_map_open(g);
		gopt(g, "rank", r->rank >= 0, r->rank);
		gs(g, "name");
		gs(g, r->name);
		gs(g, "status");
		gs(g, an_diff_status(r));
		gi(g, "a_count", (int64_t)r->a_count);
		gi(g, "b_count", (int64_t)r->b_count);
		gi(g, "matched", (int64_t)r->matched);
		gi(g, "a_total_ns", r->a_total);
		gi(g, "b_total_ns", r->b_total);
		gi(g, "change_ns", r->b_total - r->a_total);
		gi(g, "matched_change_ns", r->matched_change);
		gi(g, "new_ns", r->new_total);
		gi(g, "gone_ns", r->gone_total);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static int print_json(FILE *f, const char *fa, const char *fb, const struct an_diff *d, size_t top)
{
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return -ENOMEM;
	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_config(g, yajl_gen_indent_string, "  ");
	yajl_gen_map_open(g);
	gs(g, "a");
	gs(g, fa);
	gs(g, "b");
	gs(g, fb);
	gs(g, "steps");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < an_shown(d->nsteps, top); i++) {
		const struct an_diff_step *s = &d->steps[i];
		bool in_a = s->a_number >= 0, in_b = s->b_number >= 0;
		yajl_gen_map_open(g);
		gopt(g, "rank", s->rank >= 0, s->rank);
		gi(g, "index", (int64_t)s->index);
		gopt(g, "a_step", in_a, s->a_number);
		gopt(g, "b_step", in_b, s->b_number);
		gopt(g, "a_duration_ns", in_a, s->a_dur);
		gopt(g, "b_duration_ns", in_b, s->b_dur);
		gopt(g, "change_ns", in_a && in_b, s->b_dur - s->a_dur);
		gopt(g, "a_gpu_busy_ns", s->a_busy >= 0, s->a_busy);
		gopt(g, "b_gpu_busy_ns", s->b_busy >= 0, s->b_busy);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	json_rows(g, "ops", d->ops, d->nops, top);
	json_rows(g, "kernels", d->kernels, d->nkernels, top);
	yajl_gen_map_close(g);
	const unsigned char *buf;
	size_t len;
	int rc = yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok ? 0 : -ENOMEM;
	if (!rc)
		fwrite(buf, 1, len, f);
	yajl_gen_free(g);
	return rc;
}

/* ---- HTML ------------------------------------------------------------------- */

static void html_cell(FILE *p, const char *cls, const char *text)
{
	fprintf(p, "<td%s%s%s>", *cls ? " class=\"" : "", cls, *cls ? "\"" : "");
	an_html_escape(p, text);
	fputs("</td>", p);
}

static void html_rows(FILE *p, const char *id, const char *title, const struct an_diff_row *rows, size_t n,
                      size_t top, bool ranked)
{
	char b1[40], b2[40], b3[40], b4[40];
	fprintf(p,
	        "<h2>%s</h2>\n<table id=\"%s\"><thead><tr>%s<th>name</th><th class=\"n\">A count</th>"
	        "<th class=\"n\">B count</th><th class=\"n\">A total</th><th class=\"n\">B total</th>"
	        "<th class=\"n\">change</th><th>status</th><th class=\"n\">matched change</th>"
	        "<th class=\"n\">new</th><th class=\"n\">gone</th></tr></thead><tbody>\n",
	        title, id, ranked ? "<th>rank</th>" : "");
	for (size_t i = 0; i < an_shown(n, top); i++) {
		const struct an_diff_row *r = &rows[i];
		const char *st = an_diff_status(r);
		fprintf(p, "<tr class=\"%s\">", st);
		if (ranked)
			html_cell(p, "", an_rank_label(r->rank, b1, sizeof(b1)));
		html_cell(p, "name", r->name);
		snprintf(b1, sizeof(b1), "%" PRIu64, r->a_count);
		html_cell(p, "n", b1);
		snprintf(b1, sizeof(b1), "%" PRIu64, r->b_count);
		html_cell(p, "n", b1);
		html_cell(p, "n", an_fmt_dur(r->a_total, b2, sizeof(b2)));
		html_cell(p, "n", an_fmt_dur(r->b_total, b3, sizeof(b3)));
		html_cell(p, "n", signed_dur(r->b_total - r->a_total, b4, sizeof(b4)));
		html_cell(p, "", st);
		html_cell(p, "n", signed_dur(r->matched_change, b4, sizeof(b4)));
		html_cell(p, "n", an_fmt_dur(r->new_total, b2, sizeof(b2)));
		html_cell(p, "n", an_fmt_dur(r->gone_total, b3, sizeof(b3)));
		fputs("</tr>\n", p);
	}
	fputs("</tbody></table>\n", p);
	if (n > an_shown(n, top))
		fprintf(p, "<p class=\"more\">%zu more not shown (--top 0 shows all).</p>\n",
		        n - an_shown(n, top));
}

/* The page, into *page (free it). */
static int html_page(const char *fa, const char *fb, const struct an_trace *a, const struct an_trace *b,
                     const struct an_diff *d, size_t top, char **page, size_t *len)
{
	char b1[40], b2[40], b3[40], b4[40];
	bool ranked = a->ranked || b->ranked;
	FILE *p = open_memstream(page, len);
	if (!p)
		return -ENOMEM;
	fputs(
	    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>strobe diff</title>\n"
	    "<style>\n",
	    p);
	fputs(an_html_style, p);
	fputs(
	    "tr.slower td,tr.new td{color:#a4262c}tr.faster td,tr.gone td{color:#2b7a3d}\n</style>\n</head>\n"
	    "<body>\n<h1>strobe diff</h1>\n<table id=\"facts\" class=\"facts\"><tbody>\n<tr><td>A</td>",
	    p);
	html_cell(p, "", fa);
	fprintf(p, "<td>%s</td></tr>\n<tr><td>B</td>", an_fmt_dur(an_window(a), b1, sizeof(b1)));
	html_cell(p, "", fb);
	fprintf(p, "<td>%s</td></tr>\n</tbody></table>\n", an_fmt_dur(an_window(b), b1, sizeof(b1)));
	fputs(
	    "<p class=\"note\">Ops and kernels are matched by name and position in their step (the k-th of a "
	    "name in the same step); change = B - A.</p>\n<h2>Steps, matched by position</h2>\n"
	    "<table id=\"steps\"><thead><tr><th>rank</th><th class=\"n\">A step</th><th class=\"n\">B "
	    "step</th><th class=\"n\">A duration</th><th class=\"n\">B duration</th><th "
	    "class=\"n\">change</th><th class=\"n\">A GPU busy</th><th class=\"n\">B GPU "
	    "busy</th></tr></thead><tbody>\n",
	    p);
	for (size_t i = 0; i < an_shown(d->nsteps, top); i++) {
		const struct an_diff_step *s = &d->steps[i];
		bool in_a = s->a_number >= 0, in_b = s->b_number >= 0;
		int64_t change = s->b_dur - s->a_dur;
		fprintf(p, "<tr class=\"%s\">",
		        !in_a || !in_b ? ""
		        : change > 0   ? "slower"
		        : change < 0   ? "faster"
		                       : "");
		html_cell(p, "", ranked ? an_rank_label(s->rank, b1, sizeof(b1)) : "all");
		snprintf(b1, sizeof(b1), "%" PRId64, s->a_number);
		html_cell(p, "n", in_a ? b1 : "-");
		snprintf(b2, sizeof(b2), "%" PRId64, s->b_number);
		html_cell(p, "n", in_b ? b2 : "-");
		html_cell(p, "n", in_a ? an_fmt_dur(s->a_dur, b3, sizeof(b3)) : "-");
		html_cell(p, "n", in_b ? an_fmt_dur(s->b_dur, b4, sizeof(b4)) : "-");
		html_cell(p, "n", in_a && in_b ? signed_dur(change, b1, sizeof(b1)) : "-");
		html_cell(p, "n", s->a_busy >= 0 ? an_fmt_dur(s->a_busy, b2, sizeof(b2)) : "-");
		html_cell(p, "n", s->b_busy >= 0 ? an_fmt_dur(s->b_busy, b3, sizeof(b3)) : "-");
		fputs("</tr>\n", p);
	}
	fputs("</tbody></table>\n", p);
	html_rows(p, "ops", "Ops (cpu_op, user_annotation) by change in total time", d->ops, d->nops, top,
	          ranked);
	html_rows(p, "kernels", "Kernels by change in total time", d->kernels, d->nkernels, top, ranked);
	fputs("<p class=\"note\">Written by strobe ", p);
	an_html_escape(p, strobe_version());
	fputs(".</p>\n</body></html>\n", p);
	return ferror(p) | fclose(p) ? -ENOMEM : 0;
}

static int write_html(const char *out, const char *fa, const char *fb, const struct an_trace *a,
                      const struct an_trace *b, const struct an_diff *d, size_t top, char *err, size_t errlen)
{
	char *page = NULL;
	size_t len = 0;
	if (html_page(fa, fb, a, b, d, top, &page, &len)) {
		free(page);
		snprintf(err, errlen, "out of memory");
		return 1;
	}
	struct strb_sink *sink;
	int rc = strb_sink_open(&sink, out, STRB_COMPRESS_NONE, -1);
	if (!rc) {
		strb_sink_write(sink, page, len);
		rc = strb_sink_commit(sink);
	}
	free(page);
	if (rc)
		snprintf(err, errlen, "cannot write the page: %s", strobe_last_error());
	else
		fprintf(stderr, "strobe: wrote %s\n", out);
	return rc ? 1 : 0;
}

/* ---- the command ------------------------------------------------------------ */

int cmd_diff(int argc, char **argv)
{
	size_t top = DEFAULT_TOP;
	bool json = false;
	const char *files[2] = {NULL, NULL}, *step_name = NULL, *val, *out = NULL;
	for (int i = 1, rc; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (cli_opt(argc, argv, &i, "--step-name", NULL, &val)) {
			if ((rc = cli_text(&cli, "--step-name", val, "a range name", &step_name)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--output", "-o", &val)) {
			if ((rc = cli_text(&cli, "--output", val, "a file name", &out)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--top", NULL, &val)) {
			int64_t n = 0;
			if ((rc = cli_int(&cli, "--top", val, 0, 1000000, &n)))
				return rc;
			top = (size_t)n;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage(&cli, "unknown option %s", argv[i]);
		} else if (files[1]) {
			return cli_usage(&cli, "one trace too many: %s", argv[i]);
		} else {
			files[files[0] ? 1 : 0] = argv[i];
		}
	}
	if (!files[1])
		return cli_usage(&cli,
		                 files[0] ? "only one trace given: diff needs A and B" : "no traces given");
	if (!strcmp(files[0], "-") && !strcmp(files[1], "-"))
		return cli_usage(&cli, "only one of A and B can be stdin");
	if (json && out)
		return cli_usage(&cli, "--json and --output: choose one");

	struct an_trace t[2] = {{.step_name = step_name}, {.step_name = step_name}};
	struct tr_stats st;
	char err[512];
	int rc = 0;
	for (int k = 0; k < 2 && !rc; k++)
		rc = an_read(&t[k], files[k], &st, err, sizeof(err));
	struct an_diff d = {0};
	if (!rc && an_diff(&t[0], &t[1], &d))
		rc = snprintf(err, sizeof(err), "out of memory comparing %s and %s", files[0], files[1]);
	if (!rc && out)
		rc = write_html(out, files[0], files[1], &t[0], &t[1], &d, top, err, sizeof(err));
	else if (!rc && json)
		rc = print_json(stdout, files[0], files[1], &d, top)
		         ? snprintf(err, sizeof(err), "out of memory")
		         : 0;
	else if (!rc)
		print_text(stdout, files[0], files[1], &t[0], &t[1], &d, top);
	if (rc)
		fprintf(stderr, "strobe: %s\n", err);
	an_diff_free(&d);
	an_free(&t[0]);
	an_free(&t[1]);
	return rc ? 1 : 0;
}

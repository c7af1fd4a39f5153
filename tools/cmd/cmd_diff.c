/* strobe diff: two traces (two runs, two commits, two ranks) compared by
 * step, op and kernel, from one streaming pass over each. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "analysis/diff.h"
#include "cmd/cli.h"
#include "cmd/commands.h"

#define DEFAULT_TOP 20

static const char usage_text[] =
    "usage: strobe diff [--top N] [--json] [--step-name NAME] A B\n"
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
    "\n"
    "exit status: 0 compared, 1 a file cannot be read or is not a trace, 2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe diff before.json.gz after.json.gz\n"
    "  strobe diff --json rank0.json rank1.json | jq '.kernels[:5]'\n";

static const struct cli cli = {"diff", "strobe diff [--top N] [--json] [--step-name NAME] A B"};

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

/* ---- the command ------------------------------------------------------------ */

int cmd_diff(int argc, char **argv)
{
	size_t top = DEFAULT_TOP;
	bool json = false;
	const char *files[2] = {NULL, NULL}, *step_name = NULL, *val;
	for (int i = 1, rc; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (cli_opt(argc, argv, &i, "--step-name", NULL, &val)) {
			if ((rc = cli_text(&cli, "--step-name", val, "a range name", &step_name)))
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

	struct an_trace t[2] = {{.step_name = step_name}, {.step_name = step_name}};
	struct tr_stats st;
	char err[512];
	int rc = 0;
	for (int k = 0; k < 2 && !rc; k++)
		rc = an_read(&t[k], files[k], &st, err, sizeof(err));
	struct an_diff d = {0};
	if (!rc && an_diff(&t[0], &t[1], &d))
		rc = snprintf(err, sizeof(err), "out of memory comparing %s and %s", files[0], files[1]);
	if (!rc && json)
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

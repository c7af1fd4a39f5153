/* strobe report: the summary of a trace as one self-contained HTML page
 * (inline CSS, inline SVG drawn by inline script; nothing fetched), from the
 * same single streaming pass as strobe summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/present.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "common/sink.h"
#include "strobe/strobe.h"

#define DEFAULT_TOP 20

static const char usage_text[] =
    "usage: strobe report [--top N] [--step-name NAME] [--seq-op NAME] [-o OUT.html]\n"
    "                     [--progress | -q] FILE\n"
    "\n"
    "Writes one self-contained HTML page about a trace file (plain, gzip or zstd JSON, or\n"
    "Perfetto, as for strobe summary; FILE \"-\" reads stdin): the trace's facts (file,\n"
    "window, host, ranks, the drops and warnings it records), a zoomable timeline overview\n"
    "with a row per CPU thread and GPU stream, the step-time chart, CPU thread occupancy and\n"
    "time by name, a GPU utilisation timeline per device (busy fraction in each of 200\n"
    "slices of the window), a bar chart of kernel time by name, busy % per stream, and the\n"
    "summary's tables (devices and idle gaps, kernels with p50/p99, memcpy by direction,\n"
    "launch latency, NCCL overlap, top names by total and self time per category, none\n"
    "longer than the window). The page needs no network: open it anywhere. Tables and\n"
    "charts show the top N rows and say how many more there are; timelines are drawn for\n"
    "the first 64 devices.\n"
    "\n"
    "The file is written under a temporary name and renamed into place when complete.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT  the page to write (default: FILE without .json/.gz/.zst, plus\n"
    "                    .html; required when FILE is -)\n"
    "  --top N           rows per table and bars per chart (default 20; 0 shows all)\n"
    "  --step-name NAME  complete events named NAME are the steps (default: ProfilerStep#N)\n"
    "  --seq-op NAME     kernel sequences start at the shallowest ops whose name holds NAME\n"
    "                    (default: every cpu_op not inside another)\n"
    "  --progress        show progress on stderr even when it is not a terminal\n"
    "  -q, --quiet       no progress\n"
    "  -h, --help        show this text\n"
    "\n"
    "Unless --quiet, progress (MB read of the file's size, events) is shown on stderr\n"
    "when it is a terminal.\n"
    "\n" CLI_THREADS_HELP "\n"
    "exit status: 0 written, 1 the trace cannot be read or the page cannot be written,\n"
    "2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe report trace.json -o report.html\n"
    "  strobe report --top 50 rank0.json.gz          # writes rank0.html\n"
    "  zcat old.json.gz | strobe report - -o old.html\n";

/* ---- the command ------------------------------------------------------------ */

static const struct cli cli = {"report", "strobe report [--top N] [-o OUT.html] FILE"};

/* FILE less .json, .json.gz, .json.zst (or .gz, .zst), plus .html. */
static char *default_output(const char *file)
{
	size_t n = strlen(file);
	static const char *const suffixes[] = {".gz", ".zst", ".json"};
	for (size_t i = 0; i < 3; i++) {
		size_t l = strlen(suffixes[i]);
		if (n > l && !strncmp(file + n - l, suffixes[i], l))
			n -= l;
	}
	char *out = malloc(n + 6);
	if (out)
		snprintf(out, n + 6, "%.*s.html", (int)n, file);
	return out;
}

int cmd_report(int argc, char **argv)
{
	size_t top = DEFAULT_TOP;
	bool quiet = false, progress_flag = false;
	const char *file = NULL, *out = NULL, *val, *step_name = NULL, *seq_op = NULL;
	for (int i = 1, rc; i < argc; i++) {
		const char *arg = argv[i];
		if (cli_is_help(arg)) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(arg, "--progress")) {
			progress_flag = true;
		} else if (!strcmp(arg, "-q") || !strcmp(arg, "--quiet")) {
			quiet = true;
		} else if (cli_opt(argc, argv, &i, "--output", "-o", &val)) {
			if ((rc =
			         cli_text(&cli, arg[1] == 'o' ? "-o" : "--output", val, "a file name", &out)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--step-name", NULL, &val)) {
			if ((rc = cli_text(&cli, "--step-name", val, "a range name", &step_name)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--seq-op", NULL, &val)) {
			if ((rc = cli_text(&cli, "--seq-op", val, "an op name", &seq_op)))
				return rc;
		} else if ((rc = cli_top_or_file(&cli, argc, argv, &i, &top, &file))) {
			return rc;
		}
	}
	if (!file)
		return cli_usage(&cli, "no trace file given");
	if (!out && !strcmp(file, "-"))
		return cli_usage(&cli, "reading stdin, the page needs a name: -o OUT.html");
	char *owned = out ? NULL : default_output(file);
	if (!out && !(out = owned)) {
		fprintf(stderr, "strobe: out of memory\n");
		return 1;
	}

	struct an_trace a = {.step_name = step_name, .seq_op = seq_op};
	struct cli_progress pr;
	if (cli_progress_start(&pr, cli.cmd, file, quiet, progress_flag)) {
		a.progress_cb = cli_progress_cb;
		a.progress_arg = &pr;
	}
	struct an_view v = {0};
	struct tr_stats st;
	char err[512], *page = NULL;
	size_t len = 0;
	int rc = an_read(&a, file, &st, err, sizeof(err));
	cli_progress_end(&pr);
	if (!rc && (an_view_init(&v, &a, &st, file, top) || an_html_page(&v, &page, &len)))
		rc = snprintf(err, sizeof(err), "%s: out of memory", file);
	if (!rc) {
		struct strb_sink *sink;
		rc = strb_sink_open(&sink, out, STRB_COMPRESS_NONE, -1);
		if (!rc) {
			strb_sink_write(sink, page, len);
			rc = strb_sink_commit(sink);
		}
		if (rc)
			snprintf(err, sizeof(err), "cannot write the report: %s", strobe_last_error());
	}
	if (rc)
		fprintf(stderr, "strobe: %s\n", err);
	else
		fprintf(stderr, "strobe: wrote %s\n", out);
	an_view_free(&v);
	an_free(&a);
	free(page);
	free(owned);
	return rc ? 1 : 0;
}

/* strobe summary: what a trace file holds, where its time goes, and what it
 * lost, from one streaming pass over the file. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "analysis/present.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "read/trace_reader.h"

#define DEFAULT_TOP 10

static const char usage_text[] =
    "usage: strobe summary [--top N] [--json] [--step-name NAME] [--seq-op NAME] [--progress | -q]\n"
    "                      FILE\n"
    "\n"
    "Summarises a Chrome-trace JSON file written by strobe or libkineto (plain, gzip or\n"
    "zstd, told apart by content), or a Perfetto trace; FILE \"-\" reads stdin. It prints\n"
    "the time span, event counts by phase and category, for each category the names with\n"
    "the most total time and the most self time, instant and counter events, and what the\n"
    "trace says it lost.\n"
    "With GPU work (\"kernel\", \"gpu_memcpy\", \"gpu_memset\" events, pid = device, tid =\n"
    "stream) it adds, per device: busy time (the union of its work, overlapping streams\n"
    "counted once), busy % of the trace's span, idle gaps between its first and last work,\n"
    "busy time per stream, and with NCCL kernels how much communication ran at the same\n"
    "time as compute; kernels by name with p50/p99 durations; memcpy volume and bandwidth by\n"
    "direction; launch latency (kernel start - start of the cuda_runtime/cuda_driver call\n"
    "with the same \"correlation\" arg or ac2g flow id). In a merged trace (process names\n"
    "\"rank N · ...\") GPU tables and cpu_op self times are per rank. The file is read once,\n"
    "as a stream; percentiles are exact (nearest rank over every duration).\n"
    "\n"
    "A trace with ranges still open when it was written (a flight recorder dump:\n"
    "complete events with \"finished\": false) starts with them, under \"Open at the dump\n"
    "(still running when it was written)\": per thread, outermost first, each with how\n"
    "long it had been open. What a hung thread was inside reads from there.\n"
    "\n"
    "Steps (ProfilerStep#N, or ranges named by --step-name) get a table: per step and GPU\n"
    "device, the step's duration and the device's busy, compute, communication, memory and\n"
    "idle time inside it, with outliers (over median + 3 MAD) marked. HolisticTraceAnalysis'\n"
    "analyses follow, with HTA 0.5's definitions (docs/analysis.md): temporal breakdown,\n"
    "communication/computation overlap, time by kernel type, kernels by type and name, idle\n"
    "time per stream (host wait, kernel wait, other), kernel launch statistics, queue\n"
    "length per stream, memory bandwidth per copy kind, and frequent kernel sequences (per\n"
    "op that launched 3 or more GPU events, the sequence of their names, counted) and the\n"
    "critical path of each step (its length, its time on the CPU, GPU, kernel gaps and\n"
    "launch delays, CPU- or GPU-bound, the ops and kernels with the most time on it).\n"
    "\n"
    "Self time is an event's duration less the parts of it covered by the complete (\"X\")\n"
    "events nested directly inside it on the same pid/tid row.\n"
    "\n"
    "options:\n"
    "  --top N     rows per table (default 10; 0 shows every row)\n"
    "  --json      print one JSON object instead of tables\n"
    "  --step-name NAME\n"
    "              complete events named NAME are the steps (default: ProfilerStep#N)\n"
    "  --seq-op NAME\n"
    "              kernel sequences start at the shallowest ops whose name holds NAME\n"
    "              (HTA's operator_name; default: every cpu_op not inside another)\n"
    "  --progress  show progress on stderr even when it is not a terminal\n"
    "  -q, --quiet no progress\n"
    "  -h, --help  show this text\n"
    "\n"
    "Unless --quiet, progress (MB read of the file's size, events) is shown on stderr\n"
    "when it is a terminal: a large trace takes seconds per gigabyte.\n"
    "\n"
    "--json prints (times are integer nanoseconds; ts is relative to the trace's\n"
    "baseTimeNanoseconds; lists are sorted as the tables are and cut at --top):\n"
    "  {\"file\", \"compression\": \"none\" | \"gzip\" | \"zstd\", \"file_bytes\", \"json_bytes\",\n"
    "   \"events\", \"open_at_dump\": [{\"pid\", \"tid\", \"ranges\": [{\"name\", \"cat\", \"ts_ns\",\n"
    "                    \"open_ns\", \"depth\"}, ...]}, ...] (only when a range was open),\n"
    "   \"span\": {\"first_ts_ns\", \"last_end_ns\", \"duration_ns\"} or null,\n"
    "   \"by_ph\": {PH: count, ...}, \"by_cat\": {CAT: count, ...},\n"
    "   \"categories\": [{\"cat\", \"events\", \"names\", \"total_ns\", \"self_ns\",\n"
    "                   \"top_by_total\": [ROW, ...], \"top_by_self\": [ROW, ...]}, ...],\n"
    "   \"instants\": [{\"cat\", \"name\", \"count\"}, ...], \"instant_names\",\n"
    "   \"counters\": [{\"name\", \"key\", \"count\", \"min\", \"max\", \"last\"}, ...],\n"
    "   \"counter_series\", \"ranks\": [N, ...],\n"
    "   \"gpu_devices\": [{\"pid\", \"name\", \"rank\", \"events\", \"busy_ns\", \"busy_pct\",\n"
    "                    \"first_ts_ns\", \"last_end_ns\", \"idle_gaps\": {\"count\", \"total_ns\",\n"
    "                    \"longest_ns\", \"longest\": [{\"start_ns\", \"duration_ns\"}, ...]},\n"
    "                    \"streams\": [{\"tid\", \"name\", \"events\", \"busy_ns\", \"busy_pct\"}, ...],\n"
    "                    \"comm_compute\": {\"comm_ns\", \"compute_ns\", \"both_ns\",\n"
    "                                    \"hidden_pct\"} or null}, ...],\n"
    "   \"kernels\": [{\"rank\", \"name\", \"count\", \"total_ns\", \"mean_ns\", \"p50_ns\",\n"
    "                \"p99_ns\", \"max_ns\"}, ...],\n"
    "   \"memcpy\": [{\"rank\", \"kind\", \"count\", \"bytes\", \"total_ns\", \"gb_per_s\"}, ...],\n"
    "   \"launch_latency\": [{\"rank\", \"kernels\", \"matched\", \"unmatched\", \"p50_ns\",\n"
    "                       \"p90_ns\", \"p99_ns\", \"max_ns\"}, ...],\n"
    "   \"cpu_ops_by_self\": [{\"rank\", \"name\", \"count\", \"total_ns\", \"self_ns\"}, ...],\n"
    "   \"steps\": [{\"rank\", \"step\", \"device\", \"start_ns\", \"duration_ns\", \"busy_ns\",\n"
    "              \"compute_ns\", \"comm_ns\", \"idle_ns\", \"outlier\", \"name\", \"memory_ns\"}, ...],\n"
    "   \"temporal_breakdown\": [{\"rank\", \"device\", \"kernel_time_ns\", \"idle_ns\", \"idle_pct\",\n"
    "              \"compute_ns\", \"compute_pct\", \"non_compute_ns\", \"non_compute_pct\", \"comm_ns\",\n"
    "              \"memory_ns\", \"other_ns\", \"comm_comp_overlap_pct\", \"events\"}, ...],\n"
    "   \"kernel_type_time\": [{\"rank\", \"device\", \"kernel_type\", \"time_ns\", \"pct\"}, ...],\n"
    "   \"kernels_by_type\": [{\"rank\", \"device\", \"kernel_type\", \"name\", \"count\", \"sum_ns\",\n"
    "              \"mean_ns\", \"min_ns\", \"max_ns\", \"std_ns\"}, ...],\n"
    "   \"idle_time\": [{\"rank\", \"device\", \"stream\", \"host_wait_ns\", \"kernel_wait_ns\",\n"
    "              \"other_ns\", \"idle_ns\"}, ...],\n"
    "   \"launch_stats\": [{\"rank\", \"device\", \"launches\", \"short_kernels\", \"runtime_outliers\",\n"
    "              \"delay_outliers\", \"delay_p50_ns\", \"delay_p99_ns\", \"delay_max_ns\", \"cpu_ns\",\n"
    "              \"gpu_ns\"}, ...],\n"
    "   \"queue_length\": [{\"rank\", \"device\", \"stream\", \"count\", \"mean\", \"p50\", \"max\"}, ...],\n"
    "   \"memory_bandwidth\": [{\"rank\", \"device\", \"kind\", \"count\", \"mean_gb_per_s\",\n"
    "              \"p50_gb_per_s\", \"min_gb_per_s\", \"max_gb_per_s\"}, ...],\n"
    "   \"kernel_sequences\": [{\"rank\", \"op\", \"kernels\", \"count\", \"gpu_ns\", \"cpu_ns\",\n"
    "              \"sequence\": [{\"name\"}, ...]}, ...],\n"
    "   \"critical_path\": [{\"rank\", \"step\", \"duration_ns\", \"length_ns\", \"bound\",\n"
    "              \"cpu_ns\", \"gpu_compute_ns\", \"gpu_comm_ns\", \"kernel_gap_ns\",\n"
    "              \"launch_delay_ns\", \"name\", \"ops\": [{\"name\", \"on\", \"time_ns\"}, ...]}, ...],\n"
    "   \"accounting\": {\"strobe\": {KEY: number, ...} or null, \"unfinished_events\",\n"
    "                  \"unknown_names\", \"untimed_events\", \"truncated_strings\",\n"
    "                  \"dropped_members\", \"skipped_elements\", \"bad_times\",\n"
    "                  \"negative_durs\", \"unended_slices\", \"cut_open_slices\",\n"
    "                  \"cut_tracks\", \"repaired_defects\"}}\n"
    "  ROW = {\"name\", \"count\", \"total_ns\", \"self_ns\", \"mean_ns\", \"max_ns\"}\n"
    "  \"strobe\" holds the numeric members of the trace's \"strobe\" metadata (nested\n"
    "  keys joined with '.'); the other counts are made by this command. \"rank\" is null\n"
    "  outside merged traces; per-rank lists are cut at --top rows per rank.\n"
    "\n" CLI_THREADS_HELP "\n"
    "exit status: 0 done, 1 the file cannot be read or is not a trace, 2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe summary trace.json\n"
    "  strobe summary --top 5 trace.json.gz\n"
    "  strobe summary --json trace.json.zst | jq '.categories[] | select(.cat == \"kernel\")'\n"
    "  zcat old.json.gz | strobe summary -\n";

/* ---- the command ----------------------------------------------------------- */

static const struct cli cli = {"summary", "strobe summary [--top N] [--json] FILE"};

static int report(const char *file, const struct tr_stats *st, struct an_trace *s, size_t top, bool json)
{
	struct an_view v;
	int rc = an_view_init(&v, s, st, file, top);
	if (!rc)
		rc = json ? an_print_json(&v, stdout) : an_print_text(&v, stdout);
	an_view_free(&v);
	return rc;
}

int cmd_summary(int argc, char **argv)
{
	size_t top = DEFAULT_TOP;
	bool json = false, quiet = false, progress_flag = false;
	const char *file = NULL, *step_name = NULL, *seq_op = NULL, *val;
	for (int i = 1, rc; i < argc; i++) {
		if (cli_is_help(argv[i])) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--progress")) {
			progress_flag = true;
		} else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet")) {
			quiet = true;
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

	struct an_trace s = {.step_name = step_name, .seq_op = seq_op};
	struct cli_progress pr;
	if (cli_progress_start(&pr, cli.cmd, file, quiet, progress_flag)) {
		s.progress_cb = cli_progress_cb;
		s.progress_arg = &pr;
	}
	struct tr_stats st;
	char err[512];
	int rc = an_read(&s, file, &st, err, sizeof(err));
	cli_progress_end(&pr);
	if (!rc && report(file, &st, &s, top, json))
		rc = snprintf(err, sizeof(err), "%s: out of memory", file);
	if (rc)
		fprintf(stderr, "strobe: %s\n", err);
	an_free(&s);
	return rc ? 1 : 0;
}

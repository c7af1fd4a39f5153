/* strobe summary: what a trace file holds, where its time goes, and what it
 * lost, from one streaming pass over the file. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "analysis/analysis.h"
#include "cmd/commands.h"
#include "read/trace_reader.h"

#define DEFAULT_TOP 10
#define NAME_W      44 /* name column; the rest of a row takes 49 of 100 columns */
#define NUM_W       8
#define DUR_W       13

static const char usage_text[] =
    "usage: strobe summary [--top N] [--json] FILE\n"
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
    "Self time is an event's duration less the parts of it covered by the complete (\"X\")\n"
    "events nested directly inside it on the same pid/tid row.\n"
    "\n"
    "options:\n"
    "  --top N     rows per table (default 10; 0 shows every row)\n"
    "  --json      print one JSON object instead of tables\n"
    "  -h, --help  show this text\n"
    "\n"
    "--json prints (times are integer nanoseconds; ts is relative to the trace's\n"
    "baseTimeNanoseconds; lists are sorted as the tables are and cut at --top):\n"
    "  {\"file\", \"compression\": \"none\" | \"gzip\" | \"zstd\", \"file_bytes\", \"json_bytes\",\n"
    "   \"events\", \"span\": {\"first_ts_ns\", \"last_end_ns\", \"duration_ns\"} or null,\n"
    "   \"by_ph\": {PH: count, ...}, \"by_cat\": {CAT: count, ...},\n"
    "   \"categories\": [{\"cat\", \"events\", \"names\", \"total_ns\", \"self_ns\",\n"
    "                   \"top_by_total\": [ROW, ...], \"top_by_self\": [ROW, ...]}, ...],\n"
    "   \"instants\": [{\"cat\", \"name\", \"count\"}, ...], \"instant_names\",\n"
    "   \"counters\": [{\"name\", \"key\", \"count\", \"min\", \"max\", \"last\"}, ...],\n"
    "   \"counter_series\", \"ranks\": [N, ...],\n"
    "   \"gpu_devices\": [{\"pid\", \"name\", \"rank\", \"events\", \"busy_ns\", \"busy_pct\",\n"
    "                    \"first_ts_ns\", \"last_end_ns\", \"idle_gaps\": {\"count\", \"total_ns\",\n"
    "                    \"longest_ns\", \"longest\": [{\"start_ns\", \"duration_ns\"}, ...]},\n"
    "                    \"streams\": [{\"tid\", \"events\", \"busy_ns\", \"busy_pct\"}, ...],\n"
    "                    \"comm_compute\": {\"comm_ns\", \"compute_ns\", \"both_ns\",\n"
    "                                    \"hidden_pct\"} or null}, ...],\n"
    "   \"kernels\": [{\"rank\", \"name\", \"count\", \"total_ns\", \"mean_ns\", \"p50_ns\",\n"
    "                \"p99_ns\", \"max_ns\"}, ...],\n"
    "   \"memcpy\": [{\"rank\", \"kind\", \"count\", \"bytes\", \"total_ns\", \"gb_per_s\"}, ...],\n"
    "   \"launch_latency\": [{\"rank\", \"kernels\", \"matched\", \"unmatched\", \"p50_ns\",\n"
    "                       \"p90_ns\", \"p99_ns\", \"max_ns\"}, ...],\n"
    "   \"cpu_ops_by_self\": [{\"rank\", \"name\", \"count\", \"total_ns\", \"self_ns\"}, ...],\n"
    "   \"accounting\": {\"strobe\": {KEY: number, ...} or null, \"unfinished_events\",\n"
    "                  \"unknown_names\", \"untimed_events\", \"truncated_strings\",\n"
    "                  \"dropped_members\", \"skipped_elements\", \"bad_times\",\n"
    "                  \"negative_durs\"}}\n"
    "  ROW = {\"name\", \"count\", \"total_ns\", \"self_ns\", \"mean_ns\", \"max_ns\"}\n"
    "  \"strobe\" holds the numeric members of the trace's \"strobe\" metadata (nested\n"
    "  keys joined with '.'); the other counts are made by this command. \"rank\" is null\n"
    "  outside merged traces; per-rank lists are cut at --top rows per rank.\n"
    "\n"
    "exit status: 0 done, 1 the file cannot be read or is not a trace, 2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe summary trace.json\n"
    "  strobe summary --top 5 trace.json.gz\n"
    "  strobe summary --json trace.json.zst | jq '.categories[] | select(.cat == \"kernel\")'\n"
    "  zcat old.json.gz | strobe summary -\n";

struct report {
	const char *file;
	const struct tr_stats *st;
	struct an_trace *s;
	size_t top;
	struct an_ref *phs, *cats, *xcats, *instants, *counters;
};

static int64_t key_count(const void *item)
{
	const struct an_count *c = item;
	return (int64_t)c->n;
}

static int64_t key_category(const void *item)
{
	const struct an_category *c = item;
	return c->total;
}

static int64_t key_instant(const void *item)
{
	const struct an_instant *c = item;
	return (int64_t)c->count;
}

static int64_t key_series(const void *item)
{
	const struct an_series *c = item;
	return (int64_t)c->count;
}

/* ---- human output -------------------------------------------------------- */

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

/* Prints s in a cell of width columns, right-aligned or left-aligned. A name
 * too long for it loses its middle: C++ kernel names differ at both ends. */
static void cell(const char *s, size_t width, bool right)
{
	size_t bytes = strlen(s), cols = columns(s, bytes);
	if (cols > width) {
		size_t head = (width - 1) * 2 / 3, tail = width - 1 - head;
		size_t hb = prefix_bytes(s, head), tb = prefix_bytes(s, cols - tail);
		printf("%.*s…%s", (int)hb, s, s + tb);
		return;
	}
	printf("%s%*s%s", right ? "" : s, (int)(width - cols), "", right ? s : "");
}

static void num_cell(uint64_t v, size_t width)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cell(buf, width, true);
}

static void dur_cell(int64_t ns)
{
	char buf[40];
	cell(an_fmt_dur(ns, buf, sizeof(buf)), DUR_W, true);
}

static const char *shown_cat(const char *cat)
{
	return *cat ? cat : "(none)";
}

static void name_rows(const struct an_trace *s, const struct an_ref *r, size_t n, const char *title)
{
	printf("  ");
	cell(title, NAME_W, false);
	cell("count", NUM_W, true);
	cell("total", DUR_W, true);
	cell("self", DUR_W, true);
	cell("mean", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < n; i++) {
		const struct an_name *sn = an_table_item(&s->names, r[i].id);
		printf("  ");
		cell(r[i].name, NAME_W, false);
		num_cell(sn->count, NUM_W);
		dur_cell(sn->total);
		dur_cell(sn->self);
		dur_cell(sn->total / (int64_t)sn->count);
		printf("\n");
	}
}

static void more_line(size_t total, size_t shown_n)
{
	if (total > shown_n)
		printf("  … %zu more (--top 0 shows all)\n", total - shown_n);
}

static int print_category(const struct report *rp, uint32_t cat)
{
	const struct an_trace *s = rp->s;
	const struct an_category *c = an_table_item(&s->xcats, cat);
	char total[40], self[40];
	printf("\n%s: %" PRIu64 " event%s, %" PRIu32 " name%s, total %s, self %s\n",
	       shown_cat(s->xcats.keys[cat]), c->events, c->events == 1 ? "" : "s", c->names,
	       c->names == 1 ? "" : "s", an_fmt_dur(c->total, total, sizeof(total)),
	       an_fmt_dur(c->self, self, sizeof(self)));
	size_t n;
	struct an_ref *r = an_names_of(s, cat, false, &n);
	if (!r)
		return -ENOMEM;
	struct an_ref *by_self = an_names_of(s, cat, true, &n);
	if (!by_self) {
		free(r);
		return -ENOMEM;
	}
	size_t rows = an_shown(n, rp->top);
	char title[64];
	snprintf(title, sizeof(title), "top %zu by total time", rows);
	name_rows(s, r, rows, title);
	/* The self column is already in the first table; a second one only
	 * helps when it would list other names or in another order. */
	bool same = true;
	for (size_t i = 0; i < rows && same; i++)
		same = r[i].id == by_self[i].id;
	if (!same) {
		snprintf(title, sizeof(title), "top %zu by self time", rows);
		name_rows(s, by_self, rows, title);
	}
	more_line(n, rows);
	free(r);
	free(by_self);
	return 0;
}

static const char *compression_name(enum tr_compression c)
{
	return c == TR_GZIP ? "gzip" : c == TR_ZSTD ? "zstd" : "none";
}

/* ---- GPU sections ---------------------------------------------------------- */

static void rank_heading(const struct an_trace *s, int64_t rank, int64_t *prev, const char *title)
{
	char buf[32];
	if (!s->ranked || *prev == rank)
		return;
	*prev = rank;
	printf("  %s:%s\n", an_rank_label(rank, buf, sizeof(buf)), title);
}

/* Prints " item" on the current line, or on a new indented one when it
 * would pass column 100. */
static void list_item(size_t *col, const char *item)
{
	size_t w = columns(item, strlen(item)) + 1;
	if (*col + w > 100) {
		printf("\n     ");
		*col = 5;
	}
	printf(" %s", item);
	*col += w;
}

static void print_devices(const struct report *rp)
{
	const struct an_trace *s = rp->s;
	char b1[40], b2[40], b3[40], label[TR_SHORT_MAX + 32], item[TR_SHORT_MAX + 64];
	printf("\nGPU devices: busy = union of kernels, copies and memsets (overlapping streams once)\n");
	printf("  ");
	cell("device", 38, false);
	cell("busy", DUR_W, true);
	cell("busy %", 8, true);
	cell("gaps", NUM_W, true);
	cell("idle", DUR_W, true);
	cell("longest gap", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < s->ndevices; i++) {
		const struct an_device *d = &s->devices[i];
		printf("  ");
		cell(an_device_label(s, d->pid, label, sizeof(label)), 38, false);
		dur_cell(d->busy);
		snprintf(b1, sizeof(b1), "%.1f%%", an_pct(d->busy, an_window(s)));
		cell(b1, 8, true);
		num_cell(d->gaps, NUM_W);
		dur_cell(d->gap_total);
		dur_cell(d->gap_max);
		printf("\n");
		if (d->ntop) {
			size_t col = (size_t)printf("    longest gaps:");
			for (size_t k = 0; k < d->ntop; k++) {
				snprintf(item, sizeof(item), "%s at +%s%s",
				         an_fmt_dur(d->top[k].dur, b1, sizeof(b1)),
				         an_fmt_dur(d->top[k].start - s->first_ts, b2, sizeof(b2)),
				         k + 1 < d->ntop ? "," : "");
				list_item(&col, item);
			}
			printf("\n");
		}
		size_t col = (size_t)printf("    streams (busy %% of the window):");
		for (size_t k = 0; k < d->nstreams; k++) {
			snprintf(item, sizeof(item), "%s %.1f%%%s", an_row_tid(s, d->streams[k].row),
			         an_pct(d->streams[k].busy, an_window(s)), k + 1 < d->nstreams ? "," : "");
			list_item(&col, item);
		}
		printf("\n");
		if (d->has_comm)
			printf("    NCCL %s, compute %s, both at once %s: %.1f%% of communication hidden\n",
			       an_fmt_dur(d->comm, b1, sizeof(b1)), an_fmt_dur(d->compute, b2, sizeof(b2)),
			       an_fmt_dur(d->both, b3, sizeof(b3)), an_pct(d->both, d->comm));
	}
}

static void print_kernels(const struct report *rp)
{
	const struct an_trace *s = rp->s;
	int64_t prev = INT64_MIN, head = INT64_MIN;
	size_t in_rank = 0;
	printf("\nkernels by total time\n  ");
	cell("name", 36, false);
	cell("count", NUM_W, true);
	cell("total", DUR_W, true);
	cell("mean", DUR_W, true);
	cell("p50", DUR_W, true);
	cell("p99", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < s->nkernel_stats; i++) {
		const struct an_kernel *k = &s->kernels[i];
		if (an_past_top(rp->top, k->rank, &prev, &in_rank))
			continue;
		rank_heading(s, k->rank, &head, "");
		printf("  ");
		cell(an_name(s, k->name), 36, false);
		num_cell(k->count, NUM_W);
		dur_cell(k->total);
		dur_cell(k->total / (int64_t)k->count);
		dur_cell(k->p50);
		dur_cell(k->p99);
		printf("\n");
	}
}

static void print_copies(const struct report *rp)
{
	const struct an_trace *s = rp->s;
	int64_t head = INT64_MIN;
	char buf[40];
	printf("\nmemcpy by direction\n  ");
	cell("kind", 36, false);
	cell("count", NUM_W, true);
	cell("bytes", 16, true);
	cell("total", DUR_W, true);
	cell("GB/s", 10, true);
	printf("\n");
	for (size_t i = 0; i < s->ncopy_stats; i++) {
		const struct an_copy_stat *c = &s->copy_stats[i];
		rank_heading(s, c->rank, &head, "");
		printf("  ");
		cell(c->dir, 36, false);
		num_cell(c->count, NUM_W);
		num_cell(c->bytes, 16);
		dur_cell(c->total);
		snprintf(buf, sizeof(buf), "%.3f", c->total > 0 ? (double)c->bytes / (double)c->total : 0);
		cell(buf, 10, true);
		printf("\n");
	}
}

static void print_latency(const struct report *rp)
{
	const struct an_trace *s = rp->s;
	char buf[32];
	printf("\nlaunch latency: kernel start - start of the runtime call that launched it\n  ");
	cell("", 12, false);
	cell("kernels", NUM_W, true);
	cell("unmatched", 10, true);
	cell("p50", DUR_W, true);
	cell("p90", DUR_W, true);
	cell("p99", DUR_W, true);
	cell("max", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < s->nlatency; i++) {
		const struct an_latency *l = &s->latency[i];
		printf("  ");
		cell(s->ranked ? an_rank_label(l->rank, buf, sizeof(buf)) : "all", 12, false);
		num_cell(l->kernels, NUM_W);
		num_cell(l->kernels - l->matched, 10);
		if (l->matched) {
			dur_cell(l->p50);
			dur_cell(l->p90);
			dur_cell(l->p99);
			dur_cell(l->max);
		}
		printf("\n");
	}
}

static void print_cpu_ops(const struct report *rp)
{
	const struct an_trace *s = rp->s;
	int64_t prev = INT64_MIN, head = INT64_MIN;
	size_t in_rank = 0;
	printf("\ncpu_op by self time, per rank\n  ");
	cell("name", NAME_W, false);
	cell("count", NUM_W, true);
	cell("total", DUR_W, true);
	cell("self", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < s->ncpu_ops; i++) {
		const struct an_cpu_op *op = &s->cpu_ops[i];
		if (an_past_top(rp->top, op->rank, &prev, &in_rank))
			continue;
		rank_heading(s, op->rank, &head, "");
		printf("  ");
		cell(an_name(s, op->name), NAME_W, false);
		num_cell(op->count, NUM_W);
		dur_cell(op->total);
		dur_cell(op->self);
		printf("\n");
	}
}

static void print_gpu(const struct report *rp)
{
	const struct an_trace *s = rp->s;
	char buf[32];
	if (s->ranked) {
		printf("\nranks:");
		for (size_t i = 0; i < s->nranks; i++)
			printf("%s %s", i ? "," : "",
			       s->ranks[i] >= 0 ? an_rank_label(s->ranks[i], buf, sizeof(buf)) + 5
			                        : "(pids without a rank)");
		printf(" (from process names \"rank N · ...\")\n");
	}
	if (s->ndevices)
		print_devices(rp);
	if (s->nkernel_stats)
		print_kernels(rp);
	if (s->ncopy_stats)
		print_copies(rp);
	if (s->nlatency)
		print_latency(rp);
	if (s->ranked && s->ncpu_ops)
		print_cpu_ops(rp);
}

static int print_human(struct report *rp)
{
	const struct an_trace *s = rp->s;
	const struct tr_stats *st = rp->st;
	char buf[40];

	if (st->perfetto)
		printf("file      %s (Perfetto protobuf, %" PRIu64 " bytes)\n", rp->file, st->json_bytes);
	else
		printf("file      %s (%s, %" PRIu64 " bytes of JSON)\n", rp->file,
		       st->compression == TR_PLAIN ? "plain JSON" : compression_name(st->compression),
		       st->json_bytes);
	printf("events    %" PRIu64 " (", st->events);
	for (size_t i = 0; i < s->phs.n; i++) {
		const struct an_count *c = an_table_item(&s->phs, rp->phs[i].id);
		printf("%s%s %" PRIu64, i ? ", " : "", *rp->phs[i].name ? rp->phs[i].name : "(no ph)", c->n);
	}
	printf(")\n");
	if (s->timed)
		printf("span      %s, from the first event's start to the last event's end\n",
		       an_fmt_dur(s->last_end - s->first_ts, buf, sizeof(buf)));
	else
		printf("span      none: no event has a timestamp\n");

	printf("\n");
	cell("category", NAME_W + 2, false);
	cell("events", NUM_W, true);
	cell("total", DUR_W, true);
	cell("self", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < s->cats.n; i++) {
		const char *name = rp->cats[i].name;
		const struct an_count *c = an_table_item(&s->cats, rp->cats[i].id);
		cell(shown_cat(name), NAME_W + 2, false);
		num_cell(c->n, NUM_W);
		/* Only complete events have a duration to add up. */
		const struct an_category *xc = an_table_find(&s->xcats, name);
		if (xc) {
			dur_cell(xc->total);
			dur_cell(xc->self);
		}
		printf("\n");
	}

	for (size_t i = 0; i < s->xcats.n; i++)
		if (print_category(rp, rp->xcats[i].id))
			return -ENOMEM;
	print_gpu(rp);

	size_t n = an_shown(s->instants.n, rp->top);
	printf("\ninstants: %zu name%s\n", s->instants.n, s->instants.n == 1 ? "" : "s");
	if (n) {
		printf("  ");
		cell("name", NAME_W, false);
		cell("count", NUM_W, true);
		printf("  category\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct an_instant *in = an_table_item(&s->instants, rp->instants[i].id);
		printf("  ");
		cell(rp->instants[i].name, NAME_W, false);
		num_cell(in->count, NUM_W);
		const char *cat = s->instants.keys[rp->instants[i].id];
		printf("  %.*s\n", in->cat_len ? (int)in->cat_len : 6, in->cat_len ? cat : "(none)");
	}
	more_line(s->instants.n, n);

	n = an_shown(s->counters.n, rp->top);
	printf("\ncounters: %zu series\n", s->counters.n);
	if (n) {
		printf("  ");
		cell("name (arg)", NAME_W, false);
		cell("count", NUM_W, true);
		cell("min", DUR_W, true);
		cell("max", DUR_W, true);
		cell("last", DUR_W, true);
		printf("\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct an_series *c = an_table_item(&s->counters, rp->counters[i].id);
		const char *key = s->counters.keys[rp->counters[i].id];
		const char *arg = rp->counters[i].name; /* the series, after the counter's name */
		char label[TR_NAME_MAX + TR_SHORT_MAX + 4];
		snprintf(label, sizeof(label), *arg ? "%.*s (%s)" : "%.*s%s", (int)c->name_len, key, arg);
		printf("  ");
		cell(label, NAME_W, false);
		num_cell(c->count, NUM_W);
		double v[3] = {c->min, c->max, c->last};
		for (int k = 0; k < 3; k++) {
			snprintf(buf, sizeof(buf), "%.6g", v[k]);
			cell(buf, DUR_W, true);
		}
		printf("\n");
	}
	more_line(s->counters.n, n);

	printf("\naccounting\n");
	if (!s->strobe_meta)
		printf("  (the trace has no \"strobe\" metadata with drop counts)\n");
	for (size_t i = 0; i < s->nmeta; i++) {
		printf("  ");
		cell(s->meta[i].key, NAME_W, false);
		cell(s->meta[i].raw, NUM_W, true);
		printf("\n");
	}
	struct an_loss counts[AN_LOSSES];
	an_losses(s, st, counts);
	for (size_t i = 0; i < AN_LOSSES; i++) {
		printf("  ");
		cell(counts[i].what, NAME_W, false);
		num_cell(counts[i].n, NUM_W);
		printf("\n");
	}
	return 0;
}

/* ---- JSON output ----------------------------------------------------------- */

static void gs(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void gi(yajl_gen g, const char *key, int64_t v)
{
	gs(g, key);
	yajl_gen_integer(g, v);
}

/* Doubles in their shortest exact form; yajl's own uses %.20g. */
static void gd(yajl_gen g, const char *key, double v)
{
	char buf[40];
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	gs(g, key);
	yajl_gen_number(g, buf, strlen(buf));
}

static void json_rows(yajl_gen g, const struct an_trace *s, const char *key, const struct an_ref *r, size_t n)
{
	gs(g, key);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n; i++) {
		const struct an_name *sn = an_table_item(&s->names, r[i].id);
		yajl_gen_map_open(g);
		gs(g, "name");
		gs(g, r[i].name);
		gi(g, "count", (int64_t)sn->count);
		gi(g, "total_ns", sn->total);
		gi(g, "self_ns", sn->self);
		gi(g, "mean_ns", sn->total / (int64_t)sn->count);
		gi(g, "max_ns", sn->max);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static void json_counts(yajl_gen g, const char *key, const struct an_table *t, const struct an_ref *r)
{
	gs(g, key);
	yajl_gen_map_open(g);
	for (size_t i = 0; i < t->n; i++) {
		const struct an_count *c = an_table_item(t, r[i].id);
		gi(g, r[i].name, (int64_t)c->n);
	}
	yajl_gen_map_close(g);
}

static void g_rank(yajl_gen g, int64_t rank)
{
	gs(g, "rank");
	if (rank >= 0)
		yajl_gen_integer(g, rank);
	else
		yajl_gen_null(g);
}

/* A pid or tid as the trace wrote it: a number stays a number. */
static void g_ident_key(yajl_gen g, const char *key)
{
	if (key[0] == 'n')
		yajl_gen_number(g, key + 1, strlen(key + 1));
	else
		gs(g, key + 1);
}

static void json_devices(yajl_gen g, const struct an_trace *s)
{
	char label[TR_SHORT_MAX + 32];
	gs(g, "gpu_devices");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->ndevices; i++) {
		const struct an_device *d = &s->devices[i];
		yajl_gen_map_open(g);
		gs(g, "pid");
		g_ident_key(g, s->pids.keys[d->pid]);
		gs(g, "name");
		gs(g, an_device_label(s, d->pid, label, sizeof(label)));
		g_rank(g, d->rank);
		gi(g, "events", (int64_t)d->events);
		gi(g, "busy_ns", d->busy);
		gd(g, "busy_pct", an_pct(d->busy, an_window(s)));
		gi(g, "first_ts_ns", d->first);
		gi(g, "last_end_ns", d->last);
		gs(g, "idle_gaps");
		yajl_gen_map_open(g);
		gi(g, "count", (int64_t)d->gaps);
		gi(g, "total_ns", d->gap_total);
		gi(g, "longest_ns", d->gap_max);
		gs(g, "longest");
		yajl_gen_array_open(g);
		for (size_t k = 0; k < d->ntop; k++) {
			yajl_gen_map_open(g);
			gi(g, "start_ns", d->top[k].start);
			gi(g, "duration_ns", d->top[k].dur);
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
		gs(g, "streams");
		yajl_gen_array_open(g);
		for (size_t k = 0; k < d->nstreams; k++) {
			const struct an_row *row = an_table_item(&s->rows, d->streams[k].row);
			yajl_gen_map_open(g);
			gs(g, "tid");
			g_ident_key(g, s->rows.keys[d->streams[k].row] + row->tid_off - 1);
			gi(g, "events", (int64_t)d->streams[k].events);
			gi(g, "busy_ns", d->streams[k].busy);
			gd(g, "busy_pct", an_pct(d->streams[k].busy, an_window(s)));
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		gs(g, "comm_compute");
		if (d->has_comm) {
			yajl_gen_map_open(g);
			gi(g, "comm_ns", d->comm);
			gi(g, "compute_ns", d->compute);
			gi(g, "both_ns", d->both);
			gd(g, "hidden_pct", an_pct(d->both, d->comm));
			yajl_gen_map_close(g);
		} else {
			yajl_gen_null(g);
		}
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static void json_gpu(yajl_gen g, const struct report *rp)
{
	const struct an_trace *s = rp->s;
	gs(g, "ranks");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->nranks; i++)
		if (s->ranks[i] >= 0)
			yajl_gen_integer(g, s->ranks[i]);
	yajl_gen_array_close(g);
	json_devices(g, s);

	int64_t prev = INT64_MIN;
	size_t in_rank = 0;
	gs(g, "kernels");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->nkernel_stats; i++) {
		const struct an_kernel *k = &s->kernels[i];
		if (an_past_top(rp->top, k->rank, &prev, &in_rank))
			continue;
		yajl_gen_map_open(g);
		g_rank(g, k->rank);
		gs(g, "name");
		gs(g, an_name(s, k->name));
		gi(g, "count", (int64_t)k->count);
		gi(g, "total_ns", k->total);
		gi(g, "mean_ns", k->total / (int64_t)k->count);
		gi(g, "p50_ns", k->p50);
		gi(g, "p99_ns", k->p99);
		gi(g, "max_ns", k->max);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);

	gs(g, "memcpy");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->ncopy_stats; i++) {
		const struct an_copy_stat *c = &s->copy_stats[i];
		yajl_gen_map_open(g);
		g_rank(g, c->rank);
		gs(g, "kind");
		gs(g, c->dir);
		gi(g, "count", (int64_t)c->count);
		gi(g, "bytes", (int64_t)c->bytes);
		gi(g, "total_ns", c->total);
		gd(g, "gb_per_s", c->total > 0 ? (double)c->bytes / (double)c->total : 0);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);

	gs(g, "launch_latency");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->nlatency; i++) {
		const struct an_latency *l = &s->latency[i];
		yajl_gen_map_open(g);
		g_rank(g, l->rank);
		gi(g, "kernels", (int64_t)l->kernels);
		gi(g, "matched", (int64_t)l->matched);
		gi(g, "unmatched", (int64_t)(l->kernels - l->matched));
		gi(g, "p50_ns", l->p50);
		gi(g, "p90_ns", l->p90);
		gi(g, "p99_ns", l->p99);
		gi(g, "max_ns", l->max);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);

	prev = INT64_MIN;
	gs(g, "cpu_ops_by_self");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->ncpu_ops; i++) {
		const struct an_cpu_op *op = &s->cpu_ops[i];
		if (an_past_top(rp->top, op->rank, &prev, &in_rank))
			continue;
		yajl_gen_map_open(g);
		g_rank(g, op->rank);
		gs(g, "name");
		gs(g, an_name(s, op->name));
		gi(g, "count", (int64_t)op->count);
		gi(g, "total_ns", op->total);
		gi(g, "self_ns", op->self);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static int print_json(struct report *rp)
{
	const struct an_trace *s = rp->s;
	const struct tr_stats *st = rp->st;
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return -ENOMEM;
	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_config(g, yajl_gen_indent_string, "  ");
	int rc = 0;

	yajl_gen_map_open(g);
	gs(g, "file");
	gs(g, rp->file);
	gs(g, "format");
	gs(g, st->perfetto ? "perfetto" : "json");
	gs(g, "compression");
	gs(g, compression_name(st->compression));
	gi(g, "file_bytes", (int64_t)st->file_bytes);
	gi(g, "json_bytes", (int64_t)st->json_bytes);
	gi(g, "events", (int64_t)st->events);
	gs(g, "span");
	if (s->timed) {
		yajl_gen_map_open(g);
		gi(g, "first_ts_ns", s->first_ts);
		gi(g, "last_end_ns", s->last_end);
		gi(g, "duration_ns", s->last_end - s->first_ts);
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	json_counts(g, "by_ph", &s->phs, rp->phs);
	json_counts(g, "by_cat", &s->cats, rp->cats);

	gs(g, "categories");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->xcats.n && !rc; i++) {
		uint32_t cat = rp->xcats[i].id;
		const struct an_category *c = an_table_item(&s->xcats, cat);
		yajl_gen_map_open(g);
		gs(g, "cat");
		gs(g, s->xcats.keys[cat]);
		gi(g, "events", (int64_t)c->events);
		gi(g, "names", c->names);
		gi(g, "total_ns", c->total);
		gi(g, "self_ns", c->self);
		for (int by_self = 0; by_self < 2 && !rc; by_self++) {
			size_t n;
			struct an_ref *r = an_names_of(s, cat, by_self, &n);
			if (!r) {
				rc = -ENOMEM;
				break;
			}
			json_rows(g, s, by_self ? "top_by_self" : "top_by_total", r, an_shown(n, rp->top));
			free(r);
		}
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);

	gs(g, "instants");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < an_shown(s->instants.n, rp->top); i++) {
		const struct an_instant *in = an_table_item(&s->instants, rp->instants[i].id);
		yajl_gen_map_open(g);
		gs(g, "cat");
		yajl_gen_string(g, (const unsigned char *)s->instants.keys[rp->instants[i].id], in->cat_len);
		gs(g, "name");
		gs(g, rp->instants[i].name);
		gi(g, "count", (int64_t)in->count);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gi(g, "instant_names", (int64_t)s->instants.n);

	gs(g, "counters");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < an_shown(s->counters.n, rp->top); i++) {
		const struct an_series *c = an_table_item(&s->counters, rp->counters[i].id);
		yajl_gen_map_open(g);
		gs(g, "name");
		yajl_gen_string(g, (const unsigned char *)s->counters.keys[rp->counters[i].id], c->name_len);
		gs(g, "key");
		gs(g, rp->counters[i].name);
		gi(g, "count", (int64_t)c->count);
		gd(g, "min", c->min);
		gd(g, "max", c->max);
		gd(g, "last", c->last);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gi(g, "counter_series", (int64_t)s->counters.n);
	json_gpu(g, rp);

	gs(g, "accounting");
	yajl_gen_map_open(g);
	gs(g, "strobe");
	if (s->strobe_meta) {
		yajl_gen_map_open(g);
		for (size_t i = 0; i < s->nmeta; i++) {
			gs(g, s->meta[i].key);
			yajl_gen_number(g, s->meta[i].raw, strlen(s->meta[i].raw));
		}
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	struct an_loss losses[AN_LOSSES];
	an_losses(s, st, losses);
	for (size_t i = 0; i < AN_LOSSES; i++)
		gi(g, losses[i].key, (int64_t)losses[i].n);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);

	const unsigned char *out;
	size_t len;
	if (!rc && yajl_gen_get_buf(g, &out, &len) == yajl_gen_status_ok)
		fwrite(out, 1, len, stdout);
	yajl_gen_free(g);
	return rc;
}

/* ---- the command ----------------------------------------------------------- */

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "strobe: summary: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: strobe summary [--top N] [--json] FILE (see strobe summary --help)\n");
	return 2;
}

static int report(const char *file, const struct tr_stats *st, struct an_trace *s, size_t top, bool json)
{
	struct report rp = {.file = file, .st = st, .s = s, .top = top};
	int rc = -ENOMEM;
	rp.phs = an_refs_of(&s->phs, UINT32_MAX, key_count);
	rp.cats = an_refs_of(&s->cats, UINT32_MAX, key_count);
	rp.xcats = an_refs_of(&s->xcats, UINT32_MAX, key_category);
	rp.instants = an_refs_of(&s->instants, offsetof(struct an_instant, cat_len), key_instant);
	rp.counters = an_refs_of(&s->counters, offsetof(struct an_series, name_len), key_series);
	if (rp.phs && rp.cats && rp.xcats && rp.instants && rp.counters)
		rc = json ? print_json(&rp) : print_human(&rp);
	free(rp.phs);
	free(rp.cats);
	free(rp.xcats);
	free(rp.instants);
	free(rp.counters);
	return rc;
}

int cmd_summary(int argc, char **argv)
{
	size_t top = DEFAULT_TOP;
	bool json = false;
	const char *file = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--top") || !strncmp(a, "--top=", 6)) {
			val = a[5] == '=' ? a + 6 : i + 1 < argc ? argv[++i] : NULL;
			if (!val)
				return usage_error("%s needs a number", a);
			if (!an_parse_top(val, &top))
				return usage_error("--top wants a count from 0 to 1000000, not '%s'", val);
		} else if (!strcmp(a, "--")) {
			if (i + 2 != argc || file)
				return usage_error("%s", i + 1 < argc ? "give one trace file"
				                                      : "no trace file given");
			file = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (file) {
			return usage_error("one trace file at a time ('%s' is a second)", a);
		} else {
			file = a;
		}
	}
	if (!file)
		return usage_error("%s", "no trace file given");

	struct an_trace s = {0};
	struct tr_stats st;
	char err[512];
	int rc = an_read(&s, file, &st, err, sizeof(err));
	if (!rc && report(file, &st, &s, top, json))
		rc = snprintf(err, sizeof(err), "%s: out of memory", file);
	if (rc)
		fprintf(stderr, "strobe: %s\n", err);
	an_free(&s);
	return rc ? 1 : 0;
}

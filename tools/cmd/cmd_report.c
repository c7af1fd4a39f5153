/* strobe report: the summary of a trace as one self-contained HTML page
 * (inline CSS, inline SVG drawn by inline script; nothing fetched), from the
 * same single streaming pass as strobe summary. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "analysis/analysis.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "common/sink.h"
#include "strobe/strobe.h"

#define DEFAULT_TOP       20
#define MAX_CHART_DEVICES 64 /* timelines drawn; the devices table lists them all */

static const char usage_text[] =
    "usage: strobe report [--top N] [-o OUT.html] FILE\n"
    "\n"
    "Writes one self-contained HTML page about a trace file (plain, gzip or zstd JSON, or\n"
    "Perfetto, as for strobe summary; FILE \"-\" reads stdin): the trace's facts (file,\n"
    "window, host, ranks, the drops and warnings it records), a GPU utilisation timeline\n"
    "per device (busy fraction in each of 200 slices of the window), a bar chart of kernel\n"
    "time by name, busy % per stream, and the summary's tables (devices and idle gaps,\n"
    "kernels with p50/p99, memcpy by direction, launch latency, NCCL overlap, top names by\n"
    "total and self time per category). The page needs no network: open it anywhere. Tables and\n"
    "charts show the top N rows and say how many more there are; timelines are drawn for\n"
    "the first 64 devices.\n"
    "\n"
    "The file is written under a temporary name and renamed into place when complete.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT  the page to write (default: FILE without .json/.gz/.zst, plus\n"
    "                    .html; required when FILE is -)\n"
    "  --top N           rows per table and bars per chart (default 20; 0 shows all)\n"
    "  -h, --help        show this text\n"
    "\n"
    "exit status: 0 written, 1 the trace cannot be read or the page cannot be written,\n"
    "2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe report trace.json -o report.html\n"
    "  strobe report --top 50 rank0.json.gz          # writes rank0.html\n"
    "  zcat old.json.gz | strobe report - -o old.html\n";

/* ---- the page being built ------------------------------------------------- */

struct page {
	char *buf;
	size_t n, cap;
	bool oom;
};

static void put(struct page *p, const char *s, size_t n)
{
	if (p->oom)
		return;
	if (p->n + n + 1 > p->cap) {
		size_t cap = p->cap ? p->cap : 65536;
		while (cap < p->n + n + 1)
			cap *= 2;
		char *b = realloc(p->buf, cap);
		if (!b) {
			p->oom = true;
			return;
		}
		p->buf = b;
		p->cap = cap;
	}
	memcpy(p->buf + p->n, s, n);
	p->n += n;
	p->buf[p->n] = 0;
}

static void puts_(struct page *p, const char *s)
{
	put(p, s, strlen(s));
}

__attribute__((format(printf, 2, 3))) static void putf(struct page *p, const char *fmt, ...)
{
	char small[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(small)) {
		put(p, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (!big) {
		p->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	put(p, big, (size_t)n);
	free(big);
}

/* Text from the trace, safe in element content and in quoted attributes. */
static void esc(struct page *p, const char *s)
{
	for (const char *run = s;; s++) {
		const char *rep = *s == '&'    ? "&amp;"
		                  : *s == '<'  ? "&lt;"
		                  : *s == '>'  ? "&gt;"
		                  : *s == '"'  ? "&quot;"
		                  : *s == '\'' ? "&#39;"
		                               : NULL;
		if (!rep && *s)
			continue;
		put(p, run, (size_t)(s - run));
		if (!*s)
			return;
		puts_(p, rep);
		run = s + 1;
	}
}

static void cell_text(struct page *p, const char *s)
{
	puts_(p, "<td>");
	esc(p, s);
	puts_(p, "</td>");
}

static void cell_dur(struct page *p, int64_t ns)
{
	char buf[40];
	putf(p, "<td class=\"n\">%s</td>", an_fmt_dur(ns, buf, sizeof(buf)));
}

static void cell_u(struct page *p, uint64_t v)
{
	putf(p, "<td class=\"n\">%" PRIu64 "</td>", v);
}

static void cell_pct(struct page *p, double v)
{
	putf(p, "<td class=\"n\">%.1f%%</td>", v);
}

/* <table> with its header row; columns named "#..." are right-aligned. */
static void table_open(struct page *p, const char *id, const char *const *cols)
{
	putf(p, "<table id=\"%s\"><thead><tr>", id);
	for (; *cols; cols++)
		putf(p, "<th%s>%s</th>", **cols == '#' ? " class=\"n\"" : "", *cols + (**cols == '#'));
	puts_(p, "</tr></thead><tbody>\n");
}

static void table_close(struct page *p, size_t total, size_t shown)
{
	puts_(p, "</tbody></table>\n");
	if (total > shown)
		putf(p, "<p class=\"more\">%zu more not shown (--top 0 shows all).</p>\n", total - shown);
}

static void rank_cell(struct page *p, const struct an_trace *a, int64_t rank)
{
	char buf[32];
	if (a->ranked)
		cell_text(p, an_rank_label(rank, buf, sizeof(buf)));
}

/* ---- sections --------------------------------------------------------------- */

static const char style[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px;color:#1d2330;"
    "max-width:1200px}\n"
    "h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dce5}\n"
    "table{border-collapse:collapse;margin:6px 0;font-size:13px}\n"
    "th,td{padding:3px 10px;text-align:left;border-bottom:1px solid #eceef3;vertical-align:top}\n"
    "th{background:#f4f5f8;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}\n"
    "td.name{max-width:560px;overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:12px}\n"
    ".warn{color:#a4262c;font-weight:600}.more,.note{color:#5b6475;font-size:12px}\n"
    "#errors{color:#a4262c;white-space:pre-wrap}\n"
    "svg{display:block;margin:4px 0}svg text{font:11px system-ui,sans-serif;fill:#3b4252}\n"
    ".util rect.bg{fill:#f4f5f8}.util rect.b{fill:#3d7dd8}.bars rect.bar{fill:#5a9e6f}"
    ".occ rect.bar{fill:#c98a2b}\n"
    ".facts td:first-child{color:#5b6475}\n";

static void facts(struct page *p, const struct an_trace *a, const char *file, const struct tr_stats *st)
{
	char b1[40];
	puts_(p, "<table id=\"facts\" class=\"facts\"><tbody>\n<tr><td>file</td>");
	cell_text(p, file);
	if (st->perfetto)
		putf(p, "</tr>\n<tr><td>size</td><td>%" PRIu64 " bytes (Perfetto protobuf)</td></tr>\n",
		     st->file_bytes);
	else
		putf(p, "</tr>\n<tr><td>size</td><td>%" PRIu64 " bytes (%s), %" PRIu64 " bytes of JSON</td></tr>\n",
		     st->file_bytes,
		     st->compression == TR_GZIP   ? "gzip"
		     : st->compression == TR_ZSTD ? "zstd"
		                                  : "plain",
		     st->json_bytes);
	putf(p, "<tr><td>events</td><td>%" PRIu64 "</td></tr>\n", st->events);
	if (a->timed)
		putf(p,
		     "<tr><td>window</td><td>%s, ts %" PRId64 " to %" PRId64
		     " ns after baseTimeNanoseconds</td></tr>\n",
		     an_fmt_dur(an_window(a), b1, sizeof(b1)), a->first_ts, a->last_end);
	else
		puts_(p, "<tr><td>window</td><td>none: no event has a timestamp</td></tr>\n");
	if (a->host_name) {
		puts_(p, "<tr><td>host</td>");
		cell_text(p, a->host_name);
		puts_(p, "</tr>\n");
	}
	if (a->has_dist_rank)
		putf(p, "<tr><td>rank</td><td>%" PRId64 " (distributedInfo)</td></tr>\n", a->dist_rank);
	if (a->ranked) {
		puts_(p, "<tr><td>ranks</td><td>");
		for (size_t i = 0; i < a->nranks; i++)
			if (a->ranks[i] >= 0)
				putf(p, "%s%" PRId64, i ? ", " : "", a->ranks[i]);
		puts_(p, "</td></tr>\n");
	}
	puts_(p, "</tbody></table>\n");
}

static void accounting(struct page *p, const struct an_trace *a, const struct tr_stats *st)
{
	puts_(p, "<h2>Drops and warnings</h2>\n");
	if (!a->strobe_meta)
		puts_(p, "<p class=\"note\">The trace has no \"strobe\" metadata with drop counts.</p>\n");
	static const char *const cols[] = {"what", "#count", NULL};
	table_open(p, "accounting", cols);
	for (size_t i = 0; i < a->nmeta; i++) {
		/* Nonzero counts of what was lost stand out; sizes and versions do not. */
		bool loss = strcmp(a->meta[i].raw, "0") &&
		            (strstr(a->meta[i].key, "drop") || strstr(a->meta[i].key, "unfinished") ||
		             strstr(a->meta[i].key, "truncated") || strstr(a->meta[i].key, "unmatched") ||
		             strstr(a->meta[i].key, "non_finite") || strstr(a->meta[i].key, "out_of") ||
		             strstr(a->meta[i].key, "rejected"));
		putf(p, "<tr%s>", loss ? " class=\"warn\"" : "");
		cell_text(p, a->meta[i].key);
		puts_(p, "<td class=\"n\">");
		esc(p, a->meta[i].raw);
		puts_(p, "</td></tr>\n");
	}
	struct an_loss counts[AN_LOSSES];
	an_losses(a, st, counts);
	for (size_t i = 0; i < AN_LOSSES; i++) {
		putf(p, "<tr%s>", counts[i].n ? " class=\"warn\"" : "");
		cell_text(p, counts[i].what);
		cell_u(p, counts[i].n);
		puts_(p, "</tr>\n");
	}
	table_close(p, 0, 0);
}

static void devices(struct page *p, const struct an_trace *a)
{
	char label[TR_SHORT_MAX + 32], b1[40], b2[40];
	puts_(p, "<h2>GPU utilisation</h2>\n<p class=\"note\">Busy fraction of each device in 200 slices "
	         "of the trace window (busy = the union of its kernels, copies and memsets).</p>\n");
	size_t drawn = a->ndevices < MAX_CHART_DEVICES ? a->ndevices : MAX_CHART_DEVICES;
	for (size_t i = 0; i < drawn; i++) {
		putf(p, "<div class=\"device\"><b>");
		esc(p, an_device_label(a, a->devices[i].pid, label, sizeof(label)));
		putf(p,
		     "</b> busy %.1f%%<svg id=\"util-%zu\" class=\"util\" width=\"1000\" "
		     "height=\"70\"></svg></div>\n",
		     an_pct(a->devices[i].busy, an_window(a)), i);
	}
	if (drawn < a->ndevices)
		putf(p,
		     "<p class=\"more\">%zu more devices not drawn here or in the stream chart; the table "
		     "below lists them all.</p>\n",
		     a->ndevices - drawn);
	puts_(p, "<h2>GPU devices</h2>\n");
	static const char *const cols[] = {
	    "device",     "#events", "#busy",        "#busy %",
	    "#idle gaps", "#idle",   "#longest gap", "longest gaps (start in the window)",
	    NULL};
	table_open(p, "devices", cols);
	for (size_t i = 0; i < a->ndevices; i++) {
		const struct an_device *d = &a->devices[i];
		puts_(p, "<tr>");
		cell_text(p, an_device_label(a, d->pid, label, sizeof(label)));
		cell_u(p, d->events);
		cell_dur(p, d->busy);
		cell_pct(p, an_pct(d->busy, an_window(a)));
		cell_u(p, d->gaps);
		cell_dur(p, d->gap_total);
		cell_dur(p, d->gap_max);
		puts_(p, "<td>");
		for (size_t k = 0; k < d->ntop; k++)
			putf(p, "%s%s at +%s", k ? "<br>" : "", an_fmt_dur(d->top[k].dur, b1, sizeof(b1)),
			     an_fmt_dur(d->top[k].start - a->first_ts, b2, sizeof(b2)));
		puts_(p, "</td></tr>\n");
	}
	table_close(p, 0, 0);

	bool comm = false;
	for (size_t i = 0; i < a->ndevices; i++)
		comm |= a->devices[i].has_comm;
	if (comm) {
		puts_(p, "<h2>Communication and compute</h2>\n<p class=\"note\">NCCL kernels against the "
		         "other kernels on the same device: time both ran at once, and the share of "
		         "communication it hid.</p>\n");
		static const char *const ccols[] = {"device", "#NCCL", "#compute", "#both", "#hidden", NULL};
		table_open(p, "overlap", ccols);
		for (size_t i = 0; i < a->ndevices; i++) {
			const struct an_device *d = &a->devices[i];
			if (!d->has_comm)
				continue;
			puts_(p, "<tr>");
			cell_text(p, an_device_label(a, d->pid, label, sizeof(label)));
			cell_dur(p, d->comm);
			cell_dur(p, d->compute);
			cell_dur(p, d->both);
			cell_pct(p, an_pct(d->both, d->comm));
			puts_(p, "</tr>\n");
		}
		table_close(p, 0, 0);
	}
	puts_(p, "<h2>Stream occupancy</h2>\n<p class=\"note\">Busy % of the window per stream.</p>\n"
	         "<svg id=\"stream-occupancy\" class=\"occ\" width=\"1000\" height=\"20\"></svg>\n");
}

static void kernels(struct page *p, const struct an_trace *a, size_t top)
{
	puts_(
	    p,
	    "<h2>Kernels</h2>\n<svg id=\"kernel-bars\" class=\"bars\" width=\"1000\" height=\"20\"></svg>\n");
	static const char *const cols[] = {"rank", "name", "#count", "#total", "#mean",
	                                   "#p50", "#p99", "#max",   NULL};
	table_open(p, "kernels", a->ranked ? cols : cols + 1);
	size_t n = 0, in_rank = 0;
	int64_t prev = INT64_MIN;
	for (size_t i = 0; i < a->nkernel_stats; i++) {
		const struct an_kernel *k = &a->kernels[i];
		if (an_past_top(top, k->rank, &prev, &in_rank))
			continue;
		n++;
		puts_(p, "<tr>");
		rank_cell(p, a, k->rank);
		puts_(p, "<td class=\"name\">");
		esc(p, an_name(a, k->name));
		puts_(p, "</td>");
		cell_u(p, k->count);
		cell_dur(p, k->total);
		cell_dur(p, k->total / (int64_t)k->count);
		cell_dur(p, k->p50);
		cell_dur(p, k->p99);
		cell_dur(p, k->max);
		puts_(p, "</tr>\n");
	}
	table_close(p, a->nkernel_stats, n);
}

static void copies_and_latency(struct page *p, const struct an_trace *a)
{
	if (a->ncopy_stats) {
		puts_(p, "<h2>Memory copies</h2>\n");
		static const char *const cols[] = {"rank",  "direction", "#count", "#bytes",
		                                   "#time", "#GB/s",     NULL};
		table_open(p, "memcpy", a->ranked ? cols : cols + 1);
		for (size_t i = 0; i < a->ncopy_stats; i++) {
			const struct an_copy_stat *c = &a->copy_stats[i];
			puts_(p, "<tr>");
			rank_cell(p, a, c->rank);
			cell_text(p, c->dir);
			cell_u(p, c->count);
			cell_u(p, c->bytes);
			cell_dur(p, c->total);
			putf(p, "<td class=\"n\">%.3f</td></tr>\n",
			     c->total > 0 ? (double)c->bytes / (double)c->total : 0);
		}
		table_close(p, 0, 0);
	}
	if (a->nlatency) {
		puts_(
		    p,
		    "<h2>Launch latency</h2>\n<p class=\"note\">Kernel start minus the start of the runtime "
		    "or driver call that launched it (same correlation id).</p>\n");
		static const char *const cols[] = {"rank", "#kernels", "#unmatched", "#p50",
		                                   "#p90", "#p99",     "#max",       NULL};
		table_open(p, "latency", a->ranked ? cols : cols + 1);
		for (size_t i = 0; i < a->nlatency; i++) {
			const struct an_latency *l = &a->latency[i];
			puts_(p, "<tr>");
			rank_cell(p, a, l->rank);
			cell_u(p, l->kernels);
			cell_u(p, l->kernels - l->matched);
			cell_dur(p, l->p50);
			cell_dur(p, l->p90);
			cell_dur(p, l->p99);
			cell_dur(p, l->max);
			puts_(p, "</tr>\n");
		}
		table_close(p, 0, 0);
	}
}

static void cpu_ops(struct page *p, const struct an_trace *a, size_t top)
{
	if (!a->ncpu_ops)
		return;
	puts_(p, "<h2>CPU ops by self time</h2>\n");
	static const char *const cols[] = {"rank", "name", "#count", "#total", "#self", NULL};
	table_open(p, "cpu-ops", a->ranked ? cols : cols + 1);
	size_t n = 0, in_rank = 0;
	int64_t prev = INT64_MIN;
	for (size_t i = 0; i < a->ncpu_ops; i++) {
		const struct an_cpu_op *op = &a->cpu_ops[i];
		if (an_past_top(top, op->rank, &prev, &in_rank))
			continue;
		n++;
		puts_(p, "<tr>");
		rank_cell(p, a, op->rank);
		puts_(p, "<td class=\"name\">");
		esc(p, an_name(a, op->name));
		puts_(p, "</td>");
		cell_u(p, op->count);
		cell_dur(p, op->total);
		cell_dur(p, op->self);
		puts_(p, "</tr>\n");
	}
	table_close(p, a->ncpu_ops, n);
}

static int64_t key_category(const void *item)
{
	const struct an_category *c = item;
	return c->total;
}

static int categories(struct page *p, const struct an_trace *a, size_t top)
{
	struct an_ref *cats = an_refs_of(&a->xcats, UINT32_MAX, key_category);
	if (!cats)
		return -ENOMEM;
	puts_(p, "<h2>Time by category</h2>\n");
	static const char *const cols[] = {"category", "#events", "#names", "#total", "#self", NULL};
	table_open(p, "categories", cols);
	for (size_t i = 0; i < a->xcats.n; i++) {
		const struct an_category *c = an_table_item(&a->xcats, cats[i].id);
		puts_(p, "<tr>");
		cell_text(p, *cats[i].name ? cats[i].name : "(none)");
		cell_u(p, c->events);
		cell_u(p, c->names);
		cell_dur(p, c->total);
		cell_dur(p, c->self);
		puts_(p, "</tr>\n");
	}
	table_close(p, 0, 0);
	int rc = 0;
	for (size_t i = 0; i < a->xcats.n && !rc; i++) {
		size_t n;
		struct an_ref *r = an_names_of(a, cats[i].id, true, &n);
		if (!r) {
			rc = -ENOMEM;
			break;
		}
		puts_(p, "<h3>");
		esc(p, *cats[i].name ? cats[i].name : "(none)");
		puts_(p, ": top names by self time</h3>\n");
		static const char *const ncols[] = {"name", "#count", "#total", "#self", "#mean", NULL};
		char id[32];
		snprintf(id, sizeof(id), "names-%zu", i);
		table_open(p, id, ncols);
		for (size_t k = 0; k < an_shown(n, top); k++) {
			const struct an_name *sn = an_table_item(&a->names, r[k].id);
			puts_(p, "<tr><td class=\"name\">");
			esc(p, r[k].name);
			puts_(p, "</td>");
			cell_u(p, sn->count);
			cell_dur(p, sn->total);
			cell_dur(p, sn->self);
			cell_dur(p, sn->total / (int64_t)sn->count);
			puts_(p, "</tr>\n");
		}
		table_close(p, n, an_shown(n, top));
		free(r);
	}
	free(cats);
	return rc;
}

/* ---- chart data and the script that draws it -------------------------------- */

static void gs(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void gnum(yajl_gen g, const char *key, double v)
{
	char buf[40];
	snprintf(buf, sizeof(buf), "%.6g", v);
	gs(g, key);
	yajl_gen_number(g, buf, strlen(buf));
}

/* The numbers the charts need, as JSON inside a script element: "<" is
 * written \u003c so no string from the trace can close the element. */
/* Kernel indexes by total time, largest first; equal totals keep their
 * order (the index breaks ties), as a stable sort would. */
static const struct an_kernel *by_total_base;

static int by_total(const void *x, const void *y)
{
	size_t i = *(const size_t *)x, j = *(const size_t *)y;
	int64_t ti = by_total_base[i].total, tj = by_total_base[j].total;
	if (ti != tj)
		return ti > tj ? -1 : 1;
	return (i > j) - (i < j);
}

static void chart_data(struct page *p, const struct an_trace *a, size_t top)
{
	char label[TR_SHORT_MAX + 32], buf[32];
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g) {
		p->oom = true;
		return;
	}
	yajl_gen_map_open(g);
	gnum(g, "window_ns", (double)an_window(a));
	gs(g, "devices");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < a->ndevices && i < MAX_CHART_DEVICES; i++) {
		const struct an_device *d = &a->devices[i];
		yajl_gen_map_open(g);
		gs(g, "name");
		gs(g, an_device_label(a, d->pid, label, sizeof(label)));
		gs(g, "buckets");
		yajl_gen_array_open(g);
		for (size_t b = 0; b < AN_BUCKETS; b++) {
			snprintf(buf, sizeof(buf), "%.3f", d->buckets[b] > 1 ? 1.0 : d->buckets[b]);
			yajl_gen_number(g, buf, strlen(buf));
		}
		yajl_gen_array_close(g);
		gs(g, "streams");
		yajl_gen_array_open(g);
		for (size_t k = 0; k < d->nstreams; k++) {
			yajl_gen_map_open(g);
			gs(g, "tid");
			gs(g, an_row_tid(a, d->streams[k].row));
			gnum(g, "busy_pct", an_pct(d->streams[k].busy, an_window(a)));
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gs(g, "kernels");
	yajl_gen_array_open(g);
	/* The chart ranks all kernels by total time, across ranks. */
	size_t *order = malloc((a->nkernel_stats ? a->nkernel_stats : 1) * sizeof(*order)), n = a->nkernel_stats;
	if (order) {
		for (size_t i = 0; i < n; i++)
			order[i] = i;
		by_total_base = a->kernels;
		qsort(order, n, sizeof(*order), by_total);
		for (size_t i = 0; i < an_shown(n, top); i++) {
			const struct an_kernel *k = &a->kernels[order[i]];
			yajl_gen_map_open(g);
			gs(g, "name");
			if (a->ranked) {
				snprintf(label, sizeof(label),
				         "%s: ", an_rank_label(k->rank, buf, sizeof(buf)));
				size_t l = strlen(label);
				snprintf(label + l, sizeof(label) - l, "%.200s", an_name(a, k->name));
				gs(g, label);
			} else {
				gs(g, an_name(a, k->name));
			}
			gnum(g, "total_ns", (double)k->total);
			gnum(g, "count", (double)k->count);
			yajl_gen_map_close(g);
		}
	} else {
		p->oom = true;
	}
	free(order);
	yajl_gen_array_close(g);
	gnum(g, "kernels_not_shown", (double)(n - an_shown(n, top)));
	yajl_gen_map_close(g);

	const unsigned char *out;
	size_t len;
	if (yajl_gen_get_buf(g, &out, &len) == yajl_gen_status_ok) {
		puts_(p, "<script type=\"application/json\" id=\"data\">");
		const char *s = (const char *)out, *run = s;
		for (size_t i = 0; i < len; i++)
			if (s[i] == '<') {
				put(p, run, (size_t)(s + i - run));
				puts_(p, "\\u003c");
				run = s + i + 1;
			}
		put(p, run, (size_t)(s + len - run));
		puts_(p, "</script>\n");
	} else {
		p->oom = true;
	}
	yajl_gen_free(g);
}

/* Draws the charts into the SVG elements the page already has. Errors go
 * into #errors and data-rendered says whether drawing finished. */
static const char script[] =
    "<script>\n"
    "window.addEventListener('error', function (e) {\n"
    "  document.getElementById('errors').textContent += 'script error: ' + e.message + '\\n';\n"
    "  document.body.dataset.rendered = 'error';\n"
    "});\n"
    "(function () {\n"
    "  var D = JSON.parse(document.getElementById('data').textContent);\n"
    "  var NS = 'http://www.w3.org/2000/svg';\n"
    "  function el(tag, attrs, parent, text) {\n"
    "    var e = document.createElementNS(NS, tag);\n"
    "    for (var k in attrs) e.setAttribute(k, attrs[k]);\n"
    "    if (text !== undefined) e.textContent = text;\n"
    "    parent.appendChild(e);\n"
    "    return e;\n"
    "  }\n"
    "  function dur(ns) {\n"
    "    var u = [[1e9, 's'], [1e6, 'ms'], [1e3, '\\u00b5s']];\n"
    "    for (var i = 0; i < u.length; i++) if (ns >= u[i][0]) return (ns / u[i][0]).toFixed(3) + ' ' + "
    "u[i][1];\n"
    "    return ns + ' ns';\n"
    "  }\n"
    "  function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + '\\u2026' : s; }\n"
    "  D.devices.forEach(function (d, i) {\n"
    "    var svg = document.getElementById('util-' + i), w = 1000 / d.buckets.length;\n"
    "    el('rect', {'class': 'bg', x: 0, y: 0, width: 1000, height: 50}, svg);\n"
    "    d.buckets.forEach(function (f, b) {\n"
    "      if (f <= 0) return;\n"
    "      var r = el('rect', {'class': 'b', x: (b * w).toFixed(2), y: (50 - 50 * f).toFixed(2),\n"
    "                          width: w.toFixed(2), height: (50 * f).toFixed(2)}, svg);\n"
    "      el('title', {}, r, (100 * f).toFixed(1) + '% busy at +' + dur(D.window_ns * b / "
    "d.buckets.length));\n"
    "    });\n"
    "    el('text', {x: 0, y: 64}, svg, '0');\n"
    "    el('text', {x: 1000, y: 64, 'text-anchor': 'end'}, svg, '+' + dur(D.window_ns));\n"
    "  });\n"
    "  var bars = document.getElementById('kernel-bars');\n"
    "  if (bars) {\n"
    "    var max = D.kernels.reduce(function (m, k) { return Math.max(m, k.total_ns); }, 1);\n"
    "    D.kernels.forEach(function (k, i) {\n"
    "      var y = i * 20;\n"
    "      el('text', {x: 0, y: y + 14}, bars, cut(k.name, 60));\n"
    "      var r = el('rect', {'class': 'bar', x: 420, y: y + 3, height: 14,\n"
    "                          width: Math.max(1, 480 * k.total_ns / max).toFixed(1)}, bars);\n"
    "      el('title', {}, r, k.name + ': ' + dur(k.total_ns) + ' in ' + k.count + ' launches');\n"
    "      el('text', {x: 424 + 480 * k.total_ns / max, y: y + 14}, bars, dur(k.total_ns));\n"
    "    });\n"
    "    if (D.kernels_not_shown > 0)\n"
    "      el('text', {x: 0, y: D.kernels.length * 20 + 14}, bars, D.kernels_not_shown + ' more not "
    "shown');\n"
    "    bars.setAttribute('height', D.kernels.length * 20 + 24);\n"
    "  }\n"
    "  var occ = document.getElementById('stream-occupancy'), row = 0;\n"
    "  if (occ) {\n"
    "    D.devices.forEach(function (d) {\n"
    "      d.streams.forEach(function (s) {\n"
    "        var y = row++ * 20;\n"
    "        el('text', {x: 0, y: y + 14}, occ, cut(d.name, 40) + ' \\u00b7 stream ' + s.tid);\n"
    "        var r = el('rect', {'class': 'bar', x: 420, y: y + 3, height: 14,\n"
    "                            width: Math.max(1, 4.8 * s.busy_pct).toFixed(1)}, occ);\n"
    "        el('title', {}, r, s.busy_pct.toFixed(1) + '% busy');\n"
    "        el('text', {x: 424 + 4.8 * s.busy_pct, y: y + 14}, occ, s.busy_pct.toFixed(1) + '%');\n"
    "      });\n"
    "    });\n"
    "    occ.setAttribute('height', row * 20 + 8);\n"
    "  }\n"
    "  if (document.body.dataset.rendered !== 'error') document.body.dataset.rendered = 'ok';\n"
    "})();\n"
    "</script>\n";

static int build_page(struct page *p, const struct an_trace *a, const char *file, const struct tr_stats *st,
                      size_t top)
{
	puts_(p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>strobe report: ");
	esc(p, file);
	putf(p,
	     "</title>\n<style>\n%s</style>\n</head>\n<body data-rendered=\"no\">\n<h1>strobe report</h1>\n",
	     style);
	puts_(p, "<div id=\"errors\"></div>\n");
	facts(p, a, file, st);
	if (a->ndevices)
		devices(p, a);
	if (a->nkernel_stats)
		kernels(p, a, top);
	copies_and_latency(p, a);
	cpu_ops(p, a, top);
	int rc = categories(p, a, top);
	accounting(p, a, st);
	puts_(p, "<p class=\"note\">Written by strobe ");
	esc(p, strobe_version());
	puts_(p, ". Times are in the trace's clock; percentiles are nearest-rank over every duration.</p>\n");
	chart_data(p, a, top);
	puts_(p, script);
	puts_(p, "</body></html>\n");
	return rc ? rc : p->oom ? -ENOMEM : 0;
}

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
	const char *file = NULL, *out = NULL, *v;
	for (int i = 1, rc; i < argc; i++) {
		const char *arg = argv[i];
		if (cli_is_help(arg)) {
			fputs(usage_text, stdout);
			return 0;
		} else if (cli_opt(argc, argv, &i, "--output", "-o", &v)) {
			if ((rc = cli_text(&cli, arg[1] == 'o' ? "-o" : "--output", v, "a file name", &out)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--top", NULL, &v)) {
			int64_t n;
			if ((rc = cli_int(&cli, "--top", v, 0, 1000000, &n)))
				return rc;
			top = (size_t)n;
		} else if ((rc = cli_file_arg(&cli, argc, argv, &i, &file))) {
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

	struct an_trace a = {0};
	struct tr_stats st;
	struct page p = {0};
	char err[512];
	int rc = an_read(&a, file, &st, err, sizeof(err));
	if (!rc && build_page(&p, &a, file, &st, top))
		rc = snprintf(err, sizeof(err), "%s: out of memory", file);
	if (!rc) {
		struct strb_sink *sink;
		rc = strb_sink_open(&sink, out, STRB_COMPRESS_NONE, -1);
		if (!rc) {
			strb_sink_write(sink, p.buf, p.n);
			rc = strb_sink_commit(sink);
		}
		if (rc)
			snprintf(err, sizeof(err), "cannot write the report: %s", strobe_last_error());
	}
	if (rc)
		fprintf(stderr, "strobe: %s\n", err);
	else
		fprintf(stderr, "strobe: wrote %s\n", out);
	an_free(&a);
	free(p.buf);
	free(owned);
	return rc ? 1 : 0;
}

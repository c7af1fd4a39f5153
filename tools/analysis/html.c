/* strobe report's page: the summary of a trace as one self-contained HTML
 * page (inline CSS, inline SVG drawn by inline script; nothing fetched),
 * every table from its column spec (columns.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <yajl/yajl_gen.h>

#include "analysis/overview.h"
#include "analysis/present.h"
#include "strobe/strobe.h"

#define MAX_CHART_DEVICES 64  /* timelines drawn; the devices table lists them all */
#define MAX_CHART_STEPS   500 /* bars in the step chart; the steps table lists them all */
#define MAX_CHART_NAMES   20  /* bars in the CPU time-by-name chart */
/* The overview: rows drawn, and stretches in all (about 33 bytes each in
 * the page: a 1 GB trace still gives a page of a few MB). */
#define MAX_OVERVIEW_ROWS  256
#define MAX_OVERVIEW_SPANS 100000

/* Text from the trace, safe in element content and in quoted attributes. */
void an_html_escape(FILE *p, const char *s)
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
		fwrite(run, 1, (size_t)(s - run), p);
		if (!*s)
			return;
		fputs(rep, p);
		run = s + 1;
	}
}

static void cell_text(FILE *p, const char *s)
{
	fputs("<td>", p);
	an_html_escape(p, s);
	fputs("</td>", p);
}

const char an_html_style[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px;color:#1d2330;"
    "max-width:1200px}\n"
    "h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dce5}\n"
    "table{border-collapse:collapse;margin:6px 0;font-size:13px}\n"
    "th,td{padding:3px 10px;text-align:left;border-bottom:1px solid #eceef3;vertical-align:top}\n"
    "th{background:#f4f5f8;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "td.n{white-space:nowrap}\n"
    "td.name{max-width:560px;overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:12px}\n"
    ".warn{color:#a4262c;font-weight:600}.more,.note{color:#5b6475;font-size:12px}\n"
    "#errors{color:#a4262c;white-space:pre-wrap}\n"
    "svg{display:block;margin:4px 0;max-width:100%;height:auto}svg text{font:11px "
    "system-ui,sans-serif;fill:#3b4252}\n"
    ".util rect.bg{fill:#f4f5f8}.util rect.b{fill:#3d7dd8}.bars rect.bar{fill:#5a9e6f}"
    ".occ rect.bar{fill:#c98a2b}.steps rect.bar{fill:#9fb7d9}.steps rect.out{fill:#d9534f}"
    ".steps rect.busy{fill:#3d7dd8}\n"
    ".facts td:first-child{color:#5b6475}\n"
    ".ov{cursor:grab;user-select:none}.ov rect.sp{stroke:none}.ov line.tick{stroke:#e3e6ec}"
    ".ov .async text{fill:#7a5a9e}.ov .stream text{fill:#1f5fae}.ovctl button{font:12px system-ui;"
    "margin-right:4px}\n"
    ".steps rect.bar{cursor:zoom-in}.cbars rect.bar{fill:#7d6bb3}\n";

/* ns since the epoch as fmt (strftime, UTC) plus milliseconds. */
static const char *wall_clock(int64_t ns, const char *fmt, char *buf, size_t len)
{
	int64_t frac = ((ns % 1000000000) + 1000000000) % 1000000000; /* before the epoch too */
	time_t secs = (time_t)((ns - frac) / 1000000000);
	struct tm tm;
	size_t n = gmtime_r(&secs, &tm) ? strftime(buf, len, fmt, &tm) : 0;
	snprintf(buf + n, len - n, ".%03d", (int)(frac / 1000000));
	return buf;
}

/* "134080 bytes (130.9 KiB)". */
static const char *human_bytes(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)n;
	size_t u = 0;
	while (v >= 1024 * 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (n < 1024)
		snprintf(buf, len, "%" PRIu64 " bytes", n);
	else
		snprintf(buf, len, "%" PRIu64 " bytes (%.1f %s)", n, v / 1024, units[u]);
	return buf;
}

static void facts(FILE *p, const struct an_trace *a, const char *file, const struct tr_stats *st)
{
	char b1[40];
	fputs("<table id=\"facts\" class=\"facts\"><tbody>\n<tr><td>file</td>", p);
	cell_text(p, file);
	if (st->perfetto)
		fprintf(p, "</tr>\n<tr><td>size</td><td>%s (Perfetto protobuf)</td></tr>\n",
		        human_bytes(st->file_bytes, b1, sizeof(b1)));
	else
		fprintf(p, "</tr>\n<tr><td>size</td><td>%s (%s), %" PRIu64 " bytes of JSON</td></tr>\n",
		        human_bytes(st->file_bytes, b1, sizeof(b1)),
		        st->compression == TR_GZIP   ? "gzip"
		        : st->compression == TR_ZSTD ? "zstd"
		                                     : "plain",
		        st->json_bytes);
	fprintf(p, "<tr><td>events</td><td>%" PRIu64 "</td></tr>\n", st->events);
	if (a->timed && a->has_base) {
		char from[40], to[40];
		fprintf(
		    p, "<tr><td>window</td><td>%s, %s to %s UTC</td></tr>\n",
		    an_fmt_dur(an_window(a), b1, sizeof(b1)),
		    wall_clock(an_sat_add(a->base_ns, a->first_ts), "%Y-%m-%d %H:%M:%S", from, sizeof(from)),
		    wall_clock(an_sat_add(a->base_ns, a->last_end), "%H:%M:%S", to, sizeof(to)));
	} else if (a->timed) {
		fprintf(p,
		        "<tr><td>window</td><td>%s (the trace has no baseTimeNanoseconds: no wall "
		        "clock)</td></tr>\n",
		        an_fmt_dur(an_window(a), b1, sizeof(b1)));
	} else
		fputs("<tr><td>window</td><td>none: no event has a timestamp</td></tr>\n", p);
	if (a->host_name) {
		fputs("<tr><td>host</td>", p);
		cell_text(p, a->host_name);
		fputs("</tr>\n", p);
	}
	if (a->has_dist_rank)
		fprintf(p, "<tr><td>rank</td><td>%" PRId64 " (distributedInfo)</td></tr>\n", a->dist_rank);
	if (a->ranked) {
		fputs("<tr><td>ranks</td><td>", p);
		for (size_t i = 0; i < a->nranks; i++)
			if (a->ranks[i] >= 0)
				fprintf(p, "%s%" PRId64, i ? ", " : "", a->ranks[i]);
		fputs("</td></tr>\n", p);
	}
	fputs("</tbody></table>\n", p);
}

/* ---- tables from their spec ------------------------------------------------- */

static bool numeric(const struct an_column *c)
{
	return c->unit != AN_TEXT && c->unit != AN_RANK && c->unit != AN_IDENT && c->unit != AN_ROWS;
}

/* A sub table of at most one row per parent row gets a table of its own. */
static bool own_table(const struct an_column *c)
{
	return c->unit == AN_ROWS && c->sub->flags & AN_T_ONE;
}

static bool in_cell(const struct an_view *v, const struct an_spec *t, const struct an_column *c)
{
	return an_cell_shown(v, t, c, false) && !own_table(c);
}

/* The spec's heading, with its note. */
static void section(FILE *p, const struct an_spec *t)
{
	fprintf(p, "<h2>%s</h2>\n", t->heading);
	if (t->note)
		fprintf(p, "<p class=\"note\">%s</p>\n", t->note);
}

/* The cells of one row, or the header's when row is NULL; a list of sub
 * rows as their phrases, one a line. */
static void cells(FILE *p, const struct an_view *v, const struct an_spec *t, const void *row)
{
	char buf[TR_NAME_MAX + 2 * TR_SHORT_MAX];
	struct an_value val;
	const char *tag = row ? "td" : "th";
	for (size_t i = 0; i < t->ncols; i++) {
		const struct an_column *c = &t->cols[i];
		if (!in_cell(v, t, c))
			continue;
		fprintf(p, "<%s%s>", tag,
		        numeric(c)                  ? " class=\"n\""
		        : row && c->flags & AN_NAME ? " class=\"name\""
		                                    : "");
		if (row && c->unit == AN_ROWS) {
			an_get(v->a, c, row, &val);
			for (size_t k = 0; k < val.rows.n; k++) {
				fputs(k ? "<br>" : "", p);
				an_html_escape(p, an_phrase(v->a, c->sub,
				                            (const char *)val.rows.base + k * val.rows.stride,
				                            buf, sizeof(buf)));
			}
		} else {
			an_html_escape(p, an_cell(v->a, t, i, row, buf, sizeof(buf)));
		}
		fprintf(p, "</%s>", tag);
	}
}

/* <table> with its header row, after a first column lead (or NULL). */
static void table_open(FILE *p, const struct an_view *v, const struct an_spec *t, const char *id,
                       const struct an_column *lead)
{
	fprintf(p, "<table id=\"%s\"><thead><tr>", id);
	if (lead)
		fprintf(p, "<th>%s</th>", lead->head);
	cells(p, v, t, NULL);
	fputs("</tr></thead><tbody>\n", p);
}

static void table_close(FILE *p, size_t total, size_t shown)
{
	fputs("</tbody></table>\n", p);
	if (total > shown)
		fprintf(p, "<p class=\"more\">%zu more not shown (--top 0 shows all).</p>\n", total - shown);
}

/* Each parent row's one-row sub table of column c, led by the parent's
 * label, as a table of its own. */
static void sub_table(FILE *p, const struct an_view *v, const struct an_spec *t, struct an_rows rows,
                      const struct an_column *c)
{
	char buf[TR_SHORT_MAX + 64];
	size_t lead = 0, n = 0;
	while (t->cols[lead].unit != AN_TEXT)
		lead++;
	for (size_t i = 0; i < rows.n; i++) {
		const void *row = (const unsigned char *)rows.base + i * rows.stride;
		struct an_value val;
		an_get(v->a, c, row, &val);
		if (!val.rows.n)
			continue;
		if (!n++) {
			section(p, c->sub);
			table_open(p, v, c->sub, c->sub->id, &t->cols[lead]);
		}
		fputs("<tr><td>", p);
		an_html_escape(p, an_cell(v->a, t, lead, row, buf, sizeof(buf)));
		fputs("</td>", p);
		cells(p, v, c->sub, val.rows.base);
		fputs("</tr>\n", p);
	}
	if (n)
		table_close(p, 0, 0);
}

static void html_table(FILE *p, const struct an_view *v, const struct an_spec *t, struct an_rows rows,
                       const char *id)
{
	table_open(p, v, t, id ? id : t->id, NULL);
	struct an_iter it = an_iter(v, t, rows);
	for (const void *row; (row = an_next(&it));) {
		fputs(t->warn && t->warn(row) ? "<tr class=\"warn\">" : "<tr>", p);
		cells(p, v, t, row);
		fputs("</tr>\n", p);
	}
	table_close(p, rows.n, it.shown);
	for (size_t i = 0; i < t->ncols; i++)
		if (own_table(&t->cols[i]))
			sub_table(p, v, t, rows, &t->cols[i]);
}

static void titled(FILE *p, const struct an_view *v, const struct an_spec *t)
{
	struct an_rows rows = t->rows(v);
	if (!rows.n)
		return;
	section(p, t);
	html_table(p, v, t, rows, NULL);
}

/* Per category, its names by total time, and by self time when that
 * lists others or in another order. */
static void names_tables(FILE *p, const struct an_view *v)
{
	char id[48];
	for (size_t i = 0; i < v->nxcats; i++)
		for (int self = 0; self < 2 && !(self && an_self_same(v, i)); self++) {
			fputs("<h3>", p);
			an_html_escape(p, *v->xcats[i].name ? v->xcats[i].name : "(none)");
			fprintf(p, ": top names by %s time</h3>\n", self ? "self" : "total");
			snprintf(id, sizeof(id), "names-%s%zu", self ? "self-" : "", i);
			html_table(p, v, &an_names, v->names[i][self], id);
		}
}

/* One device's chart: its label, a phrase, and the SVG the script draws
 * into (id PREFIX-i). */
static void device_chart(FILE *p, const struct an_trace *a, uint32_t pid, const char *what,
                         const char *prefix, size_t i)
{
	char label[TR_SHORT_MAX + 32];
	fprintf(p, "<div class=\"device\"><b>");
	an_html_escape(p, an_device_label(a, pid, label, sizeof(label)));
	fprintf(p, "</b> %s<svg id=\"%s-%zu\" class=\"util\" width=\"1000\" height=\"70\"></svg></div>\n",
	        what, prefix, i);
}

/* The utilisation timelines, one SVG per device, drawn by the script. */
static void timelines(FILE *p, const struct an_trace *a)
{
	char what[64];
	fputs("<h2>GPU utilisation</h2>\n<p class=\"note\">Busy fraction of each device in 200 slices "
	      "of the trace window (busy = the union of its kernels, copies and memsets).</p>\n",
	      p);
	size_t drawn = a->ndevices < MAX_CHART_DEVICES ? a->ndevices : MAX_CHART_DEVICES;
	for (size_t i = 0; i < drawn; i++) {
		snprintf(what, sizeof(what), "busy %.1f%%", an_pct(a->devices[i].busy, an_window(a)));
		device_chart(p, a, a->devices[i].pid, what, "util", i);
	}
	if (drawn < a->ndevices)
		fprintf(p,
		        "<p class=\"more\">%zu more devices not drawn here or in the stream chart; the table "
		        "below lists them all.</p>\n",
		        a->ndevices - drawn);
}

/* Each device's GPU memory level across the window, drawn by the script,
 * then the peaks table. */
static void memory_charts(FILE *p, const struct an_view *v)
{
	const struct an_trace *a = v->a;
	if (!a->nmemory)
		return;
	section(p, &an_gpu_memory);
	char what[64];
	size_t drawn = a->nmemory < MAX_CHART_DEVICES ? a->nmemory : MAX_CHART_DEVICES;
	for (size_t i = 0; i < drawn; i++) {
		snprintf(what, sizeof(what), "peak %.0f bytes", a->memory[i].peak);
		device_chart(p, a, a->memory[i].pid, what, "mem", i);
	}
	html_table(p, v, &an_gpu_memory, an_gpu_memory.rows(v), NULL);
}

/* The timeline overview: its buttons and the SVG the script draws, one
 * row per thread, stream and start/end row. */
static void overview_section(FILE *p, const struct an_overview *ov)
{
	if (!ov->nrows)
		return;
	fputs(
	    "<h2>Timeline overview</h2>\n<p class=\"note\">Each CPU thread, GPU stream and row of start/end "
	    "ranges, as the trace names them: when any of its events ran. Zoom with the wheel or the "
	    "buttons, drag to pan; a click on a step's bar shows that step.</p>\n"
	    "<div class=\"ovctl\"><button id=\"ov-in\" type=\"button\">zoom in</button>"
	    "<button id=\"ov-out\" type=\"button\">zoom out</button><button id=\"ov-left\" "
	    "type=\"button\">\xe2\x86\x90</button><button id=\"ov-right\" "
	    "type=\"button\">\xe2\x86\x92</button>"
	    "<button id=\"ov-all\" type=\"button\">whole window</button> <span id=\"ov-range\" "
	    "class=\"note\"></span></div>\n",
	    p);
	fprintf(p, "<svg id=\"overview\" class=\"ov\" width=\"1000\" height=\"%zu\"></svg>\n",
	        24 + ov->nrows * 16);
	if (ov->not_shown)
		fprintf(p, "<p class=\"more\">%zu more rows not drawn.</p>\n", ov->not_shown);
}

/* Charts for the CPU side, GPU or not: each thread's busy share of the
 * window, and the names with the most self time. */
static void cpu_charts(FILE *p, const struct an_overview *ov)
{
	size_t threads = 0;
	for (size_t i = 0; i < ov->nrows; i++)
		threads += ov->rows[i].kind == AN_OV_THREAD;
	if (!threads)
		return;
	fprintf(p,
	        "<h2>Thread occupancy</h2>\n<p class=\"note\">Share of the window each CPU thread spent "
	        "inside a range (nested ranges counted once).</p>\n<svg id=\"thread-occupancy\" "
	        "class=\"occ\" width=\"1000\" height=\"%zu\"></svg>\n"
	        "<h2>CPU time by name</h2>\n<p class=\"note\">Self time of the ranges on CPU threads: the "
	        "time in a range of that name and not in one nested inside it, counted once when several "
	        "threads ran it at once (the %d longest).</p>\n<svg id=\"name-bars\" class=\"cbars\" "
	        "width=\"1000\" height=\"20\"></svg>\n",
	        threads * 20 + 8, MAX_CHART_NAMES);
}

/* ---- chart data and the script that draws it -------------------------------- */

static void gs(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void gint(yajl_gen g, const char *key, int64_t v)
{
	char buf[24];
	snprintf(buf, sizeof(buf), "%" PRId64, v);
	gs(g, key);
	yajl_gen_number(g, buf, strlen(buf));
}

static void gnum(yajl_gen g, const char *key, double v)
{
	char buf[40];
	snprintf(buf, sizeof(buf), "%.6g", v);
	gs(g, key);
	yajl_gen_number(g, buf, strlen(buf));
}

/* Stretches as a flat array of start, duration, name (an index in the
 * overview's "names": local[i] - 1 for names-table entry i, given one
 * when it has none yet), event count. */
static void spans_data(yajl_gen g, const struct an_ov_span *sp, size_t n, uint32_t *local, uint32_t *nlocal)
{
	char buf[32];
	yajl_gen_array_open(g);
	for (size_t k = 0; k < n; k++) {
		if (!local[sp[k].name])
			local[sp[k].name] = ++*nlocal;
		int64_t v[4] = {sp[k].start, sp[k].dur, local[sp[k].name] - 1, (int64_t)sp[k].events};
		for (int j = 0; j < 4; j++) {
			snprintf(buf, sizeof(buf), "%" PRId64, v[j]);
			yajl_gen_number(g, buf, strlen(buf));
		}
	}
	yajl_gen_array_close(g);
}

/* The overview's rows: label, kind, busy time, the stretches when any of
 * its ranges ran, and those of the ranges directly inside them. */
static void overview_data(yajl_gen g, const struct an_trace *a, const struct an_overview *ov)
{
	static const char *const kinds[] = {"thread", "stream", "async", "span"};
	uint32_t *local = calloc(a->names.n ? a->names.n : 1, sizeof(*local)); /* index + 1 in "names" */
	uint32_t nlocal = 0;
	gs(g, "overview");
	yajl_gen_map_open(g);
	gs(g, "rows");
	yajl_gen_array_open(g);
	for (size_t i = 0; local && i < ov->nrows; i++) {
		const struct an_ov_row *r = &ov->rows[i];
		yajl_gen_map_open(g);
		gs(g, "label");
		gs(g, r->label);
		gs(g, "kind");
		gs(g, kinds[r->kind]);
		gnum(g, "busy_ns", (double)r->busy);
		gs(g, "spans");
		spans_data(g, r->spans, r->nspans, local, &nlocal);
		gs(g, "inner");
		spans_data(g, r->inner, r->ninner, local, &nlocal);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gs(g, "names");
	yajl_gen_array_open(g);
	const char **names = local ? calloc(nlocal ? nlocal : 1, sizeof(*names)) : NULL;
	for (size_t i = 0; names && i < a->names.n; i++)
		if (local[i])
			names[local[i] - 1] = an_name(a, (uint32_t)i);
	for (uint32_t i = 0; names && i < nlocal; i++)
		gs(g, names[i]);
	yajl_gen_array_close(g);
	gnum(g, "not_shown", (double)ov->not_shown);
	yajl_gen_map_close(g);
	free(names);
	free(local);
}

/* Whether category cat holds CPU-side ranges (not GPU work, not the
 * profiler's span over the whole trace, not start/end ranges). */
static bool cpu_category(const char *cat)
{
	static const char *const gpu[] = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation",
	                                  "Trace"};
	for (size_t i = 0; i < sizeof(gpu) / sizeof(gpu[0]); i++)
		if (!strcmp(cat, gpu[i]))
			return false;
	return !strstr(cat, AN_ASYNC_CAT);
}

/* The names with the most self time (union over threads) in CPU
 * categories, for the time-by-name chart. */
static int cmp_self_wall(const void *pa, const void *pb)
{
	const struct an_ref *x = pa, *y = pb;
	return x->key != y->key ? (x->key > y->key ? -1 : 1) : strcmp(x->name, y->name);
}

static void cpu_names_data(yajl_gen g, const struct an_trace *a)
{
	struct an_ref *r = calloc(a->names.n ? a->names.n : 1, sizeof(*r));
	size_t n = 0;
	for (size_t i = 0; r && i < a->names.n; i++) {
		const struct an_name *sn = an_table_item(&a->names, i);
		if (sn->count && sn->self_wall > 0 && cpu_category(a->xcats.keys[sn->cat]))
			r[n++] = (struct an_ref){(uint32_t)i, sn->self_wall, an_name(a, (uint32_t)i)};
	}
	an_sort(r, n, sizeof(*r), cmp_self_wall);
	gs(g, "cpu_names");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n && i < MAX_CHART_NAMES; i++) {
		const struct an_name *sn = an_table_item(&a->names, r[i].id);
		yajl_gen_map_open(g);
		gs(g, "name");
		gs(g, r[i].name);
		gs(g, "cat");
		gs(g, a->xcats.keys[sn->cat]);
		gnum(g, "self_ns", (double)sn->self_wall);
		gnum(g, "total_ns", (double)sn->wall);
		gnum(g, "count", (double)sn->count);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	free(r);
}

/* The numbers the charts need, as JSON inside a script element: "<" is
 * written \u003c so no string from the trace can close the element. */
static int chart_data(FILE *p, const struct an_view *v, const struct an_overview *ov)
{
	const struct an_trace *a = v->a;
	char label[TR_SHORT_MAX + 32], buf[32];
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return -ENOMEM;
	yajl_gen_map_open(g);
	gint(g, "window_ns", an_window(a));
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
			gs(g, "name");
			gs(g, an_row_label(a, d->streams[k].row));
			gnum(g, "busy_pct", an_pct(d->streams[k].busy, an_window(a)));
			yajl_gen_map_close(g);
		}
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gs(g, "kernels");
	yajl_gen_array_open(g);
	/* The bars are the kernels table's rows. */
	struct an_iter it = an_iter(v, &an_kernels, an_kernels.rows(v));
	for (const struct an_kernel *k; (k = an_next(&it));) {
		yajl_gen_map_open(g);
		gs(g, "name");
		snprintf(label, sizeof(label), "%s%s%.200s",
		         a->ranked ? an_rank_label(k->rank, buf, sizeof(buf)) : "", a->ranked ? ": " : "",
		         an_name(a, k->name));
		gs(g, label);
		gnum(g, "total_ns", (double)k->total);
		gnum(g, "count", (double)k->count);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gnum(g, "kernels_not_shown", (double)(it.rows.n - it.shown));
	gs(g, "memory");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < a->nmemory && i < MAX_CHART_DEVICES; i++) {
		const struct an_memory *m = &a->memory[i];
		yajl_gen_map_open(g);
		/* Byte counts exactly (to 2^53), not to gnum's 6 digits. */
		gs(g, "peak");
		snprintf(buf, sizeof(buf), "%.17g", m->peak);
		yajl_gen_number(g, buf, strlen(buf));
		gnum(g, "peak_at_ns", (double)an_span(a->first_ts, m->peak_ts));
		gs(g, "buckets");
		yajl_gen_array_open(g);
		for (size_t b = 0; b < AN_BUCKETS; b++) {
			snprintf(buf, sizeof(buf), "%.17g", m->buckets[b]);
			yajl_gen_number(g, buf, strlen(buf));
		}
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gs(g, "steps");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < a->nsteps && i < MAX_CHART_STEPS; i++) {
		const struct an_step *st = &a->steps[i];
		yajl_gen_map_open(g);
		gs(g, "name");
		snprintf(label, sizeof(label), "%s%s%" PRId64,
		         a->ranked ? an_rank_label(st->rank, buf, sizeof(buf)) : "",
		         a->ranked ? " step " : "step ", st->number);
		gs(g, label);
		gint(g, "start_ns", an_span(a->first_ts, st->ts));
		gint(g, "dur_ns", st->dur);
		gnum(g, "busy_ns", st->pid == UINT32_MAX ? -1.0 : (double)st->busy);
		gs(g, "outlier");
		yajl_gen_bool(g, st->outlier);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	overview_data(g, a, ov);
	cpu_names_data(g, a);
	yajl_gen_map_close(g);

	const unsigned char *out;
	size_t len;
	int rc = yajl_gen_get_buf(g, &out, &len) == yajl_gen_status_ok ? 0 : -ENOMEM;
	fputs("<script type=\"application/json\" id=\"data\">", p);
	for (size_t i = 0; !rc && i < len; i++)
		if (out[i] == '<')
			fputs("\\u003c", p);
		else
			fputc(out[i], p);
	fputs("</script>\n", p);
	yajl_gen_free(g);
	return rc;
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
    "        el('text', {x: 0, y: y + 14}, occ, cut(d.name, 40) + ' \\u00b7 ' + (/^[0-9]+$/.test(s.name) ? "
    "'stream ' : '') + cut(s.name, 40));\n"
    "        var r = el('rect', {'class': 'bar', x: 420, y: y + 3, height: 14,\n"
    "                            width: Math.max(1, 4.8 * s.busy_pct).toFixed(1)}, occ);\n"
    "        el('title', {}, r, s.busy_pct.toFixed(1) + '% busy');\n"
    "        el('text', {x: 424 + 4.8 * s.busy_pct, y: y + 14}, occ, s.busy_pct.toFixed(1) + '%');\n"
    "      });\n"
    "    });\n"
    "    occ.setAttribute('height', row * 20 + 8);\n"
    "  }\n"
    "  D.memory.forEach(function (m, i) {\n"
    "    var svg = document.getElementById('mem-' + i), w = 1000 / m.buckets.length, level = -1;\n"
    "    el('rect', {'class': 'bg', x: 0, y: 0, width: 1000, height: 50}, svg);\n"
    "    m.buckets.forEach(function (v, b) {\n"
    "      if (v >= 0) level = v;\n"
    "      if (level < 0 || m.peak <= 0) return;\n"
    "      var f = level / m.peak;\n"
    "      var r = el('rect', {'class': 'b', x: (b * w).toFixed(2), y: (50 - 50 * f).toFixed(2),\n"
    "                          width: w.toFixed(2), height: (50 * f).toFixed(2)}, svg);\n"
    "      el('title', {}, r, level + ' bytes at +' + dur(D.window_ns * b / m.buckets.length));\n"
    "    });\n"
    "    el('text', {x: 0, y: 64}, svg, '0');\n"
    "    el('text', {x: 1000, y: 64, 'text-anchor': 'end'}, svg, 'peak ' + m.peak + ' bytes at +' + "
    "dur(m.peak_at_ns));\n"
    "  });\n"
    "  var sb = document.getElementById('step-bars');\n"
    "  if (sb && D.steps.length) {\n"
    "    var smax = D.steps.reduce(function (m, s) { return Math.max(m, s.dur_ns); }, 1);\n"
    "    var sw = 1000 / D.steps.length;\n"
    "    D.steps.forEach(function (s, i) {\n"
    "      var h = 140 * s.dur_ns / smax, x = i * sw;\n"
    "      var r = el('rect', {'class': s.outlier ? 'bar out' : 'bar', 'data-step': i, x: (x + sw * "
    "0.1).toFixed(2),\n"
    "                          y: (140 - h).toFixed(2), width: (sw * 0.8).toFixed(2), height: h.toFixed(2)}, "
    "sb);\n"
    "      el('title', {}, r, s.name + ': ' + dur(s.dur_ns) + (s.busy_ns >= 0 ? ', GPU busy ' + "
    "dur(s.busy_ns) : '')\n"
    "         + (s.outlier ? ' (outlier)' : ''));\n"
    "      if (s.busy_ns >= 0) {\n"
    "        var b = 140 * s.busy_ns / smax;\n"
    "        el('rect', {'class': 'busy', 'data-step': i, x: (x + sw * 0.3).toFixed(2), y: (140 - "
    "b).toFixed(2),\n"
    "                    width: (sw * 0.4).toFixed(2), height: b.toFixed(2)}, sb);\n"
    "      }\n"
    "    });\n"
    "    el('text', {x: 0, y: 156}, sb, D.steps[0].name);\n"
    "    el('text', {x: 1000, y: 156, 'text-anchor': 'end'}, sb, D.steps[D.steps.length - 1].name + "
    "', longest ' + dur(smax));\n"
    "  }\n"
    "  function hbars(svg, items, label, value, tip) {\n"
    "    var max = items.reduce(function (m, it) { return Math.max(m, value(it)); }, 1);\n"
    "    items.forEach(function (it, i) {\n"
    "      var y = i * 20, w = Math.max(1, 480 * value(it) / max);\n"
    "      el('text', {x: 0, y: y + 14}, svg, cut(label(it), 60));\n"
    "      var r = el('rect', {'class': 'bar', x: 420, y: y + 3, height: 14, width: w.toFixed(1)}, svg);\n"
    "      el('title', {}, r, tip(it));\n"
    "      el('text', {x: 424 + w, y: y + 14}, svg, dur(value(it)));\n"
    "    });\n"
    "    svg.setAttribute('height', items.length * 20 + 8);\n"
    "  }\n"
    "  var nb = document.getElementById('name-bars');\n"
    "  if (nb)\n"
    "    hbars(nb, D.cpu_names, function (n) { return n.name; }, function (n) { return n.self_ns; },\n"
    "          function (n) { return n.cat + ': ' + n.name + ', self ' + dur(n.self_ns) + ', total ' + "
    "dur(n.total_ns) +\n"
    "                         ' in ' + n.count + ' ranges'; });\n"
    "  var O = D.overview, ovs = document.getElementById('overview');\n"
    "  var to = document.getElementById('thread-occupancy');\n"
    "  if (to) {\n"
    "    var threads = O.rows.filter(function (r) { return r.kind === 'thread'; });\n"
    "    threads.forEach(function (r, i) {\n"
    "      var y = i * 20, pct = D.window_ns > 0 ? 100 * r.busy_ns / D.window_ns : 0;\n"
    "      el('text', {x: 0, y: y + 14}, to, cut(r.label, 60));\n"
    "      var b = el('rect', {'class': 'bar', x: 420, y: y + 3, height: 14, width: Math.max(1, 4.8 * "
    "pct).toFixed(1)}, to);\n"
    "      el('title', {}, b, r.label + ': ' + dur(r.busy_ns) + ' busy');\n"
    "      el('text', {x: 424 + 4.8 * pct, y: y + 14}, to, pct.toFixed(1) + '%');\n"
    "    });\n"
    "  }\n"
    "  if (ovs && O.rows.length) {\n"
    "    var LX = 250, PW = 740, RH = 16, TOP = 22, W = Math.max(D.window_ns, 1);\n"
    "    var view = {a: 0, b: W};\n"
    "    var range = document.getElementById('ov-range');\n"
    "    var color = function (i) { return 'hsl(' + ((i * 137) % 360) + ',55%,' + (48 + (i * 7) % 20) + "
    "'%)'; };\n"
    "    var draw = function () {\n"
    "      while (ovs.firstChild) ovs.removeChild(ovs.firstChild);\n"
    "      var len = view.b - view.a, scale = PW / len, h = TOP + O.rows.length * RH;\n"
    "      for (var t = 0; t <= 4; t++) {\n"
    "        var x = LX + PW * t / 4;\n"
    "        el('line', {'class': 'tick', x1: x, x2: x, y1: TOP - 6, y2: h}, ovs);\n"
    "        el('text', {x: x, y: 12, 'text-anchor': t === 0 ? 'start' : t === 4 ? 'end' : 'middle'}, ovs,\n"
    "           '+' + dur(Math.round(view.a + len * t / 4)));\n"
    "      }\n"
    "      /* One lane of a row: its stretches in view, those less than a pixel\n"
    "         apart drawn as one shape, named after the first one's longest event. */\n"
    "      var lane = function (g, sp, y, h, cls) {\n"
    "        var n = sp.length / 4, lo = 0, hi = n, cur = null;\n"
    "        var flush = function () {\n"
    "          if (!cur) return;\n"
    "          var rect = el('rect', {'class': cls, x: cur.x0.toFixed(2), y: y, height: h,\n"
    "                                 width: Math.max(0.5, cur.x1 - cur.x0).toFixed(2), fill: "
    "color(cur.name)}, g);\n"
    "          el('title', {}, rect, O.names[cur.name] + (cur.events > 1 ? ' and ' + (cur.events - 1) +\n"
    "             ' more events' : '') + ', +' + dur(cur.s) + ' to +' + dur(cur.e));\n"
    "          cur = null;\n"
    "        };\n"
    "        while (lo < hi) {\n"
    "          var m = (lo + hi) >> 1;\n"
    "          if (sp[4 * m] + sp[4 * m + 1] < view.a) lo = m + 1; else hi = m;\n"
    "        }\n"
    "        for (var i = lo; i < n && sp[4 * i] <= view.b; i++) {\n"
    "          var s = sp[4 * i], e = s + sp[4 * i + 1];\n"
    "          var x0 = LX + Math.max(0, (s - view.a) * scale), x1 = LX + Math.min(PW, (e - view.a) * "
    "scale);\n"
    "          if (cur && x0 - cur.x1 < 1) {\n"
    "            cur.x1 = Math.max(cur.x1, x1);\n"
    "            cur.events += sp[4 * i + 3];\n"
    "            cur.e = Math.max(cur.e, e);\n"
    "          } else {\n"
    "            flush();\n"
    "            cur = {x0: x0, x1: x1, name: sp[4 * i + 2], events: sp[4 * i + 3], s: s, e: e};\n"
    "          }\n"
    "        }\n"
    "        flush();\n"
    "      };\n"
    "      /* A row: its ranges, and the ranges directly inside them below. */\n"
    "      O.rows.forEach(function (r, k) {\n"
    "        var y = TOP + k * RH, g = el('g', {'class': 'row ' + r.kind}, ovs);\n"
    "        el('title', {}, el('text', {x: 0, y: y + 11}, g, cut(r.label, 40)), r.label);\n"
    "        if (r.inner.length) {\n"
    "          lane(g, r.spans, y + 1, 7, 'sp');\n"
    "          lane(g, r.inner, y + 9, 6, 'sp in');\n"
    "        } else {\n"
    "          lane(g, r.spans, y + 2, RH - 4, 'sp');\n"
    "        }\n"
    "      });\n"
    "      ovs.setAttribute('data-view', view.a + ' ' + view.b);\n"
    "      if (range) range.textContent = 'showing +' + dur(Math.round(view.a)) + ' to +' + "
    "dur(Math.round(view.b)) +\n"
    "        ' (' + dur(Math.round(len)) + ')';\n"
    "    };\n"
    "    var show = function (a, b) {\n"
    "      var len = Math.min(W, Math.max(b - a, 1000));\n"
    "      a = Math.max(0, Math.min(a, W - len));\n"
    "      view = {a: a, b: a + len};\n"
    "      draw();\n"
    "    };\n"
    "    var zoom = function (f, at) {\n"
    "      var len = view.b - view.a;\n"
    "      show(at - (at - view.a) * f, at - (at - view.a) * f + len * f);\n"
    "    };\n"
    "    var mid = function () { return (view.a + view.b) / 2; };\n"
    "    var click = function (id, fn) { var b = document.getElementById(id); if (b) "
    "b.addEventListener('click', fn); };\n"
    "    click('ov-in', function () { zoom(0.5, mid()); });\n"
    "    click('ov-out', function () { zoom(2, mid()); });\n"
    "    click('ov-left', function () { show(view.a - (view.b - view.a) / 4, view.b - (view.b - view.a) / "
    "4); });\n"
    "    click('ov-right', function () { show(view.a + (view.b - view.a) / 4, view.b + (view.b - view.a) / "
    "4); });\n"
    "    click('ov-all', function () { show(0, W); });\n"
    "    var at = function (ev) {\n"
    "      var box = ovs.getBoundingClientRect(), x = (ev.clientX - box.left) * 1000 / box.width;\n"
    "      return view.a + (Math.min(LX + PW, Math.max(LX, x)) - LX) * (view.b - view.a) / PW;\n"
    "    };\n"
    "    ovs.addEventListener('wheel', function (ev) {\n"
    "      ev.preventDefault();\n"
    "      zoom(ev.deltaY < 0 ? 0.8 : 1.25, at(ev));\n"
    "    }, {passive: false});\n"
    "    var drag = null;\n"
    "    ovs.addEventListener('mousedown', function (ev) { drag = {x: ev.clientX, a: view.a, b: view.b}; "
    "});\n"
    "    window.addEventListener('mouseup', function () { drag = null; });\n"
    "    window.addEventListener('mousemove', function (ev) {\n"
    "      if (!drag) return;\n"
    "      var box = ovs.getBoundingClientRect();\n"
    "      var d = (ev.clientX - drag.x) * 1000 / box.width * (drag.b - drag.a) / PW;\n"
    "      show(drag.a - d, drag.b - d);\n"
    "    });\n"
    "    window.strobeOverview = {show: show};\n"
    "    if (sb)\n"
    "      sb.addEventListener('click', function (ev) {\n"
    "        var i = ev.target.getAttribute('data-step');\n"
    "        if (i === null) return;\n"
    "        var st = D.steps[+i], pad = st.dur_ns * 0.05;\n"
    "        show(st.start_ns - pad, st.start_ns + st.dur_ns + pad);\n"
    "        ovs.scrollIntoView({block: 'center'});\n"
    "      });\n"
    "    draw();\n"
    "  }\n"
    "  /* Each chart scales down to a narrow window. */\n"
    "  document.querySelectorAll('svg').forEach(function (s) {\n"
    "    s.setAttribute('viewBox', '0 0 ' + s.getAttribute('width') + ' ' + s.getAttribute('height'));\n"
    "  });\n"
    "  if (document.body.dataset.rendered !== 'error') document.body.dataset.rendered = 'ok';\n"
    "})();\n"
    "</script>\n";

int an_html_page(const struct an_view *v, char **page, size_t *len)
{
	const struct an_trace *a = v->a;
	FILE *p = open_memstream(page, len);
	if (!p)
		return -ENOMEM;
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>strobe report: ", p);
	an_html_escape(p, v->file);
	fprintf(
	    p,
	    "</title>\n<style>\n%s</style>\n</head>\n<body data-rendered=\"no\">\n<h1>strobe report</h1>\n",
	    an_html_style);
	fputs("<div id=\"errors\"></div>\n", p);
	facts(p, a, v->file, v->st);
	struct an_overview ov;
	int rc = an_overview(a, MAX_OVERVIEW_ROWS, MAX_OVERVIEW_SPANS, &ov);
	overview_section(p, &ov);
	if (a->nsteps) {
		section(p, &an_steps);
		fprintf(p, "<svg id=\"step-bars\" class=\"steps\" width=\"1000\" height=\"170\"></svg>\n");
		html_table(p, v, &an_steps, an_steps.rows(v), NULL);
	}
	cpu_charts(p, &ov);
	if (a->ndevices) {
		timelines(p, a);
		titled(p, v, &an_devices);
		fputs("<h2>Stream occupancy</h2>\n<p class=\"note\">Busy % of the window per stream.</p>\n"
		      "<svg id=\"stream-occupancy\" class=\"occ\" width=\"1000\" height=\"20\"></svg>\n",
		      p);
	}
	if (a->nkernel_stats) {
		section(p, &an_kernels);
		fputs("<svg id=\"kernel-bars\" class=\"bars\" width=\"1000\" height=\"20\"></svg>\n", p);
		html_table(p, v, &an_kernels, an_kernels.rows(v), NULL);
	}
	titled(p, v, &an_breakdown);
	titled(p, v, &an_ktypes);
	titled(p, v, &an_knames);
	titled(p, v, &an_idle_streams);
	titled(p, v, &an_launch_stats);
	titled(p, v, &an_queues);
	titled(p, v, &an_membw);
	titled(p, v, &an_kseqs);
	titled(p, v, &an_cpaths);
	titled(p, v, &an_memcpy);
	titled(p, v, &an_latency);
	memory_charts(p, v);
	titled(p, v, &an_cpu_ops);
	titled(p, v, &an_categories);
	names_tables(p, v);
	titled(p, v, &an_instants);
	titled(p, v, &an_counters);
	section(p, &an_accounting);
	if (!a->strobe_meta)
		fputs("<p class=\"note\">The trace has no \"strobe\" metadata with drop counts.</p>\n", p);
	html_table(p, v, &an_accounting, an_accounting.rows(v), NULL);
	fputs("<p class=\"note\">Written by strobe ", p);
	an_html_escape(p, strobe_version());
	fputs(". Times are in the trace's clock; percentiles are nearest-rank over every duration.</p>\n", p);
	if (!rc)
		rc = chart_data(p, v, &ov);
	an_overview_free(&ov);
	fputs(script, p);
	fputs("</body></html>\n", p);
	if (ferror(p) | fclose(p))
		rc = -ENOMEM;
	return rc;
}

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

#include "analysis/present.h"
#include "strobe/strobe.h"

#define MAX_CHART_DEVICES 64  /* timelines drawn; the devices table lists them all */
#define MAX_CHART_STEPS   500 /* bars in the step chart; the steps table lists them all */

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
    "th{background:#f4f5f8;font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;"
    "white-space:nowrap}\n"
    "td.name{max-width:560px;overflow-wrap:anywhere;font-family:ui-monospace,monospace;font-size:12px}\n"
    ".warn{color:#a4262c;font-weight:600}.more,.note{color:#5b6475;font-size:12px}\n"
    "#errors{color:#a4262c;white-space:pre-wrap}\n"
    "svg{display:block;margin:4px 0}svg text{font:11px system-ui,sans-serif;fill:#3b4252}\n"
    ".util rect.bg{fill:#f4f5f8}.util rect.b{fill:#3d7dd8}.bars rect.bar{fill:#5a9e6f}"
    ".occ rect.bar{fill:#c98a2b}.steps rect.bar{fill:#9fb7d9}.steps rect.out{fill:#d9534f}"
    ".steps rect.busy{fill:#3d7dd8}\n"
    ".facts td:first-child{color:#5b6475}\n";

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

static void facts(FILE *p, const struct an_trace *a, const char *file, const struct tr_stats *st)
{
	char b1[40];
	fputs("<table id=\"facts\" class=\"facts\"><tbody>\n<tr><td>file</td>", p);
	cell_text(p, file);
	if (st->perfetto)
		fprintf(p, "</tr>\n<tr><td>size</td><td>%" PRIu64 " bytes (Perfetto protobuf)</td></tr>\n",
		        st->file_bytes);
	else
		fprintf(p,
		        "</tr>\n<tr><td>size</td><td>%" PRIu64 " bytes (%s), %" PRIu64
		        " bytes of JSON</td></tr>\n",
		        st->file_bytes,
		        st->compression == TR_GZIP   ? "gzip"
		        : st->compression == TR_ZSTD ? "zstd"
		                                     : "plain",
		        st->json_bytes);
	fprintf(p, "<tr><td>events</td><td>%" PRIu64 "</td></tr>\n", st->events);
	if (a->timed && a->has_base) {
		char from[40], to[40];
		fprintf(
		    p,
		    "<tr><td>window</td><td title=\"ts %" PRId64 " to %" PRId64
		    " ns after baseTimeNanoseconds\">%s, %s to %s UTC</td></tr>\n",
		    a->first_ts, a->last_end, an_fmt_dur(an_window(a), b1, sizeof(b1)),
		    wall_clock(an_sat_add(a->base_ns, a->first_ts), "%Y-%m-%d %H:%M:%S", from, sizeof(from)),
		    wall_clock(an_sat_add(a->base_ns, a->last_end), "%H:%M:%S", to, sizeof(to)));
	} else if (a->timed) {
		fprintf(p, "<tr><td>window</td><td title=\"ts %" PRId64 " to %" PRId64 " ns\">%s</td></tr>\n",
		        a->first_ts, a->last_end, an_fmt_dur(an_window(a), b1, sizeof(b1)));
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
static int chart_data(FILE *p, const struct an_view *v)
{
	const struct an_trace *a = v->a;
	char label[TR_SHORT_MAX + 32], buf[32];
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return -ENOMEM;
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
		gnum(g, "dur_ns", (double)st->dur);
		gnum(g, "busy_ns", st->pid == UINT32_MAX ? -1.0 : (double)st->busy);
		gs(g, "outlier");
		yajl_gen_bool(g, st->outlier);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
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
    "      var r = el('rect', {'class': s.outlier ? 'bar out' : 'bar', x: (x + sw * 0.1).toFixed(2),\n"
    "                          y: (140 - h).toFixed(2), width: (sw * 0.8).toFixed(2), height: h.toFixed(2)}, "
    "sb);\n"
    "      el('title', {}, r, s.name + ': ' + dur(s.dur_ns) + (s.busy_ns >= 0 ? ', GPU busy ' + "
    "dur(s.busy_ns) : '')\n"
    "         + (s.outlier ? ' (outlier)' : ''));\n"
    "      if (s.busy_ns >= 0) {\n"
    "        var b = 140 * s.busy_ns / smax;\n"
    "        el('rect', {'class': 'busy', x: (x + sw * 0.3).toFixed(2), y: (140 - b).toFixed(2),\n"
    "                    width: (sw * 0.4).toFixed(2), height: b.toFixed(2)}, sb);\n"
    "      }\n"
    "    });\n"
    "    el('text', {x: 0, y: 156}, sb, D.steps[0].name);\n"
    "    el('text', {x: 1000, y: 156, 'text-anchor': 'end'}, sb, D.steps[D.steps.length - 1].name + "
    "', longest ' + dur(smax));\n"
    "  }\n"
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
	if (a->nsteps) {
		section(p, &an_steps);
		fprintf(p, "<svg id=\"step-bars\" class=\"steps\" width=\"1000\" height=\"170\"></svg>\n");
		html_table(p, v, &an_steps, an_steps.rows(v), NULL);
	}
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
	int rc = chart_data(p, v);
	fputs(script, p);
	fputs("</body></html>\n", p);
	if (ferror(p) | fclose(p))
		rc = -ENOMEM;
	return rc;
}

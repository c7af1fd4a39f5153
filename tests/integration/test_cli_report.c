/* strobe report, checked in headless Chromium: the page renders with no
 * script error, its charts have their bars, its tables hold the trace's
 * names (escaped), and it loads nothing from outside. Skipped, with the
 * reason, when no Chromium is installed (scripts/dev installs Debian's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "testutil.h"

#define FIXTURE STROBE_TEST_DATA_DIR "/libkineto-sample.json"

static char chromium[256];
static char dir[1024];

#define EVENT(fmt, ...) n += snprintf(buf + n, cap - n, fmt ",\n", __VA_ARGS__)

/* A two-rank training loop: per rank, a host process and one GPU with a
 * compute stream (7), a copy stream (8) and an NCCL stream (20); each step
 * copies a batch, runs a GEMM and an elementwise kernel, then an all-reduce
 * that overlaps the next step's copy. Kernel names carry < > &. When
 * STROBE_REPORT_DEMO names a file, the trace is also written there (the
 * docs' screenshot is made from it). */
static char *training_trace(int steps)
{
	size_t cap = (size_t)steps * 8192 + 8192, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	n += snprintf(
	    buf + n, cap - n,
	    "{\"host_name\": \"node-a\", \"strobe\": {\"dropped_events\": 2, "
	    "\"threads\": 2}, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 2},\n"
	    "\"traceEvents\": [\n");
	int corr = 1;
	for (int r = 0; r < 2; r++) {
		int host = 1000 * (r + 1), gpu = host + 1;
		for (int s = 0; s < steps; s++) {
			long t = 1000L * s + 37 * r;
			int g = 180 + (s % 5) * 20 + 30 * r;
			EVENT("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": %d, "
			      "\"tid\": %d, "
			      "\"ts\": %ld, \"dur\": 300}",
			      host, host, t);
			const char *names[] = {
			    "Memcpy HtoD (Pinned -> Device)", "ampere_sgemm_128x64_tn",
			    "void at::native::elementwise_kernel<128, 4, relu<float>&>(int)",
			    "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
			const char *cats[] = {"gpu_memcpy", "kernel", "kernel", "kernel"};
			long starts[] = {t + 20, t + 60, t + 70 + g, t + 330};
			long durs[] = {30, g, 50 + (s % 3) * 10, 420};
			int streams[] = {8, 7, 7, 20};
			for (int k = 0; k < 4; k++, corr++) {
				EVENT("{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": "
				      "\"cudaLaunchKernel\", \"pid\": "
				      "%d, \"tid\": %d, \"ts\": %ld, \"dur\": 6, \"args\": {\"correlation\": "
				      "%d}}",
				      host, host, t + 5 + 10 * k + (k == 3 ? 300 : 0), corr);
				EVENT(
				    "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": %d, "
				    "\"tid\": %d, \"ts\": "
				    "%ld, \"dur\": %ld, \"args\": {\"correlation\": %d, \"bytes\": 4194304}}",
				    cats[k], names[k], gpu, streams[k], starts[k], durs[k], corr);
			}
			/* The GPU's memory: up 1 MiB a step to the middle step, then down. */
			EVENT("{\"ph\": \"C\", \"cat\": \"hardware_counters\", \"name\": \"GPU memory "
			      "allocated "
			      "(bytes)\", \"pid\": %d, \"tid\": 0, \"ts\": %ld, \"args\": {\"GPU memory "
			      "allocated "
			      "(bytes)\": %ld}}",
			      gpu, t + 100, (1L << 30) + (s < steps / 2 ? s : steps - s) * (1L << 20));
		}
		EVENT("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": "
		      "{\"name\": "
		      "\"rank %d · node-a · pid %d\"}}",
		      host, r, host);
		EVENT("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": "
		      "{\"name\": "
		      "\"rank %d · node-a · GPU %d\"}}",
		      gpu, r, r);
	}
	snprintf(buf + n, cap - n,
	         "{\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", "
	         "\"tid\": \"\", \"ts\": %d}]}\n",
	         steps * 1000 + 400);
	const char *demo = getenv("STROBE_REPORT_DEMO");
	if (demo)
		assert_int_equal(tu_write_file(demo, buf), 0);
	return buf;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	char *out = NULL;
	if (tu_run("command -v chromium || command -v chromium-browser || command -v google-chrome", 0,
	           &out) == 0 &&
	    out) {
		out[strcspn(out, "\n")] = 0;
		snprintf(chromium, sizeof(chromium), "%s", out);
	}
	free(out);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	return 0;
}

static void need_chromium(void)
{
	if (!*chromium) {
		print_message(
		    "SKIPPED: no chromium on PATH (Debian: apt-get install chromium; scripts/dev deps "
		    "installs it)\n");
		skip();
	}
}

static int report(const char *args, char **out)
{
	return tu_strobe("report", args, 1, out);
}

/* Writes text as dir/name.json and its report as dir/name.html; returns
 * the page's path. */
static const char *make_report(const char *text, const char *name, const char *extra)
{
	static char html[2048];
	char trace[2048], args[4608], *out = NULL;
	snprintf(trace, sizeof(trace), "%s/%s.json", dir, name);
	snprintf(html, sizeof(html), "%s/%s.html", dir, name);
	assert_int_equal(tu_write_file(trace, text), 0);
	snprintf(args, sizeof(args), "%s -o '%s' '%s'", extra, html, trace);
	if (report(args, &out) != 0)
		fail_msg("strobe report failed:\n%s", out);
	free(out);
	return html;
}

/* The page's DOM after its scripts ran, into the caller's *dom (an out
 * parameter of the caller's frame, which GCC's dangling-pointer analysis
 * cannot confuse with a local of this one). */
static void render(const char *html, char **dom)
{
	char cmd[4096];
	snprintf(cmd, sizeof(cmd),
	         "timeout 60 '%s' --headless --no-sandbox --disable-gpu --no-first-run "
	         "--user-data-dir='%s/profile' --dump-dom 'file://%s' 2>/dev/null",
	         chromium, dir, html);
	*dom = NULL;
	int rc = tu_run(cmd, 0, dom);
	if (rc != 0 || !*dom)
		fail_msg("chromium exited with status %d", rc);
}

/* The text of the element that starts with open, up to the first close. */
static char *element(const char *dom, const char *open, const char *close)
{
	const char *s = strstr(dom, open);
	if (!s)
		fail_msg("no %s in the page:\n%.4000s", open, dom);
	const char *e = strstr(s, close);
	assert_non_null(e);
	return strndup(s, (size_t)(e - s));
}

static size_t count(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void assert_rendered(const char *dom)
{
	tu_assert_contains(dom, "data-rendered=\"ok\"");
	tu_assert_contains(dom, "<div id=\"errors\"></div>");
}

/* ---- layout: measured in the page, and seen in a screenshot --------------- */

#define PAGE_W 1280
#define PAGE_H 1600

/* Run inside the page after its own script: the page's width and scroll
 * width, the elements that pass its right edge, each SVG chart's drawn
 * shapes (with a nonzero size), the overview's rows, resources loaded,
 * where the overview and the body are; then a click on a step's bar, and
 * the overview's view and widest shape per row after it. */
static const char layout_script[] =
    "<script>\n"
    "(function () {\n"
    "  var R = {}, W = document.documentElement.clientWidth;\n"
    "  R.width = W;\n"
    "  R.scroll_width = document.documentElement.scrollWidth;\n"
    "  R.too_wide = [];\n"
    "  document.querySelectorAll('body *').forEach(function (e) {\n"
    "    var b = e.getBoundingClientRect();\n"
    "    if (b.right > W + 0.5 && R.too_wide.length < 5)\n"
    "      R.too_wide.push(e.tagName + '#' + e.id + ' ' + Math.round(b.right));\n"
    "  });\n"
    "  R.charts = {};\n"
    "  document.querySelectorAll('svg').forEach(function (s) {\n"
    "    var n = 0, b = s.getBoundingClientRect();\n"
    "    s.querySelectorAll('rect').forEach(function (r) {\n"
    "      var q = r.getBoundingClientRect();\n"
    "      if (q.width > 0 && q.height > 0) n++;\n"
    "    });\n"
    "    R.charts[s.id] = {drawn: n, width: b.width, height: b.height};\n"
    "  });\n"
    "  var rows = function () {\n"
    "    var out = [];\n"
    "    document.querySelectorAll('#overview g.row').forEach(function (g) {\n"
    "      var n = 0, widest = 0, inner = 0, inner_widest = 0;\n"
    "      g.querySelectorAll('rect').forEach(function (r) {\n"
    "        var w = r.getBoundingClientRect().width, isin = r.getAttribute('class') === 'sp in';\n"
    "        if (w > 0) n++;\n"
    "        if (w > 0 && isin) inner++;\n"
    "        if (isin) inner_widest = Math.max(inner_widest, w);\n"
    "        else widest = Math.max(widest, w);\n"
    "      });\n"
    "      out.push({label: g.querySelector('title').textContent, kind: g.getAttribute('class'),\n"
    "                drawn: n, widest: widest, inner: inner, inner_widest: inner_widest});\n"
    "    });\n"
    "    return out;\n"
    "  };\n"
    "  R.rows = rows();\n"
    "  R.resources = performance.getEntriesByType('resource').length;\n"
    "  var ov = document.getElementById('overview');\n"
    "  if (ov) {\n"
    "    var b = ov.getBoundingClientRect();\n"
    "    R.overview = {x: b.left + window.scrollX, y: b.top + window.scrollY, w: b.width, h: b.height};\n"
    "  }\n"
    "  R.body_right = document.body.getBoundingClientRect().right;\n"
    "  var bar = document.querySelector('#step-bars rect[data-step=\"2\"]');\n"
    "  if (bar && ov) {\n"
    "    bar.dispatchEvent(new MouseEvent('click', {bubbles: true}));\n"
    "    R.step_view = ov.getAttribute('data-view');\n"
    "    R.step_rows = rows();\n"
    "  }\n"
    "  var pre = document.createElement('pre');\n"
    "  pre.id = 'layout';\n"
    "  pre.textContent = JSON.stringify(R);\n"
    "  document.body.appendChild(pre);\n"
    "  window.scrollTo(0, 0);\n"
    "})();\n"
    "</script>\n";

/* The layout of page html in a PAGE_W wide window, as JSON (free it with
 * yajl_tree_free). */
static yajl_val layout(const char *html)
{
	char probe[2048], cmd[4096];
	snprintf(probe, sizeof(probe), "%s.layout.html", html);
	char *page = tu_read_file(html, NULL);
	assert_non_null(page);
	char *end = strstr(page, "</body></html>");
	assert_non_null(end);
	*end = 0;
	size_t len = strlen(page) + sizeof(layout_script) + 32;
	char *text = malloc(len);
	assert_non_null(text);
	snprintf(text, len, "%s%s</body></html>\n", page, layout_script);
	assert_int_equal(tu_write_file(probe, text), 0);
	free(text);
	free(page);
	snprintf(cmd, sizeof(cmd),
	         "timeout 60 '%s' --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars "
	         "--user-data-dir='%s/profile' --window-size=%d,%d --dump-dom 'file://%s' 2>/dev/null",
	         chromium, dir, PAGE_W, PAGE_H, probe);
	char *dom = NULL;
	int rc = tu_run(cmd, 0, &dom);
	if (rc != 0 || !dom)
		fail_msg("chromium exited with status %d", rc);
	assert_rendered(dom);
	char *s = strstr(dom, "<pre id=\"layout\">");
	if (!s)
		fail_msg("the layout script did not run:\n%.2000s", dom);
	s += strlen("<pre id=\"layout\">");
	char *e = strstr(s, "</pre>");
	assert_non_null(e);
	*e = 0;
	/* The text of an element: only & < > are escaped. */
	char *w = s;
	for (char *r = s; *r;) {
		const char *ents[] = {"&amp;", "&lt;", "&gt;"}, chars[] = "&<>";
		size_t k = 0;
		while (k < 3 && strncmp(r, ents[k], strlen(ents[k])))
			k++;
		*w++ = k < 3 ? chars[k] : *r;
		r += k < 3 ? strlen(ents[k]) : 1;
	}
	*w = 0;
	yajl_val v = tu_parse_json(s);
	if (!v)
		fail_msg("layout is not JSON: %s", s);
	free(dom);
	return v;
}

/* An RGB(A) image decoded from a PNG file (8 bits per channel, not
 * interlaced: what Chromium writes). */
struct image {
	unsigned w, h, bpp;
	unsigned char *px; /* rows of w * bpp bytes */
};

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int paeth(int a, int b, int c)
{
	int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
	return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

static struct image read_png(const char *path)
{
	size_t len = 0;
	unsigned char *f = (unsigned char *)tu_read_file(path, &len);
	assert_non_null(f);
	assert_true(len > 33 && !memcmp(f, "\x89PNG\r\n\x1a\n", 8));
	struct image im = {be32(f + 16), be32(f + 20), 0, NULL};
	assert_int_equal(f[24], 8); /* bit depth */
	assert_true(f[25] == 2 || f[25] == 6);
	im.bpp = f[25] == 6 ? 4 : 3;
	size_t stride = (size_t)im.w * im.bpp, raw_len = (stride + 1) * im.h;
	unsigned char *raw = malloc(raw_len);
	im.px = malloc(stride * im.h);
	assert_true(raw && im.px);
	z_stream z = {0};
	assert_int_equal(inflateInit(&z), Z_OK);
	z.next_out = raw;
	z.avail_out = (uInt)raw_len;
	for (size_t at = 8; at + 12 <= len;) {
		uint32_t n = be32(f + at);
		if (!memcmp(f + at + 4, "IDAT", 4)) {
			z.next_in = f + at + 8;
			z.avail_in = n;
			int rc = inflate(&z, Z_NO_FLUSH);
			assert_true(rc == Z_OK || rc == Z_STREAM_END);
		}
		at += 12 + n;
	}
	assert_int_equal(z.total_out, raw_len);
	inflateEnd(&z);
	for (unsigned y = 0; y < im.h; y++) {
		unsigned char *in = raw + y * (stride + 1) + 1, *out = im.px + y * stride;
		const unsigned char *up = y ? out - stride : NULL;
		for (size_t x = 0; x < stride; x++) {
			int a = x >= im.bpp ? out[x - im.bpp] : 0, b = up ? up[x] : 0;
			int c = up && x >= im.bpp ? up[x - im.bpp] : 0;
			int pred[] = {0, a, b, (a + b) / 2, paeth(a, b, c)};
			assert_true(in[-1] < 5);
			out[x] = (unsigned char)(in[x] + pred[in[-1]]);
		}
	}
	free(raw);
	free(f);
	return im;
}

/* Pixels in [x0, x1) x [y0, y1) that are not the page's white. */
static size_t inked(const struct image *im, unsigned x0, unsigned y0, unsigned x1, unsigned y1)
{
	size_t n = 0;
	for (unsigned y = y0; y < y1 && y < im->h; y++)
		for (unsigned x = x0; x < x1 && x < im->w; x++) {
			const unsigned char *p = im->px + ((size_t)y * im->w + x) * im->bpp;
			n += p[0] < 240 || p[1] < 240 || p[2] < 240;
		}
	return n;
}

/* The page's screenshot at PAGE_W x PAGE_H: nothing drawn right of the
 * body, and the overview (where the layout says it is) drawn. */
static void check_screenshot(const char *html, yajl_val lay)
{
	char png[2048], cmd[4096];
	snprintf(png, sizeof(png), "%s.png", html);
	snprintf(cmd, sizeof(cmd),
	         "timeout 60 '%s' --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars "
	         "--user-data-dir='%s/profile' --window-size=%d,%d --screenshot='%s' 'file://%s' "
	         ">/dev/null 2>&1",
	         chromium, dir, PAGE_W, PAGE_H, png, html);
	assert_int_equal(tu_run(cmd, 0, NULL), 0);
	struct image im = read_png(png);
	assert_int_equal(im.w, PAGE_W);
	assert_int_equal(im.h, PAGE_H);
	unsigned right = (unsigned)tu_get_num(lay, "body_right") + 1;
	assert_true(right < PAGE_W);
	size_t stray = inked(&im, right, 0, PAGE_W, PAGE_H);
	if (stray)
		fail_msg("%zu pixels drawn right of the page's body (x >= %u)", stray, right);
	yajl_val ov = tu_get(lay, "overview");
	assert_non_null(ov);
	unsigned x = (unsigned)tu_get_num(ov, "x"), y = (unsigned)tu_get_num(ov, "y");
	unsigned w = (unsigned)tu_get_num(ov, "w"), h = (unsigned)tu_get_num(ov, "h");
	assert_true(y + h <= PAGE_H); /* the overview is on the first screen */
	size_t ink = inked(&im, x, y, x + w, y + h);
	if (ink < (size_t)w * h / 20)
		fail_msg("the overview (%ux%u at %u,%u) has %zu pixels drawn", w, h, x, y, ink);
	free(im.px);
}

/* The page fits its window, loads nothing, and every chart in charts (a
 * NULL-terminated list) is drawn, with nothing else. */
static void check_layout(yajl_val lay, const char *const *charts)
{
	assert_int_equal((long)tu_get_num(lay, "scroll_width"), (long)tu_get_num(lay, "width"));
	yajl_val wide = tu_get(lay, "too_wide");
	if (wide->u.array.len)
		fail_msg("wider than the page: %s", YAJL_GET_STRING(wide->u.array.values[0]));
	assert_int_equal((long)tu_get_num(lay, "resources"), 0);
	yajl_val all = tu_get(lay, "charts");
	size_t n = 0;
	for (; charts[n]; n++) {
		yajl_val c = tu_get(all, charts[n]);
		if (!c)
			fail_msg("no chart %s", charts[n]);
		if (tu_get_num(c, "drawn") < 1 || tu_get_num(c, "width") < 100 ||
		    tu_get_num(c, "height") < 20)
			fail_msg("chart %s: %g shapes drawn, %gx%g", charts[n], tu_get_num(c, "drawn"),
			         tu_get_num(c, "width"), tu_get_num(c, "height"));
	}
	assert_int_equal(YAJL_GET_OBJECT(all)->len, n);
}

/* The overview's rows, in order, with their labels and kinds, each drawn. */
static void check_rows(yajl_val lay, const char *const *labels, const char *const *kinds)
{
	yajl_val rows = tu_get(lay, "rows");
	size_t n = 0;
	for (; labels[n]; n++) {
		if (n >= rows->u.array.len)
			fail_msg("overview: %zu rows, no \"%s\"", rows->u.array.len, labels[n]);
		yajl_val r = rows->u.array.values[n];
		assert_string_equal(tu_get_str(r, "label"), labels[n]);
		assert_string_equal(tu_get_str(r, "kind"), kinds[n]);
		assert_true(tu_get_num(r, "drawn") >= 1);
	}
	assert_int_equal(rows->u.array.len, n);
}

static void test_training_report_renders(void **state)
{
	(void)state;
	need_chromium();
	char *trace = training_trace(40);
	const char *html = make_report(trace, "train", "");
	free(trace);

	/* Nothing from outside: no src or href, no stylesheet links. */
	char *page = tu_read_file(html, NULL);
	assert_non_null(page);
	assert_null(strstr(page, "src="));
	assert_null(strstr(page, "href="));
	assert_null(strstr(page, "<link"));
	assert_null(strstr(page, "relu<float>")); /* escaped everywhere, also in the chart data */
	free(page);

	char *dom;
	render(html, &dom);
	assert_rendered(dom);
	/* One utilisation timeline per GPU, with bars for the busy slices. */
	for (int i = 0; i < 2; i++) {
		char id[64];
		snprintf(id, sizeof(id), "<svg id=\"util-%d\"", i);
		char *svg = element(dom, id, "</svg>");
		size_t bars = count(svg, "class=\"b\"");
		if (bars < 100 || bars > 200)
			fail_msg("util-%d has %zu bars", i, bars);
		free(svg);
	}
	/* Three kernels per rank: six bars; three streams per GPU: six rows. */
	char *svg = element(dom, "<svg id=\"kernel-bars\"", "</svg>");
	assert_int_equal(count(svg, "class=\"bar\""), 6);
	tu_assert_contains(svg, "ampere_sgemm_128x64_tn");
	free(svg);
	svg = element(dom, "<svg id=\"stream-occupancy\"", "</svg>");
	assert_int_equal(count(svg, "class=\"bar\""), 6);
	free(svg);

	char *table = element(dom, "<table id=\"kernels\"", "</table>");
	tu_assert_contains(table,
	                   "void at::native::elementwise_kernel&lt;128, 4, relu&lt;float&gt;&amp;&gt;(int)");
	tu_assert_contains(table, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
	tu_assert_contains(table, "rank 1");
	free(table);
	table = element(dom, "<table id=\"overlap\"", "</table>");
	tu_assert_contains(table, "rank 0 · node-a · GPU 0");
	free(table);
	table = element(dom, "<table id=\"facts\"", "</table>");
	tu_assert_contains(table, "node-a");
	tu_assert_contains(table, "0, 1");
	tu_assert_contains(table, "<td>rank</td><td>0 (distributedInfo)</td>");
	free(table);
	table = element(dom, "<table id=\"accounting\"", "</table>");
	tu_assert_contains(table, "<tr class=\"warn\"><td>dropped_events</td><td class=\"n\">2</td>");
	free(table);
	tu_assert_contains(dom, "<table id=\"memcpy\"");
	tu_assert_contains(dom, "<table id=\"latency\"");
	/* Each GPU's memory level, drawn, and its peak in the middle step,
	 * inside aten::linear. */
	for (int i = 0; i < 2; i++) {
		char id[64];
		snprintf(id, sizeof(id), "<svg id=\"mem-%d\"", i);
		svg = element(dom, id, "</svg>");
		size_t bars = count(svg, "class=\"b\"");
		if (bars < 100 || bars > 200)
			fail_msg("mem-%d has %zu bars", i, bars);
		tu_assert_contains(svg, "peak 1094713344 bytes at +");
		free(svg);
	}
	table = element(dom, "<table id=\"gpu-memory\"", "</table>");
	tu_assert_contains(table, "rank 1 · node-a · GPU 1");
	tu_assert_contains(table, "1094713344");
	tu_assert_contains(table, "aten::linear");
	free(table);
	free(dom);
}

/* The GPU page: fits a 1280 px window, loads nothing, draws every chart,
 * and its overview has a row per host thread and per stream, named as in
 * the trace; the screenshot shows the overview and nothing past the page. */
static void test_gpu_page_layout(void **state)
{
	(void)state;
	need_chromium();
	char *trace = training_trace(40);
	const char *html = make_report(trace, "layout-gpu", "");
	free(trace);
	yajl_val lay = layout(html);
	const char *const charts[] = {"overview",         "thread-occupancy", "name-bars", "util-0", "util-1",
	                              "stream-occupancy", "kernel-bars",      "mem-0",     "mem-1",  NULL};
	check_layout(lay, charts);
	const char *const labels[] = {"rank 0 · node-a · pid 1000 · thread 1000",
	                              "rank 0 · node-a · GPU 0 · stream 7",
	                              "rank 0 · node-a · GPU 0 · stream 8",
	                              "rank 0 · node-a · GPU 0 · stream 20",
	                              "rank 1 · node-a · pid 2000 · thread 2000",
	                              "rank 1 · node-a · GPU 1 · stream 7",
	                              "rank 1 · node-a · GPU 1 · stream 8",
	                              "rank 1 · node-a · GPU 1 · stream 20",
	                              NULL};
	const char *const kinds[] = {"row thread", "row stream", "row stream", "row stream",
	                             "row thread", "row stream", "row stream", "row stream"};
	check_rows(lay, labels, kinds);
	check_screenshot(html, lay);
	yajl_tree_free(lay);
}

/* A CPU-only trace: two named threads, steps with nested ranges, and
 * start/end ranges on strobe's rows for them. Step N runs 1 ms from
 * 1.1 N ms; the last batch ends at 7.9 ms, 2026-10-01 12:17:06.007 UTC. */
static char *cpu_trace(void)
{
	size_t cap = 16384, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	n += snprintf(buf + n, cap - n,
	              "{\"baseTimeNanoseconds\": 1790857026000000000, \"traceEvents\": [\n"
	              "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 100, \"tid\": 0, \"args\": "
	              "{\"name\": \"trainer.py\"}},\n"
	              "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 100, \"tid\": 101, \"args\": "
	              "{\"name\": \"MainThread\"}},\n"
	              "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 100, \"tid\": 102, \"args\": "
	              "{\"name\": \"loader\"}},\n"
	              "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 100, \"tid\": 281474976710656, "
	              "\"args\": {\"name\": \"start/end ranges\"}},\n"
	              "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 100, \"tid\": 281474976710657, "
	              "\"args\": {\"name\": \"start/end ranges (2)\"}},\n");
	for (int s = 0; s < 6; s++) {
		long t = 1100L * s;
		EVENT("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", \"pid\": "
		      "100, "
		      "\"tid\": 101, \"ts\": %ld, \"dur\": 1000}",
		      s, t);
		EVENT("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 100, "
		      "\"tid\": 101, \"ts\": %ld, \"dur\": 500}",
		      t + 100);
		EVENT("{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::relu\", \"pid\": 100, "
		      "\"tid\": 101, \"ts\": %ld, \"dur\": 200}",
		      t + 300);
		EVENT("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"load_batch\", \"pid\": 100, "
		      "\"tid\": 102, \"ts\": %ld, \"dur\": 400}",
		      t + 500);
		EVENT("{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"batch in flight\", \"pid\": "
		      "100, \"tid\": %ld, \"ts\": %ld, \"dur\": 1500}",
		      281474976710656L + s % 2, t + 900);
	}
	n +=
	    snprintf(buf + n, cap - n,
	             "{\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": "
	             "\"\", \"ts\": 6500}]}\n");
	assert_true(n < cap);
	return buf;
}

/* The CPU-only page still has charts: the overview with a row per thread
 * and per start/end row, the steps, thread occupancy and time by name; a
 * click on step 2's bar zooms the overview to that step, which then fills
 * most of the main thread's row. Its header says times as a person reads
 * them, and no table shows a time longer than the window. */
static void test_cpu_page_layout(void **state)
{
	(void)state;
	need_chromium();
	char *trace = cpu_trace();
	const char *html = make_report(trace, "layout-cpu", "");
	free(trace);
	yajl_val lay = layout(html);
	const char *const charts[] = {"overview", "step-bars", "thread-occupancy", "name-bars", NULL};
	check_layout(lay, charts);
	const char *const labels[] = {"trainer.py · MainThread", "trainer.py · loader",
	                              "trainer.py · start/end ranges", "trainer.py · start/end ranges (2)",
	                              NULL};
	const char *const kinds[] = {"row thread", "row thread", "row async", "row async"};
	check_rows(lay, labels, kinds);
	/* Step 2 runs 2.2 to 3.2 ms; the view adds 5% each side. */
	assert_string_equal(tu_get_str(lay, "step_view"), "2150000 3250000");
	yajl_val main_row = tu_get(lay, "step_rows")->u.array.values[0];
	double widest = tu_get_num(main_row, "widest");
	if (widest < 600 || widest > 700)
		fail_msg("step 2 is %g px wide in the zoomed overview (740 px for 1.1 ms)", widest);
	/* Below it, the op inside it: aten::linear, 0.5 ms of the 1.1 ms. */
	assert_int_equal((int)tu_get_num(main_row, "inner"), 1);
	widest = tu_get_num(main_row, "inner_widest");
	if (widest < 310 || widest > 365)
		fail_msg("aten::linear is %g px wide in the zoomed overview", widest);
	yajl_val loader = tu_get(lay, "step_rows")->u.array.values[1];
	assert_int_equal((int)tu_get_num(loader, "inner"), 0);
	check_screenshot(html, lay);
	yajl_tree_free(lay);

	char *dom;
	render(html, &dom);
	char *table = element(dom, "<table id=\"facts\"", "</table>");
	tu_assert_contains(table,
	                   "<td>window</td><td>7.900 ms, 2026-10-01 12:17:06.000 to 12:17:06.007 UTC</td>");
	assert_null(strstr(table, "title="));
	free(table);
	/* 6 steps of 1 ms on one thread: 6 ms; batch in flight, apart: 7 ms
	 * in flight, of 9 ms summed over its two rows. */
	table = element(dom, "<table id=\"categories\"", "</table>");
	tu_assert_contains(table, "<td>user_annotation</td><td class=\"n\">12</td><td class=\"n\">7</td><td "
	                          "class=\"n\">6.000 ms</td>");
	tu_assert_contains(table, "<td>user_annotation (start/end ranges)</td><td class=\"n\">6</td><td "
	                          "class=\"n\">1</td><td class=\"n\">7.000 ms</td>");
	assert_null(strstr(table, "9.000 ms"));
	free(table);
	free(dom);
}

/* However many events, the overview's data stays bounded: 60000 events of
 * 1 µs with 1 µs gaps on one thread become at most 20000 stretches that
 * still start at the first event and end at the last. Steps that touch
 * stay apart where the budget allows. */
static void test_overview_bounded(void **state)
{
	(void)state;
	size_t cap = 60000 * 110 + 64, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	n += snprintf(buf, cap, "{\"traceEvents\": [\n");
	for (int i = 0; i < 60000; i++)
		n += snprintf(
		    buf + n, cap - n,
		    "%s{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op%d\", \"pid\": 1, \"tid\": 1, "
		    "\"ts\": %d, \"dur\": 1}",
		    i ? ",\n" : "", i % 7, 2 * i);
	/* Three steps end to end on thread 2: three stretches. */
	for (int i = 0; i < 3; i++)
		n += snprintf(
		    buf + n, cap - n,
		    ",\n{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", "
		    "\"pid\": 1, \"tid\": 2, \"ts\": %d, \"dur\": 10}",
		    i, 10 * i);
	snprintf(buf + n, cap - n, "]}\n");
	const char *html = make_report(buf, "bounded", "");
	free(buf);
	size_t len = 0;
	char *page = tu_read_file(html, &len);
	assert_non_null(page);
	if (len > 1500000)
		fail_msg("the page is %zu bytes", len);
	char *data = element(page, "<script type=\"application/json\" id=\"data\">", "</script>");
	yajl_val v = tu_parse_json(strchr(data, '>') + 1);
	assert_non_null(v);
	yajl_val rows = tu_get(tu_get(v, "overview"), "rows");
	assert_int_equal(rows->u.array.len, 2);
	yajl_val steps = tu_get(rows->u.array.values[1], "spans");
	assert_int_equal(steps->u.array.len, 12);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(YAJL_GET_INTEGER(steps->u.array.values[4 * i]), 10000 * i);
		assert_int_equal(YAJL_GET_INTEGER(steps->u.array.values[4 * i + 1]), 10000);
	}
	yajl_val row = rows->u.array.values[0];
	assert_int_equal((long long)tu_get_num(row, "busy_ns"), 60000000);
	yajl_val spans = tu_get(row, "spans");
	size_t k = spans->u.array.len;
	assert_int_equal(k % 4, 0);
	if (k / 4 > 20000 || k / 4 < 19000)
		fail_msg("%zu stretches", k / 4);
	assert_int_equal(YAJL_GET_INTEGER(spans->u.array.values[0]), 0);
	long long end =
	    YAJL_GET_INTEGER(spans->u.array.values[k - 4]) + YAJL_GET_INTEGER(spans->u.array.values[k - 3]);
	assert_int_equal(end, 119999000);
	long long events = 0;
	for (size_t i = 3; i < k; i += 4)
		events += YAJL_GET_INTEGER(spans->u.array.values[i]);
	assert_int_equal(events, 60000);
	yajl_tree_free(v);
	free(data);
	free(page);
}

/* libkineto's own GPU trace (a fake CUPTI's records): its HTA tables are
 * wide, yet the page fits; rows as libkineto names them. */
static void test_kineto_gpu_layout(void **state)
{
	(void)state;
	need_chromium();
	char *text = tu_read_file(STROBE_TEST_DATA_DIR "/libkineto-cuda-fake.json", NULL);
	assert_non_null(text);
	const char *html = make_report(text, "kineto-gpu", "");
	free(text);
	yajl_val lay = layout(html);
	const char *const charts[] = {"overview",         "thread-occupancy", "name-bars", "util-0",
	                              "stream-occupancy", "kernel-bars",      NULL};
	check_layout(lay, charts);
	const char *const labels[] = {"kdrv · thread 26346 (kdrv)",
	                              "kdrv · thread 26348 (bwd-thread)",
	                              "kdrv · stream 7 (sync)",
	                              "GPU 0 (pid 0) · stream 7",
	                              "GPU 0 (pid 0) · stream 8",
	                              "pid Spans · kdrv",
	                              NULL};
	const char *const kinds[] = {"row thread", "row thread", "row thread",
	                             "row stream", "row stream", "row span"};
	check_rows(lay, labels, kinds);
	yajl_tree_free(lay);
}

/* A name that tries to end the script element and start its own. */
static void test_hostile_names_stay_text(void **state)
{
	(void)state;
	need_chromium();
	const char *trace =
	    "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"</script><script>"
	    "document.body.dataset.rendered='pwned'</script><b id=x>&amp;\", \"pid\": 0, \"tid\": 7, \"ts\": "
	    "1, "
	    "\"dur\": 5}]}";
	const char *html = make_report(trace, "hostile", "");
	char *dom;
	render(html, &dom);
	assert_rendered(dom);
	assert_null(strstr(dom, "<b id=\"x\">"));
	char *table = element(dom, "<table id=\"kernels\"", "</table>");
	tu_assert_contains(table, "&lt;/script&gt;&lt;script&gt;");
	free(table);
	char *svg = element(dom, "<svg id=\"kernel-bars\"", "</svg>");
	assert_int_equal(count(svg, "class=\"bar\""), 1);
	free(svg);
	free(dom);
}

static void test_top_caps_tables_and_charts(void **state)
{
	(void)state;
	need_chromium();
	char text[8192];
	int n = snprintf(text, sizeof(text), "{\"traceEvents\": [");
	for (int i = 0; i < 8; i++)
		n += snprintf(
		    text + n, sizeof(text) - (size_t)n,
		    "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k%d\", \"pid\": 0, \"tid\": 7,"
		    " \"ts\": %d, \"dur\": %d}",
		    i ? "," : "", i, i * 100, 90 - i);
	snprintf(text + n, sizeof(text) - (size_t)n, "]}");
	const char *html = make_report(text, "top", "--top 3");
	char *dom;
	render(html, &dom);
	assert_rendered(dom);
	char *svg = element(dom, "<svg id=\"kernel-bars\"", "</svg>");
	assert_int_equal(count(svg, "class=\"bar\""), 3);
	tu_assert_contains(svg, "5 more not shown");
	free(svg);
	char *table = element(dom, "<table id=\"kernels\"", "</table>");
	assert_int_equal(count(table, "<td class=\"name\">"), 3);
	free(table);
	tu_assert_contains(dom, "5 more not shown (--top 0 shows all)");
	free(dom);
}

/* A big merged job: timelines for the first 64 devices, and a note. */
static void test_many_devices(void **state)
{
	(void)state;
	need_chromium();
	char *text = malloc(70 * 200 + 64);
	assert_non_null(text);
	int n = sprintf(text, "{\"traceEvents\": [");
	for (int i = 0; i < 70; i++)
		n +=
		    sprintf(text + n,
		            "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": %d, \"tid\": 7,"
		            " \"ts\": %d, \"dur\": 10}",
		            i ? "," : "", i, i);
	sprintf(text + n, "]}");
	const char *html = make_report(text, "devices", "");
	free(text);
	char *dom;
	render(html, &dom);
	assert_rendered(dom);
	assert_non_null(strstr(dom, "<svg id=\"util-63\""));
	assert_null(strstr(dom, "<svg id=\"util-64\""));
	tu_assert_contains(dom, "6 more devices not drawn");
	char *table = element(dom, "<table id=\"devices\"", "</table>");
	assert_int_equal(count(table, "<tr>"), 1 + 70); /* the header row, then one per device */
	free(table);
	char *svg = element(dom, "<svg id=\"stream-occupancy\"", "</svg>");
	assert_int_equal(count(svg, "class=\"bar\""), 64);
	free(svg);
	free(dom);
}

/* libkineto's own trace renders; its kernel is "Kernel" on stream 7. */
static void test_libkineto_fixture(void **state)
{
	(void)state;
	need_chromium();
	char *text = tu_read_file(FIXTURE, NULL);
	assert_non_null(text);
	const char *html = make_report(text, "kineto", "");
	free(text);
	char *dom;
	render(html, &dom);
	assert_rendered(dom);
	char *svg = element(dom, "<svg id=\"util-0\"", "</svg>");
	assert_true(count(svg, "class=\"b\"") > 0);
	free(svg);
	tu_assert_contains(dom, "stream 7");
	free(dom);
}

static void expect_failure(const char *args, const char *msg1, const char *msg2)
{
	char *out = NULL;
	assert_int_equal(report(args, &out), 1);
	tu_assert_contains(out, "strobe: ");
	tu_assert_contains(out, msg1);
	if (msg2)
		tu_assert_contains(out, msg2);
	free(out);
}

/* These need no browser. */
static void test_bad_input_and_atomic_output(void **state)
{
	(void)state;
	char html[2048], args[8192], path[2048];
	snprintf(html, sizeof(html), "%s/kept.html", dir);
	assert_int_equal(tu_write_file(html, "an earlier report\n"), 0);

	snprintf(path, sizeof(path), "%s/missing.json", dir);
	snprintf(args, sizeof(args), "-o '%s' '%s'", html, path);
	expect_failure(args, "missing.json", "No such file");

	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	assert_int_equal(tu_write_file(path, "these are my notes, not a trace\n"), 0);
	snprintf(args, sizeof(args), "-o '%s' '%s'", html, path);
	expect_failure(args, "notes.txt", "not JSON");

	snprintf(path, sizeof(path), "%s/cut.json", dir);
	assert_int_equal(tu_write_file(path, "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\""), 0);
	snprintf(args, sizeof(args), "-o '%s' '%s'", html, path);
	expect_failure(args, "cut.json", "truncated");

	/* A failed run leaves the earlier page as it was. */
	char *kept = tu_read_file(html, NULL);
	assert_string_equal(kept, "an earlier report\n");
	free(kept);

	snprintf(args, sizeof(args), "-o '%s/no/such/dir/r.html' '%s'", dir, FIXTURE);
	expect_failure(args, "cannot write the report", "no/such/dir");
	snprintf(args, sizeof(args), "-o '%s' '%s'", dir, FIXTURE);
	expect_failure(args, "cannot write the report", NULL);

	/* No temporary files left behind. */
	char *out = NULL;
	snprintf(args, sizeof(args), "ls -A '%s' | grep -c tmp", dir);
	tu_run(args, 0, &out);
	assert_string_equal(out, "0\n");
	free(out);
}

static void test_usage_and_default_name(void **state)
{
	(void)state;
	char *out = NULL, args[4096], path[2048];
	assert_int_equal(report("", &out), 2);
	tu_assert_contains(out, "usage: strobe report");
	free(out);
	assert_int_equal(report("- < /dev/null", &out), 2);
	tu_assert_contains(out, "-o OUT.html");
	free(out);
	assert_int_equal(report("--top many x.json", &out), 2);
	tu_assert_contains(out, "many");
	free(out);
	assert_int_equal(report("--frobnicate x.json", &out), 2);
	tu_assert_contains(out, "--frobnicate");
	free(out);
	assert_int_equal(report("--help", &out), 0);
	tu_assert_contains(out, "examples:");
	tu_assert_contains(out, "--top N");
	free(out);

	/* trace.json.gz gives trace.html beside it. */
	snprintf(path, sizeof(path), "%s/trace.json.gz", dir);
	snprintf(args, sizeof(args), "gzip -c '%s' > '%s'", FIXTURE, path);
	assert_int_equal(tu_run(args, 0, NULL), 0);
	snprintf(args, sizeof(args), "'%s'", path);
	assert_int_equal(report(args, &out), 0);
	tu_assert_contains(out, "trace.html");
	free(out);
	snprintf(path, sizeof(path), "%s/trace.html", dir);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_true(st.st_size > 1000);

	/* strobe --help lists the command. */
	snprintf(args, sizeof(args), "'%s' --help", STROBE_CLI_PATH);
	assert_int_equal(tu_run(args, 0, &out), 0);
	tu_assert_contains(out, "report ");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_training_report_renders),
	    cmocka_unit_test(test_gpu_page_layout),
	    cmocka_unit_test(test_cpu_page_layout),
	    cmocka_unit_test(test_overview_bounded),
	    cmocka_unit_test(test_kineto_gpu_layout),
	    cmocka_unit_test(test_hostile_names_stay_text),
	    cmocka_unit_test(test_top_caps_tables_and_charts),
	    cmocka_unit_test(test_many_devices),
	    cmocka_unit_test(test_libkineto_fixture),
	    cmocka_unit_test(test_bad_input_and_atomic_output),
	    cmocka_unit_test(test_usage_and_default_name),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

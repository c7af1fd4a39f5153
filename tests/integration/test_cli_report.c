/* strobe report, checked in headless Chromium: the page renders with no
 * script error, its charts have their bars, its tables hold the trace's
 * names (escaped), and it loads nothing from outside. Skipped, with the
 * reason, when no Chromium is installed (scripts/dev installs Debian's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
	    cmocka_unit_test(test_hostile_names_stay_text),
	    cmocka_unit_test(test_top_caps_tables_and_charts),
	    cmocka_unit_test(test_many_devices),
	    cmocka_unit_test(test_libkineto_fixture),
	    cmocka_unit_test(test_bad_input_and_atomic_output),
	    cmocka_unit_test(test_usage_and_default_name),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

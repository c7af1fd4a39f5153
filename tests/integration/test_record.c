/* strobe record end to end: real programs built with the toolkit's NVTX
 * headers (tests/programs/nvtx_app.c), run under the strobe command, and
 * the traces they leave checked as a user would read them. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

#define APP   STROBE_TEST_PROGRAMS_DIR "/nvtx_app"
#define PROBE STROBE_TEST_PROGRAMS_DIR "/record_probe"

static char dir[1024];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	/* Sanitizer builds: the injected library comes before the runtime. */
	const char *asan = getenv("ASAN_OPTIONS");
	char opts[512];
	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", asan ? asan : "",
	         asan && *asan ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	return 0;
}

/* Runs strobe record with `args` (options, then "-- program ..."); returns
 * its exit status, output (stdout and stderr) in *out. */
static int record(const char *args, char **out)
{
	char cmd[4096];
	TU_FORMAT(cmd, "cd %s && %s record %s", dir, STROBE_CLI_PATH, args);
	return tu_run(cmd, 1, out);
}

static char *path_in(const char *name)
{
	static char p[2][1200];
	static int i;
	i ^= 1;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

/* The thread_name of row (pid, tid), or NULL. */
static const char *row_name(yajl_val root, yajl_val ev)
{
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i];
		const char *ph = tu_get_str(e, "ph"), *name = tu_get_str(e, "name");
		if (!ph || strcmp(ph, "M") || !name || strcmp(name, "thread_name"))
			continue;
		if (tu_get_num(e, "pid") == tu_get_num(ev, "pid") &&
		    tu_get_num(e, "tid") == tu_get_num(ev, "tid"))
			return tu_get_str(tu_get(e, "args"), "name");
	}
	return NULL;
}

static yajl_val range(yajl_val root, const char *name)
{
	yajl_val e = tu_find(root, "X", "user_annotation", name);
	assert_non_null(e);
	return e;
}

static bool contains(yajl_val outer, yajl_val inner)
{
	int64_t os = tu_get_ns(outer, "ts"), oe = os + tu_get_ns(outer, "dur");
	int64_t is = tu_get_ns(inner, "ts"), ie = is + tu_get_ns(inner, "dur");
	return tu_get_num(outer, "tid") == tu_get_num(inner, "tid") && os <= is && ie <= oe;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = s ? strlen(s) : 0, m = strlen(tail);
	return s && n >= m && !strcmp(s + n - m, tail);
}

static const char *arg_str(yajl_val ev, const char *key)
{
	return tu_get_str(tu_get(ev, "args"), key);
}

static void nested_ranges_on_threads(void **state)
{
	(void)state;
	char *out = NULL;
	int rc = record("-o t.json -- " APP " nested", &out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "extra pop returned -1"));
	assert_non_null(strstr(out, "/t.json"));
	yajl_val t = tu_load_trace(path_in("t.json"));

	/* Push/pop ranges: user_annotation on the thread that pushed them,
	 * named by nvtxNameOsThread. */
	yajl_val outer = range(t, "main-outer");
	assert_true(ends_with(row_name(t, outer), "(main)"));
	yajl_val colored = range(t, "colored");
	assert_true(contains(outer, colored));
	assert_string_equal(arg_str(colored, "color"), "#112233");
	assert_string_equal(arg_str(colored, "category"), "io");
	assert_true(tu_get_num(tu_get(colored, "args"), "payload") == 2.5);
	yajl_val wide = range(t, "wide-\xc3\xa9t\xc3\xa9");
	assert_true(contains(outer, wide));

	/* A domain: its own category and row, its ranges nest there, the
	 * domain in args too. */
	yajl_val send = tu_find(t, "X", "net", "net-send");
	assert_non_null(send);
	assert_null(tu_find(t, "X", "user_annotation", "net-send"));
	assert_string_equal(row_name(t, send), "net (main)");
	assert_string_equal(arg_str(send, "domain"), "net");
	assert_string_equal(arg_str(send, "category"), "send");
	assert_true(tu_get_num(tu_get(send, "args"), "payload") == 4096);
	yajl_val reg = tu_find(t, "X", "net", "registered-range");
	assert_non_null(reg);
	assert_true(contains(send, reg));
	assert_true(tu_get_num(send, "tid") != tu_get_num(outer, "tid"));
	yajl_val mark = tu_find(t, "i", "net", "net-mark");
	assert_non_null(mark);
	assert_true(tu_get_num(mark, "tid") == tu_get_num(send, "tid"));

	/* Three workers, each named, each with work > step > inner and a mark. */
	for (int i = 0; i < 3; i++) {
		char name[32], thread[32];
		snprintf(name, sizeof(name), "work-%d", i);
		snprintf(thread, sizeof(thread), "(worker-%d)", i);
		yajl_val w = range(t, name);
		assert_true(ends_with(row_name(t, w), thread));
	}
	assert_int_equal(tu_count(t, "X", "user_annotation", "step"), 3);
	assert_int_equal(tu_count(t, "X", "user_annotation", "inner"), 3);
	assert_int_equal(tu_count(t, "i", NULL, "checkpoint"), 3);

	/* Start/end ranges: their own row; one ended on another thread; two
	 * that overlap without nesting sit on two rows. */
	yajl_val handed = range(t, "handed-over");
	assert_string_equal(row_name(t, handed), "start/end ranges");
	yajl_val w0 = range(t, "work-0");
	assert_true(tu_get_ns(handed, "ts") + tu_get_ns(handed, "dur") >=
	            tu_get_ns(w0, "ts") + tu_get_ns(w0, "dur"));
	yajl_val a = range(t, "overlap-a"), b = range(t, "overlap-b");
	assert_true(tu_get_num(a, "tid") != tu_get_num(b, "tid"));
	assert_string_not_equal(row_name(t, a), row_name(t, b));
	assert_non_null(strstr(row_name(t, b), "start/end ranges ("));
	assert_true(tu_get_ns(b, "ts") < tu_get_ns(a, "ts") + tu_get_ns(a, "dur"));

	/* The unbalanced pop recorded nothing; the range never popped is
	 * closed at the end and counted. */
	yajl_val never = range(t, "never-popped");
	assert_non_null(never);
	yajl_val acct = tu_get(t, "strobe");
	assert_true(tu_get_num(acct, "unfinished_ranges") >= 1);
	assert_true(tu_get_num(acct, "dropped_events") == 0);
	yajl_tree_free(t);
	free(out);
}

static void exit_status_is_the_programs(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(record("-q -o s.json.gz -- " APP " status 7", &out), 7);
	/* --quiet: nothing but the program's own output. */
	assert_null(strstr(out, "strobe:"));
	yajl_val t = tu_load_trace(path_in("s.json.gz"));
	assert_non_null(tu_find(t, "M", NULL, "process_name"));
	yajl_tree_free(t);
	free(out);
}

static void exit_from_another_thread(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(record("-o x.json -- " APP " exit-thread", &out), 5);
	yajl_val t = tu_load_trace(path_in("x.json"));
	yajl_val waiting = range(t, "main-waiting"), exiting = range(t, "exiting-thread");
	assert_true(tu_get_num(waiting, "tid") != tu_get_num(exiting, "tid"));
	/* Both were open at exit: closed there, not lost. */
	assert_true(tu_get_ns(exiting, "dur") >= 1000000);
	yajl_tree_free(t);
	free(out);
}

static size_t count_files(const char *prefix)
{
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "ls %s | grep -c '^%s'", dir, prefix);
	char *out = NULL;
	tu_run(cmd, 0, &out);
	size_t n = out ? strtoul(out, NULL, 10) : 0;
	free(out);
	return n;
}

static void children_write_their_own_files(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(record("-o f.json -- " APP " fork", &out), 0);
	/* The parent and the exec'ed child write traces; the child that only
	 * forked is not traced (and its ranges land nowhere). */
	assert_int_equal(count_files("f\\."), 2);
	yajl_val t = tu_load_trace(path_in("f.json"));
	range(t, "parent");
	assert_null(tu_find(t, "X", NULL, "forked-child"));
	yajl_tree_free(t);
	/* strobe record lists them: two "trace of pid" lines. */
	size_t listed = 0;
	for (const char *p = out; (p = strstr(p, "trace of pid")); p++)
		listed++;
	assert_int_equal(listed, 2);
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "cat %s/f.[0-9]*.json | grep -c -e forked-child -e exec-child", dir);
	char *grep = NULL;
	tu_run(cmd, 0, &grep);
	assert_int_equal(atoi(grep), 1);
	free(grep);
	snprintf(cmd, sizeof(cmd), "grep -l exec-child %s/f.[0-9]*.json", dir);
	assert_int_equal(tu_run(cmd, 0, &grep), 0);
	free(grep);
	free(out);

	assert_int_equal(record("--no-follow -o n.json -- " APP " fork", &out), 0);
	assert_int_equal(count_files("n\\."), 1);
	free(out);
}

static void sigint_writes_then_forwards(void **state)
{
	(void)state;
	char ready[1200], trace[1200];
	snprintf(ready, sizeof(ready), "%s/ready", dir);
	snprintf(trace, sizeof(trace), "%s/sig.json", dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(STROBE_CLI_PATH, STROBE_CLI_PATH, "record", "-q", "-o", trace, "--", APP, "wait-signal",
		      ready, (char *)NULL);
		_exit(99);
	}
	struct stat st;
	for (int i = 0; i < 1000 && stat(ready, &st) != 0; i++)
		usleep(10000);
	assert_int_equal(stat(ready, &st), 0);
	/* To strobe record alone, as `kill` would. */
	assert_int_equal(kill(pid, SIGINT), 0);
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 128 + SIGINT);
	yajl_val t = tu_load_trace(trace);
	range(t, "waiting-for-signal");
	assert_true(tu_get_num(tu_get(t, "strobe"), "unfinished_ranges") >= 1);
	yajl_tree_free(t);
}

static void window_by_delay_and_duration(void **state)
{
	(void)state;
	char *out = NULL;
	/* 40 ticks 10 ms apart; a 100 ms window that opens after 100 ms sees
	 * about ten (fewer on a loaded machine), never the first. */
	assert_int_equal(record("--delay 100ms --duration 100ms -o w.json -- " APP " ticks 40", &out), 0);
	yajl_val t = tu_load_trace(path_in("w.json"));
	size_t ticks = tu_count(t, "X", "user_annotation", "tick");
	assert_true(ticks >= 1 && ticks <= 20);
	assert_null(tu_find(t, "X", "user_annotation", "tick-0"));
	yajl_tree_free(t);
	free(out);
}

static void activities_select_types(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(record("--activities cpu_instant_event -o a.json -- " APP " nested", &out), 0);
	yajl_val t = tu_load_trace(path_in("a.json"));
	assert_int_equal(tu_count(t, "X", "user_annotation", NULL), 0);
	assert_int_equal(tu_count(t, "i", NULL, "checkpoint"), 3);
	yajl_tree_free(t);
	free(out);
}

struct bad_case {
	const char *args;
	int status;
	const char *message;
};

static void clear_errors(void **state)
{
	(void)state;
	static const struct bad_case cases[] = {
	    {"-- ./no-such-program", 127, "cannot run './no-such-program': no such file"},
	    {"-- no-such-program-in-path", 127, "not found in PATH"},
	    {"-o /nonexistent-dir/t.json -- " APP " status 0", 2,
	     "directory '/nonexistent-dir' does not exist"},
	    {"-o . -- " APP " status 0", 2, "is a directory"},
	    {"--delay 10x -- " APP " status 0", 2, "--delay: '10x' is not a duration"},
	    {"--duration -1s -- " APP " status 0", 2, "--duration: '-1s' is not a duration"},
	    {"--set NOEQUALS -- " APP " status 0", 2, "--set: 'NOEQUALS' is not a config line KEY=VALUE"},
	    {"-o -- " APP " status 0", 2, "--output needs a file name"},
	    {"--set ACTIVITIES_WARMUP_PERIOD_SECS=abc -- " APP " status 0", 2, "config refused"},
	    {"--activities kernel,nonsense -- " APP " status 0", 2, "config refused"},
	    {"--config /nonexistent.conf -- " APP " status 0", 2,
	     "cannot read config file '/nonexistent.conf'"},
	    {"--frobnicate -- " APP " status 0", 2, "unknown option '--frobnicate'"},
	    {"-o t.json", 2, "no program to run"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL;
		int rc = record(cases[i].args, &out);
		if (rc != cases[i].status || !strstr(out, cases[i].message))
			fail_msg("strobe record %s: status %d, output:\n%s\nexpected %d and '%s'",
			         cases[i].args, rc, out, cases[i].status, cases[i].message);
		free(out);
	}
	/* Nothing was run, so nothing was written. */
	assert_int_equal(count_files("strobe-"), 0);
}

static void one_strobe_in_a_program_that_links_it(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(record("-o api.json -- " STROBE_TEST_PROGRAMS_DIR "/api_app", &out), 0);
	/* Its own sync trace would replace the recording: refused. */
	assert_non_null(strstr(out, "strobe_prepare: a strobe record trace is running"));
	yajl_val t = tu_load_trace(path_in("api.json"));
	yajl_val api = range(t, "from-api"), nvtx = range(t, "from-nvtx");
	assert_true(contains(api, nvtx));
	/* Two NVTX modules initialised at once, both captured. */
	assert_int_equal(tu_count(t, "X", "user_annotation", "from-module"), 2);
	assert_int_equal(tu_count(t, "i", NULL, "from-main-module"), 2);
	yajl_tree_free(t);
	free(out);
}

static void help_explains(void **state)
{
	(void)state;
	char *out = NULL;
	assert_int_equal(record("--help", &out), 0);
	assert_non_null(strstr(out, "usage: strobe record"));
	assert_non_null(strstr(out, "--duration"));
	assert_non_null(strstr(out, "examples:"));
	free(out);
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Runs strobe record with argv (NULL-terminated, after "record"), stderr to
 * errfile; returns its wait status, and the CPU seconds it and the program
 * used in *cpu. */
static int record_rusage(const char *const *argv, const char *errfile, double *cpu, double *wall)
{
	const char *full[32] = {STROBE_CLI_PATH, "record"};
	size_t n = 2;
	for (; argv[n - 2] && n < 31; n++)
		full[n] = argv[n - 2];
	full[n] = NULL;
	double t0 = now_s();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 2) != 2 || dup2(fd, 1) != 1)
			_exit(98);
		/* The service thread's socket is closed under it too. */
		setenv("STROBE_USE_DAEMON", "1", 1);
		execv(STROBE_CLI_PATH, (char *const *)full);
		_exit(99);
	}
	int status = 0;
	struct rusage ru;
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	*wall = now_s() - t0;
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
	return status;
}

/* A program that closes every fd it did not open (a daemon, closefrom) and
 * gets the channel's number back for a socket of its own: neither strobe
 * record nor the thread in the program spins on the closed channel, the
 * program's data stays its own, and the trace written is reported. */
static void program_closes_inherited_fds(void **state)
{
	(void)state;
	char trace[1200], err[1200];
	snprintf(trace, sizeof(trace), "%s/closer.json", dir);
	snprintf(err, sizeof(err), "%s/closer.err", dir);
	double cpu, wall;
	const char *argv[] = {"-o", trace, "--", PROBE, "closefds", "1.5", NULL};
	int status = record_rusage(argv, err, &cpu, &wall);
	char *out = tu_read_file(err, NULL);
	assert_non_null(out);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("status %d, output:\n%s", status, out);
	tu_assert_contains(out, "sent ");
	assert_null(strstr(out, "no trace was written"));
	tu_assert_contains(out, "its trace was found on disk");
	tu_assert_contains(out, "closer.json");
	/* Spinning on the closed fd burned a whole core per spinning thread. */
	if (cpu > 0.5 * wall)
		fail_msg("%.2f s of CPU in %.2f s:\n%s", cpu, wall, out);
	yajl_val t = tu_load_trace(trace);
	assert_true(tu_count(t, "X", NULL, "probe-send") > 0);
	yajl_tree_free(t);
	free(out);

	/* The same program started by another (a child process, which writes
	 * closer2.PID.json): its file is found too. */
	char script[1400];
	snprintf(trace, sizeof(trace), "%s/closer2.json", dir);
	snprintf(script, sizeof(script), "%s closefds 0.5; exit $?", PROBE);
	const char *argv2[] = {"-o", trace, "--", "sh", "-c", script, NULL};
	status = record_rusage(argv2, err, &cpu, &wall);
	out = tu_read_file(err, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !strstr(out, "its trace was found on disk"))
		fail_msg("status %d, output:\n%s", status, out);
	/* "strobe: trace of pid N: PATH", the child's PATH not the -o one. */
	int child = 0;
	for (const char *p = out; (p = strstr(p, "strobe: trace of pid ")); p++) {
		int pid;
		char path[1400];
		if (sscanf(p, "strobe: trace of pid %d: %1399s", &pid, path) == 2 && strcmp(path, trace))
			child = pid;
	}
	assert_true(child > 0);
	char child_trace[1400];
	snprintf(child_trace, sizeof(child_trace), "%s/closer2.%d.json", dir, child);
	t = tu_load_trace(child_trace);
	assert_true(tu_count(t, "X", NULL, "probe-send") > 0);
	yajl_tree_free(t);
	free(out);
}

/* Reads the pid a record_probe wrote to ready, waiting for it (10 s). */
static pid_t wait_ready(const char *ready)
{
	for (int i = 0; i < 1000; i++) {
		char *s = tu_read_file(ready, NULL);
		if (s) {
			pid_t p = (pid_t)atoi(s);
			free(s);
			return p;
		}
		usleep(10000);
	}
	fail_msg("the program never became ready");
	return -1;
}

static pid_t start_record(const char *const *argv, const char *errfile)
{
	const char *full[32] = {STROBE_CLI_PATH, "record"};
	size_t n = 2;
	for (; argv[n - 2] && n < 31; n++)
		full[n] = argv[n - 2];
	full[n] = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || dup2(fd, 2) != 2)
			_exit(98);
		setpgid(0, 0); /* signals in this test go to strobe record alone */
		execv(STROBE_CLI_PATH, (char *const *)full);
		_exit(99);
	}
	return pid;
}

static bool gone(pid_t pid)
{
	for (int i = 0; i < 300; i++) {
		if (kill(pid, 0) && errno == ESRCH)
			return true;
		usleep(10000);
	}
	return false;
}

/* SIGHUP and SIGQUIT to strobe record: the trace is written and the signal
 * goes on to the program, which is not left running without it. */
static void hup_and_quit_forwarded(void **state)
{
	(void)state;
	static const int sigs[] = {SIGHUP, SIGQUIT};
	for (size_t k = 0; k < 2; k++) {
		char ready[1200], trace[1200], err[1200];
		snprintf(ready, sizeof(ready), "%s/ready-%zu", dir, k);
		snprintf(trace, sizeof(trace), "%s/sig-%zu.json", dir, k);
		snprintf(err, sizeof(err), "%s/sig-%zu.err", dir, k);
		const char *argv[] = {"-o", trace, "--", PROBE, "wait", ready, NULL};
		pid_t rec = start_record(argv, err);
		pid_t prog = wait_ready(ready);
		assert_int_equal(kill(rec, sigs[k]), 0);
		int status = 0;
		assert_int_equal(waitpid(rec, &status, 0), rec);
		char *out = tu_read_file(err, NULL);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 128 + sigs[k])
			fail_msg("signal %d: status %d:\n%s", sigs[k], status, out ? out : "");
		assert_true(gone(prog));
		yajl_val t = tu_load_trace(trace);
		yajl_tree_free(t);
		free(out);
	}
}

/* A program that ignores SIGTERM: the first SIGTERM has its trace written
 * and is passed on (and ignored); the second kills it, and says so. */
static void repeated_signal_kills(void **state)
{
	(void)state;
	char ready[1200], trace[1200], err[1200];
	snprintf(ready, sizeof(ready), "%s/ready-ign", dir);
	snprintf(trace, sizeof(trace), "%s/ign.json", dir);
	snprintf(err, sizeof(err), "%s/ign.err", dir);
	const char *argv[] = {"-o", trace, "--", PROBE, "ignore", ready, NULL};
	pid_t rec = start_record(argv, err);
	pid_t prog = wait_ready(ready);
	assert_int_equal(kill(rec, SIGTERM), 0);
	/* The trace is written before the signal is passed on. */
	struct stat st;
	for (int i = 0; i < 1000 && stat(trace, &st) != 0; i++)
		usleep(10000);
	assert_int_equal(stat(trace, &st), 0);
	usleep(300 * 1000);
	assert_int_equal(kill(prog, 0), 0); /* it ignored the SIGTERM */
	double t0 = now_s();
	assert_int_equal(kill(rec, SIGTERM), 0);
	int status = 0;
	assert_int_equal(waitpid(rec, &status, 0), rec);
	assert_true(now_s() - t0 < 5);
	char *out = tu_read_file(err, NULL);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 128 + SIGKILL);
	tu_assert_contains(out, "SIGTERM again: killing");
	assert_true(gone(prog));
	free(out);
}

/* --strict: a trace that could not be written makes the exit status 3;
 * without it the program's status stands. */
static void strict_fails_without_a_trace(void **state)
{
	(void)state;
	char *out = NULL;
	/* A directory that disappears: checked before the run, gone at the end. */
	char sub[1200], args[4096];
	snprintf(sub, sizeof(sub), "%s/vanishing", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(args, sizeof(args), "-o %s/t.json -- sh -c 'rmdir %s'", sub, sub);
	assert_int_equal(record(args, &out), 0);
	tu_assert_contains(out, "no trace");
	free(out);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(args, sizeof(args), "--strict -o %s/t.json -- sh -c 'rmdir %s'", sub, sub);
	assert_int_equal(record(args, &out), 3);
	tu_assert_contains(out, "--strict: the program's trace was not written; exit status 3");
	free(out);
	assert_int_equal(record("--strict -o ok.json -- " APP " ticks 2", &out), 0);
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(nested_ranges_on_threads),
	    cmocka_unit_test(exit_status_is_the_programs),
	    cmocka_unit_test(exit_from_another_thread),
	    cmocka_unit_test(children_write_their_own_files),
	    cmocka_unit_test(sigint_writes_then_forwards),
	    cmocka_unit_test(window_by_delay_and_duration),
	    cmocka_unit_test(activities_select_types),
	    cmocka_unit_test(clear_errors),
	    cmocka_unit_test(one_strobe_in_a_program_that_links_it),
	    cmocka_unit_test(help_explains),
	    cmocka_unit_test(program_closes_inherited_fds),
	    cmocka_unit_test(hup_and_quit_forwarded),
	    cmocka_unit_test(repeated_signal_kills),
	    cmocka_unit_test(strict_fails_without_a_trace),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

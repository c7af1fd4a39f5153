/* strobe record --flight end to end, with a real program
 * (tests/programs/flight_app.c): a hang dumped by the watchdog while two
 * threads deadlock, dumps asked for by strobe trigger --pid N --dump, a
 * dump at exit, strobe summary's open stacks, and the usage errors. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "testutil.h"

#define APP STROBE_TEST_PROGRAMS_DIR "/flight_app"

static char dir[1024], sockdir[1100], base[1100];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	snprintf(sockdir, sizeof(sockdir), "%s/s", dir);
	mkdir(sockdir, 0700);
	/* Polls every second, into this test's own socket directory. */
	snprintf(base, sizeof(base), "%s/base.conf", dir);
	tu_write_file(base, "ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=1\n");
	setenv("STROBE_USE_DAEMON", "1", 1);
	setenv("STROBE_IPC_SOCKET_DIR", sockdir, 1);
	setenv("STROBE_CONFIG", base, 1);
	unsetenv("STROBE_FLIGHT");
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

static char *path_in(const char *name)
{
	static char p[4][1200];
	static int i;
	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* Waits up to ms for path to exist. */
static bool wait_for(const char *path, long ms)
{
	for (long t = 0; t < ms; t += 20) {
		if (exists(path))
			return true;
		nap_ms(20);
	}
	return exists(path);
}

/* A command running in the background, its stdout and stderr in a file. */
struct bg {
	pid_t pid;
	char out[1200];
};

static void bg_start(struct bg *b, const char *name, const char *cmd)
{
	snprintf(b->out, sizeof(b->out), "%s/%s.out", dir, name);
	char sh[4096];
	TU_FORMAT(sh, "cd %s && exec %s >%s 2>&1", dir, cmd, b->out);
	fflush(NULL);
	b->pid = fork();
	assert_true(b->pid >= 0);
	if (b->pid == 0) {
		execl("/bin/sh", "sh", "-c", sh, (char *)NULL);
		_exit(127);
	}
}

/* The pid flight_app printed ("ready PID") once it stepped. */
static pid_t bg_ready(const struct bg *b)
{
	for (int t = 0; t < 500; t++) {
		char *text = tu_read_file(b->out, NULL);
		const char *at = text ? strstr(text, "ready ") : NULL;
		pid_t pid = at ? (pid_t)atoi(at + 6) : 0;
		free(text);
		if (pid > 0)
			return pid;
		nap_ms(20);
	}
	fail_msg("%s never said it was ready", b->out);
	return 0;
}

/* Waits for it; its exit status (128+N for a signal), its output in *out. */
static int bg_wait(const struct bg *b, char **out)
{
	int st;
	assert_int_equal(waitpid(b->pid, &st, 0), b->pid);
	*out = tu_read_file(b->out, NULL);
	assert_non_null(*out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The "finished": false events of a trace, as "tid name" lines in order. */
static size_t open_ranges(yajl_val root, const char *name, double *tid)
{
	size_t n = 0;
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < evs->u.array.len; i++) {
		yajl_val e = evs->u.array.values[i];
		yajl_val fin = tu_get(tu_get(e, "args"), "finished");
		const char *en = tu_get_str(e, "name");
		if (!fin || !YAJL_IS_FALSE(fin) || !en || strcmp(en, name))
			continue;
		assert_string_equal(tu_get_str(e, "ph"), "X");
		if (tid)
			*tid = tu_get_num(e, "tid");
		n++;
	}
	return n;
}

/* The deadlock: the watchdog dumps once, 300 ms after the last step; the
 * dump holds the last steps and both threads' open stacks; the program,
 * killed with SIGKILL, gives 137 and strobe record names the dump. */
static void test_hang_dump_then_sigkill(void **state)
{
	(void)state;
	struct bg rec;
	char cmd[2048];
	TU_FORMAT(cmd, "%s record --flight 10s --hang-after 300ms -o run.json.gz -- %s deadlock 20",
	          STROBE_CLI_PATH, APP);
	bg_start(&rec, "hang", cmd);
	pid_t app = bg_ready(&rec);
	assert_true(wait_for(path_in("run.1.json.gz"), 15000));
	nap_ms(400); /* once per hang: no second dump comes */
	assert_false(exists(path_in("run.2.json.gz")));
	assert_false(exists(path_in("run.json.gz"))); /* no whole-run trace */
	assert_int_equal(kill(app, SIGKILL), 0);
	char *out;
	assert_int_equal(bg_wait(&rec, &out), 137);
	tu_assert_contains(out, "was ended by signal 9");
	tu_assert_contains(out, "strobe: flight recorder: 1 dump written:");
	char line[1400];
	TU_FORMAT(line, "strobe:   %s (pid %d, hang: strobe_step() not called for", path_in("run.1.json.gz"),
	          (int)app);
	tu_assert_contains(out, line);
	free(out);

	yajl_val t = tu_load_trace(path_in("run.1.json.gz"));
	const char *reason = tu_get_str(tu_get(t, "flight_recorder"), "reason");
	assert_non_null(reason);
	assert_true(!strncmp(reason, "hang: strobe_step() not called for ", 35));
	/* The last steps: all 20 lie in the 10 s window, each finished, with
	 * its forward and backward; the 21st is open, inside join_workers. */
	assert_int_equal(tu_count(t, "X", "user_annotation", "train_step"), 21);
	assert_int_equal(tu_count(t, "X", "user_annotation", "forward"), 20);
	assert_int_equal(open_ranges(t, "train_step", NULL), 1);
	assert_int_equal(open_ranges(t, "join_workers", NULL), 1);
	/* Both workers' stacks, each on its own thread. */
	double a1 = 0, a2 = 0, b1 = 0, b2 = 0;
	assert_int_equal(open_ranges(t, "worker_a:hold_lock1", &a1), 1);
	assert_int_equal(open_ranges(t, "worker_a:want_lock2", &a2), 1);
	assert_int_equal(open_ranges(t, "worker_b:hold_lock2", &b1), 1);
	assert_int_equal(open_ranges(t, "worker_b:want_lock1", &b2), 1);
	assert_true(a1 == a2 && b1 == b2 && a1 != b1 && a1 != app && b1 != app);
	yajl_tree_free(t);

	/* strobe summary shows those stacks first, per thread, outermost first. */
	char args[1400];
	TU_FORMAT(args, "%s", path_in("run.1.json.gz"));
	assert_int_equal(tu_strobe("summary", args, 0, &out), 0);
	assert_true(!strncmp(out, "Open at the dump (still running when it was written)", 52));
	char *hold = strstr(out, "    worker_a:hold_lock1 "),
	     *want = strstr(out, "      worker_a:want_lock2 ");
	assert_non_null(hold);
	assert_non_null(want);
	assert_true(hold < want && want < strstr(out, "\nfile "));
	free(tu_line_with(out, "      join_workers "));
	char *l = tu_line_with(out, "    worker_b:hold_lock2 ");
	tu_assert_contains(l, "open for "); /* since the hang, at least 300 ms: open_ns below */
	free(l);
	free(out);
	assert_int_equal(tu_strobe("summary --json", args, 0, &out), 0);
	yajl_val j = tu_parse_json(out);
	assert_non_null(j);
	yajl_val threads = tu_get(j, "open_at_dump");
	assert_true(threads && YAJL_IS_ARRAY(threads));
	assert_int_equal(threads->u.array.len, 3);
	size_t ranges = 0;
	for (size_t i = 0; i < threads->u.array.len; i++) {
		yajl_val r = tu_get(threads->u.array.values[i], "ranges");
		assert_int_equal(r->u.array.len, 2);
		assert_int_equal((int)tu_get_num(r->u.array.values[1], "depth"), 1);
		assert_true(tu_get_num(r->u.array.values[0], "open_ns") >= 3e8);
		ranges += r->u.array.len;
	}
	assert_int_equal(ranges, 6);
	yajl_tree_free(j);
	free(out);
}

static char *trigger_dump(int pid, int *rc, const char *more)
{
	char args[256], *out;
	TU_FORMAT(args, "--pid %d --dump --no-dynolog --timeout 10%s", pid, more);
	*rc = tu_strobe("trigger", args, 1, &out);
	return out;
}

/* Two dumps asked for one after the other: two files, each named in
 * strobe trigger's answer and in strobe record's list; a process without
 * a flight recorder says so. */
static void test_trigger_dump(void **state)
{
	(void)state;
	struct bg rec, plain;
	char cmd[2048];
	TU_FORMAT(cmd, "%s record --flight 10s -o loop.json.gz -- %s loop", STROBE_CLI_PATH, APP);
	bg_start(&rec, "loop", cmd);
	pid_t app = bg_ready(&rec);
	int rc;
	char *out = trigger_dump(app, &rc, ""), want[1400];
	TU_FORMAT(want, "pid %d: dump written: %s\n", (int)app, path_in("loop.1.json.gz"));
	tu_assert_contains(out, want);
	assert_int_equal(rc, 0);
	free(out);
	/* --wait: the dump's summary follows. */
	out = trigger_dump(app, &rc, " --wait");
	TU_FORMAT(want, "pid %d: dump written: %s\n", (int)app, path_in("loop.2.json.gz"));
	tu_assert_contains(out, want);
	TU_FORMAT(want, "\n== %s\n", path_in("loop.2.json.gz"));
	tu_assert_contains(out, want);
	tu_assert_contains(out, "\nuser_annotation\n");
	assert_true(strstr(out, "\nuser_annotation\n") > strstr(out, want));
	assert_int_equal(rc, 0);
	free(out);
	for (int i = 1; i <= 2; i++) {
		char name[64];
		snprintf(name, sizeof(name), "loop.%d.json.gz", i);
		yajl_val t = tu_load_trace(path_in(name));
		assert_true(tu_count(t, "X", "user_annotation", "train_step") >= 3);
		const char *reason = tu_get_str(tu_get(t, "flight_recorder"), "reason");
		assert_non_null(reason);
		assert_true(!strncmp(reason, "requested over IPC by pid ", 26));
		yajl_tree_free(t);
	}

	/* The same program without a flight recorder: a clear error. */
	TU_FORMAT(cmd, "%s loop", APP);
	bg_start(&plain, "plain", cmd);
	pid_t p = bg_ready(&plain);
	out = trigger_dump(p, &rc, "");
	assert_int_equal(rc, 1);
	TU_FORMAT(want, "pid %d: no dump: pid %d has no flight recorder running", (int)p, (int)p);
	tu_assert_contains(out, want);
	free(out);
	kill(p, SIGKILL);
	waitpid(plain.pid, NULL, 0);

	/* SIGTERM: the program ends as it would have; both dumps are listed. */
	assert_int_equal(kill(app, SIGTERM), 0);
	assert_int_equal(bg_wait(&rec, &out), 128 + SIGTERM);
	tu_assert_contains(out, "strobe: flight recorder: 2 dumps written:");
	TU_FORMAT(want, "strobe:   %s (pid %d, requested over IPC by pid", path_in("loop.2.json.gz"),
	          (int)app);
	tu_assert_contains(out, want);
	free(out);
	assert_false(exists(path_in("loop.3.json.gz")));
}

/* dynolog, as far as a dump needs it: its RPC port takes
 * setKinetOnDemandRequest and says the pid was triggered; its IPC name
 * answers the pid's next type-2 poll with the config wrapped as dynolog
 * wraps it (indented lines and a REQUEST_TRACE_ID). */
struct fake_dynolog {
	int tcp, pid;
	struct strb_ipc_endpoint *ep;
	char config[1024];
	bool delivered;
};

static void *fake_dynolog_main(void *arg)
{
	struct fake_dynolog *d = arg;
	int c = accept(d->tcp, NULL, NULL);
	if (c < 0)
		return NULL;
	int32_t len = 0;
	char req[4096] = "";
	if (recv(c, &len, 4, MSG_WAITALL) == 4 && len > 0 && len < (int32_t)sizeof(req))
		recv(c, req, (size_t)len, MSG_WAITALL);
	yajl_val j = tu_parse_json(req);
	const char *config = tu_get_str(j, "config");
	snprintf(d->config, sizeof(d->config), "%s", config ? config : "");
	yajl_tree_free(j);
	char reply[512];
	int32_t n =
	    snprintf(reply, sizeof(reply),
	             "{\"activityProfilersBusy\":0,\"activityProfilersTriggered\":[%d],"
	             "\"eventProfilersBusy\":0,\"eventProfilersTriggered\":[],\"processesMatched\":[%d]}",
	             d->pid, d->pid);
	if (send(c, &n, 4, 0) != 4 || send(c, reply, (size_t)n, 0) != n)
		d->config[0] = 0;
	close(c);
	char wrapped[1200];
	snprintf(wrapped, sizeof(wrapped), "\n    %s\n    REQUEST_TRACE_ID=42\n", d->config);
	uint8_t dgram[STRB_IPC_MAX_DGRAM];
	ssize_t dlen = strb_ipc_encode_reply(wrapped, strlen(wrapped), dgram, sizeof(dgram));
	for (int t = 0; t < 500 && !d->delivered && dlen > 0; t++) {
		struct strb_ipc_request r;
		struct strb_ipc_peer peer;
		int got = strb_ipc_recv_request(d->ep, &r, &peer);
		if (got == 1 && r.pids[0] == d->pid && (r.type & 2))
			d->delivered = strb_ipc_send(d->ep, peer.name, dgram, (size_t)dlen) == 0;
		else if (got <= 0)
			nap_ms(20);
	}
	return NULL;
}

/* Through dynolog's existing request: the dump request is a config text
 * the daemon forwards untouched; the answer comes straight back to strobe
 * trigger. */
static void test_trigger_dump_through_dynolog(void **state)
{
	(void)state;
	struct bg rec;
	char cmd[2048];
	TU_FORMAT(cmd, "%s record --flight 10s -o dyno.json.gz -- %s loop", STROBE_CLI_PATH, APP);
	setenv("STROBE_DAEMON_NAME", "fakedyno", 1);
	bg_start(&rec, "dyno", cmd);
	struct fake_dynolog d = {.pid = (int)bg_ready(&rec)};
	assert_int_equal(strb_ipc_open(&d.ep, "fakedyno"), 0);
	d.tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	assert_int_equal(bind(d.tcp, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(d.tcp, 1), 0);
	assert_int_equal(getsockname(d.tcp, (struct sockaddr *)&a, &alen), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, fake_dynolog_main, &d), 0);
	char args[256], *out;
	TU_FORMAT(args, "--pid %d --dump --dynolog-host 127.0.0.1 --dynolog-port %d --timeout 10", d.pid,
	          ntohs(a.sin_port));
	int rc = tu_strobe("trigger", args, 1, &out);
	pthread_join(th, NULL);
	close(d.tcp);
	strb_ipc_close(d.ep);
	unsetenv("STROBE_DAEMON_NAME");
	assert_true(d.delivered);
	assert_string_equal(strtok(d.config, "\n"), "STROBE_FLIGHT_DUMP=1");
	assert_true(!strncmp(strtok(NULL, "\n"), "STROBE_FLIGHT_DUMP_REPLY=strobedump", 35));
	tu_assert_contains(out, "dynolog at 127.0.0.1:");
	tu_assert_contains(out, "triggered 1");
	char want[1400];
	TU_FORMAT(want, "pid %d: dump written: %s\n", d.pid, path_in("dyno.1.json.gz"));
	tu_assert_contains(out, want);
	assert_int_equal(rc, 0);
	free(out);
	assert_true(exists(path_in("dyno.1.json.gz")));
	kill(d.pid, SIGKILL);
	assert_int_equal(bg_wait(&rec, &out), 137);
	free(out);
}

/* --dump-on-exit: one dump of the last window when the program exits, with
 * nothing open; without it no dump; -q prints nothing. */
static void test_dump_on_exit(void **state)
{
	(void)state;
	char cmd[2048], *out;
	TU_FORMAT(cmd, "cd %s && %s record --flight 5s --dump-on-exit -o exit.json.gz -- %s steps 10", dir,
	          STROBE_CLI_PATH, APP);
	assert_int_equal(tu_run(cmd, 1, &out), 0);
	tu_assert_contains(out, "strobe: flight recorder: 1 dump written:");
	char want[1400];
	TU_FORMAT(want, "strobe:   %s (pid ", path_in("exit.1.json.gz"));
	tu_assert_contains(out, want);
	tu_assert_contains(out, ", the program ended (exit))");
	free(out);
	yajl_val t = tu_load_trace(path_in("exit.1.json.gz"));
	assert_int_equal(tu_count(t, "X", "user_annotation", "train_step"), 10);
	assert_int_equal(open_ranges(t, "train_step", NULL), 0);
	yajl_tree_free(t);
	/* Nothing was open: summary has no such heading. */
	TU_FORMAT(want, "%s", path_in("exit.1.json.gz"));
	assert_int_equal(tu_strobe("summary", want, 0, &out), 0);
	assert_null(strstr(out, "Open at the dump"));
	assert_true(!strncmp(out, "file ", 5));
	free(out);
	assert_int_equal(tu_strobe("summary --json", want, 0, &out), 0);
	assert_null(strstr(out, "open_at_dump"));
	free(out);

	TU_FORMAT(cmd, "cd %s && %s record --flight 5s -o none.json.gz -- %s steps 3", dir, STROBE_CLI_PATH,
	          APP);
	assert_int_equal(tu_run(cmd, 1, &out), 0);
	tu_assert_contains(out, "strobe: flight recorder: no dump was written\n");
	free(out);
	assert_false(exists(path_in("none.1.json.gz")));
	assert_false(exists(path_in("none.json.gz")));

	TU_FORMAT(
	    cmd,
	    "cd %s && %s record -q --flight 5s --dump-on-exit -o q.json.gz -- %s steps 3 2>&1 >/dev/null",
	    dir, STROBE_CLI_PATH, APP);
	assert_int_equal(tu_run(cmd, 1, &out), 0);
	assert_string_equal(out, "");
	free(out);
	assert_true(exists(path_in("q.1.json.gz")));
}

/* Bad values and combinations: exit 2, naming the option. */
static void test_usage_errors(void **state)
{
	(void)state;
	static const struct {
		const char *args, *says;
	} cases[] = {
	    {"--flight 0 -- true", "--flight: '0' is not a duration above 0"},
	    {"--flight 10x -- true", "--flight: '10x' is not a duration"},
	    {"--flight -- true", "--flight: '--' is not a duration"},
	    {"--hang-after 1s -- true", "--hang-after needs --flight DUR"},
	    {"--dump-on-exit -- true", "--dump-on-exit needs --flight DUR"},
	    {"--flight-mem 64M -- true", "--flight-mem needs --flight DUR"},
	    {"--flight 5s --flight-mem 12Q -- true", "--flight-mem: '12Q' is not a size of at least 1M"},
	    {"--flight 5s --flight-mem 512K -- true", "--flight-mem: '512K' is not a size of at least 1M"},
	    {"--flight 5s --flight-mem 1e3M -- true", "--flight-mem: '1e3M' is not a size of at least 1M"},
	    {"--flight 5s --flight-mem -1G -- true", "--flight-mem: '-1G' is not a size of at least 1M"},
	    {"--flight 5s --hang-after 0 -- true", "--hang-after: '0' is not a duration above 0"},
	    {"--flight 5s --duration 2s -- true", "--flight records all the time: it takes no --duration"},
	    {"--flight 5s --delay 2s -- true", "--flight records all the time: it takes no --delay"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out;
		assert_int_equal(tu_strobe("record", cases[i].args, 1, &out), 2);
		tu_assert_contains(out, cases[i].says);
		tu_assert_contains(out, "usage: strobe record");
		free(out);
	}
	char *out;
	assert_int_equal(tu_strobe("trigger", "--pid 1 --dump --duration-ms 5", 1, &out), 2);
	tu_assert_contains(out,
	                   "--dump asks for the past the flight recorder holds: it takes no trace options");
	free(out);
	assert_int_equal(tu_strobe("trigger", "--pid 1 --dump --signal", 1, &out), 2);
	tu_assert_contains(out, "--dump goes through strobe's IPC, not a signal");
	free(out);
	/* --help explains each option. */
	assert_int_equal(tu_strobe("record", "--help", 1, &out), 0);
	static const char *const opts[] = {"--flight DUR", "--flight-mem SIZE", "--hang-after DUR",
	                                   "--dump-on-exit"};
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		tu_assert_contains(out, opts[i]);
	free(out);
	assert_int_equal(tu_strobe("trigger", "--help", 1, &out), 0);
	tu_assert_contains(out, "  --dump ");
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_usage_errors), cmocka_unit_test(test_hang_dump_then_sigkill),
	    cmocka_unit_test(test_trigger_dump), cmocka_unit_test(test_trigger_dump_through_dynolog),
	    cmocka_unit_test(test_dump_on_exit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

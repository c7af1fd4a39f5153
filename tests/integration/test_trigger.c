/* `strobe trigger` end to end with real processes: a forked child runs
 * strobe with polling on (a private daemon name in a socket directory, a
 * 1 s poll interval) and steps its loop; the built CLI serves the request
 * as the daemon would, or signals it. Also: refusals (another user's
 * reply, paths outside the allowed directory, symlinks, existing files,
 * processes without a handler) and fork while polling.
 * STROBE_TEST_LABELS: concurrency */
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "pftext.h"
#include "strobe/strobe.h"

static char dir[256];     /* traces; the allowed directory */
static char sockdir[256]; /* the private daemon's socket directory (0777) */
static char base[300];    /* the base config: 1 s polls, no warm-up */

struct child_opts {
	const char *allowed; /* NULL: unset (default /tmp/) */
	const char *job;     /* SLURM_JOB_ID, or NULL: unset */
	bool signal_off;
	bool fork_grandchild;
	bool shutdown_on_usr1; /* SIGUSR1: strobe_shutdown(), then _exit(0) */
};

static volatile sig_atomic_t usr1_seen;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_seen = 1;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static atomic_int written_ok; /* set on strobe's service thread */

static void on_written(const char *path, int status, void *arg)
{
	(void)path;
	(void)arg;
	if (status == 0)
		atomic_store(&written_ok, 1);
}

/* The traced program: one op per iteration, strobe_step between them;
 * exits 0 soon after a trace was written, 3 after 20 s without one. */
static void target_loop(const struct child_opts *o)
{
	int64_t deadline = mono_ms() + 20000, forked_at = mono_ms() + 400;
	bool forked = false;
	while (mono_ms() < deadline) {
		strobe_op_push("iter_op");
		usleep(2000);
		strobe_op_pop();
		strobe_step();
		usleep(3000);
		if (o->fork_grandchild && !forked && mono_ms() > forked_at) {
			forked = true;
			pid_t g = fork();
			if (g == 0) {
				atomic_store(&written_ok, 0);
				deadline = mono_ms() + 20000;
				continue; /* the grandchild keeps stepping */
			}
		}
		if (atomic_load(&written_ok)) {
			usleep(100 * 1000);
			_exit(0);
		}
		if (o->shutdown_on_usr1 && usr1_seen) {
			strobe_shutdown();
			_exit(atomic_load(&written_ok) ? 0 : 6); /* no exit handlers */
		}
	}
	_exit(3);
}

static void child_env(const struct child_opts *o)
{
	setenv("STROBE_USE_DAEMON", "1", 1);
	setenv("STROBE_IPC_SOCKET_DIR", sockdir, 1);
	setenv("STROBE_CONFIG", base, 1);
	if (o->allowed)
		setenv("STROBE_ONDEMAND_TRACE_DIR", o->allowed, 1);
	else
		unsetenv("STROBE_ONDEMAND_TRACE_DIR");
	if (o->job)
		setenv("SLURM_JOB_ID", o->job, 1);
	else
		unsetenv("SLURM_JOB_ID");
	if (o->signal_off)
		setenv("STROBE_TRIGGER_SIGNAL", "off", 1);
	else
		unsetenv("STROBE_TRIGGER_SIGNAL");
}

/* Starts a target and returns once it is stepping: a request that reached
 * it before its first strobe_step() would be turned into a time-based one,
 * as in libkineto, and the iteration counts would not hold. */
static pid_t spawn_target(const struct child_opts *o)
{
	int ready[2];
	assert_int_equal(pipe(ready), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(ready[0]);
		child_env(o);
		if (o->shutdown_on_usr1)
			signal(SIGUSR1, on_usr1);
		if (strobe_init(NULL))
			_exit(4);
		strobe_set_trace_callback(on_written, NULL);
		strobe_step();
		if (write(ready[1], "r", 1) != 1)
			_exit(5);
		close(ready[1]);
		target_loop(o);
	}
	close(ready[1]);
	struct pollfd p = {ready[0], POLLIN, 0};
	char c;
	assert_true(poll(&p, 1, 10000) == 1 && read(ready[0], &c, 1) == 1);
	close(ready[0]);
	return pid;
}

/* Exit status, or -1 (then killed) when it runs past timeout_ms. */
static int wait_exit(pid_t pid, int timeout_ms)
{
	int64_t end = mono_ms() + timeout_ms;
	int st;
	while (mono_ms() < end) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		usleep(20 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static void stop(pid_t pid)
{
	int st;
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static bool exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

/* Runs the built CLI with args; stdout and stderr in *out (freed by caller). */
static int trigger(char **out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int trigger(char **out, const char *fmt, ...)
{
	char args[2048], cmd[2400];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "%s trigger %s", STROBE_CLI_PATH, args);
	char *o = NULL;
	int rc = tu_run(cmd, 1, &o);
	print_message("$ strobe trigger %s -> %d\n%s", args, rc, o ? o : "");
	if (out)
		*out = o;
	else
		free(o);
	return rc;
}

/* Until the process catches sig (its handler is installed by strobe_init). */
static bool wait_handler(pid_t pid, int sig)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (int i = 0; i < 200; i++) {
		char *st = tu_read_file(path, NULL);
		const char *p = st ? strstr(st, "\nSigCgt:") : NULL;
		bool yes = p && (strtoull(p + 8, NULL, 16) >> (sig - 1) & 1);
		free(st);
		if (yes)
			return true;
		usleep(20 * 1000);
	}
	return false;
}

static void check_trace(const char *path, size_t want_ops)
{
	yajl_val root = tu_load_trace(path);
	const char *id = tu_get_str(root, "trace_id");
	assert_non_null(id);
	assert_true(id[0] != 0);
	size_t n = tu_count(root, "X", NULL, "iter_op");
	if (want_ops)
		assert_int_equal(n, want_ops);
	else
		assert_true(n > 0);
	yajl_tree_free(root);
}

/* Five iterations of a fresh target traced into dir/name; returns its pid
 * once it has exited. */
static pid_t trace_five(const char *name, const char *trace_id)
{
	struct child_opts o = {.allowed = dir};
	pid_t p = spawn_target(&o);
	assert_int_equal(trigger(NULL,
	                         "--no-dynolog --pid %d --iterations 5 --log-file %s/%s --timeout 10 "
	                         "--trace-id %s",
	                         (int)p, dir, name, trace_id),
	                 0);
	assert_int_equal(wait_exit(p, 15000), 0);
	return p;
}

static void test_iterations(void **state)
{
	(void)state;
	pid_t p = trace_five("t.json", "it5");
	char path[512];
	snprintf(path, sizeof(path), "%s/t_%d.json", dir, (int)p);
	assert_true(exists(path));
	check_trace(path, 5);
	yajl_val root = tu_load_trace(path);
	assert_string_equal(tu_get_str(root, "trace_id"), "it5");
	yajl_tree_free(root);
}

/* --job-id traces every process of the Slurm job, each into its own file,
 * and leaves a process of another job alone. */
static void test_job_id(void **state)
{
	(void)state;
	struct child_opts mine = {.allowed = dir, .job = "4242"}, other = {.allowed = dir, .job = "999"};
	pid_t a = spawn_target(&mine), b = spawn_target(&mine), c = spawn_target(&other);
	char *out = NULL;
	int64_t t0 = mono_ms();
	int rc = trigger(&out,
	                 "--no-dynolog --job-id 4242 --iterations 5 --log-file %s/job.json --timeout 10 "
	                 "--process-limit 2 --trace-id jobtrace",
	                 dir);
	assert_int_equal(rc, 0);
	/* Done once two are triggered, not at the 10 s timeout (polls are 1 s apart). */
	int64_t took = mono_ms() - t0;
	if (took >= 7000)
		fail_msg("strobe trigger took %lld ms: it waited for the timeout", (long long)took);
	free(out);
	assert_int_equal(wait_exit(a, 15000), 0);
	assert_int_equal(wait_exit(b, 15000), 0);
	char path[512];
	pid_t both[2] = {a, b};
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/job_%d.json", dir, (int)both[i]);
		assert_true(exists(path));
		check_trace(path, 5);
	}
	/* The other job's process was never handed the request. */
	snprintf(path, sizeof(path), "%s/job_%d.json", dir, (int)c);
	assert_false(exists(path));
	assert_int_equal(waitpid(c, NULL, WNOHANG), 0);
	stop(c);
}

/* A Perfetto file asked for by its suffix (no pid is inserted: that is
 * libkineto's rule for ".json" names), written beneath the allowed
 * directory as JSON ones are. */
static void test_iterations_perfetto(void **state)
{
	(void)state;
	trace_five("t.pftrace", "pf5");
	char path[512];
	snprintf(path, sizeof(path), "%s/t.pftrace", dir);
	struct pf_trace t;
	pf_load(&t, path);
	pf_check_structure(&t, true);
	assert_int_equal(pf_count(&t, "TYPE_SLICE_BEGIN", "iter_op"), 5);
	const struct pf_packet *meta = NULL;
	for (size_t i = 0; i < t.n; i++)
		if (t.p[i].has_te && !strcmp(t.p[i].name, "metadata"))
			meta = &t.p[i];
	assert_non_null(meta);
	assert_string_equal(pf_ann(meta, "trace_id")->value, "pf5");
	pf_free(&t);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_duration_and_wait(void **state)
{
	(void)state;
	struct child_opts o = {.allowed = dir};
	pid_t p = spawn_target(&o);
	char *out = NULL;
	assert_int_equal(
	    trigger(&out,
	            "--no-dynolog --pid %d --duration-ms 300 --warmup-secs 0 --log-file %s/d.json "
	            "--timeout 10 --wait",
	            (int)p, dir),
	    0);
	char path[512];
	snprintf(path, sizeof(path), "%s/d_%d.json", dir, (int)p);
	assert_non_null(strstr(out, path));
	assert_non_null(strstr(out, "iter_op")); /* the summary */
	free(out);
	assert_int_equal(wait_exit(p, 15000), 0);
	check_trace(path, 0);
}

static void test_signal(void **state)
{
	(void)state;
	/* The allowed directory is the default /tmp/, where the default file goes. */
	struct child_opts o = {.allowed = NULL};
	pid_t p = spawn_target(&o);
	assert_true(wait_handler(p, SIGUSR2));
	char path[128];
	snprintf(path, sizeof(path), "/tmp/libkineto_activities_%d.json", (int)p);
	unlink(path);
	char *out = NULL;
	assert_int_equal(trigger(&out, "--signal --pid %d", (int)p), 0);
	assert_non_null(strstr(out, path));
	free(out);
	assert_int_equal(wait_exit(p, 15000), 0);
	assert_true(exists(path));
	yajl_val root = tu_load_trace(path);
	assert_true(tu_count(root, "X", NULL, "iter_op") > 0);
	yajl_tree_free(root);
	unlink(path);

	/* A plain kill works the same. */
	p = spawn_target(&o);
	assert_true(wait_handler(p, SIGUSR2));
	snprintf(path, sizeof(path), "/tmp/libkineto_activities_%d.json", (int)p);
	unlink(path);
	assert_int_equal(kill(p, SIGUSR2), 0);
	assert_int_equal(wait_exit(p, 15000), 0);
	assert_true(exists(path));
	unlink(path);
}

/* strobe_shutdown() in the middle of a trace asked for from outside: what
 * was captured is written, as at exit, not dropped. */
static void test_shutdown_writes_requested_trace(void **state)
{
	(void)state;
	struct child_opts o = {.allowed = dir, .shutdown_on_usr1 = true};
	pid_t p = spawn_target(&o);
	char path[600];
	snprintf(path, sizeof(path), "%s/shut_%d.json", dir, (int)p);
	char *out = NULL;
	int rc = trigger(&out,
	                 "--no-dynolog --pid %d --duration-ms 60000 --warmup-secs 0 --log-file %s/shut.json "
	                 "--timeout 10",
	                 (int)p, dir);
	assert_int_equal(rc, 0);
	free(out);
	/* The trace starts 2 s after the request is taken; it then collects. */
	usleep(3000 * 1000);
	assert_false(exists(path));
	assert_int_equal(kill(p, SIGUSR1), 0);
	assert_int_equal(wait_exit(p, 15000), 0);
	assert_true(exists(path));
	yajl_val root = tu_load_trace(path);
	assert_true(tu_count(root, "X", NULL, "iter_op") > 0);
	yajl_tree_free(root);
}

static void test_signal_refused_without_handler(void **state)
{
	(void)state;
	/* A strobe process whose signal trigger is off. */
	struct child_opts o = {.allowed = dir, .signal_off = true};
	pid_t p = spawn_target(&o);
	usleep(300 * 1000);
	char *out = NULL;
	assert_int_equal(trigger(&out, "--signal --pid %d", (int)p), 1);
	assert_non_null(strstr(out, "does not handle signal"));
	free(out);
	usleep(100 * 1000);
	assert_int_equal(kill(p, 0), 0);
	assert_int_equal(waitpid(p, NULL, WNOHANG), 0);
	stop(p);

	/* Not a strobe process at all. */
	pid_t s = fork();
	if (s == 0) {
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	usleep(100 * 1000);
	assert_int_equal(trigger(&out, "--signal --pid %d", (int)s), 1);
	assert_non_null(strstr(out, "does not run strobe"));
	free(out);
	assert_int_equal(waitpid(s, NULL, WNOHANG), 0);
	stop(s);
}

static void test_bad_pids_and_usage(void **state)
{
	(void)state;
	char *out = NULL;
	pid_t gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	assert_int_equal(trigger(&out, "--no-dynolog --pid %d --timeout 1", (int)gone), 1);
	char want[64];
	snprintf(want, sizeof(want), "pid %d does not exist", (int)gone);
	assert_non_null(strstr(out, want));
	free(out);
	assert_int_equal(trigger(&out, "--pid 12x"), 2);
	assert_non_null(strstr(out, "12x"));
	free(out);
	assert_int_equal(trigger(&out, "--pid 1 --duration-ms 10 --iterations 2"), 2);
	free(out);
	assert_int_equal(trigger(&out, "--pid 1 --duration-ms -5"), 2);
	free(out);
	assert_int_equal(trigger(&out, "--duration-ms 5"), 2);
	assert_non_null(strstr(out, "no target"));
	free(out);
	assert_int_equal(trigger(&out, "--help"), 0);
	assert_non_null(strstr(out, "Examples"));
	free(out);
}

/* `strobe trigger ARGS` as nobody; its exit status, its output in *out. */
static int trigger_as_nobody(char **out, const char *pid_arg, const char *mode)
{
	int pfd[2];
	assert_int_equal(pipe(pfd), 0);
	fflush(NULL);
	pid_t c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(100);
		execl(STROBE_CLI_PATH, STROBE_CLI_PATH, "trigger", mode, "--pid", pid_arg, "--timeout", "1",
		      (char *)NULL);
		_exit(101);
	}
	close(pfd[1]);
	static char buf[8192];
	size_t len = 0;
	ssize_t n;
	while (len < sizeof(buf) - 1 && (n = read(pfd[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(pfd[0]);
	int st;
	waitpid(c, &st, 0);
	*out = buf;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Another user's live process is not "a pid that does not exist". */
static void test_other_users_pid(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	struct child_opts o = {.allowed = dir};
	pid_t p = spawn_target(&o);
	char pid_arg[16];
	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)p);
	static const char *const modes[] = {"--no-dynolog", "--signal"};
	for (size_t i = 0; i < 2; i++) {
		char *out;
		assert_int_equal(trigger_as_nobody(&out, pid_arg, modes[i]), 1);
		print_message("%s: %s", modes[i], out);
		tu_assert_contains(out, "exists but belongs to another user (uid 0)");
		assert_null(strstr(out, "does not exist"));
	}
	stop(p);
}

/* A stand-in daemon running as nobody: answers every poll with a config. */
static pid_t spawn_foreign_daemon(const char *log_file)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid)
		return pid;
	setenv("STROBE_IPC_SOCKET_DIR", sockdir, 1);
	if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		_exit(100);
	struct strb_ipc_endpoint *ep;
	if (strb_ipc_open(&ep, "dynolog"))
		_exit(101);
	char text[600];
	snprintf(text, sizeof(text), "ACTIVITIES_LOG_FILE=%s\nACTIVITIES_DURATION_MSECS=100\n", log_file);
	static uint8_t dgram[STRB_IPC_MAX_DGRAM], buf[STRB_IPC_MAX_DGRAM];
	ssize_t n = strb_ipc_encode_reply(text, strlen(text), dgram, sizeof(dgram));
	int sent = 0;
	int64_t end = mono_ms() + 3500;
	while (mono_ms() < end) {
		struct strb_ipc_peer peer;
		ssize_t got = strb_ipc_recv(ep, buf, sizeof(buf), &peer);
		if (got > 0 && peer.name[0] && !strb_ipc_send(ep, peer.name, dgram, (size_t)n))
			sent++;
		usleep(10 * 1000);
	}
	strb_ipc_close(ep);
	_exit(sent > 50 ? 50 : sent);
}

static void test_other_user_refused(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	struct child_opts o = {.allowed = dir};
	pid_t p = spawn_target(&o);
	char evil[512];
	snprintf(evil, sizeof(evil), "%s/evil.json", dir);
	pid_t d = spawn_foreign_daemon(evil);
	int sent = wait_exit(d, 10000);
	assert_true(sent > 0 && sent < 100); /* it did answer the target's polls */
	usleep(1500 * 1000);
	snprintf(evil, sizeof(evil), "%s/evil_%d.json", dir, (int)p);
	assert_false(exists(evil));
	/* Still traceable by its own user. */
	assert_int_equal(trigger(NULL,
	                         "--no-dynolog --pid %d --iterations 2 --log-file %s/mine.json --timeout 10",
	                         (int)p, dir),
	                 0);
	assert_int_equal(wait_exit(p, 15000), 0);
	char path[512];
	snprintf(path, sizeof(path), "%s/mine_%d.json", dir, (int)p);
	assert_true(exists(path));
	assert_false(exists(evil));
}

/* Refused paths; each is followed by a good request to the same process, so
 * the refused one was certainly handled by then. */
static void test_paths_refused(void **state)
{
	(void)state;
	char allowed[300], outside[300], link[320], path[512];
	snprintf(allowed, sizeof(allowed), "%s/allowed", dir);
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkdir(allowed, 0700), 0);
	assert_int_equal(mkdir(outside, 0700), 0);
	snprintf(link, sizeof(link), "%s/link", allowed);
	assert_int_equal(symlink(outside, link), 0);
	struct child_opts o = {.allowed = allowed};
	pid_t p = spawn_target(&o);

	/* Outside the allowed directory: refused when parsed. */
	assert_int_equal(trigger(NULL,
	                         "--no-dynolog --pid %d --iterations 2 --log-file %s/x.json --timeout 10",
	                         (int)p, outside),
	                 0);
	/* Through a symlink that leaves it: refused when written. */
	assert_int_equal(trigger(NULL,
	                         "--no-dynolog --pid %d --iterations 2 --log-file %s/t.json --timeout 10",
	                         (int)p, link),
	                 0);
	/* An existing file: never overwritten. */
	snprintf(path, sizeof(path), "%s/keep_%d.json", allowed, (int)p);
	assert_int_equal(tu_write_file(path, "precious"), 0);
	assert_int_equal(trigger(NULL,
	                         "--no-dynolog --pid %d --iterations 2 --log-file %s/keep.json --timeout 10",
	                         (int)p, allowed),
	                 0);
	/* A good one last: the process exits once it is written. */
	assert_int_equal(trigger(NULL,
	                         "--no-dynolog --pid %d --iterations 2 --log-file %s/good.json --timeout 10",
	                         (int)p, allowed),
	                 0);
	assert_int_equal(wait_exit(p, 15000), 0);
	snprintf(path, sizeof(path), "%s/good_%d.json", allowed, (int)p);
	assert_true(exists(path));
	snprintf(path, sizeof(path), "%s/x_%d.json", outside, (int)p);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/t_%d.json", outside, (int)p);
	assert_false(exists(path));
	snprintf(path, sizeof(path), "%s/keep_%d.json", allowed, (int)p);
	char *text = tu_read_file(path, NULL);
	assert_non_null(text);
	assert_string_equal(text, "precious");
	free(text);
	struct stat st;
	snprintf(path, sizeof(path), "%s/good_%d.json", allowed, (int)p);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
}

/* The target forks while polling; parent and child are triggered by pid. */
static void test_fork_while_polling(void **state)
{
	(void)state;
#if defined(__SANITIZE_THREAD__)
	/* ThreadSanitizer refuses to start threads in the child of a
	 * multi-threaded fork, which is exactly what the child's fresh service
	 * thread does; the plain and ASan builds run this case. */
	skip();
#endif
	struct child_opts o = {.allowed = dir, .fork_grandchild = true};
	pid_t p = spawn_target(&o);
	/* Find the grandchild: a child of p. */
	pid_t g = 0;
	char path[512];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)p, (int)p);
	for (int i = 0; i < 200 && !g; i++) {
		char *c = tu_read_file(path, NULL);
		if (c)
			g = (pid_t)atoi(c);
		free(c);
		if (!g)
			usleep(20 * 1000);
	}
	assert_true(g > 0);
	char *out = NULL;
	assert_int_equal(trigger(&out,
	                         "--no-dynolog --pid %d,%d --iterations 3 --log-file %s/f.json --timeout 10",
	                         (int)p, (int)g, dir),
	                 0);
	free(out);
	assert_int_equal(wait_exit(p, 15000), 0);
	snprintf(path, sizeof(path), "%s/f_%d.json", dir, (int)p);
	assert_true(exists(path));
	check_trace(path, 3);
	snprintf(path, sizeof(path), "%s/f_%d.json", dir, (int)g);
	for (int i = 0; i < 100 && !exists(path); i++)
		usleep(50 * 1000);
	assert_true(exists(path));
	check_trace(path, 3);
	kill(g, SIGKILL); /* not our child: init reaps it */
}

static void test_not_polling(void **state)
{
	(void)state;
	/* A strobe process with polling off is never served. */
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		setenv("STROBE_USE_DAEMON", "0", 1);
		strobe_init(NULL);
		struct child_opts o = {.allowed = dir};
		target_loop(&o);
	}
	char *out = NULL;
	assert_int_equal(trigger(&out,
	                         "--no-dynolog --pid %d --iterations 2 --log-file %s/np.json --timeout 2",
	                         (int)p, dir),
	                 1);
	assert_non_null(strstr(out, "did not poll"));
	free(out);
	stop(p);
}

/* A stand-in for dynolog's RPC server: one connection, the request kept for
 * the test, a canned reply in dynolog's own format. */
struct rpc_peer {
	int fd;
	char request[4096];
	const char *reply_fmt; /* one %d: the pid */
	int pid;
};

static void *rpc_serve(void *arg)
{
	struct rpc_peer *r = arg;
	int c = accept(r->fd, NULL, NULL);
	if (c < 0)
		return NULL;
	int32_t len = 0;
	if (recv(c, &len, 4, MSG_WAITALL) == 4 && len > 0 && len < (int32_t)sizeof(r->request))
		recv(c, r->request, (size_t)len, MSG_WAITALL);
	char reply[512];
	int n = snprintf(reply, sizeof(reply), r->reply_fmt, r->pid);
	int32_t out = n;
	if (send(c, &out, 4, 0) != 4 || send(c, reply, (size_t)n, 0) != n)
		r->request[0] = 0;
	close(c);
	return NULL;
}

static int rpc_listen(struct rpc_peer *r)
{
	r->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	assert_int_equal(bind(r->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(r->fd, 1), 0);
	assert_int_equal(getsockname(r->fd, (struct sockaddr *)&a, &alen), 0);
	return ntohs(a.sin_port);
}

/* Through a daemon: the request goes over the RPC port, with the pid and the
 * config, and the daemon's verdict per pid is what strobe trigger reports. */
static void test_through_dynolog_rpc(void **state)
{
	(void)state;
	static const char *const replies[] = {
	    "{\"activityProfilersBusy\":0,\"activityProfilersTriggered\":[%d],\"eventProfilersBusy\":0,"
	    "\"eventProfilersTriggered\":[],\"processesMatched\":[%1$d]}",
	    "{\"activityProfilersBusy\":1,\"activityProfilersTriggered\":[],\"eventProfilersBusy\":0,"
	    "\"eventProfilersTriggered\":[],\"processesMatched\":[%d]}",
	};
	struct child_opts o = {.allowed = dir};
	pid_t p = spawn_target(&o);
	for (int busy = 0; busy < 2; busy++) {
		struct rpc_peer r = {.reply_fmt = replies[busy], .pid = (int)p};
		int port = rpc_listen(&r);
		pthread_t th;
		assert_int_equal(pthread_create(&th, NULL, rpc_serve, &r), 0);
		char *out = NULL;
		int rc = trigger(&out,
		                 "--dynolog-host 127.0.0.1 --dynolog-port %d --pid %d --iterations 3 "
		                 "--log-file %s/rpc.json --timeout 5",
		                 port, (int)p, dir);
		pthread_join(th, NULL);
		close(r.fd);
		assert_non_null(strstr(r.request, "\"fn\":\"setKinetOnDemandRequest\""));
		char pids[64];
		snprintf(pids, sizeof(pids), "\"pids\":[%d]", (int)p);
		assert_non_null(strstr(r.request, pids));
		assert_non_null(strstr(r.request, "ACTIVITIES_ITERATIONS=3"));
		assert_int_equal(rc, busy ? 1 : 0);
		assert_non_null(strstr(out, busy ? "busy" : "triggered"));
		free(out);
	}
	stop(p);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	snprintf(sockdir, sizeof(sockdir), "%s", tu_mkdtemp());
	chmod(sockdir, 0777);
	snprintf(base, sizeof(base), "%s/base.conf", dir);
	tu_write_file(base, "ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=1\nACTIVITIES_WARMUP_PERIOD_SECS=0\n");
	/* The CLI run by the tests binds its daemon name in the same directory. */
	setenv("STROBE_IPC_SOCKET_DIR", sockdir, 1);
	setenv("STROBE_ONDEMAND_TRACE_DIR", dir, 1);
	unsetenv("STROBE_DAEMON_NAME");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bad_pids_and_usage),
	    cmocka_unit_test(test_other_users_pid),
	    cmocka_unit_test(test_iterations),
	    cmocka_unit_test(test_iterations_perfetto),
	    cmocka_unit_test(test_job_id),
	    cmocka_unit_test(test_duration_and_wait),
	    cmocka_unit_test(test_signal),
	    cmocka_unit_test(test_signal_refused_without_handler),
	    cmocka_unit_test(test_shutdown_writes_requested_trace),
	    cmocka_unit_test(test_other_user_refused),
	    cmocka_unit_test(test_paths_refused),
	    cmocka_unit_test(test_fork_while_polling),
	    cmocka_unit_test(test_not_polling),
	    cmocka_unit_test(test_through_dynolog_rpc),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	tu_rmrf(sockdir);
	return rc;
}

/* strobe record: runs a program with strobe injected and writes its trace.
 *
 * The program gets libstrobe_inject.so through LD_PRELOAD (so it is traced
 * from its start), CUDA_INJECTION64_PATH (the CUDA driver loads it at
 * cuInit), NVTX_INJECTION64_PATH (NVTX's loader hands it the NVTX
 * calls) and ROCP_TOOL_LIBRARIES (rocprofiler-sdk calls its
 * rocprofiler_configure when HIP starts), ZE_ENABLE_TRACING_LAYER=1 (Intel
 * PTI traces Level Zero through the loader's tracing layer), and the
 * settings below in
 * STROBE_RECORD_* variables; the library side is src/control/recorder.c. A SOCK_SEQPACKET socket inherited by
 * the program (and its children) carries "hello"/"wrote" reports back, and "finish" requests when strobe
 * record is interrupted. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis/record_summary.h"
#include "cmd/cli.h"
#include "cmd/commands.h"
#include "common/config.h"
#include "common/fdguard.h"
#include "common/monotonic.h"
#include "common/record_path.h"
#include "strobe/strobe.h"

/* How long strobe record waits for traces after asking for them, and for
 * the reports of children still running after the first process ended. */
#define FINISH_WAIT_MS 30000
#define DRAIN_WAIT_MS  2000
#define MAX_PROCS      4096
/* --strict: the exit status when the program succeeded but its trace (or
 * another process's) was not written. */
#define STRICT_STATUS 3

static const char usage_text[] =
    "usage: strobe record [options] -- PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM unchanged with strobe injected and writes a trace of the run:\n"
    "CPU ranges and NVTX annotations, and GPU kernels, copies, memsets and\n"
    "API calls when the program uses CUDA, HIP (ROCm) or SYCL/Level Zero\n"
    "(Intel). At the end a short summary is printed on stderr. The exit\n"
    "status is the program's (128+N when a signal N ended it).\n"
    "\n"
    "options:\n"
    "  -o, --output PATH     trace file (default: strobe-PROGRAM.json.gz); the\n"
    "                        suffix picks the format: .json, .json.gz, .json.zst,\n"
    "                        .pftrace (Perfetto)\n"
    "  --delay DUR           start tracing DUR after the program starts (default 0)\n"
    "  --duration DUR        trace for DUR, then write the trace; 0 (the default)\n"
    "                        traces until the program exits\n"
    "                        DUR: a number with a unit: ns, us, ms, s, m (minutes)\n"
    "                        or h; a bare number is seconds\n"
    "  --activities LIST     activity types to record, comma-separated libkineto\n"
    "                        names (cpu_op,user_annotation,kernel,gpu_memcpy,\n"
    "                        gpu_memset,cuda_runtime,cuda_driver,...); default:\n"
    "                        ACTIVITY_TYPES from the config, else all of them\n"
    "  --gpu-memory          also record GPU allocations and frees ([memory]\n"
    "                        events, a GPU memory allocated track per device)\n"
    "  --gpu-counters[=HZ]   also sample device counters (NVML: utilisation,\n"
    "                        clocks, power, temperature, memory, PCIe, NVLink,\n"
    "                        throttle reasons) HZ times a second, 1..1000\n"
    "                        (default 10)\n"
    "  --config FILE         libkineto/strobe config file (KEY=VALUE lines)\n"
    "  --set KEY=VALUE       one config line, after --config (repeatable)\n"
    "  --no-follow           trace only PROGRAM, not the processes it starts\n"
    "  --flight DUR          flight recorder: capture all the time into memory\n"
    "                        rings and write only the last DUR (a dump) when the\n"
    "                        program hangs (--hang-after), at exit (--dump-on-exit)\n"
    "                        or when asked (strobe trigger --pid PID --dump); no\n"
    "                        whole-run trace. Dumps go beside the output, numbered:\n"
    "                        run.json.gz -> run.1.json.gz, run.2.json.gz, ...\n"
    "  --flight-mem SIZE     memory for the rings of each process (default 256M):\n"
    "                        a number with K, M, G or T (KB, KiB...); bare: MiB; at\n"
    "                        least 1M. The oldest events are recycled past it\n"
    "  --hang-after DUR      with --flight: dump once when the program has not\n"
    "                        called strobe_step() for DUR (again after it steps)\n"
    "  --dump-on-exit        with --flight: dump when the program exits\n"
    "  --strict              exit with status 3 when the program succeeded but a\n"
    "                        trace could not be written (default: the program's\n"
    "                        status, whatever happened to the traces)\n"
    "  -q, --quiet           print nothing but errors\n"
    "  -h, --help            this text\n"
    "\n"
    "Processes PROGRAM starts with exec are traced too: each that records\n"
    "something writes its own file, the output name with its pid inserted\n"
    "(strobe-app.4242.json.gz). Inside the program strobe logs errors only\n"
    "(STROBE_LOG_LEVEL=1 for more); see docs/record.md.\n"
    "On SIGINT, SIGTERM, SIGHUP or SIGQUIT, strobe record has every process\n"
    "write its trace first, then passes the signal on to the program; the same\n"
    "signals again kill the program (SIGKILL).\n"
    "\n"
    "examples:\n"
    "  strobe record -o trace.json.gz -- ./my_app --its --args\n"
    "  strobe record --delay 10s --duration 5s --activities kernel,cuda_runtime -- python train.py\n"
    "  strobe record --set ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=512 -o run.json.zst -- ./bench\n"
    "  strobe record --flight 30s --hang-after 10m -o run.json.gz -- python train.py\n";

static const struct cli cli = {"record", "strobe record [options] -- PROGRAM [ARGS...]"};

struct text {
	char *s;
	size_t len, cap;
};

static bool text_add(struct text *t, const char *s, size_t n)
{
	if (t->len + n + 2 > t->cap) {
		size_t cap = (t->len + n + 2) * 2;
		char *p = realloc(t->s, cap);
		if (!p)
			return false;
		t->s = p;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len++] = '\n';
	t->s[t->len] = 0;
	return true;
}

static bool read_file(const char *path, struct text *t)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	char buf[4096];
	size_t n;
	bool ok = true;
	while (ok && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		/* text_add appends a newline; add the bytes without one. */
		ok = text_add(t, buf, n);
		if (ok)
			t->len--;
	}
	ok = ok && !ferror(f);
	fclose(f);
	if (ok)
		ok = text_add(t, "", 0);
	return ok;
}

/* execvp's search, done up front so a missing program is a clear error
 * before anything starts. */
static int find_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return access(prog, X_OK) == 0 ? 0 : -errno;
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int err = -ENOENT;
	while (*path) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		snprintf(out, len, "%.*s%s%s", (int)n, path, n ? "/" : "", prog);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			err = -EACCES;
		}
		path += n + (colon ? 1 : 0);
	}
	return err;
}

/* libstrobe_inject.so next to this program (build tree), or in the
 * installed library directory. */
/* out holds PATH_MAX bytes (realpath's size). */
static bool find_inject(char out[PATH_MAX])
{
	const char *env = getenv("STROBE_INJECT_LIBRARY");
	if (env && *env)
		return realpath(env, out) != NULL;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return false;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = 0;
	const char *const rel[] = {"", ("/../" STROBE_INSTALL_LIBDIR), "/../lib"};
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX + 64];
		snprintf(cand, sizeof(cand), "%s%s/libstrobe_inject.so", self, rel[i]);
		if (access(cand, R_OK) == 0 && realpath(cand, out))
			return true;
	}
	return false;
}

/* The output must be creatable: its directory exists and is writable, and
 * it is not a directory itself. */
static int check_output(const char *path, char *why, size_t len)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(why, len, "'%s' is a directory", path);
		return -EISDIR;
	}
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = 0;
	else
		*slash = 0;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		snprintf(why, len, "directory '%s' does not exist", dir);
		return -ENOENT;
	}
	if (access(dir, W_OK | X_OK) != 0) {
		snprintf(why, len, "directory '%s' is not writable (%s)", dir, strerror(errno));
		return -EACCES;
	}
	return 0;
}

struct proc {
	pid_t pid;
	/* P_DONE: its flight recorder stopped (flight mode) */
	enum { P_RUNNING, P_WROTE, P_FAILED, P_NOTHING, P_DONE } state;
	char *detail; /* path or reason */
};

/* A flight recorder dump a process reported: the file, or why none was
 * written (path NULL). */
struct dump {
	pid_t pid;
	char *path, *why;
};

struct run {
	struct proc procs[MAX_PROCS];
	size_t nprocs;
	int sock; /* -1 once every process closed its end */
	int sfd;  /* the signalfd */
	pid_t child;
	bool quiet, exited, killed;
	int status;
	int nsignals; /* SIGINT, SIGTERM, SIGHUP, SIGQUIT received */
	const char *program;
	struct dump *dumps;
	size_t ndumps, dumps_cap;
};

static void add_dump(struct run *r, pid_t pid, const char *path, const char *why)
{
	if (r->ndumps == r->dumps_cap) {
		size_t cap = r->dumps_cap ? r->dumps_cap * 2 : 16;
		struct dump *d = realloc(r->dumps, cap * sizeof(*d));
		if (!d)
			return;
		r->dumps = d;
		r->dumps_cap = cap;
	}
	struct dump *d = &r->dumps[r->ndumps];
	*d = (struct dump){.pid = pid, .path = path ? strdup(path) : NULL, .why = strdup(why)};
	if ((path && !d->path) || !d->why) {
		free(d->path);
		free(d->why);
		return;
	}
	r->ndumps++;
}

static struct proc *proc_of(struct run *r, pid_t pid)
{
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].pid == pid)
			return &r->procs[i];
	if (r->nprocs == MAX_PROCS)
		return NULL;
	struct proc *p = &r->procs[r->nprocs++];
	*p = (struct proc){.pid = pid};
	return p;
}

static size_t running(const struct run *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nprocs; i++)
		n += r->procs[i].state == P_RUNNING;
	return n;
}

/* Reads every report waiting on the socket. */
static void read_reports(struct run *r)
{
	char msg[PATH_MAX + 600];
	ssize_t n;
	while (r->sock >= 0 && (n = recv(r->sock, msg, sizeof(msg) - 1, MSG_DONTWAIT)) > 0) {
		msg[n] = 0;
		char kind[16];
		int pid, off = 0;
		if (sscanf(msg, "%15s %d %n", kind, &pid, &off) < 2)
			continue;
		struct proc *p = proc_of(r, (pid_t)pid);
		if (!p)
			continue;
		const char *rest = msg + off;
		if (!strcmp(kind, "dump")) {
			/* "dump PID PATH\nREASON" */
			char *nl = strchr(msg + off, '\n');
			if (nl)
				*nl = 0;
			add_dump(r, (pid_t)pid, rest, nl ? nl + 1 : "");
			continue;
		}
		if (!strcmp(kind, "dumpfail")) {
			add_dump(r, (pid_t)pid, NULL, rest);
			continue;
		}
		if (!strcmp(kind, "hello")) {
			/* A process that exec'ed says hello again under the same pid. */
			p->state = P_RUNNING;
			continue;
		}
		free(p->detail);
		p->detail = strdup(rest);
		if (!strcmp(kind, "wrote"))
			p->state = P_WROTE;
		else if (!strcmp(kind, "failed"))
			p->state = P_FAILED;
		else if (!strcmp(kind, "done"))
			p->state = P_DONE;
		else
			p->state = P_NOTHING;
	}
}

/* After a poll: reports are read; a socket nobody holds any more (every
 * process exited, or closed the fds it inherited) is given up, so that it
 * is not polled again (it would poll as ready forever). */
static void after_poll(struct run *r, short revents)
{
	if (revents & POLLIN)
		read_reports(r);
	if (r->sock >= 0 && (revents & (POLLHUP | POLLERR | POLLNVAL))) {
		read_reports(r);
		close(r->sock);
		r->sock = -1;
	}
}

static void on_signal(struct run *r, const struct signalfd_siginfo *si);

/* Waits up to ms for reports, until every running process has reported,
 * handling signals meanwhile. */
static void wait_reports(struct run *r, int ms)
{
	int64_t t0 = strb_mono_ns_raw();
	for (;;) {
		read_reports(r);
		if (!running(r) || r->sock < 0 || r->killed)
			return;
		long spent = (long)((strb_mono_ns_raw() - t0) / 1000000);
		if (spent >= ms)
			return;
		struct pollfd p[2] = {{.fd = r->sock, .events = POLLIN}, {.fd = r->sfd, .events = POLLIN}};
		if (poll(p, 2, (int)(ms - spent)) < 0 && errno != EINTR)
			return;
		after_poll(r, p[0].revents);
		struct signalfd_siginfo si;
		if ((p[1].revents & POLLIN) && read(r->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			on_signal(r, &si);
	}
}

/* Asks every process still recording to write its trace now. */
static void ask_finish(struct run *r)
{
	size_t n = running(r);
	for (size_t i = 0; i < n && r->sock >= 0; i++)
		send(r->sock, "finish", 6, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n && !r->quiet)
		fprintf(stderr, "strobe: record: asking %zu process%s to write %s trace...\n", n,
		        n == 1 ? "" : "es", n == 1 ? "its" : "their");
	wait_reports(r, FINISH_WAIT_MS);
}

static void reap(struct run *r)
{
	pid_t w;
	int st;
	while ((w = waitpid(-1, &st, WNOHANG)) > 0)
		if (w == r->child) {
			r->status = st;
			r->exited = true;
		}
}

/* SIGINT, SIGTERM, SIGHUP, SIGQUIT: the first has the traces written, then
 * goes on to the program (from a terminal, the kernel sent the program its
 * own); the next one, for a program that ignores or outlives it, kills the
 * program. */
static void on_signal(struct run *r, const struct signalfd_siginfo *si)
{
	int sig = (int)si->ssi_signo;
	if (sig == SIGCHLD) {
		reap(r);
		return;
	}
	if (r->exited)
		return;
	if (r->nsignals++) {
		fprintf(stderr, "strobe: record: SIG%s again: killing %s (pid %d) with SIGKILL\n",
		        sigabbrev_np(sig), r->program, (int)r->child);
		kill(r->child, SIGKILL);
		r->killed = true;
		return;
	}
	read_reports(r);
	ask_finish(r);
	if (si->ssi_code != SI_KERNEL && !r->killed && !r->exited) {
		kill(r->child, sig);
		if (!r->quiet)
			fprintf(stderr,
			        "strobe: record: SIG%s passed on to %s (pid %d); send it again to kill it\n",
			        sigabbrev_np(sig), r->program, (int)r->child);
	}
}

/* A process's trace, when its report never came (it closed the socket it
 * inherited): written since the run began, it is there. */
static bool trace_on_disk(const char *path, const struct timespec *since)
{
	struct stat st;
	if (stat(path, &st) || !S_ISREG(st.st_mode) || st.st_size == 0)
		return false;
	return st.st_mtim.tv_sec > since->tv_sec ||
	       (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec >= since->tv_nsec);
}

static void set_env(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0) {
		fprintf(stderr, "strobe: record: cannot set %s: %s\n", name, strerror(errno));
		_exit(127);
	}
}

static void set_env_i64(const char *name, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	set_env(name, buf);
}

struct opts {
	const char *output;
	int64_t delay_ns, duration_ns;
	/* --flight (0: off), --flight-mem (bytes, 0: the library's default),
	 * --hang-after (0: never), --dump-on-exit */
	int64_t flight_ns, flight_mem, hang_after_ns;
	bool dump_on_exit;
	const char *flight_only; /* the first flight option given, for the usage error without --flight */
	const char *activities, *config_file;
	bool gpu_memory;
	const char *gpu_counters; /* "" for the config's rate, else HZ; NULL: off */
	struct text sets;
	bool follow, quiet, strict;
	char **argv;
};

static void child_exec(const struct opts *o, const char *inject, const char *config, int sock, int err_pipe)
{
	/* Inherited by the program and everything it starts, at a number high
	 * enough that the program's own files do not come near it. */
	sock = strb_fd_place_high(sock, false);
	int flags = fcntl(sock, F_GETFD);
	if (flags >= 0)
		fcntl(sock, F_SETFD, flags & ~FD_CLOEXEC);
	const char *pre = getenv("LD_PRELOAD");
	char preload[PATH_MAX * 2 + 8];
	snprintf(preload, sizeof(preload), "%s%s%s", inject, pre && *pre ? ":" : "", pre && *pre ? pre : "");
	set_env("LD_PRELOAD", preload);
	set_env("CUDA_INJECTION64_PATH", inject);
	set_env("NVTX_INJECTION64_PATH", inject);
	/* rocprofiler-sdk finds rocprofiler_configure there; other tools stay. */
	const char *tools = getenv("ROCP_TOOL_LIBRARIES");
	char rocp[PATH_MAX * 2 + 8];
	snprintf(rocp, sizeof(rocp), "%s%s%s", inject, tools && *tools ? ":" : "",
	         tools && *tools ? tools : "");
	set_env("ROCP_TOOL_LIBRARIES", rocp);
	/* Intel PTI sees Level Zero calls through the loader's tracing layer,
	 * which is read when the program's loader starts. */
	const char *ze = getenv("ZE_ENABLE_TRACING_LAYER");
	if (!ze || !*ze)
		set_env("ZE_ENABLE_TRACING_LAYER", "1");
	set_env("STROBE_RECORD_OUTPUT", o->output);
	set_env_i64("STROBE_RECORD_DELAY_NS", o->delay_ns);
	set_env_i64("STROBE_RECORD_DURATION_NS", o->duration_ns);
	set_env("STROBE_RECORD_CONFIG", config);
	set_env_i64("STROBE_RECORD_FD", sock);
	set_env_i64("STROBE_RECORD_ROOT_PID", getpid());
	set_env_i64("STROBE_RECORD_PID", getppid());
	set_env_i64("STROBE_RECORD_FOLLOW", o->follow);
	set_env_i64("STROBE_RECORD_FLIGHT_NS", o->flight_ns);
	set_env_i64("STROBE_RECORD_FLIGHT_MEM", o->flight_mem);
	set_env_i64("STROBE_RECORD_HANG_AFTER_NS", o->hang_after_ns);
	set_env_i64("STROBE_RECORD_DUMP_ON_EXIT", o->dump_on_exit);
	if (o->flight_ns) {
		/* strobe record's flight recorder, not a second one from the
		 * environment (it would refuse to start). */
		unsetenv("STROBE_FLIGHT");
		unsetenv("STROBE_FLIGHT_OUTPUT");
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(o->argv[0], o->argv);
	int e = errno;
	if (write(err_pipe, &e, sizeof(e)) < 0) {
		/* the parent sees the exit status instead */
	}
	_exit(e == ENOENT ? 127 : 126);
}

/* A duration option that must be above 0. */
static int positive_duration(const char *opt, const char *v, int64_t *ns)
{
	int rc = cli_duration(&cli, opt, v, ns);
	if (!rc && *ns <= 0)
		return cli_bad_value(&cli, opt, v, "a duration above 0 (" CLI_DURATION_HELP ")");
	return rc;
}

/* --flight-mem: "256M", "1G", "512MB", "64MiB", "2048K"; a bare number is
 * MiB. At least 1 MiB (the library's minimum). */
static int parse_size(const char *s, int64_t *bytes)
{
	static const struct {
		char unit;
		int shift;
	} units[] = {{'k', 10}, {'m', 20}, {'g', 30}, {'t', 40}};
	/* Digits and a fraction only: no sign, exponent or space. */
	size_t digits = s ? strspn(s, "0123456789.") : 0;
	if (!digits)
		return -EINVAL;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end != s + digits)
		return -EINVAL;
	int shift = 20;
	if (*end) {
		shift = -1;
		for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
			if ((*end | 0x20) == units[k].unit)
				shift = units[k].shift;
		const char *rest = end + 1;
		if (shift < 0 || (*rest && strcasecmp(rest, "b") && strcasecmp(rest, "ib")))
			return -EINVAL;
	}
	double b = v * (double)(1ull << shift);
	if (!(b >= (double)(1 << 20)) || b > 9e18)
		return -EINVAL;
	*bytes = (int64_t)b;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.follow = true};
	int i = 1, rc;
	for (; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (a[0] != '-')
			break;
		if (cli_is_help(a)) {
			fputs(usage_text, stdout);
			return -1;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--no-follow")) {
			o->follow = false;
		} else if (!strcmp(a, "--strict")) {
			o->strict = true;
		} else if (!strcmp(a, "--dump-on-exit")) {
			o->dump_on_exit = true;
			o->flight_only = o->flight_only ? o->flight_only : "--dump-on-exit";
		} else if (cli_opt(argc, argv, &i, "--flight", NULL, &v)) {
			if ((rc = positive_duration("--flight", v, &o->flight_ns)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--hang-after", NULL, &v)) {
			if ((rc = positive_duration("--hang-after", v, &o->hang_after_ns)))
				return rc;
			o->flight_only = o->flight_only ? o->flight_only : "--hang-after";
		} else if (cli_opt(argc, argv, &i, "--flight-mem", NULL, &v)) {
			if (parse_size(v, &o->flight_mem))
				return cli_bad_value(
				    &cli, "--flight-mem", v,
				    "a size of at least 1M (a number with K, M, G or T; bare: MiB)");
			o->flight_only = o->flight_only ? o->flight_only : "--flight-mem";
		} else if (cli_opt(argc, argv, &i, "--output", "-o", &v)) {
			if (v && !strcmp(v, "--"))
				v = NULL; /* "-o -- prog": the file name is missing */
			if ((rc = cli_text(&cli, "--output", v, "a file name", &o->output)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--delay", NULL, &v)) {
			if ((rc = cli_duration(&cli, "--delay", v, &o->delay_ns)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--duration", NULL, &v)) {
			if ((rc = cli_duration(&cli, "--duration", v, &o->duration_ns)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--activities", NULL, &v)) {
			if ((rc = cli_text(&cli, "--activities", v,
			                   "a comma-separated list of activity types", &o->activities)))
				return rc;
		} else if (!strcmp(a, "--gpu-memory")) {
			o->gpu_memory = true;
		} else if (!strcmp(a, "--gpu-counters") || !strncmp(a, "--gpu-counters=", 15)) {
			o->gpu_counters = a[14] ? a + 15 : "";
			char *end = NULL;
			long hz = a[14] ? strtol(o->gpu_counters, &end, 10) : 10;
			if (a[14] && (!*o->gpu_counters || *end || hz < 1 || hz > 1000))
				return cli_bad_value(&cli, "--gpu-counters", o->gpu_counters,
				                     "a sampling rate in Hz, 1..1000");
		} else if (cli_opt(argc, argv, &i, "--config", NULL, &v)) {
			if ((rc = cli_text(&cli, "--config", v, "a file name", &o->config_file)))
				return rc;
		} else if (cli_opt(argc, argv, &i, "--set", NULL, &v)) {
			if (!v || !strchr(v, '='))
				return cli_bad_value(&cli, "--set", v, "a config line KEY=VALUE");
			if (!text_add(&o->sets, v, strlen(v)))
				return cli_error(&cli, "out of memory");
		} else {
			return cli_usage(&cli, "unknown option '%s'", a);
		}
	}
	if (o->flight_only && !o->flight_ns)
		return cli_usage(&cli, "%s needs --flight DUR", o->flight_only);
	if (o->flight_ns && (o->delay_ns || o->duration_ns))
		return cli_usage(&cli, "--flight records all the time: it takes no %s",
		                 o->delay_ns ? "--delay" : "--duration");
	if (i >= argc)
		return cli_usage(&cli, "no program to run: put it after '--'");
	o->argv = argv + i;
	return 0;
}

/* --gpu-memory, --gpu-counters: their types added to the set the config
 * chose, and the sampling rate. False when memory is short. */
static bool add_gpu_types(const struct opts *o, const struct strb_config *cfg, struct text *t)
{
	uint64_t mask = cfg->activity_mask ? cfg->activity_mask : STROBE_ACTIVITY_DEFAULT_MASK;
	if (o->gpu_memory)
		mask |= STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMORY);
	if (o->gpu_counters)
		mask |= STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_COUNTERS);
	char line[4096];
	size_t at = (size_t)snprintf(line, sizeof(line), "ACTIVITY_TYPES=");
	for (unsigned b = 0; b <= STROBE_ACTIVITY_TYPE_MAX && at < sizeof(line); b++) {
		const char *name = strobe_activity_type_name((enum strobe_activity_type)b);
		if ((mask >> b & 1) && name)
			at += (size_t)snprintf(line + at, sizeof(line) - at, "%s%s",
			                       line[at - 1] == '=' ? "" : ",", name);
	}
	if (o->gpu_counters && *o->gpu_counters && at < sizeof(line))
		snprintf(line + at, sizeof(line) - at, "\nGPU_COUNTERS_SAMPLE_RATE_HZ=%s", o->gpu_counters);
	return text_add(t, line, strlen(line));
}

/* The config the program's strobe uses: --config, then --set lines, then
 * --activities, then --gpu-memory / --gpu-counters; checked here so a
 * mistake stops before the program runs. */
static char *build_config(const struct opts *o)
{
	struct text t = {0};
	if (o->config_file && !read_file(o->config_file, &t)) {
		fprintf(stderr, "strobe: record: cannot read config file '%s': %s\n", o->config_file,
		        strerror(errno));
		free(t.s);
		return NULL;
	}
	if (o->sets.len && !text_add(&t, o->sets.s, o->sets.len - 1))
		goto oom;
	if (o->activities) {
		char line[4096];
		snprintf(line, sizeof(line), "ACTIVITY_TYPES=%s", o->activities);
		if (!text_add(&t, line, strlen(line)))
			goto oom;
	}
	if (!t.s && !text_add(&t, "", 0))
		goto oom;
	struct strb_config cfg;
	strb_config_init(&cfg);
	char err[512];
	if (strb_config_parse(&cfg, t.s, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "strobe: record: config refused: %s\n", err);
		free(t.s);
		return NULL;
	}
	if ((o->gpu_memory || o->gpu_counters) && !add_gpu_types(o, &cfg, &t))
		goto oom;
	return t.s;
oom:
	fprintf(stderr, "strobe: record: out of memory\n");
	free(t.s);
	return NULL;
}

/* A process that died by a fatal signal left a raw dump beside the
 * output, <dir>/<stem>.crash-<pid>.raw (the stem: the name up to its
 * first dot): each is turned into a trace named like the output,
 * <dir>/<stem>.crash-<pid><suffix>, and removed; an empty one (a process
 * that left without a signal or its exit handlers) is removed. Returns how
 * many failed. */
static size_t convert_crash_dumps(const struct run *r, const char *output, bool quiet)
{
	const char *slash = strrchr(output, '/');
	const char *name = slash ? slash + 1 : output;
	const char *dot = strchr(name, '.');
	int stem = (int)(dot ? (size_t)(dot - output) : strlen(output));
	size_t bad = 0;
	for (size_t i = 0; i < r->nprocs; i++) {
		char raw[PATH_MAX], out[PATH_MAX], err[512];
		struct stat st;
		snprintf(raw, sizeof(raw), "%.*s.crash-%d.raw", stem, output, (int)r->procs[i].pid);
		if (stat(raw, &st) != 0)
			continue;
		if (!st.st_size) {
			/* No signal wrote into it: the process ended without running
			 * its exit handlers (a shell's _exit), which remove it. */
			unlink(raw);
			continue;
		}
		snprintf(out, sizeof(out), "%.*s.crash-%d%s", stem, output, (int)r->procs[i].pid,
		         dot ? dot : ".json.gz");
		if (strobe_internal_flight_convert(raw, out, err, sizeof(err))) {
			fprintf(stderr,
			        "strobe: pid %d died by a fatal signal; its raw dump %s could not be "
			        "converted: %s\n",
			        (int)r->procs[i].pid, raw, err);
			bad++;
			continue;
		}
		unlink(raw);
		if (!quiet)
			fprintf(stderr, "strobe: pid %d died by a fatal signal; its last window: %s\n",
			        (int)r->procs[i].pid, out);
	}
	return bad;
}

/* Flight mode's end of the run: the dumps the processes wrote (and the ones
 * that failed), as they reported them (raw dumps of fatal signals are
 * converted before, by convert_crash_dumps).
 * Returns how many dumps failed. */
static size_t list_flight_dumps(const struct run *r, bool quiet)
{
	size_t ok = 0, bad = 0;
	const char *last = NULL;
	for (size_t i = 0; i < r->ndumps; i++) {
		*(r->dumps[i].path ? &ok : &bad) += 1;
		last = r->dumps[i].path ? r->dumps[i].path : last;
	}
	if (!quiet) {
		if (ok)
			fprintf(stderr, "strobe: flight recorder: %zu dump%s written:\n", ok,
			        ok == 1 ? "" : "s");
		else
			fprintf(stderr, "strobe: flight recorder: no dump was written\n");
	}
	for (size_t i = 0; i < r->ndumps; i++) {
		const struct dump *d = &r->dumps[i];
		if (d->path && !quiet)
			fprintf(stderr, "strobe:   %s (pid %d, %s)\n", d->path, (int)d->pid, d->why);
		else if (!d->path)
			fprintf(stderr, "strobe: pid %d: flight recorder dump not written: %s\n", (int)d->pid,
			        d->why);
	}
	/* A process whose flight recorder could not start said why. */
	for (size_t i = 0; i < r->nprocs; i++) {
		if (r->procs[i].state != P_FAILED)
			continue;
		bad++;
		fprintf(stderr, "strobe: pid %d: no flight recorder: %s\n", (int)r->procs[i].pid,
		        r->procs[i].detail ? r->procs[i].detail : "");
	}
	if (last && !quiet)
		fprintf(stderr, "strobe: what each thread was inside: strobe summary %s\n", last);
	return bad;
}

static int64_t mono_ms(void)
{
	return strb_mono_ns_raw() / 1000000;
}

static int run(struct opts *o);

int cmd_record(int argc, char **argv)
{
	struct opts o;
	int rc = parse_args(argc, argv, &o);
	if (!rc)
		rc = run(&o);
	else if (rc == -1)
		rc = 0; /* --help */
	free(o.sets.s);
	return rc;
}

static int run(struct opts *op)
{
	struct opts o = *op;

	char prog[PATH_MAX];
	int found = find_program(o.argv[0], prog, sizeof(prog));
	if (found) {
		fprintf(stderr, "strobe: record: cannot run '%s': %s\n", o.argv[0],
		        found == -ENOENT ? (strchr(o.argv[0], '/') ? "no such file" : "not found in PATH")
		                         : strerror(-found));
		return found == -ENOENT ? 127 : 126;
	}
	char default_out[PATH_MAX];
	if (!o.output) {
		const char *base = strrchr(o.argv[0], '/');
		snprintf(default_out, sizeof(default_out), "strobe-%s.json.gz", base ? base + 1 : o.argv[0]);
		o.output = default_out;
	}
	char why[PATH_MAX + 100];
	if (check_output(o.output, why, sizeof(why))) {
		fprintf(stderr, "strobe: record: cannot write the trace to '%s': %s\n", o.output, why);
		return 2;
	}
	/* The program may change directory: give it an absolute path. */
	char out_abs[PATH_MAX];
	if (o.output[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(out_abs, sizeof(out_abs), "%s/%s", cwd, o.output) >= (int)sizeof(out_abs)) {
			fprintf(stderr, "strobe: record: the output path is too long\n");
			return 2;
		}
		o.output = out_abs;
	}
	char *config = build_config(&o);
	if (!config)
		return 2;
	char inject[PATH_MAX];
	if (!find_inject(inject)) {
		fprintf(stderr,
		        "strobe: record: libstrobe_inject.so not found next to this program or in its "
		        "library directory (set STROBE_INJECT_LIBRARY to its path)\n");
		free(config);
		return 2;
	}

	int sv[2], errp[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) || pipe2(errp, O_CLOEXEC)) {
		fprintf(stderr, "strobe: record: %s\n", strerror(errno));
		free(config);
		return 2;
	}
	/* Signals arrive on a signalfd so they can be handled in order with the
	 * reports; the child gets the default mask back before exec. */
	sigset_t sigs, old;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGHUP);
	sigaddset(&sigs, SIGQUIT);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigs, &old);
	int sfd = signalfd(-1, &sigs, SFD_CLOEXEC);

	int64_t t0 = mono_ms();
	struct timespec since;
	clock_gettime(CLOCK_REALTIME, &since);
	since.tv_sec -= 1; /* file times are coarser than the clock */
	fflush(NULL);
	pid_t child = fork();
	if (child < 0) {
		fprintf(stderr, "strobe: record: fork: %s\n", strerror(errno));
		free(config);
		return 2;
	}
	if (child == 0) {
		close(sv[0]);
		close(errp[0]);
		child_exec(&o, inject, config, sv[1], errp[1]);
	}
	close(sv[1]);
	close(errp[1]);
	free(config);
	int exec_err = 0;
	if (read(errp[0], &exec_err, sizeof(exec_err)) == (ssize_t)sizeof(exec_err)) {
		fprintf(stderr, "strobe: record: cannot run '%s': %s\n", o.argv[0], strerror(exec_err));
		waitpid(child, NULL, 0);
		return exec_err == ENOENT ? 127 : 126;
	}
	close(errp[0]);

	struct run *r = calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "strobe: record: out of memory\n");
		return 2;
	}
	r->sock = sv[0];
	r->sfd = sfd;
	r->child = child;
	r->program = o.argv[0];
	r->quiet = o.quiet;
	while (!r->exited) {
		struct pollfd p[2] = {{.fd = sfd, .events = POLLIN}, {.fd = r->sock, .events = POLLIN}};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		after_poll(r, p[1].revents);
		struct signalfd_siginfo si;
		if ((p[0].revents & POLLIN) && read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			on_signal(r, &si);
	}
	int64_t wall_ms = mono_ms() - t0;
	/* Children that outlive the program may still be writing. */
	wait_reports(r, DRAIN_WAIT_MS);
	sigprocmask(SIG_SETMASK, &old, NULL);
	int status = r->status;

	int code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	if (!o.quiet) {
		fprintf(stderr, "strobe: %s ran %.3f s and ", o.argv[0], (double)wall_ms / 1000);
		if (WIFSIGNALED(status))
			fprintf(stderr, "was ended by signal %d (%s)\n", WTERMSIG(status),
			        strsignal(WTERMSIG(status)));
		else
			fprintf(stderr, "exited with status %d\n", code);
	}
	const char *root_trace = NULL;
	size_t written = 0, nothing = 0, failed = 0;
	if (o.flight_ns) {
		failed = convert_crash_dumps(r, o.output, o.quiet) + list_flight_dumps(r, o.quiet);
		if (!r->nprocs)
			fprintf(stderr,
			        "strobe: record: the program never loaded strobe (statically linked, or "
			        "it cleared LD_PRELOAD?); no flight recorder ran\n");
		goto end;
	}
	for (size_t i = 0; i < r->nprocs; i++) {
		struct proc *p = &r->procs[i];
		char path[PATH_MAX];
		strb_record_path(o.output, p->pid, child, path, sizeof(path));
		if (p->state != P_RUNNING || !trace_on_disk(path, &since) || !(p->detail = strdup(path)))
			continue;
		p->state = P_WROTE;
		if (!o.quiet)
			fprintf(
			    stderr,
			    "strobe: pid %d closed the socket it reports on; its trace was found on disk\n",
			    (int)p->pid);
	}
	for (size_t i = 0; i < r->nprocs; i++) {
		struct proc *p = &r->procs[i];
		if (p->state == P_WROTE) {
			written++;
			if (p->pid == child)
				root_trace = p->detail;
			if (!o.quiet)
				fprintf(stderr, "strobe: trace of pid %d: %s\n", (int)p->pid, p->detail);
		} else if (p->state == P_FAILED) {
			failed++;
			fprintf(stderr, "strobe: pid %d wrote no trace: %s\n", (int)p->pid,
			        p->detail ? p->detail : "");
		} else if (p->state == P_NOTHING) {
			nothing++;
		} else if (p->state == P_RUNNING) {
			failed++;
			fprintf(stderr,
			        "strobe: pid %d has not written its trace (still running, or killed)\n",
			        (int)p->pid);
		}
	}
	if (nothing && !o.quiet)
		fprintf(stderr, "strobe: %zu other process%s recorded nothing and wrote no file\n", nothing,
		        nothing == 1 ? "" : "es");
	if (!r->nprocs)
		fprintf(stderr,
		        "strobe: record: the program never loaded strobe (statically linked, or it cleared "
		        "LD_PRELOAD?); no trace\n");
	else if (!written)
		fprintf(stderr, "strobe: record: no trace was written\n");
	if (root_trace && !o.quiet)
		record_summary(root_trace, wall_ms * 1000000, stderr);
end:
	if (o.flight_ns && o.strict && code == 0 && failed) {
		fprintf(stderr,
		        "strobe: record: --strict: a flight recorder dump was not written; exit status %d\n",
		        STRICT_STATUS);
		code = STRICT_STATUS;
	} else if (!o.flight_ns && o.strict && code == 0 && (!root_trace || failed)) {
		fprintf(stderr, "strobe: record: --strict: %s; exit status %d\n",
		        !root_trace ? "the program's trace was not written" : "a trace was not written",
		        STRICT_STATUS);
		code = STRICT_STATUS;
	}
	for (size_t i = 0; i < r->nprocs; i++)
		free(r->procs[i].detail);
	for (size_t i = 0; i < r->ndumps; i++) {
		free(r->dumps[i].path);
		free(r->dumps[i].why);
	}
	free(r->dumps);
	if (r->sock >= 0)
		close(r->sock);
	close(sfd);
	free(r);
	return code;
}

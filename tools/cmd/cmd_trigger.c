/* strobe trigger: start an on-demand trace in running processes, through a
 * dynolog daemon's RPC port when one answers, else by serving the daemon's
 * side of the IPC protocol itself, or with the trigger signal. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "common/config.h"
#include "common/ipc.h"

#define MAX_TARGETS       64
#define DEFAULT_LOG_FILE  "/tmp/strobe_trace.json"
#define DEFAULT_TIMEOUT_S 15
#define DEFAULT_PORT      1778
#define RPC_TIMEOUT_MS    1000
#define TEXT_MAX          (STRB_IPC_MAX_CONFIG - 64)

static const char usage_text[] =
    "usage: strobe trigger --pid PID[,PID...] | --job-id ID\n"
    "                      [--duration-ms N | --iterations N [--start-iteration-roundup R]]\n"
    "                      [--log-file PATH] [--start-time MS] [--warmup-secs N] [--trace-id ID]\n"
    "                      [--config FILE] [--process-limit N] [--wait] [--timeout SEC]\n"
    "                      [--dynolog-host H] [--dynolog-port P] [--no-dynolog] [--signal]\n"
    "       strobe trigger --pid PID[,PID...] | --job-id ID --dump [--wait] [--timeout SEC]\n\n"
    "Starts an on-demand trace in running processes that use strobe (or libkineto).\n"
    "The request goes to the dynolog daemon's RPC port when a daemon answers there;\n"
    "otherwise strobe trigger stands in for the daemon: it binds the daemon's IPC\n"
    "name (STROBE_DAEMON_NAME, default \"dynolog\"; a file under STROBE_IPC_SOCKET_DIR\n"
    "or KINETO_IPC_SOCKET_DIR when set) and hands the request to the targets when\n"
    "they next poll (every ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS, default 5 s).\n\n"
    "Targets:\n"
    "  --pid PID[,PID...]   processes to trace (through dynolog, a parent's pid also\n"
    "                       selects its children)\n"
    "  --job-id ID          every process whose SLURM_JOB_ID is ID\n"
    "Trace:\n"
    "  --duration-ms N      time-based trace of N ms (default 500)\n"
    "  --iterations N       N iterations counted by strobe_step(), starting at the next\n"
    "                       multiple of R (--start-iteration-roundup, default 1)\n"
    "  --log-file PATH      output file (default " DEFAULT_LOG_FILE "); each process\n"
    "                       inserts its pid: t.json -> t_<pid>.json. It must lie beneath\n"
    "                       the target's STROBE_ONDEMAND_TRACE_DIR (default /tmp/)\n"
    "  --start-time MS      start at this epoch time in ms (default: warm-up + 2 s from\n"
    "                       when the process receives the request)\n"
    "  --warmup-secs N      warm-up before a time-based trace (library default 5)\n"
    "  --trace-id ID        REQUEST_TRACE_ID, written as \"trace_id\" (default random)\n"
    "  --config FILE        more KEY=VALUE lines for the request (e.g. ACTIVITY_TYPES)\n"
    "  --process-limit N    most processes a daemon triggers (default 3, as dyno); standing\n"
    "                       in with --job-id, strobe trigger stops waiting once N are\n"
    "                       triggered (default: it waits out --timeout)\n"
    "Delivery:\n"
    "  --timeout SEC        how long to wait for the targets to poll (default 15)\n"
    "  --wait               wait for each file to be written, then print its summary\n"
    "  --dynolog-host H     the daemon's host (default localhost)\n"
    "  --dynolog-port P     the daemon's RPC port (default 1778)\n"
    "  --no-dynolog         do not ask a daemon; serve the request directly\n"
    "  --signal             send STROBE_TRIGGER_SIGNAL (default SIGUSR2) instead; the\n"
    "                       process traces with its base config (STROBE_CONFIG). Only\n"
    "                       sent when the process handles that signal\n"
    "Flight recorder:\n"
    "  --dump               ask the process's flight recorder (STROBE_FLIGHT, strobe\n"
    "                       record --flight) for its last seconds now, instead of a\n"
    "                       trace of the next ones: it writes a dump beside its flight\n"
    "                       output and answers with the file's name (delivered like a\n"
    "                       trace request; takes no trace options). With --wait, the\n"
    "                       dump's summary is printed too\n\n"
    "Exit status: 0 every target triggered, 1 some were not (or an error), 2 usage error.\n\n"
    "Examples:\n"
    "  strobe trigger --pid 4242                          # 500 ms, /tmp/strobe_trace_4242.json\n"
    "  strobe trigger --pid 4242 --iterations 10 --wait   # 10 steps, then its summary\n"
    "  strobe trigger --pid 4242,4243 --duration-ms 2000 --log-file /tmp/run/t.json\n"
    "  strobe trigger --job-id 1234 --iterations 5 --start-iteration-roundup 100\n"
    "  strobe trigger --signal --pid 4242\n"
    "  strobe trigger --pid 4242 --dump                   # the flight recorder's last seconds\n\n"
    "See docs/on-demand.md.\n";

struct opts {
	int pids[MAX_TARGETS];
	int npids;
	int64_t job_id;
	bool have_job;
	int64_t duration_ms, iterations, roundup, start_time, warmup_secs, timeout_s, port, process_limit;
	const char *log_file, *trace_id, *config_file, *host;
	bool wait, no_dynolog, use_signal, host_given, dump;
};

enum outcome {
	NOT_SEEN = 0,
	TRIGGERED,
	BUSY,
	FAILED,
};

struct target {
	int pid;        /* as given (or the poller's, in job mode) */
	int served_pid; /* the process that took the request */
	enum outcome out;
	char file[PATH_MAX];
	/* --dump: the process's answer came (file, or why in error) */
	bool answered;
	char error[512];
};

static const struct cli cli = {"trigger", "strobe trigger --pid PID[,PID...] | --job-id ID [options]"};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
	if (!s || !*s)
		return false;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static int parse_pids(struct opts *o, const char *list)
{
	char buf[1024];
	if (strlen(list) >= sizeof(buf))
		return cli_usage(&cli, "--pid list too long: '%s'", list);
	snprintf(buf, sizeof(buf), "%s", list);
	char *save = NULL;
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		int64_t v;
		if (!parse_i64(p, 1, INT32_MAX, &v))
			return cli_bad_value(&cli, "--pid", p, "a process id (a positive number)");
		if (o->npids == MAX_TARGETS)
			return cli_usage(&cli, "at most %d pids", MAX_TARGETS);
		o->pids[o->npids++] = (int)v;
	}
	if (!o->npids)
		return cli_bad_value(&cli, "--pid", list, "a list of process ids");
	return 0;
}

struct num_opt {
	const char *name;
	size_t off;
	int64_t min, max;
};

#define NUM(name, field, min, max)                                                                           \
	{                                                                                                    \
		name, offsetof(struct opts, field), min, max                                                 \
	}
static const struct num_opt num_opts[] = {
    NUM("--duration-ms", duration_ms, 1, INT32_MAX),
    NUM("--iterations", iterations, 1, INT32_MAX),
    NUM("--start-iteration-roundup", roundup, 1, INT32_MAX),
    NUM("--start-time", start_time, 0, INT64_MAX),
    NUM("--warmup-secs", warmup_secs, 0, 3600),
    NUM("--timeout", timeout_s, 1, 86400),
    NUM("--dynolog-port", port, 1, 65535),
    NUM("--process-limit", process_limit, 1, 1000000),
    NUM("--job-id", job_id, 0, INT64_MAX),
};

static int parse_args(struct opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int rc;
		if (cli_is_help(a)) {
			fputs(usage_text, stdout);
			return -1;
		}
		if (!strcmp(a, "--wait")) {
			o->wait = true;
			continue;
		}
		if (!strcmp(a, "--no-dynolog")) {
			o->no_dynolog = true;
			continue;
		}
		if (!strcmp(a, "--signal")) {
			o->use_signal = true;
			continue;
		}
		if (!strcmp(a, "--dump")) {
			o->dump = true;
			continue;
		}
		bool done = false;
		for (size_t k = 0; k < sizeof(num_opts) / sizeof(num_opts[0]) && !done; k++) {
			const struct num_opt *n = &num_opts[k];
			if (!cli_opt(argc, argv, &i, n->name, NULL, &v))
				continue;
			if ((rc = cli_int(&cli, n->name, v, n->min, n->max, (int64_t *)((char *)o + n->off))))
				return rc;
			if (!strcmp(n->name, "--job-id"))
				o->have_job = true;
			done = true;
		}
		if (done)
			continue;
		static const struct {
			const char *name, *what;
			size_t off;
		} texts[] = {
		    {"--log-file", "a file name", offsetof(struct opts, log_file)},
		    {"--trace-id", "an id", offsetof(struct opts, trace_id)},
		    {"--config", "a file name", offsetof(struct opts, config_file)},
		    {"--dynolog-host", "a host name", offsetof(struct opts, host)},
		};
		for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]) && !done; k++) {
			if (!cli_opt(argc, argv, &i, texts[k].name, NULL, &v))
				continue;
			if ((rc = cli_text(&cli, texts[k].name, v, texts[k].what,
			                   (const char **)((char *)o + texts[k].off))))
				return rc;
			done = true;
		}
		if (done)
			continue;
		if (cli_opt(argc, argv, &i, "--pid", NULL, &v)) {
			if ((rc = cli_text(&cli, "--pid", v, "a list of process ids", &v)) ||
			    (rc = parse_pids(o, v)))
				return rc;
			continue;
		}
		return cli_usage(&cli, "unknown option '%s'", a);
	}
	return 0;
}

static int check_args(struct opts *o)
{
	if (!o->npids && !o->have_job)
		return cli_usage(&cli, "no target: give --pid PID[,PID...] or --job-id ID");
	if (o->npids && o->have_job)
		return cli_usage(&cli, "give --pid or --job-id, not both");
	if (o->duration_ms >= 0 && o->iterations >= 0)
		return cli_usage(&cli, "--duration-ms and --iterations exclude each other");
	if (o->roundup >= 0 && o->iterations < 0)
		return cli_usage(&cli, "--start-iteration-roundup needs --iterations");
	if (o->use_signal) {
		if (o->have_job)
			return cli_usage(&cli, "--signal needs --pid");
		if (o->duration_ms >= 0 || o->iterations >= 0 || o->log_file || o->start_time >= 0 ||
		    o->warmup_secs >= 0 || o->trace_id || o->config_file)
			return cli_usage(&cli, "--signal carries no config: the process uses its base config "
			                       "(STROBE_CONFIG); drop the trace options");
	}
	if (o->dump) {
		if (o->use_signal)
			return cli_usage(&cli,
			                 "--dump goes through strobe's IPC, not a signal: drop --signal");
		if (o->duration_ms >= 0 || o->iterations >= 0 || o->roundup >= 0 || o->log_file ||
		    o->start_time >= 0 || o->warmup_secs >= 0 || o->trace_id || o->config_file)
			return cli_usage(&cli,
			                 "--dump asks for the past the flight recorder holds: it takes no "
			                 "trace options (--duration-ms, --iterations, --log-file, ...)");
	}
	if (o->log_file && strchr(o->log_file, '\n'))
		return cli_usage(&cli, "--log-file must not contain a newline");
	if (o->trace_id && strpbrk(o->trace_id, "\n#"))
		return cli_usage(&cli, "--trace-id must not contain a newline or '#'");
	return 0;
}

/* libkineto's rule, as the library applies it: the pid goes before the first
 * ".pt.trace.json", else before the first ".json". */
static void file_for_pid(char *out, size_t len, const char *log_file, int pid)
{
	const char *at = strstr(log_file, ".pt.trace.json");
	if (!at)
		at = strstr(log_file, ".json");
	if (at)
		snprintf(out, len, "%.*s_%d%s", (int)(at - log_file), log_file, pid, at);
	else
		snprintf(out, len, "%s", log_file);
}

static char *read_small_file(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *buf = malloc(max + 1);
	size_t n = buf ? fread(buf, 1, max + 1, f) : 0;
	bool err = ferror(f);
	fclose(f);
	if (!buf || err || n > max) {
		free(buf);
		errno = buf && !err ? EFBIG : EIO;
		return NULL;
	}
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static uint64_t random_id(void)
{
	uint64_t v = 0;
	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != (ssize_t)sizeof(v))
		v = (uint64_t)time(NULL) * 6364136223846793005ULL ^ (uint64_t)getpid() << 32 ^
		    (uint64_t)mono_ms();
	return v;
}

/* The request, as `dyno gputrace` writes it, plus the trace id. */
static char *build_config(const struct opts *o, const char *log_file)
{
	char *extra = NULL;
	size_t extra_len = 0;
	if (o->config_file) {
		extra = read_small_file(o->config_file, TEXT_MAX, &extra_len);
		if (!extra) {
			fprintf(stderr, "strobe: cannot read %s: %s\n", o->config_file, strerror(errno));
			return NULL;
		}
	}
	size_t cap = extra_len + 4096;
	char *t = malloc(cap);
	if (!t) {
		free(extra);
		return NULL;
	}
	int n = snprintf(t, cap, "ACTIVITIES_LOG_FILE=%s\n", log_file);
	if (o->iterations > 0)
		n += snprintf(t + n, cap - (size_t)n,
		              "PROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=%" PRId64
		              "\nACTIVITIES_ITERATIONS=%" PRId64 "\n",
		              o->roundup > 0 ? o->roundup : 1, o->iterations);
	else
		n += snprintf(t + n, cap - (size_t)n,
		              "PROFILE_START_TIME=%" PRId64 "\nACTIVITIES_DURATION_MSECS=%" PRId64 "\n",
		              o->start_time > 0 ? o->start_time : 0,
		              o->duration_ms > 0 ? o->duration_ms : 500);
	if (o->warmup_secs >= 0)
		n += snprintf(t + n, cap - (size_t)n, "ACTIVITIES_WARMUP_PERIOD_SECS=%" PRId64 "\n",
		              o->warmup_secs);
	if (extra) {
		n += snprintf(t + n, cap - (size_t)n, "%s%s", extra,
		              extra_len && extra[extra_len - 1] != '\n' ? "\n" : "");
		free(extra);
	}
	if (o->trace_id)
		snprintf(t + n, cap - (size_t)n, "REQUEST_TRACE_ID=%s", o->trace_id);
	else
		snprintf(t + n, cap - (size_t)n, "REQUEST_TRACE_ID=%" PRIu64, random_id());
	return t;
}

/* Checks the text as the target will (syntax and values); the allowed
 * directory is the target's, so a log file outside ours only warns. */
static int validate_config(const char *text, const char *log_file)
{
	struct strb_config cfg;
	strb_config_init(&cfg);
	char err[512];
	if (strb_config_parse(&cfg, text, NULL, err, sizeof(err))) {
		fprintf(stderr, "strobe: the request does not parse: %s\n", err);
		return 2;
	}
	if (cfg.profile_memory) {
		fprintf(stderr, "strobe: memory snapshot requests (PROFILE_MEMORY) are not supported\n");
		return 2;
	}
	strb_config_init(&cfg);
	struct strb_config_parse_opts po = {.on_demand = true};
	if (strb_config_parse(&cfg, text, &po, err, sizeof(err)))
		fprintf(stderr,
		        "strobe: warning: %s would be refused here (%s); the targets use their own "
		        "STROBE_ONDEMAND_TRACE_DIR\n",
		        log_file, err);
	return 0;
}

/* ---- /proc checks ---------------------------------------------------------- */

static bool file_contains(const char *path, const char *needle)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	bool found = false;
	if (!fstat(fd, &st) && st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			found = memmem(p, (size_t)st.st_size, needle, strlen(needle)) != NULL;
			munmap(p, (size_t)st.st_size);
		}
	}
	close(fd);
	return found;
}

/* pid cannot be looked at: says whether it does not exist or is another
 * user's (kill gives EPERM for a live process of another user: that is not
 * "does not exist"). Returns 1. */
static int unreachable_pid(int pid)
{
	if (kill(pid, 0) == 0 || errno != EPERM) {
		fprintf(stderr, "strobe: pid %d does not exist\n", pid);
		return 1;
	}
	char path[32];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", pid);
	if (stat(path, &st) == 0)
		fprintf(stderr,
		        "strobe: pid %d exists but belongs to another user (uid %u); a process takes "
		        "requests from "
		        "its own user or root only\n",
		        pid, (unsigned)st.st_uid);
	else
		fprintf(stderr,
		        "strobe: pid %d exists but belongs to another user; a process takes requests from "
		        "its own "
		        "user or root only\n",
		        pid);
	return 1;
}

/* 0 when pid runs strobe (or libkineto); else prints why and returns 1. */
static int check_pid(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	size_t len;
	char *maps = read_small_file(path, 64 << 20, &len);
	if (!maps) {
		if (errno == ENOENT || kill(pid, 0) != 0)
			return unreachable_pid(pid);
		fprintf(stderr, "strobe: warning: cannot read %s (%s); trying pid %d anyway\n", path,
		        strerror(errno), pid);
		return 0;
	}
	bool lib = strstr(maps, "libstrobe") || strstr(maps, "libkineto") || strstr(maps, "libtorch_cpu");
	free(maps);
	if (lib)
		return 0;
	/* Linked statically: strobe's code carries its endpoint prefix. */
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (access(path, R_OK)) {
		fprintf(stderr,
		        "strobe: warning: pid %d maps no libstrobe and its executable cannot be read; "
		        "trying anyway\n",
		        pid);
		return 0;
	}
	if (file_contains(path, "dynoconfigclient"))
		return 0;
	fprintf(stderr,
	        "strobe: pid %d does not run strobe (no libstrobe or libkineto mapped, none linked in)\n",
	        pid);
	return 1;
}

static int trigger_signal_number(void)
{
	const char *v = getenv("STROBE_TRIGGER_SIGNAL");
	if (!v || !*v)
		return SIGUSR2;
	if (!strcmp(v, "0") || !strcmp(v, "off"))
		return 0;
	int64_t n;
	if (!parse_i64(v, 1, NSIG - 1, &n))
		return SIGUSR2; /* the library's fallback */
	return (int)n;
}

/* Bit sig of SigCgt in /proc/<pid>/status: the process catches it. */
static int catches_signal(int pid, int sig)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	char *st = read_small_file(path, 1 << 20, NULL);
	if (!st)
		return -1;
	const char *p = strstr(st, "\nSigCgt:");
	int rc = 0;
	if (p) {
		unsigned long long mask = strtoull(p + 8, NULL, 16);
		rc = (mask >> (sig - 1)) & 1 ? 1 : 0;
	}
	free(st);
	return rc;
}

/* The file a signal-triggered trace goes to: the target's base config's
 * ACTIVITIES_LOG_FILE, else /tmp/libkineto_activities_<pid>.json. */
static void signal_output_file(int pid, char *out, size_t len)
{
	char path[64], base[PATH_MAX] = "";
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	size_t n;
	char *env = read_small_file(path, 1 << 20, &n);
	for (size_t i = 0; env && i < n; i += strlen(env + i) + 1) {
		if (!strncmp(env + i, "STROBE_CONFIG=", 14))
			snprintf(base, sizeof(base), "%s", env + i + 14);
		else if (!strncmp(env + i, "KINETO_CONFIG=", 14) && !base[0])
			snprintf(base, sizeof(base), "%s", env + i + 14);
	}
	free(env);
	char *text = read_small_file(base[0] ? base : "/etc/libkineto.conf", TEXT_MAX, NULL);
	struct strb_config cfg;
	strb_config_init(&cfg);
	struct strb_config_parse_opts po = {.pid = pid};
	if (text && strb_config_parse(&cfg, text, &po, NULL, 0) == 0 && cfg.log_file_arg[0]) {
		const char *url = cfg.log_url + 7;
		size_t n2 = strlen(url);
		if (n2 >= len)
			n2 = len - 1;
		memcpy(out, url, n2);
		out[n2] = 0;
	} else {
		snprintf(out, len, "/tmp/libkineto_activities_%d.json", pid);
	}
	free(text);
}

static int send_signals(struct target *t, int n)
{
	int sig = trigger_signal_number();
	if (!sig) {
		fprintf(stderr, "strobe: STROBE_TRIGGER_SIGNAL is off here; set it as in the target\n");
		return 1;
	}
	int failed = 0;
	for (int i = 0; i < n; i++) {
		int c = catches_signal(t[i].pid, sig);
		if (c < 0 || (c > 0 && kill(t[i].pid, 0) != 0 && errno == EPERM)) {
			unreachable_pid(t[i].pid);
			t[i].out = FAILED;
			failed++;
			continue;
		}
		if (c == 0) {
			fprintf(stderr,
			        "strobe: pid %d does not handle signal %d (%s): not sent, it would kill it. "
			        "Is its signal trigger off, or STROBE_TRIGGER_SIGNAL different there?\n",
			        t[i].pid, sig, strsignal(sig));
			t[i].out = FAILED;
			failed++;
			continue;
		}
		if (kill(t[i].pid, sig)) {
			fprintf(stderr, "strobe: cannot signal pid %d: %s\n", t[i].pid, strerror(errno));
			t[i].out = FAILED;
			failed++;
			continue;
		}
		t[i].out = TRIGGERED;
		t[i].served_pid = t[i].pid;
		signal_output_file(t[i].pid, t[i].file, sizeof(t[i].file));
	}
	return failed;
}

/* ---- serving the daemon's side ------------------------------------------- */

struct serve {
	const struct opts *o;
	const char *text, *log_file;
	struct target *t;
	int *nt;
	uint8_t *reply;
	ssize_t reply_len;
};

static void send_reply(struct strb_ipc_endpoint *ep, const struct strb_ipc_peer *peer, const uint8_t *d,
                       size_t len)
{
	if (peer->name[0])
		strb_ipc_send(ep, peer->name, d, len);
}

/* The target (index) this poll is for, or -1. In job mode every distinct
 * process of the job is a target of its own. */
static int match_poll(struct serve *s, const struct strb_ipc_request *r)
{
	if (s->o->have_job) {
		if (r->job_id != s->o->job_id)
			return -1;
		for (int i = 0; i < *s->nt; i++)
			if (s->t[i].pid == r->pids[0])
				return i;
		if (*s->nt == MAX_TARGETS || *s->nt >= s->o->process_limit)
			return -1;
		struct target *nt = &s->t[(*s->nt)++];
		memset(nt, 0, sizeof(*nt));
		nt->pid = r->pids[0];
		return *s->nt - 1;
	}
	/* Only the process itself: its children poll with its pid among their
	 * ancestors, and must not take its request. */
	for (int i = 0; i < *s->nt; i++)
		if (r->npids > 0 && r->pids[0] == s->t[i].pid)
			return i;
	return -1;
}

static void handle_poll(struct serve *s, struct strb_ipc_endpoint *ep, const struct strb_ipc_request *r,
                        const struct strb_ipc_peer *peer)
{
	uint8_t none[STRB_IPC_HEADER_SIZE];
	ssize_t nlen = strb_ipc_encode_reply("", 0, none, sizeof(none));
	int i = match_poll(s, r);
	if (i < 0 || s->t[i].out == TRIGGERED) {
		send_reply(ep, peer, none, (size_t)nlen);
		return;
	}
	struct target *t = &s->t[i];
	if (!(r->type & 2) && !s->o->dump) {
		/* Busy (type 0): it keeps polling; serve it if it frees up in time. */
		if (t->out != BUSY)
			fprintf(stderr, "strobe: pid %d is busy with another trace; waiting\n", r->pids[0]);
		t->out = BUSY;
		send_reply(ep, peer, none, (size_t)nlen);
		return;
	}
	if (!peer->name[0] || strb_ipc_send(ep, peer->name, s->reply, (size_t)s->reply_len)) {
		fprintf(stderr, "strobe: cannot answer pid %d\n", r->pids[0]);
		return;
	}
	t->out = TRIGGERED;
	t->served_pid = r->pids[0];
	file_for_pid(t->file, sizeof(t->file), s->log_file, r->pids[0]);
}

static bool all_served(const struct serve *s)
{
	/* Any process of the job may still poll, until as many as
	 * --process-limit allows have been served. */
	if (s->o->have_job && *s->nt < s->o->process_limit)
		return false;
	for (int i = 0; i < *s->nt; i++)
		if (s->t[i].out != TRIGGERED)
			return false;
	return true;
}

static int serve_requests(struct serve *s)
{
	const char *name = getenv("STROBE_DAEMON_NAME");
	if (!name || !*name)
		name = STRB_IPC_DAEMON_NAME;
	struct strb_ipc_endpoint *ep;
	int rc = strb_ipc_open(&ep, name);
	if (rc == -EADDRINUSE) {
		fprintf(stderr,
		        "strobe: the daemon name \"%s\" is taken: a dynolog daemon is probably running, "
		        "but its RPC port (%s:%" PRId64 ") did not answer; use --dynolog-port\n",
		        name, s->o->host ? s->o->host : "localhost", s->o->port);
		return 1;
	}
	if (rc) {
		fprintf(stderr, "strobe: cannot bind the daemon name \"%s\": %s\n", name, strerror(-rc));
		return 1;
	}
	s->reply = malloc(STRB_IPC_MAX_DGRAM);
	s->reply_len = s->reply
	                   ? strb_ipc_encode_reply(s->text, strlen(s->text), s->reply, STRB_IPC_MAX_DGRAM)
	                   : -ENOMEM;
	if (s->reply_len < 0) {
		fprintf(stderr, "strobe: the request is too long\n");
		free(s->reply);
		strb_ipc_close(ep);
		return 1;
	}
	fprintf(stderr, "strobe: waiting up to %" PRId64 " s for the target%s to poll (as \"%s\")\n",
	        s->o->timeout_s, *s->nt == 1 ? "" : "s", name);
	int64_t deadline = mono_ms() + s->o->timeout_s * 1000;
	uint64_t untrusted = 0;
	while (!all_served(s)) {
		int64_t left = deadline - mono_ms();
		if (left <= 0)
			break;
		struct pollfd pfd = {strb_ipc_fd(ep), POLLIN, 0};
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		for (;;) {
			struct strb_ipc_request r;
			struct strb_ipc_peer peer;
			int got = strb_ipc_recv_request(ep, &r, &peer);
			if (got == 0 || got == -EAGAIN)
				break;
			if (got == -EPERM && untrusted++ < 5)
				fprintf(
				    stderr,
				    "strobe: ignoring a poll from uid %u (pid %d): not this user or root\n",
				    (unsigned)peer.uid, (int)peer.pid);
			if (got == 1)
				handle_poll(s, ep, &r, &peer);
		}
	}
	free(s->reply);
	strb_ipc_close(ep);
	return 0;
}

/* ---- dynolog's RPC -------------------------------------------------------- */

/* 1 handled (results in t), 0 nobody listens: serve it ourselves, -1 error. */
static int try_dynolog(const struct opts *o, const char *text, const char *log_file, struct target *t,
                       int *nt)
{
	struct strb_rpc_result res;
	char err[256] = "";
	int limit = (int)(o->process_limit > 0 ? o->process_limit : 3);
	if (limit < o->npids)
		limit = o->npids;
	int rc = strb_rpc_trigger(o->host, (int)o->port, text, o->npids ? o->pids : NULL, o->npids,
	                          o->have_job ? o->job_id : 0, limit, RPC_TIMEOUT_MS, &res, err, sizeof(err));
	if (rc == -ECONNREFUSED || ((rc == -ETIMEDOUT || rc == -EADDRNOTAVAIL) && !o->host_given))
		return 0;
	if (rc) {
		fprintf(stderr, "strobe: the dynolog daemon at %s:%" PRId64 " failed: %s\n",
		        o->host ? o->host : "localhost", o->port, err[0] ? err : strerror(-rc));
		return -1;
	}
	fprintf(stderr, "strobe: dynolog at %s:%" PRId64 " matched %d process(es), triggered %d, %d busy\n",
	        o->host ? o->host : "localhost", o->port, res.nmatched, res.ntriggered, res.busy);
	if (o->have_job) {
		*nt = 0;
		for (int i = 0; i < res.nmatched && *nt < MAX_TARGETS; i++) {
			memset(&t[*nt], 0, sizeof(t[0]));
			t[(*nt)++].pid = res.matched[i];
		}
	}
	for (int i = 0; i < *nt; i++) {
		for (int k = 0; k < res.ntriggered; k++) {
			if (res.triggered[k] != t[i].pid)
				continue;
			t[i].out = TRIGGERED;
			t[i].served_pid = t[i].pid;
			file_for_pid(t[i].file, sizeof(t[i].file), log_file, t[i].pid);
		}
		bool matched = false;
		for (int k = 0; k < res.nmatched; k++)
			matched |= res.matched[k] == t[i].pid;
		if (t[i].out != TRIGGERED && matched && res.busy)
			t[i].out = BUSY;
	}
	/* A parent's pid selects its children: report those too. */
	if (!o->have_job) {
		for (int k = 0; k < res.ntriggered && *nt < MAX_TARGETS; k++) {
			bool known = false;
			for (int i = 0; i < *nt; i++)
				known |= t[i].pid == res.triggered[k];
			if (known)
				continue;
			struct target *x = &t[(*nt)++];
			memset(x, 0, sizeof(*x));
			x->pid = x->served_pid = res.triggered[k];
			x->out = TRIGGERED;
			file_for_pid(x->file, sizeof(x->file), log_file, x->pid);
		}
	}
	return 1;
}

/* ---- --dump: the answers ---------------------------------------------------- */

static int report(const struct target *t, int n, bool job);

#define DUMP_FILE_KEY  "STROBE_FLIGHT_DUMP_FILE="
#define DUMP_ERROR_KEY "STROBE_FLIGHT_DUMP_ERROR="

/* The request for a dump: the processes answer at `reply_to`. */
static char *dump_request(const char *reply_to)
{
	char *t = malloc(512);
	if (t)
		snprintf(t, 512, "STROBE_FLIGHT_DUMP=1\nSTROBE_FLIGHT_DUMP_REPLY=%s\n", reply_to);
	return t;
}

/* Waits (up to the timeout) for every triggered target's answer. */
static void wait_dump_answers(const struct opts *o, struct strb_ipc_endpoint *ep, struct target *t, int n)
{
	static char buf[STRB_IPC_MAX_DGRAM + 1];
	int64_t deadline = mono_ms() + o->timeout_s * 1000;
	for (;;) {
		int waiting = 0;
		for (int i = 0; i < n; i++)
			waiting += t[i].out == TRIGGERED && !t[i].answered;
		int64_t left = deadline - mono_ms();
		if (!waiting || left <= 0)
			return;
		struct pollfd pfd = {strb_ipc_fd(ep), POLLIN, 0};
		if (poll(&pfd, 1, (int)(left > 1000 ? 1000 : left)) <= 0)
			continue;
		size_t len;
		struct strb_ipc_peer peer;
		int got;
		while ((got = strb_ipc_recv_reply(ep, buf, sizeof(buf), &len, &peer)) != 0 &&
		       got != -EAGAIN) {
			if (got != 1)
				continue;
			for (int i = 0; i < n; i++) {
				struct target *x = &t[i];
				if (x->out != TRIGGERED || x->answered ||
				    (peer.pid != x->served_pid && peer.pid != x->pid))
					continue;
				x->answered = true;
				if (!strncmp(buf, DUMP_FILE_KEY, strlen(DUMP_FILE_KEY)))
					snprintf(x->file, sizeof(x->file), "%.*s", (int)sizeof(x->file) - 1,
					         buf + strlen(DUMP_FILE_KEY));
				else if (!strncmp(buf, DUMP_ERROR_KEY, strlen(DUMP_ERROR_KEY)))
					snprintf(x->error, sizeof(x->error), "%.*s",
					         (int)sizeof(x->error) - 1, buf + strlen(DUMP_ERROR_KEY));
				else
					snprintf(x->error, sizeof(x->error),
					         "an answer strobe does not know: %.200s", buf);
				break;
			}
		}
	}
}

/* Prints each target's outcome; 0 when every target wrote a dump. */
static int report_dumps(struct target *t, int n, bool job)
{
	int ok = 0;
	for (int i = 0; i < n; i++) {
		struct target *x = &t[i];
		if (x->out != TRIGGERED) {
			report(x, 1, false);
		} else if (!x->answered) {
			printf("pid %d: asked for a dump, but no answer came in time (see its log)\n",
			       x->served_pid);
			x->out = FAILED;
		} else if (x->error[0]) {
			printf("pid %d: no dump: %s\n", x->served_pid, x->error);
			x->out = FAILED;
		} else {
			printf("pid %d: dump written: %s\n", x->served_pid, x->file);
			ok++;
		}
	}
	if (job && n == 0)
		printf("job: no process polled (is SLURM_JOB_ID set in the job's environment?)\n");
	return n > 0 && ok == n ? 0 : 1;
}

/* ---- reporting and --wait -------------------------------------------------- */

static int report(const struct target *t, int n, bool job)
{
	int ok = 0;
	for (int i = 0; i < n; i++) {
		switch (t[i].out) {
		case TRIGGERED:
			printf("pid %d: triggered, writing %s\n", t[i].served_pid, t[i].file);
			ok++;
			break;
		case BUSY:
			printf("pid %d: busy (a trace is already pending or running)\n", t[i].pid);
			break;
		case FAILED:
			printf("pid %d: not triggered\n", t[i].pid);
			break;
		case NOT_SEEN:
			printf(
			    "pid %d: not found: it did not poll (is on-demand polling on? STROBE_USE_DAEMON, "
			    "STROBE_IPC_SOCKET_DIR and STROBE_DAEMON_NAME must match)\n",
			    t[i].pid);
			break;
		}
	}
	if (job && n == 0)
		printf("job: no process polled (is SLURM_JOB_ID set in the job's environment?)\n");
	return n > 0 && ok == n ? 0 : 1;
}

static int wait_for_files(const struct opts *o, const struct target *t, int n)
{
	int64_t extra = o->iterations > 0 ? 0
	                                  : (o->warmup_secs >= 0 ? o->warmup_secs : 5) * 1000 + 2000 +
	                                        (o->duration_ms > 0 ? o->duration_ms : 500);
	if (o->start_time > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t until = o->start_time - ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
		extra = (until > 0 ? until : 0) + (o->duration_ms > 0 ? o->duration_ms : 500);
	}
	int64_t deadline = mono_ms() + (o->timeout_s > 0 ? o->timeout_s : DEFAULT_TIMEOUT_S) * 1000 + extra;
	int rc = 0;
	for (int i = 0; i < n; i++) {
		if (t[i].out != TRIGGERED)
			continue;
		struct stat st;
		/* The library links a complete file into place: appearing means done. */
		while (stat(t[i].file, &st) && mono_ms() < deadline)
			usleep(50 * 1000);
		if (stat(t[i].file, &st)) {
			fprintf(stderr, "strobe: %s did not appear in time (see the target's log)\n",
			        t[i].file);
			rc = 1;
			continue;
		}
		printf("\n== %s\n", t[i].file);
		fflush(stdout);
		char name[] = "summary", file[PATH_MAX];
		snprintf(file, sizeof(file), "%s", t[i].file);
		char *argv[] = {name, file, NULL};
		if (cmd_summary(2, argv))
			rc = 1;
		fflush(stdout);
	}
	return rc;
}

/* Delivers the request (dynolog, else standing in for it); 0 or 1. */
static int deliver(struct opts *o, const char *text, const char *log_file, struct target *t, int *nt)
{
	int via = o->no_dynolog ? 0 : try_dynolog(o, text, log_file, t, nt);
	if (via < 0)
		return 1;
	if (via == 0) {
		if (o->process_limit < 0)
			o->process_limit = MAX_TARGETS;
		struct serve s = {.o = o, .text = text, .log_file = log_file, .t = t, .nt = nt};
		if (serve_requests(&s))
			return 1;
	}
	return 0;
}

/* --dump: the request names an endpoint of ours where each process
 * answers with the dump's file (or why there is none). */
static int trigger_dump(struct opts *o, struct target *t, int nt)
{
	char name[STRB_IPC_CLIENT_NAME_SIZE], reply_to[STRB_IPC_CLIENT_NAME_SIZE + 16];
	strb_ipc_client_name(name, sizeof(name));
	/* "dynoconfigclient" + UUID: ours keeps the UUID under its own prefix. */
	snprintf(reply_to, sizeof(reply_to), "strobedump%s", name + strlen("dynoconfigclient"));
	struct strb_ipc_endpoint *ep;
	int rc = strb_ipc_open(&ep, reply_to);
	if (rc) {
		fprintf(stderr, "strobe: cannot open an IPC endpoint for the answers: %s\n", strerror(-rc));
		return 1;
	}
	char *text = dump_request(reply_to);
	if (!text || deliver(o, text, "", t, &nt)) {
		free(text);
		strb_ipc_close(ep);
		return 1;
	}
	free(text);
	wait_dump_answers(o, ep, t, nt);
	strb_ipc_close(ep);
	rc = report_dumps(t, nt, o->have_job);
	if (o->wait && wait_for_files(o, t, nt))
		rc = 1;
	return rc;
}

int cmd_trigger(int argc, char **argv)
{
	struct opts o = {.duration_ms = -1,
	                 .iterations = -1,
	                 .roundup = -1,
	                 .start_time = -1,
	                 .warmup_secs = -1,
	                 .timeout_s = DEFAULT_TIMEOUT_S,
	                 .port = DEFAULT_PORT,
	                 .process_limit = -1,
	                 .job_id = 0};
	int rc = parse_args(&o, argc, argv);
	if (rc)
		return rc == -1 ? 0 : rc; /* -1: --help */
	rc = check_args(&o);
	if (rc)
		return rc;
	o.host_given = o.host != NULL;
	static struct target t[MAX_TARGETS];
	int nt = o.npids;
	for (int i = 0; i < nt; i++) {
		memset(&t[i], 0, sizeof(t[i]));
		t[i].pid = o.pids[i];
		if (check_pid(t[i].pid))
			return 1;
	}
	if (o.use_signal) {
		send_signals(t, nt);
		rc = report(t, nt, false);
		if (o.wait && wait_for_files(&o, t, nt))
			rc = 1;
		return rc;
	}
	if (o.dump)
		return trigger_dump(&o, t, nt);
	const char *log_file = o.log_file ? o.log_file : DEFAULT_LOG_FILE;
	char *text = build_config(&o, log_file);
	if (!text)
		return 1;
	rc = validate_config(text, log_file);
	if (rc) {
		free(text);
		return rc;
	}
	if (deliver(&o, text, log_file, t, &nt)) {
		free(text);
		return 1;
	}
	free(text);
	rc = report(t, nt, o.have_job);
	if (o.wait && wait_for_files(&o, t, nt))
		rc = 1;
	return rc;
}

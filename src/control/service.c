#define LOG_TAG "service"
#include "control/service.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "common/fdguard.h"
#include "common/ipc.h"
#include "common/log.h"
#include "control/flight.h"
#include "control/ondemand.h"
#include "core/clock.h"

#define BASE_RELOAD_MS (300 * 1000)
/* The first poll comes FIRST_POLL_MS after the start, then up to
 * SPREAD_MS more (at most the interval) picked at random: processes started
 * together (the ranks of a job) do not all poll in the same instant, and a
 * process that lives only a few milliseconds never polls. Later polls come
 * every interval, give or take a tenth, so phases keep drifting apart. */
#define FIRST_POLL_MS 100
#define SPREAD_MS     1000
/* A full daemon queue (EAGAIN: net.unix.max_dgram_qlen datagrams waiting)
 * is tried again after RETRY_MIN_MS, doubling up to RETRY_MAX_MS, each with
 * up to as much again at random; never by blocking the thread. */
#define RETRY_MIN_MS 10
#define RETRY_MAX_MS 1000
/* A poll the daemon has not answered yet when the process exits (or strobe
 * shuts down) is waited for so long at most after it was sent: dynolog
 * answers each poll, and an answer to a socket that is gone makes it retry
 * for 10 s, serving no one else. */
#define REPLY_WAIT_MS 1000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t thread;
static bool running;
/* Posted by the thread once it has read what it needs from the
 * environment: start_locked waits for it, so that a program may change
 * its environment once strobe_init has returned (setenv is not safe under
 * another thread's getenv). */
static sem_t started;
static bool restart_after_fork;
static atomic_bool stopping;
/* The thread's wake-up pipe (strb_fd_wake_pipe). */
static struct strb_fd_id wake_rd = {.fd = -1}, wake_wr = {.fd = -1};
static char base_path[4096];
/* Set once the process exits: no new polls; awaiting_reply says whether a
 * poll is still unanswered (read by the exit handler). */
static atomic_bool exiting;
static atomic_bool awaiting_reply;

/* The thread's endpoint, so a fork child can close the parent's socket. */
static _Atomic(struct strb_ipc_endpoint *) endpoint;

/* Lock-free atomics are async-signal-safe and visible to the thread. */
static atomic_int signal_seen;
static struct sigaction previous_action;
static int trigger_signal;

static int64_t now_ms(void)
{
	return strb_clock_real_ns() / 1000000;
}

/* Async-signal-safe (fstat and write). */
static void wake(void)
{
	char one = 1;
	if (strb_fd_id_ok(&wake_wr) && write(wake_wr.fd, &one, 1) < 0) {
		/* A full pipe still wakes the thread. */
	}
}

/* xorshift64, seeded per process: poll phases, not secrets. */
static uint64_t jitter_state;

static int64_t jitter(int64_t range)
{
	if (range <= 0)
		return 0;
	if (!jitter_state)
		jitter_state =
		    ((uint64_t)getpid() << 32) ^ (uint64_t)strb_clock_real_ns() ^ (uint64_t)(uintptr_t)&range;
	jitter_state ^= jitter_state << 13;
	jitter_state ^= jitter_state >> 7;
	jitter_state ^= jitter_state << 17;
	return (int64_t)(jitter_state % (uint64_t)range);
}

/* Async-signal-safe: a flag and a write; the thread does the rest. */
static void on_trigger_signal(int sig, siginfo_t *info, void *ctx)
{
	int saved = errno;
	atomic_store(&signal_seen, 1);
	wake();
	if (previous_action.sa_flags & SA_SIGINFO) {
		if (previous_action.sa_sigaction)
			previous_action.sa_sigaction(sig, info, ctx);
	} else if (previous_action.sa_handler != SIG_DFL && previous_action.sa_handler != SIG_IGN) {
		previous_action.sa_handler(sig);
	}
	errno = saved;
}

/* Only over the default disposition: a program's own handler stays in
 * charge of its signal. */
static void install_signal(void)
{
	const char *v = getenv("STROBE_TRIGGER_SIGNAL");
	int sig = SIGUSR2;
	if (v && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "off"))
			return;
		char *end;
		long n = strtol(v, &end, 10);
		if (*end || n <= 0 || n >= NSIG) {
			LOGW("STROBE_TRIGGER_SIGNAL=%s is not a signal number; using SIGUSR2", v);
		} else {
			sig = (int)n;
		}
	}
	struct sigaction old;
	if (sigaction(sig, NULL, &old) != 0)
		return;
	if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
		LOGI("signal %d already has a handler; the signal trigger is off", sig);
		return;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trigger_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	previous_action = old;
	if (sigaction(sig, &sa, NULL) == 0)
		trigger_signal = sig;
}

static bool daemon_polling_enabled(void)
{
	const char *v = getenv("STROBE_USE_DAEMON");
	if (v)
		return strcmp(v, "0") != 0;
	/* libkineto's switch: presence is enough. Without either, on. */
	return true;
}

struct service_state {
	struct strb_ipc_endpoint *ep;
	/* what the environment says, read at the start (sem started) */
	char daemon_name[256]; /* STROBE_DAEMON_NAME */
	int64_t job_id;        /* SLURM_JOB_ID */
	char base_file[4096];  /* the base config file (strb_config_base_file) */
	bool base_chosen;
	bool ipc_fabric; /* STROBE_USE_DAEMON / KINETO_USE_DAEMON, as strb_config_init reads them */
	char *base_text;
	int interval_s;
	int64_t next_poll, next_base;
	int64_t retry_ms; /* the last EAGAIN back-off, 0 after a poll went out */
	int64_t sent_ms;  /* when the unanswered poll went out */
};

static struct service_state state;

static void reload_base(struct service_state *s)
{
	char *text = strb_config_read_base_file(s->base_file, s->base_chosen);
	if (!text)
		return;
	if (s->base_text && !strcmp(s->base_text, text)) {
		free(text);
		return;
	}
	struct strb_config cfg;
	strb_config_init_with(&cfg, s->ipc_fabric);
	char err[512];
	if (text[0] && strb_config_parse(&cfg, text, NULL, err, sizeof(err))) {
		/* Keep the old settings, as libkineto does after a failed reload. */
		LOGW("ignoring base config %s: %s", s->base_file, err);
		free(text);
		return;
	}
	if (s->base_text)
		LOGI("base config %s changed", s->base_file);
	free(s->base_text);
	s->base_text = text;
	strb_log_set_verbose_modules(cfg.verbose_log_modules);
	s->interval_s = cfg.on_demand_interval_secs > 0 ? cfg.on_demand_interval_secs : 5;
}

/* A request from the daemon or the signal: on-demand rules (log file under
 * the allowed directory). */
static void submit_text(const char *text, enum strb_request_source source)
{
	struct strb_config cfg;
	strb_config_init(&cfg);
	struct strb_config_parse_opts opts = {.on_demand = true};
	char err[512];
	if (strb_config_parse(&cfg, text, &opts, err, sizeof(err))) {
		strb_ondemand_log_refusal("%s", err);
		return;
	}
	if (source == STRB_SOURCE_SIGNAL)
		cfg.on_demand_key_seen = true; /* the base config's duration, or 500 ms */
	if (!cfg.log_file_arg[0]) {
		/* No file named: libkineto's default name, in the allowed directory. */
		const char *dir = strb_ondemand_allowed_dir();
		size_t n = strlen(dir);
		snprintf(cfg.log_url, sizeof(cfg.log_url), "file://%s%slibkineto_activities_%d.json", dir,
		         n && dir[n - 1] == '/' ? "" : "/", (int)getpid());
	}
	strb_ondemand_submit(&cfg, source);
}

/* The value of KEY in a config text (lines KEY=VALUE, blanks around both
 * ignored, as dynolog indents what it forwards): true with it in out. */
static bool config_value(const char *text, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		while (n && (*line == ' ' || *line == '\t'))
			line++, n--;
		if (n > klen && !strncmp(line, key, klen)) {
			const char *v = line + klen;
			size_t vn = n - klen;
			while (vn && (*v == ' ' || *v == '\t'))
				v++, vn--;
			if (vn && *v == '=') {
				v++, vn--;
				while (vn && (*v == ' ' || *v == '\t'))
					v++, vn--;
				while (vn && (v[vn - 1] == ' ' || v[vn - 1] == '\t' || v[vn - 1] == '\r'))
					vn--;
				snprintf(out, len, "%.*s", (int)vn, v);
				return true;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return false;
}

/* A request with STROBE_FLIGHT_DUMP=1 asks for the flight recorder's past,
 * not for a trace of the future: the last window is written now (here, on
 * the service thread). With STROBE_FLIGHT_DUMP_REPLY=NAME the outcome goes
 * to the IPC endpoint NAME, as a reply datagram whose text is
 * "STROBE_FLIGHT_DUMP_FILE=PATH" or "STROBE_FLIGHT_DUMP_ERROR=WHY".
 * Returns false when the text is not such a request. */
static bool flight_dump_request(struct service_state *s, const char *text, const struct strb_ipc_peer *peer)
{
	char v[16], reply_to[128] = "", file[4300], answer[4400];
	if (!config_value(text, "STROBE_FLIGHT_DUMP", v, sizeof(v)) || !strcmp(v, "0") || !strcmp(v, "false"))
		return false;
	config_value(text, "STROBE_FLIGHT_DUMP_REPLY", reply_to, sizeof(reply_to));
	if (!strb_flight_running()) {
		snprintf(answer, sizeof(answer),
		         "STROBE_FLIGHT_DUMP_ERROR=pid %d has no flight recorder running (start it with "
		         "STROBE_FLIGHT=DURATION, strobe record --flight or strobe_flight_start)",
		         (int)getpid());
		LOGW("flight recorder dump asked for by pid %d: none is running", (int)peer->pid);
	} else {
		char reason[128];
		snprintf(reason, sizeof(reason), "requested over IPC by pid %d", (int)peer->pid);
		if (strb_flight_dump(reason, file, sizeof(file)))
			snprintf(answer, sizeof(answer), "STROBE_FLIGHT_DUMP_ERROR=%s", strobe_last_error());
		else
			snprintf(answer, sizeof(answer), "STROBE_FLIGHT_DUMP_FILE=%s", file);
	}
	if (!reply_to[0])
		return true;
	/* One line: a newline in a message would end the value. */
	for (char *c = answer; *c; c++)
		if (*c == '\n')
			*c = ' ';
	uint8_t dgram[STRB_IPC_HEADER_SIZE + sizeof(answer)];
	ssize_t n = strb_ipc_encode_reply(answer, strlen(answer), dgram, sizeof(dgram));
	int rc = n > 0 ? strb_ipc_send(s->ep, reply_to, dgram, (size_t)n) : (int)n;
	if (rc)
		LOGW("cannot tell %s where the flight recorder dump went: %s", reply_to, strerror(-rc));
	return true;
}

static int64_t interval_ms(const struct service_state *s)
{
	return (int64_t)s->interval_s * 1000;
}

static void poll_daemon(struct service_state *s, int64_t now)
{
	struct strb_ipc_request req;
	/* A flight recorder takes dump requests whatever else runs: it says
	 * "accepting" so that dynolog hands them over (a trace request that
	 * comes instead is refused, with the reason logged). */
	strb_ipc_make_request_job(&req, strb_ondemand_accepting() || strb_flight_running(), s->job_id);
	uint8_t dgram[STRB_IPC_HEADER_SIZE + 16 + 4 * STRB_IPC_MAX_PIDS];
	ssize_t n = strb_ipc_encode_request(&req, dgram, sizeof(dgram));
	int rc = n > 0 ? strb_ipc_send(s->ep, s->daemon_name, dgram, (size_t)n) : (int)n;
	if (rc == -EAGAIN) {
		/* The daemon's queue is full (many processes, one daemon). */
		s->retry_ms = s->retry_ms ? s->retry_ms * 2 : RETRY_MIN_MS;
		if (s->retry_ms > RETRY_MAX_MS)
			s->retry_ms = RETRY_MAX_MS;
		if (s->retry_ms > interval_ms(s))
			s->retry_ms = interval_ms(s);
		s->next_poll = now + s->retry_ms + jitter(s->retry_ms + 1);
		return;
	}
	if (rc == 0) {
		s->sent_ms = now;
		atomic_store(&awaiting_reply, true);
	}
	s->retry_ms = 0;
	s->next_poll = now + interval_ms(s) - interval_ms(s) / 10 + jitter(interval_ms(s) / 5 + 1);
}

/* The program closed the endpoint's fd (a daemon closing every fd): a new
 * endpoint, under a new name, takes its place. */
static void reopen_endpoint(struct service_state *s)
{
	LOGI("the program closed strobe's IPC socket; opening another one");
	strb_ipc_close(s->ep); /* leaves the number alone: it is not ours any more */
	atomic_store(&endpoint, NULL);
	atomic_store(&awaiting_reply, false);
	char name[96];
	strb_ipc_client_name(name, sizeof(name));
	s->ep = NULL;
	int rc = strb_ipc_open(&s->ep, name);
	atomic_store(&endpoint, s->ep);
	if (rc)
		LOGW("on-demand polling is off: cannot open an IPC endpoint (%s)", strerror(-rc));
}

/* Reads what the daemon sent; configs are used unless discard (strobe is
 * stopping: the reply only needs taking off the daemon's hands). */
static void read_replies(struct service_state *s, bool discard)
{
	static uint8_t buf[STRB_IPC_HEADER_SIZE + STRB_IPC_MAX_CONFIG + 1];
	for (;;) {
		struct strb_ipc_peer peer;
		ssize_t n = strb_ipc_recv(s->ep, buf, sizeof(buf) - 1, &peer);
		if (n == 0 || n == -EAGAIN || n == -EBADF)
			return;
		if (n < 0)
			continue; /* malformed or truncated: counted by the endpoint */
		if (!strb_ipc_peer_trusted(&peer)) {
			strb_ondemand_log_refusal("sent by uid %u (pid %d), not this user or root",
			                          (unsigned)peer.uid, (int)peer.pid);
			continue;
		}
		const uint8_t *payload;
		size_t len;
		const char *why;
		if (strb_ipc_decode(buf, (size_t)n, &payload, &len, &why) != STRB_IPC_REQ)
			continue;
		atomic_store(&awaiting_reply, false); /* answered */
		if (!len)
			continue;
		if (discard) {
			LOGW("on-demand config from %s (pid %d) ignored: strobe is stopping", peer.name,
			     (int)peer.pid);
			continue;
		}
		char *text = malloc(len + 1);
		if (!text)
			continue;
		memcpy(text, payload, len);
		text[len] = 0;
		LOGI("received an on-demand config from %s (pid %d)", peer.name, (int)peer.pid);
		if (!flight_dump_request(s, text, &peer))
			submit_text(text, STRB_SOURCE_DAEMON);
		free(text);
	}
}

/* Waits (bounded) for the daemon's answer to the last poll, so that it
 * does not answer a socket that is gone. */
static void drain_reply(struct service_state *s)
{
	while (s->ep && atomic_load(&awaiting_reply) && strb_ipc_usable(s->ep)) {
		int64_t left = s->sent_ms + REPLY_WAIT_MS - now_ms();
		if (left <= 0)
			break;
		struct pollfd p = {strb_ipc_fd(s->ep), POLLIN, 0};
		if (poll(&p, 1, (int)left) > 0)
			read_replies(s, true);
	}
}

static void *service_main(void *arg)
{
	(void)arg;
	/* Static, not on this thread's stack: a fork child (which has no copy
	 * of the thread) can still reach and free what it holds. */
	free(state.base_text);
	state = (struct service_state){.interval_s = 5};
	struct service_state *s = &state;
	atomic_store(&awaiting_reply, false);
	const char *to = getenv("STROBE_DAEMON_NAME");
	snprintf(s->daemon_name, sizeof(s->daemon_name), "%s", to && *to ? to : STRB_IPC_DAEMON_NAME);
	s->job_id = strb_ipc_job_id();
	strb_config_base_file(base_path[0] ? base_path : NULL, s->base_file, sizeof(s->base_file),
	                      &s->base_chosen);
	s->ipc_fabric = strb_config_env_ipc_fabric();
	reload_base(s);
	if (daemon_polling_enabled()) {
		char name[96];
		strb_ipc_client_name(name, sizeof(name));
		int rc = strb_ipc_open(&s->ep, name);
		atomic_store(&endpoint, s->ep);
		if (rc)
			LOGW("on-demand polling is off: cannot open an IPC endpoint (%s)", strerror(-rc));
	}
	sem_post(&started);
	int64_t now = now_ms();
	int64_t spread = interval_ms(s) < SPREAD_MS ? interval_ms(s) : SPREAD_MS;
	s->next_poll = now + FIRST_POLL_MS + jitter(spread);
	s->next_base = now + BASE_RELOAD_MS;
	int64_t next_tick = now;
	while (!atomic_load(&stopping)) {
		now = now_ms();
		if (now >= s->next_base) {
			reload_base(s);
			s->next_base = now + BASE_RELOAD_MS;
		}
		if (s->ep && !strb_ipc_usable(s->ep))
			reopen_endpoint(s);
		if (s->ep && now >= s->next_poll && !atomic_load(&exiting))
			poll_daemon(s, now);
		if (s->ep)
			read_replies(s, atomic_load(&exiting));
		if (atomic_exchange(&signal_seen, 0)) {
			LOGI("trigger signal received");
			submit_text(s->base_text ? s->base_text : "", STRB_SOURCE_SIGNAL);
		}
		next_tick = strb_ondemand_tick(now_ms());
		now = now_ms();
		int64_t until = next_tick;
		if (s->ep && s->next_poll < until)
			until = s->next_poll;
		if (s->next_base < until)
			until = s->next_base;
		int timeout = until <= now ? 0 : (int)(until - now > 60000 ? 60000 : until - now);
		if (!strb_fd_id_ok(&wake_rd) && strb_fd_wake_pipe(&wake_rd, &wake_wr) < 0 && timeout > 1000)
			timeout = 1000; /* no wake-ups: look again soon */
		struct pollfd fds[2] = {{wake_rd.fd, POLLIN, 0},
		                        {s->ep ? strb_ipc_fd(s->ep) : -1, POLLIN, 0}};
		if (poll(fds, 2, timeout) > 0 && (fds[0].revents & POLLIN) && strb_fd_id_ok(&wake_rd)) {
			char buf[64];
			if (read(wake_rd.fd, buf, sizeof(buf)) < 0) {
				/* Nothing to drain. */
			}
		}
		/* A closed fd (POLLNVAL) is replaced at the top of the loop. */
	}
	drain_reply(s);
	atomic_store(&endpoint, NULL);
	strb_ipc_close(s->ep);
	free(s->base_text);
	s->base_text = NULL;
	return NULL;
}

/* The process is exiting: an unanswered poll is waited for (bounded), the
 * service thread reading the answer. */
static void service_at_exit(void)
{
	atomic_store(&exiting, true);
	if (!__atomic_load_n(&running, __ATOMIC_ACQUIRE) || pthread_equal(pthread_self(), thread))
		return;
	wake();
	int64_t end = now_ms() + REPLY_WAIT_MS;
	while (atomic_load(&awaiting_reply) && now_ms() < end)
		usleep(2000);
}

static void register_at_exit(void)
{
	atexit(service_at_exit);
}

static int start_locked(void)
{
	if (running)
		return 0;
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_at_exit);
	if (!strb_fd_id_ok(&wake_rd) || !strb_fd_id_ok(&wake_wr)) {
		int rc = strb_fd_wake_pipe(&wake_rd, &wake_wr);
		if (rc)
			return rc;
	}
	atomic_store(&stopping, false);
	strb_ondemand_wake = wake;
	/* Every signal blocked in our thread: the host's handlers never run on it. */
	if (sem_init(&started, 0, 0))
		return -errno;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&thread, NULL, service_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		sem_destroy(&started);
		return -rc;
	}
	/* Running from here on: a fork while the thread starts restarts it in
	 * the child (strb_service_atfork_child). */
	__atomic_store_n(&running, true, __ATOMIC_RELEASE);
	while (sem_wait(&started) && errno == EINTR)
		;
	sem_destroy(&started);
	pthread_setname_np(thread, "strobe-service");
	return 0;
}

int strb_service_start(const char *base_config_path)
{
	pthread_mutex_lock(&lock);
	snprintf(base_path, sizeof(base_path), "%s", base_config_path ? base_config_path : "");
	int rc = start_locked();
	if (!rc && !trigger_signal)
		install_signal();
	pthread_mutex_unlock(&lock);
	if (rc)
		LOGW("cannot start the service thread (%s): on-demand tracing is off", strerror(-rc));
	return rc;
}

void strb_service_stop(void)
{
	pthread_mutex_lock(&lock);
	if (running) {
		atomic_store(&stopping, true);
		wake();
		pthread_join(thread, NULL);
		running = false;
	}
	pthread_mutex_unlock(&lock);
}

void strb_service_ensure(void)
{
	if (!__atomic_load_n(&restart_after_fork, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&lock);
	if (restart_after_fork) {
		restart_after_fork = false;
		start_locked();
	}
	pthread_mutex_unlock(&lock);
}

void strb_service_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
	free(state.base_text);
	state.base_text = NULL;
	if (running) {
		/* The thread did not come along; its endpoint name must not be
		 * shared with the parent either: a fresh one comes with the restart. */
		running = false;
		restart_after_fork = true;
	}
	strb_fd_id_close(&wake_rd);
	strb_fd_id_close(&wake_wr);
	atomic_store(&awaiting_reply, false); /* the parent's poll, the parent's answer */
	atomic_store(&exiting, false);
	struct strb_ipc_endpoint *ep = atomic_exchange(&endpoint, NULL);
	if (ep)
		strb_ipc_close(ep);
}

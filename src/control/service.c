#define LOG_TAG "service"
#include "control/service.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "common/config.h"
#include "control/ondemand.h"
#include "core/clock.h"
#include "common/log.h"
#include "common/ipc.h"

#define BASE_RELOAD_MS (300 * 1000)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t thread;
static bool running;
static bool restart_after_fork;
static atomic_bool stopping;
static int wake_fd = -1;
static char base_path[4096];

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

static void wake(void)
{
	uint64_t one = 1;
	if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0) {
		/* A full counter still wakes the thread. */
	}
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
	char *base_text;
	int interval_s;
	int64_t next_poll, next_base;
	uint64_t refused_peers;
};

static struct service_state state;

static void reload_base(struct service_state *s)
{
	const char *used = NULL;
	char *text = strb_config_read_base(base_path[0] ? base_path : NULL, &used);
	if (!text)
		return;
	if (s->base_text && !strcmp(s->base_text, text)) {
		free(text);
		return;
	}
	struct strb_config cfg;
	strb_config_init(&cfg);
	char err[512];
	if (text[0] && strb_config_parse(&cfg, text, NULL, err, sizeof(err))) {
		/* Keep the old settings, as libkineto does after a failed reload. */
		LOGW("ignoring base config %s: %s", used ? used : "", err);
		free(text);
		return;
	}
	if (s->base_text)
		LOGI("base config %s changed", used ? used : "");
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
		LOGW("on-demand request refused: %s", err);
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

static void poll_daemon(struct service_state *s)
{
	struct strb_ipc_request req;
	strb_ipc_make_request(&req, strb_ondemand_accepting());
	uint8_t dgram[STRB_IPC_HEADER_SIZE + 16 + 4 * STRB_IPC_MAX_PIDS];
	ssize_t n = strb_ipc_encode_request(&req, dgram, sizeof(dgram));
	const char *to = getenv("STROBE_DAEMON_NAME");
	if (n > 0)
		strb_ipc_send(s->ep, to && *to ? to : STRB_IPC_DAEMON_NAME, dgram, (size_t)n);
}

static void read_replies(struct service_state *s)
{
	static uint8_t buf[STRB_IPC_HEADER_SIZE + STRB_IPC_MAX_CONFIG + 1];
	for (;;) {
		struct strb_ipc_peer peer;
		ssize_t n = strb_ipc_recv(s->ep, buf, sizeof(buf) - 1, &peer);
		if (n == 0 || n == -EAGAIN)
			return;
		if (n < 0)
			continue; /* malformed or truncated: counted by the endpoint */
		if (!strb_ipc_peer_trusted(&peer)) {
			if (s->refused_peers++ < 10)
				LOGW("on-demand request refused: sent by uid %u (pid %d), not this user or root",
				     (unsigned)peer.uid, (int)peer.pid);
			continue;
		}
		const uint8_t *payload;
		size_t len;
		const char *why;
		if (strb_ipc_decode(buf, (size_t)n, &payload, &len, &why) != STRB_IPC_REQ || !len)
			continue;
		char *text = malloc(len + 1);
		if (!text)
			continue;
		memcpy(text, payload, len);
		text[len] = 0;
		LOGI("received an on-demand config from %s (pid %d)", peer.name, (int)peer.pid);
		submit_text(text, STRB_SOURCE_DAEMON);
		free(text);
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
	reload_base(s);
	if (daemon_polling_enabled()) {
		char name[96];
		strb_ipc_client_name(name, sizeof(name));
		int rc = strb_ipc_open(&s->ep, name);
		atomic_store(&endpoint, s->ep);
		if (rc)
			LOGW("on-demand polling is off: cannot open an IPC endpoint (%s)", strerror(-rc));
	}
	int64_t now = now_ms();
	s->next_poll = now;
	s->next_base = now + BASE_RELOAD_MS;
	int64_t next_tick = now;
	while (!atomic_load(&stopping)) {
		now = now_ms();
		if (now >= s->next_base) {
			reload_base(s);
			s->next_base = now + BASE_RELOAD_MS;
		}
		if (s->ep && now >= s->next_poll) {
			poll_daemon(s);
			s->next_poll = now + (int64_t)s->interval_s * 1000;
		}
		if (s->ep)
			read_replies(s);
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
		struct pollfd fds[2] = {{wake_fd, POLLIN, 0}, {s->ep ? strb_ipc_fd(s->ep) : -1, POLLIN, 0}};
		if (poll(fds, 2, timeout) > 0 && (fds[0].revents & POLLIN)) {
			uint64_t v;
			if (read(wake_fd, &v, sizeof(v)) < 0) {
				/* Nothing to drain. */
			}
		}
	}
	atomic_store(&endpoint, NULL);
	strb_ipc_close(s->ep);
	free(s->base_text);
	s->base_text = NULL;
	return NULL;
}

static int start_locked(void)
{
	if (running)
		return 0;
	if (wake_fd < 0)
		wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake_fd < 0)
		return -errno;
	atomic_store(&stopping, false);
	strb_ondemand_wake = wake;
	/* Every signal blocked in our thread: the host's handlers never run on it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&thread, NULL, service_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	pthread_setname_np(thread, "strobe-service");
	running = true;
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
	if (wake_fd >= 0) {
		close(wake_fd);
		wake_fd = -1;
	}
	struct strb_ipc_endpoint *ep = atomic_exchange(&endpoint, NULL);
	if (ep)
		strb_ipc_close(ep);
}

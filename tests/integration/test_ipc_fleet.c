/* strobe's polls against a stand-in daemon that behaves as dynolog does:
 * one thread, one datagram handled every 10 ms, each poll answered, and an
 * answer that finds no socket retried with sleeps of 10, 20, 40 ... ms
 * (10.2 s in all in dynolog, serving no one meanwhile). Processes are
 * forked from this test and run strobe with polling on (abstract names, a
 * private daemon name, 1 s polls).
 *
 * - short-lived processes (each exits right after its poll, before the
 *   answer) must not leave the daemon an answer nobody takes;
 * - 64 processes started in the same instant, with the kernel's queue of
 *   net.unix.max_dgram_qlen datagrams (10 by default) in front of a daemon
 *   that reads slower than they send, must all be registered, in bounded
 *   time.
 * STROBE_TEST_LABELS: concurrency */
#include "testutil.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"
#include "strobe/strobe.h"

#define MAX_CHILDREN 64

static char dir[1024];
static char base[1100];
static char daemon_name[64];

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	snprintf(base, sizeof(base), "%s/base.conf", dir);
	tu_write_file(base, "ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS=1\n");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmrf(dir);
	return 0;
}

/* ---- the stand-in daemon ------------------------------------------------- */

struct standin {
	struct strb_ipc_endpoint *ep;
	pid_t pids[MAX_CHILDREN];
	int npids;          /* distinct pids that polled */
	int64_t first_poll; /* when the first poll came */
	int64_t last_new;   /* when the last new pid came */
	int refused;        /* answers that found no socket */
	int64_t stuck_ms;   /* spent retrying them */
	bool kick;          /* send SIGUSR1 to each poller before answering */
};

static void standin_open(struct standin *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(daemon_name, sizeof(daemon_name), "strobe-test-dynolog-%d-%lld", (int)getpid(),
	         (long long)mono_ms());
	assert_int_equal(strb_ipc_open(&d->ep, daemon_name), 0);
}

static bool known(const struct standin *d, pid_t pid)
{
	for (int i = 0; i < d->npids; i++)
		if (d->pids[i] == pid)
			return true;
	return false;
}

/* One turn of dynolog's IPC loop: at most one datagram, answered (with
 * dynolog's retries), then 10 ms of sleep. */
static void standin_turn(struct standin *d)
{
	struct strb_ipc_request r;
	struct strb_ipc_peer peer;
	int got = strb_ipc_recv_request(d->ep, &r, &peer);
	if (got == 1 && peer.name[0]) {
		if (!d->npids)
			d->first_poll = mono_ms();
		if (!known(d, r.pids[0]) && d->npids < MAX_CHILDREN) {
			d->pids[d->npids++] = r.pids[0];
			d->last_new = mono_ms();
		}
		if (d->kick) {
			/* The poller ends now; dynolog's answer comes a little later. */
			kill(r.pids[0], SIGUSR1);
			usleep(20 * 1000);
		}
		uint8_t reply[STRB_IPC_HEADER_SIZE];
		ssize_t n = strb_ipc_encode_reply("", 0, reply, sizeof(reply));
		assert_true(n > 0);
		int64_t t0 = mono_ms();
		int sleep_ms = 10;
		for (int tries = 0; tries < 10; tries++) {
			int rc = strb_ipc_send(d->ep, peer.name, reply, (size_t)n);
			if (rc != -ECONNREFUSED && rc != -EAGAIN)
				break;
			if (tries == 0)
				d->refused++;
			/* dynolog goes on to 10 tries (10.2 s); three show it. */
			if (tries == 2)
				break;
			usleep((useconds_t)sleep_ms * 1000);
			sleep_ms *= 2;
		}
		d->stuck_ms += mono_ms() - t0;
	}
	usleep(10 * 1000);
}

/* ---- the traced processes ------------------------------------------------ */

static volatile sig_atomic_t kicked;

static void on_kick(int sig)
{
	(void)sig;
	kicked = 1;
}

/* Forks n processes that wait on a pipe, then all start strobe in the
 * same instant (the ranks of a job starting together). short_lived: each
 * exits (exit(), its handlers run) as soon as it gets SIGUSR1. */
static void spawn(pid_t *pids, int n, bool short_lived, int *go_fd)
{
	int go[2];
	assert_int_equal(pipe(go), 0);
	fflush(NULL);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0) {
			close(go[1]);
			signal(SIGUSR1, on_kick);
			setenv("STROBE_USE_DAEMON", "1", 1);
			setenv("STROBE_DAEMON_NAME", daemon_name, 1);
			setenv("STROBE_CONFIG", base, 1);
			setenv("STROBE_TRIGGER_SIGNAL", "off", 1);
			unsetenv("STROBE_IPC_SOCKET_DIR");
			unsetenv("KINETO_IPC_SOCKET_DIR");
			char c;
			if (read(go[0], &c, 1) < 0)
				_exit(3);
			if (strobe_init(NULL))
				_exit(4);
			int64_t end = mono_ms() + 15000;
			while (mono_ms() < end) {
				if (short_lived && kicked)
					exit(0);
				usleep(1000);
			}
			_exit(0);
		}
	}
	close(go[0]);
	*go_fd = go[1];
}

static void reap(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGKILL);
		waitpid(pids[i], NULL, 0);
	}
}

/* Processes that end right after polling: the daemon's answer still finds
 * its socket, so the daemon never stalls on them. */
static void short_lived_leave_no_poll_unanswered(void **state)
{
	(void)state;
	struct standin d;
	standin_open(&d);
	d.kick = true;
	enum { N = 8 };
	pid_t pids[N];
	int go;
	spawn(pids, N, true, &go);
	close(go);
	int64_t end = mono_ms() + 8000;
	while (d.npids < N && mono_ms() < end)
		standin_turn(&d);
	for (int i = 0; i < 20; i++)
		standin_turn(&d); /* late ones */
	/* Each child exits once kicked; a sanitizer's exit can take seconds. */
	int exited = 0, gone = 0;
	bool done[N] = {false};
	end = mono_ms() + 20000;
	while (gone < N && mono_ms() < end) {
		for (int i = 0; i < N; i++) {
			int st;
			if (done[i] || waitpid(pids[i], &st, WNOHANG) != pids[i])
				continue;
			done[i] = true;
			gone++;
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
				exited++;
		}
		if (gone < N)
			usleep(10 * 1000);
	}
	for (int i = 0; i < N; i++)
		if (!done[i])
			kill(pids[i], SIGKILL), waitpid(pids[i], NULL, 0);
	strb_ipc_close(d.ep);
	if (d.refused)
		fail_msg(
		    "%d of %d answers found no socket (dynolog would stall 10.2 s on each); %lld ms retrying",
		    d.refused, d.npids, (long long)d.stuck_ms);
	assert_int_equal(d.npids, N);
	assert_int_equal(exited, N);
}

/* 64 processes, one slow daemon, a queue of 10: every one registers, and
 * soon, because polls are spread and a full queue is tried again. */
static void fleet_all_register(void **state)
{
	(void)state;
	struct standin d;
	standin_open(&d);
	pid_t pids[MAX_CHILDREN];
	int go;
	spawn(pids, MAX_CHILDREN, false, &go);
	/* Every child is waiting: they start strobe in the same instant. */
	usleep(300 * 1000);
	int64_t t0 = mono_ms();
	close(go);
	int64_t end = t0 + 6000;
	while (d.npids < MAX_CHILDREN && mono_ms() < end)
		standin_turn(&d);
	int64_t took = (d.npids ? d.last_new : mono_ms()) - t0;
	reap(pids, MAX_CHILDREN);
	strb_ipc_close(d.ep);
	print_message("%d of %d processes registered, the last %lld ms after they started\n", d.npids,
	              MAX_CHILDREN, (long long)took);
	assert_int_equal(d.npids, MAX_CHILDREN);
	/* The first polls spread over 1.1 s; 64 polls take the daemon 0.64 s. */
	assert_true(took < 4000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(short_lived_leave_no_poll_unanswered),
	    cmocka_unit_test(fleet_all_register),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

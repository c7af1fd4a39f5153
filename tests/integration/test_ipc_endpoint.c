/* ipcfabric endpoints and dynolog's RPC, end to end inside one process: a
 * client and a stand-in daemon (under a test name, never "dynolog", so a real
 * daemon on this machine is left alone) exchange polls and replies in the
 * abstract namespace and in a socket directory; credentials, refusals and
 * counters as a user sees them; and the TCP trigger against a test server. */
#include "testutil.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"

static const char VERIFIED_TEXT[] =
    "\n    ACTIVITIES_LOG_FILE=/tmp/test_trace.json\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=500\n"
    "PROFILE_REPORT_INPUT_SHAPES=false\nPROFILE_WITH_STACK=false\nPROFILE_WITH_FLOPS=false\n"
    "PROFILE_WITH_MODULES=false\n    REQUEST_TRACE_ID=10317743308064884744\n";

static const char VERIFIED_RPC_REPLY[] =
    "{\"activityProfilersBusy\":0,\"activityProfilersTriggered\":[16381],"
    "\"eventProfilersBusy\":0,\"eventProfilersTriggered\":[],"
    "\"processesMatched\":[16381]}";

static char daemon_name[64];

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Datagrams between two local sockets are queued at once, but allow a
 * little time anyway (a forked child's send). */
static ssize_t recv_wait(struct strb_ipc_endpoint *ep, uint8_t *buf, size_t len, struct strb_ipc_peer *peer)
{
	ssize_t n = 0;

	for (int i = 0; i < 200 && n == 0; i++) {
		n = strb_ipc_recv(ep, buf, len, peer);
		if (n == 0)
			usleep(5000);
	}
	return n;
}

static void open_pair(struct strb_ipc_endpoint **client, struct strb_ipc_endpoint **daemon, char *cname)
{
	strb_ipc_client_name(cname, STRB_IPC_CLIENT_NAME_SIZE);
	assert_int_equal(strb_ipc_open(daemon, daemon_name), 0);
	assert_int_equal(strb_ipc_open(client, cname), 0);
}

/* One poll and one reply, as libkineto and dynolog exchange them. */
static void exchange(struct strb_ipc_endpoint *client, struct strb_ipc_endpoint *daemon, const char *cname)
{
	static uint8_t dgram[STRB_IPC_MAX_DGRAM];
	static char text[STRB_IPC_MAX_DGRAM];
	struct strb_ipc_request req, got;
	struct strb_ipc_peer peer;
	size_t tlen = 99;
	ssize_t n;

	strb_ipc_make_request(&req, true);
	n = strb_ipc_encode_request(&req, dgram, sizeof(dgram));
	assert_true(n > 0);
	assert_int_equal(strb_ipc_send(client, daemon_name, dgram, (size_t)n), 0);
	assert_int_equal(strb_ipc_recv_request(daemon, &got, &peer), 1);
	assert_int_equal(got.npids, req.npids);
	assert_memory_equal(got.pids, req.pids, sizeof(int32_t) * (size_t)req.npids);
	assert_int_equal(got.type, 2);
	assert_int_equal(peer.pid, getpid());
	assert_int_equal(peer.uid, geteuid());
	assert_int_equal(peer.gid, getegid());
	assert_string_equal(peer.name, cname);
	assert_true(strb_ipc_peer_trusted(&peer));

	/* Idle: a bare header, which the client reads as "". */
	n = strb_ipc_encode_reply(NULL, 0, dgram, sizeof(dgram));
	assert_int_equal(strb_ipc_send(daemon, peer.name, dgram, (size_t)n), 0);
	assert_int_equal(strb_ipc_recv_reply(client, text, sizeof(text), &tlen, &peer), 1);
	assert_int_equal(tlen, 0);
	assert_string_equal(text, "");
	assert_string_equal(peer.name, daemon_name);

	/* A pending config: the 250-byte text, whole. */
	n = strb_ipc_encode_reply(VERIFIED_TEXT, strlen(VERIFIED_TEXT), dgram, sizeof(dgram));
	assert_int_equal(n, 290);
	assert_int_equal(strb_ipc_send(daemon, cname, dgram, (size_t)n), 0);
	memset(dgram, 0, sizeof(dgram));
	assert_int_equal(strb_ipc_recv(client, dgram, sizeof(dgram), &peer), 290);
	assert_int_equal(peer.pid, getpid());
	assert_memory_equal(dgram + 40, VERIFIED_TEXT, 250);

	assert_int_equal(strb_ipc_recv(client, dgram, sizeof(dgram), &peer), 0);
	assert_int_equal(strb_ipc_recv(daemon, dgram, sizeof(dgram), &peer), 0);
}

static void test_client_name(void **state)
{
	char a[STRB_IPC_CLIENT_NAME_SIZE], b[STRB_IPC_CLIENT_NAME_SIZE], small[20];

	(void)state;
	strb_ipc_client_name(a, sizeof(a));
	strb_ipc_client_name(b, sizeof(b));
	assert_int_equal(strlen(a), 52);
	assert_memory_equal(a, "dynoconfigclient", 16);
	assert_string_not_equal(a, b);
	const char *u = a + 16;
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			assert_int_equal(u[i], '-');
		else
			assert_non_null(strchr("0123456789abcdef", u[i]));
	}
	assert_int_equal(u[14], '4');
	assert_non_null(strchr("89ab", u[19]));
	strb_ipc_client_name(small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
}

static void test_abstract_exchange(void **state)
{
	struct strb_ipc_endpoint *client, *daemon, *again = (void *)1;
	char cname[STRB_IPC_CLIENT_NAME_SIZE];
	struct strb_ipc_stats st;

	(void)state;
	open_pair(&client, &daemon, cname);
	assert_string_equal(strb_ipc_name(daemon), daemon_name);
	assert_true(strb_ipc_fd(daemon) >= 0);
	exchange(client, daemon, cname);
	/* The name is taken while the daemon holds it. */
	assert_int_equal(strb_ipc_open(&again, daemon_name), -EADDRINUSE);
	assert_null(again);
	strb_ipc_get_stats(daemon, &st);
	assert_int_equal(st.malformed + st.wrong_user + st.unknown_type, 0);
	strb_ipc_close(client);
	strb_ipc_close(daemon);
	strb_ipc_close(NULL);
}

static void test_bad_names(void **state)
{
	struct strb_ipc_endpoint *ep;
	char longname[120];

	(void)state;
	assert_int_equal(strb_ipc_open(&ep, ""), -EINVAL);
	assert_int_equal(strb_ipc_open(&ep, "a/b"), -EINVAL);
	memset(longname, 'n', sizeof(longname));
	longname[107] = 0; /* 107 + two NULs > sun_path */
	assert_int_equal(strb_ipc_open(&ep, longname), -ENAMETOOLONG);
	longname[106] = 0;
	assert_int_equal(strb_ipc_open(&ep, longname), 0);
	strb_ipc_close(ep);
}

static void test_file_mode(void **state)
{
	struct strb_ipc_endpoint *client, *daemon, *again;
	char cname[STRB_IPC_CLIENT_NAME_SIZE], dir[256], path[512];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat st;
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "%s", tu_mkdtemp());
	setenv("STROBE_IPC_SOCKET_DIR", dir, 1);
	setenv("KINETO_IPC_SOCKET_DIR", "/nonexistent-kineto-dir", 1); /* STROBE_ first */
	open_pair(&client, &daemon, cname);
	snprintf(path, sizeof(path), "%s/%s", dir, daemon_name);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0666);
	exchange(client, daemon, cname);
	/* A live socket file is not stolen. */
	assert_int_equal(strb_ipc_open(&again, daemon_name), -EADDRINUSE);
	strb_ipc_close(daemon);
	assert_int_equal(stat(path, &st), -1); /* unlinked by close */
	assert_int_equal(strb_ipc_send(client, daemon_name, (const uint8_t *)"x", 1), -ECONNREFUSED);

	/* A stale socket file (its owner died) is replaced. */
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	assert_true(strlen(path) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path) + 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
	assert_int_equal(strb_ipc_open(&daemon, daemon_name), 0);
	strb_ipc_close(daemon);
	/* Something that is not a socket is left alone. */
	assert_int_equal(tu_write_file(path, "keep me"), 0);
	assert_int_equal(strb_ipc_open(&daemon, daemon_name), -EEXIST);
	unlink(path);
	strb_ipc_close(client);

	/* KINETO_IPC_SOCKET_DIR alone works too. */
	unsetenv("STROBE_IPC_SOCKET_DIR");
	setenv("KINETO_IPC_SOCKET_DIR", dir, 1);
	assert_int_equal(strb_ipc_open(&daemon, daemon_name), 0);
	assert_int_equal(stat(path, &st), 0);
	strb_ipc_close(daemon);
	unsetenv("KINETO_IPC_SOCKET_DIR");
	tu_rmrf(dir);
}

static void test_untrusted_peer(void **state)
{
	struct strb_ipc_endpoint *daemon;
	struct strb_ipc_request req;
	struct strb_ipc_peer peer;
	struct strb_ipc_stats st;
	uint8_t buf[256];
	ssize_t n;
	pid_t child;
	int status;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(strb_ipc_open(&daemon, daemon_name), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct strb_ipc_endpoint *ep;
		char name[64];
		int rc = 0;

		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(10);
		snprintf(name, sizeof(name), "strobe-test-nobody-%d", (int)getpid());
		if (strb_ipc_open(&ep, name))
			_exit(11);
		strb_ipc_make_request(&req, true);
		n = strb_ipc_encode_request(&req, buf, sizeof(buf));
		for (int i = 0; i < 2 && !rc; i++)
			rc = strb_ipc_send(ep, daemon_name, buf, (size_t)n);
		strb_ipc_close(ep);
		_exit(rc ? 12 : 0);
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	/* The raw receive hands it over, marked untrusted. */
	n = recv_wait(daemon, buf, sizeof(buf), &peer);
	assert_true(n > 0);
	assert_int_equal(peer.uid, 65534);
	assert_int_equal(peer.gid, 65534);
	assert_int_equal(peer.pid, child);
	assert_false(strb_ipc_peer_trusted(&peer));
	/* The helper refuses it. */
	assert_int_equal(strb_ipc_recv_request(daemon, &req, &peer), -EPERM);
	assert_int_equal(peer.uid, 65534);
	strb_ipc_get_stats(daemon, &st);
	assert_int_equal(st.wrong_user, 2);
	assert_int_equal(st.malformed, 0);
	strb_ipc_close(daemon);
}

static void test_trust_rules(void **state)
{
	struct strb_ipc_peer p = {.uid = geteuid()};

	(void)state;
	assert_true(strb_ipc_peer_trusted(&p));
	p.uid = 0;
	assert_true(strb_ipc_peer_trusted(&p));
	p.uid = (uid_t)-1; /* no credentials */
	assert_false(strb_ipc_peer_trusted(&p));
	p.uid = geteuid() + 12345;
	assert_false(strb_ipc_peer_trusted(&p));
	assert_false(strb_ipc_peer_trusted(NULL));
}

static void test_nobody_bound_refused_at_once(void **state)
{
	struct strb_ipc_endpoint *client;
	char cname[STRB_IPC_CLIENT_NAME_SIZE], to[64];
	uint8_t buf[STRB_IPC_HEADER_SIZE];
	double t0;
	int rc;

	(void)state;
	strb_ipc_client_name(cname, sizeof(cname));
	assert_int_equal(strb_ipc_open(&client, cname), 0);
	snprintf(to, sizeof(to), "strobe-test-unbound-%d", (int)getpid());
	strb_ipc_encode_reply(NULL, 0, buf, sizeof(buf));
	t0 = now_ms();
	rc = strb_ipc_send(client, to, buf, sizeof(buf));
	assert_int_equal(rc, -ECONNREFUSED);
	assert_true(now_ms() - t0 < 100);
	strb_ipc_close(client);
}

static void test_nothing_waiting(void **state)
{
	struct strb_ipc_endpoint *daemon;
	struct strb_ipc_request req;
	struct strb_ipc_peer peer;
	static char buf[STRB_IPC_MAX_DGRAM];
	size_t tlen;
	double t0;

	(void)state;
	assert_int_equal(strb_ipc_open(&daemon, daemon_name), 0);
	t0 = now_ms();
	assert_int_equal(strb_ipc_recv(daemon, (uint8_t *)buf, sizeof(buf), &peer), 0);
	assert_int_equal(strb_ipc_recv_request(daemon, &req, &peer), 0);
	assert_int_equal(strb_ipc_recv_reply(daemon, buf, sizeof(buf), &tlen, &peer), 0);
	assert_true(now_ms() - t0 < 100);
	strb_ipc_close(daemon);
}

/* A plain socket bound under another abstract name sends hand-made bytes. */
static int raw_socket(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_DGRAM, 0);

	assert_true(fd >= 0);
	memcpy(sa.sun_path + 1, name, strlen(name));
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, (socklen_t)(strlen(name) + 4)), 0);
	return fd;
}

static void raw_send(int fd, const void *p, size_t len)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	memcpy(sa.sun_path + 1, daemon_name, strlen(daemon_name));
	assert_int_equal(sendto(fd, p, len, 0, (struct sockaddr *)&sa, (socklen_t)(strlen(daemon_name) + 4)),
	                 (ssize_t)len);
}

static void test_malformed_counted(void **state)
{
	struct strb_ipc_endpoint *daemon;
	struct strb_ipc_request req;
	struct strb_ipc_peer peer;
	struct strb_ipc_stats st;
	static uint8_t big[4096];
	uint8_t buf[256], d[64] = {0};
	char rname[64];
	int fd, ufd;

	(void)state;
	assert_int_equal(strb_ipc_open(&daemon, daemon_name), 0);
	snprintf(rname, sizeof(rname), "strobe-test-raw-%d", (int)getpid());
	fd = raw_socket(rname);

	raw_send(fd, "short", 5); /* shorter than a header */
	assert_int_equal(strb_ipc_recv(daemon, buf, sizeof(buf), &peer), -EBADMSG);
	assert_string_equal(peer.name, rname);
	assert_int_equal(peer.pid, getpid());
	strb_ipc_get_stats(daemon, &st);
	assert_int_equal(st.malformed, 1);

	memcpy(d + 8, "abc", 3); /* size 0, unknown type */
	raw_send(fd, d, 40);
	assert_int_equal(strb_ipc_recv_request(daemon, &req, &peer), -EBADMSG);
	strb_ipc_get_stats(daemon, &st);
	assert_int_equal(st.unknown_type, 1);
	assert_int_equal(st.malformed, 1);

	uint64_t size = 16; /* "req" with n = 0: the header is fine, the payload not */
	memcpy(d, &size, 8);
	memcpy(d + 8, "req", 4);
	raw_send(fd, d, 56);
	assert_int_equal(strb_ipc_recv_request(daemon, &req, &peer), -EBADMSG);
	strb_ipc_get_stats(daemon, &st);
	assert_int_equal(st.malformed, 2);

	raw_send(fd, big, sizeof(big)); /* longer than the receive buffer */
	assert_int_equal(strb_ipc_recv(daemon, buf, sizeof(buf), &peer), -EMSGSIZE);
	strb_ipc_get_stats(daemon, &st);
	assert_int_equal(st.malformed, 3);

	memcpy(d + 8, "ctxt", 5); /* well formed, but strobe does not serve ctxt */
	raw_send(fd, d, 56);
	assert_int_equal(strb_ipc_recv_request(daemon, &req, &peer), -ENOMSG);

	/* An unbound sender: credentials but no name to reply to. */
	ufd = socket(AF_UNIX, SOCK_DGRAM, 0);
	raw_send(ufd, d, 56);
	assert_int_equal(strb_ipc_recv(daemon, buf, sizeof(buf), &peer), 56);
	assert_string_equal(peer.name, "");
	assert_int_equal(peer.pid, getpid());

	assert_int_equal(strb_ipc_recv(daemon, buf, sizeof(buf), &peer), 0);
	strb_ipc_get_stats(daemon, &st);
	assert_int_equal(st.malformed, 3);
	assert_int_equal(st.unknown_type, 1);
	assert_int_equal(st.wrong_user, 0);
	close(ufd);
	close(fd);
	strb_ipc_close(daemon);
}

static void test_make_request(void **state)
{
	struct strb_ipc_request r;

	(void)state;
	unsetenv("SLURM_JOB_ID");
	strb_ipc_make_request(&r, true);
	assert_int_equal(r.type, 2);
	assert_int_equal(r.job_id, 0);
	assert_true(r.npids >= 1 && r.npids <= STRB_IPC_MAX_PIDS);
	assert_int_equal(r.pids[0], getpid());
	if (getppid() > 1) {
		assert_true(r.npids >= 2);
		assert_int_equal(r.pids[1], getppid());
	}
	for (int i = 1; i < r.npids; i++)
		assert_true(r.pids[i] > 1);

	setenv("SLURM_JOB_ID", "123456789012", 1);
	strb_ipc_make_request(&r, false);
	assert_int_equal(r.type, 0);
	assert_int_equal(r.job_id, 123456789012LL);
	setenv("SLURM_JOB_ID", "12abc", 1);
	strb_ipc_make_request(&r, true);
	assert_int_equal(r.job_id, 0);
	setenv("SLURM_JOB_ID", "99999999999999999999999", 1);
	strb_ipc_make_request(&r, true);
	assert_int_equal(r.job_id, 0);
	unsetenv("SLURM_JOB_ID");
}

/* ---- RPC ------------------------------------------------------------------ */

enum srv_mode { SRV_VERIFIED, SRV_FAILED, SRV_SILENT, SRV_CLOSE, SRV_BADLEN };

struct srv {
	int lfd, port;
	enum srv_mode mode;
	char *request; /* the JSON received */
	bool framing_ok;
};

static bool srv_read(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 5000) <= 0)
			return false;
		ssize_t r = read(fd, c, n);
		if (r <= 0)
			return false;
		c += r;
		n -= (size_t)r;
	}
	return true;
}

static void srv_reply(int fd, const char *json)
{
	int32_t len = (int32_t)strlen(json);

	if (write(fd, &len, 4) != 4 || write(fd, json, strlen(json)) != (ssize_t)strlen(json))
		return;
}

static void *srv_main(void *arg)
{
	struct srv *s = arg;
	struct pollfd pf = {.fd = s->lfd, .events = POLLIN};
	int32_t len;
	int fd;

	if (poll(&pf, 1, 10000) <= 0)
		return NULL;
	fd = accept(s->lfd, NULL, NULL);
	if (fd < 0)
		return NULL;
	if (srv_read(fd, &len, 4) && len > 0 && len < (1 << 20)) {
		s->request = calloc(1, (size_t)len + 1);
		s->framing_ok = srv_read(fd, s->request, (size_t)len);
		/* Nothing more may follow the framed request. */
		char extra;
		pf.fd = fd;
		if (poll(&pf, 1, 20) > 0 && recv(fd, &extra, 1, MSG_DONTWAIT) > 0)
			s->framing_ok = false;
	}
	switch (s->mode) {
	case SRV_VERIFIED:
		srv_reply(fd, VERIFIED_RPC_REPLY);
		break;
	case SRV_FAILED:
		srv_reply(fd, "{\"status\":\"failed\"}");
		break;
	case SRV_SILENT:
		/* Hold the connection until the client gives up. */
		pf.fd = fd;
		poll(&pf, 1, 5000);
		break;
	case SRV_CLOSE:
		break;
	case SRV_BADLEN:
		len = 0;
		if (write(fd, &len, 4) != 4)
			break;
		break;
	}
	close(fd);
	return NULL;
}

static void srv_start(struct srv *s, pthread_t *t, enum srv_mode mode)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);

	memset(s, 0, sizeof(*s));
	s->mode = mode;
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->lfd >= 0);
	assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(s->lfd, 4), 0);
	assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &sl), 0);
	s->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(t, NULL, srv_main, s), 0);
}

static void srv_stop(struct srv *s, pthread_t t)
{
	pthread_join(t, NULL);
	close(s->lfd);
	free(s->request);
}

static void test_rpc_verified_reply(void **state)
{
	/* A quote, a backslash, newlines, a tab, a control byte and UTF-8. */
	const char *config =
	    "ACTIVITIES_LOG_FILE=/tmp/a \"quoted\" \\dir/t.json\nACTIVITIES_DURATION_MSECS=500\n"
	    "X=\t\x01 caf\xc3\xa9";
	const int pids[] = {0, 4242};
	struct strb_rpc_result res;
	char err[256];
	struct srv s;
	pthread_t t;

	(void)state;
	srv_start(&s, &t, SRV_VERIFIED);
	/* host NULL: "localhost", whose ::1 (if any) refuses before 127.0.0.1. */
	assert_int_equal(strb_rpc_trigger(NULL, s.port, config, pids, 2, 77, 3, 2000, &res, err, sizeof(err)),
	                 0);
	srv_stop(&s, t);

	assert_int_equal(res.nmatched, 1);
	assert_int_equal(res.matched[0], 16381);
	assert_int_equal(res.ntriggered, 1);
	assert_int_equal(res.triggered[0], 16381);
	assert_int_equal(res.busy, 0);
	assert_false(res.truncated);
}

/* Checks the JSON the server received. */
static void test_rpc_request_json(void **state)
{
	const char *config =
	    "ACTIVITIES_LOG_FILE=/tmp/a \"quoted\" \\dir/t.json\nACTIVITIES_DURATION_MSECS=500\n"
	    "X=\t\x01 caf\xc3\xa9";
	const int pids[] = {0, 4242};
	struct strb_rpc_result res;
	char err[256];
	struct srv s;
	pthread_t t;
	yajl_val root, a;

	(void)state;
	srv_start(&s, &t, SRV_VERIFIED);
	assert_int_equal(
	    strb_rpc_trigger("127.0.0.1", s.port, config, pids, 2, 77, 3, 2000, &res, err, sizeof(err)), 0);
	pthread_join(t, NULL);
	close(s.lfd);
	assert_non_null(s.request);
	assert_true(s.framing_ok);
	assert_null(strchr(s.request, '\n')); /* compact */
	root = tu_parse_json(s.request);
	assert_non_null(root);
	assert_string_equal(tu_get_str(root, "fn"), "setKinetOnDemandRequest");
	assert_string_equal(tu_get_str(root, "config"), config);
	assert_int_equal((int)tu_get_num(root, "job_id"), 77);
	assert_int_equal((int)tu_get_num(root, "process_limit"), 3);
	a = tu_get(root, "pids");
	assert_true(YAJL_IS_ARRAY(a));
	assert_int_equal(a->u.array.len, 2);
	assert_int_equal(YAJL_GET_INTEGER(a->u.array.values[0]), 0);
	assert_int_equal(YAJL_GET_INTEGER(a->u.array.values[1]), 4242);
	yajl_tree_free(root);
	free(s.request);
}

static void test_rpc_failed_status(void **state)
{
	struct strb_rpc_result res;
	char err[256];
	struct srv s;
	pthread_t t;
	int pid = 0;

	(void)state;
	srv_start(&s, &t, SRV_FAILED);
	assert_int_equal(
	    strb_rpc_trigger("127.0.0.1", s.port, "A=1", &pid, 1, 0, 3, 2000, &res, err, sizeof(err)),
	    -EREMOTEIO);
	assert_non_null(strstr(err, "failed"));
	srv_stop(&s, t);

	srv_start(&s, &t, SRV_CLOSE);
	assert_int_equal(
	    strb_rpc_trigger("127.0.0.1", s.port, "A=1", &pid, 1, 0, 3, 2000, &res, err, sizeof(err)),
	    -ECONNRESET);
	assert_true(err[0] != 0);
	srv_stop(&s, t);

	srv_start(&s, &t, SRV_BADLEN);
	assert_int_equal(
	    strb_rpc_trigger("127.0.0.1", s.port, "A=1", &pid, 1, 0, 3, 2000, &res, err, sizeof(err)),
	    -EBADMSG);
	srv_stop(&s, t);
}

static void test_rpc_nobody_listening(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	struct strb_rpc_result res;
	char err[256];
	int fd, pid = 0;

	(void)state;
	/* A bound port that does not listen refuses, and stays ours. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	assert_int_equal(strb_rpc_trigger("127.0.0.1", ntohs(sa.sin_port), "A=1", &pid, 1, 0, 3, 2000, &res,
	                                  err, sizeof(err)),
	                 -ECONNREFUSED);
	assert_true(err[0] != 0);
	close(fd);
	/* Not UTF-8: refused before connecting. */
	assert_int_equal(
	    strb_rpc_trigger("127.0.0.1", 1, "A=\xff", &pid, 1, 0, 3, 2000, &res, err, sizeof(err)), -EINVAL);
}

static void test_rpc_silent_server_times_out(void **state)
{
	struct strb_rpc_result res;
	char err[256];
	struct srv s;
	pthread_t t;
	double t0, dt;
	int pid = 0;

	(void)state;
	srv_start(&s, &t, SRV_SILENT);
	t0 = now_ms();
	assert_int_equal(
	    strb_rpc_trigger("127.0.0.1", s.port, "A=1", &pid, 1, 0, 3, 300, &res, err, sizeof(err)),
	    -ETIMEDOUT);
	dt = now_ms() - t0;
	assert_true(dt >= 250);
	assert_true(dt < 1500);
	srv_stop(&s, t);
}

int main(void)
{
	snprintf(daemon_name, sizeof(daemon_name), "strobe-test-dynolog-%d", (int)getpid());
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_client_name),
	    cmocka_unit_test(test_abstract_exchange),
	    cmocka_unit_test(test_bad_names),
	    cmocka_unit_test(test_file_mode),
	    cmocka_unit_test(test_untrusted_peer),
	    cmocka_unit_test(test_trust_rules),
	    cmocka_unit_test(test_nobody_bound_refused_at_once),
	    cmocka_unit_test(test_nothing_waiting),
	    cmocka_unit_test(test_malformed_counted),
	    cmocka_unit_test(test_make_request),
	    cmocka_unit_test(test_rpc_verified_reply),
	    cmocka_unit_test(test_rpc_request_json),
	    cmocka_unit_test(test_rpc_failed_status),
	    cmocka_unit_test(test_rpc_nobody_listening),
	    cmocka_unit_test(test_rpc_silent_server_times_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

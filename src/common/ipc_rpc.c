/* The client side of dynolog's RPC: one TCP connection, one framed JSON
 * request (setKinetOnDemandRequest), one framed JSON reply. Every step is
 * non-blocking under a deadline, so a silent daemon cannot hold the caller. */
#define LOG_TAG "ipc"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <yajl/yajl_tree.h>

#include "common/ipc.h"
#include "common/log.h"

#define DEFAULT_TIMEOUT_MS 5000

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Length of the UTF-8 sequence at s (at most n bytes), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* A JSON string literal; false when s is not valid UTF-8. */
static bool sb_json_string(struct sbuf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, run;

	sb_add(b, "\"", 1);
	while (i < n) {
		unsigned char c = u[i];

		if (c >= 0x80) {
			run = utf8_len(u + i, n - i);
			if (!run)
				return false;
			sb_add(b, s + i, run);
			i += run;
			continue;
		}
		switch (c) {
		case '"':
			sb_add(b, "\\\"", 2);
			break;
		case '\\':
			sb_add(b, "\\\\", 2);
			break;
		case '\n':
			sb_add(b, "\\n", 2);
			break;
		case '\r':
			sb_add(b, "\\r", 2);
			break;
		case '\t':
			sb_add(b, "\\t", 2);
			break;
		case '\b':
			sb_add(b, "\\b", 2);
			break;
		case '\f':
			sb_add(b, "\\f", 2);
			break;
		default:
			if (c < 0x20 || c == 0x7f)
				sb_printf(b, "\\u%04x", c);
			else
				sb_add(b, s + i, 1);
		}
		i++;
	}
	sb_add(b, "\"", 1);
	return true;
}

static int fail(char *err, size_t errlen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	int64_t left;
	int rc;

	for (;;) {
		left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (rc > 0)
			return 0;
		if (rc < 0 && errno != EINTR)
			return -errno;
	}
}

static int connect_one(const struct addrinfo *ai, int64_t deadline)
{
	socklen_t sl = sizeof(int);
	int fd, rc, soerr = 0;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS && errno != EINTR) {
		rc = -errno;
		goto fail;
	}
	rc = wait_fd(fd, POLLOUT, deadline);
	if (rc < 0)
		goto fail;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0) {
		rc = -errno;
		goto fail;
	}
	if (soerr) {
		rc = -soerr;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return rc;
}

static int connect_any(const char *host, int port, int64_t deadline, char *err, size_t errlen)
{
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res, *ai;
	char service[16];
	int fd = -ECONNREFUSED, rc, best = 0;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc)
		return fail(err, errlen, -EHOSTUNREACH, "cannot resolve %s: %s", host, gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = connect_one(ai, deadline);
		if (fd >= 0)
			break;
		/* Report the most telling failure: a refusal over "no IPv6 here". */
		if (!best || fd == -ECONNREFUSED || fd == -ETIMEDOUT)
			best = fd;
		if (fd == -ETIMEDOUT)
			break;
	}
	freeaddrinfo(res);
	if (fd >= 0)
		return fd;
	if (!best)
		best = -ECONNREFUSED;
	return fail(err, errlen, best, "cannot connect to %s:%d: %s", host, port, strerror(-best));
}

static int write_all(int fd, const char *p, size_t n, int64_t deadline)
{
	ssize_t w;
	int rc;

	while (n) {
		w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		rc = wait_fd(fd, POLLOUT, deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* 0, -ECONNRESET on a clean EOF, -ETIMEDOUT or another -errno. */
static int read_all(int fd, char *p, size_t n, int64_t deadline)
{
	ssize_t r;
	int rc;

	while (n) {
		r = recv(fd, p, n, MSG_DONTWAIT);
		if (r > 0) {
			p += r;
			n -= (size_t)r;
			continue;
		}
		if (r == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		rc = wait_fd(fd, POLLIN, deadline);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int int_list(yajl_val root, const char *key, int *out, int *n, bool *truncated, char *err,
                    size_t errlen)
{
	const char *path[] = {key, NULL};
	yajl_val v = yajl_tree_get(root, path, yajl_t_array);

	*n = 0;
	if (!v)
		return fail(err, errlen, -EBADMSG, "reply has no %s array", key);
	for (size_t i = 0; i < v->u.array.len; i++) {
		yajl_val e = v->u.array.values[i];

		if (!YAJL_IS_INTEGER(e))
			return fail(err, errlen, -EBADMSG, "reply's %s holds a non-integer", key);
		if (*n == 64) {
			*truncated = true;
			continue;
		}
		out[(*n)++] = (int)YAJL_GET_INTEGER(e);
	}
	return 0;
}

static int parse_reply(char *text, struct strb_rpc_result *out, char *err, size_t errlen)
{
	const char *status_path[] = {"status", NULL}, *busy_path[] = {"activityProfilersBusy", NULL};
	char perr[128];
	yajl_val root, v;
	int rc;

	root = yajl_tree_parse(text, perr, sizeof(perr));
	if (!root)
		return fail(err, errlen, -EBADMSG, "reply is not JSON: %s", perr);
	if (!YAJL_IS_OBJECT(root)) {
		rc = fail(err, errlen, -EBADMSG, "reply is not a JSON object");
		goto out;
	}
	v = yajl_tree_get(root, status_path, yajl_t_any);
	if (v) {
		if (YAJL_IS_STRING(v))
			rc = fail(err, errlen, -EREMOTEIO, "daemon: %s", YAJL_GET_STRING(v));
		else
			rc = fail(err, errlen, -EBADMSG, "reply has a status that is not a string");
		goto out;
	}
	rc = int_list(root, "processesMatched", out->matched, &out->nmatched, &out->truncated, err, errlen);
	if (!rc)
		rc = int_list(root, "activityProfilersTriggered", out->triggered, &out->ntriggered,
		              &out->truncated, err, errlen);
	if (rc)
		goto out;
	v = yajl_tree_get(root, busy_path, yajl_t_any);
	if (!YAJL_IS_INTEGER(v)) {
		rc = fail(err, errlen, -EBADMSG, "reply has no integer activityProfilersBusy");
		goto out;
	}
	out->busy = (int)YAJL_GET_INTEGER(v);
out:
	yajl_tree_free(root);
	return rc;
}

static int build_request(struct sbuf *b, const char *config, const int *pids, int npids, int64_t job_id,
                         int process_limit)
{
	uint32_t zero = 0;
	int32_t len;

	sb_add(b, (const char *)&zero, 4); /* the length, filled in below */
	sb_add(b, "{\"fn\":\"setKinetOnDemandRequest\",\"config\":", 41);
	if (!sb_json_string(b, config))
		return -EINVAL;
	sb_printf(b, ",\"job_id\":%lld,\"pids\":[", (long long)job_id);
	for (int i = 0; i < npids; i++)
		sb_printf(b, "%s%d", i ? "," : "", pids[i]);
	sb_printf(b, "],\"process_limit\":%d}", process_limit);
	if (b->oom)
		return -ENOMEM;
	if (b->len - 4 > INT32_MAX)
		return -E2BIG;
	len = (int32_t)(b->len - 4);
	memcpy(b->p, &len, 4);
	return 0;
}

int strb_rpc_trigger(const char *host, int port, const char *config, const int *pids, int npids,
                     int64_t job_id, int process_limit, int timeout_ms, struct strb_rpc_result *out,
                     char *err, size_t errlen)
{
	struct sbuf req = {0};
	char *reply = NULL;
	int64_t deadline;
	int32_t rlen;
	int fd = -1, rc;

	if (err && errlen)
		err[0] = 0;
	if (!config || !out || npids < 0 || (npids && !pids) || port <= 0 || port > 65535)
		return fail(err, errlen, -EINVAL, "invalid arguments");
	memset(out, 0, sizeof(*out));
	if (!host || !*host)
		host = "localhost";
	if (timeout_ms <= 0)
		timeout_ms = DEFAULT_TIMEOUT_MS;
	rc = build_request(&req, config, pids, npids, job_id, process_limit);
	if (rc < 0) {
		rc = fail(err, errlen, rc, "%s",
		          rc == -EINVAL ? "config is not valid UTF-8" : "out of memory");
		goto out;
	}
	rc = fd = connect_any(host, port, now_ms() + timeout_ms, err, errlen);
	if (fd < 0)
		goto out;
	rc = write_all(fd, req.p, req.len, now_ms() + timeout_ms);
	if (rc < 0) {
		rc = fail(err, errlen, rc, "cannot send the request: %s", strerror(-rc));
		goto out;
	}
	deadline = now_ms() + timeout_ms;
	rc = read_all(fd, (char *)&rlen, sizeof(rlen), deadline);
	if (rc < 0) {
		if (rc == -ECONNRESET)
			rc = fail(err, errlen, rc, "daemon closed the connection without replying");
		else
			rc = fail(err, errlen, rc, "no reply: %s", strerror(-rc));
		goto out;
	}
	if (rlen <= 0 || rlen > STRB_RPC_MAX_REPLY) {
		rc = fail(err, errlen, -EBADMSG, "reply length %d out of range", (int)rlen);
		goto out;
	}
	reply = malloc((size_t)rlen + 1);
	if (!reply) {
		rc = fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	rc = read_all(fd, reply, (size_t)rlen, deadline);
	if (rc < 0) {
		rc = fail(err, errlen, rc, "reply cut short: %s", strerror(-rc));
		goto out;
	}
	reply[rlen] = 0;
	rc = parse_reply(reply, out, err, errlen);
out:
	if (rc < 0)
		LOGV("setKinetOnDemandRequest to %s:%d failed: %s", host ? host : "localhost", port,
		     err && errlen ? err : strerror(-rc));
	if (fd >= 0)
		close(fd);
	free(req.p);
	free(reply);
	return rc < 0 ? rc : 0;
}

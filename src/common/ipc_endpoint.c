/* ipcfabric endpoints: AF_UNIX datagram sockets named as dynolog names them,
 * with the sender's credentials on every datagram. Nothing here blocks. */
#define LOG_TAG "ipc"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "common/fdguard.h"
#include "common/ipc.h"
#include "common/log.h"

#define SUN_PATH_SIZE sizeof(((struct sockaddr_un *)0)->sun_path)

struct strb_ipc_endpoint {
	int fd;
	struct strb_fd_id id; /* what fd named when it was opened */
	pid_t owner;          /* the process that bound a file, and so unlinks it */
	char name[SUN_PATH_SIZE];
	char dir[SUN_PATH_SIZE]; /* "" in the abstract namespace */
	struct strb_ipc_stats stats;
};

static const char *socket_dir(void)
{
	const char *d = getenv("STROBE_IPC_SOCKET_DIR");

	if (!d || !*d)
		d = getenv("KINETO_IPC_SOCKET_DIR");
	return d && *d ? d : NULL;
}

/* "\0name\0" with addrlen strlen(name) + 4 (the trailing NUL is part of an
 * abstract name, and dynolog replies to exactly that); or "<dir>/<name>". */
static int make_addr(const char *dir, const char *name, struct sockaddr_un *sa, socklen_t *salen)
{
	size_t n = name ? strlen(name) : 0;
	int w;

	if (n == 0 || strchr(name, '/'))
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (!dir || !*dir) {
		if (n + 2 > SUN_PATH_SIZE)
			return -ENAMETOOLONG;
		memcpy(sa->sun_path + 1, name, n);
		*salen = (socklen_t)(sizeof(sa_family_t) + n + 2);
		return 0;
	}
	w = snprintf(sa->sun_path, SUN_PATH_SIZE, "%s/%s", dir, name);
	if (w < 0 || (size_t)w >= SUN_PATH_SIZE)
		return -ENAMETOOLONG;
	*salen = (socklen_t)(sizeof(sa_family_t) + (size_t)w + 1);
	return 0;
}

/* A file that a live socket is bound to answers connect(); a stale one
 * refuses. Only stale sockets are removed, so a second daemon cannot steal a
 * running one's name. */
static int clear_stale(const struct sockaddr_un *sa, socklen_t salen)
{
	struct stat st;
	int fd, rc;

	if (lstat(sa->sun_path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	rc = connect(fd, (const struct sockaddr *)sa, salen);
	close(fd);
	if (rc == 0)
		return -EADDRINUSE;
	if (unlink(sa->sun_path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int strb_ipc_open(struct strb_ipc_endpoint **out, const char *name)
{
	struct strb_ipc_endpoint *ep;
	struct sockaddr_un sa;
	socklen_t salen;
	const char *dir = socket_dir();
	int one = 1, rc;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (dir && strlen(dir) >= SUN_PATH_SIZE)
		return -ENAMETOOLONG;
	rc = make_addr(dir, name, &sa, &salen);
	if (rc < 0)
		return rc;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;
	ep->fd = -1;
	ep->id.fd = -1;
	snprintf(ep->name, sizeof(ep->name), "%s", name);
	if (dir)
		snprintf(ep->dir, sizeof(ep->dir), "%s", dir);
	if (dir) {
		rc = clear_stale(&sa, salen);
		if (rc < 0)
			goto fail;
	}
	ep->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ep->fd < 0) {
		rc = -errno;
		goto fail;
	}
	/* Bound before anything is sent: dynolog aborts on an unbound sender. */
	if (bind(ep->fd, (const struct sockaddr *)&sa, salen) < 0) {
		rc = -errno;
		goto fail;
	}
	if (dir) {
		ep->owner = getpid();
		/* 0666 as dynolog: trust comes from each datagram's credentials. */
		if (chmod(sa.sun_path, 0666) < 0) {
			rc = -errno;
			goto fail;
		}
	}
	if (setsockopt(ep->fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
		rc = -errno;
		goto fail;
	}
	/* Out of the way of a program that closes and reuses numbers. */
	ep->fd = strb_fd_place_high(ep->fd, true);
	strb_fd_id_set(&ep->id, ep->fd);
	*out = ep;
	return 0;
fail:
	LOGV("cannot open endpoint %s%s%s: %s", dir ? dir : "@", dir ? "/" : "", name, strerror(-rc));
	strb_ipc_close(ep);
	return rc;
}

void strb_ipc_close(struct strb_ipc_endpoint *ep)
{
	struct sockaddr_un sa;
	socklen_t salen;

	if (!ep)
		return;
	if (ep->id.fd >= 0)
		strb_fd_id_close(&ep->id); /* not a number the program reused */
	else if (ep->fd >= 0)
		close(ep->fd); /* failed before it was recorded */
	if (ep->owner && ep->owner == getpid() && make_addr(ep->dir, ep->name, &sa, &salen) == 0)
		unlink(sa.sun_path);
	free(ep);
}

int strb_ipc_fd(const struct strb_ipc_endpoint *ep)
{
	return ep ? ep->fd : -1;
}

bool strb_ipc_usable(const struct strb_ipc_endpoint *ep)
{
	return ep && strb_fd_id_ok(&ep->id);
}

const char *strb_ipc_name(const struct strb_ipc_endpoint *ep)
{
	return ep ? ep->name : NULL;
}

static void count(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

void strb_ipc_get_stats(const struct strb_ipc_endpoint *ep, struct strb_ipc_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!ep)
		return;
	out->malformed = __atomic_load_n(&ep->stats.malformed, __ATOMIC_RELAXED);
	out->wrong_user = __atomic_load_n(&ep->stats.wrong_user, __ATOMIC_RELAXED);
	out->unknown_type = __atomic_load_n(&ep->stats.unknown_type, __ATOMIC_RELAXED);
}

int strb_ipc_send(struct strb_ipc_endpoint *ep, const char *to, const uint8_t *dgram, size_t len)
{
	struct sockaddr_un sa;
	socklen_t salen;
	struct iovec iov = {.iov_base = (void *)dgram, .iov_len = len};
	struct msghdr msg = {0};
	ssize_t n;
	int rc;

	if (!ep || !dgram)
		return -EINVAL;
	if (!strb_ipc_usable(ep))
		return -EBADF;
	rc = make_addr(ep->dir, to, &sa, &salen);
	if (rc < 0)
		return rc;
	msg.msg_name = &sa;
	msg.msg_namelen = salen;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	do
		n = sendmsg(ep->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ENOENT ? -ECONNREFUSED : -errno; /* no file: nobody bound */
	if ((size_t)n != len)
		return -EMSGSIZE;
	return 0;
}

/* Abstract: skip the leading NUL, stop at the next; file: the basename. */
static void fill_name(const struct sockaddr_un *sa, socklen_t salen, struct strb_ipc_peer *peer)
{
	size_t plen, off = 0, n;
	const char *p = sa->sun_path, *slash;

	peer->name[0] = 0;
	if (salen <= sizeof(sa_family_t))
		return; /* unbound sender: nowhere to reply */
	plen = (size_t)salen - sizeof(sa_family_t);
	if (plen > SUN_PATH_SIZE)
		plen = SUN_PATH_SIZE;
	if (p[0] == 0) {
		off = 1;
	} else {
		n = strnlen(p, plen);
		slash = memrchr(p, '/', n);
		off = slash ? (size_t)(slash - p) + 1 : 0;
	}
	n = off < plen ? strnlen(p + off, plen - off) : 0;
	if (n >= sizeof(peer->name))
		n = sizeof(peer->name) - 1;
	memcpy(peer->name, p + off, n);
	peer->name[n] = 0;
}

ssize_t strb_ipc_recv(struct strb_ipc_endpoint *ep, uint8_t *buf, size_t len, struct strb_ipc_peer *peer)
{
	struct sockaddr_un sa;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(struct ucred)) + 64];
	} ctl;
	struct msghdr msg = {0};
	struct strb_ipc_peer local;
	struct cmsghdr *c;
	const char *why;
	ssize_t n;
	int kind;

	if (!ep || (!buf && len))
		return -EINVAL;
	if (!peer)
		peer = &local;
	memset(peer, 0, sizeof(*peer));
	peer->uid = (uid_t)-1;
	peer->gid = (gid_t)-1;
	memset(&sa, 0, sizeof(sa));
	msg.msg_name = &sa;
	msg.msg_namelen = sizeof(sa);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = ctl.buf;
	msg.msg_controllen = sizeof(ctl.buf);
	if (!strb_ipc_usable(ep))
		return -EBADF;
	do
		n = recvmsg(ep->fd, &msg, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred cr;

			memcpy(&cr, CMSG_DATA(c), sizeof(cr));
			peer->pid = cr.pid;
			peer->uid = cr.uid;
			peer->gid = cr.gid;
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			/* Nobody should pass descriptors here; do not leak them. */
			size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < nfd; i++) {
				int fd;
				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				close(fd);
			}
		}
	}
	fill_name(&sa, msg.msg_namelen, peer);
	if (!strb_ipc_peer_trusted(peer))
		count(&ep->stats.wrong_user);
	if ((size_t)n > len || (msg.msg_flags & MSG_TRUNC)) {
		count(&ep->stats.malformed);
		LOGV("datagram of %zd bytes from pid %d truncated to %zu", n, (int)peer->pid, len);
		return -EMSGSIZE;
	}
	kind = strb_ipc_decode(buf, (size_t)n, NULL, NULL, &why);
	if (kind < 0) {
		count(why == strb_ipc_why_unknown_type ? &ep->stats.unknown_type : &ep->stats.malformed);
		LOGV("dropped a datagram from pid %d: %s", (int)peer->pid, why);
		return kind;
	}
	return n;
}

bool strb_ipc_peer_trusted(const struct strb_ipc_peer *peer)
{
	if (!peer || peer->uid == (uid_t)-1)
		return false;
	return peer->uid == geteuid() || peer->uid == 0;
}

/* Receives one datagram of the expected kind from a trusted peer; the payload
 * stays in buf. Returns 1, 0 (nothing waiting) or a negative errno. */
static int recv_kind(struct strb_ipc_endpoint *ep, uint8_t *buf, size_t cap, struct strb_ipc_peer *peer,
                     const uint8_t **payload, size_t *payload_len, int *kind)
{
	ssize_t n = strb_ipc_recv(ep, buf, cap, peer);

	if (n <= 0)
		return (int)n;
	if (!strb_ipc_peer_trusted(peer))
		return -EPERM; /* counted by strb_ipc_recv */
	*kind = strb_ipc_decode(buf, (size_t)n, payload, payload_len, NULL);
	return *kind < 0 ? *kind : 1;
}

int strb_ipc_recv_request(struct strb_ipc_endpoint *ep, struct strb_ipc_request *r,
                          struct strb_ipc_peer *peer)
{
	uint8_t buf[STRB_IPC_HEADER_SIZE + 16 + 4 * STRB_IPC_MAX_PIDS];
	struct strb_ipc_peer local;
	const uint8_t *payload;
	size_t plen;
	const char *why;
	int kind = 0, rc;

	if (!peer)
		peer = &local;
	rc = recv_kind(ep, buf, sizeof(buf), peer, &payload, &plen, &kind);
	if (rc <= 0)
		return rc;
	if (kind != STRB_IPC_REQ)
		return -ENOMSG;
	rc = strb_ipc_decode_request(payload, plen, r, &why);
	if (rc < 0) {
		count(&ep->stats.malformed);
		LOGV("dropped a request from pid %d: %s", (int)peer->pid, why);
	}
	return rc < 0 ? rc : 1;
}

int strb_ipc_recv_reply(struct strb_ipc_endpoint *ep, char *buf, size_t cap, size_t *config_len,
                        struct strb_ipc_peer *peer)
{
	struct strb_ipc_peer local;
	const uint8_t *payload;
	const char *text, *why;
	size_t plen, tlen;
	int kind = 0, rc;

	if (!buf || cap < STRB_IPC_HEADER_SIZE + 1)
		return -EINVAL;
	if (!peer)
		peer = &local;
	rc = recv_kind(ep, (uint8_t *)buf, cap, peer, &payload, &plen, &kind);
	if (rc <= 0)
		return rc;
	rc = kind == STRB_IPC_REQ ? strb_ipc_decode_reply(payload, plen, &text, &tlen, &why) : -EBADMSG;
	if (rc < 0) {
		count(&ep->stats.malformed);
		LOGV("dropped a reply from pid %d: %s", (int)peer->pid,
		     kind == STRB_IPC_REQ ? why : "not a reply");
		return rc;
	}
	memmove(buf, text, tlen);
	buf[tlen] = 0;
	if (config_len)
		*config_len = tlen;
	return 1;
}

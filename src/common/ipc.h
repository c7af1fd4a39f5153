/* dynolog's IPC fabric, byte for byte (docs/on-demand.md): AF_UNIX datagram
 * endpoints with abstract names (or files under KINETO_IPC_SOCKET_DIR), a
 * 40-byte header and "req"/"ctxt" payloads; plus the client side of
 * dynolog's TCP RPC (length-prefixed JSON). Every datagram is
 * length-checked before it is read; malformed ones are counted. */
#ifndef STROBE_COMMON_IPC_H
#define STROBE_COMMON_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STRB_IPC_HEADER_SIZE 40
#define STRB_IPC_DAEMON_NAME "dynolog"
#define STRB_IPC_MAX_PIDS    11
#define STRB_IPC_MAX_CONFIG  (64 * 1024) /* longest config text accepted */
/* The largest datagram strobe sends or accepts: a reply with the longest
 * config. A receive buffer of this size never truncates a valid datagram. */
#define STRB_IPC_MAX_DGRAM (STRB_IPC_HEADER_SIZE + STRB_IPC_MAX_CONFIG)
/* "dynoconfigclient" + a 36-character UUID + NUL. */
#define STRB_IPC_CLIENT_NAME_SIZE 53

/* "req" payload, decoded. */
struct strb_ipc_request {
	int32_t type; /* 1 EVENTS | 2 ACTIVITIES; 0 keep-alive */
	int64_t job_id;
	int32_t pids[STRB_IPC_MAX_PIDS];
	int npids; /* pids[0] is the polling process, then its ancestors */
};

/* Who sent a datagram (SCM_CREDENTIALS: the kernel fills in the sender's
 * pid and real uid/gid, translated to our namespaces; a sender cannot forge
 * them without privilege). Without credentials uid and gid are -1 and pid 0.
 * name is "" for an unbound sender, which cannot be answered. */
struct strb_ipc_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char name[108]; /* the sender's endpoint name (abstract or file) */
};

/* Counters of what was refused. An endpoint counts every datagram it
 * receives once: malformed (including truncated, -EMSGSIZE, and payloads the
 * strb_ipc_recv_request / strb_ipc_recv_reply helpers reject) or unknown_type
 * (both returned as -EBADMSG), and wrong_user for a datagram whose sender is
 * not trusted (strb_ipc_peer_trusted) or sent no credentials. */
struct strb_ipc_stats {
	uint64_t malformed;    /* too short, size mismatch, bad type, bad payload */
	uint64_t wrong_user;   /* peer not the same user and not root */
	uint64_t unknown_type; /* valid header, type neither req nor ctxt */
};

/* ---- encoding and decoding (pure functions; the fuzz target covers them) */

/* Encodes a whole datagram into buf; returns its length or -ENOSPC/-EINVAL. */
ssize_t strb_ipc_encode_request(const struct strb_ipc_request *r, uint8_t *buf, size_t len);
ssize_t strb_ipc_encode_reply(const char *config, size_t config_len, uint8_t *buf, size_t len);

enum strb_ipc_kind {
	STRB_IPC_REQ = 1,
	STRB_IPC_CTXT = 2,
};

/* Checks a received datagram: header present, size field equal to the
 * payload length, known type. Returns the kind, or -EBADMSG with a reason
 * in why (static string). On success *payload / *payload_len point into dgram. */
int strb_ipc_decode(const uint8_t *dgram, size_t len, const uint8_t **payload, size_t *payload_len,
                    const char **why);
/* Decodes a "req" payload (n >= 1 and n <= STRB_IPC_MAX_PIDS, size 16 + 4n). */
int strb_ipc_decode_request(const uint8_t *payload, size_t len, struct strb_ipc_request *out,
                            const char **why);
/* Decodes a reply payload (a "req" datagram from the daemon): the config
 * text, not NUL-terminated, at most STRB_IPC_MAX_CONFIG bytes and without a
 * NUL byte inside. len 0 is valid: nothing is pending. Returns 0 (with
 * *text = payload, *text_len = len) or -EBADMSG with a reason in why. */
int strb_ipc_decode_reply(const uint8_t *payload, size_t len, const char **text, size_t *text_len,
                          const char **why);

/* The reason strb_ipc_decode gives for a well-formed header whose type is
 * neither "req" nor "ctxt" (compare the pointer): the endpoint counts those
 * as unknown_type rather than malformed. */
extern const char strb_ipc_why_unknown_type[];

/* ---- endpoints ---------------------------------------------------------- */

struct strb_ipc_endpoint;

/* Binds a datagram socket to `name` (abstract, with the trailing NUL; or
 * $KINETO_IPC_SOCKET_DIR/<name> when that is set, STROBE_IPC_SOCKET_DIR
 * first), non-blocking, close-on-exec, with SO_PASSCRED so every datagram
 * carries its sender's credentials. Returns 0 or a negative errno.
 *
 * The directory is read once, here: the endpoint sends to names in the same
 * namespace (abstract, or files in that directory). In file mode a stale
 * socket file (nobody bound) is unlinked first, a live one gives
 * -EADDRINUSE (as a taken abstract name does) and anything that is not a
 * socket gives -EEXIST. The file is made 0666, as dynolog does, so that a
 * daemon of another user (root) can answer: that is safe because every
 * datagram's credentials are checked (strb_ipc_peer_trusted), not the file's
 * permissions. strb_ipc_close unlinks it (in the process that opened it).
 * Names are 1..106 bytes without '/' or NUL. */
int strb_ipc_open(struct strb_ipc_endpoint **out, const char *name);
/* A fresh client name: "dynoconfigclient" + a random UUIDv4 (getrandom,
 * else /dev/urandom, else time and pid). Truncated to fit len; a buffer of
 * STRB_IPC_CLIENT_NAME_SIZE holds it whole. */
void strb_ipc_client_name(char *buf, size_t len);
/* Closes and frees; accepts NULL. */
void strb_ipc_close(struct strb_ipc_endpoint *ep);
int strb_ipc_fd(const struct strb_ipc_endpoint *ep);
/* False once the program closed the endpoint's fd (a daemon closing every
 * fd, closefrom), whether or not it reused the number: send and receive
 * then give -EBADF and touch nothing, close leaves the number alone. The
 * fd is placed high (common/fdguard.h) to keep it out of the way. */
bool strb_ipc_usable(const struct strb_ipc_endpoint *ep);
/* The name the endpoint is bound to. */
const char *strb_ipc_name(const struct strb_ipc_endpoint *ep);
/* A snapshot of the endpoint's counters; may be called from any thread. */
void strb_ipc_get_stats(const struct strb_ipc_endpoint *ep, struct strb_ipc_stats *out);

/* Sends one datagram to the endpoint named `to`, without blocking
 * (MSG_DONTWAIT; no retries). Returns 0 or a negative errno (-ECONNREFUSED
 * when nobody is bound there, -EAGAIN when its queue is full: the caller
 * retries later). */
int strb_ipc_send(struct strb_ipc_endpoint *ep, const char *to, const uint8_t *dgram, size_t len);
/* Receives one datagram if one is waiting (never blocks): returns its
 * length, 0 when none is waiting, or a negative errno. Fills *peer from the
 * credentials and the sender address. Datagrams longer than len are
 * truncated and reported as -EMSGSIZE (and counted malformed).
 *
 * The header is checked (strb_ipc_decode): a datagram that fails is consumed,
 * counted (malformed or unknown_type) and reported as -EBADMSG, so a caller
 * loops until 0. A datagram from an untrusted peer (or without credentials:
 * peer->uid is then (uid_t)-1) is counted in wrong_user but still returned:
 * the caller must check strb_ipc_peer_trusted (the helpers below do). */
ssize_t strb_ipc_recv(struct strb_ipc_endpoint *ep, uint8_t *buf, size_t len, struct strb_ipc_peer *peer);

/* The daemon's side: receives one datagram and decodes it as a "req" poll.
 * Returns 1 with *r and *peer filled, 0 when nothing is waiting, -EBADMSG
 * (malformed, counted), -EPERM (untrusted peer, counted, *peer filled),
 * -ENOMSG (a well-formed "ctxt", which strobe does not serve) or another
 * negative errno. Never blocks. */
int strb_ipc_recv_request(struct strb_ipc_endpoint *ep, struct strb_ipc_request *r,
                          struct strb_ipc_peer *peer);
/* The traced process's side: receives one reply into buf (cap bytes; use
 * STRB_IPC_MAX_DGRAM) and leaves there the config text, NUL-terminated (""
 * when nothing is pending), its length in *config_len. Returns 1, 0 when
 * nothing is waiting, -EBADMSG (malformed or a "ctxt", counted), -EPERM
 * (untrusted sender: the text must not be used; counted), -EMSGSIZE or
 * another negative errno. Never blocks. */
int strb_ipc_recv_reply(struct strb_ipc_endpoint *ep, char *buf, size_t cap, size_t *config_len,
                        struct strb_ipc_peer *peer);

/* True when the peer may configure us: same uid as ours (geteuid) or root. */
bool strb_ipc_peer_trusted(const struct strb_ipc_peer *peer);

/* ---- the traced process's side ----------------------------------------- */

/* This process's "req": its pid and up to 10 ancestors (from /proc, stopping
 * before pid 1), job id from SLURM_JOB_ID (else 0), type 2 when accepting
 * (else 0). */
void strb_ipc_make_request(struct strb_ipc_request *r, bool accepting);
/* $SLURM_JOB_ID as a request carries it (0 for none or not a number). */
int64_t strb_ipc_job_id(void);
/* strb_ipc_make_request with the job id given: reads no environment. */
void strb_ipc_make_request_job(struct strb_ipc_request *r, bool accepting, int64_t job_id);

/* ---- dynolog's RPC (TCP, int32 native-endian length + JSON) ------------ */

/* Longest RPC reply accepted. */
#define STRB_RPC_MAX_REPLY (1024 * 1024)

struct strb_rpc_result {
	int matched[64], triggered[64];
	int nmatched, ntriggered, busy;
	/* More pids were listed than the arrays hold; the first 64 are kept. */
	bool truncated;
};

/* Sends setKinetOnDemandRequest to host:port. Returns 0, -ECONNREFUSED
 * when no daemon listens, or another negative errno / -EBADMSG for a reply
 * that does not parse (message in err).
 *
 * host NULL means "localhost"; every address getaddrinfo gives (IPv6 and
 * IPv4) is tried in turn. The request is compact JSON with the config
 * escaped (it must be valid UTF-8: else -EINVAL); npids 0 sends "pids":[],
 * which the daemon reads as "every process of the job". timeout_ms (<= 0:
 * 5000) bounds each phase: connecting (all addresses together), writing the
 * request, reading the reply; so the call returns within 3 * timeout_ms,
 * with -ETIMEDOUT when a phase runs out. A reply {"status":"failed..."}
 * gives -EREMOTEIO with that text in err; a connection closed without a
 * reply (dynolog's answer to an unknown request) gives -ECONNRESET. Blocks
 * the calling thread; uses no global state, so any thread may call it. */
int strb_rpc_trigger(const char *host, int port, const char *config, const int *pids, int npids,
                     int64_t job_id, int process_limit, int timeout_ms, struct strb_rpc_result *out,
                     char *err, size_t errlen);

#endif

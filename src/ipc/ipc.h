/* dynolog's IPC fabric, byte for byte (docs/on-demand.md): AF_UNIX datagram
 * endpoints with abstract names (or files under KINETO_IPC_SOCKET_DIR), a
 * 40-byte header and "req"/"ctxt" payloads; plus the client side of
 * dynolog's TCP RPC (length-prefixed JSON). Every datagram is
 * length-checked before it is read; malformed ones are counted. */
#ifndef STROBE_IPC_IPC_H
#define STROBE_IPC_IPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STRB_IPC_HEADER_SIZE 40
#define STRB_IPC_DAEMON_NAME "dynolog"
#define STRB_IPC_MAX_PIDS 11
#define STRB_IPC_MAX_CONFIG (64 * 1024) /* longest config text accepted */

/* "req" payload, decoded. */
struct strb_ipc_request {
	int32_t type; /* 1 EVENTS | 2 ACTIVITIES; 0 keep-alive */
	int64_t job_id;
	int32_t pids[STRB_IPC_MAX_PIDS];
	int npids; /* pids[0] is the polling process, then its ancestors */
};

/* Who sent a datagram (SCM_CREDENTIALS). */
struct strb_ipc_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	char name[108]; /* the sender's endpoint name (abstract or file) */
};

/* Counters of what was refused. */
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
int strb_ipc_decode_request(const uint8_t *payload, size_t len, struct strb_ipc_request *out, const char **why);

/* ---- endpoints ---------------------------------------------------------- */

struct strb_ipc_endpoint;

/* Binds a datagram socket to `name` (abstract, with the trailing NUL; or
 * $KINETO_IPC_SOCKET_DIR/<name> when that is set, STROBE_IPC_SOCKET_DIR
 * first), non-blocking, close-on-exec, with SO_PASSCRED so every datagram
 * carries its sender's credentials. Returns 0 or a negative errno. */
int strb_ipc_open(struct strb_ipc_endpoint **out, const char *name);
/* A fresh client name: "dynoconfigclient" + a random UUIDv4. */
void strb_ipc_client_name(char *buf, size_t len);
void strb_ipc_close(struct strb_ipc_endpoint *ep);
int strb_ipc_fd(const struct strb_ipc_endpoint *ep);

/* Sends one datagram to the endpoint named `to`, without blocking
 * (MSG_DONTWAIT; no retries). Returns 0 or a negative errno (-ECONNREFUSED
 * when nobody is bound there). */
int strb_ipc_send(struct strb_ipc_endpoint *ep, const char *to, const uint8_t *dgram, size_t len);
/* Receives one datagram if one is waiting (never blocks): returns its
 * length, 0 when none is waiting, or a negative errno. Fills *peer from the
 * credentials and the sender address. Datagrams longer than len are
 * truncated and reported as -EMSGSIZE (and counted malformed). */
ssize_t strb_ipc_recv(struct strb_ipc_endpoint *ep, uint8_t *buf, size_t len, struct strb_ipc_peer *peer);

/* True when the peer may configure us: same uid as ours (geteuid) or root. */
bool strb_ipc_peer_trusted(const struct strb_ipc_peer *peer);

/* ---- the traced process's side ----------------------------------------- */

/* This process's "req": its pid and up to 10 ancestors (from /proc, stopping
 * before pid 1), job id from SLURM_JOB_ID (else 0), type 2 when accepting
 * (else 0). */
void strb_ipc_make_request(struct strb_ipc_request *r, bool accepting);

/* ---- dynolog's RPC (TCP, int32 native-endian length + JSON) ------------ */

struct strb_rpc_result {
	int matched[64], triggered[64];
	int nmatched, ntriggered, busy;
};

/* Sends setKinetOnDemandRequest to host:port. Returns 0, -ECONNREFUSED
 * when no daemon listens, or another negative errno / -EBADMSG for a reply
 * that does not parse (message in err). */
int strb_rpc_trigger(const char *host, int port, const char *config, const int *pids, int npids, int64_t job_id,
		     int process_limit, int timeout_ms, struct strb_rpc_result *out, char *err, size_t errlen);

#endif

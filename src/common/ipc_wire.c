/* ipcfabric datagrams: encoding and strict decoding. Pure functions with no
 * dependency beyond libc, so the fuzz target builds from this file alone.
 * Fields are in native byte order, as dynolog and libkineto write them. */
#include <errno.h>
#include <string.h>

#include "common/ipc.h"

#define TYPE_SIZE 32
#define REQ_FIXED 16 /* int32 type, int32 n, int64 jobid */
#define TYPE_REQ  "req"
#define TYPE_CTXT "ctxt"

_Static_assert(STRB_IPC_HEADER_SIZE == 8 + TYPE_SIZE, "header is u64 size + char[32] type");

const char strb_ipc_why_unknown_type[] = "type is neither \"req\" nor \"ctxt\"";

static ssize_t put_header(uint8_t *buf, size_t len, const char *type, size_t payload_len)
{
	uint64_t size = payload_len;

	if (len < STRB_IPC_HEADER_SIZE || payload_len > len - STRB_IPC_HEADER_SIZE)
		return -ENOSPC;
	memcpy(buf, &size, sizeof(size));
	memset(buf + 8, 0, TYPE_SIZE);
	memcpy(buf + 8, type, strlen(type));
	return (ssize_t)(STRB_IPC_HEADER_SIZE + payload_len);
}

ssize_t strb_ipc_encode_request(const struct strb_ipc_request *r, uint8_t *buf, size_t len)
{
	int32_t n;
	ssize_t total;
	uint8_t *p;

	if (!r || !buf || r->npids < 1 || r->npids > STRB_IPC_MAX_PIDS)
		return -EINVAL;
	n = r->npids;
	total = put_header(buf, len, TYPE_REQ, REQ_FIXED + 4 * (size_t)n);
	if (total < 0)
		return total;
	p = buf + STRB_IPC_HEADER_SIZE;
	memcpy(p, &r->type, 4);
	memcpy(p + 4, &n, 4);
	memcpy(p + 8, &r->job_id, 8);
	memcpy(p + REQ_FIXED, r->pids, 4 * (size_t)n);
	return total;
}

ssize_t strb_ipc_encode_reply(const char *config, size_t config_len, uint8_t *buf, size_t len)
{
	ssize_t total;

	if (!buf || config_len > STRB_IPC_MAX_CONFIG || (config_len && !config))
		return -EINVAL;
	total = put_header(buf, len, TYPE_REQ, config_len);
	if (total < 0)
		return total;
	if (config_len)
		memcpy(buf + STRB_IPC_HEADER_SIZE, config, config_len);
	return total;
}

static int bad(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EBADMSG;
}

int strb_ipc_decode(const uint8_t *dgram, size_t len, const uint8_t **payload, size_t *payload_len,
                    const char **why)
{
	uint64_t size;
	const char *type;
	size_t tlen;
	int kind;

	if (!dgram || len < STRB_IPC_HEADER_SIZE)
		return bad(why, "shorter than the 40-byte header");
	memcpy(&size, dgram, sizeof(size));
	if (size != len - STRB_IPC_HEADER_SIZE)
		return bad(why, size > len - STRB_IPC_HEADER_SIZE ? "size field larger than the payload"
		                                                  : "size field smaller than the payload");
	type = (const char *)dgram + 8;
	tlen = strnlen(type, TYPE_SIZE);
	if (tlen == TYPE_SIZE)
		return bad(why, "type not NUL-terminated within 32 bytes");
	if (tlen == strlen(TYPE_REQ) && !memcmp(type, TYPE_REQ, tlen))
		kind = STRB_IPC_REQ;
	else if (tlen == strlen(TYPE_CTXT) && !memcmp(type, TYPE_CTXT, tlen))
		kind = STRB_IPC_CTXT;
	else
		return bad(why, strb_ipc_why_unknown_type);
	if (payload)
		*payload = dgram + STRB_IPC_HEADER_SIZE;
	if (payload_len)
		*payload_len = (size_t)size;
	if (why)
		*why = NULL;
	return kind;
}

int strb_ipc_decode_request(const uint8_t *payload, size_t len, struct strb_ipc_request *out,
                            const char **why)
{
	int32_t type, n;
	int64_t job_id;

	if (!payload || len < REQ_FIXED)
		return bad(why, "request shorter than 16 bytes");
	memcpy(&type, payload, 4);
	memcpy(&n, payload + 4, 4);
	memcpy(&job_id, payload + 8, 8);
	if (n < 1)
		return bad(why, "request lists no pids");
	if (n > STRB_IPC_MAX_PIDS)
		return bad(why, "request lists more than 11 pids");
	if (len != REQ_FIXED + 4 * (size_t)n)
		return bad(why, "request length is not 16 + 4n");
	if (out) {
		memset(out, 0, sizeof(*out));
		out->type = type;
		out->job_id = job_id;
		out->npids = n;
		memcpy(out->pids, payload + REQ_FIXED, 4 * (size_t)n);
	}
	if (why)
		*why = NULL;
	return 0;
}

int strb_ipc_decode_reply(const uint8_t *payload, size_t len, const char **text, size_t *text_len,
                          const char **why)
{
	if (!payload && len)
		return bad(why, "reply without a payload");
	if (len > STRB_IPC_MAX_CONFIG)
		return bad(why, "config text longer than STRB_IPC_MAX_CONFIG");
	if (len && memchr(payload, 0, len))
		return bad(why, "config text contains a NUL byte");
	if (text)
		*text = (const char *)payload;
	if (text_len)
		*text_len = len;
	if (why)
		*why = NULL;
	return 0;
}

/* The ipcfabric wire format as dynolog sees it: the exact bytes strobe sends,
 * round trips, and every malformed datagram refused with a reason. */
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "common/ipc.h"

/* dyno gputrace --log-file /tmp/test_trace.json, as the process receives it
 * (dynolog-protocol.md §3.2, verified on the wire: 250 bytes). */
static const char VERIFIED_TEXT[] =
    "\n    ACTIVITIES_LOG_FILE=/tmp/test_trace.json\nPROFILE_START_TIME=0\nACTIVITIES_DURATION_MSECS=500\n"
    "PROFILE_REPORT_INPUT_SHAPES=false\nPROFILE_WITH_STACK=false\nPROFILE_WITH_FLOPS=false\n"
    "PROFILE_WITH_MODULES=false\n    REQUEST_TRACE_ID=10317743308064884744\n";

static void put_u64le(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_i32le(uint8_t *p, int32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)((uint32_t)v >> (8 * i));
}

/* A datagram with a given header and payload, built by hand. */
static size_t raw(uint8_t *buf, uint64_t size, const char *type, size_t type_len, const void *payload,
                  size_t plen)
{
	memset(buf, 0, STRB_IPC_HEADER_SIZE);
	put_u64le(buf, size);
	memcpy(buf + 8, type, type_len);
	if (plen)
		memcpy(buf + STRB_IPC_HEADER_SIZE, payload, plen);
	return STRB_IPC_HEADER_SIZE + plen;
}

/* A "req" payload with n pids (1000, 1001, ...), npids_field in the n slot. */
static size_t req_payload(uint8_t *p, int32_t npids_field, int real_pids)
{
	put_i32le(p, 2);
	put_i32le(p + 4, npids_field);
	memset(p + 8, 0, 8);
	for (int i = 0; i < real_pids; i++)
		put_i32le(p + 16 + 4 * i, 1000 + i);
	return 16 + 4 * (size_t)real_pids;
}

static void test_request_bytes(void **state)
{
	struct strb_ipc_request r = {
	    .type = 2, .job_id = 0x0102030405060708LL, .pids = {4242, 17, 3}, .npids = 3};
	uint8_t buf[256], want[40 + 28] = {0};
	ssize_t n;

	(void)state;
	if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		skip();
	n = strb_ipc_encode_request(&r, buf, sizeof(buf));
	assert_int_equal(n, 40 + 16 + 12);
	put_u64le(want, 28);
	memcpy(want + 8, "req", 3);
	put_i32le(want + 40, 2);
	put_i32le(want + 44, 3);
	put_u64le(want + 48, 0x0102030405060708ULL);
	put_i32le(want + 56, 4242);
	put_i32le(want + 60, 17);
	put_i32le(want + 64, 3);
	assert_memory_equal(buf, want, sizeof(want));
}

static void test_reply_bytes(void **state)
{
	uint8_t buf[STRB_IPC_MAX_DGRAM], want[40] = {0};
	size_t tlen = strlen(VERIFIED_TEXT);
	ssize_t n;

	(void)state;
	assert_int_equal(tlen, 250);
	n = strb_ipc_encode_reply(VERIFIED_TEXT, tlen, buf, sizeof(buf));
	assert_int_equal(n, 290); /* as dynolog sent it: no NUL */
	put_u64le(want, 250);
	memcpy(want + 8, "req", 3);
	assert_memory_equal(buf, want, 40);
	assert_memory_equal(buf + 40, VERIFIED_TEXT, 250);

	/* Nothing pending: a bare header with size 0. */
	n = strb_ipc_encode_reply(NULL, 0, buf, sizeof(buf));
	assert_int_equal(n, 40);
	put_u64le(want, 0);
	assert_memory_equal(buf, want, 40);
}

static void test_request_round_trip(void **state)
{
	uint8_t buf[128];
	const uint8_t *payload;
	size_t plen;
	const char *why = "unset";

	(void)state;
	for (int n = 1; n <= STRB_IPC_MAX_PIDS; n++) {
		struct strb_ipc_request r = {.type = n & 1 ? 2 : 0, .job_id = -5 * n, .npids = n}, back;
		for (int i = 0; i < n; i++)
			r.pids[i] = 100000 + 7 * i;
		ssize_t len = strb_ipc_encode_request(&r, buf, sizeof(buf));
		assert_int_equal(len, 40 + 16 + 4 * n);
		assert_int_equal(strb_ipc_decode(buf, (size_t)len, &payload, &plen, &why), STRB_IPC_REQ);
		assert_null(why);
		assert_ptr_equal(payload, buf + 40);
		assert_int_equal(plen, 16 + 4 * n);
		assert_int_equal(strb_ipc_decode_request(payload, plen, &back, &why), 0);
		assert_int_equal(back.type, r.type);
		assert_int_equal(back.job_id, r.job_id);
		assert_int_equal(back.npids, n);
		assert_memory_equal(back.pids, r.pids, 4 * (size_t)n);
	}
}

static void test_verified_reply_decodes(void **state)
{
	uint8_t dgram[290];
	const uint8_t *payload;
	const char *text, *why;
	size_t plen, tlen;

	(void)state;
	/* The datagram as seen on the wire, built by hand. */
	raw(dgram, 250, "req", 3, VERIFIED_TEXT, 250);
	assert_int_equal(strb_ipc_decode(dgram, sizeof(dgram), &payload, &plen, &why), STRB_IPC_REQ);
	assert_int_equal(strb_ipc_decode_reply(payload, plen, &text, &tlen, &why), 0);
	assert_int_equal(tlen, 250);
	assert_memory_equal(text, VERIFIED_TEXT, 250);

	/* The idle reply: 40 bytes, empty text. */
	raw(dgram, 0, "req", 3, NULL, 0);
	assert_int_equal(strb_ipc_decode(dgram, 40, &payload, &plen, &why), STRB_IPC_REQ);
	assert_int_equal(plen, 0);
	assert_int_equal(strb_ipc_decode_reply(payload, plen, &text, &tlen, &why), 0);
	assert_int_equal(tlen, 0);
}

static void test_ctxt_accepted(void **state)
{
	uint8_t dgram[56], ctx[16] = {0};
	const uint8_t *payload;
	size_t plen;

	(void)state;
	raw(dgram, 16, "ctxt", 4, ctx, 16);
	assert_int_equal(strb_ipc_decode(dgram, sizeof(dgram), &payload, &plen, NULL), STRB_IPC_CTXT);
	assert_int_equal(plen, 16);
}

static void expect_bad_header(const uint8_t *d, size_t len, const char *reason_part)
{
	const char *why = NULL;
	const uint8_t *payload = (const uint8_t *)"untouched";
	size_t plen = 12345;

	assert_int_equal(strb_ipc_decode(d, len, &payload, &plen, &why), -EBADMSG);
	assert_non_null(why);
	assert_true(why[0] != 0);
	if (!strstr(why, reason_part))
		fail_msg("reason \"%s\" does not mention \"%s\"", why, reason_part);
	assert_string_equal((const char *)payload, "untouched");
	assert_int_equal(plen, 12345);
}

static void test_malformed_headers(void **state)
{
	uint8_t d[STRB_IPC_MAX_DGRAM + 64], p[128];
	char type[32];
	size_t len, plen;
	const char *why;

	(void)state;
	memset(d, 0, sizeof(d));
	/* Too short for a header: 0, 8 and 39 bytes. */
	expect_bad_header(d, 0, "shorter");
	expect_bad_header(NULL, 0, "shorter");
	expect_bad_header(d, 8, "shorter");
	expect_bad_header(d, 39, "shorter");

	plen = req_payload(p, 2, 2);
	/* size larger than the payload (a cut-off datagram) and smaller (extra bytes). */
	len = raw(d, plen + 1, "req", 3, p, plen);
	expect_bad_header(d, len, "larger");
	len = raw(d, plen - 1, "req", 3, p, plen);
	expect_bad_header(d, len, "smaller");
	len = raw(d, UINT64_MAX, "req", 3, p, plen);
	expect_bad_header(d, len, "larger");
	len = raw(d, 0, "req", 3, p, plen);
	expect_bad_header(d, len, "smaller");

	/* Type not NUL-terminated within 32 bytes. */
	memset(type, 'r', sizeof(type));
	len = raw(d, plen, type, sizeof(type), p, plen);
	expect_bad_header(d, len, "NUL");
	memcpy(type, "req", 3);
	len = raw(d, plen, type, sizeof(type), p, plen);
	expect_bad_header(d, len, "NUL");

	/* Unknown types; strobe is strict where dynolog matches a prefix. */
	const char *unknown[] = {"abc", "reqX", "ctx", "ctxtY", "re", "", "REQ"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		len = raw(d, plen, unknown[i], strlen(unknown[i]), p, plen);
		expect_bad_header(d, len, "neither");
		assert_int_equal(strb_ipc_decode(d, len, NULL, NULL, &why), -EBADMSG);
		assert_ptr_equal(why, strb_ipc_why_unknown_type);
	}
	/* A NUL after "req" and garbage later in the padding is still "req". */
	memset(type, 0, sizeof(type));
	memcpy(type, "req\0zz", 6);
	len = raw(d, plen, type, sizeof(type), p, plen);
	assert_int_equal(strb_ipc_decode(d, len, NULL, NULL, NULL), STRB_IPC_REQ);
}

static void expect_bad_request(const uint8_t *p, size_t len, const char *reason_part)
{
	struct strb_ipc_request r;
	const char *why = NULL;

	assert_int_equal(strb_ipc_decode_request(p, len, &r, &why), -EBADMSG);
	assert_non_null(why);
	if (!strstr(why, reason_part))
		fail_msg("reason \"%s\" does not mention \"%s\"", why, reason_part);
}

static void test_malformed_requests(void **state)
{
	uint8_t p[128] = {0};
	size_t len;

	(void)state;
	expect_bad_request(p, 0, "shorter");
	expect_bad_request(NULL, 0, "shorter");
	len = req_payload(p, 1, 1);
	expect_bad_request(p, 15, "shorter");
	len = req_payload(p, 0, 0); /* dynolog would not reply; strobe refuses */
	expect_bad_request(p, len, "no pids");
	len = req_payload(p, -1, 0);
	expect_bad_request(p, len, "no pids");
	len = req_payload(p, INT32_MIN, 1);
	expect_bad_request(p, len, "no pids");
	len = req_payload(p, 12, 12);
	expect_bad_request(p, len, "more than 11");
	len = req_payload(p, INT32_MAX, 12);
	expect_bad_request(p, len, "more than 11");
	/* Length not 16 + 4n: one pid short, one extra, a stray byte. */
	len = req_payload(p, 3, 2);
	expect_bad_request(p, len, "16 + 4n");
	len = req_payload(p, 3, 4);
	expect_bad_request(p, len, "16 + 4n");
	len = req_payload(p, 3, 3);
	expect_bad_request(p, len + 1, "16 + 4n");
	assert_int_equal(strb_ipc_decode_request(p, len, NULL, NULL), 0);
}

static void test_reply_limits(void **state)
{
	static uint8_t buf[STRB_IPC_MAX_DGRAM + 2];
	static char text[STRB_IPC_MAX_CONFIG + 1];
	const char *why = NULL, *t;
	size_t tl;

	(void)state;
	memset(text, 'x', sizeof(text));
	/* The longest config fits; one byte more is refused both ways. */
	assert_int_equal(strb_ipc_encode_reply(text, STRB_IPC_MAX_CONFIG, buf, sizeof(buf)),
	                 STRB_IPC_MAX_DGRAM);
	assert_int_equal(strb_ipc_decode_reply(buf + 40, STRB_IPC_MAX_CONFIG, &t, &tl, &why), 0);
	assert_int_equal(strb_ipc_encode_reply(text, STRB_IPC_MAX_CONFIG + 1, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(strb_ipc_decode_reply((const uint8_t *)text, STRB_IPC_MAX_CONFIG + 1, &t, &tl, &why),
	                 -EBADMSG);
	assert_non_null(strstr(why, "longer"));
	/* A NUL inside the text would cut it short later: refused. */
	assert_int_equal(strb_ipc_decode_reply((const uint8_t *)"A=1\0B=2", 7, &t, &tl, &why), -EBADMSG);
	assert_non_null(strstr(why, "NUL"));
}

static void test_encode_errors(void **state)
{
	struct strb_ipc_request r = {.type = 2, .pids = {1}, .npids = 1};
	uint8_t buf[64];

	(void)state;
	assert_int_equal(strb_ipc_encode_request(&r, buf, 40 + 16 + 3), -ENOSPC);
	assert_int_equal(strb_ipc_encode_request(&r, buf, 39), -ENOSPC);
	assert_int_equal(strb_ipc_encode_request(&r, buf, 40 + 16 + 4), 60);
	r.npids = 0;
	assert_int_equal(strb_ipc_encode_request(&r, buf, sizeof(buf)), -EINVAL);
	r.npids = 12;
	assert_int_equal(strb_ipc_encode_request(&r, buf, sizeof(buf)), -EINVAL);
	r.npids = -1;
	assert_int_equal(strb_ipc_encode_request(&r, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(strb_ipc_encode_request(NULL, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(strb_ipc_encode_reply("abc", 3, buf, 42), -ENOSPC);
	assert_int_equal(strb_ipc_encode_reply("abc", 3, buf, 43), 43);
	assert_int_equal(strb_ipc_encode_reply(NULL, 3, buf, sizeof(buf)), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_bytes),      cmocka_unit_test(test_reply_bytes),
	    cmocka_unit_test(test_request_round_trip), cmocka_unit_test(test_verified_reply_decodes),
	    cmocka_unit_test(test_ctxt_accepted),      cmocka_unit_test(test_malformed_headers),
	    cmocka_unit_test(test_malformed_requests), cmocka_unit_test(test_reply_limits),
	    cmocka_unit_test(test_encode_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* libFuzzer target for the ipcfabric decoder (src/common/ipc_wire.c): any
 * bytes, read as a whole datagram, must decode or be refused with a reason,
 * never read past the end; whatever decodes must encode back to the same
 * bytes. The wire code depends on libc only. Built with the project (clang
 * only):
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSTROBE_BUILD_FUZZ=ON
 *   cmake --build build-fuzz --target fuzz_ipc_decode
 *   ctest --test-dir build-fuzz -L fuzz          # replays fuzz/corpus/fuzz_ipc_decode
 *   build-fuzz/fuzz/fuzz_ipc_decode -max_len=70000 -max_total_time=60 NEW_DIR fuzz/corpus/fuzz_ipc_decode
 *
 * New inputs go to NEW_DIR (first); add those worth keeping, and any
 * crash-* file once fixed, to fuzz/corpus/fuzz_ipc_decode.
 */
#include <stdlib.h>
#include <string.h>

#include "common/ipc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[STRB_IPC_MAX_DGRAM];
	struct strb_ipc_request r;
	const uint8_t *payload;
	const char *why, *text;
	size_t plen, tlen;
	uint8_t *copy;
	ssize_t n;
	int kind;

	/* An exact-size heap copy, so ASan sees any read past the datagram. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	kind = strb_ipc_decode(copy, size, &payload, &plen, &why);
	if (kind < 0) {
		if (!why || !*why)
			abort();
		goto out;
	}
	if (kind != STRB_IPC_REQ && kind != STRB_IPC_CTXT)
		abort();
	if (payload != copy + STRB_IPC_HEADER_SIZE || plen != size - STRB_IPC_HEADER_SIZE)
		abort();
	if (kind != STRB_IPC_REQ)
		goto out;
	/* A "req" payload is a poll (daemon side) or a reply (client side). */
	if (strb_ipc_decode_request(payload, plen, &r, &why) == 0) {
		if (r.npids < 1 || r.npids > STRB_IPC_MAX_PIDS)
			abort();
		n = strb_ipc_encode_request(&r, again, sizeof(again));
		/* The padding after "req" may hold anything; compare the rest. */
		if (n != (ssize_t)size || memcmp(again, copy, 8) || memcmp(again + 40, copy + 40, plen))
			abort();
	} else if (!why || !*why) {
		abort();
	}
	if (strb_ipc_decode_reply(payload, plen, &text, &tlen, &why) == 0) {
		if (tlen != plen || tlen > STRB_IPC_MAX_CONFIG || memchr(text, 0, tlen))
			abort();
		n = strb_ipc_encode_reply(text, tlen, again, sizeof(again));
		if (n != (ssize_t)size || memcmp(again, copy, 8) || memcmp(again + 40, copy + 40, tlen))
			abort();
	} else if (!why || !*why) {
		abort();
	}
out:
	free(copy);
	return 0;
}

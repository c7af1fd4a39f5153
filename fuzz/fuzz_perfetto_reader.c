/* libFuzzer target for the Perfetto reader (tools/read/perfetto_reader.h),
 * fed directly (no detection in front): any bytes, handed over in pieces
 * of any size, must give events or a clean error with a message, never a
 * crash, a leak or a string without its NUL; counts of what was cut stay
 * within what was read. The first byte chooses the piece size. Built with
 * the project (clang only):
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSTROBE_BUILD_FUZZ=ON
 *   cmake --build build-fuzz --target fuzz_perfetto_reader
 *   ctest --test-dir build-fuzz -L fuzz          # replays fuzz/corpus/fuzz_perfetto_reader
 *   build-fuzz/fuzz/fuzz_perfetto_reader -max_len=65536 -max_total_time=60 \
 *     NEW_DIR fuzz/corpus/fuzz_perfetto_reader
 *
 * New inputs go to NEW_DIR (first); add those worth keeping, and any
 * crash-* file once fixed, to fuzz/corpus/fuzz_perfetto_reader.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/perfetto_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t touch(const char *s, size_t cap)
{
	const char *end = memchr(s, 0, cap);
	if (!end)
		abort();
	return (size_t)(end - s);
}

static int on_event(const struct tr_event *ev, void *arg)
{
	size_t *sum = arg;
	*sum += touch(ev->ph, sizeof(ev->ph)) + touch(ev->cat, sizeof(ev->cat)) +
	        touch(ev->name, sizeof(ev->name)) + touch(ev->pid.text, sizeof(ev->pid.text)) +
	        touch(ev->tid.text, sizeof(ev->tid.text)) + touch(ev->id.text, sizeof(ev->id.text));
	if (ev->nargs > TR_ARGS_MAX || ev->nextra > TR_EXTRA_MAX)
		abort();
	for (unsigned i = 0; i < ev->nargs; i++)
		*sum += touch(ev->args[i].key, sizeof(ev->args[i].key)) +
		        touch(ev->args[i].value, sizeof(ev->args[i].value));
	for (unsigned i = 0; i < ev->nextra; i++)
		*sum += touch(ev->extra[i].key, sizeof(ev->extra[i].key)) +
		        touch(ev->extra[i].value, sizeof(ev->extra[i].value));
	/* A slice's duration is never negative: an end before its begin is counted. */
	if (!strcmp(ev->ph, "X") && (!ev->has_dur || ev->dur_ns < 0))
		abort();
	return 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	size_t *sum = arg;
	if (strlen(json) != len)
		abort();
	*sum += strlen(key) + truncated;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	size_t piece = (size_t)data[0] % 64 + 1;
	data++;
	size--;
	size_t sum = 0;
	struct tr_handler h = {.event_cb = on_event, .member_cb = on_member, .user_arg = &sum};
	struct tr_stats st;
	memset(&st, 0, sizeof(st));
	struct tr_event *ev = malloc(sizeof(*ev));
	char err[256];
	err[0] = 0;
	struct tr_pf *p = ev ? tr_pf_new(&h, ev, &st, "fuzz", err, sizeof(err)) : NULL;
	if (!p) {
		free(ev);
		return 0;
	}
	int rc = 0;
	for (size_t at = 0; at < size && !rc; at += piece) {
		/* An exact-size copy, so ASan sees any read past a piece. */
		size_t n = size - at < piece ? size - at : piece;
		unsigned char *copy = malloc(n);
		if (!copy)
			break;
		memcpy(copy, data + at, n);
		rc = tr_pf_feed(p, copy, n);
		free(copy);
	}
	if (!rc)
		rc = tr_pf_finish(p);
	tr_pf_free(p);
	free(ev);
	if (!memchr(err, 0, sizeof(err)) || (rc < 0 && !err[0]) || (!rc && err[0]))
		abort();
	/* Every slice cut or never ended began in a packet of at least 4 bytes. */
	if (st.open_cut + st.unended > size / 4 + 1)
		abort();
	return 0;
}

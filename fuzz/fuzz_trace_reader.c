/* libFuzzer target for the trace reader: any bytes, plain or compressed,
 * must give events or a clean error, never a crash or a leak. Not built by
 * CMake; from the repository root:
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Itools \
 *     fuzz/fuzz_trace_reader.c tools/read/trace_reader.c tools/read/perfetto_reader.c -lyajl -lz -lzstd -o fuzz_trace_reader
 *   ./fuzz_trace_reader -max_len=65536 tests/data
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "trace_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touches every string the reader hands over, so the sanitizers see any
 * read past an end or of uninitialised bytes. */
static size_t touch(const char *s)
{
	return strlen(s);
}

static int on_event(const struct tr_event *ev, void *arg)
{
	size_t *sum = arg;
	*sum += touch(ev->ph) + touch(ev->cat) + touch(ev->name) + touch(ev->pid.text) + touch(ev->tid.text) +
	        touch(ev->id.text) + (size_t)(ev->ts_ns ^ ev->dur_ns);
	for (unsigned i = 0; i < ev->nargs; i++)
		*sum += touch(ev->args[i].key) + touch(ev->args[i].value);
	for (unsigned i = 0; i < ev->nextra; i++)
		*sum += touch(ev->extra[i].key) + touch(ev->extra[i].value);
	*sum += tr_event_arg(ev, "External id") != NULL;
	return 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	size_t *sum = arg;
	*sum += touch(key) + (touch(json) == len) + truncated;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t sum = 0;
	struct tr_handler h = {on_event, on_member, &sum};
	struct tr_stats st;
	char err[256];
	tr_read_memory(data, size, "fuzz", &h, &st, err, sizeof(err));
	/* The number parser sees the raw input too. */
	int64_t ns;
	tr_parse_us((const char *)data, size < 64 ? size : 64, &ns);
	return 0;
}

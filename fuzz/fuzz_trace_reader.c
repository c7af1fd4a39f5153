/* libFuzzer target for the trace reader (tools/read/trace_reader.h): any
 * bytes, plain or compressed, JSON or Perfetto, must give events or a clean
 * error with a message, never a crash, a leak or a string without its NUL.
 * Built with the project (clang only):
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSTROBE_BUILD_FUZZ=ON
 *   cmake --build build-fuzz --target fuzz_trace_reader
 *   ctest --test-dir build-fuzz -L fuzz          # replays fuzz/corpus/fuzz_trace_reader
 *   build-fuzz/fuzz/fuzz_trace_reader -max_len=65536 -max_total_time=60 \
 *     -dict=fuzz/trace_reader.dict NEW_DIR fuzz/corpus/fuzz_trace_reader
 *
 * New inputs go to NEW_DIR (first); add those worth keeping, and any
 * crash-* file once fixed, to fuzz/corpus/fuzz_trace_reader.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "read/trace_reader.h"

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
	err[0] = 1;
	int rc = tr_read_memory(data, size, "fuzz", &h, &st, err, sizeof(err));
	/* A failure says why; a success leaves the message empty. */
	if (!memchr(err, 0, sizeof(err)) || (rc && !err[0]) || (!rc && err[0]))
		abort();
	/* The number parser sees the raw input too. */
	int64_t ns;
	tr_parse_us((const char *)data, size < 64 ? size : 64, &ns);
	return 0;
}

/* libFuzzer target for the trace reader (tools/read/trace_reader.h): any
 * bytes, plain or compressed, JSON or Perfetto, must give events or a clean
 * error with a message, never a crash, a leak or a string without its NUL,
 * and the same events, members, statistics and message whether the fast
 * tokenizer reads the JSON or yajl with the repair pass does.
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

/* Every string and number the reader hands over, folded into one hash
 * (FNV-1a), so the sanitizers see any read past an end or of
 * uninitialised bytes, and two reads can be compared. */
static void mix(uint64_t *h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		*h = (*h ^ b[i]) * 0x100000001b3ull;
}

static void mix_str(uint64_t *h, const char *s)
{
	mix(h, s, strlen(s) + 1);
}

static void mix_ident(uint64_t *h, const struct tr_ident *id)
{
	int64_t v[3] = {id->kind, id->is_int, id->num};
	mix(h, v, sizeof(v));
	mix_str(h, id->text);
}

static int on_event(const struct tr_event *ev, void *arg)
{
	uint64_t *h = arg;
	mix_str(h, ev->ph);
	mix_str(h, ev->cat);
	mix_str(h, ev->name);
	mix_ident(h, &ev->pid);
	mix_ident(h, &ev->tid);
	mix_ident(h, &ev->id);
	int64_t v[8] = {ev->has_ts,    ev->ts_ns,   ev->has_dur,         ev->dur_ns,
	                ev->truncated, ev->dropped, (int64_t)ev->offset, ev->nargs * 1000 + ev->nextra};
	mix(h, v, sizeof(v));
	for (unsigned i = 0; i < ev->nargs; i++) {
		mix_str(h, ev->args[i].key);
		mix_str(h, ev->args[i].value);
		mix(h, &ev->args[i].truncated, sizeof(bool));
	}
	for (unsigned i = 0; i < ev->nextra; i++) {
		mix_str(h, ev->extra[i].key);
		mix_str(h, ev->extra[i].value);
		mix(h, &ev->extra[i].truncated, sizeof(bool));
	}
	mix(h, "E", 1);
	/* a callback's stop, now and then; 1 is also the tokenizer's give-up code */
	return tr_event_arg(ev, "stop") ? 7 : tr_event_arg(ev, "stop1") ? 1 : 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	uint64_t *h = arg;
	if (strlen(json) != len)
		abort(); /* len counts the text, which holds no NUL */
	mix_str(h, key);
	mix(h, json, len);
	mix(h, &truncated, sizeof(truncated));
	mix(h, "M", 1);
	return !strcmp(key, "stop") ? 1 : 0;
}

/* One read: its hash, with the return value, message and statistics. */
static uint64_t read_once(const uint8_t *data, size_t size, bool slow_only, bool *reread)
{
	uint64_t hash = 0xcbf29ce484222325ull;
	struct tr_handler h = {
	    .event_cb = on_event, .member_cb = on_member, .user_arg = &hash, .slow_only = slow_only};
	struct tr_stats st;
	char err[256];
	err[0] = 1;
	int rc = tr_read_memory(data, size, "fuzz", &h, &st, err, sizeof(err));
	/* A failure says why; a success leaves the message empty. */
	bool stopped = rc == 7 || rc == 1;
	if (!memchr(err, 0, sizeof(err)) || (rc && !stopped && !err[0]) || ((!rc || stopped) && err[0]))
		abort();
	*reread = st.reread;
	st.reread = false;
	mix(&hash, &rc, sizeof(rc));
	mix_str(&hash, err);
	mix(&hash, &st, sizeof(st));
	return hash;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The fast tokenizer and yajl with the repair pass must hand over the
	 * same things, whichever of them reads. */
	bool again, slow_again;
	if (read_once(data, size, false, &again) != read_once(data, size, true, &slow_again) || slow_again)
		abort();
	/* The number parser sees the raw input too. */
	int64_t ns;
	tr_parse_us((const char *)data, size < 64 ? size : 64, &ns);
	return 0;
}

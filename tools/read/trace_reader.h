/* A streaming reader of Chrome-trace JSON files (libkineto's layout, and
 * any other Chrome trace in the JSON Object or JSON Array form).
 *
 * The file may be plain, gzip or zstd; the reader tells them apart by their
 * magic bytes, never by the file name. A Perfetto protobuf file (plain or
 * compressed) is recognised by its first packet and read as the same
 * events (perfetto_reader.h). JSON text goes in fixed-size chunks through
 * a strict tokenizer of its own (json_lex.h), which leaves the plain
 * events (scalars, an args object of scalars, ASCII strings without
 * escapes that fit the limits below) to be filled in directly from the
 * text and tokenizes the rest; at the first byte that is not
 * plain valid JSON, a regular file or a buffer is read again from the start
 * by yajl's callback parser behind the repair pass below, which hands over
 * nothing that the first read already did (a pipe goes to yajl directly).
 * Either way the events come one at a time, so memory does not grow with
 * the file: every string an event carries has a fixed limit, and what does
 * not fit is cut and counted rather than kept.
 *
 * libkineto's known defects are repaired on the way (and counted in
 * tr_stats.repaired): quotes written unescaped inside strings of an "args"
 * object or of a top-level member, where libkineto does not escape them (a
 * quote there ends a string only where the JSON can go on after it: a colon
 * after a key, a comma and the next key or a closing brace after a value;
 * anywhere else a quote ends a string as written, so garbled JSON is an
 * error naming its byte), control
 * bytes inside strings, and non-finite numbers written bare (nan, inf,
 * -inf, NaN, Infinity), which become the strings "nan", "inf", ... Valid
 * JSON is never changed, and byte offsets in messages count the file's own
 * bytes.
 *
 * The reader knows nothing about what its caller computes: it is shared by
 * the tools that summarise, convert and merge traces. It is single-threaded;
 * callbacks run on the calling thread, inside tr_read_*, and may block.
 */
#ifndef STROBE_TOOLS_TRACE_READER_H
#define STROBE_TOOLS_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Limits on what one event keeps. Longer strings are cut (at a UTF-8
 * character boundary) and counted in tr_stats.truncated; the names are
 * generous because demangled kernel names run to thousands of bytes. */
#define TR_NAME_MAX   8192          /* name, with its NUL */
#define TR_SHORT_MAX  256           /* ph, cat, pid/tid/id text, member keys */
#define TR_VALUE_MAX  16384         /* one arg or extra member as compact JSON */
#define TR_ARGS_MAX   128           /* args kept per event; the rest are dropped and counted */
#define TR_EXTRA_MAX  8             /* other event members kept ("s", "bp", "id2", ...) */
#define TR_MEMBER_MAX (1u << 20)    /* a top-level member's JSON text */
#define TR_STRING_MAX TR_MEMBER_MAX /* one JSON string, as read: the rest is never kept anywhere */
#define TR_WORD_MAX   4096u         /* a number or bare word; longer is malformed JSON */

/* Perfetto slices begun and not yet ended that the reader holds: per track
 * and in all, and the bytes of their names and args. A begin past a limit
 * is counted in tr_stats.open_cut and not written, and so is its end. */
#define TR_PF_OPEN_DEPTH 4096u
#define TR_PF_OPEN_MAX   (1u << 18)
#define TR_PF_OPEN_BYTES ((size_t)128 << 20)
/* Perfetto tracks the reader keeps: a descriptor of one more track is
 * counted in tr_stats.cut_tracks and ignored, and the events on that track
 * are skipped (counted as skipped). */
#define TR_PF_TRACKS_MAX (1u << 18)

enum tr_compression { TR_PLAIN, TR_GZIP, TR_ZSTD };

/* pid, tid and id are numbers in libkineto's traces, but strings too
 * ("Spans", "GPU 0 Counters", ""), and the two must stay apart: pid 1 and
 * pid "1" are different rows in a viewer. */
enum tr_ident_kind { TR_ABSENT, TR_NUMBER, TR_STRING };

struct tr_ident {
	enum tr_ident_kind kind;
	bool is_int;             /* TR_NUMBER that is an integer within int64 */
	int64_t num;             /* its value when is_int, else 0 */
	char text[TR_SHORT_MAX]; /* the number's JSON text, or the (unescaped) string */
};

/* One member of "args", or an event member the reader has no field for.
 * value is the member's JSON text, compact ("x" with its quotes, 12.5,
 * false, [1,2]). When truncated, value is only a prefix and not valid JSON. */
struct tr_pair {
	char key[TR_SHORT_MAX];
	char value[TR_VALUE_MAX];
	bool truncated;
};

/* One element of traceEvents. Strings are empty and kinds TR_ABSENT when the
 * member is missing. A member of a known name but an unexpected type (a
 * string ts, a numeric name) is kept in extra instead. */
struct tr_event {
	char ph[TR_SHORT_MAX];
	char cat[TR_SHORT_MAX];
	char name[TR_NAME_MAX];
	struct tr_ident pid, tid, id;
	bool has_ts, has_dur;
	int64_t ts_ns;  /* "ts", read exactly from its microsecond text */
	int64_t dur_ns; /* "dur", likewise */
	unsigned nargs;
	struct tr_pair args[TR_ARGS_MAX];
	unsigned nextra;
	struct tr_pair extra[TR_EXTRA_MAX];
	unsigned truncated; /* strings of this event that were cut */
	unsigned dropped;   /* args and members of this event that were not kept */
	uint64_t offset;    /* byte offset of the event in the JSON text */
};

/* Called once per event, in file order. The event is only valid during the
 * call. Return 0 to go on; anything else stops the read, and tr_read_*
 * returns that value. */
typedef int (*tr_event_cb)(const struct tr_event *ev, void *user_arg);

/* Called once per top-level member other than traceEvents (baseTimeNanoseconds,
 * deviceProperties, "strobe", "distributedInfo", "trace_id", ...), in file
 * order, which may be before or after the events. json is the value as
 * compact JSON text, NUL-terminated, len bytes; when truncated it is only the
 * first TR_MEMBER_MAX - 1 bytes. Return as for tr_event_cb. */
typedef int (*tr_member_cb)(const char *key, const char *json, size_t len, bool truncated, void *user_arg);

struct tr_handler {
	tr_event_cb event_cb;   /* may be NULL */
	tr_member_cb member_cb; /* may be NULL */
	void *user_arg;
	bool slow_only; /* read JSON with yajl and the repair pass alone, never the fast
	                 * tokenizer: the tests compare the two */
	bool fast_only; /* where the fast tokenizer gives up on a buffer, fail with -EAGAIN
	                 * rather than read it again with the repair pass */
};

/* What the read saw, filled in even when it fails. */
struct tr_stats {
	enum tr_compression compression;
	bool perfetto;       /* a Perfetto protobuf trace (perfetto_reader.h), not JSON */
	uint64_t file_bytes; /* bytes read from the file */
	uint64_t json_bytes; /* bytes of JSON text (after decompression) */
	uint64_t events;     /* events delivered */
	uint64_t skipped;    /* traceEvents elements that were not objects */
	uint64_t truncated;  /* strings and values cut at their limit */
	uint64_t dropped;    /* args and event members beyond the per-event limits */
	uint64_t bad_times;  /* ts or dur numbers that do not fit in int64 ns */
	uint64_t repaired;   /* libkineto defects repaired: quotes inside strings, nan/inf, control bytes */
	uint64_t negative_durs; /* "dur" values below 0 (kept as read; a slice's end before its begin) */
	uint64_t unended;       /* Perfetto slices begun and never ended: not written */
	uint64_t open_cut;      /* Perfetto slices begun past the TR_PF_OPEN_* limits: not written */
	uint64_t cut_tracks;    /* Perfetto track descriptors past TR_PF_TRACKS_MAX: ignored */
	bool reread;            /* the fast tokenizer gave up, and the JSON was read again from the start
	                         * by yajl with the repair pass */
	uint64_t events_end;    /* JSON offset just past the ']' that closed traceEvents; 0 if none did */
};

/* Reads the trace at path ("-" for stdin) and calls h's callbacks.
 * Returns 0, or:
 *   - a negative errno from opening or reading the file;
 *   - -EBADMSG when the content is not a trace: bad compression, text that
 *     is not JSON, JSON that ends early (a truncated file), a top level that
 *     is neither an object nor an array, or an object with no traceEvents;
 *   - -ENOMEM;
 *   - or a callback's nonzero return value (then err is left empty).
 * On failure err (if errlen > 0) gets one line that names the file, the
 * problem and, for bad content, its byte offset (in the JSON text, or in
 * the compressed file for compression errors). stats may be NULL. */
int tr_read_file(const char *path, const struct tr_handler *h, struct tr_stats *stats, char *err,
                 size_t errlen);

/* The same for an open stream, which stays open; label names it in messages. */
int tr_read_stream(FILE *f, const char *label, const struct tr_handler *h, struct tr_stats *stats, char *err,
                   size_t errlen);

/* The same for a file already in memory (len bytes, not NUL-terminated). */
int tr_read_memory(const void *data, size_t len, const char *label, const struct tr_handler *h,
                   struct tr_stats *stats, char *err, size_t errlen);

/* The same for text in pieces, read one after the other as one text (a
 * piece may be empty): len bytes at data, or with data NULL, len bytes of
 * the file open at fd from offset (read with pread, so that two reads can
 * share fd). The pieces stay valid until it returns. */
struct tr_piece {
	const void *data;
	size_t len;
	int fd;
	uint64_t offset;
};
int tr_read_pieces(const struct tr_piece *pieces, size_t n, const char *label, const struct tr_handler *h,
                   struct tr_stats *stats, char *err, size_t errlen);

/* For other readers that hand over the same events (perfetto_reader.c):
 * empties ev, which starts at byte offset; copies len bytes of s into dst
 * (cap bytes with the NUL), cut at a UTF-8 character boundary, and says
 * whether it was cut. */
void tr_event_reset(struct tr_event *ev, uint64_t offset);
bool tr_copy_text(char *dst, size_t cap, const char *s, size_t len);

/* The arg named key, or NULL. */
const struct tr_pair *tr_event_arg(const struct tr_event *ev, const char *key);

/* Converts a JSON number that counts microseconds (libkineto writes
 * "5166410272838.951") to nanoseconds without going through a double, so
 * the result is exact; digits past the nanosecond are rounded half away
 * from zero. Accepts any JSON number form, exponents included. Returns 0,
 * -EINVAL if text is not a JSON number, or -ERANGE if the result does not
 * fit in int64. */
int tr_parse_us(const char *text, size_t len, int64_t *ns);

#endif

/* Chrome-trace JSON out of the events the trace reader hands over: the one
 * writer of `strobe convert` and `strobe merge`, in the layout of the
 * library's own writer (src/output/json.c), streaming through a sink.
 *
 * An event is written as {"ph", "cat" (when it has one), "name" (always,
 * "" included), "pid", "tid", "ts", "dur", "id", its other members, "args"}:
 * "args" when it has some, and always for "C" and "M" events (as the library
 * writes counters and metadata). ts and dur are exact microseconds with
 * three decimals, negative ones included, from INT64_MIN to INT64_MAX ns. A
 * value the reader cut at its limits (tr_pair.truncated) is no longer JSON:
 * a string is written shortened (what the reader kept of it), anything else
 * as the string of what was kept of its text; both are counted.
 *
 * Top-level members and events may come in any order; the writer opens and
 * closes "traceEvents" as needed. Not thread-safe. */
#ifndef STROBE_TOOLS_CHROME_JSON_H
#define STROBE_TOOLS_CHROME_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "read/trace_reader.h"

struct strb_jbuf;
struct strb_sink;

struct cj_writer {
	struct strb_sink *sink;
	struct strb_jbuf *b;
	int state; /* 0 nothing yet, 1 members before events, 2 in traceEvents, 3 after */
	bool first;
	uint64_t events;     /* events written */
	uint64_t cut_values; /* values cut by the reader, written as strings */
};

/* How an event changes on its way out (strobe merge); all zero keeps it. */
struct cj_edit {
	bool set_pid;
	int64_t pid;           /* the pid written instead of the event's, when set_pid */
	int64_t ts_shift_ns;   /* added to ts, saturating at the int64 limits */
	uint64_t id_shift;     /* added to integer ids (modulo 2^64) */
	const char *id_prefix; /* put before ids that are not integers; NULL: none */
};

/* Opens path for writing (gzip or zstd by its suffix, under a temporary
 * name until cj_finish). 0, or a negative errno with the reason in
 * strobe_last_error(). */
int cj_open(struct cj_writer *w, const char *path);

/* A top-level member: json is its value's JSON text (len bytes), or, when
 * truncated, a prefix of it that is written as a string. */
void cj_member(struct cj_writer *w, const char *key, const char *json, size_t len, bool truncated);
/* A top-level member whose value the caller writes into the returned
 * buffer (with strb_jbuf_*), before the next call. */
struct strb_jbuf *cj_member_begin(struct cj_writer *w, const char *key);

/* One event, changed by edit (NULL: as it is). */
void cj_event(struct cj_writer *w, const struct tr_event *ev, const struct cj_edit *edit);
/* A metadata event {"ph": "M", "name": what, "ts": 0, "pid": pid, "tid": 0,
 * "args": {key: str}}, or {key: num} when str is NULL. */
void cj_meta(struct cj_writer *w, const char *what, int64_t pid, const char *key, const char *str,
             int64_t num);

/* A time member's value: ns as microseconds with three decimals, negative
 * ones too. */
void cj_time(struct strb_jbuf *b, int64_t ns);

/* Ends the document and commits the file. 0, or a negative errno with the
 * reason in strobe_last_error(); the file is gone then. Frees what the
 * writer holds. */
int cj_finish(struct cj_writer *w);
/* Drops the file and frees what the writer holds. Safe after cj_finish
 * and on a writer never opened (zeroed). */
void cj_abort(struct cj_writer *w);

#endif

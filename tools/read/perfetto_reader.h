/* Perfetto protobuf traces for the trace reader (trace_reader.h): the
 * TrackEvent part of the format, as strobe writes it and as other TrackEvent
 * producers do, turned into the Chrome-trace events the JSON reader hands
 * over, so every tool that reads JSON reads these too.
 *
 * What becomes what:
 *   - slice begin + end on a track: an "X" event (name, categories joined
 *     by ',', debug annotations as args), its flows "s" (start) and "f"
 *     (end, "bp": "e") events; flow ids written by strobe give back their
 *     "ac2g"/"fwdbwd" kind and id, others become category "flow";
 *   - instants: "i"; counters: "C" named after the counter track;
 *   - process and thread tracks: their pid/tid, and "M" process_name,
 *     process_labels, thread_name and sort index events; other tracks take the pid of
 *     their process and a tid of their own ("stream 7" rows keep 7, as in
 *     strobe's JSON), with a thread_name;
 *   - strobe's "Trace metadata" instant: the top-level members (distributedInfo,
 *     the "strobe" accounting, deviceProperties, ...), and
 *     baseTimeNanoseconds: the first timestamp, which every ts counts from.
 * Timestamps follow the clock snapshots to CLOCK_REALTIME when the trace
 * has one. Memory is bounded by the interning tables and the slices open
 * at once (TR_PF_OPEN_DEPTH per track, TR_PF_OPEN_MAX and TR_PF_OPEN_BYTES
 * in all), not by the file: a slice begun past those limits is not written,
 * nor its end, and counts in tr_stats.open_cut; one never ended counts in
 * tr_stats.unended.
 */
#ifndef STROBE_TOOLS_PERFETTO_READER_H
#define STROBE_TOOLS_PERFETTO_READER_H

#include <stdbool.h>
#include <stddef.h>

#include "read/trace_reader.h"

struct tr_pf;

/* Whether the first n bytes of a file are the start of a Perfetto trace
 * (a first packet that lies whole in them, then another or the end). */
bool tr_pf_detect(const unsigned char *m, size_t n);

/* ev is the caller's event buffer, handed to h's callbacks; stats counts
 * events, cuts and drops; messages go to err, prefixed with label. */
struct tr_pf *tr_pf_new(const struct tr_handler *h, struct tr_event *ev, struct tr_stats *stats,
                        const char *label, char *err, size_t errlen);
/* The next n bytes of the file. Returns 0, a callback's nonzero value,
 * -EBADMSG for a malformed file or -ENOMEM, with err set for the last two. */
int tr_pf_feed(struct tr_pf *p, const unsigned char *data, size_t n);
/* The end of the file: a packet cut short is an error. */
int tr_pf_finish(struct tr_pf *p);
void tr_pf_free(struct tr_pf *p);

#endif

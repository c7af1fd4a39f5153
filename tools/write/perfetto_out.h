/* Perfetto protobuf out of the events the trace reader hands over (strobe
 * convert's Perfetto writer; docs/output-format.md says what becomes what).
 *
 * A Chrome trace names its rows with "M" events that may come anywhere,
 * libkineto's at the very end, while a Perfetto reader wants each track
 * described before its first event. So the input is read twice: the first
 * pass (pfo_learn_*) collects the row names, sort indices and top-level
 * members; the second (pfo_event) writes every track's descriptor once,
 * with its final name, just before its first event, then the events.
 * Memory grows with the number of rows and members (members are kept up to
 * 16 MiB), never with the events. Not thread-safe. */
#ifndef STROBE_TOOLS_PERFETTO_OUT_H
#define STROBE_TOOLS_PERFETTO_OUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "read/trace_reader.h"

struct pfo;

struct pfo_stats {
	uint64_t written;         /* events written (a bound flow counts as one) */
	uint64_t left_out;        /* events of phases Perfetto's track events have no form for */
	uint64_t flows_bound;     /* flow events carried by their slice */
	uint64_t flows_unbound;   /* flow events on instants of their own */
	uint64_t cut_values;      /* args the reader cut, kept as strings */
	uint64_t members_dropped; /* top-level members past the 16 MiB kept */
};

/* Opens path for writing (under a temporary name until pfo_finish).
 * 0, or a negative errno with the reason in strobe_last_error(). */
int pfo_open(struct pfo **out, const char *path);

/* The first pass: every event and top-level member of the input, in order. */
int pfo_learn_event(struct pfo *w, const struct tr_event *ev);
int pfo_learn_member(struct pfo *w, const char *key, const char *json, size_t len, bool truncated);

/* The second pass: the same events (members need not come again). bound:
 * a flow event ("s", "f", "t") goes on the complete event just before it
 * rather than on an instant of its own. 0 or -ENOMEM. */
int pfo_event(struct pfo *w, const struct tr_event *ev, bool bound);

/* Writes what is pending and the metadata, and commits the file. 0, or a
 * negative errno with the reason in strobe_last_error() (the file is gone
 * then). */
int pfo_finish(struct pfo *w);
/* Frees w, dropping the file unless pfo_finish committed it. NULL allowed. */
void pfo_free(struct pfo *w);

const struct pfo_stats *pfo_stats(const struct pfo *w);

#endif

/* A streaming encoder of Perfetto protobuf traces (the subset in
 * proto/strobe_perfetto.proto): track descriptors, track events with
 * interned names, categories, annotation keys and short string values,
 * flows and counters, all on one packet sequence, written through a sink
 * in large chunks.
 *
 * Timestamps are epoch ns. They are written on a clock of the sequence,
 * anchored to CLOCK_REALTIME at an origin chosen at open by the first
 * packet's clock snapshot: as ns since the origin, or, with
 * STRB_PFENC_INCREMENTAL, as the delta from the previous event (the clock
 * is declared incremental). One earlier than the origin (or, incremental,
 * than the previous event) is written in CLOCK_REALTIME itself.
 *
 * Memory is bounded: when the interning tables grow past their limit the
 * encoder clears the sequence's incremental state and starts over. Not
 * thread-safe. */
#ifndef STROBE_COMMON_PFENC_H
#define STROBE_COMMON_PFENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strobe/strobe.h"

/* A Perfetto flow id: JSON flow ids are per kind ("ac2g" 5 and "fwdbwd" 5
 * are different arrows), Perfetto's are global. */
static inline uint64_t strb_output_flow_uuid(uint64_t id, unsigned kind)
{
	return id << 2 | (kind & 3);
}

struct strb_sink;
struct strb_pfenc;

/* What strb_pfenc_open is told about the caller. */
enum {
	/* The caller's name, category and key pointers keep their content for
	 * the encoder's life, so equal pointers mean equal strings (lets it
	 * skip hashing). */
	STRB_PFENC_STABLE_STRINGS = 1,
	/* Events come in non-decreasing time: each timestamp is written as the
	 * delta from the previous one on an incremental clock of the sequence
	 * (1-2 bytes instead of 4-5). An event earlier than the one before it
	 * is still written right, in CLOCK_REALTIME, at full width. */
	STRB_PFENC_INCREMENTAL = 2,
};

/* Starts a trace into sink (which the encoder then owns: finish commits it,
 * abort removes it); flags: STRB_PFENC_*. Returns 0 or -ENOMEM. */
int strb_pfenc_open(struct strb_pfenc **out, struct strb_sink *sink, int64_t origin_ns, unsigned flags);

/* The track of events that name none (TrackEventDefaults.track_uuid):
 * events on it are written without their track. Call it once, before the
 * events; 0 = none. */
void strb_pfenc_default_track(struct strb_pfenc *e, uint64_t uuid);

/* A fresh track uuid (1, 2, 3, ...). */
uint64_t strb_pfenc_uuid(struct strb_pfenc *e);

/* With STRB_PFENC_INCREMENTAL: the samples of this counter track (the one
 * with most, say) go on a second packet sequence whose default track it
 * is, so they are written without their track. Call it once, before the
 * track's samples. */
void strb_pfenc_counter_sequence(struct strb_pfenc *e, uint64_t uuid);

/* Track descriptors. A descriptor may be written again for the same uuid
 * (e.g. when a name becomes known later); readers take the last one.
 * name and label may be NULL. */
void strb_pfenc_process(struct strb_pfenc *e, uint64_t uuid, int64_t pid, const char *name, const char *label,
                        int64_t sort_index);
void strb_pfenc_thread(struct strb_pfenc *e, uint64_t uuid, int64_t pid, int64_t tid, const char *name,
                       int64_t sort_index);
/* A named track under parent (0 = top level). */
void strb_pfenc_track(struct strb_pfenc *e, uint64_t uuid, uint64_t parent, const char *name);
void strb_pfenc_counter_track(struct strb_pfenc *e, uint64_t uuid, uint64_t parent, const char *name,
                              const char *category);

enum strb_pf_type {
	STRB_PF_BEGIN = 1,
	STRB_PF_END = 2,
	STRB_PF_INSTANT = 3,
	STRB_PF_COUNTER = 4,
};

struct strb_pf_event {
	enum strb_pf_type type;
	uint64_t track;
	int64_t ts_ns;
	const char *name;              /* BEGIN, INSTANT */
	const char *category;          /* BEGIN, INSTANT; NULL for none */
	const struct strobe_arg *args; /* debug annotations */
	size_t nargs;
	uint64_t flow_out; /* a flow that starts here, 0 for none */
	uint64_t flow_in;  /* a flow that ends here, 0 for none */
	double value;      /* COUNTER */
};

void strb_pfenc_event(struct strb_pfenc *e, const struct strb_pf_event *ev);

/* The trace's metadata: the annotations of one instant named "metadata"
 * at ts on a top-level track named "Trace metadata". Returns the track. */
#define STRB_PERFETTO_METADATA_TRACK "Trace metadata"
#define STRB_PERFETTO_METADATA_EVENT "metadata"
uint64_t strb_pfenc_metadata(struct strb_pfenc *e, int64_t ts, const struct strobe_arg *args, size_t nargs);

/* Flushes and commits the file; frees e. Returns 0 or the sink's error. */
int strb_pfenc_finish(struct strb_pfenc *e);
/* Drops the file; frees e. NULL allowed. */
void strb_pfenc_abort(struct strb_pfenc *e);
/* The first error so far (0 if none). */
int strb_pfenc_error(const struct strb_pfenc *e);

/* Bytes handed to the sink so far (before compression). */
uint64_t strb_pfenc_bytes(const struct strb_pfenc *e);

/* A map from a 64-bit key to a track uuid, for writers that name tracks by
 * (pid, tid) pairs. Grows as needed. */
struct strb_pfmap {
	uint64_t *keys, *vals;
	size_t count, cap;
};
/* The value stored for key, or 0. */
uint64_t strb_pfmap_get(const struct strb_pfmap *m, uint64_t key);
int strb_pfmap_put(struct strb_pfmap *m, uint64_t key, uint64_t val);
void strb_pfmap_free(struct strb_pfmap *m);
/* Mixes two values into one key. */
uint64_t strb_pfmap_key(uint64_t a, uint64_t b);
/* A key for a string. */
uint64_t strb_pfmap_str(const char *s);

#endif

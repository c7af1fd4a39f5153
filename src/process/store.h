/* The compact store of a finished trace's activities.
 *
 * Processing builds activities as an array of the public struct strobe_activity
 * (112 bytes each, plus 8 for the record its args render from), which it
 * changes as it links, closes and moves them, and encodes each into a few
 * bytes once it is final. The CPU part is final when it has been paired and
 * closed; device work, only appended after that, is final as soon as the
 * next activity is pushed. So the trace rolls (strb_trace_roll): its
 * finished blocks are encoded while the device records are decoded, and the
 * array holds a window of them, not all. Sealing the trace encodes the rest
 * and frees the array. Names, categories and (device, resource) rows become
 * indices into tables; times, ids and record pointers become varints
 * relative to the first activity of their block of STRB_STORE_BLOCK; what
 * is zero or equal to another field takes no byte at all. A launch and its
 * kernel take about 40 bytes instead of 240.
 *
 * Activities stay addressable by index: each block starts with its
 * activities' 16-bit offsets, so writers that visit them out of order
 * (Perfetto's time-sorted packets, JSON's chunks formatted in parallel)
 * decode any one on its own. A block's bytes are allocated at their size
 * from the trace's arena while it has room; a GPU backend hands the arena
 * the vendor buffers it has walked, so a GPU trace's store is written into
 * memory the process has already touched. What the arena has no room for
 * goes into the store's own 1 MiB chunks. Decoding gives back every field
 * exactly as it was, pointers included. A sealed trace is read-only; any
 * number of threads may decode at once. */
#ifndef STROBE_PROCESS_STORE_H
#define STROBE_PROCESS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "process/trace.h"
#include "strobe/strobe.h"

#define STRB_STORE_BLOCK 256

struct strb_store_block {
	const uint8_t *p;    /* the block's bytes: offsets (uint16_t each), then records */
	uint32_t len;        /* of them */
	int64_t start;       /* bases of the block's activities' fields */
	uint64_t id, linked; /* (the first nonzero value in the block) */
	uintptr_t rec[2];    /* two record bases: GPU work and calls live apart */
};

struct strb_store {
	size_t count;
	size_t len; /* the blocks' bytes, in all */
	struct strb_store_block *blocks;
	struct strb_arena own; /* blocks' bytes the given arena had no room for */
	const char **names;
	size_t nnames;
	int64_t (*rows)[2]; /* (device, resource) */
	size_t nrows;
};

/* Encodes count activities (and the record each one's args render from,
 * recs[i], or NULL; recs may be NULL). The blocks' bytes go where arena
 * (which must outlive the store; or NULL) has room already, else into the
 * store's own chunks. 0 or -ENOMEM (nothing changed). */
int strb_store_build(struct strb_store **out, const struct strobe_activity *acts, const void *const *recs,
                     size_t count, struct strb_arena *arena);
/* A store built a few blocks at a time, as processing finishes them:
 * begin (hint: how many activities to make room for, or 0; arena as for
 * strb_store_build), add any number
 * of times (each count a multiple of STRB_STORE_BLOCK but the last), then
 * finish, which hands over the store and frees the builder; abandon frees
 * both instead. A failed add (-ENOMEM) leaves the store as it was; one
 * after a short block is refused (-EINVAL). While it is built, the
 * activities added so far can be read from strb_store_so_far. */
struct strb_store_builder;
int strb_store_begin(struct strb_store_builder **out, size_t hint, struct strb_arena *arena);
int strb_store_add(struct strb_store_builder *b, const struct strobe_activity *acts, const void *const *recs,
                   size_t count);
const struct strb_store *strb_store_so_far(const struct strb_store_builder *b);
struct strb_store *strb_store_finish(struct strb_store_builder *b);
void strb_store_abandon(struct strb_store_builder *b);
/* Activity i, every field as it was encoded; *rec its record (or NULL). */
void strb_store_get(const struct strb_store *s, size_t i, struct strobe_activity *a, const void **rec);
/* Activity i's type alone, without decoding the rest. */
enum strobe_activity_type strb_store_type(const struct strb_store *s, size_t i);
/* Bytes the store takes: its blocks (wherever they live) and its tables. */
size_t strb_store_bytes(const struct strb_store *s);
void strb_store_free(struct strb_store *s);

#endif

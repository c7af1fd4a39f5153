/* A trace packed into one block of bytes that holds no pointers: its
 * activities (with their args, rendered ones included), rows, metadata and
 * GPU accounting, every string once. The flight recorder packs the GPU
 * records it has decoded so that a fatal-signal handler can write them
 * with write() alone, and strobe convert unpacks them in another process,
 * where the vendor library that made them may be missing.
 *
 * Layout (native byte order, every part 8-byte aligned): the header; the
 * string offsets (nstrings + 1 of them, string i being the bytes from
 * offset i to offset i + 1 of the blob; string 0 stands for none); the
 * blob; the activities; the args (each activity's are a run of them, then
 * the metadata's); the rows. */
#ifndef STROBE_PROCESS_PACKED_H
#define STROBE_PROCESS_PACKED_H

#include <stddef.h>
#include <stdint.h>

#include "process/trace.h"

#define STRB_PACK_MAGIC   "STRBPACK"
#define STRB_PACK_VERSION 1
#define STRB_PACK_STATS   10 /* the GPU counts carried, in the order packed.c lists them */

struct strb_pack_header {
	char magic[8];
	uint32_t version;
	uint32_t size;  /* sizeof(struct strb_pack_header) */
	uint64_t bytes; /* the whole block */
	uint32_t nstrings, nacts, nargs, nmeta, nres;
	uint32_t device_properties; /* a string */
	uint64_t blob;              /* bytes of string text */
	uint64_t left_out;          /* the oldest activities, over the size limit */
	uint32_t gpu;               /* a GPU backend took part */
	uint32_t reserved;
	uint64_t stats[STRB_PACK_STATS];
};

struct strb_pack_act {
	int64_t start_ns, end_ns, device, resource;
	uint64_t id, linked_id, flow_id;
	uint32_t type, flags, flow_kind;
	uint32_t name, category; /* strings */
	uint32_t arg_count;
	uint64_t first_arg;
};

struct strb_pack_arg {
	uint32_t key; /* a string */
	uint32_t kind;
	union {
		int64_t i64;
		uint64_t u64;
		double f64;
		uint64_t b;
		uint64_t str; /* a string, for STRING and JSON */
	} v;
};

struct strb_pack_res {
	uint32_t kind, name, label, reserved;
	int64_t device, resource, sort_index;
};

/* Packs t into a malloc'd block (*out, *len). When the whole of t takes
 * more than limit bytes, the newest activities that fit are packed and
 * the others counted in the header's left_out. Returns 0 or -ENOMEM. */
int strb_pack_trace(const struct strobe_trace *t, size_t limit, void **out, size_t *len);

/* Adds what the block holds to t: the activities that end at or after
 * from_ns (the others counted in *out_of_window), the rows, the metadata
 * (a key t has already keeps t's value), deviceProperties when t has none,
 * and the GPU counts. Every offset, index, kind and JSON text is checked
 * first: a damaged block adds nothing and err says what is wrong. Returns
 * 0, -EINVAL or -ENOMEM. */
int strb_unpack_trace(struct strobe_trace *t, const void *block, size_t len, int64_t from_ns,
                      uint64_t *out_of_window, char *err, size_t errlen);

#endif

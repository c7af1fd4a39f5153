/* Internal side of the capture API: record layouts shared with the
 * processing pass, and hooks for device backends. */
#ifndef STROBE_CORE_CAPTURE_H
#define STROBE_CORE_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "strobe/strobe.h"

/* Payload of STRB_REC_ACTIVITY (strobe_record), followed by the args, the
 * category (category_len bytes, 0 = none) and then the name. Each arg:
 * struct strb_rec_arg, the key, then for strings the value, each padded to
 * 8 bytes. */
struct strb_rec_activity {
	int64_t start_ns, end_ns;
	int64_t device, resource;
	uint64_t id, linked_id, flow_id;
	uint32_t type, flags, flow_kind, arg_count;
	uint32_t category_len, reserved;
};

/* Longest category an activity may carry (strobe_activity.category). */
#define STRB_CATEGORY_MAX 255

/* The length of an activity's category, or -1 when it is empty or longer
 * than STRB_CATEGORY_MAX (reading no further than that). */
static inline int strb_category_len(const char *cat)
{
	size_t n = strnlen(cat, STRB_CATEGORY_MAX + 1);
	return n && n <= STRB_CATEGORY_MAX ? (int)n : -1;
}

/* Optional attributes of an annotation (NVTX event attributes). */
enum { STRB_ATTR_COLOR = 1, STRB_ATTR_CATEGORY = 2 };
enum strb_payload_kind {
	STRB_PAYLOAD_NONE = 0,
	STRB_PAYLOAD_I64,
	STRB_PAYLOAD_U64,
	STRB_PAYLOAD_F64,
};
struct strb_rec_attrs {
	uint32_t has;   /* STRB_ATTR_* */
	uint32_t color; /* ARGB */
	uint32_t category;
	uint32_t payload_kind; /* enum strb_payload_kind */
	union {
		int64_t i64;
		uint64_t u64;
		double f64;
	} payload;
};

struct strb_rec_arg {
	uint32_t kind;
	uint16_t key_len;
	uint16_t reserved;
	uint32_t str_len; /* STRING/JSON */
	uint32_t reserved2;
	union {
		int64_t i64;
		uint64_t u64;
		double f64;
		uint64_t b;
	} v;
};

/* Called on the capturing thread for a correlation push (id != NULL) made
 * while tracing, and for the pop matching each push it accepted, whenever
 * that pop comes. Device backends install one to forward ids to the
 * vendor's external-correlation API; it returns true when it took a push. */
typedef bool (*strb_correlation_hook)(uint32_t which, const uint64_t *id);
void strb_capture_set_correlation_hook(strb_correlation_hook hook);
bool strb_capture_notify_correlation(uint32_t which, const uint64_t *id);

/* Annotation calls with a domain and attributes (attrs may be NULL), for
 * the NVTX handlers; same cost and rules as strobe_range_push and friends.
 * Pops and ends carry the domain so each domain nests on its own. */
void strb_capture_push(uint32_t domain, const char *name, const struct strb_rec_attrs *attrs);
void strb_capture_pop(uint32_t domain);
void strb_capture_mark(uint32_t domain, const char *name, const struct strb_rec_attrs *attrs);
/* A range that may end on any thread. Returns its id, unique in the
 * process and never 0, also when not tracing (the caller hands it out). */
uint64_t strb_capture_async_start(uint32_t domain, const char *name, const struct strb_rec_attrs *attrs);
void strb_capture_async_end(uint64_t id);
/* strobe_step(): the n-th call (from 1) marks an iteration boundary on the
 * calling thread; processing makes ProfilerStep#n of the stretch from
 * there to the next mark. */
void strb_capture_step(uint64_t n);

/* realtime - monotonic at the start of the running trace (0 when idle),
 * so strobe_now_ns agrees with the trace's time base. */
extern _Atomic int64_t strb_epoch_anchor;

/* Ids for ops and ranges: unique per process, below 2^53. Takes n of them
 * at once (a per-thread block) with one relaxed atomic add. */
uint64_t strb_ids_take_block(uint64_t n);

/* Sets the calling thread's display name (strobe_thread_set_name). */
int strb_thread_name_set(const char *name);

#endif

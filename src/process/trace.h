/* The in-memory trace: what processing produces and writers read. */
#ifndef STROBE_PROCESS_TRACE_H
#define STROBE_PROCESS_TRACE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strobe/plugin.h"

/* Bump allocator with stable pointers; freed all at once. */
struct strb_arena_chunk;
struct strb_arena {
	struct strb_arena_chunk *head;
	size_t used, size;              /* within head */
	struct strb_arena_chunk *spare; /* handed over by strb_arena_give, not used yet */
	size_t max_chunk;               /* largest chunk it mallocs; 0: 64 MiB */
};

void *strb_arena_alloc(struct strb_arena *a, size_t n);
/* As strb_arena_alloc, but only from memory the arena holds already (what
 * is left of its current chunk, or a block handed over by strb_arena_give);
 * NULL when that would take a new chunk. */
void *strb_arena_alloc_held(struct strb_arena *a, size_t n);

/* Makes room for `need` elements of `elem` bytes in the malloc'd array *p
 * of capacity *cap (doubling from 256); false when out of memory, the
 * array left as it was. */
bool strb_grow_array(void **p, size_t *cap, size_t need, size_t elem);
/* Hands the arena a malloc'd block of `size` bytes that the caller is done
 * with: later allocations use it before asking malloc for new memory, and it
 * is freed with the arena. Memory already written once is reused without
 * page faults; a block too small or misaligned to use is freed at once. */
void strb_arena_give(struct strb_arena *a, void *mem, size_t size);
/* Frees the blocks handed over by strb_arena_give that were not used. */
void strb_arena_drop_spare(struct strb_arena *a);
void strb_arena_free(struct strb_arena *a);

/* Everything strobe counts so that nothing is lost silently. */
struct strb_trace_stats {
	uint64_t dropped_events;      /* over the CPU buffer budget */
	uint64_t truncated_names;     /* names cut at 1023 bytes */
	uint64_t unfinished_ranges;   /* still open at stop */
	uint64_t unmatched_pops;      /* pops with no push in the window */
	uint64_t non_finite_counters; /* NaN/inf counter samples dropped */
	uint64_t out_of_window;       /* events outside the capture window */
	uint64_t rejected_activities; /* child-profiler activities that were malformed */
	uint64_t buffer_bytes;        /* CPU buffer bytes used */
	uint64_t threads;             /* threads that recorded */

	/* Device backends (written only when one took part). */
	bool gpu;
	uint64_t gpu_records;           /* vendor records read */
	uint64_t gpu_out_of_window;     /* GPU records not entirely inside the window */
	uint64_t gpu_dropped_records;   /* the vendor library dropped them */
	uint64_t gpu_rejected_buffers;  /* buffer requests refused: budget exhausted */
	uint64_t gpu_discarded_buffers; /* buffers thrown away after the budget ran out */
	uint64_t gpu_warmup_records;    /* collected before the window, discarded */
	uint64_t gpu_blocklisted;       /* noisy runtime calls dropped on purpose */
	uint64_t gpu_invalid_external_correlations;
	uint64_t gpu_unmatched_correlations;  /* GPU work whose launching call is missing */
	uint64_t gpu_out_of_order;            /* a launch that starts after its GPU work */
	uint64_t gpu_unexpected_records;      /* record kinds strobe does not handle */
	uint64_t gpu_incomplete_records;      /* still in flight at stop (no timestamps) */
	uint64_t gpu_paused_records;          /* inside a strobe_toggle_collection pause */
	uint64_t gpu_bad_buffers;             /* a buffer walk stopped on an invalid record */
	uint64_t gpu_launches;                /* kernel launch calls in the window */
	uint64_t gpu_launches_without_kernel; /* launches whose kernel never arrived */
	uint64_t gpu_overlap_moved;           /* GPU work moved to a stream's overlap row */
	uint64_t gpu_aged_buffers;            /* flight mode: oldest buffers recycled */
};

/* Args rendered when they are read. A backend that keeps its vendor records
 * with the trace leaves an activity's args empty and points it at its
 * record; writers render the args from it each time they write the activity.
 * A GPU trace then holds no per-record args (libkineto's 14 kernel args are
 * 336 bytes per kernel as struct strobe_arg), and processing builds none.
 * strobe_trace_foreach publishes them as ordinary args, once, the first time
 * it runs. */
#define STRB_RENDER_MAX_ARGS 24
struct strb_arg_scratch {
	struct strobe_arg args[STRB_RENDER_MAX_ARGS];
	char text[256]; /* string values */
};

struct strb_arg_source {
	/* Fills s with the args of a, made from rec; returns how many (at most
	 * STRB_RENDER_MAX_ARGS, string values in s->text or living as long as
	 * ctx). Called from any thread, concurrently: ctx is read-only by then. */
	size_t (*render)(const void *ctx, const void *rec, const struct strobe_activity *a,
	                 struct strb_arg_scratch *s);
	void *ctx;
	void (*release)(void *ctx); /* frees ctx and the records, with the trace */
};

struct strb_store;
struct strb_store_builder;

/* Activities a rolling trace keeps in their working form at most: the rest
 * are already encoded. 8192 of them take 0.9 MiB, and stay in the cache. */
#define STRB_TRACE_WINDOW 8192

struct strobe_trace {
	struct strb_arena arena;
	/* While processing builds the trace: the activities, changed in place.
	 * Once sealed (strb_trace_seal), acts is NULL and they live in store,
	 * read through strb_trace_get. A rolling trace (strb_trace_roll)
	 * encodes them while it is built: activities [0, sealed) are in rolled
	 * already, and acts holds [sealed, count), cap of them. */
	struct strobe_activity *acts;
	size_t count, cap;
	struct strb_store *store;
	struct strb_store_builder *rolled;
	size_t sealed;
	bool rolling;
	/* The public form of a sealed trace's activities, built by the first
	 * strobe_trace_foreach (under publish_lock). */
	struct strobe_activity *pub;
	struct strobe_resource *res;
	size_t res_count, res_cap;
	struct strobe_arg *meta;
	size_t meta_count, meta_cap;
	/* Interned strings: open addressing over arena copies. */
	const char **strings;
	size_t string_count, string_cap;

	int64_t start_ns, end_ns;
	int64_t pid;
	uint64_t activity_mask;
	const char *device_properties; /* contents of the "deviceProperties" array; "" if none */
	struct strb_trace_stats stats;

	/* Activities [in_order_from, in_order_to) were checked by the backend
	 * that wrote them: on each device/stream row, its GPU work starts after
	 * the work before it ends. The overlap pass skips them when no other
	 * activity is GPU work. */
	size_t in_order_from, in_order_to;

	/* Rendered args: recs[i] is the record acts[i]'s args come from, or NULL
	 * (recs is NULL while no activity has one; beside acts, it too holds
	 * activities [sealed, count) of a rolling trace). */
	struct strb_arg_source src;
	const void **recs;
	pthread_mutex_t publish_lock;
	bool published; /* under publish_lock */
};

struct strobe_trace *strb_trace_new(void);
/* FNV-1a of len bytes at s: the hash of interned strings. */
uint64_t strb_hash_bytes(const char *s, size_t len);
/* A copy of s (len bytes) that lives as long as the trace; equal strings
 * share one copy. NULL only on allocation failure. */
const char *strb_trace_intern(struct strobe_trace *t, const char *s, size_t len);
/* Room for `more` activities without moving the array again (nothing for
 * a rolling trace, whose working array does not grow). */
int strb_trace_reserve(struct strobe_trace *t, size_t more);
/* Every activity so far is final, and from now on pushing an activity
 * tells the trace that every activity before it is: the trace encodes them
 * into the compact store a window at a time (STRB_TRACE_WINDOW), so
 * processing never holds them all in their 112-byte working form, and no
 * longer reads or changes them through acts (strb_trace_get reads any).
 * strb_control_finish calls this once the CPU part is done, before the
 * device backends decode. */
void strb_trace_roll(struct strobe_trace *t);
/* Back to the working form whole, for a pass that changes activities
 * already encoded (the overlap pass, when work overlaps on a stream): 0 or
 * -ENOMEM (nothing changed). The encoded blocks' bytes in the trace's arena
 * stay there, unused, until the trace is destroyed. */
int strb_trace_unroll(struct strobe_trace *t);
/* A new zeroed activity slot (size set), or NULL. The pointer is valid
 * until the next call. */
struct strobe_activity *strb_trace_push(struct strobe_trace *t);
/* Makes src the trace's source of rendered args (once per trace: a second
 * source is refused with -EBUSY). The trace releases it when destroyed. */
int strb_trace_set_arg_source(struct strobe_trace *t, const struct strb_arg_source *src);
/* Marks the activity just pushed (the last one) to have its args rendered
 * from rec; its own args must be empty. */
int strb_trace_render_args(struct strobe_trace *t, const void *rec);
/* Encodes the activities into the compact store and frees the array they
 * were built in; the trace is read-only from then on. On -ENOMEM the trace
 * is left as it was (still whole, only larger) when it was not rolling; a
 * rolling trace that had encoded a part is then not readable as a whole,
 * and processing fails. */
int strb_trace_seal(struct strobe_trace *t);

/* One activity as a reader sees it: a points at it (into the trace, or at
 * tmp when it was decoded from the store); rec is the record its args
 * render from, or NULL. */
struct strb_act_ref {
	const struct strobe_activity *a;
	const void *rec;
	struct strobe_activity tmp;
};

void strb_trace_get_stored(const struct strobe_trace *t, size_t i, struct strb_act_ref *r);
/* Activity i of t (sealed or not) into r; r->a stays valid until r is
 * reused (and, while the trace is built, until the next push). Any number
 * of threads may read a sealed trace at once. */
static inline void strb_trace_get(const struct strobe_trace *t, size_t i, struct strb_act_ref *r)
{
	if (!t->store && i >= t->sealed) {
		r->a = &t->acts[i - t->sealed];
		r->rec = t->recs ? t->recs[i - t->sealed] : NULL;
		return;
	}
	strb_trace_get_stored(t, i, r);
}

enum strobe_activity_type strb_trace_type_stored(const struct strobe_trace *t, size_t i);
/* Activity i's type, for passes that look for a few types among them all. */
static inline enum strobe_activity_type strb_trace_type(const struct strobe_trace *t, size_t i)
{
	if (!t->store && i >= t->sealed)
		return t->acts[i - t->sealed].type;
	return strb_trace_type_stored(t, i);
}

/* The args of r's activity: its own, or rendered into s. */
size_t strb_trace_args(const struct strobe_trace *t, const struct strb_act_ref *r, struct strb_arg_scratch *s,
                       const struct strobe_arg **out);
/* Activity i into r and its args (its own, or rendered into s): what a
 * writer reads of each activity. */
static inline size_t strb_trace_get_args(const struct strobe_trace *t, size_t i, struct strb_act_ref *r,
                                         struct strb_arg_scratch *s, const struct strobe_arg **out)
{
	strb_trace_get(t, i, r);
	return strb_trace_args(t, r, s, out);
}
/* How many activities of this type the trace holds. */
size_t strb_trace_count_type(const struct strobe_trace *t, enum strobe_activity_type type);
/* Heap bytes the trace's activities take (array or store, record pointers,
 * public copies). */
size_t strb_trace_activity_bytes(const struct strobe_trace *t);
/* Deep copy of a caller's activity (name interned, args copied). */
int strb_trace_add_copy(struct strobe_trace *t, const struct strobe_activity *a);
/* Deep copy of args into the arena. */
struct strobe_arg *strb_trace_copy_args(struct strobe_trace *t, const struct strobe_arg *args, size_t n);
int strb_trace_add_resource(struct strobe_trace *t, const struct strobe_resource *r);
/* Adds or replaces a metadata entry (copied). */
int strb_trace_set_meta(struct strobe_trace *t, const struct strobe_arg *entry);

#endif

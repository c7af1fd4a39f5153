/*
 * strobe plug-ins: output writers chosen by URL protocol, and child
 * profilers that add their own activities to every trace. Included by
 * strobe.h; see there for the rules that hold for every function.
 *
 * A plug-in is a struct of function pointers whose first field is its size.
 * The registry keeps the caller's pointer (the struct must outlive the
 * registration) and tolerates structs from newer or older headers: members
 * beyond `size` are treated as absent.
 */
#ifndef STROBE_PLUGIN_H
#define STROBE_PLUGIN_H

#include "strobe/strobe.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Reading a trace (for writers)
 * ------------------------------------------------------------------------ */

enum strobe_resource_kind {
	STROBE_RESOURCE_PROCESS = 0, /* a JSON pid: process_name/labels/sort */
	STROBE_RESOURCE_THREAD = 1,  /* a host thread row */
	STROBE_RESOURCE_STREAM = 2,  /* a device stream row */
	STROBE_RESOURCE_ROW = 3,     /* any other named row */
};

/* A named row or process in the timeline. Handed out by the library with
 * its own size: check it before reading a field newer than your header. */
struct strobe_resource {
	size_t size;
	enum strobe_resource_kind kind;
	int64_t device;    /* JSON pid */
	int64_t resource;  /* JSON tid; 0 for processes */
	const char *name;  /* thread name, stream name or process name */
	const char *label; /* process label ("CPU", "GPU 0"), or NULL */
	int64_t sort_index;
};

/* One process or row; one metadata entry (key and typed value). Both run on
 * the thread that called the walking function, may block, and return 0 to
 * go on or anything else to stop the walk, as strobe_activity_cb. */
typedef int (*strobe_resource_cb)(const struct strobe_resource *resource, void *user_arg);
typedef int (*strobe_metadata_cb)(const struct strobe_arg *entry, void *user_arg);

/* Walks the processes and rows named in the trace. Same return rules as
 * strobe_trace_foreach. */
STROBE_API int strobe_trace_foreach_resource(const strobe_trace *trace, strobe_resource_cb cb,
                                             void *user_arg);

/* Walks the trace metadata: what strobe_metadata_set_* set, the host and
 * job keys, and strobe's accounting (object "strobe": version, clock,
 * drops, truncations, unfinished ranges). */
STROBE_API int strobe_trace_foreach_metadata(const strobe_trace *trace, strobe_metadata_cb cb,
                                             void *user_arg);

/* The capture window in epoch ns. Returns -EINVAL for NULL. */
STROBE_API int strobe_trace_window(const strobe_trace *trace, int64_t *start_ns, int64_t *end_ns);

/* ------------------------------------------------------------------------
 * Output writers
 * ------------------------------------------------------------------------ */

struct strobe_output_ops {
	size_t size; /* sizeof(struct strobe_output_ops) */
	/* Writes `trace` to `location`, the URL with "protocol://" removed.
	 * Called on the thread that called strobe_trace_save; may block.
	 * Returns 0 or a negative status, which strobe_trace_save returns. */
	int (*write)(const strobe_trace *trace, const char *location, void *user_arg);
};

/* Registers a writer for URLs "protocol://..." (protocol matched without
 * regard to case; letters, digits, '+', '-', '.'). Registering a protocol
 * again replaces the writer, with a warning; built-in protocols ("file")
 * can be replaced too. Errors: -EINVAL. */
STROBE_API int strobe_register_output(const char *protocol, const struct strobe_output_ops *ops,
                                      void *user_arg);
/* Removes a registered writer (a replaced built-in comes back).
 * Errors: -ENOENT. */
STROBE_API int strobe_unregister_output(const char *protocol);

/* ------------------------------------------------------------------------
 * Child profilers: plug-ins that collect their own activities during a
 * trace (custom devices, framework events) and hand them back at stop.
 * All callbacks are called on the thread driving the trace (the caller of
 * strobe_prepare/start/stop, or strobe's service thread for on-demand
 * traces), never concurrently; they may block briefly.
 * ------------------------------------------------------------------------ */

struct strobe_profiler_ops {
	size_t size;      /* sizeof(struct strobe_profiler_ops) */
	const char *name; /* for logs */
	/* Types it produces. It takes part in a trace only when at least one
	 * of them is selected; 0 means it always takes part. */
	uint64_t activity_mask;
	/* A trace is being prepared with these selected types and this
	 * effective config (KEY=VALUE lines). Return 0 to take part, 1 to sit
	 * this trace out, negative for an error (logged; it sits out). May be
	 * NULL. */
	int (*prepare)(uint64_t selected_mask, const char *config, void *user_arg);
	/* The capture window opens / closes. May be NULL. */
	int (*start)(void *user_arg);
	int (*stop)(void *user_arg);
	/* Hands back the activities collected in the window: call emit once per
	 * activity (it copies), before returning. Activities of types not
	 * selected are dropped. device 0 means this process. May be NULL. */
	int (*collect)(strobe_activity_cb emit, void *emit_arg, void *user_arg);
	/* strobe_toggle_collection() was called. May be NULL. */
	int (*toggle)(bool enable, void *user_arg);
};

/* Registers a child profiler; it takes part from the next prepared trace.
 * Errors: -EINVAL, -EEXIST (same ops and user_arg), -ENOSPC (32 at most). */
STROBE_API int strobe_register_profiler(const struct strobe_profiler_ops *ops, void *user_arg);
/* Removes it; a trace already prepared keeps using it until it ends.
 * Errors: -ENOENT. */
STROBE_API int strobe_unregister_profiler(const struct strobe_profiler_ops *ops, void *user_arg);

#ifdef __cplusplus
}
#endif

#endif /* STROBE_PLUGIN_H */

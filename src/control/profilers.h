/* Child profilers: the registry, and the set taking part in one trace. */
#ifndef STROBE_CONTROL_PROFILERS_H
#define STROBE_CONTROL_PROFILERS_H

#include "strobe/plugin.h"

#define STRB_MAX_PROFILERS 32

struct strb_profiler_ref {
	const struct strobe_profiler_ops *ops;
	void *user_arg;
};

/* Copied from the registry at prepare, so unregistering during a trace is
 * safe. */
struct strb_profiler_set {
	struct strb_profiler_ref items[STRB_MAX_PROFILERS];
	int count;
};

void strb_profilers_prepare(struct strb_profiler_set *set, uint64_t mask, const char *config_text);
void strb_profilers_start(struct strb_profiler_set *set);
void strb_profilers_stop(struct strb_profiler_set *set);
void strb_profilers_toggle(struct strb_profiler_set *set, bool enable);
/* Calls each collect with emit; returns the first negative emit status. */
int strb_profilers_collect(struct strb_profiler_set *set, strobe_activity_cb emit, void *emit_arg);
void strb_profilers_release(struct strb_profiler_set *set);
void strb_profilers_atfork_child(void);

#endif

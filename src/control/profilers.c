#define LOG_TAG "profilers"
#include "control/profilers.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/opts.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct strb_profiler_ref registry[STRB_MAX_PROFILERS];
static int registry_count;

/* True when the caller's struct has callback or member `m` and it is set. */
#define HAS(ops, m) (STRB_OPTS_GET(ops, m, NULL) != NULL)

int strobe_register_profiler(const struct strobe_profiler_ops *ops, void *user_arg)
{
	if (!STRB_OPTS_HAS(ops, activity_mask))
		return strb_error(-EINVAL,
		                  "strobe_register_profiler: ops is NULL or its size field is too small");
	int rc = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < registry_count; i++)
		if (registry[i].ops == ops && registry[i].user_arg == user_arg)
			rc = strb_error(-EEXIST, "strobe_register_profiler: already registered");
	if (!rc && registry_count == STRB_MAX_PROFILERS)
		rc = strb_error(-ENOSPC, "strobe_register_profiler: %d profilers are registered already",
		                STRB_MAX_PROFILERS);
	if (!rc)
		registry[registry_count++] = (struct strb_profiler_ref){ops, user_arg};
	pthread_mutex_unlock(&lock);
	return rc;
}

int strobe_unregister_profiler(const struct strobe_profiler_ops *ops, void *user_arg)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < registry_count; i++) {
		if (registry[i].ops == ops && registry[i].user_arg == user_arg) {
			memmove(&registry[i], &registry[i + 1],
			        (size_t)(registry_count - i - 1) * sizeof(registry[0]));
			registry_count--;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return rc ? strb_error(rc, "strobe_unregister_profiler: not registered") : 0;
}

static const char *name_of(const struct strobe_profiler_ops *ops)
{
	return HAS(ops, name) ? ops->name : "(unnamed)";
}

void strb_profilers_prepare(struct strb_profiler_set *set, uint64_t mask, const char *config_text)
{
	struct strb_profiler_ref all[STRB_MAX_PROFILERS];
	pthread_mutex_lock(&lock);
	int n = registry_count;
	memcpy(all, registry, sizeof(all[0]) * (size_t)n);
	pthread_mutex_unlock(&lock);

	set->count = 0;
	for (int i = 0; i < n; i++) {
		const struct strobe_profiler_ops *ops = all[i].ops;
		if (ops->activity_mask && !(ops->activity_mask & mask))
			continue;
		int rc = HAS(ops, prepare) ? ops->prepare(mask, config_text, all[i].user_arg) : 0;
		if (rc < 0)
			LOGW("child profiler %s failed to prepare (%s); it sits this trace out", name_of(ops),
			     strobe_status_string(rc));
		if (rc == 0)
			set->items[set->count++] = all[i];
	}
}

void strb_profilers_start(struct strb_profiler_set *set)
{
	for (int i = 0; i < set->count; i++) {
		const struct strobe_profiler_ops *ops = set->items[i].ops;
		if (HAS(ops, start) && ops->start(set->items[i].user_arg) < 0)
			LOGW("child profiler %s failed to start", name_of(ops));
	}
}

void strb_profilers_stop(struct strb_profiler_set *set)
{
	for (int i = 0; i < set->count; i++) {
		const struct strobe_profiler_ops *ops = set->items[i].ops;
		if (HAS(ops, stop) && ops->stop(set->items[i].user_arg) < 0)
			LOGW("child profiler %s failed to stop", name_of(ops));
	}
}

void strb_profilers_toggle(struct strb_profiler_set *set, bool enable)
{
	for (int i = 0; i < set->count; i++) {
		const struct strobe_profiler_ops *ops = set->items[i].ops;
		if (HAS(ops, toggle))
			ops->toggle(enable, set->items[i].user_arg);
	}
}

struct guarded_emit {
	strobe_activity_cb emit;
	void *arg;
	int rc;
};

/* The profiler's return value from emit is ignored by some plug-ins; keep
 * the first failure ourselves so it cannot be lost. */
static int guarded(const struct strobe_activity *a, void *arg)
{
	struct guarded_emit *g = arg;
	int rc = g->emit(a, g->arg);
	if (rc && !g->rc)
		g->rc = rc;
	return rc;
}

int strb_profilers_collect(struct strb_profiler_set *set, strobe_activity_cb emit, void *emit_arg)
{
	for (int i = 0; i < set->count; i++) {
		const struct strobe_profiler_ops *ops = set->items[i].ops;
		if (!HAS(ops, collect))
			continue;
		struct guarded_emit g = {emit, emit_arg, 0};
		int rc = ops->collect(guarded, &g, set->items[i].user_arg);
		if (rc < 0)
			LOGW("child profiler %s failed to hand back its activities (%s)", name_of(ops),
			     strobe_status_string(rc));
		if (g.rc < 0)
			return g.rc;
	}
	return 0;
}

void strb_profilers_release(struct strb_profiler_set *set)
{
	set->count = 0;
}

void strb_profilers_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
}

/* The trace-level parts of processing: process row, metadata, accounting,
 * activities handed back by child profilers. */
#define LOG_TAG "process"
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"
#include "common/opts.h"
#include "core/capture.h"
#include "core/clock.h"
#include "core/json_check.h"
#include "core/metadata.h"
#include "core/rank.h"
#include "process/process.h"

int strb_process_child_activity(struct strobe_trace *t, const struct strb_window *w,
                                const struct strobe_activity *a)
{
	/* Only what the caller's size covers is read; the rest stays zero. */
	struct strobe_activity copy;
	memset(&copy, 0, sizeof(copy));
	if (!STRB_OPTS_HAS(a, flow_kind)) {
		t->stats.rejected_activities++;
		return 0;
	}
	memcpy(&copy, a, a->size < sizeof(copy) ? a->size : sizeof(copy));
	if (!strobe_activity_type_name(copy.type) || copy.end_ns < copy.start_ns ||
	    (copy.arg_count && !copy.args) || (copy.category && strb_category_len(copy.category) < 0)) {
		t->stats.rejected_activities++;
		return 0;
	}
	for (size_t i = 0; i < copy.arg_count; i++) {
		const struct strobe_arg *arg = &copy.args[i];
		bool is_str = arg->kind == STROBE_ARG_STRING || arg->kind == STROBE_ARG_JSON;
		/* JSON goes into the file verbatim: it must parse. */
		if (!arg->key || (unsigned)arg->kind > STROBE_ARG_JSON || (is_str && !arg->value.str) ||
		    (arg->kind == STROBE_ARG_JSON && !strb_json_valid(arg->value.str))) {
			t->stats.rejected_activities++;
			return 0;
		}
	}
	if (!(w->mask & STROBE_ACTIVITY_BIT(copy.type)))
		return 0;
	copy.size = sizeof(copy);
	if (!copy.device)
		copy.device = t->pid;
	return strb_trace_add_copy(t, &copy);
}

/* /proc/self/cmdline's argv[0], reduced to its basename, as libkineto names
 * the CPU process. */
void strb_process_name(char *out, size_t len)
{
	snprintf(out, len, "%s", program_invocation_short_name);
	FILE *f = fopen("/proc/self/cmdline", "re");
	if (!f)
		return;
	char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	if (!n)
		return;
	const char *slash = strrchr(buf, '/');
	const char *base = slash ? slash + 1 : buf;
	size_t keep = strnlen(base, len - 1);
	memcpy(out, base, keep);
	out[keep] = 0;
}

static int copy_meta(const struct strobe_arg *entry, void *arg)
{
	return strb_trace_set_meta(arg, entry);
}

static int set_string(struct strobe_trace *t, const char *key, const char *value)
{
	struct strobe_arg e = {.key = key, .kind = STROBE_ARG_STRING, .value.str = value};
	return strb_trace_set_meta(t, &e);
}

int strb_process_finish(struct strobe_trace *t, const struct strb_window *w, const struct strb_config *cfg)
{
	/* After every backend and child profiler added its work. */
	int rc = strb_process_overlap(t);
	char name[256];
	strb_process_name(name, sizeof(name));
	struct strobe_resource proc = {
	    .size = sizeof(proc),
	    .kind = STROBE_RESOURCE_PROCESS,
	    .device = t->pid,
	    .name = name,
	    .label = "CPU",
	    .sort_index = t->pid,
	};
	rc |= strb_trace_add_resource(t, &proc);

	/* Environment first, then what the program set: its keys win. */
	static const char *const job_keys[] = {"PT_PROFILER_JOB_NAME", "PT_PROFILER_JOB_VERSION",
	                                       "PT_PROFILER_JOB_ATTEMPT_INDEX"};
	for (size_t i = 0; i < sizeof(job_keys) / sizeof(job_keys[0]); i++) {
		const char *v = getenv(job_keys[i]);
		if (v)
			rc |= set_string(t, job_keys[i], v);
	}
	char host[256];
	bool have_host = gethostname(host, sizeof(host)) == 0 && host[0];
	if (have_host) {
		host[sizeof(host) - 1] = 0;
		rc |= set_string(t, "host_name", host);
	}
	if (cfg && cfg->request_trace_id[0])
		rc |= set_string(t, "trace_id", cfg->request_trace_id);
	/* Before the program's keys: a "distributedInfo" it set replaces this
	 * one, as in libkineto. */
	char *dist = strb_rank_json(have_host ? host : NULL, t->device_properties);
	if (dist) {
		struct strobe_arg d = {.key = "distributedInfo", .kind = STROBE_ARG_JSON, .value.str = dist};
		rc |= strb_trace_set_meta(t, &d);
		free(dist);
	} else {
		rc = -ENOMEM;
	}
	strb_metadata_foreach(copy_meta, t);

	const struct strb_trace_stats *s = &t->stats;
	char stats[2048];
	snprintf(stats, sizeof(stats),
	         "{\"version\": \"%s\", \"clock\": \"%s\", \"dropped_events\": %" PRIu64
	         ", \"truncated_names\": %" PRIu64 ", \"unfinished_ranges\": %" PRIu64
	         ", \"unmatched_pops\": %" PRIu64 ", \"non_finite_counters\": %" PRIu64
	         ", \"out_of_window\": %" PRIu64 ", \"rejected_activities\": %" PRIu64
	         ", \"threads\": %" PRIu64 ", \"cpu_buffer_bytes\": %" PRIu64 "}",
	         STROBE_VERSION_STRING, strb_clock_name(), s->dropped_events, s->truncated_names,
	         s->unfinished_ranges, s->unmatched_pops, s->non_finite_counters, s->out_of_window,
	         s->rejected_activities, s->threads, s->buffer_bytes);
	if (s->gpu) {
		size_t n = strlen(stats) - 1; /* reopen the object */
		snprintf(stats + n, sizeof(stats) - n,
		         ", \"gpu_records\": %" PRIu64 ", \"gpu_out_of_window\": %" PRIu64
		         ", \"gpu_dropped_records\": %" PRIu64 ", \"gpu_rejected_buffers\": %" PRIu64
		         ", \"gpu_discarded_buffers\": %" PRIu64 ", \"gpu_warmup_records\": %" PRIu64
		         ", \"gpu_blocklisted\": %" PRIu64 ", \"gpu_invalid_external_correlations\": %" PRIu64
		         ", \"gpu_unmatched_correlations\": %" PRIu64 ", \"gpu_out_of_order\": %" PRIu64
		         ", \"gpu_unexpected_records\": %" PRIu64 ", \"gpu_incomplete_records\": %" PRIu64
		         ", \"gpu_paused_records\": %" PRIu64 ", \"gpu_bad_buffers\": %" PRIu64
		         ", \"gpu_launches\": %" PRIu64 ", \"gpu_launches_without_kernel\": %" PRIu64 "}",
		         s->gpu_records, s->gpu_out_of_window, s->gpu_dropped_records,
		         s->gpu_rejected_buffers, s->gpu_discarded_buffers, s->gpu_warmup_records,
		         s->gpu_blocklisted, s->gpu_invalid_external_correlations,
		         s->gpu_unmatched_correlations, s->gpu_out_of_order, s->gpu_unexpected_records,
		         s->gpu_incomplete_records, s->gpu_paused_records, s->gpu_bad_buffers,
		         s->gpu_launches, s->gpu_launches_without_kernel);
	}
	if (s->gpu_aged_buffers) {
		size_t n = strlen(stats) - 1;
		snprintf(stats + n, sizeof(stats) - n, ", \"gpu_aged_buffers\": %" PRIu64 "}",
		         s->gpu_aged_buffers);
	}
	if (s->gpu || s->gpu_overlap_moved) {
		/* Last, also for device work from a child profiler alone. */
		size_t n = strlen(stats) - 1;
		snprintf(stats + n, sizeof(stats) - n, ", \"gpu_overlap_moved\": %" PRIu64 "}",
		         s->gpu_overlap_moved);
	}
	struct strobe_arg e = {.key = "strobe", .kind = STROBE_ARG_JSON, .value.str = stats};
	rc |= strb_trace_set_meta(t, &e);
	if (s->dropped_events)
		LOGW("%" PRIu64
		     " CPU events were dropped: the buffer budget (ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB) "
		     "was exhausted",
		     s->dropped_events);
	(void)w;
	if (rc)
		return -ENOMEM;
	/* Done changing it: the compact form from here on. Without the memory
	 * to encode it the trace stays in its working form, whole, unless it
	 * was encoded in part as it was built. */
	bool rolled = t->sealed > 0;
	if (strb_trace_seal(t)) {
		if (rolled)
			return -ENOMEM;
		LOGW("out of memory compacting the trace: it keeps its larger working form");
	}
	return 0;
}

/* A strobe trace as a Perfetto protobuf trace (docs/output-format.md):
 * one track per process, thread, stream and named row, as the JSON names
 * them; slices as begin/end pairs, instants, counters on counter tracks,
 * flows, and the trace metadata as annotations of one instant. */
#define LOG_TAG "perfetto"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/pfenc.h"
#include "common/sink.h"
#include "core/tbuf.h"
#include "output/output.h"
#include "process/trace.h"

#define SPAN_NAME "strobe"

struct pwriter {
	struct strb_pfenc *e;
	const struct strobe_trace *t;
	struct strb_pfmap procs, rows, counters;
	struct strobe_arg *args; /* scratch: an activity's annotations */
	size_t args_cap;
	struct strb_arg_scratch rendered; /* rendered args of the activity being written */
	int err;
};

static void note(struct pwriter *w, int rc)
{
	if (rc && !w->err)
		w->err = rc;
}

static uint64_t process_track(struct pwriter *w, int64_t pid)
{
	uint64_t key = strb_pfmap_key(0, (uint64_t)pid);
	uint64_t uuid = strb_pfmap_get(&w->procs, key);
	if (!uuid) {
		uuid = strb_pfenc_uuid(w->e);
		note(w, strb_pfmap_put(&w->procs, key, uuid));
		strb_pfenc_process(w->e, uuid, pid, NULL, NULL, pid);
	}
	return uuid;
}

/* The track of a JSON (pid, tid) row; rows nobody named get one: a thread
 * of this process, or a row under its device. */
static uint64_t row_track(struct pwriter *w, int64_t pid, int64_t tid)
{
	uint64_t key = strb_pfmap_key((uint64_t)pid, (uint64_t)tid);
	uint64_t uuid = strb_pfmap_get(&w->rows, key);
	if (uuid)
		return uuid;
	uuid = strb_pfenc_uuid(w->e);
	note(w, strb_pfmap_put(&w->rows, key, uuid));
	if (pid == w->t->pid) {
		strb_pfenc_thread(w->e, uuid, pid, tid, NULL, tid);
	} else {
		char name[48];
		snprintf(name, sizeof(name), "row %lld", (long long)tid);
		strb_pfenc_track(w->e, uuid, process_track(w, pid), name);
	}
	return uuid;
}

/* A row's tid: libkineto's GPU rows are negative resources. */
static int64_t row_tid(int64_t resource)
{
	return resource >= 0 ? resource : resource == INT64_MIN ? INT64_MAX : -resource;
}

/* Each track is described once, the first time it is named or used:
 * processes before the rows under them (the caller's order), so no row
 * makes a nameless process that its name would have to describe again. */
static void resource(struct pwriter *w, const struct strobe_resource *r)
{
	int64_t tid = row_tid(r->resource);
	if (r->kind == STROBE_RESOURCE_PROCESS) {
		uint64_t key = strb_pfmap_key(0, (uint64_t)r->device);
		if (strb_pfmap_get(&w->procs, key))
			return;
		uint64_t uuid = strb_pfenc_uuid(w->e);
		note(w, strb_pfmap_put(&w->procs, key, uuid));
		strb_pfenc_process(w->e, uuid, r->device, r->name, r->label, r->sort_index);
		return;
	}
	uint64_t key = strb_pfmap_key((uint64_t)r->device, (uint64_t)tid);
	if (strb_pfmap_get(&w->rows, key))
		return;
	uint64_t uuid = strb_pfenc_uuid(w->e);
	note(w, strb_pfmap_put(&w->rows, key, uuid));
	if (r->kind == STROBE_RESOURCE_THREAD)
		strb_pfenc_thread(w->e, uuid, r->device, tid, r->name, r->sort_index);
	else
		strb_pfenc_track(w->e, uuid, process_track(w, r->device), r->name);
}

static struct strobe_arg *scratch_args(struct pwriter *w, size_t n)
{
	if (n > w->args_cap) {
		struct strobe_arg *na = realloc(w->args, n * sizeof(*na));
		if (!na) {
			note(w, -ENOMEM);
			return NULL;
		}
		w->args = na;
		w->args_cap = n;
	}
	return w->args;
}

static bool arg_number(const struct strobe_arg *a, double *v)
{
	switch (a->kind) {
	case STROBE_ARG_I64:
		*v = (double)a->value.i64;
		return true;
	case STROBE_ARG_U64:
		*v = (double)a->value.u64;
		return true;
	case STROBE_ARG_F64:
		*v = a->value.f64;
		return true;
	case STROBE_ARG_BOOL:
		*v = a->value.b;
		return true;
	default:
		return false;
	}
}

/* One counter track per (process, counter, series); a series named like
 * its counter (strobe_counter's) is just the counter's name. */
static void counter(struct pwriter *w, const struct strobe_activity *a, const struct strobe_arg *av,
                    size_t an)
{
	for (size_t i = 0; i < an; i++) {
		const struct strobe_arg *arg = &av[i];
		double v;
		if (!arg_number(arg, &v))
			continue;
		const char *key = arg->key ? arg->key : "";
		uint64_t ck = strb_pfmap_key(strb_pfmap_key((uint64_t)a->device, strb_pfmap_str(a->name)),
		                             strb_pfmap_str(key));
		uint64_t uuid = strb_pfmap_get(&w->counters, ck);
		if (!uuid) {
			uuid = strb_pfenc_uuid(w->e);
			note(w, strb_pfmap_put(&w->counters, ck, uuid));
			char name[STRB_NAME_MAX * 2 + 4];
			if (!*key || !strcmp(key, a->name))
				snprintf(name, sizeof(name), "%s", a->name);
			else
				snprintf(name, sizeof(name), "%s %s", a->name, key);
			strb_pfenc_counter_track(w->e, uuid, process_track(w, a->device), name,
			                         strobe_activity_type_name(a->type));
		}
		struct strb_pf_event ev = {
		    .type = STRB_PF_COUNTER, .track = uuid, .ts_ns = a->start_ns, .value = v};
		strb_pfenc_event(w->e, &ev);
	}
}

static void activity(struct pwriter *w, size_t idx)
{
	struct strb_act_ref r;
	strb_trace_get(w->t, idx, &r);
	const struct strobe_activity *a = r.a;
	const struct strobe_arg *av;
	size_t an = strb_trace_args(w->t, &r, &w->rendered, &av);
	if (strb_output_is_counter(a->type)) {
		counter(w, a, av, an);
		return;
	}
	struct strb_pf_event ev = {
	    .track = row_track(w, a->device, row_tid(a->resource)),
	    .ts_ns = a->start_ns,
	    .name = a->name,
	    .category = a->category ? a->category : strobe_activity_type_name(a->type),
	};
	if (a->type == STROBE_ACTIVITY_CPU_INSTANT_EVENT) {
		ev.type = STRB_PF_INSTANT;
		ev.args = av;
		ev.nargs = an;
		strb_pfenc_event(w->e, &ev);
		return;
	}
	uint64_t ext = strb_output_external_id(a);
	bool unfinished = a->flags & STROBE_ACTIVITY_UNFINISHED;
	const struct strobe_arg *args = av;
	size_t n = an;
	if (ext || unfinished) {
		struct strobe_arg *all = scratch_args(w, n + 2);
		if (!all)
			return;
		n = 0;
		if (ext)
			all[n++] = (struct strobe_arg){
			    .key = "External id", .kind = STROBE_ARG_U64, .value.u64 = ext};
		if (an)
			memcpy(all + n, av, an * sizeof(*all));
		n += an;
		if (unfinished)
			all[n++] =
			    (struct strobe_arg){.key = "finished", .kind = STROBE_ARG_BOOL, .value.b = false};
		args = all;
	}
	ev.type = STRB_PF_BEGIN;
	ev.args = args;
	ev.nargs = n;
	if (a->flow_id && (a->flow_kind == STROBE_FLOW_FWDBWD || a->flow_kind == STROBE_FLOW_ASYNC_CPU_GPU)) {
		uint64_t id = strb_output_flow_uuid(a->flow_id, a->flow_kind);
		if (a->flags & STROBE_ACTIVITY_FLOW_START)
			ev.flow_out = id;
		else
			ev.flow_in = id;
	}
	int64_t end = a->end_ns;
	if (a->type == STROBE_ACTIVITY_GPU_USER_ANNOTATION) {
		/* Widened as in the JSON, so it encloses its GPU work. */
		ev.ts_ns -= 1;
		end += 1;
	}
	strb_pfenc_event(w->e, &ev);
	struct strb_pf_event done = {
	    .type = STRB_PF_END, .track = ev.track, .ts_ns = end < ev.ts_ns ? ev.ts_ns : end};
	strb_pfenc_event(w->e, &done);
}

/* The metadata (strobe's accounting, host, job keys, what programs set)
 * and the device properties, as annotations of one instant at the start
 * of a "Trace metadata" track; the window's span beside it. */
static void metadata(struct pwriter *w)
{
	const struct strobe_trace *t = w->t;
	size_t n = t->meta_count + 1;
	struct strobe_arg *args = scratch_args(w, n);
	if (!args)
		return;
	if (t->meta_count)
		memcpy(args, t->meta, t->meta_count * sizeof(*args));
	n = t->meta_count;
	char *props = NULL;
	if (t->device_properties && *t->device_properties) {
		size_t len = strlen(t->device_properties);
		props = malloc(len + 3);
		if (props) {
			props[0] = '[';
			memcpy(props + 1, t->device_properties, len);
			memcpy(props + 1 + len, "]", 2);
			args[n++] = (struct strobe_arg){
			    .key = "deviceProperties", .kind = STROBE_ARG_JSON, .value.str = props};
		}
	}
	uint64_t track = strb_pfenc_metadata(w->e, t->start_ns, args, n);
	free(props);
	struct strb_pf_event ev = {
	    .type = STRB_PF_INSTANT, .track = track, .ts_ns = t->end_ns, .name = "Record Window End"};
	strb_pfenc_event(w->e, &ev);

	size_t ops = strb_trace_count_type(t, STROBE_ACTIVITY_CPU_OP);
	uint64_t spans = strb_pfenc_uuid(w->e);
	strb_pfenc_track(w->e, spans, 0, "Spans");
	struct strobe_arg op_count = {.key = "Op count", .kind = STROBE_ARG_U64, .value.u64 = ops};
	ev = (struct strb_pf_event){.type = STRB_PF_BEGIN,
	                            .track = spans,
	                            .ts_ns = t->start_ns,
	                            .name = SPAN_NAME " (0)",
	                            .category = "Trace",
	                            .args = &op_count,
	                            .nargs = 1};
	strb_pfenc_event(w->e, &ev);
	ev = (struct strb_pf_event){.type = STRB_PF_END, .track = spans, .ts_ns = t->end_ns};
	strb_pfenc_event(w->e, &ev);
}

int strb_perfetto_write(const strobe_trace *t, const char *path, void *user_arg)
{
	(void)user_arg;
	struct strb_sink *sink;
	int rc = strb_sink_open(&sink, path, STRB_COMPRESS_NONE, -1);
	return rc ? rc : strb_perfetto_write_sink(t, sink, path);
}

int strb_perfetto_write_sink(const strobe_trace *t, struct strb_sink *sink, const char *path)
{
	struct pwriter w = {.t = t};
	if (strb_pfenc_open(&w.e, sink, t->start_ns, true))
		return strb_error(-ENOMEM, "out of memory writing %s", path);
	metadata(&w);
	for (int procs = 1; procs >= 0; procs--)
		for (size_t i = 0; i < t->res_count; i++)
			if ((t->res[i].kind == STROBE_RESOURCE_PROCESS) == procs)
				resource(&w, &t->res[i]);
	for (size_t i = 0; i < t->count && !w.err; i++)
		activity(&w, i);
	int rc = w.err;
	if (!rc)
		rc = strb_pfenc_error(w.e);
	if (rc) {
		strb_pfenc_abort(w.e);
		if (rc == -ENOMEM)
			rc = strb_error(rc, "out of memory writing %s", path);
	} else {
		rc = strb_pfenc_finish(w.e);
	}
	strb_pfmap_free(&w.procs);
	strb_pfmap_free(&w.rows);
	strb_pfmap_free(&w.counters);
	free(w.args);
	if (!rc)
		LOGI("trace written to %s", path);
	return rc;
}

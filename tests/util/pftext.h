/* Reading a Perfetto trace in tests: protoc decodes the file with
 * proto/strobe_perfetto.proto into text format, and this turns that text
 * into packets with their interned names resolved. Header-only: include it
 * in one test file. */
#ifndef STROBE_TEST_PFTEXT_H
#define STROBE_TEST_PFTEXT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define PF_PROTO STROBE_TEST_DATA_DIR "/../../proto/strobe_perfetto.proto"
#define PF_STR   512
#define PF_ANN   40

struct pf_ann {
	char key[PF_STR];
	uint64_t key_iid, value_iid;
	char kind[32]; /* "int_value", "string_value", ... */
	char value[PF_STR];
};

struct pf_packet {
	bool has_ts;
	uint64_t ts;     /* on the sequence's clock (deltas summed), or in clock_id */
	uint64_t raw_ts; /* as written: a delta on an incremental clock */
	unsigned clock_id;
	unsigned seq_id, flags;
	bool first_on_seq, has_defaults;
	unsigned default_clock;
	uint64_t default_track; /* track_event_defaults */
	/* clock snapshot */
	bool has_clock;
	uint64_t realtime, seq_clock;
	bool has_seq_clock, seq_incremental;
	unsigned primary_clock;
	/* track event */
	bool has_te;
	char type[32];
	uint64_t track; /* the default track's when the event names none */
	bool has_track;
	uint64_t name_iid, cat_iid;
	char name[PF_STR], cat[PF_STR];
	uint64_t flow_out, flow_in;
	bool has_counter;
	double counter;
	unsigned nann;
	struct pf_ann ann[PF_ANN];
	/* track descriptor */
	bool has_td;
	uint64_t uuid, parent;
	char td_name[PF_STR];
	bool is_process, is_thread, is_counter;
	long long pid, tid, sort;
	char pname[PF_STR], tname[PF_STR], label[PF_STR];
};

struct pf_intern {
	int table; /* 0 categories, 1 names, 2 annotation names, 3 string values */
	uint64_t iid;
	char name[PF_STR];
};

struct pf_trace {
	struct pf_packet *p;
	size_t n, cap;
	struct pf_intern *in;
	size_t nin, capin;
	unsigned unresolved; /* iids used but never defined before use */
	/* Each sequence's state while loading (by id, 1 to 3). */
	uint64_t default_track[4], seq_now[4];
	bool seq_incremental[4];
};

static void pf_unescape(char *dst, const char *src)
{
	/* src starts after the opening quote; stops at the closing one. */
	size_t k = 0;
	for (const char *s = src; *s && *s != '"' && k < PF_STR - 1; s++) {
		if (*s != '\\') {
			dst[k++] = *s;
			continue;
		}
		s++;
		if (*s >= '0' && *s <= '7') {
			int v = 0;
			for (int i = 0; i < 3 && *s >= '0' && *s <= '7'; i++, s++)
				v = v * 8 + (*s - '0');
			s--;
			dst[k++] = (char)v;
		} else if (*s == 'n') {
			dst[k++] = '\n';
		} else if (*s == 't') {
			dst[k++] = '\t';
		} else if (*s) {
			dst[k++] = *s;
		} else {
			break;
		}
	}
	dst[k] = 0;
}

static const char *pf_lookup(struct pf_trace *t, int table, uint64_t iid)
{
	/* The latest definition wins: iids restart when state is cleared. */
	for (size_t i = t->nin; i-- > 0;)
		if (t->in[i].table == table && t->in[i].iid == iid)
			return t->in[i].name;
	t->unresolved++;
	return "";
}

static void pf_resolve(struct pf_trace *t, struct pf_packet *p)
{
	if (p->has_te) {
		if (p->name_iid)
			snprintf(p->name, sizeof(p->name), "%s", pf_lookup(t, 1, p->name_iid));
		if (p->cat_iid)
			snprintf(p->cat, sizeof(p->cat), "%s", pf_lookup(t, 0, p->cat_iid));
		for (unsigned i = 0; i < p->nann; i++) {
			if (p->ann[i].key_iid)
				snprintf(p->ann[i].key, sizeof(p->ann[i].key), "%s",
				         pf_lookup(t, 2, p->ann[i].key_iid));
			if (p->ann[i].value_iid)
				snprintf(p->ann[i].value, sizeof(p->ann[i].value), "%s",
				         pf_lookup(t, 3, p->ann[i].value_iid));
		}
		if (!p->has_track)
			p->track = t->default_track[p->seq_id & 3];
	}
	/* Time: a snapshot sets the sequence's clock; an incremental clock's
	 * packets add their delta to it. */
	unsigned q = p->seq_id & 3;
	if (p->has_clock) {
		t->seq_now[q] = p->seq_clock;
		t->seq_incremental[q] = p->seq_incremental;
	} else if (p->has_ts && !p->clock_id) {
		t->seq_now[q] = t->seq_incremental[q] ? t->seq_now[q] + p->raw_ts : p->raw_ts;
		p->ts = t->seq_now[q];
	}
}

/* Decodes path; fails the test when protoc fails. */
static void pf_load(struct pf_trace *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	char cmd[8192];
	snprintf(cmd, sizeof(cmd),
	         "protoc --proto_path=%s/../../proto --decode=perfetto.protos.Trace %s < '%.4000s'",
	         STROBE_TEST_DATA_DIR, PF_PROTO, path);
	char *out = NULL;
	int rc = tu_run(cmd, 0, &out);
	if (rc)
		fprintf(stderr, "%s\n", out ? out : "");
	assert_int_equal(rc, 0);
	char stack[8][48];
	int depth = 0;
	struct pf_packet *p = NULL;
	struct pf_intern pending = {0};
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		while (*line == ' ')
			line++;
		size_t len = strlen(line);
		if (len >= 2 && line[len - 1] == '{') {
			line[len - 2] = 0;
			if (depth < 8)
				snprintf(stack[depth], sizeof(stack[0]), "%s", line);
			depth++;
			if (depth == 1 && !strcmp(line, "packet")) {
				if (t->n == t->cap) {
					t->cap = t->cap ? t->cap * 2 : 256;
					t->p = realloc(t->p, t->cap * sizeof(*t->p));
				}
				p = &t->p[t->n++];
				memset(p, 0, sizeof(*p));
			} else if (p && depth == 2 && !strcmp(line, "clock_snapshot")) {
				p->has_clock = true;
			} else if (p && depth == 3 && !strcmp(stack[1], "interned_data")) {
				memset(&pending, 0, sizeof(pending));
				pending.table = !strcmp(line, "event_categories")         ? 0
				                : !strcmp(line, "event_names")            ? 1
				                : !strcmp(line, "debug_annotation_names") ? 2
				                                                          : 3;
			} else if (p && depth == 3 && !strcmp(stack[1], "track_event") &&
			           !strcmp(line, "debug_annotations")) {
				if (p->nann < PF_ANN)
					memset(&p->ann[p->nann++], 0, sizeof(p->ann[0]));
			} else if (p && depth == 3 && !strcmp(stack[1], "track_descriptor")) {
				p->is_process |= !strcmp(line, "process");
				p->is_thread |= !strcmp(line, "thread");
				p->is_counter |= !strcmp(line, "counter");
			}
			continue;
		}
		if (!strcmp(line, "}")) {
			if (p && depth == 3 && !strcmp(stack[1], "interned_data")) {
				if (t->nin == t->capin) {
					t->capin = t->capin ? t->capin * 2 : 256;
					t->in = realloc(t->in, t->capin * sizeof(*t->in));
				}
				t->in[t->nin++] = pending;
			}
			if (depth == 1 && p) {
				if (p->has_defaults)
					t->default_track[p->seq_id & 3] = p->default_track;
				pf_resolve(t, p);
			}
			depth--;
			continue;
		}
		char *colon = strstr(line, ": ");
		if (!colon || !p)
			continue;
		*colon = 0;
		const char *k = line, *v = colon + 2;
		char str[PF_STR] = "";
		if (*v == '"')
			pf_unescape(str, v + 1);
		unsigned long long u = strtoull(v, NULL, 0);
		if (depth == 1) {
			if (!strcmp(k, "timestamp"))
				p->has_ts = true, p->ts = p->raw_ts = u;
			else if (!strcmp(k, "timestamp_clock_id"))
				p->clock_id = (unsigned)u;
			else if (!strcmp(k, "trusted_packet_sequence_id"))
				p->seq_id = (unsigned)u;
			else if (!strcmp(k, "sequence_flags"))
				p->flags = (unsigned)u;
			else if (!strcmp(k, "first_packet_on_sequence"))
				p->first_on_seq = !strcmp(v, "true");
		} else if (depth == 2 && !strcmp(stack[1], "trace_packet_defaults")) {
			p->has_defaults = true;
			if (!strcmp(k, "timestamp_clock_id"))
				p->default_clock = (unsigned)u;
		} else if (depth == 3 && !strcmp(stack[1], "trace_packet_defaults")) {
			if (!strcmp(k, "track_uuid"))
				p->default_track = u;
		} else if (depth == 2 && !strcmp(stack[1], "clock_snapshot")) {
			if (!strcmp(k, "primary_trace_clock"))
				p->primary_clock = !strcmp(v, "BUILTIN_CLOCK_REALTIME") ? 1 : 99;
		} else if (depth == 3 && !strcmp(stack[1], "clock_snapshot")) {
			static unsigned long long last_id;
			if (!strcmp(k, "clock_id"))
				last_id = u;
			else if (!strcmp(k, "timestamp") && last_id == 1)
				p->realtime = u;
			else if (!strcmp(k, "timestamp") && last_id == 64)
				p->has_seq_clock = true, p->seq_clock = u;
			else if (!strcmp(k, "is_incremental") && last_id == 64)
				p->seq_incremental = !strcmp(v, "true");
		} else if (depth == 2 && !strcmp(stack[1], "track_event")) {
			p->has_te = true;
			if (!strcmp(k, "type"))
				snprintf(p->type, sizeof(p->type), "%s", v);
			else if (!strcmp(k, "track_uuid"))
				p->track = u, p->has_track = true;
			else if (!strcmp(k, "name_iid"))
				p->name_iid = u;
			else if (!strcmp(k, "name"))
				snprintf(p->name, sizeof(p->name), "%s", str);
			else if (!strcmp(k, "category_iids"))
				p->cat_iid = u;
			else if (!strcmp(k, "categories"))
				snprintf(p->cat, sizeof(p->cat), "%s", str);
			else if (!strcmp(k, "flow_ids"))
				p->flow_out = u;
			else if (!strcmp(k, "terminating_flow_ids"))
				p->flow_in = u;
			else if (!strcmp(k, "counter_value") || !strcmp(k, "double_counter_value"))
				p->has_counter = true, p->counter = strtod(v, NULL);
		} else if (depth == 3 && !strcmp(stack[1], "track_event") && p->nann) {
			struct pf_ann *a = &p->ann[p->nann - 1];
			if (!strcmp(k, "name_iid")) {
				a->key_iid = u;
			} else if (!strcmp(k, "name")) {
				snprintf(a->key, sizeof(a->key), "%s", str);
			} else if (!strcmp(k, "string_value_iid")) {
				a->value_iid = u;
				snprintf(a->kind, sizeof(a->kind), "string_value");
			} else {
				snprintf(a->kind, sizeof(a->kind), "%s", k);
				snprintf(a->value, sizeof(a->value), "%s", *v == '"' ? str : v);
			}
		} else if (depth == 3 && !strcmp(stack[1], "interned_data")) {
			if (!strcmp(k, "iid"))
				pending.iid = u;
			else if (!strcmp(k, "name") || !strcmp(k, "str"))
				snprintf(pending.name, sizeof(pending.name), "%s", str);
		} else if (depth == 2 && !strcmp(stack[1], "track_descriptor")) {
			p->has_td = true;
			if (!strcmp(k, "uuid"))
				p->uuid = u;
			else if (!strcmp(k, "parent_uuid"))
				p->parent = u;
			else if (!strcmp(k, "name"))
				snprintf(p->td_name, sizeof(p->td_name), "%s", str);
		} else if (depth == 3 && !strcmp(stack[1], "track_descriptor")) {
			long long sv = strtoll(v, NULL, 0);
			if (!strcmp(k, "pid"))
				p->pid = sv;
			else if (!strcmp(k, "tid"))
				p->tid = sv;
			else if (!strcmp(k, "legacy_sort_index"))
				p->sort = sv;
			else if (!strcmp(k, "process_name"))
				snprintf(p->pname, sizeof(p->pname), "%s", str);
			else if (!strcmp(k, "thread_name"))
				snprintf(p->tname, sizeof(p->tname), "%s", str);
			else if (!strcmp(k, "process_labels"))
				snprintf(p->label, sizeof(p->label), "%s", str);
		}
	}
	free(out);
}

static void pf_free(struct pf_trace *t)
{
	free(t->p);
	free(t->in);
	memset(t, 0, sizeof(*t));
}

/* Counts track events of a type ("TYPE_SLICE_BEGIN") and, if name is not
 * NULL, of that name. */
static size_t pf_count(const struct pf_trace *t, const char *type, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++)
		n += t->p[i].has_te && !strcmp(t->p[i].type, type) && (!name || !strcmp(t->p[i].name, name));
	return n;
}

/* The last descriptor of a track, or NULL. */
static const struct pf_packet *pf_track(const struct pf_trace *t, uint64_t uuid)
{
	for (size_t i = t->n; i-- > 0;)
		if (t->p[i].has_td && t->p[i].uuid == uuid)
			return &t->p[i];
	return NULL;
}

static const struct pf_ann *pf_ann(const struct pf_packet *p, const char *key)
{
	for (unsigned i = 0; i < p->nann; i++)
		if (!strcmp(p->ann[i].key, key))
			return &p->ann[i];
	return NULL;
}

/* Checks that each track is described once, before any event on it (a
 * reader never sees a row change its name). */
static void pf_check_described_once(const struct pf_trace *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct pf_packet *p = &t->p[i];
		if (!p->has_td)
			continue;
		for (size_t j = 0; j < i; j++) {
			const struct pf_packet *q = &t->p[j];
			if (q->has_td && q->uuid == p->uuid)
				fail_msg("track %llu is described twice (packets %zu and %zu)",
				         (unsigned long long)p->uuid, j, i);
			if (q->has_te && q->track == p->uuid)
				fail_msg(
				    "track %llu has an event (packet %zu) before its descriptor (packet %zu)",
				    (unsigned long long)p->uuid, j, i);
		}
	}
}

/* Checks what every strobe Perfetto file must have: the clock snapshot
 * first, a sequence (and one more for a counter track) whose flags only
 * clear its state (with a clock
 * snapshot; no packet needs to say it needs the state), each track described once
 * before its events, slices paired per track, every interned id defined
 * and, with flows_paired, every flow started once and ended once. */
static void pf_check_structure(const struct pf_trace *t, bool flows_paired)
{
	pf_check_described_once(t);
	assert_true(t->n > 0);
	const struct pf_packet *first = &t->p[0];
	assert_true(first->has_clock);
	assert_true(first->first_on_seq);
	assert_int_equal(first->flags, 1);
	assert_true(first->has_defaults);
	assert_int_equal(first->default_clock, 64);
	assert_true(first->has_seq_clock);
	assert_int_equal(first->primary_clock, 1);
	size_t begins = 0, ends = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct pf_packet *p = &t->p[i];
		assert_true(p->seq_id == 1 || p->seq_id == 2); /* 2: a counter track's samples */
		if (i)
			assert_true(p->flags == 0 || (p->has_clock && p->flags == 1));
		if (!p->has_te)
			continue;
		assert_non_null(pf_track(t, p->track));
		begins += !strcmp(p->type, "TYPE_SLICE_BEGIN");
		ends += !strcmp(p->type, "TYPE_SLICE_END");
		if (p->flow_out && flows_paired) {
			size_t ins = 0, outs = 0;
			for (size_t j = 0; j < t->n; j++) {
				ins += t->p[j].flow_in == p->flow_out;
				outs += t->p[j].flow_out == p->flow_out;
			}
			if (ins != 1 || outs != 1)
				fprintf(stderr, "flow %llu: %zu starts, %zu ends\n",
				        (unsigned long long)p->flow_out, outs, ins);
			assert_int_equal(outs, 1);
			assert_int_equal(ins, 1);
		}
	}
	assert_int_equal(begins, ends);
	assert_int_equal(t->unresolved, 0);
}

#endif

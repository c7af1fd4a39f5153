/* Chrome-trace JSON from reader events: see chrome_json.h. */
#include "write/chrome_json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/jbuf.h"
#include "common/sink.h"

int cj_open(struct cj_writer *w, const char *path)
{
	*w = (struct cj_writer){0};
	int rc = strb_sink_open(&w->sink, path, strb_compress_for_path(path), -1);
	if (rc)
		return rc;
	w->b = strb_jbuf_new(w->sink);
	if (!w->b) {
		strb_sink_abort(w->sink);
		w->sink = NULL;
		return strb_error(-ENOMEM, "out of memory writing %s", path);
	}
	return 0;
}

static void sep(struct cj_writer *w)
{
	if (!w->first)
		strb_jbuf_lit(w->b, ",\n");
	w->first = false;
}

static void events_begin(struct cj_writer *w)
{
	if (w->state == 2)
		return;
	if (w->state == 0)
		strb_jbuf_lit(w->b, "{\n");
	else
		sep(w);
	strb_jbuf_lit(w->b, "  \"traceEvents\": [\n");
	w->state = 2;
	w->first = true;
}

static void events_end(struct cj_writer *w)
{
	events_begin(w);
	strb_jbuf_lit(w->b, "\n  ]");
	w->state = 3;
	w->first = false;
}

struct strb_jbuf *cj_member_begin(struct cj_writer *w, const char *key)
{
	if (w->state == 2)
		events_end(w);
	if (w->state == 0) {
		strb_jbuf_lit(w->b, "{\n");
		w->state = 1;
		w->first = true;
	}
	sep(w);
	strb_jbuf_lit(w->b, "  ");
	strb_jbuf_str(w->b, key);
	strb_jbuf_lit(w->b, ": ");
	return w->b;
}

/* What is left of a cut string's JSON text ("abc\u00 without its end):
 * the string, shorter, without an escape that lost its end. */
static void cut_string(struct strb_jbuf *b, const char *json, size_t len)
{
	size_t keep = 1;
	for (size_t i = 1; i < len && json[i] != '"';) {
		size_t step = json[i] != '\\' ? 1 : json[i + 1] == 'u' ? 6 : 2;
		if (i + step > len)
			break;
		i += step;
		keep = i;
	}
	strb_jbuf_raw(b, json, keep);
	strb_jbuf_raw(b, "\"", 1);
}

/* A value as the reader kept it: its JSON text, or what is left of a cut
 * one, which is no longer JSON: a string shortened, anything else (an
 * object, an array) as the string of its text. */
static void value(struct cj_writer *w, const char *json, size_t len, bool truncated)
{
	if (!truncated) {
		strb_jbuf_raw(w->b, json, len);
		return;
	}
	w->cut_values++;
	if (json[0] == '"')
		cut_string(w->b, json, len);
	else
		strb_jbuf_str(w->b, json);
}

void cj_member(struct cj_writer *w, const char *key, const char *json, size_t len, bool truncated)
{
	cj_member_begin(w, key);
	value(w, json, len, truncated);
}

void cj_time(struct strb_jbuf *b, int64_t ns)
{
	if (ns >= 0) {
		strb_jbuf_us(b, ns);
	} else if (ns == INT64_MIN) {
		strb_jbuf_lit(b, "-9223372036854775.808");
	} else {
		strb_jbuf_raw(b, "-", 1);
		strb_jbuf_us(b, -ns);
	}
}

static void key(struct strb_jbuf *b, const char *k)
{
	strb_jbuf_lit(b, ", \"");
	strb_jbuf_lit(b, k);
	strb_jbuf_lit(b, "\": ");
}

static void ident(struct strb_jbuf *b, const char *k, const struct tr_ident *id)
{
	if (id->kind == TR_ABSENT)
		return;
	key(b, k);
	if (id->kind == TR_NUMBER)
		strb_jbuf_lit(b, id->text);
	else
		strb_jbuf_str(b, id->text);
}

static void id_member(struct strb_jbuf *b, const struct tr_ident *id, const struct cj_edit *e)
{
	if (!e || id->kind == TR_ABSENT) {
		ident(b, "id", id);
	} else if (id->kind == TR_NUMBER && id->is_int) {
		key(b, "id");
		strb_jbuf_i64(b, (int64_t)((uint64_t)id->num + e->id_shift));
	} else if (e->id_prefix) {
		/* Ids that are not integers stay apart by a prefix. */
		char text[TR_SHORT_MAX + 64];
		snprintf(text, sizeof(text), "%s%s", e->id_prefix, id->text);
		key(b, "id");
		strb_jbuf_str(b, text);
	} else {
		ident(b, "id", id);
	}
}

static void pair(struct cj_writer *w, const struct tr_pair *p)
{
	strb_jbuf_str(w->b, p->key);
	strb_jbuf_lit(w->b, ": ");
	value(w, p->value, strlen(p->value), p->truncated);
}

void cj_event(struct cj_writer *w, const struct tr_event *ev, const struct cj_edit *e)
{
	struct strb_jbuf *b = w->b;
	events_begin(w);
	sep(w);
	strb_jbuf_lit(b, "{\"ph\": ");
	strb_jbuf_str(b, ev->ph);
	if (ev->cat[0]) {
		strb_jbuf_lit(b, ", \"cat\": ");
		strb_jbuf_str(b, ev->cat);
	}
	strb_jbuf_lit(b, ", \"name\": ");
	strb_jbuf_str(b, ev->name);
	if (e && e->set_pid) {
		key(b, "pid");
		strb_jbuf_i64(b, e->pid);
	} else {
		ident(b, "pid", &ev->pid);
	}
	ident(b, "tid", &ev->tid);
	if (ev->has_ts) {
		int64_t ts;
		if (__builtin_add_overflow(ev->ts_ns, e ? e->ts_shift_ns : 0, &ts))
			ts = ev->ts_ns < 0 ? INT64_MIN : INT64_MAX;
		key(b, "ts");
		cj_time(b, ts);
	}
	if (ev->has_dur) {
		key(b, "dur");
		cj_time(b, ev->dur_ns);
	}
	id_member(b, &ev->id, e);
	for (unsigned i = 0; i < ev->nextra; i++) {
		strb_jbuf_lit(b, ", ");
		pair(w, &ev->extra[i]);
	}
	if (ev->nargs || !strcmp(ev->ph, "C") || !strcmp(ev->ph, "M")) {
		strb_jbuf_lit(b, ", \"args\": {");
		for (unsigned i = 0; i < ev->nargs; i++) {
			if (i)
				strb_jbuf_lit(b, ", ");
			pair(w, &ev->args[i]);
		}
		strb_jbuf_lit(b, "}");
	}
	strb_jbuf_lit(b, "}");
	w->events++;
}

void cj_meta(struct cj_writer *w, const char *what, int64_t pid, const char *k, const char *str, int64_t num)
{
	struct strb_jbuf *b = w->b;
	events_begin(w);
	sep(w);
	strb_jbuf_lit(b, "{\"ph\": \"M\", \"name\": ");
	strb_jbuf_str(b, what);
	strb_jbuf_lit(b, ", \"ts\": 0, \"pid\": ");
	strb_jbuf_i64(b, pid);
	strb_jbuf_lit(b, ", \"tid\": 0, \"args\": {");
	strb_jbuf_str(b, k);
	strb_jbuf_lit(b, ": ");
	if (str)
		strb_jbuf_str(b, str);
	else
		strb_jbuf_i64(b, num);
	strb_jbuf_lit(b, "}}");
	w->events++;
}

int cj_finish(struct cj_writer *w)
{
	if (w->state < 3)
		events_end(w);
	strb_jbuf_lit(w->b, "\n}\n");
	strb_jbuf_flush(w->b);
	int rc = w->b->err;
	if (rc)
		strb_sink_abort(w->sink);
	else
		rc = strb_sink_commit(w->sink);
	w->sink = NULL;
	free(w->b);
	w->b = NULL;
	return rc;
}

void cj_abort(struct cj_writer *w)
{
	strb_sink_abort(w->sink);
	w->sink = NULL;
	free(w->b);
	w->b = NULL;
}

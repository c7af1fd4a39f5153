/* Perfetto protobuf from reader events: see perfetto_out.h. */
#include "write/perfetto_out.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/pfenc.h"
#include "common/sink.h"
#include "strobe/strobe.h"

#define META_MAX_BYTES (16u << 20) /* top-level members kept for the metadata */
#define ARENA_SIZE     (TR_ARGS_MAX * TR_VALUE_MAX + TR_NAME_MAX + 2 * TR_SHORT_MAX + 64)

/* An "X" event's contents converted for Perfetto, kept until the next
 * event says whether a flow binds to it. Strings live in arena. */
struct slice {
	bool active;
	uint64_t track;
	int64_t ts, end;
	uint64_t row; /* pid/tid key, to bind flows */
	const char *name, *cat;
	struct strobe_arg args[TR_ARGS_MAX];
	size_t nargs;
	uint64_t flow_out, flow_in;
	char arena[ARENA_SIZE];
	size_t used;
};

/* A process (a numeric JSON pid) or a thread (a numeric pid and tid): what
 * the first pass learnt of it, and its track once described. */
struct row {
	uint64_t uuid; /* 0 until described */
	int64_t pid, tid, sort;
	char name[TR_SHORT_MAX];
	char label[TR_SHORT_MAX]; /* processes only */
};

struct member {
	char *key, *json;
	bool truncated;
};

struct pfo {
	struct strb_sink *sink; /* until the encoder takes it */
	struct strb_pfenc *pf;
	int err;
	struct pfo_stats st;
	int64_t base;
	struct strb_pfmap procs, rows, counters; /* key -> uuid */
	struct strb_pfmap row_idx;               /* process or thread key -> index + 1 */
	struct row *rowv;
	size_t nrow, caprow;
	struct member *members;
	size_t nmembers, capmembers, member_bytes;
	struct slice *slot[2]; /* [0] pending, [1] being filled */
};

static int oom(struct pfo *c)
{
	if (!c->err)
		c->err = -ENOMEM;
	return c->err;
}

/* ---- JSON values into typed args --------------------------------------- */

static char *arena_take(struct slice *s, size_t n)
{
	if (s->used + n > sizeof(s->arena))
		return NULL;
	char *p = s->arena + s->used;
	s->used += n;
	return p;
}

static void put_utf8(char *d, size_t *k, unsigned cp)
{
	if (cp < 0x80) {
		d[(*k)++] = (char)cp;
	} else if (cp < 0x800) {
		d[(*k)++] = (char)(0xc0 | cp >> 6);
		d[(*k)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		d[(*k)++] = (char)(0xe0 | cp >> 12);
		d[(*k)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		d[(*k)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		d[(*k)++] = (char)(0xf0 | cp >> 18);
		d[(*k)++] = (char)(0x80 | (cp >> 12 & 0x3f));
		d[(*k)++] = (char)(0x80 | (cp >> 6 & 0x3f));
		d[(*k)++] = (char)(0x80 | (cp & 0x3f));
	}
}

static unsigned hex4(const char *s)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char ch = s[i];
		v = v * 16 + (unsigned)(ch >= '0' && ch <= '9'   ? ch - '0'
		                        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		                        : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
		                                                 : 0);
	}
	return v;
}

/* The text of a JSON string literal (as the reader kept it: compact, valid),
 * unescaped into d (at least len bytes). */
static void unescape(char *d, const char *s, size_t len)
{
	size_t k = 0;
	const char *e = s + len - 1; /* the closing quote */
	for (s++; s < e; s++) {
		if (*s != '\\') {
			d[k++] = *s;
			continue;
		}
		s++;
		switch (*s) {
		case 'n':
			d[k++] = '\n';
			break;
		case 't':
			d[k++] = '\t';
			break;
		case 'r':
			d[k++] = '\r';
			break;
		case 'b':
			d[k++] = '\b';
			break;
		case 'f':
			d[k++] = '\f';
			break;
		case 'u': {
			if (e - s < 5)
				break;
			unsigned cp = hex4(s + 1);
			s += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && e - s >= 7 && s[1] == '\\' && s[2] == 'u') {
				unsigned lo = hex4(s + 3);
				if (lo >= 0xdc00 && lo < 0xe000) {
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
					s += 6;
				}
			}
			put_utf8(d, &k, cp);
			break;
		}
		default:
			d[k++] = *s;
			break;
		}
	}
	d[k] = 0;
}

static bool non_finite_word(const char *s, double *v)
{
	static const struct {
		const char *w;
		double v;
	} words[] = {{"nan", NAN},
	             {"-nan", NAN},
	             {"NaN", NAN},
	             {"inf", INFINITY},
	             {"Infinity", INFINITY},
	             {"-inf", -INFINITY},
	             {"-Infinity", -INFINITY}};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!strcmp(s, words[i].w)) {
			*v = words[i].v;
			return true;
		}
	}
	return false;
}

/* One arg's JSON text as a typed arg whose strings live in s's arena. */
static bool to_arg(struct pfo *c, struct slice *s, const struct tr_pair *p, struct strobe_arg *a)
{
	size_t klen = strlen(p->key), vlen = strlen(p->value);
	char *key = arena_take(s, klen + 1);
	char *val = arena_take(s, vlen + 1);
	if (!key || !val)
		return false;
	memcpy(key, p->key, klen + 1);
	a->key = key;
	const char *v = p->value;
	if (p->truncated) {
		/* Only a prefix survived the reader's limit: keep it as text. */
		c->st.cut_values++;
		memcpy(val, v, vlen + 1);
		a->kind = STROBE_ARG_STRING;
		a->value.str = val;
	} else if (v[0] == '"') {
		unescape(val, v, vlen);
		a->kind = STROBE_ARG_STRING;
		a->value.str = val;
	} else if (!strcmp(v, "true") || !strcmp(v, "false")) {
		a->kind = STROBE_ARG_BOOL;
		a->value.b = v[0] == 't';
	} else if (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		char *end;
		errno = 0;
		if (!strpbrk(v, ".eE")) {
			if (v[0] == '-') {
				long long x = strtoll(v, &end, 10);
				a->kind = STROBE_ARG_I64, a->value.i64 = x;
			} else {
				unsigned long long x = strtoull(v, &end, 10);
				if (x <= INT64_MAX)
					a->kind = STROBE_ARG_I64, a->value.i64 = (int64_t)x;
				else
					a->kind = STROBE_ARG_U64, a->value.u64 = x;
			}
		}
		if (strpbrk(v, ".eE") || errno) {
			a->kind = STROBE_ARG_F64;
			a->value.f64 = strtod(v, NULL);
		}
	} else {
		memcpy(val, v, vlen + 1);
		a->kind = STROBE_ARG_JSON; /* objects, arrays, null */
		a->value.str = val;
	}
	return true;
}

/* ---- Perfetto tracks ------------------------------------------------------ */

static uint64_t ident_key(const struct tr_ident *id)
{
	if (id->kind == TR_NUMBER && id->is_int)
		return strb_pfmap_key(1, (uint64_t)id->num);
	return strb_pfmap_str(id->text);
}

static bool numeric(const struct tr_ident *id)
{
	return id->kind == TR_NUMBER && id->is_int;
}

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? (b < 0 ? INT64_MIN : INT64_MAX) : r;
}

/* A row's tid as libkineto's viewers take it: GPU rows are negative. */
static int64_t row_tid(const struct tr_ident *tid)
{
	if (tid->kind == TR_ABSENT)
		return 0;
	return tid->num >= 0 ? tid->num : tid->num == INT64_MIN ? INT64_MAX : -tid->num;
}

/* The process (thread false) or thread of numeric ids, added (not yet
 * described) when new. */
static struct row *row_of(struct pfo *c, bool thread, int64_t pid, int64_t tid)
{
	uint64_t key = strb_pfmap_key(strb_pfmap_key(thread, (uint64_t)pid), (uint64_t)tid);
	uint64_t i = strb_pfmap_get(&c->row_idx, key);
	if (i)
		return &c->rowv[i - 1];
	if (c->nrow == c->caprow) {
		size_t cap = c->caprow ? c->caprow * 2 : 64;
		struct row *n = realloc(c->rowv, cap * sizeof(*n));
		if (!n)
			return oom(c), NULL;
		c->rowv = n;
		c->caprow = cap;
	}
	if (strb_pfmap_put(&c->row_idx, key, c->nrow + 1))
		return oom(c), NULL;
	struct row *r = &c->rowv[c->nrow++];
	*r = (struct row){.pid = pid, .tid = tid, .sort = thread ? tid : pid};
	return r;
}

/* A process's track, described the first time it is used, with what the
 * first pass learnt of it: its descriptor is never written again. */
static uint64_t proc_track(struct pfo *c, int64_t pid)
{
	struct row *p = row_of(c, false, pid, 0);
	if (p && !p->uuid) {
		p->uuid = strb_pfenc_uuid(c->pf);
		strb_pfenc_process(c->pf, p->uuid, pid, p->name[0] ? p->name : NULL,
		                   p->label[0] ? p->label : NULL, p->sort);
	}
	return p ? p->uuid : 0;
}

static uint64_t thread_track(struct pfo *c, int64_t pid, int64_t tid)
{
	if (!proc_track(c, pid))
		return 0;
	struct row *t = row_of(c, true, pid, tid);
	if (!t)
		return 0;
	if (!t->uuid) {
		t->uuid = strb_pfenc_uuid(c->pf);
		strb_pfenc_thread(c->pf, t->uuid, pid, tid, t->name[0] ? t->name : NULL, t->sort);
	}
	return t->uuid;
}

/* The top-level track of a JSON pid: a process for a number, a named
 * track for a string ("Spans", "GPU 0 Counters"). */
static uint64_t pid_track(struct pfo *c, const struct tr_ident *pid)
{
	if (numeric(pid))
		return proc_track(c, pid->num);
	uint64_t key = ident_key(pid);
	uint64_t uuid = strb_pfmap_get(&c->procs, key);
	if (!uuid) {
		uuid = strb_pfenc_uuid(c->pf);
		if (strb_pfmap_put(&c->procs, key, uuid))
			return oom(c), 0;
		strb_pfenc_track(c->pf, uuid, 0,
		                 pid->kind == TR_ABSENT || !pid->text[0] ? "Global" : pid->text);
	}
	return uuid;
}

/* The track of a JSON (pid, tid) row. Numeric rows are threads of their
 * process (GPU streams too: libkineto names them "stream 7" and gives no
 * other sign); others are named tracks: after their tid, else their string
 * pid, else "Global" (merge's "Record Window End" row, pid N and tid ""). */
static uint64_t row_track(struct pfo *c, const struct tr_ident *pid, const struct tr_ident *tid)
{
	if (numeric(pid) && (numeric(tid) || tid->kind == TR_ABSENT))
		return thread_track(c, pid->num, row_tid(tid));
	uint64_t key = strb_pfmap_key(ident_key(pid), ident_key(tid));
	uint64_t uuid = strb_pfmap_get(&c->rows, key);
	if (!uuid) {
		uint64_t parent = pid_track(c, pid);
		uuid = strb_pfenc_uuid(c->pf);
		if (strb_pfmap_put(&c->rows, key, uuid))
			return oom(c), 0;
		const char *name = tid->text[0]                    ? tid->text
		                   : !numeric(pid) && pid->text[0] ? pid->text
		                                                   : "Global";
		strb_pfenc_track(c->pf, uuid, parent, name);
	}
	return uuid;
}

/* ---- Perfetto events ------------------------------------------------------ */

static void open_pf(struct pfo *c, int64_t first_ts)
{
	if (c->pf || c->err)
		return;
	int64_t origin = add_sat(c->base, first_ts);
	if (strb_pfenc_open(&c->pf, c->sink, origin, 0)) {
		c->sink = NULL;
		oom(c);
		return;
	}
	c->sink = NULL; /* the encoder owns it */
}

static void emit_slice(struct pfo *c, struct slice *s)
{
	struct strb_pf_event ev = {.type = STRB_PF_BEGIN,
	                           .track = s->track,
	                           .ts_ns = s->ts,
	                           .name = s->name,
	                           .category = s->cat,
	                           .args = s->args,
	                           .nargs = s->nargs,
	                           .flow_out = s->flow_out,
	                           .flow_in = s->flow_in};
	strb_pfenc_event(c->pf, &ev);
	struct strb_pf_event end = {.type = STRB_PF_END, .track = s->track, .ts_ns = s->end};
	strb_pfenc_event(c->pf, &end);
	s->active = false;
	c->st.written++;
}

static void flush_pending(struct pfo *c)
{
	if (c->slot[0]->active)
		emit_slice(c, c->slot[0]);
}

/* Fills s with ev's name, category and args. */
static bool fill(struct pfo *c, struct slice *s, const struct tr_event *ev)
{
	s->used = 0;
	s->nargs = 0;
	s->flow_out = s->flow_in = 0;
	size_t nl = strlen(ev->name) + 1, cl = strlen(ev->cat) + 1;
	char *name = arena_take(s, nl), *cat = arena_take(s, cl);
	if (!name || !cat)
		return false;
	memcpy(name, ev->name, nl);
	memcpy(cat, ev->cat, cl);
	s->name = name;
	s->cat = cat;
	for (unsigned i = 0; i < ev->nargs; i++)
		if (to_arg(c, s, &ev->args[i], &s->args[s->nargs]))
			s->nargs++;
	return true;
}

static uint64_t flow_uuid(const struct tr_event *ev)
{
	uint64_t id =
	    ev->id.kind == TR_NUMBER && ev->id.is_int ? (uint64_t)ev->id.num : strb_pfmap_str(ev->id.text);
	if (!strcmp(ev->cat, "fwdbwd"))
		return strb_output_flow_uuid(id, STROBE_FLOW_FWDBWD);
	if (!strcmp(ev->cat, "ac2g"))
		return strb_output_flow_uuid(id, STROBE_FLOW_ASYNC_CPU_GPU);
	return strb_pfmap_key(id, strb_pfmap_str(ev->cat)) | 3;
}

static void pf_counter(struct pfo *c, const struct tr_event *ev)
{
	uint64_t parent = pid_track(c, &ev->pid);
	for (unsigned i = 0; i < ev->nargs; i++) {
		const struct tr_pair *p = &ev->args[i];
		double v;
		if (p->value[0] == '"') {
			char word[16];
			size_t n = strlen(p->value);
			if (n < 3 || n - 2 >= sizeof(word))
				continue;
			memcpy(word, p->value + 1, n - 2);
			word[n - 2] = 0;
			if (!non_finite_word(word, &v))
				continue;
		} else {
			char *end;
			v = strtod(p->value, &end);
			if (end == p->value || *end)
				continue;
		}
		uint64_t key = strb_pfmap_key(strb_pfmap_key(ident_key(&ev->pid), strb_pfmap_str(ev->name)),
		                              strb_pfmap_str(p->key));
		uint64_t uuid = strb_pfmap_get(&c->counters, key);
		if (!uuid) {
			uuid = strb_pfenc_uuid(c->pf);
			if (strb_pfmap_put(&c->counters, key, uuid)) {
				oom(c);
				return;
			}
			char name[TR_NAME_MAX + TR_SHORT_MAX + 2];
			if (!p->key[0] || !strcmp(p->key, ev->name))
				snprintf(name, sizeof(name), "%s", ev->name);
			else
				snprintf(name, sizeof(name), "%s %s", ev->name, p->key);
			strb_pfenc_counter_track(c->pf, uuid, parent, name, ev->cat[0] ? ev->cat : NULL);
		}
		struct strb_pf_event ce = {
		    .type = STRB_PF_COUNTER, .track = uuid, .ts_ns = add_sat(c->base, ev->ts_ns), .value = v};
		strb_pfenc_event(c->pf, &ce);
	}
	c->st.written++;
}

/* process_name, process_labels, process_sort_index, thread_name,
 * thread_sort_index, learnt in the first pass: the last one wins. */
static void learn_meta(struct pfo *c, const struct tr_event *ev)
{
	const struct tr_pair *a = ev->nargs ? &ev->args[0] : NULL;
	if (!a || !numeric(&ev->pid))
		return;
	char text[TR_VALUE_MAX];
	text[0] = 0;
	if (a->value[0] == '"')
		unescape(text, a->value, strlen(a->value));
	int64_t num = strtoll(a->value, NULL, 10);
	if (strncmp(ev->name, "thread_", 7)) {
		struct row *p = row_of(c, false, ev->pid.num, 0);
		if (!p)
			return;
		if (!strcmp(ev->name, "process_name"))
			snprintf(p->name, sizeof(p->name), "%.*s", (int)sizeof(p->name) - 1, text);
		else if (!strcmp(ev->name, "process_labels"))
			snprintf(p->label, sizeof(p->label), "%.*s", (int)sizeof(p->label) - 1, text);
		else if (!strcmp(ev->name, "process_sort_index"))
			p->sort = num;
		return;
	}
	if (!numeric(&ev->tid))
		return;
	struct row *t = row_of(c, true, ev->pid.num, row_tid(&ev->tid));
	if (!t)
		return;
	if (!strcmp(ev->name, "thread_name"))
		snprintf(t->name, sizeof(t->name), "%.*s", (int)sizeof(t->name) - 1, text);
	else if (!strcmp(ev->name, "thread_sort_index"))
		t->sort = num;
}

/* In the second pass a metadata event describes its row, if nothing did
 * yet, with what the first pass learnt. */
static void pf_meta(struct pfo *c, const struct tr_event *ev)
{
	if (!numeric(&ev->pid))
		return;
	if (strncmp(ev->name, "thread_", 7))
		proc_track(c, ev->pid.num);
	else if (numeric(&ev->tid))
		thread_track(c, ev->pid.num, row_tid(&ev->tid));
}

static bool is_flow(const char *ph)
{
	return (ph[0] == 's' || ph[0] == 'f' || ph[0] == 't') && !ph[1];
}

static void event(struct pfo *c, const struct tr_event *ev, bool bound)
{
	if (!ev->has_ts && ev->ph[0] != 'M')
		return;
	open_pf(c, ev->ts_ns);
	if (c->err)
		return;
	const char *ph = ev->ph;
	int64_t ts = add_sat(c->base, ev->ts_ns);
	if (is_flow(ph)) {
		uint64_t id = flow_uuid(ev);
		struct slice *p = c->slot[0];
		if (bound && p->active && (ph[0] == 'f' ? !p->flow_in : !p->flow_out)) {
			if (ph[0] == 'f')
				p->flow_in = id;
			else
				p->flow_out = id;
			c->st.flows_bound++;
			c->st.written++;
			return;
		}
		/* Not right after its slice: an instant of its own carries it. */
		flush_pending(c);
		struct strb_pf_event in = {.type = STRB_PF_INSTANT,
		                           .track = row_track(c, &ev->pid, &ev->tid),
		                           .ts_ns = ts,
		                           .name = ev->name,
		                           .category = ev->cat};
		if (ph[0] == 'f')
			in.flow_in = id;
		else
			in.flow_out = id;
		strb_pfenc_event(c->pf, &in);
		c->st.flows_unbound++;
		c->st.written++;
		return;
	}
	flush_pending(c);
	switch (ph[0]) {
	case 'X':
	case 'B':
	case 'E':
	case 'i':
	case 'I': {
		if (ph[1])
			break;
		struct slice *s = c->slot[1];
		if (ph[0] != 'E' && !fill(c, s, ev))
			break;
		uint64_t track = row_track(c, &ev->pid, &ev->tid);
		if (ph[0] == 'X') {
			s->active = true;
			s->track = track;
			s->ts = ts;
			s->end = add_sat(ts, ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0);
			c->slot[1] = c->slot[0];
			c->slot[0] = s;
			return;
		}
		struct strb_pf_event pe = {.track = track, .ts_ns = ts};
		if (ph[0] == 'E') {
			pe.type = STRB_PF_END;
		} else {
			pe.type = ph[0] == 'B' ? STRB_PF_BEGIN : STRB_PF_INSTANT;
			pe.name = s->name;
			pe.category = s->cat;
			pe.args = s->args;
			pe.nargs = s->nargs;
		}
		strb_pfenc_event(c->pf, &pe);
		c->st.written++;
		return;
	}
	case 'C':
		if (!ph[1]) {
			pf_counter(c, ev);
			return;
		}
		break;
	case 'M':
		if (!ph[1]) {
			pf_meta(c, ev);
			c->st.written++;
			return;
		}
		break;
	}
	c->st.left_out++; /* a phase Perfetto's track events have no form for */
}

/* The top-level members, as annotations of one instant on the metadata
 * track (docs/output-format.md). */
static void pf_metadata(struct pfo *c)
{
	if (!c->nmembers)
		return;
	struct strobe_arg *args = calloc(c->nmembers, sizeof(*args));
	if (!args) {
		oom(c);
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < c->nmembers; i++) {
		struct member *m = &c->members[i];
		struct strobe_arg *a = &args[n++];
		a->key = m->key;
		a->kind = STROBE_ARG_JSON;
		a->value.str = m->json;
		if (m->truncated) {
			a->kind = STROBE_ARG_STRING;
		} else if (m->json[0] == '"') {
			unescape(m->json, m->json, strlen(m->json));
			a->kind = STROBE_ARG_STRING;
		} else if (m->json[0] == '-' || (m->json[0] >= '0' && m->json[0] <= '9')) {
			char *end;
			errno = 0;
			long long v = strtoll(m->json, &end, 10);
			if (!*end && !errno)
				a->kind = STROBE_ARG_I64, a->value.i64 = v;
		}
	}
	strb_pfenc_metadata(c->pf, c->base, args, n);
	free(args);
}

static int keep_member(struct pfo *c, const char *key, const char *json, size_t len, bool truncated)
{
	if (c->member_bytes + len > META_MAX_BYTES) {
		c->st.members_dropped++;
		return 0;
	}
	if (c->nmembers == c->capmembers) {
		size_t cap = c->capmembers ? c->capmembers * 2 : 16;
		struct member *n = realloc(c->members, cap * sizeof(*n));
		if (!n)
			return oom(c);
		c->members = n;
		c->capmembers = cap;
	}
	struct member *m = &c->members[c->nmembers];
	m->key = strdup(key);
	m->json = strdup(json);
	m->truncated = truncated;
	if (!m->key || !m->json) {
		free(m->key);
		free(m->json);
		return oom(c);
	}
	c->nmembers++;
	c->member_bytes += len;
	return 0;
}

/* ---- the interface ------------------------------------------------------------ */

int pfo_open(struct pfo **out, const char *path)
{
	struct pfo *c = calloc(1, sizeof(*c));
	if (c) {
		c->slot[0] = calloc(1, sizeof(struct slice));
		c->slot[1] = calloc(1, sizeof(struct slice));
	}
	if (!c || !c->slot[0] || !c->slot[1]) {
		pfo_free(c);
		return strb_error(-ENOMEM, "out of memory writing %s", path);
	}
	int rc = strb_sink_open(&c->sink, path, STRB_COMPRESS_NONE, -1);
	if (rc) {
		pfo_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int pfo_learn_event(struct pfo *c, const struct tr_event *ev)
{
	if (!strcmp(ev->ph, "M"))
		learn_meta(c, ev);
	return c->err;
}

int pfo_learn_member(struct pfo *c, const char *key, const char *json, size_t len, bool truncated)
{
	if (!strcmp(key, "baseTimeNanoseconds"))
		c->base = strtoll(json, NULL, 10);
	return keep_member(c, key, json, len, truncated);
}

int pfo_event(struct pfo *c, const struct tr_event *ev, bool bound)
{
	event(c, ev, bound);
	return c->err;
}

int pfo_finish(struct pfo *c)
{
	open_pf(c, 0);
	if (!c->err) {
		flush_pending(c);
		pf_metadata(c);
	}
	if (c->err) {
		strb_pfenc_abort(c->pf);
		c->pf = NULL;
		return strb_error(c->err, "out of memory");
	}
	int rc = strb_pfenc_finish(c->pf);
	c->pf = NULL;
	return rc;
}

const struct pfo_stats *pfo_stats(const struct pfo *c)
{
	return &c->st;
}

void pfo_free(struct pfo *c)
{
	if (!c)
		return;
	strb_pfenc_abort(c->pf);
	strb_sink_abort(c->sink);
	free(c->slot[0]);
	free(c->slot[1]);
	strb_pfmap_free(&c->procs);
	strb_pfmap_free(&c->rows);
	strb_pfmap_free(&c->counters);
	strb_pfmap_free(&c->row_idx);
	free(c->rowv);
	for (size_t i = 0; i < c->nmembers; i++) {
		free(c->members[i].key);
		free(c->members[i].json);
	}
	free(c->members);
	free(c);
}

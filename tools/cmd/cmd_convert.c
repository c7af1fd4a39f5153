/* strobe convert: a Chrome-trace JSON file (strobe's, libkineto's, any
 * Chrome trace) into Chrome JSON (plain, gzip, zstd) or Perfetto protobuf,
 * in one streaming pass: events go straight from the reader to the writer,
 * so memory stays bounded whatever the input's size. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "common/error.h"
#include "common/jbuf.h"

#include "common/pfenc.h"
#include "common/sink.h"
#include "strobe/strobe.h"
#include "read/trace_reader.h"

static const char usage_text[] =
    "usage: strobe convert [options] IN OUT\n"
    "\n"
    "Converts a Chrome-trace JSON file written by strobe, libkineto (PyTorch's profiler) or\n"
    "any Chrome-trace writer, or a Perfetto trace. IN is plain, gzip or zstd JSON, or\n"
    "Perfetto protobuf (told apart by content), or \"-\" for stdin; libkineto's known\n"
    "defects (unescaped quotes inside args strings, nan/inf counter values) are repaired.\n"
    "OUT's suffix picks the format:\n"
    "  .json .json.gz .json.zst     Chrome-trace JSON (gzip level 1, zstd level 3)\n"
    "  .pftrace .perfetto-trace     Perfetto protobuf (ui.perfetto.dev, trace_processor)\n"
    "The file is read once, as a stream, and memory stays bounded whatever its size. OUT is\n"
    "written under a temporary name and renamed when complete: a failure leaves nothing.\n"
    "\n"
    "options:\n"
    "  --min-dur DUR          drop complete (\"X\") events shorter than DUR, with the flow\n"
    "                         arrows bound to them; DUR is a number with a unit: ns, us, ms, s\n"
    "  --categories A,B,...   keep only events whose \"cat\" is one of these (events without\n"
    "                         a cat, like process and thread names, are always kept; flows\n"
    "                         follow the event they are bound to)\n"
    "  --progress             show progress on stderr even when it is not a terminal\n"
    "  -q, --quiet            print nothing but errors\n"
    "  -h, --help             show this text\n"
    "\n"
    "Unless --quiet, progress (bytes read of the total) is shown on stderr when it is a\n"
    "terminal, and one line at the end says what was written.\n"
    "\n"
    "exit status: 0 done, 1 IN cannot be read or is not a trace, or OUT cannot be written,\n"
    "2 usage error (including an OUT suffix of no known format).\n"
    "\n"
    "examples:\n"
    "  strobe convert trace.json trace.pftrace\n"
    "  strobe convert --min-dur 10us libkineto_trace.json.gz small.json.zst\n"
    "  strobe convert --categories kernel,cuda_runtime,cpu_op trace.json gpu.pftrace\n"
    "  zcat huge.json.gz | strobe convert - huge.perfetto-trace\n";

#define META_MAX_BYTES (16u << 20) /* top-level members kept for Perfetto's metadata */
#define ARENA_SIZE     (TR_ARGS_MAX * TR_VALUE_MAX + TR_NAME_MAX + 2 * TR_SHORT_MAX + 64)

enum out_kind { OUT_JSON, OUT_PERFETTO };

struct opts {
	const char *in, *out;
	int64_t min_dur;
	bool has_min_dur;
	char **cats;
	size_t ncats;
	char *cat_text[8]; /* the --categories values the names point into */
	size_t ncat_text;
	bool quiet, progress;
};

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

struct proc {
	uint64_t uuid;
	int64_t pid;
	int64_t sort;
	char name[TR_SHORT_MAX];
	char label[TR_SHORT_MAX];
};

struct thread {
	uint64_t uuid;
	int64_t pid, tid, sort;
	char name[TR_SHORT_MAX];
};

struct member {
	char *key, *json;
	bool truncated;
};

struct conv {
	const struct opts *o;
	enum out_kind kind;
	struct strb_sink *sink;
	int err; /* our own failure, with the message in errbuf */
	char errbuf[512];
	struct tr_stats st;
	uint64_t in_total; /* bytes of IN, 0 when unknown */
	bool show_progress;
	int64_t last_progress_ns;
	bool progress_shown;

	/* the last "X" seen, for binding flow events that follow it */
	bool last_x;
	bool last_x_kept;
	uint64_t last_row;
	int64_t last_ts, last_end;

	/* counts */
	uint64_t written, filtered, flows_bound, flows_unbound, cut_values;

	/* JSON */
	struct strb_jbuf *jb;
	int json_state; /* 0 nothing yet, 1 members before events, 2 in traceEvents, 3 after */
	bool json_first;

	/* Perfetto */
	struct strb_pfenc *pf;
	int64_t base;
	bool have_base, base_late;
	struct strb_pfmap procs, rows, counters; /* key -> uuid, or index + 1 for procs/threads */
	struct strb_pfmap proc_idx, thread_idx;
	struct proc *procv;
	size_t nproc, capproc;
	struct thread *threadv;
	size_t nthread, capthread;
	struct member *members;
	size_t nmembers, capmembers, member_bytes, members_dropped;
	struct slice *slot[2]; /* [0] pending, [1] being filled */
};

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int oom(struct conv *c)
{
	if (!c->err) {
		c->err = -ENOMEM;
		snprintf(c->errbuf, sizeof(c->errbuf), "out of memory");
	}
	return c->err;
}

static void progress(struct conv *c, bool final)
{
	if (!c->show_progress)
		return;
	int64_t t = now_ns();
	if (!final && t - c->last_progress_ns < 250000000)
		return;
	c->last_progress_ns = t;
	double mb = (double)c->st.file_bytes / 1e6;
	if (c->in_total)
		fprintf(stderr, "\rstrobe: convert: %.1f / %.1f MB read (%.0f%%), %llu events ", mb,
			(double)c->in_total / 1e6, 100.0 * (double)c->st.file_bytes / (double)c->in_total,
			(unsigned long long)c->st.events);
	else
		fprintf(stderr, "\rstrobe: convert: %.1f MB read, %llu events ", mb, (unsigned long long)c->st.events);
	c->progress_shown = true;
	if (final)
		fputc('\n', stderr);
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
		v = v * 16 + (unsigned)(ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
						 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : 0);
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
	} words[] = {{"nan", NAN}, {"-nan", NAN}, {"NaN", NAN}, {"inf", INFINITY}, {"Infinity", INFINITY},
		     {"-inf", -INFINITY}, {"-Infinity", -INFINITY}};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		if (!strcmp(s, words[i].w)) {
			*v = words[i].v;
			return true;
		}
	}
	return false;
}

/* One arg's JSON text as a typed arg whose strings live in s's arena. */
static bool to_arg(struct conv *c, struct slice *s, const struct tr_pair *p, struct strobe_arg *a)
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
		c->cut_values++;
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

static struct proc *proc_of(struct conv *c, int64_t pid)
{
	uint64_t key = strb_pfmap_key(1, (uint64_t)pid);
	uint64_t i = strb_pfmap_get(&c->proc_idx, key);
	if (i)
		return &c->procv[i - 1];
	if (c->nproc == c->capproc) {
		size_t cap = c->capproc ? c->capproc * 2 : 16;
		struct proc *n = realloc(c->procv, cap * sizeof(*n));
		if (!n)
			return oom(c), NULL;
		c->procv = n;
		c->capproc = cap;
	}
	struct proc *p = &c->procv[c->nproc++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->sort = pid;
	p->uuid = strb_pfenc_uuid(c->pf);
	if (strb_pfmap_put(&c->proc_idx, key, c->nproc))
		return oom(c), NULL;
	strb_pfenc_process(c->pf, p->uuid, pid, NULL, NULL, pid);
	return p;
}

static void proc_emit(struct conv *c, const struct proc *p)
{
	strb_pfenc_process(c->pf, p->uuid, p->pid, p->name[0] ? p->name : NULL, p->label[0] ? p->label : NULL,
			   p->sort);
}

/* The top-level track of a JSON pid: a process for a number, a named
 * track for a string ("Spans", "GPU 0 Counters"). */
static uint64_t pid_track(struct conv *c, const struct tr_ident *pid)
{
	if (numeric(pid)) {
		struct proc *p = proc_of(c, pid->num);
		return p ? p->uuid : 0;
	}
	uint64_t key = ident_key(pid);
	uint64_t uuid = strb_pfmap_get(&c->procs, key);
	if (!uuid) {
		uuid = strb_pfenc_uuid(c->pf);
		if (strb_pfmap_put(&c->procs, key, uuid))
			return oom(c), 0;
		strb_pfenc_track(c->pf, uuid, 0, pid->kind == TR_ABSENT || !pid->text[0] ? "Global" : pid->text);
	}
	return uuid;
}

static struct thread *thread_of(struct conv *c, int64_t pid, int64_t tid, bool create)
{
	uint64_t key = strb_pfmap_key(strb_pfmap_key(1, (uint64_t)pid), strb_pfmap_key(1, (uint64_t)tid));
	uint64_t i = strb_pfmap_get(&c->thread_idx, key);
	if (i || !create)
		return i ? &c->threadv[i - 1] : NULL;
	if (c->nthread == c->capthread) {
		size_t cap = c->capthread ? c->capthread * 2 : 64;
		struct thread *n = realloc(c->threadv, cap * sizeof(*n));
		if (!n)
			return oom(c), NULL;
		c->threadv = n;
		c->capthread = cap;
	}
	if (!proc_of(c, pid))
		return NULL;
	struct thread *t = &c->threadv[c->nthread++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->tid = tid;
	t->sort = tid;
	t->uuid = strb_pfenc_uuid(c->pf);
	if (strb_pfmap_put(&c->thread_idx, key, c->nthread))
		return oom(c), NULL;
	strb_pfenc_thread(c->pf, t->uuid, pid, tid, NULL, tid);
	return t;
}

/* The track of a JSON (pid, tid) row. Numeric rows are threads of their
 * process (GPU streams too: the reader cannot tell them apart before the
 * names, which libkineto writes last); others are named tracks. */
static uint64_t row_track(struct conv *c, const struct tr_ident *pid, const struct tr_ident *tid)
{
	if (numeric(pid) && (numeric(tid) || tid->kind == TR_ABSENT)) {
		int64_t t = tid->kind == TR_ABSENT ? 0 : tid->num;
		struct thread *th = thread_of(c, pid->num, t < 0 ? -t : t, true);
		return th ? th->uuid : 0;
	}
	uint64_t key = strb_pfmap_key(ident_key(pid), ident_key(tid));
	uint64_t uuid = strb_pfmap_get(&c->rows, key);
	if (!uuid) {
		uint64_t parent = pid_track(c, pid);
		uuid = strb_pfenc_uuid(c->pf);
		if (strb_pfmap_put(&c->rows, key, uuid))
			return oom(c), 0;
		strb_pfenc_track(c->pf, uuid, parent, tid->text[0] ? tid->text : pid->text[0] ? pid->text : "Global");
	}
	return uuid;
}

/* ---- Perfetto events ------------------------------------------------------ */

static void open_pf(struct conv *c, int64_t first_ts)
{
	if (c->pf || c->err)
		return;
	int64_t origin = c->base + first_ts;
	if (strb_pfenc_open(&c->pf, c->sink, origin, false)) {
		c->sink = NULL;
		oom(c);
		return;
	}
	c->sink = NULL; /* the encoder owns it */
}

static void emit_slice(struct conv *c, struct slice *s)
{
	struct strb_pf_event ev = {.type = STRB_PF_BEGIN, .track = s->track, .ts_ns = s->ts, .name = s->name,
				   .category = s->cat, .args = s->args, .nargs = s->nargs,
				   .flow_out = s->flow_out, .flow_in = s->flow_in};
	strb_pfenc_event(c->pf, &ev);
	struct strb_pf_event end = {.type = STRB_PF_END, .track = s->track, .ts_ns = s->end};
	strb_pfenc_event(c->pf, &end);
	s->active = false;
	c->written++;
}

static void flush_pending(struct conv *c)
{
	if (c->slot[0]->active)
		emit_slice(c, c->slot[0]);
}

/* Fills s with ev's name, category and args. */
static bool fill(struct conv *c, struct slice *s, const struct tr_event *ev)
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
	uint64_t id = ev->id.kind == TR_NUMBER && ev->id.is_int ? (uint64_t)ev->id.num : strb_pfmap_str(ev->id.text);
	if (!strcmp(ev->cat, "fwdbwd"))
		return strb_output_flow_uuid(id, STROBE_FLOW_FWDBWD);
	if (!strcmp(ev->cat, "ac2g"))
		return strb_output_flow_uuid(id, STROBE_FLOW_ASYNC_CPU_GPU);
	return strb_pfmap_key(id, strb_pfmap_str(ev->cat)) | 3;
}

static void pf_counter(struct conv *c, const struct tr_event *ev)
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
		struct strb_pf_event ce = {.type = STRB_PF_COUNTER, .track = uuid, .ts_ns = c->base + ev->ts_ns,
					   .value = v};
		strb_pfenc_event(c->pf, &ce);
	}
	c->written++;
}

/* process_name, process_labels, process_sort_index, thread_name,
 * thread_sort_index: the descriptor is written again with what it now has. */
static void pf_meta(struct conv *c, const struct tr_event *ev)
{
	const struct tr_pair *a = ev->nargs ? &ev->args[0] : NULL;
	if (!a || !numeric(&ev->pid))
		return;
	char text[TR_VALUE_MAX];
	text[0] = 0;
	if (a->value[0] == '"')
		unescape(text, a->value, strlen(a->value));
	int64_t num = strtoll(a->value, NULL, 10);
	bool is_thread = !strncmp(ev->name, "thread_", 7);
	if (!is_thread) {
		struct proc *p = proc_of(c, ev->pid.num);
		if (!p)
			return;
		if (!strcmp(ev->name, "process_name"))
			snprintf(p->name, sizeof(p->name), "%.*s", (int)sizeof(p->name) - 1, text);
		else if (!strcmp(ev->name, "process_labels"))
			snprintf(p->label, sizeof(p->label), "%.*s", (int)sizeof(p->label) - 1, text);
		else if (!strcmp(ev->name, "process_sort_index"))
			p->sort = num;
		else
			return;
		proc_emit(c, p);
		return;
	}
	if (!numeric(&ev->tid))
		return;
	int64_t tid = ev->tid.num < 0 ? -ev->tid.num : ev->tid.num;
	struct thread *t = thread_of(c, ev->pid.num, tid, true);
	if (!t)
		return;
	if (!strcmp(ev->name, "thread_name"))
		snprintf(t->name, sizeof(t->name), "%.*s", (int)sizeof(t->name) - 1, text);
	else if (!strcmp(ev->name, "thread_sort_index"))
		t->sort = num;
	else
		return;
	strb_pfenc_thread(c->pf, t->uuid, t->pid, t->tid, t->name[0] ? t->name : NULL, t->sort);
}

static bool is_flow(const char *ph)
{
	return (ph[0] == 's' || ph[0] == 'f' || ph[0] == 't') && !ph[1];
}

static void pf_event(struct conv *c, const struct tr_event *ev, bool bound)
{
	if (!ev->has_ts && ev->ph[0] != 'M')
		return;
	open_pf(c, ev->ts_ns);
	if (c->err)
		return;
	const char *ph = ev->ph;
	int64_t ts = c->base + ev->ts_ns;
	if (is_flow(ph)) {
		uint64_t id = flow_uuid(ev);
		struct slice *p = c->slot[0];
		if (bound && p->active && (ph[0] == 'f' ? !p->flow_in : !p->flow_out)) {
			if (ph[0] == 'f')
				p->flow_in = id;
			else
				p->flow_out = id;
			c->flows_bound++;
			c->written++;
			return;
		}
		/* Not right after its slice: an instant of its own carries it. */
		flush_pending(c);
		struct strb_pf_event in = {.type = STRB_PF_INSTANT, .track = row_track(c, &ev->pid, &ev->tid),
					   .ts_ns = ts, .name = ev->name, .category = ev->cat};
		if (ph[0] == 'f')
			in.flow_in = id;
		else
			in.flow_out = id;
		strb_pfenc_event(c->pf, &in);
		c->flows_unbound++;
		c->written++;
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
			s->end = ts + (ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0);
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
		c->written++;
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
			c->written++;
			return;
		}
		break;
	}
	c->filtered++; /* a phase Perfetto's track events have no form for */
}

/* The top-level members, as annotations of one instant on the metadata
 * track (docs/output-format.md). */
static void pf_metadata(struct conv *c)
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

/* ---- JSON output ------------------------------------------------------------ */

static void j_sep(struct conv *c)
{
	if (!c->json_first)
		strb_jbuf_lit(c->jb, ",\n");
	c->json_first = false;
}

static void j_ident(struct strb_jbuf *b, const char *key, const struct tr_ident *id)
{
	if (id->kind == TR_ABSENT)
		return;
	strb_jbuf_lit(b, ", \"");
	strb_jbuf_lit(b, key);
	strb_jbuf_lit(b, "\": ");
	if (id->kind == TR_NUMBER)
		strb_jbuf_raw(b, id->text, strlen(id->text));
	else
		strb_jbuf_str(b, id->text);
}

static void j_time(struct strb_jbuf *b, const char *key, int64_t ns)
{
	strb_jbuf_lit(b, ", \"");
	strb_jbuf_lit(b, key);
	strb_jbuf_lit(b, "\": ");
	if (ns < 0) {
		strb_jbuf_raw(b, "-", 1);
		ns = ns == INT64_MIN ? INT64_MAX : -ns;
	}
	strb_jbuf_us(b, ns);
}

static void j_pair(struct conv *c, const struct tr_pair *p)
{
	struct strb_jbuf *b = c->jb;
	strb_jbuf_str(b, p->key);
	strb_jbuf_raw(b, ": ", 2);
	if (p->truncated) {
		/* A cut value is no longer JSON: keep what is left as a string. */
		c->cut_values++;
		strb_jbuf_str(b, p->value);
	} else {
		strb_jbuf_raw(b, p->value, strlen(p->value));
	}
}

static void j_events_begin(struct conv *c)
{
	if (c->json_state == 0) {
		strb_jbuf_lit(c->jb, "{\n");
		c->json_first = true;
	}
	if (c->json_state < 2) {
		j_sep(c);
		strb_jbuf_lit(c->jb, "\"traceEvents\": [\n");
		c->json_state = 2;
		c->json_first = true;
	}
}

static void j_events_end(struct conv *c)
{
	if (c->json_state < 2)
		j_events_begin(c);
	if (c->json_state == 2) {
		strb_jbuf_lit(c->jb, "\n]");
		c->json_state = 3;
		c->json_first = false;
	}
}

static void j_event(struct conv *c, const struct tr_event *ev)
{
	struct strb_jbuf *b = c->jb;
	j_events_begin(c);
	j_sep(c);
	strb_jbuf_lit(b, "{\"ph\": ");
	strb_jbuf_str(b, ev->ph);
	if (ev->cat[0]) {
		strb_jbuf_lit(b, ", \"cat\": ");
		strb_jbuf_str(b, ev->cat);
	}
	strb_jbuf_lit(b, ", \"name\": ");
	strb_jbuf_str(b, ev->name);
	j_ident(b, "pid", &ev->pid);
	j_ident(b, "tid", &ev->tid);
	if (ev->has_ts)
		j_time(b, "ts", ev->ts_ns);
	if (ev->has_dur)
		j_time(b, "dur", ev->dur_ns);
	j_ident(b, "id", &ev->id);
	for (unsigned i = 0; i < ev->nextra; i++) {
		strb_jbuf_raw(b, ", ", 2);
		j_pair(c, &ev->extra[i]);
	}
	if (ev->nargs || ev->ph[0] == 'C' || ev->ph[0] == 'M') {
		strb_jbuf_lit(b, ", \"args\": {");
		for (unsigned i = 0; i < ev->nargs; i++) {
			if (i)
				strb_jbuf_raw(b, ", ", 2);
			j_pair(c, &ev->args[i]);
		}
		strb_jbuf_raw(b, "}", 1);
	}
	strb_jbuf_raw(b, "}", 1);
	c->written++;
}

/* ---- the stream ---------------------------------------------------------------- */

static bool category_kept(const struct conv *c, const char *cat)
{
	if (!c->o->ncats || !cat[0])
		return true;
	for (size_t i = 0; i < c->o->ncats; i++)
		if (!strcmp(c->o->cats[i], cat))
			return true;
	return false;
}

static int on_event(const struct tr_event *ev, void *arg)
{
	struct conv *c = arg;
	if ((c->st.events & 1023) == 0)
		progress(c, false);
	uint64_t row = strb_pfmap_key(ident_key(&ev->pid), ident_key(&ev->tid));
	bool keep, bound = false;
	if (is_flow(ev->ph)) {
		/* A flow event binds to the complete event just before it on its row
		 * (libkineto and strobe write it right after), and shares its fate. */
		bound = c->last_x && c->last_row == row && ev->has_ts && ev->ts_ns >= c->last_ts &&
			ev->ts_ns <= c->last_end;
		keep = bound ? c->last_x_kept : category_kept(c, ev->cat);
	} else {
		keep = category_kept(c, ev->cat);
		bool x = !strcmp(ev->ph, "X");
		if (x && c->o->has_min_dur && (!ev->has_dur || ev->dur_ns < c->o->min_dur))
			keep = false;
		c->last_x = x;
		if (x) {
			c->last_x_kept = keep;
			c->last_row = row;
			c->last_ts = ev->ts_ns;
			c->last_end = ev->ts_ns + (ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0);
		}
	}
	if (!keep) {
		c->filtered++;
		return 0;
	}
	if (c->kind == OUT_JSON)
		j_event(c, ev);
	else
		pf_event(c, ev, bound);
	return c->err;
}

static int keep_member(struct conv *c, const char *key, const char *json, size_t len, bool truncated)
{
	if (c->member_bytes + len > META_MAX_BYTES) {
		c->members_dropped++;
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

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct conv *c = arg;
	progress(c, false);
	if (c->kind == OUT_PERFETTO) {
		if (!strcmp(key, "baseTimeNanoseconds")) {
			/* Too late once events are out: they keep the base they were
			 * written with, and so does the metadata. */
			c->base_late = c->pf != NULL;
			if (!c->base_late) {
				c->base = strtoll(json, NULL, 10);
				c->have_base = true;
			}
		}
		return keep_member(c, key, json, len, truncated);
	}
	if (c->json_state == 2)
		j_events_end(c);
	if (c->json_state == 0) {
		strb_jbuf_lit(c->jb, "{\n");
		c->json_state = 1;
		c->json_first = true;
	}
	j_sep(c);
	strb_jbuf_str(c->jb, key);
	strb_jbuf_raw(c->jb, ": ", 2);
	if (truncated) {
		c->cut_values++;
		strb_jbuf_str(c->jb, json);
	} else {
		strb_jbuf_raw(c->jb, json, len);
	}
	return 0;
}

/* ---- the command -------------------------------------------------------------- */

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "strobe: convert: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: strobe convert [options] IN OUT (see strobe convert --help)\n");
	return 2;
}

/* "10us", "1.5ms", "250ns", "2s" as ns; false if it is not one. */
static bool parse_dur(const char *s, int64_t *ns)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || !(v >= 0))
		return false;
	double mult = !strcmp(end, "ns") ? 1 : !strcmp(end, "us") ? 1e3 : !strcmp(end, "ms") ? 1e6
						 : !strcmp(end, "s") ? 1e9 : -1;
	if (mult < 0 || v * mult > 9e18)
		return false;
	*ns = (int64_t)llround(v * mult);
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	const char *files[2];
	int nfiles = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = true;
		} else if (!strcmp(a, "--progress")) {
			o->progress = true;
		} else if (!strcmp(a, "--min-dur") || !strncmp(a, "--min-dur=", 10)) {
			const char *v = a[9] == '=' ? a + 10 : i + 1 < argc ? argv[++i] : NULL;
			if (!v)
				return usage_error("%s needs a duration such as 10us", a);
			if (!parse_dur(v, &o->min_dur))
				return usage_error("--min-dur wants a duration with a unit (ns, us, ms, s), not '%s'", v);
			o->has_min_dur = true;
		} else if (!strcmp(a, "--categories") || !strncmp(a, "--categories=", 13)) {
			const char *v = a[12] == '=' ? a + 13 : i + 1 < argc ? argv[++i] : NULL;
			if (!v || !*v)
				return usage_error("%s needs a comma-separated list of categories", a);
			if (o->ncat_text == sizeof(o->cat_text) / sizeof(o->cat_text[0]))
				return usage_error("%s", "give --categories at most 8 times");
			char *copy = strdup(v);
			if (!copy)
				return usage_error("%s", "out of memory");
			o->cat_text[o->ncat_text++] = copy;
			for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
				char **n = realloc(o->cats, (o->ncats + 1) * sizeof(*n));
				if (!n)
					return usage_error("%s", "out of memory");
				o->cats = n;
				o->cats[o->ncats++] = t;
			}
			if (!o->ncats)
				return usage_error("%s needs a comma-separated list of categories", a);
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (nfiles == 2) {
			return usage_error("one input and one output ('%s' is a third file)", a);
		} else {
			files[nfiles++] = a;
		}
	}
	if (nfiles < 2)
		return usage_error("%s", nfiles ? "no output file given" : "no input or output file given");
	o->in = files[0];
	o->out = files[1];
	return -1;
}

static void report(struct conv *c)
{
	if (c->o->quiet)
		return;
	fprintf(stderr, "strobe: wrote %s: %llu of %llu events", c->o->out, (unsigned long long)c->written,
		(unsigned long long)c->st.events);
	if (c->filtered)
		fprintf(stderr, " (%llu left out)", (unsigned long long)c->filtered);
	if (c->kind == OUT_PERFETTO)
		fprintf(stderr, ", %llu flows on their slices, %llu on instants of their own",
			(unsigned long long)c->flows_bound, (unsigned long long)c->flows_unbound);
	fputc('\n', stderr);
	uint64_t cut = c->st.truncated, dropped = c->st.dropped + c->members_dropped;
	if (cut || dropped)
		fprintf(stderr, "strobe: %s: %llu strings or values were cut at the reader's limits and %llu args or "
				"members were dropped (docs/output-format.md)\n",
			c->o->in, (unsigned long long)cut, (unsigned long long)dropped);
	if (c->st.repaired)
		fprintf(stderr, "strobe: %s: repaired %llu libkineto defects (unescaped quotes, nan/inf numbers)\n",
			c->o->in, (unsigned long long)c->st.repaired);
	if (c->base_late)
		fprintf(stderr, "strobe: %s: baseTimeNanoseconds comes after the events; their times are relative\n",
			c->o->in);
}

int cmd_convert(int argc, char **argv)
{
	struct opts o = {0};
	int rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		goto out;
	struct conv c = {.o = &o};
	if (strb_output_is_perfetto_path(o.out)) {
		c.kind = OUT_PERFETTO;
	} else if (ends_with(o.out, ".json") || ends_with(o.out, ".json.gz") || ends_with(o.out, ".json.zst")) {
		c.kind = OUT_JSON;
	} else {
		rc = usage_error("%s: unknown output format; name it .json, .json.gz, .json.zst, .pftrace or "
				 ".perfetto-trace",
				 o.out);
		goto out;
	}
	struct stat sb;
	if (strcmp(o.in, "-") && stat(o.in, &sb) == 0 && S_ISREG(sb.st_mode))
		c.in_total = (uint64_t)sb.st_size;
	c.show_progress = !o.quiet && (o.progress || isatty(STDERR_FILENO));

	rc = strb_sink_open(&c.sink, o.out, c.kind == OUT_JSON ? strb_compress_for_path(o.out) : STRB_COMPRESS_NONE,
			    -1);
	if (rc) {
		fprintf(stderr, "strobe: convert: %s\n", strobe_last_error());
		rc = 1;
		goto out;
	}
	if (c.kind == OUT_JSON) {
		c.jb = strb_jbuf_new(c.sink);
	} else {
		c.slot[0] = calloc(1, sizeof(struct slice));
		c.slot[1] = calloc(1, sizeof(struct slice));
	}
	if (c.kind == OUT_JSON ? !c.jb : !c.slot[0] || !c.slot[1]) {
		fprintf(stderr, "strobe: convert: out of memory\n");
		strb_sink_abort(c.sink);
		rc = 1;
		goto out;
	}

	struct tr_handler h = {on_event, on_member, &c};
	char err[512];
	rc = tr_read_file(o.in, &h, &c.st, err, sizeof(err));
	progress(&c, true);
	if (!rc && c.kind == OUT_PERFETTO) {
		open_pf(&c, 0);
		if (!c.err) {
			flush_pending(&c);
			pf_metadata(&c);
		}
	}
	if (!rc && c.err)
		rc = c.err;
	if (!rc) {
		if (c.kind == OUT_JSON) {
			j_events_end(&c);
			strb_jbuf_lit(c.jb, "\n}\n");
			strb_jbuf_flush(c.jb);
			rc = c.jb->err ? c.jb->err : 0;
			if (rc)
				strb_sink_abort(c.sink);
			else
				rc = strb_sink_commit(c.sink);
		} else {
			rc = strb_pfenc_finish(c.pf);
		}
		c.sink = NULL;
		c.pf = NULL;
		if (rc)
			fprintf(stderr, "strobe: convert: %s\n", strobe_last_error());
		else
			report(&c);
	} else {
		if (*err)
			fprintf(stderr, "strobe: %s\n", err);
		else if (c.err)
			fprintf(stderr, "strobe: convert: %s: %s\n", o.in, c.errbuf);
		if (c.pf)
			strb_pfenc_abort(c.pf);
		else
			strb_sink_abort(c.sink);
	}
	rc = rc ? 1 : 0;
	free(c.jb);
	free(c.slot[0]);
	free(c.slot[1]);
	strb_pfmap_free(&c.procs);
	strb_pfmap_free(&c.rows);
	strb_pfmap_free(&c.counters);
	strb_pfmap_free(&c.proc_idx);
	strb_pfmap_free(&c.thread_idx);
	free(c.procv);
	free(c.threadv);
	for (size_t i = 0; i < c.nmembers; i++) {
		free(c.members[i].key);
		free(c.members[i].json);
	}
	free(c.members);
out:
	for (size_t i = 0; i < o.ncat_text; i++)
		free(o.cat_text[i]);
	free(o.cats);
	return rc;
}

/* strobe merge: several ranks' traces side by side in one Chrome-trace file,
 * on one time base, with processes and flows kept apart. Each input is read
 * twice as a stream: once for its top-level members and process names, once
 * to copy its events. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "common/error.h"
#include "common/jbuf.h"
#include "common/monotonic.h"
#include "common/sink.h"
#include "read/trace_reader.h"
#include "strobe/strobe.h"
#include "write/chrome_json.h"

#define PID_STRIDE  10000 /* rank N's processes are N * PID_STRIDE + 1, + 2, ... */
#define MAX_EXACT   (INT64_C(1) << 53)
#define PROGRESS_NS 500000000    /* between progress lines */
#define SEP         " \xc2\xb7 " /* " · " */

static const char usage_text[] =
    "usage: strobe merge [--quiet] [--progress] -o OUT IN...\n"
    "\n"
    "Merges the traces of several ranks (Chrome-trace JSON written by strobe or by\n"
    "libkineto, plain, gzip or zstd; or Perfetto traces) into one Chrome-trace file, so\n"
    "that a viewer shows every rank's processes one after the other on one time axis. OUT\n"
    "is compressed by its suffix (.gz gzip, .zst zstd) and appears only when complete.\n"
    "One input is allowed: it is relabelled the same way.\n"
    "\n"
    "Each input's rank is its distributedInfo.rank; else a number in its file name\n"
    "(\"rank3\", \"rank_3\", \"rank-3\", any case, or \"r3.\" as in trace_r3.json); else its\n"
    "position among the inputs, from 0. Two inputs with one rank are an error.\n"
    "\n"
    "In the merged trace (docs/merge.md):\n"
    "  - rank N's processes get pids N*10000+1, N*10000+2, ... in their original order,\n"
    "    and are named \"rank N · HOST\" (CPU processes) or \"rank N · HOST · GPU 0\";\n"
    "  - flow and async ids are renumbered so that no two ranks share one;\n"
    "  - times are aligned on absolute time (each input's baseTimeNanoseconds + ts), to\n"
    "    the nanosecond, and written against the smallest input base;\n"
    "  - \"distributedInfo\" lists the ranks with their files, hosts, bases, original\n"
    "    distributedInfo, \"strobe\" accounting and other top-level keys.\n"
    "\n"
    "options:\n"
    "  -o, --output OUT  the merged trace (required)\n"
    "  --progress        print progress on stderr (default: only when stderr is a tty)\n"
    "  -q, --quiet       no progress and no warnings\n"
    "  -h, --help        show this text\n"
    "\n"
    "exit status: 0 done, 1 an input cannot be read or merged or OUT cannot be written\n"
    "(nothing is left behind), 2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe merge -o all.json.gz rank0.json rank1.json rank2.json\n"
    "  strobe merge -o job.json.zst /traces/job42/*.json.gz\n";

/* A process of one input: its pid there, and what names it. */
struct proc {
	struct tr_ident pid;
	char *name, *label;
	int64_t sort;
	bool has_sort;
	size_t first; /* order of first appearance */
	int64_t new_pid;
};

struct member {
	char *key, *json;
};

struct input {
	const char *path;
	int64_t rank;
	const char *rank_from;
	int64_t base;
	bool has_base;
	char *host;
	int64_t world;
	char *dist, *strobe, *devices; /* raw JSON of those members, or NULL */
	struct member *members;
	size_t nmembers;
	struct proc *procs;
	size_t nprocs, proc_cap;
	size_t last_proc; /* find_proc's last answer: events come in runs of one pid */
	int64_t min_id, max_id;
	bool has_id;
	uint64_t id_shift;  /* added to every integer id, modulo 2^64 */
	char id_prefix[32]; /* "r<N>:", before ids that are not integers */
	uint64_t json_bytes, events;
};

struct merge {
	struct input *in;
	size_t n;
	int64_t base;
	bool quiet, progress;
	char err[1024];
	/* pass 2 */
	struct cj_writer w;
	struct input *cur;
	struct cj_edit edit; /* of the current input's events */
	size_t cur_index;
	uint64_t written;
	int64_t last_progress;
};

static const struct cli cli = {"merge", "strobe merge [--quiet] [--progress] -o OUT IN..."};

/* A JSON string's value, from its text; NULL when it is not a string. */
static char *json_string(const char *json)
{
	yajl_val v = yajl_tree_parse(json, NULL, 0);
	const char *str = YAJL_GET_STRING(v);
	char *s = str ? strdup(str) : NULL;
	yajl_tree_free(v);
	return s;
}

static bool json_int(const char *json, int64_t *out)
{
	yajl_val v = yajl_tree_parse(json, NULL, 0);
	bool ok = YAJL_IS_INTEGER(v);
	if (ok)
		*out = YAJL_GET_INTEGER(v);
	yajl_tree_free(v);
	return ok;
}

static bool same_ident(const struct tr_ident *a, const struct tr_ident *b)
{
	return a->kind == b->kind && !strcmp(a->text, b->text);
}

static struct proc *find_proc(struct input *in, const struct tr_ident *pid)
{
	if (in->last_proc < in->nprocs && same_ident(&in->procs[in->last_proc].pid, pid))
		return &in->procs[in->last_proc];
	for (size_t i = 0; i < in->nprocs; i++) {
		if (same_ident(&in->procs[i].pid, pid)) {
			in->last_proc = i;
			return &in->procs[i];
		}
	}
	return NULL;
}

/* ---- pass 1: members, processes, ids ------------------------------------------ */

static int note_proc(struct input *in, const struct tr_event *ev)
{
	struct proc *p = find_proc(in, &ev->pid);
	if (!p) {
		if (in->nprocs + 1 >= PID_STRIDE)
			return -ERANGE; /* worded by the caller */
		if (in->nprocs == in->proc_cap) {
			size_t cap = in->proc_cap ? 2 * in->proc_cap : 16;
			struct proc *n = realloc(in->procs, cap * sizeof(*n));
			if (!n)
				return -ENOMEM;
			in->procs = n;
			in->proc_cap = cap;
		}
		struct proc *n = in->procs;
		p = &n[in->nprocs];
		*p = (struct proc){.pid = ev->pid, .first = in->nprocs};
		in->nprocs++;
	}
	if (strcmp(ev->ph, "M") || ev->nargs < 1)
		return 0;
	const char *v = ev->args[0].value;
	if (!strcmp(ev->name, "process_name") && !strcmp(ev->args[0].key, "name")) {
		free(p->name);
		p->name = json_string(v);
	} else if (!strcmp(ev->name, "process_labels") && !strcmp(ev->args[0].key, "labels")) {
		free(p->label);
		p->label = json_string(v);
	} else if (!strcmp(ev->name, "process_sort_index") && !strcmp(ev->args[0].key, "sort_index")) {
		p->has_sort = json_int(v, &p->sort);
	}
	return 0;
}

static int scan_event(const struct tr_event *ev, void *arg)
{
	struct input *in = arg;
	in->events++;
	if (ev->id.kind == TR_NUMBER && ev->id.is_int) {
		if (!in->has_id || ev->id.num < in->min_id)
			in->min_id = ev->id.num;
		if (!in->has_id || ev->id.num > in->max_id)
			in->max_id = ev->id.num;
		in->has_id = true;
	}
	return note_proc(in, ev);
}

static int keep(char **slot, const char *json)
{
	free(*slot);
	*slot = strdup(json);
	return *slot ? 0 : -ENOMEM;
}

static int scan_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct input *in = arg;
	(void)len;
	if (!strcmp(key, "baseTimeNanoseconds")) {
		in->has_base = json_int(json, &in->base);
		return 0;
	}
	if (!strcmp(key, "schemaVersion") || !strcmp(key, "displayTimeUnit") || !strcmp(key, "traceName"))
		return 0;
	if (truncated) {
		fprintf(stderr, "strobe: merge: %s: top-level \"%s\" is over %u bytes; left out\n", in->path,
		        key, TR_MEMBER_MAX - 1);
		return 0;
	}
	if (!strcmp(key, "distributedInfo")) {
		yajl_val d = yajl_tree_parse(json, NULL, 0);
		const char *rank_path[] = {"rank", NULL}, *host_path[] = {"host", NULL},
		           *world_path[] = {"world_size", NULL};
		yajl_val r = yajl_tree_get(d, rank_path, yajl_t_number);
		yajl_val h = yajl_tree_get(d, host_path, yajl_t_string);
		yajl_val w = yajl_tree_get(d, world_path, yajl_t_number);
		if (r && YAJL_IS_INTEGER(r) && YAJL_GET_INTEGER(r) >= 0) {
			in->rank = YAJL_GET_INTEGER(r);
			in->rank_from = "distributedInfo";
		}
		if (w && YAJL_IS_INTEGER(w))
			in->world = YAJL_GET_INTEGER(w);
		int rc = h ? keep(&in->host, YAJL_GET_STRING(h)) : 0;
		yajl_tree_free(d);
		return rc ? rc : keep(&in->dist, json);
	}
	if (!strcmp(key, "strobe"))
		return keep(&in->strobe, json);
	if (!strcmp(key, "deviceProperties"))
		return keep(&in->devices, json);
	if (!strcmp(key, "host_name") && !in->host)
		in->host = json_string(json); /* distributedInfo.host, when it comes, wins */
	struct member *m = realloc(in->members, (in->nmembers + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	in->members = m;
	m[in->nmembers] = (struct member){strdup(key), strdup(json)};
	if (!m[in->nmembers].key || !m[in->nmembers].json)
		return -ENOMEM;
	in->nmembers++;
	return 0;
}

/* "rank3", "rank_3", "rank-3" (any case) or "r3." in the file's base name. */
static bool rank_from_name(const char *path, int64_t *rank)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const char *p = base; *p; p++) {
		const char *d = NULL;
		bool word_start =
		    p == base || !((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z'));
		if (!strncasecmp(p, "rank", 4) && word_start) {
			d = p + 4;
			if (*d == '_' || *d == '-')
				d++;
		} else if ((*p == 'r' || *p == 'R') && word_start && p[1] >= '0' && p[1] <= '9') {
			d = p + 1;
			const char *e = d;
			while (*e >= '0' && *e <= '9')
				e++;
			if (*e != '.')
				d = NULL;
		}
		if (!d || *d < '0' || *d > '9')
			continue;
		char *end;
		errno = 0;
		long long v = strtoll(d, &end, 10);
		if (errno || v >= MAX_EXACT / PID_STRIDE)
			continue;
		*rank = v;
		return true;
	}
	return false;
}

static int cmp_proc(const void *x, const void *y)
{
	const struct proc *a = x, *b = y;
	/* Processes without a sort index sort as libkineto's viewers do: by pid. */
	int64_t ka = a->has_sort ? a->sort : a->pid.is_int ? a->pid.num : INT64_MAX;
	int64_t kb = b->has_sort ? b->sort : b->pid.is_int ? b->pid.num : INT64_MAX;
	if (ka != kb)
		return ka < kb ? -1 : 1;
	return (a->first > b->first) - (a->first < b->first);
}

static int cmp_rank(const void *x, const void *y)
{
	const struct input *a = x, *b = y;
	return (a->rank > b->rank) - (a->rank < b->rank);
}

/* Ranks, pids, id shifts and the common base, once every input was read. */
static int plan(struct merge *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct input *in = &m->in[i];
		if (!in->rank_from) {
			if (rank_from_name(in->path, &in->rank)) {
				in->rank_from = "file name";
			} else {
				in->rank = (int64_t)i;
				in->rank_from = "position";
			}
		}
		if (in->rank >= MAX_EXACT / PID_STRIDE) {
			snprintf(m->err, sizeof(m->err), "%s: rank %" PRId64 " is too large to give pids to",
			         in->path, in->rank);
			return -ERANGE;
		}
	}
	qsort(m->in, m->n, sizeof(*m->in), cmp_rank);
	for (size_t i = 1; i < m->n; i++) {
		if (m->in[i].rank == m->in[i - 1].rank) {
			snprintf(m->err, sizeof(m->err),
			         "%s and %s are both rank %" PRId64 " (from %s and from %s)",
			         m->in[i - 1].path, m->in[i].path, m->in[i].rank, m->in[i - 1].rank_from,
			         m->in[i].rank_from);
			return -EINVAL;
		}
	}
	int64_t next_id = 1;
	bool have_base = false;
	for (size_t i = 0; i < m->n; i++) {
		struct input *in = &m->in[i];
		if (in->nprocs) /* an input without events has no procs array */
			qsort(in->procs, in->nprocs, sizeof(*in->procs), cmp_proc);
		for (size_t j = 0; j < in->nprocs; j++)
			in->procs[j].new_pid = in->rank * PID_STRIDE + 1 + (int64_t)j;
		if (in->has_id) {
			/* Integer ids of this input move to [next_id, next_id + span). */
			uint64_t span = (uint64_t)in->max_id - (uint64_t)in->min_id + 1;
			if (span > (uint64_t)(MAX_EXACT - next_id)) {
				snprintf(m->err, sizeof(m->err),
				         "%s: flow ids from %" PRId64 " to %" PRId64
				         " leave no room to keep ranks apart",
				         in->path, in->min_id, in->max_id);
				return -ERANGE;
			}
			in->id_shift = (uint64_t)next_id - (uint64_t)in->min_id;
			next_id += (int64_t)span;
		}
		if (!in->has_base && !m->quiet)
			fprintf(
			    stderr,
			    "strobe: merge: %s has no baseTimeNanoseconds; its ts are taken as they are\n",
			    in->path);
		if (!have_base || in->base < m->base)
			m->base = in->base;
		have_base = true;
	}
	return 0;
}

/* ---- pass 2: the merged file ---------------------------------------------------- */

static void host_of(const struct input *in, char *out, size_t len)
{
	snprintf(out, len, "%s", in->host && *in->host ? in->host : "unknown host");
}

/* "rank N · host", then " · GPU 0" (the label), the original name, or the
 * pid's text, for everything but CPU processes. */
static void process_title(const struct input *in, const struct proc *p, char *out, size_t len)
{
	char host[256];
	host_of(in, host, sizeof(host));
	int n = snprintf(out, len, "rank %" PRId64 SEP "%s", in->rank, host);
	const char *what;
	if (p->label)
		what = strcmp(p->label, "CPU") ? p->label : NULL;
	else if (p->name)
		what = p->name;
	else
		what = *p->pid.text ? p->pid.text : "global"; /* "Spans", or the pid of "Record Window End" */
	if (what && n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, SEP "%s", what);
}

static void process_events(struct merge *m)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct input *in = &m->in[i];
		for (size_t j = 0; j < in->nprocs; j++) {
			const struct proc *p = &in->procs[j];
			char title[TR_SHORT_MAX + 600];
			process_title(in, p, title, sizeof(title));
			cj_meta(&m->w, "process_name", p->new_pid, "name", title, 0);
			cj_meta(&m->w, "process_sort_index", p->new_pid, "sort_index", NULL, p->new_pid);
		}
	}
}

/* At most twice a second, and once as each input starts (ev NULL). */
static void progress(struct merge *m, const struct tr_event *ev)
{
	int64_t t = strb_mono_ns_raw();
	if (ev && t - m->last_progress < PROGRESS_NS)
		return;
	m->last_progress = t;
	const struct input *in = m->cur;
	unsigned pct = in->json_bytes && ev ? (unsigned)(ev->offset * 100 / in->json_bytes) : 0;
	fprintf(stderr, "\rstrobe: merge: rank %" PRId64 " (%zu of %zu): %3u%% ", in->rank, m->cur_index + 1,
	        m->n, pct > 100 ? 100 : pct);
}

static int copy_event(const struct tr_event *ev, void *arg)
{
	struct merge *m = arg;
	struct input *in = m->cur;
	if (!strcmp(ev->ph, "M") &&
	    (!strcmp(ev->name, "process_name") || !strcmp(ev->name, "process_sort_index")))
		return 0; /* written anew, up front */
	if (m->progress && !(++m->written & 0xffff))
		progress(m, ev);
	struct proc *p = find_proc(in, &ev->pid);
	if (!p) {
		snprintf(m->err, sizeof(m->err), "%s changed while it was being merged (byte %" PRIu64 ")",
		         in->path, ev->offset);
		return -EAGAIN;
	}
	m->edit.pid = p->new_pid;
	cj_event(&m->w, ev, &m->edit);
	return m->w.b->err;
}

static void raw_member(struct strb_jbuf *b, const char *key, const char *json)
{
	strb_jbuf_lit(b, ", ");
	strb_jbuf_str(b, key);
	strb_jbuf_lit(b, ": ");
	strb_jbuf_lit(b, json);
}

/* The merged "distributedInfo": the ranks in order, each with where it came
 * from and what its file said about itself. */
static void ranks_record(struct merge *m)
{
	struct strb_jbuf *b = cj_member_begin(&m->w, "distributedInfo");
	int64_t world = m->in[0].world;
	for (size_t i = 1; i < m->n; i++)
		if (m->in[i].world != world)
			world = -1;
	strb_jbuf_lit(b, "{\"merged\": true");
	if (world > 0) {
		strb_jbuf_lit(b, ", \"world_size\": ");
		strb_jbuf_i64(b, world);
	}
	strb_jbuf_lit(b, ", \"rank_count\": ");
	strb_jbuf_u64(b, m->n);
	strb_jbuf_lit(b, ", \"ranks\": [");
	for (size_t i = 0; i < m->n; i++) {
		const struct input *in = &m->in[i];
		char host[256];
		host_of(in, host, sizeof(host));
		strb_jbuf_lit(b, i ? ",\n    {\"rank\": " : "\n    {\"rank\": ");
		strb_jbuf_i64(b, in->rank);
		strb_jbuf_lit(b, ", \"rank_from\": ");
		strb_jbuf_str(b, in->rank_from);
		strb_jbuf_lit(b, ", \"file\": ");
		strb_jbuf_str(b, in->path);
		strb_jbuf_lit(b, ", \"host\": ");
		strb_jbuf_str(b, host);
		strb_jbuf_lit(b, ", \"pids\": [");
		strb_jbuf_i64(b, in->rank * PID_STRIDE + 1);
		strb_jbuf_lit(b, ", ");
		strb_jbuf_i64(b, in->rank * PID_STRIDE + (int64_t)in->nprocs);
		strb_jbuf_lit(b, "], \"baseTimeNanoseconds\": ");
		strb_jbuf_i64(b, in->base);
		strb_jbuf_lit(b, ", \"events\": ");
		strb_jbuf_u64(b, in->events);
		if (in->dist)
			raw_member(b, "distributedInfo", in->dist);
		if (in->strobe)
			raw_member(b, "strobe", in->strobe);
		if (in->devices)
			raw_member(b, "deviceProperties", in->devices);
		if (in->nmembers) {
			strb_jbuf_lit(b, ", \"metadata\": {");
			for (size_t j = 0; j < in->nmembers; j++) {
				if (j)
					strb_jbuf_lit(b, ", ");
				strb_jbuf_str(b, in->members[j].key);
				strb_jbuf_lit(b, ": ");
				strb_jbuf_lit(b, in->members[j].json);
			}
			strb_jbuf_lit(b, "}");
		}
		strb_jbuf_lit(b, "}");
	}
	strb_jbuf_lit(b, "\n  ]}");
}

/* Each input's absolute times, base + ts, against the merged base. */
static int64_t shift_of(const struct merge *m, const struct input *in)
{
	int64_t d;
	return __builtin_sub_overflow(in->base, m->base, &d) ? INT64_MAX : d;
}

static int write_merged(struct merge *m, const char *out)
{
	int rc = cj_open(&m->w, out);
	if (rc) {
		snprintf(m->err, sizeof(m->err), "%s", strobe_last_error());
		return rc;
	}
	cj_member(&m->w, "schemaVersion", "1", 1, false);
	/* The lowest rank's devices; every rank's are in its record. */
	const char *devices = m->in[0].devices ? m->in[0].devices : "[]";
	cj_member(&m->w, "deviceProperties", devices, strlen(devices), false);
	ranks_record(m);
	cj_member(&m->w, "displayTimeUnit", "\"ms\"", 4, false);
	strb_jbuf_i64(cj_member_begin(&m->w, "baseTimeNanoseconds"), m->base);
	process_events(m);
	for (size_t i = 0; i < m->n && !rc; i++) {
		m->cur = &m->in[i];
		m->cur_index = i;
		m->edit = (struct cj_edit){.set_pid = true,
		                           .ts_shift_ns = shift_of(m, m->cur),
		                           .id_shift = m->cur->id_shift,
		                           .id_prefix = m->cur->id_prefix};
		snprintf(m->cur->id_prefix, sizeof(m->cur->id_prefix), "r%" PRId64 ":", m->cur->rank);
		if (m->progress)
			progress(m, NULL);
		struct tr_handler h = {.event_cb = copy_event, .member_cb = NULL, .user_arg = m};
		char err[512] = "";
		rc = tr_read_file(m->cur->path, &h, NULL, err, sizeof(err));
		if (rc && *err)
			snprintf(m->err, sizeof(m->err), "%s", err);
	}
	if (m->progress)
		fprintf(stderr, "\r%60s\r", "");
	strb_jbuf_str(cj_member_begin(&m->w, "traceName"), out);
	if (rc) {
		cj_abort(&m->w);
		return rc;
	}
	rc = cj_finish(&m->w);
	if (rc)
		snprintf(m->err, sizeof(m->err), "writing %s: %s", out, strobe_last_error());
	return rc;
}

static void free_inputs(struct merge *m)
{
	for (size_t i = 0; i < m->n; i++) {
		struct input *in = &m->in[i];
		for (size_t j = 0; j < in->nprocs; j++) {
			free(in->procs[j].name);
			free(in->procs[j].label);
		}
		for (size_t j = 0; j < in->nmembers; j++) {
			free(in->members[j].key);
			free(in->members[j].json);
		}
		free(in->procs);
		free(in->members);
		free(in->host);
		free(in->dist);
		free(in->strobe);
		free(in->devices);
	}
	free(m->in);
}

int cmd_merge(int argc, char **argv)
{
	struct merge m = {0};
	const char *out = NULL;
	bool progress_flag = false;
	m.in = calloc((size_t)argc, sizeof(*m.in));
	if (!m.in) {
		fprintf(stderr, "strobe: merge: out of memory\n");
		return 1;
	}
	bool opts_done = false;
	int rc = 0;
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "-")) {
			/* Each input is read twice (names and members first). */
			rc = cli_usage(&cli,
			               "'-' (stdin) cannot be an input: merge reads each file twice; save it "
			               "to a file first");
		} else if (opts_done || a[0] != '-') {
			m.in[m.n++] = (struct input){.path = a, .world = -1};
		} else if (cli_is_help(a)) {
			fputs(usage_text, stdout);
			free(m.in);
			return 0;
		} else if (cli_opt(argc, argv, &i, "--output", "-o", &v)) {
			rc = cli_text(&cli, a[1] == 'o' ? "-o" : "--output", v, "a file name", &v);
			if (!rc && out)
				rc = cli_usage(&cli, "one output file ('%s' is a second)", v);
			out = v;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			m.quiet = true;
		} else if (!strcmp(a, "--progress")) {
			progress_flag = true;
		} else if (!strcmp(a, "--")) {
			opts_done = true;
		} else {
			rc = cli_usage(&cli, "unknown option '%s'", a);
		}
	}
	if (!rc && !out)
		rc = cli_usage(&cli, "no output file given (-o OUT)");
	if (!rc && strb_output_is_perfetto_path(out))
		rc = cli_usage(&cli,
		               "'%s': merge writes Chrome-trace JSON (.json, .json.gz, .json.zst); "
		               "strobe convert turns the merged file into Perfetto",
		               out);
	if (!rc && !m.n)
		rc = cli_usage(&cli, "no input traces given");
	if (rc) {
		free(m.in);
		return rc;
	}
	m.progress = !m.quiet && (progress_flag || isatty(STDERR_FILENO));

	for (size_t i = 0; i < m.n && !rc; i++) {
		struct input *in = &m.in[i];
		struct tr_handler h = {.event_cb = scan_event, .member_cb = scan_member, .user_arg = in};
		struct tr_stats st;
		rc = tr_read_file(in->path, &h, &st, m.err, sizeof(m.err));
		in->json_bytes = st.json_bytes;
		if (rc == -ENOMEM && !*m.err)
			snprintf(m.err, sizeof(m.err), "%s: out of memory", in->path);
		if (rc == -ERANGE && !*m.err)
			snprintf(m.err, sizeof(m.err),
			         "%s: more than %d processes (pids); a rank can have at most that", in->path,
			         PID_STRIDE - 2);
		if (!rc && !m.quiet && (st.truncated || st.dropped))
			fprintf(stderr,
			        "strobe: merge: %s: %" PRIu64
			        " strings over strobe's limits will be cut and %" PRIu64
			        " args or members beyond %d per event left out\n",
			        in->path, st.truncated, st.dropped, TR_ARGS_MAX);
	}
	if (!rc)
		rc = plan(&m);
	if (!rc)
		rc = write_merged(&m, out);
	if (rc)
		fprintf(stderr, "strobe: merge: %s\n", *m.err ? m.err : strerror(rc < 0 ? -rc : rc));
	else if (!m.quiet)
		fprintf(stderr, "strobe: merged %zu ranks into %s\n", m.n, out);
	free_inputs(&m);
	return rc ? 1 : 0;
}

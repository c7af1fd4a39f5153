/* strobe summary: what a trace file holds, where its time goes, and what it
 * lost, from one streaming pass over the file. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>
#include <yajl/yajl_tree.h>

#include "commands.h"
#include "trace_reader.h"

#define DEFAULT_TOP 10
#define NAME_W      44 /* name column; the rest of a row takes 49 of 100 columns */
#define NUM_W       8
#define DUR_W       13

static const char usage_text[] =
    "usage: strobe summary [--top N] [--json] FILE\n"
    "\n"
    "Summarises a Chrome-trace JSON file written by strobe or libkineto: plain, gzip or\n"
    "zstd (told apart by content); FILE \"-\" reads stdin. It prints the time span, event\n"
    "counts by phase and category, for each category the names with the most total time\n"
    "and the most self time, instant and counter events, and what the trace says it lost.\n"
    "The file is read once, as a stream.\n"
    "\n"
    "Self time is an event's duration less the parts of it covered by the complete (\"X\")\n"
    "events nested directly inside it on the same pid/tid row.\n"
    "\n"
    "options:\n"
    "  --top N     rows per table (default 10; 0 shows every row)\n"
    "  --json      print one JSON object instead of tables\n"
    "  -h, --help  show this text\n"
    "\n"
    "--json prints (times are integer nanoseconds; ts is relative to the trace's\n"
    "baseTimeNanoseconds; lists are sorted as the tables are and cut at --top):\n"
    "  {\"file\", \"compression\": \"none\" | \"gzip\" | \"zstd\", \"file_bytes\", \"json_bytes\",\n"
    "   \"events\", \"span\": {\"first_ts_ns\", \"last_end_ns\", \"duration_ns\"} or null,\n"
    "   \"by_ph\": {PH: count, ...}, \"by_cat\": {CAT: count, ...},\n"
    "   \"categories\": [{\"cat\", \"events\", \"names\", \"total_ns\", \"self_ns\",\n"
    "                   \"top_by_total\": [ROW, ...], \"top_by_self\": [ROW, ...]}, ...],\n"
    "   \"instants\": [{\"cat\", \"name\", \"count\"}, ...], \"instant_names\",\n"
    "   \"counters\": [{\"name\", \"key\", \"count\", \"min\", \"max\", \"last\"}, ...],\n"
    "   \"counter_series\",\n"
    "   \"accounting\": {\"strobe\": {KEY: number, ...} or null, \"unfinished_events\",\n"
    "                  \"unknown_names\", \"untimed_events\", \"truncated_strings\",\n"
    "                  \"dropped_members\", \"skipped_elements\", \"bad_times\"}}\n"
    "  ROW = {\"name\", \"count\", \"total_ns\", \"self_ns\", \"mean_ns\", \"max_ns\"}\n"
    "  \"strobe\" holds the numeric members of the trace's \"strobe\" metadata (nested\n"
    "  keys joined with '.'); the other counts are made by this command.\n"
    "\n"
    "exit status: 0 done, 1 the file cannot be read or is not a trace, 2 usage error.\n"
    "\n"
    "examples:\n"
    "  strobe summary trace.json\n"
    "  strobe summary --top 5 trace.json.gz\n"
    "  strobe summary --json trace.json.zst | jq '.categories[] | select(.cat == \"kernel\")'\n"
    "  zcat old.json.gz | strobe summary -\n";

/* ---- interned keys with one fixed-size item each ----------------------- */

struct table {
	size_t item_size;
	size_t n, cap;
	char **keys;
	unsigned char *items;
	uint32_t *slots; /* open addressing: index + 1, 0 when empty */
	size_t nslots;   /* a power of two */
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static bool table_rehash(struct table *t, size_t nslots)
{
	uint32_t *slots = calloc(nslots, sizeof(*slots));
	if (!slots)
		return false;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = hash_str(t->keys[i]) & (nslots - 1);
		while (slots[h])
			h = (h + 1) & (nslots - 1);
		slots[h] = (uint32_t)i + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->nslots = nslots;
	return true;
}

static void *table_item(const struct table *t, size_t i)
{
	return t->items + i * t->item_size;
}

/* The item for key, zeroed when new; NULL when out of memory. */
static void *table_get(struct table *t, const char *key)
{
	if ((t->n + 1) * 2 > t->nslots && !table_rehash(t, t->nslots ? t->nslots * 2 : 64))
		return NULL;
	size_t mask = t->nslots - 1, h = hash_str(key) & mask;
	for (; t->slots[h]; h = (h + 1) & mask)
		if (!strcmp(t->keys[t->slots[h] - 1], key))
			return table_item(t, t->slots[h] - 1);
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **keys = realloc(t->keys, cap * sizeof(*keys));
		if (!keys)
			return NULL;
		t->keys = keys;
		unsigned char *items = realloc(t->items, cap * t->item_size);
		if (!items)
			return NULL;
		t->items = items;
		t->cap = cap;
	}
	if (!(t->keys[t->n] = strdup(key)))
		return NULL;
	t->slots[h] = (uint32_t)t->n + 1;
	void *item = table_item(t, t->n++);
	memset(item, 0, t->item_size);
	return item;
}

static size_t table_index(const struct table *t, const void *item)
{
	return (size_t)((const unsigned char *)item - t->items) / t->item_size;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->keys[i]);
	free(t->keys);
	free(t->items);
	free(t->slots);
}

/* ---- what one pass collects -------------------------------------------- */

/* Keys join a category (or name) and a name (or arg key) with a byte that
 * kineto never writes; the first part's length says where to split. */
#define SEP "\x1f"

struct count {
	uint64_t n;
};

struct category {
	uint64_t events;
	int64_t total, self;
	uint32_t names;
};

struct span_name {
	uint32_t cat;     /* index in the categories table */
	uint32_t cat_len; /* the name starts after cat_len + 1 key bytes */
	uint64_t count;
	int64_t total, self, max;
};

struct instant {
	uint32_t cat_len;
	uint64_t count;
};

struct series {
	uint32_t name_len;
	uint64_t count;
	double min, max, last;
	int64_t last_ts;
};

/* One complete event, as small as self time needs. */
struct xrec {
	uint32_t row, name;
	int64_t ts, dur;
};

struct summary {
	struct table phs, cats, xcats, names, rows, instants, counters;
	struct xrec *x;
	size_t nx, capx;
	bool timed;
	int64_t first_ts, last_end;
	uint64_t unfinished, unknown, untimed;
	char *strobe_meta;
	char key[TR_NAME_MAX + 2 * TR_SHORT_MAX + 8];
};

static const char *join(struct summary *s, const char *a, const char *b)
{
	snprintf(s->key, sizeof(s->key), "%s" SEP "%s", a, b);
	return s->key;
}

static const char *ident_key(const struct tr_ident *id, char *buf, size_t len)
{
	snprintf(buf, len, "%c%s", id->kind == TR_NUMBER ? 'n' : id->kind == TR_STRING ? 's' : '-', id->text);
	return buf;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

static int add_complete(struct summary *s, const struct tr_event *ev)
{
	if (!ev->has_ts) {
		s->untimed++;
		return 0;
	}
	int64_t dur = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
	struct span_name *sn = table_get(&s->names, join(s, ev->cat, ev->name));
	if (!sn)
		return -ENOMEM;
	uint32_t name = (uint32_t)table_index(&s->names, sn);
	if (!sn->count) {
		struct category *c = table_get(&s->xcats, ev->cat);
		if (!c)
			return -ENOMEM;
		c->names++;
		sn->cat = (uint32_t)table_index(&s->xcats, c);
		sn->cat_len = (uint32_t)strlen(ev->cat);
	}
	struct category *c = table_item(&s->xcats, sn->cat);
	c->events++;
	c->total = sat_add(c->total, dur);
	sn->count++;
	sn->total = sat_add(sn->total, dur);
	sn->self = sat_add(sn->self, dur);
	if (dur > sn->max)
		sn->max = dur;

	char pid[TR_SHORT_MAX + 2], tid[TR_SHORT_MAX + 2];
	void *row = table_get(
	    &s->rows, join(s, ident_key(&ev->pid, pid, sizeof(pid)), ident_key(&ev->tid, tid, sizeof(tid))));
	if (!row)
		return -ENOMEM;
	if (s->nx == s->capx) {
		size_t cap = s->capx ? s->capx * 2 : 4096;
		struct xrec *x = realloc(s->x, cap * sizeof(*x));
		if (!x)
			return -ENOMEM;
		s->x = x;
		s->capx = cap;
	}
	s->x[s->nx++] = (struct xrec){(uint32_t)table_index(&s->rows, row), name, ev->ts_ns, dur};
	return 0;
}

/* A counter value as a double: kineto writes numbers, some tools quote them. */
static bool counter_value(const char *json, double *v)
{
	char buf[TR_VALUE_MAX];
	size_t n = strlen(json);
	if (n >= 2 && json[0] == '"' && json[n - 1] == '"') {
		memcpy(buf, json + 1, n - 2);
		buf[n - 2] = 0;
		json = buf;
	}
	char *end;
	errno = 0;
	*v = strtod(json, &end);
	return end != json && !*end && !errno && isfinite(*v);
}

static int add_counter(struct summary *s, const struct tr_event *ev)
{
	for (unsigned i = 0; i < ev->nargs; i++) {
		double v;
		if (ev->args[i].truncated || !counter_value(ev->args[i].value, &v))
			continue;
		struct series *c = table_get(&s->counters, join(s, ev->name, ev->args[i].key));
		if (!c)
			return -ENOMEM;
		c->name_len = (uint32_t)strlen(ev->name);
		if (!c->count || v < c->min)
			c->min = v;
		if (!c->count || v > c->max)
			c->max = v;
		int64_t ts = ev->has_ts ? ev->ts_ns : INT64_MIN;
		if (!c->count || ts >= c->last_ts) {
			c->last = v;
			c->last_ts = ts;
		}
		c->count++;
	}
	return 0;
}

static int count_key(struct table *t, const char *key)
{
	struct count *c = table_get(t, key);
	if (!c)
		return -ENOMEM;
	c->n++;
	return 0;
}

static int on_event(const struct tr_event *ev, void *arg)
{
	struct summary *s = arg;
	if (count_key(&s->phs, ev->ph) || count_key(&s->cats, ev->cat))
		return -ENOMEM;
	if (!strcmp(ev->name, "unknown"))
		s->unknown++;
	const struct tr_pair *fin = tr_event_arg(ev, "finished");
	if (fin && !strcmp(fin->value, "false"))
		s->unfinished++;

	bool complete = !strcmp(ev->ph, "X");
	/* Metadata events carry the capture start as ts; they are not activity. */
	if (ev->has_ts && strcmp(ev->ph, "M")) {
		int64_t end = sat_add(ev->ts_ns, complete && ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0);
		if (!s->timed || ev->ts_ns < s->first_ts)
			s->first_ts = ev->ts_ns;
		if (!s->timed || end > s->last_end)
			s->last_end = end;
		s->timed = true;
	}
	if (complete)
		return add_complete(s, ev);
	if (!strcmp(ev->ph, "C"))
		return add_counter(s, ev);
	if (!strcmp(ev->ph, "i") || !strcmp(ev->ph, "I")) {
		struct instant *in = table_get(&s->instants, join(s, ev->cat, ev->name));
		if (!in)
			return -ENOMEM;
		in->cat_len = (uint32_t)strlen(ev->cat);
		in->count++;
	}
	return 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct summary *s = arg;
	(void)len;
	if (strcmp(key, "strobe") || truncated)
		return 0;
	free(s->strobe_meta);
	s->strobe_meta = strdup(json);
	return s->strobe_meta ? 0 : -ENOMEM;
}

static int cmp_xrec(const void *pa, const void *pb)
{
	const struct xrec *a = pa, *b = pb;
	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->dur != b->dur)
		return a->dur > b->dur ? -1 : 1; /* the enclosing event first */
	return a->name < b->name ? -1 : a->name > b->name;
}

/* Takes from each event's self time what its direct children cover. After
 * the sort a row's events come in start order with parents before the
 * children that start with them, so a stack of open events finds the
 * parent. A child that outlives its parent only gives back the overlap. */
static int compute_self(struct summary *s)
{
	if (!s->nx)
		return 0;
	qsort(s->x, s->nx, sizeof(*s->x), cmp_xrec);
	struct xrec *stack = NULL;
	size_t depth = 0, cap = 0;
	for (size_t i = 0; i < s->nx; i++) {
		const struct xrec *e = &s->x[i];
		if (i && e->row != s->x[i - 1].row)
			depth = 0;
		while (depth && sat_add(stack[depth - 1].ts, stack[depth - 1].dur) <= e->ts)
			depth--;
		int64_t end = sat_add(e->ts, e->dur);
		if (depth) {
			const struct xrec *parent = &stack[depth - 1];
			int64_t pend = sat_add(parent->ts, parent->dur);
			struct span_name *sn = table_item(&s->names, parent->name);
			sn->self -= (end < pend ? end : pend) - e->ts;
		}
		if (depth == cap) {
			cap = cap ? cap * 2 : 64;
			struct xrec *ns = realloc(stack, cap * sizeof(*ns));
			if (!ns) {
				free(stack);
				return -ENOMEM;
			}
			stack = ns;
		}
		stack[depth++] = *e;
	}
	free(stack);
	for (size_t i = 0; i < s->names.n; i++) {
		const struct span_name *sn = table_item(&s->names, i);
		struct category *c = table_item(&s->xcats, sn->cat);
		c->self += sn->self;
	}
	return 0;
}

/* ---- sorted views -------------------------------------------------------- */

struct ref {
	uint32_t id;
	int64_t key;      /* sorted descending */
	const char *name; /* then ascending */
};

static int cmp_ref(const void *pa, const void *pb)
{
	const struct ref *a = pa, *b = pb;
	if (a->key != b->key)
		return a->key > b->key ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void sort_refs(struct ref *r, size_t n)
{
	qsort(r, n, sizeof(*r), cmp_ref);
}

static const char *name_part(const struct table *t, size_t i, uint32_t first_len)
{
	return t->keys[i] + first_len + 1;
}

static size_t shown(size_t n, size_t top)
{
	return top && top < n ? top : n;
}

/* A flattened numeric member of the "strobe" metadata object. */
struct meta_num {
	char *key;
	const char *raw;
};

struct meta {
	yajl_val root;
	struct meta_num *v;
	size_t n, cap;
};

static void meta_walk(struct meta *m, yajl_val v, const char *prefix)
{
	if (!YAJL_IS_OBJECT(v))
		return;
	for (size_t i = 0; i < v->u.object.len; i++) {
		const char *k = v->u.object.keys[i];
		yajl_val c = v->u.object.values[i];
		size_t need = strlen(prefix) + strlen(k) + 2;
		char *path = malloc(need);
		if (!path)
			return;
		snprintf(path, need, "%s%s%s", prefix, *prefix ? "." : "", k);
		if (YAJL_IS_NUMBER(c) && m->n < 4096) {
			if (m->n == m->cap) {
				size_t cap = m->cap ? m->cap * 2 : 16;
				struct meta_num *nv = realloc(m->v, cap * sizeof(*nv));
				if (!nv) {
					free(path);
					return;
				}
				m->v = nv;
				m->cap = cap;
			}
			m->v[m->n++] = (struct meta_num){path, YAJL_GET_NUMBER(c)};
			continue;
		}
		meta_walk(m, c, path);
		free(path);
	}
}

static void meta_free(struct meta *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].key);
	free(m->v);
	yajl_tree_free(m->root);
}

struct report {
	const char *file;
	const struct tr_stats *st;
	struct summary *s;
	size_t top;
	struct ref *phs, *cats, *xcats, *instants, *counters;
	struct meta meta;
};

static struct ref *refs_of(const struct table *t, uint32_t first_len_offset, int64_t (*key)(const void *item))
{
	struct ref *r = calloc(t->n ? t->n : 1, sizeof(*r));
	if (!r)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		const void *item = table_item(t, i);
		uint32_t skip = 0;
		if (first_len_offset != UINT32_MAX) {
			memcpy(&skip, (const unsigned char *)item + first_len_offset, sizeof(skip));
			skip++;
		}
		r[i] = (struct ref){(uint32_t)i, key(item), t->keys[i] + skip};
	}
	sort_refs(r, t->n);
	return r;
}

static int64_t key_count(const void *item)
{
	const struct count *c = item;
	return (int64_t)c->n;
}

static int64_t key_category(const void *item)
{
	const struct category *c = item;
	return c->total;
}

static int64_t key_instant(const void *item)
{
	const struct instant *c = item;
	return (int64_t)c->count;
}

static int64_t key_series(const void *item)
{
	const struct series *c = item;
	return (int64_t)c->count;
}

/* The names of category cat, sorted by total or self time. */
static struct ref *names_of(const struct summary *s, uint32_t cat, bool by_self, size_t *n)
{
	const struct category *c = table_item(&s->xcats, cat);
	struct ref *r = calloc(c->names ? c->names : 1, sizeof(*r));
	if (!r)
		return NULL;
	*n = 0;
	for (size_t i = 0; i < s->names.n && *n < c->names; i++) {
		const struct span_name *sn = table_item(&s->names, i);
		if (sn->cat == cat)
			r[(*n)++] = (struct ref){(uint32_t)i, by_self ? sn->self : sn->total,
			                         name_part(&s->names, i, sn->cat_len)};
	}
	sort_refs(r, *n);
	return r;
}

/* ---- human output -------------------------------------------------------- */

static const char *fmt_dur(int64_t ns, char *buf, size_t len)
{
	uint64_t a = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	const char *sign = ns < 0 ? "-" : "";
	if (a < 1000) {
		snprintf(buf, len, "%s%" PRIu64 " ns", sign, a);
		return buf;
	}
	static const struct {
		uint64_t scale; /* ns per unit / 1000: the step of the third decimal */
		const char *unit;
	} units[] = {{1, "µs"}, {1000, "ms"}, {1000000, "s"}};
	size_t u = a < 1000000 ? 0 : a < 1000000000 ? 1 : 2;
	uint64_t milli = (a + units[u].scale / 2) / units[u].scale;
	snprintf(buf, len, "%s%" PRIu64 ".%03" PRIu64 " %s", sign, milli / 1000, milli % 1000, units[u].unit);
	return buf;
}

/* Columns on a terminal, counting a UTF-8 sequence as one. */
static size_t columns(const char *s, size_t bytes)
{
	size_t n = 0;
	for (size_t i = 0; i < bytes; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

/* The byte length of the first cols columns of s. */
static size_t prefix_bytes(const char *s, size_t cols)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80 && cols-- == 0)
			break;
	return i;
}

/* Prints s in a cell of width columns, right-aligned or left-aligned. A name
 * too long for it loses its middle: C++ kernel names differ at both ends. */
static void cell(const char *s, size_t width, bool right)
{
	size_t bytes = strlen(s), cols = columns(s, bytes);
	if (cols > width) {
		size_t head = (width - 1) * 2 / 3, tail = width - 1 - head;
		size_t hb = prefix_bytes(s, head), tb = prefix_bytes(s, cols - tail);
		printf("%.*s…%s", (int)hb, s, s + tb);
		return;
	}
	printf("%s%*s%s", right ? "" : s, (int)(width - cols), "", right ? s : "");
}

static void num_cell(uint64_t v, size_t width)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	cell(buf, width, true);
}

static void dur_cell(int64_t ns)
{
	char buf[40];
	cell(fmt_dur(ns, buf, sizeof(buf)), DUR_W, true);
}

static const char *shown_cat(const char *cat)
{
	return *cat ? cat : "(none)";
}

static void name_rows(const struct summary *s, const struct ref *r, size_t n, const char *title)
{
	printf("  ");
	cell(title, NAME_W, false);
	cell("count", NUM_W, true);
	cell("total", DUR_W, true);
	cell("self", DUR_W, true);
	cell("mean", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < n; i++) {
		const struct span_name *sn = table_item(&s->names, r[i].id);
		printf("  ");
		cell(r[i].name, NAME_W, false);
		num_cell(sn->count, NUM_W);
		dur_cell(sn->total);
		dur_cell(sn->self);
		dur_cell(sn->total / (int64_t)sn->count);
		printf("\n");
	}
}

static void more_line(size_t total, size_t shown_n)
{
	if (total > shown_n)
		printf("  … %zu more (--top 0 shows all)\n", total - shown_n);
}

static int print_category(const struct report *rp, uint32_t cat)
{
	const struct summary *s = rp->s;
	const struct category *c = table_item(&s->xcats, cat);
	char total[40], self[40];
	printf("\n%s: %" PRIu64 " event%s, %" PRIu32 " name%s, total %s, self %s\n",
	       shown_cat(s->xcats.keys[cat]), c->events, c->events == 1 ? "" : "s", c->names,
	       c->names == 1 ? "" : "s", fmt_dur(c->total, total, sizeof(total)),
	       fmt_dur(c->self, self, sizeof(self)));
	size_t n;
	struct ref *r = names_of(s, cat, false, &n);
	if (!r)
		return -ENOMEM;
	struct ref *by_self = names_of(s, cat, true, &n);
	if (!by_self) {
		free(r);
		return -ENOMEM;
	}
	size_t rows = shown(n, rp->top);
	char title[64];
	snprintf(title, sizeof(title), "top %zu by total time", rows);
	name_rows(s, r, rows, title);
	/* The self column is already in the first table; a second one only
	 * helps when it would list other names or in another order. */
	bool same = true;
	for (size_t i = 0; i < rows && same; i++)
		same = r[i].id == by_self[i].id;
	if (!same) {
		snprintf(title, sizeof(title), "top %zu by self time", rows);
		name_rows(s, by_self, rows, title);
	}
	more_line(n, rows);
	free(r);
	free(by_self);
	return 0;
}

static const char *compression_name(enum tr_compression c)
{
	return c == TR_GZIP ? "gzip" : c == TR_ZSTD ? "zstd" : "none";
}

static int print_human(struct report *rp)
{
	const struct summary *s = rp->s;
	const struct tr_stats *st = rp->st;
	char buf[40];

	printf("file      %s (%s, %" PRIu64 " bytes of JSON)\n", rp->file,
	       st->compression == TR_PLAIN ? "plain JSON" : compression_name(st->compression),
	       st->json_bytes);
	printf("events    %" PRIu64 " (", st->events);
	for (size_t i = 0; i < s->phs.n; i++) {
		const struct count *c = table_item(&s->phs, rp->phs[i].id);
		printf("%s%s %" PRIu64, i ? ", " : "", *rp->phs[i].name ? rp->phs[i].name : "(no ph)", c->n);
	}
	printf(")\n");
	if (s->timed)
		printf("span      %s, from the first event's start to the last event's end\n",
		       fmt_dur(s->last_end - s->first_ts, buf, sizeof(buf)));
	else
		printf("span      none: no event has a timestamp\n");

	printf("\n");
	cell("category", NAME_W + 2, false);
	cell("events", NUM_W, true);
	cell("total", DUR_W, true);
	cell("self", DUR_W, true);
	printf("\n");
	for (size_t i = 0; i < s->cats.n; i++) {
		const char *name = rp->cats[i].name;
		const struct count *c = table_item(&s->cats, rp->cats[i].id);
		cell(shown_cat(name), NAME_W + 2, false);
		num_cell(c->n, NUM_W);
		/* Only complete events have a duration to add up. */
		for (size_t j = 0; j < s->xcats.n; j++) {
			const struct category *xc = table_item(&s->xcats, j);
			if (!strcmp(s->xcats.keys[j], name)) {
				dur_cell(xc->total);
				dur_cell(xc->self);
			}
		}
		printf("\n");
	}

	for (size_t i = 0; i < s->xcats.n; i++)
		if (print_category(rp, rp->xcats[i].id))
			return -ENOMEM;

	size_t n = shown(s->instants.n, rp->top);
	printf("\ninstants: %zu name%s\n", s->instants.n, s->instants.n == 1 ? "" : "s");
	if (n) {
		printf("  ");
		cell("name", NAME_W, false);
		cell("count", NUM_W, true);
		printf("  category\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct instant *in = table_item(&s->instants, rp->instants[i].id);
		printf("  ");
		cell(rp->instants[i].name, NAME_W, false);
		num_cell(in->count, NUM_W);
		const char *cat = s->instants.keys[rp->instants[i].id];
		printf("  %.*s\n", in->cat_len ? (int)in->cat_len : 6, in->cat_len ? cat : "(none)");
	}
	more_line(s->instants.n, n);

	n = shown(s->counters.n, rp->top);
	printf("\ncounters: %zu series\n", s->counters.n);
	if (n) {
		printf("  ");
		cell("name (arg)", NAME_W, false);
		cell("count", NUM_W, true);
		cell("min", DUR_W, true);
		cell("max", DUR_W, true);
		cell("last", DUR_W, true);
		printf("\n");
	}
	for (size_t i = 0; i < n; i++) {
		const struct series *c = table_item(&s->counters, rp->counters[i].id);
		const char *key = s->counters.keys[rp->counters[i].id];
		const char *arg = name_part(&s->counters, rp->counters[i].id, c->name_len);
		char label[TR_NAME_MAX + TR_SHORT_MAX + 4];
		snprintf(label, sizeof(label), *arg ? "%.*s (%s)" : "%.*s%s", (int)c->name_len, key, arg);
		printf("  ");
		cell(label, NAME_W, false);
		num_cell(c->count, NUM_W);
		double v[3] = {c->min, c->max, c->last};
		for (int k = 0; k < 3; k++) {
			snprintf(buf, sizeof(buf), "%.6g", v[k]);
			cell(buf, DUR_W, true);
		}
		printf("\n");
	}
	more_line(s->counters.n, n);

	printf("\naccounting\n");
	if (!s->strobe_meta)
		printf("  (the trace has no \"strobe\" metadata with drop counts)\n");
	for (size_t i = 0; i < rp->meta.n; i++) {
		printf("  ");
		cell(rp->meta.v[i].key, NAME_W, false);
		cell(rp->meta.v[i].raw, NUM_W, true);
		printf("\n");
	}
	const struct {
		const char *what;
		uint64_t n;
	} counts[] = {
	    {"events with \"finished\": false", s->unfinished},
	    {"events named \"unknown\"", s->unknown},
	    {"complete events without ts", s->untimed},
	    {"strings cut short by this reader", st->truncated},
	    {"args beyond this reader's limit", st->dropped},
	    {"traceEvents entries not objects", st->skipped},
	    {"ts/dur values out of range", st->bad_times},
	};
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		printf("  ");
		cell(counts[i].what, NAME_W, false);
		num_cell(counts[i].n, NUM_W);
		printf("\n");
	}
	return 0;
}

/* ---- JSON output ----------------------------------------------------------- */

static void gs(yajl_gen g, const char *s)
{
	yajl_gen_string(g, (const unsigned char *)s, strlen(s));
}

static void gi(yajl_gen g, const char *key, int64_t v)
{
	gs(g, key);
	yajl_gen_integer(g, v);
}

/* Doubles in their shortest exact form; yajl's own uses %.20g. */
static void gd(yajl_gen g, const char *key, double v)
{
	char buf[40];
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	gs(g, key);
	yajl_gen_number(g, buf, strlen(buf));
}

static void json_rows(yajl_gen g, const struct summary *s, const char *key, const struct ref *r, size_t n)
{
	gs(g, key);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < n; i++) {
		const struct span_name *sn = table_item(&s->names, r[i].id);
		yajl_gen_map_open(g);
		gs(g, "name");
		gs(g, r[i].name);
		gi(g, "count", (int64_t)sn->count);
		gi(g, "total_ns", sn->total);
		gi(g, "self_ns", sn->self);
		gi(g, "mean_ns", sn->total / (int64_t)sn->count);
		gi(g, "max_ns", sn->max);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

static void json_counts(yajl_gen g, const char *key, const struct table *t, const struct ref *r)
{
	gs(g, key);
	yajl_gen_map_open(g);
	for (size_t i = 0; i < t->n; i++) {
		const struct count *c = table_item(t, r[i].id);
		gi(g, r[i].name, (int64_t)c->n);
	}
	yajl_gen_map_close(g);
}

static int print_json(struct report *rp)
{
	const struct summary *s = rp->s;
	const struct tr_stats *st = rp->st;
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return -ENOMEM;
	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_config(g, yajl_gen_indent_string, "  ");
	int rc = 0;

	yajl_gen_map_open(g);
	gs(g, "file");
	gs(g, rp->file);
	gs(g, "compression");
	gs(g, compression_name(st->compression));
	gi(g, "file_bytes", (int64_t)st->file_bytes);
	gi(g, "json_bytes", (int64_t)st->json_bytes);
	gi(g, "events", (int64_t)st->events);
	gs(g, "span");
	if (s->timed) {
		yajl_gen_map_open(g);
		gi(g, "first_ts_ns", s->first_ts);
		gi(g, "last_end_ns", s->last_end);
		gi(g, "duration_ns", s->last_end - s->first_ts);
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	json_counts(g, "by_ph", &s->phs, rp->phs);
	json_counts(g, "by_cat", &s->cats, rp->cats);

	gs(g, "categories");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->xcats.n && !rc; i++) {
		uint32_t cat = rp->xcats[i].id;
		const struct category *c = table_item(&s->xcats, cat);
		yajl_gen_map_open(g);
		gs(g, "cat");
		gs(g, s->xcats.keys[cat]);
		gi(g, "events", (int64_t)c->events);
		gi(g, "names", c->names);
		gi(g, "total_ns", c->total);
		gi(g, "self_ns", c->self);
		for (int by_self = 0; by_self < 2 && !rc; by_self++) {
			size_t n;
			struct ref *r = names_of(s, cat, by_self, &n);
			if (!r) {
				rc = -ENOMEM;
				break;
			}
			json_rows(g, s, by_self ? "top_by_self" : "top_by_total", r, shown(n, rp->top));
			free(r);
		}
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);

	gs(g, "instants");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < shown(s->instants.n, rp->top); i++) {
		const struct instant *in = table_item(&s->instants, rp->instants[i].id);
		yajl_gen_map_open(g);
		gs(g, "cat");
		yajl_gen_string(g, (const unsigned char *)s->instants.keys[rp->instants[i].id], in->cat_len);
		gs(g, "name");
		gs(g, rp->instants[i].name);
		gi(g, "count", (int64_t)in->count);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gi(g, "instant_names", (int64_t)s->instants.n);

	gs(g, "counters");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < shown(s->counters.n, rp->top); i++) {
		const struct series *c = table_item(&s->counters, rp->counters[i].id);
		yajl_gen_map_open(g);
		gs(g, "name");
		yajl_gen_string(g, (const unsigned char *)s->counters.keys[rp->counters[i].id], c->name_len);
		gs(g, "key");
		gs(g, rp->counters[i].name);
		gi(g, "count", (int64_t)c->count);
		gd(g, "min", c->min);
		gd(g, "max", c->max);
		gd(g, "last", c->last);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
	gi(g, "counter_series", (int64_t)s->counters.n);

	gs(g, "accounting");
	yajl_gen_map_open(g);
	gs(g, "strobe");
	if (s->strobe_meta) {
		yajl_gen_map_open(g);
		for (size_t i = 0; i < rp->meta.n; i++) {
			gs(g, rp->meta.v[i].key);
			yajl_gen_number(g, rp->meta.v[i].raw, strlen(rp->meta.v[i].raw));
		}
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	gi(g, "unfinished_events", (int64_t)s->unfinished);
	gi(g, "unknown_names", (int64_t)s->unknown);
	gi(g, "untimed_events", (int64_t)s->untimed);
	gi(g, "truncated_strings", (int64_t)st->truncated);
	gi(g, "dropped_members", (int64_t)st->dropped);
	gi(g, "skipped_elements", (int64_t)st->skipped);
	gi(g, "bad_times", (int64_t)st->bad_times);
	yajl_gen_map_close(g);
	yajl_gen_map_close(g);

	const unsigned char *out;
	size_t len;
	if (!rc && yajl_gen_get_buf(g, &out, &len) == yajl_gen_status_ok)
		fwrite(out, 1, len, stdout);
	yajl_gen_free(g);
	return rc;
}

/* ---- the command ----------------------------------------------------------- */

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "strobe: summary: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nusage: strobe summary [--top N] [--json] FILE (see strobe summary --help)\n");
	return 2;
}

static int report(const char *file, const struct tr_stats *st, struct summary *s, size_t top, bool json)
{
	struct report rp = {.file = file, .st = st, .s = s, .top = top};
	int rc = -ENOMEM;
	if (s->strobe_meta) {
		rp.meta.root = yajl_tree_parse(s->strobe_meta, NULL, 0);
		meta_walk(&rp.meta, rp.meta.root, "");
	}
	rp.phs = refs_of(&s->phs, UINT32_MAX, key_count);
	rp.cats = refs_of(&s->cats, UINT32_MAX, key_count);
	rp.xcats = refs_of(&s->xcats, UINT32_MAX, key_category);
	rp.instants = refs_of(&s->instants, offsetof(struct instant, cat_len), key_instant);
	rp.counters = refs_of(&s->counters, offsetof(struct series, name_len), key_series);
	if (rp.phs && rp.cats && rp.xcats && rp.instants && rp.counters)
		rc = json ? print_json(&rp) : print_human(&rp);
	free(rp.phs);
	free(rp.cats);
	free(rp.xcats);
	free(rp.instants);
	free(rp.counters);
	meta_free(&rp.meta);
	return rc;
}

int cmd_summary(int argc, char **argv)
{
	size_t top = DEFAULT_TOP;
	bool json = false;
	const char *file = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--top") || !strncmp(a, "--top=", 6)) {
			val = a[5] == '=' ? a + 6 : i + 1 < argc ? argv[++i] : NULL;
			if (!val)
				return usage_error("%s needs a number", a);
			char *end;
			errno = 0;
			long v = strtol(val, &end, 10);
			if (errno || end == val || *end || v < 0 || v > 1000000)
				return usage_error("--top wants a count from 0 to 1000000, not '%s'", val);
			top = (size_t)v;
		} else if (!strcmp(a, "--")) {
			if (i + 2 != argc || file)
				return usage_error("%s", i + 1 < argc ? "give one trace file"
				                                      : "no trace file given");
			file = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			return usage_error("unknown option '%s'", a);
		} else if (file) {
			return usage_error("one trace file at a time ('%s' is a second)", a);
		} else {
			file = a;
		}
	}
	if (!file)
		return usage_error("%s", "no trace file given");

	struct summary s = {
	    .phs.item_size = sizeof(struct count),
	    .cats.item_size = sizeof(struct count),
	    .xcats.item_size = sizeof(struct category),
	    .names.item_size = sizeof(struct span_name),
	    .rows.item_size = 1,
	    .instants.item_size = sizeof(struct instant),
	    .counters.item_size = sizeof(struct series),
	};
	struct tr_handler h = {on_event, on_member, &s};
	struct tr_stats st;
	char err[512];
	int rc = tr_read_file(file, &h, &st, err, sizeof(err));
	if (!rc)
		rc = compute_self(&s);
	if (!rc)
		rc = report(file, &st, &s, top, json);
	/* The reader words its own failures; ours (a callback's) are all memory. */
	if (rc && *err)
		fprintf(stderr, "strobe: %s\n", err);
	else if (rc)
		fprintf(stderr, "strobe: %s: out of memory\n", file);

	struct table *tables[] = {&s.phs, &s.cats, &s.xcats, &s.names, &s.rows, &s.instants, &s.counters};
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		table_free(tables[i]);
	free(s.x);
	free(s.strobe_meta);
	return rc ? 1 : 0;
}

/* One streaming pass over a trace file, and what it adds up to: see
 * analysis.h. */
#include "analysis/analysis.h"
#include "analysis/sort.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_tree.h>

/* ---- interned keys with one fixed-size item each ----------------------- */

/* Eight bytes at a time: a name can be a long kernel signature, and every
 * complete event looks its name up. Only the slots depend on it, not the
 * order of anything. */
static uint64_t hash_str(const char *s)
{
	size_t n = strlen(s);
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&w, s, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, s, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

bool an_slots_rebuild(uint32_t **slots, size_t *nslots, size_t ns, size_t n,
                      uint64_t (*hash)(const void *set, size_t i), const void *set)
{
	uint32_t *v = calloc(ns, sizeof(*v));
	if (!v)
		return false;
	for (size_t i = 0; i < n; i++) {
		size_t h = hash(set, i) & (ns - 1);
		while (v[h])
			h = (h + 1) & (ns - 1);
		v[h] = (uint32_t)i + 1;
	}
	free(*slots);
	*slots = v;
	*nslots = ns;
	return true;
}

static uint64_t key_hash(const void *set, size_t i)
{
	return hash_str(((const struct an_table *)set)->keys[i]);
}

static bool table_rehash(struct an_table *t, size_t nslots)
{
	return an_slots_rebuild(&t->slots, &t->nslots, nslots, t->n, key_hash, t);
}

void *an_table_item(const struct an_table *t, size_t i)
{
	return t->items + i * t->item_size;
}

void an_losses(const struct an_trace *a, const struct tr_stats *st, struct an_loss out[AN_LOSSES])
{
	const struct an_loss all[AN_LOSSES] = {
	    {"events with \"finished\": false", "unfinished_events", a->unfinished},
	    {"events named \"unknown\"", "unknown_names", a->unknown},
	    {"complete events without ts", "untimed_events", a->untimed},
	    {"strings cut short by this reader", "truncated_strings", st->truncated},
	    {"args beyond this reader's limit", "dropped_members", st->dropped},
	    {"traceEvents entries not objects", "skipped_elements", st->skipped},
	    {"ts/dur values out of range", "bad_times", st->bad_times},
	    {"dur values below 0 (taken as 0)", "negative_durs", st->negative_durs},
	    {"Perfetto slices never ended", "unended_slices", st->unended},
	    {"Perfetto slices past the open-slice limit", "cut_open_slices", st->open_cut},
	    {"Perfetto tracks past the track limit", "cut_tracks", st->cut_tracks},
	    {"libkineto defects repaired by this reader", "repaired_defects", st->repaired},
	};
	memcpy(out, all, sizeof(all));
}

bool an_past_top(size_t top, int64_t rank, int64_t *prev, size_t *in_rank)
{
	if (rank != *prev)
		*in_rank = 0;
	*prev = rank;
	return top && ++*in_rank > top;
}

void *an_table_find(const struct an_table *t, const char *key)
{
	if (!t->nslots)
		return NULL;
	size_t mask = t->nslots - 1;
	for (size_t h = hash_str(key) & mask; t->slots[h]; h = (h + 1) & mask)
		if (!strcmp(t->keys[t->slots[h] - 1], key))
			return an_table_item(t, t->slots[h] - 1);
	return NULL;
}

void *an_table_get(struct an_table *t, const char *key)
{
	if ((t->n + 1) * 2 > t->nslots && !table_rehash(t, t->nslots ? t->nslots * 2 : 64))
		return NULL;
	size_t mask = t->nslots - 1, h = hash_str(key) & mask;
	for (; t->slots[h]; h = (h + 1) & mask)
		if (!strcmp(t->keys[t->slots[h] - 1], key))
			return an_table_item(t, t->slots[h] - 1);
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
	void *item = an_table_item(t, t->n++);
	memset(item, 0, t->item_size);
	return item;
}

size_t an_table_index(const struct an_table *t, const void *item)
{
	return (size_t)((const unsigned char *)item - t->items) / t->item_size;
}

void an_table_free(struct an_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->keys[i]);
	free(t->keys);
	free(t->items);
	free(t->slots);
}

bool an_grow(void **arr, size_t n, size_t *cap, size_t size)
{
	if (n < *cap)
		return true;
	/* Small to start: some arrays are one per row (the wall-time walks), and
	 * a trace may have tens of thousands of rows. */
	size_t ncap = *cap ? *cap * 2 : 16;
	if (ncap <= n) /* a jump past the room (list_streams' counts) */
		ncap = n + 1;
	if (ncap > SIZE_MAX / size)
		return false;
	void *p = realloc(*arr, ncap * size);
	if (!p)
		return false;
	*arr = p;
	*cap = ncap;
	return true;
}

void an_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* ---- collecting ---------------------------------------------------------- */

/* Appends s to buf (len bytes, *n used), as much as fits with the NUL. */
static void put(char *buf, size_t len, size_t *n, const char *s)
{
	size_t k = strlen(s);
	if (k > len - 1 - *n)
		k = len - 1 - *n;
	memcpy(buf + *n, s, k);
	*n += k;
	buf[*n] = 0;
}

/* x AN_SEP y in a->key (these run once per event: no printf). */
static const char *join(struct an_trace *a, const char *x, const char *y)
{
	size_t n = 0;
	put(a->key, sizeof(a->key), &n, x);
	put(a->key, sizeof(a->key), &n, AN_SEP);
	put(a->key, sizeof(a->key), &n, y);
	return a->key;
}

static const char *ident_key(const struct tr_ident *id, char *buf, size_t len)
{
	size_t n = 0;
	put(buf, len, &n, id->kind == TR_NUMBER ? "n" : id->kind == TR_STRING ? "s" : "-");
	put(buf, len, &n, id->text);
	return buf;
}

int64_t an_sat_add(int64_t x, int64_t y)
{
	if (y > 0 && x > INT64_MAX - y)
		return INT64_MAX;
	return y < 0 && x < INT64_MIN - y ? INT64_MIN : x + y;
}

static struct an_process *process_of(struct an_trace *a, const struct tr_ident *pid)
{
	char key[TR_SHORT_MAX + 2];
	struct an_process *p = an_table_get(&a->pids, ident_key(pid, key, sizeof(key)));
	if (p && !p->seen) {
		p->seen = true;
		p->rank = -1;
	}
	return p;
}

bool an_parse_int(const char *s, int64_t *v)
{
	/* Up to 18 digits cannot overflow: the common case, without strtoll. */
	size_t i = s[0] == '-', n = 0;
	int64_t x = 0;
	for (; n < 18 && s[i + n] >= '0' && s[i + n] <= '9'; n++)
		x = x * 10 + (s[i + n] - '0');
	if (n && !s[i + n]) {
		*v = s[0] == '-' ? -x : x;
		return true;
	}
	char *end;
	errno = 0;
	long long y = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return false;
	*v = y;
	return true;
}

/* A positive integer arg ("correlation", "bytes"); 0 when absent or not one. */
static uint64_t uint_arg(const struct tr_event *ev, const char *key)
{
	const struct tr_pair *p = tr_event_arg(ev, key);
	if (!p || p->truncated || p->value[0] < '0' || p->value[0] > '9')
		return 0;
	int64_t v;
	if (an_parse_int(p->value, &v))
		return (uint64_t)v;
	char *end;
	errno = 0;
	unsigned long long u = strtoull(p->value, &end, 10);
	return errno || *end ? 0 : u;
}

/* A JSON string's text without quotes and escapes (\u escapes become
 * UTF-8); false when json is not a string. */
static bool json_string(const char *json, char *out, size_t len)
{
	size_t n = 0;
	if (*json++ != '"' || !len)
		return false;
	for (; *json && *json != '"'; json++) {
		char c = *json;
		char utf8[4];
		size_t k = 1;
		utf8[0] = c;
		if (c == '\\') {
			c = *++json;
			const char *plain = strchr("\"\\/bfnrt", c);
			if (c && plain && c != 'u') {
				utf8[0] = "\"\\/\b\f\n\r\t"[plain - "\"\\/bfnrt"];
			} else if (c == 'u') {
				unsigned cp = 0;
				for (int i = 1; i <= 4; i++) {
					char h = json[i];
					if (!h)
						return false;
					cp = cp * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
				}
				json += 4;
				/* Lone surrogates and pairs alike become U+FFFD: names that
				 * need them are rare, and none of what we parse depends on it. */
				if (cp >= 0xd800 && cp < 0xe000)
					cp = 0xfffd;
				if (cp < 0x80) {
					utf8[0] = (char)cp;
				} else if (cp < 0x800) {
					utf8[0] = (char)(0xc0 | cp >> 6);
					utf8[1] = (char)(0x80 | (cp & 0x3f));
					k = 2;
				} else {
					utf8[0] = (char)(0xe0 | cp >> 12);
					utf8[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
					utf8[2] = (char)(0x80 | (cp & 0x3f));
					k = 3;
				}
			} else {
				return false;
			}
		}
		if (n + k >= len)
			break;
		memcpy(out + n, utf8, k);
		n += k;
	}
	out[n] = 0;
	return true;
}

/* "rank <N> · ..." (the middle dot as UTF-8) gives N; else -1. */
static int64_t rank_of_name(const char *name)
{
	if (strncmp(name, "rank ", 5) || name[5] < '0' || name[5] > '9')
		return -1;
	char *end;
	errno = 0;
	long long r = strtoll(name + 5, &end, 10);
	if (errno || r > INT32_MAX || strncmp(end, " \xc2\xb7 ", 4))
		return -1;
	return r;
}

/* thread_name: kept for the row it names, whichever comes first. */
static int thread_name(struct an_trace *a, const struct tr_event *ev)
{
	const struct tr_pair *arg = tr_event_arg(ev, "name");
	if (!arg)
		return 0;
	char pid[TR_SHORT_MAX + 2], tid[TR_SHORT_MAX + 2];
	ident_key(&ev->pid, pid, sizeof(pid));
	struct an_tname *t = an_table_get(&a->tnames, join(a, pid, ident_key(&ev->tid, tid, sizeof(tid))));
	if (!t)
		return -ENOMEM;
	if (!json_string(arg->value, t->name, sizeof(t->name)))
		snprintf(t->name, sizeof(t->name), "%.*s", (int)sizeof(t->name) - 1, arg->value);
	for (size_t n = strlen(t->name); n && t->name[n - 1] == ' '; n--)
		t->name[n - 1] = 0;
	return 0;
}

static int on_metadata(struct an_trace *a, const struct tr_event *ev)
{
	if (!strcmp(ev->name, "thread_name"))
		return thread_name(a, ev);
	bool name = !strcmp(ev->name, "process_name");
	if (!name && strcmp(ev->name, "process_labels"))
		return 0;
	const struct tr_pair *arg = tr_event_arg(ev, name ? "name" : "labels");
	struct an_process *p = arg ? process_of(a, &ev->pid) : NULL;
	if (!arg)
		return 0;
	if (!p)
		return -ENOMEM;
	char *dst = name ? p->name : p->label;
	if (!json_string(arg->value, dst, TR_SHORT_MAX))
		snprintf(dst, TR_SHORT_MAX, "%.*s", TR_SHORT_MAX - 1, arg->value);
	*(name ? &p->named : &p->labelled) = true;
	if (name)
		p->rank = rank_of_name(p->name);
	return 0;
}

/* The direction of a copy: its "copy kind" arg, else the word after "Memcpy"
 * in its name (libkineto and strobe name copies "Memcpy HtoD (Pinned -> Device)"). */
static void copy_dir(const struct tr_event *ev, char *out, size_t len)
{
	const struct tr_pair *kind = tr_event_arg(ev, "copy kind");
	if (kind && json_string(kind->value, out, len) && *out)
		return;
	if (kind && !kind->truncated && kind->value[0] != '"') {
		snprintf(out, len, "%.*s", (int)len - 1, kind->value);
		return;
	}
	const char *n = ev->name;
	if (!strncmp(n, "Memcpy ", 7)) {
		size_t w = strcspn(n + 7, " ");
		if (w && w < len) {
			memcpy(out, n + 7, w);
			out[w] = 0;
			return;
		}
	}
	snprintf(out, len, "unknown");
}

static bool is_nccl(const char *name)
{
	for (const char *p = name; *p; p++)
		if ((p[0] | 0x20) == 'n' && (p[1] | 0x20) == 'c' && (p[2] | 0x20) == 'c' &&
		    (p[3] | 0x20) == 'l')
			return true;
	return false;
}

/* A launch or kernel without a "correlation" arg: an ac2g flow may follow
 * with it. Its complete event's seq is the next one (an_hta_add's). */
static void remember_flow(struct an_trace *a, const struct tr_event *ev, bool launch)
{
	a->pending_flow.active = true;
	a->pending_flow.launch = launch;
	a->pending_flow.pid = ev->pid;
	a->pending_flow.tid = ev->tid;
	a->pending_flow.ts = ev->ts_ns;
	a->pending_flow.seq = (uint32_t)a->nseq;
}

/* What a complete event's category is for the GPU tables (an_name.gpu). */
static enum an_cat_kind cat_kind(const char *cat)
{
	return !strcmp(cat, "kernel")                                        ? AN_CAT_KERNEL
	       : !strcmp(cat, "gpu_memcpy")                                  ? AN_CAT_COPY
	       : !strcmp(cat, "gpu_memset")                                  ? AN_CAT_MEMSET
	       : !strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver") ? AN_CAT_LAUNCH
	                                                                     : AN_CAT_OTHER;
}

/* GPU work (its record is x's, see gpu_records), and for launch latency
 * (*what, *corr) a launch or kernel with its "correlation" arg. */
static int add_gpu(struct an_trace *a, const struct tr_event *ev, const struct an_name *sn, uint32_t row,
                   int64_t dur, uint32_t *what, uint64_t *corr)
{
	bool kernel = sn->gpu == AN_CAT_KERNEL, copy = sn->gpu == AN_CAT_COPY,
	     launch = sn->gpu == AN_CAT_LAUNCH;
	if (sn->gpu == AN_CAT_OTHER)
		return 0;
	/* The row already knows its process. */
	uint32_t pid = ((const struct an_row *)an_table_item(&a->rows, row))->pid;
	struct an_process *p = an_table_item(&a->pids, pid);
	uint64_t c = uint_arg(ev, "correlation");
	if (launch) {
		if (!c)
			remember_flow(a, ev, true);
		*what = c ? AN_CORR_LAUNCH : 0;
		*corr = c;
		return 0;
	}
	if (copy) {
		char dir[TR_SHORT_MAX];
		copy_dir(ev, dir, sizeof(dir));
		struct an_count *d = an_table_get(&a->dirs, dir);
		if (!d)
			return -ENOMEM;
		return AN_PUSH(
		    a->copies, a->ncopies, a->capcopies,
		    (struct an_copy){pid, (uint32_t)an_table_index(&a->dirs, d), uint_arg(ev, "bytes"), dur});
	}
	if (!kernel)
		return 0;
	p->kernels++;
	if (!c)
		remember_flow(a, ev, false);
	*what = c ? AN_CORR_KERNEL : 0;
	*corr = c;
	return 0;
}

/* An ac2g flow right after a launch or kernel that had no "correlation"
 * arg: its id is the correlation (libkineto writes flowId = correlation). */
static int on_flow(struct an_trace *a, const struct tr_event *ev)
{
	bool start = !strcmp(ev->ph, "s");
	if (!a->pending_flow.active || strcmp(ev->cat, "ac2g") || start != a->pending_flow.launch ||
	    !ev->id.is_int || ev->id.num <= 0 || !ev->has_ts || ev->ts_ns != a->pending_flow.ts ||
	    strcmp(ev->pid.text, a->pending_flow.pid.text) || strcmp(ev->tid.text, a->pending_flow.tid.text))
		return 0;
	struct an_process *p = process_of(a, &ev->pid);
	if (!p)
		return -ENOMEM;
	uint32_t pid = (uint32_t)an_table_index(&a->pids, p);
	return AN_PUSH(a->corrs, a->ncorrs, a->capcorrs,
	               (struct an_corr){(uint64_t)ev->id.num, ev->ts_ns, pid, a->pending_flow.seq,
	                                start ? AN_CORR_LAUNCH : AN_CORR_KERNEL});
}

static bool same_ident(const struct tr_ident *id, int kind, const char *text)
{
	return (int)id->kind == kind && !strcmp(id->text, text);
}

/* The row of ev's pid and tid, NULL when out of memory. The last few are
 * remembered (an_recent_rows). */
static struct an_row *row_of(struct an_trace *a, const struct tr_event *ev)
{
	struct an_recent_rows *recent = &a->recent_rows;
	for (unsigned i = 0; i < AN_RECENT_ROWS; i++) {
		const struct an_last_row *r = &recent->row[i];
		if (r->valid && same_ident(&ev->pid, r->pid_kind, r->pid) &&
		    same_ident(&ev->tid, r->tid_kind, r->tid))
			return an_table_item(&a->rows, r->row);
	}
	char pid[TR_SHORT_MAX + 2], tid[TR_SHORT_MAX + 2];
	ident_key(&ev->pid, pid, sizeof(pid));
	struct an_row *row = an_table_get(&a->rows, join(a, pid, ident_key(&ev->tid, tid, sizeof(tid))));
	if (!row)
		return NULL;
	if (!row->tid_off) {
		struct an_process *p = process_of(a, &ev->pid);
		if (!p)
			return NULL;
		row->pid = (uint32_t)an_table_index(&a->pids, p);
		row->tid_off = (uint32_t)strlen(pid) + 2;
	}
	struct an_last_row *last = &recent->row[recent->next];
	recent->next = (recent->next + 1) % AN_RECENT_ROWS;
	*last = (struct an_last_row){
	    true, (int)ev->pid.kind, (int)ev->tid.kind, (uint32_t)an_table_index(&a->rows, row), "", ""};
	memcpy(last->pid, ev->pid.text, strlen(ev->pid.text) + 1);
	memcpy(last->tid, ev->tid.text, strlen(ev->tid.text) + 1);
	return row;
}

/* *added: its record, when it has one. */
static int add_complete(struct an_trace *a, const struct tr_event *ev, struct an_xrec *added, bool *has)
{
	if (!ev->has_ts) {
		a->untimed++;
		return 0;
	}
	int64_t dur = ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0;
	struct an_name *sn = an_table_get(&a->names, join(a, ev->cat, ev->name));
	if (!sn)
		return -ENOMEM;
	if (!sn->cats) {
		struct an_count *n = an_table_get(&a->cats, ev->cat);
		if (!n)
			return -ENOMEM;
		sn->cats = (uint32_t)an_table_index(&a->cats, n) + 1;
	}
	((struct an_count *)an_table_item(&a->cats, sn->cats - 1))->n++;
	uint32_t name = (uint32_t)an_table_index(&a->names, sn);
	if (!sn->count) {
		struct an_category *c = an_table_get(&a->xcats, ev->cat);
		if (!c)
			return -ENOMEM;
		c->names++;
		sn->cat = (uint32_t)an_table_index(&a->xcats, c);
		sn->cat_len = (uint32_t)strlen(ev->cat);
		sn->gpu = (uint8_t)cat_kind(ev->cat);
	}
	struct an_category *c = an_table_item(&a->xcats, sn->cat);
	c->events++;
	c->total = an_sat_add(c->total, dur);
	sn->count++;
	sn->total = an_sat_add(sn->total, dur);
	sn->self = an_sat_add(sn->self, dur);
	if (dur > sn->max)
		sn->max = dur;

	struct an_row *row = row_of(a, ev);
	if (!row)
		return -ENOMEM;
	uint32_t r = (uint32_t)an_table_index(&a->rows, row);
	if (an_xadd(a, r, ev->ts_ns, dur, name))
		return -ENOMEM;
	*added = (struct an_xrec){r, name, ev->ts_ns, dur};
	*has = true;
	uint32_t what = 0;
	uint64_t corr = 0;
	bool kept = false;
	int rc = add_gpu(a, ev, sn, r, dur, &what, &corr);
	if (!rc)
		rc = an_hta_add(a, ev, r, name, dur, what, corr, &kept);
	if (rc || !what || kept)
		return rc;
	/* a launch or kernel HTA's records do not hold with its correlation */
	return AN_PUSH(a->corrs, a->ncorrs, a->capcorrs,
	               (struct an_corr){corr, ev->ts_ns, row->pid, (uint32_t)(a->nseq - 1), what});
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

static int add_counter(struct an_trace *a, const struct tr_event *ev)
{
	for (unsigned i = 0; i < ev->nargs; i++) {
		double v;
		if (ev->args[i].truncated || !counter_value(ev->args[i].value, &v))
			continue;
		struct an_series *c = an_table_get(&a->counters, join(a, ev->name, ev->args[i].key));
		if (!c)
			return -ENOMEM;
		c->name_len = (uint32_t)strlen(ev->name);
		if (!c->count || v < c->min)
			c->min = v;
		if (!c->count || v > c->max)
			c->max = v;
		int64_t ts = ev->has_ts ? ev->ts_ns : INT64_MIN;
		if (ev->has_ts && !strcmp(ev->name, AN_MEMORY_TRACK) &&
		    !strcmp(ev->args[i].key, AN_MEMORY_TRACK)) {
			struct an_process *p = process_of(a, &ev->pid);
			if (!p || an_memory_add(a, (uint32_t)an_table_index(&a->pids, p), ts, v))
				return -ENOMEM;
		}
		if (!c->count || ts >= c->last_ts) {
			c->last = v;
			c->last_ts = ts;
		}
		c->count++;
	}
	return 0;
}

/* Counts an event's category; the last one is remembered. */
static int count_cat(struct an_trace *a, const char *cat)
{
	struct an_last_cat *last = &a->last_cat;
	if (last->at && !strcmp(last->cat, cat)) {
		((struct an_count *)an_table_item(&a->cats, last->at - 1))->n++;
		return 0;
	}
	struct an_count *c = an_table_get(&a->cats, cat);
	if (!c)
		return -ENOMEM;
	c->n++;
	last->at = (uint32_t)an_table_index(&a->cats, c) + 1;
	memcpy(last->cat, cat, strlen(cat) + 1);
	return 0;
}

/* Whether ev's phase is the one character c. */
static inline bool ph_is(const struct tr_event *ev, char c)
{
	return ev->ph[0] == c && !ev->ph[1];
}

/* Counts an event's phase: a one-character phase's item is found
 * from the character after its first time. */
static int count_ph(struct an_trace *a, const char *ph)
{
	unsigned char c = (unsigned char)ph[0];
	if (c && !ph[1] && a->ph_at[c]) {
		((struct an_count *)an_table_item(&a->phs, a->ph_at[c] - 1))->n++;
		return 0;
	}
	struct an_count *n = an_table_get(&a->phs, ph);
	if (!n)
		return -ENOMEM;
	n->n++;
	if (c && !ph[1])
		a->ph_at[c] = (uint32_t)an_table_index(&a->phs, n) + 1;
	return 0;
}

static int on_event(const struct tr_event *ev, void *arg)
{
	struct an_trace *a = arg;
	if (a->progress_cb && a->reading && !(a->reading->events & 0xffff))
		a->progress_cb("reading", a->reading, a->progress_arg);
	bool complete = ph_is(ev, 'X');
	/* A timed complete event's category is counted through its name. */
	if (count_ph(a, ev->ph) || (!(complete && ev->has_ts) && count_cat(a, ev->cat)))
		return -ENOMEM;
	if (ev->name[0] == 'u' && !strcmp(ev->name, "unknown"))
		a->unknown++;
	const struct tr_pair *fin = ev->nargs ? tr_event_arg(ev, "finished") : NULL;
	bool open = fin && !strcmp(fin->value, "false");
	if (open)
		a->unfinished++;

	/* Metadata events carry the capture start as ts; they are not activity. */
	if (ev->has_ts && !ph_is(ev, 'M')) {
		int64_t end =
		    an_sat_add(ev->ts_ns, complete && ev->has_dur && ev->dur_ns > 0 ? ev->dur_ns : 0);
		if (!a->timed || ev->ts_ns < a->first_ts)
			a->first_ts = ev->ts_ns;
		if (!a->timed || end > a->last_end)
			a->last_end = end;
		a->timed = true;
	}
	int rc = 0;
	if (ph_is(ev, 's') || ph_is(ev, 'f'))
		rc = on_flow(a, ev);
	/* A flow belongs to the event just before it, or to none. */
	a->pending_flow.active = false;
	if (rc)
		return rc;
	if (complete) {
		struct an_xrec x;
		bool has = false;
		rc = add_complete(a, ev, &x, &has);
		if (!rc && open && has && AN_PUSH(a->open, a->nopen, a->capopen, x))
			rc = -ENOMEM;
		return rc;
	}
	if (ph_is(ev, 'M'))
		return on_metadata(a, ev);
	if (ph_is(ev, 'C'))
		return add_counter(a, ev);
	if (ph_is(ev, 'i') || ph_is(ev, 'I')) {
		struct an_instant *in = an_table_get(&a->instants, join(a, ev->cat, ev->name));
		if (!in)
			return -ENOMEM;
		in->cat_len = (uint32_t)strlen(ev->cat);
		in->count++;
	}
	return 0;
}

static int on_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	struct an_trace *a = arg;
	(void)len;
	if (!strcmp(key, "distributedInfo") && !truncated) {
		/* PyTorch writes {"backend": "nccl", "rank": 0, "world_size": 8, ...}. */
		yajl_val root = yajl_tree_parse(json, NULL, 0);
		const char *path[] = {"rank", NULL};
		yajl_val rank = root ? yajl_tree_get(root, path, yajl_t_number) : NULL;
		if (rank && YAJL_IS_INTEGER(rank)) {
			a->has_dist_rank = true;
			a->dist_rank = YAJL_GET_INTEGER(rank);
		}
		yajl_tree_free(root);
		return 0;
	}
	if (!strcmp(key, "baseTimeNanoseconds") && !truncated) {
		char *end;
		errno = 0;
		long long v = strtoll(json, &end, 10);
		a->base_seen = true;
		a->has_base = !errno && end != json && !*end && v > 0;
		a->base_ns = a->has_base ? v : 0;
		return 0;
	}
	char **dst = !strcmp(key, "strobe")        ? &a->strobe_meta
	             : !strcmp(key, "host_name")   ? &a->host_name
	             : !strcmp(key, "gpu_capture") ? &a->gpu_capture
	                                           : NULL;
	if (!dst || truncated)
		return 0;
	free(*dst);
	if (dst != &a->strobe_meta) {
		char text[TR_VALUE_MAX];
		*dst = json_string(json, text, sizeof(text)) ? strdup(text) : strdup(json);
	} else {
		*dst = strdup(json);
	}
	return *dst ? 0 : -ENOMEM;
}

/* ---- self time ----------------------------------------------------------- */

static int cmp_xrec(const void *pa, const void *pb)
{
	const struct an_xrec *x = pa, *y = pb;
	if (x->row != y->row)
		return x->row < y->row ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur)
		return x->dur > y->dur ? -1 : 1; /* the enclosing event first */
	return x->name < y->name ? -1 : x->name > y->name;
}

/* An open event of the walk below and its self time so far. */
struct self_frame {
	struct an_xrec x;
	int64_t end, self;
};

void *an_op_item(struct an_table *t, struct an_op_memo *memo, int64_t rank, uint32_t name, bool add)
{
	struct an_op_memo *m = &memo[name];
	if (m->at && m->rank == rank) /* most traces have one rank: a key per name */
		return an_table_item(t, m->at - 1);
	char key[48];
	snprintf(key, sizeof(key), "%" PRId64 AN_SEP "%" PRIu32, rank, name);
	void *item = add ? an_table_get(t, key) : an_table_find(t, key);
	if (item)
		*m = (struct an_op_memo){rank, (uint32_t)an_table_index(t, item) + 1};
	return item;
}

/* A cpu_op whose self time is known, added to its rank's row in by. */
static int add_cpu_op(struct an_trace *a, struct an_table *by, struct an_op_memo *memo,
                      const struct self_frame *f)
{
	const struct an_xrec *x = &f->x;
	const struct an_row *row = an_table_item(&a->rows, x->row);
	int64_t rank = ((const struct an_process *)an_table_item(&a->pids, row->pid))->rank;
	struct an_cpu_op *op = an_op_item(by, memo, rank, x->name, true);
	if (!op)
		return -ENOMEM;
	op->rank = rank;
	op->name = x->name;
	op->count++;
	op->total = an_sat_add(op->total, x->dur);
	op->self = an_sat_add(op->self, f->self);
	return 0;
}

/* Takes from each event's self time what its direct children cover. The
 * layout left each row's events in start order with parents before the
 * children that start with them, so a stack of open events finds the
 * parent. A child that outlives its parent only gives back the overlap.
 * An event's self time is whole when it leaves the stack: cpu_ops are
 * added up per rank in by then (the records keep no self time). */
static int compute_self(struct an_trace *a, struct an_table *by)
{
	if (!a->nx)
		return 0;
	bool *cpu_op = calloc(a->names.n, sizeof(*cpu_op));
	struct an_op_memo *memo = calloc(a->names.n, sizeof(*memo));
	if (!cpu_op || !memo) {
		free(cpu_op);
		free(memo);
		return -ENOMEM;
	}
	for (size_t i = 0; i < a->names.n; i++)
		cpu_op[i] = !strcmp(an_name_cat(a, (uint32_t)i), "cpu_op");
	struct self_frame *stack = NULL;
	size_t depth = 0, cap = 0;
	int rc = 0;
	for (uint32_t r = 0; r < a->rows.n && !rc; r++) {
		struct an_xcur c;
		struct an_xrec x;
		an_xrow(a, r, &c);
		for (bool more = true; more && !rc;) {
			more = an_xnext(&c, &x);
			while (depth && !rc && (!more || stack[depth - 1].end <= x.ts)) {
				depth--;
				if (cpu_op[stack[depth].x.name])
					rc = add_cpu_op(a, by, memo, &stack[depth]);
			}
			if (!more || rc)
				break;
			int64_t end = an_sat_add(x.ts, x.dur);
			if (depth) {
				struct self_frame *parent = &stack[depth - 1];
				int64_t covered = an_span(x.ts, end < parent->end ? end : parent->end);
				struct an_name *sn = an_table_item(&a->names, parent->x.name);
				sn->self = an_sat_add(sn->self, -covered);
				parent->self = an_sat_add(parent->self, -covered);
			}
			if (!an_grow((void **)&stack, depth, &cap, sizeof(*stack))) {
				rc = -ENOMEM;
				break;
			}
			stack[depth++] = (struct self_frame){x, end, x.dur};
		}
	}
	free(stack);
	free(cpu_op);
	free(memo);
	for (size_t i = 0; i < a->names.n && !rc; i++) {
		const struct an_name *sn = an_table_item(&a->names, i);
		struct an_category *c = an_table_item(&a->xcats, sn->cat);
		c->self = an_sat_add(c->self, sn->self);
	}
	return rc;
}

/* ---- GPU time ------------------------------------------------------------- */

static int64_t rank_of_pid(const struct an_trace *a, uint32_t pid)
{
	const struct an_process *p = an_table_item(&a->pids, pid);
	return p->rank;
}

/* Ranks in output order: 0, 1, ..., then work outside any rank (-1). */
static int cmp_rank(int64_t x, int64_t y)
{
	uint64_t ux = (uint64_t)x, uy = (uint64_t)y; /* -1 sorts last */
	return ux < uy ? -1 : ux > uy;
}

/* GPU time is worked out from the complete events as self time left them
 * (by row, then time): a device's rows (its streams) are walked together
 * in time order, and its busy time grown as they come, so nothing is
 * copied or sorted. */

/* Per names-table entry: its enum an_gpu_kind, or UINT8_MAX for none,
 * from its category's kind as the read found it (an_name.gpu). */
static uint8_t *gpu_kinds(const struct an_trace *a)
{
	uint8_t *kind = malloc(a->names.n ? a->names.n : 1);
	for (size_t i = 0; kind && i < a->names.n; i++) {
		const struct an_name *sn = an_table_item(&a->names, i);
		kind[i] = sn->gpu == AN_CAT_KERNEL ? (is_nccl(an_name(a, (uint32_t)i)) ? AN_NCCL : AN_KERNEL)
		          : sn->gpu == AN_CAT_COPY ? AN_MEMCPY
		          : sn->gpu == AN_CAT_MEMSET ? AN_MEMSET
		                                     : UINT8_MAX;
	}
	return kind;
}

/* A row that holds GPU work. */
struct gpu_run {
	uint32_t pid, row;
};

static int cmp_run(const void *pa, const void *pb)
{
	const struct gpu_run *x = pa, *y = pb;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

/* The GPU work among the complete events once laid out:
 * each name's kind (gpu_kinds), and the runs of the rows that hold some,
 * by pid, then row. Worked out once for GPU busy time, kernel statistics
 * and a->gpu. */
struct gpu_work {
	uint8_t *kind;
	struct gpu_run *runs;
	size_t nruns;
};

static void gpu_work_free(struct gpu_work *g)
{
	free(g->kind);
	free(g->runs);
}

static int gpu_work_of(const struct an_trace *a, struct gpu_work *g)
{
	size_t cap = 0;
	*g = (struct gpu_work){gpu_kinds(a), NULL, 0};
	if (!g->kind)
		return -ENOMEM;
	for (uint32_t r = 0; r < a->rows.n; r++) {
		struct an_xcur c;
		struct an_xrec x;
		bool gpu = false;
		an_xrow(a, r, &c);
		while (!gpu && an_xnext(&c, &x))
			gpu = g->kind[x.name] != UINT8_MAX;
		if (!gpu)
			continue;
		uint32_t pid = ((const struct an_row *)an_table_item(&a->rows, r))->pid;
		if (AN_PUSH(g->runs, g->nruns, cap, (struct gpu_run){pid, r}))
			return -ENOMEM;
	}
	an_sort(g->runs, g->nruns, sizeof(*g->runs), cmp_run);
	return 0;
}

struct span {
	int64_t start, end;
};

/* The union of intervals that come in start order, grown as they come:
 * the span open now (n: the spans so far, it included) and the total of
 * those before it. */
struct growing {
	struct span cur;
	size_t n;
	int64_t total;
};

/* Adds [s, e) to u. True when that closed u's open span, then in *closed. */
static bool grow(struct growing *u, int64_t s, int64_t e, struct span *closed)
{
	if (u->n && s <= u->cur.end) {
		if (e > u->cur.end)
			u->cur.end = e;
		return false;
	}
	bool had = u->n > 0;
	if (had) {
		*closed = u->cur;
		u->total = an_sat_add(u->total, an_span(u->cur.start, u->cur.end));
	}
	u->cur = (struct span){s, e};
	u->n++;
	return had;
}

/* u's total, its open span included. */
static int64_t grown_total(const struct growing *u)
{
	return u->n ? an_sat_add(u->total, an_span(u->cur.start, u->cur.end)) : 0;
}

static void add_gap(struct an_device *d, int64_t start, int64_t dur)
{
	d->gaps++;
	d->gap_total = an_sat_add(d->gap_total, dur);
	if (dur > d->gap_max)
		d->gap_max = dur;
	size_t i = d->ntop < AN_TOP_GAPS ? d->ntop++ : AN_TOP_GAPS;
	if (i == AN_TOP_GAPS && dur <= d->top[AN_TOP_GAPS - 1].dur)
		return;
	if (i == AN_TOP_GAPS)
		i--;
	for (; i > 0 && d->top[i - 1].dur < dur; i--)
		d->top[i] = d->top[i - 1];
	d->top[i] = (struct an_gap){start, dur};
}

static void add_buckets(const struct an_trace *a, struct an_device *d, const struct span *sp)
{
	double w0 = (double)a->first_ts, width = (double)an_window(a) / AN_BUCKETS;
	if (width <= 0)
		return;
	double s = (double)sp->start - w0, e = (double)sp->end - w0;
	long b0 = (long)(s / width), b1 = (long)(e / width);
	for (long b = b0 < 0 ? 0 : b0; b <= b1 && b < AN_BUCKETS; b++) {
		double lo = b * width, hi = lo + width;
		double cover = (e < hi ? e : hi) - (s > lo ? s : lo);
		if (cover > 0)
			d->buckets[b] += (float)(cover / width);
	}
}

/* One device's walk in time order: the union of all its work, of its NCCL
 * kernels (comm) and of its other kernels (compute). Their overlap is
 * added up as each compute span closes, against the comm spans it may
 * overlap: the closed ones still kept, and the open one, which cannot
 * grow into it any more (whatever comes next starts after its end). */
struct dev_walk {
	struct an_trace *a;
	struct an_device *d;
	struct growing all, comm, compute;
	struct span *cspans; /* closed comm spans a compute span may still overlap, from head */
	size_t head, n, cap;
	int64_t both;
};

static void overlap_add(int64_t *t, struct span x, struct span y)
{
	int64_t s = x.start > y.start ? x.start : y.start;
	int64_t e = x.end < y.end ? x.end : y.end;
	if (e > s)
		*t = an_sat_add(*t, an_span(s, e));
}

/* A compute span closed: its overlap with comm; then the comm spans that
 * end before next (the next compute span's start) are done with. */
static void compute_closed(struct dev_walk *w, struct span c, int64_t next)
{
	for (size_t i = w->head; i < w->n && w->cspans[i].start < c.end; i++)
		overlap_add(&w->both, c, w->cspans[i]);
	if (w->comm.n)
		overlap_add(&w->both, c, w->comm.cur);
	while (w->head < w->n && w->cspans[w->head].end <= next)
		w->head++;
	if (w->head > 1024 && w->head * 2 > w->n) {
		memmove(w->cspans, w->cspans + w->head, (w->n - w->head) * sizeof(*w->cspans));
		w->n -= w->head;
		w->head = 0;
	}
}

static int walk_event(struct dev_walk *w, const struct an_xrec *x, uint8_t kind)
{
	int64_t s = x->ts, e = an_sat_add(x->ts, x->dur);
	struct span closed;
	if (!w->d->events++)
		w->d->first = s;
	if (grow(&w->all, s, e, &closed)) {
		add_buckets(w->a, w->d, &closed);
		add_gap(w->d, closed.end, an_span(closed.end, s));
	}
	/* a comm span that ends before the open compute span can meet no
	 * compute span not yet closed */
	if (kind == AN_NCCL && grow(&w->comm, s, e, &closed) &&
	    !(w->compute.n && closed.end <= w->compute.cur.start))
		return AN_PUSH(w->cspans, w->n, w->cap, closed);
	if (kind == AN_KERNEL && grow(&w->compute, s, e, &closed))
		compute_closed(w, closed, s);
	return 0;
}

/* A min-heap of a device's runs by the time of their next GPU event. */
struct run_cursor {
	int64_t ts;
	size_t k; /* its row's walk */
};

/* A row's walk for the merge below: its next GPU event. */
struct run_walk {
	struct an_xcur c;
	struct an_xrec x;
};

static void cursor_down(struct run_cursor *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && h[l].ts < h[m].ts)
			m = l;
		if (l + 1 < n && h[l + 1].ts < h[m].ts)
			m = l + 1;
		if (m == i)
			return;
		struct run_cursor t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

/* The row's next GPU event into w->x; false past its last. */
static bool next_gpu(struct run_walk *w, const uint8_t *kind)
{
	while (an_xnext(&w->c, &w->x))
		if (kind[w->x.name] != UINT8_MAX)
			return true;
	return false;
}

static int device_time(struct an_trace *a, struct an_device *d, const uint8_t *kind,
                       const struct gpu_run *runs, size_t nruns)
{
	struct dev_walk w = {.a = a, .d = d};
	struct run_cursor *h = malloc(nruns * sizeof(*h));
	struct run_walk *rw = malloc(nruns * sizeof(*rw));
	if (!h || !rw) {
		free(h);
		free(rw);
		return -ENOMEM;
	}
	size_t n = 0;
	for (size_t i = 0; i < nruns; i++) {
		an_xrow(a, runs[i].row, &rw[i].c);
		if (next_gpu(&rw[i], kind))
			h[n++] = (struct run_cursor){rw[i].x.ts, i};
	}
	for (size_t i = n / 2; i-- > 0;)
		cursor_down(h, n, i);
	int rc = 0;
	while (n && !rc) {
		struct run_walk *r = &rw[h[0].k];
		rc = walk_event(&w, &r->x, kind[r->x.name]);
		if (next_gpu(r, kind))
			h[0].ts = r->x.ts;
		else
			h[0] = h[--n];
		cursor_down(h, n, 0);
	}
	free(h);
	free(rw);
	if (!rc && w.all.n) {
		add_buckets(a, d, &w.all.cur);
		d->busy = grown_total(&w.all);
		d->last = w.all.cur.end;
		d->has_comm = w.comm.n > 0;
		d->comm = grown_total(&w.comm);
		d->compute = grown_total(&w.compute);
		if (w.compute.n)
			compute_closed(&w, w.compute.cur, INT64_MAX);
		d->both = w.both;
	}
	free(w.cspans);
	if (rc)
		return rc;

	/* Per stream: each run on its own. */
	size_t cap = 0;
	for (size_t i = 0; i < nruns; i++) {
		struct growing u = {0};
		struct span closed;
		uint64_t count = 0;
		struct run_walk r;
		an_xrow(a, runs[i].row, &r.c);
		while (next_gpu(&r, kind)) {
			count++;
			grow(&u, r.x.ts, an_sat_add(r.x.ts, r.x.dur), &closed);
		}
		if (AN_PUSH(d->streams, d->nstreams, cap,
		            (struct an_stream){runs[i].row, count, grown_total(&u)}))
			return -ENOMEM;
	}
	return 0;
}

/* GPU busy time, idle gaps and utilisation per device, from the complete
 * events. */
static int compute_devices(struct an_trace *a, const struct gpu_work *g)
{
	size_t cap = 0;
	for (size_t i = 0, j; i < g->nruns; i = j) {
		for (j = i; j < g->nruns && g->runs[j].pid == g->runs[i].pid; j++)
			;
		struct an_device d = {.pid = g->runs[i].pid, .rank = rank_of_pid(a, g->runs[i].pid)};
		int rc = AN_PUSH(a->devices, a->ndevices, cap, d);
		if (!rc)
			rc = device_time(a, &a->devices[a->ndevices - 1], g->kind, g->runs + i, j - i);
		if (rc)
			return rc;
	}
	/* Devices by rank, then in pid order as the trace's viewer shows them. */
	for (size_t i = 1; i < a->ndevices; i++) {
		struct an_device d = a->devices[i];
		size_t k = i;
		for (; k > 0 && cmp_rank(a->devices[k - 1].rank, d.rank) > 0; k--)
			a->devices[k] = a->devices[k - 1];
		a->devices[k] = d;
	}
	return 0;
}

/* The GPU work (kernels, copies, memsets) of the complete events, by
 * device, then stream, then time (a->gpu), for the report, the diff and
 * the memory timeline. */
static int gpu_records(struct an_trace *a, const struct gpu_work *g)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < g->nruns; i++) {
		struct run_walk r;
		an_xrow(a, g->runs[i].row, &r.c);
		while (!rc && next_gpu(&r, g->kind))
			rc = AN_PUSH(a->gpu, a->ngpu, a->capgpu,
			             (struct an_gpurec){r.x.row, r.x.name, r.x.ts, r.x.dur, g->kind[r.x.name],
			                                g->runs[i].pid});
	}
	return rc;
}

static int list_ranks(struct an_trace *a)
{
	a->ranks = malloc((a->pids.n ? a->pids.n : 1) * sizeof(*a->ranks));
	if (!a->ranks)
		return -ENOMEM;
	for (size_t i = 0; i < a->pids.n; i++) {
		int64_t r = rank_of_pid(a, (uint32_t)i);
		size_t k = a->nranks;
		bool dup = false;
		for (size_t j = 0; j < a->nranks && !dup; j++)
			dup = a->ranks[j] == r;
		if (dup)
			continue;
		for (; k > 0 && cmp_rank(a->ranks[k - 1], r) > 0; k--)
			a->ranks[k] = a->ranks[k - 1];
		a->ranks[k] = r;
		a->nranks++;
		a->ranked |= r >= 0;
	}
	return 0;
}

/* ---- kernels, copies, launches, CPU ops per rank ---------------------------- */

double an_pct(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

int64_t an_span(int64_t from, int64_t to)
{
	int64_t d;
	if (__builtin_sub_overflow(to, from, &d))
		return to > from ? INT64_MAX : INT64_MIN;
	return d;
}

int64_t an_window(const struct an_trace *a)
{
	return a->timed ? an_span(a->first_ts, a->last_end) : 0;
}

size_t an_shown(size_t n, size_t top)
{
	return top && top < n ? top : n;
}

size_t an_rank_index(size_t n, unsigned p)
{
	size_t rank = ((size_t)p * n + 99) / 100;
	return rank ? rank - 1 : 0;
}

/* A kernel's duration and rank (its index in a->ranks, which are in
 * output order), among its name's (compute_kernels gathers them by
 * name). */
struct kdur {
	int64_t dur;
	uint32_t rank;
} AN_PACKED;

/* Every field compared: equal ones are alike. */
static bool kdur_less(const struct kdur *x, const struct kdur *y)
{
	if (x->rank != y->rank)
		return x->rank < y->rank;
	return x->dur < y->dur;
}
AN_SORT_DEFINE(sort_kdurs, struct kdur, kdur_less)

static const struct an_trace *sort_trace; /* for the comparators below; qsort has no context */

static int cmp_kernel(const void *pa, const void *pb)
{
	const struct an_kernel *x = pa, *y = pb;
	int c = cmp_rank(x->rank, y->rank);
	if (c)
		return c;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(an_name(sort_trace, x->name), an_name(sort_trace, y->name));
}

/* One kernel row per rank of a kernel name's durations k[0, n) (its ranks
 * together); each rank's percentiles are selected, not sorted. */
static int kernel_rows(struct an_trace *a, uint32_t name, struct kdur *k, size_t n, size_t *cap)
{
	int rc = 0;
	for (size_t i = 0, j; !rc && i < n; i = j) {
		struct an_kernel s = {.rank = a->ranks[k[i].rank], .name = name};
		for (j = i; j < n && k[j].rank == k[i].rank; j++) {
			s.total = an_sat_add(s.total, k[j].dur);
			s.max = k[j].dur > s.max ? k[j].dur : s.max;
		}
		s.count = j - i;
		size_t p99 = an_rank_index(j - i, 99), p50 = an_rank_index(j - i, 50);
		sort_kdurs_nth(k + i, j - i, p99);
		s.p99 = k[i + p99].dur;
		sort_kdurs_nth(k + i, p99 + 1, p50);
		s.p50 = k[i + p50].dur;
		rc = AN_PUSH(a->kernels, a->nkernel_stats, *cap, s);
	}
	return rc;
}

/* Kernel statistics per rank and name, from the complete events. The kernels
 * are gathered by name (a count per name, then each name's place); a
 * name's ranks are sorted together only when it ran in more than one. */
static bool u32_less(const uint32_t *x, const uint32_t *y)
{
	return *x < *y;
}

AN_SORT_DEFINE(sort_u32s, uint32_t, u32_less)

static int compute_kernels(struct an_trace *a, const struct gpu_work *g)
{
	const uint8_t *kind = g->kind;
	size_t nn = a->names.n ? a->names.n : 1, n = 0, cap = 0;
	size_t *count = calloc(nn, sizeof(*count)), *end = malloc(nn * sizeof(*end));
	uint32_t *rank_at = malloc((a->pids.n ? a->pids.n : 1) * sizeof(*rank_at)); /* per pid */
	uint32_t *rows = malloc((g->nruns ? g->nruns : 1) * sizeof(*rows)); /* the GPU rows, in order */
	int rc = count && end && rank_at && rows ? 0 : -ENOMEM;
	for (uint32_t p = 0; !rc && p < a->pids.n; p++) /* list_ranks put every pid's rank there */
		for (rank_at[p] = 0; a->ranks[rank_at[p]] != rank_of_pid(a, p); rank_at[p]++)
			;
	for (size_t i = 0; !rc && i < g->nruns; i++)
		rows[i] = g->runs[i].row;
	if (!rc)
		sort_u32s(rows, g->nruns);
	struct an_xcur c;
	struct an_xrec x;
	for (size_t i = 0; !rc && i < g->nruns; i++)
		for (an_xrow(a, rows[i], &c); an_xnext(&c, &x);)
			if (kind[x.name] == AN_KERNEL || kind[x.name] == AN_NCCL)
				count[x.name]++, n++;
	struct kdur *k = rc ? NULL : malloc((n ? n : 1) * sizeof(*k));
	rc = rc || !k ? -ENOMEM : 0;
	for (size_t i = 0, place = 0; !rc && i < nn; place += count[i++])
		end[i] = place;
	for (size_t i = 0; !rc && i < g->nruns; i++)
		for (an_xrow(a, rows[i], &c); an_xnext(&c, &x);)
			if (kind[x.name] == AN_KERNEL || kind[x.name] == AN_NCCL)
				k[end[x.name]++] = (struct kdur){
				    x.dur,
				    rank_at[((const struct an_row *)an_table_item(&a->rows, x.row))->pid]};
	free(rows);
	for (size_t i = 0; !rc && i < nn; i++) {
		struct kdur *run = k + end[i] - count[i];
		bool one_rank = true;
		for (size_t j = 1; j < count[i] && one_rank; j++)
			one_rank = run[j].rank == run[0].rank;
		if (!one_rank)
			sort_kdurs(run, count[i]);
		if (count[i])
			rc = kernel_rows(a, (uint32_t)i, run, count[i], &cap);
	}
	free(count);
	free(end);
	free(rank_at);
	free(k);
	sort_trace = a;
	if (!rc)
		an_sort(a->kernels, a->nkernel_stats, sizeof(*a->kernels), cmp_kernel);
	return rc;
}

static int cmp_copy(const void *pa, const void *pb)
{
	const struct an_copy_stat *x = pa, *y = pb;
	int c = cmp_rank(x->rank, y->rank);
	if (c)
		return c;
	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return strcmp(x->dir, y->dir);
}

static int compute_copies(struct an_trace *a)
{
	size_t cap = 0;
	for (size_t i = 0; i < a->ncopies; i++) {
		const struct an_copy *c = &a->copies[i];
		int64_t rank = rank_of_pid(a, c->pid);
		const char *dir = a->dirs.keys[c->dir];
		struct an_copy_stat *s = NULL;
		for (size_t k = 0; k < a->ncopy_stats && !s; k++)
			if (a->copy_stats[k].rank == rank && a->copy_stats[k].dir == dir)
				s = &a->copy_stats[k];
		if (!s) {
			if (AN_PUSH(a->copy_stats, a->ncopy_stats, cap,
			            (struct an_copy_stat){rank, dir, 0, 0, 0}))
				return -ENOMEM;
			s = &a->copy_stats[a->ncopy_stats - 1];
		}
		s->count++;
		s->bytes += c->bytes;
		s->total = an_sat_add(s->total, c->dur);
	}
	an_sort(a->copy_stats, a->ncopy_stats, sizeof(*a->copy_stats), cmp_copy);
	return 0;
}

static bool i64_less(const int64_t *x, const int64_t *y)
{
	return *x < *y;
}

AN_SORT_DEFINE(sort_i64, int64_t, i64_less)

int an_lat_add(struct an_trace *a, int64_t rank, int64_t latency)
{
	size_t i = a->nlats;
	while (i > 0 && a->lats[i - 1].rank != rank) /* ranks are few, the last most often */
		i--;
	if (!i) {
		if (AN_PUSH(a->lats, a->nlats, a->caplats, (struct an_lats){.rank = rank}))
			return -ENOMEM;
		i = a->nlats;
	}
	struct an_lats *l = &a->lats[i - 1];
	return AN_PUSH(l->v, l->n, l->cap, latency);
}

static void free_lats(struct an_trace *a)
{
	for (size_t i = 0; i < a->nlats; i++)
		free(a->lats[i].v);
	free(a->lats);
	a->lats = NULL;
	a->nlats = a->caplats = 0;
}

/* The percentile p of one rank's n latencies v (n > 0), selected among v[0,
 * *within): each call leaves the smallest up to that percentile there,
 * for the next, lower p. */
static int64_t lat_percentile(int64_t *v, size_t n, size_t *within, unsigned p)
{
	size_t k = an_rank_index(n, p);
	sort_i64_nth(v, *within, k);
	*within = k + 1;
	return v[k];
}

int an_latency_compute(struct an_trace *a)
{
	size_t cap = 0;
	int rc = 0;
	/* Every rank with kernels gets a row, matched or not. */
	for (size_t p = 0; p < a->pids.n && !rc; p++) {
		const struct an_process *pr = an_table_item(&a->pids, p);
		if (!pr->kernels)
			continue;
		struct an_latency *s = NULL;
		for (size_t k = 0; k < a->nlatency && !s; k++)
			if (a->latency[k].rank == pr->rank)
				s = &a->latency[k];
		if (!s) {
			rc = AN_PUSH(a->latency, a->nlatency, cap, (struct an_latency){.rank = pr->rank});
			s = rc ? NULL : &a->latency[a->nlatency - 1];
		}
		if (s)
			s->kernels += pr->kernels;
	}
	for (size_t k = 0; k < a->nlatency && !rc; k++) {
		struct an_latency *s = &a->latency[k];
		struct an_lats *l = NULL;
		for (size_t i = 0; i < a->nlats && !l; i++)
			if (a->lats[i].rank == s->rank)
				l = &a->lats[i];
		size_t m = l ? l->n : 0, within = m;
		s->matched = m;
		if (!m)
			continue;
		s->max = lat_percentile(l->v, m, &within, 100);
		s->p99 = lat_percentile(l->v, m, &within, 99);
		s->p90 = lat_percentile(l->v, m, &within, 90);
		s->p50 = lat_percentile(l->v, m, &within, 50);
	}
	for (size_t i = 1; i < a->nlatency; i++) {
		struct an_latency s = a->latency[i];
		size_t k = i;
		for (; k > 0 && cmp_rank(a->latency[k - 1].rank, s.rank) > 0; k--)
			a->latency[k] = a->latency[k - 1];
		a->latency[k] = s;
	}
	free_lats(a);
	return rc;
}

static int cmp_cpu_op(const void *pa, const void *pb)
{
	const struct an_cpu_op *x = pa, *y = pb;
	int c = cmp_rank(x->rank, y->rank);
	if (c)
		return c;
	if (x->self_wall != y->self_wall)
		return x->self_wall > y->self_wall ? -1 : 1;
	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	return strcmp(an_name(sort_trace, x->name), an_name(sort_trace, y->name));
}

void an_sort_cpu_ops(struct an_trace *a)
{
	sort_trace = a;
	an_sort(a->cpu_ops, a->ncpu_ops, sizeof(*a->cpu_ops), cmp_cpu_op);
}

/* The cpu_op rows compute_self added up, by rank, then self time. */
static int compute_cpu_ops(struct an_trace *a, struct an_table *by)
{
	if (!by->n)
		return 0;
	a->cpu_ops = malloc(by->n * sizeof(*a->cpu_ops));
	if (!a->cpu_ops)
		return -ENOMEM;
	a->ncpu_ops = by->n;
	memcpy(a->cpu_ops, by->items, by->n * sizeof(*a->cpu_ops));
	an_sort_cpu_ops(a);
	return 0;
}

/* ---- the analyses after the read, on one thread or two ------------------ */

static void *beside_main(void *arg)
{
	struct an_beside *b = arg;
	b->rc = b->fn(b->a);
	return NULL;
}

void an_beside_start(struct an_beside *b)
{
	b->threaded = an_threads().analyses > 1 && pthread_create(&b->th, NULL, beside_main, b) == 0;
}

int an_beside_end(struct an_beside *b, int rc)
{
	if (b->threaded)
		pthread_join(b->th, NULL);
	else if (!rc)
		b->rc = b->fn(b->a);
	return rc ? rc : b->rc;
}

/* What follows self time: HTA's analyses, and GPU busy time, kernels,
 * copies and wall times. They read what the read made (the events, names,
 * rows and processes) and write apart (hta.c's records and tables; the
 * devices, kernel and copy tables and the wall fields of names, categories
 * and cpu_ops), so on two threads they need no lock. The peak is the
 * critical paths' (an_hta_paths), and what goes beside them keeps next to
 * nothing: wall times and GPU busy time. Kernel statistics (16 bytes a
 * kernel) and then HTA's kernel sequences go beside HTA's per-device
 * analyses, which keep more, and the GPU work's records (a->gpu) are made
 * once HTA's are freed. On one thread they run one after another. */
static int compute_rest(struct an_trace *a)
{
	struct an_beside paths = {.a = a, .fn = an_hta_paths};
	an_beside_start(&paths);
	struct gpu_work g;
	int rc = gpu_work_of(a, &g);
	if (!rc && paths.threaded)
		rc = an_wall_compute(a);
	if (!rc)
		rc = compute_devices(a, &g);
	rc = an_beside_end(&paths, rc);
	struct an_beside devices = {.a = a, .fn = an_hta_devices};
	if (!rc)
		an_beside_start(&devices);
	if (!rc)
		rc = compute_kernels(a, &g);
	if (!rc) /* after the kernel statistics: the three working sets at once would set the peak */
		rc = an_kseq_compute(a);
	rc = an_beside_end(&devices, rc);
	an_hta_records_free(a); /* their memory goes before the computations that follow */
	if (!rc)
		rc = gpu_records(a, &g);
	gpu_work_free(&g);
	if (!rc)
		rc = compute_copies(a);
	if (!rc && !paths.threaded)
		rc = an_wall_compute(a);
	return rc;
}

struct an_threads an_threads(void)
{
	const char *v = getenv("STROBE_TOOL_THREADS");
	if (v && (!strcmp(v, "1") || !strcmp(v, "2"))) {
		unsigned n = (unsigned)(*v - '0');
		return (struct an_threads){n, n};
	}
	cpu_set_t set;
	bool two = sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 1;
	return (struct an_threads){two ? 2 : 1, two ? 2 : 1};
}

/* ---- the "strobe" accounting object -------------------------------------- */

static void meta_walk(struct an_trace *a, yajl_val v, const char *prefix)
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
		if (YAJL_IS_NUMBER(c) && a->nmeta < 4096) {
			if (AN_PUSH(a->meta, a->nmeta, a->capmeta,
			            (struct an_meta_num){path, YAJL_GET_NUMBER(c)}))
				free(path);
			continue;
		}
		meta_walk(a, c, path);
		free(path);
	}
}

/* ---- the whole pass ------------------------------------------------------- */

static void init_tables(struct an_trace *a)
{
	a->phs.item_size = sizeof(struct an_count);
	a->cats.item_size = sizeof(struct an_count);
	a->xcats.item_size = sizeof(struct an_category);
	a->names.item_size = sizeof(struct an_name);
	a->rows.item_size = sizeof(struct an_row);
	a->pids.item_size = sizeof(struct an_process);
	a->instants.item_size = sizeof(struct an_instant);
	a->counters.item_size = sizeof(struct an_series);
	a->dirs.item_size = sizeof(struct an_count);
	a->tnames.item_size = sizeof(struct an_tname);
}

/* ---- reading a large plain trace in two halves at once --------------------- */

size_t an_split_min = (size_t)64 << 20;

#define SPLIT_WINDOW ((size_t)4 << 20) /* how far past the middle a place to split is looked for */

static bool blank(char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* A place to split the file: the '{' of an event whose first member is
 * "ph": "X", right after "}," (blanks allowed), in w (n bytes of the file
 * from offset base); 0 when there is none. *comma gets the comma's offset.
 * Whether it is really between two elements of traceEvents (and not inside
 * a string, say) the first half's read says: its traceEvents must end right
 * there. A complete event is chosen so that no flow event (which belongs
 * to the event before it) starts the second half. */
static size_t split_point(const char *w, size_t n, size_t base, size_t *comma)
{
	for (const char *q = memmem(w, n, "\"ph\"", 4); q;
	     q = memmem(q + 1, (size_t)(w + n - q - 1), "\"ph\"", 4)) {
		size_t f = (size_t)(q - w) + 4, b = (size_t)(q - w);
		while (f < n && blank(w[f]))
			f++;
		if (f >= n || w[f++] != ':')
			continue;
		while (f < n && blank(w[f]))
			f++;
		if (n - f < 3 || memcmp(w + f, "\"X\"", 3))
			continue;
		while (b > 0 && blank(w[b - 1]))
			b--;
		if (b < 3 || w[b - 1] != '{')
			continue;
		size_t brace = --b;
		while (b > 0 && blank(w[b - 1]))
			b--;
		if (b < 2 || w[b - 1] != ',')
			continue;
		size_t c = --b;
		while (b > 0 && blank(w[b - 1]))
			b--;
		if (b < 1 || w[b - 1] != '}')
			continue;
		*comma = base + c;
		return base + brace;
	}
	return 0;
}

/* The second half: "{"traceEvents":[" and the file from the split on, a
 * JSON object of its own, read into tables of its own. */
static const char half_head[] = "{\"traceEvents\":[";

/* One half's read. Each stops at its next event once the other has
 * failed (stop), since the file is then read whole anyway. */
struct half {
	struct an_trace *a;
	struct tr_piece piece[2];
	struct tr_stats st;
	char err[256];
	int rc;
	atomic_bool *stop;
};

static int half_event(const struct tr_event *ev, void *arg)
{
	struct half *h = arg;
	struct an_trace *a = h->a;
	/* Progress (the first half's tables have the caller's callback): the
	 * whole file's, as if the second half went as fast. */
	if (a->progress_cb && !(h->st.events & 0xffff)) {
		struct tr_stats whole = h->st;
		whole.file_bytes *= 2;
		whole.events *= 2;
		a->progress_cb("reading", &whole, a->progress_arg);
	}
	return atomic_load_explicit(h->stop, memory_order_relaxed) ? -ECANCELED : on_event(ev, a);
}

static int half_member(const char *key, const char *json, size_t len, bool truncated, void *arg)
{
	return on_member(key, json, len, truncated, ((struct half *)arg)->a);
}

static void read_half(struct half *h, const char *label)
{
	const struct tr_handler hh = {
	    .event_cb = half_event, .member_cb = half_member, .user_arg = h, .fast_only = true};
	h->rc = tr_read_pieces(h->piece, 2, label, &hh, &h->st, h->err, sizeof(h->err));
	if (h->rc)
		atomic_store(h->stop, true);
}

static void *half_main(void *arg)
{
	read_half(arg, "the second half");
	return NULL;
}

static bool reserve(void **arr, size_t *cap, size_t want, size_t size)
{
	if (want <= *cap)
		return true;
	void *p = realloc(*arr, want * size);
	if (!p)
		return false;
	*arr = p;
	*cap = want;
	return true;
}

/* Each key of b's table t in a's (added, zeroed, when new, in b's order:
 * the order a read of the whole file would have added them in); map[i]
 * is b's item i's index in a, fresh[i] whether it is new there. */
static int merge_keys(struct an_table *at, const struct an_table *bt, uint32_t **map, bool **fresh)
{
	*map = malloc((bt->n ? bt->n : 1) * sizeof(**map));
	*fresh = malloc(bt->n ? bt->n : 1);
	if (!*map || !*fresh)
		return -ENOMEM;
	for (size_t i = 0; i < bt->n; i++) {
		size_t before = at->n;
		void *item = an_table_get(at, bt->keys[i]);
		if (!item)
			return -ENOMEM;
		(*map)[i] = (uint32_t)an_table_index(at, item);
		(*fresh)[i] = at->n > before;
	}
	return 0;
}

static void add_counts(struct an_table *at, const struct an_table *bt, const uint32_t *map)
{
	for (size_t i = 0; i < bt->n; i++)
		((struct an_count *)an_table_item(at, map[i]))->n +=
		    ((const struct an_count *)an_table_item(bt, i))->n;
}

enum { M_PHS, M_CATS, M_XCATS, M_NAMES, M_ROWS, M_PIDS, M_INSTANTS, M_COUNTERS, M_DIRS, M_TNAMES, M_TABLES };

/* How b's indexes become a's: per table, and b's file order after a's. */
struct remap {
	const uint32_t *names, *rows, *pids, *dirs, *lanes;
	uint32_t seq;
};

static void move_xrec(void *to, const void *from, const struct remap *m)
{
	const struct an_xrec *x = from;
	*(struct an_xrec *)to = (struct an_xrec){m->rows[x->row], m->names[x->name], x->ts, x->dur};
}

static void move_copy(void *to, const void *from, const struct remap *m)
{
	struct an_copy c = *(const struct an_copy *)from;
	c.pid = m->pids[c.pid];
	c.dir = m->dirs[c.dir];
	*(struct an_copy *)to = c;
}

static void move_corr(void *to, const void *from, const struct remap *m)
{
	struct an_corr c = *(const struct an_corr *)from;
	c.pid = m->pids[c.pid];
	c.seq += m->seq;
	*(struct an_corr *)to = c;
}

static void move_hgpu(void *to, const void *from, const struct remap *m)
{
	struct an_hrec g = *(const struct an_hrec *)from;
	g.lane = m->lanes[g.lane];
	g.name = m->names[g.name];
	g.seq += m->seq;
	*(struct an_hrec *)to = g;
}

static void move_hcall(void *to, const void *from, const struct remap *m)
{
	struct an_hcall h = *(const struct an_hcall *)from;
	h.c.row = m->rows[h.c.row];
	h.c.name = m->names[h.c.name];
	h.c.seq += m->seq;
	*(struct an_hcall *)to = h;
}

static void move_bw(void *to, const void *from, const struct remap *m)
{
	const struct an_bw *w = from;
	*(struct an_bw *)to = (struct an_bw){w->seq + m->seq, w->bw};
}

static void move_hwide(void *to, const void *from, const struct remap *m)
{
	const struct an_hwide *w = from;
	*(struct an_hwide *)to = (struct an_hwide){w->seq + m->seq, w->dur, w->corr};
}

/* Moves n records of size bytes from src to dst, from index at on (room
 * for them reserved), converted by move, last first, a chunk at a time:
 * src shrinks behind each chunk (realloc hands its tail back), so that the
 * two halves' copies of the records never take much more memory than one.
 * src is freed. */
static void move_back(void *dst, size_t at, void **src, size_t n, size_t *src_cap, size_t size,
                      const struct remap *m, void (*move)(void *to, const void *from, const struct remap *m))
{
	const size_t chunk = (size_t)1 << 16;
	while (n) {
		size_t from = n > chunk ? n - chunk : 0;
		for (size_t i = from; i < n; i++)
			move((char *)dst + (at + i) * size, (const char *)*src + i * size, m);
		n = from;
		void *p = n ? realloc(*src, n * size) : NULL;
		if (p) {
			*src = p;
			*src_cap = n;
		}
	}
	free(*src);
	*src = NULL;
	*src_cap = 0;
}

/* b's array arr (bn records) onto the end of a's (an records), as move_back. */
#define MOVE_BACK(aarr, an, barr, bn, bcap, m, move)                                                         \
	do {                                                                                                 \
		move_back((aarr), (an), (void **)&(barr), (bn), &(bcap), sizeof(*(barr)), (m), (move));      \
		(an) += (bn);                                                                                \
		(bn) = 0;                                                                                    \
	} while (0)

/* What b read (the file after a's part) added to a, as one read of the
 * whole file would have made it. */
static int merge_half(struct an_trace *a, struct an_trace *b)
{
	struct an_table *at[M_TABLES] = {&a->phs,  &a->cats,     &a->xcats,    &a->names, &a->rows,
	                                 &a->pids, &a->instants, &a->counters, &a->dirs,  &a->tnames};
	const struct an_table *bt[M_TABLES] = {&b->phs,  &b->cats,     &b->xcats,    &b->names, &b->rows,
	                                       &b->pids, &b->instants, &b->counters, &b->dirs,  &b->tnames};
	uint32_t *map[M_TABLES] = {0};
	bool *fresh[M_TABLES] = {0};
	int rc = 0;
	for (int t = 0; t < M_TABLES && !rc; t++)
		rc = merge_keys(at[t], bt[t], &map[t], &fresh[t]);
	if (!rc) {
		add_counts(&a->phs, &b->phs, map[M_PHS]);
		add_counts(&a->cats, &b->cats, map[M_CATS]);
		add_counts(&a->dirs, &b->dirs, map[M_DIRS]);
	}
	for (size_t i = 0; !rc && i < b->xcats.n; i++) {
		struct an_category *x = an_table_item(&a->xcats, map[M_XCATS][i]);
		const struct an_category *y = an_table_item(&b->xcats, i);
		x->events += y->events;
		x->total = an_sat_add(x->total, y->total);
	}
	for (size_t i = 0; !rc && i < b->pids.n; i++) {
		struct an_process *x = an_table_item(&a->pids, map[M_PIDS][i]);
		const struct an_process *y = an_table_item(&b->pids, i);
		if (fresh[M_PIDS][i]) {
			*x = *y;
			continue;
		}
		x->kernels += y->kernels;
		if (y->named) {
			memcpy(x->name, y->name, sizeof(x->name));
			x->rank = y->rank;
			x->named = true;
		}
		if (y->labelled) {
			memcpy(x->label, y->label, sizeof(x->label));
			x->labelled = true;
		}
	}
	for (size_t i = 0; !rc && i < b->rows.n; i++) {
		struct an_row *x = an_table_item(&a->rows, map[M_ROWS][i]);
		const struct an_row *y = an_table_item(&b->rows, i);
		*x = (struct an_row){map[M_PIDS][y->pid], y->tid_off};
	}
	for (size_t i = 0; !rc && i < b->names.n; i++) {
		struct an_name *x = an_table_item(&a->names, map[M_NAMES][i]);
		const struct an_name *y = an_table_item(&b->names, i);
		if (fresh[M_NAMES][i]) {
			*x = *y;
			x->cat = map[M_XCATS][y->cat];
			x->cats = y->cats ? map[M_CATS][y->cats - 1] + 1 : 0;
			((struct an_category *)an_table_item(&a->xcats, x->cat))->names++;
			continue;
		}
		x->count += y->count;
		x->total = an_sat_add(x->total, y->total);
		x->self = an_sat_add(x->self, y->self);
		x->max = y->max > x->max ? y->max : x->max;
		x->hta = x->hta ? x->hta : y->hta;
	}
	for (size_t i = 0; !rc && i < b->tnames.n; i++) /* a later thread_name wins */
		*(struct an_tname *)an_table_item(&a->tnames, map[M_TNAMES][i]) =
		    *(const struct an_tname *)an_table_item(&b->tnames, i);
	for (size_t i = 0; !rc && i < b->instants.n; i++) {
		struct an_instant *x = an_table_item(&a->instants, map[M_INSTANTS][i]);
		const struct an_instant *y = an_table_item(&b->instants, i);
		x->cat_len = y->cat_len;
		x->count += y->count;
	}
	for (size_t i = 0; !rc && i < b->counters.n; i++) {
		struct an_series *x = an_table_item(&a->counters, map[M_COUNTERS][i]);
		const struct an_series *y = an_table_item(&b->counters, i);
		if (!x->count) {
			*x = *y;
			continue;
		}
		x->min = y->min < x->min ? y->min : x->min;
		x->max = y->max > x->max ? y->max : x->max;
		if (y->last_ts >= x->last_ts) { /* at equal times the later event in the file */
			x->last = y->last;
			x->last_ts = y->last_ts;
		}
		x->count += y->count;
	}
	const uint32_t *names = map[M_NAMES], *rows = map[M_ROWS], *pids = map[M_PIDS];
	uint32_t seq = (uint32_t)a->nseq;
	if (!rc &&
	    (!reserve((void **)&a->open, &a->capopen, a->nopen + b->nopen, sizeof(*a->open)) ||
	     !reserve((void **)&a->copies, &a->capcopies, a->ncopies + b->ncopies, sizeof(*a->copies)) ||
	     !reserve((void **)&a->corrs, &a->capcorrs, a->ncorrs + b->ncorrs, sizeof(*a->corrs)) ||
	     !reserve((void **)&a->hgpus, &a->caphgpus, a->nhgpus + b->nhgpus, sizeof(*a->hgpus)) ||
	     !reserve((void **)&a->hcalls, &a->caphcalls, a->nhcalls + b->nhcalls, sizeof(*a->hcalls)) ||
	     !reserve((void **)&a->bws, &a->capbws, a->nbws + b->nbws, sizeof(*a->bws)) ||
	     !reserve((void **)&a->hwide, &a->caphwide, a->nhwide + b->nhwide, sizeof(*a->hwide))))
		rc = -ENOMEM;
	/* b's GPU streams as a's */
	uint32_t *lanes = malloc((b->lanes.n ? b->lanes.n : 1) * sizeof(*lanes));
	if (!lanes)
		rc = -ENOMEM;
	for (size_t i = 0; !rc && i < b->lanes.n; i++)
		rc = an_lane_of(a, pids[b->lanes.v[i].pid], b->lanes.v[i].stream, &lanes[i]);
	struct remap m = {names, rows, pids, map[M_DIRS], lanes, seq};
	if (!rc) {
		rc = an_xmerge(a, b, rows, map[M_NAMES]);
		map[M_NAMES] = NULL; /* a's now */
	}
	if (!rc) {
		MOVE_BACK(a->open, a->nopen, b->open, b->nopen, b->capopen, &m, move_xrec);
		MOVE_BACK(a->copies, a->ncopies, b->copies, b->ncopies, b->capcopies, &m, move_copy);
		MOVE_BACK(a->corrs, a->ncorrs, b->corrs, b->ncorrs, b->capcorrs, &m, move_corr);
		MOVE_BACK(a->hgpus, a->nhgpus, b->hgpus, b->nhgpus, b->caphgpus, &m, move_hgpu);
		MOVE_BACK(a->hcalls, a->nhcalls, b->hcalls, b->nhcalls, b->caphcalls, &m, move_hcall);
		MOVE_BACK(a->bws, a->nbws, b->bws, b->nbws, b->capbws, &m, move_bw);
		MOVE_BACK(a->hwide, a->nhwide, b->hwide, b->nhwide, b->caphwide, &m, move_hwide);
	}
	for (size_t i = 0; !rc && i < b->nmemsamples; i++)
		rc =
		    an_memory_add(a, pids[b->memsamples[i].pid], b->memsamples[i].ts, b->memsamples[i].bytes);
	if (!rc) {
		a->nseq += b->nseq;
		if (b->timed) {
			a->first_ts = !a->timed || b->first_ts < a->first_ts ? b->first_ts : a->first_ts;
			a->last_end = !a->timed || b->last_end > a->last_end ? b->last_end : a->last_end;
			a->timed = true;
		}
		a->unfinished += b->unfinished;
		a->unknown += b->unknown;
		a->untimed += b->untimed;
		char **mine[] = {&a->strobe_meta, &a->host_name, &a->gpu_capture};
		char **theirs[] = {&b->strobe_meta, &b->host_name, &b->gpu_capture};
		for (size_t i = 0; i < 3; i++)
			if (*theirs[i]) { /* a later member wins */
				free(*mine[i]);
				*mine[i] = *theirs[i];
				*theirs[i] = NULL;
			}
		if (b->has_dist_rank) {
			a->has_dist_rank = true;
			a->dist_rank = b->dist_rank;
		}
		if (b->base_seen) {
			a->base_seen = true;
			a->has_base = b->has_base;
			a->base_ns = b->base_ns;
		}
		a->recent_rows = (struct an_recent_rows){0};
		a->last_cat.at = 0;
		a->pending_flow.active = false;
	}
	free(lanes);
	for (int t = 0; t < M_TABLES; t++) {
		free(map[t]);
		free(fresh[t]);
	}
	return rc;
}

/* Both halves' statistics as one read's of the whole file (len bytes). */
static void merge_stats(struct tr_stats *st, const struct tr_stats *x, const struct tr_stats *y, size_t len,
                        size_t brace)
{
	*st = *x;
	st->file_bytes = st->json_bytes = len;
	st->events += y->events;
	st->skipped += y->skipped;
	st->truncated += y->truncated;
	st->dropped += y->dropped;
	st->bad_times += y->bad_times;
	st->negative_durs += y->negative_durs;
	st->events_end = brace + y->events_end - (sizeof(half_head) - 1);
}

/* Reads file in two halves at once when it is a plain JSON object of
 * an_split_min bytes or more and a place to split it is found. Returns 1
 * when it did (a holds the whole file's tables, st its statistics), else 0:
 * the file is to be read whole, a as it came (anything that goes wrong
 * here, the read of the whole file meets again and words). */
static int read_halves(struct an_trace *a, const char *file, struct tr_stats *st)
{
	if (an_threads().read < 2 || !strcmp(file, "-"))
		return 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || (size_t)sb.st_size < an_split_min || sb.st_size < 64) {
		close(fd);
		return 0;
	}
	/* Plain JSON (not compressed, not Perfetto) and an object, so that
	 * traceEvents is a member; then a place to split past the middle. */
	size_t len = (size_t)sb.st_size, comma = 0, brace = 0, at = 0;
	size_t wn = len / 2 > SPLIT_WINDOW ? SPLIT_WINDOW : len / 2;
	char *w = malloc(wn > 64 ? wn : 64);
	ssize_t got = w ? pread(fd, w, 64, 0) : -1;
	while (got > 0 && at < (size_t)got && blank(w[at]))
		at++;
	if (got > 0 && at < (size_t)got && w[at] == '{' && pread(fd, w, wn, (off_t)(len / 2)) == (ssize_t)wn)
		brace = split_point(w, wn, len / 2, &comma);
	free(w);
	if (!brace) {
		close(fd);
		return 0;
	}
	struct an_trace *b = calloc(1, sizeof(*b));
	atomic_bool stop = false;
	struct half hb = {
	    .a = b,
	    .piece = {{.data = half_head, .len = sizeof(half_head) - 1}, {NULL, len - brace, fd, brace}},
	    .rc = -ENOMEM,
	    .stop = &stop};
	struct half ha = {.a = a, .piece = {{NULL, comma, fd, 0}, {.data = "]}", .len = 2}}, .stop = &stop};
	pthread_t th;
	bool started = false;
	if (b) {
		init_tables(b);
		started = pthread_create(&th, NULL, half_main, &hb) == 0;
	}
	int rc = 0;
	if (started) {
		read_half(&ha, file);
		pthread_join(th, NULL);
		/* Usable when both halves were read whole by the fast tokenizer (a
		 * file that needs repairs is read whole, so that its messages and
		 * offsets are the file's) and the first half's traceEvents ended
		 * at the split: then the split was between two of its elements. */
		if (!ha.rc && !hb.rc && ha.st.events_end == comma + 1 && hb.st.events_end) {
			rc = merge_half(a, b);
			if (!rc) {
				merge_stats(st, &ha.st, &hb.st, len, brace);
				a->halves = true;
				rc = 1;
			}
		}
	}
	if (b) {
		an_free(b);
		free(b);
	}
	close(fd);
	if (rc != 1) {
		/* Back to as new, for the read of the whole file. */
		const char *step_name = a->step_name, *seq_op = a->seq_op;
		void (*progress_cb)(const char *, const struct tr_stats *, void *) = a->progress_cb;
		void *progress_arg = a->progress_arg;
		an_free(a);
		*a = (struct an_trace){.step_name = step_name,
		                       .seq_op = seq_op,
		                       .progress_cb = progress_cb,
		                       .progress_arg = progress_arg};
		init_tables(a);
	}
	return rc == 1 ? 1 : 0;
}

int an_read(struct an_trace *a, const char *file, struct tr_stats *st, char *err, size_t errlen)
{
	struct tr_stats scratch;
	st = st ? st : &scratch;
	init_tables(a);
	struct tr_handler h = {.event_cb = on_event, .member_cb = on_member, .user_arg = a};
	if (errlen)
		*err = 0;
	int rc = 0;
	if (!read_halves(a, file, st)) {
		a->reading = st;
		rc = tr_read_file(file, &h, st, err, errlen);
		a->reading = NULL;
	}
	if (!rc && a->progress_cb)
		a->progress_cb("analysing", st, a->progress_arg);
	struct an_table cpu_ops = {.item_size = sizeof(struct an_cpu_op)};
	if (!rc)
		rc = an_split_async(a);
	/* HTA's launch matching needs neither the complete events nor self
	 * time: on two threads it runs beside their layout and self time. */
	struct an_beside launches = {.a = a, .fn = an_hta_launches};
	if (!rc)
		an_beside_start(&launches);
	if (!rc)
		rc = an_xlayout(a);
	if (!rc)
		rc = compute_self(a, &cpu_ops);
	if (!rc)
		rc = compute_cpu_ops(a, &cpu_ops);
	an_table_free(&cpu_ops);
	if (!rc)
		an_sort(a->open, a->nopen, sizeof(*a->open), cmp_xrec); /* outermost first */
	if (!rc)
		rc = list_ranks(a);
	rc = an_beside_end(&launches, rc);
	if (!rc)
		rc = compute_rest(a);
	if (!rc)
		rc = an_memory_compute(a);
	if (!rc && a->strobe_meta) {
		yajl_val root = yajl_tree_parse(a->strobe_meta, NULL, 0);
		a->meta_root = root;
		meta_walk(a, root, "");
	}
	/* The reader words its own failures; ours (a callback's) are all memory. */
	if (rc && errlen && !*err)
		snprintf(err, errlen, "%s: out of memory", file);
	return rc;
}

void an_free(struct an_trace *a)
{
	struct an_table *tables[] = {&a->phs,  &a->cats,     &a->xcats,    &a->names, &a->rows,
	                             &a->pids, &a->instants, &a->counters, &a->dirs,  &a->tnames};
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		an_table_free(tables[i]);
	an_xfree(a);
	free(a->open);
	free(a->gpu);
	free(a->copies);
	free(a->corrs);
	free_lats(a);
	free(a->strobe_meta);
	free(a->host_name);
	free(a->gpu_capture);
	for (size_t i = 0; i < a->ndevices; i++)
		free(a->devices[i].streams);
	free(a->devices);
	free(a->ranks);
	free(a->kernels);
	free(a->copy_stats);
	free(a->latency);
	free(a->cpu_ops);
	an_memory_free(a);
	an_hta_free(a);
	for (size_t i = 0; i < a->nmeta; i++)
		free(a->meta[i].key);
	free(a->meta);
	yajl_tree_free(a->meta_root);
}

const char *an_name(const struct an_trace *a, uint32_t i)
{
	const struct an_name *sn = an_table_item(&a->names, i);
	return a->names.keys[i] + sn->cat_len + 1;
}

const char *an_name_cat(const struct an_trace *a, uint32_t i)
{
	return a->xcats.keys[((const struct an_name *)an_table_item(&a->names, i))->cat];
}

int64_t an_row_rank(const struct an_trace *a, uint32_t row)
{
	const struct an_row *r = an_table_item(&a->rows, row);
	return ((const struct an_process *)an_table_item(&a->pids, r->pid))->rank;
}

const char *an_row_tid(const struct an_trace *a, uint32_t row)
{
	const struct an_row *r = an_table_item(&a->rows, row);
	return a->rows.keys[row] + r->tid_off;
}

const char *an_row_label(const struct an_trace *a, uint32_t row)
{
	const struct an_tname *t = a->tnames.n ? an_table_find(&a->tnames, a->rows.keys[row]) : NULL;
	return t && *t->name ? t->name : an_row_tid(a, row);
}

const char *an_row_pid(const struct an_trace *a, uint32_t row)
{
	const struct an_row *r = an_table_item(&a->rows, row);
	return a->pids.keys[r->pid] + 1;
}

const char *an_device_label(const struct an_trace *a, uint32_t pid, char *buf, size_t len)
{
	const struct an_process *p = an_table_item(&a->pids, pid);
	const char *id = a->pids.keys[pid] + 1;
	if (p->rank >= 0)
		snprintf(buf, len, "%s", p->name);
	else if (*p->label)
		snprintf(buf, len, "%s (pid %s)", p->label, id);
	else
		snprintf(buf, len, "pid %s", id);
	return buf;
}

const char *an_rank_label(int64_t rank, char *buf, size_t len)
{
	if (rank < 0)
		snprintf(buf, len, "no rank");
	else
		snprintf(buf, len, "rank %" PRId64, rank);
	return buf;
}

/* ---- sorted views -------------------------------------------------------- */

static int cmp_ref(const void *pa, const void *pb)
{
	const struct an_ref *x = pa, *y = pb;
	if (x->key != y->key)
		return x->key > y->key ? -1 : 1;
	return strcmp(x->name, y->name);
}

struct an_ref *an_refs_of(const struct an_table *t, uint32_t first_len_offset,
                          int64_t (*key)(const void *item))
{
	struct an_ref *r = calloc(t->n ? t->n : 1, sizeof(*r));
	if (!r)
		return NULL;
	for (size_t i = 0; i < t->n; i++) {
		const void *item = an_table_item(t, i);
		uint32_t skip = 0;
		if (first_len_offset != UINT32_MAX) {
			memcpy(&skip, (const unsigned char *)item + first_len_offset, sizeof(skip));
			skip++;
		}
		r[i] = (struct an_ref){(uint32_t)i, key(item), t->keys[i] + skip};
	}
	an_sort(r, t->n, sizeof(*r), cmp_ref);
	return r;
}

struct an_ref *an_names_of(const struct an_trace *a, uint32_t cat, bool by_self, size_t *n)
{
	const struct an_category *c = an_table_item(&a->xcats, cat);
	struct an_ref *r = calloc(c->names ? c->names : 1, sizeof(*r));
	if (!r)
		return NULL;
	*n = 0;
	for (size_t i = 0; i < a->names.n && *n < c->names; i++) {
		const struct an_name *sn = an_table_item(&a->names, i);
		if (sn->cat == cat && sn->count)
			r[(*n)++] = (struct an_ref){(uint32_t)i, by_self ? sn->self_wall : sn->wall,
			                            an_name(a, (uint32_t)i)};
	}
	an_sort(r, *n, sizeof(*r), cmp_ref);
	return r;
}

const char *an_fmt_dur(int64_t ns, char *buf, size_t len)
{
	uint64_t v = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	const char *sign = ns < 0 ? "-" : "";
	if (v < 1000) {
		snprintf(buf, len, "%s%" PRIu64 " ns", sign, v);
		return buf;
	}
	static const struct {
		uint64_t scale; /* ns per unit / 1000: the step of the third decimal */
		const char *unit;
	} units[] = {{1, "µs"}, {1000, "ms"}, {1000000, "s"}};
	size_t u = v < 1000000 ? 0 : v < 1000000000 ? 1 : 2;
	uint64_t milli = (v + units[u].scale / 2) / units[u].scale;
	snprintf(buf, len, "%s%" PRIu64 ".%03" PRIu64 " %s", sign, milli / 1000, milli % 1000, units[u].unit);
	return buf;
}

bool an_parse_top(const char *text, size_t *top)
{
	char *end;
	errno = 0;
	long v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < 0 || v > 1000000)
		return false;
	*top = (size_t)v;
	return true;
}

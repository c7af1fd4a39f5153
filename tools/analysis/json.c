/* strobe summary --json: one object, every table's rows from its column
 * spec (columns.h). Times are integer nanoseconds. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_gen.h>

#include "analysis/present.h"

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
static void gd(yajl_gen g, double v)
{
	char buf[40];
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	yajl_gen_number(g, buf, strlen(buf));
}

static void json_rows(yajl_gen g, const struct an_view *v, const struct an_spec *t, struct an_rows rows,
                      const char *key);

static void json_value(yajl_gen g, const struct an_column *c, const struct an_value *val)
{
	if (val->none) {
		yajl_gen_null(g);
		return;
	}
	switch (c->unit) {
	case AN_IDENT: /* a pid or tid as the trace wrote it: a number stays a number */
		if (val->s[0] == 'n')
			yajl_gen_number(g, val->s + 1, strlen(val->s + 1));
		else
			gs(g, val->s + 1);
		break;
	case AN_COUNT:
	case AN_NS:
	case AN_TS:
		yajl_gen_integer(g, val->i);
		break;
	case AN_PCT:
	case AN_RATE:
	case AN_REAL:
		gd(g, val->d);
		break;
	case AN_RAW:
		yajl_gen_number(g, val->s, strlen(val->s));
		break;
	case AN_RANK:
		if (val->i >= 0)
			yajl_gen_integer(g, val->i);
		else
			yajl_gen_null(g);
		break;
	default:
		gs(g, val->s);
	}
}

/* The members of one row; keys "a.b" go in an object a. */
static void json_fields(yajl_gen g, const struct an_view *v, const struct an_spec *t, const void *row)
{
	const char *group = NULL;
	size_t glen = 0;
	struct an_value val[1];
	for (size_t i = 0; i < t->ncols; i++) {
		const struct an_column *c = &t->cols[i];
		const char *dot = strchr(c->key, '.');
		size_t plen = dot ? (size_t)(dot - c->key) : 0;
		if (group && (plen != glen || strncmp(c->key, group, glen))) {
			yajl_gen_map_close(g);
			group = NULL;
		}
		if (dot && !group) {
			yajl_gen_string(g, (const unsigned char *)c->key, plen);
			yajl_gen_map_open(g);
			group = c->key;
			glen = plen;
		}
		an_get(v->a, c, row, val);
		if (c->unit == AN_ROWS) {
			json_rows(g, v, c->sub, val->rows, dot ? dot + 1 : c->key);
			continue;
		}
		gs(g, dot ? dot + 1 : c->key);
		json_value(g, c, val);
	}
	if (group)
		yajl_gen_map_close(g);
}

/* "key": the rows --top keeps, as a list (AN_T_ONE: an object or null). */
static void json_rows(yajl_gen g, const struct an_view *v, const struct an_spec *t, struct an_rows rows,
                      const char *key)
{
	gs(g, key);
	if (t->flags & AN_T_ONE && !rows.n) {
		yajl_gen_null(g);
		return;
	}
	if (!(t->flags & AN_T_ONE))
		yajl_gen_array_open(g);
	struct an_iter it = an_iter(v, t, rows);
	for (const void *row; (row = an_next(&it));) {
		yajl_gen_map_open(g);
		json_fields(g, v, t, row);
		yajl_gen_map_close(g);
		if (t->flags & AN_T_ONE)
			return;
	}
	yajl_gen_array_close(g);
}

static void json_counts(yajl_gen g, const char *key, const struct an_table *t, const struct an_ref *r)
{
	gs(g, key);
	yajl_gen_map_open(g);
	for (size_t i = 0; i < t->n; i++)
		gi(g, r[i].name, (int64_t)((const struct an_count *)an_table_item(t, r[i].id))->n);
	yajl_gen_map_close(g);
}

/* The categories, each with its names by total and by self time. */
static void json_categories(yajl_gen g, const struct an_view *v)
{
	gs(g, an_categories.key);
	yajl_gen_array_open(g);
	for (size_t i = 0; i < v->nxcats; i++) {
		yajl_gen_map_open(g);
		json_fields(g, v, &an_categories, &v->xcats[i]);
		json_rows(g, v, &an_names, v->names[i][0], "top_by_total");
		json_rows(g, v, &an_names, v->names[i][1], "top_by_self");
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

/* "accounting": the "strobe" object's members in "strobe" (null when the
 * trace has none), then this reader's counts. */
static void json_accounting(yajl_gen g, const struct an_view *v)
{
	bool meta = v->a->strobe_meta;
	gs(g, an_accounting.key);
	yajl_gen_map_open(g);
	gs(g, "strobe");
	if (meta)
		yajl_gen_map_open(g);
	else
		yajl_gen_null(g);
	for (size_t i = 0; i < v->nacct; i++) {
		if (meta && !v->acct[i].meta) {
			yajl_gen_map_close(g);
			meta = false;
		}
		gs(g, v->acct[i].key);
		yajl_gen_number(g, v->acct[i].raw, strlen(v->acct[i].raw));
	}
	if (meta)
		yajl_gen_map_close(g);
	yajl_gen_map_close(g);
}

/* "open_at_dump": [{"pid", "tid", "ranges": [{"name", "cat", "ts_ns",
 * "open_ns", "depth"}, ...]}, ...], outermost first. */
static void json_open(yajl_gen g, const struct an_trace *s)
{
	gs(g, "open_at_dump");
	yajl_gen_array_open(g);
	for (size_t i = 0, depth = 0; i < s->nopen; i++) {
		const struct an_xrec *x = &s->open[i];
		if (!i || x->row != s->open[i - 1].row) {
			if (i) {
				yajl_gen_array_close(g);
				yajl_gen_map_close(g);
			}
			yajl_gen_map_open(g);
			gs(g, "pid");
			gs(g, an_row_pid(s, x->row));
			gs(g, "tid");
			gs(g, an_row_tid(s, x->row));
			gs(g, "ranges");
			yajl_gen_array_open(g);
			depth = 0;
		}
		const struct an_name *sn = an_table_item(&s->names, x->name);
		yajl_gen_map_open(g);
		gs(g, "name");
		gs(g, an_name(s, x->name));
		gs(g, "cat");
		yajl_gen_string(g, (const unsigned char *)s->names.keys[x->name], sn->cat_len);
		gi(g, "ts_ns", x->ts);
		gi(g, "open_ns", x->dur);
		gi(g, "depth", (int64_t)depth++);
		yajl_gen_map_close(g);
	}
	if (s->nopen) {
		yajl_gen_array_close(g);
		yajl_gen_map_close(g);
	}
	yajl_gen_array_close(g);
}

int an_print_json(const struct an_view *v, FILE *out)
{
	const struct an_trace *s = v->a;
	const struct tr_stats *st = v->st;
	yajl_gen g = yajl_gen_alloc(NULL);
	if (!g)
		return -ENOMEM;
	yajl_gen_config(g, yajl_gen_beautify, 1);
	yajl_gen_config(g, yajl_gen_indent_string, "  ");

	yajl_gen_map_open(g);
	gs(g, "file");
	gs(g, v->file);
	gs(g, "format");
	gs(g, st->perfetto ? "perfetto" : "json");
	gs(g, "compression");
	gs(g, st->compression == TR_GZIP ? "gzip" : st->compression == TR_ZSTD ? "zstd" : "none");
	gi(g, "file_bytes", (int64_t)st->file_bytes);
	gi(g, "json_bytes", (int64_t)st->json_bytes);
	gi(g, "events", (int64_t)st->events);
	if (s->nopen)
		json_open(g, s);
	gs(g, "span");
	if (s->timed) {
		yajl_gen_map_open(g);
		gi(g, "first_ts_ns", s->first_ts);
		gi(g, "last_end_ns", s->last_end);
		gi(g, "duration_ns", an_window(s));
		yajl_gen_map_close(g);
	} else {
		yajl_gen_null(g);
	}
	json_counts(g, "by_ph", &s->phs, v->phs);
	json_counts(g, "by_cat", &s->cats, v->cats);
	json_categories(g, v);
	json_rows(g, v, &an_instants, an_instants.rows(v), an_instants.key);
	gi(g, "instant_names", (int64_t)s->instants.n);
	json_rows(g, v, &an_counters, an_counters.rows(v), an_counters.key);
	gi(g, "counter_series", (int64_t)s->counters.n);
	gs(g, "ranks");
	yajl_gen_array_open(g);
	for (size_t i = 0; i < s->nranks; i++)
		if (s->ranks[i] >= 0)
			yajl_gen_integer(g, s->ranks[i]);
	yajl_gen_array_close(g);
	const struct an_spec *const gpu[] = {&an_devices,    &an_kernels, &an_memcpy,       &an_latency,
	                                     &an_gpu_memory, &an_cpu_ops, &an_steps,        &an_breakdown,
	                                     &an_ktypes,     &an_knames,  &an_idle_streams, &an_launch_stats,
	                                     &an_queues,     &an_membw,   &an_kseqs,        &an_cpaths};
	for (size_t i = 0; i < sizeof(gpu) / sizeof(gpu[0]); i++)
		json_rows(g, v, gpu[i], gpu[i]->rows(v), gpu[i]->key);
	json_accounting(g, v);
	yajl_gen_map_close(g);

	const unsigned char *buf;
	size_t len;
	int rc = yajl_gen_get_buf(g, &buf, &len) == yajl_gen_status_ok ? 0 : -ENOMEM;
	if (!rc)
		fwrite(buf, 1, len, out);
	yajl_gen_free(g);
	return rc;
}

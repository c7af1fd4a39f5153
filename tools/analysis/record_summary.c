/* The few lines strobe record prints when the program ends, from the same
 * pass over the trace that strobe summary makes (analysis.h). */
#include "analysis/record_summary.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "strobe/strobe.h"

#define TOP 5

/* Counters of the "strobe" accounting object that mean something was lost
 * or cut, and what to change when they are not zero. */
static const struct {
	const char *key, *what, *hint;
} losses[] = {
    {"dropped_events", "CPU events dropped (buffer full)", "raise ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB"},
    {"truncated_names", "names cut at 1023 bytes", NULL},
    {"gpu_dropped_records", "GPU records dropped by CUPTI", "raise ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB"},
    {"gpu_rejected_buffers", "GPU buffer requests refused", "raise ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB"},
    {"gpu_discarded_buffers", "GPU buffers discarded", "raise ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB"},
    {"gpu_launches_without_kernel", "kernel launches without their kernel", NULL},
    {"gpu_incomplete_records", "GPU records still in flight at the end", NULL},
    {"unfinished_ranges", "ranges still open at the end (closed there)", NULL},
};

static void top_kernels(const struct an_trace *a, FILE *out)
{
	size_t n = a->nkernel_stats < TOP ? a->nkernel_stats : TOP;
	if (!n)
		return;
	fprintf(out, "  top kernels by total time\n");
	for (size_t i = 0; i < n; i++) {
		const struct an_kernel *k = &a->kernels[i];
		char d[32];
		fprintf(out, "    %10s  %7llu x  %s\n", an_fmt_dur(k->total, d, sizeof(d)),
		        (unsigned long long)k->count, an_name(a, k->name));
	}
}

/* NVTX and strobe ranges: user_annotation, and the categories of NVTX
 * domains (any category that is not one of strobe's activity types). */
static bool annotation_category(const char *cat)
{
	enum strobe_activity_type type;
	if (!strcmp(cat, "user_annotation"))
		return true;
	return strcmp(cat, "Trace") && strcmp(cat, "ac2g") && strcmp(cat, "fwdbwd") &&
	       strobe_activity_type_parse(cat, &type) != 0;
}

struct range_row {
	const char *name, *cat;
	uint64_t count;
	int64_t total;
};

static int cmp_rows(const void *pa, const void *pb)
{
	const struct range_row *x = pa, *y = pb;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void top_ranges(const struct an_trace *a, FILE *out)
{
	struct range_row *rows = NULL;
	size_t n = 0, cap = 0;
	for (size_t j = 0; j < a->xcats.n; j++) {
		if (!annotation_category(a->xcats.keys[j]))
			continue;
		size_t m = 0;
		struct an_ref *r = an_names_of(a, (uint32_t)j, false, &m);
		if (!r)
			continue;
		if (n + m > cap) {
			size_t ncap = (n + m) * 2;
			struct range_row *nr = realloc(rows, ncap * sizeof(*nr));
			if (!nr) {
				free(r);
				break;
			}
			rows = nr;
			cap = ncap;
		}
		for (size_t i = 0; i < m; i++) {
			const struct an_name *nm = an_table_item(&a->names, r[i].id);
			rows[n++] = (struct range_row){r[i].name, a->xcats.keys[j], nm->count, nm->wall};
		}
		free(r);
	}
	if (n) {
		qsort(rows, n, sizeof(*rows), cmp_rows);
		fprintf(out, "  top annotation ranges (NVTX, strobe_range_push) by total time\n");
		for (size_t i = 0; i < n && i < TOP; i++) {
			char d[32];
			bool domain = strcmp(rows[i].cat, "user_annotation") != 0;
			fprintf(out, "    %10s  %7llu x  %s%s%s%s\n", an_fmt_dur(rows[i].total, d, sizeof(d)),
			        (unsigned long long)rows[i].count, rows[i].name, domain ? " [" : "",
			        domain ? rows[i].cat : "", domain ? "]" : "");
		}
	}
	free(rows);
}

static void gpu_busy(const struct an_trace *a, FILE *out)
{
	if (!a->ndevices)
		return;
	int64_t window = an_window(a);
	fprintf(out, "  GPU busy time (kernels, copies, memsets; overlapping streams counted once)\n");
	for (size_t i = 0; i < a->ndevices; i++) {
		const struct an_device *d = &a->devices[i];
		char label[TR_SHORT_MAX + 64], busy[32];
		fprintf(out, "    %-24s %10s  %5.1f%% of the trace\n",
		        an_device_label(a, d->pid, label, sizeof(label)),
		        an_fmt_dur(d->busy, busy, sizeof(busy)), an_pct(d->busy, window));
	}
}

static void dropped(const struct an_trace *a, FILE *out)
{
	bool any = false;
	for (size_t i = 0; i < a->nmeta; i++)
		for (size_t j = 0; j < sizeof(losses) / sizeof(losses[0]); j++) {
			if (strcmp(a->meta[i].key, losses[j].key) || !strcmp(a->meta[i].raw, "0"))
				continue;
			if (!any)
				fprintf(out, "  lost or cut\n");
			any = true;
			fprintf(out, "    %s: %s%s%s\n", losses[j].what, a->meta[i].raw,
			        losses[j].hint ? "; " : "", losses[j].hint ? losses[j].hint : "");
		}
	if (!any)
		fprintf(out, "  nothing dropped\n");
}

int record_summary(const char *path, int64_t wall_ns, FILE *out)
{
	/* A device, FIFO or /dev/stdout took the trace: reading it back would
	 * read someone else's data or wait forever. */
	struct stat sb;
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		fprintf(out, "strobe: record: the trace went to %s, not a file: no summary\n", path);
		return 0;
	}
	struct an_trace a;
	memset(&a, 0, sizeof(a));
	struct tr_stats st;
	char err[1024];
	int rc = an_read(&a, path, &st, err, sizeof(err));
	if (rc) {
		fprintf(out, "strobe: record: cannot summarise the trace: %s\n", err);
		an_free(&a);
		return rc < 0 ? rc : -EBADMSG;
	}
	char w[32], span[32];
	fprintf(out, "strobe: summary of %s: %llu events over %s (program wall time %s)\n", path,
	        (unsigned long long)st.events, an_fmt_dur(an_window(&a), span, sizeof(span)),
	        an_fmt_dur(wall_ns, w, sizeof(w)));
	if (a.gpu_capture)
		fprintf(out, "  %s\n", a.gpu_capture);
	top_kernels(&a, out);
	top_ranges(&a, out);
	gpu_busy(&a, out);
	dropped(&a, out);
	fprintf(out, "  more: strobe summary %s; strobe report %s -o report.html\n", path, path);
	an_free(&a);
	return 0;
}

/* Steps and the analyses of HolisticTraceAnalysis (HTA 0.5), computed from
 * what the one pass over a trace collected: see docs/analysis.md for each
 * definition and where strobe differs from HTA.
 *
 * HTA works on one trace per rank; strobe works on each GPU device (the pid
 * of GPU events), which is the same for libkineto's one-device-per-rank
 * traces and keeps a merged trace's ranks apart. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sort.h"

/* An integer arg (negative too); false when absent or not an integer. */
static bool int_arg(const struct tr_event *ev, const char *key, int64_t *out)
{
	const struct tr_pair *p = tr_event_arg(ev, key);
	return p && !p->truncated && an_parse_int(p->value, out);
}

/* The "memory bandwidth (GB/s)" arg libkineto writes on copies and
 * memsets; 0 without (HTA's default). */
static double bw_arg(const struct tr_event *ev)
{
	const struct tr_pair *p = tr_event_arg(ev, "memory bandwidth (GB/s)");
	if (!p || p->truncated)
		return 0;
	char *end;
	double v = strtod(p->value, &end);
	return end != p->value && !*end && isfinite(v) ? v : 0;
}

/* HTA's get_kernel_type: COMMUNICATION ^nccl.*Kernel, MEMORY ^(Memcpy|Memset|dma),
 * OTHER when the name matches (^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)
 * (Python's re.match: anchored at the start), else COMPUTATION. */
static unsigned kernel_type(const char *name)
{
	bool nccl = !strncmp(name, "nccl", 4) && strstr(name + 4, "Kernel");
	if (nccl)
		return AN_COMMUNICATION;
	if (!strncmp(name, "Memcpy", 6) || !strncmp(name, "Memset", 6) || !strncmp(name, "dma", 3))
		return AN_MEMORY;
	if (strstr(name, "Memcpy") || strstr(name, "Sync"))
		return AN_OTHER;
	return AN_COMPUTATION;
}

const char *an_ktype_name(unsigned type)
{
	static const char *const names[] = {"COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER"};
	return type < 4 ? names[type] : "?";
}

bool an_name_in(const char *name, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(name, *set))
			return true;
	return false;
}

/* an_name.hta: the kernel type in the low bits, then these; worked out
 * the first time a name is seen (its category is part of it). */
enum { H_KNOWN = 1 << 2, H_WORK = 1 << 3, H_LAUNCH = 1 << 4, H_QUEUE = 1 << 5 };

static unsigned name_hta(struct an_trace *a, uint32_t name, const struct tr_event *ev)
{
	static const char *const launch_names[] = {"cudaLaunchKernel",
	                                           "cudaLaunchKernelExC",
	                                           "cudaMemcpyAsync",
	                                           "cudaMemsetAsync",
	                                           "runFunction - job_prep_and_submit_for_execution",
	                                           NULL};
	static const char *const queue_names[] = {"cuLaunchKernel",
	                                          "hipLaunchKernel",
	                                          "hipExtModuleLaunchKernel",
	                                          "hipMemsetAsync",
	                                          "hipMemcpyAsync",
	                                          "hipMemcpyWithStream",
	                                          NULL};
	struct an_name *sn = an_table_item(&a->names, name);
	if (sn->hta & H_KNOWN)
		return sn->hta;
	bool work =
	    !strcmp(ev->cat, "kernel") || !strcmp(ev->cat, "gpu_memcpy") || !strcmp(ev->cat, "gpu_memset");
	bool launch = an_name_in(ev->name, launch_names);
	bool queue = launch || an_name_in(ev->name, queue_names);
	sn->hta = (uint8_t)(kernel_type(ev->name) | H_KNOWN | (work ? H_WORK : 0) | (launch ? H_LAUNCH : 0) |
	                    (queue ? H_QUEUE : 0));
	return sn->hta;
}

int an_hta_add(struct an_trace *a, const struct tr_event *ev, uint32_t row, uint32_t name, int64_t dur,
               uint32_t what, uint64_t lcorr, bool *kept)
{
	const struct an_row *r = an_table_item(&a->rows, row);
	int64_t stream = -1, corr = -1;
	bool has_stream = int_arg(ev, "stream", &stream);
	bool has_corr = int_arg(ev, "correlation", &corr);
	unsigned h = name_hta(a, name, ev);
	bool work = h & H_WORK;
	if (work && !has_stream) /* strobe's and other writers' GPU rows: the tid is the stream */
		an_parse_int(an_row_tid(a, row), &stream);
	uint32_t seq = (uint32_t)a->nseq++;
	uint64_t c = has_corr ? (uint64_t)corr : UINT64_MAX; /* -1 is none too */
	uint32_t c32 = c == UINT64_MAX ? AN_HCORR_NONE : c < AN_HCORR_NONE ? (uint32_t)c : AN_HCORR_WIDE;
	if (stream != -1) {
		*kept = what == AN_CORR_KERNEL && has_corr && (uint64_t)corr == lcorr;
		unsigned type = h & 3;
		double bw = type == AN_MEMORY ? bw_arg(ev) : 0;
		if (bw != 0 && AN_PUSH(a->bws, a->nbws, a->capbws, (struct an_bw){seq, bw}))
			return -ENOMEM;
		bool wide = dur >= AN_HREC_LONG || c32 == AN_HCORR_WIDE;
		if (wide && AN_PUSH(a->hwide, a->nhwide, a->caphwide, (struct an_hwide){seq, dur, c}))
			return -ENOMEM;
		uint32_t lane;
		if (an_lane_of(a, r->pid, stream, &lane))
			return -ENOMEM;
		return AN_PUSH(
		    a->hgpus, a->nhgpus, a->caphgpus,
		    (struct an_hrec){.ts = ev->ts_ns,
		                     .dur = wide ? AN_HREC_LONG : (uint32_t)dur,
		                     .lane = lane,
		                     .name = name,
		                     .seq = seq,
		                     .corr = (wide ? AN_HCORR_WIDE : c32) | (*kept ? AN_HCORR_LAT : 0)});
	}
	if (c == UINT64_MAX)
		return 0;
	*kept = what == AN_CORR_LAUNCH && c == lcorr;
	bool wide = dur >= AN_HREC_LONG || c32 == AN_HCORR_WIDE;
	if (wide && AN_PUSH(a->hwide, a->nhwide, a->caphwide, (struct an_hwide){seq, dur, c}))
		return -ENOMEM;
	return AN_PUSH(a->hcalls, a->nhcalls, a->caphcalls,
	               (struct an_hcall){{ev->ts_ns, wide ? AN_HREC_LONG : (uint32_t)dur, row, name, seq},
	                                 (wide ? AN_HCORR_WIDE : c32) | (*kept ? AN_HCORR_LAT : 0)});
}

/* A correlation as read (AN_HCORR_*) of the event with file order seq:
 * UINT64_MAX for none. */
static uint64_t hcorr(const struct an_trace *a, uint32_t corr, uint32_t seq)
{
	corr &= ~AN_HCORR_LAT;
	return corr < AN_HCORR_NONE ? corr : corr == AN_HCORR_NONE ? UINT64_MAX : an_hwide_at(a, seq)->corr;
}

static uint64_t hcall_corr(const struct an_trace *a, const struct an_hcall *c)
{
	return hcorr(a, c->corr, c->c.seq);
}

static uint64_t lane_hash(uint32_t pid, int64_t stream)
{
	uint64_t h = ((uint64_t)stream ^ (uint64_t)pid << 40) * UINT64_C(0x9e3779b97f4a7c15);
	return h ^ h >> 29;
}

static uint64_t lane_at_hash(const void *set, size_t i)
{
	const struct an_lane *v = &((const struct an_lanes *)set)->v[i];
	return lane_hash(v->pid, v->stream);
}

/* Room in l's slots for one more lane, its lanes rehashed. */
static bool lane_room(struct an_lanes *l)
{
	return 2 * (l->n + 1) <= l->nslots ||
	       an_slots_rebuild(&l->slots, &l->nslots, l->nslots ? 2 * l->nslots : 16, l->n, lane_at_hash, l);
}

int an_lane_of(struct an_trace *a, uint32_t pid, int64_t stream, uint32_t *lane)
{
	struct an_lanes *l = &a->lanes;
	if (l->n && l->v[l->last].pid == pid && l->v[l->last].stream == stream) {
		*lane = l->last;
		return 0;
	}
	if (l->n >= UINT32_MAX - 1 || !lane_room(l))
		return -ENOMEM;
	size_t s = lane_hash(pid, stream) & (l->nslots - 1);
	for (; l->slots[s]; s = (s + 1) & (l->nslots - 1)) {
		const struct an_lane *v = &l->v[l->slots[s] - 1];
		if (v->pid == pid && v->stream == stream) {
			*lane = l->last = l->slots[s] - 1;
			return 0;
		}
	}
	if (AN_PUSH(l->v, l->n, l->cap, (struct an_lane){stream, pid}))
		return -ENOMEM;
	l->slots[s] = (uint32_t)l->n;
	*lane = l->last = (uint32_t)l->n - 1;
	return 0;
}

const struct an_hwide *an_hwide_at(const struct an_trace *a, uint32_t seq)
{
	size_t lo = 0, hi = a->nhwide;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a->hwide[mid].seq < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return &a->hwide[lo]; /* an event marked wide has its entry */
}

/* What name_hta made of names-table entry name. */
static unsigned hta_of(const struct an_trace *a, uint32_t name)
{
	return ((const struct an_name *)an_table_item(&a->names, name))->hta;
}

bool an_hcpu_launch(const struct an_trace *a, const struct an_hcpu *l)
{
	return hta_of(a, l->name) & H_LAUNCH;
}

bool an_hcpu_queue(const struct an_trace *a, const struct an_hcpu *l)
{
	return hta_of(a, l->name) & H_QUEUE;
}

bool an_launch_queued(const struct an_trace *a, const struct an_hrec *r)
{
	return r->launch &&
	       hta_of(a, (uint32_t)an_pack_field(&a->hcpus, r->launch - 1, AN_HC_NAME)) & H_QUEUE;
}

unsigned an_hrec_type(const struct an_trace *a, const struct an_hrec *r)
{
	return hta_of(a, r->name) & 3;
}

bool an_hrec_work(const struct an_trace *a, const struct an_hrec *r)
{
	return hta_of(a, r->name) & H_WORK;
}

/* ---- spans ------------------------------------------------------------------ */

struct ival {
	int64_t s, e;
};

struct ivals {
	struct ival *v;
	size_t n, cap;
};

/* Appends [s, e) to u, whose spans come in start order, merging as it goes. */
static int ivals_add(struct ivals *u, int64_t s, int64_t e)
{
	if (u->n && s <= u->v[u->n - 1].e) {
		if (e > u->v[u->n - 1].e)
			u->v[u->n - 1].e = e;
		return 0;
	}
	return AN_PUSH(u->v, u->n, u->cap, (struct ival){s, e});
}

static int64_t ivals_total(const struct ivals *u)
{
	int64_t t = 0;
	for (size_t i = 0; i < u->n; i++)
		t = an_sat_add(t, an_span(u->v[i].s, u->v[i].e));
	return t;
}

/* x ∩ y (or x ∪ y when join), both disjoint and in order. */
static int ivals_combine(const struct ivals *x, const struct ivals *y, bool join, struct ivals *out)
{
	*out = (struct ivals){0};
	if (join) {
		size_t i = 0, j = 0;
		while (i < x->n || j < y->n) {
			const struct ival *p =
			    j >= y->n || (i < x->n && x->v[i].s <= y->v[j].s) ? &x->v[i++] : &y->v[j++];
			if (ivals_add(out, p->s, p->e))
				return -ENOMEM;
		}
		return 0;
	}
	for (size_t i = 0, j = 0; i < x->n && j < y->n;) {
		int64_t s = x->v[i].s > y->v[j].s ? x->v[i].s : y->v[j].s;
		int64_t e = x->v[i].e < y->v[j].e ? x->v[i].e : y->v[j].e;
		if (e > s && AN_PUSH(out->v, out->n, out->cap, (struct ival){s, e}))
			return -ENOMEM;
		if (x->v[i].e < y->v[j].e)
			i++;
		else
			j++;
	}
	return 0;
}

/* The time u covers inside [s, e). */
static int64_t ivals_within(const struct ivals *u, int64_t s, int64_t e)
{
	size_t lo = 0, hi = u->n;
	while (lo < hi) { /* the first span ending after s */
		size_t mid = (lo + hi) / 2;
		if (u->v[mid].e <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	int64_t t = 0;
	for (size_t i = lo; i < u->n && u->v[i].s < e; i++) {
		int64_t x = u->v[i].s > s ? u->v[i].s : s, y = u->v[i].e < e ? u->v[i].e : e;
		if (y > x)
			t = an_sat_add(t, an_span(x, y));
	}
	return t;
}

/* ---- matching GPU events to their launches ---------------------------------- */

static const struct an_trace *cmp_trace;

static int64_t pid_rank(const struct an_trace *a, uint32_t pid)
{
	return ((const struct an_process *)an_table_item(&a->pids, pid))->rank;
}

static bool hcall_less(const struct an_hcall *x, const struct an_hcall *y)
{
	uint64_t cx = hcall_corr(cmp_trace, x), cy = hcall_corr(cmp_trace, y);
	if (cx != cy)
		return cx < cy;
	int64_t rx = an_row_rank(cmp_trace, x->c.row), ry = an_row_rank(cmp_trace, y->c.row);
	return rx != ry ? rx < ry : x->c.seq < y->c.seq;
}

AN_SORT_DEFINE(sort_hcalls, struct an_hcall, hcall_less)

/* The first of hcalls (sorted by correlation) with correlation corr or
 * above. *from is where the last search ended: GPU events come mostly in
 * correlation order, so the search gallops on from there when it can. */
static size_t hcpu_lower(const struct an_trace *a, uint64_t corr, size_t *from)
{
	size_t n = a->nhcalls, lo = 0, hi = n;
	if (*from < n && hcall_corr(a, &a->hcalls[*from]) < corr) {
		/* everything before lo is below corr; hi is n or not below */
		lo = hi = *from + 1;
		for (size_t step = 1; hi < n && hcall_corr(a, &a->hcalls[hi]) < corr; step *= 2) {
			lo = hi + 1;
			hi = n - lo > step ? lo + step : n;
		}
	} else if (*from < n) {
		hi = *from;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (hcall_corr(a, &a->hcalls[mid]) < corr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return *from = lo;
}

/* The index in hcalls of the CPU event with correlation corr in rank (the
 * first in the file), or SIZE_MAX; from as hcpu_lower's. */
static size_t launch_of(const struct an_trace *a, uint64_t corr, int64_t rank, size_t *from)
{
	if (corr == UINT64_MAX)
		return SIZE_MAX;
	size_t n = a->nhcalls;
	for (size_t i = hcpu_lower(a, corr, from); i < n && hcall_corr(a, &a->hcalls[i]) == corr; i++)
		if (an_row_rank(a, a->hcalls[i].c.row) == rank)
			return i;
	return SIZE_MAX;
}

/* ---- launch latency ---------------------------------------------------------- */

/* A total order: an event's seq is its own. */
static bool corr_less(const struct an_corr *x, const struct an_corr *y)
{
	if (x->key != y->key)
		return x->key < y->key;
	if (x->seq != y->seq)
		return x->seq < y->seq;
	return x->what < y->what;
}
AN_SORT_DEFINE(sort_corrs, struct an_corr, corr_less)

/* A launch (seq, pid, ts) with kernel k's correlation, for its latency:
 * as a stream pairs them, the launches before the kernel in the file, or
 * when there are none (before false), every one after it (it waited for
 * them); of those in the kernel's rank, the nearest. */
static void consider(const struct an_trace *a, const struct an_corr *k, bool before, uint32_t seq,
                     int64_t rank, int64_t ts, int64_t *lat, bool *found)
{
	if ((seq < k->seq) != before || rank != pid_rank(a, k->pid))
		return;
	int64_t d = an_span(ts, k->ts);
	if (!*found || d < *lat)
		*lat = d;
	*found = true;
}

/* The launch latency of kernel k, from the launches with its correlation:
 * flagged hcalls (sorted by correlation; from as hcpu_lower's) and the
 * launches of corrs (sorted by key). False when none is in its rank. */
static bool kernel_latency(const struct an_trace *a, const struct an_corr *k, int64_t *lat, size_t *from)
{
	size_t lo = hcpu_lower(a, k->key, from), lo2 = 0, hi2 = a->ncorrs;
	while (lo2 < hi2) {
		size_t mid = (lo2 + hi2) / 2;
		if (a->corrs[mid].key < k->key)
			lo2 = mid + 1;
		else
			hi2 = mid;
	}
	size_t end = lo, end2 = lo2;
	while (end < a->nhcalls && hcall_corr(a, &a->hcalls[end]) == k->key)
		end++;
	while (end2 < a->ncorrs && a->corrs[end2].key == k->key)
		end2++;
	bool before = false, found = false;
	for (size_t i = lo; i < end && !before; i++)
		before = (a->hcalls[i].corr & AN_HCORR_LAT) && a->hcalls[i].c.seq < k->seq;
	for (size_t i = lo2; i < end2 && !before; i++)
		before = a->corrs[i].what == AN_CORR_LAUNCH && a->corrs[i].seq < k->seq;
	for (size_t i = lo; i < end; i++)
		if (a->hcalls[i].corr & AN_HCORR_LAT)
			consider(a, k, before, a->hcalls[i].c.seq, an_row_rank(a, a->hcalls[i].c.row),
			         a->hcalls[i].c.ts, lat, &found);
	for (size_t i = lo2; i < end2; i++)
		if (a->corrs[i].what == AN_CORR_LAUNCH)
			consider(a, k, before, a->corrs[i].seq, pid_rank(a, a->corrs[i].pid), a->corrs[i].ts,
			         lat, &found);
	return found;
}

/* Each kernel's launch latency, with hcalls sorted by correlation, and
 * their percentiles per rank. */
static int launch_latency(struct an_trace *a)
{
	sort_corrs(a->corrs, a->ncorrs);
	size_t from = SIZE_MAX;
	for (size_t i = 0; i < a->nhgpus + a->ncorrs; i++) {
		struct an_corr k;
		if (i < a->nhgpus) {
			const struct an_hrec *g = &a->hgpus[i];
			if (!(g->corr & AN_HCORR_LAT))
				continue;
			k = (struct an_corr){hcorr(a, g->corr, g->seq), g->ts, an_hrec_pid(a, g), g->seq,
			                     AN_CORR_KERNEL};
		} else {
			k = a->corrs[i - a->nhgpus];
			if (k.what != AN_CORR_KERNEL)
				continue;
		}
		int64_t lat = 0;
		if (kernel_latency(a, &k, &lat, &from) && an_lat_add(a, pid_rank(a, k.pid), lat))
			return -ENOMEM;
	}
	free(a->corrs);
	a->corrs = NULL;
	a->ncorrs = a->capcorrs = 0;
	return an_latency_compute(a);
}

static bool hrec_time_less(const struct an_hrec *x, const struct an_hrec *y)
{
	uint32_t px = an_hrec_pid(cmp_trace, x), py = an_hrec_pid(cmp_trace, y);
	if (px != py) {
		int64_t rx = pid_rank(cmp_trace, px), ry = pid_rank(cmp_trace, py);
		if (rx != ry)
			return (uint64_t)rx < (uint64_t)ry; /* -1 (no rank) last */
		return px < py;
	}
	return x->ts != y->ts ? x->ts < y->ts : x->seq < y->seq;
}

AN_SORT_DEFINE(sort_hrecs_time, struct an_hrec, hrec_time_less)

/* ---- steps -------------------------------------------------------------------- */

struct rank_steps {
	int64_t rank;
	size_t first, n;    /* in steps[] */
	int64_t last_start; /* of its ProfilerStep ranges (HTA's filter) */
	bool any;
};

/* Per names-table entry: the step number of a step name (N of
 * ProfilerStep#N, HTA's r"ProfilerStep\s*#\s*(\d+)"; 0 for --step-name),
 * -1 for other names; and whether HTA counts it as a ProfilerStep (its
 * name contains "ProfilerStep"). */
static int step_names(const struct an_trace *a, int64_t **num, bool **prof)
{
	regex_t re;
	size_t n = a->names.n ? a->names.n : 1;
	*num = malloc(n * sizeof(**num));
	*prof = calloc(n, sizeof(**prof));
	if (!*num || !*prof || regcomp(&re, "^ProfilerStep[[:space:]]*#[[:space:]]*([0-9]+)", REG_EXTENDED))
		return -ENOMEM;
	for (size_t i = 0; i < a->names.n; i++) {
		const char *name = an_name(a, (uint32_t)i);
		regmatch_t m[2];
		(*prof)[i] = strstr(name, "ProfilerStep") != NULL;
		if (a->step_name)
			(*num)[i] = strcmp(name, a->step_name) ? -1 : 0;
		else
			(*num)[i] = regexec(&re, name, 2, m, 0) ? -1 : strtoll(name + m[1].rm_so, NULL, 10);
	}
	regfree(&re);
	return 0;
}

static int cmp_step(const void *pa, const void *pb)
{
	const struct an_step *x = pa, *y = pb;
	if (x->rank != y->rank)
		return (uint64_t)x->rank < (uint64_t)y->rank ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static bool i64_less(const int64_t *x, const int64_t *y)
{
	return *x < *y;
}
AN_SORT_DEFINE(sort_i64s, int64_t, i64_less)

/* Median of n sorted values (the mean of the middle two for even n). */
static int64_t median_of(const int64_t *v, size_t n)
{
	return n % 2 ? v[n / 2] : v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2;
}

/* Marks the steps[first, first + n) (one per step) longer than median +
 * 3 MAD and 10% over the median. */
static int mark_outliers(struct an_step *steps, size_t n)
{
	if (n < 3)
		return 0;
	int64_t *v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = steps[i].dur;
	sort_i64s(v, n);
	int64_t med = median_of(v, n);
	for (size_t i = 0; i < n; i++)
		v[i] = steps[i].dur > med ? an_span(med, steps[i].dur) : an_span(steps[i].dur, med);
	sort_i64s(v, n);
	int64_t mad = median_of(v, n);
	for (size_t i = 0; i < n; i++)
		steps[i].outlier = (double)steps[i].dur > (double)med + 3.0 * (double)mad &&
		                   (double)steps[i].dur > 1.1 * (double)med;
	free(v);
	return 0;
}

/* The steps of every rank, from the complete events (no GPU rows). */
static int find_steps(struct an_trace *a, const int64_t *num, struct an_step **out, size_t *nout)
{
	size_t cap = 0;
	*out = NULL;
	*nout = 0;
	struct an_xall it;
	struct an_xrec ev, *x = &ev;
	for (an_xall(a, &it); an_xall_next(&it, x);) {
		const struct an_name *sn = an_table_item(&a->names, x->name);
		const char *cat = a->xcats.keys[sn->cat];
		if (num[x->name] < 0 || !strcmp(cat, "gpu_user_annotation") || !strcmp(cat, "kernel"))
			continue;
		const struct an_row *r = an_table_item(&a->rows, x->row);
		if (AN_PUSH(*out, *nout, cap,
		            (struct an_step){.rank = pid_rank(a, r->pid),
		                             .name = x->name,
		                             .pid = UINT32_MAX,
		                             .number = num[x->name],
		                             .ts = x->ts,
		                             .dur = x->dur}))
			return -ENOMEM;
	}
	an_sort(*out, *nout, sizeof(**out), cmp_step);
	for (size_t i = 0, j; i < *nout; i = j) {
		for (j = i; j < *nout && (*out)[j].rank == (*out)[i].rank; j++)
			if (a->step_name)
				(*out)[j].number = (int64_t)(j - i);
		int rc = mark_outliers(*out + i, j - i);
		if (rc)
			return rc;
	}
	return 0;
}

/* Each rank's last ProfilerStep start, and whether the trace has two or more
 * ProfilerStep names (HTA filters GPU events only then). */
static int profiler_step_ends(struct an_trace *a, const bool *prof, struct rank_steps **out, size_t *nout,
                              bool *filter)
{
	size_t cap = 0, names = 0;
	*out = NULL;
	*nout = 0;
	const char *first = NULL; /* one name in several categories counts once */
	for (size_t i = 0; i < a->names.n && names < 2; i++) {
		if (!prof[i])
			continue;
		if (!first)
			names = 1, first = an_name(a, (uint32_t)i);
		else if (strcmp(first, an_name(a, (uint32_t)i)))
			names = 2;
	}
	*filter = names >= 2;
	struct an_xall it;
	struct an_xrec ev, *x = &ev;
	for (an_xall(a, &it); an_xall_next(&it, x);) {
		if (!prof[x->name])
			continue;
		int64_t rank = pid_rank(a, ((const struct an_row *)an_table_item(&a->rows, x->row))->pid);
		struct rank_steps *rs = NULL;
		for (size_t k = 0; k < *nout && !rs; k++)
			if ((*out)[k].rank == rank)
				rs = &(*out)[k];
		if (!rs) {
			if (AN_PUSH(*out, *nout, cap,
			            (struct rank_steps){.rank = rank, .last_start = INT64_MIN}))
				return -ENOMEM;
			rs = &(*out)[*nout - 1];
		}
		if (x->ts > rs->last_start)
			rs->last_start = x->ts;
	}
	return 0;
}

/* ---- one device --------------------------------------------------------------- */

struct dev_work {
	struct an_hrec *r; /* the device's kept events, in start order */
	size_t n;
	struct ivals all, type[3];        /* unions: every event; COMPUTATION, COMMUNICATION, MEMORY */
	struct ivals comm_only, mem_only; /* COMMUNICATION less COMPUTATION; MEMORY less both */
	bool keep_all; /* set before dev_unions: else all is left empty, and of the union of every
	                * event only its first start, last end and length are kept */
	int64_t all_first, all_last, all_total;
};

static void dev_work_free(struct dev_work *w)
{
	free(w->all.v);
	for (int i = 0; i < 3; i++)
		free(w->type[i].v);
	free(w->comm_only.v);
	free(w->mem_only.v);
}

/* A less b (both disjoint, in order). */
static int ivals_minus(const struct ivals *x, const struct ivals *y, struct ivals *out)
{
	*out = (struct ivals){0};
	size_t j = 0;
	for (size_t i = 0; i < x->n; i++) {
		int64_t s = x->v[i].s, e = x->v[i].e;
		while (j < y->n && y->v[j].e <= s)
			j++;
		for (size_t k = j; k < y->n && y->v[k].s < e && s < e; k++) {
			if (y->v[k].s > s && AN_PUSH(out->v, out->n, out->cap, (struct ival){s, y->v[k].s}))
				return -ENOMEM;
			if (y->v[k].e > s)
				s = y->v[k].e;
		}
		if (s < e && AN_PUSH(out->v, out->n, out->cap, (struct ival){s, e}))
			return -ENOMEM;
	}
	return 0;
}

static int dev_unions(const struct an_trace *a, struct dev_work *w)
{
	struct ival cur = {0, 0}; /* without keep_all: the union's open span, once there is one */
	for (size_t i = 0; i < w->n; i++) {
		const struct an_hrec *r = &w->r[i];
		int64_t e = an_sat_add(r->ts, an_hrec_dur(a, r));
		unsigned type = an_hrec_type(a, r);
		if (w->keep_all) {
			if (ivals_add(&w->all, r->ts, e))
				return -ENOMEM;
		} else if (i && r->ts <= cur.e) { /* as ivals_add would merge it */
			cur.e = e > cur.e ? e : cur.e;
		} else { /* a new span: the one before is done, added up as ivals_total would */
			if (i)
				w->all_total = an_sat_add(w->all_total, an_span(cur.s, cur.e));
			else
				w->all_first = r->ts;
			cur = (struct ival){r->ts, e};
		}
		if (type < 3 && ivals_add(&w->type[type], r->ts, e))
			return -ENOMEM;
	}
	if (!w->keep_all && w->n) {
		w->all_total = an_sat_add(w->all_total, an_span(cur.s, cur.e));
		w->all_last = cur.e;
	}
	struct ivals both = {0};
	int rc = ivals_minus(&w->type[AN_COMMUNICATION], &w->type[AN_COMPUTATION], &w->comm_only);
	if (!rc)
		rc = ivals_combine(&w->type[AN_COMPUTATION], &w->type[AN_COMMUNICATION], true, &both);
	if (!rc)
		rc = ivals_minus(&w->type[AN_MEMORY], &both, &w->mem_only);
	free(both.v);
	return rc;
}

/* The time of edge i (2k: a start, 2k + 1: an end) of a type's union. */
static int64_t union_edge(const struct ivals *u, size_t i)
{
	return i & 1 ? u->v[i / 2].e : u->v[i / 2].s;
}

/* _get_gpu_kernel_type_time: the time each set of types ran together.
 * Each type's union gives its starts and ends in time order, so the three
 * are merged as they are walked; where edges meet at one time, their order
 * cannot show (the time between them is 0). */
static int type_times(struct an_trace *a, const struct dev_work *w, struct an_breakdown *b, size_t *cap)
{
	int64_t t[8] = {0}, total = 0;
	size_t at[3] = {0}, end[3];
	for (int k = 0; k < 3; k++)
		end[k] = 2 * w->type[k].n;
	int mask = 0;
	bool have = false;
	int64_t prev = 0;
	for (;;) {
		int next = -1;
		for (int k = 0; k < 3; k++)
			if (at[k] < end[k] && (next < 0 || union_edge(&w->type[k], at[k]) <
			                                       union_edge(&w->type[next], at[next])))
				next = k;
		if (next < 0)
			break;
		int64_t now = union_edge(&w->type[next], at[next]);
		if (have && mask > 0 && mask < 8)
			t[mask] = an_sat_add(t[mask], an_span(prev, now));
		mask += at[next] & 1 ? -(1 << next) : 1 << next;
		at[next]++;
		prev = now;
		have = true;
	}
	for (int m = 1; m < 8; m++)
		total = an_sat_add(total, t[m]);
	for (int m = 1; m < 8; m++)
		if (t[m] && AN_PUSH(a->ktypes, a->nktypes, *cap,
		                    (struct an_ktype_time){b->pid, b->rank, (unsigned)m, t[m],
		                                           total ? 100.0 * (double)t[m] / (double)total : 0}))
			return -ENOMEM;
	return 0;
}

/* Sorts durations by their bytes, lowest first, through tmp (room for n):
 * a byte every value shares takes no pass. Few values, values below 0
 * (which the read never keeps) or no tmp: sorted in place instead. */
static void sort_durs(int64_t *d, size_t n, int64_t *tmp)
{
	if (n < 1024 || !tmp) { /* not worth the counts, or no room */
		sort_i64s(d, n);
		return;
	}
	size_t count[8][256] = {{0}};
	for (size_t i = 0; i < n; i++) {
		if (d[i] < 0) {
			sort_i64s(d, n);
			return;
		}
		for (unsigned k = 0; k < 8; k++)
			count[k][(uint64_t)d[i] >> (8 * k) & 0xff]++;
	}
	int64_t *from = d, *to = tmp;
	for (unsigned k = 0; k < 8; k++) {
		if (count[k][(uint64_t)d[0] >> (8 * k) & 0xff] == n)
			continue;
		size_t at = 0;
		for (unsigned v = 0; v < 256; v++) {
			size_t c = count[k][v];
			count[k][v] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			to[count[k][(uint64_t)from[i] >> (8 * k) & 0xff]++] = from[i];
		int64_t *t = from;
		from = to;
		to = t;
	}
	if (from != d)
		memcpy(d, from, n * sizeof(*d));
}

/* One name's row of get_gpu_kernel_breakdown, from its durations d[0, n)
 * (sorted here: the sums are taken smallest first; through tmp, room for
 * n, or in place when tmp is NULL). */
static int name_row(struct an_trace *a, const struct an_breakdown *b, unsigned type, uint32_t name,
                    int64_t *d, size_t n, int64_t *tmp, size_t *cap)
{
	sort_durs(d, n, tmp);
	struct an_kname k = {b->pid, b->rank, type, name, n, 0, d[0], d[n - 1], 0, 0};
	for (size_t i = 0; i < n; i++)
		k.sum = an_sat_add(k.sum, d[i]);
	k.mean = (double)k.sum / (double)k.count;
	double ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += ((double)d[i] - k.mean) * ((double)d[i] - k.mean);
	k.std = k.count > 1 ? sqrt(ss / (double)(k.count - 1)) : 0;
	return AN_PUSH(a->knames, a->nknames, *cap, k);
}

/* get_gpu_kernel_breakdown's per-name rows (before its "others" grouping),
 * in (type, name) order. A name has one type, so the device's durations
 * are gathered by name (a count per name, then each name's place): the
 * events themselves stay in start order, for per_stream and for the
 * analyses beside these. */
static int name_stats(struct an_trace *a, const struct dev_work *w, const struct an_breakdown *b, size_t *cap)
{
	size_t nn = a->names.n ? a->names.n : 1;
	size_t *count = calloc(nn, sizeof(*count)), *end = malloc(nn * sizeof(*end));
	uint8_t *type = malloc(nn);
	int64_t *d = malloc((w->n ? w->n : 1) * sizeof(*d));
	int rc = count && end && type && d ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < w->n; i++) {
		count[w->r[i].name]++;
		type[w->r[i].name] = (uint8_t)an_hrec_type(a, &w->r[i]);
	}
	size_t place = 0;
	for (unsigned t = 0; !rc && t < 4; t++)
		for (size_t k = 0; k < nn; k++)
			if (count[k] && type[k] == t) {
				end[k] = place;
				place += count[k];
			}
	for (size_t i = 0; !rc && i < w->n; i++)
		d[end[w->r[i].name]++] = an_hrec_dur(a, &w->r[i]);
	size_t most = 0;
	for (size_t k = 0; !rc && k < nn; k++)
		most = count[k] > most ? count[k] : most;
	int64_t *tmp = rc ? NULL : malloc((most ? most : 1) * sizeof(*tmp)); /* NULL: sorted in place */
	for (unsigned t = 0; !rc && t < 4; t++)
		for (size_t k = 0; !rc && k < nn; k++)
			if (count[k] && type[k] == t)
				rc =
				    name_row(a, b, t, (uint32_t)k, d + end[k] - count[k], count[k], tmp, cap);
	free(count);
	free(end);
	free(type);
	free(d);
	free(tmp);
	return rc;
}

static const struct an_hrec *sort_dev; /* for by_stream_less: the device's events */

/* A device's events by stream, each stream's in start order. */
static bool by_stream_less(const uint32_t *px, const uint32_t *py)
{
	const struct an_hrec *x = &sort_dev[*px], *y = &sort_dev[*py];
	int64_t sx = an_hrec_stream(cmp_trace, x), sy = an_hrec_stream(cmp_trace, y);
	if (sx != sy)
		return sx < sy;
	return x->ts != y->ts ? x->ts < y->ts : x->seq < y->seq;
}

AN_SORT_DEFINE(sort_by_stream, uint32_t, by_stream_less)

struct qev {
	int64_t t;
	int d;
	uint32_t seq;
};

/* Equal (t, seq) is the same launch twice: the same element. */
static bool qev_less(const struct qev *x, const struct qev *y)
{
	return x->t != y->t ? x->t < y->t : x->seq < y->seq;
}
AN_SORT_DEFINE(sort_qevs, struct qev, qev_less)

static double pandas_p50(double *v, size_t n)
{
	double pos = 0.5 * (double)(n - 1);
	size_t lo = (size_t)pos;
	return lo + 1 < n ? v[lo] + (v[lo + 1] - v[lo]) * (pos - (double)lo) : v[lo];
}

static int cmp_double(const void *pa, const void *pb)
{
	double x = *(const double *)pa, y = *(const double *)pb;
	return x < y ? -1 : x > y;
}

/* The k-th smallest (from 0) of whole numbers counted in hist, whose
 * first bucket counts lo. */
static int64_t nth_counted(const uint32_t *hist, int64_t lo, size_t k)
{
	size_t below = 0;
	int64_t v = 0;
	while ((below += hist[v]) <= k)
		v++;
	return lo + v;
}

/* The launches and starts of a stream's GPU events in qev order, one at
 * a time: the starts (its events, r[idx[k]] for k < n, in start order
 * already) and the launches merged as they are walked. The launches come
 * in the same order, which is theirs too on a stream that runs in launch
 * order (l NULL); otherwise in l, sorted. */
struct qwalk {
	const struct an_trace *a;
	const struct an_hrec *r;
	const uint32_t *idx;
	size_t n, i;  /* the next start: event i (one with a queued launch) */
	size_t nl, j; /* launches taken: j of nl */
	const struct qev *l;
	size_t k; /* with l NULL: the next launch is event k's (one with a queued launch) */
	/* what the walk has looked up (a launch is unpacked once): i + 1 once
	 * event i is known to have a queued launch, and k + 1 once event k's
	 * launch is in lk */
	size_t si, sk;
	struct qev lk;
};

/* Whether GPU event r's launch (into *l) is in HTA's runtime set. */
static bool queued(const struct an_trace *a, const struct an_hrec *r, struct an_hcpu *l)
{
	return an_launch(a, r, l) && an_hcpu_queue(a, l);
}

static bool qw_start(struct qwalk *w)
{
	if (w->si == w->i + 1)
		return true;
	for (; w->i < w->n; w->i++)
		if (an_launch_queued(w->a, &w->r[w->idx[w->i]])) {
			w->si = w->i + 1;
			return true;
		}
	return false;
}

static bool qw_launch(struct qwalk *w, struct qev *out)
{
	if (w->j == w->nl)
		return false;
	if (w->l) {
		*out = w->l[w->j];
		return true;
	}
	for (struct an_hcpu l; w->sk != w->k + 1;) {
		if (!queued(w->a, &w->r[w->idx[w->k]], &l)) {
			w->k++;
			continue;
		}
		w->lk = (struct qev){l.ts, 1, l.seq};
		w->sk = w->k + 1;
	}
	*out = w->lk;
	return true;
}

/* The next one's change of the queue's length (+1 a launch, -1 a start),
 * 0 at the end. */
static int qw_next(struct qwalk *w)
{
	bool start = qw_start(w);
	struct qev l;
	bool launch = qw_launch(w, &l);
	if (!start && !launch)
		return 0;
	if (start && launch) {
		const struct an_hrec *r = &w->r[w->idx[w->i]];
		const struct qev s = {r->ts, -1, r->seq};
		start = qev_less(&s, &l);
	}
	if (start) {
		w->i++;
		return -1;
	}
	w->j++;
	w->k++;
	return 1;
}

/* One stream's queue length summary: +1 at each launch (in HTA's runtime
 * set) of its events (r[idx[k]] for k < n), -1 at each event's start. */
static int queue_of(struct an_trace *a, const struct an_hrec *r, const uint32_t *idx, size_t n,
                    const struct an_breakdown *b, size_t *cap)
{
	/* The launches are put in order apart only when they are not in it. */
	struct qev *q = NULL, prev = {0};
	int rc = 0;
	size_t nl = 0;
	bool sorted = true;
	for (size_t i = 0; i < n; i++) {
		struct an_hcpu l;
		if (!queued(a, &r[idx[i]], &l))
			continue;
		struct qev v = {l.ts, 1, l.seq};
		sorted = sorted && (!nl || !qev_less(&v, &prev));
		prev = v;
		nl++;
	}
	if (!sorted && !(q = malloc(nl * sizeof(*q))))
		rc = -ENOMEM;
	if (q) {
		nl = 0;
		for (size_t i = 0; i < n; i++) {
			struct an_hcpu l;
			if (queued(a, &r[idx[i]], &l))
				q[nl++] = (struct qev){l.ts, 1, l.seq};
		}
		sort_qevs(q, nl);
	}
	size_t nq = 2 * nl;
	if (!rc && nq) {
		struct an_queue s = {b->pid, b->rank, an_hrec_stream(a, &r[idx[0]]), nq, 0, 0, INT64_MIN};
		int64_t len = 0, least = INT64_MAX;
		double sum = 0;
		struct qwalk w = {.a = a, .r = r, .idx = idx, .n = n, .nl = nl, .l = q};
		for (int d; (d = qw_next(&w));) {
			len += d;
			sum += (double)len;
			s.max = len > s.max ? len : s.max;
			least = len < least ? len : least;
		}
		s.mean = sum / (double)nq;
		/* The median as pandas interpolates it, from a count of each
		 * length (they lie within nq of each other), not a sort. */
		uint32_t *hist = calloc((size_t)(s.max - least) + 1, sizeof(*hist));
		rc = hist ? 0 : -ENOMEM;
		len = 0;
		w = (struct qwalk){.a = a, .r = r, .idx = idx, .n = n, .nl = nl, .l = q};
		for (int d; !rc && (d = qw_next(&w));) {
			len += d;
			hist[len - least]++;
		}
		if (!rc) {
			double pos = 0.5 * (double)(nq - 1);
			size_t k = (size_t)pos;
			double lo = (double)nth_counted(hist, least, k);
			double hi = k + 1 < nq ? (double)nth_counted(hist, least, k + 1) : lo;
			s.p50 = lo + (hi - lo) * (pos - (double)k);
			rc = AN_PUSH(a->queues, a->nqueues, *cap, s);
		}
		free(hist);
	}
	free(q);
	return rc;
}

/* The index of stream st in v[0, n), sorted and holding it. */
static size_t stream_slot(const int64_t *v, size_t n, int64_t st)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (v[mid] < st)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The device's events grouped by stream in stream order, each stream's in
 * start order (the device's order): *out, indexes in w->r. Streams are
 * few, so each event's place comes from a count per stream; past
 * STREAMS_COUNTED distinct streams, the indexes are sorted instead. */
#define STREAMS_COUNTED 1024
static int by_stream(const struct an_trace *a, const struct dev_work *w, uint32_t **out)
{
	uint32_t *p = *out = malloc((w->n ? w->n : 1) * sizeof(*p));
	int64_t v[STREAMS_COUNTED];
	size_t at[STREAMS_COUNTED + 1] = {0}, n = 0, k = 0;
	bool counted = true;
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; i < w->n && counted; i++) {
		int64_t st = an_hrec_stream(a, &w->r[i]);
		if (n && v[k] == st)
			continue;
		k = stream_slot(v, n, st);
		if (k < n && v[k] == st)
			continue;
		counted = n < STREAMS_COUNTED;
		if (counted) {
			memmove(v + k + 1, v + k, (n - k) * sizeof(*v));
			v[k] = st;
			n++;
		}
	}
	if (!counted) {
		for (size_t i = 0; i < w->n; i++)
			p[i] = (uint32_t)i;
		sort_dev = w->r;
		sort_by_stream(p, w->n);
		return 0;
	}
	/* at[k + 1]: stream k's count; then at[k]: where its next event goes */
	k = 0;
	for (size_t i = 0; i < w->n; i++) {
		int64_t st = an_hrec_stream(a, &w->r[i]);
		if (v[k] != st)
			k = stream_slot(v, n, st);
		at[k + 1]++;
	}
	for (size_t s = 0; s < n; s++)
		at[s + 1] += at[s];
	k = 0;
	for (size_t i = 0; i < w->n; i++) {
		int64_t st = an_hrec_stream(a, &w->r[i]);
		if (v[k] != st)
			k = stream_slot(v, n, st);
		p[at[k]++] = (uint32_t)i;
	}
	return 0;
}

/* get_idle_time_breakdown and the queue length, per stream. */
static int per_stream(struct an_trace *a, const struct dev_work *w, const struct an_breakdown *b,
                      size_t *icap, size_t *qcap)
{
	uint32_t *idx = NULL;
	size_t all = w->n;
	int rc = by_stream(a, w, &idx);
	for (size_t i = 0, j; i < all && !rc; i = j) {
		int64_t stream = an_hrec_stream(a, &w->r[idx[i]]);
		for (j = i; j < all && an_hrec_stream(a, &w->r[idx[j]]) == stream; j++)
			;
		rc = queue_of(a, w->r, idx + i, j - i, b, qcap);
		struct an_idle s = {b->pid, b->rank, stream, 0, 0, 0};
		bool any = false, have_prev = false;
		int64_t prev_end = 0;
		for (size_t k = i; k < j && !rc; k++) {
			const struct an_hrec *r = &w->r[idx[k]];
			if (!an_hrec_work(a, r))
				continue;
			any = true;
			if (have_prev) {
				struct an_hcpu l;
				int64_t gap = an_span(prev_end, r->ts);
				if (an_launch(a, r, &l) && l.ts > prev_end)
					s.host_wait = an_sat_add(s.host_wait, gap);
				else if (gap < AN_KERNEL_WAIT_NS)
					s.kernel_wait = an_sat_add(s.kernel_wait, gap);
				else
					s.other = an_sat_add(s.other, gap);
			}
			prev_end = an_sat_add(r->ts, an_hrec_dur(a, r));
			have_prev = true;
		}
		if (any && !rc)
			rc = AN_PUSH(a->idle, a->nidle, *icap, s);
	}
	free(idx);
	return rc;
}

/* get_cuda_kernel_launch_stats, summarised. */
static int launch_stats(struct an_trace *a, const struct dev_work *w, struct an_breakdown *b)
{
	int64_t *d = malloc((w->n ? w->n : 1) * sizeof(*d));
	if (!d)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < w->n; i++) {
		struct an_hcpu l;
		if (!an_launch(a, &w->r[i], &l) || !an_hcpu_launch(a, &l))
			continue;
		int64_t ldur = an_hcpu_dur(a, &l);
		int64_t delay = an_span(an_sat_add(l.ts, ldur), w->r[i].ts);
		d[n++] = delay > 0 ? delay : 0;
		b->short_kernels += an_hrec_dur(a, &w->r[i]) < ldur;
		b->runtime_outliers += ldur > AN_RUNTIME_CUTOFF_NS;
		b->delay_outliers += d[n - 1] > AN_LAUNCH_CUTOFF_NS;
		b->cpu_total = an_sat_add(b->cpu_total, ldur);
		b->gpu_total = an_sat_add(b->gpu_total, an_hrec_dur(a, &w->r[i]));
	}
	b->launches = n;
	if (n) {
		size_t p99 = an_rank_index(n, 99), p50 = an_rank_index(n, 50);
		for (size_t i = 0; i < n; i++)
			b->delay_max = d[i] > b->delay_max ? d[i] : b->delay_max;
		sort_i64s_nth(d, n, p99);
		b->delay_p99 = d[p99];
		sort_i64s_nth(d, p99 + 1, p50);
		b->delay_p50 = d[p50];
	}
	free(d);
	return 0;
}

/* The steps of rank on this device: its work clipped to each step. */
static int device_steps(struct an_trace *a, const struct an_step *steps, size_t nsteps,
                        const struct dev_work *w, const struct an_breakdown *b, size_t *cap)
{
	for (size_t i = 0; i < nsteps; i++) {
		if (steps[i].rank != b->rank)
			continue;
		struct an_step s = steps[i];
		int64_t e = an_sat_add(s.ts, s.dur);
		s.pid = b->pid;
		s.busy = ivals_within(&w->all, s.ts, e);
		s.compute = ivals_within(&w->type[AN_COMPUTATION], s.ts, e);
		s.comm = ivals_within(&w->comm_only, s.ts, e);
		s.memory = ivals_within(&w->mem_only, s.ts, e);
		s.idle = s.dur - s.busy;
		if (AN_PUSH(a->steps, a->nsteps, *cap, s))
			return -ENOMEM;
	}
	return 0;
}

struct bw_edge {
	int64_t t;
	double bw;
	uint32_t seq; /* file order, an end before a later copy's start: back to back copies never sum */
	const char *kind;
};

static int cmp_bw_edge(const void *pa, const void *pb)
{
	const struct bw_edge *x = pa, *y = pb;
	int c = strcmp(x->kind, y->kind);
	if (c)
		return c;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* HTA's get_memory_kernel_type: the name's first 11 characters ("Memcpy
 * HtoD"), "Memset", or "Memcpy Unknown". */
static void copy_kind(const char *name, char out[16])
{
	if (!strncmp(name, "Memset", 6))
		snprintf(out, 16, "Memset");
	else if (strncmp(name, "Memcpy", 6))
		snprintf(out, 16, "Memcpy Unknown");
	else
		snprintf(out, 16, "%.11s", name);
}

/* The bandwidth of MEMORY event r (0 without). */
static double bw_of(const struct an_trace *a, const struct an_hrec *r)
{
	size_t lo = 0, hi = a->nbws;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (a->bws[mid].seq < r->seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < a->nbws && a->bws[lo].seq == r->seq ? a->bws[lo].bw : 0;
}

/* get_memory_bw_summary: per copy kind, +bandwidth at each start and -
 * at each end (a 0 ns copy lasts 1 µs, as in HTA), in time order; the
 * running sums above 0. */
static int memory_bw(struct an_trace *a, const struct dev_work *w, const struct an_breakdown *b, size_t *cap)
{
	size_t n = 0, copies = 0;
	for (size_t i = 0; i < w->n; i++)
		copies += an_hrec_type(a, &w->r[i]) == AN_MEMORY;
	if (!copies)
		return 0;
	struct bw_edge *e = malloc(2 * copies * sizeof(*e));
	char(*kinds)[16] = malloc(copies * sizeof(*kinds));
	double *v = malloc(2 * copies * sizeof(*v));
	int rc = e && kinds && v ? 0 : -ENOMEM;
	for (size_t i = 0; !rc && i < w->n; i++) {
		const struct an_hrec *r = &w->r[i];
		if (an_hrec_type(a, r) != AN_MEMORY)
			continue;
		char *kind = kinds[n / 2];
		copy_kind(an_name(a, r->name), kind);
		int64_t dur = an_hrec_dur(a, r);
		dur = dur ? dur : 1000;
		double bw = bw_of(a, r);
		e[n++] = (struct bw_edge){r->ts, bw, 2 * r->seq + 1, kind};
		e[n++] = (struct bw_edge){an_sat_add(r->ts, dur), -bw, 2 * r->seq, kind};
	}
	an_sort(e, n, sizeof(*e), cmp_bw_edge);
	for (size_t i = 0, j; !rc && i < n; i = j) {
		size_t m = 0;
		double level = 0;
		for (j = i; j < n && !strcmp(e[j].kind, e[i].kind); j++) {
			level += e[j].bw;
			if (level > 0)
				v[m++] = level;
		}
		if (!m)
			continue;
		struct an_membw s = {b->pid, b->rank, "", m, 0, v[0], v[0], 0};
		snprintf(s.kind, sizeof(s.kind), "%s", e[i].kind);
		double sum = 0;
		for (size_t k = 0; k < m; k++) {
			sum += v[k];
			s.min = v[k] < s.min ? v[k] : s.min;
			s.max = v[k] > s.max ? v[k] : s.max;
		}
		s.mean = sum / (double)m;
		an_sort(v, m, sizeof(*v), cmp_double);
		s.p50 = pandas_p50(v, m);
		rc = AN_PUSH(a->membw, a->nmembw, *cap, s);
	}
	free(e);
	free(kinds);
	free(v);
	return rc;
}

static int one_device(struct an_trace *a, struct dev_work *w, size_t caps[6])
{
	uint32_t pid = an_hrec_pid(a, &w->r[0]);
	struct an_breakdown b = {.pid = pid, .rank = pid_rank(a, pid), .events = w->n};
	int rc = dev_unions(a, w);
	if (rc)
		return rc;
	b.kernel_time = an_span(w->all_first, w->all_last);
	b.idle = b.kernel_time - w->all_total;
	b.compute = ivals_total(&w->type[AN_COMPUTATION]);
	b.non_compute = b.kernel_time - b.compute - b.idle;
	b.comm = ivals_total(&w->comm_only);
	b.memory = ivals_total(&w->mem_only);
	b.other = b.non_compute - b.comm - b.memory;
	b.comm_union = ivals_total(&w->type[AN_COMMUNICATION]);
	b.both = b.comm_union - b.comm;
	rc = launch_stats(a, w, &b);
	if (!rc)
		rc = type_times(a, w, &b, &caps[1]);
	if (!rc)
		rc = name_stats(a, w, &b, &caps[2]);
	if (!rc)
		rc = per_stream(a, w, &b, &caps[3], &caps[4]);
	if (!rc)
		rc = memory_bw(a, w, &b, &caps[5]);
	if (!rc)
		rc = AN_PUSH(a->breakdown, a->nbreakdown, caps[0], b);
	return rc;
}

/* Calls fn on each device's events (hrecs sorted by rank, pid, time). */
static int each_device(struct an_trace *a, int (*fn)(struct an_trace *a, struct dev_work *w, void *arg),
                       void *arg)
{
	int rc = 0;
	for (size_t i = 0, j; !rc && i < a->nhrecs; i = j) {
		for (j = i; j < a->nhrecs && an_hrec_pid(a, &a->hrecs[j]) == an_hrec_pid(a, &a->hrecs[i]);
		     j++)
			;
		struct dev_work w = {.r = a->hrecs + i, .n = j - i};
		rc = fn(a, &w, arg);
		dev_work_free(&w);
	}
	return rc;
}

struct steps_arg {
	const struct an_step *steps;
	size_t nsteps, cap;
};

static int steps_of_device(struct an_trace *a, struct dev_work *w, void *arg)
{
	struct steps_arg *sa = arg;
	w->keep_all = true; /* each step's busy time is its share of the union */
	int rc = dev_unions(a, w);
	uint32_t pid = an_hrec_pid(a, &w->r[0]);
	const struct an_breakdown b = {.pid = pid, .rank = pid_rank(a, pid)};
	return rc ? rc : device_steps(a, sa->steps, sa->nsteps, w, &b, &sa->cap);
}

static int hta_of_device(struct an_trace *a, struct dev_work *w, void *arg)
{
	return one_device(a, w, arg);
}

static int cmp_kname(const void *pa, const void *pb)
{
	const struct an_kname *x = pa, *y = pb;
	if (x->rank != y->rank)
		return (uint64_t)x->rank < (uint64_t)y->rank ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->type != y->type)
		return x->type < y->type ? -1 : 1;
	if (x->sum != y->sum)
		return x->sum > y->sum ? -1 : 1;
	return strcmp(an_name(cmp_trace, x->name), an_name(cmp_trace, y->name));
}

/* HTA's per-event records (and the queue lengths made from them). */
void an_hta_records_free(struct an_trace *a)
{
	free(a->hrecs);
	free(a->hcalls);
	an_pack_free(&a->hcpus);
	free(a->hgpus);
	free(a->bws);
	free(a->hwide);
	free(a->lanes.v);
	free(a->lanes.slots);
	a->lanes = (struct an_lanes){0};
	free(a->queue);
	a->hrecs = NULL;
	a->hcalls = NULL;
	a->hgpus = NULL;
	a->bws = NULL;
	a->hwide = NULL;
	a->queue = NULL;
	a->nhrecs = a->nhgpus = a->caphgpus = a->nhcalls = a->caphcalls = 0;
	a->nhwide = a->caphwide = 0;
}

/* The correlations are done with: hgpus become hrecs, and the hcalls
 * that GPU events were matched to become hcpus, packed (the rest are
 * never asked for again). */
static int keep_records(struct an_trace *a)
{
	/* Each hcall's index among those kept + 1 (0: none refers to it), in
	 * its correlation, which is done with. */
	for (size_t i = 0; i < a->nhcalls; i++)
		a->hcalls[i].corr = 0;
	for (size_t i = 0; i < a->nhgpus; i++)
		if (a->hgpus[i].launch)
			a->hcalls[a->hgpus[i].launch - 1].corr = 1;
	uint32_t kept = 0;
	for (size_t i = 0; i < a->nhcalls; i++)
		if (a->hcalls[i].corr)
			a->hcalls[i].corr = ++kept;
	for (size_t i = 0; i < a->nhgpus; i++)
		if (a->hgpus[i].launch)
			a->hgpus[i].launch = a->hcalls[a->hgpus[i].launch - 1].corr;
	a->hrecs = a->nhgpus ? realloc(a->hgpus, a->nhgpus * sizeof(*a->hrecs)) : NULL;
	if (!a->hrecs)
		a->hrecs = a->hgpus;
	a->nhrecs = a->nhgpus;
	a->hgpus = NULL;
	a->nhgpus = a->caphgpus = 0;
	an_pack_init(&a->hcpus, AN_HC_FIELDS);
	int rc = 0;
	for (size_t i = 0; i < a->nhcalls && !rc; i++) {
		const struct an_hcpu c = a->hcalls[i].c;
		if (a->hcalls[i].corr)
			rc = an_pack_push(&a->hcpus,
			                  (const uint64_t[AN_HC_FIELDS]){[AN_HC_TS] = an_pack_s64(c.ts),
			                                                 [AN_HC_DUR] = c.dur,
			                                                 [AN_HC_ROW] = c.row,
			                                                 [AN_HC_NAME] = c.name,
			                                                 [AN_HC_SEQ] = c.seq});
	}
	if (!rc)
		rc = an_pack_end(&a->hcpus);
	free(a->hcalls);
	a->hcalls = NULL;
	a->nhcalls = a->caphcalls = 0;
	return rc;
}

int an_hta_launches(struct an_trace *a)
{
	cmp_trace = a;
	sort_hcalls(a->hcalls, a->nhcalls);
	int rc = launch_latency(a);
	/* Each GPU event's launch, looked up once: the analyses that follow
	 * ask for it several times each. */
	size_t from = SIZE_MAX;
	for (size_t i = 0; i < a->nhgpus; i++) {
		struct an_hrec *g = &a->hgpus[i];
		size_t l = launch_of(a, hcorr(a, g->corr, g->seq), pid_rank(a, an_hrec_pid(a, g)), &from);
		g->launch = l != SIZE_MAX ? (uint32_t)l + 1 : 0;
	}
	if (!rc)
		rc = keep_records(a);
	sort_hrecs_time(a->hrecs, a->nhrecs);
	/* The critical paths' queue lengths need nothing else: here they are
	 * worked out beside self time, when there are steps to need them. */
	int64_t *num = NULL;
	bool *prof = NULL, steps = false;
	if (!rc)
		rc = step_names(a, &num, &prof);
	for (size_t i = 0; !rc && i < a->names.n && !steps; i++)
		steps = num[i] >= 0;
	free(num);
	free(prof);
	if (!rc && steps)
		rc = an_queue_lengths(a);
	return rc;
}

int an_hta_paths(struct an_trace *a)
{
	cmp_trace = a;
	struct rank_steps *ends = NULL;
	size_t nends = 0;
	bool *prof = NULL;
	int64_t *num = NULL;
	int rc = step_names(a, &num, &prof);
	if (!rc)
		rc = find_steps(a, num, &a->found_steps, &a->nfound_steps);
	if (!rc)
		rc = profiler_step_ends(a, prof, &ends, &nends, &a->step_filter);
	free(num);
	free(prof);
	/* Steps see all GPU work; then HTA's step filter (its default,
	 * include_last_profiler_step=False): keep GPU events launched (same
	 * correlation, same rank) before the start of the rank's last
	 * ProfilerStep. */
	struct steps_arg sa = {a->found_steps, a->nfound_steps, 0};
	if (!rc)
		rc = each_device(a, steps_of_device, &sa);
	a->capsteps = sa.cap;
	if (!rc)
		rc = an_critpath_compute(a, a->found_steps, a->nfound_steps);
	size_t kept = 0;
	for (size_t i = 0; !rc && i < a->nhrecs; i++) {
		const struct an_hrec *r = &a->hrecs[i];
		if (a->step_filter) {
			int64_t rank = pid_rank(a, an_hrec_pid(a, r)), last = INT64_MIN;
			for (size_t k = 0; k < nends; k++)
				if (ends[k].rank == rank)
					last = ends[k].last_start;
			struct an_hcpu l;
			if (!an_launch(a, r, &l) || l.ts >= last)
				continue;
		}
		a->hrecs[kept++] = *r;
	}
	if (!rc)
		a->nhrecs = kept;
	free(ends);
	return rc;
}

int an_hta_devices(struct an_trace *a)
{
	cmp_trace = a;
	size_t caps[6] = {0};
	int rc = each_device(a, hta_of_device, caps);
	for (size_t i = 0; !rc && a->step_filter && i < a->nbreakdown; i++)
		a->breakdown[i].filtered = true;
	/* Steps of ranks without GPU work: one row each, without GPU columns. */
	for (size_t i = 0; !rc && i < a->nfound_steps; i++) {
		bool dev = false;
		for (size_t k = 0; k < a->nbreakdown && !dev; k++)
			dev = a->breakdown[k].rank == a->found_steps[i].rank;
		if (!dev)
			rc = AN_PUSH(a->steps, a->nsteps, a->capsteps, a->found_steps[i]);
	}
	an_sort(a->steps, a->nsteps, sizeof(*a->steps), cmp_step);
	an_sort(a->knames, a->nknames, sizeof(*a->knames), cmp_kname);
	free(a->found_steps);
	a->found_steps = NULL;
	a->nfound_steps = 0;
	return rc;
}

void an_hta_free(struct an_trace *a)
{
	an_hta_records_free(a);
	free(a->found_steps);
	free(a->steps);
	free(a->breakdown);
	free(a->ktypes);
	free(a->knames);
	free(a->idle);
	free(a->queues);
	free(a->membw);
	an_kseq_free(a);
	free(a->cpaths);
}

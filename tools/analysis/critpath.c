/* HTA's critical_path_analysis, one step at a time: see docs/analysis.md.
 *
 * Each step gets its own graph, freed before the next: a start and an end
 * node for every CPU op and runtime call that starts in the step, and for
 * every GPU event launched from one of them; edges as HTA's CPGraph draws
 * them (the CPU call stack in order, each GPU event's span, launch delays,
 * gaps between a stream's events, syncs); then the longest path. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "analysis/sort.h"

enum { K_PLAIN, K_CPU, K_GPU };                          /* event kinds: K_PLAIN is on no path */
enum { E_OP, E_DEPENDENCY, E_LAUNCH, E_KERNEL, E_SYNC }; /* HTA's CPEdgeType */
enum { S_NONE, S_STREAM, S_CONTEXT, S_OTHER };           /* cuda_sync events */

/* The graph is the largest working memory of the analyses (a step of a
 * large trace has millions of nodes), so what can be looked up is not
 * kept: an edge's weight comes from its nodes' times, a GPU event's
 * stream, file order and queue lengths from its hrecs index. An event's
 * nodes and the event it refers to are indexes below 2^28 (a step has
 * fewer events than that), so they share two words with its kind and
 * flags: 32 bytes an event. The edges, 12 bytes as added, are made into
 * each node's list of edges out in place (out_lists), 8 bytes an edge:
 * an edge's start is its list's node. */
struct cp_ev {
	int64_t ts, end;
	uint32_t name;
	uint32_t h;         /* GPU: its index in hrecs */
	unsigned pair : 28; /* its nodes: 2 pair (start) and 2 pair + 1 (end) */
	unsigned kind : 2;
	unsigned : 0;
	unsigned rel : 28; /* + 1 (0 for none): CPU, the innermost step event around it;
	                    * GPU, the event of its launch call */
	unsigned sync : 2;
	unsigned blocking : 1;
	unsigned comm : 1;
};

_Static_assert(sizeof(struct cp_ev) == 32, "struct cp_ev: 32 bytes");

/* e's start node (even); its end is the next. */
static uint32_t ev_node(const struct cp_ev *e)
{
	return 2 * (uint32_t)e->pair;
}

/* e's parent (CPU) or launch (GPU), -1 for none. */
static int32_t ev_rel(const struct cp_ev *e)
{
	return (int32_t)e->rel - 1;
}

/* An edge, as added. Its tag holds its type (E_*) in the low 3 bits,
 * then whether it has no time whatever its nodes' (a blocking call's end),
 * then in the rest: for a sync, how many syncs were added before it + 1;
 * else the event its time belongs to + 1 (0 for none; a step has fewer
 * than 2^28 events). */
struct cp_edge {
	uint32_t src, dst, tag;
};

/* An edge in its start node's list of edges out (cp_graph.first_out). */
struct cp_out {
	uint32_t dst, tag;
};

#define CP_EVENTS_MAX ((1u << 28) - 1)

static unsigned tag_type(uint32_t tag)
{
	return tag & 7;
}

static bool tag_zero(uint32_t tag)
{
	return tag & 8;
}

static int32_t tag_attr(uint32_t tag)
{
	return tag_type(tag) == E_SYNC ? -1 : (int32_t)(tag >> 4) - 1;
}

/* Where an edge comes among the edges into its end node in the order
 * they were added, where that can matter. Only a sync call's end has
 * more than one edge in: its call stack's (added first) and the syncs'. */
static uint32_t tag_order(uint32_t tag)
{
	return tag_type(tag) == E_SYNC ? tag >> 4 : 0;
}

struct cp_graph {
	struct cp_ev *ev;
	uint32_t *pair_ev; /* per pair of nodes (2k, 2k + 1): the event they start and end */
	struct cp_edge *e; /* as added; then the lists of edges out (struct cp_out), node by node */
	size_t nev, capev, nnodes, cappairs, ne, cape;
	uint32_t nsync; /* sync edges added */
	/* the longest path */
	int64_t *dist;
	uint32_t *best, *indeg, *first_out; /* best: the edge in (its place in the lists); indeg, once the
	                                     * path is found: best's start */
	size_t capdist;
	uint32_t end; /* the first node in the topological order with the longest way in */
};

/* Where each row's events of the step are in ev: up to to[row], from
 * at[row], which starts at the row's first and is then the launch
 * lookup's cursor (at == to: none left). */
struct cp_rows {
	size_t *at, *to;
};

/* A GPU event (its index in hrecs) with its launch's start, sorted into
 * launch order within its rank's part of the list (struct gseg). */
struct glink {
	int64_t lts;
	uint32_t h;
} AN_PACKED;

struct gseg {
	int64_t rank;
	size_t from, to;
};

static const struct an_hrec *sort_hrecs; /* for glink_less */

static bool glink_less(const struct glink *x, const struct glink *y)
{
	if (x->lts != y->lts)
		return x->lts < y->lts;
	uint32_t sx = sort_hrecs[x->h].seq, sy = sort_hrecs[y->h].seq;
	return sx != sy ? sx < sy : x->h < y->h;
}

AN_SORT_DEFINE(sort_glinks, struct glink, glink_less)

static int64_t pid_rank(const struct an_trace *a, uint32_t pid)
{
	return ((const struct an_process *)an_table_item(&a->pids, pid))->rank;
}

/* What a->queue says of a GPU event (an_queue_lengths). */
enum { Q_LAUNCH_ONE = 1, Q_START_NONE = 2 };

/* A launch (+1) or GPU event start (-1) on one stream of one rank. */
struct qev {
	int64_t ts;
	uint32_t seq, hd; /* hd: the hrecs index << 1, | 1 for a launch */
};

static bool qev_less(const struct qev *x, const struct qev *y)
{
	if (x->ts != y->ts)
		return x->ts < y->ts;
	return x->seq != y->seq ? x->seq < y->seq : x->hd < y->hd;
}

AN_SORT_DEFINE(sort_qevs, struct qev, qev_less)

/* The queued launches of hrecs[from, to) (one rank), their streams: the
 * distinct values in order (streams), and each one's count (at). */
struct qstreams {
	int64_t *v;
	size_t *at, *half;
	size_t n, cap, capat, caphalf;
};

static size_t stream_index(const struct qstreams *s, int64_t stream)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->v[mid] < stream)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* stream's index in s, tried first at last (a stream's events come in
 * runs). */
static size_t stream_at(const struct qstreams *s, int64_t stream, size_t last)
{
	return s->v[last] == stream ? last : stream_index(s, stream);
}

static int list_streams(const struct an_trace *a, size_t from, size_t to, struct qstreams *s)
{
	s->n = 0;
	int64_t last = 0;
	bool any = false;
	for (size_t i = from; i < to; i++) {
		const struct an_hrec *r = &a->hrecs[i];
		if (!an_launch_queued(a, r) || (any && an_hrec_stream(a, r) == last))
			continue;
		any = true;
		last = an_hrec_stream(a, r);
		size_t k = stream_index(s, last);
		if (k < s->n && s->v[k] == last)
			continue;
		if (!an_grow((void **)&s->v, s->n, &s->cap, sizeof(*s->v)))
			return -ENOMEM;
		memmove(s->v + k + 1, s->v + k, (s->n - k) * sizeof(*s->v));
		s->v[k] = last;
		s->n++;
	}
	if (!an_grow((void **)&s->at, s->n, &s->capat, sizeof(*s->at)) ||
	    !an_grow((void **)&s->half, s->n, &s->caphalf, sizeof(*s->half)))
		return -ENOMEM;
	memset(s->at, 0, (s->n + 1) * sizeof(*s->at));
	return 0;
}

/* HTA's queue length per stream (TraceCounters), after each launch call
 * and after each GPU event's start, as the critical paths ask: whether it
 * is 1 after the launch (Q_LAUNCH_ONE) and 0 after the start
 * (Q_START_NONE). One rank at a time (hrecs are sorted by rank), each
 * stream's launches and starts in a bucket of their own. */
int an_queue_lengths(struct an_trace *a)
{
	if (a->nhrecs >= INT32_MAX / 2)
		return -ENOMEM; /* the lengths and indexes below are 32 bits */
	free(a->queue);
	uint8_t *qf = a->queue = calloc(a->nhrecs ? a->nhrecs : 1, 1);
	struct qev *q = malloc((2 * a->nhrecs + 1) * sizeof(*q));
	struct qstreams st = {0};
	int rc = q && qf ? 0 : -ENOMEM;
	for (size_t from = 0, to; !rc && from < a->nhrecs; from = to) {
		int64_t rank = pid_rank(a, an_hrec_pid(a, &a->hrecs[from]));
		for (to = from; to < a->nhrecs && pid_rank(a, an_hrec_pid(a, &a->hrecs[to])) == rank; to++)
			;
		if ((rc = list_streams(a, from, to, &st)))
			break;
		size_t k = 0;
		for (size_t i = from; i < to; i++) { /* bucket sizes, then where each starts */
			if (an_launch_queued(a, &a->hrecs[i])) {
				k = stream_at(&st, an_hrec_stream(a, &a->hrecs[i]), k);
				st.at[k + 1] += 2;
			}
		}
		for (size_t s = 0; s < st.n; s++)
			st.at[s + 1] += st.at[s];
		/* A bucket holds its stream's starts, then its launches: each
		 * half comes in order (starts in hrecs order, launches in the
		 * order a stream runs them), sorted only when not, and the two
		 * are merged as they are walked. */
		for (size_t s = 0; s < st.n; s++)
			st.half[s] = st.at[s] + (st.at[s + 1] - st.at[s]) / 2;
		k = 0;
		for (size_t i = from; i < to; i++) {
			const struct an_hrec *r = &a->hrecs[i];
			struct an_hcpu l;
			if (!an_launch(a, r, &l) || !an_hcpu_queue(a, &l))
				continue;
			k = stream_at(&st, an_hrec_stream(a, r), k);
			q[st.at[k]++] = (struct qev){r->ts, r->seq, (uint32_t)i << 1};
			q[st.half[k]++] = (struct qev){l.ts, l.seq, (uint32_t)i << 1 | 1};
		}
		for (size_t s = 0, b = 0; s < st.n; b = st.half[s++]) { /* half[s] now ends bucket s */
			size_t mid = st.at[s], e = st.half[s];          /* at[s] now ends its starts */
			sort_qevs(q + b, mid - b);
			sort_qevs(q + mid, e - mid);
			int32_t len = 0;
			for (size_t i = b, j = mid; i < mid || j < e;) {
				const struct qev *v =
				    j == e || (i < mid && qev_less(&q[i], &q[j])) ? &q[i++] : &q[j++];
				len += v->hd & 1 ? 1 : -1;
				if (v->hd & 1 ? len == 1 : len == 0)
					qf[v->hd >> 1] |= v->hd & 1 ? Q_LAUNCH_ONE : Q_START_NONE;
			}
		}
	}
	free(q);
	free(st.v);
	free(st.at);
	free(st.half);
	return rc;
}

/* ---- building one step's graph -------------------------------------------------- */

/* Node v: the start (v even) or the end of event node_ev(g, v). */
static uint32_t node_ev(const struct cp_graph *g, uint32_t v)
{
	return g->pair_ev[v >> 1];
}

static bool node_start(uint32_t v)
{
	return !(v & 1);
}

/* The time of node v. */
static int64_t node_ts(const struct cp_graph *g, uint32_t v)
{
	const struct cp_ev *e = &g->ev[node_ev(g, v)];
	return node_start(v) ? e->ts : e->end;
}

static int add_ev(struct cp_graph *g, struct cp_ev e)
{
	if (g->nev >= CP_EVENTS_MAX)
		return -ENOMEM; /* the edges' tags hold an event's index in 28 bits */
	size_t pairs = g->nnodes / 2;
	e.pair = (unsigned)pairs; /* below CP_EVENTS_MAX */
	if (e.kind != K_PLAIN && AN_PUSH(g->pair_ev, pairs, g->cappairs, (uint32_t)g->nev))
		return -ENOMEM;
	g->nnodes = 2 * pairs;
	return AN_PUSH(g->ev, g->nev, g->capev, e);
}

static int add_edge(struct cp_graph *g, uint32_t src, uint32_t dst, uint8_t type, bool zero, int32_t attr)
{
	if (type == E_SYNC && g->nsync >= CP_EVENTS_MAX)
		return -ENOMEM; /* the tags hold a sync's order in 28 bits */
	uint32_t rest = type == E_SYNC ? ++g->nsync : (uint32_t)(attr + 1);
	uint32_t tag = rest << 4 | (zero ? 8u : 0u) | type;
	return AN_PUSH(g->e, g->ne, g->cape, (struct cp_edge){src, dst, tag});
}

/* An edge's time, from its start node src to its end node's time tdst:
 * none for a dependency, a sync or a blocking call's end. */
static int64_t edge_w(const struct cp_graph *g, uint32_t src, uint32_t tag, int64_t tdst)
{
	return tag_zero(tag) || tag_type(tag) == E_DEPENDENCY || tag_type(tag) == E_SYNC
	           ? 0
	           : an_span(node_ts(g, src), tdst);
}

/* HTA's _attribute_edge for a span between two CPU nodes: the event that
 * starts at src, else the one that ends at dst, else (the end of one op to
 * the start of the next) their parent. */
static int32_t attribute(const struct cp_graph *g, uint32_t src, uint32_t dst, int32_t parent)
{
	if (node_start(src))
		return (int32_t)node_ev(g, src);
	return !node_start(dst) ? (int32_t)node_ev(g, dst) : parent;
}

/* The walk of one thread's call stack (HTA's enter_func and exit_func). */
struct walk {
	int64_t last, high; /* nodes, -1 for none */
	int32_t last_parent;
	unsigned depth; /* of ops and calls (plain events are not counted) */
};

static int enter(struct cp_graph *g, struct walk *w, uint32_t i)
{
	const struct cp_ev *e = &g->ev[i];
	int rc = 0;
	if (w->depth == 0 && w->high >= 0)
		rc = add_edge(g, (uint32_t)w->high, ev_node(e), E_DEPENDENCY, false, -1);
	w->depth++;
	if (!rc && w->last >= 0)
		rc = add_edge(g, (uint32_t)w->last, ev_node(e), E_OP, false,
		              attribute(g, (uint32_t)w->last, ev_node(e), w->last_parent));
	w->last = ev_node(e);
	w->last_parent = ev_rel(e);
	return rc;
}

static int leave(struct cp_graph *g, struct walk *w, uint32_t i)
{
	const struct cp_ev *e = &g->ev[i];
	int rc = 0;
	w->depth--;
	if (w->last >= 0)
		rc = add_edge(g, (uint32_t)w->last, ev_node(e) + 1, E_OP, e->blocking,
		              attribute(g, (uint32_t)w->last, ev_node(e) + 1, w->last_parent));
	if (w->depth == 0) {
		w->last = -1;
		w->high = ev_node(e) + 1;
	} else {
		w->last = ev_node(e) + 1;
		w->last_parent = ev_rel(e);
	}
	return rc;
}

/* What the graph makes of a name, worked out once per name: N_NODE for
 * CPU ops and runtime or driver calls (nodes of the graph), N_BLOCKING
 * for calls that wait for the GPU, and for cuda_sync events their kind
 * (S_*) in the bits from N_SYNC_SHIFT. */
enum { N_NODE = 1, N_BLOCKING = 2, N_SYNC_SHIFT = 2 };

static uint8_t *name_flags(const struct an_trace *a)
{
	static const char *const blocking[] = {"cudaDeviceSynchronize",
	                                       "cudaStreamSynchronize",
	                                       "cudaEventQuery",
	                                       "cudaEventSynchronize",
	                                       "cudaMemcpy",
	                                       "cudaMemcpyAsync",
	                                       NULL};
	uint8_t *f = malloc(a->names.n ? a->names.n : 1);
	for (uint32_t i = 0; f && i < a->names.n; i++) {
		const char *cat = an_name_cat(a, i), *name = an_name(a, i);
		bool node =
		    !strcmp(cat, "cpu_op") || !strcmp(cat, "cuda_runtime") || !strcmp(cat, "cuda_driver");
		unsigned sync = strcmp(cat, "cuda_sync")        ? S_NONE
		                : !strcmp(name, "Stream Sync")  ? S_STREAM
		                : !strcmp(name, "Context Sync") ? S_CONTEXT
		                                                : S_OTHER;
		f[i] = (uint8_t)((node ? N_NODE : 0) | (an_name_in(name, blocking) ? N_BLOCKING : 0) |
		                 sync << N_SYNC_SHIFT);
	}
	return f;
}

/* The CPU events of one row that start in [s, e] and last, nested by a
 * stack, with the graph's edges along the way. */
static int cpu_row(const struct an_trace *a, const uint8_t *flags, struct cp_graph *g, uint32_t row,
                   int64_t s, int64_t e, uint32_t **stack, size_t *scap)
{
	size_t depth = 0;
	struct an_xcur c;
	struct an_xrec cur;
	bool more;
	an_xrow_from(a, row, s, &c);
	while ((more = an_xnext(&c, &cur)) && cur.ts < s)
		;
	struct walk w = {-1, -1, -1, 0};
	int rc = 0;
	for (; !rc; more = an_xnext(&c, &cur)) {
		const struct an_xrec *x = more && cur.ts <= e ? &cur : NULL;
		if (x && x->dur <= 0)
			continue;
		while (!rc && depth && (!x || g->ev[(*stack)[depth - 1]].end <= x->ts)) {
			uint32_t top = (*stack)[--depth];
			if (g->ev[top].kind == K_CPU)
				rc = leave(g, &w, top);
		}
		if (!x || rc)
			break;
		bool node = flags[x->name] & N_NODE;
		struct cp_ev ev = {.ts = x->ts,
		                   .end = an_sat_add(x->ts, x->dur),
		                   .name = x->name,
		                   .rel = depth ? (*stack)[depth - 1] + 1 : 0,
		                   .kind = node ? K_CPU : K_PLAIN,
		                   .blocking = (flags[x->name] & N_BLOCKING) != 0};
		uint32_t k = (uint32_t)g->nev;
		rc = add_ev(g, ev);
		if (!rc && !an_grow((void **)stack, depth, scap, sizeof(**stack)))
			rc = -ENOMEM;
		if (!rc) {
			(*stack)[depth++] = k;
			if (node)
				rc = enter(g, &w, k);
		}
	}
	return rc;
}

/* The step's event for launch call l: same row, start and name. Each
 * row's events left are ev[at[row], to[row]) in start order, and launches
 * come in start order too (glinks, per rank), so each row's cursor (at[])
 * only moves on. */
static int32_t find_call(const struct cp_graph *g, struct cp_rows *rows, const struct an_hcpu *l)
{
	size_t i = rows->at[l->row], to = rows->to[l->row];
	while (i < to && g->ev[i].ts < l->ts)
		i++;
	rows->at[l->row] = i;
	for (; i < to && g->ev[i].ts == l->ts; i++)
		if (g->ev[i].name == l->name && g->ev[i].kind == K_CPU)
			return (int32_t)i;
	return -1;
}

/* A GPU event of the step in HTA's order: by start (a sync by its end),
 * then file order. */
struct gkey {
	int64_t t;
	uint32_t seq, ev;
};

static bool gkey_less(const struct gkey *x, const struct gkey *y)
{
	if (x->t != y->t)
		return x->t < y->t;
	return x->seq != y->seq ? x->seq < y->seq : x->ev < y->ev;
}

AN_SORT_DEFINE(sort_gkeys, struct gkey, gkey_less)

struct last {
	uint32_t lane; /* a stream of a device */
	uint32_t node; /* the end node of the stream's last GPU event */
};

/* HTA's _construct_graph_from_kernels over the step's GPU events
 * ev[first, nev), in start order (syncs at their end). */
static int gpu_edges(const struct an_trace *a, struct cp_graph *g, size_t first, const uint8_t *queue)
{
	size_t n = g->nev - first, nlast = 0, lcap = 0;
	struct gkey *key = malloc((n ? n : 1) * sizeof(*key));
	struct last *last = NULL;
	int rc = key ? 0 : -ENOMEM;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct cp_ev *e = &g->ev[first + i];
		key[i] = (struct gkey){e->sync ? e->end : e->ts, a->hrecs[e->h].seq, (uint32_t)(first + i)};
	}
	if (!rc)
		sort_gkeys(key, n);
	for (size_t i = 0; i < n && !rc; i++) {
		const struct cp_ev *e = &g->ev[key[i].ev];
		const struct an_hrec *h = &a->hrecs[e->h];
		struct last *l = NULL;
		for (size_t k = 0; k < nlast && !l; k++)
			if (last[k].lane == h->lane)
				l = &last[k];
		int32_t launch = ev_rel(e);
		if (e->sync) {
			/* a sync call ends after the stream's (or, for a context
			 * sync, every stream's) last GPU event */
			for (size_t k = 0; k < nlast && !rc && launch >= 0; k++)
				if (e->sync == S_CONTEXT || &last[k] == l)
					rc = add_edge(g, last[k].node, ev_node(&g->ev[launch]) + 1, E_SYNC,
					              false, -1);
			continue;
		}
		rc = add_edge(g, ev_node(e), ev_node(e) + 1, E_OP, false, (int32_t)key[i].ev);
		int64_t lts = launch >= 0 ? g->ev[launch].ts : 0;
		if (!rc && (queue[e->h] & (Q_LAUNCH_ONE | Q_START_NONE)) == (Q_LAUNCH_ONE | Q_START_NONE) &&
		    launch >= 0 && (!l || node_ts(g, l->node) < lts))
			rc = add_edge(g, ev_node(&g->ev[launch]), ev_node(e), E_LAUNCH, false, -1);
		else if (!rc && l)
			rc = add_edge(g, l->node, ev_node(e), E_KERNEL, false, (int32_t)node_ev(g, l->node));
		if (!rc && !l) {
			rc = AN_PUSH(last, nlast, lcap, (struct last){h->lane, 0});
			l = rc ? NULL : &last[nlast - 1];
		}
		if (l)
			l->node = ev_node(e) + 1;
	}
	free(key);
	free(last);
	return rc;
}

/* ---- the longest path ------------------------------------------------------------- */

static bool grow_u32(uint32_t **p, size_t n)
{
	uint32_t *q = realloc(*p, (n ? n : 1) * sizeof(*q));
	if (q)
		*p = q;
	return q != NULL;
}

/* dist and best (the in-edge it came by, or UINT32_MAX) of every node, in
 * a topological order (Kahn's); false when the graph has a cycle. Among
 * equally long ways in, the first edge added wins, as in networkx; g->end
 * is where the path ends. Each node's way in is grown as its predecessors
 * are taken (out_lists gives each node's out-edges, in the order added), so a
 * node's is whole when the node is taken: the longest, the earliest edge
 * added among equals, as a walk of its in-edges in order would find.
 *
 * The queue of nodes ready to be taken is a list through indeg: a node
 * joins it when its count of in-edges left reaches 0, and from then on
 * its slot holds the next node of the queue (Q_END for none). */
#define Q_END UINT32_MAX

/* The edges as added made, in place, into lists of edges out by start
 * node, each in the order added (first_out[v] to first_out[v + 1]); the
 * room left over handed back. */
static int out_lists(struct cp_graph *g)
{
	size_t nn = g->nnodes, ne = g->ne;
	struct cp_edge *e = g->e;
	memset(g->first_out, 0, (nn + 1) * sizeof(uint32_t));
	for (size_t i = 0; i < ne; i++)
		g->first_out[e[i].src + 1]++;
	for (size_t v = 0; v < nn; v++)
		g->first_out[v + 1] += g->first_out[v];
	uint32_t *at = g->indeg; /* each list's next place, for now */
	memcpy(at, g->first_out, nn * sizeof(*at));
	for (size_t i = 0; i < ne; i++) /* each edge's place, in its src (its list's start tells it again) */
		e[i].src = at[e[i].src]++;
	for (size_t i = 0; i < ne; i++) /* each swap puts one edge in its place */
		while (e[i].src != i) {
			struct cp_edge t = e[e[i].src];
			e[e[i].src] = e[i];
			e[i] = t;
		}
	struct cp_out *o = (struct cp_out *)(void *)e;
	for (size_t i = 0; i < ne; i++) { /* edge i's new bytes end before edge i + 1's old ones start */
		struct cp_edge x = e[i];
		o[i] = (struct cp_out){x.dst, x.tag};
	}
	size_t bytes = (ne ? ne : 1) * sizeof(*o);
	struct cp_edge *v = realloc(g->e, bytes);
	if (!v)
		return -ENOMEM;
	g->e = v;
	g->cape = bytes / sizeof(*g->e);
	return 0;
}

static int longest(struct cp_graph *g, bool *dag)
{
	size_t nn = g->nnodes;
	if (nn > g->capdist) {
		int64_t *d = realloc(g->dist, nn * sizeof(*d));
		if (!d)
			return -ENOMEM;
		g->dist = d;
		if (!grow_u32(&g->best, nn) || !grow_u32(&g->indeg, nn) || !grow_u32(&g->first_out, nn + 1))
			return -ENOMEM;
		g->capdist = nn;
	}
	int rc = out_lists(g);
	if (rc)
		return rc;
	const struct cp_out *o = (const struct cp_out *)(const void *)g->e;
	memset(g->indeg, 0, nn * sizeof(uint32_t));
	for (size_t k = 0; k < g->ne; k++)
		g->indeg[o[k].dst]++;
	for (size_t v = 0; v < nn; v++) {
		g->dist[v] = 0;
		g->best[v] = UINT32_MAX;
	}
	uint32_t *next = g->indeg; /* a queued node's slot: the next queued */
	uint32_t head = Q_END, tail = Q_END;
	size_t taken = 0;
	for (size_t v = nn; v-- > 0;) /* the nodes without in-edges, in order */
		if (!g->indeg[v]) {
			next[v] = head;
			head = (uint32_t)v;
			tail = tail == Q_END ? head : tail;
		}
	g->end = head != Q_END ? head : 0;
	while (head != Q_END) {
		uint32_t v = head;
		head = next[v];
		taken++;
		if (g->dist[v] > g->dist[g->end])
			g->end = v;
		for (uint32_t k = g->first_out[v]; k < g->first_out[v + 1]; k++) {
			uint32_t w = o[k].dst;
			int64_t d = an_sat_add(g->dist[v], edge_w(g, v, o[k].tag, node_ts(g, w)));
			if (d >= 0 &&
			    (g->best[w] == UINT32_MAX || d > g->dist[w] ||
			     (d == g->dist[w] && tag_order(o[k].tag) < tag_order(o[g->best[w]].tag)))) {
				g->dist[w] = d;
				g->best[w] = k;
			}
			if (!--g->indeg[w]) { /* w joins the queue */
				next[w] = Q_END;
				if (head == Q_END)
					head = w;
				else
					next[tail] = w;
				tail = w;
			}
		}
	}
	*dag = taken == nn;
	/* The in-edge counts are done with: each node's slot takes the start
	 * of its way in, for the path's walk back. */
	uint32_t *from = g->indeg;
	for (uint32_t v = 0; v < nn; v++)
		for (uint32_t k = g->first_out[v]; k < g->first_out[v + 1]; k++)
			if (g->best[o[k].dst] == k)
				from[o[k].dst] = v;
	return 0;
}

/* Most time first, then CPU ops first, then by name: (gpu, name) is
 * unique once added up (struct op_sums), so this is total. */
static bool op_time_less(const struct an_cp_op *x, const struct an_cp_op *y)
{
	if (x->time != y->time)
		return x->time > y->time;
	if (x->gpu != y->gpu)
		return !x->gpu;
	return x->name < y->name;
}

AN_SORT_DEFINE(sort_ops_time, struct an_cp_op, op_time_less)

/* Each op's time on a path, added up per name (2 * name + gpu): at[k] is
 * that key's index in ops + 1, 0 while it has none. */
struct op_sums {
	uint32_t *at;
	struct an_cp_op *ops;
	size_t cap;
};

/* The path's time by class, and the ops and GPU events it spends most in. */
static int summarise(const struct cp_graph *g, struct op_sums *o, struct an_cpath *p)
{
	size_t nn = g->nnodes, n = 0;
	uint32_t from = g->end;
	p->length = nn ? g->dist[from] : 0;
	int rc = 0;
	const struct cp_out *outs = (const struct cp_out *)(const void *)g->e;
	for (uint32_t v = from, k, src; nn && !rc && (k = g->best[v]) != UINT32_MAX; v = src) {
		uint32_t tag = outs[k].tag;
		src = g->indeg[v]; /* the start of v's way in (longest) */
		const struct cp_ev *ev = tag_attr(tag) >= 0 ? &g->ev[tag_attr(tag)] : NULL;
		int64_t w = edge_w(g, src, tag, node_ts(g, v));
		unsigned type = tag_type(tag);
		int64_t *to = type == E_LAUNCH                          ? &p->launch
		              : type == E_KERNEL                        ? &p->kk
		              : type == E_OP && ev && ev->kind == K_GPU ? (ev->comm ? &p->comm : &p->compute)
		              : type == E_OP                            ? &p->cpu
		                                                        : NULL;
		if (to)
			*to = an_sat_add(*to, w);
		if (type != E_OP || !ev || !w)
			continue;
		bool gpu = ev->kind == K_GPU;
		uint32_t *at = &o->at[2 * (size_t)ev->name + gpu];
		if (*at) {
			o->ops[*at - 1].time = an_sat_add(o->ops[*at - 1].time, w);
		} else if (!(rc = AN_PUSH(o->ops, n, o->cap, (struct an_cp_op){ev->name, gpu, w}))) {
			*at = (uint32_t)n;
		}
	}
	for (size_t i = 0; i < n; i++) /* ready for the next step */
		o->at[2 * (size_t)o->ops[i].name + o->ops[i].gpu] = 0;
	if (rc)
		return rc;
	sort_ops_time(o->ops, n);
	p->nops = n < AN_CP_OPS ? n : AN_CP_OPS;
	if (p->nops) /* none: ops may never have been allocated */
		memcpy(p->ops, o->ops, p->nops * sizeof(*o->ops));
	p->gpu_bound = an_sat_add(an_sat_add(p->compute, p->comm), p->kk) > an_sat_add(p->cpu, p->launch);
	return 0;
}

/* ---- per step ------------------------------------------------------------------------ */

struct cp_ctx {
	uint8_t *flags;      /* per name (name_flags) */
	bool *row_nodes;     /* whether row r has nodes: a row without (a GPU stream's) adds nothing */
	struct an_packed gl; /* hrecs indexes in glink order, per rank (seg) */
	size_t ngl;
	struct gseg *seg; /* one per rank */
	size_t nseg, capseg;
	const uint8_t *queue; /* a->queue */
	uint32_t *stack;
	size_t scap;
	struct cp_rows rows; /* per row of the trace */
	struct op_sums sums;
};

/* The hrecs index at place i of the launch order. */
static uint32_t gl_at(const struct cp_ctx *c, size_t i)
{
	uint64_t h = 0;
	an_pack_get(&c->gl, i, &h);
	return (uint32_t)h;
}

static int one_step(struct an_trace *a, struct cp_ctx *c, struct cp_graph *g, const struct an_step *s,
                    size_t *cap)
{
	int64_t end = an_sat_add(s->ts, s->dur);
	g->nev = g->nnodes = g->ne = g->nsync = 0;
	int rc = 0;
	for (uint32_t r = 0; r < a->rows.n && !rc; r++) {
		c->rows.at[r] = g->nev;
		if (c->row_nodes[r] && an_row_rank(a, r) == s->rank)
			rc = cpu_row(a, c->flags, g, r, s->ts, end, &c->stack, &c->scap);
		c->rows.to[r] = g->nev;
	}
	size_t ncpu = g->nev, lo = 0, hi = 0, sg = 0;
	while (sg < c->nseg && c->seg[sg].rank != s->rank)
		sg++;
	if (sg < c->nseg)
		lo = c->seg[sg].from, hi = c->seg[sg].to;
	size_t last = hi;
	struct an_hcpu l = {0}; /* every GPU event in gl has a launch */
	while (lo < hi) {       /* the first GPU event of the rank launched in the step */
		size_t mid = (lo + hi) / 2;
		an_launch(a, &a->hrecs[gl_at(c, mid)], &l);
		if (l.ts < s->ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < last && !rc; i++) {
		uint32_t hx = gl_at(c, i);
		const struct an_hrec *h = &a->hrecs[hx];
		an_launch(a, h, &l);
		if (l.ts > end)
			break;
		if (an_hcpu_dur(a, &l) <= 0)
			continue;
		uint8_t sync = (uint8_t)(c->flags[h->name] >> N_SYNC_SHIFT);
		rc = add_ev(g, (struct cp_ev){.ts = h->ts,
		                              .end = an_sat_add(h->ts, an_hrec_dur(a, h)),
		                              .name = h->name,
		                              .rel = (unsigned)(find_call(g, &c->rows, &l) + 1),
		                              .h = hx,
		                              .kind = K_GPU,
		                              .sync = sync,
		                              .comm = an_hrec_type(a, h) == AN_COMMUNICATION});
	}
	if (!rc)
		rc = gpu_edges(a, g, ncpu, c->queue);
	bool dag = false;
	if (!rc && g->nnodes)
		rc = longest(g, &dag);
	if (rc || !g->nnodes || !dag)
		return rc; /* no op in the step, or a graph HTA would refuse too */
	struct an_cpath p = {
	    .rank = s->rank, .name = s->name, .number = s->number, .ts = s->ts, .dur = s->dur};
	rc = summarise(g, &c->sums, &p);
	return rc ? rc : AN_PUSH(a->cpaths, a->ncpaths, *cap, p);
}

int an_critpath_compute(struct an_trace *a, const struct an_step *steps, size_t nsteps)
{
	if (!nsteps)
		return 0;
	struct cp_ctx c = {0};
	struct cp_graph g = {0};
	size_t cap = 0;
	c.row_nodes = calloc(a->rows.n ? a->rows.n : 1, sizeof(*c.row_nodes));
	c.flags = name_flags(a);
	c.rows.at = malloc((a->rows.n ? a->rows.n : 1) * sizeof(*c.rows.at));
	c.rows.to = malloc((a->rows.n ? a->rows.n : 1) * sizeof(*c.rows.to));
	c.sums.at = calloc(2 * a->names.n + 1, sizeof(*c.sums.at));
	struct glink *gl = malloc((a->nhrecs ? a->nhrecs : 1) * sizeof(*gl));
	int rc = c.flags && c.row_nodes && gl && c.rows.at && c.rows.to && c.sums.at ? 0 : -ENOMEM;
	if (!rc && !a->queue)
		rc = an_queue_lengths(a);
	c.queue = a->queue;
	struct an_xcur xc;
	struct an_xrec x;
	for (uint32_t r = 0; !rc && r < a->rows.n; r++)
		for (an_xrow(a, r, &xc); !c.row_nodes[r] && an_xnext(&xc, &x);)
			c.row_nodes[r] = (c.flags[x.name] & N_NODE) != 0;
	/* hrecs come rank by rank */
	for (size_t i = 0; !rc && i < a->nhrecs; i++) {
		const struct an_hrec *h = &a->hrecs[i];
		int64_t rank = pid_rank(a, an_hrec_pid(a, h));
		if (!c.nseg || c.seg[c.nseg - 1].rank != rank)
			rc = AN_PUSH(c.seg, c.nseg, c.capseg, (struct gseg){rank, c.ngl, c.ngl});
		struct an_hcpu l;
		if (!rc && an_launch(a, h, &l))
			gl[c.ngl++] = (struct glink){l.ts, (uint32_t)i};
		if (!rc)
			c.seg[c.nseg - 1].to = c.ngl;
	}
	sort_hrecs = a->hrecs;
	for (size_t k = 0; k < c.nseg; k++)
		sort_glinks(gl + c.seg[k].from, c.seg[k].to - c.seg[k].from);
	/* Sorted, the links keep their GPU events' indexes alone (the launch's
	 * start is looked up again), packed: launch order is mostly the
	 * events' own, so a few bits each. */
	an_pack_init(&c.gl, 1);
	for (size_t i = 0; !rc && i < c.ngl; i++)
		rc = an_pack_push(&c.gl, (const uint64_t[]){gl[i].h});
	if (!rc)
		rc = an_pack_end(&c.gl);
	free(gl);
	for (size_t i = 0; !rc && i < nsteps; i++)
		rc = one_step(a, &c, &g, &steps[i], &cap);
	free(c.flags);
	free(c.rows.at);
	free(c.rows.to);
	free(c.row_nodes);
	an_pack_free(&c.gl);
	free(c.seg);
	free(a->queue); /* the queue lengths are done with */
	a->queue = NULL;
	free(c.stack);
	free(c.sums.at);
	free(c.sums.ops);
	free(g.ev);
	free(g.pair_ev);
	free(g.e);
	free(g.dist);
	free(g.best);
	free(g.indeg);
	free(g.first_out);
	return rc;
}

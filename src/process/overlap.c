/* Overlapping GPU work on one stream (programmatic dependent launch, or
 * clock skew between engines) moves to extra rows of that stream, since
 * Chrome-trace viewers nest or drop complete events that overlap without
 * nesting on one row. */
#define LOG_TAG "process"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "process/process.h"

struct row {
	int64_t device, stream;
	int64_t last_end;
	size_t n;           /* its activities */
	size_t off, filled; /* its slice of the items */
	uint32_t lanes;     /* extra rows used */
	bool used, flagged;
};

struct rows {
	struct row *slot;
	size_t cap, count;
};

/* What is sorted: one activity of a row that needs lanes. */
struct item {
	size_t row;
	int64_t start, end;
	size_t idx;
};

/* A lane in a heap: busy lanes keyed by their end time, free ones by their
 * number. */
struct lane {
	int64_t key;
	uint32_t lane;
};

static bool work_type(enum strobe_activity_type type)
{
	/* Rows of other types (sync rows, annotations spanning their work) are
	 * either apart already or meant to enclose. */
	return type == STROBE_ACTIVITY_CONCURRENT_KERNEL || type == STROBE_ACTIVITY_GPU_MEMCPY ||
	       type == STROBE_ACTIVITY_GPU_MEMSET;
}

static bool moves(const struct strobe_activity *a)
{
	return work_type(a->type) && a->resource >= 0 && a->resource < STRB_OVERLAP_LANE_STEP;
}

static size_t row_hash(int64_t device, int64_t stream, size_t cap)
{
	uint64_t h = ((uint64_t)device * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)stream * 0xc2b2ae3d27d4eb4fULL);
	return (size_t)(h ^ (h >> 29)) & (cap - 1);
}

static struct row *row_find(struct rows *r, int64_t device, int64_t stream)
{
	size_t i = row_hash(device, stream, r->cap);
	while (r->slot[i].used && (r->slot[i].device != device || r->slot[i].stream != stream))
		i = (i + 1) & (r->cap - 1);
	return &r->slot[i];
}

static struct row *row_get(struct rows *r, int64_t device, int64_t stream)
{
	if ((r->count + 1) * 2 > r->cap) {
		struct rows bigger = {calloc(r->cap * 2, sizeof(struct row)), r->cap * 2, r->count};
		if (!bigger.slot)
			return NULL;
		for (size_t i = 0; i < r->cap; i++)
			if (r->slot[i].used)
				*row_find(&bigger, r->slot[i].device, r->slot[i].stream) = r->slot[i];
		free(r->slot);
		*r = bigger;
	}
	struct row *w = row_find(r, device, stream);
	if (!w->used) {
		*w = (struct row){.device = device, .stream = stream, .last_end = INT64_MIN, .used = true};
		r->count++;
	}
	return w;
}

static int cmp_item(const void *x, const void *y)
{
	const struct item *a = x, *b = y;
	if (a->row != b->row)
		return a->row < b->row ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	/* The longer one first, so an enclosing kernel keeps the stream's row. */
	if (a->end != b->end)
		return a->end > b->end ? -1 : 1;
	return (a->idx > b->idx) - (a->idx < b->idx);
}

/* A binary min-heap of lanes. */
static void heap_push(struct lane *h, size_t *n, struct lane v)
{
	size_t i = (*n)++;
	while (i && h[(i - 1) / 2].key > v.key) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static struct lane heap_pop(struct lane *h, size_t *n)
{
	struct lane top = h[0], last = h[--*n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].key < h[c].key)
			c++;
		if (h[c].key >= last.key)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = last;
	return top;
}

/* Greedy interval colouring in start order: each activity takes the lowest
 * lane free at its start (end == start counts as free). Returns how many
 * activities left lane 0. */
static uint64_t assign(struct rows *rows, const struct item *it, size_t m, struct lane *busy,
                       struct lane *free_lanes, uint16_t *lane_of)
{
	uint64_t moved = 0;
	for (size_t g = 0; g < m;) {
		struct row *r = &rows->slot[it[g].row];
		size_t nb = 0, nf = 0;
		uint32_t next = 0;
		for (; g < m && &rows->slot[it[g].row] == r; g++) {
			while (nb && busy[0].key <= it[g].start) {
				uint32_t done = heap_pop(busy, &nb).lane;
				heap_push(free_lanes, &nf, (struct lane){done, done});
			}
			uint32_t lane = nf ? heap_pop(free_lanes, &nf).lane : next++;
			if (lane > STRB_OVERLAP_MAX_LANES)
				lane = STRB_OVERLAP_MAX_LANES; /* the last lane takes the rest, still
				                                  overlapping */
			heap_push(busy, &nb, (struct lane){it[g].end, lane});
			if (!lane)
				continue;
			lane_of[it[g].idx] = (uint16_t)lane;
			if (lane > r->lanes)
				r->lanes = lane;
			moved++;
		}
	}
	return moved;
}

/* "stream 7 (overlap 1)" rows, sorted with their stream: same sort index,
 * and a name the stream's own name is a prefix of. */
static int add_lane_rows(struct strobe_trace *t, const struct row *r)
{
	const char *base = NULL;
	int64_t sort = r->stream;
	for (size_t i = 0; i < t->res_count; i++) {
		const struct strobe_resource *s = &t->res[i];
		if (s->kind != STROBE_RESOURCE_PROCESS && s->device == r->device &&
		    s->resource == r->stream) {
			base = s->name;
			sort = s->sort_index;
			break;
		}
	}
	char stream_name[64];
	if (!base) {
		snprintf(stream_name, sizeof(stream_name), "stream %lld", (long long)r->stream);
		base = stream_name;
	}
	size_t len = strlen(base);
	while (len && base[len - 1] == ' ')
		len--; /* libkineto's stream titles end with a space */
	for (uint32_t lane = 1; lane <= r->lanes; lane++) {
		char title[1100];
		snprintf(title, sizeof(title), "%.*s (overlap %u)", (int)(len < 1024 ? len : 1024), base,
		         lane);
		struct strobe_resource res = {
		    .size = sizeof(res),
		    .kind = STROBE_RESOURCE_STREAM,
		    .device = r->device,
		    .resource = (int64_t)lane * STRB_OVERLAP_LANE_STEP + r->stream,
		    .name = title,
		    .sort_index = sort,
		};
		if (strb_trace_add_resource(t, &res))
			return -ENOMEM;
	}
	return 0;
}

/* Whether GPU work lies outside the range its backend checked. */
/* Whether activity i (read into r, encoded or not) is work that moves;
 * its type alone rules most out without decoding it. */
static bool moves_at(const struct strobe_trace *t, size_t i, struct strb_act_ref *r)
{
	if (!work_type(strb_trace_type(t, i)))
		return false;
	strb_trace_get(t, i, r);
	return moves(r->a);
}

static bool unchecked_work(const struct strobe_trace *t)
{
	struct strb_act_ref r;
	for (size_t i = 0; i < t->count; i++) {
		if (i == t->in_order_from)
			i = t->in_order_to;
		if (i < t->count && moves_at(t, i, &r))
			return true;
	}
	return false;
}

int strb_process_overlap(struct strobe_trace *t)
{
	if (t->in_order_to > t->in_order_from && t->in_order_to <= t->count && !unchecked_work(t))
		return 0;
	struct rows rows = {calloc(64, sizeof(struct row)), 64, 0};
	if (!rows.slot)
		return -ENOMEM;
	int rc = 0;
	struct item *it = NULL;
	struct lane *busy = NULL, *free_lanes = NULL;
	uint16_t *lane_of = NULL;

	/* One pass finds the rows whose work is not already in order without
	 * overlap; a trace with none costs no sort. */
	bool any = false;
	struct strb_act_ref ref;
	for (size_t i = 0; i < t->count; i++) {
		if (!moves_at(t, i, &ref))
			continue;
		const struct strobe_activity *a = ref.a;
		struct row *r = row_get(&rows, a->device, a->resource);
		if (!r) {
			rc = -ENOMEM;
			goto out;
		}
		if (a->start_ns < r->last_end)
			any = r->flagged = true;
		if (a->end_ns > r->last_end)
			r->last_end = a->end_ns;
		r->n++;
	}
	if (!any)
		goto out;
	/* Activities move in their working form. */
	if (strb_trace_unroll(t)) {
		rc = -ENOMEM;
		goto out;
	}
	size_t m = 0, widest = 0;
	for (size_t i = 0; i < rows.cap; i++) {
		if (!rows.slot[i].flagged)
			continue;
		rows.slot[i].off = m;
		m += rows.slot[i].n;
		widest = rows.slot[i].n > widest ? rows.slot[i].n : widest;
	}
	it = malloc(m * sizeof(*it));
	busy = malloc(widest * sizeof(*busy));
	free_lanes = malloc(widest * sizeof(*free_lanes));
	/* Lanes are written back in activity order: the sorted order would
	 * visit the activity array with a stride of one row. */
	lane_of = calloc(t->count, sizeof(*lane_of));
	if (!it || !busy || !free_lanes || !lane_of) {
		rc = -ENOMEM;
		goto out;
	}
	/* Grouped by row in one pass; a row's work usually arrives in start
	 * order already (CUPTI delivers a stream in order), so a slice is sorted
	 * only when it is not. */
	for (size_t i = 0; i < t->count; i++) {
		const struct strobe_activity *a = &t->acts[i];
		if (!moves(a))
			continue;
		struct row *r = row_find(&rows, a->device, a->resource);
		if (r->flagged)
			it[r->off + r->filled++] =
			    (struct item){(size_t)(r - rows.slot), a->start_ns, a->end_ns, i};
	}
	for (size_t i = 0; i < rows.cap; i++) {
		const struct row *r = &rows.slot[i];
		if (!r->flagged)
			continue;
		size_t j = 1;
		while (j < r->n && cmp_item(&it[r->off + j - 1], &it[r->off + j]) < 0)
			j++;
		if (j < r->n)
			qsort(it + r->off, r->n, sizeof(*it), cmp_item);
	}
	t->stats.gpu_overlap_moved += assign(&rows, it, m, busy, free_lanes, lane_of);
	for (size_t i = 0; i < t->count; i++)
		if (lane_of[i])
			t->acts[i].resource += (int64_t)lane_of[i] * STRB_OVERLAP_LANE_STEP;
	for (size_t i = 0; i < rows.cap && !rc; i++)
		if (rows.slot[i].used && rows.slot[i].lanes)
			rc = add_lane_rows(t, &rows.slot[i]);
out:
	free(it);
	free(busy);
	free(free_lanes);
	free(lane_of);
	free(rows.slot);
	return rc;
}

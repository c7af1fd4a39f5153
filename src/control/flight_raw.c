/* A raw crash dump (flight_crash.c) as a normal trace: `strobe convert
 * run.crash-PID.raw`. The file comes from a process that was dying and
 * may be cut short or damaged, so everything is checked before it is
 * used: the header's fields, each thread block's lengths against the file
 * and each record against its chunk. A ring copied while its thread
 * recycled it (torn) may hold a half-written chunk: from the first bad
 * record such a chunk is left out; anywhere else a bad record is an
 * error. The rings then go through the CPU pass as a live dump's do. */
#define LOG_TAG "flight"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "control/flight_crash.h"
#include "core/capture.h"
#include "core/json_check.h"
#include "process/gpu.h"
#include "process/packed.h"
#include "process/process.h"
#include "process/trace.h"

struct reader {
	uint8_t *buf;
	size_t len, off;
	const char *path;
	char *err;
	size_t errlen;
	int rc;
};

static int fail(struct reader *r, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct reader *r, int rc, const char *fmt, ...)
{
	if (r->rc)
		return r->rc;
	int n = snprintf(r->err, r->errlen, "%s: ", r->path);
	va_list ap;
	va_start(ap, fmt);
	if (n >= 0 && (size_t)n < r->errlen)
		vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	r->rc = rc;
	return rc;
}

/* The next n bytes, or NULL (the error says what was cut short). */
static void *take(struct reader *r, size_t n, const char *what)
{
	if (r->rc)
		return NULL;
	if (n > r->len - r->off) {
		fail(r, -EINVAL, "truncated: %s needs %zu bytes at byte %zu, the file ends %zu bytes later",
		     what, n, r->off, r->len - r->off);
		return NULL;
	}
	void *p = r->buf + r->off;
	r->off += n;
	return p;
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV:
		return "SIGSEGV";
	case SIGBUS:
		return "SIGBUS";
	case SIGILL:
		return "SIGILL";
	case SIGFPE:
		return "SIGFPE";
	case SIGABRT:
		return "SIGABRT";
	default:
		return NULL;
	}
}

static int check_header(struct reader *r, struct strb_crash_header *h)
{
	if (r->len < sizeof(h->magic) || memcmp(r->buf, STRB_CRASH_MAGIC, sizeof(h->magic)))
		return fail(r, -EINVAL, "not a strobe crash dump (it does not begin with %s)",
		            STRB_CRASH_MAGIC);
	if (r->len < offsetof(struct strb_crash_header, byte_order) + sizeof(h->byte_order))
		return fail(r, -EINVAL, "truncated: the header is cut short at %zu bytes", r->len);
	memcpy(h, r->buf, offsetof(struct strb_crash_header, byte_order) + sizeof(h->byte_order));
	if (h->byte_order != STRB_CRASH_BYTE_ORDER)
		return fail(r, -EINVAL, "written on a machine of another byte order");
	if (h->version >= 1 && h->version < STRB_CRASH_VERSION)
		return fail(r, -EINVAL,
		            "format version %" PRIu32 ", whose ranges are recorded in an older layout; this "
		            "strobe reads version %d only: convert it with the strobe that wrote it",
		            h->version, STRB_CRASH_VERSION);
	if (h->version != STRB_CRASH_VERSION)
		return fail(r, -EINVAL, "format version %" PRIu32 "; this strobe reads version %d only",
		            h->version, STRB_CRASH_VERSION);
	if (h->size != sizeof(*h))
		return fail(r, -EINVAL, "the header says it has %" PRIu32 " bytes, version %d's has %zu",
		            h->size, STRB_CRASH_VERSION, sizeof(*h));
	const void *p = take(r, sizeof(*h), "the header");
	if (!p)
		return r->rc;
	memcpy(h, p, sizeof(*h));
	h->process_name[sizeof(h->process_name) - 1] = 0;
	h->host_name[sizeof(h->host_name) - 1] = 0;
	if (h->pid <= 0)
		return fail(r, -EINVAL, "the header's process id %" PRId32 " is not one", h->pid);
	if (!signal_name(h->signo))
		return fail(r, -EINVAL, "the header's signal %" PRId32 " is none of the fatal ones",
		            h->signo);
	if (h->npoints < 2 || h->npoints > STRB_CRASH_POINTS)
		return fail(r, -EINVAL, "the header has %" PRIu32 " clock samples (2 to %d expected)",
		            h->npoints, STRB_CRASH_POINTS);
	for (uint32_t i = 1; i < h->npoints; i++)
		if (h->points[i].ticks <= h->points[i - 1].ticks ||
		    h->points[i].mono_ns < h->points[i - 1].mono_ns)
			return fail(r, -EINVAL,
			            "clock sample %" PRIu32 " does not come after sample %" PRIu32, i, i - 1);
	if (h->now_ticks < h->start_ticks)
		return fail(r, -EINVAL, "the signal's time comes before the flight recorder's start");
	return 0;
}

/* What is wrong with the record at p, which has `room` bytes up to the
 * end of its chunk or region; NULL when nothing (*size: its bytes). */
static const char *bad_record(const uint8_t *p, size_t room, bool kept, char *why, size_t len, size_t *size)
{
	struct strb_rec_view rec;
	bool whole = strb_rec_decode(p, room, 0, sizeof(struct strb_rec_attrs), &rec);
	if (kept ? rec.kind != STRB_REC_RANGE_PUSH && rec.kind != STRB_REC_OP_PUSH
	         : !rec.kind || rec.kind == STRB_REC_PAD || rec.kind >= STRB_REC_KINDS) {
		snprintf(why, len, "kind %u is %s", strb_rec_kind(p), kept ? "not a push" : "unknown");
		return why;
	}
	if (!whole || rec.size > room) {
		snprintf(why, len, "its %zu bytes run past its %s (%zu bytes left)",
		         whole ? rec.size : sizeof(struct strb_rec), kept ? "region" : "chunk", room);
		return why;
	}
	*size = rec.size;
	if (rec.kind != STRB_REC_ACTIVITY)
		return NULL;
	/* A serialised activity: its args and category inside its payload. */
	const uint8_t *q = rec.payload, *end = q + rec.aux;
	const struct strb_rec_activity *ra = (const void *)q;
	if (rec.aux < sizeof(*ra))
		return "an activity shorter than its header";
	if (ra->flow_kind > STROBE_FLOW_ASYNC_CPU_GPU)
		return "an activity's flow kind is unknown";
	q += sizeof(*ra);
	for (uint32_t i = 0; i < ra->arg_count; i++) {
		const struct strb_rec_arg *a = (const void *)q;
		if ((size_t)(end - q) < sizeof(*a))
			return "an activity's args run past it";
		q += sizeof(*a);
		size_t key = (a->key_len + 7u) & ~7u;
		if (a->kind > STROBE_ARG_JSON || key > (size_t)(end - q))
			return "an activity's arg is damaged";
		q += key;
		if (a->kind != STROBE_ARG_STRING && a->kind != STROBE_ARG_JSON)
			continue;
		size_t str = ((size_t)a->str_len + 7u) & ~(size_t)7;
		if (str > (size_t)(end - q))
			return "an activity's arg is damaged";
		if (a->kind == STROBE_ARG_JSON) {
			char *text = strndup((const char *)q, a->str_len);
			bool ok = text && strb_json_valid(text);
			free(text);
			if (!ok)
				return "an activity's JSON arg is not JSON";
		}
		q += str;
	}
	if (((ra->category_len + 7u) & ~7u) > (size_t)(end - q))
		return "an activity's category runs past it";
	return NULL;
}

/* Checks the records of [base, base + len) (flight-ring chunks, or the
 * kept pushes): a bad one is an error, or in a torn copy the end of its
 * chunk (the kept region ends there). *len may shrink. */
static int check_records(struct reader *r, uint8_t *base, size_t *len, bool kept, bool torn, pid_t tid,
                         const char *name, uint64_t *left_out)
{
	size_t off = 0;
	while (off + STRB_REC_WORD_BYTES <= *len) {
		size_t in = kept ? off : off % STRB_TBUF_CHUNK, next = off - in + STRB_TBUF_CHUNK;
		unsigned kind = strb_rec_kind(base + off);
		if (!kept && (kind == STRB_REC_PAD || !kind)) {
			off = next;
			continue;
		}
		size_t room = kept ? *len - off : (next < *len ? next : *len) - off;
		char buf[128];
		size_t size = 0;
		const char *why = bad_record(base + off, room, kept, buf, sizeof(buf), &size);
		if (!why) {
			off += size;
			continue;
		}
		if (!torn)
			return fail(r, -EINVAL,
			            "thread %d (%s): the record at byte %zu of its %s is damaged: %s",
			            (int)tid, name, off, kept ? "open ranges" : "ring", why);
		(*left_out)++;
		if (kept) {
			*len = off;
			break;
		}
		strb_rec_set_pad(base + off); /* the rest of this chunk was being rewritten */
		off = next;
	}
	return 0;
}

/* The first and last ticks of the records in the chunk at base (checked),
 * widened from ref. */
static bool chunk_span(const uint8_t *base, size_t len, uint64_t ref, uint64_t *first, uint64_t *last)
{
	bool any = false;
	for (size_t off = 0; off + STRB_REC_WORD_BYTES <= len;) {
		struct strb_rec_view rec;
		if (!strb_rec_decode(base + off, len - off, ref, sizeof(struct strb_rec_attrs), &rec) ||
		    rec.kind == STRB_REC_PAD || !rec.kind || rec.size > len - off)
			break;
		if (!any)
			*first = rec.ticks;
		*last = rec.ticks;
		any = true;
		off += rec.size;
	}
	return any;
}

/* A torn copy: its thread recycled its oldest chunks while they were
 * copied, so a chunk may hold records newer than the chunks after it. The
 * chunks run oldest first; one whose records end after the next chunk's
 * begin is left out. */
static void drop_rewritten(uint8_t *ring, size_t len, uint64_t ref, uint64_t *left_out)
{
	size_t chunks = (len + STRB_TBUF_CHUNK - 1) / STRB_TBUF_CHUNK;
	uint64_t later = UINT64_MAX; /* the earliest first record of the chunks after */
	for (size_t c = chunks; c-- > 0;) {
		size_t at = c * STRB_TBUF_CHUNK, n = len - at < STRB_TBUF_CHUNK ? len - at : STRB_TBUF_CHUNK;
		uint64_t first, last;
		if (!chunk_span(ring + at, n, ref, &first, &last))
			continue;
		if (last > later) {
			strb_rec_set_pad(ring + at);
			(*left_out)++;
			continue;
		}
		later = first;
	}
}

struct threads {
	struct strb_tbuf_view *v;
	size_t n, cap;
	uint64_t left_out;  /* chunks of torn copies left out */
	uint64_t ref_ticks; /* near every record's ticks: the flight recorder's start */
	/* The domains' names (NULL: none in the file). */
	const char *domains[STRB_DOMAINS_MAX];
	bool have_domains;
	/* The GPU records: a packed trace (NULL: none). */
	const uint8_t *gpu;
	size_t gpu_len;
	uint64_t gpu_ticks;
	bool have_gpu;
	const char *gpu_lost; /* why a GPU block that is there was left out */
};

/* The annotation domains' names: at most one block, each name
 * NUL-terminated within its slot. */
static int read_domains(struct reader *r, struct threads *ts)
{
	size_t at = r->off;
	if (ts->have_domains)
		return fail(r, -EINVAL, "byte %zu holds a second domain table", at);
	const struct strb_raw_domains *d = take(r, sizeof(*d), "the domain table");
	if (!d)
		return r->rc;
	if (d->count > STRB_DOMAINS_MAX)
		return fail(r, -EINVAL,
		            "the domain table at byte %zu counts %" PRIu32 " domains, more than %d", at,
		            d->count, STRB_DOMAINS_MAX);
	for (uint32_t i = 0; i < d->count; i++) {
		const char *name = take(r, STRB_RAW_DOMAIN_NAME, "a domain's name");
		if (!name)
			return r->rc;
		if (!memchr(name, 0, STRB_RAW_DOMAIN_NAME))
			return fail(r, -EINVAL,
			            "domain %" PRIu32 "'s name in the table at byte %zu is not terminated", i,
			            at);
		ts->domains[i] = name;
	}
	ts->have_domains = true;
	return 0;
}

/* The GPU block: kept when it was written whole, else noted as lost. */
static int read_gpu(struct reader *r, struct threads *ts)
{
	size_t at = r->off;
	if (ts->have_gpu)
		return fail(r, -EINVAL, "byte %zu holds a second block of GPU records", at);
	const struct strb_raw_gpu *g = take(r, sizeof(*g), "the GPU records' header");
	if (!g)
		return r->rc;
	if (g->size != sizeof(*g) || g->len > r->len)
		return fail(r, -EINVAL,
		            "the GPU records' header at byte %zu is damaged (size %" PRIu32 ", %" PRIu64
		            " bytes)",
		            at, g->size, g->len);
	const uint8_t *block = take(r, (size_t)((g->len + 7) & ~7ull), "the GPU records");
	const struct strb_raw_gpu_end *e = take(r, sizeof(*e), "the GPU records");
	if (!e)
		return r->rc;
	if (e->magic != STRB_RAW_GPU_END_MAGIC)
		return fail(r, -EINVAL, "no end marker after the GPU records (byte %zu)",
		            r->off - sizeof(*e));
	ts->have_gpu = true;
	if ((g->seq & 1) || e->seq != g->seq)
		ts->gpu_lost = "they were being replaced by newer ones while the signal handler wrote them";
	else if (e->unreadable)
		ts->gpu_lost = "part of them could not be read when the signal handler wrote them";
	else if (g->len) {
		ts->gpu = block;
		ts->gpu_len = (size_t)g->len;
		ts->gpu_ticks = g->ticks;
	}
	return 0;
}

static int read_thread(struct reader *r, struct threads *ts)
{
	size_t at = r->off;
	struct strb_raw_thread *th = take(r, sizeof(*th), "a thread block");
	if (!th)
		return r->rc;
	th->name[sizeof(th->name) - 1] = 0;
	if (th->size != sizeof(*th))
		return fail(r, -EINVAL, "the thread block at byte %zu says it has %" PRIu32 " bytes, not %zu",
		            at, th->size, sizeof(*th));
	if (th->kept_len > STRB_TBUF_CHUNK || th->kept_len % 8 || th->ring_len % 8 ||
	    th->tail % STRB_TBUF_CHUNK || th->cap % STRB_TBUF_CHUNK || th->published < th->tail ||
	    th->published - th->tail != th->ring_len || (th->cap && th->ring_len > th->cap))
		return fail(
		    r, -EINVAL,
		    "thread %d (%s): its block at byte %zu has inconsistent lengths (open ranges %" PRIu64
		    " bytes, ring %" PRIu64 " bytes from %" PRIu64 " to %" PRIu64 ", ring size %" PRIu64 ")",
		    (int)th->tid, th->name, at, th->kept_len, th->ring_len, th->tail, th->published, th->cap);
	char what[128];
	snprintf(what, sizeof(what), "thread %d's ring", (int)th->tid);
	uint8_t *kept = take(r, (size_t)th->kept_len, what);
	uint8_t *ring = take(r, (size_t)th->ring_len, what);
	struct strb_raw_thread_end *end = take(r, sizeof(*end), what);
	if (!end)
		return r->rc;
	if (end->magic != STRB_RAW_END_MAGIC)
		return fail(r, -EINVAL, "thread %d (%s): no end marker after its ring (byte %zu)",
		            (int)th->tid, th->name, r->off - sizeof(*end));
	bool torn = (th->seq & 1) || end->seq != th->seq || end->unreadable;
	size_t kept_len = (size_t)th->kept_len, ring_len = (size_t)th->ring_len;
	if (check_records(r, kept, &kept_len, true, torn, th->tid, th->name, &ts->left_out) ||
	    check_records(r, ring, &ring_len, false, torn, th->tid, th->name, &ts->left_out))
		return r->rc;
	if (torn)
		drop_rewritten(ring, ring_len, ts->ref_ticks, &ts->left_out);
	if (ts->n == ts->cap) {
		size_t cap = ts->cap ? ts->cap * 2 : 16;
		void *p = realloc(ts->v, cap * sizeof(*ts->v));
		if (!p)
			return fail(r, -ENOMEM, "out of memory");
		ts->v = p;
		ts->cap = cap;
	}
	ts->v[ts->n++] = (struct strb_tbuf_view){
	    .kept = kept,
	    .kept_len = kept_len,
	    .ring = ring,
	    .ring_len = ring_len,
	    .tid = th->tid,
	    .name = th->name,
	    .aged_out = th->aged_out,
	    .dropped = th->dropped,
	    .truncated = th->truncated,
	    .kept_lost = th->kept_lost,
	    .torn = torn,
	};
	return 0;
}

static int read_threads(struct reader *r, struct threads *ts)
{
	for (;;) {
		if (r->len - r->off < sizeof(uint32_t))
			return fail(
			    r, -EINVAL,
			    "truncated: the file ends after %zu thread blocks, without its end marker (the "
			    "process may have died while writing it)",
			    ts->n);
		uint32_t magic;
		memcpy(&magic, r->buf + r->off, sizeof(magic));
		if (magic == STRB_CRASH_END_MAGIC)
			break;
		if (magic == STRB_RAW_DOMAINS_MAGIC) {
			if (read_domains(r, ts))
				return r->rc;
			continue;
		}
		if (magic == STRB_RAW_GPU_MAGIC) {
			if (read_gpu(r, ts))
				return r->rc;
			continue;
		}
		if (magic != STRB_RAW_THREAD_MAGIC)
			return fail(r, -EINVAL,
			            "byte %zu holds neither a thread block nor the end (0x%08" PRIx32 ")",
			            r->off, magic);
		if (read_thread(r, ts))
			return r->rc;
	}
	const struct strb_crash_end *end = take(r, sizeof(*end), "the end marker");
	if (!end)
		return r->rc;
	if (end->threads != ts->n)
		return fail(r, -EINVAL, "the end marker counts %" PRIu32 " threads, the file holds %zu",
		            end->threads, ts->n);
	if (r->off != r->len)
		return fail(r, -EINVAL, "%zu bytes follow the end marker", r->len - r->off);
	return 0;
}

/* s as the inside of a JSON string: printable ASCII, quotes and
 * backslashes replaced. */
static void json_text(char *out, size_t len, const char *s)
{
	size_t n = 0;
	for (; *s && n + 1 < len; s++)
		out[n++] = (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
		               ? '_'
		               : *s;
	out[n] = 0;
}

/* The flight_recorder entry's word on GPU records, as a JSON value. */
static void gpu_note(char *out, size_t len, const struct threads *ts, const char *lost,
                     const struct strb_crash_header *h, const struct strb_clock_map *map)
{
	char why[300];
	if (lost) {
		json_text(why, sizeof(why), lost);
		snprintf(out, len, "{\"state\": \"left out\", \"why\": \"%s\"}", why);
	} else if (ts->gpu) {
		const struct strb_pack_header *p = (const void *)ts->gpu;
		double age = (double)(strb_clock_map_to_epoch(map, h->now_ticks) -
		                      strb_clock_map_to_epoch(map, ts->gpu_ticks)) /
		             1e9;
		snprintf(out, len, "{\"state\": \"written\", \"age_s\": %.3f, \"left_out\": %" PRIu64 "}",
		         age, p->left_out);
	} else {
		snprintf(out, len, "{\"state\": \"%s\"}",
		         ts->have_gpu ? "none decoded before the signal" : "none: no GPU backend was on");
	}
}

static int add_meta(struct strobe_trace *t, const struct strb_crash_header *h, const struct threads *ts,
                    const struct strb_flight_counts *fc, const char *gpu)
{
	const char *thread = "";
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i].tid == h->tid)
			thread = ts->v[i].name;
	char name[256], json[2560], stats[1024], where[64];
	json_text(name, sizeof(name), thread);
	const char *sig = signal_name(h->signo);
	/* Where a fault hit, or who sent the signal. */
	if (h->code > 0)
		snprintf(where, sizeof(where), " at 0x%" PRIx64, h->fault_addr);
	else
		snprintf(where, sizeof(where), " sent by process %d", (int)h->sender_pid);
	int n = snprintf(json, sizeof(json),
	                 "{\"reason\": \"fatal signal %s%s on thread %d (%s)\", \"signal\": \"%s\", "
	                 "\"signal_number\": %d, \"si_code\": %d, ",
	                 sig, where, (int)h->tid, name, sig, (int)h->signo, (int)h->code);
	if (h->code > 0)
		n += snprintf(json + n, sizeof(json) - (size_t)n, "\"address\": \"0x%" PRIx64 "\", ",
		              h->fault_addr);
	else
		n += snprintf(json + n, sizeof(json) - (size_t)n, "\"sender_pid\": %d, ", (int)h->sender_pid);
	snprintf(json + n, sizeof(json) - (size_t)n,
	         "\"thread\": %d, \"thread_name\": \"%s\", \"window_s\": %.3f, \"aged_out\": %" PRIu64
	         ", \"kept_lost\": %" PRIu64 ", \"torn_threads\": %" PRIu64 ", \"damaged_chunks\": %" PRIu64
	         ", \"gpu_snapshot\": %s}",
	         (int)h->tid, name, (double)h->window_ns / 1e9, fc->aged_out, fc->kept_lost, fc->torn_threads,
	         ts->left_out, gpu);
	const struct strb_trace_stats *st = &t->stats;
	n = snprintf(stats, sizeof(stats),
	             "{\"version\": \"%s\", \"dropped_events\": %" PRIu64 ", \"truncated_names\": %" PRIu64
	             ", \"unfinished_ranges\": %" PRIu64 ", \"threads\": %" PRIu64
	             ", \"cpu_buffer_bytes\": %" PRIu64,
	             STROBE_VERSION_STRING, st->dropped_events, st->truncated_names, st->unfinished_ranges,
	             st->threads, st->buffer_bytes);
	if (st->gpu)
		n += snprintf(
		    stats + n, sizeof(stats) - (size_t)n,
		    ", \"gpu_records\": %" PRIu64 ", \"gpu_out_of_window\": %" PRIu64
		    ", \"gpu_dropped_records\": %" PRIu64 ", \"gpu_rejected_buffers\": %" PRIu64
		    ", \"gpu_discarded_buffers\": %" PRIu64 ", \"gpu_aged_buffers\": %" PRIu64
		    ", \"gpu_unmatched_correlations\": %" PRIu64 ", \"gpu_launches\": %" PRIu64
		    ", \"gpu_launches_without_kernel\": %" PRIu64 ", \"gpu_overlap_moved\": %" PRIu64,
		    st->gpu_records, st->gpu_out_of_window, st->gpu_dropped_records, st->gpu_rejected_buffers,
		    st->gpu_discarded_buffers, st->gpu_aged_buffers, st->gpu_unmatched_correlations,
		    st->gpu_launches, st->gpu_launches_without_kernel, st->gpu_overlap_moved);
	snprintf(stats + n, sizeof(stats) - (size_t)n, "}");
	struct strobe_arg meta[] = {
	    {.key = "flight_recorder", .kind = STROBE_ARG_JSON, .value.str = json},
	    {.key = "aged_out", .kind = STROBE_ARG_U64, .value.u64 = fc->aged_out},
	    {.key = "strobe", .kind = STROBE_ARG_JSON, .value.str = stats},
	    {.key = "host_name", .kind = STROBE_ARG_STRING, .value.str = h->host_name},
	};
	for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++)
		if ((meta[i].kind != STROBE_ARG_STRING || *meta[i].value.str) &&
		    strb_trace_set_meta(t, &meta[i]))
			return -ENOMEM;
	struct strobe_resource proc = {
	    .size = sizeof(proc),
	    .kind = STROBE_RESOURCE_PROCESS,
	    .device = t->pid,
	    .name = h->process_name,
	    .label = "CPU",
	    .sort_index = t->pid,
	};
	return strb_trace_add_resource(t, &proc);
}

static int decode(struct reader *r, const struct strb_crash_header *h, const struct threads *ts,
                  const char *out)
{
	struct strb_clock_map map = {.real_minus_mono = h->real_minus_mono};
	for (uint32_t i = 0; i < h->npoints; i++)
		if (strb_clock_map_add(&map, h->points[i].ticks, h->points[i].mono_ns))
			return fail(r, -ENOMEM, "out of memory");
	uint64_t from =
	    h->now_ticks - h->start_ticks > h->window_ticks ? h->now_ticks - h->window_ticks : h->start_ticks;
	struct strb_window w = {
	    .session = h->session,
	    .start_ticks = from,
	    .stop_ticks = h->now_ticks,
	    .start_ns = strb_clock_map_to_epoch(&map, from),
	    .stop_ns = strb_clock_map_to_epoch(&map, h->now_ticks),
	    .map = &map,
	    .mask = h->activity_mask,
	};
	struct strb_flight_counts fc = {0};
	struct strobe_trace *t = strb_trace_new();
	int rc = t ? 0 : -ENOMEM;
	if (!rc) {
		t->start_ns = w.start_ns;
		t->end_ns = w.stop_ns;
		t->pid = h->pid;
		t->activity_mask = w.mask;
		rc = strb_process_cpu_views(t, &w, ts->v, ts->n, ts->have_domains ? ts->domains : NULL, &fc);
	}
	char gpu[512], why[256], damaged[300];
	const char *lost = ts->gpu_lost;
	if (!rc && ts->gpu) {
		/* Decoded before the signal: what ended before its window is out. */
		uint64_t old = 0;
		size_t first = t->count;
		rc = strb_unpack_trace(t, ts->gpu, ts->gpu_len, w.start_ns, &old, why, sizeof(why));
		t->stats.gpu_out_of_window += old;
		if (!rc)
			rc = strb_gpu_relink(t, &w, first, t->count);
		if (rc == -EINVAL) {
			/* Checked before anything was added: the CPU work stands. */
			snprintf(damaged, sizeof(damaged), "they are damaged: %s", why);
			lost = damaged;
			rc = 0;
		}
	}
	if (!rc) {
		for (size_t i = 0; i < t->count; i++)
			if (t->acts[i].start_ns < t->start_ns)
				t->start_ns = t->acts[i].start_ns;
		gpu_note(gpu, sizeof(gpu), ts, lost, h, &map);
		rc = add_meta(t, h, ts, &fc, gpu);
	}
	strb_clock_map_free(&map);
	if (rc) {
		strobe_trace_destroy(t);
		return fail(r, rc, "out of memory");
	}
	rc = strobe_trace_save(t, out);
	strobe_trace_destroy(t);
	if (rc) {
		snprintf(r->err, r->errlen, "%s", strobe_last_error());
		r->rc = rc;
	}
	return rc;
}

int strb_flight_raw_convert(const char *raw, const char *out, char *err, size_t len)
{
	struct reader r = {.path = raw, .err = err, .errlen = len};
	if (len)
		err[0] = 0;
	int fd = open(raw, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		fail(&r, -errno, "%s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return r.rc;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < 0 || (uint64_t)st.st_size > SIZE_MAX / 2) {
		close(fd);
		return fail(&r, -EINVAL, "not a regular file");
	}
	r.len = (size_t)st.st_size;
	r.buf = malloc(r.len ? r.len : 1);
	if (!r.buf) {
		close(fd);
		return fail(&r, -ENOMEM, "out of memory for its %zu bytes", r.len);
	}
	size_t got = 0;
	while (got < r.len) {
		ssize_t n = read(fd, r.buf + got, r.len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fail(&r, n ? -errno : -EIO, "%s", n ? strerror(errno) : "shorter than it was");
			break;
		}
		got += (size_t)n;
	}
	close(fd);
	struct strb_crash_header h = {0};
	struct threads ts = {0};
	if (!r.rc && r.len == 0)
		fail(&r, -EINVAL, "empty: no fatal signal was written into it");
	if (!r.rc && !check_header(&r, &h)) {
		ts.ref_ticks = h.start_ticks;
		if (!read_threads(&r, &ts))
			decode(&r, &h, &ts, out);
	}
	free(ts.v);
	free(r.buf);
	return r.rc;
}

int strobe_internal_flight_convert(const char *raw, const char *out, char *err, size_t len)
{
	if (!raw || !out || !err || !len)
		return -EINVAL;
	return strb_flight_raw_convert(raw, out, err, len);
}

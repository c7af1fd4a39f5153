/* What one streaming pass over a trace file learns, shared by the commands
 * that present it (strobe summary as text or JSON, strobe report as HTML).
 *
 * an_read feeds the file through the trace reader once, keeping per-name
 * aggregates and one small record per complete event, then works out self
 * time, GPU busy time and idle gaps, kernel statistics, copy volume, launch
 * latency and communication/compute overlap. Process names of the form
 * "rank <N> · ..." (what strobe merge writes) fold pids into ranks; they
 * may come after the events, so everything per rank is computed at the end.
 *
 * Memory: fixed per name and per row, plus about 6 bytes per complete
 * event, packed ("the complete events, packed" below; exact self time and
 * exact percentiles need them all), plus 28 per GPU event and 28 per
 * runtime call for HTA's analyses and launch latency, which match
 * launches to GPU events once the read is done and then keep 28 per GPU
 * event and about 7 per runtime call that launched one, packed (pack.h;
 * the correlations are done with). Wall times
 * (wall.c) keep next to nothing, and 16 bytes per self stretch (at most
 * two per event) only in a trace where a child outlives its parent.
 *
 * The complete events are kept per row while the file is read, and laid
 * out row after row once it is done (each chunk handed back as it is
 * read), each row sorted alone: one pass over a row the file had in
 * order.
 *
 * A large plain file read in two halves at once (an_threads) holds the
 * same records, in two sets until they are merged; the merge hands the
 * second set's rows of complete events on as they are (their names
 * mapped by the layout), and moves its other records a chunk at a time,
 * handing each chunk's memory back.
 *
 * With two threads (an_threads), HTA's launch matching runs beside the
 * complete events' layout and self time; wall times and GPU busy time
 * beside HTA's critical paths (the peak), and kernel statistics and then
 * HTA's kernel sequences beside its per-device analyses. What goes beside
 * the peak keeps next to nothing, so the peak is the same as on one
 * thread (docs/benchmarks.md). */
#ifndef STROBE_TOOLS_ANALYSIS_H
#define STROBE_TOOLS_ANALYSIS_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/pack.h"
#include "common/varint.h"
#include "read/trace_reader.h"

/* Keys join a category (or name) and a name (or arg key) with a byte that
 * kineto never writes; the first part's length says where to split. */
#define AN_SEP "\x1f"

#define AN_BUCKETS  200 /* utilisation timeline: buckets across the trace window */
#define AN_TOP_GAPS 5   /* longest idle gaps kept per device */

/* ---- interned keys with one fixed-size item each ----------------------- */

struct an_table {
	size_t item_size;
	size_t n, cap;
	char **keys;
	unsigned char *items;
	uint32_t *slots; /* open addressing: index + 1, 0 when empty */
	size_t nslots;   /* a power of two */
};

/* An open-addressing set's slots (index + 1, 0 when empty) made afresh,
 * ns of them (a power of two), for its n entries, entry i at hash(set,
 * i); false, the old slots kept, when out of memory. */
bool an_slots_rebuild(uint32_t **slots, size_t *nslots, size_t ns, size_t n,
                      uint64_t (*hash)(const void *set, size_t i), const void *set);

/* The item for key, zeroed when new; NULL when out of memory. */
void *an_table_get(struct an_table *t, const char *key);
/* The item for key, or NULL when there is none. */
/* For tables cut at --top per rank, walked in rank order: whether this
 * row (of rank) is past the top; prev and in_rank carry the walk's state
 * (start them at INT64_MIN and 0). top 0 keeps every row. */
bool an_past_top(size_t top, int64_t rank, int64_t *prev, size_t *in_rank);
void *an_table_find(const struct an_table *t, const char *key);
void *an_table_item(const struct an_table *t, size_t i);
size_t an_table_index(const struct an_table *t, const void *item);
void an_table_free(struct an_table *t);

/* ---- what the pass collects ---------------------------------------------- */

struct an_count {
	uint64_t n;
};

/* total and self sum every event's time (JSON only: several threads, or
 * nested ranges of one name, can make them exceed the window); wall is
 * the union of the events' ranges over all rows, self_wall the union of
 * their self stretches, neither longer than the window. */
struct an_category {
	uint64_t events;
	int64_t total, self, wall, self_wall;
	uint32_t names;
};

struct an_name {
	uint32_t cat;     /* index in the xcats table */
	uint32_t cat_len; /* the name starts after cat_len + 1 key bytes */
	uint64_t count;
	int64_t total, self, max, wall, self_wall; /* as in an_category */
	uint32_t cats; /* its category's index in the cats table + 1, 0 before it is looked up */
	uint8_t hta;   /* what HTA's analyses make of the name (hta.c), once known */
	uint8_t gpu;   /* enum an_cat_kind of its category, set when first seen */
};

struct an_instant {
	uint32_t cat_len;
	uint64_t count;
};

struct an_series {
	uint32_t name_len;
	uint64_t count;
	double min, max, last;
	int64_t last_ts;
};

/* One pid. rank is -1 unless its process_name says "rank <N> · ...". */
struct an_process {
	char name[TR_SHORT_MAX];  /* process_name, unescaped */
	char label[TR_SHORT_MAX]; /* process_labels ("GPU 0", "CPU") */
	int64_t rank;
	uint64_t kernels;
	bool seen;
	bool named, labelled; /* a process_name, a process_labels event came */
};

/* One pid/tid row; its key is "<pid key>" AN_SEP "<tid key>", where an
 * ident key is a kind byte ('n', 's', '-') and the ident's text. */
struct an_row {
	uint32_t pid;     /* index in the pids table */
	uint32_t tid_off; /* where the tid's text starts in the key */
};

/* A row's thread_name (libkineto names stream rows "stream 7 ", strobe
 * its overlap rows "stream 7 (overlap 1)"), keyed as the rows are. */
struct an_tname {
	char name[TR_SHORT_MAX];
};

/* One complete event, as small as self time needs. */
struct an_xrec {
	uint32_t row, name;
	int64_t ts, dur;
};

/* ---- the complete events, packed (xstore.c) ------------------------------ */

/* Each complete event is kept as three varints (common/varint.h): its start
 * less the previous event's on its row (zigzag-coded: a row the file has
 * out of order goes back in time), its duration and its name's index.
 * Most take 5 or 6 bytes where struct an_xrec takes 24.
 *
 * While the file is read, each row's events are appended to chunks of
 * their own (the first AN_XCHUNK_FIRST bytes, each next eight times
 * larger up to AN_XCHUNK_MAX), each chunk coded on its own. The largest
 * are above the 1 MiB from which the CLI's allocations get mappings of
 * their own (tools/cmd/main.c), so that they go back to the system when
 * freed. an_xlayout then codes them again row after row into one array
 * (each chunk handed back as it is read), each row in start order (xrec
 * order: start, the enclosing event first, then name), and notes every
 * AN_XMARK-th event of a row so that a search by time decodes at most
 * AN_XMARK events. */
#define AN_XCHUNK_FIRST 64
#define AN_XCHUNK_MAX   (2048 * 1024)
#define AN_XREC_MAX     (2 * STRB_VARINT_MAX + 5) /* bytes: start, duration, name */
#define AN_XMARK        64

struct an_xchunk {
	struct an_xchunk *next;
	const uint32_t *names; /* set by the halves' merge: the events' names through this map */
	int64_t last;          /* the start the next event is coded against (0 first) */
	uint32_t n, len, cap;  /* events, bytes used, bytes of room */
	uint8_t bytes[];
};

struct an_xrow {
	struct an_xchunk *head, *tail;
};

/* Where a row's events are once laid out: bytes [off, the next row's
 * off), n events, its first mark. */
struct an_xspan {
	size_t off, n, mark;
};

/* Decoding starts at a mark: from the start ts (the previous event's, 0
 * for a row's first) at byte off. */
struct an_xmark {
	int64_t ts;
	size_t off;
};

/* A walk over one row's events once laid out. */
struct an_xcur {
	const uint8_t *p, *end;
	int64_t ts; /* the last event's start */
	uint32_t row;
};

/* The cursor's next event into *x (its row included), false past the last. */
static inline bool an_xnext(struct an_xcur *c, struct an_xrec *x)
{
	if (c->p >= c->end)
		return false;
	c->ts = (int64_t)((uint64_t)c->ts + strb_unzigzag(strb_varint_get(&c->p)));
	x->ts = c->ts;
	x->dur = (int64_t)strb_varint_get(&c->p);
	x->name = (uint32_t)strb_varint_get(&c->p);
	x->row = c->row;
	return true;
}

enum an_gpu_kind { AN_KERNEL, AN_NCCL, AN_MEMCPY, AN_MEMSET };

/* What the read makes of a complete event's category (an_name.gpu). */
enum an_cat_kind { AN_CAT_OTHER, AN_CAT_KERNEL, AN_CAT_COPY, AN_CAT_MEMSET, AN_CAT_LAUNCH };

/* GPU work: a kernel, copy or memset on a device (pid) and stream (tid). */
struct an_gpurec {
	uint32_t row, name;
	int64_t ts, dur;
	uint32_t kind, pid;
};

struct an_copy {
	uint32_t pid, dir; /* dir: index in the dirs table */
	uint64_t bytes;
	int64_t dur;
};

/* For launch latency: a launch (cuda_runtime or cuda_driver) or kernel
 * with a correlation (its "correlation" arg, else the id of the ac2g flow
 * right after it) that HTA's records (hgpus, an_hcall) do not hold with
 * that correlation. seq: the complete event's (an_hrec.seq). */
enum { AN_CORR_LAUNCH = 1, AN_CORR_KERNEL = 2 };
struct an_corr {
	uint64_t key;
	int64_t ts;
	uint32_t pid, seq;
	uint32_t what; /* AN_CORR_LAUNCH or AN_CORR_KERNEL */
};

/* The launch latencies of one rank's kernels (each from a launch in the
 * kernel's own rank). */
struct an_lats {
	int64_t rank;
	int64_t *v;
	size_t n, cap;
};

/* ---- what the end computes ----------------------------------------------- */

struct an_gap {
	int64_t start, dur;
};

struct an_stream {
	uint32_t row;
	uint64_t events;
	int64_t busy;
};

struct an_device {
	uint32_t pid;
	int64_t rank;
	uint64_t events;
	int64_t busy, first, last;
	uint64_t gaps; /* idle stretches between the device's first and last work */
	int64_t gap_total, gap_max;
	size_t ntop;
	struct an_gap top[AN_TOP_GAPS]; /* longest first */
	float buckets[AN_BUCKETS];      /* busy fraction of each slice of the window */
	struct an_stream *streams;
	size_t nstreams;
	bool has_comm; /* NCCL kernels ran on it */
	int64_t comm, compute, both;
};

struct an_kernel {
	int64_t rank;
	uint32_t name; /* index in the names table */
	uint64_t count;
	int64_t total, p50, p99, max;
};

struct an_copy_stat {
	int64_t rank;
	const char *dir;
	uint64_t count, bytes;
	int64_t total;
};

struct an_latency {
	int64_t rank;
	uint64_t kernels, matched;
	int64_t p50, p90, p99, max;
};

struct an_cpu_op {
	int64_t rank;
	uint32_t name;
	uint64_t count;
	int64_t total, self, wall, self_wall; /* as in an_category, per rank */
};

/* Per name: the cpu_op row last found for it and the rank it was found
 * for (at: the row's index + 1, 0 for none), so that a walk over the
 * events builds a (rank, name) key only when the rank changes. */
struct an_op_memo {
	int64_t rank;
	uint32_t at;
};

/* The item of t, a table keyed by rank and name as the cpu_op rows are,
 * for (rank, name): added (zeroed) when missing and add is set, else NULL
 * when missing or out of memory. memo has one entry per name. */
void *an_op_item(struct an_table *t, struct an_op_memo *memo, int64_t rank, uint32_t name, bool add);

/* One sample of a device's "GPU memory allocated (bytes)" track. */
struct an_memsample {
	uint32_t pid;
	int64_t ts;
	double bytes;
};

/* A device's memory timeline: its peak, when it was first reached, and
 * the op running then (the innermost cpu_op or user_annotation around that
 * moment, else the kernel on the device; UINT32_MAX for none). buckets:
 * the highest level in each slice of the trace window (-1: no sample yet). */
struct an_memory {
	uint32_t pid;
	int64_t rank;
	double peak, start, last;
	int64_t peak_ts;
	uint32_t op; /* index in the names table */
	uint64_t samples;
	double buckets[AN_BUCKETS];
};

/* ---- steps and HTA's analyses (hta.c) ------------------------------------ */

/* HTA 0.5's defaults: gaps between kernels below this are "kernel wait"
 * (consecutive_kernel_delay, 30 us); launch outliers (runtime_cutoff 50 us,
 * launch_delay_cutoff 100 us). */
#define AN_KERNEL_WAIT_NS    30000
#define AN_RUNTIME_CUTOFF_NS 50000
#define AN_LAUNCH_CUTOFF_NS  100000

/* HTA's kernel types, by name (hta.utils.get_kernel_type). */
enum an_ktype { AN_COMPUTATION, AN_COMMUNICATION, AN_MEMORY, AN_OTHER };

/* For records there are millions of: 4-byte aligned, so that a 64-bit
 * field costs no padding (x86-64 and AArch64 load it at any address). */
#define AN_PACKED __attribute__((packed, aligned(4)))

/* An event on a GPU stream as HTA counts one: a complete event with a
 * "stream" arg other than -1 (kernels, copies, memsets, syncs), or a
 * kernel, copy or memset without one (its tid is the stream). */
struct an_hrec {
	int64_t ts;
	uint32_t dur;  /* AN_HREC_LONG: longer, in an_trace.hwide (an_hrec_dur) */
	uint32_t lane; /* its device and stream: an_trace.lanes (an_hrec_pid, an_hrec_stream) */
	uint32_t name; /* its HTA kind (an_hrec_type, an_hrec_work) is its name's */
	uint32_t seq;  /* file order */
	union {
		uint32_t corr;   /* as read (an_trace.hgpus): its correlation (AN_HCORR_*), what
		                  * an_hta_launches matches it by */
		uint32_t launch; /* once an_hta_launches has matched it (an_launch): its launch's index
		                  * in hcpus + 1, 0 for none */
	};
} AN_PACKED;

_Static_assert(sizeof(struct an_hrec) == 28, "struct an_hrec: 28 bytes");

#define AN_HREC_LONG UINT32_MAX

/* A GPU stream of one device (pids-table entry pid), as GPU events
 * (an_hrec.lane) refer to it: a set of them, looked up by both. */
struct an_lane {
	int64_t stream;
	uint32_t pid;
};

struct an_lanes {
	struct an_lane *v;
	size_t n, cap;
	uint32_t *slots; /* open addressing: index + 1, 0 when empty */
	size_t nslots;   /* a power of two */
	uint32_t last;   /* the last one looked up */
};

/* A correlation as HTA's records hold it while the file is read (an_hrec,
 * an_hcall): below AN_HCORR_NONE, itself; AN_HCORR_NONE for none, and
 * AN_HCORR_WIDE for one kept in an_trace.hwide; AN_HCORR_LAT is set for
 * a kernel or launch for launch latency, with this correlation. */
#define AN_HCORR_NONE 0x7ffffffeu
#define AN_HCORR_WIDE 0x7fffffffu
#define AN_HCORR_LAT  0x80000000u

/* The duration and correlation (UINT64_MAX for none) of a GPU event
 * (an_hrec) or runtime call (an_hcpu) whose fields cannot hold both, by
 * file order (seq). */
struct an_hwide {
	uint32_t seq;
	int64_t dur;
	uint64_t corr;
};

/* The "memory bandwidth (GB/s)" arg of a MEMORY event (an_hrec) with one. */
struct an_bw {
	uint32_t seq;
	double bw;
};

/* A CPU-side event with a "correlation" arg (a runtime or driver call);
 * its pid is its row's. Those that GPU events were matched to are kept
 * packed (an_trace.hcpus, read with an_launch). */
struct an_hcpu {
	int64_t ts;
	uint32_t dur;       /* AN_HREC_LONG: longer, in an_trace.hwide (an_hcpu_dur) */
	uint32_t row, name; /* whether HTA counts it (an_hcpu_launch, an_hcpu_queue) is its name's */
	uint32_t seq;
};

/* An an_hcpu as read, with its correlation (AN_HCORR_*; AN_HCORR_LAT: a
 * launch for launch latency, cuda_runtime or cuda_driver): what
 * an_hta_launches matches GPU events by, before it keeps the an_hcpu
 * alone. */
struct an_hcall {
	struct an_hcpu c;
	uint32_t corr;
} AN_PACKED;

_Static_assert(sizeof(struct an_hcall) == 28, "struct an_hcall: 28 bytes");

/* One step (ProfilerStep#N, or a range named by --step-name) on one GPU
 * device of its rank (pid UINT32_MAX: the rank has no GPU work). The GPU
 * columns are the device's work clipped to the step's window. */
struct an_step {
	int64_t rank;
	uint32_t name, pid;
	int64_t number; /* N of ProfilerStep#N, else the step's ordinal in its rank */
	int64_t ts, dur, busy, compute, comm, memory, idle;
	bool outlier; /* dur > median + 3 MAD of its rank's steps (and > 1.1 median) */
};

/* HTA's per-rank analyses, per GPU device. */
struct an_breakdown {
	uint32_t pid;
	int64_t rank;
	uint64_t events; /* after HTA's step filter */
	/* get_temporal_breakdown: kernel_time = last end - first start; idle
	 * the part no event covers; compute the union of COMPUTATION
	 * events; non_compute the rest, split (strobe) into comm (union of
	 * COMMUNICATION not under compute), memory (MEMORY under neither),
	 * other. */
	int64_t kernel_time, idle, compute, non_compute, comm, memory, other;
	/* get_comm_comp_overlap: both / comm_union */
	int64_t comm_union, both;
	/* get_cuda_kernel_launch_stats */
	uint64_t launches, short_kernels, runtime_outliers, delay_outliers;
	int64_t delay_p50, delay_p99, delay_max, cpu_total, gpu_total;
	bool filtered; /* HTA's step filter applied (2 or more ProfilerStep names) */
};

/* _get_gpu_kernel_type_time: time while exactly this set of types ran. */
struct an_ktype_time {
	uint32_t pid;
	int64_t rank;
	unsigned mask; /* 1 << enum an_ktype for COMPUTATION, COMMUNICATION, MEMORY */
	int64_t time;
	double pct; /* of the device's sum over masks */
};

/* get_gpu_kernel_breakdown's rows: one per device, type and name. */
struct an_kname {
	uint32_t pid;
	int64_t rank;
	uint32_t type, name;
	uint64_t count;
	int64_t sum, min, max;
	double mean, std; /* std: sample standard deviation, 0 for one */
};

/* get_idle_time_breakdown: one per device and stream. */
struct an_idle {
	uint32_t pid;
	int64_t rank, stream;
	int64_t host_wait, kernel_wait, other;
};

/* get_memory_bw_summary: per device and copy kind (the name's first 11
 * characters, "Memcpy HtoD"; "Memset"), the total bandwidth of the copies
 * running at once, after each start and end where it is above 0. */
struct an_membw {
	uint32_t pid;
	int64_t rank;
	char kind[16];
	uint64_t count;
	double mean, min, max, p50; /* GB/s; p50 interpolated as pandas' describe() */
};

/* get_queue_length_summary: kernels launched but not finished, per stream. */
struct an_queue {
	uint32_t pid;
	int64_t rank, stream;
	uint64_t count;   /* changes of the queue length */
	double mean, p50; /* p50 interpolated linearly, as pandas' describe() */
	int64_t max;
};

/* HTA's get_frequent_cuda_kernel_sequences (kseq.c): the GPU events
 * (stream > 0) launched from inside one CPU op, in start order, counted
 * over the ops with the same name and sequence. */
#define AN_SEQ_MIN_LEN 3 /* HTA's min_pattern_len */
struct an_kseq {
	int64_t rank;
	uint32_t op;      /* the op's name (names table) */
	uint32_t kernels; /* GPU events in the sequence */
	uint64_t count;   /* ops that launched it */
	int64_t gpu, cpu; /* sums: the GPU events' durations, the ops' */
	uint32_t *names;  /* the GPU events' names (names table), in start order */
	char *pattern;    /* "op|kernel|kernel|...", as HTA writes it (its sort key) */
};

/* HTA's critical_path_analysis, per step (critpath.c): the longest path
 * through a graph of the step's CPU ops and runtime calls (nested, in
 * order per thread), the GPU events they launched (launch delays, gaps
 * between kernels on a stream) and syncs (a GPU event's end before the
 * sync call's end). Its time by HTA's bound_by classes. */
#define AN_CP_OPS 8 /* ops and kernels listed per step, most time on the path first */
struct an_cp_op {
	uint32_t name;
	bool gpu;
	int64_t time; /* of the path inside this op or GPU event (its own edges) */
};

struct an_cpath {
	int64_t rank;
	uint32_t name;  /* the step's */
	int64_t number; /* as in an_step */
	int64_t ts, dur;
	int64_t length;  /* the path's */
	int64_t cpu;     /* cpu_bound: CPU ops and calls */
	int64_t compute; /* gpu_compute_bound: GPU events other than NCCL */
	int64_t comm;    /* gpu_communication_bound: NCCL kernels */
	int64_t kk;      /* gpu_kernel_kernel_overhead: gaps between a stream's GPU events */
	int64_t launch;  /* gpu_kernel_launch_overhead: launch call start to GPU start */
	bool gpu_bound;  /* compute + comm + kk > cpu + launch */
	size_t nops;
	struct an_cp_op ops[AN_CP_OPS];
};

/* A flattened numeric member of the "strobe" metadata object. */
struct an_meta_num {
	char *key;
	const char *raw;
};

/* A row a recent complete event was on. */
struct an_last_row {
	bool valid;
	int pid_kind, tid_kind; /* enum tr_ident_kind */
	uint32_t row;
	char pid[TR_SHORT_MAX], tid[TR_SHORT_MAX];
};

/* The rows of the last few complete events: a trace's events alternate
 * between a handful of rows (a thread's launches, a stream's kernels), so
 * most find theirs here without building its key. */
#define AN_RECENT_ROWS 4
struct an_recent_rows {
	struct an_last_row row[AN_RECENT_ROWS];
	unsigned next; /* the entry a miss replaces */
};

/* The category (cats table) of the last event that was not a timed
 * complete event, whose names carry theirs (an_name.cats): mostly flows,
 * which all have one. */
struct an_last_cat {
	uint32_t at; /* index + 1, 0 for none */
	char cat[TR_SHORT_MAX];
};

struct an_trace {
	/* collected */
	struct an_table phs, cats, xcats, names, rows, pids, instants, counters, dirs, tnames;
	/* Every complete event (nx of them), packed (an_xcur). While the file
	 * is read they are kept per row in xrows (indexed as the rows table;
	 * nxrows entries, those past the table's rows empty); an_xlayout then
	 * puts them in xbytes, row after row, each row's in start order:
	 * xspan[r] (rows.n + 1 entries) says where row r's are. */
	size_t nx;
	struct an_xrow *xrows;
	size_t nxrows;
	uint32_t **xmaps; /* the names maps of the halves' merge, until the layout */
	size_t nxmaps;
	uint8_t *xbytes;
	struct an_xspan *xspan;
	struct an_xmark *xmarks;
	/* Complete events with "finished": false: ranges open when the trace
	 * was written (a flight recorder dump), each lasting to that moment;
	 * sorted by row, then outermost (earliest) first. */
	struct an_xrec *open;
	size_t nopen, capopen;
	struct an_gpurec *gpu; /* made from the complete events once HTA's analyses are done */
	size_t ngpu, capgpu;
	struct an_copy *copies;
	size_t ncopies, capcopies;
	struct an_recent_rows recent_rows;
	struct an_last_cat last_cat;
	uint32_t ph_at[256];   /* a one-character phase's index in phs + 1, 0 before it is seen */
	struct an_corr *corrs; /* launches and kernels HTA's records miss */
	size_t ncorrs, capcorrs;
	struct an_lats *lats; /* per rank, a latency per kernel with a launch found (hta.c) */
	size_t nlats, caplats;
	struct {
		bool active;
		bool launch;
		struct tr_ident pid, tid;
		int64_t ts;
		uint32_t seq;
	} pending_flow; /* the last launch or kernel without a "correlation" arg */
	bool timed;
	int64_t first_ts, last_end;
	uint64_t unfinished, unknown, untimed;
	char *strobe_meta;
	char *host_name;
	char *gpu_capture;  /* why GPU capture was off, when the trace says */
	bool has_dist_rank; /* the trace's "distributedInfo" names its rank */
	bool base_seen;     /* a "baseTimeNanoseconds" member came, valid or not */
	bool halves;        /* the file was read in two halves at once (an_threads) */
	bool has_base;      /* "baseTimeNanoseconds": ts 0 as ns since the epoch */
	int64_t base_ns;
	int64_t dist_rank;
	char key[TR_NAME_MAX + 2 * TR_SHORT_MAX + 8];

	/* computed by an_read */
	bool ranked;    /* some process name gave a rank */
	int64_t *ranks; /* the ranks of all pids, distinct, in output order (-1 last) */
	size_t nranks;
	struct an_device *devices;
	size_t ndevices;
	struct an_kernel *kernels; /* by rank, then total time, longest first */
	size_t nkernel_stats;
	struct an_copy_stat *copy_stats; /* by rank, then bytes */
	size_t ncopy_stats;
	struct an_latency *latency; /* one per rank with kernels */
	size_t nlatency;
	struct an_cpu_op *cpu_ops; /* cpu_op events by rank, then self time */
	size_t ncpu_ops;
	struct an_memsample *memsamples; /* collected */
	size_t nmemsamples, capmemsamples;
	struct an_memory *memory; /* per device with a memory track, in pid order */
	size_t nmemory;
	/* steps and HTA's analyses (hta.c) */
	const char *step_name; /* set before an_read: ranges with this name are steps */
	struct an_hrec *hgpus; /* as read (with correlations), until an_hta_launches makes hrecs of them */
	size_t nhgpus, caphgpus;
	struct an_hrec *hrecs;
	size_t nhrecs;
	struct an_lanes lanes;  /* the GPU streams of hgpus and hrecs */
	struct an_hwide *hwide; /* in seq order */
	size_t nhwide, caphwide;
	struct an_hcall *hcalls; /* as read, until an_hta_launches makes hcpus of them */
	size_t nhcalls, caphcalls;
	struct an_packed hcpus; /* the an_hcpus of hcalls that GPU events were matched to */
	struct an_bw *bws;      /* in seq order */
	size_t nbws, capbws;
	uint64_t nseq;
	struct an_step *steps; /* by rank, then start, then device */
	size_t nsteps, capsteps;
	/* from an_hta_paths to an_hta_devices: every step found (one per step
	 * and rank), and whether HTA's step filter applied */
	struct an_step *found_steps;
	size_t nfound_steps;
	bool step_filter;
	struct an_breakdown *breakdown; /* by rank, then pid */
	size_t nbreakdown;
	struct an_ktype_time *ktypes;
	size_t nktypes;
	struct an_kname *knames; /* by rank, device, type, then sum */
	size_t nknames;
	struct an_idle *idle; /* by rank, device, stream */
	size_t nidle;
	struct an_queue *queues;
	size_t nqueues;
	struct an_membw *membw; /* by rank, device, kind */
	size_t nmembw;
	/* set before an_read: ops whose name holds this are kernel sequence
	 * roots (HTA's operator_name); NULL: every outermost cpu_op */
	const char *seq_op;
	/* set before an_read (NULL: none): called on an_read's thread every
	 * 65 536 events while the file is read (pass "reading"), then once as
	 * the analyses after the read begin (pass "analysing"), with what the
	 * reader has counted so far */
	void (*progress_cb)(const char *pass, const struct tr_stats *st, void *user_arg);
	void *progress_arg;
	const struct tr_stats *reading; /* an_read's statistics, while it reads */
	struct an_kseq *kseqs;          /* by rank, then count (most first), then pattern */
	size_t nkseqs;
	struct an_cpath *cpaths; /* by rank, then step start */
	size_t ncpaths;
	/* per hrecs entry: what the critical paths ask of its stream's queue
	 * length after its launch and after its start (an_queue_lengths), from
	 * the launches to the critical paths */
	uint8_t *queue;
	void *meta_root; /* the "strobe" object, parsed */
	struct an_meta_num *meta;
	size_t nmeta, capmeta;
};

/* Start/end (async) ranges: strobe writes them on rows named "... start/end
 * ranges"; an_read moves their events into category "CAT" AN_ASYNC_CAT, so
 * they are counted apart from the nested ranges of the threads. */
#define AN_ASYNC_ROW "start/end ranges"
#define AN_ASYNC_CAT " (start/end ranges)"

/* Reads file ("-" = stdin) and computes everything above. Returns 0, or
 * nonzero with err holding one line that names the file and the problem.
 * st is filled in either way. a must be zeroed; free it with an_free. */
int an_read(struct an_trace *a, const char *file, struct tr_stats *st, char *err, size_t errlen);
void an_free(struct an_trace *a);

/* Threads an_read uses to read the file and for the analyses after it:
 * STROBE_TOOL_THREADS=1, one for both; =2, two for both; otherwise (unset,
 * or not a count) two for both when this process may run on two CPUs or
 * more, else one. Two threads read a plain JSON file of an_split_min bytes
 * or more in two halves at once, each into tables of its own, merged once
 * both are done; the results are the same either way. */
#define AN_THREADS_MAX 2
struct an_threads {
	unsigned read, analyses;
};
struct an_threads an_threads(void);
extern size_t an_split_min; /* 64 MiB; the tests lower it */

/* A part of the analyses on a second thread when there is one
 * (an_threads), beside what the calling thread does meanwhile:
 * an_beside_start sets fn(a) going there, an_beside_end waits for it and
 * returns rc (the caller's result so far) when it is a failure, else fn's.
 * With one thread, an_beside_end runs fn itself, unless rc is a failure.
 * The two sides must write apart. */
struct an_beside {
	struct an_trace *a;
	int (*fn)(struct an_trace *a);
	int rc;
	bool threaded;
	pthread_t th;
};
void an_beside_start(struct an_beside *b);
int an_beside_end(struct an_beside *b, int rc);

/* wall.c: moves start/end ranges' events into their own categories (after
 * the read, before self time), then computes every wall and self_wall
 * (after self time and the cpu_op table, which it sorts again by them). */
int an_split_async(struct an_trace *a);
int an_wall_compute(struct an_trace *a);
/* Sorts a->cpu_ops: by rank, then self wall time, then self time. */
void an_sort_cpu_ops(struct an_trace *a);

/* The GPU memory timeline (memory.c): the track's name, a sample of it on
 * pids-table entry pid, and the per-device peaks once everything is read. */
#define AN_MEMORY_TRACK "GPU memory allocated (bytes)"
int an_memory_add(struct an_trace *a, uint32_t pid, int64_t ts, double bytes);
int an_memory_compute(struct an_trace *a);
void an_memory_free(struct an_trace *a);

/* Appends to a growable array (n elements, room for *cap): AN_PUSH(arr,
 * n, cap, value) is 0, or -ENOMEM with the array as it was. */
bool an_grow(void **arr, size_t n, size_t *cap, size_t size);
#define AN_PUSH(arr, n, cap, ...)                                                                            \
	(an_grow((void **)&(arr), (n), &(cap), sizeof(*(arr))) ? ((arr)[(n)++] = (__VA_ARGS__), 0) : -ENOMEM)
/* qsort, for arrays that may be empty (and NULL). */
void an_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* s as strtoll reads a whole decimal integer (true), without its cost
 * in the common case; false when s is not one or leaves int64. */
bool an_parse_int(const char *s, int64_t *v);
/* x + y, held at INT64_MAX or INT64_MIN. */
int64_t an_sat_add(int64_t x, int64_t y);

/* Steps and HTA's analyses (hta.c): each complete event as read, then
 * everything once the devices are known. */
/* corr: the event's correlation when it is a launch or kernel for launch
 * latency (what: AN_CORR_LAUNCH or AN_CORR_KERNEL, else 0); *kept says
 * whether its record holds it. */
int an_hta_add(struct an_trace *a, const struct tr_event *ev, uint32_t row, uint32_t name, int64_t dur,
               uint32_t what, uint64_t corr, bool *kept);
/* First the launches: each kernel's launch latency and each GPU event's
 * launch (an_launch), from HTA's records alone; then, once the complete
 * events are laid out and self time is known, everything else. */
int an_hta_launches(struct an_trace *a);
/* Then the rest, in two parts, so that other work can go beside each:
 * an_hta_paths finds the steps, works out the critical paths and applies
 * HTA's step filter; an_hta_devices (which only reads the records, and
 * frees them when done) does the per-device analyses and the kernel
 * sequences. */
int an_hta_paths(struct an_trace *a);
int an_hta_devices(struct an_trace *a);
/* HTA's records of each GPU event and runtime call, once its per-device
 * analyses and kernel sequences are done with them. */
void an_hta_records_free(struct an_trace *a);
void an_hta_free(struct an_trace *a);
const char *an_ktype_name(unsigned type);
/* Whether name is one of the NULL-ended set. */
bool an_name_in(const char *name, const char *const *set);
/* The rank of a row's pid (-1 for none). */
int64_t an_row_rank(const struct an_trace *a, uint32_t row);
/* The category of names-table entry i. */
const char *an_name_cat(const struct an_trace *a, uint32_t i);
/* HTA's kind of a GPU event (enum an_ktype; a MEMORY event's bandwidth
 * is in an_trace.bws), and whether it is a kernel, copy or memset (HTA's
 * idle breakdown), from its name (an_name.hta, hta.c). */
unsigned an_hrec_type(const struct an_trace *a, const struct an_hrec *r);
bool an_hrec_work(const struct an_trace *a, const struct an_hrec *r);
/* A GPU event's or runtime call's duration, from a->hwide (an_hwide_at
 * its seq) where its own field cannot hold it; a GPU event's device and
 * stream, from its lane. */
const struct an_hwide *an_hwide_at(const struct an_trace *a, uint32_t seq);
static inline int64_t an_hrec_dur(const struct an_trace *a, const struct an_hrec *r)
{
	return r->dur != AN_HREC_LONG ? r->dur : an_hwide_at(a, r->seq)->dur;
}
static inline uint32_t an_hrec_pid(const struct an_trace *a, const struct an_hrec *r)
{
	return a->lanes.v[r->lane].pid;
}
static inline int64_t an_hrec_stream(const struct an_trace *a, const struct an_hrec *r)
{
	return a->lanes.v[r->lane].stream;
}
/* The lane of pid's stream in a->lanes, added when new; -ENOMEM. */
int an_lane_of(struct an_trace *a, uint32_t pid, int64_t stream, uint32_t *lane);
static inline int64_t an_hcpu_dur(const struct an_trace *a, const struct an_hcpu *l)
{
	return l->dur != AN_HREC_LONG ? l->dur : an_hwide_at(a, l->seq)->dur;
}
/* Whether a runtime call is in HTA's launch stats (cudaLaunchKernel(ExC),
 * cudaMemcpyAsync, cudaMemsetAsync) and in its queue length (those,
 * cuLaunchKernel and HIP's), from its name (an_name.hta, hta.c). */
bool an_hcpu_launch(const struct an_trace *a, const struct an_hcpu *l);
bool an_hcpu_queue(const struct an_trace *a, const struct an_hcpu *l);
/* Whether GPU event r has a launch and an_hcpu_queue counts it: its
 * launch's name alone unpacked. */
bool an_launch_queued(const struct an_trace *a, const struct an_hrec *r);
/* The CPU event with r's correlation in r's rank (the first in the file),
 * what an_hta_launches matched to r once launch latency was done, into
 * *l; false when r has none. */
enum { AN_HC_TS, AN_HC_DUR, AN_HC_ROW, AN_HC_NAME, AN_HC_SEQ, AN_HC_FIELDS }; /* as hcpus packs them */
static inline bool an_launch(const struct an_trace *a, const struct an_hrec *r, struct an_hcpu *l)
{
	if (!r->launch)
		return false;
	uint64_t f[AN_HC_FIELDS];
	an_pack_getn(&a->hcpus, r->launch - 1, f, AN_HC_FIELDS);
	*l = (struct an_hcpu){an_unpack_s64(f[AN_HC_TS]), (uint32_t)f[AN_HC_DUR], (uint32_t)f[AN_HC_ROW],
	                      (uint32_t)f[AN_HC_NAME], (uint32_t)f[AN_HC_SEQ]};
	return true;
}
/* One more launch latency of rank's (analysis.c). */
int an_lat_add(struct an_trace *a, int64_t rank, int64_t latency);
/* The launch latency percentiles per rank (a->latency) from the matched
 * a->lats, which it frees (analysis.c). */
int an_latency_compute(struct an_trace *a);
/* The frequent kernel sequences, from the hrecs kept by HTA's step filter. */
int an_kseq_compute(struct an_trace *a);
void an_kseq_free(struct an_trace *a);
/* Each GPU event's queue lengths as the critical paths ask for them
 * (a->queue), for the critical paths, which free them. */
int an_queue_lengths(struct an_trace *a);
/* The critical path of each step (as find_steps gives them: one per step
 * and rank), from every GPU event (hrecs sorted by rank, pid, start). */
int an_critpath_compute(struct an_trace *a, const struct an_step *steps, size_t nsteps);

/* The packed complete events (xstore.c). While the file is read: */
/* Appends an event to row r's; 0 or -ENOMEM. */
int an_xadd(struct an_trace *a, uint32_t r, int64_t ts, int64_t dur, uint32_t name);
/* Calls fn on each event of row r in file order; with rewrite, what fn
 * leaves in x (its name) is kept. Stops at fn's first nonzero result. */
int an_xrow_each(struct an_trace *a, uint32_t r, int (*fn)(struct an_trace *a, struct an_xrec *x, void *arg),
                 void *arg, bool rewrite);
/* Hands b's rows' events on to a after a's own (b read the file after
 * a's part): rows[i] is b's row i in a, names b's names in a (a frees
 * it, whatever the result, once the layout no longer needs it). */
int an_xmerge(struct an_trace *a, struct an_trace *b, const uint32_t *rows, uint32_t *names);
/* Lays the rows out (each sorted) in xbytes; 0 or -ENOMEM. */
int an_xlayout(struct an_trace *a);
void an_xfree(struct an_trace *a);
/* Once laid out: row r's events from its first, or from at most AN_XMARK
 * events before its first that starts at ts or later. */
void an_xrow(const struct an_trace *a, uint32_t r, struct an_xcur *c);
void an_xrow_from(const struct an_trace *a, uint32_t r, int64_t ts, struct an_xcur *c);
static inline size_t an_xrow_count(const struct an_trace *a, uint32_t r)
{
	return a->xspan && r < a->rows.n ? a->xspan[r].n : 0;
}

/* Every event, row after row: an_xall(a, &it), then an_xall_next. */
struct an_xall {
	const struct an_trace *a;
	struct an_xcur c;
};
void an_xall(const struct an_trace *a, struct an_xall *it);
static inline bool an_xall_next(struct an_xall *it, struct an_xrec *x)
{
	while (!an_xnext(&it->c, x)) {
		if ((size_t)it->c.row + 1 >= it->a->rows.n)
			return false;
		an_xrow(it->a, it->c.row + 1, &it->c);
	}
	return true;
}

/* The display name of names-table entry i (the part after its category). */
const char *an_name(const struct an_trace *a, uint32_t i);
/* The tid text of a row (the number, or the string). */
const char *an_row_tid(const struct an_trace *a, uint32_t row);
/* A stream row as the trace names it: its thread_name without trailing
 * blanks, else its tid's text. */
const char *an_row_label(const struct an_trace *a, uint32_t row);
/* The pid of a row (the ident's text). */
const char *an_row_pid(const struct an_trace *a, uint32_t row);

/* ---- sorted views -------------------------------------------------------- */

struct an_ref {
	uint32_t id;
	int64_t key;      /* sorted descending */
	const char *name; /* then ascending */
};

/* One ref per item of t, sorted by key(item) then name. When the keys hold
 * two parts, first_len_offset is the offset in the item of the first part's
 * uint32_t length and name is the second part; else UINT32_MAX. */
struct an_ref *an_refs_of(const struct an_table *t, uint32_t first_len_offset,
                          int64_t (*key)(const void *item));
/* The names of category cat, sorted by total or self time. */
struct an_ref *an_names_of(const struct an_trace *a, uint32_t cat, bool by_self, size_t *n);

/* "12.345 ms": three decimals in the largest unit that keeps a whole part. */
const char *an_fmt_dur(int64_t ns, char *buf, size_t len);
/* part as a percentage of whole (0 when whole is 0). */
double an_pct(int64_t part, int64_t whole);
/* to - from, held at INT64_MAX or INT64_MIN where it leaves int64. */
int64_t an_span(int64_t from, int64_t to);
/* The trace's span: first event start to last event end (0 when untimed). */
int64_t an_window(const struct an_trace *a);
/* A --top value: a count from 0 (all) to 1000000. False when it is not. */
bool an_parse_top(const char *text, size_t *top);
/* Rows shown of n under a --top limit (0 = all). */
size_t an_shown(size_t n, size_t top);
/* Where the nearest-rank percentile p (in percent) of n values lies in
 * their sorted order (0 for none): a sort's name_nth finds it unsorted. */
size_t an_rank_index(size_t n, unsigned p);
/* How a GPU pid is shown: its "rank N · ..." name, else "GPU 0 (pid 0)"
 * from its label, else "pid 0". */
const char *an_device_label(const struct an_trace *a, uint32_t pid, char *buf, size_t len);
/* "rank 3", or "no rank" for rank -1 (work outside any rank). */
const char *an_rank_label(int64_t rank, char *buf, size_t len);

/* What a read left out or could not use, as the summary, its JSON and
 * the report list it: label, JSON key, count. */
struct an_loss {
	const char *what, *key;
	uint64_t n;
};
#define AN_LOSSES 12
void an_losses(const struct an_trace *a, const struct tr_stats *st, struct an_loss out[AN_LOSSES]);

#endif

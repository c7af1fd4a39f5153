/* Raw crash dumps without a crash: the flight recorder's file beside the
 * output exists while it runs and goes when it stops unwritten; what the
 * handler writes (strb_flight_crash_write, called here directly) converts
 * to a trace; and a truncated or damaged file gives an error that names
 * what is wrong, never a crash (every truncation, thousands of random
 * byte changes, and each field the reader checks). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/flight_crash.h"
#include "core/capture.h"
#include "core/names.h"
#include "process/packed.h"
#include "strobe/strobe.h"
#include "testutil.h"

#define OTHER_TICKS 7000

static uint8_t *dump;
static size_t dump_len;
static pid_t other_tid;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int stage;

static void *other(void *arg)
{
	(void)arg;
	strobe_thread_set_name("other");
	other_tid = (pid_t)syscall(SYS_gettid);
	strobe_range_push("other_wait");
	for (int i = 0; i < OTHER_TICKS; i++) { /* several chunks */
		strobe_range_push("other_tick");
		strobe_range_pop();
	}
	pthread_mutex_lock(&lock);
	stage = 1;
	pthread_cond_broadcast(&cond);
	while (stage != 2)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	strobe_range_pop();
	return NULL;
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* Converts bytes as a raw dump: the status, the error in err. */
static int convert_bytes(const void *p, size_t n, char *err, size_t len)
{
	char raw[1200], out[1200];
	TU_FORMAT(raw, "%s/t.raw", tu_dir);
	TU_FORMAT(out, "%s/t.json", tu_dir);
	write_file(raw, p, n);
	return strb_flight_raw_convert(raw, out, err, len);
}

/* b converts, its metadata counting one torn thread and one chunk left
 * out; the trace, loaded. */
static yajl_val converts_torn(const uint8_t *b)
{
	char err[1024], out[1200];
	if (convert_bytes(b, dump_len, err, sizeof(err)))
		fail_msg("%s", err);
	TU_FORMAT(out, "%s/t.json", tu_dir);
	yajl_val root = tu_load_trace(out);
	yajl_val m = tu_get(root, "flight_recorder");
	assert_int_equal((int64_t)tu_get_num(m, "torn_threads"), 1);
	assert_int_equal((int64_t)tu_get_num(m, "damaged_chunks"), 1);
	return root;
}

static void expect_error(const void *p, size_t n, const char *needle)
{
	char err[1024];
	int rc = convert_bytes(p, n, err, sizeof(err));
	if (!rc)
		fail_msg("converted though it should say \"%s\"", needle);
	char want[1300];
	TU_FORMAT(want, "%s/t.raw: ", tu_dir);
	assert_memory_equal(err, want, strlen(want));
	tu_assert_contains(err, needle);
}

#define CORR 77

/* What a GPU snapshot would hold (process/packed.h): a launch on this
 * thread (inside "an op", open at the dump) and its kernel, and a kernel
 * that ended a minute ago, before the window. */
static void give_gpu_snapshot(void)
{
	struct strobe_trace *t = strb_trace_new();
	assert_non_null(t);
	t->pid = getpid();
	t->stats.gpu = true;
	t->stats.gpu_records = 3;
	int64_t now = (int64_t)strobe_now_ns();
	struct strobe_activity acts[] = {
	    {.size = sizeof(acts[0]),
	     .type = STROBE_ACTIVITY_CONCURRENT_KERNEL,
	     .name = "stale_kernel",
	     .start_ns = now - 60000000000,
	     .end_ns = now - 59000000000,
	     .device = 0,
	     .resource = 7,
	     .id = 5},
	    {.size = sizeof(acts[0]),
	     .type = STROBE_ACTIVITY_CUDA_RUNTIME,
	     .name = "cudaLaunchKernel",
	     .start_ns = now - 3000,
	     .end_ns = now - 2000,
	     .device = t->pid,
	     .resource = (int64_t)syscall(SYS_gettid),
	     .id = CORR},
	    {.size = sizeof(acts[0]),
	     .type = STROBE_ACTIVITY_CONCURRENT_KERNEL,
	     .name = "snap_kernel",
	     .start_ns = now - 1000,
	     .end_ns = now - 500,
	     .device = 0,
	     .resource = 7,
	     .id = CORR},
	};
	for (size_t i = 0; i < sizeof(acts) / sizeof(acts[0]); i++)
		assert_int_equal(strb_trace_add_copy(t, &acts[i]), 0);
	struct strobe_resource row = {.size = sizeof(row),
	                              .kind = STROBE_RESOURCE_PROCESS,
	                              .name = "GPU 0",
	                              .label = "GPU 0",
	                              .sort_index = 5000000};
	assert_int_equal(strb_trace_add_resource(t, &row), 0);
	void *block;
	size_t len;
	assert_int_equal(strb_pack_trace(t, SIZE_MAX, &block, &len), 0);
	strobe_trace_destroy(t);
	strb_flight_crash_set_gpu(block, len, strb_clock_ticks());
}

/* The GPU block of the dump in b: after the header, the threads and the
 * domain table. */
static struct strb_raw_gpu *gpu_block(uint8_t *b)
{
	size_t off = sizeof(struct strb_crash_header);
	for (;;) {
		uint32_t magic;
		memcpy(&magic, b + off, sizeof(magic));
		if (magic == STRB_RAW_GPU_MAGIC)
			return (void *)(b + off);
		if (magic == STRB_RAW_DOMAINS_MAGIC) {
			const struct strb_raw_domains *d = (const void *)(b + off);
			off += sizeof(*d) + d->count * STRB_RAW_DOMAIN_NAME;
			continue;
		}
		const struct strb_raw_thread *th = (const void *)(b + off);
		assert_int_equal(th->magic, STRB_RAW_THREAD_MAGIC);
		off += sizeof(*th) + th->kept_len + th->ring_len + sizeof(struct strb_raw_thread_end);
	}
}

/* A dump of two threads with open ranges: the recorder running, the
 * handler's writer called as a SIGSEGV at 0x1234 on this thread would. */
static int make_dump(void **state)
{
	if (tu_strobe_group_setup(state))
		return -1;
	char out[1200], raw[1300];
	snprintf(out, sizeof(out), "%s/run.json", tu_dir);
	snprintf(raw, sizeof(raw), "%s/run.crash-%d.raw", tu_dir, (int)getpid());
	struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .output = out);
	if (strobe_flight_start(&o))
		return -1;
	struct stat st;
	if (stat(raw, &st) || st.st_size != 0) /* opened empty at start */
		return -1;
	pthread_t th;
	if (pthread_create(&th, NULL, other, NULL))
		return -1;
	pthread_mutex_lock(&lock);
	while (stage != 1)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	strobe_range_push("outer");
	strobe_op_push("an op");
	for (int i = 0; i < 100; i++) {
		strobe_range_push("tick");
		strobe_counter("progress", i);
		strobe_range_pop();
	}
	give_gpu_snapshot();
	strobe_range_push("inner");
	/* A range in an annotation domain (as NVTX records one). */
	strb_capture_push(strb_domain_register("dump domain"), "in_domain", NULL);
	char path[1300];
	snprintf(path, sizeof(path), "%s/dump.raw", tu_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGSEGV;
	si.si_code = SEGV_MAPERR;
	si.si_addr = (void *)0x1234;
	int rc = fd < 0 ? -1 : strb_flight_crash_write(fd, SIGSEGV, &si, (pid_t)syscall(SYS_gettid));
	if (fd >= 0)
		close(fd);
	strb_capture_pop(strb_domain_register("dump domain"));
	strobe_range_pop();
	strobe_op_pop();
	strobe_range_pop();
	pthread_mutex_lock(&lock);
	stage = 2;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(th, NULL);
	if (rc || strobe_flight_stop())
		return -1;
	if (access(raw, F_OK) == 0) /* nothing was written into it: removed */
		return -1;
	dump = (uint8_t *)tu_read_file(path, &dump_len);
	return dump ? 0 : -1;
}

static int free_dump(void **state)
{
	free(dump);
	return tu_strobe_group_teardown(state);
}

static void test_converts(void **state)
{
	(void)state;
	char err[1024], out[1200];
	assert_int_equal(convert_bytes(dump, dump_len, err, sizeof(err)), 0);
	TU_FORMAT(out, "%s/t.json", tu_dir);
	yajl_val root = tu_load_trace(out);
	yajl_val m = tu_get(root, "flight_recorder");
	assert_string_equal(tu_get_str(m, "signal"), "SIGSEGV");
	assert_string_equal(tu_get_str(m, "address"), "0x1234");
	assert_int_equal((int64_t)tu_get_num(m, "thread"), (int64_t)getpid());
	assert_int_equal((int64_t)tu_get_num(m, "torn_threads"), 0);
	const char *open_ranges[][2] = {{"user_annotation", "outer"},
	                                {"cpu_op", "an op"},
	                                {"user_annotation", "inner"},
	                                {"user_annotation", "other_wait"}};
	for (size_t i = 0; i < sizeof(open_ranges) / sizeof(open_ranges[0]); i++) {
		yajl_val e = tu_find(root, "X", open_ranges[i][0], open_ranges[i][1]);
		assert_non_null(e);
		assert_true(YAJL_IS_FALSE(tu_get(tu_get(e, "args"), "finished")));
	}
	assert_int_equal((int64_t)tu_get_num(tu_find(root, "X", NULL, "other_wait"), "tid"), other_tid);
	assert_int_equal(tu_count(root, "X", "user_annotation", "tick"), 100);
	assert_int_equal(tu_count(root, "X", "user_annotation", "other_tick"), OTHER_TICKS);
	assert_int_equal(tu_count(root, "C", NULL, "progress"), 100);
	/* The GPU snapshot: its kernel, linked to the op open around its
	 * launch; the one older than the window counted, not written. */
	yajl_val k = tu_find(root, "X", "kernel", "snap_kernel");
	assert_non_null(k);
	double op = tu_get_num(tu_get(tu_find(root, "X", "cpu_op", "an op"), "args"), "External id");
	assert_true(op > 0);
	assert_true(tu_get_num(tu_get(k, "args"), "External id") == op);
	assert_true(tu_get_num(tu_get(tu_find(root, "X", "cuda_runtime", "cudaLaunchKernel"), "args"),
	                       "External id") == op);
	assert_null(tu_find(root, "X", "kernel", "stale_kernel"));
	assert_int_equal((int64_t)tu_get_num(tu_get(root, "strobe"), "gpu_out_of_window"), 1);
	assert_int_equal((int64_t)tu_get_num(tu_get(root, "strobe"), "gpu_records"), 3);
	yajl_val snap = tu_get(m, "gpu_snapshot");
	assert_string_equal(tu_get_str(snap, "state"), "written");
	assert_true(tu_get_num(snap, "age_s") >= 0 && tu_get_num(snap, "age_s") < 60);
	yajl_tree_free(root);
}

/* strobe convert, in a process that never saw the domain, names its row
 * from the dump's domain table. */
static void test_domain_names_travel_in_the_dump(void **state)
{
	(void)state;
	char raw[1200], out[1200], args[2500];
	TU_FORMAT(raw, "%s/domains.raw", tu_dir);
	TU_FORMAT(out, "%s/domains.json", tu_dir);
	write_file(raw, dump, dump_len);
	TU_FORMAT(args, "'%s' -o '%s'", raw, out);
	char *msg = NULL;
	assert_int_equal(tu_strobe("convert", args, 1, &msg), 0);
	free(msg);
	yajl_val root = tu_load_trace(out);
	yajl_val e = tu_find(root, "X", "dump domain", "in_domain");
	assert_non_null(e);
	assert_true(YAJL_IS_FALSE(tu_get(tu_get(e, "args"), "finished")));
	assert_string_equal(tu_get_str(tu_get(e, "args"), "domain"), "dump domain");
	/* Its row's name: "dump domain (THREAD)". */
	bool named = false;
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val m = YAJL_GET_ARRAY(evs)->values[i];
		const char *ph = tu_get_str(m, "ph"), *name = tu_get_str(m, "name");
		if (ph && !strcmp(ph, "M") && name && !strcmp(name, "thread_name") &&
		    tu_get_num(m, "tid") == tu_get_num(e, "tid")) {
			const char *row = tu_get_str(tu_get(m, "args"), "name");
			named = row && !strncmp(row, "dump domain (", 13);
		}
	}
	assert_true(named);
	yajl_tree_free(root);
}

static void test_every_truncation_is_named(void **state)
{
	(void)state;
	expect_error(dump, 0, "empty");
	expect_error(dump, 7, "not a strobe crash dump");
	for (size_t n = 8; n < dump_len; n += n < 2048 ? 1 : 7)
		expect_error(dump, n, "truncated");
	expect_error(dump, dump_len - 1, "truncated");
}

/* The offset of the first thread block's first ring record. */
static size_t first_record(void)
{
	const struct strb_raw_thread *th = (const void *)(dump + sizeof(struct strb_crash_header));
	assert_int_equal(th->magic, STRB_RAW_THREAD_MAGIC);
	assert_true(th->ring_len > 0);
	return sizeof(struct strb_crash_header) + sizeof(*th) + th->kept_len;
}

/* Gives the record at p kind `kind` (the low bits of its first word). */
static void set_kind(uint8_t *p, unsigned kind)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	w = (w & ~(uint64_t)((1u << STRB_REC_KIND_BITS) - 1)) | kind;
	memcpy(p, &w, sizeof(w));
}

/* b (a copy of the dump) with `what` done to its GPU block g converts,
 * with the GPU records left out for a reason that says `why`, and the CPU
 * work there. */
#define gpu_left_out(b, g, what, why)                                                                        \
	do {                                                                                                 \
		memcpy(b, dump, dump_len);                                                                   \
		what;                                                                                        \
		char err_[1024], out_[1200];                                                                 \
		if (convert_bytes(b, dump_len, err_, sizeof(err_)))                                          \
			fail_msg("%s", err_);                                                                \
		TU_FORMAT(out_, "%s/t.json", tu_dir);                                                        \
		yajl_val lost_ = tu_load_trace(out_);                                                        \
		yajl_val snap_ = tu_get(tu_get(lost_, "flight_recorder"), "gpu_snapshot");                   \
		assert_string_equal(tu_get_str(snap_, "state"), "left out");                                 \
		tu_assert_contains(tu_get_str(snap_, "why"), why);                                           \
		assert_null(tu_find(lost_, "X", "kernel", "snap_kernel"));                                   \
		assert_non_null(tu_find(lost_, "X", "cpu_op", "an op"));                                     \
		yajl_tree_free(lost_);                                                                       \
	} while (0)

static void test_damaged_fields_are_named(void **state)
{
	(void)state;
	uint8_t *b = malloc(dump_len + 8);
	assert_non_null(b);
	struct strb_crash_header *h = (void *)b;
	struct strb_raw_thread *th = (void *)(b + sizeof(*h));
#define DAMAGE(what, needle)                                                                                 \
	do {                                                                                                 \
		memcpy(b, dump, dump_len);                                                                   \
		what;                                                                                        \
		expect_error(b, dump_len, needle);                                                           \
	} while (0)
	DAMAGE(b[0] = 'X', "not a strobe crash dump");
	DAMAGE(h->version = 5, "format version 5; this strobe reads version 4 only");
	/* Older dumps record ranges in another layout: refused, named. */
	for (uint32_t v = 1; v < 4; v++) {
		char want[128];
		snprintf(want, sizeof(want),
		         "format version %u, whose ranges are recorded in an older layout", v);
		DAMAGE(h->version = v, want);
	}
	struct strb_raw_gpu *g = gpu_block(b);
	DAMAGE(g->size = 3, "the GPU records' header at byte");
	DAMAGE(g->len += 8, "no end marker after the GPU records");
	/* Damaged inside, or replaced while the handler wrote it: the GPU
	 * records are left out with the reason, the rest converts. */
	gpu_left_out(b, g, ((uint8_t *)(g + 1))[0] = 'X',
	             "they are damaged: it does not begin with STRBPACK");
	gpu_left_out(b, g, ((struct strb_pack_header *)(g + 1))->nacts = 1000,
	             "they are damaged: its parts take");
	gpu_left_out(b, g, g->seq++, "being replaced");
	DAMAGE(h->byte_order = 0x04030201u, "another byte order");
	DAMAGE(h->size = 8, "the header says it has 8 bytes");
	DAMAGE(h->pid = 0, "process id 0");
	DAMAGE(h->signo = SIGTERM, "none of the fatal ones");
	DAMAGE(h->npoints = 1, "1 clock samples");
	DAMAGE(h->points[1].ticks = h->points[0].ticks, "clock sample 1 does not come after sample 0");
	DAMAGE(h->now_ticks = h->start_ticks - 1, "before the flight recorder's start");
	DAMAGE(th->magic = 0x12345678, "neither a thread block nor the end (0x12345678)");
	DAMAGE(th->size = 7, "says it has 7 bytes");
	DAMAGE(th->ring_len += 8, "inconsistent lengths");
	DAMAGE(th->kept_len = 12, "inconsistent lengths");
	DAMAGE(th->tail = 100, "inconsistent lengths");
	size_t rec = first_record();
	DAMAGE(set_kind(b + rec, 15), "is damaged: kind 15 is unknown");
	DAMAGE(((struct strb_rec *)(b + rec))->name_len = 65000, "run past its chunk");
	struct strb_crash_end *end = (void *)(b + dump_len - sizeof(*end));
	DAMAGE(end->threads = 9, "the end marker counts 9 threads, the file holds 2");
	memcpy(b, dump, dump_len);
	memset(b + dump_len, 0, 8);
	expect_error(b, dump_len + 8, "8 bytes follow the end marker");

	/* A ring copied while its thread recycled it: the damaged chunk is
	 * left out and counted, the rest converts. */
	memcpy(b, dump, dump_len);
	th->seq = 1;
	set_kind(b + rec, 15);
	yajl_val root = converts_torn(b);
	yajl_tree_free(root);
	free(b);
#undef DAMAGE
}

/* The block of thread tid in b. */
static struct strb_raw_thread *block_of(uint8_t *b, pid_t tid)
{
	size_t off = sizeof(struct strb_crash_header);
	for (;;) {
		struct strb_raw_thread *th = (void *)(b + off);
		assert_int_equal(th->magic, STRB_RAW_THREAD_MAGIC);
		if (th->tid == tid)
			return th;
		off += sizeof(*th) + th->kept_len + th->ring_len + sizeof(struct strb_raw_thread_end);
	}
}

/* A torn copy whose oldest chunk was rewritten with newer records: that
 * chunk is left out (with what it held: here the push of "other_wait"),
 * the others pair as they should. */
static void test_rewritten_chunk_is_left_out(void **state)
{
	(void)state;
	uint8_t *b = malloc(dump_len);
	assert_non_null(b);
	memcpy(b, dump, dump_len);
	struct strb_raw_thread *th = block_of(b, other_tid);
	assert_true(th->ring_len > 3 * STRB_TBUF_CHUNK);
	uint8_t *ring = (uint8_t *)(th + 1) + th->kept_len;
	memcpy(ring, ring + 2 * STRB_TBUF_CHUNK, STRB_TBUF_CHUNK);
	th->seq = 2;
	((struct strb_raw_thread_end *)(ring + th->ring_len))->seq = 4;
	yajl_val root = converts_torn(b);
	size_t ticks = tu_count(root, "X", "user_annotation", "other_tick");
	assert_true(ticks > OTHER_TICKS / 2 && ticks < OTHER_TICKS);
	yajl_val evs = tu_events(root);
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val dur = tu_get(YAJL_GET_ARRAY(evs)->values[i], "dur");
		assert_true(!dur || YAJL_GET_DOUBLE(dur) >= 0);
	}
	/* The other thread's copy is whole. */
	assert_non_null(tu_find(root, "X", "user_annotation", "outer"));
	assert_int_equal(tu_count(root, "X", "user_annotation", "tick"), 100);
	yajl_tree_free(root);
	free(b);
}

/* Random byte changes: each converts to valid JSON or says why not. */
static void test_random_damage_never_crashes(void **state)
{
	(void)state;
	uint8_t *b = malloc(dump_len);
	assert_non_null(b);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int converted = 0, refused = 0;
	char out[1200];
	TU_FORMAT(out, "%s/t.json", tu_dir);
	for (int i = 0; i < 1500; i++) {
		memcpy(b, dump, dump_len);
		int changes = 1 + (int)(tu_xorshift(&seed) % 4);
		for (int c = 0; c < changes; c++) {
			/* Mostly the header and the blocks' fields, where the checks are. */
			size_t span =
			    tu_xorshift(&seed) % 2 ? dump_len : sizeof(struct strb_crash_header) + 256;
			b[tu_xorshift(&seed) % (span < dump_len ? span : dump_len)] =
			    (uint8_t)tu_xorshift(&seed);
		}
		char err[1024] = "";
		if (convert_bytes(b, dump_len, err, sizeof(err)) == 0) {
			if (converted++ % 50 == 0)
				yajl_tree_free(tu_load_trace(out));
		} else {
			assert_true(strlen(err) > 0);
			refused++;
		}
	}
	assert_true(converted > 0);
	assert_true(refused > 0);
	free(b);
}

/* The tid of this process's thread named name, or 0. */
static pid_t thread_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	pid_t found = 0;
	for (struct dirent *e; d && !found && (e = readdir(d));) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
		    comm[strlen(name)] == '\n')
			found = (pid_t)atoi(e->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* A fault on a thread of the recorder's own (the GPU snapshot thread
 * decodes and allocates every second) writes the dump as on any thread:
 * with the fault's signal blocked there, the kernel would kill the process
 * at once with no handler run. The signal is sent to that thread here. */
static void test_fault_on_the_recorders_thread_is_dumped(void **state)
{
	(void)state;
	char out[1200], raw[1300], json[1300], err[1024];
	TU_FORMAT(out, "%s/snapfault.json", tu_dir);
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		/* The handler then chains to the default (not cmocka's, nor a
		 * sanitizer's): the child dies of the signal. */
		signal(SIGSEGV, SIG_DFL);
		struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .output = out);
		if (strobe_flight_start(&o))
			_exit(2);
		strobe_range_push("before_the_fault");
		pid_t snap = 0;
		for (int i = 0; i < 2000 && !(snap = thread_named("strobe-gpu-snap")); i++)
			usleep(1000);
		if (!snap || write(fds[1], &snap, sizeof(snap)) != sizeof(snap))
			_exit(3);
		syscall(SYS_tgkill, getpid(), snap, SIGSEGV);
		sleep(3); /* a blocked signal stays pending */
		_exit(4);
	}
	close(fds[1]);
	pid_t snap = 0;
	assert_int_equal(read(fds[0], &snap, sizeof(snap)), sizeof(snap));
	close(fds[0]);
	int st = 0;
	assert_int_equal(waitpid(p, &st, 0), p);
	if (WIFEXITED(st))
		fail_msg("the child exited %d: the signal was not handled", WEXITSTATUS(st));
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	TU_FORMAT(raw, "%s/snapfault.crash-%d.raw", tu_dir, (int)p);
	TU_FORMAT(json, "%s/snapfault.crash.json", tu_dir);
	if (strb_flight_raw_convert(raw, json, err, sizeof(err)))
		fail_msg("convert: %s", err);
	yajl_val root = tu_load_trace(json);
	yajl_val m = tu_get(root, "flight_recorder");
	assert_string_equal(tu_get_str(m, "signal"), "SIGSEGV");
	assert_int_equal((int64_t)tu_get_num(m, "thread"), (int64_t)snap);
	yajl_val e = tu_find(root, "X", "user_annotation", "before_the_fault");
	assert_non_null(e);
	assert_true(YAJL_IS_FALSE(tu_get(tu_get(e, "args"), "finished")));
	yajl_tree_free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_converts),
	    cmocka_unit_test(test_domain_names_travel_in_the_dump),
	    cmocka_unit_test(test_every_truncation_is_named),
	    cmocka_unit_test(test_damaged_fields_are_named),
	    cmocka_unit_test(test_rewritten_chunk_is_left_out),
	    cmocka_unit_test(test_random_damage_never_crashes),
	    cmocka_unit_test(test_fault_on_the_recorders_thread_is_dumped),
	};
	return cmocka_run_group_tests(tests, make_dump, free_dump);
}

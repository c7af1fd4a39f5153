/* Export speed: a trace of N events written as plain JSON, gzip, zstd and
 * Perfetto protobuf, to a memory-backed directory (tmpfs) and to disk, each
 * the median of repeated saves. Reports events/s, MB/s of plain JSON
 * equivalent, file size, bytes per event and size against plain JSON;
 * then the same mix with N distinct op names (10 000 by default) as plain
 * JSON and Perfetto into tmpfs (sizes against each other: names that do not
 * repeat often make interning pay less); then plain and zstd JSON with one
 * thread against every CPU.
 * Usage: bench_export [events] [runs] [tmpfs-dir] [disk-dir] [distinct-names]
 */
#include <sched.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "strobe/strobe.h"

static const char *const kinds[] = {".json", ".json.gz", ".json.zst", ".pftrace"};

/* Wall seconds of one save; *cpu (when not NULL) gets the process's CPU
 * seconds in it. */
static double save_secs(strobe_trace *t, const char *path, double *cpu)
{
	int64_t t0 = bench_now_ns();
	double c0 = bench_cpu_now_s();
	if (strobe_trace_save(t, path)) {
		fprintf(stderr, "save %s: %s\n", path, strobe_last_error());
		exit(1);
	}
	if (cpu)
		*cpu = bench_cpu_now_s() - c0;
	return (double)(bench_now_ns() - t0) / 1e9;
}

/* Plain and zstd JSON into tmpfs with 1 thread and with every CPU
 * (STROBE_EXPORT_THREADS), alternating, the median of each; and the time
 * to write the finished file's bytes alone (the part that stays on one
 * thread), from which the time on more cores is estimated. */
static void threads_table(strobe_trace *t, size_t n, const char *dir, int runs)
{
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &all);
	sched_setaffinity(0, sizeof(all), &all);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	char many[16];
	snprintf(many, sizeof(many), "%ld", cpus);
	printf("\nparallel export into tmpfs: 1 thread against %ld (STROBE_EXPORT_THREADS), alternating\n",
	       cpus);
	printf("%-10s %14s %14s %8s %10s %10s %14s %14s\n", "format", "1 thread ev/s", "N threads ev/s",
	       "speedup", "CPU s (1)", "CPU s (N)", "write-only s", "16 cores ev/s");
	for (size_t k = 0; k < 3; k += 2) {
		char path[4096], copy[4096];
		snprintf(path, sizeof(path), "%s/strobe-bench-threads%s", dir, kinds[k]);
		snprintf(copy, sizeof(copy), "%s/strobe-bench-copy%s", dir, kinds[k]);
		double *one = calloc((size_t)runs, sizeof(double)),
		       *nth = calloc((size_t)runs, sizeof(double));
		double *wr = calloc((size_t)runs, sizeof(double)), *c1 = calloc((size_t)runs, sizeof(double));
		double *cn = calloc((size_t)runs, sizeof(double));
		for (int r = 0; r < runs; r++) {
			setenv("STROBE_EXPORT_THREADS", "1", 1);
			one[r] = save_secs(t, path, &c1[r]);
			setenv("STROBE_EXPORT_THREADS", many, 1);
			nth[r] = save_secs(t, path, &cn[r]);
			/* The file's bytes written again, as the writer thread does. */
			FILE *f = fopen(path, "rb");
			fseek(f, 0, SEEK_END);
			long size = ftell(f);
			rewind(f);
			char *buf = malloc((size_t)size);
			size_t got = fread(buf, 1, (size_t)size, f);
			fclose(f);
			int64_t t0 = bench_now_ns();
			FILE *o = fopen(copy, "wb");
			fwrite(buf, 1, got, o);
			fclose(o);
			wr[r] = (double)(bench_now_ns() - t0) / 1e9;
			free(buf);
			unlink(copy);
		}
		unsetenv("STROBE_EXPORT_THREADS");
		double s1 = bench_median(one, runs), sn = bench_median(nth, runs), w = bench_median(wr, runs);
		/* On paper: the formatting (all but the write) splits over 16
		 * threads, the writer's part does not; whichever is longer. */
		double f16 = (s1 - w) / 16 > w ? (s1 - w) / 16 : w;
		printf("%-10s %14.0f %14.0f %7.2fx %10.3f %10.3f %14.3f %14.0f\n", kinds[k], (double)n / s1,
		       (double)n / sn, s1 / sn, bench_median(c1, runs), bench_median(cn, runs), w,
		       (double)n / f16);
		unlink(path);
		free(one);
		free(nth);
		free(wr);
		free(c1);
		free(cn);
	}
}

/* Records the mix: ops with nested annotations, instants and counters;
 * with names > 0, the ops cycle through that many distinct names. */
static strobe_trace *record(long events, long names)
{
	char cfg[128];
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=%ld", events * 64 / (1 << 20) + 64);
	strobe_prepare(0, cfg);
	strobe_start();
	char name[64] = "aten::linear";
	for (long i = 0; i < events; i += 4) {
		if (names > 0)
			snprintf(name, sizeof(name), "aten::op_%ld", (i / 4) % names);
		strobe_op_push(name);
		strobe_range_push("encoder.layer.attention");
		strobe_range_pop();
		strobe_op_pop();
		strobe_instant("step");
		strobe_counter("queue_depth", (double)(i & 7));
	}
	strobe_trace *t = NULL;
	strobe_stop(&t);
	return t;
}

static void table_head(void)
{
	printf("%-8s %-10s %12s %10s %12s %10s %8s\n", "where", "format", "events/s", "MB/s", "file MB",
	       "B/event", "vs json");
}

/* One row: the median of runs saves of t as dir/stem + kinds[k]; the
 * plain JSON's size (kinds[0], the first row) goes into *json_bytes. */
static void size_row(strobe_trace *t, const char *dir, const char *stem, const char *where, size_t k,
                     int runs, double *json_bytes)
{
	size_t n = strobe_trace_activity_count(t);
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s%s", dir, stem, kinds[k]);
	double *secs = calloc((size_t)runs, sizeof(double));
	struct stat st = {0};
	for (int r = 0; r < runs; r++) {
		secs[r] = save_secs(t, path, NULL);
		stat(path, &st);
	}
	if (k == 0)
		*json_bytes = (double)st.st_size;
	double s = bench_median(secs, runs);
	printf("%-8s %-10s %12.0f %10.1f %12.1f %10.1f %8.3f\n", where, kinds[k], (double)n / s,
	       *json_bytes / s / 1e6, (double)st.st_size / 1e6, (double)st.st_size / (double)n,
	       (double)st.st_size / *json_bytes);
	unlink(path);
	free(secs);
}

/* Plain JSON and Perfetto of a trace with many distinct names, into dir. */
static void names_table(long events, long names, const char *dir, int runs)
{
	strobe_trace *t = record(events, names);
	printf("\n%zu events, %ld distinct op names, into tmpfs\n", strobe_trace_activity_count(t), names);
	table_head();
	double json_bytes = 0;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k += 3)
		size_row(t, dir, "strobe-bench-names", "tmpfs", k, runs, &json_bytes);
	strobe_trace_destroy(t);
}

int main(int argc, char **argv)
{
	long events = argc > 1 ? atol(argv[1]) : 1000000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	const char *mem_dir = argc > 3 ? argv[3] : "/dev/shm";
	const char *disk_dir = argc > 4 ? argv[4] : ".";
	long names = argc > 5 ? atol(argv[5]) : 10000;
	if (events < 10 || runs < 1 || names < 1) {
		fprintf(stderr, "usage: bench_export [events >= 10] [runs >= 1] [tmpfs-dir] [disk-dir] "
		                "[distinct-names >= 1]\n");
		return 2;
	}
	bench_pin(0);
	strobe_init(NULL);
	/* A realistic mix: ops with nested annotations, instants and counters. */
	strobe_trace *t = record(events, 0);
	size_t n = strobe_trace_activity_count(t);
	printf("%zu events; median of %d saves\n", n, runs);
	table_head();
	const char *dirs[] = {mem_dir, disk_dir};
	const char *where[] = {"tmpfs", "disk"};
	double json_bytes = 0;
	for (int d = 0; d < 2; d++)
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
			size_row(t, dirs[d], "strobe-bench-export", where[d], k, runs, &json_bytes);
	strobe_trace_destroy(t);
	names_table(events, names, mem_dir, runs);
	t = record(events, 0);
	threads_table(t, n, mem_dir, runs);
	strobe_trace_destroy(t);
	return 0;
}

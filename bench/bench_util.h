/* Small helpers shared by the benchmarks: pinning, timing, medians, and
 * the arguments, save phase and report of the backend benchmarks. */
#ifndef STROBE_BENCH_UTIL_H
#define STROBE_BENCH_UTIL_H

#include <malloc.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "strobe/strobe.h"

static inline int64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The calling thread's CPU time (user and system, page faults included):
 * unlike the wall clock, it does not count the time other processes hold
 * the CPU, so a loop timed with it reads the same on a busy machine. */
static inline int64_t bench_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Pins the calling thread to one CPU; returns 0 or -1 (then results are noisier). */
static inline int bench_pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu % CPU_SETSIZE, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Resident set size in bytes. */
static inline long bench_rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * 4096;
}

/* Process CPU time in seconds. */
static inline double bench_cpu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The kernel's part of the process CPU time in seconds. */
static inline double bench_sys_now_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* All CPUs' jiffies, total and stolen, from /proc/stat (0 if unreadable). */
static inline void bench_cpu_jiffies(double *total, double *steal)
{
	unsigned long long v[8] = {0};
	FILE *f = fopen("/proc/stat", "r");
	*total = *steal = 0;
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
	           &v[6], &v[7]) == 8) {
		for (int i = 0; i < 8; i++)
			*total += (double)v[i];
		*steal = (double)v[7];
	}
	fclose(f);
}

/* A point in time: wall, process CPU, its kernel part, and the machine's jiffies. */
struct bench_mark {
	int64_t wall_ns;
	double cpu_s, sys_s, jiffies, steal;
};

static inline struct bench_mark bench_mark_now(void)
{
	struct bench_mark m = {bench_now_ns(), bench_cpu_now_s(), bench_sys_now_s(), 0, 0};
	bench_cpu_jiffies(&m.jiffies, &m.steal);
	return m;
}

/* The share of all CPUs' time the hypervisor stole between a and b. */
static inline double bench_stolen(struct bench_mark a, struct bench_mark b)
{
	return b.jiffies > a.jiffies ? (b.steal - a.steal) / (b.jiffies - a.jiffies) : 0;
}

/* The backend benchmarks: [launches] [runs] [tmpfs-dir]. */
#define BENCH_MAX_RUNS 16

struct bench_args {
	long launches;
	int runs;
	const char *dir;
};

/* Reads the arguments (default 5000000 launches, 3 runs, /dev/shm); on a
 * bad one prints the usage and returns 2, else 0. */
static inline int bench_parse_args(int argc, char **argv, const char *name, long max_launches,
                                   struct bench_args *a)
{
	a->launches = argc > 1 ? atol(argv[1]) : 5000000;
	a->runs = argc > 2 ? atoi(argv[2]) : 3;
	a->dir = argc > 3 ? argv[3] : "/dev/shm";
	if (a->launches < 1 || a->launches > max_launches || a->runs < 1 || a->runs > BENCH_MAX_RUNS) {
		fprintf(stderr, "usage: %s [launches 1..%ge9] [runs 1..%d] [tmpfs-dir]\n", name,
		        (double)max_launches / 1e9, BENCH_MAX_RUNS);
		return 2;
	}
	return 0;
}

/* What a run's trace came to, measured by bench_save. */
struct bench_trace_size {
	size_t activities;
	long long bytes; /* of the JSON file, -1 if unknown */
	long long held;  /* heap bytes the trace held: in use before its destroy, less after */
};

/* Heap bytes in use (malloc's arenas and its mmapped blocks). */
static inline long long bench_heap_bytes(void)
{
	struct mallinfo2 m = mallinfo2();
	return (long long)(m.uordblks + m.hblkhd);
}

/* Saves t as plain JSON to dir/NAME.PID.json, marks *done right after the
 * save, measures and removes the file, and destroys t. Returns 0 or -1
 * (with the error on stderr). */
static inline int bench_save(const char *name, strobe_trace *t, const char *dir, struct bench_mark *done,
                             struct bench_trace_size *size)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s.%d.json", dir, name, (int)getpid());
	int rc = strobe_trace_save(t, path);
	*done = bench_mark_now();
	struct stat st;
	size->bytes = rc == 0 && stat(path, &st) == 0 ? (long long)st.st_size : -1;
	unlink(path);
	size->activities = strobe_trace_activity_count(t);
	long long heap = bench_heap_bytes();
	strobe_trace_destroy(t);
	size->held = heap - bench_heap_bytes();
	if (rc) {
		fprintf(stderr, "%s: save to %s failed: %s\n", name, path, strobe_last_error());
		return -1;
	}
	return 0;
}

/* The stop and save phases of every run, in seconds. */
struct bench_phases {
	double stop[BENCH_MAX_RUNS], save[BENCH_MAX_RUNS], stop_cpu[BENCH_MAX_RUNS], save_cpu[BENCH_MAX_RUNS];
};

/* Their medians, and the best runs. */
struct bench_summary {
	double stop, save, best_stop, best_save, stop_cpu, save_cpu;
};

static inline struct bench_summary bench_summarise(struct bench_phases *p, int runs)
{
	struct bench_summary s;
	s.stop = bench_median(p->stop, runs);
	s.save = bench_median(p->save, runs);
	/* After the medians: the arrays are sorted. */
	s.best_stop = p->stop[0];
	s.best_save = p->save[0];
	s.stop_cpu = bench_median(p->stop_cpu, runs);
	s.save_cpu = bench_median(p->save_cpu, runs);
	return s;
}

static inline void bench_report_head(void)
{
	printf("%-44s %10s %16s\n", "phase", "seconds", "rate");
}

/* One phase: its seconds, and count items ("rec", "act") per second. */
static inline void bench_report_row(const char *phase, double seconds, double count, const char *unit)
{
	printf("%-44s %10.3f %12.2f M %s/s\n", phase, seconds, count / seconds / 1e6, unit);
}

/* The save phase, the best runs and the CPU times, for records records. */
static inline void bench_report_phases(const struct bench_summary *s, double records,
                                       const struct bench_trace_size *size)
{
	double acts = (double)size->activities;
	printf("%-44s %10.3f %12.2f M act/s (%.0f MB/s)\n", "write JSON (strobe_trace_save)", s->save,
	       acts / s->save / 1e6, (double)size->bytes / s->save / 1e6);
	bench_report_row("decode + correlate, best run", s->best_stop, records, "rec");
	bench_report_row("write JSON, best run", s->best_save, acts, "act");
	bench_report_row("decode + correlate, CPU time (median)", s->stop_cpu, records, "rec");
	bench_report_row("write JSON, CPU time (median)", s->save_cpu, acts, "act");
}

static inline void bench_report_size(const struct bench_trace_size *size, long rss)
{
	printf(
	    "JSON size %.1f MB; RSS after stop %.1f GB; the trace held %.1f MB (%.1f bytes per activity)\n",
	    (double)size->bytes / 1e6, (double)rss / 1e9, (double)size->held / 1e6,
	    size->activities ? (double)size->held / (double)size->activities : 0.0);
}

#endif

/* The flight recorder over a long run: T threads record push+pop pairs at
 * a steady total rate into rings of a fixed budget for S seconds, while the
 * process's resident memory is sampled every 100 ms and a dump is taken
 * every 10 s. Reports, all from this one run:
 *   - the peak resident memory above the baseline against the budget;
 *   - the records recycled (aged out) and dropped;
 *   - each dump's time and size;
 *   - the slowest push+pop pair a recording thread saw while dumps ran
 *     against the slowest it saw when none did (recording threads never
 *     wait for a dump: the rings are copied while they write).
 * Usage: bench_flight [seconds] [records-per-second] [budget-MiB] [threads]
 * (default 60 s, 5000000 records/s, 256 MiB, 2 threads).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "strobe/strobe.h"

static double seconds = 60, rate = 5e6;
static long budget_mib = 256;
static int threads = 2;
static atomic_bool stop;
static atomic_bool dumping;

struct worker {
	int cpu;
	uint64_t pairs;
	int64_t worst_dumping, worst_quiet; /* ns of the slowest pair */
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	bench_pin(w->cpu);
	/* Pairs paced in batches of 1000 to the worker's share of the rate
	 * (a pair is two records). */
	double per_pair_ns = 1e9 * 2.0 * threads / rate;
	int64_t t0 = bench_now_ns();
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 1000; i++) {
			int64_t a = bench_now_ns();
			strobe_range_push("bench::flight");
			strobe_range_pop();
			int64_t d = bench_now_ns() - a;
			if (atomic_load_explicit(&dumping, memory_order_relaxed)) {
				if (d > w->worst_dumping)
					w->worst_dumping = d;
			} else if (d > w->worst_quiet) {
				w->worst_quiet = d;
			}
		}
		w->pairs += 1000;
		int64_t due = t0 + (int64_t)((double)w->pairs * per_pair_ns);
		while (bench_now_ns() < due && !atomic_load_explicit(&stop, memory_order_relaxed))
			usleep(200);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 2)
		rate = atof(argv[2]);
	if (argc > 3)
		budget_mib = atol(argv[3]);
	if (argc > 4)
		threads = atoi(argv[4]);
	if (!(seconds >= 1) || !(rate >= 1000) || budget_mib < 1 || threads < 1 || threads > 64) {
		fprintf(stderr,
		        "usage: bench_flight [seconds >= 1] [records-per-second >= 1000] [budget-MiB >= 1] "
		        "[threads 1..64]\n");
		return 2;
	}
	char dir[] = "/tmp/bench-flight-XXXXXX", out[128];
	if (!mkdtemp(dir)) {
		perror("bench_flight: mkdtemp");
		return 1;
	}
	snprintf(out, sizeof(out), "%s/run.json", dir);
	strobe_init(NULL);
	long base = bench_rss_bytes();
	struct strobe_flight_opts o =
	    STROBE_OPTS(strobe_flight_opts, .output = out, .window_ns = 5000000000ull,
	                .memory_bytes = (uint64_t)budget_mib << 20);
	if (strobe_flight_start(&o)) {
		fprintf(stderr, "bench_flight: %s\n", strobe_last_error());
		return 1;
	}
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	pthread_t *tid = calloc((size_t)threads, sizeof(*tid));
	for (int i = 0; i < threads; i++) {
		w[i].cpu = i;
		pthread_create(&tid[i], NULL, worker_main, &w[i]);
	}
	long peak = 0;
	int dumps = 0;
	double dump_s_max = 0, dump_mb_max = 0;
	int64_t t0 = bench_now_ns(), next_dump = t0 + 10000000000ll;
	while (bench_now_ns() - t0 < (int64_t)(seconds * 1e9)) {
		usleep(100000);
		long rss = bench_rss_bytes() - base;
		if (rss > peak)
			peak = rss;
		if (bench_now_ns() >= next_dump) {
			char path[256];
			atomic_store(&dumping, true);
			int64_t a = bench_now_ns();
			int rc = strobe_flight_dump("bench", path, sizeof(path));
			double s = (double)(bench_now_ns() - a) / 1e9;
			atomic_store(&dumping, false);
			if (rc) {
				fprintf(stderr, "bench_flight: dump failed: %s\n", strobe_last_error());
				return 1;
			}
			struct stat st;
			double mb = stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0;
			fprintf(stderr, "dump %d: %.2f s, %.1f MB\n", ++dumps, s, mb);
			dump_s_max = s > dump_s_max ? s : dump_s_max;
			dump_mb_max = mb > dump_mb_max ? mb : dump_mb_max;
			unlink(path);
			next_dump += 10000000000ll;
		}
	}
	atomic_store(&stop, true);
	uint64_t pairs = 0;
	int64_t worst_dumping = 0, worst_quiet = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		pairs += w[i].pairs;
		worst_dumping = w[i].worst_dumping > worst_dumping ? w[i].worst_dumping : worst_dumping;
		worst_quiet = w[i].worst_quiet > worst_quiet ? w[i].worst_quiet : worst_quiet;
	}
	double elapsed = (double)(bench_now_ns() - t0) / 1e9;
	printf("bench_flight: %d thread%s, %.0f s, %.2f M records/s recorded (%.0f M records), rings of %ld "
	       "MiB\n",
	       threads, threads > 1 ? "s" : "", elapsed, 2.0 * (double)pairs / elapsed / 1e6,
	       2.0 * (double)pairs / 1e6, budget_mib);
	printf("%-52s %8.1f MiB  (%.2fx the budget)\n", "peak resident memory above the baseline",
	       (double)peak / (1 << 20), (double)peak / (double)(budget_mib << 20));
	printf("%-52s %8d  (slowest %.2f s, largest %.1f MB)\n", "dumps of the last 5 s while recording",
	       dumps, dump_s_max, dump_mb_max);
	printf("%-52s %8.1f us\n", "slowest push+pop while a dump ran", (double)worst_dumping / 1e3);
	printf("%-52s %8.1f us\n", "slowest push+pop with no dump running", (double)worst_quiet / 1e3);
	strobe_flight_stop();
	strobe_shutdown();
	rmdir(dir);
	free(w);
	free(tid);
	return 0;
}

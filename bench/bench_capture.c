/* Cost of the capture hot path, each figure the median of repeated runs
 * with threads pinned, timed in each thread's own CPU time (so that other
 * processes on the machine do not count), all measured in this one run:
 *   - push+pop pair while tracing, 1 and 2 threads, against two reads of
 *     the clock in use (what a pair cannot avoid);
 *   - push+pop pair while not tracing, against an empty loop;
 *   - push+pop pair with the flight recorder's rings full (each new chunk
 *     recycles the thread's oldest), against tracing in the same rounds
 *     (the median of the rounds' ratios);
 *   - resident bytes per captured event: over the first run of pairs,
 *     and over ten times as many next with the pager's lead (the 1 MiB
 *     it keeps resident ahead of what the thread has written) aside.
 * Usage: bench_capture [pairs-per-run] [runs]
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "core/clock.h"
#include "core/tbuf.h"
#include "strobe/strobe.h"

static long pairs = 1000000;
static int runs = 11;

static double loop_empty(void)
{
	int64_t t0 = bench_thread_cpu_ns();
	for (long i = 0; i < pairs; i++)
		__asm__ volatile("" ::: "memory");
	return (double)(bench_thread_cpu_ns() - t0) / (double)pairs;
}

static double loop_clock(void)
{
	uint64_t acc = 0;
	int64_t t0 = bench_thread_cpu_ns();
	for (long i = 0; i < pairs; i++) {
		acc += strb_clock_ticks();
		acc += strb_clock_ticks();
		__asm__ volatile("" ::"r"(acc) : "memory");
	}
	return (double)(bench_thread_cpu_ns() - t0) / (double)pairs;
}

static double loop_pairs(void)
{
	int64_t t0 = bench_thread_cpu_ns();
	for (long i = 0; i < pairs; i++) {
		strobe_range_push("bench::range");
		strobe_range_pop();
	}
	return (double)(bench_thread_cpu_ns() - t0) / (double)pairs;
}

/* Long-lived workers, as in a real job: the first run faults their buffer
 * pages in, later runs measure the steady state. */
struct worker {
	int cpu;
	double ns;
};

static pthread_barrier_t go, done;
static int active_threads;
static bool quit;

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	bench_pin(w->cpu);
	for (;;) {
		pthread_barrier_wait(&go);
		if (quit)
			return NULL;
		w->ns = w->cpu < active_threads ? loop_pairs() : 0;
		pthread_barrier_wait(&done);
	}
}

static struct worker workers[2];
static pthread_t worker_tids[2];

static void workers_start(void)
{
	pthread_barrier_init(&go, NULL, 3);
	pthread_barrier_init(&done, NULL, 3);
	for (int i = 0; i < 2; i++) {
		workers[i].cpu = i;
		pthread_create(&worker_tids[i], NULL, worker_main, &workers[i]);
	}
}

static void workers_stop(void)
{
	quit = true;
	pthread_barrier_wait(&go);
	for (int i = 0; i < 2; i++)
		pthread_join(worker_tids[i], NULL);
}

/* One traced run on `threads` workers; returns the mean ns per pair. */
static double traced_run(int threads)
{
	strobe_prepare(0, "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=1024");
	strobe_start();
	active_threads = threads;
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	strobe_trace *t = NULL;
	strobe_stop(&t);
	if (strobe_trace_activity_count(t) < (size_t)pairs * (size_t)threads)
		fprintf(stderr, "warning: %zu activities, expected %ld\n", strobe_trace_activity_count(t),
		        pairs * threads);
	strobe_trace_destroy(t);
	double sum = 0;
	for (int i = 0; i < threads; i++)
		sum += workers[i].ns;
	return sum / threads;
}

/* Median over runs, after one warm-up run; the first (cold) run is
 * reported separately. */
static double traced_pairs(int threads, double *cold)
{
	*cold = traced_run(threads);
	double *v = calloc((size_t)runs, sizeof(double));
	for (int r = 0; r < runs; r++)
		v[r] = traced_run(threads);
	double m = bench_median(v, runs);
	free(v);
	return m;
}

/* The same pairs with the flight recorder on and its rings full, so that
 * every chunk a thread starts recycles its own oldest one, against a
 * traced run just before it: rounds of (traced run, flight run), so that
 * a machine whose load drifts weighs on both alike. Returns the median of
 * the rounds' ratios; *flight_ns and *traced_ns get the medians of each. */
static double flight_vs_traced(int threads, double *flight_ns, double *traced_ns)
{
	double *fl = calloc((size_t)runs, sizeof(double)), *tr = calloc((size_t)runs, sizeof(double));
	double *ratio = calloc((size_t)runs, sizeof(double));
	active_threads = threads;
	for (int r = 0; r < runs; r++) {
		tr[r] = traced_run(threads);
		struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .memory_bytes = 64ull << 20);
		if (strobe_flight_start(&o)) {
			fprintf(stderr, "bench_capture: %s\n", strobe_last_error());
			break;
		}
		/* 64 MiB of 48-byte pairs: fill the rings first. */
		for (long filled = 0; filled < (64l << 20) / 48 / pairs + 2; filled++) {
			pthread_barrier_wait(&go);
			pthread_barrier_wait(&done);
		}
		pthread_barrier_wait(&go);
		pthread_barrier_wait(&done);
		double sum = 0;
		for (int i = 0; i < threads; i++)
			sum += workers[i].ns;
		fl[r] = sum / threads;
		ratio[r] = fl[r] / tr[r];
		strobe_flight_stop();
	}
	*flight_ns = bench_median(fl, runs);
	*traced_ns = bench_median(tr, runs);
	double m = bench_median(ratio, runs);
	free(fl);
	free(tr);
	free(ratio);
	return m;
}

static double median_of(double (*fn)(void))
{
	double *v = calloc((size_t)runs, sizeof(double));
	for (int r = 0; r < runs; r++)
		v[r] = fn();
	double m = bench_median(v, runs);
	free(v);
	return m;
}

static void range_pairs(long n)
{
	for (long i = 0; i < n; i++) {
		strobe_range_push("bench::range");
		strobe_range_pop();
	}
}

/* RSS once the pager has caught up with the thread's last claim, less
 * what it made resident past what the thread has written. */
static long settled_rss(void)
{
	struct timespec ts = {0, 100 * 1000 * 1000};
	nanosleep(&ts, NULL);
	const struct strb_tbuf *b = strb_tls_buf;
	size_t ahead = atomic_load(&b->ahead_done);
	return bench_rss_bytes() - (ahead > b->head ? (long)(ahead - b->head) : 0);
}

static void rss_per_event(void)
{
	strobe_prepare(0, "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=1024");
	strobe_start();
	strobe_range_push("warm");
	strobe_range_pop();
	long before = bench_rss_bytes();
	range_pairs(pairs);
	long after = bench_rss_bytes();
	/* The pager's lead taken off both ends. */
	long from = settled_rss();
	range_pairs(10 * pairs);
	long to = settled_rss();
	strobe_trace *t = NULL;
	strobe_stop(&t);
	strobe_trace_destroy(t);
	printf("resident bytes per captured event (a push+pop range): %.1f\n",
	       (double)(after - before) / (double)pairs);
	printf("  over the next %ld, the pager's lead aside:        %.1f\n", 10 * pairs,
	       (double)(to - from) / (double)(10 * pairs));
}

int main(int argc, char **argv)
{
	if (argc > 1)
		pairs = atol(argv[1]);
	if (argc > 2)
		runs = atoi(argv[2]);
	if (pairs < 1000 || runs < 1) {
		fprintf(stderr, "usage: bench_capture [pairs-per-run >= 1000] [runs >= 1]\n");
		return 2;
	}
	strobe_init(NULL);
	if (bench_pin(0))
		fprintf(stderr, "warning: cannot pin threads; figures are noisier\n");
	printf("clock: %s; %ld pairs per run, median of %d runs\n", strb_clock_name(), pairs, runs);

	double empty = median_of(loop_empty);
	double off = median_of(loop_pairs); /* not tracing */
	double clock2 = median_of(loop_clock);
	workers_start();
	double cold1, cold2;
	double on1 = traced_pairs(1, &cold1);
	double on2 = traced_pairs(2, &cold2);
	double flight1, flight2, beside1, beside2;
	double ratio1 = flight_vs_traced(1, &flight1, &beside1);
	double ratio2 = flight_vs_traced(2, &flight2, &beside2);
	workers_stop();

	printf("%-44s %8.2f ns\n", "empty loop iteration", empty);
	printf("%-44s %8.2f ns  (%.2f ns over the empty loop)\n", "push+pop pair, not tracing", off,
	       off - empty);
	printf("%-44s %8.2f ns\n", "two clock reads", clock2);
	printf("%-44s %8.2f ns  (%.2fx two clock reads)\n", "push+pop pair, tracing, 1 thread", on1,
	       on1 / clock2);
	printf("%-44s %8.2f ns  (%.2fx two clock reads)\n", "push+pop pair, tracing, 2 threads (each)", on2,
	       on2 / clock2);
	printf("%-44s %8.2f ns  (1 thread), %.2f ns (2 threads)\n", "first run on fresh buffer pages", cold1,
	       cold2);
	printf("%-44s %8.2f ns  (%.2fx tracing, %.2f ns, in the same rounds)\n",
	       "push+pop pair, flight rings full, 1 thread", flight1, ratio1, beside1);
	printf("%-44s %8.2f ns  (%.2fx tracing, %.2f ns, in the same rounds)\n",
	       "push+pop pair, flight rings full, 2 threads", flight2, ratio2, beside2);
	rss_per_event();
	strobe_shutdown();
	return 0;
}

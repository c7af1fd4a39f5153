/* Cost of the overlap-rows pass (src/process/overlap.c) over N GPU kernels
 * on 16 rows (2 devices x 8 streams), against one plain pass that reads the
 * same fields of every activity:
 *   apart     no kernel overlaps another on its stream (the usual trace)
 *   overlap   every kernel overlaps the one before it on its stream
 * Medians over the runs. Usage: bench_overlap [kernels] [runs]
 * (default 1000000 kernels, 5 runs).
 */
#include <string.h>

#include "bench_util.h"
#include "process/process.h"
#include "process/trace.h"

#define MAX_RUNS 32
#define ROWS     16

static struct strobe_trace *make_trace(long n, int64_t dur)
{
	struct strobe_trace *t = strb_trace_new();
	if (!t || strb_trace_reserve(t, (size_t)n))
		exit(1);
	for (long i = 0; i < n; i++) {
		struct strobe_activity *a = strb_trace_push(t);
		a->type = STROBE_ACTIVITY_CONCURRENT_KERNEL;
		a->name = "k";
		a->device = (i % ROWS) / 8;
		a->resource = 7 + i % 8;
		a->start_ns = 1000000 + i * 10; /* each row gets a kernel every 160 ns */
		a->end_ns = a->start_ns + dur;
	}
	return t;
}

/* What any pass over the activities costs: read the fields the pass reads. */
static int64_t touch(const struct strobe_trace *t)
{
	int64_t sum = 0;
	for (size_t i = 0; i < t->count; i++) {
		const struct strobe_activity *a = &t->acts[i];
		sum += a->type == STROBE_ACTIVITY_CONCURRENT_KERNEL
		           ? a->device + a->resource + a->start_ns - a->end_ns
		           : 0;
	}
	return sum;
}

static double run_case(long n, int runs, int64_t dur, uint64_t *moved)
{
	double s[MAX_RUNS];
	for (int r = 0; r < runs; r++) {
		struct strobe_trace *t = make_trace(n, dur);
		int64_t t0 = bench_now_ns();
		if (strb_process_overlap(t))
			exit(1);
		s[r] = (double)(bench_now_ns() - t0);
		*moved = t->stats.gpu_overlap_moved;
		strobe_trace_destroy(t);
	}
	return bench_median(s, runs);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	if (n < 1 || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: bench_overlap [kernels >= 1] [runs 1..%d]\n", MAX_RUNS);
		return 2;
	}
	bench_pin(0);
	double base[MAX_RUNS];
	volatile int64_t sink = 0;
	for (int r = 0; r < runs; r++) {
		struct strobe_trace *t = make_trace(n, 100);
		int64_t t0 = bench_now_ns();
		sink += touch(t);
		base[r] = (double)(bench_now_ns() - t0);
		strobe_trace_destroy(t);
	}
	double plain = bench_median(base, runs);
	uint64_t moved_apart = 0, moved_over = 0;
	double apart = run_case(n, runs, 100, &moved_apart); /* 100 ns < 160 ns: apart */
	double over = run_case(n, runs, 200, &moved_over);   /* 200 ns > 160 ns: overlaps */
	printf("%ld kernels on %d rows; median of %d runs\n", n, ROWS, runs);
	printf("plain pass over the activities   %8.2f ns/kernel\n", plain / (double)n);
	printf("overlap pass, nothing overlaps   %8.2f ns/kernel  (%.2fx the plain pass; %llu moved)\n",
	       apart / (double)n, apart / plain, (unsigned long long)moved_apart);
	printf("overlap pass, every other moves  %8.2f ns/kernel  (%.2fx the plain pass; %llu moved)\n",
	       over / (double)n, over / plain, (unsigned long long)moved_over);
	return (int)(sink & 0);
}

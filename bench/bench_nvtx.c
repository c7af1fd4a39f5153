/* NVTX push/pop overhead: what an application's nvtxRangePushA/nvtxRangePop
 * pair costs with no tool attached, and with strobe attached by strobe
 * record, against two raw TSC reads (what recording a range cannot avoid).
 *
 * This program uses only the toolkit's NVTX headers, like an application.
 * bench/bench_nvtx.sh runs it twice (plain, then under strobe record) and
 * prints the ratios; run alone it prints one line:
 *   tsc_pair_ns nvtx_pair_ns
 * best of `runs` loops of `pairs` iterations each, timed in the thread's
 * CPU time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#include <nvtx3/nvToolsExt.h>

/* The thread's own CPU time, page faults included: other processes on a
 * busy machine do not count. */
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile unsigned long long sink;

static double loop_tsc(long pairs)
{
	unsigned long long acc = 0;
	double t0 = now_ns();
	for (long i = 0; i < pairs; i++) {
		acc += __rdtsc();
		acc += __rdtsc();
	}
	sink = acc;
	return (now_ns() - t0) / (double)pairs;
}

static double loop_nvtx(long pairs)
{
	double t0 = now_ns();
	for (long i = 0; i < pairs; i++) {
		nvtxRangePushA("bench");
		nvtxRangePop();
	}
	return (now_ns() - t0) / (double)pairs;
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 1000000;
	int runs = argc > 2 ? atoi(argv[2]) : 7;
	if (pairs <= 0 || runs <= 0) {
		fprintf(stderr, "usage: bench_nvtx [PAIRS] [RUNS]\n");
		return 2;
	}
	/* The first NVTX call loads the tool (if any): keep it out of the timing. */
	nvtxRangePushA("warm-up");
	nvtxRangePop();
	double best_tsc = 1e30, best_nvtx = 1e30;
	for (int r = 0; r < runs; r++) {
		double a = loop_tsc(pairs), b = loop_nvtx(pairs);
		best_tsc = a < best_tsc ? a : best_tsc;
		best_nvtx = b < best_nvtx ? b : best_nvtx;
	}
	printf("%.2f %.2f\n", best_tsc, best_nvtx);
	return 0;
}

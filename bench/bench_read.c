/* The trace reader alone (tools/read/trace_reader.h): a file read with a
 * callback that only counts, the median of repeated reads, in MB/s and
 * events/s of the calling thread's CPU time; then the same with yajl and
 * the repair pass (tr_handler.slow_only), the reader before its own
 * tokenizer. Usage: bench_read TRACE [runs] */
#include <stdio.h>
#include <stdlib.h>

#include "bench_util.h"
#include "read/trace_reader.h"

static int count(const struct tr_event *ev, void *arg)
{
	(void)ev;
	++*(unsigned long *)arg;
	return 0;
}

/* CPU seconds of the median read; *events and *bytes of the last. */
static double read_secs(const char *path, int runs, bool slow, unsigned long *events, double *bytes)
{
	double secs[BENCH_MAX_RUNS];
	for (int r = 0; r < runs; r++) {
		*events = 0;
		struct tr_handler h = {.event_cb = count, .user_arg = events, .slow_only = slow};
		struct tr_stats st;
		char err[512];
		double c0 = bench_cpu_now_s();
		if (tr_read_file(path, &h, &st, err, sizeof(err))) {
			fprintf(stderr, "bench_read: %s\n", err);
			exit(1);
		}
		secs[r] = bench_cpu_now_s() - c0;
		*bytes = (double)st.json_bytes;
		if (st.reread)
			fprintf(stderr, "bench_read: the fast tokenizer gave up on %s: it was read twice\n",
			        path);
	}
	return bench_median(secs, runs);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_read TRACE [runs]\n");
		return 2;
	}
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	if (runs < 1 || runs > BENCH_MAX_RUNS)
		runs = 3;
	unsigned long events;
	double bytes;
	printf("%s, median of %d reads (CPU time)\n", argv[1], runs);
	printf("%-28s %9s %10s %12s\n", "reader", "CPU s", "MB/s", "events/s");
	double fast = read_secs(argv[1], runs, false, &events, &bytes);
	printf("%-28s %9.3f %10.1f %12.0f\n", "tokenizer (default)", fast, bytes / 1e6 / fast,
	       (double)events / fast);
	double slow = read_secs(argv[1], runs, true, &events, &bytes);
	printf("%-28s %9.3f %10.1f %12.0f\n", "yajl + repair (slow_only)", slow, bytes / 1e6 / slow,
	       (double)events / slow);
	printf("tokenizer / yajl: %.2fx the speed\n", slow / fast);
	return 0;
}

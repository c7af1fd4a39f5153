/* Process memory of a trace that fills the CPU budget: the peak resident
 * set (getrusage's maxrss) after recording, after strobe_stop and after
 * saving, the heap the stopped trace holds, and the activity count. The
 * default budget is 256 MiB.
 * Usage: bench_memory [budget-MiB] [out-file] [short|long]
 * (short: 8-byte names, the most events per MiB; long: 40-byte names). */
#include <string.h>
#include <sys/resource.h>

#include "bench_util.h"
#include "strobe/strobe.h"

static long maxrss_mib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

int main(int argc, char **argv)
{
	int budget = argc > 1 ? atoi(argv[1]) : 256;
	const char *out = argc > 2 ? argv[2] : "/dev/shm/bench_memory.json";
	bool long_names = argc > 3 && !strcmp(argv[3], "long");
	if (budget < 1) {
		fprintf(stderr, "usage: bench_memory [budget-MiB >= 1] [out-file] [short|long]\n");
		return 2;
	}
	strobe_init(NULL);
	char cfg[128];
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=%d", budget);
	if (strobe_prepare(0, cfg) || strobe_start()) {
		fprintf(stderr, "bench_memory: %s\n", strobe_last_error());
		return 1;
	}
	const char *name = long_names ? "encoder.layer.attention.self.query.proj" : "op.step";
	/* Until the budget is spent: pushes are then dropped. */
	long pairs = (long)budget * (1 << 20) / 40 + 1000;
	int64_t t0 = bench_now_ns();
	for (long i = 0; i < pairs; i++) {
		strobe_range_push(name);
		strobe_range_pop();
	}
	long rec = maxrss_mib();
	int64_t t1 = bench_now_ns();
	strobe_trace *t = NULL;
	if (strobe_stop(&t)) {
		fprintf(stderr, "bench_memory: %s\n", strobe_last_error());
		return 1;
	}
	long stop = maxrss_mib();
	int64_t t2 = bench_now_ns();
	int rc = strobe_trace_save(t, out);
	long save = maxrss_mib();
	int64_t t3 = bench_now_ns();
	size_t n = strobe_trace_activity_count(t);
	long long heap = bench_heap_bytes();
	strobe_trace_destroy(t);
	long long held = heap - bench_heap_bytes();
	strobe_shutdown();
	if (rc)
		fprintf(stderr, "bench_memory: save: %s\n", strobe_last_error());
	printf(
	    "budget %d MiB, %zu activities (%s names): peak RSS after recording %ld MiB, after stop %ld MiB "
	    "(%.2f s), after save %ld MiB (%.2f s); recording took %.2f s\n",
	    budget, n, long_names ? "40-byte" : "7-byte", rec, stop, (double)(t2 - t1) / 1e9, save,
	    (double)(t3 - t2) / 1e9, (double)(t1 - t0) / 1e9);
	printf("the stopped trace held %.1f MiB: %.1f bytes per activity\n", (double)held / (1 << 20),
	       n ? (double)held / (double)n : 0.0);
	return rc ? 1 : 0;
}

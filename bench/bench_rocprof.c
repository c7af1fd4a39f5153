/* AMD record processing speed, through the fake rocprofiler-sdk 1.x: N
 * hipLaunchKernel calls (each with its stream, grid and block arguments, as
 * HIP reports them) and their N kernel dispatches (2N records: N HIP API
 * buffer records, N KERNEL_DISPATCH records) go through the fake during a
 * trace, spread over 2 GPUs and 4 streams, then timed:
 *   push    the fake making the calls (strobe's ENTER/EXIT callbacks, the
 *           arguments read and copied) and the dispatches, and delivering
 *           its buffers at the watermark from its own thread into strobe's
 *   stop    strobe_stop: the final flush, decode, correlate, link, rows and
 *           accounting, into the in-memory trace
 *   save    strobe_trace_save as plain JSON to a tmpfs directory
 * Medians over the runs, and the best run, with each phase's process CPU
 * time (wall time alone swings on a shared virtual machine).
 * Usage: bench_rocprof [launches] [runs] [tmpfs-dir]
 * (default 5000000 launches = 10 M records, 3 runs, /dev/shm).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "fake_rocprofiler.h"
#include "strobe/strobe.h"

#define MAX_RUNS 16
#define STREAMS  4

/* The fake's control API, reached as the backend reaches the SDK: dlopen by path. */
static struct {
	int (*dispatch)(const struct fake_rocp_dispatch *);
	uint64_t (*now)(void);
	uint64_t (*load)(int, const char *const *, size_t, uint64_t *);
	uint64_t (*hip_call)(const char *, const struct fake_rocp_arg *, size_t, fake_rocp_body_fn, void *);
} fake;

static const char *const kernel_names[] = {"_Z9vectorAddPKfS0_Pfi", "_Z6reducePfi",
                                           "_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi",
                                           "_Z4gemmPKfS0_Pf"};
static uint64_t kernel_ids[2][4]; /* per GPU */

static const char *const stream_texts[STREAMS] = {"0x5a10", "0x5a20", "0x5a30", "0x5a40"};
static struct fake_rocp_arg launch_args[STREAMS][4];

struct launch {
	long i;
	uint64_t t;
};

static void dispatch_one(uint64_t corr, void *arg)
{
	const struct launch *l = arg;
	struct fake_rocp_dispatch d = {
	    .correlation_id = corr,
	    .gpu = (int)(l->i & 1),
	    .queue = 0x100 + (uint64_t)(l->i & 1), /* the streams of a GPU share one HSA queue */
	    .kernel_id = kernel_ids[l->i & 1][(l->i >> 1) & 3],
	    .grid = {64 * 256, 1, 1},
	    .workgroup = {256, 1, 1},
	    .lds_bytes = 1024,
	    .start = l->t + 1,
	    .end = l->t + 2,
	};
	if (fake.dispatch(&d)) {
		fprintf(stderr, "bench_rocprof: the fake refused dispatch %ld\n", l->i);
		exit(1);
	}
}

static void push_records(long n, uint64_t base)
{
	for (long i = 0; i < n; i++) {
		struct launch l = {i, base + 2 * (uint64_t)i};
		const struct fake_rocp_arg *args = launch_args[i & (STREAMS - 1)];
		if (!fake.hip_call("hipLaunchKernel", args, 4, dispatch_one, &l)) {
			fprintf(stderr, "bench_rocprof: the fake does not know hipLaunchKernel\n");
			exit(1);
		}
	}
}

static double cpu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct run {
	double push_s, stop_s, save_s, stop_cpu_s, save_cpu_s;
	size_t activities;
	long long bytes;
	long rss;
};

static int one_run(long n, const char *dir, struct run *r)
{
	char cfg[96];
	/* Room for every record copied out of the SDK's buffers, plus slack. */
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=%ld", n * 512 / (1 << 20) + 64);
	uint64_t mask = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	                STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_RUNTIME);
	if (strobe_prepare(mask, cfg)) {
		fprintf(stderr, "bench_rocprof: prepare failed: %s\n", strobe_last_error());
		return -1;
	}
	/* Code objects load once per process, before the first trace. */
	static int loaded;
	if (!loaded) {
		fake.load(0, kernel_names, 4, kernel_ids[0]);
		fake.load(1, kernel_names, 4, kernel_ids[1]);
		loaded = 1;
	}
	if (strobe_start()) {
		fprintf(stderr, "bench_rocprof: start failed: %s\n", strobe_last_error());
		return -1;
	}
	uint64_t base = fake.now();
	int64_t t0 = bench_now_ns();
	push_records(n, base);
	int64_t t1 = bench_now_ns();
	/* The last kernel must end in the past of the stop. */
	while (fake.now() < base + 2 * (uint64_t)n + 1000)
		;
	double c1 = cpu_now_s();
	int64_t t2 = bench_now_ns();
	strobe_trace *t = NULL;
	if (strobe_stop(&t) || !t) {
		fprintf(stderr, "bench_rocprof: stop failed: %s\n", strobe_last_error());
		return -1;
	}
	int64_t t3 = bench_now_ns();
	double c2 = cpu_now_s();
	r->rss = bench_rss_bytes();
	char path[1024];
	snprintf(path, sizeof(path), "%s/bench_rocprof.%d.json", dir, (int)getpid());
	int rc = strobe_trace_save(t, path);
	int64_t t4 = bench_now_ns();
	double c3 = cpu_now_s();
	struct stat st;
	r->bytes = rc == 0 && stat(path, &st) == 0 ? (long long)st.st_size : -1;
	unlink(path);
	r->activities = strobe_trace_activity_count(t);
	strobe_trace_destroy(t);
	if (rc) {
		fprintf(stderr, "bench_rocprof: save to %s failed: %s\n", path, strobe_last_error());
		return -1;
	}
	if (r->activities != 2 * (size_t)n) {
		fprintf(stderr, "bench_rocprof: %zu activities in the trace, %ld expected\n", r->activities,
		        2 * n);
		return -1;
	}
	r->push_s = (double)(t1 - t0) / 1e9;
	r->stop_s = (double)(t3 - t2) / 1e9;
	r->save_s = (double)(t4 - t3) / 1e9;
	r->stop_cpu_s = c2 - c1;
	r->save_cpu_s = c3 - c2;
	return 0;
}

static int open_fake(void)
{
	void *h = dlopen(FAKE_ROCPROFILER_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "bench_rocprof: %s\n", dlerror());
		return -1;
	}
	*(void **)&fake.dispatch = dlsym(h, "fake_rocp_dispatch");
	*(void **)&fake.now = dlsym(h, "fake_rocp_now");
	*(void **)&fake.load = dlsym(h, "fake_rocp_load_code_object");
	*(void **)&fake.hip_call = dlsym(h, "fake_rocp_hip_call");
	if (!fake.dispatch || !fake.now || !fake.load || !fake.hip_call) {
		fprintf(stderr, "bench_rocprof: %s lacks the fake's control API\n", FAKE_ROCPROFILER_PATH);
		return -1;
	}
	for (int s = 0; s < STREAMS; s++) {
		launch_args[s][0] = (struct fake_rocp_arg){"stream", "hipStream_t", stream_texts[s]};
		launch_args[s][1] = (struct fake_rocp_arg){"numBlocks", "dim3", "{z=1, y=1, x=64}"};
		launch_args[s][2] = (struct fake_rocp_arg){"dimBlocks", "dim3", "{z=1, y=1, x=256}"};
		launch_args[s][3] = (struct fake_rocp_arg){"sharedMemBytes", "size_t", "1024"};
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	const char *dir = argc > 3 ? argv[3] : "/dev/shm";
	if (n < 1 || n > 1000000000L || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: bench_rocprof [launches 1..1e9] [runs 1..%d] [tmpfs-dir]\n",
		        MAX_RUNS);
		return 2;
	}
	setenv("STROBE_ROCPROFILER_PATH", FAKE_ROCPROFILER_PATH, 1);
	if (open_fake())
		return 1;
	bench_pin(0);
	strobe_init(NULL);
	double push[MAX_RUNS], stop[MAX_RUNS], save[MAX_RUNS], stop_cpu[MAX_RUNS], save_cpu[MAX_RUNS];
	struct run r = {0};
	for (int i = 0; i < runs; i++) {
		if (one_run(n, dir, &r))
			return 1;
		push[i] = r.push_s;
		stop[i] = r.stop_s;
		save[i] = r.save_s;
		stop_cpu[i] = r.stop_cpu_s;
		save_cpu[i] = r.save_cpu_s;
		fprintf(stderr, "run %d: push %.3f s, stop %.3f s (cpu %.3f s), save %.3f s (cpu %.3f s)\n",
		        i + 1, r.push_s, r.stop_s, r.stop_cpu_s, r.save_s, r.save_cpu_s);
	}
	double records = 2.0 * (double)n;
	double mp = bench_median(push, runs), ms = bench_median(stop, runs), mv = bench_median(save, runs);
	/* After the medians: the arrays are sorted. */
	double bs = stop[0], bv = save[0];
	double mcs = bench_median(stop_cpu, runs), mcv = bench_median(save_cpu, runs);
	printf("bench_rocprof: %ld hipLaunchKernel + %ld dispatches = %.0f rocprofiler-sdk records, %zu "
	       "activities, median of %d run%s\n",
	       n, n, records, r.activities, runs, runs > 1 ? "s" : "");
	printf("%-44s %10s %16s\n", "phase", "seconds", "rate");
	printf("%-44s %10.3f %12.2f M rec/s\n", "push through the fake (callbacks, buffers)", mp,
	       records / mp / 1e6);
	printf("%-44s %10.3f %12.2f M rec/s\n", "decode + correlate (strobe_stop)", ms, records / ms / 1e6);
	printf("%-44s %10.3f %12.2f M act/s (%.0f MB/s)\n", "write JSON (strobe_trace_save)", mv,
	       (double)r.activities / mv / 1e6, (double)r.bytes / mv / 1e6);
	printf("%-44s %10.3f %12.2f M rec/s\n", "decode + correlate, best run", bs, records / bs / 1e6);
	printf("%-44s %10.3f %12.2f M act/s\n", "write JSON, best run", bv, (double)r.activities / bv / 1e6);
	printf("%-44s %10.3f %12.2f M rec/s\n", "decode + correlate, CPU time (median)", mcs,
	       records / mcs / 1e6);
	printf("%-44s %10.3f %12.2f M act/s\n", "write JSON, CPU time (median)", mcv,
	       (double)r.activities / mcv / 1e6);
	printf("JSON size %.1f MB; RSS after stop %.1f GB\n", (double)r.bytes / 1e6, (double)r.rss / 1e9);
	strobe_shutdown();
	return 0;
}

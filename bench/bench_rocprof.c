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
#include <unistd.h>

#include "bench_util.h"
#include "fake_rocprofiler_load.h"
#include "strobe/strobe.h"

#define STREAMS 4

/* The fake's control API, reached as the backend reaches the SDK: dlopen by path. */
static struct fake_rocp_control fake;

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

struct run {
	double push_s;
	struct bench_trace_size size;
	long rss;
};

/* Run i: its stop and save phases into p, the rest into r. */
static int one_run(long n, const char *dir, int i, struct run *r, struct bench_phases *p)
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
		fake.load_code_object(0, kernel_names, 4, kernel_ids[0]);
		fake.load_code_object(1, kernel_names, 4, kernel_ids[1]);
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
	struct bench_mark m1 = bench_mark_now();
	strobe_trace *t = NULL;
	if (strobe_stop(&t) || !t) {
		fprintf(stderr, "bench_rocprof: stop failed: %s\n", strobe_last_error());
		return -1;
	}
	struct bench_mark m2 = bench_mark_now(), m3;
	r->rss = bench_rss_bytes();
	if (bench_save("bench_rocprof", t, dir, &m3, &r->size))
		return -1;
	if (r->size.activities != 2 * (size_t)n) {
		fprintf(stderr, "bench_rocprof: %zu activities in the trace, %ld expected\n",
		        r->size.activities, 2 * n);
		return -1;
	}
	r->push_s = (double)(t1 - t0) / 1e9;
	p->stop[i] = (double)(m2.wall_ns - m1.wall_ns) / 1e9;
	p->save[i] = (double)(m3.wall_ns - m2.wall_ns) / 1e9;
	p->stop_cpu[i] = m2.cpu_s - m1.cpu_s;
	p->save_cpu[i] = m3.cpu_s - m2.cpu_s;
	return 0;
}

static int open_fake(void)
{
	char why[512];
	if (fake_rocp_control_load(&fake, FAKE_ROCPROFILER_PATH, why, sizeof(why))) {
		fprintf(stderr, "bench_rocprof: %s\n", why);
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
	struct bench_args a;
	if (bench_parse_args(argc, argv, "bench_rocprof", 1000000000L, &a))
		return 2;
	long n = a.launches;
	setenv("STROBE_ROCPROFILER_PATH", FAKE_ROCPROFILER_PATH, 1);
	if (open_fake())
		return 1;
	bench_pin(0);
	strobe_init(NULL);
	struct bench_phases p;
	double push[BENCH_MAX_RUNS];
	struct run r = {0};
	for (int i = 0; i < a.runs; i++) {
		if (one_run(n, a.dir, i, &r, &p))
			return 1;
		push[i] = r.push_s;
		fprintf(stderr, "run %d: push %.3f s, stop %.3f s (cpu %.3f s), save %.3f s (cpu %.3f s)\n",
		        i + 1, r.push_s, p.stop[i], p.stop_cpu[i], p.save[i], p.save_cpu[i]);
	}
	double records = 2.0 * (double)n;
	double mp = bench_median(push, a.runs);
	struct bench_summary s = bench_summarise(&p, a.runs);
	printf("bench_rocprof: %ld hipLaunchKernel + %ld dispatches = %.0f rocprofiler-sdk records, %zu "
	       "activities, median of %d run%s\n",
	       n, n, records, r.size.activities, a.runs, a.runs > 1 ? "s" : "");
	bench_report_head();
	bench_report_row("push through the fake (callbacks, buffers)", mp, records, "rec");
	bench_report_row("decode + correlate (strobe_stop)", s.stop, records, "rec");
	bench_report_phases(&s, records, &r.size);
	bench_report_size(&r.size, r.rss);
	strobe_shutdown();
	return 0;
}

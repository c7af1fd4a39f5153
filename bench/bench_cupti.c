/* CUPTI record processing speed, through the fake libcupti: N synthetic
 * cudaLaunchKernel records and their N kernels (2N records) are queued into
 * the fake during a trace, then timed:
 *   flush   cuptiActivityFlushAll: records copied into strobe's 4 MiB buffers
 *   stop    strobe_stop: the final flush, both conversion passes (decode,
 *           correlate, link), rows and accounting, into the in-memory trace
 *   save    strobe_trace_save as plain JSON to a tmpfs directory
 *   pack    the trace packed into one block with no pointers, as the flight
 *           recorder's GPU snapshots for crash dumps are (a snapshot is a
 *           decode + correlate of the window's records and this), and the
 *           block's bytes per launch + kernel pair
 *   floor   the least any decoder into this trace's layout can take: a fresh
 *           array of as many struct strobe_activity as the trace holds,
 *           each cleared and given a few fields, and nothing decoded (the
 *           public activity is 112 bytes; its memory is new to the process)
 * Medians over the runs, and the best run. Besides wall time each phase
 * reports the process's CPU time and the share of the machine's time stolen
 * by the hypervisor meanwhile: on a shared virtual machine wall time alone
 * swings by 2x between runs. Usage: bench_cupti [launches] [runs] [tmpfs-dir]
 * (default 5000000 launches = 10 M records, 3 runs, /dev/shm).
 */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_util.h"
#include "fake_cupti.h"
#include "process/packed.h"
#include "strobe/strobe.h"

static const char *const kernel_names[] = {"_Z9vectorAddPKfS0_Pfi", "_Z6reducePfi", "ampere_sgemm_128x64_tn",
                                           "_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi"};

struct run {
	double flush_s, floor_s, pack_s;
	size_t pack_bytes;
	double stop_sys_s, save_sys_s; /* the kernel's part of the CPU time: page faults, file writes */
	double stop_steal, save_steal; /* share of all CPUs' time stolen */
	struct bench_trace_size size;
	long rss;
};

static void queue_records(long n, uint64_t base)
{
	CUpti_ActivityAPI a = {
	    .kind = CUPTI_ACTIVITY_KIND_RUNTIME,
	    .cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
	    .processId = (uint32_t)getpid(),
	    .threadId = (uint32_t)syscall(SYS_gettid),
	};
	CUpti_ActivityKernel10 k = {
	    .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	    .gridX = 64,
	    .gridY = 1,
	    .gridZ = 1,
	    .blockX = 256,
	    .blockY = 1,
	    .blockZ = 1,
	    .registersPerThread = 32,
	    .contextId = 1,
	    .channelID = 0xffffffffu,
	};
	for (long i = 0; i < n; i++) {
		uint64_t s = base + 2 * (uint64_t)i;
		a.start = s;
		a.end = s + 1;
		a.correlationId = (uint32_t)(i + 1);
		k.start = s + 1;
		k.end = s + 2;
		k.correlationId = (uint32_t)(i + 1);
		k.streamId = 7 + (uint32_t)(i & 3);
		k.name = kernel_names[i & 3];
		if (fake_cupti_queue(&a, sizeof(a)) != 1 || fake_cupti_queue(&k, sizeof(k)) != 1) {
			fprintf(stderr, "bench_cupti: the fake did not take record %ld\n", i);
			exit(1);
		}
	}
}

/* Writing the activity array alone, as strb_trace_push does: the floor
 * under decode + correlate on this machine. Returns seconds, or -1. */
static double activity_floor(size_t n)
{
	int64_t t0 = bench_now_ns();
	struct strobe_activity *a = malloc(n * sizeof(*a));
	if (!a)
		return -1;
	for (size_t i = 0; i < n; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].size = sizeof(a[i]);
		a[i].start_ns = (int64_t)i;
		a[i].end_ns = (int64_t)i + 1;
		a[i].id = i;
	}
	int64_t t1 = bench_now_ns();
	/* Read back, so the stores cannot be left out. */
	volatile int64_t sink = a[n / 2].end_ns + a[n - 1].start_ns;
	(void)sink;
	free(a);
	return (double)(t1 - t0) / 1e9;
}

/* Run i: its stop and save phases into p, the rest into r. */
static int one_run(long n, const char *dir, int i, struct run *r, struct bench_phases *p)
{
	fake_cupti_reset();
	uint64_t mask = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	                STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CUDA_RUNTIME);
	char cfg[96];
	/* Room for every record: (40 + 216) bytes per pair, plus slack. */
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=%ld", n * 256 / (1 << 20) + 64);
	if (strobe_prepare(mask, cfg) || strobe_start()) {
		fprintf(stderr, "bench_cupti: prepare/start failed: %s\n", strobe_last_error());
		return -1;
	}
	uint64_t base = fake_cupti_now();
	queue_records(n, base);
	while (fake_cupti_now() < base + 2 * (uint64_t)n + 1000)
		;
	int64_t t0 = bench_now_ns();
	cuptiActivityFlushAll(0);
	struct bench_mark m1 = bench_mark_now();
	int64_t t1 = m1.wall_ns;
	strobe_trace *t = NULL;
	if (strobe_stop(&t) || !t) {
		fprintf(stderr, "bench_cupti: stop failed: %s\n", strobe_last_error());
		return -1;
	}
	/* The stop's clock ends here: the pack and the save are timed apart. */
	struct bench_mark m2 = bench_mark_now(), m3, stop_mark = m2;
	int64_t t2 = m2.wall_ns;
	r->rss = bench_rss_bytes();
	int64_t p0 = bench_thread_cpu_ns();
	void *block;
	if (strb_pack_trace(t, SIZE_MAX, &block, &r->pack_bytes)) {
		fprintf(stderr, "bench_cupti: out of memory packing the trace\n");
		return -1;
	}
	r->pack_s = (double)(bench_thread_cpu_ns() - p0) / 1e9;
	free(block);
	/* The save's clock starts after the pack. */
	m2 = bench_mark_now();
	if (bench_save("bench_cupti", t, dir, &m3, &r->size))
		return -1;
	if ((r->floor_s = activity_floor(r->size.activities)) < 0) {
		fprintf(stderr, "bench_cupti: out of memory for the floor's array\n");
		return -1;
	}
	r->flush_s = (double)(t1 - t0) / 1e9;
	p->stop[i] = (double)(t2 - t1) / 1e9;
	p->save[i] = (double)(m3.wall_ns - m2.wall_ns) / 1e9;
	p->stop_cpu[i] = stop_mark.cpu_s - m1.cpu_s;
	p->save_cpu[i] = m3.cpu_s - m2.cpu_s;
	r->stop_sys_s = stop_mark.sys_s - m1.sys_s;
	r->save_sys_s = m3.sys_s - m2.sys_s;
	r->stop_steal = bench_stolen(m1, stop_mark);
	r->save_steal = bench_stolen(m2, m3);
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	if (bench_parse_args(argc, argv, "bench_cupti", 2000000000L, &a))
		return 2;
	long n = a.launches;
	setenv("STROBE_CUPTI_PATH", FAKE_CUPTI_PATH, 1);
	bench_pin(0);
	strobe_init(NULL);
	struct bench_phases p;
	double flush[BENCH_MAX_RUNS], floor_s[BENCH_MAX_RUNS], ratio[BENCH_MAX_RUNS], pack[BENCH_MAX_RUNS];
	struct run r = {0};
	for (int i = 0; i < a.runs; i++) {
		if (one_run(n, a.dir, i, &r, &p))
			return 1;
		flush[i] = r.flush_s;
		floor_s[i] = r.floor_s;
		pack[i] = r.pack_s;
		ratio[i] = p.stop[i] / r.floor_s;
		fprintf(stderr,
		        "run %d: flush %.3f s, stop %.3f s (cpu %.3f s of which sys %.3f s, %.0f%% stolen), "
		        "save %.3f s "
		        "(cpu %.3f s of which sys %.3f s, %.0f%% stolen), floor %.3f s\n",
		        i + 1, r.flush_s, p.stop[i], p.stop_cpu[i], r.stop_sys_s, 100 * r.stop_steal,
		        p.save[i], p.save_cpu[i], r.save_sys_s, 100 * r.save_steal, r.floor_s);
	}
	double records = 2.0 * (double)n;
	double mf = bench_median(flush, a.runs), mfl = bench_median(floor_s, a.runs);
	double mr = bench_median(ratio, a.runs);
	struct bench_summary s = bench_summarise(&p, a.runs);
	printf("bench_cupti: %ld launches + %ld kernels = %.0f CUPTI records, %zu activities, median of %d "
	       "run%s\n",
	       n, n, records, r.size.activities, a.runs, a.runs > 1 ? "s" : "");
	bench_report_head();
	bench_report_row("flush into strobe buffers (FlushAll)", mf, records, "rec");
	bench_report_row("decode + correlate (strobe_stop)", s.stop, records, "rec");
	bench_report_row("flush + decode + correlate", mf + s.stop, records, "rec");
	bench_report_phases(&s, records, &r.size);
	bench_report_row("pack for crash dumps (thread CPU)", bench_median(pack, a.runs), records, "rec");
	bench_report_row("floor: first write of the activity array", mfl, (double)r.size.activities, "act");
	printf("decode + correlate / floor, same run (median): %.2f\n", mr);
	printf("packed block: %zu bytes, %.1f bytes per launch + kernel pair\n", r.pack_bytes,
	       (double)r.pack_bytes / (double)n);
	bench_report_size(&r.size, r.rss);
	printf("trace memory after stop: %.1f bytes per launch + kernel pair\n",
	       (double)r.size.held / (double)n);
	strobe_shutdown();
	return 0;
}

/* CUPTI record processing speed, through the fake libcupti: N synthetic
 * cudaLaunchKernel records and their N kernels (2N records) are queued into
 * the fake during a trace, then timed:
 *   flush   cuptiActivityFlushAll: records copied into strobe's 4 MiB buffers
 *   stop    strobe_stop: the final flush, both conversion passes (decode,
 *           correlate, link), rows and accounting, into the in-memory trace
 *   save    strobe_trace_save as plain JSON to a tmpfs directory
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "bench_util.h"
#include "fake_cupti.h"
#include "strobe/strobe.h"

#define MAX_RUNS 16

static const char *const kernel_names[] = {"_Z9vectorAddPKfS0_Pfi", "_Z6reducePfi", "ampere_sgemm_128x64_tn",
                                           "_ZN2at6native29vectorized_elementwise_kernelILi4EEEvi"};

struct run {
	double flush_s, stop_s, save_s, floor_s;
	double stop_cpu_s, save_cpu_s; /* CPU time of the process */
	double stop_sys_s, save_sys_s; /* the kernel's part of it: page faults, file writes */
	double stop_steal, save_steal; /* share of all CPUs' time stolen */
	size_t activities;
	long long bytes;
	long rss;
};

static double cpu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double sys_now_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* All CPUs' jiffies, total and stolen, from /proc/stat (0 if unreadable). */
static void cpu_jiffies(double *total, double *steal)
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

struct mark {
	int64_t wall_ns;
	double cpu_s, sys_s, jiffies, steal;
};

static struct mark mark_now(void)
{
	struct mark m = {bench_now_ns(), cpu_now_s(), sys_now_s(), 0, 0};
	cpu_jiffies(&m.jiffies, &m.steal);
	return m;
}

static double stolen(struct mark a, struct mark b)
{
	return b.jiffies > a.jiffies ? (b.steal - a.steal) / (b.jiffies - a.jiffies) : 0;
}

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

static int one_run(long n, const char *dir, struct run *r)
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
	struct mark m1 = mark_now();
	int64_t t1 = m1.wall_ns;
	strobe_trace *t = NULL;
	if (strobe_stop(&t) || !t) {
		fprintf(stderr, "bench_cupti: stop failed: %s\n", strobe_last_error());
		return -1;
	}
	struct mark m2 = mark_now();
	int64_t t2 = m2.wall_ns;
	r->rss = bench_rss_bytes();
	char path[1024];
	snprintf(path, sizeof(path), "%s/bench_cupti.%d.json", dir, (int)getpid());
	int rc = strobe_trace_save(t, path);
	struct mark m3 = mark_now();
	int64_t t3 = m3.wall_ns;
	struct stat st;
	r->bytes = rc == 0 && stat(path, &st) == 0 ? (long long)st.st_size : -1;
	unlink(path);
	r->activities = strobe_trace_activity_count(t);
	strobe_trace_destroy(t);
	if (rc) {
		fprintf(stderr, "bench_cupti: save to %s failed: %s\n", path, strobe_last_error());
		return -1;
	}
	if ((r->floor_s = activity_floor(r->activities)) < 0) {
		fprintf(stderr, "bench_cupti: out of memory for the floor's array\n");
		return -1;
	}
	r->flush_s = (double)(t1 - t0) / 1e9;
	r->stop_s = (double)(t2 - t1) / 1e9;
	r->save_s = (double)(t3 - t2) / 1e9;
	r->stop_cpu_s = m2.cpu_s - m1.cpu_s;
	r->save_cpu_s = m3.cpu_s - m2.cpu_s;
	r->stop_sys_s = m2.sys_s - m1.sys_s;
	r->save_sys_s = m3.sys_s - m2.sys_s;
	r->stop_steal = stolen(m1, m2);
	r->save_steal = stolen(m2, m3);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	int runs = argc > 2 ? atoi(argv[2]) : 3;
	const char *dir = argc > 3 ? argv[3] : "/dev/shm";
	if (n < 1 || n > 2000000000L || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "usage: bench_cupti [launches 1..2e9] [runs 1..%d] [tmpfs-dir]\n", MAX_RUNS);
		return 2;
	}
	setenv("STROBE_CUPTI_PATH", FAKE_CUPTI_PATH, 1);
	bench_pin(0);
	strobe_init(NULL);
	double flush[MAX_RUNS], stop[MAX_RUNS], save[MAX_RUNS], stop_cpu[MAX_RUNS], save_cpu[MAX_RUNS];
	double floor_s[MAX_RUNS], ratio[MAX_RUNS];
	struct run r = {0};
	for (int i = 0; i < runs; i++) {
		if (one_run(n, dir, &r))
			return 1;
		flush[i] = r.flush_s;
		stop[i] = r.stop_s;
		save[i] = r.save_s;
		stop_cpu[i] = r.stop_cpu_s;
		save_cpu[i] = r.save_cpu_s;
		floor_s[i] = r.floor_s;
		ratio[i] = r.stop_s / r.floor_s;
		fprintf(stderr,
		        "run %d: flush %.3f s, stop %.3f s (cpu %.3f s of which sys %.3f s, %.0f%% stolen), "
		        "save %.3f s "
		        "(cpu %.3f s of which sys %.3f s, %.0f%% stolen), floor %.3f s\n",
		        i + 1, r.flush_s, r.stop_s, r.stop_cpu_s, r.stop_sys_s, 100 * r.stop_steal, r.save_s,
		        r.save_cpu_s, r.save_sys_s, 100 * r.save_steal, r.floor_s);
	}
	double records = 2.0 * (double)n;
	double mf = bench_median(flush, runs), ms = bench_median(stop, runs), mv = bench_median(save, runs);
	/* After the medians: the arrays are sorted. */
	double bs = stop[0], bv = save[0];
	double mcs = bench_median(stop_cpu, runs), mcv = bench_median(save_cpu, runs);
	double mfl = bench_median(floor_s, runs), mr = bench_median(ratio, runs);
	printf("bench_cupti: %ld launches + %ld kernels = %.0f CUPTI records, %zu activities, median of %d "
	       "run%s\n",
	       n, n, records, r.activities, runs, runs > 1 ? "s" : "");
	printf("%-44s %10s %16s\n", "phase", "seconds", "rate");
	printf("%-44s %10.3f %12.2f M rec/s\n", "flush into strobe buffers (FlushAll)", mf,
	       records / mf / 1e6);
	printf("%-44s %10.3f %12.2f M rec/s\n", "decode + correlate (strobe_stop)", ms, records / ms / 1e6);
	printf("%-44s %10.3f %12.2f M rec/s\n", "flush + decode + correlate", mf + ms,
	       records / (mf + ms) / 1e6);
	printf("%-44s %10.3f %12.2f M act/s (%.0f MB/s)\n", "write JSON (strobe_trace_save)", mv,
	       (double)r.activities / mv / 1e6, (double)r.bytes / mv / 1e6);
	printf("%-44s %10.3f %12.2f M rec/s\n", "decode + correlate, best run", bs, records / bs / 1e6);
	printf("%-44s %10.3f %12.2f M act/s\n", "write JSON, best run", bv, (double)r.activities / bv / 1e6);
	printf("%-44s %10.3f %12.2f M rec/s\n", "decode + correlate, CPU time (median)", mcs,
	       records / mcs / 1e6);
	printf("%-44s %10.3f %12.2f M act/s\n", "write JSON, CPU time (median)", mcv,
	       (double)r.activities / mcv / 1e6);
	printf("%-44s %10.3f %12.2f M act/s\n", "floor: first write of the activity array", mfl,
	       (double)r.activities / mfl / 1e6);
	printf("decode + correlate / floor, same run (median): %.2f\n", mr);
	printf("JSON size %.1f MB; RSS after stop %.1f GB\n", (double)r.bytes / 1e6, (double)r.rss / 1e9);
	strobe_shutdown();
	return 0;
}

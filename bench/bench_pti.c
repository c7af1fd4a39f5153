/* Intel XPU record processing speed, through the fake libpti_view (v2
 * records, PTI 1.2): N SYCL kernel launches, each a runtime-call record and
 * a kernel record (2N records), over 2 devices and 4 SYCL queues, produced
 * during a trace, then timed:
 *   push    the fake writing the records into strobe's buffers and
 *           completing them on its own thread
 *   stop    strobe_stop: the final flush, decode (ptiViewGetNextRecord),
 *           correlate, link, rows and accounting, into the in-memory trace
 *   save    strobe_trace_save as plain JSON to a tmpfs directory
 * Medians over the runs, with each phase's process CPU time.
 * Usage: bench_pti [launches] [runs] [tmpfs-dir]
 * (default 5000000 launches = 10 M records, 3 runs, /dev/shm).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "backends/pti/pti_abi.h"
#include "bench_util.h"
#include "strobe/strobe.h"

#define QUEUES 4

/* The fake's control API (tests/fakes/fake_pti.h), reached by dlopen as
 * the backend reaches PTI. */
static struct {
	uint64_t (*now)(void);
	uint32_t (*next_corr)(void);
	uint32_t (*api)(uint32_t, uint32_t, uint32_t, uint64_t, uint64_t);
	const char *(*api_name)(uint32_t, uint32_t);
	void (*kernel)(int, uint64_t, uint32_t, const char *, uint64_t, uint64_t);
} fake;

static const char *const kernel_names[] = {"vector_add<float>", "reduce_sum", "gemm_tile<32, 32>",
                                           "softmax_fwd"};
static uint32_t launch_api;

static void push_records(long n, uint64_t base)
{
	for (long i = 0; i < n; i++) {
		uint64_t t = base + 2 * (uint64_t)i;
		uint32_t corr = fake.next_corr();
		fake.kernel((int)(i & 1), (uint64_t)(i & (QUEUES - 1)), corr, kernel_names[(i >> 1) & 3],
		            t + 1, t + 2);
		fake.api(PTI_API_GROUP_SYCL, launch_api, corr, t, t + 1);
	}
}

struct run {
	double push_s;
	struct bench_trace_size size;
	long rss;
};

static int one_run(long n, const char *dir, int i, struct run *r, struct bench_phases *p)
{
	char cfg[96];
	/* Room for every PTI record (a kernel is 184 bytes, a call 48), plus slack. */
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=%ld", n * 240 / (1 << 20) + 64);
	uint64_t mask = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	                STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_RUNTIME);
	if (strobe_prepare(mask, cfg) || strobe_start()) {
		fprintf(stderr, "bench_pti: prepare/start failed: %s\n", strobe_last_error());
		return -1;
	}
	uint64_t base = fake.now() + 1000;
	int64_t t0 = bench_now_ns();
	push_records(n, base);
	int64_t t1 = bench_now_ns();
	/* The last kernel must end in the past of the stop. */
	while (fake.now() < base + 2 * (uint64_t)n + 1000)
		;
	struct bench_mark m1 = bench_mark_now();
	strobe_trace *t = NULL;
	if (strobe_stop(&t) || !t) {
		fprintf(stderr, "bench_pti: stop failed: %s\n", strobe_last_error());
		return -1;
	}
	struct bench_mark m2 = bench_mark_now(), m3;
	r->rss = bench_rss_bytes();
	if (bench_save("bench_pti", t, dir, &m3, &r->size))
		return -1;
	if (r->size.activities != 2 * (size_t)n) {
		fprintf(stderr, "bench_pti: %zu activities in the trace, %ld expected\n", r->size.activities,
		        2 * n);
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
	void *h = dlopen(FAKE_PTI_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "bench_pti: %s\n", dlerror());
		return -1;
	}
	*(void **)&fake.now = dlsym(h, "fake_pti_now");
	*(void **)&fake.next_corr = dlsym(h, "fake_pti_next_corr");
	*(void **)&fake.api = dlsym(h, "fake_pti_api");
	*(void **)&fake.api_name = dlsym(h, "fake_pti_api_name");
	*(void **)&fake.kernel = dlsym(h, "fake_pti_kernel");
	if (!fake.now || !fake.next_corr || !fake.api || !fake.api_name || !fake.kernel) {
		fprintf(stderr, "bench_pti: %s lacks the fake's control API\n", FAKE_PTI_PATH);
		return -1;
	}
	for (uint32_t id = 1; id < 64 && !launch_api; id++) {
		const char *name = fake.api_name(PTI_API_GROUP_SYCL, id);
		if (name && !strcmp(name, "urEnqueueKernelLaunch"))
			launch_api = id;
	}
	if (!launch_api) {
		fprintf(stderr, "bench_pti: the fake has no urEnqueueKernelLaunch\n");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_args a;
	if (bench_parse_args(argc, argv, "bench_pti", 1000000000L, &a))
		return 2;
	long n = a.launches;
	setenv("STROBE_PTI_PATH", FAKE_PTI_PATH, 1);
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
	printf("bench_pti: %ld runtime calls + %ld kernels = %.0f PTI records, %zu activities, median of %d "
	       "run%s\n",
	       n, n, records, r.size.activities, a.runs, a.runs > 1 ? "s" : "");
	bench_report_head();
	bench_report_row("push through the fake (buffers)", mp, records, "rec");
	bench_report_row("decode + correlate (strobe_stop)", s.stop, records, "rec");
	bench_report_phases(&s, records, &r.size);
	bench_report_size(&r.size, r.rss);
	strobe_shutdown();
	return 0;
}

/* The device-counter sampler's cost: 8 devices of the fake NVML sampled at
 * 100 Hz (or the rate given) for a while; reports the sampler thread's CPU
 * time as a share of one core, the rounds it ran and missed, and how long
 * the stop and the processing of the samples took.
 *
 *   bench_counters [SECONDS] [HZ] [DEVICES]      (default 10 100 8)
 *
 * The fake answers each call from memory, so this is strobe's own cost per
 * call (the thread, the clock, the buffer) plus the fake's lock; a real NVML
 * call adds the driver's ioctl. */
#include <stdio.h>
#include <stdlib.h>

#include "backends/counters/sampler.h"
#include "bench_util.h"
#include "strobe/strobe.h"

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10;
	int hz = argc > 2 ? atoi(argv[2]) : 100, devices = argc > 3 ? atoi(argv[3]) : 8;
	char n[16], cfg[128];
	snprintf(n, sizeof(n), "%d", devices);
	setenv("STROBE_NVML_PATH", FAKE_NVML_PATH, 1);
	setenv("FAKE_NVML_DEVICES", n, 1);
	snprintf(cfg, sizeof(cfg), "ACTIVITY_TYPES=cpu_op,gpu_counters\nGPU_COUNTERS_SAMPLE_RATE_HZ=%d", hz);
	if (strobe_init(NULL) || strobe_prepare(0, cfg) || strobe_start()) {
		fprintf(stderr, "bench_counters: cannot start a trace: %s\n", strobe_last_error());
		return 1;
	}
	struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
	nanosleep(&ts, NULL);
	int64_t t0 = bench_now_ns();
	strobe_trace *t = NULL;
	if (strobe_stop(&t)) {
		fprintf(stderr, "bench_counters: stop failed: %s\n", strobe_last_error());
		return 1;
	}
	int64_t stop_ns = bench_now_ns() - t0;
	struct strb_counters_stats st;
	strb_counters_stats(&st);
	size_t events = strobe_trace_activity_count(t);
	strobe_trace_destroy(t);
	strobe_shutdown();
	printf("devices %d, rate %d Hz, %.1f s: %llu rounds (%llu late), %llu device samples, %zu counter "
	       "events\n",
	       devices, hz, (double)st.wall_ns / 1e9, (unsigned long long)st.ticks,
	       (unsigned long long)st.late, (unsigned long long)st.samples, events);
	printf("sampler thread: %.3f ms CPU in %.3f s = %.3f %% of one core (%.2f us per device sample)\n",
	       (double)st.cpu_ns / 1e6, (double)st.wall_ns / 1e9,
	       100.0 * (double)st.cpu_ns / (double)st.wall_ns,
	       st.samples ? (double)st.cpu_ns / 1e3 / (double)st.samples : 0.0);
	printf("stop + processing: %.3f ms\n", (double)stop_ns / 1e6);
	return 0;
}

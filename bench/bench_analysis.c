/* Speed of the trace analysis behind strobe summary and strobe report.
 * Writes a libkineto-style GPU trace of N steps (each: a cpu_op, four
 * cudaLaunchKernel calls with their ac2g flows, a copy, a GEMM, an
 * elementwise kernel and an NCCL all-reduce on three streams: 17 events),
 * then times whole runs of the given strobe commands on it, interleaved,
 * and prints median wall and CPU (user + system) seconds, events per CPU
 * second and each command's CPU time as a ratio of the first one's. Peak
 * memory is the child's maximum RSS.
 * Usage: bench_analysis STEPS RUNS DIR 'CMD1' ['CMD2' ...], where each CMD
 * is a shell command in which {} stands for the trace file, e.g.
 *   bench_analysis 250000 5 /dev/shm 'old/strobe summary --json {}' 'build/strobe summary --json {}'
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

#define MAX_CMDS 8
#define MAX_RUNS 32

static long write_trace(const char *path, long steps)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	long events = 0;
	fprintf(f,
	        "{\"schemaVersion\": 1, \"baseTimeNanoseconds\": 1790857026000000000,\n\"traceEvents\": [\n");
	static const char *const names[] = {"Memcpy HtoD (Pinned -> Device)", "ampere_sgemm_128x64_tn",
	                                    "void at::native::elementwise_kernel<128, 4>(int)",
	                                    "ncclDevKernel_AllReduce_Sum_f32_RING_LL"};
	static const char *const cats[] = {"gpu_memcpy", "kernel", "kernel", "kernel"};
	static const int streams[] = {8, 7, 7, 20};
	for (long s = 0; s < steps; s++) {
		long t = s * 1000;
		fprintf(f,
		        "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 100, "
		        "\"tid\": 100, "
		        "\"ts\": %ld.000, \"dur\": 300.000, \"args\": {\"External id\": %ld}},\n",
		        t, s + 1);
		long starts[] = {t + 20, t + 60, t + 280, t + 330}, durs[] = {30, 200 + s % 50, 50, 420};
		for (int k = 0; k < 4; k++) {
			long corr = s * 4 + k + 1;
			fprintf(
			    f,
			    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
			    "\"pid\": 100, "
			    "\"tid\": 100, \"ts\": %ld.000, \"dur\": 6.000, \"args\": {\"External id\": %ld, "
			    "\"cbid\": 211, \"correlation\": %ld}},\n"
			    "{\"ph\": \"s\", \"id\": %ld, \"pid\": 100, \"tid\": 100, \"ts\": %ld.000, "
			    "\"cat\": \"ac2g\", "
			    "\"name\": \"ac2g\"},\n"
			    "{\"ph\": \"X\", \"cat\": \"%s\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d, "
			    "\"ts\": %ld.000, "
			    "\"dur\": %ld.000, \"args\": {\"External id\": %ld, \"device\": 0, \"stream\": "
			    "%d, "
			    "\"correlation\": %ld, \"bytes\": 4194304}},\n"
			    "{\"ph\": \"f\", \"id\": %ld, \"pid\": 0, \"tid\": %d, \"ts\": %ld.000, \"cat\": "
			    "\"ac2g\", "
			    "\"name\": \"ac2g\", \"bp\": \"e\"},\n",
			    t + 5 + 10 * k, s + 1, corr, corr, t + 5 + 10 * k, cats[k], names[k], streams[k],
			    starts[k], durs[k], s + 1, streams[k], corr, corr, streams[k], starts[k]);
		}
		events += 17;
	}
	fprintf(
	    f,
	    "{\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", "
	    "\"ts\": %ld.000}\n]}\n",
	    steps * 1000);
	events++;
	return fclose(f) ? -1 : events;
}

/* Runs cmd (with {} replaced by path) in a shell; returns wall seconds, the
 * child's CPU seconds (user + system) in *cpu and its peak RSS in *rss. */
static double run(const char *cmd, const char *path, double *cpu, long *rss)
{
	char full[8192];
	size_t n = 0;
	for (const char *c = cmd; *c && n + strlen(path) + 16 < sizeof(full); c++) {
		if (c[0] == '{' && c[1] == '}') {
			n += (size_t)snprintf(full + n, sizeof(full) - n, "%s", path);
			c++;
		} else {
			full[n++] = *c;
		}
	}
	snprintf(full + n, sizeof(full) - n, " >/dev/null");
	int64_t t0 = bench_now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", full, (char *)NULL);
		_exit(127);
	}
	int status;
	struct rusage ru;
	if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench_analysis: '%s' failed\n", full);
		exit(1);
	}
	*rss = ru.ru_maxrss * 1024;
	*cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	return (double)(bench_now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 5 || argc - 4 > MAX_CMDS) {
		fprintf(stderr, "usage: bench_analysis STEPS RUNS DIR 'CMD {}' ['CMD {}' ...]\n");
		return 2;
	}
	long steps = atol(argv[1]);
	int runs = atoi(argv[2]), ncmd = argc - 4;
	if (steps < 1 || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "bench_analysis: STEPS >= 1, RUNS 1 to %d\n", MAX_RUNS);
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/bench_analysis.%d.json", argv[3], (int)getpid());
	long events = write_trace(path, steps);
	if (events < 0) {
		fprintf(stderr, "bench_analysis: cannot write %s\n", path);
		return 1;
	}
	FILE *f = fopen(path, "r");
	fseek(f, 0, SEEK_END);
	double mb = (double)ftell(f) / 1e6;
	fclose(f);
	printf("%ld events (%ld steps), %.1f MB of JSON; median of %d runs, commands interleaved\n", events,
	       steps, mb, runs);

	static double t[MAX_CMDS][MAX_RUNS], cpu[MAX_CMDS][MAX_RUNS];
	long rss[MAX_CMDS] = {0};
	for (int r = 0; r < runs; r++)
		for (int c = 0; c < ncmd; c++) {
			long peak;
			t[c][r] = run(argv[4 + c], path, &cpu[c][r], &peak);
			if (peak > rss[c])
				rss[c] = peak;
		}
	/* CPU time is the steadier figure on a shared machine; the ratio is of CPU times. */
	double first = 0;
	printf("%-52s %8s %8s %11s %9s %6s\n", "command", "wall s", "CPU s", "events/s", "peak MB", "ratio");
	for (int c = 0; c < ncmd; c++) {
		double m = bench_median(t[c], runs), mc = bench_median(cpu[c], runs);
		if (!c)
			first = mc;
		printf("%-52s %8.3f %8.3f %11.0f %9.0f %5.2fx\n", argv[4 + c], m, mc, (double)events / mc,
		       (double)rss[c] / 1e6, mc / first);
	}
	unlink(path);
	return 0;
}

/* strobe merge's speed: three ranks' traces of N events each (libkineto's
 * layout: ops with args, kernels, ac2g arrows, written by this program) are
 * merged into one plain JSON file, timed against `strobe summary` reading
 * the same three files (one streaming read each: merge reads each input
 * twice and writes the result). Medians over the runs.
 * Usage: bench_merge STROBE_CLI [events per rank] [runs] [tmpfs-dir]
 * (default 1000000 events, 3 runs, /dev/shm).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"

#define RANKS    3
#define MAX_RUNS 16

static void write_rank(const char *path, int rank, long n)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fprintf(f,
	        "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": %d, \"world_size\": %d}, "
	        "\"baseTimeNanoseconds\": %lld, \"traceEvents\": [\n",
	        rank, RANKS, 1790857026000000000LL + rank * 1000LL);
	fprintf(f, "{\"ph\": \"M\", \"name\": \"process_labels\", \"pid\": 4242, \"tid\": 0, "
	           "\"args\": {\"labels\": \"CPU\"}},\n");
	for (long i = 0; i < n; i += 4) {
		long long ts = 5166410272838951LL + i * 1000;
		fprintf(
		    f,
		    "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 4242, \"tid\": "
		    "4242, "
		    "\"ts\": %lld.%03lld, \"dur\": 1.500, \"args\": {\"External id\": %ld, \"Input Dims\": "
		    "[[2, 3], "
		    "[3, 4]], \"Input type\": \"float\"}},\n"
		    "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": "
		    "4242, "
		    "\"tid\": 4242, \"ts\": %lld.%03lld, \"dur\": 0.800, \"args\": {\"correlation\": %ld, "
		    "\"cbid\": 211}},\n"
		    "{\"ph\": \"s\", \"id\": %ld, \"pid\": 4242, \"tid\": 4242, \"ts\": %lld.%03lld, "
		    "\"cat\": \"ac2g\", "
		    "\"name\": \"ac2g\"},\n"
		    "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"ampere_sgemm_128x64_tn\", \"pid\": 0, "
		    "\"tid\": 7, \"ts\": %lld.%03lld, \"dur\": 2.000, \"args\": {\"correlation\": %ld, "
		    "\"stream\": 7, "
		    "\"grid\": [64, 1, 1], \"block\": [256, 1, 1]}},\n",
		    ts / 1000, ts % 1000, i, (ts + 100) / 1000, (ts + 100) % 1000, i, i, (ts + 100) / 1000,
		    (ts + 100) % 1000, (ts + 900) / 1000, (ts + 900) % 1000, i);
	}
	fprintf(
	    f, "{\"ph\": \"i\", \"s\": \"g\", \"name\": \"Record Window End\", \"pid\": \"\", \"tid\": \"\", "
	       "\"ts\": 5166410272838.951}\n]}\n");
	fclose(f);
}

static double timed(const char *cmd)
{
	int64_t t0 = bench_now_ns();
	if (system(cmd)) {
		fprintf(stderr, "failed: %s\n", cmd);
		exit(1);
	}
	return (double)(bench_now_ns() - t0) / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_merge STROBE_CLI [events per rank] [runs] [tmpfs-dir]\n");
		return 2;
	}
	const char *cli = argv[1];
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	int runs = argc > 3 ? atoi(argv[3]) : 3;
	const char *dir = argc > 4 ? argv[4] : "/dev/shm";
	if (n < 4 || runs < 1 || runs > MAX_RUNS)
		return 2;
	char paths[RANKS][512], out[512], cmd[4096];
	struct stat st;
	long long in_bytes = 0;
	for (int r = 0; r < RANKS; r++) {
		snprintf(paths[r], sizeof(paths[r]), "%s/bench_merge_%d_rank%d.json", dir, (int)getpid(), r);
		write_rank(paths[r], r, n);
		stat(paths[r], &st);
		in_bytes += st.st_size;
	}
	snprintf(out, sizeof(out), "%s/bench_merge_%d_out.json", dir, (int)getpid());
	double merge_s[MAX_RUNS], read_s[MAX_RUNS];
	for (int i = 0; i < runs; i++) {
		snprintf(cmd, sizeof(cmd),
		         "'%s' summary --json '%s' >/dev/null && '%s' summary --json '%s' >/dev/null && "
		         "'%s' summary --json '%s' >/dev/null",
		         cli, paths[0], cli, paths[1], cli, paths[2]);
		read_s[i] = timed(cmd);
		snprintf(cmd, sizeof(cmd), "'%s' merge -q -o '%s' '%s' '%s' '%s'", cli, out, paths[0],
		         paths[1], paths[2]);
		merge_s[i] = timed(cmd);
	}
	stat(out, &st);
	double m = bench_median(merge_s, runs), rd = bench_median(read_s, runs);
	printf("%d ranks x %ld events (%.1f MB in, %.1f MB out); median of %d runs\n", RANKS, n,
	       in_bytes / 1e6, st.st_size / 1e6, runs);
	printf("strobe summary of the 3 inputs  %7.2f s  (%.2f M events/s)\n", rd, RANKS * n / rd / 1e6);
	printf("strobe merge of the 3 inputs    %7.2f s  (%.2f M events/s; %.2fx the summary reads)\n", m,
	       RANKS * n / m / 1e6, m / rd);
	for (int r = 0; r < RANKS; r++)
		unlink(paths[r]);
	unlink(out);
	return 0;
}

/* strobe convert speed: a trace of N events (ops, ranges, instants,
 * counters, and launch/kernel pairs joined by ac2g flows) saved as JSON,
 * then converted by the strobe command to plain JSON (the baseline: the
 * reader and the plainest writer), Perfetto and JSON.zst, and the Perfetto
 * file back to JSON (the Perfetto reader). Each the median of repeated runs. Reports MB/s of input JSON and
 * time against the baseline. Usage: bench_convert STROBE-BINARY [events] [runs] [dir]
 */
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"
#include "strobe/strobe.h"

static double run(const char *const argv[])
{
	fflush(stdout);
	int64_t t0 = bench_now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s %s failed\n", argv[0], argv[1]);
		exit(1);
	}
	return (double)(bench_now_ns() - t0) / 1e9;
}

/* Converts from into to runs times; prints the median as a row (MB/s of
 * the mb input MB, time against base, or 1 when base is 0). Returns it. */
static double convert_row(const char *strobe, const char *label, const char *from, const char *to, int runs,
                          double mb, double base)
{
	double *secs = calloc((size_t)runs, sizeof(double));
	if (!secs)
		exit(1);
	for (int r = 0; r < runs; r++) {
		const char *const a[] = {strobe, "convert", "-q", from, to, NULL};
		secs[r] = run(a);
	}
	double s = bench_median(secs, runs);
	free(secs);
	struct stat os = {0};
	stat(to, &os);
	printf("%-22s %9.2f %9.1f %10.1f %9.2f\n", label, s, mb / s, (double)os.st_size / 1e6,
	       base ? s / base : 1.0);
	return s;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_convert STROBE-BINARY [events] [runs] [dir]\n");
		return 2;
	}
	const char *strobe = argv[1];
	long events = argc > 2 ? atol(argv[2]) : 1000000;
	int runs = argc > 3 ? atoi(argv[3]) : 3;
	const char *dir = argc > 4 ? argv[4] : "/dev/shm";
	if (events < 12 || runs < 1)
		return 2;
	strobe_init(NULL);
	char cfg[128];
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=%ld", events * 64 / (1 << 20) + 64);
	strobe_prepare(0, cfg);
	strobe_start();
	int64_t t = (int64_t)strobe_now_ns();
	for (long i = 0; i < events; i += 6) {
		uint64_t op = strobe_op_push("aten::linear");
		strobe_range_push("encoder.layer.attention");
		strobe_range_pop();
		strobe_op_pop();
		strobe_instant("step");
		strobe_counter("queue_depth", (double)(i & 7));
		const struct strobe_arg args[] = {
		    {.key = "correlation", .kind = STROBE_ARG_U64, .value.u64 = (uint64_t)i},
		    {.key = "cbid", .kind = STROBE_ARG_I64, .value.i64 = 211}};
		struct strobe_activity launch = {.size = sizeof(launch),
		                                 .type = STROBE_ACTIVITY_CUDA_RUNTIME,
		                                 .name = "cudaLaunchKernel",
		                                 .start_ns = t + i * 100,
		                                 .end_ns = t + i * 100 + 50,
		                                 .id = (uint64_t)i + 1,
		                                 .linked_id = op,
		                                 .flow_id = (uint64_t)i + 1,
		                                 .flow_kind = STROBE_FLOW_ASYNC_CPU_GPU,
		                                 .flags = STROBE_ACTIVITY_FLOW_START,
		                                 .args = args,
		                                 .arg_count = 2};
		strobe_record(&launch);
		struct strobe_activity kernel = launch;
		kernel.type = STROBE_ACTIVITY_CONCURRENT_KERNEL;
		kernel.name = "void gemm_kernel<float, 128, 64>(float const*, float*)";
		kernel.device = 1;
		kernel.resource = 7;
		kernel.start_ns += 60;
		kernel.end_ns += 90;
		kernel.flags = 0;
		strobe_record(&kernel);
	}
	strobe_trace *tr = NULL;
	strobe_stop(&tr);
	char in[4096], out[4096];
	snprintf(in, sizeof(in), "%s/strobe-bench-convert-in.json", dir);
	if (strobe_trace_save(tr, in)) {
		fprintf(stderr, "save %s: %s\n", in, strobe_last_error());
		return 1;
	}
	size_t n = strobe_trace_activity_count(tr);
	strobe_trace_destroy(tr);
	struct stat st;
	stat(in, &st);
	double mb = (double)st.st_size / 1e6;
	printf("%zu events, %.1f MB of JSON in %s; median of %d runs\n", n, mb, dir, runs);
	printf("%-22s %9s %9s %10s %9s\n", "convert to", "seconds", "MB/s", "out MB", "vs .json");
	static const char *const outs[] = {".json", ".pftrace", ".json.zst"};
	char pf[sizeof(out)];
	snprintf(pf, sizeof(pf), "%s/strobe-bench-convert-out.pftrace", dir);
	double base = 0;
	for (size_t k = 0; k < sizeof(outs) / sizeof(outs[0]); k++) {
		snprintf(out, sizeof(out), "%s/strobe-bench-convert-out%s", dir, outs[k]);
		double s = convert_row(strobe, outs[k], in, out, runs, mb, k ? base : 0);
		if (k == 0)
			base = s;
		if (strcmp(out, pf)) /* the .pftrace is read back below */
			unlink(out);
	}
	/* Reading Perfetto: the .pftrace written above back to plain JSON. The
	 * rate is of the JSON written (the baseline's input), so the two rows
	 * compare the readers. */
	snprintf(out, sizeof(out), "%s/strobe-bench-convert-back.json", dir);
	convert_row(strobe, ".pftrace -> .json", pf, out, runs, mb, base);
	unlink(out);
	unlink(pf);
	unlink(in);
	return 0;
}

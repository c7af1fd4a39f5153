/* Export speed: a trace of N events written as plain JSON, gzip, zstd and
 * Perfetto protobuf, to a memory-backed directory (tmpfs) and to disk, each
 * the median of repeated saves. Reports events/s, MB/s of plain JSON
 * equivalent, file size, bytes per event and size against plain JSON.
 * Usage: bench_export [events] [runs] [tmpfs-dir] [disk-dir]
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench_util.h"
#include "strobe/strobe.h"

static const char *const kinds[] = {".json", ".json.gz", ".json.zst", ".pftrace"};

int main(int argc, char **argv)
{
	long events = argc > 1 ? atol(argv[1]) : 1000000;
	int runs = argc > 2 ? atoi(argv[2]) : 5;
	const char *mem_dir = argc > 3 ? argv[3] : "/dev/shm";
	const char *disk_dir = argc > 4 ? argv[4] : ".";
	if (events < 10 || runs < 1) {
		fprintf(stderr, "usage: bench_export [events >= 10] [runs >= 1] [tmpfs-dir] [disk-dir]\n");
		return 2;
	}
	bench_pin(0);
	strobe_init(NULL);
	char cfg[128];
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=%ld", events * 64 / (1 << 20) + 64);
	strobe_prepare(0, cfg);
	strobe_start();
	/* A realistic mix: ops with nested annotations, instants and counters. */
	for (long i = 0; i < events; i += 4) {
		strobe_op_push("aten::linear");
		strobe_range_push("encoder.layer.attention");
		strobe_range_pop();
		strobe_op_pop();
		strobe_instant("step");
		strobe_counter("queue_depth", (double)(i & 7));
	}
	strobe_trace *t = NULL;
	strobe_stop(&t);
	size_t n = strobe_trace_activity_count(t);
	printf("%zu events; median of %d saves\n", n, runs);
	printf("%-8s %-10s %12s %10s %12s %10s %8s\n", "where", "format", "events/s", "MB/s", "file MB",
	       "B/event", "vs json");
	const char *dirs[] = {mem_dir, disk_dir};
	const char *where[] = {"tmpfs", "disk"};
	double json_bytes = 0;
	for (int d = 0; d < 2; d++) {
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/strobe-bench-export%s", dirs[d], kinds[k]);
			double *secs = calloc((size_t)runs, sizeof(double));
			struct stat st = {0};
			for (int r = 0; r < runs; r++) {
				int64_t t0 = bench_now_ns();
				int rc = strobe_trace_save(t, path);
				secs[r] = (double)(bench_now_ns() - t0) / 1e9;
				if (rc) {
					fprintf(stderr, "save %s: %s\n", path, strobe_last_error());
					return 1;
				}
				stat(path, &st);
			}
			if (k == 0)
				json_bytes = (double)st.st_size;
			double s = bench_median(secs, runs);
			printf("%-8s %-10s %12.0f %10.1f %12.1f %10.1f %8.3f\n", where[d], kinds[k],
			       (double)n / s, json_bytes / s / 1e6, (double)st.st_size / 1e6,
			       (double)st.st_size / (double)n, (double)st.st_size / json_bytes);
			unlink(path);
			free(secs);
		}
	}
	strobe_trace_destroy(t);
	return 0;
}

/* libFuzzer target for the analyses behind strobe summary and strobe report
 * (tools/analysis): any bytes must give a summary (text and JSON) and a
 * report page, or a clean error with a message, never a crash, a leak or a
 * read out of bounds. The input goes in as a file (an_read reads files),
 * read in two halves at once past a few hundred bytes, so that the merge of
 * the halves' tables and records is fuzzed too, with the analyses after the
 * read on two threads. Built with the project (clang only):
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSTROBE_BUILD_FUZZ=ON
 *   cmake --build build-fuzz --target fuzz_analysis
 *   ctest --test-dir build-fuzz -L fuzz          # replays fuzz/corpus/fuzz_analysis
 *   build-fuzz/fuzz/fuzz_analysis -max_len=65536 -max_total_time=60 \
 *     -dict=fuzz/trace_reader.dict NEW_DIR fuzz/corpus/fuzz_analysis
 *
 * New inputs go to NEW_DIR (first); add those worth keeping, and any
 * crash-* file once fixed, to fuzz/corpus/fuzz_analysis.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/present.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("STROBE_TOOL_THREADS", "2", 1);
	an_split_min = 256;
	sink = fopen("/dev/null", "w");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("trace", 0);
	if (fd < 0)
		abort();
	for (size_t off = 0; off < size;) {
		ssize_t n = write(fd, data + off, size - off);
		if (n <= 0)
			abort();
		off += (size_t)n;
	}
	char path[64], err[1024];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct an_trace a = {0};
	struct tr_stats st;
	/* The first byte picks --step-name and --top, as the commands set them. */
	a.step_name = size && data[0] & 1 ? "ProfilerStep#1" : NULL;
	size_t top = size && data[0] & 2 ? 2 : 0;
	int rc = an_read(&a, path, &st, err, sizeof(err));
	if (rc && !err[0])
		abort(); /* a failure without a message */
	if (!rc) {
		struct an_view v;
		char *page = NULL;
		size_t len = 0;
		if (!an_view_init(&v, &a, &st, path, top)) {
			an_print_text(&v, sink);
			an_print_json(&v, sink);
			if (!an_html_page(&v, &page, &len) && strlen(page) != len)
				abort(); /* a NUL inside the page */
		}
		free(page);
		an_view_free(&v);
	}
	an_free(&a);
	close(fd);
	return 0;
}

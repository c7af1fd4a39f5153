/* libFuzzer target for the config parser (src/common/config.c,
 * strb_config_parse): any text must parse or be refused with a message and
 * the config left as it was (all or nothing); whatever parses must be
 * written back by strb_config_format as text that parses again to the same
 * config (formatted the same). Built with the project (clang only):
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSTROBE_BUILD_FUZZ=ON
 *   cmake --build build-fuzz --target fuzz_config
 *   ctest --test-dir build-fuzz -L fuzz          # replays fuzz/corpus/fuzz_config
 *   build-fuzz/fuzz/fuzz_config -max_len=4096 -max_total_time=60 -dict=fuzz/config.dict \
 *     NEW_DIR fuzz/corpus/fuzz_config
 *
 * New inputs go to NEW_DIR (first); add those worth keeping, and any
 * crash-* file once fixed, to fuzz/corpus/fuzz_config. The first byte's
 * low bit says whether the text came on demand (from a daemon), which
 * restricts where the log file may go.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "strobe/strobe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	if (!quiet) {
		strobe_log_set_level(STROBE_LOG_ERROR); /* unknown keys warn; that is not news here */
		quiet = true;
	}
	if (size > 1 << 16)
		return 0;
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	const struct strb_config_parse_opts opts = {.on_demand = size && (data[0] & 1),
	                                            .now_ms = INT64_C(1700000000000),
	                                            .pid = 4242,
	                                            .ondemand_dir = "/tmp/"};

	static struct strb_config cfg, before, again;
	strb_config_init(&cfg);
	before = cfg;
	char err[512];
	err[0] = 0;
	if (strb_config_parse(&cfg, text, &opts, err, sizeof(err))) {
		/* Refused: with a reason, and nothing changed. */
		if (!err[0] || !memchr(err, 0, sizeof(err)) || memcmp(&cfg, &before, sizeof(cfg)))
			abort();
		free(text);
		return 0;
	}
	char *out = strb_config_format(&cfg);
	if (out) {
		strb_config_init(&again);
		if (strb_config_parse(&again, out, &opts, err, sizeof(err)))
			abort(); /* what format writes must parse */
		char *out2 = strb_config_format(&again);
		if (out2 && strcmp(out, out2))
			abort();
		free(out2);
	}
	free(out);
	free(text);
	return 0;
}

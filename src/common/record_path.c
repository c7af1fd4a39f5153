#include "common/record_path.h"

#include <stdio.h>
#include <string.h>

void strb_record_path(const char *out, pid_t pid, pid_t root, char *path, size_t len)
{
	static const char *const suffixes[] = {".json.gz",        ".json.zst", ".json", ".pftrace",
	                                       ".perfetto-trace", ".gz",       ".zst"};
	if (pid == root) {
		snprintf(path, len, "%s", out);
		return;
	}
	size_t n = strlen(out), cut = n;
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t s = strlen(suffixes[i]);
		if (n > s && !strcmp(out + n - s, suffixes[i])) {
			cut = n - s;
			break;
		}
	}
	snprintf(path, len, "%.*s.%d%s", (int)cut, out, (int)pid, out + cut);
}

/* strobe config: check a libkineto/strobe config text and print the
 * effective options. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "common/config.h"
#include "strobe/strobe.h"

#define TEXT_MAX ((size_t)64 << 20) /* a config is a few hundred bytes; refuse absurd input */

static void usage(FILE *out)
{
	fprintf(out, "usage: strobe config check [--on-demand] [FILE|-]\n"
	             "       strobe config defaults\n\n"
	             "check     parses a libkineto config text (KEY=VALUE lines) on top of the\n"
	             "          defaults and prints the effective options, one KEY=VALUE line per\n"
	             "          key; lines starting with '#' show values that are defaults or\n"
	             "          cannot be written back. The output parses to the same config.\n"
	             "          Without FILE, or with '-', the text is read from stdin.\n"
	             "          Exit status: 0 valid, 1 refused or unreadable, 2 usage error.\n"
	             "  --on-demand  check it as an on-demand (daemon) request: ACTIVITIES_LOG_FILE\n"
	             "          must lie beneath $STROBE_ONDEMAND_TRACE_DIR (else\n"
	             "          $KINETO_ONDEMAND_TRACE_DIR, else /tmp/) and must not contain \"..\".\n"
	             "defaults  prints the default options.\n\n"
	             "Examples:\n"
	             "  strobe config check /etc/libkineto.conf\n"
	             "  printf 'ACTIVITIES_DURATION_MSECS=2000\\nACTIVITY_TYPES=cpu_op,kernel\\n' |\n"
	             "      strobe config check --on-demand\n"
	             "  strobe config defaults\n\n"
	             "Every key is described in docs/config.md.\n");
}

/* NULL with errno set when the text cannot be read. */
static char *read_text(FILE *in, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	if (!buf)
		return NULL;
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n, in);
		n += got;
		if (n < cap) {
			if (ferror(in)) {
				free(buf);
				errno = EIO;
				return NULL;
			}
			break;
		}
		if (cap >= TEXT_MAX) {
			free(buf);
			errno = EFBIG;
			return NULL;
		}
		cap *= 2;
		char *bigger = realloc(buf, cap + 1);
		if (!bigger) {
			free(buf);
			errno = ENOMEM;
			return NULL;
		}
		buf = bigger;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

static int print_config(const struct strb_config *cfg)
{
	char *text = strb_config_format(cfg);
	if (!text) {
		fprintf(stderr, "strobe: out of memory\n");
		return 1;
	}
	fputs(text, stdout);
	free(text);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int check(const char *path, bool on_demand)
{
	bool use_stdin = !path || !strcmp(path, "-");
	const char *name = use_stdin ? "<stdin>" : path;
	FILE *in = use_stdin ? stdin : fopen(path, "rb");
	if (!in) {
		fprintf(stderr, "strobe: %s: %s\n", name, strerror(errno));
		return 1;
	}
	size_t len = 0;
	char *text = read_text(in, &len);
	int saved = errno;
	if (!use_stdin)
		fclose(in);
	if (!text) {
		fprintf(stderr, "strobe: %s: %s\n", name, strerror(saved));
		return 1;
	}
	/* The parser sees a C string: a NUL would silently end the text. */
	const char *nul = memchr(text, 0, len);
	if (nul) {
		size_t line = 1;
		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		fprintf(stderr, "strobe: %s: line %zu: contains a NUL byte\n", name, line);
		free(text);
		return 1;
	}

	struct strb_config cfg;
	struct strb_config_parse_opts opts = {.on_demand = on_demand};
	char err[1024];
	strb_config_init(&cfg);
	int rc = strb_config_parse(&cfg, text, &opts, err, sizeof(err));
	free(text);
	if (rc) {
		fprintf(stderr, "strobe: %s: %s\n", name, err);
		return 1;
	}
	return print_config(&cfg);
}

static bool is_help(const char *arg)
{
	return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

static int cmd_check(int argc, char **argv)
{
	bool on_demand = false, options_done = false;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!options_done && a[0] == '-' && a[1]) {
			if (is_help(a)) {
				usage(stdout);
				return 0;
			}
			if (!strcmp(a, "--on-demand")) {
				on_demand = true;
			} else if (!strcmp(a, "--")) {
				options_done = true;
			} else {
				fprintf(stderr, "strobe: config check: unknown option '%s'\n\n", a);
				usage(stderr);
				return 2;
			}
		} else if (path) {
			fprintf(stderr, "strobe: config check: one FILE at most\n\n");
			usage(stderr);
			return 2;
		} else {
			path = a;
		}
	}
	return check(path, on_demand);
}

int cmd_config(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *sub = argv[1];
	if (is_help(sub) || !strcmp(sub, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(sub, "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(sub, "defaults")) {
		if (argc > 2 && is_help(argv[2])) {
			usage(stdout);
			return 0;
		}
		if (argc > 2) {
			fprintf(stderr, "strobe: config defaults: unexpected argument '%s'\n", argv[2]);
			return 2;
		}
		struct strb_config cfg;
		strb_config_init(&cfg);
		strb_config_validate(&cfg, 0);
		return print_config(&cfg);
	}
	fprintf(stderr, "strobe: config: unknown subcommand '%s'\n\n", sub);
	usage(stderr);
	return 2;
}

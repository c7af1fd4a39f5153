/* strobe config: check a libkineto/strobe config text and print the
 * effective options. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cli.h"
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

static const struct cli cli = {"config",
                               "strobe config check [--on-demand] [FILE|-] | strobe config defaults"};
static const struct cli check_cli = {"config check", "strobe config check [--on-demand] [FILE|-]"};

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
	if (!path)
		path = "-";
	const char *name = strcmp(path, "-") ? path : "<stdin>";
	size_t len = 0;
	char err[1024];
	char *text = cli_read_file(path, TEXT_MAX, &len, err, sizeof(err));
	if (!text) {
		fprintf(stderr, "strobe: %s\n", err);
		return 1;
	}
	/* The parser sees a C string: a NUL would silently end the text. */
	const char *nul = memchr(text, 0, len);
	if (nul) {
		size_t line = 1;
		for (const char *p = text; p < nul; p++)
			line += *p == '\n';
		free(text);
		fprintf(stderr, "strobe: %s: line %zu: contains a NUL byte\n", name, line);
		return 1;
	}

	struct strb_config cfg;
	struct strb_config_parse_opts opts = {.on_demand = on_demand};
	strb_config_init(&cfg);
	int rc = strb_config_parse(&cfg, text, &opts, err, sizeof(err));
	free(text);
	if (rc) {
		fprintf(stderr, "strobe: %s: %s\n", name, err);
		return 1;
	}
	return print_config(&cfg);
}

static int cmd_check(int argc, char **argv)
{
	bool on_demand = false, options_done = false;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!options_done && a[0] == '-' && a[1]) {
			if (cli_is_help(a)) {
				usage(stdout);
				return 0;
			}
			if (!strcmp(a, "--on-demand")) {
				on_demand = true;
			} else if (!strcmp(a, "--")) {
				options_done = true;
			} else {
				return cli_usage(&check_cli, "unknown option '%s'", a);
			}
		} else if (path) {
			return cli_usage(&check_cli, "one FILE at most ('%s' is a second)", a);
		} else {
			path = a;
		}
	}
	return check(path, on_demand);
}

int cmd_config(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage(&cli, "which? 'check' or 'defaults'");
	const char *sub = argv[1];
	if (cli_is_help(sub) || !strcmp(sub, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(sub, "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(sub, "defaults")) {
		if (argc > 2 && cli_is_help(argv[2])) {
			usage(stdout);
			return 0;
		}
		if (argc > 2)
			return cli_usage(&cli, "config defaults takes no argument ('%s')", argv[2]);
		struct strb_config cfg;
		strb_config_init(&cfg);
		strb_config_validate(&cfg, 0);
		return print_config(&cfg);
	}
	return cli_usage(&cli, "unknown subcommand '%s'", sub);
}

#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cli.h"
#include "cmd/commands.h"
#include "strobe/strobe.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
    {"config", cmd_config, "check a libkineto/strobe config and print the effective options"},
    {"convert", cmd_convert, "convert a trace: Chrome JSON (plain, .gz, .zst) to Perfetto protobuf or JSON"},
    {"diff", cmd_diff, "compare two traces: steps, ops and kernels slower, faster, new or gone"},
    {"merge", cmd_merge, "merge several ranks' traces into one, side by side on one time axis"},
    {"record", cmd_record, "run a program with strobe injected and write its trace (no code change)"},
    {"report", cmd_report, "write one self-contained HTML page about a trace: tables and charts"},
    {"summary", cmd_summary, "summarise a trace file: top names, self time, counts, drops"},
    {"trigger", cmd_trigger, "start an on-demand trace in running processes (daemon, direct or signal)"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: strobe <command> [options]\n"
	             "       strobe help [<command>] | --version\n\n"
	             "strobe is a low-overhead GPU and CPU timeline profiler. Commands:\n\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'strobe help <command>' (or 'strobe <command> --help') for a command's options.\n"
	             "Examples:\n"
	             "  strobe record -o trace.json.gz -- ./my_app --its --args\n"
	             "  strobe config check /etc/libkineto.conf\n"
	             "  strobe summary trace.json.gz\n"
	             "  strobe report trace.json -o report.html\n"
	             "  strobe convert trace.json trace.pftrace\n");
}

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	return NULL;
}

static int unknown(const char *name)
{
	fprintf(stderr, "strobe: unknown command '%s'\n\n", name);
	usage(stderr);
	return CLI_USAGE;
}

int main(int argc, char **argv)
{
#ifdef M_MMAP_THRESHOLD
	/* The analyses' per-event arrays grow by doubling and are freed as
	 * each analysis is done with them: in mappings of their own their
	 * memory goes back when freed (glibc would raise its threshold after
	 * the first such free, and keep later ones in a heap that does not
	 * shrink). A setting of the whole process: here, not in the library. */
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
	if (argc < 2) {
		usage(stderr);
		return CLI_USAGE;
	}
	if (cli_is_help(argv[1]) || !strcmp(argv[1], "help")) {
		if (argc == 2) {
			usage(stdout);
			return 0;
		}
		/* "strobe help CMD": CMD's own help. */
		const struct command *c = find(argv[2]);
		if (!c)
			return unknown(argv[2]);
		char name[16], help[] = "--help";
		snprintf(name, sizeof(name), "%s", c->name);
		char *cargv[] = {name, help, NULL};
		return c->run(2, cargv);
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("strobe %s\n", strobe_version());
		return 0;
	}
	const struct command *c = find(argv[1]);
	return c ? c->run(argc - 1, argv + 1) : unknown(argv[1]);
}

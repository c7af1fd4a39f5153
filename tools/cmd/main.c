#include <stdio.h>
#include <string.h>

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
	{"merge", cmd_merge, "merge several ranks' traces into one, side by side on one time axis"},
	{"record", cmd_record, "run a program with strobe injected and write its trace (no code change)"},
	{"report", cmd_report, "write one self-contained HTML page about a trace: tables and charts"},
	{"summary", cmd_summary, "summarise a trace file: top names, self time, counts, drops"},
	{"trigger", cmd_trigger, "start an on-demand trace in running processes (daemon, direct or signal)"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: strobe <command> [options]\n"
		     "       strobe --help | --version\n\n"
		     "strobe is a low-overhead GPU and CPU timeline profiler. Commands:\n\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nRun 'strobe <command> --help' for a command's options.\n"
		     "Examples:\n"
		     "  strobe record -o trace.json.gz -- ./my_app --its --args\n"
		     "  strobe config check /etc/libkineto.conf\n"
		     "  strobe summary trace.json.gz\n"
		     "  strobe report trace.json -o report.html\n"
		     "  strobe convert trace.json trace.pftrace\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("strobe %s\n", strobe_version());
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "strobe: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}

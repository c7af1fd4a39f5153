/* What every command shares on its command line: one format for usage
 * errors (exit status 2, naming the option and the bad value), one grammar
 * for durations, counts and names given as option values, and reading a
 * whole file (or stdin).
 *
 * A command keeps one struct cli and parses its argv with it:
 *
 *	static const struct cli cli = {"convert", "strobe convert [options] IN OUT"};
 *	...
 *	} else if (cli_opt(argc, argv, &i, "--min-dur", NULL, &v)) {
 *		if ((rc = cli_duration(&cli, "--min-dur", v, &o->min_dur)))
 *			return rc;
 *
 * Every function that reports prints on stderr and returns the exit status
 * the command should end with (CLI_USAGE for usage errors, 1 for others);
 * 0 means the value was good. */
#ifndef STROBE_TOOLS_CLI_H
#define STROBE_TOOLS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLI_USAGE 2 /* the exit status of a usage error */

struct tr_stats;

/* What a duration option takes, for help texts. */
#define CLI_DURATION_HELP "a number with a unit: ns, us, ms, s, m (minutes) or h; a bare number is seconds"

/* The environment of the commands that read a trace through an_read
 * (analysis.h, an_threads), for their help texts. */
#define CLI_THREADS_HELP                                                                                     \
	"environment:\n"                                                                                     \
	"  STROBE_TOOL_THREADS=N  1: one thread for everything; 2: a plain JSON file of 64 MiB or\n"         \
	"              more is read in two halves at once, and the analyses after the read run on\n"         \
	"              two threads, at the same peak memory; unset: 2 when the command may use two\n"        \
	"              CPUs, else 1. The output is the same either way.\n"

struct cli {
	const char *cmd;      /* "convert", "config check": after "strobe: " in messages */
	const char *synopsis; /* "strobe convert [options] IN OUT": the usage line */
};

/* Prints "strobe: CMD: MESSAGE" and "usage: SYNOPSIS (see strobe CMD
 * --help)" on stderr; returns CLI_USAGE. */
int cli_usage(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A usage error about an option's value: "OPT needs WHAT" when value is
 * NULL (the option came last), else "OPT: 'VALUE' is not WHAT". WHAT reads
 * as a noun: "a duration (...)", "a count from 0 to 100". Returns CLI_USAGE. */
int cli_bad_value(const struct cli *c, const char *opt, const char *value, const char *what);

/* Prints "strobe: CMD: MESSAGE" on stderr; returns 1 (a failure that is
 * not a usage error). */
int cli_error(const struct cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "-h" or "--help". */
bool cli_is_help(const char *arg);

/* Whether argv[*i] is the option NAME (or ALIAS; NULL for none) that takes
 * a value, given as "NAME VALUE" or, for a long name, "NAME=VALUE". When it
 * is, *value is the value, or NULL when none follows, and *i is moved past
 * what was used. */
bool cli_opt(int argc, char **argv, int *i, const char *name, const char *alias, const char **value);

/* The duration grammar of every option: digits, optionally a fraction
 * ("1.5"), then a unit ns, us, ms, s, m (minutes), min or h, or none for
 * seconds. No sign, exponent or space. 0 and the duration in *ns, -EINVAL
 * when s is not one, -ERANGE when it is over INT64_MAX ns (292 years). */
int cli_parse_duration(const char *s, int64_t *ns);

/* The value of a duration option OPT (value as from cli_opt), or a usage
 * error naming OPT and the value. */
int cli_duration(const struct cli *c, const char *opt, const char *value, int64_t *ns);

/* The value of an integer option OPT from min to max, in decimal, or a
 * usage error naming OPT, the value and the range. */
int cli_int(const struct cli *c, const char *opt, const char *value, int64_t min, int64_t max, int64_t *out);

/* The value of an option OPT that must not be empty (a file name, a list),
 * or a usage error; what names it ("a file name"). */
int cli_text(const struct cli *c, const char *opt, const char *value, const char *what, const char **out);

/* For a command that takes one FILE and no other operands: takes argv[*i]
 * (not an option) as the file, or the one argument after "--", moving *i
 * past it. 0, or a usage error: an unknown option, a second file. */
int cli_file_arg(const struct cli *c, int argc, char **argv, int *i, const char **file);

/* For a command that reads one trace and shows its first rows: takes
 * argv[*i] as "--top N" (0 to 1000000) into *top, else as cli_file_arg. */
int cli_top_or_file(const struct cli *c, int argc, char **argv, int *i, size_t *top, const char **file);

/* The whole of the file at path ("-": stdin) with a NUL after its last
 * byte, and its length in *len; free() it. NULL when it cannot be read or
 * is larger than max bytes, with "PATH: why" (stdin named "<stdin>") in
 * err. */
char *cli_read_file(const char *path, size_t max, size_t *len, char *err, size_t errlen);

/* Progress of reading and analysing a trace, on stderr (strobe summary,
 * report): one line rewritten in place, at most four times a second, with
 * the megabytes read of the file's size and the events so far. */
struct cli_progress {
	const char *cmd;
	uint64_t total; /* the file's bytes; 0 when unknown (stdin) */
	int64_t last_ns;
	bool shown;
};

/* Sets p up for file; returns whether progress is to be shown: not quiet,
 * and asked for or stderr is a terminal. */
bool cli_progress_start(struct cli_progress *p, const char *cmd, const char *file, bool quiet, bool asked);
/* struct an_trace's progress_cb, with p as its argument. */
void cli_progress_cb(const char *pass, const struct tr_stats *st, void *p);
/* Ends the line, when one was shown. */
void cli_progress_end(struct cli_progress *p);

#endif

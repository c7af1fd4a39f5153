/* Subcommands of the strobe command. Each gets argv starting at its own
 * name and returns the process exit status. Output that is the command's
 * result goes to stdout; diagnostics to stderr, prefixed "strobe: ". */
#ifndef STROBE_TOOLS_COMMANDS_H
#define STROBE_TOOLS_COMMANDS_H

#include <stddef.h>

#include "strobe/strobe.h"

int cmd_config(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_trigger(int argc, char **argv);

/* libstrobe's reader of the flight recorder's raw crash dumps (convert,
 * record): not API (STROBE_PRIVATE in src/libstrobe.map), this strobe's own
 * library; src/control/flight_crash.h declares it for the library. */
STROBE_API int strobe_internal_flight_convert(const char *raw, const char *out, char *err, size_t len);

#endif

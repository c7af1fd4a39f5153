/* Subcommands of the strobe command. Each gets argv starting at its own
 * name and returns the process exit status. Output that is the command's
 * result goes to stdout; diagnostics to stderr, prefixed "strobe: ". */
#ifndef STROBE_TOOLS_COMMANDS_H
#define STROBE_TOOLS_COMMANDS_H

int cmd_config(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_trigger(int argc, char **argv);

#endif

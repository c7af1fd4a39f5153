/* Output writers: the registry behind strobe_trace_save and the built-in
 * writers. */
#ifndef STROBE_OUTPUT_OUTPUT_H
#define STROBE_OUTPUT_OUTPUT_H

#include "strobe/plugin.h"

void strb_output_atfork_child(void);

/* The Chrome-trace JSON writer; compression is chosen by the path's
 * suffix (.gz, .zst). */
int strb_json_write(const strobe_trace *trace, const char *path, void *user_arg);
/* The same into an open sink, which it commits or aborts; path is the
 * document's traceName. */
struct strb_sink;
int strb_json_write_sink(const strobe_trace *trace, struct strb_sink *sink, const char *path);

#endif

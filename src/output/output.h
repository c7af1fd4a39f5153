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

/* The Perfetto protobuf writer (never compressed: Perfetto's tools read
 * plain protobuf). */
int strb_perfetto_write(const strobe_trace *trace, const char *path, void *user_arg);
int strb_perfetto_write_sink(const strobe_trace *trace, struct strb_sink *sink, const char *path);

/* "file://" and plain paths: Perfetto or JSON by the path's suffix. */
int strb_file_write(const strobe_trace *trace, const char *path, void *user_arg);
/* The same into an open sink, which it commits or aborts. */
int strb_file_write_sink(const strobe_trace *trace, struct strb_sink *sink, const char *path);

/* Rules both writers share. */
bool strb_output_is_counter(enum strobe_activity_type type);
/* The "External id" an activity shows, 0 for none. */
uint64_t strb_output_external_id(const struct strobe_activity *a);

#endif

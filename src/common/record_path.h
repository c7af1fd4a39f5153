/* Where each process of a `strobe record` run writes its trace: the first
 * process the -o path itself, every other one the same name with ".PID"
 * before the format's suffix (trace.json.gz -> trace.1234.json.gz). Shared
 * by the library (which writes) and the command (which looks for files a
 * process could not report). */
#ifndef STROBE_COMMON_RECORD_PATH_H
#define STROBE_COMMON_RECORD_PATH_H

#include <stddef.h>
#include <sys/types.h>

void strb_record_path(const char *out, pid_t pid, pid_t root, char *path, size_t len);

#endif

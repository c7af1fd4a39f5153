/* The short summary strobe record prints when the program ends. */
#ifndef STROBE_TOOLS_RECORD_SUMMARY_H
#define STROBE_TOOLS_RECORD_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

/* Reads the trace at path and prints to out: top kernels, top annotation
 * (NVTX) ranges, GPU busy time per device and anything dropped. wall_ns is
 * how long the program ran. Returns 0, or a negative errno after printing
 * why the trace could not be read. */
int record_summary(const char *path, int64_t wall_ns, FILE *out);

#endif

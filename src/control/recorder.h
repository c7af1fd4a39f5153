/* `strobe record`'s side inside the traced program: one window (from a
 * delay, for a duration or until exit), written exactly once to the file
 * strobe record asked for, and the entry points that libstrobe_inject.so
 * forwards to.
 *
 * strobe record passes its settings in the environment:
 *   STROBE_RECORD_OUTPUT      where the first process writes (required)
 *   STROBE_RECORD_DELAY_NS    window start after the process starts (0)
 *   STROBE_RECORD_DURATION_NS window length; 0 = until exit
 *   STROBE_RECORD_CONFIG      config text (KEY=VALUE lines) over the base
 *   STROBE_RECORD_FD          the channel to strobe record (a SOCK_SEQPACKET
 *                             socket, inherited)
 *   STROBE_RECORD_ROOT_PID    the first process; others add their pid to
 *                             the file name
 *   STROBE_RECORD_PID         strobe record itself (the socket's peer)
 *   STROBE_RECORD_FOLLOW      0: children are not traced
 *   STROBE_RECORD_FLIGHT_NS   flight mode (--flight): the window a dump
 *                             holds; no whole-run trace is written
 *   STROBE_RECORD_FLIGHT_MEM, STROBE_RECORD_HANG_AFTER_NS,
 *   STROBE_RECORD_DUMP_ON_EXIT  the flight recorder's other settings
 * and messages on the channel are one line of text each:
 *   to strobe record:  "hello PID", "wrote PID PATH", "failed PID WHY",
 *                      "nothing PID WHY"; in flight mode "dump PID PATH\nREASON"
 *                      for each dump, "dumpfail PID WHY", and "done PID WHY"
 *                      when the flight recorder stopped
 *   from strobe record: "finish" (write the trace now; each process takes
 *                      one such message and stops reading).
 */
#ifndef STROBE_CONTROL_RECORDER_H
#define STROBE_CONTROL_RECORDER_H

#include "strobe/strobe.h"

/* Called by libstrobe_inject.so, also when libstrobe is already in the
 * process (then it is the same instance). Never fail the host program. */

/* The injected library was loaded (LD_PRELOAD, or a CUDA or NVTX loader):
 * starts record mode when strobe record's settings are in the
 * environment. Idempotent. */
STROBE_API void strobe_internal_record_boot(void);
/* The CUDA driver's InitializeInjection. Returns 1. */
STROBE_API int strobe_internal_inject_cuda(void);
/* NVTX's InitializeInjectionNvtx2; see nvtx/nvtx.h. */
STROBE_API int strobe_internal_inject_nvtx(const void *get_export_table);

void strb_recorder_atfork_child(void);

#endif

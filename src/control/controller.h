/* The controller: the one state machine every trigger drives. Sync traces
 * (strobe_prepare/start/stop) go through it today; on-demand triggers use
 * the same prepare/start/stop steps from strobe's own thread. */
#ifndef STROBE_CONTROL_CONTROLLER_H
#define STROBE_CONTROL_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"
#include "strobe/strobe.h"

enum strb_state {
	STRB_IDLE = 0,
	STRB_PREPARED,
	STRB_RUNNING,
	STRB_CAPTURED, /* capture ended, not yet processed */
};

/* Who drives the current trace: the caller of strobe_prepare (sync), the
 * on-demand machinery, or `strobe record`'s window. A sync prepare replaces
 * anything but a record window; the others are refused with -EBUSY while
 * any trace exists; every other step must come from the owner. */
enum strb_owner {
	STRB_OWNER_NONE = 0,
	STRB_OWNER_SYNC,
	STRB_OWNER_ASYNC,
	STRB_OWNER_RECORD,
	STRB_OWNER_FLIGHT, /* the flight recorder: a session that dumps and goes on */
};

/* Each returns a status and leaves a message in strobe_last_error. */
int strb_control_prepare(const struct strb_config *cfg, enum strb_owner who);
int strb_control_start(enum strb_owner who);
/* Closes the window; cheap enough for the application's thread. */
int strb_control_end_capture(enum strb_owner who);
/* Stops the collectors and processes the captured window. */
int strb_control_finish(enum strb_owner who, strobe_trace **out);
/* end_capture + finish for the sync owner. */
int strb_control_stop(strobe_trace **out);
/* Never waits: safe from strobe_step() while a trace is being processed. */
enum strb_owner strb_control_owner(void);
/* strobe_toggle_collection. */
int strb_control_toggle(bool enable);
/* Drops the trace if `who` owns it (STRB_OWNER_NONE: whoever does). */
void strb_control_cancel(enum strb_owner who);
enum strb_state strb_control_state(void);

/* The flight recorder (control/flight.c drives it): a session recording
 * into per-thread rings bounded by cfg->max_cpu_buffer_bytes; nothing else
 * may trace meanwhile (refused with -EBUSY and the reason). */
int strb_control_flight_start(const struct strb_config *cfg);
/* The window_ns of the running flight session up to the tick `asked` (when
 * the dump was asked for: it may have waited for another dump or a GPU
 * snapshot since) as a trace, without stopping it; fc gets the rings'
 * counts. */
struct strb_flight_counts;
int strb_control_flight_dump(uint64_t window_ns, uint64_t asked, strobe_trace **out,
                             struct strb_flight_counts *fc);
/* The running flight session's GPU records of the last window_ns, decoded
 * as a dump decodes them (rows and the backends' metadata too, no CPU
 * work), with the tick it ends at. */
int strb_control_flight_gpu(uint64_t window_ns, strobe_trace **out, uint64_t *ticks);
/* Whether the running flight session has a GPU backend that keeps records. */
bool strb_control_flight_has_gpu(void);
int strb_control_flight_stop(void);

void strb_control_atfork_child(void);

#endif

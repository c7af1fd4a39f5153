/* The controller: the one state machine every trigger drives. Sync traces
 * (strobe_prepare/start/stop) go through it today; on-demand triggers use
 * the same prepare/start/stop steps from strobe's own thread. */
#ifndef STROBE_CONTROL_CONTROLLER_H
#define STROBE_CONTROL_CONTROLLER_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "strobe/strobe.h"

enum strb_state {
	STRB_IDLE = 0,
	STRB_PREPARED,
	STRB_RUNNING,
};

/* Each returns a status and leaves a message in strobe_last_error. */
int strb_control_prepare(const struct strb_config *cfg);
int strb_control_start(void);
int strb_control_stop(strobe_trace **out);
/* strobe_toggle_collection. */
int strb_control_toggle(bool enable);
/* Drops a prepared or running trace. */
void strb_control_cancel(void);
enum strb_state strb_control_state(void);

void strb_control_atfork_child(void);

#endif

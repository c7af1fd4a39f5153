/* The flight recorder (flight.c): the public strobe_flight_* calls, the
 * environment (STROBE_FLIGHT...), the hang watchdog and dumps. */
#ifndef STROBE_CONTROL_FLIGHT_H
#define STROBE_CONTROL_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strobe/strobe.h"

int strb_flight_start(const struct strobe_flight_opts *opts);
int strb_flight_dump(const char *reason, char *path, size_t path_len);
/* Stops it; final_dump: write the last window first when dump_on_exit. */
int strb_flight_stop(bool final_dump, const char *reason);
bool strb_flight_running(void);
/* strobe_step(): the watchdog's heartbeat (the first one arms it). */
void strb_flight_step(void);
/* strobe_init: STROBE_FLIGHT=<window> [STROBE_FLIGHT_OUTPUT, STROBE_FLIGHT_MEM,
 * STROBE_HANG_AFTER, STROBE_DUMP_ON_EXIT] starts it. */
void strb_flight_init_from_env(void);
/* STROBE_FLIGHT_GPU_SNAPSHOT as struct strobe_flight_opts' gpu_snapshot_ns
 * (unset: 0, "0": UINT64_MAX); -EINVAL, with a warning, when it is no
 * duration. */
int strb_flight_snapshot_env(uint64_t *ns);
void strb_flight_atfork_child(void);
/* Called after every dump, on the thread that dumped (under the dump
 * lock): path is the file written, or NULL with error saying why none was. */
typedef void (*strb_flight_dump_hook)(const char *path, const char *reason, const char *error);
void strb_flight_set_dump_hook(strb_flight_dump_hook hook);

#endif

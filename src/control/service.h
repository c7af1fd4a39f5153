/* strobe's service thread: re-reads the base config every 300 s, polls the
 * dynolog daemon (or `strobe trigger`) for on-demand requests, turns the
 * trigger signal into a request, and runs on-demand traces' timers,
 * processing and writing. */
#ifndef STROBE_CONTROL_SERVICE_H
#define STROBE_CONTROL_SERVICE_H

/* Starts it (strobe_init); idempotent. Returns 0 or a negative errno. */
int strb_service_start(const char *base_config_path);
/* Stops and joins it (strobe_shutdown). */
void strb_service_stop(void);
/* After a fork the thread is gone: start a fresh one, with a fresh
 * endpoint, the next time the child calls into strobe. */
void strb_service_ensure(void);
void strb_service_atfork_child(void);

#endif

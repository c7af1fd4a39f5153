/* On-demand (async) traces: one pending request, triggered by time or by
 * iteration (strobe_step), with warm-up; processing and writing happen on
 * strobe's service thread, never on the application's. */
#ifndef STROBE_CONTROL_ONDEMAND_H
#define STROBE_CONTROL_ONDEMAND_H

#include <stdbool.h>
#include <stdint.h>

#include "common/config.h"

enum strb_async_state {
	STRB_ASYNC_IDLE = 0,
	STRB_ASYNC_WARMUP,
	STRB_ASYNC_COLLECTING,
	STRB_ASYNC_PROCESSING,
};

/* Where a request came from: decides whether its log file must lie under
 * the on-demand directory (daemon, signal) or not (strobe_schedule). */
enum strb_request_source {
	STRB_SOURCE_API = 0,
	STRB_SOURCE_DAEMON,
	STRB_SOURCE_SIGNAL,
};

/* At most `burst` takes per `window_ms`. */
struct strb_ratelimit {
	int64_t window_ms;
	int burst;
	bool started;
	int64_t window_start_ms;
	int taken;           /* in this window */
	uint64_t suppressed; /* refused since the last take */
};

/* 1 when one more may go now (2 when it is the window's last), with the
 * number refused since the previous one in *suppressed; 0 (counted) when
 * the window's burst is used up. */
int strb_ratelimit_take(struct strb_ratelimit *rl, int64_t now_ms, uint64_t *suppressed);

/* Logs "on-demand request refused: MESSAGE", at most 5 times in 10 s; the
 * ones not logged are counted and the count is logged with the next. */
void strb_ondemand_log_refusal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* For tests: a fresh refusal window, nothing counted. */
void strb_ondemand_reset_refusals(void);

/* Takes a parsed, validated request. Returns 0, or -EBUSY / -ENOTSUP /
 * -EINVAL with the reason logged and in strobe_last_error. */
int strb_ondemand_submit(const struct strb_config *cfg, enum strb_request_source source);

/* The service thread's tick: fires time triggers, advances time-based
 * traces, and processes and writes finished traces. now_ms is epoch ms.
 * Returns the epoch ms at which it wants to run again. */
int64_t strb_ondemand_tick(int64_t now_ms);

/* strobe_step(): one application iteration. Never blocks on processing. */
void strb_ondemand_step(int64_t now_ms);

/* A synchronous trace pre-empts: drop the pending request and abandon an
 * active one (the controller discards its data). */
void strb_ondemand_cancel(const char *reason);

/* Idle and nothing pending: a poll may say "accepting". */
bool strb_ondemand_accepting(void);
enum strb_async_state strb_ondemand_state(void);

/* Where daemon and signal requests may write: STROBE_ONDEMAND_TRACE_DIR,
 * KINETO_ONDEMAND_TRACE_DIR, else "/tmp/". */
const char *strb_ondemand_allowed_dir(void);

/* Wakes the service thread (set by the service module). */
extern void (*strb_ondemand_wake)(void);

/* The process is exiting (an exit handler): a trace that is collecting is
 * cut short and written now, with what it captured; one in warm-up is
 * dropped; one the service thread is writing is waited for (bounded). */
void strb_ondemand_at_exit(void);
/* The same, for another reason (strobe_shutdown): why is logged. */
void strb_ondemand_finish_now(const char *why);

void strb_ondemand_atfork_child(void);

#endif

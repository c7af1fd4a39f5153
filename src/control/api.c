/* The public lifecycle and sync-tracing entry points. */
#define LOG_TAG "api"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/opts.h"
#include "control/controller.h"
#include "control/flight.h"
#include "control/ondemand.h"
#include "control/profilers.h"
#include "control/recorder.h"
#include "control/service.h"
#include "core/capture.h"
#include "core/clock.h"
#include "core/metadata.h"
#include "core/names.h"
#include "core/tbuf.h"
#include "output/output.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool initialized;
static char base_config_path[4096];

static void atfork_child(void)
{
	strb_log_atfork_child();
	strb_metadata_atfork_child();
	strb_profilers_atfork_child();
	strb_output_atfork_child();
	strb_control_atfork_child();
	strb_tbuf_atfork_child();
	strb_ondemand_atfork_child();
	strb_service_atfork_child();
	strb_names_atfork_child();
	pthread_mutex_init(&init_lock, NULL);
	strb_flight_atfork_child();
	strb_recorder_atfork_child(); /* last: it may start the child's own trace */
}

/* An on-demand trace still collecting when the program exits is written
 * (its destination is known); a synchronous one belongs to its caller. */
static void at_exit(void)
{
	if (atomic_load(&initialized))
		strb_ondemand_at_exit();
}

static void register_atfork(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
	atexit(at_exit);
}

const char *strobe_version(void)
{
	return STROBE_VERSION_STRING;
}

int strobe_init(const struct strobe_init_opts *opts)
{
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	pthread_mutex_lock(&init_lock);
	if (atomic_load(&initialized)) {
		pthread_mutex_unlock(&init_lock);
		return 0;
	}
	strb_log_init_from_env();
	int threshold = STRB_OPTS_GET(opts, log_threshold, 0);
	if (threshold > STROBE_LOG_VERBOSE && threshold <= STROBE_LOG_ERROR + 1)
		strobe_log_set_level((enum strobe_log_level)(threshold - 1));
	const char *config_path = STRB_OPTS_GET(opts, config_path, NULL);
	base_config_path[0] = 0;
	if (config_path)
		snprintf(base_config_path, sizeof(base_config_path), "%s", config_path);
	strb_clock_init();
	pthread_once(&atfork_once, register_atfork);
	atomic_store(&initialized, true);
	strb_service_start(base_config_path);
	pthread_mutex_unlock(&init_lock);
	LOGI("strobe %s initialised", STROBE_VERSION_STRING);
	strb_flight_init_from_env();
	return 0;
}

void strobe_shutdown(void)
{
	pthread_mutex_lock(&init_lock);
	if (atomic_load(&initialized)) {
		strb_service_stop();
		if (strb_flight_running())
			strb_flight_stop(true, "strobe_shutdown() was called");
		/* Asked for from outside (dynolog, the signal): what it captured
		 * is written, as at exit. */
		strb_ondemand_finish_now("strobe_shutdown() was called");
		strb_ondemand_cancel("strobe_shutdown");
		strb_control_cancel(STRB_OWNER_NONE);
		strb_tbuf_shutdown();
		atomic_store(&initialized, false);
	}
	pthread_mutex_unlock(&init_lock);
}

int strobe_prepare(uint64_t activity_mask, const char *config_text)
{
	if (!atomic_load(&initialized))
		return strb_error(STROBE_E_NOT_INIT, "strobe_prepare: call strobe_init() first");
	strb_service_ensure();
	struct strb_config cfg;
	char err[512];
	/* The base file first, then the caller's text on top: explicit text wins. */
	int rc = strb_config_build(&cfg, base_config_path[0] ? base_config_path : NULL, config_text,
	                           activity_mask, err, sizeof(err));
	if (rc == -ENOMEM)
		return strb_error(-ENOMEM, "strobe_prepare: out of memory");
	if (rc)
		return strb_error(STROBE_E_CONFIG, "strobe_prepare: config refused: %s", err);
	/* A synchronous request wins over on-demand ones. */
	strb_ondemand_cancel("pre-empted by a synchronous trace (strobe_prepare)");
	return strb_control_prepare(&cfg, STRB_OWNER_SYNC);
}

int strobe_schedule(const char *config_text)
{
	if (!atomic_load(&initialized))
		return strb_error(STROBE_E_NOT_INIT, "strobe_schedule: call strobe_init() first");
	if (!config_text)
		return strb_error(-EINVAL, "strobe_schedule: config is NULL");
	strb_service_ensure();
	struct strb_config cfg;
	strb_config_init(&cfg);
	char err[512];
	if (strb_config_parse(&cfg, config_text, NULL, err, sizeof(err)) != 0)
		return strb_error(STROBE_E_CONFIG, "strobe_schedule: config refused: %s", err);
	return strb_ondemand_submit(&cfg, STRB_SOURCE_API);
}

void strobe_step(void)
{
	static _Atomic uint64_t steps;
	if (!atomic_load_explicit(&initialized, memory_order_relaxed))
		return;
	uint64_t n = atomic_fetch_add_explicit(&steps, 1, memory_order_relaxed) + 1;
	/* The mark ends the step of a trace that may stop here, and begins
	 * the first step of one that starts here. */
	bool tracing = strobe_is_tracing();
	strb_capture_step(n);
	strb_flight_step();
	strb_service_ensure();
	strb_ondemand_step(strb_clock_real_ns() / 1000000);
	if (!tracing && strobe_is_tracing())
		strb_capture_step(n);
}

int strobe_start(void)
{
	if (!atomic_load(&initialized))
		return strb_error(STROBE_E_NOT_INIT, "strobe_start: call strobe_init() first");
	return strb_control_start(STRB_OWNER_SYNC);
}

int strobe_stop(strobe_trace **out)
{
	if (!atomic_load(&initialized)) {
		if (out)
			*out = NULL;
		return strb_error(STROBE_E_NOT_INIT, "strobe_stop: call strobe_init() first");
	}
	return strb_control_stop(out);
}

int strobe_toggle_collection(bool enable)
{
	return strb_control_toggle(enable);
}

bool strobe_is_tracing(void)
{
	return __atomic_load_n(&strobe_internal_session, __ATOMIC_RELAXED) != 0;
}

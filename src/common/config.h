/* libkineto-compatible trace configuration: KEY=VALUE text, parsed all or
 * nothing. See docs/config.md for every key. */
#ifndef STROBE_COMMON_CONFIG_H
#define STROBE_COMMON_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STRB_CONFIG_STR_MAX  1024
#define STRB_CONFIG_LIST_MAX 32

/* Every option libkineto knows (reference §4.3) plus strobe's own keys.
 * Plain data: copy with assignment. */
struct strb_config {
	/* Activity profiler and window */
	bool activities_enabled;                /* ACTIVITIES_ENABLED, default true */
	bool on_demand_key_seen;                /* a duration/iterations/log-file key was given */
	uint64_t activity_mask;                 /* ACTIVITY_TYPES; after validation never 0 */
	bool activity_types_given;              /* ACTIVITY_TYPES named at least one type */
	int32_t duration_ms;                    /* ACTIVITIES_DURATION_SECS / _MSECS, 500 */
	int32_t iterations;                     /* ACTIVITIES_ITERATIONS, 0 */
	int32_t warmup_secs;                    /* ACTIVITIES_WARMUP_PERIOD_SECS, 5 */
	int32_t warmup_iterations;              /* ACTIVITIES_WARMUP_ITERATIONS, 0 */
	char log_file[STRB_CONFIG_STR_MAX];     /* ACTIVITIES_LOG_FILE as given, or PROFILE_MEMORY's */
	char log_url[STRB_CONFIG_STR_MAX + 16]; /* file://<path with _<pid>> */
	/* How log_file and log_url came to be, so strb_config_format can
	 * reproduce them: the last ACTIVITIES_LOG_FILE value ("" = none) and
	 * whether PROFILE_MEMORY=true replaced log_file after it. */
	char log_file_arg[STRB_CONFIG_STR_MAX];
	bool log_file_from_memory;
	int64_t max_gpu_buffer_bytes;       /* ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB, 128 MiB */
	int64_t max_cpu_buffer_bytes;       /* ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB (strobe), 256 MiB */
	bool display_cuda_sync_wait_events; /* ACTIVITIES_DISPLAY_CUDA_SYNC_WAIT_EVENTS, true */
	bool cupti_per_thread_buffer;       /* CUPTI_PER_THREAD_BUFFER_ENABLED, false */
	char pm_sampling_metrics[STRB_CONFIG_STR_MAX]; /* CUPTI_PM_SAMPLING_METRICS, comma list */
	int32_t pm_sampling_device;                    /* CUPTI_PM_SAMPLING_DEVICE_ID, -1 */
	int32_t roctracer_max_events;                  /* ROCTRACER_MAX_EVENTS, 5000000 */

	/* Start triggers */
	int64_t profile_start_time_ms;   /* PROFILE_START_TIME, 0 = unset until validated */
	bool profile_start_time_given;   /* non-zero PROFILE_START_TIME given (not chosen by validation) */
	int32_t profile_start_iteration; /* PROFILE_START_ITERATION, -1 */
	int32_t profile_start_iteration_roundup; /* PROFILE_START_ITERATION_ROUNDUP, -1 */

	/* Request identity and daemon */
	char request_trace_id[STRB_CONFIG_STR_MAX];       /* REQUEST_TRACE_ID */
	char request_group_trace_id[STRB_CONFIG_STR_MAX]; /* REQUEST_GROUP_TRACE_ID */
	bool enable_ipc_fabric;                           /* ENABLE_IPC_FABRIC */
	int32_t on_demand_interval_secs;                  /* ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS, 5 */

	/* Logging */
	int32_t verbose_log_level;                     /* VERBOSE_LOG_LEVEL, -1 */
	char verbose_log_modules[STRB_CONFIG_STR_MAX]; /* VERBOSE_LOG_MODULES */

	/* Client switches */
	bool report_input_shapes;   /* PROFILE_REPORT_INPUT_SHAPES (+ legacy alias) */
	bool profile_memory_client; /* PROFILE_PROFILE_MEMORY */
	bool with_stack;            /* PROFILE_WITH_STACK (+ PYTHON_STACK_TRACE) */
	bool with_flops;            /* PROFILE_WITH_FLOPS */
	bool with_modules;          /* PROFILE_WITH_MODULES */

	/* Memory profiling and custom */
	bool profile_memory;                     /* PROFILE_MEMORY */
	int32_t profile_memory_duration_ms;      /* PROFILE_MEMORY_DURATION_MSECS, 1000 */
	char custom_config[STRB_CONFIG_STR_MAX]; /* CUSTOM_CONFIG */

	/* XPU feature keys */
	char xpu_metrics[STRB_CONFIG_STR_MAX]; /* XPUPTI_PROFILER_METRICS */
	bool xpu_per_kernel;                   /* XPUPTI_PROFILER_ENABLE_PER_KERNEL */
	int64_t xpu_max_scopes;                /* XPUPTI_PROFILER_MAX_SCOPES */

	/* Device counters (activity type gpu_counters) */
	int32_t gpu_counters_hz; /* GPU_COUNTERS_SAMPLE_RATE_HZ, 10 (1..1000) */
};

/* How a text is parsed. */
struct strb_config_parse_opts {
	bool on_demand;           /* text came from a daemon/trigger: log file must lie under ondemand_dir */
	int64_t now_ms;           /* epoch ms used for PROFILE_START_TIME checks; 0 = read the clock */
	pid_t pid;                /* inserted into the log URL; 0 = getpid() */
	const char *ondemand_dir; /* NULL = $STROBE_ONDEMAND_TRACE_DIR, $KINETO_ONDEMAND_TRACE_DIR, "/tmp/" */
};

/* Sets every option to its default (not yet validated: activity_mask 0,
 * start time 0). */
void strb_config_init(struct strb_config *cfg);
/* The same, but enable_ipc_fabric as given rather than from the
 * environment (strb_config_env_ipc_fabric): reads no environment. */
void strb_config_init_with(struct strb_config *cfg, bool ipc_fabric);
/* enable_ipc_fabric's default: $STROBE_USE_DAEMON, else
 * $KINETO_USE_DAEMON, set and not "0". */
bool strb_config_env_ipc_fabric(void);

/* Parses text on top of *cfg and validates the result. All or nothing: on
 * error *cfg is unchanged, a message naming the line number, the line and
 * the reason is written to err (if errlen > 0) and STROBE_E_CONFIG is
 * returned. Unknown keys are accepted with a warning through the log.
 * opts may be NULL (not on demand, current clock and pid). */
int strb_config_parse(struct strb_config *cfg, const char *text, const struct strb_config_parse_opts *opts,
                      char *err, size_t errlen);

/* Runs libkineto's validation (reference §4.4) with now_ms as the parse
 * start; parse already does this. */
void strb_config_validate(struct strb_config *cfg, int64_t now_ms);

/* The effective options as KEY=VALUE lines with libkineto's key names, in
 * a malloc'ed string the caller frees; NULL on allocation failure. Values
 * that cannot be written back (-1 = unset, defaults whose key would change
 * the meaning, a start time chosen by validation) appear as "# KEY=VALUE"
 * comments, so parsing the output onto defaults with the same pid gives
 * the same config, except a start time chosen by validation, which the new
 * parse chooses afresh. */
char *strb_config_format(const struct strb_config *cfg);

/* Reads the base config file: path, else $STROBE_CONFIG, $KINETO_CONFIG,
 * /etc/libkineto.conf. Returns a malloc'ed text ("" when the file is
 * missing or unreadable) and sets *used_path (static or path) when
 * non-NULL. NULL only on allocation failure. */
char *strb_config_read_base(const char *path, const char **used_path);
/* The base config file strb_config_read_base would read for path (path,
 * $STROBE_CONFIG, $KINETO_CONFIG, or the default), into out; *chosen is
 * false for the default, whose absence is not worth a warning. */
void strb_config_base_file(const char *path, char *out, size_t n, bool *chosen);
/* Reads the base config file resolved by strb_config_base_file: no
 * environment read. */
char *strb_config_read_base_file(const char *file, bool chosen);

/* The config of a trace: defaults, then the base file (base_path as for
 * strb_config_read_base; a bad base file is ignored with a warning), then
 * text on top (NULL or "" for none), then mask when nonzero; an empty mask
 * becomes the default set. Returns 0, -ENOMEM, or STROBE_E_CONFIG with
 * the message about text in err. */
int strb_config_build(struct strb_config *cfg, const char *base_path, const char *text, uint64_t mask,
                      char *err, size_t errlen);

#endif

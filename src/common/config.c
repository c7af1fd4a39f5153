#define LOG_TAG "config"
#include "common/config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "strobe/strobe.h"

#define MIB                    ((int64_t)1024 * 1024)
#define MAX_REQUEST_AGE_MS     10000 /* libkineto's kMaxRequestAge */
#define CONTROLLER_INTERVAL_MS 1000
#define XPU_MAX_AUTO_SCOPES    1500
#define XPU_MAX_USER_SCOPES    10
#define BASE_CONFIG_MAX        ((size_t)1 << 20)
#define QUOTE_MAX              160 /* bytes of a line or value shown in a message */
#define WHY_MAX                512

enum opt_kind {
	OPT_BOOL,
	OPT_I32,
	OPT_I64,
	OPT_STR,
	OPT_LIST,
	OPT_TYPES,      /* ACTIVITY_TYPES */
	OPT_LOG_FILE,   /* ACTIVITIES_LOG_FILE */
	OPT_START_TIME, /* PROFILE_START_TIME: int64 checked against the clock */
	OPT_MEMORY,     /* PROFILE_MEMORY: bool that moves the log file */
};

#define F_TRIGGER   0x1u /* marks an on-demand request */
#define F_HIDDEN    0x2u /* another key prints this field */
#define F_WIDE      0x4u /* int32 key stored in an int64 field */
#define F_NEG_UNSET 0x8u /* a negative field means unset and cannot be written back */

struct option {
	const char *key;
	enum opt_kind kind;
	unsigned flags;
	size_t off;
	int64_t scale; /* int keys: field = value * scale */
};

#define FIELD(f) offsetof(struct strb_config, f)

/* Table order is the order strb_config_format prints in. */
static const struct option options[] = {
    {"ACTIVITIES_ENABLED", OPT_BOOL, 0, FIELD(activities_enabled), 1},
    {"ACTIVITY_TYPES", OPT_TYPES, 0, FIELD(activity_mask), 1},
    {"ACTIVITIES_DURATION_SECS", OPT_I32, F_TRIGGER | F_HIDDEN, FIELD(duration_ms), 1000},
    {"ACTIVITIES_DURATION_MSECS", OPT_I32, F_TRIGGER, FIELD(duration_ms), 1},
    {"ACTIVITIES_ITERATIONS", OPT_I32, F_TRIGGER, FIELD(iterations), 1},
    {"ACTIVITIES_WARMUP_PERIOD_SECS", OPT_I32, 0, FIELD(warmup_secs), 1},
    {"ACTIVITIES_WARMUP_ITERATIONS", OPT_I32, 0, FIELD(warmup_iterations), 1},
    {"ACTIVITIES_LOG_FILE", OPT_LOG_FILE, F_TRIGGER, FIELD(log_file), 1},
    {"ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB", OPT_I32, F_WIDE, FIELD(max_gpu_buffer_bytes), MIB},
    {"ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB", OPT_I32, F_WIDE, FIELD(max_cpu_buffer_bytes), MIB},
    {"ACTIVITIES_DISPLAY_CUDA_SYNC_WAIT_EVENTS", OPT_BOOL, 0, FIELD(display_cuda_sync_wait_events), 1},
    {"CUPTI_PER_THREAD_BUFFER_ENABLED", OPT_BOOL, 0, FIELD(cupti_per_thread_buffer), 1},
    {"CUPTI_PM_SAMPLING_METRICS", OPT_LIST, 0, FIELD(pm_sampling_metrics), 1},
    {"CUPTI_PM_SAMPLING_DEVICE_ID", OPT_I32, F_NEG_UNSET, FIELD(pm_sampling_device), 1},
    {"ROCTRACER_MAX_EVENTS", OPT_I32, 0, FIELD(roctracer_max_events), 1},
    {"PROFILE_START_TIME", OPT_START_TIME, 0, FIELD(profile_start_time_ms), 1},
    {"PROFILE_START_ITERATION", OPT_I32, F_NEG_UNSET, FIELD(profile_start_iteration), 1},
    {"PROFILE_START_ITERATION_ROUNDUP", OPT_I32, F_NEG_UNSET, FIELD(profile_start_iteration_roundup), 1},
    {"REQUEST_TRACE_ID", OPT_STR, 0, FIELD(request_trace_id), 1},
    {"REQUEST_GROUP_TRACE_ID", OPT_STR, 0, FIELD(request_group_trace_id), 1},
    {"ENABLE_IPC_FABRIC", OPT_BOOL, 0, FIELD(enable_ipc_fabric), 1},
    {"ON_DEMAND_CONFIG_UPDATE_INTERVAL_SECS", OPT_I32, 0, FIELD(on_demand_interval_secs), 1},
    {"VERBOSE_LOG_LEVEL", OPT_I32, F_NEG_UNSET, FIELD(verbose_log_level), 1},
    {"VERBOSE_LOG_MODULES", OPT_LIST, 0, FIELD(verbose_log_modules), 1},
    {"PROFILE_REPORT_INPUT_SHAPES", OPT_BOOL, 0, FIELD(report_input_shapes), 1},
    {"CLIENT_INTERFACE_ENABLE_OP_INPUTS_COLLECTION", OPT_BOOL, F_HIDDEN, FIELD(report_input_shapes), 1},
    {"PROFILE_PROFILE_MEMORY", OPT_BOOL, 0, FIELD(profile_memory_client), 1},
    {"PROFILE_WITH_STACK", OPT_BOOL, 0, FIELD(with_stack), 1},
    {"PYTHON_STACK_TRACE", OPT_BOOL, F_HIDDEN, FIELD(with_stack), 1},
    {"PROFILE_WITH_FLOPS", OPT_BOOL, 0, FIELD(with_flops), 1},
    {"PROFILE_WITH_MODULES", OPT_BOOL, 0, FIELD(with_modules), 1},
    {"PROFILE_MEMORY", OPT_MEMORY, 0, FIELD(profile_memory), 1},
    {"PROFILE_MEMORY_DURATION_MSECS", OPT_I32, 0, FIELD(profile_memory_duration_ms), 1},
    {"CUSTOM_CONFIG", OPT_STR, 0, FIELD(custom_config), 1},
    {"XPUPTI_PROFILER_METRICS", OPT_LIST, 0, FIELD(xpu_metrics), 1},
    {"XPUPTI_PROFILER_ENABLE_PER_KERNEL", OPT_BOOL, 0, FIELD(xpu_per_kernel), 1},
    {"XPUPTI_PROFILER_MAX_SCOPES", OPT_I64, 0, FIELD(xpu_max_scopes), 1},
    {"GPU_COUNTERS_SAMPLE_RATE_HZ", OPT_I32, 0, FIELD(gpu_counters_hz), 1},
};

#define N_OPTIONS (sizeof(options) / sizeof(options[0]))

struct parse_ctx {
	struct strb_config *cfg;
	bool on_demand;
	int64_t now_ms;
	pid_t pid;
	const char *ondemand_dir; /* ends in '/' */
	char dir_buf[STRB_CONFIG_STR_MAX + 1];
	char why[WHY_MAX];
};

static void *field(struct strb_config *cfg, const struct option *o)
{
	return (char *)cfg + o->off;
}

static const void *cfield(const struct strb_config *cfg, const struct option *o)
{
	return (const char *)cfg + o->off;
}

static bool is_space(char c)
{
	/* '\r' counts so that CRLF text parses (libkineto fails it). */
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static char ascii_lower(char c)
{
	if (c >= 'A' && c <= 'Z')
		c = (char)(c | 0x20);
	return c;
}

static void trim(const char **s, size_t *n)
{
	while (*n && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_space((*s)[*n - 1]))
		(*n)--;
}

/* Copies s for a message: quotes and backslashes escaped, control and
 * non-ASCII bytes as \xNN, cut with "..." so one bad line cannot flood
 * the log. */
static void quote(char *dst, size_t dstlen, const char *s, size_t n)
{
	size_t o = 0, cut = 0, limit = dstlen < QUOTE_MAX + 1 ? dstlen - 1 : QUOTE_MAX;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char tmp[5];
		int len;
		if (c == '"' || c == '\\')
			len = snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			len = snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		else
			len = snprintf(tmp, sizeof(tmp), "%c", c);
		if (o + 3 <= limit)
			cut = o;
		if (o + (size_t)len > limit) {
			memcpy(dst + cut, "...", 3);
			o = cut + 3;
			break;
		}
		memcpy(dst + o, tmp, (size_t)len);
		o += (size_t)len;
	}
	dst[o] = 0;
}

__attribute__((format(printf, 2, 3))) static int fail(struct parse_ctx *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ctx->why, sizeof(ctx->why), fmt, ap);
	va_end(ap);
	return -1;
}

static int64_t clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* libkineto's integer rule: base 10, whole string, optional sign, no
 * negatives; past INT64_MAX it saturates (only int64 keys can hold that). */
static int parse_int(struct parse_ctx *ctx, const char *v, size_t n, int64_t max, int64_t *out)
{
	char q[QUOTE_MAX + 1];
	size_t i = 0;
	bool neg = false;
	if (n && (v[0] == '+' || v[0] == '-')) {
		neg = v[0] == '-';
		i = 1;
	}
	if (i == n) {
		quote(q, sizeof(q), v, n);
		return fail(ctx, "invalid integer \"%s\"", q);
	}
	int64_t val = 0;
	for (; i < n; i++) {
		if (v[i] < '0' || v[i] > '9') {
			quote(q, sizeof(q), v, n);
			return fail(ctx, "invalid integer \"%s\"", q);
		}
		int d = v[i] - '0';
		val = val > (INT64_MAX - d) / 10 ? INT64_MAX : val * 10 + d;
	}
	if ((neg && val) || val > max) {
		quote(q, sizeof(q), v, n);
		return fail(ctx, "invalid argument %s, expected range [0, %lld]", q, (long long)max);
	}
	*out = val;
	return 0;
}

static int parse_bool(struct parse_ctx *ctx, const char *v, size_t n, bool *out)
{
	static const char *const words[] = {"n", "no", "f", "false", "0", "y", "yes", "t", "true", "1"};
	char low[8];
	if (n < sizeof(low)) {
		for (size_t i = 0; i < n; i++)
			low[i] = ascii_lower(v[i]);
		low[n] = 0;
		for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
			if (!strcmp(low, words[w])) {
				*out = w >= 5;
				return 0;
			}
		}
	}
	char q[QUOTE_MAX + 1];
	quote(q, sizeof(q), v, n);
	return fail(ctx, "invalid bool \"%s\", expected true/false, yes/no, t/f, y/n or 1/0", q);
}

static int store_str(struct parse_ctx *ctx, char *dst, const char *v, size_t n)
{
	if (n > STRB_CONFIG_STR_MAX - 1)
		return fail(ctx, "value is %zu bytes long, the limit is %d", n, STRB_CONFIG_STR_MAX - 1);
	memcpy(dst, v, n);
	dst[n] = 0;
	return 0;
}

/* Items are trimmed and joined with ','; empty items stay (libkineto keeps them). */
static int store_list(struct parse_ctx *ctx, char *dst, const char *v, size_t n)
{
	char buf[STRB_CONFIG_STR_MAX];
	size_t o = 0, items = 0;
	const char *end = v + n;
	if (n == 0) {
		dst[0] = 0;
		return 0;
	}
	for (const char *p = v;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *item = p;
		size_t len = (size_t)((comma ? comma : end) - p);
		trim(&item, &len);
		if (++items > STRB_CONFIG_LIST_MAX)
			return fail(ctx, "more than %d list items", STRB_CONFIG_LIST_MAX);
		if (o + len + (items > 1) > sizeof(buf) - 1)
			return fail(ctx, "list is longer than %d bytes", STRB_CONFIG_STR_MAX - 1);
		if (items > 1)
			buf[o++] = ',';
		memcpy(buf + o, item, len);
		o += len;
		if (!comma)
			break;
		p = comma + 1;
	}
	buf[o] = 0;
	memcpy(dst, buf, o + 1);
	return 0;
}

static int set_types(struct parse_ctx *ctx, const char *v, size_t n)
{
	uint64_t mask = 0;
	const char *end = v + n;
	for (const char *p = v; p <= end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *item = p;
		size_t len = (size_t)((comma ? comma : end) - p);
		trim(&item, &len);
		p = (comma ? comma : end) + 1;
		if (!len)
			continue;
		char name[64];
		enum strobe_activity_type t;
		bool ok = len < sizeof(name);
		if (ok) {
			for (size_t i = 0; i < len; i++)
				name[i] = ascii_lower(item[i]);
			name[len] = 0;
			ok = strobe_activity_type_parse(name, &t) == 0;
		}
		if (!ok) {
			char q[QUOTE_MAX + 1];
			quote(q, sizeof(q), item, len);
			return fail(ctx, "unknown activity type \"%s\"", q);
		}
		mask |= STROBE_ACTIVITY_BIT(t);
	}
	ctx->cfg->activity_mask = mask;
	ctx->cfg->activity_types_given = mask != 0;
	return 0;
}

/* libkineto inserts the pid before the first ".pt.trace.json", else before
 * the first ".json", so that several ranks can share one path. */
static int make_log_url(char *url, size_t len, const char *path, pid_t pid)
{
	const char *at = strstr(path, ".pt.trace.json");
	if (!at)
		at = strstr(path, ".json");
	int n = at ? snprintf(url, len, "file://%.*s_%d%s", (int)(at - path), path, (int)pid, at)
	           : snprintf(url, len, "file://%s", path);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int set_log_file(struct parse_ctx *ctx, const char *v, size_t n)
{
	struct strb_config *cfg = ctx->cfg;
	char path[STRB_CONFIG_STR_MAX];
	if (n == 0)
		return fail(ctx, "ACTIVITIES_LOG_FILE needs a path");
	if (store_str(ctx, path, v, n))
		return -1;
	if (ctx->on_demand) {
		size_t dlen = strlen(ctx->ondemand_dir);
		if (strncmp(path, ctx->ondemand_dir, dlen) != 0 || n == dlen)
			return fail(ctx,
			            "an on-demand log file must lie beneath %s "
			            "(STROBE_ONDEMAND_TRACE_DIR allows another directory)",
			            ctx->ondemand_dir);
		if (strstr(path, ".."))
			return fail(ctx, "an on-demand log file must not contain \"..\"");
	}
	if (make_log_url(cfg->log_url, sizeof(cfg->log_url), path, ctx->pid))
		return fail(ctx, "log file path is too long once the pid is inserted");
	memcpy(cfg->log_file, path, n + 1);
	memcpy(cfg->log_file_arg, path, n + 1);
	cfg->log_file_from_memory = false;
	return 0;
}

static void format_local_time(char *buf, size_t len, int64_t ms)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;
	if (!localtime_r(&secs, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(buf, len, "?");
}

static int set_value(struct parse_ctx *ctx, const struct option *o, const char *v, size_t n)
{
	struct strb_config *cfg = ctx->cfg;
	void *dst = field(cfg, o);
	int64_t i = 0;
	switch (o->kind) {
	case OPT_BOOL:
		return parse_bool(ctx, v, n, dst);
	case OPT_I32: {
		int64_t max = (o->flags & F_WIDE) ? INT32_MAX : INT32_MAX / o->scale;
		if (parse_int(ctx, v, n, max, &i))
			return -1;
		if (o->off == FIELD(gpu_counters_hz) && (i < 1 || i > 1000)) {
			snprintf(ctx->why, sizeof(ctx->why),
			         "invalid argument %lld, expected range [1, 1000]", (long long)i);
			return -1;
		}
		if (o->flags & F_WIDE)
			*(int64_t *)dst = i * o->scale;
		else
			*(int32_t *)dst = (int32_t)(i * o->scale);
		return 0;
	}
	case OPT_I64:
		return parse_int(ctx, v, n, INT64_MAX, dst);
	case OPT_STR:
		return store_str(ctx, dst, v, n);
	case OPT_LIST:
		return store_list(ctx, dst, v, n);
	case OPT_TYPES:
		return set_types(ctx, v, n);
	case OPT_LOG_FILE:
		return set_log_file(ctx, v, n);
	case OPT_START_TIME:
		if (parse_int(ctx, v, n, INT64_MAX, &i))
			return -1;
		if (i && i < ctx->now_ms - MAX_REQUEST_AGE_MS) {
			char when[64];
			format_local_time(when, sizeof(when), i);
			return fail(ctx, "start time %lld (%s) is more than %d s in the past", (long long)i,
			            when, MAX_REQUEST_AGE_MS / 1000);
		}
		cfg->profile_start_time_ms = i;
		cfg->profile_start_time_given = i != 0;
		return 0;
	case OPT_MEMORY:
		if (parse_bool(ctx, v, n, &cfg->profile_memory))
			return -1;
		if (cfg->profile_memory) {
			snprintf(cfg->log_file, sizeof(cfg->log_file), "/tmp/memory_snapshot_%d.pickle",
			         (int)ctx->pid);
			cfg->log_file_from_memory = true;
		}
		return 0;
	}
	return fail(ctx, "internal error: unhandled option kind");
}

static const struct option *find_option(const char *key, size_t n)
{
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (strlen(options[i].key) == n && !memcmp(options[i].key, key, n))
			return &options[i];
	return NULL;
}

/* One non-blank line (comment removed, trimmed). */
static int parse_line(struct parse_ctx *ctx, const char *s, size_t n, size_t lineno)
{
	const char *eq = memchr(s, '=', n);
	if (!eq)
		return fail(ctx, "expected KEY=VALUE");
	if (memchr(eq + 1, '=', n - (size_t)(eq + 1 - s)))
		return fail(ctx, "more than one '=' (one setting per line)");
	const char *key = s, *val = eq + 1;
	size_t klen = (size_t)(eq - s), vlen = n - klen - 1;
	trim(&key, &klen);
	trim(&val, &vlen);
	if (!klen)
		return fail(ctx, "missing key before '='");
	const struct option *o = find_option(key, klen);
	if (!o) {
		char q[QUOTE_MAX + 1];
		quote(q, sizeof(q), key, klen);
		LOGW("line %zu: unknown key \"%s\" ignored", lineno, q);
		return 0;
	}
	if (set_value(ctx, o, val, vlen))
		return -1;
	if (o->flags & F_TRIGGER)
		ctx->cfg->on_demand_key_seen = true;
	return 0;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static int resolve_ondemand_dir(struct parse_ctx *ctx, const char *dir)
{
	if (!dir || !*dir)
		dir = env_nonempty("STROBE_ONDEMAND_TRACE_DIR");
	if (!dir)
		dir = env_nonempty("KINETO_ONDEMAND_TRACE_DIR");
	if (!dir)
		dir = "/tmp/";
	size_t n = strlen(dir);
	bool slash = dir[n - 1] == '/';
	if (n + !slash >= sizeof(ctx->dir_buf))
		return -1;
	memcpy(ctx->dir_buf, dir, n);
	if (!slash)
		ctx->dir_buf[n++] = '/';
	ctx->dir_buf[n] = 0;
	ctx->ondemand_dir = ctx->dir_buf;
	return 0;
}

bool strb_config_env_ipc_fabric(void)
{
	const char *daemon = getenv("STROBE_USE_DAEMON");
	if (!daemon)
		daemon = getenv("KINETO_USE_DAEMON");
	return daemon && strcmp(daemon, "0") != 0;
}

void strb_config_init(struct strb_config *cfg)
{
	strb_config_init_with(cfg, strb_config_env_ipc_fabric());
}

void strb_config_init_with(struct strb_config *cfg, bool ipc_fabric)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->activities_enabled = true;
	cfg->duration_ms = 500;
	cfg->warmup_secs = 5;
	snprintf(cfg->log_file, sizeof(cfg->log_file), "/tmp/libkineto_activities_%d.json", (int)getpid());
	/* The default path already holds the pid: no second insertion. */
	snprintf(cfg->log_url, sizeof(cfg->log_url), "file://%s", cfg->log_file);
	cfg->max_gpu_buffer_bytes = 128 * MIB;
	cfg->max_cpu_buffer_bytes = 256 * MIB;
	cfg->display_cuda_sync_wait_events = true;
	cfg->pm_sampling_device = -1;
	cfg->roctracer_max_events = 5000000;
	cfg->profile_start_iteration = -1;
	cfg->profile_start_iteration_roundup = -1;
	cfg->enable_ipc_fabric = ipc_fabric;
	cfg->on_demand_interval_secs = 5;
	cfg->verbose_log_level = -1;
	cfg->profile_memory_duration_ms = 1000;
	cfg->gpu_counters_hz = 10;
}

void strb_config_validate(struct strb_config *cfg, int64_t now_ms)
{
	if (!now_ms)
		now_ms = clock_ms();
	if (!cfg->profile_start_time_ms)
		cfg->profile_start_time_ms =
		    now_ms + (int64_t)cfg->warmup_secs * 1000 + (int64_t)2 * CONTROLLER_INTERVAL_MS;
	if (cfg->profile_start_iteration_roundup == 0) {
		LOGW("PROFILE_START_ITERATION_ROUNDUP=0 ignored: the round-up must be >= 1");
		cfg->profile_start_iteration_roundup = -1;
	}
	bool has_start_iteration = cfg->profile_start_iteration >= 0 && cfg->iterations > 0;
	if (cfg->profile_start_iteration_roundup > 0 && !has_start_iteration)
		cfg->profile_start_iteration = 0;
	if (!cfg->activity_mask)
		cfg->activity_mask = STROBE_ACTIVITY_DEFAULT_MASK;
	if (cfg->xpu_metrics[0] && !cfg->xpu_max_scopes)
		cfg->xpu_max_scopes = cfg->xpu_per_kernel ? XPU_MAX_AUTO_SCOPES : XPU_MAX_USER_SCOPES;
}

int strb_config_parse(struct strb_config *cfg, const char *text, const struct strb_config_parse_opts *opts,
                      char *err, size_t errlen)
{
	static const struct strb_config_parse_opts no_opts;
	struct parse_ctx *ctx = NULL;
	struct strb_config *work = NULL;
	int rc = STROBE_E_CONFIG;
	if (!opts)
		opts = &no_opts;
	if (err && errlen)
		err[0] = 0;
	if (!cfg || !text) {
		if (err && errlen)
			snprintf(err, errlen, "no config or no text");
		return -EINVAL;
	}
	ctx = calloc(1, sizeof(*ctx));
	work = malloc(sizeof(*work));
	if (!ctx || !work) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
		goto out;
	}
	*work = *cfg;
	ctx->cfg = work;
	ctx->on_demand = opts->on_demand;
	ctx->now_ms = opts->now_ms ? opts->now_ms : clock_ms();
	ctx->pid = opts->pid ? opts->pid : getpid();
	if (ctx->on_demand && resolve_ondemand_dir(ctx, opts->ondemand_dir)) {
		if (err && errlen)
			snprintf(err, errlen, "the allowed on-demand trace directory is too long");
		goto out;
	}

	/* A UTF-8 byte order mark (editors on Windows write one) is not part of
	 * the first key. */
	if (!strncmp(text, "\xEF\xBB\xBF", 3))
		text += 3;
	size_t lineno = 0;
	for (const char *p = text;; lineno++) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *hash = memchr(p, '#', len);
		const char *s = p;
		size_t n = hash ? (size_t)(hash - p) : len;
		trim(&s, &n);
		if (n && parse_line(ctx, s, n, lineno + 1)) {
			if (err && errlen) {
				char q[QUOTE_MAX + 1];
				quote(q, sizeof(q), s, n);
				snprintf(err, errlen, "line %zu: \"%s\": %s", lineno + 1, q, ctx->why);
			}
			goto out;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	strb_config_validate(work, ctx->now_ms);
	*cfg = *work;
	rc = 0;
out:
	free(ctx);
	free(work);
	return rc;
}

/* --- formatting ------------------------------------------------------------ */

static void put_types(FILE *f, uint64_t mask)
{
	const char *sep = "";
	for (unsigned t = 0; t <= STROBE_ACTIVITY_TYPE_MAX; t++) {
		const char *name = strobe_activity_type_name((enum strobe_activity_type)t);
		if ((mask & STROBE_ACTIVITY_BIT(t)) && name) {
			fprintf(f, "%s%s", sep, name);
			sep = ",";
		}
	}
}

static void put_log_file(FILE *f, const struct strb_config *cfg)
{
	/* An ACTIVITIES_LOG_FILE given after PROFILE_MEMORY=true must follow it. */
	if (!cfg->log_file_from_memory && cfg->profile_memory && cfg->log_file_arg[0])
		fprintf(f, "# ACTIVITIES_LOG_FILE: follows PROFILE_MEMORY below\n");
	else if (cfg->log_file_arg[0])
		fprintf(f, "ACTIVITIES_LOG_FILE=%s\n", cfg->log_file_arg);
	else
		fprintf(f, "# ACTIVITIES_LOG_FILE=%s (default)\n",
		        strncmp(cfg->log_url, "file://", 7) ? cfg->log_url : cfg->log_url + 7);
	fprintf(f, "# trace file: %s\n", cfg->log_url);
}

/* PROFILE_MEMORY=true replaces the log file, so the order of the two keys
 * decides which one wins; print them in the order that reproduces it. */
static void put_memory(FILE *f, const struct strb_config *cfg)
{
	if (cfg->log_file_from_memory) {
		fprintf(f, "PROFILE_MEMORY=true\n");
		if (!cfg->profile_memory)
			fprintf(f, "PROFILE_MEMORY=false\n");
		fprintf(f, "# log file: %s\n", cfg->log_file);
		return;
	}
	fprintf(f, "PROFILE_MEMORY=%s\n", cfg->profile_memory ? "true" : "false");
	if (cfg->profile_memory && cfg->log_file_arg[0])
		fprintf(f, "ACTIVITIES_LOG_FILE=%s\n", cfg->log_file_arg);
}

static void put_option(FILE *f, const struct strb_config *cfg, const struct option *o)
{
	const void *src = cfield(cfg, o);
	/* A trigger key in the output would turn the text into an on-demand request. */
	const char *mark = (o->flags & F_TRIGGER) && !cfg->on_demand_key_seen ? "# " : "";
	int64_t i;
	switch (o->kind) {
	case OPT_BOOL:
		fprintf(f, "%s=%s\n", o->key, *(const bool *)src ? "true" : "false");
		return;
	case OPT_I32:
		i = (o->flags & F_WIDE) ? *(const int64_t *)src : *(const int32_t *)src;
		i /= o->scale;
		if ((o->flags & F_NEG_UNSET) && i < 0)
			fprintf(f, "# %s=%lld (unset)\n", o->key, (long long)i);
		else
			fprintf(f, "%s%s=%lld%s\n", mark, o->key, (long long)i, *mark ? " (default)" : "");
		return;
	case OPT_I64:
		fprintf(f, "%s=%lld\n", o->key, (long long)*(const int64_t *)src);
		return;
	case OPT_STR:
	case OPT_LIST:
		fprintf(f, "%s=%s\n", o->key, (const char *)src);
		return;
	case OPT_TYPES:
		if (cfg->activity_types_given) {
			fprintf(f, "ACTIVITY_TYPES=");
			put_types(f, cfg->activity_mask);
		} else {
			fprintf(f, "# ACTIVITY_TYPES=");
			put_types(f, cfg->activity_mask ? cfg->activity_mask : STROBE_ACTIVITY_DEFAULT_MASK);
			fprintf(f, " (default set)");
		}
		fputc('\n', f);
		return;
	case OPT_LOG_FILE:
		put_log_file(f, cfg);
		return;
	case OPT_START_TIME:
		/* A start time chosen by validation is stale once printed: a
		 * later parse would refuse it, so it stays a comment and the
		 * next parse chooses its own. */
		if (cfg->profile_start_time_given) {
			fprintf(f, "PROFILE_START_TIME=%lld\n", (long long)cfg->profile_start_time_ms);
		} else {
			char when[64];
			format_local_time(when, sizeof(when), cfg->profile_start_time_ms);
			fprintf(f, "# PROFILE_START_TIME=%lld (%s: parse time + warmup + 2 s)\n",
			        (long long)cfg->profile_start_time_ms, when);
		}
		return;
	case OPT_MEMORY:
		put_memory(f, cfg);
		return;
	}
}

char *strb_config_format(const struct strb_config *cfg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	for (size_t i = 0; i < N_OPTIONS; i++)
		if (!(options[i].flags & F_HIDDEN))
			put_option(f, cfg, &options[i]);
	if (ferror(f)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* --- base config file ------------------------------------------------------ */

/* Returns the text, NULL on allocation failure, or "" (with a warning
 * when warn is set) when the file cannot be used. */
static char *read_small_file(const char *path, bool warn)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	const char *problem = NULL;
	if (fd < 0) {
		if (warn || errno != ENOENT)
			LOGW("cannot open config file %s: %s", path, strerror(errno));
		return strdup("");
	}
	/* A FIFO or device could block or never end; the host must not hang. */
	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		problem = "not a regular file";
	else if ((size_t)st.st_size > BASE_CONFIG_MAX)
		problem = "larger than 1 MiB";
	if (!problem) {
		size_t cap = (size_t)st.st_size, n = 0;
		buf = malloc(cap + 1);
		if (!buf) {
			close(fd);
			return NULL;
		}
		while (n < cap) {
			ssize_t got = read(fd, buf + n, cap - n);
			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0)
				break;
			n += (size_t)got;
		}
		buf[n] = 0;
		if (n < cap)
			problem = "short read";
		else if (memchr(buf, 0, n))
			problem = "contains a NUL byte";
	}
	close(fd);
	if (!problem)
		return buf;
	free(buf);
	LOGW("ignoring config file %s: %s", path, problem);
	return strdup("");
}

static const char *base_file(const char *path, bool *chosen)
{
	*chosen = true;
	if (!path || !*path)
		path = env_nonempty("STROBE_CONFIG");
	if (!path)
		path = env_nonempty("KINETO_CONFIG");
	if (!path) {
		path = "/etc/libkineto.conf";
		*chosen = false;
	}
	return path;
}

char *strb_config_read_base(const char *path, const char **used_path)
{
	bool chosen;
	path = base_file(path, &chosen);
	if (used_path)
		*used_path = path;
	return read_small_file(path, chosen);
}

void strb_config_base_file(const char *path, char *out, size_t n, bool *chosen)
{
	snprintf(out, n, "%s", base_file(path, chosen));
}

char *strb_config_read_base_file(const char *file, bool chosen)
{
	return read_small_file(file, chosen);
}

int strb_config_build(struct strb_config *cfg, const char *base_path, const char *text, uint64_t mask,
                      char *err, size_t errlen)
{
	strb_config_init(cfg);
	const char *used = NULL;
	char *base = strb_config_read_base(base_path, &used);
	if (!base)
		return -ENOMEM;
	char base_err[512];
	if (base[0] && strb_config_parse(cfg, base, NULL, base_err, sizeof(base_err)) != 0) {
		LOGW("ignoring base config %s: %s", used ? used : "", base_err);
		strb_config_init(cfg);
	}
	free(base);
	if (text && text[0] && strb_config_parse(cfg, text, NULL, err, errlen) != 0)
		return STROBE_E_CONFIG;
	if (mask)
		cfg->activity_mask = mask;
	if (!cfg->activity_mask)
		cfg->activity_mask = STROBE_ACTIVITY_DEFAULT_MASK;
	return 0;
}

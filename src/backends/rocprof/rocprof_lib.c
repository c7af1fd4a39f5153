/* Finding and opening rocprofiler-sdk: exactly STROBE_ROCPROFILER_PATH when
 * set, else librocprofiler-sdk.so.1 / .so.0 on the loader path, in
 * $ROCM_PATH/lib and in /opt/rocm/lib. Kept once opened; the handle is
 * never closed (the SDK's threads and callbacks outlive any trace). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/rocprof/rocprof_lib.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct strb_rocprof_lib lib;
static char lib_why[512];

#define SYM(field, name)                                                                                     \
	{                                                                                                    \
		(void **)&lib.field, name                                                                    \
	}

static bool bind(void *h, char *why, size_t len)
{
	const struct {
		void **slot;
		const char *name;
	} syms[] = {
	    SYM(get_version, "rocprofiler_get_version"),
	    SYM(is_initialized, "rocprofiler_is_initialized"),
	    SYM(force_configure, "rocprofiler_force_configure"),
	    SYM(get_timestamp, "rocprofiler_get_timestamp"),
	    SYM(create_context, "rocprofiler_create_context"),
	    SYM(start_context, "rocprofiler_start_context"),
	    SYM(stop_context, "rocprofiler_stop_context"),
	    SYM(create_buffer, "rocprofiler_create_buffer"),
	    SYM(flush_buffer, "rocprofiler_flush_buffer"),
	    SYM(configure_buffer_tracing, "rocprofiler_configure_buffer_tracing_service"),
	    SYM(configure_callback_tracing, "rocprofiler_configure_callback_tracing_service"),
	    SYM(query_agents, "rocprofiler_query_available_agents"),
	    SYM(op_name, "rocprofiler_query_callback_tracing_kind_operation_name"),
	    SYM(iterate_ops, "rocprofiler_iterate_callback_tracing_kind_operations"),
	    {&lib.iterate_args, "rocprofiler_iterate_callback_tracing_kind_operation_args"},
	};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot) {
			snprintf(why, len, "%.300s lacks %s", lib.path, syms[i].name);
			return false;
		}
	}
	/* Optional: without them strobe_correlation_push ids do not reach
	 * AMD work (a push is not taken), and nothing else changes. */
	*(void **)&lib.push_external = dlsym(h, "rocprofiler_push_external_correlation_id");
	*(void **)&lib.pop_external = dlsym(h, "rocprofiler_pop_external_correlation_id");
	if (!lib.push_external || !lib.pop_external)
		lib.push_external = NULL, lib.pop_external = NULL;
	uint32_t minor = 0, patch = 0;
	int32_t st = lib.get_version(&lib.major, &minor, &patch);
	if (st != ROCP_STATUS_SUCCESS) {
		snprintf(why, len, "rocprofiler_get_version failed: status %d", (int)st);
		return false;
	}
	lib.minor = minor;
	if (lib.major > 1) {
		snprintf(why, len, "rocprofiler-sdk %u.%u is newer than the 0.x and 1.x ABIs strobe reads",
		         lib.major, minor);
		return false;
	}
	return true;
}

static void *try_open(const char *path, char *first_err, size_t len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h)
		snprintf(lib.path, sizeof(lib.path), "%s", path);
	else if (!first_err[0])
		snprintf(first_err, len, "%s", dlerror());
	return h;
}

static void *open_sdk(char *why, size_t len)
{
	static const char *const names[] = {"librocprofiler-sdk.so.1", "librocprofiler-sdk.so.0"};
	char err[400] = "";
	const char *exact = getenv("STROBE_ROCPROFILER_PATH");
	if (exact && *exact) {
		void *h = try_open(exact, err, sizeof(err));
		if (!h)
			snprintf(why, len,
			         "rocprofiler-sdk not loadable from STROBE_ROCPROFILER_PATH=%.200s: %.200s",
			         exact, err);
		return h;
	}
	const char *rocm = getenv("ROCM_PATH");
	const char *dirs[] = {NULL, rocm && *rocm ? rocm : NULL, "/opt/rocm"};
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		if (d && !dirs[d])
			continue;
		for (size_t n = 0; n < 2; n++) {
			char path[4096];
			if (d)
				snprintf(path, sizeof(path), "%s/lib/%s", dirs[d], names[n]);
			else
				snprintf(path, sizeof(path), "%s", names[n]);
			void *h = try_open(path, err, sizeof(err));
			if (h)
				return h;
		}
	}
	snprintf(why, len,
	         "rocprofiler-sdk (ROCm 6.2+) not found: librocprofiler-sdk.so.1/.so.0 not on the loader "
	         "path, in $ROCM_PATH/lib or /opt/rocm/lib (%.200s)", /* the loader's last words, bounded */
	         err);
	return NULL;
}

const struct strb_rocprof_lib *strb_rocprof_load(char *why, size_t len)
{
	pthread_mutex_lock(&lock);
	/* Tried again while it fails: the runtime may load the SDK later. */
	if (!lib.handle) {
		void *h = open_sdk(lib_why, sizeof(lib_why));
		if (h && bind(h, lib_why, sizeof(lib_why)))
			lib.handle = h;
	}
	const struct strb_rocprof_lib *r = lib.handle ? &lib : NULL;
	if (!r && why)
		snprintf(why, len, "%s", lib_why);
	pthread_mutex_unlock(&lock);
	return r;
}

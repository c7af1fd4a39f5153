#define LOG_TAG "cupti"
#include "backends/cupti/cupti_lib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct strb_cupti_lib lib;
static bool loaded;
static char load_error[1024];

static void *open_candidates(void)
{
	const char *exact = getenv("STROBE_CUPTI_PATH");
	if (exact && *exact) {
		void *h = dlopen(exact, RTLD_NOW | RTLD_LOCAL);
		if (!h)
			snprintf(load_error, sizeof(load_error), "STROBE_CUPTI_PATH=%s cannot be loaded: %s",
			         exact, dlerror());
		else
			snprintf(lib.path, sizeof(lib.path), "%s", exact);
		return h;
	}
	/* No driver, no GPU work to see: leave libcupti (large, and it starts
	 * threads of its own) out of CPU-only processes. An explicit
	 * STROBE_CUPTI_PATH is trusted as it is. The handle stays open, as
	 * CUDA keeps it anyway. */
	if (!dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
		snprintf(load_error, sizeof(load_error),
		         "no CUDA driver in this process (libcuda.so.1 cannot be loaded: %s)", dlerror());
		return NULL;
	}
	static const char *const names[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h) {
			snprintf(lib.path, sizeof(lib.path), "%s", names[i]);
			return h;
		}
	}
	const char *home = getenv("CUDA_HOME");
	const char *roots[] = {home && *home ? home : "/usr/local/cuda", "/usr/local/cuda"};
	static const char *const subdirs[] = {"extras/CUPTI/lib64", "lib64"};
	for (size_t r = 0; r < 2; r++) {
		for (size_t d = 0; d < 2; d++) {
			for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
				snprintf(lib.path, sizeof(lib.path), "%s/%s/%s", roots[r], subdirs[d],
				         names[i]);
				void *h = dlopen(lib.path, RTLD_NOW | RTLD_LOCAL);
				if (h)
					return h;
			}
		}
	}
	lib.path[0] = 0;
	snprintf(load_error, sizeof(load_error),
	         "libcupti was not found (tried libcupti.so.13/.12/.so, $CUDA_HOME and /usr/local/cuda; "
	         "set STROBE_CUPTI_PATH to its file)");
	return NULL;
}

static void load(void)
{
	void *h = open_candidates();
	if (!h)
		return;
		/* Resolve everything now, so a missing symbol is a clear reason at
		 * prepare time rather than a crash in the middle of a trace. */
#define STRB_CUPTI_RESOLVE(name)                                                                             \
	lib.name = (__typeof__(lib.name))dlsym(h, #name);                                                    \
	if (!lib.name) {                                                                                     \
		snprintf(load_error, sizeof(load_error), "%s has no %s (too old or not libcupti)", lib.path, \
		         #name);                                                                             \
		return;                                                                                      \
	}
	STRB_CUPTI_REQUIRED(STRB_CUPTI_RESOLVE)
#undef STRB_CUPTI_RESOLVE
#define STRB_CUPTI_RESOLVE_OPT(name) lib.name = (__typeof__(lib.name))dlsym(h, #name);
	STRB_CUPTI_OPTIONAL(STRB_CUPTI_RESOLVE_OPT)
#undef STRB_CUPTI_RESOLVE_OPT
	CUptiResult r = lib.cuptiGetVersion(&lib.version);
	if (r != CUPTI_SUCCESS) {
		snprintf(load_error, sizeof(load_error), "cuptiGetVersion failed in %s (%s)", lib.path,
		         strb_cupti_result(r));
		return;
	}
	/* Never dlclose: CUPTI keeps threads and callbacks pointing into it. */
	loaded = true;
	LOGI("loaded %s (CUPTI API version %u)", lib.path, lib.version);
}

const struct strb_cupti_lib *strb_cupti_load(char *why, size_t why_len)
{
	pthread_once(&once, load);
	if (!loaded) {
		if (why_len)
			snprintf(why, why_len, "%s", load_error);
		return NULL;
	}
	return &lib;
}

const char *strb_cupti_result(CUptiResult r)
{
	const char *s = NULL;
	if (loaded && lib.cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s)
		return s;
	return "CUPTI error";
}

/* Finding and opening Intel PTI's libpti_view (see pti_lib.h for where it is
 * looked for). Kept once opened; the handle is never closed (PTI's consumer
 * thread and callbacks outlive any trace). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/pti/pti_lib.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct strb_pti_lib lib;
static char lib_why[512];

#define SYM(field, name, required)                                                                           \
	{                                                                                                    \
		(void **)&lib.field, name, required                                                          \
	}

static bool bind(void *h, char *why, size_t len)
{
	const struct {
		void **slot;
		const char *name;
		bool required;
	} syms[] = {
	    SYM(set_callbacks, "ptiViewSetCallbacks", true),
	    SYM(enable, "ptiViewEnable", true),
	    SYM(disable, "ptiViewDisable", true),
	    SYM(flush_all, "ptiFlushAllViews", true),
	    SYM(next_record, "ptiViewGetNextRecord", true),
	    SYM(push_external, "ptiViewPushExternalCorrelationId", true),
	    SYM(pop_external, "ptiViewPopExternalCorrelationId", true),
	    SYM(set_timestamp_callback, "ptiViewSetTimestampCallback", true),
	    SYM(api_name, "ptiViewGetApiIdName", true),
	    SYM(result_string, "ptiResultTypeToString", true),
	    SYM(enable_runtime_api_class, "ptiViewEnableRuntimeApiClass", false),
	    SYM(memcpy_type_string, "ptiViewMemcpyTypeToString", false),
	    SYM(memory_type_string, "ptiViewMemoryTypeToString", false),
	};
	pti_version_fn version = (pti_version_fn)dlsym(h, "ptiVersion");
	pti_version_string_fn version_string = (pti_version_string_fn)dlsym(h, "ptiVersionString");
	if (!version) {
		snprintf(why, len, "%.300s lacks ptiVersion (PTI older than 0.11?)", lib.path);
		return false;
	}
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(h, syms[i].name);
		if (!*syms[i].slot && syms[i].required) {
			snprintf(why, len, "%.300s lacks %s (PTI older than 0.11?)", lib.path, syms[i].name);
			return false;
		}
	}
	lib.version = version();
	lib.v2 = strb_pti_v2(lib.version);
	const char *vs = version_string ? version_string() : NULL;
	if (vs && *vs)
		snprintf(lib.version_string, sizeof(lib.version_string), "%.31s", vs);
	else
		snprintf(lib.version_string, sizeof(lib.version_string), "%u.%u.%u", lib.version.major,
		         lib.version.minor, lib.version.patch);
	if (lib.version.major > 1) {
		snprintf(why, len, "PTI %s is newer than the 0.x and 1.x record layouts strobe reads",
		         lib.version_string);
		return false;
	}
	return true;
}

static void *try_open(const char *path, char *first_err, size_t len)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h)
		snprintf(lib.path, sizeof(lib.path), "%.*s", (int)sizeof(lib.path) - 1, path);
	else if (!first_err[0])
		snprintf(first_err, len, "%s", dlerror());
	return h;
}

/* The prefix of the first python3 on PATH (…/bin/python3 -> …), or "". */
static void python_prefix(char *out, size_t len)
{
	const char *path = getenv("PATH");
	out[0] = 0;
	while (path && *path) {
		size_t n = strcspn(path, ":");
		char exe[PATH_MAX], real[PATH_MAX];
		if (n && n < sizeof(exe) - 16) {
			snprintf(exe, sizeof(exe), "%.*s/python3", (int)n, path);
			if (access(exe, X_OK) == 0 && realpath(exe, real)) {
				char *slash = strrchr(real, '/');
				if (slash)
					*slash = 0; /* …/bin */
				slash = strrchr(real, '/');
				if (slash && !strcmp(slash, "/bin")) {
					*slash = 0;
					snprintf(out, len, "%.*s", (int)len - 1, real);
				}
				return;
			}
		}
		path += n + (path[n] == ':');
	}
}

static void *open_pti(char *why, size_t len)
{
	static const char *const names[] = {"libpti_view.so.1", "libpti_view.so"};
	char err[400] = "";
	const char *exact = getenv("STROBE_PTI_PATH");
	if (exact && *exact) {
		void *h = try_open(exact, err, sizeof(err));
		if (!h)
			snprintf(why, len, "PTI not loadable from STROBE_PTI_PATH=%.200s: %.200s", exact,
			         err);
		return h;
	}
	char oneapi[PATH_MAX] = "", oneapi_pti[PATH_MAX] = "", python[PATH_MAX] = "", home[PATH_MAX] = "";
	const char *root = getenv("ONEAPI_ROOT");
	if (root && *root) {
		snprintf(oneapi, sizeof(oneapi), "%.3000s/lib", root);
		snprintf(oneapi_pti, sizeof(oneapi_pti), "%.3000s/pti/latest/lib", root);
	}
	python_prefix(python, sizeof(python) - 8);
	if (python[0])
		strcat(python, "/lib");
	const char *h = getenv("HOME");
	if (h && *h)
		snprintf(home, sizeof(home), "%.3000s/.local/lib", h);
	char venv[PATH_MAX] = "", conda[PATH_MAX] = "";
	const char *v = getenv("VIRTUAL_ENV"), *c = getenv("CONDA_PREFIX");
	if (v && *v)
		snprintf(venv, sizeof(venv), "%.3000s/lib", v);
	if (c && *c)
		snprintf(conda, sizeof(conda), "%.3000s/lib", c);
	const char *dirs[] = {"", oneapi, oneapi_pti, venv, conda, python, home};
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		if (d && !dirs[d][0])
			continue;
		for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
			char path[PATH_MAX + 32];
			snprintf(path, sizeof(path), "%s%s%s", dirs[d], d ? "/" : "", names[n]);
			void *handle = try_open(path, err, sizeof(err));
			if (handle)
				return handle;
		}
	}
	snprintf(why, len,
	         "Intel PTI not found: libpti_view.so.1 not on the loader path, in $ONEAPI_ROOT or in an "
	         "intel-pti Python package's lib folder (set STROBE_PTI_PATH) (%.200s)",
	         err);
	return NULL;
}

const struct strb_pti_lib *strb_pti_load(char *why, size_t len)
{
	pthread_mutex_lock(&lock);
	if (!lib.handle) {
		void *h = open_pti(lib_why, sizeof(lib_why));
		if (h && bind(h, lib_why, sizeof(lib_why)))
			lib.handle = h;
	}
	const struct strb_pti_lib *r = lib.handle ? &lib : NULL;
	if (!r && why)
		snprintf(why, len, "%s", lib_why);
	pthread_mutex_unlock(&lock);
	return r;
}

const char *strb_pti_result(const struct strb_pti_lib *l, pti_result_t r, char *buf, size_t len)
{
	const char *s = l && l->result_string ? l->result_string(r) : NULL;
	if (s && *s && strcmp(s, "INVALID"))
		snprintf(buf, len, "%s", s);
	else
		snprintf(buf, len, "PTI result %u", (unsigned)r);
	return buf;
}

/* The fake rocprofiler-sdk's control API (fake_rocprofiler.h), reached the
 * way the backend reaches the SDK: dlopen by path, dlsym by name. One table
 * and one loader for every test and bench that drives the fake; each field
 * has the type of the function it holds, so a call that does not match the
 * declaration does not compile. */
#ifndef STROBE_FAKE_ROCPROFILER_LOAD_H
#define STROBE_FAKE_ROCPROFILER_LOAD_H

#include <dlfcn.h>
#include <stdio.h>

#include "fake_rocprofiler.h"

/* Every control function, by its name after "fake_rocp_". */
#define FAKE_ROCP_CONTROL(X)                                                                                 \
	X(abi_major)                                                                                         \
	X(set_gpus)                                                                                          \
	X(agent)                                                                                             \
	X(runtime_init)                                                                                      \
	X(shutdown)                                                                                          \
	X(fail)                                                                                              \
	X(set_suspend_ns)                                                                                    \
	X(now)                                                                                               \
	X(load_code_object)                                                                                  \
	X(unload_code_object)                                                                                \
	X(hip_call)                                                                                          \
	X(hip_op)                                                                                            \
	X(dispatch)                                                                                          \
	X(copy)                                                                                              \
	X(roctx_mark)                                                                                        \
	X(roctx_push)                                                                                        \
	X(roctx_pop)                                                                                         \
	X(roctx_start)                                                                                       \
	X(roctx_stop)                                                                                        \
	X(drop)                                                                                              \
	X(set_watermark)                                                                                     \
	X(external_depth)                                                                                    \
	X(deliveries)

#define FAKE_ROCP_FIELD(name) __typeof__(&fake_rocp_##name) name;
struct fake_rocp_control {
	void *handle;
	FAKE_ROCP_CONTROL(FAKE_ROCP_FIELD)
};
#undef FAKE_ROCP_FIELD

/* Opens the fake at path and fills c (the library stays loaded). Returns 0,
 * or -1 with why naming what failed. */
static inline int fake_rocp_control_load(struct fake_rocp_control *c, const char *path, char *why, size_t len)
{
	c->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!c->handle) {
		snprintf(why, len, "%s", dlerror());
		return -1;
	}
#define FAKE_ROCP_SLOT(name) {(void **)&c->name, "fake_rocp_" #name},
	const struct {
		void **slot;
		const char *name;
	} syms[] = {FAKE_ROCP_CONTROL(FAKE_ROCP_SLOT)};
#undef FAKE_ROCP_SLOT
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(c->handle, syms[i].name);
		if (!*syms[i].slot) {
			snprintf(why, len, "%s lacks %s", path, syms[i].name);
			return -1;
		}
	}
	return 0;
}

#endif

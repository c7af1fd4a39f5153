#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "process/gpu_demangle.h"

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);
static cxa_demangle_fn cxa_demangle;
static pthread_once_t cxa_once = PTHREAD_ONCE_INIT;

/* In the process already (every HIP or CUDA program has the C++ runtime),
 * else from libstdc++ itself. */
static void look_up(void)
{
	void *sym = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	void *cxx = sym ? NULL : dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (cxx)
		sym = dlsym(cxx, "__cxa_demangle");
	*(void **)&cxa_demangle = sym;
}

char *strb_gpu_demangle(const char *mangled)
{
	int status = -1;
	if (!mangled || mangled[0] != '_' || mangled[1] != 'Z' || strnlen(mangled, 8193) > 8192)
		return NULL;
	pthread_once(&cxa_once, look_up);
	char *out = cxa_demangle ? cxa_demangle(mangled, NULL, NULL, &status) : NULL;
	if (status == 0)
		return out;
	free(out);
	return NULL;
}

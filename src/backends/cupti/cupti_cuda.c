/* What the program's CUDA driver and runtime say about themselves and the
 * devices, looked up among the libraries already loaded, never loaded or
 * initialised by strobe (cupti_cuda.h). */
#include "backends/cupti/cupti_cuda.h"

#include <cuda.h>
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* A symbol of a library the program loaded: the global scope first (a
 * program linked with -lcuda or -lcudart, or a library loaded RTLD_GLOBAL),
 * then the library itself by name when it was loaded privately
 * (RTLD_NOLOAD: never loaded here). The handle stays open, as the library
 * does anyway. */
static void *loaded_sym(const char *lib, const char *name)
{
	void *p = dlsym(RTLD_DEFAULT, name);
	if (p || !lib)
		return p;
	void *h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
	return h ? dlsym(h, name) : NULL;
}

static int find_cudart(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	const char *base = slash ? slash + 1 : info->dlpi_name;
	if (!base || strncmp(base, "libcudart.so", 12))
		return 0;
	snprintf(arg, 512, "%s", info->dlpi_name);
	return 1;
}

void strb_cuda_versions(int *driver, int *runtime)
{
	*driver = *runtime = 0;
	CUresult (*drv)(int *) = (CUresult(*)(int *))loaded_sym("libcuda.so.1", "cuDriverGetVersion");
	if (drv && drv(driver) != CUDA_SUCCESS)
		*driver = 0;
	char cudart[512] = "";
	dl_iterate_phdr(find_cudart, cudart);
	int (*rt)(int *) = (int (*)(int *))loaded_sym(cudart[0] ? cudart : NULL, "cudaRuntimeGetVersion");
	if (rt && rt(runtime) != 0) /* cudaSuccess */
		*runtime = 0;
}

struct driver {
	CUresult (*count)(int *);
	CUresult (*get)(CUdevice *, int);
	CUresult (*attr)(int *, CUdevice_attribute, CUdevice);
	CUresult (*name)(char *, int, CUdevice);
	CUresult (*mem)(size_t *, CUdevice);
	CUresult (*uuid)(CUuuid *, CUdevice);
};

static bool device_from_driver(const struct driver *d, int ordinal, struct strb_cuda_device *out)
{
	memset(out, 0, sizeof(*out));
	CUdevice dev;
	size_t mem = 0;
	if (d->get(&dev, ordinal) != CUDA_SUCCESS ||
	    d->name(out->name, sizeof(out->name), dev) != CUDA_SUCCESS || d->mem(&mem, dev) != CUDA_SUCCESS)
		return false;
	out->name[sizeof(out->name) - 1] = 0;
	out->total_mem = mem;
	static const struct {
		CUdevice_attribute attr;
		size_t off;
	} attrs[] = {
	    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, offsetof(struct strb_cuda_device, major)},
	    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, offsetof(struct strb_cuda_device, minor)},
	    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(struct strb_cuda_device, threads_per_block)},
	    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
	     offsetof(struct strb_cuda_device, threads_per_sm)},
	    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, offsetof(struct strb_cuda_device, regs_per_block)},
	    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, offsetof(struct strb_cuda_device, warp_size)},
	    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
	     offsetof(struct strb_cuda_device, shared_per_block)},
	    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, offsetof(struct strb_cuda_device, sm_count)},
	    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
	     offsetof(struct strb_cuda_device, regs_per_sm)},
	    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
	     offsetof(struct strb_cuda_device, shared_per_block_optin)},
	    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
	     offsetof(struct strb_cuda_device, shared_per_sm)},
	    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
	     offsetof(struct strb_cuda_device, reserved_shared_per_block)},
	};
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
		if (d->attr((int *)((char *)out + attrs[i].off), attrs[i].attr, dev) != CUDA_SUCCESS)
			return false;
	CUuuid u;
	if (d->uuid && d->uuid(&u, dev) == CUDA_SUCCESS) {
		memcpy(out->uuid, u.bytes, sizeof(out->uuid));
		out->uuid_known = true;
	}
	out->known = out->optin_known = true;
	return true;
}

int strb_cuda_devices(struct strb_cuda_device *out, int max)
{
	static const char lib[] = "libcuda.so.1";
	struct driver d = {
	    .count = (CUresult(*)(int *))loaded_sym(lib, "cuDeviceGetCount"),
	    .get = (CUresult(*)(CUdevice *, int))loaded_sym(lib, "cuDeviceGet"),
	    .attr = (CUresult(*)(int *, CUdevice_attribute, CUdevice))loaded_sym(lib, "cuDeviceGetAttribute"),
	    .name = (CUresult(*)(char *, int, CUdevice))loaded_sym(lib, "cuDeviceGetName"),
	    .mem = (CUresult(*)(size_t *, CUdevice))loaded_sym(lib, "cuDeviceTotalMem_v2"),
	    .uuid = (CUresult(*)(CUuuid *, CUdevice))loaded_sym(lib, "cuDeviceGetUuid_v2"),
	};
	if (!d.uuid)
		d.uuid = (CUresult(*)(CUuuid *, CUdevice))loaded_sym(lib, "cuDeviceGetUuid");
	int n = 0;
	/* Not initialised (CUDA_ERROR_NOT_INITIALIZED) or torn down: nothing. */
	if (!d.count || !d.get || !d.attr || !d.name || !d.mem || d.count(&n) != CUDA_SUCCESS || n < 0)
		return -1;
	for (int i = 0; i < n && i < max; i++)
		device_from_driver(&d, i, &out[i]);
	return n;
}

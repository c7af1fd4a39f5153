/* A shared library with its own copy of NVTX (each module that includes the
 * nvtx3 headers initialises NVTX on its own first call). */
#include <nvtx3/nvToolsExt.h>

__attribute__((visibility("default"))) void nvtx_lib_range(const char *name);
__attribute__((visibility("default"))) void nvtx_lib_range(const char *name)
{
	nvtxRangePushA(name);
	nvtxRangePop();
}

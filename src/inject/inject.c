/* libstrobe_inject.so: what `strobe record` puts into a program. The CUDA
 * driver (CUDA_INJECTION64_PATH), NVTX's loader (NVTX_INJECTION64_PATH) and
 * the dynamic linker (LD_PRELOAD) each load it; everything it does is
 * forwarded to libstrobe.so, which it links, so a program that links
 * libstrobe itself has a single strobe in it. It returns success to its
 * callers whatever happens: a profiler never fails the program. */
#include "control/recorder.h"

#define INJECT_API __attribute__((visibility("default")))

__attribute__((constructor)) static void inject_loaded(void)
{
	strobe_internal_record_boot();
}

/* Called by the CUDA driver during cuInit. */
INJECT_API int InitializeInjection(void);
INJECT_API int InitializeInjection(void)
{
	strobe_internal_inject_cuda();
	return 1;
}

/* Called by each NVTX module on its first NVTX call; the argument is the
 * module's NvtxGetExportTableFunc_t. */
INJECT_API int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t));
INJECT_API int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t))
{
	return strobe_internal_inject_nvtx((const void *)get_export_table);
}

/* libstrobe's rocprofiler_configure (src/backends/rocprof/rocprof.c): the
 * client id is a rocp_client_id_t, the result a rocp_configure_result_t. */
STROBE_API void *strobe_internal_inject_rocprof(uint32_t version, const char *runtime_version,
                                                uint32_t priority, void *client_id);

/* Found by rocprofiler-sdk (ROCP_TOOL_LIBRARIES, or in the process) when
 * HIP starts; strobe registers through it. */
INJECT_API void *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                       void *client_id);
INJECT_API void *rocprofiler_configure(uint32_t version, const char *runtime_version, uint32_t priority,
                                       void *client_id)
{
	return strobe_internal_inject_rocprof(version, runtime_version, priority, client_id);
}

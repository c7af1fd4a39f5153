#include <errno.h>
#include <string.h>

#include "strobe/strobe.h"

static const char *const type_names[STROBE_ACTIVITY_TYPE_MAX + 1] = {
    [STROBE_ACTIVITY_CPU_OP] = "cpu_op",
    [STROBE_ACTIVITY_USER_ANNOTATION] = "user_annotation",
    [STROBE_ACTIVITY_GPU_USER_ANNOTATION] = "gpu_user_annotation",
    [STROBE_ACTIVITY_GPU_MEMCPY] = "gpu_memcpy",
    [STROBE_ACTIVITY_GPU_MEMSET] = "gpu_memset",
    [STROBE_ACTIVITY_CONCURRENT_KERNEL] = "kernel",
    [STROBE_ACTIVITY_EXTERNAL_CORRELATION] = "external_correlation",
    [STROBE_ACTIVITY_CUDA_RUNTIME] = "cuda_runtime",
    [STROBE_ACTIVITY_CUDA_DRIVER] = "cuda_driver",
    [STROBE_ACTIVITY_CPU_INSTANT_EVENT] = "cpu_instant_event",
    [STROBE_ACTIVITY_PYTHON_FUNCTION] = "python_function",
    [STROBE_ACTIVITY_OVERHEAD] = "overhead",
    [STROBE_ACTIVITY_MTIA_RUNTIME] = "mtia_runtime",
    [STROBE_ACTIVITY_MTIA_CCP_EVENTS] = "mtia_ccp_events",
    [STROBE_ACTIVITY_MTIA_INSIGHT] = "mtia_insight",
    [STROBE_ACTIVITY_CUDA_SYNC] = "cuda_sync",
    [STROBE_ACTIVITY_CUDA_EVENT] = "cuda_event",
    [STROBE_ACTIVITY_MTIA_COUNTERS] = "mtia_counters",
    [STROBE_ACTIVITY_GLOW_RUNTIME] = "glow_runtime",
    [STROBE_ACTIVITY_CUDA_PROFILER_RANGE] = "cuda_profiler_range",
    [STROBE_ACTIVITY_HPU_OP] = "hpu_op",
    [STROBE_ACTIVITY_XPU_RUNTIME] = "xpu_runtime",
    [STROBE_ACTIVITY_XPU_DRIVER] = "xpu_driver",
    [STROBE_ACTIVITY_COLLECTIVE_COMM] = "collective_comm",
    [STROBE_ACTIVITY_PRIVATEUSE1_RUNTIME] = "privateuse1_runtime",
    [STROBE_ACTIVITY_PRIVATEUSE1_DRIVER] = "privateuse1_driver",
    [STROBE_ACTIVITY_XPU_SCOPE_PROFILER] = "xpu_scope_profiler",
    [STROBE_ACTIVITY_XPU_SYNC] = "xpu_sync",
    [STROBE_ACTIVITY_HARDWARE_COUNTERS] = "hardware_counters",
    [STROBE_ACTIVITY_CPU_COUNTER] = "cpu_counter",
    [STROBE_ACTIVITY_GPU_MEMORY] = "gpu_memory",
    [STROBE_ACTIVITY_GPU_COUNTERS] = "gpu_counters",
};

const char *strobe_activity_type_name(enum strobe_activity_type type)
{
	return (unsigned)type <= STROBE_ACTIVITY_TYPE_MAX ? type_names[type] : NULL;
}

int strobe_activity_type_parse(const char *name, enum strobe_activity_type *out)
{
	if (!name || !out)
		return -EINVAL;
	for (unsigned i = 0; i <= STROBE_ACTIVITY_TYPE_MAX; i++) {
		if (type_names[i] && !strcmp(type_names[i], name)) {
			*out = (enum strobe_activity_type)i;
			return 0;
		}
	}
	return -EINVAL;
}

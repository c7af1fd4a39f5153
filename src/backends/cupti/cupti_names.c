#include "backends/cupti/cupti_names.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strb_cupti_strip_version(char *name)
{
	size_t n = strlen(name), digits = 0;
	while (digits < n && isdigit((unsigned char)name[n - 1 - digits]))
		digits++;
	if (digits >= 4 && n >= digits + 2 && name[n - digits - 1] == 'v' && name[n - digits - 2] == '_')
		name[n - digits - 2] = 0;
}

const char *strb_cupti_api_name(const struct strb_cupti_lib *lib, CUpti_CallbackDomain domain, uint32_t cbid,
                                char *buf, size_t len)
{
	const char *name = NULL;
	if (lib->cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
		name = "INVALID";
	snprintf(buf, len, "%s", name);
	strb_cupti_strip_version(buf);
	return buf;
}

bool strb_cupti_runtime_blocklisted(uint32_t cbid)
{
	switch (cbid) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreate_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaEventCreateWithFlags_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaEventDestroy_v3020:
		return true;
	default:
		return false;
	}
}

bool strb_cupti_driver_kept(uint32_t cbid)
{
	switch (cbid) {
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
	case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
	case CUPTI_DRIVER_TRACE_CBID_cuMemCreate:
	case CUPTI_DRIVER_TRACE_CBID_cuMemMap:
	case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
	case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
	case CUPTI_DRIVER_TRACE_CBID_cuMemExportToShareableHandle:
	case CUPTI_DRIVER_TRACE_CBID_cuMemImportFromShareableHandle:
		return true;
	default:
		return false;
	}
}

bool strb_cupti_is_kernel_launch(CUpti_ActivityKind kind, uint32_t cbid)
{
	if (kind == CUPTI_ACTIVITY_KIND_DRIVER) {
		switch (cbid) {
		case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
		case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
		case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
		case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
			return true;
		default:
			return false;
		}
	}
	switch (cbid) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
	case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
	case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
		return true;
	default:
		return false;
	}
}

bool strb_cupti_flow_start(CUpti_ActivityKind kind, uint32_t cbid)
{
	if (strb_cupti_is_kernel_launch(kind, cbid))
		return true;
	if (kind == CUPTI_ACTIVITY_KIND_DRIVER)
		return cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
		       cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
	if (cbid >= CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020 &&
	    cbid <= CUPTI_RUNTIME_TRACE_CBID_cudaMemset2DAsync_v3020)
		return true;
	switch (cbid) {
	case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernelMultiDevice_v9000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000:
	case CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020:
	case CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_ptsz_v7000:
		return true;
	default:
		return false;
	}
}

const char *strb_cupti_memcpy_kind(uint8_t kind)
{
	static const char *const names[] = {"<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
	                                    "AtoD",      "DtoA", "DtoD", "HtoH", "PtoP"};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "<unknown>";
}

const char *strb_cupti_memory_kind(uint32_t kind)
{
	static const char *const names[] = {"Unknown", "Pageable", "Pinned",        "Device",
	                                    "Array",   "Managed",  "Device Static", "Managed Static"};
	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "Unrecognized";
}

const char *strb_cupti_overhead_kind(uint32_t kind)
{
	switch (kind) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
		return "Driver Compiler";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
		return "Buffer Flush";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
		return "Instrumentation";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
		return "Resource";
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
		return "Runtime Triggered Module Loading";
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
		return "Lazy Function Loading";
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
		return "Command Buffer Full";
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
		return "Activity Buffer Request";
	default:
		return "Unknown";
	}
}

const char *strb_cupti_sync_kind(uint32_t type)
{
	switch (type) {
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
		return "Event Sync";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
		return "Stream Wait Event";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
		return "Stream Sync";
	case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
		return "Context Sync";
	default:
		return "Unknown Sync";
	}
}

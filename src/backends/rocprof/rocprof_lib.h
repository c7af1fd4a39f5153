/* rocprofiler-sdk, loaded with dlopen (rocprof_lib.c). */
#ifndef STROBE_BACKENDS_ROCPROF_LIB_H
#define STROBE_BACKENDS_ROCPROF_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/rocprof/rocprof_abi.h"

struct strb_rocprof_lib {
	void *handle;
	char path[4096];
	uint32_t major, minor; /* the ABI family is major */
	rocp_get_version_fn get_version;
	rocp_is_initialized_fn is_initialized;
	rocp_force_configure_fn force_configure;
	rocp_get_timestamp_fn get_timestamp;
	rocp_create_context_fn create_context;
	rocp_context_fn start_context, stop_context;
	rocp_create_buffer_fn create_buffer;
	rocp_buffer_fn flush_buffer;
	rocp_configure_buffer_tracing_fn configure_buffer_tracing;
	rocp_configure_callback_tracing_fn configure_callback_tracing;
	rocp_query_available_agents_fn query_agents;
	rocp_query_operation_name_fn op_name;
	rocp_iterate_operations_fn iterate_ops;
	void *iterate_args; /* rocp_iterate_args_v0_fn or _v1_fn, by family */
	/* Optional (NULL when the SDK lacks them): external correlation. */
	rocp_push_external_fn push_external;
	rocp_pop_external_fn pop_external;
};

/* The SDK, kept once opened (thread-safe; retried while it fails); NULL
 * with why filled when it is missing or unusable. */
const struct strb_rocprof_lib *strb_rocprof_load(char *why, size_t len);

/* The SDK's value for a status named by its 0.x number. */
static inline int32_t strb_rocprof_status(const struct strb_rocprof_lib *lib, int32_t v0_code)
{
	return rocp_status_code(lib->major, v0_code);
}

#endif

/* Names and classifications of CUPTI records, as libkineto shows them. */
#ifndef STROBE_BACKENDS_CUPTI_NAMES_H
#define STROBE_BACKENDS_CUPTI_NAMES_H

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>

#include "backends/cupti/cupti_lib.h"

/* "cudaLaunchKernel" for runtime cbid 211: the callback name with a
 * trailing "_v" + 4 or more digits removed; "INVALID" when unknown. Writes
 * into buf and returns it. */
const char *strb_cupti_api_name(const struct strb_cupti_lib *lib, CUpti_CallbackDomain domain, uint32_t cbid,
                                char *buf, size_t len);
/* Strips the version suffix in place (exposed for tests). */
void strb_cupti_strip_version(char *name);

/* Runtime calls dropped as noise and counted ("blocklisted"). */
bool strb_cupti_runtime_blocklisted(uint32_t cbid);
/* Driver calls worth keeping (launches and the VMM calls). */
bool strb_cupti_driver_kept(uint32_t cbid);
/* Calls that start an ac2g arrow to the GPU work they cause. */
bool strb_cupti_flow_start(CUpti_ActivityKind kind, uint32_t cbid);
/* Kernel launches, for the launches-vs-kernels self-check (graph launches
 * excluded: one call, many kernels). */
bool strb_cupti_is_kernel_launch(CUpti_ActivityKind kind, uint32_t cbid);

const char *strb_cupti_memcpy_kind(uint8_t kind);
const char *strb_cupti_memory_kind(uint32_t kind);
const char *strb_cupti_overhead_kind(uint32_t kind);
const char *strb_cupti_sync_kind(uint32_t type);

#endif

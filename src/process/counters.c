/* The device memory levels at trace start, noted by the counter sampler when
 * the trace starts and read by a GPU backend when it processes the trace
 * (both on the thread driving the trace, under the controller's lock). */
#include "process/counters.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "process/gpu.h"

static const char *const counter_names[STRB_CTR_COUNT] = {
    [STRB_CTR_SM_UTIL] = "SM utilization (%)",
    [STRB_CTR_MEM_UTIL] = "Memory utilization (%)",
    [STRB_CTR_SM_CLOCK] = "SM clock (MHz)",
    [STRB_CTR_MEM_CLOCK] = "Memory clock (MHz)",
    [STRB_CTR_POWER] = "Power (W)",
    [STRB_CTR_TEMP] = "Temperature (C)",
    [STRB_CTR_MEM_USED] = "Memory used (bytes)",
    [STRB_CTR_PCIE_TX] = "PCIe TX (KB/s)",
    [STRB_CTR_PCIE_RX] = "PCIe RX (KB/s)",
    [STRB_CTR_THROTTLE] = "Throttle reasons (bitmask)",
    [STRB_CTR_NVLINK_TX] = "NVLink TX (KiB/s)",
    [STRB_CTR_NVLINK_RX] = "NVLink RX (KiB/s)",
};

const char *strb_counter_name(enum strb_counter_id id)
{
	return (unsigned)id < STRB_CTR_COUNT ? counter_names[id] : NULL;
}

static struct {
	int n;
	struct {
		unsigned char uuid[16];
		uint64_t bytes;
	} dev[STRB_GPU_MAX_DEVICES];
	char source[32];
	char why[256];
} start_level = {.why = "no counter source measured it (select gpu_memory with NVML present)"};

void strb_gpu_memory_start_reset(const char *why)
{
	start_level.n = 0;
	snprintf(start_level.why, sizeof(start_level.why), "%s", why ? why : "unknown");
}

void strb_gpu_memory_start_note(const unsigned char uuid[16], uint64_t bytes, const char *source)
{
	for (int i = 0; i < start_level.n; i++) {
		if (!memcmp(start_level.dev[i].uuid, uuid, 16)) {
			start_level.dev[i].bytes = bytes;
			return;
		}
	}
	if (start_level.n >= STRB_GPU_MAX_DEVICES)
		return;
	memcpy(start_level.dev[start_level.n].uuid, uuid, 16);
	start_level.dev[start_level.n].bytes = bytes;
	start_level.n++;
	snprintf(start_level.source, sizeof(start_level.source), "%s", source ? source : "");
}

int strb_gpu_memory_start_find(const unsigned char uuid[16], uint64_t *bytes, const char **source,
                               const char **why)
{
	for (int i = 0; i < start_level.n; i++) {
		if (!memcmp(start_level.dev[i].uuid, uuid, 16)) {
			*bytes = start_level.dev[i].bytes;
			*source = start_level.source;
			return 0;
		}
	}
	*why = start_level.n ? "the counter source does not list this device" : start_level.why;
	return -ENOENT;
}

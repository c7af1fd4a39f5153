/* Device counters beside the backends: the interface a counter source
 * (NVML today; amd-smi / rocm-smi and Level Zero sysman later) implements,
 * and the device memory level at trace start that the memory timeline of a
 * backend starts from.
 *
 * A counter source is a table of four calls the sampler backend
 * (backends/counters/) drives: open once per trace, list its devices, sample
 * every device at the configured rate on the sampler's own thread, close.
 * The sampler owns the thread, the sample buffer, the tracks and the device
 * matching; a source only answers for its vendor's library. Adding a source
 * is one file that defines a const struct strb_counter_source and one line in
 * the sampler's list (backends/counters/sampler.c). */
#ifndef STROBE_PROCESS_COUNTERS_H
#define STROBE_PROCESS_COUNTERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The counters a source may report, one track each on the device's process
 * row; the name (units included) is the track's name. */
enum strb_counter_id {
	STRB_CTR_SM_UTIL,   /* "SM utilization (%)" */
	STRB_CTR_MEM_UTIL,  /* "Memory utilization (%)" */
	STRB_CTR_SM_CLOCK,  /* "SM clock (MHz)" */
	STRB_CTR_MEM_CLOCK, /* "Memory clock (MHz)" */
	STRB_CTR_POWER,     /* "Power (W)" */
	STRB_CTR_TEMP,      /* "Temperature (C)" */
	STRB_CTR_MEM_USED,  /* "Memory used (bytes)" */
	STRB_CTR_PCIE_TX,   /* "PCIe TX (KB/s)" */
	STRB_CTR_PCIE_RX,   /* "PCIe RX (KB/s)" */
	STRB_CTR_THROTTLE,  /* "Throttle reasons (bitmask)" */
	STRB_CTR_NVLINK_TX, /* "NVLink TX (KiB/s)" */
	STRB_CTR_NVLINK_RX, /* "NVLink RX (KiB/s)" */
	STRB_CTR_COUNT
};

/* The track name of a counter ("SM clock (MHz)"). */
const char *strb_counter_name(enum strb_counter_id id);

/* The most devices one source reports. */
#define STRB_COUNTERS_MAX_DEVICES 64

/* One device of a source. */
struct strb_counter_device {
	unsigned char uuid[16]; /* to match the GPU backend's device ids */
	bool uuid_known;
	char name[96];
};

/* One sample of one device: the values of the counters whose bit is set in
 * valid (a counter the device does not support, or whose call failed, is
 * left out of that sample). */
struct strb_counter_sample {
	uint32_t valid; /* bit (1u << strb_counter_id) */
	double value[STRB_CTR_COUNT];
};

struct strb_counter_source {
	const char *name; /* "NVML", in the trace's metadata */
	/* Loads the vendor library and finds the devices. 0, or a negative
	 * status with the reason in why ("libnvidia-ml.so.1: cannot open ..."). */
	int (*open)(char *why, size_t why_len);
	/* Fills up to max devices, returns how many. */
	int (*devices)(struct strb_counter_device *out, int max);
	/* Samples device i (of devices()) into *s at now_ns (strobe's clock,
	 * for sources that read a slow counter less often). 0, or a negative
	 * status when the device is gone (the sampler stops asking it). Called
	 * on the sampler's thread only, never concurrently with open or close. */
	int (*sample)(int i, int64_t now_ns, struct strb_counter_sample *s);
	/* Device memory in use now (bytes), for the memory timeline's start
	 * level; 0 or a negative status. Optional. */
	int (*memory_used)(int i, uint64_t *bytes);
	void (*close)(void);
	/* In a fork child: forget the parent's state without calling the
	 * vendor library. */
	void (*forget)(void);
};

/* ---- the memory level at trace start ------------------------------------ */

/* Forgets the levels of the last trace; why says why none is known until
 * one is noted ("NVML: libnvidia-ml.so.1: cannot open..."). */
void strb_gpu_memory_start_reset(const char *why);
/* Device uuid had bytes in use when the trace started (source: "NVML"). */
void strb_gpu_memory_start_note(const unsigned char uuid[16], uint64_t bytes, const char *source);
/* The level noted for uuid: 0 and *bytes, *source set; -ENOENT with *why
 * saying why not. */
int strb_gpu_memory_start_find(const unsigned char uuid[16], uint64_t *bytes, const char **source,
                               const char **why);

#endif

/* The device-counter sampler: a backend (strb_counters_backend) that drives
 * the counter sources of process/counters.h. */
#ifndef STROBE_BACKENDS_COUNTERS_SAMPLER_H
#define STROBE_BACKENDS_COUNTERS_SAMPLER_H

#include "process/counters.h"

/* The sources, tried in order; the first that opens is used. */
extern const struct strb_counter_source strb_nvml_source;

/* What the sampler costs and collected in the last trace, for tests and the
 * benchmark. */
struct strb_counters_stats {
	uint64_t ticks;   /* sampling rounds */
	uint64_t late;    /* rounds skipped because the previous one ran over */
	uint64_t samples; /* device samples kept */
	uint64_t dropped; /* device samples over the budget */
	int64_t cpu_ns;   /* the sampler thread's CPU time */
	int64_t wall_ns;  /* from its start to its end */
};
void strb_counters_stats(struct strb_counters_stats *out);

/* "GPU-01234567-89ab-cdef-0123-456789abcdef" (hex digits in either case) ->
 * 16 bytes; false for anything else. */
bool strb_counters_parse_uuid(const char *s, unsigned char out[16]);

/* The GPU backend's id for each of the ndev source devices: the "id" of the
 * deviceProperties object (device_properties: the trace's entries, comma
 * separated) whose "uuid" is the device's, with by_uuid[i] set; else the
 * device's own index. */
void strb_counters_match(const char *device_properties, const struct strb_counter_device *dev, int ndev,
                         int64_t *id, bool *by_uuid);

#endif

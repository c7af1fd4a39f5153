/* Who this process is in a distributed job: rank, local rank and world
 * size from strobe_set_rank or the launcher's environment, plus host and
 * GPUs, written as the trace's "distributedInfo" object. */
#ifndef STROBE_CORE_RANK_H
#define STROBE_CORE_RANK_H

/* The "distributedInfo" object as JSON text (malloc'ed; the caller frees
 * it), or NULL when out of memory. Reads the environment: call it once per
 * trace, at processing. device_properties is the text inside the trace's
 * "deviceProperties" array ("" when no GPU took part); the "uuid" of each
 * device object becomes "gpu_uuids". host may be NULL. */
char *strb_rank_json(const char *host, const char *device_properties);

#endif

/* A fake libnvidia-ml for tests: the control API.
 *
 * libfake_nvml.so (built as libnvidia-ml.so.1 in its own folder) exports
 * the NVML functions strobe's counter source resolves, with the prototypes
 * and result codes of src/backends/counters/nvml_abi.h (NVIDIA's nvml.h
 * values), so a test loads it as the real one is loaded
 * (STROBE_NVML_PATH=FAKE_NVML_PATH) and drives it from here: how many
 * devices, their UUIDs, what each counter answers call after call, which
 * counters a device does not support, a device that disappears, a call that
 * is slow.
 *
 * Model: nvmlInit_v2 must come first (else NVML_ERROR_UNINITIALIZED);
 * nvmlShutdown undoes one init. Each device query answers from its script:
 * the k-th call for a counter returns values[k] (the last value once the
 * script is used up); a counter marked not supported returns
 * NVML_ERROR_NOT_SUPPORTED; a device lost after n calls returns
 * NVML_ERROR_GPU_IS_LOST for every query from its (n+1)-th sampling call on
 * (calls of nvmlDeviceGetUtilizationRates count). A process the test does
 * not drive (a program under strobe record) gets $FAKE_NVML_DEVICES devices
 * at its first nvmlInit_v2. All functions are
 * thread-safe; a slow call sleeps without holding the fake's lock. One
 * instance per process: a test that links this library and has strobe
 * dlopen it by its absolute path gets the same object. */
#ifndef STROBE_FAKE_NVML_H
#define STROBE_FAKE_NVML_H

#include <stddef.h>
#include <stdint.h>

#define FAKE_NVML_EXPORT      __attribute__((visibility("default")))
#define FAKE_NVML_MAX_DEVICES 16
#define FAKE_NVML_SCRIPT_MAX  64

enum fake_nvml_field {
	FAKE_NVML_SM_UTIL,   /* nvmlDeviceGetUtilizationRates .gpu, % */
	FAKE_NVML_MEM_UTIL,  /* ... .memory, % */
	FAKE_NVML_SM_CLOCK,  /* nvmlDeviceGetClockInfo(NVML_CLOCK_SM), MHz */
	FAKE_NVML_MEM_CLOCK, /* nvmlDeviceGetClockInfo(NVML_CLOCK_MEM), MHz */
	FAKE_NVML_POWER,     /* nvmlDeviceGetPowerUsage, mW */
	FAKE_NVML_TEMP,      /* nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU), C */
	FAKE_NVML_MEM_USED,  /* nvmlDeviceGetMemoryInfo .used, bytes (.total is 80 GiB) */
	FAKE_NVML_PCIE_TX,   /* nvmlDeviceGetPcieThroughput(TX), KB/s */
	FAKE_NVML_PCIE_RX,   /* nvmlDeviceGetPcieThroughput(RX), KB/s */
	FAKE_NVML_THROTTLE,  /* nvmlDeviceGetCurrentClocksThrottleReasons, bitmask */
	FAKE_NVML_NVLINK_TX, /* nvmlDeviceGetFieldValues(NVLINK_THROUGHPUT_DATA_TX), cumulative KiB; the
	                      * k-th call (from 1) is stamped k * 10 ms */
	FAKE_NVML_NVLINK_RX, /* ... DATA_RX */
	FAKE_NVML_FIELDS
};

/* Back to a freshly loaded library: no devices, not initialised, nothing
 * scripted, slow or lost, call counts zero. */
FAKE_NVML_EXPORT void fake_nvml_reset(void);

/* n devices (at most FAKE_NVML_MAX_DEVICES), device i named "Fake GPU i"
 * with the UUID bytes i*16 .. i*16+15 ("GPU-00010203-..." for device 0),
 * every counter answering 0. */
FAKE_NVML_EXPORT void fake_nvml_set_devices(int n);
FAKE_NVML_EXPORT void fake_nvml_set_uuid(int dev, const unsigned char uuid[16]);

/* The values counter f of device dev answers, call after call (copied; at
 * most FAKE_NVML_SCRIPT_MAX). */
FAKE_NVML_EXPORT void fake_nvml_script(int dev, enum fake_nvml_field f, const double *values, size_t n);
FAKE_NVML_EXPORT void fake_nvml_not_supported(int dev, enum fake_nvml_field f);

/* Device dev answers `calls` more sampling rounds, then is lost. */
FAKE_NVML_EXPORT void fake_nvml_lose_after(int dev, int calls);

/* Every call of the NVML function named function sleeps delay_us first (0:
 * no longer slow). */
FAKE_NVML_EXPORT void fake_nvml_slow(const char *function, unsigned delay_us);

/* nvmlInit_v2 returns result (0: succeeds again). */
FAKE_NVML_EXPORT void fake_nvml_fail_init(int result);

/* Calls so far of the NVML function named function, for device dev (-1:
 * all devices and device-less calls). */
FAKE_NVML_EXPORT size_t fake_nvml_calls(const char *function, int dev);

/* Whether the library is initialised (nvmlInit_v2 more often than
 * nvmlShutdown). */
FAKE_NVML_EXPORT int fake_nvml_initialised(void);

#endif

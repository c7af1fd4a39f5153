/* The part of NVML's ABI strobe calls, declared here so strobe builds
 * without nvml.h (libnvidia-ml is opened at run time). Values and layouts
 * are those of NVIDIA's public nvml.h (as shipped with CUDA 12/13 and the
 * r535+ drivers; e.g. the copy in github.com/XuehaiPan/nvml-dev, nvml.h):
 *
 *   nvmlReturn_t       NVML_SUCCESS 0, NVML_ERROR_UNINITIALIZED 1,
 *                      NVML_ERROR_NOT_SUPPORTED 3, NVML_ERROR_NOT_FOUND 6,
 *                      NVML_ERROR_GPU_IS_LOST 15, NVML_ERROR_UNKNOWN 999
 *   nvmlClockType_t    NVML_CLOCK_GRAPHICS 0, NVML_CLOCK_SM 1, NVML_CLOCK_MEM 2
 *   nvmlTemperatureSensors_t   NVML_TEMPERATURE_GPU 0
 *   nvmlPcieUtilCounter_t      NVML_PCIE_UTIL_TX_BYTES 0, NVML_PCIE_UTIL_RX_BYTES 1
 *   nvmlUtilization_t  { unsigned int gpu, memory; }                 8 bytes
 *   nvmlMemory_t       { unsigned long long total, free, used; }     24 bytes
 *   NVML_DEVICE_UUID_V2_BUFFER_SIZE 96, NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
 *   NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138, ..._DATA_RX 139 (cumulative KiB,
 *   the whole device's links)
 *   nvmlValueType_t    DOUBLE 0, UNSIGNED_INT 1, UNSIGNED_LONG 2,
 *                      UNSIGNED_LONG_LONG 3, SIGNED_LONG_LONG 4
 *   nvmlFieldValue_t   { unsigned int fieldId 0, scopeId 4; long long
 *                      timestamp 8 (us), latencyUsec 16; nvmlValueType_t
 *                      valueType 24; nvmlReturn_t nvmlReturn 28; nvmlValue_t
 *                      value 32 (an 8-byte union) }                  40 bytes
 *
 * The functions keep their nvml.h names and prototypes (nvmlDevice_t is an
 * opaque pointer); each is typed here once and resolved with dlsym. */
#ifndef STROBE_BACKENDS_COUNTERS_NVML_ABI_H
#define STROBE_BACKENDS_COUNTERS_NVML_ABI_H

typedef int strb_nvmlReturn_t;
typedef struct strb_nvmlDevice_st *strb_nvmlDevice_t;

#define STRB_NVML_SUCCESS             0
#define STRB_NVML_ERROR_UNINITIALIZED 1
#define STRB_NVML_ERROR_NOT_SUPPORTED 3
#define STRB_NVML_ERROR_NOT_FOUND     6
#define STRB_NVML_ERROR_GPU_IS_LOST   15
#define STRB_NVML_ERROR_UNKNOWN       999
#define STRB_NVML_CLOCK_SM            1
#define STRB_NVML_CLOCK_MEM           2
#define STRB_NVML_TEMPERATURE_GPU     0
#define STRB_NVML_PCIE_UTIL_TX_BYTES  0
#define STRB_NVML_PCIE_UTIL_RX_BYTES  1
#define STRB_NVML_UUID_BUFFER_SIZE    96
#define STRB_NVML_NAME_BUFFER_SIZE    96
#define STRB_NVML_FI_NVLINK_TX        138
#define STRB_NVML_FI_NVLINK_RX        139
#define STRB_NVML_VALUE_DOUBLE        0
#define STRB_NVML_VALUE_UINT          1
#define STRB_NVML_VALUE_ULONG         2
#define STRB_NVML_VALUE_ULONGLONG     3
#define STRB_NVML_VALUE_SLONGLONG     4

struct strb_nvmlUtilization {
	unsigned int gpu, memory; /* % of the last sample period */
};

struct strb_nvmlMemory {
	unsigned long long total, free, used; /* bytes */
};

struct strb_nvmlFieldValue {
	unsigned int fieldId, scopeId;
	long long timestamp, latencyUsec; /* us */
	int valueType;
	strb_nvmlReturn_t nvmlReturn;
	union {
		double dVal;
		unsigned int uiVal;
		unsigned long ulVal;
		unsigned long long ullVal;
		long long sllVal;
	} value;
};
_Static_assert(sizeof(struct strb_nvmlFieldValue) == 40, "nvmlFieldValue_t is 40 bytes");
_Static_assert(__builtin_offsetof(struct strb_nvmlFieldValue, value) == 32, "nvmlFieldValue_t.value at 32");

/* X(name, return, params): every function strobe resolves up front. */
#define STRB_NVML_FUNCTIONS(X)                                                                               \
	X(nvmlInit_v2, strb_nvmlReturn_t, (void))                                                            \
	X(nvmlShutdown, strb_nvmlReturn_t, (void))                                                           \
	X(nvmlErrorString, const char *, (strb_nvmlReturn_t))                                                \
	X(nvmlDeviceGetCount_v2, strb_nvmlReturn_t, (unsigned int *))                                        \
	X(nvmlDeviceGetHandleByIndex_v2, strb_nvmlReturn_t, (unsigned int, strb_nvmlDevice_t *))             \
	X(nvmlDeviceGetUUID, strb_nvmlReturn_t, (strb_nvmlDevice_t, char *, unsigned int))                   \
	X(nvmlDeviceGetName, strb_nvmlReturn_t, (strb_nvmlDevice_t, char *, unsigned int))                   \
	X(nvmlDeviceGetUtilizationRates, strb_nvmlReturn_t,                                                  \
	  (strb_nvmlDevice_t, struct strb_nvmlUtilization *))                                                \
	X(nvmlDeviceGetClockInfo, strb_nvmlReturn_t, (strb_nvmlDevice_t, int, unsigned int *))               \
	X(nvmlDeviceGetPowerUsage, strb_nvmlReturn_t, (strb_nvmlDevice_t, unsigned int *))                   \
	X(nvmlDeviceGetTemperature, strb_nvmlReturn_t, (strb_nvmlDevice_t, int, unsigned int *))             \
	X(nvmlDeviceGetMemoryInfo, strb_nvmlReturn_t, (strb_nvmlDevice_t, struct strb_nvmlMemory *))         \
	X(nvmlDeviceGetPcieThroughput, strb_nvmlReturn_t, (strb_nvmlDevice_t, int, unsigned int *))          \
	X(nvmlDeviceGetCurrentClocksThrottleReasons, strb_nvmlReturn_t,                                      \
	  (strb_nvmlDevice_t, unsigned long long *))                                                         \
	X(nvmlDeviceGetFieldValues, strb_nvmlReturn_t, (strb_nvmlDevice_t, int, struct strb_nvmlFieldValue *))

#define STRB_NVML_ONE(name, ret, params) +1
#define STRB_NVML_COUNT                  (0 STRB_NVML_FUNCTIONS(STRB_NVML_ONE))

#define STRB_NVML_TYPEDEF(name, ret, params) typedef ret(*strb_##name##_fn) params;
STRB_NVML_FUNCTIONS(STRB_NVML_TYPEDEF)
#undef STRB_NVML_TYPEDEF

#endif

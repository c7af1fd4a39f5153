/* A fake libnvidia-ml (see fake_nvml.h): NVML's functions as strobe's
 * counter source declares them (src/backends/counters/nvml_abi.h), answering
 * from per-device scripts. */
#include "fake_nvml.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvml_abi.h"

#define EXPORT FAKE_NVML_EXPORT

/* The prototypes strobe calls through: the definitions below must match. */
#define FAKE_NVML_DECLARE(name, ret, params) EXPORT ret name params;
STRB_NVML_FUNCTIONS(FAKE_NVML_DECLARE)
#undef FAKE_NVML_DECLARE

/* The functions with a call count and a delay, in the order of names[]. */
enum fn {
	F_INIT,
	F_SHUTDOWN,
	F_COUNT,
	F_HANDLE,
	F_UUID,
	F_NAME,
	F_UTIL,
	F_CLOCK,
	F_POWER,
	F_TEMP,
	F_MEMORY,
	F_PCIE,
	F_THROTTLE,
	F_FIELDS,
	F_N
};
static const char *const names[F_N] = {
    "nvmlInit_v2",
    "nvmlShutdown",
    "nvmlDeviceGetCount_v2",
    "nvmlDeviceGetHandleByIndex_v2",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetName",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetFieldValues",
};

struct device {
	unsigned char uuid[16];
	double script[FAKE_NVML_FIELDS][FAKE_NVML_SCRIPT_MAX];
	size_t len[FAKE_NVML_FIELDS], next[FAKE_NVML_FIELDS];
	bool unsupported[FAKE_NVML_FIELDS];
	int lose_after; /* -1: never */
	size_t calls[F_N];
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int ndev;
	struct device dev[FAKE_NVML_MAX_DEVICES];
	int init_depth;
	int init_result;
	unsigned delay_us[F_N];
	size_t calls[F_N];
} st;

static void reset_locked(void)
{
	memset(&st, 0, sizeof(st));
}

EXPORT void fake_nvml_reset(void)
{
	pthread_mutex_lock(&mu);
	reset_locked();
	pthread_mutex_unlock(&mu);
}

EXPORT void fake_nvml_set_devices(int n)
{
	pthread_mutex_lock(&mu);
	st.ndev = n < 0 ? 0 : n > FAKE_NVML_MAX_DEVICES ? FAKE_NVML_MAX_DEVICES : n;
	for (int i = 0; i < st.ndev; i++) {
		memset(&st.dev[i], 0, sizeof(st.dev[i]));
		for (int k = 0; k < 16; k++)
			st.dev[i].uuid[k] = (unsigned char)(i * 16 + k);
		st.dev[i].lose_after = -1;
	}
	pthread_mutex_unlock(&mu);
}

EXPORT void fake_nvml_set_uuid(int dev, const unsigned char uuid[16])
{
	pthread_mutex_lock(&mu);
	if (dev >= 0 && dev < FAKE_NVML_MAX_DEVICES)
		memcpy(st.dev[dev].uuid, uuid, 16);
	pthread_mutex_unlock(&mu);
}

EXPORT void fake_nvml_script(int dev, enum fake_nvml_field f, const double *values, size_t n)
{
	pthread_mutex_lock(&mu);
	if (dev >= 0 && dev < FAKE_NVML_MAX_DEVICES && (unsigned)f < FAKE_NVML_FIELDS) {
		n = n > FAKE_NVML_SCRIPT_MAX ? FAKE_NVML_SCRIPT_MAX : n;
		memcpy(st.dev[dev].script[f], values, n * sizeof(*values));
		st.dev[dev].len[f] = n;
		st.dev[dev].next[f] = 0;
	}
	pthread_mutex_unlock(&mu);
}

EXPORT void fake_nvml_not_supported(int dev, enum fake_nvml_field f)
{
	pthread_mutex_lock(&mu);
	if (dev >= 0 && dev < FAKE_NVML_MAX_DEVICES && (unsigned)f < FAKE_NVML_FIELDS)
		st.dev[dev].unsupported[f] = true;
	pthread_mutex_unlock(&mu);
}

EXPORT void fake_nvml_lose_after(int dev, int calls)
{
	pthread_mutex_lock(&mu);
	if (dev >= 0 && dev < FAKE_NVML_MAX_DEVICES)
		st.dev[dev].lose_after = calls;
	pthread_mutex_unlock(&mu);
}

EXPORT void fake_nvml_slow(const char *function, unsigned delay_us)
{
	pthread_mutex_lock(&mu);
	for (int f = 0; f < F_N; f++)
		if (!strcmp(names[f], function))
			st.delay_us[f] = delay_us;
	pthread_mutex_unlock(&mu);
}

EXPORT void fake_nvml_fail_init(int result)
{
	pthread_mutex_lock(&mu);
	st.init_result = result;
	pthread_mutex_unlock(&mu);
}

EXPORT size_t fake_nvml_calls(const char *function, int dev)
{
	size_t n = 0;
	pthread_mutex_lock(&mu);
	for (int f = 0; f < F_N; f++)
		if (!strcmp(names[f], function))
			n = dev < 0 ? st.calls[f] : dev < FAKE_NVML_MAX_DEVICES ? st.dev[dev].calls[f] : 0;
	pthread_mutex_unlock(&mu);
	return n;
}

EXPORT int fake_nvml_initialised(void)
{
	pthread_mutex_lock(&mu);
	int r = st.init_depth > 0;
	pthread_mutex_unlock(&mu);
	return r;
}

/* Counts the call, sleeps its delay (without the lock) and takes the lock;
 * the caller unlocks. */
static void enter(enum fn f)
{
	pthread_mutex_lock(&mu);
	st.calls[f]++;
	unsigned us = st.delay_us[f];
	pthread_mutex_unlock(&mu);
	if (us) {
		struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&mu);
}

static strb_nvmlReturn_t leave(strb_nvmlReturn_t r)
{
	pthread_mutex_unlock(&mu);
	return r;
}

/* The device behind a handle, counted, or an error. */
static strb_nvmlReturn_t device(strb_nvmlDevice_t h, enum fn f, struct device **out)
{
	if (st.init_depth <= 0)
		return STRB_NVML_ERROR_UNINITIALIZED;
	struct device *d = (struct device *)(void *)h;
	if (d < st.dev || d >= st.dev + st.ndev)
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	d->calls[f]++;
	if (d->lose_after >= 0 && d->calls[F_UTIL] > (size_t)d->lose_after)
		return STRB_NVML_ERROR_GPU_IS_LOST;
	*out = d;
	return STRB_NVML_SUCCESS;
}

static strb_nvmlReturn_t value(struct device *d, enum fake_nvml_field f, double *v)
{
	if (d->unsupported[f])
		return STRB_NVML_ERROR_NOT_SUPPORTED;
	size_t n = d->len[f], k = d->next[f];
	*v = n ? d->script[f][k < n ? k : n - 1] : 0;
	if (k < n)
		d->next[f]++;
	return STRB_NVML_SUCCESS;
}

EXPORT strb_nvmlReturn_t nvmlInit_v2(void)
{
	/* A program the test does not drive (strobe record's) gets its devices
	 * from the environment. */
	const char *env = getenv("FAKE_NVML_DEVICES");
	if (env && !st.ndev && !st.calls[F_INIT])
		fake_nvml_set_devices(atoi(env));
	enter(F_INIT);
	if (st.init_result)
		return leave(st.init_result);
	st.init_depth++;
	return leave(STRB_NVML_SUCCESS);
}

EXPORT strb_nvmlReturn_t nvmlShutdown(void)
{
	enter(F_SHUTDOWN);
	if (st.init_depth <= 0)
		return leave(STRB_NVML_ERROR_UNINITIALIZED);
	st.init_depth--;
	return leave(STRB_NVML_SUCCESS);
}

EXPORT const char *nvmlErrorString(strb_nvmlReturn_t r)
{
	switch (r) {
	case STRB_NVML_SUCCESS:
		return "Success";
	case STRB_NVML_ERROR_UNINITIALIZED:
		return "Uninitialized";
	case STRB_NVML_ERROR_NOT_SUPPORTED:
		return "Not Supported";
	case STRB_NVML_ERROR_GPU_IS_LOST:
		return "GPU is lost";
	case 9:
		return "Driver Not Loaded";
	default:
		return "Unknown Error";
	}
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	enter(F_COUNT);
	if (st.init_depth <= 0)
		return leave(STRB_NVML_ERROR_UNINITIALIZED);
	*n = (unsigned)st.ndev;
	return leave(STRB_NVML_SUCCESS);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, strb_nvmlDevice_t *h)
{
	enter(F_HANDLE);
	if (st.init_depth <= 0)
		return leave(STRB_NVML_ERROR_UNINITIALIZED);
	if (i >= (unsigned)st.ndev)
		return leave(2);
	*h = (strb_nvmlDevice_t)(void *)&st.dev[i];
	return leave(STRB_NVML_SUCCESS);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetUUID(strb_nvmlDevice_t h, char *buf, unsigned int len)
{
	struct device *d = NULL;
	enter(F_UUID);
	strb_nvmlReturn_t r = device(h, F_UUID, &d);
	if (r)
		return leave(r);
	const unsigned char *u = d->uuid;
	if (len < 41)
		return leave(7); /* NVML_ERROR_INSUFFICIENT_SIZE */
	snprintf(buf, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
	         u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
	         u[15]);
	return leave(STRB_NVML_SUCCESS);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetName(strb_nvmlDevice_t h, char *buf, unsigned int len)
{
	struct device *d = NULL;
	enter(F_NAME);
	strb_nvmlReturn_t r = device(h, F_NAME, &d);
	if (!r)
		snprintf(buf, len, "Fake GPU %d", (int)(d - st.dev));
	return leave(r);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetUtilizationRates(strb_nvmlDevice_t h, struct strb_nvmlUtilization *u)
{
	struct device *d = NULL;
	double g, m;
	enter(F_UTIL);
	strb_nvmlReturn_t r = device(h, F_UTIL, &d);
	if (!r)
		r = value(d, FAKE_NVML_SM_UTIL, &g);
	if (!r)
		r = value(d, FAKE_NVML_MEM_UTIL, &m);
	if (!r)
		*u = (struct strb_nvmlUtilization){(unsigned)g, (unsigned)m};
	return leave(r);
}

/* One counter of the device behind h: counted, slowed, scripted. Takes and
 * leaves the lock. */
static strb_nvmlReturn_t query(strb_nvmlDevice_t h, enum fn fn, enum fake_nvml_field f, double *v)
{
	struct device *d = NULL;
	enter(fn);
	strb_nvmlReturn_t r = device(h, fn, &d);
	if (!r)
		r = value(d, f, v);
	return leave(r);
}

static strb_nvmlReturn_t uint_query(strb_nvmlDevice_t h, enum fn fn, enum fake_nvml_field f,
                                    unsigned int *out)
{
	double v;
	strb_nvmlReturn_t r = query(h, fn, f, &v);
	if (!r)
		*out = (unsigned)v;
	return r;
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetClockInfo(strb_nvmlDevice_t h, int type, unsigned int *mhz)
{
	if (type != STRB_NVML_CLOCK_SM && type != STRB_NVML_CLOCK_MEM)
		return 2;
	return uint_query(h, F_CLOCK, type == STRB_NVML_CLOCK_SM ? FAKE_NVML_SM_CLOCK : FAKE_NVML_MEM_CLOCK,
	                  mhz);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetPowerUsage(strb_nvmlDevice_t h, unsigned int *mw)
{
	return uint_query(h, F_POWER, FAKE_NVML_POWER, mw);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetTemperature(strb_nvmlDevice_t h, int sensor, unsigned int *c)
{
	if (sensor != STRB_NVML_TEMPERATURE_GPU)
		return 2;
	return uint_query(h, F_TEMP, FAKE_NVML_TEMP, c);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetPcieThroughput(strb_nvmlDevice_t h, int counter, unsigned int *kbs)
{
	if (counter != STRB_NVML_PCIE_UTIL_TX_BYTES && counter != STRB_NVML_PCIE_UTIL_RX_BYTES)
		return 2;
	return uint_query(
	    h, F_PCIE, counter == STRB_NVML_PCIE_UTIL_TX_BYTES ? FAKE_NVML_PCIE_TX : FAKE_NVML_PCIE_RX, kbs);
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetMemoryInfo(strb_nvmlDevice_t h, struct strb_nvmlMemory *m)
{
	double used;
	strb_nvmlReturn_t r = query(h, F_MEMORY, FAKE_NVML_MEM_USED, &used);
	if (!r) {
		m->total = 80ull << 30;
		m->used = (unsigned long long)used;
		m->free = m->total > m->used ? m->total - m->used : 0;
	}
	return r;
}

EXPORT strb_nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(strb_nvmlDevice_t h,
                                                                   unsigned long long *bits)
{
	double v;
	strb_nvmlReturn_t r = query(h, F_THROTTLE, FAKE_NVML_THROTTLE, &v);
	if (!r)
		*bits = (unsigned long long)v;
	return r;
}

/* NVLink's throughput fields; any other field is not supported. */
EXPORT strb_nvmlReturn_t nvmlDeviceGetFieldValues(strb_nvmlDevice_t h, int n, struct strb_nvmlFieldValue *v)
{
	struct device *d = NULL;
	enter(F_FIELDS);
	strb_nvmlReturn_t r = device(h, F_FIELDS, &d);
	for (int i = 0; !r && i < n; i++) {
		double x = 0;
		enum fake_nvml_field f = v[i].fieldId == STRB_NVML_FI_NVLINK_TX   ? FAKE_NVML_NVLINK_TX
		                         : v[i].fieldId == STRB_NVML_FI_NVLINK_RX ? FAKE_NVML_NVLINK_RX
		                                                                  : FAKE_NVML_FIELDS;
		v[i].nvmlReturn = f == FAKE_NVML_FIELDS ? STRB_NVML_ERROR_NOT_SUPPORTED : value(d, f, &x);
		v[i].timestamp = (long long)d->calls[F_FIELDS] * 10000;
		v[i].valueType = STRB_NVML_VALUE_ULONGLONG;
		v[i].value.ullVal = (unsigned long long)x;
	}
	return leave(r);
}

/* The NVML counter source: libnvidia-ml opened with dlopen (exactly
 * $STROBE_NVML_PATH when set, else libnvidia-ml.so.1), every function
 * resolved before the first call. Never unloaded (NVML keeps threads). */
#define LOG_TAG "nvml"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/counters/nvml_abi.h"
#include "backends/counters/sampler.h"
#include "common/log.h"

/* NVML measures PCIe throughput over 20 ms per direction: each device is
 * asked at most this often (ns). */
#define PCIE_EVERY_NS 1000000000ll
#define MAX_DEVICES   STRB_COUNTERS_MAX_DEVICES

static struct {
#define STRB_NVML_FIELD(name, ret, params) strb_##name##_fn name;
	STRB_NVML_FUNCTIONS(STRB_NVML_FIELD)
#undef STRB_NVML_FIELD
	void *handle;
	char path[512]; /* what handle is */
	bool initialised;
	int ndev;
	struct {
		strb_nvmlDevice_t h;
		uint32_t unsupported;        /* counters that answered NOT_SUPPORTED: not asked again */
		int64_t pcie_at;             /* last PCIe reading, strobe clock ns */
		int64_t nvlink_at;           /* last NVLink reading, ns (0: none yet) */
		double nvlink_tx, nvlink_rx; /* its cumulative KiB */
	} dev[MAX_DEVICES];
} nv;

static const char *nv_error(strb_nvmlReturn_t r)
{
	const char *s = nv.nvmlErrorString ? nv.nvmlErrorString(r) : NULL;
	return s ? s : "unknown NVML error";
}

/* Loads path (once per distinct path: a library stays loaded) and resolves
 * every function before any is called. */
static int load(char *why, size_t len)
{
	const char *env = getenv("STROBE_NVML_PATH");
	const char *path = env && *env ? env : "libnvidia-ml.so.1";
	if (nv.handle && !strcmp(nv.path, path))
		return 0;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(why, len, "NVML: cannot load %s: %s", path, e ? e : "unknown error");
		return -ENOENT;
	}
	void *fn[STRB_NVML_COUNT];
	static const char *const names[STRB_NVML_COUNT] = {
#define STRB_NVML_NAME(name, ret, params) #name,
	    STRB_NVML_FUNCTIONS(STRB_NVML_NAME)
#undef STRB_NVML_NAME
	};
	for (int i = 0; i < STRB_NVML_COUNT; i++) {
		fn[i] = dlsym(h, names[i]);
		if (!fn[i]) {
			snprintf(why, len, "NVML: %s lacks %s (driver too old?)", path, names[i]);
			dlclose(h);
			return -ENOSYS;
		}
	}
	int i = 0;
#define STRB_NVML_SET(name, ret, params) *(void **)&nv.name = fn[i++];
	STRB_NVML_FUNCTIONS(STRB_NVML_SET)
#undef STRB_NVML_SET
	nv.handle = h;
	snprintf(nv.path, sizeof(nv.path), "%s", path);
	return 0;
}

static int nvml_open(char *why, size_t len)
{
	int rc = load(why, len);
	if (rc)
		return rc;
	strb_nvmlReturn_t r = nv.nvmlInit_v2();
	if (r != STRB_NVML_SUCCESS) {
		snprintf(why, len, "NVML: nvmlInit_v2 failed: %s", nv_error(r));
		return -EIO;
	}
	nv.initialised = true;
	unsigned int n = 0;
	r = nv.nvmlDeviceGetCount_v2(&n);
	if (r != STRB_NVML_SUCCESS || n == 0) {
		snprintf(why, len, "NVML: %s", r != STRB_NVML_SUCCESS ? nv_error(r) : "no devices");
		nv.nvmlShutdown();
		nv.initialised = false;
		return -ENODEV;
	}
	nv.ndev = 0;
	for (unsigned int i = 0; i < n && nv.ndev < MAX_DEVICES; i++) {
		memset(&nv.dev[nv.ndev], 0, sizeof(nv.dev[0]));
		if (nv.nvmlDeviceGetHandleByIndex_v2(i, &nv.dev[nv.ndev].h) == STRB_NVML_SUCCESS)
			nv.ndev++;
		else
			LOGW("NVML: device %u has no handle; left out", i);
	}
	return 0;
}

static int nvml_devices(struct strb_counter_device *out, int max)
{
	int n = 0;
	for (int i = 0; i < nv.ndev && n < max; i++, n++) {
		char uuid[STRB_NVML_UUID_BUFFER_SIZE] = "";
		memset(&out[n], 0, sizeof(out[n]));
		if (nv.nvmlDeviceGetUUID(nv.dev[i].h, uuid, sizeof(uuid)) == STRB_NVML_SUCCESS)
			out[n].uuid_known = strb_counters_parse_uuid(uuid, out[n].uuid);
		char name[STRB_NVML_NAME_BUFFER_SIZE] = "";
		if (nv.nvmlDeviceGetName(nv.dev[i].h, name, sizeof(name)) == STRB_NVML_SUCCESS)
			snprintf(out[n].name, sizeof(out[n].name), "%s", name);
	}
	return n;
}

/* A call's result for counter id: true when it gave a value; a device
 * that is gone fails the whole sample. */
static bool answer(int i, enum strb_counter_id id, strb_nvmlReturn_t r, int *lost)
{
	if (r == STRB_NVML_SUCCESS)
		return true;
	if (r == STRB_NVML_ERROR_NOT_SUPPORTED)
		nv.dev[i].unsupported |= 1u << id;
	else if (r == STRB_NVML_ERROR_GPU_IS_LOST || r == STRB_NVML_ERROR_NOT_FOUND ||
	         r == STRB_NVML_ERROR_UNINITIALIZED)
		*lost = r;
	return false;
}

#define ASKED(i, id) (!(nv.dev[i].unsupported & (1u << (id))) && !lost)
#define SET(s, id, v)                                                                                        \
	do {                                                                                                 \
		(s)->valid |= 1u << (id);                                                                    \
		(s)->value[id] = (v);                                                                        \
	} while (0)

static double field_number(const struct strb_nvmlFieldValue *f)
{
	switch (f->valueType) {
	case STRB_NVML_VALUE_DOUBLE:
		return f->value.dVal;
	case STRB_NVML_VALUE_UINT:
		return f->value.uiVal;
	case STRB_NVML_VALUE_ULONG:
		return (double)f->value.ulVal;
	case STRB_NVML_VALUE_SLONGLONG:
		return (double)f->value.sllVal;
	default:
		return (double)f->value.ullVal;
	}
}

/* NVLink: cumulative KiB counters of all the device's links, as rates
 * between two readings (by NVML's timestamps when it gives them). */
static void nvlink(int i, int64_t now_ns, struct strb_counter_sample *s, int *lost)
{
	struct strb_nvmlFieldValue f[2] = {{.fieldId = STRB_NVML_FI_NVLINK_TX},
	                                   {.fieldId = STRB_NVML_FI_NVLINK_RX}};
	strb_nvmlReturn_t r = nv.nvmlDeviceGetFieldValues(nv.dev[i].h, 2, f);
	if (!answer(i, STRB_CTR_NVLINK_TX, r ? r : f[0].nvmlReturn, lost) ||
	    !answer(i, STRB_CTR_NVLINK_RX, f[1].nvmlReturn, lost)) {
		if (nv.dev[i].unsupported & (3u << STRB_CTR_NVLINK_TX))
			nv.dev[i].unsupported |= 3u << STRB_CTR_NVLINK_TX;
		return;
	}
	double tx = field_number(&f[0]), rx = field_number(&f[1]);
	int64_t at = f[0].timestamp > 0 ? (int64_t)f[0].timestamp * 1000 : now_ns;
	int64_t prev = nv.dev[i].nvlink_at;
	if (prev && at > prev && tx >= nv.dev[i].nvlink_tx && rx >= nv.dev[i].nvlink_rx) {
		double secs = (double)(at - prev) / 1e9;
		SET(s, STRB_CTR_NVLINK_TX, (tx - nv.dev[i].nvlink_tx) / secs);
		SET(s, STRB_CTR_NVLINK_RX, (rx - nv.dev[i].nvlink_rx) / secs);
	}
	nv.dev[i].nvlink_at = at;
	nv.dev[i].nvlink_tx = tx;
	nv.dev[i].nvlink_rx = rx;
}

static int nvml_sample(int i, int64_t now_ns, struct strb_counter_sample *s)
{
	strb_nvmlDevice_t h = nv.dev[i].h;
	int lost = 0;
	unsigned int u = 0;
	s->valid = 0;
	if (ASKED(i, STRB_CTR_SM_UTIL) || ASKED(i, STRB_CTR_MEM_UTIL)) {
		struct strb_nvmlUtilization util;
		if (answer(i, STRB_CTR_SM_UTIL, nv.nvmlDeviceGetUtilizationRates(h, &util), &lost)) {
			SET(s, STRB_CTR_SM_UTIL, util.gpu);
			SET(s, STRB_CTR_MEM_UTIL, util.memory);
		} else if (nv.dev[i].unsupported & (1u << STRB_CTR_SM_UTIL)) {
			nv.dev[i].unsupported |= 1u << STRB_CTR_MEM_UTIL;
		}
	}
	if (ASKED(i, STRB_CTR_SM_CLOCK) &&
	    answer(i, STRB_CTR_SM_CLOCK, nv.nvmlDeviceGetClockInfo(h, STRB_NVML_CLOCK_SM, &u), &lost))
		SET(s, STRB_CTR_SM_CLOCK, u);
	if (ASKED(i, STRB_CTR_MEM_CLOCK) &&
	    answer(i, STRB_CTR_MEM_CLOCK, nv.nvmlDeviceGetClockInfo(h, STRB_NVML_CLOCK_MEM, &u), &lost))
		SET(s, STRB_CTR_MEM_CLOCK, u);
	if (ASKED(i, STRB_CTR_POWER) && answer(i, STRB_CTR_POWER, nv.nvmlDeviceGetPowerUsage(h, &u), &lost))
		SET(s, STRB_CTR_POWER, u / 1000.0); /* mW */
	if (ASKED(i, STRB_CTR_TEMP) &&
	    answer(i, STRB_CTR_TEMP, nv.nvmlDeviceGetTemperature(h, STRB_NVML_TEMPERATURE_GPU, &u), &lost))
		SET(s, STRB_CTR_TEMP, u);
	struct strb_nvmlMemory mem;
	if (ASKED(i, STRB_CTR_MEM_USED) &&
	    answer(i, STRB_CTR_MEM_USED, nv.nvmlDeviceGetMemoryInfo(h, &mem), &lost))
		SET(s, STRB_CTR_MEM_USED, (double)mem.used);
	unsigned long long reasons = 0;
	if (ASKED(i, STRB_CTR_THROTTLE) &&
	    answer(i, STRB_CTR_THROTTLE, nv.nvmlDeviceGetCurrentClocksThrottleReasons(h, &reasons), &lost))
		SET(s, STRB_CTR_THROTTLE, (double)reasons);
	/* PCIe: a 20 ms measurement per direction, so at most once a second. */
	if (ASKED(i, STRB_CTR_PCIE_TX) &&
	    (!nv.dev[i].pcie_at || now_ns - nv.dev[i].pcie_at >= PCIE_EVERY_NS)) {
		nv.dev[i].pcie_at = now_ns;
		unsigned int tx = 0, rx = 0;
		if (answer(i, STRB_CTR_PCIE_TX,
		           nv.nvmlDeviceGetPcieThroughput(h, STRB_NVML_PCIE_UTIL_TX_BYTES, &tx), &lost) &&
		    answer(i, STRB_CTR_PCIE_RX,
		           nv.nvmlDeviceGetPcieThroughput(h, STRB_NVML_PCIE_UTIL_RX_BYTES, &rx), &lost)) {
			SET(s, STRB_CTR_PCIE_TX, tx);
			SET(s, STRB_CTR_PCIE_RX, rx);
		}
	}
	if (ASKED(i, STRB_CTR_NVLINK_TX))
		nvlink(i, now_ns, s, &lost);
	if (lost)
		return -ENODEV;
	return 0;
}

static int nvml_memory_used(int i, uint64_t *bytes)
{
	struct strb_nvmlMemory mem;
	if (i < 0 || i >= nv.ndev || nv.nvmlDeviceGetMemoryInfo(nv.dev[i].h, &mem) != STRB_NVML_SUCCESS)
		return -EIO;
	*bytes = mem.used;
	return 0;
}

static void nvml_close(void)
{
	if (nv.initialised)
		nv.nvmlShutdown();
	nv.initialised = false;
	nv.ndev = 0;
}

static void nvml_forget(void)
{
	/* In a fork child: the parent's NVML state is not ours to shut down. */
	nv.initialised = false;
	nv.ndev = 0;
}

const struct strb_counter_source strb_nvml_source = {
    .name = "NVML",
    .open = nvml_open,
    .devices = nvml_devices,
    .sample = nvml_sample,
    .memory_used = nvml_memory_used,
    .close = nvml_close,
    .forget = nvml_forget,
};

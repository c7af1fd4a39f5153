/* Device counters through the fake NVML: the sampler's tracks on each
 * device's process row, scripted values in order, a counter a device does
 * not support, a device that disappears, a slow call that neither blocks
 * capture nor the stop, the rate key, and a missing library.
 * STROBE_TEST_LABELS: concurrency */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_nvml.h"
#include "strobe/strobe.h"
#include "testutil.h"

#define COUNTERS STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_COUNTERS)

static char path_buf[1200];

static int setup(void **state)
{
	(void)state;
	setenv("STROBE_NVML_PATH", FAKE_NVML_PATH, 1);
	fake_nvml_reset();
	fake_nvml_set_devices(2);
	return 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A trace of at least ms, and until device 0 was sampled `rounds` times
 * (a loaded machine runs the sampler late). */
static yajl_val run_rounds(const char *name, const char *config, int ms, size_t rounds)
{
	char cfg[256];
	TU_FORMAT(cfg, "ACTIVITY_TYPES=cpu_op,gpu_counters\n%s", config ? config : "");
	assert_int_equal(strobe_prepare(0, cfg), 0);
	assert_int_equal(strobe_start(), 0);
	sleep_ms(ms);
	for (int i = 0; i < 10000 && fake_nvml_calls("nvmlDeviceGetUtilizationRates", 0) < rounds; i++)
		sleep_ms(1);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	TU_FORMAT(path_buf, "%s/%s.json", tu_dir, name);
	assert_int_equal(strobe_trace_save(t, path_buf), 0);
	strobe_trace_destroy(t);
	return tu_load_trace(path_buf);
}

static yajl_val run(const char *name, const char *config, int ms)
{
	return run_rounds(name, config, ms, 0);
}

/* The values of counter `name` on pid, in file order. */
static size_t values(yajl_val root, const char *name, double pid, double *out, size_t max)
{
	yajl_val evs = tu_events(root);
	size_t n = 0;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val e = YAJL_GET_ARRAY(evs)->values[i];
		const char *ph = tu_get_str(e, "ph"), *what = tu_get_str(e, "name");
		if (!ph || strcmp(ph, "C") || !what || strcmp(what, name) || tu_get_num(e, "pid") != pid)
			continue;
		/* (Perfetto keeps no category for a counter track's values.) */
		const char *cat = tu_get_str(e, "cat");
		if (cat)
			assert_string_equal(cat, "hardware_counters");
		if (n < max)
			out[n] = tu_get_num(tu_get(e, "args"), name);
		n++;
	}
	return n;
}

static void test_tracks_follow_the_script(void **state)
{
	(void)state;
	const double clocks[] = {1410, 1500, 1600, 1700, 1755};
	const double power_mw[] = {70000, 250500};
	fake_nvml_script(0, FAKE_NVML_SM_CLOCK, clocks, 5);
	fake_nvml_script(1, FAKE_NVML_POWER, power_mw, 2);
	const double used[] = {1 << 30};
	fake_nvml_script(1, FAKE_NVML_MEM_USED, used, 1);
	const double temp[] = {55}, util[] = {87}, throttle[] = {4}, tx[] = {1200};
	fake_nvml_script(0, FAKE_NVML_TEMP, temp, 1);
	fake_nvml_script(0, FAKE_NVML_SM_UTIL, util, 1);
	fake_nvml_script(0, FAKE_NVML_THROTTLE, throttle, 1);
	fake_nvml_script(0, FAKE_NVML_PCIE_TX, tx, 1);
	yajl_val root = run_rounds("script", "GPU_COUNTERS_SAMPLE_RATE_HZ=100", 60, 7);

	double v[256];
	size_t n = values(root, "SM clock (MHz)", 0, v, 256);
	assert_true(n >= 6); /* 7 rounds at least */
	for (size_t i = 0; i < 5; i++)
		assert_true(v[i] == clocks[i]);
	assert_true(v[n - 1] == 1755);
	n = values(root, "Power (W)", 1, v, 256);
	assert_true(n >= 2);
	assert_true(v[0] == 70.0 && v[1] == 250.5);
	assert_true(values(root, "Memory used (bytes)", 1, v, 1) >= 1 && v[0] == 1 << 30);
	assert_true(values(root, "Temperature (C)", 0, v, 1) >= 1 && v[0] == 55);
	assert_true(values(root, "SM utilization (%)", 0, v, 1) >= 1 && v[0] == 87);
	assert_true(values(root, "Memory utilization (%)", 0, v, 1) >= 1 && v[0] == 0);
	assert_true(values(root, "Memory clock (MHz)", 1, v, 1) >= 1);
	assert_true(values(root, "Throttle reasons (bitmask)", 0, v, 1) >= 1 && v[0] == 4);
	/* PCIe: NVML measures it over 20 ms, so once a second: one sample. */
	assert_int_equal(values(root, "PCIe TX (KB/s)", 0, v, 1), 1);
	assert_true(v[0] == 1200);
	assert_int_equal(values(root, "PCIe RX (KB/s)", 0, v, 1), 1);
	assert_int_equal(fake_nvml_calls("nvmlDeviceGetPcieThroughput", 0), 2);

	/* Each device's process is named, the metadata says where it came from. */
	assert_int_equal(tu_count(root, "M", NULL, "process_name"), 3);
	yajl_val meta = tu_get(root, "gpu_counters");
	assert_non_null(meta);
	assert_string_equal(tu_get_str(meta, "source"), "NVML");
	assert_int_equal(tu_get_num(meta, "rate_hz"), 100);
	yajl_val devs = tu_get(meta, "devices");
	assert_int_equal(YAJL_GET_ARRAY(devs)->len, 2);
	assert_string_equal(tu_get_str(YAJL_GET_ARRAY(devs)->values[1], "name"), "Fake GPU 1");
	/* No GPU backend named the devices: matched by NVML's order. */
	assert_string_equal(tu_get_str(YAJL_GET_ARRAY(devs)->values[1], "matched_by"), "index");
	assert_true(tu_get_num(meta, "samples") >= 12);
	assert_null(tu_get(root, "gpu_counters_capture"));
	/* Released with the trace. */
	assert_false(fake_nvml_initialised());
	yajl_tree_free(root);
}

/* NVLink: rates from NVML's cumulative KiB counters, between readings;
 * none on a device without NVLink. */
static void test_nvlink_rates(void **state)
{
	(void)state;
	const double tx[] = {5000, 6000, 8000, 8000}, rx[] = {100, 150, 250, 400};
	fake_nvml_script(0, FAKE_NVML_NVLINK_TX, tx, 4);
	fake_nvml_script(0, FAKE_NVML_NVLINK_RX, rx, 4);
	fake_nvml_not_supported(1, FAKE_NVML_NVLINK_TX);
	yajl_val root = run_rounds("nvlink", "GPU_COUNTERS_SAMPLE_RATE_HZ=200", 20, 5);
	double v[64];
	/* The fake stamps its k-th reading k * 10 ms: 1000 KiB in 10 ms, ... */
	size_t n = values(root, "NVLink TX (KiB/s)", 0, v, 64);
	assert_true(n >= 3);
	assert_true(v[0] == 100000 && v[1] == 200000 && v[2] == 0);
	assert_true(values(root, "NVLink RX (KiB/s)", 0, v, 64) >= 3);
	assert_true(v[0] == 5000 && v[1] == 10000 && v[2] == 15000);
	assert_int_equal(values(root, "NVLink TX (KiB/s)", 1, v, 1), 0);
	assert_int_equal(values(root, "NVLink RX (KiB/s)", 1, v, 1), 0);
	assert_int_equal(fake_nvml_calls("nvmlDeviceGetFieldValues", 1), 1);
	yajl_tree_free(root);
}

static void test_not_supported_is_not_asked_again(void **state)
{
	(void)state;
	fake_nvml_not_supported(0, FAKE_NVML_POWER);
	fake_nvml_not_supported(1, FAKE_NVML_TEMP);
	yajl_val root = run_rounds("unsupported", "GPU_COUNTERS_SAMPLE_RATE_HZ=200", 20, 6);
	double v[1];
	assert_int_equal(values(root, "Power (W)", 0, v, 1), 0);
	assert_true(values(root, "Power (W)", 1, v, 1) >= 5);
	assert_true(values(root, "Temperature (C)", 0, v, 1) >= 5);
	assert_int_equal(values(root, "Temperature (C)", 1, v, 1), 0);
	/* Asked once, then left alone; the device's other counters go on. */
	assert_int_equal(fake_nvml_calls("nvmlDeviceGetPowerUsage", 0), 1);
	assert_int_equal(fake_nvml_calls("nvmlDeviceGetTemperature", 1), 1);
	assert_true(values(root, "SM clock (MHz)", 0, v, 1) >= 5);
	yajl_tree_free(root);
}

static void test_device_that_disappears(void **state)
{
	(void)state;
	fake_nvml_lose_after(1, 3);
	yajl_val root = run_rounds("lost", "GPU_COUNTERS_SAMPLE_RATE_HZ=200", 20, 9);
	double v[1];
	assert_int_equal(values(root, "SM clock (MHz)", 1, v, 1), 3);
	assert_true(values(root, "SM clock (MHz)", 0, v, 1) >= 8);
	/* Not asked again once lost. */
	assert_int_equal(fake_nvml_calls("nvmlDeviceGetUtilizationRates", 1), 4);
	yajl_val devs = tu_get(tu_get(root, "gpu_counters"), "devices");
	assert_true(YAJL_IS_FALSE(tu_get(YAJL_GET_ARRAY(devs)->values[0], "lost")));
	assert_true(YAJL_IS_TRUE(tu_get(YAJL_GET_ARRAY(devs)->values[1], "lost")));
	yajl_tree_free(root);
}

static void test_slow_call_blocks_nothing(void **state)
{
	(void)state;
	/* 200 ms per temperature reading, at 100 Hz: every round runs over. */
	fake_nvml_slow("nvmlDeviceGetTemperature", 200000);
	assert_int_equal(
	    strobe_prepare(0, "ACTIVITY_TYPES=cpu_op,gpu_counters\nGPU_COUNTERS_SAMPLE_RATE_HZ=100"), 0);
	assert_int_equal(strobe_start(), 0);
	/* Ops while slow calls run: none waits for one. */
	int64_t worst = 0;
	int ops = 0;
	while (ops < 2000 || fake_nvml_calls("nvmlDeviceGetTemperature", -1) < 3) {
		int64_t t0 = now_ns();
		assert_true(strobe_op_push("op") > 0);
		strobe_op_pop();
		int64_t d = now_ns() - t0;
		worst = d > worst ? d : worst;
		if (++ops % 100 == 0)
			sleep_ms(5);
	}
	int64_t t0 = now_ns();
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	int64_t stop_ns = now_ns() - t0;
	TU_FORMAT(path_buf, "%s/slow.json", tu_dir);
	assert_int_equal(strobe_trace_save(t, path_buf), 0);
	strobe_trace_destroy(t);
	yajl_val root = tu_load_trace(path_buf);
	/* Capture never waited for a 200 ms call (a push that did would take
	 * up to that long; the margin is for a loaded machine's scheduling);
	 * the stop waited for the calls in flight at most (one per device). */
	assert_true(worst < 100 * 1000000ll);
	assert_true(stop_ns < 2 * 200 * 1000000ll + 300 * 1000000ll);
	assert_int_equal(tu_count(root, "X", "cpu_op", "op"), ops);
	yajl_val meta = tu_get(root, "gpu_counters");
	assert_true(tu_get_num(meta, "late_rounds") > 0);
	assert_true(tu_get_num(meta, "samples") >= 2);
	yajl_tree_free(root);
}

/* Perfetto: the same tracks, one counter track per device and counter. */
static void test_perfetto_tracks(void **state)
{
	(void)state;
	const double clocks[] = {1410, 1980};
	fake_nvml_script(1, FAKE_NVML_SM_CLOCK, clocks, 2);
	assert_int_equal(
	    strobe_prepare(0, "ACTIVITY_TYPES=cpu_op,gpu_counters\nGPU_COUNTERS_SAMPLE_RATE_HZ=200"), 0);
	assert_int_equal(strobe_start(), 0);
	for (int i = 0; i < 10000 && fake_nvml_calls("nvmlDeviceGetUtilizationRates", 0) < 4; i++)
		sleep_ms(1);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	TU_FORMAT(path_buf, "%s/counters.pftrace", tu_dir);
	assert_int_equal(strobe_trace_save(t, path_buf), 0);
	strobe_trace_destroy(t);
	/* Read back (strobe convert): each device's counter on its own pid. */
	char args[2600], json[1300];
	TU_FORMAT(json, "%s/counters.json", tu_dir);
	TU_FORMAT(args, "'%s' '%s'", path_buf, json);
	assert_int_equal(tu_strobe("convert", args, 0, NULL), 0);
	yajl_val root = tu_load_trace(json);
	double v[64];
	size_t n0 = values(root, "SM clock (MHz)", 0, v, 64);
	assert_true(n0 >= 3);
	for (size_t i = 0; i < n0 && i < 64; i++)
		assert_true(v[i] == 0);
	size_t n1 = values(root, "SM clock (MHz)", 1, v, 64);
	assert_true(n1 >= 3);
	assert_true(v[0] == 1410 && v[1] == 1980);
	yajl_tree_free(root);
}

/* Flight mode: the sampler runs with the recorder, each dump holds the
 * samples of its window, and stopping the recorder stops the sampler. */
static void test_flight_dump_has_counters(void **state)
{
	(void)state;
	const double clocks[] = {1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800, 1900};
	fake_nvml_script(0, FAKE_NVML_SM_CLOCK, clocks, 10);
	char out[1300], path[1300];
	TU_FORMAT(out, "%s/flight.json", tu_dir);
	struct strobe_flight_opts o =
	    STROBE_OPTS(strobe_flight_opts, .output = out, .window_ns = 10000000000ull,
	                .activity_mask = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CPU_OP) | COUNTERS);
	assert_int_equal(strobe_flight_start(&o), 0);
	for (int i = 0; i < 10000 && fake_nvml_calls("nvmlDeviceGetUtilizationRates", 0) < 3; i++)
		sleep_ms(1);
	assert_int_equal(strobe_flight_dump("first", path, sizeof(path)), 0);
	yajl_val root = tu_load_trace(path);
	double v[16];
	size_t n = values(root, "SM clock (MHz)", 0, v, 16);
	assert_true(n >= 2);
	assert_true(v[0] == 1000 && v[1] == 1100);
	assert_int_equal(tu_get_num(tu_get(root, "gpu_counters"), "rate_hz"), 10);
	yajl_tree_free(root);
	/* Sampling went on after the dump. A round's utilization call comes
	 * before its sample is recorded: three more calls mean two more whole
	 * samples, as three calls before the first dump meant two. */
	size_t calls = fake_nvml_calls("nvmlDeviceGetUtilizationRates", 0);
	for (int i = 0; i < 10000 && fake_nvml_calls("nvmlDeviceGetUtilizationRates", 0) < calls + 3; i++)
		sleep_ms(1);
	assert_int_equal(strobe_flight_dump("second", path, sizeof(path)), 0);
	root = tu_load_trace(path);
	assert_true(values(root, "SM clock (MHz)", 0, v, 16) >= n + 2);
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
	assert_false(fake_nvml_initialised());
	calls = fake_nvml_calls("nvmlDeviceGetUtilizationRates", 0);
	sleep_ms(250);
	assert_int_equal(fake_nvml_calls("nvmlDeviceGetUtilizationRates", 0), calls);
}

static void test_rate_key(void **state)
{
	(void)state;
	char err[512];
	assert_int_equal(strobe_prepare(0, "GPU_COUNTERS_SAMPLE_RATE_HZ=0"), STROBE_E_CONFIG);
	snprintf(err, sizeof(err), "%s", strobe_last_error());
	tu_assert_contains(err, "GPU_COUNTERS_SAMPLE_RATE_HZ=0");
	tu_assert_contains(err, "expected range [1, 1000]");
	assert_int_equal(strobe_prepare(0, "GPU_COUNTERS_SAMPLE_RATE_HZ=1001"), STROBE_E_CONFIG);
	/* The default is 10 Hz. */
	yajl_val root = run("default_rate", NULL, 20);
	assert_int_equal(tu_get_num(tu_get(root, "gpu_counters"), "rate_hz"), 10);
	yajl_tree_free(root);
}

static void test_missing_library_says_why(void **state)
{
	(void)state;
	setenv("STROBE_NVML_PATH", "/nonexistent/libnvidia-ml.so.1", 1);
	yajl_val root = run("missing", NULL, 5);
	const char *why = tu_get_str(root, "gpu_counters_capture");
	assert_non_null(why);
	tu_assert_contains(why,
	                   "GPU counters capture is off: NVML: cannot load /nonexistent/libnvidia-ml.so.1");
	assert_null(tu_get(root, "gpu_counters"));
	assert_int_equal(tu_count(root, "C", "hardware_counters", NULL), 0);
	yajl_tree_free(root);

	setenv("STROBE_NVML_PATH", FAKE_NVML_PATH, 1);
	fake_nvml_fail_init(9);
	root = run("no_driver", NULL, 5);
	tu_assert_contains(tu_get_str(root, "gpu_counters_capture"),
	                   "NVML: nvmlInit_v2 failed: Driver Not Loaded");
	yajl_tree_free(root);
}

static void test_not_selected_loads_nothing(void **state)
{
	(void)state;
	assert_int_equal(strobe_prepare(0, "ACTIVITY_TYPES=cpu_op"), 0);
	assert_int_equal(strobe_start(), 0);
	assert_int_equal(strobe_stop(NULL), 0);
	assert_int_equal(fake_nvml_calls("nvmlInit_v2", -1), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_tracks_follow_the_script, setup),
	    cmocka_unit_test_setup(test_nvlink_rates, setup),
	    cmocka_unit_test_setup(test_not_supported_is_not_asked_again, setup),
	    cmocka_unit_test_setup(test_device_that_disappears, setup),
	    cmocka_unit_test_setup(test_slow_call_blocks_nothing, setup),
	    cmocka_unit_test_setup(test_perfetto_tracks, setup),
	    cmocka_unit_test_setup(test_flight_dump_has_counters, setup),
	    cmocka_unit_test_setup(test_rate_key, setup),
	    cmocka_unit_test_setup(test_missing_library_says_why, setup),
	    cmocka_unit_test_setup(test_not_selected_loads_nothing, setup),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

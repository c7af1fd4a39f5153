/* The tick -> epoch map, driven by a fake TSC whose rate drifts, and the
 * real clock as a program sees it through strobe_now_ns. */
#include "testutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "strobe/strobe.h"

#define NS_PER_S      1000000000LL
#define TRACE_SECS    600  /* a simulated 10-minute trace */
#define TOLERANCE_NS  1000 /* every mapped tick within 1 us */
#define EPOCH_2020_NS 1577836800000000000LL
#define EPOCH_2100_NS 4102444800000000000LL

/* A simulated machine: true time t (ns since the trace began) drives a
 * monotonic clock, a realtime clock and a TSC of nominal rate `hz` whose
 * rate wanders by `drift` (relative) along a sine of period `period_s`. */
struct sim {
	int64_t t_ns;
	double hz, drift, period_s;
	uint64_t tick_offset;
	int64_t mono0, real0;
};

/* The TSC at true time t: the integral of hz * (1 + drift * sin(2 pi t / P)). */
static uint64_t sim_ticks_at(const struct sim *s, int64_t t_ns)
{
	double t = (double)t_ns / NS_PER_S;
	double w = 2 * M_PI / s->period_s;
	double integral = t + s->drift * (1 - cos(w * t)) / w;
	return s->tick_offset + (uint64_t)llround(s->hz * integral);
}

static uint64_t sim_ticks(void *arg)
{
	struct sim *s = arg;
	return sim_ticks_at(s, s->t_ns);
}

static int64_t sim_mono(void *arg)
{
	struct sim *s = arg;
	return s->mono0 + s->t_ns;
}

static int64_t sim_real(void *arg)
{
	struct sim *s = arg;
	return s->real0 + s->t_ns;
}

static void use_sim(struct sim *s)
{
	struct strb_clock_fake fake = {
	    .ticks = sim_ticks, .mono_ns = sim_mono, .real_ns = sim_real, .arg = s};
	strb_clock_set_fake(&fake);
}

static int restore_real_clock(void **state)
{
	(void)state;
	strb_clock_set_fake(NULL);
	return 0;
}

/* 2.4 GHz, +-50 ppm over a 4-minute period, a large constant TSC offset,
 * and monotonic/realtime origins far apart as on a real host. */
static struct sim drifting_tsc(void)
{
	return (struct sim){
	    .hz = 2.4e9,
	    .drift = 50e-6,
	    .period_s = 240,
	    .tick_offset = 123456789012345ull,
	    .mono0 = 987654321000LL,
	    .real0 = 1700000000123456789LL,
	};
}

/* Builds a map as a trace does: begin at t = 0, one sample per second. */
static void build_map(struct strb_clock_map *map, struct sim *s, int secs)
{
	s->t_ns = 0;
	assert_int_equal(strb_clock_map_begin(map), 0);
	for (int i = 1; i <= secs; i++) {
		s->t_ns = (int64_t)i * NS_PER_S;
		assert_int_equal(strb_clock_map_sample(map), 0);
	}
}

static void assert_maps_within(const struct strb_clock_map *map, const struct sim *s, int64_t t_ns)
{
	int64_t got = strb_clock_map_to_epoch(map, sim_ticks_at(s, t_ns));
	int64_t want = s->real0 + t_ns;
	if (llabs(got - want) > TOLERANCE_NS)
		fail_msg("tick at t = %.6f s maps %lld ns off the fake realtime", (double)t_ns / NS_PER_S,
		         (long long)(got - want));
}

static void test_drifting_tsc_maps_within_1us(void **state)
{
	(void)state;
	struct sim s = drifting_tsc();
	use_sim(&s);
	struct strb_clock_map map = {0};
	build_map(&map, &s, TRACE_SECS);
	assert_true(map.count >= TRACE_SECS);

	/* At, and well between, the samples: a prime step lands everywhere. */
	for (int64_t t = 0; t <= TRACE_SECS * NS_PER_S; t += 137035999)
		assert_maps_within(&map, &s, t);
	for (int i = 0; i < TRACE_SECS; i++) {
		assert_maps_within(&map, &s, (int64_t)i * NS_PER_S);
		assert_maps_within(&map, &s, (int64_t)i * NS_PER_S + NS_PER_S / 2);
		assert_maps_within(&map, &s, (int64_t)i * NS_PER_S + 1);
	}
	/* Slightly outside the sampled range, where the map extrapolates. */
	for (int64_t d = 1; d <= NS_PER_S / 4; d *= 7) {
		assert_maps_within(&map, &s, -d);
		assert_maps_within(&map, &s, TRACE_SECS * NS_PER_S + d);
	}
	strb_clock_map_free(&map);
}

/* A plain 1 ns-per-tick linear map would be off by the drift: make sure
 * the fake really drifts enough for the test above to mean something. */
static void test_drift_is_large_enough_to_matter(void **state)
{
	(void)state;
	struct sim s = drifting_tsc();
	double max_err = 0;
	for (int64_t t = 0; t <= TRACE_SECS * NS_PER_S; t += NS_PER_S / 10) {
		double nominal = (double)(sim_ticks_at(&s, t) - s.tick_offset) / s.hz * NS_PER_S;
		max_err = fmax(max_err, fabs(nominal - (double)t));
	}
	assert_true(max_err > 100 * TOLERANCE_NS);
}

static void test_order_preserved(void **state)
{
	(void)state;
	struct sim s = drifting_tsc();
	use_sim(&s);
	struct strb_clock_map map = {0};
	build_map(&map, &s, 30);

	/* Tick by tick across every sample boundary, and across the ends. */
	for (size_t i = 0; i < map.count; i++) {
		uint64_t at = map.points[i].ticks;
		int64_t prev = strb_clock_map_to_epoch(&map, at - 50);
		for (uint64_t tk = at - 49; tk <= at + 50; tk++) {
			int64_t cur = strb_clock_map_to_epoch(&map, tk);
			if (cur < prev)
				fail_msg("tick %llu maps before tick %llu", (unsigned long long)tk,
				         (unsigned long long)(tk - 1));
			prev = cur;
		}
	}
	/* Coarse steps over the whole range: strictly increasing at 1 ms. */
	int64_t prev = INT64_MIN;
	for (int64_t t = -NS_PER_S / 10; t <= 31 * NS_PER_S; t += 1000000) {
		int64_t cur = strb_clock_map_to_epoch(&map, sim_ticks_at(&s, t));
		assert_true(cur > prev);
		prev = cur;
	}
	strb_clock_map_free(&map);
}

static void test_samples_map_exactly(void **state)
{
	(void)state;
	struct strb_clock_map map = {.real_minus_mono = 5000};
	assert_int_equal(strb_clock_map_add(&map, 1000, 10000), 0);
	assert_int_equal(strb_clock_map_add(&map, 3000, 11000), 0);
	assert_int_equal(strb_clock_map_add(&map, 7000, 15000), 0);
	assert_int_equal(strb_clock_map_to_epoch(&map, 1000), 15000);
	assert_int_equal(strb_clock_map_to_epoch(&map, 3000), 16000);
	assert_int_equal(strb_clock_map_to_epoch(&map, 7000), 20000);
	/* Linear inside each segment, with its own slope. */
	assert_int_equal(strb_clock_map_to_epoch(&map, 2000), 15500);
	assert_int_equal(strb_clock_map_to_epoch(&map, 5000), 18000);
	/* Extrapolated from the nearest segment outside. */
	assert_int_equal(strb_clock_map_to_epoch(&map, 0), 14500);
	assert_int_equal(strb_clock_map_to_epoch(&map, 9000), 22000);
	strb_clock_map_free(&map);
}

/* One sample: a monotonic-source map (1 tick = 1 ns) is an exact shift. */
static void test_single_sample_map(void **state)
{
	(void)state;
	struct sim s = {.hz = 1e9,
	                .drift = 0,
	                .period_s = 1,
	                .tick_offset = 5000000000ull,
	                .mono0 = 42000000000LL,
	                .real0 = 1690000000000000000LL};
	use_sim(&s);
	s.t_ns = 3 * NS_PER_S;
	struct strb_clock_map map = {0};
	assert_int_equal(strb_clock_map_begin(&map), 0);
	assert_int_equal(map.count, 1);
	uint64_t at = sim_ticks_at(&s, s.t_ns);
	assert_int_equal(strb_clock_map_to_epoch(&map, at), s.real0 + s.t_ns);
	int64_t prev = INT64_MIN;
	for (int64_t d = -1000000; d <= 1000000; d += 999) {
		int64_t got = strb_clock_map_to_epoch(&map, at + (uint64_t)d);
		assert_int_equal(got, s.real0 + s.t_ns + d);
		assert_true(got > prev);
		prev = got;
	}
	strb_clock_map_free(&map);
}

static int64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void test_real_ticks_monotonic(void **state)
{
	(void)state;
	strb_clock_init();
	assert_true(!strcmp(strb_clock_name(), "tsc") || !strcmp(strb_clock_name(), "monotonic"));
	uint64_t first = strb_clock_ticks(), prev = first;
	assert_true(first != 0);
	for (int i = 0; i < 200000; i++) {
		uint64_t t = strb_clock_ticks();
		assert_true(t >= prev);
		prev = t;
	}
	usleep(2000);
	assert_true(strb_clock_ticks() > first);
}

static void test_real_map_follows_realtime(void **state)
{
	(void)state;
	strb_clock_init();
	struct strb_clock_map map = {0};
	assert_int_equal(strb_clock_map_begin(&map), 0);
	usleep(20000);
	assert_int_equal(strb_clock_map_sample(&map), 0);
	uint64_t ticks = strb_clock_ticks();
	int64_t real = realtime_ns();
	int64_t mapped = strb_clock_map_to_epoch(&map, ticks);
	assert_true(llabs(mapped - real) < 2000000); /* 2 ms: NTP slew and scheduling */
	strb_clock_map_free(&map);
}

static void assert_plausible_now(void)
{
	int64_t before = realtime_ns();
	int64_t now = (int64_t)strobe_now_ns();
	int64_t after = realtime_ns();
	assert_true(now > EPOCH_2020_NS && now < EPOCH_2100_NS);
	assert_true(now > before - 5000000 && now < after + 5000000);
}

static void test_now_ns_is_epoch_time(void **state)
{
	(void)state;
	assert_int_equal(strobe_init(NULL), 0);
	assert_plausible_now();
	uint64_t prev = strobe_now_ns();
	for (int i = 0; i < 10000; i++) {
		uint64_t t = strobe_now_ns();
		assert_true(t >= prev);
		prev = t;
	}
	/* While tracing, strobe_now_ns uses the trace's anchor: still the wall clock. */
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	assert_plausible_now();
	assert_int_equal(strobe_stop(NULL), 0);
	assert_plausible_now();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_drifting_tsc_maps_within_1us, restore_real_clock),
	    cmocka_unit_test(test_drift_is_large_enough_to_matter),
	    cmocka_unit_test_teardown(test_order_preserved, restore_real_clock),
	    cmocka_unit_test(test_samples_map_exactly),
	    cmocka_unit_test_teardown(test_single_sample_map, restore_real_clock),
	    cmocka_unit_test(test_real_ticks_monotonic),
	    cmocka_unit_test(test_real_map_follows_realtime),
	    cmocka_unit_test(test_now_ns_is_epoch_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

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

/* The cursor must give what the map gives, to the ns: converting a trace
 * through one or the other may not move a single event. */
static void assert_cursor_matches(struct strb_clock_cursor *cur, const struct strb_clock_map *map,
                                  uint64_t ticks)
{
	int64_t want = strb_clock_map_to_epoch(map, ticks);
	int64_t got = strb_clock_cursor_epoch(cur, ticks);
	if (got != want)
		fail_msg("tick %llu: cursor %lld, map %lld", (unsigned long long)ticks, (long long)got,
		         (long long)want);
}

static void assert_cursor_ns_matches(struct strb_clock_cursor *cur, const struct strb_clock_map *map,
                                     uint64_t ns)
{
	int64_t want = strb_clock_map_to_epoch(map, strb_clock_ns_to_ticks(ns));
	int64_t got = strb_clock_cursor_ns_epoch(cur, ns);
	if (got != want)
		fail_msg("%llu ns: cursor %lld, map %lld", (unsigned long long)ns, (long long)got,
		         (long long)want);
}

static uint64_t next_random(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 11;
}

/* Every way a buffer's timestamps can move: forwards in small steps, tick
 * by tick across each sample, before the first and after the last, and in
 * jumps both ways. */
static void sweep_cursor(const struct strb_clock_map *map)
{
	struct strb_clock_cursor cur;
	strb_clock_cursor_init(&cur, map);
	uint64_t first = map->points[0].ticks, last = map->points[map->count - 1].ticks;
	uint64_t span = last - first + 1;
	for (uint64_t tk = first - span / 3; tk < last + span / 3; tk += span / 9973 + 1)
		assert_cursor_matches(&cur, map, tk);
	for (size_t i = 0; i < map->count; i++)
		for (uint64_t tk = map->points[i].ticks - 3; tk <= map->points[i].ticks + 3; tk++)
			assert_cursor_matches(&cur, map, tk);
	for (uint64_t tk = map->points[map->count - 1].ticks + 3; tk + 3 > first; tk -= span / 4999 + 1)
		assert_cursor_matches(&cur, map, tk);
	uint64_t x = 42;
	for (int i = 0; i < 100000; i++)
		assert_cursor_matches(&cur, map, first - span + next_random(&x) % (3 * span));
	assert_cursor_matches(&cur, map, 0);
	assert_cursor_matches(&cur, map, first / 2);
	assert_cursor_matches(&cur, map, last * 2);
}

static void test_cursor_matches_map(void **state)
{
	(void)state;
	struct sim s = drifting_tsc();
	use_sim(&s);
	struct strb_clock_map map = {0};
	build_map(&map, &s, 120);
	sweep_cursor(&map);
	strb_clock_map_free(&map);

	/* Slopes of 1/2 and 1 put the exact products on halves, where
	 * rounding must go away from zero both before and after the samples. */
	struct strb_clock_map halves = {.real_minus_mono = 5000};
	assert_int_equal(strb_clock_map_add(&halves, 1000, 10000), 0);
	assert_int_equal(strb_clock_map_add(&halves, 3000, 11000), 0);
	assert_int_equal(strb_clock_map_add(&halves, 7000, 15000), 0);
	assert_int_equal(strb_clock_map_add(&halves, 7003, 15001), 0);
	sweep_cursor(&halves);
	struct strb_clock_cursor cur;
	strb_clock_cursor_init(&cur, &halves);
	for (uint64_t tk = 0; tk <= 12000; tk++)
		assert_cursor_matches(&cur, &halves, tk);
	strb_clock_map_free(&halves);
}

/* One sample (extrapolated at the nominal rate) and none at all. */
static void test_cursor_small_maps(void **state)
{
	(void)state;
	struct sim s = drifting_tsc();
	use_sim(&s);
	struct strb_clock_map map = {0};
	struct strb_clock_cursor cur;
	strb_clock_cursor_init(&cur, &map);
	assert_int_equal(strb_clock_cursor_epoch(&cur, 12345), 0);
	assert_int_equal(strb_clock_map_begin(&map), 0);
	assert_int_equal(map.count, 1);
	strb_clock_cursor_init(&cur, &map);
	uint64_t at = map.points[0].ticks, x = 7;
	for (int i = 0; i < 100000; i++)
		assert_cursor_matches(&cur, &map, at - 1000000000 + next_random(&x) % 2000000000);
	strb_clock_set_fake(NULL);
	/* With the real source's scale, which a TSC makes other than 1. */
	strb_clock_cursor_init(&cur, &map);
	for (int i = 0; i < 100000; i++)
		assert_cursor_matches(&cur, &map, at - 1000000000 + next_random(&x) % 2000000000);
	strb_clock_map_free(&map);
}

/* CUPTI's ns, on the scale strobe hands it, to epoch ns in one step: the
 * same as through strb_clock_ns_to_ticks and the map. */
static void test_cursor_ns_matches_map(void **state)
{
	(void)state;
	strb_clock_init();
	struct strb_clock_map map = {.real_minus_mono = 1700000000000000000LL};
	/* Samples a second apart on the nominal scale, each a few us off it. */
	for (int i = 1; i <= 60; i++) {
		uint64_t ticks = strb_clock_ns_to_ticks((uint64_t)i * NS_PER_S);
		assert_int_equal(
		    strb_clock_map_add(&map, ticks, 5000000000LL + i * NS_PER_S + (i % 7) * 1013), 0);
	}
	struct strb_clock_cursor cur;
	strb_clock_cursor_init(&cur, &map);
	for (uint64_t ns = 0; ns < 62 * NS_PER_S; ns += 3999971)
		assert_cursor_ns_matches(&cur, &map, ns);
	for (size_t i = 0; i < map.count; i++) {
		uint64_t ns = strb_clock_ticks_to_ns(map.points[i].ticks);
		for (uint64_t d = ns - 5; d <= ns + 5; d++)
			assert_cursor_ns_matches(&cur, &map, d);
	}
	uint64_t x = 3;
	for (int i = 0; i < 200000; i++)
		assert_cursor_ns_matches(&cur, &map, next_random(&x) % (70 * NS_PER_S));
	strb_clock_map_free(&map);
}

static void test_round_is_llround(void **state)
{
	(void)state;
	const double v[] = {0.0,
	                    -0.0,
	                    0.5,
	                    -0.5,
	                    1.5,
	                    -1.5,
	                    2.5,
	                    -2.5,
	                    0.49999999999999994,
	                    -0.49999999999999994,
	                    4503599627370495.5,
	                    -4503599627370495.5,
	                    0x1p52,
	                    0x1p52 + 1,
	                    0x1p53 + 2,
	                    -0x1p53 - 2,
	                    0x1p62 - 1024,
	                    -0x1p62 + 1024,
	                    123456789.4999999,
	                    123456789.5000001,
	                    -7e15 - 0.5};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (strb_clock_round(v[i]) != llround(v[i]))
			fail_msg("%.17g rounds to %lld, llround says %lld", v[i],
			         (long long)strb_clock_round(v[i]), (long long)llround(v[i]));
	uint64_t x = 11;
	for (int i = 0; i < 1000000; i++) {
		double d = ((double)(int64_t)next_random(&x) - 0x1p52) / (double)(1 + next_random(&x) % 4096);
		if (strb_clock_round(d) != llround(d))
			fail_msg("%.17g rounds to %lld, llround says %lld", d, (long long)strb_clock_round(d),
			         (long long)llround(d));
	}
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
	    cmocka_unit_test_teardown(test_cursor_matches_map, restore_real_clock),
	    cmocka_unit_test_teardown(test_cursor_small_maps, restore_real_clock),
	    cmocka_unit_test(test_cursor_ns_matches_map),
	    cmocka_unit_test(test_round_is_llround),
	    cmocka_unit_test_teardown(test_single_sample_map, restore_real_clock),
	    cmocka_unit_test(test_real_ticks_monotonic),
	    cmocka_unit_test(test_real_map_follows_realtime),
	    cmocka_unit_test(test_now_ns_is_epoch_time),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

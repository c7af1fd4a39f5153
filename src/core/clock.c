#define LOG_TAG "clock"
#include "core/clock.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "common/log.h"

enum strb_clock_kind strb_clock_kind_in_use = STRB_CLOCK_MONOTONIC;
static enum strb_clock_kind real_kind = STRB_CLOCK_MONOTONIC;
static bool clock_ready;
static struct strb_clock_fake fake;

static bool tsc_is_usable(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000, &a, &b, &c, &d) || a < 0x80000007)
		return false;
	__get_cpuid(0x80000007, &a, &b, &c, &d);
	if (!(d & (1u << 8))) /* invariant TSC */
		return false;
	/* The kernel trusts the TSC only if it made it the clocksource; if it
	 * did not (unsynchronised sockets, a bad hypervisor), neither do we. */
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return false;
	char name[32] = "";
	bool ok = fgets(name, sizeof(name), f) && !strncmp(name, "tsc", 3) && (name[3] == '\n' || !name[3]);
	fclose(f);
	return ok;
#else
	return false;
#endif
}

/* Nominal scale: ns = base_ns + (ticks - base_ticks) * ns_per_tick. */
static uint64_t base_ticks;
static double ns_per_tick = 1.0;

static void calibrate(void)
{
	base_ticks = 0;
	ns_per_tick = 1.0;
	if (strb_clock_kind_in_use != STRB_CLOCK_TSC)
		return;
	/* 2 ms is enough for a nominal rate: the map, not this, decides real time. */
	int64_t m0 = strb_mono_ns_raw();
	uint64_t t0 = strb_clock_ticks();
	int64_t m1;
	while ((m1 = strb_mono_ns_raw()) - m0 < 2000000)
		;
	uint64_t t1 = strb_clock_ticks();
	base_ticks = t0;
	ns_per_tick = (double)(m1 - m0) / (double)(t1 - t0);
}

uint64_t strb_clock_ticks_to_ns(uint64_t ticks)
{
	/* The TSC is invariant and synchronised, so no tick predates the base. */
	if (ticks <= base_ticks)
		return 0;
	return (uint64_t)llround((double)(ticks - base_ticks) * ns_per_tick);
}

uint64_t strb_clock_ns_to_ticks(uint64_t ns)
{
	return base_ticks + (uint64_t)llround((double)ns / ns_per_tick);
}

void strb_clock_init(void)
{
	if (clock_ready)
		return;
	const char *force = getenv("STROBE_CLOCK");
	if (force && !strcmp(force, "monotonic"))
		real_kind = STRB_CLOCK_MONOTONIC;
	else
		real_kind = tsc_is_usable() ? STRB_CLOCK_TSC : STRB_CLOCK_MONOTONIC;
	strb_clock_kind_in_use = real_kind;
	calibrate();
	clock_ready = true;
	LOGI("clock source: %s", strb_clock_name());
}

void strb_clock_set_fake(const struct strb_clock_fake *f)
{
	strb_clock_init();
	if (f) {
		fake = *f;
		strb_clock_kind_in_use = STRB_CLOCK_FAKE;
	} else {
		strb_clock_kind_in_use = real_kind;
	}
}

const char *strb_clock_name(void)
{
	switch (strb_clock_kind_in_use) {
	case STRB_CLOCK_TSC:
		return "tsc";
	case STRB_CLOCK_FAKE:
		return "fake";
	default:
		return "monotonic";
	}
}

uint64_t strb_clock_fake_ticks(void)
{
	return fake.ticks(fake.arg);
}

int64_t strb_clock_mono_ns(void)
{
	return strb_clock_kind_in_use == STRB_CLOCK_FAKE ? fake.mono_ns(fake.arg) : strb_mono_ns_raw();
}

int64_t strb_clock_real_ns(void)
{
	if (strb_clock_kind_in_use == STRB_CLOCK_FAKE)
		return fake.real_ns(fake.arg);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int strb_clock_map_add(struct strb_clock_map *map, uint64_t ticks, int64_t mono_ns)
{
	if (map->count && ticks <= map->points[map->count - 1].ticks)
		return 0; /* a repeated sample adds nothing and would divide by zero */
	if (map->count == map->cap) {
		size_t cap = map->cap ? map->cap * 2 : 64;
		struct strb_clock_point *p = realloc(map->points, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		map->points = p;
		map->cap = cap;
	}
	map->points[map->count++] = (struct strb_clock_point){ticks, mono_ns};
	return 0;
}

int strb_clock_map_sample(struct strb_clock_map *map)
{
	uint64_t best_t = 0, best_span = UINT64_MAX;
	int64_t best_m = 0;
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = strb_clock_ticks();
		int64_t m = strb_clock_mono_ns();
		uint64_t t1 = strb_clock_ticks();
		if (t1 - t0 < best_span) {
			best_span = t1 - t0;
			best_t = t0 + (t1 - t0) / 2;
			best_m = m;
		}
	}
	return strb_clock_map_add(map, best_t, best_m);
}

int strb_clock_map_begin(struct strb_clock_map *map)
{
	map->count = 0;
	int64_t m0 = strb_clock_mono_ns();
	int64_t r = strb_clock_real_ns();
	int64_t m1 = strb_clock_mono_ns();
	map->real_minus_mono = r - (m0 + (m1 - m0) / 2);
	return strb_clock_map_sample(map);
}

/* Doubles: the product can exceed 64 bits, and the relative error of
 * 1e-16 is far below a nanosecond for any segment or extrapolation. */
static double slope_of(const struct strb_clock_point *a, const struct strb_clock_point *b)
{
	return (double)(b->mono_ns - a->mono_ns) / (double)(b->ticks - a->ticks);
}

static int64_t interpolate(const struct strb_clock_point *a, const struct strb_clock_point *b, uint64_t ticks)
{
	double dt = ticks >= a->ticks ? (double)(ticks - a->ticks) : -(double)(a->ticks - ticks);
	return a->mono_ns + llround(dt * slope_of(a, b));
}

/* The nominal scale a one-sample map extrapolates with: the TSC's rate
 * measured at init; other sources count ns. */
static double single_sample_scale(void)
{
	return strb_clock_kind_in_use == STRB_CLOCK_TSC ? ns_per_tick : 1.0;
}

/* The segment (points[i], points[i + 1]) that converts ticks, for a map of
 * two samples or more: the one around it, or the nearest end one. */
static size_t segment_of(const struct strb_clock_map *map, uint64_t ticks)
{
	size_t lo = 0, hi = map->count - 1;
	if (ticks <= map->points[0].ticks)
		return 0;
	if (ticks >= map->points[hi].ticks)
		return hi - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (map->points[mid].ticks <= ticks)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int64_t strb_clock_map_to_epoch(const struct strb_clock_map *map, uint64_t ticks)
{
	int64_t mono;
	if (map->count == 0)
		return 0;
	if (map->count == 1) {
		const struct strb_clock_point *p = &map->points[0];
		double dt = ticks >= p->ticks ? (double)(ticks - p->ticks) : -(double)(p->ticks - ticks);
		mono = p->mono_ns + llround(dt * single_sample_scale());
	} else {
		size_t i = segment_of(map, ticks);
		mono = interpolate(&map->points[i], &map->points[i + 1], ticks);
	}
	return mono + map->real_minus_mono;
}

void strb_clock_cursor_init(struct strb_clock_cursor *cur, const struct strb_clock_map *map)
{
	*cur = (struct strb_clock_cursor){.map = map, .base_ticks = base_ticks, .ns_per_tick = ns_per_tick};
	strb_clock_cursor_seek(cur, 0);
}

void strb_clock_cursor_seek(struct strb_clock_cursor *cur, uint64_t ticks)
{
	const struct strb_clock_map *map = cur->map;
	/* The end segments reach to the ends of the tick range, as the map
	 * extrapolates from them. */
	cur->from = 0;
	cur->to = UINT64_MAX;
	if (map->count == 0) {
		cur->at_ticks = 0;
		cur->at_epoch = 0;
		cur->slope = 0;
		return;
	}
	if (map->count == 1) {
		cur->at_ticks = map->points[0].ticks;
		cur->at_epoch = map->points[0].mono_ns + map->real_minus_mono;
		cur->slope = single_sample_scale();
		return;
	}
	size_t i = segment_of(map, ticks);
	const struct strb_clock_point *a = &map->points[i], *b = &map->points[i + 1];
	if (i > 0)
		cur->from = a->ticks;
	if (i + 2 < map->count)
		cur->to = b->ticks - 1;
	cur->at_ticks = a->ticks;
	cur->at_epoch = a->mono_ns + map->real_minus_mono;
	cur->slope = slope_of(a, b);
}

void strb_clock_map_free(struct strb_clock_map *map)
{
	free(map->points);
	memset(map, 0, sizeof(*map));
}

int strobe_internal_clock_is_tsc(void)
{
	strb_clock_init();
	return strb_clock_kind_in_use == STRB_CLOCK_TSC;
}

int strobe_internal_clock_map_begin(struct strb_clock_map *map)
    __attribute__((alias("strb_clock_map_begin")));
int strobe_internal_clock_map_sample(struct strb_clock_map *map)
    __attribute__((alias("strb_clock_map_sample")));
int64_t strobe_internal_clock_map_to_epoch(const struct strb_clock_map *map, uint64_t ticks)
    __attribute__((alias("strb_clock_map_to_epoch")));

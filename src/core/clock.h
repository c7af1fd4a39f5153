/* One clock for everything strobe records (DESIGN §5 "One clock").
 *
 * Capture stores raw ticks: the TSC when it is invariant and the kernel's
 * clocksource is "tsc", else CLOCK_MONOTONIC ns. Ticks become epoch ns only
 * at processing, through a piecewise-linear map of (ticks, monotonic ns)
 * samples taken about once a second during a trace and anchored to
 * CLOCK_REALTIME at trace start. */
#ifndef STROBE_CORE_CLOCK_H
#define STROBE_CORE_CLOCK_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/monotonic.h"
#include "strobe/strobe.h"
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

enum strb_clock_kind {
	STRB_CLOCK_MONOTONIC = 0,
	STRB_CLOCK_TSC = 1,
	STRB_CLOCK_FAKE = 2, /* tests only */
};

/* Fake sources for tests: ticks, monotonic ns and realtime ns. */
struct strb_clock_fake {
	uint64_t (*ticks)(void *arg);
	int64_t (*mono_ns)(void *arg);
	int64_t (*real_ns)(void *arg);
	void *arg;
};

extern enum strb_clock_kind strb_clock_kind_in_use;
uint64_t strb_clock_fake_ticks(void);

/* Chooses the source; idempotent. */
void strb_clock_init(void);
/* Installs a fake source (NULL restores the real one). Tests only; not
 * thread-safe against capture. */
void strb_clock_set_fake(const struct strb_clock_fake *fake);
/* "tsc" or "monotonic" (or "fake"). */
const char *strb_clock_name(void);

/* The hot-path read: one rdtsc, or one vDSO clock_gettime. */
static inline uint64_t strb_clock_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_expect(strb_clock_kind_in_use == STRB_CLOCK_TSC, 1))
		return __rdtsc();
#endif
	if (strb_clock_kind_in_use == STRB_CLOCK_FAKE)
		return strb_clock_fake_ticks();
	return (uint64_t)strb_mono_ns_raw();
}

/* A fixed ticks <-> ns scale measured once at init (identity for the
 * monotonic source), for interfaces that must be handed ns, such as
 * CUPTI's timestamp callback. The two directions invert each other to
 * within a tick; real time comes only from the map at processing. */
uint64_t strb_clock_ticks_to_ns(uint64_t ticks);
uint64_t strb_clock_ns_to_ticks(uint64_t ns);

int64_t strb_clock_mono_ns(void);
int64_t strb_clock_real_ns(void);

/* A growing set of samples for one trace. */
struct strb_clock_point {
	uint64_t ticks;
	int64_t mono_ns;
};

struct strb_clock_map {
	struct strb_clock_point *points;
	size_t count, cap;
	int64_t real_minus_mono; /* epoch anchor taken at trace start */
};

/* Starts a map: anchors realtime to monotonic and takes the first sample. */
int strb_clock_map_begin(struct strb_clock_map *map);
/* Adds a sample (about once a second while tracing, and at stop). Samples
 * are taken as a tick read on each side of a monotonic read; the pair with
 * the tightest bracket of a few attempts is kept. Returns 0 or -ENOMEM. */
int strb_clock_map_sample(struct strb_clock_map *map);
/* Adds a sample with explicit values (tests). */
int strb_clock_map_add(struct strb_clock_map *map, uint64_t ticks, int64_t mono_ns);
/* Ticks -> epoch ns: linear inside the sampled segments, extrapolated from
 * the nearest segment outside them. */
int64_t strb_clock_map_to_epoch(const struct strb_clock_map *map, uint64_t ticks);
void strb_clock_map_free(struct strb_clock_map *map);

/* For the Python extension's function tracer (python/src/pytrace.c), which
 * stamps calls with the capture's ticks and maps them as capture does;
 * exported in libstrobe.map's STROBE_PRIVATE node. Chooses the source (as
 * strb_clock_init) and says whether ticks are the TSC, else CLOCK_MONOTONIC
 * ns. */
STROBE_API int strobe_internal_clock_is_tsc(void);
/* strb_clock_map_begin, strb_clock_map_sample, strb_clock_map_to_epoch. */
STROBE_API int strobe_internal_clock_map_begin(struct strb_clock_map *map);
STROBE_API int strobe_internal_clock_map_sample(struct strb_clock_map *map);
STROBE_API int64_t strobe_internal_clock_map_to_epoch(const struct strb_clock_map *map, uint64_t ticks);

/* llround(x), bit for bit, without the libm call: truncation and the exact
 * fractional part decide the rounding (x - trunc(x) is exact below 2^52;
 * above, x is whole). Out of range and NaN go to llround itself. */
static inline int64_t strb_clock_round(double x)
{
	if (!(x > -0x1p62 && x < 0x1p62))
		return llround(x);
	int64_t i = (int64_t)x;
	double f = x - (double)i;
	return i + (f >= 0.5) - (f <= -0.5);
}

/* Converts many timestamps that mostly lie near each other, as a buffer of
 * GPU records does, to exactly what strb_clock_map_to_epoch (after
 * strb_clock_ns_to_ticks for CUPTI's ns) gives: it keeps the segment of the
 * last conversion with its slope divided out once, so a timestamp inside
 * it costs one multiply-add and a rounding instead of a binary search, a
 * division and a libm call. The map must not change while a cursor reads
 * it; a cursor belongs to one thread. */
struct strb_clock_cursor {
	const struct strb_clock_map *map;
	uint64_t from, to;   /* ticks of the current segment, both included */
	uint64_t at_ticks;   /* the segment's left sample... */
	int64_t at_epoch;    /* ...in epoch ns */
	double slope;        /* ns per tick in the segment */
	uint64_t base_ticks; /* the nominal scale of strb_clock_ns_to_ticks */
	double ns_per_tick;
};

void strb_clock_cursor_init(struct strb_clock_cursor *cur, const struct strb_clock_map *map);
/* Moves the cursor to the segment that holds ticks (the slow path). */
void strb_clock_cursor_seek(struct strb_clock_cursor *cur, uint64_t ticks);

/* Ticks -> epoch ns, as strb_clock_map_to_epoch. */
static inline int64_t strb_clock_cursor_epoch(struct strb_clock_cursor *cur, uint64_t ticks)
{
	if (__builtin_expect(ticks - cur->from > cur->to - cur->from, 0))
		strb_clock_cursor_seek(cur, ticks);
	double dt =
	    ticks >= cur->at_ticks ? (double)(ticks - cur->at_ticks) : -(double)(cur->at_ticks - ticks);
	return cur->at_epoch + strb_clock_round(dt * cur->slope);
}

/* ns on the nominal scale (CUPTI's timestamps) -> epoch ns, as
 * strb_clock_map_to_epoch(map, strb_clock_ns_to_ticks(ns)). */
static inline int64_t strb_clock_cursor_ns_epoch(struct strb_clock_cursor *cur, uint64_t ns)
{
	return strb_clock_cursor_epoch(cur, cur->base_ticks +
	                                        (uint64_t)strb_clock_round((double)ns / cur->ns_per_tick));
}

#endif

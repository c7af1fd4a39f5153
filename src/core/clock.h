/* One clock for everything strobe records (DESIGN §5 "One clock").
 *
 * Capture stores raw ticks: the TSC when it is invariant and the kernel's
 * clocksource is "tsc", else CLOCK_MONOTONIC ns. Ticks become epoch ns only
 * at processing, through a piecewise-linear map of (ticks, monotonic ns)
 * samples taken about once a second during a trace and anchored to
 * CLOCK_REALTIME at trace start. */
#ifndef STROBE_CORE_CLOCK_H
#define STROBE_CORE_CLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
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

static inline int64_t strb_mono_ns_raw(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

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

#endif

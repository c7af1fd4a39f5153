/* The flight recorder's memory bound over a long run: two threads record
 * ranges at a steady 2 M records/s each for 60 s into rings of a 32 MiB
 * budget (many times what they write fills it: the rings recycle all
 * along), while the process's resident memory is sampled every 100 ms; its
 * growth stays within the budget, and a dump at the end shows the rings
 * were full (events aged out) and nothing was dropped.
 * STROBE_FLIGHT_TEST_SECONDS shortens the run for a quick local check. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "strobe/strobe.h"
#include "testutil.h"

#define BUDGET (32l << 20)

static atomic_bool stop;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long rss_bytes(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* 1000 pairs (2000 records) per millisecond. */
static void *recorder(void *arg)
{
	(void)arg;
	int64_t t0 = now_ns();
	for (long batch = 1; !atomic_load(&stop); batch++) {
		for (int i = 0; i < 1000; i++) {
			strobe_range_push("steady");
			strobe_range_pop();
		}
		while (now_ns() < t0 + batch * 1000000 && !atomic_load(&stop))
			usleep(100);
	}
	return NULL;
}

static void test_memory_stays_within_budget(void **state)
{
	(void)state;
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's shadow and quarantine are resident too. */
	fprintf(stderr, "SKIPPED: resident memory is not the program's own under AddressSanitizer\n");
	skip();
#endif
	const char *env = getenv("STROBE_FLIGHT_TEST_SECONDS");
	int seconds = env && atoi(env) > 0 ? atoi(env) : 60;
	char out[1200], path[1300];
	snprintf(out, sizeof(out), "%s/mem.json", tu_dir);
	struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .output = out, .memory_bytes = BUDGET);
	long base = rss_bytes();
	assert_true(base > 0);
	assert_int_equal(strobe_flight_start(&o), 0);
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, recorder, NULL), 0);
	long peak = 0;
	int64_t end = now_ns() + (int64_t)seconds * 1000000000;
	while (now_ns() < end) {
		usleep(100000);
		long r = rss_bytes() - base;
		peak = r > peak ? r : peak;
	}
	atomic_store(&stop, true);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	fprintf(stderr, "flight rings of %ld MiB: resident memory grew by at most %.1f MiB over %d s\n",
	        BUDGET >> 20, (double)peak / (1 << 20), seconds);
	assert_true(peak <= BUDGET);
	/* The rings were full: the run wrote far more than they hold. */
	assert_int_equal(strobe_flight_dump("end", path, sizeof(path)), 0);
	char *text = tu_read_file(path, NULL);
	assert_non_null(text);
	char *at = strstr(text, "\"aged_out\": ");
	assert_non_null(at);
	assert_true(strtoull(at + 12, NULL, 10) > 10000000ull * (unsigned)seconds / 60);
	tu_assert_contains(text, "\"dropped_events\": 0");
	free(text);
	assert_int_equal(strobe_flight_stop(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_memory_stays_within_budget),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

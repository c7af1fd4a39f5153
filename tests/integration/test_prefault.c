/* Pre-faulting: a thread that records a lot has its next buffer pages made
 * resident by strobe's pager thread, so its own events land on pages that
 * are already there (no page fault on the recording thread), and every
 * event is still in the trace. */
/* STROBE_TEST_LABELS: concurrency */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include <cmocka.h>

#include "core/tbuf.h"
#include "strobe/strobe.h"
#include "testutil.h"

static void pairs(long n)
{
	for (long i = 0; i < n; i++) {
		strobe_range_push("prefault");
		strobe_range_pop();
	}
}

static long minor_faults(void)
{
	struct rusage ru;
	assert_int_equal(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_minflt;
}

/* A thread of this process called name. */
static bool thread_named(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
		found = !strcmp(comm, name);
	}
	closedir(d);
	return found;
}

/* Whether this kernel has MADV_POPULATE_WRITE (Linux 5.14). */
static bool kernel_populates(void)
{
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	bool ok = madvise(p, 4096, MADV_POPULATE_WRITE) == 0;
	munmap(p, 4096);
	return ok;
}

static void test_pages_ahead_are_resident(void **state)
{
	(void)state;
	if (!kernel_populates()) {
		print_message("skipped: this kernel has no MADV_POPULATE_WRITE (Linux 5.14): no pager\n");
		skip();
	}
	assert_int_equal(strobe_prepare(0, "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=256"), 0);
	assert_int_equal(strobe_start(), 0);
	/* 40 bytes a pair ("prefault" takes 8): 2 MiB of them, then wait for
	 * the pager to get its 1 MiB ahead of what this thread claimed. */
	long first = (2l << 20) / 40;
	pairs(first);
	struct strb_tbuf *b = strb_tls_buf;
	assert_non_null(b);
	struct timespec pause = {0, 1000000};
	for (int i = 0; i < 5000 && atomic_load(&b->ahead_done) < b->limit + (512u << 10); i++)
		nanosleep(&pause, NULL);
	assert_true(atomic_load(&b->ahead_done) >= b->limit + (512u << 10));
	assert_true(thread_named("strobe-pager"));
	/* 512 KiB more: 128 pages that were each a fault before. */
	long second = (512l << 10) / 40, before = minor_faults();
	pairs(second);
	long faults = minor_faults() - before;
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	assert_int_equal(strobe_trace_activity_count(t), (size_t)(first + second));
	strobe_trace_destroy(t);
	print_message("page faults on the recording thread over 512 KiB of events: %ld\n", faults);
	if (TU_UNDER_SANITIZER)
		print_message("not checked: a sanitizer's shadow pages fault as the events are written\n");
	else
		assert_true(faults < 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pages_ahead_are_resident),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

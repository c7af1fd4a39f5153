/* Memory while a full trace is processed: the capture buffers are given
 * back as their events become activities, so strobe_stop does not hold
 * both at once (issue: 256 MiB of budget peaked near 1 GB). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/strobe.h"

#define BUDGET_MIB 128

/* A line of /proc/self/status in MiB ("VmRSS", "VmHWM"). */
static long status_mib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	assert_non_null(f);
	char line[256];
	long kib = -1;
	size_t n = strlen(field);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, n) && line[n] == ':')
			kib = atol(line + n + 1);
	fclose(f);
	assert_true(kib >= 0);
	return kib / 1024;
}

static void test_stop_gives_buffers_back(void **state)
{
	(void)state;
	if (TU_UNDER_SANITIZER) {
		print_message("skipped: peak RSS means nothing under a sanitizer\n");
		return;
	}
	char cfg[64];
	snprintf(cfg, sizeof(cfg), "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=%d", BUDGET_MIB);
	assert_int_equal(strobe_prepare(0, cfg), 0);
	assert_int_equal(strobe_start(), 0);
	/* 32 bytes a pair: until the budget is spent. */
	for (long i = 0; i < (long)BUDGET_MIB * (1 << 20) / 32; i++) {
		strobe_range_push("op.step");
		strobe_range_pop();
	}
	long before = status_mib("VmRSS");
	/* Restart the peak from here (Linux: "5" resets VmHWM). */
	FILE *f = fopen("/proc/self/clear_refs", "w");
	if (!f || fputs("5", f) < 0 || fclose(f)) {
		print_message("skipped: cannot reset the peak RSS\n");
		strobe_trace *t = NULL;
		assert_int_equal(strobe_stop(&t), 0);
		strobe_trace_destroy(t);
		return;
	}
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	long growth = status_mib("VmHWM") - before;
	long acts_mib = (long)(strobe_trace_activity_count(t) * sizeof(struct strobe_activity) >> 20);
	strobe_trace_destroy(t);
	print_message("stop grew the peak by %ld MiB for %ld MiB of activities\n", growth, acts_mib);
	assert_true(acts_mib > BUDGET_MIB);
	/* Holding the buffers too, growth is the activities and more; given
	 * back, it stays below them by most of the buffers. */
	if (growth > acts_mib - BUDGET_MIB / 3)
		fail_msg("strobe_stop grew the peak RSS by %ld MiB for %ld MiB of activities", growth,
		         acts_mib);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stop_gives_buffers_back),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

/* The AMD backend against the fake rocprofiler-sdk 0.x (ABI family 0).
 * STROBE_TEST_LABELS: concurrency (the SDK delivers buffers from its thread
 * while the program's threads call HIP and roctx) */
#define ROCPROF_FAKE_PATH FAKE_ROCPROFILER_V0_PATH
#include "test_rocprof_common.h"

int main(void)
{
	return run_rocprof_tests();
}

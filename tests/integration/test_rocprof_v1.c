/* The AMD backend against the fake rocprofiler-sdk 1.x (ABI family 1). */
#define ROCPROF_FAKE_PATH FAKE_ROCPROFILER_V1_PATH
#include "test_rocprof_common.h"

int main(void)
{
	return run_rocprof_tests();
}

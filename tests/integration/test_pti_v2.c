/* The Intel XPU backend against the fake libpti_view writing v2 records
 * (PTI 1.2, the grown records).
 * STROBE_TEST_LABELS: concurrency (PTI completes buffers on its own thread
 * while the program produces records) */
#define PTI_FAKE_PATH FAKE_PTI_V2_PATH
#include "test_pti_common.h"

int main(void)
{
	return run_pti_tests();
}

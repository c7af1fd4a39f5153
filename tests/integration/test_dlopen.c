/* libstrobe loaded with dlopen, as Python extensions, CUDA's injection
 * hook and PyTorch load it: it must fit in what glibc gives a library
 * loaded late (its thread-local data may not use the initial-exec model,
 * which would put the whole TLS block in the small static surplus). */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

static void test_loads_late(void **state)
{
	(void)state;
	void *h = dlopen(STROBE_BUILD_DIR "/libstrobe.so.0", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		fail_msg("dlopen(libstrobe.so.0): %s", dlerror());
	const char *(*version)(void) = (const char *(*)(void))dlsym(h, "strobe_version");
	assert_non_null(version);
	const char *v = version();
	assert_non_null(v);
	assert_true(strlen(v) > 0);
	/* Its capture works on a thread of this process, not started by it. */
	void (*push)(const char *) = (void (*)(const char *))dlsym(h, "strobe_range_push");
	void (*pop)(void) = (void (*)(void))dlsym(h, "strobe_range_pop");
	assert_non_null(push);
	assert_non_null(pop);
	push("late");
	pop();
	assert_int_equal(dlclose(h), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_loads_late),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

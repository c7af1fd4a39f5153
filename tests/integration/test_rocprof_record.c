/* `strobe record` of an unmodified program that starts rocprofiler-sdk
 * after strobe: ROCP_TOOL_LIBRARIES names libstrobe_inject.so, the SDK
 * finds rocprofiler_configure there when the "HIP runtime" starts, and the
 * trace that was waiting for it gets the program's HIP calls and roctx
 * ranges. The program is python3 driving the fake SDK through ctypes (no
 * strobe in it). Without an SDK, the trace says why AMD capture is off. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "strobe/strobe.h"
#include "testutil.h"

static const char program[] = "import ctypes, sys\n"
                              "f = ctypes.CDLL(sys.argv[1])\n"
                              "f.fake_rocp_set_gpus(2)\n"
                              "assert f.fake_rocp_runtime_init() == 1\n"
                              "f.fake_rocp_roctx_push(b'outer')\n"
                              "f.fake_rocp_hip_call(b'hipDeviceSynchronize', None, 0, None, None)\n"
                              "f.fake_rocp_roctx_mark(b'here')\n"
                              "f.fake_rocp_roctx_pop()\n"
                              "f.fake_rocp_shutdown()\n"
                              "import os\n"
                              "open(sys.argv[2], 'w').write(os.environ['ROCP_TOOL_LIBRARIES'])\n";

static char *dir;

static void sanitizer_order(void)
{
	/* Sanitizer builds: the injected library comes before the runtime. */
	const char *asan = getenv("ASAN_OPTIONS");
	char *opts = NULL;
	assert_true(asprintf(&opts, "%s:verify_asan_link_order=0", asan ? asan : "") > 0);
	setenv("ASAN_OPTIONS", opts, 1);
	free(opts);
}

static void test_record_finds_sdk_started_later(void **state)
{
	(void)state;
	if (system("python3 -c 'import ctypes' >/dev/null 2>&1") != 0)
		skip();
	char py[1200], out[1200], args[4096];
	snprintf(py, sizeof(py), "%s/program.py", dir);
	snprintf(out, sizeof(out), "%s/rec.json", dir);
	assert_int_equal(tu_write_file(py, program), 0);
	sanitizer_order();
	static const char *const fakes[] = {FAKE_ROCPROFILER_V0_PATH, FAKE_ROCPROFILER_V1_PATH};
	/* A tool the user named stays (after strobe's). */
	setenv("ROCP_TOOL_LIBRARIES", "/nonexistent/other-tool.so", 1);
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof(args), "-q -o '%s' -- python3 '%s' '%s' '%s/env.txt'", out, py,
		         fakes[i], dir);
		assert_int_equal(tu_strobe("record", args, 1, NULL), 0);
		yajl_val root = tu_load_trace(out);
		assert_null(tu_get(root, "rocm_capture"));
		assert_int_equal(tu_count(root, "X", "cuda_runtime", "hipDeviceSynchronize"), 1);
		assert_int_equal(tu_count(root, "X", "user_annotation", "outer"), 1);
		assert_int_equal(tu_count(root, "i", NULL, "here"), 1);
		/* What the program saw. */
		char *env = NULL;
		snprintf(args, sizeof(args), "%s/env.txt", dir);
		env = tu_read_file(args, NULL);
		assert_non_null(env);
		tu_assert_contains(env, "libstrobe_inject.so:/nonexistent/other-tool.so");
		free(env);
		yajl_tree_free(root);
		unlink(out);
	}
}

static void test_record_without_sdk(void **state)
{
	(void)state;
	char out[1200], args[1400];
	snprintf(out, sizeof(out), "%s/none.json", dir);
	snprintf(args, sizeof(args), "-q -o '%s' -- /bin/true", out);
	unsetenv("ROCP_TOOL_LIBRARIES");
	sanitizer_order();
	assert_int_equal(tu_strobe("record", args, 1, NULL), 0);
	yajl_val root = tu_load_trace(out);
	const char *why = tu_get_str(root, "rocm_capture");
	assert_non_null(why);
	tu_assert_contains(why, "loaded no rocprofiler-sdk");
	yajl_tree_free(root);
}

int main(void)
{
	unsetenv("STROBE_ROCPROFILER_PATH");
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_finds_sdk_started_later),
	    cmocka_unit_test(test_record_without_sdk),
	};
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

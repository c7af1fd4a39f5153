/* `strobe record` of an unmodified SYCL-like program: the injected library
 * loads PTI (here the fake, through STROBE_PTI_PATH) when the trace starts
 * with the program, and the program's kernels, copies and calls land in
 * the trace. The program is python3 driving the fake through ctypes (no
 * strobe in it); it also reports the Level Zero tracing-layer switch that
 * strobe record sets for it. */
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

static const char program[] =
    "import ctypes, os, sys, time\n"
    "f = ctypes.CDLL(sys.argv[1])\n"
    "u64, u32 = ctypes.c_uint64, ctypes.c_uint32\n"
    "f.fake_pti_now.restype = u64\n"
    "f.fake_pti_next_corr.restype = u32\n"
    "f.fake_pti_api_name.restype = ctypes.c_char_p\n"
    "f.fake_pti_api.argtypes = [u32, u32, u32, u64, u64]\n"
    "f.fake_pti_kernel.argtypes = [ctypes.c_int, u64, u32, ctypes.c_char_p, u64, u64]\n"
    "f.fake_pti_copy.argtypes = [ctypes.c_int, u64, u32, u32, u64, u64, u64]\n"
    "sycl = [i for i in range(1, 64) if f.fake_pti_api_name(3, i) == b'urEnqueueKernelLaunch'][0]\n"
    "for q in range(2):\n"
    "    c = f.fake_pti_next_corr()\n"
    "    t = f.fake_pti_now()\n"
    "    f.fake_pti_kernel(0, q, c, b'sycl_kernel', t + 1000, t + 2000)\n"
    "    f.fake_pti_api(3, sycl, c, t, f.fake_pti_now())\n"
    "c = f.fake_pti_next_corr()\n"
    "t = f.fake_pti_now()\n"
    "f.fake_pti_copy(0, 0, c, 9, 4096, t + 1000, t + 3000)\n" /* D2H */
    "time.sleep(0.05)\n"
    "open(sys.argv[2], 'w').write(os.environ.get('ZE_ENABLE_TRACING_LAYER', 'unset'))\n";

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

static char *record(const char *fake, const char *activities, yajl_val *root)
{
	char py[1200], out[1200], env[1200], args[4096];
	snprintf(py, sizeof(py), "%s/program.py", dir);
	snprintf(out, sizeof(out), "%s/rec.json", dir);
	snprintf(env, sizeof(env), "%s/env.txt", dir);
	assert_int_equal(tu_write_file(py, program), 0);
	setenv("STROBE_PTI_PATH", fake, 1);
	snprintf(args, sizeof(args), "-q %s%s -o '%s' -- python3 '%s' '%s' '%s'",
	         activities ? "--activities " : "", activities ? activities : "", out, py, fake, env);
	assert_int_equal(tu_strobe("record", args, 1, NULL), 0);
	*root = tu_load_trace(out);
	unlink(out);
	return tu_read_file(env, NULL);
}

static void test_record_traces_xpu(void **state)
{
	(void)state;
	if (system("python3 -c 'import ctypes' >/dev/null 2>&1") != 0)
		skip();
	sanitizer_order();
	unsetenv("ZE_ENABLE_TRACING_LAYER");
	static const char *const fakes[] = {FAKE_PTI_V1_PATH, FAKE_PTI_V2_PATH};
	for (int i = 0; i < 2; i++) {
		yajl_val root = NULL;
		char *env = record(fakes[i], "kernel,gpu_memcpy,xpu_runtime", &root);
		assert_null(tu_get(root, "xpu_capture"));
		assert_non_null(tu_get_str(root, "xpupti_version"));
		assert_int_equal(tu_count(root, "X", "kernel", "sycl_kernel"), 2);
		assert_int_equal(tu_count(root, "X", "xpu_runtime", "urEnqueueKernelLaunch"), 2);
		assert_int_equal(tu_count(root, "X", "gpu_memcpy", "Memcpy D2H (DEVICE -> HOST)"), 1);
		assert_int_equal(tu_count(root, "s", "ac2g", NULL), 2);
		/* What the program saw: the tracing layer on. */
		assert_non_null(env);
		assert_string_equal(env, "1");
		free(env);
		yajl_tree_free(root);
	}
	/* A user's own setting stays. */
	setenv("ZE_ENABLE_TRACING_LAYER", "0", 1);
	yajl_val root = NULL;
	char *env = record(FAKE_PTI_V2_PATH, NULL, &root);
	assert_string_equal(env, "0");
	assert_int_equal(tu_count(root, "X", "kernel", "sycl_kernel"), 2);
	free(env);
	yajl_tree_free(root);
	unsetenv("ZE_ENABLE_TRACING_LAYER");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_record_traces_xpu),
	};
	dir = tu_mkdtemp();
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	tu_rmrf(dir);
	return rc;
}

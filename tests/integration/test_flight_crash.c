/* The flight recorder's fatal-signal path with real programs
 * (tests/programs/flight_crash.c, STROBE_FLIGHT in their environment):
 * each dies of its signal as it would have without strobe, leaves
 * STEM.crash-PID.raw beside the output, and `strobe convert` makes it a
 * trace with every thread's open ranges, the recent events and the signal
 * in the metadata. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#define PROG STROBE_TEST_PROGRAMS_DIR "/flight_crash"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Runs flight_crash MODE with the recorder writing beside DIR/run.json.gz;
 * returns its wait status, its pid in *pid. */
static int run_mem(const char *mode, const char *mem, pid_t *pid)
{
	char out[1200];
	TU_FORMAT(out, "%s/run.json.gz", tu_dir);
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		setenv("STROBE_FLIGHT", "30s", 1);
		setenv("STROBE_FLIGHT_MEM", mem, 1);
		setenv("STROBE_FLIGHT_OUTPUT", out, 1);
		unsetenv("STROBE_DUMP_ON_EXIT");
		unsetenv("STROBE_HANG_AFTER");
		/* AddressSanitizer would report the signals itself and exit 1. */
		char asan[512];
		const char *old = getenv("ASAN_OPTIONS");
		snprintf(asan, sizeof(asan),
		         "%s%shandle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0",
		         old ? old : "", old && *old ? ":" : "");
		setenv("ASAN_OPTIONS", asan, 1);
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0)
			dup2(devnull, 2);
		execl(PROG, PROG, mode, (char *)NULL);
		_exit(127);
	}
	int st = 0;
	assert_int_equal(waitpid(p, &st, 0), p);
	*pid = p;
	return st;
}

static int run(const char *mode, pid_t *pid)
{
	return run_mem(mode, "8M", pid);
}

static void raw_path(pid_t pid, char *path, size_t len)
{
	int n = snprintf(path, len, "%s/run.crash-%d.raw", tu_dir, (int)pid);
	assert_true(n > 0 && (size_t)n < len);
}

/* The raw dump of pid converted to DIR/NAME and loaded. */
static yajl_val convert(pid_t pid, const char *name)
{
	char raw[1200], args[2600], path[1300];
	raw_path(pid, raw, sizeof(raw));
	struct stat st;
	assert_int_equal(stat(raw, &st), 0);
	assert_true(st.st_size > 0);
	TU_FORMAT(path, "%s/%s", tu_dir, name);
	TU_FORMAT(args, "-q '%s' -o '%s'", raw, path);
	char *text = NULL;
	int rc = tu_strobe("convert", args, 1, &text);
	if (rc)
		fail_msg("strobe convert %s: %d: %s", args, rc, text ? text : "");
	free(text);
	return tu_load_trace(path);
}

/* Runs MODE with MEM of rings, expects it killed by sig, and loads the
 * trace its raw dump converts to (DIR/NAME). */
static yajl_val crashed(const char *mode, const char *mem, int sig, const char *name, pid_t *pid)
{
	int st = run_mem(mode, mem, pid);
	if (!WIFSIGNALED(st) || WTERMSIG(st) != sig)
		fail_msg("flight_crash %s: wait status 0x%x, not killed by signal %d", mode, st, sig);
	return convert(*pid, name);
}

/* The unfinished range NAME: its tid. */
static int64_t open_range(yajl_val root, const char *name)
{
	yajl_val e = tu_find(root, "X", "user_annotation", name);
	if (!e)
		fail_msg("no range %s in the trace", name);
	yajl_val fin = tu_get(tu_get(e, "args"), "finished");
	assert_non_null(fin);
	assert_true(YAJL_IS_FALSE(fin));
	return (int64_t)tu_get_num(e, "tid");
}

static yajl_val flight_meta(yajl_val root, const char *signal)
{
	yajl_val m = tu_get(root, "flight_recorder");
	assert_non_null(m);
	assert_string_equal(tu_get_str(m, "signal"), signal);
	return m;
}

/* The events recorded just before the signal, on thread tid. */
static void recent_events(yajl_val root, int64_t tid)
{
	assert_int_equal(tu_count(root, "X", "user_annotation", "tick"), 200);
	assert_int_equal(tu_count(root, "i", NULL, "tick mark"), 4);
	assert_int_equal(tu_count(root, "C", NULL, "progress"), 200);
	yajl_val tick = tu_find(root, "X", "user_annotation", "tick");
	assert_int_equal((int64_t)tu_get_num(tick, "tid"), tid);
	assert_null(tu_get(tu_get(tick, "args"), "finished"));
}

static void test_segfault_on_a_second_thread(void **state)
{
	(void)state;
	pid_t pid;
	yajl_val root = crashed("segv", "8M", SIGSEGV, "segv.json", &pid);
	yajl_val m = flight_meta(root, "SIGSEGV");
	assert_string_equal(tu_get_str(m, "address"), "0x10");
	assert_string_equal(tu_get_str(m, "thread_name"), "crasher");
	int64_t crasher = (int64_t)tu_get_num(m, "thread");
	assert_true(crasher != pid);
	/* The crashing thread's stack, nested, and the main thread's. */
	assert_int_equal(open_range(root, "fatal_step"), crasher);
	assert_int_equal(open_range(root, "worker_loop"), crasher);
	assert_int_equal(open_range(root, "main_wait"), pid);
	yajl_val outer = tu_find(root, "X", NULL, "worker_loop"),
	         inner = tu_find(root, "X", NULL, "fatal_step");
	assert_true(tu_get_ns(outer, "ts") <= tu_get_ns(inner, "ts"));
	assert_true(tu_get_ns(outer, "ts") + tu_get_ns(outer, "dur") >=
	            tu_get_ns(inner, "ts") + tu_get_ns(inner, "dur"));
	recent_events(root, crasher);
	assert_int_equal((int64_t)tu_get_num(tu_find(root, "X", NULL, "tick"), "pid"), pid);
	yajl_tree_free(root);
}

static void test_abort_in_nested_ranges(void **state)
{
	(void)state;
	pid_t pid;
	yajl_val root = crashed("abort", "8M", SIGABRT, "abort.json", &pid);
	yajl_val m = flight_meta(root, "SIGABRT");
	assert_int_equal((int64_t)tu_get_num(m, "thread"), pid);
	assert_int_equal((int64_t)tu_get_num(m, "sender_pid"), pid); /* abort() raised it */
	assert_int_equal(open_range(root, "outer"), pid);
	assert_int_equal(open_range(root, "middle"), pid);
	assert_int_equal(open_range(root, "inner"), pid);
	int64_t sleeper = open_range(root, "sleeper_wait");
	assert_true(sleeper != pid);
	recent_events(root, pid);
	yajl_tree_free(root);
}

/* glibc finds its heap broken and aborts: the dump needs no malloc. */
static void test_abort_on_a_corrupted_heap(void **state)
{
	(void)state;
#ifdef UNDER_ASAN
	skip(); /* AddressSanitizer owns the heap */
#else
	pid_t pid;
	yajl_val root = crashed("heap", "8M", SIGABRT, "heap.json", &pid);
	flight_meta(root, "SIGABRT");
	assert_int_equal(open_range(root, "corrupt_heap"), pid);
	assert_int_equal(open_range(root, "inner"), pid);
	open_range(root, "sleeper_wait");
	recent_events(root, pid);
	yajl_tree_free(root);
#endif
}

/* A handler the program had runs after the dump (it exits 42). */
static void test_program_handler_runs_after(void **state)
{
	(void)state;
	pid_t pid;
	int st = run("chain", &pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
	yajl_val root = convert(pid, "chain.json");
	flight_meta(root, "SIGSEGV");
	assert_int_equal(open_range(root, "fatal_step"), pid);
	yajl_tree_free(root);
}

/* The thread that started the recorder got an alternate signal stack:
 * its own stack running out is dumped too. */
static void test_stack_overflow_on_the_starting_thread(void **state)
{
	(void)state;
	pid_t pid;
	yajl_val root = crashed("overflow", "8M", SIGSEGV, "overflow.json", &pid);
	flight_meta(root, "SIGSEGV");
	assert_int_equal(open_range(root, "recurse"), pid);
	recent_events(root, pid);
	yajl_tree_free(root);
}

/* A thread other than the one that started the recorder overflows its
 * stack: the alternate stack it got when it first recorded runs the
 * handler. */
static void test_stack_overflow_on_another_thread(void **state)
{
	(void)state;
	pid_t pid;
	yajl_val root = crashed("overflow-thread", "8M", SIGSEGV, "overflow-thread.json", &pid);
	yajl_val m = flight_meta(root, "SIGSEGV");
	assert_string_equal(tu_get_str(m, "thread_name"), "deep");
	int64_t deep = (int64_t)tu_get_num(m, "thread");
	assert_true(deep != pid);
	assert_int_equal(open_range(root, "thread_recurse"), deep);
	assert_int_equal(open_range(root, "main_wait"), pid);
	recent_events(root, deep);
	yajl_tree_free(root);
}

/* Rings that wrapped: the range opened in a recycled chunk is still
 * there (kept), the oldest events aged out and are counted. */
static void test_wrapped_rings(void **state)
{
	(void)state;
	pid_t pid;
	yajl_val root = crashed("wrap", "1M", SIGSEGV, "wrap.json", &pid);
	yajl_val m = flight_meta(root, "SIGSEGV");
	assert_true(tu_get_num(m, "aged_out") > 100000);
	assert_int_equal(open_range(root, "long_range"), pid);
	assert_int_equal(open_range(root, "fatal_step"), pid);
	size_t many = tu_count(root, "X", "user_annotation", "many");
	assert_true(many > 1000 && many < 300000);
	recent_events(root, pid);
	yajl_tree_free(root);
}

/* Another thread recycles its ring while the dump is written: the dump
 * converts, with that thread's open range (its copy may be torn). */
static void test_busy_thread_during_the_dump(void **state)
{
	(void)state;
	pid_t pid;
	yajl_val root = crashed("busy", "1M", SIGSEGV, "busy.json", &pid);
	flight_meta(root, "SIGSEGV");
	assert_int_equal(open_range(root, "fatal_step"), pid);
	assert_true(open_range(root, "busy_loop") != pid);
	recent_events(root, pid);
	yajl_tree_free(root);
}

/* No signal: no raw file is left. The default output name. */
static void test_no_crash_leaves_nothing_and_default_name(void **state)
{
	(void)state;
	pid_t pid;
	int st = run("exit", &pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char raw[1200];
	raw_path(pid, raw, sizeof(raw));
	assert_int_not_equal(access(raw, F_OK), 0);

	st = run("segv", &pid);
	assert_int_equal(WTERMSIG(st), SIGSEGV);
	raw_path(pid, raw, sizeof(raw));
	char args[1300], *text = NULL, want[1300];
	TU_FORMAT(args, "'%s'", raw);
	assert_int_equal(tu_strobe("convert", args, 1, &text), 0);
	TU_FORMAT(want, "%s/run.crash-%d.json.gz", tu_dir, (int)pid);
	tu_assert_contains(text, want);
	free(text);
	yajl_val root = tu_load_trace(want);
	open_range(root, "fatal_step");
	yajl_tree_free(root);
	/* A filter goes through the usual conversion. */
	TU_FORMAT(args, "--categories cpu_instant_event '%s' '%s/marks.json'", raw, tu_dir);
	assert_int_equal(tu_strobe("convert", args, 1, &text), 0);
	free(text);
	TU_FORMAT(want, "%s/marks.json", tu_dir);
	root = tu_load_trace(want);
	assert_int_equal(tu_count(root, "i", NULL, "tick mark"), 4);
	assert_int_equal(tu_count(root, "X", NULL, NULL), 0);
	yajl_tree_free(root);
	/* -o names the output of any conversion; a second one is refused. */
	TU_FORMAT(args, "-q '%s' -o '%s/again.json'", want, tu_dir);
	assert_int_equal(tu_strobe("convert", args, 1, &text), 0);
	free(text);
	TU_FORMAT(want, "%s/again.json", tu_dir);
	root = tu_load_trace(want);
	assert_int_equal(tu_count(root, "i", NULL, "tick mark"), 4);
	yajl_tree_free(root);
	TU_FORMAT(args, "'%s' -o a.json b.json", raw);
	assert_int_equal(tu_strobe("convert", args, 1, &text), 2);
	tu_assert_contains(text, "one input and one output ('b.json' is a third file)");
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_segfault_on_a_second_thread),
	    cmocka_unit_test(test_abort_in_nested_ranges),
	    cmocka_unit_test(test_abort_on_a_corrupted_heap),
	    cmocka_unit_test(test_program_handler_runs_after),
	    cmocka_unit_test(test_stack_overflow_on_the_starting_thread),
	    cmocka_unit_test(test_stack_overflow_on_another_thread),
	    cmocka_unit_test(test_wrapped_rings),
	    cmocka_unit_test(test_busy_thread_during_the_dump),
	    cmocka_unit_test(test_no_crash_leaves_nothing_and_default_name),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

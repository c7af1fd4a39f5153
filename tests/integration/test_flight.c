/* The flight recorder through the API: rings that recycle their oldest
 * events within the memory budget, dumps of the last window beside the
 * output path while the recording goes on, ranges still open at a dump
 * kept from where they began, the hang watchdog, dump at exit from the
 * environment, and other traces refused while it runs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "control/flight.h"
#include "strobe/strobe.h"
#include "testutil.h"

static char out[1200];

static int64_t num(yajl_val v)
{
	assert_non_null(v);
	assert_true(YAJL_IS_NUMBER(v));
	return YAJL_GET_INTEGER(v);
}

static void start(uint64_t memory, uint64_t window_ns, uint64_t hang_ns)
{
	snprintf(out, sizeof(out), "%s/run.json", tu_dir);
	struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .output = out, .window_ns = window_ns,
	                                          .memory_bytes = memory, .hang_after_ns = hang_ns);
	assert_int_equal(strobe_flight_start(&o), 0);
}

static yajl_val dump_and_load(const char *reason, char *path, size_t len)
{
	assert_int_equal(strobe_flight_dump(reason, path, len), 0);
	return tu_load_trace(path);
}

/* An unfinished event of cat named name. */
static yajl_val open_range(yajl_val root, const char *cat, const char *name)
{
	yajl_val e = tu_find(root, "X", cat, name);
	assert_non_null(e);
	yajl_val fin = tu_get(tu_get(e, "args"), "finished");
	assert_non_null(fin);
	assert_true(YAJL_IS_FALSE(fin));
	return e;
}

struct waiter {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool inside, release;
	int64_t tid;
};

static void *collective(void *p)
{
	struct waiter *w = p;
	w->tid = (int64_t)syscall(SYS_gettid);
	strobe_range_push("nccl:all_reduce");
	pthread_mutex_lock(&w->lock);
	w->inside = true;
	pthread_cond_broadcast(&w->cond);
	while (!w->release)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	strobe_range_pop();
	return NULL;
}

/* 2 MiB of rings, far more events: the oldest age out, the memory stays
 * within budget, and what each thread was inside survives. */
static void test_rings_recycle_and_keep_open_stacks(void **state)
{
	(void)state;
	start(2 << 20, 60ull * 1000000000ull, 0);
	struct waiter w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, collective, &w), 0);
	pthread_mutex_lock(&w.lock);
	while (!w.inside)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);

	uint64_t op = strobe_op_push("train");
	strobe_range_push("step 41237");
	enum { N = 200000 };
	for (int i = 0; i < N; i++) {
		strobe_range_push("forward");
		strobe_range_pop();
	}
	strobe_instant("last mark");
	char path[1300];
	yajl_val root = dump_and_load("asked by the test", path, sizeof(path));
	char want[1300];
	snprintf(want, sizeof(want), "%s/run.1.json", tu_dir);
	assert_string_equal(path, want);
	/* Both threads' open stacks, from where they began. */
	yajl_val e = open_range(root, "cpu_op", "train");
	assert_int_equal(num(tu_get(tu_get(e, "args"), "External id")), (int64_t)op);
	open_range(root, "user_annotation", "step 41237");
	yajl_val c = open_range(root, "user_annotation", "nccl:all_reduce");
	assert_int_equal(num(tu_get(c, "tid")), w.tid);
	/* The newest events are there, the oldest aged out and counted. */
	assert_int_equal(tu_count(root, "i", NULL, "last mark"), 1);
	size_t kept = tu_count(root, "X", "user_annotation", "forward");
	assert_true(kept > 1000);
	assert_true(kept < N);
	int64_t aged = num(tu_get(root, "aged_out"));
	assert_true(aged >= (int64_t)(2 * (N - kept)));
	yajl_val fr = tu_get(root, "flight_recorder");
	assert_non_null(fr);
	assert_string_equal(tu_get_str(fr, "reason"), "asked by the test");
	assert_int_equal(num(tu_get(tu_get(root, "strobe"), "dropped_events")), 0);
	/* Memory within the budget: what was copied is no more than it. */
	assert_true(num(tu_get(tu_get(root, "strobe"), "cpu_buffer_bytes")) <= 2 << 20);
	yajl_tree_free(root);

	/* The recording goes on; a second dump is a second file. */
	strobe_range_pop();
	strobe_op_pop();
	strobe_instant("after the first dump");
	root = dump_and_load("again", path, sizeof(path));
	snprintf(want, sizeof(want), "%s/run.2.json", tu_dir);
	assert_string_equal(path, want);
	assert_int_equal(tu_count(root, "i", NULL, "after the first dump"), 1);
	e = tu_find(root, "X", "cpu_op", "train");
	assert_non_null(e);
	assert_null(tu_get(tu_get(e, "args"), "finished")); /* closed now */
	open_range(root, "user_annotation", "nccl:all_reduce");
	yajl_tree_free(root);

	pthread_mutex_lock(&w.lock);
	w.release = true;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(th, NULL);
	assert_int_equal(strobe_flight_stop(), 0);
}

static void fill_chunks(int chunks)
{
	/* A pair of "fill" is 24 bytes (a 16-byte push, an 8-byte pop): 2730
	 * to a 64 KiB chunk. */
	for (int i = 0; i < chunks * 2730; i++) {
		strobe_range_push("fill");
		strobe_range_pop();
	}
}

/* A range whose begin aged out but whose end is still in the ring is in
 * the dump, complete; once its end ages out too it is gone. Here the op
 * closes under a range that stays open, so its end is not the last push
 * of the thread. */
static void test_ranges_whose_begin_aged_out(void **state)
{
	(void)state;
	start(1 << 20, 60ull * 1000000000ull, 0); /* 12 chunks of CPU rings (3/4 of it) */
	uint64_t op = strobe_op_push("early op");
	strobe_range_push("still open");
	fill_chunks(6);
	strobe_op_pop();
	fill_chunks(8); /* the op's begin is recycled, its end is not */
	char path[1300];
	yajl_val root = dump_and_load("first", path, sizeof(path));
	yajl_val e = tu_find(root, "X", "cpu_op", "early op");
	assert_non_null(e);
	assert_int_equal(num(tu_get(tu_get(e, "args"), "External id")), (int64_t)op);
	assert_null(tu_get(tu_get(e, "args"), "finished"));
	open_range(root, "user_annotation", "still open");
	/* It began before every fill range left in the ring. */
	yajl_val evs = tu_events(root);
	int64_t first_fill = INT64_MAX;
	for (size_t i = 0; i < YAJL_GET_ARRAY(evs)->len; i++) {
		yajl_val f = YAJL_GET_ARRAY(evs)->values[i];
		const char *name = tu_get_str(f, "name");
		if (name && !strcmp(name, "fill") && tu_get_ns(f, "ts") < first_fill)
			first_fill = tu_get_ns(f, "ts");
	}
	assert_true(first_fill < INT64_MAX);
	assert_true(tu_get_ns(e, "ts") < first_fill);
	int64_t aged = num(tu_get(root, "aged_out"));
	assert_true(aged > 2 * 1638);
	yajl_tree_free(root);

	fill_chunks(20); /* now its end is recycled too */
	root = dump_and_load("second", path, sizeof(path));
	assert_null(tu_find(root, "X", "cpu_op", "early op"));
	open_range(root, "user_annotation", "still open");
	assert_true(num(tu_get(root, "aged_out")) > aged + 19 * 2 * 1638);
	yajl_tree_free(root);
	strobe_range_pop();
	assert_int_equal(strobe_flight_stop(), 0);
}

struct busy {
	atomic_bool stop;
	int64_t tid;
};

static void *busy_main(void *p)
{
	struct busy *b = p;
	b->tid = (int64_t)syscall(SYS_gettid);
	strobe_range_push("busy outer");
	while (!atomic_load(&b->stop)) {
		/* About 50 MB/s of records: its ring laps every few tenths of a
		 * second, many times during the test. */
		for (int i = 0; i < 1000; i++) {
			strobe_range_push("busy");
			strobe_range_pop();
		}
		usleep(1000);
	}
	strobe_range_pop();
	return NULL;
}

/* A thread recycling its ring all along while dumps copy it: each dump
 * still has its recent events and its open range (the chunks it recycled
 * during a copy are the only ones left out). */
static void test_dumps_of_a_busy_thread(void **state)
{
	(void)state;
	/* 2.5 MiB: about as many events in the rings as 4 MiB held at 40 bytes a
	 * pair (each dump is loaded whole, slow under a sanitizer). */
	start(5 << 19, 60ull * 1000000000ull, 0);
	struct busy b = {0};
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, busy_main, &b), 0);
	usleep(300000); /* its ring wraps over */
	for (int i = 0; i < 3; i++) {
		char path[1300];
		yajl_val root = dump_and_load("busy", path, sizeof(path));
		yajl_val outer = open_range(root, "user_annotation", "busy outer");
		assert_int_equal(num(tu_get(outer, "tid")), b.tid);
		assert_true(tu_count(root, "X", "user_annotation", "busy") > 1000);
		assert_true(num(tu_get(root, "aged_out")) > 0);
		assert_int_equal(num(tu_get(tu_get(root, "strobe"), "unmatched_pops")), 0);
		yajl_tree_free(root);
		unlink(path);
	}
	atomic_store(&b.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(strobe_flight_stop(), 0);
}

static void *late_main(void *p)
{
	(void)p;
	strobe_range_push("late open");
	for (int i = 0; i < 100; i++) {
		strobe_range_push("late");
		strobe_range_pop();
	}
	return NULL; /* "late open" stays open: the thread exits inside it */
}

/* A thread that starts after the others spent the whole budget is still
 * recorded (it gets one chunk of its own to recycle). */
static void test_late_thread(void **state)
{
	(void)state;
	start(1 << 20, 60ull * 1000000000ull, 0);
	for (int i = 0; i < 100000; i++) { /* far more than 1 MiB */
		strobe_range_push("early");
		strobe_range_pop();
	}
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, late_main, NULL), 0);
	pthread_join(th, NULL);
	char path[1300];
	yajl_val root = dump_and_load("late", path, sizeof(path));
	assert_int_equal(tu_count(root, "X", "user_annotation", "late"), 100);
	open_range(root, "user_annotation", "late open");
	assert_int_equal(num(tu_get(tu_get(root, "strobe"), "dropped_events")), 0);
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
}

/* A dump holds the last window: older events are gone, an older range
 * still open is not. Other traces are refused meanwhile. */
static void test_window_and_refusals(void **state)
{
	(void)state;
	start(0, 100ull * 1000000ull, 0); /* 100 ms */
	strobe_range_push("long wait");
	strobe_instant("old");
	usleep(300000);
	strobe_instant("recent");
	assert_int_equal(strobe_prepare(0, NULL), -EBUSY);
	tu_assert_contains(strobe_last_error(), "flight recorder");
	struct strobe_flight_opts o = STROBE_OPTS(strobe_flight_opts, .output = out);
	assert_int_equal(strobe_flight_start(&o), -EBUSY);
	char path[1300];
	yajl_val root = dump_and_load(NULL, path, sizeof(path));
	assert_int_equal(tu_count(root, "i", NULL, "old"), 0);
	assert_int_equal(tu_count(root, "i", NULL, "recent"), 1);
	yajl_val lw = open_range(root, "user_annotation", "long wait");
	assert_true(tu_get_ns(lw, "dur") >= 300000000);
	yajl_tree_free(root);
	strobe_range_pop();
	assert_int_equal(strobe_flight_stop(), 0);
	/* Stopped: tracing works again, dumps are refused. */
	assert_int_equal(strobe_flight_dump("late", NULL, 0), STROBE_E_STATE);
	assert_int_equal(strobe_prepare(0, NULL), 0);
	assert_int_equal(strobe_start(), 0);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	strobe_trace_destroy(t);
}

/* A dump that holds the one before it: the first dump's hook (run under
 * the dump lock) says when it is inside and waits 300 ms. */
static struct waiter held = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0};

static void hold_dump(const char *path, const char *reason, const char *error)
{
	(void)path, (void)error;
	if (!reason || strcmp(reason, "first"))
		return;
	pthread_mutex_lock(&held.lock);
	held.inside = true;
	pthread_cond_broadcast(&held.cond);
	pthread_mutex_unlock(&held.lock);
	usleep(300000);
}

static void *first_dump(void *arg)
{
	(void)arg;
	return (void *)(intptr_t)strobe_flight_dump("first", NULL, 0);
}

/* A dump's window ends when it was asked for, not when it got its turn:
 * an event just before the ask is in it, though the dump waited longer
 * than the window for the one before. */
static void test_window_ends_at_the_ask(void **state)
{
	(void)state;
	start(0, 100ull * 1000000ull, 0); /* 100 ms */
	strb_flight_set_dump_hook(hold_dump);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, first_dump, NULL), 0);
	pthread_mutex_lock(&held.lock);
	while (!held.inside)
		pthread_cond_wait(&held.cond, &held.lock);
	pthread_mutex_unlock(&held.lock);
	strobe_instant("just before the ask");
	uint64_t asked = strobe_now_ns();
	char path[1300];
	yajl_val root = dump_and_load("second", path, sizeof(path));
	uint64_t done = strobe_now_ns();
	void *first_rc = NULL;
	assert_int_equal(pthread_join(th, &first_rc), 0);
	strb_flight_set_dump_hook(NULL);
	assert_int_equal((intptr_t)first_rc, 0);
	/* It did wait longer than its window. */
	assert_true(done - asked > 100ull * 1000000ull);
	assert_int_equal(tu_count(root, "i", NULL, "just before the ask"), 1);
	yajl_tree_free(root);
	assert_int_equal(strobe_flight_stop(), 0);
}

/* The watchdog, armed by the first strobe_step(), dumps once when the
 * steps stop, and re-arms when they resume. */
static void test_hang_watchdog(void **state)
{
	(void)state;
	snprintf(out, sizeof(out), "%s/hang.json", tu_dir);
	struct strobe_flight_opts o =
	    STROBE_OPTS(strobe_flight_opts, .output = out, .hang_after_ns = 150ull * 1000000ull);
	assert_int_equal(strobe_flight_start(&o), 0);
	char first[1300], second[1300];
	snprintf(first, sizeof(first), "%s/hang.1.json", tu_dir);
	snprintf(second, sizeof(second), "%s/hang.2.json", tu_dir);
	/* Not armed before the first step: a process that never steps is not
	 * hanging. */
	usleep(400000);
	assert_int_not_equal(access(first, F_OK), 0);
	for (int i = 0; i < 5; i++) {
		strobe_range_push("step");
		usleep(20000);
		strobe_range_pop();
		strobe_step();
	}
	strobe_range_push("stuck here");
	for (int i = 0; i < 200 && access(first, F_OK); i++)
		usleep(10000);
	assert_int_equal(access(first, F_OK), 0);
	usleep(400000); /* still hanging: no second dump */
	assert_int_not_equal(access(second, F_OK), 0);
	yajl_val root = tu_load_trace(first);
	tu_assert_contains(tu_get_str(tu_get(root, "flight_recorder"), "reason"), "strobe_step() not called");
	open_range(root, "user_annotation", "stuck here");
	assert_int_equal(tu_count(root, "X", "user_annotation", "step"), 5);
	yajl_tree_free(root);
	strobe_range_pop();
	strobe_step(); /* re-armed */
	for (int i = 0; i < 200 && access(second, F_OK); i++)
		usleep(10000);
	assert_int_equal(access(second, F_OK), 0);
	assert_int_equal(strobe_flight_stop(), 0);
}

/* STROBE_FLIGHT in the environment of a program that links libstrobe, with
 * a dump at exit. */
static void test_environment_and_exit(void **state)
{
	(void)state;
	char base[1200];
	snprintf(base, sizeof(base), "%s/env.json.gz", tu_dir);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		strobe_shutdown();
		setenv("STROBE_FLIGHT", "5s", 1);
		setenv("STROBE_FLIGHT_OUTPUT", base, 1);
		setenv("STROBE_FLIGHT_MEM", "8M", 1);
		setenv("STROBE_DUMP_ON_EXIT", "1", 1);
		if (strobe_init(NULL))
			_exit(2);
		strobe_range_push("until exit");
		exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char path[1300];
	snprintf(path, sizeof(path), "%s/env.1.json.gz", tu_dir);
	yajl_val root = tu_load_trace(path);
	open_range(root, "user_annotation", "until exit");
	tu_assert_contains(tu_get_str(tu_get(root, "flight_recorder"), "reason"), "exited");
	yajl_tree_free(root);
}

static void test_bad_environment(void **state)
{
	(void)state;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		strobe_shutdown();
		setenv("STROBE_FLIGHT", "soon", 1);
		if (strobe_init(NULL))
			_exit(2);
		/* Refused with a warning: nothing runs, tracing works. */
		_exit(strobe_flight_dump("x", NULL, 0) == STROBE_E_STATE && strobe_prepare(0, NULL) == 0 ? 0
		                                                                                         : 3);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rings_recycle_and_keep_open_stacks),
	    cmocka_unit_test(test_ranges_whose_begin_aged_out),
	    cmocka_unit_test(test_dumps_of_a_busy_thread),
	    cmocka_unit_test(test_late_thread),
	    cmocka_unit_test(test_window_and_refusals),
	    cmocka_unit_test(test_window_ends_at_the_ask),
	    cmocka_unit_test(test_hang_watchdog),
	    cmocka_unit_test(test_environment_and_exit),
	    cmocka_unit_test(test_bad_environment),
	};
	return cmocka_run_group_tests(tests, tu_strobe_group_setup, tu_strobe_group_teardown);
}

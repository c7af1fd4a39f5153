/* A program that dies of a fatal signal while the flight recorder runs
 * (STROBE_FLIGHT in its environment starts it at strobe_init). The first
 * argument picks how; each first records 200 "tick" ranges, "tick mark"
 * instants and a "progress" counter on the thread that dies.
 *
 *   segv   a second thread, "crasher", writes to address 0x10 inside
 *          "fatal_step", itself inside "worker_loop"; the main thread waits
 *          inside "main_wait"
 *   abort  the main thread calls abort() inside "outer" > "middle" >
 *          "inner" while a thread "sleeper" waits inside "sleeper_wait"
 *   heap   as abort, inside "corrupt_heap": the program overwrites a
 *          malloc block's size and frees it, and glibc aborts (exits 77
 *          under AddressSanitizer, which owns the heap there)
 *   chain  its own SIGSEGV handler installed first, then as segv on the
 *          main thread: that handler runs after the dump and exits 42
 *   overflow  the main thread (which started the recorder, and so has its
 *          alternate signal stack) recurses inside "recurse" until its
 *          stack runs out: SIGSEGV
 *   overflow-thread  as overflow, on a second thread "deep" of 256 KiB of
 *          stack (its alternate stack is the one it got when it first
 *          recorded), inside "thread_recurse"; the main thread waits
 *          inside "main_wait"
 *   wrap   the main thread opens "long_range", records 300 000 ranges (far
 *          more than 1 MiB of rings keeps: STROBE_FLIGHT_MEM=1M), then
 *          segfaults inside "fatal_step"
 *   busy   a thread "busy" records ranges inside "busy_loop" as fast as it
 *          can, recycling its ring all along, while the main thread
 *          segfaults inside "fatal_step": the dump is taken under it
 *   exit   records, then returns 0 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "strobe/strobe.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

static sem_t ready;
/* Unmapped, but not null: UBSan would stop a null store itself. */
static int *volatile nowhere = (int *)16;

static void recent(void)
{
	for (int i = 0; i < 200; i++) {
		strobe_range_push("tick");
		strobe_counter("progress", i);
		strobe_range_pop();
		if (i % 50 == 0)
			strobe_instant("tick mark");
	}
}

static void segfault(void)
{
	strobe_range_push("fatal_step");
	*nowhere = 1;
	strobe_range_pop();
}

static void *crasher(void *arg)
{
	(void)arg;
	strobe_thread_set_name("crasher");
	strobe_range_push("worker_loop");
	recent();
	sem_wait(&ready);
	segfault();
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	strobe_thread_set_name("sleeper");
	strobe_range_push("sleeper_wait");
	sem_post(&ready);
	for (;;)
		pause();
	return NULL;
}

static volatile int deeper = 1; /* always: the compiler must not know */

static int recurse(int depth)
{
	volatile char frame[4096];
	frame[0] = (char)depth;
	return deeper ? recurse(depth + 1) + frame[0] : 0;
}

static void *deep(void *arg)
{
	(void)arg;
	strobe_thread_set_name("deep");
	recent();
	strobe_range_push("thread_recurse");
	return (void *)(intptr_t)recurse(0);
}

static void *busy(void *arg)
{
	(void)arg;
	strobe_thread_set_name("busy");
	strobe_range_push("busy_loop");
	sem_post(&ready);
	for (;;) {
		strobe_range_push("spin");
		strobe_range_pop();
	}
	return NULL;
}

static void own_handler(int sig)
{
	(void)sig;
	static const char msg[] = "the program's own handler ran\n";
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(43);
	_exit(42);
}

static void corrupt_heap(void)
{
#ifdef UNDER_ASAN
	exit(77);
#else
	/* Through volatile pointers: the compiler must neither see the
	 * overflow nor drop the allocations. */
	void *(*volatile alloc)(size_t) = malloc;
	void (*volatile release)(void *) = free;
	char *a = alloc(64), *b = alloc(64);
	/* a's bytes, then b's header as an overflow of a would leave it: a
	 * size below the smallest chunk, and free() stops the program. */
	memset(a, 0xa5, 64);
	size_t *volatile words = (size_t *)(void *)b;
	words[-1] = 0x11;
	release(b);
	release(a);
#endif
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	alarm(30);
	if (!strcmp(mode, "chain"))
		signal(SIGSEGV, own_handler);
	if (strobe_init(NULL))
		return 2;
	sem_init(&ready, 0, 0);
	pthread_t th;
	if (!strcmp(mode, "segv")) {
		strobe_range_push("main_wait");
		if (pthread_create(&th, NULL, crasher, NULL))
			return 3;
		sem_post(&ready);
		pthread_join(th, NULL);
		return 4;
	}
	if (!strcmp(mode, "abort") || !strcmp(mode, "heap")) {
		if (pthread_create(&th, NULL, sleeper, NULL))
			return 3;
		sem_wait(&ready);
		recent();
		strobe_range_push("outer");
		strobe_range_push("middle");
		strobe_range_push("inner");
		if (!strcmp(mode, "heap")) {
			strobe_range_push("corrupt_heap");
			corrupt_heap();
		} else {
			abort();
		}
		return 4;
	}
	if (!strcmp(mode, "chain")) {
		recent();
		segfault();
		return 4;
	}
	if (!strcmp(mode, "overflow")) {
		recent();
		strobe_range_push("recurse");
		return recurse(0);
	}
	if (!strcmp(mode, "overflow-thread")) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		strobe_range_push("main_wait");
		if (pthread_create(&th, &attr, deep, NULL))
			return 3;
		pthread_join(th, NULL);
		return 4;
	}
	if (!strcmp(mode, "wrap")) {
		strobe_range_push("long_range");
		for (int i = 0; i < 300000; i++) {
			strobe_range_push("many");
			strobe_range_pop();
		}
		recent();
		segfault();
		return 4;
	}
	if (!strcmp(mode, "busy")) {
		/* First: a thread that has no chunk when the budget is gone
		 * records nothing. */
		recent();
		if (pthread_create(&th, NULL, busy, NULL))
			return 3;
		sem_wait(&ready);
		usleep(100000);
		segfault();
		return 4;
	}
	if (!strcmp(mode, "exit")) {
		recent();
		strobe_shutdown();
		return 0;
	}
	fprintf(stderr,
	        "usage: flight_crash segv|abort|heap|chain|overflow|overflow-thread|wrap|busy|exit\n");
	return 2;
}

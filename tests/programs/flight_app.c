/* A training-loop stand-in for the flight recorder tests: it links libstrobe
 * and calls strobe_step() once per step, each step a "train_step" range.
 *
 *   flight_app deadlock N   steps until step N, where two worker threads
 *                           take two locks in opposite orders and deadlock
 *                           (inside "worker_a:hold_lock1" >
 *                           "worker_a:want_lock2" and the mirror for b);
 *                           the main thread waits for them inside
 *                           "train_step" > "join_workers", forever
 *   flight_app loop         steps every 10 ms until it is killed
 *   flight_app steps N      N steps, then exits 0
 *
 * It prints "ready PID" on stdout (flushed) once it has stepped a few times. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <strobe/strobe.h>

static pthread_mutex_t lock1 = PTHREAD_MUTEX_INITIALIZER, lock2 = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;

/* Holds one lock and wants the other: a and b take them in opposite orders. */
struct worker {
	const char *hold_range, *want_range;
	pthread_mutex_t *first, *second;
};

static void *worker(void *arg)
{
	const struct worker *w = arg;
	strobe_range_push(w->hold_range);
	pthread_mutex_lock(w->first);
	pthread_barrier_wait(&both_hold);
	strobe_range_push(w->want_range);
	pthread_mutex_lock(w->second); /* never returns */
	return NULL;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static void step(long i)
{
	strobe_range_push("train_step");
	strobe_range_push("forward");
	nap_ms(2);
	strobe_range_pop();
	strobe_range_push("backward");
	nap_ms(3);
	strobe_range_pop();
	if (i == 2) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
	}
	nap_ms(5);
	strobe_range_pop();
	strobe_step();
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: flight_app deadlock N | loop | steps N\n");
		return 2;
	}
	strobe_init(NULL);
	long n = argc > 2 ? atol(argv[2]) : 0;
	if (!strcmp(argv[1], "loop")) {
		for (long i = 0;; i++)
			step(i);
	}
	if (!strcmp(argv[1], "steps")) {
		for (long i = 0; i < n; i++)
			step(i);
		return 0;
	}
	if (strcmp(argv[1], "deadlock"))
		return 2;
	for (long i = 0; i < n; i++)
		step(i);
	strobe_range_push("train_step");
	strobe_range_push("join_workers");
	pthread_barrier_init(&both_hold, NULL, 2);
	pthread_t a, b;
	static struct worker wa = {"worker_a:hold_lock1", "worker_a:want_lock2", &lock1, &lock2},
	                     wb = {"worker_b:hold_lock2", "worker_b:want_lock1", &lock2, &lock1};
	pthread_create(&a, NULL, worker, &wa);
	pthread_create(&b, NULL, worker, &wb);
	pthread_join(a, NULL); /* never returns */
	pthread_join(b, NULL);
	return 0;
}

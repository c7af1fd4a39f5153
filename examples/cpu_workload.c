/* A CPU stand-in for a training job, traced through the C API: worker
 * threads run steps of forward/backward ops with nested annotations, a data
 * loader feeds them through a queue whose depth is a counter, and the main
 * thread marks checkpoints.
 *
 *   cpu_workload [-o OUTPUT] [-s STEPS] [-t THREADS]
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <strobe/strobe.h>

static int steps = 20;
static volatile double sink;

/* Burns roughly `us` microseconds of CPU. */
static void work(int us)
{
	double x = 0;
	uint64_t until = strobe_now_ns() + (uint64_t)us * 1000;
	while (strobe_now_ns() < until)
		for (int i = 0; i < 200; i++)
			x += sqrt((double)i + x);
	sink = x;
}

static void layer(const char *name, int us)
{
	strobe_op_push(name);
	strobe_range_push("aten::linear");
	work(us / 2);
	strobe_range_push("aten::relu");
	work(us / 4);
	strobe_range_pop();
	strobe_range_pop();
	strobe_op_pop();
}

static void *trainer(void *arg)
{
	int rank = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof(name), "trainer-%d", rank);
	strobe_thread_set_name(name);
	for (int s = 0; s < steps; s++) {
		char step[32];
		snprintf(step, sizeof(step), "ProfilerStep#%d", s);
		strobe_range_push(step);
		strobe_op_push("forward");
		layer("encoder.layer0", 400);
		layer("encoder.layer1", 400);
		layer("decoder", 300);
		strobe_op_pop();
		strobe_op_push("backward");
		layer("decoder.grad", 600);
		layer("encoder.grad", 900);
		strobe_op_pop();
		strobe_op_push("optimizer.step");
		work(200);
		strobe_op_pop();
		strobe_range_pop();
	}
	return NULL;
}

static void *loader(void *arg)
{
	(void)arg;
	strobe_thread_set_name("data-loader");
	for (int i = 0; i < steps * 2; i++) {
		strobe_range_push("load_batch");
		work(500);
		strobe_range_pop();
		strobe_counter("queue_depth", (double)(i % 5));
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *out = "cpu_workload.json.gz";
	int threads = 2, opt;
	while ((opt = getopt(argc, argv, "o:s:t:h")) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 's':
			steps = atoi(optarg);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-o OUTPUT] [-s STEPS] [-t THREADS]\n", argv[0]);
			return opt == 'h' ? 0 : 2;
		}
	}
	if (steps < 1 || threads < 1 || threads > 64) {
		fprintf(stderr, "%s: steps must be >= 1 and threads in [1, 64]\n", argv[0]);
		return 2;
	}
	int rc;
	if ((rc = strobe_init(NULL)) || (rc = strobe_prepare(0, NULL)) || (rc = strobe_start())) {
		fprintf(stderr, "strobe: %s: %s\n", strobe_status_string(rc), strobe_last_error());
		return 1;
	}
	strobe_metadata_set_string("workload", "cpu_workload");
	strobe_metadata_set_int("steps", steps);
	strobe_thread_set_name("main");

	pthread_t tids[65];
	for (int i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, trainer, (void *)(intptr_t)i);
	pthread_create(&tids[threads], NULL, loader, NULL);
	for (int i = 0; i <= threads; i++) {
		pthread_join(tids[i], NULL);
		if (i < threads)
			strobe_instant("trainer finished");
	}
	strobe_instant("checkpoint");

	strobe_trace *t = NULL;
	if ((rc = strobe_stop(&t)) || (rc = strobe_trace_save(t, out))) {
		fprintf(stderr, "strobe: %s: %s\n", strobe_status_string(rc), strobe_last_error());
		strobe_trace_destroy(t);
		return 1;
	}
	fprintf(stderr, "cpu_workload: %zu activities written to %s\n", strobe_trace_activity_count(t), out);
	strobe_trace_destroy(t);
	strobe_shutdown();
	return 0;
}

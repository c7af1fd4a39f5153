/* A CPU stand-in for a training job annotated with NVTX only, as frameworks
 * annotate theirs (PyTorch's emit_nvtx, NVIDIA's libraries): it knows
 * nothing of strobe. Run it under `strobe record` to see the annotations:
 *
 *   strobe record -o demo.json.gz -- nvtx_workload [-s STEPS] [-t THREADS]
 *
 * Trainer threads run steps of forward/backward layers (push/pop ranges);
 * a data loader in its own NVTX domain prepares batches, each a start/end
 * range that the trainer consuming the batch ends; checkpoints are marks. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

static int steps = 20;
static volatile double sink;
static nvtxDomainHandle_t loader_domain;

/* A tiny queue of in-flight batches: the loader starts a range per batch,
 * the trainer that takes it ends the range. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static nvtxRangeId_t queue[64];
static int queued, produced, total_batches;

static void work(int us)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	double x = 0;
	do {
		for (int i = 0; i < 200; i++)
			x += sqrt((double)i + x);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
	sink = x;
}

static void name_thread(const char *name)
{
	nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), name);
}

static void layer(const char *name, int us)
{
	nvtxRangePushA(name);
	nvtxRangePushA("aten::linear");
	work(us / 2);
	nvtxRangePushA("aten::relu");
	work(us / 4);
	nvtxRangePop();
	nvtxRangePop();
	nvtxRangePop();
}

static void take_batch(void)
{
	pthread_mutex_lock(&lock);
	while (!queued)
		pthread_cond_wait(&ready, &lock);
	nvtxRangeId_t batch = queue[--queued];
	pthread_mutex_unlock(&lock);
	nvtxRangeEnd(batch);
}

static void *trainer(void *arg)
{
	char name[32];
	snprintf(name, sizeof(name), "trainer-%d", (int)(intptr_t)arg);
	name_thread(name);
	for (int s = 0; s < steps; s++) {
		char step[32];
		snprintf(step, sizeof(step), "ProfilerStep#%d", s);
		nvtxRangePushA(step);
		take_batch();
		nvtxRangePushA("forward");
		layer("encoder.layer0", 400);
		layer("encoder.layer1", 400);
		layer("decoder", 300);
		nvtxRangePop();
		nvtxRangePushA("backward");
		layer("decoder.grad", 600);
		layer("encoder.grad", 900);
		nvtxRangePop();
		nvtxEventAttributes_t opt = {0};
		opt.version = NVTX_VERSION;
		opt.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		opt.colorType = NVTX_COLOR_ARGB;
		opt.color = 0xffe0a030u;
		opt.payloadType = NVTX_PAYLOAD_TYPE_INT32;
		opt.payload.iValue = s;
		opt.messageType = NVTX_MESSAGE_TYPE_ASCII;
		opt.message.ascii = "optimizer.step";
		nvtxRangePushEx(&opt);
		work(200);
		nvtxRangePop();
		nvtxRangePop();
	}
	return NULL;
}

static void *loader(void *arg)
{
	(void)arg;
	name_thread("data-loader");
	while (produced < total_batches) {
		nvtxEventAttributes_t a = {0};
		a.version = NVTX_VERSION;
		a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
		a.messageType = NVTX_MESSAGE_TYPE_ASCII;
		a.message.ascii = "load_batch";
		a.category = 1;
		nvtxDomainRangePushEx(loader_domain, &a);
		work(500);
		nvtxDomainRangePop(loader_domain);
		nvtxRangeId_t batch = nvtxRangeStartA("batch in flight");
		pthread_mutex_lock(&lock);
		while (queued == (int)(sizeof(queue) / sizeof(queue[0])))
			pthread_cond_wait(&ready, &lock);
		queue[queued++] = batch;
		produced++;
		pthread_cond_broadcast(&ready);
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 2;
	int opt;
	while ((opt = getopt(argc, argv, "s:t:")) != -1) {
		if (opt == 's')
			steps = atoi(optarg);
		else if (opt == 't')
			threads = atoi(optarg);
		else {
			fprintf(stderr, "usage: %s [-s STEPS] [-t THREADS]\n", argv[0]);
			return 2;
		}
	}
	if (steps < 1 || threads < 1 || threads > 64) {
		fprintf(stderr, "%s: -s must be >= 1 and -t in 1..64\n", argv[0]);
		return 2;
	}
	name_thread("main");
	loader_domain = nvtxDomainCreateA("dataloader");
	nvtxDomainNameCategoryA(loader_domain, 1, "io");
	total_batches = steps * threads;
	pthread_t lt, tt[64];
	pthread_create(&lt, NULL, loader, NULL);
	for (int i = 0; i < threads; i++)
		pthread_create(&tt[i], NULL, trainer, (void *)(intptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(tt[i], NULL);
	pthread_join(lt, NULL);
	nvtxMarkA("training done");
	printf("nvtx_workload: %d steps on %d threads\n", steps, threads);
	return 0;
}

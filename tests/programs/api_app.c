/* A program that links libstrobe and also uses NVTX, in its own code and
 * through a library (a second NVTX module), from several threads at once.
 * Under strobe record it must hold a single strobe: its strobe_* calls and
 * both modules' NVTX calls land in the one trace, and its own
 * strobe_prepare is refused while strobe record traces. */
#include <pthread.h>
#include <stdio.h>

#include <nvtx3/nvToolsExt.h>
#include <strobe/strobe.h>

void nvtx_lib_range(const char *name);

static pthread_barrier_t go;

static void *first_calls(void *arg)
{
	pthread_barrier_wait(&go);
	/* Both modules' first NVTX calls race: each initialises its module. */
	if (arg)
		nvtx_lib_range("from-module");
	else
		nvtxMarkA("from-main-module");
	return NULL;
}

int main(void)
{
	strobe_init(NULL);
	int rc = strobe_prepare(0, NULL);
	printf("strobe_prepare: %s\n", rc ? strobe_last_error() : "ok");
	pthread_barrier_init(&go, NULL, 4);
	pthread_t th[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, first_calls, (void *)(i & 1));
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	strobe_range_push("from-api");
	nvtxRangePushA("from-nvtx");
	nvtxRangePop();
	strobe_range_pop();
	return 0;
}

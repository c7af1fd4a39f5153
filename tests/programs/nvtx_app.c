/* A program that uses NVTX the way applications do (the toolkit's nvtx3
 * headers, nothing of strobe's), for `strobe record` tests. The first
 * argument picks what it does; see main. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>

#include <nvtx3/nvToolsExt.h>

static uint32_t tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static void spin_us(long us)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000000L + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static nvtxEventAttributes_t attrs(const char *msg, uint32_t color, uint32_t category)
{
	nvtxEventAttributes_t a;
	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.colorType = NVTX_COLOR_ARGB;
	a.color = color;
	a.category = category;
	a.messageType = NVTX_MESSAGE_TYPE_ASCII;
	a.message.ascii = msg;
	return a;
}

/* Worker i: named thread, three nested ranges, a mark in the middle. */
static nvtxRangeId_t handed_over;

static void *worker(void *arg)
{
	long i = (long)arg;
	char name[32], range[32];
	snprintf(name, sizeof(name), "worker-%ld", i);
	nvtxNameOsThreadA(tid(), name);
	snprintf(range, sizeof(range), "work-%ld", i);
	nvtxRangePushA(range);
	nvtxRangePushA("step");
	nvtxMarkA("checkpoint");
	nvtxRangePushA("inner");
	spin_us(200);
	nvtxRangePop();
	nvtxRangePop();
	nvtxRangePop();
	if (i == 0)
		nvtxRangeEnd(handed_over); /* started on main, ended here */
	return NULL;
}

static int nested(void)
{
	nvtxNameOsThreadA(tid(), "main");
	nvtxNameCategoryA(7, "io");
	nvtxDomainHandle_t dom = nvtxDomainCreateA("net");
	nvtxDomainNameCategoryA(dom, 2, "send");
	nvtxStringHandle_t reg = nvtxDomainRegisterStringA(dom, "registered-range");

	nvtxRangePushA("main-outer");
	handed_over = nvtxRangeStartA("handed-over");

	nvtxEventAttributes_t a = attrs("colored", 0xff112233u, 7);
	a.payloadType = NVTX_PAYLOAD_TYPE_DOUBLE;
	a.payload.dValue = 2.5;
	nvtxRangePushEx(&a);
	spin_us(100);
	nvtxRangePop();

	nvtxEventAttributes_t d = attrs("net-send", 0xff0000ffu, 2);
	d.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
	d.payload.ullValue = 4096;
	nvtxDomainRangePushEx(dom, &d);
	nvtxEventAttributes_t r = attrs(NULL, 0, 0);
	r.colorType = NVTX_COLOR_UNKNOWN;
	r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	r.message.registered = reg;
	nvtxDomainRangePushEx(dom, &r);
	spin_us(100);
	nvtxDomainRangePop(dom);
	nvtxDomainRangePop(dom);
	nvtxEventAttributes_t m = attrs("net-mark", 0xffffffffu, 0);
	m.colorType = NVTX_COLOR_UNKNOWN;
	nvtxDomainMarkEx(dom, &m);

	nvtxRangePushW(L"wide-\u00e9t\u00e9");
	nvtxRangePop();

	/* Two start/end ranges that overlap without nesting. */
	nvtxRangeId_t s1 = nvtxRangeStartA("overlap-a");
	spin_us(50);
	nvtxRangeId_t s2 = nvtxRangeStartA("overlap-b");
	spin_us(50);
	nvtxRangeEnd(s1);
	spin_us(50);
	nvtxRangeEnd(s2);

	pthread_t th[3];
	for (long i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);

	/* Unbalanced: a pop too many (NVTX says -1), and a push never popped. */
	nvtxRangePop();
	int extra = nvtxRangePop();
	nvtxRangePushA("never-popped");
	printf("extra pop returned %d\n", extra);
	return 0;
}

static void *exiter(void *arg)
{
	(void)arg;
	nvtxRangePushA("exiting-thread");
	spin_us(1000);
	exit(5); /* while main is inside a range */
}

static int exit_from_thread(void)
{
	nvtxRangePushA("main-waiting");
	pthread_t th;
	pthread_create(&th, NULL, exiter, NULL);
	for (;;)
		pause();
	return 0;
}

static int forking(const char *self)
{
	nvtxRangePushA("parent");
	pid_t a = fork();
	if (a == 0) {
		nvtxRangePushA("forked-child");
		spin_us(500);
		nvtxRangePop();
		/* The parent has threads (strobe's): after fork only async-signal-
		 * safe calls are allowed until exec, and exit() is not one. */
		_exit(0);
	}
	pid_t b = fork();
	if (b == 0) {
		execl(self, self, "child", (char *)NULL);
		_exit(127);
	}
	int st1 = 0, st2 = 0;
	waitpid(a, &st1, 0);
	waitpid(b, &st2, 0);
	nvtxRangePop();
	return WIFEXITED(st1) && WIFEXITED(st2) && !WEXITSTATUS(st1) && !WEXITSTATUS(st2) ? 0 : 1;
}

static int child(void)
{
	nvtxRangePushA("exec-child");
	spin_us(500);
	nvtxRangePop();
	return 0;
}

/* Tells the test it is inside its range, then waits to be signalled. */
static int wait_signal(const char *ready_file)
{
	nvtxRangePushA("waiting-for-signal");
	FILE *f = fopen(ready_file, "w");
	if (f)
		fclose(f);
	for (;;)
		pause();
	return 0;
}

/* n ranges "tick" 10 ms apart; the first is "tick-0". */
static int ticks(long n)
{
	for (long i = 0; i < n; i++) {
		nvtxRangePushA(i ? "tick" : "tick-0");
		spin_us(1000);
		nvtxRangePop();
		usleep(9000);
	}
	return 0;
}

/* A loop of push/pop pairs for the overhead benchmark: prints ns/pair. */
static int loop(long n)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 0; i < n; i++) {
		nvtxRangePushA("bench");
		nvtxRangePop();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
	printf("%.2f\n", ns / (double)n);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "nested";
	if (!strcmp(mode, "nested"))
		return nested();
	if (!strcmp(mode, "exit-thread"))
		return exit_from_thread();
	if (!strcmp(mode, "fork"))
		return forking(argv[0]);
	if (!strcmp(mode, "child"))
		return child();
	if (!strcmp(mode, "wait-signal") && argc > 2)
		return wait_signal(argv[2]);
	if (!strcmp(mode, "status") && argc > 2)
		return atoi(argv[2]);
	if (!strcmp(mode, "ticks") && argc > 2)
		return ticks(atol(argv[2]));
	if (!strcmp(mode, "loop") && argc > 2)
		return loop(atol(argv[2]));
	fprintf(stderr,
	        "usage: nvtx_app nested|exit-thread|fork|child|wait-signal FILE|status N|ticks N|loop N\n");
	return 2;
}

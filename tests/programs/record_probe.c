/* A plain program (no NVTX, no strobe) for `strobe record` tests of how the
 * recorder lives with the program: the first argument picks what it does.
 *
 *   closefds SECONDS  closes every fd above 2, as daemons do, then opens a
 *                     socket on the number strobe record's channel had and
 *                     passes data through it for SECONDS; exits 0 when all
 *                     of it came back, 5 when some was taken by someone else
 *   wait READY        writes its pid to READY, then sleeps (20 s at most)
 *   ignore READY      the same, ignoring SIGINT, SIGTERM and SIGHUP */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int closefds(double seconds)
{
	const char *v = getenv("STROBE_RECORD_FD");
	int chan = v ? atoi(v) : -1;
	for (int fd = 3; fd < 65536; fd++)
		close(fd);
	if (chan < 3)
		return 6;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return 7;
	/* The channel's number and the one after it (strobe's own fds may have
	 * been there too) become the program's; the low numbers stay closed. */
	if (dup2(sv[0], chan) != chan || dup2(sv[1], chan + 1) != chan + 1)
		return 8;
	close(sv[0]);
	close(sv[1]);
	sv[1] = chan + 1;
	/* strobe's API, when strobe record put it into this process: a range per
	 * message, so that a child process has something to write. */
	uint64_t (*push)(const char *) = (uint64_t(*)(const char *))dlsym(RTLD_DEFAULT, "strobe_op_push");
	void (*pop)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "strobe_op_pop");
	int sent = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		char msg[32];
		int n = snprintf(msg, sizeof(msg), "mine-%d", sent);
		if (push && pop)
			push("probe-send");
		if (send(sv[1], msg, (size_t)n, 0) == n)
			sent++;
		if (push && pop)
			pop();
		usleep(20000);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < seconds);
	int got = 0;
	char buf[64];
	while (recv(chan, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		got++;
	printf("sent %d, got back %d\n", sent, got);
	return got == sent && sent > 0 ? 0 : 5;
}

static int wait_ready(const char *ready, int ignore)
{
	struct rlimit no_core = {0, 0};
	setrlimit(RLIMIT_CORE, &no_core); /* SIGQUIT ends it without a core file */
	if (ignore) {
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
	}
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", ready);
	FILE *f = fopen(tmp, "w");
	if (!f)
		return 9;
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
	rename(tmp, ready);
	for (int i = 0; i < 200; i++)
		usleep(100000);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "closefds"))
		return closefds(atof(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "wait"))
		return wait_ready(argv[2], 0);
	if (argc == 3 && !strcmp(argv[1], "ignore"))
		return wait_ready(argv[2], 1);
	fprintf(stderr, "usage: record_probe closefds SECONDS | wait READY | ignore READY\n");
	return 2;
}

/* Who this process is on the wire: its random client name and the pid
 * chain and job id its "req" polls carry, built the way libkineto builds
 * them so that dynolog matches strobe processes like PyTorch ones. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/ipc.h"

static bool read_all(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void random_bytes(uint8_t *b, size_t n)
{
	struct timespec ts;
	uint64_t seed, v;
	ssize_t got;
	int fd;

	do
		got = getrandom(b, n, GRND_NONBLOCK);
	while (got < 0 && errno == EINTR);
	if (got == (ssize_t)n)
		return;
	fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		bool ok = read_all(fd, b, n);
		close(fd);
		if (ok)
			return;
	}
	/* Unique enough for a socket name: a clash only makes bind fail. */
	clock_gettime(CLOCK_REALTIME, &ts);
	seed = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	seed ^= (uint64_t)getpid() << 32;
	seed ^= (uint64_t)(uintptr_t)b;
	for (size_t i = 0; i < n; i += 8) {
		v = splitmix64(&seed);
		memcpy(b + i, &v, n - i < 8 ? n - i : 8);
	}
}

void strb_ipc_client_name(char *buf, size_t len)
{
	uint8_t u[16];

	if (!buf || !len)
		return;
	random_bytes(u, sizeof(u));
	u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
	u[8] = (uint8_t)((u[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	snprintf(buf, len,
	         "dynoconfigclient%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
	         u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
	         u[15]);
}

/* The 4th field of /proc/<pid>/stat; the 2nd (comm) may hold spaces and
 * parentheses, so parse after the last ')'. Returns -1 when unreadable. */
static pid_t parent_of(pid_t pid)
{
	char path[64], text[1024], *p;
	ssize_t n;
	int fd, ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do
		n = read(fd, text, sizeof(text) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return -1;
	text[n] = 0;
	p = strrchr(text, ')');
	/* After the command's closing parenthesis: " STATE PPID ...". */
	if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
		return -1;
	char *end;
	errno = 0;
	long v = strtol(p + 4, &end, 10);
	if (errno || end == p + 4 || v < 0 || v > INT_MAX)
		return -1;
	ppid = (int)v;
	return ppid;
}

int64_t strb_ipc_job_id(void)
{
	const char *s = getenv("SLURM_JOB_ID");
	char *end;
	long long v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end)
		return 0;
	return v;
}

void strb_ipc_make_request(struct strb_ipc_request *r, bool accepting)
{
	strb_ipc_make_request_job(r, accepting, strb_ipc_job_id());
}

void strb_ipc_make_request_job(struct strb_ipc_request *r, bool accepting, int64_t job_id)
{
	pid_t pid;

	if (!r)
		return;
	memset(r, 0, sizeof(*r));
	r->type = accepting ? 2 : 0;
	r->job_id = job_id;
	pid = getpid();
	r->pids[r->npids++] = pid;
	while (r->npids < STRB_IPC_MAX_PIDS) {
		pid = parent_of(pid);
		if (pid <= 1)
			break;
		r->pids[r->npids++] = pid;
	}
}

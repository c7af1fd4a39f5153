#include "common/fdguard.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

int strb_fd_high_floor(void)
{
	struct rlimit rl;
	long floor = 1000;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    (long)rl.rlim_cur - 24 < floor)
		floor = (long)rl.rlim_cur - 24;
	return floor < 3 ? 3 : (int)floor;
}

int strb_fd_place_high(int fd, bool cloexec)
{
	if (fd < 0 || fd >= strb_fd_high_floor())
		return fd;
	int h = fcntl(fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, strb_fd_high_floor());
	if (h < 0)
		return fd; /* every high number taken (or a low limit): keep it where it is */
	close(fd);
	return h;
}

bool strb_fd_id_set(struct strb_fd_id *id, int fd)
{
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		id->fd = -1;
		return false;
	}
	id->fd = fd;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return true;
}

bool strb_fd_id_ok(const struct strb_fd_id *id)
{
	struct stat st;
	return id->fd >= 0 && fstat(id->fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}

void strb_fd_id_close(struct strb_fd_id *id)
{
	if (strb_fd_id_ok(id))
		close(id->fd);
	id->fd = -1;
}

int strb_fd_wake_pipe(struct strb_fd_id *rd, struct strb_fd_id *wr)
{
	strb_fd_id_close(rd);
	strb_fd_id_close(wr);
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	strb_fd_id_set(rd, strb_fd_place_high(p[0], true));
	strb_fd_id_set(wr, strb_fd_place_high(p[1], true));
	return 0;
}

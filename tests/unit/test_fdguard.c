/* strb_fd_wake_pipe: the wake-up pipe the on-demand service and the
 * strobe-record thread share, placed high, and replaced without closing
 * a number the program took over. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fdguard.h"

static void test_wake_pipe_high_cloexec_nonblocking(void **state)
{
	(void)state;
	struct strb_fd_id rd = {.fd = -1}, wr = {.fd = -1};
	assert_int_equal(strb_fd_wake_pipe(&rd, &wr), 0);
	assert_true(rd.fd >= strb_fd_high_floor());
	assert_true(wr.fd >= strb_fd_high_floor());
	assert_true(strb_fd_id_ok(&rd) && strb_fd_id_ok(&wr));
	assert_true(fcntl(rd.fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(wr.fd, F_GETFD) & FD_CLOEXEC);
	assert_true(fcntl(rd.fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(wr.fd, F_GETFL) & O_NONBLOCK);
	/* One pipe: what the write end takes, the read end gives. */
	char c = 'w';
	assert_int_equal(write(wr.fd, &c, 1), 1);
	c = 0;
	assert_int_equal(read(rd.fd, &c, 1), 1);
	assert_int_equal(c, 'w');
	errno = 0;
	assert_int_equal(read(rd.fd, &c, 1), -1);
	assert_int_equal(errno, EAGAIN);
	strb_fd_id_close(&rd);
	strb_fd_id_close(&wr);
}

/* A new pipe closes both ends of the one before: a copy of the old read
 * end reads end of file, a copy of the old write end has no reader. */
static void test_wake_pipe_closes_the_old_ends(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	struct strb_fd_id rd = {.fd = -1}, wr = {.fd = -1};
	assert_int_equal(strb_fd_wake_pipe(&rd, &wr), 0);
	int old_rd = dup(rd.fd);
	assert_true(old_rd >= 0);
	assert_int_equal(strb_fd_wake_pipe(&rd, &wr), 0);
	char c = 0;
	assert_int_equal(read(old_rd, &c, 1), 0);
	close(old_rd);
	int old_wr = dup(wr.fd);
	assert_true(old_wr >= 0);
	assert_int_equal(strb_fd_wake_pipe(&rd, &wr), 0);
	errno = 0;
	assert_int_equal(write(old_wr, &c, 1), -1);
	assert_int_equal(errno, EPIPE);
	close(old_wr);
	assert_true(strb_fd_id_ok(&rd) && strb_fd_id_ok(&wr));
	strb_fd_id_close(&rd);
	strb_fd_id_close(&wr);
	signal(SIGPIPE, SIG_DFL);
}

/* The program closed the read end and opened a file of its own on that
 * number: the new pipe leaves the program's file open. */
static void test_wake_pipe_spares_the_programs_fd(void **state)
{
	(void)state;
	struct strb_fd_id rd = {.fd = -1}, wr = {.fd = -1};
	assert_int_equal(strb_fd_wake_pipe(&rd, &wr), 0);
	int taken = rd.fd;
	close(taken);
	int mine = open("/dev/null", O_RDONLY);
	assert_true(mine >= 0);
	assert_int_equal(dup2(mine, taken), taken);
	close(mine);
	assert_false(strb_fd_id_ok(&rd));
	assert_int_equal(strb_fd_wake_pipe(&rd, &wr), 0);
	struct stat st, null;
	assert_int_equal(fstat(taken, &st), 0);
	assert_int_equal(stat("/dev/null", &null), 0);
	assert_true(st.st_rdev == null.st_rdev && S_ISCHR(st.st_mode));
	assert_int_not_equal(rd.fd, taken);
	assert_int_not_equal(wr.fd, taken);
	close(taken);
	strb_fd_id_close(&rd);
	strb_fd_id_close(&wr);
}

/* No fds to be had: the error, and no ends. */
static void test_wake_pipe_failure_leaves_none(void **state)
{
	(void)state;
	struct strb_fd_id rd = {.fd = -1}, wr = {.fd = -1};
	assert_int_equal(strb_fd_wake_pipe(&rd, &wr), 0);
	struct rlimit saved, none;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &saved), 0);
	none = saved;
	none.rlim_cur = 0; /* not one number to be had */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &none), 0);
	int rc = strb_fd_wake_pipe(&rd, &wr);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
	assert_int_equal(rc, -EMFILE);
	assert_int_equal(rd.fd, -1);
	assert_int_equal(wr.fd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wake_pipe_high_cloexec_nonblocking),
	    cmocka_unit_test(test_wake_pipe_closes_the_old_ends),
	    cmocka_unit_test(test_wake_pipe_spares_the_programs_fd),
	    cmocka_unit_test(test_wake_pipe_failure_leaves_none),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* What a save does to what its path names (docs/output-format.md, "Where a
 * file is written"): devices, FIFOs and open descriptors are written into,
 * links are followed, a replaced file keeps its owner and mode, and
 * temporary files of a killed save are cleaned up by the next one. Tests
 * that need root (mknod, another user's file) skip without it. */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "strobe/strobe.h"

#define PATH_LEN 4096

static strobe_trace *trace;

static char *in_dir(char *buf, const char *name)
{
	snprintf(buf, PATH_LEN, "%s/%s", tu_dir, name);
	return buf;
}

/* One trace, saved by every test: a range named "target-check". */
static int setup(void **state)
{
	int rc = tu_strobe_group_setup(state);
	if (rc)
		return rc;
	if (strobe_prepare(0, NULL) || strobe_start())
		return -1;
	strobe_range_push("target-check");
	strobe_range_pop();
	return strobe_stop(&trace);
}

static int teardown(void **state)
{
	strobe_trace_destroy(trace);
	return tu_strobe_group_teardown(state);
}

static void assert_trace_in(const char *path)
{
	char *text = tu_read_file(path, NULL);
	tu_assert_contains(text, "\"traceEvents\"");
	tu_assert_contains(text, "target-check");
	free(text);
}

static bool is_root(void)
{
	if (geteuid() == 0)
		return true;
	print_message("skipped: needs root\n");
	return false;
}

/* ---- tests -------------------------------------------------------------- */

static void test_character_device_written_into(void **state)
{
	(void)state;
	if (!is_root())
		return;
	char dev[PATH_LEN];
	/* A null device of our own, so a regression cannot break /dev/null. */
	assert_int_equal(mknod(in_dir(dev, "null"), S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(strobe_trace_save(trace, dev), 0);
	struct stat st;
	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));

	/* The command's -o goes through the same code. Sanitizer builds: the
	 * injected library comes before the runtime. */
	const char *asan = getenv("ASAN_OPTIONS");
	char *opts = NULL;
	assert_true(asprintf(&opts, "%s:verify_asan_link_order=0", asan ? asan : "") > 0);
	setenv("ASAN_OPTIONS", opts, 1);
	free(opts);
	char args[PATH_LEN + 64];
	snprintf(args, sizeof(args), "-o '%s' -- /bin/true", dev);
	assert_int_equal(tu_strobe("record", args, 1, NULL), 0);
	assert_int_equal(lstat(dev, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	unlink(dev);
}

static void test_fifo_written_into(void **state)
{
	(void)state;
	char fifo[PATH_LEN], copy[PATH_LEN];
	assert_int_equal(mkfifo(in_dir(fifo, "pipe"), 0600), 0);
	in_dir(copy, "from-pipe.json");
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char cmd[2 * PATH_LEN + 16];
		snprintf(cmd, sizeof(cmd), "cat '%s' > '%s'", fifo, copy);
		_exit(system(cmd) == 0 ? 0 : 1);
	}
	assert_int_equal(strobe_trace_save(trace, fifo), 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_trace_in(copy);
	struct stat st;
	assert_int_equal(lstat(fifo, &st), 0);
	assert_true(S_ISFIFO(st.st_mode));
	unlink(fifo);
	unlink(copy);
}

static void test_open_descriptor_written_into(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	char path[64];
	snprintf(path, sizeof(path), "/dev/fd/%d", p[1]);
	assert_int_equal(strobe_trace_save(trace, path), 0);
	close(p[1]);
	static char buf[1 << 16];
	FILE *f = fdopen(p[0], "r");
	assert_non_null(f);
	buf[fread(buf, 1, sizeof(buf) - 1, f)] = 0;
	fclose(f);
	tu_assert_contains(buf, "target-check");

	/* The command's -o /dev/stdout reaches its standard output. */
	char *out = NULL;
	assert_int_equal(
	    tu_strobe("report", STROBE_TEST_DATA_DIR "/libkineto-sample.json -o /dev/stdout", 0, &out), 0);
	tu_assert_contains(out, "<!DOCTYPE html>");
	free(out);

	/* strobe record -o /dev/stdout: the trace on stdout, and no attempt to
	 * read it back for the summary (that waited on the pipe forever). */
	assert_int_equal(tu_run("timeout 20 " STROBE_CLI_PATH " record -o /dev/stdout -- /bin/true", 0, &out),
	                 0);
	tu_assert_contains(out, "\"traceEvents\"");
	free(out);
}

static void test_symlink_followed(void **state)
{
	(void)state;
	char target[PATH_LEN], link[PATH_LEN], missing[PATH_LEN], dangling[PATH_LEN];
	assert_int_equal(tu_write_file(in_dir(target, "real.json"), "old"), 0);
	assert_int_equal(symlink("real.json", in_dir(link, "link.json")), 0);
	assert_int_equal(strobe_trace_save(trace, link), 0);
	struct stat st;
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_trace_in(target);

	/* A link to a file not there yet creates that file. */
	in_dir(missing, "later.json");
	assert_int_equal(symlink(missing, in_dir(dangling, "dangling.json")), 0);
	assert_int_equal(strobe_trace_save(trace, dangling), 0);
	assert_int_equal(lstat(dangling, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_trace_in(missing);
	unlink(link);
	unlink(dangling);
	unlink(target);
	unlink(missing);
}

static void test_hard_link_written_in_place(void **state)
{
	(void)state;
	char a[PATH_LEN], b[PATH_LEN];
	assert_int_equal(tu_write_file(in_dir(a, "a.json"), "old"), 0);
	assert_int_equal(link(a, in_dir(b, "b.json")), 0);
	struct stat before, after, other;
	assert_int_equal(stat(a, &before), 0);
	assert_int_equal(strobe_trace_save(trace, a), 0);
	assert_int_equal(stat(a, &after), 0);
	assert_int_equal(stat(b, &other), 0);
	assert_int_equal(after.st_ino, before.st_ino);
	assert_int_equal(other.st_ino, before.st_ino);
	assert_int_equal(after.st_nlink, 2);
	assert_trace_in(b);
	unlink(a);
	unlink(b);
}

static void test_owner_and_mode_kept(void **state)
{
	(void)state;
	char own[PATH_LEN];
	assert_int_equal(tu_write_file(in_dir(own, "own.json"), "old"), 0);
	assert_int_equal(chmod(own, 0640), 0);
	assert_int_equal(strobe_trace_save(trace, own), 0);
	struct stat st;
	assert_int_equal(stat(own, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_trace_in(own);
	unlink(own);

	/* A new file gets the umask's mode. */
	char fresh[PATH_LEN];
	mode_t old = umask(077);
	int rc = strobe_trace_save(trace, in_dir(fresh, "fresh.json"));
	umask(old);
	assert_int_equal(rc, 0);
	assert_int_equal(stat(fresh, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	unlink(fresh);

	if (!is_root())
		return;
	/* Another user's private file stays theirs and private. */
	struct passwd *nobody = getpwnam("nobody");
	assert_non_null(nobody);
	char theirs[PATH_LEN];
	assert_int_equal(tu_write_file(in_dir(theirs, "theirs.json"), "old"), 0);
	assert_int_equal(chown(theirs, nobody->pw_uid, nobody->pw_gid), 0);
	assert_int_equal(chmod(theirs, 0600), 0);
	assert_int_equal(strobe_trace_save(trace, theirs), 0);
	assert_int_equal(stat(theirs, &st), 0);
	assert_int_equal(st.st_uid, nobody->pw_uid);
	assert_int_equal(st.st_gid, nobody->pw_gid);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_trace_in(theirs);
	unlink(theirs);

	/* Not root: a file of someone else's that we may write cannot be given
	 * back to them after a rename, so it is written in place and stays
	 * theirs. */
	char shared[PATH_LEN], root_file[PATH_LEN + 16];
	assert_int_equal(mkdir(in_dir(shared, "shared"), 0777), 0);
	assert_int_equal(chmod(shared, 0777), 0);
	assert_int_equal(chmod(tu_dir, 0755), 0);
	snprintf(root_file, sizeof(root_file), "%s/root.json", shared);
	assert_int_equal(tu_write_file(root_file, "old"), 0);
	assert_int_equal(chmod(root_file, 0666), 0);
	assert_int_equal(stat(root_file, &st), 0);
	ino_t ino = st.st_ino;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(setgid(nobody->pw_gid) || setuid(nobody->pw_uid) ? 2
		      : access(shared, W_OK)                           ? 4 /* a private folder above */
		      : strobe_trace_save(trace, root_file)            ? 3
		                                                       : 0);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 4)
		print_message("skipped: nobody cannot reach %s\n", shared);
	else
		assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(stat(root_file, &st), 0);
	if (WEXITSTATUS(status) == 0) {
		assert_int_equal(st.st_uid, 0);
		assert_int_equal(st.st_ino, ino);
		assert_int_equal(st.st_mode & 07777, 0666);
		assert_trace_in(root_file);
	}
	chmod(tu_dir, 0700);
	unlink(root_file);
	rmdir(shared);
}

static void test_unwritable_kinds_refused(void **state)
{
	(void)state;
	char dir[PATH_LEN];
	assert_int_equal(mkdir(in_dir(dir, "adir"), 0700), 0);
	assert_int_equal(strobe_trace_save(trace, dir), -EINVAL);
	tu_assert_contains(strobe_last_error(), "is a directory");
	rmdir(dir);
}

/* A temporary file as a save killed with SIGKILL leaves it. */
static void make_temp(char *out, const char *target, pid_t pid, time_t age)
{
	char name[256];
	snprintf(name, sizeof(name), ".%s.strobe.%ld.0123456789ab.tmp", target, (long)pid);
	assert_int_equal(tu_write_file(in_dir(out, name), "{\"traceEvents\": ["), 0);
	struct timespec t[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
	assert_int_equal(utimensat(AT_FDCWD, out, t, 0), 0);
}

static void test_stale_temporary_files_removed(void **state)
{
	(void)state;
	pid_t dead = fork();
	assert_true(dead >= 0);
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);

	char stale[PATH_LEN], live[PATH_LEN], fresh[PATH_LEN], target[PATH_LEN];
	make_temp(stale, "big.json", dead, 3600);
	make_temp(live, "big.json", getppid(), 3600); /* its writer still runs */
	make_temp(fresh, "other.json", dead, 0);      /* may be another namespace's, still writing */
	assert_int_equal(strobe_trace_save(trace, in_dir(target, "next.json")), 0);
	assert_int_equal(access(stale, F_OK), -1);
	assert_int_equal(access(live, F_OK), 0);
	assert_int_equal(access(fresh, F_OK), 0);
	assert_trace_in(target);
	unlink(live);
	unlink(fresh);
	unlink(target);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_character_device_written_into),
	    cmocka_unit_test(test_fifo_written_into),
	    cmocka_unit_test(test_open_descriptor_written_into),
	    cmocka_unit_test(test_symlink_followed),
	    cmocka_unit_test(test_hard_link_written_in_place),
	    cmocka_unit_test(test_owner_and_mode_kept),
	    cmocka_unit_test(test_unwritable_kinds_refused),
	    cmocka_unit_test(test_stale_temporary_files_removed),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

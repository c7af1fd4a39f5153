#define LOG_TAG "output"
#include "common/sink.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "common/error.h"
#include "common/log.h"
#include "strobe/strobe.h"

#define OUT_CHUNK (256 * 1024)

struct strb_sink {
	int fd;
	int dirfd;      /* the directory both names live in; -1 when written in place */
	bool exclusive; /* never replace an existing file */
	enum strb_compress compress;
	z_stream z;
	ZSTD_CCtx *zstd;
	int err;                 /* first error status */
	char *path, *name, *tmp; /* shown to users; final and temporary names in dirfd */
	unsigned char out[OUT_CHUNK];
};

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

enum strb_compress strb_compress_for_path(const char *path)
{
	if (has_suffix(path, ".gz"))
		return STRB_COMPRESS_GZIP;
	if (has_suffix(path, ".zst"))
		return STRB_COMPRESS_ZSTD;
	return STRB_COMPRESS_NONE;
}

static int env_level(const char *name, int fallback, int lo, int hi)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return fallback;
	char *end;
	long l = strtol(v, &end, 10);
	if (*end || l < lo || l > hi) {
		LOGW("%s=%s is not a level in [%d, %d]; using %d", name, v, lo, hi, fallback);
		return fallback;
	}
	return (int)l;
}

static int fail(struct strb_sink *s, const char *what, int errnum)
{
	if (!s->err)
		s->err = strb_error(STROBE_E_IO, "%s %s: %s", what, s->path, strerror(errnum));
	return s->err;
}

#define TEMP_TAG    ".strobe."
#define TEMP_END    ".tmp"
#define STALE_AGE_S 60

/* A temporary name beside the target that nobody else can predict, with
 * the writer's pid in it so a later save can tell a left-over one:
 * ".NAME.strobe.PID.RANDOM.tmp". */
static void temp_name(char *out, size_t len, const char *name)
{
	unsigned char r[6];
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)out ^
		             (uint64_t)time(NULL);
		memcpy(r, &x, sizeof(r));
	}
	/* Keep within NAME_MAX however long the final name is. */
	snprintf(out, len, ".%.200s" TEMP_TAG "%ld.%02x%02x%02x%02x%02x%02x" TEMP_END, name, (long)getpid(),
	         r[0], r[1], r[2], r[3], r[4], r[5]);
}

/* The pid in a temporary name temp_name made, or 0 when it is not one. */
static pid_t temp_owner(const char *e)
{
	size_t n = strlen(e), tag = strlen(TEMP_TAG), endl = strlen(TEMP_END);
	if (e[0] != '.' || n < 1 + tag + 2 + 12 + endl || strcmp(e + n - endl, TEMP_END))
		return 0;
	const char *hex = e + n - endl - 12;
	for (int i = 0; i < 12; i++)
		if (!isxdigit((unsigned char)hex[i]))
			return 0;
	if (hex[-1] != '.')
		return 0;
	const char *digits = hex - 1;
	while (digits > e && isdigit((unsigned char)digits[-1]))
		digits--;
	if (digits == hex - 1 || hex - 1 - digits > 9 || digits - e < (ptrdiff_t)(1 + tag) ||
	    strncmp(digits - tag, TEMP_TAG, tag))
		return 0;
	return (pid_t)strtol(digits, NULL, 10);
}

/* Removes temporary files an earlier save to this folder left behind when
 * it was killed: its pid is gone and the file has not changed for a while
 * (a writer in another pid namespace keeps writing, so stays fresh). */
static void remove_stale_temps(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		pid_t pid = temp_owner(e->d_name);
		if (pid <= 0 || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
		    now - st.st_mtime < STALE_AGE_S)
			continue;
		if (unlinkat(dirfd, e->d_name, 0) == 0)
			LOGI("removed %s, left by strobe process %ld that is gone", e->d_name, (long)pid);
	}
	closedir(d);
}

int strb_export_threads(void)
{
	const char *v = getenv("STROBE_EXPORT_THREADS");
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);
		if (*end || n < 1 || n > STRB_EXPORT_THREADS_MAX) {
			LOGW("STROBE_EXPORT_THREADS=%.40s is not a number of threads from 1 to %d; using 1",
			     v, STRB_EXPORT_THREADS_MAX);
			return 1;
		}
		return (int)n;
	}
	/* Half the CPUs the process may run on (the program keeps the rest),
	 * at most 8: one thread on a 2-CPU machine, where a second would only
	 * take the program's. */
	cpu_set_t set;
	int n = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) / 2 : 1;
	return n < 1 ? 1 : n > 8 ? 8 : n;
}

static int start_compression(struct strb_sink *s, enum strb_compress c, int level)
{
	if (c == STRB_COMPRESS_GZIP) {
		level = level >= 0 ? level : env_level("STROBE_GZIP_LEVEL", 1, 0, 9);
		/* 15 + 16: a gzip wrapper, so `zcat` and every gzip reader take it. */
		if (deflateInit2(&s->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
			return strb_error(-ENOMEM, "cannot start gzip for %s", s->path);
	} else if (c == STRB_COMPRESS_ZSTD) {
		level = level >= 0 ? level : env_level("STROBE_ZSTD_LEVEL", 3, 1, 19);
		s->zstd = ZSTD_createCCtx();
		if (!s->zstd || ZSTD_isError(ZSTD_CCtx_setParameter(s->zstd, ZSTD_c_compressionLevel, level)))
			return strb_error(-ENOMEM, "cannot start zstd for %s", s->path);
		/* Compressed by zstd's own threads while the text is made; a
		 * libzstd built without them refuses, and compresses here. */
		int threads = strb_export_threads();
		if (threads > 1)
			(void)ZSTD_CCtx_setParameter(s->zstd, ZSTD_c_nbWorkers, threads);
	}
	return 0;
}

/* A sink for display with nothing open yet. */
static struct strb_sink *sink_new(const char *display, enum strb_compress c)
{
	struct strb_sink *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = -1;
	s->dirfd = -1;
	s->compress = c;
	s->path = strdup(display);
	if (!s->path) {
		free(s);
		return NULL;
	}
	return s;
}

/* Creates the temporary file for `name` in s->dirfd. When like is given,
 * the file gets its owner and permission bits (a file being replaced);
 * returns 1 when that owner cannot be given, so the caller may write in
 * place instead. */
static int create_temp(struct strb_sink *s, const char *name, mode_t mode, const struct stat *like)
{
	s->name = strdup(name);
	s->tmp = malloc(strlen(name) + 64);
	if (!s->name || !s->tmp)
		return strb_error(-ENOMEM, "out of memory opening %s", s->path);
	remove_stale_temps(s->dirfd);
	/* A fresh unpredictable name per save: concurrent saves to one path
	 * cannot collide, and the last rename wins with a whole file. */
	temp_name(s->tmp, strlen(name) + 64, name);
	/* Replacing a file: born private, opened up to the old file's bits
	 * once it has the old file's owner. */
	s->fd = openat(s->dirfd, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	               like ? 0600 : mode);
	if (s->fd < 0) {
		int e = errno;
		free(s->tmp);
		s->tmp = NULL; /* nothing to remove */
		return strb_error(STROBE_E_IO, "cannot create a file beside %s: %s", s->path, strerror(e));
	}
	if (!like)
		return 0;
	struct stat mine;
	if (fstat(s->fd, &mine) == 0 && (mine.st_uid != like->st_uid || mine.st_gid != like->st_gid) &&
	    fchown(s->fd, like->st_uid, like->st_gid) != 0)
		return 1;
	if (fchmod(s->fd, like->st_mode & 0777) != 0)
		return strb_error(STROBE_E_IO, "cannot set the mode of a file beside %s: %s", s->path,
		                  strerror(errno));
	return 0;
}

/* Hands out s once its file is open (rc 0) and compression started;
 * else frees it. */
static int opened(struct strb_sink **out, struct strb_sink *s, int rc, int level)
{
	if (!rc)
		rc = start_compression(s, s->compress, level);
	if (rc) {
		strb_sink_abort(s);
		return rc;
	}
	*out = s;
	return 0;
}

int strb_sink_open_at(struct strb_sink **out, int dirfd, const char *name, const char *display,
                      enum strb_compress c, int level, mode_t mode, bool exclusive)
{
	*out = NULL;
	struct strb_sink *s = sink_new(display, c);
	if (!s) {
		close(dirfd);
		return strb_error(-ENOMEM, "out of memory opening %s", display);
	}
	s->dirfd = dirfd;
	s->exclusive = exclusive;
	if (exclusive && faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		int rc = strb_error(STROBE_E_IO, "%s already exists; on-demand traces never replace a file",
		                    display);
		strb_sink_abort(s);
		return rc;
	}
	return opened(out, s, create_temp(s, name, mode, NULL), level);
}

/* The descriptor a path names by number (/dev/stdout, /dev/fd/N,
 * /proc/self/fd/N), or -1. */
static int fd_alias(const char *path)
{
	if (!strcmp(path, "/dev/stdout"))
		return 1;
	if (!strcmp(path, "/dev/stderr"))
		return 2;
	const char *num = NULL;
	if (!strncmp(path, "/dev/fd/", 8))
		num = path + 8;
	else if (!strncmp(path, "/proc/self/fd/", 14))
		num = path + 14;
	if (!num || !isdigit((unsigned char)*num))
		return -1;
	char *end;
	long n = strtol(num, &end, 10);
	return *end || n > INT32_MAX ? -1 : (int)n;
}

/* The kernel's fs.protected_symlinks rule, kept when strobe follows links
 * itself: a link in a sticky world-writable folder is followed only when
 * its owner is the folder's owner or the one following it. */
static bool link_trusted(const char *dir, const struct stat *link)
{
	struct stat d;
	if (stat(dir, &d) != 0)
		return false;
	bool shared = (d.st_mode & S_ISVTX) && (d.st_mode & S_IWOTH);
	return !shared || link->st_uid == d.st_uid || link->st_uid == geteuid();
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	return strndup(path, (size_t)(slash - path) + (slash == path));
}

/* Follows the symlinks of path's last component: the file a save writes.
 * *fd >= 0 instead when a link leads to a descriptor alias; *magic when
 * the file is a link of /proc's for the kernel to follow. */
static int resolve(const char *display, const char *path, char **final, int *fd, bool *magic)
{
	char *cur = strdup(path);
	*fd = -1;
	*magic = false;
	for (int hops = 0; cur; hops++) {
		int n = fd_alias(cur);
		struct stat st;
		if (n >= 0) {
			*fd = n;
			free(cur);
			return 0;
		}
		/* /proc's links lead to open files, pipes and sockets, which may
		 * have no name to follow: the kernel opens them. */
		bool exists = lstat(cur, &st) == 0;
		if (!exists || !S_ISLNK(st.st_mode) || !strncmp(cur, "/proc/", 6)) {
			*final = cur;
			*magic = exists && S_ISLNK(st.st_mode);
			return 0;
		}
		char *dir = dir_of(cur);
		char target[PATH_MAX];
		ssize_t len = readlink(cur, target, sizeof(target) - 1);
		int e = errno;
		if (!dir || len < 0 || hops >= 40 || !link_trusted(dir, &st)) {
			int rc =
			    !dir ? strb_error(-ENOMEM, "out of memory opening %s", display)
			    : len < 0
			        ? strb_error(STROBE_E_IO, "cannot read the link %s: %s", cur, strerror(e))
			    : hops >= 40
			        ? strb_error(STROBE_E_IO, "cannot write %s: %s", display, strerror(ELOOP))
			        : strb_error(STROBE_E_IO,
			                     "cannot write %s: the link %s is in a shared sticky folder and "
			                     "belongs to someone else; not followed",
			                     display, cur);
			free(dir);
			free(cur);
			return rc;
		}
		target[len] = 0;
		free(cur);
		cur = NULL;
		if (target[0] == '/')
			cur = strdup(target);
		else if (asprintf(&cur, "%s/%s", dir, target) < 0)
			cur = NULL;
		free(dir);
	}
	return strb_error(-ENOMEM, "out of memory opening %s", display);
}

/* Opens what the save writes into directly: a descriptor alias, a device,
 * a FIFO or a file with more than one name. */
static int open_in_place(struct strb_sink *s, const char *file, int alias, bool truncate)
{
	if (alias >= 0)
		s->fd = fcntl(alias, F_DUPFD_CLOEXEC, 3);
	else
		s->fd = open(file, O_WRONLY | O_NOCTTY | O_CLOEXEC | (truncate ? O_TRUNC : 0));
	if (s->fd < 0)
		return strb_error(STROBE_E_IO, "cannot write %s: %s", s->path, strerror(errno));
	return 0;
}

static int open_target(struct strb_sink *s, const char *path)
{
	char *file = NULL;
	int alias;
	bool magic;
	int rc = resolve(path, path, &file, &alias, &magic);
	if (rc || alias >= 0)
		return rc ? rc : open_in_place(s, path, alias, false);
	if (magic) {
		rc = open_in_place(s, file, -1, true);
		free(file);
		return rc;
	}
	const char *slash = strrchr(file, '/');
	const char *name = slash ? slash + 1 : file;
	struct stat st;
	bool exists = lstat(file, &st) == 0;
	int e = errno;
	if (!*name)
		rc = strb_error(-EINVAL, "%s names a directory, not a file", path);
	else if (!exists && e != ENOENT)
		rc = strb_error(STROBE_E_IO, "cannot write %s: %s", path, strerror(e));
	else if (exists && S_ISDIR(st.st_mode))
		rc = strb_error(-EINVAL, "%s is a directory, not a file", path);
	else if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
		rc = open_in_place(s, file, -1, false);
	else if (exists && !S_ISREG(st.st_mode))
		rc = strb_error(-EINVAL, "%s is a %s; strobe writes files, character devices and FIFOs", path,
		                S_ISBLK(st.st_mode) ? "block device" : "socket");
	else if (exists && st.st_nlink > 1)
		rc = open_in_place(s, file, -1, true); /* every name keeps seeing the new trace */
	else if (exists && faccessat(AT_FDCWD, file, W_OK, AT_EACCESS) != 0)
		rc = strb_error(STROBE_E_IO, "cannot write %s: %s", path, strerror(errno));
	if (rc || s->fd >= 0) {
		free(file);
		return rc;
	}
	char *dir = dir_of(file);
	s->dirfd = dir ? open(dir, O_DIRECTORY | O_CLOEXEC) : -1;
	e = errno;
	free(dir);
	if (s->dirfd < 0)
		rc = strb_error(STROBE_E_IO, "cannot write %s: %s", path, strerror(e));
	else
		rc = create_temp(s, name, 0666, exists ? &st : NULL);
	if (rc == 1) {
		/* Another user's file we may write but not give away: write into it,
		 * as any program would. */
		unlinkat(s->dirfd, s->tmp, 0);
		close(s->fd);
		s->fd = -1;
		free(s->tmp);
		s->tmp = NULL;
		close(s->dirfd);
		s->dirfd = -1;
		rc = open_in_place(s, file, -1, true);
	}
	free(file);
	return rc;
}

int strb_sink_open(struct strb_sink **out, const char *path, enum strb_compress c, int level)
{
	*out = NULL;
	struct strb_sink *s = sink_new(path, c);
	if (!s)
		return strb_error(-ENOMEM, "out of memory opening %s", path);
	return opened(out, s, open_target(s, path), level);
}

static int write_all(struct strb_sink *s, const unsigned char *p, size_t n)
{
	while (n && !s->err) {
		ssize_t w = write(s->fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return fail(s, "cannot write", errno);
		}
		p += w;
		n -= (size_t)w;
	}
	return s->err;
}

static int deflate_some(struct strb_sink *s, const void *data, size_t n, int flush)
{
	s->z.next_in = (Bytef *)data;
	s->z.avail_in = (uInt)n;
	int rc;
	do {
		s->z.next_out = s->out;
		s->z.avail_out = OUT_CHUNK;
		rc = deflate(&s->z, flush);
		if (rc == Z_STREAM_ERROR)
			return fail(s, "gzip failed for", EIO);
		if (write_all(s, s->out, OUT_CHUNK - s->z.avail_out))
			return s->err;
	} while (s->z.avail_out == 0 || (flush == Z_FINISH && rc != Z_STREAM_END));
	return 0;
}

static int zstd_some(struct strb_sink *s, const void *data, size_t n, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = {data, n, 0};
	size_t left;
	do {
		ZSTD_outBuffer o = {s->out, OUT_CHUNK, 0};
		left = ZSTD_compressStream2(s->zstd, &o, &in, mode);
		if (ZSTD_isError(left))
			return fail(s, "zstd failed for", EIO);
		if (write_all(s, s->out, o.pos))
			return s->err;
	} while (mode == ZSTD_e_end ? left != 0 : in.pos < in.size);
	return 0;
}

int strb_sink_write(struct strb_sink *s, const void *data, size_t n)
{
	if (s->err)
		return s->err;
	/* Stay under zlib's 32-bit avail_in. */
	while (n) {
		size_t part = n > (1u << 30) ? (1u << 30) : n;
		int rc;
		if (s->compress == STRB_COMPRESS_GZIP)
			rc = deflate_some(s, data, part, Z_NO_FLUSH);
		else if (s->compress == STRB_COMPRESS_ZSTD)
			rc = zstd_some(s, data, part, ZSTD_e_continue);
		else
			rc = write_all(s, data, part);
		if (rc)
			return rc;
		data = (const char *)data + part;
		n -= part;
	}
	return 0;
}

int strb_sink_commit(struct strb_sink *s)
{
	if (!s->err) {
		if (s->compress == STRB_COMPRESS_GZIP)
			deflate_some(s, NULL, 0, Z_FINISH);
		else if (s->compress == STRB_COMPRESS_ZSTD)
			zstd_some(s, NULL, 0, ZSTD_e_end);
	}
	/* Devices and pipes cannot be flushed to disk (EINVAL, EROFS). */
	if (!s->err && fsync(s->fd) != 0 && errno != EINVAL && errno != EROFS)
		fail(s, "cannot flush", errno);
	if (close(s->fd) != 0 && !s->err)
		fail(s, "cannot close", errno);
	s->fd = -1;
	if (!s->err && !s->tmp) {
		/* Written in place: nothing to rename. */
	} else if (!s->err && s->exclusive) {
		/* link fails if the name appeared meanwhile: never replace a file. */
		if (linkat(s->dirfd, s->tmp, s->dirfd, s->name, 0) != 0)
			fail(s, "cannot create", errno);
		else
			unlinkat(s->dirfd, s->tmp, 0);
	} else if (!s->err && renameat(s->dirfd, s->tmp, s->dirfd, s->name) != 0) {
		fail(s, "cannot rename the temporary file to", errno);
	}
	int rc = s->err;
	if (rc) {
		strb_sink_abort(s);
		return rc;
	}
	free(s->tmp);
	s->tmp = NULL;
	strb_sink_abort(s);
	return 0;
}

void strb_sink_abort(struct strb_sink *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->tmp && s->dirfd >= 0)
		unlinkat(s->dirfd, s->tmp, 0);
	if (s->dirfd >= 0)
		close(s->dirfd);
	if (s->compress == STRB_COMPRESS_GZIP)
		deflateEnd(&s->z);
	ZSTD_freeCCtx(s->zstd);
	free(s->tmp);
	free(s->name);
	free(s->path);
	free(s);
}

bool strb_output_is_perfetto_path(const char *path)
{
	size_t n = strlen(path);
	static const char *const suffixes[] = {".pftrace", ".perfetto-trace"};
	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
		size_t m = strlen(suffixes[i]);
		if (n >= m && !strcmp(path + n - m, suffixes[i]))
			return true;
	}
	return false;
}

#define LOG_TAG "output"
#include "common/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/random.h>
#include <time.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "common/error.h"
#include "common/log.h"
#include "strobe/strobe.h"

#define OUT_CHUNK (256 * 1024)

struct strb_sink {
	int fd;
	int dirfd;      /* the directory both names live in */
	bool exclusive; /* never replace an existing file */
	enum strb_compress compress;
	z_stream z;
	ZSTD_CCtx *zstd;
	int err; /* first error status */
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

/* A temporary name beside the target that nobody else can predict. */
static void temp_name(char *out, size_t len, const char *name)
{
	unsigned char r[6];
	if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
		uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)out ^ (uint64_t)time(NULL);
		memcpy(r, &x, sizeof(r));
	}
	/* Keep within NAME_MAX however long the final name is. */
	snprintf(out, len, ".%.200s.tmp.%02x%02x%02x%02x%02x%02x", name, r[0], r[1], r[2], r[3], r[4], r[5]);
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
	}
	return 0;
}

int strb_sink_open_at(struct strb_sink **out, int dirfd, const char *name, const char *display,
		      enum strb_compress c, int level, mode_t mode, bool exclusive)
{
	*out = NULL;
	struct strb_sink *s = calloc(1, sizeof(*s));
	if (!s) {
		close(dirfd);
		return strb_error(-ENOMEM, "out of memory opening %s", display);
	}
	s->fd = -1;
	s->dirfd = dirfd;
	s->exclusive = exclusive;
	s->compress = c;
	s->path = strdup(display);
	s->name = strdup(name);
	s->tmp = malloc(strlen(name) + 32);
	if (!s->path || !s->name || !s->tmp) {
		strb_sink_abort(s);
		return strb_error(-ENOMEM, "out of memory opening %s", display);
	}
	if (exclusive && faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		int rc = strb_error(STROBE_E_IO, "%s already exists; on-demand traces never replace a file", display);
		free(s->tmp);
		s->tmp = NULL;
		strb_sink_abort(s);
		return rc;
	}
	/* A fresh unpredictable name per save: concurrent saves to one path
	 * cannot collide, and the last rename wins with a whole file. */
	temp_name(s->tmp, strlen(name) + 32, name);
	s->fd = openat(dirfd, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (s->fd < 0) {
		int e = errno;
		int rc = strb_error(STROBE_E_IO, "cannot create a file beside %s: %s", display, strerror(e));
		free(s->tmp);
		s->tmp = NULL; /* nothing to remove */
		strb_sink_abort(s);
		return rc;
	}
	int rc = start_compression(s, c, level);
	if (rc) {
		strb_sink_abort(s);
		return rc;
	}
	*out = s;
	return 0;
}

int strb_sink_open(struct strb_sink **out, const char *path, enum strb_compress c, int level)
{
	*out = NULL;
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	if (!*name)
		return strb_error(-EINVAL, "%s names a directory, not a file", path);
	char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
	if (!dir)
		return strb_error(-ENOMEM, "out of memory opening %s", path);
	int dirfd = open(dir, O_DIRECTORY | O_CLOEXEC);
	int e = errno;
	free(dir);
	if (dirfd < 0)
		return strb_error(STROBE_E_IO, "cannot write %s: %s", path, strerror(e));
	return strb_sink_open_at(out, dirfd, name, path, c, level, 0644, false);
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
	if (!s->err && fsync(s->fd) != 0 && errno != EINVAL)
		fail(s, "cannot flush", errno);
	if (close(s->fd) != 0 && !s->err)
		fail(s, "cannot close", errno);
	s->fd = -1;
	if (!s->err && s->exclusive) {
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

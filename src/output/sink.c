#define LOG_TAG "output"
#include "output/sink.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "core/error.h"
#include "core/log.h"
#include "strobe/strobe.h"

#define OUT_CHUNK (256 * 1024)

struct strb_sink {
	int fd;
	enum strb_compress compress;
	z_stream z;
	ZSTD_CCtx *zstd;
	int err; /* first error status */
	char *path, *tmp;
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

int strb_sink_open(struct strb_sink **out, const char *path, enum strb_compress c, int level)
{
	*out = NULL;
	struct strb_sink *s = calloc(1, sizeof(*s));
	if (!s)
		return strb_error(-ENOMEM, "out of memory opening %s", path);
	s->fd = -1;
	s->compress = c;
	s->path = strdup(path);
	s->tmp = malloc(strlen(path) + 32);
	if (!s->path || !s->tmp) {
		strb_sink_abort(s);
		return strb_error(-ENOMEM, "out of memory opening %s", path);
	}
	/* Unique per save, so concurrent saves to one path cannot collide; the
	 * last rename wins and every reader sees a whole file. */
	sprintf(s->tmp, "%s.tmp.XXXXXX", path);
	s->fd = mkostemp(s->tmp, O_CLOEXEC);
	if (s->fd >= 0)
		fchmod(s->fd, 0644);
	if (s->fd < 0) {
		int e = errno;
		int rc = strb_error(STROBE_E_IO, "cannot create %s: %s", s->tmp, strerror(e));
		free(s->tmp);
		s->tmp = NULL; /* nothing to remove */
		strb_sink_abort(s);
		return rc;
	}
	if (c == STRB_COMPRESS_GZIP) {
		level = level >= 0 ? level : env_level("STROBE_GZIP_LEVEL", 1, 0, 9);
		/* 15 + 16: a gzip wrapper, so `zcat` and every gzip reader take it. */
		if (deflateInit2(&s->z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
			strb_sink_abort(s);
			return strb_error(-ENOMEM, "cannot start gzip for %s", path);
		}
	} else if (c == STRB_COMPRESS_ZSTD) {
		level = level >= 0 ? level : env_level("STROBE_ZSTD_LEVEL", 3, 1, 19);
		s->zstd = ZSTD_createCCtx();
		if (!s->zstd || ZSTD_isError(ZSTD_CCtx_setParameter(s->zstd, ZSTD_c_compressionLevel, level))) {
			strb_sink_abort(s);
			return strb_error(-ENOMEM, "cannot start zstd for %s", path);
		}
	}
	*out = s;
	return 0;
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
	if (!s->err && rename(s->tmp, s->path) != 0)
		fail(s, "cannot rename the temporary file to", errno);
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
	if (s->tmp)
		unlink(s->tmp);
	if (s->compress == STRB_COMPRESS_GZIP)
		deflateEnd(&s->z);
	ZSTD_freeCCtx(s->zstd);
	free(s->tmp);
	free(s->path);
	free(s);
}

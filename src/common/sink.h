/* A trace file being written: buffered, optionally compressed, created
 * under a temporary name and renamed into place only when complete; or,
 * for what is not a plain file, written into directly
 * (docs/output-format.md, "Where a file is written"). */
#ifndef STROBE_COMMON_SINK_H
#define STROBE_COMMON_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum strb_compress {
	STRB_COMPRESS_NONE = 0,
	STRB_COMPRESS_GZIP,
	STRB_COMPRESS_ZSTD,
};

struct strb_sink;

/* By suffix: ".gz" gzip, ".zst" zstd, else none. */
enum strb_compress strb_compress_for_path(const char *path);
/* Whether a path names a Perfetto trace: ".pftrace" or ".perfetto-trace". */
bool strb_output_is_perfetto_path(const char *path);

/* Opens what path names for writing. A regular file (new, or replacing one,
 * whose owner and mode the new one keeps) is created under a temporary
 * name beside it, after removing temporary files that killed saves left
 * there; symlinks are followed; /dev/stdout, /dev/fd/N, character
 * devices, FIFOs and files with several names are written in place.
 * level < 0 = default (gzip: 1, or STROBE_GZIP_LEVEL; zstd: 3, or
 * STROBE_ZSTD_LEVEL). Returns 0 or STROBE_E_IO / -EINVAL (a directory,
 * block device or socket) / -ENOMEM with strobe_last_error set. */
int strb_sink_open(struct strb_sink **out, const char *path, enum strb_compress c, int level);
/* Threads a save may use to format and compress: STROBE_EXPORT_THREADS
 * (1 to STRB_EXPORT_THREADS_MAX), else half the CPUs this process may run
 * on, from 1 to 8. */
#define STRB_EXPORT_THREADS_MAX 64
int strb_export_threads(void);
/* The same, for `name` inside the open directory dirfd (the sink takes
 * ownership of dirfd and closes it, also on failure). The file gets `mode`; with exclusive,
 * an existing file of that name is an error and is never replaced.
 * display names the file in messages. Symlinks are not followed. */
int strb_sink_open_at(struct strb_sink **out, int dirfd, const char *name, const char *display,
                      enum strb_compress c, int level, mode_t mode, bool exclusive);
/* Returns 0 or STROBE_E_IO; after an error further writes do nothing. */
int strb_sink_write(struct strb_sink *s, const void *data, size_t n);
/* Flushes, closes and renames into place; frees s. On any error the
 * temporary file is removed and the target left as it was (what was
 * written in place stays as far as it got). */
int strb_sink_commit(struct strb_sink *s);
/* Removes the temporary file; frees s. NULL allowed. */
void strb_sink_abort(struct strb_sink *s);

#endif

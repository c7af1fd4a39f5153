/* Shared helpers for strobe's tests: files, commands, parsed traces. */
#ifndef STROBE_TESTUTIL_H
#define STROBE_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>
#include <yajl/yajl_tree.h>

/* 1 under AddressSanitizer or ThreadSanitizer: they keep freed memory and
 * fault in shadow pages, so RSS and page-fault counts say nothing there. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TU_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define TU_UNDER_SANITIZER 1
#endif
#endif
#ifndef TU_UNDER_SANITIZER
#define TU_UNDER_SANITIZER 0
#endif
/* 1 under ThreadSanitizer, which cannot start threads in the child of a
 * process that has some. */
#if defined(__SANITIZE_THREAD__)
#define TU_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TU_UNDER_TSAN 1
#endif
#endif
#ifndef TU_UNDER_TSAN
#define TU_UNDER_TSAN 0
#endif

/* Reads a whole file, decompressing .gz and .zst by content. NUL-terminated;
 * *len (if non-NULL) excludes the NUL. NULL when it cannot be read. */
char *tu_read_file(const char *path, size_t *len);
/* Writes text to path; returns 0 or -1. */
int tu_write_file(const char *path, const char *text);
/* A fresh directory under $TMPDIR (or /tmp), removed by tu_rmdir. The
 * returned string is static per call site: copy it if you need two. */
char *tu_mkdtemp(void);
void tu_rmrf(const char *path);

/* cmocka group fixtures for tests of the library: strobe_init and a fresh
 * directory in tu_dir; teardown removes it and calls strobe_shutdown. */
extern char tu_dir[1024];
int tu_strobe_group_setup(void **state);
int tu_strobe_group_teardown(void **state);
/* A flight recorder test's teardown: one whose assertion failed left the
 * recorder running, which would refuse every test after it; it is
 * stopped here (nothing happens when the test stopped it). */
int tu_flight_off(void **state);
/* A flight recorder test's newest work and its dump: record(arg) records
 * the work, asks for a dump and returns its trace; found(root, arg) says
 * whether the work is in it. With op non-NULL the work runs under a
 * strobe_op_push of that name, left open, its id in *op_id. A loaded
 * sanitizer build can stall the test for longer than the dump's window
 * between the work and the dump (ThreadSanitizer stops every thread to
 * reset its shadow memory), which leaves the work outside the window:
 * then, and only then, it is recorded again (under a new op), up to 5
 * times. Returns the last trace; when the work is missing from it, stderr
 * says how long work and dump took. */
yajl_val tu_flight_newest(uint64_t window_ns, const char *op, uint64_t *op_id, yajl_val (*record)(void *arg),
                          bool (*found)(yajl_val root, void *arg), void *arg);

/* strobe_record of `extra` with this type, name, start and duration; fails
 * the test if it is refused. */
struct strobe_activity;
void tu_record_at(const char *name, int type, int64_t start, int64_t dur, struct strobe_activity extra);

/* Runs a shell command; captures stdout (and stderr if merge_stderr) into a
 * malloc'ed string (*out, may be NULL). Returns the exit status, or 128+sig. */
/* The next number of a xorshift64 sequence (state must start non-zero):
 * random test inputs that are the same on every run. */
static inline uint64_t tu_xorshift(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/* Fails the test, showing text (its first 6000 bytes), unless it holds
 * needle. text may be NULL. */
void tu_assert_contains(const char *text, const char *needle);

/* snprintf into an array that fails the test when the text does not fit,
 * so a long TMPDIR or build path is an error, not a silently cut command. */
#define TU_FORMAT(array, ...)                                                                                \
	do {                                                                                                 \
		int tu_n_ = snprintf((array), sizeof(array), __VA_ARGS__);                                   \
		if (tu_n_ < 0 || (size_t)tu_n_ >= sizeof(array))                                             \
			fail_msg("%s:%d: text does not fit %s", __FILE__, __LINE__, #array);                 \
	} while (0)
/* The whole line of text that holds needle, malloc'd; fails the test when
 * there is none. */
char *tu_line_with(const char *text, const char *needle);
/* The line of text that holds needle must hold want too (fails the test
 * otherwise, naming both). */
void tu_assert_line(const char *text, const char *needle, const char *want);
int tu_run(const char *cmd, int merge_stderr, char **out);
/* tu_run of "strobe COMMAND ARGS" (the built strobe command; ARGS is shell
 * text, quoted by the caller). */
int tu_strobe(const char *command, const char *args, int merge_stderr, char **out);

/* Parses a trace file (plain, .gz, .zst); fails the test if it is not valid
 * JSON. Free with yajl_tree_free. */
yajl_val tu_load_trace(const char *path);
/* Parses JSON text; NULL if it does not parse. */
yajl_val tu_parse_json(const char *text);

/* Object member access (NULL when absent or not an object). */
yajl_val tu_get(yajl_val obj, const char *key);
const char *tu_get_str(yajl_val obj, const char *key);
/* Number member as double; fails the test if absent. */
double tu_get_num(yajl_val obj, const char *key);
/* The traceEvents array. */
yajl_val tu_events(yajl_val root);
/* Counts events matching ph (NULL = any), cat (NULL = any), name (NULL = any). */
size_t tu_count(yajl_val root, const char *ph, const char *cat, const char *name);
/* The first event matching, or NULL. */
yajl_val tu_find(yajl_val root, const char *ph, const char *cat, const char *name);

/* A ts/dur member (microseconds written with exactly three decimals) as
 * exact integer ns, read from the number's text; fails the test if the
 * member is missing or not in that form. */
int64_t tu_get_ns(yajl_val obj, const char *key);

#endif

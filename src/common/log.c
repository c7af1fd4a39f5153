#define LOG_TAG "log"
#include "common/log.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_OBSERVERS 16

struct observer {
	strobe_log_cb cb;
	void *user_arg;
};

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static struct observer observers[MAX_OBSERVERS];
static int observer_count;
static atomic_int threshold = STROBE_LOG_WARNING;

static const char *level_name(enum strobe_log_level level)
{
	static const char *names[] = {"VERBOSE", "INFO", "WARNING", "STAGE", "ERROR"};
	return (unsigned)level < 5 ? names[level] : "???";
}

void strb_log_init_from_env(void)
{
	const char *v = getenv("STROBE_LOG_LEVEL");
	if (!v || !*v)
		v = getenv("KINETO_LOG_LEVEL");
	if (!v || !*v)
		return;
	char *end;
	errno = 0;
	long level = strtol(v, &end, 10);
	if (errno || end == v || *end || level < INT_MIN || level > INT_MAX) {
		/* The threshold stays as it was; say so where it can be seen. */
		strb_log(
		    STROBE_LOG_WARNING, "log",
		    "STROBE_LOG_LEVEL/KINETO_LOG_LEVEL '%.40s' is not an integer (0 verbose .. 4 error); "
		    "keeping the current level",
		    v);
		return;
	}
	atomic_store(&threshold, (int)level);
}

void strobe_log_set_level(enum strobe_log_level level)
{
	atomic_store(&threshold, (int)level);
}

/* VERBOSE_LOG_MODULES: the tags whose verbose messages are shown, as
 * ",tag,tag," for a whole-word search; empty = every tag. */
static char verbose_modules[1024];

void strb_log_set_verbose_modules(const char *list)
{
	char buf[sizeof(verbose_modules)];
	size_t n = 0;
	buf[n++] = ',';
	for (const char *p = list ? list : ""; *p && n < sizeof(buf) - 2;) {
		size_t len = strcspn(p, ", \t");
		/* A file name names its module: "cupti.c" is "cupti". */
		size_t tag = len > 2 && !strncmp(p + len - 2, ".c", 2) ? len - 2 : len;
		if (tag && n + tag + 1 < sizeof(buf) - 1) {
			memcpy(buf + n, p, tag);
			n += tag;
			buf[n++] = ',';
		}
		p += len;
		p += strspn(p, ", \t");
	}
	buf[n] = 0;
	pthread_mutex_lock(&log_lock);
	snprintf(verbose_modules, sizeof(verbose_modules), "%s", n > 1 ? buf : "");
	pthread_mutex_unlock(&log_lock);
}

static bool verbose_module_on(const char *tag)
{
	char key[96];
	snprintf(key, sizeof(key), ",%s,", tag);
	pthread_mutex_lock(&log_lock);
	bool on = !verbose_modules[0] || strstr(verbose_modules, key);
	pthread_mutex_unlock(&log_lock);
	return on;
}

bool strb_log_enabled(enum strobe_log_level level)
{
	return (int)level >= atomic_load_explicit(&threshold, memory_order_relaxed);
}

void strb_log(enum strobe_log_level level, const char *tag, const char *fmt, ...)
{
	if (!strb_log_enabled(level) || (level == STROBE_LOG_VERBOSE && !verbose_module_on(tag)))
		return;
	int saved_errno = errno;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &tm);

	pthread_mutex_lock(&log_lock);
	for (int i = 0; i < observer_count; i++)
		observers[i].cb(level, msg, observers[i].user_arg);
	pthread_mutex_unlock(&log_lock);
	/* One write per line so lines from several threads do not interleave. */
	char line[1200];
	int n = snprintf(line, sizeof(line), "strobe %s:%s %d:%ld %s] %s\n", level_name(level), stamp,
	                 (int)getpid(), (long)syscall(SYS_gettid), tag, msg);
	if (n > (int)sizeof(line) - 1)
		n = (int)sizeof(line) - 1;
	ssize_t w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
	errno = saved_errno;
}

int strobe_log_add_observer(strobe_log_cb cb, void *user_arg)
{
	if (!cb)
		return -EINVAL;
	int rc = 0;
	pthread_mutex_lock(&log_lock);
	for (int i = 0; i < observer_count; i++)
		if (observers[i].cb == cb && observers[i].user_arg == user_arg)
			rc = -EEXIST;
	if (!rc && observer_count == MAX_OBSERVERS)
		rc = -ENOSPC;
	if (!rc)
		observers[observer_count++] = (struct observer){cb, user_arg};
	pthread_mutex_unlock(&log_lock);
	return rc;
}

int strobe_log_remove_observer(strobe_log_cb cb, void *user_arg)
{
	int rc = -ENOENT;
	pthread_mutex_lock(&log_lock);
	for (int i = 0; i < observer_count; i++) {
		if (observers[i].cb == cb && observers[i].user_arg == user_arg) {
			memmove(&observers[i], &observers[i + 1],
			        (size_t)(observer_count - i - 1) * sizeof(observers[0]));
			observer_count--;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&log_lock);
	return rc;
}

void strb_log_atfork_child(void)
{
	pthread_mutex_init(&log_lock, NULL);
}

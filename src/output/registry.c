/* Output writers by URL protocol, and strobe_trace_save. */
#define LOG_TAG "output"
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/sink.h"
#include "output/output.h"

#define MAX_WRITERS  32
#define PROTOCOL_MAX 32

struct writer_entry {
	char protocol[PROTOCOL_MAX]; /* lower case */
	const struct strobe_output_ops *ops;
	void *user_arg;
};

static const struct strobe_output_ops file_ops = {.size = sizeof(file_ops), .write = strb_file_write};
static const struct strobe_output_ops perfetto_ops = {.size = sizeof(perfetto_ops),
                                                      .write = strb_perfetto_write};

/* Built-ins are consulted after what programs registered, so replacing one
 * and unregistering the replacement brings it back. */
static const struct writer_entry builtins[] = {
    {"file", &file_ops, NULL},
    {"perfetto", &perfetto_ops, NULL},
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct writer_entry registered[MAX_WRITERS];
static int registered_count;

void strb_output_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
}

/* Lower-cases a protocol into out; false if it is empty, too long or has
 * characters a URL scheme cannot have. */
static bool normalise(const char *p, size_t len, char out[PROTOCOL_MAX])
{
	if (!len || len >= PROTOCOL_MAX || !isalpha((unsigned char)p[0]))
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if (!isalnum(c) && c != '+' && c != '-' && c != '.')
			return false;
		out[i] = (char)tolower(c);
	}
	out[len] = 0;
	return true;
}

int strobe_register_output(const char *protocol, const struct strobe_output_ops *ops, void *user_arg)
{
	char name[PROTOCOL_MAX];
	if (!protocol || !normalise(protocol, strlen(protocol), name))
		return strb_error(-EINVAL, "strobe_register_output: \"%s\" is not a valid protocol name",
		                  protocol ? protocol : "(null)");
	if (!STRB_OPTS_GET(ops, write, NULL))
		return strb_error(-EINVAL, "strobe_register_output: ops is NULL, too small or has no write");
	int rc = 0;
	pthread_mutex_lock(&lock);
	int i;
	for (i = 0; i < registered_count && strcmp(registered[i].protocol, name); i++)
		;
	if (i < registered_count) {
		LOGW("replacing the output writer for protocol %s", name);
	} else if (registered_count == MAX_WRITERS) {
		rc = strb_error(-ENOSPC, "strobe_register_output: %d writers are registered already",
		                MAX_WRITERS);
		goto out;
	} else {
		for (size_t j = 0; j < sizeof(builtins) / sizeof(builtins[0]); j++)
			if (!strcmp(builtins[j].protocol, name))
				LOGW("replacing the built-in output writer for protocol %s", name);
		registered_count++;
	}
	memcpy(registered[i].protocol, name, sizeof(name));
	registered[i].ops = ops;
	registered[i].user_arg = user_arg;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

int strobe_unregister_output(const char *protocol)
{
	char name[PROTOCOL_MAX];
	if (!protocol || !normalise(protocol, strlen(protocol), name))
		return strb_error(-EINVAL, "strobe_unregister_output: invalid protocol");
	int rc = -ENOENT;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < registered_count; i++) {
		if (!strcmp(registered[i].protocol, name)) {
			memmove(&registered[i], &registered[i + 1],
			        (size_t)(registered_count - i - 1) * sizeof(registered[0]));
			registered_count--;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return rc ? strb_error(rc, "strobe_unregister_output: no writer registered for \"%s\"", name) : 0;
}

int strb_file_write(const strobe_trace *trace, const char *path, void *user_arg)
{
	if (strb_output_is_perfetto_path(path))
		return strb_perfetto_write(trace, path, user_arg);
	return strb_json_write(trace, path, user_arg);
}

int strb_file_write_sink(const strobe_trace *trace, struct strb_sink *sink, const char *path)
{
	if (strb_output_is_perfetto_path(path))
		return strb_perfetto_write_sink(trace, sink, path);
	return strb_json_write_sink(trace, sink, path);
}

static bool lookup(const char *name, struct writer_entry *out)
{
	bool found = false;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < registered_count && !found; i++)
		if (!strcmp(registered[i].protocol, name))
			*out = registered[i], found = true;
	pthread_mutex_unlock(&lock);
	for (size_t j = 0; j < sizeof(builtins) / sizeof(builtins[0]) && !found; j++)
		if (!strcmp(builtins[j].protocol, name))
			*out = builtins[j], found = true;
	return found;
}

int strobe_trace_save(const strobe_trace *trace, const char *url)
{
	if (!trace || !url || !*url)
		return strb_error(-EINVAL, "strobe_trace_save: trace or URL is NULL or empty");
	const char *sep = strstr(url, "://");
	char name[PROTOCOL_MAX] = "file";
	const char *location = url;
	if (sep) {
		if (!normalise(url, (size_t)(sep - url), name))
			return strb_error(-EINVAL, "strobe_trace_save: \"%.*s\" is not a valid protocol",
			                  (int)(sep - url), url);
		location = sep + 3;
	}
	if (!*location)
		return strb_error(-EINVAL, "strobe_trace_save: URL \"%s\" names no location", url);
	struct writer_entry w = {0}; /* gcc -Os cannot see that lookup fills it when it returns true */
	if (!lookup(name, &w))
		return strb_error(STROBE_E_NO_WRITER,
		                  "strobe_trace_save: no output writer for the %s protocol", name);
	return w.ops->write(trace, location, w.user_arg);
}

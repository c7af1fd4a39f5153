#include "core/metadata.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/json_check.h"

struct entry {
	char *key;
	struct strobe_arg value; /* str points into owned memory */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static size_t count, cap;

static void free_entry(struct entry *e)
{
	free(e->key);
	if (e->value.kind == STROBE_ARG_STRING || e->value.kind == STROBE_ARG_JSON)
		free((char *)e->value.value.str);
}

/* Top-level keys the trace writes itself: a second one would make the
 * file ambiguous (readers keep either). "distributedInfo" is not among
 * them: the program's replaces the generated one, as in libkineto. */
static const char *const reserved[] = {
    "schemaVersion", "deviceProperties", "displayTimeUnit", "baseTimeNanoseconds",
    "traceEvents",   "traceName",        "strobe"};

static int set(const char *key, struct strobe_arg value)
{
	if (!key || !*key)
		return strb_error(-EINVAL, "metadata key is NULL or empty");
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++)
		if (!strcmp(key, reserved[i]))
			return strb_error(
			    -EINVAL, "metadata key \"%s\" is one the trace writes itself; use another name",
			    key);
	char *k = strdup(key);
	char *s = NULL;
	if (value.kind == STROBE_ARG_STRING || value.kind == STROBE_ARG_JSON) {
		s = strdup(value.value.str);
		value.value.str = s;
	}
	if (!k || ((value.kind == STROBE_ARG_STRING || value.kind == STROBE_ARG_JSON) && !s)) {
		free(k);
		free(s);
		return strb_error(-ENOMEM, "out of memory storing metadata \"%s\"", key);
	}
	value.key = k;
	int rc = 0;
	pthread_mutex_lock(&lock);
	size_t i;
	for (i = 0; i < count && strcmp(entries[i].key, key); i++)
		;
	if (i < count) {
		free_entry(&entries[i]);
	} else if (count == cap) {
		size_t ncap = cap ? cap * 2 : 16;
		struct entry *n = realloc(entries, ncap * sizeof(*n));
		if (!n) {
			rc = strb_error(-ENOMEM, "out of memory storing metadata \"%s\"", key);
			free(k);
			free(s);
			goto out;
		}
		entries = n;
		cap = ncap;
	}
	entries[i] = (struct entry){k, value};
	if (i == count)
		count++;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

int strobe_metadata_set_string(const char *key, const char *value)
{
	if (!value)
		return strb_error(-EINVAL, "metadata \"%s\": value is NULL", key ? key : "");
	return set(key, (struct strobe_arg){.kind = STROBE_ARG_STRING, .value.str = value});
}

int strobe_metadata_set_int(const char *key, int64_t value)
{
	return set(key, (struct strobe_arg){.kind = STROBE_ARG_I64, .value.i64 = value});
}

int strobe_metadata_set_double(const char *key, double value)
{
	return set(key, (struct strobe_arg){.kind = STROBE_ARG_F64, .value.f64 = value});
}

int strobe_metadata_set_json(const char *key, const char *json)
{
	if (!json)
		return strb_error(-EINVAL, "metadata \"%s\": value is NULL", key ? key : "");
	if (!strb_json_valid(json))
		return strb_error(STROBE_E_BAD_JSON, "metadata \"%s\": value is not one valid JSON value",
		                  key ? key : "");
	return set(key, (struct strobe_arg){.kind = STROBE_ARG_JSON, .value.str = json});
}

int strobe_metadata_remove(const char *key)
{
	if (!key)
		return strb_error(-EINVAL, "metadata key is NULL");
	int rc = -ENOENT;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count; i++) {
		if (!strcmp(entries[i].key, key)) {
			free_entry(&entries[i]);
			memmove(&entries[i], &entries[i + 1], (count - i - 1) * sizeof(*entries));
			count--;
			rc = 0;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	return rc == 0 ? 0 : strb_error(rc, "metadata \"%s\" was not set", key);
}

void strb_metadata_foreach(strobe_metadata_cb fn, void *arg)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count; i++)
		if (fn(&entries[i].value, arg))
			break;
	pthread_mutex_unlock(&lock);
}

void strb_metadata_clear(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count; i++)
		free_entry(&entries[i]);
	free(entries);
	entries = NULL;
	count = cap = 0;
	pthread_mutex_unlock(&lock);
}

void strb_metadata_atfork_child(void)
{
	pthread_mutex_init(&lock, NULL);
}

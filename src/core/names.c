#define LOG_TAG "names"
#include "core/names.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "core/tbuf.h"

struct named {
	uint32_t domain;
	uint64_t key; /* category id or tid */
	char *name;
};

/* Small tables searched linearly: programs name a handful of domains and
 * categories, and thread names are looked up once per thread per trace. */
struct table {
	struct named *items;
	size_t n, cap, max;
};

#define CATEGORIES_MAX 4096
#define THREADS_MAX    65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *domains[STRB_DOMAINS_MAX];
static uint32_t domain_count = 1; /* 0 is the default domain */
static struct table categories = {.max = CATEGORIES_MAX};
static struct table threads = {.max = THREADS_MAX};

uint32_t strb_domain_register(const char *name)
{
	if (!name || !*name)
		return 0;
	uint32_t d = 0;
	pthread_mutex_lock(&lock);
	for (uint32_t i = 1; i < domain_count; i++)
		if (!strcmp(domains[i], name)) {
			d = i;
			goto out;
		}
	if (domain_count == STRB_DOMAINS_MAX) {
		LOGW("more than %d annotation domains; '%s' is recorded in the default domain",
		     STRB_DOMAINS_MAX - 1, name);
		goto out;
	}
	domains[domain_count] = strdup(name);
	if (domains[domain_count])
		d = domain_count++;
out:
	pthread_mutex_unlock(&lock);
	return d;
}

bool strb_domain_name(uint32_t domain, char *out, size_t len)
{
	bool found = false;
	pthread_mutex_lock(&lock);
	if (domain > 0 && domain < domain_count) {
		snprintf(out, len, "%s", domains[domain]);
		found = true;
	}
	pthread_mutex_unlock(&lock);
	return found;
}

static struct named *find(struct table *t, uint32_t domain, uint64_t key)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->items[i].domain == domain && t->items[i].key == key)
			return &t->items[i];
	return NULL;
}

static void set(struct table *t, const char *what, uint32_t domain, uint64_t key, const char *name)
{
	if (!name)
		return;
	char *copy = strdup(name);
	if (!copy)
		return;
	pthread_mutex_lock(&lock);
	struct named *e = find(t, domain, key);
	if (!e && t->n == t->cap && t->cap < t->max) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct named *items = realloc(t->items, cap * sizeof(*items));
		if (items) {
			t->items = items;
			t->cap = cap;
		}
	}
	if (!e && t->n < t->cap) {
		e = &t->items[t->n++];
		*e = (struct named){.domain = domain, .key = key};
	}
	if (e) {
		free(e->name);
		e->name = copy;
		copy = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (copy) {
		LOGW("too many %s names; '%s' is not kept", what, name);
		free(copy);
	}
}

static bool get(struct table *t, uint32_t domain, uint64_t key, char *out, size_t len)
{
	pthread_mutex_lock(&lock);
	struct named *e = find(t, domain, key);
	if (e)
		snprintf(out, len, "%s", e->name);
	pthread_mutex_unlock(&lock);
	return e != NULL;
}

void strb_category_set(uint32_t domain, uint32_t id, const char *name)
{
	set(&categories, "category", domain, id, name);
}

bool strb_category_name(uint32_t domain, uint32_t id, char *out, size_t len)
{
	return get(&categories, domain, id, out, len);
}

void strb_thread_name_by_tid(pid_t tid, const char *name)
{
	set(&threads, "thread", 0, (uint64_t)tid, name);
}

bool strb_thread_name_lookup(pid_t tid, char *out, size_t len)
{
	return get(&threads, 0, (uint64_t)tid, out, len);
}

void strb_names_atfork_child(void)
{
	/* Domains and categories stay valid in the child (its code holds their
	 * handles); the parent's threads do not exist there. */
	pthread_mutex_init(&lock, NULL);
	for (size_t i = 0; i < threads.n; i++)
		free(threads.items[i].name);
	threads.n = 0;
}

/* Copies the name at src into out (STRB_RAW_DOMAIN_NAME bytes, zeroed by
 * the caller) a page at a time, so that a short name next to an unmapped
 * page still reads; what cannot be read ends it. */
static void peek_name(char *out, const char *src)
{
	size_t got = 0, most = STRB_RAW_DOMAIN_NAME - 1;
	while (got < most) {
		size_t page = 4096 - ((uintptr_t)(src + got) & 4095),
		       n = most - got < page ? most - got : page;
		if (!strb_raw_peek(out + got, src + got, n)) {
			out[got] = 0;
			return;
		}
		if (memchr(out + got, 0, n))
			return;
		got += n;
	}
	out[most] = 0;
}

int strb_domains_write_raw(int fd)
{
	static char name[STRB_RAW_DOMAIN_NAME];
	struct strb_raw_domains h = {.magic = STRB_RAW_DOMAINS_MAGIC,
	                             .count = __atomic_load_n(&domain_count, __ATOMIC_RELAXED)};
	if (h.count > STRB_DOMAINS_MAX)
		h.count = STRB_DOMAINS_MAX;
	if (strb_raw_write(fd, &h, sizeof(h)) < 0)
		return -1;
	for (uint32_t d = 0; d < h.count; d++) {
		memset(name, 0, sizeof(name));
		char *src = __atomic_load_n(&domains[d], __ATOMIC_RELAXED);
		if (d && src)
			peek_name(name, src);
		if (strb_raw_write(fd, name, sizeof(name)) < 0)
			return -1;
	}
	return 0;
}

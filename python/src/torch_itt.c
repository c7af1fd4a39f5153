/* PyTorch's ops through its ITT hooks: the extension as an ITT collector.
 *
 * PyTorch reports every op it dispatches (and every record_function scope)
 * to Intel's ITT API while torch.autograd.profiler.emit_itt() is on: a
 * RecordFunction callback in C++ calls __itt_string_handle_create(name),
 * __itt_task_begin and __itt_task_end of the ittnotify copy linked into
 * libtorch_cpu. ittnotify loads the collector named by INTEL_LIBITTNOTIFY64
 * (strobe/__init__.py points it at this extension before torch is imported)
 * at the first task and calls its __itt_api_init with ittnotify's global
 * table, where the collector puts its own functions. Here a task of the
 * "PyTorch" domain becomes a cpu_op (strobe_op_push: an External id, and
 * GPU work launched inside links to it); tasks of other domains (oneDNN's,
 * say, when it is built with ITT) are left out. Per op this costs
 * PyTorch's callback, a cached name lookup and strobe's op push and pop;
 * no Python runs.
 *
 * The structures are ittnotify's collector ABI (ittnotify_config.h, packed
 * to 8 bytes, which is their natural alignment on LP64): the global table
 * is checked by its magic before its function list is touched. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strobe/strobe.h"
#include "torch_itt.h"

struct itt_domain {
	volatile int flags;
	const char *name;
	void *name_w;
	int extra1;
	void *extra2;
	struct itt_domain *next;
};

struct itt_string_handle {
	const char *str;
	void *str_w;
	int extra1;
	void *extra2;
	struct itt_string_handle *next;
};

struct itt_id {
	unsigned long long d1, d2, d3;
};

struct itt_api_info {
	const char *name;
	void **func_ptr;
	void *init_func;
	void *null_func;
	int group;
};

struct itt_global {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	struct itt_api_info *api_list_ptr;
};

#define ITT_EXPORT __attribute__((visibility("default")))

ITT_EXPORT void __itt_api_init(struct itt_global *global, int groups);
ITT_EXPORT struct itt_string_handle *__itt_string_handle_create(const char *name);
ITT_EXPORT void __itt_task_begin(const struct itt_domain *domain, struct itt_id id, struct itt_id parent,
                                 struct itt_string_handle *name);
ITT_EXPORT void __itt_task_end(const struct itt_domain *domain);

/* ---- string handles: interned names, never freed (ITT's contract) ------- */

#define INTERN_BUCKETS 1024 /* a power of two */
#define BY_ADDR_SLOTS  1024 /* a power of two */

static struct itt_string_handle *interned[INTERN_BUCKETS];
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;

/* Handles by the address of the name last looked up there: PyTorch passes
 * each op's name from its schema, whose address does not change. A hit is
 * confirmed by comparing the text, as an address may be reused; handles
 * are never freed, so a racing reader sees an old one or a new one. (Not
 * per thread: a dlopened module's thread-local storage may take the static
 * TLS that libstrobe needs.) */
static _Atomic(struct itt_string_handle *) by_addr[BY_ADDR_SLOTS];

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct itt_string_handle *intern(const char *name)
{
	struct itt_string_handle **bucket = &interned[name_hash(name) & (INTERN_BUCKETS - 1)], *h;
	pthread_mutex_lock(&intern_lock);
	for (h = *bucket; h && strcmp(h->str, name); h = h->next)
		;
	if (!h && (h = calloc(1, sizeof(*h)))) {
		if ((h->str = strdup(name))) {
			h->next = *bucket;
			*bucket = h;
		} else {
			free(h);
			h = NULL;
		}
	}
	pthread_mutex_unlock(&intern_lock);
	return h;
}

struct itt_string_handle *__itt_string_handle_create(const char *name)
{
	if (!name)
		return NULL;
	_Atomic(struct itt_string_handle *) *slot = &by_addr[((uintptr_t)name >> 3) & (BY_ADDR_SLOTS - 1)];
	struct itt_string_handle *h = atomic_load_explicit(slot, memory_order_acquire);
	if (h && !strcmp(h->str, name))
		return h;
	if ((h = intern(name)))
		atomic_store_explicit(slot, h, memory_order_release);
	return h;
}

/* ---- tasks -------------------------------------------------------------- */

static _Atomic(const struct itt_domain *) torch_domain;
static atomic_bool seen; /* a PyTorch task came here */

static bool is_torch(const struct itt_domain *d)
{
	if (d == atomic_load_explicit(&torch_domain, memory_order_relaxed))
		return d != NULL;
	if (!d || !d->name || strcmp(d->name, "PyTorch"))
		return false;
	atomic_store_explicit(&torch_domain, d, memory_order_relaxed);
	return true;
}

void __itt_task_begin(const struct itt_domain *domain, struct itt_id id, struct itt_id parent,
                      struct itt_string_handle *name)
{
	(void)id, (void)parent;
	if (!is_torch(domain))
		return;
	if (!atomic_load_explicit(&seen, memory_order_relaxed))
		atomic_store_explicit(&seen, true, memory_order_relaxed);
	(void)strobe_op_push(name && name->str ? name->str : "<unnamed>");
}

void __itt_task_end(const struct itt_domain *domain)
{
	if (is_torch(domain))
		strobe_op_pop();
}

static const unsigned char itt_magic[8] = {0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30};

void __itt_api_init(struct itt_global *global, int groups)
{
	(void)groups;
	if (!global || memcmp(global->magic, itt_magic, sizeof(itt_magic)) || global->version_major != 3)
		return; /* not an ittnotify this file knows: its calls stay no-ops, and trace() falls back */
	for (struct itt_api_info *api = global->api_list_ptr; api && api->name; api++) {
		void *fn = !strcmp(api->name, "__itt_string_handle_create")
		               ? (void *)__itt_string_handle_create
		           : !strcmp(api->name, "__itt_task_begin") ? (void *)__itt_task_begin
		           : !strcmp(api->name, "__itt_task_end")   ? (void *)__itt_task_end
		                                                    : NULL;
		if (fn && api->func_ptr)
			*api->func_ptr = fn;
	}
}

/* ---- Python ------------------------------------------------------------- */

static PyObject *py_itt_seen(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	return PyBool_FromLong(atomic_load(&seen));
}

PyMethodDef torch_itt_methods[] = {
    {"_itt_seen", py_itt_seen, METH_NOARGS, "_itt_seen() -> a PyTorch ITT task reached this collector"},
    {NULL, NULL, 0, NULL},
};

#define LOG_TAG "capture"
#include "core/tbuf.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/log.h"
#include "core/capture.h"

#define CLAIM_BYTES  (64 * 1024)
#define MIN_RESERVE  (1 << 20)
#define RETAIN_BYTES (16u << 20) /* per thread, between traces */

uint32_t strobe_internal_session;
__thread struct strb_tbuf *strb_tls_buf;
/* The name given with strobe_thread_set_name, kept even when not tracing. */
static __thread char tls_thread_name[STRB_THREAD_NAME_MAX];

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strb_tbuf *registry;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static _Atomic int64_t budget_total = 256ll << 20;
static _Atomic int64_t budget_left = 256ll << 20;

/* The registry frees a dead thread's buffer after its events are
 * processed; one that shutdown already took off the registry is ours to
 * free. Later destructors of this thread must not record into it. */
static void on_thread_exit(void *p)
{
	struct strb_tbuf *b = p;
	strb_tls_buf = NULL;
	pthread_mutex_lock(&registry_lock);
	bool orphan = !b->registered;
	if (!orphan)
		atomic_store(&b->dead, true);
	pthread_mutex_unlock(&registry_lock);
	if (orphan) {
		if (b->base)
			munmap(b->base, b->reserve);
		free(b);
	}
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

void strb_tbuf_set_budget(int64_t bytes)
{
	atomic_store(&budget_total, bytes);
	atomic_store(&budget_left, bytes);
}

int64_t strb_tbuf_budget_used(void)
{
	return atomic_load(&budget_total) - atomic_load(&budget_left);
}

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static bool map_reserve(struct strb_tbuf *b, size_t want)
{
	if (b->reserve >= want)
		return true;
	if (b->base)
		munmap(b->base, b->reserve);
	void *p =
	    mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		b->base = NULL;
		b->reserve = 0;
		return false;
	}
	b->base = p;
	b->reserve = want;
	return true;
}

struct strb_tbuf *strb_tbuf_attach(uint32_t session)
{
	struct strb_tbuf *b = strb_tls_buf;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return NULL;
		b->tid = (pid_t)syscall(SYS_gettid);
		pthread_once(&exit_key_once, make_exit_key);
		pthread_setspecific(exit_key, b);
	}
	size_t want = round_up((size_t)atomic_load(&budget_total), CLAIM_BYTES);
	if (want < MIN_RESERVE)
		want = MIN_RESERVE;

	pthread_mutex_lock(&registry_lock);
	bool ok = map_reserve(b, want);
	b->session = session;
	b->head = 0;
	b->limit = 0;
	b->exhausted = false;
	b->pop_room = 0;
	b->released = 0;
	memset(b->open, 0, sizeof(b->open));
	memset(b->skip, 0, sizeof(b->skip));
	atomic_store_explicit(&b->dropped, 0, memory_order_relaxed);
	atomic_store_explicit(&b->truncated, 0, memory_order_relaxed);
	atomic_store_explicit(&b->published, 0, memory_order_relaxed);
	if (tls_thread_name[0])
		memcpy(b->name, tls_thread_name, sizeof(b->name));
	else if (prctl(PR_GET_NAME, b->name, 0, 0, 0) != 0)
		b->name[0] = 0;
	if (!b->registered) {
		b->next = registry;
		registry = b;
		b->registered = true;
	}
	pthread_mutex_unlock(&registry_lock);
	strb_tls_buf = b;
	if (!ok) {
		LOGE("cannot reserve %zu bytes for a capture buffer; this thread's events are dropped", want);
		strb_tbuf_count(&b->dropped);
		return NULL;
	}
	return b;
}

void *strb_tbuf_grow(struct strb_tbuf *b, size_t n, size_t keep)
{
	size_t need = b->head + n + keep + b->pop_room;
	if (b->base && !b->exhausted && need <= b->reserve) {
		size_t claim = round_up(need - b->limit, CLAIM_BYTES);
		if (b->limit + claim > b->reserve)
			claim = b->reserve - b->limit;
		int64_t prev = atomic_fetch_sub_explicit(&budget_left, (int64_t)claim, memory_order_relaxed);
		if (prev >= (int64_t)claim) {
			b->limit += claim;
			if (need <= b->limit) {
				void *p = b->base + b->head;
				b->head += n;
				return p;
			}
		} else {
			atomic_fetch_add_explicit(&budget_left, (int64_t)claim, memory_order_relaxed);
			/* Later drops stay on this thread's own cache lines. */
			b->exhausted = true;
		}
	}
	strb_tbuf_count(&b->dropped);
	return NULL;
}

int strb_thread_name_set(const char *name)
{
	snprintf(tls_thread_name, sizeof(tls_thread_name), "%s", name);
	struct strb_tbuf *b = strb_tls_buf;
	if (b) {
		pthread_mutex_lock(&registry_lock);
		memcpy(b->name, tls_thread_name, sizeof(b->name));
		pthread_mutex_unlock(&registry_lock);
	}
	return 0;
}

void strb_tbuf_foreach(uint32_t session, strb_tbuf_visit_fn fn, void *arg)
{
	pthread_mutex_lock(&registry_lock);
	for (struct strb_tbuf *b = registry; b; b = b->next) {
		if (b->session != session)
			continue;
		size_t published = atomic_load_explicit(&b->published, memory_order_acquire);
		fn(b, published, arg);
	}
	pthread_mutex_unlock(&registry_lock);
}

/* Gives the pages of b below `to` (page-aligned) back to the kernel, but for
 * the first RETAIN_BYTES and those given back already. */
static void give_back(struct strb_tbuf *b, size_t to)
{
	size_t from = b->released > RETAIN_BYTES ? b->released : RETAIN_BYTES;
	if (!b->base || to <= from || to > b->reserve)
		return;
	madvise(b->base + from, to - from, MADV_DONTNEED);
	b->released = to;
}

void strb_tbuf_consumed(struct strb_tbuf *b, size_t upto)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	give_back(b, upto / page * page); /* a late writer may still fill the page of `upto` */
}

static void free_buf(struct strb_tbuf *b)
{
	if (b->base)
		munmap(b->base, b->reserve);
	free(b);
}

void strb_tbuf_release_all(void)
{
	pthread_mutex_lock(&registry_lock);
	struct strb_tbuf **link = &registry;
	while (*link) {
		struct strb_tbuf *b = *link;
		if (atomic_load(&b->dead)) {
			*link = b->next;
			free_buf(b);
			continue;
		}
		/* Keep the first pages resident so the next trace does not pay for
		 * page faults again; give the rest back (strb_tbuf_consumed may
		 * have given back the most already). */
		size_t used = round_up(atomic_load(&b->published), (size_t)sysconf(_SC_PAGESIZE));
		give_back(b, used > b->reserve ? b->reserve : used);
		link = &b->next;
	}
	pthread_mutex_unlock(&registry_lock);
}

void strb_tbuf_atfork_child(void)
{
	pthread_mutex_init(&registry_lock, NULL);
	struct strb_tbuf *mine = strb_tls_buf;
	struct strb_tbuf *b = registry;
	while (b) {
		struct strb_tbuf *next = b->next;
		if (b != mine)
			free_buf(b);
		b = next;
	}
	registry = mine;
	if (mine) {
		mine->next = NULL;
		mine->session = 0;
		mine->head = mine->limit = mine->pop_room = 0;
		memset(mine->open, 0, sizeof(mine->open));
		memset(mine->skip, 0, sizeof(mine->skip));
		atomic_store(&mine->published, 0);
		mine->tid = (pid_t)syscall(SYS_gettid);
	}
	__atomic_store_n(&strobe_internal_session, 0, __ATOMIC_SEQ_CST);
}

void strb_tbuf_shutdown(void)
{
	pthread_mutex_lock(&registry_lock);
	struct strb_tbuf *b = registry;
	while (b) {
		struct strb_tbuf *next = b->next;
		if (b == strb_tls_buf || atomic_load(&b->dead)) {
			free_buf(b);
		} else {
			/* A live thread still points at it; keep the struct, drop the memory. */
			if (b->base)
				munmap(b->base, b->reserve);
			b->base = NULL;
			b->reserve = 0;
			b->session = 0;
			b->next = NULL;
			b->registered = false;
			b = next;
			continue;
		}
		b = next;
	}
	registry = NULL;
	if (strb_tls_buf)
		pthread_setspecific(exit_key, NULL);
	strb_tls_buf = NULL;
	pthread_mutex_unlock(&registry_lock);
}

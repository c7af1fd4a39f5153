#define LOG_TAG "capture"
#include "core/tbuf.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
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
static atomic_bool ring_next; /* the next session records into flight rings */

_Static_assert(CLAIM_BYTES == STRB_TBUF_CHUNK, "a flight ring's chunk is one budget claim");

/* A flight ring's side state, per thread. Recycling a chunk reads no more
 * of it than the pushes still open at its end:
 * - kept: the pushes of recycled chunks still open, or whose pop is still
 *   in the ring (names cut to what fits), packed in push order; each with
 *   the monotonic position of its push and of its pop (0: still open);
 * - bnd: pushes of the ring's chunks still open when their chunk ended, in
 *   order (the shadow stack's part in a chunk, when the next one begins),
 *   with their pops' positions as they come;
 * - nrec: the records of each chunk (a chunk's index is its physical
 *   offset / STRB_TBUF_CHUNK);
 * - shadow: the storage behind strb_tbuf.shadow. */
#define KEPT_MAX   512
#define KEPT_BYTES (64 * 1024)
struct strb_bnd {
	uint64_t pos, pop_pos;
};
struct strb_kept {
	uint32_t n;
	struct {
		uint32_t off, len;
		uint64_t pos, pop_pos;
	} ent[KEPT_MAX];
	uint32_t closed;     /* entries with a pop_pos */
	uint64_t lost_total; /* open pushes not kept: KEPT_MAX, KEPT_BYTES or no memory */
	uint64_t lost_next;  /* the same, counted at the next recycle */
	size_t used;
	uint8_t data[KEPT_BYTES];
	struct strb_bnd *bnd;
	size_t bnd_head, bnd_n, bnd_cap;
	uint16_t *nrec;
	size_t nrec_slots;
	uint64_t shadow[STRB_SHADOW_MAX];
};
_Static_assert(STRB_TBUF_CHUNK / STRB_REC_WORD_BYTES <= UINT16_MAX, "a chunk's record count is 16 bits");
_Static_assert(STRB_STACKS <= 0xffff, "a stack fits the shadow entry's low bits");

static void kept_free(struct strb_kept *kp)
{
	if (kp) {
		free(kp->bnd);
		free(kp->nrec);
		free(kp);
	}
}

void *strb_alt_stack_give(void)
{
	stack_t cur;
	if (sigaltstack(NULL, &cur) || !(cur.ss_flags & SS_DISABLE))
		return NULL;
	void *p = mmap(NULL, STRB_ALT_STACK_BYTES, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	stack_t ss = {.ss_sp = p, .ss_size = STRB_ALT_STACK_BYTES};
	if (sigaltstack(&ss, NULL)) {
		munmap(p, STRB_ALT_STACK_BYTES);
		return NULL;
	}
	return p;
}

/* Flight rings: a thread that records into one gets an alternate signal
 * stack, taken back when it exits (unless the program put its own in
 * place meanwhile: ours then stays mapped). */
static void take_alt_stack(struct strb_tbuf *b)
{
	stack_t cur;
	if (!b->alt_stack)
		return;
	if (sigaltstack(NULL, &cur) == 0 && cur.ss_sp == b->alt_stack && !(cur.ss_flags & SS_ONSTACK)) {
		stack_t off = {.ss_flags = SS_DISABLE};
		if (sigaltstack(&off, NULL) == 0)
			munmap(b->alt_stack, STRB_ALT_STACK_BYTES);
	}
	b->alt_stack = NULL;
}

/* ---- pre-faulting ----------------------------------------------------- */

/* A thread that records a lot would take a page fault every 4 KiB of
 * events (a fifth of a pair's cost on a VM). Once it has claimed
 * AHEAD_AFTER bytes this session, each claim asks the pager thread to make
 * the next AHEAD_BYTES resident (MADV_POPULATE_WRITE, which never changes
 * what a page holds), so the faults are taken off the recording thread.
 * The pager reads the registry under its lock and populates outside it,
 * a step at a time; whoever unmaps a buffer first waits until the pager
 * is not populating it (pager_busy). */
#define AHEAD_AFTER   (256u << 10)
#define AHEAD_BYTES   (1u << 20)
#define POPULATE_STEP (256u << 10)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
static pthread_mutex_t pager_start_lock = PTHREAD_MUTEX_INITIALIZER;
static bool pager_tried; /* under pager_start_lock */
static sem_t pager_sem;
static pthread_t pager_thread;
static atomic_bool pager_running, pager_quit, pager_unsupported;
static _Atomic(struct strb_tbuf *) pager_busy;

static void pager_wait_not(const struct strb_tbuf *b)
{
	struct timespec t = {0, 20000};
	while (atomic_load(&pager_busy) == b)
		nanosleep(&t, NULL);
}

/* The next range to populate, under the registry lock: [*from, *to) of
 * the returned buffer, marked busy. */
static struct strb_tbuf *pager_pick(size_t *from, size_t *to)
{
	uint32_t session = __atomic_load_n(&strobe_internal_session, __ATOMIC_ACQUIRE);
	struct strb_tbuf *pick = NULL;
	pthread_mutex_lock(&registry_lock);
	for (struct strb_tbuf *b = registry; b && session; b = b->next) {
		size_t want = atomic_load(&b->ahead_to), done = atomic_load(&b->ahead_done);
		size_t pub = atomic_load(&b->published) & ~(size_t)4095;
		if (b->session != session || !b->base || atomic_load(&b->dead) || b->ring)
			continue;
		done = done > pub ? done : pub;
		want = want < b->reserve ? want : b->reserve;
		if (want <= done)
			continue;
		pick = b;
		*from = done;
		*to = want - done > POPULATE_STEP ? done + POPULATE_STEP : want;
		atomic_store(&pager_busy, b);
		break;
	}
	pthread_mutex_unlock(&registry_lock);
	return pick;
}

static void *pager_main(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "strobe-pager", 0, 0, 0);
	while (!atomic_load(&pager_quit)) {
		if (sem_wait(&pager_sem))
			continue; /* EINTR */
		size_t from, to;
		struct strb_tbuf *b;
		while (!atomic_load(&pager_quit) && (b = pager_pick(&from, &to))) {
			if (madvise(b->base + from, to - from, MADV_POPULATE_WRITE) && errno == EINVAL) {
				/* A kernel without it: the threads fault their own pages. */
				atomic_store(&pager_unsupported, true);
				atomic_store(&pager_busy, NULL);
				return NULL;
			}
			atomic_store(&b->ahead_done, to);
			atomic_store(&pager_busy, NULL);
		}
	}
	return NULL;
}

static void pager_start(void)
{
	if (sem_init(&pager_sem, 0, 0))
		return;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&pager_running, pthread_create(&pager_thread, NULL, pager_main, NULL) == 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* From the owner's slow path, after a claim: asks for the next pages. */
static void pager_ask(struct strb_tbuf *b)
{
	if (b->limit < AHEAD_AFTER || atomic_load_explicit(&pager_unsupported, memory_order_relaxed))
		return;
	/* No further than the budget still allows this thread to go. */
	int64_t left = atomic_load_explicit(&budget_left, memory_order_relaxed);
	size_t ahead = left <= 0 ? 0 : (uint64_t)left < AHEAD_BYTES ? (size_t)left : AHEAD_BYTES;
	size_t want = b->limit + ahead;
	if (want <= atomic_load_explicit(&b->ahead_to, memory_order_relaxed) + POPULATE_STEP)
		return;
	atomic_store_explicit(&b->ahead_to, want, memory_order_relaxed);
	if (!atomic_load_explicit(&pager_running, memory_order_relaxed)) {
		pthread_mutex_lock(&pager_start_lock);
		if (!pager_tried) {
			pager_tried = true;
			pager_start();
		}
		pthread_mutex_unlock(&pager_start_lock);
	}
	if (atomic_load_explicit(&pager_running, memory_order_relaxed))
		sem_post(&pager_sem);
}

/* The registry frees a dead thread's buffer after its events are
 * processed; one that shutdown already took off the registry is ours to
 * free. Later destructors of this thread must not record into it. */
static void on_thread_exit(void *p)
{
	struct strb_tbuf *b = p;
	strb_tls_buf = NULL;
	take_alt_stack(b);
	pthread_mutex_lock(&registry_lock);
	bool orphan = !b->registered;
	if (!orphan)
		atomic_store(&b->dead, true);
	pthread_mutex_unlock(&registry_lock);
	if (orphan) {
		if (b->base)
			munmap(b->base, b->reserve);
		kept_free(b->kept);
		free(b);
	}
}

static void make_exit_key(void)
{
	pthread_key_create(&exit_key, on_thread_exit);
}

void strb_tbuf_set_ring(bool on)
{
	atomic_store(&ring_next, on);
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
	pager_wait_not(b);
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

/* A ring's side state, sized for b's reservation and emptied; false
 * when there is no memory for it (the thread then records as when
 * tracing, and drops once the budget is spent). */
static bool ring_ready(struct strb_tbuf *b)
{
	struct strb_kept *kp = b->kept;
	if (!kp) {
		kp = b->kept = calloc(1, sizeof(*kp));
		if (!kp) {
			LOGE("no memory for a flight ring's state; this thread records until the budget is "
			     "spent");
			return false;
		}
	}
	size_t slots = b->reserve / CLAIM_BYTES;
	if (kp->nrec_slots < slots) {
		uint16_t *p = realloc(kp->nrec, slots * sizeof(*p));
		if (!p) {
			LOGE("no memory for a flight ring's state; this thread records until the budget is "
			     "spent");
			return false;
		}
		kp->nrec = p;
		kp->nrec_slots = slots;
	}
	kp->n = 0;
	kp->used = 0;
	kp->closed = 0;
	kp->lost_total = 0;
	kp->lost_next = 0;
	kp->bnd_head = kp->bnd_n = 0;
	b->shadow = kp->shadow;
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
	pager_wait_not(b);
	atomic_store_explicit(&b->ahead_to, 0, memory_order_relaxed);
	atomic_store_explicit(&b->ahead_done, 0, memory_order_relaxed);
	bool ok = map_reserve(b, want);
	b->session = session;
	b->head = 0;
	b->limit = 0;
	b->exhausted = false;
	b->pop_room = 0;
	b->released = 0;
	b->ring = atomic_load(&ring_next) && ok && ring_ready(b);
	b->pos_off = 0;
	b->shadow_n = 0;
	b->chunk_nrec = 0;
	b->chunk_pos = 0;
	atomic_store_explicit(&b->cap, 0, memory_order_relaxed);
	atomic_store_explicit(&b->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&b->aged_out, 0, memory_order_relaxed);
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
	if (b->ring && !b->alt_stack)
		b->alt_stack = strb_alt_stack_give();
	if (!ok) {
		LOGE("cannot reserve %zu bytes for a capture buffer; this thread's events are dropped", want);
		strb_tbuf_count(&b->dropped);
		return NULL;
	}
	return b;
}

/* ---- flight rings ---------------------------------------------------- */

/* Keeps the push at p (monotonic position pos, its pop at pop_pos or 0):
 * the whole record when it fits, else without its attributes and with as
 * much of its name as fits; counted as lost when nothing does. An op's
 * push: struct strb_rec, its id, the name; a range's: struct
 * strb_rec_push, the name, the attributes. */
static void kept_push(struct strb_kept *kp, const uint8_t *p, uint64_t pos, uint64_t pop_pos)
{
	struct strb_rec_view r;
	strb_rec_decode(p, STRB_TBUF_CHUNK, 0, sizeof(struct strb_rec_attrs), &r);
	bool op = r.kind == STRB_REC_OP_PUSH;
	size_t head = op ? sizeof(struct strb_rec) + 8 : STRB_PUSH_HEAD; /* an op's id */
	size_t src_attrs = !op && (r.aux & STRB_AUX_ATTRS) ? sizeof(struct strb_rec_attrs) : 0;
	size_t room = KEPT_BYTES - kp->used, attrs = src_attrs, name = r.name_len;
	if (kp->n == KEPT_MAX || room < ((head + 7) & ~(size_t)7)) {
		kp->lost_total++;
		return;
	}
	if (((head + name + 7) & ~(size_t)7) + attrs > room) {
		attrs = 0;
		size_t fit = (room - head) & ~(size_t)7;
		name = name < fit ? name : fit;
	}
	uint8_t *c = kp->data + kp->used;
	size_t named = (head + name + 7) & ~(size_t)7;
	memcpy(c, p, head);
	memcpy(c + head, r.name, name);
	if (op) {
		((struct strb_rec *)c)->name_len = (uint16_t)name;
	} else {
		uint16_t len = (uint16_t)(name | (attrs ? STRB_PUSH_ATTRS : 0));
		memcpy(c + offsetof(struct strb_rec_push, name_len), &len, sizeof(len));
		memcpy(c + named, r.payload, attrs);
	}
	size_t len = named + attrs;
	kp->ent[kp->n].off = (uint32_t)kp->used;
	kp->ent[kp->n].len = (uint32_t)len;
	kp->ent[kp->n].pos = pos;
	kp->ent[kp->n].pop_pos = pop_pos;
	kp->closed += pop_pos != 0;
	kp->n++;
	kp->used += len;
}

/* Forgets the kept pushes whose pops lie in [from, to): the chunk being
 * recycled. The rest stay packed, in order. */
static void kept_forget(struct strb_kept *kp, uint64_t from, uint64_t to)
{
	uint32_t n = 0;
	size_t used = 0;
	for (uint32_t i = 0; i < kp->n; i++) {
		uint64_t pop = kp->ent[i].pop_pos;
		if (pop && pop >= from && pop < to) {
			kp->closed--;
			continue;
		}
		if (used != kp->ent[i].off)
			memmove(kp->data + used, kp->data + kp->ent[i].off, kp->ent[i].len);
		kp->ent[n] = kp->ent[i];
		kp->ent[n].off = (uint32_t)used;
		used += kp->ent[n++].len;
	}
	kp->n = n;
	kp->used = used;
}

/* The pop at p closes a push that is not the shadow stack's last one, or
 * lies in an older chunk: the push is found on the shadow stack, and when
 * its chunk has ended, where its pop lies is noted with it (kept or to be
 * kept) so that it is forgotten only when the pop itself is recycled. */
void strb_tbuf_shadow_pop_slow(struct strb_tbuf *b, const void *p, unsigned k)
{
	uint32_t i = b->shadow_n;
	while (i > 0 && (b->shadow[i - 1] & 0xffffu) != k)
		i--;
	if (!i)
		return; /* cannot be: every recorded push is on the shadow stack */
	uint64_t pos = b->shadow[i - 1] >> 16;
	memmove(&b->shadow[i - 1], &b->shadow[i], (b->shadow_n - i) * sizeof(b->shadow[0]));
	b->shadow_n--;
	if (pos >= b->chunk_pos)
		return;
	uint64_t pop_pos = (uint64_t)((const uint8_t *)p - b->base) + b->pos_off;
	struct strb_kept *kp = b->kept;
	if (pos >= atomic_load_explicit(&b->tail, memory_order_relaxed)) {
		/* Its chunk is still in the ring: it is among the chunk-end ones. */
		size_t lo = 0, hi = kp->bnd_n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (kp->bnd[kp->bnd_head + mid].pos < pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < kp->bnd_n && kp->bnd[kp->bnd_head + lo].pos == pos)
			kp->bnd[kp->bnd_head + lo].pop_pos = pop_pos;
		return;
	}
	for (uint32_t j = kp->n; j-- > 0;) {
		if (kp->ent[j].pos == pos) {
			kp->ent[j].pop_pos = pop_pos;
			kp->closed++;
			return;
		}
	}
	/* Not kept (lost): nothing to forget. */
}

/* The current chunk ends: its record count, and its pushes still open
 * (the shadow stack's end from chunk_pos) to keep when it is recycled. */
static void chunk_end(struct strb_tbuf *b)
{
	struct strb_kept *kp = b->kept;
	kp->nrec[(b->limit - CLAIM_BYTES) / CLAIM_BYTES] = (uint16_t)b->chunk_nrec;
	b->chunk_nrec = 0;
	uint32_t i = b->shadow_n;
	while (i > 0 && b->shadow[i - 1] >> 16 >= b->chunk_pos)
		i--;
	size_t add = b->shadow_n - i;
	if (!add)
		return;
	if (kp->bnd_head + kp->bnd_n + add > kp->bnd_cap) {
		/* Slide the live entries down, or grow. */
		if (kp->bnd_head && kp->bnd_n + add <= kp->bnd_cap) {
			memmove(kp->bnd, kp->bnd + kp->bnd_head, kp->bnd_n * sizeof(*kp->bnd));
		} else {
			size_t cap = kp->bnd_cap ? kp->bnd_cap : 64;
			while (cap < kp->bnd_n + add)
				cap *= 2;
			struct strb_bnd *nb = malloc(cap * sizeof(*nb));
			if (!nb) {
				kp->lost_next += add;
				return;
			}
			if (kp->bnd_n)
				memcpy(nb, kp->bnd + kp->bnd_head, kp->bnd_n * sizeof(*nb));
			free(kp->bnd);
			kp->bnd = nb;
			kp->bnd_cap = cap;
		}
		kp->bnd_head = 0;
	}
	struct strb_bnd *out = kp->bnd + kp->bnd_head + kp->bnd_n;
	for (; i < b->shadow_n; i++, out++) {
		out->pos = b->shadow[i] >> 16;
		out->pop_pos = 0;
	}
	kp->bnd_n += add;
}

/* The owner recycles the oldest chunk, at physical offset `at`: the kept
 * pushes whose pops it holds are forgotten, its pushes still open at its
 * end are kept, and its records are counted as aged out. Nothing of the
 * chunk is read but those pushes. */
static void recycle(struct strb_tbuf *b, size_t at)
{
	/* Odd while recycling: the increment orders the writes below after it
	 * (an acquire RMW, where a fence would do but ThreadSanitizer has
	 * none). */
	uint32_t seq = atomic_fetch_add_explicit(&b->seq, 1, memory_order_acq_rel);
	struct strb_kept *kp = b->kept;
	uint64_t from = atomic_load_explicit(&b->tail, memory_order_relaxed), to = from + CLAIM_BYTES;
	if (kp->closed)
		kept_forget(kp, from, to);
	for (; kp->bnd_n && kp->bnd[kp->bnd_head].pos < to; kp->bnd_head++, kp->bnd_n--) {
		const struct strb_bnd *e = &kp->bnd[kp->bnd_head];
		kept_push(kp, b->base + at + (e->pos - from), e->pos, e->pop_pos);
	}
	kp->lost_total += kp->lost_next;
	kp->lost_next = 0;
	atomic_store_explicit(&b->aged_out,
	                      atomic_load_explicit(&b->aged_out, memory_order_relaxed) +
	                          kp->nrec[at / CLAIM_BYTES],
	                      memory_order_relaxed);
	atomic_store_explicit(&b->tail, to, memory_order_relaxed);
	atomic_store_explicit(&b->seq, seq + 2, memory_order_release);
}

/* Ring mode's slow path: the record does not fit what is left of the
 * current chunk. The rest of the chunk is padded and the record starts the
 * next one: a chunk claimed from the budget while it lasts, then the
 * thread's own oldest chunk, recycled. Only this thread ever waits. */
static void *ring_grow(struct strb_tbuf *b, size_t n, size_t keep)
{
	if (!b->base || n + keep + b->pop_room > CLAIM_BYTES)
		goto drop;
	if (b->limit - b->head >= STRB_REC_WORD_BYTES)
		strb_rec_set_pad(b->base + b->head);
	if (b->limit)
		chunk_end(b);
	size_t next = b->limit, cap = atomic_load_explicit(&b->cap, memory_order_relaxed);
	if (!cap) {
		/* Not wrapped yet: a new chunk while the budget lasts. */
		if (!b->exhausted && next + CLAIM_BYTES <= b->reserve) {
			int64_t prev =
			    atomic_fetch_sub_explicit(&budget_left, CLAIM_BYTES, memory_order_relaxed);
			if (prev >= CLAIM_BYTES) {
				b->head = next;
				b->limit = next + CLAIM_BYTES;
				goto place;
			}
			atomic_fetch_add_explicit(&budget_left, CLAIM_BYTES, memory_order_relaxed);
		}
		b->exhausted = true;
		if (!next) {
			/* A thread that starts after the others spent the budget
			 * still gets one chunk to recycle (the budget is exceeded by
			 * at most a chunk per such thread): a late thread, a data
			 * loader or a watchdog of the program's, is recorded too. */
			if (CLAIM_BYTES > b->reserve)
				goto drop;
			atomic_fetch_sub_explicit(&budget_left, CLAIM_BYTES, memory_order_relaxed);
			b->head = 0;
			b->limit = CLAIM_BYTES;
			goto place;
		}
		atomic_store_explicit(&b->cap, next, memory_order_relaxed);
		cap = next;
	}
	if (next >= cap) {
		next = 0;
		b->pos_off += cap;
	}
	recycle(b, next);
	b->head = next;
	b->limit = next + CLAIM_BYTES;
place:;
	b->chunk_pos = b->head + b->pos_off;
	b->chunk_nrec = 1;
	void *p = b->base + b->head;
	b->head += n;
	return p;
drop:
	strb_tbuf_count(&b->dropped);
	return NULL;
}

/* Copies [from, to) of b's ring (monotonic positions) into out. */
static void copy_ring(const struct strb_tbuf *b, size_t cap, uint64_t from, uint64_t to, uint8_t *out)
{
	for (uint64_t p = from; p < to;) {
		size_t phys = cap ? (size_t)(p % cap) : (size_t)p;
		size_t len = to - p < CLAIM_BYTES ? (size_t)(to - p) : CLAIM_BYTES;
		memcpy(out, b->base + phys, len);
		out += len;
		p += len;
	}
}

static size_t kept_copy(const struct strb_kept *kp, uint8_t *out)
{
	size_t n = 0;
	for (uint32_t i = 0; kp && i < kp->n; i++) {
		memcpy(out + n, kp->data + kp->ent[i].off, kp->ent[i].len);
		n += kp->ent[i].len;
	}
	return n;
}

/* One consistent copy of b (a few tries while the owner recycles). */
/* A consistent copy of b while its owner records: the ring from its tail
 * to what is published, then the kept pushes with the tail they go with
 * (retried while the owner is recycling); the ring's chunks below that
 * tail may have been rewritten during the copy and are left out, their
 * open pushes being among the kept ones. The owner never waits. */
static int snapshot_one(struct strb_tbuf *b, strb_tbuf_view_fn fn, void *arg)
{
	size_t cap = atomic_load_explicit(&b->cap, memory_order_acquire);
	uint64_t tail = atomic_load_explicit(&b->tail, memory_order_acquire);
	uint64_t pub = atomic_load_explicit(&b->published, memory_order_acquire);
	size_t most = (cap ? cap : b->reserve) + CLAIM_BYTES;
	if (pub < tail || pub - tail > most)
		pub = tail; /* cannot be: take no ring rather than a wrong one */
	uint8_t *ring = malloc(pub - tail ? (size_t)(pub - tail) : 1), *kept = malloc(KEPT_BYTES);
	if (!ring || !kept) {
		free(ring);
		free(kept);
		return -ENOMEM;
	}
	copy_ring(b, cap, tail, pub, ring);
	struct strb_tbuf_view v = {.kept = kept, .tid = b->tid, .name = b->name};
	uint64_t kept_tail = tail;
	bool whole = false;
	for (int tries = 0; tries < 1000 && !whole; tries++) {
		uint32_t s1 = atomic_load_explicit(&b->seq, memory_order_acquire);
		if (s1 & 1) {
			sched_yield();
			continue;
		}
		v.kept_len = kept_copy(b->kept, kept);
		v.kept_lost = b->kept ? b->kept->lost_total : 0;
		/* Read-modify-writes that change nothing: their release half keeps
		 * the copies above before them (what a fence would do). */
		kept_tail = atomic_fetch_add_explicit(&b->tail, 0, memory_order_acq_rel);
		whole = atomic_fetch_add_explicit(&b->seq, 0, memory_order_acq_rel) == s1;
	}
	if (!whole)
		v.kept_len = 0, v.kept_lost = 0;
	/* Chunks recycled since the ring was read are dropped from the copy. */
	uint64_t from = kept_tail > tail ? kept_tail : tail;
	if (from > pub)
		from = pub;
	v.ring = ring + (from - tail);
	v.ring_len = (size_t)(pub - from);
	v.torn = from > tail || !whole;
	v.aged_out = atomic_load_explicit(&b->aged_out, memory_order_relaxed);
	v.dropped = atomic_load_explicit(&b->dropped, memory_order_relaxed);
	v.truncated = atomic_load_explicit(&b->truncated, memory_order_relaxed);
	fn(&v, arg);
	free(ring);
	free(kept);
	return 0;
}

int strb_tbuf_foreach_snapshot(uint32_t session, strb_tbuf_view_fn fn, void *arg)
{
	/* The list is taken under the lock, the copies made outside it, so a
	 * thread that starts recording meanwhile does not wait for them.
	 * Buffers are freed only between sessions. */
	size_t n = 0, cap = 0;
	struct strb_tbuf **list = NULL;
	int rc = 0;
	pthread_mutex_lock(&registry_lock);
	for (struct strb_tbuf *b = registry; b; b = b->next) {
		if (b->session != session || !b->ring)
			continue;
		if (n == cap) {
			size_t c = cap ? cap * 2 : 64;
			void *p = realloc(list, c * sizeof(*list));
			if (!p) {
				rc = -ENOMEM;
				break;
			}
			list = p;
			cap = c;
		}
		list[n++] = b;
	}
	pthread_mutex_unlock(&registry_lock);
	for (size_t i = 0; i < n && !rc; i++)
		rc = snapshot_one(list[i], fn, arg);
	free(list);
	return rc;
}

void *strb_tbuf_grow(struct strb_tbuf *b, size_t n, size_t keep)
{
	if (b->ring)
		return ring_grow(b, n, keep);
	size_t need = b->head + n + keep + b->pop_room;
	if (b->base && !b->exhausted && need <= b->reserve) {
		size_t claim = round_up(need - b->limit, CLAIM_BYTES);
		if (b->limit + claim > b->reserve)
			claim = b->reserve - b->limit;
		int64_t prev = atomic_fetch_sub_explicit(&budget_left, (int64_t)claim, memory_order_relaxed);
		if (prev >= (int64_t)claim) {
			b->limit += claim;
			pager_ask(b);
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
	pager_wait_not(b);
	if (b->base)
		munmap(b->base, b->reserve);
	kept_free(b->kept);
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
	/* The pager is not in the child: a new one starts when asked. */
	atomic_store(&pager_running, false);
	atomic_store(&pager_busy, NULL);
	pthread_mutex_init(&pager_start_lock, NULL);
	pager_tried = false;
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
	if (atomic_exchange(&pager_running, false)) {
		atomic_store(&pager_quit, true);
		sem_post(&pager_sem);
		pthread_join(pager_thread, NULL);
		atomic_store(&pager_quit, false);
	}
	pthread_mutex_lock(&pager_start_lock);
	pager_tried = false;
	pthread_mutex_unlock(&pager_start_lock);
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

/* ---- the fatal-signal path -------------------------------------------- */

/* What follows runs inside a signal handler, maybe with a corrupted heap:
 * write(), memcpy() and process_vm_readv() only, no lock, no allocation. */

static const uint8_t raw_zeros[4096];
static volatile sig_atomic_t raw_peek_direct; /* process_vm_readv refused: read directly */

/* Copies n bytes at src into dst, or returns false where src is not
 * readable (a broken pointer reads as the end of the list, not a fault). */
bool strb_raw_peek(void *dst, const void *src, size_t n)
{
	if (!raw_peek_direct) {
		struct iovec local = {dst, n}, remote = {(void *)(uintptr_t)src, n};
		ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
		if (r == (ssize_t)n)
			return true;
		if (r >= 0 || errno == EFAULT)
			return false;
		raw_peek_direct = 1; /* ENOSYS, EPERM (a seccomp filter): trust the pointers */
	}
	memcpy(dst, src, n);
	return true;
}

int64_t strb_raw_write(int fd, const void *p, size_t n)
{
	const uint8_t *at = p;
	int64_t zeroed = 0;
	while (n) {
		ssize_t w = write(fd, at, n);
		if (w > 0) {
			at += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && errno == EFAULT && at != raw_zeros) {
			/* Unreadable: zeros up to the end of its page. */
			size_t len = sizeof(raw_zeros) - ((uintptr_t)at & (sizeof(raw_zeros) - 1));
			len = len < n ? len : n;
			if (strb_raw_write(fd, raw_zeros, len) < 0)
				return -1;
			at += len;
			n -= len;
			zeroed += (int64_t)len;
		} else {
			return -1;
		}
	}
	return zeroed;
}

/* One thread: b is the live buffer, snap the copy just read of it. */
static int raw_thread(int fd, const struct strb_tbuf *b, const struct strb_tbuf *snap)
{
	static struct strb_raw_thread th;
	memset(&th, 0, sizeof(th));
	th.magic = STRB_RAW_THREAD_MAGIC;
	th.size = sizeof(th);
	th.tid = snap->tid;
	th.seq = atomic_load_explicit(&snap->seq, memory_order_relaxed);
	size_t cap = atomic_load_explicit(&snap->cap, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&snap->tail, memory_order_relaxed);
	uint64_t pub = atomic_load_explicit(&snap->published, memory_order_relaxed);
	size_t span = cap ? cap : snap->reserve;
	if (pub < tail || pub - tail > span || tail % CLAIM_BYTES || (pub - tail) % 8 || cap % CLAIM_BYTES ||
	    span > snap->reserve)
		pub = tail; /* caught between two stores: the pushes kept, no ring */
	th.cap = cap;
	th.tail = tail;
	th.published = pub;
	th.ring_len = pub - tail;
	th.aged_out = atomic_load_explicit(&snap->aged_out, memory_order_relaxed);
	th.dropped = atomic_load_explicit(&snap->dropped, memory_order_relaxed);
	th.truncated = atomic_load_explicit(&snap->truncated, memory_order_relaxed);
	size_t used = 0;
	if (snap->kept && strb_raw_peek(&used, &snap->kept->used, sizeof(used)) &&
	    strb_raw_peek(&th.kept_lost, &snap->kept->lost_total, sizeof(th.kept_lost)))
		used = (used < KEPT_BYTES ? used : KEPT_BYTES) & ~(size_t)7;
	else
		used = 0;
	th.kept_len = used;
	memcpy(th.name, snap->name, sizeof(th.name));
	th.name[sizeof(th.name) - 1] = 0;

	struct strb_raw_thread_end end = {.magic = STRB_RAW_END_MAGIC};
	int64_t z;
	if (strb_raw_write(fd, &th, sizeof(th)) < 0 ||
	    (z = strb_raw_write(fd, used ? snap->kept->data : raw_zeros, used)) < 0)
		return -1;
	end.unreadable += (uint64_t)z;
	for (uint64_t p = tail; p < pub;) {
		size_t phys = cap ? (size_t)(p % cap) : (size_t)p;
		size_t len = pub - p < CLAIM_BYTES ? (size_t)(pub - p) : CLAIM_BYTES;
		if ((z = strb_raw_write(fd, snap->base + phys, len)) < 0)
			return -1;
		end.unreadable += (uint64_t)z;
		p += len;
	}
	uint32_t seq = th.seq + 1; /* unreadable counts as torn */
	if (strb_raw_peek(&seq, &b->seq, sizeof(seq)))
		end.seq = seq;
	else
		end.seq = th.seq + 1;
	return strb_raw_write(fd, &end, sizeof(end)) < 0 ? -1 : 0;
}

int64_t strb_tbuf_write_raw(int fd, uint32_t session)
{
	static struct strb_tbuf snap;
	int64_t n = 0;
	const struct strb_tbuf *at = __atomic_load_n(&registry, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; at && i < STRB_RAW_THREADS_MAX; i++) {
		if (!strb_raw_peek(&snap, at, sizeof(snap)))
			break; /* a broken link ends the walk */
		if (snap.session == session && snap.ring && snap.base) {
			if (raw_thread(fd, at, &snap) < 0)
				return -1;
			n++;
		}
		at = snap.next;
	}
	return n;
}

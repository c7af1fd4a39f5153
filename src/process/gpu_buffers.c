/* The budgeted record buffers every GPU backend shares (gpu_buffers.h). */
#define LOG_TAG "gpu"
#include "process/gpu_buffers.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

static atomic_bool rotate_next;

void strb_gpu_pool_set_rotate_next(bool rotate)
{
	atomic_store(&rotate_next, rotate);
}

/* Flight mode's smallest buffer: far above any vendor record. */
#define ROTATE_MIN_BUFFER ((size_t)256 << 10)

void strb_gpu_pool_begin(struct strb_gpu_pool *p, uint64_t budget_bytes, size_t buffer_bytes, bool can_reject)
{
	pthread_mutex_lock(&p->lock);
	p->rotate = atomic_load(&rotate_next);
	/* Flight mode: the buffer the vendor is given next takes its whole
	 * size from the budget at once, recycling that much of the oldest
	 * records, however little goes into it before the next flush. Buffers
	 * of at most a quarter of the budget keep that to a quarter of the
	 * history. */
	size_t quarter = (size_t)(budget_bytes / 4) & ~(size_t)15;
	if (p->rotate && quarter < buffer_bytes)
		buffer_bytes = quarter > ROTATE_MIN_BUFFER        ? quarter
		               : buffer_bytes > ROTATE_MIN_BUFFER ? ROTATE_MIN_BUFFER
		                                                  : buffer_bytes;
	p->buffer_bytes = buffer_bytes;
	/* At least one buffer, whatever the budget. */
	p->cap = (1 + (size_t)(budget_bytes / buffer_bytes)) * buffer_bytes;
	p->can_reject = can_reject;
	p->stopped_early = false;
	memset(&p->counts, 0, sizeof(p->counts));
	__atomic_store_n(&p->active, true, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->lock);
}

void strb_gpu_pool_set_active(struct strb_gpu_pool *p, bool active)
{
	__atomic_store_n(&p->active, active, __ATOMIC_RELEASE);
}

bool strb_gpu_pool_active(const struct strb_gpu_pool *p)
{
	return __atomic_load_n(&p->active, __ATOMIC_ACQUIRE);
}

uint8_t *strb_gpu_pool_request(struct strb_gpu_pool *p, size_t *size)
{
	pthread_mutex_lock(&p->lock);
	bool over = p->used + p->buffer_bytes > p->cap;
	struct strb_gpu_buffer *aged = NULL, **aged_tail = &aged;
	uint8_t *reuse = NULL;
	/* Aged only when that makes room: buffers still out with the vendor
	 * may hold the budget. */
	size_t ready = 0;
	for (const struct strb_gpu_buffer *b = over && p->rotate ? p->ready : NULL; b; b = b->next)
		ready += b->size;
	while (over && ready && p->used - ready + p->buffer_bytes <= p->cap) {
		/* Flight mode: the oldest completed buffers make room; one of
		 * full size is used again. */
		struct strb_gpu_buffer *old = p->ready;
		p->ready = old->next;
		if (!p->ready)
			p->ready_tail = &p->ready;
		p->counts.aged_buffers++;
		p->used -= old->size;
		ready -= old->size;
		old->next = NULL;
		if (!reuse && old->size == p->buffer_bytes) {
			reuse = old->data;
			old->data = NULL;
		}
		*aged_tail = old;
		aged_tail = &old->next;
		over = p->used + p->buffer_bytes > p->cap;
	}
	if (aged) {
		p->outstanding++;
		p->used += p->buffer_bytes;
		*size = p->buffer_bytes;
		pthread_mutex_unlock(&p->lock);
		strb_gpu_pool_free_copy(aged);
		uint8_t *data = reuse ? reuse : aligned_alloc(16, p->buffer_bytes);
		*size = data ? *size : 0;
		return data;
	}
	if (over && !p->stopped_early) {
		p->stopped_early = true;
		LOGW("GPU activity buffers exhausted (ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB); further records "
		     "are dropped");
	}
	if (over && p->can_reject) {
		p->counts.rejected_buffers++;
		pthread_mutex_unlock(&p->lock);
		*size = 0;
		return NULL;
	}
	p->outstanding++;
	p->used += p->buffer_bytes;
	size_t bytes = p->buffer_bytes;
	pthread_mutex_unlock(&p->lock);
	uint8_t *data = aligned_alloc(16, bytes); /* 16: reusable as trace memory after processing */
	*size = data ? bytes : 0;
	return data;
}

/* Flight mode: a buffer handed back mostly empty (a flush comes every
 * second) is moved into memory of its size, so that partly filled buffers
 * do not take the room of full ones; returns the size it has. */
static size_t shrink(uint8_t **data, size_t valid, size_t size)
{
	size_t fit = (valid + 15) & ~(size_t)15;
	uint8_t *small = fit <= size / 2 ? aligned_alloc(16, fit) : NULL;
	if (!small)
		return size;
	memcpy(small, *data, valid);
	free(*data);
	*data = small;
	return fit;
}

void strb_gpu_pool_complete(struct strb_gpu_pool *p, uint8_t *data, size_t valid)
{
	if (!data)
		return;
	struct strb_gpu_buffer *b = malloc(sizeof(*b));
	pthread_mutex_lock(&p->lock);
	bool rotate = p->rotate;
	pthread_mutex_unlock(&p->lock);
	size_t size = rotate && valid ? shrink(&data, valid, p->buffer_bytes) : p->buffer_bytes;
	pthread_mutex_lock(&p->lock);
	if (p->outstanding)
		p->outstanding--;
	p->used -= p->buffer_bytes - size;
	bool active = __atomic_load_n(&p->active, __ATOMIC_ACQUIRE);
	/* An empty buffer (a flush with nothing to hand over) holds nothing
	 * worth the room: in flight mode it would push out older records. */
	if (!b || (p->stopped_early && !p->can_reject) || !active || !valid) {
		p->counts.discarded_buffers += active && valid;
		p->used = p->used > size ? p->used - size : 0;
		pthread_mutex_unlock(&p->lock);
		free(b);
		free(data);
		return;
	}
	*b = (struct strb_gpu_buffer){.data = data, .valid = valid, .size = size};
	*p->ready_tail = b;
	p->ready_tail = &b->next;
	pthread_mutex_unlock(&p->lock);
}

size_t strb_gpu_pool_outstanding(struct strb_gpu_pool *p)
{
	pthread_mutex_lock(&p->lock);
	size_t n = p->outstanding;
	pthread_mutex_unlock(&p->lock);
	return n;
}

struct strb_gpu_buffer *strb_gpu_pool_take(struct strb_gpu_pool *p)
{
	pthread_mutex_lock(&p->lock);
	struct strb_gpu_buffer *b = p->ready;
	p->ready = NULL;
	p->ready_tail = &p->ready;
	pthread_mutex_unlock(&p->lock);
	return b;
}

void strb_gpu_pool_free(struct strb_gpu_pool *p, struct strb_gpu_buffer *b)
{
	size_t n = 0;
	while (b) {
		struct strb_gpu_buffer *next = b->next;
		n += b->size;
		free(b->data);
		free(b);
		b = next;
	}
	pthread_mutex_lock(&p->lock);
	p->used = p->used > n ? p->used - n : 0;
	pthread_mutex_unlock(&p->lock);
}

struct strb_gpu_buffer *strb_gpu_pool_copy(struct strb_gpu_pool *p, bool *failed)
{
	struct strb_gpu_buffer *head = NULL, **tail = &head;
	*failed = false;
	pthread_mutex_lock(&p->lock);
	for (const struct strb_gpu_buffer *b = p->ready; b; b = b->next) {
		struct strb_gpu_buffer *c = malloc(sizeof(*c));
		uint8_t *data = c ? aligned_alloc(16, b->valid ? (b->valid + 15) & ~(size_t)15 : 16) : NULL;
		if (!data) {
			free(c);
			*failed = true;
			break;
		}
		memcpy(data, b->data, b->valid);
		*c = (struct strb_gpu_buffer){.data = data, .valid = b->valid, .size = b->valid};
		*tail = c;
		tail = &c->next;
	}
	pthread_mutex_unlock(&p->lock);
	return head;
}

void strb_gpu_pool_free_copy(struct strb_gpu_buffer *b)
{
	while (b) {
		struct strb_gpu_buffer *next = b->next;
		free(b->data);
		free(b);
		b = next;
	}
}

int strb_gpu_pool_decode_copy(struct strb_gpu_pool *p, strb_gpu_convert_fn convert, struct strobe_trace *t,
                              const struct strb_window *w)
{
	bool failed;
	struct strb_gpu_buffer *b = strb_gpu_pool_copy(p, &failed);
	int rc = failed ? -ENOMEM : convert(t, w, b);
	strb_gpu_pool_free_copy(b);
	return rc;
}

void strb_gpu_pool_add_dropped(struct strb_gpu_pool *p, uint64_t records)
{
	pthread_mutex_lock(&p->lock);
	p->counts.dropped_records += records;
	pthread_mutex_unlock(&p->lock);
}

void strb_gpu_pool_add_warmup(struct strb_gpu_pool *p, uint64_t records)
{
	pthread_mutex_lock(&p->lock);
	p->counts.warmup_records += records;
	pthread_mutex_unlock(&p->lock);
}

void strb_gpu_pool_account(struct strb_gpu_pool *p, struct strb_trace_stats *st)
{
	pthread_mutex_lock(&p->lock);
	st->gpu_rejected_buffers += p->counts.rejected_buffers;
	st->gpu_discarded_buffers += p->counts.discarded_buffers;
	st->gpu_dropped_records += p->counts.dropped_records;
	st->gpu_warmup_records += p->counts.warmup_records;
	st->gpu_aged_buffers += p->counts.aged_buffers;
	pthread_mutex_unlock(&p->lock);
}

void strb_gpu_pool_atfork_child(struct strb_gpu_pool *p)
{
	pthread_mutex_init(&p->lock, NULL);
	p->ready = NULL;
	p->ready_tail = &p->ready;
	__atomic_store_n(&p->active, false, __ATOMIC_RELEASE);
	p->used = p->outstanding = 0;
}

/* ---- correlation hooks ---------------------------------------------------------- */

#define HOOK_DEPTH 256

static _Atomic(strb_correlation_hook) hooks[STRB_GPU_VENDORS];
/* Per thread and kind (plain, user): which vendors took each open push. */
static _Thread_local uint8_t took[2][HOOK_DEPTH];
static _Thread_local unsigned depth[2];

/* Pops the pushes of the vendors in mask. */
static void pop_hooks(uint32_t which, uint8_t mask)
{
	for (int v = 0; v < STRB_GPU_VENDORS; v++) {
		strb_correlation_hook h = atomic_load_explicit(&hooks[v], memory_order_acquire);
		if ((mask >> v & 1) && h)
			h(which, NULL);
	}
}

static bool call_hooks(uint32_t which, const uint64_t *id)
{
	unsigned k = which ? 1 : 0;
	if (!id) {
		/* Capture pops only pushes this took. */
		if (!depth[k])
			return true;
		uint8_t mask = took[k][--depth[k]];
		pop_hooks(which, mask);
		return true;
	}
	uint8_t mask = 0;
	for (int v = 0; v < STRB_GPU_VENDORS; v++) {
		strb_correlation_hook h = atomic_load_explicit(&hooks[v], memory_order_acquire);
		if (h && h(which, id))
			mask |= (uint8_t)(1u << v);
	}
	if (mask && depth[k] >= HOOK_DEPTH) {
		/* Too deep to remember: hand it back. */
		pop_hooks(which, mask);
		return false;
	}
	if (mask)
		took[k][depth[k]++] = mask;
	return mask != 0;
}

void strb_gpu_set_correlation_hook(enum strb_gpu_vendor vendor, strb_correlation_hook hook)
{
	bool any = hook != NULL;
	atomic_store(&hooks[vendor], hook);
	for (int v = 0; v < STRB_GPU_VENDORS; v++)
		any |= atomic_load(&hooks[v]) != NULL;
	strb_capture_set_correlation_hook(any ? call_hooks : NULL);
}

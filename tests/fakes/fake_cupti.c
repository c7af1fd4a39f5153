/* A fake libcupti for tests: the CUPTI functions strobe calls, with the real
 * library's semantics, over state the tests drive through fake_cupti.h. */
#include "fake_cupti.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cupti_tables.h" /* generated: callback names, result strings */

#define EXPORT FAKE_CUPTI_EXPORT

/* --- records ---------------------------------------------------------------- */

/* Kind -> the CUDA 13 struct its records use. The real libcupti.so.13 walks
 * exactly these kinds, each advancing by sizeof the struct (the oracle test
 * checks this against the real library when it is installed). */
#define FAKE_KINDS(X)                                                                                        \
	X(MEMCPY, CUpti_ActivityMemcpy6)                                                                     \
	X(MEMSET, CUpti_ActivityMemset4)                                                                     \
	X(KERNEL, CUpti_ActivityKernel10)                                                                    \
	X(DRIVER, CUpti_ActivityAPI)                                                                         \
	X(RUNTIME, CUpti_ActivityAPI)                                                                        \
	X(DEVICE, CUpti_ActivityDevice5)                                                                     \
	X(CONTEXT, CUpti_ActivityContext3)                                                                   \
	X(CONCURRENT_KERNEL, CUpti_ActivityKernel10)                                                         \
	X(NAME, CUpti_ActivityName)                                                                          \
	X(MARKER, CUpti_ActivityMarker2)                                                                     \
	X(MARKER_DATA, CUpti_ActivityMarkerData2)                                                            \
	X(OVERHEAD, CUpti_ActivityOverhead3)                                                                 \
	X(CDP_KERNEL, CUpti_ActivityCdpKernel)                                                               \
	X(PREEMPTION, CUpti_ActivityPreemption)                                                              \
	X(ENVIRONMENT, CUpti_ActivityEnvironment)                                                            \
	X(MEMCPY2, CUpti_ActivityMemcpyPtoP4)                                                                \
	X(UNIFIED_MEMORY_COUNTER, CUpti_ActivityUnifiedMemoryCounter3)                                       \
	X(FUNCTION, CUpti_ActivityFunction)                                                                  \
	X(MODULE, CUpti_ActivityModule)                                                                      \
	X(DEVICE_ATTRIBUTE, CUpti_ActivityDeviceAttribute)                                                   \
	X(OPENACC_DATA, CUpti_ActivityOpenAccData)                                                           \
	X(OPENACC_LAUNCH, CUpti_ActivityOpenAccLaunch)                                                       \
	X(OPENACC_OTHER, CUpti_ActivityOpenAccOther)                                                         \
	X(CUDA_EVENT, CUpti_ActivityCudaEvent2)                                                              \
	X(STREAM, CUpti_ActivityStream)                                                                      \
	X(SYNCHRONIZATION, CUpti_ActivitySynchronization2)                                                   \
	X(EXTERNAL_CORRELATION, CUpti_ActivityExternalCorrelation)                                           \
	X(NVLINK, CUpti_ActivityNvLink4)                                                                     \
	X(MEMORY, CUpti_ActivityMemory)                                                                      \
	X(PCIE, CUpti_ActivityPcie)                                                                          \
	X(OPENMP, CUpti_ActivityOpenMp)                                                                      \
	X(INTERNAL_LAUNCH_API, CUpti_ActivityAPI)                                                            \
	X(MEMORY2, CUpti_ActivityMemory4)                                                                    \
	X(MEMORY_POOL, CUpti_ActivityMemoryPool3)                                                            \
	X(GRAPH_TRACE, CUpti_ActivityGraphTrace2)                                                            \
	X(JIT, CUpti_ActivityJit2)                                                                           \
	X(DEVICE_GRAPH_TRACE, CUpti_ActivityDeviceGraphTrace)                                                \
	X(MEM_DECOMPRESS, CUpti_ActivityMemDecompress)                                                       \
	X(CONFIDENTIAL_COMPUTE_ROTATION, CUpti_ActivityConfidentialComputeRotation)

#define SIZE_ENTRY(k, type) [CUPTI_ACTIVITY_KIND_##k] = sizeof(type),
static const uint16_t kind_size[CUPTI_ACTIVITY_KIND_COUNT] = {FAKE_KINDS(SIZE_ENTRY)};

/* Room for a record of any kind, aligned as the structs are. */
#define UNION_MEMBER(k, type) type k;
union any_record {
	CUpti_Activity header;
	FAKE_KINDS(UNION_MEMBER)
	struct fake_cupti_kernel11 KERNEL11;
};
_Static_assert(sizeof(struct fake_cupti_kernel11) == 224 &&
                   offsetof(struct fake_cupti_kernel11, priority) == 216,
               "CUDA 13.1 kernel record layout");

/* The reported version, read without the lock: record sizes depend on it and
 * the record walk takes no lock. */
static _Atomic uint32_t sizes_version = FAKE_CUPTI_DEFAULT_VERSION;

static size_t record_size(uint32_t kind)
{
	if ((kind == CUPTI_ACTIVITY_KIND_KERNEL || kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) &&
	    atomic_load_explicit(&sizes_version, memory_order_relaxed) >= FAKE_CUPTI_VERSION_13_1)
		return sizeof(struct fake_cupti_kernel11);
	return kind < CUPTI_ACTIVITY_KIND_COUNT ? kind_size[kind] : 0;
}

/* The kind at p; records handed to us need not be aligned. */
static uint32_t read_kind(const void *p)
{
	uint32_t kind;
	memcpy(&kind, p, sizeof(kind));
	return kind;
}

static bool is_legacy_kind(uint32_t kind)
{
	return (kind >= CUPTI_ACTIVITY_KIND_SOURCE_LOCATOR && kind <= CUPTI_ACTIVITY_KIND_BRANCH) ||
	       kind == CUPTI_ACTIVITY_KIND_INSTRUCTION_EXECUTION ||
	       (kind >= CUPTI_ACTIVITY_KIND_SHARED_ACCESS &&
	        kind <= CUPTI_ACTIVITY_KIND_INSTRUCTION_CORRELATION);
}

/* --- state -------------------------------------------------------------------- */

struct pending {
	union any_record rec;
	uint32_t size;
	bool incomplete;
};

#define MAX_ARMED 32
struct armed {
	char name[64];
	CUptiResult result;
	int times; /* -1: forever */
};

/* Value size and default of each activity attribute (cupti_activity.h). */
static const struct attr_info {
	uint8_t size;
	uint64_t def;
} attr_info[] = {
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE] = {sizeof(size_t), 8u << 20},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_CDP] = {sizeof(size_t), 8u << 20},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT] = {sizeof(size_t), 250},
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_SIZE] = {sizeof(size_t), 25000},
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_POOL_LIMIT] = {sizeof(size_t), 250},
    [CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER] = {sizeof(uint8_t), 0},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE] = {sizeof(size_t), 3},
    [CUPTI_ACTIVITY_ATTR_PROFILING_SEMAPHORE_PRE_ALLOCATE_VALUE] = {sizeof(size_t), 3},
    [CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED] = {sizeof(uint8_t), 0},
    [CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER] = {sizeof(uint8_t), 1},
    [CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE_DEVICE_GRAPHS] = {sizeof(size_t), 16u << 20},
};
#define N_ATTRS (sizeof(attr_info) / sizeof(attr_info[0]))

/* Callback ids per domain the enable table has room for. */
#define MAX_CBIDS 1024
_Static_assert(FAKE_DRIVER_CBID_COUNT <= MAX_CBIDS && FAKE_RUNTIME_CBID_COUNT <= MAX_CBIDS &&
                   CUPTI_CBID_RESOURCE_SIZE <= MAX_CBIDS && CUPTI_CBID_SYNCHRONIZE_SIZE <= MAX_CBIDS &&
                   CUPTI_CBID_NVTX_SIZE <= MAX_CBIDS && CUPTI_CBID_STATE_SIZE <= MAX_CBIDS,
               "callback id table too small");

#define NAME_LEN 64

struct CUpti_Subscriber_st {
	int unused;
};
static struct CUpti_Subscriber_st the_subscriber;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool ready; /* st holds a fresh library's state */
static struct state {
	uint32_t version;
	CUpti_BuffersCallbackRequestFunc request;
	CUpti_BuffersCallbackCompleteFunc complete;
	CUpti_TimestampCallbackFunc timestamp;
	CUpti_ActivityThreadIdType tid_type;
	bool enabled[CUPTI_ACTIVITY_KIND_COUNT];
	bool runtime_off[FAKE_RUNTIME_CBID_COUNT];
	bool driver_off[FAKE_DRIVER_CBID_COUNT];
	uint64_t attr[N_ATTRS];

	struct pending *q; /* pending records: q[q_head .. q_head + q_len) */
	size_t q_head, q_len, q_cap;
	size_t q_incomplete; /* pending records still marked incomplete */
	size_t drop_next, dropped, requested, completed;
	uint32_t next_correlation;

	struct armed armed[MAX_ARMED];

	bool subscribed;         /* by a cuptiSubscribe* caller */
	char sub_name[NAME_LEN]; /* what _v2 reports to a second subscriber */
	char held_by[NAME_LEN];  /* fake_cupti_hold_subscriber; "" = not held */
	CUpti_CallbackFunc callback;
	void *callback_arg;
	bool cb_enabled[CUPTI_CB_DOMAIN_SIZE][MAX_CBIDS];

	/* The CUDA driver and runtime (fake_cupti_cuda_init). */
	int driver_version, runtime_version;
	bool cuda_initialized;
	struct fake_cuda_device devices[FAKE_CUDA_MAX_DEVICES];
	char device_names[FAKE_CUDA_MAX_DEVICES][256];
	int ndevices;
} st;

/* Nonzero while some function is armed, so unarmed calls skip the lock. */
static atomic_int armed_count;

static void reset_locked(void)
{
	free(st.q);
	memset(&st, 0, sizeof(st));
	st.version = FAKE_CUPTI_DEFAULT_VERSION;
	atomic_store(&sizes_version, st.version);
	st.next_correlation = 1;
	st.driver_version = st.runtime_version = FAKE_CUDA_DEFAULT_VERSION;
	st.tid_type = CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT;
	for (size_t i = 0; i < N_ATTRS; i++)
		st.attr[i] = attr_info[i].def;
	atomic_store(&armed_count, 0);
	ready = true;
}

static void lock_state(void)
{
	pthread_mutex_lock(&lock);
	if (!ready)
		reset_locked();
}

static void unlock_state(void)
{
	pthread_mutex_unlock(&lock);
}

static void queue_drop_head_locked(size_t n)
{
	for (size_t i = 0; i < n && st.q_incomplete; i++)
		st.q_incomplete -= st.q[st.q_head + i].incomplete;
	st.q_head += n;
	st.q_len -= n;
	if (st.q_len == 0)
		st.q_head = 0;
}

/* Produces a record of an enabled kind; returns 1, or 0 if drop_next ate it. */
static int produce_locked(const void *rec, size_t size, bool incomplete)
{
	if (st.drop_next > 0) {
		st.drop_next--;
		st.dropped++;
		return 0;
	}
	if (st.q_head + st.q_len == st.q_cap) {
		if (st.q_head > 0) {
			memmove(st.q, st.q + st.q_head, st.q_len * sizeof(*st.q));
			st.q_head = 0;
		} else {
			size_t cap = st.q_cap ? 2 * st.q_cap : 64;
			struct pending *q = realloc(st.q, cap * sizeof(*q));
			if (!q)
				abort(); /* a test double: out of memory is not a case to simulate */
			st.q = q;
			st.q_cap = cap;
		}
	}
	struct pending *p = &st.q[st.q_head + st.q_len++];
	memset(p, 0, sizeof(*p));
	memcpy(&p->rec, rec, size);
	p->size = (uint32_t)size;
	p->incomplete = incomplete;
	st.q_incomplete += incomplete;
	return 1;
}

/* Records a flush may hand out now: all, or those before the first
 * incomplete one. */
static size_t deliverable_locked(bool forced)
{
	/* Without incomplete records the scan below would be linear per buffer,
	 * quadratic per flush. */
	if (forced || !st.q_incomplete)
		return st.q_len;
	size_t n = 0;
	while (n < st.q_len && !st.q[st.q_head + n].incomplete)
		n++;
	return n;
}

/* --- armed failures ----------------------------------------------------------- */

static CUptiResult armed_result(const char *fn)
{
	if (atomic_load_explicit(&armed_count, memory_order_acquire) == 0)
		return CUPTI_SUCCESS;
	CUptiResult r = CUPTI_SUCCESS;
	lock_state();
	for (int i = 0; i < MAX_ARMED; i++) {
		struct armed *a = &st.armed[i];
		if (a->times == 0 || strcmp(a->name, fn) != 0)
			continue;
		r = a->result;
		if (a->times > 0 && --a->times == 0)
			atomic_fetch_sub(&armed_count, 1);
		break;
	}
	unlock_state();
	return r;
}

#define CHECK_ARMED()                                                                                        \
	do {                                                                                                 \
		CUptiResult armed_ = armed_result(__func__);                                                 \
		if (armed_ != CUPTI_SUCCESS)                                                                 \
			return armed_;                                                                       \
	} while (0)

/* --- per-thread external correlation stacks ------------------------------------ */

struct id_stack {
	uint64_t *ids;
	size_t len, cap;
};

struct thread_stacks {
	unsigned generation; /* stale (emptied by a reset) unless == stacks_generation */
	struct id_stack s[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];
};

static atomic_uint stacks_generation;
static pthread_key_t stacks_key;
static pthread_once_t stacks_once = PTHREAD_ONCE_INIT;
/* Also kept in TLS so leak checkers see the main thread's stacks as reachable. */
static _Thread_local struct thread_stacks *my_stacks_ptr;

static void free_stacks(void *p)
{
	struct thread_stacks *ts = p;
	for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++)
		free(ts->s[k].ids);
	free(ts);
}

static void make_stacks_key(void)
{
	if (pthread_key_create(&stacks_key, free_stacks) != 0)
		abort();
}

/* The calling thread's stacks; NULL if it never pushed and !create. */
static struct thread_stacks *my_stacks(bool create)
{
	struct thread_stacks *ts = my_stacks_ptr;
	if (!ts) {
		if (!create)
			return NULL;
		pthread_once(&stacks_once, make_stacks_key);
		ts = calloc(1, sizeof(*ts));
		if (!ts)
			abort();
		ts->generation = atomic_load(&stacks_generation);
		pthread_setspecific(stacks_key, ts);
		my_stacks_ptr = ts;
	}
	unsigned gen = atomic_load(&stacks_generation);
	if (ts->generation != gen) {
		for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++)
			ts->s[k].len = 0;
		ts->generation = gen;
	}
	return ts;
}

static bool valid_external_kind(CUpti_ExternalCorrelationKind kind)
{
	return kind > CUPTI_EXTERNAL_CORRELATION_KIND_INVALID && kind < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE;
}

/* --- version, results, names ---------------------------------------------------- */

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
	CHECK_ARMED();
	if (!version)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	*version = st.version;
	unlock_state();
	return CUPTI_SUCCESS;
}

static const char *result_name(CUptiResult result)
{
	for (size_t i = 0; i < sizeof(fake_result_names) / sizeof(fake_result_names[0]); i++) {
		if (fake_result_names[i].value == (int)result)
			return fake_result_names[i].name;
	}
	return NULL;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
	CHECK_ARMED();
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	const char *name = result_name(result);
	*str = name ? name : "<unknown>";
	return name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

/* The real one has longer sentences for a few codes; the name will do. */
EXPORT CUptiResult cuptiGetErrorMessage(CUptiResult result, const char **str)
{
	CHECK_ARMED();
	if (!str)
		return CUPTI_ERROR_INVALID_PARAMETER;
	const char *name = result_name(result);
	*str = name ? name : "<unknown>";
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name)
{
	CHECK_ARMED();
	if (!name)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*name = NULL;
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < FAKE_RUNTIME_CBID_COUNT)
		*name = fake_runtime_cbid_names[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < FAKE_DRIVER_CBID_COUNT)
		*name = fake_driver_cbid_names[cbid];
	return *name ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

/* --- activity API ---------------------------------------------------------------- */

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                  CUpti_BuffersCallbackCompleteFunc complete)
{
	CHECK_ARMED();
	if (!request || !complete)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	st.request = request;
	st.complete = complete;
	unlock_state();
	return CUPTI_SUCCESS;
}

static CUptiResult check_enable_kind(CUpti_ActivityKind kind)
{
	if (record_size(kind))
		return CUPTI_SUCCESS;
	return is_legacy_kind(kind) ? CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED : CUPTI_ERROR_INVALID_KIND;
}

static CUptiResult set_kind(CUpti_ActivityKind kind, bool on)
{
	CUptiResult r = check_enable_kind(kind);
	if (r != CUPTI_SUCCESS)
		return r;
	lock_state();
	st.enabled[kind] = on;
	unlock_state();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
	CHECK_ARMED();
	return set_kind(kind, true);
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
	CHECK_ARMED();
	return set_kind(kind, false);
}

EXPORT CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable)
{
	CHECK_ARMED();
	if (cbid >= FAKE_RUNTIME_CBID_COUNT)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	st.runtime_off[cbid] = !enable;
	unlock_state();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t enable)
{
	CHECK_ARMED();
	if (cbid >= FAKE_DRIVER_CBID_COUNT)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	st.driver_off[cbid] = !enable;
	unlock_state();
	return CUPTI_SUCCESS;
}

/* Accepted and ignored: the test stamps its records itself. */
EXPORT CUptiResult cuptiActivityEnableCudaEventDeviceTimestamps(uint8_t enable)
{
	CHECK_ARMED();
	(void)enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t enable)
{
	CHECK_ARMED();
	(void)enable;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
	CHECK_ARMED();
	bool forced = flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED;
	for (;;) {
		lock_state();
		CUpti_BuffersCallbackRequestFunc request = st.request;
		CUpti_BuffersCallbackCompleteFunc complete = st.complete;
		size_t n = deliverable_locked(forced);
		unlock_state();
		if (n == 0 || !request || !complete)
			return CUPTI_SUCCESS;

		uint8_t *buf = NULL;
		size_t size = 0, max_records = 0;
		request(&buf, &size, &max_records);

		lock_state();
		st.requested++;
		n = deliverable_locked(forced); /* the callback may have queued or flushed */
		if (!buf || ((uintptr_t)buf % 8) != 0) {
			/* Rejected (or unusable): what was waiting for this buffer is lost. */
			st.dropped += n;
			queue_drop_head_locked(n);
			unlock_state();
			if (!buf)
				continue;
			complete(NULL, 0, buf, size, 0);
			lock_state();
			st.completed++;
			unlock_state();
			continue;
		}
		size_t valid = 0, taken = 0;
		while (taken < n && (max_records == 0 || taken < max_records)) {
			struct pending *p = &st.q[st.q_head + taken];
			if (p->size > size - valid)
				break;
			memcpy(buf + valid, &p->rec, p->size);
			valid += p->size;
			taken++;
		}
		queue_drop_head_locked(taken);
		if (taken == 0 && n > 0) {
			/* A buffer too small for even the next record: CUPTI drops it. */
			st.dropped++;
			queue_drop_head_locked(1);
		}
		unlock_state();

		complete(NULL, 0, buf, size, valid);
		lock_state();
		st.completed++;
		unlock_state();
	}
}

/* Pure: depends only on the arguments and the kind size table, like the real
 * one. Differs from it only where the real one reads a kind from fewer than 4
 * valid bytes (it reports INVALID_KIND for garbage there; we do not read). */
EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                              CUpti_Activity **record)
{
	CHECK_ARMED();
	if (!buffer || !record)
		return CUPTI_ERROR_INVALID_PARAMETER;
	size_t valid = validBufferSizeBytes;
	size_t off = 0;
	if (*record) {
		uintptr_t cur = (uintptr_t)*record, base = (uintptr_t)buffer;
		if (cur < base)
			return CUPTI_ERROR_INVALID_PARAMETER;
		if (cur - base >= valid)
			return CUPTI_ERROR_MAX_LIMIT_REACHED;
		size_t size = record_size(read_kind(*record));
		if (!size)
			return CUPTI_ERROR_INVALID_KIND;
		off = cur - base + size;
	}
	if (off >= valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	if (valid - off < sizeof(uint32_t))
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	size_t next = record_size(read_kind(buffer + off));
	if (!next)
		return CUPTI_ERROR_INVALID_KIND;
	if (next > valid - off)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)(buffer + off);
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped)
{
	CHECK_ARMED();
	(void)context;
	(void)streamId;
	if (!dropped)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	*dropped = st.dropped;
	st.dropped = 0;
	unlock_state();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivitySetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize, void *value)
{
	CHECK_ARMED();
	if (!valueSize || !value || (unsigned)attr >= N_ATTRS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	const struct attr_info *info = &attr_info[attr];
	if (*valueSize < info->size)
		return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
	uint64_t v;
	if (info->size == sizeof(uint8_t)) {
		v = *(const uint8_t *)value;
	} else {
		size_t s;
		memcpy(&s, value, sizeof(s));
		v = s;
	}
	lock_state();
	st.attr[attr] = v;
	unlock_state();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetAttribute(CUpti_ActivityAttribute attr, size_t *valueSize, void *value)
{
	CHECK_ARMED();
	if (!valueSize || !value || (unsigned)attr >= N_ATTRS)
		return CUPTI_ERROR_INVALID_PARAMETER;
	const struct attr_info *info = &attr_info[attr];
	if (*valueSize < info->size)
		return CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT;
	lock_state();
	uint64_t v = st.attr[attr];
	unlock_state();
	if (info->size == sizeof(uint8_t)) {
		*(uint8_t *)value = (uint8_t)v;
	} else {
		size_t s = (size_t)v;
		memcpy(value, &s, sizeof(s));
	}
	*valueSize = info->size;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
	CHECK_ARMED();
	if (!funcTimestamp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	st.timestamp = funcTimestamp;
	unlock_state();
	return CUPTI_SUCCESS;
}

static uint64_t timestamp_now(void)
{
	lock_state();
	CUpti_TimestampCallbackFunc cb = st.timestamp;
	unlock_state();
	if (cb)
		return cb();
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

EXPORT CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
	CHECK_ARMED();
	if (!timestamp)
		return CUPTI_ERROR_INVALID_PARAMETER;
	*timestamp = timestamp_now();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type)
{
	CHECK_ARMED();
	if (type != CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT && type != CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	st.tid_type = type;
	unlock_state();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetThreadIdType(CUpti_ActivityThreadIdType *type)
{
	CHECK_ARMED();
	if (!type)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	*type = st.tid_type;
	unlock_state();
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
	CHECK_ARMED();
	if (!valid_external_kind(kind))
		return CUPTI_ERROR_INVALID_PARAMETER;
	struct id_stack *s = &my_stacks(true)->s[kind];
	if (s->len == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		uint64_t *ids = realloc(s->ids, cap * sizeof(*ids));
		if (!ids)
			return CUPTI_ERROR_OUT_OF_MEMORY;
		s->ids = ids;
		s->cap = cap;
	}
	s->ids[s->len++] = id;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *lastId)
{
	CHECK_ARMED();
	if (!valid_external_kind(kind))
		return CUPTI_ERROR_INVALID_PARAMETER;
	struct thread_stacks *ts = my_stacks(false);
	if (!ts || ts->s[kind].len == 0)
		return CUPTI_ERROR_QUEUE_EMPTY;
	uint64_t id = ts->s[kind].ids[--ts->s[kind].len];
	if (lastId)
		*lastId = id;
	return CUPTI_SUCCESS;
}

/* --- callback API: one subscriber slot ------------------------------------------- */

static size_t domain_cbids(CUpti_CallbackDomain domain)
{
	switch (domain) {
	case CUPTI_CB_DOMAIN_DRIVER_API:
		return FAKE_DRIVER_CBID_COUNT;
	case CUPTI_CB_DOMAIN_RUNTIME_API:
		return FAKE_RUNTIME_CBID_COUNT;
	case CUPTI_CB_DOMAIN_RESOURCE:
		return CUPTI_CBID_RESOURCE_SIZE;
	case CUPTI_CB_DOMAIN_SYNCHRONIZE:
		return CUPTI_CBID_SYNCHRONIZE_SIZE;
	case CUPTI_CB_DOMAIN_NVTX:
		return CUPTI_CBID_NVTX_SIZE;
	case CUPTI_CB_DOMAIN_STATE:
		return CUPTI_CBID_STATE_SIZE;
	default:
		return 0;
	}
}

static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata,
                             const char *name, char *old_name, size_t old_size)
{
	if (!subscriber)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	if (st.subscribed || st.held_by[0]) {
		if (old_name && old_size > 0)
			snprintf(old_name, old_size, "%s", st.held_by[0] ? st.held_by : st.sub_name);
		unlock_state();
		return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
	}
	st.subscribed = true;
	st.callback = callback;
	st.callback_arg = userdata;
	memset(st.cb_enabled, 0, sizeof(st.cb_enabled));
	if (name && name[0])
		snprintf(st.sub_name, sizeof(st.sub_name), "CUPTI for %.53s", name);
	else
		snprintf(st.sub_name, sizeof(st.sub_name), "CUPTI");
	unlock_state();
	*subscriber = &the_subscriber;
	return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                  void *userdata)
{
	CHECK_ARMED();
	return subscribe(subscriber, callback, userdata, NULL, NULL, 0);
}

/* Reads only the fields pParams->structSize covers. */
EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                     void *userdata, CUpti_SubscriberParams *pParams)
{
	CHECK_ARMED();
	const char *name = NULL;
	char *old_name = NULL;
	size_t old_size = 0;
	if (pParams) {
		size_t n = pParams->structSize;
		if (n == 0)
			return CUPTI_ERROR_INVALID_PARAMETER;
		if (n >= offsetof(CUpti_SubscriberParams, subscriberName) + sizeof(pParams->subscriberName))
			name = pParams->subscriberName;
		if (n >= offsetof(CUpti_SubscriberParams, oldSubscriberSize) +
		             sizeof(pParams->oldSubscriberSize)) {
			old_name = pParams->oldSubscriberName;
			old_size = pParams->oldSubscriberSize;
		}
	}
	return subscribe(subscriber, callback, userdata, name, old_name, old_size);
}

static bool is_ours_locked(CUpti_SubscriberHandle subscriber)
{
	return subscriber == &the_subscriber && st.subscribed;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
	CHECK_ARMED();
	lock_state();
	if (!is_ours_locked(subscriber)) {
		unlock_state();
		return CUPTI_ERROR_INVALID_PARAMETER;
	}
	st.subscribed = false;
	st.callback = NULL;
	st.callback_arg = NULL;
	st.sub_name[0] = '\0';
	memset(st.cb_enabled, 0, sizeof(st.cb_enabled));
	unlock_state();
	return CUPTI_SUCCESS;
}

/* Sets the callback (domain, cbid) if one, else every callback of domain, or
 * of every domain if all_domains. */
static CUptiResult set_callbacks(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                 CUpti_CallbackDomain domain, bool one, CUpti_CallbackId cbid,
                                 bool all_domains)
{
	lock_state();
	CUptiResult r = CUPTI_SUCCESS;
	if (!is_ours_locked(subscriber)) {
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else if (all_domains) {
		for (int d = 0; d < CUPTI_CB_DOMAIN_SIZE; d++)
			memset(st.cb_enabled[d], enable != 0, domain_cbids(d));
	} else if (domain_cbids(domain) == 0 || (one && cbid >= domain_cbids(domain))) {
		r = CUPTI_ERROR_INVALID_PARAMETER;
	} else if (one) {
		st.cb_enabled[domain][cbid] = enable != 0;
	} else {
		memset(st.cb_enabled[domain], enable != 0, domain_cbids(domain));
	}
	unlock_state();
	return r;
}

EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                       CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	CHECK_ARMED();
	return set_callbacks(enable, subscriber, domain, true, cbid, false);
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                     CUpti_CallbackDomain domain)
{
	CHECK_ARMED();
	return set_callbacks(enable, subscriber, domain, false, 0, false);
}

EXPORT CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
	CHECK_ARMED();
	return set_callbacks(enable, subscriber, CUPTI_CB_DOMAIN_INVALID, false, 0, true);
}

EXPORT CUptiResult cuptiGetCallbackState(uint32_t *enable, CUpti_SubscriberHandle subscriber,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	CHECK_ARMED();
	if (!enable)
		return CUPTI_ERROR_INVALID_PARAMETER;
	lock_state();
	CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
	if (is_ours_locked(subscriber) && cbid < domain_cbids(domain)) {
		*enable = st.cb_enabled[domain][cbid];
		r = CUPTI_SUCCESS;
	}
	unlock_state();
	return r;
}

/* Detach: the subscriber slot is freed, every kind disabled, the buffer and
 * timestamp callbacks forgotten, and records not yet flushed are lost
 * (counted as dropped; a careful client flushes first). */
EXPORT CUptiResult cuptiFinalize(void)
{
	CHECK_ARMED();
	lock_state();
	st.subscribed = false;
	st.callback = NULL;
	st.callback_arg = NULL;
	st.sub_name[0] = '\0';
	memset(st.cb_enabled, 0, sizeof(st.cb_enabled));
	memset(st.enabled, 0, sizeof(st.enabled));
	st.request = NULL;
	st.complete = NULL;
	st.timestamp = NULL;
	st.dropped += st.q_len;
	queue_drop_head_locked(st.q_len);
	unlock_state();
	return CUPTI_SUCCESS;
}

/* --- the CUDA driver and runtime (fake_cupti.h) ------------------------------------- */

EXPORT CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	lock_state();
	int v = st.driver_version;
	unlock_state();
	if (!v)
		return CUDA_ERROR_STUB_LIBRARY;
	*driverVersion = v;
	return CUDA_SUCCESS;
}

EXPORT cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return cudaErrorInvalidValue;
	lock_state();
	int v = st.runtime_version;
	unlock_state();
	if (!v)
		return cudaErrorStubLibrary;
	*runtimeVersion = v;
	return cudaSuccess;
}

/* The device an ordinal names, under the lock, or the driver's error. */
static CUresult device_locked(CUdevice dev, const struct fake_cuda_device **out)
{
	if (!st.cuda_initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (dev < 0 || dev >= st.ndevices)
		return CUDA_ERROR_INVALID_DEVICE;
	*out = &st.devices[dev];
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	lock_state();
	CUresult r = st.cuda_initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	if (r == CUDA_SUCCESS)
		*count = st.ndevices;
	unlock_state();
	return r;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	const struct fake_cuda_device *d;
	lock_state();
	CUresult r = device_locked(ordinal, &d);
	if (r == CUDA_SUCCESS)
		*device = ordinal;
	unlock_state();
	return r;
}

static bool attribute(const struct fake_cuda_device *d, CUdevice_attribute attrib, int *out)
{
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*out = d->compute_major;
		return true;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		*out = d->compute_minor;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*out = d->max_threads_per_block;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		*out = d->max_threads_per_sm;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
		*out = d->regs_per_block;
		return true;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		*out = d->warp_size;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		*out = d->shared_mem_per_block;
		return true;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		*out = d->sm_count;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
		*out = d->regs_per_sm;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		*out = d->shared_mem_per_block_optin;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
		*out = d->shared_mem_per_sm;
		return true;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
		*out = d->max_blocks_per_sm;
		return true;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
		*out = d->reserved_shared_mem_per_block;
		return true;
	default:
		return false;
	}
}

EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	const struct fake_cuda_device *d;
	lock_state();
	CUresult r = device_locked(dev, &d);
	if (r == CUDA_SUCCESS && !attribute(d, attrib, pi))
		r = CUDA_ERROR_INVALID_VALUE;
	unlock_state();
	return r;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	const struct fake_cuda_device *d;
	lock_state();
	CUresult r = device_locked(dev, &d);
	if (r == CUDA_SUCCESS)
		snprintf(name, (size_t)len, "%s", d->name);
	unlock_state();
	return r;
}

/* cuda.h makes these names the _v2 symbols, as the real library exports. */
EXPORT CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	const struct fake_cuda_device *d;
	lock_state();
	CUresult r = device_locked(dev, &d);
	if (r == CUDA_SUCCESS)
		*bytes = (size_t)d->total_global_mem;
	unlock_state();
	return r;
}

EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	const struct fake_cuda_device *d;
	lock_state();
	CUresult r = device_locked(dev, &d);
	if (r == CUDA_SUCCESS)
		memcpy(uuid->bytes, d->uuid, sizeof(uuid->bytes));
	unlock_state();
	return r;
}

/* The record CUPTI writes for a device at cuInit. */
static CUpti_ActivityDevice5 device_record(const struct fake_cuda_device *d, uint32_t id)
{
	CUpti_ActivityDevice5 r;
	memset(&r, 0, sizeof(r));
	r.kind = CUPTI_ACTIVITY_KIND_DEVICE;
	r.globalMemorySize = d->total_global_mem;
	r.numThreadsPerWarp = (uint32_t)d->warp_size;
	r.numMultiprocessors = (uint32_t)d->sm_count;
	r.maxWarpsPerMultiprocessor = d->warp_size ? (uint32_t)(d->max_threads_per_sm / d->warp_size) : 0;
	r.maxBlocksPerMultiprocessor = (uint32_t)d->max_blocks_per_sm;
	r.maxSharedMemoryPerMultiprocessor = (uint32_t)d->shared_mem_per_sm;
	r.maxRegistersPerMultiprocessor = (uint32_t)d->regs_per_sm;
	r.maxRegistersPerBlock = (uint32_t)d->regs_per_block;
	r.maxSharedMemoryPerBlock = (uint32_t)d->shared_mem_per_block;
	r.maxThreadsPerBlock = (uint32_t)d->max_threads_per_block;
	r.computeCapabilityMajor = (uint32_t)d->compute_major;
	r.computeCapabilityMinor = (uint32_t)d->compute_minor;
	r.id = id;
	memcpy(r.uuid.bytes, d->uuid, sizeof(r.uuid.bytes));
	r.name = d->name;
	r.isCudaVisible = 1;
	return r;
}

EXPORT void fake_cupti_set_cuda_versions(int driver, int runtime)
{
	lock_state();
	st.driver_version = driver;
	st.runtime_version = runtime;
	unlock_state();
}

EXPORT size_t fake_cupti_cuda_init(const struct fake_cuda_device *devices, size_t n)
{
	size_t produced = 0;
	lock_state();
	st.ndevices = 0;
	for (size_t i = 0; i < n && i < FAKE_CUDA_MAX_DEVICES; i++) {
		st.devices[i] = devices[i];
		snprintf(st.device_names[i], sizeof(st.device_names[i]), "%s",
		         devices[i].name ? devices[i].name : "");
		st.devices[i].name = st.device_names[i]; /* lives as long as the library */
		st.ndevices++;
		if (st.enabled[CUPTI_ACTIVITY_KIND_DEVICE]) {
			CUpti_ActivityDevice5 r = device_record(&st.devices[i], (uint32_t)i);
			produced += (size_t)produce_locked(&r, sizeof(r), false);
		}
	}
	st.cuda_initialized = true;
	unlock_state();
	return produced;
}

/* --- control API (fake_cupti.h) ------------------------------------------------------ */

EXPORT void fake_cupti_reset(void)
{
	pthread_mutex_lock(&lock);
	reset_locked();
	pthread_mutex_unlock(&lock);
	atomic_fetch_add(&stacks_generation, 1);
}

EXPORT void fake_cupti_set_version(uint32_t version)
{
	lock_state();
	st.version = version;
	atomic_store(&sizes_version, version);
	unlock_state();
}

EXPORT size_t fake_cupti_record_size(CUpti_ActivityKind kind)
{
	return record_size(kind);
}

static int queue_record(const void *record, size_t size, bool incomplete)
{
	if (!record)
		return -1;
	uint32_t kind = read_kind(record);
	if (record_size(kind) == 0 || size != record_size(kind))
		return -1;
	lock_state();
	int r = st.enabled[kind] ? produce_locked(record, size, incomplete) : 0;
	unlock_state();
	return r;
}

EXPORT int fake_cupti_queue(const void *record, size_t size)
{
	return queue_record(record, size, false);
}

EXPORT int fake_cupti_queue_incomplete(const void *record, size_t size)
{
	return queue_record(record, size, true);
}

EXPORT void fake_cupti_complete_all(void)
{
	lock_state();
	for (size_t i = 0; i < st.q_len; i++)
		st.q[st.q_head + i].incomplete = false;
	st.q_incomplete = 0;
	unlock_state();
}

static uint32_t thread_id_locked(void)
{
	if (st.tid_type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)
		return (uint32_t)gettid();
	return (uint32_t)(uintptr_t)pthread_self();
}

EXPORT uint32_t fake_cupti_api(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint64_t start, uint64_t end)
{
	if (kind != CUPTI_ACTIVITY_KIND_RUNTIME && kind != CUPTI_ACTIVITY_KIND_DRIVER)
		return 0;
	struct thread_stacks *ts = my_stacks(false);
	lock_state();
	uint32_t id = st.next_correlation++;
	bool off = kind == CUPTI_ACTIVITY_KIND_RUNTIME
	               ? cbid < FAKE_RUNTIME_CBID_COUNT && st.runtime_off[cbid]
	               : cbid < FAKE_DRIVER_CBID_COUNT && st.driver_off[cbid];
	if (st.enabled[kind] && !off) {
		if (ts && st.enabled[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]) {
			for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; k++) {
				const struct id_stack *s = &ts->s[k];
				if (s->len == 0)
					continue;
				CUpti_ActivityExternalCorrelation ext = {
				    .kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
				    .externalKind = (CUpti_ExternalCorrelationKind)k,
				    .externalId = s->ids[s->len - 1],
				    .correlationId = id,
				};
				produce_locked(&ext, sizeof(ext), false);
			}
		}
		CUpti_ActivityAPI api = {
		    .kind = kind,
		    .cbid = cbid,
		    .start = start,
		    .end = end,
		    .processId = (uint32_t)getpid(),
		    .threadId = thread_id_locked(),
		    .correlationId = id,
		    .returnValue = 0,
		};
		produce_locked(&api, sizeof(api), false);
	}
	unlock_state();
	return id;
}

EXPORT uint64_t fake_cupti_now(void)
{
	return timestamp_now();
}

EXPORT void fake_cupti_drop_next(size_t n)
{
	lock_state();
	st.drop_next = n;
	unlock_state();
}

EXPORT void fake_cupti_fail(const char *function_name, CUptiResult result, int times)
{
	if (!function_name)
		return;
	lock_state();
	struct armed *slot = NULL;
	for (int i = 0; i < MAX_ARMED && !slot; i++) {
		if (st.armed[i].times != 0 && strcmp(st.armed[i].name, function_name) == 0)
			slot = &st.armed[i];
	}
	if (slot && times == 0) {
		slot->times = 0;
		atomic_fetch_sub(&armed_count, 1);
	} else if (slot) {
		slot->result = result;
		slot->times = times;
	} else if (times != 0) {
		for (int i = 0; i < MAX_ARMED && !slot; i++) {
			if (st.armed[i].times == 0)
				slot = &st.armed[i];
		}
		if (!slot)
			abort(); /* more than MAX_ARMED functions armed: a test bug */
		snprintf(slot->name, sizeof(slot->name), "%s", function_name);
		slot->result = result;
		slot->times = times;
		atomic_fetch_add(&armed_count, 1);
	}
	unlock_state();
}

EXPORT void fake_cupti_hold_subscriber(const char *holder_name)
{
	lock_state();
	snprintf(st.held_by, sizeof(st.held_by), "%s", holder_name ? holder_name : "");
	unlock_state();
}

EXPORT bool fake_cupti_fire_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cbdata)
{
	lock_state();
	CUpti_CallbackFunc cb = NULL;
	void *arg = NULL;
	if (st.subscribed && st.callback && cbid < domain_cbids(domain) && st.cb_enabled[domain][cbid]) {
		cb = st.callback;
		arg = st.callback_arg;
	}
	unlock_state();
	if (cb)
		cb(arg, domain, cbid, cbdata);
	return cb != NULL;
}

EXPORT bool fake_cupti_callback_enabled(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
	lock_state();
	bool on = st.subscribed && cbid < domain_cbids(domain) && st.cb_enabled[domain][cbid];
	unlock_state();
	return on;
}

EXPORT bool fake_cupti_subscribed(void)
{
	lock_state();
	bool on = st.subscribed;
	unlock_state();
	return on;
}

EXPORT bool fake_cupti_kind_enabled(CUpti_ActivityKind kind)
{
	if ((unsigned)kind >= CUPTI_ACTIVITY_KIND_COUNT)
		return false;
	lock_state();
	bool on = st.enabled[kind];
	unlock_state();
	return on;
}

EXPORT size_t fake_cupti_pending(void)
{
	lock_state();
	size_t n = st.q_len;
	unlock_state();
	return n;
}

EXPORT size_t fake_cupti_buffers_requested(void)
{
	lock_state();
	size_t n = st.requested;
	unlock_state();
	return n;
}

EXPORT size_t fake_cupti_buffers_completed(void)
{
	lock_state();
	size_t n = st.completed;
	unlock_state();
	return n;
}

EXPORT size_t fake_cupti_dropped(void)
{
	lock_state();
	size_t n = st.dropped;
	unlock_state();
	return n;
}

EXPORT int fake_cupti_stack_depth(CUpti_ExternalCorrelationKind kind)
{
	if (!valid_external_kind(kind))
		return 0;
	struct thread_stacks *ts = my_stacks(false);
	return ts ? (int)ts->s[kind].len : 0;
}

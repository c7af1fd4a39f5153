/* NVTX capture: strobe as the process's NVTX tool.
 *
 * NVTX v3 is header-only. On the first NVTX call in each module (each
 * binary or library compiled with the headers), the module's loader reads
 * NVTX_INJECTION64_PATH, dlopens that library and calls its
 * InitializeInjectionNvtx2 with the module's export table; the tool then
 * fills the module's function table with its handlers. libstrobe_inject.so
 * forwards that call here, so it may come once per module and from several
 * threads at once: each call fills only its own module's table, and the
 * shared state below is set up once.
 *
 * Push/pop ranges become user_annotation ranges exactly like
 * strobe_range_push (so GPU work links to them), start/end ranges become
 * ranges on their own rows, marks become instants; domains get their own
 * rows and event attributes become args. Handlers cost what the capture
 * calls cost, plus the attribute copy for the Ex forms. */
#define LOG_TAG "nvtx"
#include "nvtx/nvtx.h"

#ifdef STROBE_HAVE_NVTX

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

/* A tool, not a client: the types and ids, none of NVTX's own functions. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "common/log.h"
#include "common/opts.h"
#include "core/capture.h"
#include "core/names.h"
#include "core/tbuf.h"

/* A domain handle points at its number in this table; NULL is the default
 * domain. */
struct nvtxDomainRegistration_st {
	uint32_t index;
};
static struct nvtxDomainRegistration_st domain_handles[STRB_DOMAINS_MAX];

static uint32_t domain_index(nvtxDomainHandle_t d)
{
	if (!d || d < domain_handles || d >= domain_handles + STRB_DOMAINS_MAX)
		return 0;
	return d->index;
}

/* Range depth per thread and domain, for the values push and pop return. */
static __thread int depth[STRB_DOMAINS_MAX];

/* Wide strings (UTF-32 on Linux) become UTF-8; what does not fit is cut. */
#define WIDE_MAX (STRB_NAME_MAX + 1)

static const char *from_wide(const wchar_t *w, char *out)
{
	if (!w)
		return NULL;
	size_t n = 0;
	for (; *w; w++) {
		uint32_t c = (uint32_t)*w;
		if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			c = 0xfffd;
		unsigned len = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
		if (n + len >= WIDE_MAX)
			break;
		if (len == 1) {
			out[n++] = (char)c;
			continue;
		}
		static const uint8_t lead[] = {0, 0, 0xc0, 0xe0, 0xf0};
		for (unsigned i = len - 1; i > 0; i--) {
			out[n + i] = (char)(0x80 | (c & 0x3f));
			c >>= 6;
		}
		out[n] = (char)(lead[len] | c);
		n += len;
	}
	out[n] = 0;
	return out;
}

/* Reads the fields the caller's struct has (its size says which) into a
 * message and capture attributes; returns false when it has none. */
static bool read_attrs(const nvtxEventAttributes_t *ea, const char **msg, char *wide,
                       struct strb_rec_attrs *at)
{
	*msg = NULL;
	memset(at, 0, sizeof(*at));
	if (!STRB_OPTS_HAS(ea, color))
		return false;
	if (ea->colorType == NVTX_COLOR_ARGB) {
		at->has |= STRB_ATTR_COLOR;
		at->color = ea->color;
	}
	if (ea->category) {
		at->has |= STRB_ATTR_CATEGORY;
		at->category = ea->category;
	}
	if (STRB_OPTS_HAS(ea, payload)) {
		switch (ea->payloadType) {
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
			at->payload_kind = STRB_PAYLOAD_U64;
			at->payload.u64 = ea->payload.ullValue;
			break;
		case NVTX_PAYLOAD_TYPE_INT64:
			at->payload_kind = STRB_PAYLOAD_I64;
			at->payload.i64 = ea->payload.llValue;
			break;
		case NVTX_PAYLOAD_TYPE_DOUBLE:
			at->payload_kind = STRB_PAYLOAD_F64;
			at->payload.f64 = ea->payload.dValue;
			break;
		case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
			at->payload_kind = STRB_PAYLOAD_U64;
			at->payload.u64 = ea->payload.uiValue;
			break;
		case NVTX_PAYLOAD_TYPE_INT32:
			at->payload_kind = STRB_PAYLOAD_I64;
			at->payload.i64 = ea->payload.iValue;
			break;
		case NVTX_PAYLOAD_TYPE_FLOAT:
			at->payload_kind = STRB_PAYLOAD_F64;
			at->payload.f64 = ea->payload.fValue;
			break;
		default:
			break;
		}
	}
	if (STRB_OPTS_HAS(ea, message)) {
		switch (ea->messageType) {
		case NVTX_MESSAGE_TYPE_ASCII:
			*msg = ea->message.ascii;
			break;
		case NVTX_MESSAGE_TYPE_UNICODE:
			*msg = from_wide(ea->message.unicode, wide);
			break;
		case NVTX_MESSAGE_TYPE_REGISTERED:
			/* Handles come from register_string below: our own copies. */
			*msg = (const char *)ea->message.registered;
			break;
		default:
			break;
		}
	}
	return at->has || at->payload_kind != STRB_PAYLOAD_NONE;
}

static int push(uint32_t d, const char *msg, const struct strb_rec_attrs *at)
{
	strb_capture_push(d, msg ? msg : "", at);
	return depth[d]++;
}

static int pop(uint32_t d)
{
	if (depth[d] <= 0)
		return -1; /* NVTX's answer to a pop without a push; nothing recorded */
	strb_capture_pop(d);
	return --depth[d];
}

/* An Ex call's message and attributes, decoded once for all three kinds. */
struct ex_event {
	const char *msg;                    /* never NULL */
	const struct strb_rec_attrs *attrs; /* NULL when it has none */
	struct strb_rec_attrs at;
	char wide[WIDE_MAX];
};

static void decode(const nvtxEventAttributes_t *ea, struct ex_event *e)
{
	bool has = read_attrs(ea, &e->msg, e->wide, &e->at);
	e->msg = e->msg ? e->msg : "";
	e->attrs = has ? &e->at : NULL;
}

static int push_ex(uint32_t d, const nvtxEventAttributes_t *ea)
{
	struct ex_event e;
	decode(ea, &e);
	return push(d, e.msg, e.attrs);
}

static void mark_ex(uint32_t d, const nvtxEventAttributes_t *ea)
{
	struct ex_event e;
	decode(ea, &e);
	strb_capture_mark(d, e.msg, e.attrs);
}

static nvtxRangeId_t start_ex(uint32_t d, const nvtxEventAttributes_t *ea)
{
	struct ex_event e;
	decode(ea, &e);
	return strb_capture_async_start(d, e.msg, e.attrs);
}

/* --- CORE --- */

static void h_mark_ex(const nvtxEventAttributes_t *ea)
{
	mark_ex(0, ea);
}

static void h_mark_a(const char *msg)
{
	strb_capture_mark(0, msg ? msg : "", NULL);
}

static void h_mark_w(const wchar_t *msg)
{
	char buf[WIDE_MAX];
	h_mark_a(from_wide(msg, buf));
}

static nvtxRangeId_t h_start_ex(const nvtxEventAttributes_t *ea)
{
	return start_ex(0, ea);
}

static nvtxRangeId_t h_start_a(const char *msg)
{
	return strb_capture_async_start(0, msg ? msg : "", NULL);
}

static nvtxRangeId_t h_start_w(const wchar_t *msg)
{
	char buf[WIDE_MAX];
	return h_start_a(from_wide(msg, buf));
}

static void h_end(nvtxRangeId_t id)
{
	strb_capture_async_end(id);
}

static int h_push_ex(const nvtxEventAttributes_t *ea)
{
	return push_ex(0, ea);
}

static int h_push_a(const char *msg)
{
	return push(0, msg, NULL);
}

static int h_push_w(const wchar_t *msg)
{
	char buf[WIDE_MAX];
	return push(0, from_wide(msg, buf), NULL);
}

static int h_pop(void)
{
	return pop(0);
}

static void h_name_category_a(uint32_t id, const char *name)
{
	strb_category_set(0, id, name);
}

static void h_name_category_w(uint32_t id, const wchar_t *name)
{
	char buf[WIDE_MAX];
	strb_category_set(0, id, from_wide(name, buf));
}

static void h_name_thread_a(uint32_t tid, const char *name)
{
	if (!name)
		return;
	strb_thread_name_by_tid((pid_t)tid, name);
	if ((pid_t)tid == (pid_t)syscall(SYS_gettid))
		strb_thread_name_set(name);
}

static void h_name_thread_w(uint32_t tid, const wchar_t *name)
{
	char buf[WIDE_MAX];
	h_name_thread_a(tid, from_wide(name, buf));
}

/* --- CORE2: domains --- */

static void h_dmark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *ea)
{
	mark_ex(domain_index(d), ea);
}

static nvtxRangeId_t h_dstart_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *ea)
{
	return start_ex(domain_index(d), ea);
}

static void h_dend(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	(void)d;
	strb_capture_async_end(id);
}

static int h_dpush_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *ea)
{
	return push_ex(domain_index(d), ea);
}

static int h_dpop(nvtxDomainHandle_t d)
{
	return pop(domain_index(d));
}

static void h_dname_category_a(nvtxDomainHandle_t d, uint32_t id, const char *name)
{
	strb_category_set(domain_index(d), id, name);
}

static void h_dname_category_w(nvtxDomainHandle_t d, uint32_t id, const wchar_t *name)
{
	char buf[WIDE_MAX];
	strb_category_set(domain_index(d), id, from_wide(name, buf));
}

/* Registered strings live as long as the process, as NVTX promises the
 * caller (a program registers a bounded set); kept on a list so they stay
 * reachable. */
struct registered {
	struct registered *next;
	char text[];
};
static _Atomic(struct registered *) registered_strings;

static nvtxStringHandle_t h_dregister_a(nvtxDomainHandle_t d, const char *s)
{
	(void)d;
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	struct registered *r = malloc(sizeof(*r) + n);
	if (!r)
		return NULL;
	memcpy(r->text, s, n);
	r->next = atomic_load(&registered_strings);
	while (!atomic_compare_exchange_weak(&registered_strings, &r->next, r))
		;
	return (nvtxStringHandle_t)(void *)r->text;
}

static nvtxStringHandle_t h_dregister_w(nvtxDomainHandle_t d, const wchar_t *s)
{
	char buf[WIDE_MAX];
	return h_dregister_a(d, from_wide(s, buf));
}

static nvtxDomainHandle_t h_dcreate_a(const char *name)
{
	uint32_t i = strb_domain_register(name);
	domain_handles[i].index = i;
	return &domain_handles[i];
}

static nvtxDomainHandle_t h_dcreate_w(const wchar_t *name)
{
	char buf[WIDE_MAX];
	return h_dcreate_a(from_wide(name, buf));
}

static void h_ddestroy(nvtxDomainHandle_t d)
{
	(void)d; /* its rows stay named in traces still to be written */
}

static void h_initialize(const void *reserved)
{
	(void)reserved;
}

struct slot {
	unsigned id;
	NvtxFunctionPointer fn;
};

#define SLOT(id, fn)                                                                                         \
	{                                                                                                    \
		id, (NvtxFunctionPointer)(void (*)(void))(fn)                                                \
	}

static const struct slot core_slots[] = {
    SLOT(NVTX_CBID_CORE_MarkEx, h_mark_ex),
    SLOT(NVTX_CBID_CORE_MarkA, h_mark_a),
    SLOT(NVTX_CBID_CORE_MarkW, h_mark_w),
    SLOT(NVTX_CBID_CORE_RangeStartEx, h_start_ex),
    SLOT(NVTX_CBID_CORE_RangeStartA, h_start_a),
    SLOT(NVTX_CBID_CORE_RangeStartW, h_start_w),
    SLOT(NVTX_CBID_CORE_RangeEnd, h_end),
    SLOT(NVTX_CBID_CORE_RangePushEx, h_push_ex),
    SLOT(NVTX_CBID_CORE_RangePushA, h_push_a),
    SLOT(NVTX_CBID_CORE_RangePushW, h_push_w),
    SLOT(NVTX_CBID_CORE_RangePop, h_pop),
    SLOT(NVTX_CBID_CORE_NameCategoryA, h_name_category_a),
    SLOT(NVTX_CBID_CORE_NameCategoryW, h_name_category_w),
    SLOT(NVTX_CBID_CORE_NameOsThreadA, h_name_thread_a),
    SLOT(NVTX_CBID_CORE_NameOsThreadW, h_name_thread_w),
};

static const struct slot core2_slots[] = {
    SLOT(NVTX_CBID_CORE2_DomainMarkEx, h_dmark_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, h_dstart_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangeEnd, h_dend),
    SLOT(NVTX_CBID_CORE2_DomainRangePushEx, h_dpush_ex),
    SLOT(NVTX_CBID_CORE2_DomainRangePop, h_dpop),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryA, h_dname_category_a),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryW, h_dname_category_w),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, h_dregister_a),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, h_dregister_w),
    SLOT(NVTX_CBID_CORE2_DomainCreateA, h_dcreate_a),
    SLOT(NVTX_CBID_CORE2_DomainCreateW, h_dcreate_w),
    SLOT(NVTX_CBID_CORE2_DomainDestroy, h_ddestroy),
    SLOT(NVTX_CBID_CORE2_Initialize, h_initialize),
};

static bool fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const struct slot *slots,
                 size_t n)
{
	NvtxFunctionTable table = NULL;
	unsigned int size = 0;
	if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
		return false;
	for (size_t i = 0; i < n; i++)
		if (slots[i].id <= size && table[slots[i].id])
			*table[slots[i].id] = slots[i].fn;
	return true;
}

static _Atomic unsigned modules;

int strb_nvtx_inject(const void *get_export_table)
{
	NvtxGetExportTableFunc_t get = (NvtxGetExportTableFunc_t)(uintptr_t)get_export_table;
	const NvtxExportTableCallbacks *cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
	if (!cb || cb->struct_size < sizeof(*cb) || !cb->GetModuleFunctionTable) {
		LOGW("NVTX asked strobe to capture, but its export table is unusable; NVTX calls are not "
		     "recorded");
		return 0;
	}
	if (!fill(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof(core_slots) / sizeof(core_slots[0]))) {
		LOGW("NVTX's core function table is unavailable; NVTX calls are not recorded");
		return 0;
	}
	/* Older NVTX has no CORE2 (domains); the core calls still work. */
	fill(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof(core2_slots) / sizeof(core2_slots[0]));
	unsigned n = atomic_fetch_add(&modules, 1) + 1;
	LOGI("NVTX capture on (module %u)", n);
	return 1;
}

#else /* !STROBE_HAVE_NVTX */

#include "common/log.h"

int strb_nvtx_inject(const void *get_export_table)
{
	(void)get_export_table;
	LOGW("this libstrobe was built without the NVTX headers; NVTX calls are not recorded");
	return 0;
}

#endif

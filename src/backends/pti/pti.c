/* The Intel XPU backend (Intel PTI, libpti_view): views, buffers,
 * external correlation and the backend vtable.
 *
 * PTI asks for buffers from its request callback (on whichever thread
 * produces the first record of a buffer) and hands them back, partly filled,
 * on its own consumer thread; ptiFlushAllViews hands back every buffer that
 * holds records and waits until each completion callback has returned. The
 * callbacks take only the buffer pool's lock, and the backend never holds
 * that lock (or any lock a callback needs) while it calls into PTI.
 *
 * Views are enabled in prepare, after ptiViewSetCallbacks and
 * ptiViewSetTimestampCallback (strobe's clock), so that the first enable
 * says whether PTI works here at all and its cost stays out of the trace;
 * records made before start are counted as warm-up and dropped. */
#define LOG_TAG "pti"
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/pti/pti_lib.h"
#include "backends/pti/pti_state.h"
#include "common/config.h"
#include "common/log.h"
#include "core/clock.h"

#define BUFFER_BYTES (4u << 20) /* libkineto's size */
_Static_assert(BUFFER_BYTES >= PTI_LARGEST_RECORD_V2, "a buffer holds the largest record of either family");

struct strb_pti_state strb_pti = {
    .pool = STRB_GPU_POOL_INIT(strb_pti.pool),
};

static bool in_fork_child;
/* The library the correlation hook calls (program threads read it while
 * the trace's thread prepares). */
static const struct strb_pti_lib *_Atomic hook_lib;

static uint64_t timestamp_cb(void)
{
	return strb_clock_ticks_to_ns(strb_clock_ticks());
}

/* PTI's threads (request: the thread that produces a record; completion:
 * PTI's consumer thread). */
static void buffer_requested(unsigned char **buf, size_t *size)
{
	size_t n = BUFFER_BYTES;
	*buf = strb_gpu_pool_request(&strb_pti.pool, &n);
	*size = *buf ? n : 0;
}

static void buffer_completed(unsigned char *buf, size_t size, size_t used)
{
	(void)size;
	if (buf)
		strb_gpu_pool_complete(&strb_pti.pool, buf, used);
}

/* strobe_correlation_push (CUSTOM_0) and strobe_user_correlation_push
 * (CUSTOM_1), on the pushing thread. Pushed only while a trace takes XPU
 * records; pops always reach PTI, so its stacks are empty afterwards. */
static bool correlation_hook(uint32_t which, const uint64_t *id)
{
	const struct strb_pti_lib *lib = atomic_load_explicit(&hook_lib, memory_order_acquire);
	uint32_t kind = which ? PTI_VIEW_EXTERNAL_KIND_CUSTOM_1 : PTI_VIEW_EXTERNAL_KIND_CUSTOM_0;
	if (!lib)
		return false;
	if (id)
		return strb_gpu_pool_active(&strb_pti.pool) && lib->push_external(kind, *id) == PTI_SUCCESS;
	uint64_t last;
	lib->pop_external(kind, &last);
	return true;
}

/* ---- views --------------------------------------------------------------- */

static uint64_t xpu_types(void)
{
	return STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMCPY) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMSET) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_RUNTIME) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_DRIVER) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_SYNC) | STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_OVERHEAD) |
	       STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_COLLECTIVE_COMM);
}

/* libkineto's mapping of activity types to views; external correlation
 * whenever GPU work is recorded (it carries strobe's pushed ids). */
static void choose_views(uint64_t mask)
{
	static const struct {
		enum strobe_activity_type type;
		pti_view_kind_t view;
	} map[] = {
	    {STROBE_ACTIVITY_CONCURRENT_KERNEL, PTI_VIEW_DEVICE_GPU_KERNEL},
	    {STROBE_ACTIVITY_GPU_MEMCPY, PTI_VIEW_DEVICE_GPU_MEM_COPY},
	    {STROBE_ACTIVITY_GPU_MEMCPY, PTI_VIEW_DEVICE_GPU_MEM_COPY_P2P},
	    {STROBE_ACTIVITY_GPU_MEMSET, PTI_VIEW_DEVICE_GPU_MEM_FILL},
	    {STROBE_ACTIVITY_XPU_RUNTIME, PTI_VIEW_RUNTIME_API},
	    {STROBE_ACTIVITY_XPU_DRIVER, PTI_VIEW_DRIVER_API},
	    {STROBE_ACTIVITY_XPU_SYNC, PTI_VIEW_DEVICE_SYNCHRONIZATION},
	    {STROBE_ACTIVITY_OVERHEAD, PTI_VIEW_COLLECTION_OVERHEAD},
	    {STROBE_ACTIVITY_COLLECTIVE_COMM, PTI_VIEW_COMMUNICATION},
	};
	struct strb_pti_state *s = &strb_pti;
	uint64_t work = STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_CONCURRENT_KERNEL) |
	                STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMCPY) |
	                STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_GPU_MEMSET);
	s->nviews = 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (mask & STROBE_ACTIVITY_BIT(map[i].type))
			s->views[s->nviews++] = map[i].view;
	if (mask & work)
		s->views[s->nviews++] = PTI_VIEW_EXTERNAL_CORRELATION;
}

/* Views that an older PTI lacks: refused without turning capture off. */
static bool optional_view(pti_view_kind_t v)
{
	return v == PTI_VIEW_COMMUNICATION || v == PTI_VIEW_DEVICE_SYNCHRONIZATION ||
	       v == PTI_VIEW_COLLECTION_OVERHEAD;
}

/* Enables (or disables) the chosen views. Enabling stops at the first
 * required view PTI refuses: its result is returned, the views enabled so
 * far are disabled again. */
static pti_result_t set_views(bool on, pti_view_kind_t *failed)
{
	struct strb_pti_state *s = &strb_pti;
	const struct strb_pti_lib *lib = s->lib;
	if (!on) {
		if (s->enabled)
			for (int i = s->nviews; i-- > 0;)
				lib->disable(s->views[i]);
		s->enabled = false;
		return PTI_SUCCESS;
	}
	int kept = 0;
	for (int i = 0; i < s->nviews; i++) {
		pti_result_t r = lib->enable(s->views[i]);
		if (r == PTI_SUCCESS) {
			s->views[kept++] = s->views[i];
			continue;
		}
		if (optional_view(s->views[i]) && r != PTI_ERROR_NOT_IMPLEMENTED) {
			char name[64];
			LOGW("XPU (PTI): view %u not available in PTI %s (%s); its records are left out",
			     (unsigned)s->views[i], lib->version_string,
			     strb_pti_result(lib, r, name, sizeof(name)));
			continue;
		}
		while (kept-- > 0)
			lib->disable(s->views[kept]);
		*failed = s->views[i];
		s->nviews = 0;
		return r;
	}
	s->nviews = kept;
	s->enabled = true;
	if (lib->enable_runtime_api_class && (s->mask & STROBE_ACTIVITY_BIT(STROBE_ACTIVITY_XPU_RUNTIME)))
		lib->enable_runtime_api_class(1, PTI_API_CLASS_GPU_OPERATION_CORE, PTI_API_GROUP_ALL);
	return PTI_SUCCESS;
}

/* ---- names and devices ----------------------------------------------------- */

static void type_names(void)
{
	static const char *const mem[] = {"MEMORY", "HOST", "DEVICE", "SHARED"};
	static const char letter[] = {'M', 'H', 'D', 'S'};
	struct strb_pti_state *s = &strb_pti;
	for (uint32_t i = 0; i < 4; i++) {
		const char *n = s->lib->memory_type_string ? s->lib->memory_type_string(i) : NULL;
		snprintf(s->memory_type[i], sizeof(s->memory_type[i]), "%s",
		         n && *n && strcmp(n, "INVALID") ? n : mem[i]);
	}
	for (uint32_t i = 0; i < 16; i++) {
		const char *n = s->lib->memcpy_type_string ? s->lib->memcpy_type_string(i) : NULL;
		if (n && *n && strcmp(n, "INVALID"))
			snprintf(s->memcpy_type[i], sizeof(s->memcpy_type[i]), "%s", n);
		else
			snprintf(s->memcpy_type[i], sizeof(s->memcpy_type[i]), "%c2%c", letter[i / 4],
			         letter[i % 4]);
	}
}

static int cmp_pci(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Intel display-class PCI functions (vendor 0x8086, class 0x03xxxx), by
 * address: the order device indexes follow. */
static void scan_pci(void)
{
	struct strb_pti_state *s = &strb_pti;
	s->npci = 0;
	DIR *d = opendir("/sys/bus/pci/devices");
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && s->npci < STRB_GPU_MAX_DEVICES) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= PTI_MAX_PCI_ADDRESS_SIZE)
			continue;
		char path[320], vendor[16] = "", class[16] = "";
		FILE *f;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		if ((f = fopen(path, "re"))) {
			if (!fgets(vendor, sizeof(vendor), f))
				vendor[0] = 0;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", e->d_name);
		if ((f = fopen(path, "re"))) {
			if (!fgets(class, sizeof(class), f))
				class[0] = 0;
			fclose(f);
		}
		if (strncmp(vendor, "0x8086", 6) || strncmp(class, "0x03", 4))
			continue;
		memcpy(s->pci[s->npci++], e->d_name, strlen(e->d_name) + 1); /* checked above */
	}
	closedir(d);
	qsort(s->pci, (size_t)s->npci, sizeof(s->pci[0]), cmp_pci);
}

/* ---- the backend ----------------------------------------------------------- */

static void release(void)
{
	struct strb_pti_state *s = &strb_pti;
	strb_gpu_pool_set_active(&s->pool, false);
	if (s->lib && s->enabled) {
		set_views(false, NULL);
		/* Buffers PTI still holds come back now (and, inactive, are freed). */
		s->lib->flush_all();
	}
	strb_gpu_pool_free(&s->pool, strb_gpu_pool_take(&s->pool));
}

static int fail(char *why, size_t len, const char *call, pti_result_t r)
{
	char name[64];
	strb_pti_result(strb_pti.lib, r, name, sizeof(name));
	snprintf(why, len, "%s failed: %s (PTI %s at %.200s%s)", call, name, strb_pti.lib->version_string,
	         strb_pti.lib->path,
	         r == PTI_ERROR_NOT_IMPLEMENTED ? "; PTI could not load its Level Zero backend: no Intel GPU "
	                                          "driver or loader?"
	                                        : "");
	return r == PTI_ERROR_NOT_IMPLEMENTED ? -ENOTSUP : -EIO;
}

static int prepare(const struct strb_config *cfg, uint64_t mask, char *why, size_t len)
{
	struct strb_pti_state *s = &strb_pti;
	release();
	s->attempted = false;
	if (!(mask & xpu_types()))
		return 1;
	if (in_fork_child) {
		snprintf(why, len, "PTI does not follow a fork into a child process");
		return -ENOTSUP;
	}
	s->lib = strb_pti_load(why, len);
	if (!s->lib)
		return -ENOENT;
	s->attempted = true;
	const struct strb_pti_lib *lib = s->lib;
	/* Strobe's clock before the first enable: records are then in one
	 * domain (PTI's default is CLOCK_REALTIME). */
	pti_result_t r = lib->set_timestamp_callback(timestamp_cb);
	if (r != PTI_SUCCESS)
		return fail(why, len, "ptiViewSetTimestampCallback", r);
	r = lib->set_callbacks(buffer_requested, buffer_completed);
	if (r != PTI_SUCCESS)
		return fail(why, len, "ptiViewSetCallbacks", r);
	s->mask = mask;
	strb_gpu_pool_begin(&s->pool, cfg->max_gpu_buffer_bytes, BUFFER_BYTES, true);
	choose_views(mask);
	pti_view_kind_t failed = 0;
	r = set_views(true, &failed);
	if (r != PTI_SUCCESS) {
		strb_gpu_pool_set_active(&s->pool, false);
		char call[48];
		snprintf(call, sizeof(call), "ptiViewEnable(%u)", (unsigned)failed);
		return fail(why, len, call, r);
	}
	type_names();
	scan_pci();
	s->pauses.n = 0;
	s->pauses.paused = false;
	atomic_store_explicit(&hook_lib, lib, memory_order_release);
	strb_gpu_set_correlation_hook(STRB_GPU_XPU, correlation_hook);
	return 0;
}

static size_t count_records(struct strb_gpu_buffer *b)
{
	size_t n = 0;
	for (; b; b = b->next) {
		pti_record_base_t *rec = NULL;
		while (strb_pti.lib->next_record(b->data, b->valid, &rec) == PTI_SUCCESS && rec)
			n++;
	}
	return n;
}

static void start(void)
{
	/* What arrived before the window is warm-up: count it, drop it. */
	strb_pti.lib->flush_all();
	struct strb_gpu_buffer *warm = strb_gpu_pool_take(&strb_pti.pool);
	strb_gpu_pool_add_warmup(&strb_pti.pool, count_records(warm));
	strb_gpu_pool_free(&strb_pti.pool, warm);
}

static void stop(void)
{
	struct strb_pti_state *s = &strb_pti;
	/* Records of work that finished are flushed before the views close,
	 * then what closing them completed. No lock of ours is held: the
	 * completion callbacks run (and are waited for) inside the flushes. */
	s->lib->flush_all();
	set_views(false, NULL);
	s->lib->flush_all();
}

static void toggle(bool enable)
{
	struct strb_pti_state *s = &strb_pti;
	if (enable == !s->pauses.paused)
		return;
	uint64_t now = timestamp_cb();
	if (!enable) {
		set_views(false, NULL);
		s->lib->flush_all();
		strb_gpu_pause(&s->pauses, false, now);
	} else {
		pti_view_kind_t failed = 0;
		strb_gpu_pause(&s->pauses, true, now);
		if (set_views(true, &failed) != PTI_SUCCESS)
			LOGW("XPU (PTI): ptiViewEnable(%u) failed on resume: no XPU records after this point",
			     (unsigned)failed);
	}
}

static int process(struct strobe_trace *t, const struct strb_window *w)
{
	struct strb_gpu_buffer *b = strb_gpu_pool_take(&strb_pti.pool);
	int rc = strb_pti_convert(t, w, b);
	strb_gpu_pool_free(&strb_pti.pool, b);
	return rc;
}

/* Flight mode: what PTI completed so far, decoded from a copy; its
 * buffers stay for later dumps (and rotate at the budget). */
static int flight_dump(struct strobe_trace *t, const struct strb_window *w)
{
	strb_pti.lib->flush_all();
	return strb_gpu_pool_decode_copy(&strb_pti.pool, strb_pti_convert, t, w);
}

static int metadata(struct strobe_trace *t)
{
	if (!strb_pti.attempted || !strb_pti.lib)
		return 0;
	struct strobe_arg v = {
	    .key = "xpupti_version", .kind = STROBE_ARG_STRING, .value.str = strb_pti.lib->version_string};
	return strb_trace_set_meta(t, &v);
}

static void atfork_child(void)
{
	/* PTI's consumer thread is gone: forget it all; capture stays off. */
	strb_gpu_pool_atfork_child(&strb_pti.pool);
	strb_pti.enabled = false;
	strb_pti.lib = NULL;
	atomic_store(&hook_lib, NULL);
	in_fork_child = true;
	strb_gpu_set_correlation_hook(STRB_GPU_XPU, NULL);
}

const struct strb_backend strb_pti_backend = {
    .name = "XPU (Intel PTI)",
    .capture_key = "xpu_capture",
    .prepare = prepare,
    .start = start,
    .stop = stop,
    .toggle = toggle,
    .process = process,
    .flight_dump = flight_dump,
    .metadata = metadata,
    .release = release,
    .atfork_child = atfork_child,
};

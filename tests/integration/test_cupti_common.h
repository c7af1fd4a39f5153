/* Helpers shared by the CUPTI backend tests (test_cupti_*.c): building
 * CUPTI records for the fake libcupti and reading strobe's accounting back
 * from a saved trace. Everything is static inline so each test uses what it
 * needs. */
#ifndef STROBE_TEST_CUPTI_COMMON_H
#define STROBE_TEST_CUPTI_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fake_cupti.h"
#include "strobe/strobe.h"
#include "testutil.h"

/* Before strobe_init: strobe dlopens the very fake this test links. */
static inline void ct_use_fake(void)
{
	setenv("STROBE_CUPTI_PATH", FAKE_CUPTI_PATH, 1);
}

static inline uint32_t ct_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* A timestamp at least gap ns after `after`, in strobe's clock. */
static inline uint64_t ct_stamp_after(uint64_t after, uint64_t gap)
{
	uint64_t t;
	while ((t = fake_cupti_now()) < after + gap)
		;
	return t;
}

static inline CUpti_ActivityKernel10 ct_kernel(uint32_t corr, uint32_t device, uint32_t stream,
                                               uint64_t start, uint64_t end, const char *name)
{
	CUpti_ActivityKernel10 k = {
	    .kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	    .start = start,
	    .end = end,
	    .deviceId = device,
	    .contextId = 100 + device,
	    .streamId = stream,
	    .gridX = 1,
	    .gridY = 1,
	    .gridZ = 1,
	    .blockX = 128,
	    .blockY = 1,
	    .blockZ = 1,
	    .correlationId = corr,
	    .name = name,
	    .channelID = 0xffffffffu,
	};
	return k;
}

/* A runtime or driver record as CUPTI writes it for a call on this thread. */
static inline CUpti_ActivityAPI ct_api(CUpti_ActivityKind kind, CUpti_CallbackId cbid, uint32_t corr,
                                       uint64_t start, uint64_t end)
{
	CUpti_ActivityAPI a = {
	    .kind = kind,
	    .cbid = cbid,
	    .start = start,
	    .end = end,
	    .processId = (uint32_t)getpid(),
	    .threadId = ct_tid(),
	    .correlationId = corr,
	};
	return a;
}

/* Queues a record struct (by value); it must be taken. */
#define CT_QUEUE(rec)                                                                                        \
	do {                                                                                                 \
		__typeof__(rec) ct_rec_ = (rec);                                                             \
		assert_int_equal(fake_cupti_queue(&ct_rec_, sizeof(ct_rec_)), 1);                            \
	} while (0)

/* Stops the trace once the clock is past after + gap ns (every record ends
 * inside the window), saves it as tu_dir/NAME.json into path and parses it. */
static inline yajl_val ct_stop_and_load(uint64_t after, uint64_t gap, const char *name, char *path,
                                        size_t path_len)
{
	ct_stamp_after(after, gap);
	strobe_trace *t = NULL;
	assert_int_equal(strobe_stop(&t), 0);
	snprintf(path, path_len, "%s/%s.json", tu_dir, name);
	assert_int_equal(strobe_trace_save(t, path), 0);
	strobe_trace_destroy(t);
	return tu_load_trace(path);
}

/* A member of the trace's "strobe" accounting object. */
static inline double ct_stat(yajl_val root, const char *key)
{
	yajl_val s = tu_get(root, "strobe");
	if (!s)
		fail_msg("the trace has no \"strobe\" object");
	return tu_get_num(s, key);
}

#endif

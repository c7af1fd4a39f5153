/* Device backends (CUPTI today; ROCm and XPU later) behind one vtable. A
 * backend collects vendor records while a trace runs and, at processing,
 * decodes them into the shared GPU layer (process/gpu.h), which links them
 * to the CPU activities already there. All calls come from the thread
 * driving the trace, under the controller's lock. A backend is built in by
 * one strobe_add_backend() call in the top-level CMakeLists.txt, which also
 * lists it here (strb_backends, in the order of the calls). */
#ifndef STROBE_BACKENDS_BACKEND_H
#define STROBE_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strb_config;
struct strb_window;
struct strobe_trace;

struct strb_backend {
	const char *name; /* in "NAME capture is off: why" */
	/* The trace's top-level metadata key for this vendor's off-reason,
	 * written only when the backend is compiled in and its capture is off
	 * for the trace: "gpu_capture" (CUDA; the key tools already read),
	 * "rocm_capture", "xpu_capture". */
	const char *capture_key;
	/* A trace is being prepared with these types. Returns 0 when the
	 * backend takes part; otherwise fills why (the reason capture is off,
	 * for the log and the trace metadata) and returns a negative status.
	 * May be called again without release (the trace was replaced). */
	int (*prepare)(const struct strb_config *cfg, uint64_t mask, char *why, size_t why_len);
	void (*start)(void);
	void (*stop)(void);
	void (*toggle)(bool enable);
	/* Adds its activities, rows and accounting to the trace. */
	int (*process)(struct strobe_trace *t, const struct strb_window *w);
	/* Optional, flight mode: adds the records collected so far (within the
	 * window w) to t without consuming them; capture goes on. */
	int (*flight_dump)(struct strobe_trace *t, const struct strb_window *w);
	/* Optional: trace metadata of its own (the vendor library's version),
	 * written whether capture was on or off for the trace. */
	int (*metadata)(struct strobe_trace *t);
	/* The trace is over (processed or discarded): free what it held. */
	void (*release)(void);
	/* In a fork child: forget everything, capture stays off. */
	void (*atfork_child)(void);
};

/* The backends built into this library, NULL-terminated. */
/* The most backends one build can hold; the controller keeps per-backend
 * state in arrays of this size; registry.c's static assertion fails the
 * build that registers more. */
#define STRB_BACKENDS_MAX 8
extern const struct strb_backend *const strb_backends[STRB_BACKENDS_MAX + 1];

#endif

/* Python function tracing: each call of a Python function (and, when asked,
 * of a C function) becomes one python_function event on its thread, as
 * libkineto's Python tracer writes them: named "file(first line): qualname"
 * with args "Python id", "Python parent id" and "Python thread".
 *
 * Hooks: sys.monitoring on 3.12+ (strobe/_pytrace.py registers the _mon_*
 * functions below as the callbacks of its tool id; events fire on every
 * thread), the C profile function on 3.10 and 3.11 (set on every thread at
 * the start, and through threading.setprofile(_thread_hook) on threads
 * started later).
 *
 * Each thread keeps its own stack of open calls; a call is finished when it
 * returns, yields or unwinds, so a generator or coroutine gives one event
 * per resumption and nothing is mis-nested. Finished calls go to a
 * per-thread log (48 bytes each, no name copy, within a memory cap; calls
 * over it are counted) and are handed to strobe (strobe_record, on their
 * thread's row) at the stop: during the run a call costs two clock reads
 * and a few stores. A thread's state and log are freed when its Python
 * thread state is cleared (the thread ended), or at the stop if the trace
 * still needs them. Returns of calls begun before the trace started are
 * ignored, except the starting thread's, whose stack is taken as it is at
 * the start. Calls still open at the stop are recorded as unfinished.
 *
 * Everything here runs with the GIL held, which guards the shared state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "pytrace.h"
#include "strobe/strobe.h"

enum { FRAME_PY, FRAME_C };

struct frame {
	int64_t start_ns;
	uint64_t id;
	uint64_t parent;  /* id of the nearest recorded call below, 0 for none */
	const char *name; /* NULL: not recorded (strobe's own code) */
	int kind;
};

/* A finished call, kept until the stop hands it to strobe. */
struct done {
	int64_t start_ns, end_ns;
	uint64_t id, parent;
	const char *name;
	uint32_t flags;
};

struct tstate {
	uint32_t gen;   /* the session the stack belongs to */
	int64_t tid;    /* system thread id */
	uint64_t index; /* "Python thread": the order threads were first seen in */
	uint32_t depth; /* open calls */
	uint32_t cap;   /* stack's size */
	uint32_t lost;  /* pushes not kept (no memory), popped first */
	bool exited;    /* its thread ended during the trace: freed at the stop */
	struct frame *stack;
	struct done *done; /* finished calls, in the order they ended */
	size_t ndone, done_cap;
	struct tstate *next;
};

static bool active;
static bool c_calls;
static uint32_t gen;
static uint64_t next_id;
static uint64_t thread_count;
static struct tstate *threads;
static char *own_prefix; /* strobe's package folder: its functions are not recorded */
static size_t own_prefix_len;
static __thread struct tstate *tls;
static size_t done_bytes, done_budget; /* the finished-call logs' memory, and its cap */
static uint64_t dropped;               /* calls not recorded: over the cap */

/* ---- time: stamps taken during the run, epoch ns at the stop ----------- */

/* Stamps are libstrobe's capture ticks (core/clock.h: the TSC where it is
 * invariant and the kernel's clocksource, else CLOCK_MONOTONIC ns), read
 * here inline. The stop maps them to epoch ns through libstrobe's clock map,
 * sampled at the start, every 65536 calls of a thread and at the stop, and
 * anchored to strobe_now_ns()'s epoch. */
static bool use_tsc;
static struct strb_clock_map clock_map;

static inline int64_t stamp(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(use_tsc, 1))
		return (int64_t)__rdtsc();
#endif
	return strb_mono_ns_raw();
}

static void calib_sample(void)
{
	/* Without memory for it, the map spans fewer samples. */
	if (clock_map.count < 1u << 20)
		(void)strobe_internal_clock_map_sample(&clock_map);
}

/* A stamp as epoch ns. */
static int64_t stamp_ns(int64_t s)
{
	return strobe_internal_clock_map_to_epoch(&clock_map, (uint64_t)s);
}

/* ---- names: one string per code object or C function, made once --------- */

struct name_slot {
	const void *key;
	PyObject *ref; /* keeps key alive, so its address is not reused */
	char *name;
};
static struct name_slot *names;
static size_t names_cap, names_used;

static size_t slot_of(const void *key, size_t cap)
{
	uintptr_t h = (uintptr_t)key;
	h ^= h >> 17;
	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 20) & (cap - 1);
}

static bool names_grow(void)
{
	size_t cap = names_cap ? names_cap * 2 : 1024;
	struct name_slot *t = calloc(cap, sizeof(*t));
	if (!t)
		return false;
	for (size_t i = 0; i < names_cap; i++) {
		if (!names[i].key)
			continue;
		size_t j = slot_of(names[i].key, cap);
		while (t[j].key)
			j = (j + 1) & (cap - 1);
		t[j] = names[i];
	}
	free(names);
	names = t;
	names_cap = cap;
	return true;
}

static void names_clear(void)
{
	for (size_t i = 0; i < names_cap; i++) {
		if (names[i].key) {
			Py_XDECREF(names[i].ref);
			free(names[i].name);
		}
	}
	free(names);
	names = NULL;
	names_cap = names_used = 0;
}

static char *code_name_make(PyObject *code)
{
	PyObject *file = PyObject_GetAttrString(code, "co_filename");
	PyObject *line = PyObject_GetAttrString(code, "co_firstlineno");
	PyObject *func = PyObject_GetAttrString(code, "co_qualname");
	if (!func) {
		PyErr_Clear();
		func = PyObject_GetAttrString(code, "co_name");
	}
	char *out = NULL;
	if (file && line && func) {
		const char *f = PyUnicode_AsUTF8(file), *q = PyUnicode_AsUTF8(func);
		long l = PyLong_AsLong(line);
		if (f && own_prefix && !strncmp(f, own_prefix, own_prefix_len))
			out = strdup("");
		else if (f && q && asprintf(&out, "%s(%ld): %s", f, l, q) < 0)
			out = NULL;
	}
	Py_XDECREF(file);
	Py_XDECREF(line);
	Py_XDECREF(func);
	PyErr_Clear();
	return out;
}

/* The C function's PyMethodDef (the key: bound methods are made afresh at
 * each attribute access, their definition is static) and its name, as
 * libkineto shows it: "<built-in function len>", "<built-in method append
 * of list object>". NULL for other callables. */
static const PyMethodDef *c_function_def(PyObject *callable, const char **owner)
{
	if (PyCFunction_Check(callable)) {
		PyObject *self = PyCFunction_GET_SELF(callable);
		*owner = !self || PyModule_Check(self) ? NULL : Py_TYPE(self)->tp_name;
		return ((PyCFunctionObject *)callable)->m_ml;
	}
	if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
		*owner = ((PyMethodDescrObject *)callable)->d_common.d_type->tp_name;
		return ((PyMethodDescrObject *)callable)->d_method;
	}
	return NULL;
}

static const char *name_of(const void *key, PyObject *obj, const char *owner)
{
	if (names_used * 2 >= names_cap && !names_grow())
		return "?";
	size_t i = slot_of(key, names_cap);
	while (names[i].key) {
		if (names[i].key == key)
			return *names[i].name ? names[i].name : NULL;
		i = (i + 1) & (names_cap - 1);
	}
	char *name = NULL;
	if (PyCode_Check(obj)) {
		name = code_name_make(obj);
	} else {
		const PyMethodDef *def = key;
		if (asprintf(&name, owner ? "<built-in method %s of %s object>" : "<built-in function %s>",
		             def->ml_name, owner) < 0)
			name = NULL;
	}
	if (!name)
		return "?";
	names[i] = (struct name_slot){key, PyCode_Check(obj) ? Py_NewRef(obj) : NULL, name};
	names_used++;
	return *name ? name : NULL;
}

/* ---- the per-thread stacks --------------------------------------------- */

/* Frees a thread's log of finished calls. */
static void log_free(struct tstate *t)
{
	done_bytes -= t->done_cap * sizeof(*t->done);
	free(t->done);
	t->done = NULL;
	t->done_cap = 0;
}

/* Unlinks a thread's state and frees it with its stack and log. */
static void thread_free(struct tstate *t)
{
	for (struct tstate **p = &threads; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	log_free(t);
	free(t->stack);
	free(t);
}

#define THREAD_KEY "strobe.pytrace"

/* The thread's Python state is cleared (the thread ended, or a fork's child
 * or the interpreter's end clears it), and with it its dict, which holds
 * the capsule this destructor belongs to. The GIL is held. A thread whose
 * calls the running trace still needs keeps its log, cut to those calls,
 * until the stop; any other is freed now. */
static void thread_gone(PyObject *capsule)
{
	struct tstate *t = PyCapsule_GetPointer(capsule, THREAD_KEY);
	if (!t) {
		PyErr_Clear();
		return;
	}
	if (t == tls)
		tls = NULL;
	if (!active || t->gen != gen || (!t->ndone && !t->depth)) {
		thread_free(t);
		return;
	}
	t->exited = true;
	struct done *d = t->ndone ? realloc(t->done, t->ndone * sizeof(*d)) : NULL;
	if (d || !t->ndone) {
		if (!d)
			free(t->done);
		done_bytes -= (t->done_cap - t->ndone) * sizeof(*d);
		t->done = d;
		t->done_cap = t->ndone;
	}
}

/* Ties a new thread state to its thread's Python state, so that it is
 * freed when the thread ends (without it, it is kept to the process's end). */
static void thread_watch(struct tstate *t)
{
#if PY_VERSION_HEX >= 0x030C0000
	PyObject *exc = PyErr_GetRaisedException();
#else
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
#endif
	PyObject *dict = PyThreadState_GetDict();
	PyObject *cap = dict ? PyCapsule_New(t, THREAD_KEY, thread_gone) : NULL;
	if (!cap || PyDict_SetItemString(dict, THREAD_KEY, cap) < 0) {
		if (cap) /* not in the dict: it must not free t */
			PyCapsule_SetDestructor(cap, NULL);
		PyErr_Clear();
	}
	Py_XDECREF(cap);
#if PY_VERSION_HEX >= 0x030C0000
	PyErr_SetRaisedException(exc);
#else
	PyErr_Restore(type, value, tb);
#endif
}

static struct tstate *thread_state(void)
{
	struct tstate *t = tls;
	if (__builtin_expect(t && t->gen == gen, 1))
		return t;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			return NULL;
		t->tid = (int64_t)syscall(SYS_gettid);
		t->index = thread_count++;
		t->next = threads;
		threads = t;
		tls = t;
		thread_watch(t);
	}
	t->gen = gen;
	t->depth = t->lost = 0;
	return t;
}

static void push(struct tstate *t, const char *name, int kind, int64_t now)
{
	if (__builtin_expect(t->depth == t->cap, 0)) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct frame *s = realloc(t->stack, cap * sizeof(*s));
		if (!s) {
			t->lost++;
			return;
		}
		t->stack = s;
		t->cap = cap;
	}
	struct frame *f = &t->stack[t->depth++];
	f->start_ns = now;
	f->id = ++next_id;
	f->parent = t->depth < 2 ? 0 : f[-1].name ? f[-1].id : f[-1].parent;
	f->name = name;
	f->kind = kind;
}

/* Pops the top call, ending at end, into the thread's log. */
static void emit_top(struct tstate *t, int64_t end, uint32_t flags)
{
	struct frame *f = &t->stack[--t->depth];
	if (!f->name)
		return;
	if (__builtin_expect(t->ndone == t->done_cap, 0)) {
		size_t cap = t->done_cap ? t->done_cap * 2 : 16384;
		struct done *d = NULL;
		if ((done_bytes + (cap - t->done_cap) * sizeof(*d)) <= done_budget)
			d = realloc(t->done, cap * sizeof(*d));
		if (!d) {
			dropped++;
			return;
		}
		done_bytes += (cap - t->done_cap) * sizeof(*d);
		t->done = d;
		t->done_cap = cap;
	}
	t->done[t->ndone++] = (struct done){f->start_ns, end, f->id, f->parent, f->name, flags};
	if (__builtin_expect(!(t->ndone & 0xffff), 0))
		calib_sample();
}

/* Hands a thread's log to strobe as python_function events on its row. */
static void flush(struct tstate *t, int64_t resource)
{
	for (size_t i = 0; i < t->ndone; i++) {
		const struct done *d = &t->done[i];
		struct strobe_arg args[3] = {
		    {.key = "Python id", .kind = STROBE_ARG_U64, .value.u64 = d->id},
		    {.key = "Python parent id", .kind = STROBE_ARG_U64, .value.u64 = d->parent},
		    {.key = "Python thread", .kind = STROBE_ARG_U64, .value.u64 = t->index},
		};
		struct strobe_activity a = {
		    .size = sizeof(a),
		    .type = STROBE_ACTIVITY_PYTHON_FUNCTION,
		    .flags = d->flags,
		    .name = d->name,
		    .start_ns = stamp_ns(d->start_ns),
		    .end_ns = stamp_ns(d->end_ns),
		    .resource = resource,
		    .args = args,
		    .arg_count = 3,
		};
		if (strobe_record(&a) < 0)
			dropped++; /* the window's CPU buffer budget is spent */
	}
	t->ndone = 0;
	/* A log of up to 4 MiB is kept for the next trace: growing it again
	 * would fault its pages in while the program runs. */
	if (t->done_cap * sizeof(*t->done) > (4u << 20))
		log_free(t);
}

static void pop(struct tstate *t, int kind)
{
	if (t->lost) {
		t->lost--;
		return;
	}
	int64_t now = stamp();
	if (kind == FRAME_C) {
		if (t->depth && t->stack[t->depth - 1].kind == FRAME_C)
			emit_top(t, now, 0);
		return;
	}
	/* A C call whose return was not seen ends with the Python call above it. */
	while (t->depth && t->stack[t->depth - 1].kind == FRAME_C)
		emit_top(t, now, 0);
	if (t->depth)
		emit_top(t, now, 0);
}

static void push_code(PyObject *code)
{
	struct tstate *t = thread_state();
	if (t)
		push(t, name_of(code, code, NULL), FRAME_PY, stamp());
}

static void push_c(PyObject *callable)
{
	const char *owner = NULL;
	const PyMethodDef *def = c_function_def(callable, &owner);
	struct tstate *t = def ? thread_state() : NULL;
	if (!t)
		return;
	/* What strobe's own code calls is not recorded either. */
	bool own = t->depth && t->stack[t->depth - 1].kind == FRAME_PY && !t->stack[t->depth - 1].name;
	push(t, own ? NULL : name_of(def, callable, owner), FRAME_C, stamp());
}

static void pop_kind(int kind)
{
	struct tstate *t = thread_state();
	if (t)
		pop(t, kind);
}

/* ---- sys.monitoring callbacks (3.12+) ----------------------------------- */

/* PY_START, PY_RESUME, PY_THROW: (code, offset[, exception]) */
static PyObject *pytrace_mon_push(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
	(void)m;
	if (active && n >= 1)
		push_code(args[0]);
	Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD, PY_UNWIND: (code, offset, value) */
static PyObject *pytrace_mon_pop(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
	(void)m, (void)args, (void)n;
	if (active)
		pop_kind(FRAME_PY);
	Py_RETURN_NONE;
}

/* CALL: (code, offset, callable, arg0); only C functions are recorded. */
static PyObject *pytrace_mon_call(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
	(void)m;
	if (active && c_calls && n >= 3)
		push_c(args[2]);
	Py_RETURN_NONE;
}

/* C_RETURN, C_RAISE: (code, offset, callable, arg0) */
static PyObject *pytrace_mon_c_pop(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
	(void)m;
	const char *owner;
	if (active && c_calls && n >= 3 && c_function_def(args[2], &owner))
		pop_kind(FRAME_C);
	Py_RETURN_NONE;
}

/* ---- the C profile function (3.10, 3.11) -------------------------------- */

static int profile(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj;
	if (!active) {
		PyEval_SetProfile(NULL, NULL);
		return 0;
	}
	switch (what) {
	case PyTrace_CALL: {
		PyCodeObject *code = PyFrame_GetCode(frame);
		push_code((PyObject *)code);
		Py_DECREF(code);
		break;
	}
	case PyTrace_RETURN:
		pop_kind(FRAME_PY);
		break;
	case PyTrace_C_CALL:
		if (c_calls)
			push_c(arg);
		break;
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		if (c_calls)
			pop_kind(FRAME_C);
		break;
	}
	return 0;
}

/* threading.setprofile's hook, run once in each thread started while
 * tracing: it hands the thread to the C profile function. */
static PyObject *pytrace_thread_hook(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
	(void)m;
	if (!active) {
		PyEval_SetProfile(NULL, NULL);
		Py_RETURN_NONE;
	}
	PyEval_SetProfile(profile, NULL);
	if (n == 3 && PyFrame_Check(args[0]) && PyUnicode_Check(args[1]) &&
	    PyUnicode_CompareWithASCIIString(args[1], "call") == 0)
		profile(NULL, (PyFrameObject *)args[0], PyTrace_CALL, NULL);
	Py_RETURN_NONE;
}

/* The C profile function on every thread of this interpreter, as 3.12's
 * PyEval_SetProfileAllThreads does (with the GIL held, the other threads
 * wait for it outside their frames); their calls already open when it
 * arrives are not recorded. */
static void profile_all_threads(void)
{
#if PY_VERSION_HEX < 0x030C0000
	PyThreadState *self = PyThreadState_Get();
	for (PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(self)); ts;
	     ts = PyThreadState_Next(ts)) {
		if (ts != self && _PyEval_SetProfile(ts, profile, NULL) < 0)
			PyErr_Clear(); /* an audit hook refused: that thread is left out */
	}
#endif
	PyEval_SetProfile(profile, NULL);
}

/* ---- start and stop ---------------------------------------------------- */

/* The calling thread's stack as it is now, outermost call first. */
static void take_current_stack(struct tstate *t, int64_t now)
{
	PyObject *codes[512];
	int n = 0;
	PyFrameObject *f = PyEval_GetFrame();
	Py_XINCREF(f);
	while (f && n < (int)(sizeof(codes) / sizeof(codes[0]))) {
		codes[n++] = (PyObject *)PyFrame_GetCode(f);
		PyFrameObject *back = PyFrame_GetBack(f);
		Py_DECREF(f);
		f = back;
	}
	Py_XDECREF(f);
	for (int i = n - 1; i >= 0; i--) {
		push(t, name_of(codes[i], codes[i], NULL), FRAME_PY, now);
		Py_DECREF(codes[i]);
	}
}

static PyObject *pytrace_start(PyObject *m, PyObject *args)
{
	(void)m;
	int want_c, monitoring;
	const char *prefix;
	unsigned long long budget;
	if (!PyArg_ParseTuple(args, "ppsK", &want_c, &monitoring, &prefix, &budget))
		return NULL;
	if (active)
		return PyErr_Format(PyExc_RuntimeError, "strobe: Python function tracing is already on");
	done_budget = budget;
	dropped = 0;
	/* The logs kept from the last trace (empty since its stop) may hold
	 * more than this trace's budget: they start again within it. */
	for (struct tstate *t = threads; t && done_bytes > done_budget; t = t->next)
		log_free(t);
	use_tsc = strobe_internal_clock_is_tsc();
	if (strobe_internal_clock_map_begin(&clock_map) < 0)
		return PyErr_NoMemory();
	int64_t span = INT64_MAX;
	for (int i = 0; i < 5; i++) { /* the tightest of five, as the clock samples */
		int64_t m0 = strb_mono_ns_raw(), e = (int64_t)strobe_now_ns(), m1 = strb_mono_ns_raw();
		if (m1 - m0 < span) {
			span = m1 - m0;
			clock_map.real_minus_mono = e - (m0 + (m1 - m0) / 2);
		}
	}
	free(own_prefix);
	own_prefix = strdup(prefix);
	own_prefix_len = own_prefix ? strlen(own_prefix) : 0;
	gen++;
	c_calls = want_c;
	struct tstate *t = thread_state();
	if (!t)
		return PyErr_NoMemory();
	take_current_stack(t, stamp());
	active = true;
	if (!monitoring)
		profile_all_threads();
	Py_RETURN_NONE;
}

static PyObject *pytrace_stop(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	if (!active)
		Py_RETURN_NONE;
	active = false;
	PyEval_SetProfile(NULL, NULL);
	int64_t now = stamp();
	calib_sample();
	for (struct tstate *t = threads, *next; t; t = next) {
		next = t->next;
		if (t->gen != gen)
			continue;
		while (t->depth)
			emit_top(t, now, STROBE_ACTIVITY_UNFINISHED);
		t->lost = 0;
		flush(t, t == tls ? 0 : t->tid);
		if (t->exited)
			thread_free(t);
	}
	names_clear();
	uint64_t n = dropped;
	dropped = 0;
	return PyLong_FromUnsignedLongLong(n);
}

#define FASTCALL(fn) (PyCFunction)(void (*)(void))(fn), METH_FASTCALL

PyMethodDef pytrace_methods[] = {
    {"pytrace_start", pytrace_start, METH_VARARGS,
     "pytrace_start(c_calls, use_monitoring, own_prefix, budget_bytes): starts recording Python calls"},
    {"pytrace_stop", pytrace_stop, METH_NOARGS,
     "pytrace_stop() -> calls dropped: stops, recording the calls (those still open as unfinished)"},
    {"_thread_hook", FASTCALL(pytrace_thread_hook), NULL},
    {"_mon_push", FASTCALL(pytrace_mon_push), NULL},
    {"_mon_pop", FASTCALL(pytrace_mon_pop), NULL},
    {"_mon_call", FASTCALL(pytrace_mon_call), NULL},
    {"_mon_c_pop", FASTCALL(pytrace_mon_c_pop), NULL},
    {NULL, NULL, 0, NULL},
};

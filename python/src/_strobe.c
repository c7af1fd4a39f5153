/* strobe._strobe: the CPython extension behind the strobe package.
 *
 * The calls Python code makes often (range and op push/pop, instant,
 * counter, step) are here as C functions and two small types (range and
 * op, context managers and decorators) so they cost about one Python call;
 * strobe/__init__.py builds the rest of the API on the thin wrappers below.
 * Python function tracing is in pytrace.c.
 *
 * Not the stable ABI: the tracer needs the profile hook and frame calls of
 * the full API on 3.10 and 3.11, so the wheel is built per Python version.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>

#include "pytrace.h"
#include "strobe/strobe.h"
#include "torch_itt.h"

static PyObject *strobe_error; /* strobe.StrobeError */
static PyObject *decorate_fn;  /* strobe._decorate(kind, name, func), set by __init__.py */

/* Raises StrobeError for status rc: the message is strobe's own
 * (strobe_last_error) when it has one, else the status's name; the
 * exception's `status` attribute is rc. Returns NULL. */
static PyObject *raise_status(int rc, const char *what)
{
	const char *msg = strobe_last_error();
	PyObject *text = msg && *msg ? PyUnicode_FromFormat("%s", msg)
	                             : PyUnicode_FromFormat("%s: %s", what, strobe_status_string(rc));
	if (!text)
		return NULL;
	PyObject *exc = PyObject_CallOneArg(strobe_error, text);
	Py_DECREF(text);
	if (!exc)
		return NULL;
	PyObject *status = PyLong_FromLong(rc);
	if (!status || PyObject_SetAttrString(exc, "status", status) < 0) {
		Py_XDECREF(status);
		Py_DECREF(exc);
		return NULL;
	}
	Py_DECREF(status);
	PyErr_SetObject(strobe_error, exc);
	Py_DECREF(exc);
	return NULL;
}

static PyObject *status_result(int rc, const char *what)
{
	if (rc < 0)
		return raise_status(rc, what);
	Py_RETURN_NONE;
}

/* ---- the hot calls ------------------------------------------------------ */

/* fn(name's UTF-8): the calls that take one string. */
static PyObject *call_str(PyObject *name, void (*fn)(const char *))
{
	const char *s = PyUnicode_AsUTF8(name);
	if (!s)
		return NULL;
	fn(s);
	Py_RETURN_NONE;
}

/* The same for calls that return a status. */
static PyObject *call_str_status(PyObject *name, int (*fn)(const char *), const char *what)
{
	const char *s = PyUnicode_AsUTF8(name);
	if (!s)
		return NULL;
	return status_result(fn(s), what);
}

/* The function itself, not the header's fast-path macro. */
static void instant_fn(const char *name)
{
	strobe_instant(name);
}

static PyObject *py_instant(PyObject *m, PyObject *name)
{
	(void)m;
	return call_str(name, instant_fn);
}

static PyObject *py_counter(PyObject *m, PyObject *const *args, Py_ssize_t n)
{
	(void)m;
	if (n != 2 || !PyUnicode_Check(args[0]))
		return PyErr_Format(PyExc_TypeError, "counter(name: str, value: float)");
	const char *s = PyUnicode_AsUTF8(args[0]);
	double v = PyFloat_AsDouble(args[1]);
	if (!s || (v == -1.0 && PyErr_Occurred()))
		return NULL;
	strobe_counter(s, v);
	Py_RETURN_NONE;
}

static PyObject *py_step(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	strobe_step();
	Py_RETURN_NONE;
}

static PyObject *py_now_ns(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	return PyLong_FromUnsignedLongLong(strobe_now_ns());
}

static PyObject *py_is_tracing(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	return PyBool_FromLong(strobe_is_tracing());
}

/* ---- range and op: context managers and decorators ---------------------- */

enum { KIND_RANGE, KIND_OP };

typedef struct {
	PyObject_HEAD PyObject *name; /* str */
	const char *utf8;             /* the str's own UTF-8, alive as long as name */
	uint64_t id;                  /* an op's External id while open (0 when not tracing) */
} annot_object;

static PyTypeObject range_type, op_type;

static PyObject *annot_new(PyTypeObject *type, PyObject *name)
{
	const char *utf8 = PyUnicode_AsUTF8(name);
	if (!utf8)
		return NULL;
	annot_object *self = PyObject_New(annot_object, type);
	if (!self)
		return NULL;
	self->name = Py_NewRef(name);
	self->utf8 = utf8;
	self->id = 0;
	return (PyObject *)self;
}

static PyObject *decorate(int kind, PyObject *name, PyObject *func)
{
	if (!decorate_fn)
		return PyErr_Format(PyExc_RuntimeError, "strobe: the decorator helper is not set");
	PyObject *k = PyLong_FromLong(kind);
	if (!k)
		return NULL;
	PyObject *r = PyObject_CallFunctionObjArgs(decorate_fn, k, name, func, NULL);
	Py_DECREF(k);
	return r;
}

/* range(name) / op(name): a context manager; range(func) / op(func): func
 * decorated, named by its qualified name. */
static PyObject *annot_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
	Py_ssize_t n = PyVectorcall_NARGS(nargsf);
	PyTypeObject *t = (PyTypeObject *)type;
	if (n != 1 || (kwnames && PyTuple_GET_SIZE(kwnames)))
		return PyErr_Format(PyExc_TypeError, "%s() takes one argument: a name (str) or a function",
		                    t->tp_name);
	if (PyUnicode_Check(args[0]))
		return annot_new(t, args[0]);
	if (PyCallable_Check(args[0]))
		return decorate(t == &op_type ? KIND_OP : KIND_RANGE, Py_None, args[0]);
	return PyErr_Format(PyExc_TypeError, "%s() takes a name (str) or a function, not %.100s", t->tp_name,
	                    Py_TYPE(args[0])->tp_name);
}

static PyObject *annot_tp_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	PyObject *name;
	if (kw && PyDict_GET_SIZE(kw))
		return PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", type->tp_name);
	if (!PyArg_ParseTuple(args, "U", &name))
		return NULL;
	return annot_new(type, name);
}

static void annot_dealloc(annot_object *self)
{
	Py_DECREF(self->name);
	PyObject_Free(self);
}

static PyObject *annot_enter(annot_object *self, PyObject *unused)
{
	(void)unused;
	if (Py_IS_TYPE(self, &op_type))
		self->id = strobe_op_push(self->utf8);
	else
		strobe_range_push(self->utf8);
	return Py_NewRef(self);
}

static PyObject *annot_exit(annot_object *self, PyObject *const *args, Py_ssize_t n)
{
	(void)args, (void)n;
	if (Py_IS_TYPE(self, &op_type))
		strobe_op_pop();
	else
		strobe_range_pop();
	Py_RETURN_NONE;
}

/* @strobe.range("name") on a function. */
static PyObject *annot_call(annot_object *self, PyObject *args, PyObject *kw)
{
	PyObject *func;
	if ((kw && PyDict_GET_SIZE(kw)) || !PyArg_ParseTuple(args, "O", &func) || !PyCallable_Check(func)) {
		PyErr_Clear();
		return PyErr_Format(PyExc_TypeError, "a %s used as a decorator takes one function",
		                    Py_TYPE(self)->tp_name);
	}
	return decorate(Py_IS_TYPE(self, &op_type) ? KIND_OP : KIND_RANGE, self->name, func);
}

static PyObject *annot_repr(annot_object *self)
{
	return PyUnicode_FromFormat("strobe.%s(%R)", Py_TYPE(self)->tp_name + sizeof("strobe.") - 1,
	                            self->name);
}

static PyMethodDef annot_methods[] = {
    {"__enter__", (PyCFunction)annot_enter, METH_NOARGS, "Opens the range (or op)."},
    {"__exit__", (PyCFunction)(void (*)(void))annot_exit, METH_FASTCALL, "Closes it."},
    {NULL, NULL, 0, NULL},
};

static PyObject *annot_get_name(annot_object *self, void *unused)
{
	(void)unused;
	return Py_NewRef(self->name);
}

static PyObject *annot_get_id(annot_object *self, void *unused)
{
	(void)unused;
	return PyLong_FromUnsignedLongLong(self->id);
}

static PyGetSetDef annot_getset[] = {
    {"name", (getter)annot_get_name, NULL, "The name shown in the trace.", NULL},
    {"id", (getter)annot_get_id, NULL, "An op's External id (0 for a range, or when not tracing).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

#define ANNOT_TYPE(var, pyname, doc)                                                                         \
	static PyTypeObject var = {                                                                          \
	    PyVarObject_HEAD_INIT(NULL, 0).tp_name = pyname,                                                 \
	    .tp_basicsize = sizeof(annot_object),                                                            \
	    .tp_dealloc = (destructor)annot_dealloc,                                                         \
	    .tp_repr = (reprfunc)annot_repr,                                                                 \
	    .tp_call = (ternaryfunc)annot_call,                                                              \
	    .tp_flags = Py_TPFLAGS_DEFAULT,                                                                  \
	    .tp_doc = doc,                                                                                   \
	    .tp_methods = annot_methods,                                                                     \
	    .tp_getset = annot_getset,                                                                       \
	    .tp_new = annot_tp_new,                                                                          \
	    .tp_vectorcall = annot_vectorcall,                                                               \
	}

ANNOT_TYPE(range_type, "strobe.range",
           "range(name) -> a context manager recording a user_annotation range on this thread;\n"
           "range(func) or range(name)(func) -> func recorded as a range on each call.");
ANNOT_TYPE(op_type, "strobe.op",
           "op(name) -> a context manager recording a cpu_op (GPU work launched inside links to it;\n"
           "its External id is .id while open); op(func) or op(name)(func) decorates func.");

static PyObject *py_set_decorator(PyObject *m, PyObject *fn)
{
	(void)m;
	Py_XSETREF(decorate_fn, Py_NewRef(fn));
	Py_RETURN_NONE;
}

/* ---- control ------------------------------------------------------------ */

static PyObject *py_init(PyObject *m, PyObject *args)
{
	(void)m;
	const char *config_path = NULL;
	int level = -1;
	if (!PyArg_ParseTuple(args, "|zi", &config_path, &level))
		return NULL;
	struct strobe_init_opts opts =
	    STROBE_OPTS(strobe_init_opts, .config_path = config_path,
	                .log_threshold = level >= 0 ? STROBE_INIT_LOG_LEVEL(level) : 0);
	return status_result(strobe_init(&opts), "strobe_init");
}

static PyObject *py_prepare(PyObject *m, PyObject *args)
{
	(void)m;
	unsigned long long mask;
	const char *config;
	if (!PyArg_ParseTuple(args, "Ks", &mask, &config))
		return NULL;
	return status_result(strobe_prepare(mask, config), "strobe_prepare");
}

static PyObject *py_start(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	return status_result(strobe_start(), "strobe_start");
}

/* A processed trace (strobe_trace *), owned. */
typedef struct {
	PyObject_HEAD strobe_trace *trace;
} trace_object;

static void trace_dealloc(trace_object *self)
{
	strobe_trace_destroy(self->trace);
	PyObject_Free(self);
}

static PyObject *trace_save(trace_object *self, PyObject *url)
{
	const char *s = PyUnicode_AsUTF8(url);
	if (!s)
		return NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS rc = strobe_trace_save(self->trace, s);
	Py_END_ALLOW_THREADS return status_result(rc, "strobe_trace_save");
}

static Py_ssize_t trace_len(trace_object *self)
{
	return (Py_ssize_t)strobe_trace_activity_count(self->trace);
}

static PyObject *arg_value(const struct strobe_arg *a)
{
	switch (a->kind) {
	case STROBE_ARG_I64:
		return PyLong_FromLongLong(a->value.i64);
	case STROBE_ARG_U64:
		return PyLong_FromUnsignedLongLong(a->value.u64);
	case STROBE_ARG_F64:
		return PyFloat_FromDouble(a->value.f64);
	case STROBE_ARG_BOOL:
		return PyBool_FromLong(a->value.b);
	case STROBE_ARG_STRING:
		return PyUnicode_DecodeUTF8(a->value.str, (Py_ssize_t)strlen(a->value.str), "replace");
	case STROBE_ARG_JSON: /* left as text; strobe/__init__.py parses it */
		return Py_BuildValue("(s)", a->value.str);
	}
	Py_RETURN_NONE;
}

static PyObject *activity_tuple(const struct strobe_activity *a)
{
	PyObject *args = PyDict_New();
	if (!args)
		return NULL;
	for (size_t i = 0; i < a->arg_count; i++) {
		PyObject *v = arg_value(&a->args[i]);
		if (!v || PyDict_SetItemString(args, a->args[i].key, v) < 0) {
			Py_XDECREF(v);
			Py_DECREF(args);
			return NULL;
		}
		Py_DECREF(v);
	}
	const char *type = strobe_activity_type_name(a->type);
	const char *cat = a->category ? a->category : type;
	return Py_BuildValue("(sssLLLLKKIN)", type ? type : "", cat ? cat : "", a->name ? a->name : "",
	                     (long long)a->start_ns, (long long)a->end_ns, (long long)a->device,
	                     (long long)a->resource, (unsigned long long)a->id,
	                     (unsigned long long)a->linked_id, (unsigned)a->flags, args);
}

static int collect(const struct strobe_activity *a, void *list)
{
	PyObject *t = activity_tuple(a);
	if (!t)
		return -1;
	int rc = PyList_Append(list, t);
	Py_DECREF(t);
	return rc < 0 ? -1 : 0;
}

/* The activities as tuples (type, category, name, start_ns, end_ns,
 * device, resource, id, linked_id, flags, args). */
static PyObject *trace_activities(trace_object *self, PyObject *unused)
{
	(void)unused;
	PyObject *list = PyList_New(0);
	if (!list)
		return NULL;
	if (strobe_trace_foreach(self->trace, collect, list)) {
		Py_DECREF(list);
		if (!PyErr_Occurred())
			PyErr_SetString(PyExc_RuntimeError, "strobe_trace_foreach failed");
		return NULL;
	}
	return list;
}

static PyMethodDef trace_methods[] = {
    {"save", (PyCFunction)trace_save, METH_O, "save(url): writes the trace (format by suffix)."},
    {"activities", (PyCFunction)trace_activities, METH_NOARGS, "The activities as tuples."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods trace_as_sequence = {.sq_length = (lenfunc)trace_len};

static PyTypeObject trace_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "strobe._strobe.TraceData",
    .tp_basicsize = sizeof(trace_object),
    .tp_dealloc = (destructor)trace_dealloc,
    .tp_as_sequence = &trace_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A processed trace, as strobe_stop returned it.",
    .tp_methods = trace_methods,
};

static PyObject *py_stop(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	strobe_trace *t = NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS rc = strobe_stop(&t);
	Py_END_ALLOW_THREADS if (rc < 0) return raise_status(rc, "strobe_stop");
	trace_object *self = PyObject_New(trace_object, &trace_type);
	if (!self) {
		strobe_trace_destroy(t);
		return NULL;
	}
	self->trace = t;
	return (PyObject *)self;
}

static PyObject *py_schedule(PyObject *m, PyObject *config)
{
	(void)m;
	return call_str_status(config, strobe_schedule, "strobe_schedule");
}

static PyObject *py_thread_set_name(PyObject *m, PyObject *name)
{
	(void)m;
	return call_str_status(name, strobe_thread_set_name, "strobe_thread_set_name");
}

static PyObject *py_metadata_set(PyObject *m, PyObject *args)
{
	(void)m;
	const char *key, *kind;
	PyObject *value;
	if (!PyArg_ParseTuple(args, "ssO", &kind, &key, &value))
		return NULL;
	int rc;
	if (!strcmp(kind, "int")) {
		long long v = PyLong_AsLongLong(value);
		if (v == -1 && PyErr_Occurred())
			return NULL;
		rc = strobe_metadata_set_int(key, v);
	} else if (!strcmp(kind, "double")) {
		double v = PyFloat_AsDouble(value);
		if (v == -1.0 && PyErr_Occurred())
			return NULL;
		rc = strobe_metadata_set_double(key, v);
	} else {
		const char *v = PyUnicode_AsUTF8(value);
		if (!v)
			return NULL;
		rc = !strcmp(kind, "json") ? strobe_metadata_set_json(key, v)
		                           : strobe_metadata_set_string(key, v);
	}
	return status_result(rc, "strobe_metadata_set");
}

static PyObject *py_metadata_remove(PyObject *m, PyObject *key)
{
	(void)m;
	return call_str_status(key, strobe_metadata_remove, "strobe_metadata_remove");
}

static PyObject *py_set_rank(PyObject *m, PyObject *args)
{
	(void)m;
	long long r, l, w;
	if (!PyArg_ParseTuple(args, "LLL", &r, &l, &w))
		return NULL;
	return status_result(strobe_set_rank(r, l, w), "strobe_set_rank");
}

static PyObject *py_activity_type_parse(PyObject *m, PyObject *name)
{
	(void)m;
	const char *s = PyUnicode_AsUTF8(name);
	if (!s)
		return NULL;
	enum strobe_activity_type t;
	if (strobe_activity_type_parse(s, &t) < 0)
		return PyErr_Format(PyExc_ValueError, "unknown activity type '%s'", s);
	return PyLong_FromLong((long)t);
}

static PyObject *py_activity_type_name(PyObject *m, PyObject *v)
{
	(void)m;
	long t = PyLong_AsLong(v);
	if (t == -1 && PyErr_Occurred())
		return NULL;
	const char *s = t >= 0 && t <= STROBE_ACTIVITY_TYPE_MAX ? strobe_activity_type_name(t) : NULL;
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_FromString(s);
}

static PyObject *py_version(PyObject *m, PyObject *unused)
{
	(void)m, (void)unused;
	return PyUnicode_FromString(strobe_version());
}

static PyMethodDef module_methods[] = {
    {"instant", py_instant, METH_O, "instant(name): a cpu_instant_event now."},
    {"counter", (PyCFunction)(void (*)(void))py_counter, METH_FASTCALL, "counter(name, value)."},
    {"step", py_step, METH_NOARGS, "step(): marks one iteration (for iteration-based traces)."},
    {"now_ns", py_now_ns, METH_NOARGS, "now_ns(): the trace clock in epoch ns."},
    {"is_tracing", py_is_tracing, METH_NOARGS, "is_tracing(): a capture window is open."},
    {"_set_decorator", py_set_decorator, METH_O, NULL},
    {"init", py_init, METH_VARARGS, "init(config_path=None, log_level=-1)"},
    {"prepare", py_prepare, METH_VARARGS, "prepare(mask, config)"},
    {"start", py_start, METH_NOARGS, "start()"},
    {"stop", py_stop, METH_NOARGS, "stop() -> TraceData"},
    {"schedule", py_schedule, METH_O, "schedule(config)"},
    {"thread_set_name", py_thread_set_name, METH_O, "thread_set_name(name)"},
    {"metadata_set", py_metadata_set, METH_VARARGS, "metadata_set(kind, key, value)"},
    {"metadata_remove", py_metadata_remove, METH_O, "metadata_remove(key)"},
    {"set_rank", py_set_rank, METH_VARARGS, "set_rank(rank, local_rank, world_size)"},
    {"activity_type_parse", py_activity_type_parse, METH_O, "activity_type_parse(name) -> int"},
    {"activity_type_name", py_activity_type_name, METH_O, "activity_type_name(int) -> str | None"},
    {"version", py_version, METH_NOARGS, "version() -> the loaded libstrobe's version"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, .m_name = "strobe._strobe",  .m_doc = "strobe's C extension",
    .m_size = -1,          .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__strobe(void);
PyMODINIT_FUNC PyInit__strobe(void)
{
	if (PyType_Ready(&range_type) < 0 || PyType_Ready(&op_type) < 0 || PyType_Ready(&trace_type) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&module_def);
	if (!m)
		return NULL;
	strobe_error = PyErr_NewExceptionWithDoc(
	    "strobe.StrobeError", "An error strobe reported; .status is its status code (negative).",
	    PyExc_RuntimeError, NULL);
	if (!strobe_error || PyModule_AddObjectRef(m, "StrobeError", strobe_error) < 0 ||
	    PyModule_AddObjectRef(m, "range", (PyObject *)&range_type) < 0 ||
	    PyModule_AddObjectRef(m, "op", (PyObject *)&op_type) < 0 ||
	    PyModule_AddObjectRef(m, "TraceData", (PyObject *)&trace_type) < 0 ||
	    PyModule_AddIntConstant(m, "STROBE_E_CONFIG", STROBE_E_CONFIG) < 0 ||
	    PyModule_AddIntConstant(m, "STROBE_E_STATE", STROBE_E_STATE) < 0 ||
	    PyModule_AddIntConstant(m, "ACTIVITY_PYTHON_FUNCTION", STROBE_ACTIVITY_PYTHON_FUNCTION) < 0 ||
	    PyModule_AddIntConstant(m, "ACTIVITY_UNFINISHED", STROBE_ACTIVITY_UNFINISHED) < 0 ||
	    PyModule_AddFunctions(m, pytrace_methods) < 0 ||
	    PyModule_AddFunctions(m, torch_itt_methods) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}

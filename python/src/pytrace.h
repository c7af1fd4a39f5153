/* Python function tracing: python_function events from the interpreter's
 * own hooks (sys.monitoring on 3.12+, the C profile function before). */
#ifndef STROBE_PYTRACE_H
#define STROBE_PYTRACE_H

#include <Python.h>

/* pytrace_start, pytrace_stop and the hooks strobe/_pytrace.py installs
 * (_thread_hook, _mon_*), added to the extension module. */
extern PyMethodDef pytrace_methods[];

#endif

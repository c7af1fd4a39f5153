/* PyTorch's ops as cpu_op events through its ITT hooks: the extension is
 * the ITT collector PyTorch's ittnotify loads (INTEL_LIBITTNOTIFY64). */
#ifndef STROBE_TORCH_ITT_H
#define STROBE_TORCH_ITT_H

#include <Python.h>

/* _itt_seen(), added to the extension module. */
extern PyMethodDef torch_itt_methods[];

#endif

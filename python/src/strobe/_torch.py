"""PyTorch's aten ops as cpu_op events (trace(torch_ops=True)).

The ops come through PyTorch's ITT hooks (torch.autograd.profiler.emit_itt):
its RecordFunction callback, in C++, reports each op to ittnotify, which
calls the extension as its collector (torch_itt.c; strobe/__init__.py names
it in INTEL_LIBITTNOTIFY64 before torch is imported), and each op becomes a
cpu_op with its External id, so GPU work it launches links to it. No Python
runs per op.

record_shapes=True needs the ops' inputs, which the ITT hooks do not
carry: then a TorchDispatchMode (Python, called for each op PyTorch
dispatches to its Python key) wraps each op in strobe.op and adds, at its
start, an instant named after the op with its input shapes (the op's own
event is recorded by strobe_op_push, the hot path, which carries no args).
The same mode records the ops, with a warning that says why, where the ITT
hooks cannot reach strobe (torch imported before strobe, another ITT
collector named in INTEL_LIBITTNOTIFY64, a PyTorch profiler already
running on the thread). It costs several times the ITT hooks, and sees
each op as it is dispatched from outside (Python code, autograd), not the
ops it calls in turn (aten::mm's aten::resolve_conj).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from . import _strobe

try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
except ImportError as e:  # pragma: no cover - exercised only without torch
    raise _strobe.StrobeError(f"strobe: torch_ops=True needs PyTorch importable ({e})") from e


def _shapes(args: Any) -> str:
    dims = []
    for a in args:
        if isinstance(a, torch.Tensor):
            dims.append(list(a.shape))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, torch.Tensor) for x in a):
            dims.append([list(x.shape) for x in a])
        else:
            dims.append([])
    return repr(dims)


class _OpMode(TorchDispatchMode):
    """Each op dispatched on this thread as a cpu_op, with an instant of its
    input shapes when asked."""

    def __init__(self, shapes: bool) -> None:
        super().__init__()
        self.shapes = shapes
        self.ops: dict[Any, Any] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        cm = self.ops.get(func)
        if cm is None:  # "aten::mm", as PyTorch's profiler names it
            name = getattr(getattr(func, "_schema", None), "name", None) or str(func)
            cm = self.ops[func] = _strobe.op(name)
        with cm:
            if self.shapes:
                _strobe.instant(f"{cm.name} Input Dims {_shapes(args)}")
            return func(*args, **(kwargs or {}))


def _why_no_itt(error: BaseException | None) -> str:
    from . import _torch_imported_first

    named = os.environ.get("INTEL_LIBITTNOTIFY64")
    if error is not None:
        return f"PyTorch's ITT hooks could not be turned on ({error})"
    if _torch_imported_first:
        return "torch was imported before strobe, so PyTorch's ITT hooks do not know strobe (import strobe first)"
    if named != os.path.abspath(_strobe.__file__):
        return (f"INTEL_LIBITTNOTIFY64 names another ITT collector ({named})" if named else
                "INTEL_LIBITTNOTIFY64 was unset before torch was imported")
    return "PyTorch's ITT hooks did not reach strobe (this torch has no ITT, or another ITT library loaded first)"


class TorchOps:
    """enable() before strobe starts (it checks, with one op of its own, that
    the ITT hooks reach strobe), start() after, stop() before strobe stops."""

    def __init__(self, record_shapes: bool) -> None:
        self.record_shapes = record_shapes
        self.itt: Any = None
        self.mode: _OpMode | None = None
        self.mode_on = False

    def _warm_up(self) -> None:
        # A dispatch mode's first op takes seconds (torch's lazy imports):
        # here, before the trace starts, not in it.
        with _OpMode(self.record_shapes):
            torch.zeros(())

    def enable(self) -> None:
        if not self.record_shapes:
            self._enable_itt()
            if self.itt is not None:
                return
        self.mode = _OpMode(self.record_shapes)
        self._warm_up()

    def _enable_itt(self) -> None:
        itt = torch.autograd.profiler.emit_itt()
        error: BaseException | None = None
        try:
            itt.__enter__()
        except RuntimeError as e:
            error = e
        else:
            torch.zeros(())  # ittnotify loads its collector at the first task
            if _strobe._itt_seen():
                self.itt = itt
                return
            itt.__exit__(None, None, None)
        warnings.warn(f"strobe: torch_ops records ops through a dispatch mode, at several times the cost: "
                      f"{_why_no_itt(error)}", RuntimeWarning, stacklevel=5)

    def start(self) -> None:
        if self.mode is not None:
            self.mode.__enter__()
            self.mode_on = True

    def stop(self) -> None:
        if self.mode_on:
            self.mode_on = False
            self.mode.__exit__(None, None, None)  # type: ignore[union-attr]
        if self.itt is not None:
            self.itt.__exit__(None, None, None)
            self.itt = None

"""PyTorch's aten ops as cpu_op events (trace(torch_ops=True)).

A TorchDispatchMode sees every aten op that reaches the dispatcher's Python
key and wraps it in strobe.op, so each op is a cpu_op with its External id
and GPU work it launches links to it. record_shapes adds an instant named
after the op with the input shapes, at the op's start (the op's own event
cannot carry args: it is recorded by strobe_op_push, the hot path).
"""

from __future__ import annotations

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


class TorchOps:
    def __init__(self, record_shapes: bool) -> None:
        self.mode = _OpMode(record_shapes)

    def start(self) -> None:
        self.mode.__enter__()

    def stop(self) -> None:
        self.mode.__exit__(None, None, None)

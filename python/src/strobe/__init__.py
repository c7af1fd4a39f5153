"""strobe: a low-overhead GPU and CPU timeline profiler.

    import strobe
    with strobe.trace("out.json.gz", python=True):
        with strobe.range("data"):
            batch = next(it)
        strobe.counter("queue_depth", len(q))
        train_step(); strobe.step()

The hot calls (range, op, instant, counter, step) are C functions of the
strobe._strobe extension; the rest is here. Errors strobe reports are raised
as StrobeError carrying strobe's own message and status code.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import json
import os
import subprocess
import sys
import tempfile
import warnings
from typing import Any, Callable, Iterable, NamedTuple, Union

from . import _pytrace, _strobe
from ._strobe import StrobeError, counter, instant, is_tracing, now_ns, op, range, step

__all__ = [
    "StrobeError", "Event", "trace", "range", "op", "instant", "counter", "step", "schedule",
    "metadata", "remove_metadata", "set_thread_name", "set_rank", "is_tracing", "now_ns",
    "activity_types", "version", "__version__",
]

__version__ = "0.1.0"

ConfigValue = Union[str, int, float, bool, Iterable[str]]

_HERE = os.path.dirname(os.path.abspath(__file__))
_CLI = os.path.join(_HERE, "bin", "strobe")


def version() -> str:
    """The version of the libstrobe the extension loaded."""
    return _strobe.version()


def _decorate(kind: int, name: str | None, func: Callable[..., Any]) -> Callable[..., Any]:
    if inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func):
        raise TypeError(f"strobe.{'op' if kind else 'range'} cannot decorate the coroutine function "
                        f"{func.__qualname__}: its awaits would interleave with other ranges on the "
                        f"thread (trace it with python=True instead)")
    label = name if name is not None else getattr(func, "__qualname__", repr(func))
    cm = (op if kind else range)(label)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with cm:
            return func(*args, **kwargs)

    return wrapper


_strobe._set_decorator(_decorate)
# At import, so that step() counts iterations from the start and the process
# answers `strobe trigger` and dynolog (strobe_init starts strobe's service
# thread; GPU libraries are loaded only when a trace is prepared).
_strobe.init(None, -1)

# trace(torch_ops=True) takes PyTorch's ops from its ITT hooks, with the
# extension as the ITT collector: ittnotify (in libtorch) reads this
# variable when torch is imported, and loads the collector at its first task
# (only when a trace turns the hooks on). Left alone when set, e.g. for VTune.
_torch_imported_first = "torch" in sys.modules
if not _torch_imported_first:
    os.environ.setdefault("INTEL_LIBITTNOTIFY64", os.path.abspath(_strobe.__file__))

def _config_value(value: ConfigValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return ",".join(str(v) for v in value)


def _config_text(config: str | None, keys: dict[str, ConfigValue]) -> str:
    lines = [config] if config else []
    lines += [f"{k.upper()}={_config_value(v)}" for k, v in keys.items()]
    return "\n".join(lines)


def activity_types() -> list[str]:
    """Every activity type name strobe knows ("cpu_op", "kernel", ...)."""
    names = (_strobe.activity_type_name(i) for i in builtins.range(64))
    return [n for n in names if n]


def _activity_mask(activities: Iterable[str] | str) -> int:
    if isinstance(activities, str):
        activities = [a.strip() for a in activities.split(",") if a.strip()]
    mask = 0
    for name in activities:
        try:
            mask |= 1 << _strobe.activity_type_parse(name)
        except ValueError:
            raise ValueError(f"unknown activity type '{name}' (known: {', '.join(activity_types())})")
    return mask


class Event(NamedTuple):
    """One activity of a stopped trace (times in epoch ns)."""
    type: str
    category: str
    name: str
    start_ns: int
    end_ns: int
    device: int
    resource: int
    id: int
    linked_id: int
    flags: int
    args: dict[str, Any]

    @property
    def finished(self) -> bool:
        return not self.flags & _strobe.ACTIVITY_UNFINISHED


def _event(t: tuple) -> Event:
    args = {k: json.loads(v[0]) if isinstance(v, tuple) else v for k, v in t[10].items()}
    return Event._make((*t[:10], args))


class trace:
    """A synchronous trace: a context manager, or start()/stop()/save().

    output: where the context manager saves the trace when it ends (the
    suffix picks the format: .json, .json.gz, .json.zst, .pftrace).
    activities: type names (["cpu_op", "kernel"] or "cpu_op,kernel"); None
    is libkineto's default set. python: record every Python function call
    as a python_function event (python_c_calls: C functions too), keeping
    up to python_buffer_mb of them (48 bytes a call) until the stop.
    torch_ops: record PyTorch's aten ops as cpu_op events (record_shapes:
    with their input shapes). config: libkineto config text; other keyword
    arguments are config keys, e.g. activities_max_cpu_buffer_size_mb=64.
    """

    def __init__(self, output: str | os.PathLike[str] | None = None, *,
                 activities: Iterable[str] | str | None = None, python: bool = False,
                 python_c_calls: bool = False, python_buffer_mb: int = 512, torch_ops: bool = False,
                 record_shapes: bool = False, config: str | None = None, **keys: ConfigValue) -> None:
        self.output = os.fspath(output) if output is not None else None
        self.python = python or python_c_calls
        self.python_c_calls = python_c_calls
        self.python_buffer_mb = python_buffer_mb
        self.python_dropped = 0
        self.torch_ops = torch_ops
        self.record_shapes = record_shapes
        self._mask = _activity_mask(activities) if activities is not None else 0
        if self.python and activities is not None:
            self._mask |= 1 << _strobe.ACTIVITY_PYTHON_FUNCTION
        self._config = _config_text(config, keys)
        self._data: Any = None
        self._running = False
        self._torch: Any = None
        self._saved: str | None = None

    def start(self) -> "trace":
        """Opens the capture window (StrobeError when a trace already runs
        or the config is refused)."""
        if _strobe.is_tracing():  # strobe_prepare would discard the running trace's data
            raise StrobeError("strobe: a trace is already running (stop it first)")
        if self.torch_ops:
            from . import _torch
            self._torch = _torch.TorchOps(self.record_shapes)
        _strobe.prepare(self._mask, self._config)
        if self._torch is not None:
            self._torch.enable()
        try:
            _strobe.start()
        except BaseException:
            if self._torch is not None:
                self._torch.stop()
            raise
        self._running = True
        if self._torch is not None:
            self._torch.start()
        if self.python:
            _pytrace.start(self.python_c_calls, self.python_buffer_mb << 20)
        return self

    def stop(self) -> "trace":
        """Closes the window and keeps the processed trace."""
        if not self._running:
            raise StrobeError("strobe: stop() without a running trace")
        self._running = False
        try:
            if self.python:
                self.python_dropped = _pytrace.stop()
                if self.python_dropped:
                    warnings.warn(f"strobe: {self.python_dropped} Python calls were not recorded: over "
                                  f"python_buffer_mb={self.python_buffer_mb} or the CPU buffer budget",
                                  RuntimeWarning, stacklevel=2)
        finally:
            if self._torch is not None:
                self._torch.stop()
            self._data = _strobe.stop()
        return self

    def save(self, path: str | os.PathLike[str] | None = None) -> str:
        """Writes the stopped trace to path (default: output); returns it."""
        target = os.fspath(path) if path is not None else self.output
        if target is None:
            raise ValueError("strobe: save() needs a path (the trace was made without output=)")
        self._require_data().save(target)
        self._saved = target
        return target

    def _require_data(self) -> Any:
        if self._data is None:
            raise StrobeError("strobe: the trace has not been stopped yet")
        return self._data

    def events(self) -> list[Event]:
        """The stopped trace's activities, per thread in start order."""
        return [_event(t) for t in self._require_data().activities()]

    def __len__(self) -> int:
        return len(self._require_data())

    def summary(self, top: int | None = None) -> dict[str, Any]:
        """What `strobe summary --json` says of the stopped trace, as Python objects."""
        data = self._require_data()
        with tempfile.TemporaryDirectory(prefix="strobe-") as tmp:
            path = os.path.join(tmp, "trace.json")
            data.save(path)
            cmd = [_CLI, "summary", "--json"] + (["--top", str(top)] if top is not None else []) + [path]
            run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode:
            raise StrobeError(f"strobe summary failed: {run.stderr.strip()}")
        return json.loads(run.stdout)

    def __enter__(self) -> "trace":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self.output is not None:
            self.save()


def schedule(config: str | None = None, **keys: ConfigValue) -> None:
    """Schedules an on-demand trace (libkineto config text and/or keys as
    keyword arguments, e.g. activities_duration_msecs=500,
    activities_log_file="/tmp/t.json"); written on strobe's own thread."""
    _strobe.schedule(_config_text(config, keys))


def metadata(key: str | None = None, value: Any = None, /, **items: Any) -> None:
    """Adds top-level keys to every trace written from now on:
    metadata("run", "a") or metadata(run="a", lr=0.1, layers=[1, 2])."""
    if key is not None:
        items = {key: value, **items}
    for k, v in items.items():
        if isinstance(v, bool) or v is None or isinstance(v, (list, tuple, dict)):
            _strobe.metadata_set("json", k, json.dumps(v))
        elif isinstance(v, int):
            _strobe.metadata_set("int", k, v)
        elif isinstance(v, float):
            _strobe.metadata_set("double", k, v)
        elif isinstance(v, str):
            _strobe.metadata_set("string", k, v)
        else:
            raise TypeError(f"strobe.metadata: {k}: cannot store a {type(v).__name__}")


def remove_metadata(key: str) -> None:
    """Removes a key added with metadata() (StrobeError when it was not set)."""
    _strobe.metadata_remove(key)


def set_thread_name(name: str) -> None:
    """Names the calling thread's row in traces."""
    _strobe.thread_set_name(name)


def set_rank(rank: int, local_rank: int = -1, world_size: int = -1) -> None:
    """Says which rank of a distributed job this process is (-1: unknown)."""
    _strobe.set_rank(rank, local_rank, world_size)

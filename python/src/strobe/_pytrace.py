"""Python function tracing: installs strobe's C hooks in the interpreter.

On 3.12+ through sys.monitoring (one tool id, every thread); on 3.10 and
3.11 through the C profile function, set on every thread at the start and on
threads started later through threading.setprofile.
"""

from __future__ import annotations

import os
import sys
import threading

from . import _strobe

_USE_MONITORING = sys.version_info >= (3, 12)
_tool_id: int | None = None
# strobe's own functions (trace.start, the decorators' wrappers) are not recorded.
_OWN = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _monitoring_start(c_calls: bool, budget: int) -> None:
    global _tool_id
    mon = sys.monitoring  # type: ignore[attr-defined]
    ev = mon.events
    for tool in (mon.PROFILER_ID, 3, 4):  # the profiler's id, else a free one
        if mon.get_tool(tool) is None:
            mon.use_tool_id(tool, "strobe")
            _tool_id = tool
            break
    else:
        raise _strobe.StrobeError("strobe: Python tracing needs a free sys.monitoring tool id "
                                  "(the profiler's, 3 and 4 are taken)")
    callbacks = {
        ev.PY_START: _strobe._mon_push,
        ev.PY_RESUME: _strobe._mon_push,
        ev.PY_THROW: _strobe._mon_push,
        ev.PY_RETURN: _strobe._mon_pop,
        ev.PY_YIELD: _strobe._mon_pop,
        ev.PY_UNWIND: _strobe._mon_pop,
    }
    if c_calls:
        callbacks.update({ev.CALL: _strobe._mon_call, ev.C_RETURN: _strobe._mon_c_pop,
                          ev.C_RAISE: _strobe._mon_c_pop})
    mask = 0
    for event, fn in callbacks.items():
        mon.register_callback(_tool_id, event, fn)
        mask |= event
    _strobe.pytrace_start(c_calls, True, _OWN, budget)
    mon.set_events(_tool_id, mask)


def _monitoring_stop() -> int:
    global _tool_id
    mon = sys.monitoring  # type: ignore[attr-defined]
    dropped = _strobe.pytrace_stop()
    if _tool_id is not None:
        mon.set_events(_tool_id, 0)
        mon.free_tool_id(_tool_id)
        _tool_id = None
    return dropped


def start(c_calls: bool = False, budget: int = 512 << 20) -> None:
    """Records every Python call (and C call with c_calls) from now on,
    keeping up to budget bytes of finished calls (48 bytes each)."""
    if _USE_MONITORING:
        _monitoring_start(c_calls, budget)
    else:
        threading.setprofile(_strobe._thread_hook)
        _strobe.pytrace_start(c_calls, False, _OWN, budget)


def stop() -> int:
    """Stops and records the calls (those still open as unfinished) in the
    running trace; returns how many were dropped (over the budget)."""
    if _USE_MONITORING:
        return _monitoring_stop()
    dropped = _strobe.pytrace_stop()  # first: the rest is not recorded
    threading.setprofile(None)  # type: ignore[arg-type]
    return dropped

import asyncio
import os
import shutil
import subprocess
import sys
import threading
import warnings

import pytest
import strobe
from conftest import events, inside, load


def py_events(path):
    return events(load(path), "python_function")


def traced(path, fn, **kw):
    """fn() under a trace with Python tracing; its python_function events."""
    with strobe.trace(path, python=True, **kw):
        fn()
    return py_events(path)


def named(evs, suffix):
    return [e for e in evs if e["name"].endswith(suffix)]


def check_laminar(evs):
    """On each thread, two events are nested or disjoint, and each event's
    "Python parent id" is the innermost event around it."""
    by_tid = {}
    for e in evs:
        by_tid.setdefault(e["tid"], []).append(e)
    for tevs in by_tid.values():
        tevs.sort(key=lambda e: (e["ts"], -e["dur"]))
        ids = {e["args"]["Python id"]: e for e in tevs}
        for i, a in enumerate(tevs):
            for b in tevs[i + 1:]:
                if b["ts"] >= a["ts"] + a["dur"]:
                    break
                assert inside(b, a), (a, b)
            parent = a["args"]["Python parent id"]
            if parent:
                assert inside(a, ids[parent]), (a, ids[parent])


def leaf():
    return 1


def middle():
    return leaf() + leaf()


def test_calls_nest_with_ranges(tmp_trace):
    with strobe.trace(tmp_trace, python=True):
        with strobe.range("block"):
            middle()
    doc = load(tmp_trace)
    evs = events(doc, "python_function")
    (mid,) = named(evs, ": middle")
    leaves = named(evs, ": leaf")
    assert len(leaves) == 2
    assert mid["name"] == f"{__file__}({middle.__code__.co_firstlineno}): middle"
    for lf in leaves:
        assert inside(lf, mid) and lf["args"]["Python parent id"] == mid["args"]["Python id"]
    (block,) = [e for e in events(doc, "user_annotation") if e["name"] == "block"]
    assert inside(mid, block)
    (test,) = named(evs, ": test_calls_nest_with_ranges")
    assert test["args"]["finished"] is False and inside(block, test)
    assert not [e for e in evs if "/strobe/" in e["name"]], "strobe's own functions are recorded"
    check_laminar(evs)


def gen(n):
    for i in range(n):
        leaf()
        yield i


def consume():
    return sum(gen(3))


def test_generators_give_one_event_per_resumption(tmp_trace):
    evs = traced(tmp_trace, consume)
    (c,) = named(evs, ": consume")
    g = named(evs, ": gen")
    assert len(g) == 4  # three yields and the return
    for e in g:
        assert inside(e, c) and e["args"]["Python parent id"] == c["args"]["Python id"]
    assert len(named(evs, ": leaf")) == 3
    check_laminar(evs)


def raiser(depth):
    if depth == 0:
        raise KeyError("x")
    return raiser(depth - 1)


def catcher():
    try:
        raiser(3)
    except KeyError:
        pass
    return leaf()


def test_exceptions_unwind_the_stack(tmp_trace):
    evs = traced(tmp_trace, catcher)
    (c,) = named(evs, ": catcher")
    r = named(evs, ": raiser")
    assert len(r) == 4
    for e in r:
        assert inside(e, c)
    (lf,) = named(evs, ": leaf")
    assert lf["args"]["Python parent id"] == c["args"]["Python id"]  # not under a raiser
    check_laminar(evs)


async def worker(n):
    for _ in range(n):
        await asyncio.sleep(0)
        leaf()


async def main_coro():
    await asyncio.gather(worker(3), worker(2))


def test_coroutines_are_not_misnested(tmp_trace):
    evs = traced(tmp_trace, lambda: asyncio.run(main_coro()))
    w = named(evs, ": worker")
    assert len(w) >= 5 + 2  # one per resumption
    assert len(named(evs, ": leaf")) == 5
    check_laminar(evs)


def in_thread():
    middle()


def test_threads_started_later_are_traced(tmp_trace):
    with strobe.trace(tmp_trace, python=True):
        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
        middle()
    evs = py_events(tmp_trace)
    mids = named(evs, ": middle")
    assert len(mids) == 2
    (th,) = named(evs, ": in_thread")
    (main,) = named(evs, ": test_threads_started_later_are_traced")
    assert th["tid"] != main["tid"]
    assert {m["tid"] for m in mids} == {th["tid"], main["tid"]}
    assert {m["args"]["Python thread"] for m in mids} == {th["args"]["Python thread"], main["args"]["Python thread"]}
    check_laminar(evs)


def c_caller():
    lst = []
    lst.append(len("abc"))
    return lst


def test_c_calls_on_request(tmp_trace):
    assert not named(traced(tmp_trace, c_caller), "<built-in function len>")
    evs = traced(tmp_trace, c_caller, python_c_calls=True)
    (c,) = named(evs, ": c_caller")
    (ln,) = named(evs, "<built-in function len>")
    (ap,) = named(evs, "<built-in method append of list object>")
    assert inside(ln, c) and inside(ap, c) and ln["ts"] + ln["dur"] <= ap["ts"]
    check_laminar(evs)


def test_tracing_stops_with_the_trace(tmp_trace):
    with strobe.trace(tmp_trace, python=True):
        pass
    middle()  # after: not recorded anywhere, and no error
    with strobe.trace(tmp_trace, activities=["user_annotation"]):
        middle()
    assert not py_events(tmp_trace)


def test_python_function_added_to_named_activities(tmp_trace):
    assert named(traced(tmp_trace, middle, activities=["cpu_op"]), ": middle")


def test_threads_running_before_the_start_are_traced(tmp_trace):
    go, done = threading.Event(), threading.Event()

    def loop():
        go.wait()
        middle()
        done.set()

    t = threading.Thread(target=loop)
    t.start()
    with strobe.trace(tmp_trace, python=True):
        go.set()
        done.wait()
    t.join()
    mids = named(py_events(tmp_trace), ": middle")
    assert len(mids) == 1


def leaves(n):
    for _ in range(n):
        leaf()


def test_exited_threads_give_back_their_logs(tmp_trace):
    # A thread's log starts at 768 KiB: 4 MiB holds five, so the logs of 30
    # threads only fit when those of exited threads are given back.
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with strobe.trace(tmp_trace, python=True, python_buffer_mb=4) as t:
                for _ in range(10):
                    th = threading.Thread(target=leaves, args=(100,))
                    th.start()
                    th.join()
        assert t.python_dropped == 0
        assert not [str(w.message) for w in caught]
        lfs = named(py_events(tmp_trace), ": leaf")
        assert len(lfs) == 10 * 100
        assert len({e["args"]["Python thread"] for e in lfs}) == 10


def leaves_traced(path, n, **kw):
    """leaves(n) under a trace; the trace, its python_function events and
    the warnings its stop gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with strobe.trace(path, python=True, **kw) as t:
            leaves(n)
    return t, py_events(path), [str(w.message) for w in caught]


@pytest.mark.parametrize("budget", [{"python_buffer_mb": 1}, {"activities_max_cpu_buffer_size_mb": 1}],
                         ids=["python_buffer_mb", "cpu_buffer"])
def test_calls_over_the_budget_are_counted_and_warned_about(tmp_trace, budget):
    # Called from here both times: the same calls, and the same stack at the start.
    t, full, caught = leaves_traced(tmp_trace, 40000)
    assert t.python_dropped == 0 and not caught
    assert len(named(full, ": leaf")) == 40000
    t, kept, caught = leaves_traced(tmp_trace, 40000, **budget)
    assert 0 < t.python_dropped < 40000
    assert len(kept) + t.python_dropped == len(full)
    if "python_buffer_mb" in budget:
        assert len(kept) * 48 <= 1 << 20
    assert caught == [f"strobe: {t.python_dropped} Python calls were not recorded: over "
                      f"python_buffer_mb={t.python_buffer_mb} or the CPU buffer budget"]


NAPS = """
import sys, time
import strobe


def nap():
    time.sleep(0.0015)


with strobe.trace(sys.argv[1], python=True):
    for _ in range(5):
        nap()
"""


@pytest.mark.skipif(not shutil.which("cc"), reason="needs a C compiler")
def test_calls_are_stamped_with_the_capture_clock(tmp_path):
    # STROBE_CLOCK=monotonic makes strobe's capture clock CLOCK_MONOTONIC, and
    # ms_clock.c makes that whole milliseconds: Python calls stamped with it
    # last whole milliseconds (calls stamped with the TSC would not).
    shim = tmp_path / "libms_clock.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(shim), os.path.join(os.path.dirname(__file__), "ms_clock.c")],
                   check=True)
    out = tmp_path / "t.json"
    preload = " ".join(p for p in (os.environ.get("LD_PRELOAD", ""), str(shim)) if p)  # a sanitizer's first
    env = dict(os.environ, STROBE_CLOCK="monotonic", LD_PRELOAD=preload)
    subprocess.run([sys.executable, "-c", NAPS, str(out)], env=env, check=True)
    naps = named(py_events(out), ": nap")
    assert len(naps) == 5
    for e in naps:
        ns = round(e["dur"] * 1000)
        assert ns >= 1_000_000 and ns % 1_000_000 == 0, e

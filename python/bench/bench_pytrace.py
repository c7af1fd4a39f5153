"""Python function tracing: strobe (python=True) against viztracer on the same
workload in one process (docs/benchmarks.md).

    pip install viztracer
    python python/bench/bench_pytrace.py

The workload is fib(18), 8,361 Python calls (short rounds: fewer of them
are preempted on a shared machine). Each tracer records it with
its defaults (viztracer with a buffer big enough to keep every call); the
time of collection (start to stop, not the file's writing) less the
untraced run's, over the calls, is the per-call cost. The three take turns,
60 rounds; each one's best round counts.
"""

import os
import sys
import time

os.environ.setdefault("STROBE_LOG_LEVEL", "4")
import strobe  # noqa: E402

N = 18
CALLS = 8_361


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def timed(start, stop):
    start()
    t0 = time.perf_counter_ns()
    fib(N)
    t1 = time.perf_counter_ns()
    stop()
    return t1 - t0


def main():
    holder = {}

    def strobe_start():
        holder["t"] = strobe.trace(python=True, activities_max_cpu_buffer_size_mb=256).start()

    def strobe_stop():
        t = holder["t"].stop()
        assert sum(1 for e in t.events() if e.name.endswith(": fib")) == CALLS

    runs = [("untraced", lambda: None, lambda: None), ("strobe python=True", strobe_start, strobe_stop)]
    try:
        from viztracer import VizTracer
    except ImportError:
        print("viztracer is not installed: pip install viztracer", file=sys.stderr)
    else:
        tracer = VizTracer(tracer_entries=2_000_000, verbose=0)

        def viz_stop():
            tracer.stop()
            tracer.clear()

        runs.append(("viztracer " + __import__("viztracer").__version__, tracer.start, viz_stop))
    best = {name: float("inf") for name, _, _ in runs}
    for _ in range(60):
        for name, start, stop in runs:
            best[name] = min(best[name], timed(start, stop))
    rows = list(best.items())
    base = best["untraced"]
    print(f"Python {sys.version.split()[0]}, fib({N}) = {CALLS} calls, best of 60 rounds")
    for name, ns in rows:
        extra = (ns - base) / CALLS
        print(f"{name:22s} {ns / 1e6:7.2f} ms   {extra:6.1f} ns per call over untraced")


if __name__ == "__main__":
    main()

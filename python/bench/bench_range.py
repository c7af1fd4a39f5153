"""strobe.range push+pop against the Python it replaces (docs/benchmarks.md).

    python python/bench/bench_range.py

Prints ns per iteration (best of 7 runs of 200,000) of:
  empty call       f()                 an empty Python function
  empty with       with cm: pass       a Python class with empty __enter__/__exit__
  range (tracing)  with strobe.range("step"): pass   inside a running trace
  range reused     with r: pass        one strobe.range object, reused
  range (idle)     with strobe.range("step"): pass   no trace running
"""

import os
import timeit

os.environ.setdefault("STROBE_LOG_LEVEL", "4")
import strobe  # noqa: E402

N = 200_000


def f():
    pass


class Empty:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def best(stmt, **ns):
    g = {"f": f, "Empty": Empty, "strobe": strobe, "cm": Empty(), "r": strobe.range("step"), **ns}
    return min(timeit.repeat(stmt, globals=g, number=N, repeat=7)) / N * 1e9


def main():
    rows = [("empty call", best("f()")), ("empty with", best("with Empty(): pass"))]
    rows.append(("range (idle)", best("with strobe.range('step'): pass")))
    # A large buffer, so no event is dropped: 7 x 200,000 ranges.
    with strobe.trace(activities=["user_annotation"], activities_max_cpu_buffer_size_mb=512):
        rows.append(("range (tracing)", best("with strobe.range('step'): pass")))
        rows.append(("range reused", best("with r: pass")))
    base = rows[1][1]
    for name, ns in rows:
        print(f"{name:16s} {ns:7.1f} ns  {ns / base:4.2f}x empty with  {ns / rows[0][1]:4.2f}x empty call")


if __name__ == "__main__":
    main()

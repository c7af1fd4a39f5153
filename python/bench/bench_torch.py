"""PyTorch ops: strobe.trace(torch_ops=True) against torch.profiler on the same
loop in one process (docs/benchmarks.md).

    pip install torch ./python
    python python/bench/bench_torch.py

The loop makes 2,000 aten calls from Python (1,000 times `a + b` and
`torch.mm(a, b)` on 16x16 CPU tensors). Each way of recording it takes its
turn, 40 rounds; each one's best round counts. The cost per call is the
loop's thread CPU time (start to stop, neither included; CPU time, so that
a preemption on a shared machine does not count) less the unprofiled loop's,
over the 2,000 calls; "events" is what each records per call (PyTorch's
RecordFunction also sees the ops an op calls in turn: aten::mm's
aten::resolve_conj); "stop" is the wall time of the stop, processing included.

  strobe torch_ops            PyTorch's ITT hooks, strobe as the collector
  strobe record_shapes        a TorchDispatchMode: op and shapes instant
  strobe dispatch mode        the same mode without shapes (the fallback)
  strobe NVTX (emit_nvtx)     PyTorch's NVTX hooks into strobe's NVTX capture
  torch.profiler              profile(activities=[CPU])
  torch.profiler shapes       the same, record_shapes=True
"""

import os
import sys
import time

os.environ.setdefault("STROBE_LOG_LEVEL", "4")
os.environ.setdefault("KINETO_LOG_LEVEL", "5")
import strobe  # noqa: E402  (first: it names itself as PyTorch's ITT collector)

# PyTorch's NVTX calls load their tool at the first call: strobe's injection
# library, for the emit_nvtx row.
_LIB = os.path.join(os.path.dirname(strobe.__file__), "lib")
os.environ.setdefault("NVTX_INJECTION64_PATH", os.path.join(_LIB, "libstrobe_inject.so"))

import torch  # noqa: E402
from torch.autograd import profiler as autograd_profiler  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from strobe import _torch  # noqa: E402

N = 1_000  # iterations, 2 aten calls each (short rounds: fewer are preempted)
CALLS = 2 * N
ROUNDS = 40

a = torch.ones(16, 16)
b = torch.ones(16, 16)


def loop():
    for _ in range(N):
        a + b
        torch.mm(a, b)


class StrobeTrace:
    def __init__(self, **kw):
        self.kw = kw

    def __enter__(self):
        self.t = strobe.trace(activities_max_cpu_buffer_size_mb=256, **self.kw).start()

    def __exit__(self, *exc):
        self.t.stop()

    def count(self):
        return sum(1 for e in self.t.events() if e.type in ("cpu_op", "user_annotation"))


class StrobeDispatchMode(StrobeTrace):
    def __enter__(self):
        super().__enter__()
        self.mode = _torch._OpMode(False)
        self.mode.__enter__()

    def __exit__(self, *exc):
        self.mode.__exit__(None, None, None)
        super().__exit__()


class StrobeNvtx(StrobeTrace):
    """emit_nvtx without its torch.cuda.synchronize() (no GPU needed)."""

    def __enter__(self):
        super().__enter__()
        cfg = autograd_profiler.ProfilerConfig(autograd_profiler.ProfilerState.NVTX, False, False, False,
                                               False, False, autograd_profiler._ExperimentalConfig())
        autograd_profiler._enable_profiler(cfg, set())

    def __exit__(self, *exc):
        autograd_profiler._disable_profiler()
        super().__exit__()


class TorchProfiler:
    def __init__(self, **kw):
        self.p = None
        self.kw = kw

    def __enter__(self):
        self.p = profile(activities=[ProfilerActivity.CPU], **self.kw)
        self.p.__enter__()

    def __exit__(self, *exc):
        self.p.__exit__(None, None, None)

    def count(self):
        return len(self.p.events())


def timed(cm):
    """(the loop's thread CPU time, the stop's wall time), in ns."""
    if cm is None:
        t0 = time.thread_time_ns()
        loop()
        return time.thread_time_ns() - t0, 0
    cm.__enter__()
    t0 = time.thread_time_ns()
    loop()
    t1 = time.thread_time_ns()
    s0 = time.perf_counter_ns()
    cm.__exit__(None, None, None)
    return t1 - t0, time.perf_counter_ns() - s0


def main():
    runs = {
        "unprofiled": lambda: None,
        "strobe torch_ops": lambda: StrobeTrace(torch_ops=True),
        "strobe record_shapes": lambda: StrobeTrace(torch_ops=True, record_shapes=True),
        "strobe dispatch mode": lambda: StrobeDispatchMode(activities="cpu_op"),
        "strobe NVTX (emit_nvtx)": lambda: StrobeNvtx(activities="user_annotation"),
        "torch.profiler": lambda: TorchProfiler(),
        "torch.profiler shapes": lambda: TorchProfiler(record_shapes=True),
    }
    best = {k: (float("inf"), 0.0, 0) for k in runs}
    for _ in range(ROUNDS):
        for name, make in runs.items():
            cm = make()
            loop_ns, stop_ns = timed(cm)
            if loop_ns < best[name][0]:
                best[name] = (loop_ns, stop_ns, cm.count() if cm is not None else 0)
    base = best["unprofiled"][0]
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}, {CALLS} aten calls, best of {ROUNDS}")
    print(f"{'':24s} {'ns/call':>8s} {'+ns/call':>9s} {'events/call':>12s} {'stop ms':>8s}")
    for name, (loop_ns, stop_ns, events) in best.items():
        print(f"{name:24s} {loop_ns / CALLS:8.0f} {(loop_ns - base) / CALLS:9.0f} {events / CALLS:12.1f} "
              f"{stop_ns / 1e6:8.1f}")


if __name__ == "__main__":
    main()

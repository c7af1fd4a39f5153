import os
import subprocess
import sys
import threading
import warnings

import pytest
import strobe
from conftest import events, inside, load

try:
    import torch
except Exception as e:  # ImportError, or a CUDA wheel missing its libraries
    pytest.skip(f"torch is not importable ({e}): the PyTorch op tests do not run", allow_module_level=True)


def ops_named(doc, name):
    return [e for e in events(doc, "cpu_op") if e["name"] == name]


def test_aten_ops_become_cpu_ops_through_the_itt_hooks(tmp_trace):
    a, b = torch.ones(4, 8, requires_grad=True), torch.ones(8, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the dispatch mode
        with strobe.trace(tmp_trace, torch_ops=True):
            with strobe.range("model"):
                with torch.autograd.profiler.record_function("forward"):
                    loss = (a @ b).sum()
                loss.backward()
    doc = load(tmp_trace)
    (model,) = [e for e in events(doc, "user_annotation") if e["name"] == "model"]
    (fwd,) = ops_named(doc, "forward")
    (mm,) = [e for e in ops_named(doc, "aten::mm") if inside(e, fwd)]
    total = max(ops_named(doc, "aten::sum"), key=lambda e: e["dur"])
    assert inside(fwd, model) and inside(total, fwd) and total["ts"] >= mm["ts"] + mm["dur"]
    # The ops an op calls in turn are nested in it, as PyTorch's profiler shows them.
    assert any(inside(e, mm) for e in ops_named(doc, "aten::resolve_conj"))
    # Backward: the autograd nodes and the ops they run, on this thread.
    (mm_bwd,) = ops_named(doc, "MmBackward0")
    assert inside(mm_bwd, model) and any(inside(e, mm_bwd) for e in ops_named(doc, "aten::mm"))
    ids = [e["args"]["External id"] for e in events(doc, "cpu_op")]
    assert all(i > 0 for i in ids) and len(set(ids)) == len(ids)
    assert {e["tid"] for e in events(doc, "cpu_op")} == {model["tid"]}
    # The trace's own check, made before it starts, is not in it.
    assert not ops_named(doc, "aten::zeros")


def test_ops_nest_in_python_functions(tmp_trace):
    x = torch.ones(3, 3)

    def layer(t):
        return torch.relu(t) * 2

    with strobe.trace(tmp_trace, torch_ops=True, python=True):
        layer(x)
    doc = load(tmp_trace)
    (fn,) = [e for e in events(doc, "python_function") if e["name"].endswith("<locals>.layer")]
    (relu,) = ops_named(doc, "aten::relu")
    (mul,) = ops_named(doc, "aten::mul")
    assert inside(relu, fn) and inside(mul, fn) and relu["tid"] == fn["tid"]


def test_record_shapes(tmp_trace):
    a, b = torch.ones(4, 8), torch.ones(8, 2)
    with strobe.trace(tmp_trace, torch_ops=True, record_shapes=True):
        with strobe.range("model"):
            (a @ b).sum()
    doc = load(tmp_trace)
    (model,) = [e for e in events(doc, "user_annotation") if e["name"] == "model"]
    (mm,) = ops_named(doc, "aten::mm")
    assert inside(mm, model) and mm["args"]["External id"] > 0
    dims = {e["name"]: e for e in doc["traceEvents"] if e.get("cat") == "cpu_instant_event"}
    assert set(dims) == {"aten::mm Input Dims [[4, 8], [8, 2]]", "aten::sum Input Dims [[4, 2]]"}
    assert mm["ts"] <= dims["aten::mm Input Dims [[4, 8], [8, 2]]"]["ts"] <= mm["ts"] + mm["dur"]


def test_ops_on_other_threads_are_not_recorded(tmp_trace):
    # As with torch.profiler: the hooks are turned on for the starting thread
    # (and autograd's threads working for it), not for threads of its own.
    def worker():
        torch.ones(3).neg()

    with strobe.trace(tmp_trace, torch_ops=True):
        torch.ones(3).exp()
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    doc = load(tmp_trace)
    assert len(ops_named(doc, "aten::exp")) == 1 and not ops_named(doc, "aten::neg")


def test_no_ops_after_the_trace(tmp_trace):
    with strobe.trace(tmp_trace, torch_ops=True) as t:
        torch.ones(2).exp()
    torch.ones(2).neg()
    with strobe.trace(torch_ops=True) as t2:
        torch.ones(2).sin()
    assert [e.name for e in t.events() if e.name in ("aten::exp", "aten::neg", "aten::sin")] == ["aten::exp"]
    assert [e.name for e in t2.events() if e.name in ("aten::exp", "aten::neg", "aten::sin")] == ["aten::sin"]


def test_a_running_torch_profiler_makes_it_fall_back(tmp_trace):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        with pytest.warns(RuntimeWarning, match="dispatch mode.*ITT hooks could not be turned on "
                          r"\(Profiler is already enabled on this thread"):
            t = strobe.trace(tmp_trace, torch_ops=True).start()
        torch.ones(2).exp()
        t.stop()
    assert [e.name for e in t.events() if e.type == "cpu_op"] == ["aten::ones", "aten::exp"]


def test_torch_profiler_inside_is_refused_by_torch():
    with strobe.trace(torch_ops=True):
        with pytest.raises(RuntimeError, match="Profiler is already enabled on this thread"):
            torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]).__enter__()


def test_torch_imported_first_makes_it_fall_back():
    # ittnotify reads INTEL_LIBITTNOTIFY64 when torch is imported: strobe sets
    # it at its own import, so torch imported first means the dispatch mode.
    script = ("import warnings, torch, strobe\n"
              "with warnings.catch_warnings(record=True) as w:\n"
              "    warnings.simplefilter('always')\n"
              "    with strobe.trace(torch_ops=True) as t:\n"
              "        torch.ones(2).exp()\n"
              "print([str(x.message) for x in w])\n"
              "print([e.name for e in t.events() if e.type == 'cpu_op'])\n")
    env = {k: v for k, v in os.environ.items() if k != "INTEL_LIBITTNOTIFY64"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    warned, ops = run.stdout.splitlines()[-2:]
    assert "'aten::exp'" in ops and "torch was imported before strobe" in warned

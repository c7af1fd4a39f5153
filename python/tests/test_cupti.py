"""The fake libcupti seen from Python: GPU work launched inside a Python
function (through an op), or inside a PyTorch op, is in the trace and
linked to it.

Needs STROBE_FAKE_CUPTI: the path of libfake_cupti.so from a C build of the
tests (scripts/dev python sets it), a C compiler and the CUDA headers."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import events, inside, load

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.environ.get("STROBE_FAKE_CUPTI", "")
CUDA_INC = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "include")

if not os.path.isfile(FAKE) or not shutil.which("cc") or not os.path.isfile(os.path.join(CUDA_INC, "cupti.h")):
    pytest.skip(f"the fake libcupti tests need STROBE_FAKE_CUPTI (now {FAKE!r}), cc and {CUDA_INC}/cupti.h",
                allow_module_level=True)

PRELUDE = """
    import ctypes, sys
    fake = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)  # the CUDA "driver" too
    gpu = ctypes.CDLL(sys.argv[2])
    gpu.fake_gpu_launch.restype = ctypes.c_uint32
    import strobe
"""

PROGRAM = textwrap.dedent(PRELUDE + """
    def train_step():
        with strobe.op("aten::mm"):
            return gpu.fake_gpu_launch(b"gemm_kernel")

    with strobe.trace(sys.argv[3], python=True):
        print("corr", train_step())
""")

# A record_function scope is a RecordFunction like an aten op: it reaches
# strobe through PyTorch's ITT hooks.
TORCH_PROGRAM = textwrap.dedent(PRELUDE + """
    import torch

    with strobe.trace(sys.argv[3], torch_ops=True):
        with torch.autograd.profiler.record_function("launch"):
            gpu.fake_gpu_launch(b"gemm_kernel")
        torch.ones(2).exp()
""")


def run(tmp_path, program):
    """The trace of program, run with the fake libcupti as CUPTI."""
    fake_dir = os.path.dirname(os.path.abspath(FAKE))
    helper = tmp_path / "libfake_gpu.so"
    repo = os.path.join(HERE, "..", "..")
    includes = [f"-I{os.path.join(repo, d)}" for d in ("tests/integration", "tests/util", "tests/fakes", "include")]
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(helper), os.path.join(HERE, "fake_gpu.c"), *includes,
                    "-isystem", CUDA_INC, f"-DFAKE_CUPTI_PATH=\"{FAKE}\"", FAKE, f"-Wl,-rpath,{fake_dir}"],
                   check=True)
    prog = tmp_path / "prog.py"
    prog.write_text(program)
    out = tmp_path / "t.json"
    env = {**os.environ, "STROBE_CUPTI_PATH": os.path.abspath(FAKE), "STROBE_LOG_LEVEL": "4"}
    env.pop("INTEL_LIBITTNOTIFY64", None)  # strobe names itself, as in a fresh process
    r = subprocess.run([sys.executable, str(prog), os.path.abspath(FAKE), str(helper), str(out)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return load(out)


def test_gpu_work_links_to_the_python_function(tmp_path):
    doc = run(tmp_path, PROGRAM)
    (kernel,) = events(doc, "kernel")
    (launch,) = events(doc, "cuda_runtime")
    (op,) = events(doc, "cpu_op")
    (step,) = [e for e in events(doc, "python_function") if e["name"].endswith(": train_step")]
    assert kernel["name"] == "gemm_kernel" and kernel["tid"] == 7
    assert kernel["args"]["External id"] == op["args"]["External id"] == launch["args"]["External id"]
    assert launch["tid"] == op["tid"] and inside(launch, op)
    assert inside(op, step) and op["tid"] == step["tid"]


def test_gpu_work_links_to_the_torch_op(tmp_path):
    try:
        import torch  # noqa: F401
    except Exception as e:  # ImportError, or a CUDA wheel missing its libraries
        pytest.skip(f"torch is not importable ({e}): the PyTorch op linking test does not run")
    doc = run(tmp_path, TORCH_PROGRAM)
    (kernel,) = events(doc, "kernel")
    (launch,) = events(doc, "cuda_runtime")
    ops = {e["name"]: e for e in events(doc, "cpu_op")}
    assert "aten::exp" in ops
    assert kernel["args"]["External id"] == ops["launch"]["args"]["External id"] == launch["args"]["External id"]
    assert inside(launch, ops["launch"]) and launch["tid"] == ops["launch"]["tid"]

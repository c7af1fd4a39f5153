import pytest
import strobe
from conftest import events, inside, load

try:
    import torch
except Exception as e:  # ImportError, or a CUDA wheel missing its libraries
    pytest.skip(f"torch is not importable ({e}): the PyTorch op tests do not run", allow_module_level=True)


def test_aten_ops_become_cpu_ops(tmp_trace):
    a, b = torch.ones(4, 8), torch.ones(8, 2)
    with strobe.trace(tmp_trace, torch_ops=True, record_shapes=True):
        with strobe.range("model"):
            (a @ b).sum()
    doc = load(tmp_trace)
    ops = {e["name"]: e for e in events(doc, "cpu_op")}
    (model,) = [e for e in events(doc, "user_annotation") if e["name"] == "model"]
    assert "aten::mm" in ops and "aten::sum" in ops
    assert inside(ops["aten::mm"], model) and ops["aten::mm"]["args"]["External id"] > 0
    dims = [e["name"] for e in doc["traceEvents"] if e.get("cat") == "cpu_instant_event"]
    assert "aten::mm Input Dims [[4, 8], [8, 2]]" in dims

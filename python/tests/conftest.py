import gzip
import json
import os

import pytest

os.environ.setdefault("STROBE_LOG_LEVEL", "4")  # no "capture is off" warnings on machines without GPUs


def load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def events(doc, cat=None):
    return [e for e in doc["traceEvents"] if e.get("ph") == "X" and (cat is None or e.get("cat") == cat)]


def inside(inner, outer):
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]


@pytest.fixture
def tmp_trace(tmp_path):
    return tmp_path / "t.json"

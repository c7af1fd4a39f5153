"""The `strobe` console script: runs the strobe command bundled in the wheel."""

from __future__ import annotations

import os
import sys

BINARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "strobe")


def main() -> None:
    try:
        os.execv(BINARY, ["strobe", *sys.argv[1:]])
    except OSError as e:
        sys.exit(f"strobe: cannot run {BINARY}: {e.strerror}")

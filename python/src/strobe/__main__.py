"""python -m strobe record [--python] [--c-calls] [-o OUT] [--activities A,B] (SCRIPT | -m MODULE) [ARGS...]

Runs a Python script (or module) in this interpreter under strobe.trace and
writes its trace to OUT (default strobe-PID.json.gz). --python records every
Python function call (--c-calls: C functions too). Any other command line is
handed to the bundled `strobe` command (python -m strobe summary t.json.gz).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys

from . import StrobeError, trace
from ._cli import main as cli_main


def record(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m strobe record",
                                description="Runs a Python script under strobe.trace.")
    p.add_argument("-o", "--output", default=None, help="trace file (default strobe-PID.json.gz)")
    p.add_argument("--python", action="store_true", help="record every Python function call")
    p.add_argument("--c-calls", action="store_true", help="and every C function call")
    p.add_argument("--activities", default=None, help="activity types, comma-separated")
    p.add_argument("-m", dest="module", default=None, help="run a module (as python -m)")
    p.add_argument("args", nargs=argparse.REMAINDER, help="the script and its arguments")
    o = p.parse_args(argv)
    if o.module is None and not o.args:
        p.error("give a script (or -m MODULE) to run")
    output = o.output or f"strobe-{os.getpid()}.json.gz"
    t = trace(output, activities=o.activities, python=o.python, python_c_calls=o.c_calls)
    target = o.module if o.module is not None else o.args[0]
    sys.argv = [target, *(o.args if o.module is not None else o.args[1:])]
    if o.module is None:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
    code = 0
    try:
        with t:
            if o.module is not None:
                runpy.run_module(o.module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except StrobeError as e:
        print(f"strobe: {e}", file=sys.stderr)
        return 1
    print(f"strobe: trace written to {output}", file=sys.stderr)
    return code


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "record" and "--" not in sys.argv[2:3]:
        sys.exit(record(sys.argv[2:]))
    cli_main()


if __name__ == "__main__":
    main()

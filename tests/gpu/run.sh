#!/usr/bin/env bash
# The real-GPU check: on a machine with an NVIDIA GPU and the CUDA toolkit,
# builds strobe and the CUDA example, traces the example through the C API,
# checks the trace (every launched kernel present, ac2g arrows, stream rows
# named, GPU work linked to the ops that launched it), traces it again
# unmodified through `strobe record` (CUDA driver injection), and measures
# the slowdown of a launch-bound loop with tracing against without. Prints a
# short report; exits non-zero if a check fails. Runs in a few minutes.
#   tests/gpu/run.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-gpu}
OUT=${OUT:-$(mktemp -d)}
export PATH=$PATH:${CUDA_HOME:-/usr/local/cuda}/bin
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /'

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSTROBE_BUILD_TESTS=OFF -DSTROBE_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
EX=$BUILD/examples/cuda_workload
[ -x "$EX" ] || { echo "FAIL: examples/cuda_workload was not built (no nvcc?)"; exit 1; }

echo "== trace through the API"
STROBE_LOG_LEVEL=${STROBE_LOG_LEVEL:-2} "$EX" -o "$OUT/api.json" -i 20 | tee "$OUT/api.out"
python3 - "$OUT/api.json" "$(awk '/^kernels/{print $2}' "$OUT/api.out")" <<'PY'
import json, sys
path, launched = sys.argv[1], int(sys.argv[2])
t = json.load(open(path))
ev = t["traceEvents"]
X = [e for e in ev if e.get("ph") == "X"]
kernels = [e for e in X if e.get("cat") == "kernel"]
runtime = [e for e in X if e.get("cat") == "cuda_runtime"]
ops = {e["args"]["External id"]: e for e in X if e.get("cat") == "cpu_op"}
starts = {e["id"] for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
ends = {e["id"] for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g"}
streams = {(e["pid"], e["tid"]) for e in kernels}
named = {(e["pid"], e["tid"]) for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
linked = [k for k in kernels if k.get("args", {}).get("External id") in ops]
acct = t.get("strobe", {})
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
print(f"kernels {len(kernels)} (launched {launched}), runtime calls {len(runtime)}, ops {len(ops)}, "
      f"memcpy {sum(e.get('cat') == 'gpu_memcpy' for e in X)}, memset {sum(e.get('cat') == 'gpu_memset' for e in X)}, "
      f"sync {sum(e.get('cat') == 'cuda_sync' for e in X)}, gpu_user_annotation {sum(e.get('cat') == 'gpu_user_annotation' for e in X)}")
print("accounting:", {k: v for k, v in acct.items() if k.startswith("gpu_") and v})
check(t.get("gpu_capture") is None, "GPU capture on (" + str(t.get("gpu_capture")) + ")")
check(len(kernels) == launched, f"kernel count equals launches ({len(kernels)} == {launched})")
check(len(starts & ends) >= len(kernels) // 2, f"ac2g arrows present ({len(starts & ends)} complete)")
check(streams <= named, f"every stream row is named ({len(streams)} rows)")
check(len(linked) >= len(kernels) * 0.9, f"kernels linked to the op that launched them ({len(linked)}/{len(kernels)})")
check(acct.get("gpu_launches_without_kernel", 0) == 0, "no launch without its kernel")
sys.exit(1 if fail else 0)
PY

echo "== strobe record: the same program, no strobe calls (--no-trace), injected by the CUDA driver"
"$BUILD/strobe" record -o "$OUT/record.json" -- "$EX" --no-trace -i 20 | tee "$OUT/record.out"
python3 - "$OUT/record.json" "$(awk '/^kernels/{print $2}' "$OUT/record.out")" <<'PY'
import json, sys
path, launched = sys.argv[1], int(sys.argv[2])
t = json.load(open(path))
ev = t["traceEvents"]
kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
runtime = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"]
arrows = {e["id"] for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
check(t.get("gpu_capture") is None, "GPU capture on under strobe record (" + str(t.get("gpu_capture")) + ")")
check(len(kernels) == launched, f"kernel count equals launches ({len(kernels)} == {launched})")
check(len(runtime) > 0 and len(arrows) >= len(kernels) // 2, f"runtime calls ({len(runtime)}) and arrows ({len(arrows)})")
sys.exit(1 if fail else 0)
PY

echo "== launch-bound loop: slowdown with tracing"
N=${LAUNCHES:-200000}
base=$("$EX" --no-trace -i 1 -l "$N" | awk '/^launch_us/{print $2}')
traced=$("$EX" -o "$OUT/loop.json" -i 1 -l "$N" | awk '/^launch_us/{print $2}')
awk -v b="$base" -v t="$traced" -v n="$N" 'BEGIN {
	printf "%d empty kernels: %.3f us/launch untraced, %.3f us/launch traced, slowdown %.2fx\n", n, b, t, t / b }'
echo "traces in $OUT"

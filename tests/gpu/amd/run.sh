#!/usr/bin/env bash
# The real-GPU check for AMD, mirroring tests/gpu/run.sh: on a machine with
# an AMD GPU and ROCm 6.2 or newer (hipcc, rocprofiler-sdk), builds strobe
# and the HIP example, traces the example through the C API, checks the
# trace (every launched kernel present with `grid` and `block` arrays,
# copies named by direction, ac2g arrows, `GPU N` rows, GPU work linked to
# the ops that launched it, roctx ranges), traces it again unmodified
# through `strobe record` (ROCP_TOOL_LIBRARIES), and measures the slowdown
# of a launch-bound loop with tracing against without. Prints a short
# report; exits non-zero if a check fails. Runs in a few minutes.
#
# NOT RUN YET: no AMD machine is lent to this project, so this script has
# never run on real ROCm; the AMD backend is tested against the fake
# rocprofiler-sdk (tests/fakes/). Expect to adjust it on first contact.
#   tests/gpu/amd/run.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
BUILD=${1:-build-gpu-amd}
OUT=${OUT:-$(mktemp -d)}
export ROCM_PATH=${ROCM_PATH:-/opt/rocm}
export PATH=$PATH:$ROCM_PATH/bin
command -v hipcc >/dev/null || { echo "FAIL: no hipcc on PATH or in $ROCM_PATH/bin (ROCm not installed?)"; exit 1; }
if command -v rocm-smi >/dev/null; then rocm-smi --showproductname 2>/dev/null | grep -i 'card series' | sed 's/^/gpu: /' || true; fi
if command -v hipconfig >/dev/null; then echo "hip: $(hipconfig --version 2>/dev/null)"; fi

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSTROBE_BUILD_TESTS=OFF -DSTROBE_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
EX=$BUILD/examples/hip_workload
[ -x "$EX" ] || { echo "FAIL: examples/hip_workload was not built (CMake found no HIP compiler?)"; exit 1; }

echo "== trace through the API"
STROBE_LOG_LEVEL=${STROBE_LOG_LEVEL:-2} "$EX" -o "$OUT/api.json" -i 20 | tee "$OUT/api.out"
count() { awk -v k="$1" '$1 == k {print $2}' "$2"; }
python3 - "$OUT/api.json" "$(count kernels "$OUT/api.out")" "$(count copies "$OUT/api.out")" \
	"$(count roctx_ranges "$OUT/api.out")" <<'PY'
import json, sys
path, launched, copied, roctx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = json.load(open(path))
ev = t["traceEvents"]
X = [e for e in ev if e.get("ph") == "X"]
kernels = [e for e in X if e.get("cat") == "kernel"]
runtime = [e for e in X if e.get("cat") == "cuda_runtime"]
copies = [e for e in X if e.get("cat") == "gpu_memcpy"]
ops = {e["args"]["External id"]: e for e in X if e.get("cat") == "cpu_op"}
starts = {e["id"] for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
ends = {e["id"] for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g"}
rows = {(e["pid"], e["tid"]) for e in kernels + copies}
named = {(e["pid"], e["tid"]) for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
gpu_pids = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_labels"
            and str(e.get("args", {}).get("labels", "")).startswith("GPU ")}
def dims(k, key):
    v = k.get("args", {}).get(key)
    return isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) and x > 0 for x in v)
linked = [k for k in kernels + copies if k.get("args", {}).get("External id") in ops]
annotations = [e for e in X if e.get("cat") == "user_annotation" and e.get("name") == "roctx iteration"]
gpu_annotations = [e for e in X if e.get("cat") == "gpu_user_annotation"]
acct = t.get("strobe", {})
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
print(f"kernels {len(kernels)} (launched {launched}), HIP calls {len(runtime)}, ops {len(ops)}, "
      f"memcpy {len(copies)}, memset {sum(e.get('cat') == 'gpu_memset' for e in X)}, "
      f"user_annotation {len(annotations)}, gpu_user_annotation {len(gpu_annotations)}")
print("copy names:", sorted({e["name"] for e in copies}))
print("accounting:", {k: v for k, v in acct.items() if k.startswith("gpu_") and v})
check(t.get("rocm_capture") is None, "AMD capture on (" + str(t.get("rocm_capture")) + ")")
check(len(kernels) == launched, f"kernel count equals launches ({len(kernels)} == {launched})")
check(all(dims(k, "grid") and dims(k, "block") for k in kernels), "every kernel has grid and block arrays")
check(sum("HtoD" in e["name"] for e in copies) == copied // 2 and
      sum("DtoH" in e["name"] for e in copies) == copied // 2,
      f"copies named by direction ({copied // 2} HtoD, {copied // 2} DtoH)")
check(len(starts & ends) >= len(kernels) // 2, f"ac2g arrows present ({len(starts & ends)} complete)")
check(len(gpu_pids) >= 1 and all(k["pid"] in gpu_pids for k in kernels + copies),
      f"GPU work on `GPU N` rows ({len(gpu_pids)} GPU processes)")
check(rows <= named, f"every stream row is named ({len(rows)} rows)")
check(len(linked) >= (len(kernels) + len(copies)) * 0.9,
      f"GPU work has the External id of the op that launched it ({len(linked)}/{len(kernels) + len(copies)})")
check(len(gpu_annotations) > 0, "strobe ranges as gpu_user_annotation spans")
check(len(annotations) == roctx, f"roctx ranges as user_annotation ({len(annotations)} == {roctx})")
check(acct.get("gpu_dropped_records", 0) == 0, "no records dropped by the SDK")
sys.exit(1 if fail else 0)
PY

echo "== strobe record: the same program, no strobe calls (--no-trace), found through ROCP_TOOL_LIBRARIES"
"$BUILD/strobe" record -o "$OUT/record.json" -- "$EX" --no-trace -i 20 | tee "$OUT/record.out"
python3 - "$OUT/record.json" "$(count kernels "$OUT/record.out")" <<'PY'
import json, sys
path, launched = sys.argv[1], int(sys.argv[2])
t = json.load(open(path))
ev = t["traceEvents"]
kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
runtime = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "cuda_runtime"]
copies = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_memcpy"]
arrows = {e["id"] for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
check(t.get("rocm_capture") is None, "AMD capture on under strobe record (" + str(t.get("rocm_capture")) + ")")
check(len(kernels) == launched, f"kernel count equals launches ({len(kernels)} == {launched})")
check(len(copies) > 0, f"copies traced ({len(copies)})")
check(len(runtime) > 0 and len(arrows) >= len(kernels) // 2, f"HIP calls ({len(runtime)}) and arrows ({len(arrows)})")
sys.exit(1 if fail else 0)
PY

echo "== launch-bound loop: slowdown with tracing"
N=${LAUNCHES:-200000}
base=$("$EX" --no-trace -i 1 -l "$N" | awk '/^launch_us/{print $2}')
traced=$("$EX" -o "$OUT/loop.json" -i 1 -l "$N" | awk '/^launch_us/{print $2}')
awk -v b="$base" -v t="$traced" -v n="$N" 'BEGIN {
	printf "%d empty kernels: %.3f us/launch untraced, %.3f us/launch traced, slowdown %.2fx\n", n, b, t, t / b }'
echo "traces in $OUT"

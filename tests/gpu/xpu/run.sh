#!/usr/bin/env bash
# The real-GPU check for Intel GPUs, mirroring tests/gpu/run.sh and
# tests/gpu/amd/run.sh: on a machine with an Intel GPU, its Level Zero
# driver, oneAPI DPC++ (icpx) and PTI (oneAPI's, or `pip install
# intel-pti`), builds strobe and the SYCL example, traces the example
# through the C API, checks the trace (every submitted kernel, copy and fill
# present, copies named by direction, SYCL calls as xpu_runtime, ac2g arrows
# that never end before they start, `GPU N` rows with a named row per
# queue, GPU work linked to the ops that launched it, strobe ranges as
# gpu_user_annotation, the PTI version read), traces it again unmodified
# through `strobe record`, and measures the slowdown of a launch-bound loop
# with tracing against without. Prints a short report; exits non-zero if a
# check fails. Runs in a few minutes.
#
# NOT RUN YET: no Intel GPU machine is lent to this project, so this script
# has never run on a real Intel GPU; the XPU backend is tested against the
# fake libpti_view (tests/fakes/) and the real one without Level Zero
# (tests/integration/test_pti_real.c). Expect to adjust it on first contact.
#   tests/gpu/xpu/run.sh [BUILD_DIR]
# STROBE_PTI_PATH=/path/to/libpti_view.so.1 picks the PTI to use; otherwise
# strobe looks on the loader path, in $ONEAPI_ROOT/lib and in the lib folder
# of the Python environment that has intel-pti.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BUILD=${1:-build-gpu-xpu}
OUT=${OUT:-$(mktemp -d)}
export ONEAPI_ROOT=${ONEAPI_ROOT:-/opt/intel/oneapi}
if ! command -v icpx >/dev/null && [ -f "$ONEAPI_ROOT/setvars.sh" ]; then
	# shellcheck disable=SC1091
	source "$ONEAPI_ROOT/setvars.sh" >/dev/null 2>&1 || true
fi
command -v icpx >/dev/null || { echo "FAIL: no icpx on PATH or through $ONEAPI_ROOT/setvars.sh (oneAPI DPC++ not installed?)"; exit 1; }
if command -v sycl-ls >/dev/null; then sycl-ls 2>/dev/null | grep -i 'level_zero:gpu' | sed 's/^/gpu: /' || true; fi
echo "icpx: $(icpx --version | head -n1)"

cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSTROBE_BUILD_TESTS=OFF -DSTROBE_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j "$(nproc)" >/dev/null
EX=$BUILD/examples/sycl_workload
[ -x "$EX" ] || { echo "FAIL: examples/sycl_workload was not built (CMake found no icpx?)"; exit 1; }
# The SYCL runtime on Level Zero only, the backend PTI traces.
export ONEAPI_DEVICE_SELECTOR=${ONEAPI_DEVICE_SELECTOR:-level_zero:gpu}

echo "== trace through the API"
STROBE_LOG_LEVEL=${STROBE_LOG_LEVEL:-2} ZE_ENABLE_TRACING_LAYER=1 "$EX" -o "$OUT/api.json" -i 20 | tee "$OUT/api.out"
count() { awk -v k="$1" '$1 == k {print $2}' "$2"; }
python3 - "$OUT/api.json" "$(count kernels "$OUT/api.out")" "$(count copies "$OUT/api.out")" \
	"$(count fills "$OUT/api.out")" <<'PY'
import json, sys
path, launched, copied, filled = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = json.load(open(path))
ev = t["traceEvents"]
X = [e for e in ev if e.get("ph") == "X"]
kernels = [e for e in X if e.get("cat") == "kernel"]
runtime = [e for e in X if e.get("cat") == "xpu_runtime"]
copies = [e for e in X if e.get("cat") == "gpu_memcpy"]
fills = [e for e in X if e.get("cat") == "gpu_memset"]
work = kernels + copies + fills
ops = {e["args"]["External id"]: e for e in X if e.get("cat") == "cpu_op"}
flow_s = {e["id"]: e for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
flow_f = {e["id"]: e for e in ev if e.get("ph") == "f" and e.get("cat") == "ac2g"}
complete = set(flow_s) & set(flow_f)
rows = {(e["pid"], e["tid"]) for e in work}
named = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
         if e.get("ph") == "M" and e.get("name") == "thread_name"}
gpu_pids = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_labels"
            and str(e.get("args", {}).get("labels", "")).startswith("GPU ")}
linked = [k for k in work if k.get("args", {}).get("External id") in ops]
gpu_annotations = [e for e in X if e.get("cat") == "gpu_user_annotation"]
acct = t.get("strobe", {})
def direction(e):  # "Memcpy H2D (HOST -> DEVICE)" -> "H2D"
    parts = e["name"].split()
    return parts[1] if len(parts) > 1 else ""
ups = [e for e in copies if direction(e).endswith("2D") and not direction(e).startswith("D")]
downs = [e for e in copies if direction(e).startswith("D2") and not direction(e).endswith("2D")]
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
print(f"kernels {len(kernels)} (launched {launched}), SYCL calls {len(runtime)}, "
      f"Level Zero calls {sum(e.get('cat') == 'xpu_driver' for e in X)}, ops {len(ops)}, "
      f"memcpy {len(copies)}, memset {len(fills)}, sync {sum(e.get('cat') == 'xpu_sync' for e in X)}, "
      f"overhead {sum(e.get('cat') == 'overhead' for e in X)}, gpu_user_annotation {len(gpu_annotations)}")
print("PTI:", t.get("xpupti_version"), "kernel names:", sorted({e["name"] for e in kernels})[:6])
print("copy names:", sorted({e["name"] for e in copies}), "fill names:", sorted({e["name"] for e in fills}))
print("accounting:", {k: v for k, v in acct.items() if k.startswith("gpu_") and v})
check(t.get("xpu_capture") is None, "XPU capture on (" + str(t.get("xpu_capture")) + ")")
check(bool(t.get("xpupti_version")), f"PTI version in the metadata ({t.get('xpupti_version')})")
check(len(kernels) == launched, f"kernel count equals launches ({len(kernels)} == {launched})")
check(len(ups) == copied // 2 and len(downs) == copied // 2,
      f"copies named by direction ({len(ups)} to the device, {len(downs)} from it, of {copied})")
check(len(fills) == filled and all(e["name"].startswith("Memset (") for e in fills),
      f"fills as gpu_memset ({len(fills)} == {filled})")
check(len(runtime) > 0, f"SYCL calls as xpu_runtime ({len(runtime)})")
check(len(complete) >= len(kernels) // 2, f"ac2g arrows present ({len(complete)} complete)")
check(all(flow_f[i]["ts"] >= flow_s[i]["ts"] for i in complete), "no arrow ends before it starts")
check(len(gpu_pids) >= 1 and all(e["pid"] in gpu_pids for e in work),
      f"GPU work on `GPU N` rows ({len(gpu_pids)} GPU processes)")
check(len({e["tid"] for e in kernels}) >= 2, f"kernels on two queue rows ({len({e['tid'] for e in kernels})})")
check(rows <= set(named) and all(named[r].startswith("Stream ") for r in rows),
      f"every queue row is named 'Stream <queue id>' ({len(rows)} rows)")
check(len(linked) >= len(work) * 0.9, f"GPU work has the External id of the op that launched it ({len(linked)}/{len(work)})")
check(len(gpu_annotations) > 0, "strobe ranges as gpu_user_annotation spans")
check(acct.get("gpu_dropped_records", 0) == 0, "no records dropped by PTI")
sys.exit(1 if fail else 0)
PY

echo "== strobe record: the same program, no strobe calls (--no-trace)"
"$BUILD/strobe" record -o "$OUT/record.json" -- "$EX" --no-trace -i 20 | tee "$OUT/record.out"
python3 - "$OUT/record.json" "$(count kernels "$OUT/record.out")" "$(count copies "$OUT/record.out")" <<'PY'
import json, sys
path, launched, copied = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = json.load(open(path))
ev = t["traceEvents"]
kernels = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
runtime = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "xpu_runtime"]
copies = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "gpu_memcpy"]
arrows = {e["id"] for e in ev if e.get("ph") == "s" and e.get("cat") == "ac2g"}
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
check(t.get("xpu_capture") is None, "XPU capture on under strobe record (" + str(t.get("xpu_capture")) + ")")
check(len(kernels) == launched, f"kernel count equals launches ({len(kernels)} == {launched})")
check(len(copies) == copied, f"copies traced ({len(copies)} == {copied})")
check(len(runtime) > 0 and len(arrows) >= len(kernels) // 2, f"SYCL calls ({len(runtime)}) and arrows ({len(arrows)})")
sys.exit(1 if fail else 0)
PY

echo "== launch-bound loop: slowdown with tracing"
N=${LAUNCHES:-100000}
base=$("$EX" --no-trace -i 1 -l "$N" | awk '/^launch_us/{print $2}')
traced=$(ZE_ENABLE_TRACING_LAYER=1 "$EX" -o "$OUT/loop.json" -i 1 -l "$N" | awk '/^launch_us/{print $2}')
awk -v b="$base" -v t="$traced" -v n="$N" 'BEGIN {
	printf "%d empty kernels: %.3f us/launch untraced, %.3f us/launch traced, slowdown %.2fx\n", n, b, t, t / b }'
echo "traces in $OUT"

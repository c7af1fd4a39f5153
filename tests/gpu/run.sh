#!/usr/bin/env bash
# The real-GPU check: on a machine with an NVIDIA GPU and the CUDA toolkit,
# builds strobe and the CUDA example, traces the example through the C API,
# checks the trace (every launched kernel present, ac2g arrows, stream rows
# named, GPU work linked to the ops that launched it), traces it again
# unmodified through `strobe record` (CUDA driver injection), checks the
# GPU memory timeline and NVML's counters (an allocation of known size,
# plausible values) under `strobe record --gpu-memory --gpu-counters`, that a
# flight recorder's crash dump holds GPU work, and measures
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

echo "== GPU memory and device counters: strobe record --gpu-memory --gpu-counters=50"
# The example allocates two device buffers and one pinned host buffer of
# 2^20 floats (4 MiB) each with cudaMalloc / cudaMallocHost before its loop.
"$BUILD/strobe" record --gpu-memory --gpu-counters=50 -o "$OUT/memory.json" -- "$EX" --no-trace -i 20 | tee "$OUT/memory.out"
python3 - "$OUT/memory.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
BYTES = (1 << 20) * 4
mem = [e for e in ev if e.get("ph") == "i" and e.get("name") == "[memory]"]
dev_allocs = [e for e in mem if e["args"].get("Device Type") == 1 and e["args"].get("Bytes") == BYTES
              and e["args"].get("operation") == "allocation"]
host_allocs = [e for e in mem if e["args"].get("Device Type") == 0 and e["args"].get("Bytes") == BYTES]
track = [e for e in ev if e.get("ph") == "C" and e.get("name") == "GPU memory allocated (bytes)"]
start = t.get("gpu_memory_start", {})
def series(name):
    return [e["args"][name] for e in ev if e.get("ph") == "C" and e.get("name") == name]
fail = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok: fail.append(what)
print(f"[memory] events {len(mem)}, memory track samples {len(track)}, start level {start}")
check(t.get("gpu_capture") is None, "GPU capture on (" + str(t.get("gpu_capture")) + ")")
check(t.get("gpu_counters_capture") is None, "NVML counters on (" + str(t.get("gpu_counters_capture")) + ")")
check(len(dev_allocs) >= 2, f"the two cudaMalloc of {BYTES} bytes appear with that size ({len(dev_allocs)})")
check(len(host_allocs) >= 1, f"the cudaMallocHost of {BYTES} bytes appears as host memory ({len(host_allocs)})")
check(all(e["args"]["kind"] == "Device" for e in dev_allocs), "device allocations are of kind Device")
check(all(isinstance(v.get("bytes"), int) and v["bytes"] >= 0 for v in start.values()) and len(start) > 0,
      "the memory track starts from NVML's level")
levels = [e["args"]["GPU memory allocated (bytes)"] for e in track]
check(len(levels) >= 3 and max(levels) - levels[0] >= 2 * BYTES,
      f"the track rises by at least the two allocations ({levels[:1]} .. {max(levels) if levels else None})")
meta = t.get("gpu_counters", {})
devs = meta.get("devices", [])
check(len(devs) > 0 and all(d.get("matched_by") == "uuid" for d in devs), f"NVML devices matched by UUID ({devs})")
def plausible(name, lo, hi, need=True):
    v = series(name)
    ok = (len(v) > 0 or not need) and all(lo <= x <= hi for x in v)
    check(ok, f"{name}: {len(v)} samples within [{lo}, {hi}] (min {min(v) if v else None}, max {max(v) if v else None})")
plausible("SM utilization (%)", 0, 100)
plausible("Memory utilization (%)", 0, 100)
plausible("SM clock (MHz)", 100, 5000)
plausible("Memory clock (MHz)", 100, 20000)
plausible("Power (W)", 1, 2000)
plausible("Temperature (C)", 5, 110)
plausible("Memory used (bytes)", 2 * BYTES, 1 << 42)
plausible("Throttle reasons (bitmask)", 0, 1 << 40)
plausible("PCIe TX (KB/s)", 0, 1 << 31, need=False)
plausible("NVLink TX (KiB/s)", 0, 1 << 31, need=False)
check(meta.get("samples", 0) >= 5, f"the sampler ran ({meta.get('samples')} samples, {meta.get('late_rounds')} late rounds)")
sys.exit(1 if fail else 0)
PY
"$BUILD/strobe" summary "$OUT/memory.json" | sed -n '/^GPU memory/,/^$/p'

echo "== flight recorder: a CUDA program killed by SIGSEGV leaves a crash dump with its GPU work"
# The example loops for far longer than 3 s; the shell sends it SIGSEGV,
# which the recorder's handler takes as a fatal signal. GPU snapshots every
# 200 ms, so the dump's kernels are at most that old.
STROBE_FLIGHT_GPU_SNAPSHOT=200ms "$BUILD/strobe" record --flight 30s -o "$OUT/flight.json" -- \
	sh -c '"$0" --no-trace -i 1000000 & p=$!; sleep 3; kill -SEGV $p; wait $p' "$EX" || true
python3 - "$OUT" <<'PY'
import glob, json, sys
crash = glob.glob(sys.argv[1] + "/flight.crash-*.json")
fail = 0
def check(ok, what):
    global fail
    print(("ok    " if ok else "FAIL  ") + what)
    fail |= not ok
check(len(crash) == 1, f"one crash dump ({crash})")
if crash:
    t = json.load(open(crash[0]))
    ev = t["traceEvents"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    snap = t.get("flight_recorder", {}).get("gpu_snapshot", {})
    check(t["flight_recorder"].get("signal") == "SIGSEGV", "the dump names SIGSEGV")
    check(snap.get("state") == "written", f"a GPU snapshot was written ({snap})")
    check(len(kernels) > 0, f"kernels in the crash dump ({len(kernels)})")
    check(0 <= snap.get("age_s", -1) < 1.5, f"the snapshot was at most ~1 s old at the signal ({snap.get('age_s')})")
    check(t.get("cupti_version") is not None, "cupti_version in the dump's metadata")
sys.exit(1 if fail else 0)
PY

echo "== launch-bound loop: slowdown with tracing"
N=${LAUNCHES:-200000}
base=$("$EX" --no-trace -i 1 -l "$N" | awk '/^launch_us/{print $2}')
traced=$("$EX" -o "$OUT/loop.json" -i 1 -l "$N" | awk '/^launch_us/{print $2}')
awk -v b="$base" -v t="$traced" -v n="$N" 'BEGIN {
	printf "%d empty kernels: %.3f us/launch untraced, %.3f us/launch traced, slowdown %.2fx\n", n, b, t, t / b }'
echo "traces in $OUT"

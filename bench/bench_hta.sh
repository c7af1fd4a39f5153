#!/bin/sh
# strobe summary against HolisticTraceAnalysis on the same generated
# libkineto trace: wall time and peak RSS of each, side by side.
#
# usage: bench/bench_hta.sh STROBE SIZE_MB [WORKDIR]
#   STROBE   the strobe binary (a Release build)
#   SIZE_MB  the trace's size in MB (tests/hta/gen_trace.py, compact JSON)
#   WORKDIR  where the trace and HTA's venv go (default /tmp/strobe-bench-hta)
#
# HTA runs what strobe summary computes of it: get_temporal_breakdown,
# get_comm_comp_overlap, get_gpu_kernel_breakdown, get_idle_time_breakdown,
# get_cuda_kernel_launch_stats, get_queue_length_summary and
# get_memory_bw_summary, after loading the trace (TraceAnalysis). On a
# shared machine compare CPU times: wall times move with the load. HTA 0.5 is installed in WORKDIR/venv once.
set -eu
strobe=$1 size_mb=$2 work=${3:-/tmp/strobe-bench-hta}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"
venv=$work/venv
if ! "$venv/bin/python" -c 'import hta' 2>/dev/null; then
	python3 -m venv "$venv"
	"$venv/bin/pip" install -q --disable-pip-version-check 'HolisticTraceAnalysis>=0.5,<0.6' 'pandas<3'
fi
trace=$work/trace-${size_mb}mb.json
if [ ! -f "$trace" ]; then
	# 10 steps (HTA's step lookup costs events x steps), about 700 bytes of
	# compact JSON per kernel (launch, kernel, flows, op)
	python3 "$here/tests/hta/gen_trace.py" "$trace" --compact --steps 10 --kernels-per-step $((size_mb * 143))
fi
bytes=$(stat -L -c %s "$trace")
cat >"$work/hta_run.py" <<'PY'
import logging, os, sys, warnings
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
logging.disable(logging.WARNING)
warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis
d = sys.argv[1]
ta = TraceAnalysis(trace_files={0: sys.argv[2]}, trace_dir=d)
ta.get_temporal_breakdown(visualize=False)
ta.get_comm_comp_overlap(visualize=False)
ta.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
ta.get_idle_time_breakdown(visualize=False)
ta.get_cuda_kernel_launch_stats(ranks=[0], visualize=False)
ta.get_queue_length_summary(ranks=[0])
ta.get_memory_bw_summary(ranks=[0])
PY
measure() { # label command...: prints "label wall_s cpu_s peak_MB"
	label=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$work/time.out" "$@" >/dev/null
	read -r secs user sys kb <"$work/time.out"
	echo "$label $secs $(echo "$user $sys" | awk '{print $1 + $2}') $((kb / 1024))"
}
echo "trace: $trace, $bytes bytes; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
s=$(measure strobe "$strobe" summary --json "$trace")
h=$(measure hta "$venv/bin/python" "$work/hta_run.py" "$work" "$trace")
echo "                         wall s     CPU s   peak RSS"
echo "$s" | awk '{printf "strobe summary --json  %8.2f  %8.2f  %6d MB\n", $2, $3, $4}'
echo "$h" | awk '{printf "HTA (7 analyses)       %8.2f  %8.2f  %6d MB\n", $2, $3, $4}'
echo "$s $h" | awk '{printf "strobe: %.1fx less wall time, %.1fx less CPU time, %.1fx less memory\n", $6 / $2, $7 / $3, $8 / ($4 ? $4 : 1)}'

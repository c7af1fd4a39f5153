#!/bin/sh
# Reading a large trace: `strobe summary --json` and `strobe convert` to
# plain JSON, each the median of RUNS, with wall and CPU seconds, seconds
# per GB of trace and peak resident memory (from /usr/bin/time), in MiB
# (2^20 bytes) and MB (10^6 bytes).
#
# usage: bench/bench_summary.sh STROBE TRACE [RUNS]
#   STROBE  the strobe binary (a Release build)
#   TRACE   a Chrome-trace JSON file, e.g. one from
#           tests/hta/gen_trace.py OUT --compact --steps 10 --kernels-per-step 42900
#           (about 300 MB; 143 kernels per step make a megabyte)
#   RUNS    runs of each command (default 3)
set -eu
strobe=$1 trace=$2 runs=${3:-3}
[ -x "$strobe" ] || { echo "bench_summary.sh: $strobe is not executable" >&2; exit 2; }
[ -f "$trace" ] || { echo "bench_summary.sh: no trace at $trace" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "bench_summary.sh: needs /usr/bin/time (package time)" >&2; exit 2; }
bytes=$(stat -c %s "$trace")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$(dirname "$trace")/bench-summary-out.json

# row LABEL CMD...: the median run's wall s, CPU s, s per GB and peak MiB and MB
row() {
	label=$1
	shift
	: >"$tmp/runs"
	i=0
	while [ $i -lt "$runs" ]; do
		/usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$@" >/dev/null
		read -r wall user sys kb <"$tmp/t"
		echo "$wall $user $sys $kb" >>"$tmp/runs"
		i=$((i + 1))
	done
	sort -n "$tmp/runs" | awk -v n="$runs" -v b="$bytes" -v l="$label" \
		'NR == int((n + 1) / 2) {printf "%-24s %8.2f %8.2f %8.2f %8d %8d\n", l, $1, $2 + $3, $1 / (b / 1e9), $4 / 1024, $4 * 1.024 / 1000}'
}

printf '%s: %d bytes, median of %d runs; load average %s\n' "$trace" "$bytes" "$runs" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-24s %8s %8s %8s %8s %8s\n' "command" "wall s" "CPU s" "s/GB" "peak MiB" "peak MB"
row "summary --json" "$strobe" summary --json "$trace"
row "convert to .json" "$strobe" convert -q "$trace" "$out"
rm -f "$out"

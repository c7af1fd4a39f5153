#!/usr/bin/env bash
# Builds two commits of strobe (Release, benches on) side by side and runs
# the same benches on both in turn, so that a claim about speed or memory
# can be checked in one run on one machine (and `strobe summary` and
# `strobe convert` of one generated trace, with this tree's
# bench/bench_summary.sh and tests/hta/gen_trace.py):
#
#   bench/compare.sh [--rounds N] [--quick] BEFORE [AFTER]
#
# BEFORE and AFTER are any git revisions (AFTER defaults to HEAD; the
# working tree's uncommitted changes are not included). Each round runs
# every bench once on BEFORE, then once on AFTER, and the rounds alternate,
# so a machine whose load drifts weighs on both alike. Each bench's output
# goes to OUT/ROUND-REV-BENCH.txt and is printed side by side at the end.
# --quick uses small sizes (a smoke run of the script itself).
#
# Builds go to $STROBE_COMPARE_DIR (default /tmp/strobe-compare); ccache
# is used when installed.
set -euo pipefail

rounds=2
quick=0
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) rounds=${2:?--rounds needs a number}; shift 2 ;;
	--quick) quick=1; shift ;;
	-h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "compare.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: bench/compare.sh [--rounds N] [--quick] BEFORE [AFTER]" >&2; exit 2; }
case $rounds in '' | *[!0-9]* | 0) echo "compare.sh: --rounds takes a number from 1" >&2; exit 2 ;; esac

root=$(cd "$(dirname "$0")/.." && pwd)
work=${STROBE_COMPARE_DIR:-/tmp/strobe-compare}
out=$work/out
mkdir -p "$work" "$out"
revs=("$1" "${2:-HEAD}")
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

if [ $quick = 1 ]; then
	capture=(20000 3) export_=(100000 1) cupti=(100000 1) nvtx=(100000 3) memory=(16) summary_mb=5
else
	capture=(200000 11) export_=(1000000 3) cupti=(2000000 3) nvtx=(1000000 7) memory=(256) summary_mb=300
fi

names=()
for i in 0 1; do
	sha=$(git -C "$root" rev-parse --verify "${revs[$i]}^{commit}") ||
		{ echo "compare.sh: ${revs[$i]} is not a commit here" >&2; exit 2; }
	short=${sha:0:9}
	names+=("$short")
	src=$work/src-$short build=$work/build-$short
	if [ ! -d "$src" ]; then
		git -C "$root" worktree add -q --detach "$src" "$sha"
	fi
	echo "== building ${revs[$i]} ($short) in $build" >&2
	cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTROBE_BUILD_BENCH=ON \
		"${launcher[@]}" >"$work/configure-$short.log" 2>&1 ||
		{ tail -20 "$work/configure-$short.log" >&2; exit 1; }
	# The benches and what they run (bench_cupti needs the fake libcupti of
	# the tests' tree); a bench an older commit lacks is left out.
	: >"$work/build-$short.log"
	for target in strobe strobe_cli strobe_inject bench_capture bench_export bench_cupti bench_nvtx bench_memory; do
		cmake --build "$build" -j"$(nproc)" --target "$target" >>"$work/build-$short.log" 2>&1 ||
			echo "compare.sh: $target did not build at $short (see $work/build-$short.log)" >&2
	done
done

# run NAME REV BUILD CMD...: one bench's output into OUT/round-REV-NAME.txt
run() {
	local name=$1 rev=$2 round=$3
	shift 3
	echo "== round $round: $name on $rev" >&2
	STROBE_LOG_LEVEL=4 "$@" >"$out/$round-$rev-$name.txt" 2>&1 || echo "(failed: exit $?)" >>"$out/$round-$rev-$name.txt"
}

shm=/dev/shm
[ -d $shm ] && [ -w $shm ] || shm=$work
# One trace for the readers, the same for both: 10 steps, about 143
# kernels (launch, kernel, flows, op) to the megabyte.
trace=$shm/compare-summary.json
python3 "$root/tests/hta/gen_trace.py" "$trace" --compact --steps 10 --kernels-per-step $((summary_mb * 143))
for round in $(seq 1 "$rounds"); do
	for rev in "${names[@]}"; do
		b=$work/build-$rev
		run capture "$rev" "$round" "$b/bench/bench_capture" "${capture[@]}"
		run export "$rev" "$round" "$b/bench/bench_export" "${export_[@]}" "$shm" "$work"
		[ -x "$b/bench/bench_cupti" ] && run cupti "$rev" "$round" "$b/bench/bench_cupti" "${cupti[@]}" "$shm"
		[ -x "$b/bench/bench_nvtx" ] && run nvtx "$rev" "$round" sh "$work/src-$rev/bench/bench_nvtx.sh" "$b" "${nvtx[@]}"
		[ -x "$b/bench/bench_memory" ] && run memory "$rev" "$round" "$b/bench/bench_memory" "${memory[@]}" "$shm/compare-memory.json"
		run summary "$rev" "$round" sh "$root/bench/bench_summary.sh" "$b/strobe" "$trace" 3
	done
done

rm -f "$shm/compare-memory.json" "$trace"

# Side by side: each bench's lines for BEFORE then AFTER, per round.
for bench in capture export cupti nvtx memory summary; do
	for round in $(seq 1 "$rounds"); do
		a=$out/$round-${names[0]}-$bench.txt b=$out/$round-${names[1]}-$bench.txt
		[ -f "$a" ] && [ -f "$b" ] || continue
		printf '\n######## %s, round %s: %s (before) | %s (after)\n' "$bench" "$round" "${revs[0]}" "${revs[1]:-HEAD}"
		pr -m -t -w 200 "$a" "$b"
	done
done

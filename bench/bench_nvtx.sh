#!/bin/sh
# NVTX push/pop pair cost: the same program with no NVTX tool, and under
# strobe record, against two raw TSC reads. Usage:
#   bench/bench_nvtx.sh [BUILD_DIR] [PAIRS] [RUNS]
set -eu
build=${1:-build}
pairs=${2:-1000000}
runs=${3:-7}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

plain=$("$build/bench/bench_nvtx" "$pairs" "$runs")
# Room for every range of every run in the CPU buffers (about 48 B each).
mb=$(( (pairs * (runs + 1) * 64) / 1048576 + 64 ))
traced=$("$build/strobe" record -q --set "ACTIVITIES_MAX_CPU_BUFFER_SIZE_MB=$mb" \
	-o "$out/nvtx.json" -- "$build/bench/bench_nvtx" "$pairs" "$runs")
events=$(grep -o '"bench"' "$out/nvtx.json" | wc -l)

echo "$plain $traced $events" | awk -v pairs="$pairs" -v runs="$runs" '{
	printf "pairs per loop %d, best of %d loops\n", pairs, runs
	printf "two TSC reads:                  %7.2f ns (plain run) %7.2f ns (traced run)\n", $1, $3
	printf "NVTX pair, no tool:             %7.2f ns\n", $2
	printf "NVTX pair, under strobe record: %7.2f ns\n", $4
	printf "traced / no tool:               %7.2fx\n", $4 / $2
	printf "traced / two TSC reads:         %7.2fx\n", $4 / $3
	printf "ranges in the trace:            %d (expected %d)\n", $5, pairs * runs
}'

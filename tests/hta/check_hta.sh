#!/bin/sh
# strobe summary's HTA analyses against HolisticTraceAnalysis 0.5 itself:
# installs HTA (and pandas<3) in a venv under the build folder once, then
# compares every number on the libkineto fixtures and on generated
# multi-step traces (tests/hta/compare.py). Without PyPI it is skipped
# (status 77), saying why.
#
# usage: check_hta.sh VENV_DIR STROBE FIXTURES_DIR
set -eu
venv=$1 strobe=$2 fixtures=$3
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import hta' 2>/dev/null; then
	rm -rf "$venv"
	python3 -m venv "$venv" || { echo "SKIP: python3 -m venv failed"; exit 77; }
	if ! "$venv/bin/pip" install -q --disable-pip-version-check 'HolisticTraceAnalysis>=0.5,<0.6' \
		'pandas<3' >"$venv.log" 2>&1; then
		tail -3 "$venv.log"
		rm -rf "$venv"
		echo "SKIP: cannot install HolisticTraceAnalysis from PyPI (offline?)"
		exit 77
	fi
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 "$here/gen_trace.py" "$tmp/steps.json" --steps 6 --seed 1 --blocks 3
python3 "$here/gen_trace.py" "$tmp/steps2.json" --steps 9 --seed 7 --slow-step 5 --kernels-per-step 20 --blocks 4 \
	--cpu-step 2
set -- "$tmp/steps.json" "$tmp/steps2.json"
for f in libkineto-cuda-fake.json libkineto-sample.json; do
	[ -f "$fixtures/$f" ] && set -- "$@" "$fixtures/$f"
done
HTA_DISABLE_NS_ROUNDING=1 "$venv/bin/python" "$here/compare.py" "$strobe" "$@"

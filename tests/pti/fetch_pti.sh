#!/usr/bin/env bash
# Fetches Intel's real libpti_view from PyPI's intel-pti wheel for
# tests/integration/test_pti_real.c (ctest runs it as the pti_fetch fixture):
#   tests/pti/fetch_pti.sh DEST [VERSION]
# leaves the wheel's library folder in DEST/lib (libpti_view.so.1 and
# pti/libpti.so, as `pip install intel-pti` puts them in <prefix>/lib) and
# the wheel's version in DEST/version.
#
# Idempotent: when DEST already holds VERSION it downloads nothing. pip's
# own download cache serves other build folders. Offline-safe: when the
# wheel cannot be had (no network, PyPI unreachable, no pip, not x86-64,
# STROBE_PTI_FETCH=0) it says why on stdout, writes the same line to
# DEST/skip-reason and exits 77, which ctest shows as a skipped test; the
# test then skips too. STROBE_PTI_WHEEL=FILE uses a wheel already on disk.
# Exit status: 0 fetched (or already there), 77 cannot fetch, 1 the wheel is
# not what it should be (hash mismatch, no libpti_view.so.1 in it) or usage.
set -euo pipefail
DEST=${1:?usage: fetch_pti.sh DEST [VERSION]}
VERSION=${2:-1.2.0}
# The sha256 of each pinned wheel as PyPI serves it.
declare -A WHEEL_SHA256=(
	[1.2.0]=4cba1d71816f6b3f4283d55c5bc45f09532647e9c5ca8b3a4f136092fa8e3c94
)
SKIP=77

skip() {
	mkdir -p "$DEST"
	echo "intel-pti $VERSION not fetched: $*" | tee "$DEST/skip-reason"
	exit $SKIP
}

if [ -f "$DEST/lib/libpti_view.so.1" ] && [ "$(cat "$DEST/version" 2>/dev/null)" = "$VERSION" ]; then
	echo "intel-pti $VERSION already in $DEST/lib"
	exit 0
fi
[ "${STROBE_PTI_FETCH:-1}" != 0 ] || skip "STROBE_PTI_FETCH=0 asks for no download"
[ "$(uname -m)" = x86_64 ] || skip "the intel-pti wheel is built for x86-64 only (this is $(uname -m))"
command -v python3 >/dev/null || skip "no python3 on PATH"

mkdir -p "$DEST"
WORK=$(mktemp -d "$DEST/.fetch.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

if [ -n "${STROBE_PTI_WHEEL:-}" ]; then
	[ -f "$STROBE_PTI_WHEEL" ] || skip "STROBE_PTI_WHEEL=$STROBE_PTI_WHEEL is not a file"
	WHEEL=$STROBE_PTI_WHEEL
else
	python3 -m pip --version >/dev/null 2>&1 || skip "python3 has no pip (apt-get install python3-pip)"
	# Short timeouts and one retry: an offline machine skips in seconds.
	if ! timeout 120 python3 -m pip download --no-deps --only-binary=:all: --disable-pip-version-check \
		--no-input --timeout 15 --retries 1 -d "$WORK/download" "intel-pti==$VERSION" >"$WORK/pip.log" 2>&1; then
		cat "$WORK/pip.log" >&2
		skip "pip download failed (PyPI unreachable?): $(grep -m1 '^ERROR' "$WORK/pip.log" || tail -n1 "$WORK/pip.log")"
	fi
	WHEEL=$(ls "$WORK"/download/intel_pti-"$VERSION"-*.whl)
fi

# The wheel's data/lib folder (pip installs it as <prefix>/lib), without its
# two other copies of libpti_view.so.1, and the version its metadata names.
python3 - "$WHEEL" "$WORK/out" "${WHEEL_SHA256[$VERSION]:-}" <<'PY'
import hashlib, os, sys, zipfile
wheel, out, want = sys.argv[1], sys.argv[2], sys.argv[3]
got = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
if got != want:
    sys.exit(f"fetch_pti.sh: {wheel} has sha256 {got}; the one recorded for this version is {want or 'none'}")
keep = {"lib/libpti_view.so.1", "lib/pti/libpti.so", "share/doc/pti/LICENSE.txt"}
version = None
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if name.endswith(".dist-info/METADATA"):
            for line in z.read(info).decode("utf-8", "replace").splitlines():
                if line.startswith("Version:"):
                    version = line.split(":", 1)[1].strip()
            continue
        data = name.split(".data/data/", 1)
        if len(data) != 2 or data[1] not in keep:
            continue
        path = os.path.join(out, data[1])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(z.read(info))
        os.chmod(path, 0o755 if path.endswith(".so") or ".so." in path else 0o644)
if not version:
    sys.exit("fetch_pti.sh: the wheel has no Version in its METADATA")
if not os.path.isfile(os.path.join(out, "lib/libpti_view.so.1")):
    sys.exit("fetch_pti.sh: the wheel has no data/lib/libpti_view.so.1 (its layout changed?)")
open(os.path.join(out, "version"), "w").write(version + "\n")
PY
got=$(cat "$WORK/out/version")
[ "$got" = "$VERSION" ] || { echo "fetch_pti.sh: the wheel says version $got, not $VERSION" >&2; exit 1; }

rm -rf "${DEST:?}/lib" "${DEST:?}/share" "${DEST:?}/skip-reason"
mv "$WORK/out/lib" "$WORK/out/share" "$DEST/"
mv "$WORK/out/version" "$DEST/version"
echo "intel-pti $VERSION fetched into $DEST/lib"

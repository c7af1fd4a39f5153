#!/usr/bin/env bash
# Installs strobe into a scratch prefix and builds two small consumers
# against it, one through pkg-config and one through CMake find_package,
# with the shared and the static library, then runs them; compiles the
# headers (and STROBE_OPTS) as C++; and checks the installed libstrobe.so's
# exported symbols against src/libstrobe.map (abi.sh).
set -euo pipefail
BUILD=${1:?usage: check.sh BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
PREFIX=$WORK/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
LIBDIR=$(ls -d "$PREFIX"/lib*/ | head -1)

# pkg-config, shared
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
cc -std=c11 -Wall -Werror "$HERE/consumer.c" -o "$WORK/consumer_pc" $(pkg-config --cflags --libs strobe)
LD_LIBRARY_PATH=$LIBDIR "$WORK/consumer_pc" "$WORK/pc.json"
# pkg-config, static
cc -std=c11 -Wall -Werror "$HERE/consumer.c" -o "$WORK/consumer_static" $(pkg-config --cflags strobe) \
	"$LIBDIR/libstrobe.a" $(pkg-config --libs-only-l --static strobe | sed 's/-lstrobe//') -lm
"$WORK/consumer_static" "$WORK/static.json"
# C++ compiles the headers and STROBE_OPTS too: the default dialect, and
# C++20 (whose designated initialisers STROBE_OPTS is written for). g++
# (12) warns about every designated initialiser that leaves fields out under
# -Wextra's missing-field-initializers, in C++ only; clang++ does not.
for cxx in c++ clang++; do
	command -v $cxx >/dev/null || continue
	flags=(-x c++ -Wall -Wextra -Werror -fsyntax-only)
	$cxx --version | grep -q clang || flags+=(-Wno-missing-field-initializers)
	$cxx "${flags[@]}" $(pkg-config --cflags strobe) "$HERE/consumer.c"
	$cxx "${flags[@]}" -std=c++20 -pedantic $(pkg-config --cflags strobe) "$HERE/consumer.c"
done
# The ABI record
"$HERE/abi.sh" "$(ls "$LIBDIR"/libstrobe.so.*.*.* | head -1)"
# CMake find_package
cmake -S "$HERE" -B "$WORK/cm" -DCMAKE_PREFIX_PATH="$PREFIX" >/dev/null
cmake --build "$WORK/cm" >/dev/null
LD_LIBRARY_PATH=$LIBDIR "$WORK/cm/consumer" "$WORK/cm.json"
for f in pc static cm; do
	grep -q '"name": "forward"' "$WORK/$f.json" || { echo "consumer $f wrote no forward op" >&2; exit 1; }
done
echo "package check: pkg-config (shared, static), C++ headers, find_package(strobe) and the ABI record all agree"

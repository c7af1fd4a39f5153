#!/usr/bin/env bash
# Checks libstrobe.so's exported symbols against the ABI record:
#   - every symbol `nm -D --defined-only` shows is listed in src/libstrobe.map,
#     in the version node it is bound to, and every listed symbol is exported;
#   - the public nodes list exactly what the public headers declare STROBE_API;
#   - the private node (STROBE_PRIVATE) holds only strobe_internal_* names that
#     no public header declares.
# Prints each extra, missing or misplaced symbol by name and exits 1 on any.
set -euo pipefail
LIB=${1:?usage: abi.sh LIBSTROBE.so [MAP] [INCLUDE_DIR]}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
MAP=${2:-$ROOT/src/libstrobe.map}
INCLUDE=${3:-$ROOT/include/strobe}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# "NODE SYMBOL" for each symbol in a global: section of the map.
awk '
	{ line = line $0 "\n" }
	END {
		gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line) # comments
		n = split(line, tok, /[ \t\n]+/)
		for (i = 1; i <= n; i++) {
			t = tok[i]
			if (t == "") continue
			if (t ~ /^[A-Za-z_][A-Za-z0-9_.]*$/ && tok[i + 1] == "{") { node = t; continue }
			if (t == "global:") { global = 1; continue }
			if (t == "local:") { global = 0; continue }
			if (t ~ /^}/) { global = 0; node = ""; continue }
			if (global && t ~ /;$/) { sub(/;$/, "", t); print node, t }
		}
	}' "$MAP" | sort -u >"$WORK/map"
[ -s "$WORK/map" ] || { echo "abi: no symbols found in $MAP" >&2; exit 1; }

# "NODE SYMBOL" for each symbol the library defines (the nodes themselves
# show up as absolute symbols and are skipped).
nm -D --defined-only "$LIB" | awk '$2 != "A" { split($3, p, "@+"); print (p[2] == "" ? "(unversioned)" : p[2]), p[1] }' |
	sort -u >"$WORK/lib"

while read -r node sym; do
	case $sym in
	rocprofiler_configure) ;;
	*)
		echo "abi: $sym is in STROBE_VENDOR_HOOKS but is no vendor's hook" >&2
		exit 1
		;;
	esac
done < <(awk '$1 == "STROBE_VENDOR_HOOKS"' "$WORK/map")

# Names the public headers declare with STROBE_API.
sed -n 's/^.*STROBE_API[^(;]*[^A-Za-z0-9_]\(strobe_[a-z0-9_]*\)[ ]*[(;].*$/\1/p' "$INCLUDE"/*.h | sort -u >"$WORK/header"

fail=0
while read -r node sym; do
	echo "abi: $LIB exports $sym (version $node), which $MAP does not list there" >&2
	fail=1
done < <(comm -13 "$WORK/map" "$WORK/lib")
while read -r node sym; do
	echo "abi: $MAP lists $sym in $node, but $LIB does not export it there" >&2
	fail=1
done < <(comm -23 "$WORK/map" "$WORK/lib")

# STROBE_VENDOR_HOOKS: names a vendor's library looks up (not strobe's API).
awk '$1 != "STROBE_PRIVATE" && $1 != "STROBE_VENDOR_HOOKS" { print $2 }' "$WORK/map" | sort -u >"$WORK/public"
awk '$1 == "STROBE_PRIVATE" { print $2 }' "$WORK/map" | sort -u >"$WORK/private"
while read -r sym; do
	echo "abi: $sym is declared STROBE_API in $INCLUDE but is in no public node of $MAP" >&2
	fail=1
done < <(comm -23 "$WORK/header" "$WORK/public")
while read -r sym; do
	echo "abi: $sym is in a public node of $MAP but no header in $INCLUDE declares it STROBE_API" >&2
	fail=1
done < <(comm -13 "$WORK/header" "$WORK/public")
while read -r sym; do
	case $sym in
	strobe_internal_*) ;;
	*)
		echo "abi: $sym is in STROBE_PRIVATE but is not named strobe_internal_*" >&2
		fail=1
		;;
	esac
	if grep -q "\b$sym\b" "$WORK/header"; then
		echo "abi: $sym is in STROBE_PRIVATE but a public header declares it" >&2
		fail=1
	fi
done <"$WORK/private"

[ $fail -eq 0 ] || exit 1
echo "abi: $(wc -l <"$WORK/lib") exported symbols match $(basename "$MAP") ($(wc -l <"$WORK/public") public, $(wc -l <"$WORK/private") private)"

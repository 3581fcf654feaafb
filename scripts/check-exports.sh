#!/usr/bin/env bash
# The shipped library exports exactly the functions declared in include/leap.h, has SONAME libleap.so.0
# and RUNPATH $ORIGIN, and does not need the Swift runtime (it is linked statically).
set -euo pipefail
cd "$(dirname "$0")/.."
lib=${1:-build/lib/libleap.so}
declared=$(grep -oE 'LEAP_API[^;(]*[ *]leap_[a-z0-9_]+ *\(' include/leap.h | sed -E 's/.*[ *](leap_[a-z0-9_]+) *\($/\1/' | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TWDBR]$/ {print $3}' | sed 's/@.*//' | sort -u)
diff=$(comm -3 <(echo "$declared") <(echo "$exported"))
if [ -n "$diff" ]; then
    echo "declared (left) vs exported (right) differ:"
    echo "$diff"
    exit 1
fi
dyn=$(readelf -d "$lib")
echo "$dyn" | grep -q 'SONAME.*\[libleap.so.0\]' || { echo "SONAME is not libleap.so.0"; exit 1; }
echo "$dyn" | grep -q 'RUNPATH.*\[\$ORIGIN\]' || { echo "RUNPATH is not \$ORIGIN"; echo "$dyn" | grep -E 'RUNPATH|RPATH'; exit 1; }
if echo "$dyn" | grep NEEDED | grep -qi swift; then
    echo "the library needs a Swift runtime library:"
    echo "$dyn" | grep NEEDED
    exit 1
fi
echo "$(echo "$declared" | wc -l) functions declared and exported; NEEDED: $(echo "$dyn" | grep NEEDED | sed -E 's/.*\[(.*)\]/\1/' | paste -sd' ')"

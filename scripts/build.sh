#!/usr/bin/env bash
# Release build of the shipped artefacts into build/:
#   build/lib/libleap.so (+ libleap.so.0 symlink, SONAME libleap.so.0, Swift runtime linked statically),
#   build/include/leap.h, build/lib/pkgconfig/leap.pc, build/bin/{leap-bench,leap-fuzz}.
# `scripts/build.sh --library` builds the library, header and leap.pc only (the Python wheel build).
# `-Xswiftc -static-stdlib` is passed here, not in Package.swift, because it breaks `swift test`.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
programs=1
case "${1:-}" in
"") ;;
--library) programs=0 ;;
*) echo "usage: $0 [--library]" >&2; exit 2 ;;
esac
jobs=${LEAP_BUILD_JOBS:-$(nproc)}
swift build -c release -j "$jobs" -Xswiftc -static-stdlib --product leap
if [ "$programs" = 1 ]; then
    swift build -c release -j "$jobs" -Xswiftc -static-stdlib --product leap-bench
    swift build -c release -j "$jobs" -Xswiftc -static-stdlib --product leap-fuzz
fi
bin=$(swift build -c release --show-bin-path)
out="$repo/build"
mkdir -p "$out/lib/pkgconfig" "$out/include" "$out/bin"
# Replace files by rename, never in place: a running program that mapped the old library keeps it intact.
put() { cp -f "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"; }
put "$bin/libleap.so" "$out/lib/libleap.so"
ln -sf libleap.so "$out/lib/libleap.so.0"
cp -f include/leap.h "$out/include/leap.h"
if [ "$programs" = 1 ]; then
    put "$bin/leap-bench" "$out/bin/leap-bench"
    put "$bin/leap-fuzz" "$out/bin/leap-fuzz"
fi
"$repo/scripts/write-pc.sh" "$out" > "$out/lib/pkgconfig/leap.pc"
# A copy in the Python package folder, where the package's loader looks first (PYTHONPATH=bindings/python).
put "$bin/libleap.so" "$repo/bindings/python/leap/libleap.so"
echo "built $out/lib/libleap.so"

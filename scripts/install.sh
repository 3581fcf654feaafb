#!/usr/bin/env bash
# Installs libleap under PREFIX (default /usr/local): lib/libleap.so.X.Y.Z with the libleap.so.0 and
# libleap.so symlinks, include/leap.h and lib/pkgconfig/leap.pc, so that
#   cc app.c $(pkg-config --cflags --libs leap)
# works (with PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig for a non-standard prefix).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
prefix=${1:-/usr/local}
[ -f "$repo/build/lib/libleap.so" ] || "$repo/scripts/build.sh"
ver=$(sed -n 's/^#define LEAP_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$repo/include/leap.h" | paste -sd.)
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$repo/build/lib/libleap.so" "$prefix/lib/libleap.so.$ver"
ln -sf "libleap.so.$ver" "$prefix/lib/libleap.so.0"
ln -sf "libleap.so.0" "$prefix/lib/libleap.so"
install -m 0644 "$repo/include/leap.h" "$prefix/include/leap.h"
"$repo/scripts/write-pc.sh" "$prefix" > "$prefix/lib/pkgconfig/leap.pc"
echo "installed libleap $ver under $prefix"

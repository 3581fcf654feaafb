#!/bin/sh
# Checks every SIMD path of the C kernels against the scalar path (scripts/kernels/selfcheck.c).
#   scripts/kernels/check-isa.sh            native (x86-64: AVX2, AVX-512 [+VNNI])
#   scripts/kernels/check-isa.sh aarch64    one baseline (ARMv8.0) build, cross-compiled, run under
#                                           qemu-aarch64-static as a CPU of each arm64 level, which must get its
#                                           table: cortex-a53 (ARMv8.0: neon, no dotprod instruction may run),
#                                           neoverse-n1 (neon-dotprod), max (i8mm, bf16, SVE: neon-i8mm); needs
#                                           qemu-user-static and libc6-dev-arm64-cross (+ libgcc-12-dev-arm64-cross)
#   scripts/kernels/check-isa.sh x86-cpus   static x86-64 build under qemu-x86_64-static as a baseline CPU
#                                           (qemu64: no AVX, must run the scalar path without faulting) and as
#                                           Haswell (AVX2 without AVX-512)
# The Swift kernel tests can be run the same way:
#   qemu-x86_64-static -cpu qemu64 .build/x86_64-unknown-linux-gnu/debug/leapPackageTests.xctest \
#     --testing-library swift-testing --filter LeapKernelsTests
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../../Sources/CLeapKernels"
media="$here/../../Sources/CLeapMediaKernels" # its vision files: the encoders' kernels on these
out=$(mktemp -d)
files="$(find "$src" -name '*.c') $media/vision_*.c $here/selfcheck.c" # every path (each guarded by its architecture)
if [ "${1:-}" = aarch64 ]; then
    clang --target=aarch64-linux-gnu --sysroot=/usr/aarch64-linux-gnu -fuse-ld=lld -static -march=armv8-a \
        -B/usr/lib/gcc-cross/aarch64-linux-gnu/12 -L/usr/lib/gcc-cross/aarch64-linux-gnu/12 \
        -O3 -fno-math-errno -Wall -Werror -I"$src/include" -I"$src" -I"$media/include" $files -lm -lpthread -o "$out/selfcheck"
    for level in cortex-a53:neon neoverse-n1:neon-dotprod max:neon-i8mm; do
        echo "== aarch64 -cpu ${level%%:*} (qemu), expects the ${level#*:} table"
        qemu-aarch64-static -cpu "${level%%:*}" "$out/selfcheck" "${level#*:}"
    done
elif [ "${1:-}" = x86-cpus ]; then
    clang -O3 -fno-math-errno -static -I"$src/include" -I"$src" -I"$media/include" $files -lm -lpthread -o "$out/selfcheck"
    for cpu in qemu64 Haswell; do
        echo "== qemu-x86_64 -cpu $cpu"
        qemu-x86_64-static -cpu $cpu "$out/selfcheck"
    done
else
    clang -O3 -fno-math-errno -I"$src/include" -I"$src" -I"$media/include" $files -lm -lpthread -o "$out/selfcheck"
    "$out/selfcheck"
fi
rm -rf "$out"

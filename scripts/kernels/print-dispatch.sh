#!/bin/sh
# Prints which kernel serves each (ISA, type, weight layout, token count) in every dispatch table of the C
# kernels (Sources/CLeapKernels, tables in lk_tables.h's format), as on a CPU with every feature the tables
# use; an argument gives the LK_CPU_* bits instead (e.g. 0x3f: AVX-512 without VNNI or BF16). The output is
# recorded in BENCHMARKS.md ("Kernel dispatch").
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src="$here/../../Sources/CLeapKernels"
out=$(mktemp -d)
clang -O1 -fno-math-errno -I"$src/include" -I"$src" $(find "$src" -name '*.c') "$here/print_dispatch.c" -lm -lpthread \
    -o "$out/print-dispatch"
"$out/print-dispatch" "$@"
rm -rf "$out"

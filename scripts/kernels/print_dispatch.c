/* Prints which kernel serves each (ISA, type, layout, token count) in every dispatch table, for a CPU with
 * every feature the tables use (or the LK_CPU_* bits given as the first argument): scripts/kernels/print-dispatch.sh. */
#include "lk_dispatch.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    const uint32_t all = LK_CPU_AVX2 | LK_CPU_FMA | LK_CPU_F16C | LK_CPU_AVX512 | LK_CPU_AVX512VNNI | LK_CPU_AVX512BF16 |
                         LK_CPU_AMX | LK_CPU_AVXVNNI;
    lk_print_dispatch(stdout, argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : all);
    return 0;
}

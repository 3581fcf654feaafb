/* The dispatch table in effect on this thread (dispatch.c). For the public entry points (matmul.c,
 * convert.c, ops.c) only: kernel files never look the table up, they list their kernels (lk_tables.h). */
#ifndef LK_DISPATCH_H
#define LK_DISPATCH_H
#include "lk_internal.h"
#include <stdio.h>

const lk_kernel_table *lk_kernels(void);

/* Prints every table as it is on a CPU with `cpu` features (LK_CPU_* bits): which kernels lk_matmul_tensor
 * tries, in order, for each type, weight layout and token count (scripts/kernels/print-dispatch.sh). */
void lk_print_dispatch(FILE *out, uint32_t cpu);

#endif

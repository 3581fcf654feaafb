/* The dispatch table in effect on this thread (dispatch.c). For the public entry points (matmul.c,
 * convert.c, ops.c) only: kernel files never look the table up, they fill it. */
#ifndef LK_DISPATCH_H
#define LK_DISPATCH_H
#include "lk_internal.h"

const lk_kernel_table *lk_kernels(void);

#endif

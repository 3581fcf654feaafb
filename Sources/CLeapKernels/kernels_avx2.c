/* AVX2 + FMA + F16C paths (x86-64). Compiled with target attributes; only called after a CPU check. */
#include "lk_internal.h"

#if defined(__x86_64__)
void lk_fill_avx2(lk_kernel_table *t) { (void)t; }
#else
void lk_fill_avx2(lk_kernel_table *t) { (void)t; }
#endif

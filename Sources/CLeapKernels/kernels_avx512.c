/* AVX-512 (F/BW/VL, + VNNI vpdpbusd when present) paths (x86-64). */
#include "lk_internal.h"

#if defined(__x86_64__)
void lk_fill_avx512(lk_kernel_table *t) { (void)t; }
#else
void lk_fill_avx512(lk_kernel_table *t) { (void)t; }
#endif

/* x86/avx2/q8_0.c built for AVX-VNNI (x86/avx2/avx_vnni/lk_avx_vnni.h) */
#include "x86/avx2/avx_vnni/lk_avx_vnni.h"
#include "../q8_0.c"

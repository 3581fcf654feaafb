/* x86/avx2/rows8_q4_1_q5.c built for AVX-VNNI (x86/avx2/avx_vnni/lk_avx_vnni.h) */
#include "x86/avx2/avx_vnni/lk_avx_vnni.h"
#include "../rows8_q4_1_q5.c"

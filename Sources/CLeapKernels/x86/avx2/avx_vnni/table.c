/* x86/avx2/table.c built for AVX-VNNI (x86/avx2/avx_vnni/lk_avx_vnni.h) */
#include "x86/avx2/avx_vnni/lk_avx_vnni.h"
#include "../table.c"

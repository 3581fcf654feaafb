/* x86/avx2/table.c built for AVX-VNNI (lk_avx_vnni.h) */
#include "../lk_avx_vnni.h"
#include "../x86/avx2/table.c"

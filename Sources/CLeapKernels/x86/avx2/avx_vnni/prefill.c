/* avx2_prefill.c built for AVX-VNNI (lk_avx_vnni.h) */
#include "../lk_avx_vnni.h"
#include "../avx2_prefill.c"

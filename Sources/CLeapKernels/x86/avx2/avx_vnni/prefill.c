/* x86/avx2/prefill.c built for AVX-VNNI (x86/avx2/avx_vnni/lk_avx_vnni.h) */
#include "x86/avx2/avx_vnni/lk_avx_vnni.h"
#include "../prefill.c"

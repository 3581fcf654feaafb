/* llama_order_q4_0.c built for AVX-VNNI (lk_avx_vnni.h) */
#include "../lk_avx_vnni.h"
#include "../llama_order_q4_0.c"

/* The llama-order table (LK_ISA_LLAMA_ORDER, on AVX-512 CPUs): every product in the summation order of
 * llama.cpp's x86 CPU backend (its repacked Q4_0 and Q4_K, its tiled Q4_K and Q6_K, ggml's vec_dot for the
 * rest), the proof that the logits of a file are llama.cpp's bit for bit. A test and debug table, never the
 * best. Format: lk_tables.h. */
#include "lk_tables.h"

#define ROW_KERNELS(L) [LK_E_DOT] = &L, [LK_E_DOT2] = &L, [LK_E_DOT4] = &L
static const lk_table_row rows[] = {
    {LK_TYPE_F32, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_F16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_BF16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_BF16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_ANY_TOKENS] = &lk_bf16_ggml},
     LK_CPU_AVX512BF16},
    {LK_TYPE_Q4_0, {[LK_E_DOT] = &lk_q4_0_avx2, [LK_E_MATVEC] = &lk_q4_0_avx2, [LK_E_GEMM] = &lk_q4_0_avx2}},
    {LK_TYPE_Q4_1, {ROW_KERNELS(lk_avx2_decode)}},
    {LK_TYPE_Q5_0, {ROW_KERNELS(lk_avx2_decode)}},
    {LK_TYPE_Q5_1, {ROW_KERNELS(lk_avx2_decode)}},
    {LK_TYPE_Q8_0, {ROW_KERNELS(lk_avx2_decode), [LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q8_1, {[LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q8_K, {[LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q2_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_Q3_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_Q4_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_REPACK] = &lk_llama_order_avx2,
                    [LK_E_REPACK_ID] = &lk_llama_order_avx2, [LK_E_TILED] = &lk_llama_order_avx2}},
    {LK_TYPE_Q5_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_Q6_K, {ROW_KERNELS(lk_avx512_decode), [LK_E_TILED] = &lk_llama_order_avx2}},
    {LK_ANY, {[LK_E_F16_TO_F32] = &lk_avx2_decode, [LK_E_F32_TO_F16] = &lk_avx2_decode, [LK_E_STREAM_SUM] = &lk_avx2_decode,
              [LK_E_SOFTMAX_EXP] = &lk_avx2_decode, [LK_E_SILU] = &lk_avx2_decode, [LK_E_MATVEC_F16_GGML] = &lk_f16_ggml_avx512}},
};
const lk_table_spec lk_table_llama_order = LK_TABLE("llama-order", NULL, rows);

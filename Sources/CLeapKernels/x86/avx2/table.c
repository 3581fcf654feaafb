/* The AVX2 table (LK_ISA_AVX2: AVX2 + FMA + F16C), and built a second time for AVX-VNNI (x86/avx2/avx_vnni/table.c,
 * LK_ISA_AVX_VNNI): the same rows over the AVX-VNNI builds of the files that x86/avx2/avx_vnni/lk_avx_vnni.h renames. Format:
 * lk_tables.h. */
#include "lk_tables.h"

#define ROW_KERNELS(L) [LK_E_DOT] = &L, [LK_E_DOT2] = &L, [LK_E_DOT4] = &L /* the row kernels of list L */
static const lk_table_row rows[] = {
    {LK_TYPE_F32, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_F16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_BF16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    /* llama.cpp's Q4_0 order (its repacked kernels) at every batch size */
    {LK_TYPE_Q4_0, {[LK_E_DOT] = &lk_q4_0_avx2, [LK_E_MATVEC] = &lk_avx2_fewtokens, [LK_E_FEW_TOKENS] = &lk_avx2_fewtokens,
                    [LK_E_GEMM] = &lk_q4_0_avx2, [LK_E_ROWS8] = &lk_avx2_fewtokens}},
    /* the row kernels' order at every batch size (the gemm keeps it); in the 8-row layout an order of their
     * own (x86/avx2/rows8_q4_1_q5.c) at every batch size */
    {LK_TYPE_Q4_1, {ROW_KERNELS(lk_avx2_decode), [LK_E_FEW_TOKENS] = &lk_avx2_prefill, [LK_E_GEMM] = &lk_avx2_prefill,
                    [LK_E_ROWS8] = &lk_avx2_rows8_q4_1_q5}},
    {LK_TYPE_Q5_0, {ROW_KERNELS(lk_avx2_decode), [LK_E_FEW_TOKENS] = &lk_avx2_prefill, [LK_E_GEMM] = &lk_avx2_prefill,
                    [LK_E_ROWS8] = &lk_avx2_rows8_q4_1_q5}},
    {LK_TYPE_Q5_1, {ROW_KERNELS(lk_avx2_decode), [LK_E_FEW_TOKENS] = &lk_avx2_prefill, [LK_E_GEMM] = &lk_avx2_prefill,
                    [LK_E_ROWS8] = &lk_avx2_rows8_q4_1_q5}},
    /* Q8_0 in the gemm's order (one exact integer sum per block) at every batch size */
    {LK_TYPE_Q8_0, {[LK_E_DOT] = &lk_avx2_q8_0, [LK_E_MATVEC] = &lk_avx2_q8_0, [LK_E_FEW_TOKENS] = &lk_avx2_q8_0,
                    [LK_E_GEMM] = &lk_avx2_prefill, [LK_E_ROWS8] = &lk_avx2_q8_0, [LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q8_1, {[LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q8_K, {[LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q2_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_Q3_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    /* K-quants in an order of their own (exact integer sums), not llama.cpp's; Q4_K also packed at load in the
     * 8-row layout, read by the same kernels (the same bits) */
    {LK_TYPE_Q4_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_MATVEC] = &lk_avx2_kquant,
                    [LK_E_FEW_TOKENS] = &lk_avx2_kquant, [LK_E_GEMM] = &lk_avx2_kquant, [LK_E_ROWS8] = &lk_avx2_kquant}},
    {LK_TYPE_Q5_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_MATVEC] = &lk_avx2_kquant,
                    [LK_E_FEW_TOKENS] = &lk_avx2_fewtokens, [LK_E_GEMM] = &lk_avx2_kquant}},
    {LK_TYPE_Q6_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_MATVEC] = &lk_avx2_kquant,
                    [LK_E_FEW_TOKENS] = &lk_avx2_fewtokens, [LK_E_GEMM] = &lk_avx2_kquant}},
    {LK_ANY, {[LK_E_F16_TO_F32] = &lk_avx2_decode, [LK_E_F32_TO_F16] = &lk_avx2_decode, [LK_E_STREAM_SUM] = &lk_avx2_decode,
              [LK_E_SOFTMAX_EXP] = &lk_avx2_decode, [LK_E_SILU] = &lk_avx2_decode, [LK_E_MATVEC_F16_GGML] = &lk_f16_ggml_avx2}},
};

#ifdef LK_AVXVNNI
const lk_table_spec lk_table_avxvnni = LK_TABLE("avx-vnni", NULL, rows);
#else
const lk_table_spec lk_table_avx2 = LK_TABLE("avx2", NULL, rows);
#endif

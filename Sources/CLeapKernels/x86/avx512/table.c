/* The AVX-512 tables (LK_ISA_AVX512: AVX-512 F/BW/VL), format in lk_tables.h. With VNNI the table of its own
 * kernels; without VNNI (and LK_ISA_AVX512_NOVNNI, to test that table on any AVX-512 CPU) the AVX2 table,
 * whose own orders for Q4_0, Q8_0 and the K-quants beat llama.cpp's on AVX-512 without VNNI, with the
 * 512-bit float kernels. BF16 weights go in llama.cpp's order where the CPU has AVX512-BF16's dot product. */
#include "lk_tables.h"

#define ANY_ROW                                                                                               \
    {LK_ANY, {[LK_E_F16_TO_F32] = &lk_avx2_decode, [LK_E_F32_TO_F16] = &lk_avx2_decode, [LK_E_STREAM_SUM] = &lk_avx2_decode, \
              [LK_E_SOFTMAX_EXP] = &lk_avx2_decode, [LK_E_SILU] = &lk_avx2_decode, [LK_E_MATVEC_F16_GGML] = &lk_f16_ggml_avx512}}
#define BF16_ROW                                                                                              \
    {LK_TYPE_BF16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_ANY_TOKENS] = &lk_bf16_ggml}, \
     LK_CPU_AVX512BF16}

static const lk_table_row novnni_rows[] = {BF16_ROW, ANY_ROW};
const lk_table_spec lk_table_avx512_novnni = LK_TABLE("avx512-novnni", &lk_table_avx2, novnni_rows);

#define DOTS_2_4(L) [LK_E_DOT] = &L, [LK_E_DOT2] = &L, [LK_E_DOT4] = &L
#define GGML_ORDER_ROW(T)                                                                                      \
    {T, {DOTS_2_4(lk_avx2_decode), [LK_E_MATVEC] = &lk_avx512_decode, [LK_E_FEW_TOKENS] = &lk_avx512_decode,    \
         [LK_E_GEMM] = &lk_avx512_prefill}}
static const lk_table_row vnni_rows[] = {
    {LK_TYPE_F32, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_GEMM] = &lk_avx512_prefill}},
    {LK_TYPE_F16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_GEMM] = &lk_avx512_prefill}},
    {LK_TYPE_BF16, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    BF16_ROW,
    /* llama.cpp's Q4_0 order on VNNI */
    {LK_TYPE_Q4_0, {[LK_E_DOT] = &lk_q4_0_avx2, [LK_E_MATVEC] = &lk_q4_0_avx512, [LK_E_FEW_TOKENS] = &lk_avx512_fewtokens,
                    [LK_E_GEMM] = &lk_q4_0_avx512, [LK_E_ROWS8] = &lk_avx512_fewtokens}},
    /* ggml's order: the VNNI matvec and few-token kernels, the VNNI gemm, the AVX2 row kernels past the
     * matvec's widest */
    GGML_ORDER_ROW(LK_TYPE_Q4_1),
    GGML_ORDER_ROW(LK_TYPE_Q5_0),
    GGML_ORDER_ROW(LK_TYPE_Q5_1),
    /* Q8_0 in the AVX2 gemm's order: the AVX2 row layout's kernels; in the 8-row layout 16-row VNNI tiles
     * of the same bits at every token count */
    {LK_TYPE_Q8_0, {[LK_E_DOT] = &lk_avx2_q8_0, [LK_E_MATVEC] = &lk_avx2_q8_0, [LK_E_FEW_TOKENS] = &lk_avx2_q8_0,
                    [LK_E_GEMM] = &lk_avx2_prefill, [LK_E_ROWS8] = &lk_avx512_fewtokens, [LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q8_1, {[LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q8_K, {[LK_E_QUANTIZE] = &lk_avx2_decode}},
    {LK_TYPE_Q2_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    {LK_TYPE_Q3_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode}},
    /* K-quants in the VNNI kernels' own order (exact integer sums), not llama.cpp's */
    {LK_TYPE_Q4_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_MATVEC] = &lk_avx512_kquant,
                    [LK_E_FEW_TOKENS] = &lk_avx512_kquant, [LK_E_GEMM] = &lk_avx512_kquant, [LK_E_ROWS8] = &lk_avx512_kquant}},
    {LK_TYPE_Q5_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_MATVEC] = &lk_avx512_kquant,
                    [LK_E_FEW_TOKENS] = &lk_avx512_kquant, [LK_E_GEMM] = &lk_avx512_kquant, [LK_E_ROWS8] = &lk_avx512_kquant}},
    {LK_TYPE_Q6_K, {DOTS_2_4(lk_avx512_decode), [LK_E_MATVEC] = &lk_avx512_kquant, [LK_E_FEW_TOKENS] = &lk_avx512_fewtokens,
                    [LK_E_GEMM] = &lk_avx512_kquant, [LK_E_ROWS8] = &lk_avx512_kquant}},
    ANY_ROW,
};
const lk_table_spec lk_table_avx512_vnni = LK_TABLE("avx512-vnni", NULL, vnni_rows);

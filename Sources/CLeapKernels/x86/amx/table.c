/* The AMX table (LK_ISA_AVX512_AMX): the AVX-512 VNNI table with its many-token products on the tile unit
 * (AMX-INT8). An AMX kernel hands a call it declines (fewer tokens than the tiles pay off at) to the VNNI
 * table's kernel of the same entry (lk_amx_link_base), so its gemm serves from the VNNI gemm's token count.
 * Format: lk_tables.h. */
#include "lk_tables.h"

static const lk_table_row rows[] = {
    {LK_TYPE_Q4_0, {[LK_E_DOT] = &lk_q4_0_avx2, [LK_E_MATVEC] = &lk_q4_0_avx512, [LK_E_FEW_TOKENS] = &lk_avx512_fewtokens,
                    [LK_E_GEMM] = &lk_amx, [LK_E_ROWS8] = &lk_amx}},
    {LK_TYPE_Q8_0, {[LK_E_DOT] = &lk_avx2_q8_0, [LK_E_MATVEC] = &lk_avx2_q8_0, [LK_E_FEW_TOKENS] = &lk_avx2_q8_0,
                    [LK_E_GEMM] = &lk_amx, [LK_E_ROWS8] = &lk_amx, [LK_E_QUANTIZE] = &lk_avx2_decode}},
    /* the K-quant tile kernels read the row layout: no rows8 entries */
    {LK_TYPE_Q4_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_MATVEC] = &lk_avx512_kquant,
                    [LK_E_FEW_TOKENS] = &lk_avx512_kquant, [LK_E_GEMM] = &lk_amx}},
    {LK_TYPE_Q5_K, {[LK_E_DOT] = &lk_avx2_decode, [LK_E_DOT4] = &lk_avx2_decode, [LK_E_MATVEC] = &lk_avx512_kquant,
                    [LK_E_FEW_TOKENS] = &lk_avx512_kquant, [LK_E_GEMM] = &lk_amx}},
    {LK_TYPE_Q6_K, {[LK_E_DOT] = &lk_avx512_decode, [LK_E_DOT2] = &lk_avx512_decode, [LK_E_DOT4] = &lk_avx512_decode,
                    [LK_E_MATVEC] = &lk_avx512_kquant, [LK_E_FEW_TOKENS] = &lk_avx512_fewtokens, [LK_E_GEMM] = &lk_amx}},
};
const lk_table_spec lk_table_amx = {"avx512-amx", &lk_table_avx512_vnni, rows, (int)(sizeof rows / sizeof rows[0]),
                                    lk_amx_link_base};

/* The arm64 tables, one per level (format in lk_tables.h): ARMv8.0 NEON (LK_ISA_NEON, every aarch64 CPU) on
 * the scalar table; with the dot-product instructions (LK_ISA_NEON_DOTPROD) the NEON table with its integer
 * products from the dotprod build of quant_rows.c; with the int8 matrix multiply (LK_ISA_NEON_I8MM) the
 * dotprod table with Q4_0, Q8_0 and the K-quants Q4_K, Q5_K, Q6_K of 2 tokens and more on smmla tiles (Q4_0,
 * Q8_0, Q4_K, Q6_K also in the 8-row layout; Q5_K there on the dotprod table only).
 * Every level sums in quant_rows.c's order (Q2_K, Q3_K: low_bit_kquants.c's), so the three give the same bits. */
#include "lk_tables.h"

/* a quantized type's products, all from list L */
#define QUANT_ROW(TYPE, L, ...)                                                                              \
    {TYPE, {[LK_E_DOT] = &L, [LK_E_DOT2] = &L, [LK_E_DOT4] = &L, [LK_E_MATVEC] = &L, [LK_E_FEW_TOKENS] = &L,  \
            [LK_E_GEMM] = &L, __VA_ARGS__}}
#define QUANT_ROWS(L)                                                                                        \
    QUANT_ROW(LK_TYPE_Q4_0, L), QUANT_ROW(LK_TYPE_Q4_1, L), QUANT_ROW(LK_TYPE_Q5_0, L),                       \
    QUANT_ROW(LK_TYPE_Q5_1, L), QUANT_ROW(LK_TYPE_Q4_K, L), QUANT_ROW(LK_TYPE_Q5_K, L),                       \
    QUANT_ROW(LK_TYPE_Q6_K, L), QUANT_ROW(LK_TYPE_Q8_0, L, [LK_E_QUANTIZE] = &lk_neon)

/* a type whose kernels in list L are dot, dot4, the matvec and token tiles for 2 tokens and more (the float
 * types in neon.c, Q2_K and Q3_K in low_bit_kquants.c) */
#define TOKEN_TILES_ROW(TYPE, L)                                                                             \
    {TYPE, {[LK_E_DOT] = &L, [LK_E_DOT4] = &L, [LK_E_MATVEC] = &L, [LK_E_FEW_TOKENS] = &L, [LK_E_GEMM] = &L}}
static const lk_table_row neon_rows[] = {
    TOKEN_TILES_ROW(LK_TYPE_F32, lk_neon), TOKEN_TILES_ROW(LK_TYPE_F16, lk_neon), TOKEN_TILES_ROW(LK_TYPE_BF16, lk_neon),
    QUANT_ROWS(lk_neon_quant),
    TOKEN_TILES_ROW(LK_TYPE_Q2_K, lk_neon_low_kquants), TOKEN_TILES_ROW(LK_TYPE_Q3_K, lk_neon_low_kquants),
    {LK_TYPE_Q8_1, {[LK_E_QUANTIZE] = &lk_neon}},
    {LK_TYPE_Q8_K, {[LK_E_QUANTIZE] = &lk_neon}},
    {LK_ANY, {[LK_E_F16_TO_F32] = &lk_neon, [LK_E_F32_TO_F16] = &lk_neon, [LK_E_STREAM_SUM] = &lk_neon,
              [LK_E_SOFTMAX_EXP] = &lk_neon, [LK_E_SILU] = &lk_neon}},
};
const lk_table_spec lk_table_neon = LK_TABLE("neon", &lk_table_scalar, neon_rows);

/* Q4_0, Q8_0 also in the 8-row layout (arm/rows8.c), Q4_K, Q5_K, Q6_K too (arm/rows8_kquant.c): the loader
 * packs their matrices for this table */
static const lk_table_row dotprod_rows[] = {
    QUANT_ROW(LK_TYPE_Q4_0, lk_neon_dotprod_quant, [LK_E_ROWS8] = &lk_neon_dotprod_rows8),
    QUANT_ROW(LK_TYPE_Q4_1, lk_neon_dotprod_quant), QUANT_ROW(LK_TYPE_Q5_0, lk_neon_dotprod_quant),
    QUANT_ROW(LK_TYPE_Q5_1, lk_neon_dotprod_quant),
    QUANT_ROW(LK_TYPE_Q4_K, lk_neon_dotprod_quant, [LK_E_ROWS8] = &lk_neon_dotprod_rows8_kquant),
    QUANT_ROW(LK_TYPE_Q5_K, lk_neon_dotprod_quant, [LK_E_ROWS8] = &lk_neon_dotprod_rows8_kquant),
    QUANT_ROW(LK_TYPE_Q6_K, lk_neon_dotprod_quant, [LK_E_ROWS8] = &lk_neon_dotprod_rows8_kquant),
    QUANT_ROW(LK_TYPE_Q8_0, lk_neon_dotprod_quant, [LK_E_QUANTIZE] = &lk_neon, [LK_E_ROWS8] = &lk_neon_dotprod_rows8),
    TOKEN_TILES_ROW(LK_TYPE_Q2_K, lk_neon_dotprod_low_kquants), TOKEN_TILES_ROW(LK_TYPE_Q3_K, lk_neon_dotprod_low_kquants),
};
const lk_table_spec lk_table_neon_dotprod = LK_TABLE("neon-dotprod", &lk_table_neon, dotprod_rows);

/* Q4_0, Q8_0: one token on the dotprod kernels, from 2 tokens on smmla; in the 8-row layout the same
 * (i8mm.c's rows8 entries) */
#define I8MM_ROW(TYPE, ...)                                                                                  \
    {TYPE, {[LK_E_DOT] = &lk_neon_dotprod_quant, [LK_E_DOT2] = &lk_neon_dotprod_quant,                       \
            [LK_E_DOT4] = &lk_neon_dotprod_quant, [LK_E_MATVEC] = &lk_neon_dotprod_quant,                     \
            [LK_E_FEW_TOKENS] = &lk_neon_i8mm, [LK_E_GEMM] = &lk_neon_i8mm, __VA_ARGS__}}
/* Q4_K, Q5_K, Q6_K: likewise, from i8mm_kquant.c (Q4_K, Q6_K in the 8-row layout too; Q5_K's row has no
 * rows8 entry, so the loader leaves its matrices in the row layout for the smmla tiles there) */
#define I8MM_KQUANT_ROW(TYPE, ...)                                                                           \
    {TYPE, {[LK_E_DOT] = &lk_neon_dotprod_quant, [LK_E_DOT2] = &lk_neon_dotprod_quant,                       \
            [LK_E_DOT4] = &lk_neon_dotprod_quant, [LK_E_MATVEC] = &lk_neon_dotprod_quant,                     \
            [LK_E_FEW_TOKENS] = &lk_neon_i8mm_kquant, [LK_E_GEMM] = &lk_neon_i8mm_kquant, __VA_ARGS__}}
static const lk_table_row i8mm_rows[] = {
    I8MM_ROW(LK_TYPE_Q4_0, [LK_E_ROWS8] = &lk_neon_i8mm),
    I8MM_ROW(LK_TYPE_Q8_0, [LK_E_QUANTIZE] = &lk_neon, [LK_E_ROWS8] = &lk_neon_i8mm),
    I8MM_KQUANT_ROW(LK_TYPE_Q4_K, [LK_E_ROWS8] = &lk_neon_i8mm_kquant), I8MM_KQUANT_ROW(LK_TYPE_Q5_K),
    I8MM_KQUANT_ROW(LK_TYPE_Q6_K, [LK_E_ROWS8] = &lk_neon_i8mm_kquant),
};
const lk_table_spec lk_table_neon_i8mm = LK_TABLE("neon-i8mm", &lk_table_neon_dotprod, i8mm_rows);

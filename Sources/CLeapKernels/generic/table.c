/* The scalar table (LK_ISA_SCALAR): the portable reference every other table is checked against, and the
 * base of the arm64 ones (arm/table.c). Format: lk_tables.h. */
#include "lk_tables.h"

static const lk_table_row rows[] = {
    {LK_TYPE_F32, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_F16, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_BF16, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q4_0, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q4_1, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q5_0, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q5_1, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q8_0, {[LK_E_DOT] = &lk_scalar, [LK_E_QUANTIZE] = &lk_scalar}},
    {LK_TYPE_Q8_1, {[LK_E_QUANTIZE] = &lk_scalar}},
    {LK_TYPE_Q8_K, {[LK_E_QUANTIZE] = &lk_scalar}},
    {LK_TYPE_Q2_K, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q3_K, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q4_K, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q5_K, {[LK_E_DOT] = &lk_scalar}},
    {LK_TYPE_Q6_K, {[LK_E_DOT] = &lk_scalar}},
    {LK_ANY, {[LK_E_F16_TO_F32] = &lk_scalar, [LK_E_F32_TO_F16] = &lk_scalar, [LK_E_STREAM_SUM] = &lk_scalar,
              [LK_E_SOFTMAX_EXP] = &lk_scalar, [LK_E_SILU] = &lk_scalar}},
};
const lk_table_spec lk_table_scalar = LK_TABLE("scalar", NULL, rows);

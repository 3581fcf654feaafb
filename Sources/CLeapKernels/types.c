/* Type facts of the ggml types (LK_TYPE_*): which are supported, block sizes and bytes, row bytes, the
 * activation format each multiplies with; and the scalar f16 conversions. The block layouts themselves are
 * in lk_types.h. A leaf: no dispatch, no CPU features. */
#include "lk_types.h"

int lk_type_supported(int type) {
    switch (type) {
    case LK_TYPE_F32: case LK_TYPE_F16: case LK_TYPE_BF16: case LK_TYPE_Q4_0: case LK_TYPE_Q4_1:
    case LK_TYPE_Q5_0: case LK_TYPE_Q5_1: case LK_TYPE_Q8_0: case LK_TYPE_Q2_K: case LK_TYPE_Q3_K:
    case LK_TYPE_Q4_K: case LK_TYPE_Q5_K: case LK_TYPE_Q6_K:
        return 1;
    default: return 0;
    }
}

int64_t lk_block_size(int type) {
    switch (type) {
    case LK_TYPE_F32: case LK_TYPE_F16: case LK_TYPE_BF16: return 1;
    case LK_TYPE_Q4_0: case LK_TYPE_Q4_1: case LK_TYPE_Q5_0: case LK_TYPE_Q5_1: case LK_TYPE_Q8_0: case LK_TYPE_Q8_1:
        return QK;
    case LK_TYPE_Q2_K: case LK_TYPE_Q3_K: case LK_TYPE_Q4_K: case LK_TYPE_Q5_K: case LK_TYPE_Q6_K: case LK_TYPE_Q8_K:
        return QK_K;
    default: return 0;
    }
}

size_t lk_block_bytes(int type) {
    switch (type) {
    case LK_TYPE_F32: return 4;
    case LK_TYPE_F16: case LK_TYPE_BF16: return 2;
    case LK_TYPE_Q4_0: return sizeof(block_q4_0);
    case LK_TYPE_Q4_1: return sizeof(block_q4_1);
    case LK_TYPE_Q5_0: return sizeof(block_q5_0);
    case LK_TYPE_Q5_1: return sizeof(block_q5_1);
    case LK_TYPE_Q8_0: return sizeof(block_q8_0);
    case LK_TYPE_Q8_1: return sizeof(block_q8_1);
    case LK_TYPE_Q2_K: return sizeof(block_q2_K);
    case LK_TYPE_Q3_K: return sizeof(block_q3_K);
    case LK_TYPE_Q4_K: return sizeof(block_q4_K);
    case LK_TYPE_Q5_K: return sizeof(block_q5_K);
    case LK_TYPE_Q6_K: return sizeof(block_q6_K);
    case LK_TYPE_Q8_K: return sizeof(block_q8_K);
    default: return 0;
    }
}

size_t lk_row_bytes(int type, int64_t n) {
    const int64_t bs = lk_block_size(type);
    return bs ? (size_t)(n / bs) * lk_block_bytes(type) : 0;
}

int lk_activation_type(int type) {
    switch (type) {
    case LK_TYPE_Q4_0: case LK_TYPE_Q5_0: case LK_TYPE_Q8_0: return LK_TYPE_Q8_0;
    case LK_TYPE_Q4_1: case LK_TYPE_Q5_1: return LK_TYPE_Q8_1;
    case LK_TYPE_Q2_K: case LK_TYPE_Q3_K: case LK_TYPE_Q4_K: case LK_TYPE_Q5_K: case LK_TYPE_Q6_K: return LK_TYPE_Q8_K;
    default: return LK_TYPE_F32;
    }
}

float lk_f16_to_f32(uint16_t h) { return lk_h2f(h); }
uint16_t lk_f32_to_f16(float f) { return lk_f2h(f); }

/* Activations for BF16 weights, as ggml prepares them: ggml multiplies a BF16 weight row with activations
 * converted to BF16 (the BF16 type's vec_dot_type), so each float is rounded to BF16 first — round to nearest
 * even on the upper 16 bits (ggml_compute_fp32_to_bf16; a NaN stays a quiet NaN). The kernels then take the
 * rounded values as floats, which BF16 values are exactly. */
#include "lk_internal.h"

void lk_round_bf16_row(const float *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + i, sizeof u);
        uint32_t h = (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 64u : (u + (0x7fffu + ((u >> 16) & 1u))) >> 16;
        uint32_t back = h << 16;
        memcpy(dst + i, &back, sizeof back);
    }
}

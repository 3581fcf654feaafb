/* The conversions' entry points: f16 rows, dequantization and the activation quantizers (each through this
 * thread's dispatch table), and the BF16 rounding of activations.
 *
 * Activations for BF16 weights, as ggml prepares them: ggml multiplies a BF16 weight row with activations
 * converted to BF16 (the BF16 type's vec_dot_type), so each float is rounded to BF16 first — round to nearest
 * even on the upper 16 bits (ggml_compute_fp32_to_bf16; a NaN stays a quiet NaN). The kernels then take the
 * rounded values as floats, which BF16 values are exactly. */
#include "lk_dispatch.h"

void lk_round_bf16_row(const float *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, src + i, sizeof u);
        uint32_t h = (u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 64u : (u + (0x7fffu + ((u >> 16) & 1u))) >> 16;
        uint32_t back = h << 16;
        memcpy(dst + i, &back, sizeof back);
    }
}

void lk_f16_to_f32_row(const uint16_t *src, float *dst, int64_t n) { lk_kernels()->f16_to_f32(src, dst, n); }
void lk_f32_to_f16_row(const float *src, uint16_t *dst, int64_t n) { lk_kernels()->f32_to_f16(src, dst, n); }

void lk_dequantize_row(int type, const void *src, float *dst, int64_t n) {
    const lk_kernel_table *k = lk_kernels();
    if (type == LK_TYPE_F16) k->f16_to_f32(src, dst, n);
    else if (type >= 0 && type < LK_TYPE_COUNT && k->dequantize[type]) k->dequantize[type](src, dst, n);
    else memset(dst, 0, (size_t)n * sizeof(float));
}

void lk_quantize_row_q8_0(const float *x, void *y, int64_t n) { lk_kernels()->quantize[LK_TYPE_Q8_0](x, y, n); }
void lk_quantize_row_q8_1(const float *x, void *y, int64_t n) { lk_kernels()->quantize[LK_TYPE_Q8_1](x, y, n); }
void lk_quantize_row_q8_K(const float *x, void *y, int64_t n) { lk_kernels()->quantize[LK_TYPE_Q8_K](x, y, n); }

void lk_quantize_row(int act_type, const float *x, void *y, int64_t n) {
    if (act_type == LK_TYPE_F32) {
        if ((const void *)x != y) memmove(y, x, (size_t)n * sizeof(float));
        return;
    }
    if (act_type >= 0 && act_type < LK_TYPE_COUNT && lk_kernels()->quantize[act_type])
        lk_kernels()->quantize[act_type](x, y, n);
}

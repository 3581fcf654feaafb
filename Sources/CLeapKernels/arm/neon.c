/* arm64 ARMv8.0 NEON table (every aarch64 CPU): the float types' kernels (F32; F16 widened by the f16
 * conversion every ARMv8.0 core has, BF16 by a 16-bit shift; fp32 products and sums as on x86, since the
 * activations are fp32 and fp16 or bf16 arithmetic would round them), one order for every phase; the Q8
 * activation quantizers, f16 rows, the stream probe, softmax's exponentials and SiLU (the scalar reference's
 * bits). Its integer products come from quant_rows.c (ARMv8.0 build). The dotprod and i8mm tables start from
 * this one. */
#include "../lk_tables.h"
#include "token_tiles.h"

#if defined(__aarch64__)
#include "lk_arm.h"

#define XT(type, t) ((const type *)((const uint8_t *)vx + (size_t)(t) * xs))

/* ------------------------------------ float types ------------------------------------ */

INLINE float32x4_t load4_f32(const float *p) { return vld1q_f32(p); }
INLINE float32x4_t load4_f16(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
INLINE float32x4_t load4_bf16(const uint16_t *p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }

/* Rows wr[r] (r < NR: 1, 2) × tokens t (t < NT: 1..4, token t's floats at x + t·xs bytes) of a float type:
 * s[r·4 + t]. Every (row, token) sums in one order whatever the tile: two 4-lane accumulators over 8-element
 * steps (elements 8k..8k+3 and 8k+4..8k+7), added lane for lane, then across, then the tail one by one. So
 * the entries of token_tiles.h give a token the same bits. PF: prefetch each row ahead (the one-token
 * streams). */
#define FLOAT_TILE(NAME, WT, LOAD4, SCALAR)                                                                  \
    INLINE void NAME(int64_t n, const WT *const *wr, const int NR, const void *vx, size_t xs, const int NT,  \
                     const int PF, float *s) {                                                               \
        float32x4_t acc[2][4][2];                                                                            \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int t = 0; t < NT; t++) acc[r][t][0] = acc[r][t][1] = vdupq_n_f32(0);                       \
        int64_t i = 0;                                                                                       \
        for (; i + 8 <= n; i += 8) {                                                                         \
            float32x4_t w[2][2];                                                                             \
            for (int r = 0; r < NR; r++) {                                                                   \
                if (PF && i % (64 / sizeof(WT)) == 0)                                                        \
                    lk_prefetch_weights((const uint8_t *)(wr[r] + i) + LK_ARM_PREFETCH_BYTES);               \
                w[r][0] = LOAD4(wr[r] + i), w[r][1] = LOAD4(wr[r] + i + 4);                                  \
            }                                                                                                \
            for (int t = 0; t < NT; t++) {                                                                   \
                const float *x = XT(float, t) + i;                                                          \
                const float32x4_t x0 = vld1q_f32(x), x1 = vld1q_f32(x + 4);                                  \
                for (int r = 0; r < NR; r++) {                                                               \
                    acc[r][t][0] = vfmaq_f32(acc[r][t][0], w[r][0], x0);                                     \
                    acc[r][t][1] = vfmaq_f32(acc[r][t][1], w[r][1], x1);                                     \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int t = 0; t < NT; t++) {                                                                   \
                float sum = vaddvq_f32(vaddq_f32(acc[r][t][0], acc[r][t][1]));                               \
                for (int64_t j = i; j < n; j++) sum += SCALAR(wr[r][j]) * XT(float, t)[j];                  \
                s[r * 4 + t] = sum;                                                                          \
            }                                                                                                \
    }

#define ID(x) (x)
FLOAT_TILE(f32_tile, float, load4_f32, ID)
FLOAT_TILE(f16_tile, uint16_t, load4_f16, h2f)
FLOAT_TILE(bf16_tile, uint16_t, load4_bf16, lk_bf2f)
LK_ARM_TOKEN_ENTRIES(f32, float, 1)
LK_ARM_TOKEN_ENTRIES(f16, uint16_t, 1)
LK_ARM_TOKEN_ENTRIES(bf16, uint16_t, 1)

/* ------------------------------ activation quantization ------------------------------ */

/* q[32] = x · id rounded half to even (vcvtnq, as ggml's quantizers); returns Σ q */
INLINE int quant_32(const float *x, float id, int8_t *qs) {
    int32x4_t sum = vdupq_n_s32(0);
    for (int k = 0; k < 32; k += 8) {
        const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + k), id));
        const int32x4_t b = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + k + 4), id));
        sum = vaddq_s32(sum, vaddq_s32(a, b));
        vst1_s8(qs + k, vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b))));
    }
    return vaddvq_s32(sum);
}

INLINE float amax_32(const float *x) {
    float32x4_t m = vabsq_f32(vld1q_f32(x));
    for (int k = 4; k < 32; k += 4) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + k)));
    return vmaxvq_f32(m);
}

#include "../lk_quantize_q8.h"

static void quantize_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float max;
        if (!q8_K_max(x, &max)) {
            memset(&y[i], 0, sizeof(y[i]));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int k = 0; k < QK_K; k += 8) {
            /* vcvtnq: nearest, ties to even (the reference's nearest_int) */
            const int32x4_t a = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + k), iscale)), vdupq_n_s32(127));
            const int32x4_t b = vminq_s32(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + k + 4), iscale)), vdupq_n_s32(127));
            vst1_s8(y[i].qs + k, vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b))));
        }
        for (int j = 0; j < QK_K / 16; j++) y[i].bsums[j] = (int16_t)vaddlvq_s8(vld1q_s8(y[i].qs + 16 * j));
        y[i].d = 1.0f / iscale;
    }
}

/* ---------------------------------- f16 conversion ---------------------------------- */

static void f16_to_f32_row(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, load4_f16(src + i));
    for (; i < n; i++) dst[i] = h2f(src[i]);
}

static void f32_to_f16_row(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1_u16(dst + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(src + i))));
    for (; i < n; i++) dst[i] = lk_f2h(src[i]);
}

static float stream_sum(const float *x, int64_t n) {
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vaddq_f32(a0, vld1q_f32(x + i));
        a1 = vaddq_f32(a1, vld1q_f32(x + i + 4));
        a2 = vaddq_f32(a2, vld1q_f32(x + i + 8));
        a3 = vaddq_f32(a3, vld1q_f32(x + i + 12));
    }
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) s += x[i];
    return s;
}

/* ------------------------------ softmax exponentials, SiLU ------------------------------ */

/* lk_ggml_expf on 4 lanes, the same operations lane for lane (so its bits) */
INLINE float32x4_t ggml_expf4(float32x4_t x) {
    const float32x4_t r = vdupq_n_f32(0x1.8p23f);
    const float32x4_t z = vfmaq_f32(r, x, vdupq_n_f32(0x1.715476p+0f));
    const float32x4_t n = vsubq_f32(z, r);
    const float32x4_t b = vfmaq_f32(vfmaq_f32(x, vnegq_f32(n), vdupq_n_f32(0x1.62e4p-1f)), vnegq_f32(n), vdupq_n_f32(0x1.7f7d1cp-20f));
    const float32x4_t u = vmulq_f32(b, b);
    const float32x4_t p5 = vfmaq_f32(vdupq_n_f32(0x1.573e2ep-5f), vdupq_n_f32(0x1.0e4020p-7f), b);
    const float32x4_t p3 = vfmaq_f32(vdupq_n_f32(0x1.fffdb6p-2f), vdupq_n_f32(0x1.555e66p-3f), b);
    const float32x4_t p1 = vfmaq_f32(vdupq_n_f32(1.0f), vdupq_n_f32(0x1.ffffecp-1f), b);
    const float32x4_t j = vfmaq_f32(p1, vfmaq_f32(p3, p5, u), u);
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    const float32x4_t normal = vmulq_f32(j, vreinterpretq_f32_s32(e));
    /* |n| > 126 (or NaN): inf above, 0 below */
    const float32x4_t beyond = vbslq_f32(vcgtq_f32(n, vdupq_n_f32(0.0f)), vdupq_n_f32(__builtin_inff()), vdupq_n_f32(0.0f));
    return vbslq_f32(vcaleq_f32(n, vdupq_n_f32(126.0f)), normal, beyond);
}

/* lk_softmax_exp_ref's arithmetic: each 16 summed in its order (halves, quarters, then pairs) into a double */
static double softmax_exp(const float *x, float *y, int64_t n, float max) {
    const float32x4_t m = vdupq_n_f32(max);
    double sum = 0.0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        float32x4_t v[4];
        for (int k = 0; k < 4; k++) {
            v[k] = ggml_expf4(vsubq_f32(vld1q_f32(x + i + 4 * k), m));
            vst1q_f32(y + i + 4 * k, v[k]);
        }
        const float32x4_t b = vaddq_f32(vaddq_f32(v[3], v[1]), vaddq_f32(v[2], v[0]));
        const float32x2_t c = vadd_f32(vget_low_f32(b), vget_high_f32(b));
        sum += (double)vpadds_f32(c);
    }
    for (; i < n; i++) sum += (double)(y[i] = lk_ggml_expf(x[i] - max));
    return sum;
}

/* x / (1 + e^-x), lk_silu_ref's operations */
static void silu(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        vst1q_f32(y + i, vdivq_f32(v, vaddq_f32(vdupq_n_f32(1.0f), ggml_expf4(vnegq_f32(v)))));
    }
    for (; i < n; i++) y[i] = x[i] / (1.0f + lk_ggml_expf(-x[i]));
}

#endif

/* The float types' kernels, the Q8 quantizers and the per-table entries (arm/table.c's neon rows) */
LK_KERNELS(lk_neon,
    LK_ARM_TOKEN_KERNELS(LK_TYPE_F32, f32), LK_ARM_TOKEN_KERNELS(LK_TYPE_F16, f16), LK_ARM_TOKEN_KERNELS(LK_TYPE_BF16, bf16),
    LK_ARM_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_0, quantize_q8_0),
    LK_ARM_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_1, quantize_q8_1),
    LK_ARM_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_K, quantize_q8_K),
    LK_ARM_KERNEL(LK_E_F16_TO_F32, LK_ANY, f16_to_f32_row),
    LK_ARM_KERNEL(LK_E_F32_TO_F16, LK_ANY, f32_to_f16_row),
    LK_ARM_KERNEL(LK_E_STREAM_SUM, LK_ANY, stream_sum),
    LK_ARM_KERNEL(LK_E_SOFTMAX_EXP, LK_ANY, softmax_exp),
    LK_ARM_KERNEL(LK_E_SILU, LK_ANY, silu));

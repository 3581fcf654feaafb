/* aarch64 NEON paths (NEON is baseline on aarch64; vdotq_s32 is used when the compiler targets dotprod).
 * Compile-checked on x86-64 hosts with --target=aarch64-linux-gnu; they mirror the AVX2 kernels and the
 * same SIMD-vs-scalar tests cover them when run on arm64. */
#include "lk_internal.h"

#if defined(__aarch64__)
#include <arm_neon.h>

#define INLINE static inline __attribute__((always_inline))
#define XT(type, t) ((const type *)((const uint8_t *)vx + (size_t)(t) * xs))

INLINE float h2f(uint16_t h) {
    __fp16 f;
    memcpy(&f, &h, 2);
    return (float)f;
}

/* acc += Σ a·b over groups of 4 int8 */
INLINE int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(acc, a, b);
#else
    const int16x8_t p0 = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t p1 = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, p0), p1);
#endif
}

/* bytes 0xFF where bit j of the 16 bits at `bits` (little-endian) is set, j = 0..15 */
INLINE uint8x16_t bits_to_bytes_16(uint16_t bits) {
    static const uint8_t sel[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t b = vcombine_u8(vdup_n_u8((uint8_t)(bits & 0xff)), vdup_n_u8((uint8_t)(bits >> 8)));
    return vtstq_u8(b, vld1q_u8(sel));
}

/* ---------------------------------- 32-block types ---------------------------------- */

/* PREP sets q0 (elements 0..15) and q1 (16..31) as int8x16_t; MTERM adds the Q8_1 min term */
#define BLOCK32_KERNEL(NAME, W, X, PREP, MTERM)                                                              \
    INLINE void NAME(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {         \
        const W *w = vw;                                                                                     \
        float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};               \
        float summ[4] = {0, 0, 0, 0};                                                                        \
        for (int64_t i = 0; i < n / QK; i++) {                                                               \
            const W *wb = w + i;                                                                             \
            PREP                                                                                             \
            const float dw = h2f(wb->d);                                                                     \
            for (int t = 0; t < NT; t++) {                                                                   \
                const X *xb = XT(X, t) + i;                                                                  \
                int32x4_t p = dot_s8(vdupq_n_s32(0), q0, vld1q_s8(xb->qs));                                  \
                p = dot_s8(p, q1, vld1q_s8(xb->qs + 16));                                                    \
                acc[t] = vmlaq_n_f32(acc[t], vcvtq_f32_s32(p), dw * h2f(xb->d));                             \
                summ[t] += MTERM;                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int t = 0; t < NT; t++) s[t] = vaddvq_f32(acc[t]) + summ[t];                                    \
    }

#define NIBBLES                                                                                              \
    const uint8x16_t raw = vld1q_u8(wb->qs);                                                                 \
    const uint8x16_t lo = vandq_u8(raw, vdupq_n_u8(15)), hi = vshrq_n_u8(raw, 4);

#define HIGH_BITS                                                                                            \
    uint32_t qh;                                                                                             \
    memcpy(&qh, wb->qh, 4);                                                                                  \
    const uint8x16_t h0 = vandq_u8(bits_to_bytes_16((uint16_t)qh), vdupq_n_u8(16));                          \
    const uint8x16_t h1 = vandq_u8(bits_to_bytes_16((uint16_t)(qh >> 16)), vdupq_n_u8(16));

BLOCK32_KERNEL(q4_0_rows, block_q4_0, block_q8_0,
               NIBBLES const int8x16_t q0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(8));
               const int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(8));, 0.0f)

BLOCK32_KERNEL(q4_1_rows, block_q4_1, block_q8_1,
               NIBBLES const int8x16_t q0 = vreinterpretq_s8_u8(lo);
               const int8x16_t q1 = vreinterpretq_s8_u8(hi);, h2f(wb->m) * h2f(xb->s))

BLOCK32_KERNEL(q5_0_rows, block_q5_0, block_q8_0,
               NIBBLES HIGH_BITS const int8x16_t q0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, h0)), vdupq_n_s8(16));
               const int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(hi, h1)), vdupq_n_s8(16));, 0.0f)

BLOCK32_KERNEL(q5_1_rows, block_q5_1, block_q8_1,
               NIBBLES HIGH_BITS const int8x16_t q0 = vreinterpretq_s8_u8(vorrq_u8(lo, h0));
               const int8x16_t q1 = vreinterpretq_s8_u8(vorrq_u8(hi, h1));, h2f(wb->m) * h2f(xb->s))

BLOCK32_KERNEL(q8_0_rows, block_q8_0, block_q8_0,
               const int8x16_t q0 = vld1q_s8(wb->qs);
               const int8x16_t q1 = vld1q_s8(wb->qs + 16);, 0.0f)

/* ------------------------------------- K-quants ------------------------------------- */

INLINE void q4_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q4_K *w = vw;
    float acc[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) lk_get_scale_min_k4(j, w[i].scales, &sc[j], &mn[j]);
        const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
        int32_t sumi[4] = {0, 0, 0, 0};
        for (int c = 0; c < 4; c++) {
            const uint8x16_t r0 = vld1q_u8(w[i].qs + 32 * c), r1 = vld1q_u8(w[i].qs + 32 * c + 16);
            const int8x16_t l0 = vreinterpretq_s8_u8(vandq_u8(r0, vdupq_n_u8(15)));
            const int8x16_t l1 = vreinterpretq_s8_u8(vandq_u8(r1, vdupq_n_u8(15)));
            const int8x16_t u0 = vreinterpretq_s8_u8(vshrq_n_u8(r0, 4)), u1 = vreinterpretq_s8_u8(vshrq_n_u8(r1, 4));
            for (int t = 0; t < NT; t++) {
                const int8_t *a = XT(block_q8_K, t)[i].qs + 64 * c;
                const int32x4_t plo = dot_s8(dot_s8(vdupq_n_s32(0), l0, vld1q_s8(a)), l1, vld1q_s8(a + 16));
                const int32x4_t phi = dot_s8(dot_s8(vdupq_n_s32(0), u0, vld1q_s8(a + 32)), u1, vld1q_s8(a + 48));
                sumi[t] += sc[2 * c] * vaddvq_s32(plo) + sc[2 * c + 1] * vaddvq_s32(phi);
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            int summ = 0;
            for (int j = 0; j < 8; j++) summ += mn[j] * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
            acc[t] += x->d * (d * (float)sumi[t] - dmin * (float)summ);
        }
    }
    for (int t = 0; t < NT; t++) s[t] = acc[t];
}

INLINE void q6_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q6_K *w = vw;
    const uint8x16_t m4 = vdupq_n_u8(15), m3 = vdupq_n_u8(3);
    const int8x16_t m32 = vdupq_n_s8(32);
    float acc[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(w[i].d);
        int32_t sumi[4] = {0, 0, 0, 0};
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = w[i].ql + 64 * half, *qh = w[i].qh + 32 * half;
            const int8_t *sc = w[i].scales + 8 * half;
            for (int k = 0; k < 2; k++) { /* elements 16k..16k+15 of each quarter */
                const uint8x16_t la = vld1q_u8(ql + 16 * k), lb = vld1q_u8(ql + 32 + 16 * k), h = vld1q_u8(qh + 16 * k);
                const int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(la, m4), vshlq_n_u8(vandq_u8(h, m3), 4))), m32);
                const int8x16_t q2 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(lb, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4))), m32);
                const int8x16_t q3 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(la, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4))), m32);
                const int8x16_t q4 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(lb, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4))), m32);
                for (int t = 0; t < NT; t++) {
                    const int8_t *a = XT(block_q8_K, t)[i].qs + 128 * half + 16 * k;
                    sumi[t] += sc[k + 0] * vaddvq_s32(dot_s8(vdupq_n_s32(0), q1, vld1q_s8(a)));
                    sumi[t] += sc[k + 2] * vaddvq_s32(dot_s8(vdupq_n_s32(0), q2, vld1q_s8(a + 32)));
                    sumi[t] += sc[k + 4] * vaddvq_s32(dot_s8(vdupq_n_s32(0), q3, vld1q_s8(a + 64)));
                    sumi[t] += sc[k + 6] * vaddvq_s32(dot_s8(vdupq_n_s32(0), q4, vld1q_s8(a + 96)));
                }
            }
        }
        for (int t = 0; t < NT; t++) acc[t] += d * XT(block_q8_K, t)[i].d * (float)sumi[t];
    }
    for (int t = 0; t < NT; t++) s[t] = acc[t];
}

/* ------------------------------------ float types ------------------------------------ */

INLINE float32x4_t load4_f32(const float *p) { return vld1q_f32(p); }
INLINE float32x4_t load4_f16(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }
INLINE float32x4_t load4_bf16(const uint16_t *p) { return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16)); }

#define FLOAT_ROWS(NAME, WT, LOAD4, SCALAR)                                                                  \
    INLINE void NAME(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {         \
        const WT *w = vw;                                                                                    \
        float32x4_t acc[4][2];                                                                               \
        for (int t = 0; t < 4; t++) acc[t][0] = acc[t][1] = vdupq_n_f32(0);                                  \
        int64_t i = 0;                                                                                       \
        for (; i + 8 <= n; i += 8) {                                                                         \
            const float32x4_t w0 = LOAD4(w + i), w1 = LOAD4(w + i + 4);                                      \
            for (int t = 0; t < NT; t++) {                                                                   \
                const float *x = XT(float, t) + i;                                                          \
                acc[t][0] = vfmaq_f32(acc[t][0], w0, vld1q_f32(x));                                          \
                acc[t][1] = vfmaq_f32(acc[t][1], w1, vld1q_f32(x + 4));                                      \
            }                                                                                                \
        }                                                                                                    \
        for (int t = 0; t < NT; t++) {                                                                       \
            float r = vaddvq_f32(vaddq_f32(acc[t][0], acc[t][1]));                                           \
            for (int64_t j = i; j < n; j++) r += SCALAR(w[j]) * XT(float, t)[j];                            \
            s[t] = r;                                                                                        \
        }                                                                                                    \
    }

#define ID(x) (x)
FLOAT_ROWS(f32_rows, float, load4_f32, ID)
FLOAT_ROWS(f16_rows, uint16_t, load4_f16, h2f)
FLOAT_ROWS(bf16_rows, uint16_t, load4_bf16, lk_bf2f)


LK_DOT_ENTRIES(q4_0)
LK_DOT_ENTRIES(q4_1)
LK_DOT_ENTRIES(q5_0)
LK_DOT_ENTRIES(q5_1)
LK_DOT_ENTRIES(q8_0)
LK_DOT_ENTRIES(q4_K)
LK_DOT_ENTRIES(q6_K)
LK_DOT_ENTRIES(f32)
LK_DOT_ENTRIES(f16)
LK_DOT_ENTRIES(bf16)

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

#include "lk_quantize_q8.h"

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

void lk_fill_neon(lk_kernel_table *t) {
#define SET(ID, T) t->dot[ID] = dot_##T, t->dot4[ID] = dot4_##T
    SET(LK_TYPE_Q4_0, q4_0);
    SET(LK_TYPE_Q4_1, q4_1);
    SET(LK_TYPE_Q5_0, q5_0);
    SET(LK_TYPE_Q5_1, q5_1);
    SET(LK_TYPE_Q8_0, q8_0);
    SET(LK_TYPE_Q4_K, q4_K);
    SET(LK_TYPE_Q6_K, q6_K);
    SET(LK_TYPE_F32, f32);
    SET(LK_TYPE_F16, f16);
    SET(LK_TYPE_BF16, bf16);
#undef SET
    t->quantize[LK_TYPE_Q8_0] = quantize_q8_0;
    t->quantize[LK_TYPE_Q8_1] = quantize_q8_1;
    t->quantize[LK_TYPE_Q8_K] = quantize_q8_K;
    t->f16_to_f32 = f16_to_f32_row;
    t->f32_to_f16 = f32_to_f16_row;
    t->stream_sum = stream_sum;
}

#else
void lk_fill_neon(lk_kernel_table *t) { (void)t; }
#endif

/* Portable reference paths: dequantization, activation quantization and row dot products for every type.
 * Integer sums are exact, so SIMD paths differ from these only by float summation order. */
#include "lk_internal.h"
#include <math.h>

/* ================================ dequantization ================================ */
/* Bit-exact with ggml's dequantize_row_* and gguf-py (LeapGGUF dequantizes with these): each output is the
 * same float operations in the same order, so no multiply-add may be fused into one rounding (clang's default
 * on CPUs with FMA in the base ISA, such as arm64). */
#pragma STDC FP_CONTRACT OFF

static void dequant_f32(const void *src, float *y, int64_t n) { memcpy(y, src, (size_t)n * sizeof(float)); }

static void dequant_bf16(const void *src, float *y, int64_t n) {
    const uint16_t *x = src;
    for (int64_t i = 0; i < n; i++) y[i] = lk_bf2f(x[i]);
}

static void dequant_q4_0(const void *src, float *y, int64_t n) {
    const block_q4_0 *x = src;
    for (int64_t i = 0; i < n / QK; i++, y += QK) {
        const float d = lk_h2f(x[i].d);
        for (int j = 0; j < QK / 2; j++) {
            y[j] = (float)((x[i].qs[j] & 15) - 8) * d;
            y[j + QK / 2] = (float)((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

static void dequant_q4_1(const void *src, float *y, int64_t n) {
    const block_q4_1 *x = src;
    for (int64_t i = 0; i < n / QK; i++, y += QK) {
        const float d = lk_h2f(x[i].d), m = lk_h2f(x[i].m);
        for (int j = 0; j < QK / 2; j++) {
            y[j] = (float)(x[i].qs[j] & 15) * d + m;
            y[j + QK / 2] = (float)(x[i].qs[j] >> 4) * d + m;
        }
    }
}

static inline uint32_t load_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static void dequant_q5_0(const void *src, float *y, int64_t n) {
    const block_q5_0 *x = src;
    for (int64_t i = 0; i < n / QK; i++, y += QK) {
        const float d = lk_h2f(x[i].d);
        const uint32_t qh = load_u32(x[i].qh);
        for (int j = 0; j < QK / 2; j++) {
            const int q0 = (x[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            const int q1 = (x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            y[j] = (float)(q0 - 16) * d;
            y[j + QK / 2] = (float)(q1 - 16) * d;
        }
    }
}

static void dequant_q5_1(const void *src, float *y, int64_t n) {
    const block_q5_1 *x = src;
    for (int64_t i = 0; i < n / QK; i++, y += QK) {
        const float d = lk_h2f(x[i].d), m = lk_h2f(x[i].m);
        const uint32_t qh = load_u32(x[i].qh);
        for (int j = 0; j < QK / 2; j++) {
            const int q0 = (x[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            const int q1 = (x[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            y[j] = (float)q0 * d + m;
            y[j + QK / 2] = (float)q1 * d + m;
        }
    }
}

static void dequant_q8_0(const void *src, float *y, int64_t n) {
    const block_q8_0 *x = src;
    for (int64_t i = 0; i < n / QK; i++, y += QK) {
        const float d = lk_h2f(x[i].d);
        for (int j = 0; j < QK; j++) y[j] = (float)x[i].qs[j] * d;
    }
}

static void dequant_q8_1(const void *src, float *y, int64_t n) {
    const block_q8_1 *x = src;
    for (int64_t i = 0; i < n / QK; i++, y += QK) {
        const float d = lk_h2f(x[i].d);
        for (int j = 0; j < QK; j++) y[j] = (float)x[i].qs[j] * d;
    }
}

static void dequant_q8_K(const void *src, float *y, int64_t n) {
    const block_q8_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++, y += QK_K)
        for (int j = 0; j < QK_K; j++) y[j] = x[i].d * (float)x[i].qs[j];
}

static void dequant_q2_K(const void *src, float *y, int64_t n) {
    const block_q2_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = lk_h2f(x[i].d), dmin = lk_h2f(x[i].dmin);
        const uint8_t *q = x[i].qs;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int h = 0; h < 2; h++) {
                    const uint8_t sc = x[i].scales[is++];
                    const float dl = d * (float)(sc & 15), ml = dmin * (float)(sc >> 4);
                    for (int k = 0; k < 16; k++) *y++ = dl * (float)((q[16 * h + k] >> shift) & 3) - ml;
                }
    }
}

/* Q3_K: the 16 signed 6-bit scales (4 low bits in scales[0..7], 2 high bits in scales[8..11]). */
static void q3_K_scales(const uint8_t *s, int *out) {
    for (int j = 0; j < 16; j++) {
        const int low4 = (s[j % 8] >> (4 * (j / 8))) & 15;
        const int high2 = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (low4 | (high2 << 4)) - 32;
    }
}

static void dequant_q3_K(const void *src, float *y, int64_t n) {
    const block_q3_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = lk_h2f(x[i].d);
        int sc[16];
        q3_K_scales(x[i].scales, sc);
        const uint8_t *q = x[i].qs, *hm = x[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int h = 0; h < 2; h++) {
                    const float dl = d * (float)sc[is++];
                    for (int k = 0; k < 16; k++) {
                        const int v = ((q[16 * h + k] >> shift) & 3) - ((hm[16 * h + k] & m) ? 0 : 4);
                        *y++ = dl * (float)v;
                    }
                }
    }
}

static void dequant_q4_K(const void *src, float *y, int64_t n) {
    const block_q4_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = lk_h2f(x[i].d), dmin = lk_h2f(x[i].dmin);
        const uint8_t *q = x[i].qs;
        for (int c = 0; c < 4; c++, q += 32) {
            uint8_t sc0, m0, sc1, m1;
            lk_get_scale_min_k4(2 * c, x[i].scales, &sc0, &m0);
            lk_get_scale_min_k4(2 * c + 1, x[i].scales, &sc1, &m1);
            const float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
            for (int k = 0; k < 32; k++) *y++ = d0 * (float)(q[k] & 15) - mm0;
            for (int k = 0; k < 32; k++) *y++ = d1 * (float)(q[k] >> 4) - mm1;
        }
    }
}

static void dequant_q5_K(const void *src, float *y, int64_t n) {
    const block_q5_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = lk_h2f(x[i].d), dmin = lk_h2f(x[i].dmin);
        const uint8_t *q = x[i].qs, *qh = x[i].qh;
        for (int c = 0; c < 4; c++, q += 32) {
            uint8_t sc0, m0, sc1, m1;
            lk_get_scale_min_k4(2 * c, x[i].scales, &sc0, &m0);
            lk_get_scale_min_k4(2 * c + 1, x[i].scales, &sc1, &m1);
            const float d0 = d * sc0, mm0 = dmin * m0, d1 = d * sc1, mm1 = dmin * m1;
            for (int k = 0; k < 32; k++) *y++ = d0 * (float)((q[k] & 15) + (((qh[k] >> (2 * c)) & 1) << 4)) - mm0;
            for (int k = 0; k < 32; k++) *y++ = d1 * (float)((q[k] >> 4) + (((qh[k] >> (2 * c + 1)) & 1) << 4)) - mm1;
        }
    }
}

static void dequant_q6_K(const void *src, float *y, int64_t n) {
    const block_q6_K *x = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = lk_h2f(x[i].d);
        const uint8_t *ql = x[i].ql, *qh = x[i].qh;
        const int8_t *sc = x[i].scales;
        for (int half = 0; half < 2; half++, y += 128, ql += 64, qh += 32, sc += 8)
            for (int k = 0; k < 32; k++) {
                const int is = k / 16;
                const int q1 = ((ql[k] & 15) | (((qh[k] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[k + 32] & 15) | (((qh[k] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[k] >> 4) | (((qh[k] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[k + 32] >> 4) | (((qh[k] >> 6) & 3) << 4)) - 32;
                y[k] = d * (float)sc[is + 0] * (float)q1;
                y[k + 32] = d * (float)sc[is + 2] * (float)q2;
                y[k + 64] = d * (float)sc[is + 4] * (float)q3;
                y[k + 96] = d * (float)sc[is + 6] * (float)q4;
            }
    }
}

#pragma STDC FP_CONTRACT ON

/* ============================ activation quantization ============================ */

/* Round to nearest, ties to even (ggml's nearest_int for |v| < 2^22). */
static inline int nearest_int(float v) {
    const float val = v + 12582912.0f;
    return (int)(lk_f32_bits(val) & 0x007fffff) - 0x00400000;
}

/* Q8_0 / Q8_1 as ggml's x86 path (what llama.cpp runs here): scale 127/amax (not 1/d, which can differ by an
 * ulp) and round half to even, so that our activations are bit-identical and matmuls track llama.cpp. */
static inline float q8_inverse_scale(float amax) { return amax != 0.0f ? 127.0f / amax : 0.0f; }

void lk_quantize_row_q8_0_ref(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK; i++, x += QK) {
        float amax = 0.0f;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float id = q8_inverse_scale(amax);
        y[i].d = lk_f2h(amax / 127.0f);
        for (int j = 0; j < QK; j++) y[i].qs[j] = (int8_t)nearest_int(x[j] * id);
    }
}

void lk_quantize_row_q8_1_ref(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK; i++, x += QK) {
        float amax = 0.0f;
        for (int j = 0; j < QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float d = amax / 127.0f, id = q8_inverse_scale(amax);
        y[i].d = lk_f2h(d);
        int sum = 0;
        for (int j = 0; j < QK; j++) {
            y[i].qs[j] = (int8_t)nearest_int(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = lk_f2h(d * (float)sum);
    }
}

void lk_quantize_row_q8_K_ref(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float max = 0.0f, amax = 0.0f; /* max = the signed value of largest magnitude */
        for (int j = 0; j < QK_K; j++) {
            const float ax = fabsf(x[j]);
            if (ax > amax) { amax = ax; max = x[j]; }
        }
        if (amax == 0.0f) {
            y[i].d = 0.0f;
            memset(y[i].qs, 0, QK_K);
            memset(y[i].bsums, 0, sizeof(y[i].bsums));
            continue;
        }
        const float iscale = -127.0f / max;
        for (int j = 0; j < QK_K; j++) {
            const int v = nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v < 127 ? v : 127);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int k = 0; k < 16; k++) sum += y[i].qs[16 * j + k];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1.0f / iscale;
    }
}

/* ================================= dot products ================================= */

static float dot_f32(int64_t n, const void *vw, const void *vx) {
    const float *w = vw, *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += w[i] * x[i];
    return s;
}

static float dot_f16(int64_t n, const void *vw, const void *vx) {
    const uint16_t *w = vw;
    const float *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += lk_h2f(w[i]) * x[i];
    return s;
}

static float dot_bf16(int64_t n, const void *vw, const void *vx) {
    const uint16_t *w = vw;
    const float *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n; i++) s += lk_bf2f(w[i]) * x[i];
    return s;
}

static float dot_q4_0(int64_t n, const void *vw, const void *vx) {
    const block_q4_0 *w = vw;
    const block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK; i++) {
        int sumi = 0;
        for (int j = 0; j < QK / 2; j++)
            sumi += ((w[i].qs[j] & 15) - 8) * x[i].qs[j] + ((w[i].qs[j] >> 4) - 8) * x[i].qs[j + QK / 2];
        s += (float)sumi * (lk_h2f(w[i].d) * lk_h2f(x[i].d));
    }
    return s;
}

static float dot_q4_1(int64_t n, const void *vw, const void *vx) {
    const block_q4_1 *w = vw;
    const block_q8_1 *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK; i++) {
        int sumi = 0;
        for (int j = 0; j < QK / 2; j++)
            sumi += (w[i].qs[j] & 15) * x[i].qs[j] + (w[i].qs[j] >> 4) * x[i].qs[j + QK / 2];
        s += (float)sumi * (lk_h2f(w[i].d) * lk_h2f(x[i].d)) + lk_h2f(w[i].m) * lk_h2f(x[i].s);
    }
    return s;
}

static float dot_q5_0(int64_t n, const void *vw, const void *vx) {
    const block_q5_0 *w = vw;
    const block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK; i++) {
        const uint32_t qh = load_u32(w[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK / 2; j++) {
            const int q0 = ((w[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4)) - 16;
            const int q1 = ((w[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4)) - 16;
            sumi += q0 * x[i].qs[j] + q1 * x[i].qs[j + QK / 2];
        }
        s += (float)sumi * (lk_h2f(w[i].d) * lk_h2f(x[i].d));
    }
    return s;
}

static float dot_q5_1(int64_t n, const void *vw, const void *vx) {
    const block_q5_1 *w = vw;
    const block_q8_1 *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK; i++) {
        const uint32_t qh = load_u32(w[i].qh);
        int sumi = 0;
        for (int j = 0; j < QK / 2; j++) {
            const int q0 = (w[i].qs[j] & 15) | (int)(((qh >> j) & 1) << 4);
            const int q1 = (w[i].qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1) << 4);
            sumi += q0 * x[i].qs[j] + q1 * x[i].qs[j + QK / 2];
        }
        s += (float)sumi * (lk_h2f(w[i].d) * lk_h2f(x[i].d)) + lk_h2f(w[i].m) * lk_h2f(x[i].s);
    }
    return s;
}

static float dot_q8_0(int64_t n, const void *vw, const void *vx) {
    const block_q8_0 *w = vw;
    const block_q8_0 *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK; i++) {
        int sumi = 0;
        for (int j = 0; j < QK; j++) sumi += w[i].qs[j] * x[i].qs[j];
        s += (float)sumi * (lk_h2f(w[i].d) * lk_h2f(x[i].d));
    }
    return s;
}

static float dot_q2_K(int64_t n, const void *vw, const void *vx) {
    const block_q2_K *w = vw;
    const block_q8_K *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q = w[i].qs;
        const int8_t *a = x[i].qs;
        int sumi = 0, summ = 0, is = 0;
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int h = 0; h < 2; h++, a += 16) {
                    const uint8_t sc = w[i].scales[is];
                    int sq = 0;
                    for (int k = 0; k < 16; k++) sq += ((q[16 * h + k] >> shift) & 3) * a[k];
                    sumi += (sc & 15) * sq;
                    summ += (sc >> 4) * x[i].bsums[is];
                    is++;
                }
        s += x[i].d * (lk_h2f(w[i].d) * (float)sumi - lk_h2f(w[i].dmin) * (float)summ);
    }
    return s;
}

static float dot_q3_K(int64_t n, const void *vw, const void *vx) {
    const block_q3_K *w = vw;
    const block_q8_K *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        int sc[16];
        q3_K_scales(w[i].scales, sc);
        const uint8_t *q = w[i].qs, *hm = w[i].hmask;
        const int8_t *a = x[i].qs;
        int sumi = 0, is = 0;
        uint8_t m = 1;
        for (int half = 0; half < 2; half++, q += 32)
            for (int shift = 0; shift < 8; shift += 2, m <<= 1)
                for (int h = 0; h < 2; h++, a += 16) {
                    int sq = 0;
                    for (int k = 0; k < 16; k++)
                        sq += (((q[16 * h + k] >> shift) & 3) - ((hm[16 * h + k] & m) ? 0 : 4)) * a[k];
                    sumi += sc[is++] * sq;
                }
        s += x[i].d * lk_h2f(w[i].d) * (float)sumi;
    }
    return s;
}

static float dot_q4_K(int64_t n, const void *vw, const void *vx) {
    const block_q4_K *w = vw;
    const block_q8_K *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q = w[i].qs;
        const int8_t *a = x[i].qs;
        int sumi = 0, summ = 0;
        for (int c = 0; c < 4; c++, q += 32, a += 64) {
            uint8_t sc0, m0, sc1, m1;
            lk_get_scale_min_k4(2 * c, w[i].scales, &sc0, &m0);
            lk_get_scale_min_k4(2 * c + 1, w[i].scales, &sc1, &m1);
            int s0 = 0, s1 = 0;
            for (int k = 0; k < 32; k++) {
                s0 += (q[k] & 15) * a[k];
                s1 += (q[k] >> 4) * a[k + 32];
            }
            sumi += sc0 * s0 + sc1 * s1;
            const int16_t *bs = x[i].bsums + 4 * c;
            summ += m0 * (bs[0] + bs[1]) + m1 * (bs[2] + bs[3]);
        }
        s += x[i].d * (lk_h2f(w[i].d) * (float)sumi - lk_h2f(w[i].dmin) * (float)summ);
    }
    return s;
}

static float dot_q5_K(int64_t n, const void *vw, const void *vx) {
    const block_q5_K *w = vw;
    const block_q8_K *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *q = w[i].qs, *qh = w[i].qh;
        const int8_t *a = x[i].qs;
        int sumi = 0, summ = 0;
        for (int c = 0; c < 4; c++, q += 32, a += 64) {
            uint8_t sc0, m0, sc1, m1;
            lk_get_scale_min_k4(2 * c, w[i].scales, &sc0, &m0);
            lk_get_scale_min_k4(2 * c + 1, w[i].scales, &sc1, &m1);
            int s0 = 0, s1 = 0;
            for (int k = 0; k < 32; k++) {
                s0 += ((q[k] & 15) + (((qh[k] >> (2 * c)) & 1) << 4)) * a[k];
                s1 += ((q[k] >> 4) + (((qh[k] >> (2 * c + 1)) & 1) << 4)) * a[k + 32];
            }
            sumi += sc0 * s0 + sc1 * s1;
            const int16_t *bs = x[i].bsums + 4 * c;
            summ += m0 * (bs[0] + bs[1]) + m1 * (bs[2] + bs[3]);
        }
        s += x[i].d * (lk_h2f(w[i].d) * (float)sumi - lk_h2f(w[i].dmin) * (float)summ);
    }
    return s;
}

static float dot_q6_K(int64_t n, const void *vw, const void *vx) {
    const block_q6_K *w = vw;
    const block_q8_K *x = vx;
    float s = 0.0f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const uint8_t *ql = w[i].ql, *qh = w[i].qh;
        const int8_t *sc = w[i].scales, *a = x[i].qs;
        int sumi = 0;
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, a += 128) {
            int acc[8] = {0};
            for (int k = 0; k < 32; k++) {
                const int is = k / 16;
                acc[is + 0] += (((ql[k] & 15) | (((qh[k] >> 0) & 3) << 4)) - 32) * a[k];
                acc[is + 2] += (((ql[k + 32] & 15) | (((qh[k] >> 2) & 3) << 4)) - 32) * a[k + 32];
                acc[is + 4] += (((ql[k] >> 4) | (((qh[k] >> 4) & 3) << 4)) - 32) * a[k + 64];
                acc[is + 6] += (((ql[k + 32] >> 4) | (((qh[k] >> 6) & 3) << 4)) - 32) * a[k + 96];
            }
            for (int j = 0; j < 8; j++) sumi += sc[j] * acc[j];
        }
        s += x[i].d * lk_h2f(w[i].d) * (float)sumi;
    }
    return s;
}

static void f16_to_f32_ref(const uint16_t *src, float *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = lk_h2f(src[i]);
}

static void f32_to_f16_ref(const float *src, uint16_t *dst, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = lk_f2h(src[i]);
}

static float stream_sum_ref(const float *x, int64_t n) {
    float a[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++) a[k] += x[i + k];
    for (; i < n; i++) a[0] += x[i];
    return a[0] + a[1] + a[2] + a[3] + a[4] + a[5] + a[6] + a[7];
}

/* Σ of the 16 values in ggml's order (GCC's _mm512_reduce_add_ps: halves, quarters, then pairs). */
static float ggml_reduce16(const float *v) {
    float a[8], b[4];
    for (int i = 0; i < 8; i++) a[i] = v[i + 8] + v[i];
    for (int i = 0; i < 4; i++) b[i] = a[i + 4] + a[i];
    return (b[0] + b[2]) + (b[1] + b[3]);
}

double lk_softmax_exp_ref(const float *x, float *y, int64_t n, float max) {
    double sum = 0.0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 16; k++) y[i + k] = lk_ggml_expf(x[i + k] - max);
        sum += (double)ggml_reduce16(y + i);
    }
    for (; i < n; i++) sum += (double)(y[i] = lk_ggml_expf(x[i] - max));
    return sum;
}

/* x / (1 + e^-x) with ggml's expf, as llama.cpp's SwiGLU (ggml_v_silu). */
void lk_silu_ref(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] / (1.0f + lk_ggml_expf(-x[i]));
}

LK_KERNELS(lk_scalar,
    LK_KERNEL(LK_E_DOT, LK_TYPE_F32, dot_f32),
    LK_KERNEL(LK_E_DOT, LK_TYPE_F16, dot_f16),
    LK_KERNEL(LK_E_DOT, LK_TYPE_BF16, dot_bf16),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q4_0, dot_q4_0),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q4_1, dot_q4_1),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q5_0, dot_q5_0),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q5_1, dot_q5_1),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q8_0, dot_q8_0),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q2_K, dot_q2_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q3_K, dot_q3_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q4_K, dot_q4_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q5_K, dot_q5_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q6_K, dot_q6_K),
    LK_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_0, lk_quantize_row_q8_0_ref),
    LK_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_1, lk_quantize_row_q8_1_ref),
    LK_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_K, lk_quantize_row_q8_K_ref),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_F32, dequant_f32),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_BF16, dequant_bf16),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q4_0, dequant_q4_0),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q4_1, dequant_q4_1),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q5_0, dequant_q5_0),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q5_1, dequant_q5_1),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q8_0, dequant_q8_0),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q8_1, dequant_q8_1),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q2_K, dequant_q2_K),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q3_K, dequant_q3_K),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q4_K, dequant_q4_K),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q5_K, dequant_q5_K),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q6_K, dequant_q6_K),
    LK_KERNEL(LK_E_DEQUANTIZE, LK_TYPE_Q8_K, dequant_q8_K),
    LK_KERNEL(LK_E_F16_TO_F32, LK_ANY, f16_to_f32_ref),
    LK_KERNEL(LK_E_F32_TO_F16, LK_ANY, f32_to_f16_ref),
    LK_KERNEL(LK_E_STREAM_SUM, LK_ANY, stream_sum_ref),
    LK_KERNEL(LK_E_SOFTMAX_EXP, LK_ANY, lk_softmax_exp_ref),
    LK_KERNEL(LK_E_SILU, LK_ANY, lk_silu_ref));

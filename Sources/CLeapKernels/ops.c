/* Float element-wise ops, RMSNorm, RoPE, softmax. Plain loops: -O3 vectorises the simple ones; the
 * transcendental ones (exp, tanh) are not hot next to the matmuls. */
#include "lk_dispatch.h"
#include <math.h>

void lk_rms_norm(const float *x, const float *weight, float *y, int64_t n, float eps) {
    /* ggml's arithmetic exactly (float squares summed in double, float mean and scale): an ulp of
     * difference here flips roundings in the next activation quantization. */
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    if (weight)
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale * weight[i];
    else
        for (int64_t i = 0; i < n; i++) y[i] = x[i] * scale;
}

void lk_rope(float *x, int64_t n_heads, int64_t head_stride, int64_t n_rot, int mode, float pos, float base,
             float freq_scale) {
    enum { MAX_PAIRS = 512 };
    float cs[MAX_PAIRS], sn[MAX_PAIRS];
    const int64_t half = n_rot / 2;
    if (half > MAX_PAIRS || half <= 0) return;
    /* The angles depend only on the pair index: compute them once for all heads. */
    for (int64_t i = 0; i < half; i++) {
        const double theta = (double)pos * (double)freq_scale * pow((double)base, -2.0 * (double)i / (double)n_rot);
        cs[i] = (float)cos(theta);
        sn[i] = (float)sin(theta);
    }
    for (int64_t h = 0; h < n_heads; h++) {
        float *v = x + h * head_stride;
        if (mode == LK_ROPE_NEOX) {
            for (int64_t i = 0; i < half; i++) {
                const float a = v[i], b = v[i + half];
                v[i] = a * cs[i] - b * sn[i];
                v[i + half] = b * cs[i] + a * sn[i];
            }
        } else {
            for (int64_t i = 0; i < half; i++) {
                const float a = v[2 * i], b = v[2 * i + 1];
                v[2 * i] = a * cs[i] - b * sn[i];
                v[2 * i + 1] = b * cs[i] + a * sn[i];
            }
        }
    }
}

/* x0·cos − x1·sin and x0·sin + x1·cos with the x0-products fused, as GCC compiles ggml's rotate_pairs
 * (with plain products many rotated values differ from llama.cpp's by an ulp). */
#define ROPE_ROTATE_BODY                                                                                   \
    const int64_t half = n_rot / 2, step = mode == LK_ROPE_NEOX ? 1 : 2, off = mode == LK_ROPE_NEOX ? half : 1; \
    for (int64_t h = 0; h < n_heads; h++) {                                                                \
        float *v = x + h * head_stride;                                                                    \
        for (int64_t i = 0; i < half; i++) {                                                               \
            float *a = v + i * step, *b = a + off;                                                         \
            const float x0 = *a, x1 = *b, c = cs[2 * i], s = cs[2 * i + 1];                                \
            *a = __builtin_fmaf(x0, c, -(x1 * s));                                                         \
            *b = __builtin_fmaf(x0, s, x1 * c);                                                            \
        }                                                                                                  \
    }

static void rope_rotate_ref(float *x, int64_t n_heads, int64_t head_stride, int64_t n_rot, int mode, const float *cs) {
    ROPE_ROTATE_BODY
}

#if defined(__x86_64__)
__attribute__((target("fma")))
static void rope_rotate_fma(float *x, int64_t n_heads, int64_t head_stride, int64_t n_rot, int mode, const float *cs) {
    ROPE_ROTATE_BODY
}
#endif

void lk_rope_rotate(float *x, int64_t n_heads, int64_t head_stride, int64_t n_rot, int mode, const float *cs) {
#if defined(__x86_64__)
    if (lk_cpu_features() & LK_CPU_FMA) { /* same bits, fmaf is exact either way; only faster */
        rope_rotate_fma(x, n_heads, head_stride, n_rot, mode, cs);
        return;
    }
#endif
    rope_rotate_ref(x, n_heads, head_stride, n_rot, mode, cs);
}

/* y[i] += u[i] · w[i · w_stride], fused: LFM2's short conv as GCC compiles ggml_ssm_conv's `sumf += s * c`. */
#define FMA_STRIDED_BODY for (int64_t i = 0; i < n; i++) y[i] = __builtin_fmaf(u[i], w[i * w_stride], y[i]);

static void fma_strided_ref(float *y, const float *u, const float *w, int64_t w_stride, int64_t n) { FMA_STRIDED_BODY }

#if defined(__x86_64__)
__attribute__((target("fma")))
static void fma_strided_fma(float *y, const float *u, const float *w, int64_t w_stride, int64_t n) { FMA_STRIDED_BODY }
#endif

void lk_fma_strided(float *y, const float *u, const float *w, int64_t w_stride, int64_t n) {
#if defined(__x86_64__)
    if (lk_cpu_features() & LK_CPU_FMA) { /* same bits as the libm fmaf of the reference, without a call each */
        fma_strided_fma(y, u, w, w_stride, n);
        return;
    }
#endif
    fma_strided_ref(y, u, w, w_stride, n);
}

void lk_softmax(float *x, int64_t n) {
    if (n <= 0) return;
    float max = x[0];
    for (int64_t i = 1; i < n; i++) max = x[i] > max ? x[i] : max;
    if (max == -INFINITY) { /* everything masked: define the result as uniform rather than NaN */
        for (int64_t i = 0; i < n; i++) x[i] = 1.0f / (float)n;
        return;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = expf(x[i] - max);
        sum += x[i];
    }
    const float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

double lk_softmax_exp(const float *x, float *y, int64_t n, float max) { return lk_kernels()->softmax_exp(x, y, n, max); }

void lk_silu(const float *x, float *y, int64_t n) { lk_kernels()->silu(x, y, n); }

void lk_gelu_tanh(const float *x, float *y, int64_t n) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + tanhf(sqrt_2_over_pi * v * (1.0f + coef_a * v * v)));
    }
}

void lk_gelu_erf(const float *x, float *y, int64_t n) {
    const float sqrt_2_inv = 0.70710678118654752440084436210484f;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = 0.5f * v * (1.0f + erff(v * sqrt_2_inv));
    }
}

void lk_layer_norm(const float *x, const float *weight, const float *bias, float *y, int64_t n, float eps) {
    /* ggml_norm, then ggml_mul and ggml_add as separate ops (two roundings, no fused multiply-add). */
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)x[i];
    const float mean = (float)(sum / (double)n);
    double sum2 = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i] - mean;
        y[i] = v;
        sum2 += (double)(v * v);
    }
    const float variance = (float)(sum2 / (double)n);
    const float scale = 1.0f / sqrtf(variance + eps);
    for (int64_t i = 0; i < n; i++) y[i] *= scale;
    if (weight)
        for (int64_t i = 0; i < n; i++) y[i] *= weight[i];
    if (bias)
        for (int64_t i = 0; i < n; i++) y[i] += bias[i];
}

void lk_mul(const float *a, const float *b, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] * b[i];
}

void lk_add(const float *a, const float *b, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = a[i] + b[i];
}

void lk_scale(const float *x, float s, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s;
}

float lk_scale_max(float *x, float s, int64_t n) {
    float m[8]; /* 8 running maxima, so the loop vectorizes (a max is exact in any order) */
    for (int j = 0; j < 8; j++) m[j] = -INFINITY;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            const float v = x[i + j] * s;
            x[i + j] = v;
            m[j] = v > m[j] ? v : m[j];
        }
    for (; i < n; i++) {
        const float v = x[i] * s;
        x[i] = v;
        m[0] = v > m[0] ? v : m[0];
    }
    float r = m[0];
    for (int j = 1; j < 8; j++) r = m[j] > r ? m[j] : r;
    return r;
}

void lk_axpy_f16(int64_t n, float a, const uint16_t *v, float *y) {
    for (int64_t i = 0; i < n; i++) y[i] += a * lk_h2f(v[i]);
}

/* ggml's GGML_GELU_FP16: the gate's f16 bits index a 65536-entry table of gelu values (exact ends beyond
 * ±10), times the up projection. The f16 conversion runs through the SIMD row converter in 256-value steps. */
void lk_gelu_table_mul(const float *table, const float *g, const float *u, float *y, int64_t n) {
    enum { STEP = 256 };
    uint16_t h[STEP];
    for (int64_t i0 = 0; i0 < n; i0 += STEP) {
        const int64_t m = n - i0 < STEP ? n - i0 : STEP;
        lk_f32_to_f16_row(g + i0, h, m);
        for (int64_t i = 0; i < m; i++) {
            const float x = g[i0 + i];
            const float a = x <= -10.0f ? 0.0f : x >= 10.0f ? x : table[h[i]];
            y[i0 + i] = a * u[i0 + i];
        }
    }
}

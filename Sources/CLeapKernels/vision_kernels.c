/* Element-wise kernels of the vision encoder: ggml's table GELU and the row softmax of attention scores. */
#include "leap_kernels.h"
#include "leap_vision_kernels.h"
#include <math.h>

void lk_gelu_f16_table_fill(float *table) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
    for (int h = 0; h < 65536; h++) {
        const float x = lk_f16_to_f32((uint16_t)h);
        /* 1 + a·x·x fused, as GCC compiles ggml_gelu_f32 */
        const float g = 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * fmaf(coef_a * x, x, 1.0f)));
        table[h] = lk_f16_to_f32(lk_f32_to_f16(g));
    }
}

void lk_gelu_f16_table(const float *table, const float *x, float *y, int64_t n) {
    enum { STEP = 256 };
    uint16_t h[STEP];
    for (int64_t i0 = 0; i0 < n; i0 += STEP) {
        const int64_t m = n - i0 < STEP ? n - i0 : STEP;
        lk_f32_to_f16_row(x + i0, h, m);
        for (int64_t i = 0; i < m; i++) {
            const float v = x[i0 + i];
            y[i0 + i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : table[h[i]];
        }
    }
}

void lk_softmax_rows_scaled(float *x, int64_t rows, int64_t n, int64_t stride, float scale) {
    enum { LANES = 16 };
    for (int64_t r = 0; r < rows; r++) {
        float *row = x + r * stride;
        float lane_max[LANES];
        for (int k = 0; k < LANES; k++) lane_max[k] = -INFINITY;
        int64_t i = 0;
        for (; i + LANES <= n; i += LANES)
            for (int k = 0; k < LANES; k++) {
                const float v = row[i + k] * scale;
                row[i + k] = v;
                lane_max[k] = v > lane_max[k] ? v : lane_max[k];
            }
        float max = -INFINITY;
        for (; i < n; i++) {
            row[i] *= scale;
            max = row[i] > max ? row[i] : max;
        }
        for (int k = 0; k < LANES; k++) max = lane_max[k] > max ? lane_max[k] : max;
        const double sum = lk_softmax_exp(row, row, n, max);
        const float inv = (float)(1.0 / sum);
        for (i = 0; i < n; i++) row[i] *= inv;
    }
}

/* ---- lk_vision_gemm ------------------------------------------------------------------------------ */
/* A panel of 32 weight rows is packed column-major as floats (panel[c][r]); each step then multiplies it
 * with a block of up to 12 tokens: per column, two vectors of 16 rows times 12 broadcast activations, 24
 * accumulators in registers. */
#include <stdlib.h>
#include <string.h>

enum { VG_ROWS = 32, VG_TOKENS = 12 };

static void vg_pack(int w_type, const uint8_t *w, size_t wrb, int64_t cols, int64_t r0, int nr, float *panel) {
    for (int r = 0; r < VG_ROWS; r++) {
        if (r >= nr) {
            for (int64_t c = 0; c < cols; c++) panel[c * VG_ROWS + r] = 0.0f;
            continue;
        }
        const uint8_t *row = w + (size_t)(r0 + r) * wrb;
        if (w_type == LK_TYPE_F16) {
            const uint16_t *h = (const uint16_t *)row;
            for (int64_t c = 0; c < cols; c++) panel[c * VG_ROWS + r] = lk_f16_to_f32(h[c]);
        } else {
            const float *f = (const float *)row;
            for (int64_t c = 0; c < cols; c++) panel[c * VG_ROWS + r] = f[c];
        }
    }
}

static void vg_block_portable(const float *panel, int64_t cols, const float *x, int64_t xs, int nt, float *y,
                              int64_t ys, int nr) {
    float acc[VG_TOKENS][VG_ROWS];
    memset(acc, 0, sizeof acc);
    for (int64_t c = 0; c < cols; c++) {
        const float *pw = panel + c * VG_ROWS;
        for (int t = 0; t < nt; t++) {
            const float xv = x[t * xs + c];
            for (int r = 0; r < VG_ROWS; r++) acc[t][r] += pw[r] * xv;
        }
    }
    for (int t = 0; t < nt; t++)
        for (int r = 0; r < nr; r++) y[t * ys + r] = acc[t][r];
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx512f,fma"))) static void vg_block_avx512(const float *panel, int64_t cols,
                                                                   const float *x, int64_t xs, int nt, float *y,
                                                                   int64_t ys, int nr) {
    __m512 a0[VG_TOKENS], a1[VG_TOKENS];
    for (int t = 0; t < VG_TOKENS; t++) a0[t] = a1[t] = _mm512_setzero_ps();
    if (nt == VG_TOKENS) {
        for (int64_t c = 0; c < cols; c++) {
            const __m512 w0 = _mm512_load_ps(panel + c * VG_ROWS), w1 = _mm512_load_ps(panel + c * VG_ROWS + 16);
            for (int t = 0; t < VG_TOKENS; t++) {
                const __m512 xv = _mm512_set1_ps(x[t * xs + c]);
                a0[t] = _mm512_fmadd_ps(w0, xv, a0[t]);
                a1[t] = _mm512_fmadd_ps(w1, xv, a1[t]);
            }
        }
    } else {
        for (int64_t c = 0; c < cols; c++) {
            const __m512 w0 = _mm512_load_ps(panel + c * VG_ROWS), w1 = _mm512_load_ps(panel + c * VG_ROWS + 16);
            for (int t = 0; t < nt; t++) {
                const __m512 xv = _mm512_set1_ps(x[t * xs + c]);
                a0[t] = _mm512_fmadd_ps(w0, xv, a0[t]);
                a1[t] = _mm512_fmadd_ps(w1, xv, a1[t]);
            }
        }
    }
    const __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    for (int t = 0; t < nt; t++) {
        _mm512_mask_storeu_ps(y + t * ys, m0, a0[t]);
        _mm512_mask_storeu_ps(y + t * ys + 16, m1, a1[t]);
    }
}
#endif

int lk_vision_gemm(int w_type, const void *w, size_t w_row_bytes, int64_t cols, const float *x, int64_t x_stride,
                   int64_t n_tokens, float *y, int64_t y_stride, int64_t row_begin, int64_t row_end) {
    if (w_type != LK_TYPE_F32 && w_type != LK_TYPE_F16) return 0;
    if (row_end <= row_begin || n_tokens <= 0 || cols <= 0) return 1;
    float *panel = aligned_alloc(64, (size_t)cols * VG_ROWS * sizeof(float));
    if (!panel) return 0;
    void (*block)(const float *, int64_t, const float *, int64_t, int, float *, int64_t, int) = vg_block_portable;
#if defined(__x86_64__)
    const int isa = lk_get_isa();
    if (isa == LK_ISA_AVX512 || isa == LK_ISA_AVX512_NOVNNI) block = vg_block_avx512;
#endif
    for (int64_t r0 = row_begin; r0 < row_end; r0 += VG_ROWS) {
        const int nr = row_end - r0 < VG_ROWS ? (int)(row_end - r0) : VG_ROWS;
        vg_pack(w_type, w, w_row_bytes, cols, r0, nr, panel);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += VG_TOKENS) {
            const int nt = n_tokens - t0 < VG_TOKENS ? (int)(n_tokens - t0) : VG_TOKENS;
            block(panel, cols, x + t0 * x_stride, x_stride, nt, y + t0 * y_stride + r0, y_stride, nr);
        }
    }
    free(panel);
    return 1;
}

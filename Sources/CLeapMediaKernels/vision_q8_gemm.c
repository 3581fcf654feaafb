/* The encoders' Q8_0 matrix product on packed operands (leap_vision_kernels.h), for AVX2 without VNNI, and for
 * arm64 with the dot-product instructions (its layout below the AVX2 one's, int8 operands for sdot).
 *
 * y[t, r] = bias[r] + Σ_b (d_rb·dx_tb) · isum_trb, block after block from 0, with isum_trb the exact integer
 * sum of the block's 32 products w·x (the order of x86/avx2/prefill.c's Q8_0 gemm: the same float steps, so the
 * same results). The activations are the Q8_0 blocks ggml's quantize_row_q8_0 makes, widened to s16.
 *
 * There a block costs, per 8 rows and token, 8 x (vpsignb, vpmaddubsw, vpmaddwd) on the two vector multiply
 * pipes of a CPU with two (vpsignb shares them). Here both operands are s16 and vpmaddwd alone multiplies: 16 x
 * vpmaddwd per 8 rows and token and block, two multiply pipe uops per 32 products instead of three.
 *
 * Weights: panels of 16 rows; per block, the 16 rows' scales d (floats), then 16 groups of two vectors (rows
 * 0-7, rows 8-15), s32 lane r of a vector = the s16 pair (w[r, 2g], w[r, 2g + 1]); rows past the end zero.
 * Activations: per token, the nb blocks' 32 s16 values, then their nb scales dx (floats).
 * Register tile 16 rows x 3 tokens: 6 float accumulators and 6 s32 block sums; per group two weight loads,
 * three broadcasts, six vpmaddwd. Blocks are taken KB at a time (a panel's 26 KB in L1) over a chunk of
 * tokens (in L2), the float sums carried in a buffer between them. */
#include "leap_kernels.h"
#include "leap_vision_kernels.h"
#include "leap_kernel_support.h"
#include <string.h>

#if defined(__aarch64__)
/* arm64 (NEON with the dot-product instructions): the same products and float steps on int8 operands, for
 * sdot by element. Weights: per block the 16 rows' scales d (floats), then 32 vectors, vector 4k + q holding
 * group k (elements 4k..4k+3) of rows 4q..4q+3, lane r the 4 bytes of row 4q + r. Activations: per token the
 * nb blocks' 32 int8 values, then their nb scales dx (floats). Per block and token: 32 sdot, each lane of
 * the token's 16 bytes (one group) against 4 rows; the 16 rows' sums in four vectors. */
enum {
    QR = LK_VQ8_PANEL_ROWS, /* rows per panel */
    WB = QR * 4 + QR * QK,  /* bytes of a panel's block: 16 scales, 16 rows x 32 int8 */
    XB = QK + 4,            /* bytes of a token's block: 32 int8 and its scale */
    NT = 2,                 /* tokens per pass */
    X_CHUNK_BYTES = 256 * 1024, /* activations of a token chunk (in L2) */
};
#else
enum {
    QR = LK_VQ8_PANEL_ROWS, /* rows per panel */
    NG = QK / 2,            /* s16 pairs (groups) per block */
    WB = QR * 4 + NG * QR * 4, /* bytes of a panel's block: 16 scales, 16 groups x 16 rows x 2 s16 */
    XB = QK * 2 + 4,        /* bytes of a token's block: 32 s16 and its scale */
    NT = 3,                 /* tokens per pass */
    KB = 24,                /* blocks per pass (a panel's 26 KB in L1) */
    X_CHUNK_BYTES = 256 * 1024, /* activations of a token chunk (in L2) */
};
#endif

static int64_t panels_of(int64_t rows) { return (rows + QR - 1) / QR; }

size_t lk_vq8_packed_weight_bytes(int64_t rows, int64_t cols) { return (size_t)panels_of(rows) * (size_t)(cols / QK) * WB; }

int lk_vq8_pack_weights(const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *packed, int64_t panel_begin,
                        int64_t panel_end) {
    if (cols % QK != 0) return 0;
    const int64_t nb = cols / QK;
    for (int64_t p = panel_begin; p < panel_end; p++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *dst = (uint8_t *)packed + (size_t)(p * nb + b) * WB;
            float d[QR];
#if defined(__aarch64__)
            int8_t vals[QK / 4][QR][4]; /* [group][row][element]: vector 4k + q is vals[k][4q..4q + 3] */
#else
            int16_t vals[NG][QR][2]; /* [group][row][element] */
#endif
            const int per_group = (int)(sizeof vals[0][0] / sizeof vals[0][0][0]);
            for (int r = 0; r < QR; r++) {
                const int64_t row = p * QR + r;
                const block_q8_0 *blk = row < rows ? (const block_q8_0 *)((const uint8_t *)w + (size_t)row * w_row_bytes) + b : NULL;
                d[r] = blk ? lk_f16_to_f32(blk->d) : 0.0f;
                for (int g = 0; g < QK / per_group; g++)
                    for (int e = 0; e < per_group; e++) vals[g][r][e] = blk ? blk->qs[per_group * g + e] : 0;
            }
            memcpy(dst, d, sizeof d);
            memcpy(dst + sizeof d, vals, sizeof vals);
        }
    return 1;
}

size_t lk_vq8_packed_x_bytes(int64_t n_tokens, int64_t cols) { return (size_t)n_tokens * (size_t)(cols / QK) * XB; }

void lk_vq8_pack_x(const float *x, int64_t x_stride, int64_t cols, void *xp, int64_t token_begin, int64_t token_end) {
    enum { STEP = 64 };
    const int64_t nb = cols / QK;
    block_q8_0 q[STEP];
    for (int64_t t = token_begin; t < token_end; t++) {
        uint8_t *row = (uint8_t *)xp + (size_t)t * (size_t)nb * XB;
#if defined(__aarch64__)
        int8_t *vals = (int8_t *)row;                   /* [nb][32] */
#else
        int16_t *vals = (int16_t *)row;                 /* [nb][32] */
#endif
        uint8_t *scales = row + (size_t)nb * QK * sizeof *vals; /* [nb] floats */
        for (int64_t b0 = 0; b0 < nb; b0 += STEP) {
            const int64_t n = nb - b0 < STEP ? nb - b0 : STEP;
            lk_quantize_row_q8_0(x + t * x_stride + b0 * QK, q, n * QK);
            for (int64_t b = 0; b < n; b++) {
                for (int i = 0; i < QK; i++) vals[(b0 + b) * QK + i] = q[b].qs[i];
                const float dx = lk_f16_to_f32(q[b].d);
                memcpy(scales + (b0 + b) * 4, &dx, 4);
            }
        }
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#include "media_inline.h"

/* nt tokens (rows of xp from x, xrb bytes apart) x blocks [b0, b0 + kb) of one panel: acc ([nt][16] floats)
 * (+)= Σ_b (d·dx)·isum, from 0 when b0 == 0. */
INLINE void pass_tokens(const uint8_t *panel, int64_t b0, int64_t kb, const uint8_t *x, size_t xrb, int64_t nb, float *acc,
                        const int nt) {
    __m256 lo[NT], hi[NT];
    for (int j = 0; j < nt; j++) {
        lo[j] = b0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + j * QR);
        hi[j] = b0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + j * QR + 8);
    }
    const float *dxs = (const float *)(x + (size_t)nb * QK * 2);
    for (int64_t b = b0; b < b0 + kb; b++) {
        const uint8_t *wb = panel + (size_t)b * WB + QR * 4;
        const uint8_t *xb = x + (size_t)b * QK * 2;
        __m256i slo[NT], shi[NT];
        for (int j = 0; j < nt; j++) slo[j] = shi[j] = _mm256_setzero_si256();
        for (int g = 0; g < NG; g++) {
            const __m256i w0 = _mm256_load_si256((const __m256i *)(wb + g * 64));
            const __m256i w1 = _mm256_load_si256((const __m256i *)(wb + g * 64 + 32));
            for (int j = 0; j < nt; j++) {
                const __m256i xv = _mm256_set1_epi32(lk_load_i32(xb + (size_t)j * xrb + 4 * g));
                slo[j] = _mm256_add_epi32(slo[j], _mm256_madd_epi16(w0, xv));
                shi[j] = _mm256_add_epi32(shi[j], _mm256_madd_epi16(w1, xv));
            }
        }
        const __m256 d0 = _mm256_load_ps((const float *)(panel + (size_t)b * WB));
        const __m256 d1 = _mm256_load_ps((const float *)(panel + (size_t)b * WB + 32));
        for (int j = 0; j < nt; j++) {
            const __m256 dx = _mm256_set1_ps(dxs[(size_t)j * (xrb / 4) + b]);
            lo[j] = _mm256_fmadd_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(slo[j]), lo[j]);
            hi[j] = _mm256_fmadd_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(shi[j]), hi[j]);
        }
    }
    for (int j = 0; j < nt; j++) {
        _mm256_storeu_ps(acc + j * QR, lo[j]);
        _mm256_storeu_ps(acc + j * QR + 8, hi[j]);
    }
}

static void gemm_avx2(const uint8_t *packed, int64_t nb, const uint8_t *xp, int64_t n_tokens, const float *bias, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end, float *acc, int64_t chunk) {
    const size_t xrb = (size_t)nb * XB;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xp + (size_t)t0 * xrb;
        for (int64_t r0 = row_begin; r0 < row_end; r0 += QR) {
            const int nr = row_end - r0 < QR ? (int)(row_end - r0) : QR;
            const uint8_t *panel = packed + (size_t)(r0 / QR) * (size_t)nb * WB;
            for (int64_t b0 = 0; b0 < nb; b0 += KB) {
                const int64_t kb = nb - b0 < KB ? nb - b0 : KB;
                int64_t t = 0;
                for (; t + NT <= nt; t += NT) pass_tokens(panel, b0, kb, xc + t * xrb, xrb, nb, acc + t * QR, NT);
                if (nt - t == 2) pass_tokens(panel, b0, kb, xc + t * xrb, xrb, nb, acc + t * QR, 2);
                if (nt - t == 1) pass_tokens(panel, b0, kb, xc + t * xrb, xrb, nb, acc + t * QR, 1);
            }
            for (int64_t t = 0; t < nt; t++) {
                float *yt = y + (t0 + t) * ys + r0;
                const float *a = acc + t * QR;
                if (bias)
                    for (int r = 0; r < nr; r++) yt[r] = a[r] + bias[r0 + r];
                else
                    memcpy(yt, a, (size_t)nr * sizeof(float));
            }
        }
    }
}

#pragma clang attribute pop
#endif


#if defined(__aarch64__)
#include <arm_neon.h>
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)

/* Group k = 4·H + K of every token's block (xv[t]: its 16 bytes of half H) into the four row sums of s */
#define GROUP_DOTS(H, K)                                                                                     \
    {                                                                                                        \
        const int8_t *wk = wb + (4 * (H) + (K)) * 64;                                                        \
        const int8x16_t w0 = vld1q_s8(wk), w1 = vld1q_s8(wk + 16), w2 = vld1q_s8(wk + 32), w3 = vld1q_s8(wk + 48); \
        for (int t = 0; t < nt; t++) {                                                                       \
            s[t][0] = vdotq_laneq_s32(s[t][0], w0, xv[t], K), s[t][1] = vdotq_laneq_s32(s[t][1], w1, xv[t], K); \
            s[t][2] = vdotq_laneq_s32(s[t][2], w2, xv[t], K), s[t][3] = vdotq_laneq_s32(s[t][3], w3, xv[t], K); \
        }                                                                                                    \
    }

/* nt (1, NT) tokens (rows of xp from x, xrb bytes apart) x every block of one panel: y[t·ys + r] (r < nr) =
 * bias + Σ_b (d·dx)·isum, the float steps of x86's pass_tokens */
static inline void pass_neon(const uint8_t *panel, int64_t nb, const uint8_t *x, size_t xrb, const int nt,
                             const float *bias, float *y, int64_t ys, int nr) {
    float32x4_t acc[NT][4];
    for (int t = 0; t < nt; t++)
        for (int q = 0; q < 4; q++) acc[t][q] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *wb = (const int8_t *)(panel + (size_t)b * WB + QR * 4);
        int32x4_t s[NT][4];
        for (int t = 0; t < nt; t++)
            for (int q = 0; q < 4; q++) s[t][q] = vdupq_n_s32(0);
        int8x16_t xv[NT];
        for (int t = 0; t < nt; t++) xv[t] = vld1q_s8((const int8_t *)(x + (size_t)t * xrb + (size_t)b * QK));
        GROUP_DOTS(0, 0) GROUP_DOTS(0, 1) GROUP_DOTS(0, 2) GROUP_DOTS(0, 3)
        for (int t = 0; t < nt; t++) xv[t] = vld1q_s8((const int8_t *)(x + (size_t)t * xrb + (size_t)b * QK + 16));
        GROUP_DOTS(1, 0) GROUP_DOTS(1, 1) GROUP_DOTS(1, 2) GROUP_DOTS(1, 3)
        const float *d = (const float *)(panel + (size_t)b * WB);
        for (int t = 0; t < nt; t++) {
            const float dx = ((const float *)(x + (size_t)t * xrb + (size_t)nb * QK))[b];
            for (int q = 0; q < 4; q++)
                acc[t][q] = vfmaq_f32(acc[t][q], vcvtq_f32_s32(s[t][q]), vmulq_n_f32(vld1q_f32(d + 4 * q), dx));
        }
    }
    for (int t = 0; t < nt; t++) {
        float a[QR];
        for (int q = 0; q < 4; q++) vst1q_f32(a + 4 * q, acc[t][q]);
        for (int r = 0; r < nr; r++) y[t * ys + r] = bias ? a[r] + bias[r] : a[r];
    }
}

/* Token chunks (in L2) x panels x token pairs */
static void gemm_neon(const uint8_t *packed, int64_t nb, const uint8_t *xp, int64_t n_tokens, const float *bias, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    const size_t xrb = (size_t)nb * XB;
    const int64_t chunk = X_CHUNK_BYTES / (int64_t)xrb > NT ? X_CHUNK_BYTES / (int64_t)xrb : NT;
    for (int64_t c0 = 0; c0 < n_tokens; c0 += chunk) {
        const int64_t c1 = n_tokens - c0 < chunk ? n_tokens : c0 + chunk;
        for (int64_t r0 = row_begin; r0 < row_end; r0 += QR) {
            const int nr = row_end - r0 < QR ? (int)(row_end - r0) : QR;
            const uint8_t *panel = packed + (size_t)(r0 / QR) * (size_t)nb * WB;
            for (int64_t t = c0; t < c1; t += NT) {
                const uint8_t *xt = xp + (size_t)t * xrb;
                const float *bt = bias ? bias + r0 : NULL;
                if (c1 - t >= NT) pass_neon(panel, nb, xt, xrb, NT, bt, y + t * ys + r0, ys, nr);
                else pass_neon(panel, nb, xt, xrb, 1, bt, y + t * ys + r0, ys, nr);
            }
        }
    }
}

#pragma clang attribute pop
#endif

int lk_vq8_available(void) {
#if defined(__x86_64__)
    return lk_get_isa() == LK_ISA_AVX2;
#elif defined(__aarch64__)
    return lk_get_isa() == LK_ISA_NEON_DOTPROD || lk_get_isa() == LK_ISA_NEON_I8MM;
#else
    return 0;
#endif
}

int lk_vq8_gemm_packed(const void *packed, int64_t cols, const void *xp, int64_t n_tokens, const float *bias, float *y,
                       int64_t y_stride, int64_t row_begin, int64_t row_end) {
    if (!lk_vq8_available() || cols % QK != 0 || row_begin % QR != 0) return 0;
    if (row_end <= row_begin || n_tokens <= 0 || cols <= 0) return 1;
#if defined(__x86_64__)
    const int64_t nb = cols / QK;
    int64_t chunk = X_CHUNK_BYTES / (nb * XB);
    chunk = chunk < 4 * NT ? 4 * NT : chunk > 64 * NT ? 64 * NT : chunk / NT * NT;
    float *acc = lk_scratch((size_t)chunk * QR * sizeof(float)); /* [chunk][16] */
    if (!acc) return 0;
    gemm_avx2(packed, nb, xp, n_tokens, bias, y, y_stride, row_begin, row_end, acc, chunk);
    return 1;
#elif defined(__aarch64__)
    gemm_neon(packed, cols / QK, xp, n_tokens, bias, y, y_stride, row_begin, row_end);
    return 1;
#else
    (void)packed, (void)xp, (void)bias, (void)y, (void)y_stride;
    return 0;
#endif
}

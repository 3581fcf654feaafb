/* The encoders' float matrix product on packed operands (leap_vision_kernels.h).
 *
 * Weights: panels of 32 rows, each stored column-major ([cols][32], rows past the matrix's end as zeros), in
 * F32 or F16, packed once. Activations: blocks of 12 tokens, each stored [cols][12] (tokens past the end as
 * zeros), packed per product. The product walks the panels in stripes (up to STRIPE panels, as many as a
 * quarter of the L2 holds as floats), then the columns in chunks of KC, then the token blocks in groups of
 * GROUP: each panel of the stripe meets the group's blocks in turn, 32 rows x 12 tokens of float accumulators
 * in registers (24 zmm), each column two vector loads, twelve broadcasts and 24 FMAs (AVX-512; AVX2 runs the
 * tile as four 16-row x 6-token quarters, 12 ymm accumulators each, and arm64 NEON the same quarters in 24 of
 * its registers). A panel's chunk (32 KB as floats) stays in L1 or close while the group's blocks pass, the
 * group's chunk of tokens (192 KB) in L2 while every panel of the stripe passes over it: the chunk of all
 * tokens would come from L3 for each panel. F16 chunks are converted to floats once per chunk for the whole
 * stripe (into a buffer that stays in L2), not once per group: the F16 weights come from L3 or memory, and
 * converting them again for each group cost a few percent of the product. */
#include "leap_kernels.h"
#include "leap_vision_kernels.h"
#include "leap_kernel_support.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


enum { ROWS = LK_VG_PANEL_ROWS, TOKENS = LK_VG_BLOCK_TOKENS, KC = 256, GROUP = 16, STRIPE = 16 };

static int64_t panels_of(int64_t rows) { return (rows + ROWS - 1) / ROWS; }

/* Panels per stripe: a quarter of this core's L2 of F32 panel chunks (32 KB each), 1 to STRIPE (4 when the
 * C library does not say). */
static int64_t stripe_panels(void) {
    static int64_t panels; /* 0 until computed; every thread computes the same value */
    int64_t n = __atomic_load_n(&panels, __ATOMIC_RELAXED);
    if (n) return n;
    n = 4;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    if (l2 > 0) n = l2 / 4 / (KC * ROWS * (long)sizeof(float));
#endif
    n = n < 1 ? 1 : n > STRIPE ? STRIPE : n;
    __atomic_store_n(&panels, n, __ATOMIC_RELAXED);
    return n;
}

size_t lk_vg_packed_weight_bytes(int w_type, int64_t rows, int64_t cols) {
    const size_t elem = w_type == LK_TYPE_F16 ? 2 : 4;
    return (size_t)panels_of(rows) * ROWS * (size_t)cols * elem;
}

int lk_vg_pack_weights(int w_type, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *packed,
                       int64_t panel_begin, int64_t panel_end) {
    if (w_type != LK_TYPE_F32 && w_type != LK_TYPE_F16) return 0;
    for (int64_t p = panel_begin; p < panel_end; p++) {
        for (int r = 0; r < ROWS; r++) {
            const int64_t row = p * ROWS + r;
            const uint8_t *src = (const uint8_t *)w + (size_t)row * w_row_bytes;
            if (w_type == LK_TYPE_F16) {
                uint16_t *dst = (uint16_t *)packed + (size_t)p * ROWS * cols + r;
                const uint16_t *h = (const uint16_t *)src;
                for (int64_t c = 0; c < cols; c++) dst[c * ROWS] = row < rows ? h[c] : 0;
            } else {
                float *dst = (float *)packed + (size_t)p * ROWS * cols + r;
                const float *f = (const float *)src;
                for (int64_t c = 0; c < cols; c++) dst[c * ROWS] = row < rows ? f[c] : 0.0f;
            }
        }
    }
    return 1;
}

void lk_vg_pack_weights_transposed(const float *wt, int64_t wt_stride, int64_t rows, int64_t cols, float *packed) {
    for (int64_t p = 0; p < panels_of(rows); p++) {
        const int64_t r0 = p * ROWS, nr = rows - r0 < ROWS ? rows - r0 : ROWS;
        float *dst = packed + (size_t)p * ROWS * cols;
        for (int64_t c = 0; c < cols; c++) {
            memcpy(dst + c * ROWS, wt + c * wt_stride + r0, (size_t)nr * sizeof(float));
            for (int64_t r = nr; r < ROWS; r++) dst[c * ROWS + r] = 0.0f;
        }
    }
}

size_t lk_vg_packed_x_floats(int64_t n_tokens, int64_t cols) {
    return (size_t)((n_tokens + TOKENS - 1) / TOKENS) * TOKENS * (size_t)cols;
}

static void pack_x_portable(const float *x, int64_t x_stride, int64_t n_tokens, int64_t cols, int round_f16, float *xp,
                            int64_t block_begin, int64_t block_end) {
    enum { STEP = 64 };
    uint16_t h[STEP];
    float rounded[STEP];
    for (int64_t b = block_begin; b < block_end; b++) {
        float *block = xp + (size_t)b * TOKENS * cols;
        for (int64_t c0 = 0; c0 < cols; c0 += STEP) {
            const int64_t m = cols - c0 < STEP ? cols - c0 : STEP;
            float *dst = block + c0 * TOKENS;
            for (int t = 0; t < TOKENS; t++) {
                const int64_t token = b * TOKENS + t;
                if (token >= n_tokens) {
                    for (int64_t c = 0; c < m; c++) dst[c * TOKENS + t] = 0.0f;
                    continue;
                }
                const float *s = x + token * x_stride + c0;
                if (round_f16) {
                    lk_f32_to_f16_row(s, h, m);
                    lk_f16_to_f32_row(h, rounded, m);
                    s = rounded;
                }
                for (int64_t c = 0; c < m; c++) dst[c * TOKENS + t] = s[c];
            }
        }
    }
}

#if defined(__x86_64__)
/* Columns [c0, cols) of token block b, one value at a time (the vector packings' last columns). */
static void pack_x_columns(const float *x, int64_t x_stride, int64_t n_tokens, int64_t cols, int64_t c0, int round_f16,
                           float *block, int64_t b) {
    for (int t = 0; t < TOKENS; t++) {
        const int64_t token = b * TOKENS + t;
        for (int64_t c = c0; c < cols; c++) {
            float v = token < n_tokens ? x[token * x_stride + c] : 0.0f;
            if (round_f16 && token < n_tokens) v = lk_f16_to_f32(lk_f32_to_f16(v));
            block[c * TOKENS + t] = v;
        }
    }
}
#endif

/* One 32-row x 12-token tile over `kc` columns: panel [kc][32], column c of the tokens at xb + c * xcs (12
 * floats, one per token; those of tokens >= nt are read but not used). The accumulators start from Y
 * (accumulate), from the bias, or from zero; rows >= nr and tokens >= nt are not stored. */
static void tile_portable(const float *panel, const float *xb, int64_t xcs, int64_t kc, float *y, int64_t ys, int nt,
                          int nr, int accumulate, const float *bias) {
    float acc[TOKENS][ROWS];
    for (int t = 0; t < TOKENS; t++)
        for (int r = 0; r < ROWS; r++)
            acc[t][r] = accumulate && t < nt && r < nr ? y[t * ys + r] : bias && r < nr ? bias[r] : 0.0f;
    for (int64_t c = 0; c < kc; c++)
        for (int t = 0; t < TOKENS; t++)
            for (int r = 0; r < ROWS; r++) acc[t][r] += panel[c * ROWS + r] * xb[c * xcs + t];
    for (int t = 0; t < nt; t++)
        for (int r = 0; r < nr; r++) y[t * ys + r] = acc[t][r];
}

static void exp_columns_portable(float *x, int64_t rows, int64_t n, int64_t stride, float scale, float *inv_sums) {
    for (int64_t j = 0; j < n; j++) {
        float max = -INFINITY;
        for (int64_t i = 0; i < rows; i++) max = fmaxf(max, x[i * stride + j]);
        max *= scale;
        float sum = 0.0f;
        for (int64_t i = 0; i < rows; i++) sum += x[i * stride + j] = expf(scale * x[i * stride + j] - max);
        inv_sums[j] = 1.0f / sum;
    }
}

static void widen_portable(const uint16_t *h, float *f, int64_t n) { lk_f16_to_f32_row(h, f, n); }

/* A 32 x 12 tile (tile_portable's arguments) as the 16-row x 6-token quarters of QUARTER (same arguments).
 * A whole tile passes the quarters' sizes as constants: where QUARTER is inlined its masks and partial
 * stores fold away and its accumulators stay in registers to their stores; the matrices' edges pass
 * what is left. */
#define TILE_OF_QUARTERS(NAME, QUARTER)                                                                      \
    static void NAME(const float *panel, const float *xb, int64_t xcs, int64_t kc, float *y, int64_t ys, int nt, \
                     int nr, int accumulate, const float *bias) {                                            \
        if (nt == TOKENS && nr == ROWS) {                                                                    \
            for (int t0 = 0; t0 < TOKENS; t0 += 6)                                                           \
                for (int r0 = 0; r0 < ROWS; r0 += 16)                                                        \
                    QUARTER(panel + r0, xb + t0, xcs, kc, y + t0 * ys + r0, ys, 6, 16, accumulate,           \
                            bias ? bias + r0 : NULL);                                                        \
            return;                                                                                          \
        }                                                                                                    \
        for (int t0 = 0; t0 < nt; t0 += 6)                                                                   \
            for (int r0 = 0; r0 < nr; r0 += 16)                                                              \
                QUARTER(panel + r0, xb + t0, xcs, kc, y + t0 * ys + r0, ys, nt - t0, nr - r0, accumulate,    \
                        bias ? bias + r0 : NULL);                                                            \
    }

#if defined(__x86_64__)
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

/* The AVX2 tile: 16 ymm registers hold 16 rows x 6 tokens of accumulators (12), the panel's two 8-row
 * vectors and a broadcast token value, so a 32 x 12 tile runs as four 16 x 6 quarters, each over all kc
 * columns (the panel chunk and the token block stay in L1). Each column: two loads, six broadcasts and
 * twelve independent FMAs. Always inlined, so that a whole tile's constant sizes fold its masks away. */
static inline __attribute__((always_inline)) void quarter_avx2(const float *panel, const float *xb, int64_t xcs, int64_t kc, float *y, int64_t ys,
                                int nt, int nr, int accumulate, const float *bias) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i m0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), lanes);
    const __m256i m1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr - 8), lanes);
    const __m256 b0 = !bias ? _mm256_setzero_ps() : nr >= 16 ? _mm256_loadu_ps(bias) : _mm256_maskload_ps(bias, m0);
    const __m256 b1 = !bias ? _mm256_setzero_ps() : nr >= 16 ? _mm256_loadu_ps(bias + 8) : _mm256_maskload_ps(bias + 8, m1);
    __m256 a0[6], a1[6];
#pragma clang loop unroll(full)
    for (int t = 0; t < 6; t++) {
        if (accumulate && t < nt && nr >= 16) {
            a0[t] = _mm256_loadu_ps(y + t * ys);
            a1[t] = _mm256_loadu_ps(y + t * ys + 8);
        } else if (accumulate && t < nt) {
            a0[t] = _mm256_maskload_ps(y + t * ys, m0);
            a1[t] = _mm256_maskload_ps(y + t * ys + 8, m1);
        } else {
            a0[t] = b0;
            a1[t] = b1;
        }
    }
    for (int64_t c = 0; c < kc; c++) {
        const __m256 w0 = _mm256_loadu_ps(panel + c * ROWS), w1 = _mm256_loadu_ps(panel + c * ROWS + 8);
        const float *xc = xb + c * xcs;
#pragma clang loop unroll(full)
        for (int t = 0; t < 6; t++) {
            const __m256 xv = _mm256_broadcast_ss(xc + t);
            a0[t] = _mm256_fmadd_ps(w0, xv, a0[t]);
            a1[t] = _mm256_fmadd_ps(w1, xv, a1[t]);
        }
    }
#pragma clang loop unroll(full)
    for (int t = 0; t < 6; t++) {
        if (t >= nt) break;
        if (nr >= 16) {
            _mm256_storeu_ps(y + t * ys, a0[t]);
            _mm256_storeu_ps(y + t * ys + 8, a1[t]);
        } else {
            _mm256_maskstore_ps(y + t * ys, m0, a0[t]);
            _mm256_maskstore_ps(y + t * ys + 8, m1, a1[t]);
        }
    }
}

TILE_OF_QUARTERS(tile_avx2, quarter_avx2)

/* Rows t0..t0+3 (r[0..3], 8 columns each) transposed: u[c] holds column c's 4 values in its low half and column
 * c + 4's in its high half. */
static inline void transpose_4x8_avx2(const __m256 r[4], __m256 u[4]) {
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    u[0] = _mm256_shuffle_ps(t0, t2, 0x44);
    u[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
    u[2] = _mm256_shuffle_ps(t1, t3, 0x44);
    u[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
}

/* A block's 12 tokens x 8 columns at a time: the rows (rounded to F16 when asked, zero past n_tokens) as three
 * 4 x 8 transposes, whose halves make each column's 8 + 4 values, stored side by side (one contiguous [8][12]
 * run). Columns past the last 8 one by one. */
static void pack_x_avx2(const float *x, int64_t x_stride, int64_t n_tokens, int64_t cols, int round_f16, float *xp,
                        int64_t block_begin, int64_t block_end) {
    const int64_t wide = cols / 8 * 8;
    for (int64_t b = block_begin; b < block_end; b++) {
        float *block = xp + (size_t)b * TOKENS * cols;
        for (int64_t c0 = 0; c0 < wide; c0 += 8) {
            __m256 r[TOKENS], u[3][4];
#pragma clang loop unroll(full)
            for (int t = 0; t < TOKENS; t++) {
                const int64_t token = b * TOKENS + t;
                __m256 v = token < n_tokens ? _mm256_loadu_ps(x + token * x_stride + c0) : _mm256_setzero_ps();
                if (round_f16) v = _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
                r[t] = v;
            }
            transpose_4x8_avx2(r, u[0]);
            transpose_4x8_avx2(r + 4, u[1]);
            transpose_4x8_avx2(r + 8, u[2]);
            float *dst = block + c0 * TOKENS;
#pragma clang loop unroll(full)
            for (int c = 0; c < 4; c++) {
                _mm256_storeu_ps(dst + c * TOKENS, _mm256_permute2f128_ps(u[0][c], u[1][c], 0x20));
                _mm_storeu_ps(dst + c * TOKENS + 8, _mm256_castps256_ps128(u[2][c]));
                _mm256_storeu_ps(dst + (c + 4) * TOKENS, _mm256_permute2f128_ps(u[0][c], u[1][c], 0x31));
                _mm_storeu_ps(dst + (c + 4) * TOKENS + 8, _mm256_extractf128_ps(u[2][c], 1));
            }
        }
        pack_x_columns(x, x_stride, n_tokens, cols, wide, round_f16, block, b);
    }
}

static void widen_avx2(const uint16_t *h, float *f, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(f + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))));
    for (; i < n; i++) f[i] = lk_f16_to_f32(h[i]);
}

/* expf for x <= 0, within about 1 ulp: x = n·ln 2 + r (Cody and Waite's two-part ln 2, as Cephes' expf),
 * e^r by a minimax polynomial of degree 6 on [−ln 2 / 2, ln 2 / 2] (0.6 ulp in float arithmetic), times 2^n
 * by adding n to the exponent's bits; n is rounded by the 1.5·2^23 shift, which leaves it in the low bits of
 * the shifted sum. Below −86 the result stays near e^−86 (a normal float, so the exponent's sum is right):
 * a softmax's terms that small add nothing beside its largest term, 1. Thirteen operations against Cephes'
 * twenty-odd (its 2^n in two factors, which keeps the subnormal results). */
static inline __m256 exp_nonpositive_avx2(__m256 x) {
    const __m256 shift = _mm256_set1_ps(12582912.0f);
    x = _mm256_max_ps(x, _mm256_set1_ps(-86.0f));
    const __m256 shifted = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), shift);
    const __m256 n = _mm256_sub_ps(shifted, shift);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.383683528e-3f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.374815807e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.166822508e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.666641980e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.999999106e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), _mm256_slli_epi32(_mm256_castps_si256(shifted), 23)));
}

/* One pass of `strips` strips of 8 columns from column j0: the maxima over the rows, then each element's
 * exponential and the columns' sums. `full`: every strip has 8 columns, read and written with plain loads
 * and stores (a masked store can cost several times a plain one); else by the lane masks m. */
static inline __attribute__((always_inline)) void exp_strips_avx2(float *x, int64_t rows, int64_t stride, int64_t j0,
                                                                  __m256 s, const __m256i *m, int strips, const int full,
                                                                  float *inv_sums) {
    enum { STRIPS = 6 };
    __m256 max[STRIPS], sum[STRIPS];
#pragma clang loop unroll(full)
    for (int k = 0; k < STRIPS; k++) {
        max[k] = _mm256_set1_ps(-INFINITY);
        sum[k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < rows; i++) {
        const float *p = x + i * stride + j0;
#pragma clang loop unroll(full)
        for (int k = 0; k < STRIPS; k++)
            if (k < strips) max[k] = _mm256_max_ps(max[k], full ? _mm256_loadu_ps(p + 8 * k) : _mm256_maskload_ps(p + 8 * k, m[k]));
    }
#pragma clang loop unroll(full)
    for (int k = 0; k < STRIPS; k++) max[k] = _mm256_mul_ps(s, max[k]);
    for (int64_t i = 0; i < rows; i++) {
        float *p = x + i * stride + j0;
#pragma clang loop unroll(full)
        for (int k = 0; k < STRIPS; k++)
            if (k < strips) {
                const __m256 v = full ? _mm256_loadu_ps(p + 8 * k) : _mm256_maskload_ps(p + 8 * k, m[k]);
                const __m256 e = exp_nonpositive_avx2(_mm256_fmsub_ps(s, v, max[k]));
                sum[k] = _mm256_add_ps(sum[k], e);
                if (full) _mm256_storeu_ps(p + 8 * k, e);
                else _mm256_maskstore_ps(p + 8 * k, m[k], e);
            }
    }
#pragma clang loop unroll(full)
    for (int k = 0; k < STRIPS; k++)
        if (k < strips) {
            const __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), sum[k]);
            if (full) _mm256_storeu_ps(inv_sums + j0 + 8 * k, inv);
            else _mm256_maskstore_ps(inv_sums + j0 + 8 * k, m[k], inv);
        }
}

/* Six strips of 8 columns side by side per pass over the rows (48 columns): each row's 192 bytes are read at
 * once and the six exponentials are independent. Passes whose strips all have 8 columns take no masks. */
static void exp_columns_avx2(float *x, int64_t rows, int64_t n, int64_t stride, float scale, float *inv_sums) {
    enum { STRIPS = 6 };
    const __m256 s = _mm256_set1_ps(scale);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t j0 = 0; j0 < n; j0 += 8 * STRIPS) {
        const int64_t left = n - j0;
        const int strips = left >= 8 * STRIPS ? STRIPS : (int)((left + 7) / 8);
        __m256i m[STRIPS];
#pragma clang loop unroll(full)
        for (int k = 0; k < STRIPS; k++) {
            const int64_t w = left - 8 * k;
            m[k] = _mm256_cmpgt_epi32(_mm256_set1_epi32(w >= 8 ? 8 : w <= 0 ? 0 : (int)w), lanes);
        }
        if (left >= 8 * STRIPS) exp_strips_avx2(x, rows, stride, j0, s, m, STRIPS, 1, inv_sums);
        else if (left % 8 == 0) exp_strips_avx2(x, rows, stride, j0, s, m, strips, 1, inv_sums);
        else exp_strips_avx2(x, rows, stride, j0, s, m, strips, 0, inv_sums);
    }
}

#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)

static void tile_avx512(const float *panel, const float *xb, int64_t xcs, int64_t kc, float *y, int64_t ys, int nt,
                        int nr, int accumulate, const float *bias) {
    const __mmask16 m0 = nr >= 16 ? 0xFFFF : (__mmask16)((1u << nr) - 1);
    const __mmask16 m1 = nr >= 32 ? 0xFFFF : nr <= 16 ? 0 : (__mmask16)((1u << (nr - 16)) - 1);
    __m512 a0[TOKENS], a1[TOKENS];
    const __m512 b0 = bias ? _mm512_maskz_loadu_ps(m0, bias) : _mm512_setzero_ps();
    const __m512 b1 = bias ? _mm512_maskz_loadu_ps(m1, bias + 16) : _mm512_setzero_ps();
#pragma clang loop unroll(full)
    for (int t = 0; t < TOKENS; t++) {
        if (accumulate && t < nt) {
            a0[t] = _mm512_maskz_loadu_ps(m0, y + t * ys);
            a1[t] = _mm512_maskz_loadu_ps(m1, y + t * ys + 16);
        } else {
            a0[t] = b0;
            a1[t] = b1;
        }
    }
    for (int64_t c = 0; c < kc; c++) {
        const __m512 w0 = _mm512_loadu_ps(panel + c * ROWS), w1 = _mm512_loadu_ps(panel + c * ROWS + 16);
        const float *xc = xb + c * xcs;
#pragma clang loop unroll(full)
        for (int t = 0; t < TOKENS; t++) {
            const __m512 xv = _mm512_set1_ps(xc[t]);
            a0[t] = _mm512_fmadd_ps(w0, xv, a0[t]);
            a1[t] = _mm512_fmadd_ps(w1, xv, a1[t]);
        }
    }
#pragma clang loop unroll(full)
    for (int t = 0; t < TOKENS; t++) {
        if (t >= nt) break;
        _mm512_mask_storeu_ps(y + t * ys, m0, a0[t]);
        _mm512_mask_storeu_ps(y + t * ys + 16, m1, a1[t]);
    }
}

/* Four rows (r[0..3], 16 columns each) transposed within each 128-bit lane: lane j of u[c] holds column
 * 4j + c's four values. */
static inline void transpose_4x4_lanes_avx512(const __m512 r[4], __m512 u[4]) {
    const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
    const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
    u[0] = _mm512_shuffle_ps(t0, t2, 0x44);
    u[1] = _mm512_shuffle_ps(t0, t2, 0xEE);
    u[2] = _mm512_shuffle_ps(t1, t3, 0x44);
    u[3] = _mm512_shuffle_ps(t1, t3, 0xEE);
}

/* A block's 12 tokens x 16 columns at a time: the rows (rounded to F16 when asked, zero past n_tokens) as three
 * groups of four, each transposed within 128-bit lanes, whose lanes are each column's four values of that
 * group: stored at column c's place, c·12 + 4·group (shuffles and 128-bit stores, several times faster than
 * gathering each column from a buffer of the rows). Columns past the last 16 one by one (pack_x_columns). */
static void pack_x_avx512(const float *x, int64_t x_stride, int64_t n_tokens, int64_t cols, int round_f16, float *xp,
                          int64_t block_begin, int64_t block_end) {
    const int64_t wide = cols / 16 * 16;
    for (int64_t b = block_begin; b < block_end; b++) {
        float *block = xp + (size_t)b * TOKENS * cols;
        for (int64_t c0 = 0; c0 < wide; c0 += 16) {
            float *dst = block + c0 * TOKENS;
#pragma clang loop unroll(full)
            for (int g = 0; g < TOKENS / 4; g++) {
                __m512 r[4], u[4];
#pragma clang loop unroll(full)
                for (int i = 0; i < 4; i++) {
                    const int64_t token = b * TOKENS + 4 * g + i;
                    __m512 v = token < n_tokens ? _mm512_loadu_ps(x + token * x_stride + c0) : _mm512_setzero_ps();
                    if (round_f16) v = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
                    r[i] = v;
                }
                transpose_4x4_lanes_avx512(r, u);
#pragma clang loop unroll(full)
                for (int c = 0; c < 4; c++) {
                    _mm_storeu_ps(dst + c * TOKENS + 4 * g, _mm512_castps512_ps128(u[c]));
                    _mm_storeu_ps(dst + (4 + c) * TOKENS + 4 * g, _mm512_extractf32x4_ps(u[c], 1));
                    _mm_storeu_ps(dst + (8 + c) * TOKENS + 4 * g, _mm512_extractf32x4_ps(u[c], 2));
                    _mm_storeu_ps(dst + (12 + c) * TOKENS + 4 * g, _mm512_extractf32x4_ps(u[c], 3));
                }
            }
        }
        pack_x_columns(x, x_stride, n_tokens, cols, wide, round_f16, block, b);
    }
}

static void widen_avx512(const uint16_t *h, float *f, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(f + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(h + i))));
    for (; i < n; i++) f[i] = lk_f16_to_f32(h[i]);
}

/* expf for x <= 0 (Cephes' polynomial on x − n·ln 2, |error| about 1 ulp; far below ~−87 it gives 0). */
static inline __m512 exp_nonpositive(__m512 x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-103.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

/* Six strips of 16 columns side by side per pass over the rows (a query block of 96): each row's 384 bytes
 * are read at once and the six exponentials are independent. */
static void exp_columns_avx512(float *x, int64_t rows, int64_t n, int64_t stride, float scale, float *inv_sums) {
    enum { STRIPS = 6 };
    const __m512 s = _mm512_set1_ps(scale);
    for (int64_t j0 = 0; j0 < n; j0 += 16 * STRIPS) {
        const int64_t left = n - j0;
        const int strips = left >= 16 * STRIPS ? STRIPS : (int)((left + 15) / 16);
        __mmask16 m[STRIPS];
        __m512 max[STRIPS], sum[STRIPS];
#pragma clang loop unroll(full)
        for (int k = 0; k < STRIPS; k++) {
            const int64_t w = left - 16 * k;
            m[k] = w >= 16 ? 0xFFFF : w <= 0 ? 0 : (__mmask16)((1u << w) - 1);
            max[k] = _mm512_set1_ps(-INFINITY);
            sum[k] = _mm512_setzero_ps();
        }
        for (int64_t i = 0; i < rows; i++) {
            const float *p = x + i * stride + j0;
#pragma clang loop unroll(full)
            for (int k = 0; k < STRIPS; k++)
                if (k < strips) max[k] = _mm512_max_ps(max[k], _mm512_maskz_loadu_ps(m[k], p + 16 * k));
        }
#pragma clang loop unroll(full)
        for (int k = 0; k < STRIPS; k++) max[k] = _mm512_mul_ps(s, max[k]);
        for (int64_t i = 0; i < rows; i++) {
            float *p = x + i * stride + j0;
#pragma clang loop unroll(full)
            for (int k = 0; k < STRIPS; k++)
                if (k < strips) {
                    const __m512 e = exp_nonpositive(_mm512_fmsub_ps(s, _mm512_maskz_loadu_ps(m[k], p + 16 * k), max[k]));
                    sum[k] = _mm512_add_ps(sum[k], e);
                    _mm512_mask_storeu_ps(p + 16 * k, m[k], e);
                }
        }
#pragma clang loop unroll(full)
        for (int k = 0; k < STRIPS; k++)
            if (k < strips) _mm512_mask_storeu_ps(inv_sums + j0 + 16 * k, m[k], _mm512_div_ps(_mm512_set1_ps(1.0f), sum[k]));
    }
}

#pragma clang attribute pop
#endif


#if defined(__aarch64__)
#include <arm_neon.h>

/* The NEON tile: 24 of the 32 vector registers hold 16 rows x 6 tokens of accumulators, the panel's four
 * 4-row vectors and the column's token values (two vectors, taken by lane: fmla by element), so a 32 x 12
 * tile runs as four 16 x 6 quarters as on AVX2. Each column: four weight loads, two token loads and 24
 * independent FMAs; every accumulator sums its column products in the portable tile's order. Partial tiles
 * (nr < 16 or nt < 6) go through a local copy: the panel's rows past the end and the block's tokens past the
 * end are zeros, so the whole quarter is computed and only what exists is stored. */
#define ROW_FMAS(t, X, LANE, LANE_FMA)                                                                       \
    a[t][0] = LANE_FMA(a[t][0], w0, X, LANE), a[t][1] = LANE_FMA(a[t][1], w1, X, LANE);                     \
    a[t][2] = LANE_FMA(a[t][2], w2, X, LANE), a[t][3] = LANE_FMA(a[t][3], w3, X, LANE);
static inline void quarter_neon(const float *panel, const float *xb, int64_t xcs, int64_t kc, float *y, int64_t ys,
                                int nt, int nr, int accumulate, const float *bias) {
    const int whole = nr >= 16 && nt >= 6;
    float part[6][16], b[16];
    for (int r = 0; r < 16; r++) b[r] = bias && r < nr ? bias[r] : 0.0f;
    if (!whole && accumulate)
        for (int t = 0; t < 6; t++)
            for (int r = 0; r < 16; r++) part[t][r] = t < nt && r < nr ? y[t * ys + r] : 0.0f;
    float32x4_t a[6][4];
    for (int t = 0; t < 6; t++)
        for (int k = 0; k < 4; k++)
            a[t][k] = !accumulate ? vld1q_f32(b + 4 * k) : whole ? vld1q_f32(y + t * ys + 4 * k) : vld1q_f32(part[t] + 4 * k);
    for (int64_t c = 0; c < kc; c++) {
        const float *wc = panel + c * ROWS, *xc = xb + c * xcs;
        const float32x4_t w0 = vld1q_f32(wc), w1 = vld1q_f32(wc + 4), w2 = vld1q_f32(wc + 8), w3 = vld1q_f32(wc + 12);
        const float32x4_t x0 = vld1q_f32(xc);
        const float32x2_t x1 = vld1_f32(xc + 4);
        ROW_FMAS(0, x0, 0, vfmaq_laneq_f32)
        ROW_FMAS(1, x0, 1, vfmaq_laneq_f32)
        ROW_FMAS(2, x0, 2, vfmaq_laneq_f32)
        ROW_FMAS(3, x0, 3, vfmaq_laneq_f32)
        ROW_FMAS(4, x1, 0, vfmaq_lane_f32)
        ROW_FMAS(5, x1, 1, vfmaq_lane_f32)
    }
    if (whole) {
        for (int t = 0; t < 6; t++)
            for (int k = 0; k < 4; k++) vst1q_f32(y + t * ys + 4 * k, a[t][k]);
        return;
    }
    for (int t = 0; t < 6; t++)
        for (int k = 0; k < 4; k++) vst1q_f32(part[t] + 4 * k, a[t][k]);
    for (int t = 0; t < nt && t < 6; t++)
        for (int r = 0; r < nr && r < 16; r++) y[t * ys + r] = part[t][r];
}

TILE_OF_QUARTERS(tile_neon, quarter_neon)

/* expf for x <= 0 by Cephes' polynomial on x − n·ln 2 (as the AVX-512 exp_nonpositive), 2^n in two normal
 * factors so the subnormal results are kept, lane for lane */
static inline float32x4_t exp_nonpositive_neon(float32x4_t x) {
    x = vmaxq_f32(x, vdupq_n_f32(-103.0f));
    const float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(1.44269504088896341f)));
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
    r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
    float32x4_t p = vdupq_n_f32(1.9875691500e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3981999507e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(8.3334519073e-3f), p, r);
    p = vfmaq_f32(vdupq_n_f32(4.1665795894e-2f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.6666665459e-1f), p, r);
    p = vfmaq_f32(vdupq_n_f32(5.0000001201e-1f), p, r);
    const float32x4_t y = vaddq_f32(vfmaq_f32(r, vmulq_f32(p, r), r), vdupq_n_f32(1.0f));
    const int32x4_t ni = vcvtq_s32_f32(n), half = vshrq_n_s32(ni, 1);
    const float32x4_t s0 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(half, vdupq_n_s32(127)), 23));
    const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(ni, half), vdupq_n_s32(127)), 23));
    return vmulq_f32(vmulq_f32(y, s0), s1);
}

/* Columns j0..j0 + 4·K − 1 (K vectors of 4 side by side, so each row's 16·K bytes are read at once): the
 * maxima down the rows, each element's exponential, the columns' inverse sums */
static inline void exp_vectors_neon(float *x, int64_t rows, int64_t stride, int64_t j0, float scale, const int K,
                                    float *inv_sums) {
    float32x4_t max[4], sum[4];
    for (int k = 0; k < K; k++) max[k] = vdupq_n_f32(-INFINITY), sum[k] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < rows; i++)
        for (int k = 0; k < K; k++) max[k] = vmaxq_f32(max[k], vld1q_f32(x + i * stride + j0 + 4 * k));
    for (int k = 0; k < K; k++) max[k] = vnegq_f32(vmulq_n_f32(max[k], scale));
    for (int64_t i = 0; i < rows; i++)
        for (int k = 0; k < K; k++) {
            float *p = x + i * stride + j0 + 4 * k;
            const float32x4_t e = exp_nonpositive_neon(vfmaq_n_f32(max[k], vld1q_f32(p), scale));
            sum[k] = vaddq_f32(sum[k], e);
            vst1q_f32(p, e);
        }
    for (int k = 0; k < K; k++) vst1q_f32(inv_sums + j0 + 4 * k, vdivq_f32(vdupq_n_f32(1.0f), sum[k]));
}

/* 16 columns a pass, then 4, the last n % 4 as the portable loop */
static void exp_columns_neon(float *x, int64_t rows, int64_t n, int64_t stride, float scale, float *inv_sums) {
    int64_t j0 = 0;
    for (; j0 + 16 <= n; j0 += 16) exp_vectors_neon(x, rows, stride, j0, scale, 4, inv_sums);
    for (; j0 + 4 <= n; j0 += 4) exp_vectors_neon(x, rows, stride, j0, scale, 1, inv_sums);
    if (j0 < n) exp_columns_portable(x + j0, rows, n - j0, stride, scale, inv_sums + j0);
}
#endif

/* The vectors these kernels use under the selected table: AVX-512 with every AVX-512 table (the AMX and
 * llama-order ones differ from the others in their quantized products only), AVX2 with the AVX2 and AVX-VNNI
 * tables, NEON with every arm64 one. */
enum { VG_PORTABLE, VG_AVX2, VG_AVX512, VG_NEON };

static int vg_level(void) {
    switch (lk_get_isa()) {
#if defined(__x86_64__)
    case LK_ISA_AVX512: case LK_ISA_AVX512_NOVNNI: case LK_ISA_AVX512_AMX: case LK_ISA_LLAMA_ORDER: return VG_AVX512;
    case LK_ISA_AVX2: case LK_ISA_AVX_VNNI: return VG_AVX2;
#elif defined(__aarch64__)
    case LK_ISA_NEON: case LK_ISA_NEON_DOTPROD: case LK_ISA_NEON_I8MM: return VG_NEON;
#endif
    default: return VG_PORTABLE;
    }
}

const char *lk_vg_path(void) {
    static const char *const names[] = {"portable", "avx2", "avx512", "neon"};
    return names[vg_level()];
}

void lk_vg_pack_x(const float *x, int64_t x_stride, int64_t n_tokens, int64_t cols, int round_f16, float *xp,
                  int64_t block_begin, int64_t block_end) {
#if defined(__x86_64__)
    const int level = vg_level();
    if (level == VG_AVX512) {
        pack_x_avx512(x, x_stride, n_tokens, cols, round_f16, xp, block_begin, block_end);
        return;
    }
    if (level == VG_AVX2) {
        pack_x_avx2(x, x_stride, n_tokens, cols, round_f16, xp, block_begin, block_end);
        return;
    }
#endif
    pack_x_portable(x, x_stride, n_tokens, cols, round_f16, xp, block_begin, block_end);
}

void lk_vg_exp_columns(float *x, int64_t rows, int64_t n, int64_t stride, float scale, float *inv_sums) {
#if defined(__x86_64__)
    const int level = vg_level();
    if (level == VG_AVX512) {
        exp_columns_avx512(x, rows, n, stride, scale, inv_sums);
        return;
    }
    if (level == VG_AVX2) {
        exp_columns_avx2(x, rows, n, stride, scale, inv_sums);
        return;
    }
#elif defined(__aarch64__)
    if (vg_level() == VG_NEON) {
        exp_columns_neon(x, rows, n, stride, scale, inv_sums);
        return;
    }
#endif
    exp_columns_portable(x, rows, n, stride, scale, inv_sums);
}

typedef void (*tile_fn)(const float *, const float *, int64_t, int64_t, float *, int64_t, int, int, int, const float *);
typedef void (*widen_fn)(const uint16_t *, float *, int64_t);

int lk_vg_gemm_packed(int w_type, const void *packed, int64_t cols, const float *xp, int64_t x_block_stride,
                      int64_t x_col_stride, int64_t n_tokens, const float *bias, float *y, int64_t y_stride,
                      int64_t row_begin, int64_t row_end) {
    if (w_type != LK_TYPE_F32 && w_type != LK_TYPE_F16) return 0;
    if (row_end <= row_begin || n_tokens <= 0 || cols <= 0) return 1;
    if (row_begin % ROWS != 0) return 0;
    tile_fn tile = tile_portable;
    widen_fn widen = widen_portable;
#if defined(__x86_64__)
    const int level = vg_level();
    if (level == VG_AVX512) tile = tile_avx512, widen = widen_avx512;
    if (level == VG_AVX2) tile = tile_avx2, widen = widen_avx2;
#elif defined(__aarch64__)
    if (vg_level() == VG_NEON) tile = tile_neon; /* widen: the NEON table's */
#endif
    const int64_t panels = panels_of(row_end - row_begin), stripe = stripe_panels();
    float *chunks = NULL; /* F16: a stripe's panel chunks as floats, [stripe][KC][32] */
    if (w_type == LK_TYPE_F16) {
        chunks = lk_scratch((size_t)(panels < stripe ? panels : stripe) * KC * ROWS * sizeof(float));
        if (!chunks) return 0;
    }
    const int64_t blocks = (n_tokens + TOKENS - 1) / TOKENS;
    for (int64_t s0 = 0; s0 < panels; s0 += stripe) {
        const int64_t s1 = panels - s0 < stripe ? panels : s0 + stripe;
        for (int64_t k0 = 0; k0 < cols; k0 += KC) {
            const int64_t kc = cols - k0 < KC ? cols - k0 : KC;
            if (chunks)
                for (int64_t p = s0; p < s1; p++)
                    widen((const uint16_t *)packed + (size_t)(row_begin / ROWS + p) * ROWS * cols + (size_t)k0 * ROWS,
                          chunks + (size_t)(p - s0) * KC * ROWS, kc * ROWS);
            for (int64_t g0 = 0; g0 < blocks; g0 += GROUP) {
                const int64_t g1 = blocks - g0 < GROUP ? blocks : g0 + GROUP;
                for (int64_t p = s0; p < s1; p++) {
                    const int64_t r0 = row_begin + p * ROWS;
                    const int nr = row_end - r0 < ROWS ? (int)(row_end - r0) : ROWS;
                    const float *panel = chunks ? chunks + (size_t)(p - s0) * KC * ROWS
                                                : (const float *)packed + (size_t)(r0 / ROWS) * ROWS * cols + (size_t)k0 * ROWS;
                    for (int64_t b = g0; b < g1; b++) {
                        const int nt = n_tokens - b * TOKENS < TOKENS ? (int)(n_tokens - b * TOKENS) : TOKENS;
                        tile(panel, xp + b * x_block_stride + k0 * x_col_stride, x_col_stride, kc,
                             y + b * TOKENS * y_stride + r0, y_stride, nt, nr, k0 > 0, k0 == 0 && bias ? bias + r0 : NULL);
                    }
                }
            }
        }
    }
    return 1;
}

int lk_vision_gemm(int w_type, const void *w, size_t w_row_bytes, int64_t cols, const float *x, int64_t x_stride,
                   int64_t n_tokens, float *y, int64_t y_stride, int64_t row_begin, int64_t row_end) {
    if (w_type != LK_TYPE_F32 && w_type != LK_TYPE_F16) return 0;
    if (row_end <= row_begin || n_tokens <= 0 || cols <= 0) return 1;
    const int64_t rows = row_end - row_begin;
    /* from malloc, not lk_scratch: lk_vg_gemm_packed takes this thread's scratch while they are in use */
    void *packed = aligned_alloc(64, lk_vg_packed_weight_bytes(w_type, rows, cols));
    float *xp = aligned_alloc(64, lk_vg_packed_x_floats(n_tokens, cols) * sizeof(float));
    int ok = packed && xp;
    if (ok) {
        lk_vg_pack_weights(w_type, (const uint8_t *)w + (size_t)row_begin * w_row_bytes, w_row_bytes, rows, cols,
                           packed, 0, panels_of(rows));
        lk_vg_pack_x(x, x_stride, n_tokens, cols, 0, xp, 0, (n_tokens + TOKENS - 1) / TOKENS);
        ok = lk_vg_gemm_packed(w_type, packed, cols, xp, (int64_t)TOKENS * cols, TOKENS, n_tokens, NULL, y + row_begin,
                               y_stride, 0, rows);
    }
    free(packed);
    free(xp);
    return ok;
}

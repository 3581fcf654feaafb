/* llama.cpp's summation orders for K-quant weights on x86, chosen per tensor and per batch as its CPU backend
 * does (ggml-cpu/repack.cpp, arch/x86/repack.cpp, tiled/tiled.cpp + tiled-kernel.cpp; read, not copied), so that
 * our logits are llama.cpp's bit for bit where every other kernel matches too.
 *
 * The integer parts are exact in any order; only the float steps matter. Per (weight row, token) and
 * super-block of 256 (d, dmin: the block's f16 scales as f32; dx: the Q8_K activation scale):
 *   S_c = sc_2c · Σ lo·x + sc_2c+1 · Σ hi·x   over the 64-element chunk c (two 32-element sub-blocks)
 *   M_c = m_2c · (bsums of sub-block 2c) + m_2c+1 · (bsums of sub-block 2c+1)
 *   S = Σ_c S_c, M = Σ_c M_c (Q6_K: S = Σ sc · Σ (q − 32)·x over the 16-element sub-blocks, no M)
 *
 * repack: Q4_K tensors whose row count is a multiple of 8. ggml interleaves them into 8-row blocks at load
 *   and multiplies with ggml_gemm_q4_K_8x8_q8_K for groups of 4 tokens counted from the batch's first token,
 *   and with ggml_gemv_q4_K_8x8_q8_K for the n % 4 tokens left (one token = decode):
 *     gemm  acc = fma(float(S_c), d·dx, acc); accm = fma(float(M_c), dmin·dx, accm)   for every chunk c
 *     gemv  acc = fma(float(S),   d·dx, acc); accm = fma(float(M),   dmin·dx, accm)   once per block
 *     result acc − accm. The AVX-512 branch of the gemm does per lane what the AVX2 branch does, and the
 *     activations of a 4-token group (ggml_quantize_mat_q8_K_4x8) equal quantize_row_q8_K's.
 * tiled: Q6_K tensors, and Q4_K ones that are not repacked, when the batch has 8 tokens or more
 *   (ggml_compute_forward_mul_mat_tiled; below 8 tokens ggml_vec_dot_*, our row kernels):
 *     Q4_K  acc = fma(fma(−dmin, float(M), float(S)·d), dx, acc)
 *     Q6_K  acc = fma(float(S)·d, dx, acc)
 *   (its VNNI kernel's "buf + result·d1" is compiled to that FMA, like the AVX2 one's explicit FMA).
 *
 * These replace the row kernels' 8-lane float accumulators, so for these tensors a token's result depends
 * on its place in the batch, as in llama.cpp: prefill is no longer bit-identical to token-by-token decode. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdlib.h>

enum { ORDER_GEMM = 0, ORDER_GEMV = 1, ORDER_TILED = 2 };
enum { ROWS = 16 }; /* weight rows per tile: their blocks stay in L1 while the tokens pass */

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#include "../x86/lk_x86_avx2.h"

/* The 4 s32 sums of v[0..3] (8 lanes each). */
INLINE __m128i hsum4_epi32(const __m256i *v) {
    const __m256i a = _mm256_hadd_epi32(v[0], v[1]), b = _mm256_hadd_epi32(v[2], v[3]);
    const __m256i c = _mm256_hadd_epi32(a, b);
    return _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1));
}

#define XT(t) ((const block_q8_K *)((const uint8_t *)vx + (size_t)(t) * xs))
#include "../x86/lk_avx2_ksums.h"

/* [M_0, M_1, M_2, M_3] of one activation block: the bsums pairs (32-element sub-blocks) times the mins. */
INLINE __m128i q4_K_mins(const block_q8_K *x, __m128i mins16) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)x->bsums);
    const __m128i pairs = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
    return _mm_madd_epi16(pairs, mins16);
}

/* s[t] = row · token t (t < NT) in `order` (see the top). The 4-token gemm order keeps the tokens in the
 * lanes of one vector: lane t gets exactly token t's scalar FMA chain. */
INLINE void q4_K_rows_order(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT, const int order) {
    const block_q4_K *w = vw;
    float acc[4] = {0, 0, 0, 0}, accm[4] = {0, 0, 0, 0};
    __m128 acc4 = _mm_setzero_ps(), accm4 = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) lk_get_scale_min_k4(j, w[i].scales, &sc[j], &mn[j]);
        const __m128i mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mn));
        const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
        __m256i sumi[4][4]; /* [c][t] */
        q4_K_chunk_sums(w + i, sc, vx, xs, i, NT, sumi);
        if (order == ORDER_GEMM && NT == 4) {
            const __m128 dx = _mm_setr_ps(XT(0)[i].d, XT(1)[i].d, XT(2)[i].d, XT(3)[i].d);
            const __m128 dd = _mm_mul_ps(_mm_set1_ps(d), dx), dm = _mm_mul_ps(_mm_set1_ps(dmin), dx);
            __m128 m[4];
            for (int t = 0; t < 4; t++) m[t] = _mm_cvtepi32_ps(q4_K_mins(XT(t) + i, mins16));
            _MM_TRANSPOSE4_PS(m[0], m[1], m[2], m[3]); /* m[c] = M_c of tokens 0..3 */
            for (int c = 0; c < 4; c++) {
                acc4 = _mm_fmadd_ps(_mm_cvtepi32_ps(hsum4_epi32(sumi[c])), dd, acc4);
                accm4 = _mm_fmadd_ps(m[c], dm, accm4);
            }
            continue;
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(t) + i;
            int32_t mc[4];
            _mm_storeu_si128((__m128i *)mc, q4_K_mins(x, mins16));
            if (order == ORDER_GEMM) {
                const __m256i v[4] = {sumi[0][t], sumi[1][t], sumi[2][t], sumi[3][t]};
                int32_t sc4[4];
                _mm_storeu_si128((__m128i *)sc4, hsum4_epi32(v));
                const float dd = d * x->d, dm = dmin * x->d;
                for (int c = 0; c < 4; c++) {
                    acc[t] = __builtin_fmaf((float)sc4[c], dd, acc[t]);
                    accm[t] = __builtin_fmaf((float)mc[c], dm, accm[t]);
                }
                continue;
            }
            const __m256i v = _mm256_add_epi32(_mm256_add_epi32(sumi[0][t], sumi[1][t]), _mm256_add_epi32(sumi[2][t], sumi[3][t]));
            const int32_t S = hsum_epi32(v), M = mc[0] + mc[1] + mc[2] + mc[3];
            if (order == ORDER_GEMV) {
                acc[t] = __builtin_fmaf((float)S, d * x->d, acc[t]);
                accm[t] = __builtin_fmaf((float)M, dmin * x->d, accm[t]);
            } else {
                acc[t] = __builtin_fmaf(__builtin_fmaf(-dmin, (float)M, (float)S * d), x->d, acc[t]);
            }
        }
    }
    if (order == ORDER_GEMM && NT == 4) {
        _mm_storeu_ps(s, _mm_sub_ps(acc4, accm4));
        return;
    }
    for (int t = 0; t < NT; t++) s[t] = acc[t] - accm[t];
}

/* Q6_K in the tiled order. */
INLINE void q6_K_rows_tiled(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q6_K *w = vw;
    float acc[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(w[i].d);
        __m256i sumi[4];
        q6_K_block_sums(w + i, vx, xs, i, NT, sumi);
        if (NT == 4) {
            int32_t S[4];
            _mm_storeu_si128((__m128i *)S, hsum4_epi32(sumi));
            for (int t = 0; t < 4; t++) acc[t] = __builtin_fmaf((float)S[t] * d, XT(t)[i].d, acc[t]);
        } else {
            acc[0] = __builtin_fmaf((float)hsum_epi32(sumi[0]) * d, XT(0)[i].d, acc[0]);
        }
    }
    for (int t = 0; t < NT; t++) s[t] = acc[t];
}

/* Rows in tiles of ROWS; tokens [0, n4) in groups of 4 with `order4`, the rest one by one with `order1`. */
#define ROWS_DRIVER(NAME, ROWFN4, ROWFN1)                                                                     \
    int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,   \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                             \
        const uint8_t *wb = w, *xb = x;                                                                      \
        const int64_t n4 = n_tokens - n_tokens % 4;                                                          \
        for (int64_t r0 = row_begin; r0 < row_end; r0 += ROWS) {                                             \
            const int64_t r1 = r0 + ROWS < row_end ? r0 + ROWS : row_end;                                    \
            for (int64_t t = 0; t < n4; t += 4) {                                                            \
                const uint8_t *xt = xb + (size_t)t * xrb;                                                    \
                for (int64_t r = r0; r < r1; r++) {                                                          \
                    float s[4];                                                                              \
                    ROWFN4(cols, wb + (size_t)r * wrb, xt, xrb, s, 4);                                       \
                    for (int i = 0; i < 4; i++) y[(t + i) * ys + r] = s[i];                                  \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int64_t t = n4; t < n_tokens; t++) {                                                            \
            const uint8_t *xt = xb + (size_t)t * xrb;                                                        \
            for (int64_t r = row_begin; r < row_end; r++) ROWFN1(cols, wb + (size_t)r * wrb, xt, 0, y + t * ys + r, 1); \
        }                                                                                                    \
        return 1;                                                                                            \
    }

#define Q4K_GEMM(n, w, x, xs, s, NT) q4_K_rows_order(n, w, x, xs, s, NT, ORDER_GEMM)
#define Q4K_GEMV(n, w, x, xs, s, NT) q4_K_rows_order(n, w, x, xs, s, NT, ORDER_GEMV)
#define Q4K_TILED(n, w, x, xs, s, NT) q4_K_rows_order(n, w, x, xs, s, NT, ORDER_TILED)
ROWS_DRIVER(lk_repack_q4_K_avx2, Q4K_GEMM, Q4K_GEMV)
ROWS_DRIVER(lk_repack_id_q4_K_avx2, Q4K_GEMV, Q4K_GEMV) /* MUL_MAT_ID: ggml_gemv for every routed token */
ROWS_DRIVER(lk_tiled_q4_K_avx2, Q4K_TILED, Q4K_TILED)
ROWS_DRIVER(lk_tiled_q6_K_avx2, q6_K_rows_tiled, q6_K_rows_tiled)

#pragma clang attribute pop

LK_KERNELS(lk_llama_order_avx2,
    LK_KERNEL(LK_E_REPACK, LK_TYPE_Q4_K, lk_repack_q4_K_avx2),
    LK_KERNEL(LK_E_REPACK_ID, LK_TYPE_Q4_K, lk_repack_id_q4_K_avx2),
    LK_KERNEL(LK_E_TILED, LK_TYPE_Q4_K, lk_tiled_q4_K_avx2),
    LK_KERNEL(LK_E_TILED, LK_TYPE_Q6_K, lk_tiled_q6_K_avx2));

#else
LK_NO_KERNELS(lk_llama_order_avx2);
#endif

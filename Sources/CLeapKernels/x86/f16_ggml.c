/* One token's F16 matrix-vector product in the summation order of ggml_vec_dot_f16 (ggml-cpu/vec.cpp with the
 * GGML_F16_* mappings of simd-mappings.h; read, not copied) in llama.cpp's AVX-512 build: what it uses for
 * attention's Q·Kᵀ and P·V when its ubatch has one token (flash attention off, F16 KV cache; from 2 tokens
 * llamafile's tinyBLAS<16, __m512> does them, our lk_matmul order). Per row of n elements:
 *
 *   GGML_F16_STEP 64, EPR 16: element i is added to lane i % 16 of accumulator (i / 16) % 4 over the whole
 *   64-element steps (np = n rounded down to 64); then acc0 += acc2, acc1 += acc3, acc0 += acc1 and
 *   _mm512_reduce_add_ps (halves: lanes i and i + 8, i and i + 4, i and i + 2, 0 and 1); that float becomes a
 *   double, the leftovers np...n−1 are added one by one in double (float products), the double is rounded.
 *
 * Every product of two f16 values is exact in float, so FMA or multiply-then-add give the same sums. The AVX2
 * path computes the same thing with two 8-lane halves per 16-lane accumulator: like the rest of that path
 * (batched F16 attention included) it reproduces the AVX-512 build, the one whose results can be checked
 * here (scripts/kernels/f16_dot_vs_ggml.py). llama.cpp's AVX2 build would sum otherwise (STEP 32, EPR 8,
 * then low + high half and two hadds, and tinyBLAS<8, __m256> for batches).
 *
 * `n_padded` >= n: the row counts as n_padded long with zeros beyond n, like llama.cpp's KV length padded to
 * 256 with zero probabilities (its np then covers every real element); zeros are not read, so unused cache
 * rows may hold anything. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

/* The double sum of the leftovers np...n−1 on top of the vector part `s`, rounded to float. */
INLINE float add_leftovers(float s, const uint16_t *w, const float *x, int64_t np, int64_t n) {
    double sum = s;
    for (int64_t i = np; i < n; i++) sum += (double)(lk_h2f(w[i]) * x[i]);
    return (float)sum;
}

/* The vector part covers [0, np) where np = n_padded rounded down to STEP; real elements are [0, min(n, np)).
 * Whole steps are loaded directly; in a last partial step the lane groups holding real elements are loaded
 * with masks (nothing past the row's last real element is read) and the all-zero groups are skipped (adding
 * +0 products leaves a sum unchanged). */
enum { STEP = 64 }; /* GGML_F16_STEP */

#define F16_GGML_DRIVER(NAME, NACC, VEC, STEP_FN, TAIL_FN, REDUCE_FN)                                         \
    static void NAME(const uint16_t *w0, size_t wrb, int64_t n, int64_t n_padded, const float *x, float *y,   \
                     int64_t rows) {                                                                           \
        const int64_t np = n_padded / STEP * STEP;                                                            \
        const int64_t real = n < np ? n : np;                                                                 \
        const int64_t whole = real / STEP * STEP;                                                             \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            const uint16_t *w = (const uint16_t *)((const uint8_t *)w0 + (size_t)r * wrb);                    \
            VEC acc[NACC];                                                                                     \
            for (int j = 0; j < NACC; j++) acc[j] = ZERO_##VEC;                                                \
            for (int64_t i = 0; i < whole; i += STEP) STEP_FN(acc, w + i, x + i);                              \
            if (whole < real) TAIL_FN(acc, w + whole, x + whole, (int)(real - whole));                         \
            y[r] = add_leftovers(REDUCE_FN(acc), w, x, np, n);                                                 \
        }                                                                                                      \
    }

/* ---- AVX2: a 16-lane accumulator j is the pair acc[2j] (lanes 0-7), acc[2j + 1] (lanes 8-15) ---- */
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

#define ZERO___m256 _mm256_setzero_ps()

INLINE void step_avx2(__m256 acc[8], const uint16_t *w, const float *x) {
    for (int j = 0; j < 8; j++) {
        const __m256 wv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 8 * j)));
        acc[j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 8 * j), acc[j]);
    }
}

/* step_avx2 over the first `rem` (< 64) elements, the rest taken as zeros. A group of 8 with 1-7 real elements
 * loads their pairs with a 32-bit mask and inserts an odd last one: nothing beyond w[rem − 1] is read. */
INLINE void tail_avx2(__m256 acc[8], const uint16_t *w, const float *x, int rem) {
    for (int j = 0; j < 8 && 8 * j < rem; j++) {
        const int cnt = rem - 8 * j < 8 ? rem - 8 * j : 8;
        __m128i h;
        if (cnt == 8) {
            h = _mm_loadu_si128((const __m128i *)(w + 8 * j));
        } else {
            const __m128i pairs = _mm_cmpgt_epi32(_mm_set1_epi32(cnt / 2), _mm_setr_epi32(0, 1, 2, 3));
            h = _mm_maskload_epi32((const int *)(w + 8 * j), pairs);
            if (cnt & 1) {
                uint16_t hs[8];
                _mm_storeu_si128((__m128i *)hs, h);
                hs[cnt - 1] = w[8 * j + cnt - 1];
                h = _mm_loadu_si128((const __m128i *)hs);
            }
        }
        const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(cnt), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        acc[j] = _mm256_fmadd_ps(_mm256_cvtph_ps(h), _mm256_maskload_ps(x + 8 * j, lanes), acc[j]);
    }
}

#include "lk_x86_avx2.h" /* reduce16 */

INLINE float reduce_avx2(__m256 acc[8]) {
    for (int k = 0; k < 2; k++) {
        acc[0 + k] = _mm256_add_ps(acc[0 + k], acc[4 + k]);
        acc[2 + k] = _mm256_add_ps(acc[2 + k], acc[6 + k]);
        acc[0 + k] = _mm256_add_ps(acc[0 + k], acc[2 + k]);
    }
    return reduce16(acc[0], acc[1]);
}

F16_GGML_DRIVER(f16_ggml_avx2, 8, __m256, step_avx2, tail_avx2, reduce_avx2)

#pragma clang attribute pop

/* ---- AVX-512 ---- */
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)

#define ZERO___m512 _mm512_setzero_ps()

INLINE void step_avx512(__m512 acc[4], const uint16_t *w, const float *x) {
    for (int j = 0; j < 4; j++) {
        const __m512 wv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 16 * j)));
        acc[j] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + 16 * j), acc[j]);
    }
}

/* step_avx512 over the first `rem` (< 64) elements with masked loads, the rest taken as zeros. */
INLINE void tail_avx512(__m512 acc[4], const uint16_t *w, const float *x, int rem) {
    for (int j = 0; j < 4 && 16 * j < rem; j++) {
        const int cnt = rem - 16 * j < 16 ? rem - 16 * j : 16;
        const __mmask16 m = (__mmask16)((1u << cnt) - 1);
        const __m512 wv = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, w + 16 * j));
        acc[j] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m, x + 16 * j), acc[j]);
    }
}

INLINE float reduce_avx512(__m512 acc[4]) {
    acc[0] = _mm512_add_ps(acc[0], acc[2]);
    acc[1] = _mm512_add_ps(acc[1], acc[3]);
    acc[0] = _mm512_add_ps(acc[0], acc[1]);
    return reduce16(_mm512_castps512_ps256(acc[0]), _mm512_extractf32x8_ps(acc[0], 1));
}

F16_GGML_DRIVER(f16_ggml_avx512, 4, __m512, step_avx512, tail_avx512, reduce_avx512)

#pragma clang attribute pop

LK_KERNELS(lk_f16_ggml_avx2, LK_KERNEL(LK_E_MATVEC_F16_GGML, LK_ANY, f16_ggml_avx2));
LK_KERNELS(lk_f16_ggml_avx512, LK_KERNEL(LK_E_MATVEC_F16_GGML, LK_ANY, f16_ggml_avx512));

#else
LK_NO_KERNELS(lk_f16_ggml_avx2);
LK_NO_KERNELS(lk_f16_ggml_avx512);
#endif

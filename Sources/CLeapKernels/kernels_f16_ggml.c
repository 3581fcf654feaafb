/* One token's F16 matrix-vector product in the summation order of ggml_vec_dot_f16 (ggml-cpu/vec.cpp with the
 * GGML_F16_* mappings of simd-mappings.h; read, not copied): what llama.cpp uses for attention's Q·Kᵀ and P·V
 * when its ubatch has one token (flash attention off, F16 KV cache; from 2 tokens llamafile's tinyBLAS does
 * them, our lk_matmul order). The accumulation is in float lanes; every product of two f16 values is exact
 * in float, so FMA or multiply-then-add give the same sums. Per row of n elements:
 *
 *   AVX-512 build (GGML_F16_STEP 64, EPR 16): element i is added to lane i % 16 of accumulator (i / 16) % 4
 *     over the whole 64-element steps (np = n rounded down to 64); then acc0 += acc2, acc1 += acc3,
 *     acc0 += acc1 and _mm512_reduce_add_ps (halves: 16 -> 8 -> 4 -> 2 -> 1).
 *   AVX / AVX2 build (STEP 32, EPR 8): element i to lane i % 8 of accumulator (i / 8) % 4 over whole
 *     32-element steps; acc0 += acc2, acc1 += acc3, acc0 += acc1; low half + high half, then two hadds:
 *     (l0 + l1) + (l2 + l3).
 *   Both: the float result becomes a double, the leftovers np...n−1 are added one by one in double
 *     (float products), and the double is rounded to float.
 *
 * `n_padded` >= n: the row counts as n_padded long with zeros beyond n, like llama.cpp's KV length padded to
 * 256 with zero probabilities (its np then covers every real element); zeros are not read, so unused cache
 * rows may hold anything. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

/* The double sum of the leftovers np...n−1 on top of the vector part `s`, rounded to float. */
INLINE float add_leftovers(float s, const uint16_t *w, const float *x, int64_t np, int64_t n) {
    double sum = s;
    for (int64_t i = np; i < n; i++) sum += (double)(lk_h2f(w[i]) * x[i]);
    return (float)sum;
}

/* The vector part covers [0, np) where np = n_padded rounded down to STEP; real elements are [0, min(n, np)),
 * whole steps are loaded directly and a last partial step goes through zero-filled copies. */
#define F16_GGML_DRIVER(NAME, STEP, VEC, STEP_FN, REDUCE_FN)                                                  \
    static void NAME(const uint16_t *w0, size_t wrb, int64_t n, int64_t n_padded, const float *x, float *y,   \
                     int64_t rows) {                                                                           \
        const int64_t np = n_padded / STEP * STEP;                                                            \
        const int64_t real = n < np ? n : np;                                                                 \
        const int64_t whole = real / STEP * STEP;                                                             \
        float xt[STEP];                                                                                        \
        if (whole < real) {                                                                                    \
            memset(xt, 0, sizeof xt);                                                                          \
            memcpy(xt, x + whole, (size_t)(real - whole) * sizeof(float));                                    \
        }                                                                                                      \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            const uint16_t *w = (const uint16_t *)((const uint8_t *)w0 + (size_t)r * wrb);                    \
            VEC acc[4];                                                                                        \
            for (int j = 0; j < 4; j++) acc[j] = ZERO_##VEC;                                                   \
            for (int64_t i = 0; i < whole; i += STEP) STEP_FN(acc, w + i, x + i);                              \
            if (whole < real) {                                                                                \
                uint16_t wt[STEP];                                                                             \
                memset(wt, 0, sizeof wt);                                                                      \
                memcpy(wt, w + whole, (size_t)(real - whole) * sizeof(uint16_t));                             \
                STEP_FN(acc, wt, xt);                                                                          \
            }                                                                                                  \
            y[r] = add_leftovers(REDUCE_FN(acc), w, x, np, n);                                                 \
        }                                                                                                      \
    }

/* ---- AVX / AVX2 build's order ---- */
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

#define ZERO___m256 _mm256_setzero_ps()

INLINE void step_avx2(__m256 acc[4], const uint16_t *w, const float *x) {
    for (int j = 0; j < 4; j++) {
        const __m256 wv = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + 8 * j)));
        acc[j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + 8 * j), acc[j]);
    }
}

INLINE float reduce_avx2(__m256 acc[4]) {
    acc[0] = _mm256_add_ps(acc[0], acc[2]);
    acc[1] = _mm256_add_ps(acc[1], acc[3]);
    acc[0] = _mm256_add_ps(acc[0], acc[1]);
    const __m128 t0 = _mm_add_ps(_mm256_castps256_ps128(acc[0]), _mm256_extractf128_ps(acc[0], 1));
    const __m128 t1 = _mm_hadd_ps(t0, t0);
    return _mm_cvtss_f32(_mm_hadd_ps(t1, t1));
}

F16_GGML_DRIVER(f16_ggml_avx2, 32, __m256, step_avx2, reduce_avx2)

#pragma clang attribute pop

/* ---- AVX-512 build's order ---- */
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)

#define ZERO___m512 _mm512_setzero_ps()

INLINE void step_avx512(__m512 acc[4], const uint16_t *w, const float *x) {
    for (int j = 0; j < 4; j++) {
        const __m512 wv = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w + 16 * j)));
        acc[j] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + 16 * j), acc[j]);
    }
}

INLINE float reduce_avx512(__m512 acc[4]) {
    acc[0] = _mm512_add_ps(acc[0], acc[2]);
    acc[1] = _mm512_add_ps(acc[1], acc[3]);
    acc[0] = _mm512_add_ps(acc[0], acc[1]);
    /* _mm512_reduce_add_ps spelled out: lanes i and i + 8, then i and i + 4, i and i + 2, 0 and 1 */
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(acc[0]), _mm512_extractf32x8_ps(acc[0], 1));
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

F16_GGML_DRIVER(f16_ggml_avx512, 64, __m512, step_avx512, reduce_avx512)

#pragma clang attribute pop

void lk_fill_f16_ggml(lk_kernel_table *t, int isa) {
    if (isa == LK_ISA_AVX2) t->matvec_f16_ggml = f16_ggml_avx2;
    if (isa == LK_ISA_AVX512 || isa == LK_ISA_AVX512_NOVNNI) t->matvec_f16_ggml = f16_ggml_avx512;
}

#else
void lk_fill_f16_ggml(lk_kernel_table *t, int isa) { (void)t, (void)isa; }
#endif

void lk_matvec_f16_ggml(const uint16_t *w, size_t w_row_bytes, int64_t cols, int64_t n_padded, const float *x,
                        float *y, int64_t row_begin, int64_t row_end) {
    if (row_end <= row_begin) return;
    const lk_kernel_table *k = lk_kernels();
    if (k->matvec_f16_ggml && n_padded >= cols) {
        k->matvec_f16_ggml((const uint16_t *)((const uint8_t *)w + (size_t)row_begin * w_row_bytes), w_row_bytes,
                           cols, n_padded, x, y + row_begin, row_end - row_begin);
        return;
    }
    lk_matmul(LK_TYPE_F16, w, w_row_bytes, cols, x, 0, 1, y, 0, row_begin, row_end);
}

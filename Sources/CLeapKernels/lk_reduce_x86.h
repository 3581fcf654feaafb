/* _mm512_reduce_add_ps's summation order, which llama.cpp's x86 builds use to end their dot products. Include it
 * inside a region that enables AVX (a `#pragma clang attribute push(... target ...)`): the function takes that
 * region's target. */
#ifndef LK_REDUCE_X86_H
#define LK_REDUCE_X86_H
#include <immintrin.h>

/* The 16 lanes lo, hi (0-7, 8-15) summed as _mm512_reduce_add_ps does: lanes i and i + 8, i and i + 4, i and
 * i + 2, then 0 and 1. */
static inline __attribute__((always_inline)) float reduce16(__m256 lo, __m256 hi) {
    const __m256 h = _mm256_add_ps(lo, hi);
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}
#endif

/* AVX-512 paths (F + BW + VL; vpdpbusd when the CPU has AVX512-VNNI). Two variants of the 32-block kernels
 * are compiled from kernels_avx512_impl.h; the K-quant kernels use vpmaddubsw + vpmaddwd with the
 * sub-block scales (the scale multiply comes for free in vpmaddwd); Q6_K only. Only reached after the CPU check. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))
#define XT(type, t) ((const type *)((const uint8_t *)vx + (size_t)(t) * xs))

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
/* Not _cvtsh_ss: clang then inserts the half into whatever register holds the accumulator (the other lanes
 * are "undefined"), chaining every block to the previous FMA. The empty asm forces a clean vmovd. */
INLINE float h2f(uint16_t h) {
    __m128i v = _mm_cvtsi32_si128(h);
    __asm__("" : "+x"(v));
    return _mm_cvtss_f32(_mm_cvtph_ps(v));
}
#define LK_VNNI 0
#include "kernels_avx512_impl.h"
#undef LK_VNNI

/* ------------------------------------- K-quants ------------------------------------- */

INLINE __m512i dot_scaled(__m512i q, __m512i y, __m512i sc16) {
    return _mm512_madd_epi16(_mm512_maddubs_epi16(q, y), sc16);
}

INLINE void q6_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q6_K *w = vw;
    const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    /* per-16-bit-lane shifts of the broadcast qh: halves get bits 0-1 / 2-3 (q1, q2) and 4-5 / 6-7 (q3, q4) */
    const __m512i sh12 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
    const __m512i sh34 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(6));
    /* vpermw indices spreading 4 scales over 8 lanes each (i16 lanes k*8..k*8+7 → scale base+k) */
    __m512i idx[4];
    for (int g = 0; g < 4; g++) {
        short v[32];
        for (int k = 0; k < 32; k++) v[k] = (short)(4 * g + k / 8);
        idx[g] = _mm512_loadu_si512((const void *)v);
    }
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(w[i].d);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)w[i].scales));
        const __m512i sc512 = _mm512_castsi256_si512(sc16);
        __m512i sumi[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
        for (int half = 0; half < 2; half++) {
            const __m512i L = _mm512_loadu_si512((const void *)(w[i].ql + 64 * half));
            const __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(w[i].qh + 32 * half)));
            const __m512i q12 = _mm512_or_si512(_mm512_and_si512(L, m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, sh12), m3), 4));
            const __m512i q34 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m4),
                                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, sh34), m3), 4));
            const __m512i s12 = _mm512_permutexvar_epi16(idx[2 * half], sc512);
            const __m512i s34 = _mm512_permutexvar_epi16(idx[2 * half + 1], sc512);
            for (int t = 0; t < NT; t++) {
                const int8_t *a = XT(block_q8_K, t)[i].qs + 128 * half;
                const __m512i p0 = dot_scaled(q12, _mm512_loadu_si512((const void *)a), s12);
                const __m512i p1 = dot_scaled(q34, _mm512_loadu_si512((const void *)(a + 64)), s34);
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(p0, p1));
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)x->bsums));
            const __m512i c512 = _mm512_castsi256_si512(_mm256_slli_epi32(corr, 5)); /* upper lanes zero */
            sumi[t] = _mm512_sub_epi32(sumi[t], _mm512_inserti64x4(c512, _mm256_setzero_si256(), 1));
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(d * x->d), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) s[t] = _mm512_reduce_add_ps(acc[t]);
}

/* dot (1 row × 1 token), dot4 (1 × 4), dot2 (2 rows × 1 or 4 tokens) */
#define ENTRY(T)                                                                                              \
    static float dot_##T(int64_t n, const void *w, const void *x) {                                         \
        float s[8];                                                                                          \
        T##_rows(n, w, 0, x, 0, s, 1, 1);                                                                    \
        return s[0];                                                                                         \
    }                                                                                                        \
    static void dot4_##T(int64_t n, const void *w, const void *x, size_t xs, float *s) {                    \
        T##_rows(n, w, 0, x, xs, s, 1, 4);                                                                   \
    }                                                                                                        \
    static void dot2_##T(int64_t n, const void *w, size_t ws, const void *x, size_t xs, int nt, float *s) {  \
        if (nt == 4) T##_rows(n, w, ws, x, xs, s, 2, 4);                                                     \
        else T##_rows(n, w, ws, x, xs, s, 2, 1);                                                             \
    }
#define ENTRY_K(T)                                                                                            \
    static float dot_##T(int64_t n, const void *w, const void *x) {                                         \
        float s;                                                                                             \
        T##_rows(n, w, x, 0, &s, 1);                                                                         \
        return s;                                                                                            \
    }                                                                                                        \
    static void dot4_##T(int64_t n, const void *w, const void *x, size_t xs, float *s) { T##_rows(n, w, x, xs, s, 4); }

ENTRY(q4_1_bw)
ENTRY(q5_0_bw)
ENTRY(q5_1_bw)
ENTRY(q8_0_bw)
ENTRY_K(q6_K)
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#define LK_VNNI 1
#include "kernels_avx512_impl.h"
#undef LK_VNNI
ENTRY(q4_1_vnni)
ENTRY(q5_0_vnni)
ENTRY(q5_1_vnni)
ENTRY(q8_0_vnni)
#pragma clang attribute pop

void lk_fill_avx512(lk_kernel_table *t, int use_vnni) {
#define SET(ID, T) t->dot[ID] = dot_##T, t->dot4[ID] = dot4_##T, t->dot2[ID] = dot2_##T
#define SET_K(ID, T) t->dot[ID] = dot_##T, t->dot4[ID] = dot4_##T
    if (use_vnni && (lk_cpu_features() & LK_CPU_AVX512VNNI)) {
        SET(LK_TYPE_Q4_1, q4_1_vnni);
        SET(LK_TYPE_Q5_0, q5_0_vnni);
        SET(LK_TYPE_Q5_1, q5_1_vnni);
        SET(LK_TYPE_Q8_0, q8_0_vnni);
        lk_fill_avx512_matvec(t);
        lk_fill_avx512_gemm(t);
    } else {
        SET(LK_TYPE_Q4_1, q4_1_bw);
        SET(LK_TYPE_Q5_0, q5_0_bw);
        SET(LK_TYPE_Q5_1, q5_1_bw);
        SET(LK_TYPE_Q8_0, q8_0_bw);
    }
    /* Q4_K/Q5_K stay on the AVX2 kernels: a 512-bit Q4_K was ~15% slower on this (double-pumped
     * AVX-512) CPU because of the extra lane shuffles, so it was dropped. */
    SET_K(LK_TYPE_Q6_K, q6_K);
#undef SET
#undef SET_K
}

#else
void lk_fill_avx512(lk_kernel_table *t, int use_vnni) { (void)t; (void)use_vnni; }
#endif

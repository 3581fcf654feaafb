/* AVX-512 paths (F + BW + VL; vpdpbusd when the CPU has AVX512-VNNI). Two variants of the 32-block kernels
 * are compiled from kernels_avx512_impl.h; the K-quant kernels use vpmaddubsw + vpmaddwd with the
 * sub-block scales (the scale multiply comes for free in vpmaddwd). Only reached after the CPU check. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))
#define XT(type, t) ((const type *)((const uint8_t *)vx + (size_t)(t) * xs))

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
INLINE float h2f(uint16_t h) { return _cvtsh_ss(h); }
#define LK_VNNI 0
#include "kernels_avx512_impl.h"
#undef LK_VNNI

/* ------------------------------------- K-quants ------------------------------------- */

/* i16 vector: first 16 lanes = a, last 16 lanes = b */
INLINE __m512i scale_halves16(int a, int b) {
    return _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16((short)a), _mm512_set1_epi16((short)b));
}

INLINE __m512i load_pair256(const int8_t *a, const int8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

INLINE __m512i dot_scaled(__m512i q, __m512i y, __m512i sc16) {
    return _mm512_madd_epi16(_mm512_maddubs_epi16(q, y), sc16);
}

INLINE float hsum256_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

INLINE void q4_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q4_K *w = vw;
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    float accm[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) lk_get_scale_min_k4(j, w[i].scales, &sc[j], &mn[j]);
        const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
        __m512i sumi[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
        for (int h = 0; h < 2; h++) {
            /* chunks 2h, 2h+1: low nibbles = sub-blocks 4h, 4h+2; high nibbles = 4h+1, 4h+3 */
            const __m512i bits = _mm512_loadu_si512((const void *)(w[i].qs + 64 * h));
            const __m512i lo = _mm512_and_si512(bits, m4), hi = _mm512_and_si512(_mm512_srli_epi16(bits, 4), m4);
            const __m512i slo = scale_halves16(sc[4 * h], sc[4 * h + 2]), shi = scale_halves16(sc[4 * h + 1], sc[4 * h + 3]);
            for (int t = 0; t < NT; t++) {
                const int8_t *a = XT(block_q8_K, t)[i].qs + 128 * h;
                const __m512i p0 = dot_scaled(lo, load_pair256(a, a + 64), slo);
                const __m512i p1 = dot_scaled(hi, load_pair256(a + 32, a + 96), shi);
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(p0, p1));
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            int summ = 0;
            for (int j = 0; j < 8; j++) summ += mn[j] * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(d * x->d), _mm512_cvtepi32_ps(sumi[t]), acc[t]);
            accm[t] += dmin * x->d * (float)summ;
        }
    }
    for (int t = 0; t < NT; t++) s[t] = _mm512_reduce_add_ps(acc[t]) - accm[t];
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

#define ENTRY(T)                                                                                              \
    static float dot_##T(int64_t n, const void *w, const void *x) {                                         \
        float s;                                                                                             \
        T##_rows(n, w, x, 0, &s, 1);                                                                         \
        return s;                                                                                            \
    }                                                                                                        \
    static void dot4_##T(int64_t n, const void *w, const void *x, size_t xs, float *s) { T##_rows(n, w, x, xs, s, 4); }

ENTRY(q4_0_bw)
ENTRY(q4_1_bw)
ENTRY(q5_0_bw)
ENTRY(q5_1_bw)
ENTRY(q8_0_bw)
ENTRY(q4_K)
ENTRY(q6_K)
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#define LK_VNNI 1
#include "kernels_avx512_impl.h"
#undef LK_VNNI
ENTRY(q4_0_vnni)
ENTRY(q4_1_vnni)
ENTRY(q5_0_vnni)
ENTRY(q5_1_vnni)
ENTRY(q8_0_vnni)
#pragma clang attribute pop

void lk_fill_avx512(lk_kernel_table *t, int use_vnni) {
#define SET(ID, T) t->dot[ID] = dot_##T, t->dot4[ID] = dot4_##T
    if (use_vnni && (lk_cpu_features() & LK_CPU_AVX512VNNI)) {
        SET(LK_TYPE_Q4_0, q4_0_vnni);
        SET(LK_TYPE_Q4_1, q4_1_vnni);
        SET(LK_TYPE_Q5_0, q5_0_vnni);
        SET(LK_TYPE_Q5_1, q5_1_vnni);
        SET(LK_TYPE_Q8_0, q8_0_vnni);
    } else {
        SET(LK_TYPE_Q4_0, q4_0_bw);
        SET(LK_TYPE_Q4_1, q4_1_bw);
        SET(LK_TYPE_Q5_0, q5_0_bw);
        SET(LK_TYPE_Q5_1, q5_1_bw);
        SET(LK_TYPE_Q8_0, q8_0_bw);
    }
    SET(LK_TYPE_Q4_K, q4_K);
    SET(LK_TYPE_Q6_K, q6_K);
#undef SET
}

#else
void lk_fill_avx512(lk_kernel_table *t, int use_vnni) { (void)t; (void)use_vnni; }
#endif

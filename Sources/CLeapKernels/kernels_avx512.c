/* AVX-512 row kernels (F + BW + VL): Q6_K only, in ggml's order, two rows per zmm (dot2); vpmaddubsw +
 * vpmaddwd with the sub-block scales (the scale multiply comes for free in vpmaddwd). The 32-block types
 * keep the AVX2 row kernels (ggml's order); Q4_0 is in kernels_q4_0.c; with AVX512-VNNI the decode matvec
 * and prefill gemm kernels come from kernels_avx512_matvec.c / _gemm.c. Only reached after the CPU check. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define XT(type, t) ((const type *)((const uint8_t *)vx + (size_t)(t) * xs))

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
#include "lk_x86_avx2.h"
/* ------------------------------------- K-quants ------------------------------------- */

/* Q6_K in ggml's order (our AVX2 kernel): per output an 8-lane float chain over the super-blocks, acc +=
 * (d·dx) · sumi, where s32 lane k of sumi = Σ over the 8 vectors of 32 weights of sc · (products of bytes
 * 4k..4k+3) − 32 · (sc[2k]·bsums[2k] + sc[2k+1]·bsums[2k+1]); then hsum_ps. Rows a, b share each zmm (their
 * 256-bit halves), so each output keeps exactly those integers and that order, and the unpack runs once
 * for both rows and all NT tokens. */
INLINE void q6_K_rows2(int64_t n, const void *vw, size_t ws, const void *vx, size_t xs, float *s, const int NT) {
    const block_q6_K *wa = vw, *wb = (const block_q6_K *)((const uint8_t *)vw + ws);
    const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    /* vpermw indices: for vector v of half h (j = 4h + v), s16 lanes 0-7 (bytes 0-15 of row a's vector)
     * take scale 2j, lanes 8-15 scale 2j + 1; lanes 16-31 the same for row b (its scales at 16..31) */
#define E8(x) x, x, x, x, x, x, x, x
#define IDX(j) {E8(2 * (j)), E8(2 * (j) + 1), E8(16 + 2 * (j)), E8(17 + 2 * (j))}
    static const int16_t scale_idx[8][32] __attribute__((aligned(64))) = {IDX(0), IDX(1), IDX(2), IDX(3), IDX(4), IDX(5), IDX(6), IDX(7)};
#undef IDX
#undef E8
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const __m512i sc = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)wa[i].scales))),
                                              _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)wb[i].scales)), 1);
        __m512i sumi[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
        for (int h = 0; h < 2; h++) {
#define PAIR256(pa, pb) _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(pa))), _mm256_loadu_si256((const __m256i *)(pb)), 1)
            const __m512i l0 = PAIR256(wa[i].ql + 64 * h, wb[i].ql + 64 * h);
            const __m512i l1 = PAIR256(wa[i].ql + 64 * h + 32, wb[i].ql + 64 * h + 32);
            const __m512i hb = PAIR256(wa[i].qh + 32 * h, wb[i].qh + 32 * h);
#undef PAIR256
            __m512i q[4];
            q[0] = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_slli_epi16(_mm512_and_si512(hb, m3), 4));
            q[1] = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 2), m3), 4));
            q[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 4), m3), 4));
            q[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                                   _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(hb, 6), m3), 4));
            for (int v = 0; v < 4; v++) {
                const __m512i scv = _mm512_permutexvar_epi16(_mm512_load_si512((const void *)scale_idx[4 * h + v]), sc);
                for (int t = 0; t < NT; t++) {
                    const __m512i y = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(XT(block_q8_K, t)[i].qs + 128 * h + 32 * v)));
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_madd_epi16(_mm512_maddubs_epi16(q[v], y), scv));
                }
            }
        }
        const float da = h2f(wa[i].d), db = h2f(wb[i].d);
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x->bsums));
            sumi[t] = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(_mm512_madd_epi16(sc, bs), 5));
            const __m512 d = _mm512_insertf32x8(_mm512_set1_ps(da * x->d), _mm256_set1_ps(db * x->d), 1);
            acc[t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) { /* hsum_ps of each 256-bit half */
        const __m512 v = _mm512_shuffle_f32x4(acc[t], acc[t], _MM_SHUFFLE(3, 1, 2, 0));
        __m256 r = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        r = _mm256_add_ps(r, _mm256_permute_ps(r, _MM_SHUFFLE(1, 0, 3, 2)));
        r = _mm256_add_ps(r, _mm256_movehdup_ps(r));
        float hs[8];
        _mm256_storeu_ps(hs, r);
        s[t] = hs[0];
        s[4 + t] = hs[4];
    }
}

/* Q6_K, one row × NT tokens: the 512-bit vectors hold two of the 32-weight vectors ([q1, q2], [q3, q4] of a
 * half, one 64-byte activation load each); their s32 halves are added (integers: exact) before the float
 * step, so each token keeps the 8-lane integers and the float chain above. */
INLINE void q6_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q6_K *w = vw;
    const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    /* per-16-bit-lane shifts of the broadcast qh: halves get bits 0-1 / 2-3 (q1, q2) and 4-5 / 6-7 (q3, q4) */
    const __m512i sh12 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
    const __m512i sh34 = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(6));
    /* vpermw indices spreading 4 scales over 8 lanes each (s16 lanes 8k..8k+7 → scale 4g + k); in registers
     * (measured 4% faster than loading them from a table) */
    __m512i idx[4];
    for (int g = 0; g < 4; g++) {
        short v[32];
        for (int k = 0; k < 32; k++) v[k] = (short)(4 * g + k / 8);
        idx[g] = _mm512_loadu_si512((const void *)v);
    }
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
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
                const __m512i p0 = _mm512_madd_epi16(_mm512_maddubs_epi16(q12, _mm512_loadu_si512((const void *)a)), s12);
                const __m512i p1 = _mm512_madd_epi16(_mm512_maddubs_epi16(q34, _mm512_loadu_si512((const void *)(a + 64))), s34);
                sumi[t] = _mm512_add_epi32(sumi[t], _mm512_add_epi32(p0, p1));
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)x->bsums));
            const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sumi[t]), _mm512_extracti64x4_epi64(sumi[t], 1));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), _mm256_cvtepi32_ps(_mm256_sub_epi32(s8, _mm256_slli_epi32(corr, 5))), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) { /* hsum_ps */
        __m128 r = _mm_add_ps(_mm256_castps256_ps128(acc[t]), _mm256_extractf128_ps(acc[t], 1));
        r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        r = _mm_add_ss(r, _mm_movehdup_ps(r));
        s[t] = _mm_cvtss_f32(r);
    }
}

/* Q6_K: one token pairs two rows per zmm (q6_K_rows2, faster); four tokens take each row alone
 * (q6_K_rows: 64-byte activation loads, faster there) */
static float dot_q6_K(int64_t n, const void *w, const void *x) {
    float s;
    q6_K_rows(n, w, x, 0, &s, 1);
    return s;
}
static void dot4_q6_K(int64_t n, const void *w, const void *x, size_t xs, float *s) { q6_K_rows(n, w, x, xs, s, 4); }
static void dot2_q6_K(int64_t n, const void *w, size_t ws, const void *x, size_t xs, int nt, float *s) {
    if (nt == 4) {
        q6_K_rows(n, w, x, xs, s, 4);
        q6_K_rows(n, (const uint8_t *)w + ws, x, xs, s + 4, 4);
    } else {
        q6_K_rows2(n, w, ws, x, xs, s, 1);
    }
}

#pragma clang attribute pop

void lk_fill_avx512(lk_kernel_table *t, int use_vnni) {
    if (use_vnni) {
        lk_fill_avx512_matvec(t);
        lk_fill_avx512_gemm(t);
    }
    /* Q4_K/Q5_K stay on the AVX2 kernels: a 512-bit Q4_K was ~15% slower on this (double-pumped
     * AVX-512) CPU because of the extra lane shuffles, so it was dropped. */
    t->dot[LK_TYPE_Q6_K] = dot_q6_K, t->dot4[LK_TYPE_Q6_K] = dot4_q6_K, t->dot2[LK_TYPE_Q6_K] = dot2_q6_K;
}

#else
void lk_fill_avx512(lk_kernel_table *t, int use_vnni) { (void)t; (void)use_vnni; }
#endif

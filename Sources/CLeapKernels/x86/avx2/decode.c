/* AVX2 + FMA + F16C paths (x86-64). Every function here is compiled for that target and only reached
 * through the dispatch table after the CPU check in dispatch.c; the rest of the library stays baseline x86-64.
 *
 * Integer dot products use the ggml technique: maddubs(|w|, sign(x, w)) (u8 × s8 → s16 pairs), then
 * madd with ones (→ s32) or with the sub-block scales (K-quants). Each *_rows kernel handles NT activation
 * rows (1 for matvec, 4 for matmul) so the weight block is unpacked once per NT tokens. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#include "../lk_x86_avx2.h"

/* Σ of s8 × s8 in 8 lanes of s32, as float. */
INLINE __m256 dot_s8_ps(__m256i w, __m256i x) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

/* Σ of u8 × s8 in 8 lanes of s32, as float. */
INLINE __m256 dot_u8_ps(__m256i w, __m256i x) {
    const __m256i p = _mm256_maddubs_epi16(w, x);
    return _mm256_cvtepi32_ps(_mm256_madd_epi16(p, _mm256_set1_epi16(1)));
}

#define XT(type, t) ((const type *)((const uint8_t *)vx + (size_t)(t) * xs))
#include "../lk_avx2_ksums.h"

/* ---------------------------------- 32-block types ---------------------------------- */

/* The f16 fields at a and b as floats in lanes 0 and 1 (one vcvtph2ps for both). */
INLINE __m128 h2f_pair(const uint16_t *a, const uint16_t *b) {
    return _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)*a | ((uint32_t)*b << 16))));
}
static const uint16_t zero16 = 0;

/* Weight preparation per block `wb` → `q` (32 bytes in element order), and the matching product. */
#define PREP_Q4_1 const __m256i q = nibbles_32(wb->qs);
/* Q5_0: q − 16 as s8: nibble | 0xF0 when the 5th bit is clear (= nibble − 16), the nibble when set */
#define PREP_Q5_0                                                                                            \
    const __m256i q = _mm256_or_si256(nibbles_32(wb->qs),                                                   \
                                      _mm256_andnot_si256(bits_to_bytes_32(wb->qh), _mm256_set1_epi8((char)0xF0)));
#define PREP_Q5_1                                                                                            \
    const __m256i q = _mm256_or_si256(nibbles_32(wb->qs), _mm256_and_si256(bits_to_bytes_32(wb->qh), _mm256_set1_epi8(16)));
#define PREP_Q8_0 const __m256i q = _mm256_loadu_si256((const __m256i *)wb->qs);

/* Two blocks per iteration so that both blocks' scales take one conversion; an odd last block alone.
 * DOT(q, y) is dot_s8_ps (signed weights) or dot_u8_ps (unsigned); M_PAIR / M_ONE add the Q8_1 term m·s. */
#define BLOCK32_KERNEL(NAME, W, X, PREP, DOT, M_PAIR, M_ONE)                                                 \
    INLINE void NAME(int64_t n, const void *vw, size_t ws, const void *vx, size_t xs, float *s, const int NR, \
                     const int NT) {                                                                         \
        const int64_t nb = n / QK;                                                                           \
        __m256 acc[2][4];                                                                                    \
        float summ[2][4];                                                                                    \
        for (int r = 0; r < 2; r++)                                                                          \
            for (int t = 0; t < 4; t++) acc[r][t] = _mm256_setzero_ps(), summ[r][t] = 0.0f;                 \
        int64_t i = 0;                                                                                       \
        for (; i + 1 < nb; i += 2) {                                                                         \
            __m256i q0[2], q1[2];                                                                            \
            __m128 dw[2];                                                                                    \
            for (int r = 0; r < NR; r++) {                                                                   \
                const W *w0 = (const W *)((const uint8_t *)vw + (size_t)r * ws) + i, *w1 = w0 + 1;          \
                { const W *wb = w0; PREP q0[r] = q; }                                                        \
                { const W *wb = w1; PREP q1[r] = q; }                                                        \
                dw[r] = h2f_pair(&w0->d, &w1->d);                                                            \
            }                                                                                                \
            for (int t = 0; t < NT; t++) {                                                                   \
                const X *x0 = XT(X, t) + i, *x1 = x0 + 1;                                                    \
                const __m128 xd = h2f_pair(&x0->d, &x1->d);                                                  \
                const __m256i y0 = _mm256_loadu_si256((const __m256i *)x0->qs);                              \
                const __m256i y1 = _mm256_loadu_si256((const __m256i *)x1->qs);                              \
                for (int r = 0; r < NR; r++) {                                                               \
                    const W *w0 = (const W *)((const uint8_t *)vw + (size_t)r * ws) + i, *w1 = w0 + 1;      \
                    (void)w1;                                                                                \
                    const __m128 d = _mm_mul_ps(dw[r], xd);                                                  \
                    acc[r][t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(d), DOT(q0[r], y0), acc[r][t]);        \
                    acc[r][t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(d)), DOT(q1[r], y1), acc[r][t]); \
                    M_PAIR                                                                                   \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        if (i < nb) {                                                                                        \
            for (int r = 0; r < NR; r++) {                                                                   \
                const W *wb = (const W *)((const uint8_t *)vw + (size_t)r * ws) + i;                         \
                PREP                                                                                         \
                for (int t = 0; t < NT; t++) {                                                               \
                    const X *x0 = XT(X, t) + i;                                                              \
                    const __m128 d = _mm_mul_ps(h2f_pair(&wb->d, &wb->d), h2f_pair(&x0->d, &x0->d));         \
                    acc[r][t] = _mm256_fmadd_ps(_mm256_broadcastss_ps(d), DOT(q, _mm256_loadu_si256((const __m256i *)x0->qs)), acc[r][t]); \
                    M_ONE                                                                                    \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int t = 0; t < NT; t++)                                                                     \
                s[4 * r + t] = hsum_ps(acc[r][t]) + summ[r][t];                                                 \
    }

/* Σ m·s block after block in one fused chain, as GCC compiles ggml's `summs += m * s`: bit-identical sums */
#define M_PAIR                                                                                               \
    {                                                                                                        \
        const __m128 m = h2f_pair(&w0->m, &w1->m), xs = h2f_pair(&x0->s, &x1->s);                            \
        summ[r][t] = __builtin_fmaf(_mm_cvtss_f32(m), _mm_cvtss_f32(xs), summ[r][t]);                        \
        summ[r][t] = __builtin_fmaf(_mm_cvtss_f32(_mm_movehdup_ps(m)), _mm_cvtss_f32(_mm_movehdup_ps(xs)), summ[r][t]); \
    }
#define M_ONE summ[r][t] = __builtin_fmaf(_mm_cvtss_f32(h2f_pair(&wb->m, &zero16)), _mm_cvtss_f32(h2f_pair(&x0->s, &zero16)), summ[r][t]);

/* Q8_0 × Q8_0 is s8 × s8 (dot_s8_ps handles signed weights) */
BLOCK32_KERNEL(q4_1_rows, block_q4_1, block_q8_1, PREP_Q4_1, dot_u8_ps, M_PAIR, M_ONE)
BLOCK32_KERNEL(q5_0_rows, block_q5_0, block_q8_0, PREP_Q5_0, dot_s8_ps, , )
BLOCK32_KERNEL(q5_1_rows, block_q5_1, block_q8_1, PREP_Q5_1, dot_u8_ps, M_PAIR, M_ONE)
BLOCK32_KERNEL(q8_0_rows, block_q8_0, block_q8_0, PREP_Q8_0, dot_s8_ps, , )

/* ------------------------------------- K-quants ------------------------------------- */

INLINE void q4_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q4_K *w = vw;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    float accm[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) lk_get_scale_min_k4(j, w[i].scales, &sc[j], &mn[j]);
        const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
        __m256i chunk[4][4];
        q4_K_chunk_sums(w + i, sc, vx, xs, i, NT, chunk);
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            const __m256i sumi = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(chunk[0][t], chunk[1][t]), chunk[2][t]), chunk[3][t]);
            int summ = 0;
            for (int j = 0; j < 8; j++) summ += mn[j] * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), _mm256_cvtepi32_ps(sumi), acc[t]);
            accm[t] += dmin * x->d * (float)summ;
        }
    }
    for (int t = 0; t < NT; t++) s[t] = hsum_ps(acc[t]) - accm[t];
}

INLINE void q5_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q5_K *w = vw;
    const __m256i m4 = _mm256_set1_epi8(15), sixteen = _mm256_set1_epi8(16);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    float accm[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) lk_get_scale_min_k4(j, w[i].scales, &sc[j], &mn[j]);
        const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
        const __m256i hbits = _mm256_loadu_si256((const __m256i *)w[i].qh);
        __m256i sumi[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int c = 0; c < 4; c++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * c));
            const __m256i b0 = _mm256_set1_epi8((char)(1 << (2 * c))), b1 = _mm256_set1_epi8((char)(1 << (2 * c + 1)));
            const __m256i h0 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, b0), b0), sixteen);
            const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hbits, b1), b1), sixteen);
            const __m256i lo = _mm256_or_si256(_mm256_and_si256(bits, m4), h0);
            const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 4), m4), h1);
            const __m256i s0 = _mm256_set1_epi16(sc[2 * c]), s1 = _mm256_set1_epi16(sc[2 * c + 1]);
            for (int t = 0; t < NT; t++) {
                const int8_t *a = XT(block_q8_K, t)[i].qs + 64 * c;
                const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)a)), s0);
                const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a + 32))), s1);
                sumi[t] = _mm256_add_epi32(sumi[t], _mm256_add_epi32(p0, p1));
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            int summ = 0;
            for (int j = 0; j < 8; j++) summ += mn[j] * (x->bsums[2 * j] + x->bsums[2 * j + 1]);
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            accm[t] += dmin * x->d * (float)summ;
        }
    }
    for (int t = 0; t < NT; t++) s[t] = hsum_ps(acc[t]) - accm[t];
}

/* Q6_K: q = 0..63 as u8 (the −32 offset is applied through the activation block sums: Σ sc·bsum·32). */
INLINE void q6_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q6_K *w = vw;
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(w[i].d);
        __m256i sumi[4];
        q6_K_block_sums(w + i, vx, xs, i, NT, sumi);
        for (int t = 0; t < NT; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * XT(block_q8_K, t)[i].d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
    }
    for (int t = 0; t < NT; t++) s[t] = hsum_ps(acc[t]);
}

/* Q2_K: 2-bit q (0..3) with 4-bit scale and min per 16; the min term goes through the activation bsums. */
INLINE void q2_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q2_K *w = vw;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    float accm[4] = {0, 0, 0, 0};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(w[i].d), dmin = h2f(w[i].dmin);
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)w[i].scales);
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(15)));
        __m256i sumi[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int half = 0; half < 2; half++) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * half));
            for (int sh = 0; sh < 4; sh++) {
                const int is = 8 * half + 2 * sh;
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * sh), m3);
                const __m256i sc = _mm256_set_m128i(_mm_set1_epi16(w[i].scales[is + 1] & 15), _mm_set1_epi16(w[i].scales[is] & 15));
                for (int t = 0; t < NT; t++) {
                    const int8_t *a = XT(block_q8_K, t)[i].qs + 128 * half + 32 * sh;
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)a)), sc));
                }
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            const __m256i mm = _mm256_madd_epi16(mins16, _mm256_loadu_si256((const __m256i *)x->bsums));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
            accm[t] += dmin * x->d * hsum_ps(_mm256_cvtepi32_ps(mm));
        }
    }
    for (int t = 0; t < NT; t++) s[t] = hsum_ps(acc[t]) - accm[t];
}

/* Q3_K: q = 2 low bits + (high bit ? 0 : −4), computed as u = low | high·4 (0..7) and q = u − 4, the −4
 * applied through the activation bsums; 16 signed 6-bit scales. */
INLINE void q3_K_rows(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q3_K *w = vw;
    const __m256i m3 = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float d = h2f(w[i].d);
        int16_t sc[16];
        for (int j = 0; j < 16; j++) {
            const int low4 = (w[i].scales[j % 8] >> (4 * (j / 8))) & 15;
            const int high2 = (w[i].scales[8 + j % 4] >> (2 * (j / 4))) & 3;
            sc[j] = (int16_t)((low4 | (high2 << 4)) - 32);
        }
        const __m256i sc16 = _mm256_loadu_si256((const __m256i *)sc);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)w[i].hmask);
        __m256i sumi[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int half = 0; half < 2; half++) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * half));
            for (int sh = 0; sh < 4; sh++) {
                const int is = 8 * half + 2 * sh;
                const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * half + sh)));
                const __m256i high = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit), four);
                const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qv, 2 * sh), m3), high);
                const __m256i scv = _mm256_set_m128i(_mm_set1_epi16(sc[is + 1]), _mm_set1_epi16(sc[is]));
                for (int t = 0; t < NT; t++) {
                    const int8_t *a = XT(block_q8_K, t)[i].qs + 128 * half + 32 * sh;
                    sumi[t] = _mm256_add_epi32(sumi[t], _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)a)), scv));
                }
            }
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_K *x = XT(block_q8_K, t) + i;
            /* − 4 · Σ_g sc_g · bsum_g */
            const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)x->bsums));
            sumi[t] = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(corr, 2));
            acc[t] = _mm256_fmadd_ps(_mm256_set1_ps(d * x->d), _mm256_cvtepi32_ps(sumi[t]), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) s[t] = hsum_ps(acc[t]);
}

/* ------------------------------------ float types ------------------------------------ */

INLINE __m256 load8_f16(const uint16_t *p) { return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p)); }
INLINE __m256 load8_bf16(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}
INLINE __m256 load8_f32(const float *p) { return _mm256_loadu_ps(p); }

#define FLOAT_ROWS(NAME, WT, LOAD8, SCALAR)                                                                  \
    INLINE void NAME(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {         \
        const WT *w = vw;                                                                                    \
        __m256 acc[4][2];                                                                                    \
        for (int t = 0; t < 4; t++) acc[t][0] = acc[t][1] = _mm256_setzero_ps();                             \
        int64_t i = 0;                                                                                       \
        for (; i + 16 <= n; i += 16) {                                                                       \
            const __m256 w0 = LOAD8(w + i), w1 = LOAD8(w + i + 8);                                           \
            for (int t = 0; t < NT; t++) {                                                                   \
                const float *x = XT(float, t) + i;                                                          \
                acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x), acc[t][0]);                              \
                acc[t][1] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + 8), acc[t][1]);                          \
            }                                                                                                \
        }                                                                                                    \
        for (; i + 8 <= n; i += 8) {                                                                         \
            const __m256 w0 = LOAD8(w + i);                                                                  \
            for (int t = 0; t < NT; t++) acc[t][0] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(XT(float, t) + i), acc[t][0]); \
        }                                                                                                    \
        for (int t = 0; t < NT; t++) {                                                                       \
            float r = hsum_ps(_mm256_add_ps(acc[t][0], acc[t][1]));                                          \
            for (int64_t j = i; j < n; j++) r += SCALAR(w[j]) * XT(float, t)[j];                            \
            s[t] = r;                                                                                        \
        }                                                                                                    \
    }

#define ID(x) (x)
FLOAT_ROWS(f32_rows, float, load8_f32, ID)
FLOAT_ROWS(f16_rows, uint16_t, load8_f16, h2f)
FLOAT_ROWS(bf16_rows, uint16_t, load8_bf16, lk_bf2f)

/* dot (1 row) and dot4 (4 tokens) entry points; the 32-block kernels also have dot2 (2 rows × 1|4 tokens) */
#define ENTRY2(T)                                                                                             \
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

ENTRY2(q4_1)
ENTRY2(q5_0)
ENTRY2(q5_1)
ENTRY2(q8_0)
LK_DOT_ENTRIES(q2_K)
LK_DOT_ENTRIES(q3_K)
LK_DOT_ENTRIES(q4_K)
LK_DOT_ENTRIES(q5_K)
LK_DOT_ENTRIES(q6_K)
LK_DOT_ENTRIES(f32)
LK_DOT_ENTRIES(f16)
LK_DOT_ENTRIES(bf16)

/* For other paths' tails: s[t] = dot of one weight row with nt (1 or 4) activation rows. */
void lk_avx2_rows(int type, int64_t n, const void *w, const void *x, size_t xs, float *s, int nt) {
#define CASE(ID, T)                                       \
    case ID:                                              \
        if (nt == 4) T##_rows(n, w, 0, x, xs, s, 1, 4);   \
        else T##_rows(n, w, 0, x, xs, s, 1, 1);           \
        break;
    switch (type) {
        CASE(LK_TYPE_Q4_1, q4_1)
        CASE(LK_TYPE_Q5_0, q5_0)
        CASE(LK_TYPE_Q5_1, q5_1)
        CASE(LK_TYPE_Q8_0, q8_0)
    default: break;
    }
#undef CASE
}

/* ------------------------------ activation quantization ------------------------------ */

/* 32 int32 (4 vectors in element order) → 32 int8 */
INLINE __m256i pack_32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
    const __m256i a = _mm256_packs_epi32(i0, i1), b = _mm256_packs_epi32(i2, i3);
    return _mm256_permutevar8x32_epi32(_mm256_packs_epi16(a, b), _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

INLINE float amax_32(const float *x) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_andnot_ps(sign, _mm256_loadu_ps(x));
    for (int k = 8; k < 32; k += 8) m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + k)));
    __m128 r = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    r = _mm_max_ps(r, _mm_movehl_ps(r, r));
    r = _mm_max_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* q[32] = x · id rounded half to even (as ggml's x86 quantizer) into `qs`; returns Σ q */
INLINE int quant_32(const float *x, float id, int8_t *qs) {
    const __m256 vid = _mm256_set1_ps(id);
    __m256i i[4];
    for (int k = 0; k < 4; k++) i[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid));
    _mm256_storeu_si256((__m256i *)qs, pack_32(i[0], i[1], i[2], i[3]));
    const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3]));
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    r = _mm_add_epi32(r, _mm_unpackhi_epi64(r, r));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 1));
    return _mm_cvtsi128_si32(r);
}

#include "lk_quantize_q8.h"

static void quantize_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        float max;
        if (!q8_K_max(x, &max)) {
            memset(&y[i], 0, sizeof(y[i]));
            continue;
        }
        const float iscale = -127.0f / max;
        const __m256 vs = _mm256_set1_ps(iscale), lim = _mm256_set1_ps(127.0f);
        for (int k = 0; k < QK_K; k += 32) {
            __m256i q[4];
            for (int j = 0; j < 4; j++) {
                const __m256 v = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + k + 8 * j), vs),
                                                 _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q[j] = _mm256_cvtps_epi32(_mm256_min_ps(v, lim));
            }
            _mm256_storeu_si256((__m256i *)(y[i].qs + k), pack_32(q[0], q[1], q[2], q[3]));
        }
        for (int j = 0; j < QK_K / 16; j++) {
            const __m128i b = _mm_loadu_si128((const __m128i *)(y[i].qs + 16 * j));
            const __m256i w16 = _mm256_cvtepi8_epi16(b);
            const __m256i s32 = _mm256_madd_epi16(w16, _mm256_set1_epi16(1));
            __m128i r = _mm_add_epi32(_mm256_castsi256_si128(s32), _mm256_extracti128_si256(s32, 1));
            r = _mm_add_epi32(r, _mm_unpackhi_epi64(r, r));
            r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 1));
            y[i].bsums[j] = (int16_t)_mm_cvtsi128_si32(r);
        }
        y[i].d = 1.0f / iscale;
    }
}

/* ---------------------------------- f16 conversion ---------------------------------- */

static void f16_to_f32_row(const uint16_t *src, float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8_f16(src + i));
    for (; i < n; i++) dst[i] = h2f(src[i]);
}

static void f32_to_f16_row(const float *src, uint16_t *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++) dst[i] = lk_f2h(src[i]);
}

static float stream_sum(const float *x, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
    }
    float s = hsum_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) s += x[i];
    return s;
}

/* ---------------------------------- softmax exponentials ---------------------------------- */

/* lk_ggml_expf on 8 lanes (same operations, so the same bits). */
INLINE __m256 ggml_expf_8(__m256 x) {
    const __m256 r = _mm256_set1_ps(0x1.8p23f);
    const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
    const __m256 n = _mm256_sub_ps(z, r);
    const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
    const __m256 u = _mm256_mul_ps(b, b);
    const __m256 j = _mm256_fmadd_ps(
        _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                        _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
        u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
    const __m256 k = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_slli_epi32(_mm256_castps_si256(z), 23),
                                                          _mm256_castps_si256(_mm256_set1_ps(1.0f))));
    const __m256 ok = _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), _mm256_set1_ps(126.0f), _CMP_LE_OQ);
    /* out of range: 0 below 2^-126 (and for -inf), inf above 2^126 */
    const __m256 out = _mm256_and_ps(_mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_GT_OQ), _mm256_set1_ps(__builtin_inff()));
    return _mm256_blendv_ps(out, _mm256_mul_ps(j, k), ok);
}

static void silu(const float *x, float *y, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i, _mm256_div_ps(v, _mm256_add_ps(one, ggml_expf_8(_mm256_sub_ps(zero, v)))));
    }
    for (; i < n; i++) y[i] = x[i] / (1.0f + lk_ggml_expf(-x[i]));
}

static double softmax_exp(const float *x, float *y, int64_t n, float max) {
    const __m256 vm = _mm256_set1_ps(max);
    double sum = 0.0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256 lo = ggml_expf_8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        const __m256 hi = ggml_expf_8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm));
        _mm256_storeu_ps(y + i, lo);
        _mm256_storeu_ps(y + i + 8, hi);
        const __m256 a = _mm256_add_ps(hi, lo);
        const __m128 b = _mm_add_ps(_mm256_extractf128_ps(a, 1), _mm256_castps256_ps128(a));
        const __m128 c = _mm_add_ps(b, _mm_shuffle_ps(b, b, _MM_SHUFFLE(1, 0, 3, 2)));
        sum += (double)(_mm_cvtss_f32(c) + _mm_cvtss_f32(_mm_shuffle_ps(c, c, 1)));
    }
    for (; i < n; i++) sum += (double)(y[i] = lk_ggml_expf(x[i] - max));
    return sum;
}

#pragma clang attribute pop

LK_KERNELS(lk_avx2_decode,
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q4_1, dot_q4_1), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q4_1, dot4_q4_1), LK_KERNEL(LK_E_DOT2, LK_TYPE_Q4_1, dot2_q4_1),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q5_0, dot_q5_0), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q5_0, dot4_q5_0), LK_KERNEL(LK_E_DOT2, LK_TYPE_Q5_0, dot2_q5_0),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q5_1, dot_q5_1), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q5_1, dot4_q5_1), LK_KERNEL(LK_E_DOT2, LK_TYPE_Q5_1, dot2_q5_1),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q8_0, dot_q8_0), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q8_0, dot4_q8_0), LK_KERNEL(LK_E_DOT2, LK_TYPE_Q8_0, dot2_q8_0),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q2_K, dot_q2_K), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q2_K, dot4_q2_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q3_K, dot_q3_K), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q3_K, dot4_q3_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q4_K, dot_q4_K), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q4_K, dot4_q4_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q5_K, dot_q5_K), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q5_K, dot4_q5_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q6_K, dot_q6_K), LK_KERNEL(LK_E_DOT4, LK_TYPE_Q6_K, dot4_q6_K),
    LK_KERNEL(LK_E_DOT, LK_TYPE_F32, dot_f32), LK_KERNEL(LK_E_DOT4, LK_TYPE_F32, dot4_f32),
    LK_KERNEL(LK_E_DOT, LK_TYPE_F16, dot_f16), LK_KERNEL(LK_E_DOT4, LK_TYPE_F16, dot4_f16),
    LK_KERNEL(LK_E_DOT, LK_TYPE_BF16, dot_bf16), LK_KERNEL(LK_E_DOT4, LK_TYPE_BF16, dot4_bf16),
    LK_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_0, quantize_q8_0),
    LK_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_1, quantize_q8_1),
    LK_KERNEL(LK_E_QUANTIZE, LK_TYPE_Q8_K, quantize_q8_K),
    LK_KERNEL(LK_E_F16_TO_F32, LK_ANY, f16_to_f32_row),
    LK_KERNEL(LK_E_F32_TO_F16, LK_ANY, f32_to_f16_row),
    LK_KERNEL(LK_E_STREAM_SUM, LK_ANY, stream_sum),
    LK_KERNEL(LK_E_SOFTMAX_EXP, LK_ANY, softmax_exp),
    LK_KERNEL(LK_E_SILU, LK_ANY, silu));

#else
LK_NO_KERNELS(lk_avx2_decode);
#endif

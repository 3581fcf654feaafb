/* AVX-512 VNNI matrix × vector (decode) for Q4_1 and Q8_0 (Q4_0: kernels_q4_0.c): the whole row range of one
 * lk_matmul call.
 *
 * A row-at-a-time dot product redoes the activation's work (loading, f16 scale conversion, offset sums)
 * for every row. Here the activation is prepared once per call, per pair of 32-blocks (64 values):
 *   y    the 64 bytes in the order the weights unpack to (Q4: [x_i lo16, x_i+1 lo16, x_i hi16, x_i+1 hi16]),
 *   xs   the two f32 scales (and Q8_1's s = d·Σx),
 *   corr the integer offset term as the initial vpdpbusd accumulator, per s32 lane (4 bytes):
 *        Q4_0 Σ(q−8)·x = Σq·x − 8·Σx;  Q8_0 uses u = w ⊕ 0x80 = w + 128 (unsigned), Σw·x = Σu·x − 128·Σx.
 * so that a weight pair costs one load + unpack, one vpdpbusd and one FMA with the scale product. Four rows,
 * a quarter of the range apart (four long sequential streams for the hardware prefetchers), share every
 * activation load. Every s32 lane holds the same integer as in the row kernels (kernels_avx512_impl.h) and
 * the float work per lane and the final reduction are the same, so a token decoded here gives bit for bit
 * the logits of the same token in a batched prefill (which uses the row kernels). */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define INLINE static inline __attribute__((always_inline))

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)

enum { MV_MAX_PAIRS = 256 }; /* activations of up to 16384 columns are prepared on the stack (~53 KB) */

typedef struct {
    __m512i y;    /* activation bytes of the pair, in the weights' unpacked order */
    __m512 xs;    /* activation scales: Q4 [dx_i, s_i, dx_i+1, s_i+1] × 4 (Q8_1) or [dx_i, dx_i+1] × 8 (Q8_0),
                   * matching pair_scales; Q8_0 weights: dx_i in lanes 0-7, dx_i+1 in lanes 8-15 */
    __m512i corr; /* initial accumulator: the offset term */
} mv_pair;

INLINE uint32_t load32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
INLINE uint16_t load16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }
INLINE float h2f(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }

/* −offset · Σ y over the 4 bytes of each s32 lane: per lane, so that every lane's integer equals the row
 * kernels' (which subtract vpdpbusd(offset, y) lane by lane) and the float sums match them bit for bit */
INLINE __m512i lane_offsets(__m512i y, int offset) {
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)offset), y));
}

/* Q4 types: nibbles of blocks i, i+1 → [lo_i, lo_i+1, hi_i, hi_i+1] (block i in s32 lanes 0-3 and 8-11) */
INLINE __m512i q4_pair(const uint8_t *qs0, const uint8_t *qs1) {
    const __m256i t = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)qs0)),
                                              _mm_loadu_si128((const __m128i *)qs1), 1);
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1);
    return _mm512_and_si512(q, _mm512_set1_epi8(15));
}

/* x blocks (Q8_0 or Q8_1, given by their qs and d fields) → pairs in Q4 order; offset = 8 for Q4_0 */
INLINE void prep_q4(const uint8_t *x, size_t xb, int64_t np, int offset, mv_pair *pa) {
    const size_t qs_off = xb == sizeof(block_q8_1) ? 4 : 2;
    for (int64_t k = 0; k < np; k++) {
        const uint8_t *a = x + (size_t)(2 * k) * xb, *b = a + xb;
        const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(a + qs_off))),
                                                   _mm_loadu_si128((const __m128i *)(b + qs_off)), 1);
        const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(a + qs_off + 16))),
                                                   _mm_loadu_si128((const __m128i *)(b + qs_off + 16)), 1);
        pa[k].y = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        const float da = h2f(load16(a)), db = h2f(load16(b));
        if (xb == sizeof(block_q8_1)) { /* Q8_1: s = d·Σqs */
            const float s0 = h2f(load16(a + 2)), s1 = h2f(load16(b + 2));
            pa[k].xs = _mm512_castps128_ps512(_mm_setr_ps(da, s0, db, s1));
            pa[k].xs = _mm512_shuffle_f32x4(pa[k].xs, pa[k].xs, 0);
        } else {
            pa[k].xs = _mm512_castps128_ps512(_mm_setr_ps(da, db, da, db));
            pa[k].xs = _mm512_shuffle_f32x4(pa[k].xs, pa[k].xs, 0);
        }
        pa[k].corr = offset ? lane_offsets(pa[k].y, offset) : _mm512_setzero_si512();
    }
}

/* The f16 scales of the NR rows' pairs converted with one vcvtph2ps and multiplied by the activation's:
 * with M (Q4_1) lanes 4r..4r+3 = [d_i·dx_i, m_i·?, d_i+1·dx_i+1, ?] of row r (fields d, m at the block
 * start), else lanes 2r, 2r+1 = d_i·dx_i, d_i+1·dx_i+1 (field d). */
INLINE __m512 pair_scales(const uint8_t *const *b0, size_t wb, const int NR, const int HAS_M, __m512 *dm) {
    if (HAS_M) {
        __m256i h;
        if (NR == 4)
            h = _mm256_setr_epi32((int)load32(b0[0]), (int)load32(b0[0] + wb), (int)load32(b0[1]), (int)load32(b0[1] + wb),
                                  (int)load32(b0[2]), (int)load32(b0[2] + wb), (int)load32(b0[3]), (int)load32(b0[3] + wb));
        else
            h = _mm256_castsi128_si256(_mm_insert_epi32(_mm_cvtsi32_si128((int)load32(b0[0])), (int)load32(b0[0] + wb), 1));
        *dm = _mm512_cvtph_ps(h);
        return *dm;
    }
    uint32_t u[4];
    for (int r = 0; r < NR; r++) u[r] = (uint32_t)load16(b0[r]) | ((uint32_t)load16(b0[r] + wb) << 16);
    const __m128i h = NR == 4 ? _mm_setr_epi32((int)u[0], (int)u[1], (int)u[2], (int)u[3]) : _mm_cvtsi32_si128((int)u[0]);
    return _mm512_castps256_ps512(_mm256_cvtph_ps(h));
}

/* vpermps indices taking row r's two block scales from pair_scales to the s32 lanes of its blocks */
INLINE __m512i scale_index(int r, int lanes_per_row, int second, int q4_order) {
    const int a = lanes_per_row * r, b = a + second;
    return q4_order ? _mm512_setr_epi32(a, a, a, a, b, b, b, b, a, a, a, a, b, b, b, b)
                    : _mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b);
}

/* Σ of the 16 lanes of a Q4-order accumulator (128-bit chunks [A0, B0, A1, B1], A = block i, B = i+1) in the
 * order _mm512_reduce_add_ps adds the row kernels' [A0, A1, B0, B1]: (A0+B0) + (A1+B1), then 4 → 2 → 1.
 * (A shuffle followed by _mm512_reduce_add_ps would not do: that reduction may reassociate, so the
 * compiler drops the shuffle.) */
INLINE float reduce_q4_order(__m512 a) {
    const __m256 lo = _mm512_castps512_ps256(a), hi = _mm512_extractf32x8_ps(a, 1);
    const __m128 ab0 = _mm_add_ps(_mm256_castps256_ps128(lo), _mm256_extractf128_ps(lo, 1));
    const __m128 ab1 = _mm_add_ps(_mm256_castps256_ps128(hi), _mm256_extractf128_ps(hi, 1));
    __m128 s = _mm_add_ps(ab0, ab1);
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Q4_0 / Q4_1 rows. HAS_M: Q4_1 (fields d, m; + m·s per block), else Q4_0 (field d). */
INLINE void q4_rows(const uint8_t **w, int64_t np, const mv_pair *pa, float *out, const int NR, const int HAS_M) {
    const size_t wb = HAS_M ? sizeof(block_q4_1) : sizeof(block_q4_0);
    const size_t qs_off = HAS_M ? 4 : 2;
    __m512i idx[4];
    for (int r = 0; r < NR; r++) idx[r] = HAS_M ? scale_index(r, 4, 2, 1) : scale_index(r, 2, 1, 1);
    __m512 acc[4], summ = _mm512_setzero_ps();
    for (int r = 0; r < NR; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < np; k++) {
        const __m512i y = pa[k].y, corr = pa[k].corr;
        const uint8_t *b0[4];
        for (int r = 0; r < NR; r++) b0[r] = w[r] + (size_t)(2 * k) * wb;
        __m512 dm;
        const __m512 d = _mm512_mul_ps(pair_scales(b0, wb, NR, HAS_M, &dm), pa[k].xs);
        if (HAS_M) summ = _mm512_fmadd_ps(dm, pa[k].xs, summ); /* m·s in the odd lanes */
        for (int r = 0; r < NR; r++) {
            const __m512i p = _mm512_dpbusd_epi32(corr, q4_pair(b0[r] + qs_off, b0[r] + wb + qs_off), y);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(idx[r], d), acc[r]);
        }
    }
    float m[16];
    _mm512_storeu_ps(m, summ);
    for (int r = 0; r < NR; r++) out[r] = reduce_q4_order(acc[r]) + (HAS_M ? m[4 * r + 1] + m[4 * r + 3] : 0.0f);
}

/* x Q8_0 blocks → pairs in natural order with the −128·Σx correction (block i in s32 lanes 0-7) */
INLINE void prep_q8(const uint8_t *x, int64_t np, mv_pair *pa) {
    const size_t xb = sizeof(block_q8_0);
    for (int64_t k = 0; k < np; k++) {
        const uint8_t *a = x + (size_t)(2 * k) * xb, *b = a + xb;
        pa[k].y = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(a + 2))),
                                     _mm256_loadu_si256((const __m256i *)(b + 2)), 1);
        pa[k].xs = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(h2f(load16(a))), _mm512_set1_ps(h2f(load16(b))));
        pa[k].corr = lane_offsets(pa[k].y, 128);
    }
}

/* Here one scale conversion per row and pair measured faster than the packed pair_scales (2x on Zen 4). */
INLINE void q8_0_rows(const uint8_t **w, int64_t np, const mv_pair *pa, float *out, const int NR) {
    const size_t wb = sizeof(block_q8_0);
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    __m512 acc[4];
    for (int r = 0; r < NR; r++) acc[r] = _mm512_setzero_ps();
    for (int64_t k = 0; k < np; k++) {
        const __m512i y = pa[k].y, corr = pa[k].corr;
        const __m512 dx = pa[k].xs;
        for (int r = 0; r < NR; r++) {
            const uint8_t *b0 = w[r] + (size_t)(2 * k) * wb, *b1 = b0 + wb;
            const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(b0 + 2))),
                                                 _mm256_loadu_si256((const __m256i *)(b1 + 2)), 1);
            const __m512i p = _mm512_dpbusd_epi32(corr, _mm512_xor_si512(q, flip), y);
            const __m128 ds = _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)load16(b0) | ((uint32_t)load16(b1) << 16))));
            const __m512 d = _mm512_mul_ps(_mm512_permutexvar_ps(spread, _mm512_castps128_ps512(ds)), dx);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), d, acc[r]);
        }
    }
    for (int r = 0; r < NR; r++) out[r] = _mm512_reduce_add_ps(acc[r]);
}

/* Rows 0..nrows: quarters [0,q), [q,2q), [2q,3q), [3q,4q) in lockstep, then the leftover rows one by one. */
#define MATVEC(NAME, ROWS_CALL)                                                                              \
    static int NAME(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {         \
        const int64_t nb = n / QK;                                                                           \
        if ((nb & 1) || nb / 2 > MV_MAX_PAIRS) return 0;                                                     \
        const int64_t np = nb / 2;                                                                           \
        mv_pair pa[MV_MAX_PAIRS];                                                                            \
        PREP;                                                                                                \
        const uint8_t *wb = vw;                                                                              \
        const int64_t q = nrows / 4;                                                                         \
        for (int64_t i = 0; i < q; i++) {                                                                    \
            const uint8_t *w[4] = {wb + (size_t)i * ws, wb + (size_t)(i + q) * ws, wb + (size_t)(i + 2 * q) * ws, \
                                   wb + (size_t)(i + 3 * q) * ws};                                           \
            float s[4];                                                                                      \
            ROWS_CALL(w, s, 4);                                                                              \
            for (int j = 0; j < 4; j++) y[i + j * q] = s[j];                                                 \
        }                                                                                                    \
        for (int64_t r = 4 * q; r < nrows; r++) {                                                            \
            const uint8_t *w[1] = {wb + (size_t)r * ws};                                                     \
            ROWS_CALL(w, y + r, 1);                                                                          \
        }                                                                                                    \
        return 1;                                                                                            \
    }

#define PREP prep_q4(x, sizeof(block_q8_1), np, 0, pa)
#define CALL(w, s, NR) q4_rows(w, np, pa, s, NR, 1)
MATVEC(matvec_q4_1, CALL)
#undef PREP
#undef CALL
#define PREP prep_q8(x, np, pa)
#define CALL(w, s, NR) q8_0_rows(w, np, pa, s, NR)
MATVEC(matvec_q8_0, CALL)
#undef PREP
#undef CALL
#undef MATVEC

#pragma clang attribute pop

void lk_fill_avx512_matvec(lk_kernel_table *t) {
    t->matvec[LK_TYPE_Q4_1] = matvec_q4_1;
    t->matvec[LK_TYPE_Q8_0] = matvec_q8_0;
}

#else
void lk_fill_avx512_matvec(lk_kernel_table *t) { (void)t; }
#endif

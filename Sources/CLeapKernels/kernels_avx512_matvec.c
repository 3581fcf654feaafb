/* AVX-512 VNNI matrix × vector (decode) for Q4_1, Q5_0, Q5_1 and Q8_0 (Q4_0: kernels_q4_0.c): the whole row
 * range of one lk_matmul call, in ggml's summation order (below), so a token decoded here gives bit for bit
 * the logits of the same token in a batched prefill. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#include "lk_x86_avx512.h"


/* −offset · Σ y over the 4 bytes of each s32 lane: per lane, so that every lane's integer equals the row
 * kernels' (which subtract vpdpbusd(offset, y) lane by lane) and the float sums match them bit for bit */
INLINE __m512i lane_offsets(__m512i y, int offset) {
    return _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)offset), y));
}

/* ---------------- Q4_1, Q5_0, Q5_1, Q8_0: ggml's summation order ----------------
 * ggml's vec_dot (and llamafile's tinyBLAS_Q0_AVX, and our AVX2 kernels) sum each output as one 8-lane float
 * chain over the blocks in order: lane g += (dw·dx) · (Σ of the 4 byte products of group g of the block),
 * then hsum_ps (4 + 4, 2 + 2, 1 + 1); Q4_1/Q5_1 add Σ m·s, a fused scalar chain over the blocks. Here one
 * zmm carries the chains of two rows, so that every output keeps exactly that order while each vpdpbusd does
 * 64 byte products:
 *   Q4/Q5 weights of rows a, b unpack to [lo_a, lo_b, hi_a, hi_b] (16 bytes each; lo = elements 0-15) against
 *   the activation [lo, lo, hi, hi]: s32 lanes 0-3 and 8-11 are row a's groups 0-7, lanes 4-7 and 12-15 b's;
 *   Q8_0 weights load as [a, b] against [x, x]: lanes 0-7 row a, 8-15 row b.
 * Offsets (Q5_0: q − 16, Q8_0: u = w + 128) go through −offset·Σx per lane, computed once per block for all
 * rows: every s32 lane holds exactly ggml's integer. Scales of the four rows of a step take one vcvtph2ps. */
enum { MV_MAX_BLOCKS = 512 }; /* 16384 columns; wider falls back to the AVX2 row kernels (same results) */

typedef struct { float dx, s; } mv_scales; /* activation block: d and (Q8_1) s = d·Σqs, as floats */

INLINE int seq_q4_order(int type) { return type != LK_TYPE_Q8_0; }
INLINE size_t seq_wbytes(int type) {
    return type == LK_TYPE_Q4_1 ? sizeof(block_q4_1) : type == LK_TYPE_Q5_0 ? sizeof(block_q5_0)
         : type == LK_TYPE_Q5_1 ? sizeof(block_q5_1) : sizeof(block_q8_0);
}

/* Blocks a, b (rows a and b) → 64 unsigned bytes in the layout above. */
INLINE __m512i seq_weights(int type, const uint8_t *a, const uint8_t *b) {
    if (type == LK_TYPE_Q8_0)
        return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(a + 2))),
                                                   _mm256_loadu_si256((const __m256i *)(b + 2)), 1),
                                _mm512_set1_epi8((char)0x80));
    const size_t qs = type == LK_TYPE_Q4_1 ? 4 : type == LK_TYPE_Q5_0 ? 6 : 8;
    const __m256i t = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(a + qs))),
                                              _mm_loadu_si128((const __m128i *)(b + qs)), 1);
    __m512i q = _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1), _mm512_set1_epi8(15));
    if (type == LK_TYPE_Q5_0 || type == LK_TYPE_Q5_1) { /* bit j of qh: 5th bit of element j */
        const size_t qh = type == LK_TYPE_Q5_0 ? 2 : 4;
        const uint64_t ha = lk_load_u32(a + qh), hb = lk_load_u32(b + qh);
        const __mmask64 m = (ha & 0xFFFF) | (hb & 0xFFFF) << 16 | (ha >> 16) << 32 | (hb >> 16) << 48;
        q = _mm512_mask_add_epi8(q, m, q, _mm512_set1_epi8(16));
    }
    return q;
}

/* Rows w[0 .. 2·NP) (NP = 1 or 2) × the activation x (nb blocks, scales xs) → out[0 .. 2·NP). */
INLINE void seq_rows(int type, const uint8_t *const *w, int64_t nb, const uint8_t *x, const mv_scales *xs, float *out,
                     const int NP) {
    const size_t wb = seq_wbytes(type), xb = lk_has_min(type) ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t xq = lk_has_min(type) ? 4 : 2;
    const int q4 = seq_q4_order(type), off = vnni_weight_offset(type), hm = lk_has_min(type);
    const int NR = 2 * NP;
    /* vpermps indices taking rows 2p, 2p+1's scale (lane r, or 2r with the mins interleaved) to their lanes */
    __m512i idx[2];
    for (int p = 0; p < NP; p++) {
        const int a = hm ? 4 * p : 2 * p, b = hm ? a + 2 : a + 1;
        idx[p] = q4 ? _mm512_setr_epi32(a, a, a, a, b, b, b, b, a, a, a, a, b, b, b, b)
                    : _mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b);
    }
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    __m256 summ = _mm256_setzero_ps(); /* Q4_1/Q5_1: m·s chains in the odd lanes */
    for (int64_t i = 0; i < nb; i++) {
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(x + (size_t)i * xb + xq));
        const __m512i y = q4 ? _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(xv))
                             : _mm512_broadcast_i64x4(xv);
        const __m512i init = off ? lane_offsets(y, off) : _mm512_setzero_si512();
        const uint8_t *b[4];
        for (int r = 0; r < NR; r++) b[r] = w[r] + (size_t)i * wb;
        __m256 d;
        if (hm) { /* [d0, m0, d1, m1, ...] */
            const __m128i h = NP == 2 ? _mm_setr_epi32((int)lk_load_u32(b[0]), (int)lk_load_u32(b[1]), (int)lk_load_u32(b[2]), (int)lk_load_u32(b[3]))
                                      : _mm_setr_epi32((int)lk_load_u32(b[0]), (int)lk_load_u32(b[1]), 0, 0);
            const __m256 dm = _mm256_cvtph_ps(h);
            summ = _mm256_fmadd_ps(dm, _mm256_set1_ps(xs[i].s), summ);
            d = _mm256_mul_ps(dm, _mm256_set1_ps(xs[i].dx));
        } else {
            uint64_t u = 0;
            for (int r = 0; r < NR; r++) u |= (uint64_t)lk_load_u16(b[r]) << (16 * r);
            d = _mm256_castps128_ps256(_mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)u)), _mm_set1_ps(xs[i].dx)));
        }
        for (int p = 0; p < NP; p++) {
            const __m512i s = _mm512_dpbusd_epi32(init, seq_weights(type, b[2 * p], b[2 * p + 1]), y);
            acc[p] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idx[p], _mm512_castps256_ps512(d)), _mm512_cvtepi32_ps(s), acc[p]);
        }
    }
    float m[8];
    _mm256_storeu_ps(m, summ);
    for (int p = 0; p < NP; p++) {
        /* hsum_ps of both rows at once: r = groups 0-3 + groups 4-7 per row (128-bit halves a | b), then
         * r0 + r2, r1 + r3, then their sum */
        const __m512 v = q4 ? acc[p] : _mm512_shuffle_f32x4(acc[p], acc[p], _MM_SHUFFLE(3, 1, 2, 0));
        __m256 r = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
        r = _mm256_add_ps(r, _mm256_permute_ps(r, _MM_SHUFFLE(1, 0, 3, 2)));
        r = _mm256_add_ps(r, _mm256_movehdup_ps(r));
        float h[8];
        _mm256_storeu_ps(h, r);
        out[2 * p] = h[0] + (hm ? m[4 * p + 1] : 0.0f);
        out[2 * p + 1] = h[4] + (hm ? m[4 * p + 3] : 0.0f);
    }
}

/* Rows 0..nrows: quarters [0,q), [q,2q), [2q,3q), [3q,4q) in lockstep (four long streams for the
 * prefetchers), then the leftover rows in pairs (the last one paired with itself). */
INLINE int seq_matvec(int type, int64_t n, const void *vw, size_t ws, const void *vx, float *y, int64_t nrows) {
    const int64_t nb = n / QK;
    if (nb > MV_MAX_BLOCKS) return 0;
    const uint8_t *x = vx, *wb = vw;
    const size_t xb = lk_has_min(type) ? sizeof(block_q8_1) : sizeof(block_q8_0);
    mv_scales xs[MV_MAX_BLOCKS];
    for (int64_t i = 0; i < nb; i++) {
        xs[i].dx = h2f(lk_load_u16(x + (size_t)i * xb));
        xs[i].s = lk_has_min(type) ? h2f(lk_load_u16(x + (size_t)i * xb + 2)) : 0.0f;
    }
    const int64_t q = nrows / 4;
    for (int64_t i = 0; i < q; i++) {
        const uint8_t *w[4] = {wb + (size_t)i * ws, wb + (size_t)(i + q) * ws, wb + (size_t)(i + 2 * q) * ws, wb + (size_t)(i + 3 * q) * ws};
        float s[4];
        seq_rows(type, w, nb, x, xs, s, 2);
        for (int j = 0; j < 4; j++) y[i + j * q] = s[j];
    }
    for (int64_t r = 4 * q; r < nrows; r += 2) {
        const uint8_t *w[2] = {wb + (size_t)r * ws, wb + (size_t)(r + 1 < nrows ? r + 1 : r) * ws};
        float s[2];
        seq_rows(type, w, nb, x, xs, s, 1);
        y[r] = s[0];
        if (r + 1 < nrows) y[r + 1] = s[1];
    }
    return 1;
}

#define SEQ_MATVEC(NAME, TYPE)                                                                               \
    static int NAME(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {         \
        return seq_matvec(TYPE, n, vw, ws, x, y, nrows);                                                     \
    }
SEQ_MATVEC(matvec_q4_1, LK_TYPE_Q4_1)
SEQ_MATVEC(matvec_q5_0, LK_TYPE_Q5_0)
SEQ_MATVEC(matvec_q5_1, LK_TYPE_Q5_1)
SEQ_MATVEC(matvec_q8_0, LK_TYPE_Q8_0)
#undef SEQ_MATVEC

#pragma clang attribute pop

void lk_fill_avx512_matvec(lk_kernel_table *t) {
    t->matvec[LK_TYPE_Q4_1] = matvec_q4_1;
    t->matvec[LK_TYPE_Q5_0] = matvec_q5_0;
    t->matvec[LK_TYPE_Q5_1] = matvec_q5_1;
    t->matvec[LK_TYPE_Q8_0] = matvec_q8_0;
}

#else
void lk_fill_avx512_matvec(lk_kernel_table *t) { (void)t; }
#endif

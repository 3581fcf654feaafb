/* AVX-512 decode: the row kernels (dot / dot2 / dot4, one token and batches below the gemm) and, with
 * AVX512-VNNI, the one-token matvec. Only reached through the dispatch table after the CPU check.
 *
 * Row kernels (F + BW + VL): Q6_K only, in ggml's order, two rows per zmm (dot2); vpmaddubsw + vpmaddwd with
 * the sub-block scales (the scale multiply comes for free in vpmaddwd). The 32-block types keep the AVX2 row
 * kernels (ggml's order); Q4_0 is in x86/q4_0.c; with AVX512-VNNI the prefill gemm kernels come from
 * x86/avx512/prefill.c.
 *
 * VNNI matrix × vector and matrix × 2..LK_FEW_MAX_TOKENS tokens for Q4_1, Q5_0 and Q5_1 (Q4_0: x86/q4_0.c and
 * x86/avx512/fewtokens.c; Q8_0 in x86/avx2/q8_0.c's order, from there and x86/avx512/fewtokens.c): the whole
 * row range of one lk_matmul call, in ggml's summation order (below), so a token decoded here gives bit for bit
 * the logits of the same token in a batched prefill, and each token of a few-token call (a verification pass,
 * conversations decoded together) those it gets alone: the few-token kernel is the matvec's loop over the
 * rows with each block of weights unpacked once for all the tokens of a pass. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define XT(type, t) ((const type *)((const uint8_t *)vx + (size_t)(t) * xs))

/* ------------------------------ row kernels (AVX-512 F/BW/VL) ------------------------------ */
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq"))), apply_to = function)
#include "../lk_x86_avx2.h"
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
     * (faster than loading them from a table) */
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

/* ---------------------------------- VNNI matvec ---------------------------------- */
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#include "../lk_x86_avx512.h"


/* ---------------- Q4_1, Q5_0, Q5_1: ggml's summation order ----------------
 * ggml's vec_dot (and llamafile's tinyBLAS_Q0_AVX, and our AVX2 kernels) sum each output as one 8-lane float
 * chain over the blocks in order: lane g += (dw·dx) · (Σ of the 4 byte products of group g of the block),
 * then hsum_ps (4 + 4, 2 + 2, 1 + 1); Q4_1/Q5_1 add Σ m·s, a fused scalar chain over the blocks. Here one
 * zmm carries the chains of two rows, so that every output keeps exactly that order while each vpdpbusd does
 * 64 byte products:
 *   Q4/Q5 weights of rows a, b unpack to [lo_a, hi_a, lo_b, hi_b] (16 bytes each; lo = elements 0-15) against
 *   the activation broadcast to both halves, [lo, hi, lo, hi]: s32 lanes 0-7 are row a's groups 0-7, lanes
 *   8-15 b's.
 * Offsets (Q5_0: q − 16) go through −offset·Σx per lane (the row kernels subtract vpdpbusd(offset, x) lane by
 * lane), computed once per activation block for all rows: every s32 lane holds exactly ggml's integer. Scales
 * of the four rows of a step take one vcvtph2ps. */
enum {
    MV_MAX_BLOCKS = 512, /* 16384 columns; wider falls back to the AVX2 row kernels (same results) */
    SEQ_PASS = 8,        /* few tokens: most tokens per pass over a step of rows (their accumulators stay in
                            registers; LK_PASS8's most) */
};

/* Per activation block: the offset's integers (Q5_0: −16·Σx over each group of 4 bytes, a row's 8 lanes), d and
 * (Q8_1) s = d·Σqs as floats */
typedef struct { int32_t off[8]; float dx, s; } seq_act;

INLINE size_t seq_wbytes(int type) {
    return type == LK_TYPE_Q4_1 ? sizeof(block_q4_1) : type == LK_TYPE_Q5_0 ? sizeof(block_q5_0) : sizeof(block_q5_1);
}

/* Blocks a, b (rows a and b) → 64 unsigned bytes in the layout above. */
INLINE __m512i seq_weights(int type, const uint8_t *a, const uint8_t *b) {
    const size_t qs = type == LK_TYPE_Q4_1 ? 4 : type == LK_TYPE_Q5_0 ? 6 : 8;
    /* [qs_a, qs_a, qs_b, qs_b], the high nibbles of the odd quarters shifted down */
    const __m512i t = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(a + qs))), 0xFF00,
                                                  _mm_loadu_si128((const __m128i *)(b + qs)));
    __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(t, 0xFF00FF00u, t, 4), _mm512_set1_epi8(15));
    if (type == LK_TYPE_Q5_0 || type == LK_TYPE_Q5_1) { /* bit j of qh: 5th bit of element j */
        const size_t qh = type == LK_TYPE_Q5_0 ? 2 : 4;
        const __mmask64 m = (uint64_t)lk_load_u32(a + qh) | (uint64_t)lk_load_u32(b + qh) << 32;
        q = _mm512_mask_add_epi8(q, m, q, _mm512_set1_epi8(16));
    }
    return q;
}

/* Rows w[0 .. 2·NP) (NP = 1 or 2) × NT tokens (token t: activation row x + t·xr, terms xs + t·nb) →
 * out[4·t + r]. The weights of a block are unpacked once for all NT tokens; each token keeps its own
 * activation vector, offsets, scales and accumulators, so every output is the one-token chain above whatever
 * NT (the rows' scales are spread to their lanes before the multiply by dx: the same products). */
INLINE void seq_rows(int type, const uint8_t *const *w, int64_t nb, const uint8_t *x, size_t xr, const seq_act *xs,
                     float *out, const int NP, const int NT) {
    const size_t wb = seq_wbytes(type), xb = lk_has_min(type) ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t xq = lk_has_min(type) ? 4 : 2;
    const int off = vnni_weight_offset(type), hm = lk_has_min(type);
    const int NR = 2 * NP;
    /* vpermps indices taking rows 2p, 2p+1's scale (lane r, or 2r with the mins interleaved) to their lanes */
    __m512i idx[2];
    for (int p = 0; p < NP; p++) {
        const int a = hm ? 4 * p : 2 * p, b = hm ? a + 2 : a + 1;
        idx[p] = _mm512_setr_epi32(a, a, a, a, a, a, a, a, b, b, b, b, b, b, b, b);
    }
    __m512 acc[SEQ_PASS][2];
    __m256 summ[SEQ_PASS]; /* Q4_1/Q5_1: m·s chains in the odd lanes */
    for (int t = 0; t < NT; t++) {
        acc[t][0] = acc[t][1] = _mm512_setzero_ps();
        summ[t] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *b[4];
        for (int r = 0; r < NR; r++) b[r] = w[r] + (size_t)i * wb;
        __m256 dm; /* the rows' scales: [d0, m0, d1, m1, ...] with the mins, else [d0, d1, d2, d3] */
        if (hm) {
            const __m128i h = NP == 2 ? _mm_setr_epi32((int)lk_load_u32(b[0]), (int)lk_load_u32(b[1]), (int)lk_load_u32(b[2]), (int)lk_load_u32(b[3]))
                                      : _mm_setr_epi32((int)lk_load_u32(b[0]), (int)lk_load_u32(b[1]), 0, 0);
            dm = _mm256_cvtph_ps(h);
        } else {
            uint64_t u = 0;
            for (int r = 0; r < NR; r++) u |= (uint64_t)lk_load_u16(b[r]) << (16 * r);
            dm = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)u)));
        }
        __m512i q[2];
        __m512 dw[2];
        for (int p = 0; p < NP; p++) {
            q[p] = seq_weights(type, b[2 * p], b[2 * p + 1]);
            dw[p] = _mm512_permutexvar_ps(idx[p], _mm512_castps256_ps512(dm));
        }
        for (int t = 0; t < NT; t++) {
            const seq_act sx = xs[t * nb + i];
            const __m512i y = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x + (size_t)t * xr + (size_t)i * xb + xq)));
            const __m512i init = off ? _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)sx.off)) : _mm512_setzero_si512();
            if (hm) summ[t] = _mm256_fmadd_ps(dm, _mm256_set1_ps(sx.s), summ[t]);
            for (int p = 0; p < NP; p++) {
                const __m512i s = _mm512_dpbusd_epi32(init, q[p], y);
                acc[t][p] = _mm512_fmadd_ps(_mm512_mul_ps(dw[p], _mm512_set1_ps(sx.dx)), _mm512_cvtepi32_ps(s), acc[t][p]);
            }
        }
    }
    for (int t = 0; t < NT; t++) {
        float m[8];
        _mm256_storeu_ps(m, summ[t]);
        for (int p = 0; p < NP; p++) {
            /* hsum_ps of both rows at once: the quarters as [a 0-3, b 0-3, a 4-7, b 4-7], r = groups 0-3 +
             * groups 4-7 per row (128-bit halves a | b), then r0 + r2, r1 + r3, then their sum */
            const __m512 v = _mm512_shuffle_f32x4(acc[t][p], acc[t][p], _MM_SHUFFLE(3, 1, 2, 0));
            __m256 r = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
            r = _mm256_add_ps(r, _mm256_permute_ps(r, _MM_SHUFFLE(1, 0, 3, 2)));
            r = _mm256_add_ps(r, _mm256_movehdup_ps(r));
            float h[8];
            _mm256_storeu_ps(h, r);
            out[4 * t + 2 * p] = h[0] + (hm ? m[4 * p + 1] : 0.0f);
            out[4 * t + 2 * p + 1] = h[4] + (hm ? m[4 * p + 3] : 0.0f);
        }
    }
}

/* Each token's activation terms: xs[t·nb + i] for block i of row t (at x + t·xr). */
INLINE void seq_acts(int type, int64_t nb, const uint8_t *x, size_t xr, int64_t n_tokens, seq_act *xs) {
    const size_t xb = lk_has_min(type) ? sizeof(block_q8_1) : sizeof(block_q8_0), xq = lk_has_min(type) ? 4 : 2;
    const int off = vnni_weight_offset(type);
    for (int64_t t = 0; t < n_tokens; t++)
        for (int64_t i = 0; i < nb; i++) {
            const uint8_t *blk = x + (size_t)t * xr + (size_t)i * xb;
            seq_act *a = &xs[t * nb + i];
            if (off) { /* seq_rows reads the offsets only for a type that has one (Q5_0) */
                const __m256i sum = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8((char)off), _mm256_loadu_si256((const __m256i *)(blk + xq)));
                _mm256_storeu_si256((__m256i *)a->off, _mm256_sub_epi32(_mm256_setzero_si256(), sum));
            }
            a->dx = h2f(lk_load_u16(blk));
            a->s = lk_has_min(type) ? h2f(lk_load_u16(blk + 2)) : 0.0f;
        }
}

/* One step of rows w[0 .. 2·NP) (nr of them kept: row r's outputs go to y[t·ys + o[r]]) × the tokens, in
 * passes of up to SEQ_PASS tokens, sized evenly; the later passes find the rows' blocks in L1. */
INLINE void seq_step(int type, const uint8_t *const *w, int nr, const int64_t *o, int64_t nb, const uint8_t *x, size_t xr,
                     const seq_act *xs, int64_t n_tokens, float *y, int64_t ys, const int NP) {
    const int64_t passes = (n_tokens + SEQ_PASS - 1) / SEQ_PASS;
    for (int64_t k = 0, t0 = 0; k < passes; k++) {
        const int nt = (int)(n_tokens / passes + (k < n_tokens % passes));
        float s[4 * SEQ_PASS];
        LK_PASS8(nt, seq_rows, type, w, nb, x + (size_t)t0 * xr, xr, xs + t0 * nb, s, NP)
        for (int t = 0; t < nt; t++)
            for (int r = 0; r < nr; r++) y[(t0 + t) * ys + o[r]] = s[4 * t + r];
        t0 += nt;
    }
}

/* Rows 0..nrows × n_tokens tokens → y[t·ys + r]: quarters [0,q), [q,2q), [2q,3q), [3q,4q) in lockstep (four
 * long streams for the prefetchers), then the leftover rows in pairs (the last one paired with itself). */
INLINE void seq_row_range(int type, int64_t nb, const uint8_t *wb, size_t ws, const uint8_t *x, size_t xr, const seq_act *xs,
                          int64_t n_tokens, float *y, int64_t ys, int64_t nrows) {
    const int64_t q = nrows / 4;
    for (int64_t i = 0; i < q; i++) {
        const uint8_t *w[4] = {wb + (size_t)i * ws, wb + (size_t)(i + q) * ws, wb + (size_t)(i + 2 * q) * ws, wb + (size_t)(i + 3 * q) * ws};
        const int64_t o[4] = {i, i + q, i + 2 * q, i + 3 * q};
        seq_step(type, w, 4, o, nb, x, xr, xs, n_tokens, y, ys, 2);
    }
    for (int64_t r = 4 * q; r < nrows; r += 2) {
        const uint8_t *w[2] = {wb + (size_t)r * ws, wb + (size_t)(r + 1 < nrows ? r + 1 : r) * ws};
        const int64_t o[2] = {r, r + 1};
        seq_step(type, w, r + 1 < nrows ? 2 : 1, o, nb, x, xr, xs, n_tokens, y, ys, 1);
    }
}

/* Rows 0..nrows (from vw) × n_tokens tokens (row t at vx + t·xr) → y[t·ys + r]: the one-token matvec and, for
 * 2..LK_FEW_MAX_TOKENS tokens, the few-token kernel, each output with the matvec's bits. Up to MV_MAX_BLOCKS
 * blocks (wider: 0, the AVX2 row kernels serve one token and every other count alike); the activation terms
 * of the call's tokens live in the thread's scratch (0 when it cannot grow). */
INLINE int seq_product(int type, int64_t n, const void *vw, size_t ws, const void *vx, size_t xr, int64_t n_tokens,
                       float *y, int64_t ys, int64_t nrows) {
    const int64_t nb = n / QK;
    if (nb > MV_MAX_BLOCKS || n_tokens > LK_FEW_MAX_TOKENS) return 0;
    seq_act *xs = lk_scratch((size_t)n_tokens * (size_t)nb * sizeof(seq_act));
    if (!xs) return 0;
    seq_acts(type, nb, vx, xr, n_tokens, xs);
    seq_row_range(type, nb, vw, ws, vx, xr, xs, n_tokens, y, ys, nrows);
    return 1;
}

#define SEQ_KERNELS(T, TYPE)                                                                                 \
    static int matvec_##T(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {   \
        return seq_product(TYPE, n, vw, ws, x, 0, 1, y, 0, nrows);                                           \
    }                                                                                                        \
    static int few_##T(int64_t n, const void *vw, size_t ws, const void *x, size_t xr, int64_t n_tokens,    \
                       float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                          \
        return seq_product(TYPE, n, (const uint8_t *)vw + (size_t)row_begin * ws, ws, x, xr, n_tokens,       \
                           y + row_begin, ys, row_end - row_begin);                                          \
    }
SEQ_KERNELS(q4_1, LK_TYPE_Q4_1)
SEQ_KERNELS(q5_0, LK_TYPE_Q5_0)
SEQ_KERNELS(q5_1, LK_TYPE_Q5_1)
#undef SEQ_KERNELS

#pragma clang attribute pop

/* Q4_K/Q5_K stay on the AVX2 kernels: a 512-bit Q4_K needed extra lane shuffles that cost more than the
 * wider vectors gain on a double-pumped AVX-512 CPU. The matvecs use VNNI. */
LK_KERNELS(lk_avx512_decode,
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q4_1, matvec_q4_1),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q5_0, matvec_q5_0),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q5_1, matvec_q5_1),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_1, few_q4_1),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q5_0, few_q5_0),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q5_1, few_q5_1),
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q6_K, dot_q6_K),
    LK_KERNEL(LK_E_DOT2, LK_TYPE_Q6_K, dot2_q6_K),
    LK_KERNEL(LK_E_DOT4, LK_TYPE_Q6_K, dot4_q6_K));

#else
LK_NO_KERNELS(lk_avx512_decode);
#endif

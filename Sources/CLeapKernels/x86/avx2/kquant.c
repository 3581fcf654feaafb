/* Q4_K, Q5_K and Q6_K on AVX2 (+FMA, F16C): the one-token matrix × vector (decode) and the many-token matrix ×
 * matrix (prefill), straight from the GGUF block layout, of the design of x86/avx512/kquant.c. They do not
 * follow llama.cpp's summation orders (reference/llama_order_kquant.c, which on this path cost a decode the emulation
 * of ggml's repacked 8-row interleave): every integer sum is exact and the float steps are one or two per
 * block, so results differ from llama.cpp's by float rounding only (the tests bound that).
 *
 * Per super-block of 256 weights (d, dmin: the block's f16 scales; sc, m: sub-block scales and mins; x: the
 * Q8_K activation block, dx its scale):
 *   Q4_K, Q5_K  y += dx · (d · Σ_j sc_j · Σ_{k in j} q_k·x_k  −  dmin · Σ_j m_j · bsum_j)   (j: 8 × 32)
 *   Q6_K        y += dx · d · (Σ_g sc_g · Σ_{k in g} q_k·x_k  −  32 · Σ_g sc_g · bsum_g)     (g: 16 × 16)
 * q are the unsigned quants (0..15, 0..31, 0..63). AVX2 has no vpdpbusd: vpmaddubsw multiplies 32 of them
 * with signed activation bytes into 16 s16 pair sums (|.| <= 2·63·128 = 16128, never saturated), and
 * vpmaddwd with the sub-block scale as s16 gives s32 lanes (sums of 4 products times the scale).
 *
 * Q4_K, every batch size: one order, the gemm's, so a token's result is the same bits alone, stepped with
 *         other conversations or in a prompt. Groups of 8 adjacent rows, lane r = row r, each super-block's
 *         quants transposed (s32 lane r of vector g holds quants 4g..4g+3 of row r) so that a vpmaddubsw of a
 *         vector with 4 activation bytes broadcast gives 8 rows' products at once, whose s16 results add up
 *         over a sub-block (8 vectors, |.| <= 8·2·15·128 = 30720) before one vpmaddwd widens them; then the
 *         float steps of x86/avx512/kquant.c's gemm (one FMA of each sub-block's exact sum by d·sc, the mins by
 *         dmin, one FMA by dx per block). One token (q4_fused_token): the transposed vectors are made in
 *         registers from 128-bit halves and used at once, never stored; the next group's bytes are prefetched
 *         in order. 2-15 tokens (kq_few): each super-block's tile is built into L1 (build_block) and applied
 *         to every token, NT per pass; per weight 4 tokens cost less over one token than in the row
 *         layout (BENCHMARKS.md). From 16 tokens (kq_gemm): the tiles of a row group built for 128
 *         tokens at a time. Packed at load in the 8-row layout (LK_ROWS8, rows8.c: rows8_q4_K), the
 *         same kernels read the vectors as stored, with no transposing, and give the same bits; one token
 *         then goes over pairs of groups, two streams per thread (one sequential stream per thread reads
 *         DRAM slower than the row layout's eight). Q5_K and Q6_K stay in the row layout: their one-token
 *         kernels keep the row order below, and a Q6_K tile built from the layout costs more than the row
 *         kernels below 8 tokens (its unpacking, not the transposing, is most of a tile's cost).
 * Q5_K, Q6_K matvec: two rows in flight, r and r + nrows/2 (sharing the activation loads), a block's quants
 *         unpacked in registers: 8 vpmaddubsw + 8 vpmaddwd (the scale broadcast by vpshufb). Q5_K: one float
 *         FMA per block into 8 lanes (+ one for its mins, 4 lanes), horizontal sums once per row. Q6_K: the
 *         block's exact integer sum isum = Σ_g sc_g·(Σ q·x − 32·bsum_g) summed across the lanes, then one
 *         scalar chain acc = fma(float(isum), d·dx, acc) (lk_q6_K_step), the order of its gemm. Each thread
 *         reads two long sequential streams (the halves of its rows), each prefetched a fixed distance ahead,
 *         every cache line once (pairing adjacent rows restarted one stream every other row). Their few-token
 *         kernels (x86/avx2/fewtokens.c) keep this order; in the tile order their one-token calls cost more
 *         (Q5_K's 5th bits), so they keep the row layout below 16 tokens.
 * gemm    as Q4_K's from 16 tokens, for all three: Q5_K sums its s16 results over 4 vectors (<= 31744),
 *         so that from 4 tokens both x86 paths give a prompt the same bits. Q6_K sums them over the 4 of a
 *         sub-block, starting from per-token offsets that keep the wrapping s16 sums exact (q6_fold_terms;
 *         without them over 2, <= 32256), and widens them by a vpmaddwd with (sc, sc) pairs into one s32
 *         sum per block: the matvec's integer and float steps per (row, token), so a token gets the same bits
 *         alone, stepped with others or in a prompt (and one float FMA per block where the sub-block FMAs
 *         of x86/avx512/kquant.c's order took 16: Zen 1's FMA and integer multiply share a pipe). */
#include "lk_internal.h"
#include "../lk_kquant_unpack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum {
    TR = 8,          /* gemm: weight rows per tile (s32 lanes) */
    CHUNK = 128,     /* gemm: tokens whose activation terms (and rows, in L2) are used per tile build */
    NT = 4,          /* gemm: tokens per pass over a tile (16 ymm registers: 3 accumulators per token) */
    NT_Q6 = 6,       /* gemm, Q6_K with q6_fold_terms: tokens per pass (2 registers per token: its s16 and s32
                        sums; 8 spill) */
    MIN_K4 = 2,      /* gemm from this many tokens for Q4_K / Q5_K (below: the matvec): faster than the row
                        kernels from 2 tokens. The few-token kernels (kq_few for Q4_K,
                        x86/avx2/fewtokens.c for Q5_K) take 2..15 tokens first; these thresholds apply when they fall back */
    MIN_Q6 = 3,      /* Q6_K: from 3 tokens (equal to the row kernels at 2) */
    PAIR_AHEAD = 4096, /* Q4_K packed, one token: bytes prefetched ahead in each of a thread's two streams */
};

#pragma clang attribute push(__attribute__((target(LK_AVX2_TARGET))), apply_to = function)

#include "../lk_x86_avx2.h"

INLINE float hsum4_ps(__m128 r) {
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    return _mm_cvtss_f32(_mm_add_ss(r, _mm_movehdup_ps(r)));
}

/* ================================ matvec (decode) ================================ */

/* s16 element j of each 128-bit half of v, in all 8 elements of that half */
INLINE __m256i spread_s16(__m256i v, const int j) { return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)(0x0100 * (2 * j + 1) + 2 * j))); }

/* One Q5_K block against activation block x: acc += d·dx·S per lane, accm += dmin·dx·M. */
INLINE void q5_block(const uint8_t *blk, const block_q8_K *x, __m256 *acc, __m128 *accm) {
    const __m256i m4 = _mm256_set1_epi8(15), m1 = _mm256_set1_epi8(1);
    const __m128i sm = lk_k4_scales_mins(blk + 4);
    const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm)); /* sc_0..7 as s16, in both halves */
    const uint8_t *qs = blk + 48;
    __m256i hb = _mm256_loadu_si256((const __m256i *)(blk + 16));
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) { /* chunk c: low nibbles = elements 64c.., high = 64c + 32.. (5th bits: qh bits 2c, 2c + 1) */
        const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hb, m1), 4));
        hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), m1), 4));
        hb = _mm256_srli_epi16(hb, 2);
        const __m256i plo = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(x->qs + 64 * c)));
        const __m256i phi = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(x->qs + 64 * c + 32)));
        sumi = lk_dpwssd256(sumi, plo, spread_s16(sc, 2 * c));
        sumi = lk_dpwssd256(sumi, phi, spread_s16(sc, 2 * c + 1));
    }
    const __m256i bs = _mm256_loadu_si256((const __m256i *)x->bsums);
    const __m128i bs32 = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)); /* 32-element sums */
    const __m128i mins = _mm_madd_epi16(_mm_unpackhi_epi8(sm, _mm_setzero_si128()), bs32);            /* 4 lanes of m·bsum pairs */
    const __m128 dm = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128(lk_load_i32(blk))), _mm_set1_ps(x->d)); /* d·dx, dmin·dx */
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi), _mm256_broadcastss_ps(dm), *acc);
    *accm = _mm_fmadd_ps(_mm_cvtepi32_ps(mins), _mm_shuffle_ps(dm, dm, 0x55), *accm);
}

/* Prefetch of one sequential stream: every cache line up to `dist` bytes past the end of the block just read,
 * each line once. */
typedef struct { const char *next; } pf_stream;
INLINE void pf_until(pf_stream *s, const void *end, size_t dist) {
    const char *e = (const char *)end + dist;
    while (s->next < e) { _mm_prefetch(s->next, _MM_HINT_T0); s->next += 64; }
}
INLINE pf_stream pf_start(const void *p, size_t dist) {
    pf_stream s = {(const char *)((uintptr_t)((const char *)p + dist) & ~(uintptr_t)63)};
    return s;
}

/* matvec: bytes prefetched ahead in each of its two streams (a few KB: none, or much more, is slower) */
#ifndef LK_KQ_PF_DIST
#define LK_KQ_PF_DIST 2048
#endif

static int matvec_q5_K(int64_t n, const void *vw, size_t ws, const void *vx, float *y, int64_t nrows) {
    const int64_t nb = n / QK_K;
    const block_q8_K *x = vx;
    const size_t bb = sizeof(block_q5_K);
    const uint8_t *w = vw;
    const size_t dist = LK_KQ_PF_DIST;
    const int64_t half = nrows / 2;
    /* row r with row r + half: two long sequential streams */
    const uint8_t *w0 = w, *w1 = w + (size_t)half * ws;
    pf_stream p0 = pf_start(w0, dist), p1 = pf_start(w1, dist);
    for (int64_t r = 0; r < half; r++, w0 += ws, w1 += ws) {
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        __m128 accm0 = _mm_setzero_ps(), accm1 = _mm_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            if (dist) {
                pf_until(&p0, w0 + (size_t)(i + 1) * bb, dist);
                pf_until(&p1, w1 + (size_t)(i + 1) * bb, dist);
            }
            q5_block(w0 + (size_t)i * bb, x + i, &acc0, &accm0);
            q5_block(w1 + (size_t)i * bb, x + i, &acc1, &accm1);
        }
        y[r] = hsum_ps(acc0) - hsum4_ps(accm0);
        y[r + half] = hsum_ps(acc1) - hsum4_ps(accm1);
    }
    if (nrows & 1) {
        const uint8_t *wl = w + (size_t)(nrows - 1) * ws;
        __m256 acc0 = _mm256_setzero_ps();
        __m128 accm0 = _mm_setzero_ps();
        for (int64_t i = 0; i < nb; i++) q5_block(wl + (size_t)i * bb, x + i, &acc0, &accm0);
        y[nrows - 1] = hsum_ps(acc0) - hsum4_ps(accm0);
    }
    return 1;
}

/* One Q6_K block against its activation block: 8 s32 lanes summing to the exact Σ_g sc_g · (Σ_{k in g} q_k·x_k
 * − 32·bsum_g). Elements
 * 128h + 32k + l: nibble of ql[64h + l] (k = 0, 2: low, high) or ql[64h + 32 + l] (k = 1, 3), 2 bits 2k.. of
 * qh[32h + l]; a 32-byte vector k covers sub-blocks 2v, 2v + 1 (v = 4h + k) in its two halves. */
INLINE __m256i q6_block(const block_q6_K *b, const block_q8_K *x) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales)); /* sc_0..7 | sc_8..15 */
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
        const __m256i hb = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
        const __m256i sh = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11) : _mm256_permute2x128_si256(sc16, sc16, 0x00); /* sc_8h..8h+7 in both halves */
        __m256i q[4]; /* bits 2k, 2k + 1 of hb moved to bits 4, 5 of the same byte, or'ed onto the nibble */
        q[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m30));
        q[1] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m30));
        q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(hb, m30));
        q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(hb, 2), m30));
        for (int k = 0; k < 4; k++) { /* s16 sc_8h+2k in the low half, sc_8h+2k+1 in the high one */
            const short lo = (short)(0x0100 * (4 * k + 1) + 4 * k), hi = (short)(0x0100 * (4 * k + 3) + 4 * k + 2);
            const __m256i s = _mm256_shuffle_epi8(sh, _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi));
            const __m256i p = _mm256_maddubs_epi16(q[k], _mm256_loadu_si256((const __m256i *)(x->qs + 128 * h + 32 * k)));
            sumi = lk_dpwssd256(sumi, p, s);
        }
    }
    const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)x->bsums)); /* Σ sc·bsum pairs */
    return _mm256_sub_epi32(sumi, _mm256_slli_epi32(corr, 5));
}

/* The lane sums of a and b (two rows' q6_block) in lanes 0 and 1. */
INLINE __m128i hsum2_epi32(__m256i a, __m256i b) {
    const __m256i h = _mm256_hadd_epi32(a, b); /* each half: a pairs, b pairs */
    const __m128i q = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
    return _mm_hadd_epi32(q, q);
}

static int matvec_q6_K(int64_t n, const void *vw, size_t ws, const void *vx, float *y, int64_t nrows) {
    const int64_t nb = n / QK_K;
    const block_q8_K *x = vx;
    const uint8_t *w = vw;
    const size_t dist = LK_KQ_PF_DIST;
    const int64_t half = nrows / 2;
    const uint8_t *w0 = w, *w1 = w + (size_t)half * ws;
    pf_stream p0 = pf_start(w0, dist), p1 = pf_start(w1, dist);
    for (int64_t r = 0; r < half; r++, w0 += ws, w1 += ws) {
        const block_q6_K *b0 = (const block_q6_K *)w0, *b1 = (const block_q6_K *)w1;
        __m128 acc = _mm_setzero_ps(); /* lane 0: row r's chain, lane 1: row r + half's (lk_q6_K_step's operations) */
        for (int64_t i = 0; i < nb; i++) {
            if (dist) {
                pf_until(&p0, b0 + i + 1, dist);
                pf_until(&p1, b1 + i + 1, dist);
            }
            const __m128i isum = hsum2_epi32(q6_block(b0 + i, x + i), q6_block(b1 + i, x + i));
            const __m128 d = _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)b0[i].d | (uint32_t)b1[i].d << 16)));
            acc = _mm_fmadd_ps(_mm_cvtepi32_ps(isum), _mm_mul_ps(d, _mm_set1_ps(x[i].d)), acc);
        }
        y[r] = _mm_cvtss_f32(acc);
        y[r + half] = _mm_cvtss_f32(_mm_movehdup_ps(acc));
    }
    if (nrows & 1) {
        const block_q6_K *bl = (const block_q6_K *)(w + (size_t)(nrows - 1) * ws);
        float acc0 = 0.0f;
        for (int64_t i = 0; i < nb; i++) acc0 = lk_q6_K_step(acc0, hsum_epi32(q6_block(bl + i, x + i)), h2f(bl[i].d), x[i].d);
        y[nrows - 1] = acc0;
    }
    return 1;
}

/* ================================ gemm (prefill) ================================ */

/* Tile layout per super-block: 64 byte vectors (lane r of vector g = quants 4g..4g+3 of row r, element
 * order), then Q4_K/Q5_K: float vectors d·sc of each sub-block (8), 4 vectors of s16 pairs (m_2k, m_2k+1)
 * and the dmin vector (x86/avx512/kquant.c's tile with 8 rows); Q6_K: 16 vectors of s16 pairs (sc_g, sc_g),
 * one per sub-block, and the d vector. */
enum { T_W = 0, T_DS = 2048, K4_MP = 2304, K4_DMIN = 2432, K4_STRIDE = 2464, Q6_SC = 2048, Q6_D = 2560, Q6_STRIDE = 2592 };

/* 8 vectors of 8 s32 lanes: r[i] lane c → r[c] lane i */
INLINE void transpose8(__m256i *r) {
    __m256i t[8], u[8];
    for (int i = 0; i < 8; i += 4) {
        t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
        t[i + 2] = _mm256_unpacklo_epi32(r[i + 2], r[i + 3]);
        t[i + 3] = _mm256_unpackhi_epi32(r[i + 2], r[i + 3]);
        u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);     /* columns 0 | 4 of rows i..i+3 */
        u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]); /* 1 | 5 */
        u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]); /* 2 | 6 */
        u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]); /* 3 | 7 */
    }
    for (int c = 0; c < 4; c++) {
        r[c] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x20);
        r[c + 4] = _mm256_permute2x128_si256(u[c], u[c + 4], 0x31);
    }
}

INLINE __m128i load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 16 bytes at blk[r] + off of 8 rows → 4 vectors, lane r of vector k = dword k of those of row r */
INLINE void transpose8x4_rows(const uint8_t *const *blk, size_t off, __m256i *out) {
    __m128i v[8];
    for (int r = 0; r < TR; r++) v[r] = load128(blk[r] + off);
    lk_transpose8x4(v, out);
}

/* Vectors idx..idx + 3 of one Q4_K / Q5_K super-block of 8 rows, lane r of vector k holding dword idx + k of
 * row r's bytes from `off` of its block: transposed from the rows' blocks blk[r], or (PACKED: Q4_K, the
 * super-block at gb of a group in the 8-row layout, LK_ROWS8, whose vectors for off = 16 are its 32 quant
 * vectors and for off = 0 its head's 4 word vectors after them) loaded as stored. */
INLINE void row_vectors(const uint8_t *const *blk, const uint8_t *gb, size_t off, int idx, __m256i *v, const int PACKED) {
    if (PACKED)
        for (int k = 0; k < 4; k++) v[k] = load256(gb + 32 * ((off ? 0 : 32) + idx + k));
    else
        transpose8x4_rows(blk, off + 4 * (size_t)idx, v);
}

/* The f16 at byte offset `off` of each of the 8 blocks, as 8 floats (lane r: block r). */
INLINE __m256 gather_f16(const uint8_t *const *blk, size_t off) {
    const __m128i h = _mm_setr_epi16((short)lk_load_u16(blk[0] + off), (short)lk_load_u16(blk[1] + off), (short)lk_load_u16(blk[2] + off),
                                     (short)lk_load_u16(blk[3] + off), (short)lk_load_u16(blk[4] + off), (short)lk_load_u16(blk[5] + off),
                                     (short)lk_load_u16(blk[6] + off), (short)lk_load_u16(blk[7] + off));
    return _mm256_cvtph_ps(h);
}

/* Q4_K / Q5_K: the scale vectors of one super-block of 8 rows (blk[r]: row r's block) → tb's T_DS, K4_MP and
 * K4_DMIN parts. */
INLINE void k4_scales(const uint8_t *const *blk, const uint8_t *gb, uint8_t *tb, const int PACKED) {
    /* the first 16 bytes of each row's block, transposed (PACKED: the head's word vectors, after the 32 quant
     * vectors): lane r of h[0] = d | dmin << 16, of h[1..3] = the words u0, u1, u2 of its packed scales
     * (lk_k4_scales_mins' unpacking, for 8 rows at once) */
    __m256i h[4];
    row_vectors(blk, gb, 0, 0, h, PACKED);
    const __m256i c3f = _mm256_set1_epi8(0x3f), c0f = _mm256_set1_epi8(0x0f), c30 = _mm256_set1_epi8(0x30);
    const __m256i u0 = h[1], u1 = h[2], u2 = h[3];
    const __m256i sc[2] = {_mm256_and_si256(u0, c3f), _mm256_or_si256(_mm256_and_si256(u2, c0f), _mm256_and_si256(_mm256_srli_epi32(u0, 2), c30))};
    const __m256i mn[2] = {_mm256_and_si256(u1, c3f),
                           _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), c0f), _mm256_and_si256(_mm256_srli_epi32(u1, 2), c30))};
    const __m256i lo16 = _mm256_and_si256(h[0], _mm256_set1_epi32(0xffff)), hi16 = _mm256_srli_epi32(h[0], 16);
    const __m256 d = _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(lo16), _mm256_extracti128_si256(lo16, 1)));
    const __m256 dmin = _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(hi16), _mm256_extracti128_si256(hi16, 1)));
    for (int j = 0; j < 8; j++) {
        const __m256i v = _mm256_and_si256(_mm256_srli_epi32(sc[j / 4], 8 * (j % 4)), _mm256_set1_epi32(255));
        _mm256_store_ps((float *)(tb + T_DS) + 8 * j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(v)));
    }
    /* s16 pairs (m_2k, m_2k+1): bytes 0, 1 or 2, 3 of each dword, zero-extended */
    const __m256i p01 = _mm256_setr_epi8(0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1, 12, -1, 13, -1,
                                         0, -1, 1, -1, 4, -1, 5, -1, 8, -1, 9, -1, 12, -1, 13, -1);
    const __m256i p23 = _mm256_add_epi8(p01, _mm256_set1_epi16(2));
    for (int k = 0; k < 4; k++) _mm256_store_si256((__m256i *)(tb + K4_MP) + k, _mm256_shuffle_epi8(mn[k / 2], k & 1 ? p23 : p01));
    _mm256_store_ps((float *)(tb + K4_DMIN), dmin);
}

/* The tile of one super-block of 8 rows (blk[r]: row r's block; rows past the matrix's end repeat its last
 * row, their lanes unused; PACKED: Q4_K, the super-block at gb of an 8-row group) → tb (the layout above),
 * unpacked and transposed in registers (PACKED: already transposed). */
INLINE void build_block(int type, const uint8_t *const *blk, const uint8_t *gb, uint8_t *tb, const int PACKED) {
    const __m256i m4 = _mm256_set1_epi8(15);
    if (type == LK_TYPE_Q6_K) {
        const __m256i m3 = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; h++) { /* elements 128h + 32k + l: see q6_block */
            __m256i a[8], b[8], q[8];
            for (int r = 0; r < TR; r++) {
                const block_q6_K *bq = (const block_q6_K *)blk[r];
                a[r] = load256(bq->ql + 64 * h), b[r] = load256(bq->ql + 64 * h + 32), q[r] = load256(bq->qh + 32 * h);
            }
            transpose8(a), transpose8(b), transpose8(q);
            for (int g = 0; g < 8; g++) {
                __m256i *o = (__m256i *)(tb + T_W) + 32 * h + g; /* vector 8·(4h + k) + g */
                _mm256_store_si256(o, _mm256_or_si256(_mm256_and_si256(a[g], m4), _mm256_slli_epi16(_mm256_and_si256(q[g], m3), 4)));
                _mm256_store_si256(o + 8, _mm256_or_si256(_mm256_and_si256(b[g], m4),
                                                          _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q[g], 2), m3), 4)));
                _mm256_store_si256(o + 16, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a[g], 4), m4),
                                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q[g], 4), m3), 4)));
                _mm256_store_si256(o + 24, _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b[g], 4), m4),
                                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(q[g], 6), m3), 4)));
            }
        }
        __m128i sc[8];
        __m256i s[4]; /* lane r of s[k]: scales 4k..4k+3 of row r */
        for (int r = 0; r < TR; r++) sc[r] = load128(((const block_q6_K *)blk[r])->scales);
        lk_transpose8x4(sc, s);
        for (int g = 0; g < 16; g++) { /* (sc_g, sc_g), sc_g a signed byte */
            const __m256i v = _mm256_srai_epi32(_mm256_slli_epi32(s[g / 4], 24 - 8 * (g % 4)), 24);
            _mm256_store_si256((__m256i *)(tb + Q6_SC) + g, _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16)));
        }
        _mm256_store_ps((float *)(tb + Q6_D), gather_f16(blk, offsetof(block_q6_K, d)));
        return;
    }
    const int q5 = type == LK_TYPE_Q5_K;
    const __m256i m1 = _mm256_set1_epi8(1);
    __m256i hb[8]; /* Q5_K: lane r of hb[g] = qh bytes 4g..4g+3 of row r */
    if (q5)
        for (int hh = 0; hh < 2; hh++) transpose8x4_rows(blk, 16 + 16 * hh, hb + 4 * hh);
    for (int c = 0; c < 4; c++) { /* chunk c: low nibbles = sub-block 2c, high = 2c + 1 (5th bits: qh bits 2c, 2c + 1) */
        for (int hh = 0; hh < 2; hh++) { /* bytes 16hh.. of the chunk: groups 4hh..4hh+3 */
            __m256i v[4];
            row_vectors(blk, gb, q5 ? 48 : 16, 8 * c + 4 * hh, v, PACKED);
            for (int k = 0; k < 4; k++) {
                const int g = 4 * hh + k;
                __m256i lo = _mm256_and_si256(v[k], m4), hi = _mm256_and_si256(_mm256_srli_epi16(v[k], 4), m4);
                if (q5) {
                    lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb[g], 2 * c), m1), 4));
                    hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb[g], 2 * c + 1), m1), 4));
                }
                _mm256_store_si256((__m256i *)(tb + T_W) + 16 * c + g, lo);
                _mm256_store_si256((__m256i *)(tb + T_W) + 16 * c + 8 + g, hi);
            }
        }
    }
    k4_scales(blk, gb, tb, PACKED);
}

/* The tiles of nb super-blocks of nr rows (row r at w + r·wrb; PACKED: the 8-row group at w) → tile[nb · stride]. */
INLINE void build_tile(int type, const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile, const int PACKED) {
    const size_t bb = lk_block_bytes(type), stride = type == LK_TYPE_Q6_K ? Q6_STRIDE : K4_STRIDE;
    const uint8_t *blk[TR];
    for (int r = 0; r < TR; r++) blk[r] = w + (size_t)(r < nr ? r : nr - 1) * wrb;
    for (int64_t i = 0; i < nb; i++) {
        build_block(type, blk, w + lk_rows8_kblock(type, i), tile + (size_t)i * stride, PACKED);
        for (int r = 0; r < TR; r++) blk[r] += bb;
    }
}

INLINE __m256i load_v(const uint8_t *p) { return _mm256_load_si256((const __m256i *)p); }
INLINE __m256i bcast4(const int8_t *p) { return _mm256_set1_epi32(lk_load_i32(p)); }

/* n tokens (n <= NT; token t's block i at xq[t], its dx and terms at dx[t], bp[t]) × the tile block tb:
 * Q4_K / Q5_K: acc[t] += dx[t] · (Σ_j d·sc_j · S_j − dmin · Σ_j m_j·bsum_j) per row lane, the float steps of
 * x86/avx512/kquant.c's tile_tokens (per sub-block one FMA of its exact integer sum by d·sc, the mins by
 * dmin, then one FMA by dx per block), so that both paths' gemms give the same bits. Q6_K: acc[t] +=
 * float(Σ_j sc_j · (S_j − 32·bsum_j))·(d·dx[t]), the exact sum and the float steps of the matvec (q6_block,
 * lk_q6_K_step). VS: tile vectors whose vpmaddubsw results add up in s16 before the vpmaddwd that widens them. */
INLINE void block_tokens(int type, const uint8_t *tb, const int8_t *const *xq, const float *dx, const int32_t *const *bp,
                         __m256 *acc, const int n) {
    const int q6 = type == LK_TYPE_Q6_K;
    const int SUB = q6 ? 4 : 8; /* vectors per sub-block */
    __m256 blk[NT];
    __m256i isum[NT]; /* Q6_K: Σ_j sc_j · is_j */
    for (int t = 0; t < n; t++) blk[t] = _mm256_setzero_ps(), isum[t] = _mm256_setzero_si256();
    for (int j = 0; j < QK_K / 4 / SUB; j++) { /* sub-blocks */
        __m256i is[NT];
        for (int t = 0; t < n; t++) is[t] = q6 ? _mm256_set1_epi32(bp[t][j]) : _mm256_setzero_si256();
#ifdef LK_AVXVNNI
        __m256i is2[NT]; /* the odd vectors' chain */
        for (int t = 0; t < n; t++) is2[t] = _mm256_setzero_si256();
        for (int v = 0; v < SUB; v++) {
            const int g = SUB * j + v;
            const __m256i wv = load_v(tb + T_W + 32 * g);
            for (int t = 0; t < n; t++) {
                if (v & 1) is2[t] = _mm256_dpbusd_avx_epi32(is2[t], wv, bcast4(xq[t] + 4 * g));
                else is[t] = _mm256_dpbusd_avx_epi32(is[t], wv, bcast4(xq[t] + 4 * g));
            }
        }
        for (int t = 0; t < n; t++) is[t] = _mm256_add_epi32(is[t], is2[t]);
#else
        const int VS = q6 ? 2 : type == LK_TYPE_Q5_K ? 4 : 8;
        const __m256i ones = _mm256_set1_epi16(1);
        for (int v0 = 0; v0 < SUB; v0 += VS) {
            __m256i s16[NT];
            for (int v = 0; v < VS; v++) {
                const int g = SUB * j + v0 + v;
                const __m256i wv = load_v(tb + T_W + 32 * g);
                for (int t = 0; t < n; t++) {
                    const __m256i p = _mm256_maddubs_epi16(wv, bcast4(xq[t] + 4 * g));
                    s16[t] = v ? _mm256_add_epi16(s16[t], p) : p;
                }
            }
            for (int t = 0; t < n; t++) is[t] = lk_dpwssd256(is[t], s16[t], ones);
        }
#endif
        if (q6) {
            const __m256i sc = _mm256_srai_epi32(load_v(tb + Q6_SC + 32 * j), 16);
            for (int t = 0; t < n; t++) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(is[t], sc));
            continue;
        }
        const __m256 ds = _mm256_load_ps((const float *)(tb + T_DS + 32 * j));
        for (int t = 0; t < n; t++) blk[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(is[t]), ds, blk[t]);
    }
    if (q6) {
        const __m256 d = _mm256_load_ps((const float *)(tb + Q6_D));
        for (int t = 0; t < n; t++) acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(dx[t])), acc[t]);
        return;
    }
    const __m256 dmin = _mm256_load_ps((const float *)(tb + K4_DMIN));
    for (int t = 0; t < n; t++) {
        __m256i m = _mm256_madd_epi16(load_v(tb + K4_MP), _mm256_set1_epi32(bp[t][0]));
        for (int k = 1; k < 4; k++) m = lk_dpwssd256(m, load_v(tb + K4_MP + 32 * k), _mm256_set1_epi32(bp[t][k]));
        blk[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), dmin, blk[t]);
    }
    for (int t = 0; t < n; t++) acc[t] = _mm256_fmadd_ps(blk[t], _mm256_set1_ps(dx[t]), acc[t]);
}

/* Q6_K, n tokens (n <= NT_Q6) × the tile block tb, with q6_fold_terms' terms cp: per sub-block j and token the
 * s16 lanes start from the offsets cp[t][j] and add the 4 vectors' vpmaddubsw results (wrapping: the end
 * value is in s16 range), one vpmaddwd by the (sc_j, sc_j) pairs gives sc_j · (S_j − 32·bsum_j) exactly, added
 * up in s32 over the block; then block_tokens' float steps. Per sub-block and token 5 multiplies and 4 adds,
 * against block_tokens' 6 multiplies (and a vpmulld) and 4 adds: less time per gemm. */
INLINE void q6_block_tokens(const uint8_t *tb, const int8_t *const *xq, const float *dx, const int32_t *const *cp,
                            __m256 *acc, const int n) {
    __m256i isum[NT_Q6];
    for (int t = 0; t < n; t++) isum[t] = _mm256_setzero_si256();
    for (int j = 0; j < 16; j++) {
        __m256i s16[NT_Q6];
        for (int t = 0; t < n; t++) s16[t] = _mm256_set1_epi32(cp[t][j]);
        for (int v = 0; v < 4; v++) {
            const int g = 4 * j + v;
            const __m256i wv = load_v(tb + T_W + 32 * g);
            for (int t = 0; t < n; t++) s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(wv, bcast4(xq[t] + 4 * g)));
        }
        const __m256i sc = load_v(tb + Q6_SC + 32 * j);
        for (int t = 0; t < n; t++) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], sc));
    }
    const __m256 d = _mm256_load_ps((const float *)(tb + Q6_D));
    for (int t = 0; t < n; t++) acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(d, _mm256_set1_ps(dx[t])), acc[t]);
}

/* n tokens (n <= NT, fold: NT_Q6; row t at x + t·xrb, terms at dx/terms + t·nb blocks) × one tile →
 * y[t·ys + 0..nr). fold: Q6_K with q6_fold_terms' terms (q6_block_tokens), else block_tokens. */
INLINE void tile_tokens(int type, int fold, const uint8_t *tile, int64_t nb, const uint8_t *x, size_t xrb, const float *dx,
                        const int32_t *terms, float *y, int64_t ys, int nr, const int n) {
    const size_t stride = type == LK_TYPE_Q6_K ? Q6_STRIDE : K4_STRIDE, ti = lk_kquant_term_ints(type);
    __m256 acc[NT_Q6];
    for (int t = 0; t < n; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const int8_t *xq[NT_Q6];
        const int32_t *bp[NT_Q6];
        float dxi[NT_Q6];
        for (int t = 0; t < n; t++) {
            xq[t] = ((const block_q8_K *)(x + (size_t)t * xrb))[i].qs;
            bp[t] = terms + ((size_t)t * (size_t)nb + (size_t)i) * ti;
            dxi[t] = dx[t * nb + i];
        }
        if (fold) q6_block_tokens(tile + (size_t)i * stride, xq, dxi, bp, acc, n);
        else if (n <= NT) block_tokens(type, tile + (size_t)i * stride, xq, dxi, bp, acc, n); /* (always, without fold) */
    }
    for (int t = 0; t < n; t++) lk_store_rows8(acc[t], y + t * ys, nr);
}

/* tile_tokens with a constant token count np (1..NT, fold: 1..NT_Q6): the passes unroll. */
INLINE void tile_pass(int type, int fold, const uint8_t *tile, int64_t nb, const uint8_t *x, size_t xrb, const float *dx,
                      const int32_t *terms, float *y, int64_t ys, int nr, int np) {
    switch (np) {
    case 6: tile_tokens(type, fold, tile, nb, x, xrb, dx, terms, y, ys, nr, 6); break;
    case 5: tile_tokens(type, fold, tile, nb, x, xrb, dx, terms, y, ys, nr, 5); break;
    case 4: tile_tokens(type, fold, tile, nb, x, xrb, dx, terms, y, ys, nr, 4); break;
    case 3: tile_tokens(type, fold, tile, nb, x, xrb, dx, terms, y, ys, nr, 3); break;
    case 2: tile_tokens(type, fold, tile, nb, x, xrb, dx, terms, y, ys, nr, 2); break;
    default: tile_tokens(type, fold, tile, nb, x, xrb, dx, terms, y, ys, nr, 1); break;
    }
}


/* Q4_K, one token × one super-block of 8 rows (blk[r]: row r's block), the tile's quant vectors made in
 * registers from 128-bit halves and used at once, never stored: build_block + block_tokens' vectors, integer
 * sums and float steps, so the same bits. tb: room for the scale vectors (k4_scales). */
INLINE void q4_fused_token(const uint8_t *const *blk, const uint8_t *gb, const int8_t *xq, float dx, const int32_t *bp,
                           __m256 *acc, uint8_t *tb, const int PACKED) {
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    k4_scales(blk, gb, tb, PACKED);
    __m256 b = _mm256_setzero_ps();
#pragma clang loop unroll(full)
    for (int c = 0; c < 4; c++) { /* chunk c: low nibbles = sub-block 2c, high = 2c + 1 */
        __m256i slo = _mm256_setzero_si256(), shi = _mm256_setzero_si256();
        for (int hh = 0; hh < 2; hh++) { /* bytes 16hh.. of the chunk: groups 4hh..4hh+3 */
            __m256i v[4];
            row_vectors(blk, gb, 16, 8 * c + 4 * hh, v, PACKED);
            for (int k = 0; k < 4; k++) {
                const int g = 4 * hh + k;
                const __m256i lo = _mm256_and_si256(v[k], m4), hi = _mm256_and_si256(_mm256_srli_epi16(v[k], 4), m4);
                slo = _mm256_add_epi16(slo, _mm256_maddubs_epi16(lo, bcast4(xq + 64 * c + 4 * g)));
                shi = _mm256_add_epi16(shi, _mm256_maddubs_epi16(hi, bcast4(xq + 64 * c + 32 + 4 * g)));
            }
        }
        /* the s16 sums of 8 vectors, widened once (block_tokens' VS for Q4_K) */
        b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(slo, ones)), _mm256_load_ps((const float *)(tb + T_DS) + 16 * c), b);
        b = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(shi, ones)), _mm256_load_ps((const float *)(tb + T_DS) + 16 * c + 8), b);
    }
    __m256i m = _mm256_madd_epi16(load_v(tb + K4_MP), _mm256_set1_epi32(bp[0]));
    for (int k = 1; k < 4; k++) m = lk_dpwssd256(m, load_v(tb + K4_MP + 32 * k), _mm256_set1_epi32(bp[k]));
    b = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(m), _mm256_load_ps((const float *)(tb + K4_DMIN)), b);
    *acc = _mm256_fmadd_ps(b, _mm256_set1_ps(dx), *acc);
}

/* Q4_K packed in the 8-row layout, one token × the groups at w and w + gap, block by block: two sequential
 * streams per thread (one stream reads DRAM slower), each group in q4_fused_token's steps (its bits). */
INLINE void q4_group_pair_1(const uint8_t *w, size_t gap, int64_t nb, const block_q8_K *x, const float *dx,
                            const int32_t *terms, uint8_t *tb, float *y0, float *y1) {
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t i = 0; i < nb; i++)
        for (int j = 0; j < 2; j++) {
            const uint8_t *gb = w + (size_t)j * gap + lk_rows8_kblock(LK_TYPE_Q4_K, i);
            for (size_t o = 0; o < TR * sizeof(block_q4_K); o += 64)
                _mm_prefetch((const char *)gb + PAIR_AHEAD + o, _MM_HINT_T0);
            q4_fused_token(NULL, gb, x[i].qs, dx[i], terms + (size_t)i * lk_kquant_term_ints(LK_TYPE_Q4_K), &acc[j], tb, 1);
        }
    lk_store_rows8(acc[0], y0, TR);
    lk_store_rows8(acc[1], y1, TR);
}

/* 1..LK_FEW_MAX_TOKENS tokens (decode, conversations stepped together) over groups of 8 rows, block by block.
 * One Q4_K token: q4_fused_token (PACKED: groups in pairs, q4_group_pair_1). Else each super-block's tile is
 * built into L1 once and applied to every token in passes of NT, the accumulators of all tokens kept across
 * blocks (in memory beyond one pass). The tiles and float steps are the gemm's, so a token's result is the same
 * bits in a call of any size. The 8 rows of a group are adjacent (PACKED: one group in the 8-row layout, whose
 * vectors need no transposing): the next group's bytes are prefetched in order, as many per block as the group
 * reads. Needs the thread's scratch; returns 0 when it cannot grow. */
INLINE int kq_few(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                  float *y, int64_t ys, int64_t row_begin, int64_t row_end, const int PACKED) {
    if (n_tokens < 1 || n_tokens > LK_FEW_MAX_TOKENS) return 0;
    const int64_t nb = cols / QK_K;
    const size_t bb = lk_block_bytes(type), stride = type == LK_TYPE_Q6_K ? Q6_STRIDE : K4_STRIDE, ti = lk_kquant_term_ints(type);
    uint8_t *tb = lk_scratch(stride + (size_t)n_tokens * (size_t)nb * (sizeof(float) + ti * sizeof(int32_t))); /* [stride] */
    if (!tb) return 0;
    float *dx = (float *)(tb + stride);               /* [n_tokens, nb] */
    int32_t *terms = (int32_t *)(dx + n_tokens * nb); /* [n_tokens, nb, ti] */
    lk_kquant_prep_terms(type, x, xrb, n_tokens, nb, dx, terms);
    const uint8_t *xb = x;
    int64_t r_first = row_begin;
    if (PACKED && n_tokens == 1 && type == LK_TYPE_Q4_K) { /* groups in pairs (g, g + gh); an odd last one below */
        const int64_t gh = (row_end - row_begin) / (2 * TR);
        for (int64_t g = 0; g < gh; g++) {
            const int64_t r = row_begin + TR * g;
            q4_group_pair_1((const uint8_t *)w + (size_t)r * wrb, (size_t)(gh * TR) * wrb, nb, (const block_q8_K *)xb, dx, terms,
                            tb, y + r, y + r + TR * gh);
        }
        r_first = row_begin + 2 * TR * gh;
    }
    for (int64_t r0 = r_first; r0 < row_end; r0 += TR) {
        const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
        const uint8_t *row[TR], *blk[TR];
        for (int r = 0; r < TR; r++) row[r] = (const uint8_t *)w + (size_t)(r0 + (r < nr ? r : nr - 1)) * wrb;
        const char *next = (const char *)w + (size_t)(r0 + TR) * wrb;
        __m256 acc[LK_FEW_MAX_TOKENS];
        for (int t = 0; t < n_tokens; t++) acc[t] = _mm256_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            const size_t off = (size_t)i * bb;
            for (int r = 0; r < TR; r++) blk[r] = row[r] + off;
            const uint8_t *gb = row[0] + lk_rows8_kblock(type, i); /* PACKED: the group's super-block i */
            for (size_t o = 0; o < TR * bb; o += 64) _mm_prefetch(next + TR * off + o, _MM_HINT_T0);
            if (n_tokens == 1 && type == LK_TYPE_Q4_K) {
                q4_fused_token(blk, gb, ((const block_q8_K *)xb)[i].qs, dx[i], terms + (size_t)i * ti, acc, tb, PACKED);
                continue;
            }
            build_block(type, blk, gb, tb, PACKED);
            for (int64_t t0 = 0; t0 < n_tokens; t0 += NT) {
                const int nt = n_tokens - t0 < NT ? (int)(n_tokens - t0) : NT;
                const int8_t *xq[NT];
                const int32_t *bp[NT];
                float dxi[NT];
                for (int t = 0; t < nt; t++) {
                    xq[t] = ((const block_q8_K *)(xb + (size_t)(t0 + t) * xrb))[i].qs;
                    bp[t] = terms + ((size_t)(t0 + t) * (size_t)nb + (size_t)i) * ti;
                    dxi[t] = dx[(t0 + t) * nb + i];
                }
                LK_PASS4(nt, block_tokens, type, tb, xq, dxi, bp, acc + t0)
            }
        }
        for (int t = 0; t < n_tokens; t++) lk_store_rows8(acc[t], y + t * ys + r0, nr);
    }
    return 1;
}

/* Q6_K's terms for q6_block_tokens, per token and Q8_K block: dx, then for each sub-block j one dword of two
 * s16 offsets (c_e, c_o) in place of −32·bsum_j. The even s16 lane of a row sums the 8 products q·x_i
 * (q 0..63) of the activations x_i at 4g, 4g + 1 of the sub-block's 4 groups g, the odd one those at
 * 4g + 2, 4g + 3; with c = −32·B (B: the sum of those 8 x_i, from the quants as bsum is) the lane ends at
 * Σ (q − 32)·x_i, in [−32512, 32768], and 32768 only when all 8 x_i are −128: then c − 1 in that lane and
 * + 1 in the other keep both in s16 (the other's 8 x_i not all −128) and their sum. The two lanes sum to
 * S_j − 32·bsum_j. A sub-block whose 16 activations are all −128 has no such pair (lk_quantize_row gives
 * −127..127, so it does not arise from it): returns 0, and the caller takes lk_kquant_prep_terms' terms
 * and block_tokens, the same integers. */
INLINE int q6_fold_terms(const uint8_t *x, size_t xrb, int64_t nt, int64_t nb, float *dx, int32_t *terms) {
    const __m256i ones8 = _mm256_set1_epi8(1), m1024 = _mm256_set1_epi16(-1024);
    __m256i bad = _mm256_setzero_si256();
    for (int64_t t = 0; t < nt; t++) {
        const block_q8_K *xt = (const block_q8_K *)(x + (size_t)t * xrb);
        for (int64_t i = 0; i < nb; i++) {
            int32_t *o = terms + ((size_t)t * (size_t)nb + (size_t)i) * 16;
            dx[t * nb + i] = xt[i].d;
            for (int v = 0; v < 8; v++) { /* sub-blocks 2v, 2v + 1 */
                __m256i u = _mm256_maddubs_epi16(ones8, load256(xt[i].qs + 32 * v)); /* dword k: pair sums of group k */
                u = _mm256_add_epi16(u, _mm256_shuffle_epi32(u, 0x4e));
                u = _mm256_add_epi16(u, _mm256_shuffle_epi32(u, 0xb1)); /* each half: (B_e, B_o) of its sub-block */
                const __m256i m = _mm256_cmpeq_epi16(u, m1024), ms = _mm256_or_si256(_mm256_slli_epi32(m, 16), _mm256_srli_epi32(m, 16));
                __m256i c = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(u, 5));
                c = _mm256_sub_epi16(_mm256_add_epi16(c, m), ms);
                bad = _mm256_or_si256(bad, _mm256_and_si256(m, ms));
                o[2 * v] = _mm256_cvtsi256_si32(c);
                o[2 * v + 1] = _mm256_extract_epi32(c, 4);
            }
        }
    }
    return _mm256_testz_si256(bad, bad);
}

INLINE int kq_gemm(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                   float *y, int64_t ys, int64_t row_begin, int64_t row_end, const int PACKED) {
    const int64_t nb = cols / QK_K;
    const int64_t chunk = n_tokens < CHUNK ? n_tokens : CHUNK;
    const size_t stride = type == LK_TYPE_Q6_K ? Q6_STRIDE : K4_STRIDE, ti = lk_kquant_term_ints(type);
    const size_t tile_bytes = (size_t)nb * stride;
    const size_t terms_bytes = (size_t)chunk * (size_t)nb * (sizeof(float) + ti * sizeof(int32_t));
    uint8_t *scratch = lk_scratch(tile_bytes + terms_bytes); /* the thread's, 64-byte aligned */
    if (!scratch) return 0;
    uint8_t *tile = scratch;
    float *dx = (float *)(scratch + tile_bytes);
    int32_t *terms = (int32_t *)(dx + chunk * nb);
    const uint8_t *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xb + (size_t)t0 * xrb;
#ifdef LK_AVXVNNI
        const int fold = 0; /* vpdpbusd adds in s32: no s16 sums to keep within range */
#else
        const int fold = type == LK_TYPE_Q6_K && q6_fold_terms(xc, xrb, nt, nb, dx, terms);
#endif
        if (!fold) lk_kquant_prep_terms(type, xc, xrb, nt, nb, dx, terms);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
            const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
            build_tile(type, wb + (size_t)r0 * wrb, wrb, nb, nr, tile, PACKED);
            for (int64_t t = 0; t < nt;) {
                const uint8_t *xt = xc + (size_t)t * xrb;
                const float *dxt = dx + t * nb;
                const int32_t *tt = terms + (size_t)t * (size_t)nb * ti;
                float *yt = y + (t0 + t) * ys + r0;
                const int pass = fold ? NT_Q6 : NT;
                const int np = nt - t >= pass ? pass : (int)(nt - t);
                if (fold) tile_pass(type, 1, tile, nb, xt, xrb, dxt, tt, yt, ys, nr, np);
                else tile_pass(type, 0, tile, nb, xt, xrb, dxt, tt, yt, ys, nr, np);
                t += np;
            }
        }
    }
    return 1;
}

/* The row layout's entries, and (rows8_q4_K) Q4_K's LK_ROWS8 entry: kq_few up to LK_FEW_MAX_TOKENS tokens,
 * then kq_gemm, in the row layout's integer and float steps, so a packed matrix gives the row layout's bits at
 * every batch size. */
#define KQ_ENTRY(NAME, IMPL, TYPE, PACKED)                                                                    \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,     \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                               \
        return IMPL(TYPE, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, PACKED);                 \
    }
KQ_ENTRY(gemm_q4_K, kq_gemm, LK_TYPE_Q4_K, 0)
KQ_ENTRY(gemm_q5_K, kq_gemm, LK_TYPE_Q5_K, 0)
KQ_ENTRY(gemm_q6_K, kq_gemm, LK_TYPE_Q6_K, 0)
KQ_ENTRY(few_q4_K, kq_few, LK_TYPE_Q4_K, 0)
#undef KQ_ENTRY

static int matvec_q4_K(int64_t n, const void *w, size_t ws, const void *x, float *y, int64_t nrows) {
    return kq_few(LK_TYPE_Q4_K, n, w, ws, x, 0, 1, y, 0, 0, nrows, 0);
}

static int rows8_q4_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens <= LK_FEW_MAX_TOKENS && kq_few(LK_TYPE_Q4_K, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, 1))
        return 1;
    return kq_gemm(LK_TYPE_Q4_K, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, 1);
}

#pragma clang attribute pop

LK_KERNELS(lk_avx2_kquant,
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q4_K, matvec_q4_K),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q5_K, matvec_q5_K),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q6_K, matvec_q6_K),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_K, few_q4_K),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_K, rows8_q4_K),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q4_K, gemm_q4_K, MIN_K4),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q5_K, gemm_q5_K, MIN_K4),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q6_K, gemm_q6_K, MIN_Q6));

#else
LK_NO_KERNELS(lk_avx2_kquant);
#endif

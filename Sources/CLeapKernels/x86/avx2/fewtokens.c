/* AVX2 (+FMA, F16C) matrix × a few tokens (2 to LK_FEW_MAX_TOKENS rows of activations: conversations decoded
 * together, short prompts) for Q4_0, Q5_K and Q6_K: the AVX2 table's few_tokens entries (and, for Q4_0, its
 * one-token matvec: the tile kernel with one token), of the
 * design of x86/avx512/fewtokens.c. Each weight block is loaded and unpacked into registers once and applied
 * to every token of the call, with no scratch tile (the gemm kernels' transposed tiles cost as much as several
 * tokens' products, and below 16 tokens the row kernels reload and re-unpack every block per token or per group
 * of 4). AVX2 has no vpdpbusd: every 32 products of a token cost a vpmaddubsw and (K-quants) a vpmaddwd,
 * so the products alone are a good share of a one-token call and 4 tokens cost more than one token per
 * weight (figures: BENCHMARKS.md, leap-bench kernels).
 *
 * Every (row, token) output keeps exactly the AVX2 one-token kernel's integers and float operations, in its
 * order, so a token multiplied with others gets bit for bit what it gets alone (Q4_K's few-token calls are
 * x86/avx2/kquant.c's kq_few, in the order of its own one-token kernel; Q8_0's are x86/avx2/q8_0.c's):
 *
 *   Q4_0  (x86/q4_0.c, matvec_q4_0 / dot_q4_0) one float chain per output over the blocks,
 *         acc = fma(float(isum_b), dw·dx, acc), isum_b the exact block sum. Here 8 rows are the 8 lanes: the
 *         rows' 16-byte nibble arrays of a block are transposed in registers (4 × 4 dwords per 128-bit half)
 *         so that lane r of vector g holds quants 4g..4g+3 of row r; each group of 4 activation bytes is
 *         broadcast into one vpmaddubsw per token, whose s16 results add up over the block (8 · 2·15·128 =
 *         30720 fits) before one vpmaddwd; the nibble offset enters as −8·Σx. The next 8 rows are prefetched
 *         in order while a tile works (as the matvec). Weights packed in the 8-row layout (LK_ROWS8) are
 *         already those transposed vectors, with the 8 scales side by side: no transpose, no scale loads
 *         one by one (4 tokens 9.5 against 12.5 cycles per 256 weights per token, one token 13.4 against
 *         24; the same bits); one token goes over pairs of groups, two streams per thread.
 *   Q5_K  (x86/avx2/kquant.c, q5_block) per output an 8-lane chain acc += float(sumi)·(d·dx) and a
 *         4-lane one accm += float(mins)·(dmin·dx), y = hsum8(acc) − hsum4(accm); sumi the 8 vpmaddubsw
 *         results of the block widened by vpmaddwd with the sub-block scales. Here a 64-element chunk's quants
 *         and spread scales are unpacked once and applied to every token; the mins' 32-element activation sums
 *         are formed once per token and block for the call.
 *   Q6_K  (x86/avx2/kquant.c, q6_block) one float chain per output over the blocks, acc = fma(float(isum_b),
 *         d·dx, acc) (lk_q6_K_step), isum_b = Σ sc·(S − 32·bsum) the exact block sum (the gemm's order too);
 *         the quants and scale vectors of each half block unpacked once for all tokens.
 *
 * Tokens go in passes of up to PASS_*; a second pass over the same rows finds them in L1. Q4_0 keeps a
 * pass's accumulators in registers; the K-quants keep theirs in scratch memory, updated once per block, so that
 * the registers hold the integer sums and one chunk's quants and scales, and their chunk loops are kept rolled
 * (unrolled, clang unpacks the whole block ahead of the tokens and spills it: the reloads cost more than the
 * unpacking saves). Per-call terms (Q4_0: dx, 8·Σx; Q5_K: the 32-element sums) live in the
 * thread's scratch (lk_scratch); when it cannot grow the caller falls back. */
#include "lk_internal.h"
#include "../lk_kquant_unpack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

enum {
    PASS_Q4_0 = 4,   /* tokens per pass: 4 s16 sums + 4 accumulators + the 4 transposed vectors */
    PASS_K = 4,      /* K-quants: 4 integer sums + a chunk's quants and scales (accumulators in scratch) */
    PAIR_AHEAD = 2048, /* Q4_0, one token in the 8-row layout: bytes prefetched ahead in each of its two streams */
    PREFETCH = 4096, /* K-quants: bytes ahead of the block being read that are prefetched */
};

#pragma clang attribute push(__attribute__((target(LK_AVX2_TARGET))), apply_to = function)
#include "../lk_x86_avx2.h"

INLINE __m128i load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }


/* ================================ Q4_0 ================================ */

/* NT tokens (row t at x + t·xs, terms at dx/xs8 + t·nb) × 8 rows → y[t·ys + 0..nr). Row layout (PACKED 0):
 * row r at w + o[r], rows past the last repeat it. 8-row layout (PACKED 1, LK_ROWS8): the group at w, whose
 * vectors are the q[k] below (nr = 8). `next`: the next group, whose bytes are prefetched. */
INLINE void q4_0_tile(const uint8_t *w, const int32_t *o, int64_t nb, const uint8_t *x, size_t xs,
                      const float *dx, const int32_t *xs8, float *y, int64_t ys, int nr, const uint8_t *next,
                      const int PACKED, const int NT) {
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    __m256 acc[8];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const size_t ob = (size_t)b * sizeof(block_q4_0);
        if (PACKED) { /* the next group's vectors and scales at this block */
            for (int k = 0; k < 2; k++) lk_prefetch_weights(next + lk_rows8_quants(b, QK / 2) + 64 * k);
            lk_prefetch_weights(next + lk_rows8_scales(nb, b, QK / 2));
        } else
            for (int k = 0; k < 3; k++) lk_prefetch_weights(next + 8 * ob + 64 * k); /* 8 blocks: 144 bytes */
        /* q[k] lane r = dword k of row r's 16 quant bytes (nibbles of elements 4k..4k+3 low, 16 + 4k.. high) */
        __m256i q[4];
        __m256 d;
        if (PACKED) {
            for (int k = 0; k < 4; k++) q[k] = load256(w + lk_rows8_quants(b, QK / 2) + 32 * k);
            d = _mm256_cvtph_ps(load128(w + lk_rows8_scales(nb, b, QK / 2)));
        } else {
            __m128i rows[8];
            for (int r = 0; r < 8; r++) rows[r] = load128(w + o[r] + ob + 2);
            lk_transpose8x4(rows, q);
            d = lk_row_scales8(w, o, ob);
        }
        __m256i s16[8];
        /* groups in the order 0, 4, 1, 5, ..: q[k] is done with after its two groups (k and 4 + k), which
         * leaves registers for 4 tokens (the s16 sums are exact in any order) */
        for (int i = 0; i < 8; i++) {
            const int g = (i >> 1) + 4 * (i & 1);
            const __m256i v = g < 4 ? _mm256_and_si256(q[g], m4) : _mm256_and_si256(_mm256_srli_epi16(q[g - 4], 4), m4);
            for (int t = 0; t < NT; t++) {
                const uint8_t *xq = x + (size_t)t * xs + (size_t)b * sizeof(block_q8_0) + 2 + 4 * g;
                const __m256i p = _mm256_maddubs_epi16(v, _mm256_set1_epi32(lk_load_i32(xq)));
                s16[t] = i ? _mm256_add_epi16(s16[t], p) : p;
            }
        }
        for (int t = 0; t < NT; t++) {
            const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(s16[t], ones), _mm256_set1_epi32(xs8[t * nb + b]));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(dx[t * nb + b])), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) lk_store_rows8(acc[t], y + t * ys, nr);
}
INLINE void q4_0_tile_rows(const uint8_t *w, const int32_t *o, int64_t nb, const uint8_t *x, size_t xs, const float *dx,
                           const int32_t *xs8, float *y, int64_t ys, int nr, const uint8_t *next, const int NT) {
    q4_0_tile(w, o, nb, x, xs, dx, xs8, y, ys, nr, next, 0, NT);
}
INLINE void q4_0_tile_packed(const uint8_t *w, const int32_t *o, int64_t nb, const uint8_t *x, size_t xs, const float *dx,
                             const int32_t *xs8, float *y, int64_t ys, int nr, const uint8_t *next, const int NT) {
    q4_0_tile(w, o, nb, x, xs, dx, xs8, y, ys, nr, next, 1, NT);
}

/* One token × groups g and g + gh of the 8-row layout (rows 8g.. at w, 8(g + gh).. at w + gap): two
 * sequential streams per thread, each group in q4_0_tile's order (its bits). */
INLINE void q4_0_group_pair_1(const uint8_t *w, size_t gap, int64_t nb, const uint8_t *x, const float *dx, const int32_t *xs8,
                              float *y0, float *y1) {
    const __m256i m4 = _mm256_set1_epi8(15), ones = _mm256_set1_epi16(1);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xb = x + (size_t)b * sizeof(block_q8_0) + 2;
        for (int j = 0; j < 2; j++) {
            const uint8_t *grp = w + (size_t)j * gap, *blk = grp + lk_rows8_quants(b, QK / 2);
            for (int k = 0; k < 2; k++) lk_prefetch_weights(blk + PAIR_AHEAD + 64 * k);
            lk_prefetch_weights(grp + lk_rows8_scales(nb, b, QK / 2) + PAIR_AHEAD / 8);
            __m256i s16 = _mm256_setzero_si256();
            for (int i = 0; i < 8; i++) {
                const int g = (i >> 1) + 4 * (i & 1);
                const __m256i q = load256(blk + 32 * (g & 3));
                const __m256i v = g < 4 ? _mm256_and_si256(q, m4) : _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
                const __m256i p = _mm256_maddubs_epi16(v, _mm256_set1_epi32(lk_load_i32(xb + 4 * g)));
                s16 = i ? _mm256_add_epi16(s16, p) : p;
            }
            const __m256 d = _mm256_cvtph_ps(load128(grp + lk_rows8_scales(nb, b, QK / 2)));
            const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(s16, ones), _mm256_set1_epi32(xs8[b]));
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(dx[b])), acc[j]);
        }
    }
    _mm256_storeu_ps(y0, acc[0]);
    _mm256_storeu_ps(y1, acc[1]);
}

/* 1..LK_FEW_MAX_TOKENS tokens in either layout (PACKED: rows in whole groups of 8). */
INLINE int few_q4_0_layout(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                           int64_t ys, int64_t row_begin, int64_t row_end, const int PACKED) {
    const int64_t nb = cols / QK;
    if (n_tokens > LK_FEW_MAX_TOKENS || (uint64_t)ws * 8 > (uint64_t)INT32_MAX) return 0;
    const uint8_t *x = vx;
    float *dx = lk_scratch((size_t)n_tokens * (size_t)nb * (sizeof(float) + sizeof(int32_t))); /* [n_tokens, nb] */
    if (!dx) return 0;
    int32_t *xs8 = (int32_t *)(dx + n_tokens * nb); /* [n_tokens, nb] */
    for (int64_t t = 0; t < n_tokens; t++) lk_q4_0_terms(x + (size_t)t * xs, nb, dx + t * nb, xs8 + t * nb);
    int64_t r_first = row_begin;
    if (PACKED && n_tokens == 1) { /* groups in pairs (g, g + gh); an odd last one goes through the tile below */
        const int64_t gh = (row_end - row_begin) / 16;
        for (int64_t i = 0; i < gh; i++) {
            const int64_t r = row_begin + 8 * i;
            q4_0_group_pair_1((const uint8_t *)vw + (size_t)r * ws, (size_t)gh * 8 * ws, nb, x, dx, xs8, y + r, y + r + 8 * gh);
        }
        r_first = row_begin + 16 * gh;
    }
    for (int64_t r0 = r_first; r0 < row_end; r0 += 8) {
        const int nr = row_end - r0 < 8 ? (int)(row_end - r0) : 8;
        const uint8_t *w = (const uint8_t *)vw + (size_t)r0 * ws;
        int32_t o[8];
        lk_group_offsets(nr, ws, o);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += PASS_Q4_0) {
            const int nt = n_tokens - t0 < PASS_Q4_0 ? (int)(n_tokens - t0) : PASS_Q4_0;
            if (PACKED) {
                LK_PASS4(nt, q4_0_tile_packed, w, o, nb, x + (size_t)t0 * xs, xs, dx + t0 * nb, xs8 + t0 * nb, y + t0 * ys + r0, ys, nr, w + 8 * ws)
            } else {
                LK_PASS4(nt, q4_0_tile_rows, w, o, nb, x + (size_t)t0 * xs, xs, dx + t0 * nb, xs8 + t0 * nb, y + t0 * ys + r0, ys, nr, w + 8 * ws)
            }
        }
    }
    return 1;
}

static int few_q4_0(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    return few_q4_0_layout(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end, 0);
}

/* The LK_ROWS8 entry: one token over group pairs, the tile kernel up to LK_FEW_MAX_TOKENS tokens, then the
 * gemm on tiles built from the layout; the same bits as the row layout's few_q4_0, matvec_q4_0 and
 * x86/q4_0.c's gemm. */
static int rows8_q4_0(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens <= LK_FEW_MAX_TOKENS) return few_q4_0_layout(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end, 1);
    return lk_gemm_q4_0_rows8_avx2(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end);
}

/* One token: the tile kernel of one token, the same bits as x86/q4_0.c's matvec (whose per-row block
 * products and reduction tree cost more here). */
static int matvec_q4_0(int64_t n, const void *w, size_t ws, const void *x, float *y, int64_t nrows) {
    return few_q4_0(n, w, ws, x, 0, 1, y, 0, 0, nrows);
}

/* ================================ Q5_K ================================ */

INLINE float hsum4_ps(__m128 r) {
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    return _mm_cvtss_f32(_mm_add_ss(r, _mm_movehdup_ps(r)));
}


/* Per token and Q8_K block, for the mins: the 8 sums of 32 activations (bsums pairs, vphaddw as q5_block). */
INLINE void q5_K_terms(const uint8_t *x, int64_t nb, int16_t *bs32) {
    for (int64_t i = 0; i < nb; i++) {
        const __m256i bs = load256(((const block_q8_K *)x)[i].bsums);
        _mm_storeu_si128((__m128i *)(bs32 + 8 * i), _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1)));
    }
}

/* One Q5_K row (nb blocks at w) × NT tokens (Q8_K row t at x + t·xs, its 32-element sums at
 * bs32 + t·8·nb) → y[t·ys]. The float accumulators live in acc[t·12 ..]: 8 lanes of the scales' chain, 4 of
 * the mins' (in memory, updated once per block: the integer sums keep the registers). */
INLINE void q5_K_row(const uint8_t *w, int64_t nb, const uint8_t *x, size_t xs, const int16_t *bs32, float *acc,
                   float *y, int64_t ys, const int NT) {
    const size_t bb = sizeof(block_q5_K);
    const __m256i m4 = _mm256_set1_epi8(15), m1 = _mm256_set1_epi8(1);
    for (int t = 0; t < NT; t++) _mm256_storeu_ps(acc + 12 * t, _mm256_setzero_ps()), _mm_storeu_ps(acc + 12 * t + 8, _mm_setzero_ps());
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *blk = w + (size_t)i * bb;
        lk_prefetch_block(blk, PREFETCH, bb);
        const __m128i sm = lk_k4_scales_mins(blk + 4);
        const __m256i sc = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm)); /* sc_0..7 as s16, in both halves */
        const uint8_t *qs = blk + 48;
        __m256i hb = load256(blk + 16);
        __m256i sumi[8];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
        /* vpshufb masks of sc_2c and sc_2c+1 (s16 elements) in all elements of each half */
        __m256i mlo = _mm256_set1_epi16(0x0100), mhi = _mm256_set1_epi16(0x0302);
        /* a chunk's quants and scales stay in registers for all tokens: the loop is kept rolled, so that the
         * compiler does not unpack the whole block ahead of the tokens and spill it */
#pragma clang loop unroll(disable)
        for (int c = 0; c < 4; c++) { /* chunk c: low nibbles = elements 64c.., high = 64c + 32.. (5th bits: qh bits 2c, 2c + 1) */
            const __m256i q = load256(qs + 32 * c);
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(hb, m1), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), m1), 4));
            hb = _mm256_srli_epi16(hb, 2);
            const __m256i slo = _mm256_shuffle_epi8(sc, mlo), shi = _mm256_shuffle_epi8(sc, mhi);
            mlo = _mm256_add_epi8(mlo, _mm256_set1_epi8(4)), mhi = _mm256_add_epi8(mhi, _mm256_set1_epi8(4));
            for (int t = 0; t < NT; t++) {
                const int8_t *xq = ((const block_q8_K *)(x + (size_t)t * xs))[i].qs;
                const __m256i plo = _mm256_maddubs_epi16(lo, load256(xq + 64 * c));
                const __m256i phi = _mm256_maddubs_epi16(hi, load256(xq + 64 * c + 32));
                sumi[t] = lk_dpwssd256(sumi[t], plo, slo);
                sumi[t] = lk_dpwssd256(sumi[t], phi, shi);
            }
        }
        const __m128i mn = _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8));         /* m_0..7 as s16 */
        const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128(lk_load_i32(blk))); /* d, dmin */
        const __m256 dv = _mm256_broadcastss_ps(dd);
        const __m128 dminv = _mm_shuffle_ps(dd, dd, 0x55);
        for (int t = 0; t < NT; t++) {
            const __m256 dx = _mm256_broadcast_ss(&((const block_q8_K *)(x + (size_t)t * xs))[i].d);
            const __m128i mins = _mm_madd_epi16(mn, load128(bs32 + 8 * ((size_t)t * (size_t)nb + (size_t)i))); /* 4 lanes of m·bsum pairs */
            /* d·dx and dmin·dx in every lane, as q5_block's products */
            _mm256_storeu_ps(acc + 12 * t, _mm256_fmadd_ps(_mm256_cvtepi32_ps(sumi[t]), _mm256_mul_ps(dv, dx), _mm256_loadu_ps(acc + 12 * t)));
            _mm_storeu_ps(acc + 12 * t + 8, _mm_fmadd_ps(_mm_cvtepi32_ps(mins), _mm_mul_ps(dminv, _mm256_castps256_ps128(dx)), _mm_loadu_ps(acc + 12 * t + 8)));
        }
    }
    for (int t = 0; t < NT; t++) y[t * ys] = hsum_ps(_mm256_loadu_ps(acc + 12 * t)) - hsum4_ps(_mm_loadu_ps(acc + 12 * t + 8));
}

static int few_q5_K(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                  int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK_K;
    if (n_tokens > LK_FEW_MAX_TOKENS) return 0;
    const uint8_t *x = vx;
    float *acc = lk_scratch(PASS_K * 12 * sizeof(float) + (size_t)n_tokens * (size_t)nb * 8 * sizeof(int16_t)); /* [PASS_K, 12] */
    if (!acc) return 0;
    int16_t *bs32 = (int16_t *)(acc + PASS_K * 12); /* [n_tokens, nb, 8] */
    for (int64_t t = 0; t < n_tokens; t++) q5_K_terms(x + (size_t)t * xs, nb, bs32 + 8 * t * nb);
    for (int64_t r = row_begin; r < row_end; r++) {
        const uint8_t *w = (const uint8_t *)vw + (size_t)r * ws;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += PASS_K) {
            const int nt = n_tokens - t0 < PASS_K ? (int)(n_tokens - t0) : PASS_K;
            LK_PASS4(nt, q5_K_row, w, nb, x + (size_t)t0 * xs, xs, bs32 + 8 * t0 * nb, acc, y + t0 * ys + r, ys)
        }
    }
    return 1;
}

/* ================================ Q6_K ================================ */

/* One row (nb blocks at w) × NT tokens (Q8_K row t at x + t·xs) → y[t·ys], the accumulators in acc[t].
 * Elements 128h + 32k + l: nibble of ql[64h + l] (k = 0, 2: low, high) or ql[64h + 32 + l] (k = 1, 3), 2 bits
 * 2k.. of qh[32h + l]. */
INLINE void q6_K_row(const block_q6_K *w, int64_t nb, const uint8_t *x, size_t xs, float *acc, float *y, int64_t ys, const int NT) {
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    for (int t = 0; t < NT; t++) acc[t] = 0.0f;
    for (int64_t i = 0; i < nb; i++) {
        const block_q6_K *b = w + i;
        lk_prefetch_block(b, PREFETCH, sizeof(block_q6_K));
        const __m256i sc16 = _mm256_cvtepi8_epi16(load128(b->scales)); /* sc_0..7 | sc_8..15 */
        __m256i sumi[8];
        for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
        /* half h (vectors v = 4h + k, sub-blocks 2v, 2v + 1 in their halves): its quants and scales stay in
         * registers for all tokens; the loop is kept rolled so that the compiler does not unpack the whole
         * block ahead of the tokens and spill it. The quants and scale vectors are made as q6_block makes them
         * (one vpshufb per scale vector from the block's s16 scales). */
#pragma clang loop unroll(disable)
        for (int h = 0; h < 2; h++) {
            const __m256i l0 = load256(b->ql + 64 * h), l1 = load256(b->ql + 64 * h + 32), hb = load256(b->qh + 32 * h);
            const __m256i sh = h ? _mm256_permute2x128_si256(sc16, sc16, 0x11) : _mm256_permute2x128_si256(sc16, sc16, 0x00); /* sc_8h..8h+7 in both halves */
            for (int k = 0; k < 4; k++) {
                /* bits 2k, 2k + 1 of hb moved to bits 4, 5 of the same byte, or'ed onto the nibble */
                const __m256i l = k & 1 ? l1 : l0;
                const __m256i hi = k == 0 ? _mm256_slli_epi16(hb, 4) : k == 1 ? _mm256_slli_epi16(hb, 2) : k == 2 ? hb : _mm256_srli_epi16(hb, 2);
                const __m256i q = _mm256_or_si256(_mm256_and_si256(k < 2 ? l : _mm256_srli_epi16(l, 4), m4), _mm256_and_si256(hi, m30));
                /* s16 sc_8h+2k in the low half, sc_8h+2k+1 in the high one */
                const short lo = (short)(0x0100 * (4 * k + 1) + 4 * k), hs = (short)(0x0100 * (4 * k + 3) + 4 * k + 2);
                const __m256i sv = _mm256_shuffle_epi8(sh, _mm256_setr_epi16(lo, lo, lo, lo, lo, lo, lo, lo, hs, hs, hs, hs, hs, hs, hs, hs));
                for (int t = 0; t < NT; t++) {
                    const int8_t *xq = ((const block_q8_K *)(x + (size_t)t * xs))[i].qs + 128 * h + 32 * k;
                    sumi[t] = lk_dpwssd256(sumi[t], _mm256_maddubs_epi16(q, load256(xq)), sv);
                }
            }
        }
        const float d = h2f(b->d);
        for (int t = 0; t < NT; t++) {
            const block_q8_K *xb = (const block_q8_K *)(x + (size_t)t * xs) + i;
            const __m256i corr = _mm256_madd_epi16(sc16, load256(xb->bsums)); /* Σ sc·bsum pairs */
            acc[t] = lk_q6_K_step(acc[t], hsum_epi32(_mm256_sub_epi32(sumi[t], _mm256_slli_epi32(corr, 5))), d, xb->d);
        }
    }
    for (int t = 0; t < NT; t++) y[t * ys] = acc[t];
}

static int few_q6_K(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK_K;
    const uint8_t *x = vx;
    float *acc = lk_scratch(PASS_K * sizeof(float)); /* [PASS_K] */
    if (!acc) return 0;
    for (int64_t r = row_begin; r < row_end; r++) {
        const block_q6_K *w = (const block_q6_K *)((const uint8_t *)vw + (size_t)r * ws);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += PASS_K) {
            const int nt = n_tokens - t0 < PASS_K ? (int)(n_tokens - t0) : PASS_K;
            LK_PASS4(nt, q6_K_row, w, nb, x + (size_t)t0 * xs, xs, acc, y + t0 * ys + r, ys)
        }
    }
    return 1;
}

#pragma clang attribute pop

LK_KERNELS(lk_avx2_fewtokens,
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q4_0, matvec_q4_0),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_0, few_q4_0),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_0, rows8_q4_0),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q5_K, few_q5_K),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q6_K, few_q6_K));

#else
LK_NO_KERNELS(lk_avx2_fewtokens);
#endif

/* AVX-512 VNNI matrix × a few tokens (2 to LK_FEW_MAX_TOKENS rows of activations: conversations decoded
 * together, short prompts) for Q4_0 and Q6_K, and Q4_0 and Q8_0 in the 8-row layout (LK_ROWS8, packed at
 * load) at every token count. Decode is memory-bound: each weight block is loaded and unpacked into registers
 * once and applied to every token of the call, so that 4 tokens cost little more than one per weight
 * (BENCHMARKS.md), with no scratch tile (the gemm kernels' transposed tiles cost as much as 8 tokens'
 * products).
 *
 * Every (row, token) output keeps exactly the one-token kernel's integers and float operations, in its order,
 * so a token multiplied with others gets bit for bit what it gets alone:
 *
 *   Q4_0  (x86/q4_0.c) one float chain per output over the blocks, acc = fma(float(isum_b), dw·dx, acc),
 *         isum_b the exact block sum. Here 16 rows are the 16 lanes: the rows' 16-byte nibble arrays of a block
 *         are transposed in registers (4 × 4 dwords per 128-bit chunk) so that lane r of vector g holds quants
 *         4g..4g+3 of row r; each group of 4 activation bytes is broadcast into one vpdpbusd per token, the
 *         nibble offset enters as −8·Σx. The next 16 rows are prefetched in order while a tile works. In
 *         the 8-row layout (LK_ROWS8, packed at load) two groups' vectors are those lanes as they lie in
 *         memory: no transposes, no gathers; one token uses the same tiles (faster than the row layout
 *         from DRAM), more than LK_FEW_MAX_TOKENS the VNNI gemm on tiles built from the layout.
 *   Q8_0  (x86/avx2/q8_0.c's order, the row layout's kernels of this table too) one float chain per output,
 *         acc = fma(dw·dx, float(isum_b), acc). Only the 8-row layout is here: 16-row tiles of two groups'
 *         vectors, the weights u = w + 128 with −128·Σx per block through the activations, below Q8_GEMM_MIN
 *         tokens (chunks of Q8_CHUNK tokens, passes of PASS over each tile); from there the Q4_0 gemm's tiles
 *         (x86/q4_0.c) with the same operations per output.
 *   Q6_K  (x86/avx512/kquant.c) one 16-lane float chain per output, acc = fma(float(sumi), d·dx, acc), sumi
 *         the sub-block-scaled vpdpbusd sums minus 32·Σ sc·bsums in lanes 0-7, then _mm512_reduce_add_ps; one
 *         row at a time, its unpacked quants and scale vectors shared by the tokens, PREFETCH bytes ahead.
 *
 * Tokens go in passes of up to PASS (their accumulators stay in registers); a second pass over the same rows
 * finds them in L1. The activation terms of a call (8-36 bytes per token and block) live in the thread's scratch
 * (lk_scratch); when it cannot grow the caller falls back. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

enum {
    PASS = 8,          /* tokens per pass over the weights */
    Q8_CHUNK = 64,     /* Q8_0 in the 8-row layout: tokens whose activations are kept in L2 across the tiles */
    Q8_GEMM_MIN = 48,  /* Q8_0 in the 8-row layout: from this many tokens the gemm on tiles built from the layout
                          (faster than these tiles from there, slower below) */
    PREFETCH = 4096,   /* Q6_K: bytes ahead of the row being read that are prefetched (as its matvec) */
};

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#include "../lk_x86_avx512.h"

INLINE __m128i load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }


/* ================================ Q4_0 ================================ */

/* Per token and Q8_0 block: dx (the scale as float) and 8·Σx (the nibbles' offset), as x86/q4_0.c. */
INLINE void q4_0_terms(const uint8_t *x, int64_t nb, float *dx, int32_t *xs8) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = x + (size_t)b * sizeof(block_q8_0);
        dx[b] = h2f(lk_load_u16(blk));
        xs8[b] = hsum_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), _mm256_loadu_si256((const __m256i *)(blk + 2))));
    }
}

/* Block b of a 16-row tile, rows in lanes: q[k] lane r = dword k of row r's nibbles (elements 4k..4k+3
 * low, 16 + 4k.. high), d lane r = row r's scale. Rows one after another: row r at w + o[r] (vo the same as
 * a vector), the 16 arrays transposed in registers and the scales gathered. */
INLINE void q4_0_block_rows(const uint8_t *w, const int32_t *o, __m512i vo, size_t ob, __m512i *q, __m512 *d) {
    /* z[j] chunk c = quants of row 4c + j; the 4 × 4 dword transpose of each chunk gives q[k] */
    __m512i z[4];
    for (int j = 0; j < 4; j++) {
        __m512i t = _mm512_castsi128_si512(load128(w + o[j] + ob + 2));
        t = _mm512_inserti32x4(t, load128(w + o[4 + j] + ob + 2), 1);
        t = _mm512_inserti32x4(t, load128(w + o[8 + j] + ob + 2), 2);
        z[j] = _mm512_inserti32x4(t, load128(w + o[12 + j] + ob + 2), 3);
    }
    const __m512i a0 = _mm512_unpacklo_epi32(z[0], z[1]), a1 = _mm512_unpackhi_epi32(z[0], z[1]);
    const __m512i a2 = _mm512_unpacklo_epi32(z[2], z[3]), a3 = _mm512_unpackhi_epi32(z[2], z[3]);
    q[0] = _mm512_unpacklo_epi64(a0, a2), q[1] = _mm512_unpackhi_epi64(a0, a2);
    q[2] = _mm512_unpacklo_epi64(a1, a3), q[3] = _mm512_unpackhi_epi64(a1, a3);
    /* the 16 scales: dwords gathered at the block starts, their low halves */
    *d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_i32gather_epi32(vo, (const void *)(w + ob), 1)));
}

/* Block b of the next 16-row tile of the 8-row layout (groups n0, n1), prefetched while one works: its
 * `lines` cache lines of vectors per group, and every 4th block the line holding 4 blocks' scales. */
INLINE void rows8_prefetch_next(const uint8_t *n0, const uint8_t *n1, int64_t nb, int64_t b, size_t qb, int lines) {
    for (int k = 0; k < lines; k++) {
        lk_prefetch_weights(n0 + lk_rows8_quants(b, qb) + 64 * k);
        lk_prefetch_weights(n1 + lk_rows8_quants(b, qb) + 64 * k);
    }
    if (b % 4 == 0) {
        lk_prefetch_weights(n0 + lk_rows8_scales(nb, b, qb));
        lk_prefetch_weights(n1 + lk_rows8_scales(nb, b, qb));
    }
}

/* NT tokens (row t at x + t·xs, terms at dx/xs8 + t·nb) × 16 rows → y[t·ys + 0..nr). Rows: PACKED = 0 row r
 * at w + o[r] (rows past the last repeat it, o in lane order, vo the same as a vector), `next` the next
 * tile's first row; PACKED = 1 the groups w and w1 of the LK_ROWS8 layout, `next` and next1 the next tile's. */
INLINE void q4_0_tile(const uint8_t *w, const int32_t *o, __m512i vo, const uint8_t *w1, int64_t nb, const uint8_t *x, size_t xs,
                      const float *dx, const int32_t *xs8, float *y, int64_t ys, int nr, const uint8_t *next,
                      const uint8_t *next1, const int PACKED, const int NT) {
    __m512 acc[PASS];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const size_t ob = (size_t)b * sizeof(block_q4_0);
        __m512i q[4], v[8];
        __m512 d;
        if (PACKED) { /* two groups' vectors are q[k]'s halves as they lie in memory */
            rows8_prefetch_next(next, next1, nb, b, QK / 2, 2);
            for (int k = 0; k < 4; k++) q[k] = lk_rows8_pair(w, w1, lk_rows8_quants(b, QK / 2) + 32 * (size_t)k);
            d = lk_rows8_pair_scales(w, w1, lk_rows8_scales(nb, b, QK / 2));
        } else {
            for (int k = 0; k < 5; k++) lk_prefetch_weights(next + 16 * ob + 64 * k); /* 16 blocks: 288 bytes */
            q4_0_block_rows(w, o, vo, ob, q, &d);
        }
        for (int k = 0; k < 4; k++) {
            v[k] = _mm512_and_si512(q[k], _mm512_set1_epi8(15));
            v[4 + k] = _mm512_and_si512(_mm512_srli_epi16(q[k], 4), _mm512_set1_epi8(15));
        }
        for (int t = 0; t < NT; t++) {
            const uint8_t *xq = x + (size_t)t * xs + (size_t)b * sizeof(block_q8_0) + 2;
            __m512i is0 = _mm512_set1_epi32(-xs8[t * nb + b]), is1 = _mm512_setzero_si512();
            for (int g = 0; g < 8; g += 2) {
                is0 = _mm512_dpbusd_epi32(is0, v[g], _mm512_set1_epi32(lk_load_i32(xq + 4 * g)));
                is1 = _mm512_dpbusd_epi32(is1, v[g + 1], _mm512_set1_epi32(lk_load_i32(xq + 4 * g + 4)));
            }
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(is0, is1)), _mm512_mul_ps(d, _mm512_set1_ps(dx[t * nb + b])), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + t * ys, (__mmask16)((1u << nr) - 1), acc[t]);
}

/* Row layout (PACKED = 0) or LK_ROWS8 (PACKED = 1, rows in whole groups). */
INLINE int few_q4_0_layout(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                           int64_t ys, int64_t row_begin, int64_t row_end, const int PACKED) {
    const int64_t nb = cols / QK;
    if (n_tokens > LK_FEW_MAX_TOKENS || (uint64_t)ws * 16 > (uint64_t)INT32_MAX) return 0;
    const uint8_t *x = vx;
    float *dx = lk_scratch((size_t)n_tokens * (size_t)nb * (sizeof(float) + sizeof(int32_t)));
    if (!dx) return 0;
    int32_t *xs8 = (int32_t *)(dx + n_tokens * nb);
    for (int64_t t = 0; t < n_tokens; t++) q4_0_terms(x + (size_t)t * xs, nb, dx + t * nb, xs8 + t * nb);
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t r0 = row_begin; r0 < row_end; r0 += 16) {
        const int nr = row_end - r0 < 16 ? (int)(row_end - r0) : 16;
        const uint8_t *w = (const uint8_t *)vw + (size_t)r0 * ws;
        const __m512i vo = _mm512_mullo_epi32(_mm512_min_epi32(lanes, _mm512_set1_epi32(nr - 1)), _mm512_set1_epi32((int)ws));
        int32_t o[16];
        _mm512_storeu_si512((void *)o, vo);
        /* packed: an 8-row tile reads its group twice; the next tile's groups are prefetched (past the last
         * row: the next matrix's first bytes, or nothing mapped, which prefetch ignores) */
        const uint8_t *w1 = nr > 8 ? w + 8 * ws : w, *next = w + 16 * ws, *next1 = next + 8 * ws;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += PASS) {
            const int nt = n_tokens - t0 < PASS ? (int)(n_tokens - t0) : PASS;
            LK_PASS8(nt, q4_0_tile, w, o, vo, w1, nb, x + (size_t)t0 * xs, xs, dx + t0 * nb, xs8 + t0 * nb,
                          y + t0 * ys + r0, ys, nr, next, next1, PACKED)
        }
    }
    return 1;
}

static int few_q4_0(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    return few_q4_0_layout(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end, 0);
}

/* The LK_ROWS8 entry: the 16-row tiles above up to LK_FEW_MAX_TOKENS tokens (one token too: from DRAM the
 * packed tiles read faster than the row layout's transposes and the AVX2 group pairs), then the VNNI gemm on tiles built from the layout; the same bits as the row layout's kernels. */
static int rows8_q4_0(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens <= LK_FEW_MAX_TOKENS) return few_q4_0_layout(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end, 1);
    return lk_gemm_q4_0_rows8_avx512(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end);
}

/* ================================ Q8_0 ================================ */

/* Per token and block: dx and −128·Σx (the weights enter vpdpbusd as w + 128, unsigned). */
INLINE void q8_0_terms(const uint8_t *x, int64_t nb, float *dx, int32_t *off) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = x + (size_t)b * sizeof(block_q8_0);
        dx[b] = h2f(lk_load_u16(blk));
        off[b] = -128 * hsum_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)(blk + 2))));
    }
}

/* NT tokens (row t at x + t·xs, terms at dx/off + t·nb) × the 16 rows of groups g0 and g1 of the 8-row layout
 * (g1 = g0 for an 8-row tile) → y[t·ys + 0..nr). Lane r: row r's block sum isum_b, exact, then
 * acc = fma(dw·dx, float(isum_b), acc) as x86/avx2/q8_0.c. `next`, next1: the next tile's groups, prefetched. */
INLINE void q8_0_tile(const uint8_t *g0, const uint8_t *g1, int64_t nb, const uint8_t *x, size_t xs, const float *dx,
                      const int32_t *off, float *y, int64_t ys, int nr, const uint8_t *next, const uint8_t *next1, const int NT) {
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512 acc[PASS];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        rows8_prefetch_next(next, next1, nb, b, QK, 4);
        __m512i u[8]; /* lane r of u[k]: bytes 4k..4k+3 of row r, + 128 */
        for (int k = 0; k < 8; k++) u[k] = _mm512_xor_si512(lk_rows8_pair(g0, g1, lk_rows8_quants(b, QK) + 32 * (size_t)k), bias);
        const __m512 d = lk_rows8_pair_scales(g0, g1, lk_rows8_scales(nb, b, QK));
        for (int t = 0; t < NT; t++) {
            const uint8_t *xq = x + (size_t)t * xs + (size_t)b * sizeof(block_q8_0) + 2;
            __m512i is0 = _mm512_set1_epi32(off[t * nb + b]), is1 = _mm512_setzero_si512();
            for (int k = 0; k < 8; k += 2) {
                is0 = _mm512_dpbusd_epi32(is0, u[k], _mm512_set1_epi32(lk_load_i32(xq + 4 * k)));
                is1 = _mm512_dpbusd_epi32(is1, u[k + 1], _mm512_set1_epi32(lk_load_i32(xq + 4 * k + 4)));
            }
            acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(dx[t * nb + b])), _mm512_cvtepi32_ps(_mm512_add_epi32(is0, is1)), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + t * ys, (__mmask16)((1u << nr) - 1), acc[t]);
}

/* The LK_ROWS8 entry, every token count: below Q8_GEMM_MIN chunks of Q8_CHUNK tokens (their terms in the
 * thread's scratch, their activations in L2), each over the 16-row tiles in passes of PASS tokens, a tile
 * staying in L1/L2 from one pass to the next, with no gemm tile to build (the layout's vectors are the tiles);
 * from there the gemm, whose tiles built once per chunk take two tiles and a few blocks per pass. Same bits as
 * x86/avx2/q8_0.c's kernels (AVX2 table, and this table's row layout). */
static int rows8_q8_0(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens >= Q8_GEMM_MIN) return lk_gemm_q8_0_rows8_avx512(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end);
    const int64_t nb = cols / QK;
    const int64_t chunk = n_tokens < Q8_CHUNK ? n_tokens : Q8_CHUNK;
    const uint8_t *x = vx;
    float *dx = lk_scratch((size_t)chunk * (size_t)nb * (sizeof(float) + sizeof(int32_t)));
    if (!dx) return 0;
    int32_t *off = (int32_t *)(dx + chunk * nb);
    for (int64_t c0 = 0; c0 < n_tokens; c0 += chunk) {
        const int64_t nc = n_tokens - c0 < chunk ? n_tokens - c0 : chunk;
        const uint8_t *xc = x + (size_t)c0 * xs;
        for (int64_t t = 0; t < nc; t++) q8_0_terms(xc + (size_t)t * xs, nb, dx + t * nb, off + t * nb);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += 16) {
            const int nr = row_end - r0 < 16 ? (int)(row_end - r0) : 16;
            const uint8_t *g0 = (const uint8_t *)vw + (size_t)r0 * ws, *g1 = nr > 8 ? g0 + 8 * ws : g0;
            const uint8_t *next = g0 + 16 * ws, *next1 = next + 8 * ws;
            for (int64_t t0 = 0; t0 < nc; t0 += PASS) {
                const int nt = nc - t0 < PASS ? (int)(nc - t0) : PASS;
                LK_PASS8(nt, q8_0_tile, g0, g1, nb, xc + (size_t)t0 * xs, xs, dx + t0 * nb, off + t0 * nb,
                              y + (c0 + t0) * ys + r0, ys, nr, next, next1)
            }
        }
    }
    return 1;
}

/* ================================ Q6_K ================================ */

static const int32_t q6_idx[4][16] __attribute__((aligned(64))) = {
    {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, {4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7},
    {8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11}, {12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15}};

/* One row (nb blocks) × NT tokens (row t at x + t·xs) → y[t·ys]. */
INLINE void q6_K_row(const block_q6_K *w, int64_t nb, const uint8_t *x, size_t xs, float *y, int64_t ys, const int NT) {
    const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    const __m512i sh_lo = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
    const __m512i sh_hi = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(6));
    __m512 acc[PASS];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const block_q6_K *b = w + i;
        for (size_t o = 0; o < sizeof(block_q6_K); o += 64) lk_prefetch_weights((const char *)b + PREFETCH + o);
        const __m256i sc16 = _mm256_cvtepi8_epi16(load128(b->scales));
        const __m512i scz = _mm512_cvtepu16_epi32(sc16); /* sc_g in the low s16 of lane g, 0 in the high one */
        const __m512i scm32 = _mm512_zextsi256_si512(_mm256_mullo_epi16(sc16, _mm256_set1_epi16(-32))); /* |.| <= 4096 */
        __m512i q[4], s[4];
        for (int h = 0; h < 2; h++) {
            const __m512i L = _mm512_loadu_si512((const void *)(b->ql + 64 * h));
            const __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b->qh + 32 * h)));
            q[2 * h] = _mm512_or_si512(_mm512_and_si512(L, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, sh_lo), m3), 4));
            q[2 * h + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m4),
                                           _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, sh_hi), m3), 4));
            s[2 * h] = _mm512_permutexvar_epi32(_mm512_load_si512((const void *)q6_idx[2 * h]), scz);
            s[2 * h + 1] = _mm512_permutexvar_epi32(_mm512_load_si512((const void *)q6_idx[2 * h + 1]), scz);
        }
        const float d = h2f(b->d);
        for (int t = 0; t < NT; t++) {
            const block_q8_K *xb = (const block_q8_K *)(x + (size_t)t * xs) + i;
            __m512i sumi = _mm512_setzero_si512();
            for (int h = 0; h < 2; h++) {
                const __m512i plo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[2 * h], _mm512_loadu_si512((const void *)(xb->qs + 128 * h)));
                const __m512i phi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q[2 * h + 1], _mm512_loadu_si512((const void *)(xb->qs + 128 * h + 64)));
                sumi = _mm512_dpwssd_epi32(sumi, plo, s[2 * h]);
                sumi = _mm512_dpwssd_epi32(sumi, phi, s[2 * h + 1]);
            }
            /* lanes 0-7: −32·(sc·bsum of sub-blocks 2k, 2k + 1), the one-token kernel's integer in one vpdpwssd */
            sumi = _mm512_dpwssd_epi32(sumi, scm32, _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)xb->bsums)));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(d * xb->d), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) y[t * ys] = _mm512_reduce_add_ps(acc[t]);
}

static int few_q6_K(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK_K;
    const uint8_t *x = vx;
    for (int64_t r = row_begin; r < row_end; r++) {
        const block_q6_K *w = (const block_q6_K *)((const uint8_t *)vw + (size_t)r * ws);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += PASS) {
            const int nt = n_tokens - t0 < PASS ? (int)(n_tokens - t0) : PASS;
            LK_PASS8(nt, q6_K_row, w, nb, x + (size_t)t0 * xs, xs, y + t0 * ys + r, ys)
        }
    }
    return 1;
}

#pragma clang attribute pop

LK_KERNELS(lk_avx512_fewtokens,
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_0, few_q4_0),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_0, rows8_q4_0),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q8_0, rows8_q8_0),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q6_K, few_q6_K));

#else
LK_NO_KERNELS(lk_avx512_fewtokens);
#endif

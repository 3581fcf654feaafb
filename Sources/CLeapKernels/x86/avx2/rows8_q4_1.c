/* AVX2 (+FMA, F16C) Q4_1 × Q8_1 on weights in the 8-row layout (LK_ROWS8, packed at load): the AVX2 table's
 * rows8 entry for Q4_1, every token count. The design of Q4_0's tile kernels (x86/avx2/fewtokens.c): the 8
 * rows of a group are the 8 lanes, vector k of block b holding bytes 4k..4k+3 of each row's 16 nibble bytes
 * (nibbles of elements 4k..4k+3 low, 16 + 4k.. high), and each group of 4 activation bytes is broadcast into
 * one vpmaddubsw per token. Q4_1's nibbles are unsigned 0..15 and go into vpmaddubsw's unsigned operand as
 * they are (no offset); the min enters per block as m_w · s_x, s_x = dx · Σ x of the Q8_1 block.
 *
 * The order, one for every token count and row range (so a token multiplied with others, or by another
 * thread's share of the rows, gets bit for bit what it gets alone): per (row, token) one float chain over the
 * blocks,
 *
 *   acc = fma(float(isum_b), dw·dx, fma(m_w, s_x, acc))   b = 0, 1, ..  (acc from 0), y = acc
 *
 * isum_b = Σ q·x over the block, an exact integer: the 8 vpmaddubsw results of a block add up in s16
 * (8 · 2·15·128 = 30720 fits) before one vpmaddwd. This is not the row layout's order (x86/avx2/decode.c,
 * ggml's: 8 float lanes per row and a separate m·s sum), whose results it matches within float rounding.
 *
 *   one token      groups in pairs (g, g + gh): two sequential streams per thread, each prefetched
 *                  PAIR_AHEAD bytes ahead (its quant vectors and its scales and mins);
 *   2+ tokens      per group, passes of up to PASS tokens with the pass's accumulators in registers, each
 *                  block's vectors unpacked once per pass; a chunk of CHUNK tokens' terms (dx, s_x as
 *                  floats) is prepared per call, the group's bytes stay in L1 over the chunk's passes and the
 *                  next group's are prefetched while the first pass works. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

enum {
    PASS = 4,          /* tokens per pass: 4 s16 sums + 4 accumulators */
    CHUNK = 64,        /* tokens whose terms are prepared at once (their activations stay in L2 over the groups) */
    PAIR_AHEAD = 2048, /* one token: bytes prefetched ahead in each of the two streams' quant vectors */
    QB = QK / 2,       /* quant bytes of a block per row */
};

#pragma clang attribute push(__attribute__((target(LK_AVX2_TARGET))), apply_to = function)
#include "../lk_x86_avx2.h"

INLINE __m128i load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Per token and Q8_1 block: dx and s_x as floats. */
INLINE void q4_1_terms(const uint8_t *x, int64_t nb, float *dx, float *sx) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = x + (size_t)b * sizeof(block_q8_1);
        dx[b] = h2f(lk_load_u16(blk));
        sx[b] = h2f(lk_load_u16(blk + 2));
    }
}

/* The 8 rows' s16 sums of block b (its vectors at blk) × one token's Q8_1 quants xq: vpmaddubsw per group
 * of 4, in the order 0, 4, 1, 5, .. (exact in any order). */
INLINE __m256i block_s16(const uint8_t *blk, const uint8_t *xq) {
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256i s16 = _mm256_setzero_si256();
    for (int i = 0; i < 8; i++) {
        const int g = (i >> 1) + 4 * (i & 1);
        const __m256i q = load256(blk + 32 * (g & 3));
        const __m256i v = g < 4 ? _mm256_and_si256(q, m4) : _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        const __m256i p = _mm256_maddubs_epi16(v, _mm256_set1_epi32(lk_load_i32(xq + 4 * g)));
        s16 = i ? _mm256_add_epi16(s16, p) : p;
    }
    return s16;
}

/* One block's step of the chain (the order above) */
INLINE __m256 chain_step(__m256 acc, __m256i s16, __m256 d, __m256 m, float dx, float sx) {
    const __m256i isum = _mm256_madd_epi16(s16, _mm256_set1_epi16(1));
    acc = _mm256_fmadd_ps(m, _mm256_set1_ps(sx), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc);
}

/* NT tokens (Q8_1 row t at x + t·xs, terms at dx/sx + t·nb) × the group at w → y[t·ys + 0..8). `next`: the
 * next group, whose bytes are prefetched. */
INLINE void q4_1_tile(const uint8_t *w, int64_t nb, const uint8_t *x, size_t xs, const float *dx, const float *sx,
                      float *y, int64_t ys, const uint8_t *next, const int NT) {
    __m256 acc[PASS];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + lk_rows8_quants(b, QB), *heads = w + lk_rows8_scales_mins(nb, b, QB);
        for (int k = 0; k < 2; k++) lk_prefetch_weights(next + lk_rows8_quants(b, QB) + 64 * k);
        lk_prefetch_weights(next + lk_rows8_scales_mins(nb, b, QB));
        __m256i s16[PASS];
        /* the block_s16 loop with the tokens inside: each vector unpacked once for the pass */
        const __m256i m4 = _mm256_set1_epi8(15);
        for (int i = 0; i < 8; i++) {
            const int g = (i >> 1) + 4 * (i & 1);
            const __m256i q = load256(blk + 32 * (g & 3));
            const __m256i v = g < 4 ? _mm256_and_si256(q, m4) : _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            for (int t = 0; t < NT; t++) {
                const uint8_t *xq = x + (size_t)t * xs + (size_t)b * sizeof(block_q8_1) + 4 + 4 * g;
                const __m256i p = _mm256_maddubs_epi16(v, _mm256_set1_epi32(lk_load_i32(xq)));
                s16[t] = i ? _mm256_add_epi16(s16[t], p) : p;
            }
        }
        const __m256 d = _mm256_cvtph_ps(load128(heads)), m = _mm256_cvtph_ps(load128(heads + 16));
        for (int t = 0; t < NT; t++) acc[t] = chain_step(acc[t], s16[t], d, m, dx[t * nb + b], sx[t * nb + b]);
    }
    for (int t = 0; t < NT; t++) _mm256_storeu_ps(y + t * ys, acc[t]);
}

/* One token × groups at w and w + gap: two sequential streams, each group in q4_1_tile's order. */
INLINE void q4_1_group_pair(const uint8_t *w, size_t gap, int64_t nb, const uint8_t *x, const float *dx, const float *sx,
                            float *y0, float *y1) {
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xq = x + (size_t)b * sizeof(block_q8_1) + 4;
        for (int j = 0; j < 2; j++) {
            const uint8_t *grp = w + (size_t)j * gap, *blk = grp + lk_rows8_quants(b, QB), *heads = grp + lk_rows8_scales_mins(nb, b, QB);
            for (int k = 0; k < 2; k++) lk_prefetch_weights(blk + PAIR_AHEAD + 64 * k);
            lk_prefetch_weights(heads + PAIR_AHEAD / 4); /* 32 head bytes per 128 quant bytes */
            const __m256i s16 = block_s16(blk, xq);
            acc[j] = chain_step(acc[j], s16, _mm256_cvtph_ps(load128(heads)), _mm256_cvtph_ps(load128(heads + 16)), dx[b], sx[b]);
        }
    }
    _mm256_storeu_ps(y0, acc[0]);
    _mm256_storeu_ps(y1, acc[1]);
}

/* The LK_ROWS8 entry (rows in whole groups of 8), every token count. */
static int rows8_q4_1(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK;
    const int64_t chunk = n_tokens < CHUNK ? n_tokens : CHUNK;
    float *dx = lk_scratch((size_t)chunk * (size_t)nb * 2 * sizeof(float)); /* [chunk, nb] */
    if (!dx) return 0;
    float *sx = dx + chunk * nb; /* [chunk, nb] */
    const uint8_t *x = vx;
    if (n_tokens == 1) { /* groups in pairs (g, g + gh); an odd last one goes through the tile */
        q4_1_terms(x, nb, dx, sx);
        const int64_t gh = (row_end - row_begin) / 16;
        for (int64_t i = 0; i < gh; i++) {
            const int64_t r = row_begin + 8 * i;
            q4_1_group_pair((const uint8_t *)vw + (size_t)r * ws, (size_t)gh * 8 * ws, nb, x, dx, sx, y + r, y + r + 8 * gh);
        }
        for (int64_t r0 = row_begin + 16 * gh; r0 < row_end; r0 += 8) {
            const uint8_t *w = (const uint8_t *)vw + (size_t)r0 * ws;
            q4_1_tile(w, nb, x, xs, dx, sx, y + r0, ys, w + 8 * ws, 1);
        }
        return 1;
    }
    for (int64_t c0 = 0; c0 < n_tokens; c0 += chunk) {
        const int64_t nc = n_tokens - c0 < chunk ? n_tokens - c0 : chunk;
        const uint8_t *xc = x + (size_t)c0 * xs;
        for (int64_t t = 0; t < nc; t++) q4_1_terms(xc + (size_t)t * xs, nb, dx + t * nb, sx + t * nb);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += 8) {
            const uint8_t *w = (const uint8_t *)vw + (size_t)r0 * ws;
            for (int64_t t0 = 0; t0 < nc; t0 += PASS) {
                const int nt = nc - t0 < PASS ? (int)(nc - t0) : PASS;
                /* the next group is prefetched by the first pass; later passes find this one in L1 */
                const uint8_t *next = t0 ? w : w + 8 * ws;
                LK_PASS4(nt, q4_1_tile, w, nb, xc + (size_t)t0 * xs, xs, dx + t0 * nb, sx + t0 * nb, y + (c0 + t0) * ys + r0, ys, next)
            }
        }
    }
    return 1;
}

#pragma clang attribute pop

LK_KERNELS(lk_avx2_rows8_q4_1,
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_1, rows8_q4_1));

#else
LK_NO_KERNELS(lk_avx2_rows8_q4_1);
#endif

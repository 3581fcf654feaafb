/* AVX2 (+FMA, F16C) Q4_1 × Q8_1, Q5_0 × Q8_0 and Q5_1 × Q8_1 on weights in the 8-row layout (LK_ROWS8, packed
 * at load): the AVX2 table's rows8 entries for these types, every token count. The design of Q4_0's tile
 * kernels (x86/avx2/fewtokens.c): the 8 rows of a group are the 8 lanes, nibble vector k of block b holding
 * bytes 4k..4k+3 of each row's 16 nibble bytes (nibbles of elements 4k..4k+3 low, 16 + 4k.. high), Q5's
 * fifth-bit vector before them holding each row's 32 bits (qh), and each group of 4 activation bytes is
 * broadcast into one vpmaddubsw per token. The weights are unsigned (nibbles 0..15, Q5: + 16 for the fifth
 * bit) and go into vpmaddubsw's unsigned operand as they are; Q4_1 / Q5_1's min enters per block as
 * m_w · s_x (s_x = dx · Σ x of the Q8_1 block), Q5_0's offset as −16·Σ x in the block's integer.
 *
 * The order, one for every token count and row range (so a token multiplied with others, or by another
 * thread's share of the rows, gets bit for bit what it gets alone): per (row, token) one float chain over the
 * blocks,
 *
 *   Q4_1, Q5_1  acc = fma(float(isum_b), dw·dx, fma(m_w, s_x, acc))   b = 0, 1, ..  (acc from 0), y = acc
 *   Q5_0        acc = fma(float(isum_b − 16·Σx), dw·dx, acc)
 *
 * isum_b = Σ q·x over the block, an exact integer: the vpmaddubsw results add up in s16 before a vpmaddwd,
 * all 8 groups of a block for Q4_1 (8 · 2·15·128 = 30720 fits), 4 at a time for Q5 (4 · 2·31·128 = 31744).
 * This is not the row layout's order (x86/avx2/decode.c, ggml's: 8 float lanes per row and a separate m·s
 * sum), whose results it matches within float rounding.
 *
 *   one token      groups in pairs (g, g + gh): two sequential streams per thread, each prefetched
 *                  PAIR_AHEAD bytes ahead (its quant vectors and its scales and mins);
 *   2+ tokens      per group, passes of up to PASS tokens with the pass's accumulators in registers, each
 *                  block's vectors unpacked once per pass; a chunk of CHUNK tokens' terms (dx, and s_x or
 *                  16·Σx) is prepared per call, the group's bytes stay in L1 over the chunk's passes and the
 *                  next group's are prefetched while the first pass works. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

enum {
    PASS = 4,          /* tokens per pass: 4 s16 sums + 4 accumulators */
    CHUNK = 64,        /* tokens whose terms are prepared at once (their activations stay in L2 over the groups) */
    PAIR_AHEAD = 2048, /* one token: bytes prefetched ahead in each of the two streams' quant vectors */
};

#pragma clang attribute push(__attribute__((target(LK_AVX2_TARGET))), apply_to = function)
#include "../lk_x86_avx2.h"

INLINE __m128i load128(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* Quant bytes of a row's block in the layout (Q5: qh then the nibbles), and where its vectors and heads lie */
INLINE size_t quant_bytes(int type) { return type == LK_TYPE_Q4_1 ? QK / 2 : 4 + QK / 2; }
INLINE size_t heads_at(int type, int64_t nb, int64_t b) {
    return lk_has_min(type) ? lk_rows8_scales_mins(nb, b, quant_bytes(type)) : lk_rows8_scales(nb, b, quant_bytes(type));
}
/* Activation block bytes and the offset of its quants: Q8_1 (d, s) or Q8_0 (d) */
INLINE size_t x_block(int type) { return lk_has_min(type) ? sizeof(block_q8_1) : sizeof(block_q8_0); }
INLINE size_t x_quants(int type) { return lk_has_min(type) ? 4 : 2; }

/* Per token and activation block: dx as a float, and (min types) s_x as a float in term[b], or (Q5_0)
 * 16·Σx as an integer in iterm[b]. */
INLINE void x_terms(int type, const uint8_t *x, int64_t nb, float *dx, float *term, int32_t *iterm) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = x + (size_t)b * x_block(type);
        dx[b] = h2f(lk_load_u16(blk));
        if (lk_has_min(type)) term[b] = h2f(lk_load_u16(blk + 2));
        else {
            const __m256i v = load256(blk + 2);
            iterm[b] = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(16), v), _mm256_set1_epi16(1)));
        }
    }
}

/* Group g's 32 unsigned weights of the 8 rows (byte i of lane r: element 4g + i of row r) from the block's
 * vectors at blk. Q5: bit 4g + i of the row's qh, selected by a byte shuffle and a bit mask, adds 16. */
INLINE __m256i group_weights(int type, const uint8_t *blk, int g) {
    const __m256i m4 = _mm256_set1_epi8(15);
    const uint8_t *nib = type == LK_TYPE_Q4_1 ? blk : blk + 32;
    const __m256i q = load256(nib + 32 * (g & 3));
    const __m256i v = g < 4 ? _mm256_and_si256(q, m4) : _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
    if (type == LK_TYPE_Q4_1) return v;
    const char j = (char)(g >> 1); /* the qh byte of elements 4g..4g+3, in each of its 4 bytes */
    const __m256i sel = _mm256_setr_epi8(j, j, j, j, 4 + j, 4 + j, 4 + j, 4 + j, 8 + j, 8 + j, 8 + j, 8 + j, 12 + j, 12 + j, 12 + j, 12 + j,
                                         j, j, j, j, 4 + j, 4 + j, 4 + j, 4 + j, 8 + j, 8 + j, 8 + j, 8 + j, 12 + j, 12 + j, 12 + j, 12 + j);
    const __m256i bit = _mm256_set1_epi32(g & 1 ? (int)0x80402010 : 0x08040201); /* bit 4(g & 1) + i in byte i */
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(load256(blk), sel), bit), bit);
    return _mm256_or_si256(v, _mm256_and_si256(set, _mm256_set1_epi8(16)));
}

/* The groups in the order 0, 4, 1, 5, ..: a nibble vector is done with after its two groups. Q5 widens
 * after 4 groups (their s16 sums would overflow beyond). */
INLINE int group_at(int i) { return (i >> 1) + 4 * (i & 1); }

/* One block's step of the chain (the order above); s16[0], s16[1]: the s16 sums (Q5: of the two halves). */
INLINE __m256 chain_step(int type, __m256 acc, const __m256i *s16, __m256 d, __m256 m, float dx, float term, int32_t iterm) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i isum = _mm256_madd_epi16(s16[0], ones);
    if (type != LK_TYPE_Q4_1) isum = _mm256_add_epi32(isum, _mm256_madd_epi16(s16[1], ones));
    if (type == LK_TYPE_Q5_0) isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(iterm));
    else acc = _mm256_fmadd_ps(m, _mm256_set1_ps(term), acc);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(dx)), acc);
}

INLINE __m256 scales_of(int type, const uint8_t *heads) { (void)type; return _mm256_cvtph_ps(load128(heads)); }
INLINE __m256 mins_of(int type, const uint8_t *heads) {
    return lk_has_min(type) ? _mm256_cvtph_ps(load128(heads + 16)) : _mm256_setzero_ps();
}

/* NT tokens (activation row t at x + t·xs, terms at dx/term/iterm + t·nb) × the group at w → y[t·ys + 0..8).
 * `next`: the next group, whose bytes are prefetched. */
INLINE void tile(int type, const uint8_t *w, int64_t nb, const uint8_t *x, size_t xs, const float *dx, const float *term,
                 const int32_t *iterm, float *y, int64_t ys, const uint8_t *next, const int NT) {
    const size_t qb = quant_bytes(type);
    __m256 acc[PASS];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + lk_rows8_quants(b, qb), *heads = w + heads_at(type, nb, b);
        for (size_t k = 0; k < 8 * qb; k += 64) lk_prefetch_weights(next + lk_rows8_quants(b, qb) + k);
        lk_prefetch_weights(next + heads_at(type, nb, b));
        __m256i s16[PASS][2];
#pragma clang loop unroll(full) /* the groups' masks (group_weights) are then constants */
        for (int i = 0; i < 8; i++) {
            const int g = group_at(i), half = type == LK_TYPE_Q4_1 ? 0 : i >> 2, first = type == LK_TYPE_Q4_1 ? i == 0 : (i & 3) == 0;
            const __m256i v = group_weights(type, blk, g);
            for (int t = 0; t < NT; t++) {
                const uint8_t *xq = x + (size_t)t * xs + (size_t)b * x_block(type) + x_quants(type) + 4 * g;
                const __m256i p = _mm256_maddubs_epi16(v, _mm256_set1_epi32(lk_load_i32(xq)));
                s16[t][half] = first ? p : _mm256_add_epi16(s16[t][half], p);
            }
        }
        const __m256 d = scales_of(type, heads), m = mins_of(type, heads);
        for (int t = 0; t < NT; t++)
            acc[t] = chain_step(type, acc[t], s16[t], d, m, dx[t * nb + b], lk_has_min(type) ? term[t * nb + b] : 0,
                                lk_has_min(type) ? 0 : iterm[t * nb + b]);
    }
    for (int t = 0; t < NT; t++) _mm256_storeu_ps(y + t * ys, acc[t]);
}

/* One token × groups at w and w + gap: two sequential streams, each group in tile's order. */
INLINE void group_pair(int type, const uint8_t *w, size_t gap, int64_t nb, const uint8_t *x, const float *dx, const float *term,
                       const int32_t *iterm, float *y0, float *y1) {
    const size_t qb = quant_bytes(type);
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *xq = x + (size_t)b * x_block(type) + x_quants(type);
        for (int j = 0; j < 2; j++) {
            const uint8_t *grp = w + (size_t)j * gap, *blk = grp + lk_rows8_quants(b, qb), *heads = grp + heads_at(type, nb, b);
            for (size_t k = 0; k < 8 * qb; k += 64) lk_prefetch_weights(blk + PAIR_AHEAD + k);
            lk_prefetch_weights(heads + PAIR_AHEAD * (lk_has_min(type) ? 32 : 16) / (8 * qb));
            __m256i s16[2];
#pragma clang loop unroll(full)
            for (int i = 0; i < 8; i++) {
                const int g = group_at(i), half = type == LK_TYPE_Q4_1 ? 0 : i >> 2, first = type == LK_TYPE_Q4_1 ? i == 0 : (i & 3) == 0;
                const __m256i p = _mm256_maddubs_epi16(group_weights(type, blk, g), _mm256_set1_epi32(lk_load_i32(xq + 4 * g)));
                s16[half] = first ? p : _mm256_add_epi16(s16[half], p);
            }
            acc[j] = chain_step(type, acc[j], s16, scales_of(type, heads), mins_of(type, heads), dx[b],
                                lk_has_min(type) ? term[b] : 0, lk_has_min(type) ? 0 : iterm[b]);
        }
    }
    _mm256_storeu_ps(y0, acc[0]);
    _mm256_storeu_ps(y1, acc[1]);
}

#define TILE_OF(T, NAME)                                                                                      \
    INLINE void NAME(const uint8_t *w, int64_t nb, const uint8_t *x, size_t xs, const float *dx, const float *term, \
                     const int32_t *iterm, float *y, int64_t ys, const uint8_t *next, const int NT) {         \
        tile(T, w, nb, x, xs, dx, term, iterm, y, ys, next, NT);                                              \
    }
TILE_OF(LK_TYPE_Q4_1, tile_q4_1)
TILE_OF(LK_TYPE_Q5_0, tile_q5_0)
TILE_OF(LK_TYPE_Q5_1, tile_q5_1)

/* The LK_ROWS8 entry (rows in whole groups of 8), every token count. */
INLINE int rows8(int type, int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                 int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK;
    const int64_t chunk = n_tokens < CHUNK ? n_tokens : CHUNK;
    float *dx = lk_scratch((size_t)chunk * (size_t)nb * 2 * sizeof(float)); /* [chunk, nb] */
    if (!dx) return 0;
    float *term = dx + chunk * nb;   /* [chunk, nb]: s_x (min types) */
    int32_t *iterm = (int32_t *)term; /* or 16·Σx (Q5_0) */
    const uint8_t *x = vx;
    if (n_tokens == 1) { /* groups in pairs (g, g + gh); an odd last one goes through the tile */
        x_terms(type, x, nb, dx, term, iterm);
        const int64_t gh = (row_end - row_begin) / 16;
        for (int64_t i = 0; i < gh; i++) {
            const int64_t r = row_begin + 8 * i;
            group_pair(type, (const uint8_t *)vw + (size_t)r * ws, (size_t)gh * 8 * ws, nb, x, dx, term, iterm, y + r, y + r + 8 * gh);
        }
        for (int64_t r0 = row_begin + 16 * gh; r0 < row_end; r0 += 8) {
            const uint8_t *w = (const uint8_t *)vw + (size_t)r0 * ws;
            tile(type, w, nb, x, xs, dx, term, iterm, y + r0, ys, w + 8 * ws, 1);
        }
        return 1;
    }
    for (int64_t c0 = 0; c0 < n_tokens; c0 += chunk) {
        const int64_t nc = n_tokens - c0 < chunk ? n_tokens - c0 : chunk;
        const uint8_t *xc = x + (size_t)c0 * xs;
        for (int64_t t = 0; t < nc; t++) x_terms(type, xc + (size_t)t * xs, nb, dx + t * nb, term + t * nb, iterm + t * nb);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += 8) {
            const uint8_t *w = (const uint8_t *)vw + (size_t)r0 * ws;
            for (int64_t t0 = 0; t0 < nc; t0 += PASS) {
                const int nt = nc - t0 < PASS ? (int)(nc - t0) : PASS;
                /* the next group is prefetched by the first pass; later passes find this one in L1 */
                const uint8_t *next = t0 ? w : w + 8 * ws;
                const uint8_t *xt = xc + (size_t)t0 * xs;
                float *yt = y + (c0 + t0) * ys + r0;
                if (type == LK_TYPE_Q4_1) {
                    LK_PASS4(nt, tile_q4_1, w, nb, xt, xs, dx + t0 * nb, term + t0 * nb, iterm + t0 * nb, yt, ys, next)
                } else if (type == LK_TYPE_Q5_0) {
                    LK_PASS4(nt, tile_q5_0, w, nb, xt, xs, dx + t0 * nb, term + t0 * nb, iterm + t0 * nb, yt, ys, next)
                } else {
                    LK_PASS4(nt, tile_q5_1, w, nb, xt, xs, dx + t0 * nb, term + t0 * nb, iterm + t0 * nb, yt, ys, next)
                }
            }
        }
    }
    return 1;
}

LK_GEMM_ENTRY(rows8_q4_1, rows8, LK_TYPE_Q4_1)
LK_GEMM_ENTRY(rows8_q5_0, rows8, LK_TYPE_Q5_0)
LK_GEMM_ENTRY(rows8_q5_1, rows8, LK_TYPE_Q5_1)

#pragma clang attribute pop

LK_KERNELS(lk_avx2_rows8_q4_1_q5,
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_1, rows8_q4_1),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q5_0, rows8_q5_0),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q5_1, rows8_q5_1));

#else
LK_NO_KERNELS(lk_avx2_rows8_q4_1_q5);
#endif

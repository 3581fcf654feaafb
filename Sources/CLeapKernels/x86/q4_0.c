/* Q4_0 × Q8_0 in llama.cpp's order (x86: AVX2 and AVX-512 VNNI): matvec (decode), gemm (prefill) and the
 * one-row dot product, all giving the same bits, so batched prefill equals token-by-token decode. The VNNI
 * gemm's tiles serve Q8_0 weights in the 8-row layout too (the same float chain: x86/avx2/q8_0.c's order).
 *
 * llama.cpp (x86, AVX2 or AVX-512) repacks every Q4_0 matrix whose row count is a multiple of 8 into its
 * q4_0_8x8 layout and multiplies it with ggml_gemv_q4_0_8x8_q8_0 (one token) or ggml_gemm_q4_0_8x8_q8_0
 * (groups of 4 tokens). Both keep one float per (row, token) and add each 32-block in one FMA:
 *
 *   acc = fma(float(isum_b), dw_b · dx_b, acc)   for b = 0, 1, ... (acc from 0), y = acc
 *
 * with isum_b = Σ (q − 8)·x over the block, an exact integer. (ggml_vec_dot_q4_0_q8_0, used for other
 * row counts, keeps 8 lanes per block and adds them at the end: not this order.) Integer sums are exact in
 * any order, so the kernels below are free in how they form isum_b; only the float chain is fixed:
 *
 *   matvec  8 (AVX2) or 16 (VNNI) rows at a time, lanes = rows: per row the block's products (vpmaddubsw of
 *           the unsigned nibbles; VNNI: one vpdpbusd for two blocks), the rows' vectors reduced to one per
 *           block by a shuffle tree, minus 8·Σx (the nibble offset, applied through the activations), the
 *           rows' scales gathered (AVX2: loaded one by one); the next row group is prefetched (see matvec_q4_0);
 *   gemm    a tile of 8 (AVX2) or 16 (AVX-512) rows transposed once per call so that lane r of vector g
 *           holds nibbles 4g..4g+3 of row r; each group of 4 activation bytes is broadcast: vpmaddubsw +
 *           16-bit adds (AVX2; 8 pair sums of at most 2·15·127 fit in s16) or vpdpbusd (VNNI) form the
 *           block sums of all rows of the tile for one token without any horizontal work.
 * The scalar path (generic/scalar.c) keeps ggml's reference order. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdlib.h>

enum {
    MAX_BLOCKS = 1024, /* activation terms of up to 32768 columns live on the stack (8 KB) */
    TOKENS = 128,      /* tokens whose activation terms are prepared at once by the AVX2 gemm kernels (a tile
                          build per 128 tokens) */
};

#pragma clang attribute push(__attribute__((target(LK_AVX2_TARGET))), apply_to = function)
#include "lk_x86_avx2.h"

/* 8 s32 lanes of Σ u·x (4 products each) */
INLINE __m256i dot_u8(__m256i u, __m256i x) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)); }

/* One row: the float chain of the block sums. */
static float dot_q4_0(int64_t n, const void *vw, const void *vx) {
    const block_q4_0 *w = vw;
    const block_q8_0 *x = vx;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / QK; b++) {
        const __m256i xv = _mm256_loadu_si256((const __m256i *)x[b].qs);
        const int32_t isum = hsum_epi32(_mm256_sub_epi32(dot_u8(nibbles_32(w[b].qs), xv), dot_u8(_mm256_set1_epi8(8), xv)));
        acc = __builtin_fmaf((float)isum, h2f(w[b].d) * h2f(x[b].d), acc);
    }
    return acc;
}

/* 32 nibbles at qs → unsigned bytes in element order, from one broadcast load */
INLINE __m256i nibbles_bcast(const uint8_t *qs) {
    const __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    return _mm256_and_si256(_mm256_srlv_epi64(t, _mm256_setr_epi64x(0, 0, 4, 4)), _mm256_set1_epi8(15));
}

/* [Σ of p0, ..., Σ of p7] for 8 vectors of 16 s16 (vpmaddubsw results of at most 2·15·127 each: the sums of
 * 8 per 128-bit half stay within s16), as s32 */
INLINE __m256i sum_8x16(const __m256i *p) {
    const __m256i a = _mm256_hadd_epi16(_mm256_hadd_epi16(p[0], p[1]), _mm256_hadd_epi16(p[2], p[3]));
    const __m256i b = _mm256_hadd_epi16(_mm256_hadd_epi16(p[4], p[5]), _mm256_hadd_epi16(p[6], p[7]));
    const __m256i h = _mm256_hadd_epi16(a, b); /* each 128-bit half: the 8 rows' sums over that half */
    return _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(h)), _mm256_cvtepi16_epi32(_mm256_extracti128_si256(h, 1)));
}

/* 8 rows (row r at w + off[r]) × one token → out[8] */
INLINE void rows_8(const uint8_t *w, __m256i off, int64_t nb, const uint8_t *x, const float *dx, const int32_t *xs8, float *out,
                   const uint8_t *next) {
    int32_t o[8];
    _mm256_storeu_si256((__m256i *)o, off);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const size_t ob = (size_t)b * sizeof(block_q4_0);
        for (int k = 0; k < 3; k++) _mm_prefetch((const char *)next + 8 * ob + 64 * k, _MM_HINT_T0);
        const __m256i xv = _mm256_loadu_si256((const __m256i *)(x + (size_t)b * sizeof(block_q8_0) + 2));
        __m256i p[8];
        for (int r = 0; r < 8; r++) p[r] = _mm256_maddubs_epi16(nibbles_bcast(w + o[r] + ob + 2), xv);
        const __m256i isum = _mm256_sub_epi32(sum_8x16(p), _mm256_set1_epi32(xs8[b]));
        const __m256 d = lk_row_scales8(w, o, ob);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(dx[b])), acc);
    }
    _mm256_storeu_ps(out, acc);
}

/* Rows 0..nrows of one token, 8 at a time; a short last group repeats its last row (not stored). The 8 rows
 * are 8 interleaved streams, too many for the hardware prefetchers to follow from DRAM (much slower than
 * one stream): each group prefetches the next group's bytes in order while it works (`next`). */
static int matvec_q4_0(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {
    const int64_t nb = n / QK;
    if (nb > MAX_BLOCKS || (uint64_t)ws * 8 > (uint64_t)INT32_MAX) return 0;
    float dx[MAX_BLOCKS];
    int32_t xs8[MAX_BLOCKS];
    lk_q4_0_terms(x, nb, dx, xs8);
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (int64_t r0 = 0; r0 < nrows; r0 += 8) {
        const int64_t nr = nrows - r0 < 8 ? nrows - r0 : 8;
        const __m256i off = _mm256_mullo_epi32(_mm256_min_epi32(lanes, _mm256_set1_epi32((int)nr - 1)), _mm256_set1_epi32((int)ws));
        float out[8];
        rows_8((const uint8_t *)vw + (size_t)r0 * ws, off, nb, x, dx, xs8, out, (const uint8_t *)vw + (size_t)(r0 + 8) * ws);
        memcpy(y + r0, out, (size_t)nr * sizeof(float));
    }
    return 1;
}

/* ---- gemm: tiles of 8 (AVX2) or 16 (AVX-512) rows ---- */

/* Tile layout per block, TR rows: 8 vectors of TR s32 lanes (lane r of vector g = nibbles 4g..4g+3 of row r),
 * then the TR row scales d as floats: 36·TR bytes, block b at tile + b·bstride. Rows r >= nr are zeros. */
INLINE void build_tile(const uint8_t *w, size_t ws, int64_t nb, int nr, uint8_t *tile, const int TR, size_t bstride) {
    _Alignas(32) uint8_t rows[16 * 32];
    _Alignas(32) float d[16];
    const __m256i idx = _mm256_setr_epi32(0, 32, 64, 96, 128, 160, 192, 224);
    for (int64_t b = 0; b < nb; b++) {
        for (int r = 0; r < TR; r++) {
            const uint8_t *blk = w + (size_t)r * ws + (size_t)b * sizeof(block_q4_0);
            _mm256_store_si256((__m256i *)(rows + 32 * r), r < nr ? nibbles_32(blk + 2) : _mm256_setzero_si256());
            d[r] = r < nr ? h2f(lk_load_u16(blk)) : 0.0f;
        }
        uint8_t *t = tile + (size_t)b * bstride;
        for (int g = 0; g < 8; g++)
            for (int h = 0; h < TR / 8; h++) /* rows 8h..8h+7 */
                _mm256_store_si256((__m256i *)(t + 4 * TR * g + 32 * h), _mm256_i32gather_epi32((const int *)(rows + 256 * h + 4 * g), idx, 1));
        memcpy(t + 32 * TR, d, sizeof(float) * (size_t)TR);
    }
}

/* The same tile (TR = 8) from weights in the LK_ROWS8 layout (w: the group): the
 * vectors are the layout's, unpacked; no gathers. */
INLINE void build_tile_rows8(const uint8_t *w, size_t ws, int64_t nb, int nr, uint8_t *tile, const int TR, size_t bstride) {
    (void)ws, (void)nr, (void)TR;
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + lk_rows8_quants(b, QK / 2);
        uint8_t *t = tile + (size_t)b * bstride;
        for (int k = 0; k < 4; k++) {
            const __m256i q = _mm256_loadu_si256((const __m256i *)(blk + 32 * k));
            _mm256_store_si256((__m256i *)(t + 32 * k), _mm256_and_si256(q, m4));
            _mm256_store_si256((__m256i *)(t + 32 * (k + 4)), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
        }
        _mm256_store_ps((float *)(t + 256), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + lk_rows8_scales(nb, b, QK / 2)))));
    }
}

enum { NT8 = 4 };

/* NT tokens (Q8 row t at x + t·xs, terms at dx + t·nb, xs8 + t·nb) × one 8-row tile → Y[t, 0..nr) at y + t·ys */
INLINE void tile_8_tokens(const uint8_t *tile, int64_t nb, const uint8_t *x, size_t xs, const float *dx, const int32_t *xs8,
                          float *y, int64_t ys, int nr, const int NT) {
    __m256 acc[NT8];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *tb = tile + b * 36 * 8;
        __m256i s16[NT8];
        for (int t = 0; t < NT; t++) s16[t] = _mm256_setzero_si256();
        for (int g = 0; g < 8; g++) {
            const __m256i wv = _mm256_load_si256((const __m256i *)(tb + 32 * g));
            for (int t = 0; t < NT; t++) {
                const uint8_t *xq = x + (size_t)t * xs + (size_t)b * sizeof(block_q8_0) + 2 + 4 * g;
                s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(wv, _mm256_set1_epi32(lk_load_i32(xq))));
            }
        }
        const __m256 d = _mm256_load_ps((const float *)(tb + 256));
        for (int t = 0; t < NT; t++) {
            const __m256i isum = _mm256_sub_epi32(_mm256_madd_epi16(s16[t], _mm256_set1_epi16(1)), _mm256_set1_epi32(xs8[t * nb + b]));
            acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(d, _mm256_set1_ps(dx[t * nb + b])), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) {
        float out[8];
        _mm256_storeu_ps(out, acc[t]);
        memcpy(y + t * ys, out, (size_t)nr * sizeof(float));
    }
}

/* The gemm entry: below 4 tokens one matvec per token (building the tile costs more); else activation terms
 * per chunk of tokens, then per tile of TR rows TOKENS_FN over NT tokens at a time (the remainder one by one). */
#define GEMM_Q4_0(NAME, TR, BUILD_FN, TOKENS_FN, NT, MATVEC_FN)                                                       \
    static int NAME(int64_t cols, const void *w, size_t ws, const void *x, size_t xs, int64_t n_tokens, float *y, \
                    int64_t ys, int64_t row_begin, int64_t row_end) {                                         \
        const int64_t nb = cols / QK;                                                                         \
        if (n_tokens < 4) {                                                                                   \
            int done = 1;                                                                                     \
            for (int64_t t = 0; t < n_tokens && done; t++)                                                    \
                done = MATVEC_FN(cols, (const uint8_t *)w + (size_t)row_begin * ws, ws, (const uint8_t *)x + (size_t)t * xs, \
                                 y + t * ys + row_begin, row_end - row_begin);                               \
            if (done) return 1;                                                                               \
        }                                                                                                     \
        const int64_t chunk = n_tokens < TOKENS ? n_tokens : TOKENS;                                          \
        const size_t tile_bytes = (size_t)nb * 36 * TR;                                                       \
        uint8_t *scratch = lk_scratch(tile_bytes + (size_t)chunk * (size_t)nb * 8); /* the thread's */          \
        if (!scratch) return 0;                                                                               \
        uint8_t *tile = scratch;                                                                              \
        float *dx = (float *)(scratch + tile_bytes);                                                          \
        int32_t *xs8 = (int32_t *)(dx + chunk * nb);                                                          \
        const uint8_t *wb = w, *xb = x;                                                                       \
        for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {                                                    \
            const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;                                 \
            const uint8_t *xc = xb + (size_t)t0 * xs;                                                         \
            for (int64_t t = 0; t < nt; t++) lk_q4_0_terms(xc + (size_t)t * xs, nb, dx + t * nb, xs8 + t * nb); \
            for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {                                            \
                const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;                                  \
                BUILD_FN(wb + (size_t)r0 * ws, ws, nb, nr, tile, TR, 36 * TR);                                \
                /* the next tile's rows go to L2 while this one is used, a share per pass */                  \
                const int64_t next = r0 + TR < row_end ? r0 + TR : row_end;                                   \
                const uint8_t *pf = wb + (size_t)next * ws;                                                   \
                const uint8_t *pf_end = pf + (size_t)(row_end - next < TR ? row_end - next : TR) * ws;        \
                const int64_t passes = nt / NT;                                                               \
                const size_t share = passes ? (size_t)(pf_end - pf) / (size_t)passes + 64 : (size_t)(pf_end - pf); \
                if (!passes) lk_prefetch_l2(pf, pf_end);                                                      \
                int64_t t = 0;                                                                                \
                for (; t + NT <= nt; t += NT) {                                                               \
                    const uint8_t *to = (size_t)(pf_end - pf) < share ? pf_end : pf + share;                  \
                    lk_prefetch_l2(pf, to);                                                                   \
                    pf = to;                                                                                  \
                    TOKENS_FN(tile, nb, xc + (size_t)t * xs, xs, dx + t * nb, xs8 + t * nb, y + (t0 + t) * ys + r0, ys, nr, NT); \
                }                                                                                             \
                for (; t < nt; t++)                                                                           \
                    TOKENS_FN(tile, nb, xc + (size_t)t * xs, xs, dx + t * nb, xs8 + t * nb, y + (t0 + t) * ys + r0, ys, nr, 1); \
            }                                                                                                 \
        }                                                                                                     \
        return 1;                                                                                             \
    }

GEMM_Q4_0(gemm_q4_0, 8, build_tile, tile_8_tokens, NT8, matvec_q4_0)

/* From 4 tokens (callers take fewer to the tile kernels of x86/avx2/fewtokens.c); no matvec reads this layout. */
static int no_matvec(int64_t n, const void *w, size_t ws, const void *x, float *y, int64_t nrows) {
    (void)n, (void)w, (void)ws, (void)x, (void)y, (void)nrows;
    return 0;
}
GEMM_Q4_0(gemm_q4_0_rows8, 8, build_tile_rows8, tile_8_tokens, NT8, no_matvec)

int lk_gemm_q4_0_rows8_avx2(int64_t cols, const void *w, size_t ws, const void *x, size_t xs, int64_t n_tokens, float *y,
                            int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_q4_0_rows8(cols, w, ws, x, xs, n_tokens, y, ys, row_begin, row_end);
}

#pragma clang attribute pop

/* ---- AVX-512 VNNI (not in the AVX-VNNI build) ---- */
#ifndef LK_AVXVNNI

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#include "lk_x86_avx512.h"

/* matvec: 16 rows, two blocks per vpdpbusd */

/* Nibbles of blocks b, b+1 → [lo_b, lo_b+1, hi_b, hi_b+1] (128-bit chunks); the activations are laid out alike */
INLINE __m512i q4_pair(const uint8_t *qs0, const uint8_t *qs1) {
    const __m256i t = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)qs0)),
                                              _mm_loadu_si128((const __m128i *)qs1), 1);
    return _mm512_and_si512(_mm512_inserti64x4(_mm512_castsi256_si512(t), _mm256_srli_epi16(t, 4), 1), _mm512_set1_epi8(15));
}

/* 16 vectors p[r] (chunks: 4 lanes of row r for block b, b+1, b, b+1) → the block sums of the 16 rows for
 * block b (s[0]) and b+1 (s[1]), lanes in the row order row_perm */
INLINE void sum_16x2(const __m512i *p, __m512i *s) {
    __m512i v[8], w[4], z[2];
    for (int r = 0; r < 8; r++) /* [r.c0, r.c1, r+8.c2, r+8.c3] + [r.c2, r.c3, r+8.c0, r+8.c1]: one shuffle, one blend */
        v[r] = _mm512_add_epi32(_mm512_mask_blend_epi64(0xF0, p[r], p[r + 8]),
                                _mm512_shuffle_i64x2(p[r], p[r + 8], _MM_SHUFFLE(1, 0, 3, 2)));
    for (int r = 0; r < 4; r++)
        w[r] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * r], v[2 * r + 1]), _mm512_unpackhi_epi32(v[2 * r], v[2 * r + 1]));
    for (int r = 0; r < 2; r++)
        z[r] = _mm512_add_epi32(_mm512_unpacklo_epi64(w[2 * r], w[2 * r + 1]), _mm512_unpackhi_epi64(w[2 * r], w[2 * r + 1]));
    s[0] = _mm512_shuffle_i64x2(z[0], z[1], _MM_SHUFFLE(2, 0, 2, 0));
    s[1] = _mm512_shuffle_i64x2(z[0], z[1], _MM_SHUFFLE(3, 1, 3, 1));
}
/* lane L of sum_16x2's result holds row row_perm[L] (an involution: chunks 1 and 2 swapped) */
static const int32_t row_perm[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15};

/* 16 rows (row row_perm[L] at w + off[L]) × one token → out[16] in row order */
INLINE void rows_16(const uint8_t *w, __m512i off, int64_t nb, const uint8_t *x, const float *dx, const int32_t *xs8, float *out,
                    const uint8_t *next) {
    const uint8_t *row[16];
    int32_t o[16];
    _mm512_storeu_si512((void *)o, off);
    for (int L = 0; L < 16; L++) row[row_perm[L]] = w + o[L];
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b += 2) {
        for (int k = 0; k < 9; k++) _mm_prefetch((const char *)next + 16 * (size_t)b * sizeof(block_q4_0) + 64 * k, _MM_HINT_T0);
        const int pair = b + 1 < nb; /* an odd last block is paired with itself, its second half unused */
        const size_t o0 = (size_t)b * sizeof(block_q4_0), o1 = pair ? o0 + sizeof(block_q4_0) : o0;
        const uint8_t *x0 = x + (size_t)b * sizeof(block_q8_0) + 2, *x1 = pair ? x0 + sizeof(block_q8_0) : x0;
        const __m256i lo = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)x0)), _mm_loadu_si128((const __m128i *)x1), 1);
        const __m256i hi = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(x0 + 16))), _mm_loadu_si128((const __m128i *)(x1 + 16)), 1);
        const __m512i y = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
        __m512i p[16], s[2];
        for (int r = 0; r < 16; r++) p[r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q4_pair(row[r] + o0 + 2, row[r] + o1 + 2), y);
        sum_16x2(p, s);
        for (int k = 0; k < 1 + pair; k++) {
            const __m512i h = _mm512_i32gather_epi32(off, (const void *)(w + o0 + (size_t)k * sizeof(block_q4_0)), 1);
            const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h)); /* low 16 bits of each dword: the scale */
            const __m512i isum = _mm512_sub_epi32(s[k], _mm512_set1_epi32(xs8[b + k]));
            acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, _mm512_set1_ps(dx[b + k])), acc);
        }
    }
    _mm512_storeu_ps(out, _mm512_permutexvar_ps(_mm512_loadu_si512((const void *)row_perm), acc));
}

static int matvec_q4_0_vnni(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {
    /* long rows: a 16-row group and the prefetched next one no longer fit L1 together, and the 8-row kernel
     * (same bits) is faster from DRAM */
    if (ws * 16 > 12 * 1024) return matvec_q4_0(n, vw, ws, x, y, nrows);
    const int64_t nb = n / QK;
    if (nb > MAX_BLOCKS || (uint64_t)ws * 16 > (uint64_t)INT32_MAX) return 0;
    float dx[MAX_BLOCKS];
    int32_t xs8[MAX_BLOCKS];
    lk_q4_0_terms(x, nb, dx, xs8);
    const __m512i perm = _mm512_loadu_si512((const void *)row_perm);
    for (int64_t r0 = 0; r0 < nrows; r0 += 16) {
        const int64_t nr = nrows - r0 < 16 ? nrows - r0 : 16;
        /* byte offsets of the lanes' rows; a short last group repeats its last row (not stored) */
        const __m512i off = _mm512_mullo_epi32(_mm512_min_epi32(perm, _mm512_set1_epi32((int)nr - 1)), _mm512_set1_epi32((int)ws));
        float out[16];
        rows_16((const uint8_t *)vw + (size_t)r0 * ws, off, nb, x, dx, xs8, out, (const uint8_t *)vw + (size_t)(r0 + 16) * ws); /* see matvec_q4_0 */
        memcpy(y + r0, out, (size_t)nr * sizeof(float));
    }
    return 1;
}

/* gemm: 16-row tiles (build_tile), two at a time while 32 rows are left (each activation word loaded once for
 * both), four tokens per pass, passed over QKSLICE blocks at a time so that those are read from L1: less
 * time per weight than one tile over all its blocks per pass. Every (row, token) gets llama.cpp's
 * operations in its order: the block's integer sum, then one FMA per block in block order. */
enum {
    NT16 = 4,          /* tokens per pass */
    CHUNK16 = 128,     /* tokens per tile build (their activation terms prepared at once; fewer cost more time) */
    QKSLICE = 8,       /* blocks of the tiles that all the chunk's tokens pass over before the next ones */
    BLOCK16 = 36 * 16, /* bytes of one block of a 16-row tile (build_tile's layout) */
};

/* NT tokens × blocks b0..b1 of `halves` 16-row tiles whose blocks lie side by side (block b of half h at
 * tile + (b·halves + h)·BLOCK16) → y[t·ys + 16h + 0..16) (the last half's first nr lanes): from zero when b0 = 0,
 * else on from the sums of blocks 0..b0 that y holds */
INLINE void tiles_16_tokens(const uint8_t *tile, const int halves, int64_t nb, int64_t b0, int64_t b1, const uint8_t *x,
                            size_t xs, const float *dx, const int32_t *xs8, float *y, int64_t ys, int nr, const int NT) {
    const int chains = halves == 2 ? 1 : 2; /* one tile: even and odd groups in two chains per token, for latency */
    __mmask16 lanes[2];
    for (int h = 0; h < halves; h++) lanes[h] = h == halves - 1 ? (__mmask16)((1u << nr) - 1) : 0xFFFF;
    __m512 acc[2][NT16];
    for (int h = 0; h < halves; h++)
        for (int t = 0; t < NT; t++) acc[h][t] = b0 ? _mm512_maskz_loadu_ps(lanes[h], y + t * ys + 16 * h) : _mm512_setzero_ps();
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *tb = tile + (size_t)b * (size_t)halves * BLOCK16;
        __m512i is[2][NT16][2];
        for (int h = 0; h < halves; h++)
            for (int t = 0; t < NT; t++) is[h][t][0] = _mm512_set1_epi32(-xs8[t * nb + b]), is[h][t][1] = _mm512_setzero_si512();
        for (int g = 0; g < 8; g++) {
            __m512i wv[2];
            for (int h = 0; h < halves; h++) wv[h] = _mm512_load_si512((const void *)(tb + BLOCK16 * h + 64 * g));
            for (int t = 0; t < NT; t++) {
                const __m512i xv = _mm512_set1_epi32(lk_load_i32(x + (size_t)t * xs + (size_t)b * sizeof(block_q8_0) + 2 + 4 * g));
                for (int h = 0; h < halves; h++) is[h][t][g % chains] = _mm512_dpbusd_epi32(is[h][t][g % chains], wv[h], xv);
            }
        }
        for (int h = 0; h < halves; h++) {
            const __m512 d = _mm512_load_ps((const float *)(tb + BLOCK16 * h + 32 * 16));
            for (int t = 0; t < NT; t++) {
                const __m512i isum = chains == 2 ? _mm512_add_epi32(is[h][t][0], is[h][t][1]) : is[h][t][0];
                acc[h][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(d, _mm512_set1_ps(dx[t * nb + b])), acc[h][t]);
            }
        }
    }
    for (int h = 0; h < halves; h++)
        for (int t = 0; t < NT; t++) _mm512_mask_storeu_ps(y + t * ys + 16 * h, lanes[h], acc[h][t]);
}

/* The 16-row tile from weights in the LK_ROWS8 layout (w: the first of two groups; a tile of 8 rows reads
 * its one group twice, the second half unused): lanes 0-7 of each vector are the first group's, 8-15 the
 * second's, as the layout holds them; no gathers. */
INLINE void build_tile_rows8_16(const uint8_t *w, size_t ws, int64_t nb, int nr, uint8_t *tile, size_t bstride) {
    const uint8_t *w1 = nr > 8 ? w + 8 * ws : w;
    const __m512i m4 = _mm512_set1_epi8(15);
    for (int64_t b = 0; b < nb; b++) {
        const size_t oq = lk_rows8_quants(b, QK / 2), os = lk_rows8_scales(nb, b, QK / 2);
        uint8_t *t = tile + (size_t)b * bstride;
        for (int k = 0; k < 4; k++) {
            const __m512i q = lk_rows8_pair(w, w1, oq + 32 * (size_t)k);
            _mm512_store_si512((void *)(t + 64 * k), _mm512_and_si512(q, m4));
            _mm512_store_si512((void *)(t + 64 * (k + 4)), _mm512_and_si512(_mm512_srli_epi16(q, 4), m4));
        }
        _mm512_store_ps((float *)(t + 32 * 16), lk_rows8_pair_scales(w, w1, os));
    }
}

/* Q8_0's tile from the LK_ROWS8 layout (as build_tile_rows8_16): the weights as u = w + 128, the unsigned
 * operand of vpdpbusd, whose offset enters as −128·Σx (q8_0_terms); the same tile layout as Q4_0's. */
INLINE void build_tile_rows8_16_q8_0(const uint8_t *w, size_t ws, int64_t nb, int nr, uint8_t *tile, size_t bstride) {
    const uint8_t *w1 = nr > 8 ? w + 8 * ws : w;
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        const size_t oq = lk_rows8_quants(b, QK), os = lk_rows8_scales(nb, b, QK);
        uint8_t *t = tile + (size_t)b * bstride;
        for (int k = 0; k < 8; k++) _mm512_store_si512((void *)(t + 64 * k), _mm512_xor_si512(lk_rows8_pair(w, w1, oq + 32 * (size_t)k), bias));
        _mm512_store_ps((float *)(t + 32 * 16), lk_rows8_pair_scales(w, w1, os));
    }
}

/* Per token and block: dx and 128·Σx (the offset tiles_16_tokens subtracts for Q8_0's u = w + 128). */
INLINE void q8_0_terms(const uint8_t *x, int64_t nb, float *dx, int32_t *xs128) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = x + (size_t)b * sizeof(block_q8_0);
        dx[b] = h2f(lk_load_u16(blk));
        xs128[b] = 128 * hsum_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), _mm256_loadu_si256((const __m256i *)(blk + 2))));
    }
}

/* The VNNI gemm (packed: w in the LK_ROWS8 layout, row_begin and row_end multiples of 8); below 4 tokens of
 * the row layout one matvec per token. q8: Q8_0 weights (packed only), whose products take the same tiles
 * and operations: per (row, token) the block's exact integer sum, then fma(cvt(sum), d·dx, acc) in block
 * order, which is x86/avx2/q8_0.c's order (fma's two factors commute exactly), so the bits are its kernels'. */
INLINE int gemm_32_tiles(const int q8, const int packed, int64_t cols, const void *w, size_t ws, const void *x, size_t xs,
                         int64_t n_tokens, float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK;
    if (!q8 && !packed && n_tokens < 4) {
        int done = 1;
        for (int64_t t = 0; t < n_tokens && done; t++)
            done = matvec_q4_0_vnni(cols, (const uint8_t *)w + (size_t)row_begin * ws, ws, (const uint8_t *)x + (size_t)t * xs,
                                    y + t * ys + row_begin, row_end - row_begin);
        if (done) return 1;
    }
    const int64_t chunk = n_tokens < CHUNK16 ? n_tokens : CHUNK16;
    const size_t tile_bytes = 2 * (size_t)nb * BLOCK16; /* two 16-row tiles */
    uint8_t *scratch = lk_scratch(tile_bytes + (size_t)chunk * (size_t)nb * 8); /* the thread's */
    if (!scratch) return 0;
    uint8_t *tile = scratch;
    float *dx = (float *)(scratch + tile_bytes);
    int32_t *xs8 = (int32_t *)(dx + chunk * nb);
    const uint8_t *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xb + (size_t)t0 * xs;
        for (int64_t t = 0; t < nt; t++) {
            if (q8) q8_0_terms(xc + (size_t)t * xs, nb, dx + t * nb, xs8 + t * nb);
            else lk_q4_0_terms(xc + (size_t)t * xs, nb, dx + t * nb, xs8 + t * nb);
        }
        for (int64_t r0 = row_begin; r0 < row_end;) {
            const int halves = row_end - r0 >= 32 ? 2 : 1;
            const int nr = halves == 2 || row_end - r0 >= 16 ? 16 : (int)(row_end - r0);
            for (int h = 0; h < halves; h++) {
                const uint8_t *wh = wb + (size_t)(r0 + 16 * h) * ws;
                if (q8) build_tile_rows8_16_q8_0(wh, ws, nb, nr, tile + BLOCK16 * h, BLOCK16 * (size_t)halves);
                else if (packed) build_tile_rows8_16(wh, ws, nb, nr, tile + BLOCK16 * h, BLOCK16 * (size_t)halves);
                else build_tile(wh, ws, nb, nr, tile + BLOCK16 * h, 16, BLOCK16 * (size_t)halves);
            }
            /* the rows of the tiles built next go to L2 while these are used, a share per pass (all at once
               when there is no full pass), so that their build reads no row from DRAM */
            const int64_t r1 = r0 + (halves == 2 ? 32 : nr);
            const int64_t next = r1 < row_end ? r1 : (t0 + chunk < n_tokens ? row_begin : row_end);
            const uint8_t *pf = wb + (size_t)next * ws;
            const uint8_t *pf_end = pf + (size_t)(row_end - next < 32 ? row_end - next : 32) * ws;
            const int64_t steps = nt / NT16 * ((nb + QKSLICE - 1) / QKSLICE);
            const size_t share = steps ? (size_t)(pf_end - pf) / (size_t)steps + 64 : (size_t)(pf_end - pf);
            if (!steps) lk_prefetch_l2(pf, pf_end);
            for (int64_t b0 = 0; b0 < nb; b0 += QKSLICE) {
                const int64_t b1 = nb - b0 < QKSLICE ? nb : b0 + QKSLICE;
                int64_t t = 0;
                for (; t + NT16 <= nt; t += NT16) {
                    const uint8_t *to = (size_t)(pf_end - pf) < share ? pf_end : pf + share;
                    lk_prefetch_l2(pf, to);
                    pf = to;
                    const uint8_t *xt = xc + (size_t)t * xs;
                    float *yt = y + (t0 + t) * ys + r0;
                    if (halves == 2) tiles_16_tokens(tile, 2, nb, b0, b1, xt, xs, dx + t * nb, xs8 + t * nb, yt, ys, nr, NT16);
                    else tiles_16_tokens(tile, 1, nb, b0, b1, xt, xs, dx + t * nb, xs8 + t * nb, yt, ys, nr, NT16);
                }
                for (; t < nt; t++) {
                    const uint8_t *xt = xc + (size_t)t * xs;
                    float *yt = y + (t0 + t) * ys + r0;
                    if (halves == 2) tiles_16_tokens(tile, 2, nb, b0, b1, xt, xs, dx + t * nb, xs8 + t * nb, yt, ys, nr, 1);
                    else tiles_16_tokens(tile, 1, nb, b0, b1, xt, xs, dx + t * nb, xs8 + t * nb, yt, ys, nr, 1);
                }
            }
            r0 = r1;
        }
    }
    return 1;
}

static int gemm_q4_0_vnni(int64_t cols, const void *w, size_t ws, const void *x, size_t xs, int64_t n_tokens, float *y,
                          int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_32_tiles(0, 0, cols, w, ws, x, xs, n_tokens, y, ys, row_begin, row_end);
}

int lk_gemm_q4_0_rows8_avx512(int64_t cols, const void *w, size_t ws, const void *x, size_t xs, int64_t n_tokens, float *y,
                              int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_32_tiles(0, 1, cols, w, ws, x, xs, n_tokens, y, ys, row_begin, row_end);
}

int lk_gemm_q8_0_rows8_avx512(int64_t cols, const void *w, size_t ws, const void *x, size_t xs, int64_t n_tokens, float *y,
                              int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_32_tiles(1, 1, cols, w, ws, x, xs, n_tokens, y, ys, row_begin, row_end);
}

#pragma clang attribute pop
#endif

/* Q4_0 in llama.cpp's order: the AVX2 kernels, and the AVX-512 VNNI matvec and gemm. The gemm takes every
 * batch from 2 tokens (dot2 / dot4 would sum in another order). */
LK_KERNELS(lk_q4_0_avx2,
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q4_0, dot_q4_0),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q4_0, matvec_q4_0),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q4_0, gemm_q4_0, 2));
#ifndef LK_AVXVNNI /* the AVX-VNNI build holds the AVX2 kernels only */
LK_KERNELS(lk_q4_0_avx512,
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q4_0, matvec_q4_0_vnni),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q4_0, gemm_q4_0_vnni, 2));
#endif

#else
LK_NO_KERNELS(lk_q4_0_avx2);
#ifndef LK_AVXVNNI
LK_NO_KERNELS(lk_q4_0_avx512);
#endif
#endif

/* Q8_0 × Q8_0 on AVX2 in one summation order at every batch size: the one-row dot, the one-token matvec
 * and the 2..15-token kernel (stepped decode) of the AVX2 table. Per (row, token) one float chain over the
 * 32-element blocks,
 *
 *   acc = fma(dw_b · dx_b, float(isum_b), acc)   for b = 0, 1, ... (acc from 0), y = acc
 *
 * with isum_b the block's whole integer sum Σ w·x (exact in s32: |isum_b| <= 32·128·127). The AVX2 gemm
 * (x86/avx2/prefill.c, from 16 tokens) sums in this order too, so a token's outputs are the same bits alone,
 * stepped with other conversations, or in a prompt. Integer sums are exact in any order: each kernel forms
 * isum_b as suits it; only the float steps are fixed. (ggml_vec_dot_q8_0_q8_0 keeps 8 float lanes per block
 * and adds them at the end: the AVX-512 tables keep that order, from x86/avx2/decode.c's row kernels.)
 *
 * Signed × signed products go through vpmaddubsw as |w| · sign(x, w) (pair sums within s16: |w| <= 128,
 * |x| <= 127), widened by vpmaddwd.
 *   dot     one row: the block's 8 s32 lanes summed, one scalar FMA per block.
 *   matvec  rows in pairs (r, r + rows/2: two sequential streams), four blocks of each at a time: the 8 blocks'
 *           s32 lane vectors reduced to their 8 block sums by one unpack tree, the 8 scale products in one
 *           vector, then each row's float chain.
 *   few     8 rows at a time, lanes = rows: each half block of the 8 rows transposed in registers (lane r of
 *           vector g = bytes 4g..4g+3 of row r), |w| taken once and applied to every token of a pass of up
 *           to PASS tokens, whose 4 activation bytes of group g are broadcast: the block sums of the 8 rows
 *           come without horizontal work, and a block costs each token one product of the scales, one
 *           conversion and one FMA for all 8 rows (the row order costs those per row).
 *   rows8   weights packed in the 8-row layout (LK_ROWS8) are those transposed vectors already, with the
 *           8 scales side by side: the few kernel without transposes for 2..15 tokens (4 tokens 14.3
 *           against 20.6 cycles per 256 weights per token), one token over pairs of groups (two streams
 *           per thread, as the row pairs; 20.3 against 36.8 cycles), x86/avx2/prefill.c's gemm on tiles built
 *           from the layout from 16 tokens. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>

enum {
    PACKED_AHEAD = 2048, /* bytes prefetched ahead of the block read in the 8-row layout */
    PASS = 4, /* tokens per pass of the few-token kernel: 4 block sums + 4 accumulators + a half block's 4 vectors */
};

#pragma clang attribute push(__attribute__((target(LK_AVX2_TARGET))), apply_to = function)
#include "../lk_x86_avx2.h"

INLINE __m256i load256(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }

/* 8 s32 lanes of Σ w·x (4 products each) of one block: |w| · sign(x, w) */
INLINE __m256i block_lanes(__m256i w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)), _mm256_set1_epi16(1));
}

static float dot_q8_0(int64_t n, const void *vw, const void *vx) {
    const block_q8_0 *w = vw, *x = vx;
    float acc = 0.0f;
    for (int64_t b = 0; b < n / QK; b++) {
        const int32_t isum = hsum_epi32(block_lanes(load256(w[b].qs), load256(x[b].qs)));
        acc = __builtin_fmaf(h2f(w[b].d) * h2f(x[b].d), (float)isum, acc);
    }
    return acc;
}

/* [Σ of p[0], ..., Σ of p[7]] (8 s32 lanes each) */
INLINE __m256i sum_8x8(const __m256i *p) {
    __m256i t[4], u[2];
    for (int k = 0; k < 4; k++) /* per 128-bit half: (a0 + a2, b0 + b2, a1 + a3, b1 + b3) */
        t[k] = _mm256_add_epi32(_mm256_unpacklo_epi32(p[2 * k], p[2 * k + 1]), _mm256_unpackhi_epi32(p[2 * k], p[2 * k + 1]));
    for (int k = 0; k < 2; k++) /* per half: the 4 vectors' sums over that half */
        u[k] = _mm256_add_epi32(_mm256_unpacklo_epi64(t[2 * k], t[2 * k + 1]), _mm256_unpackhi_epi64(t[2 * k], t[2 * k + 1]));
    return _mm256_add_epi32(_mm256_permute2x128_si256(u[0], u[1], 0x20), _mm256_permute2x128_si256(u[0], u[1], 0x31));
}

/* Rows w0 and w1 × one token (x; dx[b] its block scales) → *y0, *y1. Four blocks of each row at a time: their
 * 8 block sums from one reduction, the scale products in one vector, then each row's four FMAs in block order. */
INLINE void row_pair(const uint8_t *w0, const uint8_t *w1, int64_t nb, const uint8_t *x, const float *dx, float *y0, float *y1) {
    const size_t bb = sizeof(block_q8_0);
    float a0 = 0.0f, a1 = 0.0f;
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const size_t ob = (size_t)b * bb;
        __m256i p[8];
        for (int j = 0; j < 4; j++) {
            const __m256i xv = load256(x + ob + j * bb + 2);
            p[j] = block_lanes(load256(w0 + ob + j * bb + 2), xv);
            p[4 + j] = block_lanes(load256(w1 + ob + j * bb + 2), xv);
        }
        _Alignas(32) float f[8], d[8];
        _mm256_store_ps(f, _mm256_cvtepi32_ps(sum_8x8(p)));
        const __m256 dw = _mm256_cvtph_ps(_mm_setr_epi16((short)lk_load_u16(w0 + ob), (short)lk_load_u16(w0 + ob + bb), (short)lk_load_u16(w0 + ob + 2 * bb),
                                                         (short)lk_load_u16(w0 + ob + 3 * bb), (short)lk_load_u16(w1 + ob), (short)lk_load_u16(w1 + ob + bb),
                                                         (short)lk_load_u16(w1 + ob + 2 * bb), (short)lk_load_u16(w1 + ob + 3 * bb)));
        const __m128 dxv = _mm_loadu_ps(dx + b);
        _mm256_store_ps(d, _mm256_mul_ps(dw, _mm256_set_m128(dxv, dxv)));
        for (int j = 0; j < 4; j++) {
            a0 = __builtin_fmaf(d[j], f[j], a0);
            a1 = __builtin_fmaf(d[4 + j], f[4 + j], a1);
        }
    }
    for (; b < nb; b++) {
        const size_t ob = (size_t)b * bb;
        const __m256i xv = load256(x + ob + 2);
        a0 = __builtin_fmaf(h2f(lk_load_u16(w0 + ob)) * dx[b], (float)hsum_epi32(block_lanes(load256(w0 + ob + 2), xv)), a0);
        a1 = __builtin_fmaf(h2f(lk_load_u16(w1 + ob)) * dx[b], (float)hsum_epi32(block_lanes(load256(w1 + ob + 2), xv)), a1);
    }
    *y0 = a0;
    *y1 = a1;
}

/* Row r paired with row r + half, not r + 1: two long sequential streams keep the hardware prefetchers
 * trained (8 interleaved row streams are slower from DRAM, even with software prefetches). An odd
 * last row is paired with itself. */
static int matvec_q8_0(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {
    enum { MAX_BLOCKS = 1024 }; /* the activation scales of up to 32768 columns on the stack */
    const int64_t nb = n / QK;
    if (nb > MAX_BLOCKS) return 0;
    float dx[MAX_BLOCKS];
    for (int64_t b = 0; b < nb; b++) dx[b] = h2f(lk_load_u16((const uint8_t *)x + (size_t)b * sizeof(block_q8_0)));
    const uint8_t *w = vw;
    const int64_t half = nrows / 2;
    for (int64_t r = 0; r < half; r++) row_pair(w + (size_t)r * ws, w + (size_t)(r + half) * ws, nb, x, dx, y + r, y + r + half);
    if (nrows & 1) {
        float unused;
        row_pair(w + (size_t)(nrows - 1) * ws, w + (size_t)(nrows - 1) * ws, nb, x, dx, y + nrows - 1, &unused);
    }
    return 1;
}

/* NT tokens (row t at x + t·xs, scales dx + t·nb) × 8 rows → y[t·ys + 0..nr). Row layout (PACKED 0): row r
 * at w + o[r], the next group prefetched in order from `next`. 8-row layout (PACKED 1, LK_ROWS8): the group
 * at w, whose vectors are the q[k] below (nr = 8), prefetched PACKED_AHEAD bytes on in its one stream. */
INLINE void tile_tokens(const uint8_t *w, const int32_t *o, int64_t nb, const uint8_t *x, size_t xs, const float *dx,
                        float *y, int64_t ys, int nr, const uint8_t *next, const int PACKED, const int NT) {
    __m256 acc[PASS];
    for (int t = 0; t < NT; t++) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const size_t ob = (size_t)b * sizeof(block_q8_0);
        if (PACKED) /* past the group's last vectors: its scales, then the next group */
            for (int k = 0; k < 4; k++) lk_prefetch_weights(w + lk_rows8_quants(b, QK) + PACKED_AHEAD + 64 * k);
        else
            for (int k = 0; k < 5; k++) lk_prefetch_weights(next + 8 * ob + 64 * k);
        __m256i isum[PASS];
        for (int t = 0; t < NT; t++) isum[t] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) { /* bytes 16h..16h + 15 of the 8 rows: groups 4h..4h + 3 */
            __m256i q[4];
            if (PACKED) {
                for (int k = 0; k < 4; k++) q[k] = load256(w + lk_rows8_quants(b, QK) + 32 * (4 * h + k));
            } else {
                __m128i rows[8];
                for (int r = 0; r < 8; r++) rows[r] = _mm_loadu_si128((const __m128i *)(w + o[r] + ob + 2 + 16 * h));
                lk_transpose8x4(rows, q);
            }
            for (int k = 0; k < 4; k++) {
                const __m256i a = _mm256_sign_epi8(q[k], q[k]);
                for (int t = 0; t < NT; t++) {
                    const uint8_t *xq = x + (size_t)t * xs + ob + 2 + 16 * h + 4 * k;
                    const __m256i xv = _mm256_sign_epi8(_mm256_set1_epi32(lk_load_i32(xq)), q[k]);
                    isum[t] = lk_dpbusd256(isum[t], a, xv);
                }
            }
        }
        const __m256 d = PACKED ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + lk_rows8_scales(nb, b, QK)))) : lk_row_scales8(w, o, ob);
        for (int t = 0; t < NT; t++)
            acc[t] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(dx[t * nb + b])), _mm256_cvtepi32_ps(isum[t]), acc[t]);
    }
    for (int t = 0; t < NT; t++) lk_store_rows8(acc[t], y + t * ys, nr);
}
INLINE void tile_rows(const uint8_t *w, const int32_t *o, int64_t nb, const uint8_t *x, size_t xs, const float *dx,
                      float *y, int64_t ys, int nr, const uint8_t *next, const int NT) {
    tile_tokens(w, o, nb, x, xs, dx, y, ys, nr, next, 0, NT);
}
INLINE void tile_packed(const uint8_t *w, const int32_t *o, int64_t nb, const uint8_t *x, size_t xs, const float *dx,
                        float *y, int64_t ys, int nr, const uint8_t *next, const int NT) {
    tile_tokens(w, o, nb, x, xs, dx, y, ys, nr, next, 1, NT);
}

/* One token × groups g and g + gh of the 8-row layout (rows 8g.. at w, 8(g + gh).. at w + gap), each in
 * tile_tokens' order: two sequential streams per thread, as matvec_q8_0's row pairs (one stream decodes
 * slower). */
INLINE void group_pair_1(const uint8_t *w, size_t gap, int64_t nb, const uint8_t *x, const float *dx, float *y0, float *y1) {
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const size_t ob = (size_t)b * sizeof(block_q8_0);
        for (int j = 0; j < 2; j++) {
            const uint8_t *grp = w + (size_t)j * gap, *blk = grp + lk_rows8_quants(b, QK);
            for (int k = 0; k < 4; k++) lk_prefetch_weights(blk + PACKED_AHEAD + 64 * k);
            lk_prefetch_weights(grp + lk_rows8_scales(nb, b, QK) + PACKED_AHEAD / 16);
            __m256i isum = _mm256_setzero_si256();
            for (int g = 0; g < 8; g++) {
                const __m256i q = load256(blk + 32 * g);
                const __m256i xv = _mm256_sign_epi8(_mm256_set1_epi32(lk_load_i32(x + ob + 2 + 4 * g)), q);
                isum = lk_dpbusd256(isum, _mm256_sign_epi8(q, q), xv);
            }
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(grp + lk_rows8_scales(nb, b, QK))));
            acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(dx[b])), _mm256_cvtepi32_ps(isum), acc[j]);
        }
    }
    _mm256_storeu_ps(y0, acc[0]);
    _mm256_storeu_ps(y1, acc[1]);
}

/* 1..LK_FEW_MAX_TOKENS tokens in either layout (PACKED: rows in whole groups of 8). */
INLINE int few_q8_0_layout(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                           int64_t ys, int64_t row_begin, int64_t row_end, const int PACKED) {
    const int64_t nb = cols / QK;
    if (n_tokens > LK_FEW_MAX_TOKENS || (uint64_t)ws * 8 > (uint64_t)INT32_MAX) return 0;
    const uint8_t *x = vx;
    float *dx = lk_scratch((size_t)n_tokens * (size_t)nb * sizeof(float)); /* [n_tokens, nb] */
    if (!dx) return 0;
    for (int64_t t = 0; t < n_tokens; t++)
        for (int64_t b = 0; b < nb; b++) dx[t * nb + b] = h2f(lk_load_u16(x + (size_t)t * xs + (size_t)b * sizeof(block_q8_0)));
    int64_t r_first = row_begin;
    if (PACKED && n_tokens == 1) { /* groups in pairs (g, g + gh); an odd last one goes through the tile below */
        const int64_t gh = (row_end - row_begin) / 16;
        for (int64_t i = 0; i < gh; i++) {
            const int64_t r = row_begin + 8 * i;
            group_pair_1((const uint8_t *)vw + (size_t)r * ws, (size_t)gh * 8 * ws, nb, x, dx, y + r, y + r + 8 * gh);
        }
        r_first = row_begin + 16 * gh;
    }
    for (int64_t r0 = r_first; r0 < row_end; r0 += 8) {
        const int nr = row_end - r0 < 8 ? (int)(row_end - r0) : 8;
        const uint8_t *w = (const uint8_t *)vw + (size_t)r0 * ws;
        int32_t o[8];
        lk_group_offsets(nr, ws, o);
        for (int64_t t0 = 0; t0 < n_tokens; t0 += PASS) {
            const int nt = n_tokens - t0 < PASS ? (int)(n_tokens - t0) : PASS;
            if (PACKED) {
                LK_PASS4(nt, tile_packed, w, o, nb, x + (size_t)t0 * xs, xs, dx + t0 * nb, y + t0 * ys + r0, ys, nr, w + 8 * ws)
            } else {
                LK_PASS4(nt, tile_rows, w, o, nb, x + (size_t)t0 * xs, xs, dx + t0 * nb, y + t0 * ys + r0, ys, nr, w + 8 * ws)
            }
        }
    }
    return 1;
}

static int few_q8_0(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    return few_q8_0_layout(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end, 0);
}

/* The LK_ROWS8 entry: one token over group pairs, the tile kernel up to LK_FEW_MAX_TOKENS tokens, then the
 * gemm on tiles built from the layout; every path the bits of the row layout's kernels. */
static int rows8_q8_0(int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens <= LK_FEW_MAX_TOKENS) return few_q8_0_layout(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end, 1);
    return lk_gemm_q8_0_rows8_avx2(cols, vw, ws, vx, xs, n_tokens, y, ys, row_begin, row_end);
}

#pragma clang attribute pop

LK_KERNELS(lk_avx2_q8_0,
    LK_KERNEL(LK_E_DOT, LK_TYPE_Q8_0, dot_q8_0),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q8_0, matvec_q8_0),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q8_0, few_q8_0),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q8_0, rows8_q8_0));

#else
LK_NO_KERNELS(lk_avx2_q8_0);
#endif

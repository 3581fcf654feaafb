/* AVX-512 VNNI matrix × matrix (prefill) for Q4_1, Q5_0, Q5_1, F16 and F32 (Q4_0: x86/q4_0.c; Q8_0:
 * x86/avx2/q8_0.c's order, x86/avx512/fewtokens.c; the K-quants: x86/avx512/kquant.c): one lk_matmul call with many
 * tokens, bit for bit equal to the one-token path (so batched prefill and decode agree exactly).
 *
 * The row kernels give each (row, token) pair its own vector accumulator: every vpdpbusd of 64 weights
 * pays for a share of the unpack, an offset sum, a scale product, a lane permute and the conversion, about
 * 8 instructions. Here the vector runs over 16 weight rows instead:
 *
 *   tile   16 rows unpacked once per call to unsigned bytes and transposed so that s32 lane r of vector g
 *          holds bytes 4g..4g+3 of row r, with the per-row scales as 16-float (or s32) vectors;
 *   token  the 4 activation bytes of a group are broadcast from the Q8 row into vpdpbusd: one instruction
 *          is 4 multiply-adds for each of 16 rows.
 *
 * Bit-exactness: the one-token kernels keep one float accumulator per s32 lane of their vectors (a lane
 * = 4 weights of one block) and reduce the lanes at the end. Integer sums are exact in any order, so this
 * kernel forms the same per-lane integers, keeps one accumulator vector per lane position (8, ggml's lanes, for the
 * 32-block types), applies the same float operations in the same order, and adds the lane
 * accumulators in the reduction tree of the row kernels (see reduce8).
 *
 *   Q4_1, Q5_0, Q5_1 (ggml's order, = the AVX2 row kernels and x86/avx512/decode.c): lane g
 *     (group g of every block) is one chain over the blocks in order, acc_g += (dw·dx) · (Σ q·x − offset·Σx
 *     over the group), result hsum_ps (reduce8) + the fused chain Σ m·s (Q4_1/Q5_1); see tile32_seq_tokens.
 *     Weights become u = q (Q5_0 with offset 16 through the activations).
 *
 *   F16 / F32: see gemm_float.
 *
 * Scratch per call: one tile and the offset terms of up to CHUNK tokens, the thread's lk_scratch; on failure the caller falls back.
 *
 * What is left per vpdpbusd is the float work the exact order needs (one vcvtdq2ps + one FMA per 4 weights
 * and block); one float FMA per block would be faster but changes the logits by float rounding (figures:
 * BENCHMARKS.md, leap-bench kernels). */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#include "../lk_x86_avx512.h"

enum {
    TR = 16,     /* weight rows per tile (s32 lanes) */
    CHUNK = 128, /* tokens whose offset terms are prepared at once */
};

INLINE __m512i bcast32(const void *p) { return _mm512_set1_epi32(lk_load_i32(p)); }

/* rows [16][bk] (row-major unsigned bytes) → bk/4 vectors, lane r of vector g = bytes 4g..4g+3 of row r */
INLINE void transpose_rows(const uint8_t *rows, int bk, uint8_t *out) {
    const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(bk));
    for (int g = 0; g < bk / 4; g++)
        _mm512_store_si512((void *)(out + 64 * g), _mm512_i32gather_epi32(idx, (const void *)(rows + 4 * g), 1));
}

INLINE void store_rows(float *y, __m512 v, int nr) {
    if (nr == TR) _mm512_storeu_ps(y, v);
    else _mm512_mask_storeu_ps(y, (__mmask16)((1u << nr) - 1), v);
}

/* hsum_ps (x86/avx2/decode.c) of lanes a[0..7] */
INLINE __m512 reduce8(const __m512 *a) {
    const __m512 q0 = _mm512_add_ps(a[0], a[4]), q1 = _mm512_add_ps(a[1], a[5]);
    const __m512 q2 = _mm512_add_ps(a[2], a[6]), q3 = _mm512_add_ps(a[3], a[7]);
    return _mm512_add_ps(_mm512_add_ps(q0, q2), _mm512_add_ps(q1, q3));
}

/* ================================== 32-element blocks ================================== */

/* Tile layout per block: 8 byte vectors, then the 16 row scales d, then (Q4_1/Q5_1) the 16 mins m. */
enum { B32_W = 0, B32_D = 512, B32_M = 576, B32_STRIDE = 640 };


/* One weight block → 32 unsigned bytes in element order. */
INLINE __m256i unpack32(int type, const uint8_t *blk) {
    const uint8_t *qs = type == LK_TYPE_Q4_1 ? ((const block_q4_1 *)blk)->qs
                      : type == LK_TYPE_Q5_0 ? ((const block_q5_0 *)blk)->qs
                                             : ((const block_q5_1 *)blk)->qs;
    const __m128i q = _mm_loadu_si128((const __m128i *)qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(15));
    if (type == LK_TYPE_Q5_0 || type == LK_TYPE_Q5_1) { /* bit j of qh is the 5th bit of element j */
        const uint32_t qh = (uint32_t)lk_load_i32(type == LK_TYPE_Q5_0 ? ((const block_q5_0 *)blk)->qh : ((const block_q5_1 *)blk)->qh);
        return _mm256_mask_add_epi8(nib, (__mmask32)qh, nib, _mm256_set1_epi8(16));
    }
    return nib;
}

INLINE void build_tile32(int type, const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile) {
    const size_t bb = lk_block_bytes(type);
    _Alignas(64) uint8_t rows[TR * 32];
    _Alignas(64) float d[TR], m[TR];
    for (int64_t b = 0; b < nb; b++) {
        for (int r = 0; r < TR; r++) {
            if (r < nr) {
                const uint8_t *blk = w + (size_t)r * wrb + (size_t)b * bb;
                _mm256_store_si256((__m256i *)(rows + 32 * r), unpack32(type, blk));
                d[r] = h2f(lk_load_u16(blk));
                m[r] = lk_has_min(type) ? h2f(lk_load_u16(blk + 2)) : 0.0f;
            } else {
                _mm256_store_si256((__m256i *)(rows + 32 * r), _mm256_setzero_si256());
                d[r] = m[r] = 0.0f;
            }
        }
        uint8_t *t = tile + b * B32_STRIDE;
        transpose_rows(rows, 32, t + B32_W);
        memcpy(t + B32_D, d, sizeof d);
        memcpy(t + B32_M, m, sizeof m);
    }
}

/* Per token and block: dx (the activation scale as float) and, for Q8_0 activations (Q5_0), −offset · Σx over each
 * 4-byte group (the starting integer accumulators). */
INLINE void prep_terms32(int type, const uint8_t *x, size_t xrb, int64_t nt, int64_t nb, float *dx, int32_t *neg) {
    const size_t xb = lk_has_min(type) ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const __m256i off = _mm256_set1_epi8((char)vnni_weight_offset(type));
    for (int64_t t = 0; t < nt; t++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = x + (size_t)t * xrb + (size_t)b * xb;
            dx[t * nb + b] = h2f(lk_load_u16(blk));
            if (lk_has_min(type)) continue;
            const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), off, _mm256_loadu_si256((const __m256i *)(blk + 2)));
            _mm256_storeu_si256((__m256i *)(neg + (t * nb + b) * 8), _mm256_sub_epi32(_mm256_setzero_si256(), s));
        }
}

/* Q4_1, Q5_0, Q5_1 in ggml's order (vec_dot, llamafile's tinyBLAS_Q0_AVX, our AVX2 kernels): lane g
 * (group g, bytes 4g..4g+3 of every block) is one float chain over the blocks in order, acc_g += (dw·dx) ·
 * sumi_g; the result is hsum_ps of the 8 lanes (reduce8) plus the fused chain Σ m·s (Q4_1/Q5_1). One pass
 * over the blocks: the 8 lane accumulators of NTS tokens fit in the registers. */
enum { NTS = 2 };

INLINE void tile32_seq_tokens(int type, const uint8_t *tile, int64_t nb, const uint8_t *x, size_t xrb, const float *dx,
                              const int32_t *neg, float *y, int64_t ys, int nr, const int NT) {
    const int q81 = lk_has_min(type);
    const size_t xb = q81 ? sizeof(block_q8_1) : sizeof(block_q8_0), qs_off = q81 ? 4 : 2;
    __m512 acc[NTS][8], summ[NTS];
    for (int t = 0; t < NT; t++) {
        summ[t] = _mm512_setzero_ps();
        for (int g = 0; g < 8; g++) acc[t][g] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *tb = tile + b * B32_STRIDE;
        const __m512 d = _mm512_load_ps((const float *)(tb + B32_D));
        __m512 dd[NTS];
        for (int t = 0; t < NT; t++) {
            dd[t] = _mm512_mul_ps(d, _mm512_set1_ps(dx[t * nb + b]));
            if (q81) {
                const float s = h2f(lk_load_u16(x + (size_t)t * xrb + (size_t)b * xb + 2));
                summ[t] = _mm512_fmadd_ps(_mm512_load_ps((const float *)(tb + B32_M)), _mm512_set1_ps(s), summ[t]);
            }
        }
        for (int g = 0; g < 8; g++) {
            const __m512i wv = _mm512_load_si512((const void *)(tb + B32_W + 64 * g));
            for (int t = 0; t < NT; t++) {
                const __m512i init = q81 ? _mm512_setzero_si512() : _mm512_set1_epi32(neg[(t * nb + b) * 8 + g]);
                const uint8_t *xq = x + (size_t)t * xrb + (size_t)b * xb + qs_off + 4 * g;
                acc[t][g] = _mm512_fmadd_ps(dd[t], _mm512_cvtepi32_ps(_mm512_dpbusd_epi32(init, wv, bcast32(xq))), acc[t][g]);
            }
        }
    }
    for (int t = 0; t < NT; t++) store_rows(y + t * ys, _mm512_add_ps(reduce8(acc[t]), summ[t]), nr);
}

INLINE int gemm32(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                  float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK;
    const int64_t chunk = n_tokens < CHUNK ? n_tokens : CHUNK;
    const size_t tile_bytes = (size_t)nb * B32_STRIDE;
    uint8_t *scratch = lk_scratch(tile_bytes + (size_t)chunk * (size_t)nb * 36);
    if (!scratch) return 0;
    uint8_t *tile = scratch;
    float *dx = (float *)(scratch + tile_bytes);
    int32_t *neg = (int32_t *)(dx + chunk * nb);
    const uint8_t *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xb + (size_t)t0 * xrb;
        prep_terms32(type, xc, xrb, nt, nb, dx, neg);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
            const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
            build_tile32(type, wb + (size_t)r0 * wrb, wrb, nb, nr, tile);
            int64_t t = 0;
            for (; t + NTS <= nt; t += NTS)
                tile32_seq_tokens(type, tile, nb, xc + (size_t)t * xrb, xrb, dx + t * nb, neg + t * nb * 8, y + (t0 + t) * ys + r0, ys, nr, NTS);
            for (; t < nt; t++)
                tile32_seq_tokens(type, tile, nb, xc + (size_t)t * xrb, xrb, dx + t * nb, neg + t * nb * 8, y + (t0 + t) * ys + r0, ys, nr, 1);
        }
    }
    return 1;
}

/* ================================ float weights (F16, F32) ================================ */

/* The attention products (Q·Kᵀ and P·V over an F16 KV cache) and float weight matrices. FLOAT_ROWS
 * (x86/avx2/decode.c) gives each (row, token) two 8-lane accumulators: lane k of the first sums the columns
 * 16i + k, lane k of the second the columns 16i + 8 + k; their sum is reduced by hsum_ps. Here column c of
 * 16 rows is one vector of the tile (f32, transposed 16×16 at a time), so lane position c % 16 is one
 * accumulator vector per token. Columns go FC at a time (the lanes wait in scratch between passes); tokens
 * FT at a time (one tile build each). Column counts that are not a multiple of 16 (FLOAT_ROWS then has
 * tails) fall back to the row kernels. */
enum { FC = 256, FT = 64, NTF = 3 };

/* r[i] = row i of a 16×16 block → r[c] = column c */
INLINE void transpose16(__m512 *r) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) { /* lane k of r[i + j]: column 4k + j of rows i..i+3 */
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    }
    for (int j = 0; j < 4; j++) { /* 128-bit lanes: columns j, 8 + j (rows 0-7) and j + 4, j + 12 */
        t[j] = _mm512_shuffle_f32x4(r[j], r[j + 4], 0x88);
        t[j + 4] = _mm512_shuffle_f32x4(r[j], r[j + 4], 0xdd);
        t[j + 8] = _mm512_shuffle_f32x4(r[j + 8], r[j + 12], 0x88);
        t[j + 12] = _mm512_shuffle_f32x4(r[j + 8], r[j + 12], 0xdd);
    }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
    }
}

INLINE __m512 load16_float(int type, const uint8_t *row, int64_t c) {
    return type == LK_TYPE_F16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 2 * c)))
                               : _mm512_loadu_ps((const float *)row + c);
}

/* tile[c][r] = W[r][c0 + c] for c < cc (a multiple of 16), r < nr (zeros for r >= nr) */
INLINE void build_tile_float(int type, const uint8_t *w, size_t wrb, int64_t c0, int64_t cc, int nr, float *tile) {
    for (int64_t c = 0; c < cc; c += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = i < nr ? load16_float(type, w + (size_t)i * wrb, c0 + c) : _mm512_setzero_ps();
        transpose16(r);
        for (int j = 0; j < 16; j++) _mm512_store_ps(tile + 16 * (c + j), r[j]);
    }
}

/* Lane positions 8h..8h+7 of NT tokens over the tile's cc columns (activation columns x + c0), continuing
 * the accumulators in lanes[t][16] (zero when first). */
INLINE void tile_float_pass(const float *tile, int64_t cc, const uint8_t *x, size_t xrb, int64_t c0, int h,
                            __m512 (*lanes)[16], int first, const int NT) {
    __m512 a[NTF][8];
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < 8; k++) a[t][k] = first ? _mm512_setzero_ps() : lanes[t][8 * h + k];
    for (int64_t c = 8 * h; c < cc; c += 16)
        for (int k = 0; k < 8; k++) {
            const __m512 wv = _mm512_load_ps(tile + 16 * (c + k));
            for (int t = 0; t < NT; t++)
                a[t][k] = _mm512_fmadd_ps(wv, _mm512_set1_ps(((const float *)(x + (size_t)t * xrb))[c0 + c + k]), a[t][k]);
        }
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < 8; k++) lanes[t][8 * h + k] = a[t][k];
}

INLINE int gemm_float(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                      float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    if (cols % 16) return 0;
    uint8_t *scratch = lk_scratch(sizeof(float) * 16 * FC + sizeof(__m512) * 16 * FT);
    if (!scratch) return 0;
    float *tile = (float *)scratch;
    __m512(*lanes)[16] = (__m512(*)[16])(scratch + sizeof(float) * 16 * FC);
    const uint8_t *wb = w, *xb = x;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
        const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += FT) {
            const int64_t nt = n_tokens - t0 < FT ? n_tokens - t0 : FT;
            const uint8_t *xt = xb + (size_t)t0 * xrb;
            for (int64_t c0 = 0; c0 < cols; c0 += FC) {
                const int64_t cc = cols - c0 < FC ? cols - c0 : FC;
                build_tile_float(type, wb + (size_t)r0 * wrb, wrb, c0, cc, nr, tile);
                for (int h = 0; h < 2; h++) {
                    int64_t t = 0;
                    for (; t + NTF <= nt; t += NTF) tile_float_pass(tile, cc, xt + (size_t)t * xrb, xrb, c0, h, lanes + t, c0 == 0, NTF);
                    for (; t < nt; t++) tile_float_pass(tile, cc, xt + (size_t)t * xrb, xrb, c0, h, lanes + t, c0 == 0, 1);
                }
            }
            for (int64_t t = 0; t < nt; t++) { /* hsum_ps(acc0 + acc1) */
                __m512 v[8];
                for (int k = 0; k < 8; k++) v[k] = _mm512_add_ps(lanes[t][k], lanes[t][8 + k]);
                store_rows(y + (t0 + t) * ys + r0, reduce8(v), nr);
            }
        }
    }
    return 1;
}

/* ===================================== entries ===================================== */

LK_GEMM_ENTRY(gemm_q4_1, gemm32, LK_TYPE_Q4_1)
LK_GEMM_ENTRY(gemm_q5_0, gemm32, LK_TYPE_Q5_0)
LK_GEMM_ENTRY(gemm_q5_1, gemm32, LK_TYPE_Q5_1)

static int gemm_f16(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_float(LK_TYPE_F16, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);
}

static int gemm_f32(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_float(LK_TYPE_F32, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);
}

#pragma clang attribute pop

LK_KERNELS(lk_avx512_prefill,
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q4_1, gemm_q4_1),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q5_0, gemm_q5_0),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q5_1, gemm_q5_1),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_F16, gemm_f16),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_F32, gemm_f32));

#else
LK_NO_KERNELS(lk_avx512_prefill);
#endif

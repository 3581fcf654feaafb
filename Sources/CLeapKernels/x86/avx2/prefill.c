/* AVX2 matrix × matrix (prefill) for Q4_1, Q5_0, Q5_1 and Q8_0: one lk_matmul call with many tokens, and for
 * Q4_1, Q5_0 and Q5_1 also with 2 to LK_FEW_MAX_TOKENS tokens (conversations decoded together: the row kernels'
 * dot2 / dot4 / dot spill their accumulators and re-read every block's scales per token).
 * Q4_1, Q5_0 and Q5_1 are bit for bit equal to the AVX2 row kernels of x86/avx2/decode.c (so batched prefill
 * and decode equal one-token decode on that path); Q8_0 sums in an order of its own (below), that of the AVX2
 * table's other Q8_0 kernels (x86/avx2/q8_0.c). (Q4_0's AVX2 gemm is in
 * x86/q4_0.c: another summation order.)
 *
 * The row kernels keep, per (row, token), 8 float lanes: lane k of block b adds (dw·dx)·isum_bk, where
 * isum_bk = Σ w·x over elements 4k..4k+3 (an exact integer), block after block; the result is hsum_ps of
 * the lanes (+ the m·s chain for Q8_1 activations). Each block costs them an unpack per 4 tokens and, per
 * token, a scale product, two sign ops (signed weights), vpmaddubsw, vpmaddwd, a conversion and an FMA.
 *
 * Here 8 rows share every instruction: a tile of 8 rows is unpacked once per token chunk and transposed so
 * that s32 lane r of vector g holds bytes 4g..4g+3 of row r; the 4 activation bytes of group g are broadcast.
 * One vpmaddubsw + vpmaddwd gives isum_bg of 8 rows.
 *   Q4_1, Q5_1  unsigned weights (nibbles, + 16 for the 5th bit) × Q8_1; m·s per block in one FMA chain;
 *   Q5_0        unsigned q (0..31) and −16·Σx over the group added to the integer (exact, as the row
 *               kernel's signed product);
 *   these three: one FMA per group into the lane-g accumulator of the 8 rows, the 8 lane accumulators then
 *   added in hsum_ps's tree (the row kernels' order).
 *   Q8_0        its own order: y = Σ_b (dw·dx)·isum_b with isum_b the block's whole exact integer sum (the 8
 *               groups' vpmaddwd results added in s32), one product and one FMA per block and no horizontal
 *               sum (lane r is row r). The tile holds w and |w| = vpsignb(w, w) (built by an in-register
 *               transpose, no gathers); w's sign is moved onto each token's broadcast activations (|w|·x
 *               pairs stay within s16: |x| <= 127). A tile serves up to CHUNK8_MAX tokens (as many as keep
 *               their activations in L2); blocks are taken KS8 at a time so the tile part in use stays in
 *               L1 while the chunk's tokens pass (the float steps are those of one pass: y is carried through). */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target(LK_AVX2_TARGET))), apply_to = function)
#include "../lk_x86_avx2.h"

enum {
    TR = 8,      /* weight rows per tile (s32 lanes) */
    CHUNK = 64,  /* tokens whose activation terms are prepared at once (Q8_0: at least) */
    NT8 = 4,     /* Q8_0: tokens per pass over a tile */
    KS8 = 32,    /* Q8_0: blocks of a tile used by all the chunk's tokens before the next ones (in L1) */
    CHUNK8_MAX = 256,           /* Q8_0: most tokens per tile build */
    CHUNK8_BYTES = 288 * 1024,  /* Q8_0: activation bytes of a chunk (L2-resident while its tiles pass) */
};


/* Tile layout per block: 8 byte vectors (u; Q8_0: |w|), 8 vectors of w (Q8_0), the 8 row scales d, the 8 mins m. */
enum { G_W = 0, G_S = 256, G_D = 512, G_M = 544, G_STRIDE = 576 };


/* One weight block → the unsigned bytes multiplied (u), or for Q8_0 w itself (in *sgn). */
INLINE __m256i unpack32(int type, const uint8_t *blk, __m256i *sgn) {
    switch (type) {
    case LK_TYPE_Q8_0: {
        const __m256i w = _mm256_loadu_si256((const __m256i *)((const block_q8_0 *)blk)->qs);
        *sgn = w;
        return _mm256_setzero_si256();
    }
    case LK_TYPE_Q4_1: return nibbles_32(((const block_q4_1 *)blk)->qs);
    case LK_TYPE_Q5_0: {
        const block_q5_0 *b = (const block_q5_0 *)blk;
        return _mm256_or_si256(nibbles_32(b->qs), _mm256_and_si256(bits_to_bytes_32(b->qh), _mm256_set1_epi8(16)));
    }
    default: {
        const block_q5_1 *b = (const block_q5_1 *)blk;
        return _mm256_or_si256(nibbles_32(b->qs), _mm256_and_si256(bits_to_bytes_32(b->qh), _mm256_set1_epi8(16)));
    }
    }
}

/* 8 rows of 32 bytes (r[k]: row k) → g[0..7], lane k of g[j] = bytes 4j..4j+3 of row k: an 8x8 transpose of s32
 * in registers (unpack 32, unpack 64, 128-bit permutes). */
INLINE void transpose8_s32(const __m256i *r, __m256i *g) {
    __m256i t[TR], u[TR];
    for (int k = 0; k < TR; k += 2) {
        t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
        t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
    }
    for (int k = 0; k < TR; k += 4) {
        u[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]);
        u[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
        u[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]);
        u[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
    }
    for (int j = 0; j < 4; j++) {
        g[j] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x20);
        g[j + 4] = _mm256_permute2x128_si256(u[j], u[j + 4], 0x31);
    }
}

/* The tile of Q4_1 / Q5_0 / Q5_1 rows: each row's block unpacked in a register, the 8 transposed in registers
 * (no gathers: a tile built for a few tokens costs about what they do), the f16 scales and mins converted 8 at
 * a time (exact). Rows >= nr are zeros. */
INLINE void build_tile(int type, const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile) {
    const size_t bb = lk_block_bytes(type);
    for (int64_t b = 0; b < nb; b++) {
        __m256i q[TR], g[TR];
        _Alignas(16) uint16_t d[TR], m[TR];
        for (int r = 0; r < TR; r++) {
            __m256i unused;
            q[r] = _mm256_setzero_si256();
            d[r] = m[r] = 0;
            if (r < nr) {
                const uint8_t *blk = w + (size_t)r * wrb + (size_t)b * bb;
                q[r] = unpack32(type, blk, &unused);
                d[r] = lk_load_u16(blk);
                if (lk_has_min(type)) m[r] = lk_load_u16(blk + 2);
            }
        }
        transpose8_s32(q, g);
        uint8_t *t = tile + b * G_STRIDE;
        for (int j = 0; j < TR; j++) _mm256_store_si256((__m256i *)(t + G_W + 32 * j), g[j]);
        _mm256_store_ps((float *)(t + G_D), _mm256_cvtph_ps(_mm_load_si128((const __m128i *)d)));
        _mm256_store_ps((float *)(t + G_M), _mm256_cvtph_ps(_mm_load_si128((const __m128i *)m)));
    }
}

/* Per token and block: dx, and the Q8_1 s (Q4_1/Q5_1) or −16·Σx per group of 4 (Q5_0). */
INLINE void prep_terms(int type, const uint8_t *x, size_t xrb, int64_t nt, int64_t nb, float *dx, float *xs, int32_t *neg) {
    const size_t xb = lk_has_min(type) ? sizeof(block_q8_1) : sizeof(block_q8_0);
    for (int64_t t = 0; t < nt; t++)
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = x + (size_t)t * xrb + (size_t)b * xb;
            dx[t * nb + b] = h2f(lk_load_u16(blk));
            if (lk_has_min(type)) xs[t * nb + b] = h2f(lk_load_u16(blk + 2));
            if (type != LK_TYPE_Q5_0) continue;
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(16), _mm256_loadu_si256((const __m256i *)(blk + 2))),
                                                _mm256_set1_epi16(1));
            _mm256_storeu_si256((__m256i *)(neg + (t * nb + b) * 8), _mm256_sub_epi32(_mm256_setzero_si256(), p));
        }
}

/* hsum_ps (x86/avx2/decode.c) of lanes a[0..7]: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)) */
INLINE __m256 reduce8(const __m256 *a) {
    const __m256 q0 = _mm256_add_ps(a[0], a[4]), q1 = _mm256_add_ps(a[1], a[5]);
    const __m256 q2 = _mm256_add_ps(a[2], a[6]), q3 = _mm256_add_ps(a[3], a[7]);
    return _mm256_add_ps(_mm256_add_ps(q0, q2), _mm256_add_ps(q1, q3));
}

/* One token × one tile → Y[0..nr) */
INLINE void tile_token(int type, const uint8_t *tile, int64_t nb, const uint8_t *x, const float *dx, const float *xs,
                       const int32_t *neg, float *y, int nr) {
    const int q81 = lk_has_min(type);
    const size_t xb = q81 ? sizeof(block_q8_1) : sizeof(block_q8_0), qs_off = q81 ? 4 : 2;
    __m256 acc[8], summ = _mm256_setzero_ps();
    for (int g = 0; g < 8; g++) acc[g] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *tb = tile + b * G_STRIDE;
        const uint8_t *xq = x + (size_t)b * xb + qs_off;
        const __m256 dd = _mm256_mul_ps(_mm256_load_ps((const float *)(tb + G_D)), _mm256_set1_ps(dx[b]));
        for (int g = 0; g < 8; g++) {
            const __m256i xv = _mm256_set1_epi32(lk_load_i32(xq + 4 * g));
            const __m256i from = type == LK_TYPE_Q5_0 ? _mm256_set1_epi32(neg[b * 8 + g]) : _mm256_setzero_si256();
            const __m256i p = lk_dpbusd256(from, _mm256_load_si256((const __m256i *)(tb + G_W + 32 * g)), xv);
            acc[g] = _mm256_fmadd_ps(dd, _mm256_cvtepi32_ps(p), acc[g]);
        }
        if (q81) summ = _mm256_fmadd_ps(_mm256_load_ps((const float *)(tb + G_M)), _mm256_set1_ps(xs[b]), summ);
    }
    const __m256 out = _mm256_add_ps(reduce8(acc), summ);
    if (nr == TR) _mm256_storeu_ps(y, out);
    else {
        float tmp[TR];
        _mm256_storeu_ps(tmp, out);
        memcpy(y, tmp, (size_t)nr * sizeof(float));
    }
}

INLINE int gemm32(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                  float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK;
    const int64_t chunk = n_tokens < CHUNK ? n_tokens : CHUNK;
    const size_t tile_bytes = (size_t)nb * G_STRIDE;
    uint8_t *scratch = lk_scratch(tile_bytes + (size_t)chunk * (size_t)nb * 40);
    if (!scratch) return 0;
    uint8_t *tile = scratch;
    float *dx = (float *)(scratch + tile_bytes);
    float *xs = dx + chunk * nb;
    int32_t *neg = (int32_t *)(xs + chunk * nb);
    const uint8_t *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xb + (size_t)t0 * xrb;
        prep_terms(type, xc, xrb, nt, nb, dx, xs, neg);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
            const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
            build_tile(type, wb + (size_t)r0 * wrb, wrb, nb, nr, tile);
            for (int64_t t = 0; t < nt; t++)
                tile_token(type, tile, nb, xc + (size_t)t * xrb, dx + t * nb, xs + t * nb, neg + t * nb * 8, y + (t0 + t) * ys + r0, nr);
        }
    }
    return 1;
}

LK_GEMM_ENTRY(gemm_q4_1, gemm32, LK_TYPE_Q4_1)
LK_GEMM_ENTRY(gemm_q5_0, gemm32, LK_TYPE_Q5_0)
LK_GEMM_ENTRY(gemm_q5_1, gemm32, LK_TYPE_Q5_1)

/* ---- Q8_0 gemm of its own order: one exact integer sum per (row, token, block), one float FMA ---- */

/* A Q8_0 tile of nr <= 8 rows: per block, w transposed at G_S (lane r of vector g = bytes 4g..4g+3 of row r,
 * zeros for rows >= nr), |w| (vpsignb(w, w)) likewise at G_W, the row scales at G_D. An 8x8 transpose of
 * s32 in registers (unpack 32, unpack 64, 128-bit permutes). */
INLINE void q8_build_tile(const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile) {
    for (int64_t b = 0; b < nb; b++) {
        __m256i r[TR];
        _Alignas(32) float d[TR];
        for (int k = 0; k < TR; k++) {
            r[k] = _mm256_setzero_si256();
            d[k] = 0.0f;
            if (k < nr) {
                const uint8_t *blk = w + (size_t)k * wrb + (size_t)b * sizeof(block_q8_0);
                r[k] = _mm256_loadu_si256((const __m256i *)(blk + 2));
                d[k] = h2f(lk_load_u16(blk));
            }
        }
        __m256i g[TR];
        transpose8_s32(r, g);
        uint8_t *tb = tile + b * G_STRIDE;
        for (int j = 0; j < TR; j++) {
            _mm256_store_si256((__m256i *)(tb + G_S + 32 * j), g[j]);
            _mm256_store_si256((__m256i *)(tb + G_W + 32 * j), _mm256_sign_epi8(g[j], g[j]));
        }
        memcpy(tb + G_D, d, sizeof d);
    }
}

/* The same tile from a group of 8 rows in the LK_ROWS8 layout (w: the group), whose vectors
 * are the tile's w already. */
INLINE void q8_build_tile_rows8(const uint8_t *w, int64_t nb, uint8_t *tile) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = w + lk_rows8_quants(b, QK);
        uint8_t *tb = tile + b * G_STRIDE;
        for (int g = 0; g < 8; g++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 32 * g));
            _mm256_store_si256((__m256i *)(tb + G_S + 32 * g), v);
            _mm256_store_si256((__m256i *)(tb + G_W + 32 * g), _mm256_sign_epi8(v, v));
        }
        _mm256_store_ps((float *)(tb + G_D), _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w + lk_rows8_scales(nb, b, QK)))));
    }
}

/* NT tokens × blocks [b0, b1) of one tile: y[row r] (+)= Σ_b (d_r·dx_b) · isum_rb, isum_rb = Σ over the
 * block's 32 elements of w·x (exact in s32: |.| <= 32·127·127); from b0 = 0 the sum starts at 0, else it goes
 * on from y (the same float steps as one pass). |w| is taken from w per pass (shared by NT tokens). Lane r of
 * each vector is row r. */
INLINE void q8_tile_tokens(const uint8_t *tile, int64_t b0, int64_t b1, const uint8_t *x, size_t xrb, const float *dx,
                           int64_t nbdx, float *y, int64_t ys, int nr, const int nt) {
    __m256 acc[NT8];
    for (int j = 0; j < nt; j++) {
        if (b0 == 0) acc[j] = _mm256_setzero_ps();
        else if (nr == TR) acc[j] = _mm256_loadu_ps(y + j * ys);
        else {
            float tmp[TR] = {0};
            memcpy(tmp, y + j * ys, (size_t)nr * sizeof(float));
            acc[j] = _mm256_loadu_ps(tmp);
        }
    }
    for (int64_t b = b0; b < b1; b++) {
        const uint8_t *tb = tile + b * G_STRIDE;
        const uint8_t *xq = x + (size_t)b * sizeof(block_q8_0) + 2;
        __m256i isum[NT8], odd[NT8]; /* odd: the odd groups' sums on AVX-VNNI (two vpdpbusd chains per token) */
        for (int j = 0; j < nt; j++) isum[j] = odd[j] = _mm256_setzero_si256();
        for (int g = 0; g < 8; g++) {
            const __m256i sg = _mm256_load_si256((const __m256i *)(tb + G_S + 32 * g));
            const __m256i a = _mm256_load_si256((const __m256i *)(tb + G_W + 32 * g));
            for (int j = 0; j < nt; j++) {
                const __m256i xv = _mm256_sign_epi8(_mm256_set1_epi32(lk_load_i32(xq + (size_t)j * xrb + 4 * g)), sg);
#ifdef LK_AVXVNNI
                if (g & 1) odd[j] = _mm256_dpbusd_avx_epi32(odd[j], a, xv);
                else isum[j] = _mm256_dpbusd_avx_epi32(isum[j], a, xv);
#else
                isum[j] = lk_dpbusd256(isum[j], a, xv);
#endif
            }
        }
#ifdef LK_AVXVNNI
        for (int j = 0; j < nt; j++) isum[j] = _mm256_add_epi32(isum[j], odd[j]);
#endif
        const __m256 d = _mm256_load_ps((const float *)(tb + G_D));
        for (int j = 0; j < nt; j++)
            acc[j] = _mm256_fmadd_ps(_mm256_mul_ps(d, _mm256_set1_ps(dx[j * nbdx + b])), _mm256_cvtepi32_ps(isum[j]), acc[j]);
    }
    for (int j = 0; j < nt; j++) lk_store_rows8(acc[j], y + j * ys, nr);
}

/* Either layout (PACKED: LK_ROWS8, rows in whole groups of 8). */
INLINE int gemm_q8_0_layout(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                            float *y, int64_t ys, int64_t row_begin, int64_t row_end, const int PACKED) {
    const int64_t nb = cols / QK;
    /* Tokens per tile build: as many as keep the chunk's activations within CHUNK8_BYTES (L2), 64 to 256. */
    int64_t chunk = xrb ? (int64_t)(CHUNK8_BYTES / xrb) / NT8 * NT8 : CHUNK8_MAX;
    chunk = chunk < CHUNK ? CHUNK : chunk > CHUNK8_MAX ? CHUNK8_MAX : chunk;
    if (n_tokens < chunk) chunk = n_tokens;
    const size_t tile_bytes = (size_t)nb * G_STRIDE;
    uint8_t *scratch = lk_scratch(tile_bytes + (size_t)chunk * (size_t)nb * 8);
    if (!scratch) return 0;
    uint8_t *tile = scratch;
    float *dx = (float *)(scratch + tile_bytes);
    float *xs = dx + chunk * nb;
    const uint8_t *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xb + (size_t)t0 * xrb;
        prep_terms(LK_TYPE_Q8_0, xc, xrb, nt, nb, dx, xs, NULL);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
            const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
            if (PACKED) q8_build_tile_rows8(wb + (size_t)r0 * wrb, nb, tile);
            else q8_build_tile(wb + (size_t)r0 * wrb, wrb, nb, nr, tile);
            for (int64_t b0 = 0; b0 < nb; b0 += KS8) {
                const int64_t b1 = nb - b0 < KS8 ? nb : b0 + KS8;
                int64_t t = 0;
                for (; t + NT8 <= nt; t += NT8)
                    q8_tile_tokens(tile, b0, b1, xc + (size_t)t * xrb, xrb, dx + t * nb, nb, y + (t0 + t) * ys + r0, ys, nr, NT8);
                switch (nt - t) {
                case 0: break;
#define Q8_TAIL(N)                                                                                                  \
    case N: q8_tile_tokens(tile, b0, b1, xc + (size_t)t * xrb, xrb, dx + t * nb, nb, y + (t0 + t) * ys + r0, ys, nr, N); break;
                    Q8_TAIL(1) Q8_TAIL(2) Q8_TAIL(3)
#undef Q8_TAIL
                }
            }
        }
    }
    return 1;
}

static int gemm_q8_0(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens, float *y,
                     int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_q8_0_layout(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, 0);
}

int lk_gemm_q8_0_rows8_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                            float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_q8_0_layout(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, 1);
}

#pragma clang attribute pop

LK_KERNELS(lk_avx2_prefill,
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_1, gemm_q4_1),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q5_0, gemm_q5_0),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q5_1, gemm_q5_1),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q4_1, gemm_q4_1),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q5_0, gemm_q5_0),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q5_1, gemm_q5_1),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q8_0, gemm_q8_0));

#else
LK_NO_KERNELS(lk_avx2_prefill);
#endif

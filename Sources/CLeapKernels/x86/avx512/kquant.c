/* Q4_K, Q5_K and Q6_K on AVX-512 VNNI: the one-token matrix × vector (decode) and the many-token matrix ×
 * matrix (prefill), both straight from the GGUF block layout. They do not follow llama.cpp's summation
 * order (reference/llama_order_kquant.c): every integer sum is exact, the float steps are fewer and in another
 * order, so results differ from llama.cpp's by float rounding only (the tests bound that: argmax agreement
 * and perplexity against llama.cpp and the scalar path).
 *
 * Per super-block of 256 weights (d, dmin, sub-block scales sc and mins m; x: the Q8_K activation block):
 *   Q4_K, Q5_K  y += dx · (d · Σ_j sc_j · Σ_{k in j} q_k·x_k  −  dmin · Σ_j m_j · bsum_j)   (j: 8 × 32)
 *   Q6_K        y += dx · d · Σ_g sc_g · (Σ_{k in g} q_k·x_k − 32 · bsum_g)              (g: 16 × 16)
 * q are the unsigned quants (0..15, 0..31, 0..63), so one vpdpbusd multiplies 64 of them with signed
 * activation bytes; the −32 of Q6_K goes through the activation sums.
 *
 * matvec  one row at a time (two in flight), the block's 256 quants unpacked in registers: four vpdpbusd
 *         of 64 products each, whose s32 lanes (sums of 4 products, |.| < 2^15) are scaled by their
 *         sub-block scale in a vpdpwssd (Q6_K: scale in the low s16 of each s32 lane, 0 in the high one;
 *         Q4_K/Q5_K: two product vectors packed to s16 pairs, times (sc, sc) pairs), then one float FMA
 *         per block. Q4_K/Q5_K activations are reordered once per call so that a 64-byte
 *         load of the quants (low nibbles of two chunks, then high ones) meets its activations directly.
 *         Rows are consecutive in memory: each thread reads one sequential stream.
 * few     Q4_K / Q5_K × 2..K4_FEW_MAX tokens: the matvec's blocks, each unpacked once and applied to up to
 *         K4_PASS tokens with the matvec's operations per (row, token), so a token stepped with others gets
 *         bit for bit what it gets alone.
 * gemm    16-row tiles unpacked once per token chunk into bytes and transposed so that s32 lane r of
 *         vector g holds quants 4g..4g+3 of row r, with d·sc per sub-block as float vectors; then per pass
 *         NT tokens: each tile vector feeds NT vpdpbusd (4 activation bytes broadcast), one float FMA per
 *         sub-block and token, the mins (Q4_K, Q5_K) as one vpdpwssd chain per block. The next tile's
 *         weights are prefetched into L2 while a tile is used.
 * rows8   Q4_K / Q5_K / Q6_K packed at load in the 8-row layout (LK_ROWS8): its 16-row tiles (two groups)
 *         are the gemm tile's lanes as they lie, 4-, 5- or 6-bit, so one kernel takes every token count with
 *         the gemm's operations per (row, token) and no tile to build (faster than the matvec for one token
 *         from DRAM and than the few-token kernel for 4); from
 *         R8_GEMM_MIN tokens the gemm on tiles built from the layout. Same bits as the gemm at every batch size.
 * Widths above KQ_MAX_BLOCKS blocks return 0 from the matvec (the caller falls back to the row kernels). */
#include "lk_internal.h"
#include "../lk_kquant_unpack.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stddef.h>
#include <stdlib.h>

#define INLINE static inline __attribute__((always_inline))

enum {
    KQ_MAX_BLOCKS = 64, /* matvec: reordered activations of up to 16384 columns on the stack (20 KB) */
    PREFETCH = 4096,    /* matvec: at least this many bytes ahead of the rows being read are prefetched, a
                           whole number of row pairs (lk_pair_prefetch_distance; none, or a fixed
                           distance, is slower from DRAM) */
    TR = 16,            /* gemm: weight rows per tile (s32 lanes) */
    CHUNK = 128,        /* gemm: tokens whose activation terms (and rows, in L2) are used per tile build */
    NT_K4 = 8,          /* gemm: tokens per pass over a Q4_K / Q5_K tile (one vpdpbusd chain per token and sub-block;
                           4 tokens with two chains each read a wide tile from L2 twice as often: slower) */
    NT_Q6 = 8,          /* gemm: tokens per pass over a Q6_K tile (faster than 4 and 6) */
    NT_PAIR = 4,        /* gemm: tokens per pass over two 16-row tiles at once (each activation word loaded once
                           for both; 6 is no faster) */
    KSLICE = 2,         /* gemm: blocks of the tiles that all the chunk's tokens pass over before the next ones, so
                           that they are read from L1 (with two tiles at once: less time per weight than one tile
                           over all blocks; whole tiles from L2 made the pair no faster) */
    NT = 8,             /* the largest of the three */
    MIN_K4 = 2,         /* gemm from this many tokens for Q4_K / Q5_K (below: the matvec); from 2 tokens it is
                           faster than the row kernels */
    MIN_Q6 = 4,         /* Q6_K: the row kernels are faster at 2-3 tokens */
    K4_PASS = 4,        /* few tokens: tokens per pass over a pair of Q4_K / Q5_K rows */
    K4_FEW_MAX = 7,     /* few tokens up to this many; from 8 the gemm is faster (in L2, per 256 weights and token:
                           4 tokens 6.0 against 8-9 tsc, 8 tokens 5.9 against 4.0) */
};

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#include "../lk_x86_avx512.h"

/* ================================ matvec (decode) ================================ */

/* Q4_K / Q5_K activations of one token in the order of the quants' 64-byte loads, block i at q + 256·i,
 * bs + 16·i, d[i]: for k = 0, 1 the low nibbles of qs[64k..64k+63] are elements [128k, +32) and
 * [128k + 64, +32), the high ones [128k + 32, +32) and [128k + 96, +32); bs: lanes 8..15 the 32-element sums
 * negated (sub-block j in lane 8 + j), lanes 0..7 zero. q and bs are 64-byte aligned. */
typedef struct {
    int8_t *q;   /* [nb][256] */
    int32_t *bs; /* [nb][16] */
    float *d;    /* [nb] */
} k4_activations;

INLINE void k4_reorder(const block_q8_K *x, int64_t nb, k4_activations a) {
    for (int64_t i = 0; i < nb; i++) {
        const int8_t *q = x[i].qs;
        for (int k = 0; k < 2; k++) {
            const __m256i e0 = _mm256_loadu_si256((const __m256i *)(q + 128 * k));
            const __m256i e1 = _mm256_loadu_si256((const __m256i *)(q + 128 * k + 32));
            const __m256i e2 = _mm256_loadu_si256((const __m256i *)(q + 128 * k + 64));
            const __m256i e3 = _mm256_loadu_si256((const __m256i *)(q + 128 * k + 96));
            _mm512_store_si512((void *)(a.q + QK_K * i + 128 * k), _mm512_inserti64x4(_mm512_castsi256_si512(e0), e2, 1));
            _mm512_store_si512((void *)(a.q + QK_K * i + 128 * k + 64), _mm512_inserti64x4(_mm512_castsi256_si512(e1), e3, 1));
        }
        for (int j = 0; j < 8; j++) {
            a.bs[16 * i + j] = 0;
            a.bs[16 * i + 8 + j] = -(x[i].bsums[2 * j] + x[i].bsums[2 * j + 1]);
        }
        a.d[i] = x[i].d;
    }
}

/* vpermd indices spreading scale lanes over the 16 s32 lanes of each product vector */
#define E8(v) v, v, v, v, v, v, v, v
#define E4(v) v, v, v, v
/* Q4_K / Q5_K, k = 0, 1: lane 4c + i of vpackssdw(lo, hi) products (128-bit chunk c) holds two sums of
 * sub-block 4k + 2·(c >= 2) + (i >= 2) */
static const int32_t k4_pair_idx[2][16] __attribute__((aligned(64))) = {
    {0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}, {4, 4, 5, 5, 4, 4, 5, 5, 6, 6, 7, 7, 6, 6, 7, 7}};
static const int32_t k4_dm_idx[16] __attribute__((aligned(64))) = {E8(0), E8(1)};
static const int32_t q6_idx[4][16] __attribute__((aligned(64))) = {
    {E4(0), E4(1), E4(2), E4(3)}, {E4(4), E4(5), E4(6), E4(7)}, {E4(8), E4(9), E4(10), E4(11)}, {E4(12), E4(13), E4(14), E4(15)}};
#undef E8
#undef E4

/* One Q4_K (q5 = 0) or Q5_K block unpacked once for all the tokens it meets: the quants as bytes in the
 * activations' order (lo, hi of k = 0, then of k = 1), the (sc, sc) pairs spread for each k, the scales and
 * mins as s32 lanes (0-7 sc_j, 8-15 m_j) and d, dmin spread over the same lanes (the per-token factor is then
 * one multiply). */
typedef struct {
    __m512i q[4], sc[2], scm;
    __m512 dm; /* lanes 0-7 d, 8-15 dmin */
} k4_unpacked;

INLINE k4_unpacked k4_unpack(const uint8_t *blk, const int q5) {
    const __m512i m4 = _mm512_set1_epi8(15);
    k4_unpacked u;
    u.scm = _mm512_cvtepu8_epi32(lk_k4_scales_mins(blk + 4));
    const __m512i sc2 = _mm512_or_si512(u.scm, _mm512_slli_epi32(u.scm, 16)); /* lanes 0-7: s16 pairs (sc_j, sc_j) */
    const uint8_t *qs = blk + (q5 ? 48 : 16);
    __m512i qh = _mm512_setzero_si512();
    if (q5) qh = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(blk + 16)));
    for (int k = 0; k < 2; k++) {
        const __m512i q = _mm512_loadu_si512((const void *)(qs + 64 * k));
        __m512i lo = _mm512_and_si512(q, m4), hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), m4);
        if (q5) { /* chunk c's 5th bits: qh bit 2c (low nibbles), 2c + 1 (high); this vector holds chunks 2k, 2k + 1 */
            const __m512i blo = _mm512_mask_blend_epi8(0xFFFFFFFF00000000ull, _mm512_set1_epi8((char)(1 << (4 * k))), _mm512_set1_epi8((char)(4 << (4 * k))));
            const __m512i bhi = _mm512_add_epi8(blo, blo);
            lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh, blo), lo, _mm512_set1_epi8(16));
            hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh, bhi), hi, _mm512_set1_epi8(16));
        }
        u.q[2 * k] = lo, u.q[2 * k + 1] = hi;
        u.sc[k] = _mm512_permutexvar_epi32(_mm512_load_si512((const void *)k4_pair_idx[k]), sc2);
    }
    u.dm = _mm512_permutexvar_ps(_mm512_load_si512((const void *)k4_dm_idx), _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128(lk_load_i32(blk)))));
    return u;
}

/* One unpacked block against one token's reordered block: acc += dx·(d·S − dmin·M) over the lanes. The
 * products of 4 (|.| <= 4·31·128 < 2^15) are packed to s16 pairs (vpackssdw, exact), so one vpdpwssd by the
 * (sc, sc) pairs scales 128 of them; S (reduced to 8 lanes) and −M then share one FMA. */
INLINE __m512 k4_token(const k4_unpacked *u, const int8_t *xq, const int32_t *bs, float dx, __m512 acc) {
    __m512i sumi = _mm512_setzero_si512();
    for (int k = 0; k < 2; k++) {
        const __m512i plo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u->q[2 * k], _mm512_load_si512((const void *)(xq + 128 * k)));
        const __m512i phi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u->q[2 * k + 1], _mm512_load_si512((const void *)(xq + 128 * k + 64)));
        sumi = _mm512_dpwssd_epi32(sumi, _mm512_packs_epi32(plo, phi), u->sc[k]);
    }
    const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sumi), _mm512_extracti64x4_epi64(sumi, 1));
    const __m512i v = _mm512_add_epi32(_mm512_madd_epi16(u->scm, _mm512_load_si512((const void *)bs)), _mm512_zextsi256_si512(s8)); /* S | −m_j·bsum_j */
    const __m512 f = _mm512_mul_ps(u->dm, _mm512_set1_ps(dx)); /* d·dx, dmin·dx in their lanes */
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), f, acc);
}

/* NR (1, 2) consecutive rows from w0 × NT tokens (token t's activations at t·nb blocks from a) → y[t·ys + r].
 * Each (row, token) goes through the same operations whatever NR and NT are, so a token multiplied with others
 * gets bit for bit what it gets alone. ahead > 0: prefetch that far ahead of the rows (the first pass over
 * them; later passes find them in L1). */
INLINE void k4_rows(const int q5, const uint8_t *w0, size_t ws, int64_t nb, const int NR, k4_activations a, size_t ahead,
                    float *y, int64_t ys, const int NT) {
    const size_t bb = q5 ? sizeof(block_q5_K) : sizeof(block_q4_K);
    __m512 acc[2][K4_PASS];
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) acc[r][t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        for (int r = 0; r < NR; r++) {
            const uint8_t *blk = w0 + (size_t)r * ws + (size_t)i * bb;
            if (ahead) lk_prefetch_block(blk, ahead, bb);
            const k4_unpacked u = k4_unpack(blk, q5);
            for (int t = 0; t < NT; t++) {
                const int64_t b = (int64_t)t * nb + i;
                acc[r][t] = k4_token(&u, a.q + QK_K * b, a.bs + 16 * b, a.d[b], acc[r][t]);
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) y[t * ys + r] = _mm512_reduce_add_ps(acc[r][t]);
}

INLINE int k4_matvec(const int q5, int64_t n, const void *vw, size_t ws, const void *vx, float *y, int64_t nrows) {
    const int64_t nb = n / QK_K;
    if (nb > KQ_MAX_BLOCKS) return 0;
    _Alignas(64) int8_t q[KQ_MAX_BLOCKS * QK_K];
    _Alignas(64) int32_t bs[KQ_MAX_BLOCKS * 16];
    float d[KQ_MAX_BLOCKS];
    const k4_activations a = {q, bs, d};
    k4_reorder(vx, nb, a);
    const uint8_t *w = vw;
    const size_t ahead = lk_pair_prefetch_distance(ws, PREFETCH);
    int64_t r = 0;
    for (; r + 2 <= nrows; r += 2) k4_rows(q5, w + (size_t)r * ws, ws, nb, 2, a, ahead, y + r, 0, 1);
    if (r < nrows) k4_rows(q5, w + (size_t)r * ws, ws, nb, 1, a, 0, y + r, 0, 1);
    return 1;
}

/* 2..K4_FEW_MAX tokens (more: 0, the caller takes the gemm): rows in pairs, each pair read once from memory
 * per call and applied to the tokens in passes of K4_PASS. The reordered activations (324 bytes per token and
 * block) live in the thread's scratch; 0 when it cannot grow. */
INLINE int k4_few(const int q5, int64_t cols, const void *vw, size_t ws, const void *vx, size_t xs, int64_t n_tokens,
                  float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens > K4_FEW_MAX) return 0;
    const int64_t nb = cols / QK_K;
    const size_t nq = (size_t)n_tokens * (size_t)nb;
    uint8_t *s = lk_scratch(nq * (QK_K + 16 * sizeof(int32_t) + sizeof(float)));
    if (!s) return 0;
    const k4_activations all = {(int8_t *)s, (int32_t *)(s + nq * QK_K), (float *)(s + nq * (QK_K + 16 * sizeof(int32_t)))};
    for (int64_t t = 0; t < n_tokens; t++) {
        const k4_activations at = {all.q + (size_t)t * nb * QK_K, all.bs + (size_t)t * nb * 16, all.d + t * nb};
        k4_reorder((const block_q8_K *)((const uint8_t *)vx + (size_t)t * xs), nb, at);
    }
    const uint8_t *w = vw;
    const size_t ahead = lk_pair_prefetch_distance(ws, PREFETCH);
    for (int64_t r = row_begin; r < row_end; r += 2) {
        const int nr = row_end - r >= 2 ? 2 : 1;
        for (int64_t t0 = 0; t0 < n_tokens; t0 += K4_PASS) {
            const int nt = n_tokens - t0 < K4_PASS ? (int)(n_tokens - t0) : K4_PASS;
            const k4_activations at = {all.q + (size_t)t0 * nb * QK_K, all.bs + (size_t)t0 * nb * 16, all.d + t0 * nb};
            const size_t pf = t0 == 0 && nr == 2 ? ahead : 0;
            float *yt = y + t0 * ys + r;
#define K4_ROWS(NT)                                                                                           \
    (nr == 2 ? k4_rows(q5, w + (size_t)r * ws, ws, nb, 2, at, pf, yt, ys, NT) : k4_rows(q5, w + (size_t)r * ws, ws, nb, 1, at, pf, yt, ys, NT))
            switch (nt) {
            case 1: K4_ROWS(1); break;
            case 2: K4_ROWS(2); break;
            case 3: K4_ROWS(3); break;
            default: K4_ROWS(4); break;
            }
#undef K4_ROWS
        }
    }
    return 1;
}

/* One Q6_K block against its activation block (natural order: a 64-byte load of ql gives 64 consecutive
 * elements in its low nibbles and the 64 after them in its high ones). */
INLINE __m512 q6_block(const block_q6_K *b, const block_q8_K *x, __m512 acc) {
    const __m512i m4 = _mm512_set1_epi8(15), m3 = _mm512_set1_epi8(3);
    const __m512i sh_lo = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(0), _mm512_set1_epi16(2));
    const __m512i sh_hi = _mm512_mask_blend_epi16(0xFFFF0000u, _mm512_set1_epi16(4), _mm512_set1_epi16(6));
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
    const __m512i scz = _mm512_cvtepu16_epi32(sc16); /* sc_g in the low s16 of lane g, 0 in the high one */
    __m512i sumi = _mm512_setzero_si512();
    for (int h = 0; h < 2; h++) {
        const __m512i L = _mm512_loadu_si512((const void *)(b->ql + 64 * h));
        const __m512i H = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(b->qh + 32 * h)));
        const __m512i qlo = _mm512_or_si512(_mm512_and_si512(L, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, sh_lo), m3), 4));
        const __m512i qhi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(L, 4), m4),
                                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(H, sh_hi), m3), 4));
        const __m512i plo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qlo, _mm512_loadu_si512((const void *)(x->qs + 128 * h)));
        const __m512i phi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), qhi, _mm512_loadu_si512((const void *)(x->qs + 128 * h + 64)));
        sumi = _mm512_dpwssd_epi32(sumi, plo, _mm512_permutexvar_epi32(_mm512_load_si512((const void *)q6_idx[2 * h]), scz));
        sumi = _mm512_dpwssd_epi32(sumi, phi, _mm512_permutexvar_epi32(_mm512_load_si512((const void *)q6_idx[2 * h + 1]), scz));
    }
    const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)x->bsums)); /* Σ sc·bsum pairs */
    sumi = _mm512_sub_epi32(sumi, _mm512_zextsi256_si512(_mm256_slli_epi32(corr, 5)));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi), _mm512_set1_ps(h2f(b->d) * x->d), acc);
}

static int matvec_q6_K(int64_t n, const void *vw, size_t ws, const void *vx, float *y, int64_t nrows) {
    const int64_t nb = n / QK_K;
    const block_q8_K *x = vx;
    const uint8_t *w = vw;
    const size_t ahead = lk_pair_prefetch_distance(ws, PREFETCH);
    int64_t r = 0;
    for (; r + 2 <= nrows; r += 2) {
        const block_q6_K *w0 = (const block_q6_K *)(w + (size_t)r * ws), *w1 = (const block_q6_K *)(w + (size_t)(r + 1) * ws);
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) {
            lk_prefetch_block(w0 + i, ahead, sizeof(block_q6_K));
            lk_prefetch_block(w1 + i, ahead, sizeof(block_q6_K));
            acc0 = q6_block(w0 + i, x + i, acc0);
            acc1 = q6_block(w1 + i, x + i, acc1);
        }
        y[r] = _mm512_reduce_add_ps(acc0);
        y[r + 1] = _mm512_reduce_add_ps(acc1);
    }
    for (; r < nrows; r++) {
        const block_q6_K *w0 = (const block_q6_K *)(w + (size_t)r * ws);
        __m512 acc0 = _mm512_setzero_ps();
        for (int64_t i = 0; i < nb; i++) acc0 = q6_block(w0 + i, x + i, acc0);
        y[r] = _mm512_reduce_add_ps(acc0);
    }
    return 1;
}

static int matvec_q4_K(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {
    return k4_matvec(0, n, vw, ws, x, y, nrows);
}
static int matvec_q5_K(int64_t n, const void *vw, size_t ws, const void *x, float *y, int64_t nrows) {
    return k4_matvec(1, n, vw, ws, x, y, nrows);
}
static int few_q4_K(int64_t cols, const void *w, size_t ws, const void *x, size_t xs, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    return k4_few(0, cols, w, ws, x, xs, n_tokens, y, ys, row_begin, row_end);
}
static int few_q5_K(int64_t cols, const void *w, size_t ws, const void *x, size_t xs, int64_t n_tokens, float *y,
                    int64_t ys, int64_t row_begin, int64_t row_end) {
    return k4_few(1, cols, w, ws, x, xs, n_tokens, y, ys, row_begin, row_end);
}

/* ================================ gemm (prefill) ================================ */

/* Tile layout per super-block: 64 byte vectors (lane r of vector g = quants 4g..4g+3 of row r, element
 * order), then float vectors d·sc of each sub-block (8 for Q4_K/Q5_K, 16 for Q6_K), then (Q4_K/Q5_K) 4
 * vectors of s16 pairs (m_2k, m_2k+1) and the dmin vector. */
enum { T_W = 0, T_DS = 4096, K4_MP = 4608, K4_DMIN = 4864, K4_STRIDE = 4928, Q6_STRIDE = 5120 };


/* One block's 256 unsigned quants in element order. */
INLINE void unpack_k4(const uint8_t *blk, const int q5, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15);
    const uint8_t *qs = blk + (q5 ? 48 : 16);
    const uint32_t *qh = (const uint32_t *)(blk + 16);
    __m256i hb = q5 ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) { /* chunk c: 32 low nibbles (5th bit: qh bit 2c), then 32 high (bit 2c + 1) */
        const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (q5) {
            lo = _mm256_mask_add_epi8(lo, _mm256_test_epi8_mask(hb, _mm256_set1_epi8((char)(1 << (2 * c)))), lo, _mm256_set1_epi8(16));
            hi = _mm256_mask_add_epi8(hi, _mm256_test_epi8_mask(hb, _mm256_set1_epi8((char)(2 << (2 * c)))), hi, _mm256_set1_epi8(16));
        }
        _mm256_store_si256((__m256i *)(out + 64 * c), lo);
        _mm256_store_si256((__m256i *)(out + 64 * c + 32), hi);
    }
}

/* The tile of nr <= 16 rows at w: its block i at tile + i·bstride */
INLINE void build_tile(int type, const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile, size_t bstride) {
    const int q6 = type == LK_TYPE_Q6_K, q5 = type == LK_TYPE_Q5_K;
    const size_t bb = lk_block_bytes(type);
    _Alignas(64) uint8_t rows[TR][QK_K];
    for (int r = nr; r < TR; r++) memset(rows[r], 0, QK_K);
    for (int64_t i = 0; i < nb; i++) {
        /* sv[r]: row r's factors, transposed below into the tile's vectors from T_DS on: Q6_K lanes 0-15
           d·sc_g; Q4_K / Q5_K lanes 0-7 d·sc_j, 8-11 the s16 pairs (m_2k, m_2k+1), 12 dmin, 13-15 zero */
        __m512i sv[TR];
        for (int r = 0; r < TR; r++) {
            sv[r] = _mm512_setzero_si512();
            if (r >= nr) continue;
            const uint8_t *blk = w + (size_t)r * wrb + (size_t)i * bb;
            if (q6) {
                const block_q6_K *b = (const block_q6_K *)blk;
                lk_unpack_q6_K(b, rows[r]);
                const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)b->scales)));
                sv[r] = _mm512_castps_si512(_mm512_mul_ps(sc, _mm512_set1_ps(h2f(b->d))));
            } else {
                unpack_k4(blk, q5, rows[r]);
                uint16_t dh, mh;
                memcpy(&dh, blk, 2);
                memcpy(&mh, blk + 2, 2);
                const __m128i sm = lk_k4_scales_mins(blk + 4); /* bytes 0-7 sc_j, 8-15 m_j */
                const __m512 sc = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sm));
                __m512i v = _mm512_castps_si512(_mm512_maskz_mul_ps(0xFF, sc, _mm512_set1_ps(h2f(dh))));
                v = _mm512_inserti32x4(v, _mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), 2);
                sv[r] = _mm512_inserti32x4(v, _mm_castps_si128(_mm_set_ss(h2f(mh))), 3);
            }
        }
        uint8_t *t = tile + (size_t)i * bstride;
        for (int s = 0; s < 4; s++) {
            __m512i v[16];
            for (int r = 0; r < TR; r++) v[r] = _mm512_load_si512((const void *)(rows[r] + 64 * s));
            lk_transpose16_epi32(v);
            for (int c = 0; c < 16; c++) _mm512_store_si512((void *)(t + T_W + 64 * (16 * s + c)), v[c]);
        }
        lk_transpose16_epi32(sv);
        for (int c = 0; c < (q6 ? 16 : 13); c++) _mm512_store_si512((void *)(t + T_DS + 64 * c), sv[c]);
    }
}

/* ---- the 8-row layout (Q4_K, Q5_K packed at load: rows8.c) ---- */

/* 16 lanes: 8 from a (32 bytes, group a's rows), 8 from b */
INLINE __m512i r8_lanes(const uint8_t *a, const uint8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)), _mm256_loadu_si256((const __m256i *)b), 1);
}

/* The heads of block i of 16 rows (ha, hb: the two groups' heads: words d | dmin << 16, u0, u1, u2 of the
 * packed scales, lk_k4_scales_mins) → ds[j] = d·sc_j, mp[k] = s16 pairs (m_2k, m_2k+1), dmin */
INLINE void k4r8_scales(const uint8_t *ha, const uint8_t *hb, __m512 *ds, __m512i *mp, __m512 *dmin) {
    const __m512i w0 = r8_lanes(ha, hb), u0 = r8_lanes(ha + 32, hb + 32), u1 = r8_lanes(ha + 64, hb + 64), u2 = r8_lanes(ha + 96, hb + 96);
    const __m512i m6 = _mm512_set1_epi8(0x3f), m4 = _mm512_set1_epi8(0x0f), m30 = _mm512_set1_epi8(0x30), b0 = _mm512_set1_epi32(255);
    const __m512i sc03 = _mm512_and_si512(u0, m6), m03 = _mm512_and_si512(u1, m6);
    const __m512i sc47 = _mm512_or_si512(_mm512_and_si512(u2, m4), _mm512_and_si512(_mm512_srli_epi32(u0, 2), m30));
    const __m512i m47 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(u2, 4), m4), _mm512_and_si512(_mm512_srli_epi32(u1, 2), m30));
    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(w0));
    *dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(w0, 16)));
    for (int j = 0; j < 4; j++) {
        ds[j] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(sc03, 8 * j), b0)), d);
        ds[4 + j] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(sc47, 8 * j), b0)), d);
    }
    const __m512i lo = _mm512_set4_epi32(0x800d800c, 0x80098008, 0x80058004, 0x80018000); /* bytes 0, 1 of each word to s16 */
    const __m512i hi = _mm512_set4_epi32(0x800f800e, 0x800b800a, 0x80078006, 0x80038002); /* bytes 2, 3 */
    mp[0] = _mm512_shuffle_epi8(m03, lo), mp[1] = _mm512_shuffle_epi8(m03, hi);
    mp[2] = _mm512_shuffle_epi8(m47, lo), mp[3] = _mm512_shuffle_epi8(m47, hi);
}

/* Quants 32j + 4v .. + 3 and 32(j + 1) + 4v .. + 3 (j even) of 16 rows (lane r: row r) of a block whose quant
 * vectors start at qa, qb: the low and high nibbles of vector 8·(j / 2) + v; Q5_K adds bits j and j + 1 of
 * fifth-bit vector v (h). */
INLINE void k4r8_nibbles(const uint8_t *qa, const uint8_t *qb, const int q5, const int j, const int v, const __m512i h,
                         __m512i *lo, __m512i *hi) {
    const size_t o = 32 * (size_t)((q5 ? 8 : 0) + 8 * (j / 2) + v);
    const __m512i w = r8_lanes(qa + o, qb + o), m4 = _mm512_set1_epi8(15);
    *lo = _mm512_and_si512(w, m4);
    *hi = _mm512_and_si512(_mm512_srli_epi16(w, 4), m4);
    if (q5) { /* bit j (j + 1) of each byte of h moved to bit 4: q | (h' & 16) */
        const __m512i b4 = _mm512_set1_epi8(16);
        const __m512i hl = j < 4 ? _mm512_slli_epi16(h, 4 - j) : _mm512_srli_epi16(h, j - 4);
        const __m512i hh = j < 3 ? _mm512_slli_epi16(h, 3 - j) : _mm512_srli_epi16(h, j - 3);
        *lo = _mm512_ternarylogic_epi32(*lo, hl, b4, 0xF8);
        *hi = _mm512_ternarylogic_epi32(*hi, hh, b4, 0xF8);
    }
}
/* the same with fifth-bit vector v loaded here */
INLINE void k4r8_quants(const uint8_t *qa, const uint8_t *qb, const int q5, const int j, const int v, __m512i *lo, __m512i *hi) {
    k4r8_nibbles(qa, qb, q5, j, v, q5 ? r8_lanes(qa + 32 * v, qb + 32 * v) : _mm512_setzero_si512(), lo, hi);
}

/* build_tile's tile of 16 rows from the 8-row layout (Q4_K / Q5_K; gb = ga for a last group alone, whose
 * lanes 8-15 are then copies): its vectors are the layout's lanes unpacked, its scale vectors the heads'. */
INLINE void build_tile_rows8(const int q5, const uint8_t *ga, const uint8_t *gb, int64_t nb, uint8_t *tile, size_t bstride) {
    const size_t qbytes = q5 ? 160 : 128;
    const int kt = q5 ? LK_TYPE_Q5_K : LK_TYPE_Q4_K;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *t = tile + (size_t)i * bstride;
        const uint8_t *qa = ga + lk_rows8_kblock(kt, i), *qb = gb + lk_rows8_kblock(kt, i);
        for (int j = 0; j < 8; j += 2)
            for (int v = 0; v < 8; v++) {
                __m512i lo, hi;
                k4r8_quants(qa, qb, q5, j, v, &lo, &hi);
                _mm512_store_si512((void *)(t + T_W + 64 * (8 * j + v)), lo);
                _mm512_store_si512((void *)(t + T_W + 64 * (8 * j + 8 + v)), hi);
            }
        __m512 ds[8], dmin;
        __m512i mp[4];
        k4r8_scales(qa + 8 * qbytes, qb + 8 * qbytes, ds, mp, &dmin);
        for (int j = 0; j < 8; j++) _mm512_store_ps((void *)(t + T_DS + 64 * j), ds[j]);
        for (int k = 0; k < 4; k++) _mm512_store_si512((void *)(t + K4_MP + 64 * k), mp[k]);
        _mm512_store_ps((void *)(t + K4_DMIN), dmin);
    }
}

/* Q6_K: the 16 d·sc_g of a block of 16 rows from its scale word vectors (wa, wb: scales 4k..4k+3 of each row)
 * and its f16 d (ha, hb: 8 side by side), as build_tile makes them */
INLINE void q6r8_scales(const uint8_t *wa, const uint8_t *wb, const uint8_t *ha, const uint8_t *hb, __m512 *ds) {
    const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)ha)), _mm_loadu_si128((const __m128i *)hb), 1);
    const __m512 d = _mm512_cvtph_ps(h);
    for (int k = 0; k < 4; k++) {
        const __m512i sc = r8_lanes(wa + 32 * k, wb + 32 * k);
        for (int c = 0; c < 4; c++) /* scale 4k + c: byte c of each lane, sign-extended */
            ds[4 * k + c] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srai_epi32(_mm512_slli_epi32(sc, 24 - 8 * c), 24)), d);
    }
}

/* Q6_K element 128h + 32m + l (sub-block g = 8h + 2m + l / 16) is the low (m < 2) or high nibble of ql byte
 * 64h + 32·(m & 1) + l with bits 2m, 2m + 1 of qh byte 32h + l above it: from the nibble vector l and the
 * high-bit vector hv of its lanes */
INLINE __m512i q6r8_combine(const __m512i l, const __m512i hv, const int m) {
    const __m512i m4 = _mm512_set1_epi8(15);
    const __m512i lo = (m >> 1) ? _mm512_and_si512(_mm512_srli_epi16(l, 4), m4) : _mm512_and_si512(l, m4);
    const __m512i hh = m < 2 ? _mm512_slli_epi16(hv, 4 - 2 * m) : _mm512_srli_epi16(hv, 2 * m - 4); /* bits 2m.. to 4.. */
    return _mm512_ternarylogic_epi32(lo, hh, _mm512_set1_epi8(0x30), 0xF8);                      /* lo | (hh & 0x30) */
}
/* ql and qh vector indices (of a block's 48) of quants 16g + 4v .. + 3 */
INLINE int q6r8_ql(int g, int v) { return 16 * (g / 8) + 8 * ((g % 8) / 2 & 1) + 4 * (g & 1) + v; }
INLINE int q6r8_qh(int g, int v) { return 32 + 8 * (g / 8) + 4 * (g & 1) + v; }
INLINE __m512i q6r8_quants(const uint8_t *qa, const uint8_t *qb, const int g, const int v) {
    const size_t ol = 32 * (size_t)q6r8_ql(g, v), oh = 32 * (size_t)q6r8_qh(g, v);
    return q6r8_combine(r8_lanes(qa + ol, qb + ol), r8_lanes(qa + oh, qb + oh), (g % 8) / 2);
}
enum { Q6R8_WORDS = 8 * offsetof(block_q6_K, scales), Q6R8_HALFS = 8 * offsetof(block_q6_K, d) }; /* offsets in a group's block of the scale vectors and d */

/* build_tile's Q6_K tile of 16 rows from the 8-row layout */
INLINE void build_tile_rows8_q6(const uint8_t *ga, const uint8_t *gb, int64_t nb, uint8_t *tile, size_t bstride) {
    for (int64_t i = 0; i < nb; i++) {
        uint8_t *t = tile + (size_t)i * bstride;
        const uint8_t *qa = ga + lk_rows8_kblock(LK_TYPE_Q6_K, i), *qb = gb + lk_rows8_kblock(LK_TYPE_Q6_K, i);
        for (int g = 0; g < 16; g++)
            for (int v = 0; v < 4; v++) _mm512_store_si512((void *)(t + T_W + 64 * (4 * g + v)), q6r8_quants(qa, qb, g, v));
        __m512 ds[16];
        q6r8_scales(qa + Q6R8_WORDS, qb + Q6R8_WORDS, qa + Q6R8_HALFS, qb + Q6R8_HALFS, ds);
        for (int g = 0; g < 16; g++) _mm512_store_ps((void *)(t + T_DS + 64 * g), ds[g]);
    }
}

/* n tokens (n <= NT; row t at x + t·xrb, terms at dx/terms + t·nb blocks) × blocks i0..i1 of `halves` 16-row
 * tiles whose blocks lie side by side (block i of half h at tile + (i·halves + h)·stride) → y[t·ys + 16h + 0..16)
 * (the last half's first nr lanes): from zero when i0 = 0, else on from the sums of blocks 0..i0 that y holds.
 * Each (row, token) goes through the same operations in the same order whatever the halves and block ranges. */
INLINE void tile_tokens(int type, const int halves, const uint8_t *tile, int64_t nb, int64_t i0, int64_t i1,
                        const uint8_t *x, size_t xrb, const float *dx, const int32_t *terms, float *y, int64_t ys,
                        int nr, const int n) {
    const int q6 = type == LK_TYPE_Q6_K;
    const size_t stride = q6 ? Q6_STRIDE : K4_STRIDE, ti = lk_kquant_term_ints(type);
    __mmask16 lanes[2];
    for (int h = 0; h < halves; h++) lanes[h] = h == halves - 1 ? (__mmask16)((1u << nr) - 1) : 0xFFFF;
    __m512 acc[2][NT];
    for (int h = 0; h < halves; h++)
        for (int t = 0; t < n; t++) acc[h][t] = i0 ? _mm512_maskz_loadu_ps(lanes[h], y + t * ys + 16 * h) : _mm512_setzero_ps();
    for (int64_t i = i0; i < i1; i++) {
        const uint8_t *tb = tile + (size_t)i * (size_t)halves * stride;
        const int8_t *xq[NT];
        for (int t = 0; t < n; t++) xq[t] = ((const block_q8_K *)(x + (size_t)t * xrb))[i].qs;
        __m512 blk[2][NT];
        for (int h = 0; h < halves; h++)
            for (int t = 0; t < n; t++) blk[h][t] = _mm512_setzero_ps();
        if (q6) {
            for (int g = 0; g < 16; g++) { /* 16-element sub-blocks: 4 vectors */
                __m512i is[2][NT];
                for (int t = 0; t < n; t++) {
                    const __m512i term = _mm512_set1_epi32(terms[((size_t)t * (size_t)nb + (size_t)i) * ti + (size_t)g]);
                    for (int h = 0; h < halves; h++) is[h][t] = term;
                }
                for (int v = 0; v < 4; v++) {
                    __m512i wv[2];
                    for (int h = 0; h < halves; h++) wv[h] = _mm512_load_si512((const void *)(tb + h * stride + T_W + 64 * (4 * g + v)));
                    for (int t = 0; t < n; t++) {
                        const __m512i xv = _mm512_set1_epi32(lk_load_i32(xq[t] + 16 * g + 4 * v));
                        for (int h = 0; h < halves; h++) is[h][t] = _mm512_dpbusd_epi32(is[h][t], wv[h], xv);
                    }
                }
                for (int h = 0; h < halves; h++) {
                    const __m512 ds = _mm512_load_ps((const void *)(tb + h * stride + T_DS + 64 * g));
                    for (int t = 0; t < n; t++) blk[h][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[h][t]), ds, blk[h][t]);
                }
            }
        } else {
            for (int j = 0; j < 8; j++) { /* 32-element sub-blocks: 8 vectors, one chain per token */
                __m512i is[2][NT];
                for (int h = 0; h < halves; h++)
                    for (int t = 0; t < n; t++) is[h][t] = _mm512_setzero_si512();
                for (int v = 0; v < 8; v++) {
                    __m512i wv[2];
                    for (int h = 0; h < halves; h++) wv[h] = _mm512_load_si512((const void *)(tb + h * stride + T_W + 64 * (8 * j + v)));
                    for (int t = 0; t < n; t++) {
                        const __m512i xv = _mm512_set1_epi32(lk_load_i32(xq[t] + 32 * j + 4 * v));
                        for (int h = 0; h < halves; h++) is[h][t] = _mm512_dpbusd_epi32(is[h][t], wv[h], xv);
                    }
                }
                for (int h = 0; h < halves; h++) {
                    const __m512 ds = _mm512_load_ps((const void *)(tb + h * stride + T_DS + 64 * j));
                    for (int t = 0; t < n; t++) blk[h][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[h][t]), ds, blk[h][t]);
                }
            }
            for (int h = 0; h < halves; h++) {
                const uint8_t *th = tb + h * stride;
                const __m512 dmin = _mm512_load_ps((const void *)(th + K4_DMIN));
                for (int t = 0; t < n; t++) {
                    const int32_t *bp = terms + ((size_t)t * (size_t)nb + (size_t)i) * ti;
                    __m512i m = _mm512_setzero_si512();
                    for (int k = 0; k < 4; k++) m = _mm512_dpwssd_epi32(m, _mm512_load_si512((const void *)(th + K4_MP + 64 * k)), _mm512_set1_epi32(bp[k]));
                    blk[h][t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), dmin, blk[h][t]);
                }
            }
        }
        for (int t = 0; t < n; t++) {
            const __m512 d = _mm512_set1_ps(dx[t * nb + i]);
            for (int h = 0; h < halves; h++) acc[h][t] = _mm512_fmadd_ps(blk[h][t], d, acc[h][t]);
        }
    }
    for (int h = 0; h < halves; h++)
        for (int t = 0; t < n; t++) _mm512_mask_storeu_ps(y + t * ys + 16 * h, lanes[h], acc[h][t]);
}

/* packed: w in the 8-row layout (Q4_K / Q5_K, row_begin and row_end multiples of 8) */
INLINE int kq_gemm(int type, const int packed, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb,
                   int64_t n_tokens, float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK_K;
    const int64_t chunk = n_tokens < CHUNK ? n_tokens : CHUNK;
    const size_t stride = type == LK_TYPE_Q6_K ? Q6_STRIDE : K4_STRIDE;
    const size_t tile_bytes = 2 * (size_t)nb * stride; /* two 16-row tiles */
    const size_t terms_bytes = (size_t)chunk * (size_t)nb * (sizeof(float) + lk_kquant_term_ints(type) * sizeof(int32_t));
    uint8_t *scratch = lk_scratch(tile_bytes + terms_bytes); /* the thread's, 64-byte aligned */
    if (!scratch) return 0;
    uint8_t *tile = scratch;
    float *dx = (float *)(scratch + tile_bytes);
    int32_t *terms = (int32_t *)(dx + chunk * nb);
    const uint8_t *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xb + (size_t)t0 * xrb;
        lk_kquant_prep_terms(type, xc, xrb, nt, nb, dx, terms);
        for (int64_t r0 = row_begin; r0 < row_end;) {
            /* two 16-row tiles at once while 32 rows are left, then one of up to 16 */
            const int halves = row_end - r0 >= 2 * TR ? 2 : 1;
            const int nr = halves == 2 || row_end - r0 >= TR ? TR : (int)(row_end - r0);
            const size_t bstride = (size_t)halves * stride;
            for (int h = 0; h < halves; h++) {
                const int64_t rh = r0 + h * TR;
                uint8_t *th = tile + (size_t)h * stride;
                if (packed && type == LK_TYPE_Q6_K)
                    build_tile_rows8_q6(wb + (size_t)rh * wrb, wb + (size_t)(nr > 8 ? rh + 8 : rh) * wrb, nb, th, bstride);
                else if (packed)
                    build_tile_rows8(type == LK_TYPE_Q5_K, wb + (size_t)rh * wrb, wb + (size_t)(nr > 8 ? rh + 8 : rh) * wrb, nb, th, bstride);
                else
                    build_tile(type, wb + (size_t)rh * wrb, wrb, nb, nr, th, bstride);
            }
            const int64_t r1 = r0 + (halves == 2 ? 2 * TR : nr);
            const int pass = halves == 2 ? NT_PAIR : type == LK_TYPE_Q6_K ? NT_Q6 : NT_K4;
            /* the weights of the tiles built next go to L2 while these are used, a share per pass (all at
               once when there is no full pass), so that their build reads no row from DRAM */
            const int64_t next = r1 < row_end ? r1 : (t0 + chunk < n_tokens ? row_begin : row_end);
            const uint8_t *pf = wb + (size_t)next * wrb;
            const uint8_t *pf_end = pf + (size_t)(row_end - next < 2 * TR ? row_end - next : 2 * TR) * wrb;
            const int64_t steps = nt / pass * ((nb + KSLICE - 1) / KSLICE);
            const size_t share = steps ? (size_t)(pf_end - pf) / (size_t)steps + 64 : (size_t)(pf_end - pf);
            if (!steps) lk_prefetch_l2(pf, pf_end);
            const size_t ti = lk_kquant_term_ints(type);
            for (int64_t i0 = 0; i0 < nb; i0 += KSLICE) {
                const int64_t i1 = nb - i0 < KSLICE ? nb : i0 + KSLICE;
                int64_t t = 0;
                for (; t + pass <= nt; t += pass) {
                    const uint8_t *to = (size_t)(pf_end - pf) < share ? pf_end : pf + share;
                    lk_prefetch_l2(pf, to);
                    pf = to;
                    const uint8_t *xt = xc + (size_t)t * xrb;
                    const int32_t *tt = terms + (size_t)t * (size_t)nb * ti;
                    float *yt = y + (t0 + t) * ys + r0;
                    if (halves == 2) tile_tokens(type, 2, tile, nb, i0, i1, xt, xrb, dx + t * nb, tt, yt, ys, nr, NT_PAIR);
                    else if (type == LK_TYPE_Q6_K) tile_tokens(type, 1, tile, nb, i0, i1, xt, xrb, dx + t * nb, tt, yt, ys, nr, NT_Q6);
                    else tile_tokens(type, 1, tile, nb, i0, i1, xt, xrb, dx + t * nb, tt, yt, ys, nr, NT_K4);
                }
                for (; t < nt; t++) {
                    const uint8_t *xt = xc + (size_t)t * xrb;
                    const int32_t *tt = terms + (size_t)t * (size_t)nb * ti;
                    float *yt = y + (t0 + t) * ys + r0;
                    if (halves == 2) tile_tokens(type, 2, tile, nb, i0, i1, xt, xrb, dx + t * nb, tt, yt, ys, nr, 1);
                    else tile_tokens(type, 1, tile, nb, i0, i1, xt, xrb, dx + t * nb, tt, yt, ys, nr, 1);
                }
            }
            r0 = r1;
        }
    }
    return 1;
}

#define KQ_GEMM(NAME, TYPE)                                                                                   \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,     \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                               \
        return kq_gemm(TYPE, 0, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);                      \
    }
KQ_GEMM(gemm_q4_K, LK_TYPE_Q4_K)
KQ_GEMM(gemm_q5_K, LK_TYPE_Q5_K)
KQ_GEMM(gemm_q6_K, LK_TYPE_Q6_K)
#undef KQ_GEMM

/* ============================ the 8-row layout: every token count ============================ */

/* Q4_K / Q5_K (and Q6_K, below) packed at load into the 8-row layout (LK_ROWS8, rows8.c): 16-row tiles of two
 * groups, whose vectors are the gemm tile's lanes as they lie in memory (4-bit, or 5-bit with the fifth bits'
 * vectors), so
 * that one kernel takes every token count with no tile to build: per block the heads give the gemm tile's
 * scale vectors (d·sc_j, the s16 pairs of mins, dmin), each nibble vector is unpacked in registers once per
 * pass of up to R8_PASS tokens, and every (row, token) goes through the gemm's operations in its order, so the
 * products are the gemm's bit for bit at any batch size. */

/* lines part, part + parts, .. (< lines) of the blocks at pa and pb */
INLINE void r8_prefetch_part(const uint8_t *pa, const uint8_t *pb, int lines, int part, int parts) {
    for (int l = part; l < lines; l += parts) {
        lk_prefetch_weights(pa + 64 * l);
        lk_prefetch_weights(pb + 64 * l);
    }
}

enum {
    R8_PASS = 8,      /* tokens per pass over a 16-row tile (their accumulators stay in registers) */
    R8_AHEAD = 4,     /* blocks ahead of the one being read that are prefetched (one token's pass) */
    R8_GEMM_MIN = 32, /* from this many tokens the gemm on tiles built from the layout (below it the tiles above are faster) */
};

/* The block R8_AHEAD blocks after block i of the tile at ga, gb: in this tile or in the next one (16 rows on,
 * at next); none (*pa = NULL) past that or without next */
INLINE void r8_ahead(int type, const uint8_t *ga, const uint8_t *gb, const uint8_t *next, size_t wrb, int64_t nb,
                     int64_t i, const uint8_t **pa, const uint8_t **pb) {
    const int64_t k = i + R8_AHEAD;
    *pa = *pb = NULL;
    if (!next) return;
    if (k < nb) *pa = ga + lk_rows8_kblock(type, k), *pb = gb + lk_rows8_kblock(type, k);
    else if (k - nb < nb) *pa = next + lk_rows8_kblock(type, k - nb), *pb = *pa + 8 * wrb;
}

/* n tokens (n <= R8_PASS; row t at x + t·xrb, terms at dx / terms + t·nb blocks) × the 16 rows of groups ga,
 * gb (gb = ga for a last group alone, then only `lanes` 0-7 are stored) → y[t·ys + 0..16) */
INLINE void k4r8_tile(const int q5, const uint8_t *ga, const uint8_t *gb, int64_t nb, const uint8_t *x, size_t xrb,
                      const float *dx, const int32_t *terms, float *y, int64_t ys, __mmask16 lanes, const uint8_t *next,
                      size_t wrb, const int n) {
    const size_t qbytes = q5 ? 160 : 128;
    const int kt = q5 ? LK_TYPE_Q5_K : LK_TYPE_Q4_K;
    __m512 acc[R8_PASS];
    for (int t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *qa = ga + lk_rows8_kblock(kt, i), *qb = gb + lk_rows8_kblock(kt, i);
        /* the block R8_AHEAD blocks on, prefetched a few lines per step of the loop over v (a block's lines at
           once stall the loads that wait for them) */
        const uint8_t *pa, *pb;
        r8_ahead(kt, ga, gb, next, wrb, nb, i, &pa, &pb);
        const int lines = (int)((8 * qbytes + 128) / 64);
        __m512 ds[8], dmin;
        __m512i mp[4];
        k4r8_scales(qa + 8 * qbytes, qb + 8 * qbytes, ds, mp, &dmin);
        const int8_t *xq[R8_PASS];
        for (int t = 0; t < n; t++) xq[t] = ((const block_q8_K *)(x + (size_t)t * xrb))[i].qs;
        __m512 blk[R8_PASS];
        for (int t = 0; t < n; t++) blk[t] = _mm512_setzero_ps();
        if (n == 1) { /* one chain per sub-block: each fifth-bit vector loaded once */
            __m512i is[8];
            for (int j = 0; j < 8; j++) is[j] = _mm512_setzero_si512();
            for (int v = 0; v < 8; v++) {
                if (pa) r8_prefetch_part(pa, pb, lines, v, 8);
                const __m512i h = q5 ? r8_lanes(qa + 32 * v, qb + 32 * v) : _mm512_setzero_si512();
                for (int j = 0; j < 8; j += 2) {
                    __m512i lo, hi;
                    k4r8_nibbles(qa, qb, q5, j, v, h, &lo, &hi);
                    is[j] = _mm512_dpbusd_epi32(is[j], lo, _mm512_set1_epi32(lk_load_i32(xq[0] + 32 * j + 4 * v)));
                    is[j + 1] = _mm512_dpbusd_epi32(is[j + 1], hi, _mm512_set1_epi32(lk_load_i32(xq[0] + 32 * j + 32 + 4 * v)));
                }
            }
            for (int j = 0; j < 8; j++) blk[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[j]), ds[j], blk[0]);
        } else {
            for (int j = 0; j < 8; j += 2) { /* sub-blocks j, j + 1 from the same nibble vectors */
                __m512i is[R8_PASS], is2[R8_PASS];
                for (int t = 0; t < n; t++) is[t] = is2[t] = _mm512_setzero_si512();
                for (int v = 0; v < 8; v++) {
                    if (pa && j == 0) r8_prefetch_part(pa, pb, lines, v, 8);
                    __m512i lo, hi;
                    k4r8_quants(qa, qb, q5, j, v, &lo, &hi);
                    for (int t = 0; t < n; t++) {
                        is[t] = _mm512_dpbusd_epi32(is[t], lo, _mm512_set1_epi32(lk_load_i32(xq[t] + 32 * j + 4 * v)));
                        is2[t] = _mm512_dpbusd_epi32(is2[t], hi, _mm512_set1_epi32(lk_load_i32(xq[t] + 32 * j + 32 + 4 * v)));
                    }
                }
                for (int t = 0; t < n; t++) blk[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[t]), ds[j], blk[t]);
                for (int t = 0; t < n; t++) blk[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is2[t]), ds[j + 1], blk[t]);
            }
        }
        for (int t = 0; t < n; t++) {
            const int32_t *bp = terms + ((size_t)t * (size_t)nb + (size_t)i) * 4;
            __m512i m = _mm512_setzero_si512();
            for (int k = 0; k < 4; k++) m = _mm512_dpwssd_epi32(m, mp[k], _mm512_set1_epi32(bp[k]));
            blk[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), dmin, blk[t]);
            acc[t] = _mm512_fmadd_ps(blk[t], _mm512_set1_ps(dx[t * nb + i]), acc[t]);
        }
    }
    for (int t = 0; t < n; t++) _mm512_mask_storeu_ps(y + t * ys, lanes, acc[t]);
}

/* Q6_K: n tokens × the 16 rows of groups ga, gb (as k4r8_tile), the gemm's operations per (row, token) */
INLINE void q6r8_tile(const uint8_t *ga, const uint8_t *gb, int64_t nb, const uint8_t *x, size_t xrb, const float *dx,
                      const int32_t *terms, float *y, int64_t ys, __mmask16 lanes, const uint8_t *next, size_t wrb, const int n) {
    __m512 acc[R8_PASS];
    for (int t = 0; t < n; t++) acc[t] = _mm512_setzero_ps();
    const int lines = (int)((8 * sizeof(block_q6_K) + 63) / 64 + 1); /* a group's block starts anywhere in a line */
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *qa = ga + lk_rows8_kblock(LK_TYPE_Q6_K, i), *qb = gb + lk_rows8_kblock(LK_TYPE_Q6_K, i);
        const uint8_t *pa, *pb; /* prefetched as in k4r8_tile */
        r8_ahead(LK_TYPE_Q6_K, ga, gb, next, wrb, nb, i, &pa, &pb);
        __m512 ds[16];
        q6r8_scales(qa + Q6R8_WORDS, qb + Q6R8_WORDS, qa + Q6R8_HALFS, qb + Q6R8_HALFS, ds);
        const int8_t *xq[R8_PASS];
        for (int t = 0; t < n; t++) xq[t] = ((const block_q8_K *)(x + (size_t)t * xrb))[i].qs;
        const int32_t *tb = terms + (size_t)i * 16; /* token t's at tb + t·nb·16 */
        __m512 blk[R8_PASS];
        for (int t = 0; t < n; t++) blk[t] = _mm512_setzero_ps();
        if (n == 1) { /* one chain per sub-block: each nibble and high-bit vector loaded once */
            __m512i is[16];
            for (int g = 0; g < 16; g++) is[g] = _mm512_set1_epi32(tb[g]);
            for (int s = 0; s < 16; s++) { /* s = 8h + 4·g1 + v */
                const int h = s / 8, g1 = (s / 4) % 2, v = s % 4;
                if (pa) r8_prefetch_part(pa, pb, lines, s, 16);
                const int g0 = 8 * h + g1;
                const size_t o0 = 32 * (size_t)q6r8_ql(g0, v), o1 = 32 * (size_t)q6r8_ql(g0 + 2, v), oh = 32 * (size_t)q6r8_qh(g0, v);
                const __m512i l0 = r8_lanes(qa + o0, qb + o0), l1 = r8_lanes(qa + o1, qb + o1), hv = r8_lanes(qa + oh, qb + oh);
                for (int m = 0; m < 4; m++) {
                    const int g = g0 + 2 * m;
                    is[g] = _mm512_dpbusd_epi32(is[g], q6r8_combine(m & 1 ? l1 : l0, hv, m), _mm512_set1_epi32(lk_load_i32(xq[0] + 16 * g + 4 * v)));
                }
            }
            for (int g = 0; g < 16; g++) blk[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[g]), ds[g], blk[0]);
        } else {
            for (int g = 0; g < 16; g++) {
                __m512i is[R8_PASS];
                for (int t = 0; t < n; t++) is[t] = _mm512_set1_epi32(tb[(size_t)t * (size_t)nb * 16 + (size_t)g]);
                for (int v = 0; v < 4; v++) {
                    if (pa && g % 4 == 0) r8_prefetch_part(pa, pb, lines, 4 * (g / 4) + v, 16);
                    const __m512i q = q6r8_quants(qa, qb, g, v);
                    for (int t = 0; t < n; t++) is[t] = _mm512_dpbusd_epi32(is[t], q, _mm512_set1_epi32(lk_load_i32(xq[t] + 16 * g + 4 * v)));
                }
                for (int t = 0; t < n; t++) blk[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(is[t]), ds[g], blk[t]);
            }
        }
        for (int t = 0; t < n; t++) acc[t] = _mm512_fmadd_ps(blk[t], _mm512_set1_ps(dx[t * nb + i]), acc[t]);
    }
    for (int t = 0; t < n; t++) _mm512_mask_storeu_ps(y + t * ys, lanes, acc[t]);
}

/* Q4_K, Q5_K, Q6_K in the 8-row layout, any token count: below R8_GEMM_MIN tokens the tile kernels above in
 * passes of R8_PASS tokens over each 16-row tile, from it the gemm on tiles built from the layout */
INLINE int kq_rows8(const int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens >= R8_GEMM_MIN) return kq_gemm(type, 1, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);
    const int64_t nb = cols / QK_K;
    const size_t ti = lk_kquant_term_ints(type);
    float *dx = lk_scratch((size_t)n_tokens * (size_t)nb * (sizeof(float) + ti * sizeof(int32_t)));
    if (!dx) return 0;
    int32_t *terms = (int32_t *)(dx + n_tokens * nb);
    lk_kquant_prep_terms(type, x, xrb, n_tokens, nb, dx, terms);
    const uint8_t *wb = w, *xb = x;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += 16) {
        const uint8_t *ga = wb + (size_t)r0 * wrb, *gb = r0 + 8 < row_end ? ga + 8 * wrb : ga;
        const __mmask16 lanes = r0 + 8 < row_end ? 0xFFFF : 0x00FF;
        for (int64_t t = 0; t < n_tokens; t += R8_PASS) {
            const uint8_t *next = t == 0 && r0 + 32 <= row_end ? ga + 16 * wrb : NULL; /* prefetched on the first pass */
            const int n = n_tokens - t < R8_PASS ? (int)(n_tokens - t) : R8_PASS;
            const uint8_t *xt = xb + (size_t)t * xrb;
            const int32_t *tt = terms + (size_t)t * (size_t)nb * ti;
            float *yt = y + t * ys + r0;
#define R8_TILE(N)                                                                                            \
    (type == LK_TYPE_Q6_K ? q6r8_tile(ga, gb, nb, xt, xrb, dx + t * nb, tt, yt, ys, lanes, next, wrb, N)      \
                          : k4r8_tile(type == LK_TYPE_Q5_K, ga, gb, nb, xt, xrb, dx + t * nb, tt, yt, ys, lanes, next, wrb, N))
            switch (n) {
            case 1: R8_TILE(1); break;
            case 2: R8_TILE(2); break;
            case 3: R8_TILE(3); break;
            case 4: R8_TILE(4); break;
            case 5: R8_TILE(5); break;
            case 6: R8_TILE(6); break;
            case 7: R8_TILE(7); break;
            default: R8_TILE(8); break;
            }
#undef R8_TILE
        }
    }
    return 1;
}

#define KQ_ROWS8(NAME, TYPE)                                                                                  \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,     \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                               \
        return kq_rows8(TYPE, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);                     \
    }
KQ_ROWS8(rows8_q4_K, LK_TYPE_Q4_K)
KQ_ROWS8(rows8_q5_K, LK_TYPE_Q5_K)
KQ_ROWS8(rows8_q6_K, LK_TYPE_Q6_K)
#undef KQ_ROWS8

#pragma clang attribute pop

LK_KERNELS(lk_avx512_kquant,
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q4_K, matvec_q4_K),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q5_K, matvec_q5_K),
    LK_KERNEL(LK_E_MATVEC, LK_TYPE_Q6_K, matvec_q6_K),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_K, few_q4_K),
    LK_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q5_K, few_q5_K),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q4_K, gemm_q4_K, MIN_K4),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q5_K, gemm_q5_K, MIN_K4),
    LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q6_K, gemm_q6_K, MIN_Q6),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_K, rows8_q4_K),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q5_K, rows8_q5_K),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q6_K, rows8_q6_K));

#else
LK_NO_KERNELS(lk_avx512_kquant);
#endif

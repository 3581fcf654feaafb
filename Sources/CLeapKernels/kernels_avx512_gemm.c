/* AVX-512 VNNI matrix × matrix (prefill) for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K and Q6_K: one lk_matmul
 * call with many tokens.
 *
 * The row kernels (kernels_avx512_impl.h) give each (row, token) pair its own vector accumulator, so every
 * 64 multiply-adds pay for an unpack share, a scale conversion, a lane permute and a horizontal sum at the
 * end: about 8 instructions per vpdpbusd. Here the vector runs over 16 weight rows instead:
 *
 *   tile   16 rows × (cols) weights unpacked once per call to unsigned bytes and transposed so that s32 lane r
 *          of vector g holds bytes 4g..4g+3 of row r, plus the per-row scales as 16-float vectors;
 *   token  each 4 activation bytes are broadcast from the Q8 row straight into vpdpbusd, so one vpdpbusd
 *          is 64 multiply-adds for 16 rows, and one FMA per block applies the 16 scale products;
 *   output lane r of a token's accumulator is Y[t, r0 + r]: a plain vector store, no horizontal sum.
 *
 * Weights become unsigned bytes u = q + offset (Q4_0: 8, Q5_0: 16, Q8_0: 128 (u = q ⊕ 0x80), K-quants and
 * Q4_1/Q5_1: 0); the offset term −offset·Σx (per token and block, computed once per call) starts each
 * block's integer accumulator. Every block's integer dot product is exact, as in ggml; only the order of the
 * float sums over blocks differs from the row kernels (a few ulp).
 *
 * Per call the scratch holds one tile and the per-token block terms of up to CHUNK tokens (heap: about
 * cols/32 · 640 B + CHUNK · cols/32 · 8 B); if malloc fails the caller falls back to the row kernels. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>
#include <stdlib.h>

#define INLINE static inline __attribute__((always_inline))

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)

enum {
    TR = 16,     /* weight rows per tile (s32 lanes) */
    CHUNK = 512, /* tokens whose block terms are prepared at once */
};

INLINE int32_t load_i32(const void *p) { int32_t v; memcpy(&v, p, 4); return v; }
INLINE uint16_t load_u16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }
INLINE float h2f(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }
INLINE __m512i bcast32(const void *p) { return _mm512_set1_epi32(load_i32(p)); }

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

/* ================================== 32-element blocks ================================== */

/* Tile layout per block: 8 byte vectors, then the 16 row scales d, then (Q4_1/Q5_1) the 16 mins m. */
enum { B32_W = 0, B32_D = 512, B32_M = 576, B32_STRIDE = 640 };

/* One weight block → 32 unsigned bytes in element order. */
INLINE __m256i unpack32(int type, const uint8_t *blk) {
    const __m256i m4 = _mm256_set1_epi8(15);
    if (type == LK_TYPE_Q8_0)
        return _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)((const block_q8_0 *)blk)->qs), _mm256_set1_epi8((char)0x80));
    const uint8_t *qs = type == LK_TYPE_Q4_0 ? ((const block_q4_0 *)blk)->qs
                      : type == LK_TYPE_Q4_1 ? ((const block_q4_1 *)blk)->qs
                      : type == LK_TYPE_Q5_0 ? ((const block_q5_0 *)blk)->qs
                                             : ((const block_q5_1 *)blk)->qs;
    const __m128i q = _mm_loadu_si128((const __m128i *)qs);
    const __m256i nib = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), m4);
    if (type == LK_TYPE_Q5_0 || type == LK_TYPE_Q5_1) {
        /* bit j of qh is the 5th bit of element j */
        const uint32_t qh = (uint32_t)load_i32(type == LK_TYPE_Q5_0 ? ((const block_q5_0 *)blk)->qh : ((const block_q5_1 *)blk)->qh);
        return _mm256_mask_add_epi8(nib, (__mmask32)qh, nib, _mm256_set1_epi8(16));
    }
    return nib;
}

INLINE void build_tile32(int type, const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile) {
    const size_t bb = lk_block_bytes(type);
    const int has_m = type == LK_TYPE_Q4_1 || type == LK_TYPE_Q5_1;
    _Alignas(64) uint8_t rows[TR * 32];
    _Alignas(64) float d[TR], m[TR];
    for (int64_t b = 0; b < nb; b++) {
        for (int r = 0; r < TR; r++) {
            if (r < nr) {
                const uint8_t *blk = w + (size_t)r * wrb + (size_t)b * bb;
                _mm256_store_si256((__m256i *)(rows + 32 * r), unpack32(type, blk));
                d[r] = h2f(load_u16(blk));
                m[r] = has_m ? h2f(load_u16(blk + 2)) : 0.0f;
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

/* Per token and block: dx (activation scale) and c (Q8_0 activations: −offset·Σx as an int32 bit pattern;
 * Q8_1: its s = dx·Σx as a float). */
INLINE void prep_terms32(int type, const uint8_t *x, size_t xrb, int64_t nt, int64_t nb, float *dx, int32_t *c) {
    const int q81 = lk_activation_type(type) == LK_TYPE_Q8_1;
    const size_t xb = q81 ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const int offset = type == LK_TYPE_Q4_0 ? 8 : type == LK_TYPE_Q5_0 ? 16 : type == LK_TYPE_Q8_0 ? 128 : 0;
    for (int64_t t = 0; t < nt; t++) {
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = x + (size_t)t * xrb + (size_t)b * xb;
            dx[t * nb + b] = h2f(load_u16(blk));
            if (q81) {
                const float s = h2f(load_u16(blk + 2));
                memcpy(&c[t * nb + b], &s, 4);
            } else {
                /* Σ(x + 128) over the 32 bytes by vpsadbw, minus 32·128 */
                const __m256i v = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(blk + 2)), _mm256_set1_epi8((char)0x80));
                const __m256i s4 = _mm256_sad_epu8(v, _mm256_setzero_si256());
                const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s4), _mm256_extracti128_si256(s4, 1));
                const int sum = (int)(_mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1)) - 32 * 128;
                c[t * nb + b] = -offset * sum;
            }
        }
    }
}

/* NT tokens (x row t at x + t·xrb, terms at dx/c + t·nb) × one tile → Y[t, 0..nr) at y + t·ys. */
INLINE void tile32_tokens(int type, const uint8_t *tile, int64_t nb, const uint8_t *x, size_t xrb, const float *dx,
                          const int32_t *c, float *y, int64_t ys, int nr, const int NT) {
    const int q81 = type == LK_TYPE_Q4_1 || type == LK_TYPE_Q5_1;
    const size_t xb = q81 ? sizeof(block_q8_1) : sizeof(block_q8_0), qs_off = q81 ? 4 : 2;
    __m512 acc[8];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *tb = tile + b * B32_STRIDE;
        __m512i ip[8];
        for (int t = 0; t < NT; t++) ip[t] = q81 ? _mm512_setzero_si512() : _mm512_set1_epi32(c[t * nb + b]);
        for (int g = 0; g < 8; g++) {
            const __m512i wv = _mm512_load_si512((const void *)(tb + B32_W + 64 * g));
            for (int t = 0; t < NT; t++)
                ip[t] = _mm512_dpbusd_epi32(ip[t], wv, bcast32(x + (size_t)t * xrb + (size_t)b * xb + qs_off + 4 * g));
        }
        const __m512 d = _mm512_load_ps((const float *)(tb + B32_D));
        for (int t = 0; t < NT; t++)
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ip[t]), _mm512_mul_ps(d, _mm512_set1_ps(dx[t * nb + b])), acc[t]);
        if (q81) {
            const __m512 m = _mm512_load_ps((const float *)(tb + B32_M));
            for (int t = 0; t < NT; t++) {
                float s;
                memcpy(&s, &c[t * nb + b], 4);
                acc[t] = _mm512_fmadd_ps(m, _mm512_set1_ps(s), acc[t]);
            }
        }
    }
    for (int t = 0; t < NT; t++) store_rows(y + t * ys, acc[t], nr);
}

/* ================================== K-quants (256) ================================== */

/* Tile layout per super-block: 64 byte vectors (the 256 weights), then per-row integer vectors. */
enum {
    K_W = 0,
    /* Q4_K: 8 scale vectors (s32), 8 min vectors (s16 pairs m,m), d, dmin */
    Q4K_SC = 4096, Q4K_M = 4608, Q4K_D = 5120, Q4K_DMIN = 5184, Q4K_STRIDE = 5248,
    /* Q6_K: 16 scale vectors (s32), 8 scale-pair vectors (s16 pairs sc[2k], sc[2k+1]), d */
    Q6K_SC = 4096, Q6K_SP = 5120, Q6K_D = 5632, Q6K_STRIDE = 5696,
};

INLINE void unpack_q4_K(const block_q4_K *b, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int j = 0; j < 4; j++) { /* 64 elements: low nibbles of 32 bytes, then high */
        const __m256i q = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * j));
        _mm256_store_si256((__m256i *)(out + 64 * j), _mm256_and_si256(q, m4));
        _mm256_store_si256((__m256i *)(out + 64 * j + 32), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
    }
}

INLINE void unpack_q6_K(const block_q6_K *b, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) { /* 128 elements from ql[64], qh[32] */
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
        const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4);
        const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4);
        const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4);
        const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4);
        uint8_t *o = out + 128 * h;
        _mm256_store_si256((__m256i *)(o), _mm256_or_si256(_mm256_and_si256(l0, m4), h0));
        _mm256_store_si256((__m256i *)(o + 32), _mm256_or_si256(_mm256_and_si256(l1, m4), h1));
        _mm256_store_si256((__m256i *)(o + 64), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), h2));
        _mm256_store_si256((__m256i *)(o + 96), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4), h3));
    }
}

INLINE int32_t pair16(int a, int b) { return (int32_t)(((uint32_t)(uint16_t)(int16_t)b << 16) | (uint16_t)(int16_t)a); }

INLINE void build_tileK(int type, const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile) {
    const int stride = type == LK_TYPE_Q4_K ? Q4K_STRIDE : Q6K_STRIDE;
    _Alignas(64) uint8_t rows[TR * QK_K];
    _Alignas(64) int32_t sc[16][TR], sp[8][TR];
    _Alignas(64) float d[TR], dmin[TR];
    for (int64_t i = 0; i < nb; i++) {
        for (int r = 0; r < TR; r++) {
            if (r >= nr) {
                memset(rows + QK_K * r, 0, QK_K);
                for (int j = 0; j < 16; j++) sc[j][r] = 0;
                for (int j = 0; j < 8; j++) sp[j][r] = 0;
                d[r] = dmin[r] = 0.0f;
                continue;
            }
            if (type == LK_TYPE_Q4_K) {
                const block_q4_K *b = (const block_q4_K *)(w + (size_t)r * wrb) + i;
                unpack_q4_K(b, rows + QK_K * r);
                for (int j = 0; j < 8; j++) {
                    uint8_t s, m;
                    lk_get_scale_min_k4(j, b->scales, &s, &m);
                    sc[j][r] = s;
                    sp[j][r] = pair16(m, m);
                }
                d[r] = h2f(b->d);
                dmin[r] = h2f(b->dmin);
            } else {
                const block_q6_K *b = (const block_q6_K *)(w + (size_t)r * wrb) + i;
                unpack_q6_K(b, rows + QK_K * r);
                for (int j = 0; j < 16; j++) sc[j][r] = b->scales[j];
                for (int k = 0; k < 8; k++) sp[k][r] = pair16(b->scales[2 * k], b->scales[2 * k + 1]);
                d[r] = h2f(b->d);
            }
        }
        uint8_t *t = tile + i * stride;
        transpose_rows(rows, QK_K, t + K_W);
        if (type == LK_TYPE_Q4_K) {
            for (int j = 0; j < 8; j++) memcpy(t + Q4K_SC + 64 * j, sc[j], 64);
            for (int j = 0; j < 8; j++) memcpy(t + Q4K_M + 64 * j, sp[j], 64);
            memcpy(t + Q4K_D, d, 64);
            memcpy(t + Q4K_DMIN, dmin, 64);
        } else {
            for (int j = 0; j < 16; j++) memcpy(t + Q6K_SC + 64 * j, sc[j], 64);
            for (int k = 0; k < 8; k++) memcpy(t + Q6K_SP + 64 * k, sp[k], 64);
            memcpy(t + Q6K_D, d, 64);
        }
    }
}

/* Σ over the 4·n byte groups from g0 of one token: two accumulators to halve the dependency chain. */
INLINE __m512i dot_groups(const uint8_t *tw, const uint8_t *xq, int g0, int n) {
    __m512i a = _mm512_setzero_si512(), b = _mm512_setzero_si512();
    for (int g = 0; g < n; g += 2) {
        a = _mm512_dpbusd_epi32(a, _mm512_load_si512((const void *)(tw + 64 * (g0 + g))), bcast32(xq + 4 * (g0 + g)));
        b = _mm512_dpbusd_epi32(b, _mm512_load_si512((const void *)(tw + 64 * (g0 + g + 1))), bcast32(xq + 4 * (g0 + g + 1)));
    }
    return _mm512_add_epi32(a, b);
}

/* NT tokens (Q8_K rows) × one Q4_K or Q6_K tile. ggml's integer sums per super-block:
 *   Q4_K: d·dx·Σ_j sc_j·(q·x)_j − dmin·dx·Σ_j m_j·Σx_j     (8 sub-blocks of 32)
 *   Q6_K: d·dx·Σ_j sc_j·((q·x)_j − 32·Σx_j)                 (16 sub-blocks of 16, q = 0..63) */
INLINE void tileK_tokens(int type, const uint8_t *tile, int64_t nb, const uint8_t *x, size_t xrb, float *y, int64_t ys,
                         int nr, const int NT) {
    const int stride = type == LK_TYPE_Q4_K ? Q4K_STRIDE : Q6K_STRIDE;
    __m512 acc[4];
    for (int t = 0; t < NT; t++) acc[t] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *tb = tile + i * stride;
        __m512i sumi[4], summ[4];
        for (int t = 0; t < NT; t++) sumi[t] = summ[t] = _mm512_setzero_si512();
        if (type == LK_TYPE_Q4_K) {
            for (int j = 0; j < 8; j++) {
                const __m512i sc = _mm512_load_si512((const void *)(tb + Q4K_SC + 64 * j));
                const __m512i mp = _mm512_load_si512((const void *)(tb + Q4K_M + 64 * j));
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *xk = (const block_q8_K *)(x + (size_t)t * xrb) + i;
                    const __m512i p = dot_groups(tb + K_W, (const uint8_t *)xk->qs, 8 * j, 8);
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(p, sc));
                    summ[t] = _mm512_dpwssd_epi32(summ[t], mp, bcast32(&xk->bsums[2 * j]));
                }
            }
            const __m512 d = _mm512_load_ps((const float *)(tb + Q4K_D));
            const __m512 dmin = _mm512_load_ps((const float *)(tb + Q4K_DMIN));
            for (int t = 0; t < NT; t++) {
                const __m512 dx = _mm512_set1_ps(((const block_q8_K *)(x + (size_t)t * xrb) + i)->d);
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sumi[t]), _mm512_mul_ps(d, dx), acc[t]);
                acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(summ[t]), _mm512_mul_ps(dmin, dx), acc[t]);
            }
        } else {
            for (int j = 0; j < 16; j++) {
                const __m512i sc = _mm512_load_si512((const void *)(tb + Q6K_SC + 64 * j));
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *xk = (const block_q8_K *)(x + (size_t)t * xrb) + i;
                    const __m512i p = dot_groups(tb + K_W, (const uint8_t *)xk->qs, 4 * j, 4);
                    sumi[t] = _mm512_add_epi32(sumi[t], _mm512_mullo_epi32(p, sc));
                }
            }
            for (int k = 0; k < 8; k++) {
                const __m512i sp = _mm512_load_si512((const void *)(tb + Q6K_SP + 64 * k));
                for (int t = 0; t < NT; t++) {
                    const block_q8_K *xk = (const block_q8_K *)(x + (size_t)t * xrb) + i;
                    summ[t] = _mm512_dpwssd_epi32(summ[t], sp, bcast32(&xk->bsums[2 * k]));
                }
            }
            const __m512 d = _mm512_load_ps((const float *)(tb + Q6K_D));
            for (int t = 0; t < NT; t++) {
                const __m512 dx = _mm512_set1_ps(((const block_q8_K *)(x + (size_t)t * xrb) + i)->d);
                const __m512i s = _mm512_sub_epi32(sumi[t], _mm512_slli_epi32(summ[t], 5));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(d, dx), acc[t]);
            }
        }
    }
    for (int t = 0; t < NT; t++) store_rows(y + t * ys, acc[t], nr);
}

/* ================================ float weights (F16, F32) ================================ */

/* The attention products (Q·Kᵀ and P·V over the F16 KV cache) and float weight matrices: the tile holds
 * FC columns of 16 rows as floats, column-major ([c][16]), so one FMA with a broadcast activation value is
 * 16 rows' multiply-adds. Columns beyond FC are done in further passes that add to Y. */
enum { FC = 256 };

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

INLINE float float_at(int type, const uint8_t *row, int64_t c) {
    return type == LK_TYPE_F16 ? h2f(load_u16(row + 2 * c)) : ((const float *)row)[c];
}

INLINE __m512 load16_float(int type, const uint8_t *row, int64_t c) {
    return type == LK_TYPE_F16 ? _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(row + 2 * c)))
                               : _mm512_loadu_ps((const float *)row + c);
}

/* tile[c][r] = W[r][c0 + c] for c < cc, r < nr (zeros for r >= nr) */
INLINE void build_tile_float(int type, const uint8_t *w, size_t wrb, int64_t c0, int64_t cc, int nr, float *tile) {
    int64_t c = 0;
    for (; c + 16 <= cc; c += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = i < nr ? load16_float(type, w + (size_t)i * wrb, c0 + c) : _mm512_setzero_ps();
        transpose16(r);
        for (int j = 0; j < 16; j++) _mm512_store_ps(tile + 16 * (c + j), r[j]);
    }
    for (; c < cc; c++)
        for (int i = 0; i < 16; i++) tile[16 * c + i] = i < nr ? float_at(type, w + (size_t)i * wrb, c0 + c) : 0.0f;
}

/* NT tokens × one tile: Y[t, 0..nr) (+)= Σ_c tile[c] · X[t, c0 + c]; two accumulators per token (even and
 * odd columns) halve the FMA chains. */
INLINE void tile_float_tokens(const float *tile, int64_t cc, const float *x, size_t xrb, float *y, int64_t ys, int nr,
                              int add, const int NT) {
    __m512 a0[8], a1[8];
    for (int t = 0; t < NT; t++) a0[t] = a1[t] = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 2 <= cc; c += 2) {
        const __m512 w0 = _mm512_load_ps(tile + 16 * c), w1 = _mm512_load_ps(tile + 16 * c + 16);
        for (int t = 0; t < NT; t++) {
            const float *xt = (const float *)((const uint8_t *)x + (size_t)t * xrb) + c;
            a0[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(xt[0]), a0[t]);
            a1[t] = _mm512_fmadd_ps(w1, _mm512_set1_ps(xt[1]), a1[t]);
        }
    }
    if (c < cc) {
        const __m512 w0 = _mm512_load_ps(tile + 16 * c);
        for (int t = 0; t < NT; t++)
            a0[t] = _mm512_fmadd_ps(w0, _mm512_set1_ps(((const float *)((const uint8_t *)x + (size_t)t * xrb))[c]), a0[t]);
    }
    const __mmask16 m = nr == TR ? (__mmask16)0xFFFF : (__mmask16)((1u << nr) - 1);
    for (int t = 0; t < NT; t++) {
        __m512 s = _mm512_add_ps(a0[t], a1[t]);
        if (add) s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, y + t * ys));
        _mm512_mask_storeu_ps(y + t * ys, m, s);
    }
}

INLINE int gemm_float(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                      float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    float *tile = aligned_alloc(64, sizeof(float) * 16 * FC);
    if (!tile) return 0;
    const uint8_t *wb = w, *xb = x;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
        const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
        for (int64_t c0 = 0; c0 < cols; c0 += FC) {
            const int64_t cc = cols - c0 < FC ? cols - c0 : FC;
            build_tile_float(type, wb + (size_t)r0 * wrb, wrb, c0, cc, nr, tile);
            const float *xc = (const float *)(xb + (size_t)c0 * 4);
            int64_t t = 0;
            for (; t + 8 <= n_tokens; t += 8)
                tile_float_tokens(tile, cc, (const float *)((const uint8_t *)xc + (size_t)t * xrb), xrb, y + t * ys + r0, ys, nr, c0 > 0, 8);
            for (; t < n_tokens; t++)
                tile_float_tokens(tile, cc, (const float *)((const uint8_t *)xc + (size_t)t * xrb), xrb, y + t * ys + r0, ys, nr, c0 > 0, 1);
        }
    }
    free(tile);
    return 1;
}

/* ===================================== drivers ===================================== */

/* TOKENS32 / TOKENSK: how many tokens share each weight-vector load in the inner loops */
enum { TOKENS32 = 8, TOKENSK = 4 };

INLINE int gemm32(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                  float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK;
    const int64_t chunk = n_tokens < CHUNK ? n_tokens : CHUNK;
    const size_t tile_bytes = (size_t)nb * B32_STRIDE;
    uint8_t *scratch = aligned_alloc(64, (tile_bytes + (size_t)chunk * (size_t)nb * 8 + 63) / 64 * 64);
    if (!scratch) return 0;
    uint8_t *tile = scratch;
    float *dx = (float *)(scratch + tile_bytes);
    int32_t *c = (int32_t *)(dx + chunk * nb);
    const uint8_t *wb = w, *xb = x;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xb + (size_t)t0 * xrb;
        prep_terms32(type, xc, xrb, nt, nb, dx, c);
        for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
            const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
            build_tile32(type, wb + (size_t)r0 * wrb, wrb, nb, nr, tile);
            int64_t t = 0;
            for (; t + TOKENS32 <= nt; t += TOKENS32)
                tile32_tokens(type, tile, nb, xc + (size_t)t * xrb, xrb, dx + t * nb, c + t * nb, y + (t0 + t) * ys + r0, ys, nr, TOKENS32);
            for (; t < nt; t++)
                tile32_tokens(type, tile, nb, xc + (size_t)t * xrb, xrb, dx + t * nb, c + t * nb, y + (t0 + t) * ys + r0, ys, nr, 1);
        }
    }
    free(scratch);
    return 1;
}

INLINE int gemmK(int type, int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                 float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    const int64_t nb = cols / QK_K;
    uint8_t *tile = aligned_alloc(64, (size_t)nb * (type == LK_TYPE_Q4_K ? Q4K_STRIDE : Q6K_STRIDE));
    if (!tile) return 0;
    const uint8_t *wb = w, *xb = x;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
        const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
        build_tileK(type, wb + (size_t)r0 * wrb, wrb, nb, nr, tile);
        int64_t t = 0;
        for (; t + TOKENSK <= n_tokens; t += TOKENSK)
            tileK_tokens(type, tile, nb, xb + (size_t)t * xrb, xrb, y + t * ys + r0, ys, nr, TOKENSK);
        for (; t < n_tokens; t++) tileK_tokens(type, tile, nb, xb + (size_t)t * xrb, xrb, y + t * ys + r0, ys, nr, 1);
    }
    free(tile);
    return 1;
}

#define GEMM(NAME, DRIVER, TYPE)                                                                              \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,     \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                               \
        return DRIVER(TYPE, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);                       \
    }
GEMM(gemm_q4_0, gemm32, LK_TYPE_Q4_0)
GEMM(gemm_q4_1, gemm32, LK_TYPE_Q4_1)
GEMM(gemm_q5_0, gemm32, LK_TYPE_Q5_0)
GEMM(gemm_q5_1, gemm32, LK_TYPE_Q5_1)
GEMM(gemm_q8_0, gemm32, LK_TYPE_Q8_0)
GEMM(gemm_q4_K, gemmK, LK_TYPE_Q4_K)
GEMM(gemm_q6_K, gemmK, LK_TYPE_Q6_K)
GEMM(gemm_f16, gemm_float, LK_TYPE_F16)
GEMM(gemm_f32, gemm_float, LK_TYPE_F32)
#undef GEMM

#pragma clang attribute pop

void lk_fill_avx512_gemm(lk_kernel_table *t) {
    t->gemm[LK_TYPE_Q4_0] = gemm_q4_0;
    t->gemm[LK_TYPE_Q4_1] = gemm_q4_1;
    t->gemm[LK_TYPE_Q5_0] = gemm_q5_0;
    t->gemm[LK_TYPE_Q5_1] = gemm_q5_1;
    t->gemm[LK_TYPE_Q8_0] = gemm_q8_0;
    t->gemm[LK_TYPE_Q4_K] = gemm_q4_K;
    t->gemm[LK_TYPE_Q6_K] = gemm_q6_K;
    t->gemm[LK_TYPE_F16] = gemm_f16;
    t->gemm[LK_TYPE_F32] = gemm_f32;
}

#else
void lk_fill_avx512_gemm(lk_kernel_table *t) { (void)t; }
#endif

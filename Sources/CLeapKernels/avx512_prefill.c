/* AVX-512 VNNI matrix × matrix (prefill) for Q4_1, Q5_0, Q5_1, Q4_K, F16 and F32 (Q4_0: llama_order_q4_0.c; Q8_0: avx2_q8_0.c's
 * order, avx512_fewtokens.c): one
 * lk_matmul call with many tokens, bit for bit equal to the one-token path (so batched prefill and decode
 * agree exactly), plus llama.cpp's batch-dependent orders for Q4_K (repacked) and Q6_K (tiled, from 16
 * tokens; below, the row kernel, which folds the scales into vpmaddwd and unpacks once per 4 tokens).
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
 * 32-block types and Q4_K), applies the same float operations in the same order, and adds the lane
 * accumulators in the reduction tree of the row kernels (see reduce8).
 *
 *   Q4_1, Q5_0, Q5_1 (ggml's order, = the AVX2 row kernels and avx512_decode.c): lane g
 *     (group g of every block) is one chain over the blocks in order, acc_g += (dw·dx) · (Σ q·x − offset·Σx
 *     over the group), result hsum_ps (reduce8) + the fused chain Σ m·s (Q4_1/Q5_1); see tile32_seq_tokens.
 *     Weights become u = q (Q5_0 with offset 16 through the activations).
 *   Q4_K (avx2_decode.c): lane j of chunk c (64 weights): sc_2c·(lo nibbles 4j..4j+3 · x) +
 *     sc_2c+1·(hi nibbles · x), summed over the 4 chunks; acc_j += (d·dx)·sumi_j per super-block and
 *     accm += (dmin·dx)·Σ m·bsums, result hsum(acc) − accm.
 *
 *   F16 / F32: see gemm_float.
 *
 * Scratch per call: one tile and the offset terms of up to CHUNK tokens, the thread's lk_scratch; on failure the caller falls back.
 *
 * Throughput (1 thread, 512 tokens, thread CPU time; BENCHMARKS.md): Q5_0 72 → 150 GFLOP/s, Q4_K 71 →
 * 150; what is left per vpdpbusd is the float work the exact order needs (one vcvtdq2ps + one FMA per
 * 4 weights and block). An unconstrained version (one float FMA per block) was another ~1.5x faster
 * but changes the logits by float rounding. */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)
#include "lk_x86_avx512.h"

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

/* hsum_ps (avx2_decode.c) of lanes a[0..7] */
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

/* ======================================= Q4_K ======================================= */

/* Tile layout per super-block: 64 byte vectors (the 256 weights in element order), 8 scale vectors (s16
 * pairs sc, sc: vpmaddubsw of 4 weights gives two s16 sums, vpdpwssd scales and adds them),
 * 8 min vectors (s16 pairs m, m: vpdpwssd with a bsums pair gives m·(bsums[2j] + bsums[2j+1])), d, dmin. */
enum { Q4K_W = 0, Q4K_SC = 4096, Q4K_M = 4608, Q4K_D = 5120, Q4K_DMIN = 5184, Q4K_STRIDE = 5248 };

INLINE void unpack_q4_K(const block_q4_K *b, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int c = 0; c < 4; c++) { /* 64 elements: low nibbles of 32 bytes, then high */
        const __m256i q = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
        _mm256_store_si256((__m256i *)(out + 64 * c), _mm256_and_si256(q, m4));
        _mm256_store_si256((__m256i *)(out + 64 * c + 32), _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
    }
}

INLINE void build_tile_q4_K(const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile) {
    _Alignas(64) uint8_t rows[TR * QK_K];
    _Alignas(64) int32_t sc[8][TR], mp[8][TR];
    _Alignas(64) float d[TR], dmin[TR];
    for (int64_t i = 0; i < nb; i++) {
        for (int r = 0; r < TR; r++) {
            if (r >= nr) {
                memset(rows + QK_K * r, 0, QK_K);
                for (int j = 0; j < 8; j++) sc[j][r] = mp[j][r] = 0;
                d[r] = dmin[r] = 0.0f;
                continue;
            }
            const block_q4_K *b = (const block_q4_K *)(w + (size_t)r * wrb) + i;
            unpack_q4_K(b, rows + QK_K * r);
            for (int j = 0; j < 8; j++) {
                uint8_t s, m;
                lk_get_scale_min_k4(j, b->scales, &s, &m);
                sc[j][r] = pair16(s, s);
                mp[j][r] = pair16(m, m);
            }
            d[r] = h2f(b->d);
            dmin[r] = h2f(b->dmin);
        }
        uint8_t *t = tile + i * Q4K_STRIDE;
        transpose_rows(rows, QK_K, t + Q4K_W);
        memcpy(t + Q4K_SC, sc, sizeof sc);
        memcpy(t + Q4K_M, mp, sizeof mp);
        memcpy(t + Q4K_D, d, sizeof d);
        memcpy(t + Q4K_DMIN, dmin, sizeof dmin);
    }
}

/* The float order of one token's products (llama_order_avx2.c): the row kernels' (8 lane accumulators,
 * prefill == decode), or llama.cpp's repacked gemm (one FMA per 64-element chunk) or gemv (one per block). */
enum { Q4K_ROWS = 0, Q4K_GEMM = 1, Q4K_GEMV = 2 };

INLINE void tile_q4_K_token(const uint8_t *tile, int64_t nb, const block_q8_K *x, float *y, int nr, const int order) {
    __m512 acc[8], accm = _mm512_setzero_ps();
    for (int j = 0; j < 8; j++) acc[j] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *tb = tile + i * Q4K_STRIDE;
        const uint8_t *xq = (const uint8_t *)x[i].qs;
        const __m512 dx = _mm512_set1_ps(x[i].d);
        const __m512 dd = _mm512_mul_ps(_mm512_load_ps((const float *)(tb + Q4K_D)), dx);
        const __m512 dm = _mm512_mul_ps(_mm512_load_ps((const float *)(tb + Q4K_DMIN)), dx);
        __m512i sumi[8], summ = _mm512_setzero_si512();
        for (int j = 0; j < 8; j++) sumi[j] = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            const __m512i s0 = _mm512_load_si512((const void *)(tb + Q4K_SC + 64 * (2 * c)));
            const __m512i s1 = _mm512_load_si512((const void *)(tb + Q4K_SC + 64 * (2 * c + 1)));
            __m512i part[8];
            for (int j = 0; j < 8; j++) { /* vector 16c + j: low nibbles 4j..; 16c + 8 + j: high nibbles */
                const __m512i lo = _mm512_maddubs_epi16(_mm512_load_si512((const void *)(tb + 64 * (16 * c + j))), bcast32(xq + 64 * c + 4 * j));
                const __m512i hi = _mm512_maddubs_epi16(_mm512_load_si512((const void *)(tb + 64 * (16 * c + 8 + j))), bcast32(xq + 64 * c + 32 + 4 * j));
                if (order == Q4K_GEMM) part[j] = _mm512_dpwssd_epi32(_mm512_madd_epi16(lo, s0), hi, s1);
                else sumi[j] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(sumi[j], lo, s0), hi, s1);
            }
            if (order == Q4K_GEMM) { /* S_c, M_c: exact integers, one FMA each */
                for (int j = 0; j < 4; j++) part[j] = _mm512_add_epi32(part[j], part[j + 4]);
                const __m512i sc_c = _mm512_add_epi32(_mm512_add_epi32(part[0], part[2]), _mm512_add_epi32(part[1], part[3]));
                __m512i m_c = _mm512_madd_epi16(_mm512_load_si512((const void *)(tb + Q4K_M + 64 * (2 * c))), bcast32(&x[i].bsums[4 * c]));
                m_c = _mm512_dpwssd_epi32(m_c, _mm512_load_si512((const void *)(tb + Q4K_M + 64 * (2 * c + 1))), bcast32(&x[i].bsums[4 * c + 2]));
                acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sc_c), dd, acc[0]);
                accm = _mm512_fmadd_ps(_mm512_cvtepi32_ps(m_c), dm, accm);
            }
        }
        if (order == Q4K_GEMM) continue;
        for (int j = 0; j < 8; j++)
            summ = _mm512_dpwssd_epi32(summ, _mm512_load_si512((const void *)(tb + Q4K_M + 64 * j)), bcast32(&x[i].bsums[2 * j]));
        if (order == Q4K_GEMV) {
            for (int j = 0; j < 4; j++) sumi[j] = _mm512_add_epi32(sumi[j], sumi[j + 4]);
            const __m512i s = _mm512_add_epi32(_mm512_add_epi32(sumi[0], sumi[2]), _mm512_add_epi32(sumi[1], sumi[3]));
            acc[0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), dd, acc[0]);
        } else {
            for (int j = 0; j < 8; j++) acc[j] = _mm512_fmadd_ps(dd, _mm512_cvtepi32_ps(sumi[j]), acc[j]);
        }
        accm = _mm512_fmadd_ps(dm, _mm512_cvtepi32_ps(summ), accm);
    }
    store_rows(y, _mm512_sub_ps(order == Q4K_ROWS ? reduce8(acc) : acc[0], accm), nr);
}

/* order Q4K_ROWS: every token alike; Q4K_GEMM: llama.cpp's repacked order, tokens [0, n − n % 4) gemm, the
 * rest gemv; Q4K_GEMV: gemv for every token (its MUL_MAT_ID). */
INLINE int gemm_q4_K_impl(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                          float *y, int64_t ys, int64_t row_begin, int64_t row_end, const int order) {
    const int64_t nb = cols / QK_K;
    uint8_t *tile = lk_scratch((size_t)nb * Q4K_STRIDE);
    if (!tile) return 0;
    const uint8_t *wb = w, *xb = x;
    const int64_t n4 = n_tokens - n_tokens % 4;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
        const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
        build_tile_q4_K(wb + (size_t)r0 * wrb, wrb, nb, nr, tile);
        for (int64_t t = 0; t < n_tokens; t++) {
            const block_q8_K *xt = (const block_q8_K *)(xb + (size_t)t * xrb);
            if (order == Q4K_ROWS) tile_q4_K_token(tile, nb, xt, y + t * ys + r0, nr, Q4K_ROWS);
            else if (order == Q4K_GEMM && t < n4) tile_q4_K_token(tile, nb, xt, y + t * ys + r0, nr, Q4K_GEMM);
            else tile_q4_K_token(tile, nb, xt, y + t * ys + r0, nr, Q4K_GEMV);
        }
    }
    return 1;
}

/* ======================================= Q6_K ======================================= */

/* llama.cpp's tiled order (llama_order_avx2.c, from 8 tokens): per block S = Σ_g sc_g · Σ (q − 32)·x, exact,
 * then acc = fma(float(S)·d, dx, acc). Tile per super-block: 64 byte vectors (q = 0..63 in element order),
 * 16 scale vectors (s16 pairs sc_g, sc_g: the two vpmaddubsw sums of 4 weights lie in one 16-element
 * sub-block), 8 correction vectors (s16 pairs sc_2k, sc_2k+1 against a bsums pair: Σ sc·bsum, times 32), d. */
enum { Q6K_W = 0, Q6K_SC = 4096, Q6K_SB = 5120, Q6K_D = 5632, Q6K_STRIDE = 5696 };

INLINE void unpack_q6_K(const block_q6_K *b, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    for (int half = 0; half < 2; half++) { /* elements 128·half + 32k + l: ql[l (+32)] nibble, qh[l] bits 2k */
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * half));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * half + 32));
        const __m256i hb = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * half));
        const __m256i lo[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                               _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
        for (int k = 0; k < 4; k++) {
            const __m256i h = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * k), m3), 4);
            _mm256_store_si256((__m256i *)(out + 128 * half + 32 * k), _mm256_or_si256(lo[k], h));
        }
    }
}

INLINE void build_tile_q6_K(const uint8_t *w, size_t wrb, int64_t nb, int nr, uint8_t *tile) {
    _Alignas(64) uint8_t rows[TR * QK_K];
    _Alignas(64) int32_t sc[16][TR], sb[8][TR];
    _Alignas(64) float d[TR];
    for (int64_t i = 0; i < nb; i++) {
        for (int r = 0; r < TR; r++) {
            if (r >= nr) {
                memset(rows + QK_K * r, 0, QK_K);
                for (int g = 0; g < 16; g++) sc[g][r] = 0;
                for (int k = 0; k < 8; k++) sb[k][r] = 0;
                d[r] = 0.0f;
                continue;
            }
            const block_q6_K *b = (const block_q6_K *)(w + (size_t)r * wrb) + i;
            unpack_q6_K(b, rows + QK_K * r);
            for (int g = 0; g < 16; g++) sc[g][r] = pair16(b->scales[g], b->scales[g]);
            for (int k = 0; k < 8; k++) sb[k][r] = pair16(b->scales[2 * k], b->scales[2 * k + 1]);
            d[r] = h2f(b->d);
        }
        uint8_t *t = tile + i * Q6K_STRIDE;
        transpose_rows(rows, QK_K, t + Q6K_W);
        memcpy(t + Q6K_SC, sc, sizeof sc);
        memcpy(t + Q6K_SB, sb, sizeof sb);
        memcpy(t + Q6K_D, d, sizeof d);
    }
}

INLINE void tile_q6_K_token(const uint8_t *tile, int64_t nb, const block_q8_K *x, float *y, int nr) {
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const uint8_t *tb = tile + i * Q6K_STRIDE;
        const uint8_t *xq = (const uint8_t *)x[i].qs;
        __m512i part[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()};
        for (int g = 0; g < 16; g++) {
            const __m512i scv = _mm512_load_si512((const void *)(tb + Q6K_SC + 64 * g));
            for (int j = 0; j < 4; j++) {
                const int v = 4 * g + j;
                const __m512i m = _mm512_maddubs_epi16(_mm512_load_si512((const void *)(tb + 64 * v)), bcast32(xq + 4 * v));
                part[j] = _mm512_dpwssd_epi32(part[j], m, scv);
            }
        }
        __m512i corr = _mm512_setzero_si512();
        for (int k = 0; k < 8; k++)
            corr = _mm512_dpwssd_epi32(corr, _mm512_load_si512((const void *)(tb + Q6K_SB + 64 * k)), bcast32(&x[i].bsums[2 * k]));
        const __m512i sum = _mm512_add_epi32(_mm512_add_epi32(part[0], part[1]), _mm512_add_epi32(part[2], part[3]));
        const __m512i S = _mm512_sub_epi32(sum, _mm512_slli_epi32(corr, 5));
        const __m512 sd = _mm512_mul_ps(_mm512_cvtepi32_ps(S), _mm512_load_ps((const float *)(tb + Q6K_D)));
        acc = _mm512_fmadd_ps(sd, _mm512_set1_ps(x[i].d), acc);
    }
    store_rows(y, acc, nr);
}

/* From 16 tokens (a tile per call would not pay for itself below); else 0 and the caller uses the rows. */
static int tiled_q6_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens < 16) return 0;
    const int64_t nb = cols / QK_K;
    uint8_t *tile = lk_scratch((size_t)nb * Q6K_STRIDE);
    if (!tile) return 0;
    const uint8_t *wb = w, *xb = x;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += TR) {
        const int nr = row_end - r0 < TR ? (int)(row_end - r0) : TR;
        build_tile_q6_K(wb + (size_t)r0 * wrb, wrb, nb, nr, tile);
        for (int64_t t = 0; t < n_tokens; t++)
            tile_q6_K_token(tile, nb, (const block_q8_K *)(xb + (size_t)t * xrb), y + t * ys + r0, nr);
    }
    return 1;
}

/* ================================ float weights (F16, F32) ================================ */

/* The attention products (Q·Kᵀ and P·V over an F16 KV cache) and float weight matrices. FLOAT_ROWS
 * (avx2_decode.c) gives each (row, token) two 8-lane accumulators: lane k of the first sums the columns
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

static int gemm_q4_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens, float *y,
                     int64_t ys, int64_t row_begin, int64_t row_end) {
    return gemm_q4_K_impl(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, Q4K_ROWS);
}

/* llama.cpp's repacked Q4_K order (llama_order_avx2.c): the tile from 16 tokens (as lk_matmul's gemm),
 * below that the AVX2 row kernels (a tile per call would not pay for itself). */
static int repack_q4_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens, float *y,
                       int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens >= 16 && gemm_q4_K_impl(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, Q4K_GEMM))
        return 1;
    return lk_repack_q4_K_avx2(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);
}

static int repack_id_q4_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                          float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    if (n_tokens >= 16 && gemm_q4_K_impl(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end, Q4K_GEMV))
        return 1;
    return lk_repack_id_q4_K_avx2(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);
}

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

/* the tile from 16 tokens, the AVX2 rows between 8 and 16 */
static int tiled_q6_K_or_rows(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                              float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    return tiled_q6_K(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end) ||
           lk_tiled_q6_K_avx2(cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);
}

void lk_fill_llama_order_avx512(lk_kernel_table *t) {
    t->repack[LK_TYPE_Q4_K] = repack_q4_K;
    t->repack_id[LK_TYPE_Q4_K] = repack_id_q4_K;
    t->tiled[LK_TYPE_Q6_K] = tiled_q6_K_or_rows;
}

#else
LK_NO_KERNELS(lk_avx512_prefill);
#endif

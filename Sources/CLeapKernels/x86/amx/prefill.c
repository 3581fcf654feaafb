/* AMX prefill: many-token products on Intel's tile unit (AMX-INT8, TDPBSSD), for Q4_0 and Q8_0 (row and 8-row
 * layouts), Q4_K, Q5_K and Q6_K weights.
 *
 * The sums are those of the AVX-512 VNNI kernels: exact integer products of the weights' and activations'
 * quants, then float steps; only the order of the float additions differs from the other paths.
 *   Q4_0, Q8_0 (amx_gemm): a float scale per block of 32 on both sides, so each TDPBSSD spans one block (32
 *     deep) and every block's 16×16 integer sums get their step on the AVX-512 units:
 *         y[r, t] = Σ_blocks da[t, b] · wa[r, b] · C_b[r, t]
 *   Q4_K, Q5_K, Q6_K (amx_gemm_k): the sub-block scales are small integers and go into the weights (see the
 *     K-quant part below), so each TDPBSSD spans 64 elements and one step per super-block of 256 remains.
 * BF16 tiles (TDPBF16PS) would need no float steps but round every weight and activation to 8 significant
 * bits, which moves the tiny test models' perplexity by several percent.
 *
 * Shapes of amx_gemm (per call, on one thread's rows [row_begin, row_end)):
 *   act [token tile tt][block b][8 quads][16 tokens][4 bytes]: the B operand, built once per call
 *   da [tt][b][16 tokens] f32: the activation scales
 *   panel [row tile a][b][16 rows][32] int8: the A operand, GROUPS groups of 32 rows at a time; wa [a][b][16]
 *   C [4 tiles][16 rows][16 tokens] i32: one block's sums; acc [4][16][16] f32: a 32 × 32 output block
 * Two A and two B tiles are loaded per block for four TDPBSSD.
 *
 * The tile registers need the kernel's permission (arch_prctl ARCH_REQ_XCOMP_PERM), which features.c asks for
 * once; without it, or on CPUs without AMX, this table is not available and the AVX-512 one is used. */
#include "lk_internal.h"

#if defined(__x86_64__) && defined(__clang__)
#include <immintrin.h>
#include <string.h>

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,amx-tile,amx-int8"))), apply_to = function)
#include "../lk_x86_avx512.h"

/* From this many tokens the tile unit does the product: the table's gemm entries are reached from 16 tokens
 * (2..15 go to the few-token kernels first), and below, where a call falls through to them, the weights'
 * conversion to tiles would be paid for too few tokens. */
enum { AMX_MIN_TOKENS = 16 };
/* Groups of 32 weight rows converted at a time: each pair of token tiles (its B tiles in L1/L2) passes over
 * all of them before the next pair. */
enum { GROUPS = 4 };

/* ldtilecfg's 64-byte operand, palette 1: tiles 0, 1 = A (16 rows × cb bytes, cb = 32 or 64), 2, 3 = B (cb/4
 * rows × 64 bytes), 4..7 = C (16 × 16 int32). */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

static void configure_tiles(int cb) {
    _Alignas(64) tile_config c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) c.colsb[i] = 64, c.rows[i] = 16;
    c.colsb[0] = c.colsb[1] = (uint16_t)cb;
    c.rows[2] = c.rows[3] = (uint8_t)(cb / 4);
    _tile_loadconfig(&c);
}

/* ---- weights: int8 chunks and their scales ----------------------------------------------------------- */
/* Rows r..r + nrows - 1 (nrows <= 16; the 8-row layout's functions: r, nrows multiples of 8) as int8 blocks,
 * block c of row i at q + 512c + 32i, its scale at wa[16c + i]. */
typedef void (*prep_fn)(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *wa);

/* 16 quant bytes of Q4_0 (element k in the low nibble of byte k, element 16 + k in the high one) as 32 int8 */
static inline void q4_0_chunk(__m128i v, int8_t *dst) {
    const __m128i m4 = _mm_set1_epi8(15), eight = _mm_set1_epi8(8);
    _mm_storeu_si128((__m128i *)dst, _mm_sub_epi8(_mm_and_si128(v, m4), eight));
    _mm_storeu_si128((__m128i *)(dst + 16), _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(v, 4), m4), eight));
}

static void prep_q8_0(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *wa) {
    for (int64_t i = 0; i < nrows; i++) {
        const block_q8_0 *b = (const block_q8_0 *)(w + (size_t)(r + i) * wrb);
        for (int64_t c = 0; c < cols / QK; c++) {
            _mm256_storeu_si256((__m256i *)(q + c * 512 + 32 * i), _mm256_loadu_si256((const __m256i *)b[c].qs));
            wa[16 * c + i] = lk_h2f(b[c].d);
        }
    }
}

static void prep_q4_0(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *wa) {
    for (int64_t i = 0; i < nrows; i++) {
        const block_q4_0 *b = (const block_q4_0 *)(w + (size_t)(r + i) * wrb);
        for (int64_t c = 0; c < cols / QK; c++) {
            q4_0_chunk(_mm_loadu_si128((const __m128i *)b[c].qs), q + c * 512 + 32 * i);
            wa[16 * c + i] = lk_h2f(b[c].d);
        }
    }
}

/* The 8-row layout (leap_kernels.h): block b of a group is v vectors of 32 bytes, vector k holding quant word k
 * (bytes 4k..4k+3) of rows 0..7, then the 8 rows' scales. Two vectors make one 64-byte load (words 0..7: vector
 * k, 8..15: vector k + 1), and one vpermt2d of two such loads gathers four rows' words 4m..4m+3 (m = 0, 1):
 * lane q of the result is row 4h + q's, h = 0 for rows_lo, 1 for rows_hi. */
static inline void rows8_words(const uint8_t *v, __m512i *rows_lo, __m512i *rows_hi) {
    const __m512i a = _mm512_loadu_si512(v), b = _mm512_loadu_si512(v + 64);
    const __m512i lo = _mm512_setr_epi32(0, 8, 16, 24, 1, 9, 17, 25, 2, 10, 18, 26, 3, 11, 19, 27);
    *rows_lo = _mm512_permutex2var_epi32(a, lo, b);
    *rows_hi = _mm512_permutex2var_epi32(a, _mm512_add_epi32(lo, _mm512_set1_epi32(4)), b);
}

static inline __m128i lane128(__m512i v, int q) {
    switch (q) {
    case 0: return _mm512_castsi512_si128(v);
    case 1: return _mm512_extracti32x4_epi32(v, 1);
    case 2: return _mm512_extracti32x4_epi32(v, 2);
    default: return _mm512_extracti32x4_epi32(v, 3);
    }
}

static void prep_q4_0_rows8(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *wa) {
    const int64_t nb = cols / QK;
    for (int64_t g = 0; g < nrows; g += 8) {
        const uint8_t *in = w + (size_t)(r + g) * wrb;
        for (int64_t b = 0; b < nb; b++) {
            __m512i v[2];
            rows8_words(in + lk_rows8_quants(b, 16), &v[0], &v[1]); /* 4 words = a row's 16 quant bytes */
            _mm256_storeu_ps(wa + 16 * b + g, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + lk_rows8_scales(nb, b, 16)))));
            for (int i = 0; i < 8; i++) q4_0_chunk(lane128(v[i / 4], i % 4), q + b * 512 + 32 * (g + i));
        }
    }
}

static void prep_q8_0_rows8(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *wa) {
    const int64_t nb = cols / QK;
    for (int64_t g = 0; g < nrows; g += 8) {
        const uint8_t *in = w + (size_t)(r + g) * wrb;
        for (int64_t b = 0; b < nb; b++) {
            __m512i lo[2], hi[2]; /* words 0..3 (elements 0..15) and 4..7 (16..31) of each row */
            rows8_words(in + lk_rows8_quants(b, 32), &lo[0], &lo[1]);
            rows8_words(in + lk_rows8_quants(b, 32) + 128, &hi[0], &hi[1]);
            _mm256_storeu_ps(wa + 16 * b + g, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + lk_rows8_scales(nb, b, 32)))));
            for (int i = 0; i < 8; i++) {
                int8_t *dst = q + b * 512 + 32 * (g + i);
                _mm_storeu_si128((__m128i *)dst, lane128(lo[i / 4], i % 4));
                _mm_storeu_si128((__m128i *)(dst + 16), lane128(hi[i / 4], i % 4));
            }
        }
    }
}

/* Bytes of v shifted right by n (n < 8), per byte */
static inline __m256i srl8(__m256i v, int n) { return _mm256_and_si256(_mm256_srli_epi16(v, n), _mm256_set1_epi8((char)(0xff >> n))); }

/* ---- activations ---------------------------------------------------------------------------------------- */
/* act and da (see the top) from the Q8_0 or Q8_K rows, chunks of cb (32 or 64) bytes */
static void build_act(int act_type, int cb, const uint8_t *x, size_t xrb, int64_t n_tokens, int64_t n_tiles,
                      int64_t nc, int8_t *act, float *da) {
    const __mmask16 words = (__mmask16)((1u << (cb / 4)) - 1);
    for (int64_t tt = 0; tt < n_tiles; tt++)
        for (int64_t c = 0; c < nc; c++) {
            __m512i v[16];
            float *dc = da + (tt * nc + c) * 16;
            for (int m = 0; m < 16; m++) {
                const int64_t t = 16 * tt + m;
                v[m] = _mm512_setzero_si512();
                dc[m] = 0.0f;
                if (t >= n_tokens) continue;
                const uint8_t *row = x + (size_t)t * xrb;
                if (act_type == LK_TYPE_Q8_0) {
                    const block_q8_0 *b = (const block_q8_0 *)row + c;
                    v[m] = _mm512_maskz_loadu_epi32(words, b->qs);
                    dc[m] = lk_h2f(b->d);
                } else {
                    const block_q8_K *b = (const block_q8_K *)row + c * cb / QK_K;
                    const int64_t e = c * cb % QK_K; /* first element of the chunk in its super-block */
                    v[m] = _mm512_maskz_loadu_epi32(words, b->qs + e);
                    dc[m] = b->d;
                }
            }
            lk_transpose16_epi32(v);
            int8_t *dst = act + (tt * nc + c) * 16 * cb;
            for (int p = 0; p < cb / 4; p++) _mm512_store_si512(dst + 64 * p, v[p]);
        }
}

/* y[(t0 + m)·ys + r0 + i] = c[i][m] for i < rows, m < tokens (c: 16×16 floats, weight row i by token m) */
static void store_c(const float *c, int rows, int tokens, float *y, int64_t ys, int64_t t0, int64_t r0) {
    __m512i v[16];
    for (int i = 0; i < 16; i++) v[i] = _mm512_load_si512(c + 16 * i);
    lk_transpose16_epi32(v);
    const __mmask16 mask = (__mmask16)((1u << rows) - 1);
    for (int m = 0; m < tokens; m++) _mm512_mask_storeu_ps(y + (t0 + m) * ys + r0, mask, _mm512_castsi512_ps(v[m]));
}

/* acc[i] += (da · wa[i]) · C[i] for the 16 weight rows i of one C tile (16 tokens per row): one block's float
 * step, a scale per block on both sides */
static inline __attribute__((always_inline)) void step_blocks(float *acc, const int32_t *c, const float *wa, const float *da) {
    const __m512 d = _mm512_load_ps(da);
    for (int i = 0; i < 16; i++)
        _mm512_store_ps(acc + 16 * i, _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * i)),
                                                      _mm512_mul_ps(d, _mm512_set1_ps(wa[i])), _mm512_load_ps(acc + 16 * i)));
}

/* Q4_0 and Q8_0 (Q8_0 activations): chunks of 32 = blocks */
static int amx_gemm(prep_fn prep, int64_t cols, const void *w, size_t wrb,
                    const void *x, size_t xrb, int64_t n_tokens, float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    if (cols % QK || row_end <= row_begin) return 0;
    const int64_t nc = cols / QK;
    const int64_t n_pairs = (n_tokens + 31) / 32, n_tiles = 2 * n_pairs;
    const size_t tile_bytes = 512;                        /* one A or B tile of one block */
    const size_t act_bytes = (size_t)(n_tiles * nc) * tile_bytes, act_scales = (size_t)(n_tiles * nc) * 64;
    const size_t panel_bytes = (size_t)(2 * GROUPS * nc) * tile_bytes, panel_scales = (size_t)(2 * GROUPS * nc) * 64;
    const size_t total = act_bytes + act_scales + panel_bytes + panel_scales + 8 * 1024;
    uint8_t *s = lk_scratch(total);
    if (!s) return 0;
    int8_t *act = (int8_t *)s;
    float *da = (float *)(s + act_bytes);
    int8_t *panel = (int8_t *)((uint8_t *)da + act_scales);
    float *wa = (float *)(panel + panel_bytes);
    int32_t *c = (int32_t *)((uint8_t *)wa + panel_scales); /* [4][16][16] */
    float *acc = (float *)(c + 1024);                /* [4][16][16] */
    build_act(LK_TYPE_Q8_0, 32, x, xrb, n_tokens, n_tiles, nc, act, da);
    configure_tiles(32);
    for (int64_t p0 = row_begin; p0 < row_end; p0 += 32 * GROUPS) {
        const int64_t np = row_end - p0 < 32 * GROUPS ? row_end - p0 : 32 * GROUPS;
        const int64_t ng = (np + 31) / 32;
        for (int64_t a = 0; a < 2 * ng; a++) { /* row tile a: rows 16a.. of the panel, zero past np */
            int8_t *q = panel + a * nc * tile_bytes;
            float *sa = wa + a * nc * 16;
            const int64_t n16 = np - 16 * a < 16 ? (np - 16 * a > 0 ? np - 16 * a : 0) : 16;
            if (n16 < 16) {
                memset(q, 0, nc * tile_bytes);
                memset(sa, 0, (size_t)nc * 64);
            }
            if (n16 > 0) prep(w, wrb, p0 + 16 * a, n16, cols, q, sa);
        }
        for (int64_t p = 0; p < n_pairs; p++) {
            const int8_t *b0 = act + (2 * p) * nc * tile_bytes, *b1 = b0 + nc * tile_bytes;
            const float *da0 = da + (2 * p) * nc * 16, *da1 = da0 + nc * 16;
            for (int64_t gi = 0; gi < ng; gi++) {
                const int8_t *a0 = panel + (2 * gi) * nc * tile_bytes, *a1 = a0 + nc * tile_bytes;
                const float *wa0 = wa + (2 * gi) * nc * 16, *wa1 = wa0 + nc * 16;
                memset(acc, 0, 4096);
                for (int64_t j = 0; j < nc; j++) {
                    _tile_loadd(0, a0 + j * tile_bytes, 32);
                    _tile_loadd(1, a1 + j * tile_bytes, 32);
                    _tile_loadd(2, b0 + j * tile_bytes, 64);
                    _tile_loadd(3, b1 + j * tile_bytes, 64);
                    _tile_zero(4);
                    _tile_zero(5);
                    _tile_zero(6);
                    _tile_zero(7);
                    _tile_dpbssd(4, 0, 2);
                    _tile_dpbssd(5, 0, 3);
                    _tile_dpbssd(6, 1, 2);
                    _tile_dpbssd(7, 1, 3);
                    _tile_stored(4, c, 64);
                    _tile_stored(5, c + 256, 64);
                    _tile_stored(6, c + 512, 64);
                    _tile_stored(7, c + 768, 64);
                    const int64_t o = 16 * j;
                    step_blocks(acc, c, wa0 + o, da0 + o);
                    step_blocks(acc + 256, c + 256, wa0 + o, da1 + o);
                    step_blocks(acc + 512, c + 512, wa1 + o, da0 + o);
                    step_blocks(acc + 768, c + 768, wa1 + o, da1 + o);
                }
                for (int q = 0; q < 4; q++) { /* tile q: rows 16·(q / 2) of the group, tokens of tile 2p + q % 2 */
                    const int64_t r0 = 32 * gi + 16 * (q / 2), t0 = 16 * (2 * p + q % 2);
                    const int64_t rows = np - r0 < 16 ? np - r0 : 16, tokens = n_tokens - t0 < 16 ? n_tokens - t0 : 16;
                    if (rows > 0 && tokens > 0) store_c(acc + 256 * q, (int)rows, (int)tokens, y, ys, t0, p0 + r0);
                }
            }
        }
    }
    _tile_release();
    return 1;
}

/* ---- K-quants: the integer scales folded into the weights -------------------------------------------------
 * A K-quant weight is d·(sc·q) − dmin·m with sc (and m) small integers per sub-block, so w' = sc·q is an exact
 * integer of at most 13 bits: split as w' = 2^SH·hi + lo with hi, lo in int8, two A tiles take the whole
 * super-block at full depth (64 elements per TDPBSSD) and one float step per super-block remains:
 *     y[r, t] += da[t] · (d[r] · (2^SH·C_hi + C_lo)[r, t] − dmin[r] · Σ_j m_j[r] · s_j[t])
 * (s_j: the activation's quant sum over sub-block j of 32). Exact integers up to the step, as the VNNI kernels.
 * Shapes: panel [row tile][super-block][hi, lo][4 steps of 64][16 rows][64] int8; dw, dm [row tile][sb][16];
 * mins [row tile][sb][8][16] f32; act [token tile][sb · 4][16 quads][16 tokens][4]; bs [token tile][sb][8][16]. */
typedef void (*prep_k_fn)(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *dw,
                          float *dm, float *mins);

/* 32 weights w' (16-bit lanes) as hi, lo bytes at hi_dst, lo_dst (the lo part 2^sh wide, the hi part signed) */
static inline void split_store(__m512i wv, int sh, int8_t *hi_dst, int8_t *lo_dst) {
    _mm256_storeu_si256((__m256i *)hi_dst, _mm512_cvtepi16_epi8(_mm512_srai_epi16(wv, sh)));
    _mm256_storeu_si256((__m256i *)lo_dst, _mm512_cvtepi16_epi8(_mm512_and_si512(wv, _mm512_set1_epi16((short)((1 << sh) - 1)))));
}

/* row i of a row tile, super-block s: element e at q + (8s + k)·1024 + 64i + e % 64 for hi (k = e / 64) and
 * 4 KiB further for lo */
static inline int8_t *k_hi(int8_t *q, int64_t s, int k, int64_t i) { return q + (8 * s + k) * 1024 + 64 * i; }

static void prep_k4_split(const uint8_t *qs, const uint8_t *qh, const uint8_t *scales, int8_t *q, int64_t s, int64_t i,
                          float *mins) {
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i h = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    for (int k = 0; k < 4; k++) { /* sub-blocks 2k (low nibbles), 2k + 1 (high): elements 64k.. */
        uint8_t sc0, m0, sc1, m1;
        lk_get_scale_min_k4(2 * k, scales, &sc0, &m0);
        lk_get_scale_min_k4(2 * k + 1, scales, &sc1, &m1);
        const __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * k));
        __m256i lo = _mm256_and_si256(v, m4), hi = srl8(v, 4);
        if (qh) {
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(srl8(h, 2 * k), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(srl8(h, 2 * k + 1), one), 4));
        }
        int8_t *dst = k_hi(q, s, k, i);
        split_store(_mm512_mullo_epi16(_mm512_cvtepu8_epi16(lo), _mm512_set1_epi16(sc0)), 5, dst, dst + 4096);
        split_store(_mm512_mullo_epi16(_mm512_cvtepu8_epi16(hi), _mm512_set1_epi16(sc1)), 5, dst + 32, dst + 4096 + 32);
        mins[(2 * k) * 16 + i] = (float)m0;
        mins[(2 * k + 1) * 16 + i] = (float)m1;
    }
}

static void prepk_q4_K(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *dw, float *dm, float *mins) {
    for (int64_t i = 0; i < nrows; i++) {
        const block_q4_K *b = (const block_q4_K *)(w + (size_t)(r + i) * wrb);
        for (int64_t s = 0; s < cols / QK_K; s++) {
            prep_k4_split(b[s].qs, NULL, b[s].scales, q, s, i, mins + s * 128);
            dw[16 * s + i] = lk_h2f(b[s].d), dm[16 * s + i] = lk_h2f(b[s].dmin);
        }
    }
}

static void prepk_q5_K(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *dw, float *dm, float *mins) {
    for (int64_t i = 0; i < nrows; i++) {
        const block_q5_K *b = (const block_q5_K *)(w + (size_t)(r + i) * wrb);
        for (int64_t s = 0; s < cols / QK_K; s++) {
            prep_k4_split(b[s].qs, b[s].qh, b[s].scales, q, s, i, mins + s * 128);
            dw[16 * s + i] = lk_h2f(b[s].d), dm[16 * s + i] = lk_h2f(b[s].dmin);
        }
    }
}

/* Q6_K: w' = sc·(q − 32) in [-4096, 4064], split with SH = 6. In each half h, element l + 32g (l < 32) is
 * ((ql[l + 32·(g & 1)] >> 4·(g >> 1)) & 15) | ((qh[l] >> 2g) & 3) << 4, minus 32, of scale scales[8h + 2g + l / 16]. */
static void prepk_q6_K(const uint8_t *w, size_t wrb, int64_t r, int64_t nrows, int64_t cols, int8_t *q, float *dw, float *dm, float *mins) {
    (void)dm, (void)mins;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3), k32 = _mm256_set1_epi8(32);
    for (int64_t i = 0; i < nrows; i++) {
        const block_q6_K *b = (const block_q6_K *)(w + (size_t)(r + i) * wrb);
        for (int64_t s = 0; s < cols / QK_K; s++) {
            dw[16 * s + i] = lk_h2f(b[s].d);
            for (int half = 0; half < 2; half++) {
                const __m256i la = _mm256_loadu_si256((const __m256i *)(b[s].ql + 64 * half));
                const __m256i lb = _mm256_loadu_si256((const __m256i *)(b[s].ql + 64 * half + 32));
                const __m256i h = _mm256_loadu_si256((const __m256i *)(b[s].qh + 32 * half));
                const __m256i v[4] = {
                    _mm256_or_si256(_mm256_and_si256(la, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4)),
                    _mm256_or_si256(_mm256_and_si256(lb, m4), _mm256_slli_epi16(_mm256_and_si256(srl8(h, 2), m2), 4)),
                    _mm256_or_si256(srl8(la, 4), _mm256_slli_epi16(_mm256_and_si256(srl8(h, 4), m2), 4)),
                    _mm256_or_si256(srl8(lb, 4), _mm256_slli_epi16(srl8(h, 6), 4)),
                };
                for (int g = 0; g < 4; g++) {
                    const int8_t *sc = b[s].scales + 8 * half + 2 * g;
                    const __m512i scv = _mm512_inserti64x4(_mm512_set1_epi16(sc[0]), _mm256_set1_epi16(sc[1]), 1);
                    const __m512i wv = _mm512_mullo_epi16(_mm512_cvtepi8_epi16(_mm256_sub_epi8(v[g], k32)), scv);
                    const int e = 128 * half + 32 * g; /* first element */
                    int8_t *dst = k_hi(q, s, e / 64, i) + e % 64;
                    split_store(wv, 6, dst, dst + 4096);
                }
            }
        }
    }
}

/* bs[tt][s][j][m] = the activation's quant sum over sub-block j (32 elements) of super-block s, token 16tt + m */
static void build_bsums(const uint8_t *x, size_t xrb, int64_t n_tokens, int64_t n_tiles, int64_t nsb, float *bs) {
    for (int64_t tt = 0; tt < n_tiles; tt++)
        for (int64_t s = 0; s < nsb; s++)
            for (int j = 0; j < 8; j++)
                for (int m = 0; m < 16; m++) {
                    const int64_t t = 16 * tt + m;
                    const block_q8_K *b = (const block_q8_K *)(x + (size_t)t * xrb) + s;
                    bs[((tt * nsb + s) * 8 + j) * 16 + m] = t < n_tokens ? (float)(b->bsums[2 * j] + b->bsums[2 * j + 1]) : 0.0f;
                }
}

enum { K_ROW_TILES = 8 }; /* row tiles (of 16) converted at a time */

static int amx_gemm_k(prep_k_fn prep, int sh, int with_mins, int64_t cols, const void *w, size_t wrb, const void *x,
                      size_t xrb, int64_t n_tokens, float *y, int64_t ys, int64_t row_begin, int64_t row_end) {
    if (cols % QK_K || row_end <= row_begin) return 0;
    const int64_t nsb = cols / QK_K, nc = 4 * nsb; /* 64-element steps */
    const int64_t n_pairs = (n_tokens + 31) / 32, n_tiles = 2 * n_pairs;
    const size_t act_bytes = (size_t)(n_tiles * nc) * 1024, act_scales = (size_t)(n_tiles * nc) * 64;
    const size_t bs_bytes = with_mins ? (size_t)(n_tiles * nsb) * 8 * 64 : 0;
    const size_t tile_q = (size_t)nsb * 8 * 1024;                  /* a row tile's hi and lo parts */
    const size_t tile_f = (size_t)nsb * 64, tile_m = (size_t)nsb * 8 * 64;
    const size_t panel_bytes = K_ROW_TILES * (tile_q + 2 * tile_f + tile_m);
    uint8_t *s = lk_scratch(act_bytes + act_scales + bs_bytes + panel_bytes + 6 * 1024);
    if (!s) return 0;
    int8_t *act = (int8_t *)s;
    float *da = (float *)(s + act_bytes);
    float *bs = (float *)((uint8_t *)da + act_scales);
    int8_t *panel = (int8_t *)((uint8_t *)bs + bs_bytes);
    float *dw = (float *)(panel + K_ROW_TILES * tile_q), *dm = dw + K_ROW_TILES * tile_f / 4, *mins = dm + K_ROW_TILES * tile_f / 4;
    int32_t *c = (int32_t *)(mins + K_ROW_TILES * tile_m / 4); /* [hi t0, lo t0, hi t1, lo t1][16][16] */
    float *acc = (float *)(c + 1024);                             /* [2 token tiles][16][16] */
    build_act(LK_TYPE_Q8_K, 64, x, xrb, n_tokens, n_tiles, nc, act, da);
    if (with_mins) build_bsums(x, xrb, n_tokens, n_tiles, nsb, bs);
    configure_tiles(64);
    for (int64_t p0 = row_begin; p0 < row_end; p0 += 16 * K_ROW_TILES) {
        const int64_t np = row_end - p0 < 16 * K_ROW_TILES ? row_end - p0 : 16 * K_ROW_TILES;
        const int64_t nt = (np + 15) / 16;
        for (int64_t a = 0; a < nt; a++) {
            const int64_t n16 = np - 16 * a < 16 ? np - 16 * a : 16;
            int8_t *q = panel + a * tile_q;
            float *fa = dw + a * tile_f / 4, *fm = dm + a * tile_f / 4, *mn = mins + a * tile_m / 4;
            if (n16 < 16) {
                memset(q, 0, tile_q);
                memset(fa, 0, tile_f);
                memset(fm, 0, tile_f);
                memset(mn, 0, tile_m);
            }
            prep(w, wrb, p0 + 16 * a, n16, cols, q, fa, fm, mn);
        }
        for (int64_t p = 0; p < n_pairs; p++) {
            const int8_t *b0 = act + (2 * p) * nc * 1024, *b1 = b0 + nc * 1024;
            for (int64_t a = 0; a < nt; a++) {
                const int8_t *q = panel + a * tile_q;
                const float *fa = dw + a * tile_f / 4, *fm = dm + a * tile_f / 4, *mn = mins + a * tile_m / 4;
                memset(acc, 0, 2048);
                for (int64_t sb = 0; sb < nsb; sb++) {
                    _tile_zero(4);
                    _tile_zero(5);
                    _tile_zero(6);
                    _tile_zero(7);
                    for (int k = 0; k < 4; k++) {
                        const int8_t *hi = q + (8 * sb + k) * 1024;
                        _tile_loadd(0, hi, 64);
                        _tile_loadd(1, hi + 4096, 64);
                        _tile_loadd(2, b0 + (4 * sb + k) * 1024, 64);
                        _tile_loadd(3, b1 + (4 * sb + k) * 1024, 64);
                        _tile_dpbssd(4, 0, 2);
                        _tile_dpbssd(5, 1, 2);
                        _tile_dpbssd(6, 0, 3);
                        _tile_dpbssd(7, 1, 3);
                    }
                    _tile_stored(4, c, 64);
                    _tile_stored(5, c + 256, 64);
                    _tile_stored(6, c + 512, 64);
                    _tile_stored(7, c + 768, 64);
                    for (int u = 0; u < 2; u++) {
                        const int64_t tt = 2 * p + u;
                        const __m512 d = _mm512_load_ps(da + (tt * nc + 4 * sb) * 16);
                        const int32_t *ch = c + 512 * u, *cl = ch + 256;
                        float *au = acc + 256 * u;
                        __m512 bsv[8];
                        if (with_mins)
                            for (int j = 0; j < 8; j++) bsv[j] = _mm512_load_ps(bs + ((tt * nsb + sb) * 8 + j) * 16);
                        for (int i = 0; i < 16; i++) {
                            const __m512i iv = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(ch + 16 * i), sh),
                                                                _mm512_load_si512(cl + 16 * i));
                            __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(iv), _mm512_set1_ps(fa[16 * sb + i]));
                            if (with_mins) {
                                const float *mi = mn + sb * 128 + i;
                                __m512 mv = _mm512_mul_ps(bsv[0], _mm512_set1_ps(mi[0]));
                                for (int j = 1; j < 8; j++) mv = _mm512_fmadd_ps(bsv[j], _mm512_set1_ps(mi[16 * j]), mv);
                                t = _mm512_fnmadd_ps(mv, _mm512_set1_ps(fm[16 * sb + i]), t);
                            }
                            _mm512_store_ps(au + 16 * i, _mm512_fmadd_ps(d, t, _mm512_load_ps(au + 16 * i)));
                        }
                    }
                }
                for (int u = 0; u < 2; u++) {
                    const int64_t t0 = 16 * (2 * p + u), r0 = 16 * a;
                    const int64_t rows = np - r0 < 16 ? np - r0 : 16, tokens = n_tokens - t0 < 16 ? n_tokens - t0 : 16;
                    if (rows > 0 && tokens > 0) store_c(acc + 256 * u, (int)rows, (int)tokens, y, ys, t0, p0 + r0);
                }
            }
        }
    }
    _tile_release();
    return 1;
}

/* Each entry hands batches below AMX_MIN_TOKENS (and any call it cannot run) to the AVX-512 table's entry it
 * replaces. */
static lk_gemm_fn below_gemm[LK_TYPE_COUNT], below_rows8[LK_TYPE_COUNT];

#define AMX_ENTRY(NAME, TABLE, PREP, TYPE)                                                    \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,      \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                                \
        if (n_tokens >= AMX_MIN_TOKENS &&                                                                      \
            amx_gemm(PREP, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end))                         \
            return 1;                                                                                          \
        return TABLE[TYPE] ? TABLE[TYPE](cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end) : 0;       \
    }
AMX_ENTRY(gemm_q4_0, below_gemm, prep_q4_0, LK_TYPE_Q4_0)
AMX_ENTRY(gemm_q8_0, below_gemm, prep_q8_0, LK_TYPE_Q8_0)
#define AMX_K_ENTRY(NAME, PREP, SH, MINS, TYPE)                                                                 \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,      \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                                \
        if (n_tokens >= AMX_MIN_TOKENS &&                                                                      \
            amx_gemm_k(PREP, SH, MINS, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end))             \
            return 1;                                                                                          \
        return below_gemm[TYPE] ? below_gemm[TYPE](cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end) : 0; \
    }
AMX_K_ENTRY(gemm_q4_K, prepk_q4_K, 5, 1, LK_TYPE_Q4_K)
AMX_K_ENTRY(gemm_q5_K, prepk_q5_K, 5, 1, LK_TYPE_Q5_K)
AMX_K_ENTRY(gemm_q6_K, prepk_q6_K, 6, 0, LK_TYPE_Q6_K)
AMX_ENTRY(rows8_q4_0, below_rows8, prep_q4_0_rows8, LK_TYPE_Q4_0)
AMX_ENTRY(rows8_q8_0, below_rows8, prep_q8_0_rows8, LK_TYPE_Q8_0)

#pragma clang attribute pop

/* The K-quant tile kernels read the row layout: the AMX table has no rows8 entries for them. */
LK_KERNELS(lk_amx,
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q4_0, gemm_q4_0),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q8_0, gemm_q8_0),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q4_K, gemm_q4_K),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q5_K, gemm_q5_K),
    LK_KERNEL(LK_E_GEMM, LK_TYPE_Q6_K, gemm_q6_K),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_0, rows8_q4_0),
    LK_KERNEL(LK_E_ROWS8, LK_TYPE_Q8_0, rows8_q8_0));

void lk_amx_link_base(const lk_kernel_table *base) {
    memcpy(below_gemm, base->gemm, sizeof below_gemm);
    memcpy(below_rows8, base->rows8, sizeof below_rows8);
}

#else
LK_NO_KERNELS(lk_amx);
void lk_amx_link_base(const lk_kernel_table *base) { (void)base; }
#endif

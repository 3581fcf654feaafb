/* arm64 i8mm table: Q4_K, Q5_K and Q6_K products of 2 tokens and more on the int8 matrix multiply (smmla: a
 * 2×8 by 8×2 int8 product into 2×2 int32 lanes). Tiles of 4 rows × up to 8 tokens: per sub-block (32 elements
 * of Q4_K / Q5_K, 16 of Q6_K) the 4 rows are unpacked once into row pairs, each row pair × token pair takes
 * one smmla per 8 elements and one multiply-add by the rows' sub-block scales; then per super-block the float
 * steps of quant_rows.c's K-quant fold lane for lane,
 *   acc = fma(dx, fma(-dmin, (float)Σ min·bsum, d·(float)Σ scale·q·a), acc)   (Q6_K: no min term)
 * with the same exact integer sums, so the bits of the one-token kernels at every token count. The same for
 * Q4_K and Q6_K matrices in the 8-row layout (rows8 entries: the row pairs' operands zipped from the layout's
 * vectors, one token on arm/rows8_kquant.c's kernel). */
#include "../lk_tables.h"

#if defined(__aarch64__)
#include "kquant_blocks.h"

#include "i8mm_target.h" /* from here: dotprod and i8mm */

/* A token pair's super-block in smmla's order: chunk k (elements 8k..8k+7) of both tokens, token 0 in the low
 * 8 bytes; their scales as a 2×2 tile's lanes want them (dx0, dx1, dx0, dx1); and the sums of each 32
 * activations (for the mins of Q4_K / Q5_K, and where Q5_K's sums start) in the same lanes. */
typedef struct {
    int8_t q[QK_K / 8][16];
    float d[4];
    int32_t bsum[8][4];
} kpair_block;

/* The nb super-blocks of tokens x0, x1 as kpair_blocks */
static void pack_kpair(int64_t nb, const block_q8_K *x0, const block_q8_K *x1, kpair_block *dst) {
    for (int64_t i = 0; i < nb; i++) {
        for (int c = 0; c < QK_K / 16; c++) {
            const int64x2_t a = vreinterpretq_s64_s8(vld1q_s8(x0[i].qs + 16 * c));
            const int64x2_t b = vreinterpretq_s64_s8(vld1q_s8(x1[i].qs + 16 * c));
            vst1q_s8(dst[i].q[2 * c], vreinterpretq_s8_s64(vzip1q_s64(a, b)));
            vst1q_s8(dst[i].q[2 * c + 1], vreinterpretq_s8_s64(vzip2q_s64(a, b)));
        }
        dst[i].d[0] = dst[i].d[2] = x0[i].d, dst[i].d[1] = dst[i].d[3] = x1[i].d;
        for (int j = 0; j < 8; j++) {
            const int32_t s0 = x0[i].bsums[2 * j] + x0[i].bsums[2 * j + 1];
            const int32_t s1 = x1[i].bsums[2 * j] + x1[i].bsums[2 * j + 1];
            dst[i].bsum[j][0] = dst[i].bsum[j][2] = s0, dst[i].bsum[j][1] = dst[i].bsum[j][3] = s1;
        }
    }
}

/* 16 elements of rows a and b as two smmla operands: elements 0..7 (c[0]) and 8..15 (c[1]), row a in the low
 * 8 bytes */
INLINE void chunk_pairs(int8x16_t a, int8x16_t b, int8x16_t c[2]) {
    c[0] = vreinterpretq_s8_s64(vzip1q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
    c[1] = vreinterpretq_s8_s64(vzip2q_s64(vreinterpretq_s64_s8(a), vreinterpretq_s64_s8(b)));
}

/* sumi[rp][p] += scale[rp] · (START(p) + Σ over NC chunks (from chunk k0 of the activations) of row pair rp's
 * c[rp] by token pair p (xp[p][i])) */
#define PAIRS_ADD(NC, c, k0, scale, START)                                                                   \
    for (int p = 0; p < NP; p++)                                                                             \
        for (int rp = 0; rp < 2; rp++) {                                                                     \
            int32x4_t t = vmmlaq_s32(START(p), c[rp][0], vld1q_s8(xp[p][i].q[(k0)]));                        \
            for (int k = 1; k < (NC); k++) t = vmmlaq_s32(t, c[rp][k], vld1q_s8(xp[p][i].q[(k0) + k]));       \
            sumi[rp][p] = vmlaq_s32(sumi[rp][p], t, (scale)[rp]);                                            \
        }

/* Loops over a super-block's sub-blocks stay loops at every NP (unrolled whole at NP = 1 they spill) */
#if defined(__clang__)
#define SUBBLOCK_LOOP _Pragma("clang loop unroll(disable)")
#else
#define SUBBLOCK_LOOP
#endif

/* Where the sums of sub-block j start: 0, or 16·Σ a of its 32 activations for quants unpacked less 16 */
#define ZERO_START(p) vdupq_n_s32(0)
#define LESS16_START(p) vshlq_n_s32(vld1q_s32(xp[p][i].bsum[j]), 4)

/* Σ scale·q·a of super-block i, row pairs × NP token pairs: Q4_K / Q5_K (SUBS unpacks sub-blocks 2c, 2c + 1,
 * their sums starting at START) */
#define SUBS32_INTS(T, W, SUBS, START)                                                                       \
    INLINE void T##_pair_ints(const W *const *wr, int64_t i, const kpair_block *const *xp, const int NP,    \
                              const int32x4_t sc[2][16], int32x4_t sumi[2][4]) {                             \
        SUBBLOCK_LOOP                                                                                        \
        for (int c = 0; c < 4; c++) {                                                                        \
            int8x16_t q[4][4];                                                                               \
            for (int r = 0; r < 4; r++) SUBS(wr[r] + i, c, q[r]);                                            \
            for (int e = 0; e < 2; e++) { /* sub-block j = 2c + e */                                         \
                const int j = 2 * c + e;                                                                     \
                int8x16_t ch[2][4];                                                                          \
                for (int rp = 0; rp < 2; rp++)                                                               \
                    chunk_pairs(q[2 * rp][2 * e], q[2 * rp + 1][2 * e], ch[rp]),                             \
                        chunk_pairs(q[2 * rp][2 * e + 1], q[2 * rp + 1][2 * e + 1], ch[rp] + 2);             \
                const int32x4_t s[2] = {sc[0][j], sc[1][j]};                                                 \
                PAIRS_ADD(4, ch, 4 * j, s, START)                                                            \
            }                                                                                                \
        }                                                                                                    \
    }
SUBS32_INTS(q4_K, block_q4_K, q4_K_subs, ZERO_START)
SUBS32_INTS(q5_K, block_q5_K, q5_K_subs16, LESS16_START)

/* Q6_K: the quarters m and m + 2 of each half (elements 16k.. of them) from one load of their bits, as in the
 * dotprod row tile */
INLINE void q6_K_pair_ints(const block_q6_K *const *wr, int64_t i, const kpair_block *const *xp, const int NP,
                           const int32x4_t sc[2][16], int32x4_t sumi[2][4]) {
    SUBBLOCK_LOOP
    for (int u = 0; u < 8; u++) { /* half h, quarters m and m + 2, elements 16k.. of each */
        const int h = u / 4, m = (u / 2) % 2, k = u % 2;
        int8x16_t q[2][4];
        for (int r = 0; r < 4; r++) {
            const uint8x16_t hb = vshlq_u8(vld1q_u8(wr[r][i].qh + 32 * h + 16 * k), vdupq_n_s8((int8_t)(-2 * m)));
            const uint8x16_t lo4 = vld1q_u8(wr[r][i].ql + 64 * h + 32 * m + 16 * k);
            q[0][r] = q6_K_quarter(lo4, hb, 0), q[1][r] = q6_K_quarter(lo4, hb, 1);
        }
        for (int e = 0; e < 2; e++) {
            const int j = 8 * h + 2 * (m + 2 * e) + k; /* the sub-block: its scale and activations */
            int8x16_t c[2][2];
            chunk_pairs(q[e][0], q[e][1], c[0]), chunk_pairs(q[e][2], q[e][3], c[1]);
            const int32x4_t s[2] = {sc[0][j], sc[1][j]};
            PAIRS_ADD(2, c, 2 * j, s, ZERO_START)
        }
    }
}

/* The sub-block scales (sc) and mins (mn) of 4 rows' super-block i as row-pair lanes: sc[rp][j] = (s_a, s_a,
 * s_b, s_b) of rows a = 2rp, b = 2rp + 1; and their d, dmin the same way */
INLINE void q4_K_pair_scales(const block_q4_K *const *wr, int64_t i, int32x4_t sc[2][16], int32x4_t mn[2][16],
                             float32x4_t d[2], float32x4_t dmin[2]) {
    uint8_t s8[4][8], m8[4][8];
    for (int r = 0; r < 4; r++) kquant_scales(wr[r][i].scales, s8[r], m8[r]);
    for (int rp = 0; rp < 2; rp++) {
        const int8x16_t a = vreinterpretq_s8_u8(vcombine_u8(vld1_u8(s8[2 * rp]), vdup_n_u8(0)));
        const int8x16_t b = vreinterpretq_s8_u8(vcombine_u8(vld1_u8(s8[2 * rp + 1]), vdup_n_u8(0)));
        const int8x16_t ma = vreinterpretq_s8_u8(vcombine_u8(vld1_u8(m8[2 * rp]), vdup_n_u8(0)));
        const int8x16_t mb = vreinterpretq_s8_u8(vcombine_u8(vld1_u8(m8[2 * rp + 1]), vdup_n_u8(0)));
        scales_by_row((const int8x16_t[4]){a, a, b, b}, sc[rp]);
        scales_by_row((const int8x16_t[4]){ma, ma, mb, mb}, mn[rp]);
        const float da = h2f(wr[2 * rp][i].d), db = h2f(wr[2 * rp + 1][i].d);
        const float ma_ = h2f(wr[2 * rp][i].dmin), mb_ = h2f(wr[2 * rp + 1][i].dmin);
        d[rp] = (float32x4_t){da, da, db, db}, dmin[rp] = (float32x4_t){ma_, ma_, mb_, mb_};
    }
}
INLINE void q5_K_pair_scales(const block_q5_K *const *wr, int64_t i, int32x4_t sc[2][16], int32x4_t mn[2][16],
                             float32x4_t d[2], float32x4_t dmin[2]) {
    /* Q5_K leads with Q4_K's d, dmin and scales */
    const block_q4_K *w4[4];
    for (int r = 0; r < 4; r++) w4[r] = (const block_q4_K *)(const void *)(wr[r] + i);
    q4_K_pair_scales(w4, 0, sc, mn, d, dmin);
}
INLINE void q6_K_pair_scales(const block_q6_K *const *wr, int64_t i, int32x4_t sc[2][16], int32x4_t mn[2][16],
                             float32x4_t d[2], float32x4_t dmin[2]) {
    (void)mn, (void)dmin;
    for (int rp = 0; rp < 2; rp++) {
        const int8x16_t a = vld1q_s8(wr[2 * rp][i].scales), b = vld1q_s8(wr[2 * rp + 1][i].scales);
        scales_by_row((const int8x16_t[4]){a, a, b, b}, sc[rp]);
        const float da = h2f(wr[2 * rp][i].d), db = h2f(wr[2 * rp + 1][i].d);
        d[rp] = (float32x4_t){da, da, db, db};
    }
}

/* Per super-block i: quant_rows.c's float steps lane for lane (MINS: the type has the min term) */
#define KQ_FLOAT_STEPS(MINS)                                                                                 \
    for (int rp = 0; rp < 2; rp++)                                                                           \
        for (int p = 0; p < NP; p++) {                                                                       \
            const float32x4_t ds = vmulq_f32(d[rp], vcvtq_f32_s32(sumi[rp][p]));                             \
            float32x4_t inner = ds;                                                                          \
            if (MINS) {                                                                                      \
                int32x4_t summ = vdupq_n_s32(0);                                                             \
                for (int j = 0; j < 8; j++) summ = vmlaq_s32(summ, mn[rp][j], vld1q_s32(xp[p][i].bsum[j]));  \
                inner = vfmsq_f32(ds, dmin[rp], vcvtq_f32_s32(summ));                                        \
            }                                                                                                \
            acc[rp][p] = vfmaq_f32(acc[rp][p], inner, vld1q_f32(xp[p][i].d));                                \
        }
/* A tile's results: lane 2·(row in pair) + (token in pair) to s[(2p + token in pair)·4 + row] */
#define KQ_TILE_OUT                                                                                          \
    for (int rp = 0; rp < 2; rp++)                                                                           \
        for (int p = 0; p < NP; p++) {                                                                       \
            float o[4];                                                                                      \
            vst1q_f32(o, acc[rp][p]);                                                                        \
            for (int l = 0; l < 4; l++) s[(2 * p + l % 2) * 4 + 2 * rp + l / 2] = o[l];                       \
        }

/* A tile of K-quant rows: 4 rows (src, of type SRC: SCALES and INTS read them) × NP token pairs (xp[p]),
 * s[(2p + token in pair)·4 + row]. MINS: the type has the min term. */
#define KQ_I8MM_TILE_OF(NAME, SRC, SCALES, INTS, MINS)                                                       \
    INLINE void NAME(int64_t nb, SRC src, const kpair_block *const *xp, const int NP, float *s) {            \
        float32x4_t acc[2][4];                                                                               \
        for (int rp = 0; rp < 2; rp++)                                                                       \
            for (int p = 0; p < NP; p++) acc[rp][p] = vdupq_n_f32(0.0f);                                     \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            int32x4_t sc[2][16], mn[2][16], sumi[2][4];                                                      \
            float32x4_t d[2], dmin[2];                                                                       \
            SCALES(src, i, sc, mn, d, dmin);                                                                 \
            for (int rp = 0; rp < 2; rp++)                                                                   \
                for (int p = 0; p < NP; p++) sumi[rp][p] = vdupq_n_s32(0);                                   \
            INTS(src, i, xp, NP, (const int32x4_t(*)[16])sc, sumi);                                          \
            KQ_FLOAT_STEPS(MINS)                                                                             \
        }                                                                                                    \
        KQ_TILE_OUT                                                                                          \
    }
/* The row layout's: rows wr[0..3] */
#define KQ_I8MM_TILE(T, W, MINS) KQ_I8MM_TILE_OF(T##_mtile, const W *const *, T##_pair_scales, T##_pair_ints, MINS)
KQ_I8MM_TILE(q4_K, block_q4_K, 1)
KQ_I8MM_TILE(q5_K, block_q5_K, 1)
KQ_I8MM_TILE(q6_K, block_q6_K, 0)

/* 2 tokens and more: rows in tiles of 4 (the last row repeated to fill one), tokens in pairs (the last token
 * repeated), 4 pairs a pass (or the 1 or 2 left); y[t·ys + r] */
#define KQ_I8MM_ENTRY(NAME, TILE, SRC, FIRST)                                                                \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt, float *y, \
                    int64_t ys, int64_t row_begin, int64_t row_end) {                                        \
        FIRST                                                                                                \
        const int64_t nb = cols / QK_K, npairs = (nt + 1) / 2;                                               \
        kpair_block *px = lk_scratch((size_t)(npairs * nb) * sizeof(kpair_block));                          \
        if (!px) return 0;                                                                                   \
        for (int64_t p = 0; p < npairs; p++)                                                                 \
            pack_kpair(nb, (const block_q8_K *)((const uint8_t *)x + (size_t)(2 * p) * xrb),                 \
                       (const block_q8_K *)((const uint8_t *)x + (size_t)(2 * p + 1 < nt ? 2 * p + 1 : 2 * p) * xrb), \
                       px + p * nb);                                                                         \
        for (int64_t r0 = row_begin; r0 < row_end; r0 += 4) {                                                \
            SRC                                                                                              \
            for (int64_t p0 = 0; p0 < npairs; p0 += 4) {                                                     \
                const int64_t left = npairs - p0;                                                            \
                const kpair_block *xp[4];                                                                    \
                for (int p = 0; p < 4; p++) xp[p] = px + (p0 + p < npairs ? p0 + p : npairs - 1) * nb;      \
                float o[32];                                                                                 \
                if (left >= 3) TILE(nb, src, xp, 4, o);                                                      \
                else if (left == 2) TILE(nb, src, xp, 2, o);                                                 \
                else TILE(nb, src, xp, 1, o);                                                                \
                for (int64_t t = 2 * p0; t < nt && t < 2 * p0 + 8; t++)                                      \
                    for (int k = 0; k < 4 && r0 + k < row_end; k++) y[t * ys + r0 + k] = o[(t - 2 * p0) * 4 + k]; \
            }                                                                                                \
        }                                                                                                    \
        return 1;                                                                                            \
    }
/* the tile's rows from r0 in the row layout */
#define KQ_ROWS_SRC(W)                                                                                       \
    const W *src[4];                                                                                         \
    for (int k = 0; k < 4; k++) src[k] = (const W *)((const uint8_t *)w + (size_t)(r0 + k < row_end ? r0 + k : row_end - 1) * wrb);
#define KQ_I8MM_GEMM(T, W) KQ_I8MM_ENTRY(gemm_##T, T##_mtile, KQ_ROWS_SRC(W), )
KQ_I8MM_GEMM(q4_K, block_q4_K)
KQ_I8MM_GEMM(q5_K, block_q5_K)
KQ_I8MM_GEMM(q6_K, block_q6_K)

/* ------------------------------ the 8-row layout (LK_ROWS8) ------------------------------ */

/* Half h (rows 4h..4h+3) of a group's super-block gb (arm/rows8_kquant.c's layout): the layout's vectors hold
 * 4 bytes of each row in its 32-bit lane, so the zip of the lanes of two vectors (bytes 8m..8m+3, 8m+4..8m+7)
 * is bytes 8m..8m+7 of rows 0, 1 (zip1) and of rows 2, 3 (zip2): the smmla operands of the two row pairs. */
INLINE void zip_pairs(const uint8_t *v0, const uint8_t *v1, uint8x16_t *p0, uint8x16_t *p1) {
    const uint32x4_t a = vreinterpretq_u32_u8(vld1q_u8(v0)), b = vreinterpretq_u32_u8(vld1q_u8(v1));
    *p0 = vreinterpretq_u8_u32(vzip1q_u32(a, b)), *p1 = vreinterpretq_u8_u32(vzip2q_u32(a, b));
}
/* Lanes (r0, r1, r2, r3) as row-pair lanes: (r0, r0, r1, r1), (r2, r2, r3, r3) */
INLINE void pair_lanes_s32(int32x4_t v, int32x4_t out[2]) { out[0] = vzip1q_s32(v, v), out[1] = vzip2q_s32(v, v); }
INLINE void pair_lanes_f32(float32x4_t v, float32x4_t out[2]) { out[0] = vzip1q_f32(v, v), out[1] = vzip2q_f32(v, v); }

/* Byte b of each 32-bit lane, as int32 lanes: unsigned (Q4_K's 6-bit scales), signed (Q6_K's) */
INLINE int32x4_t lane_byte_u(uint32x4_t v, int b) { return vreinterpretq_s32_u32(vandq_u32(vshlq_u32(v, vdupq_n_s32(-8 * b)), vdupq_n_u32(0xff))); }
INLINE int32x4_t lane_byte_s(int32x4_t v, int b) { return vshrq_n_s32(vshlq_s32(v, vdupq_n_s32(24 - 8 * b)), 24); }

typedef struct { const uint8_t *g; int h; } rows8_half; /* a group and its half */
#define R8_BLOCK(W, src, i) ((src).g + (size_t)(i) * 8 * sizeof(W) + 16 * (src).h) /* lk_rows8_kblock, the half */

INLINE void q4_K_r8_scales(rows8_half src, int64_t i, int32x4_t sc[2][16], int32x4_t mn[2][16], float32x4_t d[2],
                           float32x4_t dmin[2]) {
    const uint8_t *words = R8_BLOCK(block_q4_K, src, i) + 8 * 128;
    /* kquant_scales on the 4 rows' words at once */
    const uint32x4_t u0 = vld1q_u32((const uint32_t *)(const void *)(words + 32));
    const uint32x4_t u1 = vld1q_u32((const uint32_t *)(const void *)(words + 64));
    const uint32x4_t u2 = vld1q_u32((const uint32_t *)(const void *)(words + 96));
    const uint32x4_t m3f = vdupq_n_u32(0x3f3f3f3fu), m0f = vdupq_n_u32(0x0f0f0f0fu), m03 = vdupq_n_u32(0x03030303u);
    const uint32x4_t s[4] = {vandq_u32(u0, m3f),
                             vorrq_u32(vandq_u32(u2, m0f), vshlq_n_u32(vandq_u32(vshrq_n_u32(u0, 6), m03), 4)),
                             vandq_u32(u1, m3f),
                             vorrq_u32(vandq_u32(vshrq_n_u32(u2, 4), m0f), vshlq_n_u32(vandq_u32(vshrq_n_u32(u1, 6), m03), 4))};
    for (int j = 0; j < 8; j++) {
        int32x4_t a[2], b[2];
        pair_lanes_s32(lane_byte_u(s[j / 4], j % 4), a), pair_lanes_s32(lane_byte_u(s[2 + j / 4], j % 4), b);
        sc[0][j] = a[0], sc[1][j] = a[1], mn[0][j] = b[0], mn[1][j] = b[1];
    }
    const uint16x4x2_t dm = vld2_u16((const uint16_t *)(const void *)words);
    pair_lanes_f32(vcvt_f32_f16(vreinterpret_f16_u16(dm.val[0])), d);
    pair_lanes_f32(vcvt_f32_f16(vreinterpret_f16_u16(dm.val[1])), dmin);
}
INLINE void q6_K_r8_scales(rows8_half src, int64_t i, int32x4_t sc[2][16], int32x4_t mn[2][16], float32x4_t d[2],
                           float32x4_t dmin[2]) {
    (void)mn, (void)dmin;
    const uint8_t *b = R8_BLOCK(block_q6_K, src, i);
    for (int j = 0; j < 16; j++) {
        int32x4_t a[2];
        pair_lanes_s32(lane_byte_s(vld1q_s32((const int32_t *)(const void *)(b + 8 * 192 + 32 * (j / 4))), j % 4), a);
        sc[0][j] = a[0], sc[1][j] = a[1];
    }
    const uint8_t *dh = R8_BLOCK(block_q6_K, src, i) - 16 * src.h + 8 * 208 + 8 * src.h;
    pair_lanes_f32(vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)dh))), d);
}

/* Σ scale·q·a of super-block i of the half, row pairs × NP token pairs (as SUBS32_INTS) */
INLINE void q4_K_r8_ints(rows8_half src, int64_t i, const kpair_block *const *xp, const int NP,
                         const int32x4_t sc[2][16], int32x4_t sumi[2][4]) {
    const uint8_t *b = R8_BLOCK(block_q4_K, src, i);
    SUBBLOCK_LOOP
    for (int c = 0; c < 4; c++) {
        int8x16_t ch[2][2][4]; /* [sub-block 2c + e][row pair][chunk] */
        for (int k = 0; k < 4; k++) {
            uint8x16_t p[2];
            zip_pairs(b + 32 * (8 * c + 2 * k), b + 32 * (8 * c + 2 * k + 1), &p[0], &p[1]);
            for (int rp = 0; rp < 2; rp++) {
                ch[0][rp][k] = vreinterpretq_s8_u8(vandq_u8(p[rp], vdupq_n_u8(15)));
                ch[1][rp][k] = vreinterpretq_s8_u8(vshrq_n_u8(p[rp], 4));
            }
        }
        for (int e = 0; e < 2; e++) {
            const int j = 2 * c + e;
            const int32x4_t s[2] = {sc[0][j], sc[1][j]};
            PAIRS_ADD(4, ch[e], 4 * j, s, ZERO_START)
        }
    }
}
INLINE void q6_K_r8_ints(rows8_half src, int64_t i, const kpair_block *const *xp, const int NP,
                         const int32x4_t sc[2][16], int32x4_t sumi[2][4]) {
    const uint8_t *b = R8_BLOCK(block_q6_K, src, i);
    SUBBLOCK_LOOP
    for (int u = 0; u < 8; u++) { /* half h, quarters m and m + 2, elements 16k.. of each (as q6_K_pair_ints) */
        const int h = u / 4, m = (u / 2) % 2, k = u % 2;
        int8x16_t c[2][2][2]; /* [quarter m + 2e][row pair][chunk] */
        for (int n = 0; n < 2; n++) { /* elements 16k + 8n.. */
            uint8x16_t l[2], hb[2];
            const int vl = 16 * h + 8 * m + 4 * k + 2 * n, vh = 8 * h + 4 * k + 2 * n;
            zip_pairs(b + 32 * vl, b + 32 * (vl + 1), &l[0], &l[1]);
            zip_pairs(b + 8 * 128 + 32 * vh, b + 8 * 128 + 32 * (vh + 1), &hb[0], &hb[1]);
            for (int rp = 0; rp < 2; rp++) {
                const uint8x16_t hs = vshlq_u8(hb[rp], vdupq_n_s8((int8_t)(-2 * m)));
                c[0][rp][n] = q6_K_quarter(l[rp], hs, 0), c[1][rp][n] = q6_K_quarter(l[rp], hs, 1);
            }
        }
        for (int e = 0; e < 2; e++) {
            const int j = 8 * h + 2 * (m + 2 * e) + k;
            const int32x4_t s[2] = {sc[0][j], sc[1][j]};
            PAIRS_ADD(2, c[e], 2 * j, s, ZERO_START)
        }
    }
}

/* The 8-row layout's: half h of group g */
#define KQ_I8MM_R8_TILE(T, MINS) KQ_I8MM_TILE_OF(T##_r8tile, rows8_half, T##_r8_scales, T##_r8_ints, MINS)
KQ_I8MM_R8_TILE(q4_K, 1)
KQ_I8MM_R8_TILE(q6_K, 0)

/* The rows8 entry: rows row_begin..row_end (multiples of 8) in the 8-row layout · nt tokens; one token on the
 * dotprod kernel (arm/rows8_kquant.c), from 2 tokens half groups × 4 token pairs a tile */
#define KQ_R8_SRC const rows8_half src = {(const uint8_t *)w + (size_t)(r0 / 8 * 8) * wrb, (int)(r0 / 4 % 2)};
#define KQ_R8_ONE_TOKEN(T) \
    if (nt == 1) return lk_arm_rows8_##T(cols, w, wrb, x, xrb, nt, y, ys, row_begin, row_end);
#define KQ_I8MM_ROWS8(T) KQ_I8MM_ENTRY(rows8_##T, T##_r8tile, KQ_R8_SRC, KQ_R8_ONE_TOKEN(T))
KQ_I8MM_ROWS8(q4_K)
KQ_I8MM_ROWS8(q6_K)

#include "i8mm_target.h" /* up to here */

#endif

/* From 2 tokens (the few-token entry and the gemm): smmla does twice sdot's products an instruction */
LK_KERNELS(lk_neon_i8mm_kquant,
    LK_ARM_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_K, gemm_q4_K), LK_ARM_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q4_K, gemm_q4_K, 2),
    LK_ARM_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q5_K, gemm_q5_K), LK_ARM_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q5_K, gemm_q5_K, 2),
    LK_ARM_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q6_K, gemm_q6_K), LK_ARM_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q6_K, gemm_q6_K, 2),
    LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_K, rows8_q4_K), LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q6_K, rows8_q6_K));

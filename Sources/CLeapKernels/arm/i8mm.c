/* arm64 i8mm table: Q4_0 and Q8_0 products of 2 tokens and more on the int8 matrix multiply (smmla: a 2×8 by
 * 8×2 int8 product into 2×2 int32 lanes). Tiles of 4 rows × 4 tokens: per 32-element block, 16 smmla of row
 * pairs (weights) by token pairs (activations, interleaved once per call into scratch), then one float step
 * per lane, acc = fma((float)Σ q·a, dw·dx, acc): quant_rows.c's fold, so the bits of the one-token kernels
 * at every token count. The same on Q4_0 and Q8_0 matrices in the 8-row layout (rows8 entries: tiles of a
 * row pair of a group × up to 8 token pairs, of half a group for 1..3 token pairs, the rows' operands zipped
 * from the layout's vectors). The rest of the table is the dotprod one's. */
#include "../lk_tables.h"

#if defined(__aarch64__)
#include "lk_arm.h"

#include "i8mm_target.h" /* from here: dotprod and i8mm */

/* A token pair's block in smmla's order: chunk k (elements 8k..8k+7) of both tokens, token 0 in the low 8
 * bytes, and their scales as the lanes of a 2×2 tile want them (dx0, dx1, dx0, dx1). */
typedef struct {
    int8_t q[4][16];
    float d[4];
    int32_t start[4]; /* the rows8 tiles' sum chains start here (lanes as d): sum_start() − offset·Σa */
} pair_block;

/* The nb blocks of tokens x0, x1 (Q8_0) as pair_blocks, their chains' starts for quants with `offset` */
static void pack_pair(int64_t nb, const block_q8_0 *x0, const block_q8_0 *x1, int offset, pair_block *dst) {
    for (int64_t i = 0; i < nb; i++) {
        for (int h = 0; h < 2; h++) {
            const int64x2_t a = vreinterpretq_s64_s8(vld1q_s8(x0[i].qs + 16 * h));
            const int64x2_t b = vreinterpretq_s64_s8(vld1q_s8(x1[i].qs + 16 * h));
            vst1q_s8(dst[i].q[2 * h], vreinterpretq_s8_s64(vzip1q_s64(a, b)));
            vst1q_s8(dst[i].q[2 * h + 1], vreinterpretq_s8_s64(vzip2q_s64(a, b)));
        }
        const float d0 = h2f(x0[i].d), d1 = h2f(x1[i].d);
        dst[i].d[0] = d0, dst[i].d[1] = d1, dst[i].d[2] = d0, dst[i].d[3] = d1;
        const int32_t s0 = vaddlvq_s8(vld1q_s8(x0[i].qs)) + vaddlvq_s8(vld1q_s8(x0[i].qs + 16));
        const int32_t s1 = vaddlvq_s8(vld1q_s8(x1[i].qs)) + vaddlvq_s8(vld1q_s8(x1[i].qs + 16));
        const int32x4_t sums = {s0, s1, s0, s1};
        vst1q_s32(dst[i].start, vsubq_s32(sum_start(), vmulq_n_s32(sums, offset)));
    }
}

/* Weight rows' elements 0..15 (q0) and 16..31 (q1) of a block as int8 */
#define ROW_Q8_0(wb, q0, q1) const int8x16_t q0 = vld1q_s8((wb)->qs), q1 = vld1q_s8((wb)->qs + 16);
#define ROW_Q4_0(wb, q0, q1)                                                                                 \
    const uint8x16_t raw_##q0 = vld1q_u8((wb)->qs);                                                          \
    const int8x16_t q0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(raw_##q0, vdupq_n_u8(15))), vdupq_n_s8(8));  \
    const int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(raw_##q0, 4)), vdupq_n_s8(8));

/* The 4 chunks of a row pair: chunk k of row a in the low half, of row b in the high half */
INLINE void row_pair(int8x16_t qa0, int8x16_t qa1, int8x16_t qb0, int8x16_t qb1, int8x16_t c[4]) {
    const int64x2_t a0 = vreinterpretq_s64_s8(qa0), a1 = vreinterpretq_s64_s8(qa1);
    const int64x2_t b0 = vreinterpretq_s64_s8(qb0), b1 = vreinterpretq_s64_s8(qb1);
    c[0] = vreinterpretq_s8_s64(vzip1q_s64(a0, b0)), c[1] = vreinterpretq_s8_s64(vzip2q_s64(a0, b0));
    c[2] = vreinterpretq_s8_s64(vzip1q_s64(a1, b1)), c[3] = vreinterpretq_s8_s64(vzip2q_s64(a1, b1));
}

/* Lanes (r0 t0, r0 t1, r1 t0, r1 t1) of Σ over a block: rows c (row_pair), tokens p */
INLINE int32x4_t pair_dot(const int8x16_t c[4], const pair_block *p) {
    int32x4_t s = vmmlaq_s32(vdupq_n_s32(0), c[0], vld1q_s8(p->q[0]));
    s = vmmlaq_s32(s, c[1], vld1q_s8(p->q[1]));
    s = vmmlaq_s32(s, c[2], vld1q_s8(p->q[2]));
    return vmmlaq_s32(s, c[3], vld1q_s8(p->q[3]));
}

/* gemm of weight type W (ROW unpacks a block): rows in tiles of 4 (the last row repeated to fill one), tokens
 * in pairs (the last token repeated), two pairs a pass; y[t·ys + r] */
#define I8MM_GEMM(NAME, W, ROW)                                                                              \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt, float *y, \
                    int64_t ys, int64_t row_begin, int64_t row_end) {                                        \
        const int64_t nb = cols / QK, npairs = (nt + 1) / 2;                                                 \
        pair_block *px = lk_scratch((size_t)(npairs * nb) * sizeof(pair_block));                             \
        if (!px) return 0;                                                                                   \
        for (int64_t p = 0; p < npairs; p++)                                                                 \
            pack_pair(nb, (const block_q8_0 *)((const uint8_t *)x + (size_t)(2 * p) * xrb),                  \
                      (const block_q8_0 *)((const uint8_t *)x + (size_t)(2 * p + 1 < nt ? 2 * p + 1 : 2 * p) * xrb), \
                      0, px + p * nb);                                                                       \
        for (int64_t r0 = row_begin; r0 < row_end; r0 += 4) {                                                \
            const W *wr[4];                                                                                  \
            for (int k = 0; k < 4; k++)                                                                      \
                wr[k] = (const W *)((const uint8_t *)w + (size_t)(r0 + k < row_end ? r0 + k : row_end - 1) * wrb); \
            for (int64_t p0 = 0; p0 < npairs; p0 += 2) {                                                     \
                const pair_block *pa = px + p0 * nb, *pb = px + (p0 + 1 < npairs ? p0 + 1 : p0) * nb;        \
                float32x4_t acc[2][2] = {{vdupq_n_f32(0), vdupq_n_f32(0)}, {vdupq_n_f32(0), vdupq_n_f32(0)}}; \
                for (int64_t i = 0; i < nb; i++) {                                                           \
                    ROW(wr[0] + i, a0, a1) ROW(wr[1] + i, b0, b1) ROW(wr[2] + i, c0, c1) ROW(wr[3] + i, e0, e1) \
                    int8x16_t lo[4], hi[4];                                                                  \
                    row_pair(a0, a1, b0, b1, lo);                                                            \
                    row_pair(c0, c1, e0, e1, hi);                                                            \
                    const float32x4_t dlo = {h2f(wr[0][i].d), h2f(wr[0][i].d), h2f(wr[1][i].d), h2f(wr[1][i].d)}; \
                    const float32x4_t dhi = {h2f(wr[2][i].d), h2f(wr[2][i].d), h2f(wr[3][i].d), h2f(wr[3][i].d)}; \
                    const float32x4_t xa = vld1q_f32(pa[i].d), xb = vld1q_f32(pb[i].d);                      \
                    acc[0][0] = vfmaq_f32(acc[0][0], vcvtq_f32_s32(pair_dot(lo, pa + i)), vmulq_f32(dlo, xa)); \
                    acc[0][1] = vfmaq_f32(acc[0][1], vcvtq_f32_s32(pair_dot(lo, pb + i)), vmulq_f32(dlo, xb)); \
                    acc[1][0] = vfmaq_f32(acc[1][0], vcvtq_f32_s32(pair_dot(hi, pa + i)), vmulq_f32(dhi, xa)); \
                    acc[1][1] = vfmaq_f32(acc[1][1], vcvtq_f32_s32(pair_dot(hi, pb + i)), vmulq_f32(dhi, xb)); \
                }                                                                                            \
                /* lane 2·(row in pair) + (token in pair) */                                                 \
                for (int rp = 0; rp < 2; rp++)                                                               \
                    for (int tp = 0; tp < 2; tp++) {                                                         \
                        float o[4];                                                                          \
                        vst1q_f32(o, acc[rp][tp]);                                                           \
                        for (int l = 0; l < 4; l++) {                                                        \
                            const int64_t r = r0 + 2 * rp + l / 2, t = 2 * (p0 + tp) + l % 2;                \
                            if (r < row_end && t < nt && p0 + tp < npairs) y[t * ys + r] = o[l];             \
                        }                                                                                    \
                    }                                                                                        \
            }                                                                                                \
        }                                                                                                    \
        return 1;                                                                                            \
    }

I8MM_GEMM(gemm_q8_0, block_q8_0, ROW_Q8_0)
I8MM_GEMM(gemm_q4_0, block_q4_0, ROW_Q4_0)

/* ------------------------------ the 8-row layout (LK_ROWS8) ------------------------------ */

/* A row pair of a block (rows 2e, 2e + 1 of a half group) as smmla operands: c[j] = elements 8j..8j+7 of the
 * two rows, the first row in the low 8 bytes. The layout's vectors 2m and 2m + 1 hold bytes 8m..8m+3 and
 * 8m+4..8m+7 of the half's 4 rows in 32-bit lanes, so the zip of lanes e·2, e·2 + 1 of the two (8 bytes of
 * each at 8e) is bytes 8m..8m+7 of the pair. Q4_0's bytes hold elements j (low nibble) and j + 16 (high);
 * its quants go in as q, the chains' starts take the − 8 (as in arm/rows8.c). */
INLINE int8x16_t zip_lanes(const uint8_t *a, const uint8_t *b) {
    const uint32x2_t va = vld1_u32((const uint32_t *)(const void *)a), vb = vld1_u32((const uint32_t *)(const void *)b);
    return vreinterpretq_s8_u32(vzip1q_u32(vcombine_u32(va, va), vcombine_u32(vb, vb)));
}
/* q: the pair's 8 bytes of the block's vector 0 (vectors 32 bytes apart) */
INLINE void pair_q8_0(const uint8_t *q, int8x16_t c[4]) {
    for (int m = 0; m < 4; m++) c[m] = zip_lanes(q + 64 * m, q + 64 * m + 32);
}
INLINE void pair_q4_0(const uint8_t *q, int8x16_t c[4]) {
    for (int m = 0; m < 2; m++) {
        const uint8x16_t z = vreinterpretq_u8_s8(zip_lanes(q + 64 * m, q + 64 * m + 32));
        c[m] = vreinterpretq_s8_u8(vandq_u8(z, vdupq_n_u8(15)));
        c[2 + m] = vreinterpretq_s8_u8(vshrq_n_u8(z, 4));
    }
}

/* Lanes (r0 t0, r0 t1, r1 t0, r1 t1) of row pair c by token pair x as floats: from the pair's starts (Q4_0:
 * Σ(q − 8)·a), and sum_to_f32 gives the conversion's bits (as in arm/rows8.c) */
INLINE float32x4_t pair_sum(const int8x16_t c[4], const pair_block *x) {
    int32x4_t s = vmmlaq_s32(vld1q_s32(x->start), c[0], vld1q_s8(x->q[0]));
    s = vmmlaq_s32(s, c[1], vld1q_s8(x->q[1]));
    s = vmmlaq_s32(s, c[2], vld1q_s8(x->q[2]));
    return sum_to_f32(vmmlaq_s32(s, c[3], vld1q_s8(x->q[3])));
}
/* The offset of each type's quants */
#define OFFSET_q4_0 8
#define OFFSET_q8_0 0

/* Token pairs of a tile: one row pair's operands serve 8 pairs (16 tokens), which spreads its unpacking
 * thin; the 8 accumulators, the 4 operands and a pair's temporaries fit the registers (two row pairs would
 * not, and spill) */
enum { TILE_PAIRS = 8 };

/* dws[16·i + 4·p ..] = the scales of row pair p (rows 2p, 2p + 1) of group g's block i as the tiles' lanes
 * want them: (d2p, d2p, d2p+1, d2p+1); converted once per group for every tile of tokens */
static void group_scales(int64_t nb, const uint8_t *g, size_t qb, float *dws) {
    for (int64_t i = 0; i < nb; i++)
        for (int h = 0; h < 2; h++) {
            const float32x4_t dw = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)(g + lk_rows8_scales(nb, i, qb) + 8 * h))));
            vst1q_f32(dws + 16 * i + 8 * h, vzip1q_f32(dw, dw));
            vst1q_f32(dws + 16 * i + 8 * h + 4, vzip2q_f32(dw, dw));
        }
}

/* y[t·ys + r] for row pair rp of group g (rows 2rp, 2rp + 1; dws: the group's scales, group_scales) × NP
 * token pairs (px: pair k's block i at px[k·nb + i]); tokens from nt on dropped. Each block: the pair's
 * operands once (unpacked a block ahead, so that the smmla chains need not wait for them), 4 smmla a token
 * pair, the float step per lane. The empty asm after every second token pair ends those pairs' steps there:
 * without it clang loads every pair's activations at the top of the block and spills. */
#define ROWS8_TILE(T, QB)                                                                                    \
    INLINE void rows8_tile_##T(int64_t nb, const uint8_t *g, const float *dws, int rp, const pair_block *px, \
                               const int NP, int nt, float *y, int64_t ys) {                                 \
        float32x4_t acc[TILE_PAIRS];                                                                         \
        for (int k = 0; k < NP; k++) acc[k] = vdupq_n_f32(0.0f);                                             \
        const uint8_t *q = g + 16 * (rp / 2) + 8 * (rp % 2);                                                 \
        int8x16_t c[4], next[4];                                                                             \
        pair_##T(q, c);                                                                                      \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const float32x4_t dw = vld1q_f32(dws + 16 * i + 4 * rp);                                         \
            pair_##T(q + lk_rows8_quants(i + 1 < nb ? i + 1 : i, QB), next);                                 \
            for (int k = 0; k < NP; k++) {                                                                   \
                const pair_block *x = px + k * nb + i;                                                       \
                acc[k] = vfmaq_f32(acc[k], pair_sum(c, x), vmulq_f32(dw, vld1q_f32(x->d)));                  \
                if (k % 2) __asm__ volatile("" : "+w"(acc[k]), "+w"(acc[k - 1]) : : "memory");               \
            }                                                                                                \
            for (int m = 0; m < 4; m++) c[m] = next[m];                                                      \
        }                                                                                                    \
        for (int k = 0; k < NP; k++) { /* token 2k: lanes 0, 2; token 2k + 1: lanes 1, 3 */                  \
            if (2 * k < nt) vst1_f32(y + 2 * k * ys, vget_low_f32(vuzp1q_f32(acc[k], acc[k])));              \
            if (2 * k + 1 < nt) vst1_f32(y + (2 * k + 1) * ys, vget_low_f32(vuzp2q_f32(acc[k], acc[k])));    \
        }                                                                                                    \
    }
ROWS8_TILE(q4_0, 16)
ROWS8_TILE(q8_0, 32)

/* For 1..3 token pairs (a few tokens), tiles of both row pairs of half h of a group (rows 4h..4h+3): more
 * chains in flight than one row pair's, and the half's operands c[p][j] (elements 8j..8j+7 of row pair p)
 * from whole vectors, zip1 of their lanes rows 0, 1 and zip2 rows 2, 3 */
typedef struct { int8x16_t c[2][4]; } half_pairs;
/* q: the half's bytes of the block's vector 0, vectors 32 bytes apart */
INLINE void half_q8_0(const uint8_t *q, half_pairs *w) {
    for (int m = 0; m < 4; m++) {
        const uint32x4_t a = vreinterpretq_u32_u8(vld1q_u8(q + 64 * m)), b = vreinterpretq_u32_u8(vld1q_u8(q + 64 * m + 32));
        w->c[0][m] = vreinterpretq_s8_u32(vzip1q_u32(a, b)), w->c[1][m] = vreinterpretq_s8_u32(vzip2q_u32(a, b));
    }
}
INLINE void half_q4_0(const uint8_t *q, half_pairs *w) {
    for (int m = 0; m < 2; m++) {
        const uint32x4_t a = vreinterpretq_u32_u8(vld1q_u8(q + 64 * m)), b = vreinterpretq_u32_u8(vld1q_u8(q + 64 * m + 32));
        for (int p = 0; p < 2; p++) {
            const uint8x16_t z = vreinterpretq_u8_u32(p ? vzip2q_u32(a, b) : vzip1q_u32(a, b));
            w->c[p][m] = vreinterpretq_s8_u8(vandq_u8(z, vdupq_n_u8(15)));
            w->c[p][2 + m] = vreinterpretq_s8_u8(vshrq_n_u8(z, 4));
        }
    }
}
/* y[t·ys + r] for half h of group g (dws: its scales) × NP (1..3) token pairs, as rows8_tile's */
#define ROWS8_HALF_TILE(T, QB)                                                                               \
    INLINE void rows8_half_##T(int64_t nb, const uint8_t *g, const float *dws, int h, const pair_block *px, const int NP,\
                               int nt, float *y, int64_t ys) {                                               \
        float32x4_t acc[3][2];                                                                               \
        for (int k = 0; k < NP; k++) acc[k][0] = acc[k][1] = vdupq_n_f32(0.0f);                              \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const float32x4_t d01 = vld1q_f32(dws + 16 * i + 8 * h), d23 = vld1q_f32(dws + 16 * i + 8 * h + 4);\
            half_pairs wq;                                                                                   \
            half_##T(g + lk_rows8_quants(i, QB) + 16 * h, &wq);                                              \
            for (int k = 0; k < NP; k++) {                                                                   \
                const pair_block *x = px + k * nb + i;                                                       \
                const float32x4_t dx = vld1q_f32(x->d);                                                      \
                acc[k][0] = vfmaq_f32(acc[k][0], pair_sum(wq.c[0], x), vmulq_f32(d01, dx));                  \
                acc[k][1] = vfmaq_f32(acc[k][1], pair_sum(wq.c[1], x), vmulq_f32(d23, dx));                  \
            }                                                                                                \
        }                                                                                                    \
        for (int k = 0; k < NP; k++) { /* token 2k: lanes 0, 2 of both pairs; token 2k + 1: lanes 1, 3 */    \
            if (2 * k < nt) vst1q_f32(y + 2 * k * ys, vuzp1q_f32(acc[k][0], acc[k][1]));                     \
            if (2 * k + 1 < nt) vst1q_f32(y + (2 * k + 1) * ys, vuzp2q_f32(acc[k][0], acc[k][1]));           \
        }                                                                                                    \
    }
ROWS8_HALF_TILE(q4_0, 16)
ROWS8_HALF_TILE(q8_0, 32)

/* Tokens a pass over the weights (their pairs' copy stays in L2 while each group's rows pass over it) */
enum { ROWS8_CHUNK = 32 };

/* The rows8 entry: rows row_begin..row_end (multiples of 8) of w in the 8-row layout · nt tokens; one token
 * on the dotprod kernel (arm/rows8.c), from 2 tokens a row pair × 4..8 token pairs a tile (a half group × the
 * 1..3 token pairs left) */
#define ROWS8_GEMM(T, QB)                                                                                    \
    __attribute__((noinline)) static void rows8_tiles_##T(int64_t nb, const uint8_t *w, size_t wrb, const pair_block *px, \
                                                          float *dws, int64_t nt, float *y, int64_t ys, int64_t row_begin, \
                                                          int64_t row_end) {                                 \
        const int64_t npairs = (nt + 1) / 2;                                                                 \
        for (int64_t r = row_begin; r < row_end; r += 8) {                                                   \
            const uint8_t *g = w + (size_t)r * wrb;                                                          \
            group_scales(nb, g, QB, dws);                                                                    \
            for (int64_t p = 0; p < npairs; p += TILE_PAIRS) {                                               \
                const int left = (int)(nt - 2 * p);                                                          \
                const pair_block *xt = px + p * nb;                                                          \
                float *yt = y + 2 * p * ys + r;                                                              \
                if (npairs - p <= 3)                                                                         \
                    for (int h = 0; h < 2; h++)                                                              \
                        switch (npairs - p) {                                                                \
                        case 1: rows8_half_##T(nb, g, dws, h, xt, 1, left, yt + 4 * h, ys); break;           \
                        case 2: rows8_half_##T(nb, g, dws, h, xt, 2, left, yt + 4 * h, ys); break;           \
                        default: rows8_half_##T(nb, g, dws, h, xt, 3, left, yt + 4 * h, ys); break;          \
                        }                                                                                    \
                else                                                                                         \
                    for (int rp = 0; rp < 4; rp++)                                                           \
                        switch (npairs - p) {                                                                \
                        case 4: rows8_tile_##T(nb, g, dws, rp, xt, 4, left, yt + 2 * rp, ys); break;         \
                        case 5: rows8_tile_##T(nb, g, dws, rp, xt, 5, left, yt + 2 * rp, ys); break;         \
                        case 6: rows8_tile_##T(nb, g, dws, rp, xt, 6, left, yt + 2 * rp, ys); break;         \
                        case 7: rows8_tile_##T(nb, g, dws, rp, xt, 7, left, yt + 2 * rp, ys); break;         \
                        default: rows8_tile_##T(nb, g, dws, rp, xt, 8, left, yt + 2 * rp, ys); break;        \
                        }                                                                                    \
            }                                                                                                \
        }                                                                                                    \
    }                                                                                                        \
    static int rows8_##T(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt,     \
                         float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                         \
        if (nt == 1) return lk_arm_rows8_##T(cols, w, wrb, x, xrb, nt, y, ys, row_begin, row_end);          \
        const int64_t nb = cols / QK;                                                                        \
        /* scratch: the token pairs, then a group's scales (16 floats a block) */                           \
        pair_block *px = lk_scratch((size_t)(ROWS8_CHUNK / 2 * nb) * sizeof(pair_block) + (size_t)nb * 16 * sizeof(float)); \
        if (!px) return 0;                                                                                   \
        float *dws = (float *)(void *)(px + ROWS8_CHUNK / 2 * nb);                                           \
        for (int64_t t = 0; t < nt; t += ROWS8_CHUNK) {                                                      \
            const int64_t n = nt - t < ROWS8_CHUNK ? nt - t : ROWS8_CHUNK;                                   \
            const uint8_t *xt = (const uint8_t *)x + (size_t)t * xrb;                                        \
            for (int64_t p = 0; p < (n + 1) / 2; p++)                                                        \
                pack_pair(nb, (const block_q8_0 *)(const void *)(xt + (size_t)(2 * p) * xrb),                \
                          (const block_q8_0 *)(const void *)(xt + (size_t)(2 * p + 1 < n ? 2 * p + 1 : 2 * p) * xrb), OFFSET_##T, px + p * nb); \
            rows8_tiles_##T(nb, (const uint8_t *)w, wrb, px, dws, n, y + t * ys, ys, row_begin, row_end);    \
        }                                                                                                    \
        return 1;                                                                                            \
    }
ROWS8_GEMM(q4_0, 16)
ROWS8_GEMM(q8_0, 32)

#include "i8mm_target.h" /* up to here */

#endif

/* From 2 tokens (the few-token entry and the gemm): smmla does twice sdot's products an instruction */
LK_KERNELS(lk_neon_i8mm,
    LK_ARM_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q8_0, gemm_q8_0), LK_ARM_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q8_0, gemm_q8_0, 2),
    LK_ARM_KERNEL(LK_E_FEW_TOKENS, LK_TYPE_Q4_0, gemm_q4_0), LK_ARM_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q4_0, gemm_q4_0, 2),
    LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q8_0, rows8_q8_0), LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_0, rows8_q4_0));

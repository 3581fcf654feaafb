/* arm64 products of Q4_0 and Q8_0 weights in the 8-row layout (LK_ROWS8, rows8.c) with their Q8_0
 * activations, on the dot-product instructions: the rows8 entry of the dotprod table, and the i8mm table's
 * one-token phase (i8mm.c hands it one token).
 *
 * The layout puts bytes 4k..4k+3 of 8 rows' quants side by side in vector k (32 bytes), so the low 16 bytes
 * of a vector are rows 0..3 in the lanes of an sdot by element: acc(row) += w(row, 4k..4k+3) · x(4k..4k+3)
 * with x's 4 bytes one lane of the token's register. No transposes and no horizontal adds: a block's integer
 * sums of 4 rows come out in one vector, and its 4 scales (f16, side by side in the layout) multiply them in
 * float lanes. Q4_0's nibbles q (a mask, a shift) go in as they are, and each sum chain starts at −8·Σa
 * (Σa, the token block's sum, taken once per call): Σ(q − 8)·a. The chains start from sum_start (lk_arm.h)
 * besides, so that sum_to_f32 makes them floats with the conversion's bits; the start values lie with the
 * activations, 4 copies for the 4 lanes, so that starting a chain is a plain load.
 *
 * Every result is quant_rows.c's fold, acc = fma((float)Σ q·a, dw·dx, acc) over the blocks in order, so a
 * token has the bits of the row layout's kernels whatever the batch.
 *
 *   one token:  8 rows (a group) a block, the group's quants and scales streamed in order with prefetch
 *   2+ tokens:  4 rows (half a group) × 8 tokens a block (the rest in one tile of their count), each block's
 *               nibbles unpacked once for the 8 tokens, from a copy of the activations with 8 tokens' blocks
 *               side by side */
#include "../lk_tables.h"

#if defined(__aarch64__)
#include "lk_arm.h"

LK_ARM_TARGET_BEGIN("dotprod", "+dotprod")

/* 16 quant bytes of Q4_0 (byte j: elements j, j + 16) as q: lo (elements j), hi (elements j + 16) */
INLINE void nibbles16(uint8x16_t raw, int8x16_t *lo, int8x16_t *hi) {
    *lo = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15)));
    *hi = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
}

/* The 4 f16 scales at p as floats */
INLINE float32x4_t scales4(const uint8_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)p))); }
/* The offset of each type's quants (Σ(q − OFFSET)·a = Σq·a − OFFSET·Σa) */
#define OFFSET_q4_0 8
#define OFFSET_q8_0 0

/* The start of a sum chain of token block x, sum_start() − offset·Σa, into its 4 lanes at dst */
INLINE void chain_start(const block_q8_0 *x, int offset, int32_t *dst) {
    const int32_t sum = vaddlvq_s8(vld1q_s8(x->qs)) + vaddlvq_s8(vld1q_s8(x->qs + 16));
    vst1q_s32(dst, vsubq_s32(sum_start(), vdupq_n_s32(offset * sum)));
}

/* A block of 4 rows as 8 vectors: v[k] holds the rows' elements of the token's 4-byte lane k (elements
 * 4k..4k+3 for k < 4, 16 + 4(k − 4).. after: Q8_0 its vectors k as they lie, Q4_0 the low nibbles of its
 * vectors 0..3 then their high nibbles) */
typedef struct { int8x16_t v[8]; } rows4;
/* q: the 4 rows' bytes of the block's vector 0 (vectors 32 bytes apart) */
INLINE void load_q4_0(const uint8_t *q, rows4 *w) {
    for (int k = 0; k < 4; k++) nibbles16(vld1q_u8(q + 32 * k), &w->v[k], &w->v[4 + k]);
}
INLINE void load_q8_0(const uint8_t *q, rows4 *w) {
    for (int k = 0; k < 8; k++) w->v[k] = vld1q_s8((const int8_t *)q + 32 * k);
}

/* Σ_k v[k] · lane k of the token (a0: elements 0..15, a1: 16..31) from `start` (chain_start), the 4 rows'
 * sums as floats: one chain of sdot (the blocks' chains overlap) */
INLINE float32x4_t dot8(const rows4 *w, int8x16_t a0, int8x16_t a1, int32x4_t start) {
    const int8x16_t *v = w->v;
    int32x4_t s = vdotq_laneq_s32(start, v[0], a0, 0);
    s = vdotq_laneq_s32(s, v[1], a0, 1), s = vdotq_laneq_s32(s, v[2], a0, 2), s = vdotq_laneq_s32(s, v[3], a0, 3);
    s = vdotq_laneq_s32(s, v[4], a1, 0), s = vdotq_laneq_s32(s, v[5], a1, 1), s = vdotq_laneq_s32(s, v[6], a1, 2);
    return sum_to_f32(vdotq_laneq_s32(s, v[7], a1, 3));
}

/* ---------------------------------- one token ---------------------------------- */

/* y[0..7] = the 8 rows of group g (nb blocks) · token x (starts: its blocks' chain_start); QB quant bytes a
 * block */
#define ROWS8_ONE(T, QB)                                                                                     \
    __attribute__((noinline)) static void rows8_one_##T(int64_t nb, const uint8_t *g, const block_q8_0 *x,   \
                                                        const int32_t *starts, float *y) {                   \
        float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = vdupq_n_f32(0.0f);                                      \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const uint8_t *q = g + lk_rows8_quants(i, QB), *sc = g + lk_rows8_scales(nb, i, QB);             \
            for (int l = 0; l < QB * 8 / 64; l++) lk_prefetch_weights(q + LK_ARM_PREFETCH_BYTES + 64 * l);   \
            const int8x16_t a0 = vld1q_s8(x[i].qs), a1 = vld1q_s8(x[i].qs + 16);                             \
            const float dx = h2f(x[i].d);                                                                    \
            const int32x4_t start = vld1q_s32(starts + 4 * i);                                               \
            rows4 w0, w1; /* rows 0..3, 4..7 */                                                              \
            load_##T(q, &w0), load_##T(q + 16, &w1);                                                         \
            acc0 = vfmaq_f32(acc0, dot8(&w0, a0, a1, start), vmulq_n_f32(scales4(sc), dx));                  \
            acc1 = vfmaq_f32(acc1, dot8(&w1, a0, a1, start), vmulq_n_f32(scales4(sc + 8), dx));              \
        }                                                                                                    \
        vst1q_f32(y, acc0);                                                                                  \
        vst1q_f32(y + 4, acc1);                                                                              \
    }
ROWS8_ONE(q4_0, 16)
ROWS8_ONE(q8_0, 32)

/* -------------------------------- several tokens -------------------------------- */

/* Tokens a tile (the block's 8 weight vectors serve all of them): the activations' copy holds block i of
 * tile j at tiles[j·nb + i] */
enum { TILE = 8 };
typedef struct {
    int8_t q[TILE][32];
    float d[TILE];
    int32_t start[TILE][4]; /* chain_start */
} token_tile;

/* tiles (ceil(nt / TILE) · nb of them) = tokens x (nt rows of nb Q8_0 blocks), the last token repeated to fill,
 * their chains' starts for quants with `offset` */
static void pack_tokens(int64_t nb, const uint8_t *x, size_t xrb, int64_t nt, int offset, token_tile *tiles) {
    for (int64_t j = 0; j < (nt + TILE - 1) / TILE; j++)
        for (int t = 0; t < TILE; t++) {
            const int64_t tt = j * TILE + t < nt ? j * TILE + t : nt - 1;
            const block_q8_0 *xt = (const block_q8_0 *)(const void *)(x + (size_t)tt * xrb);
            for (int64_t i = 0; i < nb; i++) {
                memcpy(tiles[j * nb + i].q[t], xt[i].qs, 32);
                tiles[j * nb + i].d[t] = h2f(xt[i].d);
                chain_start(xt + i, offset, tiles[j * nb + i].start[t]);
            }
        }
}

/* y[t·ys + r] for 4 rows (half h of group g, dws its scales as floats) × the first NT tokens (1..TILE) of tile
 * tl; tokens from nt on dropped. The empty asm after each token ends its step there: without it clang loads
 * every token's activations at the top of the block and runs short of registers. */
#define ROWS4_TILE(T, QB)                                                                                    \
    INLINE void T##_tile4(int64_t nb, const uint8_t *g, const float *dws, int h, const token_tile *tl, const int NT, int nt, \
                          float *y, int64_t ys) {                                                            \
        float32x4_t acc[TILE];                                                                               \
        for (int t = 0; t < NT; t++) acc[t] = vdupq_n_f32(0.0f);                                             \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const float32x4_t dw = vld1q_f32(dws + 8 * i + 4 * h);                                           \
            rows4 wq;                                                                                        \
            load_##T(g + lk_rows8_quants(i, QB) + 16 * h, &wq);                                              \
            const token_tile *x = tl + i;                                                                    \
            for (int t = 0; t < NT; t++) {                                                                   \
                const float32x4_t s = dot8(&wq, vld1q_s8(x->q[t]), vld1q_s8(x->q[t] + 16), vld1q_s32(x->start[t])); \
                acc[t] = vfmaq_f32(acc[t], s, vmulq_n_f32(dw, x->d[t]));                                     \
                __asm__ volatile("" : "+w"(acc[t]) : : "memory");                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int t = 0; t < NT && t < nt; t++) vst1q_f32(y + t * ys, acc[t]);                                \
    }
ROWS4_TILE(q4_0, 16)
ROWS4_TILE(q8_0, 32)

/* Tokens a pass over the weights: their activations' copy stays in L2 while each group's rows pass over it */
enum { CHUNK = 4 * TILE };

#define ROWS8_KERNELS(T, QB)                                                                                 \
    __attribute__((noinline)) static void rows8_few_##T(int64_t nb, const uint8_t *w, size_t wrb, const token_tile *tiles, \
                                                        float *dws, int64_t nt, float *y, int64_t ys, int64_t row_begin, \
                                                        int64_t row_end) {                                   \
        for (int64_t r = row_begin; r < row_end; r += 8) {                                                   \
            const uint8_t *g = w + (size_t)r * wrb;                                                          \
            /* the group's scales as floats once, for both halves and every tile of tokens */                \
            for (int64_t i = 0; i < nb; i++) {                                                               \
                vst1q_f32(dws + 8 * i, scales4(g + lk_rows8_scales(nb, i, QB)));                             \
                vst1q_f32(dws + 8 * i + 4, scales4(g + lk_rows8_scales(nb, i, QB) + 8));                     \
            }                                                                                                \
            for (int h = 0; h < 2; h++)                                                                      \
                for (int64_t t = 0; t < nt; t += TILE) {                                                     \
                    float *yt = y + t * ys + r + 4 * h;                                                      \
                    const token_tile *tl = tiles + t / TILE * nb;                                            \
                    switch (nt - t < TILE ? nt - t : TILE) {                                                 \
                    case 1: T##_tile4(nb, g, dws, h, tl, 1, 1, yt, ys); break;                               \
                    case 2: T##_tile4(nb, g, dws, h, tl, 2, 2, yt, ys); break;                               \
                    case 3: T##_tile4(nb, g, dws, h, tl, 3, 3, yt, ys); break;                               \
                    case 4: T##_tile4(nb, g, dws, h, tl, 4, 4, yt, ys); break;                               \
                    case 5: T##_tile4(nb, g, dws, h, tl, 5, 5, yt, ys); break;                               \
                    case 6: T##_tile4(nb, g, dws, h, tl, 6, 6, yt, ys); break;                               \
                    case 7: T##_tile4(nb, g, dws, h, tl, 7, 7, yt, ys); break;                               \
                    default: T##_tile4(nb, g, dws, h, tl, TILE, TILE, yt, ys); break;                        \
                    }                                                                                        \
                }                                                                                            \
        }                                                                                                    \
    }                                                                                                        \
    /* rows row_begin..row_end (multiples of 8) of w (the 8-row layout) · nt tokens x: y[t·ys + r] */        \
    int lk_arm_rows8_##T(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt,     \
                         float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                         \
        const int64_t nb = cols / QK;                                                                        \
        if (nt == 1) {                                                                                       \
            int32_t starts[4 * LK_ROWS8_MAX_COLS / QK];                                                      \
            for (int64_t i = 0; i < nb; i++) chain_start((const block_q8_0 *)x + i, OFFSET_##T, starts + 4 * i); \
            for (int64_t r = row_begin; r < row_end; r += 8)                                                 \
                rows8_one_##T(nb, (const uint8_t *)w + (size_t)r * wrb, x, starts, y + r);                   \
            return 1;                                                                                        \
        }                                                                                                    \
        /* scratch: the tokens' tiles, then the group's scales (8 floats a block) */                         \
        token_tile *tiles = lk_scratch((size_t)(CHUNK / TILE * nb) * sizeof(token_tile) + (size_t)nb * 8 * sizeof(float)); \
        if (!tiles) return 0;                                                                                \
        float *dws = (float *)(void *)(tiles + CHUNK / TILE * nb);                                           \
        for (int64_t t = 0; t < nt; t += CHUNK) {                                                            \
            const int64_t n = nt - t < CHUNK ? nt - t : CHUNK;                                               \
            pack_tokens(nb, (const uint8_t *)x + (size_t)t * xrb, xrb, n, OFFSET_##T, tiles);                \
            rows8_few_##T(nb, w, wrb, tiles, dws, n, y + t * ys, ys, row_begin, row_end);                    \
        }                                                                                                    \
        return 1;                                                                                            \
    }
ROWS8_KERNELS(q4_0, 16)
ROWS8_KERNELS(q8_0, 32)

LK_ARM_TARGET_END
#endif

/* The dotprod table's rows8 entries (names only on other architectures) */
LK_KERNELS(lk_neon_dotprod_rows8,
    LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_0, lk_arm_rows8_q4_0), LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q8_0, lk_arm_rows8_q8_0));

/* arm64 products of the quantized types with their Q8 activations, one source for two levels: built here for
 * ARMv8.0 NEON (16-bit products, smull + sadalp) and again as dotprod/quant_rows.c for the dot-product
 * instructions (sdot), each a table of its own (arm/table.c).
 *
 * Every (row, token) result is one fold over the weight blocks, whatever kernel computes it:
 *   32-block types:  acc = fma((float)Σ q·a, dw·dx, acc)  [Q4_1, Q5_1: then acc = fma(m, s, acc)]
 *   K-quants:        acc = fma(dx, fma(-dmin, (float)Σ min·bsum, d·(float)Σ scale·q·a), acc)   per super-block
 * with exact integer sums, so a token has the same bits in the one-token kernels (one row or two row streams),
 * in the few-token tiles (2 rows × up to 16 tokens, lanes = tokens) and in i8mm.c's gemm, on both levels:
 * a batch gives the bits of its tokens one by one.
 *
 * Entries: dot, dot2 (rows r and r + half), dot4, matvec (two row streams with prefetch), few_tokens (2..15
 * tokens: each weight block unpacked once for all of them; on dotprod the 32-block types and the K-quants in
 * 4-row tiles with the rows in the lanes), gemm (the few-token tiles 16 tokens at a time) of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K. */
#include "../lk_tables.h"

#if defined(__aarch64__)
#include "lk_arm.h"
#include "kquant_blocks.h"

#include "dotprod_target.h" /* from here: the dotprod build's target */

/* lanes of acc += groups of 4 products a·b (sdot); ARMv8.0: the same lane sums in another grouping, which
 * the kernels only ever add up whole */
INLINE int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
#ifdef LK_ARM_DOTPROD
    return vdotq_s32(acc, a, b);
#else
    const int16x8_t p0 = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    const int16x8_t p1 = vmull_high_s8(a, b);
    return vpadalq_s16(vpadalq_s16(acc, p0), p1);
#endif
}

/* lane sums = Σ q·a over 32 elements (q0: 0..15, q1: 16..31) */
INLINE int32x4_t block_dot(int8x16_t q0, int8x16_t q1, const int8_t *a) {
    return dot_s8(dot_s8(vdupq_n_s32(0), q0, vld1q_s8(a)), q1, vld1q_s8(a + 16));
}

/* lane t = Σ lanes of p_t */
INLINE int32x4_t hsum4(int32x4_t p0, int32x4_t p1, int32x4_t p2, int32x4_t p3) {
    return vpaddq_s32(vpaddq_s32(p0, p1), vpaddq_s32(p2, p3));
}

/* Most tokens of a tile (4 groups of 4 lanes); results at s[r · TILE_TOKENS + t]. */
enum { TILE_TOKENS = 16 };

/* ---------------------------------- 32-block types ---------------------------------- */

/* PREP(wb) sets q0 (elements 0..15) and q1 (16..31) of weight block wb as int8x16_t. */
#define NIBBLES(wb)                                                                                          \
    const uint8x16_t raw = vld1q_u8((wb)->qs);                                                               \
    const uint8x16_t lo = vandq_u8(raw, vdupq_n_u8(15)), hi = vshrq_n_u8(raw, 4);
/* The fifth bits (qh: bit l of element l) as 16 in bytes h0 (elements 0..15) and h1 (16..31): each byte of qh
 * looked up in a table of its 8 bits spread over 8 bytes, two lookups a vector (loads, not the vector
 * pipes a byte shuffle takes) */
#define SPREAD_BIT(b, k) ((uint64_t)(((b) >> (k)) & 1) << (8 * (k) + 4))
#define SPREAD_BYTE(b)                                                                                       \
    (SPREAD_BIT(b, 0) | SPREAD_BIT(b, 1) | SPREAD_BIT(b, 2) | SPREAD_BIT(b, 3) | SPREAD_BIT(b, 4) |          \
     SPREAD_BIT(b, 5) | SPREAD_BIT(b, 6) | SPREAD_BIT(b, 7))
#define SPREAD4(b) SPREAD_BYTE(b), SPREAD_BYTE((b) + 1), SPREAD_BYTE((b) + 2), SPREAD_BYTE((b) + 3)
#define SPREAD16(b) SPREAD4(b), SPREAD4((b) + 4), SPREAD4((b) + 8), SPREAD4((b) + 12)
#define SPREAD64(b) SPREAD16(b), SPREAD16((b) + 16), SPREAD16((b) + 32), SPREAD16((b) + 48)
static const uint64_t high_bit_bytes[256] = {SPREAD64(0), SPREAD64(64), SPREAD64(128), SPREAD64(192)};
/* bytes b0 and b1 of the table as one vector */
INLINE uint8x16_t high_bits16(uint32_t b0, uint32_t b1) {
    const uint64x2_t v = vcombine_u64(vld1_u64(high_bit_bytes + b0), vdup_n_u64(0));
    return vreinterpretq_u8_u64(vld1q_lane_u64(high_bit_bytes + b1, v, 1));
}
#define HIGH_BITS(wb)                                                                                        \
    uint64_t head; /* the block's first 8 bytes: its scales and qh in one load */                           \
    memcpy(&head, (wb), 8);                                                                                  \
    const uint32_t qh32 = (uint32_t)(head >> (8 * ((wb)->qh - (const uint8_t *)(wb))));                      \
    const uint8x16_t h0 = high_bits16(qh32 & 0xff, (qh32 >> 8) & 0xff);                                      \
    const uint8x16_t h1 = high_bits16((qh32 >> 16) & 0xff, qh32 >> 24);
#define PREP_Q4_0(wb)                                                                                        \
    NIBBLES(wb) const int8x16_t q0 = vsubq_s8(vreinterpretq_s8_u8(lo), vdupq_n_s8(8));                       \
    const int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(hi), vdupq_n_s8(8));
#define PREP_Q4_1(wb)                                                                                        \
    NIBBLES(wb) const int8x16_t q0 = vreinterpretq_s8_u8(lo), q1 = vreinterpretq_s8_u8(hi);
#define PREP_Q5_0(wb)                                                                                        \
    NIBBLES(wb) HIGH_BITS(wb)                                                                                \
    const int8x16_t q0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(lo, h0)), vdupq_n_s8(16));                   \
    const int8x16_t q1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(hi, h1)), vdupq_n_s8(16));
#define PREP_Q5_1(wb)                                                                                        \
    NIBBLES(wb) HIGH_BITS(wb)                                                                                \
    const int8x16_t q0 = vreinterpretq_s8_u8(vorrq_u8(lo, h0)), q1 = vreinterpretq_s8_u8(vorrq_u8(hi, h1));
#define PREP_Q8_0(wb) const int8x16_t q0 = vld1q_s8((wb)->qs), q1 = vld1q_s8((wb)->qs + 16);

/* Token t's activation block i in a tile's operand: ts, bs its token and block strides in bytes (a row per
 * token, or the few-token kernels' interleaved copy, one block of each token after another) */
#define XB(X, t, i) ((const X *)(const void *)((const uint8_t *)xb + (size_t)(t) * ts + (size_t)(i) * bs))

/* The two kernels of a 32-block type T (weights W, activations X, MIN: 1 when the block has a min term):
 *   T_one(nb, wr, NR, x, s):               s[r] = row wr[r] · token x, r < NR (1, 2), prefetching ahead
 *   T_tile(nb, wr, NR, xb, ts, bs, NG, s): s[r·16 + t] = row wr[r] · token t (XB), t < 4·NG (lanes = tokens) */
#define BLOCK32_KERNELS(T, W, X, PREP, MIN)                                                                  \
    /* block i of rows wr[0], wr[1] · token x added to the lanes of acc2; PF: prefetch each row ahead */       \
    INLINE float32x2_t T##_pair_step(float32x2_t acc2, const W *const *wr, const X *x, int64_t i, const int PF) { \
        const int8x16_t a0 = vld1q_s8(x[i].qs), a1 = vld1q_s8(x[i].qs + 16);                                 \
        int32x4_t p[2];                                                                                      \
        float dw[2], mw[2];                                                                                  \
        for (int r = 0; r < 2; r++) {                                                                        \
            const W *wb = wr[r] + i;                                                                         \
            if (PF) lk_prefetch_weights((const uint8_t *)wb + LK_ARM_PREFETCH_BYTES);                        \
            PREP(wb)                                                                                         \
            p[r] = dot_s8(dot_s8(vdupq_n_s32(0), q0, a0), q1, a1);                                           \
            dw[r] = h2f(wb->d);                                                                              \
            if (MIN) mw[r] = h2f(((const block_q4_1 *)(const void *)wb)->m);                                 \
        }                                                                                                    \
        const int32x4_t pairs = vpaddq_s32(p[0], p[1]);                                                      \
        const int32x2_t isum = vpadd_s32(vget_low_s32(pairs), vget_high_s32(pairs));                         \
        acc2 = vfma_f32(acc2, vcvt_f32_s32(isum), vmul_n_f32(vld1_f32(dw), h2f(x[i].d)));                    \
        if (MIN) acc2 = vfma_n_f32(acc2, vld1_f32(mw), h2f(((const block_q8_1 *)(const void *)(x + i))->s)); \
        return acc2;                                                                                         \
    }                                                                                                        \
    INLINE void T##_one(int64_t nb, const W *const *wr, const int NR, const X *x, float *s) {                 \
        if (NR == 2) { /* the two rows' sums and float steps in the lanes of one vector; the types with a min \
                        * term take the blocks in twos, one prefetch a row for both (a cache line holds more   \
                        * than two blocks), the others one by one (their longer twofold body schedules worse   \
                        * in the static estimates) */                                                          \
            float32x2_t acc2 = vdup_n_f32(0.0f);                                                             \
            int64_t i = 0;                                                                                   \
            if (MIN)                                                                                         \
                for (; i + 1 < nb; i += 2) acc2 = T##_pair_step(acc2, wr, x, i, 1), acc2 = T##_pair_step(acc2, wr, x, i + 1, 0); \
            for (; i < nb; i++) acc2 = T##_pair_step(acc2, wr, x, i, 1);                                     \
            vst1_f32(s, acc2);                                                                               \
            return;                                                                                          \
        }                                                                                                    \
        float acc[2] = {0.0f, 0.0f};                                                                         \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const int8x16_t a0 = vld1q_s8(x[i].qs), a1 = vld1q_s8(x[i].qs + 16);                             \
            const float dx = h2f(x[i].d);                                                                    \
            for (int r = 0; r < NR; r++) {                                                                   \
                const W *wb = wr[r] + i;                                                                     \
                lk_prefetch_weights((const uint8_t *)wb + LK_ARM_PREFETCH_BYTES);                            \
                PREP(wb)                                                                                     \
                const int32_t isum = vaddvq_s32(dot_s8(dot_s8(vdupq_n_s32(0), q0, a0), q1, a1));             \
                acc[r] = __builtin_fmaf((float)isum, h2f(wb->d) * dx, acc[r]);                               \
                if (MIN) acc[r] = __builtin_fmaf(h2f(((const block_q4_1 *)(const void *)wb)->m),             \
                                                 h2f(((const block_q8_1 *)(const void *)(x + i))->s), acc[r]); \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < NR; r++) s[r] = acc[r];                                                          \
    }                                                                                                        \
    INLINE void T##_tile(int64_t nb, const W *const *wr, const int NR, const X *xb, const size_t ts,         \
                         const size_t bs, const int NG, float *s) {                                          \
        float32x4_t acc[2][4];                                                                               \
        for (int r = 0; r < 2; r++)                                                                          \
            for (int g = 0; g < 4; g++) acc[r][g] = vdupq_n_f32(0.0f);                                       \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            float dx[TILE_TOKENS], sx[TILE_TOKENS];                                                          \
            for (int t = 0; t < 4 * NG; t++) {                                                               \
                dx[t] = h2f(XB(X, t, i)->d);                                                                    \
                if (MIN) sx[t] = h2f(((const block_q8_1 *)(const void *)XB(X, t, i))->s);                      \
            }                                                                                                \
            for (int r = 0; r < NR; r++) {                                                                   \
                const W *wb = wr[r] + i;                                                                     \
                PREP(wb)                                                                                     \
                const float dw = h2f(wb->d);                                                                 \
                for (int g = 0; g < NG; g++) {                                                               \
                    const int32x4_t isum = hsum4(block_dot(q0, q1, XB(X, 4 * g, i)->qs), block_dot(q0, q1, XB(X, 4 * g + 1, i)->qs), \
                                                 block_dot(q0, q1, XB(X, 4 * g + 2, i)->qs), block_dot(q0, q1, XB(X, 4 * g + 3, i)->qs)); \
                    acc[r][g] = vfmaq_f32(acc[r][g], vcvtq_f32_s32(isum), vmulq_n_f32(vld1q_f32(dx + 4 * g), dw)); \
                    if (MIN) acc[r][g] = vfmaq_n_f32(acc[r][g], vld1q_f32(sx + 4 * g),                         \
                                                     h2f(((const block_q4_1 *)(const void *)wb)->m));         \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int g = 0; g < NG; g++) vst1q_f32(s + r * TILE_TOKENS + 4 * g, acc[r][g]);                  \
    }

#ifdef LK_ARM_DOTPROD
/* trn1 / trn2 of 64-bit lanes: (a0, b0) / (a1, b1). In assembly because compilers spell them as a lane insert
 * and a zip, which several cores (the Cortex-A57 family's model among them) run as 2 and 3 micro-ops, the trn
 * as 1. */
INLINE int32x4_t trn1_64(int32x4_t a, int32x4_t b) {
    int32x4_t r;
    __asm__("trn1 %0.2d, %1.2d, %2.2d" : "=w"(r) : "w"(a), "w"(b));
    return r;
}
INLINE int32x4_t trn2_64(int32x4_t a, int32x4_t b) {
    int32x4_t r;
    __asm__("trn2 %0.2d, %1.2d, %2.2d" : "=w"(r) : "w"(a), "w"(b));
    return r;
}

/* Four rows' 16 bytes as w[k], lane r = bytes 4k..4k+3 of row r (a 4×4 transpose of 32-bit words) */
INLINE void transpose4(int8x16_t a, int8x16_t b, int8x16_t c, int8x16_t d, int8x16_t w[4]) {
    const int32x4_t t0 = vtrn1q_s32(vreinterpretq_s32_s8(a), vreinterpretq_s32_s8(b));
    const int32x4_t t1 = vtrn2q_s32(vreinterpretq_s32_s8(a), vreinterpretq_s32_s8(b));
    const int32x4_t t2 = vtrn1q_s32(vreinterpretq_s32_s8(c), vreinterpretq_s32_s8(d));
    const int32x4_t t3 = vtrn2q_s32(vreinterpretq_s32_s8(c), vreinterpretq_s32_s8(d));
    w[0] = vreinterpretq_s8_s32(trn1_64(t0, t2));
    w[1] = vreinterpretq_s8_s32(trn1_64(t1, t3));
    w[2] = vreinterpretq_s8_s32(trn2_64(t0, t2));
    w[3] = vreinterpretq_s8_s32(trn2_64(t1, t3));
}

/* dotprod few-token tile of a 32-block type: 4 rows (wr) × NT tokens (XB), s[t·4 + r]. Each block of the 4
 * rows is unpacked and transposed once, then each token takes 8 sdot by element with the rows in the lanes:
 * the block's integer sums of the 4 rows in one vector, no horizontal adds. */
#define BLOCK32_ROW_TILE(T, W, X, PREP, MIN)                                                                 \
    INLINE void T##_rtile(int64_t nb, const W *const *wr, const X *xb, const size_t ts, const size_t bs,    \
                          const int NT, float *s) {                                                          \
        float32x4_t acc[8];                                                                                  \
        for (int t = 0; t < NT; t++) acc[t] = vdupq_n_f32(0.0f);                                             \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            int8x16_t q[2][4], wl[4], wh[4];                                                                 \
            float dw[4], mw[4];                                                                              \
            for (int r = 0; r < 4; r++) {                                                                    \
                const W *wb = wr[r] + i;                                                                     \
                PREP(wb)                                                                                     \
                q[0][r] = q0, q[1][r] = q1;                                                                  \
                dw[r] = h2f(wb->d);                                                                          \
                if (MIN) mw[r] = h2f(((const block_q4_1 *)(const void *)wb)->m);                             \
            }                                                                                                \
            transpose4(q[0][0], q[0][1], q[0][2], q[0][3], wl);                                              \
            transpose4(q[1][0], q[1][1], q[1][2], q[1][3], wh);                                              \
            const float32x4_t dw4 = vld1q_f32(dw);                                                           \
            for (int t = 0; t < NT; t++) {                                                                   \
                const X *x = XB(X, t, i);                                                                    \
                const int8x16_t a0 = vld1q_s8(x->qs), a1 = vld1q_s8(x->qs + 16);                             \
                int32x4_t p0 = vdotq_laneq_s32(vdupq_n_s32(0), wl[0], a0, 0);                                \
                int32x4_t p1 = vdotq_laneq_s32(vdupq_n_s32(0), wh[0], a1, 0);                                \
                p0 = vdotq_laneq_s32(p0, wl[1], a0, 1), p1 = vdotq_laneq_s32(p1, wh[1], a1, 1);              \
                p0 = vdotq_laneq_s32(p0, wl[2], a0, 2), p1 = vdotq_laneq_s32(p1, wh[2], a1, 2);              \
                p0 = vdotq_laneq_s32(p0, wl[3], a0, 3), p1 = vdotq_laneq_s32(p1, wh[3], a1, 3);              \
                acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(vaddq_s32(p0, p1)), vmulq_n_f32(dw4, h2f(x->d)));   \
                if (MIN) acc[t] = vfmaq_n_f32(acc[t], vld1q_f32(mw), h2f(((const block_q8_1 *)(const void *)x)->s)); \
            }                                                                                                \
        }                                                                                                    \
        for (int t = 0; t < NT; t++) vst1q_f32(s + 4 * t, acc[t]);                                           \
    }
BLOCK32_ROW_TILE(q4_0, block_q4_0, block_q8_0, PREP_Q4_0, 0)
BLOCK32_ROW_TILE(q4_1, block_q4_1, block_q8_1, PREP_Q4_1, 1)
BLOCK32_ROW_TILE(q5_0, block_q5_0, block_q8_0, PREP_Q5_0, 0)
BLOCK32_ROW_TILE(q5_1, block_q5_1, block_q8_1, PREP_Q5_1, 1)
BLOCK32_ROW_TILE(q8_0, block_q8_0, block_q8_0, PREP_Q8_0, 0)
#endif

BLOCK32_KERNELS(q4_0, block_q4_0, block_q8_0, PREP_Q4_0, 0)
BLOCK32_KERNELS(q4_1, block_q4_1, block_q8_1, PREP_Q4_1, 1)
BLOCK32_KERNELS(q5_0, block_q5_0, block_q8_0, PREP_Q5_0, 0)
BLOCK32_KERNELS(q5_1, block_q5_1, block_q8_1, PREP_Q5_1, 1)
BLOCK32_KERNELS(q8_0, block_q8_0, block_q8_0, PREP_Q8_0, 0)

/* ------------------------------------- K-quants ------------------------------------- */

/* Σ min_j · (bsums[2j] + bsums[2j + 1]) of one token's super-block */
INLINE int32_t kquant_min_sum(const uint8_t mn[8], const int16_t *bsums) {
    const int16x8_t pairs = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8));
    const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
    return vaddvq_s32(vmlal_high_s16(vmull_s16(vget_low_s16(pairs), vget_low_s16(m)), pairs, m));
}

/* One super-block's integer part for NR rows × NT tokens: p[r][t] lanes sum to Σ scale·q·a. Each KQ_* macro
 * unpacks a row's 32-element sub-block pair once and adds it to every token (xq[t]: that token's qs). */
#define KQ_ADD(r, q, off, scale)                                                                             \
    for (int t = 0; t < NT; t++)                                                                             \
        p[r][t] = vmlaq_s32(p[r][t], vpaddq_s32(block_dot(q[0], q[1], xq[t] + (off)), block_dot(q[2], q[3], xq[t] + (off) + 32)), (scale));

/* A row's 8 sub-block scales as 4 vectors of lanes (s_2c, s_2c, s_2c+1, s_2c+1), as KQ_ADD multiplies them */
INLINE void kquant_pair_lanes(const uint8_t sc[8], int32x4_t v[4]) {
    const uint8x8_t s = vld1_u8(sc);
    const uint16x8_t lo = vmovl_u8(vzip1_u8(s, s)), hi = vmovl_u8(vzip2_u8(s, s));
    v[0] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(lo))), v[1] = vreinterpretq_s32_u32(vmovl_high_u16(lo));
    v[2] = vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(hi))), v[3] = vreinterpretq_s32_u32(vmovl_high_u16(hi));
}

INLINE void q4_K_ints(const block_q4_K *const *wb, const int NR, const int8_t *const *xq, const int NT,
                      const uint8_t sc[2][8], int32x4_t p[2][TILE_TOKENS]) {
    for (int r = 0; r < NR; r++) {
        int32x4_t scv[4];
        kquant_pair_lanes(sc[r], scv);
        for (int c = 0; c < 4; c++) {
            int8x16_t q[4];
            q4_K_subs(wb[r], c, q);
            KQ_ADD(r, q, 64 * c, scv[c])
        }
    }
}

INLINE void q5_K_ints(const block_q5_K *const *wb, const int NR, const int8_t *const *xq, const int NT,
                      const uint8_t sc[2][8], int32x4_t p[2][TILE_TOKENS]) {
    for (int r = 0; r < NR; r++) {
        /* the fifth bit of element l of sub-block pair c: bit 2c (low nibbles) and 2c + 1 (high) of qh[l] */
        uint8x16_t h0 = vld1q_u8(wb[r]->qh), h1 = vld1q_u8(wb[r]->qh + 16);
        const uint8x16_t m16 = vdupq_n_u8(16);
        int32x4_t scv[4];
        kquant_pair_lanes(sc[r], scv);
        for (int c = 0; c < 4; c++) {
            const uint8x16_t r0 = vld1q_u8(wb[r]->qs + 32 * c), r1 = vld1q_u8(wb[r]->qs + 32 * c + 16);
            const int8x16_t l0 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(r0, vdupq_n_u8(15)), vandq_u8(vshlq_n_u8(h0, 4), m16)));
            const int8x16_t l1 = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(r1, vdupq_n_u8(15)), vandq_u8(vshlq_n_u8(h1, 4), m16)));
            const int8x16_t u0 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(r0, 4), vandq_u8(vshlq_n_u8(h0, 3), m16)));
            const int8x16_t u1 = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(r1, 4), vandq_u8(vshlq_n_u8(h1, 3), m16)));
            h0 = vshrq_n_u8(h0, 2), h1 = vshrq_n_u8(h1, 2);
            const int8x16_t q[4] = {l0, l1, u0, u1};
            KQ_ADD(r, q, 64 * c, scv[c])
        }
    }
}

/* Q6_K: 16 scales of 16 elements; quarter m of half h holds elements 128h + 32m .. + 31 */
INLINE void q6_K_ints(const block_q6_K *const *wb, const int NR, const int8_t *const *xq, const int NT,
                      int32x4_t p[2][TILE_TOKENS]) {
    const uint8x16_t m4 = vdupq_n_u8(15), m3 = vdupq_n_u8(3);
    const int8x16_t m32 = vdupq_n_s8(32);
    for (int r = 0; r < NR; r++)
        for (int half = 0; half < 2; half++) {
            const uint8_t *ql = wb[r]->ql + 64 * half, *qh = wb[r]->qh + 32 * half;
            const int8_t *sc = wb[r]->scales + 8 * half;
            for (int k = 0; k < 2; k++) { /* elements 16k..16k+15 of each quarter */
                const uint8x16_t la = vld1q_u8(ql + 16 * k), lb = vld1q_u8(ql + 32 + 16 * k), h = vld1q_u8(qh + 16 * k);
                const int8x16_t q[4] = {
                    vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(la, m4), vshlq_n_u8(vandq_u8(h, m3), 4))), m32),
                    vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(lb, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 2), m3), 4))), m32),
                    vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(la, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(h, 4), m3), 4))), m32),
                    vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(lb, 4), vshlq_n_u8(vshrq_n_u8(h, 6), 4))), m32)};
                for (int m = 0; m < 4; m++)
                    for (int t = 0; t < NT; t++)
                        p[r][t] = vmlaq_n_s32(p[r][t], dot_s8(vdupq_n_s32(0), q[m], vld1q_s8(xq[t] + 128 * half + 32 * m + 16 * k)),
                                              sc[k + 2 * m]);
            }
        }
}

/* The kernel of a K-quant T over NR rows × NT tokens (xt[t], t < NT): s[r·16 + t]. ONE: the one-token
 * kernel (prefetching ahead in each row). Q6_K has no mins (MINS 0). */
#define KQUANT_KERNEL(T, W, MINS)                                                                            \
    INLINE void T##_rows(int64_t nb, const W *const *wr, const int NR, const block_q8_K *const *xt,         \
                         const int NT, const int ONE, float *s) {                                            \
        float acc[2][TILE_TOKENS];                                                                           \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int t = 0; t < NT; t++) acc[r][t] = 0.0f;                                                   \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const W *wb[2];                                                                                  \
            const int8_t *xq[TILE_TOKENS];                                                                   \
            uint8_t sc[2][8], mn[2][8];                                                                      \
            int32x4_t p[2][TILE_TOKENS];                                                                     \
            for (int t = 0; t < NT; t++) xq[t] = xt[t][i].qs;                                                \
            for (int r = 0; r < NR; r++) {                                                                   \
                wb[r] = wr[r] + i;                                                                           \
                if (ONE) lk_prefetch_weights((const uint8_t *)wb[r] + LK_ARM_PREFETCH_BYTES);                \
                if (MINS) kquant_scales((const uint8_t *)wb[r] + 4, sc[r], mn[r]);                           \
                for (int t = 0; t < NT; t++) p[r][t] = vdupq_n_s32(0);                                       \
            }                                                                                                \
            KQUANT_INTS_##T                                                                                  \
            for (int r = 0; r < NR; r++) {                                                                   \
                const float d = h2f(wb[r]->d);                                                               \
                for (int t = 0; t < NT; t++) {                                                               \
                    const float ds = d * (float)vaddvq_s32(p[r][t]);                                         \
                    const float inner = MINS ? __builtin_fmaf(-h2f(((const block_q4_K *)(const void *)wb[r])->dmin), \
                                                              (float)kquant_min_sum(mn[r], xt[t][i].bsums), ds) \
                                             : ds;                                                           \
                    acc[r][t] = __builtin_fmaf(xt[t][i].d, inner, acc[r][t]);                                \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int t = 0; t < NT; t++) s[r * TILE_TOKENS + t] = acc[r][t];                                 \
    }
#define KQUANT_INTS_q4_K q4_K_ints(wb, NR, xq, NT, (const uint8_t(*)[8])sc, p);
#define KQUANT_INTS_q5_K q5_K_ints(wb, NR, xq, NT, (const uint8_t(*)[8])sc, p);
#define KQUANT_INTS_q6_K q6_K_ints(wb, NR, xq, NT, p);

KQUANT_KERNEL(q4_K, block_q4_K, 1)
KQUANT_KERNEL(q5_K, block_q5_K, 1)
KQUANT_KERNEL(q6_K, block_q6_K, 0)

#ifdef LK_ARM_DOTPROD
/* dotprod few-token tile of Q4_K / Q5_K: 4 rows (wr) × NT tokens (XB), s[t·4 + r], the rows in the lanes as
 * BLOCK32_ROW_TILE: each sub-block of the 4 rows unpacked and transposed once, 8 sdot by element a token, the
 * rows' scales and mins as vectors; the float steps of KQUANT_KERNEL lane for lane. */
/* One 32-element sub-block of 4 rows (lo: elements 0..15, hi: 16..31 of each row) into the row tile's sums:
 * transposed once, then a chain of 8 sdot by element for each token t (activations a + t·ts) times the rows'
 * scales scv */
INLINE void kq_rtile_sub(const int8x16_t lo[4], const int8x16_t hi[4], int32x4_t scv, const int8_t *a,
                         const size_t ts, const int NT, int32x4_t sumi[8]) {
    /* the bases of the loads below, elements 0..15 and 16..31: their offsets t·ts then fit the instruction,
     * and the two halves are not paired into one load (3 micro-ops on the A57-family model, 2 apart) */
    const int8_t *a16 = a + 16;
    __asm__("" : "+r"(a), "+r"(a16));
    int8x16_t wl[4], wh[4];
    transpose4(lo[0], lo[1], lo[2], lo[3], wl);
    transpose4(hi[0], hi[1], hi[2], hi[3], wh);
    for (int t = 0; t < NT; t++) {
        const int8x16_t a0 = vld1q_s8(a + t * ts), a1 = vld1q_s8(a16 + t * ts);
        int32x4_t p = vdotq_laneq_s32(vdupq_n_s32(0), wl[0], a0, 0);
        p = vdotq_laneq_s32(p, wl[1], a0, 1), p = vdotq_laneq_s32(p, wl[2], a0, 2);
        p = vdotq_laneq_s32(p, wl[3], a0, 3), p = vdotq_laneq_s32(p, wh[0], a1, 0);
        p = vdotq_laneq_s32(p, wh[1], a1, 1), p = vdotq_laneq_s32(p, wh[2], a1, 2);
        p = vdotq_laneq_s32(p, wh[3], a1, 3);
        sumi[t] = vmlaq_s32(sumi[t], p, scv);
    }
}

#define KQUANT_ROW_TILE(T, W)                                                                                \
    INLINE void T##_rtile(int64_t nb, const W *const *wr, const block_q8_K *xb, const size_t ts,            \
                          const size_t bs, const int NT, float *s) {                                         \
        float32x4_t acc[8];                                                                                  \
        for (int t = 0; t < NT; t++) acc[t] = vdupq_n_f32(0.0f);                                             \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            uint8_t sc[4][8], mn[4][8];                                                                      \
            int32_t scs[8][4], mns[8][4];                                                                    \
            float d[4], dmin[4];                                                                             \
            for (int r = 0; r < 4; r++) {                                                                    \
                kquant_scales((const uint8_t *)(wr[r] + i) + 4, sc[r], mn[r]);                               \
                d[r] = h2f(wr[r][i].d), dmin[r] = h2f(wr[r][i].dmin);                                        \
                for (int j = 0; j < 8; j++) scs[j][r] = sc[r][j], mns[j][r] = mn[r][j];                      \
            }                                                                                                \
            int32x4_t sumi[8];                                                                               \
            for (int t = 0; t < NT; t++) sumi[t] = vdupq_n_s32(0);                                           \
            /* the sub-blocks 2c (low nibbles), then 2c + 1 (high nibbles): the nibble each loop takes is then \
             * known when compiling */                                                                       \
            for (int e = 0; e < 2; e++)                                                                      \
                for (int c = 0; c < 4; c++) {                                                                \
                    const int j = 2 * c + e;                                                                 \
                    int8x16_t lo[4], hi[4];                                                                  \
                    for (int r = 0; r < 4; r++) T##_sub(wr[r] + i, j, &lo[r], &hi[r]);                       \
                    kq_rtile_sub(lo, hi, vld1q_s32(scs[j]), XB(block_q8_K, 0, i)->qs + 32 * j, ts, NT, sumi); \
                }                                                                                            \
            const float32x4_t d4 = vld1q_f32(d), dmin4 = vld1q_f32(dmin);                                    \
            for (int t = 0; t < NT; t++) {                                                                   \
                const block_q8_K *x = XB(block_q8_K, t, i);                                                  \
                int16_t pairs[8]; /* the token's sums of each 32 */                                          \
                vst1q_s16(pairs, vpaddq_s16(vld1q_s16(x->bsums), vld1q_s16(x->bsums + 8)));                  \
                int32x4_t summ = vdupq_n_s32(0);                                                             \
                for (int j = 0; j < 8; j++) summ = vmlaq_n_s32(summ, vld1q_s32(mns[j]), pairs[j]);           \
                const float32x4_t ds = vmulq_f32(d4, vcvtq_f32_s32(sumi[t]));                                \
                const float32x4_t inner = vfmsq_f32(ds, dmin4, vcvtq_f32_s32(summ));                         \
                acc[t] = vfmaq_n_f32(acc[t], inner, x->d);                                                   \
            }                                                                                                \
        }                                                                                                    \
        for (int t = 0; t < NT; t++) vst1q_f32(s + 4 * t, acc[t]);                                           \
    }
KQUANT_ROW_TILE(q4_K, block_q4_K)
KQUANT_ROW_TILE(q5_K, block_q5_K)

/* One 16-element sub-block of 4 rows, transposed (w), into the row tile's sums: a chain of 4 sdot by element
 * for each token t (activations a + t·ts, the base fixed as kq_rtile_sub's) times the rows' scales scv */
INLINE void q6_rtile_sub(const int8x16_t w[4], int32x4_t scv, const int8_t *a, const size_t ts, const int NT,
                         int32x4_t sumi[8]) {
    __asm__("" : "+r"(a));
    for (int t = 0; t < NT; t++) {
        const int8x16_t x = vld1q_s8(a + t * ts);
        int32x4_t p = vdotq_laneq_s32(vdupq_n_s32(0), w[0], x, 0);
        p = vdotq_laneq_s32(p, w[1], x, 1);
        p = vdotq_laneq_s32(p, w[2], x, 2);
        p = vdotq_laneq_s32(p, w[3], x, 3);
        sumi[t] = vmlaq_s32(sumi[t], p, scv);
    }
}

/* dotprod few-token tile of Q6_K: 4 rows (wr) × NT tokens (XB), s[t·4 + r], the rows in the lanes as
 * KQUANT_ROW_TILE: each 16-element sub-block of the 4 rows unpacked and transposed once, 4 sdot by element a
 * token, times the rows' scales as a vector; KQUANT_KERNEL's float steps (no mins) lane for lane. */
INLINE void q6_K_rtile(int64_t nb, const block_q6_K *const *wr, const block_q8_K *xb, const size_t ts,
                       const size_t bs, const int NT, float *s) {
    float32x4_t acc[8];
    for (int t = 0; t < NT; t++) acc[t] = vdupq_n_f32(0.0f);
    for (int64_t i = 0; i < nb; i++) {
        int8x16_t s8[4];
        float d[4];
        for (int r = 0; r < 4; r++) s8[r] = vld1q_s8(wr[r][i].scales), d[r] = h2f(wr[r][i].d);
        int32x4_t scv[16], sumi[8];
        scales_by_row(s8, scv);
        for (int t = 0; t < NT; t++) sumi[t] = vdupq_n_s32(0);
        /* quarters m and m + 2 of half h, elements 16k..: a loop for each m, whose shift of the high bits
         * is then known when compiling */
        for (int m = 0; m < 2; m++)
            for (int v = 0; v < 4; v++) {
                const int h = v / 2, k = v % 2;
                int8x16_t q[2][4], w[4];
                for (int r = 0; r < 4; r++) {
                    const uint8x16_t qh = vld1q_u8(wr[r][i].qh + 32 * h + 16 * k);
                    const uint8x16_t hb = m ? vshrq_n_u8(qh, 2) : qh;
                    const uint8x16_t lo4 = vld1q_u8(wr[r][i].ql + 64 * h + 32 * m + 16 * k);
                    q[0][r] = q6_K_quarter(lo4, hb, 0), q[1][r] = q6_K_quarter(lo4, hb, 1);
                }
                for (int e = 0; e < 2; e++) {
                    const int j = 8 * h + 2 * (m + 2 * e) + k; /* the sub-block: its scale and activations */
                    transpose4(q[e][0], q[e][1], q[e][2], q[e][3], w);
                    q6_rtile_sub(w, scv[j], XB(block_q8_K, 0, i)->qs + 16 * j, ts, NT, sumi);
                }
            }
        const float32x4_t d4 = vld1q_f32(d);
        for (int t = 0; t < NT; t++)
            acc[t] = vfmaq_n_f32(acc[t], vmulq_f32(d4, vcvtq_f32_s32(sumi[t])), XB(block_q8_K, t, i)->d);
    }
    for (int t = 0; t < NT; t++) vst1q_f32(s + 4 * t, acc[t]);
}
#define KQ_ROW_TILES 1
#else
#define KQ_ROW_TILES 0
#endif

/* The K-quants' one-token and tile kernels in the 32-block types' shapes. */
#define KQUANT_SHAPES(T, W)                                                                                  \
    INLINE void T##_one(int64_t nb, const W *const *wr, const int NR, const block_q8_K *x, float *s) {      \
        const block_q8_K *xt[1] = {x};                                                                       \
        float o[2 * TILE_TOKENS];                                                                            \
        T##_rows(nb, wr, NR, xt, 1, 1, o);                                                                   \
        for (int r = 0; r < NR; r++) s[r] = o[r * TILE_TOKENS];                                              \
    }                                                                                                        \
    INLINE void T##_tile(int64_t nb, const W *const *wr, const int NR, const block_q8_K *xb, const size_t ts, \
                         const size_t bs, const int NG, float *s) {                                          \
        (void)bs; /* rows of activations: blocks one after another */                                       \
        /* 4 tokens a pass: more live int accumulators than registers gain nothing */                        \
        for (int g = 0; g < NG; g++) {                                                                       \
            const block_q8_K *xt[4];                                                                         \
            for (int t = 0; t < 4; t++) xt[t] = (const block_q8_K *)(const void *)((const uint8_t *)xb + (size_t)(4 * g + t) * ts); \
            float o[2 * TILE_TOKENS];                                                                        \
            T##_rows(nb, wr, NR, xt, 4, 0, o);                                                               \
            for (int r = 0; r < NR; r++)                                                                     \
                for (int t = 0; t < 4; t++) s[r * TILE_TOKENS + 4 * g + t] = o[r * TILE_TOKENS + t];         \
        }                                                                                                    \
    }
KQUANT_SHAPES(q4_K, block_q4_K)
KQUANT_SHAPES(q5_K, block_q5_K)
KQUANT_SHAPES(q6_K, block_q6_K)

/* ------------------------------------ table entries ------------------------------------ */

/* dotprod, 32-block types (INTERLEAVE): the few-token kernels take T_rtile, 4 rows (the last repeated to
 * fill a group) × 8 or 4 tokens a pass */
#ifdef LK_ARM_DOTPROD
#define ROW_TILES_FEW(T, INTERLEAVE) ROW_TILES_FEW_##INTERLEAVE(T)
#define ROW_TILES_FEW_0(T)
#define ROW_TILES_FEW_1(T)                                                                                   \
    for (int64_t r = row_begin; r < row_end; r += 4) {                                                       \
        const void *wr[4];                                                                                   \
        for (int k = 0; k < 4; k++) wr[k] = (const uint8_t *)w + (size_t)(r + k < row_end ? r + k : row_end - 1) * wrb; \
        for (int64_t t0 = 0; t0 < nt; t0 += 8) {                                                             \
            float o[32];                                                                                     \
            const void *x0 = (const uint8_t *)xb + (size_t)t0 * ts;                                          \
            if (nt - t0 > 4) T##_rtile(nb, (const void *)wr, x0, ts, bs, 8, o);                              \
            else T##_rtile(nb, (const void *)wr, x0, ts, bs, 4, o);                                          \
            for (int64_t t = t0; t < nt && t < t0 + 8; t++)                                                  \
                for (int k = 0; k < 4 && r + k < row_end; k++) y[t * ys + r + k] = o[(t - t0) * 4 + k];      \
        }                                                                                                    \
    }                                                                                                        \
    return 1;
#else
#define ROW_TILES_FEW(T, INTERLEAVE)
#endif

/* The tile kernel T_tile over NR rows with NG (1..4, a run-time value) groups of 4 tokens. */
#define TILE_GROUPS(T, NR, NG, ...)                                                                          \
    switch (NG) {                                                                                            \
    case 1: T##_tile(__VA_ARGS__, 1, o); break;                                                              \
    case 2: T##_tile(__VA_ARGS__, 2, o); break;                                                              \
    case 3: T##_tile(__VA_ARGS__, 3, o); break;                                                              \
    default: T##_tile(__VA_ARGS__, 4, o); break;                                                             \
    }

#define ENTRIES(T, W, X, BS, INTERLEAVE)                                                                     \
    static float dot_##T(int64_t n, const void *w, const void *x) {                                          \
        const W *wr[1] = {w};                                                                                \
        float s;                                                                                             \
        T##_one(n / BS, wr, 1, x, &s);                                                                       \
        return s;                                                                                            \
    }                                                                                                        \
    static void dot4_##T(int64_t n, const void *w, const void *x, size_t xs, float *s) {                     \
        const W *wr[1] = {w};                                                                                \
        float o[TILE_TOKENS];                                                                                \
        T##_tile(n / BS, wr, 1, x, xs, sizeof(X), 1, o);                                                     \
        memcpy(s, o, 4 * sizeof(float));                                                                     \
    }                                                                                                        \
    static void dot2_##T(int64_t n, const void *w, size_t ws, const void *x, size_t xs, int nt, float *s) {  \
        const W *wr[2] = {w, (const W *)((const uint8_t *)w + ws)};                                          \
        if (nt == 1) {                                                                                       \
            float o[2];                                                                                      \
            T##_one(n / BS, wr, 2, x, o);                                                                    \
            s[0] = o[0], s[4] = o[1];                                                                        \
            return;                                                                                          \
        }                                                                                                    \
        float o[2 * TILE_TOKENS];                                                                            \
        T##_tile(n / BS, wr, 2, x, xs, sizeof(X), 1, o);                                                     \
        for (int t = 0; t < 4; t++) s[t] = o[t], s[4 + t] = o[TILE_TOKENS + t];                              \
    }                                                                                                        \
    /* one token, rows r and r + half as two sequential streams */                                          \
    static int matvec_##T(int64_t n, const void *w, size_t ws, const void *x, float *y, int64_t nrows) {     \
        const int64_t half = nrows / 2;                                                                      \
        for (int64_t r = 0; r < half; r++) {                                                                 \
            const W *wr[2] = {(const W *)((const uint8_t *)w + r * ws), (const W *)((const uint8_t *)w + (r + half) * ws)}; \
            float o[2];                                                                                      \
            T##_one(n / BS, wr, 2, x, o);                                                                    \
            y[r] = o[0], y[r + half] = o[1];                                                                 \
        }                                                                                                    \
        if (nrows % 2) {                                                                                     \
            const W *wr[1] = {(const W *)((const uint8_t *)w + (nrows - 1) * ws)};                           \
            T##_one(n / BS, wr, 1, x, y + nrows - 1);                                                        \
        }                                                                                                    \
        return 1;                                                                                            \
    }                                                                                                        \
    /* 2..16 tokens: adjacent row pairs, each weight block unpacked once for all tokens (the last token    \
     * repeated to fill the last group of 4, its lanes dropped), from a copy of the activations in scratch:  \
     * INTERLEAVE puts block i of the 16 tokens side by side (one stream, fixed offsets) */                  \
    static int few_##T(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt,       \
                       float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                           \
        if (nt > TILE_TOKENS) return 0;                                                                      \
        const int64_t nb = cols / BS;                                                                        \
        /* a slot of the copy: a block, for the K-quants rounded up to 16 bytes (a token's activations then  \
         * lie 16-byte multiples apart from the next token's) */                                             \
        const size_t xs = INTERLEAVE && BS == QK_K ? (sizeof(X) + 15) / 16 * 16 : sizeof(X);                \
        X *xb = lk_scratch((size_t)nb * TILE_TOKENS * xs);                                                   \
        if (!xb) return 0;                                                                                   \
        /* block i of token t at slot i·16 + t (INTERLEAVE) or t·nb + i */                                   \
        const size_t ts = INTERLEAVE ? xs : (size_t)nb * sizeof(X), bs = INTERLEAVE ? TILE_TOKENS * xs : sizeof(X); \
        for (int t = 0; t < TILE_TOKENS; t++) {                                                              \
            const X *xt = (const X *)((const uint8_t *)x + (size_t)(t < nt ? t : nt - 1) * xrb);             \
            for (int64_t i = 0; i < nb; i++) *(X *)((uint8_t *)xb + t * ts + i * bs) = xt[i];                \
        }                                                                                                    \
        ROW_TILES_FEW(T, INTERLEAVE)                                                                         \
        const int ng = (int)(nt + 3) / 4;                                                                    \
        for (int64_t r = row_begin; r < row_end; r += 2) {                                                   \
            const int nr = row_end - r >= 2 ? 2 : 1;                                                         \
            const W *wr[2] = {(const W *)((const uint8_t *)w + r * wrb), (const W *)((const uint8_t *)w + (r + nr - 1) * wrb)}; \
            float o[2 * TILE_TOKENS];                                                                        \
            if (nr == 2) {                                                                                   \
                if (INTERLEAVE) {                                                                            \
                    TILE_GROUPS(T, 2, ng, nb, wr, 2, xb, xs, TILE_TOKENS * xs)                            \
                } else {                                                                                     \
                    TILE_GROUPS(T, 2, ng, nb, wr, 2, xb, ts, bs)                                             \
                }                                                                                            \
            } else {                                                                                         \
                TILE_GROUPS(T, 1, ng, nb, wr, 1, xb, ts, bs)                                                 \
            }                                                                                                \
            for (int k = 0; k < nr; k++)                                                                     \
                for (int64_t t = 0; t < nt; t++) y[t * ys + r + k] = o[k * TILE_TOKENS + t];                 \
        }                                                                                                    \
        return 1;                                                                                            \
    }                                                                                                        \
    /* from 16 tokens: the tiles 16 tokens at a time */                                                     \
    static int gemm_##T(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt,      \
                        float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                          \
        for (int64_t t = 0; t < nt; t += TILE_TOKENS)                                                        \
            few_##T(cols, w, wrb, (const uint8_t *)x + (size_t)t * xrb, xrb,                                 \
                    nt - t < TILE_TOKENS ? nt - t : TILE_TOKENS, y + t * ys, ys, row_begin, row_end);        \
        return 1;                                                                                            \
    }

ENTRIES(q4_0, block_q4_0, block_q8_0, QK, 1)
ENTRIES(q4_1, block_q4_1, block_q8_1, QK, 1)
ENTRIES(q5_0, block_q5_0, block_q8_0, QK, 1)
ENTRIES(q5_1, block_q5_1, block_q8_1, QK, 1)
ENTRIES(q8_0, block_q8_0, block_q8_0, QK, 1)
ENTRIES(q4_K, block_q4_K, block_q8_K, QK_K, KQ_ROW_TILES)
ENTRIES(q5_K, block_q5_K, block_q8_K, QK_K, KQ_ROW_TILES)
ENTRIES(q6_K, block_q6_K, block_q8_K, QK_K, KQ_ROW_TILES)

#include "dotprod_target.h" /* up to here */

#endif

/* The list of each build: lk_neon_quant (ARMv8.0), lk_neon_dotprod_quant (dotprod/quant_rows.c) */
#ifdef LK_ARM_DOTPROD
#define lk_neon_quant lk_neon_dotprod_quant
#endif
#define QUANT_KERNELS(ID, T)                                                                                 \
    LK_ARM_KERNEL(LK_E_DOT, ID, dot_##T), LK_ARM_KERNEL(LK_E_DOT2, ID, dot2_##T),                            \
    LK_ARM_KERNEL(LK_E_DOT4, ID, dot4_##T), LK_ARM_KERNEL(LK_E_MATVEC, ID, matvec_##T),                      \
    LK_ARM_KERNEL(LK_E_FEW_TOKENS, ID, few_##T), LK_ARM_KERNEL(LK_E_GEMM, ID, gemm_##T)
LK_KERNELS(lk_neon_quant,
    QUANT_KERNELS(LK_TYPE_Q4_0, q4_0), QUANT_KERNELS(LK_TYPE_Q4_1, q4_1), QUANT_KERNELS(LK_TYPE_Q5_0, q5_0),
    QUANT_KERNELS(LK_TYPE_Q5_1, q5_1), QUANT_KERNELS(LK_TYPE_Q8_0, q8_0), QUANT_KERNELS(LK_TYPE_Q4_K, q4_K),
    QUANT_KERNELS(LK_TYPE_Q5_K, q5_K), QUANT_KERNELS(LK_TYPE_Q6_K, q6_K));

/* arm64 products of Q2_K and Q3_K with their Q8_K activations, one source for two levels: built here for
 * ARMv8.0 NEON (16-bit products, smull + sadalp) and again as dotprod/low_bit_kquants.c for the dot-product
 * instructions (sdot), each in the list of its level's table (arm/table.c).
 *
 * Per super-block of 256 weights (16 groups of 16, scale sc_j, Q2_K also a min m_j; d, dmin the block's f16
 * scales, dx and bsums the token's), every (row, token) result is one fold with exact integer sums:
 *   Q2_K:  acc = fma(dx, fma(-dmin, (float)Σ m_j·bsum_j, d·(float)Σ_j sc_j·Σ q·a), acc)     q = 0..3
 *   Q3_K:  acc = fma(dx, d·(float)Σ_j sc_j·Σ q·a, acc)                                      q = -4..3
 * whatever kernel computes it (one row or two row streams, one token or a tile of 4), on both levels: a
 * batch gives the bits of its tokens one by one.
 *
 * Entries: token_tiles.h's (dot, dot4, the matvec over two row streams, the token tiles for 2 tokens and
 * more: each group of 16 weights unpacked once for 2 rows × 4 tokens). */
#include "../lk_tables.h"
#include "token_tiles.h"

#if defined(__aarch64__)
#include "lk_arm.h"

#include "dotprod_target.h" /* from here: the dotprod build's target */

/* acc + a vector whose lanes sum to Σ q·a over 16 elements: sdot; ARMv8.0: the products of elements k and
 * k + 8 added in 16 bits (|q| <= 128 and |a| <= 127 here, so two fit), then pairs into the 32-bit lanes */
INLINE int32x4_t add_dot16(int32x4_t acc, int8x16_t q, int8x16_t a) {
#ifdef LK_ARM_DOTPROD
    return vdotq_s32(acc, q, a);
#else
    return vpadalq_s16(acc, vmlal_high_s8(vmull_s8(vget_low_s8(q), vget_low_s8(a)), q, a));
#endif
}

/* Token t's super-block i: activations in rows of xs bytes from x */
#define XK(t, i) ((const block_q8_K *)(const void *)((const uint8_t *)x + (size_t)(t) * xs) + (i))

/* bits 2S..2S+1 of each byte of v (S a constant 0..3) */
#define TWO_BITS(v, S) vandq_u8((S) ? vshrq_n_u8(v, (S) ? 2 * (S) : 1) : (v), vdupq_n_u8(3))

/* Groups 8H + 2S + G (G = 0, 1; H, S constants) of a super-block: the weights scaled once by UNPACK(v, G, H,
 * S) from v0 (G = 0) or v1, then one product a group for each token */
#define KQ_GROUPS(H, S, UNPACK)                                                                              \
    {                                                                                                        \
        const int8x16_t q0 = UNPACK(v0, 0, H, S), q1 = UNPACK(v1, 1, H, S);                                  \
        for (int t = 0; t < NT; t++) {                                                                       \
            const int8_t *a = XK(t, i)->qs + 128 * (H) + 32 * (S);                                           \
            p[t] = add_dot16(add_dot16(p[t], q0, vld1q_s8(a)), q1, vld1q_s8(a + 16));                        \
        }                                                                                                    \
    }
#define KQ_HALF(H, UNPACK)                                                                                   \
    {                                                                                                        \
        const uint8x16_t v0 = vld1q_u8(b->qs + 32 * (H)), v1 = vld1q_u8(b->qs + 32 * (H) + 16);              \
        KQ_GROUPS(H, 0, UNPACK) KQ_GROUPS(H, 1, UNPACK) KQ_GROUPS(H, 2, UNPACK) KQ_GROUPS(H, 3, UNPACK)      \
    }

/* Q2_K: group j = 8h + 2s + g (h half, s shift, g = 0, 1 for elements 0..15, 16..31 of the 32 at
 * qs[32h..32h+31]) holds (qs >> 2s) & 3. sc_j · q is at most 45, so the scale goes into the weights once per
 * row and each token takes one product a group. */
#define Q2_K_UNPACK(v, G, H, S) vreinterpretq_s8_u8(vmulq_u8(TWO_BITS(v, S), vdupq_laneq_u8(sc, 8 * (H) + 2 * (S) + (G))))
INLINE void q2_K_ints(const block_q2_K *b, const void *x, size_t xs, int64_t i, const int NT, int32x4_t *p) {
    const uint8x16_t sc = vandq_u8(vld1q_u8(b->scales), vdupq_n_u8(15));
    KQ_HALF(0, Q2_K_UNPACK)
    KQ_HALF(1, Q2_K_UNPACK)
}

/* Σ m_j · bsums_j of one token's super-block (Q2_K's mins: the high nibbles of its scales) */
INLINE int32_t q2_K_min_sum(const block_q2_K *b, const int16_t *bsums) {
    const uint8x16_t m = vshrq_n_u8(vld1q_u8(b->scales), 4);
    const int16x8_t m0 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(m))), m1 = vreinterpretq_s16_u16(vmovl_high_u8(m));
    const int16x8_t b0 = vld1q_s16(bsums), b1 = vld1q_s16(bsums + 8);
    int32x4_t s = vmull_s16(vget_low_s16(m0), vget_low_s16(b0));
    s = vmlal_high_s16(s, m0, b0);
    s = vmlal_s16(s, vget_low_s16(m1), vget_low_s16(b1));
    return vaddvq_s32(vmlal_high_s16(s, m1, b1));
}

/* Q3_K's 16 signed 6-bit scales: low 4 bits of j in scales[j % 8] (>> 4 from j = 8), high 2 bits in
 * scales[8 + j % 4] >> 2·(j / 4); stored − 32 */
INLINE int8x16_t q3_K_scales(const block_q3_K *b) {
    const uint8x8_t s8 = vld1_u8(b->scales);
    const uint8x16_t low = vcombine_u8(vand_u8(s8, vdup_n_u8(15)), vshr_n_u8(s8, 4));
    uint32_t h4;
    memcpy(&h4, b->scales + 8, 4);
    static const int8_t shifts[16] = {0, 0, 0, 0, -2, -2, -2, -2, -4, -4, -4, -4, -6, -6, -6, -6};
    const uint8x16_t high = vandq_u8(vshlq_u8(vreinterpretq_u8_u32(vdupq_n_u32(h4)), vld1q_s8(shifts)), vdupq_n_u8(3));
    return vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(low, vshlq_n_u8(high, 4))), vdupq_n_s8(32));
}

/* Q3_K: group j = 8h + 2s + g as Q2_K's, q = ((qs >> 2s) & 3) − 4 unless bit 4h + s of hmask[16g + k] is
 * set. sc_j · q reaches 128, past int8, but −q · sc_j lies in [−128, 124]: the weights go in negated and
 * scaled, once per row, each token takes one product a group, and p sums to −Σ sc_j·q·a:
 * −q = 4·(1 − high bit) − low bits, hn[G] the complement of hmask's 16 bytes of group G. */
#define Q3_K_UNPACK(v, G, H, S)                                                                              \
    vmulq_s8(vreinterpretq_s8_u8(vsubq_u8(vandq_u8(vtstq_u8(hn[G], vdupq_n_u8(1 << (4 * (H) + (S)))), vdupq_n_u8(4)), \
                                          TWO_BITS(v, S))),                                                  \
             vdupq_laneq_s8(sc, 8 * (H) + 2 * (S) + (G)))
INLINE void q3_K_ints(const block_q3_K *b, const void *x, size_t xs, int64_t i, const int NT, int32x4_t *p) {
    const int8x16_t sc = q3_K_scales(b);
    const uint8x16_t hn[2] = {vmvnq_u8(vld1q_u8(b->hmask)), vmvnq_u8(vld1q_u8(b->hmask + 16))};
    KQ_HALF(0, Q3_K_UNPACK)
    KQ_HALF(1, Q3_K_UNPACK)
}

/* Rows wr[r] (r < NR: 1, 2) × tokens t < NT (1..4) of type T (weights W): s[r·4 + t]. SIGN: of T_ints's
 * sum. PF: prefetch each row ahead (the one-token streams). */
#define LOW_KQUANT_TILE(T, W, MINS, SIGN)                                                                          \
    INLINE void T##_tile(int64_t nb, const W *const *wr, const int NR, const void *x, size_t xs,            \
                         const int NT, const int PF, float *s) {                                             \
        float acc[2][4] = {{0}};                                                                             \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            for (int r = 0; r < NR; r++) {                                                                   \
                const W *b = wr[r] + i;                                                                      \
                if (PF) lk_prefetch_l2((const uint8_t *)b + LK_ARM_PREFETCH_BYTES,                           \
                                       (const uint8_t *)(b + 1) + LK_ARM_PREFETCH_BYTES);                    \
                int32x4_t p[4];                                                                              \
                for (int t = 0; t < NT; t++) p[t] = vdupq_n_s32(0);                                          \
                T##_ints(b, x, xs, i, NT, p);                                                                \
                const float d = h2f(b->d);                                                                   \
                for (int t = 0; t < NT; t++) {                                                               \
                    const float ds = d * (float)(SIGN vaddvq_s32(p[t]));                                            \
                    const float inner = MINS ? __builtin_fmaf(-h2f(((const block_q2_K *)(const void *)b)->dmin), \
                                                              (float)q2_K_min_sum((const block_q2_K *)(const void *)b, XK(t, i)->bsums), ds) \
                                             : ds;                                                           \
                    acc[r][t] = __builtin_fmaf(XK(t, i)->d, inner, acc[r][t]);                               \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int t = 0; t < NT; t++) s[r * 4 + t] = acc[r][t];                                           \
    }

LOW_KQUANT_TILE(q2_K, block_q2_K, 1, +)
LOW_KQUANT_TILE(q3_K, block_q3_K, 0, -)

LK_ARM_TOKEN_ENTRIES(q2_K, block_q2_K, QK_K)
LK_ARM_TOKEN_ENTRIES(q3_K, block_q3_K, QK_K)

#include "dotprod_target.h" /* up to here */

#endif

/* The list of each build: lk_neon_low_kquants (ARMv8.0), lk_neon_dotprod_low_kquants (dotprod/) */
#ifdef LK_ARM_DOTPROD
#define lk_neon_low_kquants lk_neon_dotprod_low_kquants
#endif
LK_KERNELS(lk_neon_low_kquants, LK_ARM_TOKEN_KERNELS(LK_TYPE_Q2_K, q2_K), LK_ARM_TOKEN_KERNELS(LK_TYPE_Q3_K, q3_K));

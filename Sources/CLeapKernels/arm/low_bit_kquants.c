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
#include "kquant_blocks.h"
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

/* Q3_K's 16 6-bit scale codes u_j = sc_j + 32, computed on the integer side (the vector side carries the
 * products), as bytes j of u[0] (j < 8) and j − 8 of u[1]: low 4 bits in scales[j % 8] (>> 4 from j = 8),
 * high 2 bits in scales[8 + j % 4] >> 2·(j / 4) */
INLINE void q3_K_scale_codes(const block_q3_K *b, uint64_t u[2]) {
    uint64_t lo;
    uint32_t hi;
    memcpy(&lo, b->scales, 8);
    memcpy(&hi, b->scales + 8, 4);
    const uint64_t nibbles = 0x0F0F0F0F0F0F0F0Full, pairs = 0x3030303030303030ull;
    u[0] = (lo & nibbles) | (((uint64_t)(hi << 4) | (uint64_t)(hi << 2) << 32) & pairs);
    u[1] = ((lo >> 4) & nibbles) | (((uint64_t)hi | (uint64_t)(hi >> 2) << 32) & pairs);
}
/* Bytes of n − u for bytes 0 <= u, n < 64, as int8, without borrows: 128 + n − u lies in [65, 191] */
INLINE uint64_t q3_K_byte_differences(uint64_t n, uint64_t u) {
    const uint64_t b7 = 0x8080808080808080ull;
    return ((n | b7) - u) ^ b7;
}

/* Q3_K: group j = 8h + 2s + g as Q2_K's, q = ((qs >> 2s) & 3) − 4 unless bit 4h + s of hmask[16g + k] is
 * set. As bytes, q is its two low bits under six copies of the high bit's complement (all ones: −4 added),
 * so one shift-insert (sli, sri) of the bit test of hn[G] (hmask's 16 bytes of group G complemented) against
 * v builds it, after a shift of v for the middle two bit pairs: 2 or 3 operations a group. */
#define Q3_K_INSERT_0(v, t) vsliq_n_u8(v, t, 2)
#define Q3_K_INSERT_1(v, t) vsliq_n_u8(vshrq_n_u8(v, 2), t, 2)
#define Q3_K_INSERT_2(v, t) vsriq_n_u8(t, vshlq_n_u8(v, 2), 6)
#define Q3_K_INSERT_3(v, t) vsriq_n_u8(t, v, 6)
#define Q3_K_VALUES(v, G, H, S) vreinterpretq_s8_u8(Q3_K_INSERT_##S(v, test_bits(hn[G], vdupq_n_u8(1 << (4 * (H) + (S))))))

/* Several tokens: sc_j · q reaches 128, past int8, but q · −sc_j lies in [−128, 124]: the weights go in
 * scaled by the negated scales (nsc), once per row, each token takes one product a group, and p sums to
 * −Σ sc_j·q·a */
#define Q3_K_UNPACK(v, G, H, S) vmulq_s8(Q3_K_VALUES(v, G, H, S), vdupq_laneq_s8(nsc, 8 * (H) + 2 * (S) + (G)))

/* One token: no scaled weights. The groups g = 0, 1 run in an sdot chain each, through the halves h = 0, 1 and
 * in each the bit pairs s = 1, 2, 3, 0 (the last takes v itself as its insert's destination): P_j = Σ_i G_i
 * (G_i = Σ q·a over group i) over the chain's groups up to j, so Σ_j sc_j·G_j = Σ_j (sc_j − sc_next(j))·P_j
 * (the chain's end: sc_j), each P_j into its chain's acc by one multiply-add by its lane of the negated
 * coefficients c. */
#define Q3_K_CHAIN_STEP(H, S)                                                                                \
    {                                                                                                        \
        const int8_t *aq = a + 128 * (H) + 32 * (S);                                                         \
        p0 = add_dot16(p0, Q3_K_VALUES(v0, 0, H, S), vld1q_s8(aq));                                          \
        p1 = add_dot16(p1, Q3_K_VALUES(v1, 1, H, S), vld1q_s8(aq + 16));                                     \
        acc0 = vmlaq_laneq_s32(acc0, p0, c[2 * (H) + (S) / 2], 2 * ((S) % 2));                               \
        acc1 = vmlaq_laneq_s32(acc1, p1, c[2 * (H) + (S) / 2], 2 * ((S) % 2) + 1);                           \
    }
#define Q3_K_CHAIN_HALF(H)                                                                                   \
    {                                                                                                        \
        const uint8x16_t v0 = vld1q_u8(b->qs + 32 * (H)), v1 = vld1q_u8(b->qs + 32 * (H) + 16);              \
        Q3_K_CHAIN_STEP(H, 1) Q3_K_CHAIN_STEP(H, 2) Q3_K_CHAIN_STEP(H, 3) Q3_K_CHAIN_STEP(H, 0)              \
    }

/* Those negated coefficients as int8 lanes j = 8h + 2s + g: the codes of half h in word h (16-bit pairs g =
 * 0, 1 by s), next(j) the following pair of the chain; −(sc_j − sc_next(j)) = u_next(j) − u_j, and 32 − u_j
 * at the chain's end */
INLINE int8x16_t q3_K_chain_coefficients(const block_q3_K *b) {
    uint64_t u[2];
    q3_K_scale_codes(b, u);
    /* next: s + 1 for s = 1, 2; s = 0 for s = 3; from s = 0 the next half's s = 1, or the end (32) */
    const uint64_t n0 = (((u[0] >> 16) | (u[0] << 48)) & ~0xFFFFull) | ((u[1] >> 16) & 0xFFFF);
    const uint64_t n1 = (((u[1] >> 16) | (u[1] << 48)) & ~0xFFFFull) | 0x2020;
    return vcombine_s8(vcreate_s8(q3_K_byte_differences(n0, u[0])), vcreate_s8(q3_K_byte_differences(n1, u[1])));
}

INLINE int32x4_t q3_K_one_token(const block_q3_K *b, const int8_t *a, const uint8x16_t *hn) {
    const int8x16_t c8 = q3_K_chain_coefficients(b);
    const int16x8_t c16[2] = {vmovl_s8(vget_low_s8(c8)), vmovl_high_s8(c8)};
    int32x4_t c[4] = {vmovl_s16(vget_low_s16(c16[0])), vmovl_high_s16(c16[0]), vmovl_s16(vget_low_s16(c16[1])),
                      vmovl_high_s16(c16[1])};
    /* as they are: compilers would otherwise widen each lane on its own, a broadcast and a widening a group */
    __asm__("" : "+w"(c[0]), "+w"(c[1]), "+w"(c[2]), "+w"(c[3]));
    int32x4_t p0 = vdupq_n_s32(0), p1 = vdupq_n_s32(0), acc0 = vdupq_n_s32(0), acc1 = vdupq_n_s32(0);
    Q3_K_CHAIN_HALF(0)
    Q3_K_CHAIN_HALF(1)
    /* two multiply-add chains as they are: compilers would otherwise join them into one */
    __asm__("" : "+w"(acc0), "+w"(acc1));
    return vaddq_s32(acc0, acc1);
}

INLINE void q3_K_ints(const block_q3_K *b, const void *x, size_t xs, int64_t i, const int NT, int32x4_t *p) {
    const uint8x16_t hn[2] = {vmvnq_u8(vld1q_u8(b->hmask)), vmvnq_u8(vld1q_u8(b->hmask + 16))};
    if (NT == 1) {
        p[0] = q3_K_one_token(b, XK(0, i)->qs, hn);
        return;
    }
    uint64_t u[2];
    q3_K_scale_codes(b, u);
    const uint64_t c32 = 0x2020202020202020ull;
    const int8x16_t nsc = vcombine_s8(vcreate_s8(q3_K_byte_differences(c32, u[0])), vcreate_s8(q3_K_byte_differences(c32, u[1])));
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

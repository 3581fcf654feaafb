/* Unpacking of the K-quant super-blocks (Q4_K, Q5_K, Q6_K) into int8 vectors and their scales into lanes, shared
 * by the dotprod row tiles (quant_rows.c) and the i8mm tiles (i8mm_kquant.c); test_bits also by the Q3_K
 * kernels (low_bit_kquants.c). aarch64 only. */
#ifndef LK_ARM_KQUANT_BLOCKS_H
#define LK_ARM_KQUANT_BLOCKS_H
#include "lk_arm.h"

/* The 8 scales (sc) and mins (mn) of a Q4_K / Q5_K super-block, 6 bits each, from its 12 packed bytes. */
INLINE void kquant_scales(const uint8_t *packed, uint8_t sc[8], uint8_t mn[8]) {
    uint32_t u[3], o[4];
    memcpy(u, packed, 12);
    o[0] = u[0] & 0x3f3f3f3fu;                                            /* scales 0..3 */
    o[1] = (u[2] & 0x0f0f0f0fu) | (((u[0] >> 6) & 0x03030303u) << 4);     /* scales 4..7 */
    o[2] = u[1] & 0x3f3f3f3fu;                                            /* mins 0..3 */
    o[3] = ((u[2] >> 4) & 0x0f0f0f0fu) | (((u[1] >> 6) & 0x03030303u) << 4); /* mins 4..7 */
    memcpy(sc, o, 8);
    memcpy(mn, o + 2, 8);
}

/* Sub-block j (32 elements) of a Q4_K / Q5_K super-block as int8: elements 0..15 (lo) and 16..31 (hi) */
INLINE void q4_K_sub(const block_q4_K *b, int j, int8x16_t *lo, int8x16_t *hi) {
    const uint8x16_t r0 = vld1q_u8(b->qs + 32 * (j / 2)), r1 = vld1q_u8(b->qs + 32 * (j / 2) + 16);
    *lo = vreinterpretq_s8_u8(j % 2 ? vshrq_n_u8(r0, 4) : vandq_u8(r0, vdupq_n_u8(15)));
    *hi = vreinterpretq_s8_u8(j % 2 ? vshrq_n_u8(r1, 4) : vandq_u8(r1, vdupq_n_u8(15)));
}
/* all ones in the bytes where a & b has a bit set; in assembly, which compilers would otherwise rewrite with
 * the shift that follows it into three instructions */
INLINE uint8x16_t test_bits(uint8x16_t a, uint8x16_t b) {
    uint8x16_t r;
    __asm__("cmtst %0.16b, %1.16b, %2.16b" : "=w"(r) : "w"(a), "w"(b));
    return r;
}
INLINE void q5_K_sub(const block_q5_K *b, int j, int8x16_t *lo, int8x16_t *hi) {
    const uint8_t *qs = b->qs + 32 * (j / 2), *qh = b->qh;
    __asm__("" : "+r"(qs), "+r"(qh)); /* loaded afresh for each sub-block, not kept in registers */
    const uint8x16_t r0 = vld1q_u8(qs), r1 = vld1q_u8(qs + 16);
    /* the fifth bit, bit j of qh[l]: all ones where set, then 1 (low nibbles, inserted above them) or 0x1f
     * (high nibbles, whose top 4 bits 0x10 go above them) */
    const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << j));
    const uint8x16_t s0 = test_bits(vld1q_u8(qh), bit), s1 = test_bits(vld1q_u8(qh + 16), bit);
    *lo = vreinterpretq_s8_u8(j % 2 ? vsriq_n_u8(vshrq_n_u8(s0, 3), r0, 4) : vsliq_n_u8(r0, vshrq_n_u8(s0, 7), 4));
    *hi = vreinterpretq_s8_u8(j % 2 ? vsriq_n_u8(vshrq_n_u8(s1, 3), r1, 4) : vsliq_n_u8(r1, vshrq_n_u8(s1, 7), 4));
}

/* Sub-blocks 2c and 2c + 1 of a Q4_K / Q5_K super-block (the low and high nibbles of the same 32 bytes) as
 * int8: q[0], q[1] elements 0..15 and 16..31 of sub-block 2c, q[2], q[3] those of 2c + 1 */
INLINE void q4_K_subs(const block_q4_K *b, int c, int8x16_t q[4]) {
    const uint8x16_t r0 = vld1q_u8(b->qs + 32 * c), r1 = vld1q_u8(b->qs + 32 * c + 16);
    q[0] = vreinterpretq_s8_u8(vandq_u8(r0, vdupq_n_u8(15))), q[1] = vreinterpretq_s8_u8(vandq_u8(r1, vdupq_n_u8(15)));
    q[2] = vreinterpretq_s8_u8(vshrq_n_u8(r0, 4)), q[3] = vreinterpretq_s8_u8(vshrq_n_u8(r1, 4));
}
/* Q5_K's less 16 (q − 16: the sums that take them start at 16·Σ a), in two operations a vector: the
 * complemented fifth bits (bits 2c and 2c + 1 of qh[l]) tested against bit 2c (2c + 1) are all ones where the
 * bit is clear, and their 4 bits inserted above the nibble make n − 16 there as int8 (n + 16 − 16 where it is
 * set) */
INLINE void q5_K_subs16(const block_q5_K *b, int c, int8x16_t q[4]) {
    const uint8x16_t r0 = vld1q_u8(b->qs + 32 * c), r1 = vld1q_u8(b->qs + 32 * c + 16);
    const uint8x16_t n0 = vmvnq_u8(vld1q_u8(b->qh)), n1 = vmvnq_u8(vld1q_u8(b->qh + 16));
    const uint8x16_t lo = vdupq_n_u8((uint8_t)(1u << 2 * c)), hi = vdupq_n_u8((uint8_t)(2u << 2 * c));
    q[0] = vreinterpretq_s8_u8(vsliq_n_u8(r0, test_bits(n0, lo), 4));
    q[1] = vreinterpretq_s8_u8(vsliq_n_u8(r1, test_bits(n1, lo), 4));
    q[2] = vreinterpretq_s8_u8(vsriq_n_u8(test_bits(n0, hi), r0, 4));
    q[3] = vreinterpretq_s8_u8(vsriq_n_u8(test_bits(n1, hi), r1, 4));
}

/* Quarter m or m + 2 (HIGH) of a Q6_K half, elements 16k .. 16k + 15, as int8 q - 32: lo4 holds their low 4
 * bits (ql + 32·m + 16k: low nibbles m, high nibbles m + 2), hb the high bits (qh + 16k) shifted right by 2m
 * (bits 0..1 for quarter m, 4..5 for m + 2) */
INLINE int8x16_t q6_K_quarter(uint8x16_t lo4, uint8x16_t hb, const int HIGH) {
    /* shift-inserts: the high bits' mask keeps them, the insert drops the other nibble */
    const uint8x16_t q = HIGH ? vsriq_n_u8(vandq_u8(hb, vdupq_n_u8(0x30)), lo4, 4)
                              : vsliq_n_u8(lo4, vandq_u8(hb, vdupq_n_u8(3)), 4);
    return vsubq_s8(vreinterpretq_s8_u8(q), vdupq_n_s8(32));
}

/* The 4 rows' 16 int8 scales s[r] as sc[j] = lanes (s[0][j], s[1][j], s[2][j], s[3][j]) in int32 */
INLINE void scales_by_row(const int8x16_t s[4], int32x4_t sc[16]) {
    const int8x16_t z0 = vzip1q_s8(s[0], s[1]), z1 = vzip2q_s8(s[0], s[1]);
    const int8x16_t z2 = vzip1q_s8(s[2], s[3]), z3 = vzip2q_s8(s[2], s[3]);
    const int16x8_t q[4] = {vzip1q_s16(vreinterpretq_s16_s8(z0), vreinterpretq_s16_s8(z2)),  /* j 0..3 */
                            vzip2q_s16(vreinterpretq_s16_s8(z0), vreinterpretq_s16_s8(z2)),  /* j 4..7 */
                            vzip1q_s16(vreinterpretq_s16_s8(z1), vreinterpretq_s16_s8(z3)),  /* j 8..11 */
                            vzip2q_s16(vreinterpretq_s16_s8(z1), vreinterpretq_s16_s8(z3))}; /* j 12..15 */
    for (int g = 0; g < 4; g++) {
        const int16x8_t w0 = vmovl_s8(vget_low_s8(vreinterpretq_s8_s16(q[g])));
        const int16x8_t w1 = vmovl_high_s8(vreinterpretq_s8_s16(q[g]));
        sc[4 * g] = vmovl_s16(vget_low_s16(w0)), sc[4 * g + 1] = vmovl_high_s16(w0);
        sc[4 * g + 2] = vmovl_s16(vget_low_s16(w1)), sc[4 * g + 3] = vmovl_high_s16(w1);
    }
}

#endif

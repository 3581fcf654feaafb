/* arm64 products of Q4_K, Q5_K and Q6_K weights in the 8-row layout (LK_ROWS8, rows8.c) with their Q8_K
 * activations, on the dot-product instructions: the rows8 entries of the dotprod table, and the i8mm table's
 * for one token (Q4_K, Q6_K).
 *
 * In a group's super-block, vector k (32 bytes) holds bytes 4k..4k+3 of the 8 rows' quants, so its low 16
 * bytes are rows 0..3 (its high 16 rows 4..7) in the lanes of an sdot by element: a 32-bit lane of the token's
 * activations times the 4 rows' 4 bytes, the 4 rows' sums of a sub-block in one vector, with no transposes and
 * no horizontal adds. The head's word vectors hold the rows' scales the same way (lane r: row r's word), so the
 * sub-block scales come out as lanes too (a shift and a mask), multiply the sums in int32 lanes, and the float
 * steps of quant_rows.c's K-quant fold run lane for lane:
 *   acc = fma(dx, fma(-dmin, (float)Σ min·bsum, d·(float)Σ scale·q·a), acc)   (Q6_K: no min term)
 * with the same exact integer sums, so a token has the bits of the row layout's kernels whatever the batch.
 * Q5_K is Q4_K with the fifth bits: vectors of the rows' qh bytes laid out the same way, merged into the
 * nibbles as each sub-block is unpacked.
 *
 *   one token:   8 rows (a group) a super-block, the group's bytes streamed in order with prefetch
 *   2+ tokens:   4 rows (half a group) × 6 (Q4_K) or 8 (Q5_K, Q6_K) tokens a super-block (the rest in one tile of
 *                their count), each sub-block of the 4 rows unpacked once for all the tokens, read from the
 *                activations' rows as they lie (Q5_K: from a copy beside its side); each token's super-blocks'
 *                sums of activations (the mins', Q6_K's −32 and Q5_K's +16 terms) as the kernels take them,
 *                once per call
 * (The i8mm table takes Q4_K's and Q6_K's one-token kernel, and i8mm_kquant.c's smmla tiles in this layout
 * from 2 tokens.) */
#include "../lk_tables.h"

#if defined(__aarch64__)
#include "lk_arm.h"
#include "kquant_blocks.h" /* test_bits */

LK_ARM_TARGET_BEGIN("dotprod", "+dotprod")

/* Byte b (0..3) of each 32-bit lane of v, as int32 lanes (unsigned) */
INLINE int32x4_t lane_byte_u(uint32x4_t v, const int b) {
    const uint32x4_t s = b == 0 ? v : b == 1 ? vshrq_n_u32(v, 8) : b == 2 ? vshrq_n_u32(v, 16) : vshrq_n_u32(v, 24);
    return vreinterpretq_s32_u32(b == 3 ? s : vandq_u32(s, vdupq_n_u32(0xff)));
}
/* ... as int32 lanes (signed) */
INLINE int32x4_t lane_byte_s(int32x4_t v, const int b) {
    const int32x4_t s = b == 0 ? vshlq_n_s32(v, 24) : b == 1 ? vshlq_n_s32(v, 16) : b == 2 ? vshlq_n_s32(v, 8) : v;
    return vshrq_n_s32(s, 24);
}

/* start + Σ over the 4 lanes v of a (16 elements) of w[v] · lane v */
INLINE int32x4_t sub_dot4(int32x4_t start, const int8x16_t w[4], int8x16_t a) {
    int32x4_t p = vdotq_laneq_s32(start, w[0], a, 0);
    p = vdotq_laneq_s32(p, w[1], a, 1), p = vdotq_laneq_s32(p, w[2], a, 2);
    return vdotq_laneq_s32(p, w[3], a, 3);
}
/* start + the same over the 8 lanes v of sub-block register pair a (a[0]: elements 0..15, a[1]: 16..31) */
INLINE int32x4_t sub_dot8(int32x4_t start, const int8x16_t w[8], const int8x16_t a[2]) {
    return sub_dot4(sub_dot4(start, w, a[0]), w + 4, a[1]);
}

/* A loop over a super-block's sub-blocks unrolled whole (constant offsets and lanes) */
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 8")
#endif
/* Between two steps of a super-block (the two halves of a group, Q6_K's sub-block pairs): the next step's loads
 * stay after this one's (the compiler would otherwise hoist and interleave them, and spill) */
#define STEP_END __asm__ volatile("" ::: "memory")
/* After a token's sum chain of a sub-block: the chain ends here (v computed) and the next token's loads stay
 * after it (with several tokens clang would otherwise load every token's activations first, and spill) */
#define CHAIN_END(v) __asm__ volatile("" : "+w"(v) : : "memory")

/* A loop over a super-block's sub-blocks kept a loop (unrolled whole with several tokens it spills) */
#if defined(__clang__)
#define SUBBLOCK_LOOP _Pragma("clang loop unroll(disable)")
#else
#define SUBBLOCK_LOOP
#endif
/* p, opaque to the compiler: the loads at fixed offsets from it take them as immediates (the loop's strength
 * reduction would otherwise move the base past them and spend an address computation on each) */
#define OPAQUE(p) __asm__("" : "+r"(p))

/* Token t's super-block i */
#define XT(t) ((const block_q8_K *)(const void *)(x + (size_t)(t) * xrb) + i)

/* ------------------------------------------ Q4_K, Q5_K ------------------------------------------ */

/* A super-block of the group (gb: its bytes, lk_rows8_kblock): Q5_K's 8 rows' 32 fifth-bit bytes as 8 vectors
 * (none in Q4_K), the 8 rows' 128 nibble bytes as 32 vectors, then the head's words: d | dmin, then the 12
 * bytes of packed scales and mins, 4 bytes a word */
enum { Q4_K_WORDS = 8 * 128, Q5_K_QS = 8 * 32, Q5_K_WORDS = 8 * 160 };

/* A token's super-block as the mins' sdot wants it: the sums of each 32 activations, p = 128·hi + lo, as
 * bytes lo[0..7] (0..127) then hi[0..7] (|hi| < 32): Σ min·p = Σ min·lo + 128·Σ min·hi in two sdot chains */
enum { Q4_K_SIDE = 16 };
INLINE void q4_K_side(const block_q8_K *x, int8_t *side) {
    const int16x8_t pairs = vpaddq_s16(vld1q_s16(x->bsums), vld1q_s16(x->bsums + 8));
    vst1q_s8(side, vcombine_s8(vmovn_s16(vandq_s16(pairs, vdupq_n_s16(127))), vshrn_n_s16(pairs, 7)));
}
/* Q5_K's with several tokens, for each sub-block pair c: a copy of its 64 activations, then where the two
 * sub-blocks' sum chains start, 16·Σ a of each 32 in 4 int32 lanes (those kernels unpack the quants as
 * q − 16: Σ q·a = 16·Σ a + Σ (q − 16)·a); then Q4_K's side. The sides lie by super-block (the tokens' of one
 * side by side), so that the loads of a pair for all the tile's tokens are at fixed offsets from one pointer.
 * (One token: Q4_K's side.) */
enum { Q5_K_PAIR = 64 + 2 * 16, Q5_K_MINS = 4 * Q5_K_PAIR, Q5_K_SIDE = Q5_K_MINS + Q4_K_SIDE };
INLINE void q5_K_side(const block_q8_K *x, int8_t *side) {
    for (int c = 0; c < 4; c++) {
        memcpy(side + Q5_K_PAIR * c, x->qs + 64 * c, 64);
        for (int e = 0; e < 2; e++) { /* |Σ a| <= 32·128 */
            const int j = 2 * c + e;
            vst1q_s32((int32_t *)(void *)(side + Q5_K_PAIR * c + 64 + 16 * e), vdupq_n_s32(16 * (x->bsums[2 * j] + x->bsums[2 * j + 1])));
        }
    }
    q4_K_side(x, side + Q5_K_MINS);
}

/* The 4 rows' sub-block (nibbles e of the 8 vectors at q, 32 bytes apart) as w[v] (lane v: elements 4v..);
 * Q5: with the fifth bits, bit j of the 8 vectors at qh (sub-block j): all ones where set, then 1 (low
 * nibbles, inserted above them) or 0x1f (high nibbles, whose top 4 bits 0x10 go above them) */
INLINE void kq45_sub(const uint8_t *q, const uint8_t *qh, const int e, const int Q5, uint8x16_t bit, int8x16_t w[8]) {
    for (int v = 0; v < 8; v++) {
        const uint8x16_t raw = vld1q_u8(q + 32 * v);
        if (Q5) {
            const uint8x16_t s = test_bits(vld1q_u8(qh + 32 * v), bit);
            w[v] = vreinterpretq_s8_u8(e ? vsriq_n_u8(vshrq_n_u8(s, 3), raw, 4) : vsliq_n_u8(raw, vshrq_n_u8(s, 7), 4));
        } else {
            w[v] = vreinterpretq_s8_u8(e ? vshrq_n_u8(raw, 4) : vandq_u8(raw, vdupq_n_u8(15)));
        }
    }
}
/* Q5_K's sub-block less 16, in two operations a vector: as kq45_sub, but from the complemented fifth bits nh
 * (8 vectors, 16 bytes apart): all ones where bit j is clear, whose low (e = 0) or high (e = 1) 4 bits go
 * above the nibble, 0xf0 | n = n − 16 as int8 (where the bit is set, n + 16 − 16 = n) */
INLINE void q5_sub16(const uint8_t *q, const uint8_t *nh, const int e, uint8x16_t bit, int8x16_t w[8]) {
    for (int v = 0; v < 8; v++) {
        const uint8x16_t raw = vld1q_u8(q + 32 * v), s = test_bits(vld1q_u8(nh + 16 * v), bit);
        w[v] = vreinterpretq_s8_u8(e ? vsriq_n_u8(s, raw, 4) : vsliq_n_u8(raw, s, 4));
    }
}
INLINE int32x4_t sub_dot8_q45(const uint8_t *q, const uint8_t *qh, const int e, const int Q5, uint8x16_t bit,
                              const int8x16_t a[2]) {
    int8x16_t w[8];
    kq45_sub(q, qh, e, Q5, bit, w);
    return sub_dot8(vdupq_n_s32(0), w, a);
}

/* acc[t] += the fold's step of super-block gb for 4 rows (half h of the group) × NT tokens (x; their sides
 * sd[t·ss + i·SIDE]; Q5_K's with several tokens sd[t·SIDE + i·ss]); Q5: Q5_K's super-block, else Q4_K's */
INLINE void kq45_rows4(const uint8_t *gb, int h, const uint8_t *x, size_t xrb, const int8_t *sd, size_t ss,
                       int64_t i, const int NT, const int ONE, const int Q5, float32x4_t acc[8]) {
    const uint8_t *words = gb + (Q5 ? Q5_K_WORDS : Q4_K_WORDS) + 16 * h;
    const uint8_t *qs = gb + (Q5 ? Q5_K_QS : 0) + 16 * h, *qh = gb + 16 * h;
    /* quant_rows.c's kquant_scales on the 4 rows' words at once: scales 0..3 (s03) and 4..7 (s47) */
    const uint32x4_t u0 = vld1q_u32((const uint32_t *)(const void *)(words + 32));
    const uint32x4_t u2 = vld1q_u32((const uint32_t *)(const void *)(words + 96));
    const uint32x4_t m3f = vdupq_n_u32(0x3f3f3f3fu), m0f = vdupq_n_u32(0x0f0f0f0fu), m03 = vdupq_n_u32(0x03030303u);
    const uint32x4_t s03 = vandq_u32(u0, m3f);
    const uint32x4_t s47 = vorrq_u32(vandq_u32(u2, m0f), vshlq_n_u32(vandq_u32(vshrq_n_u32(u0, 6), m03), 4));
    const int SIDE = Q5 && !ONE ? Q5_K_SIDE : Q4_K_SIDE, MINS = Q5 && !ONE ? Q5_K_MINS : 0;
    int32x4_t sumi[8];
    for (int t = 0; t < NT; t++) sumi[t] = vdupq_n_s32(0);
    if (ONE) {
        UNROLL
        for (int j = 0; j < 8; j++) { /* sub-block j: nibbles j % 2 of vectors 8(j / 2) .. + 7 */
            const int8x16_t a[2] = {vld1q_s8(XT(0)->qs + 32 * j), vld1q_s8(XT(0)->qs + 32 * j + 16)};
            const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << j));
            sumi[0] = vmlaq_s32(sumi[0], sub_dot8_q45(qs + 256 * (j / 2), qh, j % 2, Q5, bit, a), lane_byte_u(j < 4 ? s03 : s47, j % 4));
        }
    } else {
        /* several tokens: the scales as lanes once, then a loop over the sub-block pairs sharing their bytes,
         * each sub-block's 4 rows unpacked once for the NT tokens (Q4_K: the low nibbles a mask, then the high
         * ones a shift of the bytes loaded again, one operation a vector; Q5_K: two with the fifth bits, less
         * 16, from the 4 rows' fifth bits complemented once into nh, each token's chain starting at its side's
         * 16·Σ a, its activations read from the side's copy) */
        int32x4_t sc[8];
        for (int j = 0; j < 8; j++) sc[j] = lane_byte_u(j < 4 ? s03 : s47, j % 4);
        uint8x16_t bit = vdupq_n_u8(1); /* Q5: bit j of the fifth bits' bytes */
        _Alignas(16) uint8_t nh[8 * 16];
        if (Q5)
            for (int v = 0; v < 8; v++) vst1q_u8(nh + 16 * v, vmvnq_u8(vld1q_u8(qh + 32 * v)));
        SUBBLOCK_LOOP
        for (int c = 0; c < 4; c++) {
            const uint8_t *q = qs + 256 * c;
            UNROLL
            for (int e = 0; e < 2; e++) { /* sub-block j: nibbles e of the 8 vectors at q */
                const int j = 2 * c + e;
                int8x16_t w[8];
                if (Q5) q5_sub16(q, nh, e, bit, w), bit = vshlq_n_u8(bit, 1);
                else kq45_sub(q, qh, e, 0, bit, w);
                for (int t = 0; t < NT; t++) {
                    /* Q5: the side's copy */
                    const int8_t *xq = Q5 ? sd + SIDE * t + ss * i + Q5_K_PAIR * c + 32 * e : XT(t)->qs + 32 * j;
                    const int8x16_t a[2] = {vld1q_s8(xq), vld1q_s8(xq + 16)};
                    const int32x4_t start = Q5 ? vld1q_s32((const int32_t *)(const void *)(xq + 64 - 16 * e)) : vdupq_n_s32(0);
                    sumi[t] = vmlaq_s32(sumi[t], sub_dot8(start, w, a), sc[j]);
                    CHAIN_END(sumi[t]);
                }
            }
        }
    }
    /* the mins 0..3 (n03) and 4..7 (n47) as bytes of the rows' lanes */
    const uint32x4_t u1 = vld1q_u32((const uint32_t *)(const void *)(words + 64));
    const int8x16_t n03 = vreinterpretq_s8_u32(vandq_u32(u1, m3f));
    const int8x16_t n47 = vreinterpretq_s8_u32(vorrq_u32(vandq_u32(vshrq_n_u32(u2, 4), m0f), vshlq_n_u32(vandq_u32(vshrq_n_u32(u1, 6), m03), 4)));
    const uint16x4x2_t dm = vld2_u16((const uint16_t *)(const void *)words); /* d, dmin of the 4 rows */
    const float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u16(dm.val[0])), dmin = vcvt_f32_f16(vreinterpret_f16_u16(dm.val[1]));
    for (int t = 0; t < NT; t++) {
        const int8x16_t p = vld1q_s8(Q5 && !ONE ? sd + SIDE * t + ss * i + MINS : sd + t * ss + SIDE * i);
        const int32x4_t hi = vdotq_laneq_s32(vdotq_laneq_s32(vdupq_n_s32(0), n03, p, 2), n47, p, 3);
        const int32x4_t summ = vdotq_laneq_s32(vdotq_laneq_s32(vshlq_n_s32(hi, 7), n03, p, 0), n47, p, 1);
        const float32x4_t ds = vmulq_f32(d, vcvtq_f32_s32(sumi[t]));
        acc[t] = vfmaq_n_f32(acc[t], vfmsq_f32(ds, dmin, vcvtq_f32_s32(summ)), XT(t)->d);
    }
}
INLINE void q4_K_rows4(const uint8_t *gb, int h, const uint8_t *x, size_t xrb, const int8_t *sd, size_t ss,
                       int64_t i, const int NT, const int ONE, float32x4_t acc[8]) {
    kq45_rows4(gb, h, x, xrb, sd, ss, i, NT, ONE, 0, acc);
}
INLINE void q5_K_rows4(const uint8_t *gb, int h, const uint8_t *x, size_t xrb, const int8_t *sd, size_t ss,
                       int64_t i, const int NT, const int ONE, float32x4_t acc[8]) {
    kq45_rows4(gb, h, x, xrb, sd, ss, i, NT, ONE, 1, acc);
}

/* ------------------------------------------ Q6_K ------------------------------------------ */

/* A super-block of the group: the 8 rows' 128 ql bytes (32 vectors), their 64 qh bytes (16 vectors), the 16
 * scales (4 word vectors), the 8 f16 d */
enum { Q6_K_QH = 8 * 128, Q6_K_WORDS = 8 * 192, Q6_K_D = 8 * 208 };

/* A token's super-block as the sum chains start: −32·Σ a of each 16 (Σ(q − 32)·a = Σ q·a − 32·Σ a, so the
 * quants go in as 0..63) */
enum { Q6_K_SIDE = 16 * 4 };
INLINE void q6_K_side(const block_q8_K *x, int8_t *side) {
    for (int k = 0; k < 2; k++) {
        const int16x8_t b = vshlq_n_s16(vnegq_s16(vld1q_s16(x->bsums + 8 * k)), 5); /* |32·Σ a| < 2^16 */
        vst1q_s32((int32_t *)(void *)side + 8 * k, vmovl_s16(vget_low_s16(b)));
        vst1q_s32((int32_t *)(void *)side + 8 * k + 4, vmovl_high_s16(b));
    }
}

INLINE void q6_K_rows4(const uint8_t *gb, int h, const uint8_t *x, size_t xrb, const int8_t *sd, size_t ss,
                       int64_t i, const int NT, const int ONE, float32x4_t acc[8]) {
    (void)ONE;
    const int32x4_t *words = (const int32x4_t *)(const void *)(gb + Q6_K_WORDS + 16 * h); /* [2w]: scales 4w.. */
    const uint8x16_t m33 = vdupq_n_u8(0x33);
    int32x4_t sumi[8];
    for (int t = 0; t < NT; t++) sumi[t] = vdupq_n_s32(0);
    /* half hf of the super-block (elements 128hf..), its low bits' vectors s = 0 (quarters 0, 2) or 1 (1, 3), and
     * lanes 4vv..4vv + 3 of each quarter: sub-blocks 8hf + 2s + vv and 8hf + 2(s + 2) + vv */
    UNROLL
    for (int u = 0; u < 8; u++) {
        const int hf = u / 4, s = (u / 2) % 2, vv = u % 2;
        int8x16_t lo[4], hi[4]; /* quarters s, s + 2 */
        for (int k = 0; k < 4; k++) {
            const int v = 4 * vv + k;
            const uint8x16_t l = vld1q_u8(gb + 32 * (16 * hf + 8 * s + v) + 16 * h);
            uint8x16_t qh = vld1q_u8(gb + Q6_K_QH + 32 * (8 * hf + v) + 16 * h);
            /* the quarters' high bits: bits 0..1 (s + 2: 4..5) of qh, or 2..3 (6..7) */
            const uint8x16_t m = vandq_u8(s ? vshrq_n_u8(qh, 2) : qh, m33);
            lo[k] = vreinterpretq_s8_u8(vsliq_n_u8(l, m, 4)), hi[k] = vreinterpretq_s8_u8(vsriq_n_u8(m, l, 4));
        }
        const int ja = 8 * hf + 2 * s + vv, jb = ja + 4;
        const int32x4_t sca = lane_byte_s(words[2 * (ja / 4)], ja % 4), scb = lane_byte_s(words[2 * (jb / 4)], jb % 4);
        for (int t = 0; t < NT; t++) {
            const int8_t *a = XT(t)->qs;
            const int32_t *st = (const int32_t *)(const void *)(sd + t * ss + Q6_K_SIDE * i);
            sumi[t] = vmlaq_s32(sumi[t], sub_dot4(vld1q_dup_s32(st + ja), lo, vld1q_s8(a + 16 * ja)), sca);
            sumi[t] = vmlaq_s32(sumi[t], sub_dot4(vld1q_dup_s32(st + jb), hi, vld1q_s8(a + 16 * jb)), scb);
            if (NT != 2) CHAIN_END(sumi[t]); /* two tokens' chains fit the registers interleaved */
        }
        STEP_END;
    }
    const float32x4_t d = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)(const void *)(gb + Q6_K_D + 8 * h))));
    for (int t = 0; t < NT; t++) acc[t] = vfmaq_n_f32(acc[t], vmulq_f32(d, vcvtq_f32_s32(sumi[t])), XT(t)->d);
}

/* ------------------------------------------ entries ------------------------------------------ */

/* side[t·nb·SIDE + i·SIDE] (BY_BLOCK: side[i·nt·SIDE + t·SIDE]) = the side of tokens x's super-blocks (nt
 * rows of nb) */
#define TOKEN_SIDES(T, SIDE, BY_BLOCK)                                                                       \
    static void T##_sides(int64_t nb, const uint8_t *x, size_t xrb, int64_t nt, int8_t *side) {             \
        for (int64_t t = 0; t < nt; t++)                                                                     \
            for (int64_t i = 0; i < nb; i++)                                                                 \
                T##_side((const block_q8_K *)(const void *)(x + (size_t)t * xrb) + i,                        \
                         side + (BY_BLOCK ? i * nt + t : t * nb + i) * SIDE);                                \
    }

/* y[0..7] = the 8 rows of group g (nb super-blocks) · token x (its sides sd), the group's bytes prefetched
 * ahead */
#define ROWS8_ONE(T)                                                                                         \
    __attribute__((noinline)) static void rows8_one_##T(int64_t nb, const uint8_t *g, const uint8_t *x,     \
                                                        const int8_t *sd, float *y) {                        \
        float32x4_t acc0[8] = {vdupq_n_f32(0.0f)}, acc1[8] = {vdupq_n_f32(0.0f)};                            \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const uint8_t *gb = g + (size_t)i * 8 * sizeof(block_##T); /* lk_rows8_kblock */                 \
            OPAQUE(gb);                                                                                      \
            for (size_t l = 0; l < sizeof(block_##T) * 8 / 64; l++) lk_prefetch_weights(gb + LK_ARM_PREFETCH_BYTES + 64 * l); \
            T##_rows4(gb, 0, x, 0, sd, 0, i, 1, 1, acc0);                                                       \
            STEP_END;                                                                                        \
            T##_rows4(gb, 1, x, 0, sd, 0, i, 1, 1, acc1);                                                       \
        }                                                                                                    \
        vst1q_f32(y, acc0[0]);                                                                               \
        vst1q_f32(y + 4, acc1[0]);                                                                           \
    }

/* y[t·ys + r] for 4 rows (half h of group g) × NT tokens (1..8) at x (sides sd, ss bytes a token) */
#define ROWS4_TILE(T)                                                                                        \
    INLINE void T##_tile4(int64_t nb, const uint8_t *g, int h, const uint8_t *x, size_t xrb, const int8_t *sd, \
                          size_t ss, const int NT, float *y, int64_t ys) {                                   \
        float32x4_t acc[8];                                                                                  \
        for (int t = 0; t < NT; t++) acc[t] = vdupq_n_f32(0.0f);                                             \
        for (int64_t i = 0; i < nb; i++) {                                                                   \
            const uint8_t *gb = g + (size_t)i * 8 * sizeof(block_##T); /* lk_rows8_kblock */                 \
            OPAQUE(gb);                                                                                      \
            T##_rows4(gb, h, x, xrb, sd, ss, i, NT, 0, acc);                                                    \
        }                                                                                                    \
        for (int t = 0; t < NT; t++) vst1q_f32(y + t * ys, acc[t]);                                          \
    }

/* Tokens a pass over the weights (their sides' copy stays in cache while each group's rows pass over it) */
enum { CHUNK = 32 };

/* Rows row_begin..row_end (multiples of 8) of w (the 8-row layout) · nt tokens x: y[t·ys + r]. 2 tokens and
 * more: tiles of TILE tokens (the rest in one tile of their count), each group's two halves in turn while the
 * tokens stay in cache */
#define ROWS8_KQUANT(T, SIDE, BY_BLOCK, ONE_T, ONE_SIDE, TILE)                                               \
    TOKEN_SIDES(T, SIDE, BY_BLOCK)                                                                           \
    ROWS8_ONE(T)                                                                                             \
    ROWS4_TILE(T)                                                                                            \
    __attribute__((noinline)) static void rows8_few_##T(int64_t nb, const uint8_t *w, size_t wrb, const uint8_t *x, \
                                                        size_t xrb, const int8_t *sd, int64_t nt, float *y, int64_t ys, \
                                                        int64_t row_begin, int64_t row_end) {                \
        const size_t ss = (size_t)(BY_BLOCK ? nt : nb) * SIDE; /* BY_BLOCK: a super-block's sides, else a token's */ \
        for (int64_t r = row_begin; r < row_end; r += 8)                                                     \
            for (int h = 0; h < 2; h++)                                                                      \
                for (int64_t t = 0; t < nt; t += TILE) {                                                     \
                    const uint8_t *g = w + (size_t)r * wrb, *xt = x + (size_t)t * xrb;                       \
                    const int8_t *st = sd + t * (BY_BLOCK ? SIDE : ss);                                      \
                    float *yt = y + t * ys + r + 4 * h;                                                      \
                    switch (nt - t < TILE ? nt - t : TILE) {                                                 \
                    case 1: T##_tile4(nb, g, h, xt, xrb, st, ss, 1, yt, ys); break;                          \
                    case 2: T##_tile4(nb, g, h, xt, xrb, st, ss, 2, yt, ys); break;                          \
                    case 3: T##_tile4(nb, g, h, xt, xrb, st, ss, 3, yt, ys); break;                          \
                    case 4: T##_tile4(nb, g, h, xt, xrb, st, ss, 4 < TILE ? 4 : TILE, yt, ys); break;        \
                    case 5: T##_tile4(nb, g, h, xt, xrb, st, ss, 5 < TILE ? 5 : TILE, yt, ys); break;        \
                    case 6: T##_tile4(nb, g, h, xt, xrb, st, ss, 6 < TILE ? 6 : TILE, yt, ys); break;        \
                    case 7: T##_tile4(nb, g, h, xt, xrb, st, ss, 7 < TILE ? 7 : TILE, yt, ys); break;        \
                    default: T##_tile4(nb, g, h, xt, xrb, st, ss, TILE, yt, ys); break;                      \
                    }                                                                                        \
                }                                                                                            \
    }                                                                                                        \
    int lk_arm_rows8_##T(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt,     \
                         float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                         \
        const int64_t nb = cols / QK_K;                                                                      \
        if (nt == 1) {                                                                                       \
            _Alignas(16) int8_t sd[LK_ROWS8_MAX_COLS / QK_K * ONE_SIDE];                                     \
            ONE_T##_sides(nb, x, 0, 1, sd);                                                                  \
            for (int64_t r = row_begin; r < row_end; r += 8)                                                 \
                rows8_one_##T(nb, (const uint8_t *)w + (size_t)r * wrb, x, sd, y + r);                       \
            return 1;                                                                                        \
        }                                                                                                    \
        int8_t *sd = lk_scratch((size_t)(CHUNK * nb) * SIDE);                                                \
        if (!sd) return 0;                                                                                   \
        for (int64_t t = 0; t < nt; t += CHUNK) {                                                            \
            const int64_t n = nt - t < CHUNK ? nt - t : CHUNK;                                               \
            const uint8_t *xt = (const uint8_t *)x + (size_t)t * xrb;                                        \
            T##_sides(nb, xt, xrb, n, sd);                                                                   \
            rows8_few_##T(nb, w, wrb, xt, xrb, sd, n, y + t * ys, ys, row_begin, row_end);                   \
        }                                                                                                    \
        return 1;                                                                                            \
    }
ROWS8_KQUANT(q4_K, Q4_K_SIDE, 0, q4_K, Q4_K_SIDE, 6)
ROWS8_KQUANT(q5_K, Q5_K_SIDE, 1, q4_K, Q4_K_SIDE, 8)
ROWS8_KQUANT(q6_K, Q6_K_SIDE, 0, q6_K, Q6_K_SIDE, 8)

LK_ARM_TARGET_END
#endif

/* The dotprod table's rows8 entries of Q4_K, Q5_K and Q6_K (names only on other architectures) */
LK_KERNELS(lk_neon_dotprod_rows8_kquant,
    LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q4_K, lk_arm_rows8_q4_K), LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q5_K, lk_arm_rows8_q5_K),
    LK_ARM_KERNEL(LK_E_ROWS8, LK_TYPE_Q6_K, lk_arm_rows8_q6_K));

/* Helpers shared by the AVX-512 VNNI kernel files (on top of lk_x86_avx2.h); include it inside a region
 * that enables the file's target, as lk_x86_avx2.h. */
#ifndef LK_X86_AVX512_H
#define LK_X86_AVX512_H
#include "lk_x86_avx2.h"

/* What vpdpbusd's unsigned operand adds to a 32-block type's weights in ggml's order: Q5_0 (−16..15) + 16;
 * Q4_x and Q5_1 are unsigned already. Subtracted again through the activation sums. */
INLINE int vnni_weight_offset(int type) { return type == LK_TYPE_Q5_0 ? 16 : 0; }
/* two s16 in one s32 lane (a low, b high), the operand layout of vpdpwssd */
INLINE int32_t pair16(int a, int b) { return (int32_t)(((uint32_t)(uint16_t)(int16_t)b << 16) | (uint16_t)(int16_t)a); }

/* Groups g0 and g1 of the 8-row layout (LK_ROWS8) as one 16-row tile, lanes 0-7 g0's rows and 8-15 g1's (g1 =
 * g0 for an 8-row tile): the two groups' 32-byte vectors at byte o, and their 8 + 8 f16 scales at byte o as
 * floats. */
INLINE __m512i lk_rows8_pair(const uint8_t *g0, const uint8_t *g1, size_t o) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g0 + o))),
                              _mm256_loadu_si256((const __m256i *)(g1 + o)), 1);
}
INLINE __m512 lk_rows8_pair_scales(const uint8_t *g0, const uint8_t *g1, size_t o) {
    return _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(g0 + o))),
                                                   _mm_loadu_si128((const __m128i *)(g1 + o)), 1));
}

/* 16 vectors of 16 32-bit lanes: r[i] lane c → r[c] lane i (a 16×16 transpose) */
INLINE void lk_transpose16_epi32(__m512i *r) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int j = 0; j < 4; j++) {
        t[j] = _mm512_shuffle_i32x4(r[j], r[j + 4], 0x88);
        t[j + 4] = _mm512_shuffle_i32x4(r[j], r[j + 4], 0xdd);
        t[j + 8] = _mm512_shuffle_i32x4(r[j + 8], r[j + 12], 0x88);
        t[j + 12] = _mm512_shuffle_i32x4(r[j + 8], r[j + 12], 0xdd);
    }
    for (int j = 0; j < 8; j++) {
        r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
        r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
    }
}

#endif

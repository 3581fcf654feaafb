/* Helpers shared by the Q4_K / Q5_K / Q6_K kernels of their own order (kernels_kquant_vnni.c,
 * kernels_kquant_avx2.c): prefetch, s16 pairs and the unpacking of the packed 6-bit scales (AVX2, inlined into the AVX2
 * and AVX-512 kernels). */
#ifndef LK_KQUANT_UNPACK_H
#define LK_KQUANT_UNPACK_H
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

/* Two s16 in one s32 lane: a in the low half, b in the high one (the operand layout of vpmaddwd). */
static inline __attribute__((always_inline)) int32_t lk_pair16(int a, int b) {
    return (int32_t)(((uint32_t)(uint16_t)(int16_t)b << 16) | (uint16_t)(int16_t)a);
}

/* The matvecs read rows r, r + 1 (adjacent, ws bytes each) as two streams and prefetch, `dist` bytes after
 * each block being read, the cache lines of the block they will read then: dist is the smallest multiple of
 * the pair's 2·ws bytes of at least min_bytes, so that both streams are prefetched (a fixed distance lands,
 * for rows longer than it, in the row being read alongside, behind its read position). */
static inline __attribute__((always_inline)) size_t lk_pair_prefetch_distance(size_t ws, size_t min_bytes) {
    return (min_bytes + 2 * ws - 1) / (2 * ws) * (2 * ws);
}

static inline __attribute__((always_inline)) void lk_prefetch_block(const void *p, size_t dist, size_t bb) {
    const char *q = (const char *)p + dist;
    for (size_t o = 0; o < bb; o += 64) _mm_prefetch(q + o, _MM_HINT_T0);
}

/* Q4_K / Q5_K: the 8 scales then the 8 mins (6 bits each) of a block, as 16 bytes (ggml's utmp unpacking,
 * equal to lk_get_scale_min_k4 for j = 0..7), in vector registers: with u0, u1, u2 the three 32-bit words
 * of scales[12], sc_0..3 = u0 & 63, sc_4..7 = (u2 & 15) | (u0 >> 6) << 4, m_0..3 = u1 & 63,
 * m_4..7 = (u2 >> 4) | (u1 >> 6) << 4 (per byte). Reads 16 bytes at s: s + 12..15 must be readable (the
 * quants that follow in the block). */
static inline __attribute__((always_inline, target("avx2"))) __m128i lk_k4_scales_mins(const uint8_t *s) {
    const __m128i v = _mm_loadu_si128((const __m128i *)s);
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));     /* u0 u2 u1 u2 */
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)); /* 0 u0 0 u1 */
    const __m128i low = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)), _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    const __m128i high = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    return _mm_or_si128(low, high);
}
#endif
#endif

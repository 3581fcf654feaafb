/* Helpers shared by the Q4_K / Q5_K / Q6_K kernels of their own order (kernels_kquant_vnni.c,
 * kernels_kquant_avx2.c): loads and the unpacking of the packed 6-bit scales. SSE2 only, so they inline into
 * any x86 target. */
#ifndef LK_KQUANT_UNPACK_H
#define LK_KQUANT_UNPACK_H
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

static inline __attribute__((always_inline)) int32_t lk_load_i32(const void *p) { int32_t v; memcpy(&v, p, 4); return v; }

/* Two s16 in one s32 lane: a in the low half, b in the high one (the operand layout of vpmaddwd). */
static inline __attribute__((always_inline)) int32_t lk_pair16(int a, int b) {
    return (int32_t)(((uint32_t)(uint16_t)(int16_t)b << 16) | (uint16_t)(int16_t)a);
}

/* Q4_K / Q5_K: the 8 scales then the 8 mins (6 bits each) of a block, as 16 bytes (ggml's utmp unpacking;
 * equal to lk_get_scale_min_k4 for j = 0..7). */
static inline __attribute__((always_inline)) __m128i lk_k4_scales_mins(const uint8_t *s) {
    uint32_t u[4];
    memcpy(u, s, 12);
    const uint32_t m1 = 0x3f3f3f3f, m2 = 0x0f0f0f0f, m3 = 0x03030303;
    u[3] = ((u[2] >> 4) & m2) | (((u[1] >> 6) & m3) << 4);
    const uint32_t mins_lo = u[1] & m1;
    u[1] = (u[2] & m2) | (((u[0] >> 6) & m3) << 4);
    u[2] = mins_lo;
    u[0] &= m1;
    return _mm_loadu_si128((const __m128i *)u);
}
#endif
#endif

/* Type facts shared by every kernel file: the ggml block layouts (bit-exact), f16 / bf16 value conversions
 * and the K-quant scale unpacking. Sizes and activation types of each type id are in types.c (declared in
 * leap_kernels.h). Nothing here depends on the CPU or the dispatch table. */
#ifndef LK_TYPES_H
#define LK_TYPES_H
#include "leap_kernels.h"
#include "leap_kernel_support.h" /* QK, block_q8_0, lk_load_i32 */
#include <string.h>

#define QK_K 256 /* elements per K-quant super-block */

/* Block layouts, bit-exact with ggml (all scale fields `d`, `m`, `dmin`, `s` are IEEE f16 bits). */
typedef struct { uint16_t d; uint8_t qs[QK / 2]; } block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[QK / 2]; } block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; } block_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK / 2]; } block_q5_1;
typedef struct { uint16_t d, s; int8_t qs[QK]; } block_q8_1; /* s = d · Σ qs */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; } block_q2_K;
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } block_q3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; } block_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } block_q6_K;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K; /* bsums: Σ of each 16 */

_Static_assert(sizeof(block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(block_q2_K) == 84, "q2_K");
_Static_assert(sizeof(block_q3_K) == 110, "q3_K");
_Static_assert(sizeof(block_q4_K) == 144, "q4_K");
_Static_assert(sizeof(block_q5_K) == 176, "q5_K");
_Static_assert(sizeof(block_q6_K) == 210, "q6_K");
_Static_assert(sizeof(block_q8_K) == 292, "q8_K");

static inline uint32_t lk_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float lk_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Exact f16 -> f32 (every f16 is representable as f32). */
static inline float lk_h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) {
        const float f = (float)man * 0x1p-24f; /* zero or subnormal */
        return sign ? -f : f;
    }
    if (exp == 31) return lk_f32_from_bits(sign | 0x7f800000u | (man << 13));
    return lk_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* f32 -> f16, round to nearest even, NaN stays NaN, overflow -> inf. The two float operations let the
 * FPU do the rounding: scaling by 2^112 then 2^-110 brings the value's significant bits into f16 range. */
static inline uint16_t lk_f2h(float f) {
    float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
    const uint32_t w = lk_f32_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xff000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = lk_f32_from_bits((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = lk_f32_bits(base);
    const uint32_t exp_bits = (bits >> 13) & 0x00007c00u;
    const uint32_t mantissa_bits = bits & 0x00000fffu;
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (uint16_t)((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

/* Unaligned little-endian loads of block fields. */
static inline uint16_t lk_load_u16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t lk_load_u32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* The 32-block types with a min m (Q4_1, Q5_1): their activations are Q8_1, whose s = d · Σ qs meets m. */
static inline int lk_has_min(int type) { return type == LK_TYPE_Q4_1 || type == LK_TYPE_Q5_1; }

static inline float lk_bf2f(uint16_t b) { return lk_f32_from_bits((uint32_t)b << 16); }

/* Q4_K / Q5_K: 6-bit scale and min of sub-block j (0..7) from the packed scales[12]. */
static inline void lk_get_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
        *mn = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

#endif

/* Helpers shared by the arm64 kernel files (arm/): target features, f16 values, bit masks, integer sums as floats,
 * the prefetch distance. aarch64 only. */
#ifndef LK_ARM_H
#define LK_ARM_H
#include "../lk_internal.h"
#include <arm_neon.h>

#define INLINE static inline __attribute__((always_inline))

/* The functions between LK_ARM_TARGET_BEGIN(clang's features, GCC's) and LK_ARM_TARGET_END are compiled for
 * those features, e.g. LK_ARM_TARGET_BEGIN("dotprod,i8mm", "+dotprod+i8mm") */
#define LK_ARM_STR_(X) #X
#define LK_ARM_STR(X) LK_ARM_STR_(X)
#if defined(__clang__)
#define LK_ARM_TARGET_BEGIN(CLANG_FEATURES, GCC_FEATURES)                                                    \
    _Pragma(LK_ARM_STR(clang attribute push(__attribute__((target(CLANG_FEATURES))), apply_to = function)))
#define LK_ARM_TARGET_END _Pragma("clang attribute pop")
#else
#define LK_ARM_TARGET_BEGIN(CLANG_FEATURES, GCC_FEATURES) _Pragma("GCC push_options") _Pragma(LK_ARM_STR(GCC target(GCC_FEATURES)))
#define LK_ARM_TARGET_END _Pragma("GCC pop_options")
#endif

INLINE float h2f(uint16_t h) {
    __fp16 f;
    memcpy(&f, &h, 2);
    return (float)f;
}

/* bytes 0xFF where bit j of the 16 bits at `bits` (little-endian) is set, j = 0..15 */
INLINE uint8x16_t bits_to_bytes_16(uint16_t bits) {
    static const uint8_t sel[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t b = vcombine_u8(vdup_n_u8((uint8_t)(bits & 0xff)), vdup_n_u8((uint8_t)(bits >> 8)));
    return vtstq_u8(b, vld1q_u8(sel));
}

/* Integer sums as floats without the int-to-float conversion (slow on some cores, 2 of a cycle's vector
 * slots on Neoverse V1): a sum chain started at sum_start() holds the bits of the float 1.5·2^23 + n, and
 * sum_to_f32 subtracts 1.5·2^23, leaving n exactly (the conversion's bits) for |n| < 2^22. */
INLINE int32x4_t sum_start(void) { return vdupq_n_s32(0x4B400000); }
INLINE float32x4_t sum_to_f32(int32x4_t v) { return vsubq_f32(vreinterpretq_f32_s32(v), vdupq_n_f32(12582912.0f)); }

/* Weight bytes ahead of the one-token kernels' reads that they prefetch into L2 (lk_prefetch_weights). */
enum { LK_ARM_PREFETCH_BYTES = 1024 };

/* Q4_0, Q8_0 weights in the 8-row layout on the dotprod instructions, any token count (arm/rows8.c): the
 * lk_gemm_fn of the LK_E_ROWS8 entry */
int lk_arm_rows8_q4_0(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end);
int lk_arm_rows8_q8_0(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end);
/* Q4_K, Q5_K, Q6_K weights in the 8-row layout on the dotprod instructions, any token count (arm/rows8_kquant.c) */
int lk_arm_rows8_q4_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end);
int lk_arm_rows8_q5_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end);
int lk_arm_rows8_q6_K(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end);

#endif

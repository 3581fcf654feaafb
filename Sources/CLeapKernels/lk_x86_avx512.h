/* Helpers shared by the AVX-512 VNNI kernel files (on top of lk_x86_avx2.h); include it inside a region
 * that enables the file's target, as lk_x86_avx2.h. */
#ifndef LK_X86_AVX512_H
#define LK_X86_AVX512_H
#include "lk_x86_avx2.h"

/* What vpdpbusd's unsigned operand adds to a 32-block type's weights: Q5_0 (−16..15) + 16, Q8_0 (−128..127)
 * + 128; Q4_x and Q5_1 are unsigned already. Subtracted again through the activation sums. */
INLINE int vnni_weight_offset(int type) { return type == LK_TYPE_Q5_0 ? 16 : 0; }
/* two s16 in one s32 lane (a low, b high), the operand layout of vpdpwssd */
INLINE int32_t pair16(int a, int b) { return (int32_t)(((uint32_t)(uint16_t)(int16_t)b << 16) | (uint16_t)(int16_t)a); }

#endif

/* What the CPU kernels lend to kernel files of other targets (internal, not part of the public ABI): the
 * encoders' matrix products of CLeapMediaKernels take the calling thread's scratch memory, read Q8_0 blocks
 * and load their fields through these, as the kernel files here do (lk_types.h and lk_internal.h include
 * this header). The kernels' entry points (F16 rows, Q8_0 quantization, softmax, the ISA in effect) are in
 * leap_kernels.h. */
#ifndef LEAP_KERNEL_SUPPORT_H
#define LEAP_KERNEL_SUPPORT_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Scratch memory of the calling thread (a pool worker or a caller), at least `bytes`, 64-byte aligned: grown on
 * demand, kept for the thread's next call and freed when it exits (pool.c). Valid until this thread's next
 * lk_scratch call, so a kernel takes it once per call and calls no other kernel that takes it. NULL when out
 * of memory (the kernel then returns 0 and its caller falls back). */
void *lk_scratch(size_t bytes);

#define QK 32 /* elements per block of the 32-block types */

/* ggml's Q8_0 block, bit-exact: the scale d (IEEE f16 bits) and 32 signed quants; y = d · q. */
typedef struct { uint16_t d; int8_t qs[QK]; } block_q8_0;

/* Unaligned little-endian load of a block field. */
static inline int32_t lk_load_i32(const void *p) { int32_t v; memcpy(&v, p, 4); return v; }

#endif

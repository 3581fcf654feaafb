/* Hot numeric kernels (C with intrinsics, runtime CPU dispatch). Internal: not part of the public ABI. */
#ifndef LEAP_KERNELS_H
#define LEAP_KERNELS_H
#include <stddef.h>
#include <stdint.h>

/* Returns a bit set of the SIMD features detected on this CPU (see kernels.c). */
uint32_t lk_cpu_features(void);

#endif

/* Generic 16-float vectors for the audio kernels (internal). */
#ifndef LEAP_AUDIO_VECTOR_H
#define LEAP_AUDIO_VECTOR_H
#include <string.h>
#include "leap_audio_kernels.h"

/* 16 floats (one per FFT lane): a generic vector the compiler lowers to the variant's ISA (1 zmm, 2 ymm,
 * 4 xmm or NEON q registers). Unaligned loads and stores go through memcpy. */
typedef float lane_v __attribute__((vector_size(16 * sizeof(float))));
/* Macros, not functions: a 64-byte vector passed by value would change the ABI between variants. */
#define load_v(p) ({ lane_v v_; memcpy(&v_, (p), sizeof v_); v_; })
#define store_v(p, v) do { const lane_v s_ = (v); memcpy((p), &s_, sizeof s_); } while (0)
#define splat_v(x) ((lane_v){0} + (x))

#endif

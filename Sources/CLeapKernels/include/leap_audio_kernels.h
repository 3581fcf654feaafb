/* Audio resampling kernels (internal, not part of the public ABI). Used by LeapAudio's Resampler. */
#ifndef LEAP_AUDIO_KERNELS_H
#define LEAP_AUDIO_KERNELS_H
#include <stddef.h>
#include <stdint.h>

/* A polyphase FIR stage: output k sits at input time k*M/L (M/L = step_q + step_r/L).
 * table: [rows][taps] with taps a multiple of 16 (zero padded). Row r holds the filter for fractional
 * position r/L (exact mode, interp_p == 0, rows == L) or r/P (interpolated mode, rows == P + 1: the
 * output is a linear blend of two adjacent rows, for ratios whose L is too large for a table). */
typedef struct {
    const float *table; /* [rows][taps] */
    size_t taps;        /* multiple of 16 */
    uint32_t L;         /* phase denominator (output rate / gcd) */
    uint32_t step_r;    /* M % L */
    size_t step_q;      /* M / L */
    uint32_t interp_p;  /* 0: exact table; else P (rows == P + 1) */
} lk_polyphase;

/* Produces outputs while the window [*pos, *pos + taps) lies inside x[0, n_x) and fewer than max_out were
 * written. *pos (window start in x) and *phase (in [0, L)) advance per output. Returns outputs written. */
size_t lk_audio_polyphase_run(const lk_polyphase *f, const float *x, size_t n_x, size_t *pos, uint32_t *phase,
                              float *out, size_t max_out);

/* Half-band decimation by 2 of a zero-phase filter whose odd taps are all zero except the center (0.5):
 * y[n] = 0.5 * even[n + k_n] + sum_k h[k] * (odd[n + k_n - 1 - k] + odd[n + k_n + k]), k in [0, n_h), with
 * k_n = n_h. `even` and `odd` are the de-interleaved input (even[i] = x[2i], odd[i] = x[2i+1]) and must
 * hold n_out + 2 * n_h samples. */
void lk_audio_halfband_run(const float *even, const float *odd, const float *h, size_t n_h, float *y,
                           size_t n_out);

/* even[i] = x[2i], odd[i] = x[2i+1] for i < n_pairs. */
void lk_audio_deinterleave2(const float *x, size_t n_pairs, float *even, float *odd);

/* Dot product of two float vectors (n any), with the best SIMD the CPU has. */
float lk_audio_dot_f32(const float *a, const float *b, size_t n);

/* Which kernel variant runs here: 0 portable, 2 AVX2+FMA, 3 AVX-512F. */
int lk_audio_kernel_level(void);

#endif

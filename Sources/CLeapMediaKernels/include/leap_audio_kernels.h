/* Audio kernels (internal, not part of the public ABI): the FIR and FFT stages of LeapAudio's Resampler and
 * the FFT of LeapAudioEncoder's mel spectrogram and of LeapSpeech's inverse real FFT. In the media kernels target
 * (CLeapMediaKernels), apart from the matmul kernels: audio_resample.c (FIR stages, dot product, and the CPU detection every audio kernel
 * dispatches on: lk_audio_kernel_level, capped by LEAP_AUDIO_KERNEL=portable|avx2), audio_fft.c (the
 * batched FFT and its spectrum helpers), audio_vector.h (the 16-lane vector type both are written in). */
#ifndef LEAP_AUDIO_KERNELS_H
#define LEAP_AUDIO_KERNELS_H
#include <stddef.h>
#include <stdint.h>

/* A polyphase FIR stage: output k sits at input time k*M/L (M/L = step_q + step_r/L).
 * table: [rows][taps] with taps a multiple of 8 (zero padded). Row r holds the filter for fractional
 * position r/L (exact mode, interp_p == 0, rows == L) or r/P (interpolated mode, rows == P + 1: the
 * output is a linear blend of two adjacent rows, for ratios whose L is too large for a table). */
typedef struct {
    const float *table; /* [rows][taps] */
    size_t taps;        /* multiple of 8 */
    uint32_t L;         /* phase denominator (output rate / gcd) */
    uint32_t step_r;    /* M % L */
    size_t step_q;      /* M / L */
    uint32_t interp_p;  /* 0: exact table; else P (rows == P + 1) */
} lk_polyphase;

/* Produces outputs while the window [*pos, *pos + taps) lies inside x[0, n_x) and fewer than max_out were
 * written. *pos (window start in x) and *phase (in [0, L)) advance per output. Returns outputs written. */
size_t lk_audio_polyphase_run(const lk_polyphase *f, const float *x, size_t n_x, size_t *pos, uint32_t *phase,
                              float *out, size_t max_out);

/* Block polyphase: groups of LK_POLYBLOCK_GROUP consecutive outputs. table: [patterns][window][group]
 * (window a multiple of 4), the coefficients of each output of a group over the union of their windows;
 * group g uses pattern g mod patterns, reads x[*pos, *pos + window) and advances *pos by
 * advance[pattern]. Produces at most max_groups groups while the window fits in x[0, n_x); returns the
 * groups written. */
#define LK_POLYBLOCK_GROUP 8
size_t lk_audio_polyblock_run(const float *table, size_t window, uint32_t patterns, const uint32_t *advance,
                              const float *x, size_t n_x, size_t *pos, uint32_t *pattern, float *out,
                              size_t max_groups);

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

/* Batched complex FFT (LK_FFT_LANES transforms side by side; re/im laid out [n][LK_FFT_LANES]; n a power
 * of two). Forward: natural order in, bit-reversed out; inverse (unscaled): bit-reversed in, natural out.
 * tw_re/tw_im: exp(-2 pi i k / n) for k < n / 2. */
#define LK_FFT_LANES 16
void lk_audio_fft_forward(float *re, float *im, size_t n, const float *tw_re, const float *tw_im);
void lk_audio_fft_inverse(float *re, float *im, size_t n, const float *tw_re, const float *tw_im);
/* y = x * h per frequency bin (h: one complex value per bin, shared by all lanes). y may alias x. */
void lk_audio_spectrum_multiply(const float *x_re, const float *x_im, const float *h_re, const float *h_im,
                                float *y_re, float *y_im, size_t n);
/* Decimation by 2 in the frequency domain: spectra of size n in bit-reversed order (as the forward FFT
 * leaves them) become spectra of size n/2, also bit-reversed, whose inverse is every other sample of the
 * size-n inverse. Natural bins k and k + n/2 sit at positions 2j and 2j + 1 (j = bitrev_{n/2}(k)), so the
 * fold adds neighbours, in place into the first half. */
void lk_audio_spectrum_fold2(float *re, float *im, size_t n);
/* Overlap-save batch I/O: lane l < batch gets x[2*block*l + i] (re) and x[2*block*l + block + i] (im) for
 * i < n (n a multiple of 16); lanes >= batch are zeroed. Store writes the first `block` outputs of each
 * lane for `phases` (1 or 2) output phases, interleaved: phase p of lane l's re part goes to
 * out[(2*block*l + t) * phases + p], of its im part to out[(2*block*l + block + t) * phases + p]
 * (re1/im1: phase 1, unused when phases == 1). */
void lk_audio_fft_load_pairs(const float *x, size_t block, size_t n, size_t batch, float *re, float *im);
void lk_audio_fft_store_pairs(const float *re0, const float *im0, const float *re1, const float *im1,
                              size_t phases, size_t block, size_t batch, float *out);

/* Which kernel variant runs here: 0 portable, 2 AVX2+FMA, 3 AVX-512F. */
int lk_audio_kernel_level(void);

#endif

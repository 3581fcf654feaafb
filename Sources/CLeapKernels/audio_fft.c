/* Batched complex FFTs for the resampler's FFT filter stage: LK_FFT_LANES independent transforms run side
 * by side, lane-interleaved ([n][LK_FFT_LANES] split re/im), so every butterfly is a plain vector op over
 * lanes and the compiler vectorizes it for any SIMD width without shuffles. Each lane carries two real
 * blocks (one in re, one in im): filtering with a real filter keeps them apart. Lanes never interact, so a
 * block's result does not depend on which lane or batch it ran in. */
#include "leap_audio_kernels.h"

#define W LK_FFT_LANES

/* Forward DIF: natural order in, bit-reversed order out. tw[k] = exp(-2 pi i k / n), k < n/2.
 * Two radix-2 stages (half = 2q, then q) are fused per pass (half the memory traffic); a leftover single
 * stage (odd log2 n) runs last. */
#define FFT_FORWARD_BODY                                                                                 \
    size_t q = n / 4;                                                                                    \
    for (; q >= 1; q /= 4) {                                                                             \
        const size_t step1 = n / (4 * q), step2 = 2 * step1;                                             \
        for (size_t start = 0; start < n; start += 4 * q) {                                              \
            for (size_t k = 0; k < q; k++) {                                                             \
                const float w1r = tw_re[k * step1], w1i = tw_im[k * step1];                              \
                const float w2r = tw_re[k * step2], w2i = tw_im[k * step2];                              \
                float *restrict r0 = re + (start + k) * W, *restrict i0 = im + (start + k) * W;          \
                float *restrict r1 = r0 + q * W, *restrict i1 = i0 + q * W;                              \
                float *restrict r2 = r1 + q * W, *restrict i2 = i1 + q * W;                              \
                float *restrict r3 = r2 + q * W, *restrict i3 = i2 + q * W;                              \
                for (int l = 0; l < W; l++) {                                                            \
                    /* stage half = 2q: pairs (0,2), (1,3); twiddles W^k and W^(k+q) = -i W^k */          \
                    const float s0r = r0[l] + r2[l], s0i = i0[l] + i2[l];                                \
                    const float dr = r0[l] - r2[l], di = i0[l] - i2[l];                                  \
                    const float s2r = dr * w1r - di * w1i, s2i = dr * w1i + di * w1r;                    \
                    const float s1r = r1[l] + r3[l], s1i = i1[l] + i3[l];                                \
                    const float er = r1[l] - r3[l], ei = i1[l] - i3[l];                                  \
                    const float tr = er * w1r - ei * w1i, ti = er * w1i + ei * w1r;                      \
                    const float s3r = ti, s3i = -tr; /* times -i */                                      \
                    /* stage half = q: pairs (0,1), (2,3); twiddle W^2k */                                \
                    const float ar = s0r - s1r, ai = s0i - s1i;                                          \
                    const float br = s2r - s3r, bi = s2i - s3i;                                          \
                    r0[l] = s0r + s1r;                                                                   \
                    i0[l] = s0i + s1i;                                                                   \
                    r1[l] = ar * w2r - ai * w2i;                                                         \
                    i1[l] = ar * w2i + ai * w2r;                                                         \
                    r2[l] = s2r + s3r;                                                                   \
                    i2[l] = s2i + s3i;                                                                   \
                    r3[l] = br * w2r - bi * w2i;                                                         \
                    i3[l] = br * w2i + bi * w2r;                                                         \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
        if (q < 4) break;                                                                                \
    }                                                                                                    \
    if ((q == 2) || (n == 2)) { /* one radix-2 stage (half = 1) left */                                  \
        for (size_t start = 0; start < n; start += 2) {                                                  \
            float *restrict ar = re + start * W, *restrict ai = im + start * W;                          \
            float *restrict br = ar + W, *restrict bi = ai + W;                                          \
            for (int l = 0; l < W; l++) {                                                                \
                const float xr = ar[l] - br[l], xi = ai[l] - bi[l];                                      \
                ar[l] += br[l];                                                                          \
                ai[l] += bi[l];                                                                          \
                br[l] = xr;                                                                              \
                bi[l] = xi;                                                                              \
            }                                                                                            \
        }                                                                                                \
    }

/* Inverse DIT with conjugate twiddles: bit-reversed in, natural out (unscaled). A single radix-2 stage
 * first when log2 n is odd, then fused pairs of stages (half = q, then 2q). */
#define FFT_INVERSE_BODY                                                                                 \
    size_t q = 1;                                                                                        \
    {                                                                                                    \
        size_t levels = 0;                                                                               \
        for (size_t m = n; m > 1; m /= 2) levels++;                                                      \
        if (levels % 2 == 1) {                                                                           \
            for (size_t start = 0; start < n; start += 2) {                                              \
                float *restrict ar = re + start * W, *restrict ai = im + start * W;                      \
                float *restrict br = ar + W, *restrict bi = ai + W;                                      \
                for (int l = 0; l < W; l++) {                                                            \
                    const float tr = br[l], ti = bi[l];                                                  \
                    br[l] = ar[l] - tr;                                                                  \
                    bi[l] = ai[l] - ti;                                                                  \
                    ar[l] += tr;                                                                         \
                    ai[l] += ti;                                                                         \
                }                                                                                        \
            }                                                                                            \
            q = 2;                                                                                       \
        }                                                                                                \
    }                                                                                                    \
    for (; 4 * q <= n; q *= 4) {                                                                         \
        const size_t step1 = n / (4 * q), step2 = 2 * step1;                                             \
        for (size_t start = 0; start < n; start += 4 * q) {                                              \
            for (size_t k = 0; k < q; k++) {                                                             \
                const float w1r = tw_re[k * step1], w1i = -tw_im[k * step1];                             \
                const float w2r = tw_re[k * step2], w2i = -tw_im[k * step2];                             \
                float *restrict r0 = re + (start + k) * W, *restrict i0 = im + (start + k) * W;          \
                float *restrict r1 = r0 + q * W, *restrict i1 = i0 + q * W;                              \
                float *restrict r2 = r1 + q * W, *restrict i2 = i1 + q * W;                              \
                float *restrict r3 = r2 + q * W, *restrict i3 = i2 + q * W;                              \
                for (int l = 0; l < W; l++) {                                                            \
                    /* stage half = q: pairs (0,1), (2,3); twiddle conj(W^2k) */                          \
                    const float tr = r1[l] * w2r - i1[l] * w2i, ti = r1[l] * w2i + i1[l] * w2r;          \
                    const float s0r = r0[l] + tr, s0i = i0[l] + ti, s1r = r0[l] - tr, s1i = i0[l] - ti;  \
                    const float ur = r3[l] * w2r - i3[l] * w2i, ui = r3[l] * w2i + i3[l] * w2r;          \
                    const float s2r = r2[l] + ur, s2i = i2[l] + ui, s3r = r2[l] - ur, s3i = i2[l] - ui;   \
                    /* stage half = 2q: pairs (0,2) with conj(W^k), (1,3) with conj(W^(k+q)) = i conj(W^k) */ \
                    const float vr = s2r * w1r - s2i * w1i, vi = s2r * w1i + s2i * w1r;                  \
                    const float xr0 = s3r * w1r - s3i * w1i, xi0 = s3r * w1i + s3i * w1r;                \
                    const float xr = -xi0, xi = xr0; /* times i */                                       \
                    r0[l] = s0r + vr;                                                                    \
                    i0[l] = s0i + vi;                                                                    \
                    r2[l] = s0r - vr;                                                                    \
                    i2[l] = s0i - vi;                                                                    \
                    r1[l] = s1r + xr;                                                                    \
                    i1[l] = s1i + xi;                                                                    \
                    r3[l] = s1r - xr;                                                                    \
                    i3[l] = s1i - xi;                                                                    \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }

/* out = x * h per frequency (h broadcast over lanes). y may alias x: each bin's lanes are all read into
 * locals before any is written, so the compiler vectorizes without runtime alias checks (which fail, and
 * fall back to scalar code, exactly in the in-place case). */
#define SPECTRUM_BODY                                                                          \
    for (size_t f = 0; f < n; f++) {                                                           \
        const float hr = h_re[f], hi = h_im[f];                                                \
        const float *xr = x_re + f * W, *xi = x_im + f * W;                                    \
        float *yr = y_re + f * W, *yi = y_im + f * W;                                          \
        float a[W], b[W];                                                                      \
        for (int l = 0; l < W; l++) { a[l] = xr[l]; b[l] = xi[l]; }                            \
        for (int l = 0; l < W; l++) {                                                          \
            yr[l] = a[l] * hr - b[l] * hi;                                                     \
            yi[l] = a[l] * hi + b[l] * hr;                                                     \
        }                                                                                      \
    }

/* In-place fold (see the header): bins 2j and 2j + 1 summed into j; j <= 2j, so reads stay ahead of
 * writes, and each bin's lanes are read into locals first (vectorizes, as above). */
#define FOLD2_BODY                                                                             \
    for (size_t j = 0; j < n / 2; j++) {                                                       \
        const float *r0 = re + 2 * j * W, *i0 = im + 2 * j * W;                                \
        float a[W], b[W];                                                                      \
        for (int l = 0; l < W; l++) { a[l] = r0[l] + r0[W + l]; b[l] = i0[l] + i0[W + l]; }    \
        float *rd = re + j * W, *id = im + j * W;                                              \
        for (int l = 0; l < W; l++) { rd[l] = a[l]; id[l] = b[l]; }                            \
    }

#define DEFINE_VARIANT(SUFFIX, ATTR)                                                                      \
    ATTR static void fwd_##SUFFIX(float *re, float *im, size_t n, const float *tw_re, const float *tw_im) { \
        FFT_FORWARD_BODY                                                                                  \
    }                                                                                                     \
    ATTR static void inv_##SUFFIX(float *re, float *im, size_t n, const float *tw_re, const float *tw_im) { \
        FFT_INVERSE_BODY                                                                                  \
    }                                                                                                     \
    ATTR static void mul_##SUFFIX(const float *x_re, const float *x_im, const float *h_re, const float *h_im, \
                                  float *y_re, float *y_im, size_t n) {                                   \
        SPECTRUM_BODY                                                                                     \
    }                                                                                                     \
    ATTR static void fold2_##SUFFIX(float *re, float *im, size_t n) {                                     \
        FOLD2_BODY                                                                                        \
    }

DEFINE_VARIANT(portable, )
#if defined(__x86_64__)
DEFINE_VARIANT(avx2, __attribute__((target("avx2,fma"))))
DEFINE_VARIANT(avx512, __attribute__((target("avx512f"))))
#endif

void lk_audio_fft_forward(float *re, float *im, size_t n, const float *tw_re, const float *tw_im) {
#if defined(__x86_64__)
    switch (lk_audio_kernel_level()) {
    case 3: fwd_avx512(re, im, n, tw_re, tw_im); return;
    case 2: fwd_avx2(re, im, n, tw_re, tw_im); return;
    default: break;
    }
#endif
    fwd_portable(re, im, n, tw_re, tw_im);
}

void lk_audio_fft_inverse(float *re, float *im, size_t n, const float *tw_re, const float *tw_im) {
#if defined(__x86_64__)
    switch (lk_audio_kernel_level()) {
    case 3: inv_avx512(re, im, n, tw_re, tw_im); return;
    case 2: inv_avx2(re, im, n, tw_re, tw_im); return;
    default: break;
    }
#endif
    inv_portable(re, im, n, tw_re, tw_im);
}

void lk_audio_spectrum_multiply(const float *x_re, const float *x_im, const float *h_re, const float *h_im,
                                float *y_re, float *y_im, size_t n) {
#if defined(__x86_64__)
    switch (lk_audio_kernel_level()) {
    case 3: mul_avx512(x_re, x_im, h_re, h_im, y_re, y_im, n); return;
    case 2: mul_avx2(x_re, x_im, h_re, h_im, y_re, y_im, n); return;
    default: break;
    }
#endif
    mul_portable(x_re, x_im, h_re, h_im, y_re, y_im, n);
}

void lk_audio_spectrum_fold2(float *re, float *im, size_t n) {
#if defined(__x86_64__)
    switch (lk_audio_kernel_level()) {
    case 3: fold2_avx512(re, im, n); return;
    case 2: fold2_avx2(re, im, n); return;
    default: break;
    }
#endif
    fold2_portable(re, im, n);
}

void lk_audio_fft_load_pairs(const float *x, size_t block, size_t n, size_t batch, float *re, float *im) {
    for (size_t i = 0; i < n; i++) {
        float *r = re + i * W, *m = im + i * W;
        size_t l = 0;
        for (; l < batch; l++) {
            r[l] = x[2 * block * l + i];
            m[l] = x[2 * block * l + block + i];
        }
        for (; l < W; l++) r[l] = m[l] = 0;
    }
}

void lk_audio_fft_store_pairs(const float *re, const float *im, size_t block, size_t batch, size_t stride,
                              size_t phase, float *out) {
    for (size_t t = 0; t < block; t++) {
        const float *r = re + t * W, *m = im + t * W;
        for (size_t l = 0; l < batch; l++) {
            out[(2 * block * l + t) * stride + phase] = r[l];
            out[(2 * block * l + block + t) * stride + phase] = m[l];
        }
    }
}

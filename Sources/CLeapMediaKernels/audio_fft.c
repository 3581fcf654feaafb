/* Batched complex FFTs, the one FFT of the library (resampler filter stage, mel spectrogram, ISTFT): LK_FFT_LANES independent transforms run side
 * by side, lane-interleaved ([n][LK_FFT_LANES] split re/im), so every butterfly is a plain vector op over
 * lanes and the compiler vectorizes it for any SIMD width without shuffles. Each lane carries two real
 * blocks (one in re, one in im): filtering with a real filter keeps them apart. Lanes never interact, so a
 * block's result does not depend on which lane or batch it ran in. */
#include "leap_audio_kernels.h"
#include "audio_vector.h"

#define W LK_FFT_LANES

/* In-register transpose of 16 rows of 16 (rows[i][j] -> rows[j][i]): four rounds that swap the
 * off-diagonal s x s blocks of every 2s x 2s block (s = 8, 4, 2, 1); shuffle index 16 + c is b[c]. */
_Static_assert(LK_FFT_LANES == 16, "the lane transpose is written for 16 lanes");
#define SWAP8_LO 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define SWAP8_HI 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31
#define SWAP4_LO 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define SWAP4_HI 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define SWAP2_LO 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define SWAP2_HI 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define SWAP1_LO 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define SWAP1_HI 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#define SWAP_BLOCKS(S, LO, HI)                                                                  \
    for (int i = 0; i < 16; i++) {                                                              \
        if (i & (S)) continue;                                                                  \
        const lane_v a = rows[i], b = rows[i + (S)];                                            \
        rows[i] = __builtin_shufflevector(a, b, LO);                                            \
        rows[i + (S)] = __builtin_shufflevector(a, b, HI);                                      \
    }
static inline __attribute__((always_inline)) void transpose16(lane_v rows[16]) {
    SWAP_BLOCKS(8, SWAP8_LO, SWAP8_HI)
    SWAP_BLOCKS(4, SWAP4_LO, SWAP4_HI)
    SWAP_BLOCKS(2, SWAP2_LO, SWAP2_HI)
    SWAP_BLOCKS(1, SWAP1_LO, SWAP1_HI)
}

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

/* out = x * h per frequency (h broadcast over lanes); y may alias x. */
#define SPECTRUM_BODY                                                                          \
    for (size_t f = 0; f < n; f++) {                                                           \
        const lane_v hr = splat_v(h_re[f]), hi = splat_v(h_im[f]);                             \
        const lane_v a = load_v(x_re + f * W), b = load_v(x_im + f * W);                       \
        store_v(y_re + f * W, a * hr - b * hi);                                                \
        store_v(y_im + f * W, a * hi + b * hr);                                                \
    }

/* In-place fold (see the header): bins 2j and 2j + 1 summed into j (j <= 2j: reads stay ahead). */
#define FOLD2_BODY                                                                             \
    for (size_t j = 0; j < n / 2; j++) {                                                       \
        const lane_v a = load_v(re + 2 * j * W) + load_v(re + (2 * j + 1) * W);                \
        const lane_v b = load_v(im + 2 * j * W) + load_v(im + (2 * j + 1) * W);                \
        store_v(re + j * W, a);                                                                \
        store_v(im + j * W, b);                                                                \
    }

/* Overlap-save batch input: 16 x 16 tiles of the blocks transposed into lanes. */
#define LOAD_PAIRS_BODY                                                                        \
    lane_v rows[16];                                                                           \
    for (int part = 0; part < 2; part++) {                                                     \
        float *dst = part == 0 ? re : im;                                                      \
        for (size_t i = 0; i < n; i += 16) {                                                   \
            for (size_t l = 0; l < 16; l++)                                                    \
                rows[l] = l < batch ? load_v(x + 2 * block * l + part * block + i) : (lane_v){0}; \
            transpose16(rows);                                                                 \
            for (size_t k = 0; k < 16; k++) store_v(dst + (i + k) * W, rows[k]);               \
        }                                                                                      \
    }

/* Overlap-save batch output: the first `block` outputs of each lane, phases interleaved. */
#define STORE_PAIRS_BODY                                                                       \
    lane_v rows[16], rows1[16];                                                                \
    for (int part = 0; part < 2; part++) {                                                     \
        const float *src0 = part == 0 ? re0 : im0, *src1 = part == 0 ? re1 : im1;              \
        size_t t = 0;                                                                          \
        for (; t + 16 <= block; t += 16) {                                                     \
            for (size_t k = 0; k < 16; k++) rows[k] = load_v(src0 + (t + k) * W);              \
            transpose16(rows);                                                                 \
            if (phases == 1) {                                                                 \
                for (size_t l = 0; l < batch; l++)                                             \
                    store_v(out + 2 * block * l + part * block + t, rows[l]);                  \
                continue;                                                                      \
            }                                                                                  \
            for (size_t k = 0; k < 16; k++) rows1[k] = load_v(src1 + (t + k) * W);             \
            transpose16(rows1);                                                                \
            for (size_t l = 0; l < batch; l++) {                                               \
                float *o = out + 2 * (2 * block * l + part * block + t);                       \
                store_v(o, __builtin_shufflevector(rows[l], rows1[l], 0, 16, 1, 17, 2, 18, 3, 19, \
                                                   4, 20, 5, 21, 6, 22, 7, 23));              \
                store_v(o + 16, __builtin_shufflevector(rows[l], rows1[l], 8, 24, 9, 25, 10, 26, \
                                                        11, 27, 12, 28, 13, 29, 14, 30, 15, 31)); \
            }                                                                                  \
        }                                                                                      \
        for (; t < block; t++)                                                                 \
            for (size_t l = 0; l < batch; l++) {                                               \
                const size_t at = (2 * block * l + part * block + t) * phases;                 \
                out[at] = src0[t * W + l];                                                     \
                if (phases == 2) out[at + 1] = src1[t * W + l];                                \
            }                                                                                  \
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
    }                                                                                                     \
    ATTR static void load_##SUFFIX(const float *x, size_t block, size_t n, size_t batch, float *re, float *im) { \
        LOAD_PAIRS_BODY                                                                                   \
    }                                                                                                     \
    ATTR static void store_##SUFFIX(const float *re0, const float *im0, const float *re1, const float *im1, \
                                    size_t phases, size_t block, size_t batch, float *out) {              \
        STORE_PAIRS_BODY                                                                                  \
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
#if defined(__x86_64__)
    switch (lk_audio_kernel_level()) {
    case 3: load_avx512(x, block, n, batch, re, im); return;
    case 2: load_avx2(x, block, n, batch, re, im); return;
    default: break;
    }
#endif
    load_portable(x, block, n, batch, re, im);
}

void lk_audio_fft_store_pairs(const float *re0, const float *im0, const float *re1, const float *im1,
                              size_t phases, size_t block, size_t batch, float *out) {
#if defined(__x86_64__)
    switch (lk_audio_kernel_level()) {
    case 3: store_avx512(re0, im0, re1, im1, phases, block, batch, out); return;
    case 2: store_avx2(re0, im0, re1, im1, phases, block, batch, out); return;
    default: break;
    }
#endif
    store_portable(re0, im0, re1, im1, phases, block, batch, out);
}

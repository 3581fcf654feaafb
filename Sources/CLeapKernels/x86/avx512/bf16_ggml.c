/* BF16 weights in llama.cpp's summation order, on CPUs with AVX512-BF16 (what llama.cpp's AVX-512 build runs
 * there; ggml-cpu/vec.cpp and llamafile/sgemm.cpp, read, not copied). The activations are BF16 values held as
 * floats (lk_round_bf16_row): ggml converts them to BF16, its vec_dot_type for BF16 weights. Rounding every
 * matmul input to BF16 makes the net sensitive to the last bit of each sum (a sum on either side of a BF16
 * rounding boundary moves the next input by 2^-8), so only the same order gives the same logits.
 *
 *   One token (llamafile declines n < 2), or a row length that is not a multiple of 32: ggml_vec_dot_bf16.
 *   Two accumulators c1, c2 take VDPBF16PS of elements [i, i + 32) and [i + 32, i + 64) for each whole
 *   64-element step; each is reduced as _mm512_reduce_add_ps and added to a double, the leftovers are added
 *   one by one in double (float products), the double is rounded to float.
 *
 *   From two tokens: tinyBLAS<32, __m512, __m512bh>: one accumulator per output, VDPBF16PS of each 32-element
 *   chunk in order, reduced as _mm512_reduce_add_ps.
 *
 * VDPBF16PS itself (its pairwise products and rounding) is the CPU's: these kernels are only used where the
 * instruction exists; other CPUs keep the generic BF16 kernels (llama.cpp's builds for them sum otherwise too),
 * and so do activations that are not BF16 values (a caller that multiplies plain floats). */
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512bf16"))), apply_to = function)
#include "../lk_x86_avx2.h" /* reduce16 */

static inline __attribute__((always_inline)) float reduce512(__m512 v) {
    return reduce16(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
}

static inline __attribute__((always_inline)) __m512bh load_bh(const uint16_t *p) {
    return (__m512bh)_mm512_loadu_si512((const void *)p);
}

/* BF16 bits of n floats; 0 when one of them is not a BF16 value (low half not zero). */
static int to_bf16_bits(const float *x, uint16_t *out, int64_t n) {
    __m512i low = _mm512_setzero_si512();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512i u = _mm512_castps_si512(_mm512_loadu_ps(x + i));
        low = _mm512_or_si512(low, u);
        _mm256_storeu_si256((__m256i *)(out + i), _mm512_cvtepi32_epi16(_mm512_srli_epi32(u, 16)));
    }
    uint32_t tail = 0;
    for (; i < n; i++) {
        const uint32_t u = lk_f32_bits(x[i]);
        tail |= u;
        out[i] = (uint16_t)(u >> 16);
    }
    return ((_mm512_reduce_or_epi32(low) | tail) & 0xFFFFu) == 0;
}

/* ggml_vec_dot_bf16 (the __AVX512BF16__ branch). */
static float dot_vec(const uint16_t *w, const uint16_t *x, int64_t n) {
    __m512 c1 = _mm512_setzero_ps(), c2 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        c1 = _mm512_dpbf16_ps(c1, load_bh(w + i), load_bh(x + i));
        c2 = _mm512_dpbf16_ps(c2, load_bh(w + i + 32), load_bh(x + i + 32));
    }
    double sum = 0;
    sum += (double)reduce512(c1);
    sum += (double)reduce512(c2);
    for (; i < n; i++) sum += (double)(lk_bf2f(w[i]) * lk_bf2f(x[i]));
    return (float)sum;
}

/* tinyBLAS<32, __m512, __m512bh>'s sum for one output (n a multiple of 32). */
static float dot_tiny(const uint16_t *w, const uint16_t *x, int64_t n) {
    __m512 c = _mm512_setzero_ps();
    for (int64_t l = 0; l < n; l += 32) c = _mm512_dpbf16_ps(c, load_bh(w + l), load_bh(x + l));
    return reduce512(c);
}

static int matmul_bf16_ggml(int64_t cols, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
                            int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end) {
    uint16_t stack[4096];
    const size_t need = (size_t)n_tokens * (size_t)cols;
    uint16_t *xb = need <= sizeof stack / sizeof stack[0] ? stack : lk_scratch(need * sizeof(uint16_t));
    if (!xb) return 0; /* the caller falls back to the generic kernels */
    int exact = 1;
    for (int64_t t = 0; t < n_tokens && exact; t++)
        exact = to_bf16_bits((const float *)((const uint8_t *)x + (size_t)t * x_row_bytes), xb + (size_t)t * (size_t)cols, cols);
    if (!exact) { /* activations not rounded to BF16 (a direct caller): ggml's order does not apply */
        return 0;
    }
    const int tiny = n_tokens >= 2 && cols % 32 == 0;
    for (int64_t r = row_begin; r < row_end; r++) {
        const uint16_t *wr = (const uint16_t *)((const uint8_t *)w + (size_t)r * w_row_bytes);
        for (int64_t t = 0; t < n_tokens; t++) {
            const uint16_t *xt = xb + (size_t)t * (size_t)cols;
            y[t * y_row_stride + r] = tiny ? dot_tiny(wr, xt, cols) : dot_vec(wr, xt, cols);
        }
    }
    return 1;
}

#pragma clang attribute pop

LK_KERNELS(lk_bf16_ggml, LK_KERNEL(LK_E_ANY_TOKENS, LK_TYPE_BF16, matmul_bf16_ggml));

#else
LK_NO_KERNELS(lk_bf16_ggml);
#endif

/* The activation quantizers' block loops, shared by the SIMD paths (AVX2, NEON): Q8_0 and Q8_1 on the
 * including file's amax_32 (max |x| of 32 floats) and quant_32 (32 floats times id, rounded to s8 into qs;
 * returns their sum), and the scale search of Q8_K. The arithmetic of the scalar reference (generic/scalar.c).
 * Include it after those two are defined, inside the file's target region. */
#ifndef LK_QUANTIZE_Q8_H
#define LK_QUANTIZE_Q8_H

static void quantize_q8_0(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK; i++, x += QK) {
        const float amax = amax_32(x);
        y[i].d = lk_f2h(amax / 127.0f);
        quant_32(x, amax != 0.0f ? 127.0f / amax : 0.0f, y[i].qs);
    }
}

static void quantize_q8_1(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK; i++, x += QK) {
        const float amax = amax_32(x), d = amax / 127.0f;
        y[i].d = lk_f2h(d);
        const int sum = quant_32(x, amax != 0.0f ? 127.0f / amax : 0.0f, y[i].qs);
        y[i].s = lk_f2h(d * (float)sum);
    }
}

/* Q8_K: *max = the first element of largest magnitude of a super-block, with its sign (as the reference);
 * 0 when the super-block is all zeros. */
static inline __attribute__((always_inline)) int q8_K_max(const float *x, float *max) {
    float amax = 0.0f;
    for (int k = 0; k < QK_K; k += 32) {
        const float m = amax_32(x + k);
        amax = m > amax ? m : amax;
    }
    if (amax == 0.0f) return 0;
    *max = 0.0f;
    for (int j = 0; j < QK_K; j++)
        if (__builtin_fabsf(x[j]) == amax) { *max = x[j]; break; }
    return 1;
}

#endif

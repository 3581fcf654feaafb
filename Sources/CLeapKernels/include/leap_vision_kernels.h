/* Element-wise kernels of the vision encoder (internal, not part of the public ABI). Used by LeapVision. */
#ifndef LEAP_VISION_KERNELS_H
#define LEAP_VISION_KERNELS_H
#include <stdint.h>

/* Fills table[65536] with ggml's GELU table (GGML_GELU_FP16): entry h = f16(gelu_tanh(f16 value h)). */
void lk_gelu_f16_table_fill(float *table);

/* y[n] = ggml's GELU of x through `table`: 0 for x <= -10, x for x >= 10, else table[f16 bits of x].
 * y may alias x. */
void lk_gelu_f16_table(const float *table, const float *x, float *y, int64_t n);

/* Softmax of `rows` rows of n scores (row r at x + r * stride) in place, after multiplying them by `scale`,
 * with ggml's soft_max arithmetic: max, exponentials and their sum as lk_softmax_exp, then times 1 / sum. */
void lk_softmax_rows_scaled(float *x, int64_t rows, int64_t n, int64_t stride, float scale);

#endif

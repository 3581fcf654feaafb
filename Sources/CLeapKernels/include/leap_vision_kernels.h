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

/* Y[t, r] = Σ_c W[r, c] · X[t, c] for t < n_tokens and row_begin <= r < row_end, with W in F32 or F16 (w_type
 * LK_TYPE_F32 / LK_TYPE_F16, row r at w + r * w_row_bytes) and X float (token t at x + t * x_stride), Y[t, r] at
 * y[t * y_stride + r]. A register-blocked product for the encoders' big batches (32 rows x 12 tokens per
 * step, AVX-512 when the CPU and lk_get_isa() allow it, portable loops otherwise); float sums in its own
 * order (not llama.cpp's). Returns 0 if w_type is neither F32 nor F16 or memory runs out (nothing written). */
int lk_vision_gemm(int w_type, const void *w, size_t w_row_bytes, int64_t cols, const float *x, int64_t x_stride,
                   int64_t n_tokens, float *y, int64_t y_stride, int64_t row_begin, int64_t row_end);

#endif

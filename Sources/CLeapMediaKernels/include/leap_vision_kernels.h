/* Kernels of the vision encoder (internal, not part of the public ABI), in the media kernels target
 * (CLeapMediaKernels) on CLeapKernels' dispatch and scratch. Used by LeapVision and LeapKernels' BatchedLinear. */
#ifndef LEAP_VISION_KERNELS_H
#define LEAP_VISION_KERNELS_H
#include <stddef.h>
#include <stdint.h>

/* Fills table[65536] with ggml's GELU table (GGML_GELU_FP16): entry h = f16(gelu_tanh(f16 value h)). */
void lk_gelu_f16_table_fill(float *table);

/* y[n] = ggml's GELU of x through `table`: 0 for x <= -10, x for x >= 10, else table[f16 bits of x].
 * y may alias x. */
void lk_gelu_f16_table(const float *table, const float *x, float *y, int64_t n);

/* Softmax of `rows` rows of n scores (row r at x + r * stride) in place, after multiplying them by `scale`,
 * with ggml's soft_max arithmetic: max, exponentials and their sum as lk_softmax_exp, then times 1 / sum. */
void lk_softmax_rows_scaled(float *x, int64_t rows, int64_t n, int64_t stride, float scale);

/* ---- The encoders' float matrix product (vision_gemm.c) ----
 * Y[t, r] = bias[r] + Σ_c W[r, c] · X[t, c] on packed operands: W in panels of LK_VG_PANEL_ROWS rows, each
 * column-major ([cols][32], F32 or F16, rows past the end zero), X in blocks of LK_VG_BLOCK_TOKENS tokens, each
 * [cols][12] (tokens past the end zero). Float sums in the kernel's own order (not llama.cpp's); AVX-512 or AVX2
 * when the CPU and lk_get_isa() allow it, portable loops otherwise. */
enum { LK_VG_PANEL_ROWS = 32, LK_VG_BLOCK_TOKENS = 12 };

/* The vectors lk_vg_* use under the selected kernel table: "avx512", "avx2", "neon" or "portable" (the scalar
 * table, or a CPU with none of those). */
const char *lk_vg_path(void);

/* Bytes of W packed (w_type LK_TYPE_F32 or LK_TYPE_F16, kept as is). */
size_t lk_vg_packed_weight_bytes(int w_type, int64_t rows, int64_t cols);

/* Packs panels [panel_begin, panel_end) of the rows x cols matrix W (row r at w + r * w_row_bytes). Returns 0
 * (nothing written) if w_type is neither F32 nor F16. */
int lk_vg_pack_weights(int w_type, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *packed,
                       int64_t panel_begin, int64_t panel_end);

/* Packs every panel of the F32 matrix W given transposed: W[r, c] = wt[c * wt_stride + r]. */
void lk_vg_pack_weights_transposed(const float *wt, int64_t wt_stride, int64_t rows, int64_t cols, float *packed);

/* Floats of X packed. */
size_t lk_vg_packed_x_floats(int64_t n_tokens, int64_t cols);

/* Packs token blocks [block_begin, block_end) of X (token t at x + t * x_stride), each value rounded to the
 * nearest F16 when round_f16 (the activations of F16 weights, as ggml converts them). */
void lk_vg_pack_x(const float *x, int64_t x_stride, int64_t n_tokens, int64_t cols, int round_f16, float *xp,
                  int64_t block_begin, int64_t block_end);

/* Y[t, r] (at y[t * y_stride + r]) for t < n_tokens, row_begin <= r < row_end (row_begin a multiple of 32),
 * bias optional. X: column c of token block b is the 12 floats at xp + b * x_block_stride + c * x_col_stride
 * (lk_vg_pack_x's layout: 12 * cols and 12; any layout with a block's 12 tokens side by side works, all 12
 * readable even past n_tokens). Returns 0 (nothing reliable written) for another w_type, a misaligned
 * row_begin or no memory. */
int lk_vg_gemm_packed(int w_type, const void *packed, int64_t cols, const float *xp, int64_t x_block_stride,
                      int64_t x_col_stride, int64_t n_tokens, const float *bias, float *y, int64_t y_stride,
                      int64_t row_begin, int64_t row_end);

/* The unnormalized softmax down each of the n columns of x ([rows][stride], column j = x[i * stride + j] for
 * i < rows), scale > 0: x[i, j] = exp(scale·x[i, j] − max_i scale·x[i, j]) in place and inv_sums[j] = 1 / Σ_i
 * x[i, j] (attention scores laid out [keys][queries]; the probabilities are x[i, j] · inv_sums[j]). */
void lk_vg_exp_columns(float *x, int64_t rows, int64_t n, int64_t stride, float scale, float *inv_sums);

/* The same product on unpacked operands (packs them per call): W row r at w + r * w_row_bytes, X token t at
 * x + t * x_stride, rows [row_begin, row_end). Returns 0 if w_type is neither F32 nor F16 or memory runs
 * out (nothing written). */
int lk_vision_gemm(int w_type, const void *w, size_t w_row_bytes, int64_t cols, const float *x, int64_t x_stride,
                   int64_t n_tokens, float *y, int64_t y_stride, int64_t row_begin, int64_t row_end);

/* ---- The encoders' Q8_0 matrix product (vision_q8_gemm.c) ----
 * Y[t, r] = bias[r] + Σ_b (d_rb·dx_tb) · Σ_{c in block b} w[r, c]·x[t, c]: W's Q8_0 blocks (cols a multiple of
 * 32) repacked in panels of LK_VQ8_PANEL_ROWS rows, X quantized to Q8_0 blocks (ggml's quantize_row_q8_0), in
 * the layout of the selected kernel path (lk_vq8_layout); the float steps of the Q8_0 gemm behind lk_matmul on
 * that path (the same results, on x86-64 from LK_VQ8_MIN_TOKENS tokens, on the arm64 tables at every token
 * count). A packing is for the layout it was made with: the product declines another. */
enum {
    LK_VQ8_PANEL_ROWS = 16,
    LK_VQ8_MIN_TOKENS = 16, /* x86-64's lk_matmul takes the gemm of these float steps from this many tokens */
};

/* The operand layouts, one per kind of integer product */
enum {
    LK_VQ8_NONE = 0,     /* no packed product on this path (use lk_matmul) */
    LK_VQ8_S16_PAIRS = 1, /* x86-64 vpmaddwd: s16 pairs (the avx2 and avx512-novnni tables) */
    LK_VQ8_U8_QUADS = 2, /* vpdpbusd: weights + 128 as u8 quads, int8 activations (the avx512-vnni and avx-vnni tables) */
    LK_VQ8_S8_QUADS = 3, /* arm64 sdot: int8 quads (the dotprod and i8mm tables) */
};

/* The layout of the selected path (lk_get_isa()): one of the above. */
int lk_vq8_layout(void);

/* Bytes of the rows x cols Q8_0 matrix W packed in `layout` (64-byte aligned storage keeps its vector loads
 * aligned); 0 for LK_VQ8_NONE or a layout this architecture has not. */
size_t lk_vq8_packed_weight_bytes(int layout, int64_t rows, int64_t cols);

/* Packs panels [panel_begin, panel_end) of W (Q8_0 row r at w + r * w_row_bytes) in `layout`. Returns 0
 * (nothing written) if cols is not a multiple of 32 or the layout is not one of this architecture's. */
int lk_vq8_pack_weights(int layout, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *packed,
                        int64_t panel_begin, int64_t panel_end);

/* Bytes of n_tokens rows of X packed in `layout` (0 as lk_vq8_packed_weight_bytes). */
size_t lk_vq8_packed_x_bytes(int layout, int64_t n_tokens, int64_t cols);

/* Quantizes and packs tokens [token_begin, token_end) of X (token t at x + t * x_stride) in `layout` (nothing
 * for a layout this architecture has not). */
void lk_vq8_pack_x(int layout, const float *x, int64_t x_stride, int64_t cols, void *xp, int64_t token_begin,
                   int64_t token_end);

/* Y[t, r] (at y[t * y_stride + r]) for t < n_tokens, row_begin <= r < row_end (row_begin a multiple of 16), bias
 * optional, from operands packed in `layout`. Returns 0 (nothing written) when `layout` is not
 * lk_vq8_layout() (LK_VQ8_NONE included), for a misaligned row_begin or cols, or with no memory. */
int lk_vq8_gemm_packed(int layout, const void *packed, int64_t cols, const void *xp, int64_t n_tokens, const float *bias,
                       float *y, int64_t y_stride, int64_t row_begin, int64_t row_end);

/* ---- The CPU's float FMA peak (fma_peak.c), for the products' benchmarks ----
 * Runs independent FMA chains on the calling thread, as wide as the float products' vectors here (512 bits with
 * the AVX-512 kernels, 256 with AVX2, scalar otherwise), for at least `seconds`, and returns the flops done (an
 * FMA lane counts 2). Run it on each of a pool's threads at once and divide the sum by the wall time: the peak
 * those threads reach together. */
double lk_fma_peak_flops(double seconds);

#endif

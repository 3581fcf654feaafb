/* The products' entry points: the matmul driver (lk_matmul: few_tokens for 2..LK_FEW_MAX_TOKENS tokens, gemm
 * from its threshold, else matvec / dot2 / dot4 / dot over row tiles), lk_matmul_tensor (llama.cpp's per-tensor orders), lk_vec_dot,
 * lk_matvec_f16_ggml and lk_stream_sum, each through this thread's dispatch table. */
#include "lk_dispatch.h"

float lk_vec_dot(int type, int64_t n, const void *w, const void *x) {
    if (type < 0 || type >= LK_TYPE_COUNT) return 0.0f;
    const lk_dot_fn f = lk_kernels()->dot[type];
    return f ? f(n, w, x) : 0.0f;
}

/* Rows are processed in tiles of ROW_TILE so that the tile's weights stay in L1/L2 while every group of 4
 * tokens passes over them; dot4 unpacks each weight block once for 4 tokens. */
enum { ROW_TILE = 16 };

void lk_matmul(int type, const void *w, size_t w_row_bytes, int64_t cols, const void *x, size_t x_row_bytes,
               int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end) {
    if (type < 0 || type >= LK_TYPE_COUNT) return;
    const lk_kernel_table *k = lk_kernels();
    const lk_dot_fn dot = k->dot[type];
    const lk_dot4_fn dot4 = k->dot4[type];
    const lk_dot2_fn dot2 = k->dot2[type];
    if (!dot) return;
    const uint8_t *wb = w, *xb = x;
    if (n_tokens >= 2 && n_tokens <= LK_FEW_MAX_TOKENS && k->few_tokens[type] &&
        k->few_tokens[type](cols, w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end))
        return;
    const int gemm_min = k->gemm_min_tokens[type] ? k->gemm_min_tokens[type] : LK_GEMM_MIN_TOKENS;
    if (n_tokens >= gemm_min && k->gemm[type] &&
        k->gemm[type](cols, w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end))
        return;
    if (n_tokens == 1) {
        const lk_matvec_fn mv = k->matvec[type];
        if (mv && row_end > row_begin &&
            mv(cols, wb + (size_t)row_begin * w_row_bytes, w_row_bytes, xb, y + row_begin, row_end - row_begin))
            return;
        /* dot2 pairs row r with row r + half (not r + 1): two long sequential streams keep the hardware
         * prefetchers trained; adjacent-row pairs restart both streams every other row (much slower from DRAM) */
        const int64_t half = dot2 ? (row_end - row_begin) / 2 : 0;
        for (int64_t i = 0; i < half; i++) {
            const int64_t r = row_begin + i;
            float s[8];
            dot2(cols, wb + (size_t)r * w_row_bytes, (size_t)half * w_row_bytes, xb, 0, 1, s);
            y[r] = s[0];
            y[r + half] = s[4];
        }
        for (int64_t r = row_begin + 2 * half; r < row_end; r++) y[r] = dot(cols, wb + (size_t)r * w_row_bytes, xb);
        return;
    }
    for (int64_t r0 = row_begin; r0 < row_end; r0 += ROW_TILE) {
        const int64_t r1 = r0 + ROW_TILE < row_end ? r0 + ROW_TILE : row_end;
        int64_t t = 0;
        if (dot4) {
            for (; t + 4 <= n_tokens; t += 4) {
                const uint8_t *xt = xb + (size_t)t * x_row_bytes;
                const int64_t half = dot2 ? (r1 - r0) / 2 : 0; /* row r pairs with r + half, as above */
                for (int64_t j = 0; j < half; j++) {
                    const int64_t r = r0 + j;
                    float s[8];
                    dot2(cols, wb + (size_t)r * w_row_bytes, (size_t)half * w_row_bytes, xt, x_row_bytes, 4, s);
                    for (int i = 0; i < 4; i++) {
                        y[(t + i) * y_row_stride + r] = s[i];
                        y[(t + i) * y_row_stride + r + half] = s[4 + i];
                    }
                }
                for (int64_t r = r0 + 2 * half; r < r1; r++) {
                    float s[4];
                    dot4(cols, wb + (size_t)r * w_row_bytes, xt, x_row_bytes, s);
                    for (int i = 0; i < 4; i++) y[(t + i) * y_row_stride + r] = s[i];
                }
            }
        }
        for (; t < n_tokens; t++) {
            const uint8_t *xt = xb + (size_t)t * x_row_bytes;
            for (int64_t r = r0; r < r1; r++) y[t * y_row_stride + r] = dot(cols, wb + (size_t)r * w_row_bytes, xt);
        }
    }
}


int lk_rows8_preferred(int type) { return type >= 0 && type < LK_TYPE_COUNT && lk_kernels()->rows8[type] != NULL; }

/* A path without rows8 kernels (a thread that forces another path than the one the weights were packed
 * for) copies each row back out of the 8-row layout, on the stack, and multiplies it alone. */
enum { ROWS8_MAX_ROW_BYTES = LK_ROWS8_MAX_COLS / QK * sizeof(block_q8_0) };

static void matmul_rows8(int type, int layout, const void *w, size_t w_row_bytes, int64_t cols, const void *x,
                         size_t x_row_bytes, int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin,
                         int64_t row_end) {
    const lk_gemm_fn f = lk_kernels()->rows8[type];
    if (f && row_begin % 8 == 0 && row_end % 8 == 0 &&
        f(cols, w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end))
        return;
    if (w_row_bytes > ROWS8_MAX_ROW_BYTES) return; /* lk_rows8_pack packs no wider rows */
    _Alignas(64) uint8_t row[ROWS8_MAX_ROW_BYTES];
    for (int64_t r = row_begin; r < row_end; r++) {
        lk_rows8_row(type, w, w_row_bytes, cols, r, row);
        lk_matmul_tensor(type, layout & ~LK_ROWS8, row, w_row_bytes, cols, x, x_row_bytes, n_tokens, y + r, y_row_stride, 0, 1);
    }
}

void lk_matmul_tensor(int type, int layout, const void *w, size_t w_row_bytes, int64_t cols, const void *x,
                      size_t x_row_bytes, int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin,
                      int64_t row_end) {
    if (type < 0 || type >= LK_TYPE_COUNT) return;
    if (layout & LK_ROWS8) {
        matmul_rows8(type, layout, w, w_row_bytes, cols, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end);
        return;
    }
    const lk_kernel_table *k = lk_kernels();
    /* ggml repacks Q4_K (AVX2) when the row count is a multiple of 8 (ggml_repack_get_optimal_repack_type) */
    const lk_gemm_fn f = layout == LK_LLAMA_REPACKED && k->repack[type] ? k->repack[type]
                       : layout == LK_LLAMA_REPACKED_ID && k->repack_id[type] ? k->repack_id[type]
                       : k->any_tokens[type] ? k->any_tokens[type]
                       : n_tokens >= LK_TILED_MIN_TOKENS ? k->tiled[type] : NULL;
    if (f && f(cols, w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end)) return;
    lk_matmul(type, w, w_row_bytes, cols, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end);
}

void lk_matvec_f16_ggml(const uint16_t *w, size_t w_row_bytes, int64_t cols, int64_t n_padded, const float *x,
                        float *y, int64_t row_begin, int64_t row_end) {
    if (row_end <= row_begin) return;
    const lk_kernel_table *k = lk_kernels();
    if (k->matvec_f16_ggml && n_padded >= cols) {
        k->matvec_f16_ggml((const uint16_t *)((const uint8_t *)w + (size_t)row_begin * w_row_bytes), w_row_bytes,
                           cols, n_padded, x, y + row_begin, row_end - row_begin);
        return;
    }
    lk_matmul(LK_TYPE_F16, w, w_row_bytes, cols, x, 0, 1, y, 0, row_begin, row_end);
}

/* Rows per block of lk_matvec_f16_ggml_multi: as many as keep the block's bytes in use within this (L1) */
enum { F16_MULTI_BLOCK_BYTES = 16384 };

void lk_matvec_f16_ggml_multi(const uint16_t *w, size_t w_row_bytes, int64_t cols, int64_t n_padded, const float *x,
                              int64_t x_stride, int64_t nx, float *y, int64_t y_stride, int64_t row_begin, int64_t row_end) {
    if (row_end <= row_begin || nx <= 0) return;
    const size_t used = (size_t)cols * 2 < w_row_bytes ? (size_t)cols * 2 : w_row_bytes; /* bytes of a row read */
    int64_t block = (int64_t)(F16_MULTI_BLOCK_BYTES / (used ? used : 1));
    if (block < 1) block = 1;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += block) {
        const int64_t r1 = row_end - r0 < block ? row_end : r0 + block;
        for (int64_t i = 0; i < nx; i++)
            lk_matvec_f16_ggml(w, w_row_bytes, cols, n_padded, x + i * x_stride, y + i * y_stride, r0, r1);
    }
}

float lk_stream_sum(const float *x, int64_t n) { return lk_kernels()->stream_sum(x, n); }

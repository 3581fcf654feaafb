/* Element-wise kernels of the vision encoder: ggml's table GELU and the row softmax of attention scores. */
#include "leap_kernels.h"
#include "leap_vision_kernels.h"
#include <math.h>

void lk_gelu_f16_table_fill(float *table) {
    const float sqrt_2_over_pi = 0.79788456080286535587989211986876f, coef_a = 0.044715f;
    for (int h = 0; h < 65536; h++) {
        const float x = lk_f16_to_f32((uint16_t)h);
        /* 1 + a·x·x fused, as GCC compiles ggml_gelu_f32 */
        const float g = 0.5f * x * (1.0f + tanhf(sqrt_2_over_pi * x * fmaf(coef_a * x, x, 1.0f)));
        table[h] = lk_f16_to_f32(lk_f32_to_f16(g));
    }
}

void lk_gelu_f16_table(const float *table, const float *x, float *y, int64_t n) {
    enum { STEP = 256 };
    uint16_t h[STEP];
    for (int64_t i0 = 0; i0 < n; i0 += STEP) {
        const int64_t m = n - i0 < STEP ? n - i0 : STEP;
        lk_f32_to_f16_row(x + i0, h, m);
        for (int64_t i = 0; i < m; i++) {
            const float v = x[i0 + i];
            y[i0 + i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : table[h[i]];
        }
    }
}

void lk_softmax_rows_scaled(float *x, int64_t rows, int64_t n, int64_t stride, float scale) {
    enum { LANES = 16 };
    for (int64_t r = 0; r < rows; r++) {
        float *row = x + r * stride;
        float lane_max[LANES];
        for (int k = 0; k < LANES; k++) lane_max[k] = -INFINITY;
        int64_t i = 0;
        for (; i + LANES <= n; i += LANES)
            for (int k = 0; k < LANES; k++) {
                const float v = row[i + k] * scale;
                row[i + k] = v;
                lane_max[k] = v > lane_max[k] ? v : lane_max[k];
            }
        float max = -INFINITY;
        for (; i < n; i++) {
            row[i] *= scale;
            max = row[i] > max ? row[i] : max;
        }
        for (int k = 0; k < LANES; k++) max = lane_max[k] > max ? lane_max[k] : max;
        const double sum = lk_softmax_exp(row, row, n, max);
        const float inv = (float)(1.0 / sum);
        for (i = 0; i < n; i++) row[i] *= inv;
    }
}

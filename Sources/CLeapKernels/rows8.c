/* The 8-row weight layout (LK_ROWS8, leap_kernels.h): packing a Q4_0 matrix into it and reading one row
 * back out. Portable C, run once per matrix at load (and per row by embedding lookups and fallbacks). */
#include "lk_internal.h"
#include <string.h>

enum { GROUP_BLOCK_BYTES = 8 * sizeof(block_q4_0) }; /* 144: 8 scales (16 bytes) + 4 vectors of 32 */

int lk_rows8_pack(int type, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *dst) {
    if (type != LK_TYPE_Q4_0 || rows <= 0 || rows % 8 != 0 || cols <= 0 || cols > LK_ROWS8_MAX_COLS || cols % QK != 0) return 0;
    const int64_t nb = cols / QK;
    if (w_row_bytes != (size_t)nb * sizeof(block_q4_0)) return 0;
    for (int64_t g = 0; g < rows / 8; g++) {
        const uint8_t *src = (const uint8_t *)w + (size_t)(8 * g) * w_row_bytes; /* [8, nb] blocks */
        uint8_t *out = (uint8_t *)dst + (size_t)(8 * g) * w_row_bytes;          /* [nb, 144] */
        for (int64_t b = 0; b < nb; b++, out += GROUP_BLOCK_BYTES)
            for (int r = 0; r < 8; r++) {
                const uint8_t *blk = src + (size_t)r * w_row_bytes + (size_t)b * sizeof(block_q4_0);
                memcpy(out + 2 * r, blk, 2);
                for (int k = 0; k < 4; k++) memcpy(out + 16 + 32 * k + 4 * r, blk + 2 + 4 * k, 4);
            }
    }
    return 1;
}

void lk_rows8_row(int type, const void *w, size_t w_row_bytes, int64_t cols, int64_t r, void *dst) {
    if (type != LK_TYPE_Q4_0) return;
    const int64_t nb = cols / QK;
    const uint8_t *in = (const uint8_t *)w + (size_t)(r / 8 * 8) * w_row_bytes; /* the group's [nb, 144] */
    const int lane = (int)(r % 8);
    uint8_t *out = dst;
    for (int64_t b = 0; b < nb; b++, in += GROUP_BLOCK_BYTES, out += sizeof(block_q4_0)) {
        memcpy(out, in + 2 * lane, 2);
        for (int k = 0; k < 4; k++) memcpy(out + 2 + 4 * k, in + 16 + 32 * k + 4 * lane, 4);
    }
}

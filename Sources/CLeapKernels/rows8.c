/* The 8-row weight layout (LK_ROWS8, leap_kernels.h): packing a Q4_0 or Q8_0 matrix into it and reading
 * one row back out. Portable C, run once per matrix at load (and per row by embedding lookups and fallbacks).
 * A block is a 2-byte f16 scale then `qbytes` quant bytes (Q4_0 16, Q8_0 32). In a group of 8 rows, block b
 * is qbytes / 4 vectors of 32 bytes at lk_rows8_quants, vector k holding bytes 4k..4k+3 of each row's quants,
 * and the 8 scales at lk_rows8_scales (after all the group's vectors, so that vectors do not straddle cache
 * lines). */
#include "lk_internal.h"
#include <string.h>

/* Quant bytes of a block of `type` in the layout, 0 for a type it does not take. */
static size_t quant_bytes(int type) { return type == LK_TYPE_Q4_0 ? QK / 2 : type == LK_TYPE_Q8_0 ? QK : 0; }

int lk_rows8_pack(int type, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *dst) {
    const size_t qb = quant_bytes(type), bb = 2 + qb;
    if (!qb || rows <= 0 || rows % 8 != 0 || cols <= 0 || cols > LK_ROWS8_MAX_COLS || cols % QK != 0) return 0;
    const int64_t nb = cols / QK;
    if (w_row_bytes != (size_t)nb * bb) return 0;
    for (int64_t g = 0; g < rows / 8; g++) {
        const uint8_t *src = (const uint8_t *)w + (size_t)(8 * g) * w_row_bytes; /* [8, nb] blocks */
        uint8_t *out = (uint8_t *)dst + (size_t)(8 * g) * w_row_bytes;          /* [nb, 8·qb] then [nb, 8] scales */
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < 8; r++) {
                const uint8_t *blk = src + (size_t)r * w_row_bytes + (size_t)b * bb;
                memcpy(out + lk_rows8_scales(nb, b, qb) + 2 * r, blk, 2);
                for (size_t k = 0; k < qb / 4; k++) memcpy(out + lk_rows8_quants(b, qb) + 32 * k + 4 * r, blk + 2 + 4 * k, 4);
            }
    }
    return 1;
}

void lk_rows8_row(int type, const void *w, size_t w_row_bytes, int64_t cols, int64_t r, void *dst) {
    const size_t qb = quant_bytes(type), bb = 2 + qb;
    if (!qb) return;
    const int64_t nb = cols / QK;
    const uint8_t *in = (const uint8_t *)w + (size_t)(r / 8 * 8) * w_row_bytes; /* the group */
    const int lane = (int)(r % 8);
    uint8_t *out = dst;
    for (int64_t b = 0; b < nb; b++, out += bb) {
        memcpy(out, in + lk_rows8_scales(nb, b, qb) + 2 * lane, 2);
        for (size_t k = 0; k < qb / 4; k++) memcpy(out + 2 + 4 * k, in + lk_rows8_quants(b, qb) + 32 * k + 4 * lane, 4);
    }
}

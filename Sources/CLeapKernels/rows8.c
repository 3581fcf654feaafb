/* The 8-row weight layout (LK_ROWS8, leap_kernels.h): packing a Q4_0, Q8_0, Q4_K or Q5_K matrix into it and
 * reading one row back out. Portable C, run once per matrix at load (and per row by embedding lookups and
 * fallbacks). A block is `head` bytes (Q4_0 / Q8_0: the f16 scale; Q4_K / Q5_K: d, dmin and the 12 bytes of
 * packed scales and mins) then `quants` bytes (Q4_0 16, Q8_0 32, Q4_K the 128 nibble bytes, Q5_K the 32 fifth-bit
 * bytes then the 128 nibble bytes). In a group of 8 rows, block b is quants / 4 vectors of 32 bytes, vector k
 * holding bytes 4k..4k+3 of each row's quants, and the 8 rows' heads: Q4_0 / Q8_0 the vectors at
 * lk_rows8_quants and, after all the group's vectors (so that vectors do not straddle cache lines), the 8 f16
 * scales side by side at lk_rows8_scales; Q4_K / Q5_K the vectors then 4 vectors of 32 bytes, vector k
 * holding bytes 4k..4k+3 of each row's head, at lk_rows8_kblock (lk_internal.h). */
#include "lk_internal.h"
#include <string.h>

/* Where block b's vectors and heads of a group start */
static size_t quants_at(size_t hb, size_t qb, int64_t b) { return hb == 2 ? lk_rows8_quants(b, qb) : lk_rows8_kblock(b, qb); }
static size_t heads_at(size_t hb, size_t qb, int64_t nb, int64_t b) {
    return hb == 2 ? lk_rows8_scales(nb, b, qb) : lk_rows8_kblock(b, qb) + 8 * qb;
}

int lk_rows8_pack(int type, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *dst) {
    const size_t qb = lk_rows8_quant_bytes(type), hb = lk_rows8_head_bytes(type), bb = hb + qb;
    const int64_t qk = lk_block_size(type);
    if (!qb || rows <= 0 || rows % 8 != 0 || cols <= 0 || cols > LK_ROWS8_MAX_COLS || cols % qk != 0) return 0;
    const int64_t nb = cols / qk;
    if (w_row_bytes != (size_t)nb * bb) return 0;
    for (int64_t g = 0; g < rows / 8; g++) {
        const uint8_t *src = (const uint8_t *)w + (size_t)(8 * g) * w_row_bytes; /* [8, nb] blocks */
        uint8_t *out = (uint8_t *)dst + (size_t)(8 * g) * w_row_bytes;          /* the group's blocks */
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < 8; r++) {
                const uint8_t *blk = src + (size_t)r * w_row_bytes + (size_t)b * bb;
                uint8_t *head = out + heads_at(hb, qb, nb, b);
                if (hb == 2) memcpy(head + 2 * r, blk, 2);
                else for (size_t k = 0; k < hb / 4; k++) memcpy(head + 32 * k + 4 * r, blk + 4 * k, 4);
                for (size_t k = 0; k < qb / 4; k++) memcpy(out + quants_at(hb, qb, b) + 32 * k + 4 * r, blk + hb + 4 * k, 4);
            }
    }
    return 1;
}

void lk_rows8_row(int type, const void *w, size_t w_row_bytes, int64_t cols, int64_t r, void *dst) {
    const size_t qb = lk_rows8_quant_bytes(type), hb = lk_rows8_head_bytes(type), bb = hb + qb;
    if (!qb) return;
    const int64_t nb = cols / lk_block_size(type);
    const uint8_t *in = (const uint8_t *)w + (size_t)(r / 8 * 8) * w_row_bytes; /* the group */
    const int lane = (int)(r % 8);
    uint8_t *out = dst;
    for (int64_t b = 0; b < nb; b++, out += bb) {
        const uint8_t *head = in + heads_at(hb, qb, nb, b);
        if (hb == 2) memcpy(out, head + 2 * lane, 2);
        else for (size_t k = 0; k < hb / 4; k++) memcpy(out + 4 * k, head + 32 * k + 4 * lane, 4);
        for (size_t k = 0; k < qb / 4; k++) memcpy(out + hb + 4 * k, in + quants_at(hb, qb, b) + 32 * k + 4 * lane, 4);
    }
}

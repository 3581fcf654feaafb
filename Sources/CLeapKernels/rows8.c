/* The 8-row weight layout (LK_ROWS8, leap_kernels.h): packing a Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K or
 * Q6_K matrix into it and reading one row back out. Portable C, run once per matrix at load (and per row by
 * embedding lookups and fallbacks). A block is its quant bytes (Q4_0 / Q4_1 16; Q5_0 / Q5_1 20: the 4
 * fifth-bit bytes then the 16 nibble bytes; Q8_0 32; Q4_K the 128 nibble bytes, Q5_K the 32 fifth-bit bytes
 * then the 128 nibble bytes, Q6_K the 128 low-nibble bytes then the 64 high-bit bytes) and its head: words
 * (Q4_K / Q5_K: d | dmin, then the 12 bytes of packed scales and mins; Q6_K: the 16 scales) and f16s (Q4_0 /
 * Q5_0 / Q8_0 / Q6_K: the scale d; Q4_1 / Q5_1: d and the min m). In a group of 8 rows, block b is quants / 4
 * vectors of 32 bytes, vector k holding bytes 4k..4k+3 of each row's quants, and the 8 rows' heads, each word
 * k as a vector in the same way and the 8 f16 side by side (16 bytes): the 32-element blocks the vectors at
 * lk_rows8_quants and, after all the group's vectors (so that vectors do not straddle cache lines), the
 * scales at lk_rows8_scales (Q4_1 / Q5_1: the scales, then the 8 mins, at lk_rows8_scales_mins); the
 * K-quants the vectors, the word vectors and the f16 of each block one after another at lk_rows8_kblock
 * (lk_internal.h). */
#include "lk_internal.h"
#include <stddef.h>
#include <string.h>

/* Where a block's parts lie in the row layout's block and in a group of the 8-row layout */
typedef struct {
    size_t quants, quants_at; /* quant bytes and their offset in the block */
    size_t words, words_at;   /* head words (bytes, a multiple of 4) and their offset */
    size_t half_at;           /* offset of the f16 scale, or (size_t)-1 */
    size_t min_at;            /* offset of the f16 min (Q4_1), or (size_t)-1 */
} block_parts;

static int parts_of(int type, block_parts *p) {
    const size_t none = (size_t)-1;
    switch (type) {
    case LK_TYPE_Q4_0: *p = (block_parts){16, 2, 0, 0, 0, none}; return 1;
    case LK_TYPE_Q4_1: *p = (block_parts){16, 4, 0, 0, 0, 2}; return 1;
    case LK_TYPE_Q5_0: *p = (block_parts){20, 2, 0, 0, 0, none}; return 1; /* qh then the nibbles */
    case LK_TYPE_Q5_1: *p = (block_parts){20, 4, 0, 0, 0, 2}; return 1;
    case LK_TYPE_Q8_0: *p = (block_parts){32, 2, 0, 0, 0, none}; return 1;
    case LK_TYPE_Q4_K: *p = (block_parts){128, 16, 16, 0, none, none}; return 1;
    case LK_TYPE_Q5_K: *p = (block_parts){160, 16, 16, 0, none, none}; return 1;
    case LK_TYPE_Q6_K: *p = (block_parts){192, 0, 16, offsetof(block_q6_K, scales), offsetof(block_q6_K, d), none}; return 1;
    default: return 0;
    }
}

/* Offsets within a group of block b's vectors, word vectors and f16s */
static size_t quants_in_group(int type, const block_parts *p, int64_t b) {
    return lk_rows8_kquant(type) ? lk_rows8_kblock(type, b) : lk_rows8_quants(b, p->quants);
}
static size_t words_in_group(int type, const block_parts *p, int64_t b) { return lk_rows8_kblock(type, b) + 8 * p->quants; }
static size_t halfs_in_group(int type, const block_parts *p, int64_t nb, int64_t b) {
    if (lk_rows8_kquant(type)) return lk_rows8_kblock(type, b) + 8 * (p->quants + p->words);
    return p->min_at != (size_t)-1 ? lk_rows8_scales_mins(nb, b, p->quants) : lk_rows8_scales(nb, b, p->quants);
}

/* One row's block `blk` in or out of lane `lane` of group `g` (to_group: row → group) */
static void move_block(int type, const block_parts *p, int64_t nb, int64_t b, uint8_t *g, uint8_t *blk, int lane, int to_group) {
#define MOVE(G, B, N) (to_group ? memcpy((G), (B), (N)) : memcpy((B), (G), (N)))
    for (size_t k = 0; k < p->quants / 4; k++) MOVE(g + quants_in_group(type, p, b) + 32 * k + 4 * lane, blk + p->quants_at + 4 * k, 4);
    for (size_t k = 0; k < p->words / 4; k++) MOVE(g + words_in_group(type, p, b) + 32 * k + 4 * lane, blk + p->words_at + 4 * k, 4);
    if (p->half_at != (size_t)-1) MOVE(g + halfs_in_group(type, p, nb, b) + 2 * lane, blk + p->half_at, 2);
    if (p->min_at != (size_t)-1) MOVE(g + halfs_in_group(type, p, nb, b) + 16 + 2 * lane, blk + p->min_at, 2); /* the mins after the scales */
#undef MOVE
}

int lk_rows8_pack(int type, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *dst) {
    block_parts p;
    if (!parts_of(type, &p)) return 0;
    const int64_t qk = lk_block_size(type);
    const size_t bb = lk_block_bytes(type);
    if (rows <= 0 || rows % 8 != 0 || cols <= 0 || cols > LK_ROWS8_MAX_COLS || cols % qk != 0) return 0;
    const int64_t nb = cols / qk;
    if (w_row_bytes != (size_t)nb * bb) return 0;
    for (int64_t g = 0; g < rows / 8; g++) {
        const uint8_t *src = (const uint8_t *)w + (size_t)(8 * g) * w_row_bytes; /* [8, nb] blocks */
        uint8_t *out = (uint8_t *)dst + (size_t)(8 * g) * w_row_bytes;          /* the group's blocks */
        for (int64_t b = 0; b < nb; b++)
            for (int r = 0; r < 8; r++) move_block(type, &p, nb, b, out, (uint8_t *)(src + (size_t)r * w_row_bytes + (size_t)b * bb), r, 1);
    }
    return 1;
}

void lk_rows8_row(int type, const void *w, size_t w_row_bytes, int64_t cols, int64_t r, void *dst) {
    block_parts p;
    if (!parts_of(type, &p)) return;
    const int64_t nb = cols / lk_block_size(type);
    uint8_t *in = (uint8_t *)w + (size_t)(r / 8 * 8) * w_row_bytes; /* the group (read only) */
    uint8_t *out = dst;
    for (int64_t b = 0; b < nb; b++) move_block(type, &p, nb, b, in, out + (size_t)b * lk_block_bytes(type), (int)(r % 8), 0);
}

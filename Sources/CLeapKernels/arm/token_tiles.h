/* The entries of an arm64 kernel file whose type T has a tile kernel over a few rows and tokens:
 *   T_tile(nb, wr, NR, x, xs, NT, PF, s): s[r·4 + t] = row wr[r] · token t (at x + t·xs bytes), r < NR (1, 2),
 *   t < NT (1..4), nb blocks of BS elements; PF: prefetch each row ahead (the one-token streams).
 * Entries (static, named T's):
 *   dot_T, dot4_T:  one row, 1 or 4 tokens
 *   matvec_T:       one token, rows r and r + half as two sequential streams
 *   tokens_T:       2 tokens and more (the few-token entry and the gemm): tiles of LK_ARM_ROW_TILE rows (kept
 *                   in cache while the tokens pass, as lk_matmul's), in each adjacent row pairs × groups of 4
 *                   tokens, each weight vector unpacked once for the 8 products of its pair and group
 * Every entry takes each (row, token) through the same tile arithmetic, so a token gets the same bits in all
 * of them. Macros only: the entries are aarch64 code, LK_ARM_TOKEN_KERNELS names them on any host. */
#ifndef LK_ARM_TOKEN_TILES_H
#define LK_ARM_TOKEN_TILES_H

enum { LK_ARM_ROW_TILE = 16 };

/* T_tile over NR rows with NT (1..4, a run-time value) tokens, into o */
#define LK_ARM_TILE_NT(T, NT, ...)                                                                           \
    switch (NT) {                                                                                            \
    case 1: T##_tile(__VA_ARGS__, 1, 0, o); break;                                                           \
    case 2: T##_tile(__VA_ARGS__, 2, 0, o); break;                                                           \
    case 3: T##_tile(__VA_ARGS__, 3, 0, o); break;                                                           \
    default: T##_tile(__VA_ARGS__, 4, 0, o); break;                                                          \
    }

#define LK_ARM_TOKEN_ENTRIES(T, W, BS)                                                                       \
    static float dot_##T(int64_t n, const void *w, const void *x) {                                          \
        const W *wr[1] = {w};                                                                                \
        float s[4];                                                                                          \
        T##_tile(n / (BS), wr, 1, x, 0, 1, 0, s);                                                            \
        return s[0];                                                                                         \
    }                                                                                                        \
    static void dot4_##T(int64_t n, const void *w, const void *x, size_t xs, float *s) {                     \
        const W *wr[1] = {w};                                                                                \
        T##_tile(n / (BS), wr, 1, x, xs, 4, 0, s);                                                           \
    }                                                                                                        \
    static int matvec_##T(int64_t n, const void *w, size_t ws, const void *x, float *y, int64_t nrows) {     \
        const int64_t half = nrows / 2;                                                                      \
        for (int64_t r = 0; r < half; r++) {                                                                 \
            const W *wr[2] = {(const W *)((const uint8_t *)w + r * ws), (const W *)((const uint8_t *)w + (r + half) * ws)}; \
            float o[8];                                                                                      \
            T##_tile(n / (BS), wr, 2, x, 0, 1, 1, o);                                                        \
            y[r] = o[0], y[r + half] = o[4];                                                                 \
        }                                                                                                    \
        if (nrows % 2) {                                                                                     \
            const W *wr[1] = {(const W *)((const uint8_t *)w + (nrows - 1) * ws)};                           \
            float o[4];                                                                                      \
            T##_tile(n / (BS), wr, 1, x, 0, 1, 1, o);                                                        \
            y[nrows - 1] = o[0];                                                                             \
        }                                                                                                    \
        return 1;                                                                                            \
    }                                                                                                        \
    static int tokens_##T(int64_t n, const void *w, size_t wrb, const void *x, size_t xrb, int64_t nt,       \
                          float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                        \
        for (int64_t r0 = row_begin; r0 < row_end; r0 += LK_ARM_ROW_TILE) {                                  \
            const int64_t r1 = row_end - r0 < LK_ARM_ROW_TILE ? row_end : r0 + LK_ARM_ROW_TILE;              \
            for (int64_t t0 = 0; t0 < nt; t0 += 4) {                                                         \
                const void *xt = (const uint8_t *)x + (size_t)t0 * xrb;                                      \
                const int ntg = nt - t0 < 4 ? (int)(nt - t0) : 4;                                            \
                for (int64_t r = r0; r < r1; r += 2) {                                                       \
                    const int nr = r1 - r >= 2 ? 2 : 1;                                                      \
                    const W *wr[2] = {(const W *)((const uint8_t *)w + r * wrb), (const W *)((const uint8_t *)w + (r + nr - 1) * wrb)}; \
                    float o[8];                                                                              \
                    if (nr == 2) {                                                                           \
                        LK_ARM_TILE_NT(T, ntg, n / (BS), wr, 2, xt, xrb)                                     \
                    } else {                                                                                 \
                        LK_ARM_TILE_NT(T, ntg, n / (BS), wr, 1, xt, xrb)                                     \
                    }                                                                                        \
                    for (int k = 0; k < nr; k++)                                                             \
                        for (int t = 0; t < ntg; t++) y[(t0 + t) * ys + r + k] = o[k * 4 + t];               \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        return 1;                                                                                            \
    }

/* The list rows of those entries */
#define LK_ARM_TOKEN_KERNELS(ID, T)                                                                          \
    LK_ARM_KERNEL(LK_E_DOT, ID, dot_##T), LK_ARM_KERNEL(LK_E_DOT4, ID, dot4_##T),                            \
    LK_ARM_KERNEL(LK_E_MATVEC, ID, matvec_##T), LK_ARM_KERNEL(LK_E_FEW_TOKENS, ID, tokens_##T),              \
    LK_ARM_KERNEL(LK_E_GEMM, ID, tokens_##T)

#endif

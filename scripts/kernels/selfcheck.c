/* Stand-alone check of the C kernels: every available SIMD path against the scalar path (dot products,
 * 4-token matmul, activation quantizers, f16 conversion) on random data, and on the arm64 paths the batch
 * invariance of every product (each token of a call of 1..20 tokens, through the one-token, few-token and gemm
 * kernels, has the bits of that token alone). Built and run by check-isa.sh — natively, or cross-compiled for
 * aarch64 and run under qemu as CPU models of each arm64 level. Prints the table the CPU gets; with an
 * argument, fails unless that is the table's name (check-isa.sh checks that detection picks each level).
 * Exit status 0 = all paths agree. */
#include "leap_kernels.h"
#include "leap_vision_kernels.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 88172645463325252ull;
static uint32_t next_u32(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)rng; }
static float uniform(void) { return (float)(next_u32() >> 8) / 16777216.0f; }
static float normalish(void) { return (uniform() + uniform() + uniform() - 1.5f) * 2.0f; }

static const int types[] = {LK_TYPE_F32, LK_TYPE_F16, LK_TYPE_BF16, LK_TYPE_Q4_0, LK_TYPE_Q4_1, LK_TYPE_Q5_0,
                            LK_TYPE_Q5_1, LK_TYPE_Q8_0, LK_TYPE_Q2_K, LK_TYPE_Q3_K, LK_TYPE_Q4_K, LK_TYPE_Q5_K, LK_TYPE_Q6_K};

/* byte offsets of the f16 scale fields of a block */
static void scale_fields(int type, int *off, int *count) {
    *count = 0;
    switch (type) {
    case LK_TYPE_Q4_0: case LK_TYPE_Q5_0: case LK_TYPE_Q8_0: off[(*count)++] = 0; break;
    case LK_TYPE_Q4_1: case LK_TYPE_Q5_1: case LK_TYPE_Q4_K: case LK_TYPE_Q5_K: off[(*count)++] = 0; off[(*count)++] = 2; break;
    case LK_TYPE_Q2_K: off[(*count)++] = 80; off[(*count)++] = 82; break;
    case LK_TYPE_Q3_K: off[(*count)++] = 108; break;
    case LK_TYPE_Q6_K: off[(*count)++] = 208; break;
    default: break;
    }
}

static void random_weights(int type, uint8_t *w, int64_t n_elems) {
    if (type == LK_TYPE_F32) { for (int64_t i = 0; i < n_elems; i++) ((float *)w)[i] = normalish() * 0.1f; return; }
    if (type == LK_TYPE_F16) { for (int64_t i = 0; i < n_elems; i++) ((uint16_t *)w)[i] = lk_f32_to_f16(normalish() * 0.1f); return; }
    if (type == LK_TYPE_BF16) {
        for (int64_t i = 0; i < n_elems; i++) { float f = normalish() * 0.1f; uint32_t u; memcpy(&u, &f, 4); ((uint16_t *)w)[i] = (uint16_t)(u >> 16); }
        return;
    }
    const size_t bytes = lk_row_bytes(type, n_elems), bb = lk_block_bytes(type);
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)next_u32();
    int off[2], count;
    scale_fields(type, off, &count);
    for (size_t b = 0; b < bytes / bb; b++)
        for (int k = 0; k < count; k++) {
            const uint16_t h = lk_f32_to_f16((uniform() < 0.5f ? -1.0f : 1.0f) * (0.0001f + 0.01f * uniform()));
            memcpy(w + b * bb + off[k], &h, 2);
        }
}

static int failures = 0;

static void check(int ok, const char *what, const char *isa, int type, long n, double got, double want) {
    if (!ok && failures++ < 20) printf("FAIL %s [%s] type %d n=%ld: %.9g vs scalar %.9g\n", what, isa, type, n, got, want);
}

/* The arm64 tables sum every product in one order whatever the token count (arm/quant_rows.c): for tokens
 * 1..20 (one-token matvec, few-token tiles, gemm) each token's row results equal those of the token alone and
 * of lk_vec_dot, bit for bit, and the 20-token call agrees with the scalar path. */
static void check_batch_invariance(int isa, const char *name, uint8_t *w, float *x, uint8_t *xq) {
    enum { ROWS = 7, MAXTOK = 20, N = 512 };
    static float y1[MAXTOK * ROWS], yb[MAXTOK * ROWS], ys[MAXTOK * ROWS];
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        const int type = types[ti], act = lk_activation_type(type);
        const size_t rb = lk_row_bytes(type, N), xr = act == LK_TYPE_F32 ? (size_t)N * 4 : lk_row_bytes(act, N);
        random_weights(type, w, (int64_t)N * ROWS);
        for (int64_t i = 0; i < (int64_t)N * MAXTOK; i++) x[i] = normalish();
        lk_set_isa(isa);
        for (int t = 0; t < MAXTOK; t++) lk_quantize_row(act, x + t * N, xq + t * xr, N);
        for (int t = 0; t < MAXTOK; t++) lk_matmul(type, w, rb, N, xq + t * xr, xr, 1, y1 + t * ROWS, ROWS, 0, ROWS);
        for (int r = 0; r < ROWS; r++) {
            const float d = lk_vec_dot(type, N, w + r * rb, xq);
            check(memcmp(&d, &y1[r], 4) == 0, "vec_dot = matvec", name, type, N, d, y1[r]);
        }
        for (int nt = 2; nt <= MAXTOK; nt++) {
            lk_matmul(type, w, rb, N, xq, xr, nt, yb, ROWS, 0, ROWS);
            for (int i = 0; i < nt * ROWS; i++)
                check(memcmp(&yb[i], &y1[i], 4) == 0, "batch invariance", name, type, nt, yb[i], y1[i]);
        }
        lk_set_isa(LK_ISA_SCALAR);
        lk_matmul(type, w, rb, N, xq, xr, MAXTOK, ys, ROWS, 0, ROWS);
        for (int i = 0; i < MAXTOK * ROWS; i++)
            check(fabsf(yb[i] - ys[i]) <= 1e-4f * (1.0f + fabsf(ys[i])), "gemm vs scalar", name, type, MAXTOK, yb[i], ys[i]);
    }
}

/* The x86 paths keep each token's one-token order up to LK_FEW_MAX_TOKENS tokens for the 32-block types (the
 * gemm from 16 tokens sums in an order of its own): each token of a call of 2..15 tokens, over the whole matrix
 * and over a row range starting off a tile, has the bits of that token alone; row counts that leave a tail of
 * 1-3 rows after the matvecs' quarters, widths of an odd block count, the AVX-512 matvec's widest (512 blocks)
 * and one block wider (where it and the few-token kernels decline: the AVX2 row kernels for every count). */
static void check_few_invariance(int isa, const char *name) {
    enum { ROWS = 11, TOK = 15, MAXN = 16416 };
    static const int few_types[] = {LK_TYPE_Q4_0, LK_TYPE_Q4_1, LK_TYPE_Q5_0, LK_TYPE_Q5_1, LK_TYPE_Q8_0};
    static uint8_t w[ROWS * (MAXN / 32) * 36], xq[TOK * (MAXN / 32) * 36];
    static float x[MAXN], y1[TOK * ROWS], yb[TOK * ROWS];
    static const int64_t widths[] = {7 * 32, 512 * 32, 513 * 32};
    for (size_t ti = 0; ti < sizeof(few_types) / sizeof(few_types[0]); ti++)
        for (int wi = 0; wi < 3; wi++) {
            const int type = few_types[ti], act = lk_activation_type(type);
            const int64_t n = widths[wi];
            const size_t rb = lk_row_bytes(type, n), xr = lk_row_bytes(act, n);
            random_weights(type, w, n * ROWS);
            lk_set_isa(isa);
            for (int t = 0; t < TOK; t++) {
                for (int64_t i = 0; i < n; i++) x[i] = normalish();
                lk_quantize_row(act, x, xq + t * xr, n);
            }
            for (int rows = ROWS - 3; rows <= ROWS; rows++) {
                for (int t = 0; t < TOK; t++) lk_matmul(type, w, rb, n, xq + t * xr, xr, 1, y1 + t * rows, rows, 0, rows);
                for (int nt = 2; nt <= TOK; nt++)
                    for (int begin = 0; begin <= 3; begin += 3) {
                        for (int i = 0; i < nt * rows; i++) yb[i] = NAN;
                        lk_matmul(type, w, rb, n, xq, xr, nt, yb, rows, begin, rows);
                        for (int t = 0; t < nt; t++)
                            for (int r = begin; r < rows; r++)
                                check(memcmp(&yb[t * rows + r], &y1[t * rows + r], 4) == 0, "few-token invariance", name, type,
                                      (long)(n * 100 + nt), yb[t * rows + r], y1[t * rows + r]);
                    }
            }
        }
}

/* The 8-row layout (LK_ROWS8) of each type the path packs (lk_rows8_preferred): lk_rows8_row gives every row
 * back (round trip of lk_rows8_pack), and lk_matmul_tensor on the packed weights gives each token of a call
 * of 1..40 tokens (past the kernels' passes of 30-odd tokens) the bits of the row layout's kernels for that token alone, for the whole matrix and for a
 * group-aligned row range; widths of an odd block count and a wider one. (The AVX-512 K-quant kernels of
 * the layout sum in their gemm's order: within a tolerance of the row layout there. The AVX2 Q4_1, Q5_0 and
 * Q5_1 kernels of the layout sum in an order of their own: each token gets the bits of that token alone in the layout, whole
 * matrix or row range, within a tolerance of the row layout.) */
static void check_rows8(int isa, const char *name) {
    enum { ROWS = 24, MAXTOK = 40, MAXN = 1024 };
    static uint8_t w[ROWS * MAXN * 2], packed[ROWS * MAXN * 2], row[MAXN * 2], xq[MAXTOK * MAXN * 2];
    static float x[MAXTOK * MAXN], y1[MAXTOK * ROWS], y8[MAXTOK * ROWS], yb[MAXTOK * ROWS];
    /* the arm64 tables' layout choice, so that the K-quants' rows8 kernels below are checked: the dotprod
     * table packs Q4_K, Q5_K, Q6_K; the i8mm table Q4_K, Q6_K (Q5_K stays on its smmla tiles of the row layout) */
    if (!strcmp(name, "neon-dotprod") || !strcmp(name, "neon-i8mm")) {
        lk_set_isa(isa);
        const int dotprod = !strcmp(name, "neon-dotprod");
        check(lk_rows8_preferred(LK_TYPE_Q4_K) && lk_rows8_preferred(LK_TYPE_Q6_K), "rows8 layout chosen", name, LK_TYPE_Q4_K, 0, 0, 1);
        check(lk_rows8_preferred(LK_TYPE_Q5_K) == dotprod, "rows8 layout chosen", name, LK_TYPE_Q5_K, 0, lk_rows8_preferred(LK_TYPE_Q5_K), dotprod);
    }
    for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
        const int type = types[ti], act = lk_activation_type(type);
        lk_set_isa(isa);
        if (!lk_rows8_preferred(type)) continue;
        const int exact = type == LK_TYPE_Q4_0 || type == LK_TYPE_Q8_0 || !strncmp(name, "neon", 4);
        /* the bits of each token alone in the layout (exact: those of the row layout) */
        const int own_order = !exact && (type == LK_TYPE_Q4_1 || type == LK_TYPE_Q5_0 || type == LK_TYPE_Q5_1);
        const int64_t widths[] = {lk_block_size(type) == 32 ? 17 * 32 : 3 * 256, MAXN};
        for (int wi = 0; wi < 2; wi++) {
            const int64_t n = widths[wi];
            const size_t rb = lk_row_bytes(type, n), xr = lk_row_bytes(act, n);
            random_weights(type, w, n * ROWS);
            check(lk_rows8_pack(type, w, rb, ROWS, n, packed) == 1, "rows8 pack", name, type, (long)n, 0, 1);
            for (int r = 0; r < ROWS; r++) {
                lk_rows8_row(type, packed, rb, n, r, row);
                check(memcmp(row, w + r * rb, rb) == 0, "rows8 round trip", name, type, (long)n, r, r);
            }
            for (int64_t i = 0; i < n * MAXTOK; i++) x[i] = normalish();
            for (int t = 0; t < MAXTOK; t++) lk_quantize_row(act, x + t * n, xq + t * xr, n);
            for (int t = 0; t < MAXTOK; t++) lk_matmul(type, w, rb, n, xq + t * xr, xr, 1, y1 + t * ROWS, ROWS, 0, ROWS);
            for (int t = 0; t < MAXTOK; t++) lk_matmul_tensor(type, LK_ROWS8, packed, rb, n, xq + t * xr, xr, 1, y8 + t * ROWS, ROWS, 0, ROWS);
            for (int i = 0; i < MAXTOK * ROWS; i++)
                check(fabsf(y8[i] - y1[i]) <= 1e-4f * (1.0f + fabsf(y1[i])), "rows8 ~ row layout, one token", name, type, 1, y8[i], y1[i]);
            const float *bits = exact ? y1 : y8; /* what every call must give bit for bit (own_order, exact) */
            for (int nt = 1; nt <= MAXTOK; nt++) {
                memset(yb, 0, sizeof yb);
                lk_matmul_tensor(type, LK_ROWS8, packed, rb, n, xq, xr, nt, yb, ROWS, 0, ROWS);
                for (int i = 0; i < nt * ROWS; i++)
                    check(exact || own_order ? memcmp(&yb[i], &bits[i], 4) == 0 : fabsf(yb[i] - y1[i]) <= 1e-4f * (1.0f + fabsf(y1[i])),
                          "rows8 = row layout / token alone", name, type, nt, yb[i], bits[i]);
                memset(yb, 0, sizeof yb);
                lk_matmul_tensor(type, LK_ROWS8, packed, rb, n, xq, xr, nt, yb, ROWS, 8, 16);
                for (int t = 0; t < nt; t++)
                    for (int r = 0; r < ROWS; r++) {
                        const float want = r >= 8 && r < 16 ? bits[t * ROWS + r] : 0.0f;
                        check(exact || own_order ? memcmp(&yb[t * ROWS + r], &want, 4) == 0 : (r >= 8 && r < 16) || yb[t * ROWS + r] == 0.0f, "rows8 row range", name, type, nt, yb[t * ROWS + r], want);
                    }
            }
        }
    }
}

/* softmax's exponentials and SiLU: the scalar reference's bits (and its sum), over inputs from far below to
 * above the float range of exp and lengths with a tail */
static void check_activations(int isa, const char *name) {
    enum { N = 1000 };
    static float x[N], y0[N], y1[N];
    for (int i = 0; i < N; i++) x[i] = normalish() * ldexpf(1.0f, (int)(next_u32() % 9)) * 10.0f;
    for (int n = 997; n <= N; n += 3) {
        lk_set_isa(LK_ISA_SCALAR);
        const double s0 = lk_softmax_exp(x, y0, n, 3.0f);
        lk_set_isa(isa);
        const double s1 = lk_softmax_exp(x, y1, n, 3.0f);
        check(s0 == s1 && memcmp(y0, y1, sizeof(float) * n) == 0, "softmax_exp", name, 0, n, s1, s0);
        lk_set_isa(LK_ISA_SCALAR);
        lk_silu(x, y0, n);
        lk_set_isa(isa);
        lk_silu(x, y1, n);
        check(memcmp(y0, y1, sizeof(float) * n) == 0, "silu", name, 0, n, y1[0], y0[0]);
    }
}

/* The vision encoders' float product (lk_vg_gemm_packed, F32 and F16 panels, with a bias) on the path against
 * the scalar path's tile: each output sums the same column products in the same order, so within a few
 * float roundings of Σ|w·x| (1e-6 relative) whatever the FMA contraction of the portable loop. Shapes leave
 * partial panels (32 rows) and token blocks (12), and cover more columns than one chunk (256: the
 * accumulating passes); the row stride's padding must stay untouched. */
static void check_vision_gemm(int isa, const char *name) {
    static const int shapes[][3] = {{45, 300, 13}, {64, 96, 24}, {7, 40, 5}}; /* rows, cols, tokens */
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        const int rows = shapes[si][0], cols = shapes[si][1], tokens = shapes[si][2], ys = rows + 3;
        float *w = malloc(sizeof(float) * rows * cols), *x = malloc(sizeof(float) * tokens * cols), bias[64];
        uint16_t *wh = malloc(2 * (size_t)rows * cols);
        for (int i = 0; i < rows * cols; i++) w[i] = normalish(), wh[i] = lk_f32_to_f16(w[i]);
        for (int i = 0; i < tokens * cols; i++) x[i] = normalish();
        for (int r = 0; r < rows; r++) bias[r] = normalish();
        const int64_t panels = (rows + LK_VG_PANEL_ROWS - 1) / LK_VG_PANEL_ROWS, blocks = (tokens + LK_VG_BLOCK_TOKENS - 1) / LK_VG_BLOCK_TOKENS;
        void *packed = malloc(lk_vg_packed_weight_bytes(LK_TYPE_F32, rows, cols));
        float *xp = malloc(lk_vg_packed_x_floats(tokens, cols) * sizeof(float));
        float *y0 = malloc(sizeof(float) * tokens * ys), *y1 = malloc(sizeof(float) * tokens * ys);
        for (int wt = 0; wt < 2; wt++) {
            const int type = wt ? LK_TYPE_F16 : LK_TYPE_F32;
            lk_vg_pack_weights(type, wt ? (const void *)wh : (const void *)w, wt ? 2 * (size_t)cols : 4 * (size_t)cols, rows, cols, packed, 0, panels);
            lk_vg_pack_x(x, cols, tokens, cols, 0, xp, 0, blocks);
            for (int i = 0; i < tokens * ys; i++) y0[i] = y1[i] = NAN;
            lk_set_isa(LK_ISA_SCALAR);
            lk_vg_gemm_packed(type, packed, cols, xp, (int64_t)LK_VG_BLOCK_TOKENS * cols, LK_VG_BLOCK_TOKENS, tokens, bias, y0, ys, 0, rows);
            lk_set_isa(isa);
            const int ok = lk_vg_gemm_packed(type, packed, cols, xp, (int64_t)LK_VG_BLOCK_TOKENS * cols, LK_VG_BLOCK_TOKENS, tokens, bias, y1, ys, 0, rows);
            check(ok == 1, "vision gemm runs", name, type, cols, ok, 1);
            for (int t = 0; t < tokens; t++) {
                for (int r = 0; r < rows; r++) {
                    double scale = fabs(bias[r]);
                    for (int c = 0; c < cols; c++) scale += fabs((double)(wt ? lk_f16_to_f32(wh[r * cols + c]) : w[r * cols + c]) * x[t * cols + c]);
                    check(fabs((double)y1[t * ys + r] - y0[t * ys + r]) <= 1e-6 * scale, "vision gemm", name, type, cols, y1[t * ys + r], y0[t * ys + r]);
                }
                for (int r = rows; r < ys; r++) check(isnan(y1[t * ys + r]), "vision gemm padding", name, type, cols, y1[t * ys + r], NAN);
            }
        }
        free(w), free(x), free(wh), free(packed), free(xp), free(y0), free(y1);
    }
}

/* The encoders' Q8_0 product (lk_vq8_gemm_packed), in the path's layout, against lk_matmul's Q8_0 gemm on the
 * same path plus the bias, bit for bit (the same integer block sums and float steps), with a partial panel (16
 * rows), an odd token count from 16 (x86's gemm threshold), more blocks than a pass takes (24) and two row
 * ranges as the pool splits them; a packing of another layout is declined. */
static void check_vision_q8(int isa, const char *name) {
    enum { ROWS = 45, COLS = 864, TOKENS = 17, YS = ROWS + 3 };
    lk_set_isa(isa);
    const int layout = lk_vq8_layout();
    if (layout == LK_VQ8_NONE) return;
    const size_t rb = lk_row_bytes(LK_TYPE_Q8_0, COLS);
    static float w[ROWS * COLS], x[TOKENS * COLS], bias[ROWS], want[TOKENS * YS], y[TOKENS * YS];
    static uint8_t wq[ROWS * COLS * 2], xq[TOKENS * COLS * 2];
    for (int i = 0; i < ROWS * COLS; i++) w[i] = normalish();
    for (int i = 0; i < TOKENS * COLS; i++) x[i] = normalish();
    for (int r = 0; r < ROWS; r++) bias[r] = normalish();
    for (int r = 0; r < ROWS; r++) lk_quantize_row(LK_TYPE_Q8_0, w + r * COLS, wq + r * rb, COLS);
    for (int t = 0; t < TOKENS; t++) lk_quantize_row(LK_TYPE_Q8_0, x + t * COLS, xq + t * rb, COLS);
    const int64_t panels = (ROWS + LK_VQ8_PANEL_ROWS - 1) / LK_VQ8_PANEL_ROWS;
    /* 64-byte aligned storage, as leap_vision_kernels.h asks: the packed operands take aligned vector loads */
    const size_t wbytes = (lk_vq8_packed_weight_bytes(layout, ROWS, COLS) + 63) / 64 * 64;
    const size_t xbytes = (lk_vq8_packed_x_bytes(layout, TOKENS, COLS) + 63) / 64 * 64;
    void *packed = aligned_alloc(64, wbytes), *xp = aligned_alloc(64, xbytes);
    lk_vq8_pack_weights(layout, wq, rb, ROWS, COLS, packed, 0, panels);
    lk_vq8_pack_x(layout, x, COLS, COLS, xp, 0, TOKENS);
    for (int i = 0; i < TOKENS * YS; i++) y[i] = NAN;
    lk_matmul(LK_TYPE_Q8_0, wq, rb, COLS, xq, rb, TOKENS, want, YS, 0, ROWS);
    const int ok = lk_vq8_gemm_packed(layout, packed, COLS, xp, TOKENS, bias, y, YS, 0, LK_VQ8_PANEL_ROWS) &&
                   lk_vq8_gemm_packed(layout, packed, COLS, xp, TOKENS, bias, y, YS, LK_VQ8_PANEL_ROWS, ROWS);
    check(ok, "vision q8 gemm runs", name, LK_TYPE_Q8_0, COLS, ok, 1);
    for (int t = 0; t < TOKENS; t++) {
        for (int r = 0; r < ROWS; r++) {
            const float e = want[t * YS + r] + bias[r];
            check(memcmp(&y[t * YS + r], &e, 4) == 0, "vision q8 gemm", name, LK_TYPE_Q8_0, COLS, y[t * YS + r], e);
        }
        for (int r = ROWS; r < YS; r++) check(isnan(y[t * YS + r]), "vision q8 padding", name, LK_TYPE_Q8_0, COLS, y[t * YS + r], NAN);
    }
    const int other = layout == LK_VQ8_S16_PAIRS ? LK_VQ8_U8_QUADS : LK_VQ8_S16_PAIRS;
    const int declined = lk_vq8_gemm_packed(other, packed, COLS, xp, TOKENS, bias, y, YS, 0, LK_VQ8_PANEL_ROWS);
    check(declined == 0, "vision q8 gemm declines another layout", name, LK_TYPE_Q8_0, COLS, declined, 0);
    free(packed), free(xp);
}

/* The vision attention's softmax down columns (lk_vg_exp_columns) on the path against the scalar path's
 * (expf): exponentials within about 1 ulp each and the columns' sums in the same order, so 1e-6 relative
 * for both; n = 101 covers 16-column passes, a 4-column one and a tail; columns past n stay untouched. */
static void check_vision_exp(int isa, const char *name) {
    enum { ROWS = 300, N = 101, STRIDE = 104 };
    static float in[ROWS * STRIDE], x0[ROWS * STRIDE], x1[ROWS * STRIDE], s0[STRIDE], s1[STRIDE];
    for (int i = 0; i < ROWS * STRIDE; i++) in[i] = normalish() * 30.0f;
    memcpy(x0, in, sizeof in), memcpy(x1, in, sizeof in);
    for (int j = 0; j < STRIDE; j++) s0[j] = s1[j] = NAN;
    lk_set_isa(LK_ISA_SCALAR);
    lk_vg_exp_columns(x0, ROWS, N, STRIDE, 0.125f, s0);
    lk_set_isa(isa);
    lk_vg_exp_columns(x1, ROWS, N, STRIDE, 0.125f, s1);
    for (int i = 0; i < ROWS; i++)
        for (int j = 0; j < STRIDE; j++) {
            const int k = i * STRIDE + j;
            if (j < N) check(fabsf(x1[k] - x0[k]) <= 1e-6f * x0[k] + 1e-30f, "vision exp", name, 0, j, x1[k], x0[k]);
            else check(x1[k] == in[k], "vision exp untouched", name, 0, j, x1[k], in[k]);
        }
    for (int j = 0; j < STRIDE; j++)
        check(j < N ? fabsf(s1[j] - s0[j]) <= 1e-6f * s0[j] : isnan(s1[j]), "vision exp sums", name, 0, j, s1[j], s0[j]);
}

int main(int argc, char **argv) {
    const char *best = lk_isa_name(lk_best_isa());
    printf("table in use: %s\n", best);
    if (argc > 1 && strcmp(argv[1], best) != 0) {
        printf("FAIL: expected the %s table on this CPU\n", argv[1]);
        return 1;
    }
    enum { MAXN = 2048, TOK = 5, ROWS = 7 };
    float *x = malloc(sizeof(float) * MAXN * TOK), *wf = malloc(sizeof(float) * MAXN);
    uint8_t *w = malloc(MAXN * 4 * ROWS), *xq = malloc(MAXN * 2 * TOK), *xq2 = malloc(MAXN * 2 * TOK);
    float ys[ROWS * TOK], yv[ROWS * TOK];
    int checked_paths = 0;
    for (int isa = 1; isa < LK_ISA_COUNT; isa++) {
        if (!lk_isa_available(isa)) continue;
        checked_paths++;
        const char *name = lk_isa_name(isa);
        for (size_t ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
            const int type = types[ti], act = lk_activation_type(type);
            const int64_t bs = lk_block_size(type);
            const int64_t widths[] = {bs == 1 ? 33 : bs, bs == 1 ? 257 : 3 * bs, bs == 1 ? 1000 : (bs == 32 ? 17 * 32 : 5 * 256)};
            for (int wi = 0; wi < 3; wi++) {
                const int64_t n = widths[wi];
                const size_t rb = lk_row_bytes(type, n), xr = act == LK_TYPE_F32 ? (size_t)n * 4 : lk_row_bytes(act, n);
                random_weights(type, w, n * ROWS);
                for (int64_t i = 0; i < n * TOK; i++) x[i] = normalish() * (uniform() < 0.02f ? 20.0f : 1.0f);
                /* activations: the path's quantizer must reproduce the scalar bytes exactly */
                lk_set_isa(LK_ISA_SCALAR);
                for (int t = 0; t < TOK; t++) lk_quantize_row(act, x + t * n, xq + t * xr, n);
                lk_set_isa(isa);
                for (int t = 0; t < TOK; t++) lk_quantize_row(act, x + t * n, xq2 + t * xr, n);
                check(memcmp(xq, xq2, xr * TOK) == 0, "quantize", name, type, (long)n, 0, 0);
                /* matmul (uses dot4 for the first 4 tokens) and per-row dots */
                lk_set_isa(LK_ISA_SCALAR);
                lk_matmul(type, w, rb, n, xq, xr, TOK, ys, ROWS, 0, ROWS);
                lk_set_isa(isa);
                lk_matmul(type, w, rb, n, xq, xr, TOK, yv, ROWS, 0, ROWS);
                /* matvec path (row pairs) for the last token */
                float y1[ROWS];
                lk_matmul(type, w, rb, n, xq + (TOK - 1) * xr, xr, 1, y1, ROWS, 0, ROWS);
                for (int t = 0; t < TOK; t++)
                    for (int r = 0; r < ROWS; r++) {
                        /* tolerance relative to Σ|w·x| over dequantized operands */
                        lk_dequantize_row(type, w + r * rb, wf, n);
                        float xa[MAXN];
                        lk_dequantize_row(act, xq + t * xr, xa, n);
                        double scale = 0;
                        for (int64_t i = 0; i < n; i++) scale += fabs((double)wf[i] * xa[i]);
                        const double got = yv[t * ROWS + r], want = ys[t * ROWS + r];
                        check(fabs(got - want) <= 2e-6 * scale + 1e-30, "matmul", name, type, (long)n, got, want);
                        if (t == TOK - 1)
                            check(fabs(y1[r] - want) <= 2e-6 * scale + 1e-30, "matvec", name, type, (long)n, y1[r], want);
                    }
            }
        }
        /* f16 conversions: every half, and random floats */
        static float f1[65536], f2[65536];
        static uint16_t h[65536], h1[65536], h2[65536];
        for (int i = 0; i < 65536; i++) h[i] = (uint16_t)i;
        lk_set_isa(LK_ISA_SCALAR);
        lk_f16_to_f32_row(h, f1, 65536);
        lk_set_isa(isa);
        lk_f16_to_f32_row(h, f2, 65536);
        for (int i = 0; i < 65536; i++)
            check(memcmp(&f1[i], &f2[i], 4) == 0 || (isnan(f1[i]) && isnan(f2[i])), "f16->f32", name, 1, i, f2[i], f1[i]);
        for (int i = 0; i < 65536; i++) f1[i] = normalish() * ldexpf(1.0f, (int)(next_u32() % 50) - 30);
        lk_set_isa(LK_ISA_SCALAR);
        lk_f32_to_f16_row(f1, h1, 65536);
        lk_set_isa(isa);
        lk_f32_to_f16_row(f1, h2, 65536);
        for (int i = 0; i < 65536; i++) check(h1[i] == h2[i], "f32->f16", name, 1, i, h2[i], h1[i]);
        if (!strncmp(name, "neon", 4)) check_activations(isa, name);
        if (!strncmp(name, "neon", 4)) check_batch_invariance(isa, name, w, x, xq);
        else check_few_invariance(isa, name);
        check_rows8(isa, name);
        check_vision_gemm(isa, name);
        check_vision_q8(isa, name);
        check_vision_exp(isa, name);
        printf("%s: checked\n", name);
    }
    printf("%d SIMD path(s) checked, %d failure(s)\n", checked_paths, failures);
    return failures ? 1 : 0;
}

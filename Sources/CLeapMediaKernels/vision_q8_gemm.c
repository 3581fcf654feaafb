/* The encoders' Q8_0 matrix product on packed operands (leap_vision_kernels.h), in one layout per kind of
 * integer product:
 *
 * y[t, r] = bias[r] + Σ_b (d_rb·dx_tb) · isum_trb, block after block from 0, with isum_trb the exact integer
 * sum of the block's 32 products w·x (the order of x86/avx2/prefill.c's Q8_0 gemm and of the arm64 tables'
 * Q8_0 kernels: the same float steps, so the same results). The activations are the Q8_0 blocks ggml's
 * quantize_row_q8_0 makes.
 *
 * Weights: panels of 16 rows; per block, the 16 rows' scales d (floats), then the 16 rows' 32 values in groups
 * (a group: the values a lane of one product instruction takes from one row), group-major, row-minor; rows past
 * the end zero. Activations: per token, the nb blocks' 32 values, then their nb scales dx (floats), then (U8
 * quads) their nb offsets. Blocks are taken KB at a time (a panel's blocks in L1) over a chunk of tokens (in
 * L2), the float sums carried in a buffer between them.
 *
 * S16 pairs (x86-64 without VNNI): both operands widened to s16, a group two values, vpmaddwd alone
 *   multiplies: 16 x vpmaddwd per 16 rows and token and block, where x86/avx2/prefill.c's gemm needs vpsignb,
 *   vpmaddubsw and vpmaddwd per 8 rows. Register tile 16 rows x 3 tokens in two 8-lane halves.
 * U8 quads (AVX-512 VNNI, AVX-VNNI): a group four bytes; vpdpbusd multiplies unsigned by signed bytes, so the
 *   weights are stored as u = w + 128 and each token's block sum starts from its offset −128·Σx: the sums are
 *   exactly those of w. 8 x vpdpbusd per 16 rows and token and block on AVX-512 (register tile 32 rows, two
 *   panels, x 6 tokens, or 16 x 8), 16 of 8 lanes on AVX-VNNI (16 rows x 3 tokens, as S16).
 * S8 quads (arm64, dotprod): a group four bytes, for sdot by element (below).
 */
#include "leap_kernels.h"
#include "leap_vision_kernels.h"
#include "leap_kernel_support.h"
#include <string.h>

enum {
    QR = LK_VQ8_PANEL_ROWS,     /* rows per panel */
    SCALES = QR * 4,            /* bytes of a panel block's 16 scales */
};

static int64_t panels_of(int64_t rows) { return (rows + QR - 1) / QR; }

/* Whether this architecture has the layout's kernels. */
static int layout_here(int layout) {
#if defined(__x86_64__)
    return layout == LK_VQ8_S16_PAIRS || layout == LK_VQ8_U8_QUADS;
#elif defined(__aarch64__)
    return layout == LK_VQ8_S8_QUADS;
#else
    (void)layout;
    return 0;
#endif
}

/* Values a group holds: 2 s16 or 4 bytes. */
static int group_values(int layout) { return layout == LK_VQ8_S16_PAIRS ? 2 : 4; }

/* Bytes of a value in the packed operands. */
static int value_bytes(int layout) { return layout == LK_VQ8_S16_PAIRS ? 2 : 1; }

/* Bytes of a panel's block: the scales, 16 rows x 32 values. */
static size_t weight_block_bytes(int layout) { return SCALES + (size_t)QR * QK * (size_t)value_bytes(layout); }

/* Bytes of a token's block: 32 values, the scale, and (U8 quads) the offset. */
static size_t x_block_bytes(int layout) { return (size_t)QK * (size_t)value_bytes(layout) + 4 + (layout == LK_VQ8_U8_QUADS ? 4 : 0); }

int lk_vq8_layout(void) {
    const int isa = lk_get_isa();
#if defined(__x86_64__)
    if ((isa == LK_ISA_AVX512 && (lk_cpu_features() & LK_CPU_AVX512VNNI)) || isa == LK_ISA_AVX_VNNI) return LK_VQ8_U8_QUADS;
    if (isa == LK_ISA_AVX2 || isa == LK_ISA_AVX512_NOVNNI ||
        (isa == LK_ISA_AVX512 && !(lk_cpu_features() & LK_CPU_AVX512VNNI)))
        return LK_VQ8_S16_PAIRS;
#elif defined(__aarch64__)
    if (isa == LK_ISA_NEON_DOTPROD || isa == LK_ISA_NEON_I8MM) return LK_VQ8_S8_QUADS;
#endif
    (void)isa;
    return LK_VQ8_NONE;
}

size_t lk_vq8_packed_weight_bytes(int layout, int64_t rows, int64_t cols) {
    return layout_here(layout) ? (size_t)panels_of(rows) * (size_t)(cols / QK) * weight_block_bytes(layout) : 0;
}

int lk_vq8_pack_weights(int layout, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *packed,
                        int64_t panel_begin, int64_t panel_end) {
    if (!layout_here(layout) || cols % QK != 0) return 0;
    const int64_t nb = cols / QK;
    const int gv = group_values(layout), vb = value_bytes(layout);
    const int bias = layout == LK_VQ8_U8_QUADS ? 128 : 0;
    const size_t wb = weight_block_bytes(layout);
    for (int64_t p = panel_begin; p < panel_end; p++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *dst = (uint8_t *)packed + (size_t)(p * nb + b) * wb;
            for (int r = 0; r < QR; r++) {
                const int64_t row = p * QR + r;
                const block_q8_0 *blk = row < rows ? (const block_q8_0 *)((const uint8_t *)w + (size_t)row * w_row_bytes) + b : NULL;
                const float d = blk ? lk_f16_to_f32(blk->d) : 0.0f;
                memcpy(dst + r * 4, &d, 4);
                for (int c = 0; c < QK; c++) {
                    /* group c / gv of row r, element c % gv */
                    uint8_t *v = dst + SCALES + ((size_t)(c / gv) * QR + (size_t)r) * (size_t)(gv * vb) + (size_t)(c % gv * vb);
                    const int q = blk ? blk->qs[c] : 0;
                    if (vb == 2) {
                        const int16_t q16 = (int16_t)q;
                        memcpy(v, &q16, 2);
                    } else {
                        *v = (uint8_t)(q + bias);
                    }
                }
            }
        }
    return 1;
}

size_t lk_vq8_packed_x_bytes(int layout, int64_t n_tokens, int64_t cols) {
    return layout_here(layout) ? (size_t)n_tokens * (size_t)(cols / QK) * x_block_bytes(layout) : 0;
}

void lk_vq8_pack_x(int layout, const float *x, int64_t x_stride, int64_t cols, void *xp, int64_t token_begin, int64_t token_end) {
    enum { STEP = 64 };
    if (!layout_here(layout)) return;
    const int64_t nb = cols / QK;
    const int vb = value_bytes(layout);
    block_q8_0 q[STEP];
    for (int64_t t = token_begin; t < token_end; t++) {
        uint8_t *row = (uint8_t *)xp + (size_t)t * (size_t)nb * x_block_bytes(layout);
        uint8_t *scales = row + (size_t)nb * QK * (size_t)vb;  /* [nb] floats */
        uint8_t *offsets = scales + (size_t)nb * 4;            /* [nb] int32 (U8 quads) */
        for (int64_t b0 = 0; b0 < nb; b0 += STEP) {
            const int64_t n = nb - b0 < STEP ? nb - b0 : STEP;
            lk_quantize_row_q8_0(x + t * x_stride + b0 * QK, q, n * QK);
            for (int64_t b = 0; b < n; b++) {
                if (vb == 2) {
                    int16_t v[QK];
                    for (int i = 0; i < QK; i++) v[i] = q[b].qs[i];
                    memcpy(row + (b0 + b) * QK * 2, v, sizeof v);
                } else {
                    memcpy(row + (b0 + b) * QK, q[b].qs, QK);
                }
                const float dx = lk_f16_to_f32(q[b].d);
                memcpy(scales + (b0 + b) * 4, &dx, 4);
                if (layout == LK_VQ8_U8_QUADS) {
                    int32_t sum = 0;
                    for (int i = 0; i < QK; i++) sum += q[b].qs[i];
                    const int32_t offset = -128 * sum;
                    memcpy(offsets + (b0 + b) * 4, &offset, 4);
                }
            }
        }
    }
}

#if defined(__x86_64__)
#include <immintrin.h>
#include "media_inline.h"

enum {
    KB = 24, /* blocks per pass: in L1, a panel's 26 KB in the S16 layout, two panels' 28 KB in the U8 one */
    WB16 = SCALES + QR * QK * 2, XB16 = QK * 2 + 4, /* S16 pairs: a panel's block, a token's block */
    WB8 = SCALES + QR * QK, XB8 = QK + 4 + 4,       /* U8 quads */
};

/* Where a pass's sums go: the carry buffer between a panel's passes, and after its last blocks y itself, with
 * the bias. */
typedef struct {
    float *acc;         /* [nt][16]: read unless b0 == 0, written unless y */
    float *y;           /* NULL, or token j's rows at y + j·ys (the panel's last blocks) */
    int64_t ys;
    const float *bias;  /* the panel's rows' (NULL: none) */
    int nr;             /* rows of the panel that exist, 1..16 */
} pass_out;

/* One pass: nt tokens (rows of xp from x, xrb bytes apart) x blocks [b0, b0 + kb) of np panels (the next one
 * panel_bytes on), the sums Σ_b (d·dx)·isum from 0 when b0 == 0, else from o[p].acc for panel p. */
typedef void (*pass_fn)(const uint8_t *panel, size_t panel_bytes, int64_t b0, int64_t kb, const uint8_t *x, size_t xrb,
                        int64_t nb, const pass_out *o);

/* A layout's passes by panel count and token count (NULL where it has none; passes[1][1] always), its block
 * sizes and the bytes of a token chunk's activations, kept in L2 while every panel of the call streams past
 * them (a larger chunk streams the weights fewer times). */
typedef struct {
    pass_fn passes[3][9];
    size_t wb, xb, x_chunk_bytes;
} tile_passes;

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)

/* KERNEL_NT: the pass_fn of a one-panel kernel for NT tokens */
#define ONE_PANEL_PASS(KERNEL, NT)                                                                                   \
    static void KERNEL##_##NT(const uint8_t *p, size_t pb, int64_t b0, int64_t kb, const uint8_t *x, size_t xrb,     \
                              int64_t nb, const pass_out *o) {                                                       \
        (void)pb;                                                                                                    \
        KERNEL(p, b0, kb, x, xrb, nb, o, NT);                                                                        \
    }

/* A pass's 16 rows x nt tokens as two 8-lane halves: into the carry buffer, or into y with the bias. */
INLINE void store_halves(const pass_out *o, const __m256 *lo, const __m256 *hi, const int nt) {
    if (o->y) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i mlo = _mm256_cmpgt_epi32(_mm256_set1_epi32(o->nr), lane);
        const __m256i mhi = _mm256_cmpgt_epi32(_mm256_set1_epi32(o->nr - 8), lane);
        const __m256 blo = o->bias ? _mm256_maskload_ps(o->bias, mlo) : _mm256_setzero_ps();
        const __m256 bhi = o->bias ? _mm256_maskload_ps(o->bias + 8, mhi) : _mm256_setzero_ps();
        for (int j = 0; j < nt; j++) {
            _mm256_maskstore_ps(o->y + j * o->ys, mlo, o->bias ? _mm256_add_ps(lo[j], blo) : lo[j]);
            _mm256_maskstore_ps(o->y + j * o->ys + 8, mhi, o->bias ? _mm256_add_ps(hi[j], bhi) : hi[j]);
        }
        return;
    }
    for (int j = 0; j < nt; j++) {
        _mm256_storeu_ps(o->acc + j * QR, lo[j]);
        _mm256_storeu_ps(o->acc + j * QR + 8, hi[j]);
    }
}

/* S16 pairs: a pass of nt <= 3 tokens (pass_fn) */
INLINE void pass_s16(const uint8_t *panel, int64_t b0, int64_t kb, const uint8_t *x, size_t xrb, int64_t nb,
                     const pass_out *o, const int nt) {
    float *acc = o->acc;
    __m256 lo[3], hi[3];
    for (int j = 0; j < nt; j++) {
        lo[j] = b0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + j * QR);
        hi[j] = b0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + j * QR + 8);
    }
    const float *dxs = (const float *)(x + (size_t)nb * QK * 2);
    for (int64_t b = b0; b < b0 + kb; b++) {
        const uint8_t *wb = panel + (size_t)b * WB16 + SCALES;
        const uint8_t *xb = x + (size_t)b * QK * 2;
        __m256i slo[3], shi[3];
        for (int j = 0; j < nt; j++) slo[j] = shi[j] = _mm256_setzero_si256();
        for (int g = 0; g < QK / 2; g++) {
            const __m256i w0 = _mm256_load_si256((const __m256i *)(wb + g * 64));
            const __m256i w1 = _mm256_load_si256((const __m256i *)(wb + g * 64 + 32));
            for (int j = 0; j < nt; j++) {
                const __m256i xv = _mm256_set1_epi32(lk_load_i32(xb + (size_t)j * xrb + 4 * g));
                slo[j] = _mm256_add_epi32(slo[j], _mm256_madd_epi16(w0, xv));
                shi[j] = _mm256_add_epi32(shi[j], _mm256_madd_epi16(w1, xv));
            }
        }
        const __m256 d0 = _mm256_load_ps((const float *)(panel + (size_t)b * WB16));
        const __m256 d1 = _mm256_load_ps((const float *)(panel + (size_t)b * WB16 + 32));
        for (int j = 0; j < nt; j++) {
            const __m256 dx = _mm256_set1_ps(dxs[(size_t)j * (xrb / 4) + b]);
            lo[j] = _mm256_fmadd_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(slo[j]), lo[j]);
            hi[j] = _mm256_fmadd_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(shi[j]), hi[j]);
        }
    }
    store_halves(o, lo, hi, nt);
}

ONE_PANEL_PASS(pass_s16, 3) ONE_PANEL_PASS(pass_s16, 2) ONE_PANEL_PASS(pass_s16, 1)

#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)

/* U8 quads on AVX-VNNI (VEX vpdpbusd, 16 vector registers): a pass of nt <= 3 tokens, each panel block's vectors
 * as two 8-row halves, the float steps of pass_s16. */
INLINE void pass_u8_vex(const uint8_t *panel, int64_t b0, int64_t kb, const uint8_t *x, size_t xrb, int64_t nb,
                        const pass_out *o, const int nt) {
    __m256 lo[3], hi[3];
    for (int j = 0; j < nt; j++) {
        lo[j] = b0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(o->acc + j * QR);
        hi[j] = b0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(o->acc + j * QR + 8);
    }
    const float *dxs = (const float *)(x + (size_t)nb * QK);
    const int32_t *offsets = (const int32_t *)(x + (size_t)nb * (QK + 4));
    for (int64_t b = b0; b < b0 + kb; b++) {
        const uint8_t *wb = panel + (size_t)b * WB8 + SCALES;
        const uint8_t *xb = x + (size_t)b * QK;
        __m256i slo[3], shi[3];
        for (int j = 0; j < nt; j++) slo[j] = shi[j] = _mm256_set1_epi32(offsets[(size_t)j * (xrb / 4) + b]);
        for (int g = 0; g < QK / 4; g++) {
            const __m256i w0 = _mm256_load_si256((const __m256i *)(wb + g * 64));
            const __m256i w1 = _mm256_load_si256((const __m256i *)(wb + g * 64 + 32));
            for (int j = 0; j < nt; j++) {
                const __m256i xg = _mm256_set1_epi32(lk_load_i32(xb + (size_t)j * xrb + 4 * g));
                slo[j] = _mm256_dpbusd_avx_epi32(slo[j], w0, xg);
                shi[j] = _mm256_dpbusd_avx_epi32(shi[j], w1, xg);
            }
        }
        const __m256 d0 = _mm256_load_ps((const float *)(panel + (size_t)b * WB8));
        const __m256 d1 = _mm256_load_ps((const float *)(panel + (size_t)b * WB8 + 32));
        for (int j = 0; j < nt; j++) {
            const __m256 dx = _mm256_set1_ps(dxs[(size_t)j * (xrb / 4) + b]);
            lo[j] = _mm256_fmadd_ps(_mm256_mul_ps(d0, dx), _mm256_cvtepi32_ps(slo[j]), lo[j]);
            hi[j] = _mm256_fmadd_ps(_mm256_mul_ps(d1, dx), _mm256_cvtepi32_ps(shi[j]), hi[j]);
        }
    }
    store_halves(o, lo, hi, nt);
}

ONE_PANEL_PASS(pass_u8_vex, 3) ONE_PANEL_PASS(pass_u8_vex, 2) ONE_PANEL_PASS(pass_u8_vex, 1)

#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni"))), apply_to = function)

/* U8 quads: a pass of np panels x nt tokens (2 x 6 or 1 x 8 at most: 4 accumulators per panel and token pair,
 * in 32 registers). Per block each panel's 8 weight vectors are loaded once for the nt tokens, each token's
 * group broadcast once for the np panels; each token's block sum starts from its offset. */
INLINE void pass_u8(const uint8_t *panel, size_t panel_bytes, int64_t b0, int64_t kb, const uint8_t *x, size_t xrb,
                    int64_t nb, const pass_out *o, const int np, const int nt) {
    __m512 a[2][8];
    for (int p = 0; p < np; p++)
        for (int j = 0; j < nt; j++) a[p][j] = b0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(o[p].acc + j * QR);
    const float *dxs = (const float *)(x + (size_t)nb * QK);            /* token j's scales at dxs + j·xrb/4 */
    const int32_t *offsets = (const int32_t *)(x + (size_t)nb * (QK + 4)); /* and its offsets */
    for (int64_t b = b0; b < b0 + kb; b++) {
        const uint8_t *wb = panel + (size_t)b * WB8;                   /* panel p's block at wb + p·panel_bytes */
        const uint8_t *xb = x + (size_t)b * QK;
        __m512i s[2][8];
        for (int j = 0; j < nt; j++) {
            const __m512i offset = _mm512_set1_epi32(offsets[(size_t)j * (xrb / 4) + b]);
            for (int p = 0; p < np; p++) s[p][j] = offset;
        }
        for (int g = 0; g < QK / 4; g++) {
            __m512i w[2];
            for (int p = 0; p < np; p++) w[p] = _mm512_load_si512((const void *)(wb + p * panel_bytes + SCALES + g * 64));
            for (int j = 0; j < nt; j++) {
                const __m512i xg = _mm512_set1_epi32(lk_load_i32(xb + (size_t)j * xrb + 4 * g));
                for (int p = 0; p < np; p++) s[p][j] = _mm512_dpbusd_epi32(s[p][j], w[p], xg);
            }
        }
        for (int p = 0; p < np; p++) {
            const __m512 d = _mm512_load_ps((const float *)(wb + p * panel_bytes));
            for (int j = 0; j < nt; j++) {
                const __m512 dx = _mm512_set1_ps(dxs[(size_t)j * (xrb / 4) + b]);
                a[p][j] = _mm512_fmadd_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(s[p][j]), a[p][j]);
            }
        }
    }
    for (int p = 0; p < np; p++) {
        if (o[p].y) {
            const __mmask16 m = (__mmask16)((1u << o[p].nr) - 1);
            const __m512 bv = o[p].bias ? _mm512_maskz_loadu_ps(m, o[p].bias) : _mm512_setzero_ps();
            for (int j = 0; j < nt; j++)
                _mm512_mask_storeu_ps(o[p].y + j * o[p].ys, m, o[p].bias ? _mm512_add_ps(a[p][j], bv) : a[p][j]);
        } else {
            for (int j = 0; j < nt; j++) _mm512_storeu_ps(o[p].acc + j * QR, a[p][j]);
        }
    }
}

#define U8_PASS(NP, NT)                                                                                              \
    static void pass_u8_##NP##x##NT(const uint8_t *p, size_t pb, int64_t b0, int64_t kb, const uint8_t *x, size_t xrb, \
                                   int64_t nb, const pass_out *o) {                                                 \
        pass_u8(p, pb, b0, kb, x, xrb, nb, o, NP, NT);                                                               \
    }
U8_PASS(2, 6) U8_PASS(2, 4) U8_PASS(2, 2) U8_PASS(2, 1)
U8_PASS(1, 8) U8_PASS(1, 4) U8_PASS(1, 2) U8_PASS(1, 1)
#undef U8_PASS

#pragma clang attribute pop

static const tile_passes U8_VEX_PASSES = {{{NULL}, {NULL, pass_u8_vex_1, pass_u8_vex_2, pass_u8_vex_3}}, WB8, XB8, 256 * 1024};
static const tile_passes S16_PASSES = {{{NULL}, {NULL, pass_s16_1, pass_s16_2, pass_s16_3}}, WB16, XB16, 256 * 1024};
static const tile_passes U8_PASSES = {{{NULL},
                                       {NULL, pass_u8_1x1, pass_u8_1x2, NULL, pass_u8_1x4, NULL, NULL, NULL, pass_u8_1x8},
                                       {NULL, pass_u8_2x1, pass_u8_2x2, NULL, pass_u8_2x4, NULL, pass_u8_2x6}},
                                      WB8, XB8, 512 * 1024}; /* half the L2 of the AVX-512 VNNI CPUs with the least (1 MB) */

/* Token chunks (in L2) x panel pairs (a single panel where the range or the layout has no pair) x KB blocks x
 * passes of the widest tile that fits the tokens left; acc: 2 x chunk x 16 floats carried between a panel's KB
 * blocks. */
static void gemm_x86(const tile_passes *tp, const uint8_t *packed, int64_t nb, const uint8_t *xp, int64_t n_tokens,
                     const float *bias, float *y, int64_t ys, int64_t row_begin, int64_t row_end, float *acc, int64_t chunk) {
    const size_t xrb = (size_t)nb * tp->xb, panel_bytes = (size_t)nb * tp->wb;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += chunk) {
        const int64_t nt = n_tokens - t0 < chunk ? n_tokens - t0 : chunk;
        const uint8_t *xc = xp + (size_t)t0 * xrb;
        for (int64_t r0 = row_begin; r0 < row_end;) {
            const int np = row_end - r0 > QR && tp->passes[2][1] ? 2 : 1;
            const uint8_t *panel = packed + (size_t)(r0 / QR) * panel_bytes;
            for (int64_t b0 = 0; b0 < nb; b0 += KB) {
                const int64_t kb = nb - b0 < KB ? nb - b0 : KB;
                for (int64_t t = 0; t < nt;) {
                    int w = nt - t < 8 ? (int)(nt - t) : 8;
                    while (!tp->passes[np][w]) w--;
                    pass_out o[2];
                    for (int p = 0; p < np; p++) {
                        const int64_t rp = r0 + p * QR;
                        o[p] = (pass_out){acc + (p * chunk + t) * QR, b0 + kb == nb ? y + (t0 + t) * ys + rp : NULL, ys,
                                          bias ? bias + rp : NULL, row_end - rp < QR ? (int)(row_end - rp) : QR};
                    }
                    tp->passes[np][w](panel, panel_bytes, b0, kb, xc + t * xrb, xrb, nb, o);
                    t += w;
                }
            }
            r0 += np * QR;
        }
    }
}
#endif

#if defined(__aarch64__)
#include <arm_neon.h>

/* S8 quads: per block the 16 rows' scales, then 32 vectors, vector 4k + q holding group k (elements 4k..4k+3)
 * of rows 4q..4q+3, lane r the 4 bytes of row 4q + r (the common layout: group-major, row-minor). Per block and
 * token: 32 sdot, each lane of the token's 16 bytes (one group) against 4 rows; the 16 rows' sums in four
 * vectors. */
enum {
    WB = SCALES + QR * QK, /* bytes of a panel's block */
    XB = QK + 4,           /* bytes of a token's block: 32 int8 and its scale */
    NT = 2,                /* tokens per pass */
    X_CHUNK_BYTES = 256 * 1024, /* activations of a token chunk (in L2) */
};
#pragma clang attribute push(__attribute__((target("dotprod"))), apply_to = function)

/* Group k = 4·H + K of every token's block (xv[t]: its 16 bytes of half H) into the four row sums of s */
#define GROUP_DOTS(H, K)                                                                                     \
    {                                                                                                        \
        const int8_t *wk = wb + (4 * (H) + (K)) * 64;                                                        \
        const int8x16_t w0 = vld1q_s8(wk), w1 = vld1q_s8(wk + 16), w2 = vld1q_s8(wk + 32), w3 = vld1q_s8(wk + 48); \
        for (int t = 0; t < nt; t++) {                                                                       \
            s[t][0] = vdotq_laneq_s32(s[t][0], w0, xv[t], K), s[t][1] = vdotq_laneq_s32(s[t][1], w1, xv[t], K); \
            s[t][2] = vdotq_laneq_s32(s[t][2], w2, xv[t], K), s[t][3] = vdotq_laneq_s32(s[t][3], w3, xv[t], K); \
        }                                                                                                    \
    }

/* nt (1, NT) tokens (rows of xp from x, xrb bytes apart) x every block of one panel: y[t·ys + r] (r < nr) =
 * bias + Σ_b (d·dx)·isum, the float steps of x86's pass_tokens */
static inline void pass_neon(const uint8_t *panel, int64_t nb, const uint8_t *x, size_t xrb, const int nt,
                             const float *bias, float *y, int64_t ys, int nr) {
    float32x4_t acc[NT][4];
    for (int t = 0; t < nt; t++)
        for (int q = 0; q < 4; q++) acc[t][q] = vdupq_n_f32(0.0f);
    for (int64_t b = 0; b < nb; b++) {
        const int8_t *wb = (const int8_t *)(panel + (size_t)b * WB + QR * 4);
        int32x4_t s[NT][4];
        for (int t = 0; t < nt; t++)
            for (int q = 0; q < 4; q++) s[t][q] = vdupq_n_s32(0);
        int8x16_t xv[NT];
        for (int t = 0; t < nt; t++) xv[t] = vld1q_s8((const int8_t *)(x + (size_t)t * xrb + (size_t)b * QK));
        GROUP_DOTS(0, 0) GROUP_DOTS(0, 1) GROUP_DOTS(0, 2) GROUP_DOTS(0, 3)
        for (int t = 0; t < nt; t++) xv[t] = vld1q_s8((const int8_t *)(x + (size_t)t * xrb + (size_t)b * QK + 16));
        GROUP_DOTS(1, 0) GROUP_DOTS(1, 1) GROUP_DOTS(1, 2) GROUP_DOTS(1, 3)
        const float *d = (const float *)(panel + (size_t)b * WB);
        for (int t = 0; t < nt; t++) {
            const float dx = ((const float *)(x + (size_t)t * xrb + (size_t)nb * QK))[b];
            for (int q = 0; q < 4; q++)
                acc[t][q] = vfmaq_f32(acc[t][q], vcvtq_f32_s32(s[t][q]), vmulq_n_f32(vld1q_f32(d + 4 * q), dx));
        }
    }
    for (int t = 0; t < nt; t++) {
        float a[QR];
        for (int q = 0; q < 4; q++) vst1q_f32(a + 4 * q, acc[t][q]);
        for (int r = 0; r < nr; r++) y[t * ys + r] = bias ? a[r] + bias[r] : a[r];
    }
}

/* Token chunks (in L2) x panels x token pairs */
static void gemm_neon(const uint8_t *packed, int64_t nb, const uint8_t *xp, int64_t n_tokens, const float *bias, float *y,
                      int64_t ys, int64_t row_begin, int64_t row_end) {
    const size_t xrb = (size_t)nb * XB;
    const int64_t chunk = X_CHUNK_BYTES / (int64_t)xrb > NT ? X_CHUNK_BYTES / (int64_t)xrb : NT;
    for (int64_t c0 = 0; c0 < n_tokens; c0 += chunk) {
        const int64_t c1 = n_tokens - c0 < chunk ? n_tokens : c0 + chunk;
        for (int64_t r0 = row_begin; r0 < row_end; r0 += QR) {
            const int nr = row_end - r0 < QR ? (int)(row_end - r0) : QR;
            const uint8_t *panel = packed + (size_t)(r0 / QR) * (size_t)nb * WB;
            for (int64_t t = c0; t < c1; t += NT) {
                const uint8_t *xt = xp + (size_t)t * xrb;
                const float *bt = bias ? bias + r0 : NULL;
                if (c1 - t >= NT) pass_neon(panel, nb, xt, xrb, NT, bt, y + t * ys + r0, ys, nr);
                else pass_neon(panel, nb, xt, xrb, 1, bt, y + t * ys + r0, ys, nr);
            }
        }
    }
}

#pragma clang attribute pop
#endif

int lk_vq8_gemm_packed(int layout, const void *packed, int64_t cols, const void *xp, int64_t n_tokens, const float *bias,
                       float *y, int64_t y_stride, int64_t row_begin, int64_t row_end) {
    if (layout == LK_VQ8_NONE || layout != lk_vq8_layout() || cols % QK != 0 || row_begin % QR != 0) return 0;
    if (row_end <= row_begin || n_tokens <= 0 || cols <= 0) return 1;
#if defined(__x86_64__)
    const tile_passes *tp = layout == LK_VQ8_S16_PAIRS ? &S16_PASSES : lk_get_isa() == LK_ISA_AVX_VNNI ? &U8_VEX_PASSES : &U8_PASSES;
    const int64_t nb = cols / QK;
    int64_t chunk = (int64_t)tp->x_chunk_bytes / (nb * (int64_t)tp->xb);
    chunk = chunk < 24 ? 24 : chunk > 1008 ? 1008 : chunk / 24 * 24; /* whole passes of 3, 6 and 8 */
    float *acc = lk_scratch((size_t)2 * chunk * QR * sizeof(float)); /* [2][chunk][16] */
    if (!acc) return 0;
    gemm_x86(tp, (const uint8_t *)packed, nb, (const uint8_t *)xp, n_tokens, bias, y, y_stride, row_begin, row_end, acc, chunk);
    return 1;
#elif defined(__aarch64__)
    gemm_neon(packed, cols / QK, xp, n_tokens, bias, y, y_stride, row_begin, row_end);
    return 1;
#else
    (void)packed, (void)xp, (void)bias, (void)y, (void)y_stride;
    return 0;
#endif
}

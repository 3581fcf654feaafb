/* Internal declarations shared by the kernel files: the dispatch table's entries, and (lk_tables.h) the
 * format of the tables that fill them; the type facts come from lk_types.h. */
#ifndef LK_INTERNAL_H
#define LK_INTERNAL_H
#include "lk_types.h"

/* The target of the AVX2 kernel files: AVX2 + FMA + F16C, and AVX-VNNI where they are built a second time
 * for it (x86/avx2/avx_vnni/lk_avx_vnni.h) */
#ifdef LK_AVXVNNI
#define LK_AVX2_TARGET "avx2,fma,f16c,avxvnni"
#else
#define LK_AVX2_TARGET "avx2,fma,f16c"
#endif

/* ---- dispatch table ---- */
/* s = dot(w row, x row), n elements. */
typedef float (*lk_dot_fn)(int64_t n, const void *w, const void *x);
/* s[0..3] = dot(w row, x rows t=0..3), x row t at x + t * x_stride: unpacks the weights once for 4 tokens. */
typedef void (*lk_dot4_fn)(int64_t n, const void *w, const void *x, size_t x_stride, float *s);
/* s[r·4 + t] = dot(w row r, x row t) for r < 2 (row r at w + r · w_stride) and t < nt (1 or 4): two rows
 * share each activation load. */
typedef void (*lk_dot2_fn)(int64_t n, const void *w, size_t w_stride, const void *x, size_t x_stride, int nt, float *s);
/* y[r] = dot(w row r, x) for r < nrows (row r at w + r · w_stride), one token: returns 0 (nothing done) when
 * the kernel does not handle this width, and the caller falls back to dot/dot2. */
typedef int (*lk_matvec_fn)(int64_t n, const void *w, size_t w_stride, const void *x, float *y, int64_t nrows);
typedef void (*lk_quant_fn)(const float *x, void *y, int64_t n);
/* lk_matmul for many tokens (same arguments): returns 0 (nothing done) when it cannot run, e.g. out of
 * memory for its scratch, and the caller falls back to dot4/dot2. */
typedef int (*lk_gemm_fn)(int64_t cols, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
                          int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end);

typedef struct {
    lk_dot_fn dot[LK_TYPE_COUNT];
    lk_dot4_fn dot4[LK_TYPE_COUNT]; /* optional */
    lk_dot2_fn dot2[LK_TYPE_COUNT]; /* optional */
    lk_matvec_fn matvec[LK_TYPE_COUNT]; /* optional */
    lk_gemm_fn gemm[LK_TYPE_COUNT];     /* optional, used from LK_GEMM_MIN_TOKENS tokens */
    lk_gemm_fn few_tokens[LK_TYPE_COUNT]; /* optional, 2..LK_FEW_MAX_TOKENS tokens, before gemm */
    /* optional, llama.cpp's orders (reference/llama_order_kquant.c), chosen by lk_matmul_tensor: */
    lk_gemm_fn repack[LK_TYPE_COUNT]; /* tensors ggml repacks (row count a multiple of 8), any token count */
    lk_gemm_fn any_tokens[LK_TYPE_COUNT]; /* llama.cpp's order for plain tensors at any token count */
    lk_gemm_fn repack_id[LK_TYPE_COUNT]; /* the same through MUL_MAT_ID: one token at a time (its gemv) */
    lk_gemm_fn tiled[LK_TYPE_COUNT];  /* other tensors from LK_TILED_MIN_TOKENS tokens */
    lk_gemm_fn rows8[LK_TYPE_COUNT];  /* optional: weights in the LK_ROWS8 layout, rows in whole groups, any token count */
    int gemm_min_tokens[LK_TYPE_COUNT]; /* 0: LK_GEMM_MIN_TOKENS; else from this many tokens */
    lk_quant_fn quantize[LK_TYPE_COUNT]; /* for activation types Q8_0, Q8_1, Q8_K */
    void (*dequantize[LK_TYPE_COUNT])(const void *src, float *dst, int64_t n); /* all but F16 (f16_to_f32) */
    void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    void (*f32_to_f16)(const float *src, uint16_t *dst, int64_t n);
    float (*stream_sum)(const float *x, int64_t n); /* memory-bandwidth probe */
    double (*softmax_exp)(const float *x, float *y, int64_t n, float max); /* see lk_softmax_exp */
    void (*silu)(const float *x, float *y, int64_t n); /* see lk_silu */
    /* optional, ggml_vec_dot_f16's order of this path's llama.cpp build (x86/f16_ggml.c), rows from w */
    void (*matvec_f16_ggml)(const uint16_t *w, size_t w_row_bytes, int64_t n, int64_t n_padded, const float *x,
                            float *y, int64_t rows);
} lk_kernel_table;

/* ggml's vectorised expf (ggml_v_expf, the AVX-512 variant), one lane: a degree-5 polynomial on the reduced
 * argument, scaled by 2^n. Not correctly rounded; what llama.cpp's softmax and SiLU use. Beyond the float
 * range (|n| > 126) it returns 0 or inf, where ggml's gives a subnormal or a value that makes no difference. */
static inline float lk_ggml_expf(float x) {
    const float r = 0x1.8p23f;
    const float z = __builtin_fmaf(x, 0x1.715476p+0f, r);
    const float n = z - r;
    if (!(__builtin_fabsf(n) <= 126.0f)) return n > 0 ? __builtin_inff() : 0.0f; /* -inf, or below 2^-126 */
    const float b = __builtin_fmaf(-n, 0x1.7f7d1cp-20f, __builtin_fmaf(-n, 0x1.62e4p-1f, x));
    const float u = b * b;
    const float j = __builtin_fmaf(__builtin_fmaf(__builtin_fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                                  __builtin_fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                                   u, __builtin_fmaf(0x1.ffffecp-1f, b, 1.0f));
    return j * lk_f32_from_bits((uint32_t)((int32_t)n + 127) << 23);
}
double lk_softmax_exp_ref(const float *x, float *y, int64_t n, float max);
void lk_silu_ref(const float *x, float *y, int64_t n);

/* The cache line at p into L2 (prefetcht1 on x86): weights streamed from DRAM are prefetched into L2, not
 * L1, because an L1 prefetch holds one of the core's few L1 miss buffers until its line arrives from DRAM and
 * the loads behind it wait for a free one (one token's product from DRAM then runs much slower);
 * the L1 takes the lines from L2 in time. */
static inline __attribute__((always_inline)) void lk_prefetch_weights(const void *p) { __builtin_prefetch(p, 0, 2); }

/* The cache lines from p up to end into L2 (none when end <= p). */
static inline __attribute__((always_inline)) void lk_prefetch_l2(const uint8_t *p, const uint8_t *end) {
    for (; p < end; p += 64) lk_prefetch_weights(p);
}

/* Most tokens of a call that a table's few_tokens kernel takes (gemm from there on). */
enum { LK_FEW_MAX_TOKENS = 15 };
/* From this many tokens a table's gemm kernel (when it has one, and unless the kernel names another count)
 * does the whole call: it unpacks and transposes each 16-row weight tile once per call, which costs about
 * as much as 8 tokens' products. */
enum { LK_GEMM_MIN_TOKENS = 16 };
/* ggml's tiled K-quant matmul takes over from this many tokens (ggml_tiled_min_batch). */
enum { LK_TILED_MIN_TOKENS = 8 };

/* The LK_ROWS8 layout within a group of 8 rows (rows8.c). Q4_0, Q8_0 (qb quant bytes a block, head: the f16
 * scale): block b's vectors (8·qb bytes, 32-byte aligned when the group is) at lk_rows8_quants, its 8 scales
 * (16 bytes) after all the vectors, at lk_rows8_scales. Q4_K, Q5_K, Q6_K: block b (8 times the block's bytes)
 * at lk_rows8_kblock, one after another so that a group is one sequential stream: its quant vectors, then its
 * head's word vectors (Q4_K / Q5_K 4: d | dmin and the packed scales; Q6_K 4: the scales), then (Q6_K) the 8
 * f16 scales. */
static inline size_t lk_rows8_quants(int64_t b, size_t qb) { return (size_t)b * 8 * qb; }
static inline size_t lk_rows8_scales(int64_t nb, int64_t b, size_t qb) { return (size_t)nb * 8 * qb + 16 * (size_t)b; }
/* Q5_0 as Q4_0 (qb = 20: qh then the nibbles). Q4_1, Q5_1 (head: the f16 scale d and min m): as Q4_0, but
 * after all the vectors each block's 8 scales then its 8 mins (32 bytes), at lk_rows8_scales_mins and 16 bytes
 * on. */
static inline size_t lk_rows8_scales_mins(int64_t nb, int64_t b, size_t qb) { return (size_t)nb * 8 * qb + 32 * (size_t)b; }
static inline int lk_rows8_kquant(int type) { return type == LK_TYPE_Q4_K || type == LK_TYPE_Q5_K || type == LK_TYPE_Q6_K; }
static inline size_t lk_rows8_kblock(int type, int64_t b) {
    return (size_t)b * 8 * (type == LK_TYPE_Q4_K ? sizeof(block_q4_K) : type == LK_TYPE_Q5_K ? sizeof(block_q5_K) : sizeof(block_q6_K));
}
/* Widest matrix lk_rows8_pack packs (matmul.c copies a row back out on the stack when a path has no rows8
 * kernels). */
enum { LK_ROWS8_MAX_COLS = 32768 };
/* AVX2 prefill on gemm tiles built from the LK_ROWS8 layout: Q4_0 (x86/q4_0.c) from 4 tokens, Q8_0
 * (x86/avx2/prefill.c) */
int lk_gemm_q4_0_rows8_avx2(int64_t cols, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
                            int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end);
int lk_gemm_q8_0_rows8_avx2(int64_t cols, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
                            int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end);
/* AVX-512 VNNI prefill of Q4_0 and Q8_0 on 16-row gemm tiles built from the LK_ROWS8 layout (x86/q4_0.c;
 * Q8_0 in x86/avx2/q8_0.c's order) */
int lk_gemm_q4_0_rows8_avx512(int64_t cols, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
                              int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end);
int lk_gemm_q8_0_rows8_avx512(int64_t cols, const void *w, size_t w_row_bytes, const void *x, size_t x_row_bytes,
                              int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end);

/* llama.cpp's repacked Q4_K / tiled Q6_K orders on the AVX2 row kernels (the AVX-512 VNNI path's fallbacks
 * below its tiles); reference/llama_order_kquant.c. */
int lk_repack_q4_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                        float *y, int64_t ys, int64_t row_begin, int64_t row_end);
int lk_repack_id_q4_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                           float *y, int64_t ys, int64_t row_begin, int64_t row_end);
int lk_tiled_q4_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                       float *y, int64_t ys, int64_t row_begin, int64_t row_end);
int lk_tiled_q6_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                       float *y, int64_t ys, int64_t row_begin, int64_t row_end);

/* The dot (one token) and dot4 (4 tokens) entries of a kernel file's row kernel
 * T##_rows(n, w, x, x_stride, s, nt). */
#define LK_DOT_ENTRIES(T)                                                                                     \
    static float dot_##T(int64_t n, const void *w, const void *x) {                                         \
        float s;                                                                                             \
        T##_rows(n, w, x, 0, &s, 1);                                                                         \
        return s;                                                                                            \
    }                                                                                                        \
    static void dot4_##T(int64_t n, const void *w, const void *x, size_t xs, float *s) { T##_rows(n, w, x, xs, s, 4); }
/* A gemm entry (lk_gemm_fn) NAME for one type over a kernel file's IMPL(type, lk_gemm_fn's arguments). */
#define LK_GEMM_ENTRY(NAME, IMPL, TYPE)                                                                       \
    static int NAME(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,     \
                    float *y, int64_t ys, int64_t row_begin, int64_t row_end) {                               \
        return IMPL(TYPE, cols, w, wrb, x, xrb, n_tokens, y, ys, row_begin, row_end);                         \
    }

/* AVX2 row kernels of the 32-block types (used for the odd last block of the AVX-512 kernels). */
void lk_avx2_rows(int type, int64_t n, const void *w, const void *x, size_t xs, float *s, int nt);

/* lk_scratch, the calling thread's scratch memory: leap_kernel_support.h (through lk_types.h). */

/* Scalar reference routines used by other paths for tails and unimplemented types. */
void lk_quantize_row_q8_0_ref(const float *x, void *y, int64_t n);
void lk_quantize_row_q8_1_ref(const float *x, void *y, int64_t n);
void lk_quantize_row_q8_K_ref(const float *x, void *y, int64_t n);

#include "lk_tables.h"
#endif

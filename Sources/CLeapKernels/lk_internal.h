/* Internal declarations shared by the kernel files: ggml block layouts, f16 helpers, dispatch table. */
#ifndef LK_INTERNAL_H
#define LK_INTERNAL_H
#include "leap_kernels.h"
#include <string.h>

#define QK 32   /* elements per block of the 32-block types */
#define QK_K 256 /* elements per K-quant super-block */

/* Block layouts, bit-exact with ggml (all scale fields `d`, `m`, `dmin`, `s` are IEEE f16 bits). */
typedef struct { uint16_t d; uint8_t qs[QK / 2]; } block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[QK / 2]; } block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; } block_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[QK / 2]; } block_q5_1;
typedef struct { uint16_t d; int8_t qs[QK]; } block_q8_0;
typedef struct { uint16_t d, s; int8_t qs[QK]; } block_q8_1; /* s = d · Σ qs */
typedef struct { uint8_t scales[QK_K / 16]; uint8_t qs[QK_K / 4]; uint16_t d, dmin; } block_q2_K;
typedef struct { uint8_t hmask[QK_K / 8]; uint8_t qs[QK_K / 4]; uint8_t scales[12]; uint16_t d; } block_q3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[QK_K / 2]; } block_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[QK_K / 8]; uint8_t qs[QK_K / 2]; } block_q5_K;
typedef struct { uint8_t ql[QK_K / 2]; uint8_t qh[QK_K / 4]; int8_t scales[QK_K / 16]; uint16_t d; } block_q6_K;
typedef struct { float d; int8_t qs[QK_K]; int16_t bsums[QK_K / 16]; } block_q8_K; /* bsums: Σ of each 16 */

_Static_assert(sizeof(block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(block_q2_K) == 84, "q2_K");
_Static_assert(sizeof(block_q3_K) == 110, "q3_K");
_Static_assert(sizeof(block_q4_K) == 144, "q4_K");
_Static_assert(sizeof(block_q5_K) == 176, "q5_K");
_Static_assert(sizeof(block_q6_K) == 210, "q6_K");
_Static_assert(sizeof(block_q8_K) == 292, "q8_K");

static inline uint32_t lk_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float lk_f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* Exact f16 -> f32 (every f16 is representable as f32). */
static inline float lk_h2f(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0) {
        const float f = (float)man * 0x1p-24f; /* zero or subnormal */
        return sign ? -f : f;
    }
    if (exp == 31) return lk_f32_from_bits(sign | 0x7f800000u | (man << 13));
    return lk_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

/* f32 -> f16, round to nearest even, NaN stays NaN, overflow -> inf. The two float operations let the
 * FPU do the rounding: scaling by 2^112 then 2^-110 brings the value's significant bits into f16 range. */
static inline uint16_t lk_f2h(float f) {
    float base = (__builtin_fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f;
    const uint32_t w = lk_f32_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xff000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = lk_f32_from_bits((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = lk_f32_bits(base);
    const uint32_t exp_bits = (bits >> 13) & 0x00007c00u;
    const uint32_t mantissa_bits = bits & 0x00000fffu;
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (uint16_t)((sign >> 16) | (shl1_w > 0xff000000u ? 0x7e00u : nonsign));
}

static inline float lk_bf2f(uint16_t b) { return lk_f32_from_bits((uint32_t)b << 16); }

/* Q4_K / Q5_K: 6-bit scale and min of sub-block j (0..7) from the packed scales[12]. */
static inline void lk_get_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
        *mn = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

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
    /* optional, llama.cpp's orders (kernels_llama_order.c), chosen by lk_matmul_tensor: */
    lk_gemm_fn repack[LK_TYPE_COUNT]; /* tensors ggml repacks (row count a multiple of 8), any token count */
    lk_gemm_fn any_tokens[LK_TYPE_COUNT]; /* llama.cpp's order for plain tensors at any token count */
    lk_gemm_fn repack_id[LK_TYPE_COUNT]; /* the same through MUL_MAT_ID: one token at a time (its gemv) */
    lk_gemm_fn tiled[LK_TYPE_COUNT];  /* other tensors from LK_TILED_MIN_TOKENS tokens */
    int gemm_min_tokens[LK_TYPE_COUNT]; /* 0: LK_GEMM_MIN_TOKENS; else from this many tokens */
    lk_quant_fn quantize[LK_TYPE_COUNT]; /* for activation types Q8_0, Q8_1, Q8_K */
    void (*f16_to_f32)(const uint16_t *src, float *dst, int64_t n);
    void (*f32_to_f16)(const float *src, uint16_t *dst, int64_t n);
    float (*stream_sum)(const float *x, int64_t n); /* memory-bandwidth probe */
    double (*softmax_exp)(const float *x, float *y, int64_t n, float max); /* see lk_softmax_exp */
    void (*silu)(const float *x, float *y, int64_t n); /* see lk_silu */
    /* optional, ggml_vec_dot_f16's order of this path's llama.cpp build (kernels_f16_ggml.c), rows from w */
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

/* Most tokens of a call that a table's few_tokens kernel takes (gemm from there on). */
enum { LK_FEW_MAX_TOKENS = 15 };

/* Each file fills the entries it implements (on top of the scalar ones). */
void lk_fill_scalar(lk_kernel_table *t);
void lk_fill_avx2(lk_kernel_table *t);
void lk_fill_avx512(lk_kernel_table *t, int use_vnni);
void lk_fill_avx512_matvec(lk_kernel_table *t); /* VNNI only */
void lk_fill_avx512_gemm(lk_kernel_table *t);   /* VNNI only */
void lk_fill_kquant_vnni(lk_kernel_table *t);   /* VNNI only: Q4_K, Q5_K, Q6_K matvec + gemm (kernels_kquant_vnni.c) */
void lk_fill_avx512_fewtokens(lk_kernel_table *t); /* VNNI only: Q4_0, Q8_0, Q6_K × 2..15 tokens */
void lk_fill_neon(lk_kernel_table *t);
void lk_fill_llama_order_avx2(lk_kernel_table *t);
void lk_fill_llama_order_avx512(lk_kernel_table *t); /* VNNI only */
void lk_fill_avx2_gemm(lk_kernel_table *t); /* AVX2 only: equal to the AVX2 row kernels, not the AVX-512 ones */
void lk_fill_q4_0(lk_kernel_table *t, int vnni); /* x86 Q4_0 in llama.cpp's order (kernels_q4_0.c) */
void lk_fill_f16_ggml(lk_kernel_table *t, int isa); /* LK_ISA_AVX2, LK_ISA_AVX512(_NOVNNI) */
void lk_fill_bf16_ggml(lk_kernel_table *t); /* AVX-512 tables, on CPUs with AVX512-BF16 */
const lk_kernel_table *lk_kernels(void);

/* llama.cpp's repacked Q4_K / tiled Q6_K orders on the AVX2 row kernels (the AVX-512 path's fallbacks below
 * its tiles); kernels_llama_order.c. */
int lk_repack_q4_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                        float *y, int64_t ys, int64_t row_begin, int64_t row_end);
int lk_repack_id_q4_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                           float *y, int64_t ys, int64_t row_begin, int64_t row_end);
int lk_tiled_q4_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                       float *y, int64_t ys, int64_t row_begin, int64_t row_end);
int lk_tiled_q6_K_avx2(int64_t cols, const void *w, size_t wrb, const void *x, size_t xrb, int64_t n_tokens,
                       float *y, int64_t ys, int64_t row_begin, int64_t row_end);

/* AVX2 row kernels of the 32-block types (used for the odd last block of the AVX-512 kernels). */
void lk_avx2_rows(int type, int64_t n, const void *w, const void *x, size_t xs, float *s, int nt);

/* Scalar reference routines used by other paths for tails and unimplemented types. */
void lk_quantize_row_q8_0_ref(const float *x, void *y, int64_t n);
void lk_quantize_row_q8_1_ref(const float *x, void *y, int64_t n);
void lk_quantize_row_q8_K_ref(const float *x, void *y, int64_t n);

#endif

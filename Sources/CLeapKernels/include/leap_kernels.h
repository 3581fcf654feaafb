/* Hot numeric kernels (C with intrinsics, runtime CPU dispatch). Internal: not part of the public ABI.
 *
 * This header is the kernel API: Swift code calls its lk_* functions directly (import CLeapKernels). The Swift
 * module LeapKernels adds only what C cannot express (WeightMatrix, ThreadPool and the pool-parallel matmul,
 * the encoder layers, the packed matrices) and wraps no lk_* function one for one. Type facts (block sizes and
 * bytes) and the reference dequantization are defined here once; LeapGGUF uses them too.
 *
 * Map of Sources/CLeapKernels: a folder per ISA family, a file per concern inside it. Phases: decode = the
 * row kernels (dot, dot2, dot4: one token, and batches below a table's gemm threshold) and one-token matvec;
 * prefill = gemm over many tokens; few_tokens = 2..15 tokens.
 *   entry points   matmul.c   lk_matmul (the driver: few_tokens, gemm, else matvec / dot2 / dot4 / dot over row tiles),
 *                             lk_matmul_tensor, lk_vec_dot, lk_matvec_f16_ggml(_multi), lk_stream_sum
 *                  convert.c  f16 rows, lk_dequantize_row, the activation quantizers, BF16 rounding
 *                  ops.c      norms, RoPE, softmax, activations, element-wise ops
 *                  rows8.c    the 8-row layout (LK_ROWS8): packing and reading rows back out
 *   generic/       scalar.c: the reference of every entry (all types; quantize, dequantize, ...); table.c:
 *                  the scalar table
 *   x86/avx2/      decode.c (row kernels, Q8 quantizers, f16 rows, softmax, SiLU), prefill.c (gemm of Q4_1,
 *                  Q5_0, Q5_1, Q8_0), kquant.c (Q4_K, Q5_K, Q6_K matvec and gemm of their own order),
 *                  fewtokens.c (Q4_0, Q5_K, Q6_K × 2..15 tokens; Q4_0's matvec and 8-row layout),
 *                  rows8_q4_1_q5.c (Q4_1, Q5_0, Q5_1 in the 8-row layout, every token count, an order of
 *                  their own), q8_0.c (Q8_0 in its gemm's order at every batch size), table.c (the AVX2 table)
 *   x86/avx2/avx_vnni/  those files built again for AVX2 CPUs with AVX-VNNI (lk_avx_vnni.h): the AVX-VNNI table
 *   x86/avx512/    decode.c (Q6_K rows; VNNI matvec of Q4_1, Q5_0, Q5_1), prefill.c (VNNI gemm of Q4_1,
 *                  Q5_0, Q5_1, F16, F32), kquant.c (VNNI K-quants, both layouts), fewtokens.c (VNNI Q4_0,
 *                  Q6_K × 2..15 tokens; Q4_0 / Q8_0 8-row layout), bf16_ggml.c (BF16 in llama.cpp's order,
 *                  AVX512-BF16), table.c (the AVX-512 tables, with and without VNNI)
 *   x86/amx/       prefill.c (Q4_0, Q8_0, K-quants from 16 tokens on the INT8 tile unit), table.c
 *   x86/           q4_0.c (Q4_0 in llama.cpp's repacked order, AVX2 and AVX-512 VNNI), f16_ggml.c
 *                  (ggml_vec_dot_f16's order, one-token F16 attention), the shared x86 headers
 *   reference/     llama.cpp's K-quant orders (repacked / tiled Q4_K, tiled Q6_K on the AVX2 row kernels) and
 *                  the llama-order table: a test and debug table that proves bit-exactness, never the best
 *   arm/           arm64, one table per level (ARMv8.0 NEON < + dotprod < + i8mm), each file compiled for its
 *                  level by target attributes, so one ARMv8.0 build runs on every arm64 CPU (features.c:
 *                  getauxval hardware caps): neon.c (F32/F16/BF16 dots, two-stream matvec and token tiles,
 *                  Q8 quantizers, f16 rows, softmax, SiLU), low_bit_kquants.c (Q2_K, Q3_K, built for ARMv8.0
 *                  and as dotprod/low_bit_kquants.c; token_tiles.h: the entries it shares with neon.c;
 *                  dotprod_target.h: the dotprod builds' target pragmas), quant_rows.c (the quantized types' dot, dot2, dot4, two-stream matvec, 2..15-token
 *                  tiles and gemm in one order: the bits of a token alone at every token count; built for
 *                  ARMv8.0 and again as dotprod/quant_rows.c, sdot, where the 32-block types and the
 *                  K-quants take 4-row tiles with the rows in the lanes), rows8.c (Q4_0, Q8_0 in the 8-row
 *                  layout on sdot, every token count: the dotprod table's), rows8_kquant.c (Q4_K, Q6_K the
 *                  same; one token on the i8mm table too), i8mm.c (Q4_0, Q8_0 from 2 tokens on smmla tiles,
 *                  in both layouts, the same bits), i8mm_kquant.c (Q4_K, Q5_K, Q6_K likewise, Q4_K and Q6_K
 *                  in both layouts;
 *                  kquant_blocks.h: the K-quant unpacking both levels share), table.c (the three tables)
 *   other          pool.c (thread pool and per-thread scratch)
 * Dispatch: each kernel file lists its kernels (an lk_kernel_list) and each ISA's table is one declarative
 * spec in its folder's table.c that names, for every type, the list serving each entry (format:
 * lk_tables.h); dispatch.c builds the run-time tables from the specs once and chooses the one in effect:
 * the best the CPU can run unless LEAP_KERNEL_ISA=scalar|avx2|avx-vnni|avx512|avx512-novnni|amx|neon|neon-dotprod|neon-i8mm|llama-order
 * (read once), lk_set_isa or lk_set_thread_isa choose another; pool workers take their caller's.
 * scripts/kernels/print-dispatch.sh prints which kernel serves each (ISA, type, layout, token count); its
 * output is in BENCHMARKS.md ("Kernel dispatch"). CPU features: features.c. Type facts: types.c (block sizes
 * and bytes, row bytes, activation types) and lk_types.h (ggml block layouts, f16 / bf16 values, block
 * loads). Scratch: lk_scratch (leap_kernel_support.h, pool.c), one 64-byte aligned buffer per thread, grown on
 * demand, freed at thread exit. Kernel files of other targets use this header and leap_kernel_support.h only.
 * The media kernels (the audio FFT / FIR; the vision encoders' vision_gemm.c, vision_kernels.c,
 * vision_q8_gemm.c) are a target of their own, CLeapMediaKernels.
 *
 * Types are ggml type ids (LK_TYPE_*); block layouts are bit-exact with ggml (see lk_types.h).
 * Every kernel has a portable scalar path (the reference) and optional AVX2 / AVX-512 / NEON paths,
 * chosen once at startup from the CPU features; lk_set_isa() forces a path for tests and benchmarks.
 *
 * Weight matrices: row r (one output neuron) is `cols` elements of `type`, stored at w + r * w_row_bytes.
 * Activations are first converted with lk_quantize_row() to lk_activation_type(type) (ggml's
 * vec_dot_type: Q8_0, Q8_1 or Q8_K blocks, or plain F32 for F32/F16/BF16 weights), then multiplied. */
#ifndef LEAP_KERNELS_H
#define LEAP_KERNELS_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    LK_TYPE_F32 = 0,
    LK_TYPE_F16 = 1,
    LK_TYPE_Q4_0 = 2,
    LK_TYPE_Q4_1 = 3,
    LK_TYPE_Q5_0 = 6,
    LK_TYPE_Q5_1 = 7,
    LK_TYPE_Q8_0 = 8,
    LK_TYPE_Q8_1 = 9,
    LK_TYPE_Q2_K = 10,
    LK_TYPE_Q3_K = 11,
    LK_TYPE_Q4_K = 12,
    LK_TYPE_Q5_K = 13,
    LK_TYPE_Q6_K = 14,
    LK_TYPE_Q8_K = 15,
    LK_TYPE_BF16 = 30,
    LK_TYPE_COUNT = 31 /* table size (ids < 31) */
};

/* ---- CPU dispatch ---------------------------------------------------------------------------- */
enum {
    LK_ISA_SCALAR = 0, /* portable C, the reference */
    LK_ISA_AVX2 = 1,   /* AVX2 + FMA + F16C */
    LK_ISA_AVX512 = 2, /* AVX-512 F/BW/VL (+ VNNI vpdpbusd when the CPU has it) */
    LK_ISA_NEON = 3,   /* aarch64 ARMv8.0 NEON (every arm64 CPU: Cortex-A53, A72) */
    LK_ISA_AVX512_NOVNNI = 4, /* the table of AVX-512 without VNNI, even if VNNI is present (to test that variant) */
    LK_ISA_AVX512_AMX = 5, /* AVX-512 VNNI, prefill on the AMX tile unit (AMX-INT8) */
    LK_ISA_LLAMA_ORDER = 6, /* with AVX-512: every product in llama.cpp's order (its repacked Q4_0 / Q4_K, tiled
                               Q6_K, ggml's vec_dot for the rest), the proof of bit-exactness; never the best */
    LK_ISA_AVX_VNNI = 7, /* AVX2 + FMA + F16C with AVX-VNNI (VEX vpdpbusd), no AVX-512: the AVX2 table's kernels
                            with their integer products on vpdpbusd, the same bits */
    LK_ISA_NEON_DOTPROD = 8, /* aarch64 NEON + the dot-product instructions (sdot; Cortex-A76, Neoverse-N1) */
    LK_ISA_NEON_I8MM = 9, /* aarch64 NEON + dotprod + the int8 matrix multiply (smmla; Neoverse-V1/N2, Cortex-X2) */
    LK_ISA_COUNT = 10
};

/* Bit set of LK_CPU_* features detected on this CPU. */
enum { LK_CPU_AVX2 = 1, LK_CPU_FMA = 2, LK_CPU_F16C = 4, LK_CPU_AVX512 = 8, LK_CPU_AVX512VNNI = 16, LK_CPU_NEON = 32,
       LK_CPU_AVX512BF16 = 64, LK_CPU_AMX = 128 /* AMX-TILE + AMX-INT8, granted by the kernel */,
       LK_CPU_AVXVNNI = 256 /* AVX-VNNI: vpdpbusd on ymm registers, VEX-encoded */,
       /* aarch64, from the kernel's hardware capabilities (getauxval AT_HWCAP / AT_HWCAP2) */
       LK_CPU_DOTPROD = 512, LK_CPU_I8MM = 1024, LK_CPU_FP16 = 2048 /* half-precision arithmetic */,
       LK_CPU_BF16 = 4096, LK_CPU_SVE = 8192 };
uint32_t lk_cpu_features(void);
/* 1 when `isa` can run on this CPU (LK_ISA_SCALAR always can). */
int lk_isa_available(int isa);
/* The best available path (what is used unless lk_set_isa overrides it). */
int lk_best_isa(void);
/* Forces a path for all later calls (process-wide; tests and benchmarks only). Returns 0 if `isa` is not
 * available on this CPU (the selection is then unchanged), 1 on success. */
int lk_set_isa(int isa);
/* Per-thread override (for tests running in parallel): -1 clears it. Pool runs inherit the caller's
 * effective path. Returns 0 if `isa` is not available. */
int lk_set_thread_isa(int isa);
/* The path in effect on this thread. */
int lk_get_isa(void);
/* "scalar", "avx2", "avx512", "avx512-vnni", "neon", "avx512-novnni", "avx512-amx", "llama-order", "avx-vnni",
 * "neon-dotprod", "neon-i8mm" */
const char *lk_isa_name(int isa);

/* ---- types ----------------------------------------------------------------------------------- */
/* 1 when weights of `type` are supported by dequantize/matvec/matmul. */
int lk_type_supported(int type);
int64_t lk_block_size(int type);
size_t lk_block_bytes(int type);
/* Bytes of a row of n elements (n must be a multiple of the block size). */
size_t lk_row_bytes(int type, int64_t n);
/* The activation format weights of `type` are multiplied with: LK_TYPE_F32, Q8_0, Q8_1 or Q8_K. */
int lk_activation_type(int type);

/* ---- conversions ----------------------------------------------------------------------------- */
float lk_f16_to_f32(uint16_t h);
uint16_t lk_f32_to_f16(float f); /* round to nearest even */
void lk_f16_to_f32_row(const uint16_t *src, float *dst, int64_t n);
void lk_f32_to_f16_row(const float *src, uint16_t *dst, int64_t n);
/* dst[i] = src[i] rounded to BF16 as ggml does (nearest even), as floats: the activations of BF16 weights.
 * dst may be src. */
void lk_round_bf16_row(const float *src, float *dst, int64_t n);

/* dst[n] = src row of `type` (n a multiple of the block size). */
void lk_dequantize_row(int type, const void *src, float *dst, int64_t n);

/* Activation quantizers (ggml semantics; n a multiple of 32, or of 256 for Q8_K). */
void lk_quantize_row_q8_0(const float *x, void *y, int64_t n);
void lk_quantize_row_q8_1(const float *x, void *y, int64_t n);
void lk_quantize_row_q8_K(const float *x, void *y, int64_t n);
/* Converts x[n] to `act_type` (a value returned by lk_activation_type; F32 is a copy). */
void lk_quantize_row(int act_type, const float *x, void *y, int64_t n);

/* ---- products -------------------------------------------------------------------------------- */
/* Dot product of one weight row (n elements of `type`) with one activation row in
 * lk_activation_type(type) format. */
float lk_vec_dot(int type, int64_t n, const void *w, const void *x);

/* Y[t, r] = Σ_c W[r, c] · X[t, c] for t < n_tokens and row_begin <= r < row_end.
 * w: row r at w + r * w_row_bytes (row_bytes >= lk_row_bytes(type, cols)).
 * x: activations already converted by lk_quantize_row, token t at x + t * x_row_bytes.
 * y: float, Y[t, r] at y[t * y_row_stride + r]. Rows are independent, so threads split [0, rows). */
void lk_matmul(int type, const void *w, size_t w_row_bytes, int64_t cols, const void *x, size_t x_row_bytes,
               int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end);

/* How llama.cpp's x86 CPU backend holds a weight tensor, which decides its summation order. */
enum {
    LK_LLAMA_PLAIN = 0,       /* not repacked: Q6_K, Q4_K whose row count is not a multiple of 8, ... */
    LK_LLAMA_REPACKED = 1,    /* repacked into 8-row blocks (Q4_K, row count a multiple of 8; a tied output is a
                               * repacked duplicate of the embedding there), multiplied by MUL_MAT */
    LK_LLAMA_REPACKED_ID = 2  /* the same, an expert of a stacked tensor multiplied by MUL_MAT_ID */
};

/* Flag or'ed onto a layout: the weights are in the 8-row layout of lk_rows8_pack, not row after row. */
enum { LK_ROWS8 = 0x100 };

/* The 8-row layout (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K): rows in groups of 8; group g (rows
 * 8g..8g+7) takes the bytes of its rows at w + 8g·w_row_bytes. The 32-element blocks: for each block b, 4
 * (Q4_0, Q4_1), 5 (Q5_0, Q5_1: the fifth bits, then the nibbles) or 8 (Q8_0) vectors of 32 bytes at 32·v·b
 * (v vectors a block), vector k holding bytes 4k..4k+3 of each row's quant bytes (row r in bytes 4r..4r+3);
 * after all the vectors, the 8 rows' f16 scales of each block (16 bytes a block; Q4_1 / Q5_1: the 8 scales,
 * then the 8 mins, 32 bytes a block). K-quants:
 * for each block, 32 (Q4_K: the nibbles), 40 (Q5_K: the fifth bits, then the nibbles) or 48 (Q6_K: the low
 * nibbles, then the high bits) such vectors, then 4 of the rows' head words in the same way (Q4_K / Q5_K: d
 * and dmin, then the 12 bytes of packed scales and mins; Q6_K: the 16 scales), then (Q6_K) the 8 f16 d. A group
 * takes the bytes of its 8 rows, so rows r0.. (r0 a multiple of 8) start at w + r0·w_row_bytes as before. The
 * kernels read it without transposing or gathering anything; Q4_0 / Q8_0 products are those of the row
 * layout bit for bit, the K-quants' those of the AVX-512 VNNI gemm at every batch size (the row layout's from
 * 8 tokens on that path, Q6_K from 16), Q4_1 / Q5_0 / Q5_1's on AVX2 those of one order of their own at every
 * batch size (x86/avx2/rows8_q4_1_q5.c; within float rounding of the row layout's); paths without kernels for
 * the layout copy rows back out: the row layout's bits.
 *
 * 1 when this thread's path multiplies `type` faster in the 8-row layout (the caller may then pack). */
int lk_rows8_preferred(int type);
/* dst (rows·w_row_bytes bytes, not overlapping w) = the rows8 layout of w's rows; rows a multiple of 8,
 * cols <= 32768, w_row_bytes = lk_row_bytes(type, cols). Returns 0 (nothing written) for another type or shape. */
int lk_rows8_pack(int type, const void *w, size_t w_row_bytes, int64_t rows, int64_t cols, void *dst);
/* dst (lk_row_bytes(type, cols) bytes) = row r of weights in the rows8 layout, row after row again. */
void lk_rows8_row(int type, const void *w, size_t w_row_bytes, int64_t cols, int64_t r, void *dst);

/* lk_matmul in the summation order llama.cpp's x86 CPU backend uses for this tensor (`layout`, LK_LLAMA_*)
 * and batch, where this path implements it (AVX2 and AVX-512): repacked Q4_K goes in 4-token groups from the
 * first token of the call and one by one for the rest (MUL_MAT_ID: one by one throughout); plain Q6_K and
 * Q4_K in its tiled order from 8 tokens. Otherwise lk_matmul's order. A token's result then depends on its
 * place in the batch and the batch size, as in llama.cpp; callers pass whole batches (an expert's whole group
 * of tokens; row ranges may be split across threads). With LK_ROWS8 in `layout` the weights are in that
 * layout and row_begin, row_end are multiples of 8 (the results: see LK_ROWS8). */
void lk_matmul_tensor(int type, int layout, const void *w, size_t w_row_bytes, int64_t cols, const void *x,
                      size_t x_row_bytes, int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin,
                      int64_t row_end);

/* One token's y[r] = Σ_c W[r, c] · x[c] for row_begin <= r < row_end, W in F16 (row r at w + r * w_row_bytes,
 * cols elements) and x floats that are F16 values (ggml converts them to F16), in the summation order of
 * ggml_vec_dot_f16 in llama.cpp's AVX-512 build (4 x 16 lanes, its reduction, the leftovers in double; the
 * AVX2 path computes the same with 8-lane halves; see x86/f16_ggml.c): llama.cpp's one-token attention. Each row
 * counts as n_padded >= cols long with zeros beyond cols (not read): llama.cpp's padded KV length. Paths
 * without that order (scalar, NEON) use lk_matmul's. */
void lk_matvec_f16_ggml(const uint16_t *w, size_t w_row_bytes, int64_t cols, int64_t n_padded, const float *x,
                        float *y, int64_t row_begin, int64_t row_end);
/* lk_matvec_f16_ggml for nx vectors against the same rows: y[i·y_stride + r] = row r · x[i·x_stride ..], each
 * (row, vector) with lk_matvec_f16_ggml's operations (the same bits), the rows read from memory once for all
 * the vectors (a few rows at a time, kept in L1 while every vector passes): one token's attention heads that
 * share a KV head. */
void lk_matvec_f16_ggml_multi(const uint16_t *w, size_t w_row_bytes, int64_t cols, int64_t n_padded, const float *x,
                              int64_t x_stride, int64_t nx, float *y, int64_t y_stride, int64_t row_begin, int64_t row_end);

/* Σ x[n] with the widest loads available: a streaming-read probe for measuring memory bandwidth. */
float lk_stream_sum(const float *x, int64_t n);

/* ---- element-wise and normalisation ops (float) ---------------------------------------------- */
/* y[n] = x / sqrt(mean(x²) + eps) * weight (weight may be NULL = 1). y may alias x. */
void lk_rms_norm(const float *x, const float *weight, float *y, int64_t n, float eps);
enum { LK_ROPE_NORM = 0, LK_ROPE_NEOX = 2 }; /* ggml's mode values */
/* Rotates the first n_rot dims of each of n_heads heads (head h at x + h * head_stride, in place) of one
 * token at position pos: θ_i = pos · freq_scale · base^(−2i/n_rot). NORM pairs (2i, 2i+1), NEOX (i, i+n_rot/2). */
void lk_rope(float *x, int64_t n_heads, int64_t head_stride, int64_t n_rot, int mode, float pos, float base,
             float freq_scale);
/* Rotates the first n_rot dims of each head in place by precomputed angles, cs = [cos θ_0, sin θ_0, cos θ_1,
 * ...] (n_rot/2 pairs): llama.cpp's rotation arithmetic bit for bit (see ops.c). */
void lk_rope_rotate(float *x, int64_t n_heads, int64_t head_stride, int64_t n_rot, int mode, const float *cs);
/* y[i] += u[i] · w[i · w_stride] with one rounding (fused multiply-add), i < n. */
void lk_fma_strided(float *y, const float *u, const float *w, int64_t w_stride, int64_t n);
void lk_softmax(float *x, int64_t n); /* in place, numerically stable */
/* The exponentials of llama.cpp's CPU softmax, bit for bit: y[i] = exp(x[i] - max) with ggml's vectorised
 * expf, returns their sum accumulated like ggml (float sums of 16-element chunks, from x[0], added in
 * double). Attention probabilities are then rounded to F16, so an ulp here flips roundings there. */
double lk_softmax_exp(const float *x, float *y, int64_t n, float max);
void lk_silu(const float *x, float *y, int64_t n);
void lk_gelu_tanh(const float *x, float *y, int64_t n);
/* Exact GELU: y = 0.5 x (1 + erf(x / sqrt 2)). y may alias x. */
void lk_gelu_erf(const float *x, float *y, int64_t n);
/* LayerNorm in ggml's arithmetic (mean and variance summed in double, then y·weight, then +bias, each
 * rounded): y[n] = (x - mean) / sqrt(var + eps) · weight + bias. weight / bias may be NULL. y may alias x. */
void lk_layer_norm(const float *x, const float *weight, const float *bias, float *y, int64_t n, float eps);
void lk_mul(const float *a, const float *b, float *y, int64_t n);
/* y[n] = gelu(g) · u with gelu looked up by the f16 bits of g in `table` (65536 floats, ggml's GELU table;
 * g beyond ±10 gives 0 / g). y may alias g or u. */
void lk_gelu_table_mul(const float *table, const float *g, const float *u, float *y, int64_t n);
void lk_add(const float *a, const float *b, float *y, int64_t n);
void lk_scale(const float *x, float s, float *y, int64_t n);
/* x[i] *= s in place; returns the largest product (-inf when n = 0; NaNs skipped): attention scores and their max. */
float lk_scale_max(float *x, float s, int64_t n);
/* y[n] += a · v[n] with v in F16 (softmax(P)·V over an F16 value cache). */
void lk_axpy_f16(int64_t n, float a, const uint16_t *v, float *y);

/* ---- thread pool ----------------------------------------------------------------------------- */
/* Persistent workers; lk_pool_run executes fn(ctx, task, thread) for task in [0, n_tasks) on the caller
 * plus the n_threads − 1 workers and returns when all tasks are done. Workers spin briefly, then sleep on a
 * futex. A run started while another is in progress (from a task, or from a second thread) runs all its
 * tasks inline on its caller with thread index 0 instead of corrupting the pool. */
typedef struct lk_pool lk_pool;
typedef void (*lk_task_fn)(void *ctx, int32_t task, int32_t thread);
lk_pool *lk_pool_create(int32_t n_threads); /* NULL on failure */
void lk_pool_free(lk_pool *pool);
int32_t lk_pool_threads(const lk_pool *pool);
/* CPU time the workers (not the callers) have used since they started, in ns. */
int64_t lk_pool_worker_cpu_ns(const lk_pool *pool);
void lk_pool_run(lk_pool *pool, lk_task_fn fn, void *ctx, int32_t n_tasks);
/* Physical cores available to this process (≥ 1). */
int32_t lk_physical_cores(void);

#ifdef __cplusplus
}
#endif
#endif

/* CPU feature detection, the cached dispatch table per ISA, type information and the matmul driver. */
#include "lk_internal.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static uint32_t detect_cpu_features(void) {
    uint32_t f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) f |= LK_CPU_AVX2;
    if (__builtin_cpu_supports("fma")) f |= LK_CPU_FMA;
    /* F16C has no __builtin_cpu_supports name in older compilers: cpuid leaf 1, ecx bit 29. */
    {
        unsigned a, b, c, d;
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
        if (c & (1u << 29)) f |= LK_CPU_F16C;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        f |= LK_CPU_AVX512;
    if ((f & LK_CPU_AVX512) && __builtin_cpu_supports("avx512vnni")) f |= LK_CPU_AVX512VNNI;
    if ((f & LK_CPU_AVX512) && __builtin_cpu_supports("avx512bf16")) f |= LK_CPU_AVX512BF16;
#elif defined(__aarch64__)
    f |= LK_CPU_NEON;
#endif
    return f;
}

/* Detected once: ops call this per row, and cpuid in a virtual machine traps to the hypervisor (2% of an
 * LFM2 prefill's time when it was not cached). Bit 31 marks the value as set. */
uint32_t lk_cpu_features(void) {
    static atomic_uint cached = 0;
    uint32_t f = atomic_load_explicit(&cached, memory_order_relaxed);
    if (!f) {
        f = detect_cpu_features() | 0x80000000u;
        atomic_store_explicit(&cached, f, memory_order_relaxed);
    }
    return f & 0x7fffffffu;
}

int lk_isa_available(int isa) {
    const uint32_t f = lk_cpu_features();
    switch (isa) {
    case LK_ISA_SCALAR: return 1;
    case LK_ISA_AVX2: return (f & (LK_CPU_AVX2 | LK_CPU_FMA | LK_CPU_F16C)) == (LK_CPU_AVX2 | LK_CPU_FMA | LK_CPU_F16C);
    case LK_ISA_AVX512: return lk_isa_available(LK_ISA_AVX2) && (f & LK_CPU_AVX512);
    case LK_ISA_NEON: return (f & LK_CPU_NEON) != 0;
    case LK_ISA_AVX512_NOVNNI: return lk_isa_available(LK_ISA_AVX512);
    default: return 0;
    }
}

int lk_best_isa(void) {
    if (lk_isa_available(LK_ISA_AVX512)) return LK_ISA_AVX512;
    if (lk_isa_available(LK_ISA_AVX2)) return LK_ISA_AVX2;
    if (lk_isa_available(LK_ISA_NEON)) return LK_ISA_NEON;
    return LK_ISA_SCALAR;
}

const char *lk_isa_name(int isa) {
    switch (isa) {
    case LK_ISA_SCALAR: return "scalar";
    case LK_ISA_AVX2: return "avx2";
    case LK_ISA_AVX512: return (lk_cpu_features() & LK_CPU_AVX512VNNI) ? "avx512-vnni" : "avx512";
    case LK_ISA_NEON: return "neon";
    case LK_ISA_AVX512_NOVNNI: return "avx512-novnni";
    default: return "unknown";
    }
}

/* One table per ISA, built once; each layers its entries over the one below (scalar < avx2 < avx512). */
static lk_kernel_table tables[LK_ISA_COUNT];
static atomic_int current_isa = -1;
static atomic_int tables_ready = 0;
static _Thread_local int thread_isa = -1;

static void build_tables(void) {
    lk_fill_scalar(&tables[LK_ISA_SCALAR]);
    tables[LK_ISA_AVX2] = tables[LK_ISA_SCALAR];
    tables[LK_ISA_NEON] = tables[LK_ISA_SCALAR];
    if (lk_isa_available(LK_ISA_AVX2)) {
        lk_fill_avx2(&tables[LK_ISA_AVX2]);
        lk_fill_llama_order_avx2(&tables[LK_ISA_AVX2]);
        lk_fill_f16_ggml(&tables[LK_ISA_AVX2], LK_ISA_AVX2);
    }
    tables[LK_ISA_AVX512] = tables[LK_ISA_AVX2];
    tables[LK_ISA_AVX512_NOVNNI] = tables[LK_ISA_AVX2];
    if (lk_isa_available(LK_ISA_AVX2)) lk_fill_avx2_gemm(&tables[LK_ISA_AVX2]);
    if (lk_isa_available(LK_ISA_AVX512)) {
        lk_fill_avx512(&tables[LK_ISA_AVX512], 1);
        if (lk_cpu_features() & LK_CPU_AVX512VNNI) {
            lk_fill_llama_order_avx512(&tables[LK_ISA_AVX512]);
            lk_fill_kquant_vnni(&tables[LK_ISA_AVX512]); /* replaces the llama.cpp-order K-quant entries */
        }
        lk_fill_avx512(&tables[LK_ISA_AVX512_NOVNNI], 0);
        lk_fill_f16_ggml(&tables[LK_ISA_AVX512], LK_ISA_AVX512);
        lk_fill_f16_ggml(&tables[LK_ISA_AVX512_NOVNNI], LK_ISA_AVX512_NOVNNI);
        if (lk_cpu_features() & LK_CPU_AVX512BF16) {
            lk_fill_bf16_ggml(&tables[LK_ISA_AVX512]);
            lk_fill_bf16_ggml(&tables[LK_ISA_AVX512_NOVNNI]);
        }
    }
    if (lk_isa_available(LK_ISA_NEON)) lk_fill_neon(&tables[LK_ISA_NEON]);
    /* Q4_0 follows llama.cpp's repacked kernels on every x86 SIMD path (replaces the entries above) */
    if (lk_isa_available(LK_ISA_AVX2)) lk_fill_q4_0(&tables[LK_ISA_AVX2], 0);
    if (lk_isa_available(LK_ISA_AVX512)) {
        lk_fill_q4_0(&tables[LK_ISA_AVX512_NOVNNI], 0);
        lk_fill_q4_0(&tables[LK_ISA_AVX512], (lk_cpu_features() & LK_CPU_AVX512VNNI) != 0);
        if (lk_cpu_features() & LK_CPU_AVX512VNNI) lk_fill_avx512_fewtokens(&tables[LK_ISA_AVX512]);
    }
}

static void ensure_tables(void) {
    if (atomic_load_explicit(&tables_ready, memory_order_acquire) == 2) return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&tables_ready, &expected, 1)) {
        build_tables();
        int isa = lk_best_isa();
        /* LEAP_KERNEL_ISA=scalar|avx2|avx512|neon forces a path (when this CPU has it): for debugging
         * numerical differences and for measuring the fallbacks. */
        const char *forced = getenv("LEAP_KERNEL_ISA");
        if (forced) {
            int want = !strcmp(forced, "scalar") ? LK_ISA_SCALAR : !strcmp(forced, "avx2") ? LK_ISA_AVX2
                     : !strcmp(forced, "avx512") ? LK_ISA_AVX512 : !strcmp(forced, "neon") ? LK_ISA_NEON : -1;
            if (want >= 0 && lk_isa_available(want)) isa = want;
        }
        atomic_store(&current_isa, isa);
        atomic_store_explicit(&tables_ready, 2, memory_order_release);
    } else {
        while (atomic_load_explicit(&tables_ready, memory_order_acquire) != 2) { }
    }
}

const lk_kernel_table *lk_kernels(void) {
    ensure_tables();
    const int isa = thread_isa >= 0 ? thread_isa : atomic_load_explicit(&current_isa, memory_order_relaxed);
    return &tables[isa];
}

int lk_set_isa(int isa) {
    ensure_tables();
    if (!lk_isa_available(isa)) return 0;
    atomic_store(&current_isa, isa);
    return 1;
}

int lk_set_thread_isa(int isa) {
    ensure_tables();
    if (isa < 0) { thread_isa = -1; return 1; }
    if (!lk_isa_available(isa)) return 0;
    thread_isa = isa;
    return 1;
}

int lk_get_isa(void) {
    ensure_tables();
    return thread_isa >= 0 ? thread_isa : atomic_load(&current_isa);
}

/* ---- types ---- */

int lk_type_supported(int type) {
    switch (type) {
    case LK_TYPE_F32: case LK_TYPE_F16: case LK_TYPE_BF16: case LK_TYPE_Q4_0: case LK_TYPE_Q4_1:
    case LK_TYPE_Q5_0: case LK_TYPE_Q5_1: case LK_TYPE_Q8_0: case LK_TYPE_Q2_K: case LK_TYPE_Q3_K:
    case LK_TYPE_Q4_K: case LK_TYPE_Q5_K: case LK_TYPE_Q6_K:
        return 1;
    default: return 0;
    }
}

int64_t lk_block_size(int type) {
    switch (type) {
    case LK_TYPE_F32: case LK_TYPE_F16: case LK_TYPE_BF16: return 1;
    case LK_TYPE_Q4_0: case LK_TYPE_Q4_1: case LK_TYPE_Q5_0: case LK_TYPE_Q5_1: case LK_TYPE_Q8_0: case LK_TYPE_Q8_1:
        return QK;
    case LK_TYPE_Q2_K: case LK_TYPE_Q3_K: case LK_TYPE_Q4_K: case LK_TYPE_Q5_K: case LK_TYPE_Q6_K: case LK_TYPE_Q8_K:
        return QK_K;
    default: return 0;
    }
}

size_t lk_block_bytes(int type) {
    switch (type) {
    case LK_TYPE_F32: return 4;
    case LK_TYPE_F16: case LK_TYPE_BF16: return 2;
    case LK_TYPE_Q4_0: return sizeof(block_q4_0);
    case LK_TYPE_Q4_1: return sizeof(block_q4_1);
    case LK_TYPE_Q5_0: return sizeof(block_q5_0);
    case LK_TYPE_Q5_1: return sizeof(block_q5_1);
    case LK_TYPE_Q8_0: return sizeof(block_q8_0);
    case LK_TYPE_Q8_1: return sizeof(block_q8_1);
    case LK_TYPE_Q2_K: return sizeof(block_q2_K);
    case LK_TYPE_Q3_K: return sizeof(block_q3_K);
    case LK_TYPE_Q4_K: return sizeof(block_q4_K);
    case LK_TYPE_Q5_K: return sizeof(block_q5_K);
    case LK_TYPE_Q6_K: return sizeof(block_q6_K);
    case LK_TYPE_Q8_K: return sizeof(block_q8_K);
    default: return 0;
    }
}

size_t lk_row_bytes(int type, int64_t n) {
    const int64_t bs = lk_block_size(type);
    return bs ? (size_t)(n / bs) * lk_block_bytes(type) : 0;
}

int lk_activation_type(int type) {
    switch (type) {
    case LK_TYPE_Q4_0: case LK_TYPE_Q5_0: case LK_TYPE_Q8_0: return LK_TYPE_Q8_0;
    case LK_TYPE_Q4_1: case LK_TYPE_Q5_1: return LK_TYPE_Q8_1;
    case LK_TYPE_Q2_K: case LK_TYPE_Q3_K: case LK_TYPE_Q4_K: case LK_TYPE_Q5_K: case LK_TYPE_Q6_K: return LK_TYPE_Q8_K;
    default: return LK_TYPE_F32;
    }
}

/* ---- conversions ---- */

float lk_f16_to_f32(uint16_t h) { return lk_h2f(h); }
uint16_t lk_f32_to_f16(float f) { return lk_f2h(f); }
void lk_f16_to_f32_row(const uint16_t *src, float *dst, int64_t n) { lk_kernels()->f16_to_f32(src, dst, n); }
void lk_f32_to_f16_row(const float *src, uint16_t *dst, int64_t n) { lk_kernels()->f32_to_f16(src, dst, n); }

/* ---- products ---- */

float lk_vec_dot(int type, int64_t n, const void *w, const void *x) {
    if (type < 0 || type >= LK_TYPE_COUNT) return 0.0f;
    const lk_dot_fn f = lk_kernels()->dot[type];
    return f ? f(n, w, x) : 0.0f;
}

/* Rows are processed in tiles of ROW_TILE so that the tile's weights stay in L1/L2 while every group of 4
 * tokens passes over them; dot4 unpacks each weight block once for 4 tokens. */
enum { ROW_TILE = 16 };
/* From this many tokens a table's gemm kernel (when it has one) does the whole call: it unpacks and
 * transposes each 16-row weight tile once per call, which costs about as much as 8 tokens' products. */
enum { LK_GEMM_MIN_TOKENS = 16 };

void lk_matmul(int type, const void *w, size_t w_row_bytes, int64_t cols, const void *x, size_t x_row_bytes,
               int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin, int64_t row_end) {
    if (type < 0 || type >= LK_TYPE_COUNT) return;
    const lk_kernel_table *k = lk_kernels();
    const lk_dot_fn dot = k->dot[type];
    const lk_dot4_fn dot4 = k->dot4[type];
    const lk_dot2_fn dot2 = k->dot2[type];
    if (!dot) return;
    const uint8_t *wb = w, *xb = x;
    if (n_tokens >= 2 && n_tokens <= LK_FEW_MAX_TOKENS && k->few_tokens[type] &&
        k->few_tokens[type](cols, w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end))
        return;
    const int gemm_min = k->gemm_min_tokens[type] ? k->gemm_min_tokens[type] : LK_GEMM_MIN_TOKENS;
    if (n_tokens >= gemm_min && k->gemm[type] &&
        k->gemm[type](cols, w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end))
        return;
    if (n_tokens == 1) {
        const lk_matvec_fn mv = k->matvec[type];
        if (mv && row_end > row_begin &&
            mv(cols, wb + (size_t)row_begin * w_row_bytes, w_row_bytes, xb, y + row_begin, row_end - row_begin))
            return;
        /* dot2 pairs row r with row r + half (not r + 1): two long sequential streams keep the hardware
         * prefetchers trained; adjacent-row pairs restart both streams every other row (2.5x slower from DRAM) */
        const int64_t half = dot2 ? (row_end - row_begin) / 2 : 0;
        for (int64_t i = 0; i < half; i++) {
            const int64_t r = row_begin + i;
            float s[8];
            dot2(cols, wb + (size_t)r * w_row_bytes, (size_t)half * w_row_bytes, xb, 0, 1, s);
            y[r] = s[0];
            y[r + half] = s[4];
        }
        for (int64_t r = row_begin + 2 * half; r < row_end; r++) y[r] = dot(cols, wb + (size_t)r * w_row_bytes, xb);
        return;
    }
    for (int64_t r0 = row_begin; r0 < row_end; r0 += ROW_TILE) {
        const int64_t r1 = r0 + ROW_TILE < row_end ? r0 + ROW_TILE : row_end;
        int64_t t = 0;
        if (dot4) {
            for (; t + 4 <= n_tokens; t += 4) {
                const uint8_t *xt = xb + (size_t)t * x_row_bytes;
                const int64_t half = dot2 ? (r1 - r0) / 2 : 0; /* row r pairs with r + half, as above */
                for (int64_t j = 0; j < half; j++) {
                    const int64_t r = r0 + j;
                    float s[8];
                    dot2(cols, wb + (size_t)r * w_row_bytes, (size_t)half * w_row_bytes, xt, x_row_bytes, 4, s);
                    for (int i = 0; i < 4; i++) {
                        y[(t + i) * y_row_stride + r] = s[i];
                        y[(t + i) * y_row_stride + r + half] = s[4 + i];
                    }
                }
                for (int64_t r = r0 + 2 * half; r < r1; r++) {
                    float s[4];
                    dot4(cols, wb + (size_t)r * w_row_bytes, xt, x_row_bytes, s);
                    for (int i = 0; i < 4; i++) y[(t + i) * y_row_stride + r] = s[i];
                }
            }
        }
        for (; t < n_tokens; t++) {
            const uint8_t *xt = xb + (size_t)t * x_row_bytes;
            for (int64_t r = r0; r < r1; r++) y[t * y_row_stride + r] = dot(cols, wb + (size_t)r * w_row_bytes, xt);
        }
    }
}

/* ggml's tiled K-quant matmul takes over from this many tokens (ggml_tiled_min_batch). */
enum { LK_TILED_MIN_TOKENS = 8 };

void lk_matmul_tensor(int type, int layout, const void *w, size_t w_row_bytes, int64_t cols, const void *x,
                      size_t x_row_bytes, int64_t n_tokens, float *y, int64_t y_row_stride, int64_t row_begin,
                      int64_t row_end) {
    if (type < 0 || type >= LK_TYPE_COUNT) return;
    const lk_kernel_table *k = lk_kernels();
    /* ggml repacks Q4_K (AVX2) when the row count is a multiple of 8 (ggml_repack_get_optimal_repack_type) */
    const lk_gemm_fn f = layout == LK_LLAMA_REPACKED && k->repack[type] ? k->repack[type]
                       : layout == LK_LLAMA_REPACKED_ID && k->repack_id[type] ? k->repack_id[type]
                       : k->any_tokens[type] ? k->any_tokens[type]
                       : n_tokens >= LK_TILED_MIN_TOKENS ? k->tiled[type] : NULL;
    if (f && f(cols, w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end)) return;
    lk_matmul(type, w, w_row_bytes, cols, x, x_row_bytes, n_tokens, y, y_row_stride, row_begin, row_end);
}

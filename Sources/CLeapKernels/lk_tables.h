/* The format of the kernel tables: what a kernel file implements, and which of those kernels each ISA's
 * table takes.
 *
 * A kernel file lists its kernels in one lk_kernel_list (LK_KERNELS): rows of (entry, type, function).
 * Each ISA has one table (an lk_table_spec, in its folder's table file), declarative: for every type, one
 * row naming the list that serves each entry of that type (the list must hold a kernel for that entry and
 * type). A type's row is everything the table does for that type: an entry the row leaves out is absent
 * (lk_matmul then goes on to the next entry of its chain, ending at dot), and nothing later replaces it.
 * A table may start from another (`base`): its rows then replace the base's rows of their types whole.
 * A row with `cpu` bits applies only on CPUs with those LK_CPU_* features, in place of the row of its type
 * above it (or the base's). tables.c builds every table once from its spec (lk_kernels) and prints which
 * kernel serves each (ISA, type, token count, layout): scripts/kernels/print-dispatch.sh.
 *
 *   LK_KERNELS(lk_avx2_q8_0,
 *       LK_KERNEL(LK_E_DOT, LK_TYPE_Q8_0, dot_q8_0),
 *       LK_KERNEL_FROM(LK_E_GEMM, LK_TYPE_Q8_0, gemm_q8_0, 16)); // a gemm that serves from 16 tokens
 *   static const lk_table_row rows[] = {
 *       {LK_TYPE_Q8_0, {[LK_E_DOT] = &lk_avx2_q8_0, [LK_E_GEMM] = &lk_avx2_q8_0, [LK_E_QUANTIZE] = &lk_avx2_decode}},
 *   };
 *   const lk_table_spec lk_table_avx2 = LK_TABLE("avx2", NULL, rows);
 */
#ifndef LK_TABLES_H
#define LK_TABLES_H
#include "lk_internal.h"

/* The entries of a table (lk_kernel_table's fields). Per type: */
enum {
    LK_E_DOT,          /* lk_dot_fn: one row with one token, the end of every chain */
    LK_E_DOT2,         /* lk_dot2_fn */
    LK_E_DOT4,         /* lk_dot4_fn */
    LK_E_MATVEC,       /* lk_matvec_fn: one token */
    LK_E_FEW_TOKENS,   /* lk_gemm_fn: 2..LK_FEW_MAX_TOKENS tokens */
    LK_E_GEMM,         /* lk_gemm_fn: from the kernel's min_tokens (0: LK_GEMM_MIN_TOKENS) */
    LK_E_REPACK,       /* lk_gemm_fn: llama.cpp's order for tensors it repacks (lk_matmul_tensor) */
    LK_E_REPACK_ID,    /* lk_gemm_fn: the same through MUL_MAT_ID */
    LK_E_ANY_TOKENS,   /* lk_gemm_fn: llama.cpp's order for plain tensors, any token count */
    LK_E_TILED,        /* lk_gemm_fn: llama.cpp's tiled order from LK_TILED_MIN_TOKENS tokens */
    LK_E_ROWS8,        /* lk_gemm_fn: weights in the LK_E_ROWS8 layout */
    LK_E_QUANTIZE,     /* lk_quant_fn: for the activation types Q8_0, Q8_1, Q8_K */
    LK_E_DEQUANTIZE,   /* every table's is the scalar reference's (generic/scalar.c) */
    LK_TYPE_ENTRIES,
    /* One per table (type LK_ANY): */
    LK_E_F16_TO_F32 = LK_TYPE_ENTRIES, LK_E_F32_TO_F16, LK_E_STREAM_SUM, LK_E_SOFTMAX_EXP, LK_E_SILU,
    LK_E_MATVEC_F16_GGML, /* ggml_vec_dot_f16's order of the ISA's llama.cpp build (optional) */
    LK_ENTRY_COUNT
};
enum { LK_ANY = LK_TYPE_COUNT }; /* the type of the per-table entries' row */

typedef void (*lk_any_fn)(void); /* a kernel of any entry's type, cast back by the table builder */
typedef struct {
    int entry, type;
    lk_any_fn fn;
    const char *name;
    int min_tokens; /* LK_E_GEMM: serves from this many tokens (0: LK_GEMM_MIN_TOKENS) */
} lk_kernel;
typedef struct {
    const char *name;
    const lk_kernel *kernels;
    int count;
} lk_kernel_list;

#define LK_KERNEL(ENTRY, TYPE, FN) {ENTRY, TYPE, (lk_any_fn)(FN), #FN, 0}
#define LK_KERNEL_FROM(ENTRY, TYPE, FN, MIN_TOKENS) {ENTRY, TYPE, (lk_any_fn)(FN), #FN, MIN_TOKENS}
#define LK_STR_(X) #X
#define LK_STR(X) LK_STR_(X)
/* The list NAME (an external name, which a second build of the file may rename) of a kernel file. */
#define LK_KERNELS(NAME, ...)                                                                                  \
    static const lk_kernel NAME##_kernels[] = {__VA_ARGS__};                                                  \
    const lk_kernel_list NAME = {LK_STR(NAME), NAME##_kernels, (int)(sizeof NAME##_kernels / sizeof NAME##_kernels[0])}
/* The list of a kernel file built for another architecture: no kernels. */
#define LK_NO_KERNELS(NAME) const lk_kernel_list NAME = {LK_STR(NAME), 0, 0}
/* Or, in a file whose list is the same on every architecture (arm/), a kernel built for another one: its
 * name without a function, so that its table's spec prints on any host (print-dispatch.sh). Such a table
 * never runs there: dispatch.c builds only the tables of ISAs the CPU has. */
#define LK_KERNEL_NAME(ENTRY, TYPE, FN) {ENTRY, TYPE, 0, #FN, 0}
#define LK_KERNEL_NAME_FROM(ENTRY, TYPE, FN, MIN_TOKENS) {ENTRY, TYPE, 0, #FN, MIN_TOKENS}
/* The arm64 files' kernels: the functions on aarch64, their names elsewhere */
#if defined(__aarch64__)
#define LK_ARM_KERNEL(ENTRY, TYPE, FN) LK_KERNEL(ENTRY, TYPE, FN)
#define LK_ARM_KERNEL_FROM(ENTRY, TYPE, FN, MIN_TOKENS) LK_KERNEL_FROM(ENTRY, TYPE, FN, MIN_TOKENS)
#else
#define LK_ARM_KERNEL(ENTRY, TYPE, FN) LK_KERNEL_NAME(ENTRY, TYPE, FN)
#define LK_ARM_KERNEL_FROM(ENTRY, TYPE, FN, MIN_TOKENS) LK_KERNEL_NAME_FROM(ENTRY, TYPE, FN, MIN_TOKENS)
#endif

typedef struct {
    int type;                                   /* LK_TYPE_*, or LK_ANY */
    const lk_kernel_list *from[LK_ENTRY_COUNT]; /* [entry]: the list whose kernel serves it; NULL: absent */
    uint32_t cpu;                               /* LK_CPU_* bits the row needs (0: none beyond the ISA's) */
} lk_table_row;
typedef struct lk_table_spec {
    const char *name;
    const struct lk_table_spec *base; /* rows of types this table does not list; NULL: none */
    const lk_table_row *rows;
    int count;
    /* Kernels that hand a call they decline to the base table's kernel of the same entry (AMX) learn it here */
    void (*link_base)(const lk_kernel_table *base);
} lk_table_spec;
#define LK_TABLE(NAME, BASE, ROWS) {NAME, BASE, ROWS, (int)(sizeof ROWS / sizeof ROWS[0]), 0}

/* Every kernel file's list (x86 lists are empty on other architectures) */
extern const lk_kernel_list lk_scalar;
extern const lk_kernel_list lk_avx2_decode, lk_avx2_fewtokens, lk_avx2_kquant, lk_avx2_prefill, lk_avx2_q8_0, lk_q4_0_avx2;
extern const lk_kernel_list lk_avx2_rows8_q4_1_q5, lk_avxvnni_rows8_q4_1_q5;
extern const lk_kernel_list lk_avxvnni_fewtokens, lk_avxvnni_kquant, lk_avxvnni_prefill, lk_avxvnni_q8_0, lk_q4_0_avxvnni;
extern const lk_kernel_list lk_avx512_decode, lk_avx512_prefill, lk_avx512_kquant, lk_avx512_fewtokens, lk_q4_0_avx512;
extern const lk_kernel_list lk_amx;
extern const lk_kernel_list lk_f16_ggml_avx2, lk_f16_ggml_avx512, lk_bf16_ggml, lk_llama_order_avx2;
/* arm64 (names only on other architectures) */
extern const lk_kernel_list lk_neon, lk_neon_quant, lk_neon_dotprod_quant, lk_neon_i8mm;
extern const lk_kernel_list lk_neon_dotprod_rows8, lk_neon_dotprod_rows8_kquant;
extern const lk_kernel_list lk_neon_low_kquants, lk_neon_dotprod_low_kquants;
extern const lk_kernel_list lk_neon_i8mm_kquant;
/* The AMX kernels' fallbacks: the base table's gemm and rows8 entries */
void lk_amx_link_base(const lk_kernel_table *base);

/* Every ISA's table */
extern const lk_table_spec lk_table_scalar, lk_table_neon, lk_table_neon_dotprod, lk_table_neon_i8mm, lk_table_avx2, lk_table_avxvnni, lk_table_avx512_vnni,
    lk_table_avx512_novnni, lk_table_amx, lk_table_llama_order;

#endif

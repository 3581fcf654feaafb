/* The dispatch tables: each ISA's run-time lk_kernel_table, built once from its declarative spec (the ISA
 * folders' table files, format in lk_tables.h), and the choice of the table in effect (best available,
 * LEAP_KERNEL_ISA, lk_set_isa, lk_set_thread_isa). lk_print_dispatch prints which kernel serves each (ISA,
 * type, token count, layout). */
#include "lk_dispatch.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A table and, for printing, the kernel behind each entry. */
typedef struct {
    lk_kernel_table t;
    const lk_kernel *src[LK_ENTRY_COUNT][LK_TYPE_COUNT + 1];
    const lk_kernel_list *list[LK_ENTRY_COUNT][LK_TYPE_COUNT + 1];
} built_table;

static built_table tables[LK_ISA_COUNT];
static atomic_int current_isa = -1;
static atomic_int tables_ready = 0;
static _Thread_local int thread_isa = -1;

/* The spec of each ISA's table on a CPU with `cpu` features (AVX-512 without VNNI: the AVX2 table's kernels). */
static const lk_table_spec *spec_of(int isa, uint32_t cpu) {
    switch (isa) {
    case LK_ISA_AVX2: return &lk_table_avx2;
    case LK_ISA_AVX_VNNI: return &lk_table_avxvnni;
    case LK_ISA_AVX512: return (cpu & LK_CPU_AVX512VNNI) ? &lk_table_avx512_vnni : &lk_table_avx512_novnni;
    case LK_ISA_AVX512_NOVNNI: return &lk_table_avx512_novnni;
    case LK_ISA_AVX512_AMX: return &lk_table_amx;
    case LK_ISA_LLAMA_ORDER: return &lk_table_llama_order;
    case LK_ISA_NEON: return &lk_table_neon;
    case LK_ISA_NEON_DOTPROD: return &lk_table_neon_dotprod;
    case LK_ISA_NEON_I8MM: return &lk_table_neon_i8mm;
    default: return &lk_table_scalar;
    }
}

static const lk_kernel *find_kernel(const lk_kernel_list *list, int entry, int type) {
    for (int i = 0; list && i < list->count; i++)
        if (list->kernels[i].entry == entry && list->kernels[i].type == type) return &list->kernels[i];
    return NULL;
}

static void set_entry(built_table *b, int entry, int type, const lk_kernel_list *list) {
    lk_kernel_table *t = &b->t;
    const lk_kernel *k = find_kernel(list, entry, type);
    const lk_any_fn f = k ? k->fn : NULL;
    b->src[entry][type] = k;
    b->list[entry][type] = k ? list : NULL;
    switch (entry) {
    case LK_E_DOT: t->dot[type] = (lk_dot_fn)f; break;
    case LK_E_DOT2: t->dot2[type] = (lk_dot2_fn)f; break;
    case LK_E_DOT4: t->dot4[type] = (lk_dot4_fn)f; break;
    case LK_E_MATVEC: t->matvec[type] = (lk_matvec_fn)f; break;
    case LK_E_FEW_TOKENS: t->few_tokens[type] = (lk_gemm_fn)f; break;
    case LK_E_GEMM: t->gemm[type] = (lk_gemm_fn)f, t->gemm_min_tokens[type] = k ? k->min_tokens : 0; break;
    case LK_E_REPACK: t->repack[type] = (lk_gemm_fn)f; break;
    case LK_E_REPACK_ID: t->repack_id[type] = (lk_gemm_fn)f; break;
    case LK_E_ANY_TOKENS: t->any_tokens[type] = (lk_gemm_fn)f; break;
    case LK_E_TILED: t->tiled[type] = (lk_gemm_fn)f; break;
    case LK_E_ROWS8: t->rows8[type] = (lk_gemm_fn)f; break;
    case LK_E_QUANTIZE: t->quantize[type] = (lk_quant_fn)f; break;
    case LK_E_DEQUANTIZE: t->dequantize[type] = (void (*)(const void *, float *, int64_t))f; break;
    case LK_E_F16_TO_F32: t->f16_to_f32 = (void (*)(const uint16_t *, float *, int64_t))f; break;
    case LK_E_F32_TO_F16: t->f32_to_f16 = (void (*)(const float *, uint16_t *, int64_t))f; break;
    case LK_E_STREAM_SUM: t->stream_sum = (float (*)(const float *, int64_t))f; break;
    case LK_E_SOFTMAX_EXP: t->softmax_exp = (double (*)(const float *, float *, int64_t, float))f; break;
    case LK_E_SILU: t->silu = (void (*)(const float *, float *, int64_t))f; break;
    case LK_E_MATVEC_F16_GGML:
        t->matvec_f16_ggml = (void (*)(const uint16_t *, size_t, int64_t, int64_t, const float *, float *, int64_t))f;
        break;
    }
}

/* b = the table of `spec` on a CPU with `cpu` features; link: the table is the one in use (its kernels that
 * decline to the base's learn them). */
static void build(built_table *b, const lk_table_spec *spec, uint32_t cpu, int link) {
    if (spec->base) build(b, spec->base, cpu, link);
    else memset(b, 0, sizeof *b);
    for (int i = 0; i < spec->count; i++) {
        const lk_table_row *row = &spec->rows[i];
        if ((row->cpu & cpu) != row->cpu) continue;
        const int first = row->type == LK_ANY ? LK_TYPE_ENTRIES : 0, end = row->type == LK_ANY ? LK_ENTRY_COUNT : LK_E_DEQUANTIZE;
        for (int e = first; e < end; e++) set_entry(b, e, row->type, row->from[e]);
    }
    /* every table dequantizes with the scalar reference */
    for (int type = 0; type < LK_TYPE_COUNT; type++)
        set_entry(b, LK_E_DEQUANTIZE, type, &lk_scalar);
    if (spec->link_base && spec->base) {
        built_table below;
        build(&below, spec->base, cpu, link);
        if (link) spec->link_base(&below.t);
        /* a kernel that declines to the base's serves from the base's token count */
        for (int type = 0; type < LK_TYPE_COUNT; type++)
            if (b->t.gemm[type] != below.t.gemm[type]) b->t.gemm_min_tokens[type] = below.t.gemm_min_tokens[type];
    }
}

static void build_tables(void) {
    const uint32_t cpu = lk_cpu_features();
    for (int isa = 0; isa < LK_ISA_COUNT; isa++)
        build(&tables[isa], lk_isa_available(isa) ? spec_of(isa, cpu) : &lk_table_scalar, cpu, 1);
}
static void ensure_tables(void) {
    if (atomic_load_explicit(&tables_ready, memory_order_acquire) == 2) return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&tables_ready, &expected, 1)) {
        build_tables();
        int isa = lk_best_isa();
        /* LEAP_KERNEL_ISA=scalar|avx2|avx-vnni|avx512|avx512-novnni|amx|neon|neon-dotprod|neon-i8mm|llama-order forces a path (when this CPU
         * has it): for debugging numerical differences and for measuring the fallbacks (avx512: without the
         * tile unit; avx512-novnni: the table of an AVX-512 CPU without VNNI). */
        const char *forced = getenv("LEAP_KERNEL_ISA");
        if (forced) {
            int want = !strcmp(forced, "scalar") ? LK_ISA_SCALAR : !strcmp(forced, "avx2") ? LK_ISA_AVX2
                     : !strcmp(forced, "avx512") ? LK_ISA_AVX512 : !strcmp(forced, "avx512-novnni") ? LK_ISA_AVX512_NOVNNI
                     : !strcmp(forced, "amx") ? LK_ISA_AVX512_AMX : !strcmp(forced, "neon") ? LK_ISA_NEON
                     : !strcmp(forced, "neon-dotprod") ? LK_ISA_NEON_DOTPROD : !strcmp(forced, "neon-i8mm") ? LK_ISA_NEON_I8MM
                     : !strcmp(forced, "neon-dotprod") ? LK_ISA_NEON_DOTPROD : !strcmp(forced, "neon-i8mm") ? LK_ISA_NEON_I8MM
                     : !strcmp(forced, "llama-order") ? LK_ISA_LLAMA_ORDER : !strcmp(forced, "avx-vnni") ? LK_ISA_AVX_VNNI : -1;
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
    return &tables[isa].t;
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

/* ---- printing ---- */

static const char *const entry_names[LK_ENTRY_COUNT] = {
    "dot", "dot2", "dot4", "matvec", "few_tokens", "gemm", "repack", "repack_id", "any_tokens", "tiled", "rows8",
    "quantize", "dequantize", "f16_to_f32", "f32_to_f16", "stream_sum", "softmax_exp", "silu", "matvec_f16_ggml"};

static void add_kernel(char *out, size_t cap, const built_table *b, int entry, int type) {
    const lk_kernel *k = b->src[entry][type];
    const size_t len = strlen(out);
    if (k) snprintf(out + len, cap - len, "%s%s %s.%s", len ? " > " : "", entry_names[entry], b->list[entry][type]->name, k->name);
}

/* The kernels lk_matmul_tensor tries, in order, for n tokens of `type` in `layout` (LK_LLAMA_*, LK_ROWS8):
 * each may decline the call (returns 0), and the next one runs. */
static void chain(const built_table *b, int type, int layout, int64_t n, char *out, size_t cap) {
    const lk_kernel_table *k = &b->t;
#define HAS(E) (b->src[E][type] != NULL)
    out[0] = 0;
    if (layout & LK_ROWS8) {
        if (HAS(LK_E_ROWS8)) add_kernel(out, cap, b, LK_E_ROWS8, type);
        snprintf(out + strlen(out), cap - strlen(out), "%scopy rows out", out[0] ? " > " : "");
        layout &= ~LK_ROWS8;
    }
    if (layout == LK_LLAMA_REPACKED && HAS(LK_E_REPACK)) add_kernel(out, cap, b, LK_E_REPACK, type);
    else if (layout == LK_LLAMA_REPACKED_ID && HAS(LK_E_REPACK_ID)) add_kernel(out, cap, b, LK_E_REPACK_ID, type);
    else if (HAS(LK_E_ANY_TOKENS)) add_kernel(out, cap, b, LK_E_ANY_TOKENS, type);
    else if (n >= LK_TILED_MIN_TOKENS && HAS(LK_E_TILED)) add_kernel(out, cap, b, LK_E_TILED, type);
    if (!HAS(LK_E_DOT)) return;
    if (n >= 2 && n <= LK_FEW_MAX_TOKENS && HAS(LK_E_FEW_TOKENS)) add_kernel(out, cap, b, LK_E_FEW_TOKENS, type);
    if (HAS(LK_E_GEMM) && n >= (k->gemm_min_tokens[type] ? k->gemm_min_tokens[type] : LK_GEMM_MIN_TOKENS))
        add_kernel(out, cap, b, LK_E_GEMM, type);
    if (n == 1 && HAS(LK_E_MATVEC)) add_kernel(out, cap, b, LK_E_MATVEC, type);
    if (n >= 4 && HAS(LK_E_DOT4) && HAS(LK_E_DOT2)) add_kernel(out, cap, b, LK_E_DOT2, type);
    if (n >= 4 && HAS(LK_E_DOT4)) add_kernel(out, cap, b, LK_E_DOT4, type);
    if (n == 1 && HAS(LK_E_DOT2)) add_kernel(out, cap, b, LK_E_DOT2, type);
    add_kernel(out, cap, b, LK_E_DOT, type);
#undef HAS
}

static const char *type_name(int type) {
    switch (type) {
    case LK_TYPE_F32: return "F32";   case LK_TYPE_F16: return "F16";   case LK_TYPE_BF16: return "BF16";
    case LK_TYPE_Q4_0: return "Q4_0"; case LK_TYPE_Q4_1: return "Q4_1"; case LK_TYPE_Q5_0: return "Q5_0";
    case LK_TYPE_Q5_1: return "Q5_1"; case LK_TYPE_Q8_0: return "Q8_0"; case LK_TYPE_Q2_K: return "Q2_K";
    case LK_TYPE_Q3_K: return "Q3_K"; case LK_TYPE_Q4_K: return "Q4_K"; case LK_TYPE_Q5_K: return "Q5_K";
    case LK_TYPE_Q6_K: return "Q6_K"; default: return NULL;
    }
}

void lk_print_dispatch(FILE *out, uint32_t cpu) {
    enum { MAX_TOKENS = 64 };
    static const int layouts[] = {LK_LLAMA_PLAIN, LK_LLAMA_REPACKED, LK_LLAMA_REPACKED_ID, LK_ROWS8};
    static const char *const layout_names[] = {"rows", "repacked", "repacked-id", "rows8"};
    static built_table b;
    fprintf(out, "Which kernel serves lk_matmul_tensor, per table, type, weight layout and token count: the kernels\n"
                 "tried in order (each may decline a call, then the next runs). Layouts other than rows are listed\n"
                 "where they differ; rows8 only for the types lk_rows8_pack packs. Not by the CPU: every table.\n");
    for (int isa = 0; isa < LK_ISA_COUNT; isa++) {
        const lk_table_spec *spec = spec_of(isa, cpu);
        build(&b, spec, cpu, 0);
        fprintf(out, "\n== %s (table %s%s)\n", lk_isa_name(isa), spec->name,
                spec->link_base ? ", its kernels decline to the base table's" : "");
        for (int type = 0; type < LK_TYPE_COUNT; type++) {
            if (!type_name(type) || !b.src[LK_E_DOT][type]) continue;
            char base_chain[MAX_TOKENS + 1][512];
            for (unsigned l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
                if (layouts[l] == LK_ROWS8 && !lk_rows8_kquant(type) && lk_block_size(type) != QK) continue;
                int64_t start = 1;
                char prev[512] = "", cur[512];
                int differs = l == 0;
                for (int64_t n = 1; n <= MAX_TOKENS; n++) {
                    chain(&b, type, layouts[l], n, cur, sizeof cur);
                    if (l == 0) strcpy(base_chain[n], cur);
                    else if (strcmp(cur, base_chain[n])) differs = 1;
                }
                if (!differs) continue;
                for (int64_t n = 1; n <= MAX_TOKENS + 1; n++) {
                    if (n <= MAX_TOKENS) chain(&b, type, layouts[l], n, cur, sizeof cur);
                    if (n > 1 && (n > MAX_TOKENS || strcmp(cur, prev))) {
                        char range[16];
                        if (n > MAX_TOKENS) snprintf(range, sizeof range, "%lld+", (long long)start);
                        else if (n - 1 == start) snprintf(range, sizeof range, "%lld", (long long)start);
                        else snprintf(range, sizeof range, "%lld-%lld", (long long)start, (long long)(n - 1));
                        fprintf(out, "%-5s %-11s %-6s %s\n", type_name(type), layout_names[l], range, prev);
                        start = n;
                    }
                    strcpy(prev, cur);
                }
            }
        }
        fprintf(out, "ops:");
        for (int e = LK_E_QUANTIZE; e < LK_ENTRY_COUNT; e++) {
            if (e == LK_E_QUANTIZE) {
                for (int t = 0; t < LK_TYPE_COUNT; t++)
                    if (b.src[e][t]) fprintf(out, " quantize[%s] %s.%s", t == LK_TYPE_Q8_0 ? "Q8_0" : t == LK_TYPE_Q8_1 ? "Q8_1" : "Q8_K", b.list[e][t]->name, b.src[e][t]->name);
            } else if (e >= LK_TYPE_ENTRIES && b.src[e][LK_ANY]) {
                fprintf(out, ", %s %s.%s", entry_names[e], b.list[e][LK_ANY]->name, b.src[e][LK_ANY]->name);
            }
        }
        fprintf(out, "\n");
    }
}

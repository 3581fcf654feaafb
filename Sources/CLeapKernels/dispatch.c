/* The dispatch tables: one per ISA, built once from each kernel file's fill function (the only file that
 * knows them all), and the choice of the table in effect (best available, LEAP_KERNEL_ISA, lk_set_isa,
 * lk_set_thread_isa). CPU features come from features.c and are passed to the fill functions that need them. */
#include "lk_dispatch.h"
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* One table per ISA, built once; each layers its entries over the one below (scalar < avx2 < avx-vnni,
 * avx2 < avx512). */
static lk_kernel_table tables[LK_ISA_COUNT];
static atomic_int current_isa = -1;
static atomic_int tables_ready = 0;
static _Thread_local int thread_isa = -1;

/* Every entry of one type, from another table. */
static void copy_type(lk_kernel_table *dst, const lk_kernel_table *src, int type) {
    dst->dot[type] = src->dot[type], dst->dot2[type] = src->dot2[type], dst->dot4[type] = src->dot4[type];
    dst->matvec[type] = src->matvec[type], dst->gemm[type] = src->gemm[type], dst->few_tokens[type] = src->few_tokens[type];
    dst->repack[type] = src->repack[type], dst->any_tokens[type] = src->any_tokens[type];
    dst->repack_id[type] = src->repack_id[type], dst->tiled[type] = src->tiled[type], dst->rows8[type] = src->rows8[type];
    dst->gemm_min_tokens[type] = src->gemm_min_tokens[type];
}

/* The AVX2 table's own kernels over llama.cpp's orders, from the AVX2 build of their files or (avxvnni) their
 * AVX-VNNI build (avx_vnni/), which fills the same entries: later fills replace earlier ones. */
static void fill_avx2_own_orders(lk_kernel_table *t, int avxvnni) {
    (avxvnni ? lk_fill_avxvnni_prefill : lk_fill_avx2_prefill)(t);
    (avxvnni ? lk_fill_kquant_avxvnni : lk_fill_kquant_avx2)(t); /* replaces the llama.cpp-order K-quant entries */
    (avxvnni ? lk_fill_avxvnni_q8_0 : lk_fill_avx2_q8_0)(t);     /* Q8_0 in the AVX2 gemm's order at every batch size */
    /* Q4_0 follows llama.cpp's repacked kernels on every x86 SIMD path (replaces the entries above) */
    (avxvnni ? lk_fill_q4_0_avxvnni : lk_fill_q4_0)(t, 0);
    /* AVX2 tables only (equal to their one-token kernels); Q4_0's matvec too */
    (avxvnni ? lk_fill_avxvnni_fewtokens : lk_fill_avx2_fewtokens)(t);
}

static void build_tables(void) {
    const int vnni = (lk_cpu_features() & LK_CPU_AVX512VNNI) != 0, bf16 = (lk_cpu_features() & LK_CPU_AVX512BF16) != 0;
    lk_fill_scalar(&tables[LK_ISA_SCALAR]);
    tables[LK_ISA_AVX2] = tables[LK_ISA_SCALAR];
    tables[LK_ISA_NEON] = tables[LK_ISA_SCALAR];
    if (lk_isa_available(LK_ISA_AVX2)) {
        lk_fill_avx2_decode(&tables[LK_ISA_AVX2]);
        lk_fill_llama_order_avx2(&tables[LK_ISA_AVX2]);
        lk_fill_llama_order_f16(&tables[LK_ISA_AVX2], LK_ISA_AVX2);
    }
    /* llama.cpp's orders on AVX2: the VNNI table's base, for what its own kernels leave, and the reference's */
    tables[LK_ISA_AVX512] = tables[LK_ISA_AVX2];
    tables[LK_ISA_LLAMA_ORDER] = tables[LK_ISA_AVX2];
    if (lk_isa_available(LK_ISA_LLAMA_ORDER)) {
        lk_fill_avx512_decode(&tables[LK_ISA_LLAMA_ORDER], 0);
        lk_fill_llama_order_f16(&tables[LK_ISA_LLAMA_ORDER], LK_ISA_AVX512);
        if (bf16) lk_fill_llama_order_bf16(&tables[LK_ISA_LLAMA_ORDER]);
        lk_fill_q4_0(&tables[LK_ISA_LLAMA_ORDER], 0);
    }
    /* AVX2 with AVX-VNNI: the same table with these kernels from their files' AVX-VNNI build */
    tables[LK_ISA_AVX_VNNI] = tables[LK_ISA_AVX2];
    if (lk_isa_available(LK_ISA_AVX2)) fill_avx2_own_orders(&tables[LK_ISA_AVX2], 0);
    if (lk_isa_available(LK_ISA_AVX_VNNI)) fill_avx2_own_orders(&tables[LK_ISA_AVX_VNNI], 1);
    /* AVX-512 without VNNI: the whole AVX2 table, whose own orders for Q4_0, Q8_0 and the K-quants run prefill
     * 1.2-2.4x faster than llama.cpp's orders on AVX-512 without VNNI (and decode as fast or faster), with the
     * 512-bit float kernels */
    tables[LK_ISA_AVX512_NOVNNI] = tables[LK_ISA_AVX2];
    if (lk_isa_available(LK_ISA_AVX512)) {
        lk_fill_llama_order_f16(&tables[LK_ISA_AVX512_NOVNNI], LK_ISA_AVX512_NOVNNI);
        if (bf16) lk_fill_llama_order_bf16(&tables[LK_ISA_AVX512_NOVNNI]);
    }
    if (lk_isa_available(LK_ISA_AVX512) && vnni) {
        lk_fill_avx512_decode(&tables[LK_ISA_AVX512], 1);
        lk_fill_avx512_prefill(&tables[LK_ISA_AVX512]);
        lk_fill_llama_order_avx512(&tables[LK_ISA_AVX512]);
        lk_fill_kquant_vnni(&tables[LK_ISA_AVX512]); /* replaces the llama.cpp-order K-quant entries */
        lk_fill_llama_order_f16(&tables[LK_ISA_AVX512], LK_ISA_AVX512);
        if (bf16) lk_fill_llama_order_bf16(&tables[LK_ISA_AVX512]);
        lk_fill_q4_0(&tables[LK_ISA_AVX512], 1);
        /* Q8_0 in avx2_q8_0.c's order: the row layout's kernels are the AVX2 table's, the 8-row layout's
         * (16-row VNNI tiles, every token count) give the same bits */
        copy_type(&tables[LK_ISA_AVX512], &tables[LK_ISA_AVX2], LK_TYPE_Q8_0);
        lk_fill_avx512_fewtokens(&tables[LK_ISA_AVX512]);
    } else {
        tables[LK_ISA_AVX512] = tables[LK_ISA_AVX512_NOVNNI];
    }
    if (lk_isa_available(LK_ISA_NEON)) lk_fill_neon(&tables[LK_ISA_NEON]);
    /* the AVX-512 VNNI table with its prefill on the tile unit */
    tables[LK_ISA_AVX512_AMX] = tables[LK_ISA_AVX512];
    if (lk_isa_available(LK_ISA_AVX512_AMX)) lk_fill_amx(&tables[LK_ISA_AVX512_AMX]);
}

static void ensure_tables(void) {
    if (atomic_load_explicit(&tables_ready, memory_order_acquire) == 2) return;
    int expected = 0;
    if (atomic_compare_exchange_strong(&tables_ready, &expected, 1)) {
        build_tables();
        int isa = lk_best_isa();
        /* LEAP_KERNEL_ISA=scalar|avx2|avx-vnni|avx512|avx512-novnni|amx|neon|llama-order forces a path (when this CPU
         * has it): for debugging numerical differences and for measuring the fallbacks (avx512: without the
         * tile unit; avx512-novnni: the table of an AVX-512 CPU without VNNI). */
        const char *forced = getenv("LEAP_KERNEL_ISA");
        if (forced) {
            int want = !strcmp(forced, "scalar") ? LK_ISA_SCALAR : !strcmp(forced, "avx2") ? LK_ISA_AVX2
                     : !strcmp(forced, "avx512") ? LK_ISA_AVX512 : !strcmp(forced, "avx512-novnni") ? LK_ISA_AVX512_NOVNNI
                     : !strcmp(forced, "amx") ? LK_ISA_AVX512_AMX : !strcmp(forced, "neon") ? LK_ISA_NEON
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

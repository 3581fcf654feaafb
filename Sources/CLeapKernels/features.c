/* CPU feature detection: which instruction sets this CPU has, and so which kernel paths (LK_ISA_*) can run.
 * A leaf: it knows no kernel file and no table (dispatch.c asks it once and passes the bits on). */
#include "leap_kernels.h"
#include <stdatomic.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
/* cpuid of leaf, sub-leaf: r = eax, ebx, ecx, edx; zeros past the highest leaf */
static void cpuid(unsigned leaf, unsigned sub, unsigned r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf & 0x80000000u), "c"(0));
    if (r[0] < leaf) { r[0] = r[1] = r[2] = r[3] = 0; return; }
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}
#endif

#if defined(__x86_64__) && defined(__linux__)
/* The tile unit (AMX-TILE with AMX-INT8: cpuid leaf 7 edx bits 24 and 25) is usable once the kernel grants
 * this process its register state (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without the grant a
 * tile instruction faults, so a refusal (older kernels, seccomp) means no AMX. */
static int amx_usable(void) {
    unsigned r[4];
    cpuid(7, 0, r);
    if (!(r[3] & (1u << 24)) || !(r[3] & (1u << 25))) return 0;
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}
#endif

static uint32_t detect_cpu_features(void) {
    uint32_t f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) f |= LK_CPU_AVX2;
    if (__builtin_cpu_supports("fma")) f |= LK_CPU_FMA;
    /* F16C and AVX-VNNI by cpuid (no __builtin_cpu_supports name in older compilers and runtimes): leaf 1 ecx
     * bit 29; leaf 7 sub-leaf 1 eax bit 4 (AVX-VNNI uses AVX2's register state) */
    unsigned r[4];
    cpuid(1, 0, r);
    if (r[2] & (1u << 29)) f |= LK_CPU_F16C;
    cpuid(7, 1, r);
    if ((f & LK_CPU_AVX2) && (r[0] & (1u << 4))) f |= LK_CPU_AVXVNNI;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        f |= LK_CPU_AVX512;
    if ((f & LK_CPU_AVX512) && __builtin_cpu_supports("avx512vnni")) f |= LK_CPU_AVX512VNNI;
    if ((f & LK_CPU_AVX512) && __builtin_cpu_supports("avx512bf16")) f |= LK_CPU_AVX512BF16;
#if defined(__linux__) && defined(__x86_64__)
    if ((f & LK_CPU_AVX512VNNI) && amx_usable()) f |= LK_CPU_AMX;
#endif
#elif defined(__aarch64__)
    f |= LK_CPU_NEON; /* Advanced SIMD is part of every aarch64 CPU */
#if defined(__linux__)
    /* bit numbers of the kernel's uapi hwcap.h (spelled out: older sysroots lack the newer names) */
    const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (hw & (1ul << 20)) f |= LK_CPU_DOTPROD;                        /* HWCAP_ASIMDDP */
    if (hw & (1ul << 10)) f |= LK_CPU_FP16;                           /* HWCAP_ASIMDHP */
    if (hw & (1ul << 22)) f |= LK_CPU_SVE;                            /* HWCAP_SVE */
    if (hw2 & (1ul << 13)) f |= LK_CPU_I8MM;                          /* HWCAP2_I8MM */
    if (hw2 & (1ul << 14)) f |= LK_CPU_BF16;                          /* HWCAP2_BF16 */
#endif
#endif
    return f;
}

/* Detected once: ops call this per row, and cpuid in a virtual machine traps to the hypervisor (a visible
 * share of a prefill's time when it was not cached). Bit 31 marks the value as set. */
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
    case LK_ISA_AVX512_AMX: return lk_isa_available(LK_ISA_AVX512) && (f & LK_CPU_AMX); /* set only with VNNI */
    case LK_ISA_LLAMA_ORDER: return lk_isa_available(LK_ISA_AVX512);
    case LK_ISA_AVX_VNNI: return lk_isa_available(LK_ISA_AVX2) && (f & LK_CPU_AVXVNNI);
    case LK_ISA_NEON_DOTPROD: return (f & (LK_CPU_NEON | LK_CPU_DOTPROD)) == (LK_CPU_NEON | LK_CPU_DOTPROD);
    case LK_ISA_NEON_I8MM: return lk_isa_available(LK_ISA_NEON_DOTPROD) && (f & LK_CPU_I8MM);
    default: return 0;
    }
}

int lk_best_isa(void) {
    if (lk_isa_available(LK_ISA_AVX512_AMX)) return LK_ISA_AVX512_AMX;
    if (lk_isa_available(LK_ISA_AVX512)) return LK_ISA_AVX512;
    if (lk_isa_available(LK_ISA_AVX_VNNI)) return LK_ISA_AVX_VNNI;
    if (lk_isa_available(LK_ISA_AVX2)) return LK_ISA_AVX2;
    if (lk_isa_available(LK_ISA_NEON_I8MM)) return LK_ISA_NEON_I8MM;
    if (lk_isa_available(LK_ISA_NEON_DOTPROD)) return LK_ISA_NEON_DOTPROD;
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
    case LK_ISA_AVX512_AMX: return "avx512-amx";
    case LK_ISA_LLAMA_ORDER: return "llama-order";
    case LK_ISA_AVX_VNNI: return "avx-vnni";
    case LK_ISA_NEON_DOTPROD: return "neon-dotprod";
    case LK_ISA_NEON_I8MM: return "neon-i8mm";
    default: return "unknown";
    }
}

/* The CPU's float FMA peak, measured (leap_vision_kernels.h): the rate a matrix product's benchmark sets its
 * own against.
 *
 * ACC independent chains acc = acc·m + c with no memory operand, as wide as the vectors the products take
 * (zmm where lk_get_isa() picks the AVX-512 kernels, ymm with AVX2, scalar fmaf otherwise). ACC = 12 covers an
 * FMA's latency times the FMA pipes of current x86 cores (Zen 1: latency 5, a ymm FMA fills both 128-bit
 * pipes for a cycle, so 5 chains; Intel: latency 4 x 2 pipes, 8 chains). m is just below 1 and c small, so
 * the chains stay normal floats however long they run. */
#include "leap_kernels.h"
#include "leap_vision_kernels.h"
#include <math.h>
#include <time.h>

enum { ACC = 12, STEPS = 4096 /* FMAs per chain between two looks at the clock */ };

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile float multiplier = 0.9999999f, addend = 1e-7f;
static volatile float sink;

static double steps_portable(void) {
    const float m = multiplier, c = addend;
    float acc[ACC];
    for (int i = 0; i < ACC; i++) acc[i] = (float)i;
    for (int s = 0; s < STEPS; s++)
        for (int i = 0; i < ACC; i++) acc[i] = fmaf(acc[i], m, c);
    float sum = 0.0f;
    for (int i = 0; i < ACC; i++) sum += acc[i];
    sink = sum;
    return 2.0 * ACC * STEPS;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* The empty asm keeps each chain a chain: the compiler may not merge or reorder what it cannot see. */
__attribute__((target("avx2,fma"))) static double steps_avx2(void) {
    const __m256 m = _mm256_set1_ps(multiplier), c = _mm256_set1_ps(addend);
    __m256 acc[ACC];
#pragma clang loop unroll(full)
    for (int i = 0; i < ACC; i++) acc[i] = _mm256_set1_ps((float)i);
    for (int s = 0; s < STEPS; s++) {
#pragma clang loop unroll(full)
        for (int i = 0; i < ACC; i++) {
            acc[i] = _mm256_fmadd_ps(acc[i], m, c);
            __asm__ volatile("" : "+x"(acc[i]));
        }
    }
    __m256 sum = acc[0];
    for (int i = 1; i < ACC; i++) sum = _mm256_add_ps(sum, acc[i]);
    sink = _mm256_cvtss_f32(sum);
    return 2.0 * 8 * ACC * STEPS;
}

__attribute__((target("avx2,fma,avx512f"))) static double steps_avx512(void) {
    const __m512 m = _mm512_set1_ps(multiplier), c = _mm512_set1_ps(addend);
    __m512 acc[ACC];
#pragma clang loop unroll(full)
    for (int i = 0; i < ACC; i++) acc[i] = _mm512_set1_ps((float)i);
    for (int s = 0; s < STEPS; s++) {
#pragma clang loop unroll(full)
        for (int i = 0; i < ACC; i++) {
            acc[i] = _mm512_fmadd_ps(acc[i], m, c);
            __asm__ volatile("" : "+v"(acc[i]));
        }
    }
    __m512 sum = acc[0];
    for (int i = 1; i < ACC; i++) sum = _mm512_add_ps(sum, acc[i]);
    sink = _mm512_reduce_add_ps(sum);
    return 2.0 * 16 * ACC * STEPS;
}
#endif

double lk_fma_peak_flops(double seconds) {
    double (*steps)(void) = steps_portable;
#if defined(__x86_64__)
    const int isa = lk_get_isa();
    if (isa == LK_ISA_AVX512 || isa == LK_ISA_AVX512_NOVNNI || isa == LK_ISA_AVX512_AMX) steps = steps_avx512;
    else if (isa == LK_ISA_AVX2 || isa == LK_ISA_AVX_VNNI) steps = steps_avx2;
#endif
    const double end = seconds_now() + seconds;
    double flops = 0.0;
    do flops += steps();
    while (seconds_now() < end);
    return flops;
}

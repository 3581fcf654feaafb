/* Polyphase and half-band FIR kernels for the audio resampler, with runtime CPU dispatch.
 * Accumulation is in float32 with FMA where available: with 4 independent vector accumulators the
 * rounding noise stays near -140 dBFS, well below the resampler's 120 dB target (measured in tests). */
#include "leap_audio_kernels.h"
#include "audio_vector.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define LK_X86 1
#endif

/* ---- portable kernels (baseline ISA; the compiler vectorizes the independent accumulators) ---- */

static float dot_portable(const float *a, const float *b, size_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

/* Outputs in blocks of 64 accumulated in registers, one tap pair at a time (vectorizes across outputs).
 * A partial block runs the same per-output operations, so results do not depend on the block split. */
#define HALFBAND_BLOCK(M)                                                                    \
    {                                                                                        \
        float acc[M];                                                                        \
        for (size_t j = 0; j < (M); j++) acc[j] = 0.5f * even[n0 + j + n_h];                 \
        for (size_t k = 0; k < n_h; k++) {                                                   \
            const float hk = h[k];                                                           \
            const float *lo = odd + n0 + n_h - 1 - k, *hi = odd + n0 + n_h + k;              \
            for (size_t j = 0; j < (M); j++) acc[j] += hk * (lo[j] + hi[j]);                 \
        }                                                                                    \
        for (size_t j = 0; j < (M); j++) y[n0 + j] = acc[j];                                 \
    }
#define HALFBAND_BODY                                                                        \
    size_t n0 = 0;                                                                           \
    for (; n0 + 64 <= n_out; n0 += 64) HALFBAND_BLOCK(64)                                    \
    if (n0 < n_out) {                                                                        \
        const size_t rest = n_out - n0;                                                      \
        HALFBAND_BLOCK(rest)                                                                 \
    }

static void halfband_portable(const float *even, const float *odd, const float *h, size_t n_h, float *y,
                              size_t n_out) {
    HALFBAND_BODY
}

#if LK_X86
/* ---- AVX2 + FMA ---- */
__attribute__((target("avx2,fma"))) static float dot_avx2(const float *a, const float *b, size_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_movehdup_ps(q));
    float r = _mm_cvtss_f32(q);
    for (; i < n; i++) r = __builtin_fmaf(a[i], b[i], r);
    return r;
}

__attribute__((target("avx2,fma"))) static void halfband_avx2(const float *even, const float *odd, const float *h,
                                                              size_t n_h, float *y, size_t n_out) {
    HALFBAND_BODY
}

/* ---- AVX-512F ---- */
__attribute__((target("avx512f"))) static float dot_avx512(const float *a, const float *b, size_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
        s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), s1);
        s2 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 32), _mm512_loadu_ps(b + i + 32), s2);
        s3 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 48), _mm512_loadu_ps(b + i + 48), s3);
    }
    for (; i + 16 <= n; i += 16) s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), s0);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), s1);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static int detect_level(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int has_fma = (c >> 12) & 1, has_osxsave = (c >> 27) & 1, has_avx = (c >> 28) & 1;
    if (!(has_osxsave && has_avx && has_fma)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    (void)hi;
    if ((lo & 0x6) != 0x6) return 0; /* OS saves XMM/YMM state */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    int has_avx2 = (b >> 5) & 1, has_avx512f = (b >> 16) & 1;
    if (has_avx512f && (lo & 0xE6) == 0xE6) return 3; /* and opmask/ZMM state */
    return has_avx2 ? 2 : 0;
}
#endif

static int g_level = -1;

/* 16 pairs per step: two vector loads, two shuffles. */
#define DEINTERLEAVE_BODY                                                                            \
    size_t i = 0;                                                                                    \
    for (; i + 16 <= n_pairs; i += 16) {                                                             \
        const lane_v a = load_v(x + 2 * i), b = load_v(x + 2 * i + 16);                              \
        store_v(even + i, __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22,   \
                                                  24, 26, 28, 30));                                  \
        store_v(odd + i, __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23,    \
                                                 25, 27, 29, 31));                                   \
    }                                                                                                \
    for (; i < n_pairs; i++) {                                                                       \
        even[i] = x[2 * i];                                                                          \
        odd[i] = x[2 * i + 1];                                                                       \
    }

static void deinterleave_portable(const float *x, size_t n_pairs, float *even, float *odd) { DEINTERLEAVE_BODY }
#if LK_X86
__attribute__((target("avx2"))) static void deinterleave_avx2(const float *x, size_t n_pairs, float *even,
                                                              float *odd) {
    DEINTERLEAVE_BODY
}
__attribute__((target("avx512f"))) static void deinterleave_avx512(const float *x, size_t n_pairs, float *even,
                                                                   float *odd) {
    DEINTERLEAVE_BODY
}
#endif

void lk_audio_deinterleave2(const float *x, size_t n_pairs, float *even, float *odd) {
#if LK_X86
    switch (lk_audio_kernel_level()) {
    case 3: deinterleave_avx512(x, n_pairs, even, odd); return;
    case 2: deinterleave_avx2(x, n_pairs, even, odd); return;
    default: break;
    }
#endif
    deinterleave_portable(x, n_pairs, even, odd);
}

int lk_audio_kernel_level(void) {
    int level = __atomic_load_n(&g_level, __ATOMIC_RELAXED);
    if (level < 0) {
#if LK_X86
        level = detect_level();
#else
        level = 0;
#endif
        /* LEAP_AUDIO_KERNEL=portable|avx2 caps the variant (to test the fallbacks on a bigger CPU). */
        const char *cap = getenv("LEAP_AUDIO_KERNEL");
        if (cap && strcmp(cap, "portable") == 0) level = 0;
        if (cap && strcmp(cap, "avx2") == 0 && level > 2) level = 2;
        __atomic_store_n(&g_level, level, __ATOMIC_RELAXED);
    }
    return level;
}

float lk_audio_dot_f32(const float *a, const float *b, size_t n) {
#if LK_X86
    switch (lk_audio_kernel_level()) {
    case 3: return dot_avx512(a, b, n);
    case 2: return dot_avx2(a, b, n);
    default: break;
    }
#endif
    return dot_portable(a, b, n);
}

void lk_audio_halfband_run(const float *even, const float *odd, const float *h, size_t n_h, float *y,
                           size_t n_out) {
#if LK_X86
    switch (lk_audio_kernel_level()) {
    /* AVX2 on AVX-512 machines too: the taps slide the odd samples one by one, so almost every 64-byte
     * load would straddle two cache lines (half of the 32-byte ones do), so the 32-byte kernel is the
     * faster one overall (`leap-bench audio`). */
    case 3:
    case 2: halfband_avx2(even, odd, h, n_h, y, n_out); return;
    default: break;
    }
#endif
    halfband_portable(even, odd, h, n_h, y, n_out);
}

/* The per-output loop, stamped out once per dot-product variant so the dot inlines. */
#define POLYPHASE_BODY(DOT)                                                                          \
    size_t p = *pos, produced = 0;                                                                   \
    uint32_t ph = *phase;                                                                            \
    const size_t taps = f->taps;                                                                     \
    while (produced < max_out && p + taps <= n_x) {                                                  \
        float v;                                                                                     \
        if (f->interp_p == 0) {                                                                      \
            v = DOT(f->table + (size_t)ph * taps, x + p, taps);                                      \
        } else {                                                                                     \
            uint64_t scaled = (uint64_t)ph * f->interp_p;                                            \
            size_t row = (size_t)(scaled / f->L);                                                    \
            float frac = (float)((double)(scaled % f->L) / (double)f->L);                            \
            float a = DOT(f->table + row * taps, x + p, taps);                                       \
            float b = DOT(f->table + (row + 1) * taps, x + p, taps);                                 \
            v = a + frac * (b - a);                                                                  \
        }                                                                                            \
        out[produced++] = v;                                                                         \
        p += f->step_q;                                                                              \
        ph += f->step_r;                                                                             \
        if (ph >= f->L) { ph -= f->L; p += 1; }                                                      \
    }                                                                                                \
    *pos = p;                                                                                        \
    *phase = ph;                                                                                     \
    return produced;

static size_t run_portable(const lk_polyphase *f, const float *x, size_t n_x, size_t *pos, uint32_t *phase,
                           float *out, size_t max_out) {
    POLYPHASE_BODY(dot_portable)
}

#if LK_X86
__attribute__((target("avx2,fma"))) static size_t run_avx2(const lk_polyphase *f, const float *x, size_t n_x,
                                                           size_t *pos, uint32_t *phase, float *out,
                                                           size_t max_out) {
    POLYPHASE_BODY(dot_avx2)
}

__attribute__((target("avx512f"))) static size_t run_avx512(const lk_polyphase *f, const float *x, size_t n_x,
                                                            size_t *pos, uint32_t *phase, float *out,
                                                            size_t max_out) {
    POLYPHASE_BODY(dot_avx512)
}
#endif

size_t lk_audio_polyphase_run(const lk_polyphase *f, const float *x, size_t n_x, size_t *pos, uint32_t *phase,
                              float *out, size_t max_out) {
#if LK_X86
    switch (lk_audio_kernel_level()) {
    case 3: return run_avx512(f, x, n_x, pos, phase, out, max_out);
    case 2: return run_avx2(f, x, n_x, pos, phase, out, max_out);
    default: break;
    }
#endif
    return run_portable(f, x, n_x, pos, phase, out, max_out);
}

/* ---- block polyphase: 8 consecutive outputs at once ----
 * For short filters a dot product per output wastes most of its time in the horizontal sum. Here each
 * group of 8 outputs has its own coefficient matrix over the union of their windows ([window][8],
 * precomputed per repeating pattern), and y[0..8) += c[t][0..8) * x[t] is one vector FMA per input
 * sample. Four accumulators (t mod 4) hide the FMA latency. Groups of 8 rather than 16: a group's window
 * is its outputs' span plus the filter length, so narrower groups waste less of it (on CPUs where a
 * 16-wide FMA costs two 8-wide ones 8 is the faster width; `leap-bench audio`). */
#define G LK_POLYBLOCK_GROUP
#define POLYBLOCK_BODY                                                                               \
    size_t p = *pos, produced = 0;                                                                   \
    uint32_t pat = *pattern;                                                                         \
    while (produced < max_groups && p + window <= n_x) {                                             \
        const float *c = table + (size_t)pat * window * G;                                           \
        const float *xp = x + p;                                                                     \
        float a0[G], a1[G], a2[G], a3[G];                                                            \
        for (int j = 0; j < G; j++) a0[j] = a1[j] = a2[j] = a3[j] = 0.0f;                            \
        for (size_t t = 0; t < window; t += 4) {                                                     \
            const float x0 = xp[t], x1 = xp[t + 1], x2 = xp[t + 2], x3 = xp[t + 3];                  \
            const float *c0 = c + t * G;                                                             \
            for (int j = 0; j < G; j++) a0[j] += c0[j] * x0;                                         \
            for (int j = 0; j < G; j++) a1[j] += c0[G + j] * x1;                                     \
            for (int j = 0; j < G; j++) a2[j] += c0[2 * G + j] * x2;                                 \
            for (int j = 0; j < G; j++) a3[j] += c0[3 * G + j] * x3;                                 \
        }                                                                                            \
        float *o = out + produced * G;                                                               \
        for (int j = 0; j < G; j++) o[j] = (a0[j] + a1[j]) + (a2[j] + a3[j]);                        \
        produced++;                                                                                  \
        p += advance[pat];                                                                           \
        pat = pat + 1 == patterns ? 0 : pat + 1;                                                     \
    }                                                                                                \
    *pos = p;                                                                                        \
    *pattern = pat;                                                                                  \
    return produced;

#define POLYBLOCK_PARAMS                                                                             \
    const float *table, size_t window, uint32_t patterns, const uint32_t *advance, const float *x,  \
        size_t n_x, size_t *pos, uint32_t *pattern, float *out, size_t max_groups
#define POLYBLOCK_ARGS table, window, patterns, advance, x, n_x, pos, pattern, out, max_groups

static size_t polyblock_portable(POLYBLOCK_PARAMS) { POLYBLOCK_BODY }
#if LK_X86
__attribute__((target("avx2,fma"))) static size_t polyblock_avx2(POLYBLOCK_PARAMS) { POLYBLOCK_BODY }
__attribute__((target("avx512f"))) static size_t polyblock_avx512(POLYBLOCK_PARAMS) { POLYBLOCK_BODY }
#endif

size_t lk_audio_polyblock_run(POLYBLOCK_PARAMS) {
#if LK_X86
    switch (lk_audio_kernel_level()) {
    case 3: return polyblock_avx512(POLYBLOCK_ARGS);
    case 2: return polyblock_avx2(POLYBLOCK_ARGS);
    default: break;
    }
#endif
    return polyblock_portable(POLYBLOCK_ARGS);
}

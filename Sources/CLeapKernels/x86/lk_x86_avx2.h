/* Helpers shared by the x86 kernel files (AVX2 and up): f16 scalar loads, horizontal sums, nibble and bit
 * unpacking, the row-lane kernels' pieces (8-row dword transpose, row offsets, row scales, partial stores),
 * and _mm512_reduce_add_ps's summation order (reduce16), which llama.cpp's x86 builds use to end
 * their dot products. Include it inside a region that enables the file's target (a `#pragma clang attribute
 * push(... target ...)`): the functions take the first such region's target and inline into any wider one. */
#ifndef LK_X86_AVX2_H
#define LK_X86_AVX2_H
#include "lk_types.h"
#include <immintrin.h>
#include <string.h>

#define INLINE static inline __attribute__((always_inline))

/* Call KERNEL(args..., nt) with nt a compile-time constant 1..4 or 1..8, so that a kernel's token loops unroll
 * (a token pass of the few-token kernels). */
#define LK_PASS4(nt, KERNEL, ...)                                                                             \
    switch (nt) {                                                                                             \
    case 1: KERNEL(__VA_ARGS__, 1); break;                                                                    \
    case 2: KERNEL(__VA_ARGS__, 2); break;                                                                    \
    case 3: KERNEL(__VA_ARGS__, 3); break;                                                                    \
    default: KERNEL(__VA_ARGS__, 4); break;                                                                   \
    }
#define LK_PASS8(nt, KERNEL, ...)                                                                             \
    switch (nt) {                                                                                             \
    case 1: KERNEL(__VA_ARGS__, 1); break;                                                                    \
    case 2: KERNEL(__VA_ARGS__, 2); break;                                                                    \
    case 3: KERNEL(__VA_ARGS__, 3); break;                                                                    \
    case 4: KERNEL(__VA_ARGS__, 4); break;                                                                    \
    case 5: KERNEL(__VA_ARGS__, 5); break;                                                                    \
    case 6: KERNEL(__VA_ARGS__, 6); break;                                                                    \
    case 7: KERNEL(__VA_ARGS__, 7); break;                                                                    \
    default: KERNEL(__VA_ARGS__, 8); break;                                                                   \
    }

/* acc + Σ u·s over each group of 4 bytes (u unsigned, s signed), for operands whose pair sums u·s + u'·s'
 * lie within s16 (so vpmaddubsw never saturates): the VEX vpdpbusd in the AVX-VNNI build (x86/avx2/avx_vnni/lk_avx_vnni.h),
 * else vpmaddubsw + vpmaddwd + vpaddd. The same integers either way. */
INLINE __m256i lk_dpbusd256(__m256i acc, __m256i u, __m256i s) {
#ifdef LK_AVXVNNI
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}
/* acc + the s32 pair sums of a·b (s16 lanes): vpdpwssd in the AVX-VNNI build, else vpmaddwd + vpaddd. */
INLINE __m256i lk_dpwssd256(__m256i acc, __m256i a, __m256i b) {
#ifdef LK_AVXVNNI
    return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

/* Not _cvtsh_ss: clang then inserts the half into whatever register holds the accumulator (the other lanes
 * are "undefined"), chaining every block to the previous FMA. The empty asm forces a clean vmovd. */
INLINE float h2f(uint16_t h) {
    __m128i v = _mm_cvtsi32_si128(h);
    __asm__("" : "+x"(v));
    return _mm_cvtss_f32(_mm_cvtph_ps(v));
}

INLINE float hsum_ps(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

/* Σ of the 8 s32 lanes. */
INLINE int32_t hsum_epi32(__m256i v) {
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4e));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xb1));
    return _mm_cvtsi128_si32(r);
}

/* One block of the AVX2 Q6_K order (x86/avx2/kquant.c): acc + float(isum)·(d·dx), one rounding for the
 * product d·dx and one for the fused step, as the gemm's per-lane vector operations. */
INLINE float lk_q6_K_step(float acc, int32_t isum, float d, float dx) {
    const __m128 dd = _mm_mul_ss(_mm_set_ss(d), _mm_set_ss(dx));
    return _mm_cvtss_f32(_mm_fmadd_ss(_mm_cvtsi32_ss(_mm_setzero_ps(), isum), dd, _mm_set_ss(acc)));
}

/* 32 nibbles of qs[16] → bytes: low nibbles in elements 0..15, high nibbles in 16..31 (ggml order). */
INLINE __m256i nibbles_32(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

/* 32 bits → 32 bytes of 0xFF (bit set) / 0x00. Byte j takes bit j of the little-endian u32. */
INLINE __m256i bits_to_bytes_32(const uint8_t *p) {
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    const __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(lk_load_i32(p)), shuf);
    const __m256i sel = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, sel), sel);
}

/* 8 rows of 4 dwords (row r in v[r]) → 4 vectors, lane r of out[k] = dword k of row r: rows j and 4 + j share a
 * vector, then a 4 x 4 transpose in each 128-bit lane (no lane-crossing shuffle). */
INLINE void lk_transpose8x4(const __m128i *v, __m256i *out) {
    __m256i z[4];
    for (int j = 0; j < 4; j++) z[j] = _mm256_inserti128_si256(_mm256_castsi128_si256(v[j]), v[4 + j], 1);
    const __m256i a0 = _mm256_unpacklo_epi32(z[0], z[1]), a1 = _mm256_unpackhi_epi32(z[0], z[1]);
    const __m256i a2 = _mm256_unpacklo_epi32(z[2], z[3]), a3 = _mm256_unpackhi_epi32(z[2], z[3]);
    out[0] = _mm256_unpacklo_epi64(a0, a2), out[1] = _mm256_unpackhi_epi64(a0, a2);
    out[2] = _mm256_unpacklo_epi64(a1, a3), out[3] = _mm256_unpackhi_epi64(a1, a3);
}

/* Row-lane kernels over groups of 8 rows (lane r = row r): the byte offsets of the lanes' rows from the
 * group's first row, a short last group (nr < 8 rows) repeating its last row, whose lanes are not stored. */
INLINE void lk_group_offsets(int nr, size_t ws, int32_t *o) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_storeu_si256((__m256i *)o, _mm256_mullo_epi32(_mm256_min_epi32(lanes, _mm256_set1_epi32(nr - 1)), _mm256_set1_epi32((int)ws)));
}

/* The f16 at byte `ob` of each of the 8 rows (row r at w + o[r]) as 8 floats, loaded one by one (vpgatherdd
 * costs as much as a token's products). */
INLINE __m256 lk_row_scales8(const uint8_t *w, const int32_t *o, size_t ob) {
    return _mm256_cvtph_ps(_mm_setr_epi16((short)lk_load_u16(w + o[0] + ob), (short)lk_load_u16(w + o[1] + ob), (short)lk_load_u16(w + o[2] + ob),
                                          (short)lk_load_u16(w + o[3] + ob), (short)lk_load_u16(w + o[4] + ob), (short)lk_load_u16(w + o[5] + ob),
                                          (short)lk_load_u16(w + o[6] + ob), (short)lk_load_u16(w + o[7] + ob)));
}

/* Lanes 0..nr of v → y[0..nr). */
INLINE void lk_store_rows8(__m256 v, float *y, int nr) {
    if (nr == 8) {
        _mm256_storeu_ps(y, v);
        return;
    }
    float out[8];
    _mm256_storeu_ps(out, v);
    memcpy(y, out, (size_t)nr * sizeof(float));
}

/* Q4_0 × Q8_0 in llama.cpp's repacked order: per Q8_0 block of one token, dx (the scale as float) and 8·Σx
 * (the offset of the unsigned nibbles). */
INLINE void lk_q4_0_terms(const uint8_t *x, int64_t nb, float *dx, int32_t *xs8) {
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = x + (size_t)b * sizeof(block_q8_0);
        dx[b] = h2f(lk_load_u16(blk));
        const __m256i v = _mm256_loadu_si256((const __m256i *)(blk + 2));
        xs8[b] = hsum_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(8), v), _mm256_set1_epi16(1)));
    }
}

/* The 16 lanes lo, hi (0-7, 8-15) summed as _mm512_reduce_add_ps does: lanes i and i + 8, i and i + 4, i and
 * i + 2, then 0 and 1. */
static inline __attribute__((always_inline)) float reduce16(__m256 lo, __m256 hi) {
    const __m256 h = _mm256_add_ps(lo, hi);
    const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    const __m128 p = _mm_add_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_add_ss(p, _mm_movehdup_ps(p)));
}

#endif

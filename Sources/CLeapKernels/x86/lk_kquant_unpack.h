/* Helpers shared by the Q4_K / Q5_K / Q6_K kernels of their own order (x86/avx512/kquant.c,
 * x86/avx2/kquant.c): prefetch, s16 pairs, the unpacking of the packed 6-bit scales and of Q6_K quants, and
 * the gemms' per-token activation terms (AVX2, inlined into the AVX2 and AVX-512 kernels). */
#ifndef LK_KQUANT_UNPACK_H
#define LK_KQUANT_UNPACK_H
#include "lk_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

/* Two s16 in one s32 lane: a in the low half, b in the high one (the operand layout of vpmaddwd). */
static inline __attribute__((always_inline)) int32_t lk_pair16(int a, int b) {
    return (int32_t)(((uint32_t)(uint16_t)(int16_t)b << 16) | (uint16_t)(int16_t)a);
}

/* The matvecs read rows r, r + 1 (adjacent, ws bytes each) as two streams and prefetch, `dist` bytes after
 * each block being read, the cache lines of the block they will read then: dist is the smallest multiple of
 * the pair's 2·ws bytes of at least min_bytes, so that both streams are prefetched (a fixed distance lands,
 * for rows longer than it, in the row being read alongside, behind its read position). */
static inline __attribute__((always_inline)) size_t lk_pair_prefetch_distance(size_t ws, size_t min_bytes) {
    return (min_bytes + 2 * ws - 1) / (2 * ws) * (2 * ws);
}

static inline __attribute__((always_inline)) void lk_prefetch_block(const void *p, size_t dist, size_t bb) {
    const char *q = (const char *)p + dist;
    for (size_t o = 0; o < bb; o += 64) lk_prefetch_weights(q + o);
}

/* Q4_K / Q5_K: the 8 scales then the 8 mins (6 bits each) of a block, as 16 bytes (ggml's utmp unpacking,
 * equal to lk_get_scale_min_k4 for j = 0..7), in vector registers: with u0, u1, u2 the three 32-bit words
 * of scales[12], sc_0..3 = u0 & 63, sc_4..7 = (u2 & 15) | (u0 >> 6) << 4, m_0..3 = u1 & 63,
 * m_4..7 = (u2 >> 4) | (u1 >> 6) << 4 (per byte). Reads 16 bytes at s: s + 12..15 must be readable (the
 * quants that follow in the block). */
static inline __attribute__((always_inline, target("avx2"))) __m128i lk_k4_scales_mins(const uint8_t *s) {
    const __m128i v = _mm_loadu_si128((const __m128i *)s);
    const __m128i a = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));     /* u0 u2 u1 u2 */
    const __m128i b = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7)); /* 0 u0 0 u1 */
    const __m128i low = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)), _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
    const __m128i high = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
    return _mm_or_si128(low, high);
}
/* One Q6_K block's 256 quants (0..63) as bytes in element order → out[256] (32-byte aligned): element
 * 128h + 32k + l is the nibble of ql[64h + l (+32)] with bits 2k.. of qh[32h + l] above it. */
static inline __attribute__((always_inline, target("avx2"))) void lk_unpack_q6_K(const block_q6_K *b, uint8_t *out) {
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    for (int h = 0; h < 2; h++) {
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(b->ql + 64 * h + 32));
        const __m256i hb = _mm256_loadu_si256((const __m256i *)(b->qh + 32 * h));
        uint8_t *o = out + 128 * h;
        _mm256_store_si256((__m256i *)o, _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m3), 4)));
        _mm256_store_si256((__m256i *)(o + 32), _mm256_or_si256(_mm256_and_si256(l1, m4),
                                                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m3), 4)));
        _mm256_store_si256((__m256i *)(o + 64), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m3), 4)));
        _mm256_store_si256((__m256i *)(o + 96), _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m3), 4)));
    }
}

/* The gemms' activation terms per token and Q8_K block: dx, then (Q4_K / Q5_K) 4 s16 pairs of 32-element sums
 * (bsum_2k, bsum_2k+1) or (Q6_K) the 16 terms −32·bsum_g: lk_kquant_term_ints of them. */
static inline __attribute__((always_inline)) size_t lk_kquant_term_ints(int type) { return type == LK_TYPE_Q6_K ? 16 : 4; }

/* nt tokens (row t at x + t·xrb, nb blocks each) → dx[nt·nb], terms[nt·nb][lk_kquant_term_ints] */
static inline __attribute__((always_inline)) void lk_kquant_prep_terms(int type, const uint8_t *x, size_t xrb, int64_t nt,
                                                                       int64_t nb, float *dx, int32_t *terms) {
    const size_t ti = lk_kquant_term_ints(type);
    for (int64_t t = 0; t < nt; t++) {
        const block_q8_K *xt = (const block_q8_K *)(x + (size_t)t * xrb);
        for (int64_t i = 0; i < nb; i++) {
            int32_t *o = terms + ((size_t)t * (size_t)nb + (size_t)i) * ti;
            const int16_t *bs = xt[i].bsums;
            dx[t * nb + i] = xt[i].d;
            if (type == LK_TYPE_Q6_K)
                for (int g = 0; g < 16; g++) o[g] = -32 * bs[g];
            else
                for (int k = 0; k < 4; k++) o[k] = lk_pair16(bs[4 * k] + bs[4 * k + 1], bs[4 * k + 2] + bs[4 * k + 3]);
        }
    }
}
#endif
#endif

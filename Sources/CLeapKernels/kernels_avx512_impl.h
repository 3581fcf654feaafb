/* AVX-512 row kernels, included twice by kernels_avx512.c: once with LK_VNNI 1 (vpdpbusd) and once
 * with LK_VNNI 0 (vpmaddubsw + vpmaddwd). SFX(name) gives each variant its own names.
 *
 * 32-block types process two blocks per 512-bit vector: the nibbles of blocks i and i+1 are arranged as
 * [lo_i, hi_i, lo_i+1, hi_i+1] (128-bit lanes) to match the activation bytes [x_i, x_i+1]; lanes 0-7 of the
 * s32 result belong to block i and lanes 8-15 to block i+1, so a blended scale vector finishes both. */

#if LK_VNNI
#define SFX(name) name##_vnni_rows
/* acc += Σ u8 × s8 over groups of 4 bytes */
#define DOT_US(acc, u, s) _mm512_dpbusd_epi32((acc), (u), (s))
#else
#define SFX(name) name##_bw_rows
#define DOT_US(acc, u, s) _mm512_add_epi32((acc), _mm512_madd_epi16(_mm512_maddubs_epi16((u), (s)), _mm512_set1_epi16(1)))
#endif

/* two 16-byte nibble arrays → 64 bytes in block order [lo_i, hi_i, lo_i+1, hi_i+1] */
INLINE __m512i SFX(nibbles_64)(const uint8_t *qs0, const uint8_t *qs1) {
    const __m256i t = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)qs1), _mm_loadu_si128((const __m128i *)qs0));
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m256i lo = _mm256_and_si256(t, m4), hi = _mm256_and_si256(_mm256_srli_epi16(t, 4), m4);
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    return _mm512_shuffle_i64x2(q, q, _MM_SHUFFLE(3, 1, 2, 0));
}

INLINE __m512i SFX(load_pair)(const int8_t *a, const int8_t *b) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)a)),
                              _mm256_loadu_si256((const __m256i *)b), 1);
}

INLINE __m512 SFX(scale_pair)(float d0, float d1) {
    return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
}

#define ZERO4 {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()}

/* Body shared by the 32-block kernels. W = weight block type, X = activation block type; PREP builds the
 * weight vector `q` (and `off`, the constant subtracted from each weight, as bytes); HAS_M adds m·s. */
#define PAIR_KERNEL(NAME, TYPEID, W, X, PREP, OFFSET, MTERM)                                                 \
    INLINE void SFX(NAME)(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {    \
        const W *w = vw;                                                                                     \
        const int64_t nb = n / QK;                                                                           \
        __m512 acc[4] = ZERO4;                                                                               \
        float summ[4] = {0, 0, 0, 0};                                                                        \
        for (int64_t i = 0; i + 1 < nb; i += 2) {                                                            \
            const W *w0 = w + i, *w1 = w + i + 1;                                                            \
            PREP                                                                                             \
            const float dw0 = h2f(w0->d), dw1 = h2f(w1->d);                                                  \
            for (int t = 0; t < NT; t++) {                                                                   \
                const X *x0 = XT(X, t) + i, *x1 = x0 + 1;                                                    \
                const __m512i y = SFX(load_pair)(x0->qs, x1->qs);                                            \
                __m512i p = DOT_US(_mm512_setzero_si512(), q, y);                                            \
                if (OFFSET) p = _mm512_sub_epi32(p, DOT_US(_mm512_setzero_si512(), _mm512_set1_epi8(OFFSET), y)); \
                acc[t] = _mm512_fmadd_ps(SFX(scale_pair)(dw0 * h2f(x0->d), dw1 * h2f(x1->d)), _mm512_cvtepi32_ps(p), acc[t]); \
                summ[t] += MTERM;                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int t = 0; t < NT; t++) s[t] = _mm512_reduce_add_ps(acc[t]) + summ[t];                          \
        if (nb & 1) { /* odd last block */                                                                  \
            float tail[4];                                                                                   \
            lk_avx2_rows(TYPEID, QK, w + nb - 1, (const uint8_t *)vx + (size_t)(nb - 1) * sizeof(X), xs, tail, NT); \
            for (int t = 0; t < NT; t++) s[t] += tail[t];                                                    \
        }                                                                                                    \
    }

#define PAIR_M(w0, w1, x0, x1) (h2f((w0)->m) * h2f((x0)->s) + h2f((w1)->m) * h2f((x1)->s))

PAIR_KERNEL(q4_0, LK_TYPE_Q4_0, block_q4_0, block_q8_0,
            const __m512i q = SFX(nibbles_64)(w0->qs, w1->qs);, 8, 0.0f)

PAIR_KERNEL(q4_1, LK_TYPE_Q4_1, block_q4_1, block_q8_1,
            const __m512i q = SFX(nibbles_64)(w0->qs, w1->qs);, 0, PAIR_M(w0, w1, x0, x1))

/* 5th bits: bit j of qh is element j of the block, so the two qh words form the byte mask directly */
#define Q5_PREP                                                                                              \
    uint32_t h0, h1;                                                                                         \
    memcpy(&h0, w0->qh, 4);                                                                                  \
    memcpy(&h1, w1->qh, 4);                                                                                  \
    const __m512i nib = SFX(nibbles_64)(w0->qs, w1->qs);                                                     \
    const __m512i q = _mm512_mask_add_epi8(nib, (__mmask64)h0 | ((__mmask64)h1 << 32), nib, _mm512_set1_epi8(16));

PAIR_KERNEL(q5_0, LK_TYPE_Q5_0, block_q5_0, block_q8_0, Q5_PREP, 16, 0.0f)
PAIR_KERNEL(q5_1, LK_TYPE_Q5_1, block_q5_1, block_q8_1, Q5_PREP, 0, PAIR_M(w0, w1, x0, x1))

/* Q8_0 × Q8_0 is s8 × s8: take |w| and move w's sign onto the activations */
INLINE void SFX(q8_0)(int64_t n, const void *vw, const void *vx, size_t xs, float *s, const int NT) {
    const block_q8_0 *w = vw;
    const int64_t nb = n / QK;
    __m512 acc[4] = ZERO4;
    for (int64_t i = 0; i + 1 < nb; i += 2) {
        const __m512i wq = SFX(load_pair)(w[i].qs, w[i + 1].qs);
        const __m512i aw = _mm512_abs_epi8(wq);
        const __mmask64 neg = _mm512_movepi8_mask(wq);
        const float dw0 = h2f(w[i].d), dw1 = h2f(w[i + 1].d);
        for (int t = 0; t < NT; t++) {
            const block_q8_0 *x0 = XT(block_q8_0, t) + i, *x1 = x0 + 1;
            const __m512i y = SFX(load_pair)(x0->qs, x1->qs);
            const __m512i sy = _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y);
            const __m512i p = DOT_US(_mm512_setzero_si512(), aw, sy);
            acc[t] = _mm512_fmadd_ps(SFX(scale_pair)(dw0 * h2f(x0->d), dw1 * h2f(x1->d)), _mm512_cvtepi32_ps(p), acc[t]);
        }
    }
    for (int t = 0; t < NT; t++) s[t] = _mm512_reduce_add_ps(acc[t]);
    if (nb & 1) {
        float tail[4];
        lk_avx2_rows(LK_TYPE_Q8_0, QK, w + nb - 1, (const uint8_t *)vx + (size_t)(nb - 1) * sizeof(block_q8_0), xs, tail, NT);
        for (int t = 0; t < NT; t++) s[t] += tail[t];
    }
}

#undef PAIR_M
#undef PAIR_KERNEL
#undef ZERO4
#undef Q5_PREP
#undef SFX
#undef DOT_US

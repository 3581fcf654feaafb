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

/* The f16 fields at a and b as floats in lanes 0 and 1 (one vcvtph2ps for both). */
INLINE __m128 SFX(h2f_pair)(const uint16_t *a, const uint16_t *b) {
    return _mm_cvtph_ps(_mm_cvtsi32_si128((int)((uint32_t)*a | ((uint32_t)*b << 16))));
}

/* lanes 0-7 = v[0], lanes 8-15 = v[1] */
INLINE __m512 SFX(spread_pair)(__m128 v) {
    return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), _mm512_castps128_ps512(v));
}

/* Body shared by the 32-block kernels: NR weight rows (1 or 2, row r at vw + r·ws) × NT activation rows
 * (1 or 4); s[r·4 + t]. Two rows share each activation load, its scale conversion and the offset sum.
 * PREP builds the weight vector `q` of blocks w0, w1; OFFSET is subtracted from every weight (Q4_0: 8,
 * Q5_0: 16) through Σy; HAS_M adds the Q8_1 term m·s (MW / XSUM read those fields, zero otherwise). */
#define PAIR_KERNEL(NAME, TYPEID, W, X, PREP, OFFSET, HAS_M, MW, XSUM)                                      \
    INLINE void SFX(NAME)(int64_t n, const void *vw, size_t ws, const void *vx, size_t xs, float *s, const int NR, \
                          const int NT) {                                                                    \
        const int64_t nb = n / QK;                                                                           \
        __m512 acc[2][4];                                                                                    \
        __m128 summ[2][4];                                                                                   \
        for (int r = 0; r < 2; r++)                                                                          \
            for (int t = 0; t < 4; t++) acc[r][t] = _mm512_setzero_ps(), summ[r][t] = _mm_setzero_ps();      \
        for (int64_t i = 0; i + 1 < nb; i += 2) {                                                            \
            __m512i qr[2];                                                                                   \
            __m128 dw[2], mw[2];                                                                             \
            for (int r = 0; r < NR; r++) {                                                                   \
                const W *w0 = (const W *)((const uint8_t *)vw + (size_t)r * ws) + i, *w1 = w0 + 1;          \
                PREP                                                                                         \
                qr[r] = q;                                                                                   \
                dw[r] = SFX(h2f_pair)(&w0->d, &w1->d);                                                       \
                mw[r] = MW;                                                                                  \
            }                                                                                                \
            for (int t = 0; t < NT; t++) {                                                                   \
                const X *x0 = XT(X, t) + i, *x1 = x0 + 1;                                                    \
                const __m512i y = SFX(load_pair)(x0->qs, x1->qs);                                            \
                const __m128 xd = SFX(h2f_pair)(&x0->d, &x1->d);                                             \
                const __m512i off = OFFSET ? DOT_US(_mm512_setzero_si512(), _mm512_set1_epi8(OFFSET), y)     \
                                           : _mm512_setzero_si512();                                         \
                const __m128 xsum = XSUM;                                                                    \
                for (int r = 0; r < NR; r++) {                                                               \
                    __m512i p = DOT_US(_mm512_setzero_si512(), qr[r], y);                                    \
                    if (OFFSET) p = _mm512_sub_epi32(p, off);                                                \
                    const __m128 d = _mm_mul_ps(dw[r], xd);                                                  \
                    acc[r][t] = _mm512_fmadd_ps(SFX(spread_pair)(d), _mm512_cvtepi32_ps(p), acc[r][t]);      \
                    if (HAS_M) summ[r][t] = _mm_fmadd_ps(mw[r], xsum, summ[r][t]);                            \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        for (int r = 0; r < NR; r++)                                                                         \
            for (int t = 0; t < NT; t++) {                                                                   \
                const __m128 m = _mm_add_ss(summ[r][t], _mm_movehdup_ps(summ[r][t])); /* lanes 0 + 1 */      \
                s[4 * r + t] = _mm512_reduce_add_ps(acc[r][t]) + _mm_cvtss_f32(m);                           \
            }                                                                                                \
        if (nb & 1) { /* odd last block */                                                                  \
            for (int r = 0; r < NR; r++) {                                                                   \
                float tail[4];                                                                               \
                const W *wl = (const W *)((const uint8_t *)vw + (size_t)r * ws) + nb - 1;                    \
                lk_avx2_rows(TYPEID, QK, wl, (const uint8_t *)vx + (size_t)(nb - 1) * sizeof(X), xs, tail, NT); \
                for (int t = 0; t < NT; t++) s[4 * r + t] += tail[t];                                        \
            }                                                                                                \
        }                                                                                                    \
    }

#define NO_M _mm_setzero_ps()
#define W_M SFX(h2f_pair)(&w0->m, &w1->m)
#define X_S SFX(h2f_pair)(&x0->s, &x1->s)
#define PREP_NIBBLES const __m512i q = SFX(nibbles_64)(w0->qs, w1->qs);

PAIR_KERNEL(q4_1, LK_TYPE_Q4_1, block_q4_1, block_q8_1, PREP_NIBBLES, 0, 1, W_M, X_S)

/* 5th bits: bit j of qh is element j of the block, so the two qh words form the byte mask directly */
#define Q5_PREP                                                                                              \
    uint32_t h0, h1;                                                                                         \
    memcpy(&h0, w0->qh, 4);                                                                                  \
    memcpy(&h1, w1->qh, 4);                                                                                  \
    const __m512i nib = SFX(nibbles_64)(w0->qs, w1->qs);                                                     \
    const __m512i q = _mm512_mask_add_epi8(nib, (__mmask64)h0 | ((__mmask64)h1 << 32), nib, _mm512_set1_epi8(16));

PAIR_KERNEL(q5_0, LK_TYPE_Q5_0, block_q5_0, block_q8_0, Q5_PREP, 16, 0, NO_M, NO_M)
PAIR_KERNEL(q5_1, LK_TYPE_Q5_1, block_q5_1, block_q8_1, Q5_PREP, 0, 1, W_M, X_S)

/* Q8_0 × Q8_0 is s8 × s8: take |w| and move w's sign onto the activations (per row: sign differs) */
INLINE void SFX(q8_0)(int64_t n, const void *vw, size_t ws, const void *vx, size_t xs, float *s, const int NR,
                      const int NT) {
    const int64_t nb = n / QK;
    __m512 acc[2][4];
    for (int r = 0; r < 2; r++)
        for (int t = 0; t < 4; t++) acc[r][t] = _mm512_setzero_ps();
    for (int64_t i = 0; i + 1 < nb; i += 2) {
        __m512i aw[2];
        __mmask64 neg[2];
        __m128 dw[2];
        for (int r = 0; r < NR; r++) {
            const block_q8_0 *w0 = (const block_q8_0 *)((const uint8_t *)vw + (size_t)r * ws) + i, *w1 = w0 + 1;
            const __m512i wq = SFX(load_pair)(w0->qs, w1->qs);
            aw[r] = _mm512_abs_epi8(wq);
            neg[r] = _mm512_movepi8_mask(wq);
            dw[r] = SFX(h2f_pair)(&w0->d, &w1->d);
        }
        for (int t = 0; t < NT; t++) {
            const block_q8_0 *x0 = XT(block_q8_0, t) + i, *x1 = x0 + 1;
            const __m512i y = SFX(load_pair)(x0->qs, x1->qs);
            const __m128 xd = SFX(h2f_pair)(&x0->d, &x1->d);
            for (int r = 0; r < NR; r++) {
                const __m512i sy = _mm512_mask_sub_epi8(y, neg[r], _mm512_setzero_si512(), y);
                const __m512i p = DOT_US(_mm512_setzero_si512(), aw[r], sy);
                acc[r][t] = _mm512_fmadd_ps(SFX(spread_pair)(_mm_mul_ps(dw[r], xd)), _mm512_cvtepi32_ps(p), acc[r][t]);
            }
        }
    }
    for (int r = 0; r < NR; r++)
        for (int t = 0; t < NT; t++) s[4 * r + t] = _mm512_reduce_add_ps(acc[r][t]);
    if (nb & 1) {
        for (int r = 0; r < NR; r++) {
            float tail[4];
            const block_q8_0 *wl = (const block_q8_0 *)((const uint8_t *)vw + (size_t)r * ws) + nb - 1;
            lk_avx2_rows(LK_TYPE_Q8_0, QK, wl, (const uint8_t *)vx + (size_t)(nb - 1) * sizeof(block_q8_0), xs, tail, NT);
            for (int t = 0; t < NT; t++) s[4 * r + t] += tail[t];
        }
    }
}

#undef NO_M
#undef W_M
#undef X_S
#undef PREP_NIBBLES
#undef PAIR_KERNEL
#undef Q5_PREP
#undef SFX
#undef DOT_US

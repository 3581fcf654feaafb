/* The exact integer parts of the AVX2 Q4_K and Q6_K row kernels, shared by x86/avx2/decode.c (ggml_vec_dot's float
 * order) and reference/llama_order_kquant.c (llama.cpp's repacked / tiled orders). Integer sums are the same in any
 * order; only what the callers do with them in float differs. Include inside an avx2 target region, after
 * defining INLINE. Activation row t is the block_q8_K array at (const uint8_t *)vx + t · xs. */
#ifndef LK_KERNELS_AVX2_KSUMS_H
#define LK_KERNELS_AVX2_KSUMS_H

#define KS_X(t) ((const block_q8_K *)((const uint8_t *)vx + (size_t)(t) * xs))

/* sumi[c][t], 8 s32 lanes summing to S_c = sc_2c · Σ lo·x + sc_2c+1 · Σ hi·x over 64-element chunk c of
 * block i with token t (t < NT). */
INLINE void q4_K_chunk_sums(const block_q4_K *b, const uint8_t sc[8], const void *vx, size_t xs, int64_t i,
                            const int NT, __m256i sumi[4][4]) {
    const __m256i m4 = _mm256_set1_epi8(15);
    for (int c = 0; c < 4; c++) {
        const __m256i bits = _mm256_loadu_si256((const __m256i *)(b->qs + 32 * c));
        const __m256i lo = _mm256_and_si256(bits, m4), hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
        const __m256i s0 = _mm256_set1_epi16(sc[2 * c]), s1 = _mm256_set1_epi16(sc[2 * c + 1]);
        for (int t = 0; t < NT; t++) {
            const int8_t *a = KS_X(t)[i].qs + 64 * c;
            const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)a)), s0);
            const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(a + 32))), s1);
            sumi[c][t] = _mm256_add_epi32(p0, p1);
        }
    }
}

/* sumi[t], 8 s32 lanes summing to S = Σ_g sc_g · Σ (q − 32)·x over block i with token t (t < NT): q = 0..63 as
 * u8, the −32 offset applied through the activation block sums. */
INLINE void q6_K_block_sums(const block_q6_K *b, const void *vx, size_t xs, int64_t i, const int NT, __m256i sumi[4]) {
    const __m256i m4 = _mm256_set1_epi8(15), m3 = _mm256_set1_epi8(3);
    for (int t = 0; t < NT; t++) sumi[t] = _mm256_setzero_si256();
    for (int half = 0; half < 2; half++) {
        const uint8_t *ql = b->ql + 64 * half, *qh = b->qh + 32 * half;
        const int8_t *sc = b->scales + 8 * half;
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql), l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
        const __m256i hb = _mm256_loadu_si256((const __m256i *)qh);
        const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m3), 4));
        const __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), m3), 4));
        const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), m3), 4));
        const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), m3), 4));
        const __m256i s0 = _mm256_set_m128i(_mm_set1_epi16(sc[1]), _mm_set1_epi16(sc[0]));
        const __m256i s1 = _mm256_set_m128i(_mm_set1_epi16(sc[3]), _mm_set1_epi16(sc[2]));
        const __m256i s2 = _mm256_set_m128i(_mm_set1_epi16(sc[5]), _mm_set1_epi16(sc[4]));
        const __m256i s3 = _mm256_set_m128i(_mm_set1_epi16(sc[7]), _mm_set1_epi16(sc[6]));
        for (int t = 0; t < NT; t++) {
            const int8_t *a = KS_X(t)[i].qs + 128 * half;
            __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(q1, _mm256_loadu_si256((const __m256i *)a)), s0);
            p = _mm256_add_epi32(p, _mm256_madd_epi16(_mm256_maddubs_epi16(q2, _mm256_loadu_si256((const __m256i *)(a + 32))), s1));
            p = _mm256_add_epi32(p, _mm256_madd_epi16(_mm256_maddubs_epi16(q3, _mm256_loadu_si256((const __m256i *)(a + 64))), s2));
            p = _mm256_add_epi32(p, _mm256_madd_epi16(_mm256_maddubs_epi16(q4, _mm256_loadu_si256((const __m256i *)(a + 96))), s3));
            sumi[t] = _mm256_add_epi32(sumi[t], p);
        }
    }
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b->scales));
    for (int t = 0; t < NT; t++) { /* − 32 · Σ_g sc_g · bsum_g */
        const __m256i corr = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)KS_X(t)[i].bsums));
        sumi[t] = _mm256_sub_epi32(sumi[t], _mm256_slli_epi32(corr, 5));
    }
}

#undef KS_X
#endif

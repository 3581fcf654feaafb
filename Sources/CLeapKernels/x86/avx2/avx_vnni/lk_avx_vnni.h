/* The AVX-VNNI table's kernels (LK_ISA_AVX_VNNI): the AVX2 table's files built a second time, for AVX2 CPUs
 * with the VEX-encoded vpdpbusd / vpdpwssd (Intel Alder Lake and later client cores, Sierra Forest; Zen 5).
 * Each file of x86/avx2/avx_vnni/ includes this header, then one AVX2 file: LK_AVXVNNI switches the file's target to
 * LK_AVX2_TARGET's wider one and its integer products to vpdpbusd where the AVX2 code spends vpmaddubsw +
 * vpmaddwd (lk_dpbusd256 and the kernels' own #ifdef LK_AVXVNNI parts), and the renames below give the
 * second build's external names. The products are the same exact integers, so the table's results are the
 * AVX2 table's bit for bit (the tests check it). The gemms add each token's products in two vpdpbusd chains
 * (even and odd vectors): one chain waited on the instruction's latency. Q4_0's gemm keeps its s16 sums (one
 * vpmaddubsw + one vpaddw per vector, as many multiplies as vpdpbusd: its vpdpbusd form was slower).
 * Figures (the table forced on a CPU with AVX-VNNI next to AVX-512): BENCHMARKS.md. */
#ifndef LK_AVX_VNNI_H
#define LK_AVX_VNNI_H
#define LK_AVXVNNI 1
#define lk_avx2_prefill lk_avxvnni_prefill
#define lk_avx2_q8_0 lk_avxvnni_q8_0
#define lk_avx2_kquant lk_avxvnni_kquant
#define lk_avx2_fewtokens lk_avxvnni_fewtokens
#define lk_avx2_rows8_q4_1_q5 lk_avxvnni_rows8_q4_1_q5
#define lk_q4_0_avx2 lk_q4_0_avxvnni
#define lk_gemm_q4_0_rows8_avx2 lk_gemm_q4_0_rows8_avxvnni
#define lk_gemm_q8_0_rows8_avx2 lk_gemm_q8_0_rows8_avxvnni
#endif

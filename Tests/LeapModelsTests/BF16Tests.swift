// BF16 weights as ggml multiplies them: activations rounded to BF16 (the BF16 type's vec_dot_type), summed in
// llama.cpp's order where the CPU has AVX512-BF16 (VDPBF16PS, what llama.cpp's AVX-512 build uses there).
import LeapKernels
import LeapModels
import Testing

@Test(.enabled(if: KernelISA.cpuHasBF16DotProduct, "the CPU lacks AVX512-BF16: llama.cpp's BF16 order is not reproduced"),
      arguments: [KernelISA.avx512, .avx512NoVNNI, .llamaOrder])
func bf16MatchesLlamaCppLikeFloatFiles(isa: KernelISA) throws {
    let name = "lfm2-tiny-bf16"
    let g = try #require(LlamaCppGolden(path: goldensDir + "/\(name).llamacpp.txt"))
    let model = try loadTiny(name)
    let r = try #require(try isa.withThreadSelection {
        (try maxTop5LogitDiff(model, g), try compareTeacherForced(model, g), try greedyMatches(model, g, count: 32))
    })
    let ((diff, scale), s, (greedy, _)) = r
    print("\(name) [\(isa.name)]: max top-5 logit diff \(diff) (largest logit \(scale)), agreement \(s.agreement), ppl \(s.perplexity) vs \(g.perplexity), greedy \(greedy)")
    // Same activations, same order: what is left is the golden's 5 printed decimals (5e-6) and a float ulp of
    // logits up to ~16 (2e-6), as for the F32 and F16 files. With the same rounding but another summation
    // order (the generic kernels: LEAP_KERNEL_ISA=avx2 or scalar) the largest difference is 0.3-0.4% of the
    // largest logit: each BF16 rounding that lands on the other side moves the next matmul's input by 2^-8.
    #expect(diff < 1e-5)
    #expect(s.agreement == 1)
    #expect(abs(s.perplexity / g.perplexity - 1) < 1e-6)
    #expect(greedy == [32, 32, 32, 32])
}

import LeapAudioEncoder
import LeapCore
import Testing

@Suite struct EncoderGoldenTests {
    /// F32 weights, F32 activations: the same arithmetic as torch up to summation order (its GEMMs and FFT
    /// against our kernels). Measured 1.7-3.5e-6 for outputs up to 1.8; 1e-4 leaves room for other SIMD paths
    /// while a wrong sign, index or missing term anywhere moves outputs by far more.
    @Test(arguments: rawClips)
    func tinyF32MatchesLiquidAudio(_ clip: String) throws {
        let encoder = try loadEncoder(tinyModel, numerics: .liquidAudio)
        let samples = try loadClip(clip)
        let got = try encode(encoder, samples)
        let want = try golden("\(clip).\(tinyModel).la.f32")
        #expect(got.count == encoder.embeddingCount(sampleCount: samples.count) * encoder.outputDim)
        #expect(got.count == want.count)
        let (diff, scale) = maxDifference(got, want)
        #expect(diff < 1e-4, "max |Δ| \(diff) (values up to \(scale))")
    }

    /// The 512-wide file (Q8_0 and F16 weights) against liquid-audio running the weights the file stores, in
    /// float32. What differs is the activations: like ggml, Q8_0 weights multiply activations rounded to Q8_0
    /// blocks (each value to 1/254 of its block's largest) and F16 weights activations rounded to F16 (2⁻¹¹
    /// relative). That rounding moves outputs by about 1% of their range (measured 0.028-0.030 for values up
    /// to 2.9), so the bound is 0.06 on the largest difference and every row must keep its direction
    /// (cosine > 0.999); mtmd, which rounds the same way, is held much closer (EncoderMtmdTests).
    @Test(arguments: rawClips)
    func mixedMatchesLiquidAudio(_ clip: String) throws {
        let encoder = try loadEncoder(mixedModel, numerics: .liquidAudio)
        let samples = try loadClip(clip)
        let got = try encode(encoder, samples)
        let want = try golden("\(clip).\(mixedModel).la.f32")
        #expect(got.count == want.count)
        let (diff, scale) = maxDifference(got, want)
        #expect(diff < 0.06, "max |Δ| \(diff) (values up to \(scale))")
        let d = encoder.outputDim
        var worst = 1.0
        for r in 0..<(got.count / d) { worst = min(worst, cosine(got[(r * d)..<((r + 1) * d)], want[(r * d)..<((r + 1) * d)])) }
        #expect(worst > 0.999, "lowest row cosine \(worst)")
    }
}

@Suite struct EncoderInvarianceTests {
    /// Work is split by output rows, (head, query block) tasks and FFT batches, never inside a sum, so the
    /// thread count cannot change a single bit; per-thread scratch that overlapped would.
    @Test func threadCountDoesNotChangeTheResult() throws {
        let encoder = try loadEncoder(mixedModel)
        let samples = try loadClip("clip_4s")
        let one = try encode(encoder, samples, threads: 1)
        for threads in [2, 3] {
            #expect(try encode(encoder, samples, threads: threads) == one, "\(threads) threads")
        }
    }

    /// A clip's embeddings do not depend on what was encoded before (no state kept between calls).
    @Test func encodesAreIndependent() throws {
        let encoder = try loadEncoder(tinyModel, numerics: .liquidAudio)
        let a = try loadClip("clip_1s37"), b = try loadClip("clip_4s")
        let first = try encode(encoder, a)
        _ = try encode(encoder, b)
        #expect(try encode(encoder, a) == first)
    }
}

@Suite struct EncoderNumericsTests {
    /// llama.cpp's arithmetic rounds conv.0's input and kernel to F16: on the F32 tiny model that moves the
    /// embeddings off liquid-audio's by F16 rounding carried through the encoder (2⁻¹¹ relative on the first
    /// layer's inputs; measured 6e-4 against 2e-6), where the float arithmetic stays within 1e-4.
    @Test func llamaCppNumericsRoundTheFirstConvolution() throws {
        let samples = try loadClip("clip_2s5")
        let want = try golden("clip_2s5.\(tinyModel).la.f32")
        let exact = try encode(loadEncoder(tinyModel, numerics: .liquidAudio), samples)
        let llama = try encode(loadEncoder(tinyModel, numerics: .llamaCpp), samples)
        #expect(try loadEncoder(tinyModel).numerics == .llamaCpp)
        let e = maxDifference(exact, want).diff, l = maxDifference(llama, want).diff
        #expect(e < 1e-4)
        #expect(l > 2 * e && l < 5e-3, "llama.cpp arithmetic \(l), float \(e)")
    }
}

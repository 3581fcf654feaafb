// The encoder against llama.cpp mtmd (scripts/fixtures/make_vision_mtmd_goldens.py) with its default
// arithmetic (VisionNumerics.llamaCpp: ggml's table GELU in the MLP and the projector, patch embedding in
// F16): the same RGB8 pattern images, normalized as mtmd does.
import LeapGGUF
import LeapKernels
import LeapVision
import Testing

@Suite struct EncoderLlamaCppTests {
    struct Comparison {
        var maxDiff: Float
        var meanDiff: Float
    }

    func compare(_ type: String, _ h: Int, _ w: Int, _ seed: Int, golden: String? = nil) throws -> Comparison {
        let pool = try makePool()
        let enc = try VisionEncoder.load(file: mmproj(type))
        let want = try #require(fixtureFloats(golden ?? "mtmd_\(type)_\(h)x\(w).f32"))
        let got = try enc.encode(tile: testTile(height: h, width: w, seed: seed), pool: pool)
        try #require(got.count == want.count)
        let mean = zip(got, want).reduce(Float(0)) { $0 + abs($1.0 - $1.1) } / Float(got.count)
        return Comparison(maxDiff: maxAbsDiff(got, want), meanDiff: mean)
    }

    /// F32 mmproj, mtmd with flash attention off (F32 attention like ours). Everything is float32 in other
    /// summation orders, except where both round to F16 (the patch embedding's pixels and kernel) and the
    /// GELU table, which is looked up by the input's F16 bits: an input within float noise of an F16
    /// rounding boundary can take the neighbouring entry on one side, a step of 2^-11 relative. The
    /// features are ~0.35 at most; 2e-4 allows a few such steps reaching a feature.
    @Test(arguments: fixtureTiles.map { [$0.height, $0.width, $0.seed] })
    func f32MatchesMtmd(_ t: [Int]) throws {
        let c = try compare("f32", t[0], t[1], t[2])
        #expect(c.maxDiff <= 2e-4, "\(t[0])x\(t[1]): max |diff| \(c.maxDiff)")
    }

    /// F16 weights: both sides also round every matrix input to F16 (ggml's vec_dot type). The products
    /// before each rounding sum in different orders (ours blocked, ggml's its dot products), so an input
    /// within float noise of an F16 rounding boundary goes to the neighbouring F16 value on one side: a step
    /// of 2^-11 relative (4.9e-4), about 1.7e-4 on the largest features (~0.35) when it reaches one at full
    /// size. 2e-4 allows about one such step at the largest feature (most steps are damped on the way).
    @Test(arguments: [[256, 384, 3], [320, 448, 5]])
    func f16MatchesMtmd(_ t: [Int]) throws {
        let c = try compare("f16", t[0], t[1], t[2])
        #expect(c.maxDiff <= 2e-4, "\(t[0])x\(t[1]): max |diff| \(c.maxDiff)")
    }

    /// mtmd's default flash attention casts K and V to F16; ours stays F32. That rounding (2^-11 relative
    /// on keys and values) is of the size of the F16 weights' activation rounding above: the same bound.
    @Test func f32MatchesMtmdFlashAttention() throws {
        let c = try compare("f32", 256, 384, 3, golden: "mtmd_fa_f32_256x384.f32")
        #expect(c.maxDiff <= 2e-4, "max |diff| \(c.maxDiff)")
    }

    /// Q8_0 weights: both sides quantize every matrix input to 8-bit blocks of the same values, but the float
    /// products before it (attention, patch embedding) sum in different orders, so an activation within float
    /// noise of a rounding midpoint lands in the neighbouring level on one side, an error of the same kind
    /// and size as the quantization itself, and those flips propagate. Ours therefore is not mtmd's Q8_0
    /// model bit for bit but an equally faithful one: measured against mtmd's F32 features (the model
    /// without quantization), it stays as close as mtmd's own Q8_0 features are, on the worst feature and on
    /// average; 25 % covers how much the worst of a few thousand features moves between two such runs.
    @Test(arguments: [[256, 384, 3], [320, 448, 5]])
    func q8_0MatchesMtmd(_ t: [Int]) throws {
        let q8 = try #require(fixtureFloats("mtmd_q8_0_\(t[0])x\(t[1]).f32"))
        let f32 = try #require(fixtureFloats("mtmd_f32_\(t[0])x\(t[1]).f32"))
        let quantization = maxAbsDiff(q8, f32)
        let quantizationMean = zip(q8, f32).reduce(Float(0)) { $0 + abs($1.0 - $1.1) } / Float(f32.count)
        #expect(quantization > 1e-3, "the Q8_0 file should differ from the F32 one: \(quantization)")
        let c = try compare("q8_0", t[0], t[1], t[2], golden: "mtmd_f32_\(t[0])x\(t[1]).f32")
        #expect(c.maxDiff <= 1.25 * quantization, "\(t[0])x\(t[1]): max |diff| \(c.maxDiff), mtmd's \(quantization)")
        #expect(c.meanDiff <= 1.25 * quantizationMean,
                "\(t[0])x\(t[1]): mean |diff| \(c.meanDiff), mtmd's \(quantizationMean)")
    }

    /// The same tile through transformers' arithmetic lands farther from mtmd than the llama.cpp arithmetic
    /// does (on average: the table's F16 steps touch every value a little): the default really is llama.cpp's.
    @Test func llamaCppNumericsAreCloserToMtmd() throws {
        let pool = try makePool()
        let enc = try VisionEncoder.load(file: mmproj("f32"))
        let tile = testTile(height: 320, width: 448, seed: 5)
        let want = try #require(fixtureFloats("mtmd_f32_320x448.f32"))
        func mean(_ a: [Float]) -> Float { zip(a, want).reduce(Float(0)) { $0 + abs($1.0 - $1.1) } / Float(a.count) }
        let ours = mean(try enc.encode(tile: tile, pool: pool))
        let hf = mean(try enc.with(numerics: .transformers).encode(tile: tile, pool: pool))
        #expect(ours * 5 < hf, "mean |diff| with llama.cpp arithmetic \(ours), with transformers' \(hf)")
    }
}

// The encoder's data movements against transformers: the position-grid resize (Siglip2VisionEmbeddings.
// resize_positional_embeddings) and the 2x2 pixel-unshuffle (Lfm2VlModel.get_image_features' gather and
// pixel_unshuffle), plus the identities they must satisfy.
import LeapGGUF
import LeapKernels
import LeapVision
import Testing

@Suite struct EncoderLayoutTests {
    /// The tiny model's learned 16 x 16 x 64 grid, row-major (v.position_embd.weight).
    func grid() throws -> [Float] {
        let f = try mmproj("f32")
        return try f.dequantize(try #require(f.tensor(named: "v.position_embd.weight")))
    }

    func resized(_ grid: [Float], height: Int, width: Int) -> [Float] {
        var out = [Float](repeating: .nan, count: height * width * 64)
        grid.withUnsafeBufferPointer { g in
            out.withUnsafeMutableBufferPointer { o in
                PositionEmbeddingResize.resize(g.baseAddress!, gridHeight: 16, gridWidth: 16, dim: 64,
                                               height: height, width: width, into: o.baseAddress!)
            }
        }
        return out
    }

    /// Up- and down-sampling, square and not. transformers rounds the triangle weights to float32 (here they
    /// are rounded from double) and multiplies row by column weights before one matmul over the 256 grid
    /// values (here two separable passes): both sum a few weighted values of up to ~2.5 in float32, so the
    /// results differ by a few ulps of 2.5 (2.4e-7 each); 4e-6 allows 16.
    @Test(arguments: [[16, 16], [24, 16], [20, 28], [6, 10], [32, 8]])
    func resizeMatchesTransformers(_ s: [Int]) throws {
        let (h, w) = (s[0], s[1])
        let want = try #require(fixtureFloats("hf_posresize_\(h)x\(w).f32"))  // [h·w, 8]: channels 0..<8
        let got = resized(try grid(), height: h, width: w)
        let firstChannels = (0..<h * w).flatMap { p in got[p * 64..<p * 64 + 8] }
        #expect(maxAbsDiff(firstChannels, want) <= 4e-6, "\(h)x\(w)")
    }

    /// At the grid's own size the resize is the identity, bit for bit (weights 1 and 0).
    @Test func resizeToTheSameSizeIsTheIdentity() throws {
        let g = try grid()
        #expect(resized(g, height: 16, width: 16) == g)
    }

    /// Every axis weight row is a partition of unity, and antialiasing widens the triangle when shrinking:
    /// 16 → 6 spreads each output over more than 2 sources, 16 → 32 over at most 2.
    @Test func axisWeightsSumToOneAndWidenWhenShrinking() {
        for (i, o) in [(16, 6), (16, 32), (16, 20), (16, 16)] {
            let w = PositionEmbeddingResize.axisWeights(inputs: i, outputs: o)
            for r in 0..<o {
                let row = w[r * i..<(r + 1) * i]
                #expect(abs(row.reduce(0, +) - 1) < 1e-6)
                let support = row.filter { $0 > 0 }.count
                #expect(o < i ? support > 2 : support <= 2, "\(i) → \(o) row \(r): \(support) sources")
            }
        }
    }

    /// The merged tokens of an [h, w, 3] grid whose value is its flat index, as transformers builds them.
    @Test(arguments: [[4, 6], [2, 2]])
    func pixelUnshuffleMatchesTransformers(_ s: [Int]) throws {
        let (h, w) = (s[0], s[1])
        let want = try #require(fixtureFloats("unshuffle_\(h)x\(w).f32"))
        let x = (0..<h * w * 3).map(Float.init)
        var y = [Float](repeating: .nan, count: x.count)
        x.withUnsafeBufferPointer { xp in
            y.withUnsafeMutableBufferPointer { yp in
                PixelUnshuffle.apply(xp.baseAddress!, height: h, width: w, channels: 3, factor: 2, into: yp.baseAddress!)
            }
        }
        #expect(y == want)
        // Token 0 = patches (0,0), (0,1), (1,0), (1,1): the block's rows one after the other.
        let firstToken: [Float] = (0..<6).map { Float($0) } + (0..<6).map { Float(3 * w + $0) }
        #expect(Array(y[0..<12]) == firstToken)
    }
}

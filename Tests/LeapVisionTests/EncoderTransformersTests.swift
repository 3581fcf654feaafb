// The encoder against transformers' Lfm2VlModel.get_image_features (fp32, exact GELU in the projector) on
// the random-weight tiny model of scripts/fixtures/make_vision_fixtures.py.
import LeapGGUF
import LeapKernels
import LeapVision
import Testing

@Suite struct EncoderTransformersTests {
    /// Features vs transformers with its arithmetic (tanh GELU in the MLP, erf in the projector, float32
    /// patch embedding), F32 mmproj. Both sides compute in float32 with different summation orders over at
    /// most 768 terms per product, through 3 blocks: the tower's values (up to ~5) agree within a few
    /// float32 ulps of 5 (4.8e-7 each), the features (up to ~0.35) within far less; 1e-5 bounds both.
    @Test(arguments: fixtureTiles.map { [$0.height, $0.width, $0.seed] })
    func featuresMatchTransformers(_ t: [Int]) throws {
        let (h, w, seed) = (t[0], t[1], t[2])
        let pool = try makePool()
        let enc = try VisionEncoder.load(file: mmproj("f32"), numerics: .transformers)
        let tile = testTile(height: h, width: w, seed: seed)
        let want = try #require(fixtureFloats("hf_\(h)x\(w).f32"))
        let got = try enc.encode(tile: tile, pool: pool)
        #expect(got.count == want.count)
        #expect(got.count == enc.tokenCount(width: w, height: h) * enc.outputDim)
        let d = maxAbsDiff(got, want)
        #expect(d <= 1e-5, "\(h)x\(w): max |diff| \(d) (values up to \(maxAbs(want)))")
    }

    /// The tower alone (post_ln output, before the merge and projector).
    @Test(arguments: [[256, 256, 1], [320, 448, 5]])
    func towerMatchesTransformers(_ t: [Int]) throws {
        let (h, w, seed) = (t[0], t[1], t[2])
        let pool = try makePool()
        let enc = try VisionEncoder.load(file: mmproj("f32"), numerics: .transformers)
        let want = try #require(fixtureFloats("hf_tower_\(h)x\(w).f32"))
        let got = try enc.towerFeatures(tile: testTile(height: h, width: w, seed: seed), pool: pool)
        let d = maxAbsDiff(got, want)
        #expect(d <= 1e-5, "\(h)x\(w): max |diff| \(d) (values up to \(maxAbs(want)))")
    }

    /// The projector's GELU is a real choice: erf vs tanh changes the features by far more than the
    /// float32 noise of the comparison above, and only the erf form matches transformers.
    @Test func projectorGELUFormMatters() throws {
        let pool = try makePool()
        let file = try mmproj("f32")
        let erf = try VisionEncoder.load(file: file, numerics: .transformers)
        let tanh = erf.with(numerics: VisionNumerics(mlpGELU: .tanh, projectorGELU: .tanh, patchEmbeddingInF16: false))
        let tile = testTile(height: 256, width: 256, seed: 1)
        let want = try #require(fixtureFloats("hf_256x256.f32"))
        let dErf = maxAbsDiff(try erf.encode(tile: tile, pool: pool), want)
        let dTanh = maxAbsDiff(try tanh.encode(tile: tile, pool: pool), want)
        #expect(dErf <= 1e-5)
        #expect(dTanh > 10 * dErf, "tanh GELU in the projector should differ visibly from transformers' erf: \(dTanh) vs \(dErf)")
    }

    /// A PreprocessedImage's rows are its tiles' in order (tiles, then the thumbnail).
    @Test func imageRowsAreTheTilesInOrder() throws {
        let pool = try makePool()
        let enc = try VisionEncoder.load(file: mmproj("f32"), numerics: .transformers)
        let a = fixtureTiles[3], b = fixtureTiles[1]
        let image = PreprocessedImage(tiles: [testTile(height: a.height, width: a.width, seed: a.seed),
                                              testTile(height: b.height, width: b.width, seed: b.seed)],
                                      grid: (rows: 1, cols: 1))
        let want = try #require(fixtureFloats("hf_\(a.height)x\(a.width).f32")) + #require(fixtureFloats("hf_\(b.height)x\(b.width).f32"))
        let got = try enc.encode(image, pool: pool)
        #expect(maxAbsDiff(got, want) <= 1e-5)
    }
}

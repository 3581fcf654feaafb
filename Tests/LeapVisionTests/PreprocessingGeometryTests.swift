import LeapCore
import LeapVision
import Testing

struct PreprocessingGeometryCase: CustomStringConvertible, Sendable {
    struct Side: Sendable, Equatable {
        var cols: Int, rows: Int, tokens: Int, sizes: [PixelSize]
    }
    var width: Int, height: Int, llama: Side, hf: Side
    var description: String { "\(width)x\(height)" }
}

/// geometry.txt: `W H llama cols rows tokens WxH,... hf cols rows tokens WxH,...` (cols = rows = 0: untiled).
fileprivate let geometryCases: [PreprocessingGeometryCase] = PreprocessingFixtures.lines("geometry.txt").compactMap { f in
    func side(_ at: Int) -> PreprocessingGeometryCase.Side? {
        guard let c = Int(f[at + 1]), let r = Int(f[at + 2]), let t = Int(f[at + 3]) else { return nil }
        let sizes = f[at + 4].split(separator: ",").compactMap { s -> PixelSize? in
            let p = s.split(separator: "x")
            guard p.count == 2, let w = Int(p[0]), let h = Int(p[1]) else { return nil }
            return PixelSize(width: w, height: h)
        }
        return PreprocessingGeometryCase.Side(cols: c, rows: r, tokens: t, sizes: sizes)
    }
    guard f.count == 12, f[2] == "llama", f[7] == "hf", let w = Int(f[0]), let h = Int(f[1]),
          let l = side(2), let hf = side(7) else { return nil }
    return PreprocessingGeometryCase(width: w, height: h, llama: l, hf: hf)
}

fileprivate let defaults = LFM2VLImageParameters()

fileprivate func pair(_ g: (cols: Int, rows: Int)) -> [Int] { [g.cols, g.rows] }

fileprivate func ourSide(_ width: Int, _ height: Int, _ p: LFM2VLImageParameters = defaults) -> PreprocessingGeometryCase.Side {
    let layout = p.layout(width: width, height: height)
    return PreprocessingGeometryCase.Side(cols: layout.grid?.cols ?? 0, rows: layout.grid?.rows ?? 0,
                             tokens: layout.tokenCount(tileSize: p.tileSize, alignment: p.alignment),
                             sizes: layout.inputSizes(tileSize: p.tileSize))
}

@Suite struct PreprocessingGeometryTests {
    @Test func fixturesArePresent() {
        #expect(geometryCases.count >= 40, "fixtures missing in \(PreprocessingFixtures.dir)")
    }

    /// The token counts llama.cpp printed for LFM2-VL (multimodal.md §B.1).
    @Test func knownTokenCounts() {
        #expect(ourSide(1024, 768).tokens == 1770)
        #expect(ourSide(1024, 768).sizes.last == PixelSize(width: 576, height: 416))
        #expect(ourSide(1024, 768).cols == 3 && ourSide(1024, 768).rows == 2)
        #expect(ourSide(60, 100).tokens == 77)
        #expect(ourSide(60, 100).sizes == [PixelSize(width: 224, height: 352)])
        #expect(ourSide(256, 256).tokens == 64)
        #expect(ourSide(384, 256).tokens == 96)
    }

    /// Grid, input sizes and token count equal llama.cpp mtmd's pre-processor, run on each size: exact.
    @Test(arguments: geometryCases)
    func matchesLlamaCpp(_ c: PreprocessingGeometryCase) {
        #expect(ourSide(c.width, c.height) == c.llama)
    }

    /// transformers agrees except where Python's round (half to even) and llama.cpp's std::round (half away
    /// from zero) differ: a side of 32k + 16 with k even (side / 32 = k + 0.5).
    @Test(arguments: geometryCases)
    func matchesTransformersExceptHalfRounding(_ c: PreprocessingGeometryCase) {
        func halfToEvenDiffers(_ side: Int) -> Bool { side % 32 == 16 && (side / 32) % 2 == 0 }
        if ourSide(c.width, c.height) != c.hf {
            #expect(halfToEvenDiffers(c.width) || halfToEvenDiffers(c.height), "\(c.hf) vs ours \(ourSide(c.width, c.height))")
        }
    }

    @Test func halfRoundingCasesAreInTheGoldens() {
        // The golden set must exercise the disagreement, else the test above proves nothing about it.
        #expect(geometryCases.contains { $0.llama != $0.hf })
        #expect(geometryCases.contains { $0.llama.cols > 0 })
    }

    @Test func candidateGridsAreOrderedByTileCount() {
        let grids = defaults.candidateGrids
        // Pairs (c, r) with 2 <= c * r <= 10: 2 + 2 + 3 + 2 + 4 + 2 + 4 + 3 + 4 divisor pairs.
        #expect(grids.count == 26)
        #expect(pair(grids[0]) == [1, 2] && pair(grids[1]) == [2, 1])
        #expect(zip(grids, grids.dropFirst()).allSatisfy { $0.cols * $0.rows <= $1.cols * $1.rows })
    }

    /// Exact ties in aspect ratio: the larger grid wins only when the image covers more than half of it.
    @Test func tieRule() {
        // Square: (2, 2) and (3, 3) tie; 1024^2 < 0.5 * 9 * 512^2 keeps (2, 2), 1600^2 > it takes (3, 3).
        #expect(pair(defaults.gridLayout(width: 1024, height: 1024)) == [2, 2])
        #expect(pair(defaults.gridLayout(width: 1600, height: 1600)) == [3, 3])
        // 1.75 is 0.25 from (3, 2) and from (2, 1) / (4, 2): 1792 x 1024 > 0.5 * 8 * 512^2 takes (4, 2).
        #expect(pair(defaults.gridLayout(width: 1792, height: 1024)) == [4, 2])
    }

    /// llama.cpp letterboxes the tiled image: 1024x768 into 1536x1024 scales by 4/3 to 1366x1024 (sides
    /// rounded up in Float, capped), centred at x = 85.
    @Test func letterboxFit() {
        let fit = defaults.fitted(PixelSize(width: 1024, height: 768), into: PixelSize(width: 1536, height: 1024))
        #expect(fit.size == PixelSize(width: 1366, height: 1024) && fit.x == 85 && fit.y == 0)
        var stretch = defaults
        stretch.tiledImageFit = .stretch
        let s = stretch.fitted(PixelSize(width: 1024, height: 768), into: PixelSize(width: 1536, height: 1024))
        #expect(s.size == PixelSize(width: 1536, height: 1024) && s.x == 0 && s.y == 0)
    }

    @Test func disablingTilingKeepsOneImage() {
        var p = defaults
        p.minTiles = 1
        p.maxTiles = 1
        let side = ourSide(4000, 3000, p)
        #expect(side.cols == 0 && side.sizes.count == 1 && side.tokens <= 256)
    }

    @Test func rejectsInvalidParameters() {
        var p = defaults
        p.imageStd = [0.5, 0, 0.5]
        #expect(throws: LeapError.self) { try LFM2VLPreprocessor(parameters: p) }
        p = defaults
        p.tileSize = 500
        #expect(throws: LeapError.self) { try LFM2VLPreprocessor(parameters: p) }
        p = defaults
        p.minTiles = 5
        p.maxTiles = 3
        #expect(throws: LeapError.self) { try LFM2VLPreprocessor(parameters: p) }
        p = defaults
        p.imageMean = [0.5]
        #expect(throws: LeapError.self) { try LFM2VLPreprocessor(parameters: p) }
    }
}

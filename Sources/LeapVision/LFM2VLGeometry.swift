// LFM2VLGeometry: which sizes an image of LFM2-VL is resized and cut to (no pixels touched).
//
// The rules are transformers' Lfm2VlImageProcessor and llama.cpp mtmd's mtmd_image_preprocessor_lfm2, which
// agree except for the smart resize's rounding of an exact half: transformers rounds side/32 with Python's
// round (half to even), llama.cpp with std::round (half away from zero), so a side of 32k + 16 with k even
// (e.g. 208, 272, 400) is rounded down by transformers and up by llama.cpp. This file follows llama.cpp,
// computing in Float like it does. (The "too large" test rounds half to even in both.)

/// Width and height in pixels.
package struct PixelSize: Sendable, Equatable, CustomStringConvertible {
    package var width: Int
    package var height: Int
    package init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    package var description: String { "\(width)x\(height)" }
}

/// How one image becomes encoder inputs.
package struct LFM2VLLayout: Sendable, Equatable {
    /// The smart-resized whole image: the only input of a small image, the thumbnail of a tiled one.
    package var resized: PixelSize
    /// Tile grid of a large image (columns x rows), nil when the image is not tiled.
    package var grid: (cols: Int, rows: Int)?
    /// The tiled image before cutting: grid x tileSize.
    package var refined: PixelSize?
    /// The thumbnail follows the tiles.
    package var hasThumbnail: Bool

    package static func == (a: LFM2VLLayout, b: LFM2VLLayout) -> Bool {
        a.resized == b.resized && a.grid?.cols == b.grid?.cols && a.grid?.rows == b.grid?.rows
            && a.refined == b.refined && a.hasThumbnail == b.hasThumbnail
    }

    /// Encoder inputs in order: the tiles row-major, then the thumbnail; or the single resized image.
    package func inputSizes(tileSize: Int) -> [PixelSize] {
        guard let grid else { return [resized] }
        let tiles = Array(repeating: PixelSize(width: tileSize, height: tileSize), count: grid.cols * grid.rows)
        return tiles + (hasThumbnail ? [resized] : [])
    }

    /// Embedding rows the encoder gives for the whole image (one per `alignment` x `alignment` pixels).
    package func tokenCount(tileSize: Int, alignment: Int) -> Int {
        inputSizes(tileSize: tileSize).reduce(0) { $0 + ($1.width / alignment) * ($1.height / alignment) }
    }
}

extension LFM2VLImageParameters {
    /// The layout of a `width` x `height` image.
    package func layout(width: Int, height: Int) -> LFM2VLLayout {
        let resized = smartResize(width: width, height: height)
        guard isTooLarge(width: width, height: height), maxTiles > 1 || minTiles > 1 else {
            return LFM2VLLayout(resized: resized, grid: nil, refined: nil, hasThumbnail: false)
        }
        let grid = gridLayout(width: width, height: height)
        return LFM2VLLayout(resized: resized, grid: grid,
                            refined: PixelSize(width: tileSize * grid.cols, height: tileSize * grid.rows),
                            hasThumbnail: useThumbnail)
    }

    /// Sides rounded to multiples of `alignment`, then scaled (keeping the aspect ratio, rounding down) into
    /// maxPixels or (rounding up) over minPixels; llama.cpp's calc_size_preserved_ratio, in its Float steps.
    package func smartResize(width: Int, height: Int) -> PixelSize {
        let f = alignment
        let ff = Float(f)
        func roundBy(_ x: Float) -> Int { Int((x / ff).rounded(.toNearestOrAwayFromZero)) * f }
        func ceilBy(_ x: Float) -> Int { Int((x / ff).rounded(.up)) * f }
        func floorBy(_ x: Float) -> Int { Int((x / ff).rounded(.down)) * f }
        var w = max(f, roundBy(Float(width)))
        var h = max(f, roundBy(Float(height)))
        if h * w > maxPixels {
            let beta = (Float(height) * Float(width) / Float(maxPixels)).squareRoot()
            h = max(f, floorBy(Float(height) / beta))
            w = max(f, floorBy(Float(width) / beta))
        } else if h * w < minPixels {
            let beta = (Float(minPixels) / (Float(height) * Float(width))).squareRoot()
            h = ceilBy(Float(height) * beta)
            w = ceilBy(Float(width) * beta)
        }
        return PixelSize(width: w, height: h)
    }

    /// Whether the image is tiled: its sides rounded (half to even) to multiples of `alignment`, at least
    /// `encoderPatchSize`, cover more than maxPixels x maxPixelsTolerance.
    package func isTooLarge(width: Int, height: Int) -> Bool {
        func roundBy(_ x: Int) -> Int { Int((Double(x) / Double(alignment)).rounded(.toNearestOrEven)) * alignment }
        let h = max(encoderPatchSize, roundBy(height))
        let w = max(encoderPatchSize, roundBy(width))
        return Double(h) * Double(w) > Double(maxPixels) * Double(maxPixelsTolerance)
    }

    /// Every grid (cols, rows) with minTiles <= cols x rows <= maxTiles, by increasing tile count; equal
    /// counts keep the order of first appearance over n = minTiles...maxTiles, cols = 1...n, rows = 1...n
    /// (Python's stable sort in transformers).
    package var candidateGrids: [(cols: Int, rows: Int)] {
        var grids: [(cols: Int, rows: Int)] = []
        guard minTiles <= maxTiles else { return grids }
        for n in minTiles...maxTiles {
            for c in 1...n {
                for r in 1...n where (minTiles...maxTiles).contains(c * r) && !grids.contains(where: { $0 == (c, r) }) {
                    grids.append((c, r))
                }
            }
        }
        return grids.enumerated().sorted { a, b in
            let (ka, kb) = (a.element.cols * a.element.rows, b.element.cols * b.element.rows)
            return ka != kb ? ka < kb : a.offset < b.offset
        }.map(\.element)
    }

    /// The grid whose columns/rows ratio is closest to width/height; on an exact tie the later (larger)
    /// grid wins when the image has more than half its pixels (find_closest_aspect_ratio, in Float).
    package func gridLayout(width: Int, height: Int) -> (cols: Int, rows: Int) {
        let aspect = Float(width) / Float(height)
        let area = Float(width * height)
        var best = (cols: 1, rows: 1)
        var bestDiff = Float.greatestFiniteMagnitude
        for g in candidateGrids {
            let diff = abs(aspect - Float(g.cols) / Float(g.rows))
            if diff < bestDiff {
                bestDiff = diff
                best = g
            } else if diff == bestDiff, area > 0.5 * Float(tileSize * tileSize * g.cols * g.rows) {
                best = g
            }
        }
        return best
    }

    /// Where a `source` image lands in the `refined` grid image under `tiledImageFit`: the size it is resized
    /// to and its offset (llama.cpp's PAD_CEIL letterbox: scale = min of the Float ratios, sides rounded up
    /// and capped, centred with integer halving).
    package func fitted(_ source: PixelSize, into refined: PixelSize) -> (size: PixelSize, x: Int, y: Int) {
        switch tiledImageFit {
        case .stretch:
            return (refined, 0, 0)
        case .letterbox:
            let scale = min(Float(refined.width) / Float(source.width), Float(refined.height) / Float(source.height))
            let w = min(Int((Float(source.width) * scale).rounded(.up)), refined.width)
            let h = min(Int((Float(source.height) * scale).rounded(.up)), refined.height)
            return (PixelSize(width: w, height: h), (refined.width - w) / 2, (refined.height - h) / 2)
        }
    }
}

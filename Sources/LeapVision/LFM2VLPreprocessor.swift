// LFM2VLPreprocessor: an RGB8 image to LFM2-VL's encoder inputs, as llama.cpp mtmd prepares them
// (mtmd_image_preprocessor_lfm2), so that the features, and then greedy generation, match mtmd's.
//
// A small image is smart-resized (LFM2VLGeometry) to one input. A large one ("too large") is fitted to a
// grid of tileSize tiles, cut into tiles row-major, and followed by its smart-resized thumbnail. Every
// input is normalized per channel as (v / 255 - mean) / std, in Float in that order (mtmd's from_u8 then
// normalize), so values equal mtmd's bit for bit.
//
// Differences from transformers' Lfm2VlImageProcessor, all from llama.cpp's side:
// - the resize (ImageResize: Pillow's fixed-point kernel; torchvision's differs by one level in places);
// - the tiled image is letterboxed on black to the grid size (llama.cpp) instead of stretched
//   (transformers), unless parameters.tiledImageFit is .stretch;
// - the smart resize rounds an exact half away from zero (LFM2VLGeometry);
// - normalization: transformers computes (v - 255 mean) / (255 std) in one step, which differs in the
//   last bit for some values.
import LeapCore
import LeapImage
import LeapKernels

package struct LFM2VLPreprocessor: Sendable {
    package let parameters: LFM2VLImageParameters

    package init(parameters: LFM2VLImageParameters = LFM2VLImageParameters()) throws {
        try parameters.validate()
        self.parameters = parameters
    }

    package func layout(of image: RGBImage) -> LFM2VLLayout {
        parameters.layout(width: image.width, height: image.height)
    }

    /// The encoder inputs of `image`: tiles (row-major) then the thumbnail, with the grid; or one image.
    /// Resizing uses `pool`'s threads when given (same result).
    package func preprocess(_ image: RGBImage, pool: ThreadPool? = nil) throws -> PreprocessedImage {
        let layout = layout(of: image)
        guard let grid = layout.grid, let refinedSize = layout.refined else {
            let resized = try resizeBilinearAntialiased(image, width: layout.resized.width, height: layout.resized.height, pool: pool)
            return PreprocessedImage(tiles: [normalized(resized)], grid: nil)
        }
        let refined = try fitToGrid(image, refinedSize, pool)
        let t = parameters.tileSize
        var tiles: [PreprocessedImage.Tile] = []
        for row in 0..<grid.rows {
            for col in 0..<grid.cols {
                tiles.append(normalized(refined, x: col * t, y: row * t, width: t, height: t))
            }
        }
        if layout.hasThumbnail {
            let thumbnail = try resizeBilinearAntialiased(image, width: layout.resized.width, height: layout.resized.height, pool: pool)
            tiles.append(normalized(thumbnail))
        }
        return PreprocessedImage(tiles: tiles, grid: (rows: grid.rows, cols: grid.cols))
    }

    /// The image resized into the grid's size (letterboxed on black, or stretched).
    private func fitToGrid(_ image: RGBImage, _ refined: PixelSize, _ pool: ThreadPool?) throws -> RGBImage {
        let source = PixelSize(width: image.width, height: image.height)
        if source == refined { return image }
        let fit = parameters.fitted(source, into: refined)
        let resized = try resizeBilinearAntialiased(image, width: fit.size.width, height: fit.size.height, pool: pool)
        if fit.size == refined { return resized }
        var canvas = [UInt8](repeating: 0, count: refined.width * refined.height * 3)   // [H, W, 3] black
        let rowBytes = fit.size.width * 3
        resized.pixels.withUnsafeBufferPointer { src in
            canvas.withUnsafeMutableBufferPointer { dst in
                for y in 0..<fit.size.height {
                    let to = ((y + fit.y) * refined.width + fit.x) * 3
                    for i in 0..<rowBytes { dst[to + i] = src[y * rowBytes + i] }
                }
            }
        }
        return try RGBImage(width: refined.width, height: refined.height, pixels: canvas)
    }

    /// The whole image, or its (x, y, width, height) crop, normalized.
    private func normalized(_ image: RGBImage, x: Int = 0, y: Int = 0, width: Int? = nil, height: Int? = nil) -> PreprocessedImage.Tile {
        let w = width ?? image.width, h = height ?? image.height
        // [3, 256]: the normalized value of every byte per channel (the same Float steps as mtmd).
        var table = [Float](repeating: 0, count: 3 * 256)
        for c in 0..<3 {
            for v in 0..<256 {
                table[c * 256 + v] = (Float(v) / 255 - parameters.imageMean[c]) / parameters.imageStd[c]
            }
        }
        let out = [Float](unsafeUninitializedCapacity: w * h * 3) { dst, n in
            image.pixels.withUnsafeBufferPointer { src in
                for row in 0..<h {
                    let from = ((y + row) * image.width + x) * 3
                    let to = row * w * 3
                    for i in 0..<(w * 3) {
                        dst[to + i] = table[(i % 3) * 256 + Int(src[from + i])]
                    }
                }
            }
            n = w * h * 3
        }
        return PreprocessedImage.Tile(width: w, height: h, pixels: out)
    }
}

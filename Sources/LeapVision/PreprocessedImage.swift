// PreprocessedImage: an image as the vision encoder takes it — LFM2-VL's tiles (row-major) and thumbnail, or
// one smart-resized image, each normalized and sized to multiples of the patch merge (32 px).
package struct PreprocessedImage: Sendable {
    /// One encoder input: `height` x `width` pixels, multiples of patchSize x downsample (32).
    package struct Tile: Sendable {
        package let width: Int
        package let height: Int
        package var pixels: [Float]   // [height, width, 3] normalized ((v / 255 - mean) / std)

        package init(width: Int, height: Int, pixels: [Float]) {
            self.width = width
            self.height = height
            self.pixels = pixels
        }
    }

    /// Tiles in row-major order, then the thumbnail (multi-tile), or the single resized image.
    package var tiles: [Tile]
    /// The tile grid of a large image (`tiles` then ends with the thumbnail); nil for a single image.
    package var grid: (rows: Int, cols: Int)?

    package init(tiles: [Tile], grid: (rows: Int, cols: Int)?) {
        self.tiles = tiles
        self.grid = grid
    }

    /// Embedding rows each tile gives: one per 2x2 block of 16x16 patches.
    package func tokenCount(ofTile i: Int, patchSize: Int = 16, downsample: Int = 2) -> Int {
        let f = patchSize * downsample
        return (tiles[i].height / f) * (tiles[i].width / f)
    }
}

// VisionEncoder: LFM2-VL's image encoder from an mmproj GGUF (projector type `lfm2`): each tile of a
// PreprocessedImage goes through the SigLIP2 tower, a pixel-unshuffle of 2x2 patch blocks and the projector,
// giving one embedding row per block, of the text model's width.
import LeapCore
import LeapGGUF
import LeapKernels

/// Loaded once, shared by any number of threads (encode allocates its own buffers).
package final class VisionEncoder: @unchecked Sendable {
    package let config: VisionProjectorConfig
    /// The arithmetic of `encode` (llama.cpp's by default).
    package let numerics: VisionNumerics

    private let file: GGUFFile   // owns the mmap the weights point into
    private let tower: SigLIP2Encoder
    private let projector: LFM2VLProjector
    private let gelu = GELU()

    /// Width of the embedding rows: the text model's hidden size (`clip.vision.projection_dim`).
    package var outputDim: Int { config.projectionDim }
    package var imageMean: [Float] { config.imageMean }
    package var imageStd: [Float] { config.imageStd }
    package var patchSize: Int { config.patchSize }
    package var downsampleFactor: Int { config.downsampleFactor }
    package var layerCount: Int { config.layerCount }
    package var hiddenSize: Int { config.hiddenSize }
    package var projectorHiddenSize: Int { projector.hiddenSize }
    /// Side of the square learned position grid (16 for SigLIP2 NaFlex).
    package var positionGridSize: Int { tower.gridSize }
    /// Tile sides must be multiples of this (patch size x downsample factor: 32).
    package var tileAlignment: Int { patchSize * downsampleFactor }

    /// Most patches one tile may have (64 x 64, 4x what LFM2-VL's pre-processing produces), which bounds
    /// the attention buffers.
    package static let maxPatchesPerTile = 4096

    private init(file: GGUFFile, config: VisionProjectorConfig, tower: SigLIP2Encoder, projector: LFM2VLProjector,
                 numerics: VisionNumerics) {
        self.file = file
        self.config = config
        self.tower = tower
        self.projector = projector
        self.numerics = numerics
    }

    /// Validates `file` as an LFM2-VL vision projector and binds every tensor with its shape checked.
    package static func load(file: GGUFFile, numerics: VisionNumerics = .llamaCpp) throws -> VisionEncoder {
        let config = try VisionProjectorConfig(file: file)
        let binder = TensorBinder(file: file)
        let tower = try SigLIP2Encoder(binder, config)
        let projector = try LFM2VLProjector(binder, config)
        return VisionEncoder(file: file, config: config, tower: tower, projector: projector, numerics: numerics)
    }

    package static func load(path: String, numerics: VisionNumerics = .llamaCpp) throws -> VisionEncoder {
        try load(file: GGUFFile(path: path), numerics: numerics)
    }

    /// The same weights with another arithmetic.
    package func with(numerics: VisionNumerics) -> VisionEncoder {
        VisionEncoder(file: file, config: config, tower: tower, projector: projector, numerics: numerics)
    }

    /// Embedding rows a tile of `width` x `height` pixels gives.
    package func tokenCount(width: Int, height: Int) -> Int {
        (height / tileAlignment) * (width / tileAlignment)
    }

    /// [nTokens, outputDim] rows: the tiles' in order (row-major tiles, then the thumbnail).
    package func encode(_ image: PreprocessedImage, pool: ThreadPool) throws -> [Float] {
        guard !image.tiles.isEmpty else { throw LeapError.invalidArgument("the image has no tiles to encode") }
        for (i, tile) in image.tiles.enumerated() { try validate(tile, index: i) }
        let tokens = image.tiles.map { tokenCount(width: $0.width, height: $0.height) }
        let maxPatches = image.tiles.map { ($0.width / patchSize) * ($0.height / patchSize) }.max() ?? 0
        let scratch = makeScratch(patches: maxPatches, pool: pool)
        let E = outputDim
        var out = [Float](repeating: 0, count: tokens.reduce(0, +) * E)
        try out.withUnsafeMutableBufferPointer { buf in
            guard let base = buf.baseAddress else { return }
            var row = 0
            for (tile, n) in zip(image.tiles, tokens) {
                try encode(tile, scratch: scratch, into: base + row * E, pool: pool)
                row += n
            }
        }
        return out
    }

    /// [tokenCount(tile), outputDim] rows of one tile.
    package func encode(tile: PreprocessedImage.Tile, pool: ThreadPool) throws -> [Float] {
        try validate(tile, index: nil)
        let scratch = makeScratch(patches: (tile.width / patchSize) * (tile.height / patchSize), pool: pool)
        var out = [Float](repeating: 0, count: tokenCount(width: tile.width, height: tile.height) * outputDim)
        try out.withUnsafeMutableBufferPointer { buf in
            guard let base = buf.baseAddress else { return }
            try encode(tile, scratch: scratch, into: base, pool: pool)
        }
        return out
    }

    /// The SigLIP2 tower's output for one tile: [patches, hiddenSize] after post_ln, patches row-major
    /// (what the projector's pixel-unshuffle takes).
    package func towerFeatures(tile: PreprocessedImage.Tile, pool: ThreadPool) throws -> [Float] {
        try validate(tile, index: nil)
        let T = (tile.width / patchSize) * (tile.height / patchSize)
        let scratch = makeScratch(patches: T, pool: pool)
        try tile.pixels.withUnsafeBufferPointer { px in
            guard let px = px.baseAddress else { return }
            try tower(pixels: px, height: tile.height, width: tile.width, numerics: numerics, gelu: gelu,
                      scratch: scratch, pool: pool)
        }
        return Array(UnsafeBufferPointer(start: scratch.normed, count: T * hiddenSize))
    }

    private func makeScratch(patches: Int, pool: ThreadPool) -> VisionScratch {
        VisionScratch(config: config, projectorHidden: projector.hiddenSize, patches: patches, threads: pool.threadCount)
    }

    private func encode(_ tile: PreprocessedImage.Tile, scratch s: VisionScratch, into out: UnsafeMutablePointer<Float>,
                        pool: ThreadPool) throws {
        let p = patchSize, f = downsampleFactor
        let rows = tile.height / p, cols = tile.width / p
        try tile.pixels.withUnsafeBufferPointer { px in
            guard let px = px.baseAddress else { return }
            try tower(pixels: px, height: tile.height, width: tile.width, numerics: numerics, gelu: gelu,
                      scratch: s, pool: pool)
        }
        PixelUnshuffle.apply(s.normed, height: rows, width: cols, channels: hiddenSize, factor: f, into: s.merged)
        projector(s.merged, rows: (rows / f) * (cols / f), hidden: s.ff, gelu: numerics.projectorGELU, gelu: gelu,
                  into: out, pool: pool)
    }

    private func validate(_ tile: PreprocessedImage.Tile, index: Int?) throws {
        let name = index.map { "tile \($0)" } ?? "the tile"
        let a = tileAlignment
        guard tile.width > 0, tile.height > 0, tile.width % a == 0, tile.height % a == 0 else {
            throw LeapError.invalidArgument(
                "\(name) is \(tile.width)x\(tile.height) pixels; both sides must be positive multiples of \(a)")
        }
        let limit = Self.maxPatchesPerTile
        guard tile.width / patchSize <= limit, tile.height / patchSize <= limit,
              (tile.width / patchSize) * (tile.height / patchSize) <= limit else {
            throw LeapError.invalidArgument(
                "\(name) is \(tile.width)x\(tile.height) pixels: more than the \(limit) patches of \(patchSize)x\(patchSize) a tile may have")
        }
        guard tile.pixels.count == tile.width * tile.height * 3 else {
            throw LeapError.invalidArgument(
                "\(name) has \(tile.pixels.count) values, expected \(tile.width)x\(tile.height)x3 = \(tile.width * tile.height * 3)")
        }
    }
}

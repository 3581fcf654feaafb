// LFM2VLImageParameters: the settings of LFM2-VL's image pre-processing (transformers' Lfm2VlImageProcessor
// defaults, which are LFM2.5-VL's processor_config.json values and llama.cpp mtmd's constants for lfm2).
import LeapCore
import LeapGGUF

package struct LFM2VLImageParameters: Sendable, Equatable {
    /// How the tiled (large) image is brought to the grid's size before it is cut into tiles.
    package enum TiledImageFit: Sendable, Equatable {
        /// llama.cpp mtmd (lfm2 uses the refined image's default PAD_CEIL): scaled by the smaller of the two
        /// ratios, keeping the aspect ratio, and centred on black.
        case letterbox
        /// transformers: scaled to the grid's size, distorting the aspect ratio.
        case stretch
    }

    /// Side of a square tile of a large image, in pixels.
    package var tileSize = 512
    /// Token range of a single (smart-resized) image or the thumbnail; one token per 32 x 32 pixels.
    package var minImageTokens = 64
    package var maxImageTokens = 256
    /// Range of the tile count (columns x rows) of a large image's grid.
    package var minTiles = 2
    package var maxTiles = 10
    /// The vision encoder's patch side (clip.vision.patch_size) and the projector's patch merge per side
    /// (clip.vision.projector.scale_factor): image sides are multiples of their product (32).
    package var encoderPatchSize = 16
    package var downsampleFactor = 2
    /// A tiled image is followed by its smart-resized whole (the thumbnail).
    package var useThumbnail = true
    /// An image is tiled when its sides, rounded to multiples of 32, exceed maxImageTokens' pixels times this.
    package var maxPixelsTolerance: Float = 2.0
    /// Per-channel normalization, `(v / 255 - mean) / std` (clip.vision.image_mean / image_std; LFM2-VL's are
    /// 0.5, mapping pixels to [-1, 1]).
    package var imageMean: [Float] = [0.5, 0.5, 0.5]
    package var imageStd: [Float] = [0.5, 0.5, 0.5]
    package var tiledImageFit = TiledImageFit.letterbox

    package init() {}

    /// LFM2-VL's defaults with the mmproj's normalization.
    package init(imageMean: [Float], imageStd: [Float]) {
        self.imageMean = imageMean
        self.imageStd = imageStd
    }

    /// Pixels per side of one output token.
    package var alignment: Int { encoderPatchSize * downsampleFactor }
    package var minPixels: Int { minImageTokens * alignment * alignment }
    package var maxPixels: Int { maxImageTokens * alignment * alignment }

    package func validate() throws {
        func check(_ ok: Bool, _ message: @autoclosure () -> String) throws {
            if !ok { throw LeapError.invalidArgument("LFM2-VL image parameters: " + message()) }
        }
        try check(encoderPatchSize > 0 && downsampleFactor > 0 && alignment <= 1024,
                  "patch size \(encoderPatchSize) and downsample factor \(downsampleFactor) must be positive (product at most 1024)")
        try check(tileSize > 0 && tileSize % alignment == 0 && tileSize <= 4096,
                  "tile size \(tileSize) must be a positive multiple of \(alignment), at most 4096")
        try check(minImageTokens > 0 && minImageTokens <= maxImageTokens && maxImageTokens <= 16_384,
                  "image tokens \(minImageTokens)...\(maxImageTokens) must be a non-empty range within 1...16384")
        try check(minTiles > 0 && minTiles <= maxTiles && maxTiles <= 64,
                  "tiles \(minTiles)...\(maxTiles) must be a non-empty range within 1...64")
        try check(maxPixelsTolerance.isFinite && maxPixelsTolerance > 0,
                  "max pixels tolerance \(maxPixelsTolerance) must be positive")
        try check(imageMean.count == 3 && imageStd.count == 3,
                  "image mean and std need 3 values each, got \(imageMean.count) and \(imageStd.count)")
        try check(imageMean.allSatisfy(\.isFinite) && imageStd.allSatisfy { $0.isFinite && $0 != 0 },
                  "image mean \(imageMean) must be finite and std \(imageStd) finite and non-zero")
    }
}

extension LFM2VLImageParameters {
    /// LFM2-VL's defaults with the pre-processing values of an mmproj GGUF, read as llama.cpp's clip.cpp
    /// reads them: clip.vision.image_mean and image_std (required, the first 3 values),
    /// clip.vision.patch_size (required) and clip.vision.projector.scale_factor (optional, default 1).
    package init(mmproj file: GGUFFile) throws {
        self.init()
        func values(_ key: String) throws -> [Float] {
            guard let v = try file.optionalFloatArray(key), v.count >= 3 else {
                throw LeapError.modelLoading("the mmproj lacks \(key) (3 values): needed to normalize images")
            }
            return Array(v.prefix(3))
        }
        imageMean = try values("clip.vision.image_mean")
        imageStd = try values("clip.vision.image_std")
        guard let patch = try file.optionalInt("clip.vision.patch_size") else {
            throw LeapError.modelLoading("the mmproj lacks clip.vision.patch_size")
        }
        encoderPatchSize = patch
        downsampleFactor = try file.optionalInt("clip.vision.projector.scale_factor") ?? 1
        do {
            try validate()
        } catch let e as LeapError {
            throw LeapError.modelLoading("the mmproj's \(e.message)")
        }
    }
}

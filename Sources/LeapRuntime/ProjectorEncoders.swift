import LeapAudio
import LeapAudioEncoder
import LeapCore
import LeapGGUF
import LeapImage
import LeapKernels
import LeapMessages
import LeapModels
import LeapVision

// The projector (mmproj) of a multimodal model as the runtime's media encoder: its `clip.projector_type`
// says which encoder it holds. Encoders run one at a time on the projector's own thread pool (images of
// several conversations queue there); preparing a part (decode, checks, layout) runs on the caller.

enum ProjectorEncoders {
    /// Loads the encoder of `projector` for `textModel` (its rows must be the text model's width).
    static func load(projector path: String, textModel: LanguageModel, threads: Int?) throws -> any MediaEncoderBackend {
        let file = try GGUFFile(path: path)
        guard let type = try file.optionalString("clip.projector_type") else {
            throw LeapError(.modelLoading, "'\(path)' has no clip.projector_type (not a projector llama.cpp's converter wrote)")
        }
        let encoder: any MediaEncoderBackend
        switch type {
        case "lfm2": encoder = try VisionMedia(file: file, threads: threads)
        case "lfm2a": encoder = try AudioInputMedia(file: file, threads: threads)
        default:
            throw LeapError(.unsupported, "'\(path)': projector type '\(type)' is not supported (supported: lfm2 for LFM2-VL images, lfm2a for LFM2-Audio)")
        }
        guard encoder.embeddingLength == textModel.config.nEmbd else {
            throw LeapError(.modelLoading, "'\(path)' projects to \(encoder.embeddingLength) values, but the model's embedding length is \(textModel.config.nEmbd): it belongs to another model")
        }
        return encoder
    }
}

/// LFM2-VL's vision encoder: an image becomes `<|image_start|>`, its tiles (each after its
/// `<|img_row_R_col_C|>` marker, 1-based) and thumbnail (after `<|img_thumbnail|>`), then `<|image_end|>`;
/// an image small enough for one tile is `<|image_start|>` rows `<|image_end|>`.
final class VisionMedia: MediaEncoderBackend, @unchecked Sendable {
    let encoder: VisionEncoder
    let preprocessor: LFM2VLPreprocessor
    let pool: ThreadPool
    let lock = Lock()
    let acceptsImages = true
    let acceptsAudio = false
    var embeddingLength: Int { encoder.outputDim }

    init(file: GGUFFile, threads: Int?) throws {
        encoder = try VisionEncoder.load(file: file)
        preprocessor = try LFM2VLPreprocessor(parameters: try LFM2VLImageParameters(mmproj: file))
        pool = try ThreadPool(threads: threads)
    }

    func prepare(_ part: ChatMessageContent) throws -> any PreparedMedia {
        guard case .image(let jpeg) = part else { throw LeapError(.unsupported, "LFM2-VL's projector takes images only") }
        return try PreparedImage(source: .jpeg(jpeg), image: try JPEG.decode(jpeg), media: self)
    }

    func prepare(image: RGBImage) throws -> any PreparedMedia {
        try PreparedImage(source: .pixels(image), image: image, media: self)
    }

    func layout(of image: RGBImage) -> MediaLayout {
        let l = preprocessor.layout(of: image)
        let t = preprocessor.parameters.tileSize
        let align = encoder.tileAlignment
        func rows(_ s: PixelSize) -> Int { (s.width / align) * (s.height / align) }
        var pieces: [MediaLayout.Piece] = [.text("<|image_start|>")]
        var row = 0
        if let grid = l.grid {
            let perTile = rows(PixelSize(width: t, height: t))
            for r in 0..<grid.rows {
                for c in 0..<grid.cols {
                    pieces += [.text("<|img_row_\(r + 1)_col_\(c + 1)|>"), .rows(row..<row + perTile)]
                    row += perTile
                }
            }
            if l.hasThumbnail {
                pieces += [.text("<|img_thumbnail|>"), .rows(row..<row + rows(l.resized))]
                row += rows(l.resized)
            }
        } else {
            pieces.append(.rows(0..<rows(l.resized)))
            row = rows(l.resized)
        }
        pieces.append(.text("<|image_end|>"))
        return MediaLayout(pieces: pieces, rowCount: row)
    }

    func encode(_ image: RGBImage) throws -> [Float] {
        try lock.withLock {
            let pre = try preprocessor.preprocess(image, pool: pool)
            return try encoder.encode(pre, pool: pool)
        }
    }
}

/// A checked image: the layout is known; the pixels are decoded again when it is encoded (holding the
/// normalized tiles of every image of a history would cost megabytes per image).
final class PreparedImage: PreparedMedia, @unchecked Sendable {
    enum Source { case jpeg([UInt8]), pixels(RGBImage) }
    let source: Source
    let layout: MediaLayout
    unowned let media: VisionMedia

    init(source: Source, image: RGBImage, media: VisionMedia) throws {
        self.source = source
        self.layout = media.layout(of: image)
        self.media = media
    }

    func encode() throws -> [Float] {
        switch source {
        case .jpeg(let bytes): return try media.encode(try JPEG.decode(bytes))
        case .pixels(let image): return try media.encode(image)
        }
    }
}

/// LFM2-Audio's audio encoder: an audio part becomes its rows where the message puts it, with no marker
/// tokens (as liquid-audio's ChatState and llama.cpp lay it out).
final class AudioInputMedia: MediaEncoderBackend, @unchecked Sendable {
    let encoder: AudioEncoder
    let pool: ThreadPool
    let lock = Lock()
    let acceptsImages = false
    let acceptsAudio = true
    var embeddingLength: Int { encoder.outputDim }
    /// Longest clip taken: 30 minutes (22,500 rows; memory grows linearly with the length, see
    /// AudioEncoder.workspaceByteCount); whether it fits a context is the prompt's check.
    static let maxSeconds = 30 * 60

    init(file: GGUFFile, threads: Int?) throws {
        encoder = try AudioEncoder.load(file: file)
        pool = try ThreadPool(threads: threads)
    }

    /// 16 kHz mono samples of an audio part (WAV: mono, any rate; PCM: any rate), checked for length.
    func samples(of part: ChatMessageContent) throws -> [Float] {
        let samples: [Float]
        switch part {
        case .audio(let wav):
            samples = try loadWAV(wav)
        case .audioPCMF32(let pcm, let rate):
            if let i = pcm.firstIndex(where: { !$0.isFinite }) {
                throw LeapError(.audioFormat, "sample \(i) is not finite")
            }
            samples = try Resampler.resample(pcm, from: rate, to: AudioEncoder.sampleRate)
        default:
            throw LeapError(.unsupported, "LFM2-Audio's projector takes audio only")
        }
        let rate = AudioEncoder.sampleRate
        guard encoder.embeddingCount(sampleCount: samples.count) > 0 else {
            throw LeapError(.audioFormat, "audio of \(samples.count) samples at \(rate) Hz is too short: the encoder needs at least 2 mel frames (320 samples, 20 ms)")
        }
        guard samples.count <= Self.maxSeconds * rate else {
            throw LeapError(.audioFormat, "audio of \(samples.count / rate) s is too long: at most \(Self.maxSeconds / 60) minutes are taken")
        }
        return samples
    }

    func prepare(_ part: ChatMessageContent) throws -> any PreparedMedia {
        let n = encoder.embeddingCount(sampleCount: try samples(of: part).count)
        return PreparedAudio(part: part, layout: MediaLayout(pieces: [.rows(0..<n)], rowCount: n), media: self)
    }

    func encode(_ part: ChatMessageContent) throws -> [Float] {
        let s = try samples(of: part)
        return try lock.withLock { try s.withUnsafeBufferPointer { try encoder.encode(samples: $0, pool: pool) } }
    }
}

/// A checked audio part: decoded and resampled again when it is encoded (as images are).
final class PreparedAudio: PreparedMedia, @unchecked Sendable {
    let part: ChatMessageContent
    let layout: MediaLayout
    unowned let media: AudioInputMedia

    init(part: ChatMessageContent, layout: MediaLayout, media: AudioInputMedia) {
        self.part = part
        self.layout = layout
        self.media = media
    }

    func encode() throws -> [Float] { try media.encode(part) }
}

import LeapCore
import LeapImage
import LeapMessages

// The seam between conversations and the media encoders (LeapVision, LeapAudioEncoder): a content part that
// the model sees as embedding rows is prepared once (decoded, checked, laid out), keyed by a hash of its
// content, and encoded only when its rows are not already in the conversation's KV cache.

/// The content hash of a media part: SHA-256 of its kind and bytes (JPEG bytes; WAV bytes; float samples
/// and rate).
package struct MediaKey: Hashable, Sendable, CustomStringConvertible {
    package let digest: [UInt8]   // [32]

    package init(kind: String, bytes: UnsafeRawBufferPointer, extra: [UInt8] = []) {
        var h = SHA256()
        h.update(Array(kind.utf8) + [0])
        h.update(extra)
        h.update(bytes)
        digest = h.finalize()
    }

    /// The key whose digest is `digest` (32 bytes, e.g. read back from a saved prompt state).
    package init(digest: [UInt8]) { self.digest = digest }

    package init(part: ChatMessageContent) {
        switch part {
        case .text(let t): self = Array(t.utf8).withUnsafeBytes { MediaKey(kind: "text", bytes: $0) }
        case .image(let jpeg): self = jpeg.withUnsafeBytes { MediaKey(kind: "image/jpeg", bytes: $0) }
        case .audio(let wav): self = wav.withUnsafeBytes { MediaKey(kind: "audio/wav", bytes: $0) }
        case .audioPCMF32(let samples, let rate):
            let r = UInt64(truncatingIfNeeded: rate)
            let extra = (0..<8).map { UInt8(truncatingIfNeeded: r >> (8 * UInt64($0))) }
            self = samples.withUnsafeBytes { MediaKey(kind: "audio/pcm-f32", bytes: $0, extra: extra) }
        }
    }

    package var description: String { String(SHA256.hex(digest).prefix(16)) }
}

/// How a media part sits in the prompt: text pieces (markers, tokenized with the surrounding text's
/// tokenizer) and runs of the part's embedding rows, in order.
package struct MediaLayout: Sendable, Equatable {
    package enum Piece: Sendable, Equatable {
        case text(String)
        case rows(Range<Int>)
    }
    package var pieces: [Piece]
    /// Rows the part's encoding has (every `rows` piece lies within 0..<rowCount).
    package var rowCount: Int

    package init(pieces: [Piece], rowCount: Int) {
        self.pieces = pieces
        self.rowCount = rowCount
    }
}

/// A media part that passed its checks and knows its layout; `encode` runs the encoder.
package protocol PreparedMedia: AnyObject, Sendable {
    var layout: MediaLayout { get }
    /// The part's embedding rows, [layout.rowCount, embeddingLength].
    func encode() throws -> [Float]
}

/// The media encoders of a model (its projector): which parts it takes and how to prepare them.
package protocol MediaEncoderBackend: AnyObject, Sendable {
    var acceptsImages: Bool { get }
    var acceptsAudio: Bool { get }
    /// Width of the rows it produces (the text model's embedding length).
    var embeddingLength: Int { get }
    /// Decodes and checks `part` (an image or audio part) and lays it out; throws a precise error for
    /// media it cannot take. Cheap next to `encode` (no encoder run).
    func prepare(_ part: ChatMessageContent) throws -> any PreparedMedia
    /// The same for an image given as pixels (no JPEG round trip).
    func prepare(image: RGBImage) throws -> any PreparedMedia
}

extension MediaEncoderBackend {
    package func prepare(image: RGBImage) throws -> any PreparedMedia {
        throw LeapError(.unsupported, "this projector takes no images")
    }
}

extension ModelRunner {
    /// The embedding rows the model sees for a media part ([count, embeddingLength]: for an image its
    /// tiles in order, then the thumbnail), as a conversation would evaluate them.
    package func embed(_ part: ChatMessageContent) throws -> (rows: [Float], count: Int) {
        let needs: String
        switch part {
        case .text: throw LeapError.invalidArgument("a text part has no media embeddings")
        case .image: needs = supportsImages ? "" : "an image needs a vision encoder"
        case .audio, .audioPCMF32: needs = supportsAudioInput ? "" : "audio needs an audio encoder"
        }
        guard needs.isEmpty, let media else { throw LeapError(.unsupported, "\(needs); \(projectorSummary)") }
        return try encodeChecked(try media.prepare(part), width: media.embeddingLength)
    }

    /// `embed` for an image given as RGB pixels.
    package func embed(image: RGBImage) throws -> (rows: [Float], count: Int) {
        guard supportsImages, let media else { throw LeapError(.unsupported, "an image needs a vision encoder; \(projectorSummary)") }
        return try encodeChecked(try media.prepare(image: image), width: media.embeddingLength)
    }

    private func encodeChecked(_ prepared: any PreparedMedia, width: Int) throws -> (rows: [Float], count: Int) {
        let rows = try prepared.encode()
        guard rows.count == prepared.layout.rowCount * width else {
            throw LeapError(.internal, "the encoder gave \(rows.count) floats for \(prepared.layout.rowCount) rows of \(width)")
        }
        return (rows, prepared.layout.rowCount)
    }

    /// What the model has in the way of a projector, for error messages.
    package var projectorSummary: String {
        if let p = companions.mmproj, let problem = mediaProblem {
            return "the projector '\(p)' (mmproj) next to the model could not be used: \(problem)"
        }
        guard let media else {
            return "this is a text model (no projector: give mmproj_path or put the model's mmproj-*.gguf next to it)"
        }
        let name = companions.mmproj.map { "the projector '\($0)' (mmproj)" } ?? "the projector"
        return "\(name) of this model is \(media.acceptsImages ? "a vision encoder" : "an audio encoder")"
    }
}

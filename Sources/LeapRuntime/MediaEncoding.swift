import LeapCore
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
}

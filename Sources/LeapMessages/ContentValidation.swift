import LeapAudio
import LeapCore

/// Checks done when content enters a message, so that bad bytes fail where they are added rather than
/// deep inside generation.
package enum ContentValidation {
    /// JPEG only: the SDK hands raw JPEG bytes to vision models.
    package static func checkJPEG(_ bytes: [UInt8], field: String) throws {
        guard bytes.count >= 3, bytes[0] == 0xFF, bytes[1] == 0xD8, bytes[2] == 0xFF else {
            throw LeapError.serialization("\(field): image is not JPEG (\(describeSignature(bytes))); only JPEG images are supported")
        }
    }

    /// WAV only: the RIFF/WAVE header must be valid (a supported PCM or float encoding, consistent sizes).
    /// Channel count is checked when the audio is used (the engine needs mono).
    package static func checkWAV(_ bytes: [UInt8], field: String) throws {
        do {
            _ = try bytes.withUnsafeBytes { try parseWAVHeader($0) }
        } catch let e as LeapError {
            throw LeapError.audioFormat("\(field): \(e.message)")
        }
    }

    /// Float samples must be finite (a NaN or infinity would reach the audio encoder and poison every
    /// embedding of the clip; a JSON number beyond Float's range becomes one): the index of the first that
    /// is not, if any.
    package static func firstNonFiniteSample(_ samples: UnsafeBufferPointer<Float>) -> Int? {
        samples.firstIndex { !$0.isFinite }
    }

    /// Names common file types by their magic bytes, for error messages.
    package static func describeSignature(_ b: [UInt8]) -> String {
        func starts(_ s: [UInt8]) -> Bool { b.count >= s.count && b[0..<s.count].elementsEqual(s) }
        if b.isEmpty { return "no data" }
        if starts([0x89, 0x50, 0x4E, 0x47]) { return "PNG data" }
        if starts(Array("GIF8".utf8)) { return "GIF data" }
        if starts(Array("RIFF".utf8)) && b.count >= 12 && b[8..<12].elementsEqual(Array("WEBP".utf8)) { return "WebP data" }
        if starts(Array("RIFF".utf8)) && b.count >= 12 && b[8..<12].elementsEqual(Array("WAVE".utf8)) { return "WAV data" }
        if starts([0xFF, 0xD8, 0xFF]) { return "JPEG data" }
        if starts(Array("ID3".utf8)) || (b.count >= 2 && b[0] == 0xFF && b[1] & 0xE0 == 0xE0) { return "MP3 data" }
        if b.count >= 8 && b[4..<8].elementsEqual(Array("ftyp".utf8)) { return "MP4/M4A data" }
        if starts(Array("OggS".utf8)) { return "Ogg data" }
        if starts(Array("fLaC".utf8)) { return "FLAC data" }
        if starts(Array("RIFX".utf8)) { return "big-endian RIFX data" }
        if starts(Array("BM".utf8)) { return "BMP data" }
        let hex = b.prefix(4).map { x -> String in
            let d = Array("0123456789ABCDEF")
            return String([d[Int(x >> 4)], d[Int(x & 15)]])
        }.joined(separator: " ")
        return "data starting with \(hex)"
    }
}

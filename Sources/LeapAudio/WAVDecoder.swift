// WAV (RIFF/WAVE) decoding to float samples.
//
// Accepted: format tags PCM (1), IEEE float (3) and WAVE_FORMAT_EXTENSIBLE (0xFFFE, the sub-format GUID
// decides); unsigned 8-bit, signed 16/24/32-bit integers, 32/64-bit floats; any channel count; chunks in any
// order, unknown ones skipped with their pad byte. A data chunk that claims more bytes than the file has
// (streamed writers leave 0 or 0xFFFFFFFF) is clamped to what is there; RF64 files decode the same way.
// Every read is bounds-checked against the input: a bad file is a thrown LeapError(.audioFormat), never a
// crash, and no allocation is larger than the input implies.
import LeapCore

/// Decoded audio: interleaved float samples in [-1, 1].
package struct PCMAudio: Sendable, Equatable {
    package var samples: [Float]  // [frames, channels] interleaved
    package var sampleRate: Int
    package var channels: Int

    package init(samples: [Float], sampleRate: Int, channels: Int) {
        self.samples = samples
        self.sampleRate = sampleRate
        self.channels = channels
    }

    package var frameCount: Int { channels > 0 ? samples.count / channels : 0 }
}

/// How the samples of a WAV file are stored.
package enum WAVSampleEncoding: Sendable, Equatable {
    case unsigned8, signed16, signed24, signed32, float32, float64

    package var bytesPerSample: Int {
        switch self {
        case .unsigned8: return 1
        case .signed16: return 2
        case .signed24: return 3
        case .signed32, .float32: return 4
        case .float64: return 8
        }
    }
}

/// What the header of a WAV file says, and where its samples are.
package struct WAVInfo: Sendable, Equatable {
    package var encoding: WAVSampleEncoding
    package var channels: Int
    package var sampleRate: Int
    package var formatTag: Int          // the fmt chunk's tag (0xFFFE for extensible)
    package var dataOffset: Int         // first sample byte in the file
    package var frameCount: Int         // complete frames present (after clamping to the file)
    package var dataSizeWasClamped: Bool  // the data chunk declared more bytes than the file has
}

/// Sample rates accepted from a file header (Hz).
package let wavSampleRateRange = 1...1_000_000
/// Largest channel count accepted from a file header.
package let wavMaxChannels = 256

/// Names of WAVE format tags we do not decode, for the error message.
func wavFormatTagName(_ tag: Int) -> String? {
    switch tag {
    case 0x0002: return "Microsoft ADPCM"
    case 0x0006: return "A-law"
    case 0x0007: return "mu-law"
    case 0x0011: return "IMA ADPCM"
    case 0x0016: return "ITU G.723 ADPCM"
    case 0x0031: return "GSM 6.10"
    case 0x0040: return "ITU G.721 ADPCM"
    case 0x0050: return "MPEG audio"
    case 0x0055: return "MP3"
    case 0x0092: return "Dolby AC-3 (S/PDIF)"
    case 0x00FF, 0x1610: return "AAC"
    case 0x0160, 0x0161, 0x0162, 0x0163: return "Windows Media Audio"
    case 0x2000: return "Dolby AC-3"
    case 0x2001: return "DTS"
    case 0x674F, 0x6750, 0x6751, 0x676F, 0x6770, 0x6771: return "Ogg Vorbis"
    case 0x704F: return "Opus"
    case 0xF1AC: return "FLAC"
    default: return nil
    }
}

private func audioError(_ message: String) -> LeapError { LeapError(.audioFormat, message) }

/// Little-endian reads that check bounds (the caller checks before; these never trap either way).
private extension UnsafeRawBufferPointer {
    func u16(_ o: Int) -> Int {
        guard o >= 0, o + 2 <= count else { return 0 }
        return Int(self[o]) | Int(self[o + 1]) << 8
    }
    func u32(_ o: Int) -> Int {
        guard o >= 0, o + 4 <= count else { return 0 }
        return Int(self[o]) | Int(self[o + 1]) << 8 | Int(self[o + 2]) << 16 | Int(self[o + 3]) << 24
    }
    func u64(_ o: Int) -> UInt64 {
        guard o >= 0, o + 8 <= count else { return 0 }
        return UInt64(u32(o)) | UInt64(u32(o + 4)) << 32
    }
    func fourCC(_ o: Int, is s: StaticString) -> Bool {
        guard o >= 0, o + 4 <= count else { return false }
        let p = s.utf8Start
        return self[o] == p[0] && self[o + 1] == p[1] && self[o + 2] == p[2] && self[o + 3] == p[3]
    }
}

/// The KSDATAFORMAT_SUBTYPE GUID suffix shared by PCM and IEEE float (bytes 2...15 as stored).
private let subFormatSuffix: [UInt8] = [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]

private struct FormatChunk {
    var tag: Int, channels: Int, sampleRate: Int, blockAlign: Int, bitsPerSample: Int
    var effectiveTag: Int  // tag, or the extensible sub-format's tag
}

private func parseFormatChunk(_ b: UnsafeRawBufferPointer, at o: Int, size: Int) throws -> FormatChunk {
    guard size >= 16 else {
        throw audioError("'fmt ' chunk at offset \(o - 8) is \(size) bytes, expected at least 16")
    }
    let tag = b.u16(o), channels = b.u16(o + 2), rate = b.u32(o + 4), blockAlign = b.u16(o + 12)
    let bits = b.u16(o + 14)
    var effective = tag
    if tag == 0xFFFE {
        guard size >= 40 else {
            throw audioError("WAVE_FORMAT_EXTENSIBLE 'fmt ' chunk is \(size) bytes, expected 40")
        }
        let cbSize = b.u16(o + 16)
        guard cbSize >= 22 else {
            throw audioError("WAVE_FORMAT_EXTENSIBLE extension size (cbSize) is \(cbSize), expected 22")
        }
        let validBits = b.u16(o + 18)
        guard validBits <= bits else {
            throw audioError("WAVE_FORMAT_EXTENSIBLE valid bits per sample \(validBits) exceed the container size \(bits)")
        }
        let guidAt = o + 24
        effective = b.u16(guidAt)
        let suffixMatches = (0..<14).allSatisfy { b[guidAt + 2 + $0] == subFormatSuffix[$0] }
        guard suffixMatches else {
            let guid = (0..<16).map { hex2(b[guidAt + $0]) }.joined()
            throw audioError("WAVE_FORMAT_EXTENSIBLE sub-format GUID \(guid) is not PCM or IEEE float")
        }
    }
    return FormatChunk(tag: tag, channels: channels, sampleRate: rate, blockAlign: blockAlign,
                       bitsPerSample: bits, effectiveTag: effective)
}

private func sampleEncoding(_ f: FormatChunk) throws -> WAVSampleEncoding {
    let via = f.tag == 0xFFFE ? " (WAVE_FORMAT_EXTENSIBLE sub-format)" : ""
    switch f.effectiveTag {
    case 1:
        switch f.bitsPerSample {
        case 8: return .unsigned8
        case 16: return .signed16
        case 24: return .signed24
        case 32: return .signed32
        default:
            // Containers for 12/20-bit samples are only defined by the extensible format.
            if f.tag == 0xFFFE {
                throw audioError("PCM container of \(f.bitsPerSample) bits is not supported (8, 16, 24 or 32)")
            }
            throw audioError("PCM with \(f.bitsPerSample) bits per sample is not supported (8, 16, 24 or 32)")
        }
    case 3:
        switch f.bitsPerSample {
        case 32: return .float32
        case 64: return .float64
        default: throw audioError("IEEE float with \(f.bitsPerSample) bits per sample is not supported (32 or 64)")
        }
    default:
        let hexTag = "0x" + hex2(UInt8(f.effectiveTag >> 8 & 0xFF)) + hex2(UInt8(f.effectiveTag & 0xFF))
        if let name = wavFormatTagName(f.effectiveTag) {
            throw audioError("WAV encoding \(name) (format tag \(hexTag))\(via) is not supported; need PCM integer or IEEE float")
        }
        throw audioError("unknown WAV format tag \(hexTag)\(via); need PCM integer (1) or IEEE float (3)")
    }
}

/// Parses and validates the header of a WAV file; does not touch the samples.
package func parseWAVHeader(_ b: UnsafeRawBufferPointer) throws -> WAVInfo {
    if b.count == 0 { throw audioError("empty input: 0 bytes, expected a WAV (RIFF/WAVE) file") }
    if let other = sniffNonWAVFormat(b) {
        throw audioError("unsupported audio format: \(other); only WAV (RIFF/WAVE) is accepted")
    }
    if b.fourCC(0, is: "RIFX") { throw audioError("big-endian WAV (RIFX) is not supported; need little-endian RIFF/WAVE") }
    let isRF64 = b.fourCC(0, is: "RF64") || b.fourCC(0, is: "BW64")
    guard b.fourCC(0, is: "RIFF") || isRF64 else {
        throw audioError("not a WAV file: starts with bytes \(hexPrefix(b)), expected 'RIFF'")
    }
    guard b.count >= 12 else { throw audioError("truncated WAV file: \(b.count) bytes, the RIFF header needs 12") }
    guard b.fourCC(8, is: "WAVE") else {
        throw audioError("RIFF form type is '\(printableFourCC(b, at: 8))', expected 'WAVE'")
    }
    // Chunks end at the RIFF size when it is plausible, else at the end of the input.
    let riffSize = b.u32(4)
    var end = b.count
    if !isRF64, riffSize >= 4, riffSize + 8 <= b.count { end = riffSize + 8 }

    var format: FormatChunk?
    var dataRange: (offset: Int, size: Int, clamped: Bool)?
    var rf64DataSize: UInt64?
    var seen: [String] = []
    var offset = 12
    while true {
        if offset + 8 > end {
            // The RIFF size may be wrong: keep looking past it for missing chunks.
            if (format == nil || dataRange == nil) && end < b.count && offset + 8 <= b.count {
                end = b.count
                continue
            }
            break
        }
        let size = b.u32(offset + 4)
        let body = offset + 8
        let id = printableFourCC(b, at: offset)
        if seen.count < 16 { seen.append(id) }
        if b.fourCC(offset, is: "fmt ") {
            guard format == nil else { throw audioError("second 'fmt ' chunk at offset \(offset)") }
            guard body + size <= b.count else {
                throw audioError("'fmt ' chunk at offset \(offset) declares \(size) bytes but only \(b.count - body) remain")
            }
            format = try parseFormatChunk(b, at: body, size: size)
        } else if b.fourCC(offset, is: "ds64") && isRF64 && size >= 28 && body + 28 <= b.count {
            rf64DataSize = b.u64(body + 8)
        } else if b.fourCC(offset, is: "data") && dataRange == nil {
            var declared = size
            if isRF64, size == 0xFFFF_FFFF, let big = rf64DataSize { declared = Int(clamping: big) }
            let available = b.count - body
            // Some streaming writers leave 0 in both the RIFF and data sizes until they finish.
            let streamedZero = size == 0 && available > 0 && (riffSize == 0 || riffSize == 0xFFFF_FFFF || riffSize + 8 <= body)
            if declared > available || size == 0xFFFF_FFFF || streamedZero {
                // Streamed header (size unknown or too big): the samples run to the end of the input.
                dataRange = (body, available, declared != available || streamedZero)
                break
            }
            dataRange = (body, declared, false)
        }
        // Next chunk: body plus the pad byte of odd sizes. Overflow-free: sizes are < 2^32.
        let next = body + size + (size & 1)
        if next > b.count { break }
        offset = next
    }

    guard let fmt = format else {
        throw audioError("no 'fmt ' chunk found (chunks seen: \(seen.isEmpty ? "none" : seen.joined(separator: ", ")))")
    }
    let encoding = try sampleEncoding(fmt)
    guard fmt.channels > 0 else { throw audioError("WAV header declares 0 channels") }
    guard fmt.channels <= wavMaxChannels else {
        throw audioError("WAV header declares \(fmt.channels) channels (at most \(wavMaxChannels) supported)")
    }
    guard wavSampleRateRange.contains(fmt.sampleRate) else {
        throw audioError("WAV sample rate \(fmt.sampleRate) Hz is out of range (1 Hz ... 1 MHz)")
    }
    let expectedAlign = fmt.channels * encoding.bytesPerSample
    guard fmt.blockAlign == expectedAlign else {
        throw audioError(
            "WAV block align \(fmt.blockAlign) does not match \(fmt.channels) channel(s) x \(fmt.bitsPerSample) bits (expected \(expectedAlign))")
    }
    guard let data = dataRange else {
        throw audioError("no 'data' chunk found (chunks seen: \(seen.joined(separator: ", ")))")
    }
    let frames = data.size / expectedAlign
    guard frames > 0 else {
        throw audioError("WAV file has no audio: the 'data' chunk holds \(data.size) bytes, less than one frame of \(expectedAlign)")
    }
    return WAVInfo(encoding: encoding, channels: fmt.channels, sampleRate: fmt.sampleRate, formatTag: fmt.tag,
                   dataOffset: data.offset, frameCount: frames, dataSizeWasClamped: data.clamped)
}

/// Decodes a WAV file to interleaved float samples in [-1, 1] (any channel count).
package func decodeWAV(_ bytes: UnsafeRawBufferPointer) throws -> PCMAudio {
    let info = try parseWAVHeader(bytes)
    let count = info.frameCount * info.channels
    let base = info.dataOffset
    guard base >= 0, base + count * info.encoding.bytesPerSample <= bytes.count else {
        throw LeapError(.internal, "WAV data range exceeds the input")  // parseWAVHeader guarantees it
    }
    var samples = [Float](repeating: 0, count: count)
    var nonFinite: Int?
    samples.withUnsafeMutableBufferPointer { out in
        switch info.encoding {
        case .unsigned8:
            for i in 0..<count { out[i] = Float(Int(bytes[base + i]) - 128) * (1 / 128) }
        case .signed16:
            for i in 0..<count {
                let v = Int16(littleEndian: bytes.loadUnaligned(fromByteOffset: base + 2 * i, as: Int16.self))
                out[i] = Float(v) * (1 / 32_768)
            }
        case .signed24:
            for i in 0..<count {
                let o = base + 3 * i
                // Assemble in the top 24 bits of an Int32 so the sign extends.
                let u = UInt32(bytes[o]) << 8 | UInt32(bytes[o + 1]) << 16 | UInt32(bytes[o + 2]) << 24
                out[i] = Float(Int32(bitPattern: u) >> 8) * (1 / 8_388_608)
            }
        case .signed32:
            for i in 0..<count {
                let v = Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: base + 4 * i, as: Int32.self))
                out[i] = Float(v) * (1 / 2_147_483_648)
            }
        case .float32:
            for i in 0..<count {
                let bits = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: base + 4 * i, as: UInt32.self))
                let v = Float(bitPattern: bits)
                if !v.isFinite, nonFinite == nil { nonFinite = i }
                out[i] = min(1, max(-1, v))
            }
        case .float64:
            for i in 0..<count {
                let bits = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: base + 8 * i, as: UInt64.self))
                let v = Double(bitPattern: bits)
                if !v.isFinite, nonFinite == nil { nonFinite = i }
                out[i] = Float(min(1, max(-1, v)))
            }
        }
    }
    if let i = nonFinite {
        throw audioError("WAV float sample \(i) (frame \(i / info.channels), channel \(i % info.channels)) is not finite (NaN or infinity)")
    }
    return PCMAudio(samples: samples, sampleRate: info.sampleRate, channels: info.channels)
}

package func decodeWAV(_ bytes: [UInt8]) throws -> PCMAudio {
    try bytes.withUnsafeBytes { try decodeWAV($0) }
}

// WAV encoding of float samples: IEEE float 32-bit (format tag 3) or 16-bit PCM (rounded and clipped).
// The one WAV writer: files for callers (leap_audio_encode_wav) and the audio parts of messages.
import LeapCore

package enum WAVOutputEncoding: Sendable, Equatable {
    case float32      // format tag 3 with the 18-byte fmt and a 'fact' chunk, samples as given (NaN written as 0)
    case float32LEAP  // format tag 3 with the 44-byte header of LEAP's `fromFloatSamples` (16-byte fmt, no
                      // 'fact'), byte for byte what LEAP's SDK writes, so message audio round-trips with it
    case int16        // format tag 1, round(x * 32768) clipped to [-32768, 32767]
}

/// Encodes interleaved samples ([frames, channels]) as a WAV file.
package func encodeWAV(_ samples: UnsafeBufferPointer<Float>, channels: Int, sampleRate: Int,
                       encoding: WAVOutputEncoding) throws -> [UInt8] {
    guard (1...wavMaxChannels).contains(channels) else {
        throw LeapError(.invalidArgument, "channel count \(channels) is out of range (1...\(wavMaxChannels))")
    }
    guard wavSampleRateRange.contains(sampleRate) else {
        throw LeapError(.invalidArgument, "sample rate \(sampleRate) Hz is out of range (1...1000000)")
    }
    guard samples.count % channels == 0 else {
        throw LeapError(.invalidArgument, "\(samples.count) samples is not a whole number of \(channels)-channel frames")
    }
    let isFloat = encoding != .int16
    let bytesPerSample = isFloat ? 4 : 2
    let dataSize = samples.count * bytesPerSample
    // Float files carry the 18-byte fmt (cbSize = 0) and a 'fact' chunk, as non-PCM WAVs should.
    let hasFact = encoding == .float32
    let fmtSize = hasFact ? 18 : 16
    let factSize = hasFact ? 12 : 0
    let headerSize = 12 + 8 + fmtSize + factSize + 8
    guard dataSize <= 0xFFFF_FFFF - headerSize else {
        throw LeapError(.invalidArgument, "\(samples.count) samples do not fit in a WAV file (4 GiB limit)")
    }
    var out: [UInt8] = []
    out.reserveCapacity(headerSize + dataSize)
    func u16(_ v: Int) { out.append(UInt8(v & 0xFF)); out.append(UInt8(v >> 8 & 0xFF)) }
    func u32(_ v: Int) { u16(v & 0xFFFF); u16(v >> 16 & 0xFFFF) }
    func tag(_ s: String) { out.append(contentsOf: s.utf8) }

    tag("RIFF"); u32(headerSize - 8 + dataSize); tag("WAVE")
    tag("fmt "); u32(fmtSize)
    u16(isFloat ? 3 : 1); u16(channels); u32(sampleRate)
    u32(sampleRate * channels * bytesPerSample); u16(channels * bytesPerSample); u16(bytesPerSample * 8)
    if hasFact {
        u16(0)
        tag("fact"); u32(4); u32(samples.count / channels)
    }
    tag("data"); u32(dataSize)
    let start = out.count
    out.append(contentsOf: repeatElement(0, count: dataSize))
    out.withUnsafeMutableBytes { raw in
        if isFloat {
            for (i, v) in samples.enumerated() {
                raw.storeBytes(of: (v.isNaN ? 0 : v).bitPattern.littleEndian, toByteOffset: start + 4 * i, as: UInt32.self)
            }
        } else {
            for (i, v) in samples.enumerated() {
                let scaled = v.isNaN ? 0 : (v * 32_768).rounded()
                let clipped = Int16(max(-32_768, min(32_767, scaled)))
                raw.storeBytes(of: clipped.littleEndian, toByteOffset: start + 2 * i, as: Int16.self)
            }
        }
    }
    return out
}

package func encodeWAV(_ samples: [Float], channels: Int, sampleRate: Int, encoding: WAVOutputEncoding) throws -> [UInt8] {
    try samples.withUnsafeBufferPointer { try encodeWAV($0, channels: channels, sampleRate: sampleRate, encoding: encoding) }
}

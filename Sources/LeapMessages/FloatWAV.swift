/// Byte for byte the 44-byte-header IEEE float32 WAV that LEAP's `fromFloatSamples` / `FloatAudioBuffer.createWavBytes`
/// produce (format tag 3, little-endian, interleaved).
/// (LeapAudio.encodeWAV writes the longer WAVE_FORMAT_IEEE_FLOAT header with a fact chunk; this one keeps
/// LEAP's exact bytes so that messages round-trip with the SDK.)
package func makeFloat32WAV(interleaved samples: [Float], channelCount: Int, sampleRate: Int) -> [UInt8] {
    var out: [UInt8] = []
    let dataBytes = samples.count * 4
    out.reserveCapacity(44 + dataBytes)
    func u32(_ v: Int) { let x = UInt32(truncatingIfNeeded: v); for k in 0..<4 { out.append(UInt8(truncatingIfNeeded: x >> (8 * UInt32(k)))) } }
    func u16(_ v: Int) { let x = UInt16(truncatingIfNeeded: v); out.append(UInt8(x & 0xFF)); out.append(UInt8(x >> 8)) }
    out += Array("RIFF".utf8); u32(36 + dataBytes); out += Array("WAVE".utf8)
    out += Array("fmt ".utf8); u32(16); u16(3); u16(channelCount); u32(sampleRate)
    u32(sampleRate * channelCount * 4); u16(channelCount * 4); u16(32)
    out += Array("data".utf8); u32(dataBytes)
    for s in samples { u32(Int(s.bitPattern)) }
    return out
}

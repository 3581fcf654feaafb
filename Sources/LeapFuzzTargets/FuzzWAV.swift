// Fuzz target for the WAV decoder and the model input path: any bytes must give samples or a LeapError,
// never a crash or an out-of-bounds read.
import Glibc
import LeapAudio

private func fuzzSeedWAV(tag: Int, channels: Int, bits: Int, extra: [UInt8] = []) -> [UInt8] {
    func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16 & 0xFFFF) }
    let align = channels * bits / 8
    var fmt = le16(tag) + le16(channels) + le32(8_000) + le32(8_000 * align) + le16(align) + le16(bits)
    if tag == 0xFFFE {
        fmt += le16(22) + le16(bits) + le32(3) + le16(bits == 32 ? 3 : 1)
            + [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]
    }
    let data = (0..<(align * 9)).map { UInt8(truncatingIfNeeded: $0 &* 37) }
    let body = Array("fmt ".utf8) + le32(fmt.count) + fmt + extra + Array("data".utf8) + le32(data.count) + data
    return Array("RIFF".utf8) + le32(4 + body.count) + Array("WAVE".utf8) + body
}

/// WAV decoder: any bytes; decoded audio must be well-formed (shape, samples in [-1, 1]).
package let fuzzWAV: FuzzTarget = (
    seeds: [
        fuzzSeedWAV(tag: 1, channels: 1, bits: 16),
        fuzzSeedWAV(tag: 1, channels: 2, bits: 24, extra: Array("LIST".utf8) + [3, 0, 0, 0, 1, 2, 3, 0]),
        fuzzSeedWAV(tag: 3, channels: 1, bits: 32),
        fuzzSeedWAV(tag: 3, channels: 1, bits: 64),
        fuzzSeedWAV(tag: 1, channels: 1, bits: 8),
        fuzzSeedWAV(tag: 0xFFFE, channels: 3, bits: 32),
        fuzzSeedWAV(tag: 0xFFFE, channels: 1, bits: 16),
    ],
    run: { bytes in fuzzWAVOne(bytes) }
)

func fuzzWAVOne(_ data: [UInt8]) {
    guard let audio = try? decodeWAV(data) else { return }
    if audio.channels < 1 || audio.samples.count != audio.frameCount * audio.channels {
        fuzzFailure("WAV decode gave a bad shape: \(audio.channels) channels, \(audio.samples.count) samples")
    }
    if audio.samples.contains(where: { !($0 >= -1 && $0 <= 1) }) {
        fuzzFailure("WAV decode gave a sample outside [-1, 1]")
    }
    // Keep the work per input bounded: only short mono inputs run the whole input path (with resampling).
    if audio.channels == 1 && audio.samples.count <= 4_096 { _ = try? loadWAV(data) }
}

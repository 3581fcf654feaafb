import Glibc
import LeapAudio
import LeapCore
import LeapTestFiles
import Testing

/// Tests/Fixtures/audio, found from this file's path.
let audioFixturesDir = fixturesDir("audio")


struct Fixture: CustomStringConvertible, Sendable {
    var name: String, rate: Int, channels: Int, frames: Int
    var description: String { name }
}

let audioFixtures: [Fixture] = {
    guard let text = readBytes(audioFixturesDir + "/manifest.txt") else { return [] }
    return String(decoding: text, as: UTF8.self).split(separator: "\n").compactMap { line in
        let f = line.split(separator: " ")
        guard f.count == 4, let r = Int(f[1]), let c = Int(f[2]), let n = Int(f[3]) else { return nil }
        return Fixture(name: String(f[0]), rate: r, channels: c, frames: n)
    }
}()

/// The error a decode throws (kind must be audioFormat), or nil if it succeeded.
func audioError(_ bytes: [UInt8]) -> LeapError? {
    do {
        _ = try decodeWAV(bytes)
        return nil
    } catch let e as LeapError {
        return e
    } catch {
        return LeapError(.internal, "unexpected error \(error)")
    }
}

// MARK: - Building WAV bytes by hand for rejection cases

func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16 & 0xFFFF) }
func chunk(_ id: String, _ body: [UInt8]) -> [UInt8] {
    Array(id.utf8) + le32(body.count) + body + (body.count % 2 == 1 ? [0] : [])
}
func fmtBody(tag: Int = 1, channels: Int = 1, rate: Int = 16_000, bits: Int = 16, blockAlign: Int? = nil) -> [UInt8] {
    let align = blockAlign ?? channels * bits / 8
    return le16(tag) + le16(channels) + le32(rate) + le32(rate * align) + le16(align) + le16(bits)
}
func riff(_ chunks: [UInt8]) -> [UInt8] { Array("RIFF".utf8) + le32(4 + chunks.count) + Array("WAVE".utf8) + chunks }
func wav(fmt: [UInt8] = fmtBody(), data: [UInt8] = [1, 0, 2, 0]) -> [UInt8] { riff(chunk("fmt ", fmt) + chunk("data", data)) }

@Suite struct WAVGoldenTests {
    @Test func fixturesArePresent() {
        #expect(audioFixtures.count >= 15, "fixtures missing in \(audioFixturesDir)")
    }

    @Test(arguments: audioFixtures)
    func decodesSampleExact(_ fixture: Fixture) throws {
        let bytes = try #require(readBytes("\(audioFixturesDir)/\(fixture.name).wav"))
        let expectedBytes = try #require(readBytes("\(audioFixturesDir)/\(fixture.name).f32"))
        let expected: [Float] = expectedBytes.withUnsafeBytes { raw in
            (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
        }
        let audio = try decodeWAV(bytes)
        #expect(audio.sampleRate == fixture.rate)
        #expect(audio.channels == fixture.channels)
        #expect(audio.frameCount == fixture.frames)
        #expect(audio.samples == expected)
    }

    @Test func monoPolicyForModelInput() throws {
        let stereo = try #require(readBytes("\(audioFixturesDir)/wave_s16_stereo_44100.wav"))
        #expect(try decodeWAV(stereo).channels == 2)  // decoding itself accepts any layout
        #expect(throws: LeapError(.audioFormat, "mono required, got 2 channels")) { _ = try loadWAV(stereo) }
        let five = try #require(readBytes("\(audioFixturesDir)/sox_s16_5ch_16000.wav"))
        #expect(throws: LeapError(.audioFormat, "mono required, got 5 channels")) { _ = try loadWAV(five) }
    }

    @Test func loadWAVResamplesMonoTo16k() throws {
        // 44.1 kHz mono tone written by our encoder as Int16 -> 16 kHz: compare with the direct path.
        let x = tone(440, rate: 44_100, seconds: 0.5)
        let bytes = try encodeWAV(x, channels: 1, sampleRate: 44_100, encoding: .float32)
        let y = try loadWAV(bytes)
        #expect(y == (try Resampler.resample(x, from: 44_100, to: 16_000)))
        #expect(y.count == 8_000)
        #expect(snrAgainstTone(y, frequency: 440, rate: 16_000, skip: 800) > 120)
        // Already at 16 kHz: samples pass through unchanged.
        let z = tone(1_000, rate: 16_000, seconds: 0.1)
        #expect(try loadWAV(try encodeWAV(z, channels: 1, sampleRate: 16_000, encoding: .float32)) == z)
    }
}

@Suite struct WAVRejectionTests {
    func expectError(_ bytes: [UInt8], contains needle: String, sourceLocation: SourceLocation = #_sourceLocation) {
        guard let e = audioError(bytes) else {
            Issue.record("decoded without error; expected '\(needle)'", sourceLocation: sourceLocation)
            return
        }
        #expect(e.kind == .audioFormat, sourceLocation: sourceLocation)
        #expect(e.message.contains(needle), "message: \(e.message)", sourceLocation: sourceLocation)
    }

    @Test func otherFormatsAreNamed() {
        expectError(Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 40), contains: "MP3 (ID3 tag)")
        expectError([0xFF, 0xFB, 0x90, 0x64] + [UInt8](repeating: 0, count: 40), contains: "MP3 (MPEG audio frame sync)")
        expectError([0xFF, 0xF1, 0x50, 0x80] + [UInt8](repeating: 0, count: 40), contains: "AAC (ADTS)")
        expectError([0, 0, 0, 0x20] + Array("ftypM4A ".utf8) + [UInt8](repeating: 0, count: 40), contains: "MP4/M4A")
        expectError(Array("OggS".utf8) + [UInt8](repeating: 0, count: 24) + Array("OpusHead".utf8), contains: "Ogg Opus")
        expectError(Array("OggS".utf8) + [UInt8](repeating: 0, count: 25) + Array("vorbis".utf8), contains: "Ogg Vorbis")
        expectError(Array("fLaC".utf8) + [0, 0, 0, 34], contains: "FLAC")
        expectError(Array("FORM".utf8) + le32(100) + Array("AIFF".utf8), contains: "AIFF")
        expectError(Array("caff".utf8) + [0, 1, 0, 0], contains: "CAF")
        expectError([0x1A, 0x45, 0xDF, 0xA3, 0, 0], contains: "Matroska/WebM")
        expectError(Array("RIFF".utf8) + le32(100) + Array("AVI LIST".utf8), contains: "AVI")
        expectError([0xFF, 0xD8, 0xFF, 0xE0], contains: "JPEG")
        expectError(Array("hello world, not audio".utf8), contains: "not a WAV file: starts with bytes 68 65 6c 6c")
    }

    @Test func bigEndianRIFX() {
        expectError(Array("RIFX".utf8) + le32(36) + Array("WAVE".utf8), contains: "big-endian WAV (RIFX)")
    }

    @Test func unsupportedEncodingsAreNamed() {
        expectError(wav(fmt: fmtBody(tag: 6, bits: 8)), contains: "A-law (format tag 0x0006)")
        expectError(wav(fmt: fmtBody(tag: 7, bits: 8)), contains: "mu-law (format tag 0x0007)")
        expectError(wav(fmt: fmtBody(tag: 2, bits: 4, blockAlign: 256)), contains: "Microsoft ADPCM")
        expectError(wav(fmt: fmtBody(tag: 0x11, bits: 4, blockAlign: 256)), contains: "IMA ADPCM")
        expectError(wav(fmt: fmtBody(tag: 0x55, bits: 0, blockAlign: 1)), contains: "MP3 (format tag 0x0055)")
        expectError(wav(fmt: fmtBody(tag: 0x1234)), contains: "unknown WAV format tag 0x1234")
        expectError(wav(fmt: fmtBody(bits: 12, blockAlign: 2)), contains: "PCM with 12 bits per sample is not supported")
        expectError(wav(fmt: fmtBody(tag: 3, bits: 16)), contains: "IEEE float with 16 bits per sample")
    }

    @Test func extensibleSubFormats() {
        func ext(sub: [UInt8], cbSize: Int = 22, validBits: Int = 16) -> [UInt8] {
            fmtBody(tag: 0xFFFE) + le16(cbSize) + le16(validBits) + le32(4) + sub
        }
        let suffix: [UInt8] = [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xAA, 0, 0x38, 0x9B, 0x71]
        #expect(audioError(wav(fmt: ext(sub: [1, 0] + suffix))) == nil)
        expectError(wav(fmt: ext(sub: [6, 0] + suffix)), contains: "A-law (format tag 0x0006) (WAVE_FORMAT_EXTENSIBLE sub-format)")
        expectError(wav(fmt: ext(sub: [1, 0] + [UInt8](repeating: 7, count: 14))), contains: "sub-format GUID 0100070707")
        expectError(wav(fmt: ext(sub: [1, 0] + suffix, cbSize: 0)), contains: "cbSize) is 0, expected 22")
        expectError(wav(fmt: ext(sub: [1, 0] + suffix, validBits: 20)), contains: "valid bits per sample 20 exceed")
        expectError(wav(fmt: fmtBody(tag: 0xFFFE) + le16(22)), contains: "EXTENSIBLE 'fmt ' chunk is 18 bytes, expected 40")
    }

    @Test func absurdHeaderValues() {
        expectError(wav(fmt: fmtBody(channels: 0, blockAlign: 2)), contains: "declares 0 channels")
        expectError(wav(fmt: fmtBody(channels: 300)), contains: "declares 300 channels")
        expectError(wav(fmt: fmtBody(rate: 0)), contains: "sample rate 0 Hz is out of range")
        expectError(wav(fmt: fmtBody(rate: 2_000_000)), contains: "sample rate 2000000 Hz is out of range")
        expectError(wav(fmt: fmtBody(channels: 2, blockAlign: 3)), contains: "block align 3 does not match 2 channel(s) x 16 bits (expected 4)")
        expectError(wav(fmt: fmtBody(bits: 16, blockAlign: 0)), contains: "block align 0")
    }

    @Test func truncatedAndInconsistentHeaders() {
        expectError([], contains: "empty input: 0 bytes")
        expectError(Array("RIFF".utf8), contains: "truncated WAV file: 4 bytes")
        expectError(Array("RIFF".utf8) + le32(4) + Array("WAVE".utf8), contains: "no 'fmt ' chunk found (chunks seen: none)")
        expectError(Array("RIFF".utf8) + le32(4) + Array("WAV!".utf8), contains: "RIFF form 'WAV!' (not 'WAVE')")
        expectError(riff(chunk("fmt ", [1, 0, 1, 0])), contains: "'fmt ' chunk at offset 12 is 4 bytes, expected at least 16")
        expectError(Array(riff(chunk("fmt ", fmtBody())).prefix(30)), contains: "'fmt ' chunk at offset 12 declares 16 bytes but only 10 remain")
        expectError(riff(chunk("fmt ", fmtBody()) + chunk("LIST", [1, 2, 3])), contains: "no 'data' chunk found (chunks seen: fmt , LIST)")
        expectError(riff(chunk("fmt ", fmtBody()) + chunk("fmt ", fmtBody()) + chunk("data", [0, 0])), contains: "second 'fmt ' chunk")
    }

    @Test func zeroLengthAudio() {
        expectError(wav(data: []), contains: "has no audio: the 'data' chunk holds 0 bytes")
        expectError(wav(fmt: fmtBody(channels: 2), data: [1, 2]), contains: "holds 2 bytes, less than one frame of 4")
    }

    @Test func nonFiniteFloatSamples() {
        let nan = Float.nan.bitPattern
        let data = le32(0) + le32(Int(nan))
        expectError(wav(fmt: fmtBody(tag: 3, bits: 32), data: data), contains: "WAV float sample 1 (frame 1, channel 0) is not finite")
    }

    @Test func floatOutOfRangeIsClamped() throws {
        let data = le32(Int(Float(1.5).bitPattern)) + le32(Int(Float(-3).bitPattern)) + le32(Int(Float(0.25).bitPattern))
        #expect(try decodeWAV(wav(fmt: fmtBody(tag: 3, bits: 32), data: data)).samples == [1, -1, 0.25])
    }

    @Test func streamedZeroSizes() throws {
        // Writers that never patched their header: RIFF size 0 and data size 0, samples follow.
        let bytes = Array("RIFF".utf8) + le32(0) + Array("WAVE".utf8) + chunk("fmt ", fmtBody()) + Array("data".utf8) + le32(0)
            + le16(16_384) + le16(0xC000)
        #expect(try decodeWAV(bytes).samples == [0.5, -0.5])
        // A legitimately empty data chunk followed by another chunk stays empty.
        expectError(riff(chunk("fmt ", fmtBody()) + chunk("data", []) + chunk("LIST", [1, 2])), contains: "has no audio")
    }

    @Test func everyPrefixOfAValidFileIsHandled() throws {
        // Truncation anywhere: either a clean error or the whole frames present, never a crash.
        let bytes = try encodeWAV(tone(300, rate: 8_000, seconds: 0.01), channels: 1, sampleRate: 8_000, encoding: .int16)
        for n in 0..<bytes.count {
            let prefix = Array(bytes.prefix(n))
            do {
                let audio = try decodeWAV(prefix)
                #expect(audio.frameCount == (n - 44) / 2)
            } catch let e as LeapError {
                #expect(e.kind == .audioFormat)
            }
        }
    }
}

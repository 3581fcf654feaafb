import LeapAudio
import LeapCore
import Testing

@Suite struct WAVEncoderTests {
    @Test(arguments: [1, 2, 3, 8])
    func float32RoundTripIsExact(_ channels: Int) throws {
        var rng = LCG(state: UInt64(channels))
        let x = (0..<(channels * 333)).map { _ in rng.float() }
        let bytes = try encodeWAV(x, channels: channels, sampleRate: 22_050, encoding: .float32)
        let info = try bytes.withUnsafeBytes { try parseWAVHeader($0) }
        #expect(info.formatTag == 3)
        let audio = try decodeWAV(bytes)
        #expect(audio == PCMAudio(samples: x, sampleRate: 22_050, channels: channels))
    }

    @Test(arguments: [1, 2, 6])
    func int16RoundTripWithinHalfStep(_ channels: Int) throws {
        var rng = LCG(state: 99 + UInt64(channels))
        let x = (0..<(channels * 500)).map { _ in rng.float() }
        let audio = try decodeWAV(try encodeWAV(x, channels: channels, sampleRate: 8_000, encoding: .int16))
        #expect(audio.channels == channels && audio.sampleRate == 8_000 && audio.samples.count == x.count)
        // Rounding to the nearest of 65536 steps costs half a step; 1e-9 covers float32's rounding of the step.
        for (a, b) in zip(audio.samples, x) { #expect(abs(a - b) <= 0.5 / 32_768 + 1e-9) }
    }

    @Test func int16RoundsAndClips() throws {
        let x: [Float] = [0, 1, -1, 1.5, -7, 0.5, 3 / 65_536, -3 / 65_536, .nan, .infinity, -.infinity]
        let bytes = try encodeWAV(x, channels: 1, sampleRate: 16_000, encoding: .int16)
        // The header is the canonical 44-byte PCM one.
        #expect(Array(bytes[0..<4]) == Array("RIFF".utf8) && bytes.count == 44 + 2 * x.count)
        let ints = (0..<x.count).map { Int16(bitPattern: UInt16(bytes[44 + 2 * $0]) | UInt16(bytes[45 + 2 * $0]) << 8) }
        // round half away from zero: 1.5 steps -> 2, -1.5 -> -2
        #expect(ints == [0, 32_767, -32_768, 32_767, -32_768, 16_384, 2, -2, 0, 32_767, -32_768])
    }

    @Test func rejectsBadArguments() {
        #expect(throws: LeapError.self) { _ = try encodeWAV([0, 0, 0], channels: 2, sampleRate: 16_000, encoding: .int16) }
        #expect(throws: LeapError.self) { _ = try encodeWAV([0], channels: 0, sampleRate: 16_000, encoding: .int16) }
        #expect(throws: LeapError.self) { _ = try encodeWAV([0], channels: 1, sampleRate: 0, encoding: .float32) }
    }

    @Test func emptyEncodesButDoesNotDecode() throws {
        let bytes = try encodeWAV([], channels: 1, sampleRate: 16_000, encoding: .float32)
        #expect(throws: LeapError.self) { _ = try decodeWAV(bytes) }
    }
}

@Suite struct FloatWAVTests {
    @Test func headerIsLEAPs44ByteFloatWAV() throws {
        let w = try encodeWAV([0.5, -0.5, 0.25, -0.25], channels: 2, sampleRate: 48000, encoding: .float32LEAP)
        #expect(w.count == 44 + 16)
        #expect(Array(w[0..<4]) == Array("RIFF".utf8) && Array(w[8..<16]) == Array("WAVEfmt ".utf8))
        #expect(w[20] == 3 && w[22] == 2)  // format tag 3 (IEEE float), 2 channels
        #expect(UInt32(w[24]) | UInt32(w[25]) << 8 | UInt32(w[26]) << 16 == 48000)
        #expect(w[34] == 32)
        let firstSample = UInt32(w[44]) | UInt32(w[45]) << 8 | UInt32(w[46]) << 16 | UInt32(w[47]) << 24
        #expect(Float(bitPattern: firstSample) == 0.5)
    }
}

@Suite struct AudioOutputTests {
    @Test func accumulatesChunksOfOneRate() throws {
        var buffer = AudioOutputBuffer()
        try buffer.append(AudioChunk(samples: [0.1, 0.2]))
        try buffer.append(AudioChunk(samples: []))
        try buffer.append(AudioChunk(samples: [0.3]))
        #expect(buffer.sampleRate == 24_000 && buffer.chunkCount == 3)
        #expect(abs(buffer.duration - 3.0 / 24_000) < 1e-12)  // a Double division: rounding only
        let finished = buffer.finishTurn()
        let turn = try #require(finished)
        #expect(turn.samples == [0.1, 0.2, 0.3] && turn.sampleRate == 24_000)
        #expect(buffer.isEmpty && buffer.sampleRate == nil)
        #expect(buffer.finishTurn() == nil)
    }

    @Test func rateMustStayConstantWithinATurn() throws {
        var buffer = AudioOutputBuffer()
        try buffer.append(AudioChunk(samples: [0.1], sampleRate: 24_000))
        #expect(throws: LeapError(.audioFormat, "audio chunk 1 has sample rate 16000 Hz, but this turn's audio is 24000 Hz")) {
            try buffer.append(AudioChunk(samples: [0.1], sampleRate: 16_000))
        }
        #expect(throws: LeapError.self) { try buffer.append(AudioChunk(samples: [.nan])) }
        #expect(throws: LeapError.self) { try buffer.append(AudioChunk(samples: [0], sampleRate: 0)) }
        // A new turn may use another rate.
        _ = buffer.finishTurn()
        try buffer.append(AudioChunk(samples: [0.1], sampleRate: 16_000))
        #expect(buffer.sampleRate == 16_000)
    }

    @Test func deliveryForwardsAndStops() throws {
        final class Received: @unchecked Sendable { var chunks: [AudioChunk] = [] }
        let received = Received()
        var delivery = AudioOutputDelivery(sink: { chunk in
            received.chunks.append(chunk)
            return received.chunks.count < 2  // ask to stop after the second chunk
        })
        #expect(try delivery.deliver(AudioChunk(samples: [0.5])))
        #expect(try delivery.deliver(AudioChunk(samples: [0.25, 0.125])) == false)
        #expect(delivery.stopRequested)
        #expect(received.chunks.map(\.samples) == [[0.5], [0.25, 0.125]])
        #expect(delivery.buffer.samples == [0.5, 0.25, 0.125])
        var silent = AudioOutputDelivery(sink: nil)
        #expect(try silent.deliver(AudioChunk(samples: [1])))
        #expect(silent.buffer.samples == [1])
    }
}

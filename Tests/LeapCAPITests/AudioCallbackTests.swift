import CLeap
import LeapAudio
import LeapCAPI
import Testing

/// The bridge from a C `leap_audio_callback` to LeapAudio's sink: samples, rate and user_data arrive
/// unchanged, and a non-zero return asks the generation to stop.
@Test func audioCallbackBridge() throws {
    final class Received {
        var chunks: [[Float]] = []
        var rates: [Int32] = []
    }
    let received = Received()
    let callback: leap_audio_callback = { samples, n, rate, user in
        guard let user else { return 1 }
        let r = Unmanaged<Received>.fromOpaque(user).takeUnretainedValue()
        r.chunks.append(Array(UnsafeBufferPointer(start: samples, count: n)))
        r.rates.append(rate)
        return r.chunks.count >= 2 ? 1 : 0
    }
    let sink = try #require(audioSink(callback, Unmanaged.passUnretained(received).toOpaque()))
    var delivery = AudioOutputDelivery(sink: sink)
    #expect(try delivery.deliver(AudioChunk(samples: [0.5, -0.5])))
    #expect(try delivery.deliver(AudioChunk(samples: [])))  // empty chunks are not forwarded
    #expect(try delivery.deliver(AudioChunk(samples: [0.25])) == false)
    #expect(received.chunks == [[0.5, -0.5], [0.25]])
    #expect(received.rates == [Int32(LEAP_AUDIO_OUTPUT_SAMPLE_RATE), Int32(LEAP_AUDIO_OUTPUT_SAMPLE_RATE)])
    #expect(delivery.stopRequested)
    let turn = delivery.buffer.finishTurn()
    #expect(turn?.samples == [0.5, -0.5, 0.25] && turn?.sampleRate == 24_000)
    #expect(audioSink(nil, nil) == nil)
}

// Audio output delivery: the chunks an audio-generating model streams out (float32 mono, usually 24 kHz),
// a sink that hands them to the caller as they come, and the accumulator that turns a turn's chunks into
// the final message's audio_pcm_f32 part.
import LeapCore

/// The rate audio models generate at.
package let modelOutputSampleRate = 24_000

/// One piece of generated audio.
package struct AudioChunk: Sendable, Equatable {
    package var samples: [Float]  // mono, in [-1, 1]
    package var sampleRate: Int

    package init(samples: [Float], sampleRate: Int = modelOutputSampleRate) {
        self.samples = samples
        self.sampleRate = sampleRate
    }
}

/// Receives each chunk as it is generated; returns false to ask the generation to stop (the C callback's
/// non-zero return).
package typealias AudioSink = (AudioChunk) -> Bool

/// Collects a turn's audio. The sample rate is fixed by the first chunk and must not change within a turn.
package struct AudioOutputBuffer: Sendable, Equatable {
    package private(set) var samples: [Float] = []
    package private(set) var sampleRate: Int?
    package private(set) var chunkCount = 0

    package init() {}

    package var isEmpty: Bool { samples.isEmpty }
    /// Seconds of audio collected.
    package var duration: Double { sampleRate.map { Double(samples.count) / Double($0) } ?? 0 }

    package mutating func append(_ chunk: AudioChunk) throws {
        guard wavSampleRateRange.contains(chunk.sampleRate) else {
            throw LeapError(.audioFormat, "audio chunk sample rate \(chunk.sampleRate) Hz is out of range (1...1000000)")
        }
        if let rate = sampleRate, rate != chunk.sampleRate {
            throw LeapError(.audioFormat,
                "audio chunk \(chunkCount) has sample rate \(chunk.sampleRate) Hz, but this turn's audio is \(rate) Hz")
        }
        if let i = chunk.samples.firstIndex(where: { !$0.isFinite }) {
            throw LeapError(.audioFormat, "audio chunk \(chunkCount) sample \(i) is not finite")
        }
        sampleRate = chunk.sampleRate
        samples.append(contentsOf: chunk.samples)
        chunkCount += 1
    }

    /// The turn's audio for the final message (nil when no audio was generated), and a fresh buffer for the
    /// next turn.
    package mutating func finishTurn() -> (samples: [Float], sampleRate: Int)? {
        defer { self = AudioOutputBuffer() }
        guard let rate = sampleRate, !samples.isEmpty else { return nil }
        return (samples, rate)
    }
}

/// Delivers generated chunks to an optional sink and accumulates them for the final message.
package struct AudioOutputDelivery {
    package var buffer = AudioOutputBuffer()
    let sink: AudioSink?
    package private(set) var stopRequested = false

    package init(sink: AudioSink?) { self.sink = sink }

    /// Hands `chunk` to the sink (if any) and keeps it. Returns false once the sink asked to stop.
    @discardableResult
    package mutating func deliver(_ chunk: AudioChunk) throws -> Bool {
        try buffer.append(chunk)
        if chunk.samples.isEmpty { return !stopRequested }
        if let sink, !sink(chunk) { stopRequested = true }
        return !stopRequested
    }
}

// SpeakingSession: the audio side of one conversation's speech turns. It owns the depthformer and code
// sampler, the detokenizer stream (conv + KV state kept across the frames of a turn) and the streaming
// ISTFT; the runtime gives it the backbone's last hidden state whenever SpeechTurn says `.audio`.
//
//   let speech = try SpeechOutputModel(vocoderPath: "vocoder-….gguf", tokenizerPath: "tokenizer-….gguf")
//   let session = try SpeakingSession(model: speech, config: SpeechConfig(systemPrompt: sys), backboneWidth: 2048)
//   session.startTurn()                                  // each assistant turn
//   let out = try session.decodeFrame(hidden: h)         // out.frame.codes, out.feedback [B], out.samples
//   let tail = session.finishTurn()                      // the turn's last 480 samples
//
// Samples are mono float at 24 kHz: 1920 per frame (80 ms), the first frame of a turn 1440 (the ISTFT's
// "same" padding drops the first 480), none for the frame that ends the audio; `finishTurn` gives the last
// 480. A turn's samples are exactly liquid-audio's LFM2AudioDetokenizer output for the turn's codes.
// The code sampler's RNG runs on across frames and turns from the seed (Liquid's runner reseeds it at
// every frame).
import LeapCore
import LeapGGUF
import LeapKernels
import LeapModels

/// The two files of LFM2.5-Audio's audio output, loaded once and shared by sessions.
package final class SpeechOutputModel: @unchecked Sendable {
    package let vocoder: VocoderWeights
    package let detokenizer: AudioDetokenizer

    package init(vocoder: VocoderWeights, detokenizer: AudioDetokenizer) {
        self.vocoder = vocoder
        self.detokenizer = detokenizer
    }

    package convenience init(vocoderPath: String, tokenizerPath: String) throws {
        let vocoder = try VocoderWeights(path: vocoderPath)
        try self.init(vocoder: vocoder, detokenizer: AudioDetokenizer(path: tokenizerPath, vocoder: vocoder))
    }
}

package struct SpeechFrameOutput: Sendable {
    package var frame: AudioFrame
    /// The backbone's next input row ([backbone width]).
    package var feedback: [Float]
    /// 24 kHz samples that became final with this frame.
    package var samples: [Float]
}

package final class SpeakingSession {
    package static let sampleRate = 24_000
    package let model: SpeechOutputModel
    package let config: SpeechConfig
    let pool: ThreadPool
    /// The frame generator and the code sampler `decodeFrame` uses (benchmarks time the parts).
    package let generator: AudioFrameGenerator
    package var sampler: AudioCodeSampler
    let detokenizer: DetokenizerStream
    var istft = StreamingISTFT()
    private var spectra: [Float]   // [6, 1282]

    /// `backboneWidth`: the text model's embedding length (checked against the vocoder). `threads`: for the
    /// depthformer and the detokenizer (nil = physical cores).
    package init(model: SpeechOutputModel, config: SpeechConfig, backboneWidth: Int, threads: Int? = nil,
                 kvCacheType: KVCacheType = .f16, contextFrames: Int = 1024) throws {
        guard model.vocoder.backboneWidth == backboneWidth else {
            throw LeapError.modelLoading(
                "the vocoder \(model.vocoder.file.path) expects a backbone of width \(model.vocoder.backboneWidth), the text model has \(backboneWidth)")
        }
        self.model = model
        self.config = config
        pool = try ThreadPool(threads: threads)
        generator = AudioFrameGenerator(vocoder: model.vocoder, pool: pool)
        sampler = AudioCodeSampler(config.audioSampling)
        detokenizer = try DetokenizerStream(detokenizer: model.detokenizer, threads: threads, kvCacheType: kvCacheType,
                                            contextFrames: contextFrames)
        spectra = [Float](repeating: 0, count: AudioDetokenizer.rowsPerFrame * StreamingISTFT.frameWidth)
    }

    /// A new turn: the detokenizer and the ISTFT forget the previous turn.
    package func startTurn() {
        detokenizer.reset()
        istft.reset()
    }

    /// Codes for the backbone hidden state `hidden`, the frame's feedback row and its samples.
    package func decodeFrame(hidden: UnsafeBufferPointer<Float>) throws -> SpeechFrameOutput {
        let frame = try generator.frame(hidden: hidden, sampler: &sampler)
        let feedback = try generator.feedbackEmbedding(frame)
        let samples = frame.isEndOfAudio ? [] : try waveform(frame)
        return SpeechFrameOutput(frame: frame, feedback: feedback, samples: samples)
    }

    /// The samples of a frame of codes (each < 2048) in this turn's waveform (tests and replays of known codes).
    package func waveform(_ frame: AudioFrame) throws -> [Float] {
        try spectra.withUnsafeMutableBufferPointer { try detokenizer.spectra(frame, into: $0) }
        var out: [Float] = []
        out.reserveCapacity(AudioDetokenizer.rowsPerFrame * StreamingISTFT.hop)
        spectra.withUnsafeBufferPointer { s in
            guard let base = s.baseAddress else { return }
            for r in 0..<AudioDetokenizer.rowsPerFrame { istft.push(base + r * StreamingISTFT.frameWidth, into: &out) }
        }
        return out
    }

    /// The turn's last samples; the next turn starts fresh.
    package func finishTurn() -> [Float] {
        var out: [Float] = []
        istft.finish(into: &out)
        detokenizer.reset()
        return out
    }
}

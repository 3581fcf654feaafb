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
// "same" padding drops the first 480); `finishTurn` gives the last 480. A frame holding code 2048 has none:
// the frame that ends the audio, and a frame whose later codebook drew 2048 (AudioFrame.hasWaveform).
//
// Such a later-codebook frame is fed back as drawn and the turn goes on (liquid-audio's generate_*); it is
// left out of the waveform, the detokenizer's state untouched, as liquid-audio's chat demo skips every
// frame holding a 2048 before decoding (its LFM2AudioDetokenizer takes codes 0..2047 only). The other
// choice, keeping 2048 out of codebooks 1-7's draws, is not what Liquid's llama.cpp runner does: it draws
// all 2049 classes in every codebook and hands such a frame to its detokenizer, whose table lookup then
// lands in the next codebook's rows (or past the table for the last one), which is no rule to copy. A
// turn's samples are exactly liquid-audio's LFM2AudioDetokenizer output for its frames that have a waveform.
//
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
        let samples = try waveform(frame)
        return SpeechFrameOutput(frame: frame, feedback: feedback, samples: samples)
    }

    /// The samples of a frame of codes in this turn's waveform (also for tests and replays of known codes).
    /// A frame holding 2048 has none and leaves the waveform's state as it was; a frame that is not 8 codes
    /// in 0...2048 is an error.
    package func waveform(_ frame: AudioFrame) throws -> [Float] {
        guard frame.codes.count == AudioCodes.codebooks, frame.codes.allSatisfy({ $0 >= 0 && $0 <= AudioCodes.endOfAudio }) else {
            throw LeapError.invalidArgument("an audio frame is \(AudioCodes.codebooks) codes in 0...2048, got \(frame.codes)")
        }
        guard frame.hasWaveform else { return [] }
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

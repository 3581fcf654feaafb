// AudioFrameGenerator: one backbone hidden state → one frame of 8 audio codes (liquid-audio's
// `_sample_audio_frame`), and a frame → the backbone's next input row.
//
//   [d_0 .. d_7] = depth_linear(h)                                  h: the backbone's final-normed hidden state
//   codebook i:  out_i = depthformer.step(d_i + E_{i-1}[code_{i-1}])  (E_{-1} term absent; positions 0..7)
//                logits_i = to_logits_i(RMS(out_i) ⊙ embedding_norm_i)   [2049]
//                code_i = sampler(logits_i)
//   code_0 == 2048 (end of audio): every code of the frame becomes 2048.
//   feedback = Σ_k audio_embedding[code_k + 2049·k]                   [B], no norm
//
// Every codebook draws from all 2049 classes, so codebooks 1-7 can draw 2048 too. Only codebook 0's 2048
// ends the audio; a later codebook's 2048 stays in the frame as drawn and is fed back through its own
// feedback row (2048 + 2049·k), as liquid-audio's generate_* and Liquid's runner do: neither masks it.
// The detokenizer has no row for it, so such a frame has no waveform (AudioFrame.hasWaveform).
import CLeapKernels
import LeapCore
import LeapKernels

/// The codes of one generated frame.
package struct AudioFrame: Sendable, Equatable {
    package var codes: [Int32]   // [8], each in 0...2048
    /// The frame ends the audio (code 0 was 2048); it has no samples.
    package var isEndOfAudio: Bool { codes.first == AudioCodes.endOfAudio }
    /// No code is 2048, the one class the detokenizer's table has no row for. False for the frame that ends
    /// the audio and for a frame whose later codebook drew 2048: that frame is left out of the waveform, as
    /// liquid-audio's chat demo leaves out every frame holding a 2048 (its detokenizer takes 0..2047 only).
    package var hasWaveform: Bool { !codes.contains(AudioCodes.endOfAudio) }

    package init(codes: [Int32]) { self.codes = codes }
}

package final class AudioFrameGenerator {
    package let vocoder: VocoderWeights
    let pool: ThreadPool
    let depthformer: Depthformer
    private let inputs: UnsafeMutablePointer<Float>   // [8, D] depth_linear output
    private let x: UnsafeMutablePointer<Float>        // [D]
    private let normed: UnsafeMutablePointer<Float>   // [D]
    private let row: UnsafeMutablePointer<Float>      // [max(D, B)] an embedding row
    private let logits: UnsafeMutablePointer<Float>   // [2049]

    package init(vocoder: VocoderWeights, pool: ThreadPool) {
        self.vocoder = vocoder
        self.pool = pool
        depthformer = Depthformer(weights: vocoder.depthformer, pool: pool)
        let D = vocoder.depthformerWidth
        inputs = .allocate(capacity: AudioCodes.codebooks * D)
        x = .allocate(capacity: D)
        normed = .allocate(capacity: D)
        row = .allocate(capacity: max(D, vocoder.backboneWidth))
        logits = .allocate(capacity: AudioCodes.classes)
    }

    deinit {
        for p in [inputs, x, normed, row, logits] { p.deallocate() }
    }

    /// The frame for backbone hidden state `hidden` ([B]). `logitsOut`, when given, receives each codebook's
    /// logits as they were sampled from ([8 × 2049]; tests and diagnostics).
    package func frame(hidden: UnsafeBufferPointer<Float>, sampler: inout AudioCodeSampler,
                       logitsOut: UnsafeMutableBufferPointer<Float>? = nil) throws -> AudioFrame {
        let B = vocoder.backboneWidth, D = vocoder.depthformerWidth, K = AudioCodes.classes
        guard hidden.count == B, let h = hidden.baseAddress else {
            throw LeapError.invalidArgument("hidden state of \(hidden.count) values, the vocoder expects the backbone width \(B)")
        }
        if let i = hidden.firstIndex(where: { !$0.isFinite }) {
            throw LeapError.invalidArgument("hidden state value \(i) is not finite")
        }
        if let out = logitsOut, out.count < AudioCodes.codebooks * K {
            throw LeapError.invalidArgument("logits buffer of \(out.count) floats, need \(AudioCodes.codebooks * K)")
        }
        vocoder.depthLinear(h, rows: 1, into: inputs, pool: pool)
        depthformer.reset()
        var codes: [Int32] = []
        codes.reserveCapacity(AudioCodes.codebooks)
        for (i, head) in vocoder.codebooks.enumerated() {
            x.update(from: inputs + i * D, count: D)
            if let previous = codes.last {
                let prev = vocoder.codebooks[i - 1].embedding
                lk_dequantize_row(Int32(prev.type.rawValue), prev.row(Int(previous)), row, Int64(D))
                lk_add(x, row, x, Int64(D))
            }
            try depthformer.step(x, into: x)
            head.norm.withUnsafeBufferPointer { lk_rms_norm(x, $0.baseAddress, normed, Int64(D), DepthformerWeights.rmsEps) }
            Kernels.matvec(head.toLogits, x: normed, y: logits, pool: pool)
            if let out = logitsOut?.baseAddress { (out + i * K).update(from: logits, count: K) }
            let code = try sampler.sample(UnsafeBufferPointer(start: logits, count: K))
            codes.append(code)
        }
        if codes[0] == AudioCodes.endOfAudio {
            codes = [Int32](repeating: AudioCodes.endOfAudio, count: AudioCodes.codebooks)
        }
        return AudioFrame(codes: codes)
    }

    /// The backbone input row of `frame` ([B]): Σ_k audio_embedding[code_k + 2049·k].
    package func feedbackEmbedding(_ frame: AudioFrame, into out: UnsafeMutableBufferPointer<Float>) throws {
        let B = vocoder.backboneWidth
        guard frame.codes.count == AudioCodes.codebooks else {
            throw LeapError.invalidArgument("an audio frame has \(AudioCodes.codebooks) codes, got \(frame.codes.count)")
        }
        guard out.count == B, let o = out.baseAddress else {
            throw LeapError.invalidArgument("feedback row buffer of \(out.count) floats, the backbone width is \(B)")
        }
        let table = vocoder.feedback
        for i in 0..<B { o[i] = 0 }
        for (k, code) in frame.codes.enumerated() {
            guard code >= 0, code < AudioCodes.classes else {
                throw LeapError.invalidArgument("audio code \(code) of codebook \(k) is out of range 0...2048")
            }
            lk_dequantize_row(Int32(table.type.rawValue), table.row(Int(code) + AudioCodes.classes * k), row, Int64(B))
            lk_add(o, row, o, Int64(B))
        }
    }

    package func feedbackEmbedding(_ frame: AudioFrame) throws -> [Float] {
        var out = [Float](repeating: 0, count: vocoder.backboneWidth)
        try out.withUnsafeMutableBufferPointer { try feedbackEmbedding(frame, into: $0) }
        return out
    }
}

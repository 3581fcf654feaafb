// AudioDetokenizer: LFM2.5-Audio's codes → spectra model. The backbone is the `tokenizer-*.gguf` file, an
// LFM2 model (LeapModels) with sliding-window attention (window 30) and a dense `dense_2` head of 1282
// outputs; its input rows come from the vocoder file's `emb.emb` table:
//
//   frame codes c_0..c_7 (each < 2048) → e = mean_k emb[c_k + 2048·k]          [W]
//   6 rows e, e, e, e, e, e (nearest ×6 upsample, 12.5 → 75 Hz) → LFM2 → 6 × [641 log|X| ‖ 641 arg X]
//
// A stream (one per speaking session) keeps the model's conv and KV state across the frames of a turn in one
// InferenceContext; `reset` starts a new turn. When the context fills up, the stream restarts it from the
// last frames that can still influence the next output (the receptive field: (window - 1) per attention
// layer plus (L - 1) per conv layer): equal to an unbounded context up to float rounding (RoPE is relative).
import CLeapKernels
import LeapCore
import LeapGGUF
import LeapKernels
import LeapModels

package final class AudioDetokenizer: @unchecked Sendable {
    package static let rowsPerFrame = 6
    package let model: LanguageModel
    let codeEmbedding: WeightMatrix   // [8*2048, W]

    /// `model`: the tokenizer-*.gguf model; `vocoder`: the matching vocoder file (its `emb.emb` table).
    package init(model: LanguageModel, vocoder: VocoderWeights) throws {
        let cfg = model.config
        guard cfg.architecture == .lfm2, cfg.denseOutputWidth == StreamingISTFT.frameWidth else {
            throw LeapError.modelLoading(
                "\(model.file.path) is not an LFM2.5-Audio detokenizer: expected an lfm2 model with a dense_2 head of \(StreamingISTFT.frameWidth) outputs (architecture \(cfg.architecture.rawValue), outputs \(cfg.outputWidth))")
        }
        guard vocoder.detokenizerWidth == cfg.nEmbd else {
            throw LeapError.modelLoading(
                "the vocoder's emb.emb rows have \(vocoder.detokenizerWidth) values but the detokenizer \(model.file.path) has width \(cfg.nEmbd)")
        }
        self.model = model
        codeEmbedding = vocoder.codeEmbedding
    }

    package convenience init(path: String, vocoder: VocoderWeights, threads: Int? = nil) throws {
        try self.init(model: LanguageModel.load(path: path, threads: threads), vocoder: vocoder)
    }

    /// Positions before the next one that can change its output.
    var receptiveField: Int {
        let cfg = model.config
        var n = 1
        for kind in cfg.layerKinds {
            n += kind == .attention ? cfg.slidingWindow - 1 : cfg.convLCache - 1
        }
        return n
    }

    /// e = mean_k emb[c_k + 2048·k] into `row` ([W]).
    func frameRow(_ frame: AudioFrame, into row: UnsafeMutablePointer<Float>, scratch: UnsafeMutablePointer<Float>) throws {
        let W = codeEmbedding.cols
        guard frame.codes.count == AudioCodes.codebooks else {
            throw LeapError.invalidArgument("an audio frame has \(AudioCodes.codebooks) codes, got \(frame.codes.count)")
        }
        for i in 0..<W { row[i] = 0 }
        for (k, code) in frame.codes.enumerated() {
            guard code >= 0, code < AudioCodes.detokenizerClasses else {
                throw LeapError.invalidArgument("audio code \(code) of codebook \(k) has no waveform (codes 0..<2048; 2048 ends the audio)")
            }
            lk_dequantize_row(Int32(codeEmbedding.type.rawValue), codeEmbedding.row(Int(code) + AudioCodes.detokenizerClasses * k), scratch, Int64(W))
            lk_add(row, scratch, row, Int64(W))
        }
        lk_scale(row, 1 / Float(AudioCodes.codebooks), row, Int64(W))
    }
}

/// One turn's detokenizer state.
package final class DetokenizerStream {
    package let detokenizer: AudioDetokenizer
    package let context: InferenceContext
    private let replayFrames: Int
    private var history: [Float] = []                // [frames kept, W] the last `replayFrames` frame rows
    private let rows: UnsafeMutablePointer<Float>     // [6, W]
    private let scratch: UnsafeMutablePointer<Float>  // [W]

    /// `contextFrames`: frames the KV cache holds before the stream restarts it (>= the receptive field + 1).
    package init(detokenizer: AudioDetokenizer, threads: Int? = nil, kvCacheType: KVCacheType = .f16, contextFrames: Int = 1024) throws {
        let R = AudioDetokenizer.rowsPerFrame
        let cfg = detokenizer.model.config
        let slidingOnly = cfg.slidingWindow > 0
        replayFrames = slidingOnly ? (detokenizer.receptiveField + R - 1) / R : 0
        guard contextFrames > replayFrames, contextFrames <= (1 << 22) / R else {
            throw LeapError.invalidArgument("detokenizer context of \(contextFrames) frames is out of range \(replayFrames + 1)...\((1 << 22) / R)")
        }
        var options = ContextOptions(contextSize: contextFrames * R, kvCacheType: kvCacheType, threads: threads)
        options.maxBatch = R
        context = try detokenizer.model.makeContext(options)
        self.detokenizer = detokenizer
        let W = cfg.nEmbd
        rows = .allocate(capacity: R * W)
        scratch = .allocate(capacity: W)
    }

    deinit {
        rows.deallocate()
        scratch.deallocate()
    }

    /// A new turn: no state.
    package func reset() {
        context.reset()
        history.removeAll(keepingCapacity: true)
    }

    /// The 6 spectra of `frame` ([6, 1282] into `out`).
    package func spectra(_ frame: AudioFrame, into out: UnsafeMutableBufferPointer<Float>) throws {
        let R = AudioDetokenizer.rowsPerFrame, W = detokenizer.model.config.nEmbd, V = StreamingISTFT.frameWidth
        guard out.count >= R * V, let o = out.baseAddress else {
            throw LeapError.invalidArgument("spectra buffer of \(out.count) floats, need \(R * V)")
        }
        try detokenizer.frameRow(frame, into: rows, scratch: scratch)
        for r in 1..<R { (rows + r * W).update(from: rows, count: W) }
        if context.nPast + R > context.contextSize { try restartContext() }
        try context.eval(embeddings: UnsafeBufferPointer(start: rows, count: R * W), wantAllLogits: true)
        for r in 0..<R {
            let s = try context.logits(at: r)
            guard let base = s.baseAddress else { continue }
            (o + r * V).update(from: base, count: V)
        }
        if replayFrames > 0 {
            history.append(contentsOf: UnsafeBufferPointer(start: rows, count: W))
            if history.count > 2 * replayFrames * W { history.removeFirst(history.count - replayFrames * W) }
        }
    }

    /// Re-evaluates the last `replayFrames` frames in an empty context.
    private func restartContext() throws {
        let R = AudioDetokenizer.rowsPerFrame, W = detokenizer.model.config.nEmbd
        guard replayFrames > 0 else {
            throw LeapError(.promptExceedsContext,
                "the detokenizer's context of \(context.contextSize) positions is full and its attention is not windowed")
        }
        let keep = Array(history.suffix(replayFrames * W))
        context.reset()
        var replay: [Float] = []
        replay.reserveCapacity(keep.count * R)
        for f in 0..<(keep.count / W) {
            for _ in 0..<R { replay.append(contentsOf: keep[(f * W)..<((f + 1) * W)]) }
        }
        if !replay.isEmpty { try replay.withUnsafeBufferPointer { try context.eval(embeddings: $0, outputHead: false) } }
    }
}

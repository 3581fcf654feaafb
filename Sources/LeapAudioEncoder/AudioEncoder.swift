// AudioEncoder: LFM2-Audio's audio encoder from an lfm2a mmproj GGUF: 16 kHz mono samples → NeMo log-mel →
// FastConformer (dw-striding 8x subsampling, relative-position macaron layers) → adapter → one embedding
// row per 80 ms for the text model's input (spliced in right after `<|im_start|>user\n`).
import LeapCore
import LeapGGUF
import LeapKernels

package struct AudioEncoder: @unchecked Sendable {
    /// The rate `encode` takes.
    package static let sampleRate = MelSpectrogram.sampleRate

    let config: AudioEncoderConfig
    let melSpectrogram: MelSpectrogram
    let subsampling: ConvSubsampling
    let layers: [ConformerLayer]
    let adapter: AudioAdapter
    let file: GGUFFile  // keeps the mmapped weights alive

    /// The arithmetic it follows (llama.cpp's unless asked otherwise).
    package var numerics: AudioEncoderNumerics {
        AudioEncoderNumerics(firstConvolutionInF16: subsampling.inputF16)
    }

    /// Size of each embedding row (clip.audio.projection_dim: the text model's hidden size).
    package var outputDim: Int { config.outputDim }

    /// Binds every tensor of an lfm2a mmproj with its shape checked; weights stay in the mmap.
    package static func load(file: GGUFFile, numerics: AudioEncoderNumerics = .llamaCpp) throws -> AudioEncoder {
        let c = try AudioEncoderConfig.read(file)
        let b = TensorBinder(file: file)
        return AudioEncoder(
            config: c, melSpectrogram: MelSpectrogram(melCount: c.melBins),
            subsampling: try ConvSubsampling(b, config: c, numerics: numerics),
            layers: try (0..<c.layerCount).map { try ConformerLayer(b, layer: $0, config: c) },
            adapter: try AudioAdapter(b, config: c), file: file)
    }

    /// Embedding rows `encode` returns for `sampleCount` samples at 16 kHz (ceil(frames / 8) of the
    /// sampleCount / 160 + 1 log-mel frames); 0 when the clip is too short to encode (under 320 samples).
    package func embeddingCount(sampleCount: Int) -> Int {
        guard sampleCount / MelSpectrogram.hop >= 2 else { return 0 }
        return ConvSubsampling.outputFrames(MelSpectrogram.frameCount(sampleCount: sampleCount))
    }

    /// The normalised log-mel features the encoder reads: [frames, mel bins], time-major.
    package func melFeatures(_ samples: [Float]) throws -> (frames: Int, values: [Float]) {
        try samples.withUnsafeBufferPointer { try melSpectrogram.compute($0, pool: nil) }
    }

    /// Bytes of working memory `encode` allocates for `sampleCount` samples on `threads` threads (linear in
    /// the length; see EncoderWorkspace), not counting the log-mel and the returned rows.
    package func workspaceByteCount(sampleCount: Int, threads: Int) -> Int {
        let n = embeddingCount(sampleCount: sampleCount)
        let c = config
        return n == 0 ? 0 : EncoderWorkspace.byteCount(frames: n, modelDim: c.modelDim, wideDim: wideDim,
                                                        threads: threads, subsamplingFloats: subsampling.scratchFloats)
    }

    /// Embeddings of 16 kHz mono samples: [embeddingCount(sampleCount:), outputDim] rows. Allocates its
    /// working memory per call (so calls on different pools may run at once; one pool serves one call at a
    /// time). Throws for fewer than 320 samples, non-finite samples and samples loud enough to overflow.
    package func encode(samples: UnsafeBufferPointer<Float>, pool: ThreadPool) throws -> [Float] {
        guard !samples.isEmpty else {
            throw LeapError(.invalidArgument, "audio is empty: the encoder needs at least 320 samples (20 ms at 16 kHz)")
        }
        let mel = try melSpectrogram.compute(samples, pool: pool)
        let n = ConvSubsampling.outputFrames(mel.frames)
        let ws = try EncoderWorkspace(frames: n, modelDim: config.modelDim, wideDim: wideDim, threads: pool.threadCount,
                                  subsamplingFloats: subsampling.scratchFloats)
        defer { ws.deallocate() }
        var out = [Float](repeating: 0, count: n * config.outputDim)
        mel.values.withUnsafeBufferPointer { m in
            guard let mp = m.baseAddress else { return }
            subsampling(mel: mp, frames: mel.frames, into: ws.x, scratch: ws.subsampling, pool: pool)
        }
        RelativePositionTable.fill(frames: n, modelDim: config.modelDim, into: ws.positions)
        for layer in layers { layer(ws, pool: pool) }
        out.withUnsafeMutableBufferPointer { o in
            guard let op = o.baseAddress else { return }
            adapter(ws, into: op, pool: pool)
        }
        return out
    }

    /// Columns of the shared wide buffer: FFN hidden, pointwise-1 output (2d) or adapter hidden.
    private var wideDim: Int { max(config.ffnHidden, 2 * config.modelDim, config.adapterHidden) }
}

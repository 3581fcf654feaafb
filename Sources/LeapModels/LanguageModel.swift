// LanguageModel: an immutable loaded model (config + weights: in the mmapped GGUF, or packed copies where the
// kernels read another layout faster, see PackedMatrices). Shareable between
// threads; all mutable state lives in InferenceContext (one per thread / conversation).
import LeapCore
import LeapGGUF
import LeapKernels

package struct ContextOptions: Sendable {
    /// Positions the KV cache holds; nil = min(n_ctx_train, 4096).
    package var contextSize: Int?
    package var kvCacheType: KVCacheType = .f16
    /// Worker threads including the caller; nil = the model's default (physical cores).
    package var threads: Int?
    /// Tokens per forward pass when a long prompt is split (bounds the scratch memory). 512 = llama.cpp's
    /// default ubatch: on the AVX2 / AVX-512 paths results depend on the batch as in llama.cpp (Q4_K in groups
    /// of 4 tokens, Q6_K / Q4_K tiled from 8, attention's one-token order), so splitting where it splits keeps
    /// long prompts llama.cpp's bit for bit. Scratch pages are touched only by batches that long.
    package var maxBatch: Int = 512
    /// Keys per attention tile (a multiple of 16, clamped to 16...65536). A query that sees at most this many
    /// keys takes llama.cpp's one-pass softmax (bit for bit); one that sees more runs over tiles of this many
    /// keys with an online softmax, so that the attention scratch stays threads x 32 x tile floats however
    /// long the context is.
    package var attentionTile: Int = 4096 {
        didSet { attentionTile = max(16, min(65536, attentionTile / 16 * 16)) }
    }

    package init(contextSize: Int? = nil, kvCacheType: KVCacheType = .f16, threads: Int? = nil) {
        self.contextSize = contextSize
        self.kvCacheType = kvCacheType
        self.threads = threads
    }
}

package final class LanguageModel: @unchecked Sendable {
    package let file: GGUFFile
    package let config: ModelConfig
    let weights: ModelWeights
    /// Copies of the weights in the kernels' faster layouts (`ModelWeights.pack`).
    package let packed: PackedMatrices
    /// Default worker thread count for new contexts.
    package let threads: Int
    /// Steps the contexts of this model that decode at the same moment in one forward pass.
    package let batcher = DecodeBatcher()

    private init(file: GGUFFile, config: ModelConfig, weights: ModelWeights, threads: Int) {
        self.file = file
        self.config = config
        let packed = PackedMatrices()
        var weights = weights
        weights.pack(into: packed, releasing: file, pool: try? ThreadPool.shared(threads: threads))
        self.packed = packed
        self.weights = weights
        self.threads = threads
    }

    /// Selects the architecture from `general.architecture`; errors name the missing key or tensor.
    package static func load(file: GGUFFile, threads: Int? = nil) throws -> LanguageModel {
        guard let arch = try file.optionalString("general.architecture") else {
            throw LeapError.modelLoading("missing GGUF key 'general.architecture' in \(file.path)")
        }
        let loaded: (ModelConfig, ModelWeights)
        switch Architecture(rawValue: arch) {
        case .lfm2: loaded = try LFM2.load(file)
        case .llama: loaded = try Llama.load(file)
        case .gemma3: loaded = try Gemma3.load(file)
        case .qwen2: loaded = try Qwen2.load(file)
        case .qwen3: loaded = try Qwen3.load(file)
        case .lfm2moe: loaded = try LFM2MoE.load(file)
        case nil:
            let known = Architecture.allCases.map(\.rawValue).joined(separator: ", ")
            throw LeapError.unsupported("unsupported model architecture '\(arch)' in \(file.path) (supported: \(known))")
        }
        if let t = threads, t < 1 { throw LeapError.invalidArgument("threads must be >= 1, got \(t)") }
        return LanguageModel(file: file, config: loaded.0, weights: loaded.1, threads: threads ?? ThreadPool.physicalCores)
    }

    package static func load(path: String, threads: Int? = nil) throws -> LanguageModel {
        try load(file: GGUFFile(path: path), threads: threads)
    }

    package func makeContext(_ options: ContextOptions = ContextOptions()) throws -> InferenceContext {
        try InferenceContext(model: self, options: options)
    }

    package func makeContext(contextSize: Int?) throws -> InferenceContext {
        try makeContext(ContextOptions(contextSize: contextSize))
    }

    /// The embedding row token `id` enters the first layer with, before any architecture scale ([nEmbd]):
    /// given to `InferenceContext.eval(embeddings:)` it stands for the token (Gemma aside, which scales tokens).
    package func tokenEmbedding(_ id: Int32) throws -> [Float] {
        var row = [Float](repeating: 0, count: config.nEmbd)
        try row.withUnsafeMutableBufferPointer { b in
            guard let p = b.baseAddress else { return }
            try Kernels.dequantizeRow(weights.tokenEmbedding, row: Int(id), into: p)
        }
        return row
    }

    /// Bytes of weights read per decoded token (every matrix once, plus one embedding row).
    package var weightBytesPerToken: Int {
        var n = weights.output.byteCount + weights.tokenEmbedding.rowBytes
        for l in weights.layers {
            switch l.ffn {
            case .dense(let f): n += f.gate.byteCount + f.up.byteCount + f.down.byteCount
            case .moe(let m): n += m.bytesPerToken
            }
            switch l.mixer {
            case .attention(let a): n += a.q.byteCount + a.k.byteCount + a.v.byteCount + a.output.byteCount
            case .shortConv(let c): n += c.inProj.byteCount + c.outProj.byteCount
            }
        }
        return n
    }
}

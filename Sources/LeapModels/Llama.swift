// llama (SmolLM2, Llama 2/3.x style): pre-norm GQA attention + SwiGLU FFN. The GGUF converter permutes the
// Q/K rows per head so that RoPE works on adjacent pairs: use NORM RoPE on GGUF weights.
// Llama 3.1/3.2 files carry `rope_freqs.weight` ([n_rot/2] F32, computed by the converter from the HF
// "llama3" rope_scaling): rotary frequency i is divided by factor i; there are no rope.scaling.* keys.
// The plain-GQA hyper-parameters and layer loop here are shared with Qwen2 and Qwen3.
import LeapCore
import LeapGGUF
import LeapKernels

enum Llama {
    static func load(_ file: GGUFFile) throws -> (ModelConfig, ModelWeights) {
        var cfg = try plainGQAConfig(file, .llama, ropeNeox: false, defaultEps: 1e-5, defaultContext: 4096)
        let b = TensorBinder(file: file)
        var weights = try plainGQAWeights(b, cfg: &cfg, qkNorm: false, qkvBias: .ifPresent)
        weights.ropeFreqFactors = try b.optionalVector("rope_freqs.weight", cfg.nRot / 2)
        if let ff = weights.ropeFreqFactors, let bad = ff.first(where: { !($0.isFinite && $0 > 0) }) {
            throw LeapError.modelLoading("rope_freqs.weight contains \(bad); frequency factors must be positive in \(file.path)")
        }
        return (cfg, weights)
    }
}

/// The layer count and attention / FFN sizes every GQA decoder reads the same way from `<arch>.*` keys.
struct GQAShape {
    var nLayer: Int, nEmbd: Int, nHead: Int
    var nHeadKV: [Int]  // [nLayer]
    var nFF: [Int]      // [nLayer]
    var headDim: Int
}

func gqaShape(_ keys: ArchKeys, _ name: String, _ file: GGUFFile) throws -> GQAShape {
    let nLayer = try keys.positive("block_count", keys.required("block_count"), max: 4096)
    let nEmbd = try keys.positive("embedding_length", keys.required("embedding_length"))
    let nHead = try keys.positive("attention.head_count", keys.required("attention.head_count"), max: 4096)
    let nHeadKV = try keys.perLayer("attention.head_count_kv", nLayer) ?? [Int](repeating: nHead, count: nLayer)
    guard let nFF = try keys.perLayer("feed_forward_length", nLayer) else {
        throw LeapError.modelLoading("missing GGUF key '\(name).feed_forward_length' in \(file.path)")
    }
    for (i, kv) in nHeadKV.enumerated() where kv <= 0 || kv > nHead || nHead % kv != 0 {
        throw LeapError.modelLoading("\(name).attention.head_count_kv[\(i)] = \(kv) must divide head_count \(nHead)")
    }
    let headDim = try keys.optional("attention.key_length") ?? (nEmbd / nHead)
    if let vl = try keys.optional("attention.value_length"), vl != headDim {
        throw LeapError.unsupported("\(name): attention.value_length \(vl) != key_length \(headDim) in \(file.path)")
    }
    guard headDim > 0, headDim <= 4096 else {
        throw LeapError.modelLoading("\(name): invalid head dim \(headDim) in \(file.path)")
    }
    return GQAShape(nLayer: nLayer, nEmbd: nEmbd, nHead: nHead, nHeadKV: nHeadKV, nFF: nFF, headDim: headDim)
}

/// Hyper-parameters of a plain GQA decoder (llama, qwen2, qwen3) from its `<arch>.*` keys.
func plainGQAConfig(_ file: GGUFFile, _ arch: Architecture, ropeNeox: Bool, defaultEps: Float, defaultContext: Int) throws -> ModelConfig {
    let name = arch.rawValue
    let keys = ArchKeys(file: file, prefix: name + ".")
    let shape = try gqaShape(keys, name, file)
    let (nLayer, nEmbd, nHead, nHeadKV, nFF, headDim) =
        (shape.nLayer, shape.nEmbd, shape.nHead, shape.nHeadKV, shape.nFF, shape.headDim)
    let nRot = try keys.optional("rope.dimension_count") ?? headDim
    guard nRot > 0, nRot <= headDim, nRot % 2 == 0 else {
        throw LeapError.modelLoading("\(name): rope.dimension_count \(nRot) must be even and <= head dim \(headDim)")
    }
    let kinds = [LayerKind](repeating: .attention, count: nLayer)
    let nCtxTrain = try keys.optional("context_length") ?? defaultContext
    let ropeBase = try keys.float("rope.freq_base") ?? 10000
    let (freqScale, yarn) = try keys.ropeScaling(nRot: nRot, base: ropeBase, nCtxTrain: nCtxTrain)
    var cfg = ModelConfig(
        architecture: arch, name: try file.optionalString("general.name") ?? name,
        nLayer: nLayer, nEmbd: nEmbd, nVocab: 0, nCtxTrain: nCtxTrain,
        nFF: nFF, nHead: nHead, nHeadKV: nHeadKV, headDim: headDim, layerKinds: kinds,
        rmsEps: try keys.float("attention.layer_norm_rms_epsilon") ?? defaultEps,
        ropeBase: ropeBase, ropeFreqScale: freqScale, ropeBaseSWA: 10000,
        nRot: nRot, ropeNeox: ropeNeox, slidingWindow: 0, isSlidingLayer: [Bool](repeating: false, count: nLayer),
        embedScale: nil, queryScale: 1 / Float(headDim).squareRoot(), queryPreScaled: false,
        activation: .silu, convLCache: 0, finalLogitSoftcap: nil,
        chatTemplate: try file.optionalString("tokenizer.chat_template"))
    cfg.ropeYaRN = yarn
    return cfg
}

/// Embedding, every attention + SwiGLU layer, final norm and (tied or separate) output of a plain GQA decoder.
func plainGQAWeights(_ b: TensorBinder, cfg: inout ModelConfig, qkNorm: Bool, qkvBias: BiasPolicy) throws -> ModelWeights {
    let (embd, norm, output) = try embeddingAndOutput(b, cfg: &cfg, outputNorm: "output_norm.weight")
    if b.has("output.bias") {
        throw LeapError.unsupported("tensor 'output.bias' (output projection bias) is not supported in \(b.file.path)")
    }
    var layers: [LayerWeights] = []
    for i in 0..<cfg.nLayer {
        let p = "blk.\(i)."
        let mixer = try standardAttention(b, prefix: p, cfg: cfg, layer: i, kvSlot: i, qkNorm: qkNorm, qkvBias: qkvBias)
        layers.append(try standardLayer(b, prefix: p, nEmbd: cfg.nEmbd, nFF: cfg.nFF[i], mixer: mixer, postNorms: false))
    }
    return ModelWeights(tokenEmbedding: embd, outputNorm: norm, output: output, layers: layers)
}

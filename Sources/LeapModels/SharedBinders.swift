// The binders the architectures share: the sizes and hyper-parameters of a plain GQA decoder (llama, Qwen2,
// Qwen3; Gemma 3 reads its sizes the same way), the embedding and output, and each layer's norms,
// attention and gated FFN. An architecture's own file holds only what sets it apart.
import LeapCore
import LeapGGUF
import LeapKernels

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

/// Pre-norms and the gated FFN shared by every supported architecture.
func standardLayer(_ b: TensorBinder, prefix p: String, nEmbd: Int, nFF: Int, mixer: MixerWeights, postNorms: Bool) throws -> LayerWeights {
    try layerWeights(b, prefix: p, nEmbd: nEmbd, mixer: mixer, ffn: .dense(try denseFFN(b, prefix: p, nEmbd: nEmbd, nFF: nFF)), postNorms: postNorms)
}

/// A layer's norms around the given mixer and FFN.
func layerWeights(_ b: TensorBinder, prefix p: String, nEmbd: Int, mixer: MixerWeights, ffn: FFNWeights, postNorms: Bool) throws -> LayerWeights {
    LayerWeights(
        attnNorm: try b.vector(p + "attn_norm.weight", nEmbd),
        mixer: mixer,
        postAttnNorm: postNorms ? try b.vector(p + "post_attention_norm.weight", nEmbd) : nil,
        ffnNorm: try b.vector(p + "ffn_norm.weight", nEmbd),
        ffn: ffn,
        postFFNNorm: postNorms ? try b.vector(p + "post_ffw_norm.weight", nEmbd) : nil)
}

/// The gated FFN `ffn_gate` / `ffn_up` / `ffn_down` of a layer.
func denseFFN(_ b: TensorBinder, prefix p: String, nEmbd: Int, nFF: Int) throws -> DenseFFNWeights {
    guard nFF > 0 else { throw LeapError.modelLoading("\(p)feed_forward_length must be positive") }
    return DenseFFNWeights(
        gate: try b.matrix(p + "ffn_gate.weight", rows: nFF, cols: nEmbd),
        up: try b.matrix(p + "ffn_up.weight", rows: nFF, cols: nEmbd),
        down: try b.matrix(p + "ffn_down.weight", rows: nEmbd, cols: nFF))
}

/// Q/K/V biases of an attention layer: Qwen2 always has them; llama.cpp also applies them when a llama
/// or Gemma file happens to carry them.
enum BiasPolicy {
    case required
    case ifPresent
}

/// Attention weights of a plain GQA layer (llama, Qwen2/3, Gemma 3).
func standardAttention(_ b: TensorBinder, prefix p: String, cfg: ModelConfig, layer i: Int, kvSlot: Int, qkNorm: Bool,
                       qkvBias: BiasPolicy = .ifPresent) throws -> MixerWeights {
    let hd = cfg.headDim
    let qDim = cfg.nHead * hd, kvDim = cfg.nHeadKV[i] * hd
    func bias(_ name: String, _ n: Int) throws -> [Float]? {
        qkvBias == .required ? try b.vector(p + name, n) : try b.optionalVector(p + name, n)
    }
    if b.has(p + "attn_output.bias") {
        throw LeapError.unsupported("tensor '\(p)attn_output.bias' (attention output bias) is not supported in \(b.file.path)")
    }
    return .attention(AttentionWeights(
        q: try b.matrix(p + "attn_q.weight", rows: qDim, cols: cfg.nEmbd),
        k: try b.matrix(p + "attn_k.weight", rows: kvDim, cols: cfg.nEmbd),
        v: try b.matrix(p + "attn_v.weight", rows: kvDim, cols: cfg.nEmbd),
        output: try b.matrix(p + "attn_output.weight", rows: cfg.nEmbd, cols: qDim),
        qNorm: qkNorm ? try b.vector(p + "attn_q_norm.weight", hd) : nil,
        kNorm: qkNorm ? try b.vector(p + "attn_k_norm.weight", hd) : nil,
        qBias: try bias("attn_q.bias", qDim),
        kBias: try bias("attn_k.bias", kvDim),
        vBias: try bias("attn_v.bias", kvDim),
        nHeadKV: cfg.nHeadKV[i], kvSlot: kvSlot))
}

/// Embedding, final norm and (tied or separate) output projection.
func embeddingAndOutput(_ b: TensorBinder, cfg: inout ModelConfig, outputNorm: String) throws -> (WeightMatrix, [Float], WeightMatrix) {
    let e = try b.info("token_embd.weight")
    guard e.ne.count >= 2, e.ne[0] == cfg.nEmbd, e.ne[1] > 0 else {
        throw LeapError.modelLoading("tensor 'token_embd.weight' has shape \(e.ne), expected [\(cfg.nEmbd), n_vocab]")
    }
    cfg.nVocab = e.ne[1]
    let embd = try b.matrix("token_embd.weight", rows: cfg.nVocab, cols: cfg.nEmbd)
    let norm = try b.vector(outputNorm, cfg.nEmbd)
    let output = b.has("output.weight") ? try b.matrix("output.weight", rows: cfg.nVocab, cols: cfg.nEmbd) : embd
    return (embd, norm, output)
}

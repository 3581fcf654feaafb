// llama (SmolLM2, Llama 2/3 style): pre-norm GQA attention + SwiGLU FFN. The GGUF converter permutes the
// Q/K rows per head so that RoPE works on adjacent pairs: use NORM RoPE on GGUF weights.
import LeapCore
import LeapGGUF

enum Llama {
    static func load(_ file: GGUFFile) throws -> (ModelConfig, ModelWeights) {
        let keys = ArchKeys(file: file, prefix: "llama.")
        let nLayer = try keys.positive("block_count", keys.required("block_count"), max: 4096)
        let nEmbd = try keys.positive("embedding_length", keys.required("embedding_length"))
        let nHead = try keys.positive("attention.head_count", keys.required("attention.head_count"), max: 4096)
        let nHeadKV = try keys.perLayer("attention.head_count_kv", nLayer) ?? [Int](repeating: nHead, count: nLayer)
        guard let nFF = try keys.perLayer("feed_forward_length", nLayer) else {
            throw LeapError.modelLoading("missing GGUF key 'llama.feed_forward_length' in \(file.path)")
        }
        let headDim = try keys.optional("attention.key_length") ?? (nEmbd / nHead)
        for (i, kv) in nHeadKV.enumerated() where kv <= 0 || kv > nHead || nHead % kv != 0 {
            throw LeapError.modelLoading("llama.attention.head_count_kv[\(i)] = \(kv) must divide head_count \(nHead)")
        }
        let nRot = try keys.optional("rope.dimension_count") ?? headDim
        guard headDim > 0, nRot > 0, nRot <= headDim, nRot % 2 == 0 else {
            throw LeapError.modelLoading("llama: rope.dimension_count \(nRot) must be even and <= head dim \(headDim)")
        }
        if file.tensor(named: "rope_freqs.weight") != nil {
            throw LeapError.unsupported("llama: Llama 3 RoPE frequency factors (rope_freqs.weight) are not supported yet")
        }
        var scale: Float = 1
        if let t = try file.optionalString("llama.rope.scaling.type"), t == "linear", let f = try keys.float("rope.scaling.factor"), f > 0 {
            scale = 1 / f
        }
        var cfg = ModelConfig(
            architecture: .llama, name: try file.optionalString("general.name") ?? "llama",
            nLayer: nLayer, nEmbd: nEmbd, nVocab: 0, nCtxTrain: try keys.optional("context_length") ?? 4096,
            nFF: nFF, nHead: nHead, nHeadKV: nHeadKV, headDim: headDim,
            layerKinds: [LayerKind](repeating: .attention, count: nLayer),
            rmsEps: try keys.float("attention.layer_norm_rms_epsilon") ?? 1e-5,
            ropeBase: try keys.float("rope.freq_base") ?? 10000, ropeFreqScale: scale, ropeBaseSWA: 10000,
            nRot: nRot, ropeNeox: false, slidingWindow: 0, isSlidingLayer: [Bool](repeating: false, count: nLayer),
            embedScale: nil, queryScale: 1 / Float(headDim).squareRoot(), queryPreScaled: false,
            activation: .silu, convLCache: 0, finalLogitSoftcap: nil,
            chatTemplate: try file.optionalString("tokenizer.chat_template"))
        let b = TensorBinder(file: file)
        let (embd, norm, output) = try embeddingAndOutput(b, cfg: &cfg, outputNorm: "output_norm.weight")
        var layers: [LayerWeights] = []
        for i in 0..<nLayer {
            let p = "blk.\(i)."
            let mixer = try standardAttention(b, prefix: p, cfg: cfg, layer: i, kvSlot: i, qkNorm: false)
            layers.append(try standardLayer(b, prefix: p, nEmbd: nEmbd, nFF: nFF[i], mixer: mixer, postNorms: false))
        }
        return (cfg, ModelWeights(tokenEmbedding: embd, outputNorm: norm, output: output, layers: layers))
    }
}

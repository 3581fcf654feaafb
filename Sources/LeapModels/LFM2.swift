// LFM2 / LFM2.5 (`general.architecture = lfm2`): gated short-convolution layers and GQA attention layers
// with per-head Q/K RMSNorm and NEOX RoPE (config and binding shared with `lfm2moe`, LFM2MoE.swift). The layer type comes only from `head_count_kv[i]` (0 = conv).
// The final norm is stored as `token_embd_norm.weight` (Ollama writes `output_norm.weight`: both accepted);
// the output projection is tied to the embedding unless `output.weight` exists. A file with `dense_2.weight`
// (and optional `dense_2.bias`) is an embedding model: that dense head of `lfm2.embedding_length_out` rows
// replaces the language-model head (LFM2-ColBERT, the LFM2.5-Audio detokenizer). With
// `lfm2.attention.sliding_window` = n every attention layer is causal sliding-window (query p sees keys
// p-n+1...p, llama.cpp's LLAMA_SWA_TYPE_STANDARD) with the same RoPE base as the others.
import LeapCore
import LeapGGUF
import LeapKernels

enum LFM2 {
    static func load(_ file: GGUFFile) throws -> (ModelConfig, ModelWeights) {
        var cfg = try config(file, .lfm2) { keys, nLayer in
            guard let nFF = try keys.perLayer("feed_forward_length", nLayer) else {
                throw LeapError.modelLoading("missing GGUF key 'lfm2.feed_forward_length' in \(file.path)")
            }
            return nFF
        }
        let weights = try bind(file, &cfg) { b, p, i, cfg in
            .dense(try denseFFN(b, prefix: p, nEmbd: cfg.nEmbd, nFF: cfg.nFF[i]))
        }
        return (cfg, weights)
    }

    /// The hyper-parameters shared by `lfm2` and `lfm2moe` (keys `<arch>.*`); `ffnWidths(keys, n_layer)`
    /// gives each layer's FFN width (sizes the scratch buffers). `nVocab` is set by `bind`.
    static func config(_ file: GGUFFile, _ arch: Architecture,
                       ffnWidths: (ArchKeys, Int) throws -> [Int]) throws -> ModelConfig {
        let a = arch.rawValue
        let keys = ArchKeys(file: file, prefix: a + ".")
        let nLayer = try keys.positive("block_count", keys.required("block_count"), max: 4096)
        let nEmbd = try keys.positive("embedding_length", keys.required("embedding_length"))
        let nHead = try keys.positive("attention.head_count", keys.required("attention.head_count"), max: 4096)
        guard let nHeadKV = try keys.perLayer("attention.head_count_kv", nLayer) else {
            throw LeapError.modelLoading("missing GGUF key '\(a).attention.head_count_kv' in \(file.path)")
        }
        let nFF = try ffnWidths(keys, nLayer)
        let headDim = try keys.optional("attention.key_length") ?? (nEmbd / nHead)
        guard headDim > 0, headDim * nHead == nEmbd else {
            throw LeapError.modelLoading("\(a): head_count \(nHead) × head dim \(headDim) != embedding_length \(nEmbd)")
        }
        for (i, kv) in nHeadKV.enumerated() where kv < 0 || kv > nHead || (kv > 0 && nHead % kv != 0) {
            throw LeapError.modelLoading("\(a).attention.head_count_kv[\(i)] = \(kv) must be 0 or divide head_count \(nHead)")
        }
        let lCache = try keys.required("shortconv.l_cache")
        guard lCache >= 1, lCache <= 16 else {
            throw LeapError.modelLoading("\(a).shortconv.l_cache = \(lCache) is out of range 1...16")
        }
        let kinds: [LayerKind] = nHeadKV.map { $0 == 0 ? .shortConv : .attention }
        let ctxTrain = try keys.optional("context_length") ?? 128_000
        var cfg = ModelConfig(
            architecture: arch, name: try file.optionalString("general.name") ?? a,
            nLayer: nLayer, nEmbd: nEmbd, nVocab: 0, nCtxTrain: ctxTrain, nFF: nFF, nHead: nHead,
            nHeadKV: nHeadKV, headDim: headDim, layerKinds: kinds,
            rmsEps: try keys.requiredFloat("attention.layer_norm_rms_epsilon"),
            ropeBase: try keys.float("rope.freq_base") ?? 10000, ropeFreqScale: 1, ropeBaseSWA: 10000,
            nRot: headDim, ropeNeox: true, slidingWindow: try keys.optional("attention.sliding_window") ?? 0,
            isSlidingLayer: [], embedScale: nil, queryScale: 1 / Float(headDim).squareRoot(),
            queryPreScaled: false, activation: .silu, convLCache: lCache, finalLogitSoftcap: nil,
            chatTemplate: try file.optionalString("tokenizer.chat_template"))
        cfg.isSlidingLayer = [Bool](repeating: cfg.slidingWindow > 0, count: nLayer)
        cfg.ropeBaseSWA = cfg.ropeBase
        return cfg
    }

    /// Binds the embedding, final norm, output and every layer's norms and mixer; `ffn` binds layer i's FFN.
    static func bind(_ file: GGUFFile, _ cfg: inout ModelConfig,
                     ffn: (TensorBinder, _ prefix: String, _ layer: Int, ModelConfig) throws -> FFNWeights) throws -> ModelWeights {
        let nEmbd = cfg.nEmbd, nHead = cfg.nHead, headDim = cfg.headDim, lCache = cfg.convLCache
        let b = TensorBinder(file: file)
        let embdInfo = try b.info("token_embd.weight")
        guard embdInfo.ne.count >= 2, embdInfo.ne[0] == nEmbd else {
            throw LeapError.modelLoading("tensor 'token_embd.weight' has shape \(embdInfo.ne), expected [\(nEmbd), n_vocab]")
        }
        cfg.nVocab = embdInfo.ne[1]
        if let tokens = try file.optionalStringArray("tokenizer.ggml.tokens"), tokens.count != cfg.nVocab {
            // llama.cpp uses the token list; a mismatch means a broken file.
            throw LeapError.modelLoading("token_embd.weight has \(cfg.nVocab) rows but the vocabulary has \(tokens.count) tokens")
        }
        let embd = try b.matrix("token_embd.weight", rows: cfg.nVocab, cols: nEmbd)
        let normName = b.has("token_embd_norm.weight") ? "token_embd_norm.weight" : "output_norm.weight"
        let outNorm = try b.vector(normName, nEmbd)
        var output = b.has("output.weight") ? try b.matrix("output.weight", rows: cfg.nVocab, cols: nEmbd) : embd
        var outputBias: [Float]? = nil
        if b.has("dense_2.weight") {
            let info = try b.info("dense_2.weight")
            let nOut = info.ne.count >= 2 ? info.ne[1] : 0
            let declared = try file.metadata.optionalInt(cfg.architecture.rawValue + ".embedding_length_out")
            guard nOut > 0, declared == nil || declared == nOut else {
                throw LeapError.modelLoading("tensor 'dense_2.weight' has shape \(info.ne), expected [\(nEmbd), \(declared ?? 0)] (\(cfg.architecture.rawValue).embedding_length_out) in \(file.path)")
            }
            output = try b.matrix("dense_2.weight", rows: nOut, cols: nEmbd)
            outputBias = try b.optionalVector("dense_2.bias", nOut)
            cfg.denseOutputWidth = nOut
        }

        var layers: [LayerWeights] = []
        var kvSlot = 0, convSlot = 0
        for i in 0..<cfg.nLayer {
            let p = "blk.\(i)."
            let mixer: MixerWeights
            if cfg.layerKinds[i] == .shortConv {
                mixer = .shortConv(ShortConvWeights(
                    inProj: try b.matrix(p + "shortconv.in_proj.weight", rows: 3 * nEmbd, cols: nEmbd),
                    outProj: try b.matrix(p + "shortconv.out_proj.weight", rows: nEmbd, cols: nEmbd),
                    conv: try b.small(p + "shortconv.conv.weight", ne0: lCache, ne1: nEmbd),
                    convSlot: convSlot))
                convSlot += 1
            } else {
                let kvDim = cfg.nHeadKV[i] * headDim
                mixer = .attention(AttentionWeights(
                    q: try b.matrix(p + "attn_q.weight", rows: nHead * headDim, cols: nEmbd),
                    k: try b.matrix(p + "attn_k.weight", rows: kvDim, cols: nEmbd),
                    v: try b.matrix(p + "attn_v.weight", rows: kvDim, cols: nEmbd),
                    output: try b.matrix(p + "attn_output.weight", rows: nEmbd, cols: nHead * headDim),
                    qNorm: try b.vector(p + "attn_q_norm.weight", headDim),
                    kNorm: try b.vector(p + "attn_k_norm.weight", headDim),
                    nHeadKV: cfg.nHeadKV[i], kvSlot: kvSlot))
                kvSlot += 1
            }
            layers.append(try layerWeights(b, prefix: p, nEmbd: nEmbd, mixer: mixer, ffn: try ffn(b, p, i, cfg), postNorms: false))
        }
        return ModelWeights(tokenEmbedding: embd, outputNorm: outNorm, output: output, outputBias: outputBias, layers: layers)
    }
}

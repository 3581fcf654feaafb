// Gemma 3 (`gemma3`): embeddings × sqrt(E); per-head Q/K RMSNorm; NEOX RoPE with a local base on
// sliding-window layers and the global base (and linear scaling) on every P-th layer; post-attention and
// post-FFN norms; GELU-tanh gate. Norm weights are stored with the +1 already applied (use x̂·w).
import CLeapKernels
import Glibc
import LeapCore
import LeapGGUF
import LeapKernels

enum Gemma3 {
    static func load(_ file: GGUFFile) throws -> (ModelConfig, ModelWeights) {
        let keys = ArchKeys(file: file, prefix: "gemma3.")
        let shape = try gqaShape(keys, "gemma3", file)
        let (nLayer, nEmbd, nHead, nHeadKV, nFF, headDim) =
            (shape.nLayer, shape.nEmbd, shape.nHead, shape.nHeadKV, shape.nFF, shape.headDim)
        guard headDim % 2 == 0 else { throw LeapError.modelLoading("gemma3: head dim \(headDim) must be even (NEOX RoPE over the whole head)") }
        let window = try keys.optional("attention.sliding_window") ?? 0
        // Sliding-window pattern: a period P (layer il is local iff il % P < P-1) or a per-layer bool array.
        var sliding = [Bool](repeating: false, count: nLayer)
        if case .array(.bool(let flags))? = file.metadata["gemma3.attention.sliding_window_pattern"] {
            guard flags.count == nLayer else {
                throw LeapError.modelLoading("gemma3.attention.sliding_window_pattern has \(flags.count) entries, expected \(nLayer)")
            }
            sliding = flags
        } else {
            let period = try keys.optional("attention.sliding_window_pattern") ?? 6
            guard period >= 1 else { throw LeapError.modelLoading("gemma3.attention.sliding_window_pattern = \(period)") }
            for il in 0..<nLayer { sliding[il] = il % period < period - 1 }
        }
        if window <= 0 { sliding = [Bool](repeating: false, count: nLayer) }
        var scale: Float = 1
        if let t = try file.optionalString("gemma3.rope.scaling.type"), t == "linear", let f = try keys.float("rope.scaling.factor"), f > 0 {
            scale = 1 / f
        }
        let sizeLabel = try file.optionalString("general.size_label")
        // 27B scales queries by 1/sqrt(E/H) (query_pre_attn_scalar); the others by 1/sqrt(head_dim).
        let qScale = (nLayer == 62 || sizeLabel == "27B") ? 1 / Float(nEmbd / nHead).squareRoot() : 1 / Float(headDim).squareRoot()
        var cfg = ModelConfig(
            architecture: .gemma3, name: try file.optionalString("general.name") ?? "gemma3",
            nLayer: nLayer, nEmbd: nEmbd, nVocab: 0, nCtxTrain: try keys.optional("context_length") ?? 32768,
            nFF: nFF, nHead: nHead, nHeadKV: nHeadKV, headDim: headDim,
            layerKinds: [LayerKind](repeating: .attention, count: nLayer),
            rmsEps: try keys.float("attention.layer_norm_rms_epsilon") ?? 1e-6,
            ropeBase: try keys.float("rope.freq_base") ?? 1_000_000, ropeFreqScale: scale,
            ropeBaseSWA: try keys.float("rope.freq_base_swa") ?? 10000,
            nRot: headDim, ropeNeox: true, slidingWindow: max(0, window), isSlidingLayer: sliding,
            embedScale: Float(nEmbd).squareRoot(), queryScale: qScale, queryPreScaled: true,
            activation: .geluTanh, convLCache: 0,
            finalLogitSoftcap: try keys.float("final_logit_softcapping"),
            chatTemplate: try file.optionalString("tokenizer.chat_template"))
        let b = TensorBinder(file: file)
        let (embd, norm, output) = try embeddingAndOutput(b, cfg: &cfg, outputNorm: "output_norm.weight")
        var layers: [LayerWeights] = []
        for i in 0..<nLayer {
            let p = "blk.\(i)."
            let mixer = try standardAttention(b, prefix: p, cfg: cfg, layer: i, kvSlot: i, qkNorm: true)
            layers.append(try standardLayer(b, prefix: p, nEmbd: nEmbd, nFF: nFF[i], mixer: mixer, postNorms: true))
        }
        return (cfg, ModelWeights(tokenEmbedding: embd, outputNorm: norm, output: output, layers: layers))
    }
}

// Gemma 3's steps of the shared forward pass (Forward.swift); each does nothing for a model without them.
extension InferenceContext {
    /// x[0..<rows] ×= sqrt(E): token embeddings only (llama.cpp: raw embedding inputs are not scaled).
    func scaleTokenEmbeddings(rows T: Int) {
        guard let s = cfg.embedScale else { return }
        lk_scale(x, s, x, Int64(T * cfg.nEmbd))
    }

    /// logits = c · tanh(logits / c) with the final logit softcap c.
    func softcapLogits(_ logits: UnsafeMutablePointer<Float>, count: Int) {
        guard let c = cfg.finalLogitSoftcap, c > 0 else { return }
        for i in 0..<count { logits[i] = c * tanhf(logits[i] / c) }
    }

    /// gate = gelu(gate) · up as ggml computes it: gelu(f16(x)) from an F16 table, exact ends beyond ±10.
    func geluGate(_ gate: UnsafeMutablePointer<Float>, _ up: UnsafeMutablePointer<Float>, count: Int, table: [Float]) {
        table.withUnsafeBufferPointer { lk_gelu_table_mul($0.baseAddress, gate, up, gate, Int64(count)) }
    }
}

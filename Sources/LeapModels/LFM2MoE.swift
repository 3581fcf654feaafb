// LFM2-MoE (`general.architecture = lfm2moe`: LFM2-8B-A1B, LFM2.5-8B-A1B, LFM2-24B-A2B): LFM2's conv and
// attention mixers, norms and tensor names (LFM2.swift), with the FFN of every layer from
// `leading_dense_block_count` on replaced by a routed mixture of experts (MoE.swift):
//
//   keys    lfm2moe.expert_count, expert_used_count (scalar or per layer), expert_feed_forward_length
//           (scalar or per layer), expert_gating_func (2 = sigmoid), leading_dense_block_count (default 0),
//           feed_forward_length (the leading dense layers)
//   tensors blk.N.ffn_gate_inp.weight [E, n_expert] (router, F32 in real files), blk.N.exp_probs_b.bias
//           [n_expert], blk.N.ffn_{gate,up}_exps.weight [E, F_exp, n_expert], ffn_down_exps [F_exp, E, n_expert]
//
// Like llama.cpp, the expert weights are always normalized over the chosen experts and there is no shared
// expert; `expert_weights_scale` (not written by the converters, ignored by llama.cpp for lfm2moe) is
// applied when a file carries one.
import LeapCore
import LeapGGUF
import LeapKernels

enum LFM2MoE {
    static func load(_ file: GGUFFile) throws -> (ModelConfig, ModelWeights) {
        let keys = ArchKeys(file: file, prefix: "lfm2moe.")
        var nDense = 0, nExpert = 0
        var nUsed: [Int] = [], nFFExp: [Int] = []
        var cfg = try LFM2.config(file, .lfm2moe) { keys, nLayer in
            nDense = try keys.optional("leading_dense_block_count") ?? 0
            guard nDense >= 0, nDense <= nLayer else {
                throw LeapError.modelLoading("lfm2moe.leading_dense_block_count = \(nDense) is out of range 0...\(nLayer) (block_count)")
            }
            var widths: [Int] = []
            if nDense > 0 {
                guard let nFF = try keys.perLayer("feed_forward_length", nLayer) else {
                    throw LeapError.modelLoading("missing GGUF key 'lfm2moe.feed_forward_length' (width of the \(nDense) leading dense layers) in \(file.path)")
                }
                widths = Array(nFF[0..<nDense])
            }
            if nDense < nLayer {
                nExpert = try keys.positive("expert_count", keys.required("expert_count"), max: 4096)
                guard let used = try keys.perLayer("expert_used_count", nLayer) else {
                    throw LeapError.modelLoading("missing GGUF key 'lfm2moe.expert_used_count' in \(file.path)")
                }
                guard let fExp = try keys.perLayer("expert_feed_forward_length", nLayer) else {
                    throw LeapError.modelLoading("missing GGUF key 'lfm2moe.expert_feed_forward_length' in \(file.path)")
                }
                for i in nDense..<nLayer where used[i] < 1 || used[i] > nExpert {
                    throw LeapError.modelLoading("lfm2moe.expert_used_count[\(i)] = \(used[i]) is out of range 1...\(nExpert) (expert_count)")
                }
                for i in nDense..<nLayer where fExp[i] < 1 || fExp[i] > 1 << 24 {
                    throw LeapError.modelLoading("lfm2moe.expert_feed_forward_length[\(i)] = \(fExp[i]) is out of range 1...\(1 << 24)")
                }
                nUsed = used
                nFFExp = fExp
                widths += fExp[nDense...]
            }
            return widths
        }
        var gating = ExpertGating.sigmoid
        var scale: Float = 1
        if nDense < cfg.nLayer {
            gating = try expertGating(keys)
            if let s = try keys.float("expert_weights_scale"), s != 0 { scale = s }
            if let groups = try keys.optional("expert_group_count"), groups > 1 {
                throw LeapError.unsupported("lfm2moe.expert_group_count = \(groups): grouped expert selection is not supported (\(file.path))")
            }
        }
        let weights = try LFM2.bind(file, &cfg) { b, p, i, cfg in
            if i < nDense { return .dense(try denseFFN(b, prefix: p, nEmbd: cfg.nEmbd, nFF: cfg.nFF[i])) }
            return .moe(try MoEWeights(
                b, prefix: p, nEmbd: cfg.nEmbd, nExpert: nExpert, nFF: nFFExp[i], nUsed: nUsed[i],
                gating: gating, weightsScale: scale))
        }
        return (cfg, weights)
    }

    /// `expert_gating_func`: llama.cpp's enum (1 softmax, 2 sigmoid); LFM2-MoE routes with sigmoid.
    private static func expertGating(_ keys: ArchKeys) throws -> ExpertGating {
        let v = try keys.required("expert_gating_func")
        guard v == 2 else {
            throw LeapError.unsupported("lfm2moe.expert_gating_func = \(v) is not supported (expected 2, sigmoid) in \(keys.file.path)")
        }
        return .sigmoid
    }
}

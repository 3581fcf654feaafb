// RoPE scaling from `<arch>.rope.scaling.*`, read as llama.cpp reads it for llama / qwen2 / qwen3 files:
//   type (default "linear"), factor (or the older rope.scale_linear) -> freq_scale = 1/factor;
//   "yarn" (Qwen2.5 / Qwen3 long-context files) additionally blends, per rotary pair i, the interpolated
//   angle freq_scale·θ_i with the unscaled θ_i by a linear ramp over the "correction dims" computed from
//   original_context_length (default: context_length) and β_fast = 32, β_slow = 1, and multiplies cos/sin
//   by 1 + 0.1·ln(factor). Llama 3's "llama3" scaling is not a key: it arrives as `rope_freqs.weight`.
import Glibc
import LeapCore

package struct RopeYaRN: Sendable, Equatable {
    var extFactor: Float      // weight of the unscaled angle at ramp 1 (1 for yarn)
    var corrLow: Float        // ramp = 1 for pairs i <= corrLow (pure extrapolation) ...
    var corrHigh: Float       // ... down to 0 for i >= corrHigh (pure interpolation)
    var mscale: Float         // cos/sin magnitude

    /// ggml's rope_yarn_ramp: 1 - clamp((i - low) / max(0.001, high - low), 0, 1).
    func ramp(_ i: Int) -> Float {
        let y = (Float(i) - corrLow) / max(0.001, corrHigh - corrLow)
        return 1 - min(1, max(0, y))
    }
}

extension ArchKeys {
    /// (freq_scale, YaRN parameters or nil) for a model rotating `nRot` dims with base `base`.
    func ropeScaling(nRot: Int, base: Float, nCtxTrain: Int) throws -> (Float, RopeYaRN?) {
        let type = try file.optionalString(prefix + "rope.scaling.type") ?? "linear"
        let factor = try float("rope.scaling.factor") ?? float("rope.scale_linear") ?? 0
        let freqScale: Float = factor == 0 ? 1 : 1 / factor
        switch type {
        case "none": return (1, nil)
        case "linear": return (freqScale, nil)
        case "yarn":
            guard factor >= 1, factor.isFinite else {
                throw LeapError.modelLoading("\(prefix)rope.scaling.factor = \(factor) must be >= 1 for yarn in \(file.path)")
            }
            let nCtxOrig = try optional("rope.scaling.original_context_length") ?? nCtxTrain
            guard nCtxOrig > 0 else {
                throw LeapError.modelLoading("\(prefix)rope.scaling.original_context_length = \(nCtxOrig) in \(file.path)")
            }
            // ggml_rope_yarn_corr_dims with β_fast = 32, β_slow = 1 (llama.cpp's defaults for these families).
            func corrDim(_ beta: Float) -> Float {
                Float(nRot) * logf(Float(nCtxOrig) / (beta * 2 * Float.pi)) / (2 * logf(base))
            }
            let low = max(0, floorf(corrDim(32))), high = min(Float(nRot - 1), ceilf(corrDim(1)))
            // llama.cpp's attn_factor get_mscale(f)·1/(1 + 0.1·ln f), times rope_yarn's own 1 + 0.1·ln(1/freq_scale),
            // in its float operation order.
            let f = 1 / freqScale
            let attnFactor = (0.1 * logf(f) + 1) * (1 / (1 + 0.1 * logf(f)))
            return (freqScale, RopeYaRN(extFactor: 1, corrLow: low, corrHigh: high, mscale: attnFactor * (1 + 0.1 * logf(f))))
        default:
            throw LeapError.unsupported("\(prefix)rope.scaling.type '\(type)' is not supported (none, linear, yarn) in \(file.path)")
        }
    }
}

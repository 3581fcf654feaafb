// llama (SmolLM2, Llama 2/3.x style): pre-norm GQA attention + SwiGLU FFN. The GGUF converter permutes the
// Q/K rows per head so that RoPE works on adjacent pairs: use NORM RoPE on GGUF weights.
// Llama 3.1/3.2 files carry `rope_freqs.weight` ([n_rot/2] F32, computed by the converter from the HF
// "llama3" rope_scaling): rotary frequency i is divided by factor i; there are no rope.scaling.* keys.
// The plain-GQA hyper-parameters and layer loop (shared with Qwen2 and Qwen3) are in SharedBinders.swift.
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

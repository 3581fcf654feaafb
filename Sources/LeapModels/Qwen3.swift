// Qwen3 (`qwen3`): the llama layer layout with per-head Q/K RMSNorm before NEOX RoPE and no biases (applied if present, as llama.cpp does). The
// head dim comes from `attention.key_length` (128 in every size, so n_head × head_dim may differ from
// n_embd, e.g. 16 × 128 = 2048 vs 1024 in Qwen3-0.6B); the output is tied or separate.
import LeapGGUF
import LeapKernels

enum Qwen3 {
    static func load(_ file: GGUFFile) throws -> (ModelConfig, ModelWeights) {
        var cfg = try plainGQAConfig(file, .qwen3, ropeNeox: true, defaultEps: 1e-6, defaultContext: 40960)
        let weights = try plainGQAWeights(TensorBinder(file: file), cfg: &cfg, qkNorm: true, qkvBias: .ifPresent)
        return (cfg, weights)
    }
}

// Qwen2 / Qwen2.5 (`qwen2`): the llama layer layout with Q/K/V biases (always present in real files, so
// required here), NEOX RoPE (the converter does not permute Q/K), no other biases; the output projection
// is tied to the embedding in the small models (no `output.weight`).
import LeapGGUF
import LeapKernels

enum Qwen2 {
    static func load(_ file: GGUFFile) throws -> (ModelConfig, ModelWeights) {
        var cfg = try plainGQAConfig(file, .qwen2, ropeNeox: true, defaultEps: 1e-6, defaultContext: 32768)
        let weights = try plainGQAWeights(TensorBinder(file: file), cfg: &cfg, qkNorm: false, qkvBias: .required)
        return (cfg, weights)
    }
}

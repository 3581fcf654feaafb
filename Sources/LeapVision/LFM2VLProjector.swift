// LFM2VLProjector: LFM2-VL's multimodal projector, from pixel-unshuffled tokens (f²·D wide) to the text
// model's embedding width: LayerNorm (optional in the checkpoint) → Linear → GELU → Linear.
import LeapCore
import LeapKernels

struct LFM2VLProjector {
    let inputNorm: LayerNorm?  // mm.input_norm [f²·D], eps 1e-5
    let linear1: BatchedLinear  // mm.1 [f²·D → P]
    let linear2: BatchedLinear  // mm.2 [P → E]
    var hiddenSize: Int { linear1.outputs }

    init(_ b: TensorBinder, _ c: VisionProjectorConfig) throws {
        let M = c.mergedSize
        if b.has("mm.input_norm.weight") {
            inputNorm = LayerNorm(weight: try b.vector("mm.input_norm.weight", M),
                                  bias: try b.optionalVector("mm.input_norm.bias", M),
                                  eps: VisionProjectorConfig.projectorNormEps)
        } else {
            inputNorm = nil
        }
        let hidden = try b.info("mm.1.weight")
        guard hidden.ne.count == 2, hidden.ne[0] == M, hidden.ne[1] > 0 else {
            throw LeapError.modelLoading(
                "tensor 'mm.1.weight' has shape \(hidden.ne), expected [\(M), hidden] in \(b.file.path)")
        }
        linear1 = try BatchedLinear(b, "mm.1", inputs: M, outputs: hidden.ne[1])
        linear2 = try BatchedLinear(b, "mm.2", inputs: hidden.ne[1], outputs: c.projectionDim)
    }

    /// out = linear2(gelu(linear1(norm(tokens)))); `tokens` is normalized in place, `hidden` is scratch.
    func callAsFunction(
        _ tokens: UnsafeMutablePointer<Float>, // [n, f²·D]
        rows n: Int,
        hidden: UnsafeMutablePointer<Float>,   // [n, P]
        gelu form: GELUForm, gelu: GELU,
        into out: UnsafeMutablePointer<Float>, // [n, E]
        pool: ThreadPool
    ) {
        inputNorm?(tokens, rows: n, into: tokens, pool: pool)
        linear1(tokens, rows: n, into: hidden, pool: pool)
        gelu(form, hidden, rows: n, width: hiddenSize, pool: pool)
        linear2(hidden, rows: n, into: out, pool: pool)
    }
}

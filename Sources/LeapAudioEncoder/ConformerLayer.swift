// ConformerLayer: one FastConformer block (macaron), all LayerNorms with bias:
//   x = x + ½·FF1(LN(x));  x = x + MHSA(LN(x));  x = x + Conv(LN(x));  x = x + ½·FF2(LN(x));  x = LN(x)
// with FF = Linear(d → ffn, bias) → SiLU → Linear(ffn → d, bias).
import CLeapKernels
import LeapCore
import LeapKernels

/// The macaron feed-forward branch (without its ½).
struct ConformerFeedForward: @unchecked Sendable {
    let up: BatchedLinear    // d → ffn
    let down: BatchedLinear  // ffn → d

    init(_ b: TensorBinder, _ prefix: String, suffix: String, config c: AudioEncoderConfig) throws {
        up = try BatchedLinear(b, prefix + "ffn_up" + suffix, inputs: c.modelDim, outputs: c.ffnHidden)
        down = try BatchedLinear(b, prefix + "ffn_down" + suffix, inputs: c.ffnHidden, outputs: c.modelDim)
    }

    /// Reads ws.normed [n, d]; leaves the branch output in ws.normed.
    func callAsFunction(_ ws: EncoderWorkspace, pool: ThreadPool) {
        let n = ws.frames, f = up.outputs
        let hidden = ws.wide  // [n, ffn]
        up(ws.normed, rows: n, into: hidden, pool: pool)
        pool.parallelFor(n * f, align: 64, chunksPerThread: 1) { r in
            lk_silu(hidden + r.lowerBound, hidden + r.lowerBound, Int64(r.count))
        }
        down(hidden, rows: n, into: ws.normed, pool: pool)
    }
}

struct ConformerLayer: @unchecked Sendable {
    let feedForward1: ConformerFeedForward
    let attention: RelPositionAttention
    let convolution: ConformerConvolution
    let feedForward2: ConformerFeedForward
    let normFeedForward1, normAttention, normConvolution, normFeedForward2, normOut: LayerNorm

    init(_ b: TensorBinder, layer i: Int, config c: AudioEncoderConfig) throws {
        let p = "a.blk.\(i)."
        let d = c.modelDim
        normFeedForward1 = try LayerNorm(b, p + "ffn_norm", d, eps: c.eps)
        feedForward1 = try ConformerFeedForward(b, p, suffix: "", config: c)
        normAttention = try LayerNorm(b, p + "ln1", d, eps: c.eps)
        attention = try RelPositionAttention(b, layer: i, config: c)
        normConvolution = try LayerNorm(b, p + "norm_conv", d, eps: c.eps)
        convolution = try ConformerConvolution(b, layer: i, config: c)
        normFeedForward2 = try LayerNorm(b, p + "ffn_norm_1", d, eps: c.eps)
        feedForward2 = try ConformerFeedForward(b, p, suffix: "_1", config: c)
        normOut = try LayerNorm(b, p + "ln2", d, eps: c.eps)
    }

    /// ws.x [n, d] through the block, in place (ws.positions holds the relative position table).
    func callAsFunction(_ ws: EncoderWorkspace, pool: ThreadPool) {
        let n = ws.frames
        normFeedForward1(ws.x, rows: n, into: ws.normed, pool: pool)
        feedForward1(ws, pool: pool)
        addResidual(ws, scale: 0.5, pool: pool)
        normAttention(ws.x, rows: n, into: ws.normed, pool: pool)
        attention(ws, pool: pool)
        addResidual(ws, scale: 1, pool: pool)
        normConvolution(ws.x, rows: n, into: ws.normed, pool: pool)
        convolution(ws, pool: pool)
        addResidual(ws, scale: 1, pool: pool)
        normFeedForward2(ws.x, rows: n, into: ws.normed, pool: pool)
        feedForward2(ws, pool: pool)
        addResidual(ws, scale: 0.5, pool: pool)
        normOut(ws.x, rows: n, into: ws.x, pool: pool)
    }

    /// x += scale · branch (the branch output left in ws.normed); the product is rounded before the sum.
    private func addResidual(_ ws: EncoderWorkspace, scale: Float, pool: ThreadPool) {
        let total = ws.frames * ws.modelDim
        pool.parallelFor(total, align: 64, chunksPerThread: 1) { r in
            let y = ws.normed + r.lowerBound, x = ws.x + r.lowerBound
            if scale != 1 { lk_scale(y, scale, y, Int64(r.count)) }
            lk_add(x, y, x, Int64(r.count))
        }
    }
}

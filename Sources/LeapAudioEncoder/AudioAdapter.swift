// AudioAdapter: LFM2-Audio's audio_adapter, per encoder frame: LayerNorm(d) → Linear(d → hidden) →
// GELU (erf) → Linear(hidden → output), the output being the text model's embedding size.
import CLeapKernels
import LeapCore
import LeapKernels

struct AudioAdapter: @unchecked Sendable {
    let norm: LayerNorm
    let up: BatchedLinear    // d → hidden
    let down: BatchedLinear  // hidden → output

    init(_ b: TensorBinder, config c: AudioEncoderConfig) throws {
        norm = try LayerNorm(b, "mm.a.mlp.0", c.modelDim, eps: c.eps)
        up = try BatchedLinear(b, "mm.a.mlp.1", inputs: c.modelDim, outputs: c.adapterHidden)
        down = try BatchedLinear(b, "mm.a.mlp.3", inputs: c.adapterHidden, outputs: c.outputDim)
    }

    /// out[t] for the n frames of ws.x.
    func callAsFunction(_ ws: EncoderWorkspace, into out: UnsafeMutablePointer<Float>,  // [n, output]
                        pool: ThreadPool) {
        let n = ws.frames, h = up.outputs
        let hidden = ws.wide  // [n, hidden]
        norm(ws.x, rows: n, into: ws.normed, pool: pool)
        up(ws.normed, rows: n, into: hidden, pool: pool)
        pool.parallelFor(n * h, align: 64, chunksPerThread: 1) { r in
            lk_gelu_erf(hidden + r.lowerBound, hidden + r.lowerBound, Int64(r.count))
        }
        down(hidden, rows: n, into: out, pool: pool)
    }
}

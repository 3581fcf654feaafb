// ConformerConvolution: the conformer's convolution module over time, per frame row [n, d]:
//   pointwise_conv1 (d → 2d, bias) → GLU (first half · sigmoid(second half)) → depthwise Conv1d (kernel K,
//   symmetric padding (K − 1)/2, bias) → BatchNorm (eval; the mmproj ships it folded into a per-channel
//   scale and shift) → SiLU → pointwise_conv2 (d → d, bias).
import CLeapKernels
import LeapCore
import LeapKernels

struct ConformerConvolution: @unchecked Sendable {
    let pointwise1: BatchedLinear      // d → 2d
    let depthwiseTaps: [Float]  // [K][d]: tap k of every channel
    let depthwiseBias: [Float]  // [d]
    let normScale: [Float]      // [d] folded BatchNorm γ/√(var + ε)
    let normShift: [Float]      // [d] β − mean·scale
    let pointwise2: BatchedLinear      // d → d
    let kernel: Int

    init(_ b: TensorBinder, layer i: Int, config c: AudioEncoderConfig) throws {
        let p = "a.blk.\(i)."
        let d = c.modelDim, k = c.convKernel
        pointwise1 = try BatchedLinear(b, p + "conv_pw1", inputs: d, outputs: 2 * d)
        pointwise2 = try BatchedLinear(b, p + "conv_pw2", inputs: d, outputs: d)
        let taps = try b.floats(p + "conv_dw.weight", ne: [k, d])  // [d][K]
        var t = [Float](repeating: 0, count: k * d)
        for ch in 0..<d { for j in 0..<k { t[j * d + ch] = taps[ch * k + j] } }
        depthwiseTaps = t
        depthwiseBias = try b.vector(p + "conv_dw.bias", d)
        normScale = try b.vector(p + "conv_norm.weight", d)
        normShift = try b.vector(p + "conv_norm.bias", d)
        kernel = k
    }

    /// Reads ws.normed [n, d]; leaves the module's output in ws.normed.
    func callAsFunction(_ ws: EncoderWorkspace, pool: ThreadPool) {
        let n = ws.frames, d = ws.modelDim
        let wide = ws.wide  // [n, 2d]
        pointwise1(ws.normed, rows: n, into: wide, pool: pool)
        let gated = ws.qu  // [n, d]
        // GLU: a · sigmoid(b) = a / (1 + e^(−b)), e^(−b) by the kernels' vectorised exponential (in g first).
        pool.parallelFor(n, chunksPerThread: 1) { rows in
            for t in rows {
                let a = wide + t * 2 * d, g = gated + t * d
                lk_scale(a + d, -1, g, Int64(d))
                _ = lk_softmax_exp(g, g, Int64(d), 0)
                for c in 0..<d { g[c] = a[c] / (1 + g[c]) }
            }
        }
        let conv = ws.qv  // [n, d]
        let half = (kernel - 1) / 2
        depthwiseTaps.withUnsafeBufferPointer { taps in
            depthwiseBias.withUnsafeBufferPointer { bias in
                normScale.withUnsafeBufferPointer { scale in
                    normShift.withUnsafeBufferPointer { shift in
                        guard let tp = taps.baseAddress else { return }
                        pool.parallelFor(n, chunksPerThread: 2) { rows in
                            for t in rows {
                                let o = conv + t * d
                                o.initialize(repeating: 0, count: d)
                                for j in 0..<self.kernel {
                                    let src = t + j - half
                                    guard src >= 0, src < n else { continue }
                                    let x = gated + src * d, tap = tp + j * d
                                    for c in 0..<d { o[c] += x[c] * tap[c] }
                                }
                                for c in 0..<d { o[c] = (o[c] + bias[c]) * scale[c] + shift[c] }
                                lk_silu(o, o, Int64(d))
                            }
                        }
                    }
                }
            }
        }
        pointwise2(conv, rows: n, into: ws.normed, pool: pool)
    }
}

// Depthformer: the small transformer that turns one backbone hidden state into a frame's 8 audio codes, one
// codebook per step, with a KV cache that lives for one frame (positions 0..<8).
//
// Per layer (no final norm; RMSNorm eps 1e-5 everywhere):
//   xn = RMS(x) ⊙ operator_norm
//   [q | k | v] = qkv_proj · xn                 q: 32 heads × hd, k / v: 8 heads × hd (hd = D / 32)
//   q_h = RMS(q_h) ⊙ q_layernorm, k_h likewise; RoPE (base 1e6) on interleaved pairs (2i, 2i+1) at the
//   step's position (ggml NORM mode, not NEOX)
//   x += out_proj · concat_h softmax(q_h · K_{h/4}ᵀ / √hd) · V_{h/4}     (keys of positions 0...pos)
//   x += w2 · (silu(w1 · f) ⊙ (w3 · f)),  f = RMS(x) ⊙ ffn_norm
import CLeapKernels
import Glibc
import LeapCore
import LeapKernels

package struct DepthformerLayer: @unchecked Sendable {
    let operatorNorm: [Float]  // [D]
    let qkv: Linear            // [D + 2·kvDim, D], no bias
    let qNorm: [Float]         // [hd]
    let kNorm: [Float]         // [hd]
    let out: Linear            // [D, D]
    let ffnNorm: [Float]       // [D]
    let w1: Linear             // [F, D] gate
    let w3: Linear             // [F, D] up
    let w2: Linear             // [D, F] down
}

package struct DepthformerWeights: @unchecked Sendable {
    package static let heads = 32
    package static let kvHeads = 8
    package static let rmsEps: Float = 1e-5
    package static let ropeBase: Float = 1_000_000
    /// Steps per frame: one per codebook.
    package static let maxPositions = AudioCodes.codebooks

    package let dim: Int
    package let headDim: Int
    let layers: [DepthformerLayer]
    var kvDim: Int { Self.kvHeads * headDim }
    var ffnWidth: Int { layers.map(\.w1.outputs).max() ?? 0 }

    /// Binds `depthformer.layers.0..<layers` of width `dim` from `b`.
    package init(_ b: TensorBinder, layers nLayer: Int, dim: Int) throws {
        guard nLayer >= 1, nLayer <= 256 else {
            throw LeapError.modelLoading("depthformer_n_layer = \(nLayer) is out of range 1...256 in \(b.file.path)")
        }
        guard dim > 0, dim % (2 * Self.heads) == 0, dim <= 1 << 16 else {
            throw LeapError.modelLoading(
                "depthformer_n_embd = \(dim) must be a positive multiple of 64 (32 heads of an even head size) in \(b.file.path)")
        }
        self.dim = dim
        let hd = dim / Self.heads
        headDim = hd
        let kvDim = Self.kvHeads * hd
        layers = try (0..<nLayer).map { i in
            let p = "depthformer.layers.\(i)."
            let w1 = try b.info(p + "feed_forward.w1.weight")
            guard w1.ne.count == 2, w1.ne[0] == dim, w1.ne[1] > 0 else {
                throw LeapError.modelLoading("tensor '\(p)feed_forward.w1.weight' has shape \(w1.ne), expected [\(dim), ffn width] in \(b.file.path)")
            }
            let F = w1.ne[1]
            return DepthformerLayer(
                operatorNorm: try b.vector(p + "operator_norm.weight", dim),
                qkv: try Linear(b, p + "operator.qkv_proj", inputs: dim, outputs: dim + 2 * kvDim, bias: .none),
                qNorm: try b.vector(p + "operator.attention.q_layernorm.weight", hd),
                kNorm: try b.vector(p + "operator.attention.k_layernorm.weight", hd),
                out: try Linear(b, p + "operator.out_proj", inputs: dim, outputs: dim, bias: .none),
                ffnNorm: try b.vector(p + "ffn_norm.weight", dim),
                w1: try Linear(b, p + "feed_forward.w1", inputs: dim, outputs: F, bias: .none),
                w3: try Linear(b, p + "feed_forward.w3", inputs: dim, outputs: F, bias: .none),
                w2: try Linear(b, p + "feed_forward.w2", inputs: F, outputs: dim, bias: .none))
        }
    }
}

/// The depthformer's per-frame state (KV cache of `maxPositions` steps) and scratch; one per stream.
package final class Depthformer {
    package let weights: DepthformerWeights
    let pool: ThreadPool
    /// Steps taken since the last `reset` (the next step's position).
    package private(set) var position = 0

    private let keys: UnsafeMutablePointer<Float>    // [layers, maxPositions, kvDim]
    private let values: UnsafeMutablePointer<Float>  // [layers, maxPositions, kvDim]
    private let x: UnsafeMutablePointer<Float>       // [D] residual stream
    private let xn: UnsafeMutablePointer<Float>      // [D] normed block input
    private let qkv: UnsafeMutablePointer<Float>     // [D + 2·kvDim]
    private let attn: UnsafeMutablePointer<Float>    // [D] attention output before out_proj
    private let mix: UnsafeMutablePointer<Float>     // [D] block output
    private let gate: UnsafeMutablePointer<Float>    // [F]
    private let up: UnsafeMutablePointer<Float>      // [F]
    private let scores: UnsafeMutablePointer<Float>  // [maxPositions]

    package init(weights: DepthformerWeights, pool: ThreadPool) {
        self.weights = weights
        self.pool = pool
        let D = weights.dim, kv = weights.kvDim, F = weights.ffnWidth
        let cache = weights.layers.count * DepthformerWeights.maxPositions * kv
        keys = .allocate(capacity: cache)
        values = .allocate(capacity: cache)
        x = .allocate(capacity: D)
        xn = .allocate(capacity: D)
        qkv = .allocate(capacity: D + 2 * kv)
        attn = .allocate(capacity: D)
        mix = .allocate(capacity: D)
        gate = .allocate(capacity: F)
        up = .allocate(capacity: F)
        scores = .allocate(capacity: DepthformerWeights.maxPositions)
    }

    deinit {
        for p in [keys, values, x, xn, qkv, attn, mix, gate, up, scores] { p.deallocate() }
    }

    /// Forgets the frame's keys and values (the next step is position 0).
    package func reset() { position = 0 }

    /// One step at `position`: output = depthformer(input) ([D] each; may alias).
    package func step(_ input: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>) throws {
        guard position < DepthformerWeights.maxPositions else {
            throw LeapError.invalidArgument("the depthformer holds \(DepthformerWeights.maxPositions) steps per frame; reset it before the next frame")
        }
        let D = weights.dim, hd = weights.headDim, kvDim = weights.kvDim
        let H = DepthformerWeights.heads, Hkv = DepthformerWeights.kvHeads, group = H / Hkv
        let eps = DepthformerWeights.rmsEps
        let pos = position
        let scale = 1 / Float(hd).squareRoot()
        x.update(from: input, count: D)
        for (il, l) in weights.layers.enumerated() {
            rmsNorm(x, l.operatorNorm, into: xn, D)
            l.qkv(xn, rows: 1, into: qkv, pool: pool)
            let q = qkv, k = qkv + D, v = qkv + D + kvDim
            l.qNorm.withUnsafeBufferPointer { w in for h in 0..<H { lk_rms_norm(q + h * hd, w.baseAddress, q + h * hd, Int64(hd), eps) } }
            l.kNorm.withUnsafeBufferPointer { w in for h in 0..<Hkv { lk_rms_norm(k + h * hd, w.baseAddress, k + h * hd, Int64(hd), eps) } }
            lk_rope(q, Int64(H), Int64(hd), Int64(hd), Int32(LK_ROPE_NORM), Float(pos), DepthformerWeights.ropeBase, 1)
            lk_rope(k, Int64(Hkv), Int64(hd), Int64(hd), Int32(LK_ROPE_NORM), Float(pos), DepthformerWeights.ropeBase, 1)
            let layerKeys = keys + il * DepthformerWeights.maxPositions * kvDim
            let layerValues = values + il * DepthformerWeights.maxPositions * kvDim
            (layerKeys + pos * kvDim).update(from: k, count: kvDim)
            (layerValues + pos * kvDim).update(from: v, count: kvDim)
            // softmax(q_h · K_gᵀ · scale) · V_g over positions 0...pos
            for h in 0..<H {
                let g = h / group
                let qh = q + h * hd
                var m = -Float.infinity
                for t in 0...pos {
                    let kt = layerKeys + t * kvDim + g * hd
                    var s: Float = 0
                    for d in 0..<hd { s += qh[d] * kt[d] }
                    scores[t] = s * scale
                    m = max(m, scores[t])
                }
                var sum: Float = 0
                for t in 0...pos {
                    scores[t] = expf(scores[t] - m)
                    sum += scores[t]
                }
                let oh = attn + h * hd
                for d in 0..<hd { oh[d] = 0 }
                for t in 0...pos {
                    let p = scores[t] / sum
                    let vt = layerValues + t * kvDim + g * hd
                    for d in 0..<hd { oh[d] += p * vt[d] }
                }
            }
            l.out(attn, rows: 1, into: mix, pool: pool)
            lk_add(x, mix, x, Int64(D))

            rmsNorm(x, l.ffnNorm, into: xn, D)
            l.w1(xn, rows: 1, into: gate, pool: pool)
            l.w3(xn, rows: 1, into: up, pool: pool)
            let F = l.w1.outputs
            lk_silu(gate, gate, Int64(F))
            lk_mul(gate, up, gate, Int64(F))
            l.w2(gate, rows: 1, into: mix, pool: pool)
            lk_add(x, mix, x, Int64(D))
        }
        output.update(from: x, count: D)
        position += 1
    }

    private func rmsNorm(_ src: UnsafePointer<Float>, _ w: [Float], into dst: UnsafeMutablePointer<Float>, _ n: Int) {
        w.withUnsafeBufferPointer { lk_rms_norm(src, $0.baseAddress, dst, Int64(n), DepthformerWeights.rmsEps) }
    }
}

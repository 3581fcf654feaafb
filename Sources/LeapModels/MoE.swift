// Routed mixture-of-experts FFN (LFM2-MoE), following llama.cpp's build_moe_ffn for sigmoid gating:
//
//   p   = sigmoid(router · x)                      [n_expert]   router = ffn_gate_inp
//   top = the k experts with the largest p + bias  (bias = exp_probs_b, used only to choose)
//   w_j = p_top[j] / max(Σ_j p_top[j], 2^-14) · scale
//   out = Σ_j w_j · down_j(silu(gate_j · x) ⊙ up_j · x)   summed in rank order (best first)
//
// The experts are slices of stacked 3-D tensors ([cols, rows, n_expert]): quantized rows are whole blocks,
// so expert e is the matrix starting e · rows · rowBytes bytes in and runs on the ordinary matmul kernels.
// A batch groups its (token, rank) pairs by expert, so each chosen expert's weights stream once per batch.
import CLeapKernels
import Glibc
import LeapCore
import LeapGGUF
import LeapKernels

package enum ExpertGating: Sendable {
    case sigmoid   // llama.cpp LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID (2)
}

package struct MoEWeights: @unchecked Sendable {
    var router: WeightMatrix           // [nExpert, E]
    var selectionBias: [Float]?        // [nExpert] added to p for the choice only
    var experts: [DenseFFNWeights]     // nExpert × (gate [F, E], up [F, E], down [E, F])
    var nUsed: Int                     // k
    var gating: ExpertGating
    var weightsScale: Float            // 1 = none

    var nExpert: Int { router.rows }

    /// Router plus the k experts a token uses.
    var bytesPerToken: Int {
        guard let e = experts.first else { return router.byteCount }
        return router.byteCount + nUsed * (e.gate.byteCount + e.up.byteCount + e.down.byteCount)
    }

    /// Binds `<prefix>ffn_gate_inp.weight`, `exp_probs_b.bias` and the stacked `ffn_{gate,up,down}_exps.weight`.
    init(_ b: TensorBinder, prefix p: String, nEmbd: Int, nExpert: Int, nFF: Int, nUsed: Int,
         gating: ExpertGating, weightsScale: Float) throws {
        router = try b.matrix(p + "ffn_gate_inp.weight", rows: nExpert, cols: nEmbd)
        selectionBias = try b.vector(p + "exp_probs_b.bias", nExpert)
        let gate = try b.experts(p + "ffn_gate_exps.weight", rows: nFF, cols: nEmbd, count: nExpert)
        let up = try b.experts(p + "ffn_up_exps.weight", rows: nFF, cols: nEmbd, count: nExpert)
        let down = try b.experts(p + "ffn_down_exps.weight", rows: nEmbd, cols: nFF, count: nExpert)
        experts = (0..<nExpert).map { DenseFFNWeights(gate: gate[$0], up: up[$0], down: down[$0]) }
        self.nUsed = nUsed
        self.gating = gating
        self.weightsScale = weightsScale
    }

    /// Chooses token's experts from its router logits (turned into probabilities in place): ids best first
    /// and their normalized weights, `nUsed` each.
    func route(_ logits: UnsafeMutablePointer<Float>, ids: UnsafeMutablePointer<Int32>, weights: UnsafeMutablePointer<Float>) {
        let n = nExpert
        switch gating {
        case .sigmoid: for e in 0..<n { logits[e] = 1 / (1 + expf(-logits[e])) }
        }
        // Top-k by p + bias, descending (a selection sort: k and n are small).
        for j in 0..<nUsed {
            var best = -1
            var bestScore = -Float.infinity
            for e in 0..<n {
                var taken = false
                for i in 0..<j where Int(ids[i]) == e { taken = true }
                if taken { continue }
                let score = logits[e] + (selectionBias?[e] ?? 0)
                if best < 0 || score > bestScore { best = e; bestScore = score }
            }
            ids[j] = Int32(best)
        }
        var sum = 0.0  // ggml sums rows in double
        for j in 0..<nUsed { sum += Double(logits[Int(ids[j])]) }
        let norm = max(Float(sum), 6.103515625e-5)  // llama.cpp's clamp (smallest normal F16)
        for j in 0..<nUsed {
            var w = logits[Int(ids[j])] / norm
            if weightsScale != 1 { w *= weightsScale }
            weights[j] = w
        }
    }
}

extension TensorBinder {
    /// The `count` matrices [rows, cols] of a stacked expert tensor with ne = [cols, rows, count].
    func experts(_ name: String, rows: Int, cols: Int, count: Int) throws -> [WeightMatrix] {
        let t = try info(name)
        let ne = t.ne
        guard ne.count >= 3, ne[0] == cols, ne[1] == rows, ne[2] == count, ne[3...].allSatisfy({ $0 == 1 }) else {
            throw LeapError.modelLoading("tensor '\(name)' has shape \(ne), expected [\(cols), \(rows), \(count)] in \(file.path)")
        }
        let data = file.tensorData(t)
        guard let base = data.baseAddress, data.count == t.byteCount else {
            throw LeapError.modelLoading("tensor '\(name)' data is outside \(file.path)")
        }
        do {
            let first = try WeightMatrix(type: t.type, rows: rows, cols: cols, data: base)
            guard first.byteCount * count == t.byteCount else {
                throw LeapError.modelLoading("tensor '\(name)' holds \(t.byteCount) bytes, expected \(count) experts of \(first.byteCount)")
            }
            return try (0..<count).map {
                var w = try WeightMatrix(type: t.type, rows: rows, cols: cols, data: base + $0 * first.byteCount)
                w.isExpert = true
                return w
            }
        } catch let e as LeapError {
            throw LeapError(e.kind == .unsupported ? .unsupported : .modelLoading, "tensor '\(name)': \(e.message)")
        }
    }
}

/// Per-context scratch of the routed layers; B = maxBatch tokens, k = the largest expert_used_count.
final class MoEScratch {
    let probs: UnsafeMutablePointer<Float>      // [B, nExpert] router logits → probabilities
    let ids: UnsafeMutablePointer<Int32>        // [B, k] chosen experts, best first
    let weights: UnsafeMutablePointer<Float>    // [B, k]
    let pairs: UnsafeMutablePointer<Int32>      // [B·k] pair indices t·k + j grouped by expert
    let groupStart: UnsafeMutablePointer<Int>   // [nExpert + 1] offsets into pairs
    let gathered: UnsafeMutablePointer<Float>   // [B, E] input rows of one expert's tokens
    let expertOut: UnsafeMutablePointer<Float>  // [B, E] that expert's output rows
    let ranked: UnsafeMutablePointer<Float>     // [B, k, E] weighted outputs per (token, rank)
    private let buffers: [RawBuffer]

    /// nil when the model has no routed layer.
    init?(_ weights: ModelWeights, maxBatch B: Int, nEmbd E: Int) throws {
        var nExpert = 0, k = 0
        for l in weights.layers {
            if case .moe(let m) = l.ffn { nExpert = max(nExpert, m.nExpert); k = max(k, m.nUsed) }
        }
        guard nExpert > 0 else { return nil }
        var bufs: [RawBuffer] = []
        func alloc<T>(_ n: Int, _ type: T.Type) throws -> UnsafeMutablePointer<T> {
            let b = try RawBuffer(count: try checkedSize(n, what: "expert scratch"), of: T.self, what: "the expert scratch")
            bufs.append(b)
            return b.base.bindMemory(to: T.self, capacity: n)
        }
        probs = try alloc(B * nExpert, Float.self)
        ids = try alloc(B * k, Int32.self)
        self.weights = try alloc(B * k, Float.self)
        pairs = try alloc(B * k, Int32.self)
        groupStart = try alloc(nExpert + 1, Int.self)
        gathered = try alloc(B * E, Float.self)
        expertOut = try alloc(B * E, Float.self)
        ranked = try alloc(try checkedSize(B, k, E, what: "expert outputs"), Float.self)
        buffers = bufs
    }
}

extension InferenceContext {
    /// xn → mix for a routed layer over T tokens (decode and batched prefill alike).
    func mixtureOfExperts(_ m: MoEWeights, T: Int) {
        guard let s = moeScratch else { return }
        let E = cfg.nEmbd, k = m.nUsed, nExp = m.nExpert

        // Route every token: [T, nExpert] router logits → k experts and weights each.
        let xr = quantize(xn, rows: T, for: m.router, buffer: 0)
        jobs[0] = MatmulJob(w: m.router, x: xr.0, xRowBytes: xr.1, y: s.probs, yStride: nExp)
        runMatmuls(1, T: T)
        for t in 0..<T { m.route(s.probs + t * nExp, ids: s.ids + t * k, weights: s.weights + t * k) }

        // Group the (token, rank) pairs by expert (counting sort, stable in token order).
        let start = s.groupStart
        for e in 0...nExp { start[e] = 0 }
        for i in 0..<(T * k) { start[Int(s.ids[i]) + 1] += 1 }
        for e in 0..<nExp { start[e + 1] += start[e] }
        for i in 0..<(T * k) {
            let e = Int(s.ids[i])
            s.pairs[start[e]] = Int32(i)
            start[e] += 1
        }
        for e in stride(from: nExp, to: 0, by: -1) { start[e] = start[e - 1] }  // cursors back to starts
        start[0] = 0

        // Each chosen expert once over its tokens; weighted rows go to their (token, rank) slot.
        for e in 0..<nExp {
            let lo = start[e], n = start[e + 1] - lo
            if n == 0 { continue }
            for r in 0..<n {
                let t = Int(s.pairs[lo + r]) / k
                (s.gathered + r * E).update(from: xn + t * E, count: E)
            }
            feedForward(m.experts[e], T: n, from: s.gathered, into: s.expertOut)
            for r in 0..<n {
                let pair = Int(s.pairs[lo + r])
                lk_scale(s.expertOut + r * E, s.weights[pair], s.ranked + pair * E, Int64(E))
            }
        }

        // mix = Σ over ranks in order (llama.cpp adds the rank views one after another).
        for t in 0..<T {
            let out = mix + t * E, row = s.ranked + t * k * E
            out.update(from: row, count: E)
            for j in 1..<k { lk_add(out, row + j * E, out, Int64(E)) }
        }
    }
}

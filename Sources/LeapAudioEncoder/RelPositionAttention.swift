// RelPositionAttention: Transformer-XL style multi-head self-attention with relative positions (NeMo's
// RelPositionMultiHeadAttention, no mask: one unpadded utterance).
//
// With q, k, v = linear_q/k/v(x) split into H heads of d_k, P = linear_pos(pe) (no bias) and the per-head
// biases u, v:
//     score[i, j] = ((q_i + u)·k_j + (q_i + v)·P[n − 1 − i + j]) / √d_k
// i.e. after NeMo's rel_shift the (i, j) entry uses relative position i − j, which is row n − 1 − (i − j) of
// the table. Softmax over j, times v, heads concatenated, linear_out.
//
// Work is split into (head, block of B query rows) tasks on the pool. For rows i0 ..< i0 + b the position
// term only needs table rows k0 = n − b − i0 ... k0 + b + n − 2: one [b, b + n − 1] product per task, and
// row ii of the block reads its n scores from the contiguous slice starting at column b − 1 − ii. Each
// task's memory is its B·nPad scores and B·(B + n − 1) band: linear in n, so long clips never build the
// [H, n, n] or [n, 2n − 1] tensors.
import CLeapKernels
import LeapCore
import LeapKernels

struct RelPositionAttention: @unchecked Sendable {
    let query, key, value, output: BatchedLinear
    let position: BatchedLinear   // no bias
    let biasU, biasV: [Float]  // [H·d_k], head-major
    let heads: Int
    let headDim: Int

    init(_ b: TensorBinder, layer i: Int, config c: AudioEncoderConfig) throws {
        let p = "a.blk.\(i)."
        let d = c.modelDim
        query = try BatchedLinear(b, p + "attn_q", inputs: d, outputs: d)
        key = try BatchedLinear(b, p + "attn_k", inputs: d, outputs: d)
        value = try BatchedLinear(b, p + "attn_v", inputs: d, outputs: d)
        output = try BatchedLinear(b, p + "attn_out", inputs: d, outputs: d)
        position = try BatchedLinear(b, p + "linear_pos", inputs: d, outputs: d, bias: .none)
        biasU = try b.floats(p + "pos_bias_u", ne: [c.headDim, c.headCount])
        biasV = try b.floats(p + "pos_bias_v", ne: [c.headDim, c.headCount])
        heads = c.headCount
        headDim = c.headDim
    }

    /// ws.context = attention output (after linear_out) of ws.normed, for ws.frames frames.
    func callAsFunction(_ ws: EncoderWorkspace, pool: ThreadPool) {
        let n = ws.frames, d = ws.modelDim, nPad = ws.paddedFrames
        query(ws.normed, rows: n, into: ws.qu, pool: pool)
        key(ws.normed, rows: n, into: ws.k, pool: pool)
        value(ws.normed, rows: n, into: ws.v, pool: pool)
        position(ws.positions, rows: RelativePositionTable.rowCount(frames: n), into: ws.projectedPositions, pool: pool)
        biasU.withUnsafeBufferPointer { u in
            biasV.withUnsafeBufferPointer { bv in
                pool.parallelFor(n, chunksPerThread: 1) { rows in
                    for t in rows {
                        let q = ws.qu + t * d
                        lk_add(q, bv.baseAddress, ws.qv + t * d, Int64(d))
                        lk_add(q, u.baseAddress, q, Int64(d))
                    }
                }
            }
        }
        // vᵀ per channel, zero beyond n so that padded score columns (set to 0) multiply zeros.
        pool.parallelFor(d, chunksPerThread: 1) { channels in
            for c in channels {
                let row = ws.valuesT + c * nPad
                for t in 0..<n { row[t] = ws.v[t * d + c] }
                for t in n..<nPad { row[t] = 0 }
            }
        }
        let block = EncoderWorkspace.queryBlock
        let blocks = (n + block - 1) / block
        let scale = 1 / Float(headDim).squareRoot()
        let dk = headDim
        let rowBytes = d * 4
        pool.run(tasks: heads * blocks) { task, thread in
            let h = task % heads, i0 = (task / heads) * block
            let b = min(block, n - i0)
            let scores = ws.attentionBlock(thread: thread)        // [b, nPad]
            let band = scores + block * nPad                      // [b, b + n − 1]
            let bandWidth = b + n - 1
            // (q + u)·kᵀ for keys 0 ..< n
            lk_matmul(Int32(LK_TYPE_F32), ws.k + h * dk, rowBytes, Int64(dk), ws.qu + i0 * d + h * dk, rowBytes,
                      Int64(b), scores, Int64(nPad), 0, Int64(n))
            // (q + v)·Pᵀ for table rows k0 ..< k0 + b + n − 1
            let k0 = n - b - i0
            lk_matmul(Int32(LK_TYPE_F32), ws.projectedPositions + k0 * d + h * dk, rowBytes, Int64(dk),
                      ws.qv + i0 * d + h * dk, rowBytes, Int64(b), band, Int64(bandWidth), 0, Int64(bandWidth))
            for ii in 0..<b {
                let s = scores + ii * nPad
                let shifted = band + ii * bandWidth + (b - 1 - ii)
                lk_add(s, shifted, s, Int64(n))
                lk_scale(s, scale, s, Int64(n))
                Self.softmax(s, n)
                for j in n..<nPad { s[j] = 0 }
            }
            // softmax · v into the head's columns of the context
            lk_matmul(Int32(LK_TYPE_F32), ws.valuesT + h * dk * nPad, nPad * 4, Int64(nPad), scores, nPad * 4,
                      Int64(b), ws.context + i0 * d + h * dk, Int64(d), 0, Int64(dk))
        }
        output(ws.context, rows: n, into: ws.normed, pool: pool)
    }

    /// In place over x[0 ..< n], with the vectorised exponential of the kernels.
    private static func softmax(_ x: UnsafeMutablePointer<Float>, _ n: Int) {
        var m0 = -Float.infinity, m1 = m0, m2 = m0, m3 = m0
        var j = 0
        while j + 4 <= n {
            m0 = x[j] > m0 ? x[j] : m0
            m1 = x[j + 1] > m1 ? x[j + 1] : m1
            m2 = x[j + 2] > m2 ? x[j + 2] : m2
            m3 = x[j + 3] > m3 ? x[j + 3] : m3
            j += 4
        }
        var m = max(max(m0, m1), max(m2, m3))
        while j < n { m = max(m, x[j]); j += 1 }
        let sum = lk_softmax_exp(x, x, Int64(n), m)
        lk_scale(x, Float(1 / sum), x, Int64(n))
    }
}

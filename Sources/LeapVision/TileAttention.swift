// TileAttention: SigLIP2's full (non-causal) multi-head attention over the patches of one tile, with both
// products as matrix products (Kernels.matmul's float kernels in ggml's summation order, or lk_vision_gemm):
// per head, scores = Q·Kᵀ
// (K as the weight matrix), softmax, then P·V (Vᵀ as the weight matrix). Tasks are (head, block of
// queries) pairs on the thread pool.
import CLeapKernels
import LeapKernels

struct TileAttention {
    let heads: Int
    let headDim: Int

    /// scratch.attention[t, h·dh ..< (h+1)·dh] = softmax(q_h[t] · K_hᵀ / √dh) · V_h for the `T` patches in
    /// scratch.q / k / v ([T, D] each).
    func callAsFunction(_ s: VisionScratch, patches T: Int, ggmlOrder: Bool, pool: ThreadPool) throws {
        let H = heads, dh = headDim, D = H * dh
        let Tpad = VisionScratch.padded(T)  // P·V columns (keys) padded with zero weights to the kernel's 16
        let qh = s.qHeads, kh = s.kHeads, vt = s.vHeadsT, q = s.q, k = s.k, v = s.v
        // [T, D] → per head [T, dh] (queries, keys) and [dh, Tpad] (values)
        pool.parallelFor(H, chunksPerThread: 1) { range in
            for h in range {
                for t in 0..<T {
                    (qh + (h * T + t) * dh).update(from: q + t * D + h * dh, count: dh)
                    (kh + (h * T + t) * dh).update(from: k + t * D + h * dh, count: dh)
                }
                let vh = vt + h * dh * Tpad
                for t in 0..<T {
                    let src = v + t * D + h * dh
                    for d in 0..<dh { vh[d * Tpad + t] = src[d] }
                }
                if Tpad > T { for d in 0..<dh { (vh + d * Tpad + T).update(repeating: 0, count: Tpad - T) } }
            }
        }
        let keys = try (0..<H).map { try WeightMatrix(type: .f32, rows: T, cols: dh, data: kh + $0 * T * dh) }
        let values = try (0..<H).map { try WeightMatrix(type: .f32, rows: dh, cols: Tpad, data: vt + $0 * dh * Tpad) }
        let block = s.queryBlock
        let blocks = (T + block - 1) / block
        let scale = 1 / Float(dh).squareRoot()
        let out = s.attention, scores = s.scores
        pool.run(tasks: H * blocks) { task, thread in
            let h = task / blocks, q0 = (task % blocks) * block, n = min(block, T - q0)
            let p = scores + thread * block * Tpad // [n, Tpad]
            let queries = qh + (h * T + q0) * dh, o = out + q0 * D + h * dh
            if ggmlOrder || lk_vision_gemm(Int32(LK_TYPE_F32), keys[h].data, keys[h].rowBytes, Int64(dh), queries,
                                           Int64(dh), Int64(n), p, Int64(Tpad), 0, Int64(T)) == 0 {
                Kernels.matmulQuantized(keys[h], xq: UnsafeRawPointer(queries), y: p, nTokens: n, yRowStride: Tpad, pool: pool)
            }
            lk_softmax_rows_scaled(p, Int64(n), Int64(T), Int64(Tpad), scale)
            if Tpad > T { for r in 0..<n { (p + r * Tpad + T).update(repeating: 0, count: Tpad - T) } }
            if ggmlOrder || lk_vision_gemm(Int32(LK_TYPE_F32), values[h].data, values[h].rowBytes, Int64(Tpad), p,
                                           Int64(Tpad), Int64(n), o, Int64(D), 0, Int64(dh)) == 0 {
                Kernels.matmulQuantized(values[h], xq: UnsafeRawPointer(p), y: o, nTokens: n, yRowStride: D, pool: pool)
            }
        }
    }
}

// TileAttention: SigLIP2's full (non-causal) multi-head attention over the patches of one tile, both products
// on lk_vg_gemm_packed. Per layer each head's queries are packed as weights (panels of 32 queries), its keys
// as token blocks and its values, transposed, as weights (panels of 32 value dimensions). Tasks of (head,
// block of 96 queries) then run on the thread pool: the block's scores against every key, laid out [keys,
// queries] (a thread's buffer, in L2), their exponentials down each query's column (less the column's max)
// with the inverse of their sum, the product with the values, which reads that buffer directly as its token
// blocks of 12 queries, and each query's output row times its inverse sum. Float sums in the packed product's
// order; exponentials to about 1 ulp.
import CLeapKernels
import CLeapMediaKernels
import LeapKernels

struct TileAttention {
    let heads: Int
    let headDim: Int

    /// Queries per task: whole panels of 32 and whole token blocks of 12.
    static let queryBlock = 96

    /// scratch.attention[t, h·dh ..< (h+1)·dh] = softmax(q_h[t] · K_hᵀ / √dh) · V_h for the `T` patches in
    /// scratch.q / k / v ([T, D] each).
    func callAsFunction(_ s: VisionScratch, patches T: Int, pool: ThreadPool) {
        let H = heads, dh = headDim, D = H * dh
        let panel = Int(LK_VG_PANEL_ROWS), tokens = Int(LK_VG_BLOCK_TOKENS)
        let queryPanels = (T + panel - 1) / panel
        let queriesSize = queryPanels * panel * dh                // floats of one head's packed queries
        let keyBlocks = (T + tokens - 1) / tokens
        let keysSize = keyBlocks * tokens * dh                    // floats of one head's packed keys
        let valuesSize = (dh + panel - 1) / panel * panel * T     // floats of one head's packed values
        let q = s.q, k = s.k, v = s.v
        let queries = s.queriesPacked, keys = s.keysPacked, values = s.valuesPacked
        pool.parallelFor(H, chunksPerThread: 1) { range in
            for h in range {
                lk_vg_pack_weights(Int32(LK_TYPE_F32), q + h * dh, D * 4, Int64(T), Int64(dh), queries + h * queriesSize,
                                   0, Int64(queryPanels))
                lk_vg_pack_x(k + h * dh, Int64(D), Int64(T), Int64(dh), 0, keys + h * keysSize, 0, Int64(keyBlocks))
                lk_vg_pack_weights_transposed(v + h * dh, Int64(D), Int64(dh), Int64(T), values + h * valuesSize)
            }
        }
        let block = Self.queryBlock
        let blocks = (T + block - 1) / block
        let scale = 1 / Float(dh).squareRoot()
        let out = s.attention
        pool.run(tasks: H * blocks) { task, thread in
            let h = task / blocks, q0 = (task % blocks) * block, n = min(block, T - q0)
            let p = s.probabilities + thread * s.probabilitiesPerThread // [T, block]: p[key, query]
            // scores[key, query] = k · q: the queries are the weights' rows, the keys its tokens
            lk_vg_gemm_packed(Int32(LK_TYPE_F32), queries + h * queriesSize + q0 * dh, Int64(dh), keys + h * keysSize,
                              Int64(tokens * dh), Int64(tokens), Int64(T), nil, p, Int64(block), 0, Int64(n))
            let inverseSums = s.inverseSums + thread * block // [block]
            lk_vg_exp_columns(p, Int64(T), Int64(n), Int64(block), scale, inverseSums)
            // out[query, :] = Σ_key p[key, query] · v[key, :]: the values' dimensions are the rows, the
            // queries its tokens, 12 side by side in each row of p
            let o = out + q0 * D + h * dh
            lk_vg_gemm_packed(Int32(LK_TYPE_F32), values + h * valuesSize, Int64(T), p, Int64(tokens), Int64(block),
                              Int64(n), nil, o, Int64(D), 0, Int64(dh))
            // the softmax's normalization, on the output rows
            for j in 0..<n { lk_scale(o + j * D, inverseSums[j], o + j * D, Int64(dh)) }
        }
    }
}

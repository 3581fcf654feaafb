// LFM2's gated short convolution mixer, the mixer of its conv layers in the shared forward pass (Forward.swift):
//
//   [B|C|x] = W_in·xn;   u_t = B_t ⊙ x_t;   c_t = Σ_k w[:,k] ⊙ u_{t-(L-1)+k};   mix = W_out·(C_t ⊙ c_t)
//
// u of the positions evaluated lives in each sequence's conv ring (InferenceContext, where it also serves
// rewinds), so a decode step or a prefill chunk continues where its sequence left off.
import CLeapKernels
import LeapKernels

extension InferenceContext {
    /// LFM2 gated short convolution: [B|C|x] = W_in·xn; u = B⊙x; c_t = Σ_k w[:,k]⊙u_{t-(L-1)+k}; mix = W_out·(C⊙c).
    func shortConv(_ c: ShortConvWeights, T: Int, spans: [SequenceSpan]) {
        let E = cfg.nEmbd
        let xq = quantize(xn, rows: T, for: c.inProj, buffer: 0)
        jobs[0] = MatmulJob(w: c.inProj, x: xq.0, xRowBytes: xq.1, y: ffA, yStride: 3 * E)
        runMatmuls(1, T: T)
        for span in spans {
            guard let ring = span.context.convRing?.floats() else { continue }
            shortConvMix(c, ring: ring + c.convSlot * span.context.ringSize * E, ringSize: span.context.ringSize,
                         rows: span.firstRow..<span.firstRow + span.count, pos0: span.pos0)
        }
        let xo = quantize(xn, rows: T, for: c.outProj, buffer: 0)
        jobs[0] = MatmulJob(w: c.outProj, x: xo.0, xRowBytes: xo.1, y: mix, yStride: E)
        runMatmuls(1, T: T)
    }

    /// The conv of batch `rows` (positions pos0...) of one sequence, from [B|C|x] in ffA to C⊙c in xn, with
    /// u = B⊙x of these positions stored in the sequence's ring (`slotBase`, [ringSize, E]).
    private func shortConvMix(_ c: ShortConvWeights, ring slotBase: UnsafeMutablePointer<Float>, ringSize: Int,
                              rows: Range<Int>, pos0: Int) {
        let E = cfg.nEmbd
        let L = cfg.convLCache
        // u for the new positions into the ring.
        for t in rows {
            let bcx = ffA + t * 3 * E
            let u = slotBase + ((pos0 + t - rows.lowerBound) % ringSize) * E
            lk_mul(bcx, bcx + 2 * E, u, Int64(E))
        }
        // y_t = C_t ⊙ Σ_k w[:,k] u_{p-(L-1)+k}, written over the B chunk of ffA.
        c.conv.withUnsafeBufferPointer { wb in
            guard let w = wb.baseAddress else { return }  // [E, L], checked at load
            for t in rows {
                let p = pos0 + t - rows.lowerBound
                let bcx = ffA + t * 3 * E
                let y = bcx  // B chunk is no longer needed
                for e in 0..<E { y[e] = 0 }
                for k in 0..<L {
                    let q = p - (L - 1) + k
                    if q < 0 { continue }
                    let u = slotBase + (q % ringSize) * E
                    // fused, as ggml_ssm_conv's `sumf += s * c` is compiled (GCC contracts it to an FMA); in C: Swift's
                    // baseline x86-64 build would call libm's fmaf for every element
                    lk_fma_strided(y, u, w + k, Int64(L), Int64(E))
                }
                lk_mul(y, bcx + E, y, Int64(E))
                // pack rows contiguously for the out projection: row t at xn + t*E
                (xn + t * E).update(from: y, count: E)
            }
        }
    }
}

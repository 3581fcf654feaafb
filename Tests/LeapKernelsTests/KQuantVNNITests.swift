// The AVX-512 VNNI kernels of Q4_K, Q5_K and Q6_K (kernels_kquant_vnni.c: decode matvec and prefill gemm) sum
// in their own order, not llama.cpp's: every output must equal the scalar path's to float rounding, for one
// token (matvec), 2-3 tokens (the AVX2 row kernels), 4+ tokens (the gemm tiles, whole passes of 4 and the
// rest), partial 16-row tiles, odd row counts, and a width beyond the matvec's stack buffer (its fallback).
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

@Test(arguments: [GGMLType.q4_K, .q5_K, .q6_K])
func kQuantVNNIKernelsMatchScalarToRounding(_ t: GGMLType) throws {
    guard KernelISA.avx512.isAvailable, KernelISA.avx512.kQuantsInVNNIOrder else { return } // no VNNI here
    let pool = try ThreadPool(threads: 2)
    for cols in [256, 768, 2048, 65 * 256] {
        var rng = Rng(9100 + UInt64(t.rawValue) * 17 + UInt64(cols))
        for rows in [1, 5, 33, 67] where cols < 65 * 256 || rows == 5 {
            let nTokens = 9
            let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
            let x = randomActivations(nTokens * cols, rng: &rng)
            let wf = dequantizeAll(t, wBytes, count: rows * cols) // [rows, cols]
            // the Q8_K activations the kernels see, dequantized: the scale of every product's terms
            let xr = Int(lk_row_bytes(Int32(LK_TYPE_Q8_K), Int64(cols)))
            var xq = [UInt8](repeating: 0, count: nTokens * xr)
            x.withUnsafeBufferPointer { xp in
                for k in 0..<nTokens { lk_quantize_row_q8_K(xp.baseAddress! + k * cols, &xq[k * xr], Int64(cols)) }
            }
            let xf = dequantizeAll(.q8_K, xq, count: nTokens * cols) // [nTokens, cols]
            try wBytes.withUnsafeBytes { wp in
                let w = try WeightMatrix(type: t, rows: rows, cols: cols, data: try #require(wp.baseAddress))
                func run(_ isa: KernelISA, tokens n: Int) -> [Float] {
                    var y = [Float](repeating: .nan, count: n * rows)
                    _ = isa.withThreadSelection { Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool) }
                    return y
                }
                for n in [1, 2, 3, 4, 5, 8, 9] {
                    let ref = run(.scalar, tokens: n), got = run(.avx512, tokens: n)
                    for k in 0..<n {
                        for r in 0..<rows {
                            var scale = 0.0
                            for i in 0..<cols { scale += abs(Double(wf[r * cols + i]) * Double(xf[k * cols + i])) }
                            // Integer sums are exact on both paths; each adds its float terms (partial sums
                            // bounded by Σ|w·x|) in at most nb + 32 roundings of 2^-24 (nb super-blocks, 16
                            // sub-blocks and the scale products): twice that bound covers both paths.
                            let tol = 2 * Double(cols / 256 + 32) * 0x1p-24 * scale + 1e-30
                            let (a, b) = (got[k * rows + r], ref[k * rows + r])
                            #expect(abs(Double(a) - Double(b)) <= tol, "\(t.name) cols=\(cols) rows=\(rows) tokens=\(n): y[\(k), \(r)] = \(a), scalar \(b), tolerance \(tol)")
                        }
                    }
                }
            }
        }
    }
}

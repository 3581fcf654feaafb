// The AVX2 Q8_0 kernels (x86/avx2/q8_0.c: one token, 2..15 tokens; x86/avx2/prefill.c's gemm from 16 tokens), which the
// AVX-512 VNNI table shares for the row layout, sum in an order of their own: one exact integer sum per (row, token, block), one product of the scales and one FMA per
// block. Every output must equal the scalar path's to float rounding: 1..5 and 15 tokens (the matvec, passes of
// 4 and their remainders), 16..20 tokens (whole gemm passes and every remainder), 64, 65 and 133 tokens (the
// 64-token chunks and tails), partial tiles and row groups, odd row counts, and widths below, at and across
// the 32 blocks the gemm takes at a time.
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

@Test func q8_0OwnOrderMatchesScalarToRounding() throws {
    let paths = KernelISA.allCases.filter { $0.isAvailable && $0.q8_0InOwnOrder }
    guard !paths.isEmpty else { return } // no such path on this CPU
    let pool = try ThreadPool(threads: 2)
    let tokenCounts = Array(1...5) + [15] + Array(16...20) + [64, 65, 133]
    for cols in [32, 7 * 32, 32 * 32, 33 * 32, 70 * 32] {
        var rng = Rng(9300 + UInt64(cols))
        for rows in [1, 5, 9, 37] {
            let nTokens = 133
            let wBytes = randomWeights(.q8_0, rows: rows, cols: cols, rng: &rng)
            let x = randomActivations(nTokens * cols, rng: &rng)
            let wf = dequantizeAll(.q8_0, wBytes, count: rows * cols) // [rows, cols]
            // the Q8_0 activations the kernels see, dequantized: the scale of every product's terms
            let xr = Int(lk_row_bytes(Int32(LK_TYPE_Q8_0), Int64(cols)))
            var xq = [UInt8](repeating: 0, count: nTokens * xr)
            x.withUnsafeBufferPointer { xp in
                for k in 0..<nTokens { lk_quantize_row(Int32(LK_TYPE_Q8_0), xp.baseAddress! + k * cols, &xq[k * xr], Int64(cols)) }
            }
            let xf = dequantizeAll(.q8_0, xq, count: nTokens * cols) // [nTokens, cols]
            var scale = [Double](repeating: 0, count: nTokens * rows) // [nTokens, rows]: Σ |w·x|
            for k in 0..<nTokens {
                for r in 0..<rows {
                    var s = 0.0
                    for i in 0..<cols { s += abs(Double(wf[r * cols + i]) * Double(xf[k * cols + i])) }
                    scale[k * rows + r] = s
                }
            }
            try wBytes.withUnsafeBytes { wp in
                let w = try WeightMatrix(type: .q8_0, rows: rows, cols: cols, data: try #require(wp.baseAddress))
                func run(_ isa: KernelISA, tokens n: Int) -> [Float] {
                    var y = [Float](repeating: .nan, count: n * rows)
                    _ = isa.withThreadSelection { Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool) }
                    return y
                }
                let ref = run(.scalar, tokens: nTokens) // the scalar path is batch-invariant (MatmulTests)
                for isa in paths {
                    for n in tokenCounts {
                        let got = run(isa, tokens: n)
                        var bad: [String] = []
                        for k in 0..<n {
                            for r in 0..<rows {
                                // Integer sums are exact on both paths; each adds its float terms (partial sums
                                // bounded by Σ|w·x|) in at most 2·nb + 8 roundings of 2^-24: twice that covers both.
                                let tol = 2 * Double(2 * cols / 32 + 8) * 0x1p-24 * scale[k * rows + r] + 1e-30
                                let (a, b) = (got[k * rows + r], ref[k * rows + r])
                                if !(abs(Double(a) - Double(b)) <= tol) { bad.append("y[\(k), \(r)] = \(a), scalar \(b), tolerance \(tol)") }
                            }
                        }
                        #expect(bad.isEmpty, "q8_0 [\(isa.name)] cols=\(cols) rows=\(rows) tokens=\(n): \(bad.count) outputs off, first \(bad.first ?? "")")
                    }
                }
            }
        }
    }
}

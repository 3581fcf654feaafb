// The AVX-512 kernels of Q4_1, Q5_0 and Q5_1 sum in ggml's order, the order of our AVX2 kernels (which
// reproduce ggml_vec_dot bit for bit on real rows): every output of every AVX-512 variant equals the AVX2 one
// bit for bit, one-token decode (matvec / dot2) and batches of 2...17 tokens (the row kernels below 16 tokens,
// the VNNI gemm tiles from 16), odd and even block counts, odd row counts; so do those of the llama-order path.
// Q8_0 sums in an order of its own on AVX2 and AVX-512 (Q8_0OwnOrderTests.swift), the same on both, and in
// ggml's on the llama-order path: compared where the orders agree. (The K-quants have kernels of their own order
// on AVX2 and AVX-512: KQuantOwnOrderTests.swift.)
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

@Test(arguments: [GGMLType.q4_1, .q5_0, .q5_1, .q8_0])
func avx512EqualsAVX2Bitwise(_ t: GGMLType) throws {
    let wide = KernelISA.allCases.filter {
        [.avx512, .avx512NoVNNI, .llamaOrder].contains($0) && $0.isAvailable && (t != .q8_0 || $0.q8_0InOwnOrder == KernelISA.avx2.q8_0InOwnOrder)
    }
    guard KernelISA.avx2.isAvailable, !wide.isEmpty else { return } // nothing to compare on this CPU
    let pool = try ThreadPool(threads: 2)
    let widths = t.blockSize == 32 ? [1, 3, 18, 21].map { $0 * 32 } : [1, 3, 8].map { $0 * 256 }
    for cols in widths {
        var rng = Rng(7100 + UInt64(t.rawValue) * 31 + UInt64(cols))
        for rows in [1, 5, 33, 67] {
            let nTokens = 17
            let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
            let x = randomActivations(nTokens * cols, rng: &rng)
            try wBytes.withUnsafeBytes { wp in
                let w = try WeightMatrix(type: t, rows: rows, cols: cols, data: try #require(wp.baseAddress))
                func run(_ isa: KernelISA, tokens n: Int) -> [Float] {
                    var y = [Float](repeating: .nan, count: n * rows)
                    _ = isa.withThreadSelection { Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool) }
                    return y
                }
                for n in 1...nTokens {
                    let ref = run(.avx2, tokens: n)
                    for isa in wide {
                        let got = run(isa, tokens: n)
                        let bad = (0..<(n * rows)).filter { got[$0].bitPattern != ref[$0].bitPattern }
                        #expect(bad.isEmpty, "\(t.name) cols=\(cols) rows=\(rows) tokens=\(n) [\(isa.name)]: \(bad.count) outputs differ from AVX2, first y[\(bad.first ?? 0)] = \(bad.first.map { got[$0] } ?? 0) vs \(bad.first.map { ref[$0] } ?? 0)")
                    }
                }
            }
        }
    }
}

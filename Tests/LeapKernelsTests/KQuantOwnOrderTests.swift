// The Q4_K, Q5_K and Q6_K kernels of their own order (AVX2: x86/avx2/kquant.c, 8-row tiles; AVX-512 VNNI:
// x86/avx512/kquant.c, 16-row tiles; decode matvec and prefill gemm) do not sum in llama.cpp's order: every
// output must equal the scalar path's to float rounding, for one token (matvec), 2..20 tokens (AVX2: the
// few-token kernels of x86/avx2/fewtokens.c to 15, the gemm from 16; VNNI: the gemm tiles from 2 tokens, Q6_K's
// few-token kernel to 15; whole passes and every remainder), 133 tokens (a full
// 128-token chunk and a tail), partial tiles, odd row counts, and a width beyond the VNNI matvec's stack buffer
// (its fallback).
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

private var ownOrderPaths: [KernelISA] { [.avx2, .avx512].filter { $0.isAvailable && $0.kQuantsInOwnOrder } }

@Test(arguments: [GGMLType.q4_K, .q5_K, .q6_K])
func kQuantOwnOrderKernelsMatchScalarToRounding(_ t: GGMLType) throws {
    guard !ownOrderPaths.isEmpty else { return } // no such path on this CPU
    let pool = try ThreadPool(threads: 2)
    let tokenCounts = Array(1...20) + [133]
    for cols in [256, 768, 2048, 65 * 256] {
        var rng = Rng(9100 + UInt64(t.rawValue) * 17 + UInt64(cols))
        for rows in [1, 5, 33, 67] where cols < 65 * 256 || rows == 5 {
            let nTokens = cols < 65 * 256 ? 133 : 9
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
            var scale = [Double](repeating: 0, count: nTokens * rows) // [nTokens, rows]: Σ |w·x|
            for k in 0..<nTokens {
                for r in 0..<rows {
                    var s = 0.0
                    for i in 0..<cols { s += abs(Double(wf[r * cols + i]) * Double(xf[k * cols + i])) }
                    scale[k * rows + r] = s
                }
            }
            try wBytes.withUnsafeBytes { wp in
                let w = try WeightMatrix(type: t, rows: rows, cols: cols, data: try #require(wp.baseAddress))
                func run(_ isa: KernelISA, tokens n: Int) -> [Float] {
                    var y = [Float](repeating: .nan, count: n * rows)
                    _ = isa.withThreadSelection { Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool) }
                    return y
                }
                let ref = run(.scalar, tokens: nTokens) // the scalar path is batch-invariant (MatmulTests)
                for isa in ownOrderPaths {
                    for n in tokenCounts where n <= nTokens {
                        let got = run(isa, tokens: n)
                        var bad: [String] = []
                        for k in 0..<n {
                            for r in 0..<rows {
                                // Integer sums are exact on both paths; each adds its float terms (partial sums
                                // bounded by Σ|w·x|) in at most nb + 32 roundings of 2^-24 (nb super-blocks, 16
                                // sub-blocks and the scale products): twice that bound covers both paths.
                                let tol = 2 * Double(cols / 256 + 32) * 0x1p-24 * scale[k * rows + r] + 1e-30
                                let (a, b) = (got[k * rows + r], ref[k * rows + r])
                                if !(abs(Double(a) - Double(b)) <= tol) { bad.append("y[\(k), \(r)] = \(a), scalar \(b), tolerance \(tol)") }
                            }
                        }
                        #expect(bad.isEmpty, "\(t.name) [\(isa.name)] cols=\(cols) rows=\(rows) tokens=\(n): \(bad.count) outputs off, first \(bad.first ?? "")")
                    }
                }
            }
        }
    }
}

/// The AVX2 Q4_K / Q5_K gemm takes the float steps of the AVX-512 VNNI gemm (x86/avx2/kquant.c, 8-row tiles
/// against 16): from 16 tokens, where both paths use their gemm (below, the AVX2 path takes its few-token
/// kernels, in its one-token order), every output is the VNNI path's bit for bit, so a prompt's Q4_K / Q5_K
/// products on AVX2 are AVX-512 VNNI's. (AVX2's Q6_K gemm keeps its one-token order instead: one float step
/// per block, batch-invariant, Q4_0AndBatchInvarianceTests.swift.)
@Test(arguments: [GGMLType.q4_K, .q5_K])
func kQuantAVX2GemmEqualsVNNIGemmBitwise(_ t: GGMLType) throws {
    guard KernelISA.avx2.isAvailable, KernelISA.avx512.isAvailable, KernelISA.avx512.kQuantsInOwnOrder else { return }
    let pool = try ThreadPool(threads: 2)
    for cols in [256, 768, 2304] {
        var rng = Rng(9300 + UInt64(t.rawValue) * 13 + UInt64(cols))
        for rows in [5, 21, 37] {
            let nTokens = 133
            let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
            let x = randomActivations(nTokens * cols, rng: &rng)
            try wBytes.withUnsafeBytes { wp in
                let w = try WeightMatrix(type: t, rows: rows, cols: cols, data: try #require(wp.baseAddress))
                func run(_ isa: KernelISA, tokens n: Int) -> [Float] {
                    var y = [Float](repeating: .nan, count: n * rows)
                    _ = isa.withThreadSelection { Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool) }
                    return y
                }
                for n in Array(16...20) + [133] {
                    let (a, b) = (run(.avx2, tokens: n), run(.avx512, tokens: n))
                    let bad = (0..<(n * rows)).filter { a[$0].bitPattern != b[$0].bitPattern }
                    #expect(bad.isEmpty, "\(t.name) cols=\(cols) rows=\(rows) tokens=\(n): \(bad.count) outputs differ from AVX-512 VNNI")
                }
            }
        }
    }
}

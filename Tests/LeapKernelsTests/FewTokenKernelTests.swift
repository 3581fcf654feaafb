// The kernels for 2-15 tokens (AVX-512 VNNI, x86/avx512/fewtokens.c: Q4_0, Q8_0, Q6_K, x86/avx512/kquant.c: Q4_K,
// Q5_K, and x86/avx512/decode.c: Q4_1, Q5_0, Q5_1; AVX2, x86/avx2/fewtokens.c: Q4_0, Q8_0, Q4_K, Q5_K, Q6_K, and
// x86/avx2/prefill.c: Q4_1, Q5_0, Q5_1) keep each token's one-token order on their path: every output
// of a call with n tokens equals that token multiplied alone on the same path, bit for bit, and the float64
// product of the dequantized operands to rounding; for every n, partial 8- and 16-row tiles, row counts that
// leave a tail, row ranges that start off a tile, odd block counts, and second and later passes (5+ / 9+ tokens).
// AVX-512 VNNI Q4_1 / Q5_0 / Q5_1 also at the matvec's widest (512 blocks) and one block wider, where the
// matvec and the few-token kernel both decline and the AVX2 row kernels serve every token count.
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

private var vnniAvailable: Bool {
    KernelISA.avx512.isAvailable && lk_cpu_features() & UInt32(LK_CPU_AVX512VNNI) != 0
}

/// Weights and Q8 activations of one case, and each token's outputs from one-token calls.
private struct FewTokenCase {
    let type: GGMLType
    let rows: Int, cols: Int
    let w: [UInt8]      // [rows, rowBytes]
    let xq: [UInt8]     // [15, xRowBytes]: activations in the kernel's format
    let xRowBytes: Int
    static let tokens = 15

    init(_ t: GGMLType, rows: Int, cols: Int, seed: UInt64) {
        type = t
        self.rows = rows
        self.cols = cols
        var rng = Rng(seed)
        w = randomWeights(t, rows: rows, cols: cols, rng: &rng)
        let x = randomActivations(Self.tokens * cols, rng: &rng)
        let act = lk_activation_type(Int32(t.rawValue))
        let xr = Int(lk_row_bytes(act, Int64(cols)))
        xRowBytes = xr
        var q = [UInt8](repeating: 0, count: Self.tokens * xr)
        x.withUnsafeBufferPointer { xp in
            q.withUnsafeMutableBytes { qp in
                for k in 0..<Self.tokens { lk_quantize_row(act, xp.baseAddress! + k * cols, qp.baseAddress! + k * xr, Int64(cols)) }
            }
        }
        xq = q
    }

    /// lk_matmul of tokens first..<first + n over rows begin..<end: y[t, r] (NaN outside the range).
    func matmul(first: Int, tokens n: Int, rows begin: Int, _ end: Int) -> [Float] {
        var y = [Float](repeating: .nan, count: n * rows)
        let rowBytes = Int(lk_row_bytes(Int32(type.rawValue), Int64(cols)))
        w.withUnsafeBytes { wp in
            xq.withUnsafeBytes { xp in
                lk_matmul(Int32(type.rawValue), wp.baseAddress!, rowBytes, Int64(cols), xp.baseAddress! + first * xRowBytes, xRowBytes,
                          Int64(n), &y, Int64(rows), Int64(begin), Int64(end))
            }
        }
        return y
    }
}

private let vnniShapes: [(GGMLType, Int, Int)] = [
    (.q4_0, 37, 7 * 32), (.q4_0, 50, 65 * 32), (.q4_0, 16, 64 * 32), (.q4_0, 9, 32),
    (.q8_0, 37, 7 * 32), (.q8_0, 50, 65 * 32), (.q8_0, 3, 64 * 32), (.q8_0, 9, 32),
    (.q4_K, 37, 3 * 256), (.q4_K, 50, 8 * 256), (.q4_K, 1, 256),
    (.q5_K, 37, 3 * 256), (.q5_K, 50, 8 * 256), (.q5_K, 1, 256),
    (.q6_K, 37, 3 * 256), (.q6_K, 50, 8 * 256), (.q6_K, 1, 256),
    (.q4_1, 37, 7 * 32), (.q4_1, 50, 65 * 32), (.q4_1, 9, 32), (.q4_1, 6, 512 * 32), (.q4_1, 5, 513 * 32),
    (.q5_0, 39, 7 * 32), (.q5_0, 50, 65 * 32), (.q5_0, 3, 32), (.q5_0, 7, 512 * 32), (.q5_0, 5, 513 * 32),
    (.q5_1, 37, 7 * 32), (.q5_1, 50, 65 * 32), (.q5_1, 6, 512 * 32), (.q5_1, 5, 513 * 32),
]
private let avx2Shapes: [(GGMLType, Int, Int)] = [
    (.q4_0, 37, 7 * 32), (.q4_0, 50, 65 * 32), (.q4_0, 8, 64 * 32), (.q4_0, 9, 32),
    (.q8_0, 37, 7 * 32), (.q8_0, 50, 65 * 32), (.q8_0, 3, 64 * 32), (.q8_0, 9, 32),
    (.q4_K, 37, 3 * 256), (.q4_K, 50, 8 * 256), (.q4_K, 1, 256),
    (.q5_K, 37, 3 * 256), (.q5_K, 50, 8 * 256), (.q5_K, 1, 256),
    (.q6_K, 37, 3 * 256), (.q6_K, 50, 8 * 256), (.q6_K, 1, 256),
    (.q4_1, 37, 7 * 32), (.q4_1, 50, 65 * 32), (.q4_1, 9, 32),
    (.q5_0, 37, 7 * 32), (.q5_0, 50, 65 * 32), (.q5_1, 37, 7 * 32), (.q5_1, 50, 65 * 32),
]
/// (path, type, rows, cols): the VNNI cases run where the CPU has VNNI, the AVX2 ones where it has AVX2.
private let cases: [(KernelISA, GGMLType, Int, Int)] =
    vnniShapes.map { (.avx512, $0.0, $0.1, $0.2) } + avx2Shapes.map { (.avx2, $0.0, $0.1, $0.2) }

private func pathAvailable(_ isa: KernelISA) -> Bool { isa == .avx512 ? vnniAvailable : isa.isAvailable }

/// Most tokens a call keeps each token's one-token bits for: AVX-512 Q4_K / Q5_K take the gemm (an order of its
/// own) from 8 tokens (x86/avx512/kquant.c's K4_FEW_MAX), every other case is the few-token kernel up to 15.
private func bitExactTokens(_ isa: KernelISA, _ t: GGMLType) -> Int {
    isa == .avx512 && (t == .q4_K || t == .q5_K) ? 7 : FewTokenCase.tokens
}

@Test(arguments: cases.indices)
func fewTokenCallsGiveEachTokenItsOneTokenResultBitForBit(_ c: Int) throws {
    let (isa, t, rows, cols) = cases[c]
    guard pathAvailable(isa) else { return }
    let f = FewTokenCase(t, rows: rows, cols: cols, seed: 7100 + UInt64(c))
    _ = isa.withThreadSelection {
        let alone = (0..<FewTokenCase.tokens).map { f.matmul(first: $0, tokens: 1, rows: 0, rows) }
        for n in 1...bitExactTokens(isa, t) {
            for (first, begin) in [(0, 0), (FewTokenCase.tokens - n, min(3, rows - 1))] {
                let y = f.matmul(first: first, tokens: n, rows: begin, rows)
                for k in 0..<n {
                    let bad = (begin..<rows).filter { y[k * rows + $0].bitPattern != alone[first + k][$0].bitPattern }
                    #expect(bad.isEmpty, "[\(isa.name)] \(t.name) rows=\(rows) cols=\(cols): token \(first + k) of \(n) from row \(begin): rows \(bad.prefix(8)) differ from the token alone")
                }
            }
        }
    }
}

@Test(arguments: cases.indices)
func fewTokenCallsMatchTheFloat64ProductToRounding(_ c: Int) throws {
    let (isa, t, rows, cols) = cases[c]
    // Q4_1 / Q5_1 take Q8_1 activations, whose s = d·Σq is stored in f16: the m·s term rounds by far more than
    // the bound below on every path, the one-token kernel's as well (the test above ties them to it).
    guard pathAvailable(isa), t != .q4_1, t != .q5_1 else { return }
    let f = FewTokenCase(t, rows: rows, cols: cols, seed: 7200 + UInt64(c))
    let wf = dequantizeAll(t, f.w, count: rows * cols) // [rows, cols]
    let act = try #require(GGMLType(rawValue: UInt32(lk_activation_type(Int32(t.rawValue)))))
    let xf = dequantizeAll(act, f.xq, count: FewTokenCase.tokens * cols) // [15, cols]
    let blocks = cols / t.blockSize
    for n in 1...FewTokenCase.tokens {
        let y = try #require(isa.withThreadSelection { f.matmul(first: 0, tokens: n, rows: 0, rows) })
        for k in 0..<n {
            for r in 0..<rows {
                var exact = 0.0, scale = 0.0
                for i in 0..<cols {
                    let p = Double(wf[r * cols + i]) * Double(xf[k * cols + i])
                    exact += p
                    scale += abs(p)
                }
                // Block sums are exact integers; the float steps are one product of the two scales and one
                // FMA per block and lane chain, then at most 4 additions of the lanes: each rounds by at most
                // 2^-24 of a partial sum bounded by Σ|w·x|, so (blocks + 8) roundings, doubled for margin.
                // Q4_K / Q5_K add the mins' chain and its difference with the scales' (partial sums bounded by
                // Σ|w·x| plus the mins' terms): the bound of KQuantOwnOrderTests, blocks + 32 roundings.
                let kMins = t == .q4_K || t == .q5_K
                let tol = 2 * Double(blocks + (kMins ? 32 : 8)) * 0x1p-24 * scale + 1e-30
                #expect(abs(Double(y[k * rows + r]) - exact) <= tol, "[\(isa.name)] \(t.name) rows=\(rows) cols=\(cols): token \(k) of \(n), row \(r): \(y[k * rows + r]) vs \(exact), tolerance \(tol)")
            }
        }
    }
}

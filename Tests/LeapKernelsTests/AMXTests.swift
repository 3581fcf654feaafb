// The AMX path's many-token products (x86/amx/prefill.c: INT8 tiles) against the exact sums of the dequantized
// weights and activations. The integer sums per chunk are exact; what remains is float rounding: per chunk (a
// block of 32, a Q6_K sub-block of 16, or a K-quant super-block) a product of scales and one or two FMAs into
// partial sums bounded by Σ|w·x|, at most 4 roundings of 2^-24 per chunk and 8 more for the scales: a bound
// from the arithmetic (the scalar dequantization's own rounding of d·sc·q − dmin·m included), not from a run.
// The 8-row layout gives the row layout's results bit for bit. Skipped where the CPU or kernel has no AMX.
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

@Test(arguments: [GGMLType.q4_0, .q8_0, .q4_K, .q5_K, .q6_K])
func amxProductsEqualTheExactSumsToRounding(_ t: GGMLType) throws {
    guard KernelISA.avx512AMX.isAvailable else { return } // no AMX on this CPU (or not granted)
    let pool = try ThreadPool(threads: 2)
    let act = GGMLType(rawValue: UInt32(lk_activation_type(Int32(t.rawValue))))!
    // below 16 tokens the AVX-512 kernels run; 16..100 covers whole and partial token tiles and pairs
    let tokenCounts = [16, 17, 31, 32, 33, 100]
    for cols in t.blockSize == 256 ? [256, 9 * 256] : [32, 9 * 32, 72 * 32] {
        var rng = Rng(7700 + UInt64(cols) + UInt64(t.rawValue))
        for rows in [16, 40, 200] {
            let nTokens = tokenCounts.max()!
            let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
            let x = randomActivations(nTokens * cols, rng: &rng)
            let wf = dequantizeAll(t, wBytes, count: rows * cols) // [rows, cols]
            let xr = Int(lk_row_bytes(Int32(act.rawValue), Int64(cols)))
            var xq = [UInt8](repeating: 0, count: nTokens * xr)
            x.withUnsafeBufferPointer { xp in
                for k in 0..<nTokens { lk_quantize_row(Int32(act.rawValue), xp.baseAddress! + k * cols, &xq[k * xr], Int64(cols)) }
            }
            let xf = dequantizeAll(act, xq, count: nTokens * cols) // [nTokens, cols]: what the kernels multiply
            var exact = [Double](repeating: 0, count: nTokens * rows), scale = exact // [nTokens, rows]
            for k in 0..<nTokens {
                for r in 0..<rows {
                    var s = 0.0, a = 0.0
                    for i in 0..<cols {
                        let p = Double(wf[r * cols + i]) * Double(xf[k * cols + i])
                        s += p
                        a += abs(p)
                    }
                    exact[k * rows + r] = s
                    scale[k * rows + r] = a
                }
            }
            let relBound = Double(4 * (cols / 16) + 8) * 0x1p-24
            try wBytes.withUnsafeBytes { wp in
                let w = try WeightMatrix(type: t, rows: rows, cols: cols, data: try #require(wp.baseAddress))
                let packing = PackedMatrices()
                let packed = KernelISA.avx512AMX.withThreadSelection { packing.packed(w) } ?? w
                if t == .q4_0 || t == .q8_0, rows % 8 == 0 { #expect(packed.rows8, "\(t.name) rows=\(rows) not packed") }
                for n in tokenCounts {
                    func run(_ m: WeightMatrix) -> [Float] {
                        var y = [Float](repeating: .nan, count: n * rows)
                        _ = KernelISA.avx512AMX.withThreadSelection {
                            Kernels.matmul(m, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool)
                        }
                        return y
                    }
                    let got = run(w)
                    var bad: [String] = []
                    for k in 0..<n {
                        for r in 0..<rows {
                            let err = abs(Double(got[k * rows + r]) - exact[k * rows + r])
                            let s = scale[k * rows + r]
                            if !(err <= relBound * s + 1e-30) {
                                bad.append("y[\(k), \(r)] = \(got[k * rows + r]), exact \(exact[k * rows + r]), bound \(relBound * s)")
                            }
                        }
                    }
                    #expect(bad.isEmpty, "\(t.name) cols=\(cols) rows=\(rows) tokens=\(n): \(bad.count) outputs off, first \(bad.first ?? "")")
                    if packed.rows8 {
                        #expect(run(packed) == got, "\(t.name) cols=\(cols) rows=\(rows) tokens=\(n): 8-row layout differs")
                    }
                }
            }
        }
    }
}

/// The AMX table keeps the AVX-512 VNNI table's kernels below its threshold: 1..15 tokens give the same bits.
@Test func amxLeavesFewTokenProductsToAVX512() throws {
    guard KernelISA.avx512AMX.isAvailable, KernelISA.avx512.isAvailable else { return }
    let pool = try ThreadPool(threads: 2)
    var rng = Rng(7781)
    for t in [GGMLType.q4_0, .q8_0, .q4_K, .q6_K] {
        let rows = 48, cols = 512
        let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
        let x = randomActivations(15 * cols, rng: &rng)
        try wBytes.withUnsafeBytes { wp in
            let w = try WeightMatrix(type: t, rows: rows, cols: cols, data: try #require(wp.baseAddress))
            for n in [1, 2, 7, 15] {
                func run(_ isa: KernelISA) -> [Float] {
                    var y = [Float](repeating: .nan, count: n * rows)
                    _ = isa.withThreadSelection { Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &y, nTokens: n, pool: pool) }
                    return y
                }
                #expect(run(.avx512AMX) == run(.avx512), "\(t.name) tokens=\(n)")
            }
        }
    }
}

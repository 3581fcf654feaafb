// Matmul summation order against llama.cpp's own kernels, and batch invariance per kernel path.
import CLeapKernels
import LeapGGUF
import LeapKernels
import LeapTestFiles
import Testing

/// Q4_0 against llama.cpp's repacked q4_0_8x8 gemm (4 tokens) and gemv (2 tokens) on this machine
/// (scripts/fixtures/make_q4_0_matmul_goldens.py): bit-identical on the x86 SIMD paths, whether the tokens
/// come in one call, one by one, or with a row range that does not start at a multiple of 8.
@Test func q4_0MatmulMatchesLlamaCppRepackedKernels() throws {
    let w = try #require(readBytes(kernelFixtures + "/q4_0_mm_w.bin"))
    let x = try #require(readBytes(kernelFixtures + "/q4_0_mm_x.bin"))
    let want = try #require(readFloats(kernelFixtures + "/q4_0_mm_y.f32"))
    let rows = 24, cols = 352, nTokens = 6
    let wRow = cols / 32 * 18, xRow = cols / 32 * 34
    #expect(w.count == rows * wRow && x.count == nTokens * xRow && want.count == nTokens * rows)
    for isa in [KernelISA.avx2, .avx512, .avx512NoVNNI, .llamaOrder] where isa.isAvailable {
        for (n, first, begin, end) in [(nTokens, 0, 0, rows), (1, 4, 0, rows), (1, 5, 3, 21), (3, 1, 5, 24), (2, 4, 0, 24)] {
            var y = [Float](repeating: .nan, count: n * rows)
            isa.withThreadSelection {
                w.withUnsafeBytes { wp in
                    x.withUnsafeBytes { xp in
                        lk_matmul(Int32(LK_TYPE_Q4_0), wp.baseAddress!, wRow, Int64(cols), xp.baseAddress! + first * xRow, xRow,
                                  Int64(n), &y, Int64(rows), Int64(begin), Int64(end))
                    }
                }
            }
            for t in 0..<n {
                let bad = (begin..<end).filter { y[t * rows + $0].bitPattern != want[(first + t) * rows + $0].bitPattern }
                #expect(bad.isEmpty, "[\(isa.name)] token \(first + t) of a \(n)-token call, rows \(begin)..<\(end): rows \(bad) differ from llama.cpp")
            }
        }
        let dot = isa.withThreadSelection { w.withUnsafeBytes { wp in x.withUnsafeBytes { xp in
            lk_vec_dot(Int32(LK_TYPE_Q4_0), Int64(cols), wp.baseAddress! + 7 * wRow, xp.baseAddress! + 2 * xRow) } } }
        #expect(dot?.bitPattern == want[2 * rows + 7].bitPattern, "[\(isa.name)] lk_vec_dot")
    }
}

/// Batch invariance on every SIMD path (not just the default one): the gemm kernels (AVX2 8-row tiles for
/// Q4_0/Q4_1/Q5_0/Q5_1/Q6_K, AVX-512 VNNI tiles) reproduce that path's one-token kernels bit for bit for
/// every batch size, with odd row and block counts and partial tiles (Q8_0 on AVX2: its one-token, few-token
/// and gemm kernels of one order of its own, Q8_0OwnOrderTests.swift). Q6_K on AVX2 (and the AVX-VNNI and
/// AVX-512-without-VNNI tables, which run its kernels): one order of its own at every batch size, so every
/// batch; elsewhere up to 7 tokens: from 8 on it takes llama.cpp's tiled order, as llama.cpp does
/// (tiledOrderFromEightTokens); not on AVX-512 VNNI, whose Q6_K gemm and matvec sum in different orders of
/// their own (KQuantOwnOrderTests.swift).
@Test(arguments: [GGMLType.q4_0, .q4_1, .q5_0, .q5_1, .q8_0, .q6_K])
func batchesOf1To17TokensEqualOneTokenCallsOnEveryPath(_ t: GGMLType) throws {
    let pool = try ThreadPool(threads: 2)
    let cols = t.blockSize == 32 ? 7 * 32 : 3 * 256
    for rows in [9, 37] {
        var rng = Rng(5000 + UInt64(t.rawValue) + UInt64(rows))
        let nTokens = 17
        let wBytes = randomWeights(t, rows: rows, cols: cols, rng: &rng)
        let x = randomActivations(nTokens * cols, rng: &rng)
        let q6OneOrder: [KernelISA] = [.avx2, .avxVNNI, .avx512NoVNNI]
        for isa in simdPaths where t != .q6_K || !isa.kQuantsInOwnOrder || q6OneOrder.contains(isa) {
            isa.withThreadSelection {
                wBytes.withUnsafeBytes { wp in
                    let w = try! WeightMatrix(type: t, rows: rows, cols: cols, data: wp.baseAddress!)
                    var one = [Float](repeating: .nan, count: nTokens * rows)
                    for tok in 0..<nTokens {
                        var y = [Float](repeating: .nan, count: rows)
                        Kernels.matmul(w, x: Array(x[(tok * cols)..<((tok + 1) * cols)]), y: &y, nTokens: 1, pool: pool)
                        for r in 0..<rows { one[tok * rows + r] = y[r] }
                    }
                    for n in 1...(t == .q6_K && !q6OneOrder.contains(isa) ? 7 : nTokens) {
                        var batch = [Float](repeating: .nan, count: n * rows)
                        Kernels.matmul(w, x: Array(x[0..<(n * cols)]), y: &batch, nTokens: n, pool: pool)
                        let same = (0..<(n * rows)).allSatisfy { batch[$0].bitPattern == one[$0].bitPattern }
                        #expect(same, "\(t.name) [\(isa.name)] rows=\(rows) batch of \(n): differs from one-token calls")
                    }
                }
            }
        }
    }
}

// Matmul summation order against llama.cpp's own kernels, and batch invariance per kernel path.
import CLeapKernels
import LeapGGUF
import LeapKernels
import Testing

/// Q4_0 against llama.cpp's repacked q4_0_8x8 gemm (4 tokens) and gemv (2 tokens) on this machine
/// (scripts/fixtures/make_q4_0_matmul_goldens.py): bit-identical on the x86 SIMD paths, whether the tokens
/// come in one call, one by one, or with a row range that does not start at a multiple of 8.
@Test func q4_0MatmulMatchesLlamaCppRepackedKernels() throws {
    let w = try #require(readBytes(fixturesDir + "/q4_0_mm_w.bin"))
    let x = try #require(readBytes(fixturesDir + "/q4_0_mm_x.bin"))
    let want = try #require(readFloats(fixturesDir + "/q4_0_mm_y.f32"))
    let rows = 24, cols = 352, nTokens = 6
    let wRow = cols / 32 * 18, xRow = cols / 32 * 34
    #expect(w.count == rows * wRow && x.count == nTokens * xRow && want.count == nTokens * rows)
    for isa in [KernelISA.avx2, .avx512, .avx512NoVNNI] where isa.isAvailable {
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
